/* The log file: created on first use (a process that never runs
 * instrumented code writes no log), header page mapped MAP_SHARED so its
 * counters survive crashes, chunks appended at offsets claimed with one
 * atomic add (no lock on the flush path), and per-thread slots: page-aligned
 * regions of the file mapped MAP_SHARED, so the events a thread has not yet
 * handed off are in the page cache the moment they are stored and survive
 * SIGSEGV, abort, _exit and kill -9.
 *
 * The log's descriptor is the runtime's, not the program's: it sits near
 * the top of the table, close-on-exec (rt_libc.c, sf_fd_keep), and the
 * program's close, close_range, closefrom, dup2 and dup3 leave it alone
 * (fdguard.c): a program that closes every descriptor or dup2s its own
 * file over that number finds its files holding what it wrote, and its
 * calls are still recorded. Every use (a chunk write, file space for a
 * slot, a slot's mapping, a snapshot) holds the number (sf_fd_use) and
 * checks with fstat that it still is the log, for what those wrappers
 * cannot see (a system call instruction in the program's own code). When
 * the check fails the log is opened again, as the very same file (device
 * and inode; the header stays mapped, so the inode cannot be reused), and
 * recording goes on; when it cannot be, recording stops and every chunk
 * after is a counted write error (EBADF) that record reports. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <sys/syscall.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#define SF_PIDFD_THREAD O_EXCL /* pidfd_open of a thread, not only a leader (Linux 6.9) */

#include "sf_arch.h"
#include "format/keeper_files.h"
#include "format/packed.h"
#include "runtime/runtime.h"

static struct {
	struct sf_fd_guard g;      /* the descriptor; checked before each use: log_fd_use() */
	uint64_t dev, ino;         /* what fd must be */
	int reopen_lock;
	int lost;                  /* fd gone and the log could not be opened again */
	int failed;                /* creation failed: stay off, say it once */
	struct sf_header *hdr;
	uint64_t end;              /* next free file offset (atomic) */
	uint64_t fsize_limit;      /* RLIMIT_FSIZE: writing past it would raise SIGXFSZ */
	struct sf_slot *free_slots;
	struct sf_slot *all_slots; /* every slot mapped, for a fork child to unmap */
	struct sf_slot *slot_pool; /* records for slots, carved from mmap'd pages */
	size_t slot_pool_left;
	int lock;
	char path[PATH_MAX];
	void (*on_create)(void); /* sf_log_on_create */
	int files_shared;          /* a clone(CLONE_FILES) child: the table is its parent's too */
	int ctor_brief;            /* made in a library's constructor, before step 2: held only for each use */
	int hold;                  /* such a child keeps its descriptor between uses (sf_log_hold) */
	int solo;                  /* no thread of the runtime's holds the log (--writer sync, one CPU, a
				    * writer refused its own table): held only for each use (log_brief) */
	int table_full;            /* open_same_log: an open failed with EMFILE or ENFILE */
	int uses;                  /* uses in progress, every thread's (log_fd_use to log_fd_done) */
	int priv;                  /* the descriptor is in the writer thread's own table only: with_log_fd */
	int pfd;                   /* its number there (the writer's), -1 before the log exists */
	int keeper;                /* that thread is a clone(CLONE_FILES) child's keeper (writer.c) */
	/* Why the log was not made, for the loss line (sf_rt_lost): the
	 * call that failed to make it here, and record's keeper's answer
	 * when it was asked (keeper_asked). Set under the lock, by the
	 * thread that makes the log or by the writer for it (sf_writer_call
	 * returns once it is done). */
	struct sf_fail own_fail, keeper_fail;
	int keeper_asked;
} L = {.g.fd = -1, .pfd = -1};
static uint64_t more_features; /* sf_log_add_features */

/* Regions mapped ahead by the writer: see "regions mapped ahead" below. */
#define POOL_SLOTS 2
#define ARENA_CAPPED (-4001L) /* arena_write: the cap reached at an arena's end */
#define ARENA_MIN 4096u     /* the new log's OBJECT chunks: no unused space mid-file */
#define ARENA_MAX (1u << 20)

struct region {
	char *m;
	uint64_t off;
	uint32_t size;
};

static struct {
	int lock;                        /* pops and pushes only: never held across a wait */
	struct region slot[POOL_SLOTS];
	int nslots;
	int arena_lock;                  /* a chunk's copy into cur; signals blocked */
	struct region cur, next;         /* the arena, the one mapped ahead (m NULL: none) */
	uint32_t used;                   /* bytes of cur taken */
	uint32_t next_size;              /* the next arena's size */
	int asked;                       /* the writer was woken for what is ahead */
	int no_trim;                     /* chunks were written by descriptor past the regions */
	int filled;                      /* an arena filled: map the next one ahead from now on */
	int cut;                         /* the file was cut at exit: nothing more mapped ahead */
} P;

/* A lock taken with signals blocked, given back before they are put
 * back: an instrumented signal handler on the same thread can never wait
 * for a lock its own thread holds. */
static void lock_sig(int *lock, sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	sf_lock_take(lock, 1);
}

