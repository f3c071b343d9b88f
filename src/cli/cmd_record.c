/* sftrace record: run a command with the runtime preloaded, pass its exit
 * status through, and summarise the log(s) it wrote. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "format/xray_map.h"
#include "cli/solib.h"
#include "lib/log_reader.h"
#include "lib/util.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace record [OPTIONS] -- COMMAND [ARGS...]\n"
		"\n"
		"Runs COMMAND with the sftrace runtime preloaded and records the entry, exit\n"
		"and tail call of every XRay-instrumented function (build with clang\n"
		"-fxray-instrument or rustc -Zinstrument-xray=always), in every thread, in\n"
		"every process it starts (each writes its own log: FILE, then\n"
		"STEM.<pid>.EXT next to it).\n"
		"\n"
		"options:\n"
		"  -o, --output FILE         log file (default ./sf.log)\n"
		"  -f, --filter FILE         record only the functions in FILE (sftrace filter)\n"
		"      --filter-regex RE     build that filter for COMMAND's executable on the\n"
		"                            fly: functions whose name matches RE (PCRE2)\n"
		"      --within              with --filter-regex: record everything while a\n"
		"                            matching function is on the thread's stack\n"
		"      --alloc               also record malloc, free and the rest of the libc\n"
		"                            allocator family, with call sites (sftrace memory)\n"
		"      --force               replace FILE if it exists (default: refuse)\n"
		"      --clock tsc|monotonic timestamp source (default: tsc when invariant)\n"
		"      --writer auto|sync|thread\n"
		"                            who copies full buffers into the log: a writer\n"
		"                            thread while the traced threads leave a CPU idle,\n"
		"                            else the traced thread itself (auto, default);\n"
		"                            always the traced thread (sync); always the\n"
		"                            writer thread (thread)\n"
		"  -q, --quiet               no summary on stderr\n"
		"      --print-solib         print the runtime library record would use\n"
		"      --print-solib-install-dir\n"
		"                            print the per-user directory searched for it\n"
		"  -h, --help                this help\n"
		"\n"
		"The exit status is COMMAND's (128+N if it died by signal N).\n");
}

struct record_opts {
	int alloc; /* --alloc: preload libsftrace-alloc.so too */
	const char *output;
	const char *filter;
	const char *clock;
	const char *writer;
	const char *filter_regex;
	int force, quiet, within;
};

/* "dir/stem.ext" -> dir, stem and ext parts, as the runtime names logs. */
struct log_name {
	char dir[PATH_MAX];
	char stem[NAME_MAX + 1];
	char ext[NAME_MAX + 1];
};

