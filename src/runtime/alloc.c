/* Heap events of the interposed allocator (record --alloc).
 *
 * libsftrace-alloc.so (src/alloc/interpose.c) defines malloc, free and the
 * rest of the family and calls sftrace_heap_alloc/free/realloc here after
 * the real allocator returned. This file owns the per-thread fast path for
 * those events: one clock read, a claim of 3-5 records in the thread's slot
 * with a single (unlocked, so signal-atomic) cmpxchg on the TLS cursor, the
 * payload stores, then one 8-byte store of time and event word that
 * validates them. Anything else (first event of the thread, slot full,
 * time out of the batch's span, a suppressed stretch) goes to
 * sf_record_payload, the slow path with signals blocked.
 *
 * Why cmpxchg and not xadd as in the trampolines: a multi-record claim
 * must never straddle the slot's limit (records claimed inside the slot
 * but never filled would read as holes), so the claim is made only if the
 * cursor still holds the value checked against the limit.
 *
 * Payload records whose upper half is zero (a size below 4 GiB, an address
 * below 4 GiB) look like unfilled records to the hand-off's check for
 * records an interrupted context still owes (buffer.c, has_unfilled). The
 * fast path counts them in sf_self.heap_zero once the event is complete, so
 * that check can compare counts instead of walking the batch event by
 * event. The count is added with one local compare-and-swap against the
 * value read before the claim: if anything changed it in between (a
 * handler's events, a new batch), the event goes uncounted and the check
 * walks that batch, which is only slower.
 *
 * The hooks preserve errno: the fast path makes no call that may set it,
 * and the slow path saves and restores it (interpose.c relies on this).
 *
 * Events are recorded once the runtime is initialised in a process with
 * patched sleds (or a setup-ABI program): processes without instrumented
 * code (a shell in between) write no log, with or without --alloc. Those
 * made after start-up before the first sled is patched are kept and
 * written then (early_note, below).
 *
 * Setup-ABI programs (sftrace_alloc_event, e.g. a Rust SftraceAllocator
 * wrapping System) report the same allocation twice when --alloc is on: once
 * from the interposed malloc and once from their hook. The first report
 * wins: a report from the other source for the same pointer and direction
 * that follows it directly on the same thread is dropped (sf_heap_setup_dup). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "runtime/runtime.h"

enum { SRC_INTERPOSED = 1, SRC_SETUP = 2 };
enum { DIR_ALLOC = 1, DIR_FREE = 2, DIR_REALLOC = 3 };
#define TAG(src, dir, left) ((uint32_t)(src) | (uint32_t)(dir) << 8 | (uint32_t)(left) << 16)
#define TAG_SRC(tag) ((tag) & 0xff)
#define TAG_DIR(tag) ((tag) >> 8 & 0xff)
#define TAG_LEFT(tag) ((tag) >> 16 & 0xff)

static int heap_on;
/* 0 once heap_on with events on the counter clock: heap_fast may run.
 * Inverted, so that heap_fast ORs it with the other gates and tests once. */
static uint32_t heap_fast_off = 1;

static int heap_enabled(void)
{
	/* record --paused: no heap event while tracing is off (switch.c). */
	if (__builtin_expect(heap_on, 1))
		return !__atomic_load_n(&sf_tracing_off, __ATOMIC_RELAXED);
	if (!sf_config.enabled || !sf_objects_patched_total())
		return 0;
	heap_fast_off = sf_config.clock != SF_CLOCK_TSC;
	heap_on = 1;
	return 1;
}

static inline uint64_t heap_now(void)
{
	if (sf_config.clock == SF_CLOCK_TSC)
		return sf_arch_counter();
	return sf_mono_ns();
}

/* Claims n records if they fit the slot and time fits the batch's span.
 * One local compare-and-swap: a signal handler runs before or after it.
 * A thread without a slot has cursor = limit = 0 (or a scratch buffer). */
