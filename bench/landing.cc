// What a caught C++ exception costs (bench/landing_cost.sh): catcher()
// calls middle(), which calls thrower(), which throws an int caught in
// catcher(): two instrumented frames abandoned per throw. Prints the
// program thread's CPU ns per throw in batches of 200 of ITER throws (after
// a warm-up), the 10th percentile of the batches: on a shared VM a batch
// that lost its core or ran beside a busy one is slower, and a rare one is
// undercounted (1 in 1,000 read 40% low here).
//
//   landing_cxx ITER
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <algorithm>
#include <vector>

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
	long iter = argc > 1 ? atol(argv[1]) : 200000, caught = 0, batch = 200, nb = iter / batch;
	if (nb < 1)
		return 2;
	std::vector<double> t((size_t)nb);
	for (int i = 0; i < 1000; i++)
		caught += catcher(i);
	for (long b = 0; b < nb; b++) {
		double t0 = thread_ns();
		for (long i = 0; i < batch; i++)
			caught += catcher((int)i);
		t[(size_t)b] = (thread_ns() - t0) / (double)batch;
	}
	std::sort(t.begin(), t.end());
	std::printf("%.1f\n", t[(size_t)nb / 10]);
	return caught == nb * batch + 1000 ? 0 : 1;
}
