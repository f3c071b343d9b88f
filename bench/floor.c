/* The floor of recording one event on this machine: read the TSC and store
 * 16 bytes (time, function id, kind) into a small thread-local buffer that is
 * reused, the way the runtime's fast path does, with nothing else around it
 * (no call into a trampoline, no register saves).
 *
 * Usage: floor [EVENTS] [REPEATS]. Prints one line per repeat:
 *   floor <events> <ns total> <ns/event>
 * The driver takes the median (and min) of the repeats.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

struct event {
	uint64_t time;
	uint32_t func_id;
	uint32_t kind;
};

/* 64 KiB like the runtime's slot: stays in L2, pages stay resident. */
#define BUF_EVENTS 4096u

static __thread struct event buf[BUF_EVENTS] __attribute__((tls_model("initial-exec")));
static __thread uint64_t cursor __attribute__((tls_model("initial-exec")));

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* noinline so the loop is what we measure, not something folded into main. */
__attribute__((noinline)) static void record_many(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t = __rdtsc();
		struct event *e = &buf[cursor++ & (BUF_EVENTS - 1)];
		e->time = t;
		e->func_id = (uint32_t)i;
		e->kind = 1 + (uint32_t)(i & 1);
	}
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 50000000u;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	record_many(n / 10); /* warm the buffer and the frequency governor */
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_ns();
		record_many(n);
		uint64_t dt = now_ns() - t0;
		printf("floor %llu %llu %.3f\n", (unsigned long long)n, (unsigned long long)dt, (double)dt / (double)n);
	}
	/* Keep the stores observable. */
	return buf[cursor & (BUF_EVENTS - 1)].kind == 7;
}
