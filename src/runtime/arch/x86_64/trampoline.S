/* XRay sled trampolines for x86-64.
 *
 * A patched entry or tail-call sled is `mov $id, %r10d; call tramp`, a
 * patched exit sled is `mov $id, %r10d; jmp tramp` in place of the `ret`
 * (our `ret` then returns to the function's caller); a far sled (an object
 * beyond a rel32 of us) reaches us through a thunk that sets r10 the same
 * way ("Far sleds", at the end). We are entered with the
 * stack 8 bytes off the ABI's 16-byte alignment, with argument registers
 * (rdi rsi rdx rcx r8 r9 rax, xmm0-7) live at entry and return values (rax
 * rdx xmm0 xmm1 st0) live at exit, so the fast path touches only rax, rdx
 * and rcx, and saves them. Flags are dead at sleds and r10 is the sled's own.
 *
 * Fast path: read the TSC; check that it lies within SF_TIME_SPAN (2^31)
 * after the batch's time base, so that its low 32 bits identify it (see
 * sf_event_time in src/format/sflog.h); claim an 8-byte record in this
 * thread's buffer with one `xadd` on the thread-local cursor; store the low
 * half of the time, then the word (function id << 4 | kind) that makes the
 * record valid. xadd is a single instruction, so a signal handler that
 * records events itself can land before or after it but never in the
 * middle: claims never overlap. A handler may start a new batch between
 * our span check and our claim; its base is then later than our time by
 * the handler's run time, which the signed 32-bit difference still covers.
 *
 * Slow path, which saves every register, including the vector state with
 * xsave (libc routines called from there may use vector registers; the
 * component mask leaves out AMX tiles, see clock.c), and
 * calls sf_slow_event_tramp() in C: when the time is outside the span (first
 * event of the thread, a thread idle for a while: nothing claimed yet), or
 * when the claimed record is past the buffer's limit (buffer full).
 */

#include "sf_shadow.h"

	.text

/* CFI. Every instruction here has unwind information, so debuggers,
 * perf --call-graph dwarf, libgcc/libunwind and Rust backtraces walk from
 * inside a trampoline (a breakpoint, a signal) to the traced function and
 * its callers. Entry and tail trampolines are called from the sled, exit
 * trampolines jumped to from it after the function's frame is gone: either
 * way the return address is on top of the stack at entry, as for any
 * function. PUSHQ and POPQ keep the CFA offset in step. */
.macro PUSHQ reg
	push	\reg
	.cfi_adjust_cfa_offset 8
.endm
.macro POPQ reg
	pop	\reg
	.cfi_adjust_cfa_offset -8
.endm

/* The shadow stack of open frames (struct sf_thread in runtime.h: the
 * depth kept as shadow_tp, &shadow[depth], at SF_SHADOW_TP_OFF; the
 * SF_SHADOW_CAP entries in a per-thread mapping, mapped at the thread's
 * first push, SHADOW_DEEP; a push stores below shadow_plim only, 0 until
 * then: no load of the array's address on the fast path). An entry
 * pushes the address of the traced function's return address (rsp + 32
 * here: our three pushes and the sled's call), plus 1 for a window frame;
 * an exit or tail call pops it. unwind.c closes the frames a longjmp or an
 * exception abandons by popping those below the landing's stack pointer,
 * with no unwinder. The depth is claimed before the slot is written, so a
 * signal handler that traces its own calls in between uses the slots
 * above; frames deeper than SF_SHADOW_CAP go to the overflow area and
 * shadow_top (SHADOW_DEEP, out of line: a shallow push runs the same 7
 * instructions as before), or are counted only when it is missing or
 * full (the array keeps the outermost ones: a landing below them abandons
 * every deeper frame too; unwind.c walks only for a target deeper than
 * the stored entries); a pop at depth 0 (an exit whose entry came before patching)
 * leaves it at 0.
 * The push comes before the entry's event store and the pop before the
 * exit's: a signal handler that lands (siglongjmp) in between abandons
 * a half-entered frame (pushed, no ENTRY: it is below the landing) or a
 * half-exited one (popped, EXIT never stored). Either way it is the
 * innermost frame, so the landing's event says the depth left open
 * (SF_EV_UNWIND_TO), not how many frames it popped: the reader then
 * closes exactly the frames it has above that depth.
 * rcx holds sf_self's TLS offset; rax and rdx are free. */