static void unlock_sig(int *lock, const sigset_t *old)
{
	sf_lock_give(lock);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* The log's lock guards log creation, slot allocation and the object
 * table. */
void sf_log_lock_sig(sigset_t *old)
{
	lock_sig(&L.lock, old);
}

void sf_log_unlock_sig(const sigset_t *old)
{
	unlock_sig(&L.lock, old);
}

int sf_log_ready(void)
{
	return __atomic_load_n(&L.hdr, __ATOMIC_ACQUIRE) != NULL;
}

static size_t str_len(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* Appends decimal n to buf at *pos. */
static void put_num(char *buf, size_t cap, size_t *pos, uint64_t n)
{
	char tmp[24];
	int k = 0;
	do {
		tmp[k++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	while (k && *pos + 1 < cap)
		buf[(*pos)++] = tmp[--k];
	buf[*pos] = 0;
}

static void put_str(char *buf, size_t cap, size_t *pos, const char *s, size_t n)
{
	for (size_t i = 0; i < n && *pos + 1 < cap; i++)
		buf[(*pos)++] = s[i];
	buf[*pos] = 0;
}

/* Log names: the requested path for the first process, then
 * <stem>.<pid><ext> (and <stem>.<pid>.<n><ext> if that exists too), where
 * <ext> is the requested name's extension (sf_log_ext_start, shared with
 * the keeper). docs/FORMAT.md documents it. */
void sf_log_snapshot_path(char *out, size_t cap, uint32_t n)
{
	const char *req = sf_config.output;
	size_t len = str_len(req), dot = sf_log_ext_start(req, len), pos = 0;
	put_str(out, cap, &pos, req, dot);
	put_str(out, cap, &pos, ".snap.", 6);
	put_num(out, cap, &pos, (uint64_t)getpid());
	put_str(out, cap, &pos, ".", 1);
	put_num(out, cap, &pos, n);
	put_str(out, cap, &pos, req + dot, len - dot);
}

/* Files that belong with the log (a deleted executable's copy, objects.c)
 * go beside it: the log's own directory (absolute once it exists), the
 * requested name's stem. */
int sf_log_sibling_path(char *out, size_t cap, const char *tail)
{
	const char *req = sf_config.output;
	size_t len = str_len(req), dot = sf_log_ext_start(req, len), base = 0, dir = 0, pos = 0;
	for (size_t i = 0; i < dot; i++)
		if (req[i] == '/')
			base = i + 1;
	for (size_t i = 0; L.path[i]; i++)
		if (L.path[i] == '/')
			dir = i + 1;
	put_str(out, cap, &pos, L.path, dir);
	put_str(out, cap, &pos, req + base, dot - base);
	put_str(out, cap, &pos, tail, str_len(tail));
	return pos + 1 < cap ? 0 : -1;
}

/* On the writer, leaving (writer.c, hand_over, --ring): the log's
 * directory opened O_PATH in its table, for the program's threads to
 * create snapshots in (snapshot.c, snapdir); -1 if it cannot be. */
int sf_log_dir_open(void)
{
	static char dir[sizeof(L.path)];
	size_t end = 0;
	for (size_t i = 0; L.path[i]; i++)
		if (L.path[i] == '/')
			end = i + 1;
	if (!L.hdr || !end)
		return -1;
	__builtin_memcpy(dir, L.path, end);
	dir[end] = 0;
	long fd = sf_syscall6(SYS_openat, AT_FDCWD, (long)dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	return fd < 0 ? -1 : (int)fd;
}

/* A fork child whose parent had created its log: the requested name is
 * taken (the parent's, or its parent's), so the child's own name is
 * sf.PID.log from the first try. Were the requested name tried first, a
 * child that cannot create files there (after a chroot) would be told it
 * cannot create its parent's log. */
static int parent_had_log;

static int open_log(void)
{
	const char *req = sf_config.output;
	size_t len = str_len(req);
	size_t dot = sf_log_ext_start(req, len);

	for (int attempt = parent_had_log ? 1 : 0; attempt < 100; attempt++) {
		size_t pos = 0;
		if (attempt == 0) {
			put_str(L.path, sizeof(L.path), &pos, req, len);
		} else {
			put_str(L.path, sizeof(L.path), &pos, req, dot);
			put_str(L.path, sizeof(L.path), &pos, ".", 1);
			put_num(L.path, sizeof(L.path), &pos, (uint64_t)getpid());
			if (attempt > 1) {
				put_str(L.path, sizeof(L.path), &pos, ".", 1);
				put_num(L.path, sizeof(L.path), &pos, (uint64_t)attempt - 1);
			}
			put_str(L.path, sizeof(L.path), &pos, req + dot, len - dot);
		}
		int fd = open(L.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			sf_own_mode(fd); /* the program's umask is not the log's */
			return fd;
		}
		if (errno != EEXIST) {
			int e = errno;
			sf_fail_set(&L.own_fail, "openat", e); /* (glibc's open is openat) */
			errno = e;
			return -1;
		}
		struct stat st;
		if (attempt == 0 && lstat(L.path, &st) == 0 && S_ISDIR(st.st_mode)) {
			/* A directory was named: refuse rather than write a
			 * sibling of it (e.g. /tmp.<pid> for /tmp). */
			sf_fail_set(&L.own_fail, NULL, EISDIR); /* the runtime's refusal, no call's */
			errno = EISDIR;
			return -1;
		}
	}
	sf_fail_set(&L.own_fail, "openat", EEXIST);
	errno = EEXIST;
	return -1;
}

/* The call reserve failed in last (NULL: RLIMIT_FSIZE, no call), for
 * the loss line of a log whose header could not be written. */
static const char *reserve_failed;

/* Reserves file space so that stores through a shared mapping can never
 * hit SIGBUS on a full disk. */
static int reserve(int fd, uint64_t off, uint64_t len)
{
	if (off + len > L.fsize_limit) {
		reserve_failed = NULL;
		errno = EFBIG;
		return -1;
	}
	int r;
	do
		r = fallocate(fd, 0, (off_t)off, (off_t)len);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	reserve_failed = "fallocate";
	if (errno != EOPNOTSUPP)
		return -1;
	/* Filesystems without fallocate: write the zeros. */
	static const char zeros[4096];
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < sizeof(zeros) ? (size_t)(len - done) : sizeof(zeros);
		ssize_t w = pwrite(fd, zeros, n, (off_t)(off + done));
		reserve_failed = "pwrite64";
		if (w == 0)
			errno = ENOSPC; /* (nothing written, no errno: the disk took nothing) */
		if (w <= 0)
			return -1;
		done += (uint64_t)w;
	}
	return 0;
}

/* Whether fd is the log (raw system call: no errno on the write path). */
static int is_log(int fd)
{
	struct stat st;
	return sf_syscall3(SYS_fstat, fd, (long)&st, 0) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_dev == L.dev &&
	       (uint64_t)st.st_ino == L.ino;
}

static void put_hex(char *buf, size_t cap, size_t *pos, uint64_t n)
{
	char tmp[16];
	int k = 0;
	do {
		tmp[k++] = "0123456789abcdef"[n & 15];
		n >>= 4;
	} while (n);
	while (k && *pos + 1 < cap)
		buf[(*pos)++] = tmp[--k];
	buf[*pos] = 0;
}

void sf_map_files_path(char *out, size_t cap, uint64_t lo, uint64_t hi)
{
	size_t pos = 0;
	put_str(out, cap, &pos, "/proc/self/map_files/", 21);
	put_hex(out, cap, &pos, lo);
	put_str(out, cap, &pos, "-", 1);
	put_hex(out, cap, &pos, hi);
}

/* A new descriptor of the log itself, or -1. First through the header's
 * mapping (/proc/self/map_files: the file itself, wherever its name went;
 * needs CAP_SYS_ADMIN), then by its path. Either way it must have the
 * log's device and inode: a name can have been replaced by anything, so
 * it is opened without following a last symbolic link, without waiting on
 * a FIFO and without becoming a controlling terminal, and then checked. */
static int open_same_log(void)
{
	/* The leaving writer's own copy, where it offers it (writer.c,
	 * hand_over): no path, /proc or permission involved. */
	for (int tries = 0; tries < 8; tries++) {
		int fd = sf_writer_offer_take();
		if (fd < 0)
			break;
		int r = sf_fd_adopt(&L.g, fd, L.dev, L.ino, NULL);
		if (r >= 0)
			return r;
		if (r != -EAGAIN)
			break;
	}
	char mf[64];
	sf_map_files_path(mf, sizeof(mf), (uint64_t)L.hdr, (uint64_t)L.hdr + SF_HEADER_SIZE);
	const int flags = O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	const char *paths[2] = {mf, L.path};
	L.table_full = 0;
	for (int i = 0; i < 2; i++) {
		for (int tries = 0; tries < 8; tries++) {
			int fd = open(paths[i], flags | (i ? O_NOFOLLOW : 0));
			if (fd < 0 && (errno == EMFILE || errno == ENFILE))
				L.table_full = 1;
			if (fd < 0)
				break;
			sf_syscall3(SYS_fcntl, fd, F_SETFL, 0); /* O_NONBLOCK off again (harmless if not ours) */
			int r = sf_fd_adopt(&L.g, fd, L.dev, L.ino, paths[i]);
			if (r >= 0)
				return r;
			if (r != -EAGAIN) /* not the log, or no number for it */
				break;
		}
	}
	/* A process that may not open it (it dropped its privileges: the log
	 * is its creator's, 0600): record's keeper opens it for its pid
	 * (notes.c, sf_recfile). */
	for (int tries = 0; tries < 8; tries++) {
		int fd = sf_recfile(SF_KF_LOG_AGAIN, 0, L.path, -1, NULL, 0, NULL);
		if (fd < 0)
			break;
		if (!is_log(fd)) /* another file by that name, or the program's at this number by now: left alone */
			break;
		int r = sf_fd_adopt(&L.g, fd, L.dev, L.ino, NULL);
		if (r >= 0)
			return r;
		if (r != -EAGAIN)
			break;
	}
	return -1;
}

/* On the writer, its table its own: the log opened again there (the
 * program's number was not the log when the table was copied). The same
 * file or -1: then every use fails, counted (EBADF). */
static int reopen_as(int as_program)
{
	char mf[64];
	sf_map_files_path(mf, sizeof(mf), (uint64_t)L.hdr, (uint64_t)L.hdr + SF_HEADER_SIZE);
	const char *paths[2] = {mf, L.path};
	for (int i = 0; i < 2; i++) {
		const int flags = O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (i ? O_NOFOLLOW : 0);
		int fd = (int)(i || as_program ? sf_syscall6(SYS_openat, AT_FDCWD, (long)paths[i], flags, 0, 0, 0)
					       : sf_proc_open(paths[i], flags));
		if (fd < 0)
			continue;
		sf_syscall3(SYS_fcntl, fd, F_SETFL, 0);
		if (is_log(fd))
			return fd;
		sf_syscall3(SYS_close, fd, 0, 0);
	}
	return -1;
}

/* The header's mapping through the writer's own /proc (ns.c, sf_proc_open). */
static int reopen_private(void)
{
	return reopen_as(0);
}

/* Whether the log's descriptor is held only for each use: a
 * clone(CLONE_FILES) child's (below), a log made in a library's
 * constructor before step 2 (ctor_brief), and a process where no thread
 * of the runtime's holds it in a table of its own (solo: --writer sync,
 * the default writer on one CPU, a writer whose unshare(CLONE_FILES) a
 * container's profile refused, a fork child without a keeper; issue 24).
 * The program's table then holds the log only while a use runs. */
static int log_brief(void)
{
	return (L.files_shared || __atomic_load_n(&L.ctor_brief, __ATOMIC_ACQUIRE) ||
		__atomic_load_n(&L.solo, __ATOMIC_ACQUIRE)) &&
	       !__atomic_load_n(&L.hold, __ATOMIC_ACQUIRE);
}

static long keeper_reopen(void *unused);

/* The program's table full (EMFILE) where no thread of the runtime's
 * holds the log (L.solo, no writer): a keeper (writer.c: a thread made by
 * a raw clone without CLONE_FILES, its table emptied) takes it into its
 * own table, opened again there, and every use from then on is a request
 * to it. Tried once per process; 1 if the keeper holds the log. So a
 * program that fills its table loses no event, and gets every number it
 * would get untraced; the keeper is a thread more from then on. */
static int keeper_tried; /* keeper_takes_log, once per process */

static int keeper_takes_log(void)
{
	if (!__atomic_load_n(&L.solo, __ATOMIC_ACQUIRE) || L.files_shared || !L.hdr || sf_writer_active() ||
	    sf_keeper_alive() || __atomic_exchange_n(&keeper_tried, 1, __ATOMIC_ACQ_REL))
		return 0;
	if (sf_keeper_start() < 0)
		return 0;
	sf_writer_call(keeper_reopen, NULL);
	return 1;
}

/* The program closed the log's descriptor or put another file at its
 * number: open the log again, once for all threads. Returns the new
 * descriptor, or -EBADF from then on if the log cannot be had. */
static int log_reopen(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	sf_lock_take(&L.reopen_lock, 0);
	int fd = __atomic_load_n(&L.g.fd, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE)) {
		fd = -EAGAIN; /* the writer's now (sf_log_writer_started): ask it */
	} else if (L.lost) {
		fd = -EBADF;
	} else if (fd < 0 || !is_log(fd)) { /* not done by another thread meanwhile */
		/* The old number is not closed: it is the program's now. */
		sigset_t gold;
		sf_fd_gate_lock(&gold);
		fd = open_same_log(); /* published in L.g */
		if (fd < 0 && L.table_full && log_brief()) {
			/* Held only for each use, and the program's table is
			 * full now (its RLIMIT_NOFILE reached, as untraced it
			 * may be): this use fails, counted (EMFILE), and the
			 * next one tries again. */
			fd = -EMFILE;
			sf_fd_publish(&L.g, -1);
		} else if (fd < 0) {
			L.lost = 1;
			fd = -EBADF;
			sf_fd_publish(&L.g, -1);
		}
		sf_fd_gate_unlock(&gold);
	}
	sf_lock_give(&L.reopen_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (fd == -EMFILE && keeper_takes_log())
		fd = -EAGAIN; /* the keeper's now: ask it */
	return fd;
}

/* hooks.c, a thread ending while the writer offers its descriptor
 * (writer.c, sf_writer_offer_settle): the log opened again now (the offer
 * taken first) if the program's table holds none. */
void sf_log_reopen_now(void)
{
	int fd = __atomic_load_n(&L.g.fd, __ATOMIC_ACQUIRE);
	if (!L.hdr || __atomic_load_n(&L.priv, __ATOMIC_ACQUIRE) || (fd >= 0 && is_log(fd)))
		return;
	log_reopen();
}

/* The log's descriptor, held until log_fd_done(*ticket) and checked (one
 * fstat: what it costs is in docs/DESIGN.md); -errno if there is none
 * (nothing to give back then). While it is held, the program's dup2 onto
 * that number waits (fdguard.c); only a system call the wrappers cannot
 * see could replace it between the check and the use. */
#define NO_TICKET 2u
static void log_fd_leave(void);

static int log_fd_use(uint32_t *ticket)
{
	__atomic_add_fetch(&L.uses, 1, __ATOMIC_SEQ_CST);
	for (int tries = 0; tries < 2; tries++) {
		int fd = sf_fd_use(&L.g, ticket);
		if (fd >= 0 && is_log(fd))
			return fd;
		sf_fd_unuse(&L.g, *ticket);
		*ticket = NO_TICKET;
		if (!L.hdr || __atomic_load_n(&L.lost, __ATOMIC_RELAXED))
			break;
		int r = log_reopen();
		if (r == -EAGAIN || r == -EMFILE) { /* the writer's now; the table full for now */
			log_fd_leave();
			return r;
		}
		if (r < 0)
			break;
	}
	log_fd_leave();
	return -EBADF;
}

static void log_fd_forget(void);

/* Held only for each use (log_brief) and in no use now: given up. */
static void log_fd_release_idle(void)
{
	if (!log_brief() || __atomic_load_n(&L.priv, __ATOMIC_ACQUIRE))
		return;
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	if (!__atomic_load_n(&L.uses, __ATOMIC_SEQ_CST) && __atomic_load_n(&L.g.fd, __ATOMIC_ACQUIRE) >= 0)
		sf_fd_release(&L.g, L.dev, L.ino);
	sf_fd_gate_unlock(&gold);
}

/* A clone(CLONE_FILES) child's log descriptor lives in the table it shares
 * with its parent, which outlives it. Held between uses, it stayed there
 * whenever the child died by a signal (no code of the child's runs then:
 * an abort, a SIGSEGV, a kill -9; a pool whose workers crash leaked one
 * per crash, toward EMFILE). So such a child holds it only for each use
 * (a chunk write, a slot's file space and mapping, a snapshot's mapping):
 * the next use opens the log again (log_reopen: through the header's
 * mapping, else by path, checked to be the same file), and the events in
 * its slots need none (a shared mapping keeps the file). Only a child
 * killed during one of those uses (a few system calls) leaves it behind.
 * It costs an open, a move to the top of the table and a close per chunk
 * (docs/DESIGN.md has the numbers). A child about to change its
 * credentials keeps it from then on (sf_log_hold): it could not open its
 * creator's 0600 log again. */
static void log_fd_done(uint32_t ticket)
{
	if (ticket != NO_TICKET)
		sf_fd_unuse(&L.g, ticket);
	log_fd_leave();
}

/* The last use in progress gives the descriptor up, not each: threads
 * whose uses overlap share one descriptor. Were each use to give it up,
 * one thread's could close the descriptor another had just opened for its
 * own use and not yet taken (log_fd_use's second try then found none
 * either: a chunk of 8182 events dropped as a write error, in a child
 * whose 8 threads hand off at once). The count is read again under the
 * gate, which a reopen takes too: a use that began after the count fell
 * to zero either took the old number before it was given up (the release
 * waits for it) or opens the log again after. */
static void log_fd_leave(void)
{
	if (__atomic_sub_fetch(&L.uses, 1, __ATOMIC_SEQ_CST) || !log_brief())
		return;
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	if (!__atomic_load_n(&L.uses, __ATOMIC_SEQ_CST))
		sf_fd_release(&L.g, L.dev, L.ino);
	sf_fd_gate_unlock(&gold);
}

/* fn(fd, arg) with the log's descriptor fd: where the writer's table is
 * its own (private), on the writer thread, on request (two context
 * switches; none on the writer itself); else the shared table's number,
 * held and checked (log_fd_use). -errno if there is none. */
struct fd_op {
	long (*fn)(int fd, void *arg);
	void *arg;
};

static long run_private(void *p)
{
	struct fd_op *o = p;
	if (!sf_writer_private())
		return SF_WRITER_REFUSED; /* its unshare failed (sf_log_writer_begins) */
	return L.pfd >= 0 ? o->fn(L.pfd, o->arg) : -EBADF;
}

static long with_log_fd(long (*fn)(int fd, void *arg), void *arg)
{
	uint32_t t;
	int fd;
	do {
		if (__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE)) {
			struct fd_op o = {fn, arg};
			long r = sf_writer_call(run_private, &o);
			if (r != SF_WRITER_REFUSED)
				return r;
			fd = -EAGAIN; /* no private table after all: the program's */
			continue;
		}
		fd = log_fd_use(&t);
	} while (fd == -EAGAIN); /* went private meanwhile, or refused */
	if (fd < 0)
		return fd;
	long r = fn(fd, arg);
	log_fd_done(t);
	return r;
}

/* An absolute L.path, so that the log can be found again after a chdir.
 * Called with the lock held, so its buffer is static: a thread's first
 * event may come on a small stack (gtest's death-test children get two
 * pages). */
static void make_path_absolute(void)
{
	if (L.path[0] == '/')
		return;
	/* a log made after a seccomp filter's install (a first event after
	 * it) where the filter refuses getcwd (sandbox.c): kept relative */
	if (!sf_seccomp_allows(SYS_getcwd, (long)L.path, PATH_MAX, 0, 0, 0, 0))
		return;
	static char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return;
	size_t nc = str_len(cwd), np = str_len(L.path);
	if (nc + 1 + np >= sizeof(L.path))
		return;
	memmove(L.path + nc + 1, L.path, np + 1);
	memcpy(L.path, cwd, nc);
	L.path[nc] = '/';
}

static void fill_cmdline(struct sf_header *h)
{
	int fd = sf_fd_brief(open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		return;
	ssize_t n = read(fd, h->cmdline, sizeof(h->cmdline));
	if (n > 0) {
		h->cmdline_len = (uint32_t)n;
		char extra;
		if ((size_t)n == sizeof(h->cmdline) && read(fd, &extra, 1) == 1)
			h->cmdline_truncated = 1;
	}
	sf_close(fd);
}

/* The runtime gives its descriptor up: unguarded first, then closed once
 * no write holds it, and only if it still is the log. */
static void log_fd_forget(void)
{
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	sf_fd_release(&L.g, L.dev, L.ino);
	sf_fd_gate_unlock(&gold);
}

/* sf_fd_open_adopt's open: the log made (open_log names it in L.path),
 * or opened again at that name without blocking on a FIFO put there. */
static int open_log_file(const char *path, int again)
{
	if (!again)
		return open_log();
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0)
		sf_syscall3(SYS_fcntl, fd, F_SETFL, 0);
	return fd;
}

/* The process may not create its log where record wants it: it dropped
 * its privileges (setresuid to nobody, then fork: record's directory is
 * 0755 or 0700 root's), or chrooted. record's keeper, as record's user,
 * makes it (notes.c, sf_recfile): owned by record's user, 0600, named
 * as open_log would have (L.path gets the keeper's path). again: the
 * number was taken before the runtime claimed it; the keeper opens the
 * same file again (this process may not). */
static int by_keeper_helps(int err)
{
	/* no record, no keeper: the path's own error is the reason said */
	return (err == EACCES || err == EPERM || err == ENOENT || err == EROFS) && sf_recfile_keeper();
}

static int open_log_by_keeper(const char *path, int again)
{
	(void)path;
	L.keeper_asked = 1;
	int fd = again ? sf_recfile(SF_KF_LOG_AGAIN, 0, L.path, -1, NULL, 0, &L.keeper_fail)
		       : sf_recfile(SF_KF_LOG, !parent_had_log, NULL, -1, L.path, sizeof(L.path), &L.keeper_fail);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

/* On the writer, its table its own: the log made there, never in the
 * program's table. Above 0-2 all the same (the writer's messages test
 * descriptor 2). 0 or -errno. */
static long open_private(void *unused)
{
	(void)unused;
	int fd = open_log();
	if (fd < 0 && by_keeper_helps(errno)) /* a chrooted or unprivileged fork child's keeper (writer.c) */
		fd = open_log_by_keeper(L.path, 0);
	if (fd < 0)
		return -errno;
	if (fd < 3) {
		int high = (int)sf_syscall3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3);
		sf_syscall3(SYS_close, fd, 0, 0);
		if (high < 0)
			return high;
		fd = high;
	}
	struct stat st;
	long r = sf_syscall3(SYS_fstat, fd, (long)&st, 0);
	if (r < 0) {
		sf_syscall3(SYS_close, fd, 0, 0);
		return r;
	}
	L.dev = (uint64_t)st.st_dev;
	L.ino = (uint64_t)st.st_ino;
	L.pfd = fd;
	return 0;
}

static long close_private(void *unused)
{
	(void)unused;
	if (L.pfd >= 0)
		sf_syscall3(SYS_close, L.pfd, 0, 0);
	L.pfd = -1;
	return 0;
}

/* The log made in the program's table: the number the kernel gives
 * open_log is the runtime's once sf_fd_adopt has checked it (a program
 * close loop may reach it first: the file, created here, is then opened
 * again by path). 0 or -errno. */
static int create_shared(void)
{
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	sf_fd_guard_add(&L.g);
	struct stat st;
	int err;
	int fd = sf_fd_open_adopt(&L.g, open_log_file, L.path, 1, &st, &err);
	if (fd < 0 && by_keeper_helps(err))
		fd = sf_fd_open_adopt(&L.g, open_log_by_keeper, L.path, 2, &st, &err);
	if (fd < 0) {
		sf_fd_publish(&L.g, -1);
		sf_fd_gate_unlock(&gold);
		return -(err ? err : EBADF);
	}
	L.dev = (uint64_t)st.st_dev;
	L.ino = (uint64_t)st.st_ino;
	sf_fd_gate_unlock(&gold);
	return 0;
}

struct header_map {
	const char *failed;
	struct sf_header *h;
	struct sf_fail f; /* the call that failed, for the loss line */
};

static long map_header(int fd, void *arg)
{
	struct header_map *hm = arg;
	hm->failed = "cannot write log ";
	if (reserve(fd, 0, SF_HEADER_SIZE) < 0) {
		sf_fail_set(&hm->f, reserve_failed, errno);
		return -errno;
	}
	hm->failed = "cannot map log ";
	void *m = mmap(NULL, SF_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		sf_fail_set(&hm->f, "mmap", errno);
		return -errno;
	}
	hm->h = m;
	return 0;
}

/* On the writer: the log made and its header mapped, in one request. 1
 * (mapped: hm->h), -errno if it could not be made, or map_header's
 * answer. */
static long create_private(void *arg)
{
	if (!sf_writer_private())
		return SF_WRITER_REFUSED;
	long r = open_private(NULL);
	return r < 0 ? r : map_header(L.pfd, arg);
}

/* The runtime gives the log's descriptor up, wherever it is. */
static void log_fd_drop(void)
{
	if (__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE))
		sf_writer_call(close_private, NULL);
	else
		log_fd_forget();
}

/* The new log's header filled and published, its OBJECT chunks written
 * (on_create). Under the lock, on whichever thread makes the log. */
static void publish_header(struct sf_header *h)
{
	h->version = sf_args_any() ? SF_VERSION : SF_VERSION_NO_ARGS; /* older readers read a log without values */
	h->header_size = SF_HEADER_SIZE;
	h->pid = (uint32_t)getpid();
	h->ppid = (uint32_t)getppid();
	h->clock = (uint32_t)sf_config.clock;
	h->machine = SF_ARCH_MACHINE;
	/* patch.c marks tail sleds that jump to a patched entry; the rest is
	 * what sf_log_add_features was told, read again once h is published */
	h->features = SF_FEAT_TAIL_TARGET | SF_FEAT_OPTIONS | __atomic_load_n(&more_features, __ATOMIC_SEQ_CST);
	h->counter_hz = sf_arch_counter_hz();
	h->state = SF_STATE_RUNNING;
	h->start_realtime_ns = sf_start_realtime;
	h->start_tsc = sf_start_tsc;
	h->start_mono_ns = sf_start_mono;
	h->fork_time = sf_fork_time; /* 0 but in a forked child */
	h->fork_parent = sf_fork_time ? sf_fork_parent | (uint64_t)sf_fork_tid << 32 : 0;
	h->ring_bytes = (uint64_t)sf_config.ring_slots * SF_SLOT_SIZE;
	fill_cmdline(h);
	h->reserved[SF_HDR_TRIM_MIN_NS] = sf_config.trim_min_ns;
	h->reserved[SF_HDR_TRIM_MAX_DEPTH] = sf_config.trim_max_depth;
	L.end = SF_HEADER_SIZE;
	/* Magic last: a reader never sees a half-filled header as valid. */
	__atomic_store_n(&h->magic, SF_MAGIC, __ATOMIC_RELEASE);
	__atomic_store_n(&L.hdr, h, __ATOMIC_SEQ_CST);
	__atomic_or_fetch(&h->features, __atomic_load_n(&more_features, __ATOMIC_SEQ_CST), __ATOMIC_RELAXED);
	sf_log_calibrate();
	if (L.on_create) /* init.c: OBJECT chunks and patch statistics */
		L.on_create();
}

/* On the writer, its table its own: the log made, its header mapped,
 * filled and published, in one request (one wait for the thread whose
 * event makes the log). 0, or -errno with hm->h NULL for the requester
 * to say why (the writer's messages reach no stderr). */
static long publish_private(struct header_map *hm, long r)
{
	if (r < 0 || r == SF_WRITER_REFUSED)
		return r;
	if (!hm->h) {
		hm->failed = "cannot map log ";
		sf_fail_set(&hm->f, NULL, EBADF);
		return -EBADF;
	}
	L.lost = 0;
	make_path_absolute();
	publish_header(hm->h);
	sf_log_writer_refill(); /* the first thread's slots, without a second wait */
	return 0;
}

static long create_all_private(void *arg)
{
	return publish_private(arg, create_private(arg));
}

struct adopt {
	int fd; /* the log, in the program's table */
	struct header_map *hm;
};

/* On the writer: the log another thread made in the program's table
 * copied into this one's (pidfd_getfd of the leader's table, which every
 * program thread shares: same thread group, so no ptrace check; Linux
 * 5.6), its header mapped and published. */
static long adopt_all_private(void *arg)
{
	struct adopt *a = arg;
	if (!sf_writer_private())
		return SF_WRITER_REFUSED;
	long pidfd = sf_syscall3(SYS_pidfd_open, sf_syscall3(SYS_getpid, 0, 0, 0), 0, 0);
	if (pidfd < 0) {
		sf_fail_set(&a->hm->f, "pidfd_open", pidfd);
		return pidfd;
	}
	long fd = sf_syscall3(SYS_pidfd_getfd, pidfd, a->fd, 0); /* close-on-exec */
	sf_syscall3(SYS_close, pidfd, 0, 0);
	if (fd < 0) {
		sf_fail_set(&a->hm->f, "pidfd_getfd", fd);
		return fd;
	}
	if (!is_log((int)fd)) {
		sf_syscall3(SYS_close, fd, 0, 0);
		sf_fail_set(&a->hm->f, NULL, EBADF);
		return -EBADF;
	}
	L.pfd = (int)fd;
	return publish_private(a->hm, map_header(L.pfd, a->hm));
}

/* The writer was refused the log (EACCES, EPERM) with its credentials:
 * the process's, as glibc's set*id calls last gave them to every thread.
 * The thread whose event makes the log may hold others of its own (a raw
 * setresuid, per thread), as it would without a writer: it makes the log
 * in the program's table with them, as without a writer, the writer
 * takes a copy into its own, and the program's is closed. 0 or -errno. */
static long create_as_caller(struct header_map *hm)
{
	int r = create_shared();
	if (r < 0)
		return r;
	struct adopt a = {__atomic_load_n(&L.g.fd, __ATOMIC_ACQUIRE), hm};
	long made = sf_writer_call(adopt_all_private, &a);
	log_fd_forget(); /* the writer holds its own copy, or the log is given up */
	return made == SF_WRITER_REFUSED ? -EBADF : made;
}

static void put_cstr(char *buf, size_t cap, size_t *pos, const char *s)
{
	put_str(buf, cap, pos, s, str_len(s));
}

/* The log could not be made (err: -errno): the loss line, with the call
 * that failed (sf_rt_lost). step: a later step's (adopting the log made
 * in the program's table). Where this process's own open failed and
 * record's keeper was asked, both are said: the open in the text (why
 * the keeper was asked), the keeper's answer, or the request that did not
 * reach it, as the call. */
static void say_not_made(int err, const struct sf_fail *step)
{
	/* The name tried last (sf.PID.log when sf.log was taken). */
	const char *path = L.path[0] ? L.path : sf_config.output;
	struct sf_fail f = step->err ? *step : L.own_fail;
	if (!L.keeper_asked || step->err) {
		if (!f.err)
			sf_fail_set(&f, NULL, err);
		sf_rt_lost("cannot create log ", path, NULL, &f);
		return;
	}
	char text[640];
	size_t n = 0;
	if (L.own_fail.err) {
		put_cstr(text, sizeof(text), &n, " (");
		if (L.own_fail.call[0]) {
			put_cstr(text, sizeof(text), &n, L.own_fail.call);
			put_cstr(text, sizeof(text), &n, ": ");
		}
		put_cstr(text, sizeof(text), &n, strerror(L.own_fail.err));
		put_cstr(text, sizeof(text), &n, ")");
	}
	put_cstr(text, sizeof(text), &n, ", and ");
	/* Out of record's keeper's reach (a fork from outside its network
	 * namespace whose channel was refused, a name another process
	 * holds): said with the call that failed, its parent's if it was
	 * there; never a path not tried. */
	struct sf_fail hf;
	int kerr = L.keeper_fail.err;
	const char *why = kerr == ECONNREFUSED || kerr == ENOENT || kerr == EPERM ? sf_keeper_unreachable(&hf) : NULL;
	f = L.keeper_fail;
	if (why) {
		put_cstr(text, sizeof(text), &n, "record's keeper is out of its reach: ");
		put_cstr(text, sizeof(text), &n, why);
		if (hf.err)
			f = hf;
	} else if (f.keeper) {
		put_cstr(text, sizeof(text), &n, "record's keeper could not make it either");
	} else if (!strcmp(f.call, "connect")) { /* (a clone(CLONE_NEWNET) child's: not asked, not known) */
		put_cstr(text, sizeof(text), &n, "record's keeper could not be reached");
	} else {
		put_cstr(text, sizeof(text), &n, "asking record's keeper to make it failed");
	}
	if (!f.err)
		sf_fail_set(&f, NULL, err);
	sf_rt_lost("cannot create log ", path, text, &f);
}

/* Creates the log if it does not exist yet. Called with the lock held. */
static int log_create_locked(void)
{
	if (L.hdr)
		return 0;
	if (L.failed || !sf_config.enabled)
		return -1;
	if (sf_budget_take(SF_HEADER_SIZE) < 0) {
		L.failed = 1; /* record --max-size reached: this process writes no log */
		return -1;
	}
	sf_keeper_make_due(); /* a fork child's: the log made in its table (writer.c) */
	if (!__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE))
		sf_keeper_make_early(); /* before step 2: not in the program's table either (writer.c) */
	struct rlimit rl;
	L.fsize_limit = (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) ? rl.rlim_cur : UINT64_MAX;
	struct header_map hm = {"cannot write log ", NULL, {{0}, 0, 0}};
	sf_fail_set(&L.own_fail, NULL, 0);
	sf_fail_set(&L.keeper_fail, NULL, 0);
	L.keeper_asked = 0;
	long made = __atomic_load_n(&L.priv, __ATOMIC_ACQUIRE) ? sf_writer_call(create_all_private, &hm) : SF_WRITER_REFUSED;
	if ((made == -EACCES || made == -EPERM) && L.pfd < 0)
		made = create_as_caller(&hm);
	if (made == 0)
		return 0; /* made and published by the writer */
	if (made < 0 && made != SF_WRITER_REFUSED && L.pfd >= 0) { /* made, but its header not mapped */
		L.failed = 1;
		if (!hm.f.err)
			sf_fail_set(&hm.f, NULL, made);
		sf_rt_lost(hm.failed, L.path, NULL, &hm.f);
		sf_writer_call(close_private, NULL);
		return -1;
	}
	int r = made == SF_WRITER_REFUSED ? create_shared() : (int)made;
	if (r < 0) {
		L.failed = 1;
		say_not_made(r, &hm.f);
		return -1;
	}
	L.lost = 0;
	make_path_absolute();
	/* Made in the program's table before step 2 (a library constructor's
	 * first event: no keeper there, constructors must see one thread,
	 * writer.c): held only for each use from now on, as a clone(CLONE_FILES)
	 * child's is, so that a later constructor that lists /proc/self/fd
	 * sees what it sees untraced. The writer takes the log at step 2
	 * (sf_log_ctor_brief_end, go_private's reopen). */
	if (made == SF_WRITER_REFUSED && !L.files_shared && !__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE)) {
		if (!sf_keeper_alive() && !sf_services_started() && sf_services_thread_wanted())
			__atomic_store_n(&L.ctor_brief, 1, __ATOMIC_RELEASE);
		else /* no thread of the runtime's will hold it (log_brief) */
			__atomic_store_n(&L.solo, 1, __ATOMIC_RELEASE);
	}
	if (!hm.h)
		r = (int)with_log_fd(map_header, &hm);
	if (r < 0) {
		L.failed = 1;
		if (!hm.f.err)
			sf_fail_set(&hm.f, NULL, r);
		sf_rt_lost(hm.failed, L.path, NULL, &hm.f);
		log_fd_drop();
		return -1;
	}
	publish_header(hm.h);
	log_fd_release_idle();
	return 0;
}

