/* sftrace graph: uftrace's graph view, per process.
 *
 * With FUNC: the backtraces that reach FUNC's outermost calls (each
 * distinct chain of callers, with its hits and their total time), then the
 * call graph under FUNC: every call made inside one of its outermost calls,
 * merged by call path relative to FUNC (children by name, in the order
 * first seen), each node with its calls and total time:
 *
 *   # TOTAL TIME   FUNCTION
 *      4.409 ms : (1) main
 *      0.961 us :  +-(2) foo
 *      0.231 us :  | (6) loop
 *               :  |
 *      0.040 us :  +-(1) bar
 *
 * A node with one child keeps it on the same indent (a single path stays
 * flat); a node with several draws them with "+-" and "|". Without FUNC,
 * the whole process: its threads' outermost calls under the process.
 *
 * One streaming pass: a stack per thread (the graph node of each open
 * frame); memory is the distinct call paths under FUNC, never events.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "format/sflog.h"
#include "cli/input_opts.h"
#include "lib/demangle.h"
#include "lib/hashmap.h"
#include "lib/log_symbols.h"
#include "lib/tail_mark.h"
#include "lib/text_esc.h"
#include "lib/trace_input.h"
#include "lib/util.h"

#define NONE UINT32_MAX
_Static_assert(NONE == TM_NONE, "a frame's tail_from and tm_tail_from share their none");
#define ROOT 0u

struct gnode {
	const char *name;     /* trace_name of its first frame */
	size_t len;           /* shown: without a C++ parameter list */
	uint64_t name_hash;   /* of the name, and of tail_from's */
	const char *tail_name; /* reached by this function's tail call (its jmp), else NULL */
	size_t tail_len;
	uint32_t parent, first_child, last_child, next_sibling, nchildren;
	uint64_t calls, total_ns;
	uint64_t raw_total_ns; /* as recorded (fr_frame.r_begin, r_end) */
};

/* One distinct chain of callers of FUNC's outermost calls, by the names
 * the graph shows (as the call graph merges them): two instantiations of
 * one generic function (apply::<…> for two closures) are one caller. */
struct backtrace {
	uint32_t *funcs;      /* outermost first; FUNC itself last: the first chain seen */
	uint8_t *others;      /* per frame: another function of the same name was there too */
	uint32_t *tails;      /* per frame: the function whose tail call reached it, else NONE */
	uint32_t len;
	uint64_t hash;
	uint64_t hits, time_ns;
	uint64_t raw_time_ns; /* as recorded */
};

struct open_frame {
	uint32_t node;        /* NONE: outside FUNC's graph */
	uint32_t func_id;
	uint32_t tail_from;   /* reached by this function's tail call, else NONE */
};

struct fname {
	const char *name;
	size_t len;
	uint64_t hash;
};

struct gthread {
	struct open_frame *stack;
	size_t cap;
	uint32_t bt;          /* the backtrace of the open outermost FUNC call, or NONE */
	uint32_t bt_depth;    /* its depth */
};

struct graph {
	const char *func;     /* NULL: the whole process */
	int raw_times;        /* --raw-times */
	double cost_err;      /* the process's lr_info.cost_err with net times, else 0 */
	long max_depth;       /* nodes shown below the root; <0: all */
	const struct trace_proc *proc;
	int8_t *is_target;    /* by function id: -1 unknown, 0 no, 1 yes */
	size_t nfuncs;
	struct gnode *nodes;
	size_t nnodes, capnodes;
	struct hashmap children; /* mix(parent, name hash) -> node */
	struct backtrace *bts;
	size_t nbts;
	struct hashmap bt_index; /* backtrace hash -> index + 1 */
	struct gthread *threads;
	size_t nthreads;
	struct fname *fnames; /* by function id of the current process */
	size_t nfnames;
	int shown;            /* processes printed */
	int failed;
};

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t mix(uint32_t parent, uint64_t name_hash)
{
	return (name_hash ^ ((uint64_t)parent * 0x9E3779B97F4A7C15ULL)) | 1;
}

