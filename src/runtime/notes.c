/* The runtime's messages (sf_rt_message: one line on stderr, unless
 * stderr was closed at start) and notes for `sftrace record`
 * (SFTRACE_NOTES_DIR, set by record only): so
 * that a run that wrote no log can say why. Each process appends to
 * NOTES/<pid>: every message the runtime prints ("sftrace: ..."), its
 * loss if it got no log ("loss CALL ERRNO PROG\tTEXT": the call that
 * failed, as a field), and at exit, when it created no log, one line per
 * instrumented object it saw ("object SLEDS PATCHED BUILD-ID PATH");
 * docs/FORMAT.md, "Runtime notes", lists them all. Nothing is written on
 * the hot path or by processes that wrote a log. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format/keeper_files.h"
#include "runtime/runtime.h"

static char notes_dir[4096];
static size_t notes_dir_len;
/* The private directory as checked at start: record's keeper, which makes
 * files for processes that may not (sf_recfile), is named after it and
 * runs as its owner. */
static uint64_t notes_dev, notes_ino;
static uid_t notes_uid;
/* record's keeper as record said (SFTRACE_KEEPER, record_keeper.c): its
 * pid, which every connection's peer must be (SO_PEERCRED: the listener's),
 * and its name's salt; keeper_none: record holds no name (or named no
 * keeper), nobody is asked. The last refusal, for the loss line. */
static long keeper_pid;
static uint64_t keeper_salt;
static int keeper_none;
static char keeper_refused[160];

static void keeper_env(void)
{
	const char *v = getenv(SF_ENV(KEEPER));
	if (!v || !*v) { /* not record's doing: no keeper it named */
		keeper_none = 1;
		return;
	}
	long pid = 0;
	uint64_t salt = 0;
	const char *p = v;
	for (; *p >= '0' && *p <= '9' && pid < (1L << 40); p++)
		pid = pid * 10 + (*p - '0');
	if (*p == '-')
		for (p++; *p; p++) {
			int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
			if (d < 0 || salt >> 60)
				break;
			salt = salt << 4 | (uint64_t)d;
		}
	if (*p || p == v) { /* not record's: no keeper trusted */
		keeper_none = 1;
		return;
	}
	keeper_pid = pid;
	keeper_salt = salt;
	keeper_none = pid == 0;
}

static void refused_say(const char *a, long n, const char *b)
{
	size_t k = 0;
	for (const char *q = a; *q && k < sizeof(keeper_refused) - 24; q++)
		keeper_refused[k++] = *q;
	if (n >= 0) {
		char t[24];
		int m = 0;
		do
			t[m++] = (char)('0' + n % 10);
		while ((n /= 10) && m < 20);
		while (m)
			keeper_refused[k++] = t[--m];
	}
	for (const char *q = b; *q && k < sizeof(keeper_refused) - 1; q++)
		keeper_refused[k++] = *q;
	keeper_refused[k] = 0;
}

/* ---- losses relayed within a fork family (issue 24) ----
 * A process that gets no log and cannot note why either (out of record's
 * network namespace and chrooted: the keeper is out of reach) would say
 * so on the program's stderr. Every process of a family shares one page
 * (MAP_SHARED, mapped at start, inherited by forks; an exec maps its own):
 * such a line goes there instead, as "PID line", and a writer thread of
 * the family, which stays in record's namespace, notes it in its own
 * note as "relayed PID line"; record says "pid PID wrote no log: ...".
 * Only where a writer listens (listeners): else, and where the page is
 * full or held, the line goes to stderr as before (a loss is never
 * silent but for a relaying process that is killed first).
 *
 * The page is the fork children's to write: that is what it is for (a
 * child that can reach nothing else), so a fork child keeps it mapped
 * writable, unlike the log's slots (logfile.c). A child may drop to
 * another uid (a prefork server's worker as nobody) and write anything
 * into it at any time (issue 24: a worker that set len to 0x100000 and
 * woke seq killed its root parent, SIGSEGV in the flush's copy). So no
 * process trusts a word of it: each is read once into its own memory and
 * bounded there (len at most sizeof(buf), else the page is cleared and
 * nothing in it noted), a line is noted only as "PID text\n" with no byte
 * a terminal must not get raw (what relay_put_as writes; anything else
 * is dropped), the lock is tried a bounded number of times, and a process
 * that waits for lines to be noted (at exit) waits for at most two flush
 * rounds of its own writer, never for the page to empty. What a hostile
 * child can do is what it could do without the page: keep its own lines
 * from being noted, or have lines noted under a pid it names. */
struct relay {
	uint32_t lock;
	uint32_t seq;       /* shared futex word: bumped on every line */
	uint32_t len;       /* bytes in buf */
	uint32_t listeners; /* writer threads of the family that flush */
	uint32_t stuck;     /* a flush failed: exits do not wait for it */
	char buf[4096 - 20];
};
static struct relay *relay;

