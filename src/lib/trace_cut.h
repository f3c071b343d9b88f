/* Cutting a trace: the stage between frame repair (frames.c) and the
 * outputs, so every output of trace_input gets the same cut.
 *
 * A frame is a candidate when its function passes the filter file (select:
 * the function is listed; within: a listed function is open on the thread,
 * itself included; objects the filter does not name follow its `unlisted`
 * setting), when an -F function is open on the thread (itself included) if
 * -F was given, when no -N function is (uftrace's -F and -N), and when
 * fewer than max_depth candidate frames enclose it. A candidate
 * is kept when it also lasts at least min_duration and overlaps the time
 * window. Kept frames hang under their nearest kept ancestor (parent id and
 * depth are rewritten), so every output stays balanced.
 *
 * Streaming: a candidate is held (not yet emitted) only while it is open and
 * not yet known to qualify: younger than min_duration, or begun before the
 * window with no event inside it yet. Everything that begins and ends while
 * an ancestor is held is shorter than that ancestor's age, so it is dropped
 * anyway: memory is the open frames, never events.
 *
 * Input and output are the pipeline's one frame shape (struct fr_frame,
 * frames.h), so a cut's output can be another cut's input: trace_input
 * chains the record-time trim (a cut with a log's own limits) straight into
 * the user's cut.
 *
 * Kept calls keep their exact times, except those the window clips: a call
 * begun before the window starts at its start (CUT_START), one still open
 * at its end ends there (CUT_END). Durations tested against min_duration
 * are the calls' real ones on the clock the frames come on (t_begin,
 * t_end: trace_input runs the pipeline on the net one whenever the log has
 * the tracer's cost, unless --raw-times, so every command keeps the same
 * calls), before clipping; the record-time trim's on the recorded clock
 * (cut_set_limits).
 */
#ifndef SFTRACE_LIB_TRACE_CUT_H
#define SFTRACE_LIB_TRACE_CUT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/frames.h"

struct lr_log;
struct lr_thread;

enum { CUT_START = 1, CUT_END = 2 };

/* What the user asked for (input_opts fills it). Zero values cut nothing. */
struct trace_cut_options {
	const char *filter_path;  /* -c/--filter FILE */
	const char *const *only_funcs;    /* -F/--filter-func REGEX... */
	size_t nonly_funcs;
	const char *const *notrace_funcs; /* -N/--notrace REGEX... */
	size_t nnotrace_funcs;
	/* Each -F and -N's place on the command line (NULL: every -N after
	 * every -F): for a function both find, the later one wins. */
	const unsigned *only_seq, *notrace_seq;
	const uint32_t *tids;     /* --tid LIST */
	size_t ntids;
	int has_window;           /* --time START..END */
	uint64_t win_start, win_end; /* ns from the trace start; win_end UINT64_MAX: open */
	uint64_t min_duration;    /* --min-duration, ns */
	uint32_t max_depth;       /* --max-depth, 0: unlimited */
};

static inline int cut_active(const struct trace_cut_options *o)
{
	return o->filter_path || o->nonly_funcs || o->nnotrace_funcs || o->ntids || o->has_window ||
	       o->min_duration || o->max_depth;
}

/* Counted over a whole run. */
struct cut_stats {
	uint64_t kept;       /* frames emitted */
	uint64_t cut_start;  /* kept frames begun before the window */
	uint64_t cut_end;    /* kept frames still open at its end */
};

/* A parsed filter file. NULL after an error line naming the file. */
struct cut_filter;
struct cut_filter *cut_filter_load(const char *path);
/* Checks the filter against a log's objects: -1 after an error line if it
 * names one of them with another build-id; *selected counts the log's
 * functions it selects. */
int cut_filter_check(const struct cut_filter *f, const char *filter_path, const struct lr_log *log,
		    uint64_t *selected);
/* The functions the filter lists for a log object (matched as the cut
 * matches it), with the name the filter gives each. */
struct lr_object;
void cut_filter_each_name(const struct cut_filter *f, const struct lr_object *o,
			  void (*cb)(void *ctx, uint64_t vaddr, const char *name), void *ctx);
void cut_filter_free(struct cut_filter *f);

struct trace_cut;

