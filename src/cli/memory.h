/* What `sftrace memory`'s files share: its options (cmd_memory.c parses
 * them) and the --diff entry point (memory_diff.c). */
#ifndef SFTRACE_CLI_MEMORY_H
#define SFTRACE_CLI_MEMORY_H

#include <stddef.h>

#include "cli/input_opts.h"
#include "cli/memory_sites.h"

enum { FMT_TABLE, FMT_TSV, FMT_JSON };

struct mem_opts {
	const char *milestone;
	const char *flamegraph;
	const char *plot;
	int overlay;            /* --overlay: plot each stage from its own start */
	const char *select;     /* comma-separated stage numbers */
	int format;             /* FMT_* */
	int interactive;
	long top;
	int group;              /* MS_BY_* */
	int no_fold;
	const char *folds[32];  /* --fold REGEX */
	size_t nfolds;
	long width;             /* table rows: columns */
	int full_names;         /* tables: full names (--names full) */
	int diff;
};

/* A recording in which heap_replay found no heap events: prints why it
 * cannot be analysed and returns 1, or returns 0 when --alloc was on and
 * the program allocated nothing (a valid, empty recording). */
int mem_no_events_error(struct trace_input *in, const char *path);

/* `memory --diff OLD NEW`: argv[first] and argv[first + 1]. The exit status. */
int memory_diff(struct input_opts *io, const struct mem_opts *o, struct ms_fold *fold, char **argv, int first);

#endif
