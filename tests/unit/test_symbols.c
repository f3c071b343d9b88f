/* Symbolization of real objects: fixtures under tests/fixtures/symbols/ are
 * compiled into a temporary directory (clang with XRay, as users build, and
 * rustc for v0 names), and lookups at addresses that `nm` reports must give
 * the exact names, files and declaration lines of the fixture sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/elf_buildid.h"
#include "lib/symbols.h"

#define FIXTURE_DIR "tests/fixtures/symbols"
/* The C fixture is linked with this build-id so that tests can name it. */
#define BUILD_ID_HEX "0102030405060708090a0b0c0d0e0f1011121314"

static char tmp[64];
static char c_exe[256], c_src[256], rs_exe[256], rs_src[256];
static int have_c, have_rust;

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* The fixture sources are found from the repository root (where `make unit`
 * runs), else next to this source file. */
static int find_fixture(const char *name, char *out, size_t outlen)
{
	const char *here = __FILE__, *slash = strrchr(here, '/');

	snprintf(out, outlen, "%s/%s", FIXTURE_DIR, name);
	if (access(out, R_OK) == 0)
		return 1;
	snprintf(out, outlen, "%.*s/../fixtures/symbols/%s",
		 slash ? (int)(slash - here) : 1, slash ? here : ".", name);
	return access(out, R_OK) == 0;
}

/* Copies a fixture into the temp dir so that its DWARF path is known. */
static int stage(const char *name, char *dst, size_t dstlen)
{
	char src[256];

	if (!find_fixture(name, src, sizeof(src))) {
		fprintf(stderr, "fixture %s not found (run from the repo root)\n", name);
		return 0;
	}
	snprintf(dst, dstlen, "%s/%s", tmp, name);
	return run("cp '%s' '%s'", src, dst) == 0;
}

static int build_c(void)
{
	if (run("clang --version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "SKIP C fixture: clang not found\n");
		return 0;
	}
	if (!stage("sym_fixture.c", c_src, sizeof(c_src)))
		return 0;
	snprintf(c_exe, sizeof(c_exe), "%s/sym_fixture", tmp);
	if (run("clang -g -O2 -fxray-instrument -fxray-instruction-threshold=1 "
		"-Wl,--build-id=0x" BUILD_ID_HEX " '%s' -o '%s'", c_src, c_exe) != 0)
		return 0;
	/* dl/: stripped, debug file next to it via .gnu_debuglink;
	 * dl2/: the same with the debug file in .debug/;
	 * bare/: stripped with no debug file anywhere. */
	return run("cd '%1$s' && mkdir -p dl dl2/.debug bare && "
		   "objcopy --only-keep-debug sym_fixture dl/sym_fixture.debug && "
		   "cd dl && objcopy --strip-all --add-gnu-debuglink=sym_fixture.debug "
		   "../sym_fixture sym_fixture && cd .. && "
		   "cp dl/sym_fixture dl2/ && cp dl/sym_fixture.debug dl2/.debug/ && "
		   "objcopy --strip-all sym_fixture bare/sym_fixture", tmp) == 0;
}

static int build_rust(void)
{
	if (run("rustc --version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "SKIP Rust fixture: rustc not found\n");
		return 0;
	}
	if (!stage("sym_fixture.rs", rs_src, sizeof(rs_src)))
		return 0;
	snprintf(rs_exe, sizeof(rs_exe), "%s/rs_fixture", tmp);
	/* opt-level 1: -O folds parse_num into main despite inline(never). */
	return run("RUSTC_BOOTSTRAP=1 rustc -g -C opt-level=1 -Zinstrument-xray=always "
		   "-C symbol-mangling-version=v0 --crate-name sym_fixture "
		   "'%s' -o '%s' 2>&1", rs_src, rs_exe) == 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/sftrace-test-symbols-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	have_c = build_c();
	have_rust = build_rust();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	run("rm -rf '%s'", tmp);
	return 0;
}

/* The address `nm` gives for a symbol whose name is `name` (exact) or, with
 * substr, contains every `|`-separated part of `name`. */
static uint64_t nm_lookup(const char *exe, const char *name, int substr)
{
	char cmd[512], line[4096], sym[4000], type;
	unsigned long long addr;
	uint64_t found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm '%s'", exe);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%llx %c %3999s", &addr, &type, sym) != 3)
			continue;
		if (substr) {
			char parts[256], *save = NULL, *tok;
			int all = 1;
			snprintf(parts, sizeof(parts), "%s", name);
			for (tok = strtok_r(parts, "|", &save); tok;
			     tok = strtok_r(NULL, "|", &save))
				all &= strstr(sym, tok) != NULL;
			if (!all)
				continue;
		} else if (strcmp(sym, name) != 0) {
			continue;
		}
		found = addr;
	}
	pclose(p);
	assert_true(found != 0);
	return found;
}

