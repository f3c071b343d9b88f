/* Seccomp filters the program installs (issue 24): a sandbox's allow-list
 * (OpenSSH's preauth child, a codec's sandbox) kills the process at the
 * first system call it does not name, and the runtime's own calls on the
 * program's threads (a signal mask around a slot's hand-off, the thread's
 * name, the log's end at exit) are not on such lists.
 *
 * Each filter installed through the runtime's wrappers (prctl, and
 * syscall() with SYS_prctl or SYS_seccomp: libseccomp's way) is copied
 * here before the call, while the thread may still make any call. The
 * filters are classic BPF over struct seccomp_data, and this file runs
 * them (sf_seccomp_allows) the way the kernel does: every filter of the
 * chain, the action of highest precedence wins. They are kept for the
 * whole process, whichever thread installed them: a filter applies to its
 * thread and the threads and processes it makes later, so taking it for
 * every program thread can only make the runtime more careful.
 *
 * Before the install, the calls the runtime makes on program threads from
 * then on are tried against the chain with it. The thread's name
 * (prctl PR_GET_NAME, at each hand-off) is left as it was where it is
 * refused. Where anything the event path needs is refused (rt_sigprocmask,
 * futex; without a writer thread the log's writes too), tracing stops for
 * good first, as for SECCOMP_MODE_STRICT (switch.c: every sled unpatched
 * while mprotect is still allowed), the log says so (sf_header
 * seccomp_stopped: record reports it), and the exit path makes none of its
 * own checks (sf_sandbox_limited). The program runs on, untraced.
 *
 * Filters inherited at exec: the new image's runtime cannot read them
 * back. An exec under the chain goes untraced where it refuses any call
 * the runtime makes (sf_seccomp_exec_untraced); one that stays traced
 * says how many filters are known (SFTRACE_SECCOMP_FILTERS), and a
 * runtime that starts under more (a static launcher's install, a raw
 * system call instruction's) makes no call (sf_seccomp_start_unknown)
 * but the loader's open and close of a file record watches.
 * A container's filters, which record runs under too, are known.
 *
 * Not seen: SECCOMP_FILTER_FLAG_TSYNC over a writer thread whose calls
 * the filter refuses, a raw install's effect on this process's own calls
 * (docs/DESIGN.md, "Seccomp filters"). */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "runtime/runtime.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number everywhere (asm-generic too) */
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#if defined(__x86_64__)
#define SF_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SF_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define MAX_INSNS 4096 /* BPF_MAXINSNS: the kernel refuses longer ones */

struct filter {
	struct filter *prev;
	size_t map_len;
	unsigned len;
	struct sock_filter insn[];
};

static struct filter *chain; /* newest first */
int sf_sandbox_limited SF_HIDDEN;      /* the exit path makes none of its own checks (exit_path refused) */
int sf_sandbox_no_thread_name SF_HIDDEN; /* prctl(PR_GET_NAME) refused */
int sf_sandbox_no_notes SF_HIDDEN;      /* a note's calls refused: no note from now on (notes.c) */
int sf_sandbox_no_cli SF_HIDDEN;        /* sftrace filter's child refused: the object stays untraced (filter.c) */
int sf_sandbox_no_vm_readv SF_HIDDEN;  /* process_vm_readv refused: args.c reads no string with it */
int sf_sandbox_no_populate SF_HIDDEN;  /* madvise(MADV_POPULATE_WRITE) refused: logfile.c touches the pages */
int sf_sandbox_no_yield SF_HIDDEN;     /* sched_yield refused: rt_libc.c's sf_yield naps on a futex */
int sf_sandbox_no_nanosleep SF_HIDDEN; /* nanosleep refused: sf_nap waits on a futex */
int sf_sandbox_no_clock SF_HIDDEN;     /* clock_gettime refused: clock.c's counter line */

/* One filter over d: its return value, or SECCOMP_RET_KILL_PROCESS for a
 * program the kernel would not have taken (it is checked there too). */
static uint32_t run_filter(const struct filter *f, const struct seccomp_data *d, uint32_t *loaded)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {0};
	const unsigned char *data = (const unsigned char *)d;
	for (unsigned pc = 0; pc < f->len; pc++) {
		const struct sock_filter *i = &f->insn[pc];
		uint32_t k = i->k, src = BPF_SRC(i->code) == BPF_X ? X : k;
		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
			if (BPF_MODE(i->code) == BPF_ABS && BPF_SIZE(i->code) == BPF_W && k % 4 == 0 &&
			    k + 4 <= sizeof(*d)) {
				__builtin_memcpy(&A, data + k, 4);
				*loaded |= 1u << (k / 4);
			}
			else if (BPF_MODE(i->code) == BPF_IMM)
				A = k;
			else if (BPF_MODE(i->code) == BPF_MEM && k < BPF_MEMWORDS)
				A = M[k];
			else if (BPF_MODE(i->code) == BPF_LEN)
				A = sizeof(*d);
			else
				return SECCOMP_RET_KILL_PROCESS;
			break;
		case BPF_LDX:
			if (BPF_MODE(i->code) == BPF_IMM)
				X = k;
			else if (BPF_MODE(i->code) == BPF_MEM && k < BPF_MEMWORDS)
				X = M[k];
			else if (BPF_MODE(i->code) == BPF_LEN)
				X = sizeof(*d);
			else
				return SECCOMP_RET_KILL_PROCESS;
			break;
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return SECCOMP_RET_KILL_PROCESS;
			M[k] = BPF_CLASS(i->code) == BPF_ST ? A : X;
			break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_ADD: A += src; break;
			case BPF_SUB: A -= src; break;
			case BPF_MUL: A *= src; break;
			case BPF_DIV: if (!src) return SECCOMP_RET_KILL_PROCESS; A /= src; break;
			case BPF_MOD: if (!src) return SECCOMP_RET_KILL_PROCESS; A %= src; break;
			case BPF_AND: A &= src; break;
			case BPF_OR: A |= src; break;
			case BPF_XOR: A ^= src; break;
			case BPF_LSH: A = src < 32 ? A << src : 0; break;
			case BPF_RSH: A = src < 32 ? A >> src : 0; break;
			case BPF_NEG: A = -A; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			break;
		case BPF_JMP: {
			int t;
			switch (BPF_OP(i->code)) {
			case BPF_JA:
				pc += k;
				continue;
			case BPF_JEQ: t = A == src; break;
			case BPF_JGT: t = A > src; break;
			case BPF_JGE: t = A >= src; break;
			case BPF_JSET: t = (A & src) != 0; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			pc += t ? i->jt : i->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(i->code) == BPF_A ? A : k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				X = A;
			else
				A = X;
			break;
		default:
			return SECCOMP_RET_KILL_PROCESS;
		}
	}
	return SECCOMP_RET_KILL_PROCESS; /* ran off the end: the kernel refuses such a program */
}

/* 1 if every filter of the chain lets this call through (ALLOW or LOG:
 * the kernel runs it; any other action is a kill, a signal, an error or a
 * tracer's business, none of which the runtime may cause). */
/* As sf_seccomp_allows, and 0 too where the verdict read an argument
 * whose bit is set in loose (one the runtime cannot pin: a descriptor, a
 * pointer): the filter might refuse the value the runtime will really pass
 * (a kill for fd != 0 passes a probe with fd 0). */
static int allows_pinned(unsigned loose, long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	struct seccomp_data d = {.nr = (int)nr, .arch = SF_AUDIT_ARCH, .instruction_pointer = 0,
				 .args = {(uint64_t)a0, (uint64_t)a1, (uint64_t)a2, (uint64_t)a3, (uint64_t)a4,
					  (uint64_t)a5}};
	uint32_t loose_words = 0;
	for (int i = 0; i < 6; i++)
		if (loose & (1u << i))
			loose_words |= 3u << (offsetof(struct seccomp_data, args) / 4 + 2 * i);
	for (const struct filter *f = __atomic_load_n(&chain, __ATOMIC_ACQUIRE); f; f = f->prev) {
		uint32_t loaded = 0;
		uint32_t act = run_filter(f, &d, &loaded) & SECCOMP_RET_ACTION_FULL;
		if (act != SECCOMP_RET_ALLOW && act != SECCOMP_RET_LOG)
			return 0;
		if (loaded & loose_words)
			return 0;
	}
	return 1;
}

