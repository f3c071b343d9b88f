/* sftrace memory: heap analysis of a log recorded with --alloc (or by a
 * setup-ABI program): peak heap and the stacks holding it, top allocation
 * sites, temporary allocations, leaks per stack and per milestone stage,
 * and an interactive prompt (track, show, stage-memory). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
#include "cli/memory.h"
#include "cli/memory_sites.h"
#include "lib/demangle.h"
#include "format/sflog.h"
#include "lib/callpath.h"
#include "lib/heap.h"
#include "lib/json_out.h"
#include "lib/name_match.h"
#include "lib/outfile.h"
#include "lib/text_esc.h"
#include "lib/util.h"
#include "output/flamegraph.h"
#include "output/heap_plot.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace memory [OPTIONS] LOG|DIR...\n"
		"\n"
		"Heap analysis of a recording made with `sftrace record --alloc`: every\n"
		"allocation is attributed to the traced call stack of its thread and to\n"
		"its exact call site. Prints the peak heap and the stacks holding it, the\n"
		"top allocation sites by bytes and by count, temporary allocations (freed\n"
		"by the same thread with no allocation in between) and what is still live\n"
		"at the end (leaks; at a crash, the heap at the crash).\n"
		"\n"
		"options:\n"
		"      --milestone FUNC   split the run into stages at each entry of FUNC\n"
		"                         (a demangled name, else a PCRE2 regex); stage 0\n"
		"                         runs until the first entry\n"
		"      --select LIST      leaks of these stages only (e.g. 1,3), in the tables\n"
		"                         and the flame graph; with --overlay, the stages plotted\n"
		"      --flamegraph OUT.svg  leaked bytes by traced stack, as an interactive\n"
		"                         flame graph (what is live at the end)\n"
		"      --plot OUT.svg|OUT.html  heap size over time, stage starts and the peak\n"
		"      --overlay          plot each stage from its own start, overlaid\n"
		"  -n N                   rows per table (default 10, 0 = all); tsv and json\n"
		"                         always have every row\n"
		"      --group-by function|line|stack  rows: one per allocating function, per\n"
		"                         function and source line (default), or per stack\n"
		"                         and call site\n"
		"      --no-fold          show the allocator's own frames (alloc::, RawVec,\n"
		"                         __rust_alloc, operator new, ...) instead of folding\n"
		"                         them into the function they serve\n"
		"      --fold REGEX       also fold functions whose full name matches REGEX\n"
		"                         (PCRE2; repeatable)\n"
		"      --width N          table rows fit N columns (default: the terminal's\n"
		"                         width, at least 40, or 100 when output is not a\n"
		"                         terminal)\n"
		"      --diff OLD NEW     compare two recordings: sites matched by function\n"
		"                         and line, sorted by the largest increase\n"
		"      --format table|tsv|json  tsv: key<TAB>value summary lines, then rows\n"
		"                         section<TAB>stage<TAB>bytes<TAB>count<TAB>function\n"
		"                         <TAB>location<TAB>tail<TAB>stack<TAB>full_stack;\n"
		"                         json: one document with the same values\n"
		"      --interactive      then read commands on stdin: track ID, show ID,\n"
		"                         stage-memory, exit\n"
		"  -h, --help             this help\n");
	input_opts_usage_symbols(out, 's');
	input_opts_pager_usage(out, IO_PAGE_ASKED);
	fprintf(out, "The trace-cutting options of other commands (-c, --tid, --time, --min-duration,\n"
		     "--max-depth) are refused: the replay needs every allocation and free.\n");
}

/* ---- stacks ---- */

/* The interactive commands' stack: "a;b;c @ site_function [0xELF address]",
 * then " (tail call)" when c tail-called the allocator. */
static void stack_str(const struct heap_result *r, uint32_t node, uint64_t site, int tail, char *buf, size_t cap)
{
	uint32_t path[256];
	size_t n = 0;
	for (uint32_t x = node; x && n < 256; x = heap_node_parent(r, x))
		path[n++] = x;
	size_t len = 0;
	buf[0] = 0;
	if (!n)
		len += (size_t)snprintf(buf, cap, "[no traced frame]");
	while (n-- > 0 && len < cap)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ";" : "",
					trace_symbol(r->proc, heap_node_func(r, path[n]))->name);
	if (len >= cap)
		return;
	uint64_t vaddr = 0;
	const struct sym_info *si = site ? ls_lookup_addr(r->proc->syms, site, &vaddr) : NULL;
	if (si) /* the ELF address tells two call sites of one function apart (addr2line) */
		len += (size_t)snprintf(buf + len, cap - len, " @ %s [0x%" PRIx64 "]", si->name, vaddr);
	else if (site)
		len += (size_t)snprintf(buf + len, cap - len, " @ 0x%" PRIx64, site);
	if (tail && len < cap)
		snprintf(buf + len, cap - len, " (tail call)");
}

/* ---- the tables ---- */

/* TSV cells: tabs and newlines become spaces (OUTPUTS.md), the rest as sf_esc */
#define TSV_SPACES "\t\n\r"

static const struct ms_row *sort_rows;
static int sort_key;
enum { BY_BYTES, BY_COUNT, BY_PEAK, BY_LEAK, BY_TEMP };

