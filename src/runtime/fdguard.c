/* The runtime's descriptors are out of the program's reach.
 *
 * The log's descriptor lives in the program's table, where a close loop, a
 * close_range, a closefrom or a dup2 over its number would otherwise take
 * it away, or worse, put the program's own file under the number the
 * runtime writes to. An fstat check before each write narrows that to the
 * time between the check and the write, but cannot close it. So the
 * functions that take a number away from whoever holds it are wrapped
 * here, as valgrind does for its own descriptors:
 *   - close(N) of the runtime's number (holding the runtime's file)
 *     fails with EBADF, as it would untraced (the program never opened
 *     N), and closes nothing; so does
 *     a dup2 or dup3 from it;
 *   - close_range and closefrom close everything in their range but it;
 *   - dup2 and dup3 onto it first move the runtime's descriptor to another
 *     free number near the top, wait until no runtime write still uses the
 *     old number (sf_fd_use), and only then let the program's call put its
 *     file there.
 *   - fcntl (and fcntl64) and dup of it fail with EBADF, as untraced (so
 *     F_SETFD cannot take close-on-exec off the log);
 *   - dup3 with bad flags or oldfd == newfd, and close_range with bad
 *     flags, fail with EINVAL first, as the kernel checks them first.
 * The raw system calls made through syscall() take the same path
 * (hooks.c). What stays out of reach of these wrappers is a system call
 * instruction in the program's own code, or an io_uring close: for those,
 * logfile.c's fstat check remains (docs/DESIGN.md "The runtime's
 * descriptors").
 *
 * A number is the runtime's only while it holds the runtime's file: each
 * guard keeps the device and inode of its file, and a wrapper checks them
 * (one fstat) before refusing, skipping or moving anything. A number that
 * holds another file lost the runtime's descriptor to a call the wrappers
 * did not see (a raw close_range instruction): the guard forgets it (the
 * log is opened again at its next use) and the program's call does what
 * it asked (guard_holding).
 *
 * The runtime takes a new number (the kernel gives the lowest free one)
 * optimistically, never making a program call wait for a runtime system
 * call: it opens, claims the number with the file it opened (pending: a
 * program call on that number checks the file itself, claimed_ours: the
 * program's own file that took the number is closed as untraced, the
 * runtime's is refused with EBADF; only a dup2 onto the runtime's file
 * waits for its move, a few system calls made with signals blocked),
 * waits for the program's number-taking calls already in flight (they
 * could not see the claim; bounded, wait_program_calls), checks with
 * fstat that the number still holds its file (a program close or dup2
 * that reached it first changes that: the runtime then leaves the number
 * alone and opens again), moves it high, guards the new number and checks
 * again (sf_fd_adopt). A signal handler that interrupts the program's own
 * close or dup2 on its thread waits for nothing.
 *
 * Costs: on a program close of an ordinary number, two compare-and-swaps
 * (its slot in flight, prog_enter) and two loads; one fstat more on a runtime number.
 * Two fstats per runtime open and one more per move; one atomic add and
 * subtract per runtime write. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

#define SF_FD_GUARDS 4
static struct sf_fd_guard *guards[SF_FD_GUARDS];
static uint32_t gate; /* 1 while the runtime or a dup2 over a runtime number moves one (signals blocked) */
/* A number the runtime has opened and is checking and moving high (under
 * the gate), and the file it opened there. Pending until checked: the
 * program may have closed the runtime's file at that number and opened
 * one of its own there before the claim, so the program's calls compare
 * the file at the number with (claim_dev, claim_ino) themselves
 * (claimed_ours). Written by one holder of the gate at a time, signals
 * blocked, as a sequence lock (claim_seq odd while the three change). */
static int claimed = -1;
static uint64_t claim_dev, claim_ino;
static uint32_t claim_seq;

/* The wrappers' calls go on to the next definitions in lookup order
 * (sf_real: a preload after the runtime, else libc's), so that such a
 * preload sees the program's calls as it does untraced; syscall() with
 * these numbers (hooks.c) makes the system call, as libc's does. */
typedef int (*close_fn)(int);
static close_fn real_close; /* glibc's: a cancellation point, unlike the bare system call */
typedef int (*fcntl_fn)(int, int, ...);
static fcntl_fn real_fcntl, real_fcntl64; /* glibc's (F_SETLKW is a cancellation point) */
typedef int (*dup3_fn)(int, int, int);
typedef int (*dup2_fn)(int, int);
typedef int (*close_range_fn)(unsigned int, unsigned int, int);
typedef void (*closefrom_fn)(int);
static close_fn real_dup;
static dup2_fn real_dup2;
static dup3_fn real_dup3;
static close_range_fn real_close_range;
static closefrom_fn real_closefrom;

