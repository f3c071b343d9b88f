/* XRay sled trampolines for aarch64.
 *
 * A patched sled (patch.c) pushes x17 and x30, loads the trampoline's
 * address into x17 and calls it with blr: we are entered with x30 = sled +
 * 12, the function id at [x30, #16], the sled's x17/x30 pair on top of the
 * stack (16-byte aligned), and x17 free. Everything else is live: x0-x7,
 * x8 (indirect result) and q0-q7 at entry and tail-call sleds, x0-x1 and
 * q0-q3 at exit sleds, x16 at a tail call's indirect branch. The fast path
 * uses x0, x1, x2 and x16, saved, and x17; it changes no flags (cbz and
 * tbz instead of cmp).
 *
 * Fast path: push or pop the frame on the shadow stack (below); read
 * cntvct_el0; check that it lies within SF_TIME_SPAN (2^31)
 * after the batch's time base, so that its low 32 bits identify it (see
 * sf_event_time in src/format/sflog.h); claim an 8-byte record in this
 * thread's buffer by advancing the thread-local cursor with an exclusive
 * pair (ldxr/stxr: a signal handler that lands in between clears the
 * exclusive monitor when it returns, the store fails and we claim again,
 * so claims never overlap); store the record, time low half and word
 * (function id << 4 | kind), with one 64-bit store.
 *
 * Slow path: saves every general register the C code may change, q0-q31,
 * nzcv, fpsr and fpcr, and calls sf_slow_event_at() in C: when the time is
 * outside the span (first event of the thread, a thread idle for a while:
 * nothing claimed yet), or when the claimed record is past the buffer's
 * limit (buffer full), and for every event in monotonic-clock mode.
 *
 * CFI: every instruction here has unwind information. The caller frame it
 * describes is the traced function's caller: the return address is the
 * x30 the sled saved, the CFA the stack pointer before the sled's push. At
 * every sled the traced function has no frame of its own (entry: not yet;
 * exit and tail call: not any more), so a backtrace from inside a
 * trampoline goes on from the traced function's caller.
 */

#include "sf_shadow.h"

	.text

