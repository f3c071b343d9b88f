/* Allocation-heavy workload for bench/alloc_overhead.py.
 *   alloc_bench pairs N     N x (traced call pair() doing malloc(32) + free)
 *   alloc_bench calls N     N x (traced call nop()): the function-event cost alone
 *   alloc_bench flat N      N x malloc(32)/free in one traced call (heap events only)
 *   alloc_bench grow N      N x malloc(32), realloc to 64, free in one traced call
 *   alloc_bench depth D N   flat, D frames deep (main, D - 2 calls of
 *                           descend(), flat; D >= 2): a heap profiler that
 *                           unwinds walks D frames of the program (and
 *                           libc's start-up frames) per malloc or free
 * Prints the in-program time of the loop in ns: CLOCK_MONOTONIC, or the
 * thread's CPU time with ALLOC_BENCH_CLOCK=thread (on a shared machine, time
 * spent waiting for a core is left out). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) void pair(long i)
{
	char *p = malloc(32);
	p[0] = (char)i;
	sink += p[0];
	free(p);
}

__attribute__((noinline)) void nop(long i) { sink += i; }

__attribute__((noinline)) void flat(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc(32);
		p[0] = (char)i;
		sink += p[0];
		free(p);
	}
}

__attribute__((noinline)) void grow(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc(32);
		p[0] = (char)i;
		p = realloc(p, 64);
		sink += p[0];
		free(p);
	}
}

/* The loop d frames below the caller: this one, d - 2 more, flat. Not a
 * tail call (the sum after it), so every frame stays on the stack. */
__attribute__((noinline)) long descend(int d, long n)
{
	if (d <= 2) {
		flat(n);
		return 0;
	}
	long r = descend(d - 1, n);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[argc - 1]);
	const char *c = getenv("ALLOC_BENCH_CLOCK");
	clockid_t clk = c && !strcmp(c, "thread") ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
	struct timespec a, b;
	clock_gettime(clk, &a);
	if (!strcmp(argv[1], "depth") && argc > 3 && atoi(argv[2]) <= 2)
		flat(n);
	else if (!strcmp(argv[1], "depth") && argc > 3)
		sink += descend(atoi(argv[2]) - 1, n);
	else if (!strcmp(argv[1], "pairs"))
		for (long i = 0; i < n; i++)
			pair(i);
	else if (!strcmp(argv[1], "grow"))
		grow(n);
	else if (!strcmp(argv[1], "calls"))
		for (long i = 0; i < n; i++)
			nop(i);
	else
		flat(n);
	clock_gettime(clk, &b);
	printf("%lld\n", (long long)((b.tv_sec - a.tv_sec) * 1000000000LL + b.tv_nsec - a.tv_nsec));
	return 0;
}
