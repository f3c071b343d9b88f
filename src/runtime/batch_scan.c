/* The scan of a full batch for records an interrupted context still owes
 * (buffer.c, has_unfilled). It reads every record of a 64 KiB slot at each
 * hand-off, so it is the one runtime file built with vector registers
 * allowed (see the Makefile): it runs only from the slow path, after the
 * trampoline has saved the whole extended state, or from a thread-exit
 * hook, an ordinary C context. Vectorised it costs a fraction of the
 * general-register loop (3.6% of a single-threaded program's time). */
#include "runtime/runtime.h"

_Static_assert(SF_KIND_BITS == 4 && SF_EV_TAIL == 3 && SF_EV_ALLOC == 4, "the bit tests below");

int sf_batch_suspect(const struct sf_event *ev, size_t n)
{
	/* Plain loads: the records are this thread's own and no context of
	 * the thread can store while the slow path runs (signals blocked). */
	const uint64_t *r = (const uint64_t *)ev; /* the word is the high half */
	uint64_t any = 0, every = ~0ull;
	for (size_t i = 0; i < n; i++) {
		any |= r[i];                 /* kind bits 2-3: an allocation event */
		every &= r[i] | r[i] >> 1;   /* bit 32: kind bit 0 or 1 (kinds 1-3) */
	}
	return (any >> 34 & 3) || !(every >> 32 & 1);
}
