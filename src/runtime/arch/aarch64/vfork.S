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


/* long syscall(long nr, ...), in place of glibc's.
 *
 * A vfork made through it (SYS_clone / SYS_clone3 with CLONE_VM |
 * CLONE_VFORK) is a vfork as above: the child runs on this stack, so it
 * must not return through a C frame, and the parent's thread stops
 * recording until it resumes. So it takes the path of vfork() here:
 * return address in x30, nothing on the stack across the call. Every
 * other number goes to hooks.c (sf_syscall_c, same arguments). */
	.globl	syscall
	.type	syscall, %function
	.p2align 4
syscall:
	stp	x29, x30, [sp, #-80]!	/* nr in x0, a0..a5 in x1..x6 */
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	bl	sf_syscall_vforks	/* (nr, a0, a1) */
	mov	w9, w0
	ldp	x6, x7, [sp, #64]
	ldp	x4, x5, [sp, #48]
	ldp	x2, x3, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #80
	cbnz	w9, 1f
	b	sf_syscall_c
1:	stp	x29, x30, [sp, #-80]!
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	bl	sf_vfork_prepare
	ldp	x6, x7, [sp, #64]
	ldp	x4, x5, [sp, #48]
	ldp	x2, x3, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #80
	mov	x8, x0			/* the kernel's order: nr in x8, a0..a5 in x0..x5 */
	mov	x0, x1
	mov	x1, x2
	mov	x2, x3
	mov	x3, x4
	mov	x4, x5
	mov	x5, x6
	svc	#0
	cbz	x0, 2f			/* child */
	stp	x0, x30, [sp, #-16]!	/* the child is done with the stack */
	bl	sf_vfork_parent
	ldp	x0, x30, [sp], #16
	cmn	x0, #4095
	b.hs	3f
2:	ret
3:	neg	w0, w0
	stp	x29, x30, [sp, #-16]!
	bl	sf_set_errno		/* returns -1 */
	ldp	x29, x30, [sp], #16
	ret
	.size	syscall, .-syscall

	.section .note.GNU-stack, "", %progbits
