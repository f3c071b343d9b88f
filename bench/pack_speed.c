/* What a hand-off costs per event, raw against packed, on the batches of a
 * real log: the coder alone (sf_pack_batch into a buffer), and each hand-off
 * as the runtime does it (pwrite of the raw records, or coding then pwrite
 * of the packed bytes) into a fresh file in DIR. Best of REPS passes over
 * every full batch of LOG, which must hold raw DATA chunks
 * (SFTRACE_ENCODING=raw):
 *
 *   make && cc -O2 -D_GNU_SOURCE -Isrc -o bench/build/pack_speed \
 *       bench/pack_speed.c src/format/packed.c
 *   SFTRACE_ENCODING=raw build/sftrace record -q -o /tmp/raw.log -- bench/build/fib 32
 *   bench/build/pack_speed /tmp/raw.log [REPS] [DIR]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format/packed.h"
#include "format/sflog.h"

/* A full batch: a slot of SF_SLOT_SIZE bytes less its chunk header (as src/runtime/runtime.h). */
#define SLOT_EVENTS ((SF_SLOT_SIZE - sizeof(struct sf_chunk)) / sizeof(struct sf_event))

struct batch {
	const struct sf_event *ev;
	uint32_t n;
	uint64_t base;
};

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The full raw DATA batches of the log, in file order. */
static size_t find_batches(const uint8_t *m, size_t size, struct batch *b, size_t cap, size_t *events)
{
	const struct sf_header *h = (const void *)m;
	size_t nb = 0, off = h->header_size;
	*events = 0;
	while (off + sizeof(struct sf_chunk) <= size && nb < cap) {
		const struct sf_chunk *c = (const void *)(m + off);
		if (c->magic != SF_CHUNK_MAGIC || c->size < sizeof(*c) || off + c->size > size) {
			off += 16; /* zero padding between chunks */
			continue;
		}
		if (c->type == SF_CHUNK_DATA && c->count == SLOT_EVENTS) {
			b[nb++] = (struct batch){(const struct sf_event *)(c + 1), c->count, c->base};
			*events += c->count;
		}
		off += c->size;
	}
	return nb;
}

static uint8_t out[SLOT_EVENTS * SF_PK_MAX_RECORD + SF_PK_MAX_GROUP];

/* mode 0: code only; 1: pwrite raw; 2: code + pwrite. Seconds, and bytes. */
static double pass(const struct batch *b, size_t nb, int mode, const char *file, size_t *bytes)
{
	int fd = -1;
	if (mode) {
		fd = open(file, O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0) {
			perror(file);
			exit(1);
		}
	}
	struct sf_pack_state st;
	off_t at = 0;
	*bytes = 0;
	double t0 = now();
	for (size_t i = 0; i < nb; i++) {
		const void *p = b[i].ev;
		size_t len = b[i].n * sizeof(struct sf_event);
		if (mode != 1) {
			sf_pack_reset(&st, b[i].base);
			len = sf_pack_batch(&st, b[i].ev, b[i].n, out, sizeof(out));
			p = out;
		}
		if (mode && pwrite(fd, p, len, at) != (ssize_t)len) {
			perror(file);
			exit(1);
		}
		at += (off_t)len;
		*bytes += len;
	}
	double t = now() - t0;
	if (fd >= 0) {
		close(fd);
		unlink(file);
	}
	return t;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: pack_speed RAW_LOG [REPS] [DIR]\n");
		return 2;
	}
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	char file[4096];
	snprintf(file, sizeof(file), "%s/pack_speed.%d.out", argc > 3 ? argv[3] : "/tmp", (int)getpid());
	int fd = open(argv[1], O_RDONLY);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		perror(argv[1]);
		return 1;
	}
	const uint8_t *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED || ((const struct sf_header *)m)->magic != SF_MAGIC) {
		fprintf(stderr, "%s: not an sftrace log\n", argv[1]);
		return 1;
	}
	size_t cap = (size_t)sb.st_size / (SLOT_EVENTS * sizeof(struct sf_event)) + 1, events;
	struct batch *b = malloc(cap * sizeof(*b));
	size_t nb = find_batches(m, (size_t)sb.st_size, b, cap, &events);
	if (!nb) {
		fprintf(stderr, "%s: no full raw DATA batch (record with SFTRACE_ENCODING=raw)\n", argv[1]);
		return 1;
	}
	static const char *names[] = {"code only", "pwrite raw", "code + pwrite packed"};
	printf("%s: %zu full batches, %zu events, best of %d\n", argv[1], nb, events, reps);
	for (int mode = 0; mode < 3; mode++) {
		double best = 1e30;
		size_t bytes = 0;
		for (int r = 0; r < reps; r++) {
			double t = pass(b, nb, mode, file, &bytes);
			best = t < best ? t : best;
		}
		printf("  %-22s %6.2f ns/event  %5.2f bytes/event\n", names[mode], best * 1e9 / (double)events,
		       (double)bytes / (double)events);
	}
	return 0;
}
