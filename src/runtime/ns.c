/* Namespace changes that need a single-threaded process (docs/DESIGN.md,
 * "The writer thread"). The writer thread exists from __libc_start_main
 * on, so a traced program is multi-threaded at main where it would not
 * be. The kernel refuses some calls to a process with more than one
 * thread: unshare(CLONE_NEWUSER) (and CLONE_THREAD, CLONE_SIGHAND,
 * CLONE_VM) fails with EINVAL, setns into a user or mount namespace with
 * EINVAL, into a time namespace with EUSERS; unshare(CLONE_FS) and
 * CLONE_NEWNS (which implies it) succeed but leave the other threads in the
 * old file-system context, where untraced there are none.
 *
 * So unshare and setns (the libc functions, and syscall() with their
 * numbers) stop the writer (its queue written, the thread joined and gone
 * from the process) when it is the only thread besides the caller, make
 * the call, and start it again: in the namespaces the program is in now.
 * When the program has threads of its own, the call is made as it is: the
 * kernel answers as it would untraced. The result and errno are the
 * call's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/nsfs.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The flags with which unshare, or the namespace types into which setns,
 * act on the whole process (or need it alone). */
#define UNSHARE_ALONE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM | CLONE_FS | CLONE_NEWNS)
#define SETNS_ALONE (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWTIME)

/* A /proc/self/... path opened: on the writer or the keeper through the
 * /proc/self directory held in its own table (writer.c,
 * sf_writer_open_proc), which a chroot or an unmounted /proc leaves
 * reachable; elsewhere (no table of its own, a program thread) by the
 * path, as the program would. -errno on failure. */
/* The directory and the path relative to it that a /proc/self/... path
 * is reached by on this thread (sf_proc_open, proc_stat). */
static const char *proc_at(const char *path, int *dir)
{
	static const char head[] = "/proc/self/";
	*dir = sf_writer_proc_dir();
	if (*dir >= 0 && !__builtin_strncmp(path, head, sizeof(head) - 1))
		return path + sizeof(head) - 1;
	*dir = AT_FDCWD;
	return path;
}

long sf_proc_open(const char *path, int flags)
{
	int dir;
	const char *rel = proc_at(path, &dir);
	return sf_syscall6(SYS_openat, dir, (long)rel, flags, 0, 0, 0);
}

/* Calls each(name, arg) for the entries of a /proc/self directory (not
 * . or ..), by raw system calls: no allocation. The number of entries,
 * or -1 if it cannot be read (or each said stop, returning nonzero). */
static int proc_entries(const char *path, int (*each)(const char *name, void *arg), void *arg)
{
	int fd = (int)sf_proc_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[1024] __attribute__((aligned(8)));
	int n = 0;
	long got;
	while ((got = sf_syscall3(SYS_getdents64, fd, (long)buf, sizeof(buf))) > 0) {
		for (long off = 0; off < got;) {
			const struct dirent64 *d = (const struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] == '.')
				continue;
			n++;
			if (each && each(d->d_name, arg)) {
				sf_close(fd);
				return -1;
			}
		}
	}
	sf_close(fd);
	return got < 0 ? -1 : n;
}

/* The threads of this process (entries of /proc/self/task); 0 if it
 * cannot be read. */
int sf_thread_count(void)
{
	int n = proc_entries("/proc/self/task", NULL, NULL);
	return n < 0 ? 0 : n;
}

/* Whether the thread-group leader (tid pid) has exited (a zombie while
 * other threads live; any state if any_state), and then its exit status
 * as wait reports it (/proc's stat, field 52, exit_code: the status its
 * SYS_exit gave, set by do_exit before it clears the exit word). */
