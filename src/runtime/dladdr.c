/* dladdr and dladdr1 as the program sees them untraced (issue 24).
 *
 * The runtime exports wrappers of libc functions (system, popen, close,
 * execve, ...: exports.map) and libsftrace-alloc.so those of the allocator
 * family, so a program's &system, dlsym(RTLD_DEFAULT, "system") and
 * dlvsym are the wrapper's address. dladdr of it named libsftrace.so and
 * the wrapper where untraced it names libc.so.6 and "system": a crash
 * reporter, a plugin host checking where a function comes from, or a
 * test of the program saw the tracer.
 *
 * An address that is exactly the start of a function a tracer object
 * exports is answered as the definition of the same name and version the
 * program would have had untraced: the first, in load order, of an object
 * that is not the tracer's (glibc's, or a later preload's). Any other
 * address (the runtime's code in a backtrace, its hidden functions) is
 * answered as it is. dli_saddr is the address asked about, as untraced,
 * except for dladdr1's RTLD_DL_SYMENT, where it agrees with the entry
 * (pointer equality itself is not hidden: &system is the wrapper). Not on
 * any hot path: two dl_iterate_phdr walks. */
#include <dlfcn.h>
#include <errno.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

typedef int (*dladdr_fn)(const void *, Dl_info *);
typedef int (*dladdr1_fn)(const void *, Dl_info *, void **, int);

/* The definition the program would see at addr untraced, or addr. */
static const void *untraced_address(const void *addr)
{
	const char *name, *ver;
	if (!addr || !sf_tracer_symbol_at(addr, &name, &ver))
		return addr;
	void *own = sf_sym_untraced_v(name, ver);
	return own ? own : addr;
}

/* The answer for `to`, with dli_saddr the address the program asked about
 * when that was a wrapper's start (untraced the two are equal: a reporter
 * prints "system+0x0"). */
static int answer(int r, const void *addr, const void *to, Dl_info *info)
{
	if (r && to != addr && info->dli_saddr == to)
		info->dli_saddr = (void *)addr;
	return r;
}

__attribute__((visibility("default"))) int sf_dladdr(const void *addr, Dl_info *info)
{
	static dladdr_fn real;
	dladdr_fn f = __atomic_load_n(&real, __ATOMIC_RELAXED);
	if (!f) {
		f = (dladdr_fn)sf_real("dladdr");
		if (!f)
			return 0;
		__atomic_store_n(&real, f, __ATOMIC_RELAXED);
	}
	const void *to = untraced_address(addr);
	return answer(f(to, info), addr, to, info);
}

__attribute__((visibility("default"))) int sf_dladdr1(const void *addr, Dl_info *info, void **extra, int flags)
{
	static dladdr1_fn real;
	dladdr1_fn f = __atomic_load_n(&real, __ATOMIC_RELAXED);
	if (!f) {
		f = (dladdr1_fn)sf_real("dladdr1");
		if (!f)
			return 0;
		__atomic_store_n(&real, f, __ATOMIC_RELAXED);
	}
	const void *to = untraced_address(addr);
	int r = f(to, info, extra, flags);
	/* with the symbol's entry, dli_saddr stays the one that entry gives
	 * (dli_fbase + st_value): the two cannot both be as untraced */
	return flags == RTLD_DL_SYMENT ? r : answer(r, addr, to, info);
}

/* glibc 2.34 moved both into libc.so.6 with new default versions; the
 * first ones (libdl's) stay for programs built before. Both versions of
 * each bind here (exports.map). */
__asm__(".symver sf_dladdr, dladdr@@GLIBC_2.34, remove");
__asm__(".symver sf_dladdr, dladdr@" SF_GLIBC_BASE_VERSION);
__asm__(".symver sf_dladdr1, dladdr1@@GLIBC_2.34, remove");
__asm__(".symver sf_dladdr1, dladdr1@" SF_GLIBC_DLADDR1_OLD);
