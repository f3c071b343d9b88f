/* The packed DATA chunk (format/packed.h): encode -> decode round trips of
 * the codec, its sizes on known patterns, malformed streams, and the reader
 * delivering a packed chunk exactly as the same batch written raw. */
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

#define MAXREC 20000

static struct sf_event g_ev[MAXREC], g_back[MAXREC];
static uint8_t g_out[MAXREC * SF_PK_MAX_RECORD + SF_PK_MAX_GROUP], g_out2[MAXREC * SF_PK_MAX_RECORD + SF_PK_MAX_GROUP];
static struct sf_pack_state g_st;

static struct sf_event rec(uint32_t time_lo, uint32_t id, uint32_t kind)
{
	return (struct sf_event){time_lo, sf_event_word(id, kind)};
}

/* Packs n records with base, decodes them back and checks every byte.
 * Returns the packed length. */
static size_t round_trip(const struct sf_event *ev, size_t n, uint64_t base)
{
	sf_pack_reset(&g_st, base);
	size_t len = sf_pack_batch(&g_st, ev, n, g_out, sizeof(g_out));
	assert_true(len > 0 || n == 0);
	struct sf_unpack *u = malloc(sizeof(*u));
	assert_non_null(u);
	sf_unpack_init(u, base, g_out, g_out + len);
	const uint8_t *at;
	for (size_t i = 0; i < n; i++) {
		int r = sf_unpack_next(u, &g_back[i], &at);
		if (r != 1)
			fail_msg("record %zu of %zu: decoder returned %d", i, n, r);
		if (memcmp(&g_back[i], &ev[i], sizeof(ev[i])))
			fail_msg("record %zu: %08x %08x decoded as %08x %08x", i, ev[i].time_lo, ev[i].word,
				 g_back[i].time_lo, g_back[i].word);
	}
	assert_int_equal(sf_unpack_next(u, &g_back[0], &at), 0);
	assert_ptr_equal(at, g_out + len);
	free(u);
	return len;
}

/* fib-like: entry/exit of one function 3 ticks apart is one byte each. */
static void test_nested_calls_one_byte(void **state)
{
	size_t n = 0;
	uint32_t t = 1000;
	for (int d = 0; d < 40; d++)
		g_ev[n++] = rec(t += 3, 7, SF_EV_ENTRY);
	for (int d = 0; d < 40; d++)
		g_ev[n++] = rec(t += 3, 7, SF_EV_EXIT);
	/* the first entry's delta from the base (1003 ticks) takes 2 more
	 * bytes, its id one */
	assert_int_equal(round_trip(g_ev, n, 0), n + 3);
}

/* The example of docs/FORMAT.md, byte for byte. */
static void test_format_doc_example(void **state)
{
	const struct sf_event ev[] = {rec(1003, 7, SF_EV_ENTRY), rec(1006, 7, SF_EV_ENTRY), rec(1009, 7, SF_EV_EXIT),
				      rec(1012, 7, SF_EV_EXIT)};
	static const uint8_t want[] = {0x56, 0x07, 0xa6, 0x16, 0x16};
	assert_int_equal(round_trip(ev, 4, 1000), sizeof(want));
	assert_memory_equal(g_out, want, sizeof(want));
}

static void test_time_wrap_and_gaps(void **state)
{
	uint64_t base = 0x1fffffff0ULL;
	size_t n = 0;
	g_ev[n++] = rec(0xfffffff8u, 1, SF_EV_ENTRY);      /* before the base */
	g_ev[n++] = rec(0x00000005u, 2, SF_EV_ENTRY);      /* after the wrap */
	g_ev[n++] = rec(0x7ffffff0u, 2, SF_EV_EXIT);       /* a gap near 2^31 */
	g_ev[n++] = rec(0x00000006u, 1, SF_EV_EXIT);       /* and back */
	g_ev[n++] = rec(0x80000005u, 3, SF_EV_ENTRY);      /* exactly -2^31 .. */
	g_ev[n++] = rec(0x00000005u, 3, SF_EV_EXIT);
	g_ev[n++] = rec(0x00000005u, 3, SF_EV_ENTRY);      /* a zero delta */
	g_ev[n++] = rec(0x00000004u, 3, SF_EV_EXIT);       /* a negative one */
	round_trip(g_ev, n, base);
	round_trip(g_ev, n, 0);
	round_trip(g_ev, n, UINT64_MAX);
}

static void test_largest_ids(void **state)
{
	uint32_t big = SF_FUNC_ID_LIMIT - 1;
	size_t n = 0;
	g_ev[n++] = rec(10, big, SF_EV_ENTRY);
	g_ev[n++] = rec(11, 0, SF_EV_ENTRY);
	g_ev[n++] = rec(12, 0, SF_EV_EXIT);
	g_ev[n++] = rec(13, big, SF_EV_TAIL);
	g_ev[n++] = rec(14, big, SF_EV_EXIT);  /* without entry: explicit id */
	g_ev[n++] = rec(15, big - 1, SF_EV_TAIL);
	g_ev[n++] = rec(16, big, SF_EV_UNWIND);
	round_trip(g_ev, n, 10);
}

/* Allocation and heap events keep their payload records byte for byte,
 * whatever those hold (high halves that look like words, zeros). */
static void test_payload_kinds(void **state)
{
	size_t n = 0;
	uint32_t t = 50;
	g_ev[n++] = rec(t++, 3, SF_EV_ENTRY);
	for (uint32_t kind = SF_EV_ALLOC; kind <= SF_EV_HEAP_REALLOC; kind++) {
		if (kind == SF_EV_UNWIND || kind == SF_EV_UNWIND_TO)
			continue;
		g_ev[n++] = rec(t++, 0, kind);
		for (unsigned p = 0; p < sf_event_payload_records(kind); p++)
			g_ev[n++] = (struct sf_event){0xdeadbeefu * (p + 1), p & 1 ? 0 : sf_event_word(3, SF_EV_EXIT)};
	}
	g_ev[n++] = rec(t++, 3, SF_EV_EXIT);
	size_t len = round_trip(g_ev, n, 50);
	/* and the exit after them is still predicted: one byte */
	sf_pack_reset(&g_st, 50);
	assert_int_equal(sf_pack_batch(&g_st, g_ev, n - 1, g_out, sizeof(g_out)) + 1, len);
	/* a payload cut by the end of the batch */
	g_ev[0] = rec(1, 0, SF_EV_HEAP_REALLOC);
	g_ev[1] = (struct sf_event){1, 2};
	round_trip(g_ev, 2, 0);
}