static int leader_state(long pid, int *status, int any_state)
{
	char path[64] = "/proc/self/task/";
	char num[24];
	int k = 0;
	for (long v = pid; v || !k; v /= 10)
		num[k++] = (char)('0' + v % 10);
	size_t at = sizeof("/proc/self/task/") - 1;
	while (k)
		path[at++] = num[--k];
	__builtin_memcpy(path + at, "/stat", 6);
	int fd = (int)sf_proc_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[1024];
	long got = sf_syscall3(SYS_read, fd, (long)buf, sizeof(buf) - 1);
	sf_close(fd);
	if (got <= 0)
		return 0;
	buf[got] = 0;
	const char *rp = NULL;
	for (const char *p = buf; *p; p++)
		if (*p == ')')
			rp = p; /* the name may hold ')' itself: the last one ends it */
	if (!rp || rp[1] != ' ' || (!any_state && rp[2] != 'Z' && rp[2] != 'X'))
		return 0;
	long end = got;
	while (end > 0 && (buf[end - 1] < '0' || buf[end - 1] > '9'))
		end--;
	long start = end;
	while (start > 0 && buf[start - 1] >= '0' && buf[start - 1] <= '9')
		start--;
	if (start == end || buf[start - 1] != ' ')
		return 0;
	long code = 0;
	for (long i = start; i < end; i++)
		code = code * 10 + (buf[i] - '0');
	*status = (int)((code >> 8) & 0xff);
	return 1;
}

static int leader_exited(long pid, int *status)
{
	return leader_state(pid, status, 0);
}

/* The calling thread is the program's last (the writer thread aside):
 * its SYS_exit would end the process untraced. Since Linux 5.19 the
 * process's status is then that last thread's code (the kernel's
 * synchronize_group_exit: the last live thread sets the group's exit
 * code), so *status is own, its own code; before, it was the leader's,
 * the same when the caller is the leader. 0 when another thread lives or
 * /proc cannot say. */
struct thread_view {
	int n, leader_gone;
};

static long view_threads(void *arg)
{
	struct thread_view *v = arg;
	int leader;
	v->n = sf_thread_count();
	v->leader_gone = leader_exited(sf_syscall3(SYS_getpid, 0, 0, 0), &leader);
	return 0;
}

int sf_last_thread_status(int own, int *status, uint32_t writer_tid)
{
	long pid = sf_syscall3(SYS_getpid, 0, 0, 0);
	int writer = sf_runtime_thread(); /* the writer, or a CLONE_FILES child's keeper */
	struct thread_view v;
	view_threads(&v);
	/* A program that chrooted where there is no /proc (or unmounted it):
	 * the writer's (keeper's) own /proc answers (sf_proc_open). */
	if (!v.n && writer && sf_writer_private() && sf_writer_call(view_threads, &v) != 0)
		return 0;
	/* writer_tid: the writer thread, counted as the runtime's when
	 * sf_runtime_thread no longer says so (it has begun to leave) but it
	 * is still there after the count (tasks do not come back) */
	if (!writer && writer_tid && sf_syscall3(SYS_tgkill, pid, writer_tid, 0) == 0)
		writer = 1;
	if (sf_syscall3(SYS_gettid, 0, 0, 0) == pid) {
		if (v.n != 1 + writer)
			return 0;
	} else if (v.n != 2 + writer || !v.leader_gone) {
		return 0;
	}
	*status = own & 0xff;
	return 1 + writer;
}

/* In the writer thread: no thread of the program's is left, only an
 * exited leader. *status gets the leader's code: the process's status
 * when the leader was the last to go (and on kernels before 5.19 in any
 * case); a later thread's own code, which the kernel gives since, is
 * nowhere to be read once it has gone. */
int sf_program_gone(int *status)
{
	return sf_thread_count() == 2 && leader_exited(sf_syscall3(SYS_getpid, 0, 0, 0), status);
}

/* The leader's exit code, once its exit word has been cleared (it may
 * not be a zombie yet: do_exit sets the code first). 0 if /proc cannot
 * say. */
int sf_leader_status(int *status)
{
	return leader_state(sf_syscall3(SYS_getpid, 0, 0, 0), status, 1);
}

