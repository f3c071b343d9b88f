/*
 * lock.c: the runtime's mutex, for the few locks it takes off the event
 * path (a slot's mapping, a ring's slots, the log's reopening): signals
 * are blocked by the caller; a waiter spins briefly, then sleeps on a
 * futex, and the writer thread serves requests instead of sleeping.
 */
#include <stdint.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

/* The runtime's locks (the log's, its arenas' and slot pool's, the reopen
 * lock: logfile.c; the rings': buffer.c): 0 free, 1 held, 2 held with
 * sleepers (a futex, as Drepper's "Futexes are tricky", mutex 2).
 * sf_lock_take: signals blocked by the caller, a short spin, then a sleep
 * on the word until a release wakes one sleeper. Spinning alone, 300 new threads on 2 CPUs kept the
 * holder (mapping their slots) off the CPUs: 97% of such a run was
 * sf_log_slot_get's spin (skeptic f8, skf8_threads live 300, 5.8 s).
 * Yielding instead hands the CPU only to threads of the same or higher
 * priority: a SCHED_FIFO waiter pinned with an ordinary holder spun
 * until the holder's CPU came back, for good in one run (skeptic c9,
 * skc9_rt fifo, 674 s); and a nap instead of the yield left the lock free
 * while every waiter slept (1,000 live threads: over 100 s). A sleeper
 * is woken by the release. With serve (the log's lock), the writer never
 * sleeps: it serves a request each try (the holder may wait for one) and
 * yields. The sleep has a 100 ms bound, a net under the protocol (a
 * release that found no mark costs a sleeper that long at worst, never a
 * hang); a 1 ms one woke 700 sleepers a millisecond each and starved the
 * holder (1,000 live threads: over 100 s). The rings' lock spun with no
 * sleep until 2026-12-06: 1,000 live threads under --ring stalled for
 * 19-273 s, the load average near 800 (skeptic d1, skd1_live). */
void sf_lock_take(int *lock, int serve)
{
	int c = 0;
	for (unsigned n = 0; !__atomic_compare_exchange_n(lock, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED); n++) {
		c = 0;
		if (serve)
			sf_writer_serve();
		if (n < 64) {
			sf_arch_cpu_relax();
			continue;
		}
		if (serve && sf_writer_on_thread()) {
			sf_yield();
			continue;
		}
		/* Marked from here on (a thread woken takes it marked: others
		 * may still sleep). */
		while (__atomic_exchange_n(lock, 2, __ATOMIC_ACQUIRE) != 0)
			sf_futex_wait((const uint32_t *)lock, 2, 100000000L);
		return;
	}
}

/* A sf_lock_take's lock given back: a sleeper woken if it was marked. */
void sf_lock_give(int *lock)
{
	if (__atomic_exchange_n(lock, 0, __ATOMIC_RELEASE) == 2)
		sf_futex_wake((const uint32_t *)lock, 1);
}

