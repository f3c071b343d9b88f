/* Call-frame reconstruction: see frames.h. */
#include "lib/frames.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sf_args.h"
#include "format/sflog.h"
#include "lib/hashmap.h"
#include "lib/log_reader.h"
#include "lib/trace_cut.h"
#include "lib/util.h"

/* An open frame. */
struct fr_open {
	uint64_t id;
	uint64_t t_begin, r_begin;
	uint32_t func;
	uint32_t args_len;
	unsigned char *args; /* the entry's ARGS payload (malloc'd), NULL if none */
	unsigned cut;        /* CUT_START: a ring's entry placed at its window's start */
	uint8_t after_tail, tail_from_entry; /* fr_frame's */
	uint32_t tail_from;
	/* Its depth counting the recorded frames the reader never saw begin
	 * (1: the thread's outermost), which an SF_EV_UNWIND_TO compares. */
	uint64_t pos;
};

/* ARGS events wait for the event they describe: the function's next entry
 * (or exit, tail call) on the thread, usually the very next event. A few
 * are kept in case a signal handler's calls come in between. */
#define FR_PENDING 4
struct fr_pending {
	uint32_t func;
	uint32_t ret; /* SF_ARGS_RET */
	uint32_t len;
	unsigned char *bytes;
};

#define FR_BUCKETS 64

struct fr_thread {
	const struct lr_thread *key;
	const struct trace_proc *proc;
	struct fr_open *stack;
	size_t depth, cap;
	uint64_t last_t, last_r; /* the latest time, and the same on the recorded clock (fr_frame.r_begin) */
	int seen_time;
	uint32_t next_pause; /* index into the thread's pause_ns of the next pause not passed */
	/* The thread's depth counting the recorded frames open that the
	 * reader never delivered (begun before a ring's window, and not
	 * placed): the top's pos, plus such frames open above it. Placed
	 * frames sit among them where the reader found them
	 * (lr_event.pos), so a landing (SF_EV_UNWIND_TO) that abandons
	 * frames above a placed one leaves it open. */
	uint64_t abs;
	/* Open frames per bucket of function ids (func % FR_BUCKETS): an exit
	 * that does not close the innermost frame scans the stack only when
	 * its bucket says the function may be open, so the usual unmatched
	 * exit costs O(1). An array increment per frame: an exact per-function
	 * count in a hash table cost 6% of a whole conversion. */
	uint32_t open[FR_BUCKETS];
	struct fr_pending pend[FR_PENDING];
	unsigned npend;
	/* The last frame to end ended with a tail call (cleared by any other
	 * end, and by the next begin): the next frame to begin at its depth
	 * is after that tail call (fr_frame.after_tail). */
	struct {
		int open;
		uint32_t func, depth;
		uint8_t entry;
	} tail;
};

struct frames {
	struct fr_callbacks cb;
	void *ctx;
	const struct trace_proc *proc; /* for threads seen from now on */
	struct fr_stats stats;
	unsigned next_cut; /* the cut of the frame the next push opens (fr_feed) */
	int next_placed;   /* the next push is a ring's placed entry (fr_feed), at next_pos (0: not known) */
	uint64_t next_pos;
	uint64_t repair;   /* the latest repair event's number (fr_frame.repair) */
	uint64_t next_id;

	struct fr_thread *threads; /* first-seen order */
	size_t nthreads, threads_cap;
	struct hashmap slot_of; /* (uintptr_t)thread key -> index in threads */
	size_t last_slot;
};

struct frames *fr_new(const struct fr_callbacks *cb, void *ctx)
{
	struct frames *f = xcalloc(1, sizeof(*f));
	if (cb)
		f->cb = *cb;
	f->ctx = ctx;
	f->next_id = 1;
	f->last_slot = SIZE_MAX;
	return f;
}

/* ---- thread slots ---- */

static size_t thread_slot_find(struct frames *f, const struct lr_thread *key);

/* key's slot. Inline up to the last thread's: a call per event showed in
 * memory's replay cost. */
