/* sftrace convert: logs -> Perfetto, Parquet (pola), Chrome JSON, folded. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
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
		"repaired so every output is balanced; the repairs are reported. Perfetto and\n"
		"Chrome name calls in the short style (the full name rides along), folded in\n"
		"full (--names changes both); Parquet always holds full names.\n"
		"\n"
		"options:\n"
		"  -o, --output OUT       output file (required)\n"
		"  -t, --type TYPE        output type (default perfetto):\n");
	for (const struct converter *c = sf_converters; c->type; c++)
		if (c->run)
			fprintf(out, "                           %-9s %s\n", c->type, c->description);
	input_opts_usage(out, 's');
	fprintf(out,
		"      --gzip, --no-gzip  compress the output (default: when OUT ends in .gz)\n"
		"      --weight calls|time  folded: weight stacks by calls or self time (ns)\n"
		"      --zstd-level N     pola: zstd level (default 3); --uncompressed for none\n"
		"  -h, --help             this help\n");
}

/* convert's own options: the converter's, and the output type. */
struct convert_args {
	struct conv_options co;
	const char *type;
};

static int convert_option(void *ctx, int c, const char *arg)
{
	struct convert_args *a = ctx;
	long level;
	switch (c) {
	case 'o': a->co.out = arg; return 0;
	case 't': a->type = arg; return 0;
	case 'g': a->co.gzip = 1; return 0;
	case 'G': a->co.gzip = 0; return 0;
	case 'w': return parse_weight(arg, &a->co.weight_calls);
	case 'z':
		if (parse_number("--zstd-level", arg, 1, 22, &level) < 0)
			return -1;
		a->co.zstd_level = (int)level;
		return 0;
	case 'u': a->co.uncompressed = 1; return 0;
	default: return -1;
	}
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, 0, 'o'}, {"type", required_argument, 0, 't'},
		{"gzip", no_argument, 0, 'g'},         {"no-gzip", no_argument, 0, 'G'},
		{"weight", required_argument, 0, 'w'}, {"zstd-level", required_argument, 0, 'z'},
		{"uncompressed", no_argument, 0, 'u'}, {0, 0, 0, 0},
	};
	struct convert_args args = {.co = {.gzip = -1}, .type = "perfetto"};
	struct input_opts io;
	input_opts_init(&io, 's');
	int rc = 1, usage_error;
	const struct cmd_opts own = {longopts, "o:t:", convert_option, &args, usage, IO_PAGE_NEVER};
	switch (input_opts_parse(&io, &own, argc, argv)) {
	case IO_HELP_SHOWN: input_opts_free(&io); return 0;
	case IO_USAGE_ERROR: goto out_usage;
	}
	const struct conv_options *co = &args.co;
	const char *type = args.type;
	const struct converter *conv = NULL;
	for (const struct converter *k = sf_converters; k->type; k++)
		if (!strcmp(k->type, type) && k->run)
			conv = k;
	if (!conv) {
		sf_error("unknown output type '%s' (types: perfetto, pola, chrome, folded)", type);
		goto out_usage;
	}
	/* Views read short names (the full one rides along), data keeps full. */
	io.trace.short_names = input_opts_short_names(&io, !strcmp(type, "perfetto") || !strcmp(type, "chrome"));
	struct trace_input *in = input_opts_open(&io, "convert", argc, argv, optind, co->out, 1, &usage_error);
	if (!in) {
		if (usage_error)
			goto out_usage;
		goto out;
	}
	rc = conv->run(in, co) == 0 ? 0 : 1;
	trace_report_repairs(in);
	trace_close(in);
out:
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "convert");
}
