/* x86-64 clock and slow-path state: whether the TSC may be the event clock,
 * and how much extended state the slow path of trampoline.S saves. */
#include <cpuid.h>

#include "runtime/runtime.h"

uint64_t sf_xsave_size SF_HIDDEN = 512 + 64;
uint8_t sf_have_xsave SF_HIDDEN;
uint64_t sf_xsave_mask SF_HIDDEN; /* edx:eax for xsave/xrstor in the slow path */

/* Invariant TSC: constant rate across P-states and C-states. */
int sf_arch_counter_stable(void)
{
	unsigned a, b, c, d;
	if ((unsigned)__get_cpuid_max(0x80000000, 0) < 0x80000007u)
		return 0;
	__cpuid(0x80000007, a, b, c, d);
	return (d >> 8) & 1;
}

/* Not architecturally known: readers fit the calibration pairs. */
uint64_t sf_arch_counter_hz(void)
{
	return 0;
}

/* What the slow path saves: the state C code and libc may touch (x87, SSE,
 * AVX, AVX-512), never AMX tiles (8 KiB of TILEDATA) nor PKRU, as glibc's
 * _dl_runtime_resolve does. The standard-format area then ends with the
 * last of these components: about 2.7 KiB with AVX-512 instead of 11 KiB
 * with AMX, which matters on small stacks and sigaltstacks. */
#define XSAVE_WANTED ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 5) | (1u << 6) | (1u << 7))

void sf_arch_clock_init(void)
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
