/* Escaping text from logs for the terminal (lib/text_esc.h): what passes
 * unchanged (ASCII, UTF-8, backslashes: no copy), what becomes \xHH (C0,
 * DEL, C1 as two bytes, bytes that are not UTF-8), the TSV variant, and
 * the rotating buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/json_out.h"
#include "lib/text_esc.h"

static void test_clean_text_is_not_copied(void **state)
{
	(void)state;
	static const char *const clean[] = {"", "main", "ns::f<int>(char const*)", "caf\xc3\xa9 \xe2\x80\xa6 \xf0\x9f\x94\xa5",
					    "a\\x1b", "\xc2\xa0nbsp"};
	for (size_t i = 0; i < sizeof(clean) / sizeof(clean[0]); i++)
		assert_ptr_equal(sf_esc(clean[i]), clean[i]);
	assert_null(sf_esc(NULL));
}

static void test_controls_become_hex(void **state)
{
	(void)state;
	assert_string_equal(sf_esc("a\x1b[31mb"), "a\\x1b[31mb");
	assert_string_equal(sf_esc("t\tn\nr\r"), "t\\x09n\\x0ar\\x0d");
	assert_string_equal(sf_esc("\x01\x7f"), "\\x01\\x7f");
	/* C1: U+009B (CSI) and U+0085, encoded in UTF-8. */
	assert_string_equal(sf_esc("x\xc2\x9b" "2J\xc2\x85"), "x\\xc2\\x9b2J\\xc2\\x85");
	/* Not UTF-8: a lone CSI byte, a cut sequence, an overlong NUL. */
	assert_string_equal(sf_esc("\x9b" "2J"), "\\x9b2J");
	assert_string_equal(sf_esc("\xe2\x80"), "\\xe2\\x80");
	assert_string_equal(sf_esc("\xc0\x80"), "\\xc0\\x80");
	/* Valid UTF-8 around them is kept. */
	assert_string_equal(sf_esc("\xc3\xa9\x1b\xc3\xa9"), "\xc3\xa9\\x1b\xc3\xa9");
}

static void test_slots_rotate(void **state)
{
	(void)state;
	const char *r[SF_ESC_SLOTS];
	char want[32];
	for (int i = 0; i < SF_ESC_SLOTS; i++) {
		char in[16];
		snprintf(in, sizeof(in), "%d\x1b", i);
		r[i] = sf_esc(in);
	}
	for (int i = 0; i < SF_ESC_SLOTS; i++) {
		snprintf(want, sizeof(want), "%d\\x1b", i);
		assert_string_equal(r[i], want); /* all still valid */
	}
	/* A long string grows its slot. */
	char big[3000];
	memset(big, 0x07, sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(strlen(sf_esc(big)), 4 * (sizeof(big) - 1));
}

static char *captured(void (*put)(FILE *, const char *), const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	put(f, s);
	fclose(f);
	return buf;
}

static void put_tsv(FILE *f, const char *s) { sf_esc_put(f, s, "\t\n\r"); }

static void test_tsv_and_json(void **state)
{
	(void)state;
	char *t = captured(put_tsv, "a\tb\nc\x1b\xc2\x9b" "d\xff");
	assert_string_equal(t, "a b c\\x1b\\xc2\\x9bd\\xff");
	free(t);
	char *j = captured(json_put_str, "a\x1b\xc2\x9b\xc3\xa9\xff");
	assert_string_equal(j, "\"a\\u001b\\u009b\xc3\xa9\\ufffd\"");
	free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_text_is_not_copied),
		cmocka_unit_test(test_controls_become_hex),
		cmocka_unit_test(test_slots_rotate),
		cmocka_unit_test(test_tsv_and_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
