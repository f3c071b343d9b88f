/* libsftrace-alloc.so: the libc allocator family, interposed.
 *
 * `sftrace record --alloc` preloads this library next to libsftrace.so;
 * without --alloc it is not loaded at all, so nothing changes and nothing
 * costs more. Each function calls the next definition in the lookup order
 * (RTLD_NEXT's, read from the objects' symbol tables by elf_sym.c, never
 * through libdl, which would change the program's dlerror state: libc's,
 * or an allocator library the program links against), then reports the result to the runtime (src/runtime/alloc.c)
 * with the call site, the return address of the allocator call.
 *
 * Bootstrap: a lookup (dlsym once, now none) may call calloc or malloc before the next
 * definitions are known. Those calls are served from a static arena,
 * whose blocks are never passed to the real free (free ignores them,
 * realloc copies them out) and are not reported: they are dlsym's, not
 * the program's. The runtime records from before every constructor but
 * its own (init.c), so a library constructor's allocations, the first
 * to reach this file, are reported like any other.
 *
 * libc + libdl only, no allocation of our own, errno preserved (the
 * runtime's hooks preserve it themselves: their fast path sets nothing,
 * their slow path saves and restores it; src/runtime/alloc.c). */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

#include "alloc/outer_site.h"
#include "runtime/runtime.h"

#define EXPORT __attribute__((visibility("default")))

/* In libsftrace.so (preloaded with us); weak so that this library alone is
 * inert. Called through their GOT entries, which the weak test loads
 * anyway, rather than through a PLT stub (noplt, where the compiler has it). */
#if defined(__has_attribute) && __has_attribute(noplt)
#define HOOK __attribute__((weak, noplt))
#else
#define HOOK __attribute__((weak))
#endif
HOOK void sftrace_heap_alloc(void *ptr, size_t size, size_t align, void *site);
HOOK void sftrace_heap_free(void *ptr, void *site);
HOOK void sftrace_heap_realloc(void *ptr, void *old, size_t size, void *site);
HOOK void sftrace_heap_attach(unsigned flags);
HOOK void **sftrace_heap_site_slot(void);
/* malloc, calloc and free: the runtime takes an outer site in ra's place
 * itself (one TLS word of its own); the allocation hook returns ptr and
 * the free hook calls the real free, so that each of them ends in a jump
 * to its hook. */
HOOK void *sftrace_heap_alloc_ra(void *ptr, size_t size, void *ra);
HOOK void sftrace_heap_free_ra(void *ptr, void *ra, void (*real_free)(void *));

long sf_alloc_site_off;

void sf_alloc_site_find(void)
{
	if (sftrace_heap_site_slot)
		sf_alloc_site_off = (char *)sftrace_heap_site_slot() - (char *)__builtin_thread_pointer();
}

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
} real;
static int resolving;

/* ---- bootstrap arena ---- */

#define ARENA_SIZE (256 * 1024)
static _Alignas(64) unsigned char arena[ARENA_SIZE];
static size_t arena_used;

struct arena_hdr {
	size_t size;
	size_t pad;
};

static int in_arena(const void *p)
{
	return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_SIZE;
}

static void *arena_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	size_t at = __atomic_load_n(&arena_used, __ATOMIC_RELAXED), start, end;
	do {
		start = (at + sizeof(struct arena_hdr) + align - 1) & ~(align - 1);
		end = start + ((size + 15) & ~(size_t)15);
		if (size > ARENA_SIZE || end > ARENA_SIZE)
			return NULL;
	} while (!__atomic_compare_exchange_n(&arena_used, &at, end, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	((struct arena_hdr *)(arena + start))[-1].size = size;
	return arena + start; /* static storage: already zero */
}

static size_t arena_size(const void *p)
{
	return ((const struct arena_hdr *)p)[-1].size;
}

/* ---- the next definitions ---- */

#define LOOKUP(name) real.name = (__typeof__(real.name))sf_real(#name)

/* ld.so's executable segment [lo, lo + span), read from its program
 * headers in memory (no dl_iterate_phdr: its lock may be held by our
 * caller). A return address ra is in it when ra - lo < span: a move, a
 * subtraction and a compare with memory operands. */
static uintptr_t ldso_lo, ldso_span;

static void find_ldso(void)
{
	uintptr_t base = (uintptr_t)getauxval(AT_BASE);
	if (!base)
		return;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
			ldso_lo = base + ph[i].p_vaddr;
			ldso_span = ph[i].p_memsz;
		}
}

