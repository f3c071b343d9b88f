/* Raw Linux system calls for x86-64, for code that must not go through
 * interposable libc functions (a program may replace and instrument them)
 * or touch errno: it calls the
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


#endif
