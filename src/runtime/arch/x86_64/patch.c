/* Sled patching (x86-64).
 *
 * Unpatched sleds (11 bytes):
 *   entry, tail call:  eb 09 <9 bytes of nop>     (jmp over the sled)
 *   exit:              c3 <10 bytes of nop>        (ret)
 * Patched, in an object within a rel32 of our trampolines:
 *   entry, tail call:  41 ba <id32> e8 <rel32>     mov $id,%r10d; call tramp
 *   exit:              41 ba <id32> e9 <rel32>     mov $id,%r10d; jmp tramp
 * and in one further away (a PIE executable: "far"):
 *   entry, tail call:  ff 15 <disp32> 3d <id32>    call *slot(%rip); cmp $id,%eax
 *   exit:              ff 15 <disp32> c3 <id32>    call *slot(%rip); ret; <id>
 * (id: sf_sled_id, a tail sled jumping to a patched entry adds SF_TAIL_ENTRY_ID_BITS)
 * Bytes 2..10 are written first (never executed in the unpatched form),
 * then bytes 0..1 with one atomic 16-bit store, so a thread running the
 * code sees either the old or the new sled, never a mix.
 *
 * A far sled's slot is a data word on a page mapped near the object,
 * holding a far thunk of ours (trampoline.S, "Far sleds"), which reads the
 * id at its return address + 1. Nothing executable is ours outside this
 * library: libgcc finds every pc's unwind information through the loaded
 * objects, as untraced, so no _Unwind_Find_FDE lookup is stood in front
 * of (the stub pages this replaced did: +3 instructions a frame lookup,
 * +6,000 a throw caught 1,000 frames up), and an executable page is never
 * asked of the kernel (execmem policies allowed no stub page).
 */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

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

/* Slot pages made so far: STUB_COUNT words each, one per (variant, kind),
 * read-only once filled. They are never unmapped (a dlclose'd object's
 * sleds point at them, and they hold only our thunks' addresses) and are
 * reused by any later object within reach, so dlopen/dlclose cycles do not
 * leak. The clock's trampolines are chosen once per process, so a page's
 * words never change. */
#define MAX_STUB_PAGES 256
static uint64_t stub_pages[MAX_STUB_PAGES];
static int nstub_pages;

#define SLOT 8

static int reuse_slots(uint64_t lo, uint64_t hi, uint64_t slot[STUB_COUNT])
{
	for (int i = 0; i < nstub_pages; i++) {
		if (!reaches(lo, hi, stub_pages[i]) || !reaches(lo, hi, stub_pages[i] + PAGE))
			continue;
		for (int k = 0; k < STUB_COUNT; k++)
			slot[k] = stub_pages[i] + SLOT * (uint64_t)k;
		return 0;
	}
	return -1;
}

/* The slot page holding `at`, if any (its index), else -1. */
static int slot_page_of(uint64_t at)
{
	int n = __atomic_load_n(&nstub_pages, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (at >= stub_pages[i] && at < stub_pages[i] + STUB_COUNT * SLOT)
			return i;
	return -1;
}

/* The far thunk of a trampoline (trampoline.S), 0 for none. */
static uint64_t far_of(uint64_t tramp)
{
#define SF_FAR_PAIR(n) {(uint64_t)sf_tramp_##n, (uint64_t)sf_tramp_##n##_far},
	static const uint64_t pairs[][2] = {SF_TRAMPS(SF_FAR_PAIR)};
#undef SF_FAR_PAIR
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (pairs[i][0] == tramp)
			return pairs[i][1];
	return 0;
}

/* Maps a page of slots within reach of [lo, hi) and fills it. */
static int make_slots(uint64_t lo, uint64_t hi, const uint64_t tramp[STUB_COUNT], uint64_t slot[STUB_COUNT])
{
	if (reuse_slots(lo, hi, slot) == 0)
		return 0;
	uint64_t far[STUB_COUNT];
	for (int k = 0; k < STUB_COUNT; k++)
		if (!(far[k] = far_of(tramp[k])))
			return -1;
	if (nstub_pages >= MAX_STUB_PAGES)
		return -1;
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
			memcpy(p, far, sizeof(far));
			if (mprotect(p, PAGE, PROT_READ) < 0) {
				munmap(p, PAGE);
				return -1;
			}
			for (int k = 0; k < STUB_COUNT; k++)
				slot[k] = (uint64_t)p + SLOT * (uint64_t)k;
			sf_unwind_note_stubs((uint64_t)p, (uint64_t)p + PAGE);
			stub_pages[nstub_pages] = (uint64_t)p;
			__atomic_store_n(&nstub_pages, nstub_pages + 1, __ATOMIC_RELEASE);
			return 0;
		}
	}
	return -1;
}

/* The variant of the sled whose call goes to `to` (a trampoline, or a
 * slot of one of our pages). */
