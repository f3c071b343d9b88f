/* Symbolization of one ELF object with elfutils.
 *
 * Names come from the symbol table that libdwfl picks (the object's own
 * .symtab, else the one of its separate debug file, else .dynsym), copied
 * once into an array sorted by address so that aliases are resolved the same
 * way every time. File:line comes from DWARF: the DW_TAG_subprogram that
 * starts at the address (its declaration's file and line), else the line
 * table. The subprograms of a compilation unit are indexed the first time an
 * address falls in it, so a lookup never rewalks a CU's DIE tree. */
#include "lib/symbols.h"

#include "lib/demangle.h"
#include "lib/elf_buildid.h"
#include "lib/hashmap.h"
#include "lib/util.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the object ---- */

struct fsym {
	uint64_t vaddr;
	uint64_t size;
	const char *name; /* owned by libdwfl */
	unsigned rank;    /* lower is preferred among aliases */
};

/* One compilation unit; its subprograms are indexed by entry address
 * (DWARF addresses) the first time a lookup lands in it. */
struct cu {
	/* the unit's DIE with its functions: a skeleton's split unit
	 * (-gsplit-dwarf: from the .dwo file libdw finds) */
	Dwarf_Die die;
	/* the unit's DIE in the object itself: the skeleton, with the
	 * unit's address ranges, line table and compilation directory */
	Dwarf_Die skel;
	bool indexed;
	size_t n, cap;
	struct cu_func {
		Dwarf_Addr pc;
		Dwarf_Die die;
	} *v;
	/* the ranges of v's subprograms by low address (built on first
	 * scope lookup): a site's scope without walking the CU's DIEs */
	bool spans_built;
	size_t nspans;
	struct cu_span {
		Dwarf_Addr lo, hi;
		size_t k; /* index in v */
	} *spans;
};

/* An address range of a CU. libdw 0.188 only finds CUs by address through
 * .debug_aranges, which clang does not emit, so we build this from the CU
 * DIEs' own ranges. */
struct cu_range {
	Dwarf_Addr lo, hi;
	size_t cu; /* index into sym_object.cus */
};

struct sym_entry {
	struct sym_info info;
	char *owned_name; /* demangled name or placeholder, freed at close */
	char *owned_file; /* file joined with the CU's directory */
};

struct sym_object {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr main_bias; /* module address = ELF vaddr + main_bias */
	char *basename;
	char *debuginfo_path; /* NULL: libdwfl's default search path */
	Dwfl_Callbacks callbacks;
	struct fsym *syms;
	size_t nsyms;
	struct hashmap cache; /* vaddr -> struct sym_entry * */
	struct hashmap abs_files; /* libdw's relative file name -> the absolute path (malloc'd) */
	bool dwarf_loaded;   /* the fields below are set */
	Dwarf *dw;           /* NULL when there is no DWARF */
	Dwarf_Addr dw_bias;  /* module address = DWARF address + dw_bias */
	struct cu *cus;
	size_t ncus;
	struct cu_range *ranges; /* sorted by lo */
	size_t nranges;
	uint8_t build_id[SF_BUILD_ID_MAX];
	size_t build_id_len;
	/* Subprograms by the hash of their symbol name (die_symbol_name):
	 * cu index << 32 | index in its cu_func array, + 1. Built on the first
	 * folded function whose DIE at the address is another alias's. */
	struct hashmap dies_by_name;
	bool dies_by_name_built;
	/* Function extents from .eh_frame_hdr's table (sym_func_key), for
	 * code no symbol covers (a stripped binary); sorted by vaddr. */
	struct fsym *fdes;
	size_t nfdes;
	bool fdes_loaded;
	struct hashmap inlines; /* inlined-subroutine DIE (its address) -> struct sym_inline * (sym_source_line_inl) */
};

/* Function-like symbols rank by type (STT_FUNC first), then binding. */
static unsigned sym_rank(const GElf_Sym *s)
{
	unsigned type = GELF_ST_TYPE(s->st_info), bind = GELF_ST_BIND(s->st_info);
	unsigned t = (type == STT_FUNC || type == STT_GNU_IFUNC) ? 0 : 1;
	unsigned b = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;

	return t * 4 + b;
}

static bool is_code_section(Elf *elf, GElf_Word shndx)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;

	return scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR);
}

/* Functions, plus untyped labels in code sections (hand-written assembly). */
static bool is_function_symbol(const GElf_Sym *s, const char *name,
			       GElf_Word shndx, Elf *elf)
{
	unsigned type = GELF_ST_TYPE(s->st_info);

	if (!name || !*name || shndx == SHN_UNDEF || shndx == SHN_ABS ||
	    shndx == (GElf_Word)-1)
		return false;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return true;
	return type == STT_NOTYPE && name[0] != '$' && name[0] != '.' &&
	       shndx < SHN_LORESERVE && is_code_section(elf, shndx);
}

static int fsym_cmp(const void *pa, const void *pb)
{
	const struct fsym *a = pa, *b = pb;
	size_t la, lb;

	if (a->vaddr != b->vaddr)
		return a->vaddr < b->vaddr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	la = strlen(a->name);
	lb = strlen(b->name);
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Rust's standard crates: an instantiation whose names mention only these
 * is the library's, not the user's. */
static bool is_std_crate(const char *p, size_t n)
{
	static const char *const std_crates[] = {"std", "core", "alloc", "compiler_builtins", "__gnu_cxx"};
	for (size_t i = 0; i < sizeof(std_crates) / sizeof(std_crates[0]); i++)
		if (strlen(std_crates[i]) == n && !strncmp(p, std_crates[i], n))
			return true;
	return false;
}

/* Whether a demangled name mentions a crate or namespace of the user's: a
 * path ("x::...") starting with another name than a standard crate's,
 * anywhere in it (generic arguments included). */
static bool names_user_path(const char *d)
{
	for (const char *p = d; *p;) {
		bool at_start = p == d || strchr("<(,&*[ ", p[-1]);
		size_t n = 0;
		while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9') ||
		       p[n] == '_')
			n++;
		if (n && at_start && p[n] == ':' && p[n + 1] == ':' && !is_std_crate(p, n))
			return true;
		p += n ? n : 1;
	}
	return false;
}

/* Identical code folding gives one address several names (Rust's
 * RawVec<regex::dfa::State>::grow_one and RawVec<(usize, usize)>::grow_one
 * are one function). Among the aliases of an address, a name that mentions
 * the user's own crate comes first, so every output names the folded
 * function after the user's code rather than a std instantiation; the
 * symbol-table order (binding, then length, then bytes) decides the rest.
 * Only alias groups are demangled. */
static void prefer_user_aliases(struct sym_object *o)
{
	for (size_t i = 0; i < o->nsyms;) {
		size_t j = i + 1;
		while (j < o->nsyms && o->syms[j].vaddr == o->syms[i].vaddr)
			j++;
		if (j - i > 1) {
			size_t best = i;
			for (size_t k = i; k < j; k++) {
				char *d = sf_demangle(o->syms[k].name);
				bool user = names_user_path(d ? d : o->syms[k].name);
				free(d);
				if (user) {
					best = k;
					break;
				}
			}
			/* Moved to the front; the others keep their order. */
			struct fsym b = o->syms[best];
			memmove(&o->syms[i + 1], &o->syms[i], (best - i) * sizeof(*o->syms));
			o->syms[i] = b;
		}
		i = j;
	}
}

