/* Files and directories named by the environment (SFTRACE_NOTES_DIR,
 * SFTRACE_BUDGET_FILE, SFTRACE_TRIGGERS, SFTRACE_FILTER, per-object
 * filters): nothing at such a path is trusted because of its name.
 *
 * record makes its files in a private directory (mkdtemp, then 0711: only
 * searchable by others; a random name) under $TMPDIR or /tmp. A name there can be taken over by another
 * user once the directory is gone, so every use checks what it opened:
 *   - no symlink is followed (O_NOFOLLOW) and nothing blocks (O_NONBLOCK:
 *     a FIFO does not hang the program in open);
 *   - a directory must be ours (or root's) and writable by nobody else;
 *   - a file must be regular, ours (or root's), writable by nobody else,
 *     with one link (no hard link to someone else's file);
 *   - what is read is copied into private memory, and what is mapped
 *     shared is size-checked first: a truncated file never SIGBUSes.
 * Everything here is async-signal-safe (notes are written from signal
 * handlers' messages): system calls only. */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime.h"

static int owner_ok(const struct stat *st)
{
	return (st->st_uid == geteuid() || st->st_uid == 0) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* The umask is the program's: a file the runtime creates gets 0600 from
 * fchmod, where the umask took bits from it (never in the usual case: one
 * fstat at each file's creation, nothing more). Not where a seccomp filter
 * of the program's would refuse it (sandbox.c): the file then keeps what
 * the umask left, as before. */
void sf_own_mode(int fd)
{
	struct stat st;
	if (fd < 0 || sf_syscall3(SYS_fstat, fd, (long)&st, 0) < 0 || (st.st_mode & 07777) == 0600 ||
	    st.st_uid != geteuid())
		return;
	if (sf_seccomp_allows(SYS_fchmod, fd, 0600, 0, 0, 0, 0))
		sf_syscall3(SYS_fchmod, fd, 0600, 0);
}

/* O_PATH: the directory is only ever a base for openat, and a process
 * that changed its uid may search record's 0711 directory, not read it. */
int sf_trust_dir(const char *path, const char **why)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		*why = errno == ELOOP || errno == ENOTDIR ? "not a directory (or a symlink)" : "cannot open";
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || !owner_ok(&st)) {
		*why = "not a private directory of this user (owner or mode)";
		sf_close(fd);
		return -1;
	}
	return fd;
}

static int check_file(int fd, const char **why)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		return -1;
	}
	if (!owner_ok(&st) || st.st_nlink != 1) {
		*why = "not a private file of this user (owner, mode or links)";
		return -1;
	}
	return 0;
}

int sf_trust_open(int dirfd, const char *path, int flags, mode_t mode, const char **why)
{
	int fd = openat(dirfd, path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
	if (fd < 0) {
		*why = errno == ELOOP ? "a symlink" : errno == ENOENT ? "no such file" : "cannot open";
		return -1;
	}
	if (check_file(fd, why) < 0) {
		sf_close(fd);
		return -1;
	}
	return fd;
}

/* A file the user named (SFTRACE_FILTER): O_NOFOLLOW|O_NONBLOCK, regular. */
static int trust_open_regular(const char *path, const char **why)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		*why = errno == ELOOP ? "a symlink" : errno == ENOENT ? "no such file" : "cannot open";
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		sf_close(fd);
		return -1;
	}
	return fd;
}

/* Reads the whole of fd (a regular file) into a fresh anonymous mapping of
 * *map_len bytes, NUL-terminated after *len: a file truncated or rewritten
 * meanwhile cannot fault the reader. */
static char *trust_read(int fd, size_t *len, size_t *map_len, const char **why)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < 0 || (uint64_t)st.st_size > (64u << 20)) {
		*why = "too large";
		return NULL;
	}
	size_t cap = (size_t)st.st_size;
	char *buf = sf_map_anon(cap + 1);
	if (!buf) {
		*why = "out of memory";
		return NULL;
	}
	size_t n = 0;
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	*len = n;
	*map_len = cap + 1;
	return buf;
}

char *sf_trust_load(const char *path, int private_file, int empty_ok, size_t *len, size_t *map_len, const char **why)
{
	int fd = private_file ? sf_trust_open(AT_FDCWD, path, O_RDONLY, 0, why) : trust_open_regular(path, why);
	if (fd < 0)
		return NULL;
	char *text = trust_read(fd, len, map_len, why);
	sf_close(fd);
	if (text && !*len && !empty_ok) {
		munmap(text, *map_len);
		*why = "empty";
		return NULL;
	}
	return text;
}

/* The root directory's identity at start-up: a program that chroots gets
 * nothing run or preloaded by path afterwards (filter.c, exec_env.c). */
static dev_t root_dev;
static ino_t root_ino;
static int root_known;

void sf_root_init(void)
{
	struct stat st;
	if (stat("/", &st) == 0) {
		root_dev = st.st_dev;
		root_ino = st.st_ino;
		root_known = 1;
	}
}

int sf_root_changed(void)
{
	struct stat st;
	if (!root_known)
		return 0;
	return stat("/", &st) < 0 || st.st_dev != root_dev || st.st_ino != root_ino;
}
