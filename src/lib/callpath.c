#include "lib/callpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "lib/trace_input.h"
#include "lib/util.h"

/* One open frame of a stack. */
struct cp_open {
	uint32_t node;
	uint64_t child_ns; /* durations of its finished children */
	uint64_t raw_child_ns; /* the same as recorded */
};

struct cp_stack {
	struct cp_open *e;
	uint32_t cap;
};

/* Per node, the child found last: most parents call the same child many
 * times in a row (loops), which then skips the hash lookup. */
struct cp_hint {
	uint64_t key;
	uint32_t child; /* 0: none yet */
};

struct cp_tree {
	struct cp_node *nodes;
	struct cp_hint *hints;
	size_t n, cap;
	/* (parent, key) -> node, open addressing; 0 = empty slot. Not
	 * lib/hashmap: the key is 96 bits, and the slots hold node indices
	 * compared against the node array itself. */
	uint32_t *ht;
	size_t ht_cap;
	struct cp_func *funcs;
	size_t nfuncs, funcs_cap;
	struct hashmap func_by_key; /* key -> index in funcs */
	struct cp_stack *stacks;
	size_t nstacks;
	/* Display strings (cp_collect). */
	const char **names, **modules;
	char **owned; /* strings we allocated, freed with the tree */
	size_t nowned;
};

static inline size_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	return (size_t)(h ^ (h >> 29));
}

struct cp_tree *cp_new(void)
{
	struct cp_tree *t = xcalloc(1, sizeof(*t));
	t->cap = 1024;
	t->nodes = xcalloc(t->cap, sizeof(*t->nodes));
	t->hints = xcalloc(t->cap, sizeof(*t->hints));
	t->n = 1; /* the root */
	t->nodes[0].min_ns = t->nodes[0].raw_min_ns = UINT64_MAX;
	t->ht_cap = 2048;
	t->ht = xcalloc(t->ht_cap, sizeof(*t->ht));
	hm_init(&t->func_by_key, 256);
	return t;
}

void cp_free(struct cp_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nstacks; i++)
		free(t->stacks[i].e);
	for (size_t i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	free(t->names);
	free(t->modules);
	free(t->stacks);
	free(t->nodes);
	free(t->hints);
	free(t->ht);
	free(t->funcs);
	hm_free(&t->func_by_key);
	free(t);
}

/* ---- the function table ---- */

static uint32_t func_index(struct cp_tree *t, uint64_t key, const void *owner, uint32_t id)
{
	int added;
	uint64_t *at = hm_put(&t->func_by_key, key, &added);
	if (!added)
		return (uint32_t)*at;
	if (t->nfuncs == t->funcs_cap) {
		t->funcs_cap = t->funcs_cap ? t->funcs_cap * 2 : 256;
		t->funcs = xrealloc(t->funcs, t->funcs_cap * sizeof(*t->funcs));
	}
	uint32_t fi = (uint32_t)t->nfuncs++;
	t->funcs[fi] = (struct cp_func){key, owner, id};
	*at = fi;
	return fi;
}

/* ---- nodes ---- */

static void ht_insert(struct cp_tree *t, uint32_t ni)
{
	size_t mask = t->ht_cap - 1, h = mix(t->nodes[ni].key, t->nodes[ni].parent) & mask;
	while (t->ht[h])
		h = (h + 1) & mask;
	t->ht[h] = ni;
}

