/* The process snapshot, resume and pause signal (target_pid.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/target_pid.h"
#include "format/sf_env.h"
#include "lib/util.h"

/* The value of "NAME=value" when line sets the variable, else NULL. */
#define ENV_VALUE(line, name) \
	(strncmp(line, SF_ENV(name) "=", sizeof(SF_ENV(name))) ? NULL : (line) + sizeof(SF_ENV(name)))

int target_pid_env(pid_t pid, struct target_env *te)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			sf_error("pid %d: no such process", (int)pid);
		else
			sf_error("%s: %s", path, strerror(errno));
		return -1;
	}
	memset(te, 0, sizeof(*te));
	te->signal = SIGUSR2;
	char *line = NULL;
	size_t cap = 0;
	while (getdelim(&line, &cap, 0, f) > 0) {
		const char *v;
		if ((v = ENV_VALUE(line, OUTPUT_FILE)))
			snprintf(te->output, sizeof(te->output), "%s", v);
		else if ((v = ENV_VALUE(line, RING)))
			te->ring = v[0] != 0;
		else if ((v = ENV_VALUE(line, PAUSED)))
			te->paused = !strcmp(v, "1");
		else if ((v = ENV_VALUE(line, RING_SIGNAL)))
			te->signal = atoi(v);
	}
	free(line);
	fclose(f);
	return 0;
}

int target_pid_catches(pid_t pid, int sig)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int r = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long mask;
		if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
			r = sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1);
			break;
		}
	}
	fclose(f);
	return r;
}
