/* record --max-size: the recording's shared byte budget (format/run_budget.h).
 * Every process of the run maps the same small file MAP_SHARED (a forked
 * child keeps the parent's mapping, an exec'd one maps it again), so one
 * atomic add decides for all of them. Claims happen off the hot path: when
 * a log, a slot or a chunk is about to be written. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/run_budget.h"
#include "runtime/runtime.h"

static struct sf_budget *B;

void sf_budget_init(void)
{
	const char *path = getenv(SF_ENV(BUDGET_FILE));
	if (!path || path[0] != '/')
		return;
	/* Checked like every path from the environment (trust.c), and sized
	 * before it is mapped: a short file would SIGBUS the program. */
	const char *why;
	int fd = sf_trust_open(AT_FDCWD, path, O_RDWR, 0, &why);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_size < (off_t)SF_BUDGET_SIZE)) {
		why = "too short";
		sf_close(fd);
		fd = -1;
	}
	if (fd < 0) {
		sf_rt_message("cannot use the size budget ", path, why);
		return;
	}
	void *m = mmap(NULL, SF_BUDGET_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	sf_close(fd);
	if (m == MAP_FAILED || ((struct sf_budget *)m)->magic != SF_BUDGET_MAGIC) {
		if (m != MAP_FAILED)
			munmap(m, SF_BUDGET_SIZE);
		sf_rt_message("unreadable size budget ", path, "the --max-size cap does not apply");
		return;
	}
	B = m;
}

int sf_budget_capped(void)
{
	return B && __atomic_load_n(&B->capped, __ATOMIC_ACQUIRE);
}

uint64_t sf_budget_cap(void)
{
	return B ? B->cap : 0;
}

/* Bytes of log the budget has left (UINT64_MAX with no cap). */
uint64_t sf_budget_room(void)
{
	if (!B)
		return UINT64_MAX;
	uint64_t used = __atomic_load_n(&B->used, __ATOMIC_RELAXED);
	return used < B->cap ? B->cap - used : 0;
}

/* 0 if n more bytes of log fit in the budget (they are then claimed). */
int sf_budget_take(uint64_t n)
{
	if (!B)
		return 0;
	if (__atomic_load_n(&B->capped, __ATOMIC_ACQUIRE))
		return -1;
	uint64_t before = __atomic_fetch_add(&B->used, n, __ATOMIC_RELAXED);
	if (before + n <= B->cap)
		return 0;
	uint32_t zero = 0;
	if (__atomic_compare_exchange_n(&B->capped, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		B->capped_pid = (uint32_t)getpid();
		B->capped_mono_ns = sf_mono_ns();
	}
	sf_log_note_capped();
	return -1;
}

/* Events of a process that has no log to count them in. */
void sf_budget_drop_nolog(uint64_t events)
{
	if (B && events)
		__atomic_add_fetch(&B->dropped_nolog, events, __ATOMIC_RELAXED);
}