static uint32_t new_node(struct graph *g, uint32_t parent, const char *name, size_t len, uint64_t name_hash)
{
	if (g->nnodes == g->capnodes) {
		g->capnodes = g->capnodes ? 2 * g->capnodes : 256;
		g->nodes = xrealloc(g->nodes, g->capnodes * sizeof(*g->nodes));
	}
	uint32_t i = (uint32_t)g->nnodes++;
	g->nodes[i] = (struct gnode){.name = name, .len = len, .name_hash = name_hash, .parent = parent};
	if (parent != NONE) {
		struct gnode *p = &g->nodes[parent];
		if (p->last_child)
			g->nodes[p->last_child].next_sibling = i;
		else
			p->first_child = i;
		p->last_child = i;
		p->nchildren++;
	}
	return i;
}

/* A function's name as the graph shows and merges it, made once per
 * function id of the process. */
static struct fname *fname_of(struct graph *g, uint32_t func_id)
{
	if (func_id >= g->nfnames) {
		size_t n = (size_t)func_id + 256;
		g->fnames = xrealloc(g->fnames, n * sizeof(*g->fnames));
		memset(g->fnames + g->nfnames, 0, (n - g->nfnames) * sizeof(*g->fnames));
		g->nfnames = n;
	}
	struct fname *fn = &g->fnames[func_id];
	if (!fn->name) {
		fn->name = trace_name(g->proc, func_id);
		fn->len = sf_name_sans_params(fn->name, trace_symbol(g->proc, func_id)->mangled);
		fn->hash = hash_bytes(0xcbf29ce484222325ULL, fn->name, fn->len);
	}
	return fn;
}

static int same_node(const struct gnode *n, const char *name, size_t len, const struct fname *tail)
{
	if (n->len != len || memcmp(n->name, name, len) || !n->tail_name != !tail)
		return 0;
	return !tail || (n->tail_len == tail->len && !memcmp(n->tail_name, tail->name, tail->len));
}

static uint32_t new_child(struct graph *g, uint32_t parent, const struct fname *fn, uint64_t h,
			  const struct fname *tail)
{
	uint32_t n = new_node(g, parent, fn->name, fn->len, h);
	if (tail) {
		g->nodes[n].tail_name = tail->name;
		g->nodes[n].tail_len = tail->len;
	}
	return n;
}

/* The child of `parent` named as func_id, reached by a tail call of
 * tail_from (NONE: a call), created if needed. A tail callee is a node of
 * its own: the caller's frame closed first, so it hangs under the
 * caller's caller, marked with the caller. */
static uint32_t child_of(struct graph *g, uint32_t parent, uint32_t func_id, uint32_t tail_from)
{
	struct fname tail_fn, *fn;
	const struct fname *tail = NULL;
	if (tail_from != NONE) { /* a copy: fname_of may move the table */
		tail_fn = *fname_of(g, tail_from);
		tail = &tail_fn;
	}
	fn = fname_of(g, func_id);
	const char *name = fn->name;
	size_t len = fn->len;
	uint64_t h = tail ? hash_bytes(fn->hash ^ 0x7461696cULL, tail->name, tail->len) : fn->hash;
	int added;
	uint64_t *slot = hm_put(&g->children, mix(parent, h), &added);
	if (!added) {
		const struct gnode *n = &g->nodes[*slot];
		if (n->parent == parent && same_node(n, name, len, tail))
			return (uint32_t)*slot;
		/* A hash collision (rare): find it among the siblings. */
		for (uint32_t c = g->nodes[parent].first_child; c; c = g->nodes[c].next_sibling)
			if (same_node(&g->nodes[c], name, len, tail))
				return c;
		return new_child(g, parent, fn, h, tail);
	}
	*slot = new_child(g, parent, fn, h, tail);
	return (uint32_t)*slot;
}

/* `name` is FUNC: the same text, or FUNC followed by the name's parameter
 * list (C++'s "app::f(int)", short style "app::f(…)"), which a person
 * leaves out as -F's regexes let them. */
static int name_is(const char *name, const char *func)
{
	size_t n = strlen(func);
	return name && !strncmp(name, func, n) && (!name[n] || (name[n] == '(' && name[strlen(name) - 1] == ')'));
}

