/* Context switches the log's descriptor uses cost (bench/fd_requests.sh):
 * T threads (argv[1], default 4) each make N calls (argv[2], default
 * 2,000,000) of a leaf, so that each thread maps slots and hands off
 * chunks; the process's voluntary and involuntary context switches
 * (RUSAGE_SELF: every thread's, the writer's included) are printed at
 * the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static long n_calls = 2000000;

__attribute__((noinline)) long leaf(long i)
{
	__asm__ volatile("");
	return i & 7;
}

static void *work(void *arg)
{
	long s = 0;
	for (long i = 0; i < n_calls; i++)
		s += leaf(i);
	*(long *)arg = s;
	return NULL;
}

int main(int argc, char **argv)
{
	int t = argc > 1 ? atoi(argv[1]) : 4;
	if (argc > 2)
		n_calls = atol(argv[2]);
	pthread_t th[64];
	long sums[64];
	if (t > 64)
		t = 64;
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, work, &sums[i]);
	long s = 0;
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		s += sums[i];
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("sum %ld nvcsw %ld nivcsw %ld\n", s, ru.ru_nvcsw, ru.ru_nivcsw);
	return 0;
}
