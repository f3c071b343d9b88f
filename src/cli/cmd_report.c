/* sftrace report: one row per function (total, self, calls, avg, min, max),
 * merged over every thread and process of the input, or per thread / per
 * process. Built from the call-path tree, so one pass over the events and
 * memory bounded by distinct call paths.
 *
 * Definitions (every frame is one call):
 *   total  time inside the function, recursion counted once: the summed
 *          durations of its frames that are not nested inside another frame
 *          of the same function on the same thread;
 *   self   the summed durations of its frames minus their children's;
 *   avg, min, max  of single calls: frame durations, children included
 *          (for a recursive function the inner frames count as calls too,
 *          so avg is the mean over every frame, not total / calls).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
#include "cli/report_diff.h"
#include "cli/report_table.h"
#include "lib/callpath.h"
#include "lib/func_stats.h"
#include "lib/json_out.h"
#include "lib/text_esc.h"
#include "lib/trace_input.h"
#include "lib/util.h"

enum sort_key { SORT_SELF, SORT_TOTAL, SORT_CALLS, SORT_AVG, SORT_MIN, SORT_MAX, SORT_NAME };

static const char *const sort_names[] = {"self", "total", "calls", "avg", "min", "max", "name"};

struct report {
	struct cp_tree *t;
	struct fs_row *rows;
	size_t nrows;
	enum sort_key sort;
	long limit;       /* rows per section; <0: all */
	int tsv;
	int json;        /* with tsv set too: every row, raw ns */
	int color;
	int scoped;       /* 0 merged, 1 per process, 2 per thread */
	int width;        /* terminal columns, 0: do not truncate */
	int by_name;      /* functions that share a (short) name share a row */
	int srcline;      /* --srcline: each function's file:line after its name */
};

/* ---- sorting ---- */

static uint64_t sort_value(const struct fs_row *w, enum sort_key k)
{
	switch (k) {
	case SORT_SELF: return w->self;
	case SORT_TOTAL: return w->total;
	case SORT_CALLS: return w->calls;
	case SORT_AVG: return fs_avg(w);
	case SORT_MIN: return w->min;
	case SORT_MAX: return w->max;
	default: return 0;
	}
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const struct report *r = ctx;
	const struct fs_row *x = a, *y = b;
	if (x->scope != y->scope) {
		/* Sections in key order: process index, then thread index. */
		uint64_t kx = cp_node(r->t, x->scope)->key, ky = cp_node(r->t, y->scope)->key;
		if (kx != ky)
			return kx < ky ? -1 : 1;
	}
	if (r->sort != SORT_NAME) {
		uint64_t vx = sort_value(x, r->sort), vy = sort_value(y, r->sort);
		if (vx != vy)
			return vx > vy ? -1 : 1; /* largest first */
	}
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	uint64_t fx = cp_func(r->t, x->func)->key, fy = cp_func(r->t, y->func)->key;
	return fx < fy ? -1 : fx > fy;
}

/* ---- formatting ---- */

#define C_BOLD "\033[1m"
#define C_RED "\033[31m"
#define C_YELLOW "\033[33m"
#define C_DIM "\033[2m"
#define C_OFF "\033[0m"

#define NCOL 6
static const char *const col_names[NCOL] = {"Total", "Self", "Calls", "Avg", "Min", "Max"};

/* trace_cost_err of the input (0: nothing is marked), for the cells. */
static double cost_err;

/* A net figure, or the figure as recorded marked NET_UNCERTAIN_MARK when
 * the net one is uncertain (trace_net_uncertain). */
static void net_cell(char *out, uint64_t net, uint64_t raw)
{
	if (!trace_net_uncertain(cost_err, net, raw)) {
		sf_format_duration(out, 32, net, SF_DURATION_SIG3);
		return;
	}
	strcpy(out, NET_UNCERTAIN_MARK);
	sf_format_duration(out + strlen(out), 32 - strlen(out), raw, SF_DURATION_SIG3);
}