static uint32_t new_node(struct cp_tree *t, uint32_t parent, uint64_t key, const void *owner, uint32_t id)
{
	if (t->n == t->cap) {
		if (t->cap >= UINT32_MAX / 2) {
			sf_error("call-path tree: too many distinct call paths");
			exit(1);
		}
		t->cap *= 2;
		t->nodes = xrealloc(t->nodes, t->cap * sizeof(*t->nodes));
		t->hints = xrealloc(t->hints, t->cap * sizeof(*t->hints));
	}
	uint32_t ni = (uint32_t)t->n++;
	struct cp_node *p = &t->nodes[parent], *c = &t->nodes[ni];
	memset(c, 0, sizeof(*c));
	c->key = key;
	c->parent = parent;
	c->func = func_index(t, key, owner, id);
	c->depth = p->depth + 1;
	c->scope = (p->key & CP_SYNTHETIC) ? parent : p->scope;
	c->min_ns = c->raw_min_ns = UINT64_MAX;
	c->next_sibling = p->first_child;
	p->first_child = ni;
	t->hints[ni] = (struct cp_hint){0, 0};
	if (t->n * 2 > t->ht_cap) {
		t->ht_cap *= 2;
		t->ht = xrealloc(t->ht, t->ht_cap * sizeof(*t->ht));
		memset(t->ht, 0, t->ht_cap * sizeof(*t->ht));
		for (uint32_t i = 1; i < t->n; i++)
			ht_insert(t, i);
	} else {
		ht_insert(t, ni);
	}
	return ni;
}

uint32_t cp_child(struct cp_tree *t, uint32_t parent, uint64_t key, const void *owner, uint32_t id)
{
	struct cp_hint *hint = &t->hints[parent];
	if (hint->child && hint->key == key)
		return hint->child;
	size_t mask = t->ht_cap - 1, h = mix(key, parent) & mask;
	uint32_t ni;
	for (; (ni = t->ht[h]) != 0; h = (h + 1) & mask)
		if (t->nodes[ni].key == key && t->nodes[ni].parent == parent)
			break;
	if (!ni)
		ni = new_node(t, parent, key, owner, id);
	/* new_node may have moved the hints array. */
	t->hints[parent] = (struct cp_hint){key, ni};
	return ni;
}

/* ---- frame replay ---- */

static struct cp_stack *get_stack(struct cp_tree *t, uint32_t stack, uint32_t depth)
{
	if (stack >= t->nstacks) {
		size_t n = (size_t)stack + 1;
		t->stacks = xrealloc(t->stacks, n * sizeof(*t->stacks));
		memset(t->stacks + t->nstacks, 0, (n - t->nstacks) * sizeof(*t->stacks));
		t->nstacks = n;
	}
	struct cp_stack *s = &t->stacks[stack];
	if (depth >= s->cap) {
		uint32_t cap = s->cap ? s->cap : 64;
		while (cap <= depth)
			cap *= 2;
		s->e = xrealloc(s->e, cap * sizeof(*s->e));
		s->cap = cap;
	}
	return s;
}

void cp_begin(struct cp_tree *t, uint32_t stack, uint32_t base, uint32_t depth, uint64_t key, const void *owner,
	      uint32_t id)
{
	/* The common case inline: a known stack, and the parent calling the
	 * same child as last time. */
	struct cp_stack *s = stack < t->nstacks && depth < t->stacks[stack].cap ? &t->stacks[stack]
										  : get_stack(t, stack, depth);
	uint32_t parent = depth ? s->e[depth - 1].node : base;
	const struct cp_hint *hint = &t->hints[parent];
	s->e[depth].node = hint->child && hint->key == key ? hint->child : cp_child(t, parent, key, owner, id);
	s->e[depth].child_ns = 0;
	s->e[depth].raw_child_ns = 0;
}

void cp_end(struct cp_tree *t, uint32_t stack, uint32_t depth, uint64_t t_begin, uint64_t t_end)
{
	cp_end_raw(t, stack, depth, t_begin, t_end, t_begin, t_end);
}

