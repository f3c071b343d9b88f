/* Test helper: builds synthetic sftrace logs in memory from the sflog.h
 * structs, so reader tests control every byte (holes, garbage, truncation).
 *
 *   struct lb b;
 *   lb_init(&b, SF_CLOCK_MONOTONIC);
 *   lb_object(&b, 0, 1, "/bin/prog", funcs, 3, NULL, 0);
 *   struct lb_rec ev[] = { LB_EV(100, 1, SF_EV_ENTRY), LB_EV(200, 1, SF_EV_EXIT) };
 *   lb_data(&b, 1, 1234, 0, "main", ev, 2);
 *   lb_write(&b, path);
 *
 * Tests give events with their full 64-bit time; the builder picks the
 * batch's time base (the first event's time, or the one lb_data_base /
 * lb_slot_base are given) and stores the low 32 bits, as the runtime does.
 * It aborts if an event is not within 2^31 of the base: the runtime never
 * writes such a batch, and such an event would decode to another time.
 */
#ifndef SFTRACE_TESTS_LOGBUILD_H
#define SFTRACE_TESTS_LOGBUILD_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/packed.h"
#include "format/sflog.h"

/* Header defaults used by lb_init. */
#define LB_PID 4242
#define LB_PPID 1
#define LB_START_TSC 1000000ULL
#define LB_START_MONO 5000000000ULL

/* What a test puts in a batch: one of these per event, allocation payload or
 * raw record. */
enum lb_rec_type {
	LB_REC_EVENT, /* an event at a full time: one record */
	LB_REC_EXT,   /* an allocation payload: the two records after its event */
	LB_REC_RAW,   /* one record stored as is (holes, half-written events) */
};

struct lb_rec {
	enum lb_rec_type type;
	uint64_t time;           /* EVENT */
	uint32_t time_lo, word;  /* RAW; EVENT: word only */
	struct sf_event_ext ext; /* EXT */
};

/* An event; k may be any value below 16 (unknown kinds included). */
#define LB_EV(t, f, k) \
	((struct lb_rec){.type = LB_REC_EVENT, .time = (t), .word = sf_event_word((f), (k))})
/* A record whose bytes the test chooses. */
#define LB_RAW(lo, w) ((struct lb_rec){.type = LB_REC_RAW, .time_lo = (lo), .word = (w)})
/* A zero record: a hole in a DATA chunk, the end of a slot's events. */
#define LB_HOLE LB_RAW(0, 0)

struct lb {
	unsigned char *buf;
	size_t len, cap;
};

/* An allocation payload (the two records after an allocation event). */
static inline struct lb_rec lb_ext(uint64_t size, unsigned align_log2, uint64_t ptr)
{
	struct lb_rec r = {.type = LB_REC_EXT};
	r.ext.size_align = size | ((uint64_t)align_log2 << 48);
	r.ext.ptr = ptr;
	return r;
}

static inline void lb_reserve(struct lb *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 8192;
	while (cap < b->len + n)
		cap *= 2;
	b->buf = realloc(b->buf, cap);
	if (!b->buf)
		abort();
	memset(b->buf + b->cap, 0, cap - b->cap);
	b->cap = cap;
}

static inline size_t lb_bytes(struct lb *b, const void *p, size_t n)
{
	size_t off = b->len;
	lb_reserve(b, n);
	memcpy(b->buf + b->len, p, n);
	b->len += n;
	return off;
}

static inline void lb_zeros(struct lb *b, size_t n)
{
	lb_reserve(b, n);
	memset(b->buf + b->len, 0, n);
	b->len += n;
}

static inline void lb_align(struct lb *b, size_t a)
{
	if (b->len % a)
		lb_zeros(b, a - b->len % a);
}

static inline struct sf_header *lb_header(struct lb *b)
{
	return (struct sf_header *)(void *)b->buf;
}

static inline struct sf_chunk *lb_chunk(struct lb *b, size_t off)
{
	return (struct sf_chunk *)(void *)(b->buf + off);
}

/* Header with a start pair, no last pair, no chunks yet. */
static inline void lb_init(struct lb *b, uint32_t clock)
{
	memset(b, 0, sizeof(*b));
	lb_zeros(b, SF_HEADER_SIZE);
	struct sf_header *h = lb_header(b);
	h->magic = SF_MAGIC;
	h->version = SF_VERSION;
	h->header_size = SF_HEADER_SIZE;
	h->pid = LB_PID;
	h->ppid = LB_PPID;
	h->clock = clock;
	h->state = SF_STATE_EXITED;
	h->start_realtime_ns = 1700000000000000000ULL;
	h->start_tsc = LB_START_TSC;
	h->start_mono_ns = LB_START_MONO;
}

