/* Log reader tests on synthetic logs (tests/unit/logbuild.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/sf_args.h"
#include "format/sflog.h"
#include "lib/elf_buildid.h"
#include "lib/log_reader.h"
#include "lib/log_symbols.h"
#include "logbuild.h"

#include <link.h>

static char g_dir[64];
static char g_path[128];

static int setup(void **state)
{
	return lb_tmpdir(g_dir, g_path, "/tmp/sftrace-lr-XXXXXX");
}

static int teardown(void **state)
{
	lb_tmpdir_remove(g_dir, g_path);
	return 0;
}

static const uint64_t g_funcs[3] = {0x1100, 0x1200, 0x1300};

/* A log with one object owning ids 10..12. */
static void base_log(struct lb *b, uint32_t clock)
{
	lb_init(b, clock);
	lb_object(b, 0, 10, "/usr/bin/prog", g_funcs, 3, (const uint8_t *)"\x01\x02\xab", 3);
}

static struct lr_log *open_ok(const struct lb *b)
{
	char err[256] = "";
	assert_int_equal(lb_write(b, g_path), 0);
	struct lr_log *log = lr_open(g_path, err, sizeof(err));
	if (!log)
		fail_msg("lr_open: %s", err);
	return log;
}

/* The events as "tid:KIND:func@ns" joined by spaces. */
static void event_string(const struct lr_log *log, char *out, size_t len)
{
	struct lr_iter it;
	struct lr_event ev;
	size_t pos = 0;
	out[0] = 0;
	lr_iter_init(&it, log);
	while (lr_next(&it, &ev))
		pos += (size_t)snprintf(out + pos, len - pos, "%s%u:%s:%u@%llu", pos ? " " : "", ev.thread->tid,
					lr_kind_name(ev.kind), ev.func_id, (unsigned long long)ev.time_ns);
}

static void open_fails(const char *path, const char *want)
{
	char err[256] = "";
	struct lr_log *log = lr_open(path, err, sizeof(err));
	assert_null(log);
	char full[512];
	snprintf(full, sizeof(full), "%s: %s", path, want);
	assert_string_equal(err, full);
}

#define M(ns) (LB_START_MONO + (ns))

static void test_data_then_slot(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec d0[] = {LB_EV(M(10), 10, SF_EV_ENTRY), LB_EV(M(20), 11, SF_EV_ENTRY),
			      LB_EV(M(30), 11, SF_EV_EXIT)};
	struct lb_rec d1[] = {LB_EV(M(40), 11, SF_EV_TAIL)};
	struct lb_rec s2[] = {LB_EV(M(50), 12, SF_EV_ENTRY), LB_EV(M(60), 12, SF_EV_EXIT),
			      LB_EV(M(70), 10, SF_EV_EXIT)};
	lb_data(&b, 1, 100, 0, "main", d0, 3);
	lb_data(&b, 1, 100, 1, "main", d1, 1);
	lb_slot(&b, 1, 100, 2, "main-thread-1234", s2, 3); /* 16 bytes, no NUL */
	struct lr_log *log = open_ok(&b);
	char s[1024];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@10 100:ENTRY:11@20 100:EXIT:11@30 100:TAIL:11@40 "
			       "100:ENTRY:12@50 100:EXIT:12@60 100:EXIT:10@70");
	assert_int_equal(lr_nthreads(log), 1);
	const struct lr_thread *t = lr_thread_at(log, 0);
	assert_int_equal(t->events, 7);
	assert_int_equal(t->data_batches, 2);
	assert_int_equal(t->live_slots, 1);
	assert_int_equal(t->lost, 0);
	assert_string_equal(t->name, "main-thread-1234"); /* the newest batch's */
	assert_int_equal(lr_nwarnings(log), 0);
	lr_close(log);
	lb_free(&b);
}

static void test_slot_duplicate_of_data(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec d0[] = {LB_EV(M(10), 10, SF_EV_ENTRY), LB_EV(M(20), 10, SF_EV_EXIT)};
	/* The slot still holds batch 0, already flushed as DATA. */
	size_t slot = lb_slot(&b, 1, 100, 0, "w", d0, 2);
	lb_data(&b, 1, 100, 0, "w", d0, 2);
	(void)slot;
	struct lr_log *log = open_ok(&b);
	char s[512];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@10 100:EXIT:10@20");
	const struct lr_thread *t = lr_thread_at(log, 0);
	assert_int_equal(t->events, 2);
	assert_int_equal(t->slots, 1);
	assert_int_equal(t->live_slots, 0);
	assert_int_equal(lr_nwarnings(log), 0);
	lr_close(log);
	lb_free(&b);
}

static void test_slot_ends_at_zero_event(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec s0[] = {LB_EV(M(1), 10, SF_EV_ENTRY), LB_HOLE, LB_HOLE};
	lb_slot(&b, 7, 300, 0, NULL, s0, 3);
	lb_slot(&b, 0, 301, 4, NULL, s0, 0); /* a free slot: no thread */
	struct lr_log *log = open_ok(&b);
	assert_int_equal(lr_nthreads(log), 1);
	assert_int_equal(lr_nwarnings(log), 0);
	char s[512];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "300:ENTRY:10@1");
	assert_int_equal(lr_thread_at(log, 0)->lost, 0);
	lr_close(log);
	lb_free(&b);
}

