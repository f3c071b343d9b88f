/* long sf_spawn_raw_thread(void *stack_top, int (*fn)(void *), void *arg)
 *
 * clone(CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM,
 *       stack_top) and run fn(arg) in the child, then exit the thread with
 * its return value. fn and arg travel on the child's stack, since the child
 * starts with only the registers the kernel gives it. */
	.text
	.globl	sf_spawn_raw_thread
	.hidden	sf_spawn_raw_thread
	.type	sf_spawn_raw_thread, @function
	.p2align 4
sf_spawn_raw_thread:
	/* Child stack: [fn, arg], 16-byte aligned below. */
	and	$-16, %rdi
	sub	$16, %rdi
	mov	%rsi, (%rdi)
	mov	%rdx, 8(%rdi)
	mov	%rdi, %rsi			/* newsp */
	mov	$0x50f00, %edi			/* VM|FS|FILES|SIGHAND|THREAD|SYSVSEM */
	xor	%edx, %edx			/* parent_tid */
	xor	%r10d, %r10d			/* child_tid */
	xor	%r8d, %r8d			/* tls */
	mov	$56, %eax			/* SYS_clone */
	syscall
	test	%rax, %rax
	jz	1f
	ret					/* parent: tid or -errno */
1:	/* child */
	xor	%ebp, %ebp
	pop	%rax				/* fn */
	pop	%rdi				/* arg */
	call	*%rax
	mov	%eax, %edi
	mov	$60, %eax			/* SYS_exit (this thread only) */
	syscall
	hlt
	.size	sf_spawn_raw_thread, .-sf_spawn_raw_thread

	.section .note.GNU-stack, "", @progbits
