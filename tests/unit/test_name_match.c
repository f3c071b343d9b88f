/* nm_elide_generics: which '<' open generic arguments (and are elided) and
 * which open a qualified path (kept); nm_match on demangled names; and
 * ff_cache_name, the per-object filter file name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format/filter_file.h"
#include "lib/name_match.h"

static void check_elided(const char *name, const char *want)
{
	char *got = nm_elide_generics(name);
	assert_string_equal(got, want);
	free(got);
}

static void test_elide(void **state)
{
	(void)state;
	check_elided("rust_prog::fib", "rust_prog::fib");
	check_elided("serde_json::de::from_trait::<serde_json::read::StrRead, criterion::SavedSample>",
		     "serde_json::de::from_trait::<…>");
	check_elided("<rust_prog::Circle as rust_prog::Shape>::area", "<rust_prog::Circle as rust_prog::Shape>::area");
	check_elided("<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop", "<alloc::vec::Vec<…> as core::ops::drop::Drop>::drop");
	check_elided("core::ptr::drop_in_place::<alloc::boxed::Box<dyn Fn(u8) -> u8>>", "core::ptr::drop_in_place::<…>");
	check_elided("std::vector<int, std::allocator<int> >::push_back(int const&)", "std::vector<…>::push_back(int const&)");
	check_elided("operator<<(std::ostream&, int)", "operator<<(std::ostream&, int)");
	check_elided("a<>b<>", "a<…>b<…>");
	check_elided("broken<", "broken<…");
}

static void test_match_demangled(void **state)
{
	(void)state;
	struct nm_patterns ps = {0};
	nm_add(&ps, "criterion", "-r");
	assert_int_equal(nm_compile(&ps), 0);
	const char *name = "serde_json::de::from_trait::<serde_json::read::StrRead, criterion::SavedSample>";
	assert_true(nm_match(&ps, name));
	char *elided = nm_elide_generics(name);
	assert_false(nm_match(&ps, elided)); /* a match only inside generic arguments */
	free(elided);
	assert_false(nm_match(&ps, NULL));
	nm_free(&ps);
	enum nm_which w;
	assert_int_equal(nm_parse_which("both", &w), 0);
	assert_int_equal(w, NM_BOTH);
	assert_int_equal(nm_parse_which("raw", &w), -1);
}

static void test_cache_name(void **state)
{
	(void)state;
	char out[64];
	const uint8_t bid[] = {0x0b, 0x95, 0xff};
	assert_int_equal(ff_cache_name(bid, sizeof(bid), "/x", out, sizeof(out)), 0);
	assert_string_equal(out, "0b95ff.filter");
	assert_int_equal(ff_cache_name(NULL, 0, "/a/b", out, sizeof(out)), 0);
	assert_int_equal(strlen(out), strlen("path-") + 16 + strlen(".filter"));
	assert_memory_equal(out, "path-", 5);
	char other[64];
	ff_cache_name(NULL, 0, "/a/c", other, sizeof(other));
	assert_string_not_equal(out, other);
	assert_int_equal(ff_cache_name(bid, sizeof(bid), "/x", out, 10), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elide),
		cmocka_unit_test(test_match_demangled),
		cmocka_unit_test(test_cache_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
