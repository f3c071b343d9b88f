/* sftrace record: run a command with the runtime preloaded, pass its exit
 * status through, and summarise the log(s) it wrote. */
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
#include "cli/record_args.h"
#include "cli/record_exits.h"
#include "cli/record_files.h"
#include "cli/record_keeper.h"
#include "cli/record_limits.h"
#include "cli/record_notes_dir.h"
#include "cli/record_probe.h"
#include "cli/record_stale.h"
#include "cli/record_why.h"
#include "cli/solib.h"
#include "format/run_budget.h"
#include "format/filter_file.h"
#include "format/sf_env.h"
#include "format/sflog.h"
#include "lib/filter_check.h"
#include "lib/filter_merge.h"
#include "lib/kept_filter.h"
#include "lib/frames.h"
#include "lib/log_reader.h"
#include "lib/name_match.h"
#include "lib/snap_requests.h"
#include "lib/text_esc.h"
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
		"  -f, --filter FILE|DIR     record only the functions in FILE (sftrace filter);\n"
		"                            repeatable; a directory gives its *.filter files\n"
		"  -r, --filter-regex RE     record only functions whose demangled name matches\n"
		"                            RE (PCRE2), in every instrumented object any\n"
		"                            process loads: each object's filter is made when\n"
		"                            it loads (sftrace filter -r RE) and kept in\n"
		"                            STEM.filters/ next to FILE, for -f on a later run\n"
		"      --within              with --filter-regex: record everything while a\n"
		"                            matching function is on the thread's stack\n"
		"      --alloc               also record malloc, free and the rest of the libc\n"
		"                            allocator family, with call sites (sftrace memory)\n"
		"      --force               replace FILE if it exists (default: refuse)\n"
		"      --clock tsc|monotonic timestamp source (default: tsc when invariant)\n"
		"      --writer auto|sync|thread\n"
		"                            who copies full buffers into the log: a writer\n"
		"                            thread while the traced threads leave a CPU idle,\n"
		"                            else (and under valgrind) the traced thread\n"
		"                            itself (auto, default);\n"
		"                            always the traced thread (sync); always the\n"
		"                            writer thread (thread)\n"
		"      --min-duration DUR    leave out calls shorter than DUR (e.g. 10us); their\n"
		"                            callers stay, so traces stay balanced\n"
		"      --max-depth N         leave out calls deeper than N (1: the outermost\n"
		"                            recorded frame of each thread)\n"
		"      --max-size SIZE       stop recording when the run's logs reach SIZE\n"
		"                            bytes together (K, M, G suffixes; all processes\n"
		"                            share it); the program runs on, later events are\n"
		"                            counted as dropped\n"
		"      --ring SIZE           flight recorder: keep only each thread's newest\n"
		"                            SIZE of events (at least 128K), overwriting the\n"
		"                            oldest; the log holds them at exit or crash, and\n"
		"                            a snapshot file is written on 'sftrace snapshot\n"
		"                            PID' (no signal) or the ring signal\n"
		"      --ring-signal SIG     the signal that asks for a snapshot when you send\n"
		"                            it, e.g. kill -USR2 PID (default USR2)\n"
		"      --trigger FUNC        with --ring: a snapshot when a function matching\n"
		"                            FUNC (a regex, as sftrace filter -r) is entered;\n"
		"                            'FUNC>DUR' (e.g. 'parse>20ms'): when a call of it\n"
		"                            lasts longer than DUR; repeatable\n"
		"      --trigger-object OBJECT\n"
		"                            with --trigger: look FUNC up in OBJECT too (a\n"
		"                            shared library, a dlopen'd module such as a .node\n"
		"                            addon); repeatable\n"
		"      --max-snapshots N     with --ring: write at most N snapshots (default 100)\n"
		"      --paused              start with tracing off (no sled patched: the program\n"
		"                            runs at untraced speed); each process that loads\n"
		"                            instrumented code prints its PID, and\n"
		"                            'sftrace resume PID' / 'sftrace pause PID' switch\n"
		"                            tracing on and off while it runs\n"
		"  -A, --argument FUNC@ARGS  record arguments of FUNC (a name, or a regex as in\n"
		"                            filters): ARGS is argN[/FMT] (integer registers,\n"
		"                            N 1-6) and fpargN[/f32] (vector registers, N 1-8),\n"
		"                            comma-separated; FMT i, u, x (with 8/16/32/64), p,\n"
		"                            c, b, s (C string), S (pointer and length: Rust\n"
		"                            &str); repeatable\n"
		"  -R, --retval FUNC@retval[/FMT]\n"
		"                            record FUNC's return value (FMT as above, or f,\n"
		"                            f32 for a floating-point one); repeatable\n"
		"  -a, --auto-args           record the arguments and return values of every\n"
		"                            function whose DWARF prototype fits the formats\n"
		"                            above (build with -g); 16 bytes of each string;\n"
		"                            -A/-R override it per function. Both apply to\n"
		"                            COMMAND and to the shared libraries it loads\n"
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
	char **filters; /* -f, in order */
	size_t nfilters;
	const char *clock;
	const char *writer;
	const char *filter_regex;
	int force, quiet, within;
	int paused;        /* --paused: SFTRACE_PAUSED=1 */
	uint64_t max_size; /* --max-size, 0: none */
	uint64_t ring;     /* --ring bytes per thread, 0: none */
	int ring_signal;
	char **triggers;   /* --trigger, in order */
	size_t ntriggers;
	char **trigger_objs; /* --trigger-object, in order */
	size_t ntrigger_objs;
	const char *max_snapshots;
	struct ra_spec *args;  /* -A, -R, in order */
	const char **args_opt; /* "-A" or "-R", for each */
	size_t nargs;
	int auto_args;         /* --auto-args */
	uint64_t min_duration; /* --min-duration, ns; 0: keep all */
	long max_depth;        /* --max-depth; 0: unlimited */
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

