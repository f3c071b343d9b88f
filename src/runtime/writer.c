/* The writer thread: hands full slots to the log file off the traced
 * threads' path.
 *
 * Each traced thread owns two slots. When the one it records into fills,
 * it queues that slot here and carries on in the other at once; this thread
 * writes the queued batch as a DATA chunk, clears the slot and marks it
 * ready for its owner again. On a 2-core machine that takes the copy into
 * the page cache (most of the cost of a hand-off) off the traced thread.
 * A queued slot that is never written (the process died) is still in the
 * file as a SLOT chunk with its own batch number, so nothing is lost.
 *
 * The thread is a raw clone on thread storage of the runtime's own
 * (own_tls.c; a pthread only where that cannot be made): pthread_create
 * callocs the new thread's DTV with the program's malloc, which made the
 * main arena and the main thread's tcache before main, for the program to
 * see in mallinfo2 (issue 25). glibc does not know it, so its set*id
 * broadcast does not reach it: the set*id wrappers make it follow
 * (sf_keeper_follow; a bare clone once kept the old credentials after a
 * program dropped root). It never calls the program's malloc, nor relies
 * on glibc's thread-safety switches (malloc's and stdio's, off while the
 * program has one thread). It is created once, never from the event path,
 * and its sleds must record nothing (sf_suppress_begin). So it is made at
 * __libc_start_main, once every library's constructor has run (init.c:
 * the runtime's own constructor runs before them, when the program's
 * malloc may not be ready), in a process that has sleds, or, in one that has
 * none at start (node loading an instrumented addon), by the loader hook
 * when the first instrumented object loads: dlopen is running there, under
 * its load lock, just before the object's constructors, which may create
 * threads themselves (init.c, sf_services_start). Its attributes are
 * explicit rather than those of whichever thread made it: SCHED_OTHER,
 * the CPUs the process had at start, every signal blocked but the two
 * glibc reserves for itself.
 * Seccomp filters are inherited by every thread and cannot be shed.
 * A forked child has no writer: its hand-offs are synchronous.
 * It is not on glibc's thread count, ends a process whose program
 * threads have all gone, and leaves one whose leader has gone while
 * threads of the program's run on, so that the last of them sets the
 * process's status (docs/DESIGN.md, "Writer thread"). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/syscall.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

/* valgrind's client request (a no-op instruction sequence natively):
 * under valgrind the writer uses no system call valgrind does not know
 * (futex_waitv, Linux 5.16: valgrind printed "unhandled amd64-linux
 * syscall: 449" on the program's stderr for each idle wait, issue 25). */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

static struct sf_slot *queue;   /* pushed by owners, taken whole by the writer */
static uint32_t wake;           /* futex word: bumped on every push */
static uint32_t busy;           /* the writer holds a batch */
static int active;
static int stopping;            /* sf_writer_stop: end once the queue is written */
static uint32_t parked;         /* 1: stopping, queue written, waiting for sf_writer_stop (2: go on) */
static int gone;                /* handed over and left (hand_over): a submitter writes what it queues */
static int leader_checked;      /* the leader's end seen (leave_if_program_runs) */
static pthread_t writer;
/* The writer is a raw clone with thread storage of the runtime's own
 * (own_tls.c), not a pthread: 1 while it is. Its storage and its tid word
 * (cleared by the kernel at its end: the join). */
static int raw;
static struct sf_own_tls writer_tls;
static long raw_pid; /* its process: a vfork or CLONE_VM child shares this memory, not the writer */
/* The writer's stack: ours (mmap), not glibc's. glibc's fork puts the
 * stacks it allocated for the parent's other threads into the child's
 * stack cache, so with a glibc stack the child's first pthread_create
 * took the writer's, with its DTV already allocated: the program's
 * thread made one allocation fewer than untraced (issue 25). A stack
 * given with pthread_attr_setstack is on glibc's list of user stacks,
 * which its fork empties, and never cached. Kept for a restart (after
 * sf_writer_stop's join nothing of glibc's is left on it). */
static char *writer_stack;
static size_t writer_stack_size;
static const cpu_set_t *writer_cpus;
/* glibc's count of the process's threads (__nptl_nthreads, GLIBC_PRIVATE;
 * NULL elsewhere): the writer is not on it while it runs (see
 * sf_writer_start). */
static int *nptl_nthreads;

/* Descriptor uses on request (sf_writer_call): once the writer's table is
 * its own (logfile.c, go private), the log's descriptor lives only there
 * and every other thread's use of it (a chunk write, a slot's file space
 * and mapping, a snapshot's mapping, the log's creation) runs here. One
 * request at a time: call_lock is taken by the requester (signals blocked,
 * so never by a handler over its own thread's request), call_state goes
 * 1 (posted) then 2 (done) and back to 0. */
struct writer_call {
	long (*fn)(void *);
	void *arg;
	long ret;
	void *tp; /* the requester's thread pointer: the keeper runs fn on it */
};
static uint32_t call_lock, call_state;
static int serving; /* a writer exists or is being made: requests are answered */
/* Messages the writer makes while it runs a request (its table has no
 * stderr): the requester prints them (sf_writer_call). */
static char deferred[2048];
static size_t deferred_len;
static int deferring;
static struct writer_call *call_req;
static __thread int on_writer __attribute__((tls_model("initial-exec")));
static uint32_t writer_tid;
static int on_valgrind; /* RUNNING_ON_VALGRIND, at the writer's start: idle waits without futex_waitv */

/* logfile.c: under valgrind the writer keeps the program's table */
int sf_writer_on_valgrind(void)
{
	return on_valgrind;
}

/* init.c: whether the process runs under valgrind now (the writer's own
 * answer above is taken at its start, which the default writer mode
 * decides on). */
int sf_running_on_valgrind(void)
{
	return RUNNING_ON_VALGRIND != 0;
}
static int private_table; /* the writer unshared its descriptor table (logfile.c) */
/* The raw writer was made without CLONE_FILES (start_raw): its table a
 * copy of the program's from its start, emptied there (logfile.c). Its
 * tid, so that only the writer itself is told so. */
static int table_copied;

int sf_writer_table_copied(void)
{
	return __atomic_load_n(&table_copied, __ATOMIC_ACQUIRE) &&
	       (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0) == __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE);
}
/* A clone(CLONE_FILES) child's keeper thread (below): its id while it
 * serves, its stack, and whether it ends after the request it runs. */
static uint32_t keeper_tid;
static long keeper_pid; /* its process: a vfork child shares this memory, not the keeper */
static char *keeper_stack;
/* A fork child's keeper, due (sf_keeper_defer) and made at its first
 * use: the pid it is due in (a vfork child shares this word), and the
 * leader's exit word, found at the fork (on the leader). */
static int keeper_due_pid;
static uint32_t *keeper_due_word;
static int keeper_quit;
static int keeper_keep = -1; /* the one descriptor a new keeper keeps of its copy (sf_keeper_resume) */
/* /proc/self (the process's /proc/PID directory) opened in the writer's,
 * or the keeper's, own table when that table became its own: every /proc
 * read of theirs goes through it (ns.c, sf_proc_open), so a program that
 * chroots into a tree without /proc, or unmounts it in a mount namespace
 * of its own, changes nothing for them. -1: none (the paths then). */
static int writer_proc = -1, keeper_proc = -1;

#define SF_SYS_pidfd_open 434  /* the same number everywhere (asm-generic too) */
#define SF_SYS_pidfd_getfd 438
#define IDLE_CHECK_NS 100000000L     /* how often an idle writer looks for a program thread */
#define LEADER_CHECK_NS 10000000000ull /* the same while the leader lives */

static void futex_wake_all(uint32_t *w)
{
	sf_futex_wake(w, 0x7fffffff);
}

/* One waiter of a lock word woken: each release wakes the next, so the
 * lock is never left with sleepers and no holder. Waking them all at each
 * release made 3,000 threads ending at once quadratic (skeptic c9:
 * 14.3 s against 0.52 s untraced, 59% in the kernel). */
static void futex_wake_one(uint32_t *w)
{
	sf_futex_wake(w, 1);
}

static void futex_wait(uint32_t *w, uint32_t seen)
{
	sf_futex_wait(w, seen, 0);
}

