/* What a clone(CLONE_FILES | SIGCHLD) child costs (bench/cfiles_child.sh):
 * N children (argv[1], default 200), one at a time, each calling work()
 * once and returning. Printed: the mean time from the parent's clone() to
 * the child's return from its first call (its creation, the runtime's
 * set-up of it and its log's creation: the first event), and from clone()
 * to the parent's waitpid() returning (the whole child), in microseconds,
 * and the children's CPU time and context switches each (RUSAGE_CHILDREN:
 * every thread's, a keeper's included), less at the mercy of the load. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) int work(int n)
{
	__asm__ volatile("");
	return n + 1;
}

static volatile uint64_t *first; /* shared with the children */

static int child(void *a)
{
	(void)a;
	int r = work(0);
	*first = now_ns();
	return r;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	static char stack[1 << 16];
	first = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (first == MAP_FAILED)
		return 1;
	uint64_t to_first = 0, whole = 0;
	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		pid_t p = clone(child, stack + sizeof stack, CLONE_FILES | SIGCHLD, NULL);
		if (p < 0)
			return 1;
		int st;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 1)
			return 2;
		whole += now_ns() - t0;
		to_first += *first - t0;
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	printf("children %d: clone to first event returned %.1f us, clone to reaped %.1f us; each: cpu %.1f us, "
	       "%.1f voluntary + %.1f involuntary switches\n",
	       n, (double)to_first / n / 1000, (double)whole / n / 1000, cpu / n, (double)ru.ru_nvcsw / n,
	       (double)ru.ru_nivcsw / n);
	return 0;
}
