/* Frame reconstruction and repair tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format/sflog.h"
#include "lib/frames.h"
#include "lib/log_reader.h"

/* Threads are only keys to the frames module. */
static struct lr_thread g_t1 = {.index = 0, .serial = 1, .tid = 100};
static struct lr_thread g_t2 = {.index = 1, .serial = 2, .tid = 101};

/* Callbacks append one line per call. */
struct rec {
	char *text;
	size_t len, cap;
	uint64_t last_end_id;
	int ends_in_order; /* each end's id is the newest open one */
	uint64_t ends;
	uint64_t last_t[4]; /* by lr_thread.index: the cases use 0 to 2 */
	int times_ok;
};

static void out(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct rec *r, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (r->len + (size_t)n + 1 > r->cap) {
		r->cap = (r->cap + (size_t)n + 1) * 2;
		r->text = realloc(r->text, r->cap);
	}
	memcpy(r->text + r->len, buf, (size_t)n + 1);
	r->len += (size_t)n;
}

static const char *kind_str(enum fr_end_kind k)
{
	switch (k) {
	case FR_END_EXIT: return "exit";
	case FR_END_TAIL: return "tail";
	case FR_END_UNWOUND: return "unwound";
	case FR_END_THREAD_END: return "threadend";
	case FR_END_PAUSED: return "paused";
	case FR_END_SNAPSHOT: return "snapshot";
	case FR_END_UNCOUNTED: return "uncounted";
	}
	return "?";
}

static int g_quiet; /* deep tests: check properties, skip the text */

static void on_begin(void *ctx, const struct fr_frame *f)
{
	struct rec *r = ctx;
	const struct lr_thread *t = f->thread;
	uint64_t id = f->id, parent = f->parent, ts = f->t_begin;
	uint32_t func = f->func_id, depth = f->depth;
	if (ts < r->last_t[t->index])
		r->times_ok = 0;
	r->last_t[t->index] = ts;
	if (!g_quiet)
		out(r, "B%u #%llu p%llu f%u d%u @%llu\n", t->tid, (unsigned long long)id, (unsigned long long)parent,
		    func, depth, (unsigned long long)ts);
}

static void on_end(void *ctx, const struct fr_frame *f)
{
	struct rec *r = ctx;
	const struct lr_thread *t = f->thread;
	uint64_t id = f->id, parent = f->parent, tb = f->t_begin, te = f->t_end;
	uint32_t func = f->func_id, depth = f->depth;
	enum fr_end_kind kind = f->end_kind;
	if (te < r->last_t[t->index] || te < tb)
		r->times_ok = 0;
	r->last_t[t->index] = te;
	r->ends++;
	if (!g_quiet)
		out(r, "E%u #%llu p%llu f%u d%u %llu-%llu %s\n", t->tid, (unsigned long long)id,
		    (unsigned long long)parent, func, depth, (unsigned long long)tb, (unsigned long long)te,
		    kind_str(kind));
}

static void on_unmatched(void *ctx, const struct fr_frame *f)
{
	struct rec *r = ctx;
	if (!g_quiet)
		out(r, "U%u f%d @%llu %s\n", f->thread->tid, f->func_id == FR_NO_FUNC ? -1 : (int)f->func_id,
		    (unsigned long long)f->t_end, kind_str(f->end_kind));
}

static const struct fr_callbacks g_cb = {.begin = on_begin, .end = on_end, .unmatched = on_unmatched};

static struct frames *new_frames(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	r->times_ok = 1;
	out(r, "%s", "");
	return fr_new(&g_cb, r);
}

#define EN SF_EV_ENTRY
#define EX SF_EV_EXIT
#define TL SF_EV_TAIL

