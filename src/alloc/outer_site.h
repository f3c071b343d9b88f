/* The call site an interposed allocator reports, when an outer interposed
 * function stands between the program and it (libsftrace-alloc.so).
 *
 * glibc's reallocarray and libstdc++'s operator new call realloc and
 * malloc through the PLT, that is, our realloc and malloc, whose return
 * address then lies inside libc or libstdc++. The outer function (our
 * reallocarray, our operator new: src/alloc/opnew.c) leaves its own return
 * address, the program's call site, in this thread-local word before it
 * calls the real one; the first interposed function to record takes it
 * (and clears it), so the event is recorded once, at the program's line.
 * The outer function clears the word after the call if nothing took it. */
#ifndef SFTRACE_ALLOC_OUTER_SITE_H
#define SFTRACE_ALLOC_OUTER_SITE_H

extern __thread void *sf_alloc_outer_site __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* ra (the caller's return address), unless an outer function left one. */
static inline void *sf_alloc_site(void *ra)
{
	void *o = sf_alloc_outer_site;
	if (__builtin_expect(o != NULL, 0)) {
		sf_alloc_outer_site = NULL;
		return o;
	}
	return ra;
}

#endif