/* The depth changes by one instruction (a memory add, which no signal
 * can split): a handler whose first push maps the thread's array
 * (sf_shadow_blk_grow moves shadow_tp from sf_shadow_none into it) can
 * come between any two of these, and a load-add-store of shadow_tp
 * would store the old array's pointer over the moved one, after which
 * pushes climbed past sf_shadow_none through the runtime's globals
 * (skeptic29t's signal flood on fresh threads). Loaded after the add,
 * shadow_tp is in whatever array the thread has then. */
.macro SHADOW_PUSH window, deep, pushed, retry
	addq	$8, %fs:SF_SHADOW_TP_OFF(%rcx)
	mov	%fs:SF_SHADOW_TP_OFF(%rcx), %rax
	sub	$8, %rax		/* the entry's slot: shadow_tp before the push */
\retry:
	cmp	%fs:SF_SHADOW_PLIM_OFF(%rcx), %rax
	jae	\deep			/* past the array, or no array yet: SHADOW_DEEP, out of line */
	lea	32+\window(%rsp), %rdx
	mov	%rdx, (%rax)
\pushed:
.endm
/* A push past the array (rax: shadow_tp before it; the CFI state is the
 * one at SHADOW). The entry goes to shadow_top, which _Unwind_SetIP's
 * fast path compares with there, and to the overflow area, entry
 * depth - SF_SHADOW_CAP, mapped at the thread's first push past the
 * array (sf_shadow_ov_grow: from then on every entry past the array is
 * stored; a push that finds it missing at a deeper index, or full, is
 * counted only, as every one was before). A push while the thread has
 * no array (shadow_plim 0) comes here too: the first maps it
 * (sf_shadow_blk_grow, which moves shadow_tp into it) and tries again;
 * when it cannot be had, every push is counted only. */
.macro SHADOW_DEEP window, deep, pushed, retry
\deep:
	cmpq	$0, %fs:SF_SHADOW_PLIM_OFF(%rcx)
	je	3f
	sub	%fs:SF_SHADOW_PTR_OFF(%rcx), %rax
	shr	$3, %rax		/* the depth before the push */
	lea	32+\window(%rsp), %rdx
	mov	%rdx, %fs:SF_SHADOW_TOP_OFF(%rcx)
	sub	$SF_SHADOW_CAP, %rax
	cmp	$SF_SHADOW_OV_CAP, %rax
	jae	\pushed
1:	cmpq	$1, %fs:SF_SHADOW_OV_OFF(%rcx)
	jbe	2f			/* not mapped (0), or none to be had (1) */
	shl	$3, %rax
	add	%fs:SF_SHADOW_OV_OFF(%rcx), %rax
	mov	%rdx, (%rax)
	jmp	\pushed
2:	je	\pushed
	test	%rax, %rax
	jnz	\pushed		/* only at the first entry past the array */
	call	sf_shadow_ov_grow	/* sets shadow_ov to the area or 1 */
	jmp	1b
3:	cmpq	$0, %fs:SF_SHADOW_BLK_OFF(%rcx)
	jne	\pushed		/* none to be had: counted only */
	call	sf_shadow_blk_grow	/* sets shadow_blk to the mapping or 1 */
	mov	%fs:SF_SHADOW_TP_OFF(%rcx), %rax
	sub	$8, %rax		/* shadow_tp before the push, in the array now */
	jmp	\retry
.endm
/* At depth 0 it stays there; else one memory subtract (as the push's
 * add: a handler that maps the array between the test and the subtract
 * moved shadow_tp keeping the depth, which is still above 0). */
.macro SHADOW_POP
	mov	%fs:SF_SHADOW_TP_OFF(%rcx), %rax
	cmp	%fs:SF_SHADOW_PTR_OFF(%rcx), %rax
	jbe	.Lpop0\@		/* depth 0 */
	subq	$8, %fs:SF_SHADOW_TP_OFF(%rcx)
.Lpop0\@:
.endm
/* kind 1 (entry) pushes, with window = 1 for a window frame; 2 and 3 pop. */
.macro SHADOW kind, window, deep, pushed, retry
	.if \kind == 1
	SHADOW_PUSH \window, \deep, \pushed, \retry
	.else
	SHADOW_POP
	.endif
.endm
/* The out-of-line part of an entry's push, after the path's last jump. */
.macro SHADOW_TAIL kind, window, deep, pushed, retry
	.if \kind == 1
	SHADOW_DEEP \window, \deep, \pushed, \retry
	.endif