static void relay_map(void)
{
	void *m = mmap(NULL, sizeof(struct relay), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	relay = m == MAP_FAILED ? NULL : m;
}

static int relay_lock_tries(int tries, int yield)
{
	for (int i = 0; i < tries; i++) {
		if (!__atomic_exchange_n(&relay->lock, 1, __ATOMIC_ACQUIRE))
			return 1;
		if (yield)
			sf_syscall3(SYS_sched_yield, 0, 0, 0);
		else
			sf_arch_cpu_relax();
	}
	return 0; /* held by a process that died there: not waited for */
}

static int relay_lock(void)
{
	return relay_lock_tries(1000, 1);
}

static void relay_unlock(void)
{
	__atomic_store_n(&relay->lock, 0, __ATOMIC_RELEASE);
}

/* 1 if the line (ending in a newline) is in the page for a writer to
 * note, as pid's (0: this process's, by getpid). limited: a seccomp
 * filter may refuse sched_yield (the lock is spun for instead), and the
 * futex wake is made only if wake. */
static int relay_put_as(const char *line, size_t n, uint32_t pid_is, int limited, int wake)
{
	if (!relay || !__atomic_load_n(&relay->listeners, __ATOMIC_ACQUIRE) ||
	    !(limited ? relay_lock_tries(1 << 20, 0) : relay_lock()))
		return 0;
	char pid[16];
	size_t k = 0;
	char tmp[16];
	int t = 0;
	for (unsigned v = pid_is ? pid_is : (unsigned)sf_syscall3(SYS_getpid, 0, 0, 0); v || !t; v /= 10)
		tmp[t++] = (char)('0' + v % 10);
	while (t)
		pid[k++] = tmp[--t];
	pid[k++] = ' ';
	/* len read once and bounded: another process may rewrite it meanwhile */
	uint32_t at = __atomic_load_n(&relay->len, __ATOMIC_ACQUIRE);
	int ok = at <= sizeof(relay->buf) && k + n <= sizeof(relay->buf) - at;
	if (ok) {
		memcpy(relay->buf + at, pid, k);
		memcpy(relay->buf + at + k, line, n);
		__atomic_store_n(&relay->len, at + (uint32_t)(k + n), __ATOMIC_RELEASE);
	}
	relay_unlock();
	if (ok) {
		__atomic_add_fetch(&relay->seq, 1, __ATOMIC_RELEASE);
		if (wake)
			sf_syscall6(SYS_futex, (long)&relay->seq, FUTEX_WAKE, 0x7fffffff, 0, 0, 0); /* shared: other processes */
	}
	return ok;
}

static int relay_put(const char *line, size_t n)
{
	return relay_put_as(line, n, 0, 0, 1);
}

static size_t put_esc(char *buf, size_t cap, size_t n, const char *s);

/* A report line ("report sftrace: A B") for pid, relayed through the
 * family's page (a writer of the family notes it: "relayed PID report
 * ..."; record says "sftrace: pid PID: A B"), with no call but the futex
 * wake, and that only if wake: for a process under a seccomp filter that
 * may refuse everything else (sandbox.c). Without it the writer still
 * finds the line at its next idle wake or at its process's exit. 1 if
 * relayed. */
int sf_notes_relay_report(uint32_t pid, const char *a, const char *b, int wake)
{
	char buf[512];
	size_t n = 0;
	const char *parts[] = {"report sftrace: ", a, b};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		n = put_esc(buf, sizeof(buf) - 1, n, parts[i]);
	buf[n++] = '\n';
	return relay_put_as(buf, n, pid, 1, wake);
}

static int note_write_here(const char *line, size_t len);

static size_t esc_unsafe(const unsigned char *p, size_t *len);

/* 1 if l[0..n) (n >= 1, l[n - 1] the newline, l[n] readable) is a line as
 * relay_put_as writes it: "PID text\n", PID 1-10 digits, the text with no
 * byte a terminal must not get raw (put_esc escaped them all). */
static int relay_line_ok(const char *l, size_t n)
{
	size_t d = 0;
	while (d < n && d < 11 && l[d] >= '0' && l[d] <= '9')
		d++;
	if (!d || d > 10 || d >= n || l[d] != ' ')
		return 0;
	/* a tab is a loss line's field separator ("loss CALL ERRNO PROG\tTEXT",
	 * sf_rt_lost): the only control byte a runtime's line holds */
	for (size_t i = d + 1, len; i < n - 1; i += len) {
		len = 1;
		if (l[i] == '\t')
			continue;
		if (esc_unsafe((const unsigned char *)l + i, &len) || i + len > n - 1)
			return 0;
	}
	return 1;
}

/* This process's own memory, not the page's: flush rounds its writer
 * made, and the round a waiter first saw lines at (+1; 0: none). */
static uint32_t relay_rounds, relay_wait_mark;

/* This process's writer gave up on the page: its lock was held through
 * RELAY_MISS_MAX rounds with lines in (a process that died holding it, or
 * a child that keeps it), or after lines were noted. A writer round never
 * waits for the lock (a relative holds it for one line's copy, then bumps
 * seq, which wakes the writer for another round): a lock a child keeps
 * must not slow the program's hand-offs to the writer (it did: 1,000
 * sched_yields a round). Relatives' lines go to stderr from then on. */
#define RELAY_MISS_MAX 64
static int relay_off;
static uint32_t relay_missed;

static void relay_give_up(void)
{
	__atomic_store_n(&relay_off, 1, __ATOMIC_RELEASE);
	sf_notes_relay_listen(0);
}

static void relay_round_done(int empty)
{
	__atomic_add_fetch(&relay_rounds, 1, __ATOMIC_ACQ_REL);
	if (empty)
		__atomic_store_n(&relay_wait_mark, 0, __ATOMIC_RELEASE);
}

/* On a writer thread: the page's lines noted, "relayed PID line". */
void sf_notes_relay_flush(void)
{
	if (!relay || __atomic_load_n(&relay_off, __ATOMIC_ACQUIRE))
		return;
	if (!__atomic_load_n(&relay->len, __ATOMIC_ACQUIRE)) {
		relay_missed = 0;
		relay_round_done(1);
		return;
	}
	if (!relay_lock_tries(64, 0)) { /* no yield: tried again next round */
		if (++relay_missed >= RELAY_MISS_MAX)
			relay_give_up();
		relay_round_done(0);
		return;
	}
	relay_missed = 0;
	static char copy[sizeof(relay->buf) + 1]; /* (one writer thread a process) */
	uint32_t n = __atomic_load_n(&relay->len, __ATOMIC_ACQUIRE); /* once: the copy's bound */
	if (n > sizeof(relay->buf)) { /* no runtime wrote that: nothing in the page is noted */
		__atomic_store_n(&relay->len, 0, __ATOMIC_RELEASE);
		relay_unlock();
		relay_round_done(1);
		return;
	}
	memcpy(copy, relay->buf, n);
	copy[n] = 0; /* (esc_unsafe may look one byte past a line's end) */
	relay_unlock();
	size_t done = 0;
	while (done < n) {
		const char *nl = memchr(copy + done, '\n', n - done);
		size_t len = nl ? (size_t)(nl - (copy + done)) + 1 : n - done;
		if (!nl || !relay_line_ok(copy + done, len)) { /* not a runtime's line: dropped */
			done += len;
			continue;
		}
		char line[sizeof(copy) + 16];
		memcpy(line, "relayed ", 8);
		memcpy(line + 8, copy + done, len);
		if (!note_write_here(line, 8 + len)) {
			__atomic_store_n(&relay->stuck, 1, __ATOMIC_RELEASE);
			break;
		}
		done += len;
	}
	if (!done) {
		relay_round_done(0);
		return;
	}
	if (!relay_lock()) { /* taken since and kept: the lines noted would be noted again */
		relay_give_up();
		relay_round_done(0);
		return;
	}
	/* lines put meanwhile move to the front; len read once again, and a
	 * page whose len no longer covers what was noted is cleared */
	uint32_t m = __atomic_load_n(&relay->len, __ATOMIC_ACQUIRE);
	if (m < done || m > sizeof(relay->buf))
		m = (uint32_t)done;
	memmove(relay->buf, relay->buf + done, m - done);
	__atomic_store_n(&relay->len, m - (uint32_t)done, __ATOMIC_RELEASE);
	relay_unlock();
	relay_round_done(m == done);
}

/* This process's writer listens (on 1: it started) or not (0: it left,
 * or the image ends: exit, exec). Counted once per process. */
static int listening;

void sf_notes_relay_listen(int on)
{
	if (on && __atomic_load_n(&relay_off, __ATOMIC_ACQUIRE))
		return; /* given up on: nobody is to count on this writer */
	if (relay && __atomic_exchange_n(&listening, on, __ATOMIC_ACQ_REL) != on)
		__atomic_add_fetch(&relay->listeners, on ? 1u : (uint32_t)-1, __ATOMIC_ACQ_REL);
}

/* The image ends: lines waiting are noted first (the writer flushes, a
 * bounded wait: sf_writer_drain), then this process stops listening. */
void sf_notes_relay_settle(void)
{
	if (!relay || !__atomic_load_n(&listening, __ATOMIC_ACQUIRE))
		return;
	if (sf_writer_active() && sf_notes_relay_pending())
		sf_writer_drain();
	sf_notes_relay_listen(0);
}

static void chan_forked(void);

/* fork: the child has no writer; it shares the page with its parent (it
 * is the page's reason to be: see struct relay for why the parent is safe
 * from what the child writes there). */
void sf_notes_relay_forked(void)
{
	chan_forked();
	listening = 0;
	relay_rounds = 0;
	relay_wait_mark = 0;
	relay_missed = 0; /* (relay_off stays: the page is still the one given up on) */
}

/* The word a listening writer waits on, and whether lines wait for it. */
uint32_t *sf_notes_relay_word(uint32_t *seen)
{
	if (!relay)
		return NULL;
	*seen = __atomic_load_n(&relay->seq, __ATOMIC_ACQUIRE);
	return &relay->seq;
}

/* Lines wait for this process's writer: the page has some, and the writer
 * has made fewer than two flush rounds since a waiter first saw them. A
 * page that never empties (a child that refills it, or holds its lock)
 * costs a waiter two rounds, not the drain's 10 s. */
int sf_notes_relay_pending(void)
{
	if (!relay || __atomic_load_n(&relay_off, __ATOMIC_ACQUIRE))
		return 0;
	uint32_t n = __atomic_load_n(&relay->len, __ATOMIC_ACQUIRE);
	if (!n || n > sizeof(relay->buf) || __atomic_load_n(&relay->stuck, __ATOMIC_ACQUIRE))
		return 0;
	uint32_t r = __atomic_load_n(&relay_rounds, __ATOMIC_ACQUIRE), mark = 0;
	if (!__atomic_compare_exchange_n(&relay_wait_mark, &mark, r + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		r -= mark - 1; /* rounds since */
	else
		r = 0;
	return r < 2;
}

void sf_notes_init(void)
{
	const char *dir = getenv(SF_ENV(NOTES_DIR));
	size_t n = dir ? strlen(dir) : 0;
	if (!n || dir[0] != '/' || n + 32 >= sizeof(notes_dir))
		return;
	keeper_env();
	const char *why;
	int fd = sf_trust_dir(dir, &why);
	if (fd < 0) {
		sf_rt_message("notes directory not used: ", dir, why);
		return;
	}
	struct stat st;
	if (fstat(fd, &st) == 0) {
		notes_dev = (uint64_t)st.st_dev;
		notes_ino = (uint64_t)st.st_ino;
		notes_uid = st.st_uid;
	}
	sf_close(fd);
	memcpy(notes_dir, dir, n + 1);
	notes_dir_len = n;
	relay_map();
}

/* ---- files made by record's keeper (src/format/keeper_files.h) ----
 * A process that dropped its privileges (setresuid to nobody, in libc or
 * with a raw system call in one thread, then fork) or chrooted may no
 * longer create its log, its note or a snapshot where record wants them.
 * record's keeper, as record's user, makes the file and hands its
 * descriptor back. System calls only (async-signal-safe, no allocation,
 * no stack to speak of: a thread's first event may come on two pages);
 * the socket lives for the one request. */
void sf_fail_set(struct sf_fail *f, const char *call, long r)
{
	if (!f)
		return;
	size_t n = 0;
	for (; call && call[n] && n < sizeof(f->call) - 1; n++)
		f->call[n] = call[n];
	f->call[n] = 0;
	f->err = (int)(r < 0 ? -r : r);
	f->keeper = 0;
}

/* A socket connected to record's keeper (-errno, *f the call that
 * failed): timeouts set, never 0-2. */
static long keeper_connect(struct sf_fail *f)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t alen = sf_kf_name(a.sun_path + 1, notes_dev, notes_ino, keeper_salt);
	long s = sf_syscall3(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0) {
		sf_fail_set(f, "socket", s);
		return s;
	}
	s = sf_fd_brief((int)s); /* never 0-2: those are the program's to get */
	if (s < 0) {
		sf_fail_set(f, "fcntl", -EMFILE); /* (F_DUPFD_CLOEXEC: no number above 2) */
		return -EMFILE;
	}
	/* A keeper that does not answer (its backlog full, stopped) costs
	 * this file, never a hang: connect and send wait at most this long,
	 * and so does the answer. */
	struct timeval tv = {5, 0};
	sf_syscall6(SYS_setsockopt, s, SOL_SOCKET, SO_SNDTIMEO, (long)&tv, sizeof(tv), 0);
	sf_syscall6(SYS_setsockopt, s, SOL_SOCKET, SO_RCVTIMEO, (long)&tv, sizeof(tv), 0);
	long r = sf_syscall3(SYS_connect, s, (long)&a, (long)(offsetof(struct sockaddr_un, sun_path) + 1 + alen));
	if (r < 0) {
		sf_fail_set(f, "connect", r);
		sf_syscall3(SYS_close, s, 0, 0);
		return r;
	}
	return s;
}

/* ---- a channel handed down at fork (issue 24) ----
 * The keeper's abstract socket lives in the network namespace record
 * started in. A thread that moved to another one (unshare(CLONE_NEWNET),
 * setns: per thread, ns.c sets sf_netns_moved) cannot connect to it any
 * more, nor can the children it forks. The writer thread (a fork child's
 * keeper, made before the move) can: it stays where it was. So before
 * such a thread forks, the server (writer or keeper) asks record's keeper
 * for a channel (SF_KF_CHAN: one end of a socket pair the keeper serves),
 * the forking thread takes a copy of it into the program's table for the
 * fork (pidfd_getfd: same thread group), and the child inherits it: its
 * keeper keeps it in its own table (writer.c), the program's copy is
 * closed at once, and the child makes its log over it and keeps it for
 * its later requests and for its own children's channels, asked over it:
 * a child whose own keeper is out of record's namespace (made from a
 * moved thread) still has a way back, at any depth. The parent closes its
 * copy after the fork. Each request sends the asker's credentials along
 * (SCM_CREDENTIALS, which the kernel checks), and the keeper takes them
 * from a descendant of the process the channel was made for
 * (record_files.c). */
static int chan = -1; /* this process's channel, in its server's table */
/* The last failed hand-over of a channel for a fork (sf_keeper_conn_for_fork):
 * what failed and the call that did, inherited by the child that got none. */
static const char *handover_fail;
static struct sf_fail handover_f;
static uint64_t chan_dev, chan_ino;
static uint32_t chan_lock;

/* On the server: a channel from record's keeper (-errno, *f the call that failed). */
static long chan_req(void *f)
{
	long fd = sf_recfile(SF_KF_CHAN, 0, NULL, -1, NULL, 0, f);
	if (fd >= 0) { /* as a connection's (keeper_connect): a keeper that does not answer costs a file, never a hang */
		struct timeval tv = {5, 0};
		sf_syscall6(SYS_setsockopt, fd, SOL_SOCKET, SO_SNDTIMEO, (long)&tv, sizeof(tv), 0);
		sf_syscall6(SYS_setsockopt, fd, SOL_SOCKET, SO_RCVTIMEO, (long)&tv, sizeof(tv), 0);
	}
	return fd;
}

static long close_req(void *fd)
{
	sf_syscall3(SYS_close, (long)fd, 0, 0);
	return 0;
}

/* ---- the channel handed over without pidfd_getfd ----
 * Where pidfd_getfd is refused (Docker's default profile: EPERM without
 * CAP_SYS_PTRACE), the server sends its copy over a unix socket instead
 * (SCM_RIGHTS): the forking thread listens, for the hand-over only, on a
 * path in the run's private directory (a path, not an abstract name: the
 * two threads are in different network namespaces; the directory only
 * record's user may create in), the server connects and sends, the
 * forking thread takes it from a peer of its own process (SO_PEERCRED)
 * and removes the path. */
struct hand {
	const char *path;
	size_t plen;
	int fd;
};

/* On the server: wfd (its channel copy) sent to the listener at h->path. */
static long hand_req(void *arg)
{
	struct hand *h = arg;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path, h->path, h->plen + 1);
	long s = sf_syscall3(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return s;
	long r = sf_syscall3(SYS_connect, s, (long)&a, (long)(offsetof(struct sockaddr_un, sun_path) + h->plen + 1));
	if (r == 0) {
		char b = 'c';
		struct iovec iv = {&b, 1};
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl;
		memset(&ctl, 0, sizeof(ctl));
		struct msghdr m = {.msg_iov = &iv, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &h->fd, sizeof(int));
		do
			r = sf_syscall3(SYS_sendmsg, s, (long)&m, MSG_NOSIGNAL);
		while (r == -EINTR);
	}
	sf_syscall3(SYS_close, s, 0, 0);
	return r < 0 ? r : 0;
}

/* On the forking thread: the server's wfd, in this table (-errno); over
 * an abstract name (abstract: the server is in this thread's network
 * namespace, as a keeper made after the move is, and the path may be out
 * of reach after a chroot) or a path in the private directory. */
static long hand_over_at(long wfd, int abstract)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	size_t n = 0;
	if (abstract) {
		path[n++] = 0;
		const char pre[] = "sftrace-hand-";
		for (const char *q = pre; *q; q++)
			path[n++] = *q;
		uint64_t rnd = 0;
		sf_syscall3(SYS_getrandom, (long)&rnd, sizeof(rnd), 1 /* GRND_NONBLOCK */);
		for (int i = 0; i < 16; i++, rnd >>= 4)
			path[n++] = "0123456789abcdef"[rnd & 15];
		path[n++] = '-';
	} else {
		for (size_t i = 0; i < notes_dir_len && n < sizeof(path) - 24; i++)
			path[n++] = notes_dir[i];
		if (n != notes_dir_len)
			return -ENAMETOOLONG;
		const char pre[] = "/hand.";
		for (const char *q = pre; *q; q++)
			path[n++] = *q;
	}
	char num[12], *d = num + sizeof(num);
	*--d = 0;
	for (unsigned long v = (unsigned long)sf_syscall3(SYS_gettid, 0, 0, 0); v || !*d; v /= 10)
		*--d = (char)('0' + v % 10);
	while (*d)
		path[n++] = *d++;
	path[n] = 0;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path, path, n + 1);
	long l = sf_syscall3(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return l;
	l = sf_fd_brief((int)l);
	if (l < 0)
		return -EMFILE;
	if (!abstract)
		sf_syscall3(SYS_unlinkat, AT_FDCWD, (long)path, 0); /* a hand-over's left by a killed one of this tid */
	long r = sf_syscall3(SYS_bind, l, (long)&a, (long)(offsetof(struct sockaddr_un, sun_path) + n + 1));
	if (r == 0)
		r = sf_syscall3(SYS_listen, l, 1, 0);
	struct hand h = {path, n, (int)wfd};
	if (r == 0) {
		r = sf_writer_call(hand_req, &h);
		if (r == SF_WRITER_REFUSED)
			r = -EPERM;
	}
	long fd = -1;
	if (r == 0) {
		long c = sf_syscall6(SYS_accept4, l, 0, 0, SOCK_CLOEXEC, 0, 0);
		if (c >= 0) {
			struct ucred cr;
			socklen_t cl = sizeof(cr);
			char b;
			struct iovec iv = {&b, 1};
			union {
				char buf[CMSG_SPACE(sizeof(int))];
				struct cmsghdr align;
			} ctl;
			struct msghdr m = {.msg_iov = &iv, .msg_iovlen = 1, .msg_control = ctl.buf,
					   .msg_controllen = sizeof(ctl.buf)};
			long got = -1;
			if (sf_syscall6(SYS_getsockopt, c, SOL_SOCKET, SO_PEERCRED, (long)&cr, (long)&cl, 0) == 0 &&
			    cr.pid == (pid_t)sf_syscall3(SYS_getpid, 0, 0, 0)) {
				do
					got = sf_syscall3(SYS_recvmsg, c, (long)&m, MSG_CMSG_CLOEXEC);
				while (got == -EINTR);
			}
			struct cmsghdr *cm = got == 1 ? CMSG_FIRSTHDR(&m) : NULL;
			if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
			    cm->cmsg_len == CMSG_LEN(sizeof(int))) {
				int v;
				memcpy(&v, CMSG_DATA(cm), sizeof(int));
				fd = v;
			}
			sf_syscall3(SYS_close, c, 0, 0);
			r = fd >= 0 ? 0 : -EPROTO;
		} else {
			r = c;
		}
	}
	sf_syscall3(SYS_close, l, 0, 0);
	if (!abstract)
		sf_syscall3(SYS_unlinkat, AT_FDCWD, (long)path, 0);
	return fd >= 0 ? fd : r;
}