/* The chain refuses nr whatever its arguments: some filter's verdict
 * read none of them and refused. */
static int surely_refused(long nr)
{
	struct seccomp_data d = {.nr = (int)nr, .arch = SF_AUDIT_ARCH};
	uint32_t arg_words = 0;
	for (int i = 0; i < 6; i++)
		arg_words |= 3u << (offsetof(struct seccomp_data, args) / 4 + 2 * i);
	arg_words |= 3u << (offsetof(struct seccomp_data, instruction_pointer) / 4);
	for (const struct filter *f = __atomic_load_n(&chain, __ATOMIC_ACQUIRE); f; f = f->prev) {
		uint32_t loaded = 0;
		uint32_t act = run_filter(f, &d, &loaded) & SECCOMP_RET_ACTION_FULL;
		if (act != SECCOMP_RET_ALLOW && act != SECCOMP_RET_LOG && !(loaded & arg_words))
			return 1;
	}
	return 0;
}

int sf_seccomp_allows(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	return allows_pinned(0, nr, a0, a1, a2, a3, a4, a5);
}

struct call {
	long nr, a[6];
};

static uint64_t word;
#define P ((long)&word)

/* The arguments of c the runtime cannot pin (bit i: argument i): its
 * descriptors (the log's, /proc's: any number) and its pointers. */
static unsigned loose_args(const struct call *c)
{
	unsigned m = 0;
	for (int i = 0; i < 6; i++)
		if (c->a[i] == P)
			m |= 1u << i;
	switch (c->nr) {
	case SYS_pwrite64:
	case SYS_pwritev:
	case SYS_fallocate:
	case SYS_fstat:
	case SYS_fcntl:
	case SYS_ftruncate:
	case SYS_close:
	case SYS_write:
	case SYS_read:
	case SYS_fchown:
	case SYS_setsockopt:
	case SYS_getsockopt:
	case SYS_connect:
	case SYS_sendmsg:
	case SYS_recvmsg:
		m |= 1u;
		break;
	case SYS_pread64:
	case SYS_getdents64:
		m |= 1u;
		break;
	case SYS_sendfile:
	case SYS_pidfd_getfd:
		m |= 3u;
		break;
	case SYS_linkat:
		m |= (c->a[0] != AT_FDCWD ? 1u : 0) | 4u;
		break;
	case SYS_openat:
		if (c->a[0] != AT_FDCWD)
			m |= 1u;
		break;
	case SYS_mmap:
		if (!(c->a[3] & MAP_ANONYMOUS))
			m |= 1u << 4;
		break;
	}
	return m;
}

/* The first call of list[n] the chain refuses, or whose verdict hangs on
 * an argument the runtime cannot pin: its number, -1 if none. */
static long first_refused(const struct call *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!allows_pinned(loose_args(&list[i]), list[i].nr, list[i].a[0], list[i].a[1], list[i].a[2], list[i].a[3], list[i].a[4],
				       list[i].a[5]))
			return list[i].nr;
	return -1;
}
#define FIRST_REFUSED(l) first_refused(l, sizeof(l) / sizeof(l[0]))

/* On every program thread: pthread_sigmask around a slot's hand-off and
 * the runtime's locks, hand-offs to the writer and waits for a slot, a
 * new thread's first event (its memory), the exit. */
static const struct call event_path[] = {
	{SYS_rt_sigprocmask, {SIG_SETMASK, P, P, 8}},
	{SYS_rt_sigprocmask, {SIG_SETMASK, P, 0, 8}},
	{SYS_futex, {P, FUTEX_WAKE_PRIVATE, 0x7fffffff}},
	{SYS_futex, {P, FUTEX_WAKE_PRIVATE, 1}},
	{SYS_futex, {P, FUTEX_WAIT_PRIVATE, 0, 0}},
	{SYS_futex, {P, FUTEX_WAIT_PRIVATE, 0, P}},
	{SYS_futex, {P, FUTEX_WAIT_PRIVATE, 2, P}},
	{SYS_getpid, {0}},
	{SYS_gettid, {0}},
	{SYS_mmap, {0, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0}},
	{SYS_munmap, {P, 65536}},
	{SYS_exit_group, {0}},
};

/* Without a writer thread (a forked child, --writer sync, a writer that
 * left) the hand-offs open, size, map and write the log themselves. */
static const struct call sync_path[] = {
	{SYS_pwrite64, {0, P, 4096, 0}},
	{SYS_pwritev, {0, P, 2, 0}},
	{SYS_fallocate, {0, 0, 0, 65536}},
	{SYS_mmap, {0, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, 0, 0}},
	{SYS_munmap, {P, 65536}},
	{SYS_openat, {AT_FDCWD, P, O_RDWR | O_CLOEXEC, 0}},
	{SYS_close, {0}},
	{SYS_fstat, {0, P}},
	{SYS_fcntl, {0, F_DUPFD_CLOEXEC, 0}},
	{SYS_mprotect, {P, 4096, PROT_READ | PROT_WRITE}},
};

/* At the image's end (objects.c, sf_objects_image_ends: has the
 * executable's file been replaced?) and, without a log, notes.c's note:
 * left out where refused (sf_sandbox_limited), tracing goes on. */
static const struct call exit_path[] = {
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_CLOEXEC, 0}},
	{SYS_fcntl, {0, F_DUPFD_CLOEXEC, 0}},
	{SYS_fstat, {0, P}},
	{SYS_newfstatat, {AT_FDCWD, P, P, 0}},
	{SYS_close, {0}},
};

/* The writer thread's own: the idle wait, the log's writes and space,
 * its /proc reads. */
static const struct call writer_path[] = {
	{SYS_futex_waitv, {P, 2, 0, P, CLOCK_MONOTONIC}},
	{SYS_futex, {P, FUTEX_WAKE_PRIVATE, 0x7fffffff}},
	{SYS_futex, {P, FUTEX_WAKE_PRIVATE, 1}},
	{SYS_futex, {P, FUTEX_WAIT_PRIVATE, 0, P}},
	{SYS_gettid, {0}},
	{SYS_getpid, {0}},
	{SYS_pwritev, {0, P, 2, 0}},
	{SYS_pwrite64, {0, P, 4096, 0}},
	{SYS_fallocate, {0, 0, 0, 65536}},
	{SYS_mmap, {0, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, 0, 0}},
	{SYS_munmap, {P, 65536}},
	{SYS_openat, {0, P, O_RDONLY | O_CLOEXEC, 0}},
	{SYS_close, {0}},
};

/* A fork child's own (hooks.c's child handler, its keeper thread,
 * logfile.c's log creation, args.c's cmdline, objects.c's image check),
 * all made under the chain the child inherits. The keeper channel
 * (notes.c: a child that can no longer create its log in record's
 * directory after a credential change asks record's keeper over a socket)
 * is among them. */
