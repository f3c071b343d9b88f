/* sftrace report --diff OLD NEW: per-function calls, total and self time of
 * two recordings side by side, with the absolute and relative change.
 *
 * Functions are matched by display (demangled) name, so two builds of the
 * same code compare; functions with one name in several objects are summed,
 * as are the calls of a name across processes. A function with frames on
 * one side only is shown as such ("old" or "new" in the status column). Each
 * side is one call-path pass (the same aggregation as `report`), so the cost
 * is that of two reports plus a sort of the function names. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report_diff.h"
#include "cli/report_table.h"
#include "lib/callpath.h"
#include "lib/func_stats.h"
#include "lib/json_out.h"
#include "lib/trace_input.h"
#include "lib/util.h"

enum { OLD, NEW };

struct diff_row {
	const char *name;
	int sides;               /* bit OLD and/or bit NEW */
	uint64_t calls[2], total[2], self[2];
};

struct side {
	struct trace_input *in;
	struct cp_tree *t;
	struct fs_row *rows;
	size_t nrows;
};

enum diff_sort { BY_SELF, BY_TOTAL, BY_CALLS, BY_NAME };

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct fs_row *)a)->name, ((const struct fs_row *)b)->name);
}

static int64_t delta(const uint64_t v[2]) { return (int64_t)(v[NEW] - v[OLD]); }

static uint64_t magnitude(int64_t d) { return d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d; }

static enum diff_sort g_sort; /* qsort has no context argument */