static void row_cells(const struct fs_row *w, char cells[NCOL][32])
{
	net_cell(cells[0], w->total, w->raw_total);
	net_cell(cells[1], w->self, w->raw_self);
	snprintf(cells[2], 32, "%llu", (unsigned long long)w->calls);
	/* Avg, min and max stand or fall with the sum of every frame's
	 * duration: uncertain, the three are shown as recorded. Otherwise min
	 * and max are marked as replay marks the calls they are of. */
	if (w->calls && trace_net_uncertain(cost_err, w->sum, w->raw_sum)) {
		net_cell(cells[3], 0, fs_raw_avg(w));
		net_cell(cells[4], 0, w->raw_min);
		net_cell(cells[5], 0, w->raw_max);
		return;
	}
	sf_format_duration(cells[3], 32, fs_avg(w), SF_DURATION_SIG3);
	if (w->calls) {
		net_cell(cells[4], w->min, w->min_at_raw);
		net_cell(cells[5], w->max, w->max_at_raw);
	} else {
		sf_format_duration(cells[4], 32, 0, SF_DURATION_SIG3);
		sf_format_duration(cells[5], 32, 0, SF_DURATION_SIG3);
	}
}

static void nth_row_cells(const void *rows, size_t i, char (*out)[32])
{
	row_cells((const struct fs_row *)rows + i, out);
}

/* --srcline: "  file:line" from the DWARF of the row's function (its first
 * one when functions share a row by name); nothing when DWARF has none. */
static void put_srcline(const struct report *r, const struct fs_row *w)
{
	const struct cp_func *fn = cp_func(r->t, w->func);
	if (!r->srcline || (fn->key & CP_SYNTHETIC))
		return;
	uint32_t line;
	const char *file = trace_srcline(fn->owner, fn->id, &line);
	if (file)
		printf("  %s:%u", sf_esc(file), line);
}

/* One section: rows [0, n) of one scope, already sorted. `whole` is the
 * section's time (for the self-time colours). */
static void print_table(const struct report *r, const struct fs_row *rows, size_t n, uint64_t whole)
{
	size_t shown = r->limit < 0 || (size_t)r->limit > n ? n : (size_t)r->limit;
	int wid[NCOL];
	char cells[NCOL][32];
	int name_cols = report_fit_columns(NCOL, col_names, rows, shown, nth_row_cells, r->width, wid);
	if (r->color)
		fputs(C_BOLD, stdout);
	for (int c = 0; c < NCOL; c++)
		printf("%*s  ", wid[c], col_names[c]);
	printf("Function");
	puts(r->color ? C_OFF : "");
	for (size_t i = 0; i < shown; i++) {
		const struct fs_row *w = &rows[i];
		row_cells(w, cells);
		for (int c = 0; c < NCOL; c++) {
			const char *on = NULL;
			if (r->color && c == 1 && whole) {
				double share = (double)w->self / (double)whole;
				on = share >= 0.10 ? C_RED : share >= 0.01 ? C_YELLOW : NULL;
			}
			printf("%s%*s%s  ", on ? on : "", wid[c], cells[c], on ? C_OFF : "");
		}
		report_put_name(w->name, name_cols);
		put_srcline(r, w);
		putchar('\n');
	}
	if (shown < n)
		printf("%s... %zu more function%s (-n 0 shows all)%s\n", r->color ? C_DIM : "", n - shown,
		       n - shown == 1 ? "" : "s", r->color ? C_OFF : "");
}

/* "calls (pid 1234)", or "calls (tid 1235) in calls (pid 1234)". */
static void print_section_head(const struct report *r, uint32_t scope)
{
	const struct cp_node *n = cp_node(r->t, scope);
	char t[32];
	sf_format_duration(t, sizeof(t), n->total_ns, SF_DURATION_SIG3);
	printf("%s", r->color ? C_BOLD : "");
	if (r->scoped == 2)
		printf("== thread %s in %s", sf_esc(cp_func_name(r->t, n->func, NULL)),
		       sf_esc(cp_func_name(r->t, cp_node(r->t, n->parent)->func, NULL)));
	else
		printf("== process %s", sf_esc(cp_func_name(r->t, n->func, NULL)));
	printf(": %s in %llu calls%s\n", t, (unsigned long long)n->sub_calls, r->color ? C_OFF : "");
}

