/* Stretches where this thread's instrumented calls are not the program's
 * and record nothing:
 *   - the runtime's own calls into code the program may have instrumented
 *     (pthread_create calls the program's malloc: writer.c);
 *   - a vfork child, which runs on its parent's thread-local storage until
 *     it execs or exits (hooks.c): it must not write into its parent's slot.
 * The thread's time base is set out of every span, so each event leaves the
 * trampoline's fast path without claiming a record; the slow path sees
 * sf_suppressed and returns. Everything the trampolines read is put back at
 * the end. */
#include "runtime/runtime.h"

__thread uint32_t sf_suppressed __attribute__((tls_model("initial-exec"))) SF_HIDDEN;

void sf_suppress_begin(struct sf_suppress_state *st)
{
	struct sf_thread *t = &sf_self;
	st->cursor = t->cursor;
	st->limit = t->limit;
	st->window_depth = t->window_depth;
	st->base = t->base;
#ifdef SF_ARCH_SHADOW
	st->shadow_depth = sf_shadow_depth(t);
#else
	st->shadow_depth = 0;
#endif
	st->was = sf_suppressed != 0;
	__atomic_store_n(&sf_suppressed, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* time - base then has its top bit... set for any time below 2^63: the
	 * span check fails before the claim. */
	t->base = UINT64_MAX >> 1;
}

void sf_suppress_end(const struct sf_suppress_state *st)
{
	struct sf_thread *t = &sf_self;
	t->base = st->base;
	t->window_depth = st->window_depth;
	t->limit = st->limit;
	t->cursor = st->cursor;
#ifdef SF_ARCH_SHADOW
	sf_shadow_set_depth(t, st->shadow_depth); /* a vfork child's frames were pushed on it */
#endif
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&sf_suppressed, st->was, __ATOMIC_RELAXED);
}