static long hand_over(long wfd)
{
	if (!sf_seccomp_allows(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, 0, 0, 0) ||
	    !sf_seccomp_allows_fd_call(SYS_bind, 0, 0) || !sf_seccomp_allows_fd_call(SYS_listen, 1, 0) ||
	    !sf_seccomp_allows_fd_call(SYS_accept4, 0, 0) || !sf_seccomp_allows_fd_call(SYS_recvmsg, 0, 0) ||
	    !sf_seccomp_allows_fd_call(SYS_getsockopt, SOL_SOCKET, SO_PEERCRED) ||
	    !sf_seccomp_allows(SYS_getrandom, 0, 8, 1, 0, 0, 0) || !sf_seccomp_allows(SYS_unlinkat, AT_FDCWD, 0, 0, 0, 0, 0))
		return -EPERM;
	long fd = hand_over_at(wfd, 1);
	return fd >= 0 ? fd : hand_over_at(wfd, 0);
}

/* In the parent, before a fork from a thread that left record's network
 * namespace: the channel in this table (-1: none, nothing needed). */
int sf_keeper_conn_for_fork(void)
{
	int keeper = sf_keeper_alive();
	if (!sf_netns_moved || !notes_dir_len || !notes_ino || !(sf_writer_active() || keeper) ||
	    !sf_writer_private() || sf_writer_on_thread())
		return -1;
	handover_fail = NULL;
	struct sf_fail cf;
	sf_fail_set(&cf, NULL, 0);
	long wfd = sf_writer_call(chan_req, &cf);
	if (wfd < 0 || wfd == SF_WRITER_REFUSED) {
		/* whose call failed: the keeper's (its answer names it), or the
		 * server's request to it (cf, set on the server's thread, read
		 * after the call returned) */
		handover_fail = cf.keeper ? "the keeper could not make a channel to it for its parent"
					  : "its parent could not ask the keeper for a channel to it";
		handover_f = cf;
		if (wfd == SF_WRITER_REFUSED)
			sf_fail_set(&handover_f, NULL, 0); /* the server took no request: nothing was called */
		else if (!handover_f.err)
			handover_f.err = (int)-wfd;
		return -1;
	}
	/* a seccomp filter the runtime saw installed (sandbox.c) is asked
	 * first: a route it refuses is not taken (its verdict may be a kill) */
	int open_ok = sf_seccomp_allows(SYS_pidfd_open, 1, O_EXCL, 0, 0, 0, 0);
	int pidfd_ok = open_ok && sf_seccomp_allows_fd_call(SYS_pidfd_getfd, 1, 0);
	long fd = -1, pidfd = pidfd_ok ? sf_syscall3(SYS_pidfd_open, keeper ? sf_keeper_tid() : sf_writer_tid(),
						     O_EXCL /* PIDFD_THREAD */, 0)
				       : -EPERM;
	if (pidfd >= 0) {
		fd = sf_syscall3(SYS_pidfd_getfd, pidfd, wfd, 0); /* close-on-exec */
		sf_syscall3(SYS_close, pidfd, 0, 0);
		long gerr = fd;
		if (fd < 0 && (fd = hand_over(wfd)) < 0) {
			/* the call named is the route's own; the way round's is in the text */
			handover_fail = "its parent could not hand it the keeper's channel (nor through a unix socket)";
			sf_fail_set(&handover_f, "pidfd_getfd", gerr);
		}
	} else if ((fd = hand_over(wfd)) < 0) {
		handover_fail = "its parent could not hand it the keeper's channel (nor through a unix socket)";
		/* (pidfd_ok 0: the seccomp filter the runtime saw refuses one
		 * of the two, sandbox.c, and neither was made) */
		sf_fail_set(&handover_f, pidfd_ok || !open_ok ? "pidfd_open" : "pidfd_getfd", pidfd);
	}
	sf_writer_call(close_req, (void *)wfd);
	return fd < 0 ? -1 : sf_fd_brief((int)fd);
}

