/* void *dlsym(void *handle, const char *name) and
 * void *dlvsym(void *handle, const char *name, const char *version), in
 * front of glibc's (src/runtime/dlsym.c says why).
 *
 * glibc looks RTLD_DEFAULT and RTLD_NEXT up in the scope of the object
 * its dlsym returns into (x30 at its entry): so this is no C frame.
 * sf_dlsym_route (the same arguments, and 0 or 1 for dlsym or dlvsym)
 * names the function to go on to, glibc's or the runtime's, and this
 * branches there with the arguments, sp and x30 as they came (x16: a
 * landing pad's "bti c" accepts it). */

	.text
	.globl	sf_dlsym
	.type	sf_dlsym, %function
	.p2align 4
sf_dlsym:
	mov	w3, #0
	b	.Lroute
	.size	sf_dlsym, .-sf_dlsym

	.globl	sf_dlvsym
	.type	sf_dlvsym, %function
	.p2align 4
sf_dlvsym:
	mov	w3, #1
.Lroute:
	stp	x29, x30, [sp, #-48]!
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	str	x2, [sp, #32]
	bl	sf_dlsym_route
	mov	x16, x0
	ldr	x2, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #48
	br	x16
	.size	sf_dlvsym, .-sf_dlvsym

/* glibc 2.34 moved both into libc.so.6 with a new default version; the
 * first ones (libdl's) stay for programs built before. */
	.symver	sf_dlsym, dlsym@@GLIBC_2.34, remove
	.symver	sf_dlsym, dlsym@GLIBC_2.17
	.symver	sf_dlvsym, dlvsym@@GLIBC_2.34, remove
	.symver	sf_dlvsym, dlvsym@GLIBC_2.17

	.section .note.GNU-stack, "", %progbits
