/* The stack a thread runs on: is an address on it? (docs/DESIGN.md,
 * Unwinding, "The thread's stack"). A landing that pops every entry of the
 * shadow stack asks whether its target is on the stack of the frames it
 * abandons (unwind.c), and a heap event reads a return-address slot only
 * where it is mapped (alloc.c).
 *
 * The thread's own stack is known without reading /proc/self/maps (which
 * costs tens of microseconds with 20 mappings and milliseconds with
 * thousands, and glibc's pthread_getattr_np reads it for the main thread,
 * and allocates for every thread):
 *   - the main thread's: from __libc_stack_end (the stack pointer the
 *     process started with, all its frames below it) down to RLIMIT_STACK,
 *     taken once at start-up (the kernel grows [stack] no further); with
 *     no limit, or one larger than the room below the stack, down to the
 *     mapping below [stack] and the guard gap, found once at start-up
 *     without /proc (main_stack_floor);
 *   - another glibc thread's: its stack block, which glibc records in the
 *     thread's descriptor (struct pthread's stackblock and stackblock_size,
 *     the descriptor at the block's top). glibc exports no accessor that
 *     does not allocate, so the pair's offset is found once per process by
 *     its shape on the first thread that needs it (the only pair holding
 *     the descriptor itself inside a block of PTHREAD_STACK_MIN or more,
 *     followed by a guard size smaller than the block), and checked the same
 *     way on every thread.
 * A stack the program gave makecontext is known from the ucontext's
 * uc_stack, noted by the runtime's makecontext (arch/<arch>/makecontext.S)
 * in a table every thread reads, every live context's (ctx_stack_of below).
 * Any other stack (a coroutine's switched to without makecontext, a signal
 * stack, a thread whose stack is none of these)
 * is read from /proc/self/maps as before, at most STACK_READS times a
 * thread. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "runtime/runtime.h"

/* The mapping holding addr (maps.c), stopped at the first one above it.
 * 1 if found; *grows is set for the main thread's "[stack]", which the
 * kernel extends down as it is used. Also how objects.c finds the file
 * of a program started through its loader. */
struct mapping_of {
	uint64_t addr, lo, hi;
	int grows;
};

static int mapping_of_line(const struct sf_map *m, void *arg)
{
	struct mapping_of *f = arg;
	if (m->lo > f->addr)
		return 2;
	if (f->addr >= m->hi)
		return 0;
	f->lo = m->lo;
	f->hi = m->hi;
	f->grows = m->is_stack;
	return 1;
}

__attribute__((noinline)) /* one frame to measure (callgrind --toggle-collect) */
int sf_mapping_of(uint64_t addr, uint64_t *lo, uint64_t *hi, int *grows)
{
	struct mapping_of f = {addr, 0, 0, 0};
	if (sf_maps_walk(0, mapping_of_line, &f) != 1)
		return 0;
	*lo = f.lo;
	*hi = f.hi;
	*grows = f.grows;
	return 1;
}

#ifdef SF_ARCH_SHADOW
#define stk sf_self.stack

extern void *__libc_stack_end; /* ld.so's: the stack pointer at the program's entry */

/* Taken at start-up, on the main thread (sf_stack_init). */
static struct {
	uint64_t main_pd, main_lo, main_hi; /* main_hi 0: unknown (an unlimited RLIMIT_STACK) */
	uint32_t pd_size;                   /* sizeof(struct pthread), libc's _thread_db_sizeof_pthread */
	uint32_t block_off;                 /* the stack block's offset in it, 0 until found */
} S;

enum { STACK_READS = 8, STACK_MIN = 16384 /* PTHREAD_STACK_MIN */, TOP_MAX = 1 << 20 };