/* Why a process forked outside record's network namespace cannot reach
 * record's keeper (its parent's hand-over failed: the reason inherited at
 * the fork), or NULL; *f the call that failed (err 0: none known). */
const char *sf_keeper_unreachable(struct sf_fail *f)
{
	sf_fail_set(f, NULL, 0);
	if (keeper_refused[0])
		return keeper_refused;
	if (handover_fail) {
		*f = handover_f;
		return handover_fail;
	}
	if (sf_netns_moved && !(chan >= 0))
		return "it runs outside record's network namespace, where the keeper cannot be reached";
	return NULL;
}

/* In a fork child (writer.c's reset): the parent's channel is not in
 * this table (its server's table was not copied). */
static void chan_forked(void)
{
	chan = -1;
	chan_lock = 0;
}

/* In the child (hooks.c): fd, inherited, its channel from now on. */
void sf_keeper_conn_handed(int fd)
{
	handover_fail = NULL;
	sf_fail_set(&handover_f, NULL, 0);
	struct stat st;
	if (fd < 0 || sf_syscall3(SYS_fstat, fd, (long)&st, 0) < 0)
		return;
	chan = fd;
	chan_dev = (uint64_t)st.st_dev;
	chan_ino = (uint64_t)st.st_ino;
}

/* In the child, after its log was made: the channel kept where a keeper
 * holds it, else closed (it would sit in the program's table). */
