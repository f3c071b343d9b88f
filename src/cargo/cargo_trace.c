/* cargo-sftrace's recording (cargo_sftrace.h): sftrace record of each
 * executable cargo built, run as cargo would run it, then the conversions,
 * the report and the closing note; or, for `build`, the paths. */
#include "cargo/cargo_sftrace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/util.h"

/* The sftrace next to this executable (both are installed in one bin/
 * directory, and built into one build/ directory), else PATH's. */
static char *sftrace_cmd(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			strcpy(slash + 1, "sftrace");
			if (access(self, X_OK) == 0)
				return xstrdup(self);
		}
	}
	return xstrdup("sftrace");
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

/* TARGET/sftrace/traces/NAME-DATE (-2, -3... when two runs share a
 * second), created; or --trace-dir. malloc'd, NULL after a message. */
static char *make_trace_dir(const struct cs_options *o, const struct cs_crate *c)
{
	char *dir = NULL;
	if (o->trace_dir) {
		/* Absolute: the programs run in their package's directory. */
		if (mkdir_p(o->trace_dir) < 0 || !(dir = realpath(o->trace_dir, NULL))) {
			cs_error("%s: %s", o->trace_dir, strerror(errno));
			return NULL;
		}
		return dir;
	}
	char date[32], parent[PATH_MAX];
	time_t now = time(NULL);
	strftime(date, sizeof(date), "%Y%m%d-%H%M%S", localtime(&now));
	const char *name = o->mode == CS_TEST ? "test" : o->name ? o->name : c->arts[0].label;
	snprintf(parent, sizeof(parent), "%s/traces", c->sftrace_dir);
	if (mkdir_p(parent) < 0) {
		cs_error("%s: %s", parent, strerror(errno));
		return NULL;
	}
	for (int i = 1; i < 1000; i++) {
		free(dir);
		if (asprintf(&dir, i == 1 ? "%s/%s-%s" : "%s/%s-%s-%d", parent, name, date, i) < 0)
			return NULL;
		if (mkdir(dir, 0777) == 0)
			return dir;
		if (errno != EEXIST)
			break;
	}
	cs_error("%s: %s", dir, strerror(errno));
	free(dir);
	return NULL;
}

static char *dir_of(const char *path)
{
	char *d = xstrdup(path);
	char *slash = strrchr(d, '/');
	if (slash && slash != d)
		*slash = 0;
	return d;
}

/* What cargo gives a test or a bench it runs: the package's directory as
 * the working directory, the package's variables, and the build scripts'
 * native library directories on LD_LIBRARY_PATH. */
static void program_env(const struct cs_crate *c, const struct cs_artifact *a, struct strv *env)
{
	env_init(env);
	if (c->native_dirs.n) {
		const char *old = env_get(env, "LD_LIBRARY_PATH");
		size_t len = old ? strlen(old) + 1 : 1;
		for (size_t i = 0; i < c->native_dirs.n; i++)
			len += strlen(c->native_dirs.v[i]) + 1;
		char *v = xcalloc(len, 1);
		for (size_t i = 0; i < c->native_dirs.n; i++)
			strcat(strcat(v, i ? ":" : ""), c->native_dirs.v[i]);
		if (old && *old)
			strcat(strcat(v, ":"), old);
		env_set(env, "LD_LIBRARY_PATH", v);
		free(v);
	}
	/* The config's [env]: kept from the environment unless forced. */
	for (size_t i = 0; i + 2 < c->config_env.n; i += 3)
		if (!strcmp(c->config_env.v[i + 2], "1") || !env_get(env, c->config_env.v[i]))
			env_set(env, c->config_env.v[i], c->config_env.v[i + 1]);
	if (!a->pkg)
		return;
	for (size_t i = 0; i + 1 < a->pkg->run_env.n; i += 2)
		env_set(env, a->pkg->run_env.v[i], a->pkg->run_env.v[i + 1]);
}

/* Does the bench executable run libtest's harness? Cargo's metadata does
 * not say (no `harness` field), and libtest refuses criterion's
 * --profile-time ("Unrecognized option"); libtest's option table holds
 * "ensure-time" in the executable's data, stripped or not. */
static int libtest_harness(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int found = 0;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			found = memmem(m, (size_t)st.st_size, "ensure-time", 11) != NULL;
			munmap(m, (size_t)st.st_size);
		}
	}
	if (fd >= 0)
		close(fd);
	return found;
}

/* The program's arguments: the user's after --; a bench's profiling run
 * (--bench --profile-time 1 for a harness = false bench such as
 * criterion's, --bench alone for libtest's harness); `test`'s
 * filter. */
