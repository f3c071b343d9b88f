/* ff_parse: what the handlers receive for good files, and the message with
 * its line number for every kind of bad one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format/filter_file.h"

/* Every handler call, one line each, so a test compares one string. */
struct recorder {
	char log[4096];
	size_t len;
	const char *reject; /* "setting", "object" or "func": return -1 from it */
	int fill_err;       /* the rejecting handler writes its own message */
	char *err;
};

static void rec_add(struct recorder *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(r->log + r->len, sizeof(r->log) - r->len, fmt, ap);
	va_end(ap);
	r->len += (size_t)n;
}

static int rejects(struct recorder *r, const char *what)
{
	if (!r->reject || strcmp(r->reject, what))
		return 0;
	if (r->fill_err)
		snprintf(r->err, 256, "handler says no");
	return -1;
}

static int on_setting(void *ctx, const char *key, const char *value)
{
	struct recorder *r = ctx;
	rec_add(r, "set %s=%s\n", key, value);
	return rejects(r, "setting");
}

static int on_object(void *ctx, const char *bid, const char *path)
{
	struct recorder *r = ctx;
	rec_add(r, "object %s [%s]\n", bid, path);
	return rejects(r, "object");
}

static int on_func(void *ctx, uint64_t vaddr, const char *name)
{
	struct recorder *r = ctx;
	rec_add(r, "func %#llx [%s]\n", (unsigned long long)vaddr, name);
	return rejects(r, "func");
}

static const struct ff_handler handler = {on_setting, on_object, on_func};

/* Parses a copy of `text` in a buffer of exactly its length (no NUL after
 * it), so that ASan catches a read past the end. */
static int parse_len(const char *text, size_t len, struct recorder *r, char *err)
{
	char *buf = malloc(len ? len : 1);
	memcpy(buf, text, len);
	r->err = err;
	int rc = ff_parse(buf, len, &handler, r, err, 256);
	free(buf);
	return rc;
}

static int parse(const char *text, struct recorder *r, char *err)
{
	return parse_len(text, strlen(text), r, err);
}

static void test_good_file(void **state)
{
	(void)state;
	struct recorder r = {0};
	char err[256];
	int rc = parse("sftrace-filter 1\n"
		       "# made by: sftrace filter -p ./a -r x -o f\n"
		       "mode within\n"
		       "unlisted trace\n"
		       "\n"
		       "object 5f1cE9 /abs/path/to/my binary\n"
		       "0x1a2b0 my_crate::resolve\n"
		       "1A410\tmy_crate::normalize  \n"
		       "0x10\n"
		       "object - /lib/libx.so\n"
		       "0XFFFFFFFFFFFFFFFF std::vector<int>::push_back(int const&)\n",
		       &r, err);
	assert_int_equal(rc, 0);
	assert_string_equal(err, "");
	assert_string_equal(r.log, "set mode=within\n"
				   "set unlisted=trace\n"
				   "object 5f1cE9 [/abs/path/to/my binary]\n"
				   "func 0x1a2b0 [my_crate::resolve]\n"
				   "func 0x1a410 [my_crate::normalize]\n"
				   "func 0x10 []\n"
				   "object - [/lib/libx.so]\n"
				   "func 0xffffffffffffffff [std::vector<int>::push_back(int const&)]\n");
}

static void test_comments_and_blanks(void **state)
{
	(void)state;
	struct recorder r = {0};
	char err[256];
	int rc = parse("# leading comment\n"
		       "   \t\n"
		       "  sftrace-filter 1   # magic\n"
		       "mode select#x\n",
		       &r, err);
	/* '#' glued to a word is not a comment: "select#x" is a bad mode. */
	assert_int_equal(rc, -1);
	assert_string_equal(err, "line 4: mode must be 'select' or 'within'");

	memset(&r, 0, sizeof(r));
	rc = parse("# leading comment\n"
		   "   \t\n"
		   "  sftrace-filter 1   # magic\n"
		   "mode select # the default\n"
		   "#object - /not/an/object\n"
		   "object - /tmp/a#b/prog   # '#' inside a path is kept\n"
		   "0x40 crate::f::{closure#0} # and inside a name\n"
		   "# 0x50 commented_out\n",
		   &r, err);
	assert_int_equal(rc, 0);
	assert_string_equal(r.log, "set mode=select\n"
				   "object - [/tmp/a#b/prog]\n"
				   "func 0x40 [crate::f::{closure#0}]\n");
}

static void test_crlf_lines(void **state)
{
	(void)state;
	struct recorder r = {0};
	char err[256];
	int rc = parse("sftrace-filter 1\r\nunlisted skip\r\nobject ab /x y\r\n0x1 f\r\n", &r, err);
	assert_int_equal(rc, 0);
	assert_string_equal(r.log, "set unlisted=skip\nobject ab [/x y]\nfunc 0x1 [f]\n");
}

/* One bad file and the exact message it must produce. */
struct bad_case {
	const char *text;
	const char *err;
};