static void load_symbols(struct sym_object *o)
{
	int n = dwfl_module_getsymtab(o->mod), i;
	size_t k = 0;

	if (n <= 0)
		return;
	o->syms = xmalloc((size_t)n * sizeof(*o->syms));
	for (i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		const char *name = dwfl_module_getsym_info(o->mod, i, &s, &addr,
							   &shndx, &elf, NULL);
		if (!is_function_symbol(&s, name, shndx, elf))
			continue;
		o->syms[k++] = (struct fsym){ addr - o->main_bias, s.st_size, name,
					      sym_rank(&s) };
	}
	qsort(o->syms, k, sizeof(*o->syms), fsym_cmp);
	/* Drop exact duplicates (the same symbol seen in two tables). */
	o->nsyms = 0;
	for (size_t j = 0; j < k; j++) {
		struct fsym *prev = o->nsyms ? &o->syms[o->nsyms - 1] : NULL;
		if (prev && prev->vaddr == o->syms[j].vaddr &&
		    strcmp(prev->name, o->syms[j].name) == 0)
			continue;
		o->syms[o->nsyms++] = o->syms[j];
	}
	prefer_user_aliases(o);
}

static const char *path_basename(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static bool check_build_id(struct sym_object *o, const char *path,
			   const uint8_t *want, size_t want_len, int force,
			   char *err, size_t errlen)
{
	char a[2 * SF_BUILD_ID_MAX + 1], b[2 * SF_BUILD_ID_MAX + 1];

	if (!want || want_len == 0 || force)
		return true;
	if (o->build_id_len == want_len &&
	    memcmp(o->build_id, want, want_len) == 0)
		return true;
	sf_build_id_hex(want, want_len, a, sizeof(a));
	sf_build_id_hex(o->build_id, o->build_id_len, b, sizeof(b));
	snprintf(err, errlen, "%s: build-id mismatch: expected %s, file has %s",
		 path, a, o->build_id_len ? b : "none");
	return false;
}

/* Reads the build-id and rejects what dwfl cannot place (core files). */
static bool inspect_file(struct sym_object *o, const char *path,
			 char *err, size_t errlen)
{
	int fd, n;
	GElf_Ehdr eh;
	Elf *elf = sf_elf_open(path, &fd, err, errlen);

	if (!elf)
		return false;
	if (!gelf_getehdr(elf, &eh) || eh.e_type == ET_CORE ||
	    eh.e_type == ET_NONE) {
		snprintf(err, errlen, "%s: not an executable or shared library",
			 path);
		sf_elf_close(elf, fd);
		return false;
	}
	n = sf_elf_build_id(elf, o->build_id, sizeof(o->build_id));
	o->build_id_len = n > 0 ? (size_t)(n < SF_BUILD_ID_MAX ? n : SF_BUILD_ID_MAX) : 0;
	sf_elf_close(elf, fd);
	return true;
}

static bool report_module(struct sym_object *o, const char *file,
			  char *err, size_t errlen)
{
	o->callbacks = (Dwfl_Callbacks){
		.find_elf = NULL, /* the module is reported with its file */
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &o->debuginfo_path,
	};
	o->dwfl = dwfl_begin(&o->callbacks);
	if (!o->dwfl) {
		snprintf(err, errlen, "%s: %s", file, dwfl_errmsg(-1));
		return false;
	}
	dwfl_report_begin(o->dwfl);
	/* Base 0 relative to p_vaddr: module addresses are ELF vaddrs. */
	o->mod = dwfl_report_elf(o->dwfl, o->basename, file, -1, 0, true);
	dwfl_report_end(o->dwfl, NULL, NULL);
	if (!o->mod || !dwfl_module_getelf(o->mod, &o->main_bias)) {
		snprintf(err, errlen, "%s: %s", file, dwfl_errmsg(-1));
		return false;
	}
	return true;
}

struct sym_object *sym_open(const char *path, const char *symbol_path,
			    const uint8_t *expected_build_id, size_t build_id_len,
			    int force, char *err, size_t errlen)
{
	const char *file = symbol_path ? symbol_path : path;
	struct sym_object *o;

	if (!file) {
		snprintf(err, errlen, "no object path");
		return NULL;
	}
	o = xcalloc(1, sizeof(*o));
	o->basename = xstrdup(path_basename(path ? path : file));
	if (!inspect_file(o, file, err, errlen) ||
	    !check_build_id(o, file, expected_build_id, build_id_len, force,
			    err, errlen) ||
	    !report_module(o, file, err, errlen)) {
		sym_close(o);
		return NULL;
	}
	load_symbols(o);
	return o;
}

size_t sym_build_id(const struct sym_object *o, const uint8_t **id)
{
	*id = o->build_id;
	return o->build_id_len;
}

/* ---- lookup ---- */

/* Index of the first symbol with vaddr >= v. */
static size_t lower_bound(const struct sym_object *o, uint64_t v)
{
	size_t lo = 0, hi = o->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->syms[mid].vaddr < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* How many preceding address groups to try for a containing symbol; more
 * would only matter for deeply nested sized symbols, which compilers do not
 * emit for functions. */
#define CONTAINING_GROUPS 8

static const struct fsym *find_symbol(const struct sym_object *o, uint64_t v)
{
	size_t i = lower_bound(o, v), g;

	if (i < o->nsyms && o->syms[i].vaddr == v)
		return &o->syms[i]; /* best-ranked alias sorts first */
	for (g = 0; g < CONTAINING_GROUPS && i > 0; g++) {
		uint64_t start = o->syms[i - 1].vaddr;
		size_t first = lower_bound(o, start);
		for (size_t j = first; j < i; j++)
			if (v - start < o->syms[j].size)
				return &o->syms[j];
		i = first;
	}
	return NULL;
}

/* Addresses of code that the linker discarded: 0 (GNU ld) or a tombstone
 * near the top (lld). ELF objects never map code at 0. */
static bool real_range(Dwarf_Addr lo, Dwarf_Addr hi)
{
	return lo != 0 && lo < hi && lo < (Dwarf_Addr)-2;
}

static void add_cu_ranges(struct sym_object *o, size_t idx, size_t *cap)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(&o->cus[idx].skel, off, &base, &lo, &hi)) > 0) {
		if (!real_range(lo, hi))
			continue;
		if (o->nranges == *cap) {
			*cap = *cap ? 2 * *cap : 64;
			o->ranges = xrealloc(o->ranges, *cap * sizeof(*o->ranges));
		}
		o->ranges[o->nranges++] = (struct cu_range){ lo, hi, idx };
	}
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct cu_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->cu < b->cu ? -1 : a->cu > b->cu;
}

/* Loads the DWARF (possibly from a separate debug file: this is when libdwfl
 * searches for it) and the address ranges of every CU. Only CU DIEs are
 * read here, not their children. */
static void load_dwarf(struct sym_object *o)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, split;
	uint8_t type;
	size_t cap_cus = 0, cap_ranges = 0;

	o->dwarf_loaded = true;
	o->dw = dwfl_module_getdwarf(o->mod, &o->dw_bias);
	if (!o->dw)
		return;
	while (dwarf_get_units(o->dw, cu, &cu, NULL, &type, &cudie, &split) == 0) {
		if (o->ncus == cap_cus) {
			cap_cus = cap_cus ? 2 * cap_cus : 16;
			o->cus = xrealloc(o->cus, cap_cus * sizeof(*o->cus));
		}
		/* A skeleton without its .dwo keeps its ranges and lines. */
		o->cus[o->ncus] = (struct cu){
			.die = type == DW_UT_skeleton && split.addr ? split : cudie,
			.skel = cudie,
		};
		add_cu_ranges(o, o->ncus++, &cap_ranges);
	}
	if (o->nranges)
		qsort(o->ranges, o->nranges, sizeof(*o->ranges), range_cmp);
}

