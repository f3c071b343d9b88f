/* The cut stage (trace_cut.h) between frames.c and a recorder: which
 * frames it keeps, their rewritten parents and depths, the window's
 * clipping and flags, the order of held frames once they qualify, two cuts
 * chained directly (the record-time trim into the user's cut), and its
 * counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/frames.h"
#include "lib/log_reader.h"
#include "lib/trace_cut.h"
#include "logbuild.h"

static char g_dir[64], g_path[128];
static struct lr_log *g_log;

/* A log with one object (ids 1..4) and one thread: cut_process sizes its
 * per-thread state from it. */
static int setup(void **state)
{
	(void)state;
	static const uint64_t funcs[4] = {0x1100, 0x1200, 0x1300, 0x1400};
	if (lb_tmpdir(g_dir, g_path, "/tmp/sftrace-cut-XXXXXX"))
		return -1;
	struct lb b;
	lb_init(&b, SF_CLOCK_MONOTONIC);
	lb_object(&b, 0, 1, "/bin/prog", funcs, 4, NULL, 0);
	struct lb_rec ev[] = {LB_EV(LB_START_MONO + 1, 1, SF_EV_ENTRY)};
	lb_data(&b, 1, 100, 0, "main", ev, 1);
	if (lb_write(&b, g_path))
		return -1;
	lb_free(&b);
	char err[256];
	g_log = lr_open(g_path, err, sizeof(err));
	return g_log ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	lr_close(g_log);
	lb_tmpdir_remove(g_dir, g_path);
	return 0;
}

/* ---- a recorder: one word per frame ---- */

struct rec {
	char text[2048];
	size_t len;
	uint64_t ids[64]; /* frame id -> function, to name parents */
};

static void put(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct rec *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(r->text + r->len, sizeof(r->text) - r->len, fmt, ap);
	va_end(ap);
	r->len += (size_t)n;
}

static const char *flags(unsigned cut)
{
	return cut == (CUT_START | CUT_END) ? "<>" : cut == CUT_START ? "<" : cut == CUT_END ? ">" : "";
}

/* "B3^1.1@20": function 3 under function 1 at depth 1, begun at 20. */
static void rec_begin(void *ctx, const struct fr_frame *f)
{
	struct rec *r = ctx;
	r->ids[f->id] = f->func_id;
	put(r, "B%u^%llu.%u@%llu%s ", f->func_id, (unsigned long long)(f->parent ? r->ids[f->parent] : 0), f->depth,
	    (unsigned long long)f->t_begin, flags(f->cut));
}

static void rec_end(void *ctx, const struct fr_frame *f)
{
	struct rec *r = ctx;
	put(r, "E%u@%llu-%llu%s ", f->func_id, (unsigned long long)f->t_begin, (unsigned long long)f->t_end,
	    flags(f->cut));
}

/* "U4^1.1@10": an unmatched exit of function 4 inside function 1, at
 * depth 1, at 10. */
static void rec_unmatched(void *ctx, const struct fr_frame *f)
{
	struct rec *r = ctx;
	if (f->end_kind == FR_END_UNCOUNTED) { /* "L^2.2@30": an uncounted landing */
		put(r, "L^%llu.%u@%llu ", (unsigned long long)(f->parent ? r->ids[f->parent] : 0), f->depth,
		    (unsigned long long)f->t_end);
		return;
	}
	put(r, "U%u^%llu.%u@%llu ", f->func_id, (unsigned long long)(f->parent ? r->ids[f->parent] : 0), f->depth,
	    (unsigned long long)f->t_end);
}

static const struct fr_callbacks g_rec = {.begin = rec_begin, .end = rec_end, .unmatched = rec_unmatched};
static const struct fr_callbacks g_to_cut = {.begin = cut_begin, .end = cut_end, .unmatched = cut_unmatched};

/* Events of the log's one thread: kind, function, time. */
struct ev {
	uint32_t kind, func;
	uint64_t t;
};

static void feed(struct frames *f, const struct ev *ev, size_t n)
{
	const struct lr_thread *t = lr_thread_at(g_log, 0);
	for (size_t i = 0; i < n; i++)
		fr_event(f, t, ev[i].kind, ev[i].func, ev[i].t, ev[i].t);
	fr_finish(f);
}

