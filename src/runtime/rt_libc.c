/* The libc functions the runtime calls, as hidden definitions of its own.
 *
 * A program may replace any interposable libc function and build its
 * replacement with XRay sleds (a clock_gettime or open wrapper in the
 * executable, an LD_PRELOAD shim). If the runtime called it through the PLT
 * while holding its lock, or from the writer thread, the replacement's
 * events would re-enter the runtime and wait for that lock, or for the
 * writer, forever. These definitions are hidden, so every call from
 * libsftrace.so binds to them at link time and never leaves the library:
 * system calls are made directly, CLOCK_MONOTONIC and CLOCK_REALTIME are
 * read through the vDSO, and the string functions are plain loops (no
 * vector registers: the runtime is built with -mgeneral-regs-only).
 *
 * What remains: dl_iterate_phdr (the loader's list, only the loader has
 * it); sigaction (installing the ring and landing handlers) and clone
 * (hooks.c's sf_clone_real: glibc's, resolved once); and, at start-up only,
 * getenv (next definitions are read from the objects' tables, elf_sym.c:
 * no dlsym, which allocates at a miss and clears the program's dlerror),
 * pthread_create and its attributes, pthread_key_create
 * and pthread_setspecific, pthread_setname_np, sched_getaffinity,
 * getauxval, and snprintf in the filter-file parser (format/filter_file.c,
 * shared with the CLI). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

#define HIDDEN __attribute__((visibility("hidden")))
/* The compiler must not turn these loops back into calls to themselves. */
#ifdef __clang__
#define NO_LIBCALL __attribute__((no_builtin))
#else
#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif

static long ret_errno(long r)
{
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

HIDDEN int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return openat(AT_FDCWD, path, flags, mode); /* the hidden one below */
}

/* Not named close: that name is the program's, wrapped by fdguard.c. */
int sf_close(int fd)
{
	return (int)ret_errno(sf_syscall3(SYS_close, fd, 0, 0));
}

HIDDEN ssize_t read(int fd, void *buf, size_t n)
{
	return ret_errno(sf_syscall3(SYS_read, fd, (long)buf, (long)n));
}

HIDDEN ssize_t write(int fd, const void *buf, size_t n)
{
	return ret_errno(sf_syscall3(SYS_write, fd, (long)buf, (long)n));
}

HIDDEN ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return ret_errno(sf_syscall6(SYS_pread64, fd, (long)buf, (long)n, off, 0, 0));
}

HIDDEN ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return ret_errno(sf_syscall6(SYS_pwrite64, fd, (long)buf, (long)n, off, 0, 0));
}

HIDDEN ssize_t readlink(const char *path, char *buf, size_t n)
{
	return ret_errno(sf_syscall6(SYS_readlinkat, AT_FDCWD, (long)path, (long)buf, (long)n, 0, 0));
}

HIDDEN int lstat(const char *path, struct stat *st)
{
	return (int)ret_errno(sf_syscall6(SYS_newfstatat, AT_FDCWD, (long)path, (long)st, AT_SYMLINK_NOFOLLOW, 0, 0));
}

HIDDEN int stat(const char *path, struct stat *st)
{
	return (int)ret_errno(sf_syscall6(SYS_newfstatat, AT_FDCWD, (long)path, (long)st, 0, 0, 0));
}

HIDDEN int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return (int)ret_errno(sf_syscall6(SYS_openat, dirfd, (long)path, flags, mode, 0, 0));
}

HIDDEN int access(const char *path, int mode)
{
	return (int)ret_errno(sf_syscall6(SYS_faccessat, AT_FDCWD, (long)path, mode, 0, 0, 0));
}

HIDDEN int rename(const char *from, const char *to)
{
	return (int)ret_errno(sf_syscall6(SYS_renameat, AT_FDCWD, (long)from, AT_FDCWD, (long)to, 0, 0));
}

HIDDEN int unlink(const char *path)
{
	return (int)ret_errno(sf_syscall6(SYS_unlinkat, AT_FDCWD, (long)path, 0, 0, 0, 0));
}

HIDDEN ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	return ret_errno(sf_syscall6(SYS_sendfile, out, in, (long)off, (long)n, 0, 0));
}

