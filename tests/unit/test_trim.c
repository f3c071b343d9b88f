/* The runtime's record-time trimming pass (src/runtime/trim.c) on
 * synthetic batches: what it may drop (whole in-batch calls, shorter than
 * the duration or provably deeper than the depth) and everything it must
 * keep (allocation records and the calls around them, unwinds, repaired
 * exits, holes, the batch's last record, calls before the tick rate is
 * known). The file is compiled in with stubs for the runtime it calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/runtime/trim.c"

struct sf_config sf_config;
uint64_t sf_start_tsc = 5000, sf_start_mono = 0;
static uint64_t g_elapsed = 1000000000; /* since start: 1 tick per ns */

uint64_t sf_now_raw(void) { return sf_start_tsc + g_elapsed; }
uint64_t sf_mono_ns(void) { return sf_start_mono + g_elapsed; }

enum { E = SF_EV_ENTRY, X = SF_EV_EXIT, T = SF_EV_TAIL, U = SF_EV_UNWIND, A = SF_EV_ALLOC };

static struct sf_event in[64], out[64];
static uint32_t stack[64];
static size_t nin;

static void add(uint32_t kind, uint32_t id, uint32_t t)
{
	in[nin++] = (struct sf_event){t, sf_event_word(id, kind)};
}

static void setup_case(uint64_t min_ns, uint32_t depth)
{
	memset(&sf_config, 0, sizeof(sf_config));
	sf_config.clock = SF_CLOCK_TSC;
	sf_config.trim_min_ns = min_ns;
	sf_config.trim_max_depth = depth;
	g_elapsed = 1000000000;
	nin = 0;
}

/* The kept records as "kind:id" words, to compare against the expected. */
static void expect(size_t n, const uint32_t *want_words, size_t nwant)
{
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(out[i].word, want_words[i]);
}

#define W(k, id) sf_event_word(id, k)

static void test_short_calls_dropped_long_kept(void **s)
{
	(void)s;
	setup_case(1000, 0);
	add(E, 1, 0), add(E, 2, 10), add(X, 2, 20), add(X, 1, 5000); /* 1 long, 2 short inside it */
	add(E, 3, 5010), add(E, 4, 5020), add(X, 4, 5030), add(X, 3, 5040); /* 3 and its child: short */
	add(E, 5, 5050); /* crosses into the next batch */
	size_t n = sf_trim_batch(in, nin, 0, out, stack);
	uint32_t want[] = {W(E, 1), W(X, 1), W(E, 5)};
	expect(n, want, 3);
	/* 950 ticks is the threshold (5% margin): 960 ticks stays. */
	setup_case(1000, 0);
	add(E, 1, 0), add(X, 1, 960), add(E, 2, 970), add(X, 2, 1900), add(E, 9, 2000);
	n = sf_trim_batch(in, nin, 0, out, stack);
	uint32_t want2[] = {W(E, 1), W(X, 1), W(E, 9)};
	expect(n, want2, 3);
	/* Times across the 32-bit wrap, against the batch base. */
	setup_case(1000, 0);
	uint64_t base = 0xfffffff0ull;
	add(E, 1, 0xfffffff0u), add(X, 1, 0x10u), add(E, 2, 0x20u);
	n = sf_trim_batch(in, nin, base, out, stack);
	uint32_t want3[] = {W(E, 2)};
	expect(n, want3, 1);
}

static void test_last_record_and_tail(void **s)
{
	(void)s;
	setup_case(1000, 0);
	add(E, 1, 0), add(X, 1, 10); /* the last record: may be the thread's last time */
	size_t n = sf_trim_batch(in, nin, 0, out, stack);
	assert_int_equal(n, 2);
	setup_case(1000, 0);
	add(E, 1, 0), add(T, 1, 10), add(E, 2, 20), add(X, 2, 30), add(E, 3, 40);
	n = sf_trim_batch(in, nin, 0, out, stack);
	uint32_t want[] = {W(E, 3)};
	expect(n, want, 1);
}

static void test_kept_records_pin_their_callers(void **s)
{
	(void)s;
	setup_case(1000, 0);
	add(E, 1, 0), add(E, 2, 5), add(A, 0, 6);
	in[nin++] = (struct sf_event){0, 0}; /* payload: size_align 0 */
	in[nin++] = (struct sf_event){0x1000, 0};
	add(X, 2, 7), add(X, 1, 8), add(E, 3, 9), add(X, 3, 10), add(E, 4, 11);
	size_t n = sf_trim_batch(in, nin, 0, out, stack);
	assert_int_equal(n, 8); /* 1 and 2 enclose the allocation; 3 is dropped */
	assert_memory_equal(out, in, 7 * sizeof(in[0]));
	assert_int_equal(out[7].word, W(E, 4));
}

static void test_repairs_and_holes_keep_what_is_open(void **s)
{
	(void)s;
	static const uint32_t breakers[] = {U, 0, X};
	for (size_t b = 0; b < 3; b++) {
		setup_case(1000, 0);
		add(E, 1, 0), add(E, 2, 5);
		if (breakers[b] == U)
			add(U, 1, 6); /* an unwind closes 2 */
		else if (breakers[b] == X)
			add(X, 1, 6); /* the reader closes 2 as unwound, then 1 */
		else
			in[nin++] = (struct sf_event){6, 0}; /* a hole */
		if (breakers[b] != X)
			add(X, 1, 7);
		add(E, 9, 20);
		size_t n = sf_trim_batch(in, nin, 0, out, stack);
		assert_int_equal(n, nin);
		assert_memory_equal(out, in, nin * sizeof(in[0]));
	}
}

static void test_depth(void **s)
{
	(void)s;
	setup_case(0, 2);
	add(E, 1, 0), add(E, 2, 1), add(E, 3, 2), add(E, 4, 3), add(X, 4, 4), add(X, 3, 5), add(X, 2, 6), add(X, 1, 7);
	add(E, 9, 8);
	size_t n = sf_trim_batch(in, nin, 0, out, stack);
	uint32_t want[] = {W(E, 1), W(E, 2), W(X, 2), W(X, 1), W(E, 9)};
	expect(n, want, 5);
	/* Exits of frames opened before the batch tell nothing about depth. */
	setup_case(0, 2);
	add(X, 7, 0), add(X, 8, 1), add(E, 1, 2), add(E, 2, 3), add(X, 2, 4), add(X, 1, 5), add(E, 9, 6);
	n = sf_trim_batch(in, nin, 0, out, stack);
	assert_int_equal(n, nin);
}

static void test_no_duration_trim_before_the_rate_is_known(void **s)
{
	(void)s;
	setup_case(1000, 0);
	g_elapsed = 500000; /* 0.5 ms since start */
	add(E, 1, 0), add(X, 1, 10), add(E, 2, 20);
	size_t n = sf_trim_batch(in, nin, 0, out, stack);
	assert_int_equal(n, 3);
	/* The monotonic clock's ticks are ns: no margin needed, none taken. */
	setup_case(1000, 0);
	sf_config.clock = SF_CLOCK_MONOTONIC;
	add(E, 1, 0), add(X, 1, 999), add(E, 2, 1000), add(X, 2, 2000), add(E, 3, 2001);
	n = sf_trim_batch(in, nin, 0, out, stack);
	uint32_t want[] = {W(E, 2), W(X, 2), W(E, 3)};
	expect(n, want, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_calls_dropped_long_kept),
		cmocka_unit_test(test_last_record_and_tail),
		cmocka_unit_test(test_kept_records_pin_their_callers),
		cmocka_unit_test(test_repairs_and_holes_keep_what_is_open),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_no_duration_trim_before_the_rate_is_known),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
