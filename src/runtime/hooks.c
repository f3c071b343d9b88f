/* Loader and process hooks: objects dlopen'd later are patched before
 * dlopen returns; dlclose'd ones are marked unloaded in the log; a forked
 * child drops the parent's log and buffers and starts its own. */
#include <dlfcn.h>
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

typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);
typedef int (*dlclose_fn)(void *);

__attribute__((visibility("default"))) void *dlopen(const char *file, int mode)
{
	static dlopen_fn real;
	if (!real)
		real = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
	void *h = real ? real(file, mode) : NULL;
	if (h && sf_config.enabled)
		sf_objects_scan(SF_OBJ_DLOPEN);
	return h;
}

__attribute__((visibility("default"))) void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
	static dlmopen_fn real;
	if (!real)
		real = (dlmopen_fn)dlsym(RTLD_NEXT, "dlmopen");
	void *h = real ? real(lmid, file, mode) : NULL;
	if (h && sf_config.enabled)
		sf_objects_scan(SF_OBJ_DLOPEN);
	return h;
}

__attribute__((visibility("default"))) int dlclose(void *handle)
{
	static dlclose_fn real;
	if (!real)
		real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
	int r = real ? real(handle) : -1;
	if (sf_config.enabled)
		sf_objects_check_unloaded();
	return r;
}
