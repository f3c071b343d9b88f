/* Sites read leaf first and merged (memory_sites.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <inttypes.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/memory_sites.h"
#include "lib/demangle.h"
#include "lib/hashmap.h"
#include "lib/util.h"

struct ms_fold {
	pcre2_code *re;
	pcre2_match_data *md;
	/* per function id of the process last asked about: 0 unknown, 1 kept, 2 folded */
	const struct trace_proc *proc;
	uint8_t *memo;
	size_t nmemo;
};

struct ms_fold *ms_fold_new(int no_default, const char *const *extra, size_t nextra)
{
	size_t len = no_default ? 1 : sizeof(MEMORY_FOLD_DEFAULT);
	for (size_t i = 0; i < nextra; i++) {
		int ec;
		PCRE2_SIZE eo;
		pcre2_code *one = pcre2_compile((PCRE2_SPTR)extra[i], PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
		if (!one) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(ec, msg, sizeof(msg));
			sf_error("--fold '%s': %s at offset %zu", extra[i], (const char *)msg, (size_t)eo);
			return NULL;
		}
		pcre2_code_free(one);
		len += strlen(extra[i]) + 8;
	}
	if (no_default && !nextra)
		return NULL;
	/* one alternation: (?:default)|(?:extra1)|... */
	char *pat = xmalloc(len + 8), *q = pat;
	*q = 0;
	if (!no_default)
		q += sprintf(q, "(?:%s)", MEMORY_FOLD_DEFAULT);
	for (size_t i = 0; i < nextra; i++)
		q += sprintf(q, "%s(?:%s)", q == pat ? "" : "|", extra[i]);
	int ec;
	PCRE2_SIZE eo;
	struct ms_fold *f = xcalloc(1, sizeof(*f));
	f->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
	free(pat);
	if (!f->re) { /* each part compiled alone: only a pattern that breaks the alternation gets here */
		sf_error("--fold: the patterns do not combine into one (PCRE2 error %d at offset %zu)", ec, (size_t)eo);
		free(f);
		return NULL;
	}
	f->md = pcre2_match_data_create_from_pattern(f->re, NULL);
	return f;
}

void ms_fold_free(struct ms_fold *f)
{
	if (!f)
		return;
	pcre2_match_data_free(f->md);
	pcre2_code_free(f->re);
	free(f->memo);
	free(f);
}

static int fold_name(struct ms_fold *f, const char *name)
{
	return pcre2_match(f->re, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, f->md, NULL) >= 0;
}

/* fold_name for the symbol readers' callbacks (ctx: the ms_fold) */
static int skip_name(void *ctx, const char *name)
{
	return fold_name(ctx, name);
}

static int fold_func(struct ms_fold *f, const struct trace_proc *p, uint32_t id)
{
	if (!f)
		return 0;
	if (f->proc != p) {
		f->proc = p;
		if (f->memo)
			memset(f->memo, 0, f->nmemo);
	}
	if (id >= f->nmemo) {
		size_t n = (size_t)id * 2 + 64;
		f->memo = xrealloc(f->memo, n);
		memset(f->memo + f->nmemo, 0, n - f->nmemo);
		f->nmemo = n;
	}
	if (!f->memo[id])
		f->memo[id] = fold_name(f, trace_symbol(p, id)->name) ? 2 : 1;
	return f->memo[id] == 2;
}

/* A row per site, with the keys it merges by. */
struct keyed {
	struct ms_row row;
	uint32_t site;
};

static int group_mode;

static int cmp_file(const char *a, const char *b)
{
	if (!a || !b)
		return a ? 1 : b ? -1 : 0;
	return a == b ? 0 : strcmp(a, b);
}

static const char *base_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Rows without a traced frame in untraced objects (ms_row.uobj): by the
 * object's basename, the function, then the line (by line), else the ELF
 * address when there is no function to name. */