/* argv joined with NULs, as the runtime stores it. */
static inline void lb_cmdline(struct lb *b, const char *const *argv, int argc)
{
	struct sf_header *h = lb_header(b);
	size_t pos = 0;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;
		if (pos + n > SF_CMDLINE_MAX) {
			memcpy(h->cmdline + pos, argv[i], SF_CMDLINE_MAX - pos);
			pos = SF_CMDLINE_MAX;
			h->cmdline_truncated = 1;
			break;
		}
		memcpy(h->cmdline + pos, argv[i], n);
		pos += n;
	}
	h->cmdline_len = (uint32_t)pos;
}

static inline size_t lb_chunk_begin(struct lb *b, uint16_t type, uint32_t size, uint32_t count)
{
	lb_align(b, 16);
	struct sf_chunk c = {.magic = SF_CHUNK_MAGIC, .type = type, .size = size, .count = count};
	return lb_bytes(b, &c, sizeof(c));
}

static inline size_t lb_object(struct lb *b, uint32_t index, uint32_t first_id, const char *path,
			       const uint64_t *funcs, uint32_t n, const uint8_t *build_id,
			       uint8_t build_id_len)
{
	size_t plen = strlen(path), ppad = (plen + 7) & ~(size_t)7;
	size_t size = sizeof(struct sf_chunk) + sizeof(struct sf_object) + ppad + (size_t)n * 8;
	size = (size + 15) & ~(size_t)15;
	size_t off = lb_chunk_begin(b, SF_CHUNK_OBJECT, (uint32_t)size, n);
	struct sf_object o = {.index = index, .first_id = first_id, .load_bias = 0x555555554000ULL,
			      .sleds = n * 2, .patched = n * 2, .path_len = (uint16_t)plen,
			      .build_id_len = build_id_len, .flags = index ? SF_OBJ_DLOPEN : SF_OBJ_MAIN};
	if (build_id_len)
		memcpy(o.build_id, build_id, build_id_len);
	lb_bytes(b, &o, sizeof(o));
	lb_bytes(b, path, plen);
	lb_zeros(b, ppad - plen);
	lb_bytes(b, funcs, (size_t)n * 8);
	lb_zeros(b, off + size - b->len);
	lb_header(b)->objects++;
	return off;
}

static inline size_t lb_unload(struct lb *b, uint32_t index)
{
	size_t off = lb_chunk_begin(b, SF_CHUNK_UNLOAD, sizeof(struct sf_chunk) + 16, 0);
	struct sf_unload u = {.index = index};
	lb_bytes(b, &u, sizeof(u));
	lb_zeros(b, 8);
	return off;
}

static inline void lb_thread_fields(struct lb *b, size_t off, uint64_t serial, uint32_t tid, uint32_t seq,
				    const char *name)
{
	struct sf_chunk *c = lb_chunk(b, off);
	c->thread_serial = serial;
	c->tid = tid;
	c->seq = seq;
	if (name) /* like PR_GET_NAME's buffer: NUL-padded, not always terminated */
		memcpy(c->name, name, strnlen(name, sizeof(c->name)));
}

static inline uint32_t lb_rec_size(const struct lb_rec *r)
{
	return r->type == LB_REC_EXT ? sizeof(struct sf_event_ext) / sizeof(struct sf_event) : 1;
}

/* 8-byte records the n entries take in a payload. */
static inline uint32_t lb_nrec(const struct lb_rec *recs, uint32_t n)
{
	uint32_t total = 0;
	for (uint32_t i = 0; i < n; i++)
		total += lb_rec_size(&recs[i]);
	return total;
}

/* The base the runtime would pick: the batch's first event's time. */
static inline uint64_t lb_first_time(const struct lb_rec *recs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (recs[i].type == LB_REC_EVENT)
			return recs[i].time;
	return 0;
}

/* The runtime's rule (sflog.h): an event is within SF_TIME_SPAN of its
 * batch's base, before or after, or it goes to a new batch. A test that
 * breaks it would check a decoding the format does not promise. */
static inline void lb_check_span(uint64_t time, uint64_t base)
{
	if (time - base + SF_TIME_SPAN < 2 * SF_TIME_SPAN)
		return;
	fprintf(stderr, "logbuild: event time %" PRIu64 " is not within 2^31 of the batch base %" PRIu64 "\n",
		time, base);
	abort();
}

static inline void lb_put_rec(struct lb *b, uint64_t base, const struct lb_rec *r)
{
	if (r->type == LB_REC_EXT) {
		lb_bytes(b, &r->ext, sizeof(r->ext));
		return;
	}
	struct sf_event e = {.time_lo = r->time_lo, .word = r->word};
	if (r->type == LB_REC_EVENT) {
		lb_check_span(r->time, base);
		e.time_lo = (uint32_t)r->time;
	}
	lb_bytes(b, &e, sizeof(e));
}

static inline void lb_put_recs(struct lb *b, uint64_t base, const struct lb_rec *recs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		lb_put_rec(b, base, &recs[i]);
}

/* A DATA chunk holding recs with time base `base`; count is the number of
 * 8-byte records (allocation payloads included), the size is padded to 16. */