struct alias_match {
	const char *func;
	char *hit; /* the alias's full name (demangled, else raw) */
};

/* One of the function's other names (identical code folding), full, raw or
 * in report's short style. */
static void alias_matches(void *ctx, const char *mangled, const char *demangled)
{
	struct alias_match *a = ctx;
	const char *name = demangled ? demangled : mangled;
	if (a->hit || !name)
		return;
	char *s = sf_short_name(name, mangled);
	if (name_is(name, a->func) || name_is(mangled, a->func) || name_is(s, a->func))
		a->hit = xstrdup(name);
	free(s);
}

/* FUNC by the name outputs show, by its full name, or by one of its aliases
 * as -F takes them: then the alias names the function in the graph. The
 * alias is tried first, so that the name is chosen before any output
 * builds it. */
static int func_matches(struct graph *g, uint32_t func_id)
{
	/* The lookup loads the object's symbols, which ls_aliases reads. */
	const struct sym_info *si = trace_symbol(g->proc, func_id);
	struct alias_match a = {g->func, NULL};
	ls_aliases(g->proc->syms, func_id, alias_matches, &a);
	if (a.hit) {
		ls_prefer_name(g->proc->syms, func_id, a.hit);
		free(a.hit);
		return 1;
	}
	return name_is(trace_name(g->proc, func_id), g->func) || name_is(si->name, g->func);
}

static int is_target(struct graph *g, uint32_t func_id)
{
	if (!g->func)
		return 0;
	if (func_id >= g->nfuncs) {
		size_t n = (size_t)func_id + 1024;
		g->is_target = xrealloc(g->is_target, n);
		memset(g->is_target + g->nfuncs, -1, n - g->nfuncs);
		g->nfuncs = n;
	}
	if (g->is_target[func_id] < 0)
		g->is_target[func_id] = (int8_t)func_matches(g, func_id);
	return g->is_target[func_id];
}

/* Two functions a backtrace shows under one name (its whole name: C++
 * overloads stay apart). */
static int same_name(const struct graph *g, uint32_t x, uint32_t y)
{
	return x == y || !strcmp(trace_name(g->proc, x), trace_name(g->proc, y));
}

static uint64_t hash_name(const struct graph *g, uint64_t h, uint32_t func_id)
{
	const char *name = trace_name(g->proc, func_id);
	return hash_bytes(h, name, strlen(name) + 1);
}

/* A frame of a backtrace: its function and how it was reached. A tail
 * callee shows under its tail caller's caller (the tail caller's frame
 * closed first), so the edge is marked, as in the call graph; a chain
 * through a tail call is apart from one through a plain call. */
static uint64_t hash_frame(const struct graph *g, uint64_t h, uint32_t func_id, uint32_t tail_from)
{
	h = hash_name(g, h, func_id);
	return tail_from == NONE ? h : hash_name(g, h ^ 0x7461696cULL, tail_from);
}

static int same_tail(const struct graph *g, uint32_t x, uint32_t y)
{
	return x == y || (x != NONE && y != NONE && same_name(g, x, y));
}

/* The backtrace of the stack below an outermost FUNC call at `depth`. */
static uint32_t find_backtrace(struct graph *g, const struct gthread *t, uint32_t depth, uint32_t func_id,
			       uint32_t tail_from)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (uint32_t d = 0; d < depth; d++)
		h = hash_frame(g, h, t->stack[d].func_id, t->stack[d].tail_from);
	h = hash_frame(g, h, func_id, tail_from) | 1;
	for (uint64_t *v = hm_find(&g->bt_index, h); v;) {
		struct backtrace *b = &g->bts[*v - 1];
		int same = b->len == depth + 1 && same_name(g, b->funcs[depth], func_id) &&
			   same_tail(g, b->tails[depth], tail_from);
		for (uint32_t d = 0; same && d < depth; d++)
			same = same_name(g, b->funcs[d], t->stack[d].func_id) &&
			       same_tail(g, b->tails[d], t->stack[d].tail_from);
		if (!same)
			break; /* a collision: keep it apart, unindexed */
		for (uint32_t d = 0; d < depth; d++)
			b->others[d] |= b->funcs[d] != t->stack[d].func_id;
		b->others[depth] |= b->funcs[depth] != func_id;
		return (uint32_t)(*v - 1);
	}
	g->bts = xrealloc(g->bts, (g->nbts + 1) * sizeof(*g->bts));
	struct backtrace *b = &g->bts[g->nbts];
	*b = (struct backtrace){.len = depth + 1, .hash = h};
	b->funcs = xmalloc((depth + 1) * sizeof(*b->funcs));
	b->others = xcalloc(depth + 1, 1);
	b->tails = xmalloc((depth + 1) * sizeof(*b->tails));
	for (uint32_t d = 0; d < depth; d++)
		b->funcs[d] = t->stack[d].func_id, b->tails[d] = t->stack[d].tail_from;
	b->funcs[depth] = func_id;
	b->tails[depth] = tail_from;
	int added;
	uint64_t *slot = hm_put(&g->bt_index, h, &added);
	if (added)
		*slot = g->nbts + 1;
	return (uint32_t)g->nbts++;
}

