/* record --paused, sftrace resume / pause: tracing switched on and off in
 * a running process.
 *
 * A process recorded with --paused (SFTRACE_PAUSED=1) starts with no sled
 * patched: an unpatched sled is a jump over a few bytes, so the program
 * runs at untraced speed. Objects are still found, numbered and logged,
 * and the filter still chooses which sleds a resume will patch.
 *
 * The control channel is a page of shared memory the writer thread keeps
 * (format/switch_ctl.h): a sealed memfd in the writer's own descriptor
 * table, mapped here. `sftrace resume` opens it through
 * /proc/PID/task/TID/fd, stores its request (resume or pause, and a
 * nonce) and wakes the writer, which waits on the page's futex word along
 * with its own (writer.c, idle_wait). No signal: one sent to the process
 * would land on a thread of the program's and cut its sleep short, or be
 * taken by its sigtimedwait, and the runtime installs no handler at all
 * for --paused. The writer thread patches or unpatches every instrumented
 * object (objects.c, sf_objects_switch), writes a SWITCH chunk (sflog.h)
 * so readers know where tracing was off, and answers with one datagram to
 * the abstract unix socket the sender bound, named from the nonce. The
 * sender (cmd_switch.c) returns once it has that answer. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "format/switch_ctl.h"
#include "sf_arch.h"
#include "runtime/runtime.h"

uint32_t sf_tracing_off SF_HIDDEN; /* 1 while paused: nothing is patched, heap events are not recorded */

static int enabled;              /* SFTRACE_PAUSED was set: requests are served */
static int off_for_good;         /* sf_switch_off_for_good: no resume */
static uint32_t switching;       /* sf_objects_switch's buffers are one caller's at a time */
/* The control page (format/switch_ctl.h), mapped MADV_DONTFORK: a forked
 * child has none. page_state: 0 not decided yet, 1 made, 2 none (the
 * writer's table could not be made its own: nobody else may hold it). */
static struct sf_ctl_page *page;
static uint32_t page_state;

int sf_switch_enabled(void)
{
	return enabled;
}

void sf_switch_config(void)
{
	const char *p = getenv(SF_ENV(PAUSED));
	if (p && p[0] == '1' && !p[1]) {
		enabled = 1;
		sf_tracing_off = 1;
	}
}

/* Appends s to line (at most cap - 1 bytes in all, NUL-ended). */
static void put(char *line, size_t cap, size_t *at, const char *s)
{
	for (; *s && *at + 1 < cap; s++)
		line[(*at)++] = *s;
	line[*at] = 0;
}

/* "sftrace: pid N started paused (tracing off); switch it on with:
 * sftrace resume N" on stderr (no stdio: this runs in the loader hook). */
static void say_paused(void)
{
	char num[16], rev[16], line[160];
	int n = 0;
	uint32_t pid = (uint32_t)getpid();
	do
		rev[n++] = (char)('0' + pid % 10);
	while ((pid /= 10));
	for (int i = 0; i < n; i++)
		num[i] = rev[n - 1 - i];
	num[n] = 0;
	size_t at = 0;
	put(line, sizeof(line), &at, "pid ");
	put(line, sizeof(line), &at, num);
	put(line, sizeof(line), &at, " started paused (tracing off); switch it on with: sftrace resume ");
	put(line, sizeof(line), &at, num);
	sf_rt_message(line, "", NULL);
}

/* A new memfd, sealed at SF_CTL_SIZE (a sender cannot shrink it under
 * the process: SIGBUS), moved high in the writer's table. -1 if none. */