/* Refuses a statically linked command before anything runs or is written:
 * it would run untraced. 0 if the command may be run. */
static int preflight_static(const char *cmd)
{
	char path[PATH_MAX];
	if (sf_path_lookup(cmd, path, sizeof(path)) < 0)
		return 0;
	int fd = sf_open_regular(path);
	if (fd < 0)
		return 0;
	int is_static = record_is_static_elf(fd);
	close(fd);
	if (!is_static)
		return 0;
	sf_error("%s is statically linked: the tracer's runtime cannot be loaded into it; link it dynamically "
		 "(no -static, no +crt-static, not musl)", path);
	return -1;
}

/* Whether the CPU says its TSC runs at a constant rate in every P/C-state
 * (CPUID 0x80000007 EDX bit 8); the runtime makes the same check. Arm's
 * generic timer always does. */
static int tsc_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if ((unsigned)__get_cpuid_max(0x80000000, 0) < 0x80000007u)
		return 0;
	__cpuid(0x80000007, a, b, c, d);
	return (d >> 8) & 1;
#else
	return 1;
#endif
}

/* Nanoseconds per CLOCK_MONOTONIC read, measured now (about 1 ms). */
static double clock_read_ns(void)
{
	struct timespec t0, t1, x;
	int n = 2000;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++)
		clock_gettime(CLOCK_MONOTONIC, &x);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n;
}

/* Says once, before the run, when every event will take the runtime's slow
 * path for its timestamp, and what that costs here. */
static void note_slow_clock(const char *opt_clock)
{
	const char *env = getenv(SF_ENV(CLOCK));
	const char *clock = opt_clock ? opt_clock : (env && env[0] ? env : NULL);
	const char *why;
	if (clock && !strcmp(clock, "monotonic"))
		why = "--clock monotonic (" SF_ENV(CLOCK) ") was asked for";
	else if (!clock && !tsc_invariant())
		why = "this CPU's TSC is not invariant (common in virtual machines)";
	else
		return;
	/* Figures: writer_tasks with 6M events on the project's 2-core VM,
	 * --clock tsc 0.6 s, --clock monotonic 12-13 s (README, limits). */
	fprintf(stderr, "sftrace: note: %s: every event takes the runtime's slow path (a full register save, "
			"then a CLOCK_MONOTONIC read: %.0f ns here), about 2 us per event on a 2-core test VM "
			"against about 0.07 us with the TSC\n",
		why, clock_read_ns());
}

static int feed_frames(void *ctx, const struct lr_event *ev)
{
	fr_feed(ctx, ev);
	return 0;
}

/* A log whose header still says RUNNING: the process never ran the
 * runtime's exit hook. Counts the calls it left open (frames.c). */
static void print_unfinished(const struct lr_log *log, uint32_t pid)
{
	struct frames *f = fr_new(&(struct fr_callbacks){0}, NULL);
	lr_foreach_event(log, feed_frames, f);
	uint64_t open = 0, threads = 0;
	for (size_t i = 0; i < lr_nthreads(log); i++) {
		size_t d = fr_depth(f, lr_thread_at(log, i));
		open += d;
		threads += d > 0;
	}
	fr_free(f);
	fprintf(stderr,
		"sftrace: pid %u did not exit normally (killed, crashed, or ended by _exit or exec before its exit "
		"hooks ran): %llu call%s left open in %llu thread%s\n",
		pid, (unsigned long long)open, open == 1 ? "" : "s", (unsigned long long)threads,
		threads == 1 ? "" : "s");
}

static int quiet_summary; /* -q: summaries only count what was dropped */

/* -q: only the header's dropped counter is wanted, and opening the log
 * would decode every event (as long as recording a big run took). */
/* 0 when read (-1 not a log), 1 when tracing stopped at a seccomp filter:
 * said even with -q. */
static int header_dropped(const char *path, uint64_t *dropped)
{
	struct sf_header h;
	int fd = sf_open_regular(path); /* a FIFO named like a log: never block */
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, &h, sizeof(h), 0);
	close(fd);
	if (n != (ssize_t)sizeof(h) || h.magic != SF_MAGIC)
		return -1;
	*dropped += h.dropped_events;
	return h.seccomp_stopped ? 1 : 0;
}

/* ", N snapshot requests: M written, K not taken (why)..." when a
 * request of the process's was not written (snap_requests.h). */
static void print_snapshot_requests(const struct lr_info *in)
{
	struct snap_requests r;
	if (!snap_requests_of(in, &r))
		return;
	fprintf(stderr, ", %llu snapshot request%s: %llu written", (unsigned long long)r.all, r.all == 1 ? "" : "s",
		(unsigned long long)r.written);
	if (r.busy)
		fprintf(stderr, ", %llu not taken (a snapshot was being written)", (unsigned long long)r.busy);
	if (r.merged)
		fprintf(stderr, ", %llu not taken (asked by sftrace snapshot, the process ended first)",
			(unsigned long long)r.merged);
	if (r.over_max)
		fprintf(stderr, ", %llu not taken (--max-snapshots reached)", (unsigned long long)r.over_max);
	if (r.unwritten)
		fprintf(stderr, ", %llu not written (the process ended, or a write failed, first)",
			(unsigned long long)r.unwritten);
}