static uint64_t key_of(const struct ms_row *s)
{
	switch (sort_key) {
	case BY_BYTES: return s->bytes;
	case BY_COUNT: return s->allocs;
	case BY_PEAK: return s->peak_bytes;
	case BY_LEAK: return s->leak_bytes;
	default: return s->temporaries;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	const struct ms_row *x = &sort_rows[*(const uint32_t *)a], *y = &sort_rows[*(const uint32_t *)b];
	uint64_t kx = key_of(x), ky = key_of(y);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void human(uint64_t v, char *buf, size_t cap)
{
	heap_format_bytes(buf, cap, (double)v);
}

/* Where a table row's text starts: "%10s %8s  " of bytes and blocks. */
#define TEXT_COLUMN 21

/* A line that counts display columns (one per UTF-8 code point) and stops
 * at `width`, ending in "…" when something did not fit. */
struct fitline {
	char buf[4096];
	size_t len, cols, width;
	int full;
};

/* Appends s whole if it fits (keeping a column for "…" unless last),
 * else, when `cut`, as much as fits followed by "…". 0 if it did not fit. */
static int fit_put(struct fitline *l, const char *s, int cut)
{
	if (l->full)
		return 0;
	size_t c = ms_cols(s);
	if (l->cols + c <= l->width && l->len + strlen(s) < sizeof(l->buf)) {
		l->len += (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len, "%s", s);
		l->cols += c;
		return 1;
	}
	l->full = 1;
	if (cut && l->cols + 1 < l->width) { /* a column of s and the "…" at least */
		for (const char *q = s; *q && l->cols + 1 < l->width && l->len + 8 < sizeof(l->buf); q++) {
			l->buf[l->len++] = *q;
			l->cols += ((unsigned char)*q & 0xc0) != 0x80;
			if (((unsigned char)q[1] & 0xc0) == 0x80)
				continue;
		}
		while (l->len && ((unsigned char)l->buf[l->len - 1] & 0xc0) == 0xc0)
			l->len--; /* never half a character */
		l->len += (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len, "…");
	}
	return 0;
}

static size_t text_cols_n(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t k = 0; k < n; k++)
		c += ((unsigned char)s[k] & 0xc0) != 0x80;
	return c;
}

/* Writes n bytes of s, never split, at *cols of a line of `width`
 * columns (space: a space owed before it), on the next line when it does
 * not fit there. */
static void put_word(const char *s, size_t n, int space, size_t width, size_t *cols)
{
	size_t pc = text_cols_n(s, n);
	if (*cols && *cols + (size_t)space + pc > width) {
		putchar('\n');
		*cols = 0;
	} else if (*cols && space) {
		putchar(' ');
		(*cols)++;
	}
	fwrite(s, 1, n, stdout);
	*cols += pc;
}

/* Whether the word at s is a unit ("ms", "MiB"), kept with its number. */
static int unit_follows(const char *s, size_t n)
{
	static const char *const units[] = {"ms", "B", "KiB", "MiB", "GiB", "TiB"};
	size_t w = 0;
	while (w < n && s[w] != ' ' && s[w] != ';' && s[w] != ',' && s[w] != ')')
		w++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i]) == w && !memcmp(s, units[i], w))
			return 1;
	return 0;
}

/* A part of a summary line (put_word), word by word when it is wider
 * than a line. */
static void put_part(const char *s, size_t n, int space, size_t width, size_t *cols)
{
	if (text_cols_n(s, n) <= width || !memchr(s, ' ', n)) {
		put_word(s, n, space, width, cols);
		return;
	}
	while (n) {
		size_t w = 0;
		while (w < n && (s[w] != ' ' || unit_follows(s + w + 1, n - w - 1)))
			w++;
		put_word(s, w, space, width, cols);
		space = 1;
		w += w < n; /* its space */
		s += w;
		n -= w;
	}
}

/* A summary line in `width` columns: whole when it fits, else broken
 * after its "; ", ", " and ": " where the next part would not fit, and a
 * part wider than the line between its words. */
static void put_wrapped(const char *s, size_t width)
{
	size_t cols = 0;
	int space = 0; /* a separator's space owed before the next part */
	while (*s) {
		/* the next part: up to its separator's space */
		size_t n = 0;
		while (s[n] && !(n && s[n] == ' ' && (s[n - 1] == ';' || s[n - 1] == ',' || s[n - 1] == ':')))
			n++;
		put_part(s, n, space, width, &cols);
		s += n;
		space = *s == ' ';
		s += space;
	}
	putchar('\n');
}

/* The heads of the rows' text column, as many as `width` columns hold:
 * the header is no wider than the rows. */
static const char *column_heads(size_t width)
{
	static const char *const heads[] = {"allocated in  at  ← called from", "allocated in  at", "allocated in"};
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
		if (ms_cols(heads[i]) <= width)
			return heads[i];
	return "in";
}

/* The callers of an inlined function's row (ms_row.inl): each function it
 * was inlined into, out to the allocating function, with the line of the
 * inlined call ("  ← user heap.c:12"). 0 when the width is used up. */
static int inline_callers(const struct heap_result *r, const struct ms_row *row, const struct mem_opts *o,
			  struct fitline *l)
{
	char piece[2048];
	for (const struct sym_inline *x = row->inl; x; x = x->outer) {
		const char *f = x->call_file ? strrchr(x->call_file, '/') : NULL;
		int n = snprintf(piece, sizeof(piece), "%s%s", x == row->inl ? "  ← " : " ← ",
				 sf_esc(ms_inline_caller(r, row, x, o->full_names)));
		if (x->call_file && !row->inl_varies && n > 0 && (size_t)n < sizeof(piece))
			snprintf(piece + n, sizeof(piece) - (size_t)n, " %s:%" PRIu32, f ? f + 1 : x->call_file,
				 x->call_line);
		size_t more = x->outer || heap_node_parent(r, row->leaf_node) != CP_ROOT ? 4 : 0;
		if (l->cols + ms_cols(piece) + more <= l->width) {
			fit_put(l, piece, 0);
		} else if (x == row->inl && l->cols + 12 <= l->width) {
			fit_put(l, piece, 1); /* the direct caller, cut rather than left out */
			return 0;
		} else {
			fit_put(l, x == row->inl ? "  ← …" : " ← …", 0);
			return 0;
		}
	}
	return 1;
}

