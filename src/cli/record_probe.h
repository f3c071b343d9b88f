/* record under seccomp filters it did not install (a service manager's
 * SystemCallFilter=~..., a container's profile): which of the runtime's
 * system calls they kill, found by a disposable probe process
 * (record_probe.c has the why). */
#ifndef SFTRACE_CLI_RECORD_PROBE_H
#define SFTRACE_CLI_RECORD_PROBE_H

#include <stddef.h>

/* 0 where record runs under no seccomp filter (no probe made) or the
 * filters kill none of the runtime's calls; else how many they kill (or
 * leave unanswered), their names in killed ("a, b"). */
int record_probe_filters(char *killed, size_t size);

#endif
