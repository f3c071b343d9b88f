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
	size_t len = SF_PAGE;
	if (sf_text_make_writable(&page, &len) < 0)
		return "the loader's code cannot be made writable";
	uint32_t b = 0x14000000u | (uint32_t)(((int64_t)(target - (uint64_t)code) >> 2) & 0x3ffffff);
	__atomic_store_n(code, b, __ATOMIC_RELEASE);
	__builtin___clear_cache((char *)code, (char *)(code + 1));
	if (mprotect((void *)page, len, PROT_READ | PROT_EXEC) < 0)
		sf_rt_message("the loader's code page stays writable: ", "mprotect failed", NULL);
	return NULL;
}