HIDDEN uid_t geteuid(void)
{
	return (uid_t)sf_syscall6(SYS_geteuid, 0, 0, 0, 0, 0, 0);
}

HIDDEN int fstat(int fd, struct stat *st)
{
	return (int)ret_errno(sf_syscall3(SYS_fstat, fd, (long)st, 0));
}

HIDDEN void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r = sf_syscall6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, off);
	return (void *)ret_errno(r);
}

HIDDEN int munmap(void *addr, size_t len)
{
	return (int)ret_errno(sf_syscall3(SYS_munmap, (long)addr, (long)len, 0));
}

HIDDEN int mprotect(void *addr, size_t len, int prot)
{
	return (int)ret_errno(sf_syscall3(SYS_mprotect, (long)addr, (long)len, prot));
}

HIDDEN int madvise(void *addr, size_t len, int advice)
{
	return (int)ret_errno(sf_syscall3(SYS_madvise, (long)addr, (long)len, advice));
}

HIDDEN int fallocate(int fd, int mode, off_t off, off_t len)
{
	return (int)ret_errno(sf_syscall6(SYS_fallocate, fd, mode, off, len, 0, 0));
}

HIDDEN pid_t getpid(void)
{
	return (pid_t)sf_syscall3(SYS_getpid, 0, 0, 0);
}

HIDDEN pid_t getppid(void)
{
	return (pid_t)sf_syscall3(SYS_getppid, 0, 0, 0);
}

HIDDEN int getrlimit(__rlimit_resource_t res, struct rlimit *rl)
{
	return (int)ret_errno(sf_syscall6(SYS_prlimit64, 0, res, 0, (long)rl, 0, 0));
}

HIDDEN int sched_yield(void)
{
	return (int)sf_syscall3(SYS_sched_yield, 0, 0, 0);
}

/* The runtime's short waits on a program thread: sched_yield and
 * nanosleep, or, where a seccomp filter refuses them (sandbox.c: they are
 * not on every allow-list, OpenSSH's preauth list has no sched_yield), a
 * futex wait with a timeout on a word nobody wakes, a call the event path
 * needs anyway. */
void sf_nap(long ns)
{
	if (ns <= 0)
		return; /* a futex wait without a bound would not end */
	struct { long s, ns; } ts = {0, ns};
	if (!__atomic_load_n(&sf_sandbox_no_nanosleep, __ATOMIC_RELAXED)) {
		sf_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
		return;
	}
	static uint32_t never;
	sf_futex_wait(&never, 0, ns);
}

/* The runtime's futex calls on words of its own, private to the process:
 * a wait while *w is seen, at most ns (0: unbounded), and a wake of n
 * waiters. The timeout argument is 0 or a pointer, the forms sandbox.c's
 * allow-lists name. */
long sf_futex_wait(const uint32_t *w, uint32_t seen, long ns)
{
	struct { long s, ns; } ts = {ns / 1000000000L, ns % 1000000000L};
	return sf_syscall6(SYS_futex, (long)w, FUTEX_WAIT_PRIVATE, seen, ns ? (long)&ts : 0, 0, 0);
}

void sf_futex_wake(const uint32_t *w, int n)
{
	sf_syscall6(SYS_futex, (long)w, FUTEX_WAKE_PRIVATE, n, 0, 0, 0);
}

void sf_yield(void)
{
	if (__atomic_load_n(&sf_sandbox_no_yield, __ATOMIC_RELAXED))
		sf_nap(1000);
	else
		sf_syscall3(SYS_sched_yield, 0, 0, 0);
}

/* The writer thread's own CPUs (writer.c). */
HIDDEN int sched_setaffinity(pid_t pid, size_t len, const cpu_set_t *set)
{
	return (int)ret_errno(sf_syscall3(SYS_sched_setaffinity, pid, (long)len, (long)set));
}

HIDDEN char *getcwd(char *buf, size_t n)
{
	long r = ret_errno(sf_syscall3(SYS_getcwd, (long)buf, (long)n, 0));
	return r < 0 ? NULL : buf;
}

/* Exported too, in front of libc's: a program's PR_SET_SECCOMP with
 * SECCOMP_MODE_STRICT switches tracing off first (sf_strict_begins).
 * Protected: the runtime's own calls still bind here, never to a prctl
 * of the program's. */
