#include "cli/pager.h"
#include "format/sf_env.h"
#include "lib/util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t pager_pid = -1;

static const char *pager_command(void)
{
	const char *p = getenv(SF_ENV(PAGER));
	if (!p)
		p = getenv("PAGER");
	if (!p)
		p = "less";
	return p;
}

/* Whether the pager's program can be run, as git checks before it pages:
 * a pager that cannot start would swallow the whole output (the shell
 * says "not found" and the pipe's reader is gone). Only the command's
 * first word is looked up, on PATH unless it holds a '/'; a command with
 * shell syntax is left to the shell. */
static int pager_runnable(const char *cmd)
{
	if (strpbrk(cmd, "|&;<>()$`\\\"'*?[#~=%{}"))
		return 1;
	while (*cmd == ' ' || *cmd == '\t')
		cmd++;
	size_t n = strcspn(cmd, " \t");
	char word[4096];
	if (!n || n >= sizeof(word))
		return 1;
	memcpy(word, cmd, n);
	word[n] = 0;
	char path[8192];
	return sf_path_lookup(word, path, sizeof(path)) == 0;
}

int pager_start(void)
{
	const char *cmd = pager_command();
	if (!isatty(1) || !*cmd || !strcmp(cmd, "cat"))
		return -1;
	if (!pager_runnable(cmd)) {
		fprintf(stderr, "sftrace: cannot run the pager '%s' (%s, or PAGER): not found; writing unpaged\n", cmd,
			SF_ENV(PAGER));
		return -1;
	}
	int fd[2];
	if (pipe(fd) < 0)
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fd[0], 0);
		close(fd[0]);
		close(fd[1]);
		setenv("LESS", "FRX", 0);
		signal(SIGPIPE, SIG_DFL); /* the command ignores it (main.c) */
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	dup2(fd[1], 1);
	close(fd[0]);
	close(fd[1]);
	/* A reader who quits the pager early ends the output: writes then fail
	 * with EPIPE instead of killing the command mid-line. */
	signal(SIGPIPE, SIG_IGN);
	pager_pid = pid;
	return 0;
}

void pager_end(void)
{
	if (pager_pid < 0)
		return;
	fflush(stdout);
	close(1);
	while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
		;
	pager_pid = -1;
}
