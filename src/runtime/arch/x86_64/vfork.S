/* pid_t vfork(void), in place of glibc's.
 *
 * A vfork child runs on its parent's memory, stack and thread-local
 * storage until it execs or exits: instrumented code in it would store
 * into the parent's slot. So the parent's thread stops recording
 * (sf_vfork_prepare, suppress.c) before the system call, and takes its
 * state back when it resumes (sf_vfork_parent). Like glibc's, this keeps
 * the return address in a register across the call: the child may
 * overwrite the stack below the parent's frame. */
	.text
	.globl	vfork
	.type	vfork, @function
	.p2align 4
vfork:
	sub	$8, %rsp
	call	sf_vfork_prepare
	add	$8, %rsp
	pop	%rdi			/* return address */
	mov	$58, %eax		/* SYS_vfork */
	syscall
	push	%rdi
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
	.size	vfork, .-vfork

	.section .note.GNU-stack, "", @progbits