/* Whether the call needs the process to itself. setns's nstype 0 (any)
 * asks the descriptor which namespace it is; a pidfd's flags are types. */
static int needs_alone(long nr, long a0, long a1)
{
	if (nr == SYS_unshare)
		return (a0 & UNSHARE_ALONE) != 0;
	long type = a1;
	if (!type) {
		if (!sf_seccomp_allows_fd_call(SYS_ioctl, NS_GET_NSTYPE, 0))
			return 1; /* a seccomp filter refuses the question (sandbox.c): it may be one that
				   * needs the process alone (a user namespace); a stop it did not need
				   * costs a writer's cycle, a writer left there fails the call */
		type = sf_syscall3(SYS_ioctl, a0, NS_GET_NSTYPE, 0);
		if (type < 0)
			return 0; /* not a namespace (a pidfd wants its flags): the kernel says no */
	}
	return (type & SETNS_ALONE) != 0;
}

/* The writer gone from the process: pthread_join returns when the thread
 * has cleared its tid, a little before the kernel takes it out of the
 * thread group; until then unshare would still fail. */
static void wait_alone(void)
{
	for (int i = 0; i < 10000 && sf_thread_count() > 1; i++)
		sf_yield();
}

/* The same after a stop at a filter's install (sandbox.c): only while
 * the chain lets the count and the wait run (it is being installed). */
void sf_wait_alone(void)
{
	wait_alone();
}

/* The writer stopped and gone from the thread group, with every signal
 * of this thread blocked meanwhile (no handler of this thread may record,
 * and queue a slot, while there is no writer); *old and *err keep the mask
 * and errno for writer_resume. 0 if it was not running. */
static int writer_stop_masked(sigset_t *old, int *err)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	*err = errno;
	if (!sf_writer_stop())
		return 0;
	wait_alone();
	return 1;
}

/* After writer_stop_masked: a new writer if restart, errno and the mask
 * back. */
static void writer_unmask(int restart, const sigset_t *old, int err)
{
	if (restart)
		sf_writer_restart();
	errno = err;
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* The same for a clone(CLONE_FILES) child's keeper (writer.c): ended for
 * the call, its log descriptor in the child's table meanwhile (a SIGKILL
 * during the call would leave that one behind), a new keeper after. */
static long keeper_aside(long nr, long a0, long a1)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = errno;
	int fd = sf_keeper_stop();
	long r = sf_syscall3(nr, a0, a1, 0);
	sf_keeper_resume(fd);
	errno = err;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* This thread left the network namespace it started in (unshare
 * CLONE_NEWNET, or a setns that may have been one): record's keeper,
 * an abstract socket there, is out of its reach and of its forks' (notes.c
 * hands them a connection). A fork child inherits the word. */
__thread int sf_netns_moved __attribute__((tls_model("initial-exec")));

static long ns_call(long nr, long a0, long a1)
{
	/* Under a seccomp filter that refuses the stop's calls or the
	 * synchronous hand-offs after it, the runtime's threads left at its
	 * install (sandbox.c, ns_stop_refused) and none was made since: the
	 * call is made as it is, in a process as alone as untraced. A new
	 * writer is made only where its start is allowed (writer.c,
	 * sf_writer_start). */
	if (sf_seccomp_refuses_writer_stop())
		return sf_syscall3(nr, a0, a1, 0);
	if (sf_keeper_alive() && needs_alone(nr, a0, a1) && sf_thread_count() == 2)
		return keeper_aside(nr, a0, a1);
	if (!sf_writer_active() || !needs_alone(nr, a0, a1) || sf_thread_count() != 2)
		return sf_syscall3(nr, a0, a1, 0);
	sigset_t old;
	int err;
	int stopped = writer_stop_masked(&old, &err);
	long r = sf_syscall3(nr, a0, a1, 0);
	writer_unmask(stopped, &old, err);
	return r;
}

