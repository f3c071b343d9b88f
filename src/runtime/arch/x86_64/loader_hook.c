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
	if (!why && mprotect((void *)page, len, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
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

static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

/* A function shorter than the absolute jump (glibc's posix_spawn is 16
 * bytes): its endbr64 if it has one, then `jmp rel32` to `to`, or to a
 * page near it that jumps on (far_jump_near). */
static const char *redirect_short(unsigned char *fn, size_t size, uint64_t to)
{
	size_t at = size >= 4 && !memcmp(fn, endbr64, 4) ? 4 : 0;
	if (size < at + 5)
		return "the function is shorter than the jump";
	uint64_t next = (uint64_t)fn + at + 5;
	if (rel32(next, to) != (int32_t)rel32(next, to))
		to = far_jump_near((uint64_t)fn, to);
	if (!to || rel32(next, to) != (int32_t)rel32(next, to))
		return "no room for a jump near the function";
	unsigned char code[5] = {0xe9};
	int32_t d32 = (int32_t)rel32(next, to);
	memcpy(code + 1, &d32, 4);
	return sf_text_replace(fn + at, code, sizeof(code));
}

/* endbr64; jmp *0(%rip); .quad to: 18 bytes, any distance. */
const char *sf_arch_redirect(void *fn, size_t size, uint64_t to)
{
	unsigned char code[18] = {0xf3, 0x0f, 0x1e, 0xfa, 0xff, 0x25, 0, 0, 0, 0};
	memcpy(code + 10, &to, 8);
	if (size < sizeof(code))
		return redirect_short(fn, size, to);
	return sf_text_replace(fn, code, sizeof(code));
}

/* glibc's forwarders, such as posix_spawn (`return __spawni(pid, path,
 * acts, attr, argv, envp, 0)`): [endbr64] sub $N,%rsp; push $FLAG; call
 * rel32; add $M,%rsp; ret, or the same in a frame (push %rbp; mov
 * %rsp,%rbp ... leave or pop %rbp: glibc built with frame pointers). Any
 * other instruction, a second push of a constant or a second call: not
 * one (0). */
uint64_t sf_arch_forward_target(const void *fn, size_t size, long *flag)
{
	const unsigned char *c = fn, *end = c + size;
	uint64_t target = 0;
	int pushes = 0;
	if (size >= 4 && !memcmp(c, endbr64, 4))
		c += 4;
	while (c < end) {
		if (end - c >= 4 && c[0] == 0x48 && c[1] == 0x83 && (c[2] == 0xec || c[2] == 0xc4)) {
			c += 4; /* sub/add $imm8, %rsp */
		} else if (end - c >= 7 && c[0] == 0x48 && c[1] == 0x81 && (c[2] == 0xec || c[2] == 0xc4)) {
			c += 7; /* sub/add $imm32, %rsp */
		} else if (c[0] == 0x55 || c[0] == 0x5d || c[0] == 0xc9) {
			c += 1; /* push %rbp, pop %rbp, leave */
		} else if (end - c >= 3 && c[0] == 0x48 && c[1] == 0x89 && c[2] == 0xe5) {
			c += 3; /* mov %rsp, %rbp */
		} else if (end - c >= 2 && c[0] == 0x6a) {
			*flag = (signed char)c[1];
			pushes++;
			c += 2;
		} else if (end - c >= 5 && c[0] == 0xe8 && !target) {
			int32_t d;
			memcpy(&d, c + 1, 4);
			target = (uint64_t)(c + 5) + (uint64_t)(int64_t)d;
			c += 5;
		} else if (c[0] == 0xc3) {
			return pushes == 1 ? target : 0;
		} else {
			return 0;
		}
	}
	return 0;
}
