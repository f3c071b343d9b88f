#include "cli/input_opts.h"

#include <stdlib.h>
#include <string.h>

#include "lib/outfile.h"
#include "lib/util.h"

void input_opts_init(struct input_opts *o, int symbol_char)
{
	memset(o, 0, sizeof(*o));
	o->symbol_char = symbol_char;
}

int input_opts_handle(struct input_opts *o, int c, const char *arg)
{
	if (c == o->symbol_char) {
		o->symbols = xrealloc(o->symbols, (o->nsymbols + 1) * sizeof(*o->symbols));
		o->symbols[o->nsymbols++] = arg;
	} else if (c == 'F') {
		o->trace.force = 1;
	} else if (c == 'N') {
		o->trace.no_symbols = 1;
	} else if (c == 'q') {
		o->trace.quiet = 1;
	} else {
		return 0;
	}
	return 1;
}

void input_opts_usage(FILE *out, int symbol_char)
{
	fprintf(out,
		"  -%c, --symbol PATH      read symbols from PATH for the object with the same\n"
		"                         build-id (or file name): a moved binary or a debug file\n"
		"      --force            symbolize despite build-id mismatches or missing objects\n"
		"      --no-symbols       do not read ELF files; name functions by address\n"
		"  -q, --quiet            no warnings or progress\n",
		symbol_char);
}

struct trace_input *input_opts_open(struct input_opts *o, const char *cmd, int argc, char **argv, int first,
				    const char *out, int out_required, int *usage_error)
{
	*usage_error = 0;
	if (first >= argc) {
		sf_error("no log given (usage: sftrace %s [OPTIONS] LOG...%s)", cmd, out_required ? " -o OUT" : "");
		*usage_error = 1;
		return NULL;
	}
	if (out_required && !out) {
		sf_error("no output given: pass -o OUT");
		*usage_error = 1;
		return NULL;
	}
	char err[1024];
	if (out && sf_outfile_check(out, err, sizeof(err)) < 0) {
		sf_error("%s", err);
		return NULL;
	}
	o->trace.symbol_paths = o->symbols;
	o->trace.nsymbol_paths = o->nsymbols;
	return trace_open((const char *const *)argv + first, (size_t)(argc - first), &o->trace);
}

void input_opts_free(struct input_opts *o)
{
	free(o->symbols);
	o->symbols = NULL;
	o->nsymbols = 0;
}

int input_opts_usage_error(struct input_opts *o, const char *cmd)
{
	input_opts_free(o);
	fprintf(stderr, "(sftrace %s --help describes the options)\n", cmd);
	return 2;
}

int parse_weight(const char *arg, int *calls)
{
	if (!strcmp(arg, "calls"))
		*calls = 1;
	else if (!strcmp(arg, "time"))
		*calls = 0;
	else {
		sf_error("--weight must be 'calls' or 'time', not '%s'", arg);
		return -1;
	}
	return 0;
}

int parse_number(const char *name, const char *arg, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (!*arg || *end || v < lo || v > hi) {
		sf_error("%s must be a whole number from %ld to %ld, not '%s'", name, lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}