/* Holes, unknown kinds, a kind-0 word with an id: kept as they are. */
static void test_odd_records(void **state)
{
	size_t n = 0;
	g_ev[n++] = rec(5, 1, SF_EV_ENTRY);
	g_ev[n++] = (struct sf_event){0, 0};
	g_ev[n++] = rec(7, 99, 9);
	g_ev[n++] = rec(8, 99, 15);
	g_ev[n++] = rec(9, 99, 0);
	g_ev[n++] = rec(10, 1, SF_EV_EXIT);
	round_trip(g_ev, n, 0);
}

/* Unwinding pops frames: the exits after it are predicted from what is
 * left; frames deeper than the stack ring still decode (by explicit id). */
static void test_unwind_and_deep_stacks(void **state)
{
	size_t n = 0;
	for (uint32_t i = 0; i < 10; i++)
		g_ev[n++] = rec(i, 100 + i, SF_EV_ENTRY);
	g_ev[n++] = rec(20, 7, SF_EV_UNWIND);
	g_ev[n++] = rec(21, 102, SF_EV_EXIT);
	g_ev[n++] = rec(22, 101, SF_EV_EXIT);
	g_ev[n++] = rec(23, 100, SF_EV_EXIT);
	size_t len = round_trip(g_ev, n, 0);
	assert_true(len <= n + 3 + 10); /* the ten entries name their ids */
	n = 0;
	for (uint32_t i = 0; i < 3 * SF_PK_STACK; i++)
		g_ev[n++] = rec(i, i % 11, SF_EV_ENTRY);
	for (uint32_t i = 3 * SF_PK_STACK; i-- > 0;)
		g_ev[n++] = rec(4 * SF_PK_STACK - i, i % 11, SF_EV_EXIT);
	round_trip(g_ev, n, 0);
}

/* Fills n records biased to what programs do, with every odd case mixed
 * in: holes, payload kinds, unknown kinds, huge time steps, large ids. */
static void random_records(size_t n)
{
	uint32_t t = (uint32_t)rand();
	for (size_t i = 0; i < n; i++) {
		int r = rand() % 100;
		t += r < 80 ? (uint32_t)(rand() % 300) : (uint32_t)rand();
		uint32_t kind = r < 45 ? SF_EV_ENTRY : r < 90 ? SF_EV_EXIT : (uint32_t)(rand() % 16);
		uint32_t id = r % 3 ? (uint32_t)(rand() % 12) : (uint32_t)rand() % SF_FUNC_ID_LIMIT;
		g_ev[i] = r == 99 ? (struct sf_event){(uint32_t)rand(), (uint32_t)rand()} : rec(t, id, kind);
	}
}

/* Leaf calls (an entry and its exit next) are coded as a pair, and the
 * pair's entry still goes into the stack ring as the decoder's does: with
 * the ring wrapped (deeper than SF_PK_STACK), a pair that skipped it would
 * leave the coder predicting exits from a slot the decoder overwrote, and
 * the way back up would decode to other ids. A leaf's exit with another id
 * is no pair. */
static void test_leaf_pairs_and_wrapped_stack(void **state)
{
	size_t n = 0;
	uint32_t t = 100, depth = SF_PK_STACK + 6;
	g_ev[n++] = rec(t += 9, 7, SF_EV_ENTRY); /* not a pair: exit of another id */
	g_ev[n++] = rec(t += 9, 8, SF_EV_EXIT);
	g_ev[n++] = rec(t += 9, 7, SF_EV_EXIT);
	for (uint32_t d = 0; d < depth; d++) {
		g_ev[n++] = rec(t += 9, 20 + d, SF_EV_ENTRY);
		g_ev[n++] = rec(t += 9, 500 + d % 3, SF_EV_ENTRY); /* a leaf */
		g_ev[n++] = rec(t += 9, 500 + d % 3, SF_EV_EXIT);
	}
	/* the deepest leaf's slot in the ring is read on the way back up */
	for (uint32_t d = depth; d-- > 0;)
		g_ev[n++] = rec(t += 9, 20 + d, SF_EV_EXIT);
	round_trip(g_ev, n, 100);
	/* the same batch ending in the middle of a pair */
	round_trip(g_ev, 2, 100);
}

/* Random batches, biased to what programs do, round trip exactly. */
static void test_random_batches(void **state)
{
	srand(17);
	for (int round = 0; round < 50; round++) {
		size_t n = (size_t)(rand() % MAXREC);
		random_records(n);
		round_trip(g_ev, n, (uint64_t)rand() << 20);
	}
}

/* Kind 15 (a tail call to a patched entry) of the innermost open entry is
 * op 4 with id 0, two bytes; of another (an entry before the batch) op 7,
 * the word copied. Both pop like a tail call on both sides: main -> a
 * -TAIL15-> b -> exit b, exit main; then x's kind 15 with nothing of x open.
 * ENTRY main (2 bytes: id spelled), ENTRY a (2), TAIL15 a (2), ENTRY b
 * (2), EXIT b (1), EXIT main (1: the top, as the decoder has it), TAIL15 x
 * (tag + word: 5). */
static void test_tail_to_entry_pops(void **state)
{
	const struct sf_event ev[] = {rec(1001, 1, SF_EV_ENTRY), rec(1002, 2, SF_EV_ENTRY),
				      rec(1003, 2, SF_EV_TAIL_ENTRY), rec(1004, 3, SF_EV_ENTRY), rec(1005, 3, SF_EV_EXIT),
				      rec(1006, 1, SF_EV_EXIT), rec(1007, 9, SF_EV_TAIL_ENTRY)};
	assert_int_equal(round_trip(ev, 7, 1000), 2 + 2 + 2 + 2 + 1 + 1 + 5);
	static const uint8_t want[] = {SF_PK_ENTRY_ID << 4 | 2, 1, SF_PK_ENTRY_ID << 4 | 2, 2, SF_PK_TAIL_ID << 4 | 2, 0,
				       SF_PK_ENTRY_ID << 4 | 2, 3, SF_PK_EXIT << 4 | 2, SF_PK_EXIT << 4 | 2,
				       SF_PK_RAW << 4 | 2, 9 << 4 | 15, 0, 0, 0};
	assert_memory_equal(g_out, want, sizeof(want));
	/* op 4 with id 0 on an empty stack is malformed, as op 3 is */
	static const uint8_t bad[] = {SF_PK_TAIL_ID << 4 | 2, 0};
	struct sf_unpack u;
	struct sf_event e;
	const uint8_t *at;
	sf_unpack_init(&u, 1000, bad, bad + sizeof(bad));
	assert_int_equal(sf_unpack_next(&u, &e, &at), -1);
	uint32_t n;
	sf_unpack_init(&u, 1000, bad, bad + sizeof(bad));
	assert_int_equal(sf_unpack_count(&u, 10, &n), SF_COUNT_BAD);
}