/* The leader thread's exit word: glibc's main thread registers its tid
 * field with set_tid_address, so the kernel zeroes it and wakes its
 * (shared) futex when the leader ends, however it ends. NULL when the
 * writer was not started from the leader, or the kernel will not say
 * where it is (PR_GET_TID_ADDRESS needs CONFIG_CHECKPOINT_RESTORE). */
static uint32_t *leader_word;

/* In the leader (sf_writer_start): where its exit word is. */
static void find_leader_word(void)
{
	if (leader_word || sf_syscall3(SYS_gettid, 0, 0, 0) != sf_syscall3(SYS_getpid, 0, 0, 0))
		return;
	uint32_t *w = NULL;
	if (sf_syscall6(SYS_prctl, PR_GET_TID_ADDRESS, (long)&w, 0, 0, 0, 0) == 0 && w &&
	    *w == (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0))
		leader_word = w;
}

/* No thread of the program's left, only an exited leader: the process
 * ends as the kernel would have ended it, with the leader's status, the
 * log marked as at _exit. */
static void end_if_program_gone(void)
{
	int status;
	if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE) || !sf_program_gone(&status))
		return;
	/* The keeper has no thread storage of its own: only the status and
	 * the end (no snapshot can be pending without a writer). */
	if (!__atomic_load_n(&keeper_tid, __ATOMIC_ACQUIRE))
		sf_image_ends();
	sf_exit_group_now(status);
}

/* The writer's control words (sftrace resume / pause, sftrace snapshot:
 * switch.c, snapshot.c), with their values read before the writer's
 * round looked for requests: a request made since changed one of them,
 * and the wait returns at once. */
struct ctl_words {
	uint32_t *w[3];
	uint32_t v[3];
	int n;
};

static void ctl_words_read(struct ctl_words *c)
{
	c->n = 0;
	if ((c->w[c->n] = sf_switch_wait_word(&c->v[c->n])))
		c->n++;
	if ((c->w[c->n] = sf_snapshot_wait_word(&c->v[c->n])))
		c->n++;
	if ((c->w[c->n] = sf_notes_relay_word(&c->v[c->n]))) /* a loss to note for a relative (notes.c) */
		c->n++;
}

/* Idle: waits for a push, a request on a control word (ctl: the writer's;
 * NULL on the keeper), or the leader's end, at once (futex_waitv, Linux
 * 5.16; the control words and the leader's exit word are shared futexes:
 * `sftrace resume` and `snapshot` wake them from their own process, the
 * kernel the leader's). One whose last thread ended by a bare SYS_exit
 * (no glibc involved: syscall(SYS_exit) from main, a thread of a runtime
 * of its own, a program under SECCOMP_MODE_STRICT, which may not call
 * exit_group) ends untraced; the writer alone would keep it alive. So
 * while the leader lives the writer also waits for its end (every
 * LEADER_CHECK_NS at most: a program may move its exit word), and once it
 * is gone (or where that cannot be waited on) it wakes every
 * IDLE_CHECK_NS to see whether any thread of the program's is left (ns.c,
 * sf_program_gone): a few system calls of this thread, none of the
 * program's. Without futex_waitv a request waits for that wake-up. */
static void idle_wait(uint32_t seen, const struct ctl_words *ctl)
{
	struct futex_waitv w[5];
	int n = 0;
	w[n++] = (struct futex_waitv){.val = seen, .uaddr = (uint64_t)(uintptr_t)&wake,
				      .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG};
	uint32_t tid = leader_word ? __atomic_load_n(leader_word, __ATOMIC_ACQUIRE) : 0;
	if (leader_word && !tid && !leader_checked &&
	    sf_syscall3(SYS_gettid, 0, 0, 0) == __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE))
		return; /* gone before this wait: the writer's loop looks at once (leave_if_program_runs) */
	if (tid)
		w[n++] = (struct futex_waitv){.val = tid, .uaddr = (uint64_t)(uintptr_t)leader_word, .flags = FUTEX_32};
	for (int i = 0; ctl && i < ctl->n; i++)
		w[n++] = (struct futex_waitv){.val = ctl->v[i], .uaddr = (uint64_t)(uintptr_t)ctl->w[i], .flags = FUTEX_32};
	uint64_t at = sf_mono_ns() + (tid ? LEADER_CHECK_NS : IDLE_CHECK_NS);
	struct { long s, ns; } ts = {(long)(at / 1000000000u), (long)(at % 1000000000u)};
	long r = n > 1 && !on_valgrind ? sf_syscall6(SYS_futex_waitv, (long)w, n, 0, (long)&ts, CLOCK_MONOTONIC, 0) : -ENOSYS;
	if (r == -ENOSYS || r == -EINVAL || r == -EFAULT) { /* EFAULT: a word the program unmapped */
		r = sf_futex_wait(&wake, seen, IDLE_CHECK_NS);
	}
	if (r == -ETIMEDOUT)
		end_if_program_gone();
}

/* In the writer thread: runs the request posted, if any. Also called
 * while the writer waits for the log's lock (logfile.c): its holder may be
 * a requester, waiting for this. */
void sf_writer_serve(void)
{
	if (!on_writer || __atomic_load_n(&call_state, __ATOMIC_ACQUIRE) != 1)
		return;
	struct writer_call *c = __atomic_load_n(&call_req, __ATOMIC_ACQUIRE);
	__atomic_store_n(&call_state, 3, __ATOMIC_RELAXED); /* running: a nested serve skips it */
	deferring = 1;
	c->ret = c->fn(c->arg);
	deferring = 0;
	__atomic_store_n(&call_state, 2, __ATOMIC_RELEASE);
	futex_wake_all(&call_state);
}

/* The request posted, if any, answered SF_WRITER_REFUSED. */
static void refuse_posted(void)
{
	if (__atomic_load_n(&call_state, __ATOMIC_ACQUIRE) != 1)
		return;
	__atomic_load_n(&call_req, __ATOMIC_ACQUIRE)->ret = SF_WRITER_REFUSED;
	__atomic_store_n(&call_state, 2, __ATOMIC_RELEASE);
	futex_wake_all(&call_state);
}

/* pthread_create failed: no writer will answer. Every request posted is
 * refused, and once the request lock is ours no requester is between its
 * check of serving and its post (sf_writer_call). */
static void refuse_all(void)
{
	__atomic_store_n(&serving, 0, __ATOMIC_RELEASE);
	for (;;) {
		refuse_posted();
		if (!__atomic_exchange_n(&call_lock, 1, __ATOMIC_ACQUIRE))
			break;
		sf_yield();
	}
	refuse_posted();
	__atomic_store_n(&call_lock, 0, __ATOMIC_RELEASE);
	futex_wake_all(&call_lock);
}

/* fn(arg) on the writer thread, its result back: two context switches.
 * On the writer itself, a plain call. Only while the writer runs and
 * serves (sf_writer_active; logfile.c asks only while its descriptor is
 * the writer's). Every signal is blocked meanwhile: a handler on this
 * thread that needed the writer would wait for its own request. */
long sf_writer_call(long (*fn)(void *), void *arg)
{
	if (on_writer)
		return fn(arg);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (__atomic_exchange_n(&call_lock, 1, __ATOMIC_ACQUIRE))
		futex_wait(&call_lock, 1);
	if (!__atomic_load_n(&serving, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&call_lock, 0, __ATOMIC_RELEASE);
		futex_wake_one(&call_lock);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return SF_WRITER_REFUSED;
	}
	int err = errno; /* the keeper runs fn with this thread's errno */
	struct writer_call c = {fn, arg, 0, sf_arch_tp()};
	__atomic_store_n(&call_req, &c, __ATOMIC_RELEASE);
	__atomic_store_n(&call_state, 1, __ATOMIC_RELEASE);
	sf_writer_kick();
	uint32_t st;
	while ((st = __atomic_load_n(&call_state, __ATOMIC_ACQUIRE)) != 2)
		futex_wait(&call_state, st);
	if (deferred_len) {
		sf_messages_print(deferred, deferred_len);
		deferred_len = 0;
	}
	__atomic_store_n(&call_state, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&call_req, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&call_lock, 0, __ATOMIC_RELEASE);
	futex_wake_one(&call_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return c.ret;
}

/* On the writer running a request: the message kept for the requester. 1 if kept. */
int sf_writer_defer_message(const char *buf, size_t n)
{
	if (!on_writer || !deferring)
		return 0;
	if (deferred_len + n <= sizeof(deferred)) {
		__builtin_memcpy(deferred + deferred_len, buf, n);
		deferred_len += n;
	}
	return 1;
}

int sf_writer_on_thread(void)
{
	return on_writer;
}

/* The writer's descriptor table is its own (set by logfile.c, on it). */
void sf_writer_set_private(int on)
{
	__atomic_store_n(&private_table, on, __ATOMIC_RELEASE);
}

int sf_writer_private(void)
{
	return __atomic_load_n(&private_table, __ATOMIC_ACQUIRE);
}

uint32_t sf_writer_tid(void)
{
	return __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE);
}