static void test_tid_reuse(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec a[] = {LB_EV(M(1), 10, SF_EV_ENTRY), LB_EV(M(2), 10, SF_EV_EXIT)};
	struct lb_rec c[] = {LB_EV(M(5), 11, SF_EV_ENTRY)};
	/* Serial 3 written first: threads come out sorted by serial. */
	lb_data(&b, 3, 200, 0, "second", c, 1);
	lb_data(&b, 2, 200, 0, "first", a, 2);
	struct lr_log *log = open_ok(&b);
	assert_int_equal(lr_nthreads(log), 2);
	const struct lr_thread *t0 = lr_thread_at(log, 0), *t1 = lr_thread_at(log, 1);
	assert_int_equal(t0->serial, 2);
	assert_int_equal(t1->serial, 3);
	assert_int_equal(t0->tid, 200);
	assert_int_equal(t1->tid, 200);
	assert_string_equal(t0->name, "first");
	assert_string_equal(t1->name, "second");
	assert_int_equal(t0->events, 2);
	assert_int_equal(t1->events, 1);
	assert_int_equal(t0->index, 0);
	assert_int_equal(t1->index, 1);
	/* File order: serial 3's batch first. */
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init(&it, log);
	assert_true(lr_next(&it, &ev));
	assert_ptr_equal(ev.thread, t1);
	/* One thread only. */
	lr_iter_init_thread(&it, log, t0);
	int n = 0;
	while (lr_next(&it, &ev)) {
		assert_ptr_equal(ev.thread, t0);
		n++;
	}
	assert_int_equal(n, 2);
	struct lr_summary sum;
	lr_summary(log, &sum);
	assert_int_equal(sum.events, 3);
	assert_int_equal(sum.threads, 2);
	assert_int_equal(sum.objects, 1);
	assert_int_equal(sum.pid, LB_PID);
	lr_close(log);
	lb_free(&b);
}

static void test_zero_holes(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec d[] = {LB_EV(M(1), 10, SF_EV_ENTRY), LB_HOLE, LB_HOLE, LB_EV(M(4), 10, SF_EV_EXIT),
			     LB_EV(M(5), 10, 14) /* unknown kind */, LB_EV(M(6), 10, 0) /* kind 0, word not 0 */};
	lb_data(&b, 1, 100, 0, "t", d, 6);
	/* Zero padding between chunks is not a hole. */
	lb_zeros(&b, 256);
	lb_data(&b, 1, 100, 1, "t", d, 1);
	struct lr_log *log = open_ok(&b);
	char s[512];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@1 100:EXIT:10@4 100:ENTRY:10@1");
	struct lr_summary sum;
	lr_summary(log, &sum);
	assert_int_equal(sum.events, 3);
	assert_int_equal(sum.lost, 4);
	assert_int_equal(lr_nwarnings(log), 0);
	lr_close(log);
	lb_free(&b);
}

/* A u64 payload record of a heap event (version 3): one raw record. */
#define U64(v) LB_RAW((uint32_t)(v), (uint32_t)((uint64_t)(v) >> 32))

static void test_heap_payloads(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	lb_header(&b)->version = 2; /* version 2 logs still read: 3 only adds kinds */
	struct lb_rec d[] = {
		LB_EV(M(1), 0, SF_EV_HEAP_ALLOC),   U64(sf_size_align(100, 64)), U64(0x5000), U64(0x401234),
		LB_EV(M(2), 0, SF_EV_HEAP_REALLOC), U64(sf_size_align(200, 0)), U64(0x6000), U64(0x5000),
		U64(0x401300),
		LB_EV(M(3), 0, SF_EV_HEAP_FREE),    U64(0x6000), U64(0x401400),
		LB_EV(M(4), 10, SF_EV_ENTRY),
	};
	size_t off = lb_data(&b, 1, 100, 0, "t", d, sizeof(d) / sizeof(d[0]));
	assert_int_equal(lb_chunk(&b, off)->count, 4 + 3 + 4 + 2);
	struct lr_log *log = open_ok(&b);
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init(&it, log);
	assert_true(lr_next(&it, &ev));
	assert_int_equal(ev.kind, SF_EV_HEAP_ALLOC);
	assert_int_equal(ev.size, 100);
	assert_int_equal(ev.align, 64);
	assert_int_equal(ev.ptr, 0x5000);
	assert_int_equal(ev.site, 0x401234);
	assert_true(lr_next(&it, &ev));
	assert_int_equal(ev.kind, SF_EV_HEAP_REALLOC);
	assert_int_equal(ev.size, 200);
	assert_int_equal(ev.ptr, 0x6000);
	assert_int_equal(ev.old_ptr, 0x5000);
	assert_int_equal(ev.site, 0x401300);
	assert_true(lr_next(&it, &ev));
	assert_int_equal(ev.kind, SF_EV_HEAP_FREE);
	assert_int_equal(ev.ptr, 0x6000);
	assert_int_equal(ev.site, 0x401400);
	assert_true(lr_next(&it, &ev));
	assert_int_equal(ev.kind, SF_EV_ENTRY);
	assert_false(lr_next(&it, &ev));
	assert_int_equal(lr_thread_at(log, 0)->lost, 0);
	lr_close(log);
	lb_free(&b);
	(void)state;
}

static void test_alloc_payload(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec d[] = {LB_EV(M(1), 0, SF_EV_ALLOC), lb_ext(4096, 4, 0x7f0000001000ULL),
			     LB_EV(M(2), 0, SF_EV_DEALLOC), lb_ext(0, 0, 0), LB_EV(M(3), 10, SF_EV_ENTRY)};
	size_t off = lb_data(&b, 1, 100, 0, "t", d, 5);
	/* Each payload is two 8-byte records, and count says records. */
	assert_int_equal(lb_chunk(&b, off)->count, 7);
	struct lr_log *log = open_ok(&b);
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init(&it, log);
	assert_true(lr_next(&it, &ev));
	assert_int_equal(ev.kind, SF_EV_ALLOC);
	assert_true(ev.has_ext);
	assert_int_equal(ev.size, 4096);
	assert_int_equal(ev.align, 16);
	assert_int_equal(ev.ptr, 0x7f0000001000ULL);
	assert_int_equal(ev.offset, off + sizeof(struct sf_chunk));
	assert_true(lr_next(&it, &ev));
	assert_int_equal(ev.kind, SF_EV_DEALLOC);
	assert_int_equal(ev.size, 0);
	assert_int_equal(ev.align, 1);
	assert_int_equal(ev.offset, off + sizeof(struct sf_chunk) + 3 * sizeof(struct sf_event));
	assert_true(lr_next(&it, &ev));
	assert_int_equal(ev.kind, SF_EV_ENTRY);
	assert_false(ev.has_ext);
	assert_int_equal(ev.raw_time, M(3));
	assert_int_equal(ev.offset, off + sizeof(struct sf_chunk) + 6 * sizeof(struct sf_event));
	assert_false(lr_next(&it, &ev));
	assert_int_equal(lr_thread_at(log, 0)->events, 3);
	assert_int_equal(lr_thread_at(log, 0)->lost, 0);
	lr_close(log);
	lb_free(&b);
}