static void print_summary(const char *path, const char *shown, uint64_t *dropped)
{
	if (quiet_summary && header_dropped(path, dropped) == 0)
		return;
	char err[512];
	struct lr_log *log = lr_open(path, err, sizeof(err));
	if (!log) {
		fprintf(stderr, "sftrace: %s: unreadable: %s\n", shown, sf_esc(err));
		return;
	}
	struct lr_summary s;
	lr_summary(log, &s);
	*dropped += s.dropped;
	if (quiet_summary) {
		if (lr_info(log)->seccomp_stopped) {
			const char *n = lr_syscall_name(lr_info(log)->machine, lr_info(log)->seccomp_stopped - 1);
			fprintf(stderr, "sftrace: pid %u: tracing stopped at a seccomp filter (it refuses %s): "
					"later calls not recorded\n",
				s.pid, n ? n : "a system call the runtime makes");
		}
		lr_close(log);
		return;
	}
	/* pid 1 with no parent it can see: a clone(CLONE_NEWPID) child, whose
	 * pid is its namespace's (two such children both say 1; their logs'
	 * names stay apart: STEM.1.EXT, STEM.1.1.EXT) */
	const char *ns = s.pid == 1 && lr_info(log)->ppid == 0 ? " in a pid namespace of its own" : "";
	fprintf(stderr, "sftrace: wrote %s (pid %u%s): %llu events, %llu thread%s, %llu object%s", shown, s.pid, ns,
		(unsigned long long)s.events, (unsigned long long)s.threads, s.threads == 1 ? "" : "s",
		(unsigned long long)s.objects, s.objects == 1 ? "" : "s");
	if (s.dropped)
		fprintf(stderr, ", %llu DROPPED (%llu failed writes, last: %s)", (unsigned long long)s.dropped,
			(unsigned long long)s.write_errors,
			lr_info(log)->last_errno ? strerror((int)lr_info(log)->last_errno) : "-");
	if (s.lost)
		fprintf(stderr, ", %llu lost", (unsigned long long)s.lost);
	if (lr_info(log)->ring_reused)
		fprintf(stderr, ", %llu events of exited threads overwritten by later threads' rings",
			(unsigned long long)lr_info(log)->ring_reused);
	print_snapshot_requests(lr_info(log));
	if (lr_info(log)->seccomp_stopped) {
		const char *n = lr_syscall_name(lr_info(log)->machine, lr_info(log)->seccomp_stopped - 1);
		/* what is lost, not only where: the sleds are unpatched for
		 * good, so the process's calls from then on, and the children
		 * it forks or execs later, go unrecorded (runtime sandbox.c) */
		fprintf(stderr,
			", tracing stopped at a seccomp filter (it refuses %s): from then on nothing this process runs, "
			"nor any child it makes afterwards, is recorded",
			n ? n : "a system call the runtime makes");
	}
	if (lr_info(log)->trimmed_records)
		fprintf(stderr, ", %llu trimmed (--min-duration/--max-depth)",
			(unsigned long long)lr_info(log)->trimmed_records);
	fputc('\n', stderr);
	if (s.state != SF_STATE_EXITED)
		print_unfinished(log, s.pid);
	lr_close(log);
}

/* The logs this run wrote: abs, and the siblings that were not there before. */
static void run_logs(const char *abs, const struct name_list *before, struct name_list *out)
{
	struct log_name n;
	split_name(abs, &n);
	struct stat st;
	if (stat(abs, &st) == 0)
		list_add(out, abs);
	struct name_list after = {0};
	sibling_logs(&n, &after);
	for (size_t i = 0; i < after.n; i++) {
		if (list_has(before, after.v[i]))
			continue;
		char p[PATH_MAX * 2];
		snprintf(p, sizeof(p), "%s/%s", n.dir, after.v[i]);
		list_add(out, p);
	}
	list_free(&after);
}

/* Summarises every log this run wrote. Returns how many. */
static int summarise(const struct name_list *logs, int quiet, uint64_t *dropped)
{
	quiet_summary = quiet;
	for (size_t i = 0; i < logs->n; i++)
		print_summary(logs->v[i], logs->v[i], dropped);
	return (int)logs->n;
}

/* What a run creates besides the logs. */
struct run_files {
	char filter[PATH_MAX];     /* the filter the runtime reads ("" for none) */
	char merged[PATH_MAX];     /* a merge of several -f inputs, in notes/ */
	char filter_dir[PATH_MAX]; /* --filter-regex: the per-object filters, kept */
	char notes[PATH_MAX];      /* the run's private directory (0711, files 0600): notes and the files below */
	char shown[PATH_MAX];      /* the filter as the user named it, for messages */
	char budget[PATH_MAX];     /* --max-size: the shared budget, in notes/ */
	char triggers[PATH_MAX];   /* --trigger: the trigger functions, in notes/ */
	char args[PATH_MAX];       /* -A/-R: the argument specs, in notes/ */
	dev_t notes_dev;           /* the private directory as made: a name swapped */
	ino_t notes_ino;           /* for another (a symlink) is never cleaned */
};

/* Removes the private directory and all it holds (the keeper does, after
 * the last process of the command; record again if the keeper could not).
 * Only record's user can write there (0711): nothing in it is followed. */
static void cleanup_run_files(struct run_files *rf)
{
	if (!rf->notes[0])
		return;
	/* By a descriptor of the directory we made, never by following the
	 * name: where $TMPDIR is writable by others (no sticky bit), the
	 * name may now be a symlink to someone's files. */
	int fd = open(rf->notes, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 && errno == ENOENT)
		return; /* the keeper removed it already */
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != rf->notes_dev || st.st_ino != rf->notes_ino) {
		if (fd >= 0)
			close(fd);
		sf_warn("%s: no longer the directory record made; left alone", rf->notes);
		return;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(fd, e->d_name, 0);
	closedir(d);
	/* The name again: rmdir refuses a symlink and a non-empty directory. */
	struct stat now;
	if (lstat(rf->notes, &now) == 0 && now.st_dev == rf->notes_dev && now.st_ino == rf->notes_ino)
		rmdir(rf->notes);
}

static void cleanup_cb(void *rf)
{
	cleanup_run_files(rf);
}

