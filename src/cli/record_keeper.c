#include "cli/record_keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/record_files.h"
#include "format/sf_env.h"
#include "lib/util.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

/* The signals record hands on to the command (docs/man/sftrace-record.1):
 * a script's `kill $!`, a supervisor's stop or reload, meant for the
 * program. Only those sent by a process are handed on: the terminal's
 * (^C, ^\, a hang-up) reach the command directly, in record's process
 * group. */
static const int forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
enum { NFWD = sizeof(forwarded) / sizeof(forwarded[0]) };
static struct sigaction saved[NFWD]; /* record's dispositions before it forwarded */
/* record's signal mask before keeper_start blocked the forwarded ones.
 * They stay blocked from before record's fork of the keeper until each
 * process knows its target (fwd_to), and in the command until its
 * dispositions are record's again: a signal that came in a window (to
 * record before fwd_to was the keeper's pid, to the keeper before it was
 * the command's, or to the command while it still had the keeper's
 * handler, with fwd_to 0) was dropped, and the program ran on as if
 * never told (test_skeptic24b's early SIGTERM, seen once under load).
 * A blocked signal waits: it is handed on once the target is known. */
static sigset_t orig_mask;

static void block_forwarded(void)
{
	sigset_t s;
	sigemptyset(&s);
	for (int i = 0; i < NFWD; i++)
		sigaddset(&s, forwarded[i]);
	sigprocmask(SIG_BLOCK, &s, &orig_mask);
}

/* In record: the keeper's pid (record's child, not reaped before record is
 * done, so the number is never another process's). In the keeper: the
 * command's pid until it has been seen to exit, 0 after. */
static volatile sig_atomic_t fwd_to;
static volatile sig_atomic_t parent_pid; /* in the keeper: record */

static int sent_by_a_process(const siginfo_t *si)
{
	return si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL;
}

/* record: sent by a process, to record; the keeper takes it on. */
static void record_forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int err = errno;
	if (fwd_to > 0 && sent_by_a_process(si) && si->si_pid != fwd_to)
		kill(fwd_to, sig);
	errno = err;
}

/* The keeper: only what record handed on goes to the command (a signal
 * sent to the whole group reached it already). */
static void keeper_forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int err = errno;
	if (fwd_to > 0 && sent_by_a_process(si) && si->si_pid == parent_pid)
		kill(fwd_to, sig);
	errno = err;
}

static void set_forwarding(void (*fn)(int, siginfo_t *, void *), struct sigaction *old)
{
	struct sigaction sa = {.sa_sigaction = fn, .sa_flags = SA_SIGINFO | SA_RESTART};
	sigfillset(&sa.sa_mask);
	for (int i = 0; i < NFWD; i++) {
		struct sigaction was;
		sigaction(forwarded[i], NULL, &was);
		if (old)
			old[i] = was;
		/* Ignored when record started (nohup): the command ignores it
		 * too, and record stays as it was. */
		if (was.sa_handler != SIG_IGN || !old)
			sigaction(forwarded[i], &sa, NULL);
	}
}

/* The command: record's dispositions as they were before record forwarded
 * (the program gets what the shell gave). */
