/* bench/args_cost.sh's program: N calls of add(i, i + 1) and N of
 * other(i, i + 1), the same function under another name, so that a run
 * with -A/-R on add alone prices the named calls and the unnamed ones side
 * by side. Built with XRay sleds (sftrace) or with -pg (uftrace). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) int add(int a, int b) { sink++; return a + b; }
__attribute__((noinline)) int other(int a, int b) { sink++; return a + b; }

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	int which = argc > 1 ? atoi(argv[1]) : 0; /* 0: add, 1: other */
	long s = 0;
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++)
		s += which ? other((int)i, (int)i + 1) : add((int)i, (int)i + 1);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	printf("%ld\n", s);
	/* The loop's CPU time on this thread alone (the tracer's writer
	 * thread, the machine's other load left out): args_cost.sh's
	 * steadier column. */
	fprintf(stderr, "loop thread cpu ns %lld\n",
		(long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