static void print_tsv(const struct report *r, const struct fs_row *rows, size_t n)
{
	size_t shown = r->limit < 0 || (size_t)r->limit > n ? n : (size_t)r->limit;
	for (size_t i = 0; i < shown; i++) {
		const struct fs_row *w = &rows[i];
		if (r->scoped) {
			const struct cp_node *s = cp_node(r->t, w->scope);
			const struct cp_func *sf = cp_func(r->t, s->func);
			const struct trace_proc *p = sf->owner;
			printf("%u\t", p->info->pid);
			if (r->scoped == 2)
				printf("%u\t", lr_thread_at(p->log, sf->id)->tid);
		}
		printf("%llu\t", (unsigned long long)cp_func(r->t, w->func)->key);
		report_put_tsv_name(w->name);
		printf("\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n", (unsigned long long)w->calls,
		       (unsigned long long)w->total, (unsigned long long)w->self, (unsigned long long)fs_avg(w),
		       (unsigned long long)(w->calls ? w->min : 0), (unsigned long long)w->max);
	}
}

static void print_footer(const struct report *r, struct trace_input *in)
{
	size_t threads = trace_threads(in), nprocs = trace_nprocs(in);
	const struct fr_stats *st = trace_stats(in);
	char rep[512];
	if (!fr_format_repairs(st, rep, sizeof(rep)))
		snprintf(rep, sizeof(rep), "no repairs");
	char total[32], cut[256];
	net_cell(total, cp_node(r->t, CP_ROOT)->total_ns, cp_node(r->t, CP_ROOT)->raw_total_ns);
	int have_cut = trace_format_cut(in, cut, sizeof(cut));
	printf("\n%s%llu events, %llu frames, %zu thread%s, %zu process%s, %s traced; %s%s%s%s\n", r->color ? C_DIM : "",
	       (unsigned long long)trace_events(in), (unsigned long long)st->frames, threads, threads == 1 ? "" : "s",
	       nprocs, nprocs == 1 ? "" : "es", total, rep, have_cut ? "; cut: " : "", cut, r->color ? C_OFF : "");
	trace_repairs_shown(in); /* not again on stderr */
}

/* Net times (trace_format_net): whether the tracer's cost was taken off,
 * and the first figure; nothing when no log has one. */
static void print_json_cost(const struct trace_input *in)
{
	for (size_t i = 0; i < trace_nprocs(in); i++) {
		const struct lr_info *f = trace_proc_at(in, i)->info;
		if (f->cost_known) {
			printf(",\"net_times\":%s,\"tracer_cost_ns\":{\"caller\":%.1f,\"call\":%.1f}",
			       trace_net_times(in) ? "true" : "false", f->cost_parent_ns, f->cost_child_ns);
			if (cost_err > 0)
				printf(",\"tracer_cost_error\":%.4f", cost_err);
			return;
		}
	}
}

/* The TSV's fields, as one JSON document with the footer's totals. */
static void print_json(const struct report *r, struct trace_input *in)
{
	const struct fr_stats *st = trace_stats(in);
	char repairs[512];
	fr_json_repairs(st, repairs, sizeof(repairs));
	printf("{\"events\":%llu,\"frames\":%llu,\"processes\":%zu,\"traced_ns\":%llu,\"repairs\":%s,\"functions\":[",
	       (unsigned long long)trace_events(in), (unsigned long long)st->frames, trace_nprocs(in),
	       (unsigned long long)cp_node(r->t, CP_ROOT)->total_ns, repairs);
	long k = 0; /* rows of this section so far */
	for (size_t i = 0, out = 0; i < r->nrows; i++, k++) {
		const struct fs_row *w = &r->rows[i];
		if (i && w->scope != r->rows[i - 1].scope)
			k = 0;
		if (r->limit >= 0 && k >= r->limit)
			continue;
		printf("%s\n{", out++ ? "," : "");
		if (r->scoped) {
			const struct cp_func *sf = cp_func(r->t, cp_node(r->t, w->scope)->func);
			const struct trace_proc *p = sf->owner;
			printf("\"pid\":%u,", p->info->pid);
			if (r->scoped == 2)
				printf("\"tid\":%u,", lr_thread_at(p->log, sf->id)->tid);
		}
		printf("\"func_id\":%llu,\"name\":", (unsigned long long)cp_func(r->t, w->func)->key);
		json_put_str(stdout, w->name);
		printf(",\"calls\":%llu,\"total_ns\":%llu,\"self_ns\":%llu,\"avg_ns\":%llu,\"min_ns\":%llu,"
		       "\"max_ns\":%llu",
		       (unsigned long long)w->calls, (unsigned long long)w->total, (unsigned long long)w->self,
		       (unsigned long long)fs_avg(w), (unsigned long long)(w->calls ? w->min : 0),
		       (unsigned long long)w->max);
		if (cost_err > 0)
			printf(",\"total_raw_ns\":%llu,\"self_raw_ns\":%llu,\"total_uncertain\":%s,\"self_uncertain\":%s",
			       (unsigned long long)w->raw_total, (unsigned long long)w->raw_self,
			       trace_net_uncertain(cost_err, w->total, w->raw_total) ? "true" : "false",
			       trace_net_uncertain(cost_err, w->self, w->raw_self) ? "true" : "false");
		putchar('}');
	}
	printf("\n]");
	print_json_cost(in);
	printf("}\n");
}

