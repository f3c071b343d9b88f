/* Function selection: which instrumented functions of an object a set of
 * regexes picks, and the filter file (format/filter_file.h) that records
 * them. `sftrace filter` is this plus its printing; `record --trigger`
 * selects the same way; the runtime's per-object filters (record
 * --filter-regex) come from `sftrace filter`, so from here too.
 *
 * Only functions with XRay sleds can be recorded, so the candidates are the
 * object's xray_instr_map entries, not its symbol table; names come from
 * the symbol table (lib/symbols.h). A function matches when a regex finds
 * its demangled name (or, with NM_MANGLED or NM_BOTH, its raw symbol, as
 * the reference tool did), or any alias's. */
#ifndef SFTRACE_LIB_SELECT_H
#define SFTRACE_LIB_SELECT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/elf_buildid.h"
#include "lib/name_match.h"

struct sym_object;

struct sel_func {
	uint64_t vaddr;
	unsigned char hit, excluded, named;
	unsigned char outside_generics; /* a name matched outside generic arguments */
	/* The alias the include regexes matched first, when the function has
	 * several names (identical code folding): the name it goes by in the
	 * filter file, and so in every output that reads the filter. */
	char *matched_name;
};

struct sel_object {
	const char *arg;                        /* as given */
	char path[PATH_MAX];                    /* absolute */
	char build_id[2 * SF_BUILD_ID_MAX + 1]; /* hex, or "-" (after sel_select) */
	struct sel_func *funcs;                 /* sorted by vaddr, unique */
	size_t nfuncs, nselected;
	struct sym_object *sym;                 /* after sel_select */
};

/* What to select: inc's matches without exc's (both compiled). */
struct sel_query {
	const struct nm_patterns *inc, *exc;
	enum nm_which which;
	int ignore_generic_args; /* search names with their generic arguments elided */
};

/* Reads the instrumented functions of the object at arg (an ELF file with
 * an xray_instr_map) and its absolute path. -1 after a message naming arg;
 * sel_free either way. */
int sel_load(struct sel_object *o, const char *arg);

/* sel_load for each of args[0..n), into objs (room for n); an object given
 * twice (the same file) is kept once, with a warning. -1 after a message;
 * the first *nobjs need sel_free either way. */
int sel_load_all(const char *const *args, size_t n, struct sel_object *objs, size_t *nobjs);

/* Marks the functions q selects (opens the object's symbols, sets its
 * build-id and nselected). -1 after a message. */
int sel_select(struct sel_object *o, const struct sel_query *q);

static inline int sel_is_selected(const struct sel_func *f)
{
	return f->hit && !f->excluded;
}

/* The name people read (demangled). */
/* The function's name: the alias the regexes matched, else the symbol
 * table's choice (symbols.h). */
const char *sel_func_name(const struct sel_object *o, const struct sel_func *f);

void sel_free(struct sel_object *o);

/* A name as a filter file holds it: control characters become '?' (the
 * runtime goes by address; names are for people, the file stays
 * line-based). */
void sel_write_name(FILE *out, const char *name);

/* The settings line of a filter file and what it is made of. */
struct sel_filter {
	int within;         /* mode within: everything while a selected one runs */
	int unlisted_trace; /* unlisted trace: objects not listed are recorded whole */
};

/* Writes the filter file of objs[0..n)'s selected functions to path
 * (lib/outfile.h: atomically, "-" for stdout); the header comment repeats
 * the command line argv[0..argc). -1 after a message. */
int sel_write_filter(const char *path, const struct sel_filter *f, const struct sel_object *objs, size_t n, int argc,
		     char **argv);

#endif
