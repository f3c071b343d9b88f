/* sftrace info: what a recording holds, per process, as uftrace's info
 * does: the command, pid and ppid, start time, machine and clock, how the
 * process ended, the recording's options as the log keeps them (ring,
 * record-time trims, patched sleds against the sleds there are, allocation
 * events), each object (path, build-id, sleds), each thread, the counters
 * (events, frames, dropped, lost, write errors, --ring's events of exited
 * threads overwritten by later threads, repairs) and the log's size
 * and bytes per event. --format json gives the same fields.
 *
 * One pass over the events (trace_run) counts frames, repairs (the
 * pipeline's, per process) and allocation events; the rest is the log's
 * header. */
#include <elf.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
#include "format/run_budget.h"
#include "format/sflog.h"
#include "lib/heap.h"
#include "lib/json_out.h"
#include "lib/log_symbols.h"
#include "lib/snap_requests.h"
#include "lib/text_esc.h"
#include "lib/trace_input.h"
#include "lib/util.h"

/* Counted per process by the pass: the frames a cut keeps (all without
 * one); its frames and repairs as recorded are trace_proc_stats, the
 * counts report's footer and every command's "repaired: ..." notice sum. */
struct proc_count {
	uint64_t frames, alloc_events;
};

struct info {
	struct proc_count *count; /* by process index */
	int json;
	const struct trace_input *in;
};

static int on_begin(void *ctx, const struct fr_frame *f)
{
	struct info *in = ctx;
	in->count[f->proc->index].frames++;
	return 0;
}

static int on_alloc(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	(void)ev;
	struct info *in = ctx;
	in->count[p->index].alloc_events++;
	return 0;
}

/* How the process ended, as truthfully as the log knows
 * (docs/FORMAT.md "Exit state"): the kernel's wait status when record
 * reaped it, the code it gave _exit or exit, else the header's state. */
static void exit_state(const struct info *inf, const struct trace_proc *p, char *buf, size_t len)
{
	const struct lr_info *i = p->info;
	uint32_t src = (uint32_t)(i->exit_state >> 32), st = (uint32_t)i->exit_state;
	if (i->snapshot) {
		snprintf(buf, len, "running (a snapshot, taken while it ran)");
	} else if (src == SF_EXIT_REAPED && WIFEXITED(st)) {
		snprintf(buf, len, "exited %d", WEXITSTATUS(st));
	} else if (src == SF_EXIT_REAPED && WIFSIGNALED(st)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(st));
		snprintf(buf, len, "killed by %s%s (signal %d)%s", abbrev ? "SIG" : "", abbrev ? abbrev : "a signal",
			 WTERMSIG(st), WCOREDUMP(st) ? ", core dumped" : "");
	} else if (src == SF_EXIT_CALLED) {
		snprintf(buf, len, "exited %d (_exit)", WEXITSTATUS(st));
	} else if (src == SF_EXIT_EXITED) {
		snprintf(buf, len, "exited %d (exit, or main's return)", WEXITSTATUS(st));
	} else if (src == SF_EXIT_EXECD) {
		snprintf(buf, len, "exec'd (the same pid's next log is its new image)");
	} else if (src) {
		snprintf(buf, len, "unknown (exit record %#" PRIx64 " not understood)", i->exit_state);
	} else if (i->state == SF_STATE_EXITED) {
		/* exit() or a return from main ran the runtime's destructor;
		 * the code is known only to the process's parent. */
		snprintf(buf, len, "exited (code not recorded: its parent was not sftrace record)");
	} else {
		/* An image whose exit hooks never ran, with a later log of the
		 * same pid among those read, went on as that log's image. */
		for (size_t k = 0; k < trace_nprocs(inf->in); k++) {
			const struct trace_proc *q = trace_proc_at(inf->in, k);
			if (q->index > p->index && q->info->pid == p->info->pid) {
				snprintf(buf, len, "exec'd (the same pid's next log is its new image)");
				return;
			}
		}
		snprintf(buf, len, "unknown (no exit record: running, or it died and sftrace record did not reap it)");
	}
}

static const char *machine_name(uint32_t m)
{
	return m == EM_AARCH64 ? "aarch64" : m == EM_X86_64 || m == 0 ? "x86-64" : "unknown";
}

static const char *clock_name(const struct lr_info *i)
{
	if (i->clock == SF_CLOCK_MONOTONIC)
		return "CLOCK_MONOTONIC ns";
	if (i->clock == SF_CLOCK_TSC)
		return i->machine == EM_AARCH64 ? "cntvct_el0" : "tsc";
	return "unknown";
}

