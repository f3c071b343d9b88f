/* The control channel of sftrace resume / pause (src/cli/cmd_switch.c) to
 * a process recorded with --paused (src/runtime/switch.c).
 *
 * No signal: a signal directed at the process lands on any thread that
 * does not block it, so it cut a program thread's sleep, poll or
 * nanosleep short (EINTR, time left), and a server that blocks every
 * signal and takes them with sigtimedwait took it as its own. Instead the
 * runtime's writer thread keeps one page of shared memory, a sealed memfd
 * named SF_CTL_MEMFD_NAME held in its own descriptor table (the
 * program's table never sees it; /proc/PID/task/TID/fd does, for the
 * process's owner and root), mapped MADV_DONTFORK in the process.
 * Request: the sender opens that descriptor through /proc, maps the page,
 * claims `request` (compare-and-swap from 0) with a 64-bit value
 * (SF_SWITCH_MAGIC in the top 16 bits, the operation in bits 32..39, a
 * nonzero nonce in the low 32 bits), then adds 1 to `seq` and wakes it (a
 * shared futex: the writer waits on it with futex_waitv). A sender that
 * finds `request` taken adds 1 to `seq` too (the writer then serves the
 * one there) and tries again.
 * Answer: one struct sf_switch_reply datagram, sent by the writer thread
 * once every sled is switched, to the abstract unix socket
 * "\0sftrace-switch.<nonce>" the sender bound beforehand. The sender
 * checks the datagram's credentials (SCM_CREDENTIALS): the pid it asked. */
#ifndef SFTRACE_FORMAT_SWITCH_CTL_H
#define SFTRACE_FORMAT_SWITCH_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define SF_SWITCH_MAGIC 0x5357ull /* "SW" */
#define SF_SWITCH_REPLY_MAGIC 0x59504c5257535346ull /* "FSSWRLPY" */

enum sf_switch_op { SF_SWITCH_RESUME = 1, SF_SWITCH_PAUSE = 2 };

enum sf_switch_result {
	SF_SWITCH_DONE = 0,    /* switched */
	SF_SWITCH_ALREADY = 1, /* it was in that state already: nothing changed */
	SF_SWITCH_REFUSED = 2, /* resume: tracing is off for good (a thread entered SECCOMP_MODE_STRICT) */
	SF_SWITCH_LEADER_GONE = 3, /* refused: the main thread has ended and the writer thread with it */
};

#define SF_CTL_MEMFD_NAME "sftrace-ctl"
#define SF_CTL_MAGIC 0x4c5443534653ull /* "SFSCTL" */
#define SF_CTL_SIZE 4096u

struct sf_ctl_page {
	uint64_t magic;   /* SF_CTL_MAGIC */
	uint32_t pid;     /* the process, as it sees itself (getpid) */
	uint32_t seq;     /* futex word (shared): a request is waiting */
	uint64_t request; /* 0, or the request the writer has not taken yet */
};

struct sf_switch_reply {
	uint64_t magic;       /* SF_SWITCH_REPLY_MAGIC */
	uint32_t pid;         /* the process that answers */
	uint32_t op;          /* enum sf_switch_op asked */
	uint32_t result;      /* enum sf_switch_result */
	uint32_t sleds;       /* sleds patched (resume) or unpatched (pause) */
	uint32_t patched_now; /* sleds patched after the switch */
	uint32_t read_us;     /* of took_ns: reading the sled maps and the filter's choice (us) */
	uint64_t took_ns;     /* patching or unpatching time */
	uint32_t cpu_us;      /* of took_ns: the writer thread's CPU time (the rest: waiting for a CPU, the lock) */
	uint32_t reserved;
};

static inline uint64_t sf_switch_ctl_value(uint32_t op, uint32_t nonce)
{
	return SF_SWITCH_MAGIC << 48 | (uint64_t)(op & 0xff) << 32 | nonce;
}

static inline int sf_switch_ctl_valid(uint64_t v)
{
	uint32_t op = (uint32_t)(v >> 32 & 0xff);
	return v >> 48 == SF_SWITCH_MAGIC && (op == SF_SWITCH_RESUME || op == SF_SWITCH_PAUSE);
}

static inline uint32_t sf_switch_ctl_op(uint64_t v) { return (uint32_t)(v >> 32 & 0xff); }
static inline uint32_t sf_switch_ctl_nonce(uint64_t v) { return (uint32_t)v; }

/* The sender's abstract address; returns its length for bind/sendto.
 * No libc formatting: the runtime calls it too. */
static inline socklen_t sf_switch_ctl_address(struct sockaddr_un *a, uint32_t nonce)
{
	static const char stem[] = "sftrace-switch.";
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	size_t at = 1; /* sun_path[0] = 0: abstract */
	memcpy(a->sun_path + at, stem, sizeof(stem) - 1);
	at += sizeof(stem) - 1;
	char rev[10];
	int n = 0;
	uint32_t x = nonce;
	do
		rev[n++] = (char)('0' + x % 10);
	while ((x /= 10));
	while (n)
		a->sun_path[at++] = rev[--n];
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + at);
}

#endif
