/* pid_t vfork(void) and long syscall(long nr, ...), in place of glibc's.
 *
 * A vfork child runs on its parent's memory, stack and thread-local
 * storage until it execs or exits: instrumented code in it would store
 * into the parent's slot. So the parent's thread stops recording
 * (sf_vfork_prepare, suppress.c) before the system call, and takes its
 * state back when it resumes (sf_vfork_parent). Like glibc's, this keeps
 * the return address in a register across the call: the child may
 * overwrite the stack below the parent's frame, and must not return
 * through a C frame (its later calls would overwrite the return address
 * the parent pops when it resumes).
 *
 * A vfork made through syscall() (SYS_vfork, or SYS_clone / SYS_clone3
 * with CLONE_VM | CLONE_VFORK) is the same thing, so both take one path
 * (.Lvfork): vfork() is syscall(SYS_vfork). Every other number goes to
 * hooks.c (sf_syscall_c, same arguments). */

/* Calls fn with syscall()'s arguments kept (nr in rdi, a0..a4 in
 * rsi..r9; a5 stays on the stack above the return address); eax: its
 * result. From the entry's stack: the call is 16-byte aligned. */
.macro CALL_KEEPING_ARGS fn
	push	%rdi
	push	%rsi
	push	%rdx
	push	%rcx
	push	%r8
	push	%r9
	sub	$8, %rsp
	call	\fn
	add	$8, %rsp
	pop	%r9
	pop	%r8
	pop	%rcx
	pop	%rdx
	pop	%rsi
	pop	%rdi
.endm

	.text
	.globl	vfork
	.type	vfork, @function
	.p2align 4
vfork:
	mov	$58, %edi		/* SYS_vfork (it takes no arguments) */
	jmp	.Lvfork
	.size	vfork, .-vfork

	.globl	syscall
	.type	syscall, @function
	.p2align 4
syscall:
	CALL_KEEPING_ARGS sf_syscall_vforks	/* (nr, a0, a1) */
	test	%eax, %eax
	jnz	.Lvfork
	jmp	sf_syscall_c
.Lvfork:
	CALL_KEEPING_ARGS sf_vfork_prepare
	mov	%rdi, %rax		/* the kernel's order: nr in rax, a0..a4 in rdi rsi rdx r10 r8 */
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	mov	%rcx, %rdx
	mov	%r8, %r10
	mov	%r9, %r8
	pop	%r9			/* return address (clone uses five arguments, r9 is free) */
	syscall
	push	%r9
	test	%rax, %rax
	jz	1f			/* child */
	push	%rax
	call	sf_vfork_parent
	pop	%rax
	cmp	$-4095, %rax
	jae	2f
1:	ret
2:	neg	%eax
	mov	%eax, %edi
	sub	$8, %rsp
	call	sf_set_errno		/* returns -1 */
	add	$8, %rsp
	ret
	.size	syscall, .-syscall

	.section .note.GNU-stack, "", @progbits