static const struct bad_case bad_cases[] = {
	{"", "line 1: empty filter file"},
	{"# only a comment\n\n", "line 1: empty filter file"},
	{"sftrace-filter 1", "line 1: missing newline at end of file"},
	{"sftrace-filter 1\nmode select\n0x1 f", "line 3: missing newline at end of file"},
	{"sftrace-filter 1\nmode select", "line 2: missing newline at end of file"},
	{"hello 1\n", "line 1: not an sftrace filter file (first line must be 'sftrace-filter 1')"},
	{"\n# c\nmode select\n", "line 3: not an sftrace filter file (first line must be 'sftrace-filter 1')"},
	{"sftrace-filter 2\n", "line 1: unsupported filter file version (this sftrace reads version 1)"},
	{"sftrace-filter\n", "line 1: unsupported filter file version (this sftrace reads version 1)"},
	{"sftrace-filter 1\nmode all\n", "line 2: mode must be 'select' or 'within'"},
	{"sftrace-filter 1\nmode\n", "line 2: mode must be 'select' or 'within'"},
	{"sftrace-filter 1\nunlisted maybe\n", "line 2: unlisted must be 'skip' or 'trace'"},
	{"sftrace-filter 1\n\nmode select now\n", "line 3: extra text after setting"},
	{"sftrace-filter 1\nobject\n", "line 2: expected 'object BUILD-ID PATH'"},
	{"sftrace-filter 1\nobject abcd\n", "line 2: expected 'object BUILD-ID PATH'"},
	{"sftrace-filter 1\nobject abc /x\n", "line 2: bad build-id (hex digits or '-')"},
	{"sftrace-filter 1\nobject zz /x\n", "line 2: bad build-id (hex digits or '-')"},
	{"sftrace-filter 1\n0x10 f\n", "line 2: function listed before any 'object' line"},
	{"sftrace-filter 1\nobject - /x\nresolve\n",
	 "line 3: expected a function address (hex), 'object', 'mode' or 'unlisted'"},
	{"sftrace-filter 1\nobject - /x\n0x\n",
	 "line 3: expected a function address (hex), 'object', 'mode' or 'unlisted'"},
	{"sftrace-filter 1\nobject - /x\n0x10000000000000000 f\n",
	 "line 3: expected a function address (hex), 'object', 'mode' or 'unlisted'"},
	{"sftrace-filter 1\nobject - /x\n0x12g f\n",
	 "line 3: expected a function address (hex), 'object', 'mode' or 'unlisted'"},
};

static void test_errors_with_line_numbers(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct recorder r = {0};
		char err[256];
		int rc = parse(bad_cases[i].text, &r, err);
		if (rc != -1 || strcmp(err, bad_cases[i].err) != 0)
			fail_msg("case %zu: rc %d, err \"%s\", want \"%s\"", i, rc, err, bad_cases[i].err);
	}
}

static void test_nul_byte(void **state)
{
	(void)state;
	static const char text[] = "sftrace-filter 1\nobject - /x\n0x1 f\0g\n";
	struct recorder r = {0};
	char err[256];
	assert_int_equal(parse_len(text, sizeof(text) - 1, &r, err), -1);
	assert_string_equal(err, "line 3: NUL byte in filter file");
	/* A NUL as the last byte of an unterminated last line. */
	static const char tail[] = "sftrace-filter 1\nobject - /x\0";
	memset(&r, 0, sizeof(r));
	assert_int_equal(parse_len(tail, sizeof(tail) - 1, &r, err), -1);
	assert_string_equal(err, "line 2: NUL byte in filter file");
}

static void test_handler_stops_parse(void **state)
{
	(void)state;
	static const char text[] = "sftrace-filter 1\nmode select\nobject - /x\n0x1 f\n0x2 g\n";
	struct recorder r = {.reject = "object"};
	char err[256];
	assert_int_equal(parse(text, &r, err), -1);
	assert_string_equal(err, "line 3: rejected object");
	assert_string_equal(r.log, "set mode=select\nobject - [/x]\n");

	memset(&r, 0, sizeof(r));
	r.reject = "func";
	assert_int_equal(parse(text, &r, err), -1);
	assert_string_equal(err, "line 4: rejected function");

	memset(&r, 0, sizeof(r));
	r.reject = "setting";
	assert_int_equal(parse(text, &r, err), -1);
	assert_string_equal(err, "line 2: rejected setting");

	/* The handler's own message wins. */
	memset(&r, 0, sizeof(r));
	r.reject = "func";
	r.fill_err = 1;
	assert_int_equal(parse(text, &r, err), -1);
	assert_string_equal(err, "handler says no");
}

static void test_null_handlers_and_no_err(void **state)
{
	(void)state;
	char text[] = "sftrace-filter 1\nmode within\nobject - /x\n0x1 f\n";
	struct ff_handler none = {0};
	assert_int_equal(ff_parse(text, strlen(text), &none, NULL, NULL, 0), 0);
	char bad[] = "nope\n";
	assert_int_equal(ff_parse(bad, strlen(bad), &none, NULL, NULL, 0), -1);
}

static void test_build_id_from_hex(void **state)
{
	(void)state;
	uint8_t out[4] = {0};
	assert_int_equal(ff_build_id_from_hex("-", out, sizeof(out)), 0);
	assert_int_equal(ff_build_id_from_hex("0aFf10", out, sizeof(out)), 3);
	assert_int_equal(out[0], 0x0a);
	assert_int_equal(out[1], 0xff);
	assert_int_equal(out[2], 0x10);
	assert_int_equal(ff_build_id_from_hex("01020304", out, sizeof(out)), 4);
	assert_int_equal(ff_build_id_from_hex("0102030405", out, sizeof(out)), -1);
	assert_int_equal(ff_build_id_from_hex("abc", out, sizeof(out)), -1);
	assert_int_equal(ff_build_id_from_hex("", out, sizeof(out)), -1);
	assert_int_equal(ff_build_id_from_hex("0g", out, sizeof(out)), -1);
	assert_int_equal(ff_build_id_from_hex("--", out, sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),
		cmocka_unit_test(test_comments_and_blanks),
		cmocka_unit_test(test_crlf_lines),
		cmocka_unit_test(test_errors_with_line_numbers),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_handler_stops_parse),
		cmocka_unit_test(test_null_handlers_and_no_err),
		cmocka_unit_test(test_build_id_from_hex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
