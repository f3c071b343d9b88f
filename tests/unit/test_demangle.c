/* sf_demangle: Rust v0, Rust legacy and C++ names as their users write them.
 * The expected strings are derived from the mangling grammars (noted per
 * case), not copied from the implementation's output. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/demangle.h"

static void expect(const char *mangled, const char *want)
{
	char *got = sf_demangle(mangled);

	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

/* v0: N v <path> <ident> = value in a namespace; C s<base62>_ <ident> = crate
 * root with disambiguator (not shown); instantiating-crate suffix ignored. */
static void test_rust_v0_paths(void **state)
{
	(void)state;
	expect("_RNvCs6GmmlP4bgsG_1r4main", "r::main");
	expect("_RNvNtCs1a_10serde_json2de8from_str", "serde_json::de::from_str");
	/* I <path> <args> E: generic args; Nt = type namespace, so the
	 * argument is the type app::Config. */
	expect("_RINvNtCs1a_10serde_json2de8from_strNtCs2b_3app6ConfigE",
	       "serde_json::de::from_str::<app::Config>");
	/* Same with the instantiating crate appended: not part of the name. */
	expect("_RINvNtCs1a_10serde_json2de8from_strNtCs2b_3app6ConfigECs2b_3app",
	       "serde_json::de::from_str::<app::Config>");
	/* LLVM's .llvm.<n> suffix (ThinLTO promotion) is not shown. */
	expect("_RNvCs123_3foo3bar.llvm.999", "foo::bar");
}

static void test_rust_v0_impls(void **state)
{
	(void)state;
	/* X = trait impl: impl path (s1_ disambiguator + alloc::raw_vec),
	 * self type RawVec<u8> (B5_ backrefs alloc::raw_vec, h = u8), trait
	 * core::ops::drop::Drop, then the method name. */
	expect("_RNvXs1_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVechENtNtNtCsgEmfK2I1SDS_"
	       "4core3ops4drop4Drop4dropCsduwmD7cSIQq_5gimli",
	       "<alloc::raw_vec::RawVec<u8> as core::ops::drop::Drop>::drop");
	/* NC ... 0 = closure #0 inside std::rt::lang_start::<()> (u = unit). */
	expect("_RNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0Cs6GmmlP4bgsG_1r",
	       "std::rt::lang_start::<()>::{closure#0}");
	/* M = inherent impl on RawTable<(u32, &str)> (T m Re E = tuple of
	 * u32 and &str; B5_ = the path at offset 6 after "_R", i.e.
	 * hashbrown::raw); method reserve_rehash; .llvm suffix dropped. */
	expect("_RNvMs6_NtCsgvbsrvnw3yD_9hashbrown3rawINtB5_8RawTableTmReEE14reserve_rehash"
	       ".llvm.13247167612540783456",
	       "<hashbrown::raw::RawTable<(u32, &str)>>::reserve_rehash");
}

/* Legacy: _ZN <len><ident>... 17h<16 hex> E; `..` is `::`, $LT$ $GT$ $C$
 * $u20$ are `<` `>` `,` and a space; the hash is not shown. */
static void test_rust_legacy(void **state)
{
	(void)state;
	expect("_ZN10serde_json2de8from_str17h0123456789abcdefE",
	       "serde_json::de::from_str");
	expect("_ZN1r4main17h086b0cfd890a8ea9E.llvm.123456", "r::main");
	expect("_ZN60_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..ops..Drop$GT$"
	       "4drop17h0123456789abcdefE",
	       "<alloc::vec::Vec<T> as core::ops::Drop>::drop");
	expect("_ZN79_$LT$hashbrown..raw..RawTable$LT$T$C$A$GT$$u20$as$u20$core..ops..drop.."
	       "Drop$GT$4drop17h74c3e174cfcffa33E",
	       "<hashbrown::raw::RawTable<T,A> as core::ops::drop::Drop>::drop");
	/* $u7b$ $u7d$ are braces. */
	expect("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E",
	       "std::rt::lang_start::{{closure}}");
	/* Upper-case hash digits: libiberty's Rust demangler refuses them and
	 * the C++ demangler answers with "::h<hash>"; rustc-demangle accepts
	 * any hex digit and hides the hash, so must we. */
	expect("_ZN3foo3bar17h0123456789ABCDEFE", "foo::bar");
	/* Not a hash ('g'): an ordinary C++ nested name, kept whole. */
	expect("_ZN3foo3bar17hg234567890abcdefE", "foo::bar::hg234567890abcdef");
}

static void test_cplusplus(void **state)
{
	(void)state;
	expect("_Z1fv", "f()");
	/* St = std::, SaIiE = std::allocator<int>, RKi = int const& */
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi",
	       "std::vector<int, std::allocator<int> >::push_back(int const&)");
	expect("_ZN9__gnu_cxx13new_allocatorIcED2Ev",
	       "__gnu_cxx::new_allocator<char>::~new_allocator()");
	expect("_Z3fooi.cold", "foo(int) [clone .cold]");
	/* A nested name without the Rust hash stays C++ (no parameters). */
	expect("_ZN3foo3barE", "foo::bar");
}

/* A function template over 400 nested class templates (clang's mangling
 * of g((Deep<400>::type*)0)): past libiberty's recursion limit, so
 * demangled again without it, as llvm-cxxfilt does (3,215 chars). */
