/* record --ring: snapshots, each frozen at the moment it was asked for.
 *
 * A request (a trigger in the slow path, or the ring signal) opens a
 * freeze: it stamps the time T, the thread and the trigger, and publishes
 * an epoch number (sf_freeze_open). The trigger's own thread then freezes
 * its ring at once: its slots, the trigger's event last, become the
 * ring's frozen set, which nothing writes to any more, and the thread
 * goes on in a second set of slots (buffer.c, ring_freeze). Every other
 * thread freezes its ring the same way at its next slot hand-off, before
 * it could reuse a slot that holds part of the window; the writer thread
 * copies the rings of threads that have not handed off meanwhile (idle
 * ones) between two equal readings of their generation word. Either way a
 * thread's window is a contiguous run of its batches, and the snapshot
 * cuts each one at T: what the program recorded later is not in it,
 * however much that is.
 *
 * The writer writes DIR/STEM.snap.<pid>.<n>EXT (the header with the
 * freeze's words, the OBJECT and UNLOAD chunks, every thread's window)
 * into a file without a name (O_TMPFILE; where there is none, a temporary
 * name), closes the freeze, then links it in: it is absent or complete,
 * and a process that ends while it is written leaves nothing behind. An
 * exec, _exit or abort waits for it first (sf_snapshot_settle), as exit
 * does; the process's log counts the requests taken and the snapshots
 * written, so record reports one that a crash or a kill lost. The program never waits for it: a request that
 * comes while a freeze is open is counted (SF_HDR_SNAP_MISSED, in the
 * process's log and each later snapshot), not merged into it; one ring
 * signal that comes then is served right after, frozen at that moment
 * (more are counted). Requests after --max-snapshots are counted too
 * (snap_over_max). A ring signal sent while another is still pending is
 * merged by the kernel and never reaches the handler: `sftrace snapshot`
 * counts what it sends in the log (snap_sent) and the handler what
 * arrives (snap_arrived), so record reports the difference. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format/keeper_files.h"
#include "runtime/runtime.h"

uint32_t sf_freeze_open SF_HIDDEN; /* the epoch of the freeze open now, 0: none */
uint32_t sf_freeze_last SF_HIDDEN; /* the last epoch opened */

static uint32_t busy;           /* a freeze is open or being closed: requests are missed */
static uint32_t opened;         /* freezes opened so far (--max-snapshots) */
static uint32_t signal_waiting; /* a ring signal came while busy (the tid that took it): served next;
				 * one more while it waits is counted missed, never merged */
static uint32_t missed;         /* requests not taken because a freeze was open */
static uint32_t written;        /* writer thread: snapshots written, their numbers */
static uint32_t writing;        /* the writer thread is in sf_snapshot_service */
static struct sigaction prev;   /* the disposition the program had before ours */

/* The open freeze, written before its epoch is published. */
static struct {
	uint64_t time, slow_ns;
	uint32_t reason, tid, func_id;
} freeze;

/* One more in the process's log header at byte offset off (an atomic
 * counter): record reports what was not taken. Async-signal-safe. */
static void count_at(size_t off)
{
	struct sf_header *h = sf_log_header();
	if (h)
		__atomic_add_fetch((uint64_t *)(void *)((char *)h + off), 1, __ATOMIC_RELAXED);
}

/* The same for the header word w (SF_HDR_SNAP_*). */
static void count_in_log(unsigned w)
{
	count_at(offsetof(struct sf_header, reserved) + 8 * (size_t)w);
}

static void on_ring_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	sf_snapshot_request(SF_SNAP_SIGNAL); /* kill -USR2 (sftrace snapshot sends no signal) */
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


/* Opens a freeze at `time`; 0 if one is open already (the request is
 * counted), or --max-snapshots were taken. Async-signal-safe. */
