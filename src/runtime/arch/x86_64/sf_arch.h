/* x86-64 pieces of the runtime that C code inlines: raw system calls, the
 * cycle counter, block stores, the longjmp buffer. Every architecture's
 * folder has an sf_arch.h with the same names (the Makefile puts
 * src/runtime/arch/$(ARCH) on the include path).
 *
 * Raw system calls are for code that must not go through interposable libc
 * functions (a program may replace and instrument them) or touch errno.
 * Return values are the kernel's: -errno on failure. */
#ifndef SFTRACE_RUNTIME_SF_ARCH_H
#define SFTRACE_RUNTIME_SF_ARCH_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#include "sf_shadow.h"

#define SF_GLIBC_BASE_VERSION "GLIBC_2.2.5" /* glibc's first symbol version here (exports.map) */
/* dladdr1's first version (libdl's; glibc 2.34 gave it GLIBC_2.34 in libc): dladdr.c */
#define SF_GLIBC_DLADDR1_OLD "GLIBC_2.3.3"
/* glibc's versions of posix_spawn and posix_spawnp here (exec_env.c): the
 * default since 2.15, and the first one, which runs a file without "#!"
 * through /bin/sh (SPAWN_XFLAGS_TRY_SHELL) */
#define SF_GLIBC_SPAWN_VERSION "GLIBC_2.15"
#define SF_GLIBC_SPAWN_COMPAT "GLIBC_2.2.5"
/* glibc's versions of quick_exit (hooks.c): the default since 2.24, and
 * the first one, which also runs thread_local destructors */
#define SF_GLIBC_QUICK_EXIT_VERSION "GLIBC_2.24"
#define SF_GLIBC_QUICK_EXIT_COMPAT "GLIBC_2.10"
#define SF_ARCH_MACHINE EM_X86_64
#define SF_ARCH_SLED_SIZE 11 /* bytes of an XRay sled */

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

/* The calling thread's thread pointer (glibc's TCB: the fs base), and
 * another one set for the calling thread (writer.c: the keeper thread runs
 * each request on its requester's, which waits meanwhile). */
static inline void *sf_arch_tp(void)
{
	return __builtin_thread_pointer();
}

static inline void sf_arch_set_tp(void *tp)
{
	sf_syscall3(158 /* SYS_arch_prctl */, 0x1002 /* ARCH_SET_FS */, (long)tp, 0);
}

/* The event clock's raw counter (SF_CLOCK_TSC). */
static inline uint64_t sf_arch_counter(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* The stack pointer: where the caller's frame ends, read without making
 * a frame of our own (__builtin_frame_address(0) makes one). */
static inline __attribute__((always_inline)) uint64_t sf_arch_stack_pointer(void)
{
	uint64_t sp;
	__asm__("mov %%rsp, %0" : "=r"(sp));
	return sp;
}

/* 1 if addr lies below the stack pointer, compared where it is used
 * (no register holds the stack pointer meanwhile: a hook without a frame
 * then needs no register saved). */
static inline __attribute__((always_inline)) int sf_arch_below_sp(uint64_t addr)
{
	int below;
	__asm__ volatile("cmp %%rsp, %1" : "=@ccb"(below) : "r"(addr) : "cc");
	return below;
}

/* *p = want if *p == expect, in one instruction without a lock prefix:
 * only a signal handler on this thread can race with it. Returns what *p
 * held. */
static inline uint64_t sf_arch_cas_local(uint64_t *p, uint64_t expect, uint64_t want)
{
	__asm__ volatile("cmpxchgq %2, %1" : "+a"(expect), "+m"(*p) : "r"(want) : "cc", "memory");
	return expect;
}

/* Block stores without vector registers (rep stos/movs: a few times faster
 * than a loop of 8-byte stores). */
static inline void sf_arch_zero_words(void *p, size_t words)
{
	__asm__ volatile("rep stosq" : "+D"(p), "+c"(words) : "a"(0ull) : "memory");
}

static inline void sf_arch_copy_bytes(void *d, const void *s, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

static inline void sf_arch_fill_bytes(void *d, int c, size_t n)
{
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
}

/* A pointer saved by setjmp, mangled with the thread's pointer guard
 * (%fs:0x30): rotated left by 17 after an xor. */
static inline uint64_t sf_arch_jmpbuf_word(const void *env, int i)
{
	uint64_t v = ((const uint64_t *)env)[i], guard;
	__asm__("mov %%fs:0x30, %0" : "=r"(guard));
	return ((v >> 17) | (v << 47)) ^ guard;
}

/* The stack pointer saved by setjmp: glibc keeps it in __jmpbuf[6]. */
static inline uint64_t sf_arch_jmpbuf_sp(const void *env)
{
	return sf_arch_jmpbuf_word(env, 6);
}

/* The setjmp caller's state at the call, for sf_arch_walk_from: pc
 * (__jmpbuf[7]), sp and rbp (__jmpbuf[1]), all three mangled. */
static inline void sf_arch_jmpbuf_state(const void *env, uint64_t at[3])
{
	at[0] = sf_arch_jmpbuf_word(env, 7);
	at[1] = sf_arch_jmpbuf_sp(env);
	at[2] = sf_arch_jmpbuf_word(env, 1);
}

/* A spin-wait loop's pause. */
static inline void sf_arch_cpu_relax(void)
{
	__builtin_ia32_pause();
}

#endif