static void assert_sym(const struct sym_info *si, const char *name,
		       const char *mangled, const char *file, uint32_t line)
{
	assert_non_null(si);
	assert_string_equal(si->name, name);
	if (mangled)
		assert_string_equal(si->mangled, mangled);
	else
		assert_null(si->mangled);
	if (file)
		assert_string_equal(si->file, file);
	else
		assert_null(si->file);
	assert_int_equal(si->line, line);
}

static struct sym_object *open_ok(const char *path, const char *symbol_path)
{
	char err[512] = "";
	struct sym_object *o = sym_open(path, symbol_path, NULL, 0, 0, err, sizeof(err));

	if (!o)
		fail_msg("sym_open(%s): %s", path, err);
	return o;
}

#define NEED_C() do { if (!have_c) skip(); } while (0)

/* The fixture's functions, by name: what sym_lookup must say about them.
 * Lines are the declaration lines in tests/fixtures/symbols/sym_fixture.c. */
static const struct {
	const char *sym, *name;
	uint32_t line;
} c_funcs[] = {
	{ "fx_leaf", "fx_leaf", 5 },
	{ "fx_static", "fx_static", 7 },
	{ "fx_global_name", "fx_global_name", 13 },
	{ "fx_multi_line", "fx_multi_line", 17 }, /* the name's line, not the body's */
	{ "main", "main", 23 },
};

static void check_c_functions(struct sym_object *o, const char *exe_for_nm)
{
	for (size_t i = 0; i < sizeof(c_funcs) / sizeof(c_funcs[0]); i++) {
		uint64_t a = nm_lookup(exe_for_nm, c_funcs[i].sym, 0);
		assert_sym(sym_lookup(o, a), c_funcs[i].name, c_funcs[i].sym, c_src,
			   c_funcs[i].line);
	}
}

static void test_c_names_files_lines(void **state)
{
	struct sym_object *o;

	(void)state;
	NEED_C();
	o = open_ok(c_exe, NULL);
	check_c_functions(o, c_exe);
	sym_close(o);
}

/* Aliases: the global name over the local one, then the shorter name. */
static void test_c_aliases(void **state)
{
	struct sym_object *o;

	(void)state;
	NEED_C();
	o = open_ok(c_exe, NULL);
	assert_int_equal(nm_lookup(c_exe, "fx_leaf_alias", 0), nm_lookup(c_exe, "fx_leaf", 0));
	assert_string_equal(sym_lookup(o, nm_lookup(c_exe, "fx_leaf_alias", 0))->name, "fx_leaf");
	assert_int_equal(nm_lookup(c_exe, "fx_l", 0), nm_lookup(c_exe, "fx_global_name", 0));
	assert_string_equal(sym_lookup(o, nm_lookup(c_exe, "fx_l", 0))->name, "fx_global_name");
	sym_close(o);
}

/* An address inside a function: the containing symbol, and the line table
 * for the line (the body, between the declaration and the closing brace). */
static void test_c_inside_function(void **state)
{
	struct sym_object *o;
	const struct sym_info *si;
	uint64_t a;

	(void)state;
	NEED_C();
	o = open_ok(c_exe, NULL);
	a = nm_lookup(c_exe, "fx_multi_line", 0);
	si = sym_lookup(o, a + 12);
	assert_string_equal(si->name, "fx_multi_line");
	assert_string_equal(si->mangled, "fx_multi_line");
	assert_string_equal(si->file, c_src);
	assert_in_range(si->line, 17, 21);
	/* Cached: the same entry comes back. */
	assert_ptr_equal(sym_lookup(o, a + 12), si);
	sym_close(o);
}