Dwarf *sym_dwarf(struct sym_object *o, int64_t *shift)
{
	if (!o->dwarf_loaded)
		load_dwarf(o);
	*shift = (int64_t)(o->dw_bias - o->main_bias);
	return o->dw;
}

/* Ranges of CUs do not nest or overlap in practice; look back a little in
 * case two CUs claim neighbouring pieces out of order. */
#define RANGE_LOOKBACK 4

static struct cu *cu_at(struct sym_object *o, Dwarf_Addr pc)
{
	size_t lo = 0, hi = o->nranges, k;

	while (lo < hi) { /* first range with lo > pc */
		size_t mid = lo + (hi - lo) / 2;
		if (o->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0; k < RANGE_LOOKBACK && lo > 0; k++, lo--)
		if (pc < o->ranges[lo - 1].hi)
			return &o->cus[o->ranges[lo - 1].cu];
	return NULL;
}

static int collect_func(Dwarf_Die *die, void *arg)
{
	struct cu *c = arg;
	Dwarf_Addr pc, base, end;

	/* Split (hot/cold) functions have only DW_AT_ranges; their entry
	 * is the first range. */
	if (dwarf_entrypc(die, &pc) != 0 &&
	    dwarf_ranges(die, 0, &base, &pc, &end) <= 0)
		return DWARF_CB_OK;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->v = xrealloc(c->v, c->cap * sizeof(*c->v));
	}
	c->v[c->n++] = (struct cu_func){ pc, *die };
	return DWARF_CB_OK;
}

static int cu_func_cmp(const void *pa, const void *pb)
{
	const struct cu_func *a = pa, *b = pb;
	Dwarf_Off oa = dwarf_dieoffset((Dwarf_Die *)&a->die);
	Dwarf_Off ob = dwarf_dieoffset((Dwarf_Die *)&b->die);

	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	return oa < ob ? -1 : oa > ob; /* DIE order, for determinism */
}

static void index_cu(struct cu *c)
{
	if (c->indexed)
		return;
	c->indexed = true;
	dwarf_getfuncs(&c->die, collect_func, c, 0);
	if (c->n)
		qsort(c->v, c->n, sizeof(*c->v), cu_func_cmp);
}

static Dwarf_Die *subprogram_at(struct cu *c, Dwarf_Addr pc)
{
	size_t lo = 0, hi;

	index_cu(c);
	hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->v[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->n && c->v[lo].pc == pc ? &c->v[lo].die : NULL;
}

/* libdw gives paths "absolute or relative to the compilation directory";
 * make them absolute so that they name one file. */
static void set_file(struct sym_entry *e, struct cu *c, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir;

	e->info.file = file;
	if (!file || file[0] == '/')
		return;
	dir = dwarf_formstring(dwarf_attr(&c->skel, DW_AT_comp_dir, &attr));
	if (!dir || !*dir)
		return;
	/* DWARF 5's directory 0 is the comp dir, and libdw has joined it
	 * already: a relative one (glibc's "./libio", built with a prefix
	 * map) leaves "./libio/filedoalloc.c", not to be joined twice */
	size_t dl = strlen(dir);
	if (dir[0] != '/' && strncmp(file, dir, dl) == 0 && file[dl] == '/')
		return;
	if (asprintf(&e->owned_file, "%s%s%s", dir,
		     dir[strlen(dir) - 1] == '/' ? "" : "/", file) < 0)
		e->owned_file = NULL;
	else
		e->info.file = e->owned_file;
}

/* DW_AT_decl_file of a subprogram. libdw 0.188's dwarf_decl_file rejects
 * file index 0, which DWARF 5 uses for the CU's primary file (clang 14
 * emits it for every function of the main source file), and asserts on a
 * DIE of a GNU split unit (-gdwarf-4 -gsplit-dwarf) whose file table it
 * has not read yet, so this indexes the file table of the CU that holds
 * the attribute itself (dwarf_getsrcfiles takes a split unit's from its
 * skeleton). */
static const char *decl_file(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx;
	Dwarf_Die cudie;
	Dwarf_Files *files;
	size_t n;
	const char *f;

	if (!dwarf_attr_integrate(die, DW_AT_decl_file, &attr) ||
	    dwarf_formudata(&attr, &idx) != 0 ||
	    !dwarf_cu_die(attr.cu, &cudie, NULL, NULL, NULL, NULL, NULL, NULL) ||
	    dwarf_getsrcfiles(&cudie, &files, &n) != 0 || idx >= n)
		return NULL;
	f = dwarf_filesrc(files, idx, NULL, NULL);
	/* DWARF 4 has no file 0; libdw names it "???". */
	return f && strcmp(f, "???") != 0 ? f : NULL;
}

static Dwarf_Addr row_addr(Dwarf_Lines *lines, size_t i)
{
	Dwarf_Addr a = 0;

	dwarf_lineaddr(dwarf_onesrcline(lines, i), &a);
	return a;
}

static bool row_end(Dwarf_Lines *lines, size_t i)
{
	bool end = false;

	dwarf_lineendsequence(dwarf_onesrcline(lines, i), &end);
	return end;
}

/* The line-table row for pc. Of several rows at one address, the last
 * is_stmt one with a line number, as addr2line and heaptrack read it (an
 * empty asm statement's row, then the call's row at the same address: the
 * call's line); else the last with a line number: clang puts a line-0 row
 * right after the entry row of an XRay-instrumented function, and
 * dwarf_getsrc_die would return that. */
static Dwarf_Line *line_at(Dwarf_Die *cudie, Dwarf_Addr pc)
{
	Dwarf_Lines *lines;
	size_t n, lo = 0, hi, first;
	Dwarf_Addr at;

	if (dwarf_getsrclines(cudie, &lines, &n) != 0)
		return NULL;
	hi = n;
	while (lo < hi) { /* first row with address > pc */
		size_t mid = lo + (hi - lo) / 2;
		if (row_addr(lines, mid) <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || row_end(lines, lo - 1))
		return NULL;
	at = row_addr(lines, lo - 1);
	for (first = lo - 1; first > 0 && row_addr(lines, first - 1) == at &&
			     !row_end(lines, first - 1); first--)
		;
	Dwarf_Line *any = NULL;
	for (size_t i = lo; i-- > first;) {
		int line = 0;
		bool stmt = false;
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		if (row_end(lines, i) || dwarf_lineno(l, &line) != 0 || line <= 0)
			continue;
		if (dwarf_linebeginstatement(l, &stmt) == 0 && stmt)
			return l;
		if (!any)
			any = l;
	}
	return any ? any : dwarf_onesrcline(lines, lo - 1);
}

/* The name a subprogram DIE gives its symbol: the linkage name (C++,
 * Rust), else the plain name (C), raw; NULL when it has neither. */
static const char *die_symbol_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *m = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!m)
		m = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	return m ? m : dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}


/* The subprogram DIE of symbol `name`, by name: identical code folding
 * leaves a folded function's DIE with a dead address (lld writes 0), so
 * only its name finds it. */
