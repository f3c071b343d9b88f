/* void sf_arch_call_on(void (*fn)(void *), void *arg, uint64_t top):
 * fn(arg) with sp at top (16-byte aligned), then back on the caller's
 * stack (src/runtime/section.c: a masked section's work on the thread's
 * section stack). x29 holds the caller's frame meanwhile; the CFA is kept
 * on it, so that a backtrace taken inside (gdb on a core) unwinds through
 * to the program's frames. */

	.text
	.globl	sf_arch_call_on
	.hidden	sf_arch_call_on
	.type	sf_arch_call_on, %function
	.p2align 4
sf_arch_call_on:
	.cfi_startproc
	/* A frame on another stack, as a signal frame is: a debugger
	 * unwinding from the section stack to a program stack below it
	 * (a heap-allocated ucontext stack) would otherwise stop with
	 * "previous frame inner to this frame" (skeptic f8, gdb). */
	.cfi_signal_frame
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset x29, -16
	.cfi_offset x30, -8
	mov	x29, sp
	.cfi_def_cfa_register x29
	mov	sp, x2
	mov	x16, x0
	mov	x0, x1
	blr	x16
	mov	sp, x29
	.cfi_def_cfa_register sp
	ldp	x29, x30, [sp], #16
	.cfi_def_cfa_offset 0
	.cfi_restore x29
	.cfi_restore x30
	ret
	.cfi_endproc
	.size	sf_arch_call_on, .-sf_arch_call_on

	.section .note.GNU-stack, "", %progbits
