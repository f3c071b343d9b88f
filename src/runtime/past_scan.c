/* A landing deeper than every stored shadow entry (512 + 2^19 on x86-64)
 * in a program without libgcc_s, whose frames past the stored ones are
 * not one recursion (unwind.c's past_stored_pop): the frames are counted
 * from the stack itself. A recorded frame's shadow entry is the address of
 * its return address, and that return address follows a direct call
 * (`e8 rel32`) whose target is a patched far entry sled (`ff 15`, a call
 * through a word of one of our slot pages, arch/x86_64/patch.c), maybe
 * behind an endbr64 or a PLT jump. The scan
 * reads every word from its own frame up to the last stored entry and
 * counts those; the count must equal the frames the thread has past the
 * stored entries, or the landing is left unrecorded (the caller records
 * that, docs/DESIGN.md "Past the array"). No frame of libgcc's walk, no
 * allocation: the thread's own stack and the known objects' loaded
 * segments are the only memory read. */
#include <stdint.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

#if defined(SF_ARCH_SHADOW) && defined(SF_SHADOW_OV_CAP)

/* At most this much stack is read (a word at a time, most rejected by a
 * range compare per object): 256 MiB, some 30 ms. */
enum { PAST_SCAN_BYTES = 256 << 20 };

static int32_t rel32_at(uint64_t a)
{
	int32_t r;
	__builtin_memcpy(&r, (const void *)a, 4);
	return r;
}

static int readable_code(uint64_t a, uint64_t len)
{
	return a + len > a && sf_objects_holds(a, a + len, 1);
}

/* The function a PLT entry at `at` jumps to (`ff 25` or `f2 ff 25`, after
 * an endbr64 in .plt.sec), else `at` itself. */
static uint64_t through_plt(uint64_t at)
{
	const unsigned char *b = (const unsigned char *)at;
	uint64_t got;
	if (b[0] == 0xff && b[1] == 0x25)
		got = at + 6 + (uint64_t)(int64_t)rel32_at(at + 2);
	else if (b[0] == 0xf2 && b[1] == 0xff && b[2] == 0x25)
		got = at + 7 + (uint64_t)(int64_t)rel32_at(at + 3);
	else
		return at;
	if (!sf_objects_holds(got, got + 8, 0))
		return 0;
	uint64_t to = *(const uint64_t *)got;
	return readable_code(to, 16) ? to : 0;
}

/* Whether the word w is the return address of a direct call into a
 * function whose entry sled is patched (a recorded frame's). */
static int recorded_return(uint64_t w, uint64_t stub_lo, uint64_t stub_hi)
{
	if (w < 5 || !readable_code(w - 5, 5) || *(const unsigned char *)(w - 5) != 0xe8)
		return 0;
	uint64_t to = w + (uint64_t)(int64_t)rel32_at(w - 4);
	if (!readable_code(to, 16))
		return 0;
	static const unsigned char endbr[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	if (!__builtin_memcmp((const void *)to, endbr, 4))
		to += 4;
	if (!(to = through_plt(to)))
		return 0;
	if (!__builtin_memcmp((const void *)to, endbr, 4))
		to += 4;
	const unsigned char *b = (const unsigned char *)to;
	if (b[0] != 0xff || b[1] != 0x15 || b[6] != 0x3d)
		return 0;
	uint64_t slot = to + 6 + (uint64_t)(int64_t)rel32_at(to + 2);
	return slot >= stub_lo && slot < stub_hi;
}

int64_t sf_past_scan_pop(struct sf_thread *t, uint64_t sp, uint64_t last, uint64_t stub_lo, uint64_t stub_hi)
{
	uint64_t stored = sf_shadow_stored(t), d = sf_shadow_depth(t), n = d - stored;
	uint64_t here = (uint64_t)__builtin_frame_address(0) & ~7ull;
	if (d <= stored || stub_lo >= stub_hi || sp <= here || sp > last || last - here > PAST_SCAN_BYTES)
		return -1;
	if (t->stack.own <= 0 && !sf_stack_own_holds(last))
		return -1;
	if (here < t->stack.lo || last >= t->stack.hi)
		return -1;
	uint64_t found = 0, live = 0, inner_live = 0;
	for (uint64_t a = last - 8; a >= here && found <= n; a -= 8) {
		if (!recorded_return(*(const uint64_t *)a, stub_lo, stub_hi))
			continue;
		found++;
		if (a >= sp) {
			live++;
			inner_live = a;
		}
	}
	if (found != n)
		return -1;
	sf_shadow_set_depth(t, stored + live);
	/* The innermost live entry, raw, for _Unwind_SetIP's fast path (the
	 * old one may be an exited deeper frame's, or an abandoned one's). */
	t->shadow_top = live ? inner_live : t->shadow_top & ~SF_SHADOW_TAG;
	return (int64_t)(d - sf_shadow_depth(t));
}

void sf_past_uncounted(void)
{
	struct sf_header *h = sf_log_header();
	if (h)
		__atomic_add_fetch(&h->landings_uncounted, 1, __ATOMIC_RELAXED);
}

#endif