void sf_fd_guard_resolve(void)
{
	real_close = (close_fn)sf_real("close");
	real_fcntl = (fcntl_fn)sf_real("fcntl");
	real_fcntl64 = (fcntl_fn)sf_real("fcntl64");
	real_dup = (close_fn)sf_real("dup");
	real_dup2 = (dup2_fn)sf_real("dup2");
	real_dup3 = (dup3_fn)sf_real("dup3");
	real_close_range = (close_range_fn)sf_real("close_range");
	real_closefrom = (closefrom_fn)sf_real("closefrom");
}

/* A libc-style result (-1 and errno) as -errno. */
static long neg_errno(long r)
{
	return r < 0 ? -(long)errno : r;
}

/* a[3] of a dup3 made for dup2 (no SYS_dup2: aarch64), with `next` only. */
#define FD_AS_DUP2 2

/* The call nr (dup2, dup3, close_range) with a: through the next
 * definition when `next` and it is known, else the system call; -errno. */
static long fd_call(int next, long nr, const long *a)
{
#ifdef SYS_dup2
	if (nr == SYS_dup2 && next && real_dup2)
		return neg_errno(real_dup2((int)a[0], (int)a[1]));
#else
	if (nr == SYS_dup3 && next && a[3] == FD_AS_DUP2 && real_dup2)
		return neg_errno(real_dup2((int)a[0], (int)a[1]));
#endif
	if (nr == SYS_dup3 && next && real_dup3)
		return neg_errno(real_dup3((int)a[0], (int)a[1], (int)a[2]));
	if (nr == SYS_close_range && next && real_close_range)
		return neg_errno(real_close_range((unsigned)a[0], (unsigned)a[1], (int)a[2]));
	return sf_syscall3(nr, a[0], a[1], a[2]);
}

void sf_fd_guard_add(struct sf_fd_guard *g)
{
	for (int i = 0; i < SF_FD_GUARDS; i++) {
		if (guards[i] == g)
			return;
		if (!guards[i]) {
			__atomic_store_n(&guards[i], g, __ATOMIC_RELEASE);
			return;
		}
	}
}

static void pause_briefly(void)
{
	sf_nap(20000);
}

/* ---- the runtime's side ---- */

int sf_fd_use(struct sf_fd_guard *g, uint32_t *ticket)
{
	uint32_t e = __atomic_load_n(&g->epoch, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&g->users[e & 1], 1, __ATOMIC_SEQ_CST);
	*ticket = e & 1;
	return __atomic_load_n(&g->fd, __ATOMIC_SEQ_CST);
}

void sf_fd_unuse(struct sf_fd_guard *g, uint32_t ticket)
{
	__atomic_sub_fetch(&g->users[ticket], 1, __ATOMIC_SEQ_CST);
}

/* Every user that may still hold the number it read before g->fd changed
 * has left: two flips of the epoch, each waiting for the users of the
 * other half (a user that read the epoch before the first flip but
 * counted itself after it is caught by the second). Users never block
 * (a chunk write at most), and run with signals blocked, so no signal
 * handler on this thread can be one. */
static void wait_users(struct sf_fd_guard *g)
{
	for (int flip = 0; flip < 2; flip++) {
		uint32_t old = __atomic_fetch_add(&g->epoch, 1, __ATOMIC_SEQ_CST) & 1;
		while (__atomic_load_n(&g->users[old], __ATOMIC_SEQ_CST))
			pause_briefly();
	}
}

void sf_fd_gate_lock(sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	/* Held only for a few system calls by a holder with signals blocked:
	 * never by a program call that could block, never by this thread
	 * underneath a signal handler. */
	while (__atomic_test_and_set(&gate, __ATOMIC_ACQUIRE))
		pause_briefly();
}

