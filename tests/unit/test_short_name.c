/* sf_short_name: the short name style, fed with libiberty's demangler
 * output (sf_demangle) of real manglings, so the inputs are what users see
 * in full style. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "lib/demangle.h"

static void expect(const char *mangled, const char *want)
{
	char *full = sf_demangle(mangled);
	assert_non_null(full);
	char *got = sf_short_name(full, mangled);
	assert_string_equal(got, want);
	free(got);
	free(full);
}

static void expect_plain(const char *name, const char *want)
{
	char *got = sf_short_name(name, NULL);
	assert_string_equal(got, want);
	free(got);
}

static void test_rust_v0(void **state)
{
	(void)state;
	expect("_RNvCs6GmmlP4bgsG_1r4main", "r::main");
	/* serde_json::de::from_str::<app::Config>: turbofish arguments go. */
	expect("_RINvNtCs1a_10serde_json2de8from_strNtCs2b_3app6ConfigECs2b_3app", "serde_json::de::from_str::<…>");
	/* Closure #0 in std::rt::lang_start::<()>. */
	expect("_RNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0Cs6GmmlP4bgsG_1r", "std::rt::lang_start::<…>::{closure}");
	/* A trait impl stays readable, its self type's arguments go. */
	expect("_RNvXs1_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVechENtNtNtCsgEmfK2I1SDS_"
	       "4core3ops4drop4Drop4dropCsduwmD7cSIQq_5gimli",
	       "<alloc::raw_vec::RawVec<…> as core::ops::drop::Drop>::drop");
	/* An inherent impl on RawTable<(u32, &str)>: no brackets needed. */
	expect("_RNvMs6_NtCsgvbsrvnw3yD_9hashbrown3rawINtB5_8RawTableTmReEE14reserve_rehash"
	       ".llvm.13247167612540783456",
	       "hashbrown::raw::RawTable<…>::reserve_rehash");
}

static void test_rust_legacy(void **state)
{
	(void)state;
	expect("_ZN10serde_json2de8from_str17h0123456789abcdefE", "serde_json::de::from_str");
	expect("_ZN79_$LT$hashbrown..raw..RawTable$LT$T$C$A$GT$$u20$as$u20$core..ops..drop.."
	       "Drop$GT$4drop17h74c3e174cfcffa33E",
	       "<hashbrown::raw::RawTable<…> as core::ops::drop::Drop>::drop");
	expect("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E",
	       "std::rt::lang_start::{closure}");
	/* Upper-case hash digits: the C++ demangler's "::h<hash>" goes too. */
	expect("_ZN3foo3bar17h0123456789ABCDEFE", "foo::bar");
}

static void test_cplusplus(void **state)
{
	(void)state;
	expect("_Z1fv", "f()");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<…>::push_back(…)");
	expect("_ZN9__gnu_cxx13new_allocatorIcED2Ev", "__gnu_cxx::new_allocator<…>::~new_allocator()");
	expect("_Z3fooi.cold", "foo(…)");
	/* A template function: `void foo<int>(int)` loses its return type. */
	expect("_Z3fooIiEvT_", "foo<…>(…)");
	/* A lambda inside a function in an anonymous namespace. */
	expect("_ZZN12_GLOBAL__N_14workEiENKUliE_clEi", "(anonymous namespace)::work(…)::{lambda}::operator()(…) const");
	/* Operators are no brackets. */
	expect("_ZlsRSoRK3Foo", "operator<<(…)");
	expect("_ZltRK3FooS1_", "operator<(…)");
}

static void test_plain_names(void **state)
{
	(void)state;
	expect_plain("main", "main");
	expect_plain("leaf", "leaf");
	/* A crate disambiguator as verbose demanglers print it. */
	expect_plain("serde_json[a1b2c3]::de::from_str", "serde_json::de::from_str");
	expect_plain("<[T]>::len", "<[T]>::len");
	expect_plain("<&str as core::fmt::Display>::fmt", "<&str as core::fmt::Display>::fmt");
	expect_plain("core::ops::function::FnOnce::call_once::<fn(), ()>", "core::ops::function::FnOnce::call_once::<…>");
	expect_plain("alloc::boxed::Box<dyn core::ops::Fn(i32) -> i32>::new", "alloc::boxed::Box<…>::new");
	expect_plain("foo::{closure#12}::{closure#0}", "foo::{closure}::{closure}");
	/* Unbalanced input is kept, never cut short. */
	expect_plain("odd<name", "odd<name");
}

static void expect_fit(const char *name, size_t cols, const char *want)
{
	char buf[256];
	sf_fit_name(name, cols, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

/* sf_fit_name: a table's cut keeps the last component (the method). */
static void test_fit_name(void **state)
{
	(void)state;
	expect_fit("ns::K<…>::alloc(…)", 40, "ns::K<…>::alloc(…)");
	expect_fit("outer_ns::inner_ns::K<…>::alloc_thing(…)", 24, "outer_n…::alloc_thing(…)");
	expect_fit("outer_ns::inner_ns::K<…>::alloc_thing(…)", 18, "o…::alloc_thing(…)");
	expect_fit("outer_ns::inner_ns::K<…>::alloc_thing(…)", 17, "…alloc_thing(…)");
	/* the method alone too wide: its start, cut at the end */
	expect_fit("outer_ns::inner_ns::K<…>::alloc_thing(…)", 10, "…alloc_th…");
	/* `::` inside template arguments is no component's end */
	expect_fit("f<a::b::c>", 6, "f<a::…");
	expect_fit("grab", 0, "");
	/* a turbofish stays with its function */
	expect_fit("hashbrown::raw::RawTable<…>::reserve_rehash::<…>", 30, "hashbrow…::reserve_rehash::<…>");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rust_v0),
		cmocka_unit_test(test_rust_legacy),
		cmocka_unit_test(test_cplusplus),
		cmocka_unit_test(test_plain_names),
		cmocka_unit_test(test_fit_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
