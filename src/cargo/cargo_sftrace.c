/* cargo-sftrace: entry point and options (cargo_sftrace.h). Cargo runs
 * `cargo-sftrace sftrace ARGS...` for `cargo sftrace ARGS...`. */
#include "cargo/cargo_sftrace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/text_esc.h"

static void message(const char *prefix, const char *fmt, va_list ap)
{
	char buf[4096];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "cargo-sftrace: %s", prefix);
	sf_esc_put(stderr, buf, NULL);
	fputc('\n', stderr);
}

void cs_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message("error: ", fmt, ap);
	va_end(ap);
}

void cs_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message("", fmt, ap);
	va_end(ap);
}

/* Every option, declared once: the parser and --help both read this table. */
enum opt_to { TO_SELF, TO_CARGO, TO_RECORD, TO_BOTH };
struct opt {
	const char *lng;
	char shrt;
	int has_arg;
	enum opt_to to;
	const char *record_name; /* TO_RECORD: the name record takes (NULL: lng) */
	const char *help;
};

static const struct opt opts[] = {
	{"--bench", 0, 1, TO_SELF, NULL, "trace a bench target (program arguments default to --bench --profile-time 1, or --bench for libtest's harness)"},
	{"--test", 0, 1, TO_SELF, NULL, "trace an integration test target"},
	{"--bin", 0, 1, TO_SELF, NULL, "trace a binary target"},
	{"--example", 0, 1, TO_SELF, NULL, "trace an example target"},
	{"--lib-tests", 0, 0, TO_SELF, NULL, "trace the library's unit tests"},
	{"--cdylib", 0, 0, TO_SELF, NULL, "build: the library's cdylib (a napi-rs .node addon)"},
	{"--out", 0, 1, TO_SELF, NULL, "build: copy the executable or cdylib to FILE (e.g. index.linux-x64-gnu.node)"},
	{"--trace-dir", 0, 1, TO_SELF, NULL, "write the trace there (default target/sftrace/traces/NAME-DATE)"},
	{"--no-convert", 0, 0, TO_SELF, NULL, "record only: no Parquet or Perfetto files, no report"},
	{"--help", 'h', 0, TO_SELF, NULL, "this help"},
	{"--package", 'p', 1, TO_CARGO, NULL, "cargo: the package to build"},
	{"--features", 'F', 1, TO_CARGO, NULL, "cargo: features to enable"},
	{"--all-features", 0, 0, TO_CARGO, NULL, "cargo"},
	{"--no-default-features", 0, 0, TO_CARGO, NULL, "cargo"},
	{"--manifest-path", 0, 1, TO_CARGO, NULL, "cargo: the crate's Cargo.toml"},
	{"--profile", 0, 1, TO_CARGO, NULL, "cargo: build with this profile (default: profiling if the crate has one)"},
	{"--release", 0, 0, TO_CARGO, NULL, "cargo: build with the release profile (no line tables unless it has them)"},
	{"--target-dir", 0, 1, TO_SELF, NULL, "cargo: the target directory (cargo-sftrace builds into DIR/sftrace)"},
	{"--workspace", 0, 0, TO_CARGO, NULL, "cargo: every workspace member"},
	{"--exclude", 0, 1, TO_CARGO, NULL, "cargo: with --workspace, leave out a package"},
	{"--lib", 0, 0, TO_CARGO, NULL, "cargo (test): only the library's unit tests"},
	{"--tests", 0, 0, TO_CARGO, NULL, "cargo (test): every test target"},
	{"--no-fail-fast", 0, 0, TO_CARGO, NULL, "cargo (test): run every test binary after a failure"},
	{"--target", 0, 1, TO_CARGO, NULL, "cargo: the target triple"},
	{"--jobs", 'j', 1, TO_CARGO, NULL, "cargo"},
	{"--config", 0, 1, TO_CARGO, NULL, "cargo: KEY=VALUE or a file"},
	{"--locked", 0, 0, TO_CARGO, NULL, "cargo"},
	{"--offline", 0, 0, TO_CARGO, NULL, "cargo"},
	{"--frozen", 0, 0, TO_CARGO, NULL, "cargo"},
	{"--verbose", 'v', 0, TO_CARGO, NULL, "cargo"},
	{"--filter-regex", 'r', 1, TO_RECORD, NULL, "record: functions whose demangled name matches RE, in every object"},
	{"--filter", 'f', 1, TO_RECORD, NULL, "record: the functions of a filter file or directory"},
	{"--within", 0, 0, TO_RECORD, NULL, "record: everything under a selected function"},
	{"--alloc", 0, 0, TO_RECORD, NULL, "record: malloc and free too (sftrace memory)"},
	{"--ring", 0, 1, TO_RECORD, NULL, "record: keep each thread's newest SIZE of events"},
	{"--ring-signal", 0, 1, TO_RECORD, NULL, "record"},
	{"--trigger", 0, 1, TO_RECORD, NULL, "record: with --ring, snapshot on FUNC or 'FUNC>DUR'"},
	{"--trigger-object", 0, 1, TO_RECORD, NULL, "record"},
	{"--max-snapshots", 0, 1, TO_RECORD, NULL, "record"},
	{"--min-duration", 0, 1, TO_RECORD, NULL, "record: leave out calls shorter than DUR"},
	{"--max-depth", 0, 1, TO_RECORD, NULL, "record: leave out calls deeper than N"},
	{"--max-size", 0, 1, TO_RECORD, NULL, "record: stop recording at SIZE of logs"},
	{"--clock", 0, 1, TO_RECORD, NULL, "record"},
	{"--writer", 0, 1, TO_RECORD, NULL, "record"},
	{"--quiet", 'q', 0, TO_BOTH, NULL, "cargo and record: less output"},
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: cargo sftrace [--bench NAME | --test NAME | --bin NAME | --example NAME | --lib-tests]\n"
		"                     [cargo build options] [record options] [-- PROGRAM ARGS]\n"
		"       cargo sftrace test [FILTER] [cargo build options] [record options] [-- TEST ARGS]\n"
		"       cargo sftrace build [--cdylib | --bench NAME | ...] [--out FILE] [cargo build options]\n\n"
		"Builds the target with XRay sleds (-Zinstrument-xray=always; RUSTC_BOOTSTRAP=1 on a\n"
		"stable toolchain) into target/sftrace/, so the normal target/ stays cached, with the\n"
		"crate's `profiling` profile or else release code generation plus line tables;\n"
		"runs it under `sftrace record`, writes Parquet and Perfetto files next to the log\n"
		"in target/sftrace/traces/NAME-DATE/, and prints the top functions. `test` traces\n"
		"every test binary (doctests are not traced); `build` prints the paths it built.\n\n"
		"options:\n");
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		char left[64];
		snprintf(left, sizeof(left), "%s%c%s%s%s", opts[i].shrt ? "-" : "  ", opts[i].shrt ? opts[i].shrt : ' ',
			 opts[i].shrt ? ", " : "  ", opts[i].lng, opts[i].has_arg ? " ARG" : "");
		fprintf(out, "  %-28s %s\n", left, opts[i].help);
	}
	fprintf(out, "\nThe exit status is the traced program's (101 when a test binary of `test` fails, as\n"
		     "cargo test; it stops at the first unless --no-fail-fast), or 1 on\n"
		     "an error of cargo-sftrace's own (no Cargo.toml, no such target, a build failure).\n");
}

