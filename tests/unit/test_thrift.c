/* Thrift compact protocol encoder: byte layouts worked out by hand from the
 * compact protocol spec (zigzag varints, delta field headers, list headers,
 * bools in the type nibble, STOP). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "output/thrift_compact.h"

#define EXPECT_BYTES(w, ...)                                                     \
	do {                                                                     \
		static const uint8_t want_[] = { __VA_ARGS__ };                  \
		assert_int_equal((w)->out.len, sizeof(want_));                   \
		assert_memory_equal((w)->out.data, want_, sizeof(want_));             \
	} while (0)

static void test_zigzag_varints(void **state)
{
	(void)state;
	struct tc_writer w;
	tc_init(&w);
	tc_put_i32(&w, 0);   /* 0 */
	tc_put_i32(&w, -1);  /* 1 */
	tc_put_i32(&w, 1);   /* 2 */
	tc_put_i32(&w, -64); /* 127 */
	tc_put_i32(&w, 64);  /* 128 = 0x80 0x01 */
	tc_put_i32(&w, 300); /* 600 = 0b100_1011000 -> 0xd8 0x04 */
	EXPECT_BYTES(&w, 0x00, 0x01, 0x02, 0x7f, 0x80, 0x01, 0xd8, 0x04);

	tc_reset(&w);
	tc_put_i32(&w, INT32_MIN); /* 0xffffffff: five bytes */
	tc_put_i64(&w, INT64_MAX); /* 0xfffffffffffffffe: ten bytes */
	EXPECT_BYTES(&w, 0xff, 0xff, 0xff, 0xff, 0x0f,
		     0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);

	tc_reset(&w);
	tc_put_i8(&w, -2); /* i8 is a plain byte */
	tc_put_binary(&w, "abc", 3);
	tc_put_binary(&w, "", 0);
	EXPECT_BYTES(&w, 0xfe, 0x03, 'a', 'b', 'c', 0x00);
	tc_free(&w);
}

static void test_field_headers(void **state)
{
	(void)state;
	struct tc_writer w;
	tc_init(&w);
	tc_struct_open(&w);
	tc_i32(&w, 1, 5);    /* delta 1, type 5: 0x15, value 10 */
	tc_i64(&w, 3, -1);   /* delta 2, type 6: 0x26, value 1 */
	tc_i32(&w, 20, 0);   /* delta 17 > 15: type byte 0x05, id zigzag 40 */
	tc_i16(&w, 21, 2);   /* delta 1 again: 0x14, value 4 */
	tc_i32(&w, 2, 7);    /* id goes down: long form 0x05, zigzag(2) = 4 */
	tc_i8(&w, 3, 64);    /* delta 1, type 3: 0x13, one byte */
	tc_struct_end(&w);   /* STOP */
	EXPECT_BYTES(&w, 0x15, 0x0a, 0x26, 0x01, 0x05, 0x28, 0x00, 0x14, 0x04, 0x05, 0x04, 0x0e,
		     0x13, 0x40, 0x00);
	tc_free(&w);
}

static void test_bool_and_binary_fields(void **state)
{
	(void)state;
	struct tc_writer w;
	tc_init(&w);
	tc_struct_open(&w);
	tc_bool(&w, 1, 1);          /* true in the type nibble: 0x11 */
	tc_bool(&w, 2, 0);          /* false: 0x12 */
	tc_string(&w, 4, "key");    /* delta 2, binary: 0x28 */
	tc_binary(&w, 5, "\x00\xff", 2);
	tc_struct_end(&w);
	EXPECT_BYTES(&w, 0x11, 0x12, 0x28, 0x03, 'k', 'e', 'y', 0x18, 0x02, 0x00, 0xff, 0x00);
	tc_free(&w);
}