static int cmp_rows(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	uint64_t vx = 0, vy = 0;
	switch (g_sort) {
	case BY_SELF: vx = magnitude(delta(x->self)); vy = magnitude(delta(y->self)); break;
	case BY_TOTAL: vx = magnitude(delta(x->total)); vy = magnitude(delta(y->total)); break;
	case BY_CALLS: vx = magnitude(delta(x->calls)); vy = magnitude(delta(y->calls)); break;
	case BY_NAME: break;
	}
	if (vx != vy)
		return vx > vy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Both sides' rows sorted by name, then merged: one row per name. */
static struct diff_row *merge(struct side s[2], size_t *nout)
{
	struct diff_row *out = xcalloc(s[OLD].nrows + s[NEW].nrows + 1, sizeof(*out));
	size_t n = 0, i[2] = {0, 0};
	for (int k = 0; k < 2; k++)
		qsort(s[k].rows, s[k].nrows, sizeof(*s[k].rows), cmp_name);
	while (i[OLD] < s[OLD].nrows || i[NEW] < s[NEW].nrows) {
		const char *name = NULL;
		for (int k = 0; k < 2; k++)
			if (i[k] < s[k].nrows && (!name || strcmp(s[k].rows[i[k]].name, name) < 0))
				name = s[k].rows[i[k]].name;
		struct diff_row *d = &out[n++];
		d->name = name;
		for (int k = 0; k < 2; k++)
			for (; i[k] < s[k].nrows && !strcmp(s[k].rows[i[k]].name, name); i[k]++) {
				const struct fs_row *w = &s[k].rows[i[k]];
				d->sides |= 1 << k;
				d->calls[k] += w->calls;
				d->total[k] += w->total;
				d->self[k] += w->self;
			}
	}
	*nout = n;
	return out;
}

static const char *status(const struct diff_row *d)
{
	return d->sides == 3 ? "both" : d->sides == 1 << OLD ? "old" : "new";
}

/* Relative change in percent; NAN when the old value is 0. */
static double pct(const uint64_t v[2])
{
	return v[OLD] ? 100.0 * ((double)v[NEW] - (double)v[OLD]) / (double)v[OLD] : NAN;
}

/* ---- table ---- */

#define NCOL 8
static const char *const col_names[NCOL] = {"Old self", "New self", "Diff self", "Change",
					    "Old total", "New total", "Old calls", "New calls"};

static void signed_ns(char buf[32], int64_t d)
{
	char t[32];
	sf_format_duration(t, sizeof(t), magnitude(d), SF_DURATION_SIG3);
	snprintf(buf, 32, "%s%.30s", d < 0 ? "-" : d > 0 ? "+" : "", t);
}

static void side_ns(char *buf, const struct diff_row *d, int k, uint64_t v)
{
	if (d->sides & (1 << k))
		sf_format_duration(buf, 32, v, SF_DURATION_SIG3);
	else
		strcpy(buf, "-");
}

static void row_cells(const struct diff_row *d, char c[NCOL][32])
{
	side_ns(c[0], d, OLD, d->self[OLD]);
	side_ns(c[1], d, NEW, d->self[NEW]);
	signed_ns(c[2], delta(d->self));
	double p = pct(d->self);
	if (d->sides == 1 << NEW)
		strcpy(c[3], "new");
	else if (d->sides == 1 << OLD)
		strcpy(c[3], "gone");
	else if (isnan(p))
		strcpy(c[3], "-");
	else
		snprintf(c[3], 32, "%+.1f%%", p);
	side_ns(c[4], d, OLD, d->total[OLD]);
	side_ns(c[5], d, NEW, d->total[NEW]);
	snprintf(c[6], 32, "%llu", (unsigned long long)d->calls[OLD]);
	snprintf(c[7], 32, "%llu", (unsigned long long)d->calls[NEW]);
}

static void nth_row_cells(const void *rows, size_t i, char (*out)[32])
{
	row_cells((const struct diff_row *)rows + i, out);
}

static void side_summary(const char *label, struct side *s)
{
	const struct fr_stats *st = trace_stats(s->in);
	char t[32];
	sf_format_duration(t, sizeof(t), cp_node(s->t, CP_ROOT)->total_ns, SF_DURATION_SIG3);
	printf("%s: %llu events, %llu frames, %s traced", label, (unsigned long long)trace_events(s->in),
	       (unsigned long long)st->frames, t);
}

static void print_table(const struct report_diff_opts *o, const struct diff_row *rows, size_t n,
			struct side s[2])
{
	size_t shown = o->limit < 0 || (size_t)o->limit > n ? n : (size_t)o->limit;
	int wid[NCOL];
	char cells[NCOL][32];
	int name_cols = report_fit_columns(NCOL, col_names, rows, shown, nth_row_cells, o->width, wid);
	char net[256];
	for (int k = OLD; k <= NEW; k++) /* net times, as report says them */
		if (trace_format_net(s[k].in, net, sizeof(net)))
			printf("%s# %s: %s%s\n", o->color ? "\033[2m" : "", k == OLD ? "old" : "new", net,
			       o->color ? "\033[0m" : "");
	printf("%s", o->color ? "\033[1m" : "");
	for (int c = 0; c < NCOL; c++)
		printf("%*s  ", wid[c], col_names[c]);
	printf("Function%s\n", o->color ? "\033[0m" : "");
	for (size_t i = 0; i < shown; i++) {
		const struct diff_row *d = &rows[i];
		row_cells(d, cells);
		for (int c = 0; c < NCOL; c++) {
			/* Slower in red, faster in green. */
			const char *on = o->color && (c == 2 || c == 3) && delta(d->self)
						 ? (delta(d->self) > 0 ? "\033[31m" : "\033[32m")
						 : NULL;
			printf("%s%*s%s  ", on ? on : "", wid[c], cells[c], on ? "\033[0m" : "");
		}
		report_put_name(d->name, name_cols);
		putchar('\n');
	}
	if (shown < n)
		printf("... %zu more function%s (-n 0 shows all)\n", n - shown, n - shown == 1 ? "" : "s");
	size_t count[4] = {0};
	for (size_t i = 0; i < n; i++)
		count[rows[i].sides]++;
	printf("\n%s", o->color ? "\033[2m" : "");
	side_summary("old", &s[OLD]);
	printf("; ");
	side_summary("new", &s[NEW]);
	printf("\n%zu functions in both, %zu only in old, %zu only in new%s\n", count[3], count[1 << OLD],
	       count[1 << NEW], o->color ? "\033[0m" : "");
}

/* ---- tsv and json: the same fields ---- */

static const char *const fields[] = {
	"name", "status", "old_calls", "new_calls", "diff_calls", "calls_change_pct",
	"old_total_ns", "new_total_ns", "diff_total_ns", "total_change_pct",
	"old_self_ns", "new_self_ns", "diff_self_ns", "self_change_pct",
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* One metric: old, new, diff, change (empty in TSV / null in JSON when the
 * old value is 0). */
static void put_metric(const uint64_t v[2], int json)
{
	const char *sep = json ? "," : "\t";
	double p = pct(v);
	printf("%s%llu%s%llu%s%lld%s", sep, (unsigned long long)v[OLD], sep, (unsigned long long)v[NEW], sep,
	       (long long)delta(v), sep);
	if (!isnan(p))
		printf("%.2f", p);
	else if (json)
		printf("null");
}

static void print_tsv(const struct report_diff_opts *o, const struct diff_row *rows, size_t n)
{
	for (size_t f = 0; f < NFIELDS; f++)
		printf("%s%s", f ? "\t" : "", fields[f]);
	putchar('\n');
	size_t shown = o->limit < 0 || (size_t)o->limit > n ? n : (size_t)o->limit;
	for (size_t i = 0; i < shown; i++) {
		report_put_tsv_name(rows[i].name);
		printf("\t%s", status(&rows[i]));
		put_metric(rows[i].calls, 0);
		put_metric(rows[i].total, 0);
		put_metric(rows[i].self, 0);
		putchar('\n');
	}
}

static void json_side(const char *label, struct side *s)
{
	const struct fr_stats *st = trace_stats(s->in);
	printf("\"%s\":{\"events\":%llu,\"frames\":%llu,\"traced_ns\":%llu}", label,
	       (unsigned long long)trace_events(s->in), (unsigned long long)st->frames,
	       (unsigned long long)cp_node(s->t, CP_ROOT)->total_ns);
}

static void print_json(const struct report_diff_opts *o, const struct diff_row *rows, size_t n, struct side s[2])
{
	size_t shown = o->limit < 0 || (size_t)o->limit > n ? n : (size_t)o->limit;
	printf("{");
	json_side("old", &s[OLD]);
	printf(",");
	json_side("new", &s[NEW]);
	printf(",\"functions\":[");
	for (size_t i = 0; i < shown; i++) {
		/* Field names and order as in the TSV header. */
		printf("%s\n{\"%s\":", i ? "," : "", fields[0]);
		json_put_str(stdout, rows[i].name);
		printf(",\"%s\":\"%s\"", fields[1], status(&rows[i]));
		const uint64_t *m[3] = {rows[i].calls, rows[i].total, rows[i].self};
		for (int k = 0; k < 3; k++) {
			const char *const *f = fields + 2 + 4 * k;
			double p = pct(m[k]);
			printf(",\"%s\":%llu,\"%s\":%llu,\"%s\":%lld,\"%s\":", f[0], (unsigned long long)m[k][OLD], f[1],
			       (unsigned long long)m[k][NEW], f[2], (long long)delta(m[k]), f[3]);
			if (isnan(p))
				printf("null");
			else
				printf("%.2f", p);
		}
		printf("}");
	}
	printf("\n]}\n");
}

/* ---- the command ---- */

static int parse_sort(const char *s, enum diff_sort *k)
{
	static const char *const names[] = {"self", "total", "calls", "name"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*k = (enum diff_sort)i;
			return 0;
		}
	sf_error("--sort with --diff must be self, total, calls or name, not '%s'", s);
	return -1;
}

static int open_side(struct input_opts *io, char **argv, int i, int by_name, struct side *s)
{
	int usage_error;
	s->in = input_opts_open(io, "report", i + 1, argv, i, NULL, 0, &usage_error);
	if (!s->in)
		return -1;
	s->t = cp_new();
	if (cp_collect(s->t, s->in, CP_FLAT) < 0)
		return -1;
	s->rows = fs_aggregate(s->t, by_name, &s->nrows);
	return 0;
}

int report_diff(struct input_opts *io, int argc, char **argv, int first, const struct report_diff_opts *o)
{
	if (argc - first != 2) {
		sf_error("--diff takes two recordings, OLD and NEW (each a log or a directory), not %d", argc - first);
		return input_opts_usage_error(io, "report");
	}
	enum diff_sort sort = BY_SELF;
	if (o->sort && parse_sort(o->sort, &sort) < 0)
		return input_opts_usage_error(io, "report");
	struct side s[2] = {{0}};
	int rc = 1;
	if (open_side(io, argv, first, o->by_name, &s[OLD]) == 0 && open_side(io, argv, first + 1, o->by_name, &s[NEW]) == 0) {
		size_t n;
		struct diff_row *rows = merge(s, &n);
		g_sort = sort;
		qsort(rows, n, sizeof(*rows), cmp_rows);
		if (o->format == REPORT_TSV)
			print_tsv(o, rows, n);
		else if (o->format == REPORT_JSON)
			print_json(o, rows, n, s);
		else
			print_table(o, rows, n, s);
		free(rows);
		rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
		if (rc)
			sf_error("cannot write the report to stdout");
	}
	/* One notice for both sides (both read, or the first's alone). */
	static const char *const label[2] = {"old", "new"};
	const struct trace_input *read[2] = {s[OLD].in, s[NEW].in};
	trace_report_repairs_of(read, label, s[NEW].t ? 2 : s[OLD].t ? 1 : 0);
	for (int k = 0; k < 2; k++) {
		free(s[k].rows);
		if (s[k].t)
			cp_free(s[k].t);
		trace_close(s[k].in);
	}
	input_opts_free(io);
	return rc;
}
