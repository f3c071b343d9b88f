/* Sled patching (x86-64).
 *
 * Unpatched sleds (11 bytes):
 *   entry, tail call:  eb 09 <9 bytes of nop>     (jmp over the sled)
 *   exit:              c3 <10 bytes of nop>        (ret)
 * Patched:
 *   entry, tail call:  41 ba <id32> e8 <rel32>     mov $id,%r10d; call stub
 *   exit:              41 ba <id32> e9 <rel32>     mov $id,%r10d; jmp stub
 * Bytes 2..10 are written first (never executed in the unpatched form),
 * then bytes 0..1 with one atomic 16-bit store, so a thread running the
 * code sees either the old or the new sled, never a mix.
 *
 * rel32 reaches +-2 GiB; a PIE executable and this library are usually
 * further apart, so each object gets a stub page mapped near it holding
 * `jmp *0(%rip)` + absolute trampoline address for each kind.
 */
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

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE 4096ull
#define REACH ((1ull << 31) - 2 * PAGE)

/* Stub slots: 3 kinds x 4 variants (enum sf_variant). */
enum { STUB_ENTRY, STUB_EXIT, STUB_TAIL, STUB_KINDS };
#define STUB_COUNT (STUB_KINDS * 4)

static void trampolines(uint64_t out[STUB_COUNT])
{
	static void (*const tsc[STUB_COUNT])(void) = {
		sf_tramp_entry, sf_tramp_exit, sf_tramp_tail,
		sf_tramp_entry_gated, sf_tramp_exit_gated, sf_tramp_tail_gated,
		sf_tramp_entry_window, sf_tramp_exit_window, sf_tramp_tail_window,
		sf_tramp_entry_mono, sf_tramp_exit_mono, sf_tramp_tail_mono, /* SLOW: the C slow path */
	};
	static void (*const mono[STUB_COUNT])(void) = {
		sf_tramp_entry_mono, sf_tramp_exit_mono, sf_tramp_tail_mono,
		sf_tramp_entry_mono_gated, sf_tramp_exit_mono_gated, sf_tramp_tail_mono_gated,
		sf_tramp_entry_mono_window, sf_tramp_exit_mono_window, sf_tramp_tail_mono_window,
		sf_tramp_entry_mono, sf_tramp_exit_mono, sf_tramp_tail_mono,
	};
	for (int i = 0; i < STUB_COUNT; i++)
		out[i] = (uint64_t)(sf_config.clock == SF_CLOCK_MONOTONIC ? mono[i] : tsc[i]);
}

static int reaches(uint64_t from_lo, uint64_t from_hi, uint64_t to)
{
	uint64_t a = to > from_lo ? to - from_lo : from_lo - to;
	uint64_t b = to > from_hi ? to - from_hi : from_hi - to;
	return a < REACH && b < REACH;
}

/* Stub pages made so far. They are never unmapped (a dlclose'd object's
 * stubs point at our trampolines, which never go away) and are reused by
 * any later object within reach, so dlopen/dlclose cycles do not leak. */
#define MAX_STUB_PAGES 256
static uint64_t stub_pages[MAX_STUB_PAGES];
static int nstub_pages;

#define STUB_SLOT 32

static int reuse_stubs(uint64_t lo, uint64_t hi, uint64_t stub[STUB_COUNT])
{
	for (int i = 0; i < nstub_pages; i++) {
		if (!reaches(lo, hi, stub_pages[i]) || !reaches(lo, hi, stub_pages[i] + PAGE))
			continue;
		for (int k = 0; k < STUB_COUNT; k++)
			stub[k] = stub_pages[i] + STUB_SLOT * (uint64_t)k;
		return 0;
	}
	return -1;
}

/* jmp *0(%rip); <to>: 14 bytes. */
static unsigned char *put_jump(unsigned char *s, uint64_t to)
{
	s[0] = 0xff;
	s[1] = 0x25;
	memset(s + 2, 0, 4);
	memcpy(s + 6, &to, 8);
	return s + 14;
}

/* The %fs-relative offset of this thread's window depth: the same for
 * every thread (initial-exec TLS). 0 if it does not fit a disp32. */