.endm

/* struct sf_thread: cursor at 0, limit at 8, window_depth at 16, base at 24
 * (runtime.h checks these). */
.macro FAST_PATH kind, slowlabel, spanlabel, window=0
	PUSHQ	%rax
	PUSHQ	%rdx
	PUSHQ	%rcx
	movq	sf_self@gottpoff(%rip), %rcx
	SHADOW	\kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
	rdtsc
	shl	$32, %rdx
	or	%rdx, %rax
	mov	%rax, %rdx
	sub	%fs:24(%rcx), %rdx
	shr	$31, %rdx		/* zero iff base <= time < base + 2^31 */
	jnz	\spanlabel
	mov	$8, %edx
	xadd	%rdx, %fs:(%rcx)
	cmp	%fs:8(%rcx), %rdx
	jae	\slowlabel
	rol	$4, %r10d		/* SF_KIND_BITS; r10 is the sled's scratch. A rotate, not a
					 * shift (same cost): a tail sled's SF_TAIL_ENTRY_ID_BITS come
					 * down to bits 2-3, making kind 3 kind 15 */
	mov	%eax, (%rdx)
	or	$\kind, %r10d
	mov	%r10d, 4(%rdx)
	.cfi_remember_state
	POPQ	%rcx
	POPQ	%rdx
	POPQ	%rax
	ret
	.cfi_restore_state
\spanlabel:
	xor	%ecx, %ecx		/* nothing claimed */
	mov	$\kind, %edx
	jmp	sf_slow_common
\slowlabel:
	mov	%rdx, %rcx		/* the claimed record, for sf_slow_event_tramp */
	mov	$\kind, %edx
	jmp	sf_slow_common
	SHADOW_TAIL \kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
.endm

/* Monotonic-clock mode (no invariant TSC): every event takes the slow path,
 * which reads CLOCK_MONOTONIC in C. time = 0 tells it so. */
.macro MONO_PATH kind, window=0
	PUSHQ	%rax
	PUSHQ	%rdx
	PUSHQ	%rcx
	movq	sf_self@gottpoff(%rip), %rcx
	SHADOW	\kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
	xor	%eax, %eax
	xor	%ecx, %ecx
	mov	$\kind, %edx
	jmp	sf_slow_common
	SHADOW_TAIL \kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
.endm

	.globl	sf_tramp_entry
	.hidden	sf_tramp_entry
	.type	sf_tramp_entry, @function
	.p2align 4
sf_tramp_entry:
	.cfi_startproc
	FAST_PATH 1, .Lentry_slow, .Lentry_span
	.cfi_endproc
	.size	sf_tramp_entry, .-sf_tramp_entry

	.globl	sf_tramp_exit
	.hidden	sf_tramp_exit
	.type	sf_tramp_exit, @function
	.p2align 4
sf_tramp_exit:
	.cfi_startproc
	FAST_PATH 2, .Lexit_slow, .Lexit_span
	.cfi_endproc
	.size	sf_tramp_exit, .-sf_tramp_exit

	.globl	sf_tramp_tail
	.hidden	sf_tramp_tail
	.type	sf_tramp_tail, @function
	.p2align 4
sf_tramp_tail:
	.cfi_startproc
	FAST_PATH 3, .Ltail_slow, .Ltail_span
	.cfi_endproc
	.size	sf_tramp_tail, .-sf_tramp_tail

	.globl	sf_tramp_entry_mono
	.hidden	sf_tramp_entry_mono
	.type	sf_tramp_entry_mono, @function
	.p2align 4
sf_tramp_entry_mono:
	.cfi_startproc
	MONO_PATH 1
	.cfi_endproc
	.size	sf_tramp_entry_mono, .-sf_tramp_entry_mono

	.globl	sf_tramp_exit_mono
	.hidden	sf_tramp_exit_mono
	.type	sf_tramp_exit_mono, @function
	.p2align 4
sf_tramp_exit_mono:
	.cfi_startproc
	MONO_PATH 2
	.cfi_endproc
	.size	sf_tramp_exit_mono, .-sf_tramp_exit_mono

	.globl	sf_tramp_tail_mono
	.hidden	sf_tramp_tail_mono
	.type	sf_tramp_tail_mono, @function
	.p2align 4
