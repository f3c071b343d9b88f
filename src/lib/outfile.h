/* Output files written atomically, optionally gzip-compressed.
 *
 * Data goes to a temporary file created next to the target (same directory,
 * so the final rename stays on one filesystem); sf_outfile_commit renames it
 * over the target, sf_outfile_abort deletes it. So the target path only ever
 * holds the old file or the complete new one, never partial output. A
 * symlink at the target is followed, as the shell's `>` and cp follow it:
 * the temporary goes next to the link's target and is renamed over it, so
 * the link stays and its target gets the new content, still atomically.
 * A target that is neither a regular file nor a directory (a device such as
 * /dev/null or /dev/full, a FIFO, a socket, also through a symlink such as
 * /dev/stdout) is written in place instead: renaming over it would replace
 * the device node, and its write errors would go unseen.
 *
 * No fsync: a crash right after commit may lose the data, never tear it.
 */
#ifndef SFTRACE_LIB_OUTFILE_H
#define SFTRACE_LIB_OUTFILE_H

#include <stddef.h>

struct sf_outfile;

/* Outputs made from logs are no more readable than the logs: a converted
 * trace carries the same data (command lines, paths, timings), so a 0600
 * log gives 0600 outputs. trace_open calls this with each log's mode; the
 * files created afterwards get the permission bits every one of them has
 * (their intersection, without execute, setuid, setgid and sticky bits),
 * less the umask, as cp(1) does. Before any call: 0644 less the umask.
 * The temporary file is created with that mode, so no one else can open
 * it while it fills. */
void sf_outfile_limit_mode(unsigned mode);

/* gzip: 1 compress, 0 do not, -1 compress when path ends in ".gz".
 * Returns NULL with a one-line message in err ("cannot create PATH: ...")
 * when the temporary file cannot be created. */
struct sf_outfile *sf_outfile_open(const char *path, int gzip, char *err, size_t errlen);

/* As sf_outfile_open (no gzip), for a file a command makes beside its
 * output under a name of its own (record's STEM.recorded.filter): the
 * user named no file there, and the directory may be shared (sticky, as
 * /tmp), so nothing found at that name is followed or written through. A
 * symlink, anything not a regular file, or another user's file there: NULL
 * with "not replacing PATH: ..." in err. Otherwise a 0600 temporary
 * (O_EXCL|O_NOFOLLOW) renamed over the name itself at commit. */
struct sf_outfile *sf_outfile_open_beside(const char *path, char *err, size_t errlen);

/* Buffered write. Returns 0, or -1 once anything failed (the error is kept
 * and reported by sf_outfile_commit; later writes are ignored). */
int sf_outfile_write(struct sf_outfile *of, const void *buf, size_t len);

/* Same, for writers that take a (write_fn, ctx) pair; ctx is the outfile. */
int sf_outfile_write_cb(void *ctx, const void *buf, size_t len);

/* Flushes (finishing the gzip stream), closes and renames the temporary file
 * over the target. Returns 0, or -1 after printing one line naming the
 * target path and the reason (sf_error) and deleting the temporary file.
 * Frees `of` either way. */
int sf_outfile_commit(struct sf_outfile *of);

/* Closes and deletes the temporary file; the target is left untouched.
 * Frees `of`. NULL is accepted. */
void sf_outfile_abort(struct sf_outfile *of);

/* After a failed conversion: a write error kept by the outfile is reported
 * by committing (which removes the temporary file); anything else gets
 * "OUT: conversion failed; nothing written". The target is left untouched
 * either way. Frees `of`; returns -1. */
int sf_outfile_fail(struct sf_outfile *of, const char *out);

/* Bytes written to the file so far (compressed size when gzip). */
unsigned long long sf_outfile_bytes(const struct sf_outfile *of);

/* Checks early, before any expensive work, that `path` could be written:
 * the target is not a directory and a file can be created (and removed) in
 * its directory. Returns 0, or -1 with a one-line message in err naming the
 * path ("cannot create PATH: Permission denied"). */
int sf_outfile_check(const char *path, char *err, size_t errlen);

#endif