/* The lowest address the main thread's stack can ever grow down to, for
 * a stack holding sp: the end of the mapping below [stack], plus the
 * kernel's guard gap (stack_guard_gap, 256 pages unless booted otherwise)
 * when that mapping is accessible (the kernel refuses to grow the stack
 * closer; a PROT_NONE one it lets the stack reach). Found once, at
 * start-up, without /proc (skeptic 46b: the program's start reads no
 * maps, and a chroot has none): by binary searches the kernel answers
 * without side effects,
 *   - where [stack] ends below: the lowest page from which msync(MS_ASYNC)
 *     finds everything up to sp mapped (ENOMEM at a hole);
 *   - the mapping below it: the highest page from which a PROT_NONE
 *     MAP_FIXED_NOREPLACE reservation up to [stack] fails with EEXIST (a
 *     kernel older than 4.17 places it elsewhere instead); a reservation
 *     made is unmapped at once (no memory: PROT_NONE, not accounted);
 *   - whether that mapping is accessible: rt_sigprocmask with an invalid
 *     `how` copies the set from it first (EFAULT) and changes nothing
 *     (EINVAL).
 * About 100 system calls, some 40 us. Where a probe is refused (an
 * RLIMIT_AS too small for the reservation; valgrind, whose address space
 * manager refuses such hints) /proc/self/maps is read instead, as before
 * (maps_floor). A mapping placed later between the two (MAP_FIXED, a hint,
 * brk grown tens of TiB) is not seen: the bounds are taken as they
 * stand. */
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
/* 1 if a mapping overlaps [a, a + len), 0 if none, -1 if unknown. */
static int mapped_any(uint64_t a, uint64_t len)
{
	long p = sf_syscall6(SYS_mmap, (long)a, (long)len, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == -EEXIST)
		return 1;
	if ((unsigned long)p > -4096ul) /* the flag refused (valgrind): a plain hint */
		p = sf_syscall6(SYS_mmap, (long)a, (long)len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				-1, 0);
	if ((unsigned long)p > -4096ul)
		return -1;
	sf_syscall3(SYS_munmap, p, (long)len, 0);
	return (uint64_t)p != a; /* placed elsewhere: [a, a + len) was taken */
}

struct floor_find {
	uint64_t sp, lo, prev_end;
	int prev_readable;
};

static int floor_line(const struct sf_map *m, void *arg)
{
	struct floor_find *f = arg;
	if (f->sp >= m->lo && f->sp < m->hi) {
		f->lo = m->lo;
		return 1;
	}
	f->prev_end = m->hi;
	f->prev_readable = m->prot != 0;
	return 0;
}

/* The same from /proc/self/maps, where the kernel refused a probe. */
static int maps_floor(uint64_t sp, uint64_t page, uint64_t *floor)
{
	struct floor_find f = {sp, 0, 0, 0};
	if (sf_maps_walk(0, floor_line, &f) != 1)
		return 0;
	uint64_t lo = f.prev_end + (f.prev_readable ? 256 * page : 0);
	*floor = lo < f.lo ? lo : f.lo;
	return 1;
}

static int probe_floor(uint64_t sp, uint64_t page, uint64_t *floor)
{
	uint64_t top = sp & ~(page - 1), lo = 0, hi = top; /* [hi, top + page) mapped */
	if (sf_syscall3(SYS_msync, (long)top, (long)page, MS_ASYNC) != 0)
		return 0;
	while (hi - lo > page) { /* the lowest page of the mapped run holding sp */
		uint64_t mid = (lo + (hi - lo) / 2) & ~(page - 1);
		if (sf_syscall3(SYS_msync, (long)mid, (long)(top - mid), MS_ASYNC) == 0)
			hi = mid;
		else
			lo = mid;
	}
	uint64_t stack_lo = hi, min_addr = 65536; /* vm.mmap_min_addr's default: nothing maps below */
	int any = stack_lo > min_addr ? mapped_any(min_addr, stack_lo - min_addr) : 0;
	if (any < 0)
		return 0;
	uint64_t prev_end = 0;
	int prev_readable = 0;
	if (any) { /* the highest mapped page below stack_lo: in [a, b) */
		uint64_t a = min_addr, b = stack_lo;
		while (b - a > page) {
			uint64_t mid = (a + (b - a) / 2) & ~(page - 1);
			int r = mapped_any(mid, stack_lo - mid);
			if (r < 0)
				return 0;
			if (r)
				a = mid;
			else
				b = mid;
		}
		prev_end = a + page;
		uint64_t set[2];
		prev_readable = sf_syscall6(SYS_rt_sigprocmask, -1, (long)(prev_end - sizeof(set[0])), (long)set, 8, 0, 0) != -EFAULT;
	}
	uint64_t f = prev_end + (prev_readable ? 256 * page : 0);
	*floor = f < stack_lo ? f : stack_lo;
	return 1;
}

static int main_stack_floor(uint64_t sp, uint64_t page, uint64_t *floor)
{
	return probe_floor(sp, page, floor) || maps_floor(sp, page, floor);
}

