/* Sled patching, the part common to every architecture: which trampoline
 * each sled kind and variant goes to, making the text writable (or writing
 * through /proc/self/mem), one executable segment at a time. The sled bytes
 * themselves, and how a sled reaches its trampoline, are in
 * arch/<arch>/patch.c (sf_arch_patch_sled, sf_arch_patch_targets). */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format/xray_map.h"
#include "runtime/runtime.h"

/* The args trampolines (record -A/-R, args.c). A tail call's return
 * value is its callee's: its sled records that it is not known. In
 * within mode, behind the gate or after the window's count. */
#define ARGS_COUNTER sf_tramp_entry_args, sf_tramp_exit_args, sf_tramp_tail_args
#define ARGS_MONO sf_tramp_entry_mono_args, sf_tramp_exit_mono_args, sf_tramp_tail_mono_args
#define ARGS_GATED_COUNTER sf_tramp_entry_args_gated, sf_tramp_exit_args_gated, sf_tramp_tail_args_gated
#define ARGS_GATED_MONO sf_tramp_entry_mono_args_gated, sf_tramp_exit_mono_args_gated, sf_tramp_tail_mono_args_gated
#define ARGS_WINDOW_COUNTER sf_tramp_entry_args_window, sf_tramp_exit_args_window, sf_tramp_tail_args_window
#define ARGS_WINDOW_MONO \
	sf_tramp_entry_mono_args_window, sf_tramp_exit_mono_args_window, sf_tramp_tail_mono_args_window

/* The trampoline of each (variant, kind), indexed variant * SF_STUB_KINDS + kind. */
static void trampolines(uint64_t out[SF_STUB_COUNT])
{
	static void (*const counter[SF_STUB_COUNT])(void) = {
		sf_tramp_entry, sf_tramp_exit, sf_tramp_tail,
		sf_tramp_entry_gated, sf_tramp_exit_gated, sf_tramp_tail_gated,
		sf_tramp_entry_window, sf_tramp_exit_window, sf_tramp_tail_window,
		sf_tramp_entry_mono, sf_tramp_exit_mono, sf_tramp_tail_mono, /* SLOW: the C slow path */
		ARGS_COUNTER,
		ARGS_GATED_COUNTER,
		ARGS_WINDOW_COUNTER,
		sf_tramp_entry_mono_gated, sf_tramp_exit_mono_gated, sf_tramp_tail_mono_gated, /* SLOW_GATED */
		sf_tramp_entry_mono_window, sf_tramp_exit_mono_window, sf_tramp_tail_mono_window, /* SLOW_WINDOW */
	};
	static void (*const mono[SF_STUB_COUNT])(void) = {
		sf_tramp_entry_mono, sf_tramp_exit_mono, sf_tramp_tail_mono,
		sf_tramp_entry_mono_gated, sf_tramp_exit_mono_gated, sf_tramp_tail_mono_gated,
		sf_tramp_entry_mono_window, sf_tramp_exit_mono_window, sf_tramp_tail_mono_window,
		sf_tramp_entry_mono, sf_tramp_exit_mono, sf_tramp_tail_mono,
		ARGS_MONO,
		ARGS_GATED_MONO,
		ARGS_WINDOW_MONO,
		sf_tramp_entry_mono_gated, sf_tramp_exit_mono_gated, sf_tramp_tail_mono_gated,
		sf_tramp_entry_mono_window, sf_tramp_exit_mono_window, sf_tramp_tail_mono_window,
	};
	for (int i = 0; i < SF_STUB_COUNT; i++)
		out[i] = (uint64_t)(sf_config.clock == SF_CLOCK_MONOTONIC ? mono[i] : counter[i]);
}

int sf_patch_variant_of(uint64_t to)
{
	static void (*const gated[])(void) = {sf_tramp_entry_gated, sf_tramp_entry_mono_gated,
					      sf_tramp_entry_args_gated, sf_tramp_entry_mono_args_gated};
	static void (*const window[])(void) = {sf_tramp_entry_window, sf_tramp_entry_mono_window,
					       sf_tramp_entry_args_window, sf_tramp_entry_mono_args_window};
	for (int i = 0; i < 4; i++) {
		if (to == (uint64_t)gated[i])
			return SF_VARIANT_GATED;
		if (to == (uint64_t)window[i])
			return SF_VARIANT_WINDOW;
	}
	return SF_VARIANT_PLAIN; /* our plain trampolines, or a setup-ABI slot */
}

