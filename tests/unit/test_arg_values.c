/* Struct values in ARGS payloads (lib/arg_values.h, format/sf_args.h): a
 * STRUCT item's members fold into one value in both layouts, a struct in
 * memory is named by its stack offset, and payloads that break the rules
 * (a struct among a struct's members, a NONE member, a fixed STRUCT whose
 * members have no fixed size) are malformed; one cut short is closed with
 * what it has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "format/sf_args.h"
#include "lib/arg_values.h"

/* A coded payload: the header, then items (slot, fmt, value bytes). */
static size_t coded(uint8_t *buf, unsigned nitems, const uint8_t *items, size_t n)
{
	struct sf_args_head h = {7, 0, (uint8_t)nitems, (uint16_t)n};
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), items, n);
	return sizeof(h) + n;
}

#define I32 0x11 /* SF_AT_SINT, 4 bytes */
#define D64 0x08 /* SF_AT_DOUBLE */
#define STRUCT2 (SF_AT_STRUCT | 2 << 4)

static void test_coded_struct_folds(void **state)
{
	(void)state;
	/* {1, -2} in arg1 (members in rdi's bytes 0 and 4), then 5, and a
	 * struct {1.5} in fparg1. */
	const uint8_t items[] = {1, STRUCT2, 0x00, I32, 2, 0x40, I32, 3, 2, I32, 10,
				 0x41, SF_AT_STRUCT | 1 << 4, 0x08, D64, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f};
	uint8_t buf[64];
	size_t len = coded(buf, 6, items, sizeof(items));
	struct av_item it[SF_ARG_MAX_ITEMS];
	assert_int_equal(av_decode(buf, len, it, SF_ARG_MAX_ITEMS), 3);
	assert_string_equal(it[0].name, "arg1");
	assert_string_equal(it[0].value, "{1, -2}");
	assert_string_equal(it[1].name, "arg2");
	assert_string_equal(it[1].value, "5");
	assert_string_equal(it[2].name, "fparg1");
	assert_string_equal(it[2].value, "{1.500000}");
	char joined[128];
	av_join(buf, len, joined, sizeof(joined));
	assert_string_equal(joined, "{1, -2}, 5, {1.500000}");
	/* Room for one item: the struct, whole; the rest left out. */
	assert_int_equal(av_decode(buf, len, it, 1), 1);
	assert_string_equal(it[0].value, "{1, -2}");
}

static void test_stack_struct_named_by_offset(void **state)
{
	(void)state;
	const uint8_t items[] = {SF_ARG_STACK | 3, STRUCT2, SF_ARG_STACK, I32, 20, SF_ARG_STACK | 1, I32, 40};
	uint8_t buf[64];
	size_t len = coded(buf, 3, items, sizeof(items));
	struct av_item it[SF_ARG_MAX_ITEMS];
	assert_int_equal(av_decode(buf, len, it, SF_ARG_MAX_ITEMS), 1);
	assert_string_equal(it[0].name, "stack24");
	assert_string_equal(it[0].value, "{10, 20}");
}

/* One double in fparg1, formatted. */
static void double_text(double d, char *out, size_t cap)
{
	uint8_t items[10] = {0x41, D64};
	memcpy(items + 2, &d, 8);
	uint8_t buf[64];
	size_t len = coded(buf, 1, items, sizeof(items));
	av_join(buf, len, out, cap);
}

static void test_double_keeps_its_digits(void **state)
{
	(void)state;
	static const struct {
		double d;
		const char *text;
	} cases[] = {{6, "6.000000"},	    {1.5, "1.500000"},	  {0, "0.000000"},	 {-2.5, "-2.500000"},
		     {1e-4, "0.000100"},    {5e-10, "5e-10"},	  {-1e-9, "-1e-09"},	 {1e300, "1e+300"},
		     {1e15, "1e+15"},	    {123456789012345.0, "123456789012345.000000"}, {1.0 / 0.0, "inf"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64];
		double_text(cases[i].d, out, sizeof(out));
		assert_string_equal(out, cases[i].text);
	}
}

/* Parameters --auto-args marks: one the optimiser made a constant, one
 * on the stack, one whose register DWARF does not tell. */