sf_tramp_tail_mono:
	.cfi_startproc
	MONO_PATH 3
	.cfi_endproc
	.size	sf_tramp_tail_mono, .-sf_tramp_tail_mono

/* The entries of window frames (WINDOW_IN below jumps here): the same
 * recorders, whose shadow entry says "window". */
	.hidden	sf_tramp_entry_wrec
	.type	sf_tramp_entry_wrec, @function
	.p2align 4
sf_tramp_entry_wrec:
	.cfi_startproc
	FAST_PATH 1, .Lentry_wslow, .Lentry_wspan, 1
	.cfi_endproc
	.size	sf_tramp_entry_wrec, .-sf_tramp_entry_wrec

	.hidden	sf_tramp_entry_mono_wrec
	.type	sf_tramp_entry_mono_wrec, @function
	.p2align 4
sf_tramp_entry_mono_wrec:
	.cfi_startproc
	MONO_PATH 1, 1
	.cfi_endproc
	.size	sf_tramp_entry_mono_wrec, .-sf_tramp_entry_mono_wrec

/* Within mode (sftrace filter --within): functions outside the selection
 * record only while a selected ("window") function is on this thread's
 * stack. struct sf_thread.window_depth (offset 16) counts open window
 * frames. Gated trampolines test it and return at once when it is zero;
 * window trampolines count their frame in or out, then record. */
/* A hidden, 16-byte aligned function symbol, with its FDE. */
.macro FUNC name
	.globl	\name
	.hidden	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
.endm
.macro ENDFUNC name
	.cfi_endproc
	.size	\name, .-\name
.endm

.macro GATED name, target
	FUNC	\name
	PUSHQ	%rcx
	movq	sf_self@gottpoff(%rip), %rcx
	cmpq	$0, %fs:16(%rcx)
	POPQ	%rcx
	jne	\target
	ret
	ENDFUNC	\name
.endm

/* The same for entry and exit sleds, without the push and pop: r11 is a
 * scratch register that holds nothing at a function's entry or at its
 * return. (Not at a tail-call sled: an indirect tail jump may be about to
 * use it, so GATED keeps everything there.) */
.macro GATED_R11 name, target
	FUNC	\name
	movq	sf_self@gottpoff(%rip), %r11
	cmpq	$0, %fs:16(%r11)
	jne	\target
	ret
	ENDFUNC	\name
.endm

.macro WINDOW_IN name, target
	FUNC	\name
	PUSHQ	%rcx
	movq	sf_self@gottpoff(%rip), %rcx
	incq	%fs:16(%rcx)
	POPQ	%rcx
	jmp	\target
	ENDFUNC	\name
.endm

.macro WINDOW_OUT name, target
	FUNC	\name
	PUSHQ	%rcx
	movq	sf_self@gottpoff(%rip), %rcx
	cmpq	$0, %fs:16(%rcx)
	je	1f
	decq	%fs:16(%rcx)
1:	POPQ	%rcx
	jmp	\target
	ENDFUNC	\name
.endm

	GATED_R11 sf_tramp_entry_gated, sf_tramp_entry
	GATED_R11 sf_tramp_exit_gated, sf_tramp_exit
	GATED	sf_tramp_tail_gated, sf_tramp_tail
	GATED_R11 sf_tramp_entry_mono_gated, sf_tramp_entry_mono
	GATED_R11 sf_tramp_exit_mono_gated, sf_tramp_exit_mono
	GATED	sf_tramp_tail_mono_gated, sf_tramp_tail_mono
	WINDOW_IN  sf_tramp_entry_window, sf_tramp_entry_wrec
	WINDOW_OUT sf_tramp_exit_window, sf_tramp_exit
	WINDOW_OUT sf_tramp_tail_window, sf_tramp_tail
	WINDOW_IN  sf_tramp_entry_mono_window, sf_tramp_entry_mono_wrec
	WINDOW_OUT sf_tramp_exit_mono_window, sf_tramp_exit_mono
	WINDOW_OUT sf_tramp_tail_mono_window, sf_tramp_tail_mono

/* Called from SHADOW_DEEP at a thread's first push (its array) and at
 * its first push past the array (the overflow area): maps it (C built
 * -mgeneral-regs-only, raw system calls: no vector register, flag or
 * errno the program sees changes). Saves every general register a C call
 * may change. */