static void print_report(struct report *r, struct trace_input *in)
{
	if (r->nrows)
		qsort_r(r->rows, r->nrows, sizeof(*r->rows), cmp_rows, r);
	cost_err = trace_cost_err(in);
	if (r->json) {
		print_json(r, in);
		return;
	}
	char net[512];
	if (!r->tsv && trace_format_net_marked(in, net, sizeof(net)))
		printf("%s# %s%s\n", r->color ? C_DIM : "", net, r->color ? C_OFF : "");
	if (r->tsv) {
		printf("%s%sfunc_id\tname\tcalls\ttotal_ns\tself_ns\tavg_ns\tmin_ns\tmax_ns\n", r->scoped ? "pid\t" : "",
		       r->scoped == 2 ? "tid\t" : "");
	}
	for (size_t i = 0; i < r->nrows;) {
		size_t j = i;
		while (j < r->nrows && r->rows[j].scope == r->rows[i].scope)
			j++;
		if (r->tsv) {
			print_tsv(r, r->rows + i, j - i);
		} else {
			if (r->scoped) {
				if (i)
					putchar('\n');
				print_section_head(r, r->rows[i].scope);
			}
			print_table(r, r->rows + i, j - i, cp_node(r->t, r->rows[i].scope)->total_ns);
		}
		i = j;
	}
	if (!r->tsv) {
		if (!r->nrows)
			print_table(r, NULL, 0, 0);
		print_footer(r, in);
	}
}

/* ---- command line ---- */

enum { RAW_TIMES = 0x500, SRCLINE }; /* --raw-times, --srcline (long only) */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace report [OPTIONS] LOG...\n"
		"       sftrace report --diff [OPTIONS] OLD NEW\n"
		"\n"
		"Prints one row per function: total time (recursion counted once), self time\n"
		"(without the callees), calls, and the average, shortest and longest single\n"
		"call (callees included). LOG is a log file or a directory of logs; the logs of\n"
		"several processes are merged by function unless --processes or --threads.\n"
		"The table shows short names (--names full for whole ones; tsv: full), cut to\n"
		"the terminal's width; functions that share a short name share a row.\n"
		"\n"
		"options:\n"
		"  -s, --sort KEY         self (default), total, calls, avg, min, max or name\n"
		"  -n, --limit N          rows per table (default 20; 0: all)\n"
		"      --threads          one table per thread\n"
		"      --processes        one table per process\n"
		"      --format FMT       table (default), tsv or json: raw ns, every row, for\n"
		"                         scripts (fields: [pid] [tid] func_id name calls\n"
		"                         total_ns self_ns avg_ns min_ns max_ns)\n"
		"      --raw-times        times as recorded: the tracer's own cost per call,\n"
		"                         measured at start, is not taken off (the default does)\n"
		"      --srcline          each function's source file:line (DWARF) after its\n"
		"                         name in the table\n"
		"      --diff             compare two recordings OLD and NEW (logs or directories):\n"
		"                         calls, total and self per function name, old, new and\n"
		"                         change; sorted by the change in self time (-s self,\n"
		"                         total, calls or name)\n"
		"      --color WHEN       auto (default: when stdout is a terminal and NO_COLOR\n"
		"                         is unset), always or never\n"
		"  -h, --help             this help\n");
	input_opts_usage(out, 'S');
}

static int parse_sort(const char *s, enum sort_key *k)
{
	for (size_t i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++)
		if (!strcmp(s, sort_names[i])) {
			*k = (enum sort_key)i;
			return 0;
		}
	sf_error("--sort must be self, total, calls, avg, min, max or name, not '%s'", s);
	return -1;
}

/* report's own options: the report's settings and what decides the rest
 * after parsing. */