/* setns(fd, nstype) into a network namespace: nstype says so (a pidfd's
 * is a mask of CLONE_NEW* flags), or 0 and the fd is one (NS_GET_NSTYPE,
 * asked before the call: the fd is the program's). */
static int setns_net(long fd, long nstype)
{
	if (nstype)
		return (nstype & CLONE_NEWNET) != 0;
	if (!sf_seccomp_allows_fd_call(SYS_ioctl, NS_GET_NSTYPE, 0))
		return 0; /* a seccomp filter refuses the question (sandbox.c) */
	return sf_syscall3(SYS_ioctl, fd, NS_GET_NSTYPE, 0) == CLONE_NEWNET;
}

long sf_ns_syscall(long nr, long a0, long a1)
{
	int net = nr == SYS_unshare ? (a0 & CLONE_NEWNET) != 0 : setns_net(a0, a1);
	if (net && !needs_alone(nr, a0, a1))
		sf_keeper_make_due(); /* a fork child's keeper stays in record's namespace (notes.c) */
	long r = ns_call(nr, a0, a1);
	if (r == 0 && net)
		sf_netns_moved = 1;
	return r;
}

static int libc_result(long r)
{
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

/* RLIMIT_NPROC. The kernel counts every task of the real uid, threads
 * included, against it at each fork and thread creation (but for root):
 * the writer thread is one of them. A program that sets a finite limit
 * sized for itself (one worker at a time) would find its forks refused
 * (EAGAIN) where untraced they succeed. So a finite RLIMIT_NPROC set on
 * this process by a non-root process stops the writer for good (hand-offs
 * synchronous from then on), when it is the only thread besides the
 * caller: stopping it with other traced threads running is not safe
 * (sf_writer_stop). With threads of the program's own the limit counts
 * them and the writer alike, as a known difference. */
_Static_assert(sizeof(struct rlimit) == sizeof(struct rlimit64), "one layout");

static int lowers_nproc(long pid, long resource, const struct rlimit *lim)
{
	if (resource != RLIMIT_NPROC || !lim || lim->rlim_cur == RLIM_INFINITY)
		return 0;
	if (pid != 0 && pid != sf_syscall3(SYS_getpid, 0, 0, 0))
		return 0;
	/* under a seccomp filter that refuses getuid or the writer's stop
	 * (sandbox.c) the writer stays: the limit counts it */
	if (!sf_seccomp_allows(SYS_getuid, 0, 0, 0, 0, 0, 0) || sf_seccomp_refuses_writer_stop())
		return 0;
	return sf_syscall3(SYS_getuid, 0, 0, 0) != 0;
}

/* nr: SYS_prlimit64 (a: pid, resource, new, old) or SYS_setrlimit (a:
 * resource, new). struct rlimit and rlimit64 are one layout on the 64-bit
 * targets the runtime builds for, and libc's setrlimit and prlimit are
 * this very system call (glibc 2.36: prlimit64). */
long sf_rlimit_syscall(long nr, const long *a)
{
	long pid = 0, res = a[0];
	const struct rlimit *lim = (const struct rlimit *)a[1];
	if (nr == SYS_prlimit64) {
		pid = a[0];
		res = a[1];
		lim = (const struct rlimit *)a[2];
	}
	long r = sf_syscall6(nr, a[0], a[1], a[2], a[3], 0, 0);
	if (r == 0 && lowers_nproc(pid, res, lim))
		sf_keeper_defer_cancel(); /* a fork child's keeper not made yet: none from now on */
	if (r == 0 && sf_keeper_alive() && !sf_log_files_shared() && lowers_nproc(pid, res, lim) &&
	    sf_thread_count() == 2) {
		/* a fork child's keeper (writer.c) counts as the writer does:
		 * it ends for good, the log back in the program's table (not
		 * a CLONE_FILES child's: that table is its parent's too) */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		int err = errno;
		sf_log_keeper_left(sf_keeper_stop());
		errno = err;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	} else if (r == 0 && sf_writer_active() && lowers_nproc(pid, res, lim) && sf_thread_count() == 2) {
		sigset_t old;
		int err;
		writer_stop_masked(&old, &err); /* for good: no restart */
		writer_unmask(0, &old, err);
	}
	return r;
}

__attribute__((visibility("default"))) int setrlimit(__rlimit_resource_t resource, const struct rlimit *lim)
{
	const long a[4] = {0, resource, (long)lim, 0};
	return libc_result(sf_rlimit_syscall(SYS_prlimit64, a));
}

__attribute__((visibility("default"))) int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *lim)
{
	const long a[4] = {0, resource, (long)lim, 0};
	return libc_result(sf_rlimit_syscall(SYS_prlimit64, a));
}

