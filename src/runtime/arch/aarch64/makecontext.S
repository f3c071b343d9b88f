/* void makecontext(ucontext_t *ucp, void (*fn)(void), int argc, ...), in
 * front of glibc's: the context's stack (ucp->uc_stack) is noted, so that
 * a landing on it knows its bounds without reading /proc/self/maps
 * (src/runtime/stack.c). makecontext is variadic, so no C function can
 * pass its arguments on: this keeps x0-x8 around the call to
 * sf_makecontext_route (ucp in x0), then branches to the makecontext it
 * returns with sp (the arguments past the eighth) and x30 as they came
 * (x16: a landing pad's "bti c" accepts it). makecontext's arguments are
 * ints: no vector register carries one. CFI, so that a backtrace taken
 * inside the call (a profiler's) unwinds through. */

	.text
	.globl	sf_makecontext
	.type	sf_makecontext, %function
	.p2align 4
sf_makecontext:
	.cfi_startproc
	stp	x29, x30, [sp, #-96]!
	.cfi_def_cfa_offset 96
	.cfi_offset x29, -96
	.cfi_offset x30, -88
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	str	x8, [sp, #80]
	bl	sf_makecontext_route
	mov	x16, x0
	ldr	x8, [sp, #80]
	ldp	x6, x7, [sp, #64]
	ldp	x4, x5, [sp, #48]
	ldp	x2, x3, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #96
	.cfi_def_cfa_offset 0
	.cfi_restore x29
	.cfi_restore x30
	br	x16
	.cfi_endproc
	.size	sf_makecontext, .-sf_makecontext

	.symver	sf_makecontext, makecontext@@GLIBC_2.17, remove

	.section .note.GNU-stack, "", %progbits
