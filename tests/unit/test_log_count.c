/* lr_open counts each thread's events and lost records without decoding
 * them (log_reader.c raw_count, packed_count; format/packed.c
 * sf_unpack_count). The counts must be the ones decoding every record gives
 * (lr_count_decoded) and what iteration delivers, for any bytes: holes,
 * unknown kinds, payloads whole and cut, malformed packed streams,
 * truncated and damaged files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/packed.h"
#include "format/sf_args.h"
#include "format/sflog.h"
#include "lib/log_reader.h"
#include "logbuild.h"

static char g_dir[64], g_path[128];

static const uint64_t g_funcs[3] = {0x1100, 0x1200, 0x1300};

enum batch_type { RAW_DATA, RAW_SLOT, PACKED };

/* Opens the first len bytes of b (0: all) and checks every thread's counts
 * against full decoding and iteration. The summary into *s; 0, or -1 if
 * the log is refused. */
static int check_counts(const struct lb *b, size_t len, struct lr_summary *s)
{
	char err[256] = "";
	unlink(g_path); /* rewriting a truncated file on ext4 waits for writeback */
	assert_int_equal(lb_write_len(b, g_path, len), 0);
	struct lr_log *log = lr_open(g_path, err, sizeof(err));
	if (!log)
		return -1;
	for (size_t i = 0; i < lr_nthreads(log); i++) {
		const struct lr_thread *t = lr_thread_at(log, i);
		uint64_t events, lost, k = 0;
		lr_count_decoded(log, t, &events, &lost);
		if (events != t->events || lost != t->lost)
			fail_msg("%zu bytes, thread %zu: counted %llu events %llu lost, decoded %llu %llu", len ? len : b->len,
				 i, (unsigned long long)t->events, (unsigned long long)t->lost,
				 (unsigned long long)events, (unsigned long long)lost);
		struct lr_iter it;
		struct lr_event ev;
		lr_iter_init_thread(&it, log, t);
		while (lr_next(&it, &ev))
			k++;
		assert_int_equal(k, t->events + t->nbefore);
	}
	lr_summary(log, s);
	lr_close(log);
	return 0;
}

/* A log of one batch of recs, of the given type; the batch's offset. */
static size_t one_batch(struct lb *b, enum batch_type type, const struct lb_rec *recs, uint32_t n)
{
	lb_init(b, SF_CLOCK_MONOTONIC);
	lb_object(b, 0, 10, "/usr/bin/prog", g_funcs, 3, NULL, 0);
	if (type == RAW_SLOT)
		return lb_slot_base(b, 1, 100, 0, "main", 1000, recs, n);
	if (type == PACKED)
		return lb_packed_base(b, 1, 100, 0, "main", 1000, recs, n);
	return lb_data_base(b, 1, 100, 0, "main", 1000, recs, n);
}

static void counts_of(enum batch_type type, const struct lb_rec *recs, uint32_t n, uint64_t events,
		      uint64_t lost)
{
	struct lb b;
	struct lr_summary s;
	one_batch(&b, type, recs, n);
	assert_int_equal(check_counts(&b, 0, &s), 0);
	if (s.events != events || s.lost != lost)
		fail_msg("batch type %d: %llu events %llu lost, want %llu %llu", type, (unsigned long long)s.events,
			 (unsigned long long)s.lost, (unsigned long long)events, (unsigned long long)lost);
	lb_free(&b);
}

/* Every kind between two function events, with its payload records and
 * with them cut by the end of the batch (the payload words look like
 * events, so a cut payload's records count as what they look like). */
static void test_every_kind(void **state)
{
	for (enum batch_type type = RAW_DATA; type <= PACKED; type++)
		for (uint32_t kind = 0; kind <= SF_KIND_MASK; kind++) {
			/* ARGS: its word holds its payload's record count. */
			unsigned np = kind == SF_EV_ARGS ? 2 : sf_event_payload_records(kind);
			int valid = sf_event_kind_valid(kind);
			struct lb_rec recs[8] = {LB_EV(1000, 10, SF_EV_ENTRY),
						 LB_EV(1001, kind == SF_EV_ARGS ? np : 11, kind)};
			uint32_t n = 2;
			for (unsigned i = 0; i < np; i++)
				recs[n++] = LB_RAW(7, sf_event_word(12, SF_EV_EXIT));
			recs[n++] = LB_EV(1002, 10, SF_EV_EXIT);
			counts_of(type, recs, n, 2 + (uint64_t)valid, !valid);
			if (!np)
				continue;
			/* Cut: the word is corrupt, its payload records events. A
			 * slot's batch goes on (zeros) to its capacity: whole. */
			if (type == RAW_SLOT)
				counts_of(type, recs, n - 2, 2, 0);
			else
				counts_of(type, recs, n - 2, 1 + (uint64_t)np - 1, 1);
		}
}