/* record -A/-R: an ARGS event (header, one values record) before each
 * entry and exit of add(i, i + 1), as args.c writes them (same time as
 * the event after). The payload is coded against the last one of the same
 * header: the header is one byte, a value record a mask byte and its
 * changed bytes; it decodes back byte for byte. */
static void test_args_payloads_coded(void **state)
{
	size_t n = 0;
	uint32_t t = 5000;
	for (uint32_t i = 0; i < 1000; i++) {
		struct sf_args_head in = {3, SF_ARGS_FIXED, 2, 12}, out = {3, SF_ARGS_FIXED | SF_ARGS_RET, 1, 8};
		uint64_t h;
		t += 40;
		g_ev[n++] = rec(t, 2, SF_EV_ARGS);
		memcpy(&h, &in, 8);
		memcpy(&g_ev[n++], &h, 8);
		uint64_t v = 0x10021001u | (uint64_t)i << 32; /* pairs (1, 0x10), (2, 0x10); a = i */
		memcpy(&g_ev[n++], &v, 8);
		v = i + 1; /* b */
		memcpy(&g_ev[n++], &v, 8);
		g_ev[n++] = rec(t, 3, SF_EV_ENTRY);
		t += 30;
		g_ev[n++] = rec(t, 2, SF_EV_ARGS);
		memcpy(&h, &out, 8);
		memcpy(&g_ev[n++], &h, 8);
		v = 0x1000 | (uint64_t)(2 * i + 1) << 32; /* pair (0, 0x10); the sum */
		memcpy(&g_ev[n++], &v, 8);
		g_ev[n++] = rec(t, 3, SF_EV_EXIT);
	}
	(void)n;
	size_t len = round_trip(g_ev, n, 4096);
	/* copied as they are (op 7 with the raw payload) they take 52 bytes a
	 * call; the first form of coded payloads (a 4-byte word each) about
	 * 24 */
	printf("args: %zu bytes for 1000 calls\n", len);
	if (len > 1000 * 30)
		fail_msg("%zu bytes for 1000 calls", len);
}

/* The same calls with values-only ARGS events (version 6): 2 records of
 * values at the entry, 1 at the exit, coded in the third form against the
 * last ones of the same function and direction (the slot named by the
 * event after them); they decode back byte for byte, in fewer bytes than
 * the header form's. */
static void test_values_only_args_coded(void **state)
{
	(void)state;
	size_t n = 0;
	uint32_t t = 5000;
	for (uint32_t i = 0; i < 1000; i++) {
		t += 40;
		g_ev[n++] = rec(t, SF_ARGS_VALUES | 2, SF_EV_ARGS);
		uint64_t v = i;
		memcpy(&g_ev[n++], &v, 8);
		v = i + 1;
		memcpy(&g_ev[n++], &v, 8);
		g_ev[n++] = rec(t, 3, SF_EV_ENTRY);
		t += 30;
		g_ev[n++] = rec(t, SF_ARGS_VALUES | 1, SF_EV_ARGS);
		v = 2 * i + 1;
		memcpy(&g_ev[n++], &v, 8);
		g_ev[n++] = rec(t, 3, SF_EV_EXIT);
	}
	size_t len = round_trip(g_ev, n, 4096);
	printf("values only: %zu bytes for 1000 calls\n", len);
	if (len > 1000 * 15) /* the header form: 25.3 a call; the third form 19.0 */
		fail_msg("%zu bytes for 1000 calls", len);
}

/* A batch whose last event is an ARGS event with a coded payload: the
 * filler a claim cut by the end of the slot leaves there (zero records),
 * a header-form payload (the slow path's, whose function event went to
 * the next batch), a values-only one. Its payload records decode where
 * the bytes end; before, they were lost (SQLite --auto-args: 10,550
 * records "lost", one or more at the end of nearly every batch). */
static void test_args_payload_ends_batch(void **state)
{
	(void)state;
	struct sf_args_head in = {3, SF_ARGS_FIXED, 2, 12};
	uint64_t h, v = 0x10021001u | 5ull << 32;
	memcpy(&h, &in, 8);
	for (int form = 0; form < 3; form++) {
		size_t n = 0;
		g_ev[n++] = rec(1000, 3, SF_EV_ENTRY);
		if (form == 0) {
			g_ev[n++] = rec(1010, 2, SF_EV_ARGS);
			memset(&g_ev[n], 0, 16);
			n += 2;
		} else if (form == 1) {
			g_ev[n++] = rec(1010, 2, SF_EV_ARGS);
			memcpy(&g_ev[n++], &h, 8);
			memcpy(&g_ev[n++], &v, 8);
		} else {
			g_ev[n++] = rec(1010, SF_ARGS_VALUES | 1, SF_EV_ARGS);
			memcpy(&g_ev[n++], &v, 8);
		}
		round_trip(g_ev, n, 1000);
	}
}

/* The first form of coded ARGS payloads (op 7's word with bit 31, the
 * 8-slot history), as encoders wrote it before the second: 3 calls of
 * add as above, a = 7, 8, 9. Logs holding it still read. */
static void test_args_first_form_still_read(void **state)
{
	(void)state;
	static const uint8_t bytes[] = {
		0x78, 0xec, 0x01, 0x2d, 0x00, 0x00, 0x80, 0x86, 0x03, 0x00, 0x00, 0x00, 0x02, 0x02, 0x0c, 0x00,
		0x1f, 0x01, 0x10, 0x02, 0x10, 0x07, 0x7f, 0xe9, 0x09, 0x00, 0x00, 0x00, 0x00, 0x58, 0xea, 0x09,
		0x03, 0x7c, 0x07, 0x2d, 0x00, 0x00, 0x80, 0x80, 0x03, 0x00, 0x00, 0x00, 0x03, 0x01, 0x08, 0x00,
		0x12, 0x10, 0x0f, 0x10, 0x78, 0x0a, 0x2d, 0x00, 0x00, 0x80, 0x06, 0x10, 0x0f, 0x79, 0xfb, 0x09,
		0x00, 0x00, 0x00, 0x00, 0xea, 0xfb, 0x09, 0x7c, 0x07, 0x2d, 0x00, 0x00, 0x80, 0x00, 0x10, 0x1e,
		0x10, 0x78, 0x0a, 0x2d, 0x00, 0x00, 0x80, 0x06, 0x10, 0x01, 0x7b, 0x8c, 0x0a, 0x00, 0x00, 0x00,
		0x00, 0xec, 0x8c, 0x0a, 0x7c, 0x07, 0x2d, 0x00, 0x00, 0x80, 0x00, 0x10, 0x02, 0x10,
	};
	static const struct sf_event want[] = {
		{5040, 0x0000002d}, {3, 0x000c0202}, {268570625, 0x00000007}, {8, 0x00000000}, {5040, 0x00000031},
		{5070, 0x0000002d}, {3, 0x00080103}, {4096, 0x0000000f}, {5070, 0x00000032}, {5110, 0x0000002d},
		{3, 0x000c0202}, {268570625, 0x00000008}, {9, 0x00000000}, {5110, 0x00000031}, {5140, 0x0000002d},
		{3, 0x00080103}, {4096, 0x00000011}, {5140, 0x00000032}, {5180, 0x0000002d}, {3, 0x000c0202},
		{268570625, 0x00000009}, {10, 0x00000000}, {5180, 0x00000031}, {5210, 0x0000002d}, {3, 0x00080103},
		{4096, 0x00000013}, {5210, 0x00000032},
	};
	struct sf_unpack *u = malloc(sizeof(*u));
	assert_non_null(u);
	sf_unpack_init(u, 4096, bytes, bytes + sizeof(bytes));
	struct sf_event e;
	const uint8_t *at;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(sf_unpack_next(u, &e, &at), 1);
		if (e.time_lo != want[i].time_lo || e.word != want[i].word)
			fail_msg("record %zu: %u %08x, want %u %08x", i, e.time_lo, e.word, want[i].time_lo, want[i].word);
	}
	assert_int_equal(sf_unpack_next(u, &e, &at), 0);
	free(u);
}

