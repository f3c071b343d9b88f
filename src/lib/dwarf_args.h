/* record --auto-args: what a function's DWARF prototype says its arguments
 * and return value are, as the items of format/sf_args.h (x86-64 System V:
 * integer-class values in rdi rsi rdx rcx r8 r9, float and double ones in
 * xmm0-7, the return value in rax or xmm0, a Rust &str or &[u8] in two
 * integer registers). On x86-64 a struct or union passed by value
 * takes the registers the System V ABI gives it (or none: MEMORY class):
 * in registers, a STRUCT item and its members' items (a C struct of
 * scalars, nested structs and arrays), in memory a STRUCT whose members
 * are read from the stack at the entry (placed in order, whole words;
 * in an optimised function only if its code loads from it, x86_reads.h),
 * else an item of format NONE (not recorded); a C struct returned in
 * registers is a STRUCT too. On
 * aarch64 (AAPCS64) a struct of up to 16 bytes goes in one or two x
 * registers, a homogeneous aggregate of up to four floats or doubles one
 * member per v register, a larger struct by reference (not recorded),
 * and a struct returned in memory through x8 (no argument moves). An aggregate
 * returned in memory moves the arguments one integer register on (its
 * address is in rdi). On x86-64 every parameter gets an item: one
 * past the registers or a long double a NONE item on the stack (the
 * later ones keep their registers), and from the first whose registers
 * are not known for sure (a Rust struct, a C++ class whose DWARF does not
 * say how it is passed) NONE items of unknown place; on aarch64 the items
 * stop there. A parameter without a DWARF location is NONE (optimized
 * out). A function DWARF marks as re-signed (DW_CC_nocall, a parameter
 * constant at the entry, an entry location that is not the ABI's
 * register) and a Rust closure are read from the registers its
 * parameters' entry locations name (constants: NONE, optimized out;
 * a DW_CC_nocall return value of two registers: NONE); an
 * ms_abi one (DW_CC_LLVM_Win64) from rcx rdx r8 r9 / xmm0-3 by position;
 * any other calling convention gets no items. */
#ifndef SFTRACE_LIB_DWARF_ARGS_H
#define SFTRACE_LIB_DWARF_ARGS_H

#include <stddef.h>
#include <stdint.h>

struct da_file;

/* The DWARF of an ELF file: its own, else the separate debug file its
 * .gnu_debuglink or build-id names (symbols.h's search); NULL if it has
 * none (no message). */
struct da_file *da_open(const char *path);
void da_close(struct da_file *d);

/* -gsplit-dwarf: how many skeleton units name a .dwo file that libdw
 * did not find (their functions get no items), and the first one's
 * path (*first, valid until da_close). */
unsigned da_missing_dwo(const struct da_file *d, const char **first);

/* The .dwo files the skeleton units of path's own DWARF name, for a
 * cache key: *digest covers every place libdw looks for each (its path
 * and device, inode, size and modification time, or that it is absent),
 * without reading them. Returns how many skeletons: 0, no split DWARF. */
unsigned da_split_digest(const char *path, uint64_t *digest);

struct da_item {
	uint8_t slot, fmt, on_exit;
};

/* The items of the function at ELF address vaddr (at most cap, and
 * SF_ARG_MAX_ITEMS of the entry's and of the exit's; strings
 * capped at sf_arg_str_cap's 16 bytes, the per-call budget). Returns how
 * many: 0 if the function has no DWARF, or nothing that fits. */
unsigned da_items(struct da_file *d, uint64_t vaddr, struct da_item *items, unsigned cap);

#endif
