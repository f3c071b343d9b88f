/* `sftrace memory --diff OLD NEW` (as heaptrack_print --diff): the sites of
 * two recordings matched by allocating function (full name) and location
 * (file basename:line, memory_sites.h), with the change in allocations,
 * bytes, share of the peak and leaks, sorted by the largest increase in
 * bytes. Each recording's processes are summed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/memory.h"
#include "lib/heap.h"
#include "lib/json_out.h"
#include "lib/text_esc.h"
#include "lib/util.h"

enum { V_ALLOCS, V_BYTES, V_PEAK, V_LEAK_BYTES, V_LEAK_BLOCKS, NV };

/* One site of one side. */
struct dsite {
	char *key;      /* full name \t location: what matches */
	char *name;     /* the name a table shows (short unless --names full) */
	char *loc;
	int tail;       /* the function tail-called the allocator */
	int side;       /* 0 old, 1 new */
	uint64_t v[NV];
};

struct dside {
	struct dsite *s;
	size_t n, cap;
	uint64_t tot[NV]; /* allocations, bytes, peak, leaked bytes and blocks */
};

/* A matched pair. */
struct drow {
	const char *name, *loc, *key;
	int tail; /* a tail call's site, on either side */
	uint64_t old[NV], new[NV];
	int64_t d[NV];
};

static void add_site(struct dside *ds, int side, const struct heap_result *r, const struct ms_row *row, int full)
{
	char loc[1024];
	ms_location(r, row, 1, loc, sizeof(loc));
	const char *fn = ms_func_name(r, row, 1);
	if (ds->n == ds->cap) {
		ds->cap = ds->cap ? ds->cap * 2 : 256;
		ds->s = xrealloc(ds->s, ds->cap * sizeof(*ds->s));
	}
	struct dsite *d = &ds->s[ds->n++];
	size_t kl = strlen(fn) + strlen(loc) + 2;
	d->key = xmalloc(kl);
	snprintf(d->key, kl, "%s\t%s", fn, loc);
	d->name = xstrdup(ms_func_name(r, row, full));
	d->loc = xstrdup(loc);
	d->tail = row->tail;
	d->side = side;
	uint64_t v[NV] = {row->allocs, row->bytes, row->peak_bytes, row->leak_bytes, row->leak_blocks};
	memcpy(d->v, v, sizeof(v));
}

/* Replays every process of the recording at argv[i] into ds. 0, or -1
 * after printing why (2: a usage error). */
static int load_side(struct input_opts *io, const struct mem_opts *o, struct ms_fold *fold, char **argv, int i,
		     int side, struct dside *ds, uint64_t *tot)
{
	int usage_error = 0;
	struct trace_input *in = input_opts_open(io, "memory", i + 1, argv, i, NULL, 0, &usage_error);
	if (!in)
		return usage_error ? 2 : 1;
	uint64_t events = 0;
	for (size_t p = 0; p < trace_nprocs(in); p++) {
		struct heap_result r;
		heap_replay(in, p, NULL, &r);
		events += r.tot.events;
		tot[V_ALLOCS] += r.tot.allocs;
		tot[V_BYTES] += r.tot.bytes;
		tot[V_PEAK] += r.tot.peak_bytes;
		tot[V_LEAK_BYTES] += r.tot.leak_bytes;
		tot[V_LEAK_BLOCKS] += r.tot.leak_blocks;
		struct ms_table t;
		ms_group(&r, fold, MS_BY_LINE, &t);
		for (size_t k = 0; k < t.n; k++)
			add_site(ds, side, &r, &t.rows[k], o->full_names);
		ms_table_free(&t);
		heap_result_free(&r);
	}
	trace_report_repairs(in);
	/* with --alloc on and no events, the program allocated nothing: a
	 * side of zeros, as `memory` prints for it */
	int rc = !events && mem_no_events_error(in, argv[i]) ? 1 : 0;
	trace_close(in);
	return rc;
}

