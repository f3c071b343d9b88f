/* record -A/-R (--argument, --retval): which arguments and return values
 * to record, in uftrace's syntax (FUNC@arg1,arg2/s,fparg1 and
 * FUNC@retval[/FMT]); checked before the program runs, then resolved in
 * the executable into DIR/.args for the runtime (SFTRACE_ARGS). */
#ifndef SFTRACE_CLI_RECORD_ARGS_H
#define SFTRACE_CLI_RECORD_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "format/sf_args.h"

struct ra_item {
	uint8_t slot, fmt; /* format/sf_args.h */
	uint8_t on_exit;   /* retval */
};

struct ra_spec {
	const char *text; /* as given */
	char *func;       /* FUNC: a plain name (matched whole) or a regex */
	struct ra_item items[SF_ARG_MAX_ITEMS];
	unsigned n;
};

/* Parses one spec of option opt ("-A" or "-R"). -1 after a one-line
 * error naming the spec and what is wrong with it. */
int ra_parse(struct ra_spec *s, const char *opt, const char *text);
void ra_free(struct ra_spec *s);

/* Resolves specs[0..n) (opts[i]: the option of each) in exe, and with
 * auto_args (--auto-args) the DWARF prototype of every other instrumented
 * function of exe, into DIR/.args (filter-file format: the `object` line,
 * then one `0xADDR SPEC NAME` line per function) and sets SFTRACE_ARGS
 * (path "" when nothing is to be recorded). A FUNC that names no
 * instrumented function is an error. -1 after a message. */
int ra_write(const char *dir, const char *exe, const struct ra_spec *specs, const char *const *opts, size_t n,
	     int auto_args, char *path, size_t cap);

#endif
