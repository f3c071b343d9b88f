/* Allocation-heavy workload for bench/alloc_overhead.py.
 *   alloc_bench pairs N   N x (traced call pair() doing malloc(32) + free)
 *   alloc_bench calls N   N x (traced call nop()): the function-event cost alone
 *   alloc_bench flat N    N x malloc(32)/free in one traced call (heap events only)
 * Prints the in-program time of the loop in ns. */
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

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[2]);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (!strcmp(argv[1], "pairs"))
		for (long i = 0; i < n; i++)
			pair(i);
	else if (!strcmp(argv[1], "calls"))
		for (long i = 0; i < n; i++)
			nop(i);
	else
		flat(n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%lld\n", (long long)((b.tv_sec - a.tv_sec) * 1000000000LL + b.tv_nsec - a.tv_nsec));
	return 0;
}
