/* Encode throughput and size of the Parquet writer on a synthetic trace.
 *
 *   bench [ROWS [zstd|none|zstd:LEVEL [OUT.parquet [values]]]]
 *
 * Generates ROWS events (default 10M) like sftrace's events table, first
 * alone (to time the generator) then through the writer, and prints rows/s
 * of the writer alone and bytes per row. Rows go in whole with
 * pq_write_row_u64s (as sftrace does), or with "values" one value at a time.
 * With OUT (or "-" for none), the file is kept. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/parquet.h"
#include "synth.h"

struct sink {
	int fd;        /* -1: count only */
	size_t bytes;
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
	struct sink *s = ctx;
	s->bytes += len;
	return s->fd < 0 ? 0 : pq_fd_write(&s->fd, buf, len);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
	enum pq_codec codec = argc > 2 && strcmp(argv[2], "none") == 0 ? PQ_CODEC_NONE : PQ_CODEC_ZSTD;
	int level = argc > 2 && strncmp(argv[2], "zstd:", 5) == 0 ? atoi(argv[2] + 5) : 0;
	struct sink sk = { .fd = -1 };
	int per_value = argc > 4 && strcmp(argv[4], "values") == 0;
	if (argc > 3 && strcmp(argv[3], "-") != 0) {
		sk.fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (sk.fd < 0) {
			perror(argv[3]);
			return 1;
		}
	}
	static const struct pq_column cols[] = {
		{ "frame_id", PQ_UINT64 }, { "parent", PQ_UINT64 }, { "tid", PQ_UINT32 },
		{ "func_id", PQ_UINT64 },  { "time", PQ_DURATION_NS }, { "kind", PQ_UINT32 },
	};
	struct synth s;
	struct synth_row r;
	uint64_t sum = 0;

	double t0 = now();
	synth_init(&s, 3000, 1);
	for (size_t i = 0; i < rows; i++) {
		synth_next(&s, &r);
		sum += r.time ^ r.frame_id;
	}
	double gen = now() - t0;

	struct pq_options opt = { .codec = codec, .zstd_level = level };
	struct pq_writer *w = pq_open(cols, 6, &opt, sink_write, &sk);
	if (!w) {
		perror("pq_open");
		return 1;
	}
	t0 = now();
	synth_init(&s, 3000, 1);
	int rc = 0;
	for (size_t i = 0; i < rows && rc == 0; i++) {
		synth_next(&s, &r);
		if (!per_value) {
			uint64_t v[6] = { r.frame_id, r.parent, r.tid, r.func_id, r.time, r.kind };
			rc |= pq_write_row_u64s(w, v);
			continue;
		}
		rc |= pq_write_u64(w, 0, r.frame_id);
		rc |= pq_write_u64(w, 1, r.parent);
		rc |= pq_write_u32(w, 2, r.tid);
		rc |= pq_write_u64(w, 3, r.func_id);
		rc |= pq_write_u64(w, 4, r.time);
		rc |= pq_write_u32(w, 5, r.kind);
		rc |= pq_end_row(w);
	}
	if (rc == 0)
		rc = pq_finish(w);
	double total = now() - t0;
	if (rc < 0) {
		fprintf(stderr, "bench: %s\n", pq_strerror(w));
		return 1;
	}
	pq_free(w);
	if (sk.fd >= 0)
		close(sk.fd);

	double writer = total - gen;
	printf("rows %zu codec %s level %d, %s: %zu bytes, %.3f bytes/row\n", rows,
	       codec == PQ_CODEC_NONE ? "none" : "zstd", level,
	       per_value ? "one value at a time" : "whole rows", sk.bytes, (double)sk.bytes / rows);
	printf("time %.3f s (generator %.3f s), writer %.2f M rows/s (%.1f ns/row)\n", total, gen,
	       rows / writer / 1e6, writer / rows * 1e9);
	return sum == 42 ? 2 : 0; /* keep the generator loop alive */
}