/* $TMPDIR, or /tmp, for the run's temporary files. */
static const char *tmp_dir(void)
{
	const char *t = getenv("TMPDIR");
	return t && t[0] == '/' && strlen(t) < PATH_MAX / 2 ? t : "/tmp";
}

/* -f FILE...: one file as given; several, or a directory, merged into a
 * temporary file. */
static int prepare_filter_files(const struct record_opts *o, struct run_files *rf)
{
	char **files = NULL;
	size_t nfiles = 0;
	int rc = 0;
	for (size_t i = 0; i < o->nfilters && rc == 0; i++)
		rc = ff_expand_input(o->filters[i], &files, &nfiles);
	for (size_t i = 0; i < nfiles && rc == 0; i++)
		rc = sf_filter_check_file(files[i]); /* messages name the user's files */
	const char *use = rc == 0 ? files[0] : NULL;
	if (rc == 0 && (nfiles > 1 || strcmp(files[0], o->filters[0]))) {
		snprintf(rf->merged, sizeof(rf->merged), "%.*s/merged.filter", PATH_MAX / 2 + 32, rf->notes);
		int fd = notes_dir_open(rf->merged, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			sf_error("cannot create %s: %s", rf->merged, strerror(errno));
			rf->merged[0] = 0;
			rc = -1;
		} else {
			close(fd);
			/* written through the held descriptor's own name in
			 * /proc, not the path (record_notes_dir.h) */
			char via[64];
			snprintf(via, sizeof(via), "/proc/self/fd/%d/merged.filter", notes_dir_fd());
			rc = ff_merge(files, nfiles, access(via, W_OK) == 0 ? via : rf->merged, 0);
			use = rf->merged;
		}
	}
	snprintf(rf->shown, sizeof(rf->shown), "%s%s", o->filters[0], o->nfilters > 1 ? " (and the other -f)" : "");
	if (rc == 0 && !realpath(use, rf->filter)) {
		sf_error("%s: %s", use, strerror(errno));
		rc = -1;
	}
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	return rc;
}

/* Removes the *.filter files a previous run left in dir (--force). */
static int clear_filter_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 8 || strcmp(e->d_name + len - 7, ".filter"))
			continue;
		char p[PATH_MAX * 2];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (unlink(p) < 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}

/* --filter-regex: checks the regex, makes STEM.filters/ next to the log
 * and tells the runtime to fill it (src/runtime/filter.c). */
static int prepare_filter_regex(const struct record_opts *o, const char *abs, struct run_files *rf)
{
	struct nm_patterns ps = {0};
	nm_add(&ps, o->filter_regex, "--filter-regex");
	int bad = nm_compile(&ps);
	nm_free(&ps);
	if (bad)
		return -1;
	struct log_name n;
	split_name(abs, &n);
	if ((size_t)snprintf(rf->filter_dir, sizeof(rf->filter_dir), "%.*s/%.*s.filters", PATH_MAX / 2, n.dir,
			     NAME_MAX, n.stem) >= sizeof(rf->filter_dir) - 128) {
		sf_error("%s: path too long", abs);
		return -1;
	}
	struct stat st;
	if (lstat(rf->filter_dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || !o->force) {
			sf_error("%s exists (the filters of an earlier --filter-regex run); remove it or pass --force",
				 rf->filter_dir);
			return -1;
		}
		/* a shared (sticky) output directory: another user's directory
		 * there is not the run's, --force or not */
		if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
			sf_error("%s is not a directory of this user's writable by no one else (owner %u, mode %04o); "
				 "remove it or choose another -o",
				 rf->filter_dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			return -1;
		}
		if (clear_filter_dir(rf->filter_dir) < 0) {
			sf_error("cannot empty %s: %s", rf->filter_dir, strerror(errno));
			return -1;
		}
	} else if (mkdir(rf->filter_dir, 0777) < 0) {
		sf_error("cannot create %s: %s", rf->filter_dir, strerror(errno));
		return -1;
	}
	char cli[PATH_MAX];
	if (!realpath("/proc/self/exe", cli)) {
		sf_error("cannot find the sftrace binary: %s", strerror(errno));
		return -1;
	}
	setenv(SF_ENV(FILTER_REGEX), o->filter_regex, 1);
	setenv(SF_ENV(FILTER_DIR), rf->filter_dir, 1);
	setenv(SF_ENV(FILTER_WITHIN), o->within ? "1" : "0", 1);
	setenv(SF_ENV(CLI), cli, 1);
	return 0;
}


/* SFTRACE_SECCOMP_FILTERS: the seccomp filters record runs under (a
 * container's profile, a sandbox's that started record), which the
 * runtime starts under too and takes as known; more at a process's start
 * were installed where no runtime saw them, and that process runs
 * untraced (the runtime's sandbox.c). "any": a filter, count not said
 * (before Linux 5.9), or no /proc to read. */
static void set_seccomp_filters(void)
{
	const char *v = "any";
	char line[256], num[24];
	FILE *f = fopen("/proc/self/status", "re");
	if (f) {
		int mode = -1;
		long n = -1;
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "Seccomp:", 8))
				mode = atoi(line + 8);
			else if (!strncmp(line, "Seccomp_filters:", 16))
				n = atol(line + 16);
		}
		fclose(f);
		if (mode == 0)
			v = "0";
		else if (mode == 2 && n >= 0) {
			snprintf(num, sizeof(num), "%ld", n);
			v = num;
		}
	}
	setenv(SF_ENV(SECCOMP_FILTERS), v, 1);
}

/* The file a runtime under unseen filters opens (format/sf_env.h): made
 * empty in the private directory, watched for opens. */
static int unseen_watch = -1;

static void watch_unseen_filters(const char *notes)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", notes, SF_UNSEEN_FILTER_FILE) >= (int)sizeof(path))
		return;
	int fd = notes_dir_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	close(fd);
	unseen_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (unseen_watch >= 0 && inotify_add_watch(unseen_watch, path, IN_OPEN) < 0) {
		close(unseen_watch);
		unseen_watch = -1;
	}
}

