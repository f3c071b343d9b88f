/* C++ operator new (all eight forms), stood in front of in
 * libsftrace-alloc.so so that an allocation by `new` is recorded at the
 * program's line, not at the address inside libstdc++'s operator new that
 * calls malloc (outer_site.h). None is exported: libsftrace.so points the
 * GOT slots of the references bound to libstdc++'s definitions here
 * (src/runtime/got_bind.c, from the table sftrace_alloc_binds gives), so
 * a C program's dlsym, dlvsym or weak reference finds no operator new, as
 * untraced, and one loaded with libstdc++ finds libstdc++'s; a
 * replacement operator new (the executable's, say) keeps its references.
 * Each calls libstdc++'s definition, so
 * new_handler loops and std::bad_alloc behave as without us: the
 * exception passes through these frames (x86-64 always has unwind
 * tables). Nothing is recorded here: the malloc (or aligned_alloc) that
 * operator new calls records, with the site left here. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc/outer_site.h"
#include "runtime/runtime.h"

#define EXPORT __attribute__((visibility("default")))

/* libstdc++'s definition of `name`, the one the bound references had
 * (also in a libstdc++ a plugin loaded locally). Read
 * from the objects' symbol tables (elf_sym.c, linked in here too), never
 * through libdl: this runs at the program's first `new`, and a dlsym
 * there would free or set the program's pending dlerror message. */
static void *next_def(const char *name)
{
	void *f = sf_sym_lib("libstdc++.so", name);
	if (!f)
		abort(); /* bound only where libstdc++ defines it: cannot happen */
	return f;
}

/* One form: leave the caller's site unless an outer form already did
 * (operator new[] calls operator new through the PLT), call the next. */
#define NEW_FORM(sym, params, args)                                                        \
	static void *stand_##sym params                                                    \
	{                                                                                  \
		static void *(*next) params;                                               \
		if (!next)                                                                 \
			next = (void *(*) params)next_def(#sym);                           \
		if (!sf_alloc_site_off)                                                    \
			sf_alloc_site_find();                                              \
		int mine = sf_alloc_outer_get() == NULL;                                   \
		if (mine)                                                                  \
			sf_alloc_outer_set(__builtin_return_address(0));                   \
		void *p = next args;                                                       \
		if (mine)                                                                  \
			sf_alloc_outer_set(NULL);                                          \
		return p;                                                                  \
	}                                                                                  \
	static uintptr_t bind_##sym(void)                                                  \
	{                                                                                  \
		return (uintptr_t)stand_##sym;                                             \
	}

NEW_FORM(_Znwm, (size_t n), (n))
NEW_FORM(_Znam, (size_t n), (n))
NEW_FORM(_ZnwmRKSt9nothrow_t, (size_t n, const void *nt), (n, nt))
NEW_FORM(_ZnamRKSt9nothrow_t, (size_t n, const void *nt), (n, nt))
NEW_FORM(_ZnwmSt11align_val_t, (size_t n, size_t al), (n, al))
NEW_FORM(_ZnamSt11align_val_t, (size_t n, size_t al), (n, al))
NEW_FORM(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t al, const void *nt), (n, al, nt))
NEW_FORM(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t al, const void *nt), (n, al, nt))

#define BIND(sym) {#sym, "libstdc++.so", bind_##sym, 1}
static const struct sf_bind binds[] = {
	BIND(_Znwm), BIND(_Znam), BIND(_ZnwmRKSt9nothrow_t), BIND(_ZnamRKSt9nothrow_t),
	BIND(_ZnwmSt11align_val_t), BIND(_ZnamSt11align_val_t),
	BIND(_ZnwmSt11align_val_tRKSt9nothrow_t), BIND(_ZnamSt11align_val_tRKSt9nothrow_t),
};

/* The table libsftrace.so binds from (found in our symbol table). */
EXPORT const struct sf_bind *sftrace_alloc_binds(int *n)
{
	*n = (int)(sizeof(binds) / sizeof(binds[0]));
	return binds;
}
