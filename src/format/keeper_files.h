/* Files made by record's keeper for the runtime (issue 24: every new
 * process gets its own log, however it was made).
 *
 * A traced process that dropped its privileges (setresuid to nobody, in
 * libc or with a raw system call in one thread, then fork), or chrooted,
 * may no longer create its log in record's output directory, nor its note
 * in the run's private directory. record's keeper (the command's parent,
 * running as record's user: src/cli/record_files.c) still can: it creates
 * the file on request and hands the descriptor back (SCM_RIGHTS). The file
 * is the keeper's (record's user), mode 0600: record reads and merges it
 * as it does any other log.
 *
 * The keeper listens on an abstract unix socket (SOCK_SEQPACKET) named
 * after the run's private directory's device and inode, so a process that
 * chrooted or may not search that directory any more still reaches it (a
 * network namespace of its own does not). Nothing about the name is
 * secret: the keeper serves only its own descendants (SO_PEERCRED's pid,
 * its parent chain in /proc), names every file after that pid itself, and
 * the runtime takes answers only from a server with the directory owner's
 * uid. One request per connection.
 *
 * A channel (SF_KF_CHAN) is the exception: a socket pair made by the
 * keeper, one end sent back, the other served for as long as the asker's
 * end is open, any number of requests, each sent with the asker's
 * SCM_CREDENTIALS. A process whose threads all left the keeper's network
 * namespace cannot connect; one handed a channel at its fork can still
 * ask, and ask for its own children's channels (issue 24: a worker forked
 * by a child of a process that did unshare(CLONE_NEWNET)). */
#ifndef SFTRACE_FORMAT_KEEPER_FILES_H
#define SFTRACE_FORMAT_KEEPER_FILES_H

#include <stddef.h>
#include <stdint.h>

#define SF_KF_MAGIC 0x5346464bu /* "KFFS" */

enum sf_kf_op {
	SF_KF_LOG = 1,   /* a new log: the requested name when `first`, else <stem>.<pid>[.<n>]<ext>; its path back */
	SF_KF_LOG_AGAIN, /* the log `name` (a path the keeper gave this pid) opened again */
	SF_KF_NOTE,      /* the pid's note file in the private directory, O_APPEND */
	SF_KF_SNAP,      /* an unnamed file (O_TMPFILE) in the log's directory, for a snapshot */
	SF_KF_LINK,      /* the unnamed file sent along linked in as `name` (<stem>.snap.<pid>.<n><ext>) */
	SF_KF_CHAN,      /* a channel back: one end of a socket pair whose other end the keeper serves */
};

struct sf_kf_req {
	uint32_t magic;
	uint32_t op;
	uint32_t first;
	uint32_t pad;
	char name[4096];
};

struct sf_kf_rep {
	int32_t err;   /* 0 or an errno */
	uint32_t call; /* with err: SF_KF_CALL_*, the keeper's system call that failed (0: none named) */
	char path[4096];
};

/* The answer to a request the keeper could not do names the system call
 * that failed there, so that the asking process's loss line says it
 * (issue 24: a profile refusing the keeper's socketpair left the line
 * naming no call). 0 (a check refused, or a keeper from before this
 * field, which sent 0 there): none named. The numbers are the protocol's,
 * never reused. */
enum sf_kf_call {
	SF_KF_CALL_OPENAT = 1,
	SF_KF_CALL_FSTAT,
	SF_KF_CALL_LINKAT,
	SF_KF_CALL_RENAME,
	SF_KF_CALL_SOCKETPAIR,
};

/* The call's name, or NULL for 0 or a number this build does not know. */
static inline const char *sf_kf_call_name(uint32_t call)
{
	static const char *const names[] = {NULL, "openat", "fstat", "linkat", "rename", "socketpair"};
	return call < sizeof(names) / sizeof(names[0]) ? names[call] : NULL;
}

/* The abstract address (after its leading NUL) of the keeper of the
 * private directory (dev, ino): "sftrace-keeper-DEV-INO" in hex, with
 * "-SALT" when salt is not 0 (record's random name when the plain one
 * was taken: SFTRACE_KEEPER passes it on), its length returned
 * (cap >= 72). No libc: the runtime calls it too. */
static inline size_t sf_kf_name(char *out, uint64_t dev, uint64_t ino, uint64_t salt)
{
	static const char pre[] = "sftrace-keeper-";
	size_t n = 0;
	for (const char *p = pre; *p; p++)
		out[n++] = *p;
	uint64_t v[3] = {dev, ino, salt};
	for (int i = 0; i < (salt ? 3 : 2); i++) {
		char tmp[16];
		int k = 0;
		do {
			tmp[k++] = "0123456789abcdef"[v[i] & 15];
			v[i] >>= 4;
		} while (v[i]);
		while (k)
			out[n++] = tmp[--k];
		if (i < (salt ? 2 : 1))
			out[n++] = '-';
	}
	out[n] = 0;
	return n;
}

/* Where the extension of a log's name begins (len for none): the last
 * dot after the last slash, unless it starts the name. The runtime names
 * each process's log after record's -o path with it (<stem>.<pid><ext>,
 * docs/FORMAT.md), and the keeper makes files under the same names. */
static inline size_t sf_log_ext_start(const char *req, size_t len)
{
	size_t slash = 0, dot = len;
	for (size_t i = 0; i < len; i++)
		if (req[i] == '/')
			slash = i + 1;
	for (size_t i = len; i > slash; i--)
		if (req[i - 1] == '.') {
			dot = i - 1;
			break;
		}
	return dot == slash ? len : dot; /* ".log" alone is a stem, not an extension */
}

#endif
