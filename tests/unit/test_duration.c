/* sf_format_duration (lib/util.h): the one duration formatter, in the
 * three styles its callers print (report's cells are in test_callpath.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/util.h"

struct dcase {
	double ns;
	const char *want;
};

static void check(const struct dcase *c, size_t n, enum sf_duration_style style)
{
	char buf[32];
	for (size_t i = 0; i < n; i++) {
		sf_format_duration(buf, sizeof(buf), c[i].ns, style);
		assert_string_equal(buf, c[i].want);
	}
}

/* heap_plot.c's axis labels (what time_label printed). */
static void test_fixed(void **state)
{
	(void)state;
	static const struct dcase c[] = {
		{0, "0 ns"},         {250.4, "250 ns"},     {999.4, "999 ns"},    {1000, "1.0 us"},
		{1549.9, "1.5 us"},  {999949, "999.9 us"},  {999950, "1000.0 us"}, {2e6, "2.0 ms"},
		{1.25e9, "1.25 s"},  {12345e9, "12345.00 s"},
	};
	check(c, sizeof(c) / sizeof(c[0]), SF_DURATION_FIXED);
}

/* The "recorded with --min-duration 10us" note (trace_input.c's
 * format_trim, which took over the old format_duration's outputs). */
static void test_option(void **state)
{
	(void)state;
	static const struct dcase c[] = {
		{0, "0ns"},        {500, "500ns"},      {999, "999ns"},   {1000, "1us"},  {10000, "10us"},
		{1500000, "1.5ms"}, {1234567, "1.23457ms"}, {2e9, "2s"}, {90e9, "90s"},
	};
	check(c, sizeof(c) / sizeof(c[0]), SF_DURATION_OPTION);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_option),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