static int frame_begin(void *ctx, const struct fr_frame *f)
{
	struct graph *g = ctx;
	struct gthread *t = &g->threads[f->thread->index];
	if (f->depth >= t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		while (t->cap <= f->depth)
			t->cap *= 2;
		t->stack = xrealloc(t->stack, t->cap * sizeof(*t->stack));
	}
	uint32_t parent = f->depth ? t->stack[f->depth - 1].node : g->func ? NONE : ROOT;
	uint32_t node = NONE;
	uint32_t tail_from = tm_tail_from(f); /* TM_NONE is NONE */
	if (parent != NONE) {
		node = child_of(g, parent, f->func_id, tail_from);
	} else if (is_target(g, f->func_id)) {
		node = ROOT;
		if (!g->nodes[ROOT].name) {
			g->nodes[ROOT].name = trace_name(g->proc, f->func_id);
			g->nodes[ROOT].len = sf_name_sans_params(g->nodes[ROOT].name,
								 trace_symbol(g->proc, f->func_id)->mangled);
		}
		t->bt = find_backtrace(g, t, f->depth, f->func_id, tail_from);
		t->bt_depth = f->depth;
		g->bts[t->bt].hits++;
	}
	if (node != NONE)
		g->nodes[node].calls++;
	t->stack[f->depth] = (struct open_frame){node, f->func_id, tail_from};
	return 0;
}

static int frame_end(void *ctx, const struct fr_frame *f)
{
	struct graph *g = ctx;
	struct gthread *t = &g->threads[f->thread->index];
	uint32_t node = f->depth < t->cap ? t->stack[f->depth].node : NONE;
	uint64_t d = f->t_end - f->t_begin, raw = f->r_end - f->r_begin;
	if (node != NONE) {
		g->nodes[node].total_ns += d;
		g->nodes[node].raw_total_ns += raw;
	}
	if (t->bt != NONE && f->depth == t->bt_depth) {
		g->bts[t->bt].time_ns += d;
		g->bts[t->bt].raw_time_ns += raw;
		t->bt = NONE;
	}
	return 0;
}

/* ---- printing, in uftrace's layout ---- */

/* print_time_unit: "%3u.%03u us", larger units above 999
 * (sf_uftrace_unit); blanks for 0. */
static void put_time(uint64_t ns)
{
	static const char *const units[] = SF_UFTRACE_UNITS;
	if (!ns) {
		fputs("          ", stdout);
		return;
	}
	uint64_t v, small;
	unsigned i = sf_uftrace_unit(ns, &v, &small);
	printf("%3" PRIu64 ".%03" PRIu64 " %s", v, small, units[i]);
}

/* A net time, or (trace_net_uncertain) the time as recorded marked
 * NET_UNCERTAIN_MARK in the same 10 columns, a decimal fewer when it
 * needs the room ("<123.46 us"). */
