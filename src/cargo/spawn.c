/* spawn.h: fork + execvpe, pipes read with poll so that a child writing a
 * lot on both stdout and stderr never blocks on a full pipe. */
#include "cargo/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/util.h"

extern char **environ;

void strv_push(struct strv *s, const char *x)
{
	if (s->n + 2 > s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = x ? xstrdup(x) : NULL;
	s->v[s->n] = NULL;
}

void strv_pushf(struct strv *s, const char *fmt, ...)
{
	char *x;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&x, fmt, ap) < 0)
		x = NULL;
	va_end(ap);
	if (!x) {
		fputs("cargo-sftrace: error: out of memory\n", stderr);
		exit(1);
	}
	strv_push(s, x);
	free(x);
}

void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strv){0};
}

void env_init(struct strv *env)
{
	*env = (struct strv){0};
	for (char **e = environ; *e; e++)
		strv_push(env, *e);
	if (!env->v)
		strv_push(env, NULL), env->n = 0;
}

static ssize_t env_find(const struct strv *env, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], name, len) && env->v[i][len] == '=')
			return (ssize_t)i;
	return -1;
}

void env_set(struct strv *env, const char *name, const char *value)
{
	ssize_t i = env_find(env, name);
	if (i < 0) {
		strv_pushf(env, "%s=%s", name, value);
		return;
	}
	free(env->v[i]);
	if (asprintf(&env->v[i], "%s=%s", name, value) < 0) {
		fputs("cargo-sftrace: error: out of memory\n", stderr);
		exit(1);
	}
}

const char *env_get(const struct strv *env, const char *name)
{
	ssize_t i = env_find(env, name);
	return i < 0 ? NULL : env->v[i] + strlen(name) + 1;
}

int spawn_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

/* Forks argv; out_fd/err_fd (or -1: inherited) become its stdout/stderr.
 * The child's pid, or -1 with a message. */
static pid_t start(char *const argv[], char *const envp[], const char *cwd, int out_fd, int err_fd)
{
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "cargo-sftrace: error: cannot start %s: %s\n", argv[0], strerror(errno));
		return -1;
	}
	if (pid == 0) {
		if (out_fd >= 0)
			dup2(out_fd, 1);
		if (err_fd >= 0)
			dup2(err_fd, 2);
		if (cwd && chdir(cwd) < 0) {
			fprintf(stderr, "cargo-sftrace: error: %s: %s\n", cwd, strerror(errno));
			_exit(127);
		}
		execvpe(argv[0], argv, envp ? envp : environ);
		fprintf(stderr, "cargo-sftrace: error: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

static int finish(pid_t pid)
{
	int ws;
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR)
			return -1;
	return spawn_status(ws);
}

int spawn_wait(char *const argv[], char *const envp[], const char *cwd)
{
	fflush(NULL);
	pid_t pid = start(argv, envp, cwd, -1, -1);
	return pid < 0 ? -1 : finish(pid);
}

/* One output pipe being read: what has come, and the complete lines given
 * to a callback as they arrive. */
struct reader {
	int fd;
	char *buf;
	size_t len, cap;
	void (*on_line)(void *ctx, char *line);
};

static void deliver_lines(struct reader *r, void *ctx, int at_end)
{
	if (!r->on_line)
		return;
	size_t start = 0;
	for (size_t i = 0; i < r->len; i++) {
		if (r->buf[i] != '\n')
			continue;
		r->buf[i] = 0;
		r->on_line(ctx, r->buf + start);
		start = i + 1;
	}
	if (at_end && start < r->len) {
		r->buf[r->len] = 0;
		r->on_line(ctx, r->buf + start);
		start = r->len;
	}
	memmove(r->buf, r->buf + start, r->len - start);
	r->len -= start;
}

/* Reads the pipes to their ends. */
static void read_all(struct reader *rs, size_t nr, void *ctx)
{
	struct pollfd pf[2];
	size_t open = nr;
	for (size_t i = 0; i < nr; i++)
		pf[i] = (struct pollfd){.fd = rs[i].fd, .events = POLLIN};
	while (open) {
		if (poll(pf, nr, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (size_t i = 0; i < nr; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct reader *r = &rs[i];
			if (r->cap - r->len < 4096) {
				r->cap = r->cap * 2 + 8192;
				r->buf = xrealloc(r->buf, r->cap);
			}
			ssize_t got = read(r->fd, r->buf + r->len, r->cap - r->len - 1);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				deliver_lines(r, ctx, 1);
				close(r->fd);
				pf[i].fd = -1;
				open--;
				continue;
			}
			r->len += (size_t)got;
			deliver_lines(r, ctx, 0);
		}
	}
}

/* Runs argv with its stdout piped (and stderr piped too, or merged into
 * stdout, or inherited) into readers. */
static int run_piped(char *const argv[], char *const envp[], struct reader *rs, int err_mode, void *ctx)
{
	enum { ERR_INHERIT, ERR_MERGE, ERR_PIPE };
	int po[2], pe[2] = {-1, -1};
	fflush(NULL);
	if (pipe2(po, O_CLOEXEC) < 0 || (err_mode == ERR_PIPE && pipe2(pe, O_CLOEXEC) < 0)) {
		fprintf(stderr, "cargo-sftrace: error: pipe: %s\n", strerror(errno));
		return -1;
	}
	int err_fd = err_mode == ERR_MERGE ? po[1] : err_mode == ERR_PIPE ? pe[1] : -1;
	pid_t pid = start(argv, envp, NULL, po[1], err_fd);
	close(po[1]);
	if (pe[1] >= 0)
		close(pe[1]);
	rs[0].fd = po[0];
	rs[1].fd = pe[0];
	size_t nr = err_mode == ERR_PIPE ? 2 : 1;
	if (pid < 0) {
		for (size_t i = 0; i < nr; i++)
			close(rs[i].fd);
		return -1;
	}
	read_all(rs, nr, ctx);
	return finish(pid);
}

int spawn_capture(char *const argv[], char *const envp[], int merge_stderr, char **out)
{
	struct reader rs[2] = {{0}, {0}};
	int rc = run_piped(argv, envp, rs, merge_stderr ? 1 : 0, NULL);
	if (!rs[0].buf)
		rs[0].buf = xcalloc(1, 1);
	rs[0].buf[rs[0].len] = 0;
	*out = rs[0].buf;
	return rc;
}

int spawn_lines(char *const argv[], char *const envp[], void (*on_out)(void *ctx, char *line),
		void (*on_err)(void *ctx, char *line), void *ctx)
{
	struct reader rs[2] = {{.on_line = on_out}, {.on_line = on_err}};
	int rc = run_piped(argv, envp, rs, 2, ctx);
	free(rs[0].buf);
	free(rs[1].buf);
	return rc;
}
