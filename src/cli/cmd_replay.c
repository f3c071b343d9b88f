/* sftrace replay: the run as nested calls, one line per call, in uftrace's
 * layout so that its users' habits carry over:
 *
 *   # DURATION     TID     FUNCTION
 *               [  12345] | main() {
 *               [  12345] |   foo() {
 *      0.125 us [  12345] |     loop();
 *      1.250 us [  12345] |   }  (then the name in a C comment)
 *
 * A call with children opens with "name() {" and closes with "}" and its
 * name in a C comment, with its duration; a call without children is one
 * line, "name();", with its duration. Times in uftrace's units
 * (print_time_unit, lib/util.h's sf_uftrace_unit). Processes one after
 * another; a process's threads merged in time order, each line tagged
 * with its tid.
 *
 * Streaming, in time order, memory per thread: a begun frame waits (the
 * thread's one "pending" frame) until the thread's next frame begins (then
 * it had children: "name() {") or it ends (a leaf: "name();"). The input
 * (trace_input's time_order with wants_next) hands a thread with a pending
 * frame its next event at once, ahead of the other threads' earlier ones,
 * so the line is known right away; lines that are then ahead of the other
 * threads wait in a small queue ordered by their time (recorded clock)
 * until the input's horizon passes them. The queue holds at most a
 * thread's run-ahead: the calls it enters before its next exit.
 *
 * A thread whose name the kernel cut (15 bytes) gets a line "# thread TID:
 * name (first function)" before its first call (trace_thread_label).
 *
 * Repairs and cuts show as comments where they happen: a run of frames
 * closed by unwinding as "3 frames unwound" after their closing lines,
 * frames closed at their thread's end likewise, and calls the time window
 * clipped with "cut at window start" / "cut at window end"; an exit of a
 * function not open on its thread (dropped) as "unmatched exit dropped:
 * name", and a landing too deep for the runtime to count as "frames
 * unwound: uncounted", each where a call beginning there would be (under
 * a cut, where the cut would keep such a call: trace_cut.h's
 * cut_unmatched).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "format/sf_env.h"
#include "cli/input_opts.h"
#include "cli/pager.h"
#include "lib/arg_values.h"
#include "lib/demangle.h"
#include "lib/log_symbols.h"
#include "lib/tail_mark.h"
#include "lib/text_esc.h"
#include "lib/trace_input.h"
#include "lib/util.h"

#define C_DIM "\033[2m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_RED "\033[31m"
#define C_OFF "\033[0m"

/* ---- output (single-threaded: the unlocked stdio calls, and no printf
 * on the per-line path: replay writes millions of lines) ----
 *
 * A line goes straight to stdout, or, when it is ahead of what the input
 * may still deliver, is made in `cur` and queued (line_start, line_done). */

static struct {
	char *p;
	size_t n, cap;
	int queued;    /* this line goes to the queue */
	uint64_t time; /* ... at this time */
} cur;

static void out_queued(const char *p, size_t n)
{
	if (cur.n + n > cur.cap) {
		cur.cap = (cur.n + n) * 2 + 256;
		cur.p = xrealloc(cur.p, cur.cap);
	}
	if (n) /* p may be NULL then (an empty piece), which memcpy may not take */
		memcpy(cur.p + cur.n, p, n);
	cur.n += n;
}

/* Inline: stdio's fwrite_unlocked of a constant size up to 8 is a few
 * stores (a call of it cost replay 60% more instructions). Any other size
 * (numbers, indentation, names, blank columns) goes into glibc's buffer
 * directly while it has room, as putc_unlocked does: through
 * fwrite_unlocked and _IO_file_xsputn each cost about 100 instructions,
 * 24% of replay's on fib(24) (bench/views_speed.sh's deep shape). */
static inline void out(const char *p, size_t n)
{
	if (__builtin_expect(cur.queued, 0)) {
		out_queued(p, n);
		return;
	}
#ifdef __GLIBC__
	if (!(__builtin_constant_p(n) && n <= 8) && n && (size_t)(stdout->_IO_write_end - stdout->_IO_write_ptr) >= n) {
		memcpy(stdout->_IO_write_ptr, p, n);
		stdout->_IO_write_ptr += n;
		return;
	}
#endif
	fwrite_unlocked(p, 1, n, stdout);
}

static inline void outs(const char *p)
{
	out(p, strlen(p));
}