/* The process's own start: a forked child's is its fork, not the start
 * words it copied from its parent. */
static void format_start(const struct lr_log *log, char *buf, size_t len)
{
	uint64_t ns = lr_start_realtime_ns(log);
	time_t sec = (time_t)(ns / 1000000000u);
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, len, "%s.%09" PRIu64 " UTC", when, ns % 1000000000u);
}

static void build_id_hex(const struct lr_object *o, char *buf)
{
	if (!o->build_id_len) {
		strcpy(buf, "none");
		return;
	}
	for (unsigned k = 0; k < o->build_id_len; k++)
		sprintf(buf + 2 * k, "%02x", o->build_id[k]);
}

static void sleds(const struct lr_log *log, uint64_t *total, uint64_t *patched)
{
	*total = *patched = 0;
	for (size_t i = 0; i < lr_nobjects(log); i++) {
		*total += lr_object_at(log, i)->sleds;
		*patched += lr_object_at(log, i)->patched;
	}
}

/* ---- aliases (identical code folding) ---- */

struct alias_out {
	int json;
	size_t n;
	const char *shown; /* the name outputs use (a filter may have chosen an alias) */
};

static void put_alias(void *ctx, const char *mangled, const char *demangled)
{
	(void)mangled;
	struct alias_out *a = ctx;
	if (!strcmp(demangled, a->shown))
		return;
	if (a->json) {
		fputs(a->n++ ? "," : "", stdout);
		json_put_str(stdout, demangled);
	} else {
		printf("%s%s", a->n++ ? ", " : "", sf_esc(demangled));
	}
}

/* Each function of object o with other names: the name outputs use, then
 * the others (text: one line each; json: [{"name":..,"aliases":[..]}]). */
static void put_aliases(const struct trace_proc *p, const struct lr_object *o, int json)
{
	size_t shown = 0;
	for (uint32_t k = 0; k < o->count; k++) {
		uint32_t id = o->first_id + k;
		if (!ls_aliases(p->syms, id, NULL, NULL))
			continue;
		struct alias_out a = {json, 0, trace_symbol(p, id)->name};
		if (json) {
			printf("%s{\"name\":", shown++ ? "," : "");
			json_put_str(stdout, trace_symbol(p, id)->name);
			printf(",\"aliases\":[");
			ls_aliases(p->syms, id, put_alias, &a);
			printf("]}");
		} else {
			printf("#       alias: %s = ", sf_esc(trace_symbol(p, id)->name));
			ls_aliases(p->syms, id, put_alias, &a);
			putchar('\n');
		}
	}
}

static const char *truncation(const struct lr_log *log)
{
	switch (lr_truncated(log)) {
	case 1: return " (log truncated: the file ends inside a chunk)";
	case 2: return " (log truncated: the file ends before chunks the runtime wrote)";
	default: return "";
	}
}

/* ---- text ---- */

#define KEY "# %-18s: "

/* Why fewer sleds than the objects have were patched. */
static const char *why_unpatched(const struct lr_info *i, uint64_t patched, uint64_t total)
{
	if (patched >= total)
		return "";
	if (!i->options_known)
		return " (a filter, or objects loaded late)";
	return i->filter[0] ? " (the filter)" : " (objects loaded late, or tracing paused)";
}

/* "filter" and "max size": what record was given, as the log says. */
static void put_options(const struct lr_info *i)
{
	if (!i->options_known) {
		printf(KEY "not recorded (an older log)\n" KEY "not recorded (an older log)\n", "filter", "max size");
		return;
	}
	if (i->filter[0])
		printf(KEY "%s (%u function%s selected)\n", "filter", sf_esc(i->filter), i->filter_funcs,
		       i->filter_funcs == 1 ? "" : "s");
	else
		printf(KEY "none\n", "filter");
	if (i->max_size) {
		char size[32];
		heap_format_bytes(size, sizeof(size), (double)i->max_size);
		printf(KEY "%" PRIu64 " bytes (%s), %s%s\n", "max size", i->max_size, size,
		       i->max_size_reached ? "reached: recording stopped there" : "not reached",
		       i->max_size < SF_BUDGET_MIN_EVENTS ? " (below a log's header and one thread's buffer, which "
							    "the cap counts whole: at least " SF_BUDGET_MIN_TEXT
							    " plus the objects' chunks records events)"
							  : "");
	} else {
		printf(KEY "none\n", "max size");
	}
}