static const struct opt *find_opt(const char *arg, const char **value)
{
	*value = NULL;
	if (arg[0] == '-' && arg[1] != '-' && arg[1]) {
		for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
			if (opts[i].shrt == arg[1]) {
				if (arg[2])
					*value = arg + 2; /* -rRE, -j2 */
				return arg[2] && !opts[i].has_arg ? NULL : &opts[i];
			}
		return NULL;
	}
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strlen(opts[i].lng) == len && !strncmp(opts[i].lng, arg, len)) {
			if (eq)
				*value = eq + 1;
			return eq && !opts[i].has_arg ? NULL : &opts[i];
		}
	return NULL;
}

static int set_kind(struct cs_options *o, enum cs_kind k, const char *name, const char *opt)
{
	if (o->kind != CK_NONE) {
		cs_error("%s: one target at a time (--bench, --test, --bin, --example, --lib-tests, --cdylib)", opt);
		return -1;
	}
	o->kind = k;
	o->name = name;
	return 0;
}

static int take_self(struct cs_options *o, const struct opt *op, const char *v)
{
	const char *n = op->lng;
	if (!strcmp(n, "--bench"))
		return set_kind(o, CK_BENCH, v, n);
	if (!strcmp(n, "--test"))
		return set_kind(o, CK_TEST, v, n);
	if (!strcmp(n, "--bin"))
		return set_kind(o, CK_BIN, v, n);
	if (!strcmp(n, "--example"))
		return set_kind(o, CK_EXAMPLE, v, n);
	if (!strcmp(n, "--lib-tests"))
		return set_kind(o, CK_LIB_TESTS, NULL, n);
	if (!strcmp(n, "--cdylib"))
		return set_kind(o, CK_CDYLIB, NULL, n);
	if (!strcmp(n, "--out"))
		o->out = v;
	else if (!strcmp(n, "--target-dir"))
		o->target_dir = v;
	else if (!strcmp(n, "--trace-dir"))
		o->trace_dir = v;
	else if (!strcmp(n, "--no-convert"))
		o->no_convert = 1;
	return 0;
}