static inline struct sf_event *heap_claim(struct sf_thread *t, uint64_t time, size_t n)
{
	uint64_t c = __atomic_load_n(&t->cursor, __ATOMIC_RELAXED);
	for (;;) {
		if (c + n * sizeof(struct sf_event) > t->limit || time - t->base >= SF_TIME_SPAN)
			return NULL;
		uint64_t seen = sf_arch_cas_local(&t->cursor, c, c + n * sizeof(struct sf_event));
		if (seen == c)
			return (struct sf_event *)c;
		c = seen; /* a handler stored events in between: try again */
	}
}

/* 1 if x's upper half is zero: a payload record a hand-off would take for
 * an unfilled one. A compare with 2^32 (one register for every value of
 * an event, then a compare and an add with carry each), not a shift. */
static inline unsigned zero_word(uint64_t x)
{
	return x < (uint64_t)1 << 32;
}

/* Everything but the fast path: the thread's first event, a full slot,
 * a suppressed stretch, an ignored thread. busy is set only while signals
 * are blocked, so a handler never finds it set: it marks the runtime's own
 * slow path calling malloc (dropped, never recursed into), not a signal
 * that arrived when the slow path unblocked them. */
struct heap_slow_args {
	uint32_t tag, kind;
	uint64_t time;
	uint64_t payload[4];
};

static void heap_slow_masked(void *arg)
{
	struct heap_slow_args *e = arg;
	struct sf_heap_tls *h = &sf_self.heap;
	if (h->busy) {
		sf_log_drop(1);
	} else {
		h->busy = 1;
		sf_record_payload(e->tag, e->kind, e->time, e->payload);
		h->busy = 0;
	}
}

static __attribute__((noinline, cold)) void heap_slow(uint32_t tag, uint32_t kind, uint64_t time, uint64_t a,
							     uint64_t b, uint64_t c, uint64_t d)
{
	if (sf_self.state == SF_THREAD_IGNORED)
		return;
	int saved = errno;
	struct heap_slow_args e = {.tag = tag, .kind = kind, .time = time, .payload = {a, b, c, d}};
	sf_masked_run(heap_slow_masked, &e); /* section.c: on the thread's section stack */
	errno = saved;
}

#ifdef SF_ARCH_SHADOW
/* The return-address slot of the thread's most recently popped frame (the
 * shadow stack's entry at its depth; bit 0, a window frame, masked), 0
 * when none is stored. */
static inline __attribute__((always_inline)) uint64_t heap_popped_slot(const struct sf_thread *t)
{
#ifdef SF_SHADOW_TP
	/* the entry at the depth, through the depth's own pointer, below the
	 * array's end (NULL before it is mapped: nothing stored); no index
	 * made from it and scaled back, a register less, so none is saved */
	const uint64_t *at = t->shadow_tp;
	if (at >= t->shadow_plim)
		return 0;
	uint64_t slot = SF_SHADOW_ADDR(*at);
#else
	uint64_t d = sf_shadow_depth(t);
	if (d >= SF_SHADOW_CAP)
		return 0;
	uint64_t slot = SF_SHADOW_ADDR(t->shadow[d]);
#endif
	return slot;
}
#endif

/* The return-address tag of a heap event (FORMAT.md, "Heap events"): the
 * low 28 bits of the word in the return-address slot of the thread's most
 * recently popped frame (the shadow stack's entry just above its depth),
 * 0 when unknown. After F's tail call (F's entry popped, nothing pushed
 * since), that slot holds the return address of the call that entered F's
 * tail callee: the caller's `call F` while the callee runs, another once
 * it returned and the caller called something else from there. The reader
 * (lib/tail_claim.h) compares it across a tail call's claim. The slot is
 * read only when it lies on the thread's current stack above this frame,
 * which is mapped (unwind.c's sf_on_this_stack). */
static inline uint32_t heap_ret_tag(const struct sf_thread *t)
{
#ifdef SF_ARCH_SHADOW
	uint64_t slot = heap_popped_slot(t);
	if (!slot || !sf_on_this_stack(slot))
		return 0;
	return (uint32_t)(*(const volatile uint64_t *)slot & ((1u << (32 - SF_KIND_BITS)) - 1));
#else
	(void)t;
	return 0;
#endif
}