/* Step 2 (init.c), before the writer is made: a log made in a library's
 * constructor is held between uses again (the writer takes it into its
 * own table: go_private opens it again there). */
void sf_log_ctor_brief_end(void)
{
	__atomic_store_n(&L.ctor_brief, 0, __ATOMIC_RELEASE);
}

/* Header features learnt outside the runtime (sftrace_heap_attach), before
 * or after the log exists: either the creation's second read sees them, or
 * this sees the header (both sequentially consistent). */
void sf_log_add_features(uint64_t bits)
{
	__atomic_or_fetch(&more_features, bits, __ATOMIC_SEQ_CST);
	struct sf_header *h = __atomic_load_n(&L.hdr, __ATOMIC_SEQ_CST);
	if (h)
		__atomic_or_fetch(&h->features, bits, __ATOMIC_RELAXED);
}

struct sf_header *sf_log_header(void)
{
	return __atomic_load_n(&L.hdr, __ATOMIC_ACQUIRE);
}

void sf_log_drop(uint64_t events)
{
	if (L.hdr && events)
		__atomic_add_fetch(&L.hdr->dropped_events, events, __ATOMIC_RELAXED);
	else
		sf_budget_drop_nolog(events);
}

int sf_log_capped(void)
{
	return sf_budget_capped();
}