static inline __attribute__((always_inline)) size_t thread_slot(struct frames *f, const struct lr_thread *key)
{
	if (f->last_slot != SIZE_MAX && f->threads[f->last_slot].key == key)
		return f->last_slot;
	return thread_slot_find(f, key);
}

static size_t thread_slot_find(struct frames *f, const struct lr_thread *key)
{
	int added;
	uint64_t *at = hm_put(&f->slot_of, (uintptr_t)key, &added);
	if (!added)
		return f->last_slot = (size_t)*at;
	*at = f->nthreads;
	if (f->nthreads == f->threads_cap) {
		f->threads_cap = f->threads_cap ? f->threads_cap * 2 : 16;
		f->threads = xrealloc(f->threads, f->threads_cap * sizeof(*f->threads));
	}
	struct fr_thread *t = &f->threads[f->nthreads];
	memset(t, 0, sizeof(*t));
	t->key = key;
	t->proc = f->proc;
	t->abs = key ? key->outer + key->nbefore : 0;
	return f->last_slot = f->nthreads++;
}

void fr_set_proc(struct frames *f, const struct trace_proc *proc) { f->proc = proc; }

/* ---- stack ---- */

/* The waiting ARGS payload of func (entry values, or return values if
 * ret), handed over (the caller frees it); NULL if none. */
static unsigned char *take_pending(struct fr_thread *th, uint32_t func, uint32_t ret, uint32_t *len)
{
	for (unsigned i = th->npend; i-- > 0;) {
		struct fr_pending *p = &th->pend[i];
		if (p->func != func || p->ret != ret)
			continue;
		unsigned char *b = p->bytes;
		*len = p->len;
		memmove(p, p + 1, (th->npend - i - 1) * sizeof(*p));
		th->npend--;
		return b;
	}
	return NULL;
}

static void push(struct frames *f, size_t slot, uint32_t func, uint64_t t, uint64_t r)
{
	struct fr_thread *th = &f->threads[slot];
	if (th->depth == th->cap) {
		th->cap = th->cap ? th->cap * 2 : 64;
		th->stack = xrealloc(th->stack, th->cap * sizeof(*th->stack));
	}
	uint64_t parent = th->depth ? th->stack[th->depth - 1].id : 0;
	struct fr_open *fr = &th->stack[th->depth++];
	fr->id = f->next_id++;
	fr->t_begin = t;
	fr->r_begin = r;
	fr->func = func;
	fr->cut = f->next_cut;
	f->next_cut = 0;
	if (f->next_placed) { /* counted in abs already */
		uint64_t key_outer = th->key ? th->key->outer : 0;
		fr->pos = f->next_pos ? f->next_pos : key_outer + th->depth;
		th->abs = fr->pos > th->abs ? fr->pos : th->abs;
	} else {
		fr->pos = ++th->abs;
	}
	f->next_placed = 0;
	fr->args = th->npend ? take_pending(th, func, 0, &fr->args_len) : NULL;
	fr->after_tail = th->tail.open && th->tail.depth == th->depth - 1;
	fr->tail_from = fr->after_tail ? th->tail.func : 0;
	fr->tail_from_entry = fr->after_tail ? th->tail.entry : 0;
	th->tail.open = 0;
	th->open[func % FR_BUCKETS]++;
	f->stats.frames++;
	if (th->depth > f->stats.max_depth)
		f->stats.max_depth = th->depth > UINT32_MAX ? UINT32_MAX : (uint32_t)th->depth;
	if (f->cb.begin) {
		struct fr_frame out = {.proc = th->proc, .thread = th->key, .id = fr->id, .parent = parent,
				       .func_id = func, .depth = (uint32_t)(th->depth - 1), .t_begin = t, .r_begin = r,
				       .args = fr->args, .args_len = fr->args ? fr->args_len : 0, .cut = fr->cut,
				       .after_tail = fr->after_tail, .tail_from = fr->tail_from,
				       .tail_from_entry = fr->tail_from_entry};
		f->cb.begin(f->ctx, &out);
	}
}

