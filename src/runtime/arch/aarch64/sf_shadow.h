/* The shadow stack of open frames that the aarch64 trampolines keep
 * (trampoline.S, struct sf_thread in runtime.h), laid out as on x86-64.
 * Shared by C and the assembler, so plain defines only. */
#ifndef SFTRACE_RUNTIME_SF_SHADOW_H
#define SFTRACE_RUNTIME_SF_SHADOW_H

#define SF_ARCH_SHADOW 1      /* the trampolines push and pop frames */
#define SF_SHADOW_CAP 512     /* entries per thread, a power of two (a 4 KiB mapping) */
#define SF_SHADOW_CAP_LOG2 9  /* the push tests depth >> 9: no flags changed */
/* Offsets in struct sf_thread (runtime.h checks them). */
#define SF_SHADOW_DEPTH_OFF 88
#define SF_SHADOW_CAP_OFF 96  /* shadow_cap: SF_SHADOW_CAP once mapped, 0 before */
#define SF_SHADOW_PTR_OFF 104 /* shadow: the array (entry 0) */
#define SF_SHADOW_BLK_OFF 112 /* shadow_blk: 0 until its mapping is tried */

#if (1 << SF_SHADOW_CAP_LOG2) != SF_SHADOW_CAP
#error "SF_SHADOW_CAP_LOG2 does not match SF_SHADOW_CAP"
#endif

#endif
