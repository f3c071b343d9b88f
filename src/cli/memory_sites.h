/* The rows of `sftrace memory`'s tables and of `memory --diff`: the heap
 * replay's sites (heap.h: a traced stack and a call-site address) read
 * leaf first and merged.
 *
 * Each site gets its allocating function: the innermost traced frame of
 * its stack once the allocator's own plumbing is folded away (frames whose
 * full name matches the fold list, MEMORY_FOLD_DEFAULT plus --fold, are
 * skipped going up the stack; none, "[no traced frame]", when every traced
 * frame is plumbing, as Rust std's pre-main allocations through the traced
 * __rust_alloc shim), and its location:
 *   - a site reached by a tail call from a folded function (luaL_alloc's
 *     `jmp realloc` with --fold '^luaL_alloc$') whose caller is the
 *     allocating function: the call site's line there (the allocator
 *     returned into it), as heaptrack's unwinder sees it;
 *   - a site reached by a tail call (heap_site.tail): the line of the
 *     function's tail calls (its `jmp` after the tail-call sled) when they
 *     are all on one line, else its own file:line (its definition);
 *   - a site whose call site lies in folded plumbing (Rust's `__rust_alloc`
 *     called from `finish_grow`): the line of the allocating function's
 *     calls of the outermost traced plumbing frame (`RawVec::grow_one`,
 *     called from Vec::push inlined into it) when they all lie on one
 *     line (when none of its calls names that frame, its calls that name
 *     nothing, `call *%rbx` and GOT slots of untraced functions, as
 *     format!'s call of format_inner), else its own file:line (its
 *     definition), since the call inside it left no address;
 *   - else the call site's file:line from DWARF (addr2line of the
 *     allocator's return address);
 *   - else, a call site in the allocating function's own code in an
 *     object without DWARF (stripped too: the function's extent from
 *     .eh_frame): that object, keyed by the function (ms_row.own);
 *   - else the function holding the call site;
 *   - else, a call site in an object the log did not record (libc's
 *     printf allocating stdout's buffer) with a return-address tag that
 *     names a call in the function (heap_site.tag, ls_tag_call): that
 *     call's file:line;
 *   - else, with no traced frame at all, a call site in an object the log
 *     names without functions (SF_OBJ_UNTRACED: an uninstrumented
 *     executable, libc): the function by that object's symbols and the
 *     call's file:line from its DWARF, keyed by the object's basename and
 *     function and line, or ELF address (ms_row.uobj);
 *   - else (such a call site without a tag, as a function's library calls
 *     before any traced callee of it returned) "in a library": the runtime address moves
 *     with address-space randomization, so it is neither shown nor a key
 *     (such sites of one function merge, and match across runs in --diff).
 * A row with no traced frame whose call site lies in a recorded object's
 * function that is not plumbing (Rust std's set-up before main) is named
 * by that function (ms_row.usym), its location as above.
 * Rows then merge by function, by function and location (the default), or
 * not at all (by stack: one row per site). A merged row shows the callers
 * common to all its blocks (ms_row.common) and the stack of its largest site
 * (by bytes) below them.
 */
#ifndef SFTRACE_CLI_MEMORY_SITES_H
#define SFTRACE_CLI_MEMORY_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "lib/heap.h"
#include "lib/plumbing.h"

/* The allocator's plumbing folded by default: lib/plumbing.h's list (thread
 * labels skip the same functions). The man page and README list it. */
#define MEMORY_FOLD_DEFAULT SF_ALLOC_PLUMBING_RE

enum { MS_BY_FUNCTION, MS_BY_LINE, MS_BY_STACK };

