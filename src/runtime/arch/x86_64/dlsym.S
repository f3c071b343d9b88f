/* void *dlsym(void *handle, const char *name) and
 * void *dlvsym(void *handle, const char *name, const char *version), in
 * front of glibc's (src/runtime/dlsym.c says why).
 *
 * glibc looks RTLD_DEFAULT and RTLD_NEXT up in the scope of the object
 * its dlsym returns into: so this is no C frame. sf_dlsym_route (the same
 * arguments, and 0 or 1 for dlsym or dlvsym) names the function to go on
 * to, glibc's or the runtime's, and this jumps there with the arguments
 * and the caller's return address where they came. */

	.text
	.globl	sf_dlsym
	.type	sf_dlsym, @function
	.p2align 4
sf_dlsym:
	xor	%ecx, %ecx
	jmp	.Lroute
	.size	sf_dlsym, .-sf_dlsym

	.globl	sf_dlvsym
	.type	sf_dlvsym, @function
	.p2align 4
sf_dlvsym:
	mov	$1, %ecx
.Lroute:
	push	%rdi			/* from the entry's stack: the call is 16-byte aligned */
	push	%rsi
	push	%rdx
	call	sf_dlsym_route
	pop	%rdx
	pop	%rsi
	pop	%rdi
	jmp	*%rax
	.size	sf_dlvsym, .-sf_dlvsym

/* glibc 2.34 moved both into libc.so.6 with a new default version; the
 * first ones (libdl's) stay for programs built before. */
	.symver	sf_dlsym, dlsym@@GLIBC_2.34, remove
	.symver	sf_dlsym, dlsym@GLIBC_2.2.5
	.symver	sf_dlvsym, dlvsym@@GLIBC_2.34, remove
	.symver	sf_dlvsym, dlvsym@GLIBC_2.2.5

	.section .note.GNU-stack, "", @progbits