static void outf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void outf(const char *fmt, ...)
{
	char b[4608];
	va_list ap;
	va_start(ap, fmt);
	size_t n = sf_vformat(b, sizeof(b), fmt, ap);
	va_end(ap);
	out(b, n);
}

/* A line ahead of the input's horizon. */
struct queued {
	uint64_t time, seq;
	char *text;
	size_t len;
};

/* Lines by (time, seq), a binary min-heap. */
struct line_queue {
	struct queued *q;
	size_t n, cap;
	uint64_t seq;
	uint64_t horizon; /* no frame begin or end still to come is earlier */
};

static int queued_before(const struct queued *a, const struct queued *b)
{
	return a->time != b->time ? a->time < b->time : a->seq < b->seq;
}

static void queue_push(struct line_queue *lq, uint64_t time)
{
	if (lq->n == lq->cap) {
		lq->cap = lq->cap ? lq->cap * 2 : 64;
		lq->q = xrealloc(lq->q, lq->cap * sizeof(*lq->q));
	}
	struct queued x = {time, lq->seq++, xmalloc(cur.n), cur.n};
	memcpy(x.text, cur.p, cur.n);
	size_t i = lq->n++;
	for (; i && queued_before(&x, &lq->q[(i - 1) / 2]); i = (i - 1) / 2)
		lq->q[i] = lq->q[(i - 1) / 2];
	lq->q[i] = x;
}

/* Writes and removes the earliest queued line. */
static void queue_pop(struct line_queue *lq)
{
	struct queued top = lq->q[0], x = lq->q[--lq->n];
	fwrite_unlocked(top.text, 1, top.len, stdout);
	free(top.text);
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= lq->n)
			break;
		if (c + 1 < lq->n && queued_before(&lq->q[c + 1], &lq->q[c]))
			c++;
		if (!queued_before(&lq->q[c], &x))
			break;
		lq->q[i] = lq->q[c];
		i = c;
	}
	if (lq->n)
		lq->q[i] = x;
}

/* The queued lines up to t go out. */
static void queue_flush(struct line_queue *lq, uint64_t t)
{
	if (t > lq->horizon)
		lq->horizon = t;
	while (lq->n && lq->q[0].time <= lq->horizon)
		queue_pop(lq);
}

/* A line that happened at `time` (recorded clock) begins: written as it
 * is made if nothing the input may still deliver comes before it (every
 * queued line is past the horizon, so it goes first), else queued when
 * done. */
static void line_start(const struct line_queue *lq, uint64_t time)
{
	cur.queued = time > lq->horizon;
	cur.time = time;
	cur.n = 0;
}

static void line_done(struct line_queue *lq)
{
	if (cur.queued)
		queue_push(lq, cur.time);
	cur.queued = 0;
}

/* One output line's facts, for the columns. */
struct line {
	const struct trace_proc *proc;
	const struct lr_thread *thread;
	uint32_t func_id;
	uint64_t time;     /* when it happened, as recorded (the time, delta and elapsed columns): a
			    * call's begin, a close's end; durations alone are net of the tracer */
	uint64_t duration; /* 0: none shown, unless closed */
	int closed;        /* a close or a leaf: its duration is shown even when 0
			    * (an empty function, net of the tracer) */
	uint64_t raw;      /* a close or a leaf: its duration as recorded, shown instead,
			    * marked, when the net one is uncertain (trace_net_uncertain) */
};

struct replay;

/* A function's name as the call lines write it (name_of). */
struct fn_name {
	char *text;
	int own_params; /* it ends with its own parameter list (the full style's C++ names) */
};

/* A column, as uftrace's replay declares them (utils/field.h). */
struct field {
	const char *name, *header;
	int width;
	void (*print)(struct replay *r, const struct line *l);
};

/* What a thread has open or owes the output. */
struct thread_state {
	int has_pending;
	struct fr_frame pending;  /* begun, not yet known to have children */
	uint64_t last_time;       /* time of its latest line (delta column) */
	int labelled;             /* its label line, if it needs one, is out */
	int has_last;
	/* The pending frame's tail caller (lib/tail_mark.h), else TM_NONE. */
	uint32_t pending_tail_from;
	/* A run of closes by one repair (fr_frame.repair), written as one
	 * comment when it ends. */
	enum fr_end_kind run_kind;
	uint64_t run_repair;
	uint64_t run_count;
	uint32_t run_depth;       /* the outermost closed frame's depth */
	int in_runs;              /* listed in replay.runs */
	uint32_t depth;           /* frames open (the sink's view), where a comment goes */
};