static void test_lists(void **state)
{
	(void)state;
	struct tc_writer w;
	tc_init(&w);
	tc_struct_open(&w);
	tc_list(&w, 2, TC_I32, 3); /* field 0x29, header 0x35 */
	tc_put_i32(&w, 0);
	tc_put_i32(&w, 3);
	tc_put_i32(&w, 8);
	tc_list(&w, 3, TC_BINARY, 1); /* field 0x19, header 0x18 */
	tc_put_binary(&w, "x", 1);
	tc_struct_end(&w);
	EXPECT_BYTES(&w, 0x29, 0x35, 0x00, 0x06, 0x10, 0x19, 0x18, 0x01, 'x', 0x00);

	/* 15 or more elements: 0xf0 | type, then the size as a varint */
	tc_reset(&w);
	tc_list_header(&w, TC_STRUCT, 14);
	tc_list_header(&w, TC_STRUCT, 15);
	tc_list_header(&w, TC_I64, 200);
	EXPECT_BYTES(&w, 0xec, 0xfc, 0x0f, 0xf6, 0xc8, 0x01);
	tc_free(&w);
}

/* Field ids restart inside a nested struct and resume outside it. */
static void test_nested_structs(void **state)
{
	(void)state;
	struct tc_writer w;
	tc_init(&w);
	tc_struct_open(&w);
	tc_i32(&w, 1, 1);          /* 0x15 0x02 */
	tc_struct_begin(&w, 2);    /* 0x1c */
	tc_i32(&w, 1, 2);          /*   0x15 0x04 */
	tc_struct_begin(&w, 10);   /*   delta 9: 0x9c */
	tc_struct_end(&w);         /*   0x00 (empty struct) */
	tc_struct_end(&w);         /* 0x00 */
	tc_i32(&w, 3, 3);          /* delta 1 from field 2: 0x15 0x06 */
	tc_list(&w, 4, TC_STRUCT, 2); /* 0x19 0x2c */
	tc_struct_open(&w);        /* element: no header */
	tc_string(&w, 1, "k");     /*   0x18 0x01 'k' */
	tc_struct_end(&w);         /*   0x00 */
	tc_struct_open(&w);
	tc_string(&w, 2, "v");     /*   delta 2: 0x28 0x01 'v' */
	tc_struct_end(&w);
	tc_struct_end(&w);
	EXPECT_BYTES(&w, 0x15, 0x02, 0x1c, 0x15, 0x04, 0x9c, 0x00, 0x00, 0x15, 0x06, 0x19, 0x2c,
		     0x18, 0x01, 'k', 0x00, 0x28, 0x01, 'v', 0x00, 0x00);
	assert_int_equal(w.depth, 0);
	tc_free(&w);
}

/* A Parquet DataPageHeader inside a PageHeader, as the writer emits it. */
static void test_parquet_page_header(void **state)
{
	(void)state;
	struct tc_writer w;
	tc_init(&w);
	tc_struct_open(&w);
	tc_i32(&w, 1, 0);        /* type DATA_PAGE */
	tc_i32(&w, 2, 1000);     /* uncompressed_page_size: zigzag 2000 = 0xd0 0x0f */
	tc_i32(&w, 3, 100);      /* compressed_page_size: 200 = 0xc8 0x01 */
	tc_struct_begin(&w, 5);  /* data_page_header: delta 2, 0x2c */
	tc_i32(&w, 1, 125);      /* num_values: 250 = 0xfa 0x01 */
	tc_i32(&w, 2, 8);        /* RLE_DICTIONARY */
	tc_i32(&w, 3, 3);        /* RLE */
	tc_i32(&w, 4, 3);
	tc_struct_end(&w);
	tc_struct_end(&w);
	EXPECT_BYTES(&w, 0x15, 0x00, 0x15, 0xd0, 0x0f, 0x15, 0xc8, 0x01, 0x2c, 0x15, 0xfa, 0x01,
		     0x15, 0x10, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00);
	tc_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zigzag_varints),
		cmocka_unit_test(test_field_headers),
		cmocka_unit_test(test_bool_and_binary_fields),
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_nested_structs),
		cmocka_unit_test(test_parquet_page_header),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