static const struct call fork_path[] = {
	{SYS_getpid, {0}},
	{SYS_gettid, {0}},
	{SYS_getppid, {0}},
	{SYS_prctl, {PR_GET_TID_ADDRESS, P, 0, 0, 0}},
	{SYS_mmap, {0, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0}},
	{SYS_mmap, {0, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0}},
	{SYS_mmap, {0, P, PROT_READ | PROT_WRITE, MAP_SHARED, 0, P}},
	{SYS_mprotect, {P, 4096, PROT_NONE}},
	{SYS_munmap, {P, P}},
	{SYS_clone, {CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, P, 0, 0, 0}},
	{SYS_close_range, {0, ~0u, 0}},
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_CLOEXEC | O_PATH | O_DIRECTORY, 0}},
	{SYS_openat, {AT_FDCWD, P, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600}},
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_CLOEXEC, 0}},
	{SYS_fcntl, {0, F_DUPFD_CLOEXEC, P}},
	{SYS_close, {0}},
	{SYS_fstat, {0, P}},
	{SYS_newfstatat, {AT_FDCWD, P, P, 0}},
	{SYS_fallocate, {0, 0, P, P}},
	{SYS_prlimit64, {0, RLIMIT_NOFILE, 0, P}},
	{SYS_prlimit64, {0, RLIMIT_FSIZE, 0, P}},
	{SYS_read, {0, P, P}},
	{SYS_rt_sigprocmask, {SIG_SETMASK, P, P, 8}},
	{SYS_futex, {P, FUTEX_WAKE_PRIVATE, 0x7fffffff}},
	{SYS_futex, {P, FUTEX_WAIT_PRIVATE, P, 0}},
	{SYS_futex_waitv, {P, 2, 0, P, CLOCK_MONOTONIC}},
#ifdef SYS_arch_prctl
	{SYS_arch_prctl, {0x1002 /* ARCH_SET_FS */, P}},
#endif
	{SYS_socket, {AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0}},
	{SYS_setsockopt, {0, SOL_SOCKET, P, P, P}},
	{SYS_connect, {0, P, P}},
	{SYS_getsockopt, {0, SOL_SOCKET, SO_PEERCRED, P, P}},
	{SYS_sendmsg, {0, P, P}},
	{SYS_recvmsg, {0, P, P}},
	{SYS_exit, {P}},
	{SYS_exit_group, {P}},
};

/* Before a credential change (hooks.c, before_cred_change): the log made
 * first and the note file handed to the new uid (notes.c); glibc's setxid
 * signals every other thread (the writer, the keeper) with tgkill; the
 * keeper follows the change (writer.c, sf_keeper_follow). */
static const struct call cred_path[] = {
	{SYS_geteuid, {0}},
	{SYS_getegid, {0}},
	{SYS_getpid, {0}},
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_PATH | O_DIRECTORY, 0}},
	{SYS_openat, {0, P, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0600}},
	{SYS_openat, {AT_FDCWD, P, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600}},
	{SYS_fstat, {0, P}},
	{SYS_fchown, {0, P, P}},
	{SYS_fcntl, {0, F_DUPFD_CLOEXEC, P}},
	{SYS_fallocate, {0, 0, P, P}},
	{SYS_mmap, {0, P, PROT_READ | PROT_WRITE, MAP_SHARED, 0, P}},
	{SYS_close, {0}},
	{SYS_futex, {P, FUTEX_WAKE_PRIVATE, 0x7fffffff}},
	{SYS_futex, {P, FUTEX_WAIT_PRIVATE, P, P}},
};

/* A note (notes.c, note_write_here: sf_rt_message, sf_rt_report) made on
 * a program thread. */
static const struct call note_path[] = {
	{SYS_getpid, {0}},
	{SYS_geteuid, {0}},
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_PATH | O_DIRECTORY, 0}},
	{SYS_openat, {0, P, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0600}},
	{SYS_fstat, {0, P}},
	{SYS_write, {0, P, P}},
	{SYS_close, {0}},
};

/* glibc's setxid (a set*id call with threads beside the caller): for each
 * other thread getpid and tgkill(pid, tid, SIGSETXID, 33), then a futex
 * wait for their handlers. Made for the runtime's threads too. */
static const struct call setxid_path[] = {
	{SYS_getpid, {0}},
	{SYS_tgkill, {P, P, 33}},
	{SYS_futex, {P, FUTEX_WAIT_PRIVATE, P, 0}},
	{SYS_futex, {P, FUTEX_WAKE_PRIVATE, P}},
};

/* sftrace filter run at a dlopen (filter.c, sf_cli_run): a stack, the
 * signal mask, the waiter child (CLONE_VM | CLONE_VFORK, exit signal 0)
 * and its exec child, their signal dispositions, exec and exit, the
 * waits. What the exec'd CLI does under the chain is its own process's
 * business (a refusal fails it: "could not make the filter"). */
static const struct call cli_path[] = {
	{SYS_mmap, {0, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0}},
	{SYS_munmap, {P, P}},
	{SYS_rt_sigprocmask, {SIG_SETMASK, P, P, 8}},
	{SYS_rt_sigaction, {P, P, P, 8}},
	{SYS_clone, {CLONE_VM | CLONE_VFORK, P, P, P, P}},
	{SYS_clone, {CLONE_VM | CLONE_VFORK | SIGCHLD, P, P, P, P}},
	{SYS_execve, {P, P, P}},
	{SYS_faccessat, {AT_FDCWD, P, F_OK, 0}},
	{SYS_wait4, {P, P, P, 0}},
	{SYS_exit, {P}},
};

/* A dlopen (or a dlclose's re-scan) under the chain (loader_hook.c,
 * sf_loader_event): objects.c's scan (the object's file opened, its
 * sections read, its path made absolute, the table of loaded objects
 * probed with mincore), patch.c's sleds (mprotect, or /proc/self/mem and
 * its thread list while other threads run), got_bind.c's references.
 * Where any is refused, objects loaded from then on stay untraced
 * (sf_seccomp_refuses_scan): the program's dlopen runs as untraced. */
static const struct call scan_path[] = {
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_CLOEXEC, 0}},
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0}},
	{SYS_openat, {AT_FDCWD, P, O_RDWR | O_CLOEXEC, 0}},
	{SYS_fstat, {0, P}},
	{SYS_pread64, {0, P, P, P}},
	{SYS_pwrite64, {0, P, P, P}},
	{SYS_getdents64, {0, P, P}},
	{SYS_close, {0}},
	{SYS_readlinkat, {AT_FDCWD, P, P, P}},
	{SYS_getcwd, {P, P}},
	{SYS_mincore, {P, 4096, P}},
	{SYS_mprotect, {P, P, PROT_READ}},
	{SYS_mprotect, {P, P, PROT_READ | PROT_WRITE}},
	{SYS_mprotect, {P, P, PROT_READ | PROT_EXEC}},
	{SYS_mmap, {0, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0}},
};

/* Writable text (patch.c) needs no check here: every mprotect that
 * makes text writable asks the filters first (patch_segment,
 * sf_text_make_writable), and where one refuses, whatever its verdict
 * (W^X: SELinux's execmem, a filter standing in for it, one that kills),
 * the sleds are written through /proc/self/mem, whose calls scan_path
 * has. */

/* A writer thread made under the chain (writer.c, sf_writer_start: again
 * after unshare or setns, ns.c; or at the first instrumented dlopen):
 * glibc's pthread_create and the new thread's start (its stack, clone,
 * robust list, rseq, scheduling), the name, the CPUs, the writer's own
 * table (logfile.c: close_range, unshare(CLONE_FILES) for a pthread
 * writer, the log's descriptor taken over with a pidfd; the raw writer is
 * a clone without CLONE_FILES, with it under valgrind), record --paused's
 * control page
 * (switch.c: memfd_create, ftruncate, seals, madvise), the switch's
 * CPU clock. The writer's running calls are writer_path. */