void sf_keeper_conn_drop(void)
{
	struct stat st;
	int fd = chan;
	if (fd < 0 || sf_keeper_alive())
		return;
	chan = -1;
	if (sf_syscall3(SYS_fstat, fd, (long)&st, 0) == 0 && (uint64_t)st.st_dev == chan_dev &&
	    (uint64_t)st.st_ino == chan_ino)
		sf_syscall3(SYS_close, fd, 0, 0);
}

int sf_recfile_keeper(void)
{
	return notes_dir_len && notes_ino;
}

int sf_recfile(int op, int first, const char *name, int send_fd, char *path, size_t cap, struct sf_fail *f)
{
	sf_fail_set(f, NULL, 0);
	if (!notes_dir_len || !notes_ino) {
		sf_fail_set(f, NULL, -ENOENT); /* no record: no keeper, no call */
		return -ENOENT;
	}
	if (keeper_none) {
		refused_say("record holds no name for its keeper, so nobody was asked", -1, "");
		sf_fail_set(f, NULL, -ECONNREFUSED);
		return -ECONNREFUSED;
	}
	long s = -1, r = 0;
	int own = -1; /* the channel: the credentials go along, and it stays open */
	if (chan >= 0 && !__atomic_exchange_n(&chan_lock, 1, __ATOMIC_ACQUIRE)) {
		/* (taken: a handler interrupted its own thread's request, or
		 * another thread asks without a server: a connection of its own) */
		struct stat st;
		own = chan;
		if (sf_syscall3(SYS_fstat, own, (long)&st, 0) < 0 || (uint64_t)st.st_dev != chan_dev ||
		    (uint64_t)st.st_ino != chan_ino)
			own = -1; /* not in this thread's table: a file of the program's there, not ours to use */
		if (own < 0)
			__atomic_store_n(&chan_lock, 0, __ATOMIC_RELEASE);
		s = own;
	}
	if (s < 0) {
		s = keeper_connect(f);
		if (s < 0)
			return (int)s;
	}
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	/* Answers only from record's user: the name is no secret. And on a
	 * new connection only from record's keeper itself (its pid, the
	 * listener's): whoever else listens on the name is told nothing and
	 * waited for never (nothing sent, nothing read). A keeper outside
	 * this process's pid namespace shows as pid 0: its uid only. */
	long gr = r ? 0 : sf_syscall6(SYS_getsockopt, s, SOL_SOCKET, SO_PEERCRED, (long)&cr, (long)&cl, 0);
	if (gr < 0) {
		sf_fail_set(f, "getsockopt", gr);
		r = -EPERM;
	}
	if (r == 0 && cr.uid != notes_uid) {
		refused_say("another user's process holds record's keeper's name, and was not asked", -1, "");
		r = -EPERM;
		sf_fail_set(f, NULL, r); /* a check, no call */
	}
	if (r == 0 && own < 0 && keeper_pid && cr.pid && cr.pid != keeper_pid) {
		refused_say("record's keeper's name is held by another process (pid ", (long)cr.pid,
			    "), which was not asked");
		r = -ECONNREFUSED;
		sf_fail_set(f, NULL, r);
	}
	struct sf_kf_req hdr = {.magic = SF_KF_MAGIC, .op = (uint32_t)op, .first = (uint32_t)first};
	union {
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} ctl;
	struct iovec iv[2] = {{&hdr, offsetof(struct sf_kf_req, name)}, {(void *)(name ? name : ""), 1}};
	if (name)
		iv[1].iov_len = strlen(name) + 1;
	struct msghdr m = {.msg_iov = iv, .msg_iovlen = 2};
	if (send_fd >= 0 || own >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.buf;
		m.msg_controllen = (send_fd >= 0 ? CMSG_SPACE(sizeof(int)) : 0) +
				   (own >= 0 ? CMSG_SPACE(sizeof(struct ucred)) : 0);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		if (send_fd >= 0) {
			h->cmsg_level = SOL_SOCKET;
			h->cmsg_type = SCM_RIGHTS;
			h->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(h), &send_fd, sizeof(int));
			h = CMSG_NXTHDR(&m, h);
		}
		if (own >= 0) { /* who asks: this process, not the one that connected */
			struct ucred me = {(pid_t)sf_syscall3(SYS_getpid, 0, 0, 0), (uid_t)sf_syscall3(SYS_geteuid, 0, 0, 0),
					   (gid_t)sf_syscall3(SYS_getegid, 0, 0, 0)};
			h->cmsg_level = SOL_SOCKET;
			h->cmsg_type = SCM_CREDENTIALS;
			h->cmsg_len = CMSG_LEN(sizeof(struct ucred));
			memcpy(CMSG_DATA(h), &me, sizeof(me));
		}
	}
	if (r == 0) {
		do
			r = sf_syscall3(SYS_sendmsg, s, (long)&m, MSG_NOSIGNAL);
		while (r == -EINTR);
		if (r < 0)
			sf_fail_set(f, "sendmsg", r);
		r = r < 0 ? r : 0;
	}
	int32_t rep[2] = {0, 0}; /* err, and the keeper's call that failed (SF_KF_CALL_*) */
	char none[1];
	struct iovec ov[2] = {{rep, sizeof(rep)}, {path ? path : none, path ? cap : sizeof(none)}};
	struct msghdr in = {.msg_iov = ov, .msg_iovlen = 2, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
	int fd = -1;
	if (r == 0) {
		do
			r = sf_syscall3(SYS_recvmsg, s, (long)&in, MSG_CMSG_CLOEXEC);
		while (r == -EINTR);
		if (r < 0)
			sf_fail_set(f, "recvmsg", r);
		if (r >= 0 && r < (long)sizeof(rep)) {
			r = -ECONNREFUSED; /* closed unanswered: refused */
			sf_fail_set(f, NULL, r);
		}
		for (struct cmsghdr *h = r > 0 ? CMSG_FIRSTHDR(&in) : NULL; h; h = CMSG_NXTHDR(&in, h))
			if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len >= CMSG_LEN(sizeof(int)))
				memcpy(&fd, CMSG_DATA(h), sizeof(int));
	}
	if (own >= 0) {
		if (r < 0 && r != -EPERM) { /* no answer in time: a late one would be taken for the next */
			chan = -1;
			sf_syscall3(SYS_close, s, 0, 0);
		}
		__atomic_store_n(&chan_lock, 0, __ATOMIC_RELEASE);
	} else {
		sf_syscall3(SYS_close, s, 0, 0);
	}
	if (r < 0)
		return fd >= 0 ? (sf_syscall3(SYS_close, fd, 0, 0), (int)r) : (int)r;
	if (path && cap)
		path[cap - 1] = 0;
	if (rep[0]) {
		if (fd >= 0)
			sf_syscall3(SYS_close, fd, 0, 0);
		sf_fail_set(f, sf_kf_call_name((uint32_t)rep[1]), rep[0]); /* (NULL: a check, or an older keeper) */
		if (f)
			f->keeper = 1;
		return -rep[0];
	}
	return fd >= 0 ? fd : 0;
}

