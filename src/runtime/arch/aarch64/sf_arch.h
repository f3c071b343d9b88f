/* aarch64 pieces of the runtime that C code inlines (the same names as in
 * every architecture's sf_arch.h): raw system calls, the generic timer's
 * counter, block stores, the longjmp buffer. */
#ifndef SFTRACE_RUNTIME_SF_ARCH_H
#define SFTRACE_RUNTIME_SF_ARCH_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#include "sf_shadow.h"

#define SF_GLIBC_BASE_VERSION "GLIBC_2.17" /* glibc's first symbol version here (exports.map) */
/* dladdr1's first version (libdl's; glibc 2.34 gave it GLIBC_2.34 in libc): dladdr.c */
#define SF_GLIBC_DLADDR1_OLD "GLIBC_2.17"
/* glibc's only version of posix_spawn and posix_spawnp here (exec_env.c):
 * aarch64 began after 2.15, so there is no compat version */
#define SF_GLIBC_SPAWN_VERSION "GLIBC_2.17"
/* glibc's versions of quick_exit (hooks.c): the default since 2.24, and
 * the first one, which also runs thread_local destructors */
#define SF_GLIBC_QUICK_EXIT_VERSION "GLIBC_2.24"
#define SF_GLIBC_QUICK_EXIT_COMPAT "GLIBC_2.17"
#define SF_ARCH_MACHINE EM_AARCH64
#define SF_ARCH_SLED_SIZE 32 /* bytes of an XRay sled: `b #32` + 7 nops */

static inline long sf_syscall3(long nr, long a, long b, long c)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
}

static inline long sf_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}

/* The calling thread's thread pointer (tpidr_el0: glibc's TCB), and
 * another one set for the calling thread (writer.c: the keeper thread runs
 * each request on its requester's, which waits meanwhile). */
static inline void *sf_arch_tp(void)
{
	return __builtin_thread_pointer();
}

static inline void sf_arch_set_tp(void *tp)
{
	__asm__ volatile("msr tpidr_el0, %0" : : "r"(tp) : "memory");
}

/* The event clock's raw counter: the generic timer's virtual count, which
 * runs at a constant rate (cntfrq_el0) on every core. */
static inline uint64_t sf_arch_counter(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

/* The stack pointer: where the caller's frame ends, read without making
 * a frame of our own. */
static inline __attribute__((always_inline)) uint64_t sf_arch_stack_pointer(void)
{
	uint64_t sp;
	__asm__("mov %0, sp" : "=r"(sp));
	return sp;
}

/* 1 if addr lies below the stack pointer (x86_64 compares it in place). */
static inline __attribute__((always_inline)) int sf_arch_below_sp(uint64_t addr)
{
	return addr < sf_arch_stack_pointer();
}

/* *p = want if *p == expect; only a signal handler on this thread can race
 * with it. An exclusive pair: a handler that runs in between clears the
 * exclusive monitor on its return, so the store fails and we look again.
 * Returns what *p held. */
static inline uint64_t sf_arch_cas_local(uint64_t *p, uint64_t expect, uint64_t want)
{
	uint64_t seen;
	uint32_t fail;
	__asm__ volatile("1:	ldxr	%0, [%2]\n"
			 "	cmp	%0, %3\n"
			 "	b.ne	2f\n"
			 "	stxr	%w1, %4, [%2]\n"
			 "	cbnz	%w1, 1b\n"
			 "2:"
			 : "=&r"(seen), "=&r"(fail)
			 : "r"(p), "r"(expect), "r"(want)
			 : "cc", "memory");
	return seen;
}

/* Block stores in general registers (the runtime keeps off the vector
 * registers), written as assembly so the compiler cannot turn them back
 * into calls to memset or memcpy. */
static inline void sf_arch_zero_words(void *p, size_t words)
{
	__asm__ volatile("	tbz	%1, #0, 1f\n"
			 "	str	xzr, [%0], #8\n"
			 "1:	lsr	%1, %1, #1\n"
			 "	cbz	%1, 3f\n"
			 "2:	stp	xzr, xzr, [%0], #16\n"
			 "	subs	%1, %1, #1\n"
			 "	b.ne	2b\n"
			 "3:"
			 : "+r"(p), "+r"(words)
			 :
			 : "cc", "memory");
}

static inline void sf_arch_copy_bytes(void *d, const void *s, size_t n)
{
	uint64_t t;
	__asm__ volatile("	cmp	%2, #8\n"
			 "	b.lo	2f\n"
			 "1:	ldr	%3, [%1], #8\n"
			 "	str	%3, [%0], #8\n"
			 "	sub	%2, %2, #8\n"
			 "	cmp	%2, #8\n"
			 "	b.hs	1b\n"
			 "2:	cbz	%2, 4f\n"
			 "3:	ldrb	%w3, [%1], #1\n"
			 "	strb	%w3, [%0], #1\n"
			 "	subs	%2, %2, #1\n"
			 "	b.ne	3b\n"
			 "4:"
			 : "+r"(d), "+r"(s), "+r"(n), "=&r"(t)
			 :
			 : "cc", "memory");
}

static inline void sf_arch_fill_bytes(void *d, int c, size_t n)
{
	__asm__ volatile("	cbz	%1, 2f\n"
			 "1:	strb	%w2, [%0], #1\n"
			 "	subs	%1, %1, #1\n"
			 "	b.ne	1b\n"
			 "2:"
			 : "+r"(d), "+r"(n)
			 : "r"(c)
			 : "cc", "memory");
}

/* The stack pointer saved by setjmp: glibc keeps it in __jmpbuf[13],
 * xored with the process's pointer guard (__pointer_chk_guard, found by
 * sf_arch_clock_init). It is the setjmp caller's sp (bl pushes nothing):
 * the frames it called since have their CFA, their sp at entry, at or
 * below it, and their shadow entry (CFA - 8, trampoline.S) below it. */
extern uint64_t sf_arch_pointer_guard __attribute__((visibility("hidden")));

static inline uint64_t sf_arch_jmpbuf_sp(const void *env)
{
	return ((const uint64_t *)env)[13] ^ sf_arch_pointer_guard;
}

/* The setjmp caller's state at the call, for sf_arch_walk_from: its
 * return address x30 (__jmpbuf[11], mangled like sp), sp, and x29
 * (__jmpbuf[10], kept as is). */
static inline void sf_arch_jmpbuf_state(const void *env, uint64_t at[3])
{
	const uint64_t *jb = env;
	at[0] = jb[11] ^ sf_arch_pointer_guard;
	at[1] = sf_arch_jmpbuf_sp(env);
	at[2] = jb[10];
}

/* A spin-wait loop's pause. */
static inline void sf_arch_cpu_relax(void)
{
	__asm__ volatile("yield");
}

#endif