static Dwarf_Die *subprogram_named(struct sym_object *o, const char *name, struct cu **cu)
{
	if (!o->dies_by_name_built) {
		o->dies_by_name_built = true;
		for (size_t i = 0; i < o->ncus; i++) {
			index_cu(&o->cus[i]);
			for (size_t k = 0; k < o->cus[i].n; k++) {
				const char *n = die_symbol_name(&o->cus[i].v[k].die);
				int added;
				uint64_t *v = n ? hm_put(&o->dies_by_name, name_hash(n), &added) : NULL;
				if (v && added)
					*v = ((uint64_t)i << 32 | k) + 1;
			}
		}
	}
	uint64_t v = hm_get(&o->dies_by_name, name_hash(name), 0);
	if (!v)
		return NULL;
	*cu = &o->cus[(v - 1) >> 32];
	Dwarf_Die *die = &(*cu)->v[(uint32_t)(v - 1)].die;
	const char *n = die_symbol_name(die);
	return n && !strcmp(n, name) ? die : NULL;
}

/* The decl_file/decl_line of a subprogram DIE into e. */
static bool decl_source(struct sym_entry *e, struct cu *c, Dwarf_Die *die)
{
	int line = 0;
	const char *f;
	if (!die || dwarf_decl_line(die, &line) != 0 || line <= 0 || !(f = decl_file(die)))
		return false;
	set_file(e, c, f);
	e->info.line = (uint32_t)line;
	return true;
}

static int inlined_call_site(struct sym_object *o, struct cu *c, Dwarf_Die *die, const char **file, uint32_t *line);
static int innermost_scope(Dwarf_Die *die, Dwarf_Addr pc, Dwarf_Die *out);

/* The outermost inlined subroutine of subprogram sub that holds pc
 * (through lexical blocks): 1 with *out. */
static int outermost_inlined_at(Dwarf_Die *sub, Dwarf_Addr pc, Dwarf_Die *out)
{
	Dwarf_Die child;
	if (dwarf_child(sub, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		if ((tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block) || dwarf_haspc(&child, pc) != 1)
			continue;
		if (tag == DW_TAG_inlined_subroutine) {
			*out = child;
			return 1;
		}
		return outermost_inlined_at(&child, pc, out);
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* The first line-table row of subprogram sub, from its entry pc on, that
 * no inlined subroutine covers: a line of the function's own code. */
static Dwarf_Line *own_first_line(struct cu *c, Dwarf_Die *sub, Dwarf_Addr pc)
{
	Dwarf_Lines *lines;
	size_t n, lo = 0, hi;
	Dwarf_Addr end;
	if (dwarf_highpc(sub, &end) != 0 || dwarf_getsrclines(&c->skel, &lines, &n) != 0)
		return NULL;
	hi = n;
	while (lo < hi) { /* first row with address >= pc */
		size_t mid = lo + (hi - lo) / 2;
		if (row_addr(lines, mid) < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < n && row_addr(lines, i) < end && !row_end(lines, i); i++) {
		Dwarf_Die scope = *sub;
		int line = 0;
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		innermost_scope(sub, row_addr(lines, i), &scope);
		if (dwarf_tag(&scope) != DW_TAG_inlined_subroutine && dwarf_lineno(l, &line) == 0 && line > 0)
			return l;
	}
	return NULL;
}

/* A subprogram without decl_line (line tables only: rustc's
 * debuginfo=line-tables-only, clang's -gline-tables-only) whose first
 * instruction is inlined code: the line of the function's own file, the
 * outermost inlined call's site, else its first row of its own code. */
static bool inlined_entry_source(struct sym_object *o, struct cu *c, Dwarf_Die *die, Dwarf_Addr pc,
				 struct sym_entry *e)
{
	Dwarf_Die inl;
	const char *f;
	uint32_t ln;
	if (!outermost_inlined_at(die, pc, &inl))
		return false;
	if (inlined_call_site(o, c, &inl, &f, &ln)) {
		e->info.file = f;
		e->info.line = ln;
		return true;
	}
	Dwarf_Line *l = own_first_line(c, die, pc);
	int line = 0;
	if (!l || dwarf_lineno(l, &line) != 0)
		return false;
	set_file(e, c, dwarf_linesrc(l, NULL, NULL));
	e->info.line = (uint32_t)line;
	return true;
}

static void dwarf_source(struct sym_object *o, uint64_t vaddr,
			 struct sym_entry *e)
{
	Dwarf_Addr pc;
	struct cu *c;
	Dwarf_Die *die;
	Dwarf_Line *l;
	int line = 0;

	if (!o->dwarf_loaded)
		load_dwarf(o);
	if (!o->dw)
		return;
	pc = vaddr + o->main_bias - o->dw_bias;
	if (!(c = cu_at(o, pc)))
		return;
	die = subprogram_at(c, pc);
	/* A folded function shown by another alias than the DIE at its
	 * address: the shown name's own definition. */
	const char *dn = die ? die_symbol_name(die) : NULL;
	if (dn && e->info.mangled && strcmp(dn, e->info.mangled) && sym_aliases(o, vaddr, NULL, NULL)) {
		struct cu *own = c;
		Dwarf_Die *d = subprogram_named(o, e->info.mangled, &own);
		if (decl_source(e, own, d))
			return;
	}
	if (decl_source(e, c, die) || (die && inlined_entry_source(o, c, die, pc, e)))
		return;
	l = line_at(&c->skel, pc);
	if (l && dwarf_lineno(l, &line) == 0) {
		set_file(e, c, dwarf_linesrc(l, NULL, NULL));
		e->info.line = line > 0 ? (uint32_t)line : 0;
	}
}

/* file as an absolute path (libdw's relative names, made absolute once and kept). */
static const char *abs_file(struct sym_object *o, struct cu *c, const char *file)
{
	if (file && file[0] != '/') {
		int added;
		uint64_t *abs = hm_put(&o->abs_files, (uint64_t)(uintptr_t)file, &added);
		if (added) {
			struct sym_entry e = {0};
			set_file(&e, c, file);
			*abs = (uintptr_t)(e.owned_file ? e.owned_file : xstrdup(file));
		}
		file = (const char *)(uintptr_t)*abs;
	}
	return file;
}

/* The function an inlined-subroutine DIE stands for, demangled (malloc'd),
 * or NULL: its linkage name, through DW_AT_abstract_origin and
 * DW_AT_specification, else its plain name. *mangled (may be NULL): the
 * linkage name, or NULL when there is only a plain name. */
static char *inlined_name(Dwarf_Die *die, const char **mangled)
{
	Dwarf_Attribute a;
	const char *m = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!m)
		m = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (mangled)
		*mangled = m;
	if (!m)
		m = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	if (!m)
		return NULL;
	char *d = sf_demangle(m);
	return d ? d : xstrdup(m);
}

/* The call site of an inlined subroutine in its caller (DW_AT_call_file and
 * DW_AT_call_line): 1 with *file and *line. */
static int inlined_call_site(struct sym_object *o, struct cu *c, Dwarf_Die *die, const char **file, uint32_t *line)
{
	Dwarf_Attribute a;
	Dwarf_Word idx, ln;
	Dwarf_Files *files;
	size_t nf;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &idx) != 0 ||
	    dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &ln) != 0 || !ln ||
	    dwarf_getsrcfiles(&c->die, &files, &nf) != 0 || idx >= nf)
		return 0;
	const char *f = dwarf_filesrc(files, idx, NULL, NULL);
	if (!f || strcmp(f, "???") == 0)
		return 0;
	*file = abs_file(o, c, f);
	*line = (uint32_t)ln;
	return *file != NULL;
}

int sym_has_dwarf(struct sym_object *o)
{
	if (!o->dwarf_loaded)
		load_dwarf(o);
	return o->dw != NULL;
}