/* "grab  heap.c:6 (tail call)  ← main ← run": the allocating function, its
 * location, then its callers as far as the width allows. */
static void row_text(const struct heap_result *r, const struct ms_row *row, const struct mem_opts *o, size_t width,
		     struct fitline *l)
{
	char loc[1024], piece[2048];
	ms_location(r, row, 1, loc, sizeof(loc));
	const char *name = sf_esc(ms_func_name(r, row, o->full_names));
	l->cols = ms_fit_row(name, loc, row->tail ? " (tail call)" : "", width, TEXT_COLUMN, l->buf, sizeof(l->buf));
	l->len = strlen(l->buf);
	l->width = width;
	l->full = 0;
	if (row->func == UINT32_MAX)
		return;
	uint32_t first = heap_node_parent(r, row->leaf_node), level = 0;
	if (row->inl && !inline_callers(r, row, o, l))
		return;
	int direct = !row->inl; /* the next caller is the first shown */
	for (uint32_t x = first; x != CP_ROOT; x = heap_node_parent(r, x), level++, direct = 0) {
		if (level == row->common) { /* the blocks' callers differ from here */
			snprintf(piece, sizeof(piece), "%s%" PRIu32 " callers", direct ? "  ← " : " ← ", row->ncallers);
			if (!fit_put(l, piece, 0)) { /* never cut: "← 2 c…" would read as a name */
				l->full = 0;
				fit_put(l, direct ? "  ← …" : " ← …", 0);
			}
			break;
		}
		uint32_t f = heap_node_func(r, x);
		snprintf(piece, sizeof(piece), "%s%s", direct ? "  ← " : " ← ",
			 sf_esc(o->full_names ? trace_symbol(r->proc, f)->name : trace_name(r->proc, f)));
		/* keep room for " ← …" while more callers follow */
		size_t more = heap_node_parent(r, x) != CP_ROOT ? 4 : 0;
		if (l->cols + ms_cols(piece) + more <= l->width) {
			fit_put(l, piece, 0);
		} else if (direct && l->cols + 12 <= l->width) {
			fit_put(l, piece, 1); /* the direct caller, cut rather than left out */
			break;
		} else {
			fit_put(l, direct ? "  ← …" : " ← …", 0);
			break;
		}
	}
}

/* A row's traced stack, root first, names joined by ';' (full or short).
 * A merged row whose blocks have different callers: "…;" then the callers
 * common to all of them, then the largest site's stack below. */
static void stack_names(const struct heap_result *r, const struct ms_row *row, int full, char *buf, size_t cap)
{
	uint32_t path[256], top = CP_ROOT;
	size_t n = 0, len = 0;
	if (row->common != UINT32_MAX) { /* the highest common caller's node, or the allocating frame's */
		top = row->leaf_node;
		for (uint32_t level = 0; level < row->common; level++)
			top = heap_node_parent(r, top);
	}
	for (uint32_t x = row->node; x && n < 256; x = heap_node_parent(r, x)) {
		path[n++] = x;
		if (x == top)
			break;
	}
	buf[0] = 0;
	if (top != CP_ROOT)
		len = (size_t)snprintf(buf, cap, "…");
	while (n-- > 0 && len < cap) {
		uint32_t f = heap_node_func(r, path[n]);
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ";" : "",
					full ? trace_symbol(r->proc, f)->name : trace_name(r->proc, f));
	}
	/* then the inlined functions the line lies in, outermost first */
	const struct sym_inline *in[64];
	size_t ni = 0;
	for (const struct sym_inline *x = row->inl; x && ni < 64; x = x->outer)
		in[ni++] = x;
	while (ni-- > 0 && len < cap)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ";" : "",
					full || !trace_short_style(r->proc) ? in[ni]->name : in[ni]->short_name);
}

static void row_values(const struct ms_row *s, int key, uint64_t *bytes, uint64_t *count)
{
	*bytes = key == BY_BYTES || key == BY_COUNT ? s->bytes
		 : key == BY_PEAK			   ? s->peak_bytes
		 : key == BY_LEAK			   ? s->leak_bytes
							   : 0;
	*count = key == BY_BYTES || key == BY_COUNT ? s->allocs
		 : key == BY_PEAK			   ? s->peak_blocks
		 : key == BY_LEAK			   ? s->leak_blocks
							   : s->temporaries;
}

/* One row of tsv: section - bytes count function location tail stack full_stack. */
static void tsv_row(const struct heap_result *r, const struct ms_row *s, const char *section, uint64_t bytes,
		    uint64_t count)
{
	static char stack[16384];
	char loc[1024];
	ms_location(r, s, 0, loc, sizeof(loc));
	/* cells as OUTPUTS.md's TSV: tabs and newlines become spaces */
	printf("%s\t-\t%" PRIu64 "\t%" PRIu64 "\t", section, bytes, count);
	sf_esc_put(stdout, ms_func_name(r, s, 0), TSV_SPACES);
	putchar('\t');
	sf_esc_put(stdout, loc, TSV_SPACES);
	printf("\t%d\t", s->tail);
	stack_names(r, s, 0, stack, sizeof(stack));
	sf_esc_put(stdout, stack, TSV_SPACES);
	putchar('\t');
	stack_names(r, s, 1, stack, sizeof(stack));
	sf_esc_put(stdout, stack, TSV_SPACES);
	putchar('\n');
}

