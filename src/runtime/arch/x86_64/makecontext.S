/* void makecontext(ucontext_t *ucp, void (*fn)(void), int argc, ...), in
 * front of glibc's: the context's stack (ucp->uc_stack) is noted, so that
 * a landing on it knows its bounds without reading /proc/self/maps
 * (src/runtime/stack.c). makecontext is variadic, so no C function can
 * pass its arguments on: this keeps every argument register (and %al, the
 * vector register count of a variadic call) around the call to
 * sf_makecontext_route (ucp in %rdi), then jumps to the makecontext it
 * returns with the stack (the arguments past the sixth, the caller's
 * return address) as it came. makecontext's arguments are ints: no vector
 * register carries one. CFI, so that a backtrace taken inside the call
 * (a profiler's) unwinds through. */

	.text
	.globl	sf_makecontext
	.type	sf_makecontext, @function
	.p2align 4
sf_makecontext:
	.cfi_startproc
	push	%rdi			/* 7 words: the call is 16-byte aligned */
	.cfi_adjust_cfa_offset 8
	push	%rsi
	.cfi_adjust_cfa_offset 8
	push	%rdx
	.cfi_adjust_cfa_offset 8
	push	%rcx
	.cfi_adjust_cfa_offset 8
	push	%r8
	.cfi_adjust_cfa_offset 8
	push	%r9
	.cfi_adjust_cfa_offset 8
	push	%rax
	.cfi_adjust_cfa_offset 8
	call	sf_makecontext_route
	mov	%rax, %r11
	pop	%rax
	pop	%r9
	pop	%r8
	pop	%rcx
	pop	%rdx
	pop	%rsi
	pop	%rdi
	.cfi_adjust_cfa_offset -56
	jmp	*%r11
	.cfi_endproc
	.size	sf_makecontext, .-sf_makecontext

	.symver	sf_makecontext, makecontext@@GLIBC_2.2.5, remove

	.section .note.GNU-stack, "", @progbits