void cp_end_raw(struct cp_tree *t, uint32_t stack, uint32_t depth, uint64_t t_begin, uint64_t t_end, uint64_t r_begin,
		uint64_t r_end)
{
	struct cp_stack *s = &t->stacks[stack];
	struct cp_open *o = &s->e[depth];
	struct cp_node *n = &t->nodes[o->node];
	uint64_t dur = t_end > t_begin ? t_end - t_begin : 0, raw = r_end > r_begin ? r_end - r_begin : 0;
	n->raw_total_ns += raw;
	if (raw < n->raw_min_ns)
		n->raw_min_ns = raw;
	if (raw > n->raw_max_ns)
		n->raw_max_ns = raw;
	n->raw_self_ns += raw > o->raw_child_ns ? raw - o->raw_child_ns : 0;
	if (depth)
		s->e[depth - 1].raw_child_ns += raw;
	n->calls++;
	n->total_ns += dur;
	/* Children lie inside their parent in time, so child_ns <= dur; the
	 * guard only protects against a producer that breaks that. */
	n->self_ns += dur > o->child_ns ? dur - o->child_ns : 0;
	if (dur < n->min_ns) {
		n->min_ns = dur;
		n->min_at_raw_ns = raw;
	}
	if (dur >= n->max_ns) {
		n->max_ns = dur;
		n->max_at_raw_ns = raw;
	}
	if (depth)
		s->e[depth - 1].child_ns += dur;
}

static int is_frame_parent(const struct cp_node *p, uint32_t idx)
{
	return idx != CP_ROOT && !(p->key & CP_SYNTHETIC);
}

/* Marks nodes whose function is already on the path above them (within a
 * thread's frames: synthetic nodes never share keys with frames). */
static void mark_nested(struct cp_tree *t)
{
	uint32_t *onpath = xcalloc(t->nfuncs ? t->nfuncs : 1, sizeof(*onpath));
	uint32_t n = t->nodes[CP_ROOT].first_child;
	while (n) {
		struct cp_node *nd = &t->nodes[n];
		nd->nested = onpath[nd->func] > 0;
		onpath[nd->func]++;
		if (nd->first_child) {
			n = nd->first_child;
			continue;
		}
		/* Leave n and every ancestor that has no next sibling. */
		while (n) {
			struct cp_node *cur = &t->nodes[n];
			onpath[cur->func]--;
			if (cur->next_sibling) {
				n = cur->next_sibling;
				break;
			}
			n = cur->parent; /* CP_ROOT (0) ends the walk */
		}
	}
	free(onpath);
}

void cp_finish(struct cp_tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct cp_node *nd = &t->nodes[i];
		nd->sub_calls = nd->calls;
		if (!is_frame_parent(nd, (uint32_t)i))
			nd->total_ns = nd->raw_total_ns = 0;
	}
	/* Children always have larger indices than their parent. */
	for (size_t i = t->n - 1; i > 0; i--) {
		struct cp_node *nd = &t->nodes[i];
		struct cp_node *p = &t->nodes[nd->parent];
		p->sub_calls += nd->sub_calls;
		if (!is_frame_parent(p, nd->parent)) {
			p->total_ns += nd->total_ns;
			p->raw_total_ns += nd->raw_total_ns;
		}
	}
	mark_nested(t);
}

size_t cp_nnodes(const struct cp_tree *t) { return t->n; }
const struct cp_node *cp_node(const struct cp_tree *t, uint32_t i) { return &t->nodes[i]; }
size_t cp_nfuncs(const struct cp_tree *t) { return t->nfuncs; }
const struct cp_func *cp_func(const struct cp_tree *t, uint32_t i) { return &t->funcs[i]; }

/* ---- building from a trace ---- */

struct collect {
	struct cp_tree *t;
	enum cp_levels levels;
	uint32_t proc_node;
	uint32_t *thread_node; /* by lr_thread.index, current process */
	size_t nthreads;
};

static int col_process_begin(void *ctx, const struct trace_proc *p)
{
	struct collect *c = ctx;
	c->proc_node = CP_ROOT;
	if (c->levels >= CP_BY_PROCESS)
		c->proc_node = cp_child(c->t, CP_ROOT, CP_KEY_PROCESS(p->index), p, UINT32_MAX);
	free(c->thread_node);
	c->nthreads = lr_nthreads(p->log) + 1;
	c->thread_node = xcalloc(c->nthreads, sizeof(*c->thread_node));
	return 0;
}

