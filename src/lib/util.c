#include "lib/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	char buf[4096];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "sftrace: %s%s\n", prefix, buf);
}

void sf_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("error: ", fmt, ap);
	va_end(ap);
}

void sf_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

static void *check(void *p)
{
	if (!p) {
		fputs("sftrace: error: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

void *xmalloc(size_t n) { return check(malloc(n ? n : 1)); }
void *xcalloc(size_t n, size_t size) { return check(calloc(n ? n : 1, size ? size : 1)); }
void *xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1)); }
char *xstrdup(const char *s) { return check(strdup(s)); }
