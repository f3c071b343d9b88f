/* cargo-sftrace's build (cargo_sftrace.h): the crate as `cargo metadata`
 * describes it, the toolchain check, the build with XRay sleds into
 * TARGET/sftrace/, and the executables taken from cargo's JSON messages. */
#include "cargo/cargo_sftrace.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/json_in.h"
#include "lib/util.h"

/* The profile cargo-sftrace defines on the command line when the crate has
 * no `profiling` profile: release code generation plus line tables. */
static const char *const default_profile_config[] = {
	"profile.sftrace.inherits=\"release\"",
	"profile.sftrace.debug=\"line-tables-only\"",
};

static const char *cargo_cmd(void)
{
	const char *c = getenv("CARGO"); /* set by cargo for its subcommands: the same toolchain */
	return c && *c ? c : "cargo";
}

static const char *kind_word(enum cs_kind k)
{
	switch (k) {
	case CK_BENCH: return "bench";
	case CK_TEST: return "test";
	case CK_BIN: return "bin";
	case CK_EXAMPLE: return "example";
	case CK_LIB_TESTS: return "lib";
	case CK_CDYLIB: return "cdylib";
	default: return "";
	}
}

/* Cargo.toml in dir or a parent of it, malloc'd; NULL if none. */
static char *find_manifest(void)
{
	char dir[PATH_MAX];
	if (!getcwd(dir, sizeof(dir)))
		return NULL;
	for (;;) {
		char path[PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s/Cargo.toml", dir);
		if (access(path, F_OK) == 0)
			return xstrdup(path);
		char *slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return NULL;
		*slash = 0;
	}
}

static int is_lib_kind(const char *k)
{
	static const char *const libs[] = {"lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro"};
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strcmp(k, libs[i]))
			return 1;
	return 0;
}

/* Does target t (a cargo metadata or artifact "target") answer selector k
 * named name? */
static int target_matches(const struct jv *t, enum cs_kind k, const char *name)
{
	const struct jv *kinds = jv_get(t, "kind");
	const char *tname = jv_str(jv_get(t, "name"));
	switch (k) {
	case CK_BENCH:
	case CK_TEST:
	case CK_BIN:
	case CK_EXAMPLE:
		return jv_has_str(kinds, kind_word(k)) && tname && !strcmp(tname, name);
	case CK_LIB_TESTS:
		for (size_t i = 0; i < jv_len(kinds); i++)
			if (is_lib_kind(jv_str(jv_at(kinds, i)) ? jv_str(jv_at(kinds, i)) : ""))
				return 1;
		return 0;
	case CK_CDYLIB:
		return jv_has_str(jv_get(t, "crate_types"), "cdylib");
	default:
		return 1;
	}
}

/* "bench targets: a, b" for the message naming a missing one. */
static void list_targets(const struct jv *pkgs, const struct cs_options *o, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < jv_len(pkgs); i++) {
		const struct jv *ts = jv_get(jv_at(pkgs, i), "targets");
		for (size_t j = 0; j < jv_len(ts); j++) {
			const struct jv *t = jv_at(ts, j);
			if (!jv_has_str(jv_get(t, "kind"), kind_word(o->kind)))
				continue;
			int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", jv_str(jv_get(t, "name")));
			if (n < 0 || (size_t)n >= len - used)
				return;
			used += (size_t)n;
		}
	}
}

static void run_env_add(struct cs_package *cp, const char *name, const char *value)
{
	strv_push(&cp->run_env, name);
	strv_push(&cp->run_env, value ? value : "");
}

/* The variables cargo sets for a test or bench it runs (cargo's documented
 * run-time environment): the package's metadata, empty when absent. */
