/* void sf_loader_entry(void)
 *
 * Where the loader's _dl_debug_state now jumps (loader_hook.c). It is
 * reached like a called function, so the return address is on the stack
 * and the stack is 8 bytes off 16-byte alignment. The loader's callers
 * expect the C ABI, but we keep every general register they might hold in
 * a caller-saved one anyway: the cost is nothing next to a dlopen. */
	.text
	.globl	sf_loader_entry
	.hidden	sf_loader_entry
	.type	sf_loader_entry, @function
	.p2align 4
sf_loader_entry:
	.cfi_startproc
	push	%rax
	.cfi_adjust_cfa_offset 8
	push	%rcx
	.cfi_adjust_cfa_offset 8
	push	%rdx
	.cfi_adjust_cfa_offset 8
	push	%rsi
	.cfi_adjust_cfa_offset 8
	push	%rdi
	.cfi_adjust_cfa_offset 8
	push	%r8
	.cfi_adjust_cfa_offset 8
	push	%r9
	.cfi_adjust_cfa_offset 8
	push	%r10
	.cfi_adjust_cfa_offset 8
	push	%r11
	.cfi_adjust_cfa_offset 8
	/* 9 pushes + the return address: aligned for the call. */
	call	sf_loader_event
	pop	%r11
	.cfi_adjust_cfa_offset -8
	pop	%r10
	.cfi_adjust_cfa_offset -8
	pop	%r9
	.cfi_adjust_cfa_offset -8
	pop	%r8
	.cfi_adjust_cfa_offset -8
	pop	%rdi
	.cfi_adjust_cfa_offset -8
	pop	%rsi
	.cfi_adjust_cfa_offset -8
	pop	%rdx
	.cfi_adjust_cfa_offset -8
	pop	%rcx
	.cfi_adjust_cfa_offset -8
	pop	%rax
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	sf_loader_entry, .-sf_loader_entry

	.section .note.GNU-stack, "", @progbits
