#include "cli/pager.h"
#include "format/sf_env.h"

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

int pager_start(void)
{
	const char *cmd = pager_command();
	if (!isatty(1) || !*cmd || !strcmp(cmd, "cat"))
		return -1;
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
