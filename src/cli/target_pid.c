/* The process snapshot, resume and pause signal (target_pid.h). */
#include <dirent.h>
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

/* /proc/PID/NAME opened; where that fails because the main thread has
 * ended (a zombie leader has no memory, no cwd: ESRCH, ENOENT) while
 * threads run on, the first live thread's /proc/PID/task/TID/NAME (they
 * share both). errno is the process's own failure's. */
static FILE *open_task_file(pid_t pid, const char *name)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	FILE *f = fopen(path, "re");
	if (f)
		return f;
	int err = errno;
	char dir[48];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	for (struct dirent *e; d && !f && (e = readdir(d));) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || atol(e->d_name) == (long)pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.12s/%s", (int)pid, e->d_name, name);
		f = fopen(path, "re");
	}
	if (d)
		closedir(d);
	errno = err;
	return f;
}

int target_pid_cwd(pid_t pid, char *out, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	ssize_t k = readlink(path, out, cap - 1);
	if (k <= 0) {
		char dir[48];
		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
		DIR *d = opendir(dir);
		for (struct dirent *e; d && k <= 0 && (e = readdir(d));) {
			if (e->d_name[0] < '1' || e->d_name[0] > '9' || atol(e->d_name) == (long)pid)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%.12s/cwd", (int)pid, e->d_name);
			k = readlink(path, out, cap - 1);
		}
		if (d)
			closedir(d);
	}
	if (k <= 0)
		return -1;
	out[k] = 0;
	return 0;
}

int target_pid_env(pid_t pid, struct target_env *te)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	FILE *f = open_task_file(pid, "environ");
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

/* The line of /proc/PID/status that starts with key (its value after the
 * key), into line; 0, or -1 if the process or the key is missing. */
static int status_line(pid_t pid, const char *key, char *line, size_t size)
{
	FILE *f = open_task_file(pid, "status");
	if (!f)
		return -1;
	size_t n = strlen(key);
	int r = -1;
	while (r < 0 && fgets(line, (int)size, f))
		if (!strncmp(line, key, n)) {
			memmove(line, line + n, strlen(line + n) + 1);
			r = 0;
		}
	fclose(f);
	return r;
}

long target_pid_uid(pid_t pid)
{
	char line[256];
	long uid;
	return status_line(pid, "Uid:", line, sizeof(line)) == 0 && sscanf(line, "%ld", &uid) == 1 ? uid : -1;
}

int target_pid_catches(pid_t pid, int sig)
{
	char line[256];
	unsigned long long mask;
	if (status_line(pid, "SigCgt:", line, sizeof(line)) < 0 || sscanf(line, "%llx", &mask) != 1)
		return -1;
	return sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1);
}

int target_pid_leader_gone(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}