struct ms_row {
	uint32_t func;        /* the allocating function's id; UINT32_MAX: no traced frame */
	const char *file;     /* location: file (as DWARF names it) and line, or NULL */
	uint32_t line;
	uint64_t addr;        /* a site address (the largest site's) */
	uint32_t node;        /* the largest site's stack (heap_result.tree) */
	uint32_t leaf_node;   /* its allocating frame's node (node, or above folded frames) */
	int tail;             /* reached by a tail call */
	int outside;          /* the call site is in no recorded object with symbols: addr is not a key */
	int own;              /* the location is the function's own, which has no line (no DWARF): addr is not a key */
	/* The line lies in a function inlined into the allocating one (and
	 * not folded): that function names the row, the allocating function
	 * becomes its caller at the inlined call's line (sym_inline's chain
	 * outward). inl_varies: merged sites were inlined at different calls,
	 * so no call line is shown. */
	const struct sym_inline *inl;
	int inl_varies;
	/* No traced frame, the call site in an object the log names without
	 * functions (ls_untraced_site: an uninstrumented executable, libc):
	 * its path (NULL: none), whether it is the executable, the function
	 * its own symbols name there (or NULL) and the site's ELF address.
	 * Keys: the object's basename, then the function and line, else the
	 * ELF address; never the runtime address. */
	const char *uobj;
	int umain;
	const char *usym, *ushort; /* full and short names */
	uint64_t uvaddr;
	uint64_t allocs, bytes, temporaries;
	uint64_t peak_bytes, peak_blocks, leak_bytes, leak_blocks;
	uint64_t top_bytes;   /* the largest site's bytes (which stack is shown) */
	/* A merged row's callers: how many levels above the allocating frame
	 * all its blocks share (UINT32_MAX: every caller, up to the root), and
	 * how many different callers (a stack's root counted as one) they
	 * have at the first level where they differ (0 when they do not). */
	uint32_t common, ncallers;
};

struct ms_table {
	struct ms_row *rows;
	size_t n;
};

struct ms_fold;

/* The fold list: the default (unless no_default) plus the user's patterns.
 * NULL after printing which pattern does not compile. */
struct ms_fold *ms_fold_new(int no_default, const char *const *extra, size_t nextra);
void ms_fold_free(struct ms_fold *f);

/* The rows of r grouped by `group` (MS_BY_*); fold may be NULL (fold
 * nothing). Rows in no particular order. */
void ms_group(const struct heap_result *r, struct ms_fold *fold, int group, struct ms_table *t);
void ms_table_free(struct ms_table *t);

/* "heap.c:14" (the file's basename), "in malloc_wrapper", "in libc.so.6"
 * or "in main (executable)" (a site in an untraced object whose function
 * has no line), "libc.so.6+0x1f2e3" (nor a function), "in a library" (a
 * site in an object the log did not record), or "" for no site. */
void ms_location(const struct heap_result *r, const struct ms_row *row, int basename, char *buf, size_t cap);

/* The allocating function's name (short or full), or "[no traced frame]";
 * the inlined function's when the line lies in one (ms_row.inl). */
const char *ms_func_name(const struct heap_result *r, const struct ms_row *row, int full);

/* The name of the function row->inl (or one of its outer frames, x) was
 * inlined into: the next inlined frame out, else the allocating function. */
const char *ms_inline_caller(const struct heap_result *r, const struct ms_row *row, const struct sym_inline *x,
			     int full);

/* The inlined function (not folded; a closure read as its definer) that
 * site s's call lies in, inside its innermost traced frame's own code, as
 * its row names it; NULL when none. For drawings of the traced stacks. */
const struct sym_inline *ms_site_inline(const struct heap_result *r, struct ms_fold *fold, const struct heap_site *s);

/* Display columns of UTF-8 text (one per code point). */
size_t ms_cols(const char *s);

/* A table row's text in at most `width` columns (sftrace memory's tables
 * and --diff's), every line within it: "NAME  LOC MARK" (mark: " (tail
 * call)" or "") with the name cut with "…" in its path, keeping its last
 * component (sf_fit_name), when that leaves the name 10 columns (or all of
 * it); else two lines: the location alone, then, after a newline and
 * indent + 2 spaces, the name in what is left. The mark is never cut:
 * after the location when both fit, else after the name. A location wider
 * than the line (a long "in OBJECT") goes after the name, cut to what is
 * left (3 columns at least). Returns the columns the
 * last line's text takes (counting the 2 of the second line's indent). */
size_t ms_fit_row(const char *name, const char *loc, const char *mark, size_t width, size_t indent, char *buf,
		  size_t cap);

#endif