/* Values-only ARGS events and their function events: add(3, 4) = 7 and
 * add(3, 5) = 8 (2 values at the entry, 1 at the exit, id 3), then two
 * entries of id 300 with 4 values each. */
static const struct sf_event values_want[] = {
	{1000, 0x0000042d}, {3, 0}, {4, 0}, {1000, 0x00000031}, {1003, 0x0000041d}, {7, 0}, {1003, 0x00000032},
	{1010, 0x0000042d}, {3, 0}, {5, 0}, {1010, 0x00000031}, {1013, 0x0000041d}, {8, 0}, {1013, 0x00000032},
	{1020, 0x0000044d}, {1, 0}, {0x1234, 0}, {0, 0}, {9, 0}, {1020, 0x000012c1},
	{1030, 0x0000044d}, {1, 0}, {0x1235, 0}, {0, 0}, {9, 9}, {1030, 0x000012c1},
};

static void decode_values(const uint8_t *bytes, size_t len)
{
	struct sf_unpack *u = malloc(sizeof(*u));
	assert_non_null(u);
	sf_unpack_init(u, 1000, bytes, bytes + len);
	struct sf_event e;
	const uint8_t *at;
	for (size_t i = 0; i < sizeof(values_want) / sizeof(values_want[0]); i++) {
		assert_int_equal(sf_unpack_next(u, &e, &at), 1);
		if (e.time_lo != values_want[i].time_lo || e.word != values_want[i].word)
			fail_msg("record %zu: %u %08x, want %u %08x", i, e.time_lo, e.word, values_want[i].time_lo,
				 values_want[i].word);
	}
	assert_int_equal(sf_unpack_next(u, &e, &at), 0);
	free(u);
}

/* Version 6's bytes for them (the third form: op 7, 0x4e | H, the slot,
 * the bitmap, the XORs; the function event after it in its own op), as
 * encoders wrote them before the fourth form: still read. */
static void test_values_third_form_still_read(void **state)
{
	(void)state;
	static const uint8_t v6[] = {
		0x70, 0x5e, 0x24, 0x02, 0x03, 0x01, 0x03, 0x01, 0x04, 0x50, 0x03, 0x76, 0x5e, 0x73, 0x01, 0x01,
		0x01, 0x07, 0x10, 0x7e, 0x01, 0x4e, 0x24, 0x02, 0x01, 0x01, 0xe0, 0x76, 0x4e, 0x73, 0x01, 0x01,
		0x0f, 0x10, 0x7e, 0x01, 0x5e, 0x17, 0x04, 0x0b, 0x01, 0x01, 0x03, 0x34, 0x12, 0x01, 0x09, 0x50,
		0xac, 0x02, 0x7c, 0x02, 0x4e, 0x17, 0x0a, 0x01, 0x01, 0x10, 0x09, 0xb0,
	};
	decode_values(v6, sizeof(v6));
}

/* Version 7's fourth form: op 7, 0x6e, then one byte with the function
 * event's op, the head flag and (up to 3 records) the bitmap; the id when
 * the op spells it, the count with the head flag, a bitmap byte past 3
 * records, the XORs. What the encoder writes for them, byte for byte (50
 * bytes against the third form's 60), decoded back; then malformed ones. */
static void test_values_fourth_form_bytes(void **state)
{
	(void)state;
	static const uint8_t v7[] = {
		0x70, 0x6e, 0x5b, 0x03, 0x02, 0x01, 0x03, 0x01, 0x04, 0x76, 0x6e, 0x19, 0x01, 0x01, 0x07, 0x7e,
		0x01, 0x6e, 0xe2, 0x01, 0x01, 0x76, 0x6e, 0x11, 0x01, 0x0f, 0x7e, 0x01, 0x6e, 0x58, 0xac, 0x02,
		0x04, 0x0b, 0x01, 0x01, 0x03, 0x34, 0x12, 0x01, 0x09, 0x7c, 0x02, 0x6e, 0xb0, 0x0a, 0x01, 0x01,
		0x10, 0x09,
	};
	decode_values(v7, sizeof(v7));
	sf_pack_reset(&g_st, 1000);
	size_t n = sizeof(values_want) / sizeof(values_want[0]);
	size_t len = sf_pack_batch(&g_st, values_want, n, g_out, sizeof(g_out));
	assert_int_equal(len, sizeof(v7));
	assert_memory_equal(g_out, v7, sizeof(v7));
	/* Malformed: a tail call's op; a bit past the one record; no count
	 * for an empty slot; an exit with nothing open; a bitmap in the op
	 * byte for 4 records. */
	const uint8_t bad1[] = {SF_PK_RAW << 4, 0x6e, SF_PK_TAIL_ID << 4 | 8, 3, 1, 0x01, 0x01},
		      bad2[] = {SF_PK_RAW << 4, 0x6e, SF_PK_ENTRY_ID << 4 | 8 | 2, 3, 1, 0x01, 0x01},
		      bad3[] = {SF_PK_RAW << 4, 0x6e, SF_PK_ENTRY_ID << 4 | 1, 3, 0x01, 0x01},
		      bad4[] = {SF_PK_RAW << 4, 0x6e, SF_PK_EXIT << 4 | 8, 1},
		      bad5[] = {SF_PK_RAW << 4, 0x6e, SF_PK_ENTRY_ID << 4 | 8 | 1, 3, 4, 0x01, 0x01, 0x01};
	const uint8_t *bad[] = {bad1, bad2, bad3, bad4, bad5};
	size_t blen[] = {sizeof(bad1), sizeof(bad2), sizeof(bad3), sizeof(bad4), sizeof(bad5)};
	for (size_t i = 0; i < 5; i++) {
		struct sf_unpack *u = malloc(sizeof(*u));
		assert_non_null(u);
		struct sf_event e;
		const uint8_t *at;
		sf_unpack_init(u, 0, bad[i], bad[i] + blen[i]);
		if (sf_unpack_next(u, &e, &at) != -1)
			fail_msg("malformed case %zu decoded", i);
		free(u);
	}
}

