/* void sf_loader_entry(void)
 *
 * Where the loader's _dl_debug_state now branches (loader_hook.c), with
 * x30 = the loader's return address, as a called function. The loader's
 * callers expect the C ABI, but we keep every caller-saved general
 * register anyway: the cost is nothing next to a dlopen. */
	.text
	.globl	sf_loader_entry
	.hidden	sf_loader_entry
	.type	sf_loader_entry, %function
	.p2align 4
sf_loader_entry:
	.cfi_startproc
	stp	x29, x30, [sp, #-176]!
	.cfi_def_cfa_offset 176
	.cfi_offset x29, -176
	.cfi_offset x30, -168
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	stp	x8, x9, [sp, #80]
	stp	x10, x11, [sp, #96]
	stp	x12, x13, [sp, #112]
	stp	x14, x15, [sp, #128]
	stp	x16, x17, [sp, #144]
	str	x18, [sp, #160]
	bl	sf_loader_event
	ldp	x0, x1, [sp, #16]
	ldp	x2, x3, [sp, #32]
	ldp	x4, x5, [sp, #48]
	ldp	x6, x7, [sp, #64]
	ldp	x8, x9, [sp, #80]
	ldp	x10, x11, [sp, #96]
	ldp	x12, x13, [sp, #112]
	ldp	x14, x15, [sp, #128]
	ldp	x16, x17, [sp, #144]
	ldr	x18, [sp, #160]
	ldp	x29, x30, [sp], #176
	.cfi_def_cfa_offset 0
	.cfi_restore x29
	.cfi_restore x30
	ret
	.cfi_endproc
	.size	sf_loader_entry, .-sf_loader_entry

	.section .note.GNU-stack, "", %progbits
