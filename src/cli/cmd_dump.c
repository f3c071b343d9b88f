/* sftrace dump: a log's header, objects, threads and every event as text.
 * A debugging view of exactly what the reader sees, in delivery order
 * (batches in file order, live slots last). Used on multi-million-event
 * logs, so event lines are formatted by hand into a large buffer. */
#include <elf.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
#include "format/sflog.h"
#include "lib/frames.h"
#include "lib/arg_values.h"
#include "lib/log_reader.h"
#include "lib/log_symbols.h"
#include "lib/text_esc.h"
#include "lib/trace_input.h"
#include "lib/util.h"

#define PLURAL(n) ((n) == 1 ? "" : "s")
#define DUMP_MAX_INDENT 40 /* levels; deeper events show their depth instead */

static const char dump_usage[] =
	"usage: sftrace dump [OPTIONS] LOG\n"
	"\n"
	"Prints a log's header, object table, threads, then one line per event:\n"
	"  <ns since start> <tid> <kind> <indented function name>\n"
	"and the warnings the reader found.\n"
	"\n"
	"With a cut option or --names, the events are those the other commands see:\n"
	"balanced frames after repair and the cut (ENTRY, then EXIT or TAIL), and\n"
	"calls the --time window clipped end in \"(cut ...)\".\n"
	"\n"
	"options:\n"
	"      --raw              also print each event's raw time, function id, batch\n"
	"                         and file offset (not with a cut)\n"
	"  -h, --help             this help\n";

/* ---- buffered output ---- */

struct out {
	char *buf;
	size_t len, cap;
	FILE *f;
	int failed;
};

static void out_flush(struct out *o)
{
	if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len)
		o->failed = 1;
	o->len = 0;
}

