#include "cli/record_stale.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/record_files.h"
#include "cli/record_notes_dir.h"
#include "format/keeper_files.h"

#define PREFIX "sftrace-notes-"

/* The namespace's inode: a pid (or an abstract socket name) means the same
 * process only to a reader in the same namespace. 0 when unknown. */
static uint64_t ns_ino(const char *name)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* pid's start time (clock ticks after boot, /proc/PID/stat field 22): a
 * pid reused by a later process has another. 0 when pid is gone or a
 * zombie (it holds nothing and does nothing more: a keeper killed with
 * record waits to be reaped by whoever it was reparented to, maybe never),
 * -1 when it cannot be told. */
static long long start_time(pid_t pid, unsigned long long *out)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -1;
	ssize_t r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return r == 0 || errno == ESRCH ? 0 : -1;
	buf[r] = 0;
	/* After the command name, which may hold anything but ends at the last ')' */
	char *p = strrchr(buf, ')');
	if (p && (p[1] != ' ' || p[2] == 'Z' || p[2] == 'X'))
		return p[1] == ' ' ? 0 : -1;
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 out) != 1)
		return -1;
	return 1;
}

int stale_stamp(const char *dir, pid_t pid)
{
	unsigned long long st;
	if (start_time(pid, &st) != 1)
		return -1;
	char path[4096], line[160];
	if (snprintf(path, sizeof(path), "%s/%s", dir, STALE_STAMP) >= (int)sizeof(path))
		return -1;
	int n = snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 " %d %llu %" PRIx64 "\n", ns_ino("pid"),
			 ns_ino("net"), (int)pid, st, rfiles_salt());
	/* O_NOFOLLOW, 0600: the directory is record's (0711), the stamp too;
	 * one write of one line: a sweep reads whole lines only. */
	int fd = notes_dir_open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, line, (size_t)n);
	close(fd);
	return w == n ? 0 : -1;
}

/* 1 if some process may still hold the directory (dev, ino) whose stamp
 * is text: a keeper's abstract name still bound (record binds it before
 * the stamp, the keeper holds it for its life: a keeper that record could
 * not stamp yet), a stamped process alive, or a line this namespace
 * cannot judge. 0 only for a stamp of processes all gone. */
static int kept(const char *text, uint64_t dev, uint64_t ino)
{
	uint64_t pidns = ns_ino("pid"), netns = ns_ino("net");
	int lines = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		if (!nl)
			return 1; /* a line being written: its writer lives */
		uint64_t lp, ln, salt;
		int pid;
		unsigned long long st, now;
		if (sscanf(p, "%" SCNu64 " %" SCNu64 " %d %llu %" SCNx64, &lp, &ln, &pid, &st, &salt) != 5 || pid <= 0 ||
		    !pidns || !netns || lp != pidns || ln != netns)
			return 1;
		long long r = start_time(pid, &now);
		if (r < 0 || (r == 1 && now == st))
			return 1;
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return 1;
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		size_t n = sf_kf_name(a.sun_path + 1, dev, ino, salt);
		/* Bound for an instant, then let go: only to learn whether
		 * some keeper still holds the name. */
		int held = bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0;
		close(fd);
		if (held)
			return 1;
		lines++;
		p = nl + 1;
	}
	return lines == 0;
}

/* The stamp of the directory open at dfd, NUL-terminated in buf; -1 when
 * there is none that record of this user made (a regular file, its own,
 * small). */
static int read_stamp(int dfd, char *buf, size_t cap)
{
	int fd = openat(dfd, STALE_STAMP, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size >= (off_t)cap) {
		close(fd);
		return -1;
	}
	ssize_t r = read(fd, buf, cap - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return 0;
}

/* name in tmp (open at tfd), removed when stale. 1 if it was. */
static int sweep_one(int tfd, const char *name)
{
	int dfd = openat(tfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (dfd < 0)
		return 0; /* not a directory, a symlink: never followed */
	struct stat st;
	char stamp[2048];
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 07777) != 0711 ||
	    read_stamp(dfd, stamp, sizeof(stamp)) < 0 || kept(stamp, (uint64_t)st.st_dev, (uint64_t)st.st_ino)) {
		close(dfd);
		return 0;
	}
	/* Its files (record makes no subdirectory there; one found keeps the
	 * directory, left alone), the stamp last: a sweep killed half way
	 * leaves a directory the next one still knows. */
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, STALE_STAMP))
			unlinkat(dfd, e->d_name, 0);
	unlinkat(dfd, STALE_STAMP, 0);
	closedir(d);
	/* The name again, still that directory: in a sticky /tmp only its
	 * owner (this user) can have swapped it; rmdir takes no symlink. */
	struct stat now;
	if (fstatat(tfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)
		return 0;
	return unlinkat(tfd, name, AT_REMOVEDIR) == 0;
}

int stale_sweep(const char *tmp)
{
	int tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return 0;
	int dup_fd = fcntl(tfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		close(tfd);
		return 0;
	}
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, PREFIX, sizeof(PREFIX) - 1) && strlen(e->d_name) == sizeof(PREFIX) - 1 + 6 &&
		    (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN))
			removed += sweep_one(tfd, e->d_name);
	closedir(d);
	close(tfd);
	return removed;
}
