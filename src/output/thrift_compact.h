/* A minimal Thrift compact-protocol encoder: just what the Parquet footer and
 * page headers need (structs, i8/i32/i64, binary, bool, lists).
 *
 * Usage: fields are written in increasing id order inside a struct; the
 * encoder keeps the last field id per nesting level so it can use the
 * one-byte "delta" field header. A struct value without a field header (the
 * root struct, or a list element) is opened with tc_struct_open; a struct
 * field with tc_struct_begin. Both are closed by tc_struct_end, which writes
 * the STOP byte. Memory comes from xrealloc, so no call fails.
 */
#ifndef SFTRACE_OUTPUT_THRIFT_COMPACT_H
#define SFTRACE_OUTPUT_THRIFT_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include "output/protobuf.h"

/* Compact-protocol type codes (field headers and list element types). */
enum tc_type {
	TC_STOP = 0,
	TC_BOOL_TRUE = 1,
	TC_BOOL_FALSE = 2,
	TC_I8 = 3,
	TC_I16 = 4,
	TC_I32 = 5,
	TC_I64 = 6,
	TC_DOUBLE = 7,
	TC_BINARY = 8,
	TC_LIST = 9,
	TC_SET = 10,
	TC_MAP = 11,
	TC_STRUCT = 12,
};

#define TC_MAX_DEPTH 16

struct tc_writer {
	struct pb_buf out;            /* the encoded bytes */
	int depth;                    /* open structs */
	int16_t last[TC_MAX_DEPTH + 1]; /* last field id per level; [0] = top level */
};

void tc_init(struct tc_writer *w);
void tc_reset(struct tc_writer *w); /* empty the buffer, keep memory */
void tc_free(struct tc_writer *w);

/* Raw values (list elements, or after a tc_field header). */
void tc_varint(struct tc_writer *w, uint64_t v);
void tc_put_i8(struct tc_writer *w, int8_t v);
void tc_put_i32(struct tc_writer *w, int32_t v); /* zigzag varint */
void tc_put_i64(struct tc_writer *w, int64_t v); /* zigzag varint */
void tc_put_binary(struct tc_writer *w, const void *p, size_t n);

/* A field header of the current struct. */
void tc_field(struct tc_writer *w, int16_t id, enum tc_type type);

/* Field header + value. */
void tc_i8(struct tc_writer *w, int16_t id, int8_t v);
void tc_i16(struct tc_writer *w, int16_t id, int16_t v);
void tc_i32(struct tc_writer *w, int16_t id, int32_t v);
void tc_i64(struct tc_writer *w, int16_t id, int64_t v);
void tc_bool(struct tc_writer *w, int16_t id, int v);
void tc_binary(struct tc_writer *w, int16_t id, const void *p, size_t n);
void tc_string(struct tc_writer *w, int16_t id, const char *s);

/* A list field: header, then `n` raw elements of `elem` type. */
void tc_list(struct tc_writer *w, int16_t id, enum tc_type elem, uint32_t n);
void tc_list_header(struct tc_writer *w, enum tc_type elem, uint32_t n);

/* Structs: a field of the current struct, or a bare value (root struct or
 * list element). Close with tc_struct_end (writes STOP). */
void tc_struct_begin(struct tc_writer *w, int16_t id);
void tc_struct_open(struct tc_writer *w);
void tc_struct_end(struct tc_writer *w);

#endif