static void package_run_env(const struct jv *p, struct cs_package *cp)
{
	static const char *const fields[][2] = {
		{"CARGO_PKG_DESCRIPTION", "description"}, {"CARGO_PKG_HOMEPAGE", "homepage"},
		{"CARGO_PKG_REPOSITORY", "repository"},   {"CARGO_PKG_LICENSE", "license"},
		{"CARGO_PKG_LICENSE_FILE", "license_file"}, {"CARGO_PKG_RUST_VERSION", "rust_version"},
		{"CARGO_PKG_README", "readme"},
	};
	char *dir = xstrdup(cp->manifest_path), *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = 0;
	run_env_add(cp, "CARGO_MANIFEST_DIR", dir);
	run_env_add(cp, "CARGO_MANIFEST_PATH", cp->manifest_path);
	run_env_add(cp, "CARGO_PKG_NAME", cp->name);
	run_env_add(cp, "CARGO_PKG_VERSION", cp->version);
	/* MAJOR.MINOR.PATCH[-PRE][+BUILD] */
	char *v = xstrdup(cp->version), *pre = strchr(v, '-'), *plus = strchr(v, '+');
	if (plus)
		*plus = 0;
	if (pre)
		*pre++ = 0;
	char *minor = strchr(v, '.'), *patch = minor ? strchr(minor + 1, '.') : NULL;
	if (minor)
		*minor++ = 0;
	if (patch)
		*patch++ = 0;
	run_env_add(cp, "CARGO_PKG_VERSION_MAJOR", v);
	run_env_add(cp, "CARGO_PKG_VERSION_MINOR", minor);
	run_env_add(cp, "CARGO_PKG_VERSION_PATCH", patch);
	run_env_add(cp, "CARGO_PKG_VERSION_PRE", pre);
	free(v);
	char authors[2048] = "";
	const struct jv *a = jv_get(p, "authors");
	for (size_t i = 0, used = 0; i < jv_len(a) && used < sizeof(authors); i++) {
		const char *s = jv_str(jv_at(a, i));
		int n = snprintf(authors + used, sizeof(authors) - used, "%s%s", i ? ":" : "", s ? s : "");
		used += n > 0 ? (size_t)n : 0;
	}
	run_env_add(cp, "CARGO_PKG_AUTHORS", authors);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		run_env_add(cp, fields[i][0], jv_str(jv_get(p, fields[i][1])));
	free(dir);
}

/* The workspace members of a metadata document (the -p one only, if given). */
static int keep_members(const struct cs_options *o, const struct jv *meta, struct cs_crate *c, struct jv *members)
{
	const struct jv *pkgs = jv_get(meta, "packages");
	const struct jv *ids = jv_get(meta, "workspace_members");
	members->type = JV_ARRAY;
	c->pkgs = xcalloc(jv_len(pkgs) + 1, sizeof(*c->pkgs));
	for (size_t i = 0; i < jv_len(pkgs); i++) {
		const struct jv *p = jv_at(pkgs, i);
		const char *id = jv_str(jv_get(p, "id")), *name = jv_str(jv_get(p, "name"));
		if (!id || !name || !jv_has_str(ids, id))
			continue;
		struct cs_package *cp = &c->pkgs[c->npkgs++];
		cp->name = xstrdup(name);
		cp->id = xstrdup(id);
		cp->version = xstrdup(jv_str(jv_get(p, "version")) ? jv_str(jv_get(p, "version")) : "");
		cp->manifest_path = xstrdup(jv_str(jv_get(p, "manifest_path")) ? jv_str(jv_get(p, "manifest_path")) : "");
		package_run_env(p, cp);
		const struct jv *ts = jv_get(p, "targets");
		for (size_t j = 0; j < jv_len(ts); j++)
			if (jv_has_str(jv_get(jv_at(ts, j), "kind"), "lib") && jv_true(jv_get(jv_at(ts, j), "doctest")))
				c->has_lib_doctests = 1;
		if (o->package && strcmp(o->package, name))
			continue;
		/* A shallow view: the items stay owned by meta. */
		members->items = xrealloc(members->items, (members->n + 1) * sizeof(*members->items));
		members->items[members->n++] = *p;
	}
	if (o->package && !members->n) {
		cs_error("no package '%s' in the workspace of %s", o->package, c->workspace_root);
		return -1;
	}
	return 0;
}

/* The selector's target exists among the members. */
static int check_target(const struct cs_options *o, const struct jv *members, const char *manifest)
{
	if (o->kind == CK_NONE)
		return 0;
	for (size_t i = 0; i < jv_len(members); i++) {
		const struct jv *ts = jv_get(jv_at(members, i), "targets");
		for (size_t j = 0; j < jv_len(ts); j++)
			if (target_matches(jv_at(ts, j), o->kind, o->name))
				return 0;
	}
	char have[1024];
	list_targets(members, o, have, sizeof(have));
	if (o->kind == CK_LIB_TESTS || o->kind == CK_CDYLIB)
		cs_error("%s has no %s target", manifest, o->kind == CK_CDYLIB ? "cdylib (crate-type = [\"cdylib\"])" : "lib");
	else
		cs_error("no %s target named '%s' in %s (%s targets: %s)", kind_word(o->kind), o->name, manifest,
			 kind_word(o->kind), have[0] ? have : "none");
	return -1;
}

