/* Call-heavy XRay fixture: naive recursive fib. Every call is an
 * instrumented function entry and exit, nothing else happens in between,
 * so the tracer's cost per event dominates.
 *
 * Usage: fib N. fib(N) makes 2*fib(N+1)-1 calls to fib; main is
 * instrumented too, so a full trace has 2*(2*fib(N+1)-1) + 2 events.
 * Prints "fib N = V work_ns T" (T: time spent in the recursion only).
 *
 * Built with BENCH_XRAY_FDR, it drives LLVM's XRay FDR mode itself (that
 * mode writes nothing unless the program initialises, finalises and
 * flushes it): see xray_fdr.cc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_hooks.h"

/* noinline + -fno-optimize-sibling-calls keep every call a real call (no
 * tail-call or accumulator-recursion rewrite), so the formula above holds. */
__attribute__((noinline)) static uint64_t fib(uint64_t n)
{
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 32;
	bench_trace_start();
	uint64_t t0 = now_ns();
	uint64_t v = fib(n);
	uint64_t dt = now_ns() - t0;
	bench_trace_stop();
	printf("fib %llu = %llu work_ns %llu\n", (unsigned long long)n, (unsigned long long)v,
	       (unsigned long long)dt);
	return 0;
}