/* Stores the np payload records (a, b, c, d: the first np of them) of
 * the event claimed at e, before the word that validates them. Returns
 * how many have a zero upper half (zero_word). */
static inline __attribute__((always_inline)) unsigned heap_payload(struct sf_event *e, unsigned np, uint64_t a,
								   uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t *p = (uint64_t *)(e + 1);
	unsigned z = zero_word(a) + zero_word(b); /* every kind has two or more */
	p[0] = a;
	p[1] = b;
	if (np > 2) {
		p[2] = c;
		z += zero_word(c);
	}
	if (np > 3) {
		p[3] = d;
		z += zero_word(d);
	}
	return z;
}

/* time_lo and the event word in one 8-byte store (little-endian: time_lo
 * first), after the payload: the event is complete. */
static inline __attribute__((always_inline)) void heap_validate(struct sf_event *e, uint32_t kind, uint32_t tag,
								uint64_t time)
{
	__atomic_store_n((uint64_t *)e, (uint64_t)sf_event_word(tag, kind) << 32 | (uint32_t)time, __ATOMIC_RELEASE);
}

/* Counts z zero-word payload records of a complete event (zero:
 * sf_self.heap_zero read before its claim). */
static inline __attribute__((always_inline)) void heap_count_zero(uint64_t zero, unsigned z)
{
	if (z)
		sf_arch_cas_local(&sf_self.heap_zero, zero, zero + z);
}

/* Fills claimed records e[0 .. np]: the payload, then time and word that
 * validate it, then the count of its zero-word payload records. */
static inline __attribute__((always_inline)) void heap_fill(struct sf_event *e, uint32_t kind, uint32_t tag,
							    uint64_t time, uint64_t zero, unsigned np, uint64_t a,
							    uint64_t b, uint64_t c, uint64_t d)
{
	unsigned z = heap_payload(e, np, a, b, c, d);
	heap_validate(e, kind, tag, time);
	heap_count_zero(zero, z);
}

/* Stores event `kind` with its np payload records (a, b, c, d: the first
 * np of them). Inlined into each hook with constant kind and np, so the
 * payload stays in registers. */
static inline __attribute__((always_inline)) void heap_record(uint32_t kind, unsigned np, uint64_t a, uint64_t b,
							      uint64_t c, uint64_t d)
{
	struct sf_thread *t = &sf_self;
	uint64_t time = heap_now();
	uint32_t tag = heap_ret_tag(t);
	uint64_t zero = __atomic_load_n(&sf_self.heap_zero, __ATOMIC_RELAXED); /* before the claim: its batch */
	struct sf_event *e = sf_self.heap.busy ? NULL : heap_claim(t, time, 1 + np);
	if (__builtin_expect(e == NULL, 0)) {
		heap_slow(tag, kind, time, a, b, c, d);
		return;
	}
	heap_fill(e, kind, tag, time, zero, np, a, b, c, d);
}

/* 1 if this report repeats the thread's last one from the other source;
 * else it becomes the last one. */
static int heap_dup(uint8_t src, uint8_t dir, uint64_t ptr)
{
	struct sf_heap_tls *l = &sf_self.heap;
	uint32_t tag = l->tag;
	int dup = 0;
	if (TAG_SRC(tag) && TAG_SRC(tag) != src && ptr) {
		if (TAG_DIR(tag) == DIR_REALLOC && src == SRC_SETUP) {
			/* one interposed realloc, two setup-ABI halves */
			uint32_t bit = dir == DIR_ALLOC ? 1 : 2;
			if ((TAG_LEFT(tag) & bit) && ptr == (dir == DIR_ALLOC ? l->ptr : l->old)) {
				l->tag = tag & ~(bit << 16);
				return 1;
			}
		} else if (TAG_DIR(tag) == dir && l->ptr == ptr) {
			dup = 1;
		}
	}
	if (dup) {
		l->tag = 0;
		return 1;
	}
	l->ptr = ptr;
	l->tag = TAG(src, dir, 0);
	return 0;
}