/* The second form: add(3, 4)'s entry payload is the byte 0x1e (with the
 * header), its slot, the count, the header, a bitmap, and each record
 * that changed as a mask and its bytes; again with the same header it is
 * 0x0e, the slot and the bitmap of what changed. */
static void test_args_second_form_bytes(void **state)
{
	(void)state;
	struct sf_args_head in = {3, SF_ARGS_FIXED, 2, 12};
	uint64_t h, v[2] = {0x10021001u | 3ull << 32, 4};
	memcpy(&h, &in, 8);
	struct sf_event ev[8];
	ev[0] = rec(1000, 2, SF_EV_ARGS);
	memcpy(&ev[1], &h, 8);
	memcpy(&ev[2], &v[0], 8);
	ev[3] = rec(1000, 3, SF_EV_ENTRY);
	ev[4] = rec(1003, 2, SF_EV_ARGS);
	memcpy(&ev[5], &h, 8);
	memcpy(&ev[6], &v[0], 8);
	v[1] = v[0] ^ 1ull << 32; /* a = 2 */
	memcpy(&ev[6], &v[1], 8);
	ev[7] = rec(1003, 3, SF_EV_EXIT);
	size_t len = round_trip(ev, 8, 1000);
	uint8_t s = (uint8_t)sf_pk_a2_slot(h);
	const uint8_t want[] = {SF_PK_RAW << 4, 0x1e, s, 2, 3, 0, 0, 0, 0x02, 0x02, 0x0c, 0x00, 0x01,
				0x1f, 0x01, 0x10, 0x02, 0x10, 0x03, /* the values record: 5 bytes not zero */
				SF_PK_ENTRY_ID << 4, 3, SF_PK_RAW << 4 | 6, 0x0e, s, 0x01, 0x10, 0x01, SF_PK_EXIT << 4};
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(g_out, want, sizeof(want));
	/* Malformed: no header yet in the slot; a count of 0; a bit past
	 * the last record; a zero mask; a kind-14 word copied without its
	 * escape byte and an escaped word of another kind. */
	const uint8_t bad1[] = {SF_PK_RAW << 4, 0x0e, 5, 0x00}, bad2[] = {SF_PK_RAW << 4, 0x1e, 5, 0, 1, 2, 3, 4, 5, 6, 7, 8},
		      bad3[] = {SF_PK_RAW << 4, 0x1e, 5, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0x02},
		      bad4[] = {SF_PK_RAW << 4, 0x1e, 5, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0x01, 0x00},
		      bad5[] = {SF_PK_RAW << 4, 0x2e, 0x0d, 0, 0, 0};
	const uint8_t *bad[] = {bad1, bad2, bad3, bad4, bad5};
	size_t blen[] = {sizeof(bad1), sizeof(bad2), sizeof(bad3), sizeof(bad4), sizeof(bad5)};
	for (size_t i = 0; i < 5; i++) {
		struct sf_unpack *u = malloc(sizeof(*u));
		assert_non_null(u);
		struct sf_event e;
		const uint8_t *at;
		sf_unpack_init(u, 0, bad[i], bad[i] + blen[i]);
		if (sf_unpack_next(u, &e, &at) != -1)
			fail_msg("malformed case %zu decoded", i);
		free(u);
	}
}

static void test_malformed_streams(void **state)
{
	struct sf_unpack u;
	struct sf_event e;
	const uint8_t *at;
	/* a zero tag (bytes never written) */
	static const uint8_t zero[] = {0, 0};
	sf_unpack_init(&u, 0, zero, zero + 2);
	assert_int_equal(sf_unpack_next(&u, &e, &at), -1);
	/* a predicted exit with nothing open */
	static const uint8_t exit0[] = {SF_PK_EXIT << 4};
	sf_unpack_init(&u, 0, exit0, exit0 + 1);
	assert_int_equal(sf_unpack_next(&u, &e, &at), -1);
	/* a time varint cut short, and one longer than 32 bits */
	static const uint8_t cut[] = {SF_PK_ENTRY_MRU << 4 | 8, 0x80};
	sf_unpack_init(&u, 0, cut, cut + 2);
	assert_int_equal(sf_unpack_next(&u, &e, &at), -1);
	static const uint8_t longv[] = {SF_PK_ENTRY_ID << 4, 0xff, 0xff, 0xff, 0xff, 0x7f};
	sf_unpack_init(&u, 0, longv, longv + sizeof(longv));
	assert_int_equal(sf_unpack_next(&u, &e, &at), -1);
	/* an id of 2^28 */
	static const uint8_t big[] = {SF_PK_ENTRY_ID << 4, 0x80, 0x80, 0x80, 0x80, 0x01};
	sf_unpack_init(&u, 0, big, big + sizeof(big));
	assert_int_equal(sf_unpack_next(&u, &e, &at), -1);
	/* a raw word cut short, and a payload record cut short */
	static const uint8_t raw[] = {SF_PK_RAW << 4, 4, 0, 0, 0, 1, 2, 3};
	sf_unpack_init(&u, 0, raw, raw + 3);
	assert_int_equal(sf_unpack_next(&u, &e, &at), -1);
	sf_unpack_init(&u, 0, raw, raw + sizeof(raw));
	assert_int_equal(sf_unpack_next(&u, &e, &at), 1);
	assert_int_equal(e.word, SF_EV_ALLOC);
	assert_int_equal(sf_unpack_next(&u, &e, &at), -1);
}

/* A batch that does not shrink is refused (the runtime then writes it raw). */
static void test_refuses_growth(void **state)
{
	for (size_t i = 0; i < 100; i++)
		g_ev[i] = (struct sf_event){(uint32_t)(i * 0x9e3779b9u), sf_event_word((uint32_t)(i * 2654435761u) % SF_FUNC_ID_LIMIT, SF_EV_ENTRY)};
	sf_pack_reset(&g_st, 0);
	assert_int_equal(sf_pack_batch(&g_st, g_ev, 100, g_out, 100 * 8), 0);
}

