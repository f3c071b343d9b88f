/* Running cargo, rustc and sftrace from cargo-sftrace: an environment to
 * give them, and three ways to run one (plain, output captured, output
 * streamed to callbacks). Commands are looked up in PATH (execvpe). */
#ifndef SFTRACE_CARGO_SPAWN_H
#define SFTRACE_CARGO_SPAWN_H

#include <stddef.h>

/* A growable NULL-terminated string vector (argv, envp). */
struct strv {
	char **v;
	size_t n, cap;
};
void strv_push(struct strv *s, const char *x);     /* copies x */
void strv_pushf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strv_free(struct strv *s);

/* envp: a copy of the process's environment; env_set replaces or adds. */
void env_init(struct strv *env);
void env_set(struct strv *env, const char *name, const char *value);
/* The value of name in env, or NULL. */
const char *env_get(const struct strv *env, const char *name);

/* The exit status of a finished child: its code, or 128+N for signal N. */
int spawn_status(int wstatus);

/* Runs argv with envp (NULL: ours) in cwd (NULL: ours) and waits. The exit status
 * (spawn_status), or -1 if it could not be started (errno-based message on
 * stderr). */
int spawn_wait(char *const argv[], char *const envp[], const char *cwd);

/* The same, with stdout (and stderr too when merge_stderr) captured into
 * *out (malloc'd, NUL-terminated). */
int spawn_capture(char *const argv[], char *const envp[], int merge_stderr, char **out);

/* The same, with each line of stdout given to on_out and each line of
 * stderr to on_err (without its newline), as they come. */
int spawn_lines(char *const argv[], char *const envp[], void (*on_out)(void *ctx, char *line),
		void (*on_err)(void *ctx, char *line), void *ctx);

#endif
