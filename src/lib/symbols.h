/* Symbolization of one ELF object (executable or shared library) for the
 * commands that show function names: names from the ELF symbol table
 * (demangled), source file:line from DWARF, with separate debug files found
 * through .gnu_debuglink and build-id paths (elfutils libdwfl). */
#ifndef SFTRACE_LIB_SYMBOLS_H
#define SFTRACE_LIB_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct sym_object;

struct sym_info {
	/* Demangled if mangled, else the symbol. Never NULL: without a symbol
	 * it is "<object-basename>+0x<vaddr>". */
	const char *name;
	const char *mangled; /* the raw symbol, or NULL when there is none */
	/* Source file of the function's definition (DW_AT_decl_file of its
	 * DW_TAG_subprogram, else the line table at the address), or NULL. */
	const char *file;
	uint32_t line;       /* 0 when unknown */
};

/* Opens the object at `path`, or at `symbol_path` when not NULL (a moved
 * binary or a separate debug file; the placeholder names still use the
 * basename of `path`). When expected_build_id is given (build_id_len > 0)
 * and differs from the file's build-id, fails with an error naming both ids
 * and the path, unless `force`. When the object has no symbols or DWARF,
 * looks for separate debug info: the .gnu_debuglink name in the object's
 * directory, its .debug/ subdirectory and /usr/lib/debug, and
 * /usr/lib/debug/.build-id/xx/yyyy.debug.
 * Returns NULL with a one-line message in err on failure. */
struct sym_object *sym_open(const char *path, const char *symbol_path,
			    const uint8_t *expected_build_id, size_t build_id_len,
			    int force, char *err, size_t errlen);

/* The function at ELF virtual address `vaddr` (as `nm` shows it, not a
 * runtime address): the symbol starting exactly there, else the function
 * symbol containing it. Among aliases (several symbols at one address, as
 * identical code folding makes), a name mentioning the user's own crate or
 * namespace rather than only std/core/alloc, else the best bound (global,
 * then weak, then local), then the shortest. Never NULL. Results are cached per address and stay
 * valid until sym_close. */
const struct sym_info *sym_lookup(struct sym_object *obj, uint64_t vaddr);

/* The identity of the function whose code holds ELF address vaddr, for
 * telling whether two addresses lie in one function: its symbol's name
 * (sym_info.mangled of sym_lookup), else, where no symbol covers it (a
 * stripped binary), its extent in .eh_frame_hdr's table, which strip
 * keeps; NULL when neither. Valid until sym_close. */
const void *sym_func_key(struct sym_object *obj, uint64_t vaddr);

/* The source line of the instruction at ELF address `vaddr` (addr2line:
 * the line table's row, of the innermost inlined function): *file as the
 * line table names it (owned by libdw, valid until sym_close) and *line.
 * 1, or 0 when the object has no line for it. */
int sym_source_line(struct sym_object *obj, uint64_t vaddr, const char **file, uint32_t *line);

/* sym_source_line, with inlined frames folded: while the innermost inlined
 * function at vaddr (DWARF's inline chain) is one skip() names (its
 * demangled full name), the line is that function's call site in the
 * frame around it, up to the concrete function. skip NULL: folds none. */
int sym_source_line_folded(struct sym_object *obj, uint64_t vaddr, int (*skip)(void *ctx, const char *name),
			   void *ctx, const char **file, uint32_t *line);

/* An inlined function's instance at an address (DWARF's
 * DW_TAG_inlined_subroutine): the function the line lies in when it is not
 * the concrete function's own code. Interned per object (one per DIE),
 * valid until sym_close. */
struct sym_inline {
	const char *name;       /* demangled full name */
	const char *short_name; /* its short style (sf_short_name) */
	const char *call_file;  /* where it was inlined: the call in the frame around it */
	uint32_t call_line;     /* (DW_AT_call_file, DW_AT_call_line); NULL and 0 when unknown */
	const struct sym_inline *outer; /* the inlined frame around it; NULL: the concrete function */
};

/* sym_source_line_folded that also names the frame the line lies in: *inl
 * the innermost inlined function left after folding (skip NULL: none
 * folded, yet the chain is walked), or NULL when the line is the concrete
 * function's own code. */
int sym_source_line_inl(struct sym_object *obj, uint64_t vaddr, int (*skip)(void *ctx, const char *name), void *ctx,
			const char **file, uint32_t *line, const struct sym_inline **inl);

/* Whether two inlined frames (or NULLs) are one function inlined at the
 * same calls, all the way out to the concrete function. */
int sym_inline_same_calls(const struct sym_inline *a, const struct sym_inline *b);

/* The object's DWARF, from the file itself or the separate debug file
 * sym_open's search finds (NULL: none), owned by the object; *shift is
 * what to add to a DWARF address for the ELF address. */
