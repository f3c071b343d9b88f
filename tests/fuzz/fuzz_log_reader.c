/* libFuzzer harness over the log reader (src/lib/log_reader.c) and the frame
 * repair (src/lib/frames.c): whatever the bytes, lr_open either refuses the
 * file with a message or indexes it, and then every accessor, a full
 * iteration (all threads, then each thread alone) and a frame-repair pass
 * must stay in bounds. Built by tests/fuzz/run.sh; tests/fuzz/replay.c
 * drives the same function without libFuzzer for the regression test.
 *
 * lr_open takes a path, so the input goes into a memfd opened again
 * through /proc/self/fd (zero pages punched out as holes). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/sflog.h"
#include "lib/frames.h"
#include "lib/log_reader.h"

static volatile uint64_t sink;

static int put_file(const uint8_t *data, size_t size, char *path, size_t cap)
{
	static int fd = -1;
	if (fd < 0) {
		fd = memfd_create("sftrace-fuzz-log", MFD_CLOEXEC);
		if (fd < 0)
			return -1;
	}
	if (ftruncate(fd, 0) < 0)
		return -1;
	for (size_t done = 0; done < size;) {
		ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	/* All-zero pages become holes, as a failed write leaves them in a real
	 * log: the reader maps holes of a tmpfs file (a memfd is one) itself. */
	for (size_t off = 0; off + 4096 <= size; off += 4096) {
		size_t k = 0;
		while (k < 4096 && !data[off + k])
			k++;
		if (k == 4096)
			fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, 4096);
	}
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return 0;
}

static void touch_info(const struct lr_log *log)
{
	const struct lr_info *in = lr_info(log);
	for (int i = 0; i < in->argc; i++)
		sink += strlen(in->argv[i]);
	sink += lr_time_ns(log, 0) + lr_time_ns(log, UINT64_MAX) + lr_time_ns(log, in->start_tsc);
	for (size_t i = 0; i < lr_nobjects(log); i++) {
		const struct lr_object *o = lr_object_at(log, i);
		sink += strlen(o->path) + o->build_id[o->build_id_len ? o->build_id_len - 1 : 0];
		for (uint32_t k = 0; k < o->count; k++)
			sink += o->funcs[k];
		const struct lr_object *back;
		uint64_t vaddr;
		if (o->count && lr_func(log, o->first_id + o->count - 1, &back, &vaddr) == 0)
			sink += vaddr + back->index;
	}
	sink += (uint64_t)lr_func(log, 0, NULL, NULL) + (uint64_t)lr_func(log, UINT32_MAX, NULL, NULL);
	for (size_t i = 0; i < lr_nwarnings(log); i++)
		sink += strlen(lr_warning(log, i));
	struct lr_summary s;
	lr_summary(log, &s);
	sink += s.events + s.lost + s.warnings;
}

/* An ARGS event the iterator made itself: the <unrecorded> mark of an
 * event whose values fell out of a ring's window (lr_iter's win_args,
 * pre_args), which no count of the log's records includes. */
static int is_mark(const struct lr_iter *it, const struct lr_event *ev)
{
	return ev->kind == SF_EV_ARGS && (ev->args == it->win_args || ev->args == it->pre_args);
}

static void iterate(const struct lr_log *log)
{
	struct frames *f = fr_new(NULL, NULL);
	struct lr_iter it;
	struct lr_event ev;
	uint64_t n = 0;
	lr_iter_init(&it, log);
	while (lr_next(&it, &ev)) {
		sink += ev.time_ns + ev.size + ev.align + ev.ptr + ev.offset;
		sink += strlen(lr_kind_name(ev.kind));
		fr_feed(f, &ev);
		n += !is_mark(&it, &ev);
	}
	fr_finish(f);
	char buf[256];
	fr_format_repairs(fr_stats(f), buf, sizeof(buf));
	fr_free(f);

	/* Each thread alone must deliver exactly its count (plus, in a ring
	 * log, the entries placed before its window; the <unrecorded> marks
	 * of values that fell out of the window are the iterator's own, not
	 * counted), in total the same; and
	 * lr_open's counts, taken without decoding, must be decoding's. */
	uint64_t m = 0;
	for (size_t t = 0; t < lr_nthreads(log); t++) {
		const struct lr_thread *th = lr_thread_at(log, t);
		uint64_t k = 0, events, lost;
		lr_count_decoded(log, th, &events, &lost);
		if (events != th->events || lost != th->lost)
			__builtin_trap();
		lr_iter_init_thread(&it, log, th);
		while (lr_next(&it, &ev))
			k += !is_mark(&it, &ev);
		if (k != th->events + th->nbefore)
			__builtin_trap();
		m += k;
	}
	if (m != n)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[1024];
	if (put_file(data, size, path, sizeof(path)) < 0)
		return 0;
	struct lr_log *log = lr_open(path, err, sizeof(err));
	if (!log) {
		if (!err[0] || !memchr(err, 0, sizeof(err)))
			__builtin_trap(); /* a refusal always says why */
		return 0;
	}
	touch_info(log);
	iterate(log);
	lr_close(log);
	return 0;
}