static void pop_frame(struct frames *f, size_t slot, uint64_t t, uint64_t r, enum fr_end_kind kind,
		      int tail_entry)
{
	struct fr_thread *th = &f->threads[slot];
	struct fr_open fr = th->stack[--th->depth];
	th->open[fr.func % FR_BUCKETS]--;
	th->abs = fr.pos - 1;
	uint32_t ret_len = 0;
	unsigned char *ret = NULL;
	if (th->npend && (kind == FR_END_EXIT || kind == FR_END_TAIL))
		ret = take_pending(th, fr.func, SF_ARGS_RET, &ret_len);
	th->tail.open = kind == FR_END_TAIL;
	th->tail.func = fr.func;
	th->tail.depth = (uint32_t)th->depth;
	th->tail.entry = (uint8_t)tail_entry;
	if (f->cb.end) {
		struct fr_frame out = {.proc = th->proc, .thread = th->key, .id = fr.id,
				       .parent = th->depth ? th->stack[th->depth - 1].id : 0, .func_id = fr.func,
				       .depth = (uint32_t)th->depth, .t_begin = fr.t_begin, .t_end = t,
				       .r_begin = fr.r_begin, .r_end = r, .end_kind = kind,
				       .repair = fr_end_is_repaired(kind) ? f->repair : 0, .args = fr.args, .args_len = fr.args ? fr.args_len : 0,
				       .ret = ret, .ret_len = ret_len, .tail_entry = (uint8_t)tail_entry, .cut = fr.cut,
				       .after_tail = fr.after_tail, .tail_from = fr.tail_from,
				       .tail_from_entry = fr.tail_from_entry};
		f->cb.end(f->ctx, &out);
	}
	free(fr.args);
	free(ret);
}

static void pop(struct frames *f, size_t slot, uint64_t t, uint64_t r, enum fr_end_kind kind)
{
	pop_frame(f, slot, t, r, kind, 0);
}

/* The innermost delivered frame's pos (0: none open). */
static uint64_t top_pos(const struct fr_thread *th)
{
	return th->depth ? th->stack[th->depth - 1].pos : 0;
}

/* Whether func has a frame open on the thread. */
static int is_open(const struct fr_thread *th, uint32_t func)
{
	if (!th->open[func % FR_BUCKETS])
		return 0;
	for (size_t i = th->depth; i-- > 0;)
		if (th->stack[i].func == func)
			return 1;
	return 0;
}

/* An exit or tail-call event (event kind `ev_kind`) of func. */
static void close_frame(struct frames *f, size_t slot, uint32_t func, uint64_t t, uint64_t r, uint32_t ev_kind)
{
	struct fr_thread *th = &f->threads[slot];
	enum fr_end_kind kind = ev_kind == SF_EV_EXIT ? FR_END_EXIT : FR_END_TAIL;
	int tail_entry = ev_kind == SF_EV_TAIL_ENTRY;
	if (th->depth && th->stack[th->depth - 1].func == func) {
		pop_frame(f, slot, t, r, kind, tail_entry);
		return;
	}
	if (!is_open(th, func)) {
		f->stats.unmatched_exits++;
		if (f->cb.unmatched) {
			struct fr_frame out = {.proc = th->proc, .thread = th->key, .func_id = func, .t_end = t,
					       .r_end = r, .end_kind = kind};
			f->cb.unmatched(f->ctx, &out);
		}
		if (th->abs > top_pos(th))
			th->abs--; /* one of the frames never delivered, above the known ones */
		return;
	}
	f->repair++;
	while (th->stack[th->depth - 1].func != func) {
		pop(f, slot, t, r, FR_END_UNWOUND);
		f->stats.unwound++;
	}
	pop_frame(f, slot, t, r, kind, tail_entry);
}

/* Unwinding landed with n recorded frames below the landing point: they
 * end now. */
