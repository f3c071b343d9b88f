/* The shadow stack of open frames that the x86-64 trampolines keep
 * (trampoline.S, struct sf_thread in runtime.h). Shared by C and the
 * assembler, so plain defines only. */
#ifndef SFTRACE_RUNTIME_SF_SHADOW_H
#define SFTRACE_RUNTIME_SF_SHADOW_H

#define SF_ARCH_SHADOW 1   /* the trampolines push and pop frames */
#define SF_SHADOW_CAP 512  /* entries per thread, a power of two (a 4 KiB mapping) */
/* Offsets in struct sf_thread (runtime.h checks them). */
/* The depth is kept as shadow_tp = &shadow[depth] (struct sf_thread). */
#define SF_SHADOW_TP 1
#define SF_SHADOW_TP_OFF 88
#define SF_SHADOW_PLIM_OFF 96 /* shadow_plim: &shadow[SF_SHADOW_CAP] once mapped, 0 before */
#define SF_SHADOW_PTR_OFF 104 /* shadow: the array (entry 0) */
#define SF_SHADOW_BLK_OFF 112 /* shadow_blk: 0 until its mapping is tried */
#define SF_SHADOW_TOP_OFF 128 /* shadow_top: the last entry pushed past the array */
#define SF_SHADOW_OV_OFF 168  /* shadow_ov: the entries past the array */
/* Entries past the array: 4 MiB of address space, mapped at the thread's
 * first push there, pages touched as the stack goes deeper (unwind.c). */
#define SF_SHADOW_OV_CAP (1 << 19)

#endif