int cs_load_crate(const struct cs_options *o, struct cs_crate *c)
{
	char *manifest = o->manifest_path ? xstrdup(o->manifest_path) : find_manifest();
	if (!manifest || access(manifest, F_OK) < 0) {
		char cwd[PATH_MAX];
		if (o->manifest_path)
			cs_error("%s: %s", o->manifest_path, strerror(errno));
		else
			cs_error("no Cargo.toml in %s or any parent directory", getcwd(cwd, sizeof(cwd)) ? cwd : ".");
		free(manifest);
		return -1;
	}
	struct strv argv = {0};
	strv_push(&argv, cargo_cmd());
	strv_push(&argv, "metadata");
	strv_push(&argv, "--no-deps");
	strv_push(&argv, "--format-version");
	strv_push(&argv, "1");
	strv_push(&argv, "--manifest-path");
	strv_push(&argv, manifest);
	char *out = NULL, err[128];
	int rc = spawn_capture(argv.v, NULL, 0, &out);
	strv_free(&argv);
	struct jv *meta = rc == 0 ? jv_parse(out, err, sizeof(err)) : NULL;
	free(out);
	if (!meta) {
		cs_error("cargo metadata failed on %s%s%s", manifest, rc == 0 ? ": " : " (its message is above)",
			 rc == 0 ? err : "");
		free(manifest);
		return -1;
	}
	const char *td = jv_str(jv_get(meta, "target_directory")), *root = jv_str(jv_get(meta, "workspace_root"));
	if (o->target_dir) {
		/* Absolute: the traced programs run in their package's directory. */
		if (mkdir(o->target_dir, 0777) < 0 && errno != EEXIST) {
			cs_error("--target-dir %s: %s", o->target_dir, strerror(errno));
			jv_free(meta);
			free(manifest);
			return -1;
		}
		c->target_dir = realpath(o->target_dir, NULL);
	}
	if (!c->target_dir)
		c->target_dir = xstrdup(td ? td : "target");
	c->workspace_root = xstrdup(root ? root : ".");
	if (asprintf(&c->sftrace_dir, "%s/sftrace", c->target_dir) < 0)
		c->sftrace_dir = NULL;
	struct jv members = {0};
	rc = keep_members(o, meta, c, &members);
	if (rc == 0)
		rc = check_target(o, &members, manifest);
	free(members.items);
	jv_free(meta);
	free(manifest);
	return rc;
}

/* --- the toolchain ---------------------------------------------------- */

static const char *rustc_cmd(void)
{
	const char *r = getenv("RUSTC"); /* cargo builds with it too */
	return r && *r ? r : "rustc";
}

/* "1.95.0" from rustc -vV, malloc'd; NULL after a message. */
static char *rustc_release(void)
{
	char *const argv[] = {(char *)rustc_cmd(), "-vV", NULL};
	char *out = NULL;
	int rc = spawn_capture(argv, NULL, 1, &out);
	char *rel = rc == 0 ? strstr(out, "\nrelease: ") : NULL;
	if (!rel) {
		cs_error("cannot run %s -vV (is a Rust toolchain installed? rustup: https://rustup.rs)", rustc_cmd());
		free(out);
		return NULL;
	}
	rel += strlen("\nrelease: ");
	rel[strcspn(rel, "\r\n")] = 0;
	char *r = xstrdup(rel);
	free(out);
	return r;
}

/* Sets RUSTC_BOOTSTRAP=1 in env on a stable or beta toolchain (unless the
 * user chose a value), then checks that rustc takes the XRay flag. */
static int check_toolchain(struct strv *env)
{
	char *release = rustc_release();
	if (!release)
		return -1;
	int unstable = strstr(release, "-nightly") || strstr(release, "-dev");
	if (!unstable && !env_get(env, "RUSTC_BOOTSTRAP"))
		env_set(env, "RUSTC_BOOTSTRAP", "1");
	char *const argv[] = {(char *)rustc_cmd(), XRAY_FLAG, "--print", "sysroot", NULL};
	char *out = NULL;
	int rc = spawn_capture(argv, env->v, 1, &out);
	if (rc != 0) {
		out[strcspn(out, "\n")] = 0;
		const char *why = !strncmp(out, "error: ", 7) ? out + 7 : out;
		const char *boot = env_get(env, "RUSTC_BOOTSTRAP");
		cs_error("rustc %s (%s, RUSTC_BOOTSTRAP=%s) cannot take -Z flags: %s", release,
			 unstable ? "nightly" : "stable", boot ? boot : "unset", why[0] ? why : "it failed");
	}
	free(out);
	free(release);
	return rc == 0 ? 0 : -1;
}