static const struct call writer_start_path[] = {
	{SYS_mmap, {0, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0}},
	{SYS_mprotect, {P, P, PROT_NONE}},
	{SYS_clone3, {P, P}},
	{SYS_clone, {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
			     CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
		     P, P, P, P}},
	{SYS_clone, {CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
			     CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | CLONE_UNTRACED,
		     P, P, P, P}},
	{SYS_clone, {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
			     CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | CLONE_UNTRACED,
		     P, P, P, P}},
	{SYS_set_robust_list, {P, P}},
#ifdef SYS_rseq
	{SYS_rseq, {P, P, 0, P}},
#endif
	{SYS_rt_sigprocmask, {SIG_SETMASK, P, P, 8}},
	{SYS_sched_get_priority_min, {SCHED_OTHER}},
	{SYS_sched_get_priority_max, {SCHED_OTHER}},
	{SYS_sched_setscheduler, {0, SCHED_OTHER, P}},
	{SYS_sched_setscheduler, {0, SCHED_BATCH, P}},
	{SYS_sched_setaffinity, {0, P, P}},
	{SYS_openat, {AT_FDCWD, P, O_RDWR | O_CLOEXEC, 0}},
	{SYS_write, {0, P, P}},
	{SYS_close_range, {~0u, ~0u, 0}},
	{SYS_close_range, {0, ~0u, 0}},
	{SYS_close_range, {0, P, 0}},   /* every copy below the log's */
	{SYS_close_range, {P, ~0u, 0}}, /* and above it */
	{SYS_unshare, {CLONE_FILES}},
	{SYS_pidfd_open, {P, O_EXCL}},
	{SYS_pidfd_getfd, {P, P, 0}},
	{SYS_prlimit64, {0, RLIMIT_NOFILE, 0, P}},
	{SYS_fcntl, {0, F_DUPFD_CLOEXEC, P}},
	{SYS_memfd_create, {P, MFD_CLOEXEC | MFD_ALLOW_SEALING | 0x8u}},
	{SYS_memfd_create, {P, MFD_CLOEXEC | MFD_ALLOW_SEALING}},
	{SYS_ftruncate, {0, P}},
	{SYS_fcntl, {0, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL}},
	{SYS_madvise, {P, P, MADV_DONTFORK}},
	{SYS_clock_gettime, {CLOCK_THREAD_CPUTIME_ID, P}},
};

/* The writer stopped by a program thread (ns.c, writer_stop_masked: at
 * unshare, setns, a lowered RLIMIT_NPROC): the signal mask, the join,
 * the log's descriptor back in the program's table (pidfd), the wait for
 * the thread to leave the group (/proc/self/task); hand-offs are then
 * synchronous (sync_path). */
static const struct call writer_stop_path[] = {
	{SYS_rt_sigprocmask, {SIG_SETMASK, P, P, 8}},
	{SYS_futex, {P, FUTEX_WAIT_PRIVATE, P, 0}},
	{SYS_futex, {P, FUTEX_WAKE_PRIVATE, P}},
	{SYS_futex, {P, FUTEX_WAIT, P, 0}},
	{SYS_pidfd_open, {P, O_EXCL}},
	{SYS_pidfd_getfd, {P, P, 0}},
	{SYS_prlimit64, {0, RLIMIT_NOFILE, 0, P}},
	{SYS_fcntl, {0, F_DUPFD_CLOEXEC, P}},
	{SYS_fstat, {0, P}},
	{SYS_close, {0}},
	{SYS_gettid, {0}},
	{SYS_munmap, {P, P}},
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0}},
	{SYS_getdents64, {0, P, P}},
};

/* The writer's hand-over (writer.c, leave_if_program_runs: the leader
 * has ended, program threads run on): each program thread then opens the
 * log again (logfile.c, log_reopen: by path, or the writer's offer taken
 * with pidfd_getfd), keeps it high (prlimit64, fcntl), maps and writes
 * its slots (sync_path), and with --ring writes the snapshots itself
 * (snapshot.c: an unnamed file linked in, or a temporary one renamed).
 * Where any is refused the writer stays, as it does without pidfds. */
static const struct call handover_path[] = {
	{SYS_openat, {AT_FDCWD, P, O_RDWR | O_CLOEXEC, 0}},
	{SYS_openat, {AT_FDCWD, P, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0}},
	{SYS_pidfd_open, {P, O_EXCL}},
	{SYS_pidfd_getfd, {P, P, 0}},
	{SYS_prlimit64, {0, RLIMIT_NOFILE, 0, P}},
	{SYS_fcntl, {0, F_DUPFD_CLOEXEC, P}},
	{SYS_fstat, {0, P}},
	{SYS_close, {0}},
	{SYS_gettid, {0}},
	{SYS_getpid, {0}},
	{SYS_tgkill, {P, P, 0}},
	{SYS_fallocate, {0, 0, P, P}},
	{SYS_mmap, {0, P, PROT_READ | PROT_WRITE, MAP_SHARED, 0, P}},
	{SYS_munmap, {P, P}},
	{SYS_pwrite64, {0, P, P, P}},
	{SYS_pwritev, {0, P, P, P}},
};

/* A --ring snapshot written by a program thread once the writer has
 * handed over (snapshot.c, sf_snapshot_serve_left): the log mapped
 * read-only, an unnamed file linked in (or a named one renamed), its
 * directory's path. Part of handover_path's check. */
static const struct call snapshot_path[] = {
	{SYS_openat, {0, P, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600}},
	{SYS_openat, {AT_FDCWD, P, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600}},
	{SYS_openat, {AT_FDCWD, P, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600}},
	{SYS_openat, {AT_FDCWD, P, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0}},
	{SYS_fstat, {0, P}},
	{SYS_write, {0, P, P}},
	{SYS_linkat, {AT_FDCWD, P, 0, P, AT_SYMLINK_FOLLOW}},
	{SYS_linkat, {0, P, 0, P, AT_EMPTY_PATH}},
	{SYS_renameat, {AT_FDCWD, P, AT_FDCWD, P}},
	{SYS_unlinkat, {AT_FDCWD, P, 0}},
	{SYS_close, {0}},
	{SYS_getcwd, {P, P}},
	{SYS_mmap, {0, P, PROT_READ, MAP_SHARED, 0, 0}},
	{SYS_madvise, {P, P, MADV_DONTFORK}},
};

/* A dup2 or dup3 of the program's onto the runtime's descriptor (fdguard.c,
 * dup_over): the runtime's moves first, under the gate (the signal mask,
 * sf_nap), to a free number found from the top of the table. Where
 * that is refused the runtime gives the descriptor up instead (its writes
 * then fail, counted), as where no number is free. */
static const struct call move_path[] = {
	{SYS_prlimit64, {0, RLIMIT_NOFILE, 0, P}},
	{SYS_fcntl, {0, F_DUPFD_CLOEXEC, P}},
	{SYS_rt_sigprocmask, {SIG_SETMASK, P, P, 8}},
};

/* An executable deleted since exec, saved beside the log as its OBJECT
 * chunk is written (objects.c, save_image: a fork child's first event
 * may come after an install). Where refused, the copy is not made (the
 * log names the lost path, as where the copy fails). */
static const struct call save_path[] = {
	{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_CLOEXEC, 0}},
	{SYS_openat, {AT_FDCWD, P, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600}},
	{SYS_fstat, {0, P}},
	{SYS_newfstatat, {AT_FDCWD, P, P, AT_SYMLINK_NOFOLLOW}},
	{SYS_geteuid, {0}},
	{SYS_prlimit64, {0, RLIMIT_FSIZE, 0, P}},
	{SYS_sendfile, {0, 0, P, P}},
	{SYS_renameat, {AT_FDCWD, P, AT_FDCWD, P}},
	{SYS_unlinkat, {AT_FDCWD, P, 0}},
	{SYS_close, {0}},
};

/* A clone with CLONE_VFORK and without CLONE_VM through syscall()
 * (hooks.c, fork_syscall): the parent waits on a word of a shared page
 * instead of in the kernel (vw_wait: the signals it holds, asked with
 * rt_sigaction; a futex wait with a timeout; waitid and kill(pid, 0) to
 * find the child gone), the child registers the word in its robust list
 * (set_robust_list, get_robust_list at its exec). Where any is refused
 * the clone keeps its CLONE_VFORK, as where no word is free. */
static const struct call vfork_wait_path[] = {
	{SYS_mmap, {0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0}},
	{SYS_rt_sigaction, {P, 0, P, 8}},
	{SYS_rt_sigprocmask, {SIG_BLOCK, P, P, 8}},
	{SYS_rt_sigprocmask, {SIG_SETMASK, P, 0, 8}},
	{SYS_futex, {P, FUTEX_WAIT, P, P}},
	{SYS_futex, {P, FUTEX_WAKE, 1}},
	{SYS_waitid, {P_PID, P, P, WEXITED | WNOHANG | WNOWAIT | __WALL, 0}},
	{SYS_kill, {P, 0}},
	{SYS_gettid, {0}},
	{SYS_set_robust_list, {P, P}},
	{SYS_get_robust_list, {0, P, P}},
};