static int ctl_memfd(void)
{
	long fd = sf_syscall3(SYS_memfd_create, (long)SF_CTL_MEMFD_NAME,
			      MFD_CLOEXEC | MFD_ALLOW_SEALING | 0x8u /* MFD_NOEXEC_SEAL, Linux 6.3 */, 0);
	if (fd == -EINVAL)
		fd = sf_syscall3(SYS_memfd_create, (long)SF_CTL_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING, 0);
	if (fd < 0)
		return -1;
	if (sf_syscall3(SYS_ftruncate, fd, SF_CTL_SIZE, 0) < 0 ||
	    sf_syscall3(SYS_fcntl, fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		sf_close((int)fd);
		return -1;
	}
	return sf_fd_keep((int)fd);
}

/* On the writer, once its descriptor table is its own (own = 1) or could
 * not be made so (0): the control page made and held there. A writer made
 * again (ns.c: after unshare or setns) has a new table: a new memfd then
 * takes the old page's place at the same address, its words copied. */
void sf_switch_writer_table(int own)
{
	if (!enabled)
		return;
	int fd = own && sf_writer_private() ? ctl_memfd() : -1;
	void *m = MAP_FAILED;
	if (fd >= 0) {
		struct sf_ctl_page old;
		if (page)
			memcpy(&old, page, sizeof(old));
		m = mmap(page, SF_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | (page ? MAP_FIXED : 0), fd, 0);
		if (m != MAP_FAILED) {
			madvise(m, SF_CTL_SIZE, MADV_DONTFORK); /* a forked child keeps no way to its parent's writer */
			struct sf_ctl_page *p = m;
			if (page) {
				memcpy(p, &old, sizeof(old));
			} else {
				p->pid = (uint32_t)getpid();
				__atomic_store_n(&p->magic, SF_CTL_MAGIC, __ATOMIC_RELEASE);
			}
			page = p;
		}
		/* The descriptor stays open: it is how a sender finds the page. */
	}
	if (m == MAP_FAILED && fd >= 0)
		sf_close(fd);
	if (m == MAP_FAILED && page) {
		/* The old one went with the old table: nobody can reach it now. */
		munmap(page, SF_CTL_SIZE);
		page = NULL;
	}
	__atomic_store_n(&page_state, page ? 1 : 2, __ATOMIC_RELEASE);
	sf_futex_wake(&page_state, 0x7fffffff);
}

/* The page's futex word and its value now, for the writer's wait (read
 * before the writer looks for a request: a request made after is a
 * change of that value). NULL when there is no page. */
uint32_t *sf_switch_wait_word(uint32_t *val)
{
	if (!page)
		return NULL;
	*val = __atomic_load_n(&page->seq, __ATOMIC_ACQUIRE);
	return &page->seq;
}

/* With sleds in the process and its writer thread running: the line that
 * says how to resume, once the writer has its control page (a resume
 * sent at once finds it). No signal handler: requests come on the page. */
void sf_switch_start(void)
{
	if (!enabled)
		return;
	if (!sf_writer_active()) {
		sf_rt_message("--paused: no writer thread in this process; resume and pause cannot be served", "", NULL);
		return;
	}
	/* The writer decides first thing (writer.c, writer_main): a bounded
	 * wait all the same, 5 s in 100 ms steps. */
	uint32_t st;
	for (int i = 0; i < 50 && !(st = __atomic_load_n(&page_state, __ATOMIC_ACQUIRE)); i++) {
		sf_futex_wait(&page_state, 0, 100000000L);
	}
	if (!page) {
		sf_rt_message("--paused: the writer thread has no control page (its descriptor table could not be made "
			      "its own); resume and pause cannot be served", "", NULL);
		return;
	}
	if (__atomic_load_n(&sf_tracing_off, __ATOMIC_RELAXED))
		say_paused();
}

/* The answer to the sender's socket, "\0sftrace-switch.<nonce>". */
static void reply(uint64_t v, const struct sf_switch_reply *r)
{
	struct sockaddr_un a;
	socklen_t len = sf_switch_ctl_address(&a, sf_switch_ctl_nonce(v));
	int fd = sf_fd_brief(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return;
	/* The sender may have given up (timed out): nothing listens then. */
	while (sendto(fd, r, sizeof(*r), MSG_DONTWAIT, (const struct sockaddr *)&a, len) < 0 && errno == EINTR)
		;
	sf_close(fd);
}

/* The request on the page, taken: 0 when there is none (or it is not one). */
static uint64_t take_request(void)
{
	if (!page)
		return 0;
	uint64_t v = __atomic_exchange_n(&page->request, 0, __ATOMIC_ACQ_REL);
	return sf_switch_ctl_valid(v) ? v : 0;
}

/* The writer leaves after the leader (writer.c, hand_over): a request on
 * the page is answered SF_SWITCH_LEADER_GONE. Nobody serves the page
 * after that (the sender sees the writer gone and refuses by itself).
 * Patching with no writer would take the log lock and mprotect on a
 * thread of the program's, and a resume would need the log in threads
 * that may no longer open it; a pause too is refused, so the log says
 * what was switched when. */
void sf_switch_refuse_left(void)
{
	uint64_t v = take_request();
	if (!v)
		return;
	struct sf_switch_reply r = {.magic = SF_SWITCH_REPLY_MAGIC,
				    .pid = (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0),
				    .op = sf_switch_ctl_op(v),
				    .result = SF_SWITCH_LEADER_GONE};
	int err = errno;
	reply(v, &r);
	errno = err;
}

/* The last switch, for a log created after it (the first resume of a
 * process started paused comes before its first event, hence its log). */
static struct sf_switch last_switch;

static void write_switch(const struct sf_switch *s)
{
	struct sf_chunk c = {0};
	c.type = SF_CHUNK_SWITCH;
	sf_log_write_chunk(&c, s, sizeof(*s), 0);
}

/* Logs where tracing switched; a log that does not exist yet gets it when
 * it is made (sf_switch_log_created). */
static void log_switch(uint64_t time, uint32_t on, uint32_t sleds, uint64_t took)
{
	sigset_t old;
	sf_log_lock_sig(&old);
	last_switch = (struct sf_switch){time, on, sleds, took, 0};
	if (sf_log_ready())
		write_switch(&last_switch);
	sf_log_unlock_sig(&old);
}

void sf_switch_log_created(void)
{
	if (enabled && last_switch.time)
		write_switch(&last_switch);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void switch_lock(void)
{
	while (__atomic_exchange_n(&switching, 1, __ATOMIC_ACQUIRE))
		sf_yield();
}

static void switch_unlock(void)
{
	__atomic_store_n(&switching, 0, __ATOMIC_RELEASE);
}

/* A thread is about to enter SECCOMP_MODE_STRICT (rt_libc.c): from then
 * on the kernel makes rdtsc fault in it (SIGSEGV; its vDSO clock reads
 * rdtsc too), and it may make no system call but read, write, exit and
 * rt_sigreturn. The trampolines read the TSC first thing, for every
 * thread alike, so every sled is unpatched, as at a pause, and stays so:
 * the process runs on untraced, its log says where tracing stopped (a
 * SWITCH chunk), and a resume is refused. In the calling thread, before
 * the call, while it may still make system calls. */
void sf_switch_off_for_good(void)
{
	if (!sf_config.enabled)
		return;
	switch_lock();
	off_for_good = 1;
	if (!__atomic_load_n(&sf_tracing_off, __ATOMIC_ACQUIRE)) {
		uint64_t t0 = sf_mono_ns(), read_ns = 0;
		__atomic_store_n(&sf_tracing_off, 1, __ATOMIC_RELEASE);
		uint32_t sleds = sf_objects_switch(0, &read_ns);
		log_switch(sf_now_raw(), 0, sleds, sf_mono_ns() - t0);
	}
	switch_unlock();
}

/* The writer thread, after each round: serves the last request. */
void sf_switch_service(void)
{
	uint64_t v = take_request();
	if (!v)
		return;
	uint32_t want_on = sf_switch_ctl_op(v) == SF_SWITCH_RESUME;
	struct sf_switch_reply r = {.magic = SF_SWITCH_REPLY_MAGIC, .pid = (uint32_t)getpid(), .op = sf_switch_ctl_op(v)};
	uint64_t t0 = sf_mono_ns(), read_ns = 0, cpu0 = thread_cpu_ns();
	switch_lock();
	uint32_t off = __atomic_load_n(&sf_tracing_off, __ATOMIC_RELAXED);
	if (want_on && off_for_good) {
		r.result = SF_SWITCH_REFUSED;
	} else if (want_on == !off) {
		r.result = SF_SWITCH_ALREADY;
	} else if (want_on) {
		/* Started paused: the calibration waited for the first resume
		 * (a process never resumed never pays for it), before any sled
		 * is patched and before the log that carries its figures. */
		static int calibrated;
		if (!calibrated) {
			sf_calib_measure();
			calibrated = 1;
		}
		uint64_t at = sf_now_raw(); /* before the first sled: every resumed event is later */
		/* --within: a window open at the pause was closed there, and one
		 * that returned while paused never counted out: no window is
		 * open at a resume (nothing patched changes a depth now). Each
		 * thread drops its stale shadow-stack entries at its next event. */
		sf_buffer_resumed();
		__atomic_store_n(&sf_tracing_off, 0, __ATOMIC_RELEASE);
		r.sleds = sf_objects_switch(1, &read_ns);
		r.took_ns = sf_mono_ns() - t0;
		log_switch(at, 1, r.sleds, r.took_ns);
	} else {
		/* Off first: an object a dlopen scans meanwhile stays unpatched. */
		__atomic_store_n(&sf_tracing_off, 1, __ATOMIC_RELEASE);
		r.sleds = sf_objects_switch(0, &read_ns);
		r.took_ns = sf_mono_ns() - t0;
		/* After the last sled: a frame open then was in flight at the pause. */
		log_switch(sf_now_raw(), 0, r.sleds, r.took_ns);
	}
	switch_unlock();
	r.patched_now = sf_objects_patched_total();
	r.read_us = (uint32_t)(read_ns / 1000);
	r.cpu_us = (uint32_t)((thread_cpu_ns() - cpu0) / 1000);
	reply(v, &r);
}

void sf_switch_after_fork_child(void)
{
	/* No writer thread in a forked child, and no control page (its
	 * mapping was not copied): the child keeps its parent's state. */
	page = NULL;
	page_state = 2;
}
