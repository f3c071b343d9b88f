/* The heap replay (heap.h) on logs built in memory: totals, each site's
 * share of the peak kept in one pass, temporaries, a free on another thread
 * whose batch comes first in the file, a pointer allocated twice, stacks as
 * call-path nodes, milestones, the recording's time base for a process that
 * started late, and heap_foreach_event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/heap.h"
#include "logbuild.h"

static char g_dir[64], g_path[128], g_path2[160];

static int setup(void **state)
{
	(void)state;
	if (lb_tmpdir(g_dir, g_path, "/tmp/sftrace-heap-XXXXXX"))
		return -1;
	snprintf(g_path2, sizeof(g_path2), "%s/sf.2.log", g_dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(g_path2);
	lb_tmpdir_remove(g_dir, g_path);
	return 0;
}

static const uint64_t g_funcs[3] = {0x1100, 0x1200, 0x1300};
enum { E = SF_EV_ENTRY, X = SF_EV_EXIT, A = SF_EV_ALLOC, D = SF_EV_DEALLOC };
enum { F1 = 1, F2 = 2, MILESTONE = 3 };
#define MS 1000000ull
#define AT(t) (LB_START_MONO + (t))
#define ALLOC(t, size, ptr) LB_EV(AT(t), 0, A), lb_ext(size, 3, ptr)
#define FREE(t, ptr) LB_EV(AT(t), 0, D), lb_ext(0, 0, ptr)

static void proc_log(struct lb *b, uint32_t pid, uint64_t late)
{
	lb_init(b, SF_CLOCK_MONOTONIC);
	lb_header(b)->pid = pid;
	lb_header(b)->start_mono_ns = LB_START_MONO + late;
	lb_object(b, 0, 1, "/bin/prog", g_funcs, 3, NULL, 0);
}

static struct trace_input *open_logs(struct lb *b, struct lb *b2)
{
	assert_int_equal(lb_write(b, g_path), 0);
	lb_free(b);
	const char *paths[2] = {g_path, g_path2};
	if (b2) {
		assert_int_equal(lb_write(b2, g_path2), 0);
		lb_free(b2);
	}
	struct trace_options o = {.no_symbols = 1, .quiet = 1};
	struct trace_input *in = trace_open(paths, b2 ? 2 : 1, &o);
	assert_non_null(in);
	return in;
}

/* The site whose stack (outermost first, as function ids) is `path`. */
static const struct heap_site *site(const struct heap_result *r, const uint32_t *path, size_t n)
{
	for (size_t s = 0; s < r->nsites; s++) {
		uint32_t got[16];
		size_t k = 0;
		for (uint32_t x = r->sites[s].node; x != CP_ROOT && k < 16; x = heap_node_parent(r, x))
			got[k++] = heap_node_func(r, x);
		if (k != n)
			continue;
		size_t i = 0;
		while (i < n && got[n - 1 - i] == path[i])
			i++;
		if (i == n)
			return &r->sites[s];
	}
	fail_msg("no site with that stack");
	return NULL;
}

/* main thread: F1 { 100 B at 0xa0 ; F2 { 50 B at 0xb0 } ; free 0xa0 ; 20 B at 0xc0 }
 * The peak (150 B) is after the second allocation: F1's site held 100 B
 * then, though it holds 20 B at the end. */
static void test_totals_and_peak_shares(void **state)
{
	(void)state;
	struct lb b;
	proc_log(&b, 100, 0);
	struct lb_rec t[] = {LB_EV(AT(10), F1, E), ALLOC(20, 100, 0xa0), LB_EV(AT(30), F2, E), ALLOC(40, 50, 0xb0),
			     LB_EV(AT(50), F2, X), FREE(60, 0xa0), ALLOC(70, 20, 0xc0), LB_EV(AT(80), F1, X)};
	lb_data(&b, 1, 100, 0, "main", t, 12);
	struct trace_input *in = open_logs(&b, NULL);
	struct heap_result r;
	assert_int_equal(heap_replay(in, 0, NULL, &r), 0);
	assert_int_equal(r.tot.allocs, 3);
	assert_int_equal(r.tot.frees, 1);
	assert_int_equal(r.tot.bytes, 170);
	assert_int_equal(r.tot.events, 4);
	assert_int_equal(r.tot.peak_bytes, 150);
	assert_int_equal(r.tot.peak_blocks, 2);
	assert_int_equal(r.tot.peak_time, 40);
	assert_int_equal(r.tot.leak_bytes, 70);
	assert_int_equal(r.tot.leak_blocks, 2);
	assert_int_equal(r.tot.temporaries, 0);
	assert_int_equal(r.end_time, 80);
	assert_int_equal(r.nsites, 2); /* F1 (both its allocations: call site 0), F1 > F2 */
	uint32_t f1[] = {F1}, f12[] = {F1, F2};
	const struct heap_site *s1 = site(&r, f1, 1), *s12 = site(&r, f12, 2);
	assert_int_equal(s1->allocs, 2);
	assert_int_equal(s1->bytes, 120);
	assert_int_equal(s1->peak_bytes, 100);
	assert_int_equal(s1->peak_blocks, 1);
	assert_int_equal(s1->leak_bytes, 20);
	assert_int_equal(s12->peak_bytes, 50);
	assert_int_equal(s12->leak_bytes, 50);
	heap_result_free(&r);
	trace_close(in);
}

/* The worker's batch comes first in the file, but it frees what main
 * allocated before: the merge in time order matches them. A free of a
 * block with the site and size of the process's latest heap event, an
 * allocation, is a temporary (heaptrack's rule: on any thread, so the
 * worker's free of 0xa0 at 30 counts, as does main's of 0xd0 at 41); a
 * pointer allocated again while live replaces the first block. */