int sym_named_source(struct sym_object *o, const char *symbol, const char **file, uint32_t *line)
{
	if (!o->dwarf_loaded)
		load_dwarf(o);
	if (!o->dw)
		return 0;
	struct cu *c = NULL;
	Dwarf_Die *die = subprogram_named(o, symbol, &c);
	int ln = 0;
	const char *f;
	if (!die || dwarf_decl_line(die, &ln) != 0 || ln <= 0 || !(f = decl_file(die)))
		return 0;
	*file = abs_file(o, c, f);
	*line = (uint32_t)ln;
	return 1;
}

int sym_source_line(struct sym_object *o, uint64_t vaddr, const char **file, uint32_t *line)
{
	return sym_source_line_folded(o, vaddr, NULL, NULL, file, line);
}

/* The innermost DIE whose ranges hold pc, below die: subprograms sit
 * in namespaces and types (C++, Rust), which hold no ranges, so those
 * are searched through. 1 if one was found. */
static int innermost_scope(Dwarf_Die *die, Dwarf_Addr pc, Dwarf_Die *out)
{
	Dwarf_Die child;
	int found = 0;
	if (dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block) {
			if (dwarf_haspc(&child, pc) == 1) {
				*out = child;
				innermost_scope(&child, pc, out);
				return 1;
			}
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
			   tag == DW_TAG_union_type || tag == DW_TAG_module) {
			if (innermost_scope(&child, pc, out))
				found = 1;
			if (found)
				return 1;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return found;
}


static int span_cmp(const void *pa, const void *pb)
{
	const struct cu_span *a = pa, *b = pb;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->k < b->k ? -1 : a->k > b->k;
}

static void build_spans(struct cu *c)
{
	size_t cap = 0;
	c->spans_built = true;
	index_cu(c);
	for (size_t k = 0; k < c->n; k++) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		while ((off = dwarf_ranges(&c->v[k].die, off, &base, &lo, &hi)) > 0) {
			if (c->nspans == cap) {
				cap = cap ? 2 * cap : 16;
				c->spans = xrealloc(c->spans, cap * sizeof(*c->spans));
			}
			c->spans[c->nspans++] = (struct cu_span){lo, hi, k};
		}
	}
	if (c->nspans)
		qsort(c->spans, c->nspans, sizeof(*c->spans), span_cmp);
}

#define SCOPE_MAX 64

/* A file of the system's headers (libstdc++'s, libc's): a line there is
 * library code inlined into the function (make_shared<std::string>'s
 * copy in stl_construct.h), not the user's, so folding goes on to the
 * inlined call around it. */
static int system_file(const char *f)
{
	return f && !strncmp(f, "/usr/", 5) && strstr(f, "/include/"); /* /usr/bin/../lib/gcc/.../include/c++/12/ too */
}

/* The scopes below die that hold pc (lexical blocks, inlined
 * subroutines), outermost first, appended to chain[*n ..]. */