static void write_failed(int err, uint64_t events)
{
	__atomic_add_fetch(&L.hdr->write_errors, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&L.hdr->last_errno, (uint32_t)err, __ATOMIC_RELAXED);
	sf_log_drop(events);
}

/* A batch chunk whose write stopped after `written` payload bytes: how many
 * of its records are whole in the file. A packed chunk's header is updated
 * to say so (count, byte length); the caller writes it again. */
static uint64_t chunk_kept(struct sf_chunk *c, const void *payload, size_t written)
{
	if (c->type != SF_CHUNK_PACKED)
		return written / sizeof(struct sf_event);
	size_t used;
	size_t len = written < c->reserved ? written : c->reserved;
	c->count = sf_unpack_prefix(c->base, payload, len, c->count, &used);
	c->reserved = used;
	return c->count;
}

struct chunk_write {
	struct sf_chunk *c;
	const void *payload;
	size_t payload_len, total;
	uint64_t off, events;
};

/* The chunk written at its offset, whole or counted as cut. 0. */
static long write_chunk_at(int fd, void *arg)
{
	struct chunk_write *w = arg;
	struct sf_chunk *c = w->c;
	const void *payload = w->payload;
	size_t payload_len = w->payload_len, total = w->total;
	uint64_t off = w->off, events = w->events;
	static const char pad[16];
	struct iovec iov[3] = {
		{c, sizeof(*c)},
		{(void *)payload, payload_len},
		{(void *)pad, total - sizeof(*c) - payload_len},
	};
	size_t done = 0;
	while (done < total) {
		/* Rebuild the iovec past what was written (short writes are rare). */
		struct iovec v[3];
		int nv = 0;
		size_t skip = done;
		for (int i = 0; i < 3; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			v[nv].iov_base = (char *)iov[i].iov_base + skip;
			v[nv].iov_len = iov[i].iov_len - skip;
			skip = 0;
			nv++;
		}
		/* Raw system call: the writer thread has no errno of its own. */
		long n = sf_syscall6(SYS_pwritev, fd, (long)v, nv, (long)(off + done), 0, 0);
		if (n == -EINTR)
			continue;
		if (n <= 0) {
			/* Complete events written before the failure stay readable
			 * (readers keep the complete events of a cut chunk): only
			 * the others are dropped. */
			uint64_t kept = done >= sizeof(*c) ? chunk_kept(c, payload, done - sizeof(*c)) : 0;
			if (done >= sizeof(*c) && c->type == SF_CHUNK_PACKED) /* its count now says what is whole */
				sf_syscall6(SYS_pwrite64, fd, (long)c, sizeof(*c), (long)off, 0, 0);
			write_failed(n < 0 ? (int)-n : ENOSPC, events > kept ? events - kept : 0);
			break;
		}
		done += (size_t)n;
	}
	if (done == total) /* whole in the file: a reader that finds fewer reads a cut file */
		__atomic_add_fetch(&L.hdr->chunks, 1, __ATOMIC_RELAXED);
	return 0;
}

static long arena_write(struct sf_chunk *c, const void *payload, size_t payload_len, size_t total);
static int arena_private(void);

void sf_log_write_chunk(struct sf_chunk *c, const void *payload, size_t payload_len, uint64_t events)
{
	if (!L.hdr)
		return;
	size_t total = (sizeof(*c) + payload_len + 15) & ~(size_t)15;
	c->magic = SF_CHUNK_MAGIC;
	c->size = (uint32_t)total;
	c->tsc = sf_config.clock == SF_CLOCK_TSC ? sf_now_raw() : 0;
	c->mono_ns = sf_mono_ns();
	if (sf_budget_take(total) < 0) {
		sf_log_drop(events); /* over --max-size: not a write error */
		return;
	}
	if (arena_private()) {
		long r = arena_write(c, payload, payload_len, total);
		if (r == ARENA_CAPPED) {
			sf_log_drop(events); /* over --max-size: not a write error */
			return;
		}
		if (r != SF_WRITER_REFUSED) {
			if (r < 0)
				write_failed((int)-r, events);
			return;
		}
	}
	__atomic_store_n(&P.no_trim, 1, __ATOMIC_RELAXED); /* past the regions: cutting at exit would lose it */
	uint64_t off = __atomic_fetch_add(&L.end, total, __ATOMIC_RELAXED);
	if (off + total > L.fsize_limit) {
		write_failed(EFBIG, events);
		return;
	}
	struct chunk_write w = {c, payload, payload_len, total, off, events};
	long r = with_log_fd(write_chunk_at, &w);
	if (r < 0)
		write_failed((int)-r, events);
}

static struct sf_slot *slot_record(void)
{
	if (!L.slot_pool_left) {
		L.slot_pool = sf_map_anon(65536);
		if (!L.slot_pool)
			return NULL;
		L.slot_pool_left = 65536 / sizeof(struct sf_slot);
	}
	L.slot_pool_left--;
	return L.slot_pool++;
}

/* Whether a free slot must be cleared before it is claimed. Ring mode
 * gives slots back with their records: an exited thread's batch (still
 * its, serial set, kept until now), or a frozen or earlier-lap one made
 * free by its serial alone (buffer.c). The second kind read as the next
 * thread's own records after its first events, once it set its serial:
 * 8158 of thread a's leaf calls in thread b's 10-call window (issue 28,
 * tests/fixtures/ring_dirtyslot.c). Its first record does not tell
 * either: one an interrupted context claimed is still 0 if a handler
 * jumped out of it. So every ring slot is cleared when taken, as most
 * were already (an exited thread's keep their serial). */
static int slot_holds_records(const struct sf_slot *s)
{
	return sf_config.ring_slots || s->hdr->thread_serial;
}

/* record --ring: a free slot that still reads as a batch (its serial
 * kept) holds an exited thread's newest events, kept in the log until a
 * later thread needs the slot: the file stays bounded by the threads alive
 * at once, not by every thread the run had. Taking it loses those events
 * from the final log; they are counted in the header (ring_reused), so
 * that record and every reader say so (never lost silently). Under the
 * log's lock, once per slot taken: the scan is what clearing it costs. */
static void count_reused(const struct sf_slot *s)
{
	if (!sf_config.ring_slots || !__atomic_load_n(&s->hdr->thread_serial, __ATOMIC_ACQUIRE))
		return;
	const struct sf_event *ev = (const struct sf_event *)(s->hdr + 1);
	uint64_t n = 0;
	for (size_t i = 0; i < SF_SLOT_EVENTS && ev[i].word; i += 1 + sf_event_payload_count(ev[i].word))
		n++;
	if (n)
		__atomic_add_fetch(&L.hdr->ring_reused, n, __ATOMIC_RELAXED);
}

