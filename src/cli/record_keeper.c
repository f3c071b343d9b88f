#include "cli/record_keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/util.h"

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

/* The command: record's dispositions for SIGINT and SIGQUIT as they were
 * before record ignored them (the program gets what the shell gave). */
static void run_command(char **argv, const struct sigaction *saved_int, const struct sigaction *saved_quit)
{
	sigaction(SIGINT, saved_int, NULL);
	sigaction(SIGQUIT, saved_quit, NULL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[0], argv);
	int err = errno;
	fprintf(stderr, "sftrace: error: cannot run %s: %s\n", argv[0], strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

/* The keeper itself; never returns. */
static void keep(char **argv, const struct sigaction *saved_int, const struct sigaction *saved_quit,
		 void (*cleanup)(void *), void *arg, int status_fd, int done_fd)
{
	/* It outlives a record killed by a signal (a hang-up, a TERM sent to
	 * record alone, SIGKILL): its job is to clean up after the command. */
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid_t cmd = fork();
	if (cmd < 0) {
		fprintf(stderr, "sftrace: error: fork: %s\n", strerror(errno));
		_exit(1);
	}
	if (cmd == 0)
		run_command(argv, saved_int, saved_quit);
	/* The caller's terminal or pipes belong to the command now: holding
	 * them would keep a reader of record's output waiting for us. */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		dup2(null, fd);
	int status = 0, w, st;
	while ((w = waitpid(-1, &st, __WALL)) != -1 || errno == EINTR)
		if (w == cmd)
			status = st;
	write_all(status_fd, &status, sizeof(status));
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

int keeper_start(char **argv, const struct sigaction *saved_int, const struct sigaction *saved_quit,
		 void (*cleanup)(void *), void *arg, struct keeper *k)
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
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
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
		keep(argv, saved_int, saved_quit, cleanup, arg, st[1], done[0]);
	}
	close(st[1]);
	close(done[0]);
	k->pid = pid;
	k->status_fd = st[0];
	k->done_fd = done[1];
	return 0;
}

int keeper_wait(struct keeper *k, int *status)
{
	size_t got = 0;
	while (got < sizeof(*status)) {
		ssize_t r = read(k->status_fd, (char *)status + got, sizeof(*status) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(k->status_fd);
	k->status_fd = -1;
	if (got == sizeof(*status))
		return 0;
	int st = 0;
	while (waitpid(k->pid, &st, 0) < 0 && errno == EINTR)
		;
	k->pid = -1;
	sf_error("the keeper process (the command's parent) ended early (%s %d); the command's status is unknown",
		 WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	/* Its orphans are record's now (the subreaper above it): the private
	 * directory stays until the last of them has exited. */
	while (waitpid(-1, &st, __WALL) != -1 || errno == EINTR)
		;
	return -1;
}

void keeper_finish(struct keeper *k)
{
	if (k->done_fd >= 0)
		close(k->done_fd);
	k->done_fd = -1;
	if (k->pid > 0)
		while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR)
			;
	k->pid = -1;
}