static void scopes_below(Dwarf_Die *die, Dwarf_Addr pc, Dwarf_Die *chain, int *n)
{
	Dwarf_Die child;
	if (*n >= SCOPE_MAX || dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if ((tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block) &&
		    dwarf_haspc(&child, pc) == 1) {
			chain[(*n)++] = child;
			scopes_below(&chain[*n - 1], pc, chain, n);
			return;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* The scopes that hold pc, innermost first, from pc's subprogram down, as
 * dwarf_getscopes_die on the innermost gives them up to the subprogram:
 * the subprogram is found in a sorted span table, and the walk goes only
 * through its children (dwarf_getscopes_die, like a walk from the CU's
 * DIE, visits every function before pc's, for every site: quadratic in a
 * unit's functions). The count, or -1 when no span holds pc. */
static int cu_scopes_at(struct cu *c, Dwarf_Addr pc, Dwarf_Die *chain)
{
	if (!c->spans_built)
		build_spans(c);
	size_t lo = 0, hi = c->nspans;
	while (lo < hi) { /* first span with lo > pc */
		size_t mid = lo + (hi - lo) / 2;
		if (c->spans[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = 0; k < RANGE_LOOKBACK && lo > 0; k++, lo--) {
		const struct cu_span *sp = &c->spans[lo - 1];
		if (pc < sp->hi) {
			int n = 1;
			chain[0] = c->v[sp->k].die;
			scopes_below(&chain[0], pc, chain, &n);
			for (int i = 0; i < n / 2; i++) { /* innermost first */
				Dwarf_Die t = chain[i];
				chain[i] = chain[n - 1 - i];
				chain[n - 1 - i] = t;
			}
			return n;
		}
	}
	return -1;
}

/* The inlined frame chain[0] (an inlined subroutine, the n scopes from
 * it outward in chain), interned in o by its DIE: its name, its call site
 * and the inlined frame around it. */
static const struct sym_inline *inline_frame(struct sym_object *o, struct cu *c, Dwarf_Die *chain, int n)
{
	int added;
	/* by where the DIE is, not its offset: the split units of
	 * -gsplit-dwarf each have their own .dwo file, offsets from 0 */
	uint64_t *slot = hm_put(&o->inlines, (uint64_t)(uintptr_t)chain[0].addr, &added);
	if (!added)
		return (const struct sym_inline *)(uintptr_t)*slot;
	struct sym_inline *x = xcalloc(1, sizeof(*x));
	*slot = (uintptr_t)x; /* before the outer frames' inserts move the slot */
	const char *mangled = NULL, *f;
	uint32_t l;
	char *name = inlined_name(&chain[0], &mangled);
	x->name = name ? name : xstrdup("[inlined]");
	x->short_name = sf_short_name(x->name, mangled);
	if (inlined_call_site(o, c, &chain[0], &f, &l)) {
		x->call_file = f;
		x->call_line = l;
	}
	for (int i = 1; i < n; i++) {
		int tag = dwarf_tag(&chain[i]);
		if (tag == DW_TAG_subprogram)
			break;
		if (tag == DW_TAG_inlined_subroutine) {
			x->outer = inline_frame(o, c, chain + i, n - i);
			break;
		}
	}
	return x;
}

int sym_inline_same_calls(const struct sym_inline *a, const struct sym_inline *b)
{
	for (; a && b; a = a->outer, b = b->outer)
		if (a != b && (a->call_line != b->call_line || strcmp(a->name, b->name) ||
			       (a->call_file != b->call_file && (!a->call_file || !b->call_file ||
								 strcmp(a->call_file, b->call_file)))))
			return 0;
	return a == b;
}

int sym_source_line_folded(struct sym_object *o, uint64_t vaddr, int (*skip)(void *ctx, const char *name), void *ctx,
			   const char **file, uint32_t *line)
{
	return sym_source_line_inl(o, vaddr, skip, ctx, file, line, NULL);
}

int sym_source_line_inl(struct sym_object *o, uint64_t vaddr, int (*skip)(void *ctx, const char *name), void *ctx,
			const char **file, uint32_t *line, const struct sym_inline **inl)
{
	Dwarf_Addr pc;
	struct cu *c;
	Dwarf_Line *l;
	int n = 0;

	if (!o->dwarf_loaded)
		load_dwarf(o);
	if (!o->dw)
		return 0;
	pc = vaddr + o->main_bias - o->dw_bias;
	if (!(c = cu_at(o, pc)) || !(l = line_at(&c->skel, pc)) || dwarf_lineno(l, &n) != 0 || n <= 0)
		return 0;
	*file = abs_file(o, c, dwarf_linesrc(l, NULL, NULL));
	*line = (uint32_t)n;
	if (!*file)
		return 0;
	if (inl)
		*inl = NULL;
	if (!skip && !inl)
		return 1;
	/* inlined frames, innermost first: while the one holding the line is
	 * folded, the line is its call site in the frame around it */
	Dwarf_Die *scopes = NULL, inner;
	/* The chain of inlined instances around pc comes from
	 * dwarf_getscopes_die on the innermost one (as eu-addr2line -i).
	 * Not through dwarf_getscopes: it leaks its array when an inlined
	 * instance's abstract origin lies in another unit (Rust, LTO). */
	Dwarf_Die chain[SCOPE_MAX];
	int ns = cu_scopes_at(c, pc, chain);
	if (ns < 0) { /* no subprogram's span: the walk from the CU */
		ns = innermost_scope(&c->die, pc, &inner) ? dwarf_getscopes_die(&inner, &scopes) : 0;
		if (ns > SCOPE_MAX)
			ns = SCOPE_MAX;
		if (ns > 0)
			memcpy(chain, scopes, (size_t)ns * sizeof(*chain));
	}
	for (int i = 0; i < ns; i++) {
		int tag = dwarf_tag(&chain[i]);
		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		int folded = 0;
		if (skip) {
			char *name = inlined_name(&chain[i], NULL);
			folded = (name && skip(ctx, name)) || system_file(*file);
			free(name);
		}
		if (!folded) { /* the line is this inlined function's own */
			if (inl)
				*inl = inline_frame(o, c, chain + i, ns - i);
			break;
		}
		if (!inlined_call_site(o, c, &chain[i], file, line))
			break;
	}
	free(scopes);
	return 1;
}

const struct sym_info *sym_lookup(struct sym_object *o, uint64_t vaddr)
{
	struct sym_entry *e = (struct sym_entry *)(uintptr_t)hm_get(&o->cache, vaddr, 0);
	const struct fsym *s;

	if (e)
		return &e->info;
	e = xcalloc(1, sizeof(*e));
	s = find_symbol(o, vaddr);
	if (s) {
		e->owned_name = sf_demangle(s->name);
		e->info.name = e->owned_name ? e->owned_name : s->name;
		e->info.mangled = s->name;
	} else {
		if (asprintf(&e->owned_name, "%s+0x%" PRIx64, o->basename, vaddr) < 0)
			e->owned_name = xstrdup(o->basename);
		e->info.name = e->owned_name;
	}
	dwarf_source(o, vaddr, e);
	*hm_put(&o->cache, vaddr, NULL) = (uintptr_t)e;
	return &e->info;
}

int sym_foreach_function(struct sym_object *o,
			 int (*cb)(void *ctx, uint64_t vaddr, const char *mangled,
				   const char *demangled),
			 void *ctx)
{
	for (size_t i = 0; i < o->nsyms; i++) {
		char *d = sf_demangle(o->syms[i].name);
		int rc = cb(ctx, o->syms[i].vaddr, o->syms[i].name,
			    d ? d : o->syms[i].name);
		free(d);
		if (rc)
			return rc;
	}
	return 0;
}

size_t sym_aliases(struct sym_object *o, uint64_t vaddr,
		   void (*cb)(void *ctx, const char *mangled, const char *demangled), void *ctx)
{
	size_t i = lower_bound(o, vaddr), n = 0;
	if (i >= o->nsyms || o->syms[i].vaddr != vaddr)
		return 0;
	for (size_t j = i + 1; j < o->nsyms && o->syms[j].vaddr == vaddr; j++, n++) {
		if (!cb)
			continue;
		char *d = sf_demangle(o->syms[j].name);
		cb(ctx, o->syms[j].name, d ? d : o->syms[j].name);
		free(d);
	}
	return n;
}

static void free_entry(struct sym_entry *e)
{
	free(e->owned_name);
	free(e->owned_file);
	free(e);
}

void sym_close(struct sym_object *o)
{
	if (!o)
		return;
	size_t pos = 0;
	uint64_t vaddr, e;
	while (hm_next(&o->cache, &pos, &vaddr, &e))
		free_entry((struct sym_entry *)(uintptr_t)e);
	hm_free(&o->cache);
	hm_free(&o->dies_by_name);
	pos = 0;
	while (hm_next(&o->inlines, &pos, &vaddr, &e)) {
		struct sym_inline *x = (struct sym_inline *)(uintptr_t)e;
		free((char *)x->name);
		free((char *)x->short_name);
		free(x);
	}
	hm_free(&o->inlines);
	pos = 0;
	while (hm_next(&o->abs_files, &pos, &vaddr, &e))
		free((char *)(uintptr_t)e);
	hm_free(&o->abs_files);
	for (size_t i = 0; i < o->ncus; i++) {
		free(o->cus[i].v);
		free(o->cus[i].spans);
	}
	free(o->cus);
	free(o->ranges);
	free(o->syms);
	free(o->fdes);
	if (o->dwfl)
		dwfl_end(o->dwfl);
	free(o->basename);
	free(o);
}

/* ---- call targets (sym_call_target) ---- */

/* The decoders below read x86-64 code only. */
static int is_x86_64(Elf *elf)
{
	GElf_Ehdr eh;
	return elf && gelf_getehdr(elf, &eh) && eh.e_machine == EM_X86_64;
}

/* n bytes of the object's file image at ELF address vaddr, from an
 * allocated PROGBITS section (a separate debug file has none: 0). */
static int read_image(Elf *elf, uint64_t vaddr, uint8_t *buf, size_t n, int *plt)
{
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_ALLOC) ||
		    vaddr < sh.sh_addr || vaddr - sh.sh_addr + n > sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < vaddr - sh.sh_addr + n)
			return 0;
		memcpy(buf, (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr), n);
		if (plt) {
			const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
			*plt = name && strncmp(name, ".plt", 4) == 0;
		}
		return 1;
	}
	return 0;
}

/* The symbol a dynamic relocation of the GOT slot at `got` binds, or NULL. */
static const char *got_symbol(Elf *elf, uint64_t got)
{
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh, symsh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		Elf_Scn *symscn = elf_getscn(elf, sh.sh_link);
		Elf_Data *d = elf_getdata(scn, NULL), *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
		if (!d || !syms || !gelf_getshdr(symscn, &symsh))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym s;
			if (!gelf_getrela(d, (int)i, &r) || r.r_offset != got)
				continue;
			if (!GELF_R_SYM(r.r_info) || !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &s))
				return NULL;
			return elf_strptr(elf, symsh.sh_link, s.st_name);
		}
	}
	return NULL;
}

static int32_t rel32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* `jmp *GOT(%rip)` of a PLT stub at vaddr (after endbr64 and bnd): the GOT slot. */
static int plt_stub_got(Elf *elf, uint64_t vaddr, uint64_t *got)
{
	uint8_t b[16];
	if (!read_image(elf, vaddr, b, sizeof(b), NULL))
		return 0;
	size_t i = 0;
	if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		i = 4;
	if (b[i] == 0xf2)
		i++;
	if (b[i] != 0xff || b[i + 1] != 0x25)
		return 0;
	*got = vaddr + i + 6 + (uint64_t)(int64_t)rel32(b + i + 2);
	return 1;
}