/* A slot's file space reserved and mapped: its address, or -errno. */
static long map_slot(int fd, void *arg)
{
	uint64_t off = *(uint64_t *)arg;
	if (reserve(fd, off, SF_SLOT_SIZE) < 0)
		return -errno;
	void *m = mmap(NULL, SF_SLOT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	return m == MAP_FAILED ? -errno : (long)m;
}

/* ---- regions mapped ahead (the writer's table its own) ----
 *
 * With the log's descriptor in the writer's table only, a program thread
 * cannot reach the file by descriptor; asking the writer costs it two
 * context switches per use (w24's measure: 496-511 voluntary switches for
 * 490 chunks against main's 3-6). So the writer maps file space ahead,
 * off the program's path, and program threads use mappings alone:
 * - slot regions (POOL_SLOTS, each reserved, mapped and write-faulted): a
 *   thread that needs a new slot takes one (sf_log_slot_get);
 * - an arena: a region that chunks are copied into (memcpy into a shared
 *   mapping: in the page cache at once, as pwritev put them), one after
 *   the other under arena_lock. The first is ARENA_MIN (the new log's
 *   OBJECT chunks: a short run or a ring leaves no unused space before
 *   its slots); once it has filled, each next one is ARENA_MAX, asked
 *   for (one wake of the writer) as soon as the one before is taken. What
 *   a chunk that does not fit leaves at an arena's end stays zero, which
 *   readers skip as claimed space never written (lib/log_reader.c); the
 *   file is cut after the last byte in use at exit (trim_private).
 * Not under a --max-size cap: the cap counts the bytes chunks and slots
 * take, which regions mapped ahead would not match (a capped run asks the
 * writer per use, as before).
 * Every chunk goes through the arena while the table is private, the
 * writer's own too, so a thread's chunks lie in the file in the order it
 * wrote them (arenas are claimed at the end of the file, in order). A
 * taker wakes the writer only when what is ahead runs low (one wake per
 * arena, per slot taken); only an empty pool (a burst of new threads, an
 * arena filled before the next one was mapped) makes it wait for a
 * request, as before. */

/* On the writer, its table its own: size bytes of the file's end reserved,
 * mapped and write-faulted. 0, or -errno. */
/* A region's pages made present and writable before chunks are copied
 * in (on the writer, off the program's path): one MADV_POPULATE_WRITE
 * (Linux 5.14) rather than a load and a store a page, which took two
 * faults a page on a fallocated file (a read of the unwritten extent,
 * then the write-protect fault): the kernel's share of SQLite under
 * --auto-args, whose log is 2.7x plain's, was 15% in map_region's faults
 * (perf). The touch loop where the kernel or a seccomp filter of the
 * program's refuses the call (sandbox.c, sf_sandbox_no_populate). */
static void populate_write(void *m, size_t size)
{
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	if (!__atomic_load_n(&sf_sandbox_no_populate, __ATOMIC_RELAXED) &&
	    sf_syscall3(SYS_madvise, (long)m, (long)size, MADV_POPULATE_WRITE) == 0)
		return;
	sf_prefault_write(m, size);
}

static long map_region(struct region *r, uint32_t size)
{
	if (!sf_writer_private() || L.pfd < 0)
		return -EBADF;
	uint64_t end = __atomic_load_n(&L.end, __ATOMIC_RELAXED), off;
	do /* page-aligned, nothing claimed past the region */
		off = (end + 4095) & ~(uint64_t)4095;
	while (!__atomic_compare_exchange_n(&L.end, &end, off + size, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if (reserve(L.pfd, off, size) < 0)
		return -errno;
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, L.pfd, (off_t)off);
	if (m == MAP_FAILED)
		return -errno;
	populate_write(m, size);
	r->m = m;
	r->off = off;
	r->size = size;
	return 0;
}

/* Chunks go through the arena. */
static int arena_private(void)
{
	return __atomic_load_n(&L.priv, __ATOMIC_ACQUIRE) && L.hdr && !__atomic_load_n(&L.lost, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&P.cut, __ATOMIC_ACQUIRE);
}

/* Slots are mapped ahead: not under a --max-size cap, which counts a
 * slot when a thread takes it (a slot mapped ahead would be in the file
 * uncounted, and not always at its end, where the exit's cut finds it),
 * nor with --ring, whose file is bounded by SIZE times the threads alive
 * at once (a slot mapped ahead is file space past that bound, and a new
 * thread must take an exited one's slots first: test_ring's churn case
 * found the file 11 pages over it once in six CI runs). */
static int pool_private(void)
{
	return arena_private() && !sf_budget_cap() && !sf_config.ring_slots;
}

/* On the writer: one arena mapped ahead, if none is. 0 or -errno. */
static long arena_ahead(size_t need)
{
	sigset_t old;
	lock_sig(&P.arena_lock, &old);
	int have = P.next.m != NULL;
	uint64_t size = P.next_size ? P.next_size : ARENA_MIN;
	unlock_sig(&P.arena_lock, &old);
	if (have)
		return 0;
	/* Under --max-size no more than the cap has left (need: a chunk
	 * already counted in it), so that the file, cut at exit, stays
	 * within the cap. */
	uint64_t room = sf_budget_room();
	if (room != UINT64_MAX && size > ((room + need + 4095) & ~(uint64_t)4095))
		size = (room + need + 4095) & ~(uint64_t)4095;
	if (size < need)
		size = (need + 4095) & ~(size_t)4095;
	if (!size)
		return -ENOSPC;
	struct region r;
	long e = map_region(&r, (uint32_t)size);
	if (e < 0)
		return e;
	lock_sig(&P.arena_lock, &old);
	P.next = r;
	P.next_size = ARENA_MAX; /* past the first: a chunk that fills it asks for room */
	__atomic_store_n(&P.asked, 0, __ATOMIC_RELAXED);
	unlock_sig(&P.arena_lock, &old);
	return 0;
}

/* On the writer (its loop, and the log's creation): the slot pool filled
 * and the next arena mapped once the current one is half used. */
void sf_log_writer_refill(void)
{
	if (!sf_writer_on_thread() || !arena_private())
		return;
	/* Read without the locks: only this thread adds, so a count or an
	 * arena seen missing is missing (a wake per chunk comes through
	 * here: no system call when nothing is to be done). */
	/* A keeper maps ahead only at the log's creation (it has no loop of
	 * its own): one slot, the first thread's, so that a short-lived
	 * child's file holds no unused slot and needs no cut at its end (an
	 * ftruncate of a file mapped shared: 1-4 ms, more than the child). */
	int want = L.keeper ? 1 : POOL_SLOTS;
	while (pool_private() && __atomic_load_n(&P.nslots, __ATOMIC_ACQUIRE) < want) {
		struct region r;
		if (map_region(&r, SF_SLOT_SIZE) < 0)
			break;
		sigset_t old;
		lock_sig(&P.lock, &old);
		P.slot[P.nslots++] = r;
		unlock_sig(&P.lock, &old);
	}
	if (__atomic_load_n(&P.filled, __ATOMIC_RELAXED) && !__atomic_load_n(&P.next.m, __ATOMIC_ACQUIRE))
		arena_ahead(0);
}

/* A slot region from the pool (the caller holds the log's lock), the
 * writer woken to map the next. 0 if the pool is empty. */
static int pool_take_slot(struct region *r)
{
	if (!pool_private())
		return 0;
	sigset_t old;
	lock_sig(&P.lock, &old);
	int got = P.nslots > 0;
	if (got) {
		*r = P.slot[0];
		for (int i = 1; i < P.nslots; i++)
			P.slot[i - 1] = P.slot[i];
		P.nslots--;
	}
	unlock_sig(&P.lock, &old);
	sf_writer_kick();
	return got;
}

/* The chunk (header c, payload, zero padding up to total) copied into the
 * arena: the payload first, the header last, so a reader never finds a
 * header whose payload is not there yet. 1 if copied, 0 if the arena and
 * the one ahead lack room (the caller asks the writer), -1 if the end of
 * the arena left behind does not fit under --max-size (the cap counts it:
 * it stays in the file; the chunk is dropped as over the cap). */
static int arena_copy(struct sf_chunk *c, const void *payload, size_t payload_len, size_t total)
{
	sigset_t old;
	lock_sig(&P.arena_lock, &old);
	if (!P.cur.m || P.used + total > P.cur.size) {
		if (!P.next.m || total > P.next.size) {
			unlock_sig(&P.arena_lock, &old);
			return 0;
		}
		if (P.cur.m) {
			if (P.cur.size > P.used && sf_budget_take(P.cur.size - P.used) < 0) {
				unlock_sig(&P.arena_lock, &old);
				return -1;
			}
			munmap(P.cur.m, P.cur.size); /* its unused end stays zero: readers skip it */
			__atomic_store_n(&P.filled, 1, __ATOMIC_RELAXED);
		}
		P.cur = P.next;
		P.next.m = NULL;
		P.used = 0;
	}
	char *at = P.cur.m + P.used;
	P.used += (uint32_t)total;
	__builtin_memcpy(at + sizeof(*c), payload, payload_len);
	uint32_t magic = c->magic;
	c->magic = 0;
	__builtin_memcpy(at, c, sizeof(*c));
	__atomic_store_n((uint32_t *)(void *)at, magic, __ATOMIC_RELEASE);
	c->magic = magic;
	int ask = P.filled && !P.next.m && !__atomic_exchange_n(&P.asked, 1, __ATOMIC_RELAXED);
	unlock_sig(&P.arena_lock, &old);
	if (ask)
		sf_writer_kick(); /* the next arena, mapped off this thread's path */
	__atomic_add_fetch(&L.hdr->chunks, 1, __ATOMIC_RELAXED);
	return 1;
}

struct arena_req {
	struct sf_chunk *c;
	const void *payload;
	size_t payload_len, total;
};

/* On the writer: an arena with room for the chunk, mapped now, and the
 * copy. 0, -errno, or SF_WRITER_REFUSED (no private table). */
static long arena_write_here(void *arg)
{
	struct arena_req *q = arg;
	if (!sf_writer_private())
		return SF_WRITER_REFUSED;
	for (int tries = 0; tries < 3; tries++) {
		int k = arena_copy(q->c, q->payload, q->payload_len, q->total);
		if (k)
			return k > 0 ? 0 : ARENA_CAPPED;
		sigset_t old;
		lock_sig(&P.arena_lock, &old);
		if (P.next.m && q->total > P.next.size) { /* too big for it: one of its own size */
			munmap(P.next.m, P.next.size);
			P.next.m = NULL;
		}
		if (q->total > (P.next_size ? P.next_size : ARENA_MIN))
			P.next_size = (uint32_t)((q->total + 4095) & ~(size_t)4095);
		unlock_sig(&P.arena_lock, &old);
		long e = arena_ahead(q->total);
		if (e < 0)
			return e;
	}
	return -ENOSPC;
}

/* A chunk written while the table is private. 0, -errno, or
 * SF_WRITER_REFUSED (the caller writes it by descriptor). */
static long arena_write(struct sf_chunk *c, const void *payload, size_t payload_len, size_t total)
{
	int k = arena_copy(c, payload, payload_len, total);
	if (k)
		return k > 0 ? 0 : ARENA_CAPPED;
	struct arena_req q = {c, payload, payload_len, total};
	return sf_writer_call(arena_write_here, &q); /* an empty pool: the one wait left */
}

/* On the writer, the log's lock held by the requester (sf_log_finish):
 * the file cut after the last byte in use, so the regions mapped ahead
 * and the arena's unused end do not stay in the log of a finished
 * process (fd_requests' 4,000,004 events: 9.7 MB uncut, main's 8.0 MB).
 * They are unmapped first: a later chunk or slot (a thread still running
 * after the exit hooks) maps a new region past the cut. */
static void pool_drop(int unmap_slots);

static long trim_private(void *unused)
{
	(void)unused;
	if (!sf_writer_private() || L.pfd < 0)
		return 0;
	sigset_t o1, o2;
	lock_sig(&P.arena_lock, &o1);
	lock_sig(&P.lock, &o2);
	uint64_t top = SF_HEADER_SIZE;
	if (P.cur.m && P.cur.off + P.used > top)
		top = P.cur.off + P.used;
	for (struct sf_slot *s = L.all_slots; s; s = s->next_all)
		if (s->file_offset + SF_SLOT_SIZE > top)
			top = s->file_offset + SF_SLOT_SIZE;
	/* A seccomp filter that refuses ftruncate on this thread (TSYNC puts
	 * it on the writer: sandbox.c): no cut. The file keeps the zeros
	 * mapped ahead after its last chunk, as a log whose chunks went past
	 * the regions (no_trim) does; readers stop at the first zero word. */
	int cut = !P.no_trim && top < __atomic_load_n(&L.end, __ATOMIC_ACQUIRE) &&
		  sf_seccomp_allows_fd_call(SYS_ftruncate, (long)top, 0);
	if (cut) {
		pool_drop(1);
		__atomic_store_n(&P.cut, 1, __ATOMIC_RELEASE);
		if (sf_syscall3(SYS_ftruncate, L.pfd, (long)top, 0) == 0)
			__atomic_store_n(&L.end, top, __ATOMIC_RELEASE);
	}
	unlock_sig(&P.lock, &o2);
	unlock_sig(&P.arena_lock, &o1);
	return 0;
}

/* The arena given up (the writer leaves: chunks go by descriptor at the
 * file's end from now on, after every arena) or a fork child's (the
 * parent's mappings). */
static void pool_drop(int unmap_slots)
{
	if (P.cur.m)
		munmap(P.cur.m, P.cur.size);
	if (P.next.m)
		munmap(P.next.m, P.next.size);
	P.cur.m = P.next.m = NULL;
	P.used = 0;
	P.next_size = 0;
	P.asked = 0;
	P.filled = 0;
	if (unmap_slots) {
		for (int i = 0; i < P.nslots; i++)
			munmap(P.slot[i].m, P.slot[i].size);
		P.nslots = 0;
	}
}

/* A slot for the calling thread: a reused one, one mapped ahead by the
 * writer, or a fresh page-aligned region at the end of the file. NULL if the log cannot take one. */
struct sf_slot *sf_log_slot_get(void)
{
	sigset_t old;
	struct sf_slot *s = NULL;
	sf_log_lock_sig(&old);
	if (log_create_locked() < 0 || sf_budget_capped())
		goto out;
	if (L.free_slots) {
		s = L.free_slots;
		L.free_slots = s->next_free;
		count_reused(s);
		if (slot_holds_records(s))
			sf_log_slot_invalidate(s);
		goto out;
	}
	if (sf_budget_take(SF_SLOT_SIZE + 4096) < 0)
		goto out;
	struct region rg = {0};
	uint64_t off;
	void *m;
	if (pool_take_slot(&rg)) { /* mapped and write-faulted by the writer */
		off = rg.off;
		m = rg.m;
	} else {
		off = __atomic_fetch_add(&L.end, SF_SLOT_SIZE + 4096, __ATOMIC_RELAXED);
		off = (off + 4095) & ~(uint64_t)4095;
		long r = with_log_fd(map_slot, &off);
		if (r < 0) {
			write_failed((int)-r, 0);
			goto out;
		}
		m = (void *)r;
		/* The write faults now, in the slow path that the readers take off
		 * with the hand-off's time (a batch's base), not at the trampolines'
		 * stores, on the event path (MAP_POPULATE only maps a shared mapping's
		 * pages for reading: its first store per page would still fault, about
		 * 2 us each, all in the same function when a loop's events per
		 * iteration divide the 512 events of a page). */
		sf_prefault_write(m, SF_SLOT_SIZE);
	}
	s = slot_record();
	if (!s) {
		munmap(m, SF_SLOT_SIZE);
		goto out;
	}
	s->hdr = m;
	s->file_offset = off;
	s->next_all = L.all_slots;
	L.all_slots = s;
	s->hdr->type = SF_CHUNK_SLOT;
	s->hdr->size = SF_SLOT_SIZE;
	s->hdr->count = (uint32_t)SF_SLOT_EVENTS;
	__atomic_store_n(&s->hdr->magic, SF_CHUNK_MAGIC, __ATOMIC_RELEASE);
	__atomic_add_fetch(&L.hdr->chunks, 1, __ATOMIC_RELAXED);
out:
	sf_log_unlock_sig(&old);
	return s;
}

void sf_log_slot_invalidate(struct sf_slot *s)
{
	__atomic_store_n(&s->hdr->thread_serial, 0, __ATOMIC_RELEASE);
	sf_zero_events((struct sf_event *)(s->hdr + 1), SF_SLOT_EVENTS);
}

/* The log as far as it is written, mapped read-only: its address (and
 * *size), or -errno. */
static long map_whole(int fd, void *arg)
{
	uint64_t *size = arg;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	uint64_t n = __atomic_load_n(&L.end, __ATOMIC_ACQUIRE);
	if (n > (uint64_t)st.st_size)
		n = (uint64_t)st.st_size; /* a slot claimed but not reserved yet */
	void *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	if (madvise(m, n, MADV_DONTFORK) < 0) {
		munmap(m, n);
		return -EINVAL;
	}
	*size = n;
	return (long)m;
}

/* The log as it stands, mapped read-only for a snapshot (writer thread);
 * NULL if there is none. Mapped under the lock and never inherited: a fork
 * (which takes the lock) cannot come between the mmap and the madvise, and
 * a child must not be able to read its parent's trace. */
void *sf_log_map_readonly(uint64_t *size)
{
	sigset_t old;
	void *m = NULL;
	sf_log_lock_sig(&old);
	if (L.hdr) {
		long r = with_log_fd(map_whole, size);
		m = r < 0 ? NULL : (void *)r;
	}
	sf_log_unlock_sig(&old);
	return m;
}

void sf_log_slot_put(struct sf_slot *s)
{
	s->next_free = NULL;
	sf_log_slots_put(s, s);
}

/* A chain of slots (first..last by next_free) back in one step: the chain
 * is what the free list gives out next, first first. A ring puts its set
 * this way so that no taker sees part of it (ring_free_exited). */
void sf_log_slots_put(struct sf_slot *first, struct sf_slot *last)
{
	sigset_t old;
	sf_log_lock_sig(&old);
	last->next_free = L.free_slots;
	L.free_slots = first;
	sf_log_unlock_sig(&old);
}

/* A (counter, CLOCK_MONOTONIC) pair for the reader's fit. The counter is
 * read on both sides of the clock and the pair kept only when the two
 * reads are close: a thread preempted in between would otherwise give a
 * pair off by the time it was off CPU, and the fit of a short run (a ring
 * snapshot has few pairs) would scale every duration by that error. The
 * tightest of four tries is kept. */
void sf_log_calibrate(void)
{
	struct sf_header *h = L.hdr;
	if (!h)
		return;
	uint64_t tsc = 0, mono = 0;
	if (sf_config.clock != SF_CLOCK_TSC) {
		mono = sf_mono_ns();
	} else {
		uint64_t best = UINT64_MAX;
		for (int i = 0; i < 4 && best > 2000; i++) {
			uint64_t t0 = sf_now_raw();
			uint64_t m = sf_mono_ns();
			uint64_t t1 = sf_now_raw();
			if (t1 >= t0 && t1 - t0 < best) {
				best = t1 - t0;
				tsc = t0 + (t1 - t0) / 2;
				mono = m;
			}
		}
		if (best == UINT64_MAX) { /* a counter that went backwards: take one read */
			tsc = sf_now_raw();
			mono = sf_mono_ns();
		}
	}
	__atomic_store_n(&h->last_tsc, tsc, __ATOMIC_RELAXED);
	__atomic_store_n(&h->last_mono_ns, mono, __ATOMIC_RELAXED);
}

void sf_log_thread_started(void)
{
	if (L.hdr)
		__atomic_add_fetch(&L.hdr->threads, 1, __ATOMIC_RELAXED);
}

void sf_log_object_logged(void)
{
	if (L.hdr)
		__atomic_add_fetch(&L.hdr->objects, 1, __ATOMIC_RELAXED);
}

void sf_log_update_patch_stats(uint64_t patch_ns, uint32_t sleds_patched)
{
	if (!L.hdr)
		return;
	__atomic_store_n(&L.hdr->patch_ns, patch_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&L.hdr->sleds_patched, sleds_patched, __ATOMIC_RELAXED);
}

/* The log layer knows nothing of objects: whoever does (init.c) says what
 * a new log must hold before its first batch. */
void sf_log_on_create(void (*fn)(void))
{
	L.on_create = fn;
}

static int log_is_own_stopped(const struct sf_header *h); /* at the end */

/* Whether this process has a log of its own: not a vfork or CLONE_VM
 * child, which shares its parent's L. */
static int log_is_own(void)
{
	struct sf_header *h = __atomic_load_n(&L.hdr, __ATOMIC_ACQUIRE);
	if (h && __atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE) && !sf_seccomp_allows(SYS_getpid, 0, 0, 0, 0, 0, 0))
		return log_is_own_stopped(h);
	return h && h->pid == (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0);
}

/* The executable checked again as the image ends (objects.c). */
static void log_image_check(void)
{
	if (__atomic_load_n(&sf_sandbox_limited, __ATOMIC_ACQUIRE))
		return; /* a seccomp filter's allow-list: no /proc, no signal mask (sandbox.c) */
	sigset_t old;
	sf_log_lock_sig(&old);
	sf_objects_image_ends();
	sf_log_unlock_sig(&old);
}

/* The file cut after the last byte in use (trim_private), where the
 * descriptor is the writer's or the keeper's. */
static void log_trim(void)
{
	if (!__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE) || __atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
		return;
	sigset_t old;
	sf_log_lock_sig(&old);
	sf_writer_call(trim_private, NULL);
	sf_log_unlock_sig(&old);
}

void sf_log_finish(void)
{
	if (!log_is_own())
		return;
	log_image_check();
	sf_log_calibrate();
	sf_log_note_capped();
	log_trim();
	__atomic_store_n(&L.hdr->state, SF_STATE_EXITED, __ATOMIC_RELEASE);
	if (L.files_shared)
		log_fd_forget();
}

/* The recording options a reader cannot know otherwise (sftrace info). */
static uint32_t filter_funcs_total; /* selected in every object scanned, before the log existed too */

void sf_log_note_options(void)
{
	struct sf_header *h = __atomic_load_n(&L.hdr, __ATOMIC_ACQUIRE);
	if (!h)
		return;
	h->max_size = sf_budget_cap();
	sf_filter_describe(h->filter, sizeof(h->filter));
	__atomic_store_n(&h->filter_funcs, __atomic_load_n(&filter_funcs_total, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	sf_log_note_capped();
}

/* Objects are scanned under the objects' lock, which log creation also
 * takes: a count lands either before the log (and is copied above) or in
 * its header. A forked child keeps its parent's objects: the count its
 * new log starts from is the parent's. */
void sf_filter_count_selected(uint32_t funcs)
{
	struct sf_header *h = __atomic_load_n(&L.hdr, __ATOMIC_ACQUIRE);
	__atomic_add_fetch(&filter_funcs_total, funcs, __ATOMIC_RELAXED);
	if (h)
		__atomic_add_fetch(&h->filter_funcs, funcs, __ATOMIC_RELAXED);
}

void sf_log_note_capped(void)
{
	struct sf_header *h = __atomic_load_n(&L.hdr, __ATOMIC_ACQUIRE);
	if (h && sf_budget_capped())
		__atomic_store_n(&h->max_size_reached, 1, __ATOMIC_RELAXED);
}

/* The exit code, in the header, for readers (the kernel's status, signals
 * included, is record's to add when it reaps the process). Not from a
 * vfork or CLONE_VM child: the header mapped is its parent's. */
static void log_exit_code(enum sf_exit_source src, int status)
{
	if (log_is_own())
		__atomic_store_n(&L.hdr->exit_state, sf_exit_pack(src, (uint32_t)(status & 0xff) << 8), __ATOMIC_RELEASE);
}

/* An exec is about to run (on): the image ends there, which its log says
 * even when read without the next image's. A failed exec (off) takes it
 * back: the image goes on. */
void sf_log_exec_mark(int on)
{
	if (log_is_own())
		__atomic_store_n(&L.hdr->exit_state, on ? sf_exit_pack(SF_EXIT_EXECD, 0) : 0, __ATOMIC_RELEASE);
}

/* _exit/_Exit(status). */
void sf_log_exit_called(int status)
{
	log_exit_code(SF_EXIT_CALLED, status);
}

/* exit(status), main's return included: glibc hands the status to on_exit
 * handlers and to no other hook. Handlers run in the reverse order of
 * their registration, and this one is registered in the runtime's
 * constructor, the process's first, before __libc_start_main registers
 * the loader's destructor pass: it runs last, after the program's own
 * handlers and every destructor (ours, which wrote the last batches, among
 * them), and only stores a word in the mapped header. stdio is flushed
 * after it, as without the tracer. */
static void exit_hook(int status, void *arg)
{
	(void)arg;
	log_exit_code(SF_EXIT_EXITED, status);
}

/* Only for a runtime loaded with the process (never unloaded): a handler
 * left behind by a dlclose'd one would be called at exit in unmapped code.
 * glibc's first block of exit handlers is static: registering allocates
 * nothing (the program's malloc must not run this early, init.c). */
void sf_log_watch_exit(void)
{
	on_exit(exit_hook, NULL);
}

/* Creates the log now if this process has instrumented code and no log
 * yet: before the program changes its credentials (hooks.c), while it can
 * still create a file where its parent could. A process that drops root
 * before its first event would otherwise find record's directory closed
 * to it, and its notes too: its trace would be lost without a word. */
/* Tracing stopped for good before a seccomp filter that refuses the
 * event path's calls (sandbox.c): the call's number + 1 in the header,
 * for record and info to say why the trace ends there. */
void sf_log_seccomp_stopped(long nr)
{
	struct sf_header *h = __atomic_load_n(&L.hdr, __ATOMIC_ACQUIRE);
	/* before the filter's install: getpid is still allowed (not log_is_own) */
	if (h && h->pid == (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0))
		__atomic_store_n(&h->seccomp_stopped, (uint32_t)(nr + 1), __ATOMIC_RELEASE);
}

void sf_log_create_early(void)
{
	if (!sf_config.enabled || !sf_objects_patched_total() || sf_log_ready())
		return;
	sigset_t old;
	sf_log_lock_sig(&old);
	log_create_locked();
	sf_log_unlock_sig(&old);
}

/* A clone(CLONE_FILES) child's own descriptor lives in the table it shares
 * with its parent, which outlives it: it is closed when the child's
 * function returns (hooks.c) or the child calls exit (sf_log_finish), so
 * a pool of such workers leaves no descriptor behind; an exec, _exit,
 * quick_exit or the last thread's syscall(SYS_exit) closes it too
 * (sf_log_image_ends). One killed by a signal keeps it in
 * the table: no code of the child's runs then. Its slots stay mapped: the events in them are in the file. */
void sf_log_child_return(void)
{
	if (L.files_shared && log_is_own()) {
		sf_log_calibrate();
		/* A keeper's: cut only once chunks took a MiB arena (its unused
		 * end); a child that made no chunk left nothing to cut. */
		if (__atomic_load_n(&P.filled, __ATOMIC_RELAXED))
			log_trim();
		__atomic_store_n(&L.hdr->state, SF_STATE_EXITED, __ATOMIC_RELEASE);
		if (!__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE))
			log_fd_forget();
	}
}

/* The image ends (exec, _exit, exit_group: hooks.c sf_image_ends). The
 * executable is checked again (log_image_check). A clone(CLONE_FILES)
 * child's descriptor is in the table it shares with
 * its parent: an exec unshares the table before close-on-exec acts, and
 * _exit runs nothing of the child's, so either would leave it in the
 * parent's table for good (1100 such children: 1100 descriptors). It is
 * closed now. The header is left as it is: an exec can fail, and then
 * the next batch opens the log again by its name (log_reopen). Not from
 * a vfork or CLONE_VM child: L is its parent's then (pid check). */
void sf_log_image_ends(void)
{
	if (!log_is_own())
		return;
	log_image_check();
	if (L.files_shared)
		log_fd_forget();
}

/* A clone(CLONE_FILES) child about to change its credentials (hooks.c)
 * keeps its log's descriptor from then on, opened now while it still can
 * be: it would not open its creator's 0600 log again as another user.
 * Such a child's descriptor is again left behind if it is killed. So does
 * a process with no thread of the runtime's to hold its log (L.solo,
 * log_brief): the log is in its table again from that change on, as it
 * was in all of its life before issue 24's h46fd. */
void sf_log_hold(void)
{
	if (!(L.files_shared || __atomic_load_n(&L.solo, __ATOMIC_ACQUIRE)) || __atomic_load_n(&L.priv, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&L.hold, __ATOMIC_ACQUIRE) ||
	    !log_is_own())
		return;
	__atomic_store_n(&L.hold, 1, __ATOMIC_RELEASE);
	uint32_t t;
	if (log_fd_use(&t) >= 0)
		log_fd_done(t);
}

/* A clone(CLONE_FILES) child about to exec gives its descriptor up
 * (sf_log_image_ends): it cannot keep one across the exec without leaving
 * it in its parent's table. If the exec fails, its next batch opens the
 * log again by name; where that would be refused (it dropped root: the
 * log is its creator's, 0600), its calls after the failed exec were lost.
 * So in that case only, a slot is mapped now, while the descriptor is
 * there, and kept free: the next thread that needs one records into it,
 * and its events are in the file (a shared mapping needs no descriptor).
 * Costs one slot of file (64 KiB) for such a child. */
void sf_log_exec_spare(void)
{
	if (!L.files_shared || __atomic_load_n(&L.priv, __ATOMIC_ACQUIRE) || !log_is_own() ||
	    __atomic_load_n(&L.free_slots, __ATOMIC_ACQUIRE))
		return; /* with a keeper: a failed exec leaves it, and its descriptor, there */
	if (faccessat(AT_FDCWD, L.path, R_OK | W_OK, AT_EACCESS) == 0)
		return; /* the reopen by name will do */
	struct sf_slot *s = sf_log_slot_get();
	if (s)
		sf_log_slot_put(s);
}

/* fork: the child inherits the parent's descriptor and shared mappings of
 * its log. It unmaps all of them, every thread's slots included: a child
 * that drops its privileges (a worker running as nobody) must not keep a
 * way to read or rewrite its parent's trace. It closes the descriptor
 * unless the table is shared with the parent (clone with CLONE_FILES), and
 * only if it still is the log (the program may have put a file of its own
 * at that number). It creates its own log at its first event, or before
 * it changes its credentials (sf_log_create_early). */
/* The writer's descriptor table made its own (on the writer, asked by
 * sf_log_writer_started with the log's lock held, so no log is created
 * meanwhile): unshare(CLONE_FILES) copies the program's table, and every
 * copy but the log's is closed at once, so that the writer never holds a
 * file of the program's (a pipe's write end kept open here would keep its
 * reader from ever seeing EOF). From then on every use of the log's
 * descriptor runs here (with_log_fd). 1 if so; 0 and nothing changed
 * where that cannot be done (seccomp, no close_range). */
/* unshare(CLONE_FILES) refused (a filter the runtime did not see
 * installed: a container's profile, inherited at exec; issue 24): what the
 * program loses said once, naming it and the refused call. */
static void table_refused(int err)
{
	(void)err;
	/* The log stays in the program's table, held only for each use
	 * (log_brief), as where no writer runs: nothing to say. */
	__atomic_store_n(&L.solo, 1, __ATOMIC_RELEASE);
}

/* Whether the writer may make its table its own: 0, or the error that
 * stands for its refusal. close_range(~0, ~0) closes nothing: only
 * whether it is there. Under valgrind, never: valgrind names a mapped
 * file by /proc/self/fd/N, which is the leader's table, so the writer's
 * mmap of its log's slots read as an unnamed file, and a later munmap
 * tripped valgrind's own assertion (aspacemgr-segnames.c get_refcount;
 * valgrind exited 1 in about half the runs, the program's output lost). */
static long own_table_refused(void)
{
	if (sf_writer_on_valgrind())
		return -ENOSYS;
	return sf_syscall3(SYS_close_range, ~0u, ~0u, 0);
}

/* On the writer: its table made its own, 0, or the error that refused
 * it. A raw writer is made without CLONE_FILES (writer.c, start_raw): its
 * table is a copy of the program's from its first instruction, and no
 * unshare is needed, which a container's profile refuses (Docker's
 * default without CAP_SYS_ADMIN: EPERM; issue 24). Elsewhere (a pthread
 * writer, valgrind) unshare(CLONE_FILES). */
static long own_table(void)
{
	if (sf_writer_table_copied())
		return 0;
	long u = own_table_refused();
	return u < 0 ? u : sf_syscall3(SYS_unshare, CLONE_FILES, 0, 0);
}

static long go_private(void *unused)
{
	(void)unused;
	/* done already: by the writer itself at its start, its table a copy
	 * from its clone (sf_log_writer_begins), before this request */
	if (__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE) && sf_writer_private())
		return 1;
	long u = own_table();
	if (u < 0) {
		table_refused((int)-u);
		sf_switch_writer_table(0);
		return 0;
	}
	int keep = L.hdr ? __atomic_load_n(&L.g.fd, __ATOMIC_ACQUIRE) : -1;
	if (keep >= 0 && !is_log(keep))
		keep = -1;
	if (keep > 0)
		sf_syscall3(SYS_close_range, 0, (unsigned)keep - 1, 0);
	sf_syscall3(SYS_close_range, (unsigned)(keep + 1), ~0u, 0);
	L.pfd = keep;
	sf_writer_set_private(1);
	sf_writer_open_proc(0);
	if (L.hdr && keep < 0)
		L.pfd = reopen_private();
	__atomic_store_n(&L.priv, 1, __ATOMIC_RELEASE);
	sf_switch_writer_table(1); /* record --paused: the control page, in this table */
	return 1;
}

/* The writer thread has started (writer.c): the log's descriptor moves
 * into its own table, and out of the program's. Its uses in flight in
 * other threads finish first (log_fd_forget waits for them); later ones
 * ask the writer. */
void sf_log_writer_started(void)
{
	sigset_t old;
	sf_log_lock_sig(&old);
	/* No log yet (the usual case: the first event comes in main): the
	 * writer goes private by itself (sf_log_writer_begins), and nobody
	 * waits for it. */
	if (L.hdr && sf_writer_call(go_private, NULL) > 0 && __atomic_load_n(&L.g.fd, __ATOMIC_ACQUIRE) >= 0)
		log_fd_forget();
	else if (L.hdr)
		log_fd_release_idle(); /* refused its own table: held for each use only (table_refused) */
	sf_log_unlock_sig(&old);
}

/* writer.c, before the writer is made: with no log yet, the log will be
 * the writer's from the start (L.priv now: a creation meanwhile is a
 * request, which the writer answers once its table is its own,
 * sf_log_writer_begins), and nobody waits for the writer. 1 if so. */
int sf_log_writer_before_start(void)
{
	sigset_t old;
	sf_log_lock_sig(&old);
	int fresh = !L.hdr && !L.priv;
	if (fresh) {
		L.pfd = -1;
		__atomic_store_n(&L.priv, 1, __ATOMIC_RELEASE);
	}
	sf_log_unlock_sig(&old);
	return fresh;
}

/* pthread_create failed after that: the program's table again (a request
 * posted meanwhile is refused, writer.c). */
void sf_log_writer_failed(void)
{
	__atomic_store_n(&L.priv, 0, __ATOMIC_RELEASE);
}

/* On the writer, first of all, before it answers any request: after
 * sf_log_writer_before_start (no log existed) its table made its own
 * and emptied (no lock: nothing of the runtime's is in it yet, and a
 * creation waits for this). Where that fails (seccomp), the program's
 * table again: requests are refused and done there (run_private). 1 when
 * the table is its own, 0 when it could not be made so, -1 when a log
 * exists and go_private does it (asked by sf_log_writer_started; here,
 * first, where the table is a copy from the writer's clone). */
int sf_log_writer_begins(void)
{
	if (!__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE)) {
		if (!sf_writer_table_copied())
			return -1; /* a log exists: go_private, asked by sf_log_writer_started */
		/* A log exists and this table is a copy of the program's
		 * (own_table): every copy but the log's closed at once, before
		 * the lock is waited for (a pipe's write end held here would
		 * keep its reader from EOF), then go_private here, under the
		 * lock, before this thread writes anything: by the program's
		 * table's number the log's uses would run in this one. The
		 * program's copy is closed by the writer's creator
		 * (sf_log_writer_started, whose go_private finds it done). */
		int keep = __atomic_load_n(&L.g.fd, __ATOMIC_ACQUIRE);
		if (keep >= 0 && !is_log(keep))
			keep = -1;
		if (keep > 0)
			sf_syscall3(SYS_close_range, 0, (unsigned)keep - 1, 0);
		sf_syscall3(SYS_close_range, (unsigned)(keep + 1), ~0u, 0);
		sigset_t old;
		sf_log_lock_sig(&old);
		go_private(NULL);
		sf_log_unlock_sig(&old);
		return -1; /* go_private has set the control page's table */
	}
	if (sf_writer_private())
		return 1;
	long u = own_table();
	if (u == 0) {
		sf_syscall3(SYS_close_range, 0, ~0u, 0);
		sf_writer_set_private(1);
		sf_writer_open_proc(0);
		return 1;
	}
	__atomic_store_n(&L.priv, 0, __ATOMIC_RELEASE);
	table_refused((int)-u);
	return 0;
}

