/* The reader pipeline (trace_input.h) on logs built in memory: one time
 * base over processes that started apart, start order, the sink's calls in
 * order (threads announced before their frames, allocations after the
 * frames before them), record-time trimming chained into the user's cut,
 * a sink that stops the run, and trace_run_merged's time order over
 * threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/trace_input.h"
#include "logbuild.h"

static char g_dir[64], g_path[128], g_path2[160];

static int setup(void **state)
{
	(void)state;
	if (lb_tmpdir(g_dir, g_path, "/tmp/sftrace-ti-XXXXXX"))
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
#define MS 1000000ull
/* A time `t` ns after a log's start (monotonic clock logs). */
#define AT(t) (LB_START_MONO + (t))

/* A log of process pid started `late` ns after LB_START_MONO. */
static void proc_log(struct lb *b, uint32_t pid, uint32_t ppid, uint64_t late)
{
	lb_init(b, SF_CLOCK_MONOTONIC);
	lb_header(b)->pid = pid;
	lb_header(b)->ppid = ppid;
	lb_header(b)->start_mono_ns = LB_START_MONO + late;
	lb_object(b, 0, 1, "/bin/prog", g_funcs, 3, NULL, 0);
}

static void write_log(struct lb *b, const char *path)
{
	assert_int_equal(lb_write(b, path), 0);
	lb_free(b);
}

static struct trace_input *open_logs(const char *a, const char *b, const struct trace_options *o)
{
	const char *paths[2] = {a, b};
	struct trace_options def = {.no_symbols = 1, .quiet = 1};
	struct trace_input *in = trace_open(paths, b ? 2 : 1, o ? o : &def);
	assert_non_null(in);
	return in;
}

/* ---- a sink that writes what it hears, one line per call ---- */

