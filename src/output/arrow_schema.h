/* Encoder of an Arrow IPC Schema message (flatbuffers, Arrow's Message.fbs
 * and Schema.fbs), for the `ARROW:schema` key of a Parquet footer. Readers
 * such as polars take each column's Arrow type from it; that is the only way
 * to mark an INT64 Parquet column as Duration(ns).
 *
 * Only flat schemas of a few primitive types are supported.
 */
#ifndef SFTRACE_OUTPUT_ARROW_SCHEMA_H
#define SFTRACE_OUTPUT_ARROW_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

enum arrow_type {
	ARROW_UINT64,      /* Int{bitWidth 64, is_signed false} */
	ARROW_UINT32,      /* Int{bitWidth 32, is_signed false} */
	ARROW_DURATION_NS, /* Duration{unit NANOSECOND} */
	ARROW_UTF8,        /* Utf8 */
};

struct arrow_field {
	const char *name;
	enum arrow_type type;
	int nullable;
};

/* Flatbuffers vtable slots and enum values used (from the .fbs files). */
enum {
	ARROW_METADATA_V5 = 4,          /* MetadataVersion.V5 */
	ARROW_HEADER_SCHEMA = 1,        /* MessageHeader.Schema */
	ARROW_TYPE_INT = 2,             /* Type.Int */
	ARROW_TYPE_UTF8 = 5,            /* Type.Utf8 */
	ARROW_TYPE_DURATION = 18,       /* Type.Duration */
	ARROW_TIMEUNIT_NANOSECOND = 3,  /* TimeUnit.NANOSECOND */
};

/* The encapsulated IPC message: 0xFFFFFFFF, int32 metadata length, the
 * flatbuffer padded with zeros to a multiple of 8. Returns malloc'd bytes,
 * sets *len. */
uint8_t *arrow_schema_message(const struct arrow_field *fields, int n, size_t *len);

/* Standard base64 (RFC 4648 alphabet with + and /, '=' padding); malloc'd,
 * NUL-terminated. */
char *arrow_base64(const void *data, size_t n);

/* base64 of arrow_schema_message(): the value of the `ARROW:schema` key. */
char *arrow_schema_base64(const struct arrow_field *fields, int n);

#endif