/* Opens (creating it 0600) this process's note file, named for its pid
 * taken now: a forked child writes its own file. The directory is checked
 * again each time (trust.c): record may be gone and the name taken by
 * someone else. Async-signal-safe; -1 when there is no trusted file. */
static int note_open(void)
{
	if (!notes_dir_len)
		return -1;
	char name[16], tmp[16];
	int k = 0;
	size_t n = 0;
	for (unsigned pid = (unsigned)getpid(); pid || !k; pid /= 10)
		tmp[k++] = (char)('0' + pid % 10);
	while (k)
		name[n++] = tmp[--k];
	name[n] = 0;
	const char *why;
	int dfd = sf_trust_dir(notes_dir, &why);
	int fd = dfd < 0 ? -1 : sf_trust_open(dfd, name, O_WRONLY | O_CREAT | O_APPEND, 0600, &why);
	if (dfd >= 0)
		sf_close(dfd);
	sf_own_mode(fd); /* (made here, or record's: its own 0600 already) */
	if (fd < 0) /* a process that may not create it there: record's keeper can */
		fd = sf_recfile(SF_KF_NOTE, 0, NULL, -1, NULL, 0, NULL);
	return fd < 0 ? -1 : sf_fd_brief(fd);
}

/* Async-signal-safe: open, write, close. 1 if the line was written. */
static int note_write_here(const char *line, size_t len)
{
	if (__atomic_load_n(&sf_sandbox_no_notes, __ATOMIC_ACQUIRE) && !sf_writer_on_thread())
		return 0; /* a seccomp filter refuses a call of the note's (sandbox.c) */
	int fd = note_open();
	if (fd < 0)
		return 0;
	ssize_t r = write(fd, line, len);
	sf_close(fd);
	return r == (ssize_t)len;
}