static void test_truncated_last_chunk(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec d[] = {LB_EV(M(1), 10, SF_EV_ENTRY), LB_EV(M(2), 11, SF_EV_ENTRY),
			     LB_EV(M(3), 11, SF_EV_EXIT), LB_EV(M(4), 10, SF_EV_EXIT)};
	lb_data(&b, 1, 100, 0, "t", d, 4);
	size_t off = lb_data(&b, 1, 100, 1, "t", d, 4);
	/* Cut in the middle of the third record of the second chunk. */
	assert_int_equal(lb_write_len(&b, g_path, off + sizeof(struct sf_chunk) + 2 * sizeof(struct sf_event) + 3), 0);
	char err[256];
	struct lr_log *log = lr_open(g_path, err, sizeof(err));
	assert_non_null(log);
	assert_int_equal(lr_thread_at(log, 0)->events, 6);
	assert_int_equal(lr_nwarnings(log), 1);
	char want[128];
	snprintf(want, sizeof(want), "truncated: log ends mid-chunk at offset %zu; 2 complete events kept", off);
	assert_string_equal(lr_warning(log, 0), want);
	lr_close(log);

	/* Cut inside the chunk header itself: in its v1 part, and in its base. */
	const size_t cuts[] = {32, offsetof(struct sf_chunk, base) + 4};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		assert_int_equal(lb_write_len(&b, g_path, off + cuts[i]), 0);
		log = lr_open(g_path, err, sizeof(err));
		assert_non_null(log);
		assert_int_equal(lr_thread_at(log, 0)->events, 4);
		snprintf(want, sizeof(want), "truncated: log ends mid-chunk at offset %zu; 0 complete events kept", off);
		assert_int_equal(lr_nwarnings(log), 1);
		assert_string_equal(lr_warning(log, 0), want);
		lr_close(log);
	}
	lb_free(&b);
}

/* The runtime stores time_lo, then the word: a process killed between the
 * two leaves a record with a time and a zero word, the last of its slot,
 * which ends the batch there. Records after it mean it was never completed
 * (a signal handler jumped out of the trampoline that claimed it): a hole,
 * as in a DATA chunk. */
static void test_half_written_event(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec r[] = {LB_EV(M(1), 10, SF_EV_ENTRY), LB_EV(M(2), 11, SF_EV_ENTRY),
			     LB_RAW((uint32_t)M(3), 0), LB_EV(M(4), 11, SF_EV_EXIT)};
	lb_data(&b, 1, 100, 0, "d", r, 4);
	lb_slot(&b, 2, 200, 0, "s", r, 4);
	lb_slot(&b, 3, 300, 0, "k", r, 3);
	struct lr_log *log = open_ok(&b);
	char s[512];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@1 100:ENTRY:11@2 100:EXIT:11@4 200:ENTRY:10@1 200:ENTRY:11@2 "
			       "200:EXIT:11@4 300:ENTRY:10@1 300:ENTRY:11@2");
	assert_int_equal(lr_thread_at(log, 0)->lost, 1);
	assert_int_equal(lr_thread_at(log, 1)->lost, 1);
	assert_int_equal(lr_thread_at(log, 2)->lost, 0);
	assert_int_equal(lr_nwarnings(log), 0);
	lr_close(log);
	lb_free(&b);
}

/* time_lo is the low half of the time; the base gives the rest. Events may
 * lie before the base (down to base - 2^31) as well as after it (up to
 * base + 2^31 - 1): the difference is signed. */
static void test_time_below_base(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	const uint64_t base = M(3000000000ULL);
	struct lb_rec r[] = {LB_EV(base - SF_TIME_SPAN, 10, SF_EV_ENTRY), LB_EV(base - 1, 11, SF_EV_ENTRY),
			     LB_EV(base, 11, SF_EV_EXIT), LB_EV(base + SF_TIME_SPAN - 1, 10, SF_EV_EXIT)};
	lb_data_base(&b, 1, 100, 0, "d", base, r, 4);
	lb_slot_base(&b, 2, 200, 0, "s", base, r, 2);
	struct lr_log *log = open_ok(&b);
	char s[512];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@852516352 100:ENTRY:11@2999999999 100:EXIT:11@3000000000 "
			       "100:EXIT:10@5147483647 200:ENTRY:10@852516352 200:ENTRY:11@2999999999");
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init(&it, log);
	assert_true(lr_next(&it, &ev));
	assert_int_equal(ev.raw_time, base - SF_TIME_SPAN);
	assert_int_equal(lr_nwarnings(log), 0);
	lr_close(log);
	lb_free(&b);
}

/* A batch whose times cross a multiple of 2^32: time_lo wraps (to 0, which
 * is a valid time_lo: only the word marks the end), the full times do not.
 * Upwards from a base below the boundary, and downwards from a base above. */
