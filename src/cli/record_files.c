/* record's keeper makes the files a traced process may no longer make
 * itself (src/format/keeper_files.h has the why and the protocol).
 *
 * Every request is checked against who asks, not what it says: the pid is
 * the kernel's (SO_PEERCRED; or the sender's SCM_CREDENTIALS, which the
 * kernel checks, when the sender descends from the process that connected:
 * a fork child asking over a connection handed down to it), it must be a
 * descendant of the keeper (its
 * parent chain in /proc reaches the keeper, the subreaper of every process
 * of the command), and the names are the keeper's: a log is
 * <stem>.<pid>[.<n>]<ext> beside record's log (or record's log itself for
 * the command's first process), a note the pid's file in the private
 * directory, a snapshot <stem>.snap.<pid>.<n><ext>. Files are created
 * O_EXCL, O_NOFOLLOW, mode 0600, owned by record's user; one opened again
 * must be a regular file of that user with one link. */
#include "cli/record_files.h"
#include "format/sf_env.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "format/keeper_files.h"
#include "format/sflog.h"

static struct {
	char notes[PATH_MAX];
	char dir[PATH_MAX];  /* the logs' directory, with its trailing '/' */
	char stem[PATH_MAX]; /* record's log name without its extension, no directory */
	char ext[PATH_MAX];  /* its extension ("" for none) */
	char log[PATH_MAX];  /* record's log */
} K;

/* The keeper's socket, bound by record (rfiles_bind) before the keeper
 * forks: the name is taken when bind succeeds, by nobody else. */
static int bound = -1, bound_err = EINVAL;
static uint64_t bound_salt; /* the name's salt (keeper_files.h), 0 for none */

static int bind_name(uint64_t dev, uint64_t ino, uint64_t salt)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (fd < 3) { /* the keeper puts /dev/null on 0-2 */
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = high;
		if (fd < 0)
			return -1;
	}
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = sf_kf_name(a.sun_path + 1, dev, ino, salt);
	if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int rfiles_bind(uint64_t dev, uint64_t ino, uint64_t salt)
{
	if (bound >= 0)
		close(bound);
	bound = -1;
	/* Test only: another keeper already holding this name (a keeper of a
	 * run whose private directory had the same inode, removed but not yet
	 * exited). The squatter stays bound for record's life. */
	const char *sq = getenv(SF_ENV(TEST_KEEPER_SQUAT));
	static int squatted;
	if (sq && !salt && squatted < atoi(sq)) {
		squatted++;
		if (bind_name(dev, ino, 0) < 0)
			return -1;
	}
	bound = bind_name(dev, ino, salt);
	bound_err = bound < 0 ? errno : 0;
	bound_salt = bound < 0 ? 0 : salt;
	return bound;
}

uint64_t rfiles_salt(void)
{
	return bound_salt;
}

void rfiles_forget(void)
{
	if (bound >= 0)
		close(bound);
	bound = -1;
}

