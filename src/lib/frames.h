/* Call-frame reconstruction from entry/exit/tail events, with repairs.
 *
 * The one implementation every output uses (Perfetto, Parquet, Chrome,
 * folded, report), so they all agree on what a frame is. Feed each thread's
 * events in recording order (lr_iter order is fine: threads may interleave);
 * frames come out through two callbacks:
 *   begin when a function is entered,
 *   end   when its frame closes (always after its children's ends).
 *
 * A TAIL event for F closes F's frame (F jumps to G instead of returning), so
 * "F entry, F tail, G entry, G exit" gives F and G as siblings at one depth.
 *
 * Repairs, each counted in fr_stats:
 *   - an exit or tail whose function is not open on the thread's stack is
 *     dropped (tracing started inside that call);
 *   - an UNWIND event (the runtime saw a longjmp, a catch, a catch_unwind or
 *     a cleanup pad land) closes the number of innermost frames it carries
 *     at its time (end kind FR_END_UNWOUND): the frames unwinding abandoned;
 *     an UNWIND_TO event (kind 9) closes innermost frames until the
 *     thread's depth is the one it carries (fr_unwind_to);
 *   - an exit for a function deeper in the stack (unwinding the runtime did
 *     not see, e.g. in a log of version 2) closes the frames above it
 *     at this exit's time (end kind FR_END_UNWOUND), then closes it;
 *   - in a ring log, frames whose entry fell out of the ring begin at the
 *     thread's first kept event (the reader places their entries there,
 *     each at the depth it found it, lr_event.pos: an UNWIND_TO closes
 *     the frames deeper than the depth it leaves, counting those the
 *     reader never delivered);
 *   - frames still open when the thread ends (exit(), crash) are closed at
 *     the thread's last timestamp (FR_END_THREAD_END); in a snapshot the
 *     thread went on: they were open at the snapshot's end, where they
 *     are closed (FR_END_SNAPSHOT: its trigger's time, which every
 *     thread's window ends at, else the process's last event);
 *   - frames open when tracing was paused (sftrace pause: the thread's
 *     lr_thread.pause_ns) are closed at the pause (FR_END_PAUSED), before
 *     the thread's first later event; their exits after a resume are then
 *     unmatched exits, dropped as above.
 * Times within a thread are made non-decreasing (a time earlier than the
 * thread's previous one is raised to it, and counted).
 *
 * Frame ids are unique within one `struct frames` (one per conversion, even
 * over several logs), from 1; parent id 0 means a root frame. Depth is 0 for
 * root frames. Stack depth is unbounded (deep recursion is fine).
 * Memory: open frames plus one counter per (thread, function) pair seen.
 */
#ifndef SFTRACE_LIB_FRAMES_H
#define SFTRACE_LIB_FRAMES_H

#include <stddef.h>
#include <stdint.h>

struct lr_thread;
struct lr_event;
struct trace_proc;

enum fr_end_kind {
	FR_END_EXIT = 1,       /* its exit event */
	FR_END_TAIL = 2,       /* its tail-call event */
	FR_END_UNWOUND = 3,    /* repaired: abandoned by unwinding (UNWIND event or an outer exit) */
	FR_END_THREAD_END = 4, /* repaired: still open when the thread ended */
	FR_END_PAUSED = 5,     /* repaired: in flight when tracing was paused (sftrace pause) */
	FR_END_SNAPSHOT = 6,   /* repaired: open at a snapshot's end (the thread went on) */
	/* Not a frame's end: fr_callbacks.unmatched's mark of a landing the
	 * runtime could not count (SF_EV_UNWIND of SF_UNWIND_UNCOUNTED), which
	 * closed nothing; func_id is FR_NO_FUNC. */
	FR_END_UNCOUNTED = 7,
};
#define FR_NO_FUNC UINT32_MAX

static inline int fr_end_is_repaired(enum fr_end_kind k) { return k >= FR_END_UNWOUND; }

/* One frame, as every stage passes it on. A stage that changes a frame
 * (the cut rewrites parent, depth and clipped times) passes its own copy. */
struct fr_frame {
	const struct trace_proc *proc;  /* set by fr_set_proc (trace_input's process); NULL if never set */
	const struct lr_thread *thread;
	uint64_t id, parent;            /* parent 0: a root frame */
	uint32_t func_id;               /* the log's function id */
	uint32_t depth;                 /* 0 for root frames */
	uint64_t t_begin;
	uint64_t t_end;                 /* only in `end` (0 in `begin`) */
	/* The same on the recorded clock (lr_event.rec_ns), which --time cuts
	 * on: equal to them unless times are net of the tracer's cost. */
	uint64_t r_begin, r_end;
	enum fr_end_kind end_kind;      /* only in `end` (0 in `begin`) */
	/* end only, repaired kinds: which repair closed it, from 1; the frames
	 * one event closes (an UNWIND, an outer exit, a thread's end, a pause)
	 * share it, so a view can tell two unwinds in a row apart. */
	uint64_t repair;
	/* FR_END_TAIL only: its event was kind 15, the sled's jump lands on a
	 * patched entry of its object (the callee's frame begins next). In a
	 * log with SF_FEAT_TAIL_TARGET, 0 means the jump went elsewhere. */
	uint8_t tail_entry;
	/* begin and end: the frame began right after a tail call at its depth
	 * on its thread, in the recorded events (before any cut): the frame
	 * that ended with it ran tail_from, its tail_entry was tail_from_entry.
	 * Whether the jump went here is the views' check (lib/tail_mark.h).
	 * Decided here, before a cut, and carried with the frame: a cut that
	 * removes the callee removes the mark, and never moves it to the next
	 * frame the cut keeps at that depth. */
	uint8_t after_tail, tail_from_entry;
	uint32_t tail_from;
	unsigned cut;                   /* trace_cut.h's CUT_START / CUT_END; frames.c: CUT_START on a ring's placed entry */
	/* record -A/-R: the ARGS payloads (format/sf_args.h; lib/arg_values.h
	 * reads them) of its entry (begin and end) and of its exit (end only);
	 * NULL when none was recorded. Valid during the callback (the frame
	 * owns them until it ends). */
	const unsigned char *args, *ret;
	uint32_t args_len, ret_len;
};