struct replay {
	const struct field *fields[16];
	size_t nfields;
	int color;
	size_t nprocs;
	const struct trace_proc *proc; /* the current process */
	struct thread_state *threads; /* by lr_thread.index of the current process */
	size_t nthreads;
	/* The threads that may have a run of repaired closes not yet written
	 * (flush_runs_before), by index. */
	size_t *runs;
	size_t nruns;
	int write_failed;
	struct line_queue lines;
	int srcline;     /* --srcline: each call's file:line as a comment */
	int short_names; /* --names short (the default) */
	double cost_err; /* trace_cost_err: 0 marks nothing */
	struct fn_name *names; /* name_of's, by function id of the current process */
	size_t nnames;
};

/* v right-aligned in `width` columns (zero-padded when zpad). */
static void out_uint(uint64_t v, int width, int zpad)
{
	char b[24];
	int i = sizeof(b);
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while ((int)sizeof(b) - i < width)
		b[--i] = zpad ? '0' : ' ';
	out(b + i, sizeof(b) - (size_t)i);
}

/* ---- uftrace's units ---- */

/* print_time_unit's layout, 10 columns: "%3u.%03u us", larger units when
 * the integer part passes 999 (sf_uftrace_unit); nothing (blanks) for 0. */
static void put_duration(const struct replay *r, uint64_t ns)
{
	static const char *const units[] = SF_UFTRACE_UNITS;
	static const char *const colors[] = {NULL, C_GREEN, C_YELLOW, C_RED, C_RED};
	if (!ns) {
		out("          ", 10);
		return;
	}
	uint64_t v, small;
	unsigned i = sf_uftrace_unit(ns, &v, &small);
	const char *on = r->color ? colors[i] : NULL;
	out_uint(v, 3, 0);
	out(".", 1);
	out_uint(small, 3, 1);
	out(" ", 1);
	if (on)
		outs(on);
	out(units[i], 2);
	if (on)
		outs(C_OFF);
}

/* ---- columns ---- */

/* A duration as recorded, in the column's 10, marked as one whose net
 * figure is uncertain: "<" and the value, a decimal fewer when it needs
 * the room ("<123.46 us"). */
static void put_raw_marked(const struct replay *r, uint64_t ns)
{
	static const char *const units[] = SF_UFTRACE_UNITS;
	uint64_t v, small;
	unsigned i = sf_uftrace_unit(ns, &v, &small); /* v <= 999 */
	/* "<v.fff " in 8 columns, "<vvv.ff " at 3 digits; no snprintf: most
	 * of a deep recursion's leaves are marked (it was 28% of replay's
	 * instructions on fib(24)) */
	if (v < 10)
		out(" ", 1);
	out(NET_UNCERTAIN_MARK, sizeof(NET_UNCERTAIN_MARK) - 1);
	out_uint(v, 1, 0);
	out(".", 1);
	if (v >= 100)
		out_uint(small / 10, 2, 1);
	else
		out_uint(small, 3, 1);
	out(" ", 1);
	if (r->color)
		outs(C_DIM);
	out(units[i], 2);
	if (r->color)
		outs(C_OFF);
}

static void print_duration(struct replay *r, const struct line *l)
{
	if (l->closed && trace_net_uncertain(r->cost_err, l->duration, l->raw))
		put_raw_marked(r, l->raw);
	else if (l->closed && !l->duration)
		out("  0.000 us", 10);
	else
		put_duration(r, l->duration);
}

static void print_tid(struct replay *r, const struct line *l)
{
	(void)r;
	out("[", 1);
	out_uint(l->thread->tid, 7, 0);
	out("]", 1);
}

static void print_addr(struct replay *r, const struct line *l)
{
	(void)r;
	uint64_t vaddr = 0;
	if (lr_func(l->proc->log, l->func_id, NULL, &vaddr) < 0)
		outf("%12s", "");
	else
		outf("%12" PRIx64, vaddr);
}

/* Absolute CLOCK_MONOTONIC, as uftrace's print_timestamp. */
static void print_time(struct replay *r, const struct line *l)
{
	(void)r;
	uint64_t t = l->proc->zero_mono_ns + l->time;
	outf("%8" PRIu64 ".%09" PRIu64, t / 1000000000u, t % 1000000000u);
}