/* "snapshots: N requests: M written, K not taken (why)": the same
 * accounting as record's summary (snap_requests.h), every request once. */
static void put_snapshot_requests(const struct lr_info *i)
{
	struct snap_requests r;
	snap_requests_of(i, &r);
	printf(KEY "%" PRIu64 " request%s: %" PRIu64 " written", "snapshots", r.all, r.all == 1 ? "" : "s", r.written);
	if (r.busy)
		printf(", %" PRIu64 " not taken (a snapshot was being written)", r.busy);
	if (r.merged)
		printf(", %" PRIu64 " not taken (asked by sftrace snapshot, the process ended first)", r.merged);
	if (r.over_max)
		printf(", %" PRIu64 " not taken (--max-snapshots reached)", r.over_max);
	if (r.unwritten)
		printf(", %" PRIu64 " not written (the process ended, or a write failed, first)", r.unwritten);
	printf("\n");
}

/* "repaired": the two kinds every run can have, then each other kind
 * the process has (a snapshot's always): the counts of the other
 * commands' "repaired: ..." notice, per process. */
static void put_repairs(const struct lr_info *i, const struct fr_stats *r)
{
	printf(KEY "%" PRIu64 " frames closed by unwinding, %" PRIu64 " open at thread end", "repaired", r->unwound,
	       r->open_at_end);
	if (r->open_at_pause)
		printf(", %" PRIu64 " in flight at a pause", r->open_at_pause);
	if (i->snapshot) /* the threads went on: their window ended */
		printf(", %" PRIu64 " open at the snapshot's end", r->open_at_snapshot);
	if (r->before_window)
		printf(", %" PRIu64 " began before the ring's window", r->before_window);
	if (r->unmatched_exits)
		printf(", %" PRIu64 " unmatched exit%s dropped", r->unmatched_exits, r->unmatched_exits == 1 ? "" : "s");
	if (r->clamped)
		printf(", %" PRIu64 " backward timestamp%s raised", r->clamped, r->clamped == 1 ? "" : "s");
	printf("\n");
}