void sf_stack_init(void)
{
	if (sf_gettid() != (uint32_t)getpid())
		return; /* the runtime dlopen'd by another thread: every stack from maps */
	S.main_pd = (uint64_t)pthread_self();
	const uint32_t *pd_size = sf_sym_lib("libc.so", "_thread_db_sizeof_pthread");
	S.pd_size = pd_size ? *pd_size : 0;
	struct rlimit rl;
	uint64_t page = (uint64_t)getpagesize(), top = ((uint64_t)__libc_stack_end + page - 1) & ~(page - 1);
	int err = errno;
	uint64_t lim = getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : top;
	uint64_t lo = lim < top ? top - lim : 0, floor;
	/* A limit too large to leave room for the loader's mappings (an
	 * unlimited one: `ulimit -s unlimited`): the stack stops where the
	 * mapping below it does. Found once here, before main (no maps read),
	 * not at a landing or heap event inside the program's frames. */
	if (lim >= top / 64 && main_stack_floor((uint64_t)__libc_stack_end, page, &floor) && floor > lo)
		lo = floor;
	if (lo) {
		S.main_lo = lo;
		S.main_hi = top;
	}
	errno = err;
}

/* The descriptor's words at w: glibc's stackblock, stackblock_size and
 * guardsize, for the descriptor at pd? */
static int block_pair(const uint64_t *w, uint64_t pd)
{
	uint64_t lo = w[0], size = w[1], guard = w[2];
	return lo && size >= STACK_MIN && lo + STACK_MIN / 4 <= pd && lo + size > pd && lo + size - pd < TOP_MAX &&
	       guard < size;
}

/* The offset of the stack block in glibc's descriptor: the only word pair
 * of the right shape (see the top of the file); 0 if none or several. */
static uint32_t find_block_off(uint64_t pd)
{
	const uint64_t *w = (const uint64_t *)pd;
	uint32_t found = 0, n = S.pd_size / 8;
	for (uint32_t i = 1; i + 3 <= n; i++) {
		if (!block_pair(w + i, pd))
			continue;
		if (found)
			return 0;
		found = i * 8;
	}
	return found;
}

/* The calling thread's own stack into stk.lo, stk.hi; 0 if unknown. */
SF_LANDING_TEXT static int own_stack(void)
{
	if (stk.own)
		return stk.own > 0;
	uint64_t pd = (uint64_t)pthread_self();
	stk.own = -1;
	if (pd == S.main_pd) {
		if (!S.main_hi)
			return 0;
		stk.lo = S.main_lo;
		stk.hi = S.main_hi;
	} else {
		uint32_t off = __atomic_load_n(&S.block_off, __ATOMIC_RELAXED);
		if (!off && S.pd_size) {
			off = find_block_off(pd);
			__atomic_store_n(&S.block_off, off, __ATOMIC_RELAXED);
		}
		const uint64_t *w = (const uint64_t *)(pd + off);
		if (!off || !block_pair(w, pd))
			return 0;
		stk.lo = w[0];
		stk.hi = pd; /* the stack is below the descriptor, all mapped up to it */
	}
	stk.own = 1;
	return 1;
}

SF_LANDING_TEXT int sf_stack_own_holds(uint64_t addr)
{
	return own_stack() && addr >= stk.lo && addr < stk.hi;
}


/* The signals held back while maps is read: a handler that jumps out would
 * leave the descriptor open. Not those a fault raises (the kernel would
 * turn them into a kill). */
#define SIG_BIT(n) (1ull << ((n) - 1))
static const uint64_t read_blocked =
	~(SIG_BIT(SIGSEGV) | SIG_BIT(SIGBUS) | SIG_BIT(SIGILL) | SIG_BIT(SIGFPE) | SIG_BIT(SIGTRAP) | SIG_BIT(SIGSYS));

/* The mapping holding cur, another stack than the thread's own, into
 * stk.other_lo, other_hi. */
static int learn_other_stack(uint64_t cur)
{
	if (stk.learned >= STACK_READS)
		return 0;
	stk.learned++;
	int err = errno;
	sigset_t block, was;
	sigemptyset(&block);
	__builtin_memcpy(&block, &read_blocked, sizeof(read_blocked));
	pthread_sigmask(SIG_BLOCK, &block, &was);
	uint64_t lo = 0, hi = 0;
	int grows = 0;
	int ok = sf_mapping_of(cur, &lo, &hi, &grows);
	struct rlimit rl;
	if (ok && grows && getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < hi)
		lo = lo < hi - rl.rlim_cur ? lo : hi - rl.rlim_cur; /* where it can grow to */
	if (ok) { /* before a handler's landing can read it */
		stk.other_lo = lo;
		stk.other_hi = hi;
	}
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	errno = err;
	return ok;
}