static int variant_of(uint64_t to)
{
	int i = slot_page_of(to);
	if (i >= 0) {
		int v = (int)((to - stub_pages[i]) / SLOT / STUB_KINDS);
		return sf_variant_role(v); /* a trigger's or an args sled records like a plain one */
	}
	return sf_patch_variant_of(to);
}

/* The variant of a patched entry sled at fn (after an endbr64, if any),
 * from where its call goes: a trampoline (`41 ba <id> e8 <rel32>`), or a
 * slot of one of our slot pages (`ff 15 <disp32> 3d <id>`). -1 if fn does
 * not start with a patched entry sled.
 * Used by unwind.c to tell which frames on a stack were recorded. */
int sf_patch_entry_variant(uint64_t fn)
{
	const unsigned char *p = (const unsigned char *)fn;
	if (!p)
		return -1;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4;
	int32_t rel;
	if (p[0] == 0xff && p[1] == 0x15 && p[6] == 0x3d) { /* far: call *slot(%rip) */
		memcpy(&rel, p + 2, 4);
		uint64_t slot = (uint64_t)p + 6 + (uint64_t)(int64_t)rel;
		return slot_page_of(slot) < 0 ? -1 : variant_of(slot);
	}
	if (p[0] != 0x41 || p[1] != 0xba || p[6] != 0xe8)
		return -1;
	memcpy(&rel, p + 7, 4);
	return variant_of((uint64_t)p + 11 + (uint64_t)(int64_t)rel);
}

/* Whether the sled's first two bytes are a patched head (either form). */
static int patched_head(const unsigned char *p)
{
	return (p[0] == 0x41 && p[1] == 0xba) || (p[0] == 0xff && p[1] == 0x15);
}

void sf_arch_patch_sled(const struct xray_sled_rt *s, const uint64_t target[STUB_COUNT], struct sf_text_writer *w,
			struct sf_patch_result *res)
{
	unsigned char *p = (unsigned char *)s->address;
	int is_exit = s->kind == XRAY_SLED_EXIT;
	if (patched_head(p)) {
		res->skipped++; /* patched already (by sftrace_setup and a preload, say) */
		return;
	}
	if (is_exit ? p[0] != 0xc3 : (p[0] != 0xeb || p[1] != 0x09)) {
		res->skipped++;
		return;
	}
	int k = s->kind == XRAY_SLED_EXIT ? SF_STUB_EXIT : s->kind == XRAY_SLED_TAIL ? SF_STUB_TAIL : SF_STUB_ENTRY;
	uint64_t to = target[s->variant * STUB_KINDS + k];
	uint32_t id = sf_sled_id(s);
	unsigned char b[11];
	if (slot_page_of(to) >= 0) { /* far */
		int32_t disp = (int32_t)(int64_t)(to - (s->address + 6));
		b[0] = 0xff;
		b[1] = 0x15;
		memcpy(b + 2, &disp, 4);
		b[6] = is_exit ? 0xc3 : 0x3d;
		memcpy(b + 7, &id, 4);
	} else {
		int32_t rel = (int32_t)(int64_t)(to - (s->address + 11));
		b[0] = 0x41;
		b[1] = 0xba;
		memcpy(b + 2, &id, 4);
		b[6] = is_exit ? 0xe9 : 0xe8;
		memcpy(b + 7, &rel, 4);
	}
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
	if (!patched_head(p)) {
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
	return make_slots(obj->lo, obj->hi, tramp, target);
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
struct slot_write {
	unsigned char *p;
	uint64_t to;
};

static void slot_write(void *arg)
{
	struct slot_write *s = arg;
	s->p[1] = 0x25;
	memset(s->p + 2, 0, 4);
	memcpy(s->p + 6, &s->to, 8);
	__atomic_store_n(s->p, (unsigned char)0xff, __ATOMIC_RELEASE);
}

/* The slot's pages only, each given back the program's own protection
 * (patch.c, sf_text_rewrite): its rwx page stays rwx, its PROT_NONE guard
 * page ---, however close to the slot (skeptic 46b). */
void sf_arch_point_slot(void (*slot)(void), void (*target)(void))
{
	unsigned char *p = (unsigned char *)slot;
	if (!p || p[0] != 0xc3)
		return; /* not a fresh slot (already pointed, or not a slot): leave it */
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
	size_t len = ((uintptr_t)p + 16 - page + 4095) & ~(size_t)4095;
	/* a seccomp filter killing on W+X (sandbox.c) leaves the slot as it is */
	if (!sf_seccomp_allows(SYS_mprotect, (long)page, (long)len, PROT_READ | PROT_WRITE | PROT_EXEC, 0, 0, 0))
		return;
	struct slot_write s = {p, (uint64_t)target};
	sf_text_rewrite((uint64_t)p, (uint64_t)p + 16, PROT_READ | PROT_EXEC, slot_write, &s);
}
