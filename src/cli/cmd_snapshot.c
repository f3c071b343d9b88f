/* sftrace snapshot PID: ask a process recorded with `record --ring` for a
 * snapshot of its rings. The process's runtime writes it (its writer
 * thread; once that has left with the main thread, a thread of the
 * program's at its next slot hand-off or as the process ends). This
 * command sends no signal: it counts its request in the process's log
 * (snap_sent, in the header it maps) and wakes that word, a shared futex
 * the writer waits on (src/runtime/snapshot.c). A signal to the process
 * landed on a thread of the program's and cut its sleep or poll short.
 * It then waits for the snapshot that answers its own request (the
 * request's number is in its header) and prints its path. Where the file goes
 * comes from the process's own environment (/proc/PID/environ), as
 * record set it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/target_pid.h"
#include "format/sf_env.h"
#include "format/sflog.h"
#include "lib/util.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace snapshot [OPTIONS] PID\n"
		"\n"
		"Asks process PID, recorded with 'sftrace record --ring', for a snapshot of its\n"
		"rings, waits until the runtime has written it, a log of its own named\n"
		"DIR/STEM.snap.PID.N.EXT next to the recording's DIR/STEM.EXT, and prints its\n"
		"path. Every command reads it like any log. The request goes through the\n"
		"process's log, not a signal: the program's threads see nothing of it (a\n"
		"signal would cut a sleep or poll short). A process with no log of its own\n"
		"yet (no event recorded, or no instrumented code, such as a shell between\n"
		"record and the program) is refused: there is nothing to snapshot.\n"
		"'kill -USR2 PID' (record --ring-signal) still asks for one too.\n"
		"\n"
		"options:\n"
		"  -t, --timeout SECONDS     how long to wait for the file (default 10)\n"
		"  -h, --help                this help\n"
		"\n"
		"Exit status: 0 when the snapshot was written, 1 otherwise.\n");
}

/* Whether pid was recorded with --ring, with its log path made absolute
 * (the snapshots lie next to it). 0, or -1 after a message. */
static int ring_target(pid_t pid, struct target_env *re)
{
	if (target_pid_env(pid, re) < 0)
		return -1;
	if (!re->ring || !re->output[0]) {
		sf_error("pid %d is not recorded with 'sftrace record --ring' (no " SF_ENV(RING) " in its environment)",
			 (int)pid);
		return -1;
	}
	if (re->output[0] != '/') {
		/* The runtime made it absolute against the cwd it started in. */
		char cwd[PATH_MAX], abs[PATH_MAX * 2];
		if (target_pid_cwd(pid, cwd, sizeof(cwd)) < 0) {
			sf_error("/proc/%d/cwd: %s", (int)pid, strerror(errno));
			return -1;
		}
		if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, re->output) >= sizeof(re->output)) {
			sf_error("pid %d: its log path is too long", (int)pid);
			return -1;
		}
		memcpy(re->output, abs, strlen(abs) + 1);
	}
	return 0;
}

/* The highest N of DIR/STEM.snap.PID.N.EXT present (0 if none). */
static long newest_snapshot(const char *dir, const char *prefix, const char *ext)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	long best = 0;
	size_t lp = strlen(prefix), le = strlen(ext);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t ln = strlen(e->d_name);
		if (ln <= lp + le || strncmp(e->d_name, prefix, lp) || strcmp(e->d_name + ln - le, ext))
			continue;
		char *end;
		long v = strtol(e->d_name + lp, &end, 10);
		if (end == e->d_name + ln - le && v > best)
			best = v;
	}
	closedir(d);
	return best;
}

/* The N of DIR/PREFIX N EXT, N > after, that answers request number req
 * (its header: reason SF_SNAP_COMMAND, SF_HDR_SNAP_REQUEST req), 0 if none
 * yet. Commands run at once each count their own request; the newest file
 * could be another's. */
static long answer_of(const char *dir, const char *prefix, const char *ext, long after, uint64_t req)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	long found = 0;
	size_t lp = strlen(prefix), le = strlen(ext);
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		size_t ln = strlen(e->d_name);
		if (ln <= lp + le || strncmp(e->d_name, prefix, lp) || strcmp(e->d_name + ln - le, ext))
			continue;
		char *end;
		long v = strtol(e->d_name + lp, &end, 10);
		if (end != e->d_name + ln - le || v <= after)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct sf_header h;
		if (fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == SF_MAGIC &&
		    h.snapshot_reason == SF_SNAP_COMMAND && h.reserved[SF_HDR_SNAP_REQUEST] == req)
			found = v;
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return found;
}

