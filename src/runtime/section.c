/* Masked sections on a stack of the runtime's own (docs/DESIGN.md,
 * "Masked sections and the program's stack").
 *
 * The slow path's work with every signal blocked (a slot's hand-off, the
 * log's locks, a thread's first slot) takes kilobytes of stack. On the
 * program's stack it could fault there: traced recursion that overflows,
 * or a handler on a small alternate stack that calls traced code. With
 * SIGSEGV blocked the kernel then kills the process, where the program
 * untraced would have run its own handler (Rust's and Go's overflow
 * reports, a server's recovery by siglongjmp); and leaving the fault
 * signals open in the sections lets a handler jump out of a half-done
 * section (tried and reverted: hangs on its locks). So the work runs on a
 * stack of the thread's own, mapped at its first section, and the
 * program's stack only holds what the section's edges need, touched
 * (section_probe) before the signals are blocked: a fault there is an
 * ordinary one, with the program's handler free to run.
 *
 * Signals stay blocked for as long as the section stack is in use, so no
 * handler of the program ever runs on it, and a section never interrupts
 * another; one called inside another runs where it is. Not under valgrind,
 * which takes a jump between stacks for the client losing its stack
 * ("client switching stacks?" on the program's stderr); not when the
 * mapping fails: the work then runs in place, as before. An exited
 * thread's stack goes to the next thread (pool below). */
#include <signal.h>
#include <sys/mman.h>

#include "runtime.h"

/* Deep enough for the deepest section (a thread's first slot, a hand-off
 * under --writer sync, a snapshot) several times over; only the pages a
 * section touches are ever backed (MAP_NORESERVE). One page below is left
 * unmapped (PROT_NONE): an overrun faults instead of writing past. */
#define SECTION_STACK (256 * 1024)
#define GUARD SF_PAGE
/* The program's stack below its pointer that a section's edges may take:
 * pthread_sigmask both ways and the switch. */
#define EDGE_BYTES 1024

#define SECTION_MAP (SECTION_STACK + GUARD)

/* The top of the thread's section stack (its mapping's end), 0 while it
 * has none: one word, set by one instruction (a handler may map its own
 * in between). */
static __thread uint64_t sect_hi __attribute__((tls_model("initial-exec")));
/* Stacks of exited threads, for the next threads' first sections: a
 * mapping and its guard page cost a thread's start 0.2 ms more without
 * (3,000 short threads: 1.92 s against 1.20 s; mmap, mprotect and the
 * munmap's TLB shootdown on a paravirtualized VM). Each word is one stack's
 * top or 0; taken by exchange and given by compare-exchange, so no lock
 * (a signal handler or a fork child never waits) and no ABA: a taker gets
 * what the word held, alone. Past POOL, stacks are unmapped. */
#define POOL 32
static uint64_t pool[POOL];

static uint64_t pool_take(void)
{
	for (unsigned i = 0; i < POOL; i++)
		if (__atomic_load_n(&pool[i], __ATOMIC_RELAXED)) {
			uint64_t top = __atomic_exchange_n(&pool[i], 0, __ATOMIC_ACQ_REL);
			if (top)
				return top;
		}
	return 0;
}

static void pool_give(uint64_t top)
{
	for (unsigned i = 0; i < POOL; i++) {
		uint64_t none = 0;
		if (__atomic_compare_exchange_n(&pool[i], &none, top, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return;
	}
	munmap((void *)(top - SECTION_MAP), SECTION_MAP);
}

/* A fresh stack's top, 0 if it cannot be had. */
static uint64_t stack_map(void)
{
	void *p = mmap(NULL, SECTION_MAP, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	if (mprotect(p, GUARD, PROT_NONE) != 0) {
		munmap(p, SECTION_MAP);
		return 0;
	}
	return (uint64_t)p + SECTION_MAP;
}

/* 1 once mapping this thread's failed (or valgrind): no second try */
static __thread int sect_none __attribute__((tls_model("initial-exec")));

/* The top of this thread's section stack, 0 if it has none. Signals may
 * be open: a handler that maps its own first keeps it (the interrupted
 * context then finds sect_hi set, and its mapping is given back). */
static uint64_t section_top(void)
{
	if (__builtin_expect(sect_hi != 0, 1))
		return sect_hi;
	if (sect_none)
		return 0;
	if (sf_running_on_valgrind()) {
		sect_none = 1;
		return 0;
	}
	uint64_t top = pool_take();
	if (!top && !(top = stack_map())) {
		sect_none = 1;
		return 0;
	}
	uint64_t was = sf_arch_cas_local(&sect_hi, 0, top);
	if (was) { /* a signal handler took one meanwhile */
		pool_give(top);
		return was;
	}
	sf_buffer_exit_hook_arm(); /* given back at the thread's exit */
	return top;
}

/* Touches the program's stack the section's edges will take, while
 * signals are still open: a fault here (an overflow) is the program's to
 * handle, as one a few frames further down would have been untraced. */
static __attribute__((noinline)) void section_probe(void)
{
	volatile char edge[EDGE_BYTES];
	edge[0] = 0;
	__asm__ volatile("" : : "r"(edge) : "memory");
}

void sf_masked_run(void (*fn)(void *), void *arg)
{
	uint64_t top = section_top();
	uint64_t sp = sf_arch_stack_pointer();
	int switch_to = top && !(sp > top - SECTION_MAP && sp <= top); /* not already on it */
	if (switch_to)
		section_probe();
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (switch_to)
		sf_arch_call_on(fn, arg, top);
	else
		fn(arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The thread's exit hook (buffer.c), after its last section. */
void sf_section_stack_free(void)
{
	uint64_t top = sect_hi, sp = sf_arch_stack_pointer();
	if (!top || (sp > top - SECTION_MAP && sp <= top))
		return; /* none, or (never) the stack in use */
	sect_hi = 0;
	pool_give(top);
}

/* fork child: the mapping is the child's copy, already its own. */