static void json_row(const struct heap_result *r, const struct ms_row *s, uint64_t bytes, uint64_t count, int first)
{
	static char stack[16384];
	char loc[1024];
	printf("%s\n{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"function\":", first ? "" : ",", bytes, count);
	json_put_str(stdout, ms_func_name(r, s, 0));
	printf(",\"function_full\":");
	json_put_str(stdout, ms_func_name(r, s, 1));
	ms_location(r, s, 0, loc, sizeof(loc));
	printf(",\"location\":");
	json_put_str(stdout, loc);
	printf(",\"tail_call\":%s,\"stack\":", s->tail ? "true" : "false");
	stack_names(r, s, 0, stack, sizeof(stack));
	json_put_str(stdout, stack);
	printf(",\"full_stack\":");
	stack_names(r, s, 1, stack, sizeof(stack));
	json_put_str(stdout, stack);
	putchar('}');
}

/* Whether a row belongs in a table sorted by `key`: a nonzero key, and
 * in tsv and json also a site of zero-byte blocks (malloc(0)) in the
 * by-bytes table, so that its rows add up to the summary's allocations. */
static int row_listed(const struct ms_row *s, int key, int fmt)
{
	return key_of(s) || (key == BY_BYTES && fmt != FMT_TABLE && s->allocs);
}

/* One table: rows sorted by `key`, rows row_listed() only. tsv and json
 * have every such row; json's `section` names the array. */
static void table(const struct heap_result *r, const struct ms_table *t, const struct mem_opts *o, int key,
		  const char *title, const char *section, int fmt)
{
	int tsv = fmt != FMT_TABLE;
	uint32_t *ix = xmalloc((t->n + 1) * sizeof(*ix));
	for (size_t i = 0; i < t->n; i++)
		ix[i] = (uint32_t)i;
	sort_rows = t->rows;
	sort_key = key;
	qsort(ix, t->n, sizeof(*ix), cmp_rows);
	char hb[32];
	size_t shown = 0, rest = 0;
	struct fitline *l = tsv ? NULL : xmalloc(sizeof(*l));
	size_t width = o->width > TEXT_COLUMN ? (size_t)o->width - TEXT_COLUMN : 20;
	if (fmt == FMT_JSON)
		printf(",\n\"%s\":[", section);
	else if (!tsv)
		printf("\n%s\n%10s %8s  %s\n", title, "bytes", key == BY_TEMP ? "temp" : "blocks", column_heads(width));
	for (size_t i = 0; i < t->n; i++) {
		const struct ms_row *s = &t->rows[ix[i]];
		if (!row_listed(s, key, fmt))
			continue;
		if (!tsv && o->top && shown == (size_t)o->top) {
			rest++;
			continue;
		}
		uint64_t bytes, count;
		row_values(s, key, &bytes, &count);
		if (fmt == FMT_JSON) {
			json_row(r, s, bytes, count, !shown);
		} else if (tsv) {
			tsv_row(r, s, section, bytes, count);
		} else {
			human(bytes, hb, sizeof(hb));
			row_text(r, s, o, width, l);
			printf("%10s %8" PRIu64 "  %s\n", key == BY_TEMP ? "" : hb, count, l->buf);
		}
		shown++;
	}
	if (fmt == FMT_JSON)
		printf("%s]", shown ? "\n" : "");
	if (!tsv && !shown)
		printf("%10s\n", "(none)");
	if (rest)
		printf("... %zu more (-n 0 shows all)\n", rest);
	free(l);
	free(ix);
}

/* The tsv's values as one JSON object: "summary" has the tsv's keys, the
 * arrays its sections (every row), with the sites also by count as in the
 * table. */
static void report_json(const struct heap_result *r, const struct ms_table *rows, const struct mem_opts *o)
{
	const struct heap_totals *t = &r->tot;
	printf("{\"pid\":%u,\"process\":", r->proc->info->pid);
	json_put_str(stdout, r->proc->name);
	printf(",\"summary\":{\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"reallocs\":%" PRIu64
	       ",\"bytes_allocated\":%" PRIu64 ",\"temporary\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
	       ",\"peak_blocks\":%" PRIu64 ",\"peak_time_ns\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64
	       ",\"leaked_blocks\":%" PRIu64 ",\"unmatched_frees\":%" PRIu64 ",\"stages\":%zu"
	       ",\"truncated\":%s",
	       t->allocs, t->frees, t->reallocs, t->bytes, t->temporaries, t->peak_bytes, t->peak_blocks,
	       t->peak_time, t->leak_bytes, t->leak_blocks, t->unmatched_frees, r->nstages,
	       lr_truncated(r->proc->log) ? "true" : "false");
	if (r->fork_parent)
		printf(",\"inherited_bytes\":%" PRIu64 ",\"inherited_blocks\":%" PRIu64 ",\"fork_parent_pid\":%u",
		       t->inherited_bytes, t->inherited_blocks, r->fork_parent->info->pid);
	printf("},\n\"stages\":[");
	for (size_t s = 0; s < r->nstages; s++) {
		const struct heap_stage *st = &r->stages[s];
		printf("%s\n{\"stage\":%zu,\"start_ns\":%" PRIu64 ",\"allocations\":%" PRIu64
		       ",\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64 ",\"heap_at_end\":%" PRIu64 "}",
		       s ? "," : "", s, st->t_start, st->allocs, st->leak_bytes, st->leak_blocks,
		       st->heap_at_end);
	}
	printf("%s]", r->nstages ? "\n" : "");
	table(r, rows, o, BY_PEAK, "", "peak", FMT_JSON);
	table(r, rows, o, BY_BYTES, "", "sites_by_bytes", FMT_JSON);
	table(r, rows, o, BY_COUNT, "", "sites_by_count", FMT_JSON);
	table(r, rows, o, BY_TEMP, "", "temporary", FMT_JSON);
	table(r, rows, o, BY_LEAK, "", "leak", FMT_JSON);
	printf("}");
}

/* "== process PID (CMDLINE)" in `width` columns: a command line too long
 * keeps its end (the program's name and arguments) after "…". */
