/* Function names for every function id of one log: opens each object the log
 * recorded with the symbols module and caches one answer per function id.
 *
 * Which file symbolizes an object: a --symbol override whose build-id equals
 * the recorded one, else an override with the same basename as the recorded
 * path, else the recorded path itself. A build-id mismatch or an object that
 * cannot be opened is an error (ls_open fails, the message names the file
 * and, for a mismatch, both ids) unless `force`: the object then gets
 * placeholder names "<basename>+0x<vaddr>" (or is symbolized despite the
 * mismatch) and a warning is kept; `optional` gives the placeholders and
 * the warning without the forced names. The error ends with the ways out
 * (--symbol, --force, --no-symbols). Ids no object owns get "func#<id>".
 */
#ifndef SFTRACE_LIB_LOG_SYMBOLS_H
#define SFTRACE_LIB_LOG_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "format/sflog.h"
#include "lib/symbols.h"

struct lr_log;
struct log_symbols;

struct ls_options {
	const char *const *symbol_paths; /* --symbol PATH overrides */
	size_t nsymbol_paths;
	int force;      /* mismatched or missing objects are not errors */
	int no_symbols; /* never read ELF files: placeholders only */
	int optional;   /* an object that cannot be read or does not match gets
			 * placeholder names and a warning, never names from a
			 * mismatched file (what force does) */
};

/* opt may be NULL (no overrides, no force). NULL on failure with one line in
 * err. The log must outlive the result. */
struct log_symbols *ls_open(const struct lr_log *log, const struct ls_options *opt, char *err,
			    size_t errlen);

/* Never NULL; the name is never NULL. Valid until ls_close. */
const struct sym_info *ls_lookup(struct log_symbols *ls, uint32_t func_id);

/* The function's other names (identical code folding): cb for each, as
 * sym_aliases. Returns how many. cb NULL: the count alone, which looks no
 * name up (cheap enough for every function of a log). */
size_t ls_aliases(struct log_symbols *ls, uint32_t func_id,
		  void (*cb)(void *ctx, const char *mangled, const char *demangled), void *ctx);

/* Names the function `name` from now on in every lookup, when `name` is
 * one of its names (demangled or raw): a filter chose that alias. Returns
 * 1 when the function goes by `name`, 0 when it has no such name. */
int ls_prefer_name(struct log_symbols *ls, uint32_t func_id, const char *name);

/* cb for each function ls_prefer_name renamed (a function renamed twice:
 * twice), newest first. */
void ls_each_renamed(const struct log_symbols *ls, void (*cb)(void *ctx, uint32_t func_id), void *ctx);

/* The function holding a runtime address (an allocation's call site) in
 * one of the log's objects, with *vaddr its ELF address there; or NULL
 * (another object, or no symbol there). */
const struct sym_info *ls_lookup_addr(struct log_symbols *ls, uint64_t addr, uint64_t *vaddr);

/* The short name (sf_short_name) of a symbol ls_lookup_addr or an
 * untraced object's lookup gave, kept until ls is closed. */
const char *ls_short_of(struct log_symbols *ls, const struct sym_info *si);

/* The source file:line of the call that returns to runtime address `addr`
 * (an allocation's call site): sym_source_line of the byte before it. 1, or
 * 0 when no object's DWARF has it. */
int ls_site_line(struct log_symbols *ls, uint64_t addr, const char **file, uint32_t *line);

/* ls_site_line with inlined frames that skip() names folded into the line
 * of their call (sym_source_line_folded). */
int ls_site_line_folded(struct log_symbols *ls, uint64_t addr, int (*skip)(void *ctx, const char *name), void *ctx,
			const char **file, uint32_t *line);

/* ls_site_line_folded for a call site of function func (UINT32_MAX: none
 * known): among objects loaded at one base (a dlclose'd library and the
 * one loaded at its address later), the one that holds func. */
int ls_site_line_in(struct log_symbols *ls, uint64_t addr, uint32_t func, int (*skip)(void *ctx, const char *name),
		    void *ctx, const char **file, uint32_t *line);
/* ls_site_line_in that also names the inlined function the line lies in
 * (sym_source_line_inl): *inl, or NULL for the function's own code. */