__attribute__((visibility("protected"))) int prctl(int op, ...)
{
	va_list ap;
	va_start(ap, op);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long), d = va_arg(ap, long);
	va_end(ap);
	if (op == PR_SET_SECCOMP && a == SECCOMP_MODE_STRICT)
		sf_strict_begins();
	int filter = op == PR_SET_SECCOMP && a == SECCOMP_MODE_FILTER;
	if (filter)
		sf_seccomp_installing((const void *)b, 0); /* sandbox.c: before, while every call is allowed */
	long r = sf_syscall6(SYS_prctl, op, a, b, c, d, 0);
	if (filter && r < 0)
		sf_seccomp_undo();
	long args[6] = {op, a, b, c, d, 0};
	sf_cred_followed(SYS_prctl, args, r); /* KEEPCAPS, NO_NEW_PRIVS, CAPBSET_DROP...: hooks.c */
	return (int)ret_errno(r);
}

/* A thread in SECCOMP_MODE_STRICT: the runtime makes no system call of
 * its own from it (hooks.c, syscall(SYS_exit)). */
__thread int sf_strict_thread __attribute__((tls_model("initial-exec"))) SF_HIDDEN;

/* prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) or seccomp(SECCOMP_SET_MODE_STRICT)
 * (libc's prctl, syscall()) is about to be made by this thread. */
void sf_strict_begins(void)
{
	sf_strict_thread = 1;
	sf_switch_off_for_good();
}

/* ---- the runtime's own descriptors ----
 * The program owns the low numbers: the kernel hands out the lowest free
 * one, so a descriptor the runtime opens while 0, 1 or 2 is closed would
 * become the program's stdin, stdout or stderr, and one kept near the
 * program's own would be in the way of its dup2s. Descriptors the runtime
 * keeps are moved near the top of the table, close-on-exec. The table is
 * as large as its highest descriptor, so the top is taken below 1024 even
 * when RLIMIT_NOFILE allows more. */
static int fd_top(void)
{
	struct rlimit rl;
	uint64_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
	return lim > 1024 ? 1024 : lim < 4 ? 4 : (int)lim;
}

/* Where kept descriptors live: the top 64 numbers, or the top half of a
 * small table (ulimit -n 100, a sandbox's 16), never 0-2. */
static int fd_floor(int top)
{
	int f = top - 64 > top / 2 ? top - 64 : top / 2;
	return f < 3 ? 3 : f;
}

static int fd_move(int fd, int top)
{
	/* The highest free number: the kernel gives the lowest free one at or
	 * above the argument, so try from the top down (one call, unless the
	 * program holds the very top). */
	long r = -1;
	for (int t = top - 1; r < 0 && t >= fd_floor(top); t--)
		r = sf_syscall3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, t);
	if (r < 0 && fd > 2) { /* the top of the table is full: keep the number it has */
		sf_syscall3(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
		return fd;
	}
	if (r < 0) /* anywhere above stdio then */
		r = sf_syscall3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3);
	if (r < 0) {
		sf_syscall3(SYS_close, fd, 0, 0);
		return (int)ret_errno(r);
	}
	sf_syscall3(SYS_close, fd, 0, 0);
	return (int)r;
}

int sf_fd_keep(int fd)
{
	if (fd < 0)
		return fd;
	int top = fd_top();
	if (fd >= fd_floor(top)) {
		sf_syscall3(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
		return fd;
	}
	return fd_move(fd, top);
}

int sf_fd_brief(int fd)
{
	return fd < 0 || fd > 2 ? fd : fd_move(fd, fd_top());
}

/* ---- signal masks: like glibc's, never blocking the setuid broadcast
 * (33), so a setuid in another thread is never held up by the runtime.
 * Unlike glibc's, thread cancellation (32) is blocked when asked for: a
 * thread with asynchronous cancellation enabled, cancelled inside one of
 * the runtime's sections, unwound out of it with a lock of the log's held
 * and every other thread then spun for that lock for good (skeptic f8,
 * skf8_async_cancel). Blocked, the cancellation lands when the section
 * puts the program's mask back: later than untraced by the rest of the
 * section (a hand-off, a slot's mapping), in the traced function's slow
 * path, never inside the runtime's own work. ---- */

HIDDEN int sigfillset(sigset_t *s)
{
	memset(s, 0xff, sizeof(*s));
	return 0;
}

HIDDEN int sigemptyset(sigset_t *s)
{
	memset(s, 0, sizeof(*s));
	return 0;
}

HIDDEN int sigaddset(sigset_t *s, int sig)
{
	if (sig < 1 || sig > 64) {
		errno = EINVAL;
		return -1;
	}
	s->__val[0] |= 1ul << (sig - 1); /* 64-bit longs on both architectures */
	return 0;
}

HIDDEN int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	uint64_t want, *wp = NULL;
	if (set) {
		memcpy(&want, set, sizeof(want));
		want &= ~(1ull << 32);
		wp = &want;
	}
	long r = sf_syscall6(SYS_rt_sigprocmask, how, (long)wp, (long)old, 8, 0, 0);
	if (old)
		memset((char *)old + 8, 0, sizeof(*old) - 8);
	return r < 0 ? (int)-r : 0;
}