.macro GROW name, cfunc
	FUNC	\name
	PUSHQ	%rax
	PUSHQ	%rdx
	PUSHQ	%rcx
	PUSHQ	%rsi
	PUSHQ	%rdi
	PUSHQ	%r8
	PUSHQ	%r9
	PUSHQ	%r10
	PUSHQ	%r11
	PUSHQ	%rbp
	.cfi_rel_offset %rbp, 0
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	and	$-16, %rsp
	call	\cfunc
	mov	%rbp, %rsp
	.cfi_def_cfa_register %rsp
	POPQ	%rbp
	.cfi_restore %rbp
	POPQ	%r11
	POPQ	%r10
	POPQ	%r9
	POPQ	%r8
	POPQ	%rdi
	POPQ	%rsi
	POPQ	%rcx
	POPQ	%rdx
	POPQ	%rax
	ret
	ENDFUNC	\name
.endm
	GROW	sf_shadow_ov_grow, sf_shadow_ov_alloc
	GROW	sf_shadow_blk_grow, sf_shadow_blk_alloc

/* The vector and x87 state saved at (%rsp), 64-byte aligned, in an
 * area of sf_xsave_size bytes (clock.c), and restored from there; both
 * change eax and edx. XRSTOR needs the XSAVE header's reserved bytes to
 * be zero. Only where sf_have_xsave (fxsave64/fxrstor64 otherwise). */
.macro XSAVE_AT_RSP
	xor	%eax, %eax
	mov	%rax, 512(%rsp)
	mov	%rax, 520(%rsp)
	mov	%rax, 528(%rsp)
	mov	%rax, 536(%rsp)
	mov	%rax, 544(%rsp)
	mov	%rax, 552(%rsp)
	mov	%rax, 560(%rsp)
	mov	%rax, 568(%rsp)
	mov	sf_xsave_mask(%rip), %eax
	mov	sf_xsave_mask+4(%rip), %edx
	xsave64	(%rsp)
.endm
.macro XRSTOR_AT_RSP
	mov	sf_xsave_mask(%rip), %eax
	mov	sf_xsave_mask+4(%rip), %edx
	xrstor64 (%rsp)
.endm

/* Slow path. On entry: the caller's rax, rdx, rcx are pushed (rcx on top),
 * rax = time, r10d = function id, edx = kind, rcx = the record address the
 * fast path claimed (0: none). Saves the remaining caller-saved registers
 * and the extended state, calls sf_slow_event_tramp(time, id, kind, claimed,
 * frame: rbp, below which the state is saved and above it the registers),
 * which returns a thread's first record to stamp again (TSC mode) or 0,
 * with a 64-byte aligned stack (xsave leaves rcx alone), restores
 * everything and returns to whoever called the trampoline. */
	.p2align 4
	.type	sf_slow_common, @function
sf_slow_common:
	.cfi_startproc
	.cfi_def_cfa_offset 32	/* return address + the fast path's rax rdx rcx */
	.cfi_rel_offset %rax, 16
	.cfi_rel_offset %rdx, 8
	.cfi_rel_offset %rcx, 0
	PUSHQ	%rdi
	PUSHQ	%rsi
	PUSHQ	%r8
	PUSHQ	%r9
	PUSHQ	%r10
	PUSHQ	%r11
	PUSHQ	%rbp
	.cfi_rel_offset %rbp, 0
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	mov	%rax, %rdi		/* arg 0: time */
	mov	%r10d, %esi		/* arg 1: function id */
	mov	%edx, %r8d		/* kind, kept in r8 across xsave */
	sub	sf_xsave_size(%rip), %rsp
	and	$-64, %rsp
	cmpb	$0, sf_have_xsave(%rip)
	je	1f
	XSAVE_AT_RSP
	mov	%r8d, %edx		/* arg 2: kind; arg 3 (claimed) is in rcx */
	mov	%rbp, %r8		/* arg 4: this frame (buffer.c, warm_frame) */
	call	sf_slow_event_tramp
	mov	%rax, %r11		/* a thread's first record, to stamp again, or 0 */
	XRSTOR_AT_RSP
	jmp	2f
1:	fxsave64 (%rsp)
	mov	%r8d, %edx
	mov	%rbp, %r8
	call	sf_slow_event_tramp
	mov	%rax, %r11
	fxrstor64 (%rsp)
	/* A thread's first event is stamped again here, after the vector
	 * state's restore, which its time would otherwise charge to the
	 * program (buffer.c, restamp_first, does the same in C): only while
	 * its record is still the last one claimed (no signal handler's
	 * record after it, read after the time) and the time is in the
	 * batch's span. */