static void test_time_lo_wraps(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	const uint64_t w = 1ULL << 33; /* M(3589934592) */
	struct lb_rec up[] = {LB_EV(w - 100, 10, SF_EV_ENTRY), LB_EV(w - 1, 11, SF_EV_ENTRY),
			      LB_EV(w, 11, SF_EV_EXIT), LB_EV(w + 5, 10, SF_EV_EXIT)};
	struct lb_rec down[] = {LB_EV(w - 50, 12, SF_EV_ENTRY), LB_EV(w + 200, 12, SF_EV_EXIT)};
	size_t off = lb_data(&b, 1, 100, 0, "up", up, 4);
	size_t slot = lb_slot_base(&b, 2, 101, 0, "down", w + 100, down, 2);
	struct sf_event stored[2];
	memcpy(stored, b.buf + off + sizeof(struct sf_chunk), sizeof(stored));
	assert_int_equal(lb_chunk(&b, off)->base, w - 100);
	assert_int_equal(stored[1].time_lo, 0xffffffffu);
	memcpy(stored, b.buf + off + sizeof(struct sf_chunk) + 2 * sizeof(struct sf_event), sizeof(stored));
	assert_int_equal(stored[0].time_lo, 0);
	memcpy(stored, b.buf + slot + sizeof(struct sf_chunk), sizeof(stored));
	assert_int_equal(stored[0].time_lo, 0xffffffceu);
	struct lr_log *log = open_ok(&b);
	char s[512];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@3589934492 100:ENTRY:11@3589934591 100:EXIT:11@3589934592 "
			       "100:EXIT:10@3589934597 101:ENTRY:12@3589934542 101:EXIT:12@3589934792");
	assert_int_equal(lr_nwarnings(log), 0);
	lr_close(log);
	lb_free(&b);
}

/* A payload's records are not events: where an event has its word, the
 * payload has the high half of size_align or of ptr, zero for small values.
 * Neither ends a slot nor counts as a hole. */
static void test_alloc_payload_zero_high_words(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec r[] = {LB_EV(M(1), 0, SF_EV_ALLOC), lb_ext(4096, 0, 0x10000),
			     LB_EV(M(2), 0, SF_EV_DEALLOC), lb_ext(0, 0, 0), /* all 16 bytes zero */
			     LB_EV(M(3), 10, SF_EV_ENTRY)};
	lb_slot(&b, 1, 100, 0, "s", r, 5);
	lb_data(&b, 2, 200, 0, "d", r, 5);
	struct lr_log *log = open_ok(&b);
	char s[512];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "200:ALLOC:0@1 200:DEALLOC:0@2 200:ENTRY:10@3 "
			       "100:ALLOC:0@1 100:DEALLOC:0@2 100:ENTRY:10@3");
	for (size_t i = 0; i < 2; i++) {
		const struct lr_thread *t = lr_thread_at(log, i);
		assert_int_equal(t->events, 3);
		assert_int_equal(t->lost, 0);
	}
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init_thread(&it, log, lr_thread_at(log, 0));
	assert_true(lr_next(&it, &ev));
	assert_true(ev.in_slot);
	assert_int_equal(ev.size, 4096);
	assert_int_equal(ev.align, 1);
	assert_int_equal(ev.ptr, 0x10000);
	assert_int_equal(lr_nwarnings(log), 0);
	lr_close(log);
	lb_free(&b);
}

/* The file ends inside an allocation event's payload: that event is not
 * complete, so it is not delivered. Its one payload record in the file has a
 * zero word (small size, align 1) and is skipped as a hole. */
static void test_truncated_in_alloc_payload(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec r[] = {LB_EV(M(1), 10, SF_EV_ENTRY), LB_EV(M(2), 0, SF_EV_ALLOC), lb_ext(64, 0, 0x1000),
			     LB_EV(M(3), 10, SF_EV_EXIT)};
	size_t off = lb_data(&b, 1, 100, 0, "t", r, 4);
	assert_int_equal(lb_write_len(&b, g_path, off + sizeof(struct sf_chunk) + 3 * sizeof(struct sf_event) + 4),
			 0);
	char err[256];
	struct lr_log *log = lr_open(g_path, err, sizeof(err));
	assert_non_null(log);
	char s[256];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@1");
	assert_int_equal(lr_thread_at(log, 0)->events, 1);
	assert_int_equal(lr_thread_at(log, 0)->lost, 2);
	char want[128];
	snprintf(want, sizeof(want), "truncated: log ends mid-chunk at offset %zu; 1 complete events kept", off);
	assert_int_equal(lr_nwarnings(log), 1);
	assert_string_equal(lr_warning(log, 0), want);
	lr_close(log);
	lb_free(&b);
}

static void test_garbage_resync(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec d[] = {LB_EV(M(1), 10, SF_EV_ENTRY)};
	struct lb_rec e[] = {LB_EV(M(2), 10, SF_EV_EXIT)};
	lb_data(&b, 1, 100, 0, "t", d, 1);
	size_t g = b.len;
	unsigned char junk[100];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 37 + 11);
	lb_bytes(&b, junk, sizeof(junk));
	size_t next = lb_data(&b, 1, 100, 1, "t", e, 1);
	struct lr_log *log = open_ok(&b);
	char s[256];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@1 100:EXIT:10@2");
	assert_int_equal(lr_nwarnings(log), 1);
	char want[160];
	snprintf(want, sizeof(want), "garbage at offset %zu: %zu bytes skipped up to the chunk at offset %zu", g,
		 next - g, next);
	assert_string_equal(lr_warning(log, 0), want);
	lr_close(log);
	lb_free(&b);
}

