/* What opening a log costs: lr_open + lr_summary (what every command and
 * record's summary pay before reading any event), per event.
 *
 *   cc -O2 -D_GNU_SOURCE -Isrc -o build/open_cost bench/open_cost.c build/libsfcore.a -lm
 *   build/open_cost [-n RUNS] LOG...
 *
 * Prints, per log, its events and lost records and the minimum and median
 * time of RUNS opens (default 7): the machine is noisy, the minimum is the
 * figure to compare. The file is read once first, so every run reads it
 * from the page cache. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log_reader.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One open: its time, and the summary into *s. -1 if the log is refused. */
static double open_once(const char *path, struct lr_summary *s)
{
	char err[512];
	double t0 = now_s();
	struct lr_log *log = lr_open(path, err, sizeof(err));
	if (!log) {
		fprintf(stderr, "open_cost: %s\n", err);
		return -1;
	}
	lr_summary(log, s);
	double t = now_s() - t0;
	lr_close(log);
	return t;
}

int main(int argc, char **argv)
{
	int runs = 7, i = 1;
	if (argc > 2 && !strcmp(argv[1], "-n")) {
		runs = atoi(argv[2]);
		i = 3;
	}
	if (i >= argc || runs < 1 || runs > 1000) {
		fprintf(stderr, "usage: open_cost [-n RUNS (1-1000)] LOG...\n");
		return 2;
	}
	printf("%-32s %12s %8s %10s %10s %9s\n", "log", "events", "lost", "min s", "median s", "ns/event");
	for (; i < argc; i++) {
		struct lr_summary s;
		double t[1000];
		if (open_once(argv[i], &s) < 0) /* warm the page cache */
			return 1;
		for (int r = 0; r < runs; r++)
			if ((t[r] = open_once(argv[i], &s)) < 0)
				return 1;
		qsort(t, (size_t)runs, sizeof(t[0]), cmp_double);
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		printf("%-32s %12llu %8llu %10.4f %10.4f %9.2f\n", name, (unsigned long long)s.events,
		       (unsigned long long)s.lost, t[0], t[runs / 2], s.events ? t[0] * 1e9 / (double)s.events : 0.0);
	}
	return 0;
}