/* The coder skips its per-event room check while the rest of the batch
 * fits at SF_PK_MAX_RECORD bytes a record: whatever the room (all of it,
 * just enough, or so little that it checks every event), the bytes are the
 * same, and too little room is refused rather than overrun. */
static void test_same_bytes_whatever_the_room(void **state)
{
	srand(5);
	for (int round = 0; round < 40; round++) {
		size_t n = 1 + (size_t)(rand() % 3000);
		random_records(n);
		uint64_t base = (uint64_t)rand() << 12;
		sf_pack_reset(&g_st, base);
		size_t len = sf_pack_batch(&g_st, g_ev, n, g_out, sizeof(g_out));
		assert_true(len > 0);
		const size_t rooms[] = {len + SF_PK_MAX_GROUP, len + SF_PK_MAX_GROUP + 7, len + n * 5,
					n * SF_PK_MAX_RECORD + SF_PK_MAX_GROUP - 1, n * SF_PK_MAX_RECORD + SF_PK_MAX_GROUP};
		for (size_t k = 0; k < sizeof(rooms) / sizeof(rooms[0]); k++) {
			size_t room = rooms[k] < sizeof(g_out2) ? rooms[k] : sizeof(g_out2);
			memset(g_out2, 0xa5, sizeof(g_out2));
			sf_pack_reset(&g_st, base);
			size_t len2 = sf_pack_batch(&g_st, g_ev, n, g_out2, room);
			if (len2 != len || memcmp(g_out, g_out2, len))
				fail_msg("round %d, %zu records, room %zu: %zu bytes, %zu with all the room", round, n, room,
					 len2, len);
			if (room < sizeof(g_out2)) /* nothing written past the room */
				assert_int_equal(g_out2[room], 0xa5);
		}
		/* room for the output but not for SF_PK_MAX_GROUP more after
		 * its last event starts: refused */
		sf_pack_reset(&g_st, base);
		assert_int_equal(sf_pack_batch(&g_st, g_ev, n, g_out2, len), 0);
	}
}

/* Values-only ARGS events of 1 to 31 records, most with their entry or
 * exit at their time right after them (the fourth form, which the
 * packing loop codes first), others not (another time, a tail call, an
 * unwind, the batch's end): they round trip, and the bytes are the same
 * whatever the room, so the loop's way and the checked way (the one taken
 * near the end of the room) agree. */
static void test_values_fused_random(void **state)
{
	(void)state;
	srand(29);
	for (int round = 0; round < 60; round++) {
		size_t n = 0, want = 200 + (size_t)(rand() % 4000);
		uint32_t t = (uint32_t)rand();
		uint64_t last[4] = {0, 0, 0, 0};
		while (n < want && n + 40 < MAXREC) {
			int r = rand() % 100;
			t += r < 70 ? (uint32_t)(rand() % 200) : r < 95 ? (uint32_t)(rand() % 5000) : (uint32_t)rand();
			uint32_t id = 1 + (uint32_t)(rand() % (r % 4 ? 6 : 3000));
			if (r < 60) {
				uint32_t nv = 1 + (r < 45 ? (uint32_t)rand() % 2 : (uint32_t)rand() % SF_ARGS_VALUES_MAX);
				g_ev[n++] = rec(t, SF_ARGS_VALUES | nv, SF_EV_ARGS);
				for (uint32_t k = 0; k < nv; k++) {
					int q = rand() % 4;
					uint64_t v = q == 0 ? 0 : q == 1 ? last[k % 4] + 1 : q == 2 ? (uint64_t)rand() << 32 | (uint32_t)rand() : last[k % 4];
					last[k % 4] = v;
					memcpy(&g_ev[n++], &v, 8);
				}
				int f = rand() % 10;
				uint32_t kind = f < 5 ? SF_EV_ENTRY : f < 8 ? SF_EV_EXIT : f == 8 ? SF_EV_TAIL : SF_EV_UNWIND;
				g_ev[n++] = rec(rand() % 8 ? t : t + 1, kind == SF_EV_UNWIND ? 1 : id, kind);
			} else {
				g_ev[n++] = rec(t, id, r < 80 ? SF_EV_ENTRY : SF_EV_EXIT);
			}
		}
		if (round % 3 == 0 && n > 3)
			n -= 1 + (size_t)(rand() % 3); /* cut inside a group */
		uint64_t base = (uint64_t)(g_ev[0].time_lo - 7);
		size_t len = round_trip(g_ev, n, base);
		/* the checked way refuses a values group without room for its
		 * largest size (10 + 9 bytes a record) after SF_PK_MAX_GROUP */
		size_t slack = SF_PK_MAX_GROUP + 10 + 9 * SF_ARGS_VALUES_MAX;
		const size_t rooms[] = {len + slack, len + slack + 13, len + slack + n * 4,
					n * SF_PK_MAX_RECORD + SF_PK_MAX_GROUP - 1};
		for (size_t k = 0; k < sizeof(rooms) / sizeof(rooms[0]); k++) {
			size_t room = rooms[k] < sizeof(g_out2) ? rooms[k] : sizeof(g_out2);
			sf_pack_reset(&g_st, base);
			size_t len2 = sf_pack_batch(&g_st, g_ev, n, g_out2, room);
			if (len2 != len || memcmp(g_out, g_out2, len))
				fail_msg("round %d, %zu records, room %zu: %zu bytes, %zu with all the room", round, n, room,
					 len2, len);
		}
	}
}

/* The worst records for size (every id spelt out near the id limit, every
 * time step a full 32 bits) stay within SF_PK_MAX_RECORD bytes each. */
static void test_worst_case_size(void **state)
{
	size_t n = 0;
	for (uint32_t i = 0; i < 4000; i++) {
		uint32_t kind = i % 4 == 0 ? SF_EV_ENTRY : i % 4 == 1 ? SF_EV_TAIL : i % 4 == 2 ? SF_EV_EXIT : SF_EV_UNWIND;
		uint32_t t = i & 1 ? 0x80000000u + i : i * 3;
		g_ev[n++] = rec(t, SF_FUNC_ID_LIMIT - 1 - (i * 7919u) % 1000, kind);
	}
	size_t len = round_trip(g_ev, n, 0);
	assert_true(len <= n * SF_PK_MAX_RECORD);
	assert_true(len > n * 8); /* it is a worst case: larger than raw */
}

/* ---- counting without decoding (sf_unpack_count) ---- */

static uint32_t g_words[MAXREC + 8], g_words2[MAXREC + 8];
static uint8_t g_from_next[MAXREC + 8];

/* sf_unpack_next over up to max records: how many it returns before the
 * bytes end or turn malformed (*stop 0 or -1) or max is reached (1), and
 * their words. */