static void test_batches_out_of_order(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec d0[] = {LB_EV(M(1), 10, SF_EV_ENTRY)};
	struct lb_rec d1[] = {LB_EV(M(2), 10, SF_EV_EXIT)};
	struct lb_rec o[] = {LB_EV(M(9), 11, SF_EV_ENTRY)};
	lb_data(&b, 1, 100, 1, "late", d1, 1);
	lb_data(&b, 2, 101, 0, "other", o, 1);
	lb_data(&b, 1, 100, 0, "early", d0, 1);
	lb_data(&b, 1, 100, 0, "early", d0, 1); /* duplicate batch */
	struct lr_log *log = open_ok(&b);
	char s[256];
	event_string(log, s, sizeof(s));
	/* Thread 1 keeps its positions (1st and 3rd) but in seq order. */
	assert_string_equal(s, "100:ENTRY:10@1 101:ENTRY:11@9 100:EXIT:10@2");
	assert_string_equal(lr_thread_at(log, 0)->name, "late");
	assert_int_equal(lr_nwarnings(log), 2);
	assert_non_null(strstr(lr_warning(log, 0), "duplicate data batch 0"));
	assert_string_equal(lr_warning(log, 1),
			    "batches are not in sequence order in the file; delivered in sequence order");
	lr_close(log);
	lb_free(&b);
}

static void test_objects_and_func_lookup(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	const uint64_t lib_funcs[2] = {0x9000, 0x9100};
	lb_object(&b, 1, 3, "/tmp/libplug.so", lib_funcs, 2, NULL, 0);
	lb_unload(&b, 1);
	const char *argv[] = {"prog", "--flag", "a b"};
	lb_cmdline(&b, argv, 3);
	struct lr_log *log = open_ok(&b);
	assert_int_equal(lr_nobjects(log), 2);
	const struct lr_object *o0 = lr_object_at(log, 0), *o1 = lr_object_at(log, 1);
	assert_string_equal(o0->path, "/usr/bin/prog");
	assert_int_equal(o0->build_id_len, 3);
	assert_memory_equal(o0->build_id, "\x01\x02\xab", 3);
	assert_int_equal(o0->load_bias, 0x555555554000ULL);
	assert_int_equal(o0->flags, SF_OBJ_MAIN);
	assert_false(o0->unloaded);
	assert_true(o1->unloaded);
	const struct lr_object *o;
	uint64_t v;
	assert_int_equal(lr_func(log, 11, &o, &v), 0);
	assert_ptr_equal(o, o0);
	assert_int_equal(v, 0x1200);
	assert_int_equal(lr_func(log, 4, &o, &v), 0);
	assert_ptr_equal(o, o1);
	assert_int_equal(v, 0x9100);
	assert_int_equal(lr_func(log, 5, &o, &v), -1);
	assert_int_equal(lr_func(log, 2, NULL, NULL), -1);
	assert_int_equal(lr_func(log, 13, NULL, NULL), -1);
	assert_int_equal(lr_func(log, 0xffffffffu, NULL, NULL), -1);
	const struct lr_info *in = lr_info(log);
	assert_int_equal(in->argc, 3);
	assert_string_equal(in->argv[0], "prog");
	assert_string_equal(in->argv[2], "a b");
	assert_null(in->argv[3]);
	assert_int_equal(in->pid, LB_PID);
	assert_int_equal(in->state, SF_STATE_EXITED);
	lr_close(log);
	lb_free(&b);
}

static void test_tsc_fit(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_TSC);
	/* 3 ticks per ns: start (1e6, 5e9), last (1e6 + 3e9, 5e9 + 1e9). */
	lb_header(&b)->last_tsc = LB_START_TSC + 3000000000ULL;
	lb_header(&b)->last_mono_ns = LB_START_MONO + 1000000000ULL;
	struct lb_rec d[] = {LB_EV(LB_START_TSC + 300, 10, SF_EV_ENTRY),
			     LB_EV(LB_START_TSC + 3000000, 10, SF_EV_EXIT),
			     LB_EV(LB_START_TSC - 5000, 10, SF_EV_ENTRY)};
	size_t off = lb_data(&b, 1, 100, 0, "t", d, 3);
	lb_chunk_pair(&b, off, LB_START_TSC + 1500000000ULL, LB_START_MONO + 500000000ULL);
	/* A pair from before the start is nonsense and must not bend the fit. */
	off = lb_data(&b, 1, 100, 1, "t", d, 0);
	lb_chunk_pair(&b, off, LB_START_TSC + 2000000000ULL, LB_START_MONO - 100);
	struct lr_log *log = open_ok(&b);
	char s[256];
	event_string(log, s, sizeof(s));
	assert_string_equal(s, "100:ENTRY:10@100 100:EXIT:10@1000000 100:ENTRY:10@0");
	assert_int_equal(lr_info(log)->calib_pairs, 3);
	assert_false(lr_info(log)->calib_degenerate);
	assert_int_equal(lr_time_ns(log, LB_START_TSC + 3000000000ULL), 1000000000ULL);
	assert_int_equal(lr_nwarnings(log), 0);
	lr_close(log);
	lb_free(&b);

	/* No later pair: 1 tick = 1 ns, with a warning. */
	base_log(&b, SF_CLOCK_TSC);
	lb_data(&b, 1, 100, 0, "t", d, 1);
	log = open_ok(&b);
	assert_true(lr_info(log)->calib_degenerate);
	assert_int_equal(lr_time_ns(log, LB_START_TSC + 300), 300);
	assert_int_equal(lr_nwarnings(log), 1);
	assert_non_null(strstr(lr_warning(log, 0), "calibration"));
	lr_close(log);
	lb_free(&b);
}

static void test_monotonic_never_negative(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lr_log *log = open_ok(&b);
	assert_int_equal(lr_time_ns(log, LB_START_MONO - 1), 0);
	assert_int_equal(lr_time_ns(log, 0), 0);
	assert_int_equal(lr_time_ns(log, LB_START_MONO + 77), 77);
	struct lr_summary sum;
	lr_summary(log, &sum);
	assert_int_equal(sum.events, 0);
	assert_int_equal(sum.threads, 0);
	lr_close(log);
	lb_free(&b);
}