int rfiles_listen(const char *notes, const char *log)
{
	size_t len = strlen(log), dot = sf_log_ext_start(log, len), slash = 0;
	for (size_t i = 0; i < len; i++)
		if (log[i] == '/')
			slash = i + 1;
	if (log[0] != '/' || len >= sizeof(K.log) || strlen(notes) >= sizeof(K.notes)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(K.notes, sizeof(K.notes), "%s", notes);
	snprintf(K.log, sizeof(K.log), "%s", log);
	snprintf(K.dir, sizeof(K.dir), "%.*s", (int)slash, log);
	snprintf(K.stem, sizeof(K.stem), "%.*s", (int)(dot - slash), log + slash);
	snprintf(K.ext, sizeof(K.ext), "%s", log + dot);
	if (bound < 0) {
		errno = bound_err;
		return -1;
	}
	int fd = bound;
	bound = -1;
	if (listen(fd, 64) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The system call that failed in the request being answered (0: a check
 * refused it), for the answer (SF_KF_CALL_*). Only the serving thread
 * sets it. */
static uint32_t failed_call;

static int failed(uint32_t call)
{
	int e = errno;
	failed_call = call;
	return -e;
}

/* 1 if pid is a descendant of anc. */
static int descends(pid_t pid, pid_t anc)
{
	pid_t me = anc;
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		ssize_t r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			return 0;
		buf[r] = 0;
		char *p = strrchr(buf, ')');
		int ppid;
		if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
			return 0;
		if (ppid == me)
			return 1;
		pid = ppid;
	}
	return 0;
}

/* 1 if pid is a descendant of this process (the keeper). */
static int descendant(pid_t pid)
{
	return descends(pid, getpid());
}

/* A file the keeper may hand out again: regular, its own, one link. */
static int own_regular(int fd, int links)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == (nlink_t)links;
}

static int log_name(char *out, size_t cap, pid_t pid, int attempt)
{
	if (!attempt)
		return snprintf(out, cap, "%s", K.log) >= (int)cap ? -1 : 0;
	if (attempt == 1)
		return snprintf(out, cap, "%s%s.%d%s", K.dir, K.stem, (int)pid, K.ext) >= (int)cap ? -1 : 0;
	return snprintf(out, cap, "%s%s.%d.%d%s", K.dir, K.stem, (int)pid, attempt - 1, K.ext) >= (int)cap ? -1 : 0;
}

/* The logs made here, by pid: only those are opened again, for their
 * pid (the last MADE; older ones were long adopted). */
#define MADE 256
static struct made {
	pid_t pid;
	dev_t dev;
	ino_t ino;
} made[MADE];
static unsigned nmade;

static int make_log(pid_t pid, int first, struct sf_kf_rep *rep)
{
	for (int attempt = first ? 0 : 1; attempt < 100; attempt++) {
		if (log_name(rep->path, sizeof(rep->path), pid, attempt) < 0)
			return -ENAMETOOLONG;
		int fd = open(rep->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0) {
			made[nmade++ % MADE] = (struct made){pid, st.st_dev, st.st_ino};
			return fd;
		}
		if (fd >= 0) {
			int r = failed(SF_KF_CALL_FSTAT);
			close(fd);
			return r;
		}
		if (errno != EEXIST)
			return failed(SF_KF_CALL_OPENAT);
	}
	return -EEXIST;
}

/* Only a log made here for this pid, or one whose header says it is
 * this pid's (made by the process itself before it dropped its
 * privileges: a thread with a uid of its own that lost the descriptor). */
static int log_again(pid_t pid, const char *name)
{
	int fd = open(name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return failed(SF_KF_CALL_OPENAT);
	fcntl(fd, F_SETFL, 0);
	struct stat st;
	int ok = own_regular(fd, 1) && fstat(fd, &st) == 0;
	for (unsigned i = 0; ok && i < MADE; i++)
		if (made[i].pid == pid && made[i].dev == st.st_dev && made[i].ino == st.st_ino)
			return fd;
	struct sf_header h;
	if (ok && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == SF_MAGIC && h.pid == (uint32_t)pid &&
	    !h.snapshot)
		return fd;
	close(fd);
	return -EPERM;
}

static int make_note(pid_t pid)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%d", K.notes, (int)pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return failed(SF_KF_CALL_OPENAT);
	if (!own_regular(fd, 1)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int make_snap(void)
{
	int fd = open(K.dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return fd < 0 ? failed(SF_KF_CALL_OPENAT) : fd;
}

/* <stem>.snap.<pid>.<n><ext>, n all digits. */
static int snap_name_ok(pid_t pid, const char *name)
{
	char pre[PATH_MAX + 32];
	if (snprintf(pre, sizeof(pre), "%s.snap.%d.", K.stem, (int)pid) >= (int)sizeof(pre))
		return 0;
	size_t lp = strlen(pre), ln = strlen(name), le = strlen(K.ext);
	if (strchr(name, '/') || ln <= lp + le || strncmp(name, pre, lp) || strcmp(name + ln - le, K.ext))
		return 0;
	for (size_t i = lp; i < ln - le; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	return 1;
}

static int link_snap(pid_t pid, const char *name, int fd)
{
	if (fd < 0 || !snap_name_ok(pid, name) || !own_regular(fd, 0))
		return -EPERM;
	char proc[64], path[PATH_MAX], tmp[PATH_MAX];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (snprintf(path, sizeof(path), "%s%s", K.dir, name) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != EEXIST)
		return failed(SF_KF_CALL_LINKAT);
	/* a name already there is replaced, as the runtime's own rename would */
	if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) < 0)
		return failed(SF_KF_CALL_LINKAT);
	if (rename(tmp, path) < 0) {
		int err = failed(SF_KF_CALL_RENAME);
		unlink(tmp);
		return err;
	}
	return 0;
}

/* Channels served (SF_KF_CHAN): the keeper's end and the pid that asked
 * for it. Only the serving thread touches them. */
#define MAX_CHANS 4096
static struct chan {
	int fd;
	pid_t pid;
} chans[MAX_CHANS];
static int nchans;

/* A request on c, a connection accepted (chan NULL: the asker is the
 * connecter, SO_PEERCRED) or a channel's end (the asker is the sender of
 * the credentials, who must descend from the pid the channel was made
 * for while that one lives: the channel goes down from parent to child
 * only). */
static int answer(int c, const struct chan *ch)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	static struct sf_kf_req req;
	static struct sf_kf_rep rep;
	union {
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} in, out;
	struct iovec iv = {&req, sizeof(req)};
	struct msghdr m = {.msg_iov = &iv, .msg_iovlen = 1, .msg_control = in.buf, .msg_controllen = sizeof(in.buf)};
	memset(&req, 0, sizeof(req));
	/* The sender's credentials, where it sent them (the kernel checks
	 * them: its own pid): a child asking over a connection its parent's
	 * thread made before the fork (the runtime's hand-down, for a process
	 * out of this socket's network namespace). */
	int on = 1;
	setsockopt(c, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
	ssize_t r = recvmsg(c, &m, MSG_CMSG_CLOEXEC | (ch ? MSG_DONTWAIT : 0));
	int sent = -1;
	pid_t sender = 0;
	for (struct cmsghdr *h = r > 0 ? CMSG_FIRSTHDR(&m) : NULL; h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS &&
		    h->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred u;
			memcpy(&u, CMSG_DATA(h), sizeof(u));
			sender = u.pid;
		}
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int *fds = (int *)(void *)CMSG_DATA(h);
			size_t nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nfd; i++) {
				if (sent < 0)
					sent = fds[i];
				else
					close(fds[i]);
			}
		}
	}
	int bad;
	if (ch) {
		cr.pid = sender > 0 ? sender : ch->pid;
		bad = r < (ssize_t)offsetof(struct sf_kf_req, name) || req.magic != SF_KF_MAGIC || !descendant(cr.pid) ||
		      (cr.pid != ch->pid && !descends(cr.pid, ch->pid) && (kill(ch->pid, 0) == 0 || errno == EPERM));
		sender = 0;
	} else {
		bad = r < (ssize_t)offsetof(struct sf_kf_req, name) || req.magic != SF_KF_MAGIC ||
		      getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || !descendant(cr.pid) ||
		      (sender > 0 && sender != cr.pid && !descends(sender, cr.pid));
	}
	if (bad) {
		if (sent >= 0)
			close(sent);
		if (ch && r > 0) { /* a channel stays open: the refusal is said */
			memset(&rep, 0, sizeof(rep));
			rep.err = EPERM;
			struct iovec ev = {&rep, offsetof(struct sf_kf_rep, path) + 1};
			struct msghdr eo = {.msg_iov = &ev, .msg_iovlen = 1};
			if (sendmsg(c, &eo, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* the asker is gone */
			}
		}
		return r > 0 ? 0 : -1; /* no answer: the asker takes the closed connection as a refusal */
	}
	if (sender > 0)
		cr.pid = sender; /* files are named after the one that asks, a descendant of the connecter */
	req.name[sizeof(req.name) - 1] = 0;
	memset(&rep, 0, sizeof(rep));
	failed_call = 0;
	int fd = -EINVAL;
	switch (req.op) {
	case SF_KF_LOG:
		fd = make_log(cr.pid, req.first, &rep);
		break;
	case SF_KF_LOG_AGAIN:
		fd = log_again(cr.pid, req.name);
		break;
	case SF_KF_NOTE:
		fd = make_note(cr.pid);
		break;
	case SF_KF_SNAP:
		fd = make_snap();
		break;
	case SF_KF_LINK:
		fd = link_snap(cr.pid, req.name, sent);
		fd = fd < 0 ? fd : -0x7fff; /* done, nothing to send */
		break;
	case SF_KF_CHAN: {
		int sv[2];
		if (nchans >= MAX_CHANS)
			fd = -EMFILE;
		else if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			fd = failed(SF_KF_CALL_SOCKETPAIR);
		else {
			chans[nchans++] = (struct chan){sv[0], cr.pid};
			fd = sv[1];
		}
		break;
	}
	}
	if (sent >= 0)
		close(sent);
	rep.err = fd >= 0 || fd == -0x7fff ? 0 : -fd;
	rep.call = rep.err ? failed_call : 0; /* the call the loss line names (keeper_files.h) */
	struct iovec ov = {&rep, offsetof(struct sf_kf_rep, path) + strlen(rep.path) + 1};
	struct msghdr o = {.msg_iov = &ov, .msg_iovlen = 1};
	if (fd >= 0) {
		o.msg_control = out.buf;
		o.msg_controllen = CMSG_SPACE(sizeof(int));
		struct cmsghdr *h = CMSG_FIRSTHDR(&o);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fd, sizeof(int));
	}
	if (sendmsg(c, &o, MSG_NOSIGNAL | (ch ? MSG_DONTWAIT : 0)) < 0) {
		/* the asker is gone: it made no file of this one's */
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	static struct pollfd pf[MAX_CHANS + 1];
	for (;;) {
		pf[0] = (struct pollfd){.fd = fd, .events = POLLIN};
		for (int i = 0; i < nchans; i++)
			pf[i + 1] = (struct pollfd){.fd = chans[i].fd, .events = POLLIN};
		int n = nchans;
		if (poll(pf, (nfds_t)n + 1, -1) < 0) {
			if (errno == EINTR || errno == ENOMEM)
				continue;
			return NULL;
		}
		/* the channels first, from the last: one that ends is replaced by the last */
		for (int i = n - 1; i >= 0; i--) {
			short ev = pf[i + 1].revents;
			int gone = (ev & (POLLHUP | POLLERR | POLLNVAL)) && !(ev & POLLIN);
			if (ev & POLLIN) {
				struct chan ch = chans[i];
				gone = answer(ch.fd, &ch) < 0; /* the asker's end closed (or broken) */
			}
			if (gone) {
				close(chans[i].fd);
				chans[i] = chans[--nchans];
			}
		}
		if (!(pf[0].revents & POLLIN))
			continue;
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM || errno == EAGAIN)
				continue;
			return NULL;
		}
		/* An asker that stops (SIGSTOP, a debugger) holds the others
		 * up for at most this long. */
		struct timeval tv = {2, 0};
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		(void)answer(c, NULL);
		close(c);
	}
}

void rfiles_serve(int fd)
{
	if (fd < 0)
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, serve, (void *)(intptr_t)fd) != 0)
		close(fd);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