2:	test	%r11, %r11
	jz	4f
	rdtsc
	shl	$32, %rdx
	or	%rdx, %rax
	movq	sf_self@gottpoff(%rip), %rcx
	lea	8(%r11), %rdx
	cmp	%fs:(%rcx), %rdx
	jne	4f
	mov	%rax, %rdx
	sub	%fs:24(%rcx), %rdx
	shr	$31, %rdx
	jnz	4f
	mov	%eax, (%r11)
4:	mov	%rbp, %rsp
	.cfi_def_cfa_register %rsp
	POPQ	%rbp
	.cfi_restore %rbp
	POPQ	%r11
	POPQ	%r10
	POPQ	%r9
	POPQ	%r8
	POPQ	%rsi
	POPQ	%rdi
	POPQ	%rcx
	POPQ	%rdx
	POPQ	%rax
	ret
	.cfi_endproc
	.size	sf_slow_common, .-sf_slow_common

/* sf_vec_safe_call3(fn, a, b, c): fn(a, b, c) with the whole vector and
 * x87 state saved around it, as sf_slow_common saves it. For C reached
 * from the args trampolines (which save only general registers, so that
 * a plain ARGS event costs no xsave): their slow part, a slot's hand-off
 * (batch_scan.o is built with vector code, libc's routines use vector
 * registers), must leave the program's vector registers as they were; at
 * a sled those hold the function's floating-point arguments or return
 * values. rbx, r12-r14 are callee-saved: they carry fn and its arguments
 * across xsave, which uses eax and edx. */
FUNC	sf_vec_safe_call3
	PUSHQ	%rbp
	.cfi_rel_offset %rbp, 0
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	push	%rbx
	.cfi_offset %rbx, -24
	push	%r12
	.cfi_offset %r12, -32
	push	%r13
	.cfi_offset %r13, -40
	push	%r14
	.cfi_offset %r14, -48
	mov	%rdi, %rbx
	mov	%rsi, %r12
	mov	%rdx, %r13
	mov	%rcx, %r14
	sub	sf_xsave_size(%rip), %rsp
	and	$-64, %rsp
	cmpb	$0, sf_have_xsave(%rip)
	je	1f
	XSAVE_AT_RSP
	mov	%r12, %rdi
	mov	%r13, %rsi
	mov	%r14, %rdx
	call	*%rbx
	XRSTOR_AT_RSP
	jmp	2f
1:	fxsave64 (%rsp)
	mov	%r12, %rdi
	mov	%r13, %rsi
	mov	%r14, %rdx
	call	*%rbx
	fxrstor64 (%rsp)
2:	lea	-32(%rbp), %rsp
	pop	%r14
	.cfi_restore %r14
	pop	%r13
	.cfi_restore %r13
	pop	%r12
	.cfi_restore %r12
	pop	%rbx
	.cfi_restore %rbx
	pop	%rbp
	.cfi_restore %rbp
	.cfi_def_cfa %rsp, 8
	ret
	ENDFUNC	sf_vec_safe_call3

/* ---- record -A/-R: the args trampolines (src/runtime/args.c) ----
 * Only the sleds of functions whose arguments or return values are asked
 * for come here; every other sled keeps the trampolines above. Kept apart
 * from them on purpose. The shadow-stack step comes first, as in
 * FAST_PATH (same pushes, so the same offsets), then this path saves the
 * argument registers and, at an entry, where the stack arguments start (a
 * struct passed in memory is read there: the caller's outgoing arguments,
 * just written, so mapped) into a struct sf_args_regs (runtime.h) and calls
 * sf_args_event(regs, id, kind), which records the ARGS event and the
 * function's own event with one clock read and one claim. When it returns
 * nonzero (a slot to start, the buffer full, nothing asked for in this
 * direction on a cold path), the function event goes through
 * sf_slow_common with time 0 (read there) and nothing claimed, as the
 * monotonic path does. The C code is built -mgeneral-regs-only: the
 * vector registers are only read (their low 64 bits, for fparg and float
 * return values: by sf_args_event, and only for a plan that has such an
 * item, which spares the other plans 8 stores an event), never changed,
 * so they need no restore. r10 is
 * the sled's id; r11 holds nothing at an entry or exit sled but is put
 * back all the same. A tail-call sled comes here only when the return
 * value is asked for: sf_args_event records that it is not known (it
 * would be the callee's) and returns nonzero, so the tail event takes
 * sf_slow_common, which turns its id's SF_TAIL_ENTRY_ID_BITS into kind
 * 15 as FAST_PATH does. The monotonic variants are the same code: C
 * reads the clock of the mode. A --trigger function's events take
 * sf_slow_common too (sf_args_event returns nonzero for them after the
 * ARGS event), which looks at the trigger as for SF_VARIANT_SLOW. With
 * window = 1, the entry of a function that opens a within-mode window
 * (the shadow entry says so, as sf_tramp_entry_wrec's). */
