/* What a longjmp landing costs (bench/landing_cost.sh): jumper() calls
 * mid(), which calls leaf(), which longjmps back to jumper(): two
 * instrumented frames abandoned per landing. Prints the program thread's
 * least CPU ns per landing over batches of 1,000 of ITER landings (after a
 * warm-up): on a shared machine a batch that lost its core, or ran beside a
 * busy one, is slower, never faster.
 *
 *   landing ITER */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) void leaf(void)
{
	sink++;
	longjmp(env, 1);
}

__attribute__((noinline)) void mid(void)
{
	leaf();
	sink++; /* not a tail call */
}

__attribute__((noinline)) int jumper(void)
{
	if (setjmp(env) == 0) {
		mid();
		return 0;
	}
	return 1;
}

static double thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long iter = argc > 1 ? atol(argv[1]) : 1000000, jumps = 0, batch = 1000;
	double best = 1e18;
	for (int i = 0; i < 1000; i++)
		jumps += jumper();
	for (long b = 0; b < iter / batch; b++) {
		double t0 = thread_ns();
		for (long i = 0; i < batch; i++)
			jumps += jumper();
		double t = (thread_ns() - t0) / (double)batch;
		best = t < best ? t : best;
	}
	printf("%.1f\n", best);
	return jumps == iter / batch * batch + 1000 ? 0 : 1;
}