static void put_net_time(const struct graph *g, uint64_t ns, uint64_t raw)
{
	static const char *const units[] = SF_UFTRACE_UNITS;
	if (!trace_net_uncertain(g->cost_err, ns, raw)) {
		put_time(ns);
		return;
	}
	uint64_t v, small;
	unsigned i = sf_uftrace_unit(raw, &v, &small);
	char b[32];
	int n = snprintf(b, sizeof(b), NET_UNCERTAIN_MARK "%" PRIu64 ".%03" PRIu64, v, small);
	if (n > 7)
		n = snprintf(b, sizeof(b), NET_UNCERTAIN_MARK "%" PRIu64 ".%02" PRIu64, v, small / 10);
	printf("%7s %s", b, units[i]);
}

/* uftrace's pr_indent: " | " where a branch continues, " +-" before a
 * branch's own line. */
static void put_indent(const uint8_t *mask, uint32_t indent, int line)
{
	int64_t last = -1;
	for (uint32_t i = 0; i < indent; i++)
		if (line && mask[i])
			last = i;
	for (uint32_t i = 0; i < indent; i++) {
		if (!line || (int64_t)i < last)
			fputs(mask[i] ? " | " : "   ", stdout);
		else
			fputs((int64_t)i == last ? " +-" : "---", stdout);
	}
}

/* name[0..len) escaped. */
static const char *esc_len(const char *name, size_t len)
{
	static char buf[4096];
	if (len == strlen(name) || len >= sizeof(buf))
		return sf_esc(name);
	memcpy(buf, name, len);
	buf[len] = 0;
	return sf_esc(buf);
}

static void put_node(const struct graph *g, uint32_t n, const uint8_t *mask, uint32_t indent, int line)
{
	fputs("  ", stdout);
	put_net_time(g, g->nodes[n].total_ns, g->nodes[n].raw_total_ns);
	fputs(" : ", stdout);
	put_indent(mask, indent, line);
	printf("(%" PRIu64 ") %s", g->nodes[n].calls, esc_len(g->nodes[n].name, g->nodes[n].len));
	if (g->nodes[n].tail_name) /* esc_len's buffer is free again */
		printf(" /* tail call from %s */", esc_len(g->nodes[n].tail_name, g->nodes[n].tail_len));
	putchar('\n');
}

struct walk {
	uint32_t node, indent, orig, next, depth;
};

/* uftrace's print_graph_node, with an explicit stack (depth is unbounded). */
static void print_tree(const struct graph *g)
{
	size_t cap = 64, n = 0;
	struct walk *st = xmalloc(cap * sizeof(*st));
	uint8_t *mask = xcalloc(g->nnodes + 2, 1);
	put_node(g, ROOT, mask, 0, g->nodes[ROOT].nchildren > 1);
	uint32_t indent = 0;
	if (g->nodes[ROOT].nchildren > 1)
		mask[indent++] = 1;
	st[n++] = (struct walk){ROOT, indent, 0, g->nodes[ROOT].first_child, 0};
	while (n) {
		struct walk *w = &st[n - 1];
		const struct gnode *p = &g->nodes[w->node];
		if (!w->next || (g->max_depth >= 0 && w->depth >= (uint32_t)g->max_depth)) {
			mask[w->orig] = 0;
			n--;
			continue;
		}
		uint32_t c = w->next;
		w->next = g->nodes[c].next_sibling;
		if (c != p->first_child) { /* a blank line between siblings */
			printf("%12s : ", "");
			put_indent(mask, w->indent, 0);
			putchar('\n');
		}
		put_node(g, c, mask, w->indent, p->nchildren > 1);
		uint32_t orig = w->indent, ci = w->indent, depth = w->depth + 1;
		if (g->nodes[c].nchildren > 1)
			mask[ci++] = 1;
		if (p->nchildren > 1 && orig > 0 && c == p->last_child)
			mask[orig - 1] = 0;
		if (n == cap) {
			cap *= 2;
			st = xrealloc(st, cap * sizeof(*st));
		}
		st[n++] = (struct walk){c, ci, orig, g->nodes[c].first_child, depth};
	}
	free(mask);
	free(st);
}