/* ---- the stacks of the contexts the program made (makecontext) ----
 * Reading maps on a thread's first landing on a coroutine's stack cost
 * about 12,500 instructions and tens of microseconds of system time (and
 * milliseconds with thousands of mappings), charged to the frame the
 * longjmp abandons (skeptic25s, skeptic25u). makecontext is told the
 * stack: the runtime's (arch/<arch>/makecontext.S, a stub that keeps the
 * variadic arguments as they came) notes uc_stack here, then goes on to
 * the next makecontext (libc's).
 *
 * The table holds every live context's stack, whatever their number (up
 * to CTX_BLOCKS * CTX_PER entries): entries sorted by stack base, none
 * overlapping (a new context whose stack overlaps older entries replaces
 * them: a stack freed and reused belongs to its newest context), in
 * blocks of CTX_PER entries found through a directory sorted by each
 * block's first base, like a two-level B-tree. It is process-wide (a
 * context made on one thread may run on another), in one mapping
 * reserved at the first makecontext (MAP_NORESERVE: pages are touched as
 * blocks are used, 16 bytes a context, 16 MiB at most) and never
 * unmapped, so a reader can never fault on it.
 *   - makecontext (the writer, the program's own call, not the hot path)
 *     takes a spin lock (a handler interrupting its own thread's write
 *     does not note its context: stk.ctx_writing) and changes the table in
 *     place inside a seqlock: O(log n) to find the place, a move of at
 *     most half a block (a block keeps room at both ends: none in rising
 *     or falling order) and, when a block splits, of the directory
 *     (64 KiB at most). The same stack made again (a pool's coroutine
 *     restarted) is found by the same search and changes nothing.
 *   - a landing (the reader, maybe in a signal handler) takes no lock and
 *     allocates nothing: two binary searches, O(log n), every index it
 *     reads clamped into the mapping, kept only if the sequence was even
 *     and unchanged across the read, retried while a writer on another
 *     thread works (spinning, then yielding the CPU to it, a bounded
 *     number of times, then unknown: maps as before). The
 *     thread keeps the last stack found with the sequence it was found
 *     at (stk.ctx_seq/lo/hi): while the table is unchanged a later
 *     landing on that stack needs no search.
 * Past the bound (every block full, about 524,288 to 1,048,576 contexts
 * live at once) a new context is not noted, and a landing on its stack
 * reads maps as any other stack's, at most STACK_READS times a thread.
 * Entries of stacks the program freed stay until their memory is given
 * to a newer context. */
enum { CTX_MIN = 2048, CTX_PER = 256, CTX_BLOCKS = 4096, CTX_SPIN = 256, CTX_WAIT = 4096 };
struct ctx_ent {
	uint64_t lo, hi;
};
struct ctx_dir {
	uint64_t first; /* the block's first entry's lo */
	uint32_t blk;   /* the block */
	uint16_t beg, n; /* its entries: blk[blk][beg .. beg + n) */
};
static struct ctx_table {
	uint64_t seq; /* odd while a writer changes the table */
	uint32_t ndir, nused, nfree, pad;
	uint32_t free[CTX_BLOCKS];
	struct ctx_dir dir[CTX_BLOCKS];
	struct ctx_ent blk[CTX_BLOCKS][CTX_PER];
} *ctx_T;
static uint32_t ctx_lock;

_Static_assert(sizeof(struct ctx_ent) == 16 && sizeof(struct ctx_dir) == 16, "ctx_move moves 16-byte items");

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* The entry holding addr in table t as it stands (possibly torn by a
 * writer: every index clamped, the caller checks the sequence). */
static inline __attribute__((always_inline)) int ctx_search(struct ctx_table *t, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	uint32_t nd = LD(t->ndir);
	if (nd > CTX_BLOCKS)
		nd = CTX_BLOCKS;
	uint32_t a = 0, b = nd; /* the last directory entry with first <= addr */
	while (a < b) {
		uint32_t m = (a + b) / 2;
		if (LD(t->dir[m].first) <= addr)
			a = m + 1;
		else
			b = m;
	}
	if (!a)
		return 0;
	uint32_t bk = LD(t->dir[a - 1].blk) % CTX_BLOCKS, beg = LD(t->dir[a - 1].beg) % CTX_PER,
		 n = LD(t->dir[a - 1].n);
	if (n > CTX_PER - beg)
		n = CTX_PER - beg;
	const struct ctx_ent *e = t->blk[bk] + beg;
	a = 0;
	b = n;
	while (a < b) {
		uint32_t m = (a + b) / 2;
		if (LD(e[m].lo) <= addr)
			a = m + 1;
		else
			b = m;
	}
	if (!a)
		return 0;
	uint64_t x = LD(e[a - 1].lo), y = LD(e[a - 1].hi);
	if (addr < x || addr >= y)
		return 0;
	*lo = x;
	*hi = y;
	return 1;
}

