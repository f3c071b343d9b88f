/* Seccomp filters record itself runs under (issue 24): a service manager's
 * deny-list (systemd SystemCallFilter=~@resources ...) or a container's
 * profile, installed before record by a process no runtime watched. The
 * runtime starts under them too and takes them as known
 * (SFTRACE_SECCOMP_FILTERS, sandbox.c), but it cannot read them back
 * (PTRACE_SECCOMP_GET_FILTER refuses a tracer under seccomp, and needs
 * CAP_SYS_ADMIN). Where they refuse a call of the runtime's with an errno
 * the runtime takes its fallback; where they kill (SIGSYS), the program
 * dies of a call it never made: unshare(CLONE_FILES) or
 * sched_setaffinity at the writer's start, the log's fallocate, the
 * end-of-run ftruncate (skeptic24z: 6 of 6 such filters killed the
 * service, which untraced exits 0).
 *
 * So before the command starts, and only where /proc/self/status says
 * "Seccomp: 2", a forked probe makes each system call the runtime makes
 * (sandbox.c's tables and its ledger; test_record_probe keeps the two in
 * step), with arguments like the runtime's (the same flags, options and
 * policies) but harmless: descriptors -1, paths "", outputs into its own
 * buffers, memory of its own. The kernel runs the filters before it looks
 * at the arguments, so a verdict on the number (what deny-lists give) is
 * the one the runtime would meet. The probe marks each call in a shared
 * page before making it; a death by SIGSYS names the call that killed, and
 * another probe goes on after it. A probe that hangs (a filter's
 * SECCOMP_RET_USER_NOTIF with a supervisor that never answers) is killed
 * after PROBE_WAIT_MS and its call counted as killing. Cost: one fork and
 * about 130 system calls at record's start, under filters only, plus one
 * fork for each call that kills. */
#include "cli/record_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_WAIT_MS 3000

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1u
#define MFD_ALLOW_SEALING 2u
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_SEAL_SEAL 1
#define F_SEAL_SHRINK 2
#define F_SEAL_GROW 4
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

/* Special probes, made through libc the way the runtime makes them. */
enum { CALL, THREAD, FORK, SPAWN, ROBUST, SETFS, EXIT };

struct probe {
	const char *name;
	int kind;
	long nr, a[6];
};

static char out[65536] __attribute__((aligned(4096)));     /* what the kernel writes */
static const char zero[4096] __attribute__((aligned(4096))); /* what it reads: a futex word, a timespec, a mask */

/* Argument stand-ins, replaced in the probe (where the addresses are) */
#define B ((long)out)
#define Z ((long)zero)
#define E ((long)"")
#define PG0 (-0x1001L) /* three pages of the probe's own, for mprotect and munmap */
#define PG1 (-0x1002L)
#define PG2 (-0x1003L)
#define PID (-0x1004L)
#define TID (-0x1005L)
#define IOV (-0x1006L)
#define PGSZ (-0x1007L)

/* Calls of sandbox.c's tables the probe does not make:
 * PROBE_LEFT_OUT setuid: the program's own (hooks.c's wrappers pass it on); its cred_path calls are probed
 */
#define C(n, ...) {#n, CALL, SYS_##n, {__VA_ARGS__}}

