/* The hash map: lookups after inserts, colliding keys, growth, key 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "lib/hashmap.h"

static void test_empty(void **state)
{
	(void)state;
	struct hashmap m = HASHMAP_INIT;
	assert_null(hm_find(&m, 0));
	assert_null(hm_find(&m, 42));
	assert_int_equal(hm_get(&m, 42, 7), 7);
	hm_free(&m);
	hm_init(&m, 0);
	assert_null(hm_find(&m, 42));
	assert_int_equal(m.count, 0);
	hm_free(&m);
}

static void test_put_get(void **state)
{
	(void)state;
	struct hashmap m = HASHMAP_INIT;
	int added = -1;
	*hm_put(&m, 5, &added) = 50;
	assert_int_equal(added, 1);
	*hm_put(&m, UINT64_MAX, &added) = 1;
	assert_int_equal(added, 1);
	uint64_t *v = hm_put(&m, 5, &added);
	assert_int_equal(added, 0);
	assert_int_equal(*v, 50);
	assert_int_equal(hm_get(&m, 5, 0), 50);
	assert_int_equal(hm_get(&m, UINT64_MAX, 0), 1);
	assert_null(hm_find(&m, 6));
	assert_int_equal(m.count, 2);
	hm_free(&m);
}

/* Key 0 is the empty-slot marker inside the table: it lives beside it. */
static void test_zero_key(void **state)
{
	(void)state;
	struct hashmap m = HASHMAP_INIT;
	int added = -1;
	uint64_t *v = hm_put(&m, 0, &added);
	assert_int_equal(added, 1);
	assert_int_equal(*v, 0);
	*v = 99;
	assert_int_equal(hm_get(&m, 0, 1), 99);
	hm_put(&m, 0, &added);
	assert_int_equal(added, 0);
	assert_int_equal(m.count, 1);
	for (uint64_t k = 1; k < 100; k++)
		*hm_put(&m, k, NULL) = k * 3;
	assert_int_equal(hm_get(&m, 0, 1), 99);
	assert_int_equal(hm_get(&m, 99, 0), 297);
	hm_clear(&m);
	assert_null(hm_find(&m, 0));
	assert_null(hm_find(&m, 1));
	assert_int_equal(m.count, 0);
	hm_free(&m);
}

/* Keys with one home slot probe past each other, before and after growth. */
static void test_collisions(void **state)
{
	(void)state;
	struct hashmap m;
	hm_init(&m, 0);
	uint64_t same[6];
	size_t n = 0, home = hm_home(&m, 1);
	for (uint64_t k = 1; n < 6; k++)
		if (hm_home(&m, k) == home)
			same[n++] = k;
	for (size_t i = 0; i < n; i++) {
		int added = 0;
		*hm_put(&m, same[i], &added) = i + 100;
		assert_int_equal(added, 1);
	}
	for (size_t i = 0; i < n; i++)
		assert_int_equal(hm_get(&m, same[i], 0), i + 100);
	/* Force growth: the colliding keys move and are still found. */
	for (uint64_t k = 1u << 20; k < (1u << 20) + 1000; k++)
		*hm_put(&m, k, NULL) = k;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(hm_get(&m, same[i], 0), i + 100);
	assert_int_equal(m.count, n + 1000);
	hm_free(&m);
}

/* Many keys of the shapes the tracer uses: consecutive ids, addresses with
 * shared low bits, pairs packed high/low. Every one is found once. */
static void test_many_keys(void **state)
{
	(void)state;
	struct hashmap m = HASHMAP_INIT;
	const uint64_t N = 200000;
	for (uint64_t i = 0; i < N; i++) {
		*hm_put(&m, i, NULL) = i;
		*hm_put(&m, 0x7f0000000000ull + i * 64, NULL) = i + 1;
		*hm_put(&m, (i << 32) | 7, NULL) = i + 2;
	}
	assert_int_equal(m.count, 3 * N - 1); /* (0 << 32) | 7 == 7, already in */
	assert_true(m.count * 2 <= m.mask + 1);
	for (uint64_t i = 0; i < N; i++) {
		assert_int_equal(hm_get(&m, 0x7f0000000000ull + i * 64, 0), i + 1);
		if (i != 7)
			assert_int_equal(hm_get(&m, i, UINT64_MAX), i);
		if (i)
			assert_int_equal(hm_get(&m, (i << 32) | 7, 0), i + 2);
	}
	assert_null(hm_find(&m, N));
	hm_free(&m);
}

/* A walk visits every entry once, key 0 included. */
static void test_walk(void **state)
{
	(void)state;
	struct hashmap m = HASHMAP_INIT;
	size_t pos = 0;
	uint64_t k, v, sum = 0, n = 0;
	assert_int_equal(hm_next(&m, &pos, &k, &v), 0);
	for (uint64_t i = 0; i < 500; i++)
		*hm_put(&m, i * 1000, NULL) = i;
	pos = 0;
	while (hm_next(&m, &pos, &k, &v)) {
		assert_int_equal(k, v * 1000);
		sum += v;
		n++;
	}
	assert_int_equal(n, 500);
	assert_int_equal(sum, 499 * 500 / 2);
	hm_free(&m);
}

/* Removal against a plain array: a live set of pointers (16-byte aligned,
 * long probe runs) allocated and freed in a scrambled order, key 0 too. */
static void test_remove(void **state)
{
	(void)state;
	enum { N = 20000 };
	static uint8_t live[N];
	struct hashmap m = HASHMAP_INIT;
	uint64_t x = 12345;
	size_t n = 0;
	for (int step = 0; step < 200000; step++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		size_t i = (size_t)(x >> 33) % N;
		uint64_t key = (uint64_t)i * 16;
		if (live[i]) {
			assert_int_equal(hm_remove(&m, key), 1);
			assert_int_equal(hm_remove(&m, key), 0);
			live[i] = 0;
			n--;
		} else {
			int added;
			*hm_put(&m, key, &added) = i + 1;
			assert_int_equal(added, 1);
			live[i] = 1;
			n++;
		}
		assert_int_equal(m.count, n);
	}
	for (size_t i = 0; i < N; i++) {
		const uint64_t *v = hm_find(&m, (uint64_t)i * 16);
		if (live[i]) {
			assert_non_null(v);
			assert_int_equal(*v, i + 1);
		} else {
			assert_null(v);
		}
	}
	/* hm_remove_at with the slot hm_find gave, and an emptied map. */
	for (size_t i = 0; i < N; i++)
		if (live[i])
			hm_remove_at(&m, hm_find(&m, (uint64_t)i * 16));
	assert_int_equal(m.count, 0);
	size_t pos = 0;
	uint64_t k, v;
	assert_int_equal(hm_next(&m, &pos, &k, &v), 0);
	hm_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_zero_key),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_remove),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