static void print_delta(struct replay *r, const struct line *l)
{
	struct thread_state *ts = &r->threads[l->thread->index];
	put_duration(r, ts->has_last ? l->time - ts->last_time : 0);
}

static void print_elapsed(struct replay *r, const struct line *l) { put_duration(r, l->time); }

static void print_task(struct replay *r, const struct line *l)
{
	(void)r;
	outf("%15.15s", sf_esc(l->thread->name[0] ? l->thread->name : l->proc->name));
}

static void print_module(struct replay *r, const struct line *l)
{
	(void)r;
	const struct lr_object *o = NULL;
	const char *name = "[unknown]";
	if (lr_func(l->proc->log, l->func_id, &o, NULL) == 0 && o && o->path) {
		const char *slash = strrchr(o->path, '/');
		name = slash ? slash + 1 : o->path;
	}
	outf("%16.16s", sf_esc(name));
}

static const struct field field_table[] = {
	{"duration", " DURATION ", 10, print_duration},
	{"tid", "   TID   ", 9, print_tid},
	{"addr", "   ADDRESS  ", 12, print_addr},
	{"time", "     TIMESTAMP    ", 18, print_time},
	{"delta", " TIMEDELTA", 10, print_delta},
	{"elapsed", "  ELAPSED ", 10, print_elapsed},
	{"task", "      TASK NAME", 15, print_task},
	{"module", "     MODULE NAME", 16, print_module},
};
#define NFIELD (sizeof(field_table) / sizeof(field_table[0]))

static const struct field *find_field(const char *name, size_t len)
{
	for (size_t i = 0; i < NFIELD; i++)
		if (strlen(field_table[i].name) == len && !strncmp(field_table[i].name, name, len))
			return &field_table[i];
	return NULL;
}

static void add_field(struct replay *r, const struct field *f)
{
	for (size_t i = 0; i < r->nfields; i++)
		if (r->fields[i] == f)
			return;
	r->fields[r->nfields++] = f;
}

/* uftrace's -f: "a,b" replaces the default columns, "+a,b" adds to them,
 * "none" shows none, "all" every one. The columns come in the table's
 * order, whatever the order given. */