static void take_passed(struct cs_options *o, const struct opt *op, const char *v)
{
	if (op->to == TO_CARGO || op->to == TO_BOTH) {
		strv_push(&o->cargo_args, op->lng);
		if (v)
			strv_push(&o->cargo_args, v);
	}
	if (op->to == TO_RECORD || op->to == TO_BOTH) {
		strv_push(&o->record_args, op->record_name ? op->record_name : op->lng);
		if (v)
			strv_push(&o->record_args, v);
	}
	if (!strcmp(op->lng, "--manifest-path"))
		o->manifest_path = v;
	else if (!strcmp(op->lng, "--profile"))
		o->profile = v;
	else if (!strcmp(op->lng, "--release"))
		o->profile = "release";
	else if (!strcmp(op->lng, "--no-fail-fast"))
		o->no_fail_fast = 1;
	else if (!strcmp(op->lng, "--package"))
		o->package = v;
}

/* Options of argv[i..]; -1 after a message, 1 for --help, else 0. */
static int parse(struct cs_options *o, int argc, char **argv, int i)
{
	for (; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--")) {
			o->have_prog_args = 1;
			for (i++; i < argc; i++)
				strv_push(&o->prog_args, argv[i]);
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (o->mode == CS_TEST && !o->test_filter) {
				o->test_filter = a;
				continue;
			}
			cs_error("unexpected argument '%s' (program arguments go after --; try --help)", a);
			return -1;
		}
		const struct opt *op = find_opt(a, &v);
		if (!op) {
			cs_error("unknown option '%s' (try --help)", a);
			return -1;
		}
		if (op->has_arg && !v) {
			if (i + 1 >= argc) {
				cs_error("%s needs a value", a);
				return -1;
			}
			v = argv[++i];
		}
		if (!strcmp(op->lng, "--help"))
			return 1;
		if (op->to == TO_SELF) {
			if (take_self(o, op, v) < 0)
				return -1;
		} else {
			take_passed(o, op, v);
		}
	}
	return 0;
}

/* What the mode and the selector allow together. */
static int check_options(const struct cs_options *o)
{
	if (o->mode == CS_RUN && o->kind == CK_NONE) {
		cs_error("say what to trace: --bench NAME, --test NAME, --bin NAME, --example NAME or --lib-tests "
			 "(or `cargo sftrace test` for every test binary)");
		return -1;
	}
	if (o->kind == CK_CDYLIB && o->mode != CS_BUILD) {
		cs_error("--cdylib builds a library: use `cargo sftrace build --cdylib`, then record the program "
			 "that loads it (sftrace record -- node ...)");
		return -1;
	}
	if (o->mode == CS_TEST && o->kind != CK_NONE) {
		cs_error("`cargo sftrace test` traces every test binary: for one, use --test NAME or --lib-tests");
		return -1;
	}
	if (o->mode == CS_BUILD && (o->kind == CK_NONE || o->kind == CK_LIB_TESTS) && o->out) {
		cs_error("--out copies one executable or cdylib: name it (--cdylib, --bench NAME, ...)");
		return -1;
	}
	if (o->mode != CS_BUILD && o->out) {
		cs_error("--out is for `cargo sftrace build`");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cs_options o = {.mode = CS_RUN};
	int i = 1;
	if (i < argc && !strcmp(argv[i], "sftrace"))
		i++; /* cargo's: `cargo sftrace X` runs `cargo-sftrace sftrace X` */
	if (i < argc && !strcmp(argv[i], "test"))
		o.mode = CS_TEST, i++;
	else if (i < argc && !strcmp(argv[i], "build"))
		o.mode = CS_BUILD, i++;
	int rc = parse(&o, argc, argv, i);
	if (rc > 0) {
		usage(stdout);
		return 0;
	}
	if (rc < 0 || check_options(&o) < 0)
		return 1;
	struct cs_crate c = {0};
	int status = 1;
	if (cs_load_crate(&o, &c) == 0 && cs_build(&o, &c) == 0)
		status = cs_trace(&o, &c);
	cs_crate_free(&c);
	strv_free(&o.cargo_args);
	strv_free(&o.record_args);
	strv_free(&o.prog_args);
	return status;
}
