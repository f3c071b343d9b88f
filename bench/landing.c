/* What a longjmp landing costs (bench/landing_cost.sh): jumper() calls
 * mid(), which calls leaf(), which longjmps back to jumper(): two
 * instrumented frames abandoned per landing. Prints the program thread's
 * CPU ns per landing in batches of 1,000 of ITER landings (after a
 * warm-up), the 10th percentile of the batches: on a shared VM a batch
 * that lost its core or ran beside a busy one is slower, and a rare one is
 * undercounted (1 in 1,000 read 40% low here).
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

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	long iter = argc > 1 ? atol(argv[1]) : 1000000, jumps = 0, batch = 1000, nb = iter / batch;
	double *t = calloc((size_t)(nb > 0 ? nb : 1), sizeof(*t));
	if (!t || nb < 1)
		return 2;
	for (int i = 0; i < 1000; i++)
		jumps += jumper();
	for (long b = 0; b < nb; b++) {
		double t0 = thread_ns();
		for (long i = 0; i < batch; i++)
			jumps += jumper();
		t[b] = (thread_ns() - t0) / (double)batch;
	}
	qsort(t, (size_t)nb, sizeof(*t), cmp);
	printf("%.1f\n", t[nb / 10]);
	free(t);
	return jumps == nb * batch + 1000 ? 0 : 1;
}