/* On the writer (keeper 0) or the keeper, just after its table became its
 * own (and was emptied): /proc/self held there, invisible to the program. */
void sf_writer_open_proc(int keeper)
{
	int fd = (int)sf_syscall6(SYS_openat, AT_FDCWD, (long)"/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	__atomic_store_n(keeper ? &keeper_proc : &writer_proc, fd < 0 ? -1 : fd, __ATOMIC_RELEASE);
}

/* That directory, on the thread whose table holds it (raw calls only: the
 * keeper runs on another thread's storage); -1 on every other thread. */
int sf_writer_proc_dir(void)
{
	int w = __atomic_load_n(&writer_proc, __ATOMIC_ACQUIRE), k = __atomic_load_n(&keeper_proc, __ATOMIC_ACQUIRE);
	if (w < 0 && k < 0)
		return -1;
	uint32_t tid = (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0);
	if (w >= 0 && tid == __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE))
		return w;
	if (k >= 0 && tid == __atomic_load_n(&keeper_tid, __ATOMIC_ACQUIRE) &&
	    sf_syscall3(SYS_getpid, 0, 0, 0) == keeper_pid)
		return k;
	return -1;
}

static void write_slot(struct sf_slot *s)
{
	struct sf_chunk c = {0};
	const struct sf_chunk *h = s->hdr;
	c.thread_serial = h->thread_serial;
	c.tid = h->tid;
	c.seq = h->seq;
	c.base = h->base;
	__builtin_memcpy(c.name, h->name, sizeof(c.name));
	sf_write_batch_chunk(&c, s, s->nevents);
	sf_zero_events((struct sf_event *)(s->hdr + 1), s->nevents);
	__atomic_store_n(&s->state, SF_SLOT_READY, __ATOMIC_RELEASE);
	futex_wake_all(&s->state);
}

/* Every slot queued written, oldest first (the list is a stack). Per
 * thread at most one slot is queued at a time, so batch order holds
 * either way. On the writer a request waits for one chunk at most. */
static void write_queue(void)
{
	struct sf_slot *list = __atomic_exchange_n(&queue, NULL, __ATOMIC_SEQ_CST);
	struct sf_slot *fifo = NULL;
	while (list) {
		struct sf_slot *next = list->next_queued;
		list->next_queued = fifo;
		fifo = list;
		list = next;
	}
	for (struct sf_slot *s = fifo, *next; s; s = next) {
		next = s->next_queued;
		write_slot(s);
		sf_writer_serve();
	}
}

/* The log's descriptor offered to the program's threads while the
 * writer, leaving, waits for one of them to take it (leave_if_program_runs):
 * the writer's tid (0: no offer) and the number in its table. */
static uint32_t offer_tid;
static uint32_t leaving_tid; /* the writer in hand_over (its tid stays after writer_tid is cleared) */
static int offer_fd = -1;
static int offer_dir = -1; /* --ring: the log's directory (sf_log_dir_open), for snapshots */
static uint32_t offer_taken;

/* The leaving writer (tid) out of the thread group: it has been woken and
 * makes a few stores and its exit, no lock. Waited for by the taker so
 * that a thread ending right after (a bare SYS_exit, a loaded machine
 * that did not run the writer yet) is not followed by the writer, last,
 * with the leader's code. Bounded: a tid used again by a new thread of
 * the process must not hold it up. */
static void writer_gone_wait(uint32_t tid)
{
	long pid = sf_syscall3(SYS_getpid, 0, 0, 0);
	for (int i = 0; i < 100000 && sf_syscall3(SYS_tgkill, pid, tid, 0) == 0; i++)
		sf_yield();
}

/* On a program thread (logfile.c, log_reopen: first): the log's
 * descriptor copied out of the leaving writer's table into the program's
 * (pidfd_open(tid, PIDFD_THREAD) + pidfd_getfd: Linux 6.9; the caller is
 * of the writer's thread group, so the kernel's ptrace check passes
 * whatever the caller's credentials or root). -1 without an offer. */
int sf_writer_offer_take(void)
{
	uint32_t tid = __atomic_load_n(&offer_tid, __ATOMIC_ACQUIRE);
	if (!tid)
		return -1;
	long pidfd = sf_syscall3(SF_SYS_pidfd_open, tid, O_EXCL /* PIDFD_THREAD */, 0);
	if (pidfd < 0)
		return -1;
	long fd = sf_syscall3(SF_SYS_pidfd_getfd, pidfd, __atomic_load_n(&offer_fd, __ATOMIC_ACQUIRE), 0);
	int dir = __atomic_exchange_n(&offer_dir, -1, __ATOMIC_ACQ_REL); /* the first taker's */
	long dfd = fd >= 0 && dir >= 0 ? sf_syscall3(SF_SYS_pidfd_getfd, pidfd, dir, 0) : -1;
	sf_syscall3(SYS_close, pidfd, 0, 0);
	if (dfd >= 0)
		sf_snapshot_adopt_dir((int)dfd); /* under the gate, as the caller is */
	if (fd < 0)
		return -1;
	__atomic_store_n(&offer_taken, 1, __ATOMIC_RELEASE);
	futex_wake_all(&offer_taken);
	writer_gone_wait(tid);
	return (int)fd;
}

/* Whether a program thread can take an offer here: pidfd_open of a thread
 * (PIDFD_THREAD, Linux 6.9), tried on the writer itself. */
static int offer_possible(void)
{
	long pidfd = sf_syscall3(SF_SYS_pidfd_open, sf_syscall3(SYS_gettid, 0, 0, 0), O_EXCL, 0);
	if (pidfd < 0)
		return 0;
	sf_syscall3(SYS_close, pidfd, 0, 0);
	return 1;
}

/* The writer has offered its descriptor (hand_over): it waits until a
 * program thread took it (a futex wake, no poll), or no thread of the
 * program's is left (then it ends the process with the leader's status:
 * nobody could take it; checked every IDLE_CHECK_NS, only in that wait). */
static void wait_offer_taken(void)
{
	while (!__atomic_load_n(&offer_taken, __ATOMIC_ACQUIRE)) {
		if (sf_futex_wait(&offer_taken, 0, IDLE_CHECK_NS) == -ETIMEDOUT)
			end_if_program_gone();
	}
	__atomic_store_n(&offer_tid, 0, __ATOMIC_RELEASE);
}

/* The leader has exited and threads of the program's run on: the writer
 * leaves, so that it is never the process's last task. Since Linux 5.19
 * the last thread to end sets the process's status (the kernel's
 * synchronize_group_exit), and a last program thread that ends by a bare
 * SYS_exit instruction does so unseen: were the writer still there, that
 * code would be gone with the thread, and the writer could only end the
 * process with the leader's. Hand-offs turn synchronous (active 0, as
 * with --writer sync); a slot queued before that is written here, one
 * queued after is written by its submitter (sf_writer_submit: gone and
 * the queue are read and written in one order, SEQ_CST, so one of the two
 * sees it); the log's descriptor leaves this thread's table and the
 * program's table is used again (sf_log_writer_hands_over): opened again
 * by the next use, or, with offer, copied out of this table by the first
 * program thread that needs it (sf_writer_offer_take), which this thread
 * waits for; requests posted meanwhile are refused and done there.
 * Snapshots (--ring) are written by the program's threads from then on,
 * and switches (--paused) refused (snapshot.c, switch.c: sf_writer_left).
 * The writer ends by a bare SYS_exit: not through start_thread, whose
 * count (__nptl_nthreads) it is not on, and with the leader's code, which
 * stands should the program's last thread have gone first after all (a
 * race of a few system calls: then the process ends with it, as before). */