static uint32_t base_node(struct collect *c, const struct fr_frame *f)
{
	if (c->levels < CP_BY_THREAD)
		return c->proc_node;
	uint32_t ti = f->thread->index;
	if (!c->thread_node[ti])
		c->thread_node[ti] = cp_child(c->t, c->proc_node, CP_KEY_THREAD(f->proc->index, ti), f->proc, ti);
	return c->thread_node[ti];
}

static int col_frame_begin(void *ctx, const struct fr_frame *f)
{
	struct collect *c = ctx;
	/* Ids no object owns have func_key 0: keep them apart by id. */
	uint64_t key = trace_func_key(f->proc, f->func_id);
	key = key ? key : (1ull << 62) | f->func_id;
	uint32_t base = f->depth ? 0 : base_node(c, f);
	cp_begin(c->t, f->thread->index, base, f->depth, key, f->proc, f->func_id);
	return 0;
}

static int col_frame_end(void *ctx, const struct fr_frame *f)
{
	struct collect *c = ctx;
	cp_end_raw(c->t, f->thread->index, f->depth, f->t_begin, f->t_end, f->r_begin, f->r_end);
	return 0;
}

static const char *own(struct cp_tree *t, char *s)
{
	t->owned = xrealloc(t->owned, (t->nowned + 1) * sizeof(*t->owned));
	t->owned[t->nowned++] = s;
	return s;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void cp_name_funcs(struct cp_tree *t)
{
	t->names = xcalloc(t->nfuncs + 1, sizeof(*t->names));
	t->modules = xcalloc(t->nfuncs + 1, sizeof(*t->modules));
	for (size_t i = 0; i < t->nfuncs; i++) {
		const struct cp_func *fn = &t->funcs[i];
		const struct trace_proc *p = fn->owner;
		char *s = NULL;
		t->modules[i] = "";
		if (fn->id == CP_ID_NAMED && fn->key >> 48 == 0x7ffe) {
			t->names[i] = fn->owner;
		} else if ((fn->key & CP_SYNTHETIC) && fn->id == UINT32_MAX) {
			if (asprintf(&s, "%s (pid %u)", p->name, p->info->pid) < 0)
				s = NULL;
			t->names[i] = s ? own(t, s) : "?";
		} else if (fn->key & CP_SYNTHETIC) {
			const struct lr_thread *th = lr_thread_at(p->log, fn->id);
			const char *label = trace_thread_label(p, th);
			if (asprintf(&s, "%s (tid %u)", label[0] ? label : "thread", th->tid) < 0)
				s = NULL;
			t->names[i] = s ? own(t, s) : "?";
		} else {
			const struct lr_object *o;
			t->names[i] = trace_name(p, fn->id);
			if (lr_func(p->log, fn->id, &o, NULL) == 0)
				t->modules[i] = base_name(o->path);
		}
	}
}

int cp_collect(struct cp_tree *t, struct trace_input *in, enum cp_levels levels)
{
	struct collect c = {.t = t, .levels = levels};
	struct trace_sink sink = {.ctx = &c, .process_begin = col_process_begin, .frame_begin = col_frame_begin,
				  .frame_end = col_frame_end};
	int r = trace_run(in, &sink);
	free(c.thread_node);
	cp_finish(t);
	cp_name_funcs(t);
	return r;
}

const char *cp_func_name(const struct cp_tree *t, uint32_t i, const char **module)
{
	if (module)
		*module = t->modules ? t->modules[i] : "";
	return t->names ? t->names[i] : "?";
}

/* ---- merged walk ---- */

struct level {
	uint32_t *nodes;
	size_t n, cap, pos;
};

static int cmp_rank(const void *a, const void *b, void *ctx)
{
	const uint32_t *rank = ((const void **)ctx)[0];
	const struct cp_node *nodes = ((const void **)ctx)[1];
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t rx = rank[nodes[x].func], ry = rank[nodes[y].func];
	if (rx != ry)
		return rx < ry ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void level_add(struct level *l, uint32_t node)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->nodes = xrealloc(l->nodes, l->cap * sizeof(*l->nodes));
	}
	l->nodes[l->n++] = node;
}