__attribute__((visibility("default"))) int prlimit(pid_t pid, __rlimit_resource_t resource,
						   const struct rlimit *lim, struct rlimit *old)
{
	const long a[4] = {pid, resource, (long)lim, (long)old};
	return libc_result(sf_rlimit_syscall(SYS_prlimit64, a));
}

__attribute__((visibility("default"))) int prlimit64(pid_t pid, __rlimit_resource_t resource,
						     const struct rlimit64 *lim, struct rlimit64 *old)
{
	const long a[4] = {pid, resource, (long)lim, (long)old};
	return libc_result(sf_rlimit_syscall(SYS_prlimit64, a));
}

__attribute__((visibility("default"))) int unshare(int flags)
{
	return libc_result(sf_ns_syscall(SYS_unshare, flags, 0));
}

__attribute__((visibility("default"))) int setns(int fd, int nstype)
{
	return libc_result(sf_ns_syscall(SYS_setns, fd, nstype));
}

/* ---- before the writer hands over (writer.c, leave_if_program_runs) ----
 * After the hand-over each program thread opens the log again in its own
 * context: its credentials (per thread: a raw setresuid, capset), its
 * root and mount namespace (unshare(CLONE_FS) then chroot), the room left
 * in its descriptor table under RLIMIT_NOFILE. The writer's own reopen
 * test (sf_log_reopenable) speaks for the threads only where they are
 * alike in all of these. */

#define TABLE_MARGIN 4 /* numbers a reopen needs: the open, a move high, slack */

struct like_writer {
	uint32_t self;
	char own[1024];       /* the writer's Uid, Gid, Groups and CapEff lines */
	uint64_t root_dev, root_ino, mnt_ino;
	uint64_t nofile;      /* the soft limit */
	int no_room;          /* a task's table is within TABLE_MARGIN of it */
};

/* The credential lines of a status file, one after another; 0 if unread. */
static int cred_lines(const char *path, char *out, size_t cap)
{
	char buf[4096];
	int fd = (int)sf_proc_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	long got = sf_syscall3(SYS_read, fd, (long)buf, sizeof(buf) - 1);
	sf_close(fd);
	if (got <= 0)
		return 0;
	buf[got] = 0;
	static const char *const keys[] = {"Uid:", "Gid:", "Groups:", "CapEff:"};
	size_t pos = 0;
	for (const char *line = buf; *line;) {
		const char *end = line;
		while (*end && *end != '\n')
			end++;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t kl = __builtin_strlen(keys[k]);
			if ((size_t)(end - line) >= kl && !__builtin_memcmp(line, keys[k], kl) &&
			    pos + (size_t)(end - line) + 1 < cap) {
				__builtin_memcpy(out + pos, line, (size_t)(end - line));
				pos += (size_t)(end - line);
				out[pos++] = '\n';
			}
		}
		line = *end ? end + 1 : end;
	}
	out[pos] = 0;
	return 1;
}

static int proc_stat(const char *path, struct stat *st)
{
	int dir;
	const char *rel = proc_at(path, &dir);
	return (int)sf_syscall6(SYS_newfstatat, dir, (long)rel, (long)st, 0, 0, 0);
}