/* The frame is valid only during the call. */
struct fr_callbacks {
	void (*begin)(void *ctx, const struct fr_frame *f);
	void (*end)(void *ctx, const struct fr_frame *f);
	/* Optional: an exit or tail of a function not open on the thread's
	 * stack, dropped (proc, thread, func_id, t_end and end_kind set); or,
	 * end_kind FR_END_UNCOUNTED, a landing the runtime could not count,
	 * where it happened. */
	void (*unmatched)(void *ctx, const struct fr_frame *f);
};

struct fr_stats {
	uint64_t frames;          /* frames begun */
	uint64_t unmatched_exits; /* exits/tails dropped: function not on the stack */
	uint64_t unwound;         /* frames abandoned by unwinding (UNWIND events, outer exits) */
	uint64_t open_at_end;     /* frames closed at their thread's end */
	uint64_t clamped;         /* event times raised to keep a thread non-decreasing */
	uint32_t max_depth;       /* deepest stack seen (frames) */
	uint64_t before_window;   /* ring logs: frames whose entry fell out of the ring, begun at
				   * the window's start (the reader's before_window entries) */
	uint64_t open_at_pause;   /* frames closed at a pause (in flight when tracing went off) */
	uint64_t open_at_snapshot; /* frames closed at a snapshot's end (open when it was taken) */
	uint64_t landings_uncounted; /* landings the runtime marked uncounted (closed nothing) */
};

struct frames;

/* SF_EV_UNWIND_TO `to`: the thread has `to` recorded frames open after the
 * landing. A reader that sees `depth` of them, with *outer more open that
 * it never saw begin (lr_thread.outer), closes the returned number of its
 * innermost frames; *outer is updated (it grows when the runtime says more
 * are open than the reader knows of). */
static inline size_t fr_unwind_to(size_t depth, int64_t *outer, uint64_t to)
{
	int64_t have = (int64_t)depth + *outer, want = (int64_t)to;
	size_t n = 0;
	if (have > want)
		n = (uint64_t)(have - want) < depth ? (size_t)(have - want) : depth;
	*outer = want - (int64_t)(depth - n);
	return n;
}

/* cb and either callback may be NULL. */
struct frames *fr_new(const struct fr_callbacks *cb, void *ctx);

/* The process that threads seen from now on belong to (fr_frame.proc of
 * their frames). Threads already seen keep theirs. */
void fr_set_proc(struct frames *f, const struct trace_proc *proc);

/* One event of `thread`. Kinds other than entry/exit/tail open or close
 * nothing but count as the thread's latest time. */
void fr_event(struct frames *f, const struct lr_thread *thread, uint32_t kind, uint32_t func_id,
	      uint64_t t_ns, uint64_t r_ns);
/* Same, from a reader event. */
void fr_feed(struct frames *f, const struct lr_event *ev);

/* Closes the thread's open frames at its last timestamp; in a snapshot
 * (lr_thread.ends_at_snapshot) at snap_r instead when it is later: the
 * snapshot's end on the recorded clock (fr_frame.r_end; 0: not known).
 * Later events for the thread start a fresh stack. */
void fr_end_thread(struct frames *f, const struct lr_thread *thread, uint64_t snap_r);
/* Ends every thread, in the order threads were first seen (a snapshot's
 * at their last timestamps). */
void fr_finish(struct frames *f);

/* The deepest open depth of a thread (0 = nothing open, or never seen). */
size_t fr_depth(const struct frames *f, const struct lr_thread *thread);

const struct fr_stats *fr_stats(const struct frames *f);
/* The counts from *then to *now (two fr_stats of one run: one process's
 * part of it). max_depth is now's: a maximum does not subtract. */
void fr_stats_since(const struct fr_stats *now, const struct fr_stats *then, struct fr_stats *out);

/* "repaired: 3 unmatched exits dropped, 2 frames closed by unwinding, 5 open
 * frames closed at thread end" (only the nonzero parts; the line starts
 * with FR_REPAIRED). Returns 0 and writes "" when nothing was repaired,
 * else 1. */
#define FR_REPAIRED "repaired: "
int fr_format_repairs(const struct fr_stats *s, char *buf, size_t len);
/* The same counts as one JSON object, every kind named as its fr_stats
 * field: {"unmatched_exits":0,"unwound":3,...}. */
void fr_json_repairs(const struct fr_stats *s, char *buf, size_t len);

void fr_free(struct frames *f);

#endif