static void test_nesting(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EN, 1, 10, 10);
	fr_event(f, &g_t1, EN, 2, 20, 20);
	fr_event(f, &g_t1, EX, 2, 30, 30);
	fr_event(f, &g_t1, EN, 3, 35, 35);
	fr_event(f, &g_t1, EX, 3, 36, 36);
	fr_event(f, &g_t1, EX, 1, 40, 40);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @10\n"
				    "B100 #2 p1 f2 d1 @20\n"
				    "E100 #2 p1 f2 d1 20-30 exit\n"
				    "B100 #3 p1 f3 d1 @35\n"
				    "E100 #3 p1 f3 d1 35-36 exit\n"
				    "E100 #1 p0 f1 d0 10-40 exit\n");
	const struct fr_stats *s = fr_stats(f);
	assert_int_equal(s->frames, 3);
	assert_int_equal(s->max_depth, 2);
	char buf[200];
	assert_int_equal(fr_format_repairs(s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	fr_free(f);
	free(r.text);
}

/* A landing after a resume: the runtime counts the depth it records from
 * the frames entered since the resume (sf_shadow_resync), as the reader
 * does once it closed every frame at the pause. UNWIND_TO 1 closes f5 and
 * f4, not f3 (before the fix the reader counted f1 and f2 as still open
 * outside its view, and closed f3 too). */
static void test_unwind_after_a_resume(void **state)
{
	static const uint64_t pauses[] = {50};
	struct lr_thread t = {.index = 0, .serial = 1, .tid = 100, .pause_ns = pauses, .npauses = 1};
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &t, EN, 1, 10, 10);
	fr_event(f, &t, EN, 2, 20, 20);
	fr_event(f, &t, EN, 3, 60, 60);
	fr_event(f, &t, EN, 4, 61, 61);
	fr_event(f, &t, EN, 5, 62, 62);
	fr_event(f, &t, SF_EV_UNWIND_TO, 1, 63, 63);
	fr_event(f, &t, EX, 3, 70, 70);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @10\n"
				    "B100 #2 p1 f2 d1 @20\n"
				    "E100 #2 p1 f2 d1 20-50 paused\n"
				    "E100 #1 p0 f1 d0 10-50 paused\n"
				    "B100 #3 p0 f3 d0 @60\n"
				    "B100 #4 p3 f4 d1 @61\n"
				    "B100 #5 p4 f5 d2 @62\n"
				    "E100 #5 p4 f5 d2 62-63 unwound\n"
				    "E100 #4 p3 f4 d1 61-63 unwound\n"
				    "E100 #3 p0 f3 d0 60-70 exit\n");
	fr_free(f);
	free(r.text);
}

/* sftrace pause at 50 and 90: frames open at a pause close there, before
 * the thread's next event; an exit after the resume whose entry came
 * before is dropped; a frame open at the end after the last pause (a
 * thread inside a sled as it was unpatched) closes as paused too. */
static void test_pauses(void **state)
{
	static const uint64_t pauses[] = {50, 90};
	struct lr_thread t = {.index = 0, .serial = 1, .tid = 100, .pause_ns = pauses, .npauses = 2, .ends_paused = 1};
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &t, EN, 1, 10, 10);
	fr_event(f, &t, EN, 2, 20, 20);
	fr_event(f, &t, EX, 1, 60, 60); /* after the resume: its entry was before the pause */
	fr_event(f, &t, EN, 3, 70, 70);
	fr_event(f, &t, EX, 3, 80, 80);
	fr_event(f, &t, EN, 4, 85, 85);
	fr_event(f, &t, EN, 5, 95, 95); /* a straggler after the last pause */
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @10\n"
				    "B100 #2 p1 f2 d1 @20\n"
				    "E100 #2 p1 f2 d1 20-50 paused\n"
				    "E100 #1 p0 f1 d0 10-50 paused\n"
				    "U100 f1 @60 exit\n"
				    "B100 #3 p0 f3 d0 @70\n"
				    "E100 #3 p0 f3 d0 70-80 exit\n"
				    "B100 #4 p0 f4 d0 @85\n"
				    "E100 #4 p0 f4 d0 85-90 paused\n"
				    "B100 #5 p0 f5 d0 @95\n"
				    "E100 #5 p0 f5 d0 95-95 paused\n");
	const struct fr_stats *s = fr_stats(f);
	assert_int_equal(s->open_at_pause, 4);
	assert_int_equal(s->unmatched_exits, 1);
	char buf[200];
	assert_int_equal(fr_format_repairs(s, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "repaired: 1 unmatched exit dropped, 4 frames in flight closed at a pause");
	fr_free(f);
	free(r.text);
}

