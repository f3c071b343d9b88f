/* Heap events of the interposed allocator (record --alloc).
 *
 * libsftrace-alloc.so (src/alloc/interpose.c) defines malloc, free and the
 * rest of the family and calls sftrace_heap_alloc/free/realloc here after
 * the real allocator returned. This file owns the per-thread fast path for
 * those events: one clock read, a claim of 3-5 records in the thread's slot
 * with a single (unlocked, so signal-atomic) cmpxchg on the TLS cursor, the
 * payload stores, then the event word that validates them. Anything else
 * (first event of the thread, slot full, time out of the batch's span)
 * goes to sf_record_payload, the slow path with signals blocked.
 *
 * Why cmpxchg and not xadd as in the trampolines: a multi-record claim
 * must never straddle the slot's limit (records claimed inside the slot
 * but never filled would read as holes), so the claim is made only if the
 * cursor still holds the value checked against the limit.
 *
 * Events are recorded once the runtime is initialised in a process with
 * patched sleds (or a setup-ABI program): processes without instrumented
 * code (a shell in between) write no log, with or without --alloc.
 *
 * Setup-ABI programs (sftrace_alloc_event, e.g. a Rust SftraceAllocator
 * wrapping System) report the same allocation twice when --alloc is on: once
 * from the interposed malloc and once from their hook. The first report
 * wins: a report from the other source for the same pointer and direction
 * that follows it directly on the same thread is dropped (sf_heap_setup_dup). */
#include "runtime/runtime.h"

/* The last heap event recorded on this thread, for sf_heap_setup_dup. */
struct heap_last {
	uint64_t ptr;  /* pointer allocated (or freed) */
	uint64_t old;  /* realloc: the pointer freed; 0 otherwise */
	uint8_t src;   /* 1 interposed, 2 setup ABI */
	uint8_t dir;   /* 1 allocation, 2 free, 3 realloc (both) */
	uint8_t left;  /* realloc: setup-ABI halves still to match (bit 0 alloc, bit 1 free) */
};
static __thread struct heap_last heap_last __attribute__((tls_model("initial-exec")));
static __thread int heap_busy __attribute__((tls_model("initial-exec")));
static int heap_on;

enum { SRC_INTERPOSED = 1, SRC_SETUP = 2 };
enum { DIR_ALLOC = 1, DIR_FREE = 2, DIR_REALLOC = 3 };

static int heap_enabled(void)
{
	/* record --paused: no heap event while tracing is off (switch.c). */
	if (__builtin_expect(heap_on, 1))
		return !__atomic_load_n(&sf_tracing_off, __ATOMIC_RELAXED);
	if (!sf_config.enabled || !sf_objects_patched_total())
		return 0;
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
 * One local compare-and-swap: a signal handler runs before or after it. */
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

static void heap_record(uint32_t kind, const uint64_t *payload)
{
	if (heap_busy) { /* the runtime's own slow path allocated: never recurse */
		sf_log_drop(1);
		return;
	}
	size_t np = sf_event_payload_records(kind);
	uint64_t time = heap_now();
	struct sf_thread *t = &sf_self;
	struct sf_event *e = t->state == SF_THREAD_ACTIVE || t->state == SF_THREAD_DROPPING
				     ? heap_claim(t, time, 1 + np)
				     : NULL;
	if (__builtin_expect(e != NULL, 1)) {
		uint64_t *p = (uint64_t *)(e + 1);
		for (size_t i = 0; i < np; i++)
			p[i] = payload[i];
		e->time_lo = (uint32_t)time;
		__atomic_store_n(&e->word, sf_event_word(0, kind), __ATOMIC_RELEASE);
		return;
	}
	if (t->state == SF_THREAD_IGNORED)
		return;
	heap_busy = 1;
	sf_record_payload(kind, time, payload);
	heap_busy = 0;
}

/* 1 if this report repeats the thread's last one from the other source. */
static int heap_dup(uint8_t src, uint8_t dir, uint64_t ptr)
{
	struct heap_last *l = &heap_last;
	int dup = 0;
	if (l->src && l->src != src && ptr) {
		if (l->dir == DIR_REALLOC && src == SRC_SETUP) {
			/* one interposed realloc, two setup-ABI halves */
			uint8_t bit = dir == DIR_ALLOC ? 1 : 2;
			if ((l->left & bit) && ptr == (dir == DIR_ALLOC ? l->ptr : l->old)) {
				l->left &= (uint8_t)~bit;
				return 1;
			}
		} else if (l->dir == dir && l->ptr == ptr) {
			dup = 1;
		}
	}
	if (dup) {
		l->src = 0;
		return 1;
	}
	l->src = src;
	l->dir = dir;
	l->ptr = ptr;
	l->old = 0;
	l->left = 0;
	return 0;
}

int sf_heap_setup_dup(uint32_t kind, void *ptr)
{
	if (!heap_on)
		return 0;
	uint8_t dir = kind == SF_EV_ALLOC || kind == SF_EV_REALLOC_ALLOC ? DIR_ALLOC : DIR_FREE;
	return heap_dup(SRC_SETUP, dir, (uint64_t)ptr);
}

__attribute__((visibility("default"))) void sftrace_heap_alloc(void *ptr, size_t size, size_t align, void *site)
{
	if (!heap_enabled() || !ptr || heap_dup(SRC_INTERPOSED, DIR_ALLOC, (uint64_t)ptr))
		return;
	uint64_t p[3] = {sf_size_align(size, align), (uint64_t)ptr, (uint64_t)site};
	heap_record(SF_EV_HEAP_ALLOC, p);
}

__attribute__((visibility("default"))) void sftrace_heap_free(void *ptr, void *site)
{
	if (!ptr || !heap_enabled() || heap_dup(SRC_INTERPOSED, DIR_FREE, (uint64_t)ptr))
		return;
	uint64_t p[2] = {(uint64_t)ptr, (uint64_t)site};
	heap_record(SF_EV_HEAP_FREE, p);
}

/* realloc(old, size) returned ptr (old != NULL, ptr != NULL). */
__attribute__((visibility("default"))) void sftrace_heap_realloc(void *ptr, void *old, size_t size, void *site)
{
	if (!heap_enabled())
		return;
	struct heap_last *l = &heap_last;
	l->src = SRC_INTERPOSED;
	l->dir = DIR_REALLOC;
	l->ptr = (uint64_t)ptr;
	l->old = (uint64_t)old;
	l->left = 3;
	uint64_t p[4] = {sf_size_align(size, 0), (uint64_t)ptr, (uint64_t)old, (uint64_t)site};
	heap_record(SF_EV_HEAP_REALLOC, p);
}
