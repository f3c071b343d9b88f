/* Sled patching (aarch64).
 *
 * An unpatched sled is 32 bytes: `b #32` and 7 nops, at function entry,
 * before each `ret`, and before a tail call's branch. Patched:
 *   0  stp  x17, x30, [sp, #-16]!   keep x17 and the link register
 *   4  ldr  x17, 20                 the trampoline's address (bytes 20..27)
 *   8  blr  x17                     x30 = sled + 12
 *  12  ldp  x17, x30, [sp], #16
 *  16  b    32                      over the data, on to the code after the sled
 *  20  .quad trampoline
 *  28  .word function id            the trampoline reads it at [x30, #16] (sf_sled_id: a tail
 *                                  sled jumping to a patched entry adds SF_TAIL_ENTRY_ID_BITS)
 * The absolute address reaches any trampoline: no stub pages. x17 (IP1) is
 * saved too, because at a tail-call sled an indirect branch may be about to
 * use it. Words 1..7 are written first and made visible to instruction
 * fetch (__builtin___clear_cache); word 0 last, with one 32-bit store, so a
 * thread running the code executes either `b #32` or the whole new sled
 * (the order LLVM's own XRay runtime uses).
 */
#include <string.h>

#include "format/xray_map.h"
#include "runtime/runtime.h"

#define OP_B32 0x14000008u      /* b #32 */
#define OP_NOP 0xd503201fu
#define OP_STP 0xa9bf7bf1u      /* stp x17, x30, [sp, #-16]! */
#define OP_LDR_LIT 0x58000091u  /* ldr x17, #16 */
#define OP_BLR 0xd63f0220u      /* blr x17 */
#define OP_LDP 0xa8c17bf1u      /* ldp x17, x30, [sp], #16 */
#define OP_B16 0x14000004u      /* b #16 */

static uint32_t word_at(const void *p, int i)
{
	uint32_t w;
	memcpy(&w, (const char *)p + 4 * i, 4);
	return w;
}

int sf_arch_patch_targets(const struct sf_object_rt *obj, const uint64_t tramp[SF_STUB_COUNT],
			  uint64_t target[SF_STUB_COUNT])
{
	memcpy(target, tramp, sizeof(uint64_t) * SF_STUB_COUNT);
	return 0;
}

void sf_arch_patch_sled(const struct xray_sled_rt *s, const uint64_t target[SF_STUB_COUNT], struct sf_text_writer *w,
			struct sf_patch_result *res)
{
	char *p = (char *)s->address;
	if (word_at(p, 0) != OP_B32) {
		res->skipped++; /* patched already, or not a sled we know */
		return;
	}
	/* Nops, or the tail of our own patch left by a pause (sf_arch_unpatch_sled). */
	int ours = word_at(p, 1) == OP_LDR_LIT && word_at(p, 2) == OP_BLR && word_at(p, 3) == OP_LDP;
	for (int i = 1; i < 8 && !ours; i++)
		if (word_at(p, i) != OP_NOP) {
			res->skipped++;
			return;
		}
	int k = s->kind == XRAY_SLED_EXIT ? SF_STUB_EXIT : s->kind == XRAY_SLED_TAIL ? SF_STUB_TAIL : SF_STUB_ENTRY;
	uint64_t to = target[s->variant * SF_STUB_KINDS + k];
	uint32_t b[8] = {OP_STP, OP_LDR_LIT, OP_BLR, OP_LDP, OP_B16};
	memcpy(&b[5], &to, 8);
	b[7] = sf_sled_id(s);
	sf_text_put(w, p + 4, &b[1], 28);
	__builtin___clear_cache(p + 4, p + 32);
	sf_text_put(w, p, &b[0], 4);
	__builtin___clear_cache(p, p + 4);
	if (!w->failed)
		res->patched++;
}

uint64_t sf_arch_tail_target(uint64_t sled, uint64_t lo, uint64_t hi)
{
	uint64_t at = sled + 32; /* the sled is 32 bytes */
	if (at < lo || at + 4 > hi)
		return 0;
	uint32_t op = word_at((const void *)at, 0);
	if ((op & 0xfc000000u) != 0x14000000u) /* b imm26 */
		return 0;
	int64_t imm = (int32_t)((op & 0x03ffffffu) << 6) >> 6; /* sign-extended word offset */
	return at + (uint64_t)(imm * 4);
}

int sf_arch_exit_is_tail(uint64_t sled, uint64_t lo, uint64_t hi)
{
	uint64_t at = sled + 32;
	if (at < lo || at + 4 > hi)
		return 0;
	uint32_t op = word_at((const void *)at, 0);
	return (op & 0xfc000000u) == 0x14000000u || /* b imm26 */
	       (op & 0xfffffc1fu) == 0xd61f0000u;   /* br xN */
}

/* Back to the unpatched form: the first word only (`b #32`, one atomic
 * store); the rest keeps our patch, so a thread stopped inside the sled
 * still reaches the trampoline and returns past it. */
void sf_arch_unpatch_sled(const struct xray_sled_rt *s, const uint64_t target[SF_STUB_COUNT],
			  struct sf_text_writer *w, struct sf_patch_result *res)
{
	(void)target;
	char *p = (char *)s->address;
	if (word_at(p, 0) != OP_STP || word_at(p, 1) != OP_LDR_LIT) {
		res->skipped++;
		return;
	}
	uint32_t b = OP_B32;
	sf_text_put(w, p, &b, 4);
	__builtin___clear_cache(p, p + 4);
	if (!w->failed)
		res->patched++;
}

/* The variant of a patched entry sled at fn, from the trampoline its
 * literal names. -1 if fn does not start with a patched sled. */
int sf_patch_entry_variant(uint64_t fn)
{
	const char *p = (const char *)fn;
	if (!p || word_at(p, 0) != OP_STP || word_at(p, 1) != OP_LDR_LIT)
		return -1;
	uint64_t to;
	memcpy(&to, p + 20, 8);
	return sf_patch_variant_of(to);
}

/* The reference tool's setup slots are x86-64 code (its setup crate is
 * Rust, which has no aarch64 target here): slots are left alone; sleds are
 * patched to our trampolines at start anyway. */
void sf_arch_point_slot(void (*slot)(void), void (*target)(void))
{
}
