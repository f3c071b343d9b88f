/* dlsym and dlvsym: an object's own handle answers with the runtime's
 * wrapper where the program's own reference would (issue 24).
 *
 * The runtime stands in front of libc's functions by symbol (exports.map):
 * the program's references, and dlsym(RTLD_DEFAULT) or dlsym(RTLD_NEXT)
 * from the program, reach the wrapper. A handle of libc itself
 * (dlsym(dlopen("libc.so.6"), "posix_spawn")) searched only libc and
 * answered libc's definition: a program that then spawned with an
 * environment of its own (after clearenv) started an untraced child, and
 * its execve, clone, close_range and the rest bypassed the runtime. The
 * runtime once rewrote libc's posix_spawn instead, which a program reading
 * libc's code saw.
 *
 * So the lookup on an object's handle goes to glibc's dlsym, and an answer
 * that is the definition the program's own reference binds past the
 * runtime (the first, in load order, of an object not the tracer's; of the
 * default version, or of dlvsym's) is given as the definition the
 * reference binds to: the tracer's wrapper of that name and version, the
 * address the program's PLT holds. dladdr of it names libc's definition,
 * as untraced (dladdr.c). Any other answer is glibc's as it is: an
 * object's own definition of that name (a plugin's "close"), the libc of a
 * dlmopen namespace (the runtime is not in it; dl_iterate_phdr walks only
 * the runtime's namespace, so that copy is never the untraced answer).
 *
 * RTLD_DEFAULT and RTLD_NEXT are looked up in the scope of the caller's
 * object, which glibc finds from dlsym's return address: those, and every
 * name no tracer object defines, go to glibc's dlsym by a tail jump from
 * the arch stub (arch/<arch>/dlsym.S) with the return address the caller
 * left, so glibc sees exactly the call it would untraced. Only a wrapped
 * name on an object's handle is looked up from here; glibc then names the
 * runtime as the caller, which only an LD_AUDIT module's la_symbind sees.
 * Costs: a hash lookup in the tracer's objects for every lookup on a
 * handle; for a wrapped name three dl_iterate_phdr walks. No allocation,
 * no libdl call: the program's dlerror state is what glibc's one dlsym
 * left. */
#include <dlfcn.h>

#include "runtime/runtime.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

static void *real_dlsym, *real_dlvsym;

static void *next_def(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (!f) {
		f = sf_real(name);
		__atomic_store_n(slot, f, __ATOMIC_RELAXED);
	}
	return f;
}

/* The address the program's reference to name@ver binds to, when the
 * answer is the one it binds past the tracer; else the answer. */
static void *as_referenced(void *answer, const char *name, const char *ver)
{
	if (!answer)
		return answer;
	void *first = sf_sym_any_v(name, ver);
	if (!first || first == answer || !sf_in_tracer_object(first))
		return answer;
	return sf_sym_untraced_v(name, ver) == answer ? first : answer;
}

static void *on_handle(void *handle, const char *name)
{
	return as_referenced(((dlsym_fn)real_dlsym)(handle, name), name, NULL);
}

static void *on_handle_v(void *handle, const char *name, const char *ver)
{
	return as_referenced(((dlvsym_fn)real_dlvsym)(handle, name, ver), name, ver);
}

/* No glibc dlsym found (cannot happen with libc loaded): dlsym's answer
 * for a missing symbol, without its message. */
static void *none(void)
{
	return NULL;
}

/* Where the stub goes on with the arguments it was given (v: dlvsym's,
 * with ver; dlsym's: ver is not an argument). */
SF_HIDDEN void *sf_dlsym_route(void *handle, const char *name, const char *ver, int v)
{
	void *real = v ? next_def(&real_dlvsym, "dlvsym") : next_def(&real_dlsym, "dlsym");
	if (!real)
		return (void *)none;
	if (handle == RTLD_DEFAULT || handle == RTLD_NEXT || !name || (v && !ver) ||
	    !sf_tracer_defines(name, v ? ver : NULL))
		return real;
	return v ? (void *)on_handle_v : (void *)on_handle;
}
