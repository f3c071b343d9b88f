/* A small protobuf wire-format encoder (proto2/proto3 wire format, no schema).
 *
 * Two layers:
 *   - pointer encoders (pb_enc_*) write into memory the caller has already
 *     reserved and return the advanced pointer; they never check bounds, so
 *     hot paths reserve once per message and then encode without branches;
 *   - a growable byte buffer (struct pb_buf) with checked appends and nested
 *     messages.
 *
 * Nested messages: pb_nest_begin() writes the tag and reserves ONE length
 * byte; pb_nest_end() fills it in. Almost every message we write is shorter
 * than 128 bytes, so the common case costs no move; a longer one is shifted
 * right by the extra varint bytes. The output is always canonical (shortest
 * varints), which keeps tests exact and files small.
 */
#ifndef SFTRACE_OUTPUT_PROTOBUF_H
#define SFTRACE_OUTPUT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum pb_wire_type {
	PB_VARINT = 0,
	PB_FIXED64 = 1,
	PB_LEN = 2,
	PB_FIXED32 = 5,
};

/* Longest varint (a 64-bit value). */
#define PB_VARINT_MAX 10

/* ---- pointer encoders: no bounds checks ---- */

static inline uint8_t *pb_enc_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t pb_zigzag64(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline uint8_t *pb_enc_tag(uint8_t *p, uint32_t field, enum pb_wire_type wt)
{
	return pb_enc_varint(p, ((uint64_t)field << 3) | (uint64_t)wt);
}

static inline uint8_t *pb_enc_fixed64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 8;
}

/* Bytes that pb_enc_varint would write for v. */
static inline size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* ---- growable buffer ---- */

struct pb_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

void pb_buf_init(struct pb_buf *b, size_t initial_cap);
void pb_buf_free(struct pb_buf *b);
/* Grows so that at least `n` more bytes fit (exits on out of memory). */
void pb_buf_grow(struct pb_buf *b, size_t n);

/* Makes room for `n` bytes and returns the write position; the caller
 * encodes with pb_enc_* and then calls pb_buf_commit with the end pointer. */
static inline uint8_t *pb_buf_reserve(struct pb_buf *b, size_t n)
{
	if (__builtin_expect(b->cap - b->len < n, 0))
		pb_buf_grow(b, n);
	return b->data + b->len;
}

static inline void pb_buf_commit(struct pb_buf *b, uint8_t *end)
{
	b->len = (size_t)(end - b->data);
}

static inline void pb_put_varint(struct pb_buf *b, uint64_t v)
{
	pb_buf_commit(b, pb_enc_varint(pb_buf_reserve(b, PB_VARINT_MAX), v));
}

static inline void pb_put_tag(struct pb_buf *b, uint32_t field, enum pb_wire_type wt)
{
	pb_buf_commit(b, pb_enc_tag(pb_buf_reserve(b, PB_VARINT_MAX), field, wt));
}

/* Field with varint wire type: uint32/uint64/int32/int64/bool/enum.
 * Negative int32/int64 values must be passed sign-extended to 64 bits (the
 * protobuf rule: they take 10 bytes). */
static inline void pb_put_uint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	uint8_t *p = pb_buf_reserve(b, 2 * PB_VARINT_MAX);
	p = pb_enc_tag(p, field, PB_VARINT);
	pb_buf_commit(b, pb_enc_varint(p, v));
}

/* sint32/sint64 field (zigzag). */
static inline void pb_put_sint(struct pb_buf *b, uint32_t field, int64_t v)
{
	pb_put_uint(b, field, pb_zigzag64(v));
}

static inline void pb_put_fixed64(struct pb_buf *b, uint32_t field, uint64_t v)
{
	uint8_t *p = pb_buf_reserve(b, PB_VARINT_MAX + 8);
	p = pb_enc_tag(p, field, PB_FIXED64);
	pb_buf_commit(b, pb_enc_fixed64(p, v));
}

void pb_put_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len);
/* A NUL-terminated string (without the NUL). */
void pb_put_string(struct pb_buf *b, uint32_t field, const char *s);

/* Starts a length-delimited nested message; returns a mark for pb_nest_end.
 * Nesting is free-form: marks are offsets, so the buffer may grow between
 * begin and end, and marks of enclosing messages stay valid because an inner
 * message is always closed before its parent. */
static inline size_t pb_nest_begin(struct pb_buf *b, uint32_t field)
{
	uint8_t *p = pb_buf_reserve(b, PB_VARINT_MAX + 1);
	p = pb_enc_tag(p, field, PB_LEN);
	*p++ = 0;
	pb_buf_commit(b, p);
	return b->len;
}

void pb_nest_end_slow(struct pb_buf *b, size_t mark, size_t body);

static inline void pb_nest_end(struct pb_buf *b, size_t mark)
{
	size_t body = b->len - mark;
	if (__builtin_expect(body < 0x80, 1))
		b->data[mark - 1] = (uint8_t)body;
	else
		pb_nest_end_slow(b, mark, body);
}

#endif