/* An UNWIND event (a longjmp or catch landed) closes the frames it counts
 * at its time; the call after it nests under the landing frame. More than
 * the stack holds closes what is there. */
static void test_unwind_event(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EN, 1, 10, 10);
	fr_event(f, &g_t1, EN, 2, 20, 20);
	fr_event(f, &g_t1, EN, 3, 30, 30);
	fr_event(f, &g_t1, SF_EV_UNWIND, 2, 40, 40);
	fr_event(f, &g_t1, EN, 4, 45, 45);
	fr_event(f, &g_t1, EX, 4, 46, 46);
	fr_event(f, &g_t1, EX, 1, 50, 50);
	fr_event(f, &g_t1, EN, 5, 60, 60);
	fr_event(f, &g_t1, SF_EV_UNWIND, 9, 70, 70);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @10\n"
				    "B100 #2 p1 f2 d1 @20\n"
				    "B100 #3 p2 f3 d2 @30\n"
				    "E100 #3 p2 f3 d2 30-40 unwound\n"
				    "E100 #2 p1 f2 d1 20-40 unwound\n"
				    "B100 #4 p1 f4 d1 @45\n"
				    "E100 #4 p1 f4 d1 45-46 exit\n"
				    "E100 #1 p0 f1 d0 10-50 exit\n"
				    "B100 #5 p0 f5 d0 @60\n"
				    "E100 #5 p0 f5 d0 60-70 unwound\n");
	assert_int_equal(fr_stats(f)->unwound, 3);
	assert_int_equal(fr_stats(f)->unmatched_exits, 0);
	fr_free(f);
	free(r.text);
}

/* An UNWIND_TO event says the depth left open: the frames above it end
 * at its time, whatever the count. A depth above what the reader sees
 * (frames begun before what it read) closes nothing and is remembered: a
 * later landing to depth 1 then closes only the reader's frames above it. */
static void test_unwind_to_event(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EN, 1, 10, 10);
	fr_event(f, &g_t1, EN, 2, 20, 20);
	fr_event(f, &g_t1, EN, 3, 30, 30);
	fr_event(f, &g_t1, SF_EV_UNWIND_TO, 1, 40, 40);
	fr_event(f, &g_t1, SF_EV_UNWIND_TO, 3, 41, 41); /* two frames the reader never saw */
	fr_event(f, &g_t1, EN, 4, 45, 45);
	fr_event(f, &g_t1, SF_EV_UNWIND_TO, 3, 50, 50);
	fr_event(f, &g_t1, EX, 1, 60, 60);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @10\n"
				    "B100 #2 p1 f2 d1 @20\n"
				    "B100 #3 p2 f3 d2 @30\n"
				    "E100 #3 p2 f3 d2 30-40 unwound\n"
				    "E100 #2 p1 f2 d1 20-40 unwound\n"
				    "B100 #4 p1 f4 d1 @45\n"
				    "E100 #4 p1 f4 d1 45-50 unwound\n"
				    "E100 #1 p0 f1 d0 10-60 exit\n");
	assert_int_equal(fr_stats(f)->unwound, 3);
	fr_free(f);
	free(r.text);
}

/* A ring's window: 700 recorded frames never seen, and two placed (their
 * exits in the window) at depths 1 and 2, below the unseen ones. A landing
 * that leaves 2 open abandons the window's frame and the unseen ones, not
 * the placed frames: their exits match. */
