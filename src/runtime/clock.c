/* Timestamps. Events carry raw TSC values (cheap: one rdtsc in the
 * trampoline); the log header and every chunk carry (tsc, CLOCK_MONOTONIC)
 * pairs so readers can fit the conversion line without any sleep here. When
 * the TSC is not invariant (or SFTRACE_CLOCK=monotonic), events carry
 * CLOCK_MONOTONIC nanoseconds instead and take the slow path. */
#include <cpuid.h>
#include <time.h>

#include "runtime/runtime.h"

uint64_t sf_xsave_size SF_HIDDEN = 512 + 64;
uint8_t sf_have_xsave SF_HIDDEN;

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

uint64_t sf_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sf_now_raw(void)
{
	return sf_config.clock == SF_CLOCK_TSC ? rdtsc() : sf_mono_ns();
}

int sf_tsc_invariant(void)
{
	unsigned a, b, c, d;
	if ((unsigned)__get_cpuid_max(0x80000000, 0) < 0x80000007u)
		return 0;
	__cpuid(0x80000007, a, b, c, d);
	return (d >> 8) & 1;
}

/* How much stack the slow path needs to save the extended register state. */
static void xsave_probe(void)
{
	unsigned a, b, c, d;
	__cpuid(1, a, b, c, d);
	int osxsave = (c >> 27) & 1, xsave = (c >> 26) & 1;
	if (xsave && osxsave && (unsigned)__get_cpuid_max(0, 0) >= 0xdu) {
		__cpuid_count(0xd, 0, a, b, c, d);
		if (b >= 576) {
			sf_xsave_size = b + 64;
			sf_have_xsave = 1;
			return;
		}
	}
	sf_xsave_size = 512 + 64; /* fxsave area, plus alignment slack */
	sf_have_xsave = 0;
}

void sf_clock_init(void)
{
	xsave_probe();
	if (sf_config.clock == 0)
		sf_config.clock = sf_tsc_invariant() ? SF_CLOCK_TSC : SF_CLOCK_MONOTONIC;
}
