/* record's keeper makes files for processes that may not (issue 24): a
 * log, a note, a snapshot, for a descendant that dropped its privileges
 * or chrooted. The protocol: src/format/keeper_files.h. */
#ifndef SFTRACE_CLI_RECORD_FILES_H
#define SFTRACE_CLI_RECORD_FILES_H

/* In the keeper, before the command starts: the listening socket for the
 * private directory notes (its files) and the log path log (absolute: the
 * logs' directory and names). -1 if it cannot be made (then processes
 * that cannot make their files themselves say so, as before). */
int rfiles_listen(const char *notes, const char *log);

/* In the keeper, after the command started: a thread that answers the
 * requests on fd (rfiles_listen's), every signal blocked. */
void rfiles_serve(int fd);

#endif
