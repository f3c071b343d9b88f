/* record --auto-args: prototypes from DWARF (dwarf_args.h). */
#include "lib/dwarf_args.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/sf_args.h"
#include "lib/hashmap.h"
#include "lib/symbols.h"
#include "lib/util.h"
#include "lib/x86_reads.h"

struct da_file {
	int fd;                 /* the file's own DWARF: its descriptor, else -1 */
	struct sym_object *sym; /* else the separate debug file symbols.c finds */
	int64_t shift;          /* ELF address = DWARF address + shift */
	int x86_64;  /* struct arguments are classified by System V's rules */
	int aarch64; /* by AAPCS64's */
	Dwarf *dw;
	/* low pc (ELF address) -> index in fns + 1: a DIE, not an offset,
	 * since a split unit's DIEs are in its .dwo file's sections */
	struct hashmap by_pc;
	Dwarf_Die *fns;
	size_t nfns, capfns;
	/* skeleton units whose split unit (.dwo) libdw did not find, and
	 * the first one's file name (as its skeleton names it) */
	unsigned missing;
	char *missing_dwo;
};

static int collect(Dwarf_Die *die, void *arg)
{
	struct da_file *d = arg;
	Dwarf_Addr lo;
	if (dwarf_lowpc(die, &lo) != 0)
		return DWARF_CB_OK;
	int added;
	uint64_t *v = hm_put(&d->by_pc, (uint64_t)((int64_t)lo + d->shift), &added);
	if (!added) { /* the last one, as before */
		d->fns[*v - 1] = *die;
		return DWARF_CB_OK;
	}
	if (d->nfns == d->capfns) {
		d->capfns = d->capfns ? 2 * d->capfns : 256;
		d->fns = xrealloc(d->fns, d->capfns * sizeof(*d->fns));
	}
	d->fns[d->nfns++] = *die;
	*v = d->nfns;
	return DWARF_CB_OK;
}

/* A C CU's functions: its top-level subprograms. dwarf_getfuncs also
 * walks every subprogram's lexical blocks and inlined calls for GNU C's
 * nested functions (which clang does not compile; gcc's get no values
 * here): 130M of the 220M instructions `sftrace filter --args` took with
 * --auto-args on SQLite's driver, 101k DIEs for 2,963 functions. */
