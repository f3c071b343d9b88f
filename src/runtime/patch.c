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

/* The first time a segment is made writable, its whole page range is,
 * not only the pages of the selected sleds: [*page_lo, + *len) becomes
 * the segment's. Why: making a private file mapping writable marks it
 * accounted (the kernel's VM_ACCOUNT), and that mark stays when the
 * protection is given back. A part made writable alone then stays a
 * mapping of its own, one line more in /proc/self/maps than untraced
 * (the executable's text as two or three "r-xp" lines). A program reading
 * its maps (Rust's backtrace symbolizer allocates a path per line: issue
 * 25) saw that. Marked whole once, later passes on a part split the
 * mapping only while writable, and it merges back when its protection is
 * given back. seg: the program header's index (a bit of text_whole).
 * 1 if the whole segment is now writable; 0: nothing was changed. */
static int whole_segment_once(struct sf_object_rt *obj, int seg, uint64_t seg_lo, uint64_t seg_hi,
			      uint64_t *page_lo, size_t *len, int prot)
{
	uint64_t bit = seg < 64 ? (uint64_t)1 << seg : 0;
	if (!bit || (obj->text_whole & bit))
		return 0;
	uint64_t lo = seg_lo & ~(SF_PAGE - 1);
	size_t n = (size_t)(((seg_hi + SF_PAGE - 1) & ~(SF_PAGE - 1)) - lo);
	if (mprotect((void *)lo, n, prot | PROT_WRITE) < 0)
		return 0; /* the part alone, as before (a refusal then takes /proc/self/mem) */
	obj->text_whole |= bit;
	*page_lo = lo;
	*len = n;
	return 1;
}

/* The program's own protections inside a text range (issue 25, skeptic
 * 25v): a hot-patcher or a self-modifying program may have made a page of
 * its text rwx (or r--, or ---) with its own mprotect. The runtime's
 * mprotect pair around a patch must give those pages back what the
 * program had, not the segment's p_flags. Read from /proc/self/maps just
 * before the runtime makes the range writable (only what it changes is
 * put back): each mapping overlapping [lo, hi) whose protection is not
 * the segment's. Small stack buffers, no allocation; the read stops at
 * the first mapping at or above hi (the kernel lists them in order). */
enum { OWN_MAX = 32 };
struct own_prots {
	int n, overflow;
	struct { uint64_t lo, hi; int prot; } r[OWN_MAX];
};

struct own_find {
	uint64_t lo, hi;
	int prot;
	struct own_prots *o;
};

static int own_line(const struct sf_map *m, void *arg)
{
	struct own_find *f = arg;
	struct own_prots *o = f->o;
	if (m->lo >= f->hi)
		return 1;
	if (m->hi > f->lo && m->prot != f->prot) {
		if (o->n == OWN_MAX)
			o->overflow = 1;
		else {
			o->r[o->n].lo = m->lo < f->lo ? f->lo : m->lo;
			o->r[o->n].hi = m->hi > f->hi ? f->hi : m->hi;
			o->r[o->n].prot = m->prot;
			o->n++;
		}
	}
	return 0;
}

static void own_prots_read(uint64_t lo, uint64_t hi, int prot, struct own_prots *o)
{
	o->n = o->overflow = 0;
	struct own_find f = {lo, hi, prot, o};
	sf_maps_walk(1, own_line, &f);
}

/* Gives [lo, lo + len) back its protection: prot, except the program's own
 * ranges, which get theirs (left alone when already so: an rwx page the
 * program made needs no mprotect, which a W^X filter might refuse). */
static int own_prots_restore(uint64_t lo, size_t len, int prot, int now, const struct own_prots *o)
{
	uint64_t at = lo, end = lo + len;
	int rc = 0;
	for (int k = 0; k < o->n; k++) {
		uint64_t a = o->r[k].lo < lo ? lo : o->r[k].lo, b = o->r[k].hi > end ? end : o->r[k].hi;
		if (a >= b)
			continue;
		if (a > at && mprotect((void *)at, (size_t)(a - at), prot) < 0)
			rc = -1;
		if (o->r[k].prot != now && mprotect((void *)a, (size_t)(b - a), o->r[k].prot) < 0)
			rc = -1;
		at = b;
	}
	if (end > at && mprotect((void *)at, (size_t)(end - at), prot) < 0)
		rc = -1;
	return rc;
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
	/* The program's own protections in the segment, before any change.
	 * Only once the program's code may have run (step 2, init.c): the
	 * patch at start-up reads no maps (skeptic 25s/25u count its opens). */
	struct own_prots own = {0, 0, {{0, 0, 0}}};
	if (rwx_ok && sf_services_started())
		own_prots_read(seg_lo & ~(SF_PAGE - 1), (seg_hi + SF_PAGE - 1) & ~(SF_PAGE - 1), prot, &own);
	if (own.overflow)
		sf_rt_message("more text ranges with the program's own protections than kept, some get the "
			      "segment's back: ", obj->path, "");
	if (!rwx_ok || (!whole_segment_once(obj, seg, seg_lo, seg_hi, &page_lo, &len, prot) &&
			mprotect((void *)page_lo, len, prot | PROT_WRITE) < 0)) {
		int err = rwx_ok ? errno : EPERM;
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
	}
	for (uint32_t k = 0; k < nsleds && !w.failed; k++)
		if (sleds[k].selected && sleds[k].address >= seg_lo && sleds[k].address + SF_ARCH_SLED_SIZE <= seg_hi)
			(on ? sf_arch_patch_sled : sf_arch_unpatch_sled)(&sleds[k], target, &w, res);
	if (w.mem_fd >= 0) {
		sf_close(w.mem_fd);
		if (w.failed)
			sf_rt_message("patching through /proc/self/mem failed in ", obj->path, strerror(w.failed));
	} else if (own_prots_restore(page_lo, len, prot, prot | PROT_WRITE, &own) < 0) {
		sf_rt_message("cannot restore the protection of the text of ", obj->path, strerror(errno));
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
		int any = 0;
		for (uint32_t k = 0; k < nsleds && !any; k++)
			any = sleds[k].selected && sleds[k].address >= seg_lo &&
			      sleds[k].address + SF_ARCH_SLED_SIZE <= seg_hi;
		if (any)
			patch_segment(obj, i, seg_lo, seg_hi, prot_of(ph[i].p_flags), sleds, nsleds, target, on, res);
	}
	return 0;
}
