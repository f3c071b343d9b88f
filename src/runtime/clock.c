/* Timestamps. Events carry raw counter values (cheap: one read in the
 * trampoline: rdtsc on x86-64, cntvct_el0 on aarch64; sf_arch.h); the log
 * header and every chunk carry (counter, CLOCK_MONOTONIC) pairs so readers
 * can fit the conversion line without any sleep here. When the counter is
 * not stable (or SFTRACE_CLOCK=monotonic), events carry CLOCK_MONOTONIC
 * nanoseconds instead and take the slow path. */
#include <time.h>

#include "runtime/runtime.h"

uint64_t sf_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

SF_LANDING_TEXT uint64_t sf_now_raw(void)
{
	return sf_config.clock == SF_CLOCK_TSC ? sf_arch_counter() : sf_mono_ns();
}

void sf_clock_init(void)
{
	sf_arch_clock_init();
	if (sf_config.clock == 0)
		sf_config.clock = sf_arch_counter_stable() ? SF_CLOCK_TSC : SF_CLOCK_MONOTONIC;
}