/* Once the command has ended: whether a program started under filters
 * no runtime saw installed, said once. */
static void report_unseen_filters(void)
{
	if (unseen_watch < 0)
		return;
	/* inotify merges an event with an identical one queued before it:
	 * the opens are not counted, only seen */
	int seen = 0;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	while ((n = read(unseen_watch, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n; p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len)
			seen |= (((struct inotify_event *)p)->mask & IN_OPEN) != 0;
	close(unseen_watch);
	unseen_watch = -1;
	if (seen)
		fprintf(stderr, "sftrace: a program ran untraced (one or more): it started under a seccomp filter installed "
				"where the tracer did not see it (a static launcher's, an inline syscall instruction's), "
				"under which any call of the runtime's could kill it\n");
}

static int prepare_filters(struct record_opts *o, const char *abs, struct run_files *rf, const char *cmd0)
{
	unsetenv(SF_ENV(FILTER));
	unsetenv(SF_ENV(FILTER_REGEX));
	unsetenv(SF_ENV(FILTER_DIR));
	unsetenv(SF_ENV(FILTER_WITHIN));
	unsetenv(SF_ENV(CLI));
	if (o->filter_regex && o->nfilters) {
		sf_error("give either -f FILTER or --filter-regex, not both");
		return 2;
	}
	if (o->within && !o->filter_regex) {
		sf_error("--within goes with --filter-regex (or make the filter with sftrace filter --within)");
		return 2;
	}
	/* The run's private directory first: every file record makes for the
	 * runtime goes in it (the keeper removes it, record_keeper.h). */
	/* Its device and inode name the keeper's socket (keeper_files.h); a
	 * keeper of another run may still hold that name (its directory gone,
	 * the inode handed to this one, the keeper not yet exited): then
	 * another directory, made while this one still exists (so another
	 * inode), until the bind takes the name. Collision-free by
	 * construction: a bound name is this run's alone. */
	/* Those of runs killed whole (record and keeper alike, nobody left to
	 * remove them) first: this user's whose keepers are all gone
	 * (record_stale.h). */
	stale_sweep(tmp_dir());
	char taken[8][PATH_MAX];
	int ntaken = 0;
	struct stat made;
	for (;;) {
		snprintf(rf->notes, sizeof(rf->notes), "%s/sftrace-notes-XXXXXX", tmp_dir());
		if (!mkdtemp(rf->notes) || lstat(rf->notes, &made) < 0) {
			sf_error("cannot create a temporary directory: %s", strerror(errno));
			rf->notes[0] = 0;
			for (int i = 0; i < ntaken; i++)
				rmdir(taken[i]);
			return 1;
		}
		if (rfiles_bind((uint64_t)made.st_dev, (uint64_t)made.st_ino, 0) >= 0 || errno != EADDRINUSE)
			break;
		if (ntaken == (int)(sizeof(taken) / sizeof(taken[0]))) {
			/* Names taken on purpose (every next inode's): a random
			 * salt, passed on in SFTRACE_KEEPER (record_keeper.c),
			 * makes a name nobody can take in advance. Never a
			 * name this run does not hold: without one, no keeper. */
			for (int i = 0; i < 8; i++) {
				uint64_t salt = 0;
				if (getrandom(&salt, sizeof(salt), 0) != (ssize_t)sizeof(salt) || !salt)
					continue;
				if (rfiles_bind((uint64_t)made.st_dev, (uint64_t)made.st_ino, salt) >= 0 ||
				    errno != EADDRINUSE)
					break;
			}
			break;
		}
		snprintf(taken[ntaken++], PATH_MAX, "%s", rf->notes);
	}
	for (int i = 0; i < ntaken; i++)
		rmdir(taken[i]);
	rf->notes_dev = made.st_dev;
	rf->notes_ino = made.st_ino;
	/* Held by a descriptor from here on: record's files go in by it,
	 * never through the path (record_notes_dir.h). */
	if (notes_dir_hold(rf->notes, made.st_dev, made.st_ino) < 0) {
		sf_error("%s: %s", rf->notes,
			 errno == ESTALE ? "replaced by something else just after record made it" : strerror(errno));
		rf->notes[0] = 0;
		return 1;
	}
	/* 0711: a process that became another user (a daemon's worker, a
	 * program started by start-stop-daemon --chuid) can still open the
	 * note file handed to it (the runtime's notes.c); nobody else can list
	 * or create anything here, and every file in it is 0600. */
	if (fchmod(notes_dir_fd(), 0711) < 0) {
		sf_error("%s: cannot set its mode: %s", rf->notes, strerror(errno));
		return 1;
	}
	/* Who keeps it, for a later record's sweep should record and the
	 * keeper both be killed (the keeper's line follows keeper_start). */
	if (stale_stamp(rf->notes, getpid()) < 0) {
		sf_error("%s: cannot write who keeps it: %s", rf->notes, strerror(errno));
		return 1;
	}
	setenv(SF_ENV(NOTES_DIR), rf->notes, 1);
	set_seccomp_filters();
	watch_unseen_filters(rf->notes);
	if (o->nfilters && prepare_filter_files(o, rf) < 0)
		return 1;
	if (rf->filter[0])
		setenv(SF_ENV(FILTER), rf->filter, 1);
	/* Readers name folded functions as the filter chose (kept_filter.h);
	 * --filter-regex's is kept after the run, once the runtime made it. */
	char *kept = rf->filter;
	if (rf->filter[0] && kf_keep(abs, &kept, 1) < 0)
		return 1;
	if (!rf->filter[0])
		kf_drop(abs);
	if (o->filter_regex && prepare_filter_regex(o, abs, rf) < 0)
		return 1;
	unsetenv(SF_ENV(BUDGET_FILE));
	if (o->max_size && rl_budget_create(rf->notes, o->max_size, rf->budget, sizeof(rf->budget)) < 0)
		return 1;
	unsetenv(SF_ENV(ARGS));
	if (o->nargs || o->auto_args) {
		char exe[PATH_MAX];
		if (sf_path_lookup(cmd0, exe, sizeof(exe)) < 0) {
			sf_error("%s: not found or not executable (needed to resolve -A/-R)", cmd0);
			return 1;
		}
		if (ra_write(rf->notes, exe, o->args, o->args_opt, o->nargs, o->auto_args, rf->args, sizeof(rf->args)) < 0)
			return 1;
	}
	unsetenv(SF_ENV(TRIGGERS));
	if (o->ntriggers) {
		char exe[PATH_MAX];
		if (sf_path_lookup(cmd0, exe, sizeof(exe)) < 0) {
			sf_error("%s: not found or not executable (needed to resolve --trigger)", cmd0);
			return 1;
		}
		if (rl_triggers_write(rf->notes, exe, o->trigger_objs, o->ntrigger_objs, o->triggers, o->ntriggers,
				      rf->triggers, sizeof(rf->triggers)) < 0)
			return 1;
	}
	return 0;
}

/* The "# K of N instrumented functions" comment sftrace filter writes
 * above a one-object filter: N, or fallback when it is missing. */
static size_t instrumented_count(const char *file, size_t fallback)
{
	FILE *f = sf_fopen_regular(file);
	char line[256];
	size_t k, n = fallback;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "# %zu of %zu instrumented functions", &k, &n) == 2)
			break;
	if (f)
		fclose(f);
	return n;
}