static int cmp_untraced(const struct ms_row *a, const struct ms_row *b)
{
	int c;
	if (!a->uobj || !b->uobj)
		return a->uobj ? 1 : -1;
	if ((c = strcmp(base_of(a->uobj), base_of(b->uobj))))
		return c;
	if (a->func != UINT32_MAX) /* a traced function's calls into that object: one row */
		return 0;
	if ((c = cmp_file(a->usym, b->usym)))
		return c;
	if (a->usym && group_mode == MS_BY_FUNCTION)
		return 0;
	if ((c = cmp_file(a->file, b->file)))
		return c;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if (!a->usym && !a->file && a->uvaddr != b->uvaddr)
		return a->uvaddr < b->uvaddr ? -1 : 1;
	return 0;
}

/* Inlined functions by name (NULL, the function's own code, first): an
 * inlined function's copies in one function are one row per line. */
static int cmp_inl(const struct sym_inline *a, const struct sym_inline *b)
{
	if (a == b)
		return 0;
	if (!a || !b)
		return a ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int cmp_keyed(const void *pa, const void *pb)
{
	const struct keyed *a = pa, *b = pb;
	if (group_mode == MS_BY_STACK)
		return a->site < b->site ? -1 : a->site > b->site;
	if (a->row.func != b->row.func)
		return a->row.func < b->row.func ? -1 : 1;
	int c;
	if ((c = cmp_inl(a->row.inl, b->row.inl)))
		return c;
	if (group_mode == MS_BY_LINE) {
		if (a->row.tail != b->row.tail)
			return a->row.tail - b->row.tail;
		if ((c = cmp_file(a->row.file, b->row.file)))
			return c;
		if (a->row.line != b->row.line)
			return a->row.line < b->row.line ? -1 : 1;
	}
	/* without a traced frame (or a line), the call site's address tells rows
	 * apart, unless it is in an unrecorded object (a runtime address that
	 * changes from run to run) and a traced function allocated there */
	if (group_mode == MS_BY_FUNCTION && a->row.func != UINT32_MAX)
		return 0; /* one row per function, wherever its sites */
	if (a->row.uobj || b->row.uobj)
		return cmp_untraced(&a->row, &b->row);
	if (a->row.own != b->row.own)
		return a->row.own - b->row.own;
	if (a->row.own)
		return 0;
	if (a->row.outside != b->row.outside)
		return a->row.outside - b->row.outside;
	if ((!a->row.outside || a->row.func == UINT32_MAX) && (a->row.func == UINT32_MAX || (group_mode == MS_BY_LINE && !a->row.file)) && a->row.addr != b->row.addr)
		return a->row.addr < b->row.addr ? -1 : 1;
	return 0;
}

/* A site in no recorded object: the untraced object the log names there,
 * when it does (ms_row.uobj); with no traced frame (no_frame), also the
 * function and line there, which then name the row. */
static void untraced_site(struct log_symbols *ls, struct ms_row *row, int no_frame)
{
	struct ls_untraced_site u;
	if (!ls_untraced_site(ls, row->addr, &u))
		return;
	row->uobj = u.path;
	row->umain = u.main;
	if (!no_frame) /* a traced function's call into it: the object alone, keyed by the function */
		return;
	row->usym = u.func;
	row->ushort = u.func_short;
	row->uvaddr = u.vaddr;
	row->file = u.file;
	row->line = u.file ? u.line : 0;
}

/* A site in traced plumbing the allocating function called (Rust's
 * RawVec<u64>::grow_one, entered from Vec::push inlined into the user's
 * fn): the line of the function's call of the outermost plumbing frame,
 * inlined plumbing folded into the line it was entered from, when all its
 * calls of that frame's function lie on one line (a Vec pushed on line 6,
 * another of another type on line 9: two lines, as heaptrack's unwinder
 * sees them). Else the row keeps the function's own line. */
/* plumbing_entry_line's answers per (function, callee) during one
 * ms_group: a function's sites through one plumbing frame share its
 * scan (index + 1 into entry_lines) */
struct entry_line {
	const char *file;
	uint32_t line;
	struct ls_inl inl;
};
static struct hashmap entry_memo;
static struct entry_line *entry_lines;
static size_t nentry_lines;

static void plumbing_entry_line(const struct heap_result *r, struct ms_fold *fold, uint32_t node, uint32_t leaf,
				struct ms_row *row)
{
	uint32_t entry = node;
	while (entry != CP_ROOT && heap_node_parent(r, entry) != leaf)
		entry = heap_node_parent(r, entry);
	if (entry == CP_ROOT)
		return;
	uint32_t callee = heap_node_func(r, entry);
	int added;
	uint64_t *m = hm_put(&entry_memo, (uint64_t)row->func << 32 | callee, &added);
	if (added) {
		struct entry_line e = {0};
		if (ls_call_line(r->proc->syms, row->func, callee, fold ? skip_name : NULL, fold, &e.file, &e.line,
				 &e.inl) != 1)
			e.file = NULL;
		entry_lines = xrealloc(entry_lines, (nentry_lines + 1) * sizeof(*entry_lines));
		entry_lines[nentry_lines++] = e;
		*m = nentry_lines;
	}
	const struct entry_line *e = &entry_lines[*m - 1];
	if (e->file) {
		row->file = e->file;
		row->line = e->line;
		row->inl = e->inl.inl;
		row->inl_varies = e->inl.varies;
	}
}

static void site_line(const struct heap_result *r, struct ms_fold *fold, const struct heap_site *s, struct ms_row *row)
{
	const struct trace_proc *p = r->proc;
	uint32_t leaf = s->node, tailer = 0;
	while (leaf != CP_ROOT && fold_func(fold, p, heap_node_func(r, leaf))) {
		/* folded plumbing a function jumped to (add's `jmp
		 * vector::_M_realloc_insert`): the allocation is that tail
		 * caller's, as if it had jumped to the allocator */
		uint64_t t = hm_get(&r->tail_callee, leaf, 0);
		leaf = t && t != UINT64_MAX ? (uint32_t)(t - 1) : heap_node_parent(r, leaf);
		if (t && t != UINT64_MAX)
			tailer = leaf;
	}
	/* nothing but plumbing (std's pre-main allocations through the traced
	 * __rust_alloc shim, called from untraced std): no traced frame
	 * allocated, as for any untraced caller; the call site names it */
	uint64_t vaddr;
	const struct sym_info *in = s->addr ? ls_lookup_addr(p->syms, s->addr, &vaddr) : NULL;
	int plumbing = leaf != s->node || (fold && in && fold_name(fold, in->name));
	*row = (struct ms_row){
		.func = leaf == CP_ROOT ? UINT32_MAX : heap_node_func(r, leaf), .addr = s->addr, .node = s->node,
		.leaf_node = leaf, .tail = (s->tail && leaf == s->node) || (tailer && leaf == tailer), .allocs = s->allocs, .bytes = s->bytes,
		.temporaries = s->temporaries, .peak_bytes = s->peak_bytes, .peak_blocks = s->peak_blocks,
		.leak_bytes = s->leak_bytes, .leak_blocks = s->leak_blocks, .top_bytes = s->bytes,
	};
	/* no traced frame, the call site in a recorded object's function that
	 * is not plumbing (Rust std's set-up before main): that function names
	 * the row, as an untraced object's does (libc's _IO_file_doallocate) */
	if (leaf == CP_ROOT && in && !(fold && fold_name(fold, in->name))) {
		row->usym = in->name;
		row->ushort = ls_short_of(p->syms, in);
	}
	/* folded plumbing that tail-called the allocator (Lua's luaL_alloc
	 * ending in `jmp realloc`) returns into its caller, the allocating
	 * function: the call site is then that function's own line, when the
	 * line table puts it in the function's own file (Rust's inlined
	 * alloc:: code can have lines of library files without inline
	 * records to fold: the rule for folded plumbing below applies) */
	if (s->tail && leaf != s->node && leaf != CP_ROOT && leaf == heap_node_parent(r, s->node) && in) {
		const struct sym_info *li = trace_symbol(p, heap_node_func(r, leaf));
		if (li->file && strcmp(in->name, li->name) == 0 &&
		    ls_site_line_inl(p->syms, s->addr, UINT32_MAX, skip_name, fold, &row->file, &row->line, &row->inl) &&
		    strcmp(row->file, li->file) == 0)
			return;
		row->file = NULL;
		row->line = 0;
		row->inl = NULL;
	}
	if (leaf != CP_ROOT && (s->tail || plumbing)) {
		const struct sym_info *si = trace_symbol(p, row->func);
		row->file = si->file;
		row->line = si->line;
		/* a tail call's own line, when the function has one */
		if (row->tail && p->syms)
			ls_tail_line(p->syms, row->func, &row->file, &row->line);
		else if (!tailer && leaf != s->node && p->syms)
			plumbing_entry_line(r, fold, s->node, leaf, row);
		/* without DWARF the call site is not the function's (the caller's
		 * call, or a library's runtime address): the function is the key */
		row->own = !row->file;
	} else if (ls_site_line_inl(p->syms, s->addr, leaf == s->node ? row->func : UINT32_MAX, fold ? skip_name : NULL,
				    fold, &row->file, &row->line, &row->inl)) {
		/* an inlined function names the row only inside the allocating
		 * function's code (an untraced function's call: whose is unknown) */
		if (row->inl && (leaf != s->node || leaf == CP_ROOT || !ls_site_in_func(p->syms, s->addr, row->func)))
			row->inl = NULL;
	} else {
		row->file = NULL;
		row->outside = s->addr && !in;
		/* the function's own call in an object without DWARF (-g0): no
		 * line to tell its calls apart, and a runtime address is no key
		 * across runs; the row is the function's, "in OBJECT". Stripped,
		 * no symbol holds the site, but the function's extent (its
		 * .eh_frame FDE, ls_site_in_func) still does. */
		if (leaf == s->node && leaf != CP_ROOT && p->syms && ls_site_in_func(p->syms, s->addr, row->func) &&
		    ls_object_without_dwarf(p->syms, row->func)) {
			row->own = 1;
			return;
		}
		/* a site in code no recorded object holds (libc's printf making
		 * stdout's buffer): the line of the function's call into it, which
		 * the events' return-address tag names */
		uint64_t ret;
		if (row->outside && leaf == s->node && leaf != CP_ROOT && p->syms &&
		    ls_tag_call(p->syms, row->func, s->tag, &ret) &&
		    ls_site_line_inl(p->syms, ret, UINT32_MAX, fold ? skip_name : NULL, fold, &row->file, &row->line,
				     &row->inl)) {
			row->outside = 0;
			return;
		}
		row->file = NULL;
		/* a site in another object's plumbing that the function called
		 * (std::string's buffer, made in libstdc++): the line of that call */
		if (row->outside && fold && leaf != CP_ROOT && !row->tail && p->syms) {
			struct ls_inl pin = {0};
			int at = ls_plumbing_call_line(p->syms, row->func, skip_name, fold, &row->file, &row->line, &pin);
			row->inl = at == 1 ? pin.inl : NULL;
			row->inl_varies = at == 1 && pin.varies;
			if (at == 0) { /* calls on several lines: the function's own */
				const struct sym_info *si = trace_symbol(p, row->func);
				row->file = si->file;
				row->line = si->line;
			} else if (at < 0) {
				row->file = NULL;
			}
			if (row->file)
				row->outside = 0;
		}
		if (row->outside && p->syms)
			untraced_site(p->syms, row, leaf == CP_ROOT);
	}
}

/* The length of the name of the function that defines closure or lambda
 * `name` ("a::f" of Rust's "a::f::{closure#0}", "f(int)" of GCC's
 * "f(int)::{lambda(int)#1}::operator()(int) const" and of clang's
 * "f(int)::$_0::operator()(int&) const"), or 0 when it is none. */
static size_t closure_definer(const char *name)
{
	static const char *const marks[] = {"::{closure", "::{lambda", "::$_"};
	const char *first = NULL;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		const char *m = strstr(name, marks[i]);
		if (m && (!first || m < first))
			first = m;
	}
	return first ? (size_t)(first - name) : 0;
}

