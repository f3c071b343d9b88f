/* Arrow IPC Schema message, flatbuffers written by hand.
 *
 * Flatbuffers layout reminders (all little-endian):
 *   - the buffer starts with a uint32 offset to the root table;
 *   - a table starts with an int32 soffset: table position minus its vtable's
 *     position; then its inline fields;
 *   - a vtable is uint16 vtable size, uint16 table inline size, then one
 *     uint16 per field slot: the field's offset inside the table, 0 = absent
 *     (the reader uses the schema default);
 *   - references (strings, vectors, tables) are uint32 offsets relative to
 *     where the offset itself is stored, so they point forward;
 *   - a string is uint32 length, bytes, NUL; a vector is uint32 count, then
 *     elements (offsets, for a vector of tables).
 *
 * We lay the buffer out front to back: each object is written before the
 * objects it references, whose offsets are patched in once their position
 * is known. Every object is aligned to its largest scalar relative to the
 * buffer start (which sits 8 bytes into the IPC message), as verifiers check.
 */
#include "output/arrow_schema.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

struct fb {
	uint8_t *p;
	size_t len, cap;
};

/* One inline field of a table being written. */
struct fb_field {
	int slot;       /* vtable slot (field id in the .fbs) */
	int size;       /* 1, 2 or 4 bytes */
	uint32_t value; /* scalar value; for references, patched later */
	size_t pos;     /* out: where the field was written */
};

static void fb_grow(struct fb *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
}

static void fb_align(struct fb *b, size_t a)
{
	while (b->len % a) {
		fb_grow(b, 1);
		b->p[b->len++] = 0;
	}
}

