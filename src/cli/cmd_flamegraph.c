/* sftrace flamegraph: logs -> a self-contained interactive SVG. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "lib/outfile.h"
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
		"  -s, --symbol PATH      read symbols from PATH for the object with the same\n"
		"                         build-id (or file name)\n"
		"      --force            symbolize despite build-id mismatches or missing objects\n"
		"      --no-symbols       do not read ELF files; name functions by address\n"
		"  -q, --quiet            no warnings or progress\n"
		"  -h, --help             this help\n");
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, 0, 'o'}, {"weight", required_argument, 0, 'w'},
		{"title", required_argument, 0, 't'},  {"width", required_argument, 0, 'W'},
		{"symbol", required_argument, 0, 's'}, {"force", no_argument, 0, 'F'},
		{"no-symbols", no_argument, 0, 'N'},   {"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
	};
	struct fg_options fo = {0};
	struct trace_options to = {0};
	const char **symbols = NULL;
	size_t nsymbols = 0;
	int c, rc = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:s:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': fo.out = optarg; break;
		case 'w':
			if (!strcmp(optarg, "calls"))
				fo.weight_calls = 1;
			else if (strcmp(optarg, "time")) {
				sf_error("--weight must be 'calls' or 'time', not '%s'", optarg);
				goto out_usage;
			}
			break;
		case 't': fo.title = optarg; break;
		case 'W': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 100 || v > 1000000) {
				sf_error("--width must be 100..1000000 px, not '%s'", optarg);
				goto out_usage;
			}
			fo.width = (unsigned)v;
			break;
		}
		case 's':
			symbols = xrealloc(symbols, (nsymbols + 1) * sizeof(*symbols));
			symbols[nsymbols++] = optarg;
			break;
		case 'F': to.force = 1; break;
		case 'N': to.no_symbols = 1; break;
		case 'q': to.quiet = 1; break;
		case 'h': usage(stdout); free(symbols); return 0;
		default: goto out_usage;
		}
	}
	if (optind >= argc) {
		sf_error("no log given (usage: sftrace flamegraph [OPTIONS] LOG... -o OUT.svg)");
		goto out_usage;
	}
	if (!fo.out) {
		sf_error("no output given: pass -o OUT.svg");
		goto out_usage;
	}
	char err[1024];
	if (sf_outfile_check(fo.out, err, sizeof(err)) < 0) {
		sf_error("%s", err);
		goto out;
	}
	to.symbol_paths = symbols;
	to.nsymbol_paths = nsymbols;
	struct trace_input *in = trace_open((const char *const *)argv + optind, (size_t)(argc - optind), &to);
	if (!in)
		goto out;
	rc = fg_write(in, &fo) == 0 ? 0 : 1;
	trace_report_repairs(in);
	trace_close(in);
out:
	free(symbols);
	return rc;
out_usage:
	free(symbols);
	fprintf(stderr, "(sftrace flamegraph --help describes the options)\n");
	return 2;
}
