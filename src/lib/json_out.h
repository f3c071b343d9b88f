/* The JSON bits every writer shares: string literals that always parse
 * (escaped, invalid UTF-8 replaced by U+FFFD). */
#ifndef SFTRACE_LIB_JSON_OUT_H
#define SFTRACE_LIB_JSON_OUT_H

#include <stdio.h>

/* A JSON string literal, quotes included. */
void json_put_str(FILE *out, const char *s);

#endif
