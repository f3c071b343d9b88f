/* Thread storage for a thread of the runtime's that glibc does not know
 * (the writer: writer.c), made without pthread_create.
 *
 * pthread_create callocs the new thread's DTV through the program's
 * malloc (ld.so's __rtld_calloc is the calloc of the main namespace): made
 * before main, that one call initialised the main arena (sbrk, 132 KiB)
 * and the creating thread's tcache, so a program reading its own heap
 * (mallinfo2, malloc_stats, malloc_info, sbrk(0)) saw 976 bytes in use
 * where untraced it sees none (issue 25). It also put the process on
 * glibc's multi-threaded paths (__libc_single_threaded, stdio's locks).
 *
 * Here the block glibc would put on the thread's stack is mapped instead:
 * the static TLS blocks and the thread descriptor, at the layout and size
 * ld.so gives (_dl_get_tls_static_info), the DTV beside them, long enough
 * that glibc never grows it (it would realloc it with the program's
 * malloc: only a dynamic TLS access on this thread could, and the
 * runtime's own TLS is initial-exec). ld.so's _dl_allocate_tls_init fills
 * it as it does for pthread_create (every module's initialisation image,
 * the DTV's entries), then the descriptor gets what pthread_create's
 * allocate_stack and the kernel would give it: the self pointers and the
 * stack and pointer guards (x86_64's TCB header), the thread id (the
 * clone's CLONE_PARENT_SETTID and CLONE_CHILD_CLEARTID word, where glibc's
 * recursive locks look for their owner: _thread_db_pthread_tid, libc's
 * description of its own layout for libthread_db), and an rseq area
 * marked unregistered (sched_getcpu then asks the kernel). No malloc, no
 * lock of the program's. All GLIBC_PRIVATE: where one is missing (another
 * libc), sf_own_tls_make fails and the writer is a pthread, as before. */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

typedef void (*static_info_fn)(size_t *size, size_t *align);
typedef void *(*tls_init_fn)(void *tp, _Bool init_tls);

static static_info_fn static_info;
static tls_init_fn tls_init;
static const uint32_t *tid_desc; /* {bits, count, offset} of struct pthread's tid */
static const ptrdiff_t *rseq_offset;
static const unsigned int *rseq_size;

#define DTV_SLOTS 4096 /* modules with TLS: glibc never resizes a DTV this long here */

/* At start-up (writer.c, sf_writer_resolve). */
void sf_own_tls_resolve(void)
{
	static_info = (static_info_fn)sf_sym_any_v("_dl_get_tls_static_info", "GLIBC_PRIVATE");
	tls_init = (tls_init_fn)sf_sym_any_v("_dl_allocate_tls_init", "GLIBC_PRIVATE");
	tid_desc = (const uint32_t *)sf_sym_any_v("_thread_db_pthread_tid", "GLIBC_PRIVATE");
	rseq_offset = (const ptrdiff_t *)sf_sym_any_v("__rseq_offset", "GLIBC_2.35");
	rseq_size = (const unsigned int *)sf_sym_any_v("__rseq_size", "GLIBC_2.35");
}

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* A thread pointer for a new thread (the clone's CLONE_SETTLS value) in
 * T, and where its thread id goes (T->tid). -1 where it cannot be made. */
int sf_own_tls_make(struct sf_own_tls *t)
{
	memset(t, 0, sizeof *t);
	if (!static_info || !tls_init || !tid_desc || tid_desc[0] != 32)
		return -1;
	size_t size = 0, align = 0;
	static_info(&size, &align);
	if (!size || !align || (align & (align - 1)))
		return -1;
	if (align < 64)
		align = 64;
	char *my_tp = sf_arch_tp();
	ptrdiff_t self_off = (char *)(uintptr_t)pthread_self() - my_tp; /* x86_64 0; aarch64 -sizeof(struct pthread) */
	size_t below = round_up(size, align) + (self_off < 0 ? (size_t)-self_off : 0) + align;
	size_t above = size + 4096; /* x86_64: the descriptor (part of size); aarch64: the blocks */
	size_t dtv_len = (DTV_SLOTS + 2) * 2 * sizeof(void *);
	size_t len = round_up(below + above + dtv_len, 4096);
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	char *tp = (char *)round_up((uintptr_t)m + below, align);
	void **dtv = (void **)(m + len - dtv_len); /* entries of two words: [-1] length, [0] generation */
	dtv[0] = (void *)(uintptr_t)DTV_SLOTS;
#ifdef __x86_64__
	/* tcbhead_t: tcb, dtv, self, multiple_threads, gscope_flag, sysinfo,
	 * stack_guard, pointer_guard, vgetcpu_cache[2], feature_1 */
	((void **)tp)[0] = tp;
	((void **)tp)[1] = dtv + 2;
	((void **)tp)[2] = tp;
	memcpy(tp + 0x20, my_tp + 0x20, 0x18); /* sysinfo, stack_guard, pointer_guard */
	memcpy(tp + 0x48, my_tp + 0x48, 4);    /* feature_1 (CET) */
#else
	((void **)tp)[0] = dtv + 2; /* tcbhead_t: dtv, private; the guards are globals */
#endif
	if (!tls_init(tp, 1)) {
		munmap(m, len);
		return -1;
	}
	if (rseq_offset && rseq_size && *rseq_size >= 8)
		((int32_t *)(tp + *rseq_offset))[1] = -2; /* cpu_id: RSEQ_CPU_ID_REGISTRATION_FAILED */
	t->mem = m;
	t->len = len;
	t->tp = tp;
	t->tid = (uint32_t *)(tp + self_off + tid_desc[2]);
	return 0;
}

/* After the thread has ended (its tid word cleared). */
void sf_own_tls_free(struct sf_own_tls *t)
{
	if (t->mem)
		munmap(t->mem, t->len);
	memset(t, 0, sizeof *t);
}
