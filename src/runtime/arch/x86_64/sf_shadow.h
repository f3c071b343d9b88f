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

#endif