/* After a --filter-regex run: the filters the runtime made, per object. */
static size_t filter_dir_files(const char *dir, char ***out)
{
	char **files = NULL;
	size_t nfiles = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len < 8 || strcmp(e->d_name + len - 7, ".filter"))
			continue;
		files = xrealloc(files, (nfiles + 1) * sizeof(*files));
		files[nfiles] = xmalloc(strlen(dir) + len + 2);
		sprintf(files[nfiles++], "%s/%s", dir, e->d_name);
	}
	if (d)
		closedir(d);
	*out = files;
	return nfiles;
}

static void free_files(char **files, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

/* After a --filter-regex run: the per-object filters the runtime made,
 * merged into the run's kept filter (kept_filter.h). */
static void keep_filter_dir(const char *abs, const char *dir)
{
	char **files;
	size_t nfiles = filter_dir_files(dir, &files);
	if (nfiles)
		kf_keep(abs, files, nfiles);
	free_files(files, nfiles);
}

static void summarise_filter_dir(const char *dir, const char *regex)
{
	char **files;
	size_t nfiles = filter_dir_files(dir, &files);
	if (!nfiles) {
		fprintf(stderr, "sftrace: --filter-regex: no process loaded an instrumented object; no filter made\n");
		rmdir(dir);
		return;
	}
	fprintf(stderr, "sftrace: --filter-regex '%s' selected, per instrumented object (%s; repeat with -f %s):\n",
		regex, dir, dir);
	for (size_t i = 0; i < nfiles; i++) {
		struct ff_info info;
		if (ff_info_read(files[i], &info) == 0) {
			for (size_t j = 0; j < info.nobjs; j++)
				fprintf(stderr, "  %zu of %zu instrumented functions selected in %s\n",
					info.objs[j].nfuncs, instrumented_count(files[i], info.objs[j].nfuncs),
					sf_esc(info.objs[j].path));
			ff_info_free(&info);
		}
	}
	free_files(files, nfiles);
}

static int record_run(const struct record_opts *o, const char *lib, const char *abs, const struct run_files *rf,
		      char **cmd)
{
	struct log_name n;
	split_name(abs, &n);
	struct name_list before = {0};
	sibling_logs(&n, &before);

	char libdir[PATH_MAX];
	snprintf(libdir, sizeof(libdir), "%s", lib);
	*strrchr(libdir, '/') = 0;
	char preload_libs[2 * PATH_MAX + 32];
	snprintf(preload_libs, sizeof(preload_libs), "%s", lib);
	if (o->alloc) {
		/* libsftrace-alloc.so lives next to the runtime (src/alloc/interpose.c) */
		char alloc_lib[PATH_MAX + 32];
		snprintf(alloc_lib, sizeof(alloc_lib), "%s/libsftrace-alloc.so", libdir);
		if (access(alloc_lib, R_OK) < 0) {
			sf_error("%s: %s (needed by --alloc)", alloc_lib, strerror(errno));
			list_free(&before);
			return 1;
		}
		snprintf(preload_libs, sizeof(preload_libs), "%s:%s", lib, alloc_lib);
	}
	/* Preloaded by absolute path (sf_find_solib: realpath), and neither
	 * library needs anything beside it: the program's LD_LIBRARY_PATH
	 * stays its own (it and its children once searched the runtime's
	 * directory first). */
	/* Under filters record did not install, a disposable probe finds
	 * which calls of the runtime's they kill (record_probe.c): the
	 * program then runs without the runtime, said once. */
	char killed[512];
	int untraced = record_probe_filters(killed, sizeof(killed)) > 0;
	if (untraced)
		fprintf(stderr, "sftrace: %s runs untraced, no log: record runs under a seccomp filter that kills the "
				"runtime's %s (probed at start)\n",
			cmd[0], killed);
	char *preload = join_env("LD_PRELOAD", preload_libs);
	if (!untraced)
		setenv("LD_PRELOAD", preload, 1);
	setenv(SF_ENV(OUTPUT_FILE), abs, 1);
	if (o->clock)
		setenv(SF_ENV(CLOCK), o->clock, 1);
	if (o->writer)
		setenv(SF_ENV(WRITER), o->writer, 1);
	unsetenv(SF_ENV(RING));
	unsetenv(SF_ENV(RING_SIGNAL));
	unsetenv(SF_ENV(MAX_SNAPSHOTS));
	unsetenv(SF_ENV(PAUSED));
	if (o->paused)
		setenv(SF_ENV(PAUSED), "1", 1);
	if (o->max_snapshots)
		setenv(SF_ENV(MAX_SNAPSHOTS), o->max_snapshots, 1);
	if (o->ring) {
		char v[32];
		snprintf(v, sizeof(v), "%llu", (unsigned long long)o->ring);
		setenv(SF_ENV(RING), v, 1);
		snprintf(v, sizeof(v), "%d", o->ring_signal);
		setenv(SF_ENV(RING_SIGNAL), v, 1);
	}
	char num[32];
	snprintf(num, sizeof(num), "%llu", (unsigned long long)o->min_duration);
	if (o->min_duration)
		setenv(SF_ENV(MIN_DURATION), num, 1);
	else
		unsetenv(SF_ENV(MIN_DURATION));
	snprintf(num, sizeof(num), "%ld", o->max_depth);
	if (o->max_depth)
		setenv(SF_ENV(MAX_DEPTH), num, 1);
	else
		unsetenv(SF_ENV(MAX_DEPTH));
	free(preload);

	/* The terminal's ^C goes to the command (same process group); we wait
	 * for it to finish and still report what it wrote. The keeper
	 * forwards what is sent to record alone (record_keeper.h). */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	time_t started = time(NULL) - 1; /* snapshot mtimes: whole seconds */
	/* The command runs under the keeper, which returns its status once
	 * every process of it has exited (record_keeper.h). */
	struct keeper k;
	int kept = keeper_start(cmd, cleanup_cb, (void *)rf, rf->notes[0] ? rf->notes : NULL, abs, &k);
	/* Until this line the keeper is known by its name, which record bound
	 * and the keeper inherited (record_stale.c). */
	if (kept >= 0 && rf->notes[0])
		stale_stamp(rf->notes, k.pid);
	rfiles_forget(); /* the keeper's now: the name goes with it */
	if (kept < 0) {
		list_free(&before);
		return 1;
	}
	int status = 0;
	/* A keeper that died first has said so; its orphans were record's to
	 * wait for, and the logs they wrote are still listed. */
	int keeper_lost = keeper_wait(&k, &status) < 0;
	report_unseen_filters(); /* first: reading the notes below opens every file there */
	int rc;
	if (keeper_lost) {
		rc = 1;
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		fprintf(stderr, "sftrace: %s was killed by signal %d (%s)%s\n", cmd[0], sig, strsignal(sig),
			WCOREDUMP(status) ? ", core dumped" : "");
		rc = 128 + sig;
	} else {
		rc = WEXITSTATUS(status);
	}
	/* How each process it reaped ended, into its log (record_exits.c). */
	struct name_list written = {0};
	run_logs(abs, &before, &written);
	record_write_exits(written.v, written.n, k.exits, k.nexits);
	uint64_t dropped = 0;
	int logs = summarise(&written, o->quiet, &dropped);
	list_free(&written);
	if (o->ring && !o->quiet)
		rl_list_snapshots(n.dir, n.stem, n.ext, started);
	if (rf->budget[0] && !o->quiet)
		rl_budget_report(rf->budget, o->max_size, (uint64_t)t0.tv_sec * 1000000000ull + (uint64_t)t0.tv_nsec,
				 dropped);
	if (o->filter_regex)
		keep_filter_dir(abs, rf->filter_dir);
	if (o->filter_regex && !o->quiet)
		summarise_filter_dir(rf->filter_dir, o->filter_regex);
	ra_report_unmatched(rf->notes, o->args, o->args_opt, o->nargs);
	int exec_failed = !keeper_lost && !WIFSIGNALED(status) && (rc == 126 || rc == 127);
	int lost = record_report_lost(rf->notes);
	record_report_notes(rf->notes);
	if (logs == 0 && !exec_failed && !lost && o->paused) {
		/* The runtime's notes would only repeat its "started paused" lines. */
		fprintf(stderr, "sftrace: no log written: tracing was never switched on (--paused; 'sftrace resume PID' "
				"switches it on)\n");
	} else if (logs == 0 && !exec_failed && !lost && !untraced) {
		struct record_why w = {rf->notes, rf->filter[0] ? rf->filter : NULL, rf->shown, o->filter_regex,
				       cmd[0]};
		record_explain_no_log(&w);
	}
	keeper_finish(&k);
	list_free(&before);
	return rc;
}

enum { OPT_ALLOC = 0x100, OPT_FILTER_REGEX }; /* long options without a short form */

static int record_main(struct record_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, 0, 'o'},
		{"filter", required_argument, 0, 'f'},
		{"force", no_argument, 0, 'F'},
		{"clock", required_argument, 0, 'c'},
		{"writer", required_argument, 0, 'W'},
		{"filter-regex", required_argument, 0, OPT_FILTER_REGEX},
		{"argument", required_argument, 0, 'A'},
		{"retval", required_argument, 0, 'R'},
		{"auto-args", no_argument, 0, 'a'},
		{"within", no_argument, 0, 'I'},
		{"alloc", no_argument, 0, OPT_ALLOC},
		{"min-duration", required_argument, 0, 'm'},
		{"max-depth", required_argument, 0, 'd'},
		{"quiet", no_argument, 0, 'q'},
		{"max-size", required_argument, 0, 'M'},
		{"ring", required_argument, 0, 'G'},
		{"ring-signal", required_argument, 0, 'S'},
		{"trigger", required_argument, 0, 'T'},
		{"trigger-object", required_argument, 0, 'O'},
		{"max-snapshots", required_argument, 0, 'X'},
		{"paused", no_argument, 0, 'U'},
		{"print-solib", no_argument, 0, 'P'},
		{"print-solib-install-dir", no_argument, 0, 'D'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int ring_signal_set = 0;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:f:r:A:R:aqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'f':
			o->filters = xrealloc(o->filters, (o->nfilters + 1) * sizeof(*o->filters));
			o->filters[o->nfilters++] = optarg;
			break;
		case 'F': o->force = 1; break;
		case 'c':
			if (strcmp(optarg, "tsc") && strcmp(optarg, "monotonic")) {
				sf_error("--clock must be tsc or monotonic, not '%s'", optarg);
				return 2;
			}
			o->clock = optarg;
			break;
		case 'W':
			if (strcmp(optarg, "auto") && strcmp(optarg, "sync") && strcmp(optarg, "thread")) {
				sf_error("--writer must be auto, sync or thread, not '%s'", optarg);
				return 2;
			}
			o->writer = optarg;
			break;
		case 'r':
		case OPT_FILTER_REGEX: o->filter_regex = optarg; break;
		case 'a': o->auto_args = 1; break;
		case 'A':
		case 'R':
			o->args = xrealloc(o->args, (o->nargs + 1) * sizeof(*o->args));
			o->args_opt = xrealloc(o->args_opt, (o->nargs + 1) * sizeof(*o->args_opt));
			o->args_opt[o->nargs] = c == 'A' ? "-A" : "-R";
			if (ra_parse(&o->args[o->nargs], o->args_opt[o->nargs], optarg) < 0)
				return 2;
			o->nargs++;
			break;
		case 'I': o->within = 1; break;
		case OPT_ALLOC: o->alloc = 1; break;
		case 'U': o->paused = 1; break;
		case 'q': o->quiet = 1; break;
		case 'M': /* a log header and a slot's worth at least */
			if (rl_parse_size("--max-size", optarg, 2 * SF_HEADER_SIZE, &o->max_size) < 0)
				return 2;
			if (o->max_size < SF_BUDGET_MIN_EVENTS)
				sf_warn("--max-size %s is below a log's header and one thread's buffer (" SF_BUDGET_MIN_TEXT
					", counted whole while it records): no event can be recorded; give at least "
					SF_BUDGET_MIN_TEXT " plus the objects' chunks (100K records a small run)",
					optarg);
			break;
		case 'G': /* two slots */
			if (rl_parse_size("--ring", optarg, 2 * SF_SLOT_SIZE, &o->ring) < 0)
				return 2;
			break;
		case 'S':
			if ((o->ring_signal = rl_parse_signal("--ring-signal", optarg)) < 0)
				return 2;
			ring_signal_set = 1;
			break;
		case 'T':
			o->triggers = xrealloc(o->triggers, (o->ntriggers + 1) * sizeof(*o->triggers));
			o->triggers[o->ntriggers++] = optarg;
			break;
		case 'O':
			o->trigger_objs = xrealloc(o->trigger_objs, (o->ntrigger_objs + 1) * sizeof(*o->trigger_objs));
			o->trigger_objs[o->ntrigger_objs++] = optarg;
			break;
		case 'X': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (end == optarg || *end || optarg[0] == '-' || v > 0xffffffffUL) {
				sf_error("--max-snapshots must be a number of snapshots, not '%s'", optarg);
				return 2;
			}
			o->max_snapshots = optarg;
			break;
		}
		case 'm':
			if (io_parse_duration("--min-duration", optarg, &o->min_duration) < 0)
				return 2;
			break;
		case 'd':
			if (parse_number("--max-depth", optarg, 1, 1L << 30, &o->max_depth) < 0)
				return 2;
			break;
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
	if (o->ntrigger_objs && !o->ntriggers) {
		sf_error("--trigger-object goes with --trigger");
		return 2;
	}
	/* --paused alone takes no signal: resume and pause reach the process
	 * through its writer thread's control page (cmd_switch.c). */
	if (!o->ring && (ring_signal_set || o->ntriggers || o->max_snapshots)) {
		sf_error("%s needs --ring%s", ring_signal_set ? "--ring-signal" : o->ntriggers ? "--trigger" : "--max-snapshots",
			 ring_signal_set && o->paused ? " (resume and pause use no signal)" : "");
		return 2;
	}
	if (o->ring && o->max_size) {
		sf_error("--ring and --max-size do not combine: a ring's logs are already bounded (--ring SIZE x threads)");
		return 2;
	}
	if (optind >= argc) {
		sf_error("no command given (usage: sftrace record [OPTIONS] -- COMMAND [ARGS...])");
		return 2;
	}
	if (preflight_static(argv[optind]) < 0)
		return 1;
	if (!o->quiet)
		note_slow_clock(o->clock);
	char lib[PATH_MAX], err[PATH_MAX * 2];
	if (sf_find_solib(lib, sizeof(lib), err, sizeof(err)) < 0) {
		sf_error("%s", err);
		return 1;
	}
	char abs[PATH_MAX];
	if (prepare_output(o, abs, sizeof(abs)) < 0)
		return 1;
	int cmd_at = optind;
	struct run_files rf = {0};
	int rc = prepare_filters(o, abs, &rf, argv[cmd_at]);
	if (rc == 0)
		rc = record_run(o, lib, abs, &rf, argv + cmd_at);
	cleanup_run_files(&rf);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = {.output = "sf.log", .ring_signal = SIGUSR2};
	int rc = record_main(&o, argc, argv);
	free(o.filters);
	free(o.triggers);
	for (size_t i = 0; i < o.nargs; i++)
		ra_free(&o.args[i]);
	free(o.args);
	free(o.args_opt);
	free(o.trigger_objs);
	return rc;
}
