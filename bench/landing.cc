// What a caught C++ exception costs (bench/landing_cost.sh): catcher()
// calls middle(), which calls thrower(), which throws an int caught in
// catcher(): two instrumented frames abandoned per throw. Prints the
// program thread's least CPU ns per throw over batches of 200 of ITER
// throws (after a warm-up): a batch that lost its core, or ran beside a
// busy one, is slower, never faster.
//
//   landing_cxx ITER
#include <cstdio>
#include <cstdlib>
#include <ctime>

static volatile int sink;

__attribute__((noinline)) void thrower(int i)
{
	sink++;
	if (i >= 0)
		throw i;
}

__attribute__((noinline)) void middle(int i)
{
	thrower(i);
	sink++; // not a tail call
}

__attribute__((noinline)) int catcher(int i)
{
	try {
		middle(i);
	} catch (int) {
		return 1;
	}
	return 0;
}

static double thread_ns()
{
	timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long iter = argc > 1 ? atol(argv[1]) : 200000, caught = 0, batch = 200;
	double best = 1e18;
	for (int i = 0; i < 1000; i++)
		caught += catcher(i);
	for (long b = 0; b < iter / batch; b++) {
		double t0 = thread_ns();
		for (long i = 0; i < batch; i++)
			caught += catcher((int)i);
		double t = (thread_ns() - t0) / (double)batch;
		best = t < best ? t : best;
	}
	std::printf("%.1f\n", best);
	return caught == iter / batch * batch + 1000 ? 0 : 1;
}