static void test_unwind_to_over_placed_frames(void **state)
{
	static struct lr_thread t = {.index = 2, .serial = 3, .tid = 102, .outer = 700, .nbefore = 2};
	struct rec r;
	struct frames *f = new_frames(&r);
	struct lr_event ev = {.thread = &t, .kind = SF_EV_ENTRY, .time_ns = 10, .rec_ns = 10, .before_window = 1};
	for (uint32_t k = 1; k <= 2; k++) {
		ev.func_id = k;
		ev.pos = k;
		fr_feed(f, &ev);
	}
	fr_event(f, &t, EN, 3, 20, 20);
	fr_event(f, &t, SF_EV_UNWIND_TO, 2, 30, 30);
	fr_event(f, &t, EX, 2, 40, 40);
	fr_event(f, &t, EX, 1, 50, 50);
	fr_finish(f);
	assert_string_equal(r.text, "B102 #1 p0 f1 d0 @10\n"
				    "B102 #2 p1 f2 d1 @10\n"
				    "B102 #3 p2 f3 d2 @20\n"
				    "E102 #3 p2 f3 d2 20-30 unwound\n"
				    "E102 #2 p1 f2 d1 10-40 exit\n"
				    "E102 #1 p0 f1 d0 10-50 exit\n");
	assert_int_equal(fr_stats(f)->unwound, 1);
	assert_int_equal(fr_stats(f)->unmatched_exits, 0);
	fr_free(f);
	free(r.text);
}

static void test_tail_call(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EN, 7, 1, 1);  /* F */
	fr_event(f, &g_t1, TL, 7, 2, 2);  /* F tail-calls G */
	fr_event(f, &g_t1, EN, 8, 3, 3);  /* G */
	fr_event(f, &g_t1, EX, 8, 4, 4);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f7 d0 @1\n"
				    "E100 #1 p0 f7 d0 1-2 tail\n"
				    "B100 #2 p0 f8 d0 @3\n"
				    "E100 #2 p0 f8 d0 3-4 exit\n");
	fr_free(f);
	free(r.text);
}

static void test_unmatched_exit(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EX, 5, 1, 1); /* tracing started inside 5 */
	fr_event(f, &g_t1, EN, 1, 2, 2);
	fr_event(f, &g_t1, EX, 9, 3, 3); /* 9 is not open: dropped, 1 stays */
	fr_event(f, &g_t1, TL, 9, 3, 3);
	fr_event(f, &g_t1, EX, 1, 4, 4);
	fr_finish(f);
	assert_string_equal(r.text, "U100 f5 @1 exit\n"
				    "B100 #1 p0 f1 d0 @2\n"
				    "U100 f9 @3 exit\n"
				    "U100 f9 @3 tail\n"
				    "E100 #1 p0 f1 d0 2-4 exit\n");
	assert_int_equal(fr_stats(f)->unmatched_exits, 3);
	char buf[200];
	assert_int_equal(fr_format_repairs(fr_stats(f), buf, sizeof(buf)), 1);
	assert_string_equal(buf, "repaired: 3 unmatched exits dropped");
	fr_free(f);
	free(r.text);
}

static void test_unwinding(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EN, 1, 10, 10);
	fr_event(f, &g_t1, EN, 2, 20, 20);
	fr_event(f, &g_t1, EN, 3, 30, 30);
	fr_event(f, &g_t1, EN, 4, 40, 40);
	fr_event(f, &g_t1, EX, 2, 50, 50); /* 4 and 3 never returned */
	fr_event(f, &g_t1, EX, 1, 60, 60);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @10\n"
				    "B100 #2 p1 f2 d1 @20\n"
				    "B100 #3 p2 f3 d2 @30\n"
				    "B100 #4 p3 f4 d3 @40\n"
				    "E100 #4 p3 f4 d3 40-50 unwound\n"
				    "E100 #3 p2 f3 d2 30-50 unwound\n"
				    "E100 #2 p1 f2 d1 20-50 exit\n"
				    "E100 #1 p0 f1 d0 10-60 exit\n");
	assert_int_equal(fr_stats(f)->unwound, 2);
	fr_free(f);
	free(r.text);
}

/* An UNWIND of 0 frames (SF_UNWIND_UNCOUNTED): a landing the runtime could
 * not count. Nothing closes; its place goes to the unmatched callback,
 * and the frames it abandoned close at the next outer exit. */
