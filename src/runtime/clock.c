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
uint64_t sf_xsave_mask SF_HIDDEN; /* edx:eax for xsave/xrstor in the slow path */

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

/* What the slow path saves: the state C code and libc may touch (x87, SSE,
 * AVX, AVX-512), never AMX tiles (8 KiB of TILEDATA) nor PKRU, as glibc's
 * _dl_runtime_resolve does. The standard-format area then ends with the
 * last of these components: about 2.7 KiB with AVX-512 instead of 11 KiB
 * with AMX, which matters on small stacks and sigaltstacks. */
#define XSAVE_WANTED ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 5) | (1u << 6) | (1u << 7))

static void xsave_probe(void)
{
	unsigned a, b, c, d;
	__cpuid(1, a, b, c, d);
	int osxsave = (c >> 27) & 1, xsave = (c >> 26) & 1;
	sf_xsave_size = 512 + 64; /* fxsave area, plus alignment slack */
	sf_have_xsave = 0;
	if (!xsave || !osxsave || (unsigned)__get_cpuid_max(0, 0) < 0xdu)
		return;
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	uint64_t mask = (((uint64_t)hi << 32) | lo) & XSAVE_WANTED;
	uint64_t end = 576; /* legacy area + XSAVE header */
	for (unsigned i = 2; i < 32; i++) {
		if (!(mask >> i & 1))
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		if ((uint64_t)a + b > end)
			end = (uint64_t)a + b; /* size, offset */
	}
	sf_xsave_mask = mask;
	sf_xsave_size = end + 64;
	sf_have_xsave = 1;
}

void sf_clock_init(void)
{
	xsave_probe();
	if (sf_config.clock == 0)
		sf_config.clock = sf_tsc_invariant() ? SF_CLOCK_TSC : SF_CLOCK_MONOTONIC;
}