/* frames -> cut(opt) -> recorder. */
static void run_cut(const struct trace_cut_options *opt, const struct ev *ev, size_t n, struct rec *r,
		    struct cut_stats *stats)
{
	memset(r, 0, sizeof(*r));
	struct trace_cut *c = cut_new(opt, NULL, &g_rec, r);
	cut_process(c, g_log, 0);
	struct frames *f = fr_new(&g_to_cut, c);
	feed(f, ev, n);
	*stats = *cut_stats(c);
	fr_free(f);
	cut_free(c);
}

enum { E = SF_EV_ENTRY, X = SF_EV_EXIT };

/* 1 [0,100] > 2 [10,20], 3 [30,90] > 4 [40,45] */
static const struct ev g_tree[] = {{E, 1, 0},  {E, 2, 10}, {X, 2, 20}, {E, 3, 30},
				   {E, 4, 40}, {X, 4, 45}, {X, 3, 90}, {X, 1, 100}};

/* Short calls go; a kept call hangs under its nearest kept ancestor. A
 * frame held until it qualifies is passed on before its kept children. */
static void test_min_duration_keeps_long_calls_in_order(void **state)
{
	(void)state;
	struct rec r;
	struct cut_stats s;
	struct trace_cut_options o = {.min_duration = 50};
	run_cut(&o, g_tree, 8, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 B3^1.1@30 E3@30-90 E1@0-100 ");
	assert_int_equal(s.kept, 2);
	assert_int_equal(s.cut_start + s.cut_end, 0);
}

/* 1 [0,100] holds an unmatched exit of 4 at 10, then 2 [20,30] holds
 * another at 25. */
static const struct ev g_unmatched[] = {{E, 1, 0}, {X, 4, 10}, {E, 2, 20}, {X, 4, 25}, {X, 2, 30}, {X, 1, 100}};

/* An unmatched exit stays where a call of its function would: inside the
 * frames kept around it; it goes with a frame the cut removes (too short,
 * too deep, outside the window). Under --min-duration it waits for its
 * held frame, then follows that frame's begin. */
static void test_unmatched_exit_goes_with_its_place(void **state)
{
	(void)state;
	struct rec r;
	struct cut_stats s;
	struct trace_cut_options none = {0};
	run_cut(&none, g_unmatched, 6, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 U4^1.1@10 B2^1.1@20 U4^2.2@25 E2@20-30 E1@0-100 ");
	struct trace_cut_options min = {.min_duration = 50};
	run_cut(&min, g_unmatched, 6, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 U4^1.1@10 E1@0-100 ");
	struct trace_cut_options deep = {.max_depth = 1};
	run_cut(&deep, g_unmatched, 6, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 E1@0-100 ");
	struct trace_cut_options two = {.max_depth = 2};
	run_cut(&two, g_unmatched, 6, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 U4^1.1@10 B2^1.1@20 E2@20-30 E1@0-100 ");
	struct trace_cut_options win = {.has_window = 1, .win_start = 15, .win_end = 28};
	run_cut(&win, g_unmatched, 6, &r, &s);
	assert_string_equal(r.text, "B1^0.0@15< B2^1.1@20 U4^2.2@25 E2@20-28> E1@15-28<> ");
}

/* A landing the runtime could not count, inside 1 > 2 > 3 (which frames
 * it abandoned is not known: they close at 1's exit). It goes inside the
 * innermost frame the cut keeps, or with the window. */
static const struct ev g_landing[] = {{E, 1, 0}, {E, 2, 10}, {E, 3, 20}, {SF_EV_UNWIND, SF_UNWIND_UNCOUNTED, 30},
				      {X, 1, 100}};

static void test_uncounted_landing_inside_innermost_kept(void **state)
{
	(void)state;
	struct rec r;
	struct cut_stats s;
	struct trace_cut_options none = {0};
	run_cut(&none, g_landing, 5, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 B2^1.1@10 B3^2.2@20 L^3.3@30 E3@20-100 E2@10-100 E1@0-100 ");
	struct trace_cut_options deep = {.max_depth = 2};
	run_cut(&deep, g_landing, 5, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 B2^1.1@10 L^2.2@30 E2@10-100 E1@0-100 ");
	struct trace_cut_options min = {.min_duration = 85};
	run_cut(&min, g_landing, 5, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 B2^1.1@10 L^2.2@30 E2@10-100 E1@0-100 ");
	struct trace_cut_options win = {.has_window = 1, .win_start = 40, .win_end = 200};
	run_cut(&win, g_landing, 5, &r, &s);
	assert_string_equal(r.text, "B1^0.0@40< B2^1.1@40< B3^2.2@40< E3@40-100< E2@40-100< E1@40-100< ");
}

static void test_max_depth(void **state)
{
	(void)state;
	struct rec r;
	struct cut_stats s;
	struct trace_cut_options o = {.max_depth = 2};
	run_cut(&o, g_tree, 8, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 B2^1.1@10 E2@10-20 B3^1.1@30 E3@30-90 E1@0-100 ");
	assert_int_equal(s.kept, 3);
}

/* The window [35, 60): 1 and 3 are clipped at both ends, 4 is inside, 2
 * ends before it. min_duration tests the real durations. */
static void test_window_clips_and_flags(void **state)
{
	(void)state;
	struct rec r;
	struct cut_stats s;
	struct trace_cut_options o = {.has_window = 1, .win_start = 35, .win_end = 60};
	run_cut(&o, g_tree, 8, &r, &s);
	assert_string_equal(r.text, "B1^0.0@35< B3^1.1@35< B4^3.2@40 E4@40-45 E3@35-60<> E1@35-60<> ");
	assert_int_equal(s.kept, 3);
	assert_int_equal(s.cut_start, 2);
	assert_int_equal(s.cut_end, 2);
	o.min_duration = 60; /* 3 lasts 60 in full, though 25 inside the window */
	run_cut(&o, g_tree, 8, &r, &s);
	assert_string_equal(r.text, "B1^0.0@35< B3^1.1@35< E3@35-60<> E1@35-60<> ");
	/* A window given from the trace start, for a process that started 30
	 * ns later: [35, 60) is [5, 30) in its own times. */
	struct trace_cut_options w = {.has_window = 1, .win_start = 35, .win_end = 60};
	memset(&r, 0, sizeof(r));
	struct trace_cut *c = cut_new(&w, NULL, &g_rec, &r);
	cut_process(c, g_log, 30);
	struct frames *f = fr_new(&g_to_cut, c);
	feed(f, g_tree, 8);
	assert_string_equal(r.text, "B1^0.0@5< B2^1.1@10 E2@10-20 E1@5-30<> ");
	fr_free(f);
	cut_free(c);
}

/* Two cuts chained with nothing between: the trim (min 10, as a log's
 * record-time limits) feeds the user's cut (max depth 2). */
static void test_trim_chains_into_cut(void **state)
{
	(void)state;
	struct rec r = {0};
	static const struct trace_cut_options none, user = {.max_depth = 2};
	struct trace_cut *cut = cut_new(&user, NULL, &g_rec, &r);
	struct trace_cut *trim = cut_new(&none, NULL, &g_to_cut, cut);
	cut_set_limits(trim, 10, 0);
	cut_process(cut, g_log, 0);
	cut_process(trim, g_log, 0);
	struct frames *f = fr_new(&g_to_cut, trim);
	feed(f, g_tree, 8);
	/* trim: 4 (5 ns) goes; cut: every kept frame is within depth 2 */
	assert_string_equal(r.text, "B1^0.0@0 B2^1.1@10 E2@10-20 B3^1.1@30 E3@30-90 E1@0-100 ");
	assert_int_equal(cut_stats(trim)->kept, 3);
	assert_int_equal(cut_stats(cut)->kept, 3);
	fr_free(f);
	cut_free(trim);
	cut_free(cut);

	/* Each stage drops what only it would: the trim (min 15) the short 2,
	 * the cut (depth 2) the long but deep 4. Either alone keeps one more. */
	static const struct ev deep[] = {{E, 1, 0},  {E, 2, 10}, {X, 2, 20}, {E, 3, 30},
					 {E, 4, 40}, {X, 4, 80}, {X, 3, 90}, {X, 1, 100}};
	memset(&r, 0, sizeof(r));
	cut = cut_new(&user, NULL, &g_rec, &r);
	trim = cut_new(&none, NULL, &g_to_cut, cut);
	cut_set_limits(trim, 15, 0);
	cut_process(cut, g_log, 0);
	cut_process(trim, g_log, 0);
	f = fr_new(&g_to_cut, trim);
	feed(f, deep, 8);
	assert_string_equal(r.text, "B1^0.0@0 B3^1.1@30 E3@30-90 E1@0-100 ");
	fr_free(f);
	cut_free(trim);
	cut_free(cut);
}

/* frames -> cut(opt, or a trim with limits min_ns when not 0) -> r, on a
 * net clock running at half the recorded one (times net of the tracer's
 * cost), recorded times as in ev. */
static void run_half_net(const struct trace_cut_options *opt, uint64_t min_ns, const struct ev *ev, size_t n,
			 struct rec *r)
{
	memset(r, 0, sizeof(*r));
	struct trace_cut *c = cut_new(opt, NULL, &g_rec, r);
	if (min_ns)
		cut_set_limits(c, min_ns, 0);
	cut_process(c, g_log, 0);
	struct frames *f = fr_new(&g_to_cut, c);
	const struct lr_thread *t = lr_thread_at(g_log, 0);
	for (size_t i = 0; i < n; i++)
		fr_event(f, t, ev[i].kind, ev[i].func, ev[i].t / 2, ev[i].t);
	fr_finish(f);
	fr_free(f);
	cut_free(c);
}

/* The record-time trim judges recorded durations, as the runtime did,
 * whatever the clock the frames come on; a user's --min-duration judges
 * that clock's. Call 2 lasts 30 ns recorded, 15 net: min 20 keeps it in
 * the trim, drops it in the user's cut. */
static void test_trim_judges_recorded_durations(void **state)
{
	(void)state;
	static const struct ev ev[] = {{E, 1, 0}, {E, 2, 10}, {X, 2, 40}, {X, 1, 100}};
	static const struct trace_cut_options none, user = {.min_duration = 20};
	struct rec r;
	run_half_net(&none, 20, ev, 4, &r);
	assert_string_equal(r.text, "B1^0.0@0 B2^1.1@5 E2@5-20 E1@0-50 ");
	run_half_net(&user, 0, ev, 4, &r);
	assert_string_equal(r.text, "B1^0.0@0 E1@0-50 ");
}

/* A frame still open when the thread ends is passed on with the end kind
 * frames.c gave it, at the thread's last time. */
static void test_open_frame_at_thread_end(void **state)
{
	(void)state;
	static const struct ev ev[] = {{E, 1, 0}, {E, 2, 10}, {X, 2, 70}};
	struct rec r;
	struct cut_stats s;
	struct trace_cut_options o = {.min_duration = 60};
	run_cut(&o, ev, 3, &r, &s);
	assert_string_equal(r.text, "B1^0.0@0 B2^1.1@10 E2@10-70 E1@0-70 ");
}

static void test_tid_wanted(void **state)
{
	(void)state;
	static const uint32_t tids[] = {7, 9};
	struct trace_cut_options o = {.tids = tids, .ntids = 2};
	assert_true(cut_active(&o));
	struct rec r;
	struct trace_cut *c = cut_new(&o, NULL, &g_rec, &r);
	assert_true(cut_tid_wanted(c, 9));
	assert_false(cut_tid_wanted(c, 8));
	cut_free(c);
	struct trace_cut_options none = {0};
	assert_false(cut_active(&none));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_min_duration_keeps_long_calls_in_order),
		cmocka_unit_test(test_max_depth),
		cmocka_unit_test(test_unmatched_exit_goes_with_its_place),
		cmocka_unit_test(test_uncounted_landing_inside_innermost_kept),
		cmocka_unit_test(test_window_clips_and_flags),
		cmocka_unit_test(test_trim_chains_into_cut),
		cmocka_unit_test(test_trim_judges_recorded_durations),
		cmocka_unit_test(test_open_frame_at_thread_end),
		cmocka_unit_test(test_tid_wanted),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