/* Values-only ARGS events, each right before its entry or exit at the
 * same time (what args.c writes, packed in the fourth form since
 * version 7): counted as decoded, nothing lost. Before the count knew the
 * fourth form's function event, SQLite's 20,000 rows under --auto-args
 * counted 4.2M records lost. */
static void test_values_args_counted(void **state)
{
	(void)state;
	for (enum batch_type type = RAW_DATA; type <= PACKED; type++) {
		struct lb_rec recs[64];
		uint32_t n = 0;
		for (uint32_t i = 0; i < 4; i++) {
			uint32_t t = 1000 + 10 * i;
			recs[n++] = LB_EV(t, SF_ARGS_VALUES | 2, SF_EV_ARGS);
			recs[n++] = LB_RAW(i, 0);
			recs[n++] = LB_RAW(i + 1, 0);
			recs[n++] = LB_EV(t, 10, SF_EV_ENTRY);
			recs[n++] = LB_EV(t + 3, SF_ARGS_VALUES | 1, SF_EV_ARGS);
			recs[n++] = LB_RAW(2 * i + 1, 0);
			recs[n++] = LB_EV(t + 3, 10, SF_EV_EXIT);
		}
		counts_of(type, recs, n, 16, 0);
		/* Exits with values of functions entered without: their
		 * entries are counted without decoding, and the fourth form's
		 * exit of the top names its slot by that entry's id. */
		n = 0;
		for (uint32_t i = 0; i < 3; i++) {
			uint32_t t = 2000 + 20 * i;
			recs[n++] = LB_EV(t, 10, SF_EV_ENTRY);
			recs[n++] = LB_EV(t + 1, SF_ARGS_VALUES | 1, SF_EV_ARGS);
			recs[n++] = LB_RAW(i, 0);
			recs[n++] = LB_EV(t + 1, 10, SF_EV_EXIT);
			recs[n++] = LB_EV(t + 2, 11, SF_EV_ENTRY);
			recs[n++] = LB_EV(t + 3, SF_ARGS_VALUES | 2, SF_EV_ARGS);
			recs[n++] = LB_RAW(i, 0);
			recs[n++] = LB_RAW(i + 7, 0);
			recs[n++] = LB_EV(t + 3, 11, SF_EV_EXIT);
		}
		counts_of(type, recs, n, 18, 0);
	}
}

/* Zero words: holes in a DATA chunk (lost); in a slot, holes too when
 * records follow, else the end of its events. */
static void test_holes_and_slot_end(void **state)
{
	struct lb_rec recs[] = {LB_EV(1000, 10, SF_EV_ENTRY), LB_HOLE, LB_HOLE, LB_EV(1002, 10, SF_EV_EXIT),
				LB_HOLE, LB_EV(1003, 11, SF_EV_ENTRY)};
	counts_of(RAW_DATA, recs, 6, 3, 3);
	counts_of(PACKED, recs, 6, 3, 3);
	/* In a slot, zeros with records after them are records claimed and
	 * never completed (holes); zeros up to the end are its free space. */
	counts_of(RAW_SLOT, recs, 6, 3, 3);
	counts_of(RAW_SLOT, recs, 3, 1, 0);
	counts_of(RAW_SLOT, recs, 0, 0, 0);
}

/* A packed batch with each byte of its stream overwritten by values that
 * make each kind of malformed op, and cut by the end of the file at each
 * byte (a cut chunk loses nothing). */
static void test_packed_damage(void **state)
{
	struct lb_rec recs[] = {
		LB_EV(1000, 10, SF_EV_ENTRY), LB_EV(1010, 11, SF_EV_ENTRY), LB_EV(1020, 0, SF_EV_HEAP_ALLOC),
		LB_RAW(64, 0), LB_RAW(1, sf_event_word(10, SF_EV_ENTRY)), LB_RAW(2, 0), LB_HOLE,
		LB_EV(1030, 11, SF_EV_EXIT), LB_EV(1040, 12, 13), LB_EV(5000, 12, SF_EV_ENTRY),
		LB_EV(1 << 30, 1, SF_EV_UNWIND), LB_EV(1070, 10, SF_EV_TAIL), LB_EV(1080, 0, SF_EV_HEAP_FREE),
	};
	static const uint8_t values[] = {0x00, SF_PK_EXIT << 4, SF_PK_TAIL << 4 | 8, SF_PK_RAW << 4, SF_PK_ENTRY_ID << 4,
					 0x80, 0xff, 0x7f, 0x0f, 0x10, 0x02};
	uint32_t n = sizeof(recs) / sizeof(recs[0]);
	struct lb b;
	struct lr_summary s;
	size_t off = one_batch(&b, PACKED, recs, n);
	size_t start = off + sizeof(struct sf_chunk), len = lb_chunk(&b, off)->reserved;
	assert_int_equal(check_counts(&b, 0, &s), 0);
	assert_int_equal(s.events, 7);
	assert_int_equal(s.lost, 3); /* the hole, kind 13, the cut payload */
	for (size_t i = 0; i < len; i++) {
		uint8_t keep = b.buf[start + i];
		for (size_t v = 0; v < sizeof(values); v++) {
			b.buf[start + i] = values[v];
			assert_int_equal(check_counts(&b, 0, &s), 0);
		}
		b.buf[start + i] = keep;
	}
	uint64_t before = 0;
	for (size_t cut = 0; cut <= len + 16; cut++) {
		assert_int_equal(check_counts(&b, start + cut, &s), 0);
		assert_true(s.events >= before);
		before = s.events;
	}
	assert_int_equal(before, 7);
	/* its byte count short: what does not decode is lost */
	for (uint64_t bytes = 0; bytes < len; bytes++) {
		lb_chunk(&b, off)->reserved = bytes;
		assert_int_equal(check_counts(&b, 0, &s), 0);
	}
	lb_free(&b);
}

