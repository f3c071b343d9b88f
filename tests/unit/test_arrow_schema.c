/* Arrow IPC Schema message: exact bytes for a one-field schema laid out by
 * hand, and a structural decode (a small flatbuffers reader written here)
 * of the sftrace events schema. Base64 against RFC 4648's test vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "output/arrow_schema.h"

static void test_base64(void **state)
{
	(void)state;
	static const char *const vec[][2] = {
		{ "", "" },         { "f", "Zg==" },         { "fo", "Zm8=" },
		{ "foo", "Zm9v" },  { "foob", "Zm9vYg==" },  { "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
		{ "\xfb\xff", "+/8=" }, /* the two non-alphanumeric digits */
	};
	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		char *s = arrow_base64(vec[i][0], strlen(vec[i][0]));
		assert_string_equal(s, vec[i][1]);
		free(s);
	}
}

/* One Utf8 field named "a". Offsets are relative to the flatbuffer, which
 * starts after the 8-byte IPC prefix. */
static void test_exact_bytes_one_field(void **state)
{
	(void)state;
	static const uint8_t want[] = {
		0xff, 0xff, 0xff, 0xff, 0x70, 0x00, 0x00, 0x00, /* continuation, length 112 */
		/* 0: root offset -> Message table at 16 */
		0x10, 0x00, 0x00, 0x00,
		/* 4: Message vtable: 10 bytes, table 12 bytes; version @8,
		 * header_type @10, header @4 */
		0x0a, 0x00, 0x0c, 0x00, 0x08, 0x00, 0x0a, 0x00, 0x04, 0x00,
		0x00, 0x00, /* 14: pad */
		/* 16: Message table: vtable at 16 - 12 = 4 */
		0x0c, 0x00, 0x00, 0x00,
		0x10, 0x00, 0x00, 0x00, /* 20: header -> 36 */
		0x04, 0x00,             /* 24: version V5 */
		0x01,                   /* 26: header_type Schema */
		0x00,
		/* 28: Schema vtable: 8 bytes, table 8; endianness absent, fields @4 */
		0x08, 0x00, 0x08, 0x00, 0x00, 0x00, 0x04, 0x00,
		/* 36: Schema table: vtable at 36 - 8 = 28 */
		0x08, 0x00, 0x00, 0x00,
		0x04, 0x00, 0x00, 0x00, /* 40: fields -> 44 */
		/* 44: fields vector: 1 element -> 48 + 20 = 68 */
		0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
		/* 52: Field vtable: 16 bytes, table 20; name @4, nullable @16,
		 * type_type @17, type @8, dictionary absent, children @12 */
		0x10, 0x00, 0x14, 0x00, 0x04, 0x00, 0x10, 0x00, 0x11, 0x00, 0x08, 0x00, 0x00, 0x00,
		0x0c, 0x00,
		/* 68: Field table: vtable at 68 - 16 = 52 */
		0x10, 0x00, 0x00, 0x00,
		0x10, 0x00, 0x00, 0x00, /* 72: name -> 88 */
		0x18, 0x00, 0x00, 0x00, /* 76: type -> 100 */
		0x18, 0x00, 0x00, 0x00, /* 80: children -> 104 */
		0x00,                   /* 84: nullable false */
		0x05,                   /* 85: type_type Utf8 */
		0x00, 0x00,
		/* 88: "a" */
		0x01, 0x00, 0x00, 0x00, 'a', 0x00,
		/* 94: Utf8 vtable: 4 bytes, table 4, no fields */
		0x04, 0x00, 0x04, 0x00,
		0x00, 0x00, /* 98: pad */
		/* 100: Utf8 table: vtable at 100 - 6 = 94 */
		0x06, 0x00, 0x00, 0x00,
		/* 104: children: empty vector */
		0x00, 0x00, 0x00, 0x00,
		/* 108: pad to a multiple of 8 */
		0x00, 0x00, 0x00, 0x00,
	};
	const struct arrow_field f = { "a", ARROW_UTF8, 0 };
	size_t len;
	uint8_t *msg = arrow_schema_message(&f, 1, &len);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(msg, want, sizeof(want));
	free(msg);
}

/* ---- a minimal flatbuffers reader, with bounds and alignment checks ---- */

struct fbr {
	const uint8_t *p;
	size_t len;
};

static uint32_t rd32(const struct fbr *b, size_t at)
{
	assert_true(at + 4 <= b->len);
	uint32_t v;
	memcpy(&v, b->p + at, 4);
	return v;
}

static uint16_t rd16(const struct fbr *b, size_t at)
{
	assert_true(at + 2 <= b->len);
	uint16_t v;
	memcpy(&v, b->p + at, 2);
	return v;
}

/* Follow the uoffset stored at `at`. */
static size_t deref(const struct fbr *b, size_t at)
{
	size_t to = at + rd32(b, at);
	assert_true(to < b->len);
	return to;
}