/* 1 with the stack of a context the program made holding addr, 0 if none
 * (or a writer kept the table too long). */
SF_LANDING_TEXT static int ctx_lookup(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	struct ctx_table *t = __atomic_load_n(&ctx_T, __ATOMIC_ACQUIRE);
	if (!t)
		return 0;
	for (uint32_t spins = 0; spins < CTX_WAIT; spins++) {
		uint64_t q = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
		if (q & 1) {
			if (__atomic_load_n(&stk.ctx_writing, __ATOMIC_RELAXED))
				return 0; /* a handler inside its own thread's write */
			if (spins < CTX_SPIN)
				sf_arch_cpu_relax();
			else
				sched_yield(); /* the writer may wait for this CPU */
			continue;
		}
		uint64_t a = 0, b = 0;
		int found = ctx_search(t, addr, &a, &b);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (LD(t->seq) != q)
			continue;
		if (found) {
			/* the hint: sequence 0 while it changes, for a handler */
			__atomic_store_n(&stk.ctx_seq, 0, __ATOMIC_RELAXED);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			stk.ctx_lo = a;
			stk.ctx_hi = b;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			__atomic_store_n(&stk.ctx_seq, q, __ATOMIC_RELAXED);
			*lo = a;
			*hi = b;
		}
		return found;
	}
	return 0;
}

/* ---- the writer's side, under ctx_lock, the sequence odd ---- */

/* Block d's entries. */
static inline struct ctx_ent *ctx_ents(struct ctx_table *t, uint32_t d)
{
	return t->blk[t->dir[d].blk] + t->dir[d].beg;
}

/* n 16-byte entries (struct ctx_ent or ctx_dir) from s to d, overlapping
 * either way, a word at a time: the runtime's memmove copies bytes
 * backwards. The empty asm keeps the compiler from making the loop a
 * memmove call. */
static void ctx_move(void *dv, const void *sv, uint32_t n)
{
	uint64_t *d = dv;
	const uint64_t *s = sv;
	n *= 2;
	if (d < s) {
		for (uint32_t k = 0; k < n; k++) {
			__asm__("" : "+r"(k));
			d[k] = s[k];
		}
	} else if (d > s) {
		for (uint32_t k = n; k-- > 0;) {
			__asm__("" : "+r"(k));
			d[k] = s[k];
		}
	}
}

/* Index of the directory entry whose block lo belongs in: the last with
 * first <= lo, else 0. */
static uint32_t ctx_dir_of(struct ctx_table *t, uint64_t lo)
{
	uint32_t a = 0, b = t->ndir;
	while (a < b) {
		uint32_t m = (a + b) / 2;
		if (t->dir[m].first <= lo)
			a = m + 1;
		else
			b = m;
	}
	return a ? a - 1 : 0;
}