static void hand_over(int status, int offer)
{
	/* before writer_tid is cleared: sf_writer_here_at_exit reads the two
	 * in the other order */
	__atomic_store_n(&leaving_tid, (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0), __ATOMIC_SEQ_CST);
	__atomic_store_n(&active, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&gone, 1, __ATOMIC_SEQ_CST);
	sf_switch_refuse_left(); /* one that came before gone was seen */
	write_queue();
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
	futex_wake_all(&busy);
	/* The offer is up before the program's table is used again: a thread
	 * that needed the log in between found none, its reopen failed, and
	 * the log was lost for good (every later chunk a write error) while
	 * the writer waited for a taker that would never come. */
	int fd = sf_log_keeper_fd(); /* the writer's number (L.pfd) */
	offer = offer && fd >= 0 && sf_writer_private();
	if (offer) {
		if (sf_config.ring_slots)
			__atomic_store_n(&offer_dir, sf_log_dir_open(), __ATOMIC_RELEASE);
		__atomic_store_n(&offer_fd, fd, __ATOMIC_RELEASE);
		__atomic_store_n(&offer_tid, (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0), __ATOMIC_SEQ_CST);
	}
	sf_notes_relay_listen(0);
	sf_log_writer_hands_over();
	refuse_all();
	if (offer)
		wait_offer_taken();
	__atomic_store_n(&writer_proc, -1, __ATOMIC_RELEASE); /* goes with this table */
	__atomic_store_n(&writer_tid, 0, __ATOMIC_RELEASE);
	for (;;)
		sf_syscall3(SYS_exit, status, 0, 0);
}

/* A program thread about to end by syscall(SYS_exit) (hooks.c) while the
 * writer waits for its offer to be taken: taken here (log_reopen), and the
 * writer waited for until it is out of the thread group, so that it is
 * not the last task when this thread goes (its code would be lost) and
 * the thread's count of tasks (sf_last_thread_status) sees the program's
 * threads only. */
void sf_writer_offer_settle(void)
{
	uint32_t tid = __atomic_load_n(&offer_tid, __ATOMIC_ACQUIRE);
	if (!tid)
		return;
	sf_log_reopen_now();
	if (!__atomic_load_n(&offer_taken, __ATOMIC_ACQUIRE))
		return; /* could not be taken: the writer stays (and counts as the runtime's) */
	writer_gone_wait(tid);
}

/* A program thread about to end by syscall(SYS_exit) (hooks.c), after
 * sf_writer_offer_settle: the writer's tid if it is still in the thread
 * group, else 0. One that has begun to leave (hand_over) is waited for
 * first: it makes a few calls and its exit, and were it the last task
 * its code (the leader's) would be the process's. One that has not (it
 * has not seen the leader's exit yet, or asks record's keeper first,
 * sf_log_keeper_reopens) is counted by the caller as the runtime's: the
 * caller, the program's last thread, then ends the process with its own
 * code (exit_group) rather than leave the writer last (the leader's code
 * in about 1 of 150 loaded runs of skeptic24s's sys_exit case). */
uint32_t sf_writer_here_at_exit(void)
{
	long pid = sf_syscall3(SYS_getpid, 0, 0, 0);
	uint32_t tid = __atomic_load_n(&writer_tid, __ATOMIC_SEQ_CST);
	if (!tid || __atomic_load_n(&gone, __ATOMIC_SEQ_CST)) {
		uint32_t l = __atomic_load_n(&leaving_tid, __ATOMIC_SEQ_CST);
		if (l)
			writer_gone_wait(l);
		tid = l;
	}
	if (!tid || sf_syscall3(SYS_tgkill, pid, tid, 0) != 0)
		return 0;
	return tid;
}

/* A ring's slot is full (buffer.c, ring_advance): the writer's offer, if
 * it waits for a taker, taken now. A ring that has grown to its size needs
 * no new file space, so its thread might never need the log again, and
 * the writer would wait for it to the end (then the leader's code would
 * be the process's: 1 of 45 chrooted floods under load). One load when
 * there is no offer. */
void sf_writer_offer_poll(void)
{
	if (__atomic_load_n(&offer_tid, __ATOMIC_ACQUIRE) && !__atomic_load_n(&offer_taken, __ATOMIC_ACQUIRE))
		sf_log_reopen_now();
}

/* The writer has left (hand_over): snapshots and switches are the
 * program threads' business from then on (snapshot.c, switch.c). */
int sf_writer_left(void)
{
	return __atomic_load_n(&gone, __ATOMIC_ACQUIRE);
}

/* The leader's exit word is zero: it has ended, or is ending (the kernel
 * clears the word before the leader is a zombie, after it has set its
 * exit code, which is read at once: no wait that a last thread could end
 * in). With a thread of the program's left, the writer hands over and
 * leaves; with none, it stays, and its idle check ends the process
 * (end_if_program_gone). A word the program moved and zeroed makes the
 * writer leave a live leader: hand-offs synchronous from then on, the
 * status the kernel's. With --ring and --paused too (snapshot.c and
 * switch.c then do without it). Where a program thread could not open the
 * log again (its descriptor leaves with the writer), the writer offers it
 * (hand_over) and leaves once a program thread took it: the writer's own
 * try speaks for them only where each has its credentials, root, mount
 * namespace and room under RLIMIT_NOFILE (ns.c). No offer is needed while
 * tracing is off (--paused, never resumed: a resume is refused from now
 * on, so no thread needs the log again), and none can be taken before
 * Linux 6.9 (no pidfd of a thread): then the writer stays, as it did
 * before, and a last thread's bare SYS_exit instruction leaves the
 * leader's code, a known difference. */
static void leave_if_program_runs(void)
{
	leader_checked = 1;
	if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE))
		return;
	/* Under a seccomp filter that refuses what the program's threads do
	 * with the log after a hand-over (sandbox.c), the writer stays, as
	 * without pidfds. */
	if (sf_seccomp_refuses_handover())
		return;
	int status = 0;
	if (!sf_leader_status(&status) || sf_thread_count() <= 2)
		return;
	/* Each thread opens the log again in its own context after the
	 * hand-over: the writer's test speaks for them only where they are
	 * all like it (ns.c). */
	int offer = 0, no_room = 0;
	if (!__atomic_load_n(&sf_tracing_off, __ATOMIC_ACQUIRE) &&
	    (!sf_program_threads_like_writer(&no_room) || !sf_log_reopenable())) {
		/* A table with no room for the log (RLIMIT_NOFILE lowered to
		 * what it holds) could take no descriptor at all. */
		if (no_room)
			return;
		/* Under record, its keeper opens the log again for any thread
		 * of this pid, whatever its uid or root (logfile.c,
		 * open_same_log): nothing need be offered, and the writer
		 * leaves now. Waiting for a taker that never needs the log (a
		 * few calls, fewer than a slot) made the writer the last task,
		 * and the process ended with the leader's code, not the last
		 * thread's. A ring's snapshots are made by the keeper too
		 * (snapshot.c, open_by_keeper). */
		if (!sf_program_threads_share_net() || !sf_log_keeper_reopens()) {
			if (!offer_possible())
				return;
			offer = 1;
		}
	}
	hand_over(status, offer);
}

/* sf_writer_leave_now: a seccomp filter with TSYNC is about to reach
 * this thread, and it refuses the writer's calls (sandbox.c). */
static uint32_t leave_now;

