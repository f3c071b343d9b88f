/* Private directories of runs whose record and keeper were both killed
 * (SIGKILL to a whole unit's cgroup, an OOM group kill): nobody was left
 * to remove them. Each directory says who keeps it (a stamp inside,
 * STALE_STAMP: the pid namespace, pid and start time of record and of its
 * keeper); the next record of the same user removes those whose keepers
 * are all gone. docs/DESIGN.md has why a name must exist while a run
 * lives. */
#ifndef SFTRACE_CLI_RECORD_STALE_H
#define SFTRACE_CLI_RECORD_STALE_H

#include <sys/types.h>

/* A dot name: record's note reader skips it (record_why.c). */
#define STALE_STAMP ".keepers"

/* Appends "PIDNS PID START" for pid (a process of this user that keeps the
 * directory dir: record, then its keeper) to dir's stamp. 0, or -1. */
int stale_stamp(const char *dir, pid_t pid);

/* Removes every sftrace-notes-XXXXXX in tmp that is a directory (never a
 * symlink's target) owned by this user, whose stamp names only processes
 * gone from this pid namespace. Anything else is left alone: another
 * user's, one without a complete stamp (being made, or made before
 * stamps), one kept from another pid namespace. The count removed. */
int stale_sweep(const char *tmp);

#endif
