/* record --ring: snapshots. A request (the ring signal, or a trigger in
 * the slow path) only bumps a counter and wakes the writer thread; the
 * writer copies the log as it stands into DIR/STEM.snap.<pid>.<n>EXT: the
 * header, the OBJECT and UNLOAD chunks, and every slot that holds a batch
 * (each thread's ring and live slot). A slot that its thread recycles
 * while it is being copied is left out (its serial or batch number changed
 * under the copy). The file is written under a temporary name and renamed,
 * so it is absent or complete; requests that arrive while one is written
 * are served by the next one. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

static uint32_t requested;      /* requests so far (any thread, any handler) */
static uint32_t request_reason; /* enum sf_snapshot_reason of the latest */
static uint32_t served;         /* writer thread: requests handled */
static uint32_t written;        /* writer thread: snapshots written, their numbers */
static uint32_t writing;        /* the writer thread is in sf_snapshot_service */
static struct sigaction prev;   /* the disposition the program had before ours */

static void on_ring_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	sf_snapshot_request(SF_SNAP_SIGNAL);
	errno = saved;
	/* A handler the program installed before the runtime still runs. */
	if (prev.sa_flags & SA_SIGINFO) {
		if (prev.sa_sigaction)
			prev.sa_sigaction(sig, si, uc);
	} else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
	}
}

void sf_snapshot_init(void)
{
	int sig = sf_config.ring_signal;
	if (sigaction(sig, NULL, &prev) < 0)
		return;
	/* An ignored signal stays ignored (an exec'd program would inherit
	 * SIG_DFL from a handler, not SIG_IGN). */
	if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN) {
		sf_rt_message("the ring signal is ignored by this process: no snapshots on it", "", NULL);
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_ring_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

void sf_snapshot_request(uint32_t reason)
{
	if (!sf_writer_active())
		return; /* a forked child has no writer thread (writer.c) */
	__atomic_store_n(&request_reason, reason, __ATOMIC_RELAXED);
	__atomic_add_fetch(&requested, 1, __ATOMIC_RELEASE);
	sf_writer_kick();
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The chunks of the log mapped at m (size bytes), as they stand, to fd. */
static int copy_chunks(int fd, const unsigned char *m, uint64_t size)
{
	static unsigned char slot[SF_SLOT_SIZE]; /* the writer thread's only */
	uint64_t off = SF_HEADER_SIZE;
	while (off + sizeof(struct sf_chunk) <= size) {
		const struct sf_chunk *c = (const struct sf_chunk *)(const void *)(m + off);
		uint32_t csize = __atomic_load_n(&c->size, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != SF_CHUNK_MAGIC || csize < sizeof(*c) ||
		    csize % 16 || off + csize > size || c->type < SF_CHUNK_OBJECT || c->type > SF_CHUNK_SLOT) {
			off += 16; /* padding before a slot, or a chunk still being written */
			continue;
		}
		if (c->type != SF_CHUNK_SLOT) {
			if (write_all(fd, c, csize) < 0)
				return -1;
		} else if (csize == SF_SLOT_SIZE) {
			uint64_t serial = __atomic_load_n(&c->thread_serial, __ATOMIC_ACQUIRE);
			uint32_t seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
			if (serial) {
				memcpy(slot, c, SF_SLOT_SIZE);
				if (__atomic_load_n(&c->thread_serial, __ATOMIC_ACQUIRE) == serial &&
				    __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) == seq && write_all(fd, slot, SF_SLOT_SIZE) < 0)
					return -1;
			}
		}
		off += csize;
	}
	return 0;
}

static void serve(uint32_t req);

static void write_snapshot(uint32_t reason)
{
	if (!sf_log_header())
		return; /* no event recorded yet: nothing to copy */
	/* A fresh calibration pair: a ring hands nothing off, so the header's
	 * last pair may be old, and the reader's fit of the snapshot would
	 * stretch a short span over the whole window (a 30 ms call read as 29). */
	sf_log_calibrate();
	uint64_t size = 0;
	void *m = sf_log_map_readonly(&size);
	if (!m)
		return;
	char path[4200], tmp[4300];
	uint32_t n = ++written;
	sf_log_snapshot_path(path, sizeof(path), n);
	size_t len = strlen(path);
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", 5);
	int fd = sf_fd_brief(open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
	if (fd < 0) {
		sf_rt_message("cannot write snapshot ", tmp, strerror(errno));
		munmap(m, size);
		return;
	}
	static struct sf_header copy; /* the writer thread's only */
	memcpy(&copy, m, sizeof(copy));
	copy.snapshot = n;
	copy.snapshot_reason = reason;
	static const char pad[SF_HEADER_SIZE - sizeof(struct sf_header)];
	int ok = write_all(fd, &copy, sizeof(copy)) == 0 && write_all(fd, pad, sizeof(pad)) == 0 &&
		 copy_chunks(fd, m, size) == 0;
	int err = errno;
	munmap(m, size);
	close(fd);
	if (!ok || rename(tmp, path) < 0) {
		sf_rt_message("cannot write snapshot ", path, strerror(ok ? errno : err));
		unlink(tmp);
	}
}

/* The writer thread, after each round: a snapshot if one was asked for. */
int sf_snapshot_pending(void)
{
	return __atomic_load_n(&writing, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&requested, __ATOMIC_ACQUIRE) != __atomic_load_n(&served, __ATOMIC_ACQUIRE);
}

void sf_snapshot_service(void)
{
	__atomic_store_n(&writing, 1, __ATOMIC_RELEASE);
	uint32_t req = __atomic_load_n(&requested, __ATOMIC_ACQUIRE);
	if (req != served)
		serve(req);
	__atomic_store_n(&writing, 0, __ATOMIC_RELEASE);
}

static void serve(uint32_t req)
{
	__atomic_store_n(&served, req, __ATOMIC_RELEASE);
	if (written >= sf_config.max_snapshots)
		return; /* --max-snapshots: later requests are ignored (silently: the program's stderr is its own) */
	write_snapshot(__atomic_load_n(&request_reason, __ATOMIC_RELAXED));
}
