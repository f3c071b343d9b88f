/* Argument and return values of ARGS events (format/sf_args.h) as people
 * read them, the way uftrace prints them: 3, "world", 1.500000, 'a',
 * 0x7ffd1234. One decoder for replay, dump, Perfetto, Parquet and query. */
#ifndef SFTRACE_LIB_ARG_VALUES_H
#define SFTRACE_LIB_ARG_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "format/sf_args.h"

struct av_item {
	uint8_t slot, fmt;
	char name[16];   /* "arg1", "fparg2", "retval" */
	char value[300]; /* as shown, strings quoted and escaped */
};

/* The items of an ARGS payload (header included, len bytes); at most cap.
 * Returns how many, -1 if the payload is malformed. */
int av_decode(const unsigned char *payload, size_t len, struct av_item *items, unsigned cap);

/* "3, \"world\"": the values of a payload joined by ", " (out always
 * terminated; "" for none). */
void av_join(const unsigned char *payload, size_t len, char *out, size_t cap);

#endif