static void test_bad_files(void **state)
{
	char err[256];
	/* Missing. */
	char missing[160];
	snprintf(missing, sizeof(missing), "%s/nope.log", g_dir);
	open_fails(missing, "cannot open: No such file or directory");
	/* Directory. */
	open_fails(g_dir, "is a directory");
	/* Empty. */
	FILE *f = fopen(g_path, "wb");
	fclose(f);
	open_fails(g_path, "empty file");
	/* Random bytes. */
	unsigned char rnd[5000];
	srand(7);
	for (size_t i = 0; i < sizeof(rnd); i++)
		rnd[i] = (unsigned char)rand();
	f = fopen(g_path, "wb");
	fwrite(rnd, 1, sizeof(rnd), f);
	fclose(f);
	open_fails(g_path, "not an sftrace log (bad magic)");
	/* Newer version. */
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	lb_header(&b)->version = SF_VERSION + 1;
	assert_int_equal(lb_write(&b, g_path), 0);
	open_fails(g_path, "log format version 8 is newer than this sftrace supports (7)");
	/* Header cut short. */
	lb_header(&b)->version = SF_VERSION;
	assert_int_equal(lb_write_len(&b, g_path, 100), 0);
	open_fails(g_path, "header truncated (100 of 4096 bytes)");
	lb_free(&b);
	(void)err;
}

/* Version 1 had 64-byte chunk headers and 16-byte events {u64 time, u32
 * func_id, u32 kind}: read as version 2 they would decode to nonsense, so
 * such a log is refused, with a message saying what to do. */
static void test_version1_refused(void **state)
{
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	lb_header(&b)->version = 1;
	lb_align(&b, 16);
	/* magic, type, size, count, serial (2 words), tid, seq; the rest zero */
	const uint32_t head[16] = {SF_CHUNK_MAGIC, SF_CHUNK_DATA, 64 + 2 * 16, 2, 1, 0, 100, 0};
	lb_bytes(&b, head, sizeof(head));
	const uint32_t events[8] = {(uint32_t)M(10), 0, 10, SF_EV_ENTRY, (uint32_t)M(20), 0, 10, SF_EV_EXIT};
	lb_bytes(&b, events, sizeof(events));
	assert_int_equal(lb_write(&b, g_path), 0);
	open_fails(g_path, "log format version 1 was written by an older sftrace; this one reads versions 2-7 "
			   "(record again)");
	lb_header(&b)->version = 0;
	assert_int_equal(lb_write(&b, g_path), 0);
	open_fails(g_path, "log format version 0 is not valid");
	lb_free(&b);
}

static void test_random_chunks_do_not_crash(void **state)
{
	/* A valid header followed by random data, some of it chunk magics. */
	struct lb b;
	base_log(&b, SF_CLOCK_TSC);
	srand(11);
	for (int i = 0; i < 20000; i++) {
		uint32_t r = (uint32_t)rand();
		if (i % 97 == 0)
			r = SF_CHUNK_MAGIC;
		lb_bytes(&b, &r, 4);
	}
	struct lr_log *log = open_ok(&b);
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init(&it, log);
	while (lr_next(&it, &ev))
		;
	assert_true(lr_nwarnings(log) > 0);
	lr_close(log);
	lb_free(&b);
}

/* ---- log_symbols, with this test binary as the recorded object ---- */

__attribute__((noinline)) int lr_test_marker_one(int x);
__attribute__((noinline)) int lr_test_marker_one(int x) { return x * 3 + 1; }
__attribute__((noinline)) int lr_test_marker_two(int x);
__attribute__((noinline)) int lr_test_marker_two(int x) { return lr_test_marker_one(x) ^ 5; }

static int first_bias(struct dl_phdr_info *info, size_t size, void *ctx)
{
	*(uint64_t *)ctx = info->dlpi_addr;
	return 1; /* the first object is the executable */
}

struct self {
	char exe[4096];
	uint64_t funcs[2];
	uint8_t id[64];
	int id_len;
};

static void self_object(struct self *me)
{
	ssize_t n = readlink("/proc/self/exe", me->exe, sizeof(me->exe) - 1);
	assert_true(n > 0);
	me->exe[n] = 0;
	uint64_t bias = 0;
	dl_iterate_phdr(first_bias, &bias);
	me->funcs[0] = (uint64_t)(uintptr_t)&lr_test_marker_one - bias;
	me->funcs[1] = (uint64_t)(uintptr_t)&lr_test_marker_two - bias;
	char err[256];
	me->id_len = sf_elf_build_id_path(me->exe, me->id, sizeof(me->id), err, sizeof(err));
	assert_true(me->id_len >= 0);
}

static struct lr_log *symbols_log(const char *path, const struct self *me, const uint8_t *id, int id_len)
{
	struct lb b;
	lb_init(&b, SF_CLOCK_MONOTONIC);
	lb_object(&b, 0, 20, path, me->funcs, 2, id, (uint8_t)id_len);
	struct lr_log *log = open_ok(&b);
	lb_free(&b);
	return log;
}