/* One task's context as the writer's: 0 if it differs or cannot be read. */
static int task_like(uint32_t tid, struct like_writer *w)
{
	char path[48], lines[1024];
	struct stat st;
	/* The room first: a task that differs in anything else must still
	 * have room for the descriptor the writer would offer it (writer.c). */
	sf_task_path(path, tid, "/fd");
	int n = proc_entries(path, NULL, NULL);
	if (n < 0 || (uint64_t)n + TABLE_MARGIN > w->nofile) {
		w->no_room = 1;
		return 0;
	}
	sf_task_path(path, tid, "/status");
	if (!cred_lines(path, lines, sizeof(lines)) || __builtin_strcmp(lines, w->own))
		return 0;
	sf_task_path(path, tid, "/root");
	if (proc_stat(path, &st) < 0 || st.st_dev != w->root_dev || st.st_ino != w->root_ino)
		return 0;
	sf_task_path(path, tid, "/ns/mnt");
	if (proc_stat(path, &st) < 0 || st.st_ino != w->mnt_ino)
		return 0;
	return 1;
}

static int each_task(const char *name, void *arg)
{
	struct like_writer *w = arg;
	uint32_t tid = 0;
	for (const char *p = name; *p >= '0' && *p <= '9'; p++)
		tid = tid * 10 + (uint32_t)(*p - '0');
	if (tid == w->self || tid == (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0))
		return 0; /* the writer; the exited leader has no context left */
	return !task_like(tid, w);
}

/* On the writer: every task of the program's but the exited leader is in
 * the writer's network namespace, where record's keeper listens (its
 * socket is abstract: a namespace's own). 0 if any is not or /proc cannot
 * say. */
struct same_net {
	uint32_t self;
	uint64_t ino;
};

static int each_net(const char *name, void *arg)
{
	const struct same_net *w = arg;
	uint32_t tid = 0;
	for (const char *p = name; *p >= '0' && *p <= '9'; p++)
		tid = tid * 10 + (uint32_t)(*p - '0');
	if (tid == w->self || tid == (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0))
		return 0;
	char path[48];
	struct stat st;
	sf_task_path(path, tid, "/ns/net");
	return proc_stat(path, &st) < 0 || st.st_ino != w->ino;
}

int sf_program_threads_share_net(void)
{
	struct same_net w = {(uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0), 0};
	char path[48];
	struct stat st;
	sf_task_path(path, w.self, "/ns/net");
	if (proc_stat(path, &st) < 0)
		return 0;
	w.ino = st.st_ino;
	return proc_entries("/proc/self/task", each_net, &w) > 0;
}

/* On the writer: every task of the program's but the exited leader has
 * the writer's credentials, root and mount namespace, and room in its
 * table for the log's descriptor. 0 if any differs or /proc cannot say;
 * *no_room then says whether a table had no room (no descriptor can be
 * given to the program's threads at all: writer.c keeps the writer). */
int sf_program_threads_like_writer(int *no_room)
{
	struct like_writer w = {0};
	*no_room = 0;
	char path[48];
	struct stat st;
	struct rlimit rl;
	w.self = (uint32_t)sf_syscall3(SYS_gettid, 0, 0, 0);
	sf_task_path(path, w.self, "/status");
	if (!cred_lines(path, w.own, sizeof(w.own)))
		return 0;
	sf_task_path(path, w.self, "/root");
	if (proc_stat(path, &st) < 0)
		return 0;
	w.root_dev = st.st_dev;
	w.root_ino = st.st_ino;
	sf_task_path(path, w.self, "/ns/mnt");
	if (proc_stat(path, &st) < 0)
		return 0;
	w.mnt_ino = st.st_ino;
	if (sf_syscall6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0) < 0)
		return 0;
	w.nofile = rl.rlim_cur;
	int r = proc_entries("/proc/self/task", each_task, &w);
	*no_room = w.no_room;
	return r > 0;
}
