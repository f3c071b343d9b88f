/* record's keeper makes files for processes that may not (issue 24): a
 * log, a note, a snapshot, for a descendant that dropped its privileges
 * or chrooted. The protocol: src/format/keeper_files.h. */
#ifndef SFTRACE_CLI_RECORD_FILES_H
#define SFTRACE_CLI_RECORD_FILES_H

#include <stdint.h>

/* In record, right after it made the private directory (dev, ino): binds
 * the keeper's abstract name (keeper_files.h), kept for rfiles_listen.
 * -1 with errno EADDRINUSE when another keeper holds that name (a keeper
 * of a run whose directory had the same inode and is gone, the keeper not
 * yet): record then makes another directory, while this one still exists
 * (so with another inode). A name this process bound is nobody else's. */
int rfiles_bind(uint64_t dev, uint64_t ino, uint64_t salt);

/* The salt of the name bound (0: the plain name), for SFTRACE_KEEPER. */
uint64_t rfiles_salt(void);

/* In record after the keeper started: record's copy of the socket closed. */
void rfiles_forget(void);

/* In the keeper, before the command starts: the listening socket for the
 * private directory notes (its files) and the log path log (absolute: the
 * logs' directory and names). -1 if it cannot be made (then processes
 * that cannot make their files themselves say so, as before). */
int rfiles_listen(const char *notes, const char *log); /* listens on rfiles_bind's socket */

/* In the keeper, after the command started: a thread that answers the
 * requests on fd (rfiles_listen's), every signal blocked. */
void rfiles_serve(int fd);

#endif