static void test_symbols_resolve(void **state)
{
	struct self me;
	self_object(&me);
	struct lr_log *log = symbols_log(me.exe, &me, me.id, me.id_len);
	char err[512] = "";
	struct log_symbols *ls = ls_open(log, NULL, err, sizeof(err));
	if (!ls)
		fail_msg("ls_open: %s", err);
	assert_string_equal(ls_lookup(ls, 20)->name, "lr_test_marker_one");
	assert_string_equal(ls_lookup(ls, 21)->name, "lr_test_marker_two");
	assert_ptr_equal(ls_lookup(ls, 21), ls_lookup(ls, 21)); /* cached */
	assert_string_equal(ls_lookup(ls, 99)->name, "func#99");
	assert_string_equal(ls_object_file(ls, 0), me.exe);
	assert_int_equal(ls_nwarnings(ls), 0);
	ls_close(ls);

	/* No ELF reading: placeholders from the log alone. */
	struct ls_options opt = {.no_symbols = 1};
	ls = ls_open(log, &opt, err, sizeof(err));
	assert_non_null(ls);
	char want[128];
	const char *base = strrchr(me.exe, '/') + 1;
	snprintf(want, sizeof(want), "%s+0x%" PRIx64, base, me.funcs[1]);
	assert_string_equal(ls_lookup(ls, 21)->name, want);
	assert_null(ls_object_file(ls, 0));
	ls_close(ls);
	lr_close(log);
}