static int collect_c(struct da_file *d, Dwarf_Die *cu)
{
	Dwarf_Die c;
	if (dwarf_child(cu, &c) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&c);
		if (tag == DW_TAG_imported_unit)
			return -1; /* dwz's partial units: dwarf_getfuncs follows them */
		if (tag == DW_TAG_subprogram)
			collect(&c, d);
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

static int c_language(Dwarf_Die *cu)
{
	int lang = dwarf_srclang(cu);
	return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11;
}

/* The .dwo file a skeleton unit names (DW_AT_dwo_name, DWARF 4's
 * DW_AT_GNU_dwo_name), and its DW_AT_comp_dir; 0 if it names none. */
static int dwo_attrs(Dwarf_Die *cu, const char **name, const char **dir)
{
	Dwarf_Attribute a;
	*name = dwarf_formstring(dwarf_attr(cu, DW_AT_dwo_name, &a));
	if (!*name)
		*name = dwarf_formstring(dwarf_attr(cu, DW_AT_GNU_dwo_name, &a));
	*dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
	return *name != NULL;
}

/* The .dwo file of a skeleton unit, for a message: its name joined to
 * its compilation directory (malloc'd). */
static char *da_dwo_name(Dwarf_Die *cu)
{
	const char *name, *dir;
	char *out;
	if (!dwo_attrs(cu, &name, &dir))
		return xstrdup("(unnamed)");
	if (name[0] == '/' || !dir || !dir[0])
		return xstrdup(name);
	if (asprintf(&out, "%s/%s", dir, name) < 0)
		return xstrdup(name);
	return out;
}

/* FNV-1a of s into *h. */
static void digest_str(uint64_t *h, const char *s)
{
	for (; *s; s++)
		*h = (*h ^ (unsigned char)*s) * 0x100000001b3ull;
	*h = (*h ^ 0xff) * 0x100000001b3ull; /* a separator no path holds */
}

/* One place libdw may read a .dwo from (libdw_find_split_unit.c: a
 * relative name beside the object, then in the compilation directory, a
 * relative one of those taken from the object's directory), into *h:
 * its path and what stat says of it, or that nothing is there. */
static void digest_place(uint64_t *h, const char *objdir, const char *dir, const char *name)
{
	char *path;
	struct stat st;
	char line[160];
	int r;
	if (name[0] == '/')
		r = asprintf(&path, "%s", name);
	else if (!dir)
		r = asprintf(&path, "%s/%s", objdir, name);
	else if (dir[0] == '/')
		r = asprintf(&path, "%s/%s", dir, name);
	else
		r = asprintf(&path, "%s/%s/%s", objdir, dir, name);
	if (r < 0)
		path = xstrdup(name);
	digest_str(h, path);
	if (stat(path, &st) == 0)
		snprintf(line, sizeof(line), "%ju %ju %jd %jd.%09ld", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
			 (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	else
		snprintf(line, sizeof(line), "-");
	digest_str(h, line);
	free(path);
}

unsigned da_split_digest(const char *path, uint64_t *digest)
{
	*digest = 0xcbf29ce484222325ull;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	unsigned n = 0;
	if (dw) {
		char *real = realpath(path, NULL);
		char *slash = real ? strrchr(real, '/') : NULL;
		if (slash)
			*slash = 0;
		const char *objdir = slash ? (real[0] ? real : "/") : ".";
		Dwarf_CU *unit = NULL;
		Dwarf_Die cu;
		uint8_t type;
		const char *name, *dir;
		/* No split DIE asked for: libdw opens no .dwo here. */
		while (dwarf_get_units(dw, unit, &unit, NULL, &type, &cu, NULL) == 0) {
			if (type != DW_UT_skeleton || !dwo_attrs(&cu, &name, &dir))
				continue;
			n++;
			digest_place(digest, objdir, NULL, name);
			if (dir)
				digest_place(digest, objdir, dir, name);
		}
		free(real);
		dwarf_end(dw);
	}
	close(fd);
	return n;
}

/* The file's own DWARF, else the one its .gnu_debuglink or build-id names
 * (found as symbols.c finds it for names and lines). */
static struct da_file *open_dwarf(const char *path)
{
	struct da_file d = {.fd = open(path, O_RDONLY | O_CLOEXEC)};
	if (d.fd < 0)
		return NULL;
	d.dw = dwarf_begin(d.fd, DWARF_C_READ);
	if (!d.dw) {
		char err[256];
		close(d.fd);
		d.fd = -1;
		d.sym = sym_open(path, NULL, NULL, 0, 1, err, sizeof(err));
		d.dw = d.sym ? sym_dwarf(d.sym, &d.shift) : NULL;
		if (!d.dw) {
			if (d.sym)
				sym_close(d.sym);
			return NULL;
		}
	}
	struct da_file *out = xmalloc(sizeof(*out));
	*out = d;
	return out;
}

struct da_file *da_open(const char *path)
{
	struct da_file *d = open_dwarf(path);
	if (!d)
		return NULL;
	Dwarf *dw = d->dw;
	GElf_Ehdr eh;
	Elf *elf = dwarf_getelf(dw);
	int machine = elf && gelf_getehdr(elf, &eh) ? eh.e_machine : EM_NONE;
	d->x86_64 = machine == EM_X86_64;
	d->aarch64 = machine == EM_AARCH64;
	Dwarf_CU *unit = NULL;
	Dwarf_Die cu, split;
	uint8_t type;
	/* Every unit of .debug_info; a skeleton (-gsplit-dwarf: DWARF 5's,
	 * or DWARF 4's GNU extension) stands for its split unit, which
	 * libdw reads from the .dwo file the skeleton names (beside the
	 * object, else in its DW_AT_comp_dir). */
	while (dwarf_get_units(dw, unit, &unit, NULL, &type, &cu, &split) == 0) {
		if (type == DW_UT_type || type == DW_UT_split_type)
			continue;
		if (type == DW_UT_skeleton) {
			if (!split.addr) {
				if (!d->missing++)
					d->missing_dwo = da_dwo_name(&cu);
				continue;
			}
			cu = split;
		}
		if (!c_language(&cu) || collect_c(d, &cu) < 0)
			dwarf_getfuncs(&cu, collect, d, 0);
	}
	return d;
}

unsigned da_missing_dwo(const struct da_file *d, const char **first)
{
	*first = d->missing_dwo;
	return d->missing;
}

void da_close(struct da_file *d)
{
	if (!d)
		return;
	if (d->sym) {
		sym_close(d->sym); /* owns the Dwarf */
	} else {
		dwarf_end(d->dw);
		close(d->fd);
	}
	hm_free(&d->by_pc);
	free(d->fns);
	free(d->missing_dwo);
	free(d);
}

/* The type a DIE's DW_AT_type names, through typedefs and qualifiers;
 * 0 if there is none (void). */
static int type_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	Dwarf_Die t, *cur = die;
	for (int hops = 0; hops < 16; hops++) {
		if (!dwarf_attr_integrate(cur, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
			return 0;
		*out = t;
		int tag = dwarf_tag(out);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
		    tag != DW_TAG_restrict_type && tag != DW_TAG_atomic_type)
			return 1;
		cur = out;
	}
	return 0;
}


enum cls { CLS_NONE, CLS_GP, CLS_FP, CLS_GP2 };

/* A type's register class and format. */
static enum cls classify(Dwarf_Die *t, uint8_t *fmt)
{
	Dwarf_Word enc = 0;
	Dwarf_Attribute a;
	int size = dwarf_bytesize(t);
	switch (dwarf_tag(t)) {
	case DW_TAG_base_type:
		if (!dwarf_attr(t, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc) != 0 || size <= 0 || size > 8)
			return CLS_NONE;
		switch (enc) {
		case DW_ATE_float:
			if (size != 4 && size != 8)
				return CLS_NONE;
			*fmt = size == 8 ? sf_arg_fmt(SF_AT_DOUBLE, 8) : sf_arg_fmt(SF_AT_FLOAT, 4);
			return CLS_FP;
		case DW_ATE_signed_char:
		case DW_ATE_unsigned_char:
			*fmt = size == 1 ? sf_arg_fmt(SF_AT_CHAR, 1) : sf_arg_fmt(SF_AT_UINT, (unsigned)size);
			return CLS_GP;
		case DW_ATE_boolean:
			*fmt = sf_arg_fmt(SF_AT_BOOL, 1);
			return CLS_GP;
		case DW_ATE_signed:
			*fmt = sf_arg_fmt(SF_AT_SINT, (unsigned)size);
			return CLS_GP;
		case DW_ATE_unsigned:
			*fmt = sf_arg_fmt(SF_AT_UINT, (unsigned)size);
			return CLS_GP;
		case DW_ATE_UTF: /* Rust char: its code point */
			*fmt = sf_arg_fmt(SF_AT_CHAR, (unsigned)size);
			return CLS_GP;
		default:
			return CLS_NONE;
		}
	case DW_TAG_enumeration_type: {
		/* Signed or not as its underlying type (Rust's #[repr(u8)],
		 * C++'s enum : unsigned); without one, as C's int. */
		Dwarf_Die u;
		if (size <= 0 || size > 8)
			return CLS_NONE;
		int is_unsigned = type_of(t, &u) && dwarf_tag(&u) == DW_TAG_base_type &&
				  dwarf_attr(&u, DW_AT_encoding, &a) && dwarf_formudata(&a, &enc) == 0 &&
				  (enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char || enc == DW_ATE_boolean);
		*fmt = sf_arg_fmt(is_unsigned ? SF_AT_UINT : SF_AT_SINT, (unsigned)size);
		return CLS_GP;
	}
	case DW_TAG_pointer_type: {
		Dwarf_Die p;
		*fmt = sf_arg_fmt(SF_AT_PTR, 8);
		/* char * and const char *: a C string. Not unsigned char * or
		 * signed char * (uint8_t *, u8 *: bytes, such as SQLite's page
		 * buffers, which read as strings would cost a read each and
		 * show binary), as uftrace. */
		const char *pn;
		if (type_of(t, &p) && dwarf_tag(&p) == DW_TAG_base_type && dwarf_bytesize(&p) == 1 &&
		    dwarf_attr(&p, DW_AT_encoding, &a) && dwarf_formudata(&a, &enc) == 0 &&
		    (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char) && (pn = dwarf_diename(&p)) &&
		    !strcmp(pn, "char"))
			*fmt = sf_arg_fmt(SF_AT_STR, 4);
		return CLS_GP;
	}
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		*fmt = sf_arg_fmt(SF_AT_PTR, 8);
		return CLS_GP;
	case DW_TAG_structure_type: {
		/* Rust's &str and &[u8]: a pointer and a length, passed in two
		 * registers. */
		const char *name = dwarf_diename(t);
		if (size == 16 && name && (!strcmp(name, "&str") || !strcmp(name, "&[u8]") || !strcmp(name, "&mut str"))) {
			*fmt = sf_arg_fmt(SF_AT_RSTR, 4);
			return CLS_GP2;
		}
		return CLS_NONE;
	}
	default:
		return CLS_NONE;
	}
}

/* A typedef name of a byte-sized integer: uint8_t, int8_t, __u8, u8,
 * guint8 (ending in 8 or 8_t). */
static int byte_int_name(const char *name)
{
	size_t len = name ? strlen(name) : 0;
	return (len >= 1 && name[len - 1] == '8') || (len >= 3 && !strcmp(name + len - 3, "8_t"));
}

/* A char-encoded byte (DW_ATE_signed_char, unsigned_char) that the
 * type of die (a parameter, function or member) names through a typedef
 * such as uint8_t or int8_t is a number, as uftrace shows it and as Rust's
 * u8 is (DW_ATE_unsigned); a plain char, signed char or unsigned char
 * stays a char. *fmt (classify's) is changed so. */
static void byte_int(Dwarf_Die *die, uint8_t *fmt)
{
	Dwarf_Attribute a;
	Dwarf_Die t, *cur = die;
	Dwarf_Word enc;
	int named = 0;
	if (sf_arg_type(*fmt) != SF_AT_CHAR || sf_arg_size(*fmt) != 1)
		return;
	for (int hops = 0; hops < 16; hops++) {
		if (!dwarf_attr_integrate(cur, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
			return;
		int tag = dwarf_tag(&t);
		if (tag == DW_TAG_base_type)
			break;
		if (tag == DW_TAG_typedef && byte_int_name(dwarf_diename(&t)))
			named = 1;
		cur = &t;
	}
	if (named && dwarf_attr(&t, DW_AT_encoding, &a) && dwarf_formudata(&a, &enc) == 0)
		*fmt = sf_arg_fmt(enc == DW_ATE_signed_char ? SF_AT_SINT : SF_AT_UINT, 1);
}

/* The class and format of die's type (a parameter's, a function's return
 * value's) into *t and *fmt; CLS_NONE if it has none. */
static enum cls classify_of(Dwarf_Die *die, Dwarf_Die *t, uint8_t *fmt)
{
	if (!type_of(die, t))
		return CLS_NONE;
	enum cls c = classify(t, fmt);
	if (c != CLS_NONE)
		byte_int(die, fmt);
	return c;
}

/* ---- struct arguments (x86-64 System V, 3.2.3) ---- */

enum eb_class { EB_NONE, EB_INT, EB_SSE, EB_MEM };

static void eb_merge(int *eb, int c)
{
	if (*eb == EB_MEM || c == EB_MEM)
		*eb = EB_MEM;
	else if (*eb == EB_INT || c == EB_INT)
		*eb = EB_INT;
	else
		*eb = c;
}

static int class_of(Dwarf_Die *t, uint64_t off, int eb[2], int depth);

/* A scalar of size bytes at off: its eightbyte's class. */
static int class_scalar(int size, int cls, uint64_t off, int eb[2])
{
	if (size <= 0 || size > 8)
		return -1;
	if (off % (uint64_t)size) /* an unaligned field: MEMORY */
		cls = EB_MEM;
	if (off + (uint64_t)size > 16)
		return -1;
	eb_merge(&eb[off / 8], cls);
	return 0;
}

/* A C++ static data member (DWARF 4 lists it as a member, declared,
 * without a location): no bytes of the object. */
static int is_static_member(Dwarf_Die *m)
{
	return dwarf_hasattr(m, DW_AT_declaration) || dwarf_hasattr(m, DW_AT_external);
}

/* The members of a struct or union at off. */
static int class_members(Dwarf_Die *t, uint64_t off, int eb[2], int depth)
{
	Dwarf_Die m, mt;
	if (dwarf_child(t, &m) != 0)
		return 0;
	do {
		if (dwarf_tag(&m) != DW_TAG_member || is_static_member(&m))
			continue;
		Dwarf_Attribute a;
		Dwarf_Word at = 0;
		if (dwarf_attr(&m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &at) != 0)
			return -1; /* a location expression: not a plain C layout */
		if (dwarf_attr(&m, DW_AT_data_bit_offset, &a)) { /* a bit-field: DWARF 4+ */
			Dwarf_Word bits;
			if (dwarf_formudata(&a, &bits) != 0)
				return -1;
			at = bits / 8;
		}
		if (!type_of(&m, &mt))
			return -1;
		if (dwarf_hasattr(&m, DW_AT_bit_size)) { /* integer bits in the eightbyte they start in */
			if (off + at >= 16)
				return -1;
			eb_merge(&eb[(off + at) / 8], EB_INT);
			continue;
		}
		if (class_of(&mt, off + at, eb, depth + 1) < 0)
			return -1;
	} while (dwarf_siblingof(&m, &m) == 0);
	return 0;
}

/* An array's element type, count and element size (one dimension, a
 * known count of at most 16); -1 otherwise. */
static int array_shape(Dwarf_Die *t, Dwarf_Die *et, Dwarf_Word *count, int *esize)
{
	Dwarf_Die sub;
	Dwarf_Attribute a;
	Dwarf_Word upper;
	*count = 0;
	if (!type_of(t, et) || dwarf_child(t, &sub) != 0 || dwarf_tag(&sub) != DW_TAG_subrange_type)
		return -1;
	if (dwarf_attr(&sub, DW_AT_count, &a) && dwarf_formudata(&a, count) == 0)
		;
	else if (dwarf_attr(&sub, DW_AT_upper_bound, &a) && dwarf_formudata(&a, &upper) == 0)
		*count = upper + 1;
	else
		return -1;
	*esize = dwarf_bytesize(et);
	return dwarf_siblingof(&sub, &sub) == 0 || *esize <= 0 || *count > 16 ? -1 : 0;
}

/* The elements of an array at off. */
static int class_array(Dwarf_Die *t, uint64_t off, int eb[2], int depth)
{
	Dwarf_Die et;
	Dwarf_Word count;
	int esize;
	if (array_shape(t, &et, &count, &esize) < 0)
		return -1;
	for (Dwarf_Word i = 0; i < count; i++)
		if (class_of(&et, off + i * (Dwarf_Word)esize, eb, depth + 1) < 0)
			return -1;
	return 0;
}

/* Merges the classes of a value of type t at byte off of an aggregate into
 * eb; -1 when the layout is not one this knows for sure. */
static int class_of(Dwarf_Die *t, uint64_t off, int eb[2], int depth)
{
	Dwarf_Attribute a;
	Dwarf_Word enc;
	Dwarf_Die u;
	int size = dwarf_bytesize(t);
	if (depth > 8)
		return -1;
	switch (dwarf_tag(t)) {
	case DW_TAG_base_type:
		if (!dwarf_attr(t, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc) != 0)
			return -1;
		if (enc == DW_ATE_float)
			return size == 4 || size == 8 ? class_scalar(size, EB_SSE, off, eb) : -1; /* long double: x87 */
		if (enc == DW_ATE_complex_float)
			return -1;
		return class_scalar(size, EB_INT, off, eb);
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		return class_scalar(8, EB_INT, off, eb);
	case DW_TAG_enumeration_type:
		return class_scalar(size, EB_INT, off, eb);
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		return class_members(t, off, eb, depth);
	case DW_TAG_array_type:
		/* a vector member (SSE and SSEUP: one register for 16 bytes)
		 * is not a case this knows */
		return dwarf_hasattr(t, DW_AT_GNU_vector) ? -1 : class_array(t, off, eb, depth);
	case DW_TAG_typedef:
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
		return type_of(t, &u) ? class_of(&u, off, eb, depth + 1) : -1;
	default:
		return -1;
	}
}

static int is_aggregate(Dwarf_Die *t)
{
	int tag = dwarf_tag(t);
	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_class_type;
}

/* Whether the C ABI's rules decide how t is passed: C, or a C++ type
 * whose DWARF says so (DW_AT_calling_convention: a type that is not
 * trivially copyable goes by invisible reference). *by_ref for those. */
static int abi_known(Dwarf_Die *fn, Dwarf_Die *t, int *by_ref)
{
	Dwarf_Die cu;
	Dwarf_Attribute a;
	Dwarf_Word cc;
	*by_ref = 0;
	if (dwarf_attr(t, DW_AT_calling_convention, &a) && dwarf_formudata(&a, &cc) == 0) {
		*by_ref = cc == DW_CC_pass_by_reference;
		return cc == DW_CC_pass_by_reference || cc == DW_CC_pass_by_value;
	}
	int lang = dwarf_diecu(fn, &cu, NULL, NULL) ? dwarf_srclang(&cu) : -1;
	return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11;
}

/* How an aggregate of type t goes (x86-64): in *ngp integer and *nfp
 * vector registers, both 0 for memory (MEMORY class: larger than 16
 * bytes, or an unaligned field), eb the class of each eightbyte (EB_NONE
 * past its size; by reference: not set). 0, or -1 if not known for sure. */
static int aggregate_regs(Dwarf_Die *fn, Dwarf_Die *t, unsigned *ngp, unsigned *nfp, int eb[2])
{
	int by_ref, size = dwarf_bytesize(t);
	*ngp = *nfp = 0;
	eb[0] = eb[1] = EB_NONE;
	if (!abi_known(fn, t, &by_ref) || size <= 0)
		return -1;
	if (by_ref) {
		*ngp = 1; /* the address of a copy */
		return 0;
	}
	if (size > 16)
		return 0;
	if (class_of(t, 0, eb, 0) < 0)
		return -1;
	for (int i = 0; i < (size > 8 ? 2 : 1); i++) {
		if (eb[i] == EB_MEM)
			return *ngp = *nfp = 0, 0;
		if (eb[i] == EB_NONE) /* padding only: not a case this knows */
			return -1;
		*ngp += eb[i] == EB_INT;
		*nfp += eb[i] == EB_SSE;
	}
	return 0;
}

/* Whether t is a GNU vector type (__m128, __m256d, float32x4_t). */
static int is_vector(Dwarf_Die *t)
{
	return dwarf_tag(t) == DW_TAG_array_type && dwarf_hasattr(t, DW_AT_GNU_vector);
}

/* The integer registers a function's return value takes from its
 * arguments: 1 when it is returned in memory (the caller passes the
 * address in rdi), else 0; -1 if not known. */
static int hidden_return(struct da_file *d, Dwarf_Die *fn)
{
	Dwarf_Die t, cu;
	unsigned ngp, nfp;
	int eb[2], by_ref = 0;
	uint8_t fmt;
	Dwarf_Word vsize;
	if (d->x86_64 && type_of(fn, &t) && is_vector(&t) && dwarf_aggregate_size(&t, &vsize) == 0 && vsize > 16)
		return -1; /* in ymm0 (zmm0) with AVX, else in memory: rdi holds its address */
	if (!type_of(fn, &t) || !is_aggregate(&t) || classify(&t, &fmt) != CLS_NONE)
		return 0; /* a scalar, or a Rust &str in rax and rdx */
	if (d->aarch64) /* AAPCS64: the address goes in x8, no argument register */
		return abi_known(fn, &t, &by_ref) ? 0 : -1;
	if (!d->x86_64)
		return -1;
	/* rustc's own ABI returns an aggregate of more than two words
	 * through a hidden pointer, any other in registers. */
	if (dwarf_diecu(fn, &cu, NULL, NULL) && dwarf_srclang(&cu) == DW_LANG_Rust)
		return dwarf_bytesize(&t) > 16;
	if (aggregate_regs(fn, &t, &ngp, &nfp, eb) < 0)
		return -1;
	abi_known(fn, &t, &by_ref);
	return by_ref || (!ngp && !nfp);
}

/* ---- the values of a struct in registers ---- */

struct member {
	uint64_t off;
	uint8_t fmt;
};

/* The scalar members of a value of type t at byte off of an aggregate, in
 * order, into m (at most cap): 0, or -1 if one is not a scalar shown
 * as such (a bit-field, a union, a Rust &str) or there are too many. */
static int members_of(Dwarf_Die *t, uint64_t off, struct member *m, unsigned *n, unsigned cap, int depth)
{
	Dwarf_Die c, ct;
	Dwarf_Word count;
	int esize;
	uint8_t fmt = 0;
	if (depth > 8)
		return -1;
	switch (dwarf_tag(t)) {
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
		if (classify(t, &fmt) != CLS_NONE || dwarf_child(t, &c) != 0)
			return -1; /* a Rust &str, or no members */
		do {
			Dwarf_Attribute a;
			Dwarf_Word at = 0;
			if (dwarf_tag(&c) == DW_TAG_inheritance)
				return -1; /* a C++ base's members: not listed here */
			if (dwarf_tag(&c) != DW_TAG_member || is_static_member(&c))
				continue;
			if (dwarf_hasattr(&c, DW_AT_alignment))
				return -1; /* _Alignas: the struct's alignment, on the stack */
			if (dwarf_hasattr(&c, DW_AT_bit_size) ||
			    (dwarf_attr(&c, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &at) != 0))
				return -1;
			unsigned before = *n;
			if (!type_of(&c, &ct) || members_of(&ct, off + at, m, n, cap, depth + 1) < 0)
				return -1;
			if (*n == before + 1) /* a scalar member: uint8_t is a number */
				byte_int(&c, &m[before].fmt);
		} while (dwarf_siblingof(&c, &c) == 0);
		return 0;
	case DW_TAG_array_type:
		/* a vector (AAPCS64: one member of a homogeneous vector
		 * aggregate, not its elements) */
		if (dwarf_hasattr(t, DW_AT_GNU_vector) || array_shape(t, &ct, &count, &esize) < 0)
			return -1;
		for (Dwarf_Word i = 0; i < count; i++) {
			unsigned before = *n;
			if (members_of(&ct, off + i * (Dwarf_Word)esize, m, n, cap, depth + 1) < 0)
				return -1;
			if (*n == before + 1) /* a scalar element: uint8_t is a number */
				byte_int(t, &m[before].fmt);
		}
		return 0;
	default:
		if (classify(t, &fmt) == CLS_NONE || *n == cap || sf_arg_type(fmt) == SF_AT_RSTR)
			return -1;
		if (sf_arg_type(fmt) == SF_AT_STR) /* a member's char *: its address (no read in a struct) */
			fmt = sf_arg_fmt(SF_AT_PTR, 8);
		m[(*n)++] = (struct member){off, fmt};
		return 0;
	}
}

/* How an aggregate is passed, by the object's ABI. */
struct agg {
	unsigned ngp, nfp; /* the registers it takes; both 0: in memory */
	int eb[2];         /* in registers: each eightbyte's class, EB_INT or EB_SSE (EB_NONE past its size) */
	int hfa;           /* aarch64: a homogeneous float aggregate, one member per vector register */
	int by_ref;        /* its address in one integer register instead */
};

/* members_of's bound when classifying (struct_items shows fewer). */
#define CLASSIFY_MEMBERS 32

/* AAPCS64 (6.8.2): a homogeneous aggregate of 1-4 floats or doubles in as
 * many vector registers, any other composite of up to 16 bytes in one or
 * two integer registers (its bytes in order), a larger one by reference.
 * 0, or -1 if not known for sure (a union, a bit-field or a vector that
 * may make it an HFA or HVA, an over-aligned type). */
static int aggregate_regs_a64(Dwarf_Die *fn, Dwarf_Die *t, struct agg *a)
{
	int size = dwarf_bytesize(t);
	struct member m[CLASSIFY_MEMBERS];
	unsigned n = 0;
	if (!abi_known(fn, t, &a->by_ref) || size <= 0 || dwarf_hasattr(t, DW_AT_alignment))
		return -1;
	if (a->by_ref) {
		a->ngp = 1;
		return 0;
	}
	if (members_of(t, 0, m, &n, CLASSIFY_MEMBERS, 0) < 0) {
		/* Not a plain struct of scalars: sure not to be an HFA only if
		 * System V's classes find no float in it. */
		int eb[2] = {EB_NONE, EB_NONE};
		if (size > 64)
			return a->by_ref = 1, a->ngp = 1, 0;
		if (size > 16 || class_of(t, 0, eb, 0) < 0 || eb[0] == EB_SSE || eb[1] == EB_SSE)
			return -1;
		n = 0; /* bytes in integer registers, as below */
	}
	unsigned type = n ? sf_arg_type(m[0].fmt) : 0, same = n >= 1 && n <= 4;
	for (unsigned j = 0; j < n && same; j++)
		same = m[j].fmt == m[0].fmt && m[j].off == j * sf_arg_fixed_size(m[0].fmt);
	if (same && (type == SF_AT_DOUBLE || type == SF_AT_FLOAT) && (unsigned)size == n * sf_arg_fixed_size(m[0].fmt)) {
		a->hfa = 1;
		a->nfp = n;
		return 0;
	}
	if (size > 16)
		return a->by_ref = 1, a->ngp = 1, 0;
	a->ngp = size > 8 ? 2 : 1;
	a->eb[0] = EB_INT;
	a->eb[1] = size > 8 ? EB_INT : EB_NONE;
	return 0;
}

/* How an aggregate of type t is passed by the object's ABI; -1 if not
 * known for sure (or another architecture). */
static int agg_layout(struct da_file *d, Dwarf_Die *fn, Dwarf_Die *t, struct agg *a)
{
	memset(a, 0, sizeof(*a));
	if (d->aarch64)
		return aggregate_regs_a64(fn, t, a);
	if (!d->x86_64 || aggregate_regs(fn, t, &a->ngp, &a->nfp, a->eb) < 0)
		return -1;
	abi_known(fn, t, &a->by_ref);
	return 0;
}

/* A struct of type t in registers (layout a) as items: STRUCT named by
 * slot, then its members, each in the register of its eightbyte (of its
 * own, in an HFA): the integer ones from member register gp0 on, the
 * vector ones from fp0 (format/sf_args.h). The count of items, 0 if its
 * members cannot be shown (or not in cap items). */
static unsigned struct_items(Dwarf_Die *t, const struct agg *a, uint8_t slot, unsigned gp0, unsigned fp0,
			     uint8_t on_exit, struct da_item *items, unsigned cap)
{
	struct member m[SF_ARG_STRUCT_MAX];
	unsigned n = 0, reg[2];
	if (a->by_ref || cap < 2 ||
	    members_of(t, 0, m, &n, cap - 1 < SF_ARG_STRUCT_MAX ? cap - 1 : SF_ARG_STRUCT_MAX, 0) < 0 || !n)
		return 0;
	for (int i = 0; i < 2; i++)
		reg[i] = a->eb[i] == EB_SSE ? fp0++ : gp0++;
	items[0] = (struct da_item){slot, (uint8_t)(SF_AT_STRUCT | n << 4), on_exit};
	for (unsigned j = 0; j < n; j++) {
		unsigned e = (unsigned)(m[j].off / 8), byte = (unsigned)(m[j].off % 8);
		if (a->hfa) {
			items[1 + j] = (struct da_item){sf_arg_member_slot(fp0 + j, 1, 0), m[j].fmt, on_exit};
			continue;
		}
		if (e > 1 || byte + sf_arg_fixed_size(m[j].fmt) > 8 || a->eb[e] == EB_NONE || a->eb[e] == EB_MEM)
			return 0;
		items[1 + j] = (struct da_item){sf_arg_member_slot(reg[e], a->eb[e] == EB_SSE, byte), m[j].fmt, on_exit};
	}
	return n + 1;
}

/* The return value's items: a scalar's, or a struct's in registers (C). */
static unsigned return_items(struct da_file *d, Dwarf_Die *fn, struct da_item *items, unsigned cap)
{
	Dwarf_Die t;
	uint8_t fmt = 0;
	struct agg a;
	if (!cap || !type_of(fn, &t))
		return 0;
	enum cls c = classify_of(fn, &t, &fmt);
	if (c != CLS_NONE) {
		items[0] = (struct da_item){(uint8_t)(c == CLS_FP ? SF_ARG_SLOT_FP : 0), fmt, 1};
		return 1;
	}
	if (!is_aggregate(&t) || agg_layout(d, fn, &t, &a) < 0 || (!a.ngp && !a.nfp))
		return 0;
	return struct_items(&t, &a, 0, 0, 0, 1, items, cap);
}

#define STACK_UNKNOWN (~0u)

/* A struct passed in memory (x86-64) at word *stack of the stack
 * arguments (STACK_UNKNOWN once one before it could not be placed) as
 * items: STRUCT and its members, read from the stack at the entry
 * (format/sf_args.h); 0 if not shown. *stack moves past it (each
 * argument in memory takes whole 8-byte words, in order); STACK_UNKNOWN
 * if its alignment may be more than 8. */
static unsigned stack_items(Dwarf_Die *t, unsigned *stack, struct da_item *items, unsigned cap)
{
	struct member m[SF_ARG_STRUCT_MAX];
	unsigned n = 0, base = *stack;
	int size = dwarf_bytesize(t);
	if (base == STACK_UNKNOWN || size <= 0 || dwarf_hasattr(t, DW_AT_alignment) || cap < 2 ||
	    members_of(t, 0, m, &n, cap - 1 < SF_ARG_STRUCT_MAX ? cap - 1 : SF_ARG_STRUCT_MAX, 0) < 0 || !n) {
		*stack = STACK_UNKNOWN; /* a long double or an over-aligned member would move the next */
		return 0;
	}
	*stack = base + ((unsigned)size + 7) / 8;
	if (size > 64 || base > 63)
		return 0;
	items[0] = (struct da_item){(uint8_t)(SF_ARG_STACK | base), (uint8_t)(SF_AT_STRUCT | n << 4), 0};
	for (unsigned j = 0; j < n; j++) {
		/* A member may span two words (packed): the runtime loads its
		 * 8 bytes from its first byte on, within the struct's words. */
		unsigned word = (unsigned)(m[j].off / 8), byte = (unsigned)(m[j].off % 8);
		items[1 + j] = (struct da_item){(uint8_t)(SF_ARG_STACK | byte << 4 | word), m[j].fmt, 0};
	}
	return n + 1;
}

/* The integer argument registers the runtime saves: x86-64's six, all
 * eight of aarch64's (x0-x7). */
static unsigned gp_regs(const struct da_file *d)
{
	return d->aarch64 ? 8 : 6;
}

/* An item not recorded, of what kind (slot SF_ARG_SLOT_*). */
static struct da_item none_item(uint8_t slot)
{
	return (struct da_item){slot, sf_arg_fmt(SF_AT_NONE, 8), 0};
}

/* An argument past its registers is in the caller's outgoing arguments;
 * the runtime reads scalars only from registers, so it is marked, named
 * by its byte offset there when known ("stack8"), and the arguments
 * after it keep their registers (a double after six ints is still in
 * xmm0, or after eight in d0 on aarch64). It takes `words` of the stack,
 * aligned to `align`. */
static void stack_scalar(struct da_item *items, unsigned *n, unsigned *stack, unsigned words, unsigned align)
{
	uint8_t slot = SF_ARG_SLOT_STACK;
	if (*stack != STACK_UNKNOWN) {
		unsigned at = (*stack + align - 1) / align * align;
		if (at <= SF_ARG_SLOT_INDEX)
			slot = (uint8_t)(SF_ARG_STACK | at);
		*stack = at + words;
	}
	items[(*n)++] = none_item(slot);
}

/* An aggregate argument of type t (layout a) at registers gp, fp (taken
 * so far) and stack word *stack as items at items[*n]: its members'
 * values, or one item not recorded (by reference, members this does not
 * show). 0 and the registers moved past it, or -1 if those of the
 * arguments after it are not known. */
static int agg_arg(struct da_file *d, Dwarf_Die *t, const struct agg *a, unsigned *gp, unsigned *fp,
		   unsigned *stack, struct da_item *items, unsigned *n, unsigned cap)
{
	uint8_t slot = SF_ARG_SLOT_STACK;
	unsigned got = 0;
	if ((a->ngp || a->nfp) && *gp + a->ngp <= gp_regs(d) && *fp + a->nfp <= 8) {
		slot = (uint8_t)(a->ngp ? *gp + 1 : SF_ARG_SLOT_FP | (*fp + 1));
		got = struct_items(t, a, slot, *gp, *fp, 0, items + *n, cap - *n);
		*gp += a->ngp;
		*fp += a->nfp;
	} else if (d->aarch64) {
		/* On the stack (AAPCS64 C.3, C.13: no later argument of its
		 * register kind in a register), not read: marked. Each takes
		 * whole 8-byte words (its alignment is at most 8 here). */
		if (a->nfp)
			*fp = 8;
		else
			*gp = 8;
		stack_scalar(items, n, stack, a->by_ref ? 1 : (unsigned)(dwarf_bytesize(t) + 7) / 8, 1);
		return 0;
	} else { /* x86-64: all of it in memory, no register taken */
		got = stack_items(t, stack, items + *n, cap - *n);
	}
	if (!got)
		items[(*n)++] = (struct da_item){slot, sf_arg_fmt(SF_AT_NONE, 8), 0};
	*n += got;
	return 0;
}

static int reg_op(const Dwarf_Op *op);

/* Whether a child DIE of a function is a scope or a call: compilers put
 * one only after the function's parameters and variables (LLVM lists a
 * static local, even a local type, before the parameters: not these). */
static int scope_tag(int tag)
{
	return tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_call_site ||
	       tag == DW_TAG_GNU_call_site || tag == DW_TAG_label;
}

/* A loop over a function's parameters: *c moves to its next sibling,
 * 0 once that is a scope or a call (scope_tag), after every parameter.
 * Going on past them, dwarf_siblingof walks each one's whole subtree
 * (LLVM writes no DW_AT_sibling), in five loops a function: `sftrace
 * filter --args` with --auto-args on SQLite took 308M instructions, of
 * which da_items 150M (bench/README.md). */
static int next_param(Dwarf_Die *c)
{
	return !scope_tag(dwarf_tag(c)) && dwarf_siblingof(c, c) == 0 && !scope_tag(dwarf_tag(c));
}


/* Whether the function was optimised, which DWARF shows by tracking
 * values in registers (a location list, or a register, on a parameter)
 * or by call-site information (clang and gcc emit it only then). At -O0
 * every named parameter has a stack location. */
static int fn_optimized(Dwarf_Die *fn)
{
	Dwarf_Die c;
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t len;
	if (dwarf_hasattr(fn, DW_AT_call_all_calls) || dwarf_hasattr(fn, DW_AT_GNU_all_call_sites))
		return 1;
	if (dwarf_child(fn, &c) != 0)
		return 0;
	do {
		if (dwarf_tag(&c) != DW_TAG_formal_parameter || !dwarf_attr(&c, DW_AT_location, &a))
			continue;
		unsigned form = dwarf_whatform(&a);
		if (form == DW_FORM_sec_offset || form == DW_FORM_loclistx || form == DW_FORM_data4 ||
		    form == DW_FORM_data8)
			return 1;
		if (dwarf_getlocation(&a, &ops, &len) == 0 && len && reg_op(&ops[0]) >= 0)
			return 1;
	} while (next_param(&c));
	return 0;
}

/* A parameter DWARF gives no value anywhere (no location, no constant):
 * optimized out, its register or stack slot left unset by the caller
 * (clang -O2 passes nothing for a parameter the callee does not use), when
 * it is named (a named one always has a location at -O0) or its function
 * was optimised. clang gives an unnamed C++ parameter no location at -O0,
 * where its register does hold it. */
static int optimized_out(Dwarf_Die *param, int optimized)
{
	if (dwarf_hasattr(param, DW_AT_location) || dwarf_hasattr(param, DW_AT_const_value))
		return 0;
	return optimized || dwarf_diename(param) != NULL;
}

/* abi_items' walk: the registers and stack words taken so far. */
struct abi_walk {
	struct da_file *d;
	Dwarf_Die *fn;
	unsigned gp, fp, stack;
	int lost; /* the registers of what follows are unknown */
	int optimized;
	int fp_lost;         /* x86-64: the vector registers taken are unknown (a 32- or 64-byte vector before) */
	int code_read;       /* code and code_len are looked up (once, when needed) */
	const uint8_t *code; /* the function's bytes (NULL: not in this file) */
	size_t code_len;
};

/* The bytes of the function at DWARF address entry to high_pc, from the
 * file's own executable sections; NULL if the DWARF is a separate file's
 * (whose code sections have no bytes) or they are not found. */
static const uint8_t *fn_code(struct da_file *d, Dwarf_Die *fn, Dwarf_Addr entry, size_t *len)
{
	Elf *elf = d->fd >= 0 ? dwarf_getelf(d->dw) : NULL;
	Elf_Scn *scn = NULL;
	Dwarf_Addr hi;
	if (!elf || dwarf_highpc(fn, &hi) != 0 || hi <= entry)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    entry < sh.sh_addr || hi > sh.sh_addr + sh.sh_size)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size != sh.sh_size)
			return NULL;
		*len = (size_t)(hi - entry);
		return (const uint8_t *)data->d_buf + (entry - sh.sh_addr);
	}
	return NULL;
}

/* Whether a struct in memory at stack word `word`, size bytes, holds what
 * the caller passed. DWARF gives it DW_OP_fbreg whether the function uses
 * it or not, and clang -O2 lets a caller that knows the function leave
 * an unused one unset (skeptic 29m's after2 showed the stack's leftovers,
 * `{140736447202408, 94753896926608}`); it cannot know that of a function
 * built without optimisation, nor infer it from another file. So: an
 * unoptimised function's, or one its code is seen to load from
 * (x86_reads.h). */
static int stack_struct_real(struct abi_walk *w, unsigned word, int size)
{
	Dwarf_Addr entry;
	if (!w->optimized)
		return 1;
	if (!w->code_read && dwarf_lowpc(w->fn, &entry) == 0)
		w->code = fn_code(w->d, w->fn, entry, &w->code_len);
	w->code_read = 1;
	return w->code && size > 0 &&
	       x86_reads_stack_arg(w->code, w->code_len, (int64_t)word * 8, (int64_t)word * 8 + size);
}

/* A parameter of a type that classify gives no format, whose place the
 * ABI still tells (x86-64 System V 3.2.3, AAPCS64 6.8.2): __int128, long
 * double and _Float128, _Complex, vectors. Its item is not recorded,
 * named by its first register when in registers; the registers and stack
 * words it takes are taken, so the parameters after it keep theirs. 0, or
 * -1 if its place is not known for sure (what follows is then unknown). */
static int other_param(struct abi_walk *w, Dwarf_Die *t, struct da_item *items, unsigned *n)
{
	struct da_file *d = w->d;
	Dwarf_Attribute a;
	Dwarf_Word enc = 0;
	Dwarf_Word bytes = 0;
	/* a vector's DWARF (clang's) may have no byte size: its elements' */
	int size = dwarf_aggregate_size(t, &bytes) == 0 && bytes <= 64 ? (int)bytes : -1;
	unsigned ngp = 0, nfp = 0, words = (unsigned)(size + 7) / 8, align = 1;
	if (size <= 0 || (!d->x86_64 && !d->aarch64))
		return -1;
	if (dwarf_tag(t) == DW_TAG_base_type) {
		if (!dwarf_attr(t, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc) != 0)
			return -1;
		if ((enc == DW_ATE_signed || enc == DW_ATE_unsigned) && size == 16) {
			/* __int128: a pair of integer registers (aarch64: from an
			 * even one), else memory, 16-aligned */
			ngp = 2;
			align = 2;
		} else if (enc == DW_ATE_float && size == 16) {
			/* aarch64's long double and x86-64's _Float128 (binary128):
			 * one vector register; x86-64's long double (x87): memory */
			const char *name = dwarf_diename(t);
			nfp = d->aarch64 || (name && strstr(name, "128"));
			align = 2;
		} else if (enc == DW_ATE_complex_float && (size == 8 || size == 16 || size == 32)) {
			/* x86-64: each eightbyte SSE (complex long double: memory);
			 * aarch64: a homogeneous aggregate of its two parts */
			nfp = d->aarch64 ? 2 : size == 32 ? 0 : (unsigned)size / 8;
			align = size == 32 ? 2 : 1;
		} else {
			return -1;
		}
	} else if (is_vector(t)) {
		if (size == 8 || size == 16) { /* one xmm / v register */
			nfp = 1;
			align = words;
		} else if (d->x86_64 && (size == 32 || size == 64)) {
			/* A ymm (zmm) register when the function is built with AVX
			 * (AVX-512), else memory: no integer register either way,
			 * but the vector registers and the stack words after it
			 * are not known. */
			items[(*n)++] = none_item(SF_ARG_SLOT_UNKNOWN);
			w->fp_lost = 1;
			w->stack = STACK_UNKNOWN;
			return 0;
		} else {
			return -1;
		}
	} else {
		return -1;
	}
	if (ngp) {
		unsigned gp = w->gp + (d->aarch64 ? (w->gp & 1) : 0); /* AAPCS64 C.8: an even register */
		if (gp + ngp <= gp_regs(d)) {
			items[(*n)++] = none_item((uint8_t)(gp + 1));
			w->gp = gp + ngp;
			return 0;
		}
		/* x86-64: clang before 18 split an __int128 between r9 and the
		 * stack, or left it 8-aligned there: not known for sure. */
		if (d->x86_64)
			return -1;
		w->gp = gp_regs(d); /* C.11: no integer register after it */
	} else if (nfp) {
		if (w->fp_lost) {
			items[(*n)++] = none_item(SF_ARG_SLOT_UNKNOWN);
			return 0;
		}
		if (w->fp + nfp <= 8) {
			items[(*n)++] = none_item((uint8_t)(SF_ARG_SLOT_FP | (w->fp + 1)));
			w->fp += nfp;
			return 0;
		}
		if (d->aarch64)
			w->fp = 8; /* C.3 */
	}
	stack_scalar(items, n, &w->stack, words, align);
	return 0;
}

/* One parameter's items at items[*n]; -1 if the items stop here. */
static int abi_param(struct abi_walk *w, Dwarf_Die *child, struct da_item *items, unsigned *n, unsigned cap)
{
	struct da_file *d = w->d;
	Dwarf_Die t;
	if (w->lost) {
		items[(*n)++] = none_item(SF_ARG_SLOT_UNKNOWN);
		return 0;
	}
	uint8_t fmt = 0;
	enum cls c = classify_of(child, &t, &fmt);
	struct agg a;
	if (c == CLS_NONE && is_aggregate(&t) && agg_layout(d, w->fn, &t, &a) == 0 && !(w->fp_lost && a.nfp)) {
		/* Its registers (or none) are known, so those of the
		 * arguments after it are. */
		unsigned first = *n, word = w->stack;
		int r = agg_arg(d, &t, &a, &w->gp, &w->fp, &w->stack, items, n, cap);
		if (r == 0 && *n > first && (items[first].slot & SF_ARG_STACK) &&
		    sf_arg_type(items[first].fmt) == SF_AT_STRUCT && !stack_struct_real(w, word, dwarf_bytesize(&t))) {
			items[first] = none_item(SF_ARG_SLOT_STACK);
			*n = first + 1;
		}
		return r;
	}
	if (c == CLS_NONE && !is_aggregate(&t) && other_param(w, &t, items, n) == 0)
		return 0;
	if (c == CLS_FP && w->fp_lost) { /* in a vector register or on the stack: which is not known */
		items[(*n)++] = none_item(SF_ARG_SLOT_UNKNOWN);
		return 0;
	}
	unsigned need = c == CLS_GP2 ? 2 : 1;
	if (c == CLS_NONE || (c == CLS_GP2 && w->gp == gp_regs(d) - 1)) { /* a Rust pair split between r9 (x7) and the stack */
		if (!d->x86_64 && !d->aarch64)
			return -1;
		w->lost = 1;
		items[(*n)++] = none_item(SF_ARG_SLOT_UNKNOWN);
	} else if (c == CLS_FP && w->fp < 8) {
		items[(*n)++] = (struct da_item){(uint8_t)(SF_ARG_SLOT_FP | ++w->fp), fmt, 0};
	} else if (c != CLS_FP && w->gp + need <= gp_regs(d)) {
		items[(*n)++] = (struct da_item){(uint8_t)(w->gp + 1), fmt, 0};
		w->gp += need;
	} else if (d->x86_64 || d->aarch64) {
		/* aarch64 gives each scalar on the stack a word of its own
		 * (Linux's AAPCS64), as x86-64 does. */
		stack_scalar(items, n, &w->stack, need, 1);
	} else {
		return -1;
	}
	return 0;
}

/* The System V (or AAPCS64) registers of each parameter, in order. Every
 * parameter gets an item: one past the registers (or an x86-64 long
 * double) is marked as on the stack, and from the first one whose
 * registers are not known for sure each is marked unknown. A parameter
 * DWARF says is optimized out takes its registers (or stack words) but
 * is marked so, whatever they hold. */
/* Whether a formal parameter follows the one at c. */
static int more_params(const Dwarf_Die *c)
{
	Dwarf_Die k = *c;
	while (next_param(&k))
		if (dwarf_tag(&k) == DW_TAG_formal_parameter)
			return 1;
	return 0;
}

/* The parameters of a function past SF_ARG_MAX_ITEMS items (more than 24,
 * or struct members that take the room): each parameter's items go in
 * the room short of the last one, which a parameter takes only if it is
 * the last; else the last item is a NONE of slot SF_ARG_SLOT_REST for
 * the parameters from there on (`<unrecorded>`, named `rest`): what the
 * limit cuts is marked, as a stack argument is (skeptic 29u). A struct
 * whose members do not fit the room left is one NONE item (agg_arg). */
static unsigned abi_items(struct da_file *d, Dwarf_Die *fn, unsigned gp, struct da_item *items, unsigned cap)
{
	Dwarf_Die child;
	unsigned n = 0;
	struct abi_walk w = {d, fn, gp, 0, 0, 0, fn_optimized(fn), 0, 0, NULL, 0};
	if (dwarf_child(fn, &child) != 0)
		return 0;
	do {
		if (dwarf_tag(&child) != DW_TAG_formal_parameter)
			continue;
		/* whether it is the last matters only near the end (a
		 * parameter takes 1 + SF_ARG_STRUCT_MAX items at most): no
		 * walk of the siblings for each parameter of each function */
		int last = n + 1 + SF_ARG_STRUCT_MAX >= cap && !more_params(&child);
		if (n + 1 >= cap && !last) {
			items[n++] = none_item(SF_ARG_SLOT_REST);
			break;
		}
		unsigned first = n;
		if (abi_param(&w, &child, items, &n, last ? cap : cap - 1) < 0)
			break;
		if (n > first && optimized_out(&child, w.optimized)) {
			items[first] = none_item(SF_ARG_SLOT_GONE);
			n = first + 1;
		}
	} while (next_param(&child));
	return n;
}

/* ---- functions whose registers are not System V's ---- */

/* LLVM's DW_AT_calling_convention values (llvm/BinaryFormat/Dwarf.def). */
#define DW_CC_LLVM_Win64 0xc1
#define DW_CC_LLVM_X86_64SysV 0xc2

enum conv { CONV_ABI, CONV_WIN64, CONV_WHERE_DWARF_SAYS, CONV_NOCALL, CONV_UNKNOWN };

/* A parameter's location at the function's entry. XRay's sled comes
 * before the code whose locations DWARF gives, so a location list may
 * start right after it (11 bytes on x86-64): that is where the entry's
 * value is. */
enum loc { LOC_NONE, LOC_REG, LOC_CONST };

#define X86_64_SLED 11

/* entry_ops' answers for the parameters of the function da_items works
 * on, by DIE offset: conv_of's look for a constant (resigned) and
 * abi_disagrees' check each ask for every parameter's entry location,
 * and a location list that starts after the sled is walked twice for it
 * (the entry, then past the sled): `sftrace filter --args` with
 * --auto-args on SQLite's driver spent 26M of its 130M instructions in
 * entry_ops. Emptied by da_items for each function (the expressions are
 * libdw's, valid until dwarf_end). */
#define EOPS_MAX 32
static struct {
	unsigned n;
	struct {
		Dwarf_Off off;
		Dwarf_Op *ops;
		size_t len;
		int found;
	} e[EOPS_MAX];
} eops;

/* The location expression of param at the entry (or right after the
 * sled), not cached; 0 if none covers it. (dwarf_getlocations, one walk
 * of the list for both addresses, cost more: 121M -> 176M.) */
static int entry_ops_read(Dwarf_Die *param, Dwarf_Addr entry, Dwarf_Op **ops, size_t *len)
{
	Dwarf_Attribute a;
	if (!dwarf_attr(param, DW_AT_location, &a))
		return 0;
	if (dwarf_getlocation_addr(&a, entry, ops, len, 1) < 1 &&
	    dwarf_getlocation_addr(&a, entry + X86_64_SLED, ops, len, 1) < 1)
		return 0;
	return *len > 0;
}

/* entry_ops_read, once per parameter of the function (eops). */
static int entry_ops(Dwarf_Die *param, Dwarf_Addr entry, Dwarf_Op **ops, size_t *len)
{
	Dwarf_Off off = dwarf_dieoffset(param);
	for (unsigned i = 0; i < eops.n; i++)
		if (eops.e[i].off == off) {
			*ops = eops.e[i].ops;
			*len = eops.e[i].len;
			return eops.e[i].found;
		}
	int found = entry_ops_read(param, entry, ops, len);
	if (eops.n < EOPS_MAX)
		eops.e[eops.n++] = (typeof(eops.e[0])){off, found ? *ops : NULL, found ? *len : 0, found};
	return found;
}

/* The DWARF register op at ops[0], -1 if it is not one. */
static int reg_op(const Dwarf_Op *op)
{
	if (op->atom >= DW_OP_reg0 && op->atom <= DW_OP_reg31)
		return op->atom - DW_OP_reg0;
	return op->atom == DW_OP_regx ? (int)op->number : -1;
}

/* A value of two 8-byte pieces (a Rust &str: pointer, length) at the
 * entry: the register of each, -1 for a piece in none (optimized out);
 * 0 if the location is not that. */
static int entry_pieces(Dwarf_Die *param, Dwarf_Addr entry, int reg[2])
{
	Dwarf_Op *ops;
	size_t len, k = 0;
	if (!entry_ops(param, entry, &ops, &len))
		return 0;
	for (int i = 0; i < 2; i++) {
		reg[i] = -1;
		if (k < len && ops[k].atom != DW_OP_piece && (reg[i] = reg_op(&ops[k++])) < 0)
			return 0; /* memory, a computed value: not a register's */
		if (k >= len || ops[k].atom != DW_OP_piece || ops[k].number != 8)
			return 0;
		k++;
	}
	return k == len;
}

static enum loc entry_location(Dwarf_Die *param, Dwarf_Addr entry, unsigned *reg)
{
	Dwarf_Op *ops;
	size_t len;
	if (dwarf_hasattr(param, DW_AT_const_value))
		return LOC_CONST;
	if (!entry_ops(param, entry, &ops, &len))
		return LOC_NONE;
	unsigned op = ops[0].atom;
	if ((op >= DW_OP_lit0 && op <= DW_OP_lit31) || (op >= DW_OP_const1u && op <= DW_OP_consts) ||
	    op == DW_OP_implicit_value)
		return LOC_CONST;
	if (len == 1 && op >= DW_OP_reg0 && op <= DW_OP_reg31) {
		*reg = op - DW_OP_reg0;
		return LOC_REG;
	}
	if (len == 1 && op == DW_OP_regx) {
		*reg = (unsigned)ops[0].number;
		return LOC_REG;
	}
	return LOC_NONE;
}

/* Whether the optimiser gave a private function another signature than
 * its source's: a parameter is a constant at the entry (clang drops it
 * from the call when every caller passes the same value). */
static int resigned(Dwarf_Die *fn, Dwarf_Addr entry)
{
	Dwarf_Die child;
	unsigned reg;
	if (dwarf_child(fn, &child) != 0)
		return 0;
	do
		if (dwarf_tag(&child) == DW_TAG_formal_parameter && entry_location(&child, entry, &reg) == LOC_CONST)
			return 1;
	while (next_param(&child));
	return 0;
}

/* A Rust closure's body: its environment (by reference, or by value
 * when it is a FnOnce, in no register when empty) comes first, in
 * registers DWARF does not list as a parameter's, so only the entry
 * locations tell where the declared ones are. */
static int rust_closure(Dwarf_Die *fn)
{
	Dwarf_Die cu;
	const char *name = dwarf_diename(fn);
	return name && !strncmp(name, "{closure#", 9) && dwarf_diecu(fn, &cu, NULL, NULL) &&
	       dwarf_srclang(&cu) == DW_LANG_Rust;
}

static enum conv conv_of(struct da_file *d, Dwarf_Die *fn, Dwarf_Addr entry)
{
	Dwarf_Attribute a;
	Dwarf_Word cc = DW_CC_normal;
	if (dwarf_attr(fn, DW_AT_calling_convention, &a) && dwarf_formudata(&a, &cc) != 0)
		return CONV_UNKNOWN;
	if (cc == DW_CC_nocall)
		return d->x86_64 ? CONV_NOCALL : CONV_UNKNOWN;
	if (cc == DW_CC_normal && (resigned(fn, entry) || rust_closure(fn)))
		return d->x86_64 ? CONV_WHERE_DWARF_SAYS : CONV_UNKNOWN;
	if (cc == DW_CC_normal || cc == DW_CC_program || (d->x86_64 && cc == DW_CC_LLVM_X86_64SysV))
		return CONV_ABI; /* DW_CC_program: a main program, called as any function */
	return d->x86_64 && cc == DW_CC_LLVM_Win64 ? CONV_WIN64 : CONV_UNKNOWN;
}

/* The argument slot of x86-64 DWARF register reg (rdi rsi rdx rcx r8 r9:
 * 5 4 1 2 8 9; xmm0-7: 17-24), 0 if none. */
static uint8_t slot_of_dwarf_reg(unsigned reg, enum cls c)
{
	static const signed char gp[] = {-1, 3, 4, -1, 2, 1, -1, -1, 5, 6};
	if (c == CLS_FP)
		return reg >= 17 && reg <= 24 ? (uint8_t)(SF_ARG_SLOT_FP | (reg - 16)) : 0;
	return c == CLS_GP && reg < sizeof(gp) && gp[reg] > 0 ? (uint8_t)gp[reg] : 0;
}

/* One item per parameter, each from its own DIE, class and position
 * (item_of), in order; the count. */
struct param_walk {
	Dwarf_Addr entry;
	struct da_item (*item_of)(const struct param_walk *w, Dwarf_Die *param, enum cls c, uint8_t fmt,
				  unsigned pos);
};

static int more_params(const Dwarf_Die *c);

static unsigned param_items(Dwarf_Die *fn, const struct param_walk *w, struct da_item *items, unsigned cap)
{
	Dwarf_Die child, t;
	unsigned n = 0;
	if (dwarf_child(fn, &child) != 0)
		return 0;
	do {
		if (dwarf_tag(&child) != DW_TAG_formal_parameter)
			continue;
		if (n + 1 >= cap && more_params(&child)) { /* the last item marks the rest (cut_params) */
			items[n++] = none_item(SF_ARG_SLOT_REST);
			break;
		}
		uint8_t fmt = 0;
		enum cls c = classify_of(&child, &t, &fmt);
		items[n] = w->item_of(w, &child, c, fmt, n);
		n++;
	} while (next_param(&child));
	return n;
}

/* A re-signed function (DW_CC_nocall: rustc's internal calls; a C
 * function with a constant parameter): each parameter from the register
 * its entry location names, "<optimized out>" where it is a constant,
 * "<unrecorded>" where DWARF says neither. */
static struct da_item located_item(const struct param_walk *w, Dwarf_Die *param, enum cls c, uint8_t fmt,
				   unsigned pos)
{
	unsigned reg = 0;
	uint8_t slot = 0;
	int pair[2];
	(void)pos;
	if (optimized_out(param, 1))
		return none_item(SF_ARG_SLOT_GONE);
	if (c == CLS_GP2 && entry_pieces(param, w->entry, pair)) {
		/* A &str: its pointer and length in consecutive argument
		 * registers, as the runtime reads them; its pointer in none:
		 * optimized out (the function reads only the length). */
		uint8_t s0 = pair[0] < 0 ? 0 : slot_of_dwarf_reg((unsigned)pair[0], CLS_GP);
		uint8_t s1 = pair[1] < 0 ? 0 : slot_of_dwarf_reg((unsigned)pair[1], CLS_GP);
		if (s0 && s1 == s0 + 1)
			return (struct da_item){s0, fmt, 0};
		return none_item(pair[0] < 0 ? SF_ARG_SLOT_GONE : SF_ARG_SLOT_UNKNOWN);
	}
	enum loc l = entry_location(param, w->entry, &reg);
	if (l == LOC_REG)
		slot = slot_of_dwarf_reg(reg, c);
	return slot ? (struct da_item){slot, fmt, 0} : none_item(l == LOC_CONST ? SF_ARG_SLOT_GONE : SF_ARG_SLOT_UNKNOWN);
}

/* Whether param's entry location is elsewhere than item it (abi_items')
 * says: a register the ABI does not give it, or a &str whose pointer is
 * in none. */
static int param_disagrees(Dwarf_Die *param, Dwarf_Addr entry, const struct da_item *it)
{
	unsigned type = sf_arg_type(it->fmt), reg, idx = it->slot & SF_ARG_SLOT_INDEX;
	int pair[2];
	if (type == SF_AT_NONE || type == SF_AT_STRUCT || (it->slot & SF_ARG_STACK) || !idx)
		return 0;
	if (type == SF_AT_RSTR)
		return entry_pieces(param, entry, pair) &&
		       (pair[0] < 0 || pair[1] < 0 || slot_of_dwarf_reg((unsigned)pair[0], CLS_GP) != it->slot ||
			slot_of_dwarf_reg((unsigned)pair[1], CLS_GP) != it->slot + 1);
	if (entry_location(param, entry, &reg) != LOC_REG)
		return 0;
	return slot_of_dwarf_reg(reg, it->slot & SF_ARG_SLOT_FP ? CLS_FP : CLS_GP) != it->slot;
}

/* Whether DWARF's entry locations put a parameter elsewhere than the
 * ABI's items (abi_items', one top-level item per parameter) say: the
 * optimiser re-signed the function without DW_CC_nocall (rustc, when
 * LLVM drops a slice's unused pointer: bs(b: &[u8], n) gets b's length
 * in rdi and n in rsi). At the entry every value is where the caller put
 * it, so a location there is the call's own register. */
static int abi_disagrees(Dwarf_Die *fn, Dwarf_Addr entry, const struct da_item *items, unsigned n)
{
	Dwarf_Die child;
	unsigned k = 0;
	if (dwarf_child(fn, &child) != 0)
		return 0;
	do {
		if (dwarf_tag(&child) != DW_TAG_formal_parameter)
			continue;
		if (k >= n)
			break;
		const struct da_item *it = &items[k];
		k += 1 + (sf_arg_type(it->fmt) == SF_AT_STRUCT ? sf_arg_struct_count(it->fmt) : 0);
		if (param_disagrees(&child, entry, it))
			return 1;
	} while (next_param(&child));
	return 0;
}

/* The Microsoft x64 convention (ms_abi): the first four parameters by
 * position in rcx rdx r8 r9 (System V's 4th, 3rd, 5th and 6th) or
 * xmm0-3, the others on the stack; an aggregate in one register if it
 * has 1, 2, 4 or 8 bytes, else by reference: not recorded. */
static struct da_item win64_item(const struct param_walk *w, Dwarf_Die *param, enum cls c, uint8_t fmt,
				 unsigned pos)
{
	static const uint8_t gp[] = {4, 3, 5, 6};
	(void)w;
	(void)param;
	if (pos >= 4)
		return none_item(SF_ARG_SLOT_STACK);
	if (c == CLS_FP)
		return (struct da_item){(uint8_t)(SF_ARG_SLOT_FP | (pos + 1)), fmt, 0};
	return c == CLS_GP ? (struct da_item){gp[pos], fmt, 0} : none_item(SF_ARG_SLOT_UNKNOWN);
}

/* Whether an entry's items make a plan the runtime takes whole: at most
 * SF_ARG_MAX_VALUES items besides the STRUCT heads and the NONE marks
 * (neither has a value), and as a FIXED payload within one ARGS event
 * (sf_args_layout's bounds; strings have none here: the runtime cuts a
 * coded payload where it must). */
static int plan_fits(const struct da_item *items, unsigned n)
{
	unsigned vals = 0, f = 2 * n, v = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned type = sf_arg_type(items[i].fmt);
		if (type == SF_AT_STRUCT || type == SF_AT_NONE)
			continue;
		vals++;
		unsigned sz = sf_arg_fixed_size(items[i].fmt);
		if (sz) {
			sf_arg_fixed_next(&f, sz);
			sf_arg_fixed_next(&v, sz);
		}
	}
	return n <= SF_ARG_MAX_ITEMS && vals <= SF_ARG_MAX_VALUES && 8 + f <= 8 * SF_ARGS_MAX_RECORDS &&
	       v <= 8 * SF_ARGS_VALUES_MAX;
}

unsigned da_items(struct da_file *d, uint64_t vaddr, struct da_item *items, unsigned cap)
{
	const uint64_t *k = d ? hm_find(&d->by_pc, vaddr) : NULL;
	Dwarf_Die fn, t;
	Dwarf_Addr entry;
	uint8_t fmt;
	if (!k)
		return 0;
	fn = d->fns[*k - 1];
	if (dwarf_lowpc(&fn, &entry) != 0)
		return 0;
	eops.n = 0; /* another function's parameters (entry_ops) */
	unsigned n, all = cap, pcap;
	/* The entry's items and the exit's each make a plan of up to
	 * SF_ARG_MAX_ITEMS: a struct that fills the entry's leaves the
	 * return value its own. STRUCT heads have no value, so the items
	 * may be more than SF_ARG_MAX_VALUES (six two-int structs and 8
	 * doubles, every x86-64 argument register: 26 items, 20 values);
	 * abi_items cuts at `cap` items, so fewer until they fit
	 * (plan_fits). One item a parameter (param_items): values only. */
	if (cap > SF_ARG_MAX_ITEMS)
		cap = SF_ARG_MAX_ITEMS;
	pcap = cap < SF_ARG_MAX_VALUES ? cap : SF_ARG_MAX_VALUES;
	switch (conv_of(d, &fn, entry)) {
	case CONV_ABI: {
		int hidden = hidden_return(d, &fn);
		if (hidden < 0) {
			/* rdi may hold the return value's address (a 32-byte
			 * vector: in ymm0 with AVX, else in memory): the ABI
			 * cannot place the parameters, their entry locations
			 * may; the others are marked, none dropped. */
			n = param_items(&fn, &(struct param_walk){entry, located_item}, items, pcap);
			break;
		}
		for (unsigned c = cap;; c--) {
			n = abi_items(d, &fn, (unsigned)hidden, items, c);
			if (c <= pcap || plan_fits(items, n))
				break;
		}
		if (d->x86_64 && abi_disagrees(&fn, entry, items, n))
			n = param_items(&fn, &(struct param_walk){entry, located_item}, items, pcap);
		break;
	}
	case CONV_WHERE_DWARF_SAYS:
		n = param_items(&fn, &(struct param_walk){entry, located_item}, items, pcap);
		break;
	case CONV_NOCALL:
		/* LLVM's dead argument elimination re-signed it: the
		 * parameters are where their entry locations say. Its return
		 * value may be gone (no caller used it: rax is whatever was
		 * left there) or cut to the part the callers use (a &str's
		 * length alone), and DWARF tells neither: the prototype is
		 * not the machine's, so the value is marked, as gdb refuses
		 * to show a DW_CC_nocall function's (DESIGN.md,
		 * "--auto-args"). */
		n = param_items(&fn, &(struct param_walk){entry, located_item}, items, pcap);
		if (n < all && type_of(&fn, &t)) {
			items[n++] = (struct da_item){0, sf_arg_fmt(SF_AT_NONE, 8), 1};
			return n;
		}
		break;
	case CONV_WIN64:
		n = param_items(&fn, &(struct param_walk){entry, win64_item}, items, pcap);
		/* A scalar comes back in rax or xmm0 as in System V. */
		if (type_of(&fn, &t) && (is_aggregate(&t) || classify(&t, &fmt) == CLS_NONE))
			return n;
		break;
	default:
		return 0;
	}
	all -= n;
	return n + return_items(d, &fn, items + n, all < SF_ARG_MAX_ITEMS ? all : SF_ARG_MAX_ITEMS);
}