static void split_name(const char *path, struct log_name *n)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (slash)
		snprintf(n->dir, sizeof(n->dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
	else
		snprintf(n->dir, sizeof(n->dir), ".");
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = base + strlen(base);
	snprintf(n->stem, sizeof(n->stem), "%.*s", (int)(dot - base), base);
	snprintf(n->ext, sizeof(n->ext), "%s", dot);
}

/* Whether `name` is STEM.<digits>[.<digits>]EXT: a log of another process. */
static int is_sibling_log(const struct log_name *n, const char *name)
{
	size_t ls = strlen(n->stem), le = strlen(n->ext), ln = strlen(name);
	if (ln <= ls + le + 1 || strncmp(name, n->stem, ls) != 0 || name[ls] != '.' ||
	    strcmp(name + ln - le, n->ext) != 0)
		return 0;
	int digits = 0;
	for (size_t i = ls + 1; i < ln - le; i++) {
		if (name[i] >= '0' && name[i] <= '9')
			digits++;
		else if (name[i] != '.' || !digits)
			return 0;
	}
	return digits > 0;
}

struct name_list {
	char **v;
	size_t n;
};

static void list_add(struct name_list *l, const char *s)
{
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = xstrdup(s);
}

static int list_has(const struct name_list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return 1;
	return 0;
}

static void list_free(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static void sibling_logs(const struct log_name *n, struct name_list *out)
{
	DIR *d = opendir(n->dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (is_sibling_log(n, e->d_name))
			list_add(out, e->d_name);
	closedir(d);
}

static int mkdir_p(const char *dir)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0777) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

/* Makes the output path absolute and its directory usable; checks that no
 * log is clobbered. */
static int prepare_output(const struct record_opts *o, char *abs, size_t cap)
{
	int len_out;
	if (o->output[0] == '/') {
		len_out = snprintf(abs, cap, "%s", o->output);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd))) {
			sf_error("cannot get the current directory: %s", strerror(errno));
			return -1;
		}
		len_out = snprintf(abs, cap, "%s/%s", cwd, o->output);
	}
	if (len_out < 0 || (size_t)len_out >= cap - 64) {
		sf_error("%s: path too long", o->output);
		return -1;
	}
	size_t len = strlen(abs);
	if (len == 0 || abs[len - 1] == '/') {
		sf_error("%s: the output must be a file name, not a directory", o->output);
		return -1;
	}
	struct log_name n;
	split_name(abs, &n);
	struct stat st;
	if (stat(n.dir, &st) < 0) {
		if (mkdir_p(n.dir) < 0) {
			sf_error("cannot create directory %s: %s", n.dir, strerror(errno));
			return -1;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		sf_error("%s: not a directory", n.dir);
		return -1;
	}
	if (access(n.dir, W_OK | X_OK) < 0) {
		sf_error("cannot write to directory %s: %s", n.dir, strerror(errno));
		return -1;
	}
	if (lstat(abs, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			sf_error("%s is a directory; give a file name such as %s/sf.log", o->output, o->output);
			return -1;
		}
		if (!o->force) {
			sf_error("%s exists; remove it or pass --force to replace it", o->output);
			return -1;
		}
		if (unlink(abs) < 0) {
			sf_error("cannot remove %s: %s", o->output, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static char *join_env(const char *name, const char *add)
{
	const char *old = getenv(name);
	size_t len = strlen(add) + (old ? strlen(old) + 1 : 0) + 1;
	char *v = xmalloc(len);
	if (old && old[0])
		snprintf(v, len, "%s:%s", old, add);
	else
		snprintf(v, len, "%s", add);
	return v;
}

/* The file execvp would run for cmd. 0, or -1 if there is none. */
static int resolve_command(const char *cmd, char *path, size_t cap)
{
	if (strchr(cmd, '/')) {
		snprintf(path, cap, "%s", cmd);
		return access(path, X_OK) == 0 ? 0 : -1;
	}
	for (const char *p = getenv("PATH"); p && *p;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		snprintf(path, cap, "%.*s/%s", (int)n, p, cmd);
		if (access(path, X_OK) == 0)
			return 0;
		p = colon ? colon + 1 : NULL;
	}
	return -1;
}

/* Whether the command (found like execvp finds it) has an XRay map. */
static int has_sleds(const char *cmd)
{
	char path[PATH_MAX];
	if (resolve_command(cmd, path, sizeof(path)) < 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct xray_section sec;
	int r = xray_find_section(fd, &sec);
	close(fd);
	return r == 1;
}

/* --filter-regex: `sftrace filter -p EXE -r RE [--within] -o TMP`, its
 * summary sent to stderr (stdout belongs to the command). The temporary
 * file lives until the command ends (its children read it too). */
static int build_filter(const struct record_opts *o, const char *cmd, char *tmp)
{
	char exe[PATH_MAX];
	if (resolve_command(cmd, exe, sizeof(exe)) < 0) {
		sf_error("--filter-regex: cannot find %s to build the filter from", cmd);
		return -1;
	}
	int fd = mkstemp(tmp);
	if (fd < 0) {
		sf_error("--filter-regex: cannot create a temporary file: %s", strerror(errno));
		return -1;
	}
	close(fd);
	char *args[] = {"filter", "-p", exe, "-r", (char *)o->filter_regex, "-o", tmp,
			o->within ? "--within" : NULL, NULL};
	int nargs = o->within ? 8 : 7;
	fflush(stdout);
	int saved = dup(1);
	dup2(2, 1);
	int rc = cmd_filter(nargs, args);
	fflush(stdout);
	if (saved >= 0) {
		dup2(saved, 1);
		close(saved);
	}
	if (rc != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int run_child(char **argv, pid_t *pid_out)
{
	pid_t pid = fork();
	if (pid < 0) {
		sf_error("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		int err = errno;
		fprintf(stderr, "sftrace: error: cannot run %s: %s\n", argv[0], strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	*pid_out = pid;
	return 0;
}

static void print_summary(const char *path, const char *shown)
{
	char err[512];
	struct lr_log *log = lr_open(path, err, sizeof(err));
	if (!log) {
		fprintf(stderr, "sftrace: %s: unreadable: %s\n", shown, err);
		return;
	}
	struct lr_summary s;
	lr_summary(log, &s);
	fprintf(stderr, "sftrace: wrote %s (pid %u): %llu events, %llu thread%s, %llu object%s", shown, s.pid,
		(unsigned long long)s.events, (unsigned long long)s.threads, s.threads == 1 ? "" : "s",
		(unsigned long long)s.objects, s.objects == 1 ? "" : "s");
	if (s.dropped)
		fprintf(stderr, ", %llu DROPPED (%llu failed writes, last: %s)", (unsigned long long)s.dropped,
			(unsigned long long)s.write_errors,
			lr_info(log)->last_errno ? strerror((int)lr_info(log)->last_errno) : "-");
	if (s.lost)
		fprintf(stderr, ", %llu lost", (unsigned long long)s.lost);
	fputc('\n', stderr);
	lr_close(log);
}

/* Lists and summarises every log this run wrote. Returns how many. */
static int summarise(const char *abs, const struct name_list *before, int quiet)
{
	struct log_name n;
	split_name(abs, &n);
	int count = 0;
	struct stat st;
	if (stat(abs, &st) == 0) {
		count++;
		if (!quiet)
			print_summary(abs, abs);
	}
	struct name_list after = {0};
	sibling_logs(&n, &after);
	for (size_t i = 0; i < after.n; i++) {
		if (list_has(before, after.v[i]))
			continue;
		char p[PATH_MAX * 2];
		snprintf(p, sizeof(p), "%s/%s", n.dir, after.v[i]);
		count++;
		if (!quiet)
			print_summary(p, p);
	}
	list_free(&after);
	return count;
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, 0, 'o'},
		{"filter", required_argument, 0, 'f'},
		{"force", no_argument, 0, 'F'},
		{"clock", required_argument, 0, 'c'},
		{"writer", required_argument, 0, 'W'},
		{"filter-regex", required_argument, 0, 'R'},
		{"within", no_argument, 0, 'I'},
		{"alloc", no_argument, 0, 'A'},
		{"quiet", no_argument, 0, 'q'},
		{"print-solib", no_argument, 0, 'P'},
		{"print-solib-install-dir", no_argument, 0, 'D'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	struct record_opts o = {.output = "sf.log"};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:f:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o.output = optarg; break;
		case 'f': o.filter = optarg; break;
		case 'F': o.force = 1; break;
		case 'c':
			if (strcmp(optarg, "tsc") && strcmp(optarg, "monotonic")) {
				sf_error("--clock must be tsc or monotonic, not '%s'", optarg);
				return 2;
			}
			o.clock = optarg;
			break;
		case 'W':
			if (strcmp(optarg, "auto") && strcmp(optarg, "sync") && strcmp(optarg, "thread")) {
				sf_error("--writer must be auto, sync or thread, not '%s'", optarg);
				return 2;
			}
			o.writer = optarg;
			break;
		case 'R': o.filter_regex = optarg; break;
		case 'I': o.within = 1; break;
		case 'A': o.alloc = 1; break;
		case 'q': o.quiet = 1; break;
		case 'P': {
			char lib[PATH_MAX], err[PATH_MAX * 2];
			if (sf_find_solib(lib, sizeof(lib), err, sizeof(err)) < 0) {
				sf_error("%s", err);
				return 1;
			}
			printf("%s\n", lib);
			return 0;
		}
		case 'D': {
			char dir[PATH_MAX];
			if (sf_solib_install_dir(dir, sizeof(dir)) < 0) {
				sf_error("cannot determine the per-user data directory (HOME is not set)");
				return 1;
			}
			printf("%s\n", dir);
			return 0;
		}
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "(sftrace record --help describes the options)\n");
			return 2;
		}
	}
	if (optind >= argc) {
		sf_error("no command given (usage: sftrace record [OPTIONS] -- COMMAND [ARGS...])");
		return 2;
	}
	char lib[PATH_MAX], err[PATH_MAX * 2];
	if (sf_find_solib(lib, sizeof(lib), err, sizeof(err)) < 0) {
		sf_error("%s", err);
		return 1;
	}
	char abs[PATH_MAX];
	if (prepare_output(&o, abs, sizeof(abs)) < 0)
		return 1;
	int cmd_at = optind; /* building a filter runs getopt again */
	char filter_tmp[] = "/tmp/sftrace-filter-XXXXXX";
	int have_tmp_filter = 0;
	if (o.filter_regex) {
		if (o.filter) {
			sf_error("give either -f FILTER or --filter-regex, not both");
			return 2;
		}
		if (build_filter(&o, argv[cmd_at], filter_tmp) < 0)
			return 1;
		have_tmp_filter = 1;
		o.filter = filter_tmp;
	} else if (o.within) {
		sf_error("--within goes with --filter-regex (or make the filter with sftrace filter --within)");
		return 2;
	}
	char filter_abs[PATH_MAX];
	if (o.filter) {
		if (!realpath(o.filter, filter_abs)) {
			sf_error("%s: %s", o.filter, strerror(errno));
			return 1;
		}
		if (sf_filter_check_file(filter_abs) < 0)
			return 1;
	}

	struct log_name n;
	split_name(abs, &n);
	struct name_list before = {0};
	sibling_logs(&n, &before);

	char libdir[PATH_MAX];
	snprintf(libdir, sizeof(libdir), "%s", lib);
	*strrchr(libdir, '/') = 0;
	char alloc_lib[PATH_MAX + 32];
	if (o.alloc) {
		/* libsftrace-alloc.so lives next to the runtime (src/alloc/interpose.c) */
		snprintf(alloc_lib, sizeof(alloc_lib), "%s/libsftrace-alloc.so", libdir);
		if (access(alloc_lib, R_OK) < 0) {
			sf_error("%s: %s (needed by --alloc)", alloc_lib, strerror(errno));
			return 1;
		}
		char *both = malloc(strlen(lib) + strlen(alloc_lib) + 2);
		sprintf(both, "%s:%s", lib, alloc_lib);
		snprintf(lib, sizeof(lib), "%s", both);
		free(both);
	}
	char *preload = join_env("LD_PRELOAD", lib);
	char *ldpath = join_env("LD_LIBRARY_PATH", libdir);
	setenv("LD_PRELOAD", preload, 1);
	setenv("LD_LIBRARY_PATH", ldpath, 1);
	setenv("SFTRACE_OUTPUT_FILE", abs, 1);
	if (o.filter)
		setenv("SFTRACE_FILTER", filter_abs, 1);
	else
		unsetenv("SFTRACE_FILTER");
	if (o.clock)
		setenv("SFTRACE_CLOCK", o.clock, 1);
	if (o.writer)
		setenv("SFTRACE_WRITER", o.writer, 1);
	free(preload);
	free(ldpath);

	/* The terminal's ^C goes to the command (same process group); we wait
	 * for it to finish and still report what it wrote. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	pid_t pid;
	if (run_child(argv + cmd_at, &pid) < 0)
		return 1;
	int status = 0;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			sf_error("waitpid: %s", strerror(errno));
			return 1;
		}
	}
	int rc;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		fprintf(stderr, "sftrace: %s was killed by signal %d (%s)%s\n", argv[cmd_at], sig, strsignal(sig),
			WCOREDUMP(status) ? ", core dumped" : "");
		rc = 128 + sig;
	} else {
		rc = WEXITSTATUS(status);
	}
	if (have_tmp_filter)
		unlink(filter_tmp);
	int logs = summarise(abs, &before, o.quiet);
	int exec_failed = !WIFSIGNALED(status) && (rc == 126 || rc == 127);
	if (logs == 0 && !exec_failed) {
		if (has_sleds(argv[cmd_at]))
			fprintf(stderr, "sftrace: no log written: %s has XRay sleds, but no log was created (see the "
					"runtime's message above) or none of its instrumented code ran\n",
				argv[cmd_at]);
		else
			fprintf(stderr, "sftrace: no log written: %s ran no XRay-instrumented code (build it with "
					"clang -fxray-instrument or rustc -Zinstrument-xray=always)\n",
				argv[cmd_at]);
	}
	list_free(&before);
	return rc;
}