static void *writer_main(void *arg)
{
	on_writer = 1;
	__atomic_store_n(&writer_tid, (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0), __ATOMIC_RELEASE);
	sf_notes_relay_listen(1); /* a relative's loss line is noted here (notes.c) */
	int own = sf_log_writer_begins(); /* its descriptor table its own (logfile.c) */
	if (own >= 0)
		sf_switch_writer_table(own); /* record --paused: the control page, held in that table */
	if (arg) /* the program's CPUs: set here, as an attribute it would allocate */
		sched_setaffinity(0, sizeof(cpu_set_t), arg);
	/* A ring's writer only writes snapshots (and serves switches): as
	 * SCHED_BATCH its wake-up at a trigger does not preempt the traced
	 * thread that woke it, on that thread's CPU, for a time slice. (Slot
	 * hand-offs keep SCHED_OTHER: traced threads may wait for them.
	 * glibc's attributes know no SCHED_BATCH: set here, for this thread.) */
	if (sf_config.ring_slots) {
		struct sched_param sp = {0};
		sf_syscall3(SYS_sched_setscheduler, 0, SCHED_BATCH, (long)&sp);
	}
	for (;;) {
		uint32_t seen = __atomic_load_n(&wake, __ATOMIC_ACQUIRE);
		struct ctl_words ctl;
		ctl_words_read(&ctl);
		sf_writer_serve();
		__atomic_store_n(&busy, 1, __ATOMIC_RELEASE);
		write_queue();
		__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
		futex_wake_all(&busy);
		sf_snapshot_service(); /* record --ring: snapshots asked for since */
		sf_switch_service();   /* sftrace resume / pause asked for since */
		sf_notes_relay_flush(); /* a relative's loss (notes.c): one load when none */
		if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE) && !__atomic_load_n(&queue, __ATOMIC_ACQUIRE)) {
			/* Nothing more to write: the stopper takes the log's
			 * descriptor out of this thread's table while it is
			 * still there (sf_log_writer_leaving), then lets it end. */
			__atomic_store_n(&parked, 1, __ATOMIC_RELEASE);
			futex_wake_all(&parked);
			uint32_t p;
			while ((p = __atomic_load_n(&parked, __ATOMIC_ACQUIRE)) != 2)
				futex_wait(&parked, p);
			sf_notes_relay_listen(0);
			/* back on glibc's count: start_thread takes it off again */
			if (!raw && nptl_nthreads)
				__atomic_add_fetch(nptl_nthreads, 1, __ATOMIC_RELAXED);
			return 0;
		}
		if (__atomic_load_n(&leave_now, __ATOMIC_ACQUIRE))
			hand_over(0, 0); /* a program thread is left: it waits for this one to go */
		if (leader_word && !leader_checked && !__atomic_load_n(leader_word, __ATOMIC_ACQUIRE))
			leave_if_program_runs();
		sf_log_writer_refill(); /* slots and the next arena, mapped ahead (logfile.c) */
		if (!__atomic_load_n(&queue, __ATOMIC_ACQUIRE) && __atomic_load_n(&call_state, __ATOMIC_ACQUIRE) != 1)
			idle_wait(seen, &ctl);
	}
	return 0;
}

/* Before a seccomp filter with SECCOMP_FILTER_FLAG_TSYNC that refuses the
 * writer's calls (sandbox.c; tracing is off for good by then): the writer
 * writes what is queued, gives the log back to the program's table
 * (hand_over, no offer) and ends, as it does when the leader has gone,
 * before the filter can reach it. Hand-offs are synchronous from then
 * on, and none comes (no sled is patched). */
void sf_writer_leave_now(void)
{
	uint32_t tid = __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE);
	if (!sf_writer_active() || !tid)
		return;
	__atomic_store_n(&leave_now, 1, __ATOMIC_RELEASE);
	sf_writer_kick();
	writer_gone_wait(tid);
}

/* At start-up (sf_hooks_resolve), not under a dlopen's lock. */
void sf_writer_resolve(void)
{
	nptl_nthreads = (int *)sf_sym_any_v("__nptl_nthreads", "GLIBC_PRIVATE");
	sf_own_tls_resolve();
}

/* The raw writer's first code: what pthread_create's attributes and
 * pthread_setname_np gave the pthread. */
static int writer_entry(void *arg)
{
	struct sched_param sp = {0};
	sf_syscall3(SYS_sched_setscheduler, 0, SCHED_OTHER, (long)&sp);
	sf_syscall6(SYS_prctl, PR_SET_NAME, (long)"sftrace-writer", 0, 0, 0, 0);
	writer_main(arg);
	return 0;
}

/* The writer as a raw clone on storage of its own (own_tls.c): no
 * allocation of the program's, not on glibc's list of threads (so glibc's
 * set*id broadcast does not reach it: sf_keeper_follow makes it follow),
 * and the process stays single-threaded for glibc, as untraced. Every
 * signal blocked, glibc's two included: none is ever sent to it. 0 if
 * made; -1: not made, the pthread then. */
static int start_raw(const cpu_set_t *cpus)
{
	if (sf_own_tls_make(&writer_tls) < 0)
		return -1;
	uint64_t all = ~0ull, old;
	sf_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8, 0, 0); /* inherited */
	/* CLONE_UNTRACED: a ptracer of the program's (gdb, strace -f) is
	 * not attached to it (no clone event): gdb listed it in `info
	 * threads`, untraced there is one thread (issue 25). */
	/* Without CLONE_FILES: the writer's table is a copy of the
	 * program's, which it empties first of all but for the log's
	 * descriptor (logfile.c, sf_log_writer_begins), as the keeper does:
	 * no unshare(CLONE_FILES), which a container's seccomp profile
	 * refuses (Docker's default without CAP_SYS_ADMIN: EPERM), and with
	 * it the log held in the program's table for each use, where a full
	 * table failed a chunk's write with EMFILE (issue 24: 100 of 3100
	 * calls lost in most runs). Under valgrind the writer keeps the
	 * program's table (logfile.c, own_table_refused). */
	int copy = !on_valgrind;
	int flags = CLONE_VM | CLONE_FS | (copy ? 0 : CLONE_FILES) | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		    CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | CLONE_UNTRACED;
	__atomic_store_n(&table_copied, copy, __ATOMIC_RELEASE);
	pid_t *tidp = (pid_t *)writer_tls.tid;
	int tid = sf_clone_real_tls(writer_entry, writer_stack + writer_stack_size, flags, (void *)cpus, tidp,
				    writer_tls.tp, tidp);
	sf_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
	if (tid <= 0) {
		__atomic_store_n(&table_copied, 0, __ATOMIC_RELEASE);
		sf_own_tls_free(&writer_tls);
		return -1;
	}
	raw_pid = sf_syscall3(SYS_getpid, 0, 0, 0);
	return 0;
}

/* sf_writer_stop: the raw writer is out of the thread group (the kernel
 * cleared its tid word and woke it: CLONE_CHILD_CLEARTID). */
static void raw_join(void)
{
	uint32_t t;
	while ((t = __atomic_load_n(writer_tls.tid, __ATOMIC_ACQUIRE)) != 0)
		sf_syscall6(SYS_futex, (long)writer_tls.tid, FUTEX_WAIT, t, 0, 0, 0);
	sf_own_tls_free(&writer_tls);
}