static void print_backtraces(struct graph *g)
{
	puts("=============== BACKTRACE ===============");
	for (size_t i = 0; i < g->nbts; i++) {
		const struct backtrace *b = &g->bts[i];
		printf(" backtrace #%zu: hit %" PRIu64 ", time ", i, b->hits);
		put_net_time(g, b->time_ns, b->raw_time_ns);
		putchar('\n');
		for (uint32_t k = 0; k < b->len; k++) {
			uint64_t vaddr = 0;
			lr_func(g->proc->log, b->funcs[k], NULL, &vaddr);
			printf("   [%u] %s (%#" PRIx64 "%s)", k, sf_esc(trace_name(g->proc, b->funcs[k])), vaddr,
			       b->others[k] ? " and other instantiations" : "");
			if (b->tails[k] != NONE) { /* named as the call graph names it */
				const struct fname *tf = fname_of(g, b->tails[k]);
				printf(" /* tail call from %s */", esc_len(tf->name, tf->len));
			}
			putchar('\n');
		}
		putchar('\n');
	}
}

static void graph_reset(struct graph *g, const struct trace_proc *p)
{
	for (size_t i = 0; i < g->nthreads; i++)
		free(g->threads[i].stack);
	free(g->threads);
	for (size_t i = 0; i < g->nbts; i++) {
		free(g->bts[i].funcs);
		free(g->bts[i].others);
		free(g->bts[i].tails);
	}
	free(g->bts);
	g->bts = NULL;
	g->nbts = 0;
	hm_free(&g->bt_index);
	hm_free(&g->children);
	free(g->is_target);
	g->is_target = NULL;
	free(g->fnames);
	g->fnames = NULL;
	g->nfnames = 0;
	g->nfuncs = 0;
	g->nnodes = 0;
	g->threads = NULL;
	g->nthreads = 0;
	if (!p)
		return;
	g->proc = p;
	g->nthreads = lr_nthreads(p->log);
	g->threads = xcalloc(g->nthreads + 1, sizeof(*g->threads));
	for (size_t i = 0; i < g->nthreads; i++)
		g->threads[i].bt = NONE;
	new_node(g, NONE, g->func ? NULL : p->name, g->func ? 0 : strlen(p->name), 0);
}

static int process_begin(void *ctx, const struct trace_proc *p)
{
	graph_reset(ctx, p);
	return 0;
}

static int process_end(void *ctx, const struct trace_proc *p)
{
	struct graph *g = ctx;
	struct gnode *root = &g->nodes[ROOT];
	if (g->func && !root->calls)
		return 0;
	if (!g->func) {
		/* The process: one call whose time is its kept outermost calls
		 * (uftrace's root), so every cut applies to it and the tracer's
		 * start-up before main is not counted. */
		root->calls = 1;
		root->total_ns = 0;
		root->raw_total_ns = 0;
		for (uint32_t c = root->first_child; c != NONE && c; c = g->nodes[c].next_sibling) {
			root->total_ns += g->nodes[c].total_ns;
			root->raw_total_ns += g->nodes[c].raw_total_ns;
		}
	}
	g->cost_err = g->raw_times ? 0 : p->info->cost_err;
	g->shown++;
	printf("# Function Call Graph for '%s' (pid %u)\n", esc_len(root->name, root->len), p->info->pid);
	if (p->info->cost_known && g->cost_err > 0)
		printf("# times net of the tracer's cost: %.1f ns per call in the caller, %.1f ns in the call, each within "
		       "%.1f%%; a figure marked " NET_UNCERTAIN_MARK " is as recorded (net, it could be off by more than 10%%); "
		       "--raw-times for times as recorded\n", p->info->cost_parent_ns, p->info->cost_child_ns, 100 * p->info->cost_err);
	else if (p->info->cost_known)
		printf("# %s: %.1f ns per call in the caller, %.1f ns in the call%s\n",
		       g->raw_times ? "times as recorded (--raw-times); the tracer's cost" : "times net of the tracer's cost",
		       p->info->cost_parent_ns, p->info->cost_child_ns, g->raw_times ? "" : "; --raw-times for times as recorded");
	if (g->func)
		print_backtraces(g);
	puts("========== FUNCTION CALL GRAPH ==========");
	puts("# TOTAL TIME   FUNCTION");
	print_tree(g);
	putchar('\n');
	return ferror(stdout) != 0;
}