/* A closure or lambda is its defining function's code: inlined (Rust's
 * boxed::{closure#0}, inlined through core::iter's map_fold into boxed),
 * its line reads as the definer's, the frame of the chain (or the
 * allocating function itself: no inlined frame) that defined it, not as
 * the iterator plumbing between them. */
static const struct sym_inline *closure_owner(const struct heap_result *r, uint32_t func, const struct sym_inline *inl)
{
	size_t n = inl ? closure_definer(inl->name) : 0;
	if (!n)
		return inl;
	for (const struct sym_inline *x = inl->outer; x; x = x->outer)
		if (strlen(x->name) == n && !strncmp(x->name, inl->name, n))
			return x;
	const char *host = trace_symbol(r->proc, func)->name;
	return strlen(host) == n && !strncmp(host, inl->name, n) ? NULL : inl;
}

static void site_row(const struct heap_result *r, struct ms_fold *fold, const struct heap_site *s, struct ms_row *row)
{
	site_line(r, fold, s, row);
	if (row->inl && row->func != UINT32_MAX)
		row->inl = closure_owner(r, row->func, row->inl);
}

static void merge(struct ms_row *into, const struct ms_row *x)
{
	if (x->inl_varies || !sym_inline_same_calls(into->inl, x->inl))
		into->inl_varies = 1;
	into->allocs += x->allocs;
	into->bytes += x->bytes;
	into->temporaries += x->temporaries;
	into->peak_bytes += x->peak_bytes;
	into->peak_blocks += x->peak_blocks;
	into->leak_bytes += x->leak_bytes;
	into->leak_blocks += x->leak_blocks;
	if (x->top_bytes > into->top_bytes) {
		into->top_bytes = x->top_bytes;
		into->node = x->node;
		into->leaf_node = x->leaf_node;
		into->addr = x->addr;
		into->inl = x->inl;
		if (group_mode == MS_BY_FUNCTION) { /* the location of the largest site */
			into->file = x->file;
			into->line = x->line;
			into->tail = x->tail;
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* row->common and row->ncallers of a row merged from the n sites m[]:
 * their callers (above each one's allocating frame) compared level by
 * level, by function, up to the first level where they differ. */
static void callers_common(const struct heap_result *r, const struct keyed *m, size_t n, struct ms_row *row)
{
	row->common = UINT32_MAX;
	row->ncallers = 0;
	if (n < 2 || row->func == UINT32_MAX)
		return;
	uint32_t *cur = xmalloc(n * sizeof(*cur));
	for (size_t j = 0; j < n; j++)
		cur[j] = m[j].row.leaf_node;
	for (uint32_t level = 0;; level++) {
		size_t ends = 0, same = 1;
		for (size_t j = 0; j < n; j++) {
			cur[j] = heap_node_parent(r, cur[j]);
			ends += cur[j] == CP_ROOT;
			same &= cur[j] != CP_ROOT && heap_node_func(r, cur[j]) == heap_node_func(r, cur[0]);
		}
		if (ends == n) /* every stack ends here: the same callers */
			break;
		if (same)
			continue;
		row->common = level;
		for (size_t j = 0; j < n; j++) /* a stack's root: UINT32_MAX, one "caller" */
			cur[j] = cur[j] == CP_ROOT ? UINT32_MAX : heap_node_func(r, cur[j]);
		qsort(cur, n, sizeof(*cur), cmp_u32);
		for (size_t j = 0; j < n; j++)
			row->ncallers += !j || cur[j] != cur[j - 1];
		break;
	}
	free(cur);
}

void ms_group(const struct heap_result *r, struct ms_fold *fold, int group, struct ms_table *t)
{
	struct keyed *k = xmalloc((r->nsites + 1) * sizeof(*k));
	hm_init(&entry_memo, 16);
	for (size_t i = 0; i < r->nsites; i++) {
		site_row(r, fold, &r->sites[i], &k[i].row);
		k[i].site = (uint32_t)i;
	}
	hm_free(&entry_memo);
	free(entry_lines);
	entry_lines = NULL;
	nentry_lines = 0;
	group_mode = group;
	qsort(k, r->nsites, sizeof(*k), cmp_keyed);
	t->rows = xmalloc((r->nsites + 1) * sizeof(*t->rows));
	t->n = 0;
	size_t start = 0;
	for (size_t i = 0; i <= r->nsites; i++) {
		if (i && i < r->nsites && !cmp_keyed(&k[i - 1], &k[i])) {
			merge(&t->rows[t->n - 1], &k[i].row);
			continue;
		}
		if (t->n)
			callers_common(r, k + start, i - start, &t->rows[t->n - 1]);
		if (i < r->nsites)
			t->rows[t->n++] = k[i].row;
		start = i;
	}
	free(k);
}

void ms_table_free(struct ms_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

void ms_location(const struct heap_result *r, const struct ms_row *row, int basename, char *buf, size_t cap)
{
	uint64_t vaddr;
	const struct sym_info *in;
	if (row->file) {
		const char *f = row->file, *slash = strrchr(f, '/');
		snprintf(buf, cap, "%s:%" PRIu32, basename && slash ? slash + 1 : f, row->line);
	} else if (row->own) { /* no line: the object without DWARF that holds the function */
		const char *o = ls_object_without_dwarf(r->proc->syms, row->func), *slash = o ? strrchr(o, '/') : NULL;
		if (o)
			snprintf(buf, cap, "in %s", basename && slash ? slash + 1 : o);
		else
			snprintf(buf, cap, "no line");
	} else if (row->addr && (in = ls_lookup_addr(r->proc->syms, row->addr, &vaddr))) {
		snprintf(buf, cap, "in %s", in->name);
	} else if (row->uobj && (row->usym || row->func != UINT32_MAX)) {
		snprintf(buf, cap, "in %s%s", basename ? base_of(row->uobj) : row->uobj, row->umain ? " (executable)" : "");
	} else if (row->uobj) {
		snprintf(buf, cap, "%s+0x%" PRIx64 "%s", basename ? base_of(row->uobj) : row->uobj, row->uvaddr,
			 row->umain ? " (executable)" : "");
	} else if (row->addr && row->outside) {
		snprintf(buf, cap, "in a library");
	} else if (row->addr) {
		snprintf(buf, cap, "0x%" PRIx64, row->addr);
	} else {
		buf[0] = 0;
	}
}

const char *ms_func_name(const struct heap_result *r, const struct ms_row *row, int full)
{
	if (row->inl)
		return full || !trace_short_style(r->proc) ? row->inl->name : row->inl->short_name;
	if (row->func == UINT32_MAX)
		return row->usym ? (full ? row->usym : row->ushort) : "[no traced frame]";
	return full ? trace_symbol(r->proc, row->func)->name : trace_name(r->proc, row->func);
}

const char *ms_inline_caller(const struct heap_result *r, const struct ms_row *row, const struct sym_inline *x,
			     int full)
{
	if (x->outer)
		return full || !trace_short_style(r->proc) ? x->outer->name : x->outer->short_name;
	return full ? trace_symbol(r->proc, row->func)->name : trace_name(r->proc, row->func);
}

const struct sym_inline *ms_site_inline(const struct heap_result *r, struct ms_fold *fold, const struct heap_site *s)
{
	const char *f;
	uint32_t l;
	const struct sym_inline *inl = NULL;
	struct log_symbols *ls = r->proc->syms;
	if (s->node == CP_ROOT || !s->addr || !ls)
		return NULL;
	uint32_t func = heap_node_func(r, s->node);
	if (!ls_site_in_func(ls, s->addr, func) ||
	    !ls_site_line_inl(ls, s->addr, func, fold ? skip_name : NULL, fold, &f, &l, &inl))
		return NULL;
	return closure_owner(r, func, inl);
}

size_t ms_cols(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Appends s to buf at *len, cut to `room` columns with "…" (never inside a
 * character) when longer. */
static void put_cut(char *buf, size_t cap, size_t *len, const char *s, size_t room)
{
	int cut = ms_cols(s) > room;
	size_t cols = 0, k = 0, keep = cut && room ? room - 1 : room; /* a column for "…" */
	for (; s[k]; k++)
		if (((unsigned char)s[k] & 0xc0) != 0x80 && ++cols > keep)
			break;
	*len += (size_t)snprintf(buf + *len, cap - *len, "%.*s%s", (int)k, s, cut && room ? "…" : "");
	if (*len >= cap)
		*len = cap - 1;
}

static void put_str(char *buf, size_t cap, size_t *len, const char *s)
{
	*len += (size_t)snprintf(buf + *len, cap - *len, "%s", s);
	if (*len >= cap)
		*len = cap - 1;
}

/* Appends the name cut to `room` columns (sf_fit_name); its columns. */
static size_t put_name(char *buf, size_t cap, size_t *len, const char *name, size_t room)
{
	char piece[2048];
	sf_fit_name(name, room, piece, sizeof(piece));
	put_str(buf, cap, len, piece);
	return ms_cols(piece);
}

/* Ends the row's first line: the second starts under the text column,
 * indented by 2 (indent: the columns of the figures before the text). */
static void next_line(char *buf, size_t cap, size_t *len, size_t indent)
{
	*len += (size_t)snprintf(buf + *len, cap - *len, "\n%*s", (int)(indent + 2), "");
	if (*len >= cap)
		*len = cap - 1;
}

size_t ms_fit_row(const char *name, const char *loc, const char *mark, size_t width, size_t indent, char *buf,
		  size_t cap)
{
	size_t nc = ms_cols(name), lc = ms_cols(loc), mc = ms_cols(mark), len = 0;
	size_t min_name = nc < 10 ? nc : 10;
	buf[0] = 0;
	if (!*loc) { /* no location: the name, and the mark whole */
		size_t c = put_name(buf, cap, &len, name, width > mc ? width - mc : 1);
		put_str(buf, cap, &len, mark);
		return c + mc;
	}
	if (lc + mc + 2 + min_name <= width) { /* one line */
		size_t c = put_name(buf, cap, &len, name, width - 2 - lc - mc);
		put_str(buf, cap, &len, "  ");
		put_str(buf, cap, &len, loc);
		put_str(buf, cap, &len, mark);
		return c + 2 + lc + mc;
	}
	if (lc > width) {
		/* a location longer than a line ("in ld-linux-x86-64.so.2" at
		 * 40): one line, the name first, the location cut to what is
		 * left (3 columns at least, never left out), the mark whole */
		size_t room = width > 5 + mc ? width - 5 - mc : 1;
		size_t c = put_name(buf, cap, &len, name, room);
		put_str(buf, cap, &len, "  ");
		put_cut(buf, cap, &len, loc, width > c + 2 + mc ? width - c - 2 - mc : 3);
		put_str(buf, cap, &len, mark);
		return ms_cols(buf);
	}
	/* two lines: the location alone, the name on the next; the mark after
	 * the location, else after the name */
	int mark_first = lc + mc <= width;
	put_str(buf, cap, &len, loc);
	if (mark_first)
		put_str(buf, cap, &len, mark);
	next_line(buf, cap, &len, indent);
	size_t room = width - 2 - (mark_first ? 0 : mc); /* width >= 19: a few columns at least */
	size_t c = put_name(buf, cap, &len, name, room);
	if (!mark_first)
		put_str(buf, cap, &len, mark);
	return 2 + c + (mark_first ? 0 : mc);
}