static void process_heading(const struct heap_result *r, size_t width)
{
	char head[64];
	int hn = snprintf(head, sizeof(head), "\n== process %u (", r->proc->info->pid);
	const char *cmd = sf_esc(r->proc->cmdline);
	size_t room = width > (size_t)hn ? width - (size_t)hn : 1; /* hn counts the newline: a column for ")" */
	size_t cc = ms_cols(cmd);
	const char *from = cmd;
	if (cc > room) {
		for (size_t skip = cc - room + 1; skip && *from; from++) /* "…" takes a column */
			skip -= ((unsigned char)from[1] & 0xc0) != 0x80;
		printf("%s…%s)\n", head, from);
	} else {
		printf("%s%s)\n", head, cmd);
	}
}

static void report(const struct heap_result *r, const struct ms_table *rows, const struct mem_opts *o, int several)
{
	const struct heap_totals *t = &r->tot;
	if (o->format == FMT_JSON) {
		report_json(r, rows, o);
		return;
	}
	if (o->format == FMT_TSV) {
		if (several) {
			printf("process\t%u\t", r->proc->info->pid);
			sf_esc_put(stdout, r->proc->name, TSV_SPACES);
			putchar('\n');
		}
		printf("allocations\t%" PRIu64 "\nfrees\t%" PRIu64 "\nreallocs\t%" PRIu64 "\nbytes_allocated\t%" PRIu64
		       "\ntemporary\t%" PRIu64 "\npeak_bytes\t%" PRIu64 "\npeak_blocks\t%" PRIu64
		       "\npeak_time_ns\t%" PRIu64 "\nleaked_bytes\t%" PRIu64 "\nleaked_blocks\t%" PRIu64
		       "\nunmatched_frees\t%" PRIu64 "\nstages\t%zu\ntruncated\t%d\n",
		       t->allocs, t->frees, t->reallocs, t->bytes, t->temporaries, t->peak_bytes, t->peak_blocks,
		       t->peak_time, t->leak_bytes, t->leak_blocks, t->unmatched_frees, r->nstages,
		       lr_truncated(r->proc->log) != 0);
		if (r->fork_parent)
			printf("inherited\t%" PRIu64 "\t%" PRIu64 "\t%u\n", t->inherited_bytes, t->inherited_blocks,
			       r->fork_parent->info->pid);
		for (size_t s = 0; s < r->nstages; s++)
			printf("stage_leak\t%zu\t%" PRIu64 "\t%" PRIu64 "\t-\nstage_heap\t%zu\t%" PRIu64 "\t%" PRIu64
			       "\t-\n",
			       s, r->stages[s].leak_bytes, r->stages[s].leak_blocks, s, r->stages[s].heap_at_end,
			       r->stages[s].allocs);
		table(r, rows, o, BY_BYTES, "", "site", FMT_TSV);
		table(r, rows, o, BY_PEAK, "", "peak", FMT_TSV);
		table(r, rows, o, BY_LEAK, "", "leak", FMT_TSV);
		table(r, rows, o, BY_TEMP, "", "temporary", FMT_TSV);
		return;
	}
	char a[32], b[32], c[32];
	if (several)
		process_heading(r, (size_t)o->width);
	/* a cut log's figures stop at the cut: a report that looks whole
	 * (0 B live) would read as a clean run */
	if (lr_truncated(r->proc->log))
		put_wrapped("partial: the log is truncated, these figures cover only the events before the cut",
			    (size_t)o->width);
	human(t->bytes, a, sizeof(a));
	human(t->peak_bytes, b, sizeof(b));
	human(t->leak_bytes, c, sizeof(c));
	char line[512];
	snprintf(line, sizeof(line), "%" PRIu64 " allocations (%s), %" PRIu64 " frees, %" PRIu64 " reallocs, %" PRIu64
		 " temporary", t->allocs, a, t->frees, t->reallocs, t->temporaries);
	put_wrapped(line, (size_t)o->width);
	snprintf(line, sizeof(line), "peak heap %s in %" PRIu64 " blocks at %.3f ms; %s in %" PRIu64
		 " blocks live at the end%s", b, t->peak_blocks, (double)t->peak_time / 1e6, c, t->leak_blocks,
		 lr_exited_normally(r->proc->info) ? "" : " (the process did not exit normally)");
	put_wrapped(line, (size_t)o->width);
	if (r->fork_parent) {
		human(t->inherited_bytes, a, sizeof(a));
		snprintf(line, sizeof(line), "forked from pid %u: started with its %s in %" PRIu64 " live blocks",
			 r->fork_parent->info->pid, a, t->inherited_blocks);
		put_wrapped(line, (size_t)o->width);
	}
	if (t->unmatched_frees) {
		snprintf(line, sizeof(line), "%" PRIu64 " frees of blocks allocated before recording began were ignored",
			 t->unmatched_frees);
		put_wrapped(line, (size_t)o->width);
	}
	table(r, rows, o, BY_PEAK, "Held at the peak:", "peak", FMT_TABLE);
	table(r, rows, o, BY_BYTES, "Top allocation sites by bytes:", "site", FMT_TABLE);
	table(r, rows, o, BY_COUNT, "Top allocation sites by count:", "site", FMT_TABLE);
	table(r, rows, o, BY_TEMP, "Temporary allocations:", "temporary", FMT_TABLE);
	table(r, rows, o, BY_LEAK, o->select ? "Live at the end (selected stages):" : "Live at the end (leaks):",
	      "leak", FMT_TABLE);
	if (r->nstages > 1) {
		printf("\n%5s %12s %10s %12s %10s %12s\n", "stage", "start", "allocs", "leaked", "blocks",
		       "heap at end");
		for (size_t s = 0; s < r->nstages; s++) {
			const struct heap_stage *st = &r->stages[s];
			human(st->leak_bytes, a, sizeof(a));
			human(st->heap_at_end, b, sizeof(b));
			printf("%5zu %9.3f ms %10" PRIu64 " %12s %10" PRIu64 " %12s\n", s,
			       (double)st->t_start / 1e6, st->allocs, a, st->leak_blocks, b);
		}
	}
}