static void close_landed(struct frames *f, size_t slot, uint32_t n, uint64_t t, uint64_t r)
{
	struct fr_thread *th = &f->threads[slot];
	if (n == SF_UNWIND_UNCOUNTED) {
		/* A landing the runtime could not count: nothing closes, its
		 * place is told (the frames it abandoned close at an outer exit). */
		f->stats.landings_uncounted++;
		if (f->cb.unmatched) {
			struct fr_frame out = {.proc = th->proc, .thread = th->key, .func_id = FR_NO_FUNC, .t_end = t,
					       .r_end = r, .end_kind = FR_END_UNCOUNTED};
			f->cb.unmatched(f->ctx, &out);
		}
		return;
	}
	f->repair++;
	for (; n && th->depth; n--) {
		pop(f, slot, t, r, FR_END_UNWOUND);
		f->stats.unwound++;
	}
}

/* SF_EV_UNWIND_TO: the landing leaves `to` recorded frames open; the
 * delivered ones deeper than that were abandoned (placed frames below
 * abandoned ones never delivered stay open). The thread's depth is then
 * the runtime's (it grows when the runtime says more are open than the
 * reader knows of). */
static void close_landed_to(struct frames *f, size_t slot, uint64_t to, uint64_t t, uint64_t r)
{
	struct fr_thread *th = &f->threads[slot];
	f->repair++;
	while (th->depth && th->stack[th->depth - 1].pos > to) {
		pop(f, slot, t, r, FR_END_UNWOUND);
		f->stats.unwound++;
	}
	th->abs = to;
}

/* A time on the recorded clock, at or after the thread's latest, on the
 * clock as given: that one runs behind by what the thread's events so far
 * had taken off (times net of the tracer). */
static uint64_t given_time(const struct fr_thread *th, uint64_t at_r)
{
	return at_r - (th->last_r - th->last_t);
}

/* Closes the thread's open frames at each pause before r, the next
 * event's time on the recorded clock (all of them when r is UINT64_MAX):
 * they were in flight when tracing went off. Pauses are on the recorded
 * clock; t (the next event's time as given) bounds their time as given. */
static void pass_pauses(struct frames *f, size_t slot, uint64_t t, uint64_t r)
{
	struct fr_thread *th = &f->threads[slot];
	const struct lr_thread *lt = th->key;
	while (lt && th->next_pause < lt->npauses && lt->pause_ns[th->next_pause] < r) {
		uint64_t at_r = lt->pause_ns[th->next_pause++], at = at_r;
		if (th->seen_time && at_r < th->last_r)
			at_r = th->last_r;
		if (th->seen_time)
			at = given_time(th, at_r);
		if (at > t)
			at = t;
		/* The runtime forgets them too: after a resume each thread
		 * counts its depth (SF_EV_UNWIND_TO) from the frames it entered
		 * since (runtime/buffer.c, sf_shadow_resync), and records no
		 * landing while paused. Their exits after it are unmatched. */
		f->repair++;
		while (th->depth) {
			pop(f, slot, at, at_r, FR_END_PAUSED);
			f->stats.open_at_pause++;
		}
		th->abs = 0;
	}
}

void fr_event(struct frames *f, const struct lr_thread *thread, uint32_t kind, uint32_t func_id, uint64_t t_ns,
	      uint64_t r_ns)
{
	size_t slot = thread_slot(f, thread);
	struct fr_thread *th = &f->threads[slot];
	if (thread && thread->npauses)
		pass_pauses(f, slot, t_ns, r_ns);
	/* Counted on the recorded clock: a net clock (trace_input) never runs
	 * backwards, so every command counts the same repairs. */
	if (th->seen_time && r_ns < th->last_r) {
		r_ns = th->last_r;
		f->stats.clamped++;
	}
	if (th->seen_time && t_ns < th->last_t)
		t_ns = th->last_t;
	th->last_t = t_ns;
	th->last_r = r_ns;
	th->seen_time = 1;
	/* Other kinds (allocations) only advance the thread's clock. */
	if (kind == SF_EV_ENTRY)
		push(f, slot, func_id, t_ns, r_ns);
	else if (kind == SF_EV_EXIT || sf_kind_is_tail(kind))
		close_frame(f, slot, func_id, t_ns, r_ns, kind);
	else if (kind == SF_EV_UNWIND)
		close_landed(f, slot, func_id, t_ns, r_ns);
	else if (kind == SF_EV_UNWIND_TO)
		close_landed_to(f, slot, func_id, t_ns, r_ns);
}

