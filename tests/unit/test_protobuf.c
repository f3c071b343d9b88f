/* Exact wire bytes of the protobuf encoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "output/protobuf.h"

#define ASSERT_BYTES(b, ...)                                                   \
	do {                                                                   \
		static const uint8_t want_[] = {__VA_ARGS__};                  \
		assert_int_equal((b)->len, sizeof(want_));                     \
		assert_memory_equal((b)->data, want_, sizeof(want_));          \
	} while (0)

static void test_varint(void **state)
{
	struct pb_buf b;
	pb_buf_init(&b, 4); /* tiny: forces growth */
	pb_put_varint(&b, 0);
	pb_put_varint(&b, 1);
	pb_put_varint(&b, 127);
	pb_put_varint(&b, 128);
	pb_put_varint(&b, 300);
	pb_put_varint(&b, 16384);
	ASSERT_BYTES(&b, 0x00, 0x01, 0x7f, 0x80, 0x01, 0xac, 0x02, 0x80, 0x80, 0x01);
	b.len = 0;
	pb_put_varint(&b, UINT64_MAX);
	ASSERT_BYTES(&b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
	b.len = 0;
	pb_put_varint(&b, 1ull << 63);
	ASSERT_BYTES(&b, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
	assert_int_equal(pb_varint_size(0), 1);
	assert_int_equal(pb_varint_size(127), 1);
	assert_int_equal(pb_varint_size(128), 2);
	assert_int_equal(pb_varint_size(UINT64_MAX), 10);
	pb_buf_free(&b);
}

static void test_zigzag(void **state)
{
	assert_int_equal(pb_zigzag64(0), 0);
	assert_int_equal(pb_zigzag64(-1), 1);
	assert_int_equal(pb_zigzag64(1), 2);
	assert_int_equal(pb_zigzag64(-2), 3);
	assert_int_equal(pb_zigzag64(INT64_MAX), UINT64_MAX - 1);
	assert_int_equal(pb_zigzag64(INT64_MIN), UINT64_MAX);
	struct pb_buf b;
	pb_buf_init(&b, 0);
	pb_put_sint(&b, 1, -3);
	ASSERT_BYTES(&b, 0x08, 0x05);
	pb_buf_free(&b);
}

static void test_tags(void **state)
{
	struct pb_buf b;
	pb_buf_init(&b, 0);
	pb_put_tag(&b, 1, PB_VARINT);
	pb_put_tag(&b, 2, PB_LEN);
	pb_put_tag(&b, 15, PB_FIXED64);
	pb_put_tag(&b, 16, PB_VARINT);   /* first two-byte tag */
	pb_put_tag(&b, 87, PB_VARINT);   /* TracePacket.first_packet_on_sequence */
	pb_put_tag(&b, 60, PB_LEN);      /* TracePacket.track_descriptor */
	ASSERT_BYTES(&b, 0x08, 0x12, 0x79, 0x80, 0x01, 0xb8, 0x05, 0xe2, 0x03);
	pb_buf_free(&b);
}

static void test_fields(void **state)
{
	struct pb_buf b;
	pb_buf_init(&b, 0);
	pb_put_uint(&b, 1, 150);
	pb_put_string(&b, 2, "testing");
	pb_put_bytes(&b, 3, "", 0);
	pb_put_fixed64(&b, 4, 0x0102030405060708ull);
	/* negative int32 is sign-extended: 10 bytes */
	pb_put_uint(&b, 5, (uint64_t)(int64_t)-1);
	ASSERT_BYTES(&b,
		     0x08, 0x96, 0x01,
		     0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g',
		     0x1a, 0x00,
		     0x21, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		     0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
	pb_buf_free(&b);
}

static void test_nested_short(void **state)
{
	struct pb_buf b;
	pb_buf_init(&b, 0);
	size_t outer = pb_nest_begin(&b, 1);
	pb_put_uint(&b, 8, 5);
	size_t inner = pb_nest_begin(&b, 11);
	pb_put_uint(&b, 9, 1);
	pb_nest_end(&b, inner);
	size_t empty = pb_nest_begin(&b, 12);
	pb_nest_end(&b, empty);
	pb_nest_end(&b, outer);
	ASSERT_BYTES(&b, 0x0a, 0x08, 0x40, 0x05, 0x5a, 0x02, 0x48, 0x01, 0x62, 0x00);
	pb_buf_free(&b);
}

/* A body of 200 bytes needs a two-byte length: the body moves right. Both
 * the inner and the outer message cross the 128-byte boundary. */
static void test_nested_long(void **state)
{
	struct pb_buf b;
	pb_buf_init(&b, 16);
	char s[198];
	memset(s, 'x', sizeof(s));
	size_t outer = pb_nest_begin(&b, 1);
	size_t inner = pb_nest_begin(&b, 2);
	pb_put_bytes(&b, 3, s, sizeof(s)); /* 1 tag + 2 len + 198 = 201 */
	pb_nest_end(&b, inner);            /* 1 tag + 2 len + 201 = 204 */
	pb_put_uint(&b, 4, 7);
	pb_nest_end(&b, outer);            /* body 206 */
	assert_int_equal(b.len, 3 + 206);
	static const uint8_t head[] = {0x0a, 0xce, 0x01, 0x12, 0xc9, 0x01, 0x1a, 0xc6, 0x01, 'x'};
	assert_memory_equal(b.data, head, sizeof(head));
	static const uint8_t tail[] = {'x', 0x20, 0x07};
	assert_memory_equal(b.data + b.len - 3, tail, sizeof(tail));
	pb_buf_free(&b);
}

/* 3-byte length: body of 20000 bytes. */
static void test_nested_huge(void **state)
{
	struct pb_buf b;
	pb_buf_init(&b, 0);
	static char s[20000 - 4];
	memset(s, 'y', sizeof(s));
	size_t m = pb_nest_begin(&b, 5);
	pb_put_bytes(&b, 1, s, sizeof(s)); /* 1 + 3 + 19996 = 20000 */
	pb_nest_end(&b, m);
	assert_int_equal(b.len, 1 + 3 + 20000);
	static const uint8_t head[] = {0x2a, 0xa0, 0x9c, 0x01, 0x0a, 0x9c, 0x9c, 0x01, 'y'};
	assert_memory_equal(b.data, head, sizeof(head));
	assert_int_equal(b.data[b.len - 1], 'y');
	pb_buf_free(&b);
}

static void test_reserve_commit(void **state)
{
	struct pb_buf b;
	pb_buf_init(&b, 1);
	uint8_t *p = pb_buf_reserve(&b, 32);
	assert_true(b.cap >= 32);
	p = pb_enc_tag(p, 8, PB_VARINT);
	p = pb_enc_varint(p, 1700000000000000000ull);
	p = pb_enc_fixed64(p, 1);
	pb_buf_commit(&b, p);
	ASSERT_BYTES(&b, 0x40, 0x80, 0x80, 0xa8, 0xb1, 0xe3, 0x9f, 0xe7, 0xcb, 0x17,
		     0x01, 0, 0, 0, 0, 0, 0, 0);
	pb_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint),
		cmocka_unit_test(test_zigzag),
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_nested_short),
		cmocka_unit_test(test_nested_long),
		cmocka_unit_test(test_nested_huge),
		cmocka_unit_test(test_reserve_commit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
