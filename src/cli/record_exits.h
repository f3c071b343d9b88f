/* record writes how each process it reaped ended into that process's log
 * (sf_header.exit_state, SF_EXIT_REAPED): record_exits.c has the why. */
#ifndef SFTRACE_CLI_RECORD_EXITS_H
#define SFTRACE_CLI_RECORD_EXITS_H

#include <stddef.h>

#include "cli/record_keeper.h"

/* logs: the paths of the logs the run wrote; exits: every process
 * reaped, in reap order (keeper_wait). Logs that cannot be opened for
 * writing are left as they are. */
void record_write_exits(char *const *logs, size_t nlogs, const struct keeper_exit *exits, size_t nexits);

#endif