/* Whether name is STEM*EXT and not a snapshot's (a process's own log). */
static int own_log_name(const char *name, const char *stem, const char *ext)
{
	size_t ln = strlen(name), ls = strlen(stem), le = strlen(ext);
	return ln >= ls + le && !strncmp(name, stem, ls) && !strcmp(name + ln - le, ext) && !strstr(name, ".snap.");
}

/* pid's own log, if its descriptor fd (in the table dir, /proc/PID/fd or
 * a thread's) is one: opened here to be written, its header checked (it
 * names pid, is a ring log and no snapshot). -1 otherwise. */
static int open_own_log(pid_t pid, const char *dir, const char *fdname, const char *stem, const char *ext)
{
	char link[128 + NAME_MAX], target[PATH_MAX];
	snprintf(link, sizeof(link), "%s/%s", dir, fdname);
	ssize_t k = readlink(link, target, sizeof(target) - 1);
	if (k <= 0 || target[0] != '/')
		return -1;
	target[k] = 0;
	const char *name = strrchr(target, '/') + 1;
	if (!own_log_name(name, stem, ext))
		return -1;
	/* By its path, never following a link, and the same file the process has open. */
	int fd = open(target, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat mine, theirs;
	struct sf_header h;
	if (fd >= 0 && fstat(fd, &mine) == 0 && stat(link, &theirs) == 0 && S_ISREG(mine.st_mode) &&
	    mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino &&
	    pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == SF_MAGIC && h.pid == (uint32_t)pid &&
	    !h.snapshot && h.ring_bytes)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The header of pid's own log, mapped to be written (its snap_sent word):
 * the log pid has open. NULL when there is none (no event recorded yet)
 * or it cannot be written here. */
static struct sf_header *map_log_in(pid_t pid, const char *dirname, const char *stem, const char *ext)
{
	DIR *d = opendir(dirname);
	if (!d)
		return NULL;
	struct sf_header *h = NULL;
	struct dirent *e;
	while (!h && (e = readdir(d))) {
		int fd = e->d_name[0] == '.' ? -1 : open_own_log(pid, dirname, e->d_name, stem, ext);
		if (fd < 0)
			continue;
		void *m = mmap(NULL, SF_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED)
			h = m;
		close(fd);
	}
	closedir(d);
	return h;
}

/* pid's own log by its mapping (/proc/PID/maps: the runtime keeps its
 * header mapped, shared, from offset 0): where no table holds its
 * descriptor (the writer left with the main thread, and no thread of the
 * program's has needed it since). Opened by path, never following a
 * link, and checked to be the file mapped (device and inode). */
static struct sf_header *map_log_in_maps_of(pid_t pid, const char *path, const char *stem, const char *ext)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	struct sf_header *h = NULL;
	char line[PATH_MAX + 256];
	while (!h && fgets(line, sizeof(line), f)) {
		unsigned long long off, ino;
		unsigned maj, min;
		char perms[8];
		int at = 0;
		if (sscanf(line, "%*x-%*x %7s %llx %x:%x %llu %n", perms, &off, &maj, &min, &ino, &at) != 5 || !at ||
		    off != 0 || perms[3] != 's' || line[at] != '/')
			continue;
		char *file = line + at;
		file[strcspn(file, "\n")] = 0;
		const char *name = strrchr(file, '/') + 1;
		if (!own_log_name(name, stem, ext))
			continue;
		int fd = open(file, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		struct sf_header hd;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (unsigned long long)st.st_ino == ino &&
		    major(st.st_dev) == maj && minor(st.st_dev) == min &&
		    pread(fd, &hd, sizeof(hd), 0) == (ssize_t)sizeof(hd) && hd.magic == SF_MAGIC &&
		    hd.pid == (uint32_t)pid && !hd.snapshot && hd.ring_bytes) {
			void *m = mmap(NULL, SF_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m != MAP_FAILED)
				h = m;
		}
		if (fd >= 0)
			close(fd);
	}
	fclose(f);
	return h;
}

/* The maps of a live thread: a main thread that has ended (a zombie
 * leader) has released its memory map, and /proc/PID/maps is empty. */
static struct sf_header *map_log_in_maps(pid_t pid, const char *stem, const char *ext)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	struct sf_header *h = map_log_in_maps_of(pid, path, stem, ext);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = h ? NULL : opendir(path);
	struct dirent *e;
	while (d && !h && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || strlen(e->d_name) > 20)
			continue;
		char maps[96];
		snprintf(maps, sizeof(maps), "/proc/%d/task/%s/maps", (int)pid, e->d_name);
		h = map_log_in_maps_of(pid, maps, stem, ext);
	}
	if (d)
		closedir(d);
	return h;
}