/* The branch at vaddr, if a direct or GOT `jmp`/`call`: as sym_call_target. */
static int branch_target(Elf *elf, uint64_t vaddr, uint64_t *target, const char **name)
{
	uint8_t b[7];
	int plt = 0;
	uint64_t got;
	if (!read_image(elf, vaddr, b, sizeof(b), NULL))
		return 0;
	size_t i = b[0] == 0xf2 ? 1 : 0; /* bnd */
	if (b[i] == 0xe8 || b[i] == 0xe9) {
		*target = vaddr + i + 5 + (uint64_t)(int64_t)rel32(b + i + 1);
		uint8_t probe;
		if (read_image(elf, *target, &probe, 1, &plt) && plt)
			return plt_stub_got(elf, *target, &got) && (*name = got_symbol(elf, got)) ? 2 : 0;
		return 1;
	}
	if (b[i] == 0xeb) { /* jmp rel8: a tail call to code within 128 bytes */
		*target = vaddr + i + 2 + (uint64_t)(int64_t)(int8_t)b[i + 1];
		return 1;
	}
	if (b[i] == 0xff && (b[i + 1] == 0x25 || b[i + 1] == 0x15)) {
		got = vaddr + i + 6 + (uint64_t)(int64_t)rel32(b + i + 2);
		return (*name = got_symbol(elf, got)) ? 2 : 0;
	}
	return 0;
}

static int is_aarch64(Elf *elf)
{
	GElf_Ehdr eh;
	return elf && gelf_getehdr(elf, &eh) && eh.e_machine == EM_AARCH64;
}

static uint32_t word_le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* aarch64: an unpatched tail-call sled is `b #32` and 7 nops; a direct tail
 * call is the `b` after it (its target a function of this object, or a PLT
 * stub, which no traced function's address matches). */
static size_t aarch64_tail_targets(const uint8_t *code, size_t size, uint64_t fvaddr, struct sym_target *out,
				   size_t max, int *undecoded)
{
	size_t n = 0;
	for (size_t i = 0; i + 36 <= size; i += 4) {
		if (word_le(code + i) != 0x14000008u)
			continue;
		int sled = 1;
		for (size_t j = 1; j < 8 && sled; j++)
			sled = word_le(code + i + 4 * j) == 0xd503201fu;
		uint32_t op = word_le(code + i + 32);
		if (sled && (op & 0xfffffc1fu) == 0xd61f0000u) /* br xN */
			*undecoded = 1;
		if (!sled || (op & 0xfc000000u) != 0x14000000u)
			continue;
		if (n == max) {
			*undecoded = 1;
			break;
		}
		int64_t imm = (int32_t)((op & 0x03ffffffu) << 6) >> 6;
		out[n++] = (struct sym_target){.at = fvaddr + i + 32, .vaddr = fvaddr + i + 32 + (uint64_t)(imm * 4)};
		i += 28;
	}
	return n;
}

/* x86-64: whether the instruction at p (len bytes left in the function)
 * is a jmp (e9, eb, or ff /4 and /5), after bnd, notrack and REX prefixes. */
static int x86_is_jmp(const uint8_t *p, size_t len)
{
	size_t i = 0;
	while (i < len && i < 3 && (p[i] == 0xf2 || p[i] == 0x3e || (p[i] & 0xf0) == 0x40))
		i++;
	if (i < len && (p[i] == 0xe9 || p[i] == 0xeb))
		return 1;
	return i + 1 < len && p[i] == 0xff && ((p[i + 1] >> 3) & 7) >= 4 && ((p[i + 1] >> 3) & 7) <= 5;
}

/* The FDE at ELF vaddr `fde`, if it starts at `start` (its pc_begin read
 * as pcrel sdata4, the encoding every x86-64 and aarch64 compiler writes,
 * checked against the table's): its pc_range, else 0. */
static uint64_t fde_range(Elf *elf, uint64_t fde, uint64_t start)
{
	uint8_t b[16];
	if (!read_image(elf, fde, b, sizeof(b), NULL) || word_le(b) == 0xffffffffu || !word_le(b + 4))
		return 0;
	if (fde + 8 + (uint64_t)(int64_t)(int32_t)word_le(b + 8) != start)
		return 0;
	return word_le(b + 12);
}

/* Every FDE's extent, from the sorted table of .eh_frame_hdr (the segment
 * PT_GNU_EH_FRAME, which strip keeps: the unwinder needs it), when the
 * table is encoded as every linker writes it (datarel sdata4). */
static void load_fdes(struct sym_object *o)
{
	o->fdes_loaded = true;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(o->mod, &bias);
	size_t nph;
	uint64_t hdr = 0;
	if (!elf || elf_getphdrnum(elf, &nph) != 0)
		return;
	for (size_t i = 0; i < nph && !hdr; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			hdr = ph.p_vaddr;
	}
	uint8_t h[12];
	/* version 1; eh_frame_ptr pcrel sdata4, fde_count udata4, table datarel sdata4 */
	if (!hdr || !read_image(elf, hdr, h, sizeof(h), NULL) || h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
		return;
	uint32_t n = word_le(h + 8);
	if (n > (1u << 24))
		return;
	uint8_t *t = xmalloc((size_t)n * 8 + 1);
	if (read_image(elf, hdr + 12, t, (size_t)n * 8, NULL)) {
		o->fdes = xcalloc(n + 1, sizeof(*o->fdes));
		for (uint32_t i = 0; i < n; i++) {
			uint64_t start = hdr + (uint64_t)(int64_t)(int32_t)word_le(t + 8 * i);
			uint64_t size = fde_range(elf, hdr + (uint64_t)(int64_t)(int32_t)word_le(t + 8 * i + 4), start);
			if (size)
				o->fdes[o->nfdes++] = (struct fsym){.vaddr = start, .size = size};
		}
	}
	free(t);
}

/* The FDE whose extent holds v, or NULL. */
static const struct fsym *find_fde(struct sym_object *o, uint64_t v)
{
	if (!o->fdes_loaded)
		load_fdes(o);
	size_t lo = 0, hi = o->nfdes;
	while (lo < hi) { /* the first FDE starting above v */
		size_t mid = lo + (hi - lo) / 2;
		if (o->fdes[mid].vaddr <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && v - o->fdes[lo - 1].vaddr < o->fdes[lo - 1].size ? &o->fdes[lo - 1] : NULL;
}

const void *sym_func_key(struct sym_object *o, uint64_t vaddr)
{
	const struct fsym *s = find_symbol(o, vaddr);
	if (s)
		return s->name;
	return find_fde(o, vaddr);
}

/* The size of the function starting at fvaddr: its symbol's, else its
 * FDE's (stripped); 0 when neither starts there. */
static uint64_t func_size(struct sym_object *o, uint64_t fvaddr)
{
	size_t k = lower_bound(o, fvaddr);
	if (k < o->nsyms && o->syms[k].vaddr == fvaddr)
		return o->syms[k].size;
	const struct fsym *f = find_fde(o, fvaddr);
	return f && f->vaddr == fvaddr ? f->size : 0;
}

size_t sym_tail_targets(struct sym_object *o, uint64_t fvaddr, struct sym_target *out, size_t max, int *undecoded)
{
	int ignored;
	if (!undecoded)
		undecoded = &ignored;
	*undecoded = 0;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(o->mod, &bias);
	size_t n = 0;
	int a64 = is_aarch64(elf);
	uint64_t fsize = (is_x86_64(elf) || a64) ? func_size(o, fvaddr) : 0;
	if (!fsize || fsize > (1u << 20))
		return 0;
	size_t size = fsize;
	uint8_t *code = xmalloc(size);
	if (!read_image(elf, fvaddr, code, size, NULL)) {
		free(code);
		return 0;
	}
	if (a64) {
		n = aarch64_tail_targets(code, size, fvaddr, out, max, undecoded);
		free(code);
		return n;
	}
	/* an XRay sled as the file has it (`jmp +9`, then 9 bytes of nop);
	 * the tail-call sled sits right before the tail call's jmp */
	for (size_t i = 0; i + 11 + 2 <= size; i++) { /* a jmp rel8 is 2 bytes */
		if (code[i] != 0xeb || code[i + 1] != 0x09)
			continue;
		struct sym_target t = {.at = fvaddr + i + 11};
		int kind = branch_target(elf, fvaddr + i + 11, &t.vaddr, &t.name);
		if (kind && code[i + 11 + (code[i + 11] == 0xf2)] != 0xe8 &&
		    !(code[i + 11] == 0xff && code[i + 12] == 0x15)) { /* a jmp, not a call */
			if (n == max) {
				*undecoded = 1;
				break;
			}
			if (kind == 2)
				t.vaddr = 0;
			else
				t.name = NULL;
			out[n++] = t;
		} else if (!kind && x86_is_jmp(code + i + 11, size - i - 11)) {
			*undecoded = 1; /* jmp *%rax, or a GOT slot without a symbol */
		}
		i += 10;
	}
	free(code);
	return n;
}

int sym_call_target(struct sym_object *o, uint64_t ret, uint64_t *target, const char **name)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(o->mod, &bias);
	uint8_t b[6];
	int plt = 0;
	uint64_t got;
	if (!is_x86_64(elf) || ret < 6 || !read_image(elf, ret - 6, b, sizeof(b), NULL))
		return 0;
	if (b[1] == 0xe8) { /* call rel32 */
		*target = ret + (uint64_t)(int64_t)rel32(b + 2);
		uint8_t probe;
		if (read_image(elf, *target, &probe, 1, &plt) && plt && plt_stub_got(elf, *target, &got) &&
		    (*name = got_symbol(elf, got)))
			return 2;
		return plt ? 0 : 1;
	}
	if (b[0] == 0xff && b[1] == 0x15) { /* call *GOT(%rip): -fno-plt, Rust */
		got = ret + (uint64_t)(int64_t)rel32(b + 2);
		return (*name = got_symbol(elf, got)) ? 2 : 0;
	}
	return 0;
}

/* The function a GOT slot's R_X86_64_RELATIVE relocation points to (a
 * call through the GOT of this object's own function, as Rust's static
 * std): its ELF address, else 0. */
static uint64_t got_relative_target(Elf *elf, uint64_t got)
{
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			if (gelf_getrela(d, (int)i, &r) && r.r_offset == got)
				return GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE ? (uint64_t)r.r_addend : 0;
		}
	}
	return 0;
}

/* The code of the x86-64 function symbol starting at fvaddr (at most
 * 1 MiB), read from the object's image into a buffer the caller frees,
 * with its size and ELF; NULL when there is no such function or it cannot
 * be read. */
static uint8_t *function_code(struct sym_object *o, uint64_t fvaddr, Elf **elf, size_t *size)
{
	const struct fsym *f = find_symbol(o, fvaddr);
	GElf_Addr bias;
	*elf = dwfl_module_getelf(o->mod, &bias);
	if (!f || f->vaddr != fvaddr || !f->size || f->size > (1u << 20) || !is_x86_64(*elf))
		return NULL;
	uint8_t *b = xmalloc(f->size);
	if (!read_image(*elf, fvaddr, b, f->size, NULL)) {
		free(b);
		return NULL;
	}
	*size = f->size;
	return b;
}

size_t sym_opaque_calls(struct sym_object *o, uint64_t fvaddr, void (*cb)(void *ctx, uint64_t ret, uint64_t target),
			void *ctx)
{
	Elf *elf;
	size_t size = 0, n = 0;
	uint8_t *b = function_code(o, fvaddr, &elf, &size);
	if (b) {
		for (size_t i = 0; i + 2 <= size; i++) {
			if (b[i] != 0xff)
				continue;
			uint8_t modrm = b[i + 1], mod = modrm >> 6, rm = modrm & 7;
			if (((modrm >> 3) & 7) != 2)
				continue;
			size_t len = mod == 3 ? 2 : mod == 1 ? 3 : mod == 2 ? 6 : rm == 5 ? 6 : 2;
			if (rm == 4 && mod != 3)
				continue; /* a SIB byte: not decoded */
			if (i + len > size)
				continue;
			uint64_t ret = fvaddr + i + len, target = 0, t;
			const char *name;
			if (mod == 0 && rm == 5) { /* call *GOT(%rip): opaque unless the slot names no symbol */
				if (sym_call_target(o, ret, &t, &name))
					continue;
				target = got_relative_target(elf, ret + (uint64_t)(int64_t)rel32(b + i + 2));
			}
			cb(ctx, ret, target);
			n++;
		}
	}
	free(b);
	return n;
}

int sym_indirect_call(struct sym_object *o, uint64_t ret)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(o->mod, &bias);
	uint8_t b[7];
	if (!is_x86_64(elf) || ret < 7 || !read_image(elf, ret - 7, b, sizeof(b), NULL))
		return 0;
	/* ff /2 ending at ret: modrm reg field 2, then no SIB (rm != 4) and
	 * its displacement by mod: none (rm != 5, RIP-relative), 1 or 4 bytes */
	for (int disp = 0; disp <= 4; disp += disp ? 3 : 1) {
		int m = 6 - disp; /* the modrm byte's index */
		uint8_t modrm = b[m], mod = modrm >> 6, rm = modrm & 7;
		if (b[m - 1] != 0xff || ((modrm >> 3) & 7) != 2)
			continue;
		if (mod == 3 && disp == 0)
			return 1;
		if (rm == 4 || (mod == 0 && rm == 5))
			continue;
		if ((mod == 0 && disp == 0) || (mod == 1 && disp == 1) || (mod == 2 && disp == 4))
			return 1;
	}
	return 0;
}

