/* The JSON reader (lib/json_in.h) on cargo's message shapes: nested
 * lookups, escapes (\u with surrogate pairs), null executables, and the
 * documents it must refuse with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/json_in.h"

static void test_cargo_artifact(void **state)
{
	(void)state;
	char err[128];
	struct jv *m = jv_parse("{\"reason\":\"compiler-artifact\",\"target\":{\"kind\":[\"bench\"],\"name\":\"resolver\","
				"\"doctest\":false},\"profile\":{\"test\":true,\"opt_level\":\"3\"},\"filenames\":"
				"[\"/t/deps/resolver-1\"],\"executable\":\"/t/deps/resolver-1\",\"fresh\":true,"
				"\"n\":-1.5e2}\n", err, sizeof(err));
	assert_non_null(m);
	assert_string_equal(jv_str(jv_get(m, "reason")), "compiler-artifact");
	assert_string_equal(jv_str(jv_get(jv_get(m, "target"), "name")), "resolver");
	assert_true(jv_has_str(jv_get(jv_get(m, "target"), "kind"), "bench"));
	assert_false(jv_has_str(jv_get(jv_get(m, "target"), "kind"), "test"));
	assert_true(jv_true(jv_get(jv_get(m, "profile"), "test")));
	assert_false(jv_true(jv_get(jv_get(m, "target"), "doctest")));
	assert_int_equal(jv_len(jv_get(m, "filenames")), 1);
	assert_string_equal(jv_str(jv_at(jv_get(m, "filenames"), 0)), "/t/deps/resolver-1");
	assert_true(jv_get(m, "n")->number == -150.0);
	/* Wrong types and missing keys answer NULL/0, so chains need no checks. */
	assert_null(jv_str(jv_get(m, "target")));
	assert_null(jv_get(jv_get(m, "missing"), "x"));
	assert_int_equal(jv_len(jv_get(m, "reason")), 0);
	assert_null(jv_at(jv_get(m, "filenames"), 1));
	jv_free(m);

	m = jv_parse("{\"executable\":null,\"a\":[],\"o\":{}}", err, sizeof(err));
	assert_non_null(m);
	assert_int_equal(jv_get(m, "executable")->type, JV_NULL);
	assert_null(jv_str(jv_get(m, "executable")));
	assert_int_equal(jv_len(jv_get(m, "a")), 0);
	jv_free(m);
}

static void test_escapes(void **state)
{
	(void)state;
	char err[128];
	struct jv *m = jv_parse("[\"a\\\"b\\\\c\\/d\\n\\t\", \"caf\\u00e9 \\u2026 \\ud83d\\udd25\"]", err, sizeof(err));
	assert_non_null(m);
	assert_string_equal(jv_str(jv_at(m, 0)), "a\"b\\c/d\n\t");
	assert_string_equal(jv_str(jv_at(m, 1)), "caf\xc3\xa9 \xe2\x80\xa6 \xf0\x9f\x94\xa5");
	jv_free(m);
}

static void test_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "\"open", "\"\\ud83d\"", "\"\\x\"",
					  "tru", "{} x", "[\"a\nb\"]", "{1:2}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[128] = "";
		assert_null(jv_parse(bad[i], err, sizeof(err)));
		assert_true(!strncmp(err, "JSON: ", 6));
	}
	/* Depth is bounded: no stack overflow on a hostile document. */
	char *deep = malloc(100001);
	memset(deep, '[', 100000);
	deep[100000] = 0;
	char err[128];
	assert_null(jv_parse(deep, err, sizeof(err)));
	assert_non_null(strstr(err, "nested deeper"));
	free(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cargo_artifact),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
