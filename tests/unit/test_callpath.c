/* The call-path tree: frame replay, totals, recursion marks, the merged
 * walk and the time formatter, on hand-made frames with known answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/callpath.h"
#include "lib/util.h"

enum { MAIN = 0x1000, A = 0x2000, B = 0x3000, R = 0x4000 };

/* The node at path keys[0..n) under the root, or 0. */
static uint32_t find(const struct cp_tree *t, const uint64_t *keys, size_t n)
{
	uint32_t cur = CP_ROOT;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = cp_node(t, cur)->first_child;
		while (c && cp_node(t, c)->key != keys[i])
			c = cp_node(t, c)->next_sibling;
		if (!c)
			return 0;
		cur = c;
	}
	return cur;
}

/* Replays one frame at depth d with its children: a tiny script runner.
 * Frames: main [0,100) { a [10,40) { b [15,25) }, a [50,60), b [70,71) } */
static struct cp_tree *sample(void)
{
	struct cp_tree *t = cp_new();
	cp_begin(t, 0, CP_ROOT, 0, MAIN, NULL, 0);
	cp_begin(t, 0, CP_ROOT, 1, A, NULL, 1);
	cp_begin(t, 0, CP_ROOT, 2, B, NULL, 2);
	cp_end(t, 0, 2, 15, 25);
	cp_end(t, 0, 1, 10, 40);
	cp_begin(t, 0, CP_ROOT, 1, A, NULL, 1);
	cp_end(t, 0, 1, 50, 60);
	cp_begin(t, 0, CP_ROOT, 1, B, NULL, 2);
	cp_end(t, 0, 1, 70, 71);
	cp_end(t, 0, 0, 0, 100);
	cp_finish(t);
	return t;
}

static void test_totals_and_self(void **state)
{
	(void)state;
	struct cp_tree *t = sample();
	uint64_t p_main[] = {MAIN}, p_a[] = {MAIN, A}, p_ab[] = {MAIN, A, B}, p_b[] = {MAIN, B};
	const struct cp_node *m = cp_node(t, find(t, p_main, 1));
	const struct cp_node *a = cp_node(t, find(t, p_a, 2));
	const struct cp_node *ab = cp_node(t, find(t, p_ab, 3));
	const struct cp_node *b = cp_node(t, find(t, p_b, 2));
	assert_int_equal(cp_nnodes(t), 5); /* root + 4 paths */
	assert_int_equal(m->calls, 1);
	assert_int_equal(m->total_ns, 100);
	assert_int_equal(m->self_ns, 100 - 30 - 10 - 1);
	assert_int_equal(m->sub_calls, 5);
	assert_int_equal(a->calls, 2);
	assert_int_equal(a->total_ns, 40);
	assert_int_equal(a->self_ns, 30);
	assert_int_equal(a->min_ns, 10);
	assert_int_equal(a->max_ns, 30);
	assert_int_equal(a->sub_calls, 3);
	assert_int_equal(ab->total_ns, 10);
	assert_int_equal(ab->depth, 3);
	assert_int_equal(b->total_ns, 1);
	/* The root sums the root frames. */
	assert_int_equal(cp_node(t, CP_ROOT)->total_ns, 100);
	assert_int_equal(cp_node(t, CP_ROOT)->sub_calls, 5);
	/* b is one function at two paths. */
	assert_int_equal(ab->func, b->func);
	assert_int_equal(cp_nfuncs(t), 3);
	assert_int_equal(cp_func(t, b->func)->key, B);
	assert_int_equal(cp_func(t, b->func)->id, 2);
	cp_free(t);
}

static void test_recursion_marked_nested(void **state)
{
	(void)state;
	struct cp_tree *t = cp_new();
	/* r [0,100) { r [10,90) { a [20,30) { r [21,22) } } } ; a [100,110) */
	cp_begin(t, 0, CP_ROOT, 0, R, NULL, 0);
	cp_begin(t, 0, CP_ROOT, 1, R, NULL, 0);
	cp_begin(t, 0, CP_ROOT, 2, A, NULL, 1);
	cp_begin(t, 0, CP_ROOT, 3, R, NULL, 0);
	cp_end(t, 0, 3, 21, 22);
	cp_end(t, 0, 2, 20, 30);
	cp_end(t, 0, 1, 10, 90);
	cp_end(t, 0, 0, 0, 100);
	cp_begin(t, 0, CP_ROOT, 0, A, NULL, 1);
	cp_end(t, 0, 0, 100, 110);
	cp_finish(t);
	uint64_t p1[] = {R}, p2[] = {R, R}, p3[] = {R, R, A}, p4[] = {R, R, A, R}, p5[] = {A};
	assert_false(cp_node(t, find(t, p1, 1))->nested);
	assert_true(cp_node(t, find(t, p2, 2))->nested);
	assert_false(cp_node(t, find(t, p3, 3))->nested);
	assert_true(cp_node(t, find(t, p4, 4))->nested);
	assert_false(cp_node(t, find(t, p5, 1))->nested);
	assert_int_equal(cp_node(t, find(t, p3, 3))->self_ns, 9);
	assert_int_equal(cp_node(t, CP_ROOT)->total_ns, 110);
	cp_free(t);
}