struct note_line {
	const char *line;
	size_t len;
	uid_t to;
};

static long note_write_req(void *arg)
{
	const struct note_line *n = arg;
	return note_write_here(n->line, n->len);
}

/* In a clone(CLONE_FILES) child the note's descriptor is the keeper's
 * (writer.c): the table the child shares with its parent never holds
 * it, even when the child is killed meanwhile. */
static int on_keeper(long (*fn)(void *), void *arg, long *ret)
{
	if (!sf_keeper_alive() || sf_writer_on_thread())
		return 0;
	*ret = sf_writer_call(fn, arg);
	return *ret != SF_WRITER_REFUSED;
}

/* 1 if the line is in the notes. */
static int note_write(const char *line, size_t len)
{
	struct note_line n = {line, len, 0};
	long r;
	if (on_keeper(note_write_req, &n, &r))
		return r == 1;
	return note_write_here(line, len);
}

/* Before the process takes another effective uid (hooks.c), as root: its
 * note file is made now and given to that uid, so that it, or a program
 * it execs as that user (start-stop-daemon --chuid, su), can still say
 * why it wrote no log. record's directory is 0711 for that: a file in it
 * can be opened by its name, but nobody else can list the directory or
 * create anything in it. */
static void hand_over_here(uid_t to)
{
	uid_t me = geteuid();
	if (me != 0 || to == (uid_t)-1 || to == me)
		return;
	int fd = note_open();
	if (fd < 0)
		return;
	sf_syscall3(SYS_fchown, fd, (long)to, -1);
	sf_close(fd);
}

static long hand_over_req(void *arg)
{
	hand_over_here(((const struct note_line *)arg)->to);
	return 0;
}

void sf_notes_hand_over(uid_t to)
{
	struct note_line n = {NULL, 0, to};
	long r;
	if (!on_keeper(hand_over_req, &n, &r))
		hand_over_here(to);
}

static void put(char *buf, size_t cap, size_t *pos, const char *s)
{
	while (*s && *pos + 1 < cap)
		buf[(*pos)++] = *s++;
}

static void put_u(char *buf, size_t cap, size_t *pos, uint64_t v)
{
	char tmp[24];
	int k = 0;
	do
		tmp[k++] = (char)('0' + v % 10);
	while (v /= 10);
	while (k && *pos + 1 < cap)
		buf[(*pos)++] = tmp[--k];
}

static void note_object(const struct sf_object_rt *o)
{
	static const char hex[] = "0123456789abcdef";
	char line[4096 + 256];
	size_t pos = 0;
	put(line, sizeof(line), &pos, "object ");
	put_u(line, sizeof(line), &pos, o->info.sleds);
	put(line, sizeof(line), &pos, " ");
	put_u(line, sizeof(line), &pos, o->info.patched);
	put(line, sizeof(line), &pos, " ");
	for (unsigned i = 0; i < o->info.build_id_len && pos + 3 < sizeof(line); i++) {
		line[pos++] = hex[o->info.build_id[i] >> 4];
		line[pos++] = hex[o->info.build_id[i] & 15];
	}
	if (!o->info.build_id_len)
		put(line, sizeof(line), &pos, "-");
	put(line, sizeof(line), &pos, " ");
	put(line, sizeof(line), &pos, o->path);
	line[pos++] = '\n';
	note_write(line, pos);
}

/* Runs before the runtime's own destructor (priority 101). */
__attribute__((destructor(102))) static void notes_at_exit(void)
{
	if (notes_dir_len && sf_config.enabled && !sf_log_ready() && !__atomic_load_n(&sf_sandbox_limited, __ATOMIC_ACQUIRE))
		sf_objects_foreach_instrumented(note_object);
	uint32_t vm = sf_config.enabled ? sf_buffer_vm_children() : 0;
	if (vm) {
		char n[16];
		size_t pos = 0;
		put_u(n, sizeof(n), &pos, vm);
		n[pos] = 0;
		sf_rt_report("clone(CLONE_VM) without CLONE_THREAD (a system call of the program's): threads not recorded: ", n, NULL);
	}
}

/* What descriptor 2 was when the process started (closed: st_nlink 0
 * kept as "none"). Messages go to it only while it is still that file: a
 * program that closed stderr and opened a file of its own, which took
 * number 2, must find that file holding exactly what it wrote. */
static struct {
	int open;
	dev_t dev;
	ino_t ino;
} err_at_start;

void sf_messages_init(void)
{
	struct stat st;
	if (sf_syscall3(SYS_fstat, 2, (long)&st, 0) == 0) {
		err_at_start.open = 1;
		err_at_start.dev = st.st_dev;
		err_at_start.ino = st.st_ino;
	}
}

static int stderr_is_ours_to_write(void)
{
	struct stat st;
	return err_at_start.open && sf_syscall3(SYS_fstat, 2, (long)&st, 0) == 0 && st.st_dev == err_at_start.dev &&
	       st.st_ino == err_at_start.ino;
}