/* The log's descriptor is in the runtime's writer thread's own table
 * (its /proc/PID/task/TID/fd), where it has one; else in the process's;
 * else, with no descriptor anywhere, the log mapped. */
static struct sf_header *map_own_log(pid_t pid, const char *stem, const char *ext)
{
	char dirname[96];
	snprintf(dirname, sizeof(dirname), "/proc/%d/fd", (int)pid);
	struct sf_header *h = map_log_in(pid, dirname, stem, ext);
	snprintf(dirname, sizeof(dirname), "/proc/%d/task", (int)pid);
	DIR *d = h ? NULL : opendir(dirname);
	struct dirent *e;
	while (d && !h && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) > 20)
			continue;
		char fds[96];
		snprintf(fds, sizeof(fds), "/proc/%d/task/%s/fd", (int)pid, e->d_name);
		h = map_log_in(pid, fds, stem, ext);
	}
	if (d)
		closedir(d);
	return h ? h : map_log_in_maps(pid, stem, ext);
}

/* The request counted in the process's log (snap_sent), and the writer
 * woken: the counter's low half is a shared futex word it waits on. */
static uint64_t send_request(struct sf_header *h)
{
	uint64_t req = __atomic_add_fetch(&h->snap_sent, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, (uint32_t *)(void *)&h->snap_sent, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	return req;
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"timeout", required_argument, 0, 't'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	double timeout = 10;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't': {
			char *end;
			timeout = strtod(optarg, &end);
			if (end == optarg || *end || !(timeout > 0)) {
				sf_error("--timeout must be a positive number of seconds, not '%s'", optarg);
				return 2;
			}
			break;
		}
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "(sftrace snapshot --help describes the options)\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		sf_error("give one PID (usage: sftrace snapshot [OPTIONS] PID)");
		return 2;
	}
	char *end;
	long pid = strtol(argv[optind], &end, 10);
	if (end == argv[optind] || *end || pid <= 0 || pid > INT_MAX) {
		sf_error("'%s' is not a process id", argv[optind]);
		return 2;
	}
	struct target_env re;
	if (ring_target((pid_t)pid, &re) < 0)
		return 1;

	/* DIR/STEM.EXT -> DIR, "STEM.snap.PID.", EXT (the runtime's naming). */
	char dir[PATH_MAX], prefix[NAME_MAX + 64], ext[NAME_MAX + 1], stem[NAME_MAX + 1];
	const char *slash = strrchr(re.output, '/');
	const char *base = slash + 1;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash == re.output ? 1 : slash - re.output), re.output);
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = base + strlen(base);
	snprintf(prefix, sizeof(prefix), "%.*s.snap.%ld.", (int)(dot - base), base, pid);
	snprintf(ext, sizeof(ext), "%s", dot);
	snprintf(stem, sizeof(stem), "%.*s", (int)(dot - base), base);

	struct sf_header *h = map_own_log((pid_t)pid, stem, ext);
	if (!h) {
		sf_error("pid %ld has no log of its own open in %s/ (it has recorded no event yet, or loaded no "
			 "instrumented code, such as a shell between record and the program): nothing to snapshot; "
			 "nothing sent",
			 pid, dir);
		return 1;
	}
	long before = newest_snapshot(dir, prefix, ext);
	uint64_t req = send_request(h);
	munmap(h, SF_HEADER_SIZE);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		long n = answer_of(dir, prefix, ext, before, req);
		if (n > 0) {
			printf("%s/%s%ld%s\n", dir, prefix, n, ext);
			return 0;
		}
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			sf_error("pid %ld exited before writing a snapshot (its log %s holds its rings)", pid, re.output);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 > timeout) {
			if (target_pid_leader_gone((pid_t)pid))
				sf_error("pid %ld wrote no snapshot in %s/ within %g s: its main thread has ended, and the "
					 "writer thread with it, so a thread of the program's writes it at its next slot "
					 "hand-off or as the process ends, and none has yet (the request stays)",
					 pid, dir, timeout);
			else
				sf_error("pid %ld wrote no snapshot in %s/ within %g s (it may have reached "
					 "--max-snapshots, or be stopped)",
					 pid, dir, timeout);
			return 1;
		}
		usleep(10000);
	}
}