static void program_args(const struct cs_options *o, const struct cs_artifact *a, struct strv *argv)
{
	if (o->mode == CS_TEST && o->test_filter)
		strv_push(argv, o->test_filter);
	if (o->have_prog_args) {
		for (size_t i = 0; i < o->prog_args.n; i++)
			strv_push(argv, o->prog_args.v[i]);
	} else if (o->kind == CK_BENCH) {
		strv_push(argv, "--bench");
		if (!libtest_harness(a->path)) {
			strv_push(argv, "--profile-time");
			strv_push(argv, "1");
		}
	}
}

/* sftrace record of one artifact; its exit status. */
static int record_one(const struct cs_options *o, const struct cs_crate *c, const char *sftrace, const struct cs_artifact *a, const char *log)
{
	struct strv argv = {0}, env;
	strv_push(&argv, sftrace);
	strv_push(&argv, "record");
	strv_push(&argv, "-o");
	strv_push(&argv, log);
	for (size_t i = 0; i < o->record_args.n; i++)
		strv_push(&argv, o->record_args.v[i]);
	strv_push(&argv, "--");
	strv_push(&argv, a->path);
	size_t first_arg = argv.n;
	program_args(o, a, &argv);
	program_env(c, a, &env);
	fprintf(stderr, "cargo-sftrace: tracing %s %s:", a->kind, a->target_name);
	for (size_t i = first_arg - 1; i < argv.n; i++) {
		char q[PATH_MAX * 4 + 8];
		fprintf(stderr, " %s", cs_shq(argv.v[i], q, sizeof(q)));
	}
	fputc('\n', stderr);
	/* Tests and benches run where cargo runs them: the package's directory. */
	int runs_in_pkg = a->pkg && strcmp(a->kind, "bin") && strcmp(a->kind, "example");
	char *cwd = runs_in_pkg ? dir_of(a->pkg->manifest_path) : NULL;
	int rc = spawn_wait(argv.v, env.v, cwd);
	free(cwd);
	strv_free(&argv);
	strv_free(&env);
	return rc;
}

static int has_logs(const char *dir)
{
	DIR *d = opendir(dir);
	int found = 0;
	struct dirent *e;
	while (d && !found && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		found = n > 4 && !strcmp(e->d_name + n - 4, ".log");
	}
	if (d)
		closedir(d);
	return found;
}

static int run_sftrace(const char *sftrace, const char *a1, const char *a2, const char *a3, const char *a4,
		       const char *a5, const char *a6)
{
	char *const argv[] = {(char *)sftrace, (char *)a1, (char *)a2, (char *)a3, (char *)a4, (char *)a5,
			      (char *)a6, NULL};
	return spawn_wait(argv, NULL, NULL);
}

/* Parquet and Perfetto next to the logs, then the top functions. */
static int convert_and_report(const char *sftrace, const char *dir)
{
	char pola[PATH_MAX], pb[PATH_MAX];
	snprintf(pola, sizeof(pola), "%s/sf.pola", dir);
	snprintf(pb, sizeof(pb), "%s/sf.pb.gz", dir);
	printf("== sftrace convert: Parquet (polars) and Perfetto\n");
	if (run_sftrace(sftrace, "convert", "--type", "pola", dir, "-o", pola) != 0 ||
	    run_sftrace(sftrace, "convert", dir, "-o", pb, NULL, NULL) != 0) {
		cs_error("sftrace convert failed on %s (its message is above)", dir);
		return -1;
	}
	printf("== sftrace report: the top functions by self time\n");
	if (run_sftrace(sftrace, "report", "-n", "15", dir, NULL, NULL) != 0) {
		cs_error("sftrace report failed on %s (its message is above)", dir);
		return -1;
	}
	return 0;
}

/* s as a POSIX shell reads it back: bare when it has only safe
 * characters, else in single quotes (a ' as '\''). Into buf. */
const char *cs_shq(const char *s, char *buf, size_t len)
{
	if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == strlen(s)) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	size_t n = 0;
	buf[n++] = '\'';
	for (; *s && n + 6 < len; s++) {
		if (*s == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *s;
		}
	}
	buf[n++] = '\'';
	buf[n] = 0;
	return buf;
}

