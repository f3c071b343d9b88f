/* record --auto-args: prototypes from DWARF (dwarf_args.h). */
#include "lib/dwarf_args.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/sf_args.h"
#include "lib/hashmap.h"
#include "lib/util.h"

struct da_file {
	int fd;
	Dwarf *dw;
	struct hashmap by_pc; /* low pc -> DIE offset of its subprogram */
};

static int collect(Dwarf_Die *die, void *arg)
{
	struct da_file *d = arg;
	Dwarf_Addr lo;
	if (dwarf_lowpc(die, &lo) == 0)
		*hm_put(&d->by_pc, lo, NULL) = dwarf_dieoffset(die);
	return DWARF_CB_OK;
}

struct da_file *da_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return NULL;
	}
	struct da_file *d = xcalloc(1, sizeof(*d));
	d->fd = fd;
	d->dw = dw;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		if (dwarf_offdie(dw, off + hsize, &cu))
			dwarf_getfuncs(&cu, collect, d, 0);
		off = next;
	}
	return d;
}

void da_close(struct da_file *d)
{
	if (!d)
		return;
	dwarf_end(d->dw);
	close(d->fd);
	hm_free(&d->by_pc);
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
	case DW_TAG_enumeration_type:
		if (size <= 0 || size > 8)
			return CLS_NONE;
		*fmt = sf_arg_fmt(SF_AT_SINT, (unsigned)size);
		return CLS_GP;
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

unsigned da_items(struct da_file *d, uint64_t vaddr, struct da_item *items, unsigned cap)
{
	const uint64_t *off = d ? hm_find(&d->by_pc, vaddr) : NULL;
	Dwarf_Die fn, child, t;
	if (!off || !dwarf_offdie(d->dw, *off, &fn))
		return 0;
	unsigned n = 0, gp = 0, fp = 0;
	if (dwarf_child(&fn, &child) == 0) {
		do {
			if (dwarf_tag(&child) != DW_TAG_formal_parameter)
				continue;
			uint8_t fmt = 0;
			enum cls c = type_of(&child, &t) ? classify(&t, &fmt) : CLS_NONE;
			if (c == CLS_NONE || n == cap)
				break; /* the registers of what follows are unknown */
			if (c == CLS_FP) {
				if (fp == 8)
					break;
				items[n++] = (struct da_item){(uint8_t)(SF_ARG_SLOT_FP | ++fp), fmt, 0};
			} else {
				unsigned need = c == CLS_GP2 ? 2 : 1;
				if (gp + need > 6)
					break;
				items[n++] = (struct da_item){(uint8_t)(gp + 1), fmt, 0};
				gp += need;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	uint8_t fmt = 0;
	enum cls c = type_of(&fn, &t) ? classify(&t, &fmt) : CLS_NONE;
	if (c != CLS_NONE && n < cap)
		items[n++] = (struct da_item){(uint8_t)(c == CLS_FP ? SF_ARG_SLOT_FP : 0), fmt, 1};
	return n;
}
