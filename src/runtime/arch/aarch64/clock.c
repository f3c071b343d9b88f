/* aarch64 clock: the generic timer. cntvct_el0 counts at cntfrq_el0 Hz on
 * every core, so it is always usable as the event clock; its frequency goes
 * into the log header (counter_hz) and readers scale by it. */
#include "runtime/runtime.h"

uint64_t sf_arch_pointer_guard SF_HIDDEN;

int sf_arch_counter_stable(void)
{
	return 1;
}

uint64_t sf_arch_counter_hz(void)
{
	uint64_t hz;
	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(hz));
	return hz;
}

/* Nothing to probe for the slow path (trampoline.S saves all of q0-q31).
 * The pointer guard that mangles setjmp's stack pointer is a variable of
 * the loader's (glibc private): found once here, before any longjmp. */
void sf_arch_clock_init(void)
{
	const uint64_t *guard = sf_sym_any_v("__pointer_chk_guard", NULL); /* not libdl's: elf_sym.c */
	if (guard)
		sf_arch_pointer_guard = *guard;
}
