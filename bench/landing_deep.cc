// A C++ throw caught DEPTH frames up (bench/landing_cost.sh): dive() recurses
// DEPTH times and throws an int that catcher() catches, with no cleanup on
// the way (one landing). libgcc looks up the unwind information of every
// frame in both phases, each lookup through the runtime's _Unwind_Find_FDE
// (docs/DESIGN.md, Unwinding: 3 instructions a lookup). Prints the program
// thread's CPU ns per throw in batches of 20 throws (fewer: one batch; after
// a warm-up), the 10th percentile of the batches, as bench/landing.cc does.
//
//   landing_deep DEPTH ITER
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

static volatile int sink;

__attribute__((noinline)) void dive(int n)
{
	if (!n)
		throw 1;
	dive(n - 1);
	sink++; // not a tail call
}

__attribute__((noinline)) int catcher(int depth)
{
	try {
		dive(depth);
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
	int depth = argc > 1 ? atoi(argv[1]) : 1000;
	long iter = argc > 2 ? atol(argv[2]) : 2000, caught = 0, batch = iter < 20 ? iter : 20, nb = batch ? iter / batch : 0;
	if (nb < 1)
		return 2;
	std::vector<double> t((size_t)nb);
	for (int i = 0; i < 20; i++)
		caught += catcher(depth);
	for (long b = 0; b < nb; b++) {
		double t0 = thread_ns();
		for (long i = 0; i < batch; i++)
			caught += catcher(depth);
		t[(size_t)b] = (thread_ns() - t0) / (double)batch;
	}
	std::sort(t.begin(), t.end());
	std::printf("%.1f\n", t[(size_t)nb / 10]);
	return caught == nb * batch + 20 ? 0 : 1;
}
