/* Process hooks: a forked child drops the parent's log and buffers and
 * starts its own, whether it was made by fork (pthread_atfork), _Fork, a
 * raw fork through syscall() or glibc's clone() with a stack of its own
 * (gtest's death tests): the last three skip the atfork handlers, so they
 * are wrapped here. A vfork child records nothing (arch/<arch>/vfork.S),
 * nor does a clone() child that shares the memory (CLONE_VM) without being
 * a thread. posix_spawn's child runs only libc code before its exec.
 * A process about to change its credentials (setuid and its family)
 * creates its log first, while it still can. _exit, _Exit and abort let
 * a snapshot being written finish first (snapshot.c): the writer thread
 * ends with the process.
 * (Objects loaded later: loader_hook.c; exec: exec_env.c.) */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <link.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sf_arch.h"

#include "runtime/runtime.h"

static sigset_t fork_mask;

typedef int (*clone_fn)(int (*fn)(void *), void *stack, int flags, void *arg, ...);
static clone_fn real_clone; /* glibc's clone(3) */

uint64_t sf_fork_time;
uint32_t sf_fork_parent, sf_fork_tid;

/* A connection to record's keeper for the child (notes.c), in the
 * program's table from here to the fork's end: only where the forking
 * thread left record's network namespace. Per thread: two may fork at
 * once; the child has the forking thread's. */
static __thread int fork_conn __attribute__((tls_model("initial-exec"))) = -1;

/* Tracing stopped at a seccomp filter (sandbox.c), which may refuse every
 * call the fork handlers make (the lock's signal mask, getpid, the keeper
 * connection): the fork is made bare. The child records nothing (every
 * sled unpatched), so it only forgets its parent's writer and pid, in
 * memory (sf_fork_child_stopped). Per thread: from before the fork to
 * its end in each process. */
static __thread int fork_bare __attribute__((tls_model("initial-exec")));

/* The fork's window (from before_fork to the end of the handlers in each
 * process): this thread's events are not recorded (a handler's, below),
 * as in a vfork child. Per thread; the child has a copy. */
static __thread struct sf_suppress_state fork_quiet __attribute__((tls_model("initial-exec")));

/* The signals the kernel forces on the thread that caused them: a
 * seccomp filter's SECCOMP_RET_TRAP (SIGSYS) and the faults. One that is
 * blocked is not held but kills the process (force_sig: the handler is
 * reset to SIG_DFL), so the fork's window leaves those the program had
 * unblocked unblocked. glibc's fork child makes set_robust_list (and
 * rseq) itself inside it: a TRAP there must reach the program's handler
 * as untraced. The handler's events are not recorded (fork_quiet): in the
 * child the thread's slot is still its parent's until the handlers run,
 * and the log's lock is held. */
static void sync_signals_unblock(void)
{
	static const int sync[] = {SIGSYS, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP};
	sigset_t m;
	sigemptyset(&m);
	for (size_t i = 0; i < sizeof(sync) / sizeof(sync[0]); i++)
		if (!sigismember(&fork_mask, sync[i]))
			sigaddset(&m, sync[i]);
	pthread_sigmask(SIG_UNBLOCK, &m, NULL);
}

static void before_fork(void)
{
	if (__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE)) {
		fork_bare = 1;
		return;
	}
	fork_conn = sf_keeper_conn_for_fork();
	/* Hold the lock across fork so the child never inherits it taken. */
	sf_log_lock_sig(&fork_mask);
	sf_suppress_begin(&fork_quiet);
	sync_signals_unblock();
	/* the child's heap is the parent's live set at this time (readers);
	 * a forked child that has no log yet recorded nothing since its own
	 * fork (the first event makes the log), so its heap is still its
	 * origin's at that fork: its children start from there too (a
	 * daemon's double fork, whose intermediate child leaves no log) */
	if (!sf_fork_time || sf_log_ready()) {
		sf_fork_time = sf_now_raw();
		sf_fork_parent = (uint32_t)getpid();
		sf_fork_tid = (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0);
	}
}

static void after_fork_parent(void)
{
	if (fork_bare) {
		fork_bare = 0;
		return;
	}
	sf_suppress_end(&fork_quiet);
	sf_log_unlock_sig(&fork_mask);
	if (fork_conn >= 0)
		sf_close(fork_conn);
	fork_conn = -1;
}

static void vw_after_fork_child(uint32_t *waited);

/* waited: the word a parent waits on for this child's exec or exit
 * (CLONE_VFORK without CLONE_VM), NULL for any other child. */
