/* convert --type folded: one line per call path, `main;work;leaf WEIGHT`,
 * for flamegraph.pl, inferno and speedscope.
 *
 * WEIGHT is the path's self time in ns (default), or with --weight calls
 * the number of frames at that path; paths whose weight is 0 are left out.
 * So the weights sum to the summed duration of the root frames (time), or
 * to the number of frames (calls).
 *
 * Names are the demangled function names with ';' replaced by ':' (';'
 * separates frames) and control characters by '?'. Functions that share a
 * name (statics of two objects) are one frame. With several processes,
 * each stack starts with a frame "NAME (pid N)" for its process; threads
 * of one process are merged. Lines come out depth-first with siblings in
 * name order, so the output is deterministic. Built from the call-path
 * tree: memory is bounded by distinct call paths, not events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/callpath.h"
#include "lib/outfile.h"
#include "lib/util.h"
#include "output/converters.h"

static char *folded_name(const char *s)
{
	char *r = xstrdup(*s ? s : "?");
	for (char *p = r; *p; p++) {
		if (*p == ';')
			*p = ':';
		else if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	return r;
}

struct folded {
	struct sf_outfile *of;
	const struct cp_tree *t;
	char **names;
	int calls;
	char *path;          /* the current stack, "a;b;c" */
	size_t cap;
	size_t *end;         /* end[d]: path length after the frame at depth d */
	size_t nend;
};

static void path_reserve(struct folded *f, size_t need)
{
	if (need <= f->cap)
		return;
	while (f->cap < need)
		f->cap = f->cap ? f->cap * 2 : 4096;
	f->path = xrealloc(f->path, f->cap);
}

static int folded_group(void *ctx, const struct cp_group *g)
{
	struct folded *f = ctx;
	if (g->depth >= f->nend) {
		f->nend = (size_t)g->depth * 2 + 16;
		f->end = xrealloc(f->end, f->nend * sizeof(*f->end));
	}
	size_t at = g->depth > 1 ? f->end[g->depth - 1] : 0;
	const char *name = f->names[cp_node(f->t, g->node)->func];
	size_t len = strlen(name);
	path_reserve(f, at + len + 32);
	if (g->depth > 1)
		f->path[at++] = ';';
	memcpy(f->path + at, name, len);
	at += len;
	f->end[g->depth] = at;
	uint64_t w = f->calls ? g->calls : g->self_ns;
	if (w) {
		int n = snprintf(f->path + at, 32, " %llu\n", (unsigned long long)w);
		if (sf_outfile_write(f->of, f->path, at + (size_t)n) < 0)
			return -1;
	}
	return 0;
}

int conv_folded(struct trace_input *in, const struct conv_options *opt)
{
	char err[1024];
	struct sf_outfile *of = sf_outfile_open(opt->out, opt->gzip, err, sizeof(err));
	if (!of) {
		sf_error("%s", err);
		return -1;
	}
	struct cp_tree *t = cp_new();
	enum cp_levels levels = trace_nprocs(in) > 1 ? CP_BY_PROCESS : CP_FLAT;
	if (cp_collect(t, in, levels) < 0) {
		cp_free(t);
		return sf_outfile_fail(of, opt->out);
	}
	size_t nf = cp_nfuncs(t);
	struct folded f = {.of = of, .t = t, .calls = opt->weight_calls};
	f.names = xcalloc(nf + 1, sizeof(*f.names));
	for (size_t i = 0; i < nf; i++)
		f.names[i] = folded_name(cp_func_name(t, (uint32_t)i, NULL));
	uint32_t *rank = xcalloc(nf + 1, sizeof(*rank));
	cp_rank_by_name(t, (const char *const *)f.names, rank);
	int r = cp_walk_merged(t, rank, folded_group, &f);
	for (size_t i = 0; i < nf; i++)
		free(f.names[i]);
	free(f.names);
	free(f.path);
	free(f.end);
	free(rank);
	cp_free(t);
	if (r < 0)
		return sf_outfile_fail(of, opt->out);
	return sf_outfile_commit(of);
}