void sf_fd_gate_unlock(const sigset_t *old)
{
	__atomic_clear(&gate, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

void sf_fd_publish(struct sf_fd_guard *g, int fd)
{
	__atomic_store_n(&g->fd, fd, __ATOMIC_SEQ_CST);
	wait_users(g);
}

static int same_file(long fd, uint64_t dev, uint64_t ino)
{
	struct stat st;
	return fd >= 0 && sf_syscall3(SYS_fstat, fd, (long)&st, 0) == 0 && (uint64_t)st.st_dev == dev &&
	       (uint64_t)st.st_ino == ino;
}

static void claim_set(int fd, uint64_t dev, uint64_t ino)
{
	__atomic_add_fetch(&claim_seq, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&claim_dev, dev, __ATOMIC_SEQ_CST);
	__atomic_store_n(&claim_ino, ino, __ATOMIC_SEQ_CST);
	__atomic_store_n(&claimed, fd, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&claim_seq, 1, __ATOMIC_SEQ_CST);
}

static void claim_clear(void)
{
	claim_set(-1, 0, 0);
}

/* The program's calls that take numbers away (close, close_range,
 * closefrom, dup2, dup3) mark themselves in flight: they never wait. A
 * claim waits for those that began before it (they could not see it,
 * and may be about to close the number it checks), for at most about
 * 20 ms: a close that blocks (a socket lingering, a thread cancelled
 * inside glibc's close, a handler that interrupted this very thread's
 * close) only costs that claim its protection from wrapped calls. */
/* Each call in flight holds a slot: one word, the thread's id above a
 * sequence number, so that a slot is only ever cleared by an exact
 * compare (never another call's). A call left without returning (a
 * handler's siglongjmp out of a blocked close) leaves its slot taken: the
 * same thread frees it at its next wrapped call (its frame is gone: the
 * slot's stack address is at or below the new call's), and a claim never
 * waits for a slot whose thread is gone or blocked in a system call the
 * wrappers do not make (/proc/self/task/TID/syscall, in_closing_call), nor for its own thread's (a handler
 * that interrupted its own close). No free slot: a plain count, as
 * before. */
#define PROG_SLOTS 128
#define PROG_HELD 8
static uint64_t prog_slots[PROG_SLOTS];
static uint32_t prog_seq, prog_overflow;
static __thread int self_tid_cache __attribute__((tls_model("initial-exec")));
/* The slot's index is not kept: its word names it (a slot left behind is
 * looked up by its word, a rare path), and each word of static TLS is
 * taken from every thread's stack. */
static __thread struct held_slot {
	uint64_t word;
	uintptr_t sp;
} held[PROG_HELD] __attribute__((tls_model("initial-exec")));

static int self_tid(void)
{
	if (!self_tid_cache)
		self_tid_cache = (int)sf_syscall3(SYS_gettid, 0, 0, 0);
	return self_tid_cache;
}

/* Slots of this thread's calls whose frames are gone (left by a jump). */
static void free_left_slots(uintptr_t sp)
{
	for (int i = 0; i < PROG_HELD; i++) {
		uint64_t w = held[i].word;
		if (w && held[i].sp <= sp) {
			for (int k = 0; k < PROG_SLOTS; k++) {
				uint64_t x = w;
				if (__atomic_load_n(&prog_slots[k], __ATOMIC_RELAXED) == w &&
				    __atomic_compare_exchange_n(&prog_slots[k], &x, 0, 0, __ATOMIC_SEQ_CST,
								__ATOMIC_SEQ_CST))
					break;
			}
			held[i].word = 0;
		}
	}
}

static __attribute__((noinline)) uint32_t prog_enter(void)
{
	volatile char here;
	uintptr_t sp = (uintptr_t)&here;
	free_left_slots(sp);
	uint64_t tid = (uint64_t)(uint32_t)self_tid();
	uint32_t seq = __atomic_add_fetch(&prog_seq, 1, __ATOMIC_RELAXED) | 1; /* never a zero word */
	uint64_t word = tid << 32 | seq;
	for (uint32_t i = 0, k = (uint32_t)tid % PROG_SLOTS; i < PROG_SLOTS; i++, k = (k + 1) % PROG_SLOTS) {
		uint64_t z = 0;
		if (__atomic_load_n(&prog_slots[k], __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&prog_slots[k], &z, word, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			for (int h = 0; h < PROG_HELD; h++) {
				if (!held[h].word) {
					held[h].sp = sp;
					held[h].word = word;
					break;
				}
			}
			return k + 1;
		}
	}
	__atomic_add_fetch(&prog_overflow, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void prog_leave(uint32_t t)
{
	if (!t) {
		__atomic_sub_fetch(&prog_overflow, 1, __ATOMIC_SEQ_CST);
		return;
	}
	uint64_t w = __atomic_load_n(&prog_slots[t - 1], __ATOMIC_SEQ_CST);
	for (int h = 0; h < PROG_HELD; h++) {
		if (held[h].word && held[h].word == w) { /* the word names its slot */
			held[h].word = 0;
			__atomic_compare_exchange_n(&prog_slots[t - 1], &w, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			return;
		}
	}
	/* Not recorded (more than PROG_HELD nested): this thread's own. */
	if ((w >> 32) == (uint64_t)(uint32_t)self_tid())
		__atomic_compare_exchange_n(&prog_slots[t - 1], &w, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static void prog_leave_cb(void *e)
{
	prog_leave(*(uint32_t *)e);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether thread tid may still be inside a wrapped call: running (or
 * preempted), or in one of the system calls the wrappers make before
 * they leave (the closing call itself, fstat, gettid). A thread gone, or
 * blocked in any other system call (a nanosleep after its siglongjmp),
 * has left its slot behind. */
void sf_task_path(char path[48], uint32_t tid, const char *tail)
{
	const char head[] = "/proc/self/task/";
	size_t n = 0;
	for (; head[n]; n++)
		path[n] = head[n];
	char digits[12];
	int nd = 0;
	do
		digits[nd++] = (char)('0' + tid % 10);
	while ((tid /= 10) && nd < 11);
	while (nd)
		path[n++] = digits[--nd];
	for (size_t i = 0; tail[i] && n < 47; i++)
		path[n++] = tail[i];
	path[n] = 0;
}

static int in_closing_call(uint32_t tid)
{
	char path[48], buf[24];
	sf_task_path(path, tid, "/syscall");
	long fd = sf_proc_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fd != -ENOENT && fd != -ESRCH; /* cannot tell: wait */
	long r = sf_syscall3(SYS_read, fd, (long)buf, sizeof(buf) - 1);
	sf_syscall3(SYS_close, fd, 0, 0);
	if (r <= 0)
		return 1;
	buf[r] = 0;
	if (buf[0] < '0' || buf[0] > '9')
		return 1; /* "running", "-1": not in a system call */
	long nr = 0;
	for (char *c = buf; *c >= '0' && *c <= '9'; c++)
		nr = nr * 10 + (*c - '0');
	return nr == SYS_close || nr == SYS_close_range || nr == SYS_dup3 || nr == SYS_fstat || nr == SYS_newfstatat ||
	       nr == SYS_gettid || nr == SYS_fcntl
#ifdef SYS_dup2
	       || nr == SYS_dup2
#endif
		;
}

/* The budget is elapsed time, not a number of pauses: on a loaded machine
 * each 20 us pause can take a millisecond. A slot unchanged for 1 ms whose
 * thread is not in a closing call is left behind: not waited for. */
#define PROG_WAIT_NS (20 * 1000000LL)
#define PROG_STALE_NS (1000000LL)

static void wait_program_calls(void)
{
	int64_t start = now_ns(), end = start + PROG_WAIT_NS;
	uint64_t self = (uint64_t)(uint32_t)self_tid();
	for (int k = 0; k < PROG_SLOTS; k++) {
		uint64_t w = __atomic_load_n(&prog_slots[k], __ATOMIC_SEQ_CST);
		if (!w || (w >> 32) == self)
			continue;
		int checked = 0;
		while (__atomic_load_n(&prog_slots[k], __ATOMIC_SEQ_CST) == w) {
			int64_t t = now_ns();
			if (t >= end)
				return;
			if (!checked && t - start >= PROG_STALE_NS) {
				checked = 1;
				if (!in_closing_call((uint32_t)(w >> 32)))
					break;
			}
			pause_briefly();
		}
	}
	while (__atomic_load_n(&prog_overflow, __ATOMIC_SEQ_CST) && now_ns() < end)
		pause_briefly();
}

static int path_file(int fd, const char *path)
{
	struct stat st;
	return path && sf_syscall6(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0) == 0 &&
	       same_file(fd, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
}

int sf_fd_adopt(struct sf_fd_guard *g, int fd, uint64_t dev, uint64_t ino, const char *path)
{
	claim_set(fd, dev, ino);
	wait_program_calls(); /* from here on every wrapped call sees the claim */
	if (!same_file(fd, dev, ino)) {
		/* The file at path, opened by the runtime, is not the one
		 * wanted: closed. Anything else at fd is the program's, put
		 * there before the claim: left alone. */
		int ours = path_file(fd, path);
		if (ours)
			sf_syscall3(SYS_close, fd, 0, 0);
		claim_clear();
		return ours ? -ESTALE : -EAGAIN;
	}
	int high = sf_fd_keep(fd); /* closes fd if moved: still claimed */
	if (high >= 0) {
		__atomic_store_n(&g->dev, dev, __ATOMIC_SEQ_CST); /* before the number: see guard_holding */
		__atomic_store_n(&g->ino, ino, __ATOMIC_SEQ_CST);
		sf_fd_publish(g, high);
	}
	claim_clear();
	if (high < 0)
		return -EBADF;
	/* A close loop may have reached the new number between the move and
	 * the guard: the number is the program's then. */
	if (!same_file(high, dev, ino)) {
		sf_fd_publish(g, -1);
		return -EAGAIN;
	}
	return high;
}

int sf_fd_open_adopt(struct sf_fd_guard *g, int (*open_fn)(const char *path, int again), const char *path,
		     int named, struct stat *st, int *err)
{
	int fd = open_fn(path, 0);
	*err = errno;
	/* The file just made: at path, a regular file (no symlink or other
	 * file put there meanwhile); unnamed, seen through the number, a
	 * regular file linked nowhere and still empty (a program's own file
	 * put at that number is linked somewhere or not empty). Else its
	 * descriptor is left alone. */
	/* named 2: a file record's keeper made and sent (logfile.c,
	 * open_log_by_keeper), named where this process may not look: seen
	 * through the number, a regular file with one link, still empty. */
	if (fd >= 0 && (named == 2 ? fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_nlink != 1 || st->st_size
			: named    ? lstat(path, st) < 0 || !S_ISREG(st->st_mode)
				   : fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_nlink || st->st_size)) {
		*err = errno ? errno : EINVAL;
		return -1;
	}
	/* A program closing a range of low numbers in a loop takes the fresh
	 * number (the lowest free, inside its range) before the claim most
	 * times: past 8 tries, each waits for the scheduler to run others. */
	for (int tries = 0; fd >= 0 && tries < 64; tries++) {
		int r = sf_fd_adopt(g, fd, (uint64_t)st->st_dev, (uint64_t)st->st_ino, named == 1 ? path : NULL);
		if (r != -EAGAIN) {
			*err = r < 0 ? -r : 0;
			return r >= 0 ? r : -1;
		}
		if (tries >= 8)
			sf_yield();
		fd = open_fn(path, 1);
		*err = fd < 0 ? errno : EAGAIN; /* EAGAIN: taken at every try */
	}
	return -1;
}

void sf_fd_release(struct sf_fd_guard *g, uint64_t dev, uint64_t ino)
{
	int fd = __atomic_load_n(&g->fd, __ATOMIC_SEQ_CST);
	claim_set(fd, dev, ino); /* a dup2 onto it waits until it is closed */
	sf_fd_publish(g, -1);
	if (same_file(fd, dev, ino))
		sf_syscall3(SYS_close, fd, 0, 0);
	claim_clear();
}

void sf_fd_guard_after_fork_child(void)
{
	__atomic_clear(&gate, __ATOMIC_RELAXED);
	claimed = -1;
	claim_seq = 0;
	/* calls in flight in the parent's other threads; this thread's id */
	for (int k = 0; k < PROG_SLOTS; k++)
		prog_slots[k] = 0;
	prog_overflow = 0;
	self_tid_cache = 0;
	for (int h = 0; h < PROG_HELD; h++)
		held[h].word = 0;
	for (int i = 0; i < SF_FD_GUARDS && guards[i]; i++) {
		guards[i]->users[0] = guards[i]->users[1] = 0;
	}
}

/* ---- the program's side ---- */

/* Whether the runtime's claim is on fd and fd holds the file the runtime
 * opened: a load when the claim is elsewhere (every ordinary close), an
 * fstat when it is on fd. The holder changes the claim with a few stores
 * and signals blocked, never underneath this thread: the spin is short. */
static int claimed_ours(long fd)
{
	if (fd < 0 || __atomic_load_n(&claimed, __ATOMIC_SEQ_CST) != fd)
		return 0;
	for (;;) {
		uint32_t seq = __atomic_load_n(&claim_seq, __ATOMIC_SEQ_CST);
		if (seq & 1) {
			sf_arch_cpu_relax();
			continue;
		}
		long c = __atomic_load_n(&claimed, __ATOMIC_SEQ_CST);
		uint64_t dev = __atomic_load_n(&claim_dev, __ATOMIC_SEQ_CST);
		uint64_t ino = __atomic_load_n(&claim_ino, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&claim_seq, __ATOMIC_SEQ_CST) != seq)
			continue;
		return c == fd && same_file(fd, dev, ino);
	}
}

/* A dup2 onto the number the runtime is moving waits for the move (a few
 * system calls; the runtime does it with signals blocked, so never
 * underneath this thread), but only while the number holds the runtime's
 * file: a number the program has taken back is its own at once. */
static void wait_claim(long to)
{
	while (claimed_ours(to))
		pause_briefly();
}

static struct sf_fd_guard *guard_of(long fd)
{
	if (fd < 0)
		return NULL;
	for (int i = 0; i < SF_FD_GUARDS; i++) {
		struct sf_fd_guard *g = __atomic_load_n(&guards[i], __ATOMIC_ACQUIRE);
		if (!g)
			break;
		if (__atomic_load_n(&g->fd, __ATOMIC_SEQ_CST) == fd)
			return g;
	}
	return NULL;
}

/* The guard of fd if fd still holds the guard's file. A number that holds
 * another file lost the runtime's descriptor to a system call the
 * wrappers could not see (a raw close_range, an io_uring close) and is the
 * program's again: the guard forgets it (the runtime opens its file again
 * at its next use, logfile.c), and the program's call goes through as
 * untraced. One fstat, on the guarded number only. */
static struct sf_fd_guard *guard_holding(long fd)
{
	struct sf_fd_guard *g = guard_of(fd);
	if (!g)
		return NULL;
	uint64_t dev = __atomic_load_n(&g->dev, __ATOMIC_SEQ_CST), ino = __atomic_load_n(&g->ino, __ATOMIC_SEQ_CST);
	if (same_file(fd, dev, ino))
		return g;
	int expect = (int)fd;
	__atomic_compare_exchange_n(&g->fd, &expect, -1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return NULL;
}

/* fd is one of the runtime's descriptors: guarded or claimed, and holding
 * the runtime's file. */
static int runtime_number(long fd)
{
	if (fd < 0)
		return 0;
	return guard_holding(fd) != NULL || claimed_ours(fd);
}

/* The lowest runtime number in [lo, hi], or -1 (each candidate checked,
 * runtime_number). */
static long lowest_guarded(unsigned long lo, unsigned long hi)
{
	long best = -1, c = __atomic_load_n(&claimed, __ATOMIC_SEQ_CST);
	if (c >= 0 && (unsigned long)c >= lo && (unsigned long)c <= hi && claimed_ours(c))
		best = c;
	for (int i = 0; i < SF_FD_GUARDS; i++) {
		struct sf_fd_guard *g = __atomic_load_n(&guards[i], __ATOMIC_ACQUIRE);
		if (!g)
			break;
		long fd = __atomic_load_n(&g->fd, __ATOMIC_SEQ_CST);
		if (fd >= 0 && (unsigned long)fd >= lo && (unsigned long)fd <= hi && (best < 0 || fd < best) &&
		    guard_holding(fd))
			best = fd;
	}
	return best;
}

static long ret_errno(long r)
{
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* A free number for the runtime's descriptor at old: the highest one
 * below the top of the table (rt_libc.c keeps the low ones the program's),
 * or -1. */
static long move_away(long old)
{
	if (sf_seccomp_refuses_move())
		return -1; /* a seccomp filter refuses the move's calls (sandbox.c): given up */
	struct rlimit rl;
	long top = sf_syscall6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0) == 0 ? (long)rl.rlim_cur : 1024;
	if (top > 1024)
		top = 1024;
	for (long t = top - 1; t >= 3; t--) {
		long r = sf_syscall3(SYS_fcntl, old, F_DUPFD_CLOEXEC, t);
		if (r >= 0)
			return r;
		if (r != -EMFILE && r != -EINVAL)
			return -1;
	}
	return -1;
}

/* dup2/dup3 onto the runtime's number: the runtime moves first, behind the
 * gate (so no other program call sees the number half-moved), waits for
 * its writes through the old number, then the program's call runs. No
 * free number left: the runtime gives that descriptor up (its writes then
 * fail, counted). */
static long dup_over(int next, long nr, long from, long to, long flags, long as_dup2)
{
	sigset_t old;
	sf_fd_gate_lock(&old);
	struct sf_fd_guard *g = guard_of(to);
	if (g && from != to) {
		long moved = move_away(to);
		sf_fd_publish(g, (int)moved);
	}
	long r = nr == SYS_dup3 ? fd_call(next, SYS_dup3, (const long[4]){from, to, flags, as_dup2})
#ifdef SYS_dup2
				: fd_call(next, SYS_dup2, (const long[4]){from, to, 0});
#else
				: (from == to ? to : fd_call(next, SYS_dup3, (const long[4]){from, to, 0}));
#endif
	sf_fd_gate_unlock(&old);
	return r;
}

/* close_range (fd_call) on the pieces around the runtime's numbers; -errno. */
static long guarded_close_range(int next, unsigned long lo, unsigned long hi, unsigned long flags)
{
	if (flags & CLOSE_RANGE_CLOEXEC) /* the runtime's are close-on-exec already */
		return fd_call(next, SYS_close_range, (const long[4]){(long)lo, (long)hi, (long)flags});
	long r = 0;
	while (lo <= hi) {
		long g = lowest_guarded(lo, hi);
		unsigned long end = g < 0 ? hi : (unsigned long)g - 1;
		if (g < 0 || (unsigned long)g > lo)
			r = fd_call(next, SYS_close_range, (const long[4]){(long)lo, (long)end, (long)flags});
		if (r < 0 || g < 0 || (unsigned long)g == ~0ul)
			break;
		lo = (unsigned long)g + 1;
	}
	return r;
}

static int fd_syscall(int next, long nr, const long *a, long *r, uint32_t *e);

/* syscall(2) with one of these numbers (hooks.c): 1 and *r set if handled. */
int sf_fd_syscall(long nr, const long *a, long *r)
{
	/* Any other number passes untouched, without a system call of ours
	 * (prog_enter may ask the thread's id: a SECCOMP_MODE_STRICT thread's
	 * syscall(SYS_exit) must be its only call). */
	if (nr != SYS_fcntl && nr != SYS_dup && nr != SYS_close && nr != SYS_close_range && nr != SYS_dup3
#ifdef SYS_dup2
	    && nr != SYS_dup2
#endif
	)
		return 0;
	uint32_t e = prog_enter();
	int handled = fd_syscall(0, nr, a, r, &e);
	prog_leave(e);
	return handled;
}

/* The same for the exported wrappers: on to the next definitions. */
static void fd_wrapped(long nr, const long *a, long *r)
{
	uint32_t e = prog_enter();
	fd_syscall(1, nr, a, r, &e);
	prog_leave(e);
}

static int fd_syscall(int next, long nr, const long *a, long *r, uint32_t *e)
{
	if ((nr == SYS_fcntl || nr == SYS_dup) && runtime_number(a[0])) {
		*r = -EBADF; /* not open, as untraced (fcntl_any) */
		return 1;
	}
	if (nr != SYS_close && nr != SYS_close_range && nr != SYS_dup3
#ifdef SYS_dup2
	    && nr != SYS_dup2
#endif
	)
		return 0;
	if (nr == SYS_close) {
		*r = runtime_number(a[0]) ? -EBADF : sf_syscall3(SYS_close, a[0], 0, 0);
		return 1;
	}
	if (nr == SYS_close_range) {
		/* The kernel's checks first, in its order: the answer is the
		 * one untraced, whatever the range holds. */
		if ((unsigned long)a[2] & ~(unsigned long)(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC))
			*r = -EINVAL;
		else
			*r = (unsigned long)a[0] > (unsigned long)a[1] ? -EINVAL
								      : guarded_close_range(next, (unsigned)a[0], (unsigned)a[1], (unsigned)a[2]);
		return 1;
	}
	if (nr == SYS_dup3 && (((unsigned long)a[2] & ~(unsigned long)O_CLOEXEC) || a[0] == a[1])) {
		*r = -EINVAL; /* bad flags, or oldfd == newfd: before any descriptor is looked at */
		return 1;
	}
	if (runtime_number(a[0])) { /* the program never had it open: as untraced */
		*r = -EBADF;
		return 1;
	}
	/* A vfork child's table is its own copy, about to be replaced by an
	 * exec, and the guard it sees is its parent's memory: it must not move
	 * the parent's descriptor, and what it puts at that number is its own. */
	/* A dup2 that waits for a claim leaves the count first: the claim
	 * waits for calls in flight, and would wait for this one. It counts
	 * itself again before looking once more, so a claim made after that
	 * waits for it. */
	while (!sf_in_vfork_child() && claimed_ours(a[1])) {
		prog_leave(*e);
		wait_claim(a[1]);
		*e = prog_enter();
	}
	if (!sf_in_vfork_child() && guard_holding(a[1]) != NULL) {
		/* Under the gate no claim is being made: not in flight there
		 * (a claim holds the gate while it waits for calls in flight). */
		prog_leave(*e);
		*r = dup_over(next, nr, a[0], a[1], a[2], next ? a[3] : 0);
		*e = prog_enter();
	}
	else
		*r = fd_call(next, nr, a);
	return 1;
}

__attribute__((visibility("default"))) int close(int fd)
{
	uint32_t e = prog_enter();
	int r;
	if (runtime_number(fd)) {
		errno = EBADF;
		r = -1;
	} else if (real_close) {
		/* glibc's close is a cancellation point: a thread cancelled in
		 * it leaves the count too. */
		pthread_cleanup_push(prog_leave_cb, &e);
		r = real_close(fd);
		pthread_cleanup_pop(0);
	} else {
		r = (int)ret_errno(sf_syscall3(SYS_close, fd, 0, 0)); /* before the runtime's constructor */
	}
	int err = errno;
	prog_leave(e);
	errno = err;
	return r;
}

__attribute__((visibility("default"))) int close_range(unsigned int lo, unsigned int hi, int flags)
{
	long a[6] = {lo, hi, flags};
	long r;
	fd_wrapped(SYS_close_range, a, &r);
	return (int)ret_errno(r);
}

/* glibc's closefrom calls close_range inside libc, past any wrapper:
 * the pieces below the runtime's highest number go through the next
 * close_range, the rest through the next closefrom (a later preload
 * sees closefrom from the last runtime number on). */
__attribute__((visibility("default"))) void closefrom(int lo)
{
	if (lo < 0)
		lo = 0;
	uint32_t e = prog_enter();
	unsigned long from = (unsigned)lo;
	long r = 0;
	for (;;) {
		long g = lowest_guarded(from, ~0u);
		if (g < 0 && real_closefrom) {
			real_closefrom((int)from);
			break;
		}
		unsigned long end = g < 0 ? ~0u : (unsigned long)g - 1;
		if (g < 0 || (unsigned long)g > from)
			r = fd_call(1, SYS_close_range, (const long[4]){(long)from, (long)end, 0});
		if (r < 0 || g < 0 || (unsigned long)g >= ~0u)
			break;
		from = (unsigned long)g + 1;
	}
	prog_leave(e);
	if (r < 0) /* no close_range (Linux < 5.9): one by one, as glibc falls back to */
		for (long fd = lo, top = sysconf(_SC_OPEN_MAX); fd < top; fd++)
			close((int)fd);
}

__attribute__((visibility("default"))) int dup2(int from, int to)
{
#ifdef SYS_dup2
	long a[6] = {from, to};
	long r;
	fd_wrapped(SYS_dup2, a, &r);
	return (int)ret_errno(r);
#else
	/* dup2(fd, fd) checks fd and returns it (EBADF for a runtime number,
	 * never the program's); dup3 refuses it. */
	if (from == to) {
		if (runtime_number(from))
			return errno = EBADF, -1;
		if (real_dup2)
			return real_dup2(from, to);
		return (int)ret_errno(sf_syscall3(SYS_fcntl, from, F_GETFD, 0) < 0 ? -EBADF : to);
	}
	long a[6] = {from, to, 0, FD_AS_DUP2};
	long r;
	fd_wrapped(SYS_dup3, a, &r);
	return (int)ret_errno(r);
#endif
}

__attribute__((visibility("default"))) int dup3(int from, int to, int flags)
{
	long a[6] = {from, to, flags};
	long r;
	fd_wrapped(SYS_dup3, a, &r);
	return (int)ret_errno(r);
}

/* fcntl and dup of a runtime number fail with EBADF, as untraced (the
 * program never opened it): F_SETFD 0 would otherwise take close-on-exec
 * off the log, F_GETFL/F_GETFD would show it, dup would hand the program a
 * descriptor of it. The argument is passed on as glibc takes it (one
 * pointer-sized word, an int or a pointer). */
static int fcntl_any(fcntl_fn real, int fd, int cmd, void *arg)
{
	if (runtime_number(fd)) {
		errno = EBADF;
		return -1;
	}
	if (real)
		return real(fd, cmd, arg);
	return (int)ret_errno(sf_syscall3(SYS_fcntl, fd, cmd, (long)arg)); /* before the runtime's constructor */
}

__attribute__((visibility("default"))) int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_any(real_fcntl, fd, cmd, arg);
}

__attribute__((visibility("default"))) int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_any(real_fcntl64 ? real_fcntl64 : real_fcntl, fd, cmd, arg);
}

__attribute__((visibility("default"))) int dup(int fd)
{
	if (runtime_number(fd)) {
		errno = EBADF;
		return -1;
	}
	if (real_dup)
		return real_dup(fd);
	return (int)ret_errno(sf_syscall3(SYS_dup, fd, 0, 0));
}