static void after_fork_child_files(int files_shared, uint32_t *waited)
{
	vw_after_fork_child(waited);
	sf_stack_after_fork_child();
	if (fork_bare) {
		fork_bare = 0;
		sf_fork_child_stopped();
		return;
	}
	sf_suppress_end(&fork_quiet); /* the thread's state as at the fork: reset below */
	sf_fd_guard_after_fork_child();
	sf_writer_after_fork_child();
	sf_services_after_fork_child();
	sf_log_after_fork_child(files_shared);
	sf_objects_after_fork_child();
	sf_buffer_after_fork_child();
	sf_heap_early_after_fork_child();
	sf_args_after_fork_child();
	sf_exec_env_after_fork_child();
	if (fork_conn >= 0 && !files_shared) {
		/* Its log made now, over the channel its parent's server
		 * asked for (notes.c), which leaves the table at once: the
		 * keeper keeps its copy (without a keeper, it is closed once
		 * the log is made). */
		sf_keeper_conn_handed(fork_conn);
		sf_keeper_start_keeping(fork_conn);
		sf_log_create_early();
		sf_keeper_conn_drop();
	} else if (files_shared) {
		/* its descriptor uses in a table of its own (writer.c) */
		sf_keeper_start();
	} else {
		sf_keeper_defer(); /* the same, from its first log use on */
	}
	fork_conn = -1; /* shared: the parent's to close */
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

static void after_fork_child(void)
{
	after_fork_child_files(0, NULL);
}

/* At start-up, traced or not: glibc's clone, for the wrapper below. */
typedef void (*abort_fn)(void);
static abort_fn real_abort;

static void late_resolve(void);

/* Every next definition the wrappers here call, found once at start-up
 * and never on a call's path: a lookup there ran in whatever state the
 * program was in (a fork child, between its failed dlopen and its
 * dlerror). Through elf_sym.c, never libdl (sf_real). */
void sf_hooks_resolve(void)
{
	real_clone = (clone_fn)sf_real("clone");
	real_abort = (abort_fn)sf_real("abort");
	late_resolve();
	sf_writer_resolve();
	sf_fd_guard_resolve();
}

int sf_clone_real(int (*fn)(void *), void *stack, int flags, void *arg)
{
	if (!real_clone)
		real_clone = (clone_fn)sf_real("clone");
	if (!real_clone) {
		errno = ENOSYS;
		return -1;
	}
	return real_clone(fn, stack, flags, arg);
}

/* The same with the three optional arguments (writer.c: the writer). */
int sf_clone_real_tls(int (*fn)(void *), void *stack, int flags, void *arg, pid_t *ptid, void *tls, pid_t *ctid)
{
	if (!real_clone)
		real_clone = (clone_fn)sf_real("clone");
	if (!real_clone) {
		errno = ENOSYS;
		return -1;
	}
	return real_clone(fn, stack, flags, arg, ptid, tls, ctid);
}

void sf_hooks_init(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* ---- vfork (arch/<arch>/vfork.S) ---- */

/* Nested vforks (a vfork child that vforks) share this thread's storage:
 * only the outermost saves and restores. */
static __thread uint32_t vfork_depth __attribute__((tls_model("initial-exec")));
static __thread struct sf_suppress_state vfork_saved __attribute__((tls_model("initial-exec")));

void sf_vfork_prepare(void)
{
	if (vfork_depth++ == 0)
		sf_suppress_begin(&vfork_saved);
}

void sf_vfork_parent(void)
{
	if (--vfork_depth == 0) {
		/* The events the child ran into on this thread's suppressed
		 * storage, counted there (buffer.c): one that only execs has
		 * none; one that ran code is said. (A failed vfork: none.) */
		uint32_t dropped = sf_suppressed - 1;
		sf_suppress_end(&vfork_saved);
		if (dropped) {
			int err = errno;
			sf_rt_report("vfork child (or clone(CLONE_VM | CLONE_VFORK) through syscall()): its calls are not "
				     "recorded (it runs on its parent's memory)",
				     "", NULL);
			errno = err;
		}
	}
}

/* The parent is suspended while its vfork child runs: a nonzero depth on
 * this thread means we are that child. */
int sf_in_vfork_child(void)
{
	return vfork_depth != 0;
}

long sf_set_errno(int e)
{
	errno = e;
	return -1;
}

/* ---- forks that run no atfork handlers ---- */

static pid_t fork_with_handlers(long (*do_fork)(const long *a), const long *a, int files_shared)
{
	int on = sf_config.enabled;
	if (on)
		before_fork();
	long r = do_fork(a);
	if (on) {
		if (r == 0)
			after_fork_child_files(files_shared, NULL);
		else
			after_fork_parent();
	}
	return (pid_t)r;
}

/* ---- CLONE_VFORK without CLONE_VM ----
 * The child has its own copy of the memory: a fork child for the runtime,
 * which holds its lock across the system call (before_fork). With
 * CLONE_VFORK the call returns in the parent only when the child execs or
 * exits, so the lock would stay held all that time: every other thread's
 * first event would wait, and a child waiting for one of them would never
 * be answered. So the clone is made without CLONE_VFORK, the lock is let
 * go, and then the parent waits as vfork's parent does, until the child
 * execs or exits, with signals blocked (the kernel holds a vfork parent's
 * signals too).
 *
 * The wait needs no descriptor: anything in the descriptor table would be
 * copied by a posix_spawn or fork in another thread (glibc's posix_spawn
 * takes no lock of ours) and held until that process's exec. Instead the
 * parent waits on a futex word of a page shared with the child
 * (MAP_SHARED, made once per process, one word per wait). The child
 * stores its thread id there and makes the word the only entry of its
 * robust futex list (set_robust_list; the kernel gave it none, and glibc
 * gives one only to the children of its fork). When the child's memory
 * goes, at exec past the point of no return or at exit however it comes,
 * the kernel marks the word OWNER_DIED and wakes the waiter: the moment it
 * would release a vfork parent. Where set_robust_list is refused
 * (qemu-user), the runtime's exec wrappers and _exit mark the word
 * themselves (vw_child_leaves), so a failed exec there lets the parent go
 * on early. A child that replaces the list through syscall() (its own
 * robust futexes) gets the runtime's list back for each exec from the
 * thread the word names (vw_exec_begins), else is told the same way
 * (vw_robust_list_replaced). A child killed before it registered, or
 * that replaced the list by a raw system call instruction, is found gone
 * by a check every VW_CHECK_NS: the latter holds its parent until it
 * exits, not only until its exec. */
#define VW_PAGE 4096
#define VW_WORDS (VW_PAGE / sizeof(uint32_t))
#define VW_TAKEN FUTEX_WAITERS /* a parent waits; no child has registered yet */
#define VW_CHECK_NS 10000000L

static uint32_t *vw_page;	   /* this process's words; made and taken from under the lock */
static uint32_t *vw_mine;	   /* in a waited-for child: its word, in its parent's page */
static uint32_t vw_tid;		   /* the thread id it stored there */
static int vw_kernel_tells;	   /* the child's robust list holds vw_mine */
static struct robust_list_head vw_head; /* the child's, in its own memory */
static struct robust_list vw_entry;

/* Under the runtime's lock (before_fork): a free word, or NULL. */
static uint32_t *vw_take(void)
{
	if (!vw_page) {
		void *p = mmap(NULL, VW_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		vw_page = p;
	}
	for (size_t i = 0; i < VW_WORDS; i++)
		if (__atomic_load_n(&vw_page[i], __ATOMIC_ACQUIRE) == 0) {
			__atomic_store_n(&vw_page[i], VW_TAKEN, __ATOMIC_RELEASE);
			return &vw_page[i];
		}
	return NULL; /* that many waits at once: the clone keeps CLONE_VFORK */
}

/* In the waited-for child, first: the word names it, and the kernel will
 * mark it when the child's memory goes. */
static void vw_child_register(uint32_t *w)
{
	vw_mine = w;
	vw_tid = (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0);
	__atomic_store_n(w, vw_tid | FUTEX_WAITERS, __ATOMIC_RELEASE);
	vw_entry.next = &vw_head.list;
	vw_head.list.next = &vw_entry;
	vw_head.futex_offset = (long)((char *)w - (char *)&vw_entry);
	vw_head.list_op_pending = NULL;
	vw_kernel_tells = sf_syscall3(SYS_set_robust_list, (long)&vw_head, sizeof(vw_head), 0) == 0;
}

/* In every fork child the runtime sees; waited: the word its parent waits
 * on, or NULL. Its own waits take a page of its own: a child keeps its
 * parent's page only while its parent waits on it (until its exec or
 * exit). */
static void vw_after_fork_child(uint32_t *waited)
{
	if (vw_page && !waited)
		sf_syscall3(SYS_munmap, (long)vw_page, VW_PAGE, 0);
	vw_page = NULL;
	vw_mine = NULL;
	vw_kernel_tells = 0;
	if (waited)
		vw_child_register(waited);
}

/* The waited-for child execs or exits, from any of its threads, and the
 * kernel will not say so (no robust list): it tells its parent itself.
 * Not from a vfork child of it (its memory is the child's: vfork_depth). */
static void vw_child_leaves(void)
{
	uint32_t *w = vw_mine;
	if (!w || vw_kernel_tells || vfork_depth)
		return;
	vw_mine = NULL;
	uint32_t mine = vw_tid | FUTEX_WAITERS;
	if (__atomic_compare_exchange_n(w, &mine, FUTEX_WAITERS | FUTEX_OWNER_DIED, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		sf_syscall3(SYS_futex, (long)w, FUTEX_WAKE, 1);
}

/* The waited-for child is about to exec, and the kernel would not mark
 * the word (the program replaced the robust list): when the exec'ing
 * thread is the one the word names, the runtime's list is put back just
 * for the exec, so that the kernel marks the word only once the exec
 * cannot come back, and the program's list is restored if it fails
 * (vw_exec_failed): marking it now let the parent run at a failed exec,
 * before the child's own writes. Else (another thread execs, or
 * set_robust_list is refused) the word is marked now, as before. */
static struct robust_list_head *vw_prog_head; /* the program's list, while the runtime's stands in */
static size_t vw_prog_len;
static int vw_swapped;

static void vw_exec_begins(void)
{
	if (!vw_mine || vw_kernel_tells || vfork_depth)
		return;
	if ((uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0) == vw_tid &&
	    sf_syscall3(SYS_get_robust_list, 0, (long)&vw_prog_head, (long)&vw_prog_len) == 0 &&
	    sf_syscall3(SYS_set_robust_list, (long)&vw_head, sizeof(vw_head), 0) == 0) {
		vw_swapped = 1;
		return;
	}
	vw_child_leaves();
}

static void vw_exec_failed(void)
{
	if (!vw_swapped)
		return;
	vw_swapped = 0;
	sf_syscall3(SYS_set_robust_list, (long)vw_prog_head, (long)vw_prog_len, 0);
}

/* set_robust_list through syscall() succeeded (a: its arguments). In the
 * waited-for child's registering thread it replaced the list that held
 * the word (a thread library or runtime of the child's own): the kernel
 * will no longer mark the word at the exec, so the runtime's exec
 * wrappers and _exit do (vw_child_leaves), as where set_robust_list is
 * refused. The program's list stays registered as it asked. */
static void vw_robust_list_replaced(void)
{
	if (vw_mine && vw_kernel_tells && (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0) == vw_tid)
		vw_kernel_tells = 0;
}

/* Whether the child is gone: exited (a zombie, or reaped by its parent's
 * other threads or by SIGCHLD ignored). A child of another parent
 * (CLONE_PARENT) counts as there while its pid is. */
static int vw_child_gone(pid_t pid)
{
	siginfo_t si;
	si.si_pid = 0;
	long r = sf_syscall6(SYS_waitid, P_PID, pid, (long)&si, WEXITED | WNOHANG | WNOWAIT | __WALL, 0, 0);
	if (r == 0)
		return si.si_pid == pid;
	return sf_syscall3(SYS_kill, pid, 0, 0) == -ESRCH;
}

/* The signals a waiting parent holds, as the kernel's vfork wait does
 * (killable: a fatal signal kills the parent at once, nothing else is
 * delivered until the child lets it go): those the program catches, and
 * the stop signals. A signal left at its default fatal action, or
 * ignored, stays open: it kills the parent or is dropped, as untraced. */
static void vw_held_signals(sigset_t *held)
{
	sigemptyset(held);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)
			sigaddset(held, sig);
	}
	sigaddset(held, SIGTSTP);
	sigaddset(held, SIGTTIN);
	sigaddset(held, SIGTTOU);
}

/* In the parent after the clone (r: its result), the lock let go: waits
 * for the child's exec or exit, then frees the word. */
static void vw_wait(uint32_t *w, long r)
{
	if (!w)
		return;
	if (r > 0) {
		sigset_t held, old;
		vw_held_signals(&held);
		pthread_sigmask(SIG_BLOCK, &held, &old);
		for (;;) {
			uint32_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
			if (v & FUTEX_OWNER_DIED)
				break;
			struct timespec t = {0, VW_CHECK_NS};
			if (sf_syscall6(SYS_futex, (long)w, FUTEX_WAIT, v, (long)&t, 0, 0) == -ETIMEDOUT &&
			    vw_child_gone((pid_t)r))
				break;
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	__atomic_store_n(w, 0, __ATOMIC_RELEASE);
}

/* Forks that copy the address space and return on the same stack. */
static int fork_like(long nr, const long *a)
{
#ifdef SYS_fork /* aarch64 has only clone */
	if (nr == SYS_fork)
		return 1;
#endif
	/* CLONE_VFORK without CLONE_VM: the parent waits, but the child has
	 * its own copy of the memory: a fork child in every other way. */
	if (nr == SYS_clone)
		return !(a[0] & CLONE_VM) && a[1] == 0;
	if (nr == SYS_clone3 && a[0] && (unsigned long)a[1] >= CLONE_ARGS_SIZE_VER0) {
		const struct clone_args *ca = (const struct clone_args *)a[0];
		return !(ca->flags & CLONE_VM) && ca->stack == 0;
	}
	return 0;
}

/* A vfork made through syscall(): the assembly entry (arch/<arch>/vfork.S)
 * takes vfork()'s path for it. */
int sf_syscall_vforks(long nr, long a0, long a1)
{
	const uint64_t both = CLONE_VM | CLONE_VFORK;
#ifdef SYS_vfork /* aarch64 has only clone */
	if (nr == SYS_vfork)
		return 1;
#endif
	if (nr == SYS_clone)
		return ((uint64_t)a0 & both) == both;
	if (nr == SYS_clone3 && a0 && (unsigned long)a1 >= CLONE_ARGS_SIZE_VER0) /* else the kernel refuses it */
		return (((const struct clone_args *)a0)->flags & both) == both;
	return 0;
}

/* The credential changes of the set*id family, by system call number, and
 * the effective (or file-system) uid asked for, -1 for none. */
static int cred_change(long nr, const long *a, uid_t *to)
{
	*to = (uid_t)-1;
	switch (nr) {
	case SYS_setuid:
	case SYS_setfsuid:
		*to = (uid_t)a[0];
		return 1;
	case SYS_setreuid:
	case SYS_setresuid:
		*to = (uid_t)a[1];
		return 1;
	case SYS_setgid:
	case SYS_setfsgid:
	case SYS_setregid:
	case SYS_setresgid:
	case SYS_setgroups:
		return 1;
	}
	return 0;
}

/* A change of the calling thread's credentials or security state that
 * the runtime's own threads (the raw writer, a keeper) must follow: they
 * are not on glibc's list for its set*id broadcast, and capset, setfs*id
 * and these prctls are per thread anyway. A runtime thread left with
 * what the program dropped, in memory the program can write, would be a
 * way back (writer.c, sf_keeper_follow). */
static int followed_change(long nr, const long *a)
{
	uid_t to;
	if (nr == SYS_capset)
		return 1;
	if (nr == SYS_prctl)
		return a[0] == PR_SET_KEEPCAPS || a[0] == PR_SET_NO_NEW_PRIVS || a[0] == PR_CAPBSET_DROP ||
		       a[0] == PR_SET_SECUREBITS || (a[0] == PR_CAP_AMBIENT && a[1] != PR_CAP_AMBIENT_IS_SET);
	return cred_change(nr, a, &to);
}

/* After the program's call nr (a: its arguments, r: the kernel's answer)
 * through libc's syscall(), prctl(), capset(), setfsuid() or setfsgid():
 * a successful change is made on the runtime's threads too, in the
 * program's order (KEEPCAPS before the setresuid it is for). setfsuid and
 * setfsgid answer the old id: the follower is given the one now held. */
void sf_cred_followed(long nr, const long *a, long r)
{
	if (!followed_change(nr, a))
		return;
	if (nr == SYS_setfsuid || nr == SYS_setfsgid)
		sf_keeper_follow(nr, sf_syscall3(nr, -1, 0, 0), 0, 0, 0, 0);
	else if ((unsigned long)r <= -4096ul)
		sf_keeper_follow(nr, a[0], a[1], a[2], a[3], a[4]);
}

static uint64_t clone_flags(long nr, const long *a)
{
	if (nr == SYS_clone)
		return (uint64_t)a[0];
	if (nr == SYS_clone3 && a[0] && (unsigned long)a[1] >= CLONE_ARGS_SIZE_VER0)
		return ((const struct clone_args *)a[0])->flags;
	return 0;
}

static long raw_syscall(long nr, const long *a)
{
	return sf_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* a[0..5]: the arguments, a[6]: the number. Per call, on the caller's
 * stack: two threads forking at once each run their own request. */
static long do_raw_fork(const long *a)
{
	return raw_syscall(a[6], a);
}

static void before_cred_change(uid_t to);

/* A fork-like syscall(), a[6] its number; CLONE_VFORK is waited for
 * outside the runtime's lock (vw_wait). */
static long fork_syscall(long *a)
{
	long nr = a[6];
	uint64_t fl = clone_flags(nr, a);
	int files_shared = (fl & CLONE_FILES) != 0;
	struct clone_args ca;
	if (!sf_config.enabled || !(fl & CLONE_VFORK) || (nr != SYS_clone && (unsigned long)a[1] > sizeof(ca)) ||
	    __atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
		return fork_with_handlers(do_raw_fork, a, files_shared);
	/* a seccomp filter that refuses the wait's calls (sandbox.c): the
	 * clone keeps its CLONE_VFORK, as where no word is free */
	int no_wait = sf_seccomp_refuses_vfork_wait();
	before_fork();
	uint32_t *w = no_wait ? NULL : vw_take();
	if (w) {
		if (nr == SYS_clone) {
			a[0] &= ~(long)CLONE_VFORK;
		} else { /* clone3: a copy of the caller's arguments, the flag off */
			memset(&ca, 0, sizeof(ca));
			memcpy(&ca, (const void *)a[0], (size_t)a[1]);
			ca.flags &= ~(uint64_t)CLONE_VFORK;
			a[0] = (long)&ca;
		}
	}
	long r = do_raw_fork(a);
	if (r == 0) {
		after_fork_child_files(files_shared, w);
		return 0;
	}
	after_fork_parent();
	vw_wait(w, r);
	return r;
}

/* SYS_exit through syscall(): in the process's last thread but the
 * runtime's writer it ends the process (what glibc's clone() does when the
 * child's function returns, a runtime with a thread exit of its own, main
 * ending with syscall(SYS_exit, n)), so the image ends as at _exit; with
 * a writer thread, which would keep the process alive, the process ends
 * here, by exit_group with the status the kernel would have given it (the
 * caller's code, ns.c). Reads /proc: SYS_exit through syscall() is rare. */
static void exit_syscall(long code)
{
	int status;
	sf_writer_offer_settle(); /* the leaving writer must not outlast this thread */
	int last = sf_last_thread_status((int)code, &status, sf_writer_here_at_exit());
	if (!last)
		return;
	sf_image_ends();
	/* A runtime task was counted (the writer, a keeper): it must not be
	 * the last task, so the process ends now, with the code this thread's
	 * exit would have given it. Decided by the count, not by asking again
	 * here: the writer may have begun to leave meanwhile (hand_over, once
	 * it saw the leader's exit; sf_writer_active 0), and this thread's
	 * bare exit then left it last, the process ending with the leader's
	 * code (about 1 in 150 loaded runs of skeptic24s's sys_exit case). */
	if (last == 1)
		return;
	sf_exit_group_now(status);
}

/* syscall(2) (entered through arch/<arch>/vfork.S, which keeps vforks for
 * itself, with the caller's arguments: the seven words a variadic call
 * passes are where seven long parameters are): glibc's is the bare
 * instruction plus errno, and so is this, except that fork-like calls run
 * the runtime's fork handlers around it (a raw fork child would otherwise
 * write into its parent's slots), a credential change creates the log
 * first, as the set*id wrappers below do, an exec gets the tracer's
 * variables back as execve() does, and unshare and setns stop the writer
 * thread when the kernel wants the caller alone (ns.c). */
long sf_syscall_c(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	long a[7] = {a0, a1, a2, a3, a4, a5, nr}; /* a[6]: for do_raw_fork */
	long r;
	uid_t to;
	if (nr == SYS_exit_group)
		sf_image_ends(); /* as _exit does */
	if (nr == SYS_prctl ? a0 == PR_SET_SECCOMP && a1 == SECCOMP_MODE_STRICT
			    : nr == SYS_seccomp && a0 == SECCOMP_SET_MODE_STRICT && !a1 && !a2)
		sf_strict_begins(); /* as prctl() (rt_libc.c); with flags or args the kernel
				     * refuses it (EINVAL: libseccomp's probe, seccomp(STRICT, 1, NULL)) */
	int filter = nr == SYS_prctl ? a0 == PR_SET_SECCOMP && a1 == SECCOMP_MODE_FILTER
				     : nr == SYS_seccomp && a0 == SECCOMP_SET_MODE_FILTER;
	if (filter) /* libseccomp's way: as prctl() (sandbox.c) */
		sf_seccomp_installing((const void *)a2, nr == SYS_prctl ? 0 : (unsigned long)a1);
	if (nr == SYS_exit && !sf_strict_thread) /* in strict mode: nothing but the exit */
		exit_syscall(a0);
	if (nr == SYS_execve || nr == SYS_execveat)
		sf_exec_begins(); /* as exec does */
	if (cred_change(nr, a, &to))
		before_cred_change(to);
	if (nr == SYS_sigaltstack && a0)
		sf_stack_alt_forget(); /* as sigaltstack() (stack.c) */
	if (sf_fd_syscall(nr, a, &r)) {
		/* close, close_range, dup2, dup3: the runtime's descriptors stay its own */
	} else if (fork_like(nr, a)) {
		r = fork_syscall(a);
	} else if (nr == SYS_prlimit64 || nr == SYS_setrlimit) {
		r = sf_rlimit_syscall(nr, a); /* ns.c: a finite RLIMIT_NPROC stops the writer thread */
	} else if (nr == SYS_unshare || nr == SYS_setns) {
		r = sf_ns_syscall(nr, a0, a1); /* ns.c: the writer thread out of the way */
	} else if (nr == SYS_execve || nr == SYS_execveat) {
		r = sf_exec_syscall(nr, a); /* the tracer's variables, as execve() (exec_env.c) */
		sf_exec_failed();
	} else {
		r = raw_syscall(nr, a);
		if (nr == SYS_set_robust_list && r == 0)
			vw_robust_list_replaced();
		if (nr == SYS_sigaltstack && a0)
			sf_stack_alt_forget();
		if ((nr == SYS_mprotect || nr == SYS_pkey_mprotect) && r == 0)
			sf_text_prot_note((uint64_t)a0, (uint64_t)a1, (int)a2); /* as mprotect() (patch.c) */
	}
	sf_cred_followed(nr, a, r); /* as the set*id wrappers, capset, prctl */
	if (filter && ((unsigned long)r > -4096ul || (nr == SYS_seccomp && r > 0 && (a1 & SECCOMP_FILTER_FLAG_TSYNC))))
		sf_seccomp_undo(); /* not installed (TSYNC: a thread that could not follow) */
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

typedef pid_t (*fork_fn)(void);
static fork_fn real__Fork;

static long do__Fork(const long *a)
{
	(void)a;
	return real__Fork();
}

/* _Fork (glibc 2.34): fork without the atfork handlers. */
__attribute__((visibility("default"))) pid_t _Fork(void)
{
	if (!real__Fork)
		real__Fork = (fork_fn)sf_real("_Fork");
	if (!real__Fork) {
		errno = ENOSYS;
		return -1;
	}
	static const long none[6];
	return fork_with_handlers(do__Fork, none, 0);
}

/* ---- clone(3) ---- */

/* What the child of a wrapped clone runs first. It lives in the parent's
 * frame, which the child has a copy of (no CLONE_VM). */
struct clone_call {
	int (*fn)(void *);
	void *arg;
	int flags;
	uint32_t *waited; /* the word the parent waits on (vw_wait), or NULL */
};

static int clone_child(void *p)
{
	const struct clone_call *c = p;
	after_fork_child_files(c->flags & CLONE_FILES, c->waited);
	int r = c->fn(c->arg);
	sf_log_child_return(); /* CLONE_FILES: its log's descriptor is not left in its parent's table */
	int status;
	if (sf_keeper_alive() && sf_last_thread_status(r, &status, 0))
		for (;;) /* as glibc's SYS_exit would have ended it, were the keeper not there */
			sf_syscall3(SYS_exit_group, status, 0, 0);
	return r;
}

/* The runtime's thread-local block (this object's PT_TLS): its initial
 * image, where the block lies from a thread pointer, and where sf_self
 * and sf_suppressed lie in it. Found (dl_iterate_phdr) in the parent of
 * the first clone(CLONE_VM | CLONE_SETTLS) that needs it. */
static struct {
	const char *image;
	size_t filesz, memsz;
	long from_tp;		 /* block - thread pointer */
	size_t self_off, supp_off; /* sf_self, sf_suppressed in the block */
	int state;		 /* 1 once found */
} tls_img;

static int tls_img_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t me = (uintptr_t)&tls_img_cb;
	const ElfW(Phdr) *tls = NULL;
	int mine = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && me - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			mine = 1;
		if (ph->p_type == PT_TLS)
			tls = ph;
	}
	if (!mine)
		return 0;
	char *blk = info->dlpi_tls_data;
	if (!tls || !blk)
		return 1;
	uintptr_t self = (uintptr_t)&sf_self, supp = (uintptr_t)&sf_suppressed;
	if (self < (uintptr_t)blk || self + sizeof(sf_self) > (uintptr_t)blk + tls->p_memsz ||
	    supp < (uintptr_t)blk || supp + sizeof(sf_suppressed) > (uintptr_t)blk + tls->p_memsz ||
	    tls->p_filesz > tls->p_memsz)
		return 1;
	tls_img.image = (const char *)(info->dlpi_addr + tls->p_vaddr);
	tls_img.filesz = tls->p_filesz;
	tls_img.memsz = tls->p_memsz;
	tls_img.from_tp = (long)((uintptr_t)blk - (uintptr_t)sf_arch_tp());
	tls_img.self_off = self - (uintptr_t)blk;
	tls_img.supp_off = supp - (uintptr_t)blk;
	__atomic_store_n(&tls_img.state, 1, __ATOMIC_RELEASE);
	return 1;
}

/* What a clone(CLONE_VM | CLONE_SETTLS) child runs first: in a page of
 * its own (the parent's frame may be gone by then), unmapped by the
 * child once read. */
struct vm_call {
	int (*fn)(void *);
	void *arg;
	char *tp; /* the child's thread pointer: the clone's tls */
};

/* Runs on the child's own thread-local storage (the program's block, at
 * tls), before any instrumented call: the runtime's part of that block
 * (below the thread pointer on x86-64, above on aarch64, as for every
 * thread glibc makes) is set to the runtime's initial image, whatever
 * the program put there (zeros, or a copy of its parent's block, which
 * would hold the parent's cursor into its slot), and then suppressed
 * (suppress.c): time base out of every span, no shadow array to map, so
 * each event takes the slow path, which drops it at once. Only stores
 * through the computed address: the child's %fs:0 (its TCB's self
 * pointer) is the program's business. */
static int settls_child(void *p)
{
	struct vm_call c = *(struct vm_call *)p;
	sf_syscall3(SYS_munmap, (long)p, 4096, 0);
	char *blk = c.tp + tls_img.from_tp;
	__builtin_memcpy(blk, tls_img.image, tls_img.filesz);
	__builtin_memset(blk + tls_img.filesz, 0, tls_img.memsz - tls_img.filesz);
	struct sf_thread *t = (struct sf_thread *)(blk + tls_img.self_off);
	t->base = UINT64_MAX >> 1;
	t->shadow_blk = 1; /* none to be had: pushes counted only */
	*(uint32_t *)(blk + tls_img.supp_off) = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return c.fn(c.arg);
}

/* A child that shares the process's memory without being a thread: it
 * has no log of its own to write (its slots would be its parent's
 * memory), so it records nothing, and record says so once per parent
 * (a report: notes.c; without record, a line on stderr).
 * Without CLONE_SETTLS it shares the calling thread's thread-local
 * storage too: its instrumented calls would store into this thread's
 * slot. With CLONE_VFORK this thread waits for it, so it stops recording
 * until then, as for vfork. Without, the two run at once on the same
 * storage: this thread stops recording for good, and says so.
 * With CLONE_SETTLS the child has a block of its own: settls_child sets
 * the runtime's part of it to a suppressed thread's, and the calling
 * thread goes on recording. */
static int clone_shared_vm(int (*fn)(void *), void *stack, int flags, void *arg, pid_t *ptid, void *tls,
			   pid_t *ctid)
{
	int flags_shared = 0; /* CLONE_SETTLS onto this thread's own block */
	if (flags & CLONE_SETTLS) {
		if (__atomic_load_n(&tls_img.state, __ATOMIC_ACQUIRE) != 1)
			dl_iterate_phdr(tls_img_cb, NULL); /* two threads at once find the same */
	}
	if ((flags & CLONE_SETTLS) && tls_img.state == 1) {
		/* tls whose runtime block overlaps the calling thread's (tls = its
		 * own thread pointer): the child shares this thread's storage
		 * after all. Resetting "its" block would reset this thread's, so
		 * it is left alone and handled as a clone without CLONE_SETTLS. */
		uintptr_t mine = (uintptr_t)sf_arch_tp() + (uintptr_t)tls_img.from_tp;
		uintptr_t its = (uintptr_t)tls + (uintptr_t)tls_img.from_tp;
		if (its < mine + tls_img.memsz && mine < its + tls_img.memsz)
			flags_shared = 1;
	}
	if ((flags & CLONE_SETTLS) && !flags_shared) {
		long m = sf_syscall6(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (tls_img.state != 1 || (unsigned long)m > -4096ul) {
			sf_rt_report("clone(CLONE_VM | CLONE_SETTLS) without CLONE_THREAD cannot be traced: refused", "",
				     NULL);
			if ((unsigned long)m <= -4096ul)
				sf_syscall3(SYS_munmap, m, 4096, 0);
			errno = EINVAL;
			return -1;
		}
		struct vm_call *c = (struct vm_call *)m;
		*c = (struct vm_call){fn, arg, tls};
		int r = real_clone(settls_child, stack, flags, c, ptid, tls, ctid);
		int err = errno;
		if (r > 0)
			sf_rt_report("clone(CLONE_VM | CLONE_SETTLS) without CLONE_THREAD: the child's calls are not "
				     "recorded (it shares this process's memory)",
				     "", NULL);
		else
			sf_syscall3(SYS_munmap, m, 4096, 0);
		errno = err;
		return r;
	}
	struct sf_suppress_state st;
	sf_suppress_begin(&st);
	int r = real_clone(fn, stack, flags, arg, ptid, tls, ctid);
	if (flags & CLONE_VFORK) {
		int err = errno;
		/* The child has exec'd or exited: the events it ran into meanwhile
		 * (this thread's storage, suppressed) were counted there. A child
		 * that only execs runs none; one that ran code is said. */
		uint32_t dropped = sf_suppressed - 1;
		sf_suppress_end(&st);
		if (r > 0 && dropped) /* one line for all such children: record counts it ("N times") */
			sf_rt_report("clone(CLONE_VM | CLONE_VFORK) without CLONE_THREAD: the child's calls are not recorded "
				     "(it shares this process's memory)",
				     "", NULL);
		errno = err;
	} else if (r > 0) {
		int err = errno;
		sf_rt_report("clone(CLONE_VM) without CLONE_THREAD: the calling thread's calls are no longer "
			     "recorded (its child shares its thread storage)", "", NULL);
		errno = err;
	} else {
		sf_suppress_end(&st); /* no child */
	}
	return r;
}

/* glibc's clone runs no atfork handlers: a child with a stack of its own
 * and a copy of the memory would go on in its parent's log, through the
 * parent thread's storage and shared mappings. Its function is wrapped so
 * that it first does what a fork child does. Threads (CLONE_THREAD) pass
 * through. The three optional arguments are passed on as glibc's clone
 * does, whatever the flags. */
__attribute__((visibility("default"))) int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	pid_t *ptid = va_arg(ap, pid_t *);
	void *tls = va_arg(ap, void *);
	pid_t *ctid = va_arg(ap, pid_t *);
	va_end(ap);
	if (!real_clone)
		real_clone = (clone_fn)sf_real("clone");
	if (!real_clone) {
		errno = ENOSYS;
		return -1;
	}
	if (!sf_config.enabled || (flags & CLONE_THREAD) || !fn)
		return real_clone(fn, stack, flags, arg, ptid, tls, ctid);
	if (flags & CLONE_VM)
		return clone_shared_vm(fn, stack, flags, arg, ptid, tls, ctid);
	struct clone_call c = {fn, arg, flags, NULL};
	int f = flags;
	before_fork();
	if ((flags & CLONE_VFORK) && (c.waited = vw_take()))
		f &= ~CLONE_VFORK; /* waited for outside the lock (vw_wait) */
	int r = real_clone(clone_child, stack, f, &c, ptid, tls, ctid);
	int err = errno;
	after_fork_parent();
	vw_wait(c.waited, r);
	errno = err;
	return r;
}

/* ---- credentials ----
 * A process that drops root before its first event (a daemon: fork,
 * close everything, setuid nobody, then work) could no longer create its
 * log in record's directory, nor a note saying why. So each call that
 * changes credentials first creates the log (logfile.c,
 * sf_log_create_early), which the runtime keeps open after the change, as
 * any descriptor is. Not in a vfork child or a clone(CLONE_VM) child: they
 * run on their parent's memory, and record nothing. */
/* A process that cannot have a log, and a program it execs as another user
 * (start-stop-daemon --chuid), keep a note file they can write
 * (notes.c, sf_notes_hand_over): record then says which pid lost its
 * trace and why. to_uid: the effective uid the call asks for, -1 for none. */
static void before_cred_change(uid_t to)
{
	if (sf_config.enabled && !vfork_depth && !sf_suppressed &&
	    !__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE)) { /* stopped: no call of its own (sandbox.c) */
		sf_log_create_early();
		sf_log_hold();
		sf_notes_hand_over(to);
	}
}

/* The wrapped calls: ret, name, params, args, the uid the call asks for,
 * and the system call the keeper makes after it (writer.c,
 * sf_keeper_follow: glibc's seteuid and setegid are setresuid and
 * setresgid; -1: initgroups, whose list is read back). */
#define SF_CRED_CALLS(X)                                                                                   \
	X(int, setuid, (uid_t u), (u), u, SYS_setuid, u, 0, 0)                                             \
	X(int, seteuid, (uid_t u), (u), u, SYS_setresuid, (uid_t)-1, u, (uid_t)-1)                         \
	X(int, setreuid, (uid_t r, uid_t e), (r, e), e, SYS_setreuid, r, e, 0)                             \
	X(int, setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s), e, SYS_setresuid, r, e, s)               \
	X(int, setgid, (gid_t g), (g), (uid_t)-1, SYS_setgid, g, 0, 0)                                     \
	X(int, setegid, (gid_t g), (g), (uid_t)-1, SYS_setresgid, (gid_t)-1, g, (gid_t)-1)                 \
	X(int, setregid, (gid_t r, gid_t e), (r, e), (uid_t)-1, SYS_setregid, r, e, 0)                     \
	X(int, setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s), (uid_t)-1, SYS_setresgid, r, e, s)       \
	X(int, setgroups, (size_t n, const gid_t *l), (n, l), (uid_t)-1, SYS_setgroups, (long)n, (long)l, 0) \
	X(int, initgroups, (const char *user, gid_t g), (user, g), (uid_t)-1, -1, 0, 0, 0)

/* Resolved at start-up (sf_hooks_resolve); a call before it (an earlier
 * constructor) looks its own up, without libdl either (elf_sym.c). */
#define SF_CRED_WRAP(ret, name, params, args, to_uid, nr, a0, a1, a2)               \
	static ret(*real_##name) params;                                             \
	__attribute__((visibility("default"))) ret name params                       \
	{                                                                            \
		if (!real_##name)                                                    \
			real_##name = (ret(*) params)sf_real(#name);                 \
		if (!real_##name) {                                                  \
			errno = ENOSYS;                                              \
			return -1;                                                   \
		}                                                                    \
		before_cred_change(to_uid);                                          \
		ret sf_r = real_##name args;                                         \
		if (sf_r == 0)                                                       \
			sf_keeper_follow(nr, (long)(a0), (long)(a1), (long)(a2), 0, 0); \
		return sf_r;                                                         \
	}
SF_CRED_CALLS(SF_CRED_WRAP)

/* glibc's setfsuid, setfsgid and capset are the bare system call, made
 * for the calling thread only; these make it and have the runtime's
 * threads follow (sf_cred_followed). */
__attribute__((visibility("default"))) int setfsuid(uid_t u)
{
	long a[6] = {(long)u};
	before_cred_change(u);
	long r = sf_syscall3(SYS_setfsuid, (long)u, 0, 0);
	sf_cred_followed(SYS_setfsuid, a, r);
	return (int)r;
}

__attribute__((visibility("default"))) int setfsgid(gid_t g)
{
	long a[6] = {(long)g};
	before_cred_change((uid_t)-1);
	long r = sf_syscall3(SYS_setfsgid, (long)g, 0, 0);
	sf_cred_followed(SYS_setfsgid, a, r);
	return (int)r;
}

/* (no header declares it: libcap's sys/capability.h has its own types) */
__attribute__((visibility("default"))) int capset(void *hdr, void *data);
__attribute__((visibility("default"))) int capset(void *hdr, void *data)
{
	long a[6] = {(long)hdr, (long)data};
	long r = sf_syscall3(SYS_capset, (long)hdr, (long)data, 0);
	sf_cred_followed(SYS_capset, a, r);
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

#define SF_CRED_RESOLVE(ret, name, params, args, to_uid, nr, a0, a1, a2) real_##name = (ret(*) params)sf_real(#name);
static void cred_resolve(void)
{
	SF_CRED_CALLS(SF_CRED_RESOLVE)
}

/* ---- the image ends: a snapshot being written is waited for ---- */

/* The image goes now (exec, _exit: exec_env.c, the wrappers here): a
 * snapshot asked for is written first, a CLONE_FILES child's log
 * descriptor leaves the table it shares with its parent, and a parent
 * waiting for this child's exec or exit is told, where the kernel does
 * not (vw_wait). */
void sf_image_ends(void)
{
	if (__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE)) {
		/* tracing stopped at a seccomp filter (sandbox.c): nothing to
		 * settle, and no call but the futex a waiting parent needs */
		vw_child_leaves();
		return;
	}
	sf_notes_relay_settle();
	sf_snapshot_settle();
	sf_log_image_ends();
	vw_child_leaves();
}

/* An exec is about to run (the exec wrappers, syscall()): as the image
 * ends, except that a parent waiting for this child is told by the kernel
 * where it can be (vw_exec_begins); sf_exec_failed after it returns. */
void sf_exec_begins(void)
{
	if (__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE)) {
		vw_exec_begins(); /* stopped at a filter: nothing of the log's (sandbox.c) */
		return;
	}
	sf_snapshot_settle();
	sf_log_exec_spare();
	sf_log_exec_mark(1);
	sf_log_image_ends();
	vw_exec_begins();
}

/* The exec came back (keeps errno). */
void sf_exec_failed(void)
{
	int e = errno;
	if (!__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
		sf_log_exec_mark(0);
	vw_exec_failed();
	errno = e;
}

/* The image has ended (sf_image_ends): the status into the header, then
 * the process ends as glibc's _exit ends it, which a wrapper cannot reach
 * past itself. */
void sf_exit_group_now(int status)
{
	if (!__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
		sf_log_exit_called(status);
	/* as glibc's _exit: where a seccomp filter refuses exit_group, the
	 * thread ends, and the process with its last thread (sandbox.c made
	 * the runtime's threads leave at the install) */
	for (;;) {
		sf_syscall3(SYS_exit_group, status, 0, 0);
		sf_syscall3(SYS_exit, status, 0, 0);
	}
}

__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	sf_image_ends();
	sf_exit_group_now(status);
}

/* quick_exit runs the at_quick_exit handlers, then glibc's internal
 * _exit, which no wrapper sees: a handler registered at start-up (the
 * process's first, so it runs last, after the program's) ends the image
 * there, with the status this wrapper noted. */
typedef void (*quick_exit_fn)(int) __attribute__((noreturn));
static quick_exit_fn real_quick_exit, real_quick_exit_compat;
static int quick_status;

static void quick_exit_hook(void)
{
	sf_image_ends();
	sf_log_exit_called(quick_status);
}

/* Only for a runtime loaded with the process (init.c), as on_exit. */
void sf_watch_quick_exit(void)
{
	at_quick_exit(quick_exit_hook);
}

static void quick_exit_resolve(void)
{
	real_quick_exit = (quick_exit_fn)sf_real_v("quick_exit", SF_GLIBC_QUICK_EXIT_VERSION);
	real_quick_exit_compat = (quick_exit_fn)sf_real_v("quick_exit", SF_GLIBC_QUICK_EXIT_COMPAT);
}

__attribute__((noreturn)) static void quick_exit_via(quick_exit_fn *fn, int status)
{
	quick_status = status;
	if (!*fn)
		quick_exit_resolve();
	if (*fn)
		(*fn)(status);
	_exit(status); /* no libc quick_exit found (never on glibc) */
}

/* quick_exit carries glibc's two versions of it (exports.map), each going
 * on to libc's of the same version: the first one also runs the thread's
 * thread_local destructors, and a program linked against it got the
 * default's behaviour while the wrapper stood unversioned in front of
 * both. */
__attribute__((visibility("default"), noreturn)) void sf_quick_exit(int status)
{
	quick_exit_via(&real_quick_exit, status);
}
__asm__(".symver sf_quick_exit, quick_exit@@" SF_GLIBC_QUICK_EXIT_VERSION ", remove");

__attribute__((visibility("default"), noreturn)) void sf_quick_exit_compat(int status)
{
	quick_exit_via(&real_quick_exit_compat, status);
}
__asm__(".symver sf_quick_exit_compat, quick_exit@" SF_GLIBC_QUICK_EXIT_COMPAT ", remove");

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	_exit(status);
}

__attribute__((visibility("default"), noreturn)) void abort(void)
{
	sf_snapshot_settle();
	if (!real_abort)
		real_abort = (abort_fn)sf_real("abort");
	if (real_abort)
		real_abort();
	__builtin_trap(); /* no libc abort found (never on glibc) */
}

/* The wrappers defined below sf_hooks_resolve. */
static void late_resolve(void)
{
	real__Fork = (fork_fn)sf_real("_Fork");
	quick_exit_resolve();
	cred_resolve();
}