#define CHAIN_REFUSES(l) (__atomic_load_n(&chain, __ATOMIC_ACQUIRE) && FIRST_REFUSED(l) >= 0)

int sf_seccomp_refuses_vfork_wait(void)
{
	return CHAIN_REFUSES(vfork_wait_path);
}

int sf_seccomp_refuses_scan(void)
{
	return CHAIN_REFUSES(scan_path);
}

/* The program may call unshare or setns under the chain (some filter
 * lets either through for some arguments), and the runtime could not take
 * its threads out of the way at the call (ns.c: the writer's or keeper's
 * stop, or the synchronous hand-offs after it, refused). Decided at each
 * install: the runtime's threads leave then (sf_seccomp_installing), and
 * none is made again under the chain (sf_writer_start, the keeper), so
 * that unshare(CLONE_NEWUSER), setns into a user or mount namespace find
 * the process alone as untraced. */
static int ns_stop_refused(void)
{
	if (!__atomic_load_n(&chain, __ATOMIC_ACQUIRE))
		return 0;
	if (surely_refused(SYS_unshare) && surely_refused(SYS_setns))
		return 0;
	return FIRST_REFUSED(writer_stop_path) >= 0 || FIRST_REFUSED(sync_path) >= 0;
}

int sf_seccomp_refuses_writer_start(void)
{
	return CHAIN_REFUSES(writer_path) || CHAIN_REFUSES(writer_start_path) || ns_stop_refused();
}

/* The writer may be stopped by a program thread: the stop's calls and,
 * without it, the synchronous hand-offs. */
int sf_seccomp_refuses_writer_stop(void)
{
	return CHAIN_REFUSES(writer_stop_path) || CHAIN_REFUSES(sync_path);
}

int sf_seccomp_refuses_handover(void)
{
	return CHAIN_REFUSES(handover_path) || CHAIN_REFUSES(sync_path) ||
	       (sf_config.ring_slots && CHAIN_REFUSES(snapshot_path));
}

int sf_seccomp_refuses_move(void)
{
	return CHAIN_REFUSES(move_path);
}

int sf_seccomp_refuses_save(void)
{
	return CHAIN_REFUSES(save_path);
}

/* sf_seccomp_allows, for a call whose argument 0 is a descriptor (any
 * number: a verdict that reads it counts as a refusal). */
int sf_seccomp_allows_fd_call(long nr, long a1, long a2)
{
	return allows_pinned(1u, nr, 0, a1, a2, 0, 0, 0);
}

/* The runtime's other system calls (tests/cases/test_seccomp_stop.py,
 * test_every_runtime_syscall_is_listed, greps src/runtime for SYS_ names
 * and fails on one that is in no table above and not here). Each with why
 * it is not checked at an install, or where it is checked at its use
 * (sf_seccomp_allows and the tables above, read at the call: cheap, the
 * chain is in memory). tests/cases/test_seccomp_ledger.py runs the paths
 * under filters that refuse each with KILL_PROCESS, ERRNO and TRAP.
 * SF_UNCHECKED dup dup2 dup3: the program's own, passed on by fdguard.c's wrappers (the same call untraced); the log's move at a dup2 onto it is move_path, checked at the dup2 (refused: the descriptor given up, its writes fail, counted)
 * SF_UNCHECKED execveat setns unshare setrlimit seccomp sigaltstack: the program's own, through wrappers (ns.c's writer stop and start around setns and unshare: writer_stop_path and sync_path decided at the install, ns_stop_refused: refused, the runtime's threads leave then; writer_start_path checked at the start; its NS_GET_NSTYPE ioctl asked only where allowed, else the call is taken as needing the process alone)
 * SF_UNCHECKED setuid setgid setreuid setregid setresuid setresgid setgroups setfsuid setfsgid capset: the program's own; the writer's and keeper's (sf_keeper_follow) are on their own threads
 * SF_UNCHECKED sched_setscheduler getgroups: on the writer's or keeper's thread, not under the chain (a writer made again under it: writer_start_path)
 * SF_UNCHECKED kill waitid set_robust_list get_robust_list: hooks.c's wait for a CLONE_VFORK clone (vfork_wait_path, checked at the clone; none after a stop)
 * SF_UNCHECKED pipe2: exec_env.c's popen, the program's own (glibc's popen makes the same pipe2; its system and popen kill at a cancellation as glibc's do)
 * SF_UNCHECKED clock_gettime: the vDSO serves MONOTONIC and REALTIME with no system call while the clock source has a vDSO mode (x86-64's TSC, arm64's counter: __kernel_clock_gettime); without one (hpet, acpi_pm, or the TSC found unstable and replaced at run time) every read is the system call, which the filter sees. So where the chain refuses it, sf_mono_ns reads the counter's line through two pairs taken while it was allowed (clock.c), and where events carry CLOCK_MONOTONIC itself (no stable counter) tracing stops. CLOCK_THREAD_CPUTIME_ID (switch.c) is always the system call, on the writer only (writer_start_path)
 * SF_UNCHECKED sched_yield nanosleep: the runtime's waits on program threads (sf_yield, sf_nap: the writer's drain, the descriptor gate, a ring's change); where the chain refuses either, a futex wait with a timeout stands in (a call the event path needs anyway)
 * SF_UNCHECKED madvise mincore: madvise MADV_DONTFORK on the writer's control page and on the log's read-only map for a snapshot (writer_start_path, snapshot_path); mincore in objects.c's scan of dlmopen namespaces (scan_path, checked at each dlopen: refused, objects loaded from then on stay untraced)
 * SF_UNCHECKED getcwd pread64 renameat unlinkat sendfile ftruncate memfd_create: getcwd and pread64 in a dlopen's scan (scan_path) and at a log made after an install (logfile.c, make_path_absolute: asked where allowed, else the path stays relative); renameat, unlinkat and sendfile in a deleted executable's copy (save_path, checked at the copy) and a snapshot (snapshot_path); ftruncate and memfd_create on the writer only (writer_start_path)
 * SF_UNCHECKED getdents64 getuid ioctl: ns.c's /proc/self/task count at a writer stop (writer_stop_path) and patch.c's at patching (scan_path); getuid at a lowered RLIMIT_NPROC and ioctl at setns(fd, 0), each asked only where allowed (else the writer stays, as with threads of the program's own)
 * SF_UNCHECKED sched_setaffinity: the writer's CPUs, at its start (writer_start_path)
 * SF_UNCHECKED pidfd_open pidfd_getfd: the writer's stop, start and hand-over (writer_stop_path, writer_start_path, handover_path: refused, the writer stays); a fork's keeper channel (notes.c, asked where allowed)
 * SF_UNCHECKED fchmod: trust.c asks sf_seccomp_allows first (a file the umask left short of 0600)
 * SF_UNCHECKED msync: stack.c's floor probes of an unlimited main stack, once in the runtime's constructor (sf_stack_init), before any code of the program's can install a filter (-z initfirst)
 * SF_UNCHECKED pkey_mprotect: the program's own, passed on by patch.c's mprotect and pkey_mprotect wrappers (the same call untraced); the runtime's own protection changes are mprotect, checked (W^X, sf_text_make_writable)
 * SF_UNCHECKED bind listen accept4 getrandom: notes.c's channel hand-over where pidfd_getfd fails, on a fork from a thread out of record's netns (unverified)
 */

/* A credential change is possible under the chain: some set*id call of
 * the wrapped ones (hooks.c, SF_CRED_CALLS) passes for some argument. */
static int cred_possible(void)
{
	static const long nrs[] = {SYS_setuid, SYS_setreuid, SYS_setresuid, SYS_setgid,
				   SYS_setregid, SYS_setresgid, SYS_setgroups};
	for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
		if (!surely_refused(nrs[i]))
			return 1;
	return 0;
}