HIDDEN int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int r = pthread_sigmask(how, set, old);
	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

/* ---- clocks: the vDSO's clock_gettime, found at start-up ---- */

typedef int (*vdso_clock_fn)(clockid_t, struct timespec *);
static vdso_clock_fn vdso_clock_gettime;

static const void *vdso_symbol(const char *want)
{
	const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return NULL;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	uintptr_t bias = 0;
	const Elf64_Dyn *dyn = NULL;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !bias)
			bias = (uintptr_t)base + ph[i].p_offset - ph[i].p_vaddr;
		else if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(base + ph[i].p_offset);
	}
	if (!dyn || !bias)
		return NULL;
	const Elf64_Sym *sym = NULL;
	const char *str = NULL;
	const uint32_t *hash = NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			sym = (const Elf64_Sym *)(bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			str = (const char *)(bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			hash = (const uint32_t *)(bias + dyn->d_un.d_ptr);
	}
	if (!sym || !str || !hash)
		return NULL;
	for (uint32_t i = 0; i < hash[1]; i++) /* nchain: the number of symbols */
		if (sym[i].st_name && sym[i].st_value && !strcmp(str + sym[i].st_name, want))
			return (const void *)(bias + sym[i].st_value);
	return NULL;
}

/* Start-up (init.c), before any clock is read. */
void sf_rt_libc_init(void)
{
#if defined(__aarch64__)
	vdso_clock_gettime = (vdso_clock_fn)(uintptr_t)vdso_symbol("__kernel_clock_gettime"); /* arm64's name */
#else
	vdso_clock_gettime = (vdso_clock_fn)(uintptr_t)vdso_symbol("__vdso_clock_gettime");
#endif
}

HIDDEN int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (vdso_clock_gettime)
		return vdso_clock_gettime(id, ts);
	return (int)ret_errno(sf_syscall3(SYS_clock_gettime, id, (long)ts, 0));
}

/* ---- strings ---- */

HIDDEN NO_LIBCALL void *memcpy(void *d, const void *s, size_t n)
{
	sf_arch_copy_bytes(d, s, n);
	return d;
}

HIDDEN NO_LIBCALL void *memmove(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;
	if (dp <= sp || dp >= sp + n)
		return memcpy(d, s, n);
	while (n--)
		dp[n] = sp[n];
	return d;
}

HIDDEN NO_LIBCALL void *memset(void *d, int c, size_t n)
{
	sf_arch_fill_bytes(d, c, n);
	return d;
}

HIDDEN NO_LIBCALL int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

HIDDEN NO_LIBCALL size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

HIDDEN NO_LIBCALL void *memchr(const void *p, int c, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		if (s[i] == (unsigned char)c)
			return (void *)(s + i);
	return NULL;
}

HIDDEN NO_LIBCALL char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

HIDDEN NO_LIBCALL char *strrchr(const char *s, int c)
{
	const char *last = NULL;
	for (;; s++) {
		if (*s == (char)c)
			last = s;
		if (!*s)
			return (char *)last;
	}
}

HIDDEN NO_LIBCALL int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

HIDDEN NO_LIBCALL int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

/* The messages the runtime can print, as glibc words them; other numbers
 * by their name ("error 75 (EOVERFLOW)"), or by number alone. Tables of
 * constants, no locale: async-signal-safe, except that an unknown number
 * is formatted in one static buffer (two threads reporting different
 * unknown errors at once may garble a number). */
