/* sf_format_duration (lib/util.h): the one duration formatter, in the
 * three styles its callers print (report's cells are in test_callpath.c);
 * sf_uftrace_unit, replay's and graph's uftrace units. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* uftrace's print_time_unit, thresholds and odd units included: " m"
 * counts seconds after the dot, " h" is minutes / 24 (its limits 1000,
 * 1000, 1000, 60, 24), over 999 the error case's 999.999. */
static void test_uftrace_units(void **state)
{
	(void)state;
	static const char *const units[] = SF_UFTRACE_UNITS;
	static const struct dcase c[] = {
		{1, "  0.001 us"},        {999999, "999.999 us"},     {1000000, "  1.000 ms"},
		{999999999, "999.999 ms"}, {1e9, "  1.000  s"},        {59.999e9, " 59.999  s"},
		{60e9, "  1.000  m"},      {125e9, "  2.005  m"},      {1439e9, " 23.059  m"},
		{1440e9, "  1.000  h"},    {2040e9, "  1.010  h"},     {3600e9, "  2.012  h"},
		{1440e9 * 999, "999.000  h"}, {1440e9 * 1000, "999.999  h"},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t v, frac;
		unsigned u = sf_uftrace_unit((uint64_t)c[i].ns, &v, &frac);
		char buf[32];
		snprintf(buf, sizeof(buf), "%3llu.%03llu %s", (unsigned long long)v, (unsigned long long)frac, units[u]);
		assert_string_equal(buf, c[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_option),
		cmocka_unit_test(test_uftrace_units),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