static int prot_of(uint32_t pflags)
{
	return ((pflags & PF_R) ? PROT_READ : 0) | ((pflags & PF_W) ? PROT_WRITE : 0) |
	       ((pflags & PF_X) ? PROT_EXEC : 0);
}

void sf_text_put(struct sf_text_writer *w, void *at, const void *b, size_t n)
{
	if (w->mem_fd < 0) {
		uint16_t h;
		uint32_t word;
		if (n == 2) {
			memcpy(&h, b, 2);
			__atomic_store_n((uint16_t *)at, h, __ATOMIC_RELEASE);
		} else if (n == 4) {
			memcpy(&word, b, 4);
			__atomic_store_n((uint32_t *)at, word, __ATOMIC_RELEASE);
		} else
			memcpy(at, b, n);
	} else if (!w->failed && pwrite(w->mem_fd, b, n, (off_t)(uintptr_t)at) != (ssize_t)n) {
		w->failed = errno ? errno : EIO;
	}
}

/* Whether a thread other than this one (and our writer) may be running
 * program code. Raw getdents64: no allocation here. */
static int other_threads(void)
{
	int fd = sf_fd_brief(open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (fd < 0)
		return 1;
	char buf[4096];
	long n, tasks = 0;
	while ((n = sf_syscall3(SYS_getdents64, fd, (long)buf, sizeof(buf))) > 0)
		for (long off = 0; off < n;) {
			const char *name = buf + off + 19; /* d_ino 8, d_off 8, d_reclen 2, d_type 1 */
			tasks += name[0] != '.';
			off += *(const unsigned short *)(buf + off + 16);
		}
	sf_close(fd);
	return n < 0 || tasks - (sf_writer_active() ? 1 : 0) > 1;
}

/* The program's own protections inside its text (issue 25, skeptics 25v
 * and 46b): a hot-patcher, a self-modifying program or a daemon keeping a
 * guard page may have given a page of its text rwx (or r--, or ---) with
 * its own mprotect. A patch pass must give each page back what the program
 * had, not the segment's p_flags, and never make one more permissive.
 *
 * Learned without /proc: the program's mprotect and pkey_mprotect (these
 * wrappers, and syscall(SYS_mprotect), hooks.c) are noted in a fixed,
 * append-only log when they touch an executable segment the runtime knows
 * (text_segs; every call while none is known yet: a preinit function's).
 * The log is replayed, the last note covering a page wins. No allocation,
 * no lock: a slot is claimed by an atomic add and marked ready after its
 * fields, so a signal handler's mprotect is noted too. A pass after the
 * program's code may have run reads /proc/self/maps if it can (it also
 * knows a bare `syscall` instruction's change) and applies each mapping's
 * protection as it walks, with no cap on how many; in a chroot without
 * /proc, under a filter refusing open, and at start-up the log answers.
 * Only when the log is full and maps cannot be read are the protections
 * unknown: then only the sleds' own pages are touched, and record says so. */
enum { TEXT_SEGS_MAX = 512, PROT_LOG_MAX = 1024 };
static struct { uint64_t lo, hi; } text_segs[TEXT_SEGS_MAX];
static uint32_t text_segs_n, text_segs_full;
static struct { uint64_t lo, hi; int prot, ready; } prot_log[PROT_LOG_MAX];
static uint32_t prot_log_n, prot_log_full;

static void text_seg_known(uint64_t lo, uint64_t hi)
{
	uint32_t n = __atomic_load_n(&text_segs_n, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n && i < TEXT_SEGS_MAX; i++)
		if (__atomic_load_n(&text_segs[i].lo, __ATOMIC_ACQUIRE) == lo && text_segs[i].hi == hi)
			return;
	uint32_t i = __atomic_fetch_add(&text_segs_n, 1, __ATOMIC_ACQ_REL);
	if (i >= TEXT_SEGS_MAX) {
		__atomic_store_n(&text_segs_full, 1, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&text_segs[i].hi, hi, __ATOMIC_RELEASE);
	__atomic_store_n(&text_segs[i].lo, lo, __ATOMIC_RELEASE);
}

/* Whether [lo, hi) may be in a known text segment (a slot still being
 * written counts as one). */
static int text_touched(uint64_t lo, uint64_t hi)
{
	uint32_t n = __atomic_load_n(&text_segs_n, __ATOMIC_ACQUIRE);
	if (n == 0 || __atomic_load_n(&text_segs_full, __ATOMIC_ACQUIRE))
		return 1;
	for (uint32_t i = 0; i < n && i < TEXT_SEGS_MAX; i++) {
		uint64_t l = __atomic_load_n(&text_segs[i].lo, __ATOMIC_ACQUIRE);
		uint64_t h = __atomic_load_n(&text_segs[i].hi, __ATOMIC_ACQUIRE);
		if ((!l && !h) || (lo < h && hi > l))
			return 1;
	}
	return 0;
}

void sf_text_prot_note(uint64_t addr, uint64_t len, int prot)
{
	uint64_t lo = addr & ~(uint64_t)(SF_PAGE - 1), hi = (addr + len + SF_PAGE - 1) & ~(uint64_t)(SF_PAGE - 1);
	if (hi <= lo || !text_touched(lo, hi))
		return;
	uint32_t i = __atomic_fetch_add(&prot_log_n, 1, __ATOMIC_ACQ_REL);
	if (i >= PROT_LOG_MAX) {
		__atomic_store_n(&prot_log_full, 1, __ATOMIC_RELEASE);
		return;
	}
	prot_log[i].lo = lo;
	prot_log[i].hi = hi;
	prot_log[i].prot = prot & (PROT_READ | PROT_WRITE | PROT_EXEC);
	__atomic_store_n(&prot_log[i].ready, 1, __ATOMIC_RELEASE);
}

/* The runtime's own calls are sf_mprotect (runtime.h): these are the
 * program's, made as libc makes them and noted when they succeed. */
#undef mprotect
__attribute__((visibility("default"))) int mprotect(void *addr, size_t len, int prot)
{
	long r = sf_syscall3(SYS_mprotect, (long)addr, (long)len, prot);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	sf_text_prot_note((uint64_t)addr, len, prot);
	return 0;
}

__attribute__((visibility("default"))) int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	if (pkey == -1)
		return mprotect(addr, len, prot); /* as glibc: no pkey_mprotect needed */
	long r = sf_syscall6(SYS_pkey_mprotect, (long)addr, (long)len, prot, pkey, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	sf_text_prot_note((uint64_t)addr, len, prot);
	return 0;
}
#define mprotect sf_mprotect

/* The protection at x by the log (def where it noted none), and in *next
 * where that may change (at most end). */
static int log_prot_at(uint64_t x, uint64_t end, int def, uint64_t *next)
{
	uint32_t n = __atomic_load_n(&prot_log_n, __ATOMIC_ACQUIRE);
	int p = def;
	uint64_t nx = end;
	for (uint32_t i = 0; i < n && i < PROT_LOG_MAX; i++) {
		if (!__atomic_load_n(&prot_log[i].ready, __ATOMIC_ACQUIRE))
			continue;
		uint64_t lo = prot_log[i].lo, hi = prot_log[i].hi;
		if (lo <= x && x < hi) {
			p = prot_log[i].prot;
			nx = hi < nx ? hi : nx;
		} else if (lo > x && lo < nx) {
			nx = lo;
		}
	}
	*next = nx;
	return p;
}

static int log_full(void)
{
	return __atomic_load_n(&prot_log_full, __ATOMIC_ACQUIRE);
}

/* One patch pass over a segment, a piece of one protection at a time. */
struct seg_job {
	struct sf_object_rt *obj;
	const struct xray_sled_rt *sleds;
	uint32_t nsleds;
	const uint64_t *target;
	int on;
	struct sf_patch_result *res;
	struct sf_text_writer *w;
	uint64_t seg_lo, seg_hi; /* the segment (sleds inside it) */
	uint64_t lo, hi;         /* the pages walked */
	int whole;               /* pieces without sleds too (whole_segment's reason) */
	uint64_t done;           /* sleds below are patched */
	int err;                 /* a refused mprotect's errno: the pass stopped */
	int restore_err, straddle;
	uint64_t pa, pb;         /* the piece pending (coalesced) */
	int pprot;
};

static int in_seg(const struct seg_job *j, const struct xray_sled_rt *s)
{
	return s->selected && s->address >= j->seg_lo && s->address + SF_ARCH_SLED_SIZE <= j->seg_hi;
}

static int piece(struct seg_job *j, uint64_t a, uint64_t b, int prot)
{
	if (a < j->done)
		a = j->done;
	if (a >= b)
		return 0;
	int any = 0;
	for (uint32_t k = 0; k < j->nsleds && !any; k++)
		any = in_seg(j, &j->sleds[k]) && j->sleds[k].address >= a && j->sleds[k].address < b;
	if (!any && !j->whole) {
		j->done = b;
		return 0;
	}
	/* an rwx page the program made needs no mprotect (a W^X filter might refuse one) */
	int change = !(prot & PROT_WRITE) || (any && !(prot & PROT_READ));
	if (change && mprotect((void *)a, (size_t)(b - a), prot | PROT_WRITE | (any ? PROT_READ : 0)) < 0) {
		j->err = errno ? errno : EPERM;
		return 1;
	}
	for (uint32_t k = 0; k < j->nsleds; k++) {
		const struct xray_sled_rt *s = &j->sleds[k];
		if (!in_seg(j, s) || s->address < a || s->address >= b)
			continue;
		if (s->address + SF_ARCH_SLED_SIZE > b) {
			j->straddle++; /* across a boundary of the program's own protections: left as it is */
			continue;
		}
		(j->on ? sf_arch_patch_sled : sf_arch_unpatch_sled)(s, j->target, j->w, j->res);
	}
	if (change && mprotect((void *)a, (size_t)(b - a), prot) < 0)
		j->restore_err = errno;
	j->done = b;
	return 0;
}

/* Adjacent pieces of one protection are one (two mappings may be). */
static int emit(struct seg_job *j, uint64_t a, uint64_t b, int prot)
{
	if (j->pa < j->pb && j->pb == a && j->pprot == prot) {
		j->pb = b;
		return 0;
	}
	int rc = j->pa < j->pb ? piece(j, j->pa, j->pb, j->pprot) : 0;
	j->pa = a;
	j->pb = b;
	j->pprot = prot;
	return rc;
}

static int flush(struct seg_job *j)
{
	int rc = j->pa < j->pb ? piece(j, j->pa, j->pb, j->pprot) : 0;
	j->pa = j->pb = 0;
	return rc;
}

static int maps_piece(const struct sf_map *m, void *arg)
{
	struct seg_job *j = arg;
	if (m->lo >= j->hi)
		return 1;
	uint64_t a = m->lo < j->lo ? j->lo : m->lo, b = m->hi > j->hi ? j->hi : m->hi;
	return a < b && emit(j, a, b, m->prot) ? 2 : 0;
}

/* The sleds' own pages, the segment's protection (the program's unknown). */
static void sled_pages_only(struct seg_job *j, int prot)
{
	uint64_t pa = 0, pb = 0;
	for (uint32_t k = 0; k < j->nsleds && !j->err; k++) {
		const struct xray_sled_rt *s = &j->sleds[k];
		if (!in_seg(j, s) || s->address < j->done)
			continue;
		uint64_t a = s->address & ~(uint64_t)(SF_PAGE - 1);
		uint64_t b = (s->address + SF_ARCH_SLED_SIZE + SF_PAGE - 1) & ~(uint64_t)(SF_PAGE - 1);
		if (a < pa || b > pb) {
			if (pa < pb && mprotect((void *)pa, (size_t)(pb - pa), prot) < 0)
				j->restore_err = errno;
			pa = pb = 0;
			if (mprotect((void *)a, (size_t)(b - a), prot | PROT_WRITE) < 0) {
				j->err = errno ? errno : EPERM;
				break;
			}
			pa = a;
			pb = b;
		}
		(j->on ? sf_arch_patch_sled : sf_arch_unpatch_sled)(s, j->target, j->w, j->res);
	}
	if (pa < pb && mprotect((void *)pa, (size_t)(pb - pa), prot) < 0)
		j->restore_err = errno;
	if (!j->err)
		j->done = j->hi;
}

/* One pass over [j->lo, j->hi): each piece gets its protection back. */
static void run_pass(struct seg_job *j, int prot)
{
	j->pa = j->pb = 0;
	/* maps only once the program's code may have run (step 2, init.c):
	 * the patch at start-up reads none (skeptic 25s/25u count its opens) */
	int rc = sf_services_started() ? sf_maps_walk(1, maps_piece, j) : -1;
	if (rc >= 0) {
		if (rc != 2)
			flush(j);
		return;
	}
	if (log_full()) {
		static int said;
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
			sf_rt_report("the program changed its text's protections more often than noted and "
				     "/proc/self/maps is unreadable: only the sleds' pages are touched, given the "
				     "segment's protection: ", j->obj->path, "");
		sled_pages_only(j, prot);
		return;
	}
	for (uint64_t at = j->lo, next; at < j->hi; at = next) {
		int p = log_prot_at(at, j->hi, prot, &next);
		if (emit(j, at, next, p))
			return;
	}
	flush(j);
}

struct span_find {
	uint64_t lo, hi;       /* in: the pages; out: the segment's, if found */
	int found;
};

static int span_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct span_find *f = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uint64_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(SF_PAGE - 1);
		uint64_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + SF_PAGE - 1) & ~(SF_PAGE - 1);
		if (f->lo >= lo && f->hi <= hi) {
			f->lo = lo;
			f->hi = hi;
			f->found = 1;
			return 1;
		}
	}
	return 0;
}