static void test_uncounted_landing(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EN, 1, 10, 10);
	fr_event(f, &g_t1, EN, 2, 20, 20);
	fr_event(f, &g_t1, EN, 3, 30, 30);
	fr_event(f, &g_t1, SF_EV_UNWIND, SF_UNWIND_UNCOUNTED, 40, 40);
	fr_event(f, &g_t1, EX, 1, 60, 60);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @10\n"
				    "B100 #2 p1 f2 d1 @20\n"
				    "B100 #3 p2 f3 d2 @30\n"
				    "U100 f-1 @40 uncounted\n"
				    "E100 #3 p2 f3 d2 30-60 unwound\n"
				    "E100 #2 p1 f2 d1 20-60 unwound\n"
				    "E100 #1 p0 f1 d0 10-60 exit\n");
	assert_int_equal(fr_stats(f)->landings_uncounted, 1);
	assert_int_equal(fr_stats(f)->unwound, 2);
	fr_free(f);
	free(r.text);
}

static void test_open_at_end_and_threads(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EN, 1, 10, 10);
	fr_event(f, &g_t2, EN, 1, 11, 11);
	fr_event(f, &g_t1, EN, 2, 20, 20);
	fr_event(f, &g_t2, EX, 1, 21, 21);
	fr_event(f, &g_t1, SF_EV_ALLOC, 0, 25, 25); /* advances t1's clock only */
	assert_int_equal(fr_depth(f, &g_t1), 2);
	assert_int_equal(fr_depth(f, &g_t2), 0);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @10\n"
				    "B101 #2 p0 f1 d0 @11\n"
				    "B100 #3 p1 f2 d1 @20\n"
				    "E101 #2 p0 f1 d0 11-21 exit\n"
				    "E100 #3 p1 f2 d1 20-25 threadend\n"
				    "E100 #1 p0 f1 d0 10-25 threadend\n");
	char buf[200];
	fr_format_repairs(fr_stats(f), buf, sizeof(buf));
	assert_string_equal(buf, "repaired: 2 open frames closed at thread end");
	fr_free(f);
	free(r.text);
}

static void test_times_non_decreasing(void **state)
{
	struct rec r;
	struct frames *f = new_frames(&r);
	fr_event(f, &g_t1, EN, 1, 100, 100);
	fr_event(f, &g_t1, EN, 2, 90, 90); /* went backwards */
	fr_event(f, &g_t1, EX, 2, 95, 95);
	fr_event(f, &g_t1, EX, 1, 200, 200);
	fr_finish(f);
	assert_string_equal(r.text, "B100 #1 p0 f1 d0 @100\n"
				    "B100 #2 p1 f2 d1 @100\n"
				    "E100 #2 p1 f2 d1 100-100 exit\n"
				    "E100 #1 p0 f1 d0 100-200 exit\n");
	assert_int_equal(fr_stats(f)->clamped, 2);
	assert_true(r.times_ok);
	fr_free(f);
	free(r.text);
}

