/* bench/args_cost.sh's program: N calls of add(i, i + 1) and N of
 * other(i, i + 1), the same function under another name, so that a run
 * with -A/-R on add alone prices the named calls and the unnamed ones side
 * by side. Built with XRay sleds (sftrace) or with -pg (uftrace). */
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

__attribute__((noinline)) int add(int a, int b) { sink++; return a + b; }
__attribute__((noinline)) int other(int a, int b) { sink++; return a + b; }

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	int which = argc > 1 ? atoi(argv[1]) : 0; /* 0: add, 1: other */
	long s = 0;
	for (long i = 0; i < n; i++)
		s += which ? other((int)i, (int)i + 1) : add((int)i, (int)i + 1);
	printf("%ld\n", s);
	return 0;
}
