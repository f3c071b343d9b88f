#include "cli/record_limits.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/input_opts.h"
#include "cli/record_notes_dir.h"
#include "format/sflog.h"
#include "format/ring_signal.h"
#include "format/run_budget.h"
#include "format/sf_env.h"
#include "lib/text_esc.h"
#include "format/xray_map.h"
#include "lib/select.h"
#include "lib/util.h"

int rl_parse_size(const char *opt, const char *s, uint64_t min, uint64_t *bytes)
{
	static const struct { const char *unit; double mul; } units[] = {
		{"", 1}, {"B", 1}, {"K", 1024.0}, {"KiB", 1024.0}, {"M", 1048576.0}, {"MiB", 1048576.0},
		{"G", 1073741824.0}, {"GiB", 1073741824.0},
	};
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !(v > 0)) {
		sf_error("%s: '%s' is not a size (a positive number, optionally K, M or G)", opt, s);
		return -1;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit) && v * units[i].mul < 9.2e18) {
			*bytes = (uint64_t)(v * units[i].mul + 0.5);
			if (*bytes >= min)
				return 0;
			sf_error("%s %s is too small: at least %" PRIu64 "K", opt, s, min >> 10);
			return -1;
		}
	sf_error("%s: '%s': unknown unit '%s' (use K, M or G, powers of 1024)", opt, s, end);
	return -1;
}

int rl_budget_create(const char *dir, uint64_t cap, char *path, size_t cap_len)
{
	snprintf(path, cap_len, "%s/.budget", dir);
	int fd = notes_dir_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		sf_error("%s: %s (needed by --max-size)", path, strerror(errno));
		path[0] = 0;
		return -1;
	}
	struct sf_budget b = {.magic = SF_BUDGET_MAGIC, .cap = cap};
	static char page[SF_BUDGET_SIZE];
	memcpy(page, &b, sizeof(b));
	ssize_t w = write(fd, page, sizeof(page));
	int err = errno;
	close(fd);
	if (w != (ssize_t)sizeof(page)) {
		sf_error("%s: %s (needed by --max-size)", path, w < 0 ? strerror(err) : "short write");
		unlink(path);
		path[0] = 0;
		return -1;
	}
	setenv(SF_ENV(BUDGET_FILE), path, 1);
	return 0;
}

int rl_budget_report(const char *path, uint64_t cap, uint64_t start_mono_ns, uint64_t dropped_in_logs)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sf_warn("%s: %s: cannot tell whether --max-size was reached", path, strerror(errno));
		return 0;
	}
	struct sf_budget b;
	ssize_t r = read(fd, &b, sizeof(b));
	close(fd);
	if (r != (ssize_t)sizeof(b) || b.magic != SF_BUDGET_MAGIC) {
		sf_warn("%s: damaged: cannot tell whether --max-size was reached", path);
		return 0;
	}
	if (!b.capped)
		return 0;
	double after = b.capped_mono_ns > start_mono_ns ? (double)(b.capped_mono_ns - start_mono_ns) / 1e9 : 0;
	uint64_t lost = dropped_in_logs + b.dropped_nolog;
	fprintf(stderr,
		"sftrace: --max-size %" PRIu64 " bytes reached %.3f s into the run (pid %u): recording stopped there; "
		"%" PRIu64 " event%s not recorded",
		cap, after, b.capped_pid, lost, lost == 1 ? "" : "s");
	if (b.dropped_nolog)
		fprintf(stderr, " (%" PRIu64 " in processes that got no log)", b.dropped_nolog);
	fputc('\n', stderr);
	return 1;
}

int rl_parse_signal(const char *opt, const char *s)
{
	char *end;
	long n = strtol(s, &end, 10);
	int sig = -1;
	if (end != s && !*end) {
		if (n >= 1 && n < NSIG)
			sig = (int)n;
	} else {
		const char *name = strncasecmp(s, "SIG", 3) ? s : s + 3;
		for (int i = 1; i < NSIG && sig < 0; i++) {
			const char *abbrev = sigabbrev_np(i);
			if (abbrev && !strcasecmp(abbrev, name))
				sig = i;
		}
	}
	if (sig > 0 && sig < SIGRTMIN && !sigabbrev_np(sig)) {
		/* 32 and 33: real-time numbers glibc keeps (SIGRTMIN is past them) */
		sf_error("%s: signal %d is glibc's own (thread cancellation and set*id use 32 and 33); use USR1, USR2 or "
			 "a real-time signal from %d (SIGRTMIN) to %d by number (e.g. 40)",
			 opt, sig, SIGRTMIN, SIGRTMAX);
		return -1;
	}
	if (sig > 0 && sf_ring_signal_refused(sig)) {
		/* format/ring_signal.h says why */
		sf_error("%s: SIG%s cannot ask for snapshots (its default action is the program's: a fault would "
			 "loop, PIPE or TERM would no longer end it); use USR1, USR2 or a real-time signal by number (e.g. 40)",
			 opt, sigabbrev_np(sig));
		return -1;
	}
	if (sig > 0)
		return sig;
	sf_error("%s: '%s' is not a signal a handler can catch (e.g. USR2, SIGUSR1, 10)", opt, s);
	return -1;
}