size_t sym_calls(struct sym_object *o, uint64_t fvaddr,
		 void (*cb)(void *ctx, uint64_t ret, int kind, uint64_t target, const char *name), void *ctx)
{
	Elf *elf;
	size_t size = 0, n = 0;
	uint8_t *b = function_code(o, fvaddr, &elf, &size);
	if (b) {
		for (size_t i = 0; i + 5 <= size; i++) {
			uint64_t ret, target = 0;
			const char *name = NULL;
			if (b[i] == 0xe8)
				ret = fvaddr + i + 5; /* call rel32 */
			else if (b[i] == 0xff && i + 6 <= size && b[i + 1] == 0x15)
				ret = fvaddr + i + 6; /* call *GOT(%rip) */
			else
				continue;
			int k = sym_call_target(o, ret, &target, &name);
			/* a direct call must land inside this object's functions:
			 * an e8 byte inside another instruction rarely does */
			if (k == 2 || (k == 1 && find_symbol(o, target))) {
				cb(ctx, ret, k, target, name);
				n++;
			}
		}
	}
	free(b);
	return n;
}

struct plt_only {
	void (*cb)(void *ctx, uint64_t ret, const char *name);
	void *ctx;
	size_t n;
};

static void plt_only_cb(void *ctx, uint64_t ret, int kind, uint64_t target, const char *name)
{
	struct plt_only *p = ctx;
	(void)target;
	if (kind == 2) {
		p->cb(p->ctx, ret, name);
		p->n++;
	}
}

size_t sym_plt_calls(struct sym_object *o, uint64_t fvaddr, void (*cb)(void *ctx, uint64_t ret, const char *name),
		     void *ctx)
{
	struct plt_only p = {cb, ctx, 0};
	sym_calls(o, fvaddr, plt_only_cb, &p);
	return p.n;
}