/* Bytes written into text outside a sled pass (the setup ABI's slots,
 * setup_abi.c): [lo, hi) (at most a few pages) made writable a piece of
 * one protection at a time, as a pass does (maps, else the log), write()
 * called, each piece given back its own: the program's rwx page stays
 * rwx, its PROT_NONE guard page is not touched unless a slot is on it.
 * def: the protection where neither knows another. -1 if refused. */
struct few_pieces {
	uint64_t lo, hi;
	int n, over;
	struct { uint64_t a, b; int prot; } p[8];
};

static int few_line(const struct sf_map *m, void *arg)
{
	struct few_pieces *f = arg;
	if (m->lo >= f->hi)
		return 1;
	uint64_t a = m->lo < f->lo ? f->lo : m->lo, b = m->hi > f->hi ? f->hi : m->hi;
	if (a >= b)
		return 0;
	if (f->n == 8) {
		f->over = 1;
		return 1;
	}
	f->p[f->n].a = a;
	f->p[f->n].b = b;
	f->p[f->n++].prot = m->prot;
	return 0;
}

int sf_text_rewrite(uint64_t lo, uint64_t hi, int def, void (*write)(void *), void *arg)
{
	struct few_pieces f = {lo & ~(uint64_t)(SF_PAGE - 1), (hi + SF_PAGE - 1) & ~(uint64_t)(SF_PAGE - 1), 0, 0, {{0, 0, 0}}};
	if (!sf_services_started() || sf_maps_walk(1, few_line, &f) < 0) {
		f.n = f.over = 0;
		for (uint64_t at = f.lo, next; at < f.hi && !f.over; at = next) {
			int p = log_prot_at(at, f.hi, def, &next);
			if (f.n == 8)
				f.over = 1;
			else {
				f.p[f.n].a = at;
				f.p[f.n].b = next;
				f.p[f.n++].prot = p;
			}
		}
	}
	if (f.over || !f.n)
		return -1;
	int k, rc = 0;
	for (k = 0; k < f.n; k++)
		if ((f.p[k].prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE) &&
		    mprotect((void *)f.p[k].a, (size_t)(f.p[k].b - f.p[k].a), f.p[k].prot | PROT_READ | PROT_WRITE) < 0)
			break;
	if (k == f.n)
		write(arg);
	else
		rc = -1;
	while (k-- > 0)
		if ((f.p[k].prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE) &&
		    mprotect((void *)f.p[k].a, (size_t)(f.p[k].b - f.p[k].a), f.p[k].prot) < 0)
			sf_rt_message("cannot restore the protection of a setup slot", "", strerror(errno));
	return rc;
}