/* The writer is about to end (sf_writer_stop: the program's only thread
 * calls, signals blocked; the writer has written its queue and waits):
 * the log's descriptor comes back into the program's table, copied out
 * of the writer's (pidfd_getfd on the writer thread's pidfd, Linux 6.9)
 * and moved high as at creation; where that cannot be done, the next use
 * opens the log again (log_reopen). */
void sf_log_writer_leaving(void)
{
	if (!__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE))
		return;
	sigset_t old;
	sf_log_lock_sig(&old);
	long fd = -1;
	if (L.pfd >= 0) {
		long pidfd = sf_syscall3(SYS_pidfd_open, sf_writer_tid(), SF_PIDFD_THREAD, 0);
		if (pidfd >= 0) {
			fd = sf_syscall3(SYS_pidfd_getfd, pidfd, L.pfd, 0);
			sf_syscall3(SYS_close, pidfd, 0, 0);
		}
	}
	__atomic_store_n(&L.priv, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&L.solo, 1, __ATOMIC_RELEASE); /* until a writer takes it again (log_brief) */
	pool_drop(0); /* chunks by descriptor from now on, past every arena */
	P.no_trim = 1;
	L.pfd = -1; /* goes with the writer's table */
	sf_writer_set_private(0);
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	sf_fd_guard_add(&L.g);
	if (fd < 0 || sf_fd_adopt(&L.g, (int)fd, L.dev, L.ino, NULL) < 0)
		sf_fd_publish(&L.g, -1); /* opened again at the next use */
	sf_fd_gate_unlock(&gold);
	log_fd_release_idle();
	sf_log_unlock_sig(&old);
}

