/* pid_t vfork(void), in place of glibc's.
 *
 * A vfork child runs on its parent's memory, stack and thread-local
 * storage until it execs or exits: instrumented code in it would store
 * into the parent's slot. So the parent's thread stops recording
 * (sf_vfork_prepare, suppress.c) before the system call, and takes its
 * state back when it resumes (sf_vfork_parent). Like glibc's, this keeps
 * the return address in x30 across the call and nothing on the stack: the
 * child may overwrite the stack below the parent's frame. aarch64 has no
 * vfork system call: clone(CLONE_VM | CLONE_VFORK | SIGCHLD, 0). */
	.text
	.globl	vfork
	.type	vfork, %function
	.p2align 4
vfork:
	stp	x29, x30, [sp, #-16]!
	bl	sf_vfork_prepare
	ldp	x29, x30, [sp], #16
	mov	x0, #0x4111		/* CLONE_VM | CLONE_VFORK | SIGCHLD */
	mov	x1, #0
	mov	x2, #0
	mov	x3, #0
	mov	x4, #0
	mov	x8, #220		/* SYS_clone */
	svc	#0
	cbz	x0, 1f			/* child */
	stp	x0, x30, [sp, #-16]!	/* the child is done with the stack */
	bl	sf_vfork_parent
	ldp	x0, x30, [sp], #16
	cmn	x0, #4095
	b.hs	2f
1:	ret
2:	neg	w0, w0
	stp	x29, x30, [sp, #-16]!
	bl	sf_set_errno		/* returns -1 */
	ldp	x29, x30, [sp], #16
	ret
	.size	vfork, .-vfork

	.section .note.GNU-stack, "", %progbits