struct report_args {
	struct report r;
	const char *color, *sort_arg;
	int diff, raw_times;
};

static int report_option(void *ctx, int c, const char *arg)
{
	struct report_args *a = ctx;
	struct report *r = &a->r;
	switch (c) {
	case 's': a->sort_arg = arg; return parse_sort(arg, &r->sort);
	case 'n': {
		long v;
		if (parse_number("-n (rows; 0: all)", arg, 0, 1L << 40, &v) < 0)
			return -1;
		r->limit = v ? v : -1;
		return 0;
	}
	case 'T': r->scoped = 2; return 0;
	case 'P': if (r->scoped < 1) r->scoped = 1; return 0;
	case 'f':
		r->tsv = r->json = 0;
		if (!strcmp(arg, "tsv"))
			r->tsv = 1;
		else if (!strcmp(arg, "json"))
			r->tsv = r->json = 1;
		else if (strcmp(arg, "table")) {
			sf_error("--format must be 'table', 'tsv' or 'json', not '%s'", arg);
			return -1;
		}
		return 0;
	case 'C': return parse_color(arg, &a->color);
	case 'D': a->diff = 1; return 0;
	case RAW_TIMES: a->raw_times = 1; return 0;
	case SRCLINE: r->srcline = 1; return 0;
	default: return -1;
	}
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"sort", required_argument, 0, 's'},  {"limit", required_argument, 0, 'n'},
		{"threads", no_argument, 0, 'T'},     {"processes", no_argument, 0, 'P'},
		{"format", required_argument, 0, 'f'}, {"color", required_argument, 0, 'C'},
		{"colour", required_argument, 0, 'C'}, {"diff", no_argument, 0, 'D'},
		{"raw-times", no_argument, 0, RAW_TIMES}, {"srcline", no_argument, 0, SRCLINE},
		{0, 0, 0, 0},
	};
	struct report_args args = {.r = {.sort = SORT_SELF, .limit = -2}, .color = "auto"};
	struct report r;
	struct input_opts io;
	input_opts_init(&io, 'S');
	int rc = 1, usage_error;
	const struct cmd_opts own = {longopts, "s:n:", report_option, &args, usage, IO_PAGE_ASKED};
	switch (input_opts_parse(&io, &own, argc, argv)) {
	case IO_HELP_SHOWN: input_opts_free(&io); return 0;
	case IO_USAGE_ERROR: goto out_usage;
	}
	r = args.r;
	const char *color = args.color, *sort_arg = args.sort_arg;
	int diff = args.diff, raw_times = args.raw_times;
	if (r.limit == -2)
		r.limit = r.tsv ? -1 : 20;
	int tty = isatty(1);
	r.color = !r.tsv && (!strcmp(color, "always") || (!strcmp(color, "auto") && tty && !getenv("NO_COLOR")));
	r.width = tty && !r.tsv ? report_terminal_width() : 0;
	io.trace.short_names = input_opts_short_names(&io, !r.tsv);
	r.by_name = io.trace.short_names;
	io.trace.net_times = !raw_times;
	io.trace.raw_cut = raw_times;
	if (diff) {
		if (r.scoped) {
			sf_error("--diff compares whole recordings: --threads and --processes do not apply");
			goto out_usage;
		}
		struct report_diff_opts d = {sort_arg, r.limit,
					     r.json ? REPORT_JSON : r.tsv ? REPORT_TSV : REPORT_TABLE, r.color, r.width,
					     r.by_name};
		return report_diff(&io, argc, argv, optind, &d);
	}
	struct trace_input *in = input_opts_open(&io, "report", argc, argv, optind, NULL, 0, &usage_error);
	if (!in) {
		if (usage_error)
			goto out_usage;
		goto out;
	}
	r.t = cp_new();
	enum cp_levels levels = r.scoped == 2 ? CP_BY_THREAD : r.scoped == 1 ? CP_BY_PROCESS : CP_FLAT;
	if (cp_collect(r.t, in, levels) == 0) {
		r.rows = fs_aggregate(r.t, r.by_name, &r.nrows);
		print_report(&r, in);
		rc = input_opts_end_output(&io, 1, "the report");
	}
	input_opts_pager_done(&io);
	trace_report_repairs(in);
	free(r.rows);
	cp_free(r.t);
	trace_close(in);
out:
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "report");
}