/* A process can be made under the chain (fork, clone without
 * CLONE_THREAD): its runtime has no writer thread. clone3 is not asked:
 * no filter can read its flags, and glibc makes threads with it, processes
 * only as posix_spawn's CLONE_VM | CLONE_VFORK child, which records
 * nothing before its exec (a program's raw clone3 fork is not seen). */
static int forks_possible(int with_vfork)
{
	long fork_flags = CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD;
	(void)with_vfork;
	return sf_seccomp_allows(SYS_clone, fork_flags, 0, 0, P, 0, 0)
#ifdef SYS_fork
	       || sf_seccomp_allows(SYS_fork, 0, 0, 0, 0, 0, 0) ||
	       (with_vfork && sf_seccomp_allows(SYS_vfork, 0, 0, 0, 0, 0, 0))
#endif
		;
}

/* The first call the program's threads (and processes it forks) need that
 * the chain refuses, -1 if none. */
static long needed_refused(int writer_leaves)
{
	long nr = FIRST_REFUSED(event_path);
	if (nr < 0 && (!sf_writer_active() || writer_leaves || forks_possible(1)))
		nr = FIRST_REFUSED(sync_path);
	/* a vfork child runs on its parent's memory and records nothing:
	 * only a fork child makes these */
	if (nr < 0 && forks_possible(0))
		nr = FIRST_REFUSED(fork_path);
	if (nr < 0 && cred_possible())
		nr = FIRST_REFUSED(cred_path);
	return nr;
}

/* An exec under the chain (it survives exec): whether the new image's
 * runtime would meet a refusal (or a kill) at its start or on its event
 * path. The exec wrappers then run the new image without the runtime
 * (exec_env.c). Cheap: only with a chain, only at an exec. */
int sf_sandbox_stopped SF_HIDDEN; /* tracing stopped for a filter: no signal mask either at exit */

int sf_seccomp_exec_untraced(void)
{
	if (!__atomic_load_n(&chain, __ATOMIC_ACQUIRE))
		return 0;
	/* Tracing stopped for the chain: a new image's runtime would meet
	 * the same filter, and calls of its start not listed here (issue 24:
	 * geteuid for the notes directory's owner) would kill the child. */
	if (__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
		return 1;
	static const struct call start_path[] = {
		{SYS_openat, {AT_FDCWD, P, O_RDONLY | O_CLOEXEC, 0}},
		{SYS_read, {0, P, 4096}},
		{SYS_readlinkat, {AT_FDCWD, P, P, 4096}},
		{SYS_prctl, {PR_GET_NAME, P, 0, 0, 0}},
		{SYS_sched_getaffinity, {0, 128, P}},
		{SYS_clone3, {P, 88}},
		{SYS_clone, {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
				     CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
			     P, P, P, P}},
		{SYS_clone, {CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
				     CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | CLONE_UNTRACED,
			     P, P, P, P}},
	};
	/* The new image's runtime knows nothing of the chain (filters cannot
	 * be read back): it would make every call of its own unchecked, from
	 * its constructor on (the writer's start: sched_setaffinity,
	 * unshare(CLONE_FILES); the sleds' mprotect, W|X where text is
	 * written in place; ftruncate at the log's end). So it runs traced
	 * only where the chain refuses none of the runtime's calls, with any
	 * argument the runtime may pass (issue 24, skeptic24v2). */
	static const struct call rest_path[] = {
		{SYS_mprotect, {P, P, PROT_READ | PROT_WRITE | PROT_EXEC}},
		{SYS_mprotect, {P, P, PROT_EXEC}},
		{SYS_mmap, {0, P, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0}},
		{SYS_sched_yield, {0}},
		{SYS_nanosleep, {P, 0}},
		{SYS_clock_nanosleep, {CLOCK_MONOTONIC, 0, P, 0}},
		{SYS_clock_gettime, {CLOCK_MONOTONIC, P}},
		{SYS_clock_gettime, {CLOCK_REALTIME, P}},
		{SYS_madvise, {P, P, 23 /* MADV_POPULATE_WRITE */}},
		{SYS_process_vm_readv, {P, P, 1, P, 1, 0}},
		{SYS_getcwd, {P, P}},
		{SYS_getuid, {0}},
		{SYS_geteuid, {0}},
		{SYS_ioctl, {0, P, 0}},
		{SYS_dup, {0}},
		{SYS_dup3, {0, P, O_CLOEXEC}},
		{SYS_pipe2, {P, O_CLOEXEC}},
		{SYS_fchmod, {0, 0600}},
		{SYS_getrandom, {P, P, 0}},
		{SYS_ftruncate, {0, P}},
		{SYS_unshare, {CLONE_FILES}},
	};
	return FIRST_REFUSED(event_path) >= 0 || FIRST_REFUSED(sync_path) >= 0 || FIRST_REFUSED(writer_path) >= 0 ||
	       FIRST_REFUSED(exit_path) >= 0 || FIRST_REFUSED(start_path) >= 0 ||
	       FIRST_REFUSED(writer_start_path) >= 0 || FIRST_REFUSED(writer_stop_path) >= 0 ||
	       FIRST_REFUSED(scan_path) >= 0 || FIRST_REFUSED(note_path) >= 0 || FIRST_REFUSED(fork_path) >= 0 ||
	       FIRST_REFUSED(handover_path) >= 0 || FIRST_REFUSED(move_path) >= 0 || FIRST_REFUSED(rest_path) >= 0;
}

/* ---- filters inherited at exec ----
 *
 * Filters cannot be read back (without CAP_SYS_ADMIN), and a new image's
 * runtime knows nothing of those it starts under. The tracer says how
 * many it knows (SFTRACE_SECCOMP_FILTERS): record its own (a container's
 * profile, which allows what a normal program needs: traced as ever), a
 * traced parent's exec those it started with plus the chain it saw
 * installed, each of which sf_seccomp_exec_untraced found refusing none
 * of the runtime's calls (else the child runs without the runtime). More
 * filters at start than that (Seccomp_filters in /proc/self/status) were
 * installed by a process the tracer did not watch: an untraced (static)
 * launcher, a raw system call. Any call the runtime makes may then kill
 * the program (KILL_PROCESS on unshare, sched_setaffinity, ftruncate, an
 * mprotect W|X: skeptic24v2), so it stays out: the program runs
 * untraced, no log, no note (a note's calls may be refused as well). */
static int dormant;               /* started under unknown filters: no call of the runtime's at all */
static uint32_t start_filters;   /* Seccomp_filters at start */
static int start_filters_known;  /* ... and it was read */

static int status_number(const char *buf, const char *key, uint32_t *v)
{
	size_t kl = strlen(key);
	for (const char *p = buf; *p;) {
		if (!memcmp(p, key, kl)) {
			p += kl;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p < '0' || *p > '9')
				return 0;
			uint32_t n = 0;
			while (*p >= '0' && *p <= '9' && n < 100000000u)
				n = n * 10 + (uint32_t)(*p++ - '0');
			*v = n;
			return 1;
		}
		while (*p && *p != '\n')
			p++;
		if (*p)
			p++;
	}
	return 0;
}

/* 1 if the process starts under filters the tracer does not know of.
 * Read with the calls the loader made to map this library (openat
 * O_RDONLY | O_CLOEXEC, read, close): a filter that let the program
 * start lets them through. Without the variable (the runtime preloaded
 * by hand), or with "any", as before: traced. */
