/* Timestamps. Events carry raw counter values (cheap: one read in the
 * trampoline: rdtsc on x86-64, cntvct_el0 on aarch64; sf_arch.h); the log
 * header and every chunk carry (counter, CLOCK_MONOTONIC) pairs so readers
 * can fit the conversion line without any sleep here. When the counter is
 * not stable (or SFTRACE_CLOCK=monotonic), events carry CLOCK_MONOTONIC
 * nanoseconds instead and take the slow path. */
#include <time.h>

#include "runtime/runtime.h"

/* Under a seccomp filter that refuses clock_gettime (sandbox.c), which
 * the vDSO falls back to where the clock source has no vDSO mode (hpet,
 * acpi_pm, a TSC found unstable at run time): CLOCK_MONOTONIC on the
 * counter's line through two pairs read while the call was allowed (the
 * start's and the install's), with the counter as the events' clock. */
static uint64_t line_tsc0, line_mono0, line_tsc1, line_mono1;

void sf_clock_line_fix(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	line_tsc1 = sf_arch_counter();
	line_mono1 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	line_tsc0 = sf_start_tsc;
	line_mono0 = sf_start_mono;
}

static uint64_t line_ns(void)
{
	uint64_t t = sf_arch_counter();
	if (line_tsc1 <= line_tsc0 || t < line_tsc0 || line_mono1 < line_mono0)
		return line_mono1;
	return line_mono0 + (uint64_t)((unsigned __int128)(t - line_tsc0) * (line_mono1 - line_mono0) /
				       (line_tsc1 - line_tsc0));
}

uint64_t sf_mono_ns(void)
{
	if (__atomic_load_n(&sf_sandbox_no_clock, __ATOMIC_RELAXED))
		return line_ns();
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