static void test_synthetic_levels(void **state)
{
	(void)state;
	struct cp_tree *t = cp_new();
	uint32_t proc = cp_child(t, CP_ROOT, CP_KEY_PROCESS(0), NULL, UINT32_MAX);
	uint32_t th1 = cp_child(t, proc, CP_KEY_THREAD(0, 1), NULL, 1);
	uint32_t th2 = cp_child(t, proc, CP_KEY_THREAD(0, 2), NULL, 2);
	/* Two stacks interleaved: frames of one stack never see the other's. */
	cp_begin(t, 1, th1, 0, MAIN, NULL, 0);
	cp_begin(t, 2, th2, 0, A, NULL, 1);
	cp_begin(t, 1, th1, 1, B, NULL, 2);
	cp_begin(t, 2, th2, 1, A, NULL, 1);
	cp_end(t, 2, 1, 5, 7);
	cp_end(t, 1, 1, 3, 8);
	cp_end(t, 2, 0, 4, 20);
	cp_end(t, 1, 0, 0, 10);
	cp_finish(t);
	assert_int_equal(cp_node(t, th1)->total_ns, 10);
	assert_int_equal(cp_node(t, th2)->total_ns, 16);
	assert_int_equal(cp_node(t, proc)->total_ns, 26);
	assert_int_equal(cp_node(t, CP_ROOT)->total_ns, 26);
	assert_int_equal(cp_node(t, proc)->sub_calls, 4);
	uint64_t p[] = {CP_KEY_PROCESS(0), CP_KEY_THREAD(0, 2), A, A};
	uint32_t aa = find(t, p, 4);
	assert_true(aa != 0);
	assert_int_equal(cp_node(t, aa)->scope, th2);
	assert_true(cp_node(t, aa)->nested);
	assert_int_equal(cp_node(t, find(t, p, 3))->self_ns, 14);
	cp_free(t);
}

static void test_many_paths_rehash(void **state)
{
	(void)state;
	struct cp_tree *t = cp_new();
	uint32_t ids[5000];
	for (uint32_t i = 0; i < 5000; i++)
		ids[i] = cp_child(t, CP_ROOT, 0x10000 + i, NULL, i);
	for (uint32_t i = 0; i < 5000; i++) {
		assert_int_equal(cp_child(t, CP_ROOT, 0x10000 + i, NULL, i), ids[i]);
		assert_int_equal(cp_node(t, ids[i])->key, 0x10000 + i);
	}
	/* The same key under another parent is another path, same function. */
	uint32_t deeper = cp_child(t, ids[10], 0x10000 + 3, NULL, 3);
	assert_int_not_equal(deeper, ids[3]);
	assert_int_equal(cp_node(t, deeper)->func, cp_node(t, ids[3])->func);
	assert_int_equal(cp_nfuncs(t), 5000);
	assert_int_equal(cp_nnodes(t), 5002);
	cp_free(t);
}

struct seen {
	char lines[16][64];
	int n;
	const char *const *names;
	const struct cp_tree *t;
	int skip_depth; /* groups at this depth: skip children */
};

static int record_group(void *ctx, const struct cp_group *g)
{
	struct seen *s = ctx;
	snprintf(s->lines[s->n++], 64, "%u %s n%u c%llu t%llu s%llu", g->depth,
		 s->names[cp_node(s->t, g->node)->func], g->nnodes, (unsigned long long)g->calls,
		 (unsigned long long)g->total_ns, (unsigned long long)g->self_ns);
	return (int)g->depth == s->skip_depth;
}