/* The bytes of a calloc as the program would have asked untraced. ld.so
 * allocates each new thread's DTV with calloc(max modid + 14 + 2, 16)
 * (glibc's allocate_dtv); libsftrace.so's TLS is one module more, so a
 * DTV is 16 B larger traced. The call is ld.so's (the return address is
 * in its text) with elements of a DTV entry's size. */
static size_t program_calloc_bytes(size_t n, size_t size, void *ra)
{
	if (__builtin_expect(size != 16, 1) || (uintptr_t)ra - ldso_lo >= ldso_span || n < 16 + 1 ||
	    !sftrace_heap_alloc_ra)
		return n * size;
	return (n - 1) * size;
}

/* The calling thread's DTV (glibc's tcbhead_t.dtv: the word after the
 * TCB pointer on x86-64, the first word at the thread pointer on
 * aarch64), NULL where unknown. */
static inline const void *thread_dtv(void)
{
#if defined(__x86_64__)
	const void *d;
	__asm__("mov %%fs:8, %0" : "=r"(d));
	return d;
#elif defined(__aarch64__)
	return *(const void *const *)__builtin_thread_pointer();
#else
	return NULL;
#endif
}

/* The bytes of a realloc as the program would have asked untraced: a
 * DTV that grows past its spare entries (ld.so's _dl_resize_dtv, a
 * realloc of &dtv[-1] to (max modid + 14 + 2) entries of 16 B) is one
 * entry larger with the runtime's TLS module, as allocate_dtv's calloc
 * is (program_calloc_bytes). Told exactly: ld.so's call, on the calling
 * thread's own DTV. (The main thread's first growth replaces the DTV
 * ld.so made at start-up with a malloc, which names no block: that one
 * stays 16 B larger, docs/DESIGN.md.) */
static size_t program_realloc_bytes(const void *old, size_t size, void *ra)
{
	if (__builtin_expect((uintptr_t)ra - ldso_lo >= ldso_span, 1) || !old || size < 17 * 16 ||
	    size % 16 || !sftrace_heap_alloc_ra || (const char *)thread_dtv() - 16 != (const char *)old)
		return size;
	return size - 16;
}

/* ld.so's TLS state (glibc's struct rtld_global, exported from ld.so as
 * _rtld_global, GLIBC_PRIVATE): &GL(dl_tls_max_dtv_idx), the highest TLS
 * module id, and GL(dl_initial_dtv), the main thread's DTV as ld.so made
 * it at start-up; NULL when not found. Found by the second: the word of
 * _rtld_global equal to the calling thread's DTV (the main thread's, still
 * the initial one: the first allocation comes at start-up). glibc
 * (sysdeps/generic/ldsodefs.h: 2.36, and its current source) declares, in order,
 * _dl_tls_max_dtv_idx, _dl_tls_dtv_slotinfo_list, _dl_tls_static_nelem,
 * _used, _optional, then _dl_initial_dtv: the index is five words before
 * it. Taken only if what ld.so's init_tls made at start-up holds: the
 * initial DTV has max + 14 entries (allocate_dtv; it never changes, the DTV
 * is replaced when it grows) and the slot-info list's first block
 * max + 1 + 62 (TLS_SLOTINFO_SURPLUS), i.e. 49 more, and the index has
 * not fallen below its start-up value. Any other layout: not found, and
 * the main thread's first DTV growth stays 16 B larger. */
static const size_t *tls_max_idx;
static const void *initial_dtv;

static void find_tls_state(void)
{
	size_t size = 0;
	const void *const *g = sf_sym_lib_sized("ld-linux", "_rtld_global", &size);
	const void *d = thread_dtv();
	if (!g || !d)
		return;
	size_t counter = ((const size_t *)d)[-2]; /* dtv[-1].counter: its entries */
	for (size_t i = 5; i < size / sizeof(void *); i++) {
		if (g[i] != d)
			continue;
		const size_t *max = (const size_t *)&g[i - 5];
		const size_t *list = (const size_t *)g[i - 4]; /* its len, then next */
		if (counter > 14 && *max >= counter - 14 && *max < ((size_t)1 << 24) && list && list[0] == counter + 49) {
			tls_max_idx = max;
			initial_dtv = d;
		}
		return;
	}
}