.macro ARGS_PATH name, kind, window=0
	FUNC	\name
	PUSHQ	%rax
	PUSHQ	%rdx
	PUSHQ	%rcx
	movq	sf_self@gottpoff(%rip), %rcx
	SHADOW	\kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
	PUSHQ	%rbp
	.cfi_rel_offset %rbp, 0
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	and	$-16, %rsp
	/* sizeof(struct sf_args_regs); the saved rbp (or the alignment's
	 * gap) above it takes args.c's unaligned loads past its end */
	sub	$144, %rsp
	mov	%rdi, 0(%rsp)
	mov	%rsi, 8(%rsp)
	mov	16(%rbp), %rax		/* the caller's rdx, rcx, rax, pushed above */
	mov	%rax, 16(%rsp)
	mov	8(%rbp), %rax
	mov	%rax, 24(%rsp)
	mov	%r8, 32(%rsp)
	mov	%r9, 40(%rsp)
	mov	24(%rbp), %rax
	mov	%rax, 48(%rsp)
	mov	%r10, 56(%rsp)
	mov	%r11, 64(%rsp)
	lea	48(%rbp), %rax		/* past rbp, rcx, rdx, rax, the sled's return and the function's */
	mov	%rax, 72(%rsp)		/* the first stack argument's address (SF_ARGS_STACK) */
	/* xmm0-7 (fp, from 80): sf_args_event stores them for the plans
	 * that read one (args.c, spill_fp) */
	mov	%rsp, %rdi		/* regs */
	mov	%r10d, %esi		/* function id */
	.if \kind == 1
	call	sf_args_event_entry
	.elseif \kind == 2
	call	sf_args_event_exit
	.else
	mov	$\kind, %edx
	call	sf_args_event
	.endif
	mov	0(%rsp), %rdi
	mov	8(%rsp), %rsi
	mov	32(%rsp), %r8
	mov	40(%rsp), %r9
	mov	56(%rsp), %r10
	mov	64(%rsp), %r11
	mov	%rbp, %rsp
	.cfi_def_cfa_register %rsp
	POPQ	%rbp
	.cfi_restore %rbp
	test	%eax, %eax
	jnz	1f
	.cfi_remember_state
	POPQ	%rcx
	POPQ	%rdx
	POPQ	%rax
	ret
	.cfi_restore_state
1:	xor	%eax, %eax		/* time: read on the slow path */
	xor	%ecx, %ecx		/* nothing claimed */
	mov	$\kind, %edx
	jmp	sf_slow_common
	SHADOW_TAIL \kind, \window, .Ldeep\@, .Lpushed\@, .Lretry\@
	ENDFUNC	\name
.endm

	ARGS_PATH sf_tramp_entry_args, 1
	ARGS_PATH sf_tramp_exit_args, 2
	ARGS_PATH sf_tramp_entry_mono_args, 1
	ARGS_PATH sf_tramp_exit_mono_args, 2
	ARGS_PATH sf_tramp_tail_args, 3
	ARGS_PATH sf_tramp_tail_mono_args, 3
	/* the entries of window frames whose values are asked for */
	ARGS_PATH sf_tramp_entry_args_wrec, 1, 1
	ARGS_PATH sf_tramp_entry_mono_args_wrec, 1, 1