int sf_heap_setup_dup(uint32_t kind, void *ptr)
{
	if (!heap_on)
		return 0;
	uint8_t dir = kind == SF_EV_ALLOC || kind == SF_EV_REALLOC_ALLOC ? DIR_ALLOC : DIR_FREE;
	return heap_dup(SRC_SETUP, dir, (uint64_t)ptr);
}

__attribute__((visibility("default"))) void **sftrace_heap_site_slot(void)
{
	return &sf_self.heap.outer_site;
}

/* libsftrace-alloc.so's constructor: --alloc is on; hidden: the program's
 * own malloc comes before it, so its allocations are not seen. */
__attribute__((visibility("default"))) void sftrace_heap_attach(unsigned hidden)
{
	sf_log_add_features(SF_FEAT_ALLOC | (hidden ? SF_FEAT_ALLOC_HIDDEN : 0));
}

/* heap_dup for an interposed allocation or free: only a setup-ABI report
 * before it can make it a repeat; else two stores (idempotent: the fast
 * path makes them before its claim, and the general path again if the
 * claim fails). */
static inline int heap_dup_interposed(uint8_t dir, uint64_t ptr)
{
	struct sf_heap_tls *l = &sf_self.heap;
	if (__builtin_expect(TAG_SRC(l->tag) == SRC_SETUP, 0))
		return heap_dup(SRC_INTERPOSED, dir, ptr);
	l->ptr = ptr;
	l->tag = TAG(SRC_INTERPOSED, dir, 0);
	return 0;
}

/* ---- heap events before the first patched sled ----
 * Events are recorded once a sled is patched (heap_enabled), so that a
 * process without instrumented code (a shell in between) writes no log.
 * A process whose first patched sled comes later (an executable without
 * sleds, or whose filter selects none of them, that dlopens an
 * instrumented library) would lose the heap events before it, and its
 * later frees of those blocks would read as unmatched. They are kept
 * here, in an anonymous mapping (raw system calls: any thread, any
 * handler), up to EARLY_CAP of them, and stored in the log by the thread
 * whose dlopen patched the first sled (sf_heap_early_flush), at their
 * own times. Only after start-up (sf_config.enabled, step 1 of init.c:
 * the start-up scan patches before anything else is kept) and never
 * while record --paused holds tracing off. Left: they are stored as
 * that thread's events, whichever thread made them; past EARLY_CAP they
 * are counted as dropped; a process that never patches a sled keeps up to
 * EARLY_CAP * 48 bytes of them for nothing. */
enum { EARLY_CAP = 1 << 16, EARLY_OPEN = 1, EARLY_CLOSED = 2 };
struct early_event {
	uint64_t time;
	uint32_t kind, done;
	uint64_t p[4];
};
static struct early_event *early;
static uint32_t early_state, early_n, early_writers;
static uint64_t early_lost;

/* The mapping, once (a lost race drops that event, counted). */
static int early_open(void)
{
	uint32_t st = __atomic_load_n(&early_state, __ATOMIC_ACQUIRE);
	if (st)
		return st == EARLY_OPEN;
	static uint32_t opening;
	if (__atomic_exchange_n(&opening, 1, __ATOMIC_ACQ_REL))
		return 0;
	long p = sf_syscall6(SYS_mmap, 0, (long)EARLY_CAP * (long)sizeof(struct early_event), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p < 0 && p > -4096) {
		__atomic_store_n(&early_state, EARLY_CLOSED, __ATOMIC_RELEASE);
		return 0;
	}
	early = (struct early_event *)p;
	__atomic_store_n(&early_state, EARLY_OPEN, __ATOMIC_RELEASE);
	return 1;
}

/* Keeps a heap event heap_enabled refused: 1 if kept (or counted as
 * lost), 0 if it belongs nowhere (no tracing, paused, suppressed) or the
 * first sled was patched meanwhile (the caller then records it). */