int sf_writer_start(const cpu_set_t *cpus)
{
	if (active)
		return 0;
	if (__atomic_load_n(&gone, __ATOMIC_ACQUIRE))
		return -1; /* left for good (hand_over): a new one could be the last task again */
	if (sf_seccomp_refuses_writer() || sf_seccomp_refuses_writer_start())
		return -1; /* it would be made under a filter that refuses its start or its waits (sandbox.c) */
	pthread_attr_t a;
	if (pthread_attr_init(&a) != 0)
		return -1;
	struct sched_param sp = {0};
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_OTHER);
	pthread_attr_setschedparam(&a, &sp);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited by the new thread */
	struct sf_suppress_state st;
	sf_suppress_begin(&st);
	__atomic_store_n(&serving, 1, __ATOMIC_RELEASE);
	/* Before the thread exists: its first idle wait must already wait for
	 * the leader's end too (found after, it was missed by a writer that
	 * nothing woke, under --paused: a 100 ms plain wait, and the leader's
	 * code won over a thread ending within that). */
	find_leader_word();
	on_valgrind = RUNNING_ON_VALGRIND != 0;
	int fresh = sf_log_writer_before_start();
	if (!writer_stack) {
		size_t sz = 0;
		long pg = sysconf(_SC_PAGESIZE);
		pthread_attr_getstacksize(&a, &sz); /* glibc's default (RLIMIT_STACK) */
		if (pg <= 0)
			pg = 4096;
		sz = (sz + (size_t)pg - 1) & ~((size_t)pg - 1);
		/* a guard page below, as glibc's own stacks have */
		void *m = mmap(NULL, sz + (size_t)pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
		if (m != MAP_FAILED) {
			mprotect(m, (size_t)pg, PROT_NONE);
			writer_stack = (char *)m + pg;
			writer_stack_size = sz;
		}
	}
	raw = writer_stack && start_raw(cpus) == 0;
	pthread_t th = 0;
	int r = 0;
	if (!raw) {
		if (writer_stack && pthread_attr_setstack(&a, writer_stack, writer_stack_size) != 0)
			pthread_attr_setstacksize(&a, writer_stack_size); /* glibc's own stack, as before */
		r = pthread_create(&th, &a, writer_main, (void *)cpus);
	}
	sf_suppress_end(&st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (r != 0) {
		if (fresh)
			sf_log_writer_failed();
		refuse_all();
		return -1;
	}
	if (!raw)
		pthread_setname_np(th, "sftrace-writer");
	/* glibc ends the process with exit(0) when the last thread on its
	 * count ends with pthread_exit (main's included), and counts every
	 * pthread: with the writer on it, a program whose main or last thread
	 * calls pthread_exit would never end. Taken off here, by its creator,
	 * so the count is the program's as soon as pthread_create returns;
	 * the writer puts itself back just before it returns (stop above),
	 * for start_thread to take it off. fork children get the count
	 * right by themselves (fork sets it to 1; _Fork, clone() and a raw
	 * clone copy this one, which no longer counts the writer). */
	if (!raw && nptl_nthreads)
		__atomic_sub_fetch(nptl_nthreads, 1, __ATOMIC_RELAXED);
	writer = th;
	writer_cpus = cpus;
	__atomic_store_n(&active, 1, __ATOMIC_RELEASE);
	if (!fresh)
		sf_log_writer_started(); /* the log's descriptor moves into the writer's own table */
	return 0;
}

/* Ends the writer thread (joinable: sf_writer_stop joins it), once it has
 * written what is queued; hand-offs are synchronous from here on. Only
 * with no other traced thread running (ns.c: the caller is the program's
 * only thread, its signals blocked), so nothing is queued after it ends.
 * 1 if there was a writer. */
int sf_writer_stop(void)
{
	if (!sf_writer_active())
		return 0;
	__atomic_store_n(&active, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	sf_writer_kick();
	uint32_t p;
	while ((p = __atomic_load_n(&parked, __ATOMIC_ACQUIRE)) != 1)
		futex_wait(&parked, p);
	sf_log_writer_leaving(); /* the log's descriptor back in the program's table */
	__atomic_store_n(&parked, 2, __ATOMIC_RELEASE);
	futex_wake_all(&parked);
	if (raw)
		raw_join();
	else
		pthread_join(writer, NULL);
	__atomic_store_n(&writer_proc, -1, __ATOMIC_RELEASE); /* went with its table */
	__atomic_store_n(&parked, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&stopping, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&private_table, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&table_copied, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&writer_tid, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&serving, 0, __ATOMIC_RELEASE);
	return 1;
}

/* A writer again, with the attributes it had (after sf_writer_stop). */
void sf_writer_restart(void)
{
	sf_writer_start(writer_cpus);
}

int sf_writer_active(void)
{
	return __atomic_load_n(&active, __ATOMIC_ACQUIRE);
}

void sf_writer_submit(struct sf_slot *s)
{
	__atomic_store_n(&s->state, SF_SLOT_QUEUED, __ATOMIC_RELEASE);
	struct sf_slot *head = __atomic_load_n(&queue, __ATOMIC_RELAXED);
	do
		s->next_queued = head;
	while (!__atomic_compare_exchange_n(&queue, &head, s, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	if (__atomic_load_n(&gone, __ATOMIC_SEQ_CST)) {
		/* The writer left after this thread saw it active (hand_over):
		 * what is queued is written here, signals blocked (a handler's
		 * events must not land in the slot being written). */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		write_queue();
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return;
	}
	__atomic_add_fetch(&wake, 1, __ATOMIC_RELEASE);
	futex_wake_all(&wake);
}

void sf_writer_kick(void)
{
	__atomic_add_fetch(&wake, 1, __ATOMIC_RELEASE);
	futex_wake_all(&wake);
}

void sf_writer_wait_ready(struct sf_slot *s)
{
	uint32_t st;
	while ((st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE)) != SF_SLOT_READY)
		futex_wait(&s->state, st);
}

/* Process exit: let the writer finish what is queued, so the log ends with
 * complete DATA chunks rather than a chunk cut by exit_group. */
void sf_writer_drain(void)
{
	if (!sf_writer_active())
		return;
	for (int i = 0; i < 10000; i++) {
		if (!__atomic_load_n(&queue, __ATOMIC_ACQUIRE) && !__atomic_load_n(&busy, __ATOMIC_ACQUIRE) &&
		    !sf_snapshot_pending() && !sf_notes_relay_pending())
			return;
		uint32_t b = __atomic_load_n(&busy, __ATOMIC_ACQUIRE);
		if (b) {
			sf_futex_wait(&busy, 1, 1000000);
		} else if (sf_snapshot_pending() || sf_notes_relay_pending()) {
			/* A snapshot of large rings takes a while to write, a
			 * relative's loss line a request to record's keeper: wait
			 * for it in 1 ms steps (10 s at most), not in yields.
			 * Relayed lines are waited for two writer rounds at most
			 * (notes.c: the page is a child's to fill), so the writer
			 * is woken for them: idle, it may sleep 10 s. */
			if (sf_notes_relay_pending() && !__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
				sf_writer_kick();
			sf_nap(1000000);
		} else {
			sf_yield();
		}
	}
}

/* ---- the keeper: a clone(CLONE_FILES) child's descriptor table ----
 *
 * A child made by clone(CLONE_FILES) shares its descriptor table with its
 * parent, which outlives it: a descriptor of the runtime's held there
 * when the child is killed (SIGKILL runs no code of the child's) stays in
 * the parent's table for good. So such a child gets a keeper at once: a
 * thread of its own made by a raw clone(CLONE_VM | CLONE_FS | CLONE_SIGHAND
 * | CLONE_THREAD | CLONE_SYSVSEM), without CLONE_FILES (the kernel gives
 * it a copy of the table, which it empties before anything else), with
 * every signal blocked, 32 and 33 too (no handler of the program's, nor
 * glibc's, ever runs on it). Every descriptor use of the child's runtime
 * is a request to it (sf_writer_call, the writer's own machinery: the
 * log's creation, chunks, slots, snapshots' mappings, notes), and a
 * SIGKILL ends the whole thread group, the keeper's table with it: the
 * shared table never holds a descriptor of the runtime's.
 * Not a pthread: pthread_create allocates with the program's malloc, whose
 * lock a thread of the parent may have held at the clone (glibc's clone
 * takes none), and glibc's set*id broadcast would not reach a thread made
 * from a clone() child either (its list of threads is the parent's). So
 * the keeper has no thread storage of its own: between requests it makes
 * raw system calls only, and it runs each request on its requester's
 * (sf_arch_set_tp), whose thread waits meanwhile, every signal blocked,
 * its errno put back after (sf_writer_call). Credentials are per thread:
 * the set*id wrappers make the keeper follow each change the program's
 * call made (sf_keeper_follow). */
#define KEEPER_STACK (256u << 10) /* pages untouched cost nothing */

/* Runs the request on the requester's thread storage, where on_writer
 * says "the writer" for its duration (a nested request is a call).
 * noinline: the thread pointer is read in here, after it was set. */
static __attribute__((noinline)) long keeper_run(struct writer_call *c)
{
	on_writer = 1;
	deferring = 1;
	long r = c->fn(c->arg);
	deferring = 0;
	on_writer = 0;
	return r;
}

/* 1 if the keeper must end now (keeper_setid failed). */
static int keeper_serve(void)
{
	struct writer_call *c = __atomic_load_n(&call_req, __ATOMIC_ACQUIRE);
	__atomic_store_n(&call_state, 3, __ATOMIC_RELAXED);
	sf_arch_set_tp(c->tp);
	c->ret = keeper_run(c);
	/* The runtime's own masks leave 32 and 33 open (glibc's, rt_libc.c):
	 * a lock taken and let go in the request opened them here. */
	uint64_t all = ~0ull;
	sf_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, 8, 0, 0);
	int quit = __atomic_load_n(&keeper_quit, __ATOMIC_ACQUIRE);
	__atomic_store_n(&call_state, 2, __ATOMIC_RELEASE);
	futex_wake_all(&call_state);
	return quit;
}

static int keeper_main(void *unused)
{
	(void)unused;
	int keep = keeper_keep; /* the program's copies: none kept, but the log's (sf_keeper_resume) */
	if (keep > 0)
		sf_syscall3(SYS_close_range, 0, (unsigned)keep - 1, 0);
	sf_syscall3(SYS_close_range, (unsigned)(keep + 1), ~0u, 0);
	sf_writer_open_proc(1);
	for (;;) {
		uint32_t seen = __atomic_load_n(&wake, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&call_state, __ATOMIC_ACQUIRE) == 1) {
			if (keeper_serve())
				return 0; /* its table, the log's descriptor in it, goes with it */
			continue;
		}
		idle_wait(seen, NULL); /* and the process ended if no thread of the program's is left */
	}
}

/* The leader's exit word for idle_wait: the program's (CLONE_CHILD_CLEARTID),
 * else one of the runtime's (set_tid_address: a clone() child has none, and
 * nothing of the program's reads it). */
static void keeper_leader_word(void)
{
	static uint32_t own;
	leader_word = NULL;
	find_leader_word();
	uint32_t *w = (uint32_t *)1;
	if (leader_word || sf_syscall6(SYS_prctl, PR_GET_TID_ADDRESS, (long)&w, 0, 0, 0, 0) != 0 || w)
		return;
	own = (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0);
	sf_syscall3(SYS_set_tid_address, (long)&own, 0, 0);
	leader_word = &own;
}

/* In a clone(CLONE_FILES) child, first (hooks.c, its only thread, no log
 * yet): the keeper made, its table private from its start (logfile.c
 * sf_log_keeper). -1 where it cannot be made: the shared table, as before. */
static int keeper_make(int keep)
{
	if (sf_seccomp_refuses_keeper())
		return -1; /* a filter would kill it, or the process, at its first call (sandbox.c) */
	/* Under valgrind, never: valgrind runs no thread made without
	 * CLONE_FILES ("Unsupported clone() flags: 0x50b00", then it exits:
	 * the program killed at a full table's first hand-off under --writer
	 * sync, skep24z_fullfd), and a table of its own would name the log's
	 * mappings wrongly there anyway (logfile.c, own_table_refused). */
	if (sf_running_on_valgrind())
		return -1;
	int err = errno;
	char *stk = keeper_stack; /* a keeper's that has ended (sf_keeper_stop) */
	if (!stk) {
		stk = mmap(NULL, KEEPER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stk == MAP_FAILED) {
			errno = err;
			return -1;
		}
		sf_syscall3(SYS_mprotect, (long)stk, 4096, PROT_NONE); /* a guard page */
	}
	keeper_keep = keep;
	keeper_leader_word();
	if (!leader_word && keeper_due_pid == 0 && keeper_due_word)
		leader_word = keeper_due_word; /* made on another thread than the leader (sf_keeper_make_due) */
	__atomic_store_n(&serving, 1, __ATOMIC_RELEASE);
	sf_writer_set_private(1); /* requests wait until it has emptied its table */
	sf_log_keeper(1);
	uint64_t all = ~0ull, old;
	sf_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8, 0, 0); /* inherited */
	int tid = sf_clone_real(keeper_main, stk + KEEPER_STACK,
				CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, NULL);
	sf_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
	if (tid <= 0) {
		sf_log_keeper(0);
		sf_writer_set_private(0);
		__atomic_store_n(&serving, 0, __ATOMIC_RELEASE);
		munmap(stk, KEEPER_STACK);
		keeper_stack = NULL;
		errno = err;
		return -1;
	}
	keeper_stack = stk;
	keeper_pid = sf_syscall3(SYS_getpid, 0, 0, 0);
	__atomic_store_n(&keeper_tid, (uint32_t)tid, __ATOMIC_RELEASE);
	errno = err;
	return 0;
}

int sf_keeper_start(void)
{
	return keeper_make(-1);
}

/* The first process, from start-up to step 2 (init.c): a log made then (an
 * event of the executable's preinit array, of a library's constructor) is
 * made in a keeper's table, not the program's: the writer cannot be made
 * before step 2 (pthread_create calls the program's malloc, whose library
 * may not have been initialised), and a preinit hook that lists
 * /proc/self/fd must see what it sees untraced. At step 2 the keeper ends
 * and the writer takes the log over (sf_log_early_keeper_end). The cost:
 * one raw clone at the log's creation, one pidfd_getfd and the keeper's
 * end at step 2, only in a process whose log is made before main. */
static int keeper_early_ok, keeper_early;

void sf_keeper_early_allow(int on)
{
	keeper_early_ok = on;
}

void sf_keeper_make_early(void)
{
	/* Only in the preinit array (libc's constructor, which sets environ,
	 * has not run yet: init.c): library constructors that read their
	 * process's state (Threads: in /proc/self/status) must see one
	 * thread, and a log made there stays in the program's table until
	 * step 2, as before (skeptic25s) */
	if (!keeper_early_ok || environ || sf_keeper_alive() || sf_writer_active() || !sf_services_thread_wanted())
		return;
	keeper_early_ok = 0;
	if (keeper_make(-1) == 0)
		keeper_early = 1;
}

int sf_keeper_early_end(void)
{
	keeper_early_ok = 0;
	if (!keeper_early)
		return -2;
	keeper_early = 0;
	if (!sf_keeper_alive())
		return -2;
	return sf_keeper_stop();
}


/* In a fork child (hooks.c) of a process whose log is held by a thread
 * (the writer's conditions, init.c): its keeper made at the child's
 * first log use, not now, so that a child that execs (a shell's, a
 * spawner's) or exits without an event makes no thread. */
void sf_keeper_defer(void)
{
	keeper_due_pid = 0;
	if (!sf_services_thread_wanted() || sf_seccomp_refuses_keeper())
		return;
	keeper_due_pid = (int)sf_syscall3(SYS_getpid, 0, 0, 0);
	leader_word = NULL;
	find_leader_word();
	keeper_due_word = leader_word;
	leader_word = NULL;
}

/* ns.c: a finite RLIMIT_NPROC set by a non-root uid: no keeper from now
 * on (it would count against the limit, as the writer would). */
void sf_keeper_defer_cancel(void)
{
	keeper_due_pid = 0;
}

/* The keeper made now if it is due: the log's creation (logfile.c, the
 * log's lock held, before anything is made), or a thread about to leave
 * record's network namespace (ns.c: the keeper stays there). */
void sf_keeper_make_due(void)
{
	if (!keeper_due_pid || keeper_due_pid != (int)sf_syscall3(SYS_getpid, 0, 0, 0))
		return;
	keeper_due_pid = 0;
	keeper_make(-1);
}

/* A fork child's keeper that keeps fd (the channel handed down, notes.c)
 * of its copy of the table; the program's copy is closed here. */
int sf_keeper_start_keeping(int fd)
{
	int r = keeper_make(fd);
	if (r == 0 && fd >= 0)
		sf_syscall3(SYS_close, fd, 0, 0);
	return r;
}

/* This process has a keeper (not a vfork or CLONE_VM child of one, which
 * shares its memory but not its threads). */
int sf_keeper_alive(void)
{
	return __atomic_load_n(&keeper_tid, __ATOMIC_ACQUIRE) != 0 &&
	       sf_syscall3(SYS_getpid, 0, 0, 0) == keeper_pid;
}

uint32_t sf_keeper_tid(void)
{
	return __atomic_load_n(&keeper_tid, __ATOMIC_ACQUIRE);
}

/* A thread of the runtime's that the program did not make: the writer or
 * the keeper (ns.c: the program's last thread is then not the last). */
int sf_runtime_thread(void)
{
	return sf_writer_active() || sf_keeper_alive() || __atomic_load_n(&offer_tid, __ATOMIC_ACQUIRE) != 0;
}

struct setid {
	long nr, a[5];
};

static void keeper_gone(void);

/* The follower's (keeper's, writer's) copy of the program thread's call:
 * capset with its header's pid 0 (the caller's tid would name another
 * thread: EPERM); setfsuid and setfsgid answer the old id, so success is
 * the id read back (-1 changes nothing and answers the current one). */
static long follow_call(const struct setid *s)
{
	if (s->nr < 0)
		return -ENOSYS;
	if (s->nr == SYS_capset) {
		struct __user_cap_header_struct h = *(const struct __user_cap_header_struct *)s->a[0];
		h.pid = 0;
		return sf_syscall3(SYS_capset, (long)&h, s->a[1], 0);
	}
	long r = sf_syscall6(s->nr, s->a[0], s->a[1], s->a[2], s->a[3], s->a[4], 0);
	if (s->nr == SYS_setfsuid || s->nr == SYS_setfsgid)
		return sf_syscall3(s->nr, -1, 0, 0) == s->a[0] ? 0 : -EPERM;
	return r;
}

/* On the keeper: the program's credential change made here too. Refused
 * (it cannot be: the same call from the same credentials), the keeper
 * ends: a thread left with the old credentials in memory that a thread
 * with the new ones can write would be a way back. */
static long keeper_setid(void *arg)
{
	long r = follow_call(arg);
	if (r < 0)
		__atomic_store_n(&keeper_quit, 1, __ATOMIC_RELEASE);
	return r;
}

/* After a credential or security change of the calling thread succeeded
 * (hooks.c: the set*id wrappers, setfsuid, setfsgid, capset, prctl's
 * KEEPCAPS, NO_NEW_PRIVS, CAPBSET_DROP, SECUREBITS, CAP_AMBIENT, and each
 * through syscall()): the same system call made on the keeper (nr -1:
 * initgroups, whose list is read back from the calling thread), in the
 * program's order (KEEPCAPS before its setresuid). glibc changes every
 * thread it knows for set*id, and the keeper is not one of them; the rest
 * are per thread, and a runtime thread must hold no more than the thread
 * that dropped them. Where the keeper could not follow, it has ended:
 * requests are refused and the program's table is used again (the log,
 * its creator's, then cannot be opened: recording stops, counted). */
/* On the raw writer (sf_writer_start): the same, refused or not. */
static long writer_setid(void *arg)
{
	return follow_call(arg);
}

void sf_keeper_follow(long nr, long a0, long a1, long a2, long a3, long a4)
{
	int writer_follows = raw && sf_writer_active() && sf_syscall3(SYS_getpid, 0, 0, 0) == raw_pid;
	if ((!sf_keeper_alive() && !writer_follows) || on_writer)
		return;
	struct setid s = {nr, {a0, a1, a2, a3, a4}};
	const size_t cap = 65536 * sizeof(gid_t);
	void *groups = NULL;
	if (nr == -1) {
		groups = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		long n = groups == MAP_FAILED ? -ENOMEM : sf_syscall3(SYS_getgroups, 65536, (long)groups, 0);
		if (n >= 0)
			s = (struct setid){SYS_setgroups, {n, (long)groups, 0, 0, 0}};
	}
	if (writer_follows) {
		/* The raw writer is not on glibc's list: it makes the call
		 * here. Where it cannot, it leaves (hand_over), as before a
		 * seccomp filter: hand-offs are synchronous from then on. */
		long r = sf_writer_call(writer_setid, &s);
		if (r < 0 && r != SF_WRITER_REFUSED)
			sf_writer_leave_now();
	}
	long r = sf_keeper_alive() ? sf_writer_call(keeper_setid, &s) : 0;
	if (groups && groups != MAP_FAILED)
		munmap(groups, cap);
	if (r < 0)
		keeper_gone();
}

/* The keeper has answered its last request and ends: once it is gone
 * from the thread group (its table with it), nobody serves, and the
 * program's table is used again. */
static void keeper_gone(void)
{
	while (sf_syscall3(SYS_tgkill, sf_syscall3(SYS_getpid, 0, 0, 0), keeper_tid, 0) == 0)
		sf_yield();
	__atomic_store_n(&keeper_proc, -1, __ATOMIC_RELEASE); /* went with its table */
	__atomic_store_n(&keeper_tid, 0, __ATOMIC_RELEASE);
	refuse_all();
	sf_writer_set_private(0);
	sf_log_keeper(0);
}

static long keeper_leave(void *unused)
{
	(void)unused;
	__atomic_store_n(&keeper_quit, 1, __ATOMIC_RELEASE);
	return 0;
}

/* ns.c: a call that needs the process alone (unshare(CLONE_NEWUSER),
 * setns into a user or mount namespace), from the child's only thread
 * but the keeper, its signals blocked: the keeper ends, and the log's
 * descriptor is copied out of its table into the caller's first
 * (pidfd_getfd of the keeper's pidfd, Linux 6.9), for the call only.
 * That descriptor (-1: none), for sf_keeper_resume. */
int sf_keeper_stop(void)
{
	int fd = -1, pfd = sf_log_keeper_fd();
	long pidfd = sf_syscall3(SF_SYS_pidfd_open, keeper_tid, O_EXCL /* PIDFD_THREAD */, 0);
	if (pidfd >= 0) {
		if (pfd >= 0)
			fd = (int)sf_syscall3(SF_SYS_pidfd_getfd, pidfd, pfd, 0); /* close-on-exec */
		sf_syscall3(SYS_close, pidfd, 0, 0);
	}
	sf_writer_call(keeper_leave, NULL);
	keeper_gone();
	__atomic_store_n(&keeper_quit, 0, __ATOMIC_RELEASE);
	return fd < 0 ? -1 : fd;
}

/* After the call: a keeper again, made now (so in the namespaces and
 * with the credentials the call gave), keeping its copy of fd, which
 * leaves the caller's table; without fd the new keeper opens the log
 * again (logfile.c). Where no keeper can be made, the program's table,
 * as before it existed. */
void sf_keeper_resume(int fd)
{
	int made = keeper_make(fd) == 0;
	if (made)
		sf_log_keeper_again(fd);
	if (fd >= 0)
		sf_syscall3(SYS_close, fd, 0, 0);
}

/* fork: the writer thread does not exist in the child. Queued slots belong
 * to the parent's log. */
void sf_writer_after_fork_child(void)
{
	sf_writer_forget_stopped();
	private_table = 0;
	table_copied = 0;
	writer_proc = -1; /* both were in the parent's threads' tables */
	keeper_proc = -1;
	serving = 0;
	/* a keeper is its parent's: its stack is a copy here, its thread is not */
	if (keeper_stack)
		munmap(keeper_stack, KEEPER_STACK);
	keeper_stack = NULL;
	keeper_tid = 0;
	keeper_quit = 0;
	keeper_due_pid = 0;
	keeper_due_word = NULL;
	keeper_early_ok = 0;
	keeper_early = 0;
	leader_word = NULL;
	/* The parent's writer's stack: glibc's fork dropped it from its
	 * lists, but a raw clone child's lists may still hold it, so it is
	 * left as it is (not unmapped, not reused): a writer made here gets
	 * a stack of its own. */
	writer_stack = NULL;
	writer_stack_size = 0;
	raw = 0; /* the parent's writer's storage: left as it is, like its stack */
	memset(&writer_tls, 0, sizeof writer_tls);
	offer_tid = 0; /* the parent's leaving writer is not the child's */
	leaving_tid = 0;
	offer_taken = 0;
	offer_fd = -1;
	offer_dir = -1;
}

/* sf_writer_after_fork_child's memory part, for a child forked after
 * tracing stopped at a seccomp filter (no call: hooks.c, fork_bare). */
void sf_writer_forget_stopped(void)
{
	sf_notes_relay_forked();
	queue = NULL;
	busy = 0;
	active = 0;
	call_lock = 0;
	call_state = 0;
	call_req = NULL;
	writer_tid = 0;
}
