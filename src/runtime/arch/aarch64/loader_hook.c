/* The loader's debugger hook on aarch64 (loader_hook.c says why).
 *
 * _dl_debug_state is a lone `ret`, with the next function right after it.
 * The `ret` becomes `b sf_loader_entry` with one 32-bit store; when the
 * runtime is mapped beyond the branch's +-128 MiB, it branches to a page
 * near the loader holding `ldr x16, #8; br x16; .quad entry` (x16 is a
 * scratch register across calls in the AAPCS64). sf_loader_entry returns
 * to the loader through x30, as the `ret` would have.
 */
#include <string.h>
#include <sys/mman.h>

#include "runtime/runtime.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define OP_RET 0xd65f03c0u
#define OP_BRK0 0xd4200000u /* brk #0: a debugger's breakpoint */
#define OP_LDR_X16_8 0x58000050u /* ldr x16, #8 */
#define OP_BR_X16 0xd61f0200u
#define OP_BTI_C 0xd503245fu /* a hint (no-op) where BTI is not on */
#define REACH (1ll << 27)

static int reaches(uint64_t from, uint64_t to)
{
	int64_t d = (int64_t)(to - from);
	return d > -REACH && d < REACH;
}

static uint64_t far_branch_near(uint64_t near, uint64_t to)
{
	for (uint64_t step = 1; step < 64; step++) {
		for (int side = 0; side < 2; side++) {
			uint64_t want = (near & ~(SF_PAGE - 1)) + (side ? step : -step) * (1ull << 20);
			void *p = mmap((void *)want, SF_PAGE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)p != want) {
				munmap(p, SF_PAGE);
				continue;
			}
			uint32_t code[4] = {OP_LDR_X16_8, OP_BR_X16};
			memcpy(&code[2], &to, 8);
			memcpy(p, code, sizeof(code));
			__builtin___clear_cache((char *)p, (char *)p + sizeof(code));
			if (mprotect(p, SF_PAGE, PROT_READ | PROT_EXEC) < 0) {
				munmap(p, SF_PAGE);
				return 0;
			}
			return want;
		}
	}
	return 0;
}

const char *sf_arch_hook_loader(void *hook, uint64_t entry)
{
	uint32_t *code = hook;
	if (!code)
		return "the loader publishes no debugger hook (_r_debug.r_brk)";
	if ((*code & 0xffe0001fu) == OP_BRK0)
		return "a debugger's breakpoint sits on the loader's hook";
	if (*code != OP_RET)
		return "the loader's hook is not the expected one-instruction function";
	uint64_t target = entry;
	if (!reaches((uint64_t)code, target)) {
		target = far_branch_near((uint64_t)code, target);
		if (!target || !reaches((uint64_t)code, target))
			return "no room for a branch near the loader";
	}
	uint64_t page = (uint64_t)code & ~(SF_PAGE - 1);
	if (mprotect((void *)page, SF_PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
		return "the loader's code cannot be made writable";
	uint32_t b = 0x14000000u | (uint32_t)(((int64_t)(target - (uint64_t)code) >> 2) & 0x3ffffff);
	__atomic_store_n(code, b, __ATOMIC_RELEASE);
	__builtin___clear_cache((char *)code, (char *)(code + 1));
	if (mprotect((void *)page, SF_PAGE, PROT_READ | PROT_EXEC) < 0)
		sf_rt_message("the loader's code page stays writable: ", "mprotect failed", NULL);
	return NULL;
}

/* A function shorter than the absolute jump (glibc's posix_spawn is 8
 * bytes): its `bti c` if it has one, then `b` to `to`, or to a page near
 * it that branches on (far_branch_near). */
static const char *redirect_short(uint32_t *fn, size_t size, uint64_t to)
{
	size_t at = size >= 4 && fn[0] == OP_BTI_C ? 1 : 0;
	if (size < (at + 1) * 4)
		return "the function is shorter than the jump";
	uint64_t pc = (uint64_t)&fn[at];
	if (!reaches(pc, to))
		to = far_branch_near(pc, to);
	if (!to || !reaches(pc, to))
		return "no room for a branch near the function";
	uint32_t b = 0x14000000u | (uint32_t)(((int64_t)(to - pc) >> 2) & 0x3ffffff);
	return sf_text_replace(&fn[at], &b, sizeof(b));
}

/* bti c; ldr x16, #8; br x16; .quad to: 20 bytes, any distance (x16 is
 * the call's scratch register, and the one a `bti c` target accepts). */
const char *sf_arch_redirect(void *fn, size_t size, uint64_t to)
{
	uint32_t code[5] = {OP_BTI_C, OP_LDR_X16_8, OP_BR_X16};
	memcpy(&code[3], &to, 8);
	if (size < sizeof(code))
		return redirect_short(fn, size, to);
	return sf_text_replace(fn, code, sizeof(code));
}

#define OP_NOP 0xd503201fu
#define OP_B 0x14000000u
#define OP_MOV_W6 0x52800006u /* movz w6, #imm16 */

/* The target of `b` at pc. */
static uint64_t b_target(uint64_t pc, uint32_t op)
{
	int64_t imm = (int64_t)((uint64_t)(op & 0x3ffffffu) << 38) >> 36; /* imm26 * 4, signed */
	return pc + (uint64_t)imm;
}

#define OP_BL 0x94000000u
#define OP_PACIASP 0xd503233fu
#define OP_AUTIASP 0xd50323bfu
#define OP_STP_FP_LR 0xa9bf7bfdu /* stp x29, x30, [sp, #-16]! */
#define OP_MOV_FP_SP 0x910003fdu /* mov x29, sp */
#define OP_LDP_FP_LR 0xa8c17bfdu /* ldp x29, x30, [sp], #16 */

/* glibc's forwarders, such as posix_spawn (`return __spawni(pid, path,
 * acts, attr, argv, envp, 0)`): [bti c] mov w6, #FLAG; b target (its
 * padding nops after), or the same as a call in a frame ([paciasp] stp
 * x29, x30; mov x29, sp; mov w6; bl; ldp x29, x30; [autiasp] ret: glibc
 * built with frame pointers). Anything else: not one (0). */
uint64_t sf_arch_forward_target(const void *fn, size_t size, long *flag)
{
	static const uint32_t frame_ops[] = {OP_BTI_C, OP_PACIASP, OP_AUTIASP, OP_STP_FP_LR, OP_MOV_FP_SP, OP_LDP_FP_LR};
	const uint32_t *c = fn;
	uint64_t target = 0;
	int movs = 0;
	for (size_t i = 0; i < size / 4; i++) {
		uint32_t op = c[i];
		int frame = 0;
		for (size_t k = 0; k < sizeof(frame_ops) / sizeof(frame_ops[0]); k++)
			frame |= op == frame_ops[k];
		if (frame)
			continue;
		if ((op & 0xffe0001fu) == OP_MOV_W6) {
			*flag = (long)((op >> 5) & 0xffff);
			movs++;
		} else if (((op & 0xfc000000u) == OP_B || (op & 0xfc000000u) == OP_BL) && !target) {
			target = b_target((uint64_t)&c[i], op);
			if ((op & 0xfc000000u) == OP_B) /* a tail call: the end */
				return movs == 1 ? target : 0;
		} else if (op == OP_RET) {
			return movs == 1 ? target : 0;
		} else {
			return 0;
		}
	}
	return 0;
}
