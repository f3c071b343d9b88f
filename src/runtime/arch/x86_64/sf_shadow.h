/* The shadow stack of open frames that the x86-64 trampolines keep
 * (trampoline.S, struct sf_thread in runtime.h). Shared by C and the
 * assembler, so plain defines only. */
#ifndef SFTRACE_RUNTIME_SF_SHADOW_H
#define SFTRACE_RUNTIME_SF_SHADOW_H

#define SF_ARCH_SHADOW 1   /* the trampolines push and pop frames */
#define SF_SHADOW_CAP 512  /* entries per thread, a power of two (4 KiB of TLS) */
/* Offsets in struct sf_thread (runtime.h checks them). */
#define SF_SHADOW_DEPTH_OFF 88
#define SF_SHADOW_OFF 104
#define SF_SHADOW_TOP_OFF 4200 /* shadow_top: the last entry pushed past the array */
#define SF_SHADOW_OV_OFF 4240  /* shadow_ov: the entries past the array */
/* Entries past the array: 4 MiB of address space, mapped at the thread's
 * first push there, pages touched as the stack goes deeper (unwind.c). */
#define SF_SHADOW_OV_CAP (1 << 19)

#endif
