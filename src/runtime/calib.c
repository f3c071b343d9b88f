/* The tracer's own cost per call, measured once before the first patch (at
 * start, or at the first resume of a process started paused, switch.c),
 * so that readers can show times net of it (docs/DESIGN.md, "Times net of
 * the tracer"). A traced call costs its caller the trampoline work before
 * the ENTRY's timestamp and after the EXIT's (the parent part), and itself
 * the work after the ENTRY's timestamp and before the EXIT's (the child
 * part). Both are read off the timestamps of the real trampolines called
 * in a tight loop (arch/x86_64/calib.S) into a scratch buffer: nothing
 * reaches the log but the two figures (sf_header.reserved[SF_HDR_COST],
 * in 1/256 of the event clock's unit per call).
 *
 * Cost: (CALIB_ROUNDS + 1) x CALIB_PAIRS pairs, about 0.1 ms (docs/DESIGN.md); the
 * round with the least total wins, so an interrupt or a preemption spoils
 * one round, not the figure. Only with the TSC clock on x86-64: in
 * monotonic mode every event takes the slow path and the figures stay 0
 * (cost unknown, readers show raw times). */
#include <string.h>

#include "runtime/runtime.h"

uint64_t sf_cost_parent SF_HIDDEN, sf_cost_child SF_HIDDEN;

#if defined(__x86_64__)
#define CALIB_PAIRS  256u
#define CALIB_ROUNDS 8u

void sf_calib_pairs(uint64_t n) SF_HIDDEN; /* arch/x86_64/calib.S */

/* Room for one round's events and the warm-up's, never full: the fast path
 * only (a full buffer would take the slow path, which writes to the log). */
static struct sf_event scratch[2 * CALIB_PAIRS + 16];

static uint64_t ev_time(uint64_t base, unsigned i)
{
	return sf_event_time(base, scratch[i].time_lo);
}

/* One round: the child and parent parts summed over its pairs, in ticks
 * (the parent's over CALIB_PAIRS - 1 gaps between pairs). */
static void round_sums(struct sf_thread *t, uint64_t *child, uint64_t *parent)
{
	t->base = sf_arch_counter();
	t->cursor = (uint64_t)scratch;
	sf_calib_pairs(CALIB_PAIRS);
	*child = *parent = 0;
	for (unsigned i = 0; i < CALIB_PAIRS; i++) {
		*child += ev_time(t->base, 2 * i + 1) - ev_time(t->base, 2 * i);
		if (i + 1 < CALIB_PAIRS)
			*parent += ev_time(t->base, 2 * i + 2) - ev_time(t->base, 2 * i + 1);
	}
}

/* Before any sled is patched (init.c): the calling thread's state is
 * borrowed and given back as it was, so no event of the program is lost. */
void sf_calib_measure(void)
{
	if (sf_config.clock != SF_CLOCK_TSC)
		return;
	struct sf_thread *t = &sf_self;
	struct sf_thread saved;
	memcpy(&saved, t, offsetof(struct sf_thread, events));
#ifdef SF_ARCH_SHADOW
	uint64_t depth = t->shadow_depth;
#endif
	t->limit = (uint64_t)(scratch + sizeof(scratch) / sizeof(scratch[0]));
	t->window_depth = 0;
	uint64_t child, parent, best = UINT64_MAX;
	for (unsigned r = 0; r < CALIB_ROUNDS + 1; r++) {
		round_sums(t, &child, &parent);
		if (r == 0)
			continue; /* warm-up: the first round pays for cold lines and branches */
		uint64_t per_pair_child = child * 256 / CALIB_PAIRS;
		uint64_t per_pair_parent = parent * 256 / (CALIB_PAIRS - 1);
		if (per_pair_child + per_pair_parent < best) {
			best = per_pair_child + per_pair_parent;
			sf_cost_child = per_pair_child;
			sf_cost_parent = per_pair_parent;
		}
	}
	memcpy(t, &saved, offsetof(struct sf_thread, events));
#ifdef SF_ARCH_SHADOW
	t->shadow_depth = depth;
#endif
}
#else
void sf_calib_measure(void)
{
	/* No calibration loop for this architecture yet: cost unknown (0). */
}
#endif