HIDDEN char *strerror(int e)
{
	static const struct {
		int e;
		const char *s;
	} known[] = {
		{EPERM, "Operation not permitted"}, {ENOENT, "No such file or directory"},
		{EACCES, "Permission denied"}, {EEXIST, "File exists"}, {ENOTDIR, "Not a directory"},
		{EISDIR, "Is a directory"}, {EINVAL, "Invalid argument"}, {EMFILE, "Too many open files"},
		{ENOSPC, "No space left on device"}, {EROFS, "Read-only file system"},
		{EFBIG, "File too large"}, {ENOMEM, "Cannot allocate memory"}, {EDQUOT, "Disk quota exceeded"},
		{ENAMETOOLONG, "File name too long"}, {EIO, "Input/output error"}, {ELOOP, "Too many levels of symbolic links"},
		{EOPNOTSUPP, "Operation not supported"}, {EBADF, "Bad file descriptor"},
		{EAGAIN, "Resource temporarily unavailable"}, {EINTR, "Interrupted system call"},
		{ESTALE, "Stale file handle"}, {ENFILE, "Too many open files in system"}, {ENXIO, "No such device or address"},
		{ENODEV, "No such device"}, {EBUSY, "Device or resource busy"}, {EXDEV, "Invalid cross-device link"},
		{ETXTBSY, "Text file busy"}, {EPIPE, "Broken pipe"}, {ESPIPE, "Illegal seek"}, {ENOSYS, "Function not implemented"},
		{EFAULT, "Bad address"}, {ESRCH, "No such process"}, {ECHILD, "No child processes"},
		{ECONNREFUSED, "Connection refused"},
	};
	static const struct {
		int e;
		const char *name;
	} names[] = {
		{E2BIG, "E2BIG"}, {ENOEXEC, "ENOEXEC"}, {EDEADLK, "EDEADLK"}, {EMLINK, "EMLINK"}, {ERANGE, "ERANGE"},
		{ENOTEMPTY, "ENOTEMPTY"}, {ENOLCK, "ENOLCK"}, {EOVERFLOW, "EOVERFLOW"}, {EILSEQ, "EILSEQ"},
		{ENOTTY, "ENOTTY"}, {ENOTSOCK, "ENOTSOCK"}, {ECONNRESET, "ECONNRESET"}, {ETIMEDOUT, "ETIMEDOUT"},
		{ECANCELED, "ECANCELED"}, {EOWNERDEAD, "EOWNERDEAD"}, {ENOTRECOVERABLE, "ENOTRECOVERABLE"},
		{ENODATA, "ENODATA"}, {ENOLINK, "ENOLINK"}, {EPROTO, "EPROTO"}, {EBADMSG, "EBADMSG"},
		{ENOTBLK, "ENOTBLK"}, {EDOM, "EDOM"}, {ENOMEDIUM, "ENOMEDIUM"}, {EREMOTEIO, "EREMOTEIO"},
		{EKEYEXPIRED, "EKEYEXPIRED"}, {EUCLEAN, "EUCLEAN"}, {EHWPOISON, "EHWPOISON"},
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i].e == e)
			return (char *)known[i].s;
	static char buf[48];
	char tmp[12];
	int k = 0;
	unsigned u = (unsigned)e;
	do
		tmp[k++] = (char)('0' + u % 10);
	while ((u /= 10) && k < 11);
	size_t n = 0;
	for (const char *p = "error "; *p; p++)
		buf[n++] = *p;
	while (k)
		buf[n++] = tmp[--k];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].e != e)
			continue;
		buf[n++] = ' ';
		buf[n++] = '(';
		for (const char *p = names[i].name; *p && n < sizeof(buf) - 2; p++)
			buf[n++] = *p;
		buf[n++] = ')';
		break;
	}
	buf[n] = 0;
	return buf;
}

/* Runtime memory: anonymous mappings, never malloc (the program may have
 * an instrumented allocator). NULL on failure. */
void *sf_map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The calling thread's id, by the raw system call: the exported syscall()
 * is hooks.c's wrapper, and a program may interpose gettid. */
uint32_t sf_gettid(void)
{
	return (uint32_t)sf_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
}
