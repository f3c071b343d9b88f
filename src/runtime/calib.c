/* The tracer's own cost per call, measured once before the first patch (at
 * start, or at the first resume of a process started paused, switch.c),
 * so that readers can show times net of it (docs/DESIGN.md, "Times net of
 * the tracer"). A traced call costs its caller the trampoline work before
 * the ENTRY's timestamp and after the EXIT's (the parent part), and itself
 * the work after the ENTRY's timestamp and before the EXIT's (the child
 * part). Both are read off the timestamps of the real trampolines called
 * in a tight loop (arch/x86_64/calib.S) into a scratch area: nothing
 * reaches the log but the two figures (sf_header.reserved[SF_HDR_COST],
 * in 1/256 of the event clock's unit per call). The slow path (a full
 * slot's hand-off) is not in them: the readers take its time off from the
 * batch bases (docs/FORMAT.md, "Batches").
 *
 * Cost: (CALIB_ROUNDS + 1) x CALIB_PAIRS pairs and the area's 24 page
 * faults, about 0.12 ms (docs/DESIGN.md); the
 * round with the median total gives the figures (median_round). Only with the TSC clock on x86-64: in
 * monotonic mode every event takes the slow path and the figures stay 0
 * (cost unknown, readers show raw times). */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/runtime.h"

uint64_t sf_cost_parent SF_HIDDEN, sf_cost_child SF_HIDDEN;
uint64_t sf_cost_lo SF_HIDDEN, sf_cost_hi SF_HIDDEN;

#if defined(__x86_64__)
#define CALIB_PAIRS  256u
#define CALIB_ROUNDS 8u

void sf_calib_pairs(uint64_t n) SF_HIDDEN; /* arch/x86_64/calib.S */

/* Each round's events go to lines of their own, none of them in the L1
 * cache: the trampolines store into a 64 KiB slot, whose lines the thread
 * last wrote a slot ago (clearing it) or another core did (the writer
 * thread). Into lines already in L1 (a 4 KiB array used by every round)
 * the loop ran 1-4 ns a pair faster than a real run's events (the net time
 * of a function one level down was then that much above untraced). So the
 * rounds take their 4 KiB each from the first half of a 96 KiB area
 * written once from front to back before the first round: by then the
 * back half has pushed the front out of L1 (32-48 KiB), into L2. The area
 * is mapped for the measurement only. */
#define ROUND_EVENTS (2 * CALIB_PAIRS)
#define AREA_BYTES   (96u << 10)

static struct sf_event *scratch;

static uint64_t ev_time(uint64_t base, unsigned r, unsigned i)
{
	return sf_event_time(base, scratch[r * ROUND_EVENTS + i].time_lo);
}

/* The calling thread's state while the pairs below run through the real
 * trampolines: the buffer's fields, and the shadow stack as the pairs
 * leave it. Each pair pushes at the thread's depth and pops: the depth
 * comes back, but the slot above it would keep the pairs' entry, one
 * below every live frame's. A longjmp's landing reads that slot (unwind.c,
 * abandons_nothing and landing) as a half-exited frame's it abandons: with
 * it, every later landing that abandons nothing took the full path and
 * recorded an UNWIND (10,100 siglongjmps: 10,102 events instead of 2;
 * test_skeptic25q). So the slot, and the entry past the array, are put
 * back as they were (0 when the array was not mapped yet: the pairs' push
 * maps it). */
struct borrowed {
	unsigned char head[offsetof(struct sf_thread, events)];
#ifdef SF_ARCH_SHADOW
	uint64_t depth, slot, top;
#endif
};

static void borrow(struct sf_thread *t, struct borrowed *b)
{
	memcpy(b->head, t, sizeof(b->head));
#ifdef SF_ARCH_SHADOW
	b->depth = sf_shadow_depth(t);
	b->slot = b->depth < sf_shadow_stored(t) ? *sf_shadow_slot(t, b->depth) : 0;
	b->top = t->shadow_top;
#endif
	t->window_depth = 0;
}

static void give_back(struct sf_thread *t, const struct borrowed *b)
{
	memcpy(t, b->head, sizeof(b->head));
#ifdef SF_ARCH_SHADOW
	sf_shadow_set_depth(t, b->depth);
	if (b->depth < sf_shadow_stored(t))
		*sf_shadow_slot(t, b->depth) = b->slot;
	t->shadow_top = b->top;
#endif
}

/* Round r: the child and parent parts summed over its pairs, in ticks (the
 * parent's over CALIB_PAIRS - 1 gaps between pairs). Never full: the fast
 * path only (a full buffer would take the slow path, which writes to the
 * log). */
static void round_sums(struct sf_thread *t, unsigned r, uint64_t *child, uint64_t *parent)
{
	t->base = sf_arch_counter();
	t->cursor = (uint64_t)(scratch + r * ROUND_EVENTS);
	t->limit = t->cursor + (ROUND_EVENTS + 16) * sizeof(struct sf_event);
	sf_calib_pairs(CALIB_PAIRS);
	*child = *parent = 0;
	for (unsigned i = 0; i < CALIB_PAIRS; i++) {
		*child += ev_time(t->base, r, 2 * i + 1) - ev_time(t->base, r, 2 * i);
		if (i + 1 < CALIB_PAIRS)
			*parent += ev_time(t->base, r, 2 * i + 2) - ev_time(t->base, r, 2 * i + 1);
	}
}

/* One round's figures per pair, in 1/256 tick. */
struct round_cost {
	uint64_t child, parent;
};

/* The round whose total is the median (the lower one of an even count):
 * an interrupt or a preemption spoils a round or two, which end up above
 * it, and a round that ran faster than the loop usually does (the least
 * total, which this took before, came out 10-13% below the median in
 * some processes: 61 and 67 ticks against 70 and 76) does not set the
 * figure either. Insertion sort: n is CALIB_ROUNDS. */
