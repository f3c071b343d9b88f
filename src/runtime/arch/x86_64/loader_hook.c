/* The loader's debugger hook on x86-64 (loader_hook.c says why).
 *
 * _dl_debug_state is one `ret` followed by alignment padding. The padding
 * after it gets `jmp sf_loader_entry` (bytes 1..5, never executed before);
 * then the `ret` becomes a `nop` with a one-byte store, so a thread sees
 * either the old or the new code. Byte 0 stays where a debugger puts its
 * breakpoint: gdb attached later still stops there and steps through our
 * nop. (If a debugger's breakpoint is already there, we leave the hook out
 * and say so: stepping over it would restore the `ret`.)
 */
#include <string.h>
#include <sys/mman.h>

#include "runtime/runtime.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE SF_PAGE

static int64_t rel32(uint64_t from_next, uint64_t to)
{
	return (int64_t)(to - from_next);
}

/* A page within rel32 reach of `near` holding `jmp *0(%rip); .quad to`,
 * for when this library is mapped more than 2 GiB from the loader. */
static uint64_t far_jump_near(uint64_t near, uint64_t to)
{
	for (uint64_t step = 1; step < 1024; step++) {
		for (int side = 0; side < 2; side++) {
			uint64_t want = (near & ~(PAGE - 1)) + (side ? step : -step) * (1ull << 20);
			void *p = mmap((void *)want, PAGE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)p != want) {
				munmap(p, PAGE);
				continue;
			}
			unsigned char *s = p;
			static const unsigned char jmp_ind[6] = {0xff, 0x25, 0, 0, 0, 0};
			memcpy(s, jmp_ind, sizeof(jmp_ind));
			memcpy(s + 6, &to, 8);
			if (mprotect(p, PAGE, PROT_READ | PROT_EXEC) < 0) {
				munmap(p, PAGE);
				return 0;
			}
			return want;
		}
	}
	return 0;
}

const char *sf_arch_hook_loader(void *hook, uint64_t entry)
{
	unsigned char *code = hook;
	const char *why = NULL;
	if (!code)
		why = "the loader publishes no debugger hook (_r_debug.r_brk)";
	else if (code[0] == 0xcc)
		why = "a debugger's breakpoint sits on the loader's hook";
	else if (code[0] != 0xc3)
		why = "the loader's hook is not the expected one-byte function";
	else {
		for (int i = 1; i < 6 && !why; i++)
			if (code[i] != 0x90 && code[i] != 0x66 && code[i] != 0x2e && code[i] != 0x0f &&
			    code[i] != 0x1f && code[i] != 0x84 && code[i] != 0x00 && code[i] != 0xcc &&
			    code[i] != 0x40 && code[i] != 0x44)
				why = "the loader's hook has no padding after it";
	}
	uint64_t target = entry;
	uint64_t next = (uint64_t)code + 6;
	if (!why) {
		int64_t d = rel32(next, target);
		if (d != (int32_t)d) {
			target = far_jump_near((uint64_t)code, target);
			d = target ? rel32(next, target) : 0;
			if (!target || d != (int32_t)d)
				why = "no room for a jump near the loader";
		}
	}
	uint64_t page = (uint64_t)code & ~(PAGE - 1);
	size_t len = ((uint64_t)code + 6 > page + PAGE) ? 2 * PAGE : PAGE;
	if (!why && sf_text_make_writable(&page, &len) < 0)
		why = "the loader's code cannot be made writable";
	if (why)
		return why;
	int32_t d32 = (int32_t)rel32(next, target);
	code[1] = 0xe9;
	memcpy(code + 2, &d32, 4);
	__atomic_store_n(code, (unsigned char)0x90, __ATOMIC_RELEASE);
	if (mprotect((void *)page, len, PROT_READ | PROT_EXEC) < 0)
		sf_rt_message("the loader's code page stays writable: ", "mprotect failed", NULL);
	return NULL;
}
