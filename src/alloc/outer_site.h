/* The call site an interposed allocator reports, when an outer interposed
 * function stands between the program and it (libsftrace-alloc.so).
 *
 * glibc's reallocarray and libstdc++'s operator new call realloc and
 * malloc through the PLT, that is, our realloc and malloc, whose return
 * address then lies inside libc or libstdc++. The outer function (our
 * reallocarray, our operator new: src/alloc/opnew.c) leaves its own return
 * address, the program's call site, in a thread-local word before it
 * calls the real one; the first interposed function to record takes it
 * (and clears it), so the event is recorded once, at the program's line.
 * The outer function clears the word after the call if nothing took it. */
#ifndef SFTRACE_ALLOC_OUTER_SITE_H
#define SFTRACE_ALLOC_OUTER_SITE_H

/* The word is libsftrace.so's (sftrace_heap_site_slot): a TLS module of
 * ours would add an entry to the DTV glibc callocs for each new thread,
 * 16 B of the program's heap per thread under --alloc. It is in the
 * runtime's static TLS (preloaded, initial-exec), at the same offset from
 * the thread pointer in every thread: known once, then reached as fast as
 * our own initial-exec variable was. 0 while not known (never a static TLS
 * offset: the thread pointer points at the TCB), and for good when
 * libsftrace.so is not loaded: no site is passed on (nothing is recorded
 * then anyway). */
extern long sf_alloc_site_off __attribute__((visibility("hidden")));
/* Asks libsftrace.so for the word's offset (sets sf_alloc_site_off). */
void sf_alloc_site_find(void) __attribute__((visibility("hidden")));

static inline void **sf_alloc_site_word(void)
{
	return (void **)((char *)__builtin_thread_pointer() + sf_alloc_site_off);
}

/* The site an outer function left, or NULL. */
static inline void *sf_alloc_outer_get(void)
{
	return sf_alloc_site_off ? *sf_alloc_site_word() : NULL;
}

static inline void sf_alloc_outer_set(void *site)
{
	if (sf_alloc_site_off)
		*sf_alloc_site_word() = site;
}

/* ra (the caller's return address), unless an outer function left one. */
static inline void *sf_alloc_site(void *ra)
{
	void *o = sf_alloc_outer_get();
	if (__builtin_expect(o != NULL, 0)) {
		sf_alloc_outer_set(NULL);
		return o;
	}
	return ra;
}

#endif
