/* void sf_arch_call_on(void (*fn)(void *), void *arg, uint64_t top):
 * fn(arg) with the stack pointer at top (16-byte aligned), then back on
 * the caller's stack (src/runtime/section.c: a masked section's work on
 * the thread's section stack). %rbp holds the caller's stack pointer
 * meanwhile; the CFA is kept on it, so that a backtrace taken inside (gdb
 * on a core) unwinds through to the program's frames. */

	.text
	.globl	sf_arch_call_on
	.hidden	sf_arch_call_on
	.type	sf_arch_call_on, @function
	.p2align 4
sf_arch_call_on:
	.cfi_startproc
	/* A frame on another stack, as a signal frame is: a debugger
	 * unwinding from the section stack to a program stack below it
	 * (a heap-allocated ucontext stack) would otherwise stop with
	 * "previous frame inner to this frame" (skeptic f8, gdb). */
	.cfi_signal_frame
	push	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	mov	%rdx, %rsp
	mov	%rdi, %rax
	mov	%rsi, %rdi
	call	*%rax
	mov	%rbp, %rsp
	.cfi_def_cfa_register %rsp
	pop	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size	sf_arch_call_on, .-sf_arch_call_on

	.section .note.GNU-stack, "", @progbits