static inline size_t lb_data_base(struct lb *b, uint64_t serial, uint32_t tid, uint32_t seq, const char *name,
				  uint64_t base, const struct lb_rec *recs, uint32_t n)
{
	uint32_t nrec = lb_nrec(recs, n);
	size_t size = (sizeof(struct sf_chunk) + (size_t)nrec * sizeof(struct sf_event) + 15) & ~(size_t)15;
	size_t off = lb_chunk_begin(b, SF_CHUNK_DATA, (uint32_t)size, nrec);
	lb_thread_fields(b, off, serial, tid, seq, name);
	lb_chunk(b, off)->base = base;
	lb_put_recs(b, base, recs, n);
	lb_zeros(b, off + size - b->len);
	return off;
}

static inline size_t lb_data(struct lb *b, uint64_t serial, uint32_t tid, uint32_t seq, const char *name,
			     const struct lb_rec *recs, uint32_t n)
{
	return lb_data_base(b, serial, tid, seq, name, lb_first_time(recs, n), recs, n);
}

/* The same batch as lb_data_base, as a PACKED chunk (format/packed.h). */
static inline size_t lb_packed_base(struct lb *b, uint64_t serial, uint32_t tid, uint32_t seq, const char *name,
				    uint64_t base, const struct lb_rec *recs, uint32_t n)
{
	uint32_t nrec = lb_nrec(recs, n);
	struct lb raw = {0};
	lb_put_recs(&raw, base, recs, n);
	size_t cap = (size_t)nrec * 10 + SF_PK_MAX_GROUP;
	uint8_t *out = malloc(cap);
	struct sf_pack_state *st = malloc(sizeof(*st));
	if (!out || !st)
		abort();
	sf_pack_reset(st, base);
	size_t len = sf_pack_batch(st, (const struct sf_event *)(const void *)raw.buf, nrec, out, cap);
	size_t size = (sizeof(struct sf_chunk) + len + 15) & ~(size_t)15;
	size_t off = lb_chunk_begin(b, SF_CHUNK_PACKED, (uint32_t)size, nrec);
	lb_thread_fields(b, off, serial, tid, seq, name);
	lb_chunk(b, off)->base = base;
	lb_chunk(b, off)->reserved = len;
	lb_bytes(b, out, len);
	lb_zeros(b, off + size - b->len);
	free(out);
	free(st);
	free(raw.buf);
	return off;
}

static inline size_t lb_packed(struct lb *b, uint64_t serial, uint32_t tid, uint32_t seq, const char *name,
			       const struct lb_rec *recs, uint32_t n)
{
	return lb_packed_base(b, serial, tid, seq, name, lb_first_time(recs, n), recs, n);
}

/* A SLOT chunk of SF_SLOT_SIZE at a page-aligned offset holding recs with
 * time base `base`, zero after them. */
static inline size_t lb_slot_base(struct lb *b, uint64_t serial, uint32_t tid, uint32_t seq, const char *name,
				  uint64_t base, const struct lb_rec *recs, uint32_t n)
{
	lb_align(b, 4096);
	uint32_t cap = (SF_SLOT_SIZE - sizeof(struct sf_chunk)) / sizeof(struct sf_event);
	if (lb_nrec(recs, n) > cap) {
		fprintf(stderr, "logbuild: %u records do not fit a slot of %u\n", lb_nrec(recs, n), cap);
		abort();
	}
	size_t off = lb_chunk_begin(b, SF_CHUNK_SLOT, SF_SLOT_SIZE, cap);
	lb_thread_fields(b, off, serial, tid, seq, name);
	lb_chunk(b, off)->base = base;
	lb_put_recs(b, base, recs, n);
	lb_zeros(b, off + SF_SLOT_SIZE - b->len);
	return off;
}

static inline size_t lb_slot(struct lb *b, uint64_t serial, uint32_t tid, uint32_t seq, const char *name,
			     const struct lb_rec *recs, uint32_t n)
{
	return lb_slot_base(b, serial, tid, seq, name, lb_first_time(recs, n), recs, n);
}

static inline void lb_chunk_pair(struct lb *b, size_t off, uint64_t tsc, uint64_t mono)
{
	lb_chunk(b, off)->tsc = tsc;
	lb_chunk(b, off)->mono_ns = mono;
}

/* A fresh directory made from tmpl ("/tmp/NAME-XXXXXX", at most 63 bytes)
 * into dir[64], and the path of a log in it into path[128]. 0 or -1. */
static inline int lb_tmpdir(char *dir, char *path, const char *tmpl)
{
	snprintf(dir, 64, "%s", tmpl);
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, 128, "%s/sf.log", dir);
	return 0;
}

static inline void lb_tmpdir_remove(const char *dir, const char *path)
{
	unlink(path);
	rmdir(dir);
}

/* Writes the first len bytes (len 0: everything). Returns 0 or -1. */
static inline int lb_write_len(const struct lb *b, const char *path, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = len ? len : b->len;
	int ok = fwrite(b->buf, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static inline int lb_write(const struct lb *b, const char *path)
{
	return lb_write_len(b, path, 0);
}

static inline void lb_free(struct lb *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

#endif