/* The loader's hook and setup-ABI slots: written once, so the whole
 * segment that holds them is made writable (whole_segment_once's reason),
 * or the pages alone if that is refused (a commit limit: the accounting
 * charges the whole segment). */
int sf_text_make_writable(uint64_t *page, size_t *len)
{
	/* a seccomp filter killing on W+X (sandbox.c) is asked first */
	if (!sf_seccomp_allows(SYS_mprotect, (long)*page, (long)*len, PROT_READ | PROT_WRITE | PROT_EXEC, 0, 0, 0)) {
		errno = EPERM;
		return -1;
	}
	struct span_find f = {*page, *page + *len, 0};
	dl_iterate_phdr(span_cb, &f);
	if (f.found && (f.lo != *page || f.hi != *page + *len) &&
	    mprotect((void *)f.lo, (size_t)(f.hi - f.lo), PROT_READ | PROT_WRITE | PROT_EXEC) == 0) {
		*page = f.lo;
		*len = (size_t)(f.hi - f.lo);
		return 0;
	}
	return mprotect((void *)*page, *len, PROT_READ | PROT_WRITE | PROT_EXEC);
}

/* Patches the selected sleds in [seg_lo, seg_hi). Their pages are made
 * writable while staying executable, then given its protection back. A
 * kernel or policy that refuses writable executable memory (SELinux
 * execmem/execmod, PaX MPROTECT) gets no fallback that drops PROT_EXEC:
 * another thread running that code would fault. Instead the sleds are
 * written through /proc/self/mem, which needs no mprotect, and only while
 * no other thread can be running code (the final store is then not
 * guaranteed atomic); otherwise the object stays untraced, with a
 * warning. */