/* Does this TOML file define a `profiling` profile, however it is
 * written: a [profile.profiling] table (or a sub-table of it), a
 * `profiling = {...}` or `profiling.KEY = ...` under [profile], or a
 * dotted `profile.profiling.KEY` at the top level? */
static int toml_has_profiling(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[1024], table[256] = "";
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");
		if (s[0] == '[') {
			/* The table's name without blanks or quotes: [ profile . "profiling" ] */
			size_t n = 0;
			for (char *p = s + 1; *p && *p != ']' && n + 1 < sizeof(table); p++)
				if (!strchr(" \t\"'", *p))
					table[n++] = *p;
			table[n] = 0;
			found = !strcmp(table, "profile.profiling") || !strncmp(table, "profile.profiling.", 18);
			continue;
		}
		const char *key = !strcmp(table, "profile") ? "profiling" : !table[0] ? "profile.profiling" : NULL;
		size_t kl = key ? strlen(key) : 0;
		found = key && !strncmp(s, key, kl) && strchr(" \t=.", s[kl]);
	}
	fclose(f);
	return found;
}

/* The crate's own `profiling` profile: in the workspace's root Cargo.toml
 * (where cargo reads profiles) or in a .cargo/config.toml cargo reads
 * (the working directory and its parents, then CARGO_HOME). */
static int has_profiling_profile(const struct cs_crate *c)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/Cargo.toml", c->workspace_root);
	if (toml_has_profiling(path))
		return 1;
	char dir[PATH_MAX];
	if (getcwd(dir, sizeof(dir))) {
		for (;;) {
			static const char *const names[] = {"config.toml", "config"};
			for (size_t i = 0; i < 2; i++) {
				snprintf(path, sizeof(path), "%s/.cargo/%s", dir, names[i]);
				if (toml_has_profiling(path))
					return 1;
			}
			char *slash = strrchr(dir, '/');
			if (!slash || slash == dir)
				break;
			*slash = 0;
		}
	}
	const char *home = getenv("CARGO_HOME"), *h = getenv("HOME");
	if (home && *home)
		snprintf(path, sizeof(path), "%s/config.toml", home);
	else
		snprintf(path, sizeof(path), "%s/.cargo/config.toml", h ? h : "");
	return toml_has_profiling(path);
}

/* --- the build -------------------------------------------------------- */

static struct jv *config_get(const struct cs_options *o, const struct strv *env, const char *key);

/* The directory of the config file that set env.NAME.value (a relative
 * value is relative to it: the directory holding .cargo/), from
 * `--show-origin`'s "KEY = VALUE # FILE". malloc'd, NULL if unknown. */
static char *env_origin_dir(const char *name)
{
	char *key = NULL, *out = NULL, *dir = NULL;
	if (asprintf(&key, "env.%s.value", name) < 0)
		return NULL;
	char *const args[] = {(char *)cargo_cmd(), "-Zunstable-options", "config", "get", "--format", "toml",
			      "--show-origin", key, NULL};
	struct strv e;
	env_init(&e);
	env_set(&e, "RUSTC_BOOTSTRAP", "1");
	const char *hash = NULL;
	if (spawn_capture(args, e.v, 0, &out) == 0 && out && (hash = strstr(out, " # "))) {
		dir = xstrdup(hash + 3);
		dir[strcspn(dir, "\n")] = 0;
		for (int up = 0; up < 2; up++) { /* DIR/.cargo/config.toml -> DIR */
			char *slash = strrchr(dir, '/');
			if (slash && slash != dir)
				*slash = 0;
		}
	}
	free(out);
	free(key);
	strv_free(&e);
	return dir;
}

/* The config's [env] table (cargo sets it for the programs it runs):
 * NAME = "v", or NAME = { value = "v", force = true, relative = true }. */