int sf_seccomp_start_unknown(void)
{
	const char *known = getenv(SF_ENV(SECCOMP_FILTERS));
	if (!known || !known[0] || !strcmp(known, "any"))
		return 0;
	uint32_t k = 0;
	for (const char *p = known; *p; p++) {
		if (*p < '0' || *p > '9' || k > 100000000u)
			return 0; /* not record's: as without it */
		k = k * 10 + (uint32_t)(*p - '0');
	}
	static char buf[4096];
	long fd = sf_syscall3(SYS_openat, AT_FDCWD, (long)"/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* no /proc: nothing to go by, as before */
	size_t len = 0;
	for (;;) {
		long r = sf_syscall3(SYS_read, fd, (long)(buf + len), (long)(sizeof(buf) - 1 - len));
		if (r <= 0)
			break;
		len += (size_t)r;
		buf[len] = 0;
		const char *at = strstr(buf, "\nSeccomp_filters:");
		if (len == sizeof(buf) - 1 || (at && strchr(at + 1, '\n')))
			break; /* the line is in: no read for the end (one call fewer) */
	}
	sf_syscall3(SYS_close, fd, 0, 0);
	buf[len] = 0;
	uint32_t mode = 0, n = 0;
	if (!status_number(buf, "Seccomp:", &mode))
		return 0; /* not said: nothing to go by, as before */
	if (mode != SECCOMP_MODE_FILTER) {
		start_filters_known = 1; /* none */
		return 0;
	}
	if (status_number(buf, "Seccomp_filters:", &n)) {
		start_filters = n;
		start_filters_known = 1;
		if (n <= k)
			return 0;
	} /* else before Linux 5.9: filters, and how many is not said (record
	   * under filters itself says "any") */
	__atomic_store_n(&dormant, 1, __ATOMIC_RELEASE);
	/* record's line: its watched file opened and closed as the loader
	 * opens a library (format/sf_env.h), nothing else */
	const char *dir = getenv(SF_ENV(NOTES_DIR));
	size_t dl = dir ? strlen(dir) : 0;
	if (dl && dir[0] == '/' && dl + sizeof(SF_UNSEEN_FILTER_FILE) + 1 < sizeof(buf)) {
		memcpy(buf, dir, dl);
		buf[dl] = '/';
		memcpy(buf + dl + 1, SF_UNSEEN_FILTER_FILE, sizeof(SF_UNSEEN_FILTER_FILE));
		fd = sf_syscall3(SYS_openat, AT_FDCWD, (long)buf, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			sf_syscall3(SYS_close, fd, 0, 0);
	}
	return 1;
}

/* The count a child exec'd now inherits, the chain's installs added:
 * -1 where the variable goes on as it came (never read, or no chain). */
long sf_seccomp_known_filters(void)
{
	unsigned n = 0;
	for (const struct filter *f = __atomic_load_n(&chain, __ATOMIC_ACQUIRE); f; f = f->prev)
		n++;
	if (!n || !start_filters_known)
		return -1;
	return (long)start_filters + n; /* start_filters 0 where it was not read: then none was there */
}

static int writer_refused; /* the chain refuses a call of the writer's */

/* A writer thread made now would be under the chain, which refuses its calls. */
int sf_seccomp_refuses_writer(void)
{
	return __atomic_load_n(&writer_refused, __ATOMIC_ACQUIRE);
}

/* A keeper thread (writer.c) cannot be made or run under the chain: the
 * writer's calls, the clone that makes it, its first close_range. */
int sf_seccomp_refuses_keeper(void)
{
	if (!chain)
		return 0;
	long flags = CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
	return sf_seccomp_refuses_writer() || ns_stop_refused() || !sf_seccomp_allows(SYS_clone, flags, P, 0, 0, 0, 0) ||
	       !sf_seccomp_allows(SYS_close_range, 0, ~0u, 0, 0, 0, 0) ||
	       !sf_seccomp_allows(SYS_openat, AT_FDCWD, P, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0, 0) ||
	       !sf_seccomp_allows(SYS_prctl, PR_GET_TID_ADDRESS, P, 0, 0, 0, 0) ||
	       !sf_seccomp_allows(SYS_set_tid_address, P, 0, 0, 0, 0, 0);
}


static void stop_for_good(long nr)
{
	__atomic_store_n(&sf_sandbox_limited, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&sf_sandbox_stopped, 1, __ATOMIC_RELEASE);
	sf_log_create_early(); /* the log exists to say so (after the switch nothing is patched) */
	sf_switch_off_for_good();
	/* While every call still runs: the slots queued to the writer become
	 * DATA chunks (unwritten they are still the file's SLOT chunks, read
	 * as they are), and the header gets a last clock pair. What the
	 * threads hold in their current slots is in the file already (the
	 * slots are the file's, MAP_SHARED): nothing recorded before the
	 * stop needs a call after it. */
	sf_writer_drain();
	sf_log_calibrate();
	sf_log_seccomp_stopped(nr);
}

/* The pid whose filter's install said that what it execs goes untraced
 * (inherited by its forks: a child knows the line is not its own). */
static uint32_t exec_said;

/* This process's pid under the chain: getpid where allowed, else the pid
 * the runtime set up for (start, fork). */
static uint32_t chain_pid(void)
{
	if (sf_seccomp_allows(SYS_getpid, 0, 0, 0, 0, 0, 0))
		return (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0);
	return sf_buffer_pid();
}

/* An exec (or posix_spawn) about to run a program untraced under the
 * chain (exec_env.c). In the process whose install said so, nothing more;
 * in another (a child forked under the filter), once, a line of its own
 * for record, "sftrace: pid N: runs a program untraced under the seccomp
 * filter of pid M", relayed by a writer thread of the family (notes.c:
 * its own note's calls may be refused here; the relay is memory and one
 * futex wake, made if the chain allows it). Where no writer of the
 * family listens (TSYNC made it leave, or the family's processes with
 * one have exited) only the install's line says it. */
void sf_seccomp_exec_note(void)
{
	static uint32_t noted; /* pid that made its line (a failed exec may come again) */
	uint32_t said = __atomic_load_n(&exec_said, __ATOMIC_ACQUIRE);
	if (!said || sf_in_vfork_child())
		return;
	uint32_t pid = chain_pid();
	if (!pid || pid == said || pid == noted) /* 0: forked after a stop, getpid refused: no line */
		return;
	noted = pid;
	char num[12], *p = num + sizeof(num);
	*--p = 0;
	for (uint32_t v = said; v || !*p; v /= 10)
		*--p = (char)('0' + v % 10);
	int wake = sf_seccomp_allows(SYS_futex, P, FUTEX_WAKE, 0x7fffffff, 0, 0, 0);
	sf_notes_relay_report(pid, "runs a program untraced under the seccomp filter of pid ", p, wake);
}

/* The exit of a process whose tracing stopped at a filter: lines its
 * forks relayed (sf_seccomp_exec_note) are noted by its writer first,
 * where the chain allows the waits of sf_writer_drain. */
void sf_seccomp_exit_settle(void)
{
	if (!sf_notes_relay_pending() || !sf_writer_active() ||
	    !sf_seccomp_allows(SYS_futex, P, FUTEX_WAIT_PRIVATE, 1, P, 0, 0))
		return;
	sf_writer_drain();
}

/* A filter (struct sock_fprog *prog) is about to be installed by this
 * thread; flags: seccomp()'s. Copied into the chain (sf_seccomp_undo
 * takes it out if the call fails), then the runtime fits itself to the
 * chain, while every call is still allowed. */
void sf_seccomp_installing(const void *prog, unsigned long flags)
{
	const struct sock_fprog *fp = prog;
	if (!fp || !fp->filter || !fp->len || fp->len > MAX_INSNS)
		return; /* the kernel refuses it */
	if (__atomic_load_n(&dormant, __ATOMIC_ACQUIRE))
		return; /* under unknown filters: the runtime makes no call (not even mmap) */
	size_t bytes = offsetof(struct filter, insn) + fp->len * sizeof(struct sock_filter);
	size_t map_len = (bytes + 4095) & ~(size_t)4095;
	struct filter *f = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f == MAP_FAILED)
		return;
	f->map_len = map_len;
	f->len = fp->len;
	__builtin_memcpy(f->insn, fp->filter, fp->len * sizeof(struct sock_filter));
	f->prev = chain;
	__atomic_store_n(&chain, f, __ATOMIC_RELEASE);
	if (!sf_seccomp_allows(SYS_prctl, PR_GET_NAME, P, 0, 0, 0, 0))
		__atomic_store_n(&sf_sandbox_no_thread_name, 1, __ATOMIC_RELEASE);
	/* -A's /s and --auto-args' strings (args.c, read_mem): shown as
	 * unreadable from now on, but for the stack strings it reads with
	 * plain loads; tracing goes on */
	if (!sf_seccomp_allows(SYS_process_vm_readv, sf_syscall3(SYS_getpid, 0, 0, 0), P, 1, P, 1, 0))
		__atomic_store_n(&sf_sandbox_no_vm_readv, 1, __ATOMIC_RELEASE);
	/* The runtime's waits (sf_yield, sf_nap) and its clock (sf_mono_ns)
	 * make do without sched_yield, nanosleep and clock_gettime: a futex
	 * wait, the counter's line. Events that carry CLOCK_MONOTONIC (no
	 * stable counter) need the clock itself: tracing stops below. */
	if (!sf_seccomp_allows(SYS_sched_yield, 0, 0, 0, 0, 0, 0))
		__atomic_store_n(&sf_sandbox_no_yield, 1, __ATOMIC_RELEASE);
	if (!sf_seccomp_allows(SYS_nanosleep, P, 0, 0, 0, 0, 0))
		__atomic_store_n(&sf_sandbox_no_nanosleep, 1, __ATOMIC_RELEASE);
	int clock_refused = !sf_seccomp_allows(SYS_clock_gettime, CLOCK_MONOTONIC, P, 0, 0, 0, 0);
	if (clock_refused && sf_config.clock == SF_CLOCK_TSC && !__atomic_load_n(&sf_sandbox_no_clock, __ATOMIC_ACQUIRE)) {
		sf_clock_line_fix();
		__atomic_store_n(&sf_sandbox_no_clock, 1, __ATOMIC_RELEASE);
	}
	/* the writer's arenas (logfile.c, populate_write): touched a page
	 * at a time from now on */
	if (!sf_seccomp_allows(SYS_madvise, P, P, 23 /* MADV_POPULATE_WRITE */, 0, 0, 0))
		__atomic_store_n(&sf_sandbox_no_populate, 1, __ATOMIC_RELEASE);
	int writer_now = FIRST_REFUSED(writer_path) >= 0;
	if (writer_now)
		__atomic_store_n(&writer_refused, 1, __ATOMIC_RELEASE);
	if (FIRST_REFUSED(exit_path) >= 0)
		__atomic_store_n(&sf_sandbox_limited, 1, __ATOMIC_RELEASE);
	if (FIRST_REFUSED(note_path) >= 0)
		__atomic_store_n(&sf_sandbox_no_notes, 1, __ATOMIC_RELEASE);
	if (FIRST_REFUSED(cli_path) >= 0)
		__atomic_store_n(&sf_sandbox_no_cli, 1, __ATOMIC_RELEASE);
	/* TSYNC puts the filter on every thread, the writer's too: it leaves
	 * first, and the hand-offs would then be synchronous. */
	int tsync = writer_now && (flags & SECCOMP_FILTER_FLAG_TSYNC) && sf_writer_active();
	/* The runtime's own threads must not outlive the program's: glibc's
	 * setxid signals each of them (tgkill), and a program whose
	 * exit_group is refused ends with SYS_exit, thread by thread (glibc's
	 * _exit): the process ends when its last thread does. Where the
	 * chain refuses either, they leave now, while their calls run. */
	int threads_leave = !sf_seccomp_allows(SYS_exit_group, P, 0, 0, 0, 0, 0) ||
			    !allows_pinned(0x3, SYS_exit_group, 0, 0, 0, 0, 0, 0) ||
			    (cred_possible() && FIRST_REFUSED(setxid_path) >= 0);
	/* unshare or setns possible, and the stop around them refused at
	 * the call (ns_stop_refused): the runtime's threads leave now, while
	 * their calls run; hand-offs are synchronous from then on (checked
	 * by needed_refused: refused, tracing stops, and they leave all the
	 * same). */
	int ns_leave = (sf_writer_active() || sf_keeper_alive()) && ns_stop_refused();
	long ns_nr = -1;
	if (ns_leave)
		ns_nr = FIRST_REFUSED(writer_stop_path) >= 0 ? FIRST_REFUSED(writer_stop_path) : FIRST_REFUSED(sync_path);
	long nr = needed_refused(tsync || threads_leave || ns_leave);
	if (nr < 0 && clock_refused && sf_config.clock != SF_CLOCK_TSC)
		nr = SYS_clock_gettime;
	if (nr < 0 && tsync)
		nr = FIRST_REFUSED(writer_path);
	if (nr < 0 && threads_leave)
		nr = sf_seccomp_allows(SYS_exit_group, 0, 0, 0, 0, 0, 0) ? SYS_tgkill : SYS_exit_group;
	if (nr >= 0)
		stop_for_good(nr);
	else if (ns_leave) {
		/* tracing goes on: said once, with the call (record relays it) */
		char num[24], *q = num + sizeof(num);
		*--q = 0;
		for (unsigned long v = (unsigned long)ns_nr; v || !*q; v /= 10)
			*--q = (char)('0' + v % 10);
		sf_rt_report("a seccomp filter lets unshare or setns through but refuses a call of the writer's stop "
			     "around them: the writer thread left at the filter's install, the program's threads write "
			     "the log themselves from then on; it refuses system call ", q, NULL);
	}
	/* What this process (or a child) execs under the chain runs without
	 * the runtime (exec_env.c): said now, while the note's calls still
	 * run (record: "sftrace: pid N: ..."), once. */
	if (!exec_said && sf_seccomp_allows(SYS_execve, P, P, P, 0, 0, 0) && sf_seccomp_exec_untraced()) {
		exec_said = (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0);
		sf_rt_report("a seccomp filter the runtime cannot start under: what this process and its children exec "
			     "from now on is not traced",
			     "", NULL);
	}
	int alone = (threads_leave || ns_leave) && sf_writer_active() && sf_thread_count() == 2;
	if (ns_leave && !threads_leave && !tsync && !alone && sf_writer_active()) {
		/* threads of the program's run: the writer hands over (their
		 * events are written by each, as after the leader's end) */
		if (sf_keeper_alive())
			sf_log_keeper_left(sf_keeper_stop());
		sf_writer_leave_now();
	} else if (threads_leave || ns_leave) {
		/* stopped above (or, for ns_leave, tracing goes on with
		 * synchronous hand-offs: the caller is the program's only
		 * thread). The keeper
		 * is a bare clone; the writer is joined, so that glibc takes
		 * it off its list of threads (setxid signals every thread on
		 * it: a bare SYS_exit would leave it there, tgkill'd). */
		if (sf_keeper_alive())
			sf_log_keeper_left(sf_keeper_stop()); /* as ns.c's: the log back in the table */
		if (sf_writer_stop() && alone)
			sf_wait_alone(); /* out of the thread group before the filter (ns.c) */
	} else if (tsync) {
		sf_writer_leave_now();
	}
}

/* The install failed: its copy leaves the chain (what it stopped stays
 * stopped: the sleds are unpatched for good). */
void sf_seccomp_undo(void)
{
	struct filter *f = __atomic_load_n(&chain, __ATOMIC_ACQUIRE);
	if (!f)
		return;
	__atomic_store_n(&chain, f->prev, __ATOMIC_RELEASE);
	munmap(f, f->map_len);
}

/* The thread's name into name (16 bytes); where a filter refuses the
 * call, the name it had at its last hand-off before (empty for a thread
 * made after the filter): a slot's header may still name another thread. */
static __thread char last_name[16] __attribute__((tls_model("initial-exec")));

void sf_thread_name(char *name)
{
	if (!__atomic_load_n(&sf_sandbox_no_thread_name, __ATOMIC_RELAXED)) {
		prctl(PR_GET_NAME, name, 0, 0, 0);
		__builtin_memcpy(last_name, name, sizeof(last_name));
	} else {
		__builtin_memcpy(name, last_name, sizeof(last_name));
	}
}
