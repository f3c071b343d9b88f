/* sftrace resume PID / sftrace pause PID: switch tracing on or off in a
 * process recorded with `sftrace record --paused`.
 *
 * No signal: the request (the operation and a nonce) goes into the control
 * page the process's writer thread keeps, a memfd in that thread's own
 * descriptor table, reached here through /proc/PID/task/TID/fd, and the
 * page's futex word wakes the writer (format/switch_ctl.h,
 * src/runtime/switch.c). A signal to the process landed on a thread of
 * the program's: its sleep or poll returned early, and a server taking
 * its signals with sigtimedwait took it as its own. The writer patches or
 * unpatches the sleds and answers on an abstract unix socket this command
 * bound first. The command returns once the answer came, or fails with one
 * line: not a process recorded with --paused, not ours, gone, or timed
 * out. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/target_pid.h"
#include "format/sf_env.h"
#include "format/switch_ctl.h"
#include "lib/util.h"

static void usage(FILE *out, const char *name)
{
	int on = !strcmp(name, "resume");
	fprintf(out,
		"usage: sftrace %s [OPTIONS] PID\n"
		"\n"
		"%s"
		"Process PID must have been started by 'sftrace record --paused' (the line\n"
		"it printed names the PID). The command returns once the process has\n"
		"switched, and prints how many sleds changed and how long that took.\n"
		"Calls in flight at a switch are repaired in every output, as at the edge\n"
		"of a window: an exit whose entry was not recorded is dropped, a call\n"
		"still open at a pause ends there; both are counted.\n"
		"\n"
		"options:\n"
		"  -t, --timeout SECONDS     how long to wait for the process (default 10)\n"
		"  -q, --quiet               print nothing on success\n"
		"  -v, --verbose             also say where the time went (reading the sled\n"
		"                            maps, writing the text) and the command's wall time\n"
		"  -h, --help                this help\n"
		"\n"
		"Exit status: 0 when the process switched (or was %s already), 1 when\n"
		"it is not a process recorded with --paused, not yours, gone, or did not\n"
		"answer in time; 2 for a usage error.\n",
		name,
		on ? "Switches tracing on in a running process: patches the sleds its filter selects\n"
		     "(record -f, --filter-regex), in every instrumented object, dlopen'd ones\n"
		     "included. Events go to the same log (or ring) as before.\n\n"
		   : "Switches tracing off in a running process: unpatches every sled, so the\n"
		     "program runs at untraced speed; 'sftrace resume' switches it on again.\n\n",
		on ? "tracing" : "paused");
}

/* Whether pid was recorded with --paused. 0, or -1 after a message. */
static int paused_target(pid_t pid)
{
	struct target_env te;
	if (target_pid_env(pid, &te) < 0)
		return -1;
	if (!te.output[0] || !te.paused) {
		sf_error("pid %d is not a traced process started with 'sftrace record --paused' (no %s=1 in its "
			 "environment)",
			 (int)pid, SF_ENV(PAUSED));
		return -1;
	}
	return 0;
}

