#include <stddef.h>

#include "output/converters.h"

const struct converter sf_converters[] = {
	{"perfetto", "Perfetto protobuf (gzip'd when OUT ends in .gz): ui.perfetto.dev, vizviewer", conv_perfetto},
	{"pola", "Parquet: OUT (events) and OUT.symtab (functions), for polars, DuckDB, Spark", conv_pola},
	{"chrome", "Chrome Trace Event JSON: chrome://tracing, Perfetto, speedscope", conv_chrome},
	{"folded", "folded stacks (a;b;c WEIGHT): flamegraph.pl, inferno, speedscope", conv_folded},
	{NULL, NULL, NULL},
};
