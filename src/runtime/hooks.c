/* Process hooks: a forked child drops the parent's log and buffers and
 * starts its own, whether it was made by fork (pthread_atfork), _Fork or a
 * raw fork through syscall() (both skip the atfork handlers, so they are
 * wrapped here); a vfork child records nothing (arch/<arch>/vfork.S).
 * (Objects loaded later: loader_hook.c; exec: exec_env.c.) */
#include <dlfcn.h>
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sf_arch.h"

#include "runtime/runtime.h"

static sigset_t fork_mask;

static void before_fork(void)
{
	/* Hold the lock across fork so the child never inherits it taken. */
	sf_log_lock_sig(&fork_mask);
}

static void after_fork_parent(void)
{
	sf_log_unlock_sig(&fork_mask);
}

static void after_fork_child(void)
{
	sf_writer_after_fork_child();
	sf_services_after_fork_child();
	sf_log_after_fork_child();
	sf_objects_after_fork_child();
	sf_buffer_after_fork_child();
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
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
	if (--vfork_depth == 0)
		sf_suppress_end(&vfork_saved);
}

long sf_set_errno(int e)
{
	errno = e;
	return -1;
}

/* ---- forks that run no atfork handlers ---- */

static pid_t fork_with_handlers(long (*do_fork)(const long *a), const long *a)
{
	int on = sf_config.enabled;
	if (on)
		before_fork();
	long r = do_fork(a);
	if (on) {
		if (r == 0)
			after_fork_child();
		else
			after_fork_parent();
	}
	return (pid_t)r;
}

/* Forks that copy the address space and return on the same stack. */
static int fork_like(long nr, const long *a)
{
#ifdef SYS_fork /* aarch64 has only clone */
	if (nr == SYS_fork)
		return 1;
#endif
	if (nr == SYS_clone)
		return !(a[0] & CLONE_VM) && !(a[0] & CLONE_VFORK) && a[1] == 0;
	if (nr == SYS_clone3 && a[0]) {
		const struct clone_args *ca = (const struct clone_args *)a[0];
		return !(ca->flags & (CLONE_VM | CLONE_VFORK)) && ca->stack == 0;
	}
	return 0;
}

static long raw_syscall(long nr, const long *a)
{
	return sf_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static long nr_of_call;
static long do_raw_fork(const long *a)
{
	return raw_syscall(nr_of_call, a);
}

/* syscall(2): glibc's is the bare instruction plus errno, and so is this,
 * except that fork-like calls run the runtime's fork handlers around it
 * (a raw fork child would otherwise write into its parent's slots). */
__attribute__((visibility("default"))) long syscall(long nr, ...)
{
	long a[6];
	va_list ap;
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	long r;
	if (fork_like(nr, a)) {
		nr_of_call = nr; /* under the runtime's lock from here to the fork */
		r = fork_with_handlers(do_raw_fork, a);
	} else {
		r = raw_syscall(nr, a);
	}
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
		real__Fork = (fork_fn)dlsym(RTLD_NEXT, "_Fork");
	if (!real__Fork) {
		errno = ENOSYS;
		return -1;
	}
	static const long none[6];
	return fork_with_handlers(do__Fork, none);
}