static int window_depth_disp(int32_t *disp)
{
	uint64_t fs_base;
	__asm__("mov %%fs:0, %0" : "=r"(fs_base)); /* the TCB points to itself */
	int64_t off = (int64_t)((uint64_t)&sf_self.window_depth - fs_base);
	if (off < INT32_MIN || off > INT32_MAX)
		return 0;
	*disp = (int32_t)off;
	return 1;
}

/* A gated stub does the within-mode test itself, touching no register:
 *   cmpq $0, %fs:<window_depth>; jne 1f; ret; 1: jmp *0(%rip) -> recorder
 * so a call outside any window costs a call, a compare and a return. */
static void put_gated(unsigned char *s, int32_t disp, uint64_t recorder)
{
	static const unsigned char cmp[] = {0x64, 0x48, 0x83, 0x3c, 0x25};
	memcpy(s, cmp, sizeof(cmp));
	memcpy(s + 5, &disp, 4);
	s[9] = 0x00;
	s[10] = 0x75; /* jne +1 */
	s[11] = 0x01;
	s[12] = 0xc3; /* ret */
	put_jump(s + 13, recorder);
}

/* Unwind information for a stub page, so in-process unwinders (libgcc:
 * Rust backtraces, backtrace(), profilers) can walk from a signal that
 * lands on a stub: at every stub instruction the return address is on top
 * of the stack, as at a function's first instruction. One CIE (CFA =
 * rsp + 8, return address at CFA - 8), one FDE over the page, a zero
 * terminator; registered with libgcc's __register_frame_info (no malloc)
 * once unwind.c has found libgcc_s. */
#define STUB_EH_OFFSET 2048

static void put_stub_eh_frame(unsigned char *page)
{
	static const unsigned char cie[24] = {
		20, 0, 0, 0, 0, 0, 0, 0, /* length, CIE id */
		1, 'z', 'R', 0,          /* version, augmentation */
		1, 0x78, 16, 1, 0x00,    /* code align 1, data align -8, RA r16, aug len 1, absptr */
		0x0c, 7, 8,              /* DW_CFA_def_cfa rsp, 8 */
		0x90, 1,                 /* DW_CFA_offset r16, CFA - 8 */
		0, 0,                    /* padding */
	};
	unsigned char *e = page + STUB_EH_OFFSET;
	memcpy(e, cie, sizeof(cie));
	unsigned char *f = e + sizeof(cie);
	uint32_t len = 28, cie_ptr = (uint32_t)(f + 4 - e);
	uint64_t begin = (uint64_t)page, range = PAGE;
	memcpy(f, &len, 4);
	memcpy(f + 4, &cie_ptr, 4);
	memcpy(f + 8, &begin, 8);
	memcpy(f + 16, &range, 8);
	memset(f + 24, 0, 8 + 4); /* augmentation length 0, padding, the terminator */
}

static void (*register_frames)(const void *, void *);
static _Alignas(16) unsigned char stub_objects[MAX_STUB_PAGES][128]; /* libgcc's struct object */
static int nregistered;

static void register_stub_pages(void)
{
	if (!register_frames)
		return;
	for (; nregistered < nstub_pages; nregistered++)
		register_frames((const void *)(stub_pages[nregistered] + STUB_EH_OFFSET), stub_objects[nregistered]);
}

void sf_patch_set_frame_registrar(void (*reg)(const void *, void *))
{
	register_frames = reg;
	register_stub_pages();
}