/* filter may be NULL. The cut does not own it. Kept frames go to `out`
 * (another cut, or trace_input's sink) with out_ctx, as struct fr_frame with
 * parent and depth rewritten and `cut` set where the window clipped them. */
/* On the net clock (times net of the tracer), the fraction within which
 * the cost taken off a frame is known: --min-duration keeps a frame that
 * could reach it at that error (0: judged on the net figure alone). */
void cut_set_net_err(struct trace_cut *c, double err);
struct trace_cut *cut_new(const struct trace_cut_options *opt, const struct cut_filter *filter,
			 const struct fr_callbacks *out, void *out_ctx);

/* Before a process's frames: its log (for the filter), and its start's
 * offset from the trace start (ns), which places the window. */
void cut_process(struct trace_cut *c, const struct lr_log *log, uint64_t offset_ns);

/* -F/-N: which of a function's names the regexes find, CUT_MARK_ONLY (an
 * -F regex) and CUT_MARK_NOTRACE (an -N regex). The cut asks once per
 * function of a process, when it first meets the function, so a process's
 * unused functions cost nothing. */
enum { CUT_MARK_ONLY = 1, CUT_MARK_NOTRACE = 2 };
typedef unsigned (*cut_mark_fn)(void *ctx, uint32_t func_id);
/* Before cut_process; needed when the options have -F or -N. */
void cut_set_marker(struct trace_cut *c, cut_mark_fn fn, void *ctx);

/* After cut_process: thread t (lr_thread.index) starts inside frames no
 * event begins, ids outermost first (lr_inherited_frames: a fork child's
 * parent's frames, main's at least). Its calls are then "under" them for
 * -F/-N and a within filter file, as they were in the parent. Whether the
 * cut needs them: cut_wants_inherited. */
void cut_set_inherited(struct trace_cut *c, uint32_t t, const uint32_t *ids, size_t n);
int cut_wants_inherited(const struct trace_cut *c);

/* Replaces the options' min_duration and max_depth (before cut_process):
 * the per-log limits of record-time trimming (trace_input). min_duration
 * then judges the recorded durations (r_begin, r_end) whatever clock the
 * frames come on: the runtime judged them so and dropped only what that
 * rule drops, so a net clock would cut again what it kept (the more calls
 * the runtime left in a thread's batches, the more tracer cost is taken
 * off their callers: threads of one program kept different calls). */
void cut_set_limits(struct trace_cut *c, uint64_t min_duration, uint32_t max_depth);

/* Whether events of this tid are wanted at all (--tid). */
int cut_tid_wanted(const struct trace_cut *c, uint32_t tid);

/* The stage's input: struct fr_callbacks with the cut as ctx, in frames.c's
 * order (so `{cut_begin, cut_end}` takes frames.c's or another cut's output).
 * It reads proc, thread, id, func_id, the times and the end kind: parent
 * and depth are the cut's own, among the frames it keeps. */
void cut_begin(void *cut, const struct fr_frame *f);
void cut_end(void *cut, const struct fr_frame *f);
/* An exit or tail of a function not open on the thread (frames.c's
 * unmatched), passed on where its place is kept: its time inside the
 * window, and a call of its function beginning there a candidate (-c,
 * -F/-N, --max-depth judge it as that call; --tid, as its thread). Its
 * depth and parent are set to that call's. Under --min-duration it waits
 * while a frame enclosing it is held, and goes with that frame when the
 * frame is cut. An uncounted landing (FR_END_UNCOUNTED), whose frames are
 * not known, goes inside the innermost frame kept around it, when -F or a
 * within filter would keep what is inside the innermost open frame. */
void cut_unmatched(void *cut, const struct fr_frame *f);

const struct cut_stats *cut_stats(const struct trace_cut *c);

/* When the cut holds a frame of the thread, the time (recorded clock) its
 * begin will have if it is kept, earlier than the thread's latest event:
 * its r_begin, or the window's start for one begun before it. UINT64_MAX
 * when it holds none. trace_input runs such a thread ahead for a sink that
 * orders its output by time. */
uint64_t cut_held_from(const struct trace_cut *c, const struct lr_thread *t);

void cut_free(struct trace_cut *c);

#endif
