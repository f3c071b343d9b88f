/* Options every command that reads logs shares (convert, report,
 * flamegraph): symbol overrides, --force, --no-symbols, --quiet, and the
 * final "LOG... [-o OUT]" checks. Declared once so their spelling, help
 * text and behaviour cannot drift between commands. */
#ifndef SFTRACE_CLI_INPUT_OPTS_H
#define SFTRACE_CLI_INPUT_OPTS_H

#include <getopt.h>
#include <stdio.h>

#include "lib/trace_input.h"

/* getopt_long entries; SYM is the short option letter of --symbol. */
#define INPUT_LONGOPTS(SYM)                                                                  \
	{"symbol", required_argument, 0, SYM}, {"force", no_argument, 0, 'F'},               \
		{"no-symbols", no_argument, 0, 'N'}, {"quiet", no_argument, 0, 'q'}

struct input_opts {
	struct trace_options trace;
	const char **symbols;
	size_t nsymbols;
	int symbol_char;
};

void input_opts_init(struct input_opts *o, int symbol_char);

/* Handles option c if it is one of the shared ones: 1 if it was. */
int input_opts_handle(struct input_opts *o, int c, const char *arg);

/* The help lines of the shared options. */
void input_opts_usage(FILE *out, int symbol_char);

/* Checks that logs were given (and OUT, when out_required), that OUT can be
 * written, then opens the logs. NULL after printing why; *usage_error is set
 * when the fault is in the command line (exit status 2). */
struct trace_input *input_opts_open(struct input_opts *o, const char *cmd, int argc, char **argv, int first,
				    const char *out, int out_required, int *usage_error);

void input_opts_free(struct input_opts *o);

/* A command-line fault: frees o, points at --help, returns exit status 2. */
int input_opts_usage_error(struct input_opts *o, const char *cmd);

/* "--weight calls|time": 0 and *calls set, or -1 after an error message. */
int parse_weight(const char *arg, int *calls);

/* A whole number within [lo, hi] for option `name`: 0, or -1 after an error message. */
int parse_number(const char *name, const char *arg, long lo, long hi, long *out);

#endif