static int cmp_key(const void *a, const void *b)
{
	const struct dsite *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : x->side - y->side;
}

static int cmp_change(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	if (x->d[V_BYTES] != y->d[V_BYTES])
		return x->d[V_BYTES] > y->d[V_BYTES] ? -1 : 1;
	if (x->d[V_ALLOCS] != y->d[V_ALLOCS])
		return x->d[V_ALLOCS] > y->d[V_ALLOCS] ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Sites of both sides with a change, matched and sorted. */
static struct drow *match(struct dside *ds, size_t *nrows)
{
	qsort(ds->s, ds->n, sizeof(*ds->s), cmp_key);
	struct drow *rows = xcalloc(ds->n + 1, sizeof(*rows));
	size_t n = 0;
	for (size_t i = 0; i < ds->n; i++) {
		struct drow *r = &rows[n];
		if (!r->key) {
			r->key = ds->s[i].key;
			r->name = ds->s[i].name;
			r->loc = ds->s[i].loc;
		}
		r->tail |= ds->s[i].tail;
		uint64_t *into = ds->s[i].side ? r->new : r->old;
		for (int v = 0; v < NV; v++)
			into[v] += ds->s[i].v[v];
		if (i + 1 < ds->n && !strcmp(ds->s[i + 1].key, r->key))
			continue; /* the same key again (the other side, or another process) */
		int changed = 0;
		for (int v = 0; v < NV; v++) {
			r->d[v] = (int64_t)(r->new[v] - r->old[v]);
			changed |= r->d[v] != 0;
		}
		if (changed)
			n++;
		else
			memset(r, 0, sizeof(*r));
	}
	qsort(rows, n, sizeof(*rows), cmp_change);
	*nrows = n;
	return rows;
}

static void signed_bytes(int64_t v, char *buf, size_t cap)
{
	char h[32];
	heap_format_bytes(h, sizeof(h), (double)(v < 0 ? -v : v));
	snprintf(buf, cap, "%s%s", v > 0 ? "+" : v < 0 ? "-" : "", h);
}

static void print_table(const struct drow *rows, size_t n, const struct dside *ds, const struct mem_opts *o,
			char **argv, int first)
{
	static const char *what[NV] = {"allocations", "bytes allocated", "peak heap", "leaked bytes", "leaked blocks"};
	printf("%s -> %s\n", sf_esc(argv[first]), sf_esc(argv[first + 1]));
	for (int v = 0; v < NV; v++) {
		char a[32], b[32], d[48];
		int64_t dv = (int64_t)(ds[1].tot[v] - ds[0].tot[v]);
		if (v == V_ALLOCS || v == V_LEAK_BLOCKS) {
			printf("%-16s %12" PRIu64 " -> %-12" PRIu64 " (%+" PRId64 ")\n", what[v], ds[0].tot[v],
			       ds[1].tot[v], dv);
			continue;
		}
		heap_format_bytes(a, sizeof(a), (double)ds[0].tot[v]);
		heap_format_bytes(b, sizeof(b), (double)ds[1].tot[v]);
		signed_bytes(dv, d, sizeof(d));
		printf("%-16s %12s -> %-12s (%s)\n", what[v], a, b, d);
	}
	printf("\nChanged sites, largest increase first:\n%8s %10s %10s %10s  %s\n", "allocs", "bytes", "peak",
	       "leaked", "allocated in  at");
	/* the figures take 43 columns: under 64, rows grow past --width */
	size_t width = o->width > 64 ? (size_t)o->width - 44 : 20, shown = 0;
	for (size_t i = 0; i < n; i++) {
		if (o->top && shown == (size_t)o->top) {
			printf("... %zu more (-n 0 shows all)\n", n - shown);
			break;
		}
		const struct drow *r = &rows[i];
		char b[48], p[48], l[48], text[4096];
		signed_bytes(r->d[V_BYTES], b, sizeof(b));
		signed_bytes(r->d[V_PEAK], p, sizeof(p));
		signed_bytes(r->d[V_LEAK_BYTES], l, sizeof(l));
		/* as the site tables: the location whole, marked as a tail call,
		 * on a line of its own when it leaves the name under 10 columns */
		ms_fit_row(sf_esc(r->name), r->loc, r->tail ? " (tail call)" : "", width, 43, text, sizeof(text));
		printf("%+8" PRId64 " %10s %10s %10s  %s\n", r->d[V_ALLOCS], b, p, l, text);
		shown++;
	}
	if (!n)
		printf("%8s\n", "(none)");
}

static void print_tsv(const struct drow *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct drow *r = &rows[i];
		printf("diff\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64, r->d[V_ALLOCS],
		       r->d[V_BYTES], r->d[V_PEAK], r->d[V_LEAK_BYTES], r->d[V_LEAK_BLOCKS]);
		printf("\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, r->old[V_ALLOCS], r->new[V_ALLOCS],
		       r->old[V_BYTES], r->new[V_BYTES]);
		putchar('\t'); /* tabs and newlines in a cell: spaces (OUTPUTS.md) */
		sf_esc_put(stdout, r->name, "\t\n\r");
		putchar('\t');
		sf_esc_put(stdout, r->loc, "\t\n\r");
		putchar('\n');
	}
}