/* ---- milestones ---- */

/* The functions --milestone names (name_match.h's rule: the name whole,
 * else a regex), as a map by function id. */
static uint8_t *milestone_map(const struct trace_proc *p, const struct nm_patterns *ms, size_t *n, size_t *hits)
{
	uint32_t maxid = 0;
	for (size_t i = 0; i < lr_nobjects(p->log); i++) {
		const struct lr_object *ob = lr_object_at(p->log, i);
		if (ob->first_id + ob->count > maxid)
			maxid = ob->first_id + ob->count;
	}
	uint8_t *m = xcalloc(maxid + 1, 1);
	for (size_t i = 0; i < lr_nobjects(p->log); i++) {
		const struct lr_object *ob = lr_object_at(p->log, i);
		for (uint32_t id = ob->first_id; id < ob->first_id + ob->count; id++)
			if (trace_func_found(p, ms, id)) {
				m[id] = 1;
				(*hits)++;
			}
	}
	*n = maxid + 1;
	return m;
}

/* ---- interactive ---- */

struct find_ctx {
	uint64_t id, ptr;
	int mode; /* 0 show, 1 track, 2 find ptr of id */
	const struct heap_result *r;
	int found;
};

static const char *kind_str(uint32_t k)
{
	switch (k) {
	case SF_EV_ALLOC: case SF_EV_HEAP_ALLOC: return "alloc";
	case SF_EV_DEALLOC: case SF_EV_HEAP_FREE: return "free";
	case SF_EV_REALLOC_ALLOC: return "realloc-alloc";
	case SF_EV_REALLOC_DEALLOC: return "realloc-free";
	case SF_EV_HEAP_REALLOC: return "realloc";
	default: return "?";
	}
}

static int find_cb(void *ctx, const struct heap_event *e, const struct cp_tree *tree)
{
	struct find_ctx *f = ctx;
	char stack[8192];
	struct heap_result tmp = *f->r;
	tmp.tree = (struct cp_tree *)tree;
	if (f->mode == 2) {
		if (e->id == f->id) {
			f->ptr = e->ptr;
			f->found = 1;
			return 1;
		}
		return 0;
	}
	if (f->mode == 1) {
		if (e->ptr == f->ptr || (e->kind == SF_EV_HEAP_REALLOC && e->old_ptr == f->ptr)) {
			stack_str(&tmp, e->node, e->site_addr, e->tail, stack, sizeof(stack));
			printf("%" PRIu64 " %s\ttid:%u\tsize:%" PRIu64 "\t%s\n", e->id, kind_str(e->kind), e->tid, e->size,
			       sf_esc(stack));
			f->found = 1;
		}
		return 0;
	}
	if (e->id != f->id)
		return 0;
	stack_str(&tmp, e->node, e->site_addr, e->tail, stack, sizeof(stack));
	printf("kind: %s\ntid: %u\ntime: %" PRIu64 " ns\nptr: 0x%" PRIx64 "\n", kind_str(e->kind), e->tid, e->time,
	       e->ptr);
	if (e->kind == SF_EV_HEAP_REALLOC)
		printf("old ptr: 0x%" PRIx64 "\n", e->old_ptr);
	printf("size: %" PRIu64 "\nalign: %" PRIu64 "\nstack: %s\n", e->size, e->align, sf_esc(stack));
	f->found = 1;
	return 1;
}

static void interactive(struct trace_input *in, size_t pi, const struct heap_result *r)
{
	char line[256];
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[32] = "";
		unsigned long long id = 0;
		int n = sscanf(line, "%31s %llu", cmd, &id);
		if (n < 1)
			continue;
		if (!strcmp(cmd, "exit") || !strcmp(cmd, "quit"))
			break;
		if (!strcmp(cmd, "stage-memory")) {
			for (size_t s = 0; s < r->nstages; s++)
				printf("%zu:\t%" PRIu64 "\n", s, r->stages[s].heap_at_end);
		} else if ((!strcmp(cmd, "show") || !strcmp(cmd, "track")) && n == 2) {
			struct find_ctx f = {.id = id, .r = r, .mode = 2};
			heap_foreach_event(in, pi, find_cb, &f);
			if (!f.found) {
				printf("no allocation event %llu\n", id);
			} else {
				f.found = 0;
				f.mode = cmd[0] == 's' ? 0 : 1;
				heap_foreach_event(in, pi, find_cb, &f);
			}
		} else {
			printf("commands: track ID, show ID, stage-memory, exit\n");
		}
		printf("\n");
		fflush(stdout);
	}
}

/* ---- the leak flame graph ---- */

/* A name's key for the tree (FNV-1a). */
static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* One frame per traced function of each leaking site's stack, then one per
 * function inlined there that its row names (ms_site_inline, outermost
 * first), the innermost lasting its bytes: the tree's totals are the
 * leaked bytes by stack. */