static void fb_put(struct fb *b, uint32_t v, int size)
{
	fb_grow(b, (size_t)size);
	for (int i = 0; i < size; i++)
		b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

static void fb_store32(struct fb *b, size_t pos, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->p[pos + i] = (uint8_t)(v >> (8 * i));
}

/* Point the uint32 offset stored at `at` to the object at `target`. */
static void fb_patch(struct fb *b, size_t at, size_t target)
{
	fb_store32(b, at, (uint32_t)(target - at));
}

/* Write a vtable with `nslots` slots, then the table with fields `f` in the
 * given order (each aligned to its size). Returns the table position. */
static size_t fb_table(struct fb *b, int nslots, struct fb_field *f, int nf)
{
	uint16_t off[16] = {0};
	size_t rel = 4; /* after the soffset */
	for (int i = 0; i < nf; i++) {
		rel = (rel + (size_t)f[i].size - 1) / (size_t)f[i].size * (size_t)f[i].size;
		off[f[i].slot] = (uint16_t)rel;
		rel += (size_t)f[i].size;
	}
	size_t tsize = (rel + 3) / 4 * 4;

	fb_align(b, 2);
	size_t vt = b->len;
	fb_put(b, (uint32_t)(4 + 2 * nslots), 2);
	fb_put(b, (uint32_t)tsize, 2);
	for (int i = 0; i < nslots; i++)
		fb_put(b, off[i], 2);

	fb_align(b, 4);
	size_t t = b->len;
	fb_put(b, (uint32_t)(t - vt), 4);
	for (int i = 0; i < nf; i++) {
		while (b->len < t + off[f[i].slot])
			fb_put(b, 0, 1);
		f[i].pos = b->len;
		fb_put(b, f[i].value, f[i].size);
	}
	while (b->len < t + tsize)
		fb_put(b, 0, 1);
	return t;
}

static size_t fb_string(struct fb *b, const char *s)
{
	size_t n = strlen(s);
	fb_align(b, 4);
	size_t pos = b->len;
	fb_put(b, (uint32_t)n, 4);
	fb_grow(b, n + 1);
	memcpy(b->p + b->len, s, n + 1);
	b->len += n + 1;
	return pos;
}

/* A vector of `n` references; returns its position. Element i is stored at
 * pos + 4 + 4 * i and patched by the caller. */
static size_t fb_ref_vector(struct fb *b, int n)
{
	fb_align(b, 4);
	size_t pos = b->len;
	fb_put(b, (uint32_t)n, 4);
	for (int i = 0; i < n; i++)
		fb_put(b, 0, 4);
	return pos;
}

/* The type table of a field (Int, Duration or Utf8); returns its position
 * and sets the union tag. */
static size_t fb_type(struct fb *b, enum arrow_type type, uint8_t *tag)
{
	switch (type) {
	case ARROW_UINT64:
	case ARROW_UINT32: {
		/* Int { bitWidth: int (0); is_signed: bool (1) } */
		struct fb_field f[] = {
			{ .slot = 0, .size = 4, .value = type == ARROW_UINT64 ? 64 : 32 },
			{ .slot = 1, .size = 1, .value = 0 },
		};
		*tag = ARROW_TYPE_INT;
		return fb_table(b, 2, f, 2);
	}
	case ARROW_DURATION_NS: {
		/* Duration { unit: TimeUnit (short, 0) } */
		struct fb_field f[] = {
			{ .slot = 0, .size = 2, .value = ARROW_TIMEUNIT_NANOSECOND },
		};
		*tag = ARROW_TYPE_DURATION;
		return fb_table(b, 1, f, 1);
	}
	case ARROW_UTF8:
		break;
	}
	/* Utf8 {} */
	*tag = ARROW_TYPE_UTF8;
	return fb_table(b, 0, NULL, 0);
}

/* Field { name (0); nullable (1); type_type (2); type (3); dictionary (4);
 * children (5) }. Children is written as an empty vector: some readers
 * (Arrow C++) reject a field without one. */
static size_t fb_arrow_field(struct fb *b, const struct arrow_field *af)
{
	enum { NAME, TYPE, CHILDREN, NULLABLE, TYPE_TYPE };
	struct fb_field f[] = {
		[NAME] = { .slot = 0, .size = 4 },
		[TYPE] = { .slot = 3, .size = 4 },
		[CHILDREN] = { .slot = 5, .size = 4 },
		[NULLABLE] = { .slot = 1, .size = 1, .value = af->nullable ? 1 : 0 },
		[TYPE_TYPE] = { .slot = 2, .size = 1 },
	};
	uint8_t tag;
	size_t t = fb_table(b, 6, f, 5);
	fb_patch(b, f[NAME].pos, fb_string(b, af->name));
	size_t ty = fb_type(b, af->type, &tag);
	b->p[f[TYPE_TYPE].pos] = tag;
	fb_patch(b, f[TYPE].pos, ty);
	fb_patch(b, f[CHILDREN].pos, fb_ref_vector(b, 0));
	return t;
}

/* Root Message { version (0); header_type (1); header (2); bodyLength (3,
 * absent = 0) } with header Schema { endianness (0, absent = Little);
 * fields (1) }. */
static void fb_message(struct fb *b, const struct arrow_field *fields, int n)
{
	fb_put(b, 0, 4); /* root offset */
	struct fb_field m[] = {
		{ .slot = 2, .size = 4 },
		{ .slot = 0, .size = 2, .value = ARROW_METADATA_V5 },
		{ .slot = 1, .size = 1, .value = ARROW_HEADER_SCHEMA },
	};
	fb_patch(b, 0, fb_table(b, 3, m, 3));

	struct fb_field s[] = { { .slot = 1, .size = 4 } };
	fb_patch(b, m[0].pos, fb_table(b, 2, s, 1));

	size_t vec = fb_ref_vector(b, n);
	fb_patch(b, s[0].pos, vec);
	for (int i = 0; i < n; i++)
		fb_patch(b, vec + 4 + 4 * (size_t)i, fb_arrow_field(b, &fields[i]));
}

uint8_t *arrow_schema_message(const struct arrow_field *fields, int n, size_t *len)
{
	struct fb b = {0};
	fb_put(&b, 0xFFFFFFFFu, 4); /* continuation marker */
	fb_put(&b, 0, 4);           /* metadata length, set below */
	/* The flatbuffer starts at offset 8; alignment inside it is relative
	 * to that start, and 8 is a multiple of every alignment we use. */
	struct fb fbuf = {0};
	fb_message(&fbuf, fields, n);
	fb_align(&fbuf, 8);
	fb_grow(&b, fbuf.len);
	memcpy(b.p + b.len, fbuf.p, fbuf.len);
	b.len += fbuf.len;
	fb_store32(&b, 4, (uint32_t)fbuf.len);
	free(fbuf.p);
	*len = b.len;
	return b.p;
}

char *arrow_base64(const void *data, size_t n)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *p = data;
	char *out = xmalloc((n + 2) / 3 * 4 + 1);
	char *o = out;
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		*o++ = abc[(v >> 6) & 63];
		*o++ = abc[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		*o++ = i + 1 < n ? abc[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

char *arrow_schema_base64(const struct arrow_field *fields, int n)
{
	size_t len;
	uint8_t *msg = arrow_schema_message(fields, n, &len);
	char *s = arrow_base64(msg, len);
	free(msg);
	return s;
}