static uint32_t next_walk(const uint8_t *p, size_t len, uint32_t max, int *stop)
{
	struct sf_unpack u;
	struct sf_event e;
	const uint8_t *at;
	uint32_t k = 0;
	sf_unpack_init(&u, 0, p, p + len);
	*stop = 1;
	while (k < max) {
		int r = sf_unpack_next(&u, &e, &at);
		if (r <= 0) {
			*stop = r;
			break;
		}
		g_words[k++] = e.word;
	}
	return k;
}

/* The reader's walk: function ops counted, RAW records (and their payload)
 * read with sf_unpack_next. */
static uint32_t count_walk(const uint8_t *p, size_t len, uint32_t max, int *stop)
{
	struct sf_unpack u;
	struct sf_event e;
	const uint8_t *at;
	uint32_t k = 0, c;
	sf_unpack_init(&u, 0, p, p + len);
	*stop = 1;
	while (k < max) {
		int r = sf_unpack_count(&u, max - k, &c);
		assert_true(c <= max - k);
		memset(g_from_next + k, 0, c);
		k += c;
		if (r == SF_COUNT_MAX) {
			assert_int_equal(k, max);
			break;
		}
		if (r != SF_COUNT_RAW) {
			*stop = r;
			break;
		}
		r = sf_unpack_next(&u, &e, &at);
		if (r <= 0) {
			*stop = r;
			break;
		}
		g_from_next[k] = 1;
		g_words2[k++] = e.word;
	}
	return k;
}

/* Both walks stop at the same record for the same reason; what was counted
 * is function events, what was read is the same records. */
static void check_count(const uint8_t *p, size_t len, uint32_t max)
{
	int stop_next, stop_count;
	uint32_t k = next_walk(p, len, max, &stop_next);
	uint32_t c = count_walk(p, len, max, &stop_count);
	if (k != c || stop_next != stop_count)
		fail_msg("%zu bytes, max %u: sf_unpack_next gives %u records (stop %d), counting %u (stop %d)", len, max,
			 k, stop_next, c, stop_count);
	for (uint32_t i = 0; i < k; i++) {
		uint32_t kind = g_words[i] & SF_KIND_MASK;
		if (g_from_next[i])
			assert_int_equal(g_words2[i], g_words[i]);
		else if (!g_words[i] || !sf_event_kind_valid(kind) || sf_event_payload_records(kind))
			fail_msg("record %u (word %08x) counted as a function event", i, g_words[i]);
	}
}

/* Every stream of one or two bytes, and three-byte ones after an entry
 * (so that exits are valid): every tag with operand bytes at the varint
 * edges. */
static void test_count_short_streams(void **state)
{
	static const uint8_t edge[] = {0x00, 0x01, 0x0f, 0x10, 0x7f, 0x80, 0x81, 0xff};
	uint8_t b[8];
	for (unsigned x = 0; x < 0x10000; x++) {
		b[0] = (uint8_t)x;
		b[1] = (uint8_t)(x >> 8);
		check_count(b, 1, 4);
		check_count(b, 2, 4);
		check_count(b, 2, 1);
	}
	b[0] = SF_PK_ENTRY_MRU << 4;
	for (unsigned tag = 0; tag < 256; tag++)
		for (unsigned i = 0; i < sizeof(edge); i++)
			for (unsigned j = 0; j < sizeof(edge); j++) {
				b[1] = (uint8_t)tag;
				b[2] = edge[i];
				b[3] = edge[j];
				check_count(b, 4, 4);
				check_count(b, 3, 4);
			}
}

