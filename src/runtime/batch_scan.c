/* The scan of a full batch for records an interrupted context still owes
 * (buffer.c, has_unfilled). It reads every record of a 64 KiB slot at each
 * hand-off, so it is the one runtime file built with vector registers
 * allowed (see the Makefile): it runs only from the slow path, after the
 * trampoline has saved the whole extended state, or from a thread-exit
 * hook, an ordinary C context. Vectorised it costs a fraction of the
 * general-register loop (3.6% of a single-threaded program's time). */
#include "runtime/runtime.h"

size_t sf_batch_zero_words(const struct sf_event *ev, size_t n)
{
	/* Plain loads: the records are this thread's own and no context of
	 * the thread can store while the slow path runs (signals blocked).
	 * A 32-bit count and a 32-bit compare vectorise best; n < 2^32. */
	const uint32_t *w = (const uint32_t *)ev + 1; /* the word: each record's high half (little-endian) */
	uint32_t zero = 0;
#pragma GCC unroll 8
	for (size_t i = 0; i < n; i++)
		zero += w[2 * i] == 0;
	return zero;
}
