/* record --paused, sftrace resume / pause: tracing switched on and off in
 * a running process.
 *
 * A process recorded with --paused (SFTRACE_PAUSED=1) starts with no sled
 * patched: an unpatched sled is a jump over a few bytes, so the program
 * runs at untraced speed. Objects are still found, numbered and logged,
 * and the filter still chooses which sleds a resume will patch.
 *
 * The control channel is the ring signal (SFTRACE_RING_SIGNAL, USR2 by
 * default) sent with sigqueue: its value carries SF_SWITCH_MAGIC, the
 * request (resume or pause) and a nonce. The handler only stores the
 * request and wakes the writer thread: patching takes the log lock and
 * mprotect calls, which have no place in a signal handler. The writer
 * thread patches or unpatches every instrumented object (objects.c,
 * sf_objects_switch), writes a SWITCH chunk (sflog.h) so readers know
 * where tracing was off, and answers with one datagram to the abstract
 * unix socket the sender bound, named from its pid and the nonce
 * (format/switch_ctl.h). The sender (cmd_switch.c) returns once it has
 * that answer.
 *
 * A plain ring signal (kill, sftrace snapshot: no SI_QUEUE value of ours)
 * still asks for a snapshot in a ring recording (snapshot.c calls
 * sf_switch_signal first). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
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
static uint64_t request;         /* the last request's sigval (0: none), set by the handler */
static uint32_t request_pid;     /* its sender */
static struct sigaction prev;    /* the disposition before ours (non-ring processes) */

int sf_switch_enabled(void)
{
	return enabled;
}

/* The signal carries a request of ours: store it for the writer thread.
 * Async-signal-safe. */
int sf_switch_signal(const siginfo_t *si)
{
	if (!enabled || !si || si->si_code != SI_QUEUE)
		return 0;
	uint64_t v = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
	if (!sf_switch_ctl_valid(v))
		return 0;
	__atomic_store_n(&request_pid, (uint32_t)si->si_pid, __ATOMIC_RELAXED);
	__atomic_store_n(&request, v, __ATOMIC_SEQ_CST);
	if (sf_writer_left())
		sf_switch_refuse_left(); /* answered here: nothing is switched any more */
	else
		sf_writer_kick();
	return 1;
}

static void on_switch_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	int ours = sf_switch_signal(si);
	errno = saved;
	if (ours)
		return;
	if (prev.sa_flags & SA_SIGINFO) {
		if (prev.sa_sigaction)
			prev.sa_sigaction(sig, si, uc);
	} else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
	}
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

/* With sleds in the process and its writer thread running: the handler
 * (a ring's handler serves it too), and the line that says how to resume. */
void sf_switch_start(void)
{
	if (!enabled)
		return;
	if (!sf_writer_active()) {
		sf_rt_message("--paused: no writer thread in this process; resume and pause cannot be served", "", NULL);
		return;
	}
	if (!sf_config.ring_slots) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_switch_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(sf_config.ring_signal, &sa, &prev);
	}
	if (__atomic_load_n(&sf_tracing_off, __ATOMIC_RELAXED))
		say_paused();
}

/* The answer to the sender's socket, "\0sftrace-switch.<pid>.<nonce>". */
static void reply(uint32_t pid, uint64_t v, const struct sf_switch_reply *r)
{
	struct sockaddr_un a;
	socklen_t len = sf_switch_ctl_address(&a, pid, sf_switch_ctl_nonce(v));
	int fd = sf_fd_brief(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return;
	/* The sender may have given up (timed out): nothing listens then. */
	while (sendto(fd, r, sizeof(*r), MSG_DONTWAIT, (const struct sockaddr *)&a, len) < 0 && errno == EINTR)
		;
	sf_close(fd);
}

/* The writer has left after the leader (writer.c, hand_over): a request
 * is answered SF_SWITCH_LEADER_GONE, at once, by the handler's thread or
 * by the writer on its way out (the request word taken by one of them:
 * the handler stores it before it reads that the writer left, the writer
 * sets that before it takes the word, both SEQ_CST). Patching with no
 * writer would take the log lock and mprotect in a signal handler, and a
 * resume would need the log in threads that may no longer open it; a
 * pause too is refused, so the log says what was switched when.
 * Async-signal-safe: socket, sendto and close. */
void sf_switch_refuse_left(void)
{
	uint64_t v = __atomic_exchange_n(&request, 0, __ATOMIC_SEQ_CST);
	if (!v)
		return;
	struct sf_switch_reply r = {.magic = SF_SWITCH_REPLY_MAGIC,
				    .pid = (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0),
				    .op = sf_switch_ctl_op(v),
				    .result = SF_SWITCH_LEADER_GONE};
	int err = errno;
	reply(__atomic_load_n(&request_pid, __ATOMIC_RELAXED), v, &r);
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
		sf_syscall3(SYS_sched_yield, 0, 0, 0);
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
	uint64_t v = __atomic_exchange_n(&request, 0, __ATOMIC_ACQ_REL);
	if (!v)
		return;
	uint32_t pid = __atomic_load_n(&request_pid, __ATOMIC_RELAXED);
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
	reply(pid, v, &r);
}

void sf_switch_after_fork_child(void)
{
	/* No writer thread in a forked child: requests stay unserved (the
	 * sender times out) and the child keeps its parent's state. */
	__atomic_store_n(&request, 0, __ATOMIC_RELAXED);
}