/* Each malformation sf_unpack_next refuses, after a good prefix. */
static void test_count_malformed(void **state)
{
	static const uint8_t cases[][10] = {
		{SF_PK_ENTRY_MRU << 4, 0},                                    /* zero tag */
		{SF_PK_ENTRY_MRU << 4, SF_PK_EXIT << 4, SF_PK_TAIL << 4},    /* exit with nothing open */
		{SF_PK_ENTRY_MRU << 4, SF_PK_EXIT << 4, SF_PK_EXIT << 4},
		{SF_PK_ENTRY_MRU << 4, SF_PK_UNWIND << 4, 5, SF_PK_EXIT << 4}, /* unwound past the bottom */
		{SF_PK_ENTRY_MRU << 4, SF_PK_EXIT_ID << 4, 3, SF_PK_EXIT << 4},
		{SF_PK_ENTRY_MRU << 4, SF_PK_ENTRY_ID << 4 | 8, 0x80, 0x80, 0x80, 0x80, 0x10}, /* time > 32 bits */
		{SF_PK_ENTRY_MRU << 4, SF_PK_ENTRY_ID << 4 | 8, 0x80, 0x80, 0x80, 0x80, 0x02, 1}, /* time high > 0x1fffffff */
		{SF_PK_ENTRY_MRU << 4, SF_PK_ENTRY_ID << 4 | 8, 0xff, 0xff, 0xff, 0xff, 0x01, 1}, /* 0x1fffffff: good */
		{SF_PK_ENTRY_MRU << 4, SF_PK_ENTRY_ID << 4, 0x80, 0x80, 0x80, 0x80, 0x01},  /* id 2^28 */
		{SF_PK_ENTRY_MRU << 4, SF_PK_TAIL_ID << 4, 0xff, 0xff, 0xff, 0x7f, SF_PK_EXIT << 4}, /* id 2^28 - 1 */
		{SF_PK_ENTRY_MRU << 4, SF_PK_RAW << 4, 1, 0, 0},             /* raw word cut */
		{SF_PK_ENTRY_MRU << 4, SF_PK_RAW << 4, 4, 0, 0, 0, 1, 2, 3},  /* payload cut */
		{SF_PK_ENTRY_MRU << 4, SF_PK_RAW << 4 | 8, 0x80},            /* raw's time cut */
		{SF_PK_RAW << 4, 0x21, 0, 0, 0, SF_PK_EXIT << 4},            /* raw entry: nothing pushed */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (size_t len = 1; len <= sizeof(cases[i]); len++)
			for (uint32_t max = 0; max <= 12; max += 3)
				check_count(cases[i], len, max);
}

/* Encoded random batches (payload kinds, holes and garbage included), whole,
 * cut anywhere, and with bytes overwritten. */
static void test_count_random_streams(void **state)
{
	srand(29);
	for (int round = 0; round < 300; round++) {
		size_t n = (size_t)(rand() % (round < 250 ? 60 : 3000));
		random_records(n);
		sf_pack_reset(&g_st, 0);
		size_t len = sf_pack_batch(&g_st, g_ev, n, g_out, sizeof(g_out));
		check_count(g_out, len, (uint32_t)n);
		check_count(g_out, len, (uint32_t)n + 5);
		check_count(g_out, len, (uint32_t)n / 2);
		for (int cut = 0; cut < 10 && len; cut++)
			check_count(g_out, (size_t)rand() % len, (uint32_t)n);
		for (int hit = 0; hit < 10 && len; hit++) {
			g_out[(size_t)rand() % len] = (uint8_t)rand();
			check_count(g_out, len, (uint32_t)n);
		}
	}
}

/* ---- the reader ---- */

static char g_dir[64], g_path[128];

static const uint64_t g_funcs[3] = {0x1100, 0x1200, 0x1300};

static void events_of(struct lb *b, char *out, size_t len, uint64_t *lost)
{
	assert_int_equal(lb_write(b, g_path), 0);
	char err[256] = "";
	struct lr_log *log = lr_open(g_path, err, sizeof(err));
	assert_string_equal(err, "");
	assert_non_null(log);
	struct lr_iter it;
	struct lr_event ev;
	size_t pos = 0;
	for (lr_iter_init(&it, log), out[0] = 0; lr_next(&it, &ev);)
		pos += (size_t)snprintf(out + pos, len - pos, "%s%s:%u@%llu/%llu", pos ? " " : "", lr_kind_name(ev.kind),
					ev.func_id, (unsigned long long)ev.raw_time, (unsigned long long)ev.size);
	struct lr_summary s;
	lr_summary(log, &s);
	*lost = s.lost;
	lr_close(log);
}

static void test_reader_same_as_raw(void **state)
{
	struct lb_rec recs[] = {
		LB_EV(1000, 10, SF_EV_ENTRY), LB_EV(1010, 11, SF_EV_ENTRY),
		LB_EV(1020, 0, SF_EV_HEAP_ALLOC),
		{.type = LB_REC_RAW, .time_lo = 64, .word = 0},
		{.type = LB_REC_RAW, .time_lo = 0x1000, .word = 0},
		{.type = LB_REC_RAW, .time_lo = 0x401000, .word = 0},
		LB_HOLE, LB_EV(1030, 11, SF_EV_EXIT), LB_EV(1040, 12, 13),
		LB_EV(1050, 12, SF_EV_ENTRY), LB_EV(1060, 1, SF_EV_UNWIND), LB_EV(1070, 10, SF_EV_EXIT),
		LB_EV(1080, 0, SF_EV_HEAP_FREE), /* its payload cut by the end of the batch */
	};
	uint32_t n = sizeof(recs) / sizeof(recs[0]);
	char raw[2048], packed[2048];
	uint64_t lost_raw, lost_packed;
	struct lb b;
	lb_init(&b, SF_CLOCK_MONOTONIC);
	lb_object(&b, 0, 10, "/usr/bin/prog", g_funcs, 3, NULL, 0);
	lb_data(&b, 1, 100, 0, "main", recs, n);
	events_of(&b, raw, sizeof(raw), &lost_raw);
	lb_free(&b);
	lb_init(&b, SF_CLOCK_MONOTONIC);
	lb_object(&b, 0, 10, "/usr/bin/prog", g_funcs, 3, NULL, 0);
	size_t off = lb_packed(&b, 1, 100, 0, "main", recs, n);
	assert_int_equal(lb_chunk(&b, off)->type, SF_CHUNK_PACKED);
	events_of(&b, packed, sizeof(packed), &lost_packed);
	assert_string_equal(packed, raw);
	assert_string_equal(raw, "ENTRY:10@1000/0 ENTRY:11@1010/0 MALLOC:0@1020/64 EXIT:11@1030/0 "
				 "ENTRY:12@1050/0 UNWIND:1@1060/0 EXIT:10@1070/0");
	assert_int_equal(lost_packed, lost_raw);
	assert_int_equal(lost_raw, 3); /* the hole, kind 13, the cut payload */

	/* Cut by the end of the file 6 bytes into the payload: the two entries
	 * coded in its first 5 bytes stay, and nothing counts as lost. */
	assert_int_equal(lb_write_len(&b, g_path, off + sizeof(struct sf_chunk) + 6), 0);
	char err[256] = "";
	struct lr_log *log = lr_open(g_path, err, sizeof(err));
	assert_non_null(log);
	struct lr_summary s;
	lr_summary(log, &s);
	assert_int_equal(s.events, 2);
	assert_int_equal(s.lost, 0);
	lr_close(log);

	/* Whole in the file but malformed (its bytes end inside the second
	 * entry): the first entry is kept, the rest of the records are lost. */
	lb_chunk(&b, off)->reserved = 4;
	events_of(&b, packed, sizeof(packed), &lost_packed);
	assert_string_equal(packed, "ENTRY:10@1000/0");
	/* count (13) stands: 4 bytes may hold up to SF_PK_MAX_PER_BYTE
	 * records each (a coded ARGS event's); one decoded, 12 lost. Before
	 * h46args count was cut to the bytes (4, 3 lost), which dropped the
	 * tail of whole chunks of long string arguments. */
	assert_int_equal(lost_packed, 12);
	lb_free(&b);
}

static int setup(void **state)
{
	return lb_tmpdir(g_dir, g_path, "/tmp/sftrace-pk-XXXXXX");
}

static int teardown(void **state)
{
	lb_tmpdir_remove(g_dir, g_path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_calls_one_byte),
		cmocka_unit_test(test_format_doc_example),
		cmocka_unit_test(test_time_wrap_and_gaps),
		cmocka_unit_test(test_largest_ids),
		cmocka_unit_test(test_payload_kinds),
		cmocka_unit_test(test_odd_records),
		cmocka_unit_test(test_unwind_and_deep_stacks),
		cmocka_unit_test(test_tail_to_entry_pops),
		cmocka_unit_test(test_random_batches),
		cmocka_unit_test(test_args_payloads_coded),
		cmocka_unit_test(test_values_only_args_coded),
		cmocka_unit_test(test_values_third_form_still_read),
		cmocka_unit_test(test_values_fourth_form_bytes),
		cmocka_unit_test(test_args_payload_ends_batch),
		cmocka_unit_test(test_args_first_form_still_read),
		cmocka_unit_test(test_args_second_form_bytes),
		cmocka_unit_test(test_malformed_streams),
		cmocka_unit_test(test_refuses_growth),
		cmocka_unit_test(test_same_bytes_whatever_the_room),
		cmocka_unit_test(test_values_fused_random),
		cmocka_unit_test(test_worst_case_size),
		cmocka_unit_test(test_leaf_pairs_and_wrapped_stack),
		cmocka_unit_test(test_count_short_streams),
		cmocka_unit_test(test_count_malformed),
		cmocka_unit_test(test_count_random_streams),
		cmocka_unit_test(test_reader_same_as_raw),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
