/* int sf_arch_walk_from(const uint64_t at[3], bt, fn, arg): calls
 * bt(fn, arg) (libgcc's _Unwind_Backtrace) from a frame whose unwind
 * information names at = {pc, sp, fp} as its caller's: the state a
 * jmp_buf saved at setjmp (x30, sp, x29). So the walk goes from setjmp's
 * caller outward and never visits the frames a longjmp abandons
 * (unwind.c, landings from a signal handler deeper than the shadow
 * array). The other callee-saved registers keep their current values,
 * which no frame's CFA depends on. Our own return address is kept at
 * sp + 24, out of the unwind information. Returns bt's result. */
	.text
	.globl	sf_arch_walk_from
	.hidden	sf_arch_walk_from
	.type	sf_arch_walk_from, %function
	.p2align 4
sf_arch_walk_from:
	.cfi_startproc
	sub	sp, sp, #32
	.cfi_adjust_cfa_offset 32
	ldp	x4, x5, [x0]		/* the caller's pc and sp */
	ldr	x6, [x0, #16]		/* the caller's x29 */
	stp	x4, x5, [sp]
	stp	x6, x30, [sp, #16]
	/* CFA = *(sp + 8); x30 at sp + 0; x29 at sp + 16. */
	.cfi_escape 0x0f, 0x03, 0x8f, 0x08, 0x06
	.cfi_escape 0x10, 0x1e, 0x02, 0x8f, 0x00
	.cfi_escape 0x10, 0x1d, 0x02, 0x8f, 0x10
	mov	x4, x1
	mov	x0, x2
	mov	x1, x3
	blr	x4
	ldr	x30, [sp, #24]
	add	sp, sp, #32
	.cfi_def_cfa sp, 0
	.cfi_restore x30
	.cfi_restore x29
	ret
	.cfi_endproc
	.size	sf_arch_walk_from, .-sf_arch_walk_from

	.section .note.GNU-stack, "", %progbits