/* Index in block d of the first entry with lo > x. */
static uint32_t ctx_pos(struct ctx_table *t, uint32_t d, uint64_t x)
{
	const struct ctx_ent *e = ctx_ents(t, d);
	uint32_t a = 0, b = t->dir[d].n;
	while (a < b) {
		uint32_t m = (a + b) / 2;
		if (e[m].lo <= x)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* Drops entry i of block d: the shorter side moves. */
static void ctx_delete(struct ctx_table *t, uint32_t d, uint32_t i)
{
	struct ctx_dir *dd = &t->dir[d];
	struct ctx_ent *e = ctx_ents(t, d);
	if (i < dd->n / 2) {
		ctx_move(e + 1, e, i);
		dd->beg++;
	} else {
		ctx_move(e + i, e + i + 1, dd->n - i - 1u);
	}
	if (--dd->n) {
		dd->first = ctx_ents(t, d)[0].lo;
		return;
	}
	t->free[t->nfree++] = dd->blk;
	ctx_move(&t->dir[d], &t->dir[d + 1], t->ndir - d - 1);
	t->ndir--;
}

/* Drops every entry overlapping [lo, hi). */
static void ctx_drop_overlaps(struct ctx_table *t, uint64_t lo, uint64_t hi)
{
	while (t->ndir) {
		/* the last entry starting below hi: the only candidate left of it
		 * is itself, the entries are disjoint and sorted */
		uint32_t d = ctx_dir_of(t, hi - 1), i = ctx_pos(t, d, hi - 1);
		if (!i)
			return; /* hi - 1 below every entry */
		if (ctx_ents(t, d)[i - 1].hi <= lo)
			return;
		ctx_delete(t, d, i - 1);
	}
}

static uint32_t ctx_new_block(struct ctx_table *t)
{
	if (t->nfree)
		return t->free[--t->nfree];
	if (t->nused < CTX_BLOCKS)
		return t->nused++;
	return CTX_BLOCKS;
}

/* Inserts [lo, hi) (overlapping none) before entry i of the block of
 * directory entry d (its place); 0 past the bound. A block keeps room at
 * both ends: stacks made in rising or falling address order (heap or
 * mmap) move no entry (past a block's full end: a new block beside it);
 * one in the middle moves the shorter side (the entries recentred in
 * their block first when that side has no room). A full block splits in two, its lower half at the top of its block, the upper
 * half at the bottom of a new one. */
static int ctx_insert_at(struct ctx_table *t, uint32_t d, uint32_t i, uint64_t lo, uint64_t hi)
{
	enum { H = CTX_PER / 2 };
	if (!t->ndir) {
		uint32_t bk = ctx_new_block(t);
		if (bk == CTX_BLOCKS)
			return 0;
		t->blk[bk][H] = (struct ctx_ent){lo, hi};
		t->dir[0] = (struct ctx_dir){lo, bk, H, 1};
		t->ndir = 1;
		return 1;
	}
	if (t->dir[d].n == CTX_PER) {
		uint32_t bk = t->ndir < CTX_BLOCKS ? ctx_new_block(t) : CTX_BLOCKS;
		if (bk == CTX_BLOCKS)
			return 0;
		struct ctx_ent *old = ctx_ents(t, d); /* beg 0: full */
		ctx_move(t->blk[bk], old + H, H);
		ctx_move(old + H, old, H);
		ctx_move(&t->dir[d + 2], &t->dir[d + 1], t->ndir - d - 1);
		t->dir[d + 1] = (struct ctx_dir){t->blk[bk][0].lo, bk, 0, H};
		t->dir[d].beg = H;
		t->dir[d].n = H;
		t->ndir++;
		if (i > H) {
			d++;
			i -= H;
		}
	}
	struct ctx_dir *dd = &t->dir[d];
	struct ctx_ent *e = ctx_ents(t, d);
	uint32_t n = dd->n, back = CTX_PER - dd->beg - n;
	if (n >= H && ((i == n && !back) || (!i && !dd->beg)) && t->ndir < CTX_BLOCKS) {
		/* past a block's end with no room there: a new block beside
		 * it, with room on the same side (rising or falling order) */
		uint32_t bk = ctx_new_block(t);
		if (bk == CTX_BLOCKS)
			return 0;
		uint32_t at = i ? d + 1 : d, beg = i ? 0 : CTX_PER - 1;
		ctx_move(&t->dir[at + 1], &t->dir[at], t->ndir - at);
		t->blk[bk][beg] = (struct ctx_ent){lo, hi};
		t->dir[at] = (struct ctx_dir){lo, bk, (uint16_t)beg, 1};
		t->ndir++;
		return 1;
	}
	if (i < n - i ? !dd->beg : !back) { /* no room on the shorter side: the gap split evenly */
		uint32_t nb = (CTX_PER - n) / 2;
		ctx_move(t->blk[dd->blk] + nb, e, n);
		dd->beg = (uint16_t)nb;
		e = t->blk[dd->blk] + nb;
		back = CTX_PER - nb - n;
	}
	if (dd->beg && (i < n - i || !back)) {
		ctx_move(e - 1, e, i);
		dd->beg--;
		e--;
	} else if (back) {
		ctx_move(e + i + 1, e + i, n - i);
	} else {
		return 0; /* cannot be: n < CTX_PER */
	}
	e[i] = (struct ctx_ent){lo, hi};
	dd->n++;
	dd->first = e[0].lo;
	return 1;
}

/* Notes [lo, hi) under the lock: one search finds its place, the same
 * stack made again (a pool's coroutine restarted: nothing changes) and
 * whether a neighbour overlaps it (a stack reused: the older entries go). */
static void ctx_put(struct ctx_table *t, uint64_t lo, uint64_t hi)
{
	uint32_t d = ctx_dir_of(t, lo), i = t->ndir ? ctx_pos(t, d, lo) : 0;
	int overlap = 0;
	if (t->ndir) {
		const struct ctx_ent *e = ctx_ents(t, d);
		if (i && e[i - 1].lo == lo && e[i - 1].hi == hi)
			return;
		overlap = (i && e[i - 1].hi > lo) || (i < t->dir[d].n ? e[i].lo < hi : d + 1 < t->ndir && t->dir[d + 1].first < hi);
	}
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (overlap) {
		ctx_drop_overlaps(t, lo, hi);
		d = ctx_dir_of(t, lo);
		i = t->ndir ? ctx_pos(t, d, lo) : 0;
	}
	ctx_insert_at(t, d, i, lo, hi);
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
}

static void ctx_note(const ucontext_t *ucp)
{
	uint64_t lo = (uint64_t)ucp->uc_stack.ss_sp, hi = lo + ucp->uc_stack.ss_size;
	if (!lo || hi < lo + CTX_MIN)
		return; /* glibc's makecontext would write below it: no stack to note */
	if (__atomic_load_n(&stk.ctx_writing, __ATOMIC_RELAXED))
		return; /* a handler's makecontext inside its own thread's */
	__atomic_store_n(&stk.ctx_writing, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	while (__atomic_exchange_n(&ctx_lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
	struct ctx_table *t = ctx_T;
	if (!t) {
		void *m = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m != MAP_FAILED) {
			t = m;
			__atomic_store_n(&ctx_T, t, __ATOMIC_RELEASE);
		}
	}
	if (t)
		ctx_put(t, lo, hi);
	__atomic_store_n(&ctx_lock, 0, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&stk.ctx_writing, 0, __ATOMIC_RELAXED);
}

/* A fork child has only the forking thread: a lock another thread held is
 * let go, and a table it was changing is emptied. */
void sf_stack_after_fork_child(void)
{
	struct ctx_table *t = ctx_T;
	if (__atomic_load_n(&ctx_lock, __ATOMIC_RELAXED) && !stk.ctx_writing) {
		if (t && (t->seq & 1)) {
			t->ndir = t->nused = t->nfree = 0;
			t->seq++;
		}
		ctx_lock = 0;
	}
}

/* The stack of a context the program made that holds addr: the one the
 * thread found last, while the table is as it was then, else searched. */
SF_LANDING_TEXT static int ctx_stack_of(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	uint64_t q = __atomic_load_n(&stk.ctx_seq, __ATOMIC_RELAXED);
	if (q) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		uint64_t a = stk.ctx_lo, b = stk.ctx_hi;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		struct ctx_table *t = __atomic_load_n(&ctx_T, __ATOMIC_RELAXED);
		if (addr >= a && addr < b && q == __atomic_load_n(&stk.ctx_seq, __ATOMIC_RELAXED) && t &&
		    __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE) == q) {
			*lo = a;
			*hi = b;
			return 1;
		}
	}
	return ctx_lookup(addr, lo, hi);
}

typedef void (*makecontext_fn)(ucontext_t *, void (*)(void), int, ...);
static makecontext_fn next_makecontext;

static void no_makecontext(ucontext_t *ucp, void (*fn)(void), int argc, ...)
{
	(void)ucp;
	(void)fn;
	(void)argc;
}

/* makecontext's stub (arch/<arch>/makecontext.S) calls this with the
 * ucontext, every argument register kept, and jumps to the function it
 * returns: the next makecontext (a later preload's, else libc's), looked
 * up on the first call. */
void *sf_makecontext_route(const ucontext_t *ucp)
{
	if (ucp)
		ctx_note(ucp);
	makecontext_fn f = __atomic_load_n(&next_makecontext, __ATOMIC_ACQUIRE);
	if (!f) {
		int err = errno;
		f = (makecontext_fn)sf_real("makecontext");
		errno = err;
		if (!f)
			f = no_makecontext; /* no libc's: cannot happen */
		__atomic_store_n(&next_makecontext, f, __ATOMIC_RELEASE);
	}
	return (void *)f;
}

/* The bounds [lo, hi) of the stack holding addr: the thread's own, the
 * other one read from maps before, a context's the program made, or read
 * from maps now (a landing on a coroutine's stack made without
 * makecontext, or on a signal stack). 0 if unknown. */
SF_LANDING_TEXT int sf_stack_of(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	if (sf_stack_own_holds(addr)) {
		*lo = stk.lo;
		*hi = stk.hi;
		return 1;
	}
	if (addr >= stk.other_lo && addr < stk.other_hi) {
		*lo = stk.other_lo;
		*hi = stk.other_hi;
		return 1;
	}
	if (ctx_stack_of(addr, lo, hi))
		return 1;
	if (learn_other_stack(addr)) {
		*lo = stk.other_lo;
		*hi = stk.other_hi;
		return addr >= *lo && addr < *hi;
	}
	return 0;
}

/* The thread's signal stack, for a landing that runs away from its
 * target's stack (unwind.c): asking the kernel (sigaltstack) cost a system
 * call, +200-260 ns, on every landing out of a handler on a signal stack.
 * The answer is kept per thread and trusted without asking again when the
 * frame cur lies on the kept signal stack (the kernel refuses to change a
 * signal stack while the thread runs on it) or on the thread's own stack
 * (no signal stack is placed there but by the program's own choice, which
 * the kept range then shows). Anywhere else (a coroutine's stack, a
 * signal stack set since) the kernel is asked. The program's own changes
 * through libc's sigaltstack or syscall() drop the kept answer
 * (sf_stack_alt_forget); one made by a bare system call instruction that
 * places a signal stack on the thread's own stack is the case left
 * (docs/DESIGN.md, Unwinding, "The thread's signal stack"). A handler that
 * interrupts an update sees alt_known 0 and asks for itself. */
SF_LANDING_TEXT int sf_stack_alt(uint64_t cur, uint64_t *lo, uint64_t *hi)
{
	if (__atomic_load_n(&stk.alt_known, __ATOMIC_RELAXED)) {
		__atomic_signal_fence(__ATOMIC_ACQUIRE);
		uint64_t a = stk.alt_lo, b = stk.alt_hi;
		if (cur >= a && cur < b) {
			*lo = a;
			*hi = b;
			return 1;
		}
		if (sf_stack_own_holds(cur))
			return 0;
	}
	stack_t alt;
	long r = sf_syscall3(SYS_sigaltstack, 0, (long)&alt, 0); /* no errno to keep */
	int on = r == 0 && !(alt.ss_flags & SS_DISABLE) && (alt.ss_flags & SS_ONSTACK);
	__atomic_store_n(&stk.alt_known, 0, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_RELEASE);
	if (r != 0)
		return 0;
	stk.alt_lo = alt.ss_flags & SS_DISABLE ? 0 : (uint64_t)alt.ss_sp;
	stk.alt_hi = alt.ss_flags & SS_DISABLE ? 0 : (uint64_t)alt.ss_sp + alt.ss_size;
	__atomic_signal_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&stk.alt_known, 1, __ATOMIC_RELAXED);
	*lo = stk.alt_lo;
	*hi = stk.alt_hi;
	return on;
}

void sf_stack_alt_forget(void)
{
	__atomic_store_n(&stk.alt_known, 0, __ATOMIC_RELAXED);
}

int sf_on_this_stack_slow(uint64_t addr, uint64_t cur)
{
	uint64_t lo, hi;
	if (sf_stack_own_holds(cur))
		return addr >= cur && addr < stk.hi;
	if (cur >= stk.other_lo && cur < stk.other_hi)
		return addr >= cur && addr < stk.other_hi;
	if (ctx_stack_of(cur, &lo, &hi))
		return addr >= cur && addr < hi;
	if (learn_other_stack(cur))
		return addr >= cur && addr < stk.other_hi;
	return 0;
}
#else
void sf_stack_init(void)
{
}

void sf_stack_after_fork_child(void)
{
}

void sf_stack_alt_forget(void)
{
}
#endif

/* sigaltstack (libc's, interposed): the thread's signal stack changes, so
 * the answer sf_stack_alt keeps is dropped, before (a handler between the
 * change and the drop) and after the call. Exported as the default of
 * glibc's only version of it, so that dlsym and dlvsym(..., "GLIBC_2.2.5")
 * both give the address the program's own reference binds to, as
 * untraced (unversioned, dlvsym skipped it for libc's). */
__attribute__((visibility("default"))) int sf_pub_sigaltstack(const stack_t *ss, stack_t *old)
{
	if (ss)
		sf_stack_alt_forget();
	long r = sf_syscall3(SYS_sigaltstack, (long)ss, (long)old, 0);
	if (ss)
		sf_stack_alt_forget();
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}
__asm__(".symver sf_pub_sigaltstack, sigaltstack@@" SF_GLIBC_BASE_VERSION ", remove");
