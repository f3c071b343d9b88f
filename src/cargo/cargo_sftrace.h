/* cargo-sftrace: `cargo sftrace`, the Rust workflow in one command.
 *
 *   cargo_sftrace.c  options, then the three steps below
 *   cargo_build.c    the crate (cargo metadata), the toolchain check, the
 *                    build with XRay sleds into target/sftrace/, and the
 *                    executables cargo's JSON messages name
 *   cargo_trace.c    sftrace record of each executable, the conversions,
 *                    the report and the closing note
 *   spawn.c          running cargo, rustc and sftrace
 */
#ifndef SFTRACE_CARGO_SFTRACE_H
#define SFTRACE_CARGO_SFTRACE_H

#include "cargo/spawn.h"

#define XRAY_FLAG "-Zinstrument-xray=always"

/* What to build and trace. */
enum cs_mode {
	CS_RUN,   /* cargo sftrace --bench NAME ...: build, record one executable */
	CS_TEST,  /* cargo sftrace test [FILTER]: every test binary */
	CS_BUILD, /* cargo sftrace build ...: build only, print the paths */
};

/* The target selector (--bench NAME and the others). */
enum cs_kind { CK_NONE, CK_BENCH, CK_TEST, CK_BIN, CK_EXAMPLE, CK_LIB_TESTS, CK_CDYLIB };

struct cs_options {
	enum cs_mode mode;
	enum cs_kind kind;
	const char *name;          /* the target's name (CK_BENCH..CK_EXAMPLE) */
	const char *test_filter;   /* cargo sftrace test FILTER */
	const char *manifest_path; /* --manifest-path */
	const char *profile;       /* --profile (the user's choice) */
	const char *package;       /* -p (the user's choice) */
	const char *trace_dir;     /* --trace-dir */
	const char *out;           /* build --cdylib --out FILE */
	const char *target_dir;    /* --target-dir (builds go to DIR/sftrace) */
	int no_fail_fast;          /* test: run every binary after a failure */
	int no_convert;
	int have_prog_args;        /* "--" was given */
	struct strv cargo_args;    /* passed to cargo build/test/bench */
	struct strv record_args;   /* passed to sftrace record */
	struct strv prog_args;     /* after "--" */
};

/* One package of the workspace (cargo metadata). */
struct cs_package {
	char *name, *version, *manifest_path, *id;
	struct strv run_env; /* NAME, VALUE, ...: what cargo sets when it runs a test or bench */
};

/* One executable (or cdylib) cargo built. */
struct cs_artifact {
	char *path;        /* the executable, or the cdylib's .so */
	char *target_name; /* the target's name (resolver, importmap, ...) */
	char *label;       /* a file-name-safe name: bench-resolver, lib-importmap, ... */
	char *kind;        /* the target's first kind: lib, bin, test, bench, example, cdylib */
	char *manifest_path;
	const struct cs_package *pkg; /* NULL when not a workspace member */
};

struct cs_crate {
	char *target_dir;     /* the workspace's target directory */
	char *sftrace_dir;    /* TARGET/sftrace: ours */
	char *workspace_root;
	struct cs_package *pkgs;
	size_t npkgs;
	int has_lib_doctests; /* a member's lib has doctests (they are not traced) */
	struct cs_artifact *arts;
	size_t narts;
	struct strv native_dirs; /* build scripts' rustc-link-search dirs inside the target dir */
	struct strv config_env;  /* NAME, VALUE, "1" if forced, ...: the config's [env] */
};

/* "cargo-sftrace: error: ..." on stderr, one line. */
void cs_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cs_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* s as a POSIX shell reads it back (bare, or in single quotes), in buf. */
const char *cs_shq(const char *s, char *buf, size_t len);

/* cargo_build.c. Each returns 0, or prints one line and returns -1. */
int cs_load_crate(const struct cs_options *o, struct cs_crate *c);
int cs_build(const struct cs_options *o, struct cs_crate *c);
void cs_crate_free(struct cs_crate *c);

/* cargo_trace.c: records every artifact; the exit status to return. */
int cs_trace(const struct cs_options *o, const struct cs_crate *c);

#endif
