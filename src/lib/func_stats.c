#include "lib/func_stats.h"

#include <stdlib.h>
#include <string.h>

#include "lib/callpath.h"
#include "lib/hashmap.h"
#include "lib/util.h"

/* A node is nested when a node of the same name rank is on the path above
 * it (in its scope): one flag per node. */
static uint8_t *nested_by_name(const struct cp_tree *t, const uint32_t *rank, size_t nfuncs)
{
	uint8_t *nested = xcalloc(cp_nnodes(t), 1);
	uint32_t *onpath = xcalloc(nfuncs ? nfuncs : 1, sizeof(*onpath));
	uint32_t n = cp_node(t, CP_ROOT)->first_child;
	while (n) {
		const struct cp_node *nd = cp_node(t, n);
		nested[n] = onpath[rank[nd->func]] > 0;
		onpath[rank[nd->func]]++;
		if (nd->first_child) {
			n = nd->first_child;
			continue;
		}
		while (n) {
			const struct cp_node *cur = cp_node(t, n);
			onpath[rank[cur->func]]--;
			if (cur->next_sibling) {
				n = cur->next_sibling;
				break;
			}
			n = cur->parent;
		}
	}
	free(onpath);
	return nested;
}

/* Name ranks of every function (equal names, equal rank). */
static uint32_t *name_ranks(const struct cp_tree *t)
{
	size_t nf = cp_nfuncs(t);
	const char **names = xcalloc(nf + 1, sizeof(*names));
	for (size_t i = 0; i < nf; i++)
		names[i] = cp_func_name(t, (uint32_t)i, NULL);
	uint32_t *rank = xcalloc(nf + 1, sizeof(*rank));
	cp_rank_by_name(t, names, rank);
	free(names);
	return rank;
}

struct fs_row *fs_aggregate(const struct cp_tree *t, int by_name, size_t *nout)
{
	struct hashmap m = HASHMAP_INIT; /* scope << 32 | id -> row index */
	uint32_t *rank = by_name ? name_ranks(t) : NULL;
	uint8_t *nested = rank ? nested_by_name(t, rank, cp_nfuncs(t)) : NULL;
	struct fs_row *rows = NULL;
	size_t n = 0, cap = 0;
	for (uint32_t i = 1; i < cp_nnodes(t); i++) {
		const struct cp_node *nd = cp_node(t, i);
		if (nd->key & CP_SYNTHETIC)
			continue;
		uint32_t id = rank ? rank[nd->func] : nd->func;
		int added;
		uint64_t *at = hm_put(&m, (uint64_t)nd->scope << 32 | id, &added);
		if (added) {
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				rows = xrealloc(rows, cap * sizeof(*rows));
			}
			*at = n;
			struct fs_row *x = &rows[n++];
			memset(x, 0, sizeof(*x));
			x->scope = nd->scope;
			x->func = nd->func;
			x->id = id;
			x->min = x->raw_min = UINT64_MAX;
			x->name = cp_func_name(t, nd->func, NULL);
		}
		struct fs_row *w = &rows[*at];
		w->calls += nd->calls;
		w->self += nd->self_ns;
		w->raw_self += nd->raw_self_ns;
		w->raw_sum += nd->raw_total_ns;
		if (nd->raw_min_ns < w->raw_min)
			w->raw_min = nd->raw_min_ns;
		if (nd->raw_max_ns > w->raw_max)
			w->raw_max = nd->raw_max_ns;
		w->sum += nd->total_ns;
		if (!(nested ? nested[i] : nd->nested)) {
			w->total += nd->total_ns;
			w->raw_total += nd->raw_total_ns;
		}
		if (nd->min_ns < w->min) {
			w->min = nd->min_ns;
			w->min_at_raw = nd->min_at_raw_ns;
		}
		if (nd->calls && nd->max_ns >= w->max) {
			w->max = nd->max_ns;
			w->max_at_raw = nd->max_at_raw_ns;
		}
	}
	free(rank);
	free(nested);
	hm_free(&m);
	*nout = n;
	return rows;
}
