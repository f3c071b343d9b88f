/* How each process of a recording ended, written into its log by record.
 *
 * A log cannot say it was killed (SIGKILL runs nothing; a crash runs no
 * code of ours, and the runtime installs no handler of its own: the
 * program's signals stay its own). Its parent can: record's keeper is the
 * command's parent and the subreaper of every orphan (record_keeper.h),
 * so it has the kernel's wait status of each process it reaps. Those of a
 * process waited for by its own parent inside the command are not seen
 * here: such a log keeps what the runtime wrote (an _exit code, or the
 * clean exit of its destructor), or nothing.
 *
 * Which log a reaped pid was: of the logs of that pid, the one written
 * last (the header's latest clock pair, taken when the log was made, at
 * each hand-off and at exit) before the reap and after the pid's previous
 * reap, if the pid was reused. An exec keeps the pid and starts a new log;
 * the earlier images exec'd, and readers say so. */
#include "cli/record_exits.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/sflog.h"
#include "lib/util.h"

struct log_start {
	const char *path;
	uint32_t pid;
	uint64_t last_mono_ns; /* the header's latest clock pair: at or after the log was made */
};

static int cmp_log(const void *a, const void *b)
{
	const struct log_start *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->last_mono_ns < y->last_mono_ns ? -1 : x->last_mono_ns > y->last_mono_ns;
}

/* By pid, then reap order (mono_ns; ties keep the order they came in). */
static int cmp_exit(const void *a, const void *b)
{
	const struct keeper_exit *x = *(const struct keeper_exit *const *)a, *y = *(const struct keeper_exit *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->mono_ns != y->mono_ns)
		return x->mono_ns < y->mono_ns ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* A regular file that holds an sftrace header: its descriptor (read and
 * write), else -1. Never follows a symlink put in the log's place. */
static int open_log(const char *path, struct sf_header *h)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || pread(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h) ||
	    h->magic != SF_MAGIC) {
		close(fd);
		return -1;
	}
	return fd;
}

static void write_exit(const char *path, const struct keeper_exit *e)
{
	struct sf_header h;
	int fd = open_log(path, &h);
	if (fd < 0)
		return;
	uint64_t w = sf_exit_pack(SF_EXIT_REAPED, (uint32_t)e->status);
	if (pwrite(fd, &w, sizeof(w), offsetof(struct sf_header, exit_state)) != (ssize_t)sizeof(w))
		sf_warn("%s: cannot record how pid %d ended: %s", path, e->pid, strerror(errno));
	close(fd);
}

void record_write_exits(char *const *logs, size_t nlogs, const struct keeper_exit *exits, size_t nexits)
{
	if (!nlogs || !nexits)
		return;
	struct log_start *ls = xcalloc(nlogs, sizeof(*ls));
	size_t n = 0;
	for (size_t i = 0; i < nlogs; i++) {
		struct sf_header h;
		int fd = open_log(logs[i], &h);
		if (fd < 0)
			continue;
		close(fd);
		if (h.snapshot) /* a copy taken while the process ran: not its end */
			continue;
		ls[n++] = (struct log_start){logs[i], h.pid, h.last_mono_ns};
	}
	qsort(ls, n, sizeof(*ls), cmp_log);
	const struct keeper_exit **ex = xcalloc(nexits, sizeof(*ex));
	for (size_t i = 0; i < nexits; i++)
		ex[i] = &exits[i];
	qsort(ex, nexits, sizeof(*ex), cmp_exit);
	size_t li = 0;
	for (size_t i = 0; i < nexits; i++) {
		const struct keeper_exit *e = ex[i];
		uint64_t after = i && ex[i - 1]->pid == e->pid ? ex[i - 1]->mono_ns : 0;
		while (li < n && ls[li].pid < (uint32_t)e->pid)
			li++;
		/* The pid's log last written in (after, reaped): its newest. */
		const struct log_start *pick = NULL;
		for (size_t k = li; k < n && ls[k].pid == (uint32_t)e->pid && ls[k].last_mono_ns < e->mono_ns; k++)
			if (ls[k].last_mono_ns >= after)
				pick = &ls[k];
		if (pick)
			write_exit(pick->path, e);
	}
	free(ex);
	free(ls);
}
