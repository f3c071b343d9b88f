/* int sf_arch_walk_from(const uint64_t at[3], bt, fn, arg): calls
 * bt(fn, arg) (libgcc's _Unwind_Backtrace) from a frame whose unwind
 * information names at = {pc, sp, fp} as its caller's: the state a
 * jmp_buf saved at setjmp. So the walk goes from setjmp's caller outward
 * and never visits the frames a longjmp abandons (unwind.c, landings from
 * a signal handler deeper than the shadow array). Only rip, rsp and rbp
 * come from at; the other callee-saved registers keep their current
 * values, which no frame's CFA depends on unless it realigns its stack.
 * Returns bt's result. */
	.text
	.globl	sf_arch_walk_from
	.hidden	sf_arch_walk_from
	.type	sf_arch_walk_from, @function
	.p2align 4
sf_arch_walk_from:
	.cfi_startproc
	sub	$40, %rsp		/* 16-byte aligned for the call */
	.cfi_adjust_cfa_offset 40
	mov	(%rdi), %rax
	mov	%rax, (%rsp)		/* the caller's rip */
	mov	8(%rdi), %rax
	mov	%rax, 8(%rsp)		/* the caller's rsp: our CFA */
	mov	16(%rdi), %rax
	mov	%rax, 16(%rsp)		/* the caller's rbp */
	/* CFA = *(rsp + 8); rip at rsp + 0; rbp at rsp + 16. */
	.cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06
	.cfi_escape 0x10, 0x10, 0x02, 0x77, 0x00
	.cfi_escape 0x10, 0x06, 0x02, 0x77, 0x10
	mov	%rsi, %rax
	mov	%rdx, %rdi
	mov	%rcx, %rsi
	call	*%rax
	add	$40, %rsp
	.cfi_def_cfa %rsp, 8
	.cfi_offset %rip, -8
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size	sf_arch_walk_from, .-sf_arch_walk_from

	.section .note.GNU-stack, "", @progbits