/* ---- --trigger ---- */

/* "FUNC" or "FUNC>DUR": the duration is what follows the last '>' when it
 * reads as one (a regex may hold '>' too, as in generic arguments). */
static int split_trigger(const char *spec, char **regex, uint64_t *dur_ns)
{
	const char *gt = strrchr(spec, '>');
	*dur_ns = 0;
	if (gt && gt[1]) {
		const char *p = gt + 1;
		while ((*p >= '0' && *p <= '9') || *p == '.')
			p++;
		if (p > gt + 1 && (!strcmp(p, "ns") || !strcmp(p, "us") || !strcmp(p, "ms") || !strcmp(p, "s"))) {
			if (io_parse_duration("--trigger", gt + 1, dur_ns) < 0)
				return -1;
			if (!*dur_ns) {
				sf_error("--trigger '%s': the duration must be above 0 (give FUNC alone to trigger on entry)",
					 spec);
				return -1;
			}
			*regex = strndup(spec, (size_t)(gt - spec));
			return 0;
		}
	}
	*regex = xstrdup(spec);
	return 0;
}

/* Whether the ELF file has an XRay instrumentation map: 1, 0, or -1 if it
 * cannot be read as ELF (sel_load then says why). */
static int has_sleds(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct xray_section sec;
	int r = xray_find_section(fd, &sec);
	close(fd);
	return r;
}

/* Appends the functions of obj that regex selects (as sftrace filter -r
 * selects them) to the trigger file (out NULL: only counts them); *funcs
 * += their number. no_objs: obj is the executable and no --trigger-object
 * was given. -1 after a message. */
static int resolve_in(const char *spec, const char *obj, const char *regex, uint64_t dur, int no_objs, FILE *out,
		      size_t *funcs)
{
	struct nm_patterns inc = {0};
	nm_add(&inc, regex, "-r");
	struct sel_query q = {&inc, NULL, NM_DEMANGLED, 0};
	struct sel_object o = {0};
	int rc = 0;
	if (nm_compile(&inc) < 0 || sel_load(&o, obj) < 0 || sel_select(&o, &q) < 0) {
		/* node and an addon: the executable has no sleds, the function is
		 * in an object the program dlopens. */
		sf_error("--trigger '%s': cannot read the functions of %s%s", spec, obj,
			 no_objs ? " (if the function is in a library or module the program loads, name that file "
				   "with --trigger-object FILE)"
				 : "");
		rc = -1;
	} else {
		if (out)
			fprintf(out, "object %s %s\n", o.build_id, o.path);
		for (size_t i = 0; out && i < o.nfuncs; i++) {
			if (!sel_is_selected(&o.funcs[i]))
				continue;
			fprintf(out, "0x%" PRIx64 " %" PRIu64 " ", o.funcs[i].vaddr, dur);
			sel_write_name(out, sel_func_name(&o, &o.funcs[i]));
			fputc('\n', out);
		}
		*funcs += o.nselected;
	}
	sel_free(&o);
	nm_free(&inc);
	return rc;
}

/* resolve_in over the executable (unless it has no sleds and objects
 * are given: node and an addon) and every --trigger-object. */
static int resolve_all(const char *spec, const char *exe, char *const *objs, size_t nobjs, const char *pattern,
		       uint64_t dur, FILE *out, size_t *funcs)
{
	int rc = 0;
	if (!nobjs || has_sleds(exe) != 0)
		rc = resolve_in(spec, exe, pattern, dur, !nobjs, out, funcs);
	for (size_t k = 0; k < nobjs && !rc; k++)
		rc = resolve_in(spec, objs[k], pattern, dur, 0, out, funcs);
	return rc;
}

