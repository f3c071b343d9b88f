/* The tracer's own cost, measured on the real path (calib.c): n pairs of
 * calls to the entry and exit trampolines, as a patched sled makes them
 * (`mov $id, %r10d; call`), with nothing in between. Each call stores one
 * event into the calling thread's buffer, which calib.c points at a
 * scratch array first. The events' timestamps then give the cost: an
 * EXIT's time minus its ENTRY's is what a call's own duration gains, the
 * next ENTRY's time minus the EXIT's is what its caller's self time gains.
 *
 * void sf_calib_pairs(uint64_t n), n >= 1. */

	.text
	.globl	sf_calib_pairs
	.hidden	sf_calib_pairs
	.type	sf_calib_pairs, @function
sf_calib_pairs:
	.cfi_startproc
	push	%rbx			/* the stack is 16-byte aligned again: the trampolines expect a call from here */
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -16
	mov	%rdi, %rbx
1:	mov	$1, %r10d
	call	sf_tramp_entry
	mov	$1, %r10d
	call	sf_tramp_exit
	dec	%rbx
	jnz	1b
	pop	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size	sf_calib_pairs, .-sf_calib_pairs

	.section .note.GNU-stack,"",@progbits