static int freeze_open(uint32_t reason, uint32_t func_id, uint64_t time, uint64_t slow_ns, uint32_t tid)
{
	if (!sf_writer_active() && !sf_writer_left())
		return 0; /* a forked child has no writer thread (writer.c) */
	if (__atomic_load_n(&opened, __ATOMIC_RELAXED) >= sf_config.max_snapshots) {
		/* --max-snapshots: later requests are not taken, and counted
		 * (record says so; the program's stderr is its own) */
		count_at(offsetof(struct sf_header, snap_over_max));
		return 0;
	}
	uint32_t idle = 0;
	if (!__atomic_compare_exchange_n(&busy, &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		/* A ring signal is served right after, unless one waits already:
		 * then it is counted, as a trigger is. */
		uint32_t none = 0;
		if (reason == SF_SNAP_SIGNAL && __atomic_compare_exchange_n(&signal_waiting, &none, tid, 0,
									     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return 0;
		__atomic_add_fetch(&missed, 1, __ATOMIC_RELAXED);
		count_in_log(SF_HDR_SNAP_MISSED);
		return 0;
	}
	__atomic_add_fetch(&opened, 1, __ATOMIC_RELAXED);
	count_in_log(SF_HDR_SNAP_TAKEN);
	freeze.time = time;
	freeze.slow_ns = slow_ns;
	freeze.reason = reason;
	freeze.func_id = func_id;
	freeze.tid = tid;
	uint32_t e = __atomic_add_fetch(&sf_freeze_last, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sf_freeze_open, e, __ATOMIC_RELEASE);
	return 1;
}

/* The calling thread's tid (async-signal-safe). */
static uint32_t self_tid(void)
{
	return sf_self.tid ? sf_self.tid : sf_gettid();
}

void sf_snapshot_request(uint32_t reason)
{
	if (freeze_open(reason, 0, sf_now_raw(), 0, self_tid()))
		sf_writer_kick();
}

/* The writer is woken once this thread's ring is frozen: it copies the
 * frozen set rather than race the thread for the live one. */
void sf_snapshot_trigger(uint32_t reason, uint32_t func_id, uint64_t time, uint64_t slow_ns)
{
	if (freeze_open(reason, func_id, time, slow_ns, self_tid())) {
		sf_buffer_freeze_self();
		sf_writer_kick();
		sf_snapshot_serve_left();
	}
}

/* `sftrace snapshot` sends no signal (one sent to the process would land
 * on a thread of the program's, cut its sleep or poll short, or be taken
 * by its sigtimedwait): it counts its request in the process's log
 * (snap_sent, an atomic counter in the header it maps) and wakes that
 * word, a shared futex the writer thread waits on (writer.c, idle_wait).
 * The writer takes the requests one at a time, each when no freeze is
 * open, and counts each taken in snap_arrived; after the writer has left
 * with the leader, a program thread takes them at its next slot hand-off
 * or as the process ends (sf_snapshot_settle). The freeze's time is the
 * moment it was taken. */
static int asked(const struct sf_header *h)
{
	return h && __atomic_load_n(&h->snap_sent, __ATOMIC_ACQUIRE) > __atomic_load_n(&h->snap_arrived, __ATOMIC_ACQUIRE);
}

/* One request of sftrace snapshot's taken, on thread tid: a freeze opened
 * for it (1), or it was counted as not taken (--max-snapshots). 0 when
 * there is none, or a freeze is open (it waits for the next round). */
static int take_asked(uint32_t tid)
{
	struct sf_header *h = sf_config.ring_slots ? sf_log_header() : NULL;
	if (!asked(h) || __atomic_load_n(&busy, __ATOMIC_ACQUIRE))
		return 0;
	uint64_t got = __atomic_load_n(&h->snap_arrived, __ATOMIC_ACQUIRE);
	if (got >= __atomic_load_n(&h->snap_sent, __ATOMIC_ACQUIRE) ||
	    !__atomic_compare_exchange_n(&h->snap_arrived, &got, got + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return 0; /* another thread took it (the writer has left: any may) */
	/* the request's number goes in the snapshot (SF_HDR_SNAP_REQUEST, the
	 * slot reason 3 keeps its duration in): each command that asked at
	 * once finds its own snapshot */
	return freeze_open(SF_SNAP_COMMAND, 0, sf_now_raw(), got + 1, tid);
}

int sf_snapshot_take_asked(void)
{
	return sf_writer_left() && take_asked(self_tid());
}

uint32_t *sf_snapshot_wait_word(uint32_t *val)
{
	struct sf_header *h = sf_config.ring_slots ? sf_log_header() : NULL;
	if (!h)
		return NULL;
	/* The counter's low half (both targets are little-endian). */
	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the futex word is snap_sent's low half");
	uint32_t *w = (uint32_t *)(void *)&h->snap_sent;
	*val = __atomic_load_n(w, __ATOMIC_ACQUIRE);
	return w;
}

/* The writer has left after the leader (writer.c, hand_over): the open
 * freeze is written by a program thread, at a point where it may take
 * locks and make system calls: the trigger's own slow path, the next ring
 * advance of any thread (buffer.c), or the process's end (settle). Never
 * in the ring signal's handler: it may have interrupted its thread in the
 * middle of its ring's change or holding the ring lock. One thread at a
 * time (the static buffers of write_snapshot are one writer's). */
void sf_snapshot_serve_left(void)
{
	static uint32_t serving_left;
	if (!sf_writer_left())
		return;
	if (!__atomic_load_n(&sf_freeze_open, __ATOMIC_ACQUIRE) && !take_asked(self_tid()))
		return;
	if (__atomic_exchange_n(&serving_left, 1, __ATOMIC_ACQUIRE))
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = errno;
	sf_snapshot_service();
	errno = err;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	__atomic_store_n(&serving_left, 0, __ATOMIC_RELEASE);
}

/* The snapshot file being written, guarded like the log's descriptor
 * (fdguard.c): a program's close loop or dup2 in another thread leaves it
 * alone, and each write checks it still is the file opened (for a system
 * call the wrappers cannot see). The writer thread blocks every signal, as
 * a holder of a guarded number must. */
static struct sf_fd_guard snap = {.fd = -1};
static uint64_t snap_dev, snap_ino;

static int write_all(const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		uint32_t t;
		int fd = sf_fd_use(&snap, &t);
		struct stat st;
		ssize_t w = -1;
		errno = EBADF;
		if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == snap_dev && (uint64_t)st.st_ino == snap_ino)
			w = write(fd, c, n);
		sf_fd_unuse(&snap, t);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A thread's slot image ends at T: records after it (or after a hole)
 * are cleared. Returns the events kept. */
static size_t cut_at(struct sf_chunk *c, uint64_t t)
{
	struct sf_event *ev = (struct sf_event *)(c + 1);
	size_t i = 0;
	while (i < SF_SLOT_EVENTS) {
		uint32_t w = ev[i].word;
		if (!w || (int64_t)(sf_event_time(c->base, ev[i].time_lo) - t) > 0)
			break;
		i += 1 + sf_event_payload_count(w);
	}
	if (i > SF_SLOT_EVENTS)
		i = SF_SLOT_EVENTS;
	memset(ev + i, 0, (SF_SLOT_EVENTS - i) * sizeof(*ev));
	return i;
}

/* The OBJECT, UNLOAD, ARGSPEC and SWITCH chunks of the log mapped at m (size bytes), as they
 * stand, to fd. (A ring writes no DATA chunk; its batches are in slots,
 * which come from the rings.) */
static int copy_objects(const unsigned char *m, uint64_t size)
{
	uint64_t off = SF_HEADER_SIZE;
	while (off + sizeof(struct sf_chunk) <= size) {
		const struct sf_chunk *c = (const struct sf_chunk *)(const void *)(m + off);
		uint32_t csize = __atomic_load_n(&c->size, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != SF_CHUNK_MAGIC || csize < sizeof(*c) ||
		    csize % 16 || off + csize > size ||
		    ((c->type < SF_CHUNK_OBJECT || c->type > SF_CHUNK_ARGSPEC) && c->type != SF_CHUNK_SWITCH)) {
			off += 16; /* padding before a slot, or a chunk still being written */
			continue;
		}
		if (c->type != SF_CHUNK_SLOT && write_all(c, csize) < 0)
			return -1;
		off += csize;
	}
	return 0;
}

/* Every thread's window, cut at T, to fd. scratch: one ring's slots. */
static int copy_rings(uint32_t e, uint64_t t)
{
	static unsigned char *scratch; /* the writer thread's only */
	size_t len = (size_t)sf_config.ring_slots * SF_SLOT_SIZE;
	if (!scratch)
		scratch = sf_map_anon(len);
	if (!scratch) {
		errno = ENOMEM;
		return -1;
	}
	for (struct sf_ring *r = sf_rings(); r; r = r->next_all) {
		uint32_t n = sf_ring_capture(r, e, scratch);
		for (uint32_t i = 0; i < n; i++) {
			struct sf_chunk *c = (struct sf_chunk *)(void *)(scratch + (size_t)i * SF_SLOT_SIZE);
			if (c->thread_serial && cut_at(c, t) && write_all(c, SF_SLOT_SIZE) < 0)
				return -1;
		}
	}
	return 0;
}

/* --ring after the writer has left (sf_snapshot_serve_left): the log's
 * directory, an O_PATH descriptor the leaving writer opened in its table
 * and a program thread copied out with the log's (writer.c, the offer),
 * guarded like the snapshot's. A thread chrooted where that directory is
 * not, or in a mount namespace of its own, still creates the snapshot in
 * it: an unnamed file made through it (openat O_TMPFILE), linked in by
 * name relative to it. left_dir: its number while a snapshot is written
 * with it, else -1. */
static struct sf_fd_guard snapdir = {.fd = -1};
static int left_dir = -1;
static uint32_t left_ticket;

/* Under the gate (logfile.c, log_reopen): fd, just copied into the
 * program's table, becomes the runtime's (moved high, guarded). */
void sf_snapshot_adopt_dir(int fd)
{
	struct stat st;
	if (sf_syscall3(SYS_fstat, fd, (long)&st, 0) < 0 || !S_ISDIR(st.st_mode)) {
		sf_syscall3(SYS_close, fd, 0, 0);
		return;
	}
	sf_fd_guard_add(&snapdir);
	sf_fd_adopt(&snapdir, fd, (uint64_t)st.st_dev, (uint64_t)st.st_ino, NULL);
}

/* The file's name in its directory. */
static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* A file with no name yet in path's directory (O_TMPFILE): if the
 * process ends while it is written (an exec, _exit, a crash on another
 * thread), nothing is left behind. -1 where the file system has none. */
static int open_unnamed(const char *path, int again)
{
	static char dir[4200]; /* the writer thread's only */
	size_t n = strlen(path);
	while (n && path[n - 1] != '/')
		n--;
	if (again)
		return -1; /* taken by the program: the named route instead */
	if (left_dir >= 0) {
		struct stat ds, fs;
		if (sf_syscall3(SYS_fstat, left_dir, (long)&ds, 0) < 0)
			return -1;
		int fd = openat(left_dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		if (fd >= 0 && (fstat(fd, &fs) < 0 || fs.st_dev != ds.st_dev)) {
			errno = ESTALE;
			return -1;
		}
		return fd;
	}
	if (!n || n >= sizeof(dir))
		return -1;
	memcpy(dir, path, n);
	dir[n] = 0;
	/* The directory's file system is the reference the number is checked
	 * against (sf_fd_open_adopt checks the rest): a program's own file
	 * put at the number meanwhile, elsewhere, is left alone. */
	struct stat ds, fs;
	if (stat(dir, &ds) < 0)
		return -1;
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0 && (fstat(fd, &fs) < 0 || fs.st_dev != ds.st_dev)) {
		errno = ESTALE;
		return -1;
	}
	return fd;
}

/* The temporary name: made the first time, opened again after that (left
 * behind if the process dies). */
static int open_named(const char *tmp, int again)
{
	if (again)
		return open(tmp, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	sf_own_mode(fd); /* the program's umask is not the snapshot's */
	return fd;
}

/* A process that may not create files in the log's directory (a thread
 * that dropped to nobody, the only one left once the leader and the
 * writer have gone): record's keeper makes the unnamed file (notes.c,
 * sf_recfile: O_TMPFILE there, record's user, 0600) and links it in by
 * name when it is complete (snapshot_publish). */
static int snap_by_keeper;

static int open_by_keeper(const char *path, int again)
{
	(void)path;
	int fd = again ? -EAGAIN : sf_recfile(SF_KF_SNAP, 0, NULL, -1, NULL, 0, NULL);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

/* The snapshot's descriptor closed (if it still is the file opened). */
static void snapshot_close(void)
{
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	sf_fd_release(&snap, snap_dev, snap_ino); /* moved, perhaps, by a program's dup2 */
	sf_fd_gate_unlock(&gold);
}

/* The unnamed file fd linked into left_dir as name: through
 * /proc/thread-self/fd (no capability needed), or, where there is no
 * /proc (a chroot), by the descriptor itself (AT_EMPTY_PATH: root's
 * CAP_DAC_READ_SEARCH). */
static int link_in(int fd, const char *proc, const char *name)
{
	int r = linkat(AT_FDCWD, proc, left_dir, name, AT_SYMLINK_FOLLOW);
	if (r < 0 && errno == ENOENT)
		r = linkat(fd, "", left_dir, name, AT_EMPTY_PATH);
	return r;
}

/* The complete snapshot gets its name: an unnamed file is linked in
 * (through /proc/self/fd, which needs no capability; a name already there
 * is replaced, as rename would), a temporary one renamed. 0 when done. */
static int snapshot_publish(const char *path, char *tmp)
{
	int r = 0;
	if (snap_by_keeper) {
		uint32_t t;
		int fd = sf_fd_use(&snap, &t);
		r = sf_recfile(SF_KF_LINK, 0, base_name(path), fd, NULL, 0, NULL);
		sf_fd_unuse(&snap, t);
		if (r < 0) {
			errno = -r;
			r = -1;
		}
		snap_by_keeper = 0;
	} else if (tmp[0]) {
		r = rename(tmp, path);
	} else {
		char proc[64];
		uint32_t t;
		int fd = sf_fd_use(&snap, &t);
		/* thread-self: the writer's table may be its own (logfile.c),
		 * and a program thread writing it after the leader has ended
		 * (sf_snapshot_serve_left) finds /proc/self's table gone with it */
		snprintf(proc, sizeof(proc), "/proc/thread-self/fd/%d", fd);
		if (left_dir >= 0) {
			r = link_in(fd, proc, base_name(path));
			if (r < 0 && errno == EEXIST) {
				size_t len = strlen(path);
				memcpy(tmp, path, len);
				memcpy(tmp + len, ".tmp", 5);
				r = link_in(fd, proc, base_name(tmp));
				if (r == 0 && (r = renameat(left_dir, base_name(tmp), left_dir, base_name(path))) < 0)
					unlinkat(left_dir, base_name(tmp), 0);
				tmp[0] = 0;
			}
		} else {
			r = linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
		}
		if (r < 0 && errno == EEXIST && left_dir < 0) {
			size_t len = strlen(path);
			memcpy(tmp, path, len);
			memcpy(tmp + len, ".tmp", 5);
			r = linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW);
			if (r == 0 && (r = rename(tmp, path)) < 0)
				unlink(tmp);
		}
		sf_fd_unuse(&snap, t);
	}
	int err = errno;
	snapshot_close();
	if (r < 0) {
		sf_rt_message("cannot write snapshot ", path, strerror(err));
		if (tmp[0])
			unlink(tmp);
		return -1;
	}
	count_in_log(SF_HDR_SNAP_WRITTEN);
	return 0;
}

/* Writes the snapshot of freeze e to a file without a name (or, where
 * there are none, under path's temporary name tmp; else tmp is ""); 0
 * when it is complete, its descriptor still open (snapshot_publish names
 * it after the freeze closes). */
static int write_snapshot(uint32_t e, char *path, size_t cap, char *tmp)
{
	if (!sf_log_header())
		return -1; /* no event recorded yet: nothing to copy */
	/* A fresh calibration pair: a ring hands nothing off, so the header's
	 * last pair may be old, and the reader's fit of the snapshot would
	 * stretch a short span over the whole window (a 30 ms call read as 29). */
	sf_log_calibrate();
	uint64_t size = 0;
	void *m = sf_log_map_readonly(&size);
	if (!m)
		return -1;
	uint32_t n = ++written;
	sf_log_snapshot_path(path, cap, n);
	size_t len = strlen(path);
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", 5);
	/* The number is the runtime's once sf_fd_adopt has checked it (a
	 * program close may reach it first: the file, created here, is then
	 * opened again by path). No program call waits for this. */
	sigset_t gold;
	sf_fd_gate_lock(&gold);
	/* In the writer's own table (logfile.c) the program's calls never
	 * reach it: not guarded, or their checks of the number in their own
	 * table would take it for lost. */
	if (!sf_writer_private())
		sf_fd_guard_add(&snap);
	struct stat st;
	int err = 0;
	/* An unnamed file in the snapshot's directory; where there is none
	 * (no O_TMPFILE), a named temporary. */
	int fd = sf_fd_open_adopt(&snap, open_unnamed, path, 0, &st, &err);
	snap_by_keeper = 0;
	if (fd >= 0)
		tmp[0] = 0;
	else
		fd = sf_fd_open_adopt(&snap, open_named, tmp, 1, &st, &err);
	if (fd < 0 && (err == EACCES || err == EPERM || err == ENOENT || err == EROFS)) {
		int kerr;
		int kfd = sf_fd_open_adopt(&snap, open_by_keeper, path, 0, &st, &kerr);
		if (kfd >= 0) {
			fd = kfd;
			tmp[0] = 0;
			snap_by_keeper = 1;
		}
	}
	if (fd >= 0) {
		snap_dev = (uint64_t)st.st_dev;
		snap_ino = (uint64_t)st.st_ino;
	} else {
		sf_fd_publish(&snap, -1);
	}
	sf_fd_gate_unlock(&gold);
	if (fd < 0) {
		sf_rt_message("cannot write snapshot ", tmp[0] ? tmp : path, strerror(err));
		munmap(m, size);
		return -1;
	}
	static struct sf_header copy; /* the writer thread's only */
	memcpy(&copy, m, sizeof(copy));
	copy.snapshot = n;
	copy.snapshot_reason = freeze.reason;
	copy.reserved[SF_HDR_SNAP_TIME] = freeze.time;
	copy.reserved[SF_HDR_SNAP_THREAD] = freeze.tid;
	copy.reserved[SF_HDR_SNAP_FUNC] = freeze.func_id;
	copy.reserved[SF_HDR_SNAP_SLOW_NS] = freeze.slow_ns;
	copy.reserved[SF_HDR_SNAP_MISSED] = __atomic_load_n(&missed, __ATOMIC_RELAXED);
	static const char pad[SF_HEADER_SIZE - sizeof(struct sf_header)];
	int ok = write_all(&copy, sizeof(copy)) == 0 && write_all(pad, sizeof(pad)) == 0 &&
		 copy_objects(m, size) == 0 && copy_rings(e, freeze.time) == 0;
	err = errno;
	munmap(m, size);
	if (!ok) {
		snapshot_close();
		sf_rt_message("cannot write snapshot ", path, strerror(err));
		if (tmp[0])
			unlink(tmp);
		return -1;
	}
	return 0;
}

/* The process image goes away now (exec, _exit, abort): a snapshot
 * asked for and not written yet would go with the writer thread, so it is
 * waited for, as exit waits (10 s at most). Not in a vfork child (its
 * exec or _exit ends the child only) nor a forked one (no writer). */
void sf_snapshot_settle(void)
{
	if (!sf_config.enabled || !sf_config.ring_slots || sf_in_vfork_child() || !sf_snapshot_pending())
		return;
	sf_snapshot_serve_left(); /* no writer any more: written here */
	sf_writer_drain();
}

/* Whether a snapshot was asked for and not written yet (exit waits). */
int sf_snapshot_pending(void)
{
	return __atomic_load_n(&writing, __ATOMIC_ACQUIRE) || __atomic_load_n(&sf_freeze_open, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&signal_waiting, __ATOMIC_ACQUIRE) ||
	       (sf_config.ring_slots && (sf_writer_active() || sf_writer_left()) && asked(sf_log_header()));
}

/* The writer thread, after each round: writes the open freeze's snapshot
 * and closes it; then a ring signal that came meanwhile gets its own. */
void sf_snapshot_service(void)
{
	__atomic_store_n(&writing, 1, __ATOMIC_RELEASE);
	for (;;) {
		uint32_t e = __atomic_load_n(&sf_freeze_open, __ATOMIC_ACQUIRE);
		if (!e && take_asked(self_tid())) /* sftrace snapshot's, one at a time */
			e = __atomic_load_n(&sf_freeze_open, __ATOMIC_ACQUIRE);
		if (!e)
			break;
		static char path[4200], tmp[4300]; /* the writer thread's only */
		if (sf_writer_left()) { /* held until the file is linked in */
			left_dir = sf_fd_use(&snapdir, &left_ticket);
			if (left_dir < 0) {
				sf_fd_unuse(&snapdir, left_ticket);
				left_dir = -1;
			}
		}
		int ok = write_snapshot(e, path, sizeof(path), tmp) == 0;
		sf_rings_thaw(e);
		__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
		/* Once the file is there the freeze is closed: whoever waits for
		 * it (sftrace snapshot) may ask for the next one. */
		if (ok)
			snapshot_publish(path, tmp);
		if (left_dir >= 0) {
			sf_fd_unuse(&snapdir, left_ticket);
			left_dir = -1;
		}
		uint32_t tid = __atomic_exchange_n(&signal_waiting, 0, __ATOMIC_ACQ_REL);
		if (tid)
			freeze_open(SF_SNAP_SIGNAL, 0, sf_now_raw(), 0, tid);
	}
	__atomic_store_n(&writing, 0, __ATOMIC_RELEASE);
}