/* The bytes of a malloc as the program would have asked untraced: the
 * main thread's first DTV growth (ld.so's _dl_resize_dtv on the initial
 * DTV, which ld.so cannot free: it mallocs (max modid + 14 + 2) entries of
 * 16 B and copies the old ones) is one entry larger with the runtime's TLS
 * module, as allocate_dtv's calloc and later growths' realloc are. Told
 * exactly: ld.so's call, on the thread whose DTV is still the initial one
 * (the main thread before its first growth), of (max modid + 16) * 16 B
 * with max modid past the initial DTV's entries (a growth is due: a TLS
 * block ld.so mallocs there is for a module that fits, whose size may be
 * anything). */
static size_t program_malloc_bytes(size_t size)
{
	if (!initial_dtv || thread_dtv() != initial_dtv || !sftrace_heap_alloc_ra)
		return size;
	size_t max = __atomic_load_n(tls_max_idx, __ATOMIC_RELAXED);
	if (size != (max + 16) * 16 || max + 14 <= ((const size_t *)initial_dtv)[-2])
		return size;
	return size - 16;
}

static void resolve(void)
{
	resolving = 1;
	find_ldso();
	find_tls_state();
	LOOKUP(calloc);
	LOOKUP(free);
	LOOKUP(realloc);
	LOOKUP(reallocarray);
	LOOKUP(posix_memalign);
	LOOKUP(aligned_alloc);
	LOOKUP(memalign);
	LOOKUP(valloc);
	LOOKUP(pvalloc);
	LOOKUP(malloc_usable_size);
	void *(*m)(size_t) = (void *(*)(size_t))sf_real("malloc");
	sf_alloc_site_find();
	__atomic_store_n(&real.malloc, m, __ATOMIC_RELEASE); /* last: "resolved" */
	resolving = 0;
}

/* 1 when the real functions are known; 0 while dlsym is running. */
static inline int ready(void)
{
	if (__builtin_expect(__atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE) != NULL, 1))
		return 1;
	if (resolving)
		return 0;
	resolve();
	return real.malloc != NULL;
}

/* Tells the runtime --alloc is on (the log says so: a log without heap
 * events is then a program that allocated nothing), and whether the
 * program's malloc is this one: an executable that defines malloc itself
 * comes first in the lookup order, and none of its calls reach here. */
__attribute__((constructor(101))) static void interpose_init(void)
{
	ready();
	if (sftrace_heap_attach) {
		/* the object the lookup order takes malloc from, against this
		 * one; by address ranges, not dladdr: the runtime's dladdr names
		 * libc for this object's malloc, as the program sees it */
		void *m = sf_sym_any_v("malloc", NULL);
		if (!m) /* an executable without DT_GNU_HASH: start-up, nothing of the program's pending */
			m = dlsym(RTLD_DEFAULT, "malloc");
		int hidden = m && !sf_in_tracer_object(m);
		sftrace_heap_attach(hidden ? 1u : 0u);
	}
}

static inline void report_alloc(void *p, size_t size, size_t align, void *site)
{
	if (p && sftrace_heap_alloc)
		sftrace_heap_alloc(p, size, align, site);
}

static inline void report_free(void *p, void *site)
{
	if (p && sftrace_heap_free)
		sftrace_heap_free(p, site);
}

/* realloc-like: old -> p (either may be NULL). */
static void report_realloc(void *p, void *old, size_t size, void *site)
{
	if (!old)
		report_alloc(p, size, 0, site);
	else if (p && sftrace_heap_realloc)
		sftrace_heap_realloc(p, old, size, site);
	else if (!p && !size)
		report_free(old, site); /* realloc(p, 0) freed p */
}

/* the caller's return address, or the program's site an outer interposed
 * function left (outer_site.h) */
#define SITE sf_alloc_site(__builtin_return_address(0))

/* The hook of malloc and calloc: sftrace_heap_alloc_ra, which takes the
 * site an outer function left itself and returns p. */