static void closing_note(const struct cs_options *o, const struct cs_crate *c, const char *dir)
{
	char q[PATH_MAX * 4 + 8], qpb[PATH_MAX * 4 + 16], pb[PATH_MAX + 16];
	snprintf(pb, sizeof(pb), "%s/sf.pb.gz", dir);
	cs_shq(dir, q, sizeof(q));
	cs_shq(pb, qpb, sizeof(qpb));
	printf("\nTrace files are in %s:\n", dir);
	if (!o->no_convert)
		printf("  *.log                    the raw logs: sftrace report %s / sftrace replay %s\n"
		       "  sf.pb.gz                 Perfetto: open it in https://ui.perfetto.dev, or for large traces\n"
		       "                           vizviewer --use_external_processor %s\n"
		       "  sf.pola, sf.pola.symtab  Parquet: polars  pl.scan_parquet(\"%s/sf.pola\").join(\n"
		       "                             pl.scan_parquet(\"%s/sf.pola.symtab\"), on=\"func_id\")\n"
		       "                           DuckDB  SELECT count(*) FROM '%s/sf.pola'\n",
		       q, q, qpb, dir, dir, dir);
	else
		printf("  *.log  the raw logs: sftrace report %s; sftrace convert %s -o %s\n", q, q, qpb);
	for (size_t i = 0; i < c->narts; i++)
		printf("The %s %s executable is %s\n", c->arts[i].kind, c->arts[i].target_name, c->arts[i].path);
	if (o->mode == CS_TEST && c->has_lib_doctests)
		printf("Doctests are not traced (rustdoc builds and runs them itself): `cargo test --doc` runs them.\n");
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, ok = 0;
	if (in >= 0)
		out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out >= 0) {
		char buf[1 << 16];
		ssize_t n;
		ok = 1;
		while (ok && (n = read(in, buf, sizeof(buf))) != 0)
			ok = n > 0 && write(out, buf, (size_t)n) == n;
		ok = close(out) == 0 && ok;
	}
	if (in >= 0)
		close(in);
	if (!ok) {
		cs_error("cannot copy %s to %s: %s", from, to, strerror(errno));
		unlink(to);
	}
	return ok ? 0 : -1;
}

/* `build`: the paths on stdout, one a line (for scripts). */
static int print_built(const struct cs_options *o, const struct cs_crate *c)
{
	if (o->out) {
		if (c->narts != 1) {
			cs_error("--out: cargo built %zu artifacts, not one", c->narts);
			return 1;
		}
		if (copy_file(c->arts[0].path, o->out) < 0)
			return 1;
		printf("%s\n", o->out);
	} else {
		for (size_t i = 0; i < c->narts; i++)
			printf("%s\n", c->arts[i].path);
	}
	if (o->kind == CK_CDYLIB)
		cs_note("trace what loads it: sftrace record --filter-regex '^<?%s::' -o trace/sf.log -- node app.js",
			c->arts[0].target_name);
	return 0;
}

static int kind_rank(const char *k)
{
	static const char *const order[] = {"lib", "bin", "test", "bench", "example"};
	for (int i = 0; i < 5; i++)
		if (!strcmp(k, order[i]))
			return i;
	return 5;
}

/* cargo test's order: by package, then the lib, bins, tests, benches, each
 * by name (cargo's JSON messages come in the order the builds end). */
static int cargo_order(const void *pa, const void *pb)
{
	const struct cs_artifact *a = pa, *b = pb;
	int d = strcmp(a->pkg ? a->pkg->name : "", b->pkg ? b->pkg->name : "");
	if (!d)
		d = kind_rank(a->kind) - kind_rank(b->kind);
	return d ? d : strcmp(a->target_name, b->target_name);
}

int cs_trace(const struct cs_options *o, const struct cs_crate *c)
{
	if (o->mode == CS_TEST && c->narts > 1)
		qsort(c->arts, c->narts, sizeof(*c->arts), cargo_order);
	if (o->mode == CS_BUILD)
		return print_built(o, c);
	char *dir = make_trace_dir(o, c);
	if (!dir)
		return 1;
	char *sftrace = sftrace_cmd();
	int status = 0, failed = 0;
	for (size_t i = 0; i < c->narts; i++) {
		char log[PATH_MAX];
		snprintf(log, sizeof(log), o->mode == CS_TEST ? "%s/%s.log" : "%s/sf.log", dir, c->arts[i].label);
		if (o->mode != CS_TEST)
			snprintf(log, sizeof(log), "%s/sf.log", dir);
		int rc = record_one(o, c, sftrace, &c->arts[i], log);
		if (rc != 0) {
			cs_note("%s %s exited %d", c->arts[i].kind, c->arts[i].target_name, rc);
			if (!status)
				status = rc;
			failed = 1;
			/* cargo test stops at the first failing binary, and exits 101. */
			if (o->mode == CS_TEST && !o->no_fail_fast)
				break;
		}
	}
	if (!has_logs(dir)) {
		cs_error("no log was written in %s (sftrace record's message above says why)", dir);
		status = status ? status : 1;
	} else if (!o->no_convert && convert_and_report(sftrace, dir) < 0) {
		status = status ? status : 1;
	} else {
		closing_note(o, c, dir);
	}
	free(sftrace);
	free(dir);
	/* cargo test exits 101 when a test binary fails, however it ended. */
	return o->mode == CS_TEST && failed ? 101 : status;
}
