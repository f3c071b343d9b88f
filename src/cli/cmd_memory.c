/* sftrace memory: heap analysis of a log recorded with --alloc (or by a
 * setup-ABI program): peak heap and the stacks holding it, top allocation
 * sites, temporary allocations, leaks per stack and per milestone stage,
 * and an interactive prompt (track, show, stage-memory). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <inttypes.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
#include "format/sflog.h"
#include "lib/callpath.h"
#include "lib/heap.h"
#include "lib/json_out.h"
#include "lib/outfile.h"
#include "lib/text_esc.h"
#include "lib/util.h"
#include "output/flamegraph.h"
#include "output/heap_plot.h"

enum { FMT_TABLE, FMT_TSV, FMT_JSON };

struct mem_opts {
	const char *milestone;
	const char *flamegraph;
	const char *plot;
	int fold;
	const char *select;  /* comma-separated stage numbers */
	int format; /* FMT_* */
	int interactive;
	long top;
};

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
		"                         and the flame graph; with --fold, the stages plotted\n"
		"      --flamegraph OUT.svg  leaked bytes by traced stack, as an interactive\n"
		"                         flame graph (what is live at the end)\n"
		"      --plot OUT.svg|OUT.html  heap size over time, stage starts and the peak\n"
		"      --fold             plot each stage from its own start, overlaid\n"
		"  -n N                   rows per table (default 10, 0 = all)\n"
		"      --format table|tsv|json  tsv: key<TAB>value summary lines, then rows\n"
		"                         section<TAB>stage<TAB>bytes<TAB>count<TAB>stack;\n"
		"                         json: one document with the same values\n"
		"      --interactive      then read commands on stdin: track ID, show ID,\n"
		"                         stage-memory, exit\n"
		"  -h, --help             this help\n");
	input_opts_usage(out, 's');
}

/* ---- stacks ---- */

static void stack_str(const struct heap_result *r, uint32_t node, uint64_t site, char *buf, size_t cap)
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
		snprintf(buf + len, cap - len, " @ %s [0x%" PRIx64 "]", si->name, vaddr);
	else if (site)
		snprintf(buf + len, cap - len, " @ 0x%" PRIx64, site);
}

static const struct heap_result *sort_r;
static int sort_key;
enum { BY_BYTES, BY_COUNT, BY_PEAK, BY_LEAK, BY_TEMP };

static uint64_t key_of(const struct heap_site *s)
{
	switch (sort_key) {
	case BY_BYTES: return s->bytes;
	case BY_COUNT: return s->allocs;
	case BY_PEAK: return s->peak_bytes;
	case BY_LEAK: return s->leak_bytes;
	default: return s->temporaries;
	}
}

