/* What the runtime's descriptor check costs (logfile.c, log_fd): one fstat
 * before each chunk write, against the write it guards.
 *
 *   cc -O2 -o build/fd_check bench/fd_check.c
 *   build/fd_check [DIR]
 *
 * In a file under DIR (default /tmp), times N getppid calls (the cost of
 * any system call here), N fstat calls and N pwritev of
 * a 64 KiB chunk (a full slot's batch written raw, the largest chunk) and
 * of a 4 KiB one (a well-packed batch), each appended like the runtime
 * does, and prints ns per call, the minimum of 7 rounds (the machine is
 * noisy), and the check's share of each write. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { N = 2000, ROUNDS = 7 };

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double time_fstat(int fd)
{
	struct stat st;
	double t0 = now_ns();
	for (int i = 0; i < N; i++)
		if (fstat(fd, &st) < 0)
			exit(1);
	return (now_ns() - t0) / N;
}

static double time_getppid(void)
{
	double t0 = now_ns();
	for (int i = 0; i < N; i++)
		if (syscall(SYS_getppid) < 0)
			exit(1);
	return (now_ns() - t0) / N;
}

static double time_writes(int fd, size_t len)
{
	static char buf[65536];
	memset(buf, 0x5a, sizeof(buf));
	if (ftruncate(fd, 0) < 0)
		exit(1);
	struct iovec v = {buf, len};
	double t0 = now_ns();
	for (int i = 0; i < N; i++)
		if (pwritev(fd, &v, 1, (off_t)i * (off_t)len) != (ssize_t)len)
			exit(1);
	return (now_ns() - t0) / N;
}

int main(int argc, char **argv)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/fd_check.XXXXXX", argc > 1 ? argv[1] : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	unlink(path);
	double best_stat = 1e18, best_64k = 1e18, best_4k = 1e18, best_sys = 1e18;
	for (int r = 0; r < ROUNDS; r++) {
		double g = time_getppid();
		best_sys = g < best_sys ? g : best_sys;
		double s = time_fstat(fd), w64 = time_writes(fd, 65536), w4 = time_writes(fd, 4096);
		best_stat = s < best_stat ? s : best_stat;
		best_64k = w64 < best_64k ? w64 : best_64k;
		best_4k = w4 < best_4k ? w4 : best_4k;
	}
	printf("getppid            %8.0f ns  (any system call)\n", best_sys);
	printf("fstat              %8.0f ns\n", best_stat);
	printf("pwritev 64 KiB     %8.0f ns  (check: %.1f%%)\n", best_64k, 100 * best_stat / best_64k);
	printf("pwritev 4 KiB      %8.0f ns  (check: %.1f%%)\n", best_4k, 100 * best_stat / best_4k);
	printf("per event (8 KiB events per 64 KiB slot): %.3f ns\n", best_stat / 8184);
	close(fd);
	return 0;
}
