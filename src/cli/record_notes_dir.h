/* record's private directory ($TMPDIR/sftrace-notes-XXXXXX), held by a
 * descriptor from the moment it is made: the files record makes in it are
 * opened relative to that descriptor, never through its path. Whoever can
 * write $TMPDIR (one without the sticky bit: sudo -E keeping a user's
 * TMPDIR, a shared directory) can rename the directory away and put a
 * symlink in its place; O_NOFOLLOW guards only a path's last component,
 * so by path root's record would make its stamp and its files in the
 * directory the symlink names (test_skeptic24's swap: '.keepers' appeared
 * there in a run under load). */
#ifndef SFTRACE_RECORD_NOTES_DIR_H
#define SFTRACE_RECORD_NOTES_DIR_H

#include <sys/types.h>

/* Opens the directory just made at path (O_NOFOLLOW) and holds it if it is
 * still the one (dev, ino) made; 0, or -1 with errno (ESTALE: swapped). */
int notes_dir_hold(const char *path, dev_t dev, ino_t ino);
/* The held descriptor, or -1. */
int notes_dir_fd(void);
/* open(path, flags, mode) for a file directly in the held directory:
 * openat on its descriptor by the file's name. Any other path: open. */
int notes_dir_open(const char *path, int flags, mode_t mode);

#endif