int rl_triggers_write(const char *dir, const char *exe, char *const *objs, size_t nobjs, char *const *specs,
		      size_t n, char *path, size_t cap)
{
	snprintf(path, cap, "%s/.triggers", dir);
	/* 0600 whatever the umask: the runtime refuses a file others may
	 * write (src/runtime/trust.c). */
	int fd = notes_dir_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!out) {
		if (fd >= 0)
			close(fd);
		sf_error("%s: %s (needed by --trigger)", path, strerror(errno));
		path[0] = 0;
		return -1;
	}
	fprintf(out, "sftrace-filter 1\n");
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		char *regex;
		uint64_t dur;
		if (split_trigger(specs[i], &regex, &dur) < 0) {
			rc = -1;
			break;
		}
		/* FUNC is a name taken whole first (name_match.h's rule): a name
		 * copied from report, `f()`, is f and not f_other too. */
		size_t funcs = 0;
		char *whole = nm_whole_pattern(regex);
		rc = resolve_all(specs[i], exe, objs, nobjs, whole, dur, NULL, &funcs);
		const char *use = funcs ? whole : regex;
		funcs = 0;
		if (!rc)
			rc = resolve_all(specs[i], exe, objs, nobjs, use, dur, out, &funcs);
		free(whole);
		if (!rc && !funcs) {
			if (nobjs)
				sf_error("--trigger '%s': no instrumented function of %s or of the %zu --trigger-object "
					 "file%s matches '%s'",
					 specs[i], exe, nobjs, nobjs == 1 ? "" : "s", regex);
			else
				sf_error("--trigger '%s': no instrumented function of %s matches '%s' "
					 "(sftrace filter -p %s -r REGEX shows what does; --trigger-object OBJECT looks in "
					 "a library or a dlopen'd module too)",
					 specs[i], exe, regex, exe);
			rc = -1;
		}
		free(regex);
	}
	if (fclose(out) != 0 && !rc) {
		sf_error("%s: %s", path, strerror(errno));
		rc = -1;
	}
	if (rc < 0) {
		unlink(path);
		path[0] = 0;
		return -1;
	}
	setenv(SF_ENV(TRIGGERS), path, 1);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* " (on ..., thread N, S s into the run)" from a snapshot's header: what
 * it was frozen for; "" for one written before snapshots said so. */
static void snapshot_why(const char *path, char *out, size_t cap)
{
	struct sf_header h;
	out[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	ssize_t n = read(fd, &h, sizeof(h));
	close(fd);
	if (n != (ssize_t)sizeof(h) || h.magic != SF_MAGIC || !h.reserved[SF_HDR_SNAP_TIME])
		return;
	static const char *const why[] = {"?", "the ring signal", "a trigger's entry", "a slow trigger call"};
	/* Event clock to seconds since start: the header's two calibration
	 * pairs are enough for a summary line (dump fits them all). */
	uint64_t t = h.reserved[SF_HDR_SNAP_TIME];
	double s = (double)(int64_t)(t - h.start_mono_ns) / 1e9;
	if (h.clock == SF_CLOCK_TSC && h.last_tsc > h.start_tsc)
		s = (double)(int64_t)(t - h.start_tsc) * (double)(h.last_mono_ns - h.start_mono_ns) /
		    (double)(h.last_tsc - h.start_tsc) / 1e9;
	if (h.snapshot_reason == SF_SNAP_COMMAND) /* taken by the writer thread: no thread of the program's */
		snprintf(out, cap, " (asked by sftrace snapshot, %.3f s into the run)", s);
	else
		snprintf(out, cap, " (on %s, thread %u, %.3f s into the run)",
			 why[h.snapshot_reason < 4 ? h.snapshot_reason : 0], (unsigned)h.reserved[SF_HDR_SNAP_THREAD], s);
}

void rl_list_snapshots(const char *dir, const char *stem, const char *ext, time_t since)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char prefix[NAME_MAX + 8];
	snprintf(prefix, sizeof(prefix), "%s.snap.", stem);
	size_t lp = strlen(prefix), le = strlen(ext), n = 0;
	char **names = NULL;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t ln = strlen(e->d_name);
		if (ln <= lp + le || strncmp(e->d_name, prefix, lp) || strcmp(e->d_name + ln - le, ext))
			continue;
		char path[PATH_MAX * 2];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= since) {
			names = xrealloc(names, (n + 1) * sizeof(*names));
			names[n++] = xstrdup(e->d_name);
		}
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_name);
	for (size_t i = 0; i < n; i++) {
		if (i < 10) {
			char path[PATH_MAX * 2], why[160];
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			snapshot_why(path, why, sizeof(why));
			fprintf(stderr, "sftrace: snapshot %s%s\n", sf_esc(path), why); /* a name the program may have made */
		}
		free(names[i]);
	}
	if (n > 10)
		fprintf(stderr, "sftrace: ... %zu snapshots in all (%s/%s*%s)\n", n, dir, prefix, ext);
	free(names);
}