struct rec {
	char text[4096];
	size_t len;
	int stop_at_frame; /* frame_begin number (from 1) that fails; 0: none */
	int frames;
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

static int on_process(void *ctx, const struct trace_proc *p)
{
	put(ctx, "P%u ", p->info->pid);
	return 0;
}

static int on_thread(void *ctx, const struct trace_proc *p, const struct lr_thread *t)
{
	(void)p;
	put(ctx, "T%u ", t->tid);
	return 0;
}

static int on_begin(void *ctx, const struct fr_frame *f)
{
	struct rec *r = ctx;
	put(r, "B%u.%u@%llu ", f->func_id, f->depth, (unsigned long long)f->t_begin);
	return ++r->frames == r->stop_at_frame;
}

static int on_end(void *ctx, const struct fr_frame *f)
{
	put(ctx, "E%u@%llu ", f->func_id, (unsigned long long)f->t_end);
	return 0;
}

static int on_alloc(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	(void)p;
	put(ctx, "%c%llx@%llu ", ev->kind == A ? 'A' : 'D', (unsigned long long)ev->ptr,
	    (unsigned long long)ev->time_ns);
	return 0;
}

static const struct trace_sink g_sink_proto = {.process_begin = on_process, .thread_begin = on_thread,
					       .frame_begin = on_begin, .frame_end = on_end, .alloc_event = on_alloc};

static int run(struct trace_input *in, struct rec *r)
{
	struct trace_sink s = g_sink_proto;
	s.ctx = r;
	return trace_run(in, &s);
}

/* ---- cases ---- */

/* A child process that started 200 ms after its parent: its times are
 * shifted by 200 ms; processes come in start order whatever the order
 * given; func keys are the ELF addresses in both. */
static void test_one_time_base_over_processes(void **state)
{
	(void)state;
	struct lb b;
	proc_log(&b, 100, 1, 0);
	struct lb_rec p[] = {LB_EV(AT(10), 1, E), LB_EV(AT(30), 1, X)};
	lb_data(&b, 1, 100, 0, "main", p, 2);
	write_log(&b, g_path);
	proc_log(&b, 200, 100, 200 * MS);
	struct lb_rec c[] = {LB_EV(AT(200 * MS + 5), 2, E), LB_EV(AT(200 * MS + 7), 2, X)};
	lb_data(&b, 1, 200, 0, "main", c, 2);
	write_log(&b, g_path2);

	struct trace_input *in = open_logs(g_path2, g_path, NULL); /* child named first */
	assert_int_equal(trace_nprocs(in), 2);
	const struct trace_proc *p0 = trace_proc_at(in, 0), *p1 = trace_proc_at(in, 1);
	assert_int_equal(p0->info->pid, 100);
	assert_int_equal(p1->info->pid, 200);
	assert_int_equal(p0->start_ns, 0);
	assert_int_equal(p1->start_ns, 200 * MS);
	assert_int_equal(p0->zero_mono_ns, LB_START_MONO);
	assert_int_equal(p1->zero_mono_ns, LB_START_MONO);
	assert_int_equal(trace_func_key(p0, 2), 0x1200);
	assert_int_equal(trace_func_key(p1, 2), 0x1200);
	assert_int_equal(trace_func_key(p1, 99), 0);

	struct rec r = {0};
	assert_int_equal(run(in, &r), 0);
	assert_string_equal(r.text, "P100 T100 B1.0@10 E1@30 P200 T200 B2.0@200000005 E2@200000007 ");
	assert_int_equal(trace_stats(in)->frames, 2);
	assert_int_equal(trace_events(in), 4);
	assert_int_equal(trace_threads(in), 2);
	assert_int_equal(p1->last_ns, 200 * MS + 7);
	assert_null(trace_cut_stats(in));
	trace_close(in);
}

/* Allocations come after the frames before them on their thread, on the
 * recording's clock; a thread with only an allocation is announced; open
 * frames close at the thread's last time. */
static void test_sink_order_and_allocations(void **state)
{
	(void)state;
	struct lb b;
	proc_log(&b, 100, 1, 0);
	struct lb_rec t1[] = {LB_EV(AT(10), 1, E), LB_EV(AT(20), 2, E), LB_EV(AT(25), 0, A), lb_ext(64, 4, 0xa0),
			      LB_EV(AT(30), 2, X), LB_EV(AT(40), 0, D), lb_ext(0, 0, 0xa0)};
	lb_data(&b, 1, 100, 0, "main", t1, 7);
	struct lb_rec t2[] = {LB_EV(AT(50), 0, A), lb_ext(8, 3, 0xb0)};
	lb_data(&b, 2, 101, 0, "worker", t2, 2);
	write_log(&b, g_path);

	struct trace_input *in = open_logs(g_path, NULL, NULL);
	struct rec r = {0};
	assert_int_equal(run(in, &r), 0);
	assert_string_equal(r.text, "P100 T100 B1.0@10 B2.1@20 Aa0@25 E2@30 Da0@40 T101 Ab0@50 E1@40 ");
	assert_int_equal(trace_stats(in)->open_at_end, 1);
	trace_close(in);
}

/* The log's record-time limits (a trim) and the user's cut chain: the trim
 * drops the 5 ns call, the cut's --max-depth 2 the depth-2 one; parents
 * and depths are the kept frames'. */
static void test_trim_chains_into_cut(void **state)
{
	(void)state;
	struct lb b;
	proc_log(&b, 100, 1, 0);
	lb_header(&b)->reserved[SF_HDR_TRIM_MIN_NS] = 50;
	/* 1 [0,300] > 2 [10,15] ; 1 > 3 [20,290] > 1' [30,280] > 2' [40,270] */
	struct lb_rec t[] = {LB_EV(AT(0), 1, E),   LB_EV(AT(10), 2, E),  LB_EV(AT(15), 2, X),
			     LB_EV(AT(20), 3, E),  LB_EV(AT(30), 1, E),  LB_EV(AT(40), 2, E),
			     LB_EV(AT(270), 2, X), LB_EV(AT(280), 1, X), LB_EV(AT(290), 3, X),
			     LB_EV(AT(300), 1, X)};
	lb_data(&b, 1, 100, 0, "main", t, 10);
	write_log(&b, g_path);

	struct trace_options o = {.no_symbols = 1, .quiet = 1, .cut = {.max_depth = 2}};
	struct trace_input *in = open_logs(g_path, NULL, &o);
	struct rec r = {0};
	assert_int_equal(run(in, &r), 0);
	assert_string_equal(r.text, "P100 T100 B1.0@0 B3.1@20 E3@290 E1@300 ");
	const struct cut_stats *cs = trace_cut_stats(in);
	assert_non_null(cs);
	assert_int_equal(cs->kept, 2);
	assert_int_equal(trace_stats(in)->frames, 5);
	char buf[256];
	assert_int_equal(trace_format_cut(in, buf, sizeof(buf)), 1);
	assert_ptr_equal(strstr(buf, "kept 2 of 5 calls (recorded with --min-duration "), buf);
	trace_close(in);
}

/* A sink callback that fails stops the run at once. */
static void test_sink_failure_stops_the_run(void **state)
{
	(void)state;
	struct lb b;
	proc_log(&b, 100, 1, 0);
	struct lb_rec t[] = {LB_EV(AT(1), 1, E), LB_EV(AT(2), 1, X), LB_EV(AT(3), 2, E), LB_EV(AT(4), 2, X),
			     LB_EV(AT(5), 3, E), LB_EV(AT(6), 3, X)};
	lb_data(&b, 1, 100, 0, "main", t, 6);
	write_log(&b, g_path);
	struct trace_input *in = open_logs(g_path, NULL, NULL);
	struct rec r = {.stop_at_frame = 2};
	assert_int_equal(run(in, &r), -1);
	assert_string_equal(r.text, "P100 T100 B1.0@1 E1@2 B2.0@3 ");
	trace_close(in);
}

/* Thread 2's batch comes first in the file but its events are later:
 * trace_run keeps file order, trace_run_merged time order, both on the
 * recording's clock; trace_run_merged leaves trace_run's totals alone. */
static void test_merged_run_is_in_time_order(void **state)
{
	(void)state;
	struct lb b;
	proc_log(&b, 200, 100, 7 * MS);
	struct lb_rec t2[] = {LB_EV(AT(7 * MS + 20), 0, D), lb_ext(0, 0, 0xa0), LB_EV(AT(7 * MS + 40), 0, A),
			      lb_ext(8, 3, 0xc0)};
	lb_data(&b, 2, 201, 0, "worker", t2, 4);
	struct lb_rec t1[] = {LB_EV(AT(7 * MS + 10), 0, A), lb_ext(16, 4, 0xa0), LB_EV(AT(7 * MS + 30), 0, A),
			      lb_ext(16, 4, 0xb0)};
	lb_data(&b, 1, 200, 0, "main", t1, 4);
	write_log(&b, g_path2);
	proc_log(&b, 100, 1, 0);
	struct lb_rec p[] = {LB_EV(AT(1), 1, E), LB_EV(AT(2), 1, X)};
	lb_data(&b, 1, 100, 0, "main", p, 2);
	write_log(&b, g_path);

	struct trace_input *in = open_logs(g_path, g_path2, NULL);
	struct rec r = {0};
	assert_int_equal(run(in, &r), 0);
	assert_string_equal(r.text, "P100 T100 B1.0@1 E1@2 P200 T201 Da0@7000020 Ac0@7000040 T200 Aa0@7000010 "
				    "Ab0@7000030 ");
	assert_int_equal(trace_events(in), 6);

	struct rec m = {0};
	struct trace_sink s = g_sink_proto;
	s.ctx = &m;
	assert_int_equal(trace_run_merged(in, 1, &s), 0);
	assert_string_equal(m.text, "P200 T200 Aa0@7000010 T201 Da0@7000020 Ab0@7000030 Ac0@7000040 ");
	assert_int_equal(trace_events(in), 6);
	assert_int_equal(trace_threads(in), 3);
	trace_close(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_time_base_over_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sink_order_and_allocations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trim_chains_into_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sink_failure_stops_the_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merged_run_is_in_time_order, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