static void test_c_placeholder(void **state)
{
	char bare[300], name[64];
	struct sym_object *o;
	uint64_t a;

	(void)state;
	NEED_C();
	/* Below the first function: no symbol contains it. */
	o = open_ok(c_exe, NULL);
	assert_sym(sym_lookup(o, 0x10), "sym_fixture+0x10", NULL, NULL, 0);
	sym_close(o);

	/* Stripped, no debug file: every function is a placeholder. */
	snprintf(bare, sizeof(bare), "%s/bare/sym_fixture", tmp);
	o = open_ok(bare, NULL);
	a = nm_lookup(c_exe, "fx_leaf", 0);
	snprintf(name, sizeof(name), "sym_fixture+0x%llx", (unsigned long long)a);
	assert_sym(sym_lookup(o, a), name, NULL, NULL, 0);
	sym_close(o);
}

/* Stripped objects whose .gnu_debuglink names a debug file next to them or
 * in .debug/ symbolize as the original did. */
static void test_c_debuglink(void **state)
{
	char path[300];
	struct sym_object *o;

	(void)state;
	NEED_C();
	snprintf(path, sizeof(path), "%s/dl/sym_fixture", tmp);
	o = open_ok(path, NULL);
	check_c_functions(o, c_exe);
	sym_close(o);

	snprintf(path, sizeof(path), "%s/dl2/sym_fixture", tmp);
	o = open_ok(path, NULL);
	check_c_functions(o, c_exe);
	sym_close(o);
}

/* symbol_path: a separate debug file given directly. Placeholders keep the
 * basename of the traced object's path. */
static void test_c_symbol_path(void **state)
{
	char debug[300];
	struct sym_object *o;

	(void)state;
	NEED_C();
	snprintf(debug, sizeof(debug), "%s/dl/sym_fixture.debug", tmp);
	o = open_ok("/somewhere/else/app", debug);
	check_c_functions(o, c_exe);
	assert_string_equal(sym_lookup(o, 0x10)->name, "app+0x10");
	sym_close(o);
}

static void test_c_build_id(void **state)
{
	static const uint8_t right[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
					 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };
	static const uint8_t wrong[] = { 0xde, 0xad, 0xbe, 0xef };
	char err[512], want[600], hex[2 * SF_BUILD_ID_MAX + 1];
	uint8_t id[SF_BUILD_ID_MAX];
	const uint8_t *got;
	struct sym_object *o;

	(void)state;
	NEED_C();
	assert_int_equal(sf_elf_build_id_path(c_exe, id, sizeof(id), err, sizeof(err)), 20);
	assert_string_equal(sf_build_id_hex(id, 20, hex, sizeof(hex)), BUILD_ID_HEX);
	/* A short buffer keeps whole bytes only. */
	assert_string_equal(sf_build_id_hex(id, 20, hex, 6), "0102");

	o = sym_open(c_exe, NULL, right, sizeof(right), 0, err, sizeof(err));
	assert_non_null(o);
	assert_int_equal(sym_build_id(o, &got), 20);
	assert_memory_equal(got, right, 20);
	sym_close(o);

	assert_null(sym_open(c_exe, NULL, wrong, sizeof(wrong), 0, err, sizeof(err)));
	snprintf(want, sizeof(want),
		 "%s: build-id mismatch: expected deadbeef, file has " BUILD_ID_HEX, c_exe);
	assert_string_equal(err, want);

	/* force: symbolize anyway. */
	o = sym_open(c_exe, NULL, wrong, sizeof(wrong), 1, err, sizeof(err));
	assert_non_null(o);
	sym_close(o);

	/* The separate debug file carries the same id. */
	snprintf(want, sizeof(want), "%s/dl/sym_fixture.debug", tmp);
	o = sym_open(c_exe, want, right, sizeof(right), 0, err, sizeof(err));
	assert_non_null(o);
	sym_close(o);
}

struct collected {
	size_t n, stop_after;
	uint64_t leaf;
	int seen_leaf, seen_alias, seen_cxx, sorted;
	uint64_t last;
};

static int collect(void *ctx, uint64_t vaddr, const char *mangled, const char *demangled)
{
	struct collected *c = ctx;

	c->sorted &= vaddr >= c->last;
	c->last = vaddr;
	/* C names are not mangled: both are the symbol. The XRay runtime
	 * linked in by clang brings C++ names, which are demangled. */
	if (strncmp(mangled, "fx_", 3) == 0)
		assert_string_equal(mangled, demangled);
	if (strcmp(mangled, "_ZN11__sanitizer18internal_allocatorEv") == 0) {
		assert_string_equal(demangled, "__sanitizer::internal_allocator()");
		c->seen_cxx = 1;
	}
	if (vaddr == c->leaf && strcmp(mangled, "fx_leaf") == 0)
		c->seen_leaf = (int)++c->n;
	else if (vaddr == c->leaf && strcmp(mangled, "fx_leaf_alias") == 0)
		c->seen_alias = (int)++c->n;
	else
		c->n++;
	return c->stop_after && c->n == c->stop_after ? 7 : 0;
}