static void run_command(char **argv)
{
	for (int i = 0; i < NFWD; i++)
		sigaction(forwarded[i], &saved[i], NULL);
	signal(SIGPIPE, SIG_DFL);
	/* the keeper's handler is gone: what the keeper hands on from now on
	 * (pending here, or sent after) meets the program's dispositions */
	sigprocmask(SIG_SETMASK, &orig_mask, NULL);
	execvp(argv[0], argv);
	int err = errno;
	fprintf(stderr, "sftrace: error: cannot run %s: %s\n", argv[0], strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

/* The keeper itself; never returns. */
static void keep(char **argv, void (*cleanup)(void *), void *arg, int status_fd, int done_fd, const char *notes,
		 const char *log)
{
	/* It outlives a record killed by a signal (SIGKILL, a signal record
	 * does not forward): its job is to clean up after the command. The
	 * forwarded signals it takes from record only, and hands on. */
	fwd_to = 0;
	parent_pid = getppid();
	set_forwarding(keeper_forward, NULL);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* Files for processes that may no longer make their own (a worker
	 * that dropped to nobody, a chroot): record_files.c. Listening before
	 * the command starts; answered once it runs. */
	int files = notes && log ? rfiles_listen(notes, log) : -1;
	if (notes && log && files < 0)
		fprintf(stderr, "sftrace: warning: the keeper cannot make files for processes that may not (%s): a process "
				"that drops its privileges or chroots may get no log\n",
			strerror(errno));
	/* Who the runtime may ask (notes.c): this keeper's pid (the
	 * listener's, SO_PEERCRED) and its name's salt; 0 when it holds no
	 * name, so that nobody else's socket is ever asked. */
	if (notes) {
		char kv[48];
		uint64_t salt = files >= 0 ? rfiles_salt() : 0;
		if (files < 0)
			snprintf(kv, sizeof(kv), "0");
		else if (salt)
			snprintf(kv, sizeof(kv), "%ld-%llx", (long)getpid(), (unsigned long long)salt);
		else
			snprintf(kv, sizeof(kv), "%ld", (long)getpid());
		setenv(SF_ENV(KEEPER), kv, 1);
	} else {
		unsetenv(SF_ENV(KEEPER));
	}
	pid_t cmd = fork();
	if (cmd < 0) {
		fprintf(stderr, "sftrace: error: fork: %s\n", strerror(errno));
		_exit(1);
	}
	if (cmd == 0)
		run_command(argv);
	fwd_to = cmd;
	sigprocmask(SIG_SETMASK, &orig_mask, NULL); /* what record handed on meanwhile goes to the command now */
	rfiles_serve(files);
	/* Out of record's process group (the command stays in it, forked
	 * before this): a signal to the whole group (`timeout -s KILL`,
	 * killpg, a shell killing a job) ends record and the command but not
	 * the keeper, which goes on reaping whatever escaped (a setsid daemon)
	 * and removes the private directory after the last of them. Same
	 * session: the command's terminal and job control are untouched. */
	setpgid(0, 0);
	/* The caller's terminal or pipes belong to the command now: holding
	 * them would keep a reader of record's output waiting for us. */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		dup2(null, fd);
	/* Each process reaped goes to record as it is reaped (a pipe record
	 * of 16 bytes is written whole); record reads them while it waits.
	 * Not blocking: a record that stopped reading costs its exit states,
	 * never the reaping. */
	fcntl(status_fd, F_SETFL, fcntl(status_fd, F_GETFL) | O_NONBLOCK);
	int status = 0, st;
	siginfo_t si;
	for (;;) {
		/* The command's pid stops being a target before it is reaped
		 * (and could be reused). */
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT | __WALL) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (si.si_pid == cmd)
			fwd_to = 0;
		while (waitpid(si.si_pid, &st, __WALL) < 0 && errno == EINTR)
			;
		if (si.si_pid == cmd)
			status = st;
		struct keeper_exit e = {si.si_pid, st, mono_ns()};
		if (write(status_fd, &e, sizeof(e)) < 0) {
			/* pipe full or record gone: this exit state is not told */
		}
	}
	fcntl(status_fd, F_SETFL, fcntl(status_fd, F_GETFL) & ~O_NONBLOCK);
	struct keeper_exit last = {0, status, 0}; /* pid 0: the command's status, and the end */
	write_all(status_fd, &last, sizeof(last));
	close(status_fd);
	char c;
	while (read(done_fd, &c, 1) < 0 && errno == EINTR)
		;
	cleanup(arg);
	_exit(0);
}

/* A pipe end numbered 0-2 (record started with some of stdin, stdout or
 * stderr closed) moves to 3 or above: the keeper puts /dev/null on 0-2, and
 * the command's stdio must not be record's pipes. */
static int above_stdio(int fd)
{
	if (fd > 2)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int err = errno;
	close(fd);
	errno = err;
	return high;
}

static int high_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	p[0] = above_stdio(p[0]);
	p[1] = above_stdio(p[1]);
	if (p[0] >= 0 && p[1] >= 0)
		return 0;
	int err = errno;
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	errno = err;
	return -1;
}

