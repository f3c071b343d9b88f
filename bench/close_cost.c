/* What the runtime's close() wrapper costs (src/runtime/fdguard.c).
 *
 *   bench/close_cost.sh            (builds it with XRay sleds, runs it
 *                                   untraced and under sftrace record)
 *
 * After one instrumented call (so the traced run has its log open), times
 * N calls, best of 7 rounds, ns per call:
 *   - close(L) of the log's descriptor (traced only; the number is found
 *     in /proc/self/fd by the log's path, argv[1]): the guarded path;
 *   - close(U) of a number that is not open (the EBADF system call);
 *   - dup(0) + close() of the new descriptor (an ordinary close, with the
 *     dup it needs);
 *   - dup(0) + the bare close system call (the same without the wrapper). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { N = 20000, ROUNDS = 7 };

__attribute__((noinline)) void touch(void)
{
	__asm__ volatile("");
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int find_fd(const char *path)
{
	DIR *d = opendir("/proc/self/fd");
	int found = -1;
	struct dirent *e;
	char link[4096];
	while (d && (e = readdir(d))) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(p, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			if (strcmp(link, path) == 0)
				found = atoi(e->d_name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

static double best(double (*f)(int), int arg)
{
	double b = 1e18;
	for (int r = 0; r < ROUNDS; r++) {
		double t = f(arg);
		if (t < b)
			b = t;
	}
	return b;
}

static double closes(int fd)
{
	double t0 = now_ns();
	for (int i = 0; i < N; i++)
		close(fd);
	return (now_ns() - t0) / N;
}

static double dup_close(int raw)
{
	double t0 = now_ns();
	for (int i = 0; i < N; i++) {
		int fd = dup(0);
		if (raw)
			syscall(SYS_close, fd); /* the wrapper's syscall() path: use the instruction below instead */
		else
			close(fd);
	}
	return (now_ns() - t0) / N;
}

static double dup_rawclose(int unused)
{
	(void)unused;
	double t0 = now_ns();
	for (int i = 0; i < N; i++) {
		long fd = dup(0), r;
#if defined(__x86_64__)
		__asm__ volatile("syscall" : "=a"(r) : "a"(SYS_close), "D"(fd) : "rcx", "r11", "memory");
#else
		r = syscall(SYS_close, fd);
#endif
		(void)r;
	}
	return (now_ns() - t0) / N;
}

int main(int argc, char **argv)
{
	touch();
	int log = argc > 1 ? find_fd(argv[1]) : -1;
	if (log >= 0)
		printf("close(log fd %d): %.0f ns\n", log, best(closes, log));
	printf("close(not open): %.0f ns\n", best(closes, 777));
	printf("dup+close: %.0f ns\n", best(dup_close, 0));
	printf("dup+raw close: %.0f ns\n", best(dup_rawclose, 0));
	return 0;
}