static void load_config_env(const struct cs_options *o, struct cs_crate *c, const struct strv *env)
{
	struct jv *t = config_get(o, env, "env");
	if (!t || t->type != JV_OBJECT) {
		jv_free(t);
		return;
	}
	for (size_t i = 0; i < t->n; i++) {
		const char *name = t->keys[i];
		const struct jv *v = &t->items[i];
		const char *value = jv_str(v) ? jv_str(v) : jv_str(jv_get(v, "value"));
		if (!name || !value)
			continue;
		char *path = NULL;
		if (jv_true(jv_get(v, "relative")) && value[0] != '/') {
			char *dir = env_origin_dir(name);
			if (dir && asprintf(&path, "%s/%s", dir, value) < 0)
				path = NULL;
			free(dir);
		}
		strv_push(&c->config_env, name);
		strv_push(&c->config_env, path ? path : value);
		strv_push(&c->config_env, jv_true(jv_get(v, "force")) ? "1" : "0");
		free(path);
	}
	jv_free(t);
}

/* The triple cargo builds for: --target's, else rustc's host. malloc'd. */
static char *build_triple(const struct cs_options *o)
{
	for (size_t i = 0; i + 1 < o->cargo_args.n; i++)
		if (!strcmp(o->cargo_args.v[i], "--target"))
			return xstrdup(o->cargo_args.v[i + 1]);
	char *const argv[] = {(char *)rustc_cmd(), "-vV", NULL};
	char *out = NULL, *host = NULL;
	if (spawn_capture(argv, NULL, 0, &out) == 0 && (host = strstr(out, "\nhost: "))) {
		host += strlen("\nhost: ");
		host[strcspn(host, "\r\n")] = 0;
		host = xstrdup(host);
	}
	free(out);
	return host;
}

/* A config value as cargo resolves it (files, CARGO_* variables, the
 * user's --config), through `cargo config get` (unstable: the build sets
 * RUSTC_BOOTSTRAP=1 anyway). Parsed JSON, or NULL when unset. */
static struct jv *config_get(const struct cs_options *o, const struct strv *env, const char *key)
{
	struct strv argv = {0};
	strv_push(&argv, cargo_cmd());
	strv_push(&argv, "-Zunstable-options");
	strv_push(&argv, "config");
	strv_push(&argv, "get");
	strv_push(&argv, "--format");
	strv_push(&argv, "json-value");
	for (size_t i = 0; i + 1 < o->cargo_args.n; i++)
		if (!strcmp(o->cargo_args.v[i], "--config")) {
			strv_push(&argv, "--config");
			strv_push(&argv, o->cargo_args.v[i + 1]);
		}
	strv_push(&argv, key);
	char *out = NULL, err[128];
	struct strv e;
	env_init(&e);
	for (size_t i = 0; i < env->n; i++) {
		char *eq = strchr(env->v[i], '=');
		if (eq) {
			*eq = 0;
			env_set(&e, env->v[i], eq + 1);
			*eq = '=';
		}
	}
	env_set(&e, "RUSTC_BOOTSTRAP", "1");
	/* stderr captured too: "not set" is an answer, not the user's concern.
	 * The value is the last line (after any warning of cargo's). */
	int rc = spawn_capture(argv.v, e.v, 1, &out);
	char *last = NULL;
	if (rc == 0 && out) {
		size_t n = strlen(out);
		while (n && out[n - 1] == '\n')
			out[--n] = 0;
		last = strrchr(out, '\n');
		last = last ? last + 1 : out;
	}
	struct jv *v = last ? jv_parse(last, err, sizeof(err)) : NULL;
	free(out);
	strv_free(&argv);
	strv_free(&e);
	return v;
}

/* The user's config rustflags (target.TRIPLE.rustflags, which cargo takes
 * over build.rustflags, or build.rustflags; a string or an array) plus the
 * XRay flag, as CARGO_ENCODED_RUSTFLAGS: a --config array would be dropped
 * under a per-target value and cannot merge into a string. 1 when set. */