/* Bytes of the character at p a terminal must not get raw (as the CLI's
 * sf_esc_unsafe, lib/text_esc.c): C0 controls and DEL, the C1 controls
 * U+0080..U+009F, bytes that are not UTF-8. 0: a character that passes,
 * *len bytes long. */
static size_t esc_unsafe(const unsigned char *p, size_t *len)
{
	*len = 1;
	if (*p < 0x20 || *p == 0x7f)
		return 1;
	if (*p < 0x80)
		return 0;
	size_t n = *p >= 0xc2 && *p <= 0xdf ? 2 : *p >= 0xe0 && *p <= 0xef ? 3 : *p >= 0xf0 && *p <= 0xf4 ? 4 : 0;
	if (!n)
		return 1;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 1; /* (a NUL ends the scan: no continuation byte) */
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) || (p[0] == 0xf0 && p[1] < 0x90) ||
	    (p[0] == 0xf4 && p[1] >= 0x90))
		return 1; /* overlong, a surrogate, past U+10FFFF */
	if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0)
		return 2;
	*len = n;
	return 0;
}

/* Appends s to buf[n..cap) with what a terminal must not get raw as
 * "\xHH" (issue 24: a path is the program's data; the line reaches the
 * program's stderr and record's notes). A character that does not fit
 * whole is left out. Returns the new length. */
static size_t put_esc(char *buf, size_t cap, size_t n, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (p && *p) {
		size_t len, bad = esc_unsafe(p, &len);
		if (bad) {
			if (n + 4 * bad > cap)
				break;
			for (size_t i = 0; i < bad; i++, n += 4) {
				buf[n] = '\\';
				buf[n + 1] = 'x';
				buf[n + 2] = "0123456789abcdef"[p[i] >> 4];
				buf[n + 3] = "0123456789abcdef"[p[i] & 15];
			}
			p += bad;
		} else {
			if (n + len > cap)
				break;
			for (size_t i = 0; i < len; i++)
				buf[n++] = (char)p[i];
			p += len;
		}
	}
	return n;
}

/* to_stderr 3: only if it could not be noted, and the note is a report,
 * which record prints whether or not a log was written (a loss is
 * sf_rt_lost's). */
static void rt_message(const char *a, const char *b, const char *c, int to_stderr)
{
	char buf[1024];
	size_t n = 0;
	/* "report " in the note only: on stderr the line is a message */
	const char *parts[] = {"sftrace: ", a, b, c ? ": " : "", c};
	if (to_stderr == 3) {
		const char *rep = "report ";
		while (*rep)
			buf[n++] = *rep++;
	}
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		n = put_esc(buf, sizeof(buf) - 1, n, parts[i]);
	buf[n++] = '\n';
	int noted = note_write(buf, n); /* record repeats it if no log was written */
	size_t skip = to_stderr == 3 ? 7 : 0; /* "report " */
	if ((to_stderr == 1 || (to_stderr == 3 && !noted)) && !sf_writer_defer_message(buf + skip, n - skip))
		sf_messages_print(buf + skip, n - skip); /* (the writer's table has no stderr) */
}

/* One line on stderr, and in the notes for record (note_write). */
void sf_rt_message(const char *a, const char *b, const char *c)
{
	rt_message(a, b, c, 1);
}

/* A process that gets no log: under record the program's stderr stays
 * its own (issue 24: a worker that dropped to nobody found "sftrace:
 * cannot create log" in its own stderr file). The note reaches record
 * from any uid or root (note_open: record's keeper makes the file), or
 * a writer of the fork family relays it (relay_put), and record says
 * "pid N (PROG) wrote no log: ..." (record_why.c). Only where it could
 * not be noted (no free descriptor at all: EMFILE; without record) is
 * stderr the one place left: a loss is never silent.
 *
 * The note is "loss CALL ERRNO PROG\tTEXT" (docs/FORMAT.md): the failed
 * call and its errno as fields, taken from where the call failed (struct
 * sf_fail), so that record names them as they were, not as a message's
 * words would suggest; PROG the program's short name (glibc's, set at
 * start), escaped as TEXT is. */
void sf_rt_lost(const char *a, const char *b, const char *c, const struct sf_fail *f)
{
	char text[1024];
	size_t t = 0;
	const char *parts[] = {a, b, c};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		t = put_esc(text, sizeof(text) - 1, t, parts[i]);
	text[t] = 0;
	const char *call = f && f->call[0] ? f->call : "-";
	int err = f ? f->err : 0;
	const char *prog = program_invocation_short_name;
	char line[sizeof(text) + 320];
	size_t n = 0;
	put(line, sizeof(line), &n, "loss ");
	put(line, sizeof(line), &n, call);
	put(line, sizeof(line), &n, " ");
	put_u(line, sizeof(line), &n, (uint64_t)(err < 0 ? 0 : err));
	put(line, sizeof(line), &n, " ");
	size_t p0 = n;
	n = put_esc(line, 256 + n, n, prog ? prog : "");
	if (n == p0)
		put(line, sizeof(line), &n, "-");
	put(line, sizeof(line), &n, "\t");
	put(line, sizeof(line), &n, text);
	line[n++] = '\n';
	if (note_write(line, n) || relay_put(line, n)) /* a writer of the family notes it */
		return;
	/* the one place left: "sftrace: TEXT: CALL: STRERROR" */
	n = 0;
	put(line, sizeof(line), &n, "sftrace: ");
	put(line, sizeof(line), &n, text);
	if (f && f->call[0]) {
		put(line, sizeof(line), &n, ": ");
		put(line, sizeof(line), &n, f->call);
	}
	if (err > 0) {
		put(line, sizeof(line), &n, ": ");
		put(line, sizeof(line), &n, strerror(err));
	}
	line[n++] = '\n';
	if (!sf_writer_defer_message(line, n))
		sf_messages_print(line, n); /* (the writer's table has no stderr) */
}

/* Something record says after the run, log or not ("sftrace: pid N:
 * ..." , record_why.c): a process that records less than it runs (a
 * clone(CLONE_VM) child, hooks.c). Under record the program's stderr
 * stays its own; without record (no note) the line goes to stderr. */
void sf_rt_report(const char *a, const char *b, const char *c)
{
	rt_message(a, b, c, 3);
}

/* A message line on stderr, if it is still the one the process started with. */
void sf_messages_print(const char *buf, size_t n)
{
	if (stderr_is_ours_to_write()) {
		ssize_t r = write(2, buf, n);
		(void)r;
	}
}
