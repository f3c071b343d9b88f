/* Whether x86-64 code proves a load from a stack argument (lib/x86_reads.h):
 * the bytes clang -O2 made of skeptic 29m's after (reads its struct at
 * 8(%rsp)) and after2 (does not), a prologue that moves rsp, an rbp frame,
 * and what must not count as a proof: a store, a load through an index,
 * a load after a call or an unconditional jump, an unknown instruction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/x86_reads.h"

#define SLED 0xeb, 0x09, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x02, 0x00, 0x00

static int reads(const uint8_t *code, size_t len, int64_t lo, int64_t hi)
{
	return x86_reads_stack_arg(code, len, lo, hi);
}

static void test_clang_after_and_after2(void **state)
{
	(void)state;
	/* mov %rdi,%rax; add 0x8(%rsp),%rax; add 0x10(%rsp),%rax; ret */
	static const uint8_t after[] = {SLED, 0x48, 0x89, 0xf8, 0x48, 0x03, 0x44, 0x24, 0x08,
					0x48, 0x03, 0x44, 0x24, 0x10, 0xc3};
	/* lea (%rdi,%r9,1),%rax; nop; ret */
	static const uint8_t after2[] = {SLED, 0x4a, 0x8d, 0x04, 0x0f, 0x90, 0xc3};
	assert_int_equal(reads(after, sizeof(after), 0, 16), 1);
	assert_int_equal(reads(after, sizeof(after), 8, 16), 1);
	assert_int_equal(reads(after, sizeof(after), 16, 32), 0); /* past what it reads */
	assert_int_equal(reads(after2, sizeof(after2), 0, 16), 0);
}

static void test_prologue_and_frame(void **state)
{
	(void)state;
	/* push %rbx; sub $0x10,%rsp; movsd 0x20(%rsp),%xmm0 (arg 0 at 8 + 8 +
	 * 16 above the new rsp); ret */
	static const uint8_t sub[] = {SLED, 0x53, 0x48, 0x83, 0xec, 0x10, 0xf2, 0x0f, 0x10, 0x44, 0x24, 0x20, 0xc3};
	assert_int_equal(reads(sub, sizeof(sub), 0, 8), 1);
	/* push %rbp; mov %rsp,%rbp; mov 0x18(%rbp),%eax (arg 8); pop %rbp; ret */
	static const uint8_t bp[] = {SLED, 0x55, 0x48, 0x89, 0xe5, 0x8b, 0x45, 0x18, 0x5d, 0xc3};
	assert_int_equal(reads(bp, sizeof(bp), 8, 16), 1);
	assert_int_equal(reads(bp, sizeof(bp), 0, 8), 0);
	/* test %edi,%edi; je +2; paddq 0x8(%rsp),%xmm0: the fall-through */
	static const uint8_t jcc[] = {SLED, 0x85, 0xff, 0x74, 0x02, 0x66, 0x0f, 0xd4, 0x44, 0x24, 0x08, 0xc3};
	assert_int_equal(reads(jcc, sizeof(jcc), 0, 8), 1);
	/* the stack protector's mov %fs:0x28,%rax; mov %rax,(%rsp) after sub
	 * $0x18,%rsp; then mov 0x20(%rsp),%rcx (arg 0) */
	static const uint8_t ssp[] = {SLED, 0x48, 0x83, 0xec, 0x18, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0,
				      0x48, 0x89, 0x04, 0x24, 0x48, 0x8b, 0x4c, 0x24, 0x20, 0xc3};
	assert_int_equal(reads(ssp, sizeof(ssp), 0, 8), 1);
}

static void test_no_proof(void **state)
{
	(void)state;
	/* mov %rax,0x8(%rsp): a store */
	static const uint8_t store[] = {SLED, 0x48, 0x89, 0x44, 0x24, 0x08, 0xc3};
	assert_int_equal(reads(store, sizeof(store), 0, 8), 0);
	/* mov 0x8(%rsp,%rcx,8),%rax: an index */
	static const uint8_t idx[] = {SLED, 0x48, 0x8b, 0x44, 0xcc, 0x08, 0xc3};
	assert_int_equal(reads(idx, sizeof(idx), 0, 8), 0);
	/* call; mov 0x8(%rsp),%rax: after a call that may not return */
	static const uint8_t call[] = {SLED, 0xe8, 0, 0, 0, 0, 0x48, 0x8b, 0x44, 0x24, 0x08, 0xc3};
	assert_int_equal(reads(call, sizeof(call), 0, 8), 0);
	/* jmp +0; mov 0x8(%rsp),%rax */
	static const uint8_t jmp[] = {SLED, 0xeb, 0x00, 0x48, 0x8b, 0x44, 0x24, 0x08, 0xc3};
	assert_int_equal(reads(jmp, sizeof(jmp), 0, 8), 0);
	/* and $-16,%rsp: rsp no longer known */
	static const uint8_t align[] = {SLED, 0x48, 0x83, 0xe4, 0xf0, 0x48, 0x8b, 0x44, 0x24, 0x08, 0xc3};
	assert_int_equal(reads(align, sizeof(align), 0, 64), 0);
	/* add $0x1,%ah (0x80 /0 on r/m 4 without REX): not rsp, walk stops */
	static const uint8_t ah[] = {SLED, 0x80, 0xc4, 0x01, 0x48, 0x8b, 0x44, 0x24, 0x08, 0xc3};
	assert_int_equal(reads(ah, sizeof(ah), 0, 8), 0);
	/* sub $0x10,%esp (no REX.W: esp, zero-extended) */
	static const uint8_t esp[] = {SLED, 0x83, 0xec, 0x10, 0x48, 0x8b, 0x44, 0x24, 0x18, 0xc3};
	assert_int_equal(reads(esp, sizeof(esp), 0, 8), 0);
	/* mov %fs:0x8,%rax: not the stack */
	static const uint8_t fs[] = {SLED, 0x64, 0x48, 0x8b, 0x44, 0x24, 0x08, 0xc3};
	assert_int_equal(reads(fs, sizeof(fs), 0, 8), 0);
	/* cut short: the load's displacement missing */
	static const uint8_t cut[] = {SLED, 0x48, 0x8b, 0x44, 0x24};
	assert_int_equal(reads(cut, sizeof(cut), 0, 8), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clang_after_and_after2),
		cmocka_unit_test(test_prologue_and_frame),
		cmocka_unit_test(test_no_proof),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