static inline void *report_alloc_ra(void *p, size_t size, void *ra)
{
	if (sftrace_heap_alloc_ra)
		return sftrace_heap_alloc_ra(p, size, ra);
	return p;
}

/* malloc called from ld.so (program_malloc_bytes), out of malloc's way. */
static __attribute__((noinline, cold)) void *malloc_from_ldso(size_t size, void *ra)
{
	return report_alloc_ra(real.malloc(size), program_malloc_bytes(size), ra);
}

EXPORT void *malloc(size_t size)
{
	if (!ready())
		return arena_alloc(size, 16);
	void *ra = __builtin_return_address(0);
	if (__builtin_expect((uintptr_t)ra - ldso_lo < ldso_span, 0))
		return malloc_from_ldso(size, ra);
	return report_alloc_ra(real.malloc(size), size, ra);
}

/* free's other cases, out of its way (its callers' return address: ra). */
static __attribute__((noinline)) void free_rest(void *p, void *ra)
{
	if (!p || in_arena(p))
		return;
	if (!ready())
		return; /* cannot happen: p came from the real allocator */
	if (sftrace_heap_free_ra)
		sftrace_heap_free_ra(p, ra, real.free);
	else
		real.free(p);
}

EXPORT void free(void *p)
{
	/* the common case first: no register to save, a jump to the hook */
	if (__builtin_expect(p && !in_arena(p) && __atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE) && sftrace_heap_free_ra, 1)) {
		sftrace_heap_free_ra(p, __builtin_return_address(0), real.free);
		return;
	}
	free_rest(p, __builtin_return_address(0));
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (!ready() || !real.calloc) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return arena_alloc(total, 16);
	}
	return report_alloc_ra(real.calloc(n, size), program_calloc_bytes(n, size, __builtin_return_address(0)),
			       __builtin_return_address(0));
}

static void *realloc_from_arena(void *old, size_t size)
{
	void *p = ready() ? real.malloc(size) : arena_alloc(size, 16);
	if (p) {
		size_t keep = arena_size(old);
		memcpy(p, old, keep < size ? keep : size);
	}
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	if (old && in_arena(old)) {
		void *p = realloc_from_arena(old, size);
		if (p && !in_arena(p))
			report_alloc(p, size, 0, SITE);
		return p;
	}
	if (!ready())
		return old ? NULL : arena_alloc(size, 16);
	void *p = real.realloc(old, size);
	report_realloc(p, old, program_realloc_bytes(old, size, __builtin_return_address(0)), SITE);
	return p;
}

/* glibc's reallocarray calls realloc through the PLT: our realloc records
 * it, at the site left here (outer_site.h); recorded here only when the
 * real one did not come through us. */
EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	int resolved = ready(); /* first: it finds the site's word */
	void *site = SITE;
	sf_alloc_outer_set(site);
	if ((old && in_arena(old)) || !resolved || !real.reallocarray) {
		void *p = realloc(old, total);
		sf_alloc_outer_set(NULL);
		return p;
	}
	void *p = real.reallocarray(old, n, size);
	if (sf_alloc_outer_get() == site) {
		sf_alloc_outer_set(NULL);
		report_realloc(p, old, total, site);
	}
	return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (!ready() || !real.posix_memalign) {
		void *p = arena_alloc(size, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	int r = real.posix_memalign(out, align, size);
	if (r == 0)
		report_alloc(*out, size, align, SITE);
	return r;
}

/* The aligned family: same shape, one real function each. */
#define ALIGNED(name, params, args, align_expr)                                \
	EXPORT void *name params                                               \
	{                                                                      \
		if (!ready() || !real.name)                                    \
			return arena_alloc(size, align_expr);                  \
		void *p = real.name args;                                      \
		report_alloc(p, size, align_expr, SITE);                       \
		return p;                                                      \
	}

ALIGNED(aligned_alloc, (size_t align, size_t size), (align, size), align)
ALIGNED(memalign, (size_t align, size_t size), (align, size), align)
ALIGNED(valloc, (size_t size), (size), 4096)
ALIGNED(pvalloc, (size_t size), (size), 4096)
EXPORT size_t malloc_usable_size(void *p)
{
	if (p && in_arena(p))
		return arena_size(p);
	if (!ready() || !real.malloc_usable_size)
		return 0;
	return real.malloc_usable_size(p);
}