static void patch_segment(struct sf_object_rt *obj, int seg, uint64_t seg_lo, uint64_t seg_hi, int prot,
			  const struct xray_sled_rt *sleds, uint32_t nsleds, const uint64_t target[SF_STUB_COUNT],
			  int on, struct sf_patch_result *res)
{
	/* Only the pages the selected sleds are on: a switch patches in passes
	 * (objects.c), and each pass's mprotect pair would otherwise walk the
	 * whole segment's page tables (a tenth of a switch's CPU per pass). */
	uint64_t lo = seg_hi, hi = seg_lo;
	for (uint32_t k = 0; k < nsleds; k++)
		if (sleds[k].selected && sleds[k].address >= seg_lo && sleds[k].address + SF_ARCH_SLED_SIZE <= seg_hi) {
			lo = sleds[k].address < lo ? sleds[k].address : lo;
			hi = sleds[k].address + SF_ARCH_SLED_SIZE > hi ? sleds[k].address + SF_ARCH_SLED_SIZE : hi;
		}
	if (lo >= hi)
		return;
	uint64_t page_lo = lo & ~(SF_PAGE - 1);
	size_t len = (size_t)(((hi + SF_PAGE - 1) & ~(SF_PAGE - 1)) - page_lo);
	struct sf_text_writer w = {-1, 0};
	/* A seccomp filter that kills on W+X (a W^X daemon's, issue 24) is
	 * asked first (sandbox.c): refused there is refused with EPERM here,
	 * never a killed program. The way round (/proc/self/mem) must then
	 * pass it too, and so must the mprotect that gives the text back. */
	/* (The unpatch of a stop for a filter runs at its install, before the
	 * filter is in force: sandbox.c's stop_for_good.) */
	int rwx_ok = (!on && __atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE)) ||
		     sf_seccomp_allows(SYS_mprotect, (long)page_lo, (long)len, prot | PROT_WRITE, 0, 0, 0);
	if (!rwx_ok &&
	    (!sf_seccomp_allows(SYS_openat, AT_FDCWD, (long)"/proc/self/mem", O_RDWR | O_CLOEXEC, 0, 0, 0) ||
	     !sf_seccomp_allows(SYS_pwrite64, 3, (long)&w, SF_ARCH_SLED_SIZE, 0, 0, 0) ||
	     !sf_seccomp_allows(SYS_getdents64, 3, (long)&w, 4096, 0, 0, 0) ||
	     !sf_seccomp_allows(SYS_close, 3, 0, 0, 0, 0, 0))) {
		sf_rt_message("a seccomp filter refuses writable executable text and /proc/self/mem: left untraced: ",
			      obj->path, "");
		return;
	}
	struct seg_job j = {obj, sleds, nsleds, target, on, res, &w, seg_lo, seg_hi, page_lo, page_lo + len,
			    0, 0, 0, 0, 0, 0, 0, 0};
	if (rwx_ok) {
		/* The first time a segment is made writable, its whole page range
		 * is, not only the pages of the selected sleds. Why: making a
		 * private file mapping writable marks it accounted (the kernel's
		 * VM_ACCOUNT), and that mark stays when the protection is given
		 * back. A part made writable alone then stays a mapping of its
		 * own, one line more in /proc/self/maps than untraced (Rust's
		 * backtrace symbolizer allocates a path per line: issue 25). Marked
		 * whole once, later passes on a part split the mapping only while
		 * writable, and it merges back. A refusal of the whole (a commit
		 * limit) leaves the part alone, as before. */
		uint64_t bit = seg < 64 ? (uint64_t)1 << seg : 0;
		int whole_done = 0;
		if (bit && !(obj->text_whole & bit)) {
			j.whole = 1;
			j.lo = seg_lo & ~(uint64_t)(SF_PAGE - 1);
			j.hi = (seg_hi + SF_PAGE - 1) & ~(uint64_t)(SF_PAGE - 1);
			run_pass(&j, prot);
			if (!j.err) {
				obj->text_whole |= bit;
				whole_done = 1;
			}
			j.whole = 0;
			j.lo = page_lo;
			j.hi = page_lo + len;
		}
		if (!whole_done) {
			j.err = 0;
			run_pass(&j, prot);
		}
		if (j.straddle)
			sf_rt_report("sleds across a boundary of the program's own text protections left as they are in ",
				     obj->path, "");
		if (j.restore_err)
			sf_rt_message("cannot restore the protection of the text of ", obj->path, strerror(j.restore_err));
	}
	if (!rwx_ok || j.err) {
		int err = rwx_ok ? j.err : EPERM;
		if (err != EACCES && err != EPERM) {
			sf_rt_message("cannot make text writable in ", obj->path, strerror(err));
			return;
		}
		if (other_threads()) {
			sf_rt_message("writable executable text refused and other threads are running: left untraced: ",
				      obj->path, strerror(err));
			return;
		}
		w.mem_fd = sf_fd_brief(open("/proc/self/mem", O_RDWR | O_CLOEXEC));
		if (w.mem_fd < 0) {
			sf_rt_message("writable executable text refused and /proc/self/mem unusable: left untraced: ",
				      obj->path, strerror(errno));
			return;
		}
		/* the pieces already patched (j.done) are left */
		for (uint32_t k = 0; k < nsleds && !w.failed; k++)
			if (in_seg(&j, &sleds[k]) && sleds[k].address >= j.done)
				(on ? sf_arch_patch_sled : sf_arch_unpatch_sled)(&sleds[k], target, &w, res);
		sf_close(w.mem_fd);
		if (w.failed)
			sf_rt_message("patching through /proc/self/mem failed in ", obj->path, strerror(w.failed));
	}
}