.macro PUSH2 a, b, size=16
	stp	\a, \b, [sp, #-\size]!
	.cfi_adjust_cfa_offset \size
.endm
.macro POP2 a, b, size=16
	ldp	\a, \b, [sp], #\size
	.cfi_adjust_cfa_offset -\size
.endm

/* A hidden function symbol, with its FDE starting as the sled left things. */
/* q0-q31 stored at, or loaded from, [sp, #off]: 512 bytes. */
.macro SAVE_Q off
	stp	q0, q1, [sp, #(\off + 0)]
	stp	q2, q3, [sp, #(\off + 32)]
	stp	q4, q5, [sp, #(\off + 64)]
	stp	q6, q7, [sp, #(\off + 96)]
	stp	q8, q9, [sp, #(\off + 128)]
	stp	q10, q11, [sp, #(\off + 160)]
	stp	q12, q13, [sp, #(\off + 192)]
	stp	q14, q15, [sp, #(\off + 224)]
	stp	q16, q17, [sp, #(\off + 256)]
	stp	q18, q19, [sp, #(\off + 288)]
	stp	q20, q21, [sp, #(\off + 320)]
	stp	q22, q23, [sp, #(\off + 352)]
	stp	q24, q25, [sp, #(\off + 384)]
	stp	q26, q27, [sp, #(\off + 416)]
	stp	q28, q29, [sp, #(\off + 448)]
	stp	q30, q31, [sp, #(\off + 480)]
.endm
.macro LOAD_Q off
	ldp	q0, q1, [sp, #(\off + 0)]
	ldp	q2, q3, [sp, #(\off + 32)]
	ldp	q4, q5, [sp, #(\off + 64)]
	ldp	q6, q7, [sp, #(\off + 96)]
	ldp	q8, q9, [sp, #(\off + 128)]
	ldp	q10, q11, [sp, #(\off + 160)]
	ldp	q12, q13, [sp, #(\off + 192)]
	ldp	q14, q15, [sp, #(\off + 224)]
	ldp	q16, q17, [sp, #(\off + 256)]
	ldp	q18, q19, [sp, #(\off + 288)]
	ldp	q20, q21, [sp, #(\off + 320)]
	ldp	q22, q23, [sp, #(\off + 352)]
	ldp	q24, q25, [sp, #(\off + 384)]
	ldp	q26, q27, [sp, #(\off + 416)]
	ldp	q28, q29, [sp, #(\off + 448)]
	ldp	q30, q31, [sp, #(\off + 480)]
.endm

.macro FUNC name
	.globl	\name
	.hidden	\name
	.type	\name, %function
	.p2align 4
\name:
	.cfi_startproc
	.cfi_def_cfa sp, 16
	.cfi_offset x30, -8
	.cfi_offset x17, -16
.endm
.macro ENDFUNC name
	.cfi_endproc
	.size	\name, .-\name
.endm

/* \reg = &sf_self (initial-exec TLS); \tmp is clobbered. */
.macro SELF reg, tmp
	adrp	\reg, :gottprel:sf_self
	ldr	\reg, [\reg, #:gottprel_lo12:sf_self]
	mrs	\tmp, tpidr_el0
	add	\reg, \reg, \tmp
.endm

/* The shadow stack of open frames, as on x86-64 (struct sf_thread: depth
 * at SF_SHADOW_DEPTH_OFF, the SF_SHADOW_CAP entries in a per-thread
 * mapping at SF_SHADOW_PTR_OFF, stored while the depth is below
 * shadow_cap (SF_SHADOW_CAP_OFF, 0 until the first push maps it); the
 * rules on signals, the array's outermost entries and pops at depth 0 are
 * x86_64/trampoline.S's). An entry pushes the traced function's CFA - 8,
 * plus 1 for a window frame: its CFA is its stack pointer at entry (bl
 * pushes nothing), sp + 48 here (the sled's 16 bytes and our 32). The
 * same value as x86-64's "address of the return address", so unwind.c
 * compares alike on both: a landing's stack pointer (the jmp_buf's sp,
 * the setjmp caller's own; _Unwind_GetCFA of the catching frame's
 * context, its sp at the call) is at or above the CFA of every frame it
 * abandons, so their entries are below it; the live frame there has its
 * CFA 16 or more above it (sp stays 16-byte aligned, and a frame that
 * calls saves x30 on the stack), so its entry is not; and unwind.c's
 * walk finds the frame of the array's last entry by CFA - 8. Exit and
 * tail-call trampolines pop. No flags change (sub + tbz, cbz).
 * x1 holds this thread's struct sf_thread; x2, x16 and x17 are free. */
.macro SHADOW_PUSH window, deep, pushed, retry
	ldr	x2, [x1, #SF_SHADOW_DEPTH_OFF]
	add	x16, x2, #1
	str	x16, [x1, #SF_SHADOW_DEPTH_OFF]
\retry:
	ldr	x16, [x1, #SF_SHADOW_CAP_OFF]
	sub	x16, x2, x16
	tbz	x16, #63, \deep		/* depth >= capacity: out of line (SHADOW_DEEP) */
	ldr	x16, [x1, #SF_SHADOW_PTR_OFF]
	add	x17, sp, #(40 + \window)
	str	x17, [x16, x2, lsl #3]
\pushed:
.endm
/* Deeper than the array: counted only. Inside its bounds with no array
 * yet (shadow_cap 0): the thread's first push maps it (sf_shadow_grow,
 * x30 kept around the call) and tries again; a thread that cannot have
 * it counts every push only. */
.macro SHADOW_DEEP window, deep, pushed, retry
\deep:
	lsr	x16, x2, #SF_SHADOW_CAP_LOG2
	cbnz	x16, \pushed
	ldr	x16, [x1, #SF_SHADOW_BLK_OFF]
	cbnz	x16, \pushed		/* none to be had */
	stp	x29, x30, [sp, #-16]!	/* x30: the return into the sled (the CFI's is the sled's save) */
	.cfi_adjust_cfa_offset 16
	bl	sf_shadow_grow
	ldp	x29, x30, [sp], #16
	.cfi_adjust_cfa_offset -16
	b	\retry
.endm
.macro SHADOW_POP
	ldr	x2, [x1, #SF_SHADOW_DEPTH_OFF]
	cbz	x2, 9f			/* it was 0: stays 0 */
	sub	x2, x2, #1
	str	x2, [x1, #SF_SHADOW_DEPTH_OFF]
9:
.endm
/* Maps the thread's array (unwind.c, sf_shadow_blk_alloc: C built
 * -mgeneral-regs-only, raw system calls): saves every general register
 * and the flags a C call may change; called with x29 and x30 saved. */
	.hidden	sf_shadow_grow
	.type	sf_shadow_grow, %function
	.p2align 4
sf_shadow_grow:
	.cfi_startproc
	PUSH2	x0, x1
	PUSH2	x2, x3
	PUSH2	x4, x5
	PUSH2	x6, x7
	PUSH2	x8, x9
	PUSH2	x10, x11
	PUSH2	x12, x13
	PUSH2	x14, x15
	PUSH2	x16, x17
	mrs	x0, nzcv
	PUSH2	x18, x0
	PUSH2	x29, x30
	.cfi_rel_offset x29, 0
	.cfi_rel_offset x30, 8
	bl	sf_shadow_blk_alloc
	POP2	x29, x30
	.cfi_restore x29
	.cfi_restore x30
	POP2	x18, x0
	msr	nzcv, x0
	POP2	x16, x17
	POP2	x14, x15
	POP2	x12, x13
	POP2	x10, x11
	POP2	x8, x9
	POP2	x6, x7
	POP2	x4, x5
	POP2	x2, x3
	POP2	x0, x1
	ret
	.cfi_endproc
	.size	sf_shadow_grow, .-sf_shadow_grow

/* kind 1 (entry) pushes, with window = 1 for a window frame; 2 and 3 pop. */
.macro SHADOW kind, window, deep, pushed, retry
	.if \kind == 1
	SHADOW_PUSH \window, \deep, \pushed, \retry
	.else
	SHADOW_POP
	.endif
.endm
.macro SHADOW_TAIL kind, window, deep, pushed, retry
	.if \kind == 1
	SHADOW_DEEP \window, \deep, \pushed, \retry
	.endif
.endm

/* struct sf_thread: cursor at 0, limit at 8, window_depth at 16, base at 24
 * (runtime.h checks these). */
.macro FAST_PATH name, kind, window=0
	FUNC	\name
	PUSH2	x0, x1, 32
	stp	x2, x16, [sp, #16]
	.cfi_rel_offset x2, 16
	.cfi_rel_offset x16, 24
	SELF	x1, x2
	SHADOW	\kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
	mrs	x0, cntvct_el0
	ldr	x2, [x1, #24]
	sub	x2, x0, x2
	lsr	x2, x2, #31		/* zero iff base <= time < base + 2^31 */
	cbnz	x2, 2f
1:	ldxr	x2, [x1]
	add	x16, x2, #8
	stxr	w17, x16, [x1]
	cbnz	w17, 1b
	ldr	x16, [x1, #8]
	sub	x16, x2, x16
	tbz	x16, #63, 3f		/* claimed >= limit: buffer full */
	ldr	w16, [x30, #16]		/* function id, from the sled */
	ror	w16, w16, #28		/* id rotated left by SF_KIND_BITS: a tail sled's
					 * SF_TAIL_ENTRY_ID_BITS come down to bits 2-3 (kind 15) */
	orr	w16, w16, #\kind
	bfi	x0, x16, #32, #32	/* the word above the time's low half (x0 is restored) */
	str	x0, [x2]
	ldp	x2, x16, [sp, #16]
	POP2	x0, x1, 32
	ret
	.cfi_adjust_cfa_offset 32
2:	mov	x2, #0			/* nothing claimed */
3:	mov	x16, #\kind		/* x2: the claimed record, for sf_slow_event_at */
	b	sf_slow_common
	SHADOW_TAIL \kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
	ENDFUNC	\name
.endm

/* Monotonic-clock mode: every event takes the slow path, which reads
 * CLOCK_MONOTONIC in C. time = 0 tells it so. */
.macro MONO_PATH name, kind, window=0
	FUNC	\name
	PUSH2	x0, x1, 32
	stp	x2, x16, [sp, #16]
	.cfi_rel_offset x2, 16
	.cfi_rel_offset x16, 24
	SELF	x1, x2
	SHADOW	\kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
	mov	x0, #0
	mov	x2, #0
	mov	x16, #\kind
	b	sf_slow_common
	SHADOW_TAIL \kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
	ENDFUNC	\name
.endm

	FAST_PATH sf_tramp_entry, 1
	FAST_PATH sf_tramp_exit, 2
	FAST_PATH sf_tramp_tail, 3
	MONO_PATH sf_tramp_entry_mono, 1
	MONO_PATH sf_tramp_exit_mono, 2
	MONO_PATH sf_tramp_tail_mono, 3
/* The entries of window frames (WINDOW_IN below branches here): the same
 * recorders, whose shadow entry says "window". */
	FAST_PATH sf_tramp_entry_wrec, 1, 1
	MONO_PATH sf_tramp_entry_mono_wrec, 1, 1

/* Within mode (sftrace filter --within): functions outside the selection
 * record only while a selected ("window") function is on this thread's
 * stack. struct sf_thread.window_depth (offset 16) counts open window
 * frames. Gated trampolines test it and return at once when it is zero;
 * window trampolines count their frame in or out, then record. x16 is
 * kept (a tail call's branch may use it), x17 is ours. A signal handler
 * landing inside the count's load and store changes it by as much up as
 * down, so the store stays right. */
/* The prologue and epilogue all three share: x16 saved (with its CFI) and
 * x16 = this thread's struct sf_thread. */
.macro SAVE_X16_SELF
	str	x16, [sp, #-16]!
	.cfi_adjust_cfa_offset 16
	.cfi_rel_offset x16, 0
	SELF	x16, x17
.endm

.macro RESTORE_X16
	ldr	x16, [sp], #16
	.cfi_adjust_cfa_offset -16
.endm

.macro GATED name, target
	FUNC	\name
	SAVE_X16_SELF
	ldr	x16, [x16, #16]
	cbnz	x16, 1f
	RESTORE_X16
	ret
	.cfi_adjust_cfa_offset 16
1:	RESTORE_X16
	b	\target
	ENDFUNC	\name
.endm

.macro WINDOW_IN name, target
	FUNC	\name
	SAVE_X16_SELF
	ldr	x17, [x16, #16]
	add	x17, x17, #1
	str	x17, [x16, #16]
	RESTORE_X16
	b	\target
	ENDFUNC	\name
.endm

.macro WINDOW_OUT name, target
	FUNC	\name
	SAVE_X16_SELF
	ldr	x17, [x16, #16]
	cbz	x17, 1f
	sub	x17, x17, #1
	str	x17, [x16, #16]
1:	RESTORE_X16
	b	\target
	ENDFUNC	\name
.endm

	GATED	sf_tramp_entry_gated, sf_tramp_entry
	GATED	sf_tramp_exit_gated, sf_tramp_exit
	GATED	sf_tramp_tail_gated, sf_tramp_tail
	GATED	sf_tramp_entry_mono_gated, sf_tramp_entry_mono
	GATED	sf_tramp_exit_mono_gated, sf_tramp_exit_mono
	GATED	sf_tramp_tail_mono_gated, sf_tramp_tail_mono
	WINDOW_IN  sf_tramp_entry_window, sf_tramp_entry_wrec
	WINDOW_OUT sf_tramp_exit_window, sf_tramp_exit
	WINDOW_OUT sf_tramp_tail_window, sf_tramp_tail
	WINDOW_IN  sf_tramp_entry_mono_window, sf_tramp_entry_mono_wrec
	WINDOW_OUT sf_tramp_exit_mono_window, sf_tramp_exit_mono
	WINDOW_OUT sf_tramp_tail_mono_window, sf_tramp_tail_mono

/* Slow path. On entry: the fast path's frame is on the stack (x0 x1 at 0,
 * x2 x16 at 16, above it the sled's x17 x30), x0 = time (0: monotonic
 * mode), x2 = the claimed record (0: none), x16 = kind, x30 = sled + 12.
 * Calls sf_slow_event_at(time, id, kind, claimed), restores everything
 * and returns to the sled. */
	.p2align 4
	.type	sf_slow_common, %function
sf_slow_common:
	.cfi_startproc
	.cfi_def_cfa sp, 48
	.cfi_offset x30, -8
	.cfi_offset x17, -16
	.cfi_offset x16, -24
	.cfi_offset x2, -32
	.cfi_offset x1, -40
	.cfi_offset x0, -48
	PUSH2	x29, x30
	.cfi_rel_offset x29, 0
	mov	x29, sp
	PUSH2	x3, x4
	PUSH2	x5, x6
	PUSH2	x7, x8
	PUSH2	x9, x10
	PUSH2	x11, x12
	PUSH2	x13, x14
	PUSH2	x15, x18
	mrs	x3, nzcv
	mrs	x4, fpsr
	mrs	x5, fpcr
	PUSH2	x3, x4
	PUSH2	x5, xzr
	sub	sp, sp, #512
	.cfi_adjust_cfa_offset 512
	SAVE_Q	0
	ldr	w1, [x30, #16]		/* arg 1: function id; arg 0 (time) is in x0 */
	mov	x3, x2			/* arg 3: claimed */
	mov	w2, w16			/* arg 2: kind */
	bl	sf_slow_event_at
	LOAD_Q	0
	add	sp, sp, #512
	.cfi_adjust_cfa_offset -512
	POP2	x5, xzr
	POP2	x3, x4
	msr	fpcr, x5
	msr	fpsr, x4
	msr	nzcv, x3
	POP2	x15, x18
	POP2	x13, x14
	POP2	x11, x12
	POP2	x9, x10
	POP2	x7, x8
	POP2	x5, x6
	POP2	x3, x4
	POP2	x29, x30
	.cfi_restore x29
	ldp	x2, x16, [sp, #16]
	POP2	x0, x1, 32
	ret
	.cfi_endproc
	.size	sf_slow_common, .-sf_slow_common

/* sf_vec_safe_call3(fn, a, b, c): fn(a, b, c) with q0-q31, fpsr and fpcr
 * saved around it, as the slow path saves them. For C reached from the
 * args trampolines (which store only d0-d7 and restore none of them):
 * their slow part, a slot's hand-off (batch_scan.o is built with vector
 * code, libc's routines use vector registers), must leave the program's
 * vector registers as they were; at a sled those hold the function's
 * floating-point arguments or return values. x19-x20 are callee-saved. */
	.globl	sf_vec_safe_call3
	.hidden	sf_vec_safe_call3
	.type	sf_vec_safe_call3, %function
	.p2align 4
sf_vec_safe_call3:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset x29, -32
	.cfi_offset x30, -24
	mov	x29, sp
	stp	x19, x20, [sp, #16]
	.cfi_offset x19, -16
	.cfi_offset x20, -8
	mrs	x19, fpsr
	mrs	x20, fpcr
	sub	sp, sp, #528
	.cfi_adjust_cfa_offset 528
	SAVE_Q	16
	stp	x19, x20, [sp, #0]
	mov	x19, x0
	mov	x0, x1
	mov	x1, x2
	mov	x2, x3
	blr	x19
	LOAD_Q	16
	ldp	x19, x20, [sp, #0]
	msr	fpcr, x20
	msr	fpsr, x19
	add	sp, sp, #528
	.cfi_adjust_cfa_offset -528
	ldp	x19, x20, [sp, #16]
	.cfi_restore x19
	.cfi_restore x20
	ldp	x29, x30, [sp], #32
	.cfi_restore x29
	.cfi_restore x30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	sf_vec_safe_call3, .-sf_vec_safe_call3

/* ---- record -A/-R: the args trampolines (src/runtime/args.c) ----
 * Only the sleds of functions whose arguments or return values are asked
 * for come here; every other sled keeps the trampolines above. This path
 * stores x0-x8 and d0-d7 into a struct sf_args_regs (runtime.h: x0-x5 as
 * the argument registers, x0 as the return value, x6 and x7, the 7th and
 * 8th argument registers, in saved[0] and saved[1], then x8, the low 64
 * bits of v0-v7; x30 right after them, which args.c's unaligned loads of
 * a member in the last words may reach), calls sf_args_capture(regs, id, kind), which records an
 * ARGS event, puts x0-x16, x18 and x30 back and branches to the ordinary
 * trampoline of its kind (\next) with the stack and x30 as the sled left
 * them; for a --trigger function (sf_args_capture returns nonzero: x17,
 * free here, carries it past the restore) to the monotonic one (\slow),
 * whose slow path looks at the trigger as for SF_VARIANT_SLOW.
 * x9-x16 and x18, which the C code may change (AAPCS64: caller-saved;
 * x18 is a temporary on Linux), are saved above them and put back too:
 * at a tail-call sled the branch target may be in any of them (`br x9`
 * when x8 carries a struct result's address; `br x16` under BTI, which
 * wants x16 or x17 for an indirect tail call); at the entry and exit of
 * a preserve_most function x9-x15 hold its caller's values. x17 is the
 * sled's own (saved and put back by the sled). The C code is built
 * -mgeneral-regs-only, so the vector registers are only read. x30 (the
 * sled's return) is kept in the frame without CFI: the caller frame the
 * unwinder sees stays the traced function's caller, as everywhere here.
 * The frame: struct sf_args_regs at 0 (144 bytes), x30 at 144, x18 at
 * 152, x9-x16 from 160. */
.macro ARGS_PATH name, kind, next, slow
	FUNC	\name
	sub	sp, sp, #224
	.cfi_adjust_cfa_offset 224
	stp	x0, x1, [sp, #0]
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	str	x0, [sp, #48]
	stp	x6, x7, [sp, #56]
	str	x8, [sp, #72]
	stp	d0, d1, [sp, #80]
	stp	d2, d3, [sp, #96]
	stp	d4, d5, [sp, #112]
	stp	d6, d7, [sp, #128]
	stp	x30, x18, [sp, #144]
	stp	x9, x10, [sp, #160]
	stp	x11, x12, [sp, #176]
	stp	x13, x14, [sp, #192]
	stp	x15, x16, [sp, #208]
	mov	x0, sp
	ldr	w1, [x30, #16]		/* function id, from the sled */
	mov	w2, #\kind
	bl	sf_args_capture
	mov	w17, w0
	ldp	x0, x1, [sp, #0]
	ldp	x2, x3, [sp, #16]
	ldp	x4, x5, [sp, #32]
	ldp	x6, x7, [sp, #56]
	ldr	x8, [sp, #72]
	ldp	x30, x18, [sp, #144]
	ldp	x9, x10, [sp, #160]
	ldp	x11, x12, [sp, #176]
	ldp	x13, x14, [sp, #192]
	ldp	x15, x16, [sp, #208]
	add	sp, sp, #224
	.cfi_adjust_cfa_offset -224
	cbnz	w17, \slow
	b	\next
	ENDFUNC	\name
.endm

	ARGS_PATH sf_tramp_entry_args, 1, sf_tramp_entry, sf_tramp_entry_mono
	ARGS_PATH sf_tramp_exit_args, 2, sf_tramp_exit, sf_tramp_exit_mono
	ARGS_PATH sf_tramp_entry_mono_args, 1, sf_tramp_entry_mono, sf_tramp_entry_mono
	ARGS_PATH sf_tramp_exit_mono_args, 2, sf_tramp_exit_mono, sf_tramp_exit_mono
	ARGS_PATH sf_tramp_tail_args, 3, sf_tramp_tail, sf_tramp_tail_mono
	ARGS_PATH sf_tramp_tail_mono_args, 3, sf_tramp_tail_mono, sf_tramp_tail_mono
	/* the entries of window frames whose values are asked for: on to
	 * the window's recorders (a trigger is never a window: trigger.c) */
	ARGS_PATH sf_tramp_entry_args_wrec, 1, sf_tramp_entry_wrec, sf_tramp_entry_mono_wrec
	ARGS_PATH sf_tramp_entry_mono_args_wrec, 1, sf_tramp_entry_mono_wrec, sf_tramp_entry_mono_wrec

/* Within mode with -A/-R (SF_VARIANT_ARGS_GATED, _WINDOW): the gate or
 * the window's count, as above, in front of the args trampolines. Only
 * the sleds with values to read come here; the others keep the gated
 * and window trampolines above. */
	GATED	sf_tramp_entry_args_gated, sf_tramp_entry_args
	GATED	sf_tramp_exit_args_gated, sf_tramp_exit_args
	GATED	sf_tramp_tail_args_gated, sf_tramp_tail_args
	GATED	sf_tramp_entry_mono_args_gated, sf_tramp_entry_mono_args
	GATED	sf_tramp_exit_mono_args_gated, sf_tramp_exit_mono_args
	GATED	sf_tramp_tail_mono_args_gated, sf_tramp_tail_mono_args
	WINDOW_IN  sf_tramp_entry_args_window, sf_tramp_entry_args_wrec
	WINDOW_OUT sf_tramp_exit_args_window, sf_tramp_exit_args
	WINDOW_OUT sf_tramp_tail_args_window, sf_tramp_tail_args
	WINDOW_IN  sf_tramp_entry_mono_args_window, sf_tramp_entry_mono_args_wrec
	WINDOW_OUT sf_tramp_exit_mono_args_window, sf_tramp_exit_mono_args
	WINDOW_OUT sf_tramp_tail_mono_args_window, sf_tramp_tail_mono_args

	.section .note.GNU-stack, "", %progbits