int keeper_start(char **argv, void (*cleanup)(void *), void *arg, const char *notes, const char *log, struct keeper *k)
{
	int st[2], done[2];
	if (high_pipe(st) < 0) {
		sf_error("pipe: %s", strerror(errno));
		return -1;
	}
	if (high_pipe(done) < 0) {
		sf_error("pipe: %s", strerror(errno));
		close(st[0]);
		close(st[1]);
		return -1;
	}
	/* record is a subreaper too: if the keeper dies (a command that
	 * signals its parent), the processes it kept are reparented to record,
	 * which then waits for them before removing the directory
	 * (keeper_wait). */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	fwd_to = 0;
	block_forwarded(); /* until fwd_to is the keeper's pid (orig_mask) */
	set_forwarding(record_forward, saved);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &orig_mask, NULL);
		sf_error("fork: %s", strerror(errno));
		close(st[0]);
		close(st[1]);
		close(done[0]);
		close(done[1]);
		return -1;
	}
	if (pid == 0) {
		close(st[0]);
		close(done[1]);
		keep(argv, cleanup, arg, st[1], done[0], notes, log);
	}
	close(st[1]);
	close(done[0]);
	k->exits = NULL;
	k->nexits = 0;
	k->pid = pid;
	fwd_to = pid;
	sigprocmask(SIG_SETMASK, &orig_mask, NULL); /* a signal that came meanwhile goes to the keeper now */
	k->status_fd = st[0];
	k->done_fd = done[1];
	return 0;
}

static void add_exit(struct keeper *k, pid_t pid, int st)
{
	k->exits = xrealloc(k->exits, (k->nexits + 1) * sizeof(*k->exits));
	k->exits[k->nexits++] = (struct keeper_exit){pid, st, mono_ns()};
}

/* The keeper's records: one per process reaped, then pid 0 with the
 * command's status. 0 when that last one came. */
static int read_exits(struct keeper *k, int *status)
{
	struct keeper_exit e;
	for (;;) {
		size_t got = 0;
		while (got < sizeof(e)) {
			ssize_t r = read(k->status_fd, (char *)&e + got, sizeof(e) - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return -1;
			got += (size_t)r;
		}
		if (!e.pid) {
			*status = e.status;
			return 0;
		}
		k->exits = xrealloc(k->exits, (k->nexits + 1) * sizeof(*k->exits));
		k->exits[k->nexits++] = e;
	}
}

int keeper_wait(struct keeper *k, int *status)
{
	int ok = read_exits(k, status);
	close(k->status_fd);
	k->status_fd = -1;
	if (ok == 0)
		return 0;
	fwd_to = 0; /* the keeper is about to be reaped: its pid is no target */
	int st = 0;
	while (waitpid(k->pid, &st, 0) < 0 && errno == EINTR)
		;
	k->pid = -1;
	sf_error("the keeper process (the command's parent) ended early (%s %d); the command's status is unknown",
		 WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	/* Its orphans are record's now (the subreaper above it): the private
	 * directory stays until the last of them has exited. */
	pid_t pid;
	while ((pid = waitpid(-1, &st, __WALL)) > 0 || (pid < 0 && errno == EINTR))
		if (pid > 0)
			add_exit(k, pid, st);
	return -1;
}

void keeper_finish(struct keeper *k)
{
	if (k->done_fd >= 0)
		close(k->done_fd);
	k->done_fd = -1;
	fwd_to = 0; /* the keeper is about to be reaped: its pid is no target */
	if (k->pid > 0)
		while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR)
			;
	k->pid = -1;
	free(k->exits);
	k->exits = NULL;
	k->nexits = 0;
}
