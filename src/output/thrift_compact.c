/* Thrift compact protocol, encoder side. Layout rules (Thrift's
 * thrift-compact-protocol spec):
 *   - integers i16/i32/i64 are zigzag-mapped, then ULEB128 varints; i8 is one byte;
 *   - binary/string: varint length, then the bytes;
 *   - field header: one byte (delta << 4) | type when the id is 1..15 above
 *     the previous field id of the same struct, else the type byte followed
 *     by the id as a zigzag varint i16;
 *   - bool fields carry their value in the type nibble (1 true, 2 false);
 *   - list header: one byte (size << 4) | elemtype for size < 15, else
 *     0xF0 | elemtype then the size as a varint;
 *   - a struct ends with a STOP byte (0).
 */
#include "output/thrift_compact.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

void tc_init(struct tc_writer *w)
{
	memset(w, 0, sizeof(*w));
}

void tc_reset(struct tc_writer *w)
{
	w->out.len = 0;
	w->depth = 0;
	w->last[0] = 0;
}

void tc_free(struct tc_writer *w)
{
	pb_buf_free(&w->out);
	tc_init(w);
}

static void put_byte(struct tc_writer *w, uint8_t b)
{
	*pb_buf_reserve(&w->out, 1) = b;
	w->out.len++;
}

/* Thrift's varints and zigzag mapping (i16/i32/i64) are protobuf's. */
void tc_varint(struct tc_writer *w, uint64_t v)
{
	pb_put_varint(&w->out, v);
}

void tc_put_i8(struct tc_writer *w, int8_t v)
{
	put_byte(w, (uint8_t)v);
}

void tc_put_i32(struct tc_writer *w, int32_t v)
{
	tc_varint(w, pb_zigzag64(v));
}

void tc_put_i64(struct tc_writer *w, int64_t v)
{
	tc_varint(w, pb_zigzag64(v));
}

void tc_put_binary(struct tc_writer *w, const void *p, size_t n)
{
	tc_varint(w, n);
	if (n) {
		memcpy(pb_buf_reserve(&w->out, n), p, n);
		w->out.len += n;
	}
}

void tc_field(struct tc_writer *w, int16_t id, enum tc_type type)
{
	int16_t *last = &w->last[w->depth];
	int delta = id - *last;
	if (delta > 0 && delta <= 15) {
		put_byte(w, (uint8_t)(delta << 4 | type));
	} else {
		put_byte(w, (uint8_t)type);
		tc_varint(w, pb_zigzag64(id));
	}
	*last = id;
}

void tc_i8(struct tc_writer *w, int16_t id, int8_t v)
{
	tc_field(w, id, TC_I8);
	tc_put_i8(w, v);
}

void tc_i16(struct tc_writer *w, int16_t id, int16_t v)
{
	tc_field(w, id, TC_I16);
	tc_varint(w, pb_zigzag64(v));
}

void tc_i32(struct tc_writer *w, int16_t id, int32_t v)
{
	tc_field(w, id, TC_I32);
	tc_put_i32(w, v);
}

void tc_i64(struct tc_writer *w, int16_t id, int64_t v)
{
	tc_field(w, id, TC_I64);
	tc_put_i64(w, v);
}

void tc_bool(struct tc_writer *w, int16_t id, int v)
{
	tc_field(w, id, v ? TC_BOOL_TRUE : TC_BOOL_FALSE);
}

void tc_binary(struct tc_writer *w, int16_t id, const void *p, size_t n)
{
	tc_field(w, id, TC_BINARY);
	tc_put_binary(w, p, n);
}

void tc_string(struct tc_writer *w, int16_t id, const char *s)
{
	tc_binary(w, id, s, strlen(s));
}

void tc_list_header(struct tc_writer *w, enum tc_type elem, uint32_t n)
{
	if (n < 15) {
		put_byte(w, (uint8_t)(n << 4 | elem));
	} else {
		put_byte(w, (uint8_t)(0xF0 | elem));
		tc_varint(w, n);
	}
}

void tc_list(struct tc_writer *w, int16_t id, enum tc_type elem, uint32_t n)
{
	tc_field(w, id, TC_LIST);
	tc_list_header(w, elem, n);
}

void tc_struct_open(struct tc_writer *w)
{
	if (w->depth >= TC_MAX_DEPTH)
		abort(); /* a programming error: our schemas nest a few levels */
	w->last[++w->depth] = 0;
}

void tc_struct_begin(struct tc_writer *w, int16_t id)
{
	tc_field(w, id, TC_STRUCT);
	tc_struct_open(w);
}

void tc_struct_end(struct tc_writer *w)
{
	if (w->depth <= 0)
		abort();
	put_byte(w, TC_STOP);
	w->depth--;
}
