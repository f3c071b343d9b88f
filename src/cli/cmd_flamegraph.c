/* sftrace flamegraph: logs -> a self-contained interactive SVG. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
#include "lib/trace_input.h"
#include "lib/util.h"
#include "output/flamegraph.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace flamegraph [OPTIONS] LOG... -o OUT.svg\n"
		"\n"
		"Draws a flame graph of the log(s) of one recording: each box is a call path,\n"
		"as wide as its time (callees included) or its calls, above its caller. Open\n"
		"it in a web browser: hover for details, click to zoom, Escape or \"Reset Zoom\"\n"
		"to zoom out, \"Search\" (or Ctrl-F) to highlight functions by regex. Boxes\n"
		"narrower than 0.1 px are left out. With several processes, each process is\n"
		"a box above \"all\"; the threads of a process are merged.\n"
		"\n"
		"options:\n"
		"  -o, --output OUT       output file (required)\n"
		"      --weight time|calls  box width: inclusive time (default) or calls\n"
		"      --title TEXT       title (default \"Flame Graph\")\n"
		"      --width N          image width in px (default 1200)\n"
		"  -h, --help             this help\n");
	input_opts_usage(out, 's');
}

static int fg_option(void *ctx, int c, const char *arg)
{
	struct fg_options *fo = ctx;
	long width;
	switch (c) {
	case 'o': fo->out = arg; return 0;
	case 'w': return parse_weight(arg, &fo->weight_calls);
	case 't': fo->title = arg; return 0;
	case 'W':
		if (parse_number("--width", arg, 100, 1000000, &width) < 0)
			return -1;
		fo->width = (unsigned)width;
		return 0;
	default: return -1;
	}
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, 0, 'o'}, {"weight", required_argument, 0, 'w'},
		{"title", required_argument, 0, 't'},  {"width", required_argument, 0, 'W'},
		{0, 0, 0, 0},
	};
	struct fg_options fo = {0};
	struct input_opts io;
	input_opts_init(&io, 's');
	int rc = 1, usage_error;
	const struct cmd_opts own = {longopts, "o:", fg_option, &fo, usage, IO_PAGE_NEVER};
	switch (input_opts_parse(&io, &own, argc, argv)) {
	case IO_HELP_SHOWN: input_opts_free(&io); return 0;
	case IO_USAGE_ERROR: goto out_usage;
	}
	io.trace.short_names = input_opts_short_names(&io, 1);
	struct trace_input *in = input_opts_open(&io, "flamegraph", argc, argv, optind, fo.out, 1, &usage_error);
	if (!in) {
		if (usage_error)
			goto out_usage;
		goto out;
	}
	rc = fg_write(in, &fo) == 0 ? 0 : 1;
	trace_report_repairs(in);
	trace_close(in);
out:
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "flamegraph");
}