/* Maps a page of stubs within reach of [lo, hi) and fills it. */
static int make_stubs(uint64_t lo, uint64_t hi, const uint64_t tramp[STUB_COUNT], uint64_t stub[STUB_COUNT])
{
	if (reuse_stubs(lo, hi, stub) == 0)
		return 0;
	for (uint64_t step = 1; step < 1024; step++) {
		for (int side = 0; side < 2; side++) {
			uint64_t want;
			if (side == 0)
				want = ((hi + PAGE - 1) & ~(PAGE - 1)) + step * (1ull << 20);
			else if (lo > step * (1ull << 20) + PAGE)
				want = (lo & ~(PAGE - 1)) - step * (1ull << 20);
			else
				continue;
			if (!reaches(lo, hi, want))
				continue;
			void *p = mmap((void *)want, PAGE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)p != want) { /* kernel without MAP_FIXED_NOREPLACE */
				munmap(p, PAGE);
				continue;
			}
			unsigned char *c = p;
			int32_t disp = 0;
			int inline_gate = window_depth_disp(&disp);
			for (int k = 0; k < STUB_COUNT; k++) {
				unsigned char *s = c + STUB_SLOT * k;
				/* Gated stubs jump to the plain recorder of their kind. */
				if (inline_gate && k >= STUB_KINDS && k < 2 * STUB_KINDS)
					put_gated(s, disp, tramp[k - STUB_KINDS]);
				else
					put_jump(s, tramp[k]);
				stub[k] = (uint64_t)s;
			}
			put_stub_eh_frame(c);
			if (mprotect(p, PAGE, PROT_READ | PROT_EXEC) < 0) {
				munmap(p, PAGE);
				return -1;
			}
			if (nstub_pages < MAX_STUB_PAGES) {
				stub_pages[nstub_pages] = (uint64_t)p;
				__atomic_store_n(&nstub_pages, nstub_pages + 1, __ATOMIC_RELEASE);
				register_stub_pages();
			}
			return 0;
		}
	}
	return -1;
}

/* The variant of a patched entry sled `41 ba <id> e8 <rel32>` at fn (after
 * an endbr64, if any), from where its call goes: a trampoline, or a slot of
 * one of our stub pages. -1 if fn does not start with a patched entry sled.
 * Used by unwind.c to tell which frames on a stack were recorded. */