static const struct round_cost *median_round(struct round_cost *r, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		struct round_cost x = r[i];
		unsigned j = i;
		for (; j > 0 && r[j - 1].child + r[j - 1].parent > x.child + x.parent; j--)
			r[j] = r[j - 1];
		r[j] = x;
	}
	return &r[(n - 1) / 2];
}

/* The rounds' spread around the median (sorted by median_round): the
 * least total and the highest but one. The highest is left out as an
 * interrupt's or a preemption's (one of them adds microseconds to a round
 * of 256 pairs: tens of ns a pair, several times the cost itself); a
 * second spoiled round widens the spread, which only marks more figures
 * uncertain. The readers bound a net figure's error by the tracer's time
 * taken off it times the spread's relative half-width. */
static void spread(const struct round_cost *r, unsigned n)
{
	sf_cost_lo = r[0].child + r[0].parent;
	sf_cost_hi = r[n - 2].child + r[n - 2].parent;
}

/* Runs the warm-up and CALIB_ROUNDS rounds on the calling thread, its
 * state borrowed and given back as it was; 0 if the area could not be had.
 * The rounds come back sorted by total (median_round). */
static int run_rounds(struct round_cost *rounds)
{
	void *area = mmap(NULL, AREA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return 0;
	memset(area, 0, AREA_BYTES); /* the page faults now, and the front half out of L1 */
	scratch = area;
	struct sf_thread *t = &sf_self;
	struct borrowed b;
	borrow(t, &b);
	for (unsigned r = 0; r < CALIB_ROUNDS + 1; r++) {
		uint64_t child, parent;
		round_sums(t, r, &child, &parent);
		if (r == 0)
			continue; /* warm-up: the first round pays for cold lines and branches */
		rounds[r - 1] = (struct round_cost){child * 256 / CALIB_PAIRS, parent * 256 / (CALIB_PAIRS - 1)};
	}
	give_back(t, &b);
	munmap(area, AREA_BYTES);
	median_round(rounds, CALIB_ROUNDS);
	return 1;
}

/* A thread's first event (buffer.c's warm_return, signals blocked): a
 * few pairs through the real trampolines into a scratch array on the
 * stack, the thread's state borrowed and given back as run_rounds does, so
 * the trampolines' code, the thread's variables and its shadow stack's
 * line are in the caches again after the set-up (docs/DESIGN.md, "Times
 * net of the tracer"). */
#define WARM_PAIRS 4u
void sf_calib_warm(void)
{
	if (sf_config.clock != SF_CLOCK_TSC)
		return;
	struct sf_event area[2 * WARM_PAIRS + 16];
	struct sf_thread *t = &sf_self;
	struct borrowed b; /* small: it may run on a signal's stack */
	borrow(t, &b);
	t->base = sf_arch_counter();
	t->cursor = (uint64_t)area;
	t->limit = (uint64_t)(area + sizeof(area) / sizeof(area[0]));
	sf_calib_pairs(WARM_PAIRS);
	give_back(t, &b);
}

/* Before any sled is patched (init.c): the calling thread's state is
 * borrowed and given back as it was, so no event of the program is lost. */
void sf_calib_measure(void)
{
	if (sf_config.clock != SF_CLOCK_TSC)
		return;
	struct round_cost rounds[CALIB_ROUNDS];
	if (!run_rounds(rounds))
		return; /* cost unknown: readers show raw times */
	const struct round_cost *m = &rounds[(CALIB_ROUNDS - 1) / 2];
	sf_cost_child = m->child;
	sf_cost_parent = m->parent;
	spread(rounds, CALIB_ROUNDS);
}

/* At the process's exit (init.c's destructor, before the last batches go
 * out): the same rounds again, with every signal held back (a handler's
 * events would go to the scratch area). The figures stay the start's,
 * which every event was taken off with; the spread widens to take in the
 * end's rounds and its median, so a cost that drifted during the run (a
 * loaded machine's contention, the clock speed) bounds the net figures
 * too. The end's median round is kept too (sf_header.cost_exit): how far
 * the cost drifted, for the outputs' metadata. A process that dies without
 * exiting keeps the start's spread and no exit figure. */
void sf_calib_remeasure(void)
{
	if (sf_config.clock != SF_CLOCK_TSC || !sf_cost_lo)
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	struct round_cost rounds[CALIB_ROUNDS];
	int ok = run_rounds(rounds);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ok || !rounds[0].child || !rounds[0].parent)
		return; /* no events came out (a thread the trampolines skip): the start's spread stands */
	uint64_t lo = rounds[0].child + rounds[0].parent, hi = rounds[CALIB_ROUNDS - 2].child + rounds[CALIB_ROUNDS - 2].parent;
	sf_cost_lo = lo < sf_cost_lo ? lo : sf_cost_lo;
	sf_cost_hi = hi > sf_cost_hi ? hi : sf_cost_hi;
	const struct round_cost *m = &rounds[(CALIB_ROUNDS - 1) / 2];
	struct sf_header *h = sf_log_header();
	if (h) {
		__atomic_store_n(&h->cost_spread, sf_hdr_cost_pack(sf_cost_lo, sf_cost_hi), __ATOMIC_RELAXED);
		__atomic_store_n(&h->cost_exit, sf_hdr_cost_pack(m->parent, m->child), __ATOMIC_RELAXED);
	}
}
#else
void sf_calib_warm(void)
{
}

void sf_calib_measure(void)
{
	/* No calibration loop for this architecture yet: cost unknown (0). */
}

void sf_calib_remeasure(void)
{
}
#endif