typedef struct Dwarf Dwarf;
Dwarf *sym_dwarf(struct sym_object *obj, int64_t *shift);

/* The build-id of the file that was opened (0 bytes when it has none). */
size_t sym_build_id(const struct sym_object *obj, const uint8_t **id);

/* Whether the object (or its separate debug file) has DWARF: without it
 * no function has a source line. */
int sym_has_dwarf(struct sym_object *o);

/* The definition's file:line (DW_AT_decl_file/decl_line of its
 * subprogram DIE, found by name) of the function whose symbol is `symbol`:
 * a folded function's alias has its own, though its address is another
 * alias's. 1 with *file and *line, else 0. */
int sym_named_source(struct sym_object *o, const char *symbol, const char **file, uint32_t *line);

/* Calls cb for every function symbol (aliases included), in address order.
 * `demangled` is the demangled name, or the symbol itself when it is not
 * mangled. A non-zero return from cb stops the walk and is returned. */
int sym_foreach_function(struct sym_object *obj,
			 int (*cb)(void *ctx, uint64_t vaddr, const char *mangled,
				   const char *demangled),
			 void *ctx);

/* The other names of the function starting exactly at `vaddr` (identical
 * code folding, aliases), not the one sym_lookup gives: cb (may be NULL)
 * for each, in preference order. Returns how many there are. */
size_t sym_aliases(struct sym_object *obj, uint64_t vaddr,
		   void (*cb)(void *ctx, const char *mangled, const char *demangled), void *ctx);

/* The function called by the call instruction that returns to ELF address
 * `ret` (x86-64: `call rel32` or `call *GOT(%rip)`): 1 with *target its ELF
 * address in this object; 2 with *name the symbol the GOT slot binds (a
 * call through the PLT or the GOT: another object's function, or an
 * interposable one; owned by libelf, valid until sym_close); 0 when the
 * instruction is none of these (an indirect call), the code cannot be
 * read, or the object is not x86-64 code. */
int sym_call_target(struct sym_object *obj, uint64_t ret, uint64_t *target, const char **name);

/* 1 when the instruction that ends at ELF address `ret` reads as an
 * indirect call through a register or memory other than a GOT slot
 * (x86-64 `call *%reg`, `call *disp(%reg)`: ff /2), whose callee the code
 * does not tell; else 0. */
int sym_indirect_call(struct sym_object *obj, uint64_t ret);

/* The calls in the function starting at ELF address fvaddr whose callee
 * sym_call_target cannot name: calls through a register or memory
 * (`call *%rbx`) with target 0, and calls through a GOT slot that names no
 * symbol (an R_X86_64_RELATIVE slot: this object's function at target).
 * cb(ctx, return address, target); returns how many. Byte patterns, not
 * a disassembly: one inside another instruction can be reported. */
size_t sym_opaque_calls(struct sym_object *obj, uint64_t fvaddr, void (*cb)(void *ctx, uint64_t ret, uint64_t target),
			void *ctx);

/* The calls in the function starting at ELF address fvaddr (its symbol's
 * size), each decoded as sym_call_target: cb(ctx, return address, kind
 * (1: a direct call of target, a function of this object; 2: through the
 * PLT or the GOT, name the symbol bound), target, name). The bytes are
 * scanned for the call opcodes, not disassembled. x86-64 only. Returns
 * how many. */
size_t sym_calls(struct sym_object *obj, uint64_t fvaddr,
		 void (*cb)(void *ctx, uint64_t ret, int kind, uint64_t target, const char *name), void *ctx);

/* The calls through the PLT or the GOT in the function starting at ELF
 * address fvaddr (its symbol's size), each decoded as sym_call_target:
 * cb(ctx, return address, the symbol bound). The function's bytes are
 * scanned for the two call opcodes, not disassembled: a match must also
 * land on a PLT stub or a GOT slot with a dynamic relocation. x86-64 only.
 * Returns how many. */
size_t sym_plt_calls(struct sym_object *obj, uint64_t fvaddr, void (*cb)(void *ctx, uint64_t ret, const char *name),
		     void *ctx);

/* The targets of the function's tail calls (the `jmp` right after each of
 * its XRay tail-call sleds) in the function starting at ELF address
 * fvaddr (its extent: its symbol's size, else its FDE's): up to max, each either vaddr (in this object) or name (through
 * the PLT or the GOT, as sym_call_target). Indirect jumps are left out;
 * *undecoded (may be NULL) is set to 1 when the function has such a tail
 * jump, or more than max, so the list may miss targets. Returns how many. */
struct sym_target {
	uint64_t vaddr;
	const char *name;
	uint64_t at;       /* the jmp's own ELF address */
};
size_t sym_tail_targets(struct sym_object *obj, uint64_t fvaddr, struct sym_target *out, size_t max,
			int *undecoded);

void sym_close(struct sym_object *obj);

#endif