int ls_site_line_inl(struct log_symbols *ls, uint64_t addr, uint32_t func, int (*skip)(void *ctx, const char *name),
		     void *ctx, const char **file, uint32_t *line, const struct sym_inline **inl);

/* The inlined function a line found by the two below lies in (as
 * sym_source_line_inl's): inl, NULL for func's own code; varies: the
 * calls on that line came from different inlined calls of it. */
struct ls_inl {
	const struct sym_inline *inl;
	int varies;
};

/* Where function func calls plumbing in another object: its calls through
 * the PLT or the GOT (sym_plt_calls) of functions skip() names (demangled,
 * as libstdc++'s basic_string::_M_construct), at the line of each call
 * with inlined plumbing folded. 1 with *file and *line when they all lie
 * on one line; 0 when on several; -1 when there is none (or no code to
 * read). */
int ls_plumbing_call_line(struct log_symbols *ls, uint32_t func, int (*skip)(void *ctx, const char *name), void *ctx,
			  const char **file, uint32_t *line, struct ls_inl *inl);

/* Where function func calls function callee (a traced frame above it:
 * folded plumbing such as Rust's RawVec::grow_one): its direct calls of
 * callee, or calls through the PLT or the GOT of callee's symbol, at the
 * line of each call with inlined frames skip() names folded into the line
 * of their call in func (Vec::push inlined into the user's function).
 * When no call names callee, its calls that name nothing (sym_opaque_calls:
 * `call *%rbx`, a GOT slot of this object's own function that is not
 * traced, as Rust's format! reaching __rust_alloc through format_inner)
 * stand for them, at the line in func's own code (every inlined frame
 * folded).
 * 1 with *file and *line when they all lie on one line; 0 when on several;
 * -1 when there is none (or no code to read). */
int ls_call_line(struct log_symbols *ls, uint32_t func, uint32_t callee, int (*skip)(void *ctx, const char *name),
		 void *ctx, const char **file, uint32_t *line, struct ls_inl *inl);

/* Where an allocation's call site (runtime address `site`) lies, for a
 * thread whose innermost frame is a frame of function `caller` that made
 * a tail call of function `tailer` (lib/tail_claim.h's rule):
 *   LS_SITE_CALLS_TAILER  in caller's code, and the call that returns there
 *                         is a call of tailer (tailer ended in `jmp malloc`:
 *                         the allocator returns to caller), or an indirect
 *                         call (unknown callee);
 *   LS_SITE_CALLER_OWN    in caller's code, at a call of another function
 *                         (caller called the allocator itself);
 *   LS_SITE_IN_CALLEE     in the function tailer jumps to (decoded from
 *                         tailer's code: the jmp after its tail-call sled);
 *   LS_SITE_IN_LIBRARY    tailer jumps through the PLT or GOT to another
 *                         object, and the site is in code of an object the
 *                         log did not record (libc's strdup);
 *   LS_SITE_ELSEWHERE     elsewhere;
 *   LS_SITE_UNKNOWN       no object with symbols to tell.
 * A site of 0 (the setup ABI's events have none) is LS_SITE_CALLS_TAILER.
 * Memoized per site. */
enum {
	LS_SITE_ELSEWHERE = 0, LS_SITE_CALLS_TAILER = 1, LS_SITE_CALLER_OWN = 2, LS_SITE_UNKNOWN = 3,
	LS_SITE_IN_CALLEE = 4, LS_SITE_IN_LIBRARY = 5,
};
int ls_tail_site(struct log_symbols *ls, uint64_t site, uint32_t caller, uint32_t tailer);

/* The source line of function func's tail calls (the jmp after each
 * tail-call sled) in func's own code (a jmp in inlined code: the outermost
 * inlined call's line): 1 with *file and *line (as ls_site_line) when they
 * all lie on one line, else 0. */
int ls_tail_line(struct log_symbols *ls, uint32_t func, const char **file, uint32_t *line);