static void out_mem(struct out *o, const char *s, size_t n)
{
	if (o->len + n > o->cap) {
		out_flush(o);
		if (n > o->cap) {
			if (fwrite(s, 1, n, o->f) != n)
				o->failed = 1;
			return;
		}
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void out_str(struct out *o, const char *s) { out_mem(o, s, strlen(s)); }

/* Text taken from the log (paths, names, the command line): escaped, so a
 * hostile log cannot drive the terminal (text_esc.h). A name per event: the
 * usual all-printable-ASCII name is measured and checked in one scan. */
static void out_esc(struct out *o, const char *s)
{
	size_t n = 0;
	while ((unsigned char)s[n] >= 0x20 && (unsigned char)s[n] < 0x7f)
		n++;
	if (!s[n])
		out_mem(o, s, n);
	else
		out_str(o, sf_esc(s));
}

static void out_fmt(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(struct out *o, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	size_t n = sf_vformat(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	out_mem(o, buf, n);
}

static void out_chars(struct out *o, char c, size_t n)
{
	char sp[64];
	memset(sp, c, sizeof(sp));
	while (n) {
		size_t k = n < sizeof(sp) ? n : sizeof(sp);
		out_mem(o, sp, k);
		n -= k;
	}
}

/* v right-aligned in width columns (the hot path: no printf). */
static void out_u64(struct out *o, uint64_t v, int width)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (width > n)
		out_chars(o, ' ', (size_t)(width - n));
	out_mem(o, tmp + sizeof(tmp) - n, (size_t)n);
}

static void out_hex(struct out *o, uint64_t v)
{
	char tmp[18];
	int n = 0;
	do {
		tmp[sizeof(tmp) - 1 - n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	out_mem(o, "0x", 2);
	out_mem(o, tmp + sizeof(tmp) - n, (size_t)n);
}

/* ---- header, objects, threads ---- */

static const char *state_name(uint32_t s)
{
	return s == SF_STATE_EXITED ? "exited" : s == SF_STATE_RUNNING ? "running (or died without exit hooks)" : "unknown";
}

/* An argument as a shell would need it. */
static void out_arg(struct out *o, const char *a)
{
	a = sf_esc(a);
	if (*a && !a[strcspn(a, " \t\n'\"\\$`*?[]{}()<>|&;!#~")]) {
		out_str(o, a);
		return;
	}
	out_str(o, "'");
	for (; *a; a++) {
		if (*a == '\'')
			out_str(o, "'\\''");
		else
			out_mem(o, a, 1);
	}
	out_str(o, "'");
}

/* Which trigger a snapshot was frozen for, when and on which thread (the
 * rest of its "snapshot N" line). */
static void print_freeze(struct out *o, const struct lr_log *log, struct log_symbols *ls)
{
	const struct lr_info *in = lr_info(log);
	if (!in->snap_time) { /* written before snapshots said so */
		out_str(o, "\n");
		return;
	}
	double at = (double)lr_time_ns(log, in->snap_time) / 1e9;
	const char *fn = in->snap_func ? ls_lookup(ls, in->snap_func)->name : NULL;
	if (in->snapshot_reason == SF_SNAP_SLOW && fn)
		out_fmt(o, ": %s lasted %.3f ms, until %.6f s on thread %u", sf_esc(fn), (double)in->snap_slow_ns / 1e6, at,
			in->snap_tid);
	else if (in->snapshot_reason == SF_SNAP_ENTRY && fn)
		out_fmt(o, ": %s entered at %.6f s on thread %u", sf_esc(fn), at, in->snap_tid);
	else
		out_fmt(o, ": at %.6f s, taken by thread %u", at, in->snap_tid);
	out_str(o, "; every thread's window ends there\n");
}

static void print_header(struct out *o, const struct lr_log *log, struct log_symbols *ls)
{
	const struct lr_info *in = lr_info(log);
	out_fmt(o, "log: %s (%" PRIu64 " bytes)\n", sf_esc(in->path), in->file_size);
	out_fmt(o, "format version: %u\n", in->version);
	out_fmt(o, "pid: %u  ppid: %u  state: %s\n", in->pid, in->ppid, state_name(in->state));
	out_str(o, "command line:");
	for (int i = 0; i < in->argc; i++) {
		out_str(o, " ");
		out_arg(o, in->argv[i]);
	}
	out_str(o, in->cmdline_truncated ? " [truncated]\n" : "\n");
	time_t sec = (time_t)(in->start_realtime_ns / 1000000000ULL);
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	out_fmt(o, "started: %s.%09" PRIu64 " UTC\n", when, (uint64_t)(in->start_realtime_ns % 1000000000u));
	out_fmt(o, "machine: %s\n", in->machine == EM_X86_64 ? "x86-64" : in->machine == EM_AARCH64 ? "aarch64" : "unknown");
	if (in->clock == SF_CLOCK_TSC && in->counter_hz) {
		out_fmt(o, "clock: %s, %.9f ns/tick, counter frequency %" PRIu64 " Hz\n",
			in->machine == EM_AARCH64 ? "cntvct_el0" : "counter", in->tsc_ns_per_tick, in->counter_hz);
	} else if (in->clock == SF_CLOCK_TSC) {
		if (in->calib_degenerate)
			out_str(o, "clock: tsc, no usable calibration (1 tick taken as 1 ns)\n");
		else
			out_fmt(o, "clock: tsc, %.9f ns/tick (%.6f GHz), fit on %u calibration pairs\n",
				in->tsc_ns_per_tick, 1.0 / in->tsc_ns_per_tick, in->calib_pairs);
	} else {
		out_fmt(o, "clock: %s\n", in->clock == SF_CLOCK_MONOTONIC ? "monotonic ns" : "unknown (read as monotonic ns)");
	}
	out_fmt(o, "calibration: start tsc %" PRIu64 " mono %" PRIu64 " ns, last tsc %" PRIu64 " mono %" PRIu64 " ns\n",
		in->start_tsc, in->start_mono_ns, in->last_tsc, in->last_mono_ns);
	out_fmt(o, "counters: dropped events %" PRIu64 ", write errors %" PRIu64, in->dropped_events, in->write_errors);
	if (in->write_errors || in->last_errno)
		out_fmt(o, " (last errno %u: %s)", in->last_errno, strerror((int)in->last_errno));
	out_fmt(o, ", threads %u, objects %u (as written by the runtime)\n", in->header_threads, in->header_objects);
	if (in->ring_bytes) {
		static const char *const why[] = {"", "on the ring signal", "on a trigger's entry", "on a slow trigger call",
						  "on sftrace snapshot's request"};
		out_fmt(o, "ring: %" PRIu64 " bytes per thread; %" PRIu64 " frame%s began before the window\n",
			in->ring_bytes, in->before_window, in->before_window == 1 ? "" : "s");
		if (in->snapshot) {
			out_fmt(o, "snapshot %u, taken %s while the process ran", in->snapshot,
				in->snapshot_reason < 5 ? why[in->snapshot_reason] : "for an unknown reason");
			print_freeze(o, log, ls);
		}
		if (in->snap_missed)
			out_fmt(o, "snapshot requests not taken: %" PRIu64 " (they came while a snapshot was being written)\n",
				in->snap_missed);
	}
	if (in->resumes || in->pauses)
		out_fmt(o, "switches: %u resume%s, %u pause%s (sftrace resume / pause)\n", in->resumes,
			in->resumes == 1 ? "" : "s", in->pauses, in->pauses == 1 ? "" : "s");
	if (in->trim_min_ns || in->trim_max_depth)
		out_fmt(o, "trimming: min duration %" PRIu64 " ns, max depth %u (0: off); %" PRIu64
			" records left out by the runtime; the events below are the log's, untrimmed by the reader\n",
			in->trim_min_ns, in->trim_max_depth, in->trimmed_records);
}

static void print_objects(struct out *o, const struct lr_log *log, const struct log_symbols *ls)
{
	size_t n = lr_nobjects(log);
	out_fmt(o, "\nobjects (%zu):\n", n);
	for (size_t i = 0; i < n; i++) {
		const struct lr_object *obj = lr_object_at(log, i);
		out_fmt(o, "  [%u] %s", obj->index, sf_esc(obj->path));
		if (obj->flags & SF_OBJ_MAIN)
			out_str(o, " (main)");
		if (obj->flags & SF_OBJ_DLOPEN)
			out_str(o, " (dlopen)");
		if (obj->unloaded)
			out_str(o, " (unloaded)");
		out_str(o, "\n      build-id ");
		if (!obj->build_id_len)
			out_str(o, "none");
		for (unsigned k = 0; k < obj->build_id_len; k++)
			out_fmt(o, "%02x", obj->build_id[k]);
		out_str(o, ", load bias ");
		out_hex(o, obj->load_bias);
		out_fmt(o, ", sleds %u, patched %u, functions %u", obj->sleds, obj->patched, obj->count);
		if (obj->count)
			out_fmt(o, " (ids %u-%" PRIu64 ")", obj->first_id, (uint64_t)obj->first_id + obj->count - 1);
		out_str(o, "\n");
		const char *file = ls ? ls_object_file(ls, i) : NULL;
		if (file && strcmp(file, obj->path))
			out_fmt(o, "      symbols from %s\n", sf_esc(file));
	}
}

static void print_threads(struct out *o, const struct lr_log *log)
{
	size_t n = lr_nthreads(log);
	out_fmt(o, "\nthreads (%zu):\n", n);
	out_str(o, "  serial      tid  name              events        lost  batches\n");
	for (size_t i = 0; i < n; i++) {
		const struct lr_thread *t = lr_thread_at(log, i);
		out_fmt(o, "  %6" PRIu64 " %8u  %-16s %8" PRIu64 " %11" PRIu64 "  %u data", t->serial, t->tid,
			t->name[0] ? sf_esc(t->name) : "-", t->events, t->lost, t->data_batches);
		if (t->slots)
			out_fmt(o, " + %u slot%s (%u live)", t->slots, t->slots == 1 ? "" : "s", t->live_slots);
		out_str(o, "\n");
	}
}

/* ---- events ---- */

struct dump_ctx {
	struct out *o;
	struct log_symbols *ls;
	const struct lr_log *log;
	int raw;
	uint64_t *depth; /* per thread index */
	int64_t *outer;  /* per thread index + 1: frames open outside depth (fr_unwind_to), 0: not set */
	uint32_t *next_pause; /* per thread index: the first of its pauses not passed yet */
};

/* Frames open at a pause are closed there (lib/frames.h, FR_END_PAUSED),
 * and the runtime counts a thread's depth afresh after the resume: so does
 * the indentation. */
static void pass_pauses(struct dump_ctx *d, const struct lr_event *ev)
{
	const struct lr_thread *t = ev->thread;
	uint32_t *next = &d->next_pause[t->index];
	while (*next < t->npauses && t->pause_ns[*next] < ev->time_ns) {
		(*next)++;
		d->depth[t->index] = 0;
		d->outer[t->index] = 1; /* set, none outside */
	}
}

static const char *func_name(struct dump_ctx *d, uint32_t id)
{
	return ls_lookup(d->ls, id)->name;
}

/* An ARGS event: "add arg1=3 arg2=4" (entry values) or "add retval=7";
 * "(filler)" for the record that pads a claim cut by a slot's end. */
static void put_arg_values(struct dump_ctx *d, const struct lr_event *ev)
{
	struct out *o = d->o;
	struct av_item items[SF_ARG_MAX_ITEMS];
	int n = ev->args ? av_decode(ev->args, ev->args_len, items, SF_ARG_MAX_ITEMS) : 0;
	if (!ev->args) {
		out_mem(o, "(filler)", 8);
		return;
	}
	out_esc(o, func_name(d, ev->func_id));
	if (n < 0) {
		out_mem(o, " (malformed values)", 19);
		return;
	}
	for (int i = 0; i < n; i++) {
		out_mem(o, " ", 1);
		out_esc(o, items[i].name);
		out_mem(o, "=", 1);
		out_esc(o, items[i].value);
	}
}

static int print_event(void *ctx, const struct lr_event *ev)
{
	struct dump_ctx *d = ctx;
	struct out *o = d->o;
	if (ev->before_window)
		return 0; /* placed by the reader, not recorded (the header counts them) */
	if (ev->thread->npauses)
		pass_pauses(d, ev);
	uint64_t *depth = &d->depth[ev->thread->index];
	out_u64(o, ev->time_ns, 14);
	out_mem(o, " ", 1);
	out_u64(o, ev->thread->tid, 7);
	out_mem(o, " ", 1);
	const char *kind = lr_kind_name(ev->kind);
	size_t klen = strlen(kind);
	out_mem(o, kind, klen);
	out_chars(o, ' ', klen < 9 ? 9 - klen : 1);
	int64_t *outer = &d->outer[ev->thread->index];
	if (!*outer) /* frames the reader placed or never saw begin: outside the indentation */
		*outer = 1 + (int64_t)ev->thread->outer + ev->thread->nbefore;
	if ((ev->kind == SF_EV_EXIT || sf_kind_is_tail(ev->kind)) && *depth)
		(*depth)--;
	else if (ev->kind == SF_EV_EXIT || sf_kind_is_tail(ev->kind))
		*outer -= *outer > 1;
	uint64_t dp = *depth;
	out_chars(o, ' ', 2 * (size_t)(dp < DUMP_MAX_INDENT ? dp : DUMP_MAX_INDENT));
	if (dp > DUMP_MAX_INDENT) {
		out_mem(o, "[depth ", 7);
		out_u64(o, dp, 0);
		out_mem(o, "] ", 2);
	}
	if (ev->kind == SF_EV_ENTRY)
		(*depth)++;
	if (ev->kind == SF_EV_UNWIND && ev->func_id == SF_UNWIND_UNCOUNTED) {
		out_str(o, "uncounted frames abandoned (a landing too deep for the runtime to count)");
	} else if (ev->kind == SF_EV_UNWIND) {
		out_u64(o, ev->func_id, 0);
		out_mem(o, " frames abandoned", 17);
		*depth = *depth > ev->func_id ? *depth - ev->func_id : 0;
	} else if (ev->kind == SF_EV_UNWIND_TO) {
		/* The count the frame builder closes, then what it says. */
		int64_t out = *outer - 1;
		size_t n = fr_unwind_to((size_t)*depth, &out, ev->func_id);
		*outer = out + 1 > 1 ? out + 1 : 1;
		*depth -= n;
		out_u64(o, n, 0);
		out_mem(o, " frames abandoned, depth ", 25);
		out_u64(o, ev->func_id, 0);
		out_mem(o, " left", 5);
	} else if (ev->kind == SF_EV_ARGS) {
		put_arg_values(d, ev);
	} else if (ev->has_ext) {
		out_mem(o, "size=", 5);
		out_u64(o, ev->size, 0);
		out_mem(o, " align=", 7);
		out_u64(o, ev->align, 0);
		out_mem(o, " ptr=", 5);
		out_hex(o, ev->ptr);
		if (ev->kind == SF_EV_HEAP_REALLOC) {
			out_mem(o, " old=", 5);
			out_hex(o, ev->old_ptr);
		}
		if (ev->site) {
			out_mem(o, " site=", 6);
			out_hex(o, ev->site);
		}
	} else {
		out_esc(o, func_name(d, ev->func_id));
	}
	if (d->raw) {
		out_mem(o, "  [raw ", 7);
		out_u64(o, ev->raw_time, 0);
		out_mem(o, " id ", 4);
		out_u64(o, ev->func_id, 0);
		out_mem(o, " seq ", 5);
		out_u64(o, ev->seq, 0);
		if (ev->in_slot)
			out_mem(o, " slot", 5);
		out_mem(o, " @", 2);
		out_u64(o, ev->offset, 0);
		out_mem(o, "]", 1);
	}
	out_mem(o, "\n", 1);
	return o->failed;
}

static void print_footer(struct out *o, const struct lr_log *log, const struct log_symbols *ls)
{
	size_t nw = lr_nwarnings(log), nls = ls ? ls_nwarnings(ls) : 0;
	if (nw + nls) {
		out_fmt(o, "\nwarnings (%zu):\n", nw + nls);
		for (size_t i = 0; i < nw; i++)
			out_fmt(o, "  %s\n", sf_esc(lr_warning(log, i)));
		for (size_t i = 0; i < nls; i++)
			out_fmt(o, "  %s\n", sf_esc(ls_warning(ls, i)));
	}
	struct lr_summary s;
	lr_summary(log, &s);
	out_fmt(o, "\nsummary: %" PRIu64 " event%s, %" PRIu64 " thread%s, %" PRIu64 " object%s, %" PRIu64
		   " lost (holes or corrupt records), ", s.events, PLURAL(s.events), s.threads, PLURAL(s.threads),
		s.objects, PLURAL(s.objects), s.lost);
	/* The process's one count, not per thread (the threads' lost column):
	 * a slot taken from an exited thread leaves no trace of whose events
	 * it held, and often no row for that thread at all (docs/FORMAT.md
	 * ring_reused). */
	const struct lr_info *in = lr_info(log);
	if (in->ring_bytes && in->ring_reused)
		out_fmt(o, "%" PRIu64 " overwritten by later threads' rings, ", in->ring_reused);
	out_fmt(o, "%" PRIu64 " dropped by the runtime, %" PRIu64 " write error%s\n", s.dropped, s.write_errors,
		PLURAL(s.write_errors));
}

/* ---- the cut trace's events ---- */

struct cut_dump {
	struct out *o;
};

static void cut_line(struct out *o, const struct fr_frame *f, uint64_t t, const char *kind, const char *note)
{
	out_u64(o, t, 14);
	out_mem(o, " ", 1);
	out_u64(o, f->thread->tid, 7);
	out_mem(o, " ", 1);
	out_str(o, kind);
	out_chars(o, ' ', 9 - strlen(kind));
	out_chars(o, ' ', 2 * (size_t)(f->depth < DUMP_MAX_INDENT ? f->depth : DUMP_MAX_INDENT));
	if (f->depth > DUMP_MAX_INDENT) {
		out_mem(o, "[depth ", 7);
		out_u64(o, f->depth, 0);
		out_mem(o, "] ", 2);
	}
	if (f->func_id != FR_NO_FUNC)
		out_esc(o, trace_name(f->proc, f->func_id));
	if (note)
		out_str(o, note);
	out_mem(o, "\n", 1);
}

/* A dropped exit or an uncounted landing, where the cut keeps its place
 * (trace_cut.h's cut_unmatched), at the depth a call there would have. */
static int dump_cut_unmatched(void *ctx, const struct fr_frame *f)
{
	struct cut_dump *d = ctx;
	if (f->end_kind == FR_END_UNCOUNTED)
		cut_line(d->o, f, f->t_end, "UNWIND", "uncounted frames abandoned (a landing too deep for the runtime to count)");
	else
		cut_line(d->o, f, f->t_end, f->end_kind == FR_END_TAIL ? "TAIL" : "EXIT", "  (repaired: unmatched, dropped)");
	return d->o->failed;
}

static int dump_cut_begin(void *ctx, const struct fr_frame *f)
{
	struct cut_dump *d = ctx;
	cut_line(d->o, f, f->t_begin, "ENTRY", f->cut & CUT_START ? "  (cut at the window's start)" : NULL);
	return d->o->failed;
}

static int dump_cut_end(void *ctx, const struct fr_frame *f)
{
	struct cut_dump *d = ctx;
	const char *note = f->cut & CUT_END ? "  (cut at the window's end)"
			   : f->end_kind == FR_END_UNWOUND ? "  (repaired: unwound)"
			   : f->end_kind == FR_END_THREAD_END ? "  (repaired: open at thread end)"
			   : f->end_kind == FR_END_SNAPSHOT ? "  (repaired: open at the snapshot's end)"
			   : f->end_kind == FR_END_PAUSED ? "  (repaired: in flight at a pause)" : NULL;
	cut_line(d->o, f, f->t_end, f->end_kind == FR_END_TAIL ? "TAIL" : "EXIT", note);
	return d->o->failed;
}

/* 0, or 1 after an error message. */
static int print_cut_events(struct out *o, const char *path, struct input_opts *io)
{
	const char *paths[1] = {path};
	io->trace.quiet = 1; /* the raw view's footer lists the warnings */
	struct trace_input *in = trace_open(paths, 1, &io->trace);
	if (!in)
		return 1;
	struct cut_dump d = {o};
	struct trace_sink sink = {.ctx = &d, .frame_begin = dump_cut_begin, .frame_end = dump_cut_end,
				  .frame_unmatched = dump_cut_unmatched};
	int r = trace_run(in, &sink);
	char buf[512];
	if (r == 0 && trace_format_cut(in, buf, sizeof(buf)))
		out_fmt(o, "\ncut: %s\n", sf_esc(buf));
	if (r == 0 && fr_format_repairs(trace_stats(in), buf, sizeof(buf)))
		out_fmt(o, "%s\n", buf);
	trace_close(in);
	return r < 0;
}

/* ---- command ---- */

struct dump_opts {
	int raw;
	struct input_opts io;
	const char *path;
};

/* 0 ok, 1 bad usage (message printed), 2 --help printed. */
static int parse_args(int argc, char **argv, struct dump_opts *opt)
{
	enum { O_RAW = 256, O_SYMBOL };
	static const struct option longopts[] = {
		{"raw", no_argument, NULL, O_RAW},
		{"help", no_argument, NULL, 'h'},
		INPUT_LONGOPTS(O_SYMBOL), PAGER_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	input_opts_init(&opt->io, O_SYMBOL);
	opt->io.page_by = IO_PAGE_ASKED;
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+" INPUT_SHORTOPTS "h", longopts, NULL)) != -1) {
		if (c != '?' && c != ':' && input_opts_handle(&opt->io, c, optarg)) {
			if (opt->io.failed)
				return 1;
			continue;
		}
		switch (c) {
		case O_RAW: opt->raw = 1; break;
		case 'h':
			fputs(dump_usage, stdout);
			input_opts_usage(stdout, O_SYMBOL);
			input_opts_pager_usage(stdout, IO_PAGE_ASKED);
			return 2;
		default:
			if (optopt)
				sf_error("dump: an option needs a value, or is unknown (try 'sftrace dump --help')");
			else
				sf_error("dump: unknown option '%s' (try 'sftrace dump --help')", argv[optind - 1]);
			return 1;
		}
	}
	if (optind != argc - 1) {
		sf_error("dump: %s (try 'sftrace dump --help')", optind >= argc ? "no log given" : "exactly one log expected");
		return 1;
	}
	opt->path = argv[optind];
	return 0;
}

static int dump(struct dump_opts *opt)
{
	char err[1024];
	struct input_opts *io = &opt->io;
	int cut = cut_active(&io->trace.cut) || io->names == 1;
	if (cut && opt->raw) {
		sf_error("dump: --raw shows the log's own events; it cannot be combined with a cut or --names");
		return 2;
	}
	struct lr_log *log = lr_open(opt->path, err, sizeof(err));
	if (!log) {
		sf_error("%s", err);
		return 1;
	}
	struct ls_options lso = {.symbol_paths = io->symbols, .nsymbol_paths = io->nsymbols,
				 .force = io->trace.force, .no_symbols = io->trace.no_symbols};
	struct log_symbols *ls = ls_open(log, &lso, err, sizeof(err));
	if (!ls) {
		sf_error("%s", err); /* it ends with the ways out */
		lr_close(log);
		return 1;
	}
	for (size_t i = 0; i < io->nsymbols; i++)
		if (!ls_override_used(ls, i))
			sf_warn("--symbol %s matches no object of %s", io->symbols[i], opt->path);
	io->trace.symbol_paths = io->symbols;
	io->trace.nsymbol_paths = io->nsymbols;
	io->trace.short_names = io->names == 1;

	input_opts_page(io);
	struct out o = {.cap = 1 << 20, .f = stdout};
	o.buf = xmalloc(o.cap);
	print_header(&o, log, ls);
	print_objects(&o, log, io->trace.no_symbols ? NULL : ls);
	print_threads(&o, log);
	out_str(&o, "\nevents:\n");
	out_str(&o, "       time_ns     tid kind     function\n");
	struct dump_ctx d = {.o = &o, .ls = ls, .log = log, .raw = opt->raw};
	d.depth = xcalloc(lr_nthreads(log) + 1, sizeof(uint64_t));
	d.outer = xcalloc(lr_nthreads(log) + 1, sizeof(int64_t));
	d.next_pause = xcalloc(lr_nthreads(log) + 1, sizeof(uint32_t));
	int bad = 0;
	if (cut)
		bad = print_cut_events(&o, opt->path, io);
	else
		lr_foreach_event(log, print_event, &d);
	if (!bad)
		print_footer(&o, log, ls);
	out_flush(&o);
	/* quitting a pager early, or a pipe's reader leaving, is no error */
	int failed = (o.failed || fflush(stdout) != 0) && !io->paging && !sf_stdout_reader_gone();
	if (failed)
		sf_error("dump: writing the output failed: %s", strerror(errno));
	input_opts_pager_done(io);
	free(d.depth);
	free(d.outer);
	free(d.next_pause);
	free(o.buf);
	ls_close(ls);
	lr_close(log);
	return failed || bad ? 1 : 0;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_opts opt = {0};
	int r = parse_args(argc, argv, &opt);
	if (r == 0)
		r = dump(&opt);
	else
		r = r == 2 ? 0 : 2; /* --help; bad usage exits 2 like every command */
	input_opts_free(&opt.io);
	return r;
}