static void text_proc(const struct info *inf, const struct trace_proc *p)
{
	const struct lr_info *i = p->info;
	const struct proc_count *c = &inf->count[p->index];
	const struct fr_stats *r = trace_proc_stats(p);
	struct lr_summary s;
	lr_summary(p->log, &s);
	char start[96];
	format_start(p->log, start, sizeof(start));
	uint64_t total_sleds, patched;
	sleds(p->log, &total_sleds, &patched);
	printf("%s# process %u\n# ===============\n", p->index ? "\n" : "", i->pid);
	printf(KEY "%s%s\n", "cmdline", sf_esc(p->cmdline), i->cmdline_truncated ? " [truncated]" : "");
	printf(KEY "%u\n" KEY "%u\n", "pid", i->pid, "ppid", i->ppid);
	printf(KEY "%s\n", "started", start);
	printf(KEY "%s\n", "machine", machine_name(i->machine));
	printf(KEY "%s\n", "clock", clock_name(i));
	if (i->cost_known)
		printf(KEY "%.1f ns per call in the caller, %.1f ns in the call (measured at start; "
		       "report, replay and graph take it off)\n", "tracer cost", i->cost_parent_ns, i->cost_child_ns);
	if (i->cost_known && i->cost_err > 0)
		printf(KEY "within %.1f%% (its rounds at start and exit; a net figure that this makes uncertain by "
		       "more than 10%% is shown as recorded, marked <)\n", "cost spread", 100 * i->cost_err);
	if (i->cost_known && i->cost_exit_known)
		printf(KEY "%.1f ns per call in the caller, %.1f ns in the call (measured again at exit)\n",
		       "cost at exit", i->cost_exit_parent_ns, i->cost_exit_child_ns);
	else if (!i->cost_known)
		printf(KEY "not measured (times are read as recorded)\n", "tracer cost");
	/* A cut log's header still says how the run ended, not where the events stop. */
	char how[160];
	exit_state(inf, p, how, sizeof(how));
	printf(KEY "%s%s\n", "exit state", how, truncation(p->log));
	printf(KEY "%" PRIu64 " of %" PRIu64 "%s\n", "sleds patched", patched, total_sleds,
	       why_unpatched(i, patched, total_sleds));
	put_options(i);
	if (i->ring_bytes)
		printf(KEY "%" PRIu64 " bytes per thread\n", "ring", i->ring_bytes);
	else
		printf(KEY "off\n", "ring");
	if (i->ring_bytes && !i->snapshot)
		put_snapshot_requests(i);
	if (i->resumes || i->pauses)
		printf(KEY "%u resume%s, %u pause%s (record --paused: frames in flight at a pause end there)\n",
		       "switched", i->resumes, i->resumes == 1 ? "" : "s", i->pauses, i->pauses == 1 ? "" : "s");
	if (i->trim_min_ns || i->trim_max_depth)
		printf(KEY "min duration %" PRIu64 " ns, max depth %u (0: off), %" PRIu64 " records left out\n",
		       "trims", i->trim_min_ns, i->trim_max_depth, i->trimmed_records);
	else
		printf(KEY "off\n", "trims");
	printf(KEY "%s (%" PRIu64 " events)\n", "allocations", c->alloc_events ? "recorded" : "none",
	       c->alloc_events);
	printf(KEY "%zu\n", "objects", lr_nobjects(p->log));
	for (size_t k = 0; k < lr_nobjects(p->log); k++) {
		const struct lr_object *o = lr_object_at(p->log, k);
		char bid[132];
		build_id_hex(o, bid);
		printf("#   [%u] %s%s\n#       build-id %s, sleds %u, patched %u, functions %u\n", o->index,
		       sf_esc(o->path), o->flags & SF_OBJ_MAIN ? " (main)" : o->flags & SF_OBJ_DLOPEN ? " (dlopen)" : "",
		       bid, o->sleds, o->patched, o->count);
		put_aliases(p, o, 0);
	}
	printf(KEY "%zu\n", "threads", lr_nthreads(p->log));
	for (size_t k = 0; k < lr_nthreads(p->log); k++) {
		const struct lr_thread *t = lr_thread_at(p->log, k);
		printf("#   tid %u %s: %" PRIu64 " events\n", t->tid, t->name[0] ? sf_esc(t->name) : "-", t->events);
	}
	printf(KEY "%" PRIu64 "\n" KEY "%" PRIu64, "events", s.events, "frames", r->frames);
	if (trace_cut_stats(inf->in)) /* as report's "cut: kept N of M calls" */
		printf(" (%" PRIu64 " kept by the cut)", c->frames);
	printf("\n");
	printf(KEY "%" PRIu64 " dropped, %" PRIu64 " lost, %" PRIu64 " write errors", "losses", s.dropped, s.lost,
	       s.write_errors);
	/* Not in "lost" (records missing from the threads' kept batches): the
	 * header's one count for the process (docs/FORMAT.md ring_reused). */
	if (i->ring_bytes)
		printf(", %" PRIu64 " overwritten by later threads' rings", i->ring_reused);
	printf("\n");
	put_repairs(i, r);
	printf(KEY "%" PRIu64 " bytes (%.1f bytes per event)\n", "log", i->file_size,
	       s.events ? (double)i->file_size / (double)s.events : 0.0);
	printf(KEY "%s\n", "log path", sf_esc(i->path));
}

/* ---- json ---- */

static void json_kv_str(const char *k, const char *v)
{
	printf("\"%s\":", k);
	json_put_str(stdout, v);
	putchar(',');
}

/* "snapshot_requests": {all, written, busy, merged, over_max, unwritten},
 * or null for a log without a ring (or a snapshot's own log). */
static void json_snapshot_requests(const struct lr_info *i)
{
	struct snap_requests r;
	if (!i->ring_bytes || i->snapshot) {
		printf("\"snapshot_requests\":null,");
		return;
	}
	snap_requests_of(i, &r);
	printf("\"snapshot_requests\":{\"all\":%" PRIu64 ",\"written\":%" PRIu64 ",\"busy\":%" PRIu64
	       ",\"merged\":%" PRIu64 ",\"over_max\":%" PRIu64 ",\"unwritten\":%" PRIu64 "},",
	       r.all, r.written, r.busy, r.merged, r.over_max, r.unwritten);
}

/* "exit_code": N or null, "exit_signal": "SIGTERM" or null, "exit_seen_by":
 * "record" (its wait status), "runtime" (the code given to _exit or exit) or null. */
