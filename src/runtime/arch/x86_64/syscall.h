/* Raw Linux system calls for x86-64. The writer thread is created with a
 * bare clone (no libc thread, no TLS of its own), so it must never touch
 * errno or anything else that lives in thread-local storage: it calls the
 * kernel directly through these. Return values are the kernel's: -errno
 * on failure. */
#ifndef SFTRACE_RUNTIME_ARCH_SYSCALL_H
#define SFTRACE_RUNTIME_ARCH_SYSCALL_H

static inline long sf_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

static inline long sf_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Starts fn(arg) on a new thread of this process running on the given
 * stack, sharing everything (CLONE_THREAD) but thread-local storage. The
 * new thread inherits the caller's signal mask. Returns the tid or -errno.
 * (arch/x86_64/spawn.S) */
long sf_spawn_raw_thread(void *stack_top, int (*fn)(void *), void *arg) __attribute__((visibility("hidden")));

#endif