int sf_log_files_shared(void)
{
	return L.files_shared;
}

/* A keeper's copy of the log's descriptor (fd; -1: none) comes into the
 * program's table, guarded; -1, or no log yet: opened again at the next
 * use. The caller holds the log's lock, signals held back. log_reopen's check
 * and open as one, against this adoption: a thread that saw no log would
 * otherwise open it again after it and publish its own over this one (1
 * run of 30 kept one at 1023). */
static void adopt_keeper_copy(int fd)
{
	sf_lock_take(&L.reopen_lock, 0);
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	sf_fd_guard_add(&L.g);
	/* A thread of the program's (made by a library's constructor) whose
	 * request the ending keeper refused may have opened the log again in
	 * the program's table meanwhile (log_reopen, under this gate): that
	 * one is kept, the copy closed (adopting it too left one behind at
	 * 1023 in main, 3 runs of 6). */
	int cur = __atomic_load_n(&L.g.fd, __ATOMIC_ACQUIRE);
	int have = cur >= 0 && is_log(cur);
	if ((!L.hdr || have) && fd >= 0) {
		sf_syscall3(SYS_close, fd, 0, 0);
		fd = -1;
	}
	if (!have && (fd < 0 || sf_fd_adopt(&L.g, fd, L.dev, L.ino, NULL) < 0))
		sf_fd_publish(&L.g, -1); /* opened again at the next use */
	sf_fd_gate_unlock(&gold);
	sf_lock_give(&L.reopen_lock);
}