/* A batch bigger than lr_open reads into its buffer is counted from the
 * mapping, the same way. */
static void test_big_batch(void **state)
{
	uint32_t n = (3u << 20) / sizeof(struct sf_event);
	struct lb_rec *recs = calloc(n, sizeof(*recs));
	assert_non_null(recs);
	for (uint32_t i = 0; i < n; i++)
		recs[i] = i % 1000 == 999 ? LB_HOLE : LB_EV(1000 + i, 10, i % 2 ? SF_EV_EXIT : SF_EV_ENTRY);
	counts_of(RAW_DATA, recs, n, n - n / 1000, n / 1000);
	free(recs);
}

/* A record drawn to hit every path: mostly function events, some payload
 * events (whole or not), holes, unknown kinds, anything. */
static struct lb_rec random_rec(uint32_t *t)
{
	int r = rand() % 100;
	*t += (uint32_t)(rand() % 500);
	if (r < 80)
		return LB_RAW(*t, sf_event_word((uint32_t)rand() % 6, r < 40 ? SF_EV_ENTRY : r < 75 ? SF_EV_EXIT : SF_EV_TAIL));
	if (r < 83)
		return LB_RAW(*t, sf_event_word((uint32_t)rand() % 4, SF_EV_UNWIND));
	if (r < 90)
		return LB_RAW(*t, sf_event_word(0, SF_EV_ALLOC + (uint32_t)rand() % 9));
	if (r < 93)
		return LB_HOLE;
	if (r < 96)
		return LB_RAW(*t, sf_event_word((uint32_t)rand() % 6, (uint32_t)rand() % 16));
	return LB_RAW((uint32_t)rand(), (uint32_t)rand() * 2654435761u);
}

/* Logs of a few threads' batches of every type (duplicate seqs included),
 * whole, with random bytes overwritten, and cut anywhere. */
static void test_random_logs(void **state)
{
	static struct lb_rec recs[2000];
	srand(41);
	for (int round = 0; round < 150; round++) {
		struct lb b;
		struct lr_summary s;
		lb_init(&b, SF_CLOCK_MONOTONIC);
		lb_object(&b, 0, 0, "/usr/bin/prog", g_funcs, 3, NULL, 0);
		int nbatch = 1 + rand() % 6;
		for (int k = 0; k < nbatch; k++) {
			uint32_t n = (uint32_t)(rand() % (k % 3 ? 40 : 2000)), t = 0;
			for (uint32_t i = 0; i < n; i++)
				recs[i] = random_rec(&t);
			uint64_t serial = 1 + (uint64_t)(rand() % 3);
			uint32_t seq = (uint32_t)(rand() % 4);
			int type = rand() % 3;
			if (type == RAW_SLOT)
				lb_slot_base(&b, serial, 100, seq, "t", 0, recs, n);
			else if (type == PACKED)
				lb_packed_base(&b, serial, 100, seq, "t", 0, recs, n);
			else
				lb_data_base(&b, serial, 100, seq, "t", 0, recs, n);
		}
		assert_int_equal(check_counts(&b, 0, &s), 0);
		for (int cut = 0; cut < 4; cut++)
			check_counts(&b, SF_HEADER_SIZE + (size_t)rand() % (b.len - SF_HEADER_SIZE), &s);
		for (int hit = 0; hit < 4; hit++) {
			for (int i = 0; i < 1 + rand() % 8; i++)
				b.buf[SF_HEADER_SIZE + (size_t)rand() % (b.len - SF_HEADER_SIZE)] = (uint8_t)rand();
			check_counts(&b, 0, &s);
		}
		lb_free(&b);
	}
}

static int setup(void **state)
{
	return lb_tmpdir(g_dir, g_path, "/tmp/sftrace-count-XXXXXX");
}

static int teardown(void **state)
{
	lb_tmpdir_remove(g_dir, g_path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind),
		cmocka_unit_test(test_holes_and_slot_end),
		cmocka_unit_test(test_packed_damage),
		cmocka_unit_test(test_values_args_counted),
		cmocka_unit_test(test_big_batch),
		cmocka_unit_test(test_random_logs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
