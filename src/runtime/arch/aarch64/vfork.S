/* pid_t vfork(void) and long syscall(long nr, ...), in place of glibc's.
 *
 * A vfork child runs on its parent's memory, stack and thread-local
 * storage until it execs or exits: instrumented code in it would store
 * into the parent's slot. So the parent's thread stops recording
 * (sf_vfork_prepare, suppress.c) before the system call, and takes its
 * state back when it resumes (sf_vfork_parent). Like glibc's, this keeps
 * the return address in x30 across the call and nothing on the stack: the
 * child may overwrite the stack below the parent's frame, and must not
 * return through a C frame.
 *
 * A vfork made through syscall() (SYS_clone / SYS_clone3 with CLONE_VM |
 * CLONE_VFORK) is the same thing, so both take one path (.Lvfork):
 * aarch64 has no vfork system call, and vfork() is
 * syscall(SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0). Every
 * other number goes to hooks.c (sf_syscall_c, same arguments). */

/* Calls fn with syscall()'s arguments kept (nr in x0, a0..a5 in x1..x6;
 * x7 too); w9: its result. */
.macro CALL_KEEPING_ARGS fn
	stp	x29, x30, [sp, #-80]!
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	bl	\fn
	mov	w9, w0
	ldp	x6, x7, [sp, #64]
	ldp	x4, x5, [sp, #48]
	ldp	x2, x3, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #80
.endm

	.text
	.globl	vfork
	.type	vfork, %function
	.p2align 4
vfork:
	mov	x0, #220		/* SYS_clone */
	mov	x1, #0x4111		/* CLONE_VM | CLONE_VFORK | SIGCHLD */
	mov	x2, #0
	mov	x3, #0
	mov	x4, #0
	mov	x5, #0
	b	.Lvfork
	.size	vfork, .-vfork

	.globl	syscall
	.type	syscall, %function
	.p2align 4
syscall:
	CALL_KEEPING_ARGS sf_syscall_vforks	/* (nr, a0, a1) */
	cbnz	w9, .Lvfork
	b	sf_syscall_c
.Lvfork:
	CALL_KEEPING_ARGS sf_vfork_prepare
	mov	x8, x0			/* the kernel's order: nr in x8, a0..a5 in x0..x5 */
	mov	x0, x1
	mov	x1, x2
	mov	x2, x3
	mov	x3, x4
	mov	x4, x5
	mov	x5, x6
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
	.size	syscall, .-syscall

	.section .note.GNU-stack, "", %progbits