static int leak_flamegraph(struct trace_input *in, const struct heap_result *res, size_t np, struct ms_fold *fold,
			   const char *out)
{
	struct cp_tree *t = cp_new();
	uint32_t path[4096];
	for (size_t i = 0; i < np; i++) {
		const struct heap_result *r = &res[i];
		uint32_t base = np > 1 ? cp_child(t, CP_ROOT, CP_KEY_PROCESS(i), r->proc, UINT32_MAX) : CP_ROOT;
		for (size_t s = 0; s < r->nsites; s++) {
			uint64_t b = r->sites[s].leak_bytes;
			if (!b)
				continue;
			size_t n = 0;
			for (uint32_t x = r->sites[s].node; x && n < 4096; x = heap_node_parent(r, x))
				path[n++] = x;
			if (!n)
				continue; /* no traced frame to draw it under (the tables list it) */
			for (size_t d = 0; d < n; d++) {
				uint32_t f = heap_node_func(r, path[n - 1 - d]);
				cp_begin(t, 0, base, (uint32_t)d, trace_func_key(r->proc, f), r->proc, f);
			}
			const struct sym_inline *inl[64];
			size_t ni = 0;
			for (const struct sym_inline *x = ms_site_inline(r, fold, &r->sites[s]); x && ni < 64; x = x->outer)
				inl[ni++] = x;
			while (ni-- > 0) {
				const char *name = trace_short_style(r->proc) ? inl[ni]->short_name : inl[ni]->name;
				cp_begin(t, 0, base, (uint32_t)n++, CP_KEY_NAMED(name_hash(name)), name, CP_ID_NAMED);
			}
			for (size_t d = n; d-- > 0;)
				cp_end(t, 0, (uint32_t)d, 0, b);
		}
	}
	cp_finish(t);
	cp_name_funcs(t);
	struct fg_options fo = {.out = out, .weight_bytes = 1, .title = "Leaked bytes by stack"};
	int rc = fg_write_tree(t, in, &fo);
	cp_free(t);
	return rc;
}

/* ---- the command ---- */

/* The SF_FEAT_ALLOC* bits of every process's log: --alloc on (a log
 * without heap events then means nothing was allocated), and whether a
 * program's own malloc hid its allocations from it. */
static uint64_t alloc_features(struct trace_input *in)
{
	uint64_t f = 0;
	for (size_t i = 0; i < trace_nprocs(in); i++)
		f |= trace_proc_at(in, i)->info->features & (SF_FEAT_ALLOC | SF_FEAT_ALLOC_HIDDEN);
	return f;
}

int mem_no_events_error(struct trace_input *in, const char *path)
{
	uint64_t f = alloc_features(in);
	if (f & SF_FEAT_ALLOC_HIDDEN)
		sf_error("%s: no allocation events: --alloc was on, but the program's own malloc comes before "
			 "sftrace's in the lookup order (an executable with an allocator of its own), so none of its "
			 "allocations were seen",
			 path);
	else if (!(f & SF_FEAT_ALLOC))
		sf_error("%s: no allocation events: record with --alloc", path);
	else
		return 0;
	return 1;
}