static void test_deeply_nested_template(void **state)
{
	(void)state;
	static char m[4096];
	size_t n = 0;
	n += (size_t)sprintf(m + n, "_Z1gI1WI");
	for (int i = 0; i < 399; i++)
		n += (size_t)sprintf(m + n, "S0_I");
	m[n++] = 'i';
	for (int i = 0; i < 401; i++)
		m[n++] = 'E';
	strcpy(m + n, "iPT_");
	char *d = sf_demangle(m);
	assert_non_null(d);
	assert_int_equal(strlen(d), 3215);
	assert_memory_equal(d, "int g<W<W<W<", 12);
	assert_string_equal(d + strlen(d) - 5, "> >*)");
	free(d);
}

/* 200 flat template arguments (10,212 chars, skeptic28d): over the
 * 1,000 characters libiberty takes with its limits, and over the old
 * retry's one character per KiB of an 8 MiB stack; demangled on a thread
 * with a stack of its own, whatever the caller's. */
static char *flat_name(int n)
{
	char *m = malloc(64 * (size_t)n + 64);
	size_t k = (size_t)sprintf(m, "_Z3bigIJ");
	for (int i = 0; i < n; i++)
		k += (size_t)sprintf(m + k, "49LongTypeNameNumber%04d_abcdefghijklmnopqrstuvwxyz", i);
	strcpy(m + k, "EEii");
	return m;
}

static void *demangle_on(void *arg)
{
	return sf_demangle(arg);
}

/* sf_demangle from a thread with a 1 MiB stack: enough for the first,
 * limited try (names of at most about 1,000 characters: under 0.5 MiB),
 * not for the retry of any name below (1.3 MiB, or far more). */
static char *demangle_small_stack(const char *m)
{
	pthread_attr_t at;
	pthread_t t;
	void *d = NULL;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 1u << 20);
	assert_int_equal(pthread_create(&t, &at, demangle_on, (void *)m), 0);
	pthread_join(t, &d);
	pthread_attr_destroy(&at);
	return d;
}

static void test_long_flat_template(void **state)
{
	(void)state;
	char *m = flat_name(200);
	assert_int_equal(strlen(m), 10212);
	char *d = demangle_small_stack(m);
	assert_non_null(d);
	assert_int_equal(strlen(d), 10212); /* "int big<" ... ">(int)": 50 x 200 + ", " x 199 */
	assert_memory_equal(d, "int big<LongTypeNameNumber0000_", 31);
	assert_string_equal(d + strlen(d) - 7, "z>(int)");
	free(d);
	free(m);
}

/* Names that nest a level a character (pointers: 430-460 bytes of stack
 * a character) stay within their thread's stack: 1,000 demangled; past
 * what libiberty takes (3,000 levels) or UNLIMITED_MAX (64 Ki
 * characters) NULL, never a crash. */
static void test_hostile_depth(void **state)
{
	(void)state;
	static const size_t depth[] = {1000, 3000, 60000, 70000};
	for (size_t i = 0; i < sizeof(depth) / sizeof(depth[0]); i++) {
		char *m = malloc(depth[i] + 8);
		strcpy(m, "_Z1f");
		memset(m + 4, 'P', depth[i]);
		strcpy(m + 4 + depth[i], "i");
		char *d = demangle_small_stack(m);
		if (depth[i] == 1000) {
			assert_non_null(d);
			assert_int_equal(strlen(d), strlen("f(int)") + 1000);
		} else {
			assert_null(d);
		}
		free(d);
		free(m);
	}
}

static void test_not_mangled(void **state)
{
	(void)state;
	expect(NULL, NULL);
	expect("", NULL);
	expect("main", NULL);
	expect("fx_leaf.cold", NULL);
	expect("_R", NULL);
	expect("_Z", NULL);
	/* Legacy shape with a short hash is neither Rust nor valid C++. */
	expect("_ZN3foo3bar17h1234E", NULL);
}

/* Views that write their own parentheses drop the parameter list and a
 * member function's qualifiers: the values go where the list was. */
static void test_name_sans_params(void **state)
{
	(void)state;
	static const struct {
		const char *name, *mangled, *bare;
	} cases[] = {{"ns::f(int)", "_ZN2ns1fEi", "ns::f"},
		     {"ns::K::add(…) const", "_ZNK2ns1K3addEii", "ns::K::add"},
		     {"ns::K::get() const &&", "_ZNKO2ns1K3getEv", "ns::K::get"},
		     {"ns::tmax<…>(…)", "_ZN2ns4tmaxIiEET_S1_S1_", "ns::tmax<…>"},
		     {"f const", "f", "f const"},
		     {"ns::v const", "_ZN2ns1vE", "ns::v const"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = sf_name_sans_params(cases[i].name, cases[i].mangled);
		assert_int_equal(n, strlen(cases[i].bare));
		assert_memory_equal(cases[i].name, cases[i].bare, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rust_v0_paths),
		cmocka_unit_test(test_rust_v0_impls),
		cmocka_unit_test(test_rust_legacy),
		cmocka_unit_test(test_cplusplus),
		cmocka_unit_test(test_deeply_nested_template),
		cmocka_unit_test(test_long_flat_template),
		cmocka_unit_test(test_hostile_depth),
		cmocka_unit_test(test_not_mangled),
		cmocka_unit_test(test_name_sans_params),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