static void test_cross_thread_free_temporaries_replaced(void **state)
{
	(void)state;
	struct lb b;
	proc_log(&b, 100, 0);
	struct lb_rec w[] = {FREE(30, 0xa0)};
	lb_data(&b, 2, 101, 0, "worker", w, 2);
	struct lb_rec m[] = {ALLOC(10, 64, 0xa0), ALLOC(40, 8, 0xd0), FREE(41, 0xd0), ALLOC(50, 16, 0xe0),
			     ALLOC(60, 32, 0xe0), FREE(70, 0xf0)};
	lb_data(&b, 1, 100, 0, "main", m, 12);
	struct trace_input *in = open_logs(&b, NULL);
	struct heap_result r;
	heap_replay(in, 0, NULL, &r);
	assert_int_equal(r.tot.unmatched_frees, 1); /* 0xf0 only */
	assert_int_equal(r.tot.frees, 2);
	assert_int_equal(r.tot.temporaries, 2);
	assert_int_equal(r.tot.replaced, 1);
	assert_int_equal(r.tot.leak_bytes, 32);
	assert_int_equal(r.tot.leak_blocks, 1);
	assert_int_equal(r.tot.peak_bytes, 64);
	heap_result_free(&r);
	trace_close(in);
}

/* Stages start at each milestone entry; every time is on the recording's
 * time base: this process started 5 ms after the first. */
static void test_milestones_on_the_recording_clock(void **state)
{
	(void)state;
	struct lb b, c;
	proc_log(&b, 100, 0);
	struct lb_rec p[] = {LB_EV(AT(1), F1, E), LB_EV(AT(2), F1, X)};
	lb_data(&b, 1, 100, 0, "main", p, 2);
	proc_log(&c, 200, 5 * MS);
	struct lb_rec t[] = {ALLOC(5 * MS + 10, 10, 0xa0), LB_EV(AT(5 * MS + 20), MILESTONE, E),
			     LB_EV(AT(5 * MS + 21), MILESTONE, X), ALLOC(5 * MS + 30, 20, 0xb0), FREE(5 * MS + 40, 0xa0)};
	lb_data(&c, 1, 200, 0, "main", t, 8);
	struct trace_input *in = open_logs(&b, &c);
	assert_int_equal(trace_proc_at(in, 1)->start_ns, 5 * MS);
	uint8_t ms[4] = {0, 0, 0, 1};
	struct heap_options o = {.milestone = ms, .nmilestone = 4, .curve = 1};
	struct heap_result r;
	heap_replay(in, 1, &o, &r);
	assert_int_equal(r.nstages, 2);
	assert_int_equal(r.stages[0].t_start, 5 * MS);
	assert_int_equal(r.stages[1].t_start, 5 * MS + 20);
	assert_int_equal(r.stages[0].allocs, 1);
	assert_int_equal(r.stages[1].allocs, 1);
	assert_int_equal(r.stages[1].frees, 1);
	assert_int_equal(r.stages[0].leak_bytes, 0);
	assert_int_equal(r.stages[1].leak_bytes, 20);
	assert_int_equal(r.stages[0].heap_at_end, 10);
	assert_int_equal(r.stages[1].heap_at_end, 20);
	assert_int_equal(r.tot.peak_time, 5 * MS + 30);
	assert_int_equal(r.end_time, 5 * MS + 40);
	assert_int_equal(r.ncurve, 3);
	assert_int_equal(r.curve_t[0], 5 * MS + 10);
	assert_int_equal(r.curve_v[1], 30);
	assert_int_equal(r.curve_t[2], 5 * MS + 40);
	assert_int_equal(r.curve_end[2], 20);
	heap_result_free(&r);
	trace_close(in);
}

struct seen {
	char text[512];
	size_t len;
	int stop_after;
};

static int each(void *ctx, const struct heap_event *e, const struct cp_tree *tree)
{
	struct seen *s = ctx;
	const struct cp_node *n = cp_node(tree, e->node);
	uint32_t func = e->node == CP_ROOT ? 0 : cp_func(tree, n->func)->id;
	s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len, "%llu:%s:%llx:f%u@%llu ",
				   (unsigned long long)e->id, lr_kind_name(e->kind), (unsigned long long)e->ptr, func,
				   (unsigned long long)e->time);
	return s->stop_after && (int)e->id + 1 == s->stop_after;
}

static void test_foreach_event(void **state)
{
	(void)state;
	struct lb b;
	proc_log(&b, 100, 0);
	struct lb_rec t[] = {ALLOC(5, 1, 0xa0), LB_EV(AT(10), F2, E), ALLOC(20, 2, 0xb0), FREE(30, 0xa0),
			     LB_EV(AT(40), F2, X)};
	lb_data(&b, 1, 100, 0, "main", t, 8);
	struct trace_input *in = open_logs(&b, NULL);
	struct seen s = {0};
	assert_int_equal(heap_foreach_event(in, 0, each, &s), 0);
	assert_string_equal(s.text, "0:ALLOC:a0:f0@5 1:ALLOC:b0:f2@20 2:DEALLOC:a0:f2@30 ");
	struct seen one = {.stop_after = 2};
	assert_int_equal(heap_foreach_event(in, 0, each, &one), 1);
	assert_string_equal(one.text, "0:ALLOC:a0:f0@5 1:ALLOC:b0:f2@20 ");
	trace_close(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_totals_and_peak_shares, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cross_thread_free_temporaries_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_milestones_on_the_recording_clock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreach_event, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