int cmd_memory(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"milestone", required_argument, 0, 'm'}, {"select", required_argument, 0, 'S'},
		{"format", required_argument, 0, 'f'},    {"interactive", no_argument, 0, 'i'},
		{"flamegraph", required_argument, 0, 'g'}, {"plot", required_argument, 0, 'p'},
		{"overlay", no_argument, 0, 'O' + 256},   {"fold", required_argument, 0, 'F' + 256},
		{"no-fold", no_argument, 0, 'N' + 256},   {"group-by", required_argument, 0, 'G' + 256},
		{"width", required_argument, 0, 'W' + 256}, {"diff", no_argument, 0, 'D' + 256},
		{"help", no_argument, 0, 'h'},            INPUT_LONGOPTS('s'),
		PAGER_LONGOPTS,                           {0, 0, 0, 0},
	};
	struct mem_opts o = {.top = 10, .group = MS_BY_LINE};
	struct input_opts io;
	input_opts_init(&io, 's');
	io.page_by = IO_PAGE_ASKED;
	int c, rc = 1, usage_error;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:s:" INPUT_SHORTOPTS "h", longopts, NULL)) != -1) {
		if (input_opts_handle(&io, c, optarg)) {
			if (io.failed)
				goto out_usage;
			continue;
		}
		switch (c) {
		case 'm': o.milestone = optarg; break;
		case 'S': o.select = optarg; break;
		case 'i': o.interactive = 1; break;
		case 'g': o.flamegraph = optarg; break;
		case 'p': o.plot = optarg; break;
		case 'O' + 256: o.overlay = 1; break;
		case 'N' + 256: o.no_fold = 1; break;
		case 'D' + 256: o.diff = 1; break;
		case 'F' + 256:
			if (o.nfolds == sizeof(o.folds) / sizeof(o.folds[0])) {
				sf_error("--fold: at most %zu patterns", o.nfolds);
				goto out_usage;
			}
			o.folds[o.nfolds++] = optarg;
			break;
		case 'G' + 256:
			if (!strcmp(optarg, "function"))
				o.group = MS_BY_FUNCTION;
			else if (!strcmp(optarg, "line"))
				o.group = MS_BY_LINE;
			else if (!strcmp(optarg, "stack"))
				o.group = MS_BY_STACK;
			else {
				sf_error("--group-by must be 'function', 'line' or 'stack', not '%s'", optarg);
				goto out_usage;
			}
			break;
		case 'W' + 256:
			if (parse_number("--width", optarg, 40, 100000, &o.width) < 0)
				goto out_usage;
			break;
		case 'n':
			if (parse_number("-n", optarg, 0, 1000000000, &o.top) < 0)
				goto out_usage;
			break;
		case 'f':
			if (!strcmp(optarg, "tsv"))
				o.format = FMT_TSV;
			else if (!strcmp(optarg, "json"))
				o.format = FMT_JSON;
			else if (!strcmp(optarg, "table"))
				o.format = FMT_TABLE;
			else {
				sf_error("--format must be 'table', 'tsv' or 'json', not '%s'", optarg);
				goto out_usage;
			}
			break;
		case 'h': usage(stdout); input_opts_free(&io); return 0;
		default: goto out_usage;
		}
	}
	if (o.interactive && o.format == FMT_JSON) {
		sf_error("--interactive does not go with --format json: its answers would break the document");
		goto out_usage;
	}
	if (o.interactive && io.pager == 1) {
		sf_error("--interactive does not go with --pager: the prompt reads the terminal the pager holds");
		goto out_usage;
	}
	if (cut_active(&io.trace.cut)) {
		/* A heap replay needs every allocation and free: a cut would
		 * leave frees without their allocations. */
		sf_error("memory replays the whole heap: -c/--filter, -F, -N, --tid, --time, --min-duration and --max-depth "
			 "do not apply");
		goto out_usage;
	}
	o.full_names = !input_opts_short_names(&io, 1);
	io.trace.short_names = 1; /* trace_name: short; trace_symbol: full (tsv and json have both) */
	if (!o.width) {
		struct winsize ws;
		/* a terminal narrower than --width's minimum gets the minimum */
		o.width = isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col
				  ? (ws.ws_col >= 40 ? ws.ws_col : 40)
				  : 100;
	}
	struct ms_fold *fold = NULL;
	if (!o.no_fold || o.nfolds) {
		fold = ms_fold_new(o.no_fold, o.folds, o.nfolds);
		if (!fold)
			goto out_usage;
	}
	if (o.diff) {
		if (o.interactive || o.milestone || o.flamegraph || o.plot) {
			sf_error("--diff compares two recordings' sites: --interactive, --milestone, --flamegraph and "
				 "--plot do not apply");
			ms_fold_free(fold);
			goto out_usage;
		}
		if (argc - optind != 2) {
			sf_error("--diff takes two recordings, OLD and NEW (%d given)", argc - optind);
			ms_fold_free(fold);
			goto out_usage;
		}
		rc = memory_diff(&io, &o, fold, argv, optind);
		ms_fold_free(fold);
		input_opts_free(&io);
		return rc;
	}
	struct trace_input *in = input_opts_open(&io, "memory", argc, argv, optind, NULL, 0, &usage_error);
	if (!in) {
		ms_fold_free(fold);
		if (usage_error)
			goto out_usage;
		goto out;
	}
	struct nm_patterns ms = {0};
	if (o.milestone && (trace_add_name_pattern(in, &ms, o.milestone, "--milestone") < 0 || nm_compile(&ms) < 0)) {
		nm_free(&ms);
		trace_close(in);
		ms_fold_free(fold);
		rc = 1;
		goto out;
	}
	uint8_t selbuf[4096] = {0}, *sel = NULL;
	if (o.select) {
		sel = selbuf;
		for (const char *q = o.select; *q;) {
			char *end;
			unsigned long v = strtoul(q, &end, 10);
			if (end == q || v >= sizeof(selbuf) || (*end && *end != ',')) {
				sf_error("--select must be stage numbers separated by commas, not '%s'", o.select);
				trace_close(in);
				nm_free(&ms);
				ms_fold_free(fold);
				goto out_usage;
			}
			selbuf[v] = 1;
			q = *end ? end + 1 : end;
		}
	}
	size_t np = trace_nprocs(in);
	struct heap_result *res = xcalloc(np, sizeof(*res));
	uint8_t **maps = xcalloc(np, sizeof(*maps));
	size_t hits = 0;
	uint64_t events = 0;
	for (size_t i = 0; i < np; i++) {
		struct heap_options ho = {.select = sel, .nselect = sizeof(selbuf), .curve = o.plot != NULL};
		if (o.milestone) {
			maps[i] = milestone_map(trace_proc_at(in, i), &ms, &ho.nmilestone, &hits);
			ho.milestone = maps[i];
		}
		heap_replay(in, i, &ho, &res[i]);
		events += res[i].tot.events;
		if (res[i].fork_parent_missing && !io.trace.quiet)
			sf_warn("%s: forked from pid %u, whose log was not given: the heap it inherited at the fork is "
				"not counted",
				trace_proc_at(in, i)->info->path, res[i].fork_parent_missing);
	}
	if (o.milestone && !hits) {
		sf_error("--milestone '%s' matches no instrumented function of %s", o.milestone,
			 trace_proc_at(in, 0)->log ? argv[optind] : "the logs");
	} else if (!events && mem_no_events_error(in, argv[optind])) {
	} else { /* with --alloc on and no events, the program allocated nothing: zeros */
		input_opts_page(&io);
		if (o.flamegraph && leak_flamegraph(in, res, np, fold, o.flamegraph) < 0)
			goto done;
		struct heap_plot_options po = {.out = o.plot, .fold = o.overlay, .select = sel, .nselect = sizeof(selbuf)};
		if (o.plot && heap_plot_write(res, np, &po) < 0)
			goto done;
		/* json: one document; with several processes, their objects in a list */
		int list = o.format == FMT_JSON && np > 1;
		if (list)
			printf("{\"processes\":[\n");
		for (size_t i = 0; i < np; i++) {
			if (list && i)
				printf(",\n");
			struct ms_table rows;
			ms_group(&res[i], fold, o.group, &rows);
			report(&res[i], &rows, &o, np > 1);
			ms_table_free(&rows);
			if (o.interactive && i == 0)
				fflush(stdout), interactive(in, i, &res[i]);
		}
		if (list)
			printf("\n]}");
		if (o.format == FMT_JSON)
			printf("\n");
		rc = input_opts_end_output(&io, 1, "the memory report");
	}
done:
	for (size_t i = 0; i < np; i++) {
		heap_result_free(&res[i]);
		free(maps[i]);
	}
	free(res);
	free(maps);
	ms_fold_free(fold);
	nm_free(&ms);
	trace_report_repairs(in);
	trace_close(in);
out:
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "memory");
}
