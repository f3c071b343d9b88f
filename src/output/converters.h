/* Output types of `sftrace convert` (and the writers `report` and
 * `flamegraph` share): each one consumes a trace_input through one
 * trace_run pass and writes OUT atomically (no partial output on failure). */
#ifndef SFTRACE_OUTPUT_CONVERTERS_H
#define SFTRACE_OUTPUT_CONVERTERS_H

#include "lib/trace_input.h"

struct conv_options {
	const char *out;        /* output path */
	int gzip;               /* -1: by extension (.gz), 0 no, 1 yes */
	int weight_calls;       /* folded: weight by calls instead of self time */
	int zstd_level;         /* pola: 0 = default */
	int uncompressed;       /* pola: no compression */
};

struct converter {
	const char *type;
	const char *description;
	int (*run)(struct trace_input *in, const struct conv_options *opt);
};

int conv_perfetto(struct trace_input *in, const struct conv_options *opt);
int conv_pola(struct trace_input *in, const struct conv_options *opt);
int conv_chrome(struct trace_input *in, const struct conv_options *opt);
int conv_folded(struct trace_input *in, const struct conv_options *opt);

/* NULL-terminated table of every type, in --help order. */
extern const struct converter sf_converters[];

#endif