/* Fills level l with the children of group nodes[0..n), sorted by rank. */
static void fill_level(const struct cp_tree *t, const uint32_t *rank, struct level *l, const uint32_t *group,
		       size_t n)
{
	l->n = l->pos = 0;
	for (size_t i = 0; i < n; i++)
		for (uint32_t c = t->nodes[group[i]].first_child; c; c = t->nodes[c].next_sibling)
			level_add(l, c);
	const void *ctx[2] = {rank, t->nodes};
	qsort_r(l->nodes, l->n, sizeof(*l->nodes), cmp_rank, ctx);
}

int cp_walk_merged(const struct cp_tree *t, const uint32_t *rank, int (*cb)(void *ctx, const struct cp_group *g),
		   void *ctx)
{
	struct level *lv = NULL;
	size_t nlv = 0, cap = 0, top;
	int rc = 0;
	uint32_t root = CP_ROOT;
#define PUSH_LEVEL()                                                 \
	do {                                                         \
		if (nlv == cap) {                                    \
			size_t nc = cap ? cap * 2 : 16;              \
			lv = xrealloc(lv, nc * sizeof(*lv));         \
			memset(lv + cap, 0, (nc - cap) * sizeof(*lv)); \
			cap = nc;                                    \
		}                                                    \
		nlv++;                                               \
	} while (0)
	PUSH_LEVEL();
	fill_level(t, rank, &lv[0], &root, 1);
	while (nlv) {
		top = nlv - 1;
		struct level *l = &lv[top];
		if (l->pos >= l->n) {
			nlv--;
			continue;
		}
		size_t start = l->pos, end = start + 1;
		uint32_t r = rank[t->nodes[l->nodes[start]].func];
		while (end < l->n && rank[t->nodes[l->nodes[end]].func] == r)
			end++;
		l->pos = end;
		struct cp_group g = {.depth = (uint32_t)top + 1, .node = l->nodes[start], .nnodes = (uint32_t)(end - start)};
		int has_children = 0;
		for (size_t i = start; i < end; i++) {
			const struct cp_node *nd = &t->nodes[l->nodes[i]];
			g.calls += nd->calls;
			g.total_ns += nd->total_ns;
			g.self_ns += nd->self_ns;
			g.sub_calls += nd->sub_calls;
			has_children |= nd->first_child != 0;
		}
		int v = cb(ctx, &g);
		if (v < 0) {
			rc = -1;
			break;
		}
		if (v == 0 && has_children) {
			PUSH_LEVEL();
			/* lv may have moved: index, do not keep pointers. */
			fill_level(t, rank, &lv[nlv - 1], lv[top].nodes + start, end - start);
		}
	}
#undef PUSH_LEVEL
	for (size_t i = 0; i < cap; i++)
		free(lv[i].nodes);
	free(lv);
	return rc;
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const char *const *names = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(names[x], names[y]);
	return c ? c : (x < y ? -1 : x > y);
}

void cp_rank_by_name(const struct cp_tree *t, const char *const *names, uint32_t *rank)
{
	size_t n = t->nfuncs;
	uint32_t *order = xmalloc((n ? n : 1) * sizeof(*order));
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), cmp_name, (void *)names);
	uint32_t r = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(names[order[i]], names[order[i - 1]]))
			r++;
		rank[order[i]] = r;
	}
	free(order);
}