/* In sandbox.c's order where it matters little; exit_group last. */
static const struct probe probes[] = {
	{"clone3, clone, set_robust_list, rseq, exit (a thread)", THREAD, 0, {0}},
	{"clone, waitid, wait4 (a fork)", FORK, 0, {0}},
	{"clone (CLONE_VM | CLONE_VFORK: a spawn)", SPAWN, 0, {0}},
	{"set_robust_list", ROBUST, 0, {0}},
	{"arch_prctl", SETFS, 0, {0}},
	C(rt_sigprocmask, SIG_SETMASK, Z, B, 8),
	C(rt_sigprocmask, SIG_SETMASK, Z, 0, 8),
	C(rt_sigprocmask, SIG_BLOCK, Z, B, 8),
	C(rt_sigaction, SIGCHLD, 0, B, 8),
	C(futex, Z, FUTEX_WAKE_PRIVATE, 0x7fffffff),
	C(futex, Z, FUTEX_WAIT_PRIVATE, 1, 0),
	C(futex, Z, FUTEX_WAIT_PRIVATE, 1, Z),
	C(futex, Z, FUTEX_WAIT, 1, Z),
	C(futex, Z, FUTEX_WAKE, 1),
	C(futex_waitv, Z, 2, 0, Z, CLOCK_MONOTONIC),
	C(getpid, 0),
	C(gettid, 0),
	C(getppid, 0),
	C(getuid, 0),
	C(geteuid, 0),
	C(getegid, 0),
	C(getgroups, 0, 0),
	C(mmap, 0, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
	C(mmap, 0, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0),
	C(mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0),
	C(mmap, 0, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, -1, 0),
	C(mmap, 0, 65536, PROT_READ, MAP_SHARED, -1, 0),
	C(mmap, 0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
	C(mprotect, PG0, PGSZ, PROT_READ | PROT_WRITE),
	C(mprotect, PG1, PGSZ, PROT_READ | PROT_WRITE | PROT_EXEC),
	C(mprotect, PG1, PGSZ, PROT_EXEC),
	C(mprotect, PG2, PGSZ, PROT_NONE),
	C(munmap, PG2, PGSZ),
	C(madvise, PG0, PGSZ, MADV_DONTFORK),
	C(madvise, PG0, PGSZ, 23 /* MADV_POPULATE_WRITE */),
	C(mincore, PG0, PGSZ, B),
	C(msync, PG0, PGSZ, MS_ASYNC),
	C(openat, AT_FDCWD, E, O_RDONLY | O_CLOEXEC, 0),
	C(openat, AT_FDCWD, E, O_RDWR | O_CLOEXEC, 0),
	C(openat, AT_FDCWD, E, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0),
	C(openat, AT_FDCWD, E, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0),
	C(openat, AT_FDCWD, E, O_RDONLY | O_CLOEXEC | O_PATH | O_DIRECTORY, 0),
	C(openat, AT_FDCWD, E, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_PATH | O_DIRECTORY, 0),
	C(openat, AT_FDCWD, E, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600),
	C(openat, -1, E, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0600),
	C(openat, AT_FDCWD, E, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600),
	C(openat, AT_FDCWD, E, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0),
	C(openat, AT_FDCWD, E, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600),
	C(read, -1, B, 4096),
	C(write, -1, Z, 1),
	C(pread64, -1, B, 4096, 0),
	C(pwrite64, -1, Z, 4096, 0),
	C(pwritev, -1, Z, 0, 0),
	C(fallocate, -1, 0, 0, 65536),
	C(ftruncate, -1, 0),
	C(fstat, -1, B),
	C(newfstatat, AT_FDCWD, E, B, 0),
	C(newfstatat, AT_FDCWD, E, B, AT_SYMLINK_NOFOLLOW),
	C(readlinkat, AT_FDCWD, E, B, 4096),
	C(faccessat, AT_FDCWD, E, F_OK, 0),
	C(getdents64, -1, B, 4096),
	C(getcwd, B, 4096),
	C(fcntl, -1, F_DUPFD_CLOEXEC, 1000),
	C(fcntl, -1, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
	C(fchmod, -1, 0600),
	C(fchown, -1, -1, -1),
	C(dup, -1),
	C(dup3, -1, -1, O_CLOEXEC),
	C(close, -1),
	C(linkat, AT_FDCWD, E, AT_FDCWD, E, AT_SYMLINK_FOLLOW),
	C(linkat, -1, E, AT_FDCWD, E, AT_EMPTY_PATH),
	C(renameat, AT_FDCWD, E, AT_FDCWD, E),
	C(unlinkat, AT_FDCWD, E, 0),
	C(sendfile, -1, -1, 0, 4096),
	C(ioctl, -1, 0xb703 /* NS_GET_NSTYPE */, 0),
	C(pipe2, B, O_CLOEXEC),
	C(memfd_create, E, MFD_CLOEXEC | MFD_ALLOW_SEALING | 0x8u),
	C(memfd_create, E, MFD_CLOEXEC | MFD_ALLOW_SEALING),
	C(prlimit64, 0, RLIMIT_NOFILE, 0, B),
	C(prlimit64, 0, RLIMIT_FSIZE, 0, B),
	C(prctl, PR_GET_NAME, B, 0, 0, 0),
	C(prctl, PR_GET_TID_ADDRESS, B, 0, 0, 0),
	C(set_tid_address, B),
	C(get_robust_list, 0, B, B + 64),
	C(sched_getaffinity, 0, 128, B),
	C(sched_setaffinity, 0, 128, Z),
	C(sched_get_priority_min, SCHED_OTHER),
	C(sched_get_priority_max, SCHED_OTHER),
	C(sched_setscheduler, 0, SCHED_OTHER, Z),
	C(sched_setscheduler, 0, SCHED_BATCH, Z),
	C(sched_yield, 0),
	C(nanosleep, Z, 0),
	C(clock_nanosleep, CLOCK_MONOTONIC, 0, Z, 0),
	C(clock_gettime, CLOCK_MONOTONIC, B),
	C(clock_gettime, CLOCK_REALTIME, B),
	C(clock_gettime, CLOCK_THREAD_CPUTIME_ID, B),
	C(getrandom, B, 8, 1 /* GRND_NONBLOCK */),
	C(process_vm_readv, PID, IOV, 1, IOV, 1, 0),
	C(kill, PID, 0),
	C(tgkill, PID, TID, 0),
	C(pidfd_open, PID, O_EXCL),
	C(pidfd_getfd, -1, -1, 0),
	C(socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
	C(socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0),
	C(bind, -1, Z, 2),
	C(listen, -1, 1),
	C(accept4, -1, 0, 0, SOCK_CLOEXEC),
	C(connect, -1, Z, 2),
	C(setsockopt, -1, SOL_SOCKET, SO_PASSCRED, Z, 4),
	C(getsockopt, -1, SOL_SOCKET, SO_PEERCRED, B, B + 64),
	C(sendmsg, -1, Z, 0),
	C(recvmsg, -1, B, 0),
	C(execve, E, 0, 0),
	C(unshare, CLONE_FILES),
	C(close_range, ~0u, ~0u, 0),
	C(close_range, 0, ~0u, 0),
	{"exit_group", EXIT, SYS_exit_group, {0}},
};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

static long page_size;
static char *pages;

static long arg(long v)
{
	static struct iovec iov;
	switch (v) {
	case PG0: return (long)pages;
	case PG1: return (long)(pages + page_size);
	case PG2: return (long)(pages + 2 * page_size);
	case PID: return (long)getpid();
	case TID: return (long)syscall(SYS_gettid);
	case IOV:
		iov = (struct iovec){out + 1024, 8};
		return (long)&iov;
	case PGSZ: return page_size;
	}
	return v;
}

static void *thread_main(void *a)
{
	return a;
}

/* The probe: the calls from index from on, each marked in *at before it
 * is made. Never returns. */
static void probe_run(volatile int *at, size_t from)
{
	extern char **environ;
	*at = -1; /* setup: what every program needs (a death here is not the runtime's) */
	page_size = sysconf(_SC_PAGESIZE);
	pages = mmap(NULL, (size_t)(3 * page_size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		_exit(2);
	for (size_t i = from; i < NPROBES; i++) {
		const struct probe *p = &probes[i];
		__atomic_store_n(at, (int)i, __ATOMIC_SEQ_CST);
		switch (p->kind) {
		case CALL:
			syscall(p->nr, arg(p->a[0]), arg(p->a[1]), arg(p->a[2]), arg(p->a[3]), arg(p->a[4]),
				arg(p->a[5]));
			break;
		case THREAD: { /* the writer's start: glibc's pthread_create */
			pthread_t t;
			if (!pthread_create(&t, NULL, thread_main, NULL))
				pthread_join(t, NULL);
			break;
		}
		case FORK: { /* a program's fork: its runtime's child handler runs there */
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			if (c > 0) {
				__atomic_store_n(at, (int)i, __ATOMIC_SEQ_CST);
				siginfo_t si;
				syscall(SYS_waitid, P_PID, c, &si, WEXITED | WNOHANG | WNOWAIT | __WALL, 0);
				syscall(SYS_wait4, c, out, __WALL, 0);
			}
			break;
		}
		case SPAWN: { /* filter.c's waiter child (sftrace filter at a dlopen) */
			pid_t c;
			char *argv[] = {(char *)"sftrace-probe", NULL};
			if (!posix_spawn(&c, "/nonexistent/sftrace-probe", NULL, NULL, argv, environ))
				waitpid(c, NULL, 0);
			break;
		}
		case ROBUST: { /* set again as it is */
			long head = 0;
			size_t len = 0;
			if (!syscall(SYS_get_robust_list, 0, &head, &len))
				syscall(SYS_set_robust_list, head, len);
			break;
		}
		case SETFS: /* a fork child's thread pointer (sf_arch.h), set again as it is */
#if defined(__x86_64__) && defined(SYS_arch_prctl)
		{
			unsigned long fs = 0;
			if (!syscall(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &fs))
				syscall(SYS_arch_prctl, 0x1002 /* ARCH_SET_FS */, fs);
		}
#endif
			break;
		case EXIT:
			syscall(SYS_exit_group, 0);
			break;
		}
	}
	_exit(0);
}

static void add_name(char *killed, size_t size, const char *name)
{
	size_t l = strlen(killed);
	if (strstr(killed, name))
		return; /* one name for a call's variants */
	snprintf(killed + l, size - l, "%s%s", l ? ", " : "", name);
}

/* Whether /proc/self/status says this process runs under seccomp filters
 * (mode 2); mode 1 (strict) would not let record run at all. */
static int under_filters(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	int mode = 0;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			mode = atoi(line + 8);
	if (f)
		fclose(f);
	return mode == 2;
}

int record_probe_filters(char *killed, size_t size)
{
	killed[0] = 0;
	if (!under_filters())
		return 0;
	volatile int *at = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (at == MAP_FAILED)
		return 0;
	int n = 0;
	fflush(NULL); /* nothing of record's buffered is written twice */
	/* Waited for with SIGCHLD blocked and taken by sigtimedwait: no
	 * polling, a timeout for a probe left waiting (record has no other
	 * child yet) */
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	for (size_t from = 0; from < NPROBES;) {
		pid_t c = fork();
		if (c < 0)
			break;
		if (c == 0) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			probe_run(at, from);
		}
		int st = 0;
		struct timespec left = {PROBE_WAIT_MS / 1000, 0};
		while (waitpid(c, &st, WNOHANG) == 0) {
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			if (sigtimedwait(&chld, NULL, &left) < 0 && errno == EAGAIN) {
				kill(c, SIGKILL);
				waitpid(c, &st, 0);
				break;
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			left.tv_sec -= t1.tv_sec - t0.tv_sec;
			left.tv_nsec -= t1.tv_nsec - t0.tv_nsec;
			while (left.tv_nsec < 0) {
				left.tv_nsec += 1000000000;
				left.tv_sec--;
			}
			if (left.tv_sec < 0)
				left = (struct timespec){0, 0};
		}
		int i = __atomic_load_n(at, __ATOMIC_SEQ_CST);
		if (WIFEXITED(st) || i < 0)
			break; /* all made (a setup failure: nothing to go by, as before) */
		/* killed at call i: by the filter (SIGSYS), or left unanswered */
		n++;
		add_name(killed, size, probes[i].name);
		from = (size_t)i + 1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	munmap((void *)at, 4096);
	return n;
}