static void test_format_all(void **state)
{
	struct fr_stats s = {.unmatched_exits = 3, .unwound = 2, .open_at_end = 5};
	char buf[200];
	assert_int_equal(fr_format_repairs(&s, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "repaired: 3 unmatched exits dropped, 2 frames closed by unwinding, "
				 "5 open frames closed at thread end");
	s = (struct fr_stats){.unwound = 1, .clamped = 1};
	fr_format_repairs(&s, buf, sizeof(buf));
	assert_string_equal(buf, "repaired: 1 frame closed by unwinding, 1 backward timestamp raised");
	/* A short buffer stays terminated. */
	fr_format_repairs(&s, buf, 12);
	assert_string_equal(buf, "repaired: 1");
}

/* 200k-deep recursion, balanced, then unbalanced with repairs. */
static void test_deep_recursion(void **state)
{
	const uint32_t n = 200000;
	struct rec r;
	struct frames *f = new_frames(&r);
	g_quiet = 1;
	for (uint32_t i = 0; i < n; i++)
		fr_event(f, &g_t1, EN, 42, i, i);
	assert_int_equal(fr_depth(f, &g_t1), n);
	for (uint32_t i = 0; i < n; i++)
		fr_event(f, &g_t1, EX, 42, n + i, n + i);
	assert_int_equal(fr_depth(f, &g_t1), 0);
	assert_int_equal(r.ends, n);
	assert_int_equal(fr_stats(f)->max_depth, n);
	/* Now: deep again, then the outermost function's exit unwinds all. */
	fr_event(f, &g_t1, EN, 1, 3 * (uint64_t)n, 3 * (uint64_t)n);
	for (uint32_t i = 0; i < n; i++)
		fr_event(f, &g_t1, EN, 42, 3 * (uint64_t)n + i, 3 * (uint64_t)n + i);
	/* Many unmatched exits against the deep stack stay cheap. */
	for (uint32_t i = 0; i < n; i++)
		fr_event(f, &g_t1, EX, 77, 4 * (uint64_t)n, 4 * (uint64_t)n);
	fr_event(f, &g_t1, EX, 1, 5 * (uint64_t)n, 5 * (uint64_t)n);
	assert_int_equal(fr_stats(f)->unwound, n);
	assert_int_equal(fr_stats(f)->unmatched_exits, n);
	/* And open at the end. */
	for (uint32_t i = 0; i < n; i++)
		fr_event(f, &g_t1, EN, 42, 6 * (uint64_t)n + i, 6 * (uint64_t)n + i);
	fr_finish(f);
	assert_int_equal(fr_stats(f)->open_at_end, n);
	assert_int_equal(r.ends, 3 * (uint64_t)n + 1);
	assert_int_equal(fr_stats(f)->frames, 3 * (uint64_t)n + 1);
	assert_true(r.times_ok);
	g_quiet = 0;
	fr_free(f);
	free(r.text);
}

/* Each repair numbers the frames it closes (fr_frame.repair): two unwinds
 * in a row (a rethrow's landings) stay apart, one unwind's frames share
 * its number; a snapshot's frames end at its end, not at their thread's
 * last event, on both clocks (as given 5 ns behind the recorded one). */
static uint64_t g_repairs[8];
static uint64_t g_ends[8][2];
static size_t g_nrep;

static void on_end_repair(void *ctx, const struct fr_frame *f)
{
	(void)ctx;
	g_ends[g_nrep][0] = f->t_end;
	g_ends[g_nrep][1] = f->r_end;
	g_repairs[g_nrep++] = f->repair;
}

static void test_repair_numbers_and_snapshot_end(void **state)
{
	(void)state;
	struct fr_callbacks cb = {.end = on_end_repair};
	struct lr_thread snap = {.index = 0, .serial = 1, .tid = 100, .ends_at_snapshot = 1};
	struct frames *f = fr_new(&cb, NULL);
	g_nrep = 0;
	for (uint32_t i = 1; i <= 5; i++)
		fr_event(f, &snap, EN, i, i * 10 - 5, i * 10);
	fr_event(f, &snap, SF_EV_UNWIND, 2, 55, 60);
	fr_event(f, &snap, SF_EV_UNWIND, 1, 65, 70);
	fr_end_thread(f, &snap, 1000);
	assert_int_equal(g_nrep, 5);
	assert_true(g_repairs[0] && g_repairs[0] == g_repairs[1]);
	assert_true(g_repairs[2] > g_repairs[1]);
	assert_true(g_repairs[3] > g_repairs[2] && g_repairs[3] == g_repairs[4]);
	assert_int_equal(g_ends[4][0], 995);
	assert_int_equal(g_ends[4][1], 1000);
	assert_int_equal(fr_stats(f)->open_at_snapshot, 2);
	fr_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_pauses),
		cmocka_unit_test(test_unwind_after_a_resume),
		cmocka_unit_test(test_unwind_to_event),
		cmocka_unit_test(test_tail_call),
		cmocka_unit_test(test_unmatched_exit),
		cmocka_unit_test(test_unwinding),
		cmocka_unit_test(test_uncounted_landing),
		cmocka_unit_test(test_open_at_end_and_threads),
		cmocka_unit_test(test_times_non_decreasing),
		cmocka_unit_test(test_format_all),
		cmocka_unit_test(test_deep_recursion),
		cmocka_unit_test(test_unwind_event),
		cmocka_unit_test(test_unwind_to_over_placed_frames),
		cmocka_unit_test(test_repair_numbers_and_snapshot_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
