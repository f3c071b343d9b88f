/* sftrace convert: logs -> Perfetto, Parquet (pola), Chrome JSON, folded. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "lib/outfile.h"
#include "lib/trace_input.h"
#include "lib/util.h"
#include "output/converters.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace convert [OPTIONS] LOG... -o OUT\n"
		"\n"
		"Converts the log(s) of one recording (files, or the directory holding them;\n"
		"several processes become one trace) into another format. Calls whose exit\n"
		"was never recorded (crash, unwinding, tracing that started mid-call) are\n"
		"repaired so every output is balanced; the repairs are reported.\n"
		"\n"
		"options:\n"
		"  -o, --output OUT       output file (required)\n"
		"  -t, --type TYPE        output type (default perfetto):\n");
	for (const struct converter *c = sf_converters; c->type; c++)
		if (c->run)
			fprintf(out, "                           %-9s %s\n", c->type, c->description);
	fprintf(out,
		"  -s, --symbol PATH      read symbols from PATH for the object with the same\n"
		"                         build-id (or file name): a moved binary or a debug file\n"
		"      --force            symbolize despite build-id mismatches or missing objects\n"
		"      --no-symbols       do not read ELF files; name functions by address\n"
		"      --gzip, --no-gzip  compress the output (default: when OUT ends in .gz)\n"
		"      --weight calls|time  folded: weight stacks by calls or self time (ns)\n"
		"      --zstd-level N     pola: zstd level (default 3); --uncompressed for none\n"
		"  -q, --quiet            no warnings or progress\n"
		"  -h, --help             this help\n");
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, 0, 'o'}, {"type", required_argument, 0, 't'},
		{"symbol", required_argument, 0, 's'}, {"force", no_argument, 0, 'F'},
		{"no-symbols", no_argument, 0, 'N'},   {"gzip", no_argument, 0, 'g'},
		{"no-gzip", no_argument, 0, 'G'},      {"weight", required_argument, 0, 'w'},
		{"zstd-level", required_argument, 0, 'z'}, {"uncompressed", no_argument, 0, 'u'},
		{"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	struct conv_options co = {.gzip = -1};
	struct trace_options to = {0};
	const char *type = "perfetto";
	const char **symbols = NULL;
	size_t nsymbols = 0;
	int c, rc = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:t:s:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': co.out = optarg; break;
		case 't': type = optarg; break;
		case 's':
			symbols = xrealloc(symbols, (nsymbols + 1) * sizeof(*symbols));
			symbols[nsymbols++] = optarg;
			break;
		case 'F': to.force = 1; break;
		case 'N': to.no_symbols = 1; break;
		case 'g': co.gzip = 1; break;
		case 'G': co.gzip = 0; break;
		case 'w':
			if (!strcmp(optarg, "calls"))
				co.weight_calls = 1;
			else if (strcmp(optarg, "time")) {
				sf_error("--weight must be 'calls' or 'time', not '%s'", optarg);
				goto out_usage;
			}
			break;
		case 'z': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 22) {
				sf_error("--zstd-level must be 1..22, not '%s'", optarg);
				goto out_usage;
			}
			co.zstd_level = (int)v;
			break;
		}
		case 'u': co.uncompressed = 1; break;
		case 'q': to.quiet = 1; break;
		case 'h': usage(stdout); free(symbols); return 0;
		default: goto out_usage;
		}
	}
	const struct converter *conv = NULL;
	for (const struct converter *k = sf_converters; k->type; k++)
		if (!strcmp(k->type, type) && k->run)
			conv = k;
	if (!conv) {
		sf_error("unknown output type '%s' (types: perfetto, pola, chrome, folded)", type);
		goto out_usage;
	}
	if (optind >= argc) {
		sf_error("no log given (usage: sftrace convert [OPTIONS] LOG... -o OUT)");
		goto out_usage;
	}
	if (!co.out) {
		sf_error("no output given: pass -o OUT");
		goto out_usage;
	}
	char err[1024];
	if (sf_outfile_check(co.out, err, sizeof(err)) < 0) {
		sf_error("%s", err);
		goto out;
	}
	to.symbol_paths = symbols;
	to.nsymbol_paths = nsymbols;
	struct trace_input *in = trace_open((const char *const *)argv + optind, (size_t)(argc - optind), &to);
	if (!in)
		goto out;
	rc = conv->run(in, &co) == 0 ? 0 : 1;
	trace_report_repairs(in);
	trace_close(in);
out:
	free(symbols);
	return rc;
out_usage:
	free(symbols);
	fprintf(stderr, "(sftrace convert --help describes the options)\n");
	return 2;
}