/* ---- command line ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace graph [OPTIONS] [FUNC] LOG...\n"
		"\n"
		"uftrace's graph, per process. With FUNC (its name as report or replay\n"
		"shows it, or its full name): the backtraces that reach FUNC's outermost\n"
		"calls, with hits and time, then the call graph under FUNC: every call made\n"
		"inside them, merged by call path, as TOTAL TIME : (CALLS) name; a single\n"
		"path stays flat, branches are drawn with +- and |. Without FUNC, the whole\n"
		"process's graph: its threads' outermost calls under the process, whose\n"
		"time is theirs added up (the calls the cut options keep). Of\n"
		"several operands the first is FUNC unless it is an sftrace log file\n"
		"(a directory of logs is named alone, or after FUNC).\n"
		"\n"
		"options:\n"
		"      --depth N          show N levels under the graph's root\n"
		"      --raw-times        times as recorded: the tracer's own cost per call,\n"
		"                         measured at start, is not taken off (the default does)\n"
		"  -h, --help             this help\n");
	input_opts_usage(out, 's');
}

/* A regular file that starts with an sftrace log's magic (a FIFO is not
 * opened for reading: it would block). */
static int is_sftrace_log(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat st;
	uint64_t magic = 0;
	ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, &magic, sizeof(magic)) : 0;
	close(fd);
	return n == (ssize_t)sizeof(magic) && magic == SF_MAGIC;
}

/* A lone operand is the log (or directory). Of several, the first is FUNC
 * unless it is an sftrace log file: a binary or a source directory named
 * like the function, beside the log, is not taken for a log. */
static const char *take_func(int argc, char **argv, int *first)
{
	if (*first + 1 >= argc || is_sftrace_log(argv[*first]))
		return NULL;
	return argv[(*first)++];
}

static int graph_option(void *ctx, int c, const char *arg)
{
	struct graph *g = ctx;
	if (c == 'R') {
		g->raw_times = 1;
		return 0;
	}
	return c == 'D' ? parse_number("--depth", arg, 0, 1L << 30, &g->max_depth) : -1;
}

int cmd_graph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"depth", required_argument, 0, 'D'},
		{"raw-times", no_argument, 0, 'R'},
		{0, 0, 0, 0},
	};
	struct graph g = {.max_depth = -1};
	struct input_opts io;
	input_opts_init(&io, 's');
	int rc = 1, usage_error;
	const struct cmd_opts own = {longopts, NULL, graph_option, &g, usage, IO_PAGE_BY_DEFAULT};
	switch (input_opts_parse(&io, &own, argc, argv)) {
	case IO_HELP_SHOWN: input_opts_free(&io); return 0;
	case IO_USAGE_ERROR: goto out_usage;
	}
	int first = optind;
	g.func = take_func(argc, argv, &first);
	io.trace.short_names = input_opts_short_names(&io, 1);
	io.trace.time_order = 1; /* children in the order they first ran */
	io.trace.net_times = !g.raw_times;
	io.trace.raw_cut = g.raw_times;
	struct trace_input *in = input_opts_open(&io, "graph", argc, argv, first, NULL, 0, &usage_error);
	if (!in) {
		if (usage_error)
			goto out_usage;
		goto out;
	}
	struct trace_sink sink = {.ctx = &g,
				  .process_begin = process_begin,
				  .frame_begin = frame_begin,
				  .frame_end = frame_end,
				  .process_end = process_end};
	static char buf[1 << 16];
	setvbuf(stdout, buf, _IOFBF, sizeof(buf));
	if (trace_run(in, &sink) == 0) {
		rc = input_opts_end_output(&io, 1, "the graph");
		if (rc == 0 && g.func && !g.shown) {
			sf_error("no call of '%s' in the trace (names as report shows them, or full names)",
				 sf_esc(g.func));
			rc = 1;
		}
	}
	/* An error is its one line: no repairs notice after it. */
	if (rc == 0)
		trace_report_repairs(in);
	graph_reset(&g, NULL);
	free(g.nodes);
	trace_close(in);
out:
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "graph");
}