int sf_patch_entry_variant(uint64_t fn)
{
	const unsigned char *p = (const unsigned char *)fn;
	if (!p)
		return -1;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4;
	if (p[0] != 0x41 || p[1] != 0xba || p[6] != 0xe8)
		return -1;
	int32_t rel;
	memcpy(&rel, p + 7, 4);
	uint64_t to = (uint64_t)p + 11 + (uint64_t)(int64_t)rel;
	int n = __atomic_load_n(&nstub_pages, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (to >= stub_pages[i] && to < stub_pages[i] + STUB_COUNT * STUB_SLOT) {
			int v = (int)((to - stub_pages[i]) / STUB_SLOT / STUB_KINDS);
			return v == SF_VARIANT_SLOW ? SF_VARIANT_PLAIN : v; /* records like a plain one */
		}
	static void (*const gated[])(void) = {sf_tramp_entry_gated, sf_tramp_entry_mono_gated};
	static void (*const window[])(void) = {sf_tramp_entry_window, sf_tramp_entry_mono_window};
	for (int i = 0; i < 2; i++) {
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

/* How sled bytes reach the text: stores while it is writable and
 * executable, or writes through /proc/self/mem (mem_fd >= 0). */
struct text_writer {
	int mem_fd;
	int failed;
};

static void put_bytes(struct text_writer *w, unsigned char *at, const unsigned char *b, size_t n)
{
	if (w->mem_fd < 0) {
		if (n == 2)
			__atomic_store_n((uint16_t *)at, (uint16_t)(b[0] | b[1] << 8), __ATOMIC_RELEASE);
		else
			memcpy(at, b, n);
	} else if (!w->failed && pwrite(w->mem_fd, b, n, (off_t)(uintptr_t)at) != (ssize_t)n) {
		w->failed = errno ? errno : EIO;
	}
}

static void patch_one(const struct xray_sled_rt *s, const uint64_t target[STUB_COUNT], struct text_writer *w,
		      struct sf_patch_result *res)
{
	unsigned char *p = (unsigned char *)s->address;
	int is_exit = s->kind == XRAY_SLED_EXIT;
	if (p[0] == 0x41 && p[1] == 0xba) {
		res->skipped++; /* patched already (by sftrace_setup and a preload, say) */
		return;
	}
	if (is_exit ? p[0] != 0xc3 : (p[0] != 0xeb || p[1] != 0x09)) {
		res->skipped++;
		return;
	}
	int k = s->kind == XRAY_SLED_EXIT ? STUB_EXIT : s->kind == XRAY_SLED_TAIL ? STUB_TAIL : STUB_ENTRY;
	uint64_t to = target[s->variant * STUB_KINDS + k];
	int32_t rel = (int32_t)(int64_t)(to - (s->address + 11));
	unsigned char b[11] = {0x41, 0xba};
	memcpy(b + 2, &s->func_id, 4);
	b[6] = is_exit ? 0xe9 : 0xe8;
	memcpy(b + 7, &rel, 4);
	put_bytes(w, p + 2, b + 2, 9);
	put_bytes(w, p, b, 2);
	if (!w->failed)
		res->patched++;
}

/* Whether a thread other than this one (and our writer) may be running
 * program code. Raw getdents64: no allocation here. */
static int other_threads(void)
{
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	char buf[4096];
	long n, tasks = 0;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < n;) {
			const char *name = buf + off + 19; /* d_ino 8, d_off 8, d_reclen 2, d_type 1 */
			tasks += name[0] != '.';
			off += *(const unsigned short *)(buf + off + 16);
		}
	close(fd);
	return n < 0 || tasks - (sf_writer_active() ? 1 : 0) > 1;
}

/* Patches the selected sleds in [seg_lo, seg_hi). The text is made
 * writable while staying executable, then given its protection back. A
 * kernel or policy that refuses writable executable memory (SELinux
 * execmem/execmod, PaX MPROTECT) gets no fallback that drops PROT_EXEC:
 * another thread running that code would fault. Instead the sleds are
 * written through /proc/self/mem, which needs no mprotect, and only while
 * no other thread can be running code (the 2-byte store is then not
 * guaranteed atomic); otherwise the object stays untraced, with a
 * warning. */
static void patch_segment(const struct sf_object_rt *obj, uint64_t seg_lo, uint64_t seg_hi, int prot,
			  const struct xray_sled_rt *sleds, uint32_t nsleds, const uint64_t target[STUB_COUNT],
			  struct sf_patch_result *res)
{
	uint64_t page_lo = seg_lo & ~(PAGE - 1);
	size_t len = (size_t)(((seg_hi + PAGE - 1) & ~(PAGE - 1)) - page_lo);
	struct text_writer w = {-1, 0};
	if (mprotect((void *)page_lo, len, prot | PROT_WRITE) < 0) {
		int err = errno;
		if (err != EACCES && err != EPERM) {
			sf_rt_message("cannot make text writable in ", obj->path, strerror(err));
			return;
		}
		if (other_threads()) {
			sf_rt_message("writable executable text refused and other threads are running: left untraced: ",
				      obj->path, strerror(err));
			return;
		}
		w.mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		if (w.mem_fd < 0) {
			sf_rt_message("writable executable text refused and /proc/self/mem unusable: left untraced: ",
				      obj->path, strerror(errno));
			return;
		}
	}
	for (uint32_t k = 0; k < nsleds && !w.failed; k++)
		if (sleds[k].selected && sleds[k].address >= seg_lo && sleds[k].address + 11 <= seg_hi)
			patch_one(&sleds[k], target, &w, res);
	if (w.mem_fd >= 0) {
		close(w.mem_fd);
		if (w.failed)
			sf_rt_message("patching through /proc/self/mem failed in ", obj->path, strerror(w.failed));
	} else if (mprotect((void *)page_lo, len, prot) < 0) {
		sf_rt_message("cannot restore the protection of the text of ", obj->path, strerror(errno));
	}
}

int sf_patch_object(const struct sf_object_rt *obj, const struct xray_sled_rt *sleds, uint32_t nsleds,
		    struct sf_patch_result *res)
{
	uint64_t tramp[STUB_COUNT], target[STUB_COUNT];
	trampolines(tramp);
	int direct = 1;
	for (int i = 0; i < STUB_COUNT; i++)
		direct &= reaches(obj->lo, obj->hi, tramp[i]);
	if (direct) {
		memcpy(target, tramp, sizeof(target));
	} else if (make_stubs(obj->lo, obj->hi, tramp, target) < 0) {
		sf_rt_message("cannot map trampoline stubs near ", obj->path, "object left untraced");
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
			any = sleds[k].selected && sleds[k].address >= seg_lo && sleds[k].address + 11 <= seg_hi;
		if (any)
			patch_segment(obj, seg_lo, seg_hi, prot_of(ph[i].p_flags), sleds, nsleds, target, res);
	}
	return 0;
}