static int config_rustflags(const struct cs_options *o, struct strv *env)
{
	char *triple = build_triple(o), *key = NULL;
	struct jv *v = NULL;
	if (triple && asprintf(&key, "target.%s.rustflags", triple) >= 0)
		v = config_get(o, env, key);
	if (!v)
		v = config_get(o, env, "build.rustflags");
	free(key);
	free(triple);
	if (!v)
		return 0;
	struct strv flags = {0};
	if (v->type == JV_ARRAY) {
		for (size_t i = 0; i < jv_len(v); i++)
			if (jv_str(jv_at(v, i)))
				strv_push(&flags, jv_str(jv_at(v, i)));
	} else if (jv_str(v)) {
		char *copy = xstrdup(jv_str(v)), *save = NULL;
		for (char *t = strtok_r(copy, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
			strv_push(&flags, t);
		free(copy);
	}
	jv_free(v);
	strv_push(&flags, XRAY_FLAG);
	size_t len = 1;
	for (size_t i = 0; i < flags.n; i++)
		len += strlen(flags.v[i]) + 1;
	char *enc = xcalloc(len, 1);
	for (size_t i = 0; i < flags.n; i++)
		strcat(strcat(enc, i ? "\x1f" : ""), flags.v[i]);
	env_set(env, "CARGO_ENCODED_RUSTFLAGS", enc);
	free(enc);
	strv_free(&flags);
	return 1;
}

/* The cargo command: `bench --no-run`, `test --no-run` or `build`, with the
 * profile, the XRay flag and the selector. */
static void build_argv(const struct cs_options *o, const struct cs_crate *c, struct strv *env, struct strv *argv)
{
	strv_push(argv, cargo_cmd());
	if (o->kind == CK_BENCH)
		strv_push(argv, "bench");
	else if (o->kind == CK_TEST || o->kind == CK_LIB_TESTS || o->mode == CS_TEST)
		strv_push(argv, "test");
	else
		strv_push(argv, "build");
	if (strcmp(argv->v[1], "build"))
		strv_push(argv, "--no-run");
	strv_push(argv, "--message-format=json-render-diagnostics");
	/* cargo's stderr comes through a pipe: keep its colours on a terminal. */
	if (isatty(STDERR_FILENO) && !getenv("CARGO_TERM_COLOR"))
		strv_push(argv, "--color=always");
	if (!o->profile) {
		strv_push(argv, "--profile");
		if (has_profiling_profile(c)) {
			strv_push(argv, "profiling");
		} else {
			strv_push(argv, "sftrace");
			for (size_t i = 0; i < sizeof(default_profile_config) / sizeof(default_profile_config[0]); i++) {
				strv_push(argv, "--config");
				strv_push(argv, default_profile_config[i]);
			}
		}
	}
	/* RUSTFLAGS in the environment replaces every rustflags of the config
	 * files: then add to it. Otherwise --config adds to the config files'
	 * build.rustflags (arrays merge) and keeps them. */
	const char *rf = env_get(env, "RUSTFLAGS"), *erf = env_get(env, "CARGO_ENCODED_RUSTFLAGS");
	if (erf) {
		char *v;
		if (asprintf(&v, "%s%s%s", erf, *erf ? "\x1f" : "", XRAY_FLAG) >= 0)
			env_set(env, "CARGO_ENCODED_RUSTFLAGS", v), free(v);
	} else if (rf) {
		char *v;
		if (asprintf(&v, "%s %s", rf, XRAY_FLAG) >= 0)
			env_set(env, "RUSTFLAGS", v), free(v);
	} else if (!config_rustflags(o, env)) {
		/* No rustflags in the config: --config adds the flag. */
		strv_push(argv, "--config");
		strv_push(argv, "build.rustflags=[\"" XRAY_FLAG "\"]");
	}
	switch (o->kind) {
	case CK_BENCH: strv_push(argv, "--bench"); strv_push(argv, o->name); break;
	case CK_TEST: strv_push(argv, "--test"); strv_push(argv, o->name); break;
	case CK_BIN: strv_push(argv, "--bin"); strv_push(argv, o->name); break;
	case CK_EXAMPLE: strv_push(argv, "--example"); strv_push(argv, o->name); break;
	case CK_LIB_TESTS:
	case CK_CDYLIB: strv_push(argv, "--lib"); break;
	default: break;
	}
	for (size_t i = 0; i < o->cargo_args.n; i++)
		strv_push(argv, o->cargo_args.v[i]);
}

struct build_state {
	const struct cs_options *o;
	struct cs_crate *c;
	struct strv failed; /* packages cargo could not compile */
};

static const struct cs_package *member(const struct cs_crate *c, const char *id)
{
	for (size_t i = 0; id && i < c->npkgs; i++)
		if (!strcmp(c->pkgs[i].id, id))
			return &c->pkgs[i];
	return NULL;
}

/* The .so of a cdylib artifact, else its executable. */
static const char *artifact_path(const struct jv *msg, int cdylib)
{
	if (!cdylib)
		return jv_str(jv_get(msg, "executable"));
	const struct jv *files = jv_get(msg, "filenames");
	for (size_t i = 0; i < jv_len(files); i++) {
		const char *f = jv_str(jv_at(files, i));
		size_t n = f ? strlen(f) : 0;
		if (n > 3 && !strcmp(f + n - 3, ".so"))
			return f;
	}
	return NULL;
}

/* Is this artifact one the mode and selector ask for? */
static int wanted(const struct cs_options *o, const struct jv *msg, const struct jv *target)
{
	int test = jv_true(jv_get(jv_get(msg, "profile"), "test"));
	if (o->mode == CS_TEST)
		return test;
	if (o->kind == CK_LIB_TESTS)
		return test && target_matches(target, CK_LIB_TESTS, NULL);
	return target_matches(target, o->kind, o->name);
}

static void add_artifact(struct build_state *st, const struct jv *msg)
{
	const struct jv *target = jv_get(msg, "target");
	const char *path = artifact_path(msg, st->o->kind == CK_CDYLIB);
	if (!path || !wanted(st->o, msg, target))
		return;
	struct cs_crate *c = st->c;
	c->arts = xrealloc(c->arts, (c->narts + 1) * sizeof(*c->arts));
	struct cs_artifact *a = &c->arts[c->narts++];
	const char *kind = jv_str(jv_at(jv_get(target, "kind"), 0));
	const char *name = jv_str(jv_get(target, "name"));
	const char *mp = jv_str(jv_get(msg, "manifest_path"));
	a->path = xstrdup(path);
	a->target_name = xstrdup(name ? name : "unnamed");
	a->kind = xstrdup(!kind ? "bin" : is_lib_kind(kind) ? "lib" : kind);
	a->manifest_path = xstrdup(mp ? mp : "");
	a->pkg = member(c, jv_str(jv_get(msg, "package_id")));
	if (asprintf(&a->label, "%s-%s", a->kind, a->target_name) < 0)
		a->label = xstrdup(a->target_name);
	for (size_t i = 0; i + 1 < c->narts; i++) /* two packages' targets of one name */
		if (!strcmp(c->arts[i].label, a->label)) {
			free(a->label);
			if (asprintf(&a->label, "%s-%s-%zu", a->kind, a->target_name, c->narts) < 0)
				a->label = xstrdup(a->target_name);
		}
}

/* A build script's rustc-link-search directories inside the target
 * directory: cargo puts them on LD_LIBRARY_PATH when it runs the tests, so
 * a .so a -sys crate built into OUT_DIR loads. */
static void add_native_dirs(struct cs_crate *c, const struct jv *msg)
{
	const struct jv *paths = jv_get(msg, "linked_paths");
	size_t tlen = strlen(c->sftrace_dir);
	for (size_t i = 0; i < jv_len(paths); i++) {
		const char *p = jv_str(jv_at(paths, i)), *eq = p ? strchr(p, '=') : NULL;
		const char *dir = eq && strncmp(p, "/", 1) ? eq + 1 : p;
		if (dir && !strncmp(dir, c->sftrace_dir, tlen) && dir[tlen] == '/')
			strv_push(&c->native_dirs, dir);
	}
}

static void on_json(void *ctx, char *line)
{
	struct build_state *st = ctx;
	char err[128];
	struct jv *msg = line[0] == '{' ? jv_parse(line, err, sizeof(err)) : NULL;
	if (!msg) {
		/* Not one of cargo's messages: a build script's or cargo's own text. */
		fprintf(stderr, "%s\n", line);
		return;
	}
	const char *reason = jv_str(jv_get(msg, "reason"));
	if (reason && !strcmp(reason, "compiler-artifact"))
		add_artifact(st, msg);
	else if (reason && !strcmp(reason, "build-script-executed"))
		add_native_dirs(st->c, msg);
	jv_free(msg);
}

/* The package named in `error: could not compile `NAME` ...` or `failed to
 * run custom build command for `NAME vX (...)``: cargo's own lines, the only
 * place that names a crate whose compiler crashed. */
static void on_stderr(void *ctx, char *line)
{
	struct build_state *st = ctx;
	fprintf(stderr, "%s\n", line);
	/* The words without colours (--color=always on a terminal). */
	char plain[1024];
	size_t n = 0;
	for (const char *s = line; *s && n + 1 < sizeof(plain); s++) {
		if (*s == '\x1b') {
			s += strcspn(s, "m");
			if (!*s)
				break;
			continue;
		}
		plain[n++] = *s;
	}
	plain[n] = 0;
	static const char *const marks[] = {"could not compile `", "failed to run custom build command for `"};
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		const char *p = strstr(plain, marks[i]);
		if (!p || strncmp(plain, "error", 5))
			continue;
		p += strlen(marks[i]);
		size_t len = strcspn(p, "` ");
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(len < 255 ? len : 255), p);
		strv_push(&st->failed, name);
	}
}