/* An ARGS event: kept until the event it describes. Fillers (no
 * payload, or no items) are skipped. */
static void keep_args(struct frames *f, const struct lr_event *ev)
{
	struct sf_args_head h;
	if (!ev->args || ev->args_len < sizeof(h))
		return;
	memcpy(&h, ev->args, sizeof(h));
	if (!h.nitems)
		return;
	size_t slot = thread_slot(f, ev->thread); /* may move f->threads */
	struct fr_thread *th = &f->threads[slot];
	if (th->npend == FR_PENDING) { /* the oldest was never claimed */
		free(th->pend[0].bytes);
		memmove(th->pend, th->pend + 1, (FR_PENDING - 1) * sizeof(th->pend[0]));
		th->npend--;
	}
	struct fr_pending *p = &th->pend[th->npend++];
	p->func = ev->func_id;
	p->ret = h.flags & SF_ARGS_RET;
	p->len = ev->args_len;
	p->bytes = xmalloc(ev->args_len);
	memcpy(p->bytes, ev->args, ev->args_len);
}

void fr_feed(struct frames *f, const struct lr_event *ev)
{
	if (ev->kind == SF_EV_ARGS)
		keep_args(f, ev);
	f->stats.before_window += ev->before_window != 0;
	/* A ring's entry the reader placed at the window's start: the frame
	 * began earlier, so outputs mark it as a cut one (trace_cut.h). */
	f->next_cut = ev->before_window && ev->kind == SF_EV_ENTRY ? CUT_START : 0;
	f->next_placed = ev->before_window && ev->kind == SF_EV_ENTRY;
	f->next_pos = f->next_placed ? ev->pos : 0;
	/* An ARGS event's time is its function event's, which comes next:
	 * it moves no clock. A filler's is the runtime's guess for records an
	 * abandoned claim left (a handler's siglongjmp out of one: its pad
	 * took the time of the record before, a value's low half, hundreds of
	 * ms off), and as the thread's clock it raised every later time of the
	 * run up to it (skep7_sig jmp under -a: 1,889,666 of 3,504,331 events
	 * raised). */
	if (ev->kind == SF_EV_ARGS)
		return;
	fr_event(f, ev->thread, ev->kind, ev->func_id, ev->time_ns, ev->rec_ns);
}

static void end_slot(struct frames *f, size_t slot, uint64_t snap_r)
{
	struct fr_thread *th = &f->threads[slot];
	if (th->key && th->key->npauses && th->depth)
		pass_pauses(f, slot, UINT64_MAX, UINT64_MAX); /* a pause after the thread's last event */
	/* Events after the last pause come from sleds a thread was inside
	 * when they were unpatched: in flight at the pause too. */
	f->repair++;
	while (th->key && th->key->ends_paused && th->depth) {
		pop(f, slot, th->last_t, th->last_r, FR_END_PAUSED);
		f->stats.open_at_pause++;
	}
	th->tail.open = 0; /* the thread's next frame starts a fresh stack */
	int snapshot = th->key && th->key->ends_at_snapshot;
	/* A snapshot's thread went on: its open frames last to the
	 * snapshot's end, not to its own last event (a thread blocked
	 * since). */
	uint64_t at = th->last_t, at_r = th->last_r;
	if (snapshot && snap_r > at_r) {
		at = given_time(th, snap_r);
		at_r = snap_r;
	}
	f->repair++;
	while (th->depth) {
		pop(f, slot, at, at_r, snapshot ? FR_END_SNAPSHOT : FR_END_THREAD_END);
		if (snapshot)
			f->stats.open_at_snapshot++;
		else
			f->stats.open_at_end++;
	}
	th->abs = 0;
}