static void test_c_foreach(void **state)
{
	struct collected c = { .sorted = 1 };
	struct sym_object *o;

	(void)state;
	NEED_C();
	o = open_ok(c_exe, NULL);
	c.leaf = nm_lookup(c_exe, "fx_leaf", 0);
	assert_int_equal(sym_foreach_function(o, collect, &c), 0);
	assert_true(c.sorted);
	/* Both aliases are listed, the preferred one first. */
	assert_true(c.seen_leaf > 0);
	assert_int_equal(c.seen_alias, c.seen_leaf + 1);
	assert_true(c.seen_cxx);

	memset(&c, 0, sizeof(c));
	c.sorted = 1;
	c.stop_after = 3;
	assert_int_equal(sym_foreach_function(o, collect, &c), 7);
	assert_int_equal(c.n, 3);
	sym_close(o);
}

static void expect_open_error(const char *path, const char *what)
{
	char err[512], want[600];

	assert_null(sym_open(path, NULL, NULL, 0, 0, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: %s", path, what);
	assert_string_equal(err, want);
}

static void test_open_errors(void **state)
{
	char path[300];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/missing", tmp);
	expect_open_error(path, "No such file or directory");
	expect_open_error(tmp, "is a directory");
	snprintf(path, sizeof(path), "%s/empty", tmp);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	expect_open_error(path, "not an ELF file");
	snprintf(path, sizeof(path), "%s/text", tmp);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\necho this is not an object file, but it is long enough\n", f);
	fclose(f);
	expect_open_error(path, "not an ELF file");
}

/* A truncated object must fail cleanly (or open with what it has), never
 * crash. */
static void test_truncated_object(void **state)
{
	char path[300], err[512];
	struct sym_object *o;

	(void)state;
	NEED_C();
	snprintf(path, sizeof(path), "%s/truncated", tmp);
	assert_int_equal(run("head -c 300 '%s' > '%s'", c_exe, path), 0);
	o = sym_open(path, NULL, NULL, 0, 0, err, sizeof(err));
	if (o) {
		assert_string_equal(sym_lookup(o, 0x1000)->name, "truncated+0x1000");
		sym_close(o);
	} else {
		assert_memory_equal(err, path, strlen(path));
	}
}

/* Rust v0 symbols demangled, with the declaration file and line. */
static void test_rust_v0(void **state)
{
	struct sym_object *o;
	uint64_t a;
	const struct sym_info *si;

	(void)state;
	if (!have_rust)
		skip();
	o = open_ok(rs_exe, NULL);

	a = nm_lookup(rs_exe, "_RNv|11sym_fixture9parse_num", 1);
	si = sym_lookup(o, a);
	assert_string_equal(si->name, "sym_fixture::parse_num");
	assert_memory_equal(si->mangled, "_RNv", 4);
	assert_string_equal(si->file, rs_src);
	assert_int_equal(si->line, 13);

	a = nm_lookup(rs_exe, "_RNv|11sym_fixture4main", 1);
	si = sym_lookup(o, a);
	assert_string_equal(si->name, "sym_fixture::main");
	assert_string_equal(si->file, rs_src);
	assert_int_equal(si->line, 17);

	a = nm_lookup(rs_exe, "7Wrapper|4Drop4drop", 1);
	si = sym_lookup(o, a);
	assert_string_equal(si->name,
			    "<sym_fixture::Wrapper<u32> as core::ops::drop::Drop>::drop");
	assert_string_equal(si->file, rs_src);
	assert_int_equal(si->line, 7);
	sym_close(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_c_names_files_lines),
		cmocka_unit_test(test_c_aliases),
		cmocka_unit_test(test_c_inside_function),
		cmocka_unit_test(test_c_placeholder),
		cmocka_unit_test(test_c_debuglink),
		cmocka_unit_test(test_c_symbol_path),
		cmocka_unit_test(test_c_build_id),
		cmocka_unit_test(test_c_foreach),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_truncated_object),
		cmocka_unit_test(test_rust_v0),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