/* The socket the answer comes to, bound before the request is sent. */
static int bind_reply_socket(uint32_t *nonce)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		sf_error("socket: %s", strerror(errno));
		return -1;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	/* A fresh random nonce names it; one taken already (by chance) is
	 * drawn again. */
	int r = -1;
	for (int i = 0; i < 8 && r < 0; i++) {
		if (getrandom(nonce, sizeof(*nonce), 0) != (ssize_t)sizeof(*nonce))
			*nonce = (uint32_t)time(NULL) ^ (uint32_t)getpid() << 16 ^ (uint32_t)i;
		if (!*nonce)
			*nonce = 1;
		struct sockaddr_un a;
		socklen_t len = sf_switch_ctl_address(&a, *nonce);
		r = bind(fd, (struct sockaddr *)&a, len);
		if (r < 0 && errno != EADDRINUSE)
			break;
	}
	if (r < 0) {
		sf_error("cannot bind the answer socket: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether pid has exited: no such process, or a zombie its parent has
 * not reaped yet. */
static int process_gone(pid_t pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static double since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static long writer_thread(pid_t pid);

/* One datagram from pid (its credentials say so), within the time left.
 * 1 received, 0 timed out or pid gone (*gone 1), or its writer left with
 * its main thread before it took request v, withdrawn from the page
 * (*gone 2); -1 error. */
static int receive(int fd, pid_t pid, struct sf_ctl_page *page, uint64_t v, double timeout, struct sf_switch_reply *r,
		   int *gone)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	*gone = 0;
	for (;;) {
		double left = timeout - since(&t0);
		if (left <= 0)
			return 0;
		/* Wake up every 100 ms to see whether the process is still there. */
		int ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
		struct pollfd p = {fd, POLLIN, 0};
		int n = poll(&p, 1, ms);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n <= 0) {
			if (process_gone(pid)) {
				*gone = 1;
				return 0;
			}
			/* The writer leaves after the main thread (answering a
			 * request it took); one it never took is withdrawn. */
			uint64_t mine = v;
			if (target_pid_leader_gone(pid) && writer_thread(pid) == 0 &&
			    __atomic_compare_exchange_n(&page->request, &mine, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
				*gone = 2;
				return 0;
			}
			continue;
		}
		char cbuf[CMSG_SPACE(sizeof(struct ucred))];
		struct iovec iov = {r, sizeof(*r)};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
		ssize_t got = recvmsg(fd, &m, 0);
		if (got != (ssize_t)sizeof(*r) || r->magic != SF_SWITCH_REPLY_MAGIC)
			continue;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		if (!c || c->cmsg_type != SCM_CREDENTIALS)
			continue;
		struct ucred cred;
		memcpy(&cred, CMSG_DATA(c), sizeof(cred));
		if (cred.pid == pid)
			return 1;
	}
}

static int parse_args(int argc, char **argv, double *timeout, int *quiet, int *verbose, pid_t *pid)
{
	static const struct option longopts[] = {
		{"timeout", required_argument, 0, 't'},
		{"quiet", no_argument, 0, 'q'},
		{"verbose", no_argument, 0, 'v'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "t:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 't': {
			char *end;
			*timeout = strtod(optarg, &end);
			if (end == optarg || *end || !(*timeout > 0)) {
				sf_error("--timeout must be a positive number of seconds, not '%s'", optarg);
				return 2;
			}
			break;
		}
		case 'q': *quiet = 1; break;
		case 'v': *verbose = 1; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default:
			fprintf(stderr, "(sftrace %s --help describes the options)\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		sf_error("give one PID (usage: sftrace %s [OPTIONS] PID)", argv[0]);
		return 2;
	}
	char *end;
	long v = strtol(argv[optind], &end, 10);
	if (end == argv[optind] || *end || v <= 0 || v > INT_MAX) {
		sf_error("'%s' is not a process id", argv[optind]);
		return 2;
	}
	*pid = (pid_t)v;
	return -1;
}

/* The runtime's writer thread among pid's (it names itself
 * "sftrace-writer"): its tid, 0 if there is none, or -1 when the task list
 * is unreadable. */
static long writer_thread(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	long found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char comm_path[400], comm[32] = "";
		snprintf(comm_path, sizeof(comm_path), "%s/%s/comm", path, e->d_name);
		FILE *f = fopen(comm_path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "sftrace-writer\n"))
			found = strtol(e->d_name, NULL, 10);
		fclose(f);
	}
	closedir(d);
	return found;
}

/* The writer thread's control page (format/switch_ctl.h), mapped here: the
 * memfd named SF_CTL_MEMFD_NAME in thread tid's descriptor table, opened
 * through /proc (which checks that the process is ours to inspect), of
 * the page's size (sealed) and magic. NULL if there is none. */
static struct sf_ctl_page *map_ctl_page(pid_t pid, long tid)
{
	char dirname[96];
	snprintf(dirname, sizeof(dirname), "/proc/%d/task/%ld/fd", (int)pid, tid);
	DIR *d = opendir(dirname);
	if (!d)
		return NULL;
	struct sf_ctl_page *p = NULL;
	struct dirent *e;
	while (!p && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char link[128 + NAME_MAX], target[256];
		snprintf(link, sizeof(link), "%s/%s", dirname, e->d_name);
		ssize_t k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = 0;
		if (strcmp(target, "/memfd:" SF_CTL_MEMFD_NAME " (deleted)"))
			continue;
		int fd = open(link, O_RDWR | O_CLOEXEC | O_NONBLOCK);
		struct stat st;
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == SF_CTL_SIZE) {
			void *m = mmap(NULL, SF_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m != MAP_FAILED && __atomic_load_n(&((struct sf_ctl_page *)m)->magic, __ATOMIC_ACQUIRE) == SF_CTL_MAGIC)
				p = m;
			else if (m != MAP_FAILED)
				munmap(m, SF_CTL_SIZE);
		}
		close(fd);
	}
	closedir(d);
	return p;
}