static void test_symbols_mismatch_and_missing(void **state)
{
	struct self me;
	self_object(&me);
	if (me.id_len <= 0)
		skip();
	uint8_t other[20] = {0xde, 0xad};
	struct lr_log *log = symbols_log(me.exe, &me, other, 20);
	char err[512] = "";
	assert_null(ls_open(log, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "build-id mismatch"));
	assert_non_null(strstr(err, "dead000000"));
	struct ls_options force = {.force = 1};
	struct log_symbols *ls = ls_open(log, &force, err, sizeof(err));
	assert_non_null(ls);
	assert_string_equal(ls_lookup(ls, 20)->name, "lr_test_marker_one");
	assert_int_equal(ls_nwarnings(ls), 1);
	assert_non_null(strstr(ls_warning(ls, 0), "build-id mismatch (recorded dead"));
	ls_close(ls);
	lr_close(log);

	/* The recorded path is gone: error, placeholders under force, or an
	 * override found by build-id. */
	log = symbols_log("/nonexistent/dir/prog", &me, me.id, me.id_len);
	assert_null(ls_open(log, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/dir/prog"));
	ls = ls_open(log, &force, err, sizeof(err));
	assert_non_null(ls);
	char want[64];
	snprintf(want, sizeof(want), "prog+0x%" PRIx64, me.funcs[0]);
	assert_string_equal(ls_lookup(ls, 20)->name, want);
	assert_int_equal(ls_nwarnings(ls), 1);
	ls_close(ls);
	const char *paths[] = {"/nonexistent/other", me.exe};
	struct ls_options ov = {.symbol_paths = paths, .nsymbol_paths = 2};
	ls = ls_open(log, &ov, err, sizeof(err));
	if (!ls)
		fail_msg("ls_open with override: %s", err);
	assert_string_equal(ls_lookup(ls, 21)->name, "lr_test_marker_two");
	assert_false(ls_override_used(ls, 0));
	assert_true(ls_override_used(ls, 1));
	ls_close(ls);
	lr_close(log);
}


/* ---- values-only ARGS events (version 6) ---- */

#define U64_REC(v) LB_RAW((uint32_t)(v), (uint32_t)((uint64_t)(v) >> 32))

/* add(3, 4) = 7 under -A add@arg1,arg2 -R add@retval (8-byte auto
 * values), function 11, in the header form (FIXED payloads, the bytes
 * logs before version 6 hold) and in the values-only form with its
 * ARGSPEC chunk: both read as the same ARGS events, byte for byte. */
static const uint8_t g_spec_in[16] = {11, 0, 0, 0, SF_ARGS_FIXED, 2, 24, 0, 1, 0, 2, 0};
static const uint8_t g_spec_out[16] = {11, 0, 0, 0, SF_ARGS_FIXED | SF_ARGS_RET, 1, 16, 0, 0, 0};

static void put_argspec(struct lb *b)
{
	size_t off = lb_chunk_begin(b, SF_CHUNK_ARGSPEC, sizeof(struct sf_chunk) + 32, 2);
	lb_bytes(b, g_spec_in, 16);
	lb_bytes(b, g_spec_out, 16);
	assert_int_equal(b->len - off, sizeof(struct sf_chunk) + 32);
}

/* The header form's records of one call at t (ids 10 and 11). */
static uint32_t old_call(struct lb_rec *r, uint64_t t)
{
	uint64_t h_in, h_out, pairs_in, pairs_out;
	memcpy(&h_in, g_spec_in, 8);
	memcpy(&pairs_in, g_spec_in + 8, 8);
	memcpy(&h_out, g_spec_out, 8);
	memcpy(&pairs_out, g_spec_out + 8, 8);
	uint32_t n = 0;
	r[n++] = LB_EV(t, 4, SF_EV_ARGS);
	r[n++] = U64_REC(h_in);
	r[n++] = U64_REC(pairs_in);
	r[n++] = U64_REC(3);
	r[n++] = U64_REC(4);
	r[n++] = LB_EV(t, 11, SF_EV_ENTRY);
	r[n++] = LB_EV(t + 5, 3, SF_EV_ARGS);
	r[n++] = U64_REC(h_out);
	r[n++] = U64_REC(pairs_out);
	r[n++] = U64_REC(7);
	r[n++] = LB_EV(t + 5, 11, SF_EV_EXIT);
	return n;
}

static uint32_t values_call(struct lb_rec *r, uint64_t t)
{
	uint32_t n = 0;
	r[n++] = LB_EV(t, SF_ARGS_VALUES | 2, SF_EV_ARGS);
	r[n++] = U64_REC(3);
	r[n++] = U64_REC(4);
	r[n++] = LB_EV(t, 11, SF_EV_ENTRY);
	r[n++] = LB_EV(t + 5, SF_ARGS_VALUES | 1, SF_EV_ARGS);
	r[n++] = U64_REC(7);
	r[n++] = LB_EV(t + 5, 11, SF_EV_EXIT);
	return n;
}

/* Every event of the log as "KIND:func" and, for ARGS, its payload in hex. */
static void args_string(const struct lr_log *log, char *out, size_t len)
{
	struct lr_iter it;
	struct lr_event ev;
	size_t pos = 0;
	out[0] = 0;
	lr_iter_init(&it, log);
	while (lr_next(&it, &ev)) {
		pos += (size_t)snprintf(out + pos, len - pos, "%s%s:%u", pos ? " " : "", lr_kind_name(ev.kind), ev.func_id);
		for (uint32_t i = 0; ev.args && i < ev.args_len; i++)
			pos += (size_t)snprintf(out + pos, len - pos, "%s%02x", i ? "" : "=", ev.args[i]);
	}
	const struct lr_thread *t = lr_thread_at(log, 0);
	uint64_t events, lost;
	lr_count_decoded(log, t, &events, &lost);
	assert_int_equal(events, t->events);
	assert_int_equal(lost, t->lost);
}

static void test_values_only_args_read_as_header_form(void **state)
{
	(void)state;
	struct lb_rec r[16];
	char want[2048], got[2048];
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	lb_data(&b, 1, 100, 0, "main", r, old_call(r, M(10)));
	struct lr_log *log = open_ok(&b);
	args_string(log, want, sizeof(want));
	lr_close(log);
	lb_free(&b);
	assert_string_equal(want, "ARGS:11=0b00000002021800010002000000000003000000000000000400000000000000 ENTRY:11 "
				  "ARGS:11=0b0000000301100000000000000000000700000000000000 EXIT:11");
	for (int packed = 0; packed < 2; packed++) {
		base_log(&b, SF_CLOCK_MONOTONIC);
		put_argspec(&b);
		uint32_t n = values_call(r, M(10));
		if (packed)
			lb_packed(&b, 1, 100, 0, "main", r, n);
		else
			lb_data(&b, 1, 100, 0, "main", r, n);
		log = open_ok(&b);
		args_string(log, got, sizeof(got));
		assert_string_equal(got, want);
		lr_close(log);
		lb_free(&b);
	}
}

/* A values-only event without its spec, or not followed by a function
 * event, reads as an empty ARGS event (a filler, which readers skip):
 * nothing is made up, nothing after it is lost. */
static void test_values_only_args_unpaired(void **state)
{
	(void)state;
	char got[1024];
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec r[] = {LB_EV(M(10), SF_ARGS_VALUES | 1, SF_EV_ARGS), U64_REC(3), LB_EV(M(10), 12, SF_EV_ENTRY),
			     LB_EV(M(11), SF_ARGS_VALUES | 1, SF_EV_ARGS), U64_REC(3), LB_EV(M(11), 4, SF_EV_UNWIND),
			     LB_EV(M(12), SF_ARGS_VALUES | 1, SF_EV_ARGS), U64_REC(3)};
	lb_data(&b, 1, 100, 0, "main", r, 8);
	struct lr_log *log = open_ok(&b);
	args_string(log, got, sizeof(got));
	assert_string_equal(got, "ARGS:0 ENTRY:12 ARGS:0 UNWIND:4 ARGS:0");
	lr_close(log);
	lb_free(&b);
}

/* A packed batch that ends with the filler of a claim the end of the
 * slot cut (an empty ARGS event and its zero records): read whole, no
 * record lost (the decoder dropped a coded payload where the bytes ended:
 * SQLite --auto-args read 10,550 records as lost). */
static void test_packed_batch_ending_in_filler_loses_nothing(void **state)
{
	(void)state;
	char got[256];
	struct lb b;
	base_log(&b, SF_CLOCK_MONOTONIC);
	struct lb_rec r[] = {LB_EV(M(10), 11, SF_EV_ENTRY), LB_EV(M(11), 11, SF_EV_EXIT),
			     LB_EV(M(12), 3, SF_EV_ARGS), LB_HOLE, LB_HOLE, LB_HOLE};
	lb_packed(&b, 1, 100, 0, "main", r, 6);
	struct lr_log *log = open_ok(&b);
	args_string(log, got, sizeof(got));
	assert_string_equal(got, "ENTRY:11 EXIT:11 ARGS:0=000000000000000000000000000000000000000000000000");
	assert_int_equal(lr_thread_at(log, 0)->lost, 0);
	lr_close(log);
	lb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data_then_slot),
		cmocka_unit_test(test_values_only_args_read_as_header_form),
		cmocka_unit_test(test_values_only_args_unpaired),
		cmocka_unit_test(test_packed_batch_ending_in_filler_loses_nothing),
		cmocka_unit_test(test_slot_duplicate_of_data),
		cmocka_unit_test(test_slot_ends_at_zero_event),
		cmocka_unit_test(test_tid_reuse),
		cmocka_unit_test(test_zero_holes),
		cmocka_unit_test(test_alloc_payload),
		cmocka_unit_test(test_heap_payloads),
		cmocka_unit_test(test_truncated_last_chunk),
		cmocka_unit_test(test_half_written_event),
		cmocka_unit_test(test_time_below_base),
		cmocka_unit_test(test_time_lo_wraps),
		cmocka_unit_test(test_alloc_payload_zero_high_words),
		cmocka_unit_test(test_truncated_in_alloc_payload),
		cmocka_unit_test(test_garbage_resync),
		cmocka_unit_test(test_batches_out_of_order),
		cmocka_unit_test(test_objects_and_func_lookup),
		cmocka_unit_test(test_tsc_fit),
		cmocka_unit_test(test_monotonic_never_negative),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_version1_refused),
		cmocka_unit_test(test_random_chunks_do_not_crash),
		cmocka_unit_test(test_symbols_resolve),
		cmocka_unit_test(test_symbols_mismatch_and_missing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