/* The call in function func that a heap event's return-address tag
 * (FORMAT.md: the low 28 bits of a return address) names: 1 with *ret the
 * runtime return address when the tag's address lies in func and follows
 * a direct call or a call through the PLT or the GOT; else 0 (a tag of 0,
 * a stale slot's word, no code to read). */
int ls_tag_call(struct log_symbols *ls, uint32_t func, uint32_t tag, uint64_t *ret);

/* 1 when a heap event's return-address tag names an indirect call in
 * function func (`call *%rax`: sym_indirect_call), whose callee the code
 * does not tell; else 0. */
int ls_tag_indirect_call(struct log_symbols *ls, uint32_t func, uint32_t tag);

/* 1 when the call that returns to runtime address `site` (an allocation's
 * call site) lies in function func's code; 0 when elsewhere or unknown. */
int ls_site_in_func(struct log_symbols *ls, uint64_t site, uint32_t func);

/* 1 when function `func` is one that `tailer`'s code jumps to in a tail
 * call (decoded as for LS_SITE_IN_CALLEE): a traced tail callee. */
int ls_is_tail_target(struct log_symbols *ls, uint32_t tailer, uint32_t func);

/* Where a tail call's event says its jump went. */
enum ls_tail_jump {
	LS_TAIL_UNKNOWN = 0,   /* a log without SF_FEAT_TAIL_TARGET: any of tailer's tail calls */
	LS_TAIL_TO_ENTRY = 1,  /* kind 15: a direct jump to a patched entry of tailer's object */
	LS_TAIL_ELSEWHERE = 2, /* kind 3 in a log with SF_FEAT_TAIL_TARGET: through the PLT or GOT,
				* an indirect jump, or a function that does not record */
};
static inline enum ls_tail_jump ls_tail_jump_of(uint64_t log_features, int tail_entry)
{
	if (!(log_features & SF_FEAT_TAIL_TARGET))
		return LS_TAIL_UNKNOWN;
	return tail_entry ? LS_TAIL_TO_ENTRY : LS_TAIL_ELSEWHERE;
}

/* ls_is_tail_target, told where the jump went: the frame that begins next
 * at the tail caller's depth is its callee only if a jump of that class in
 * tailer's code goes to func: a direct one for LS_TAIL_TO_ENTRY; for
 * LS_TAIL_ELSEWHERE, which does not say which jump fired, only when func
 * is the one name tailer's jumps that may log kind 3 go to (all decoded,
 * all through the PLT or GOT, direct ones all kind 15). */
int ls_is_tail_callee(struct log_symbols *ls, uint32_t tailer, uint32_t func, enum ls_tail_jump how);

/* The file that symbolizes the object of function func_id when it has no
 * DWARF (no source line for any of its functions), else NULL. */
const char *ls_object_without_dwarf(struct log_symbols *ls, uint32_t func_id);

/* The file that symbolizes object i (lr_object_at order), or NULL when its
 * names are placeholders. */
const char *ls_object_file(const struct log_symbols *ls, size_t i);

/* Whether --symbol override i was used by some object of this log (a caller
 * with several logs can warn about an override no log used). */
int ls_override_used(const struct log_symbols *ls, size_t i);

/* Warnings from ls_open under force, one line each. */
size_t ls_nwarnings(const struct log_symbols *ls);
const char *ls_warning(const struct log_symbols *ls, size_t i);

/* An allocation's call site (runtime return address) in an object the log
 * names without functions (SF_OBJ_UNTRACED: an uninstrumented executable,
 * libc): its file (path), whether it is the executable (main), the ELF
 * address (vaddr: the key that holds across runs), and from its own
 * symbols, when its file is there and the same build, the function
 * holding the call (func, or NULL) and the call's file:line (file, or
 * NULL). */
struct ls_untraced_site {
	const char *path;
	int main;
	uint64_t vaddr;
	const char *func;
	const char *func_short; /* func in the short style (demangle.h sf_short_name) */
	const char *file;
	uint32_t line;
};

/* 1 with *out when such an object holds addr; 0 when none does (or the log
 * predates these records). */
int ls_untraced_site(struct log_symbols *ls, uint64_t addr, struct ls_untraced_site *out);

void ls_close(struct log_symbols *ls);

#endif