static void test_walk_merges_equal_names(void **state)
{
	(void)state;
	/* main { x(key A) { b }, x(key B') { b }, a2 } where A and 0x5000 are both
	 * named "x": the walk shows one "x" whose child "b" sums both. */
	struct cp_tree *t = cp_new();
	cp_begin(t, 0, CP_ROOT, 0, MAIN, NULL, 0);
	cp_begin(t, 0, CP_ROOT, 1, A, NULL, 1);
	cp_begin(t, 0, CP_ROOT, 2, B, NULL, 2);
	cp_end(t, 0, 2, 1, 3);
	cp_end(t, 0, 1, 0, 5);
	cp_begin(t, 0, CP_ROOT, 1, 0x5000, NULL, 3);
	cp_begin(t, 0, CP_ROOT, 2, B, NULL, 2);
	cp_end(t, 0, 2, 6, 10);
	cp_end(t, 0, 1, 5, 12);
	cp_begin(t, 0, CP_ROOT, 1, R, NULL, 4);
	cp_end(t, 0, 1, 12, 13);
	cp_end(t, 0, 0, 0, 20);
	cp_finish(t);
	/* function indices in creation order: MAIN 0, A 1, B 2, 0x5000 3, R 4 */
	const char *names[] = {"main", "x", "b", "x", "a2"};
	uint32_t rank[5];
	cp_rank_by_name(t, names, rank);
	assert_int_equal(rank[1], rank[3]);
	assert_true(rank[4] < rank[2] && rank[2] < rank[0] && rank[0] < rank[1]);
	struct seen s = {.names = names, .t = t, .skip_depth = -1};
	assert_int_equal(cp_walk_merged(t, rank, record_group, &s), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.lines[0], "1 main n1 c1 t20 s7");
	assert_string_equal(s.lines[1], "2 a2 n1 c1 t1 s1");
	assert_string_equal(s.lines[2], "2 x n2 c2 t12 s6");
	assert_string_equal(s.lines[3], "3 b n2 c2 t6 s6");
	/* Skipping x's children. */
	struct seen s2 = {.names = names, .t = t, .skip_depth = 2};
	assert_int_equal(cp_walk_merged(t, rank, record_group, &s2), 0);
	assert_int_equal(s2.n, 3);
	cp_free(t);
}

static int stop_at_second(void *ctx, const struct cp_group *g)
{
	(void)g;
	return ++*(int *)ctx == 2 ? -1 : 0;
}

static void test_walk_stops(void **state)
{
	(void)state;
	struct cp_tree *t = sample();
	const char *names[] = {"main", "a", "b"};
	uint32_t rank[3];
	cp_rank_by_name(t, names, rank);
	int n = 0;
	assert_int_equal(cp_walk_merged(t, rank, stop_at_second, &n), -1);
	assert_int_equal(n, 2);
	cp_free(t);
}

static int max_depth(void *ctx, const struct cp_group *g)
{
	uint32_t *m = ctx;
	if (g->depth > *m)
		*m = g->depth;
	return 0;
}

static void test_deep_walk_is_iterative(void **state)
{
	(void)state;
	/* 200000 nested frames: a recursive walk would need a huge C stack. */
	enum { D = 200000 };
	struct cp_tree *t = cp_new();
	for (uint32_t d = 0; d < D; d++)
		cp_begin(t, 0, CP_ROOT, d, R, NULL, 0);
	for (uint32_t d = D; d-- > 0;)
		cp_end(t, 0, d, d, 2 * (uint64_t)D - d);
	cp_finish(t);
	const char *names[] = {"r"};
	uint32_t rank[1];
	cp_rank_by_name(t, names, rank);
	uint32_t deepest = 0;
	assert_int_equal(cp_nnodes(t), D + 1);
	assert_int_equal(cp_node(t, CP_ROOT)->total_ns, 2 * (uint64_t)D);
	assert_int_equal(cp_node(t, CP_ROOT)->sub_calls, D);
	assert_int_equal(cp_walk_merged(t, rank, max_depth, &deepest), 0);
	assert_int_equal(deepest, D);
	cp_free(t);
}

static void test_format_ns(void **state)
{
	(void)state;
	static const struct {
		uint64_t ns;
		const char *want;
	} cases[] = {
		{0, "0 ns"},          {999, "999 ns"},       {1000, "1.00 us"},     {1234, "1.23 us"},
		{12345, "12.3 us"},   {123456, "123 us"},    {999499, "999 us"},    {999500, "1.00 ms"},
		{45600000, "45.6 ms"}, {1500000000, "1.50 s"}, {123456789012, "123 s"}, {1234567890123, "1235 s"},
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sf_format_duration(buf, sizeof(buf), cases[i].ns, SF_DURATION_SIG3);
		assert_string_equal(buf, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals_and_self),
		cmocka_unit_test(test_recursion_marked_nested),
		cmocka_unit_test(test_synthetic_levels),
		cmocka_unit_test(test_many_paths_rehash),
		cmocka_unit_test(test_walk_merges_equal_names),
		cmocka_unit_test(test_walk_stops),
		cmocka_unit_test(test_deep_walk_is_iterative),
		cmocka_unit_test(test_format_ns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