static int is_member_name(const struct cs_crate *c, const char *name)
{
	for (size_t i = 0; i < c->npkgs; i++)
		if (!strcmp(c->pkgs[i].name, name))
			return 1;
	return 0;
}

/* One line on why the build failed: a dependency (that built before sleds,
 * in the user's own builds), or the crate itself. */
static void build_failed(const struct build_state *st, int rc)
{
	for (size_t i = 0; i < st->failed.n; i++)
		if (!is_member_name(st->c, st->failed.v[i])) {
			cs_error("dependency '%s' failed to build with XRay sleds (" XRAY_FLAG "); cargo's errors are "
				 "above", st->failed.v[i]);
			return;
		}
	if (rc < 0)
		cs_error("could not run cargo");
	else
		cs_error("the build failed (cargo exited %d; its errors are above)", rc);
}

static void print_command(const struct strv *env, const struct strv *argv)
{
	static const char *const shown[] = {"RUSTC_BOOTSTRAP", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_TARGET_DIR"};
	fprintf(stderr, "cargo-sftrace: building:");
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
		const char *v = env_get(env, shown[i]);
		if (v && (getenv(shown[i]) == NULL || strcmp(getenv(shown[i]), v))) {
			/* CARGO_ENCODED_RUSTFLAGS's separator shown as bash reads it. */
			int us = strchr(v, '\x1f') != NULL;
			fprintf(stderr, " %s=%s'", shown[i], us ? "$" : "");
			for (const char *p = v; *p; p++)
				fputs(*p == '\x1f' ? "\\x1f" : *p == '\'' ? (us ? "\\'" : "'\\''") : (char[2]){*p, 0}, stderr);
			fputc('\'', stderr);
		}
	}
	for (size_t i = 0; i < argv->n; i++) {
		char q[PATH_MAX * 4 + 8];
		fprintf(stderr, " %s", i ? cs_shq(argv->v[i], q, sizeof(q)) : "cargo");
	}
	fputc('\n', stderr);
}

