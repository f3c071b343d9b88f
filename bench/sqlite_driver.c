/* A real C workload for the recording benchmarks: SQLite (the amalgamation,
 * built with XRay sleds) inserts ROWS rows into an in-memory database in one
 * transaction, then builds two indexes. In memory so that disk I/O of the
 * database does not blur the tracer's cost.
 *
 * Usage: sqlite_driver [ROWS]   (default 100000)
 * Prints "sqlite rows R check C work_ns T": C is a checksum of a query
 * over the result, T the time spent in SQLite; and on stderr "loop thread
 * cpu ns N", the CPU time of this thread over the same span (as
 * bench/args_cost.c: bench/args_cost.sh's thread column; T - N is time
 * the thread did not run: waits for the tracer's writer thread, the
 * machine's other load).
 *
 * With BENCH_XRAY_FDR it drives LLVM XRay FDR mode itself (see xray_fdr.cc).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sqlite3.h"

#include "bench_hooks.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(sqlite3 *db, const char *what)
{
	fprintf(stderr, "sqlite_driver: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
	exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "sqlite_driver: %s: %s\n", sql, err ? err : "?");
		exit(1);
	}
}

/* Deterministic pseudo-random values, so every run does the same work. */
static uint32_t next_rand(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s;
}

static void insert_rows(sqlite3 *db, int rows)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "INSERT INTO t(a, b, c) VALUES (?1, ?2, ?3)", -1, &st, NULL) != SQLITE_OK)
		die(db, "prepare insert");
	uint32_t seed = 12345;
	char text[32];
	exec(db, "BEGIN");
	for (int i = 0; i < rows; i++) {
		uint32_t r = next_rand(&seed);
		snprintf(text, sizeof(text), "name-%08x", (unsigned)next_rand(&seed));
		sqlite3_bind_int64(st, 1, (sqlite3_int64)(r % 100000u));
		sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
		sqlite3_bind_double(st, 3, (double)(r & 0xffff) / 7.0);
		if (sqlite3_step(st) != SQLITE_DONE)
			die(db, "insert");
		sqlite3_reset(st);
	}
	exec(db, "COMMIT");
	sqlite3_finalize(st);
}

static long long checksum(sqlite3 *db)
{
	sqlite3_stmt *st;
	long long v = -1;
	if (sqlite3_prepare_v2(db, "SELECT count(*) + sum(a) FROM t WHERE b > 'name-8'", -1, &st, NULL) != SQLITE_OK)
		die(db, "prepare check");
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int main(int argc, char **argv)
{
	int rows = argc > 1 ? atoi(argv[1]) : 100000;
	sqlite3 *db;
	bench_trace_start();
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	uint64_t t0 = now_ns();
	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		die(NULL, "open");
	exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL)");
	insert_rows(db, rows);
	exec(db, "CREATE INDEX t_a ON t(a)");
	exec(db, "CREATE INDEX t_b ON t(b)");
	long long check = checksum(db);
	sqlite3_close(db);
	uint64_t dt = now_ns() - t0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	bench_trace_stop();
	fprintf(stderr, "loop thread cpu ns %lld\n",
		(long long)(c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec));
	printf("sqlite rows %d check %lld work_ns %llu\n", rows, check, (unsigned long long)dt);
	return 0;
}