static void test_unrecorded_parameters_named(void **state)
{
	(void)state;
	const uint8_t items[] = {SF_ARG_SLOT_GONE, SF_AT_NONE, 1, I32, 20, SF_ARG_SLOT_STACK, SF_AT_NONE,
				 SF_ARG_SLOT_UNKNOWN, SF_AT_NONE};
	uint8_t buf[64];
	size_t len = coded(buf, 4, items, sizeof(items));
	struct av_item it[SF_ARG_MAX_ITEMS];
	assert_int_equal(av_decode(buf, len, it, SF_ARG_MAX_ITEMS), 4);
	assert_string_equal(it[0].name, "optimized");
	assert_string_equal(it[2].name, "stack");
	assert_string_equal(it[3].name, "param");
	char joined[128];
	av_join(buf, len, joined, sizeof(joined));
	assert_string_equal(joined, "<optimized out>, 10, <unrecorded>, <unrecorded>");
}

static void test_cut_struct_is_closed(void **state)
{
	(void)state;
	/* Three members announced, one recorded (a payload cut by its
	 * buffer's end). */
	const uint8_t items[] = {1, SF_AT_STRUCT | 3 << 4, 0x00, I32, 2};
	uint8_t buf[64];
	size_t len = coded(buf, 2, items, sizeof(items));
	struct av_item it[SF_ARG_MAX_ITEMS];
	assert_int_equal(av_decode(buf, len, it, SF_ARG_MAX_ITEMS), 1);
	assert_string_equal(it[0].value, "{1}");
}

static void test_bad_members_are_malformed(void **state)
{
	(void)state;
	uint8_t buf[64];
	struct av_item it[SF_ARG_MAX_ITEMS];
	const uint8_t nested[] = {1, STRUCT2, 0x00, STRUCT2, 0x00, I32, 2, 0x40, I32, 4};
	assert_int_equal(av_decode(buf, coded(buf, 4, nested, sizeof(nested)), it, SF_ARG_MAX_ITEMS), -1);
	const uint8_t none[] = {1, STRUCT2, 0x00, SF_AT_NONE, 0x40, I32, 4};
	assert_int_equal(av_decode(buf, coded(buf, 3, none, sizeof(none)), it, SF_ARG_MAX_ITEMS), -1);
	/* Fixed layout: a string member has no fixed size. */
	struct sf_args_head h = {7, SF_ARGS_FIXED, 2, 8};
	memcpy(buf, &h, sizeof(h));
	const uint8_t fixed[] = {1, SF_AT_STRUCT | 1 << 4, 0x00, SF_AT_STR, 0, 0, 0, 0};
	memcpy(buf + sizeof(h), fixed, sizeof(fixed));
	assert_int_equal(av_decode(buf, sizeof(h) + sizeof(fixed), it, SF_ARG_MAX_ITEMS), -1);
}

static void test_fixed_struct_folds(void **state)
{
	(void)state;
	/* Fixed layout: pairs (STRUCT, two int members, an int), then the
	 * values at 8, 12 and 16. */
	uint8_t buf[64] = {0};
	struct sf_args_head h = {7, SF_ARGS_FIXED, 4, 20};
	memcpy(buf, &h, sizeof(h));
	const uint8_t pairs[] = {1, STRUCT2, 0x00, I32, 0x40, I32, 2, I32};
	memcpy(buf + 8, pairs, sizeof(pairs));
	int32_t v[3] = {3, -4, 5};
	memcpy(buf + 16, v, sizeof(v));
	struct av_item it[SF_ARG_MAX_ITEMS];
	assert_int_equal(av_decode(buf, 8 + 20, it, SF_ARG_MAX_ITEMS), 2);
	assert_string_equal(it[0].value, "{3, -4}");
	assert_string_equal(it[1].value, "5");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coded_struct_folds),
		cmocka_unit_test(test_stack_struct_named_by_offset),
		cmocka_unit_test(test_cut_struct_is_closed),
		cmocka_unit_test(test_double_keeps_its_digits),
		cmocka_unit_test(test_unrecorded_parameters_named),
		cmocka_unit_test(test_bad_members_are_malformed),
		cmocka_unit_test(test_fixed_struct_folds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