static int parse_fields(struct replay *r, const char *spec)
{
	int chosen[NFIELD] = {0};
	r->nfields = 0;
	if (!strcmp(spec, "none"))
		return 0;
	if (*spec == '+') {
		chosen[0] = chosen[1] = 1;
		spec++;
	}
	for (const char *p = spec; *p;) {
		size_t n = strcspn(p, ",");
		if (n == 3 && !strncmp(p, "all", 3)) {
			for (size_t i = 0; i < NFIELD; i++)
				chosen[i] = 1;
		} else {
			const struct field *f = find_field(p, n);
			if (!f) {
				sf_error("-f: unknown field '%.*s' (fields: duration, tid, addr, time, delta, "
					 "elapsed, task, module, or none, all; +LIST adds to the default)",
					 (int)n, p);
				return -1;
			}
			chosen[f - field_table] = 1;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	for (size_t i = 0; i < NFIELD; i++)
		if (chosen[i])
			add_field(r, &field_table[i]);
	return 0;
}

static void print_header(const struct replay *r)
{
	if (!r->nfields)
		return;
	fputs(r->color ? C_DIM "#" : "#", stdout);
	for (size_t i = 0; i < r->nfields; i++)
		printf("%s%s", i ? " " : "", r->fields[i]->header);
	printf("   FUNCTION%s\n", r->color ? C_OFF : "");
}

/* A line begins: the columns and the " | " before a call. */
static void put_columns(struct replay *r, const struct line *l)
{
	line_start(&r->lines, l->time);
	for (size_t i = 0; i < r->nfields; i++) {
		out(" ", 1);
		r->fields[i]->print(r, l);
	}
	if (r->nfields)
		out(" | ", 3);
	/* After the delta column read the previous one; with no column too:
	 * a run's comment line takes it as its time (flush_run). */
	struct thread_state *ts = &r->threads[l->thread->index];
	ts->last_time = l->time;
	ts->has_last = 1;
}

static void indent(uint32_t depth)
{
	static const char spaces[] = "                                                                ";
	size_t n = (size_t)depth * 2;
	for (; n > sizeof(spaces) - 1; n -= sizeof(spaces) - 1)
		out(spaces, sizeof(spaces) - 1);
	out(spaces, n);
}

/* ---- lines ---- */

/* The call's name, escaped, made once per function of the process: in
 * the short style as uftrace writes it, without a C++ parameter list (the
 * call's "()" follows); in the full style whole, its parameter list and
 * qualifiers kept (ns::f(int), S::get() const) so overloads stay apart. */
static const struct fn_name *name_of(struct replay *r, const struct fr_frame *f)
{
	if (f->func_id >= r->nnames) {
		size_t n = (size_t)f->func_id + 256;
		r->names = xrealloc(r->names, n * sizeof(*r->names));
		memset(r->names + r->nnames, 0, (n - r->nnames) * sizeof(*r->names));
		r->nnames = n;
	}
	struct fn_name *fn = &r->names[f->func_id];
	if (!fn->text) {
		const char *name = trace_name(f->proc, f->func_id);
		size_t all = strlen(name), n = sf_name_sans_params(name, trace_symbol(f->proc, f->func_id)->mangled);
		if (!r->short_names)
			fn->own_params = n < all;
		else
			all = n;
		char *text = xmalloc(all + 1);
		memcpy(text, name, all);
		text[all] = 0;
		fn->text = xstrdup(sf_esc(text));
		free(text);
	}
	return fn;
}

static void free_names(struct replay *r)
{
	for (size_t i = 0; i < r->nnames; i++)
		free(r->names[i].text);
	free(r->names);
	r->names = NULL;
	r->nnames = 0;
}

/* " /" "* text *" "/" after a line's call. */
static void put_comment(const struct replay *r, const char *text)
{
	outf(" %s/* %s */%s", r->color ? C_DIM : "", text, r->color ? C_OFF : "");
}

/* A finished run of repaired closes, as one comment line at the depth of
 * the outermost frame it closed. */
static void flush_run(struct replay *r, const struct lr_thread *t, const struct trace_proc *p)
{
	struct thread_state *ts = &r->threads[t->index];
	if (!ts->run_count)
		return;
	struct line l = {p, t, 0, ts->last_time, 0, 0, 0};
	put_columns(r, &l);
	indent(ts->run_depth);
	outf("%s/* %" PRIu64 " frame%s %s */%s\n", r->color ? C_DIM : "", ts->run_count,
	     ts->run_count == 1 ? "" : "s", ts->run_kind == FR_END_UNWOUND ? "unwound"
	     : ts->run_kind == FR_END_PAUSED ? "in flight at a pause"
	     : ts->run_kind == FR_END_SNAPSHOT ? "open at the snapshot's end" : "open at thread end",
	     r->color ? C_OFF : "");
	line_done(&r->lines);
	ts->run_count = 0;
}

/* --srcline: " /" "* file:line *" "/" after a call's name (uftrace's place). */
static void put_srcline(const struct replay *r, const struct fr_frame *f)
{
	if (!r->srcline)
		return;
	uint32_t line;
	const char *file = trace_srcline(f->proc, f->func_id, &line);
	if (!file)
		return;
	char text[4200];
	snprintf(text, sizeof(text), "%s:%u", file, line);
	put_comment(r, sf_esc(text));
}

/* The call: its name and "(3, \"world\")", its recorded arguments (record
 * -A), else "()". A name with its own parameter list (full style) stands
 * as it is, followed by the values only when some were recorded. */
static void put_call(struct replay *r, const struct fr_frame *f)
{
	const struct fn_name *fn = name_of(r, f);
	outs(fn->text);
	if (fn->own_params && !f->args)
		return;
	out("(", 1);
	if (f->args) {
		char text[4096];
		av_join(f->args, f->args_len, text, sizeof(text));
		outs(sf_esc(text));
	}
	out(")", 1);
}

/* " = 7" after a call with a recorded return value (record -R). A frame
 * that ended by a tail call has, for a return value asked for, only the
 * runtime's mark that it is not known (the callee returns it): said so. */
static void put_ret(const struct fr_frame *f)
{
	if (!f->ret)
		return;
	if (f->end_kind == FR_END_TAIL) {
		outs(" = <tail call>");
		return;
	}
	char text[4096];
	av_join(f->ret, f->ret_len, text, sizeof(text));
	out(" = ", 3);
	outs(sf_esc(text));
}

/* " /" "* tail call from a *" "/": the pending frame was reached by its
 * caller's jmp (the caller's frame closed first, so it is drawn as its
 * caller's sibling, where it returns to). */
static void put_tail_mark(struct replay *r, const struct thread_state *ts, const struct fr_frame *f)
{
	if (ts->pending_tail_from == TM_NONE)
		return;
	struct fr_frame from = *f;
	from.func_id = ts->pending_tail_from;
	char text[4200];
	snprintf(text, sizeof(text), "tail call from %s", name_of(r, &from)->text); /* escaped already */
	put_comment(r, text);
}

/* "name() {", the pending frame turned out to have children. */
static void open_pending(struct replay *r, struct thread_state *ts)
{
	const struct fr_frame *f = &ts->pending;
	struct line l = {f->proc, f->thread, f->func_id, f->r_begin, 0, 0, 0};
	put_columns(r, &l);
	indent(f->depth);
	put_call(r, f);
	out(" {", 2);
	put_srcline(r, f);
	put_tail_mark(r, ts, f);
	if (f->cut & CUT_START)
		put_comment(r, "cut at window start");
	out("\n", 1);
	line_done(&r->lines);
	ts->has_pending = 0;
}

static int frame_begin(void *ctx, const struct fr_frame *f)
{
	struct replay *r = ctx;
	struct thread_state *ts = &r->threads[f->thread->index];
	if (!ts->labelled) {
		/* Where the kernel cut the thread's name, the thread's first
		 * function tells which one it is (libtest: the test). */
		ts->labelled = 1;
		if (trace_thread_name_cut(f->proc, f->thread)) {
			line_start(&r->lines, f->r_begin);
			outf("%s# thread %u: %s%s\n", r->color ? C_DIM : "", f->thread->tid,
			     sf_esc(trace_thread_label(f->proc, f->thread)), r->color ? C_OFF : "");
			line_done(&r->lines);
		}
	}
	flush_run(r, f->thread, f->proc);
	if (ts->has_pending)
		open_pending(r, ts);
	ts->pending = *f;
	ts->has_pending = 1;
	ts->depth = f->depth + 1;
	/* The frame after a tail call at its depth, in the recorded events,
	 * is the callee only if the jump the event names goes to it. */
	ts->pending_tail_from = tm_tail_from(f);
	return r->write_failed = ferror_unlocked(stdout) != 0;
}

static int frame_end(void *ctx, const struct fr_frame *f)
{
	struct replay *r = ctx;
	struct thread_state *ts = &r->threads[f->thread->index];
	/* A frame the window cut at its end was not repaired in it: what ends
	 * it (an unwind, the thread's end) comes after the window. */
	int repaired = fr_end_is_repaired(f->end_kind) && !(f->cut & CUT_END);
	if (ts->run_count && (!repaired || ts->run_repair != f->repair))
		flush_run(r, f->thread, f->proc);
	int leaf = ts->has_pending && ts->pending.id == f->id;
	ts->depth = f->depth;
	struct line l = {f->proc, f->thread, f->func_id, leaf ? f->r_begin : f->r_end, f->t_end - f->t_begin, 1,
			 f->r_end - f->r_begin};
	put_columns(r, &l);
	indent(f->depth);
	if (leaf) {
		put_call(r, f);
		put_ret(f);
		out(";", 1);
		put_srcline(r, f);
		put_tail_mark(r, ts, f);
		if (f->cut & CUT_START)
			put_comment(r, "cut at window start");
		ts->has_pending = 0;
	} else {
		out("}", 1);
		put_ret(f);
		out(f->ret ? "; /* " : " /* ", f->ret ? 5 : 4);
		outs(name_of(r, f)->text);
		out(" */", 3);
	}
	if (f->cut & CUT_END)
		put_comment(r, "cut at window end");
	out("\n", 1);
	line_done(&r->lines);
	if (repaired) {
		if (!ts->in_runs) {
			ts->in_runs = 1;
			r->runs[r->nruns++] = f->thread->index;
		}
		ts->run_kind = f->end_kind;
		ts->run_repair = f->repair;
		ts->run_count++;
		ts->run_depth = f->depth;
	}
	return r->write_failed = ferror_unlocked(stdout) != 0;
}

/* An exit (or tail call) of a function not open on the thread, which the
 * frames layer dropped (a fork child's return from main, entered before
 * the fork): a comment where it happened, inside the calls then open. So
 * is a landing the runtime could not count (FR_END_UNCOUNTED): the frames
 * it abandoned stay open, to close at an outer exit as "N frames unwound". */
static int frame_unmatched(void *ctx, const struct fr_frame *f)
{
	struct replay *r = ctx;
	struct thread_state *ts = &r->threads[f->thread->index];
	flush_run(r, f->thread, f->proc);
	if (ts->has_pending)
		open_pending(r, ts);
	struct line l = {f->proc, f->thread, f->func_id, f->r_end, 0, 0, 0};
	put_columns(r, &l);
	indent(ts->depth);
	if (f->end_kind == FR_END_UNCOUNTED)
		outf("%s/* frames unwound: uncounted */%s\n", r->color ? C_DIM : "", r->color ? C_OFF : "");
	else
		outf("%s/* unmatched %s dropped: %s */%s\n", r->color ? C_DIM : "",
		     f->end_kind == FR_END_TAIL ? "tail call" : "exit", name_of(r, f)->text, r->color ? C_OFF : "");
	line_done(&r->lines);
	return r->write_failed = ferror_unlocked(stdout) != 0;
}

static int process_begin(void *ctx, const struct trace_proc *p)
{
	struct replay *r = ctx;
	free(r->threads);
	free(r->runs);
	free_names(r);
	r->proc = p;
	r->nthreads = lr_nthreads(p->log);
	r->threads = xcalloc(r->nthreads + 1, sizeof(*r->threads));
	r->runs = xcalloc(r->nthreads + 1, sizeof(*r->runs));
	r->nruns = 0;
	r->lines.horizon = 0; /* the previous process's lines are all out (process_end) */
	if (r->nprocs > 1)
		printf("%s# process %u: %s%s\n", r->color ? C_DIM : "", p->info->pid, sf_esc(p->cmdline),
		       r->color ? C_OFF : "");
	return 0;
}

static int process_end(void *ctx, const struct trace_proc *p)
{
	struct replay *r = ctx;
	for (size_t i = 0; i < r->nthreads; i++)
		flush_run(r, lr_thread_at(p->log, i), p);
	queue_flush(&r->lines, UINT64_MAX);
	return r->write_failed = ferror(stdout) != 0;
}

/* trace_sink.wants_next: a thread's line waits on its next event while it
 * has a pending frame or a run of repaired closes not yet written. */
static int wants_next(void *ctx, const struct lr_thread *t)
{
	const struct replay *r = ctx;
	const struct thread_state *ts = &r->threads[t->index];
	return ts->has_pending || ts->run_count;
}

/* A run of closes is one event's (fr_frame.repair): all at its last
 * line's time. Once nothing still to come is that early, the run is
 * whole, and its comment goes out in its place in time. Without this a
 * thread whose next events the cut hides (-F), or that has none (closes
 * at its end), kept its run to the process's end, and its comment came
 * after the other threads' later lines. */
static void flush_runs_before(struct replay *r, uint64_t t)
{
	size_t kept = 0;
	for (size_t i = 0; i < r->nruns; i++) {
		struct thread_state *ts = &r->threads[r->runs[i]];
		if (ts->run_count && ts->last_time >= t) {
			r->runs[kept++] = r->runs[i];
			continue;
		}
		flush_run(r, lr_thread_at(r->proc->log, r->runs[i]), r->proc);
		ts->in_runs = 0;
	}
	r->nruns = kept;
}

/* trace_sink.horizon: the lines the thread running ahead still owes begin
 * at its pending frame, or at its latest line (a run of closes). */
static void horizon(void *ctx, const struct lr_thread *ahead, uint64_t t)
{
	struct replay *r = ctx;
	if (ahead) {
		const struct thread_state *ts = &r->threads[ahead->index];
		if (ts->has_pending && ts->pending.r_begin < t)
			t = ts->pending.r_begin;
		if (ts->run_count && ts->last_time < t)
			t = ts->last_time;
	}
	if (r->nruns)
		flush_runs_before(r, t);
	queue_flush(&r->lines, t);
}

/* ---- command line ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace replay [OPTIONS] LOG...\n"
		"\n"
		"Prints the recorded calls in order, nested, one line per call, in uftrace's\n"
		"layout: DURATION [TID] | then \"name() {\" for a call with callees, closed by\n"
		"\"} /* name */\" with its duration, or \"name();\" with its duration for a call\n"
		"without. Times in uftrace's units, truncated: us, ms, s below 60 s, m below\n"
		"24 minutes (seconds after the dot), then h (uftrace's: minutes / 24). LOG is\n"
		"a log file or a directory of logs: processes one after another, the threads\n"
		"of each merged in time order. Repairs show as comments where they happen\n"
		"(/* 2 frames unwound */), and so do calls the --time window cut.\n"
		"On a terminal the output goes through a pager ($" SF_ENV(PAGER) ", $PAGER or\n"
		"less) as git does (--no-pager: not).\n"
		"\n"
		"options:\n"
		"  -f, --output-fields LIST  columns: duration,tid (default), addr, time,\n"
		"                         delta, elapsed, task, module; +LIST adds to the\n"
		"                         default; none; all\n"
		"      --srcline          each call's source file:line (DWARF) as a comment\n"
		"      --raw-times        times as recorded: the tracer's own cost per call,\n"
		"                         measured at start, is not taken off (the default does)\n"
		"      --color WHEN       auto (default: when stdout is a terminal and NO_COLOR\n"
		"                         is unset), always or never\n"
		"  -h, --help             this help\n");
	input_opts_usage(out, 's');
}