/* A fork child's keeper ended for good (ns.c: RLIMIT_NPROC), its log's
 * descriptor copied out of its table into the caller's (fd; -1: none,
 * opened again at the next use): the program's table from now on, as
 * after the writer leaves (sf_log_writer_leaving). Chunks go by
 * descriptor from now on, past every arena. */
void sf_log_keeper_left(int fd)
{
	sigset_t old;
	sf_log_lock_sig(&old);
	pool_drop(0);
	P.no_trim = 1;
	adopt_keeper_copy(fd);
	sf_log_unlock_sig(&old);
}

/* Step 2 (init.c), just before the writer is made: the early keeper
 * (writer.c, sf_keeper_make_early) ends, its copy of the log's descriptor
 * comes into the program's table, guarded, where sf_log_writer_started
 * takes it into the writer's own at once (the program's copy closed):
 * the program's code does not run in between. The keeper's arena stays
 * (it is memory; the writer goes on filling it). Without a copy (no
 * PIDFD_THREAD: Linux < 6.9) the log is opened again at its next use. */
void sf_log_early_keeper_end(void)
{
	int fd = sf_keeper_early_end();
	if (fd == -2)
		return;
	sigset_t old;
	sf_log_lock_sig(&old);
	adopt_keeper_copy(fd);
	sf_log_unlock_sig(&old);
}

/* On the writer: whether a program thread could open the log again now
 * (log_reopen, the same ways: the header's mapping, the path), tried in
 * the writer's table with the process's credentials and file-system
 * context, which the program's threads share. A program that chrooted or
 * dropped to a uid that cannot open its creator's 0600 log keeps its
 * writer (writer.c, leave_if_program_runs). No log yet: its thread makes
 * one as without a writer. */
int sf_log_reopenable(void)
{
	if (!L.hdr)
		return 1;
	int fd = reopen_as(1); /* as a program thread would: its /proc, not the writer's */
	if (fd < 0)
		return 0;
	sf_syscall3(SYS_close, fd, 0, 0);
	return 1;
}

/* On the writer: record's keeper opens the log again for this pid
 * (SF_KF_LOG_AGAIN, the last way open_same_log tries): a program thread
 * that may not open it itself (a uid or a root of its own) then needs no
 * descriptor offered by the writer, which can leave at once. */
int sf_log_keeper_reopens(void)
{
	if (!L.hdr || !L.path[0])
		return 0;
	int fd = sf_recfile(SF_KF_LOG_AGAIN, 0, L.path, -1, NULL, 0, NULL);
	if (fd < 0)
		return 0;
	int ok = is_log(fd);
	sf_syscall3(SYS_close, fd, 0, 0);
	return ok;
}

/* On the writer, about to leave a process whose leader has exited while
 * threads of the program's run on (writer.c, hand_over): the log's
 * descriptor goes with the writer's table, so from here on the program's
 * table is used as with --writer sync: each use opens the log again
 * (log_reopen: through the header's mapping, else by path, checked to be
 * the same file) and the last use in progress gives it up (L.solo). No thread can copy it out of the
 * writer's table first (pidfd_getfd puts it in the caller's table, and
 * no program thread is asked to wait for that). The arena is given up
 * under its lock (other threads copy into it meanwhile); chunks go by
 * descriptor past it. A request posted meanwhile is refused after this
 * (run_private) and done in the program's table. */
int sf_log_writer_hands_over(void)
{
	if (!__atomic_load_n(&L.priv, __ATOMIC_ACQUIRE))
		return -1;
	/* The arena's lock alone (pool_drop(0) leaves the slot pool): this
	 * thread serves requests while it spins for a lock, and a request
	 * (arena_write_here) takes that one. */
	sigset_t old, o1;
	sf_log_lock_sig(&old);
	lock_sig(&P.arena_lock, &o1);
	__atomic_store_n(&L.priv, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&L.solo, 1, __ATOMIC_RELEASE); /* held for each use from now on (log_brief) */
	pool_drop(0);
	P.no_trim = 1;
	unlock_sig(&P.arena_lock, &o1);
	int fd = L.pfd;
	L.pfd = -1; /* goes with the writer's table */
	sf_writer_set_private(0);
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	sf_fd_guard_add(&L.g);
	sf_fd_publish(&L.g, -1); /* opened again at the next use (or taken from the writer's offer) */
	sf_fd_gate_unlock(&gold);
	sf_log_unlock_sig(&old);
	return fd;
}

/* writer.c: a clone(CLONE_FILES) child's keeper made (on: before any
 * log exists, so that its creation is a request too) or gone (off: the
 * program's table again; its descriptor went with the keeper's). */
void sf_log_keeper(int on)
{
	L.pfd = -1;
	L.keeper = on;
	if (!on) /* the program's table again: held for each use (log_brief) */
		__atomic_store_n(&L.solo, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&L.priv, on, __ATOMIC_RELEASE);
}

int sf_log_keeper_fd(void)
{
	return L.pfd;
}

static long keeper_reopen(void *unused)
{
	(void)unused;
	if (L.pfd < 0 && L.hdr)
		L.pfd = reopen_private();
	return 0;
}

void sf_log_keeper_again(int fd)
{
	L.pfd = fd;
	if (fd < 0)
		sf_writer_call(keeper_reopen, NULL);
}

void sf_log_after_fork_child(int files_shared)
{
	__atomic_store_n(&L.lock, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&L.reopen_lock, 0, __ATOMIC_RELAXED);
	parent_had_log = L.hdr != NULL;
	if (L.hdr)
		munmap(L.hdr, SF_HEADER_SIZE);
	for (struct sf_slot *s = L.all_slots; s; s = s->next_all)
		munmap(s->hdr, SF_SLOT_SIZE);
	pool_drop(1); /* the parent's regions mapped ahead */
	P.no_trim = 0;
	P.cut = 0;
	P.lock = 0;
	P.arena_lock = 0;
	int fd = L.g.fd;
	if (fd >= 0 && !files_shared && is_log(fd))
		sf_close(fd);
	/* Shared: the number is still the parent's log, and this child's
	 * close loops must leave it alone as the parent's would. */
	static struct sf_fd_guard parent_log = {.fd = -1};
	parent_log.dev = L.dev;
	parent_log.ino = L.ino;
	parent_log.fd = files_shared ? fd : -1;
	if (files_shared && fd >= 0)
		sf_fd_guard_add(&parent_log);
	L.files_shared = files_shared;
	L.ctor_brief = 0;
	L.solo = 0;
	keeper_tried = 0;
	L.hold = 0;
	L.uses = 0; /* the parent's other threads' uses are not the child's; the forking thread is in none */
	L.hdr = NULL;
	L.g.fd = -1;
	L.g.epoch = 0;
	L.lost = 0;
	L.free_slots = NULL;
	L.all_slots = NULL;
	L.failed = 0;
	L.priv = 0; /* the parent's writer, its table with it, is not the child's */
	L.keeper = 0;
	L.pfd = -1;
}

/* Takes the write faults of n bytes at p now (one store per page, of the
 * value there): a MAP_SHARED slot is populated read-only, so its first
 * store per page would fault (page_mkwrite, tens of us on a busy file
 * system), and a fresh anonymous page faults too. */
void sf_prefault_write(void *p, size_t n)
{
	for (size_t off = 0; off < n; off += SF_PAGE) {
		uint64_t *w = (uint64_t *)(void *)((char *)p + off);
		__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	}
}

void sf_zero_events(struct sf_event *ev, size_t n)
{
	/* The first record first: a reader of a crashed process stops at the
	 * first zero word, so from then on the slot reads as empty, whatever
	 * order the rest is cleared in (sf_arch.h: vector registers are off
	 * limits here). */
	if (!n)
		return;
	__atomic_store_n(&ev[0].word, 0, __ATOMIC_RELEASE);
	sf_arch_zero_words(ev, n);
}

/* log_is_own where a seccomp filter refuses getpid (sandbox.c): the pid
 * the runtime set up for (start, fork), not in a vfork child (its
 * parent's memory); a raw clone(CLONE_VM) child is not told apart. */
static int log_is_own_stopped(const struct sf_header *h)
{
	return !sf_in_vfork_child() && h->pid == sf_buffer_pid();
}

/* sf_log_finish after tracing stopped at a seccomp filter (sandbox.c):
 * the filter may refuse any call, so only stores into the mapped header
 * (the exit code is exit_hook's): the log says the process ended through
 * its exit hooks, as it did, and record does not call it killed. */
void sf_log_finish_stopped(void)
{
	if (!log_is_own())
		return;
	sf_log_note_capped();
	__atomic_store_n(&L.hdr->state, SF_STATE_EXITED, __ATOMIC_RELEASE);
}