static __attribute__((noinline, cold)) int early_note(uint32_t kind, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	if (!sf_config.enabled || sf_suppressed || sf_switch_enabled() || sf_self.state == SF_THREAD_IGNORED)
		return 0;
	uint64_t time = heap_now();
	__atomic_add_fetch(&early_writers, 1, __ATOMIC_SEQ_CST);
	int kept = early_open();
	if (kept) {
		uint32_t i = __atomic_fetch_add(&early_n, 1, __ATOMIC_RELAXED);
		if (i < EARLY_CAP) {
			struct early_event *e = &early[i];
			e->time = time;
			e->kind = kind;
			e->p[0] = a;
			e->p[1] = b;
			e->p[2] = c;
			e->p[3] = d;
			__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
		} else {
			__atomic_add_fetch(&early_lost, 1, __ATOMIC_RELAXED);
		}
	} else if (__atomic_load_n(&early_state, __ATOMIC_ACQUIRE) != EARLY_CLOSED) {
		__atomic_add_fetch(&early_lost, 1, __ATOMIC_RELAXED);
		kept = 1;
	}
	__atomic_sub_fetch(&early_writers, 1, __ATOMIC_SEQ_CST);
	return kept;
}

void sf_heap_early_flush(void)
{
	if (!sf_objects_patched_total() || __atomic_load_n(&early_state, __ATOMIC_ACQUIRE) != EARLY_OPEN)
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	__atomic_store_n(&early_state, EARLY_CLOSED, __ATOMIC_SEQ_CST);
	/* Writers that saw it open finish their event: a few stores. */
	for (uint32_t spin = 0; __atomic_load_n(&early_writers, __ATOMIC_SEQ_CST) && spin < (1u << 24); spin++)
		sf_arch_cpu_relax();
	uint32_t n = __atomic_load_n(&early_n, __ATOMIC_ACQUIRE);
	uint64_t lost = __atomic_load_n(&early_lost, __ATOMIC_RELAXED), last = 0;
	if (n > EARLY_CAP)
		n = EARLY_CAP;
	struct sf_heap_tls *h = &sf_self.heap;
	h->busy = 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct early_event *e = &early[i];
		if (!__atomic_load_n(&e->done, __ATOMIC_ACQUIRE)) {
			lost++;
			continue;
		}
		last = e->time > last ? e->time : last; /* one thread's order: never back in time */
		sf_record_payload_at(0, e->kind, last, e->p);
	}
	h->busy = 0;
	if (lost)
		sf_log_drop(lost);
	if (!__atomic_load_n(&early_writers, __ATOMIC_SEQ_CST))
		sf_syscall6(SYS_munmap, (long)early, (long)EARLY_CAP * (long)sizeof(struct early_event), 0, 0, 0, 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A forked child: the events kept are its parent's. */
void sf_heap_early_after_fork_child(void)
{
	__atomic_store_n(&early_n, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&early_lost, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&early_writers, 0, __ATOMIC_RELAXED);
}

/* The general path of an interposed allocation or free: every case the
 * fast path leaves to it (see heap_fast). */
static __attribute__((noinline)) void *heap_alloc_general(void *ptr, uint64_t size_align, void *site)
{
	if (!heap_enabled() && early_note(SF_EV_HEAP_ALLOC, size_align, (uint64_t)ptr, (uint64_t)site, 0))
		return ptr;
	if (heap_enabled() && !heap_dup_interposed(DIR_ALLOC, (uint64_t)ptr))
		heap_record(SF_EV_HEAP_ALLOC, 3, size_align, (uint64_t)ptr, (uint64_t)site, 0);
	return ptr;
}

static __attribute__((noinline)) void heap_free_general(void *ptr, void *site)
{
	if (!heap_enabled() && early_note(SF_EV_HEAP_FREE, (uint64_t)ptr, (uint64_t)site, 0, 0))
		return;
	if (heap_enabled() && !heap_dup_interposed(DIR_FREE, (uint64_t)ptr))
		heap_record(SF_EV_HEAP_FREE, 2, (uint64_t)ptr, (uint64_t)site, 0, 0);
}

#ifdef SF_ARCH_SHADOW
/* 1 if the hook runs on the thread's own stack, whose bounds are known:
 * heap_ret_tag_own may then read the tag without a call. The stack
 * pointer, not a frame address: the hooks keep no frame. */
static inline __attribute__((always_inline)) int heap_on_own_stack(void)
{
	uint64_t sp = sf_arch_stack_pointer();
	return sp >= sf_self.stack.lo && sp < sf_self.stack.hi;
}

/* heap_ret_tag, on the thread's own stack (heap_on_own_stack): from the
 * stack pointer up to the stack's top is mapped. At the hook's entry the
 * stack pointer points at the interposed function's return address, which
 * is the slot itself after a tail call (`jmp malloc`): slots from it up
 * are read. */
static inline __attribute__((always_inline)) uint32_t heap_ret_tag_own(const struct sf_thread *t)
{
	uint64_t slot = heap_popped_slot(t);
	if (sf_arch_below_sp(slot) || slot >= t->stack.hi) /* slot 0 too */
		return 0;
	return (uint32_t)(*(const volatile uint64_t *)slot & ((1u << (32 - SF_KIND_BITS)) - 1));
}
#else
static inline int heap_on_own_stack(void)
{
	return 1;
}

static inline uint32_t heap_ret_tag_own(const struct sf_thread *t)
{
	(void)t;
	return 0;
}
#endif

/* The common case of an interposed allocation (dir DIR_ALLOC: a = the
 * size, b = the pointer, c = the site), free (DIR_FREE: a = the pointer,
 * b = the site) or realloc (DIR_REALLOC: a = the new size, b = the new
 * pointer, c = the old, d = the site), event `kind` with np payload records, made without a call
 * or a frame (so the hooks save no register) and with the clock read once:
 * recording on, no setup-ABI report to match, the counter clock, this
 * frame on the thread's own stack (with known bounds), room in the slot at
 * the first attempt. 0, with nothing recorded, in every other case: the
 * caller then takes the general path (heap_record), which records the same
 * event. */
static inline __attribute__((always_inline)) int heap_fast(uint8_t dir, uint32_t kind, unsigned np, uint64_t a,
							   uint64_t b, uint64_t c, uint64_t d)
{
	/* The counter first: the tests below run while it is read. Its value
	 * is not used when they fail (nor on the monotonic clock). */
	uint64_t time = sf_arch_counter();
	struct sf_thread *t = &sf_self;
	struct sf_heap_tls *l = &t->heap;
	/* The gates in one test: --alloc's fast path off, tracing paused, the runtime's own slow path. */
	if (__builtin_expect((heap_fast_off | __atomic_load_n(&sf_tracing_off, __ATOMIC_RELAXED) | l->busy) != 0, 0))
		return 0;
	if (__builtin_expect(TAG_SRC(l->tag) == SRC_SETUP, 0))
		return 0;
	/* One claim attempt (heap_claim's loop is the general path's): a
	 * signal handler's events in between, a full slot or the batch's
	 * span passed send the event there. */
	uint64_t at = __atomic_load_n(&t->cursor, __ATOMIC_RELAXED), end = at + (1 + np) * sizeof(struct sf_event);
	if (__builtin_expect(end > t->limit, 0) || __builtin_expect((time - t->base) >= SF_TIME_SPAN, 0))
		return 0;
	if (__builtin_expect(!heap_on_own_stack(), 0))
		return 0;
	uint64_t zero = __atomic_load_n(&t->heap_zero, __ATOMIC_RELAXED); /* before the claim: its batch */
	if (__builtin_expect(sf_arch_cas_local(&t->cursor, at, end) != at, 0))
		return 0;
	if (dir == DIR_REALLOC) {
		l->ptr = b;
		l->old = c;
		l->tag = TAG(SRC_INTERPOSED, DIR_REALLOC, 3);
	} else {
		l->ptr = dir == DIR_ALLOC ? b : a;
		l->tag = TAG(SRC_INTERPOSED, dir, 0);
	}
	/* The payload first, the tag after it: the payload's registers are
	 * free by then (no register to save, no frame). */
	struct sf_event *e = (struct sf_event *)at;
	unsigned z = heap_payload(e, np, a, b, c, d);
	heap_validate(e, kind, heap_ret_tag_own(t), time);
	heap_count_zero(zero, z);
	return 1;
}

/* The site an outer interposed function left (outer_site.h), taken, or ra. */
static inline void *heap_site(void *ra)
{
	void *o = sf_self.heap.outer_site;
	if (__builtin_expect(o != NULL, 0)) {
		sf_self.heap.outer_site = NULL;
		return o;
	}
	return ra;
}

/* malloc and calloc (libsftrace-alloc.so): the real one returned ptr
 * (maybe NULL) for size bytes; ra is the interposed function's return
 * address, whose place an outer function's site takes. Returns ptr, so
 * that the interposed function ends in a jump here. */
__attribute__((visibility("default"))) void *sftrace_heap_alloc_ra(void *ptr, size_t size, void *ra)
{
	void *site = heap_site(ra);
	uint64_t size_align = sf_size_align(size, 0);
	/* Opaque from here: the zero-word test then reads size_align, not
	 * size kept in a second register (which took a saved register). */
	__asm__("" : "+r"(size_align));
	if (!ptr || heap_fast(DIR_ALLOC, SF_EV_HEAP_ALLOC, 3, size_align, (uint64_t)ptr, (uint64_t)site, 0))
		return ptr;
	return heap_alloc_general(ptr, size_align, site);
}

static __attribute__((noinline)) void heap_free_general_then(void *ptr, void *site, void (*real_free)(void *))
{
	heap_free_general(ptr, site);
	real_free(ptr);
}

/* free (libsftrace-alloc.so): records that ptr (not NULL) is freed, then
 * frees it with real_free, the next definition, in a jump: the interposed
 * free ends in a jump here, and keeps nothing across a call. */
__attribute__((visibility("default"))) void sftrace_heap_free_ra(void *ptr, void *ra, void (*real_free)(void *))
{
	void *site = heap_site(ra);
	if (!heap_fast(DIR_FREE, SF_EV_HEAP_FREE, 2, (uint64_t)ptr, (uint64_t)site, 0, 0)) {
		heap_free_general_then(ptr, site, real_free);
		return;
	}
	real_free(ptr);
}

__attribute__((visibility("default"))) void sftrace_heap_alloc(void *ptr, size_t size, size_t align, void *site)
{
	if (ptr && !heap_fast(DIR_ALLOC, SF_EV_HEAP_ALLOC, 3, sf_size_align(size, align), (uint64_t)ptr, (uint64_t)site, 0))
		heap_alloc_general(ptr, sf_size_align(size, align), site);
}

__attribute__((visibility("default"))) void sftrace_heap_free(void *ptr, void *site)
{
	if (ptr && !heap_fast(DIR_FREE, SF_EV_HEAP_FREE, 2, (uint64_t)ptr, (uint64_t)site, 0, 0))
		heap_free_general(ptr, site);
}

/* The general path of an interposed realloc (heap_fast's other cases). */
static __attribute__((noinline)) void heap_realloc_general(void *ptr, void *old, size_t size, void *site)
{
	if (!heap_enabled() &&
	    (early_note(SF_EV_HEAP_REALLOC, sf_size_align(size, 0), (uint64_t)ptr, (uint64_t)old, (uint64_t)site) ||
	     !heap_enabled()))
		return;
	struct sf_heap_tls *l = &sf_self.heap;
	l->ptr = (uint64_t)ptr;
	l->old = (uint64_t)old;
	l->tag = TAG(SRC_INTERPOSED, DIR_REALLOC, 3);
	heap_record(SF_EV_HEAP_REALLOC, 4, sf_size_align(size, 0), (uint64_t)ptr, (uint64_t)old, (uint64_t)site);
}

/* realloc(old, size) returned ptr (old != NULL, ptr != NULL). */
__attribute__((visibility("default"))) void sftrace_heap_realloc(void *ptr, void *old, size_t size, void *site)
{
	if (!heap_fast(DIR_REALLOC, SF_EV_HEAP_REALLOC, 4, sf_size_align(size, 0), (uint64_t)ptr, (uint64_t)old,
		       (uint64_t)site))
		heap_realloc_general(ptr, old, size, site);
}