/* Position of field `slot` of the table at `t`, or 0 if absent. */
static size_t field(const struct fbr *b, size_t t, int slot)
{
	assert_int_equal(t % 4, 0);
	int32_t so = (int32_t)rd32(b, t);
	size_t vt = (size_t)((int64_t)t - so);
	assert_int_equal(vt % 2, 0);
	uint16_t vsize = rd16(b, vt), tsize = rd16(b, vt + 2);
	assert_true(t + tsize <= b->len);
	if (4 + 2 * (size_t)slot >= vsize)
		return 0;
	uint16_t off = rd16(b, vt + 4 + 2 * (size_t)slot);
	assert_true(off < tsize);
	return off ? t + off : 0;
}

static size_t table_field(const struct fbr *b, size_t t, int slot)
{
	size_t f = field(b, t, slot);
	assert_true(f != 0);
	return deref(b, f);
}

static int64_t scalar(const struct fbr *b, size_t t, int slot, int size, int64_t dflt)
{
	size_t f = field(b, t, slot);
	if (!f)
		return dflt;
	assert_int_equal(f % (size_t)size, 0);
	if (size == 1)
		return b->p[f];
	if (size == 2)
		return (int16_t)rd16(b, f);
	return (int32_t)rd32(b, f);
}

static void test_decode_events_schema(void **state)
{
	(void)state;
	static const struct arrow_field in[] = {
		{ "frame_id", ARROW_UINT64, 0 }, { "parent", ARROW_UINT64, 0 },
		{ "tid", ARROW_UINT32, 0 },      { "func_id", ARROW_UINT64, 0 },
		{ "time", ARROW_DURATION_NS, 1 }, { "kind", ARROW_UINT32, 0 },
		{ "name", ARROW_UTF8, 0 },
	};
	const int n = sizeof(in) / sizeof(in[0]);
	size_t len;
	uint8_t *msg = arrow_schema_message(in, n, &len);
	assert_int_equal(len % 8, 0);
	assert_int_equal(rd32(&(struct fbr){ msg, len }, 0), 0xFFFFFFFFu);
	assert_int_equal(rd32(&(struct fbr){ msg, len }, 4), len - 8);

	struct fbr b = { msg + 8, len - 8 };
	size_t m = deref(&b, 0);
	assert_int_equal(scalar(&b, m, 0, 2, 0), ARROW_METADATA_V5);
	assert_int_equal(scalar(&b, m, 1, 1, 0), ARROW_HEADER_SCHEMA);
	assert_int_equal(scalar(&b, m, 3, 4, 0), 0); /* bodyLength absent = 0 */
	size_t schema = table_field(&b, m, 2);
	assert_int_equal(scalar(&b, schema, 0, 2, 0), 0); /* Little */
	size_t vec = table_field(&b, schema, 1);
	assert_int_equal(rd32(&b, vec), (uint32_t)n);

	for (int i = 0; i < n; i++) {
		size_t f = deref(&b, vec + 4 + 4 * (size_t)i);
		size_t name = table_field(&b, f, 0);
		uint32_t nlen = rd32(&b, name);
		assert_int_equal(nlen, strlen(in[i].name));
		assert_memory_equal(b.p + name + 4, in[i].name, nlen);
		assert_int_equal(b.p[name + 4 + nlen], 0);
		assert_int_equal(scalar(&b, f, 1, 1, 0), in[i].nullable);
		assert_int_equal(field(&b, f, 4), 0); /* no dictionary */
		assert_int_equal(rd32(&b, table_field(&b, f, 5)), 0); /* no children */

		size_t type = table_field(&b, f, 3);
		int64_t tag = scalar(&b, f, 2, 1, 0);
		switch (in[i].type) {
		case ARROW_UINT64:
		case ARROW_UINT32:
			assert_int_equal(tag, ARROW_TYPE_INT);
			assert_int_equal(scalar(&b, type, 0, 4, 0), in[i].type == ARROW_UINT64 ? 64 : 32);
			assert_int_equal(scalar(&b, type, 1, 1, 0), 0); /* unsigned */
			break;
		case ARROW_DURATION_NS:
			assert_int_equal(tag, ARROW_TYPE_DURATION);
			/* the schema default is MILLISECOND: it must be written */
			assert_int_equal(scalar(&b, type, 0, 2, 1), ARROW_TIMEUNIT_NANOSECOND);
			break;
		case ARROW_UTF8:
			assert_int_equal(tag, ARROW_TYPE_UTF8);
			break;
		}
	}
	free(msg);
}

static void test_schema_base64_matches_message(void **state)
{
	(void)state;
	const struct arrow_field f[] = { { "time", ARROW_DURATION_NS, 0 } };
	size_t len;
	uint8_t *msg = arrow_schema_message(f, 1, &len);
	char *direct = arrow_base64(msg, len);
	char *b64 = arrow_schema_base64(f, 1);
	assert_string_equal(b64, direct);
	assert_int_equal(strlen(b64), (len + 2) / 3 * 4);
	assert_memory_equal(b64, "/////", 5); /* base64 of the 0xFFFFFFFF prefix */
	free(msg);
	free(direct);
	free(b64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_exact_bytes_one_field),
		cmocka_unit_test(test_decode_events_schema),
		cmocka_unit_test(test_schema_base64_matches_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