/* Within mode with -A/-R (SF_VARIANT_ARGS_GATED, _WINDOW): the gate or
 * the window's count, as above, in front of the args trampolines. Only
 * the sleds with values to read come here; the others keep the gated
 * and window trampolines above. */
	GATED_R11 sf_tramp_entry_args_gated, sf_tramp_entry_args
	GATED_R11 sf_tramp_exit_args_gated, sf_tramp_exit_args
	GATED	sf_tramp_tail_args_gated, sf_tramp_tail_args
	GATED_R11 sf_tramp_entry_mono_args_gated, sf_tramp_entry_mono_args
	GATED_R11 sf_tramp_exit_mono_args_gated, sf_tramp_exit_mono_args
	GATED	sf_tramp_tail_mono_args_gated, sf_tramp_tail_mono_args
	WINDOW_IN  sf_tramp_entry_args_window, sf_tramp_entry_args_wrec
	WINDOW_OUT sf_tramp_exit_args_window, sf_tramp_exit_args
	WINDOW_OUT sf_tramp_tail_args_window, sf_tramp_tail_args
	WINDOW_IN  sf_tramp_entry_mono_args_window, sf_tramp_entry_mono_args_wrec
	WINDOW_OUT sf_tramp_exit_mono_args_window, sf_tramp_exit_mono_args
	WINDOW_OUT sf_tramp_tail_mono_args_window, sf_tramp_tail_mono_args

/* Far sleds: an object beyond a rel32 of us (a PIE executable) gets
 *   entry, tail call:  ff 15 <disp32> 3d <id32>   call *slot(%rip); cmp $id, %eax
 *   exit:              ff 15 <disp32> c3 <id32>   call *slot(%rip); ret; <id>
 * the slot a data word on a page mapped near the object (arch/x86_64/
 * patch.c), holding one of these. Each loads the id from its return
 * address + 1, then goes on as from `mov $id, %r10d; call tramp`: the
 * trampoline sees the same stack (the call pushed one return address)
 * and returns to the sled's sixth byte, where the cmp (flags only: dead
 * at a sled) or, at an exit, the function's own `ret` follows. No pc of
 * ours lies outside this library, so libgcc finds every frame's unwind
 * information where it does untraced, with no lookup stood in front of
 * (docs/DESIGN.md, "CFI"). */
.macro FAR name
	FUNC	sf_tramp_\name\()_far
	mov	(%rsp), %r10		/* the sled's sixth byte */
	mov	1(%r10), %r10d		/* the id after it */
	jmp	sf_tramp_\name
	ENDFUNC	sf_tramp_\name\()_far
.endm
	FAR	entry
	FAR	exit
	FAR	tail
	FAR	entry_mono
	FAR	exit_mono
	FAR	tail_mono
	FAR	entry_window
	FAR	exit_window
	FAR	tail_window
	FAR	entry_mono_window
	FAR	exit_mono_window
	FAR	tail_mono_window
	FAR	entry_args
	FAR	exit_args
	FAR	entry_mono_args
	FAR	exit_mono_args
	FAR	tail_args
	FAR	tail_mono_args
/* Gated far sleds test the window depth before loading the id: a call
 * outside any window costs the call, the test and the return (and, at
 * an exit, the sled's ret). */
	GATED_R11 sf_tramp_entry_gated_far, sf_tramp_entry_far
	GATED_R11 sf_tramp_exit_gated_far, sf_tramp_exit_far
	GATED	sf_tramp_tail_gated_far, sf_tramp_tail_far
	GATED_R11 sf_tramp_entry_mono_gated_far, sf_tramp_entry_mono_far
	GATED_R11 sf_tramp_exit_mono_gated_far, sf_tramp_exit_mono_far
	GATED	sf_tramp_tail_mono_gated_far, sf_tramp_tail_mono_far
/* The same in front of the args trampolines (-A/-R in within mode). */
	FAR	entry_args_window
	FAR	exit_args_window
	FAR	tail_args_window
	FAR	entry_mono_args_window
	FAR	exit_mono_args_window
	FAR	tail_mono_args_window
	GATED_R11 sf_tramp_entry_args_gated_far, sf_tramp_entry_args_far
	GATED_R11 sf_tramp_exit_args_gated_far, sf_tramp_exit_args_far
	GATED	sf_tramp_tail_args_gated_far, sf_tramp_tail_args_far
	GATED_R11 sf_tramp_entry_mono_args_gated_far, sf_tramp_entry_mono_args_far
	GATED_R11 sf_tramp_exit_mono_args_gated_far, sf_tramp_exit_mono_args_far
	GATED	sf_tramp_tail_mono_args_gated_far, sf_tramp_tail_mono_args_far

	.section .note.GNU-stack, "", @progbits
