/* Options every command that reads logs shares (convert, report, replay,
 * graph, info, flamegraph, dump, query, memory): symbol overrides, --force,
 * --no-symbols, --quiet, the cut (-c, -F, -N, --tid, --time, --min-duration,
 * --max-depth), --names, and the
 * final "LOG... [-o OUT]" checks. Declared once so their spelling, help
 * text and behaviour cannot drift between commands. */
#ifndef SFTRACE_CLI_INPUT_OPTS_H
#define SFTRACE_CLI_INPUT_OPTS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/trace_input.h"

/* Option codes of the long-only shared options. */
enum { IO_TID = 0x300, IO_TIME, IO_MIN_DURATION, IO_MAX_DEPTH, IO_NAMES, IO_FORCE, IO_NO_SYMBOLS, IO_PAGER,
       IO_NO_PAGER };

/* Paging, as git does (cli/pager.h): the commands that print text for a
 * person take --pager (--paginate) and --no-pager. Those that page by
 * default (replay, graph: long outputs read from the top) do so on a
 * terminal unless --no-pager; the others (report, info, query, dump) only
 * with --pager. */
enum { IO_PAGE_NEVER = 0, IO_PAGE_ASKED = 1, IO_PAGE_BY_DEFAULT = 2 };
#define PAGER_LONGOPTS                                                                                  \
	{"pager", no_argument, 0, IO_PAGER}, {"paginate", no_argument, 0, IO_PAGER},                    \
		{"no-pager", no_argument, 0, IO_NO_PAGER}

/* The short options of the shared ones, for each command's optstring
 * ("o:" INPUT_SHORTOPTS "h"): -c FILE, -F REGEX, -N REGEX, -q. */
#define INPUT_SHORTOPTS "c:F:N:q"

/* getopt_long entries; SYM is the short option letter of --symbol. The
 * short options of the cut ("c:") go into each command's optstring. */
#define INPUT_LONGOPTS(SYM)                                                                  \
	{"symbol", required_argument, 0, SYM}, {"force", no_argument, 0, IO_FORCE},          \
		{"no-symbols", no_argument, 0, IO_NO_SYMBOLS}, {"quiet", no_argument, 0, 'q'}, \
		{"filter-func", required_argument, 0, 'F'}, {"notrace", required_argument, 0, 'N'}, \
		{"filter", required_argument, 0, 'c'}, {"tid", required_argument, 0, IO_TID}, \
		{"time", required_argument, 0, IO_TIME},                                     \
		{"min-duration", required_argument, 0, IO_MIN_DURATION},                     \
		{"max-depth", required_argument, 0, IO_MAX_DEPTH},                           \
		{"names", required_argument, 0, IO_NAMES}

struct input_opts {
	struct trace_options trace;
	const char **symbols;
	size_t nsymbols;
	int symbol_char;
	uint32_t *tids;
	const char **only_funcs, **notrace_funcs; /* -F, -N regexes, in order */
	unsigned *only_seq, *notrace_seq; /* each one's place among all -F and -N */
	unsigned nfunc_opts;
	int names;       /* -1: the command's default, 0 full, 1 short */
	int pager;       /* -1: the command's default (page_by), 0 --no-pager, 1 --pager */
	int page_by;     /* IO_PAGE_* of the command */
	int paging;      /* the output goes through a pager (input_opts_page) */
	int failed;      /* a shared option had a bad value (message printed) */
};

void input_opts_init(struct input_opts *o, int symbol_char);
/* "250us", "1.5ms", "2s", "0" -> ns; opt names the option in messages.
 * -1 after an error message. */
int io_parse_duration(const char *opt, const char *s, uint64_t *ns);

/* Handles option c if it is one of the shared ones: 1 if it was (check
 * o->failed: a bad value is a usage error). */
int input_opts_handle(struct input_opts *o, int c, const char *arg);

/* The help lines of the shared options (symbols, then the cut and names). */
void input_opts_usage(FILE *out, int symbol_char);
/* The same without the trace-cutting options (for commands that refuse them). */
void input_opts_usage_symbols(FILE *out, int symbol_char);

/* The help lines of --pager and --no-pager, for a command of IO_PAGE_* `by`. */
void input_opts_pager_usage(FILE *out, int by);

/* Starts the pager when the options and the command's default ask for it
 * and stdout is a terminal (no progress line then: the pager owns the
 * screen). input_opts_open calls it once the command line is checked. 1
 * when paging. */
int input_opts_page(struct input_opts *o);

/* The end of a command's output to stdout: flushes it and waits for the
 * pager. `ok`: the command produced all of it. Returns the exit status: 1
 * when !ok, or when writing failed (said, with `what`: "the report"),
 * except that a reader who quit the pager early has seen what they
 * wanted. Call before anything goes to stderr after the output. */
int input_opts_end_output(struct input_opts *o, int ok, const char *what);

/* Waits for the pager, if any (stdout is closed then): what the command
 * writes to stderr next shows after the output, not under the pager. */
void input_opts_pager_done(struct input_opts *o);

/* The style --names chose, or `dflt` (1 short, 0 full) when not given. */
int input_opts_short_names(const struct input_opts *o, int dflt);

/* Checks that logs were given (and OUT, when out_required), that OUT can be
 * written, then opens the logs. NULL after printing why; *usage_error is set
 * when the fault is in the command line (exit status 2). */
struct trace_input *input_opts_open(struct input_opts *o, const char *cmd, int argc, char **argv, int first,
				    const char *out, int out_required, int *usage_error);

void input_opts_free(struct input_opts *o);

/* A command's own options, beside the shared ones: getopt_long's entries
 * (ending with a zeroed one) and short letters ("D:"), and what takes them:
 * 0, or -1 after an error message (a usage error). */
struct cmd_opts {
	const struct option *longopts;
	const char *shortopts;
	int (*handle)(void *ctx, int c, const char *arg);
	void *ctx;
	void (*usage)(FILE *out); /* --help: the command's help (it ends with input_opts_usage) */
	int page_by;              /* IO_PAGE_*: the pager options are the command's if not NEVER */
};

enum { IO_PARSED = 0, IO_HELP_SHOWN = 1, IO_USAGE_ERROR = 2 };

/* The whole option loop of a reading command: the shared options, the
 * command's own (c) and -h/--help, then optind at the first operand.
 * IO_HELP_SHOWN after printing the help, IO_USAGE_ERROR after a message. */
int input_opts_parse(struct input_opts *o, const struct cmd_opts *c, int argc, char **argv);

/* A command-line fault: frees o, points at --help, returns exit status 2. */
int input_opts_usage_error(struct input_opts *o, const char *cmd);

/* "--weight calls|time": 0 and *calls set, or -1 after an error message. */
int parse_weight(const char *arg, int *calls);

/* "--color auto|always|never": 0 and *color set, or -1 after an error message. */
int parse_color(const char *arg, const char **color);

/* A whole number within [lo, hi] for option `name`: 0, or -1 after an error message. */
int parse_number(const char *name, const char *arg, long lo, long hi, long *out);

#endif
