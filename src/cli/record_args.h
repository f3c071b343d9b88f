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
 * then one `0xADDR SPEC NAME` line per function; SFTRACE_ARGS), and
 * writes the specs themselves to DIR/.args-specs (SFTRACE_ARGS_SPECS) for
 * the runtime to resolve them in every other instrumented object as it
 * loads (ra_object_file, through `sftrace filter --args`). An exe
 * without an XRay map (sh, a launcher) or a script is not resolved in.
 * A FUNC found
 * in no object is reported at exit (ra_report_unmatched). -1 after a
 * message. */
int ra_write(const char *dir, const char *exe, const struct ra_spec *specs, const char *const *opts, size_t n,
	     int auto_args, char *path, size_t cap);

/* sftrace filter --args SPECS -p OBJECT -o OUT: the specs of a file
 * ra_write wrote, resolved in obj, written to out (atomically, 0600).
 * -1 after a message. */
int ra_object_file(const char *specs_path, const char *obj, const char *out);

/* After the run: a warning for each spec that named no function in any
 * object resolved (the files in dir). */
void ra_report_unmatched(const char *dir, const struct ra_spec *specs, const char *const *opts, size_t n);

#endif