int sf_patch_object(struct sf_object_rt *obj, const struct xray_sled_rt *sleds, uint32_t nsleds, int on,
		    struct sf_patch_result *res)
{
	uint64_t tramp[SF_STUB_COUNT], target[SF_STUB_COUNT];
	trampolines(tramp);
	if (sf_arch_patch_targets(obj, tramp, target) < 0) {
		sf_rt_message("cannot map trampoline slots near ", obj->path, "object left untraced");
		return -1;
	}

	/* One executable segment at a time: writable only while patching. */
	const ElfW(Phdr) *ph = obj->phdr;
	for (int i = 0; i < obj->phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		uint64_t seg_lo = obj->info.load_bias + ph[i].p_vaddr;
		uint64_t seg_hi = seg_lo + ph[i].p_memsz;
		text_seg_known(seg_lo & ~(uint64_t)(SF_PAGE - 1), (seg_hi + SF_PAGE - 1) & ~(uint64_t)(SF_PAGE - 1));
		int any = 0;
		for (uint32_t k = 0; k < nsleds && !any; k++)
			any = sleds[k].selected && sleds[k].address >= seg_lo &&
			      sleds[k].address + SF_ARCH_SLED_SIZE <= seg_hi;
		if (any)
			patch_segment(obj, i, seg_lo, seg_hi, prot_of(ph[i].p_flags), sleds, nsleds, target, on, res);
	}
	return 0;
}