static void print_json(const struct drow *rows, size_t n, const struct dside *ds)
{
	static const char *keys[NV] = {"allocations", "bytes", "peak_bytes", "leaked_bytes", "leaked_blocks"};
	printf("{\"old\":{");
	for (int v = 0; v < NV; v++)
		printf("%s\"%s\":%" PRIu64, v ? "," : "", keys[v], ds[0].tot[v]);
	printf("},\"new\":{");
	for (int v = 0; v < NV; v++)
		printf("%s\"%s\":%" PRIu64, v ? "," : "", keys[v], ds[1].tot[v]);
	printf("},\n\"sites\":[");
	for (size_t i = 0; i < n; i++) {
		printf("%s\n{\"function\":", i ? "," : "");
		json_put_str(stdout, rows[i].name);
		printf(",\"location\":");
		json_put_str(stdout, rows[i].loc);
		for (int v = 0; v < NV; v++)
			printf(",\"%s\":%" PRId64, keys[v], rows[i].d[v]);
		printf(",\"old_allocations\":%" PRIu64 ",\"new_allocations\":%" PRIu64 ",\"old_bytes\":%" PRIu64
		       ",\"new_bytes\":%" PRIu64 "}",
		       rows[i].old[V_ALLOCS], rows[i].new[V_ALLOCS], rows[i].old[V_BYTES], rows[i].new[V_BYTES]);
	}
	printf("%s]}\n", n ? "\n" : "");
}

int memory_diff(struct input_opts *io, const struct mem_opts *o, struct ms_fold *fold, char **argv, int first)
{
	struct dside ds[2] = {0};
	/* both sides' sites go to ds[0] (sorting matches them); totals apart */
	int rc = load_side(io, o, fold, argv, first, 0, &ds[0], ds[0].tot);
	if (!rc)
		rc = load_side(io, o, fold, argv, first + 1, 1, &ds[0], ds[1].tot);
	if (rc == 2) {
		rc = input_opts_usage_error(io, "memory");
	} else if (!rc) {
		size_t n;
		struct drow *rows = match(&ds[0], &n);
		input_opts_page(io);
		if (o->format == FMT_TSV)
			print_tsv(rows, n);
		else if (o->format == FMT_JSON)
			print_json(rows, n, ds);
		else
			print_table(rows, n, ds, o, argv, first);
		free(rows);
		rc = input_opts_end_output(io, 1, "the memory diff");
	}
	for (size_t i = 0; i < ds[0].n; i++) {
		free(ds[0].s[i].key);
		free(ds[0].s[i].name);
		free(ds[0].s[i].loc);
	}
	free(ds[0].s);
	return rc;
}
