/* Whether an x86-64 function's code proves that it reads a stack argument
 * (record --auto-args, dwarf_args.c). DWARF gives a struct passed in
 * memory the location DW_OP_fbreg whether the function uses it or not,
 * and when it does not, clang -O2 lets the caller leave the stack slot
 * unset (skeptic 29m's after2): only a load from the slot in the
 * function's own code shows that the caller stored a value there.
 *
 * The walk follows the straight line from the entry (past XRay's entry
 * sled, through conditional branches' fall-through) with the
 * stack pointer's offset from the entry's, and rbp's once `mov %rsp,%rbp`
 * sets it, and stops at the first instruction it does not decode, an
 * unconditional jump, a call, a return or after 64 instructions. Only
 * instructions whose memory operand is certainly read count (a store
 * does not). So a 1 is a proof; a 0 says nothing (a read after a jump,
 * an unknown instruction): the caller then does not show the value. */
#ifndef SFTRACE_LIB_X86_READS_H
#define SFTRACE_LIB_X86_READS_H

#include <stddef.h>
#include <stdint.h>

/* 1 if code (the function's bytes from its entry, len of them) loads a
 * byte at [lo, hi) of the stack arguments, offsets from the first one
 * (8 above the stack pointer at the entry, past the return address);
 * else 0. */
int x86_reads_stack_arg(const uint8_t *code, size_t len, int64_t lo, int64_t hi);

#endif