void fr_end_thread(struct frames *f, const struct lr_thread *thread, uint64_t snap_r)
{
	end_slot(f, thread_slot(f, thread), snap_r);
}

void fr_finish(struct frames *f)
{
	for (size_t i = 0; i < f->nthreads; i++)
		end_slot(f, i, 0);
}

size_t fr_depth(const struct frames *f, const struct lr_thread *thread)
{
	const uint64_t *at = hm_find(&f->slot_of, (uintptr_t)thread);
	return at ? f->threads[*at].depth : 0;
}

const struct fr_stats *fr_stats(const struct frames *f) { return &f->stats; }

void fr_stats_since(const struct fr_stats *now, const struct fr_stats *then, struct fr_stats *out)
{
	*out = (struct fr_stats){
		.frames = now->frames - then->frames,
		.unmatched_exits = now->unmatched_exits - then->unmatched_exits,
		.unwound = now->unwound - then->unwound,
		.open_at_end = now->open_at_end - then->open_at_end,
		.clamped = now->clamped - then->clamped,
		.max_depth = now->max_depth,
		.before_window = now->before_window - then->before_window,
		.open_at_pause = now->open_at_pause - then->open_at_pause,
		.open_at_snapshot = now->open_at_snapshot - then->open_at_snapshot,
		.landings_uncounted = now->landings_uncounted - then->landings_uncounted,
	};
}

static void append(char *buf, size_t len, size_t *pos, int *parts, uint64_t n, const char *one,
		   const char *many)
{
	if (!n)
		return;
	int w = snprintf(buf + *pos, len - *pos, "%s%" PRIu64 " %s", *parts ? ", " : FR_REPAIRED, n,
			 n == 1 ? one : many);
	if (w > 0)
		*pos += (size_t)w < len - *pos ? (size_t)w : len - *pos - 1;
	(*parts)++;
}

int fr_format_repairs(const struct fr_stats *s, char *buf, size_t len)
{
	if (!len)
		return 0;
	size_t pos = 0;
	int parts = 0;
	buf[0] = 0;
	append(buf, len, &pos, &parts, s->unmatched_exits, "unmatched exit dropped", "unmatched exits dropped");
	append(buf, len, &pos, &parts, s->unwound, "frame closed by unwinding", "frames closed by unwinding");
	append(buf, len, &pos, &parts, s->open_at_end, "open frame closed at thread end",
	       "open frames closed at thread end");
	append(buf, len, &pos, &parts, s->open_at_snapshot, "open frame closed at the snapshot's end",
	       "open frames closed at the snapshot's end");
	append(buf, len, &pos, &parts, s->open_at_pause, "frame in flight closed at a pause",
	       "frames in flight closed at a pause");
	append(buf, len, &pos, &parts, s->clamped, "backward timestamp raised", "backward timestamps raised");
	append(buf, len, &pos, &parts, s->before_window, "frame began before the ring's window",
	       "frames began before the ring's window");
	return parts > 0;
}

void fr_json_repairs(const struct fr_stats *s, char *buf, size_t len)
{
	snprintf(buf, len,
		 "{\"unmatched_exits\":%" PRIu64 ",\"unwound\":%" PRIu64 ",\"open_at_end\":%" PRIu64
		 ",\"open_at_snapshot\":%" PRIu64 ",\"open_at_pause\":%" PRIu64 ",\"clamped\":%" PRIu64
		 ",\"before_window\":%" PRIu64 "}",
		 s->unmatched_exits, s->unwound, s->open_at_end, s->open_at_snapshot, s->open_at_pause, s->clamped,
		 s->before_window);
}

void fr_free(struct frames *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nthreads; i++) {
		for (size_t k = 0; k < f->threads[i].depth; k++)
			free(f->threads[i].stack[k].args);
		for (unsigned k = 0; k < f->threads[i].npend; k++)
			free(f->threads[i].pend[k].bytes);
		free(f->threads[i].stack);
	}
	free(f->threads);
	hm_free(&f->slot_of);
	free(f);
}
