/* Objects loaded after start: notified by the dynamic loader itself.
 *
 * glibc's loader calls _dl_debug_state() (the address debuggers find in
 * _r_debug.r_brk) with r_state = RT_ADD before it maps new objects, with
 * RT_CONSISTENT once they are mapped (before they are relocated and before
 * their constructors run), and around dlclose's unmapping. It calls it
 * directly, for every namespace, from dlopen, dlmopen, dlclose and failed
 * loads alike, always holding its load lock. We make that function jump to
 * sf_loader_event, which patches the new objects and notes the unloaded
 * ones, so:
 *   - dlopen and dlmopen are not wrapped: the loader sees the program's own
 *     return address (RUNPATH, $ORIGIN and namespace are the caller's);
 *   - an object's constructors are already patched when they run.
 *
 * How the function is rewritten is the architecture's
 * (sf_arch_hook_loader in arch/<arch>/loader_hook.c).
 */
#include <link.h>

#include "runtime/runtime.h"

static int hooked;

/* Called from the loader (loader_entry.S) with its load lock held, so no
 * other thread loads or unloads objects meanwhile. Both steps run at every
 * call: the loader's dlpi_adds counter moves before a new object shows in
 * dl_iterate_phdr, so it cannot tell which call has something new. The
 * cost is two walks of the object list per loader state change. */
void sf_loader_event(void)
{
	/* Tracing stopped at a seccomp filter (sandbox.c): nothing is
	 * patched from then on, and the filter may refuse every call of the
	 * scan's (the lock's signal mask first). */
	if (!sf_config.enabled || __atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
		return;
	/* Under a seccomp filter that refuses the scan's calls (sandbox.c),
	 * objects loaded from now on stay untraced: the dlopen runs as
	 * untraced. */
	int scan = !sf_seccomp_refuses_scan();
	sf_objects_check_unloaded();
	if (scan)
		sf_objects_scan(SF_OBJ_DLOPEN);
	sf_heap_early_flush(); /* the first patched sled: the heap events kept before it */
	sf_unwind_init(); /* libgcc_s, once the program loads it */
	if (scan)
		sf_bind_scan(0); /* the new objects' references to the stand-ins, before their relocation */
	sf_services_start(); /* once: the first instrumented object of a process that had none */
}

/* Installs the hook; 0 on success. A failure is reported once: objects
 * loaded later then stay unpatched. */
int sf_loader_hook_install(void)
{
	if (hooked)
		return 0;
	const char *why = sf_arch_hook_loader((void *)_r_debug.r_brk, (uint64_t)sf_loader_entry);
	if (why) {
		sf_rt_message("objects loaded after start will not be traced: ", why, NULL);
		return -1;
	}
	hooked = 1;
	return 0;
}
