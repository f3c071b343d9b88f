/* A running process that sftrace record started, as snapshot, resume and
 * pause find it: the variables record set in its environment
 * (/proc/PID/environ), its uid and whether it catches a signal
 * (/proc/PID/status).
 * One reader, so that the commands that signal a process agree on what
 * "recorded", "gone" and "no handler" mean. */
#ifndef SFTRACE_CLI_TARGET_PID_H
#define SFTRACE_CLI_TARGET_PID_H

#include <limits.h>
#include <sys/types.h>

/* The run's variables in the process's environment. */
struct target_env {
	char output[PATH_MAX]; /* SFTRACE_OUTPUT_FILE ("" when unset) */
	int ring;              /* SFTRACE_RING set and not empty */
	int paused;            /* SFTRACE_PAUSED=1 */
	int signal;            /* SFTRACE_RING_SIGNAL, else SIGUSR2 */
};

/* Reads pid's environment into *te. 0, or -1 after one message: no such
 * process, or why /proc/PID/environ cannot be read (another user's). */
/* The process's cwd (a live thread's once its main thread has ended); 0, or -1. */
int target_pid_cwd(pid_t pid, char *out, size_t cap);
/* Whether pid's main thread has ended while other threads run on (a zombie leader). */
int target_pid_leader_gone(pid_t pid);
int target_pid_env(pid_t pid, struct target_env *te);

/* The process's real uid (/proc/PID/status), -1 if it is gone. */
long target_pid_uid(pid_t pid);

/* Whether pid catches sig (/proc/PID/status SigCgt): 1, 0, or -1 if
 * unknown. A recorded process that loaded no instrumented code (a shell
 * between record and the program) has no handler from the runtime, and
 * the ring signal's default action would kill it. */
int target_pid_catches(pid_t pid, int sig);

#endif