static void json_exit_fields(const struct lr_info *i)
{
	uint32_t src = (uint32_t)(i->exit_state >> 32), st = (uint32_t)i->exit_state;
	int known = !i->snapshot && (src == SF_EXIT_REAPED || src == SF_EXIT_CALLED || src == SF_EXIT_EXITED);
	if (known && WIFEXITED(st))
		printf("\"exit_code\":%d,\"exit_signal\":null,", WEXITSTATUS(st));
	else if (known && src == SF_EXIT_REAPED && WIFSIGNALED(st))
		printf("\"exit_code\":null,\"exit_signal\":\"SIG%s\",",
		       sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
	else
		printf("\"exit_code\":null,\"exit_signal\":null,");
	printf("\"exit_seen_by\":%s,", !known ? "null" : src == SF_EXIT_REAPED ? "\"record\"" : "\"runtime\"");
}

/* "filter": "-f PATH" or null, "filter_functions", "max_size": bytes or
 * null, "max_size_reached"; all null in an older log, which does not say. */
static void json_options(const struct lr_info *i)
{
	if (!i->options_known) {
		printf("\"filter\":null,\"filter_functions\":null,\"max_size\":null,\"max_size_reached\":null,");
		return;
	}
	if (i->filter[0]) {
		json_kv_str("filter", i->filter);
		printf("\"filter_functions\":%u,", i->filter_funcs);
	} else {
		printf("\"filter\":null,\"filter_functions\":null,");
	}
	if (i->max_size)
		printf("\"max_size\":%" PRIu64 ",\"max_size_reached\":%s,", i->max_size,
		       i->max_size_reached ? "true" : "false");
	else
		printf("\"max_size\":null,\"max_size_reached\":null,");
}

static void json_proc(const struct info *inf, const struct trace_proc *p)
{
	const struct lr_info *i = p->info;
	const struct proc_count *c = &inf->count[p->index];
	const struct fr_stats *r = trace_proc_stats(p);
	char repairs[512];
	fr_json_repairs(r, repairs, sizeof(repairs));
	struct lr_summary s;
	lr_summary(p->log, &s);
	char start[96];
	format_start(p->log, start, sizeof(start));
	uint64_t total_sleds, patched;
	sleds(p->log, &total_sleds, &patched);
	printf("%s\n{", p->index ? "," : "");
	json_kv_str("cmdline", p->cmdline);
	printf("\"argv\":[");
	for (int a = 0; a < i->argc; a++) {
		if (a)
			putchar(',');
		json_put_str(stdout, i->argv[a]);
	}
	printf("],\"pid\":%u,\"ppid\":%u,\"start_realtime_ns\":%" PRIu64 ",", i->pid, i->ppid,
	       lr_start_realtime_ns(p->log));
	json_kv_str("started", start);
	json_kv_str("machine", machine_name(i->machine));
	json_kv_str("clock", clock_name(i));
	char how[160];
	exit_state(inf, p, how, sizeof(how));
	json_kv_str("exit_state", how);
	json_exit_fields(p->info);
	printf("\"truncated\":%s,", lr_truncated(p->log) ? "true" : "false");
	if (i->cost_known) {
		printf("\"tracer_cost_ns\":{\"caller\":%.1f,\"call\":%.1f},\"tracer_cost_error\":%.4f,", i->cost_parent_ns,
		       i->cost_child_ns, i->cost_err);
		if (i->cost_spread_raw256)
			printf("\"tracer_cost_spread_ns\":{\"low\":%.1f,\"high\":%.1f},", i->cost_lo_ns, i->cost_hi_ns);
		else
			printf("\"tracer_cost_spread_ns\":null,");
		if (i->cost_exit_known)
			printf("\"tracer_cost_exit_ns\":{\"caller\":%.1f,\"call\":%.1f},", i->cost_exit_parent_ns,
			       i->cost_exit_child_ns);
		else
			printf("\"tracer_cost_exit_ns\":null,");
	} else
		printf("\"tracer_cost_ns\":null,");
	printf("\"sleds\":%" PRIu64 ",\"sleds_patched\":%" PRIu64 ",\"ring_bytes\":%" PRIu64 ",\"trim_min_ns\":%" PRIu64
	       ",\"trim_max_depth\":%u,\"trimmed_records\":%" PRIu64 ",\"alloc_events\":%" PRIu64 ",", 
	       total_sleds, patched, i->ring_bytes, i->trim_min_ns, i->trim_max_depth, i->trimmed_records,
	       c->alloc_events);
	if (i->ring_bytes)
		printf("\"ring_reused\":%" PRIu64 ",", i->ring_reused);
	else
		printf("\"ring_reused\":null,");
	json_snapshot_requests(i);
	json_options(i);
	printf("\"objects\":[");
	for (size_t k = 0; k < lr_nobjects(p->log); k++) {
		const struct lr_object *o = lr_object_at(p->log, k);
		char bid[132];
		build_id_hex(o, bid);
		printf("%s{", k ? "," : "");
		json_kv_str("path", o->path);
		json_kv_str("build_id", o->build_id_len ? bid : "");
		printf("\"main\":%s,\"dlopen\":%s,\"sleds\":%u,\"patched\":%u,\"functions\":%u,\"aliases\":[",
		       o->flags & SF_OBJ_MAIN ? "true" : "false", o->flags & SF_OBJ_DLOPEN ? "true" : "false", o->sleds,
		       o->patched, o->count);
		put_aliases(p, o, 1);
		printf("]}");
	}
	printf("],\"threads\":[");
	for (size_t k = 0; k < lr_nthreads(p->log); k++) {
		const struct lr_thread *t = lr_thread_at(p->log, k);
		printf("%s{\"tid\":%u,\"name\":", k ? "," : "", t->tid);
		json_put_str(stdout, t->name);
		printf(",\"events\":%" PRIu64 "}", t->events);
	}
	printf("],\"events\":%" PRIu64 ",\"frames\":%" PRIu64 ",\"frames_kept\":%" PRIu64 ",\"dropped\":%" PRIu64
	       ",\"lost\":%" PRIu64
	       ",\"write_errors\":%" PRIu64 ",\"unwound\":%" PRIu64 ",\"open_at_end\":%" PRIu64
	       ",\"open_at_snapshot_end\":%" PRIu64 ",\"repairs\":%s,\"log_bytes\":%" PRIu64 ",",
	       s.events, r->frames, c->frames, s.dropped, s.lost, s.write_errors, r->unwound, r->open_at_end, r->open_at_snapshot,
	       repairs, i->file_size);
	printf("\"log_path\":");
	json_put_str(stdout, i->path);
	putchar('}');
}

/* ---- command line ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace info [OPTIONS] LOG...\n"
		"\n"
		"What a recording holds, per process: command line, pid and ppid, start time,\n"
		"machine and clock, exit state, the recording's options as the log keeps them\n"
		"(ring, trims, sleds patched, allocation events), each object with its path,\n"
		"build-id and sleds, the threads, the counters (events, frames, dropped, lost,\n"
		"write errors, repairs) and the log's size and bytes per event.\n"
		"\n"
		"options:\n"
		"      --format FMT       text (default) or json (the same fields)\n"
		"  -h, --help             this help\n");
	input_opts_usage(out, 's');
}

static int info_option(void *ctx, int c, const char *arg)
{
	struct info *inf = ctx;
	if (c != 'f')
		return -1;
	if (!strcmp(arg, "json"))
		inf->json = 1;
	else if (strcmp(arg, "text")) {
		sf_error("--format must be 'text' or 'json', not '%s'", arg);
		return -1;
	}
	return 0;
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, 0, 'f'},
		{0, 0, 0, 0},
	};
	struct info inf = {0};
	struct input_opts io;
	input_opts_init(&io, 's');
	int rc = 1, usage_error;
	const struct cmd_opts own = {longopts, NULL, info_option, &inf, usage, IO_PAGE_ASKED};
	switch (input_opts_parse(&io, &own, argc, argv)) {
	case IO_HELP_SHOWN: input_opts_free(&io); return 0;
	case IO_USAGE_ERROR: goto out_usage;
	}
	/* Every field info prints was recorded: a rebuilt or removed binary
	 * costs only the names (aliases), with a warning naming the file. */
	io.trace.symbols_optional = 1;
	struct trace_input *in = input_opts_open(&io, "info", argc, argv, optind, NULL, 0, &usage_error);
	if (!in) {
		if (usage_error)
			goto out_usage;
		goto out;
	}
	size_t n = trace_nprocs(in);
	inf.count = xcalloc(n + 1, sizeof(*inf.count));
	inf.in = in;
	struct trace_sink sink = {.ctx = &inf, .frame_begin = on_begin, .alloc_event = on_alloc};
	if (trace_run(in, &sink) == 0) {
		if (inf.json)
			printf("{\"processes\":[");
		for (size_t k = 0; k < n; k++)
			(inf.json ? json_proc : text_proc)(&inf, trace_proc_at(in, k));
		if (inf.json)
			printf("\n]}\n");
		rc = input_opts_end_output(&io, 1, "the information");
		/* The logs' warnings (a cut file), as every reading command
		 * gives them; the repairs are in the output already. */
		trace_repairs_shown(in);
		trace_report_repairs(in);
	}
	free(inf.count);
	trace_close(in);
out:
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "info");
}