/* Checks that pid is ours and recorded with --paused, and that it has the
 * writer thread that serves the request and its control page (*page,
 * mapped). 0, or 1 after a message (2: its main thread has ended). */
static int check_target(pid_t pid, struct sf_ctl_page **page)
{
	long uid = target_pid_uid(pid);
	if (uid < 0) {
		sf_error("pid %d: no such process", (int)pid);
		return 1;
	}
	if (uid != (long)getuid() && geteuid() != 0) {
		sf_error("pid %d is not yours (it runs as uid %ld, you are uid %ld)", (int)pid, uid, (long)getuid());
		return 1;
	}
	if (paused_target(pid) < 0)
		return 1;
	/* One whose main thread has ended has no writer either: refused
	 * here, nothing asked (the caller says so). */
	if (target_pid_leader_gone(pid))
		return 2;
	long tid = writer_thread(pid);
	/* The writer thread is not copied by a fork: a child that did not
	 * exec has none. Nor has a shell between record and the program (no
	 * instrumented code), nor a process before its runtime started it. */
	if (tid == 0) {
		sf_error("pid %d has no sftrace-writer thread, which serves resume and pause: it is a forked child "
			 "that did not exec (a fork copies only the thread that called it), or it has loaded no "
			 "instrumented code; nothing sent",
			 (int)pid);
		return 1;
	}
	*page = tid > 0 ? map_ctl_page(pid, tid) : NULL;
	if (!*page) {
		sf_error("pid %d: its sftrace-writer thread holds no control page that this command can open "
			 "(/proc/%d/task/%ld/fd); nothing sent",
			 (int)pid, (int)pid, tid);
		return 1;
	}
	return 0;
}