static int cmp_sites(const void *a, const void *b)
{
	const struct heap_site *x = &sort_r->sites[*(const uint32_t *)a], *y = &sort_r->sites[*(const uint32_t *)b];
	uint64_t kx = key_of(x), ky = key_of(y);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void human(uint64_t v, char *buf, size_t cap)
{
	heap_format_bytes(buf, cap, (double)v);
}

/* One table: sites sorted by `key`, rows with a nonzero key only. tsv and
 * json have every row; json's `section` names the array. */
static void table(const struct heap_result *r, int key, const char *title, const char *section, long top, int fmt)
{
	int tsv = fmt != FMT_TABLE;
	uint32_t *ix = xmalloc((r->nsites + 1) * sizeof(*ix));
	for (size_t i = 0; i < r->nsites; i++)
		ix[i] = (uint32_t)i;
	sort_r = r;
	sort_key = key;
	qsort(ix, r->nsites, sizeof(*ix), cmp_sites);
	char stack[8192], hb[32];
	size_t shown = 0, rest = 0;
	if (fmt == FMT_JSON)
		printf(",\n\"%s\":[", section);
	else if (!tsv)
		printf("\n%s\n%12s %10s  %s\n", title, "bytes", key == BY_TEMP ? "temporary" : "blocks", "stack @ call site");
	for (size_t i = 0; i < r->nsites; i++) {
		const struct heap_site *s = &r->sites[ix[i]];
		if (!key_of(s))
			break;
		if (!tsv && top && shown == (size_t)top) {
			rest++;
			continue;
		}
		uint64_t bytes = key == BY_BYTES || key == BY_COUNT ? s->bytes
				 : key == BY_PEAK			   ? s->peak_bytes
				 : key == BY_LEAK			   ? s->leak_bytes
									   : 0;
		uint64_t count = key == BY_BYTES || key == BY_COUNT ? s->allocs
				 : key == BY_PEAK			   ? s->peak_blocks
				 : key == BY_LEAK			   ? s->leak_blocks
									   : s->temporaries;
		stack_str(r, s->node, s->addr, stack, sizeof(stack));
		if (fmt == FMT_JSON) {
			printf("%s\n{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"stack\":", shown ? "," : "", bytes,
			       count);
			json_put_str(stdout, stack);
			putchar('}');
		} else if (tsv) {
			printf("%s\t-\t%" PRIu64 "\t%" PRIu64 "\t%s\n", section, bytes, count, sf_esc(stack));
		} else {
			human(bytes, hb, sizeof(hb));
			printf("%12s %10" PRIu64 "  %s\n", key == BY_TEMP ? "" : hb, count, sf_esc(stack));
		}
		shown++;
	}
	if (fmt == FMT_JSON)
		printf("%s]", shown ? "\n" : "");
	if (!tsv && !shown)
		printf("%12s\n", "(none)");
	if (rest)
		printf("... %zu more (-n 0 shows all)\n", rest);
	free(ix);
}

/* The tsv's values as one JSON object: "summary" has the tsv's keys, the
 * arrays its sections (every row), with the sites also by count as in the
 * table. */
/* Tables show times since the process's start (results are on the
 * recording's time base). */
static uint64_t since_start(const struct heap_result *r, uint64_t t)
{
	return t > r->proc->start_ns ? t - r->proc->start_ns : 0;
}

static void report_json(const struct heap_result *r)
{
	const struct heap_totals *t = &r->tot;
	printf("{\"pid\":%u,\"process\":", r->proc->info->pid);
	json_put_str(stdout, r->proc->name);
	printf(",\"summary\":{\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"reallocs\":%" PRIu64
	       ",\"bytes_allocated\":%" PRIu64 ",\"temporary\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
	       ",\"peak_blocks\":%" PRIu64 ",\"peak_time_ns\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64
	       ",\"leaked_blocks\":%" PRIu64 ",\"unmatched_frees\":%" PRIu64 ",\"stages\":%zu},\n\"stages\":[",
	       t->allocs, t->frees, t->reallocs, t->bytes, t->temporaries, t->peak_bytes, t->peak_blocks,
	       since_start(r, t->peak_time), t->leak_bytes, t->leak_blocks, t->unmatched_frees, r->nstages);
	for (size_t s = 0; s < r->nstages; s++) {
		const struct heap_stage *st = &r->stages[s];
		printf("%s\n{\"stage\":%zu,\"start_ns\":%" PRIu64 ",\"allocations\":%" PRIu64
		       ",\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64 ",\"heap_at_end\":%" PRIu64 "}",
		       s ? "," : "", s, since_start(r, st->t_start), st->allocs, st->leak_bytes, st->leak_blocks,
		       st->heap_at_end);
	}
	printf("%s]", r->nstages ? "\n" : "");
	table(r, BY_PEAK, "", "peak", 0, FMT_JSON);
	table(r, BY_BYTES, "", "sites_by_bytes", 0, FMT_JSON);
	table(r, BY_COUNT, "", "sites_by_count", 0, FMT_JSON);
	table(r, BY_TEMP, "", "temporary", 0, FMT_JSON);
	table(r, BY_LEAK, "", "leak", 0, FMT_JSON);
	printf("}");
}

static void report(const struct heap_result *r, const struct mem_opts *o, int several)
{
	const struct heap_totals *t = &r->tot;
	if (o->format == FMT_JSON) {
		report_json(r);
		return;
	}
	if (o->format == FMT_TSV) {
		if (several)
			printf("process\t%u\t%s\n", r->proc->info->pid, sf_esc(r->proc->name));
		printf("allocations\t%" PRIu64 "\nfrees\t%" PRIu64 "\nreallocs\t%" PRIu64 "\nbytes_allocated\t%" PRIu64
		       "\ntemporary\t%" PRIu64 "\npeak_bytes\t%" PRIu64 "\npeak_blocks\t%" PRIu64
		       "\npeak_time_ns\t%" PRIu64 "\nleaked_bytes\t%" PRIu64 "\nleaked_blocks\t%" PRIu64
		       "\nunmatched_frees\t%" PRIu64 "\nstages\t%zu\n",
		       t->allocs, t->frees, t->reallocs, t->bytes, t->temporaries, t->peak_bytes, t->peak_blocks,
		       since_start(r, t->peak_time), t->leak_bytes, t->leak_blocks, t->unmatched_frees, r->nstages);
		for (size_t s = 0; s < r->nstages; s++)
			printf("stage_leak\t%zu\t%" PRIu64 "\t%" PRIu64 "\t-\nstage_heap\t%zu\t%" PRIu64 "\t%" PRIu64
			       "\t-\n",
			       s, r->stages[s].leak_bytes, r->stages[s].leak_blocks, s, r->stages[s].heap_at_end,
			       r->stages[s].allocs);
		table(r, BY_BYTES, "", "site", 0, FMT_TSV);
		table(r, BY_PEAK, "", "peak", 0, FMT_TSV);
		table(r, BY_LEAK, "", "leak", 0, FMT_TSV);
		table(r, BY_TEMP, "", "temporary", 0, FMT_TSV);
		return;
	}
	char a[32], b[32], c[32];
	if (several)
		printf("\n== process %u (%s)\n", r->proc->info->pid, sf_esc(r->proc->cmdline));
	human(t->bytes, a, sizeof(a));
	human(t->peak_bytes, b, sizeof(b));
	human(t->leak_bytes, c, sizeof(c));
	printf("%" PRIu64 " allocations (%s), %" PRIu64 " frees, %" PRIu64 " reallocs, %" PRIu64 " temporary\n",
	       t->allocs, a, t->frees, t->reallocs, t->temporaries);
	printf("peak heap %s in %" PRIu64 " blocks at %.3f ms; %s in %" PRIu64 " blocks live at the end%s\n", b,
	       t->peak_blocks, (double)since_start(r, t->peak_time) / 1e6, c, t->leak_blocks,
	       r->proc->info->state == SF_STATE_EXITED ? "" : " (the process did not exit normally)");
	if (t->unmatched_frees)
		printf("%" PRIu64 " frees of blocks allocated before recording began were ignored\n",
		       t->unmatched_frees);
	table(r, BY_PEAK, "Held at the peak:", "peak", o->top, 0);
	table(r, BY_BYTES, "Top allocation sites by bytes:", "site", o->top, 0);
	table(r, BY_COUNT, "Top allocation sites by count:", "site", o->top, 0);
	table(r, BY_TEMP, "Temporary allocations:", "temporary", o->top, 0);
	table(r, BY_LEAK, o->select ? "Live at the end (selected stages):" : "Live at the end (leaks):", "leak",
	      o->top, 0);
	if (r->nstages > 1) {
		printf("\n%5s %12s %10s %12s %10s %12s\n", "stage", "start", "allocs", "leaked", "blocks",
		       "heap at end");
		for (size_t s = 0; s < r->nstages; s++) {
			const struct heap_stage *st = &r->stages[s];
			human(st->leak_bytes, a, sizeof(a));
			human(st->heap_at_end, b, sizeof(b));
			printf("%5zu %9.3f ms %10" PRIu64 " %12s %10" PRIu64 " %12s\n", s,
			       (double)since_start(r, st->t_start) / 1e6, st->allocs, a, st->leak_blocks, b);
		}
	}
}

/* ---- milestones ---- */

static uint8_t *milestone_map(const struct trace_proc *p, const char *spec, pcre2_code *re, size_t *n, size_t *hits)
{
	uint32_t maxid = 0;
	for (size_t i = 0; i < lr_nobjects(p->log); i++) {
		const struct lr_object *ob = lr_object_at(p->log, i);
		if (ob->first_id + ob->count > maxid)
			maxid = ob->first_id + ob->count;
	}
	uint8_t *m = xcalloc(maxid + 1, 1);
	pcre2_match_data *md = re ? pcre2_match_data_create_from_pattern(re, NULL) : NULL;
	for (size_t i = 0; i < lr_nobjects(p->log); i++) {
		const struct lr_object *ob = lr_object_at(p->log, i);
		for (uint32_t id = ob->first_id; id < ob->first_id + ob->count; id++) {
			const struct sym_info *si = trace_symbol(p, id);
			int hit = !strcmp(si->name, spec) || (si->mangled && !strcmp(si->mangled, spec));
			if (!hit && re)
				hit = pcre2_match(re, (PCRE2_SPTR)si->name, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >= 0;
			if (hit) {
				m[id] = 1;
				(*hits)++;
			}
		}
	}
	if (md)
		pcre2_match_data_free(md);
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
			stack_str(&tmp, e->node, e->site_addr, stack, sizeof(stack));
			printf("%" PRIu64 " %s\ttid:%u\tsize:%" PRIu64 "\t%s\n", e->id, kind_str(e->kind), e->tid, e->size,
			       sf_esc(stack));
			f->found = 1;
		}
		return 0;
	}
	if (e->id != f->id)
		return 0;
	stack_str(&tmp, e->node, e->site_addr, stack, sizeof(stack));
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

/* One frame per traced function of each leaking site's stack, the innermost
 * lasting its bytes: the tree's totals are the leaked bytes by stack. */
static int leak_flamegraph(struct trace_input *in, const struct heap_result *res, size_t np, const char *out)
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

int cmd_memory(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"milestone", required_argument, 0, 'm'}, {"select", required_argument, 0, 'S'},
		{"format", required_argument, 0, 'f'},    {"interactive", no_argument, 0, 'i'},
		{"flamegraph", required_argument, 0, 'g'}, {"plot", required_argument, 0, 'p'},
		{"fold", no_argument, 0, 'F' + 256},
		{"help", no_argument, 0, 'h'},            INPUT_LONGOPTS('s'),
		{0, 0, 0, 0},
	};
	struct mem_opts o = {.top = 10};
	struct input_opts io;
	input_opts_init(&io, 's');
	int c, rc = 1, usage_error;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:s:c:qh", longopts, NULL)) != -1) {
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
		case 'F' + 256: o.fold = 1; break;
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
	if (cut_active(&io.trace.cut)) {
		/* A heap replay needs every allocation and free: a cut would
		 * leave frees without their allocations. */
		sf_error("memory replays the whole heap: -c/--filter, --tid, --time, --min-duration and --max-depth "
			 "do not apply");
		goto out_usage;
	}
	struct trace_input *in = input_opts_open(&io, "memory", argc, argv, optind, NULL, 0, &usage_error);
	if (!in) {
		if (usage_error)
			goto out_usage;
		goto out;
	}
	pcre2_code *re = NULL;
	if (o.milestone) {
		int ec;
		PCRE2_SIZE eo;
		re = pcre2_compile((PCRE2_SPTR)o.milestone, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
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
				if (re)
					pcre2_code_free(re);
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
			maps[i] = milestone_map(trace_proc_at(in, i), o.milestone, re, &ho.nmilestone, &hits);
			ho.milestone = maps[i];
		}
		heap_replay(in, i, &ho, &res[i]);
		events += res[i].tot.events;
	}
	if (o.milestone && !hits) {
		sf_error("--milestone '%s' matches no instrumented function of %s", o.milestone,
			 trace_proc_at(in, 0)->log ? argv[optind] : "the logs");
	} else if (!events) {
		sf_error("%s: no allocation events: record with --alloc", argv[optind]);
	} else {
		if (o.flamegraph && leak_flamegraph(in, res, np, o.flamegraph) < 0)
			goto done;
		struct heap_plot_options po = {.out = o.plot, .fold = o.fold, .select = sel, .nselect = sizeof(selbuf)};
		if (o.plot && heap_plot_write(res, np, &po) < 0)
			goto done;
		/* json: one document; with several processes, their objects in a list */
		int list = o.format == FMT_JSON && np > 1;
		if (list)
			printf("{\"processes\":[\n");
		for (size_t i = 0; i < np; i++) {
			if (list && i)
				printf(",\n");
			if (o.interactive && i == 0)
				report(&res[i], &o, np > 1), fflush(stdout), interactive(in, i, &res[i]);
			else
				report(&res[i], &o, np > 1);
		}
		if (list)
			printf("\n]}");
		if (o.format == FMT_JSON)
			printf("\n");
		rc = 0;
	}
done:
	for (size_t i = 0; i < np; i++) {
		heap_result_free(&res[i]);
		free(maps[i]);
	}
	free(res);
	free(maps);
	if (re)
		pcre2_code_free(re);
	trace_report_repairs(in);
	trace_close(in);
out:
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "memory");
}
