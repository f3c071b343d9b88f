/* Process hooks: a forked child drops the parent's log and buffers and
 * starts its own. (Objects loaded later: loader_hook.c.) */
#include <pthread.h>
#include <signal.h>

#include "runtime/runtime.h"

void sf_log_lock_sig(sigset_t *old) SF_HIDDEN;
void sf_log_unlock_sig(const sigset_t *old) SF_HIDDEN;

static sigset_t fork_mask;

static void before_fork(void)
{
	/* Hold the lock across fork so the child never inherits it taken. */
	sf_log_lock_sig(&fork_mask);
}

static void after_fork_parent(void)
{
	sf_log_unlock_sig(&fork_mask);
}

static void after_fork_child(void)
{
	sf_writer_after_fork_child();
	sf_log_after_fork_child();
	sf_objects_after_fork_child();
	sf_buffer_after_fork_child();
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

void sf_hooks_init(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