int cs_build(const struct cs_options *o, struct cs_crate *c)
{
	struct strv env, argv = {0};
	env_init(&env);
	if (check_toolchain(&env) < 0) {
		strv_free(&env);
		return -1;
	}
	env_set(&env, "CARGO_TARGET_DIR", c->sftrace_dir);
	load_config_env(o, c, &env);
	build_argv(o, c, &env, &argv);
	print_command(&env, &argv);
	struct build_state st = {.o = o, .c = c};
	int rc = spawn_lines(argv.v, env.v, on_json, on_stderr, &st);
	if (rc != 0)
		build_failed(&st, rc);
	else if (!c->narts)
		cs_error("cargo built no %s%s%s%s", o->mode == CS_TEST ? "test binary" : kind_word(o->kind),
			 o->kind == CK_CDYLIB ? " library (.so)" : o->mode == CS_TEST ? "" : " executable",
			 o->name ? " " : "", o->name ? o->name : "");
	strv_free(&st.failed);
	strv_free(&argv);
	strv_free(&env);
	return rc == 0 && c->narts ? 0 : -1;
}

void cs_crate_free(struct cs_crate *c)
{
	for (size_t i = 0; i < c->npkgs; i++) {
		free(c->pkgs[i].name);
		free(c->pkgs[i].version);
		free(c->pkgs[i].manifest_path);
		free(c->pkgs[i].id);
		strv_free(&c->pkgs[i].run_env);
	}
	strv_free(&c->native_dirs);
	strv_free(&c->config_env);
	for (size_t i = 0; i < c->narts; i++) {
		free(c->arts[i].path);
		free(c->arts[i].target_name);
		free(c->arts[i].label);
		free(c->arts[i].kind);
		free(c->arts[i].manifest_path);
	}
	free(c->pkgs);
	free(c->arts);
	free(c->target_dir);
	free(c->sftrace_dir);
	free(c->workspace_root);
}
