/* bench/ring_capture.py's program: a slow call among fast ones, then the
 * fast ones nonstop, on two threads.
 *   trigger_capture MS SECONDS
 * Both threads call leaf() in a loop (two events a call). Main, after
 * 0.2 s, calls slow(MS) once, then goes on for SECONDS. Each thread times
 * every block of 1024 calls with the counter, and prints its event rate
 * (calls x 2 / s) and its longest block, before the slow call and after
 * it: a stall the snapshot caused would show as a long block after it.
 * Main also prints the counter at slow's entry (raw), so the bench can
 * tell how far back the snapshot's window reaches before it. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static volatile int sink;
static volatile int stop;

__attribute__((noinline)) void leaf(void) { sink++; }

__attribute__((noinline)) void slow(int ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < ms * 1000000LL);
}

struct stats {
	uint64_t calls, longest; /* ticks */
};

__attribute__((xray_never_instrument)) static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Calls leaf until `until` (or stop): the calls made and the longest block
 * of 1024 calls in counter ticks. */
__attribute__((xray_never_instrument)) static struct stats spin(double until)
{
	struct stats s = {0, 0};
	while (!stop && now() < until) {
		uint64_t t0 = __rdtsc();
		for (int i = 0; i < 1024; i++)
			leaf();
		uint64_t d = __rdtsc() - t0;
		if (d > s.longest)
			s.longest = d;
		s.calls += 1024;
	}
	return s;
}

static double t_slow, t_end;
static struct stats other_before, other_after;

__attribute__((xray_never_instrument)) static void *other(void *arg)
{
	other_before = spin(t_slow);
	other_after = spin(t_end);
	return arg;
}

__attribute__((xray_never_instrument)) static void report(const char *who, struct stats s, double secs, double hz)
{
	printf("%s: %.1f M events/s, longest 1024 calls %.3f ms\n", who, (double)s.calls * 2 / secs / 1e6,
	       (double)s.longest / hz * 1e3);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
	int ms = argc > 1 ? atoi(argv[1]) : 20;
	double secs = argc > 2 ? atof(argv[2]) : 1;
	double t0 = now();
	uint64_t c0 = __rdtsc();
	t_slow = t0 + 0.2;
	t_end = t_slow + (double)ms / 1e3 + secs;
	pthread_t th;
	pthread_create(&th, NULL, other, NULL);
	struct stats before = spin(t_slow);
	uint64_t at = __rdtsc();
	slow(ms);
	double t1 = now();
	struct stats after = spin(t_end);
	pthread_join(th, NULL);
	double hz = (double)(__rdtsc() - c0) / (now() - t0);
	printf("slow entry counter %llu\n", (unsigned long long)at);
	report("main before", before, 0.2, hz);
	report("main after", after, t_end - t1, hz);
	report("other before", other_before, 0.2, hz);
	report("other after", other_after, t_end - t1, hz);
	return 0;
}
