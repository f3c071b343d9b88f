/* Sled patching (x86-64).
 *
 * Unpatched sleds (11 bytes):
 *   entry, tail call:  eb 09 <9 bytes of nop>     (jmp over the sled)
 *   exit:              c3 <10 bytes of nop>        (ret)
 * Patched:
 *   entry, tail call:  41 ba <id32> e8 <rel32>     mov $id,%r10d; call stub
 *   exit:              41 ba <id32> e9 <rel32>     mov $id,%r10d; jmp stub
 * (id: sf_sled_id, a tail sled jumping to a patched entry adds SF_TAIL_ENTRY_ID_BITS)
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
#include <string.h>
#include <sys/mman.h>

#include "format/xray_map.h"
#include "runtime/runtime.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE SF_PAGE
#define REACH ((1ull << 31) - 2 * PAGE)
#define STUB_COUNT SF_STUB_COUNT
#define STUB_KINDS SF_STUB_KINDS

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
 * terminator. libgcc finds it through our _Unwind_Find_FDE (unwind.c,
 * sf_patch_stub_fde), not by registration: __register_frame_info would
 * make libgcc take a global mutex and search its registry at every frame
 * of every throw in the process (+150 ns a C++ throw here), and malloc
 * the sorted table at the first lookup after each registration. */
#define STUB_EH_OFFSET 2048
#define STUB_CIE_SIZE 24

static void put_stub_eh_frame(unsigned char *page)
{
	static const unsigned char cie[STUB_CIE_SIZE] = {
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

/* libgcc's struct dwarf_eh_bases. */
struct eh_bases {
	void *tbase, *dbase, *func;
};

const void *sf_patch_stub_fde(uint64_t pc, void *bases)
{
	int n = __atomic_load_n(&nstub_pages, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (pc >= stub_pages[i] && pc < stub_pages[i] + PAGE) {
			struct eh_bases *b = bases;
			b->tbase = b->dbase = NULL;
			b->func = (void *)stub_pages[i];
			return (const void *)(stub_pages[i] + STUB_EH_OFFSET + STUB_CIE_SIZE);
		}
	return NULL;
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
				/* Gated stubs jump to the recorder of their kind, the
				 * plain one or the args one (the variant before theirs). */
				int v = k / STUB_KINDS;
				if (inline_gate && (v == SF_VARIANT_GATED || v == SF_VARIANT_ARGS_GATED))
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
				sf_unwind_note_stubs((uint64_t)p, (uint64_t)p + PAGE);
				stub_pages[nstub_pages] = (uint64_t)p;
				__atomic_store_n(&nstub_pages, nstub_pages + 1, __ATOMIC_RELEASE);
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
			return sf_variant_role(v); /* a trigger's or an args sled records like a plain one */
		}
	return sf_patch_variant_of(to);
}

void sf_arch_patch_sled(const struct xray_sled_rt *s, const uint64_t target[STUB_COUNT], struct sf_text_writer *w,
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
	int k = s->kind == XRAY_SLED_EXIT ? SF_STUB_EXIT : s->kind == XRAY_SLED_TAIL ? SF_STUB_TAIL : SF_STUB_ENTRY;
	uint64_t to = target[s->variant * STUB_KINDS + k];
	int32_t rel = (int32_t)(int64_t)(to - (s->address + 11));
	unsigned char b[11] = {0x41, 0xba};
	uint32_t id = sf_sled_id(s);
	memcpy(b + 2, &id, 4);
	b[6] = is_exit ? 0xe9 : 0xe8;
	memcpy(b + 7, &rel, 4);
	sf_text_put(w, p + 2, b + 2, 9);
	sf_text_put(w, p, b, 2);
	if (!w->failed)
		res->patched++;
}


/* Back to the unpatched form: only bytes 0..1, with one atomic store
 * (`eb 09`, jump over the sled; `c3`, return). Bytes 2..10 keep the
 * patched call: a thread stopped between the mov and the call still
 * reaches the trampoline (one event after the pause, which readers
 * repair), where new bytes there could send an exit sled's thread past
 * its ret. A later patch finds the head it expects and rewrites the same
 * bytes. Counts the sleds switched back in res->patched. */
void sf_arch_unpatch_sled(const struct xray_sled_rt *s, const uint64_t target[STUB_COUNT], struct sf_text_writer *w,
			  struct sf_patch_result *res)
{
	(void)target;
	unsigned char *p = (unsigned char *)s->address;
	if (p[0] != 0x41 || p[1] != 0xba) {
		res->skipped++; /* not patched */
		return;
	}
	unsigned char head[2] = {0xeb, 0x09};
	if (s->kind == XRAY_SLED_EXIT) {
		head[0] = 0xc3;
		head[1] = p[1];
	}
	sf_text_put(w, p, head, 2);
	if (!w->failed)
		res->patched++;
}

int sf_arch_patch_targets(const struct sf_object_rt *obj, const uint64_t tramp[STUB_COUNT], uint64_t target[STUB_COUNT])
{
	int direct = 1;
	for (int i = 0; i < STUB_COUNT; i++)
		direct &= reaches(obj->lo, obj->hi, tramp[i]);
	if (direct) {
		memcpy(target, tramp, sizeof(uint64_t) * STUB_COUNT);
		return 0;
	}
	return make_stubs(obj->lo, obj->hi, tramp, target);
}

uint64_t sf_arch_tail_target(uint64_t sled, uint64_t lo, uint64_t hi)
{
	const unsigned char *j = (const unsigned char *)sled + 11; /* the sled is 11 bytes */
	if ((uint64_t)j + 5 > hi || (uint64_t)j < lo)
		return 0;
	if (j[0] == 0xe9) { /* jmp rel32 */
		int32_t rel;
		memcpy(&rel, j + 1, 4);
		return (uint64_t)j + 5 + (uint64_t)(int64_t)rel;
	}
	if (j[0] == 0xeb) /* jmp rel8 */
		return (uint64_t)j + 2 + (uint64_t)(int64_t)(int8_t)j[1];
	return 0;
}

/* LLVM has labelled x86-64 tail-call sleds as such since XRay began. */
int sf_arch_exit_is_tail(uint64_t sled, uint64_t lo, uint64_t hi)
{
	(void)sled, (void)lo, (void)hi;
	return 0;
}

/* A setup-ABI slot is `ret` + 15 nops. It becomes `jmp *0(%rip); <target>`:
 * bytes 1..13 first (unreachable behind the ret), then byte 0. */
void sf_arch_point_slot(void (*slot)(void), void (*target)(void))
{
	unsigned char *p = (unsigned char *)slot;
	if (!p || p[0] != 0xc3)
		return; /* not a fresh slot (already pointed, or not a slot): leave it */
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
	size_t len = ((uintptr_t)p + 16 - page + 4095) & ~(size_t)4095;
	if (mprotect((void *)page, len, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
		return;
	uint64_t to = (uint64_t)target;
	p[1] = 0x25;
	memset(p + 2, 0, 4);
	memcpy(p + 6, &to, 8);
	__atomic_store_n(p, (unsigned char)0xff, __ATOMIC_RELEASE);
	if (mprotect((void *)page, len, PROT_READ | PROT_EXEC) < 0)
		sf_rt_message("cannot restore the protection of a setup slot", "", strerror(errno));
}