/* The shared futex word of the page woken: the writer waits on it. */
static void wake_writer(struct sf_ctl_page *page)
{
	__atomic_add_fetch(&page->seq, 1, __ATOMIC_ACQ_REL);
	syscall(SYS_futex, &page->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The request put on the page: claimed from 0 (one request at a time;
 * one waiting there already is served first: the writer is woken for
 * it), within the time left. 1 when it is there, 0 when the time ran out
 * or the process went (*gone). */
static int put_request(struct sf_ctl_page *page, pid_t pid, uint64_t v, double timeout, int *gone)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	*gone = 0;
	for (;;) {
		uint64_t none = 0;
		if (__atomic_compare_exchange_n(&page->request, &none, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			wake_writer(page);
			return 1;
		}
		wake_writer(page);
		if (process_gone(pid)) {
			*gone = 1;
			return 0;
		}
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 > timeout)
			return 0;
		usleep(10000);
	}
}

static int leader_gone(pid_t pid, const char *what)
{
	sf_error("pid %d: %s refused: its main thread has ended, and with it the runtime's writer thread, "
		 "which switches tracing; tracing stays as it was",
		 (int)pid, what);
	return 1;
}

static int run_switch(int argc, char **argv, uint32_t op)
{
	double timeout = 10;
	int quiet = 0, verbose = 0;
	pid_t pid = 0;
	int rc = parse_args(argc, argv, &timeout, &quiet, &verbose, &pid);
	if (rc >= 0)
		return rc;
	const char *what = op == SF_SWITCH_RESUME ? "resume" : "pause";
	struct sf_ctl_page *page = NULL;
	rc = check_target(pid, &page);
	if (rc == 2)
		return leader_gone(pid, what);
	if (rc)
		return 1;
	uint32_t nonce = 0;
	int fd = bind_reply_socket(&nonce);
	if (fd < 0) {
		munmap(page, SF_CTL_SIZE);
		return 1;
	}
	struct timespec sent;
	clock_gettime(CLOCK_MONOTONIC, &sent);
	uint64_t v = sf_switch_ctl_value(op, nonce);
	int gone = 0;
	if (!put_request(page, pid, v, timeout, &gone)) {
		munmap(page, SF_CTL_SIZE);
		close(fd);
		if (gone)
			sf_error("pid %d exited before it took the %s", (int)pid, what);
		else
			sf_error("pid %d did not take the %s within %g s: another request waited on it all that time "
				 "(stopped?)",
				 (int)pid, what, timeout);
		return 1;
	}
	struct sf_switch_reply r;
	int got = receive(fd, pid, page, v, timeout - since(&sent), &r, &gone);
	close(fd);
	munmap(page, SF_CTL_SIZE);
	if (got < 0) {
		sf_error("pid %d: waiting for its answer: %s", (int)pid, strerror(errno));
		return 1;
	}
	if (!got && gone == 2)
		return leader_gone(pid, what);
	if (!got && gone) {
		sf_error("pid %d exited before it answered the %s", (int)pid, what);
		return 1;
	}
	if (!got) {
		sf_error("pid %d did not answer the %s within %g s (stopped?); it is still asked, and served when the "
			 "process goes on",
			 (int)pid, what, timeout);
		return 1;
	}
	if (r.result == SF_SWITCH_LEADER_GONE)
		return leader_gone(pid, what);
	if (!quiet) {
		if (r.result == SF_SWITCH_REFUSED)
			printf("pid %d: tracing stays off: a thread of it entered SECCOMP_MODE_STRICT, where the "
			       "time stamp counter faults\n", (int)pid);
		else if (r.result == SF_SWITCH_ALREADY)
			printf("pid %d: tracing was %s already\n", (int)pid, op == SF_SWITCH_RESUME ? "on" : "off");
		else
			printf("pid %d: tracing %s: %u sleds %spatched in %.3f ms\n", (int)pid,
			       op == SF_SWITCH_RESUME ? "on" : "off", r.sleds, op == SF_SWITCH_RESUME ? "" : "un",
			       (double)r.took_ns / 1e6);
		if (verbose && r.result == SF_SWITCH_DONE)
			printf("pid %d: %.3f ms reading the sled maps, %.3f ms writing the text, %.3f ms of CPU; "
			       "%.3f ms from the request to the answer; %u sleds patched now\n",
			       (int)pid, (double)r.read_us / 1e3, (double)r.took_ns / 1e6 - (double)r.read_us / 1e3,
			       (double)r.cpu_us / 1e3, since(&sent) * 1e3, r.patched_now);
	}
	return 0;
}

int cmd_resume(int argc, char **argv)
{
	return run_switch(argc, argv, SF_SWITCH_RESUME);
}

int cmd_pause(int argc, char **argv)
{
	return run_switch(argc, argv, SF_SWITCH_PAUSE);
}
