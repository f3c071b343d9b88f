/* The keeper: the process between `sftrace record` and the command, that
 * keeps the run's private directory (the runtime's notes, the size budget,
 * the triggers, a merged filter) for as long as any process of the command
 * lives, and removes it after the last one, even when record is killed.
 *
 *   record ── keeper (child subreaper) ── the command ── its descendants
 *
 * The keeper is a child subreaper (PR_SET_CHILD_SUBREAPER): every
 * descendant orphaned on the way (a daemon's double fork) is reparented to
 * it, so when its wait() says ECHILD no process of the command is left. It
 * then hands record the command's wait status, waits until record has read
 * the directory (or died), removes it and exits. record is a child
 * subreaper as well: when the keeper itself is killed (a command that
 * signals its parent), its orphans go to record, which waits for all of
 * them before it removes the directory. docs/DESIGN.md has why.
 *
 * It also makes the files a process of the command may no longer make
 * itself (a log, a note, a snapshot, after a drop to nobody or a chroot):
 * record_files.h. */
#ifndef SFTRACE_CLI_RECORD_KEEPER_H
#define SFTRACE_CLI_RECORD_KEEPER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A process of the command that the keeper (or record) reaped: its wait
 * status, and CLOCK_MONOTONIC ns just after (which log it was: the
 * newest of its pid begun before). */
struct keeper_exit {
	int32_t pid;
	int32_t status;
	uint64_t mono_ns;
};

struct keeper {
	struct keeper_exit *exits; /* in the order they were reaped (keeper_wait) */
	size_t nexits;
	pid_t pid;      /* the keeper */
	int status_fd;  /* record reads the command's wait status here */
	int done_fd;    /* record closes it when done with the directory */
};

/* Starts the keeper, which runs argv (execvp) with record's signal
 * dispositions as they were. From then on record hands HUP, INT, QUIT,
 * TERM, USR1 and USR2 sent to it by a process on to the command (through
 * the keeper, which knows when the command's pid stops being its own);
 * those the terminal sends reach the command directly and record does not
 * die of them. cleanup(arg) is what the keeper runs after the last process
 * exited and record let go. notes (the private directory) and log (the
 * absolute log path), when given, let the keeper make logs, notes and
 * snapshots for the command's processes that may not (record_files.h).
 * 0, or -1 after a message. */
int keeper_start(char **argv, void (*cleanup)(void *), void *arg, const char *notes, const char *log,
		 struct keeper *k);

/* Blocks until every process of the command has exited; the command's
 * wait status in *status, and every process reaped (the command, and
 * the orphans the keeper or record reaped as subreaper) in k->exits. -1 if the keeper died first (after a message,
 * and once every process of the command has exited). */
int keeper_wait(struct keeper *k, int *status);

/* record is done with the directory: the keeper removes it and exits;
 * returns once it has. */
void keeper_finish(struct keeper *k);

#endif