/* The command line's own options. */
struct replay_opts {
	struct replay *r;
	const char *color;
	int raw_times;
};

static int replay_option(void *ctx, int c, const char *arg)
{
	struct replay_opts *o = ctx;
	switch (c) {
	case 'f': return parse_fields(o->r, arg);
	case 'L': o->r->srcline = 1; return 0;
	case 'R': o->raw_times = 1; return 0;
	case 'C': return parse_color(arg, &o->color);
	}
	return -1;
}

int cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output-fields", required_argument, 0, 'f'},
		{"srcline", no_argument, 0, 'L'},
		{"color", required_argument, 0, 'C'},
		{"colour", required_argument, 0, 'C'},
		{"raw-times", no_argument, 0, 'R'},
		{0, 0, 0, 0},
	};
	struct replay r = {0};
	struct input_opts io;
	input_opts_init(&io, 's');
	int rc = 1, usage_error;
	parse_fields(&r, "duration,tid");
	struct replay_opts ro = {&r, "auto", 0};
	const struct cmd_opts own = {longopts, "f:", replay_option, &ro, usage, IO_PAGE_BY_DEFAULT};
	switch (input_opts_parse(&io, &own, argc, argv)) {
	case IO_HELP_SHOWN: input_opts_free(&io); return 0;
	case IO_USAGE_ERROR: goto out_usage;
	}
	const char *color = ro.color;
	int tty = isatty(1);
	r.color = !strcmp(color, "always") || (!strcmp(color, "auto") && tty && !getenv("NO_COLOR"));
	io.trace.short_names = r.short_names = input_opts_short_names(&io, 1);
	io.trace.time_order = 1;
	io.trace.net_times = !ro.raw_times;
	io.trace.raw_cut = ro.raw_times;
	if (optind >= argc) { /* before the pager: a usage error stays on the screen */
		sf_error("no log given (usage: sftrace replay [OPTIONS] LOG...)");
		goto out_usage;
	}
	struct trace_input *in = input_opts_open(&io, "replay", argc, argv, optind, NULL, 0, &usage_error);
	if (!in) {
		if (usage_error)
			goto out_usage;
		goto out;
	}
	r.nprocs = trace_nprocs(in);
	static char buf[1 << 16];
	setvbuf(stdout, buf, _IOFBF, sizeof(buf));
	char net[512];
	r.cost_err = trace_cost_err(in);
	if (trace_format_net_marked(in, net, sizeof(net)))
		printf("%s# %s%s\n", r.color ? C_DIM : "", net, r.color ? C_OFF : "");
	print_header(&r);
	struct trace_sink sink = {.ctx = &r,
				  .process_begin = process_begin,
				  .frame_begin = frame_begin,
				  .frame_end = frame_end,
				  .frame_unmatched = frame_unmatched,
				  .process_end = process_end,
				  .wants_next = wants_next,
				  .horizon = horizon};
	int run = trace_run(in, &sink);
	rc = input_opts_end_output(&io, run == 0 || r.write_failed, "the replay");
	trace_report_repairs(in);
	trace_close(in);
	free(r.threads);
	free(r.runs);
	free_names(&r);
	free(r.lines.q);
	free(cur.p);
out:
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "replay");
}
