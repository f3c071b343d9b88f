/* Arguments and return values in the log (record -A/-R): the payload of
 * an SF_EV_ARGS event (sflog.h), and the spec lines record passes to the
 * runtime. docs/FORMAT.md describes both in prose.
 *
 * Payload: struct sf_args_head (8 bytes), then `nitems` items, `nbytes`
 * bytes in all, padded with zeros to whole records. An item is
 *   u8 slot  SF_ARG_SLOT_*: where the value was (argument N, fp argument N,
 *            the return value)
 *   u8 fmt   type (low 4 bits, enum sf_arg_type) | size code << 4
 *            (0: 8 bytes, 1: 4, 2: 2, 3: 1)
 *   value    integers: LEB128, signed ones zigzag-coded first; DOUBLE: 8
 *            raw bytes; FLOAT: 4; STR, RSTR: a length byte (0-127: that
 *            many bytes follow, the whole string; 0x80 | n: the first n
 *            bytes of a longer one; SF_ARG_STR_NULL, SF_ARG_STR_UNREADABLE:
 *            nothing follows), then the bytes.
 * An ARGS event describes the next entry (flags 0) or the next exit or
 * tail call (SF_ARGS_RET) of `func_id` on its thread, recorded after it.
 * An item with nitems 0 is filler (a claim cut by the end of a slot).
 *
 * SF_ARGS_FIXED (values without strings, the runtime's usual case): the
 * `nitems` slot/fmt byte pairs come first, then each value in turn as its
 * low sf_arg_fixed_size(fmt) bytes, raw, at the next offset (from the end
 * of the header) that is a multiple of that size: sf_arg_fixed_next()
 * gives both sides the same layout. Signed and auto integers are sign-
 * extended from their size when read. The runtime copies these at fixed
 * offsets worked out once per function, with no per-value coding. */
#ifndef SFTRACE_FORMAT_SF_ARGS_H
#define SFTRACE_FORMAT_SF_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/sflog.h"

struct sf_args_head {
	uint32_t func_id;
	uint8_t flags;   /* SF_ARGS_RET */
	uint8_t nitems;
	uint16_t nbytes; /* item bytes after this header */
};

/* nitems's bits in the header read as one little-endian 8-byte record
 * (both ports): the runtime stores it zeroed, a filler, while a coded
 * event's claim is open (runtime/args.c, event_coded). */
#define SF_ARGS_HEAD_NITEMS (0xffull << 8 * offsetof(struct sf_args_head, nitems))
_Static_assert(offsetof(struct sf_args_head, nitems) == 5 && sizeof(struct sf_args_head) == 8,
	       "the header is one record; nitems is its sixth byte");

#define SF_ARGS_RET 1u   /* return values: the function's next exit or tail call */
#define SF_ARGS_FIXED 2u /* pairs first, then raw values at aligned offsets (above) */

enum sf_arg_type {
	SF_AT_AUTO = 0,   /* integer: decimal when small, else hex (uftrace's default) */
	SF_AT_SINT = 1,   /* /i */
	SF_AT_UINT = 2,   /* /u */
	SF_AT_HEX = 3,    /* /x */
	SF_AT_PTR = 4,    /* /p */
	SF_AT_CHAR = 5,   /* /c */
	SF_AT_STR = 6,    /* /s: a C string */
	SF_AT_RSTR = 7,   /* /S: pointer and length in two registers (Rust &str, &[u8]) */
	SF_AT_DOUBLE = 8, /* fparg, /f */
	SF_AT_FLOAT = 9,  /* /f32 */
	SF_AT_BOOL = 10,  /* /b */
	SF_AT_NONE = 11,  /* not recorded (--auto-args: a struct argument); no value bytes, coded layout only */
	SF_AT_STRUCT = 12, /* a struct in registers: no value bytes; its members are the next fmt >> 4 items */
	SF_AT_LIMIT
};

#define SF_ARG_SLOT_FP 0x40u   /* a vector register (fparg N, a float return value) */
#define SF_ARG_SLOT_INDEX 0x3fu /* N of argN/fpargN; 0: the return value */
#define SF_ARG_SLOT_STACK 0x3fu /* with SF_AT_NONE: an argument passed in memory, in no register */
/* With SF_AT_NONE (--auto-args, x86-64): a parameter the optimiser removed
 * or made a constant (DWARF says so), shown "<optimized out>"; one whose
 * register DWARF does not tell, shown "<unrecorded>". */
#define SF_ARG_SLOT_GONE 0x3eu
#define SF_ARG_SLOT_UNKNOWN 0x3du
/* With SF_AT_NONE, the last item of an entry: the parameters from here
 * on, past the SF_ARG_MAX_ITEMS items a call records (a function of more
 * than 24 parameters, or struct members that fill them), shown
 * "<unrecorded>" and named "rest": a cut is marked, never silent. The
 * runtime writes it in place of the values that do not fit a coded
 * payload too. */
#define SF_ARG_SLOT_REST 0x3cu
#define SF_ARG_STR_NULL 0xfeu
#define SF_ARG_STR_UNREADABLE 0xffu
#define SF_ARG_STR_CAP 64u     /* string bytes recorded per value (spec) */
/* Values per entry or exit of one function (items less STRUCT heads,
 * which have no value): every argument register of both ABIs (x86-64:
 * 6 integer + 8 vector; aarch64: 8 + 8) with struct members. 12 until
 * skeptic 29u (the 13th and later items were cut unmarked); 24 items,
 * heads included, until h46args (x86-64's 6 two-int structs and 8
 * doubles, 26 items, 20 values, lost 3). Items (slot/format pairs) at
 * most SF_ARG_MAX_ITEMS: 24 values and a head each. A FIXED payload must
 * also fit SF_ARGS_MAX_RECORDS (sflog.h) and its values-only records
 * SF_ARGS_VALUES_MAX: sf_args_layout refuses a spec that does not (the
 * runtime codes it then, cutting what does not fit; --auto-args cuts its
 * items until they fit, dwarf_args.c). */
#define SF_ARG_MAX_VALUES 24u
#define SF_ARG_MAX_ITEMS 48u
#define SF_ARG_ITEMS_BEFORE_H46 24u /* what readers before h46args take */
#define SF_ARG_MAX_INDEX 8u    /* argument registers on every architecture: x86-64 has 6 integer ones */

static inline unsigned sf_arg_type(uint8_t fmt) { return fmt & 15u; }

/* STRUCT (--auto-args, a struct passed or returned in registers): the
 * item's slot names it as any argument's (argN of its first integer
 * register, fpargN if its first eightbyte is in a vector register, 0 for
 * the return value) and fmt >> 4 is its member count (1-15). Each member
 * is one of the next items, a scalar whose slot byte says where its bytes
 * are instead: bits 0-2 the register (argument registers: N - 1 of argN
 * or fpargN; the return value: 0 for rax/x0/xmm0/v0, 1 for rdx/x1/xmm1/
 * v1, and so on), bit 3 a vector register, bits 4-6 the member's byte
 * offset in that register.
 * A struct passed in memory (x86-64, at an entry) has the slot
 * SF_ARG_STACK | W, its bytes W 8-byte words past the first stack
 * argument (named "stack" and its byte offset, "stack24"), and its members SF_ARG_STACK | their
 * byte offset in their word << 4 | the word of the struct (0-7) where
 * they start (a packed struct's member may run on into the next word). */
#define SF_ARG_STRUCT_MAX 15u
#define SF_ARG_STACK 0x80u
static inline uint8_t sf_arg_member_slot(unsigned reg, int fp, unsigned byte)
{
	return (uint8_t)((reg & 7u) | (fp ? 8u : 0u) | (byte & 7u) << 4);
}
static inline unsigned sf_arg_member_reg(uint8_t slot) { return slot & 7u; }
static inline int sf_arg_member_fp(uint8_t slot) { return (slot & 8u) != 0; }
static inline unsigned sf_arg_member_byte(uint8_t slot) { return slot >> 4 & 7u; }
static inline unsigned sf_arg_struct_count(uint8_t fmt) { return fmt >> 4; }
static inline unsigned sf_arg_size(uint8_t fmt) { return 8u >> (fmt >> 4 & 3u); }
static inline uint8_t sf_arg_fmt(unsigned type, unsigned size)
{
	unsigned code = size == 4 ? 1 : size == 2 ? 2 : size == 1 ? 3 : 0;
	return (uint8_t)(type | code << 4);
}
/* STR and RSTR: the size code is the string budget instead, in bytes:
 * 64 (record -A's /s), 16 (--auto-args), 4, 1. */
static inline unsigned sf_arg_str_cap(uint8_t fmt) { return SF_ARG_STR_CAP >> (2 * (fmt >> 4 & 3u)); }
static inline int sf_arg_type_signed(unsigned type) { return type == SF_AT_SINT || type == SF_AT_AUTO; }

/* The bytes a value takes in the FIXED layout; 0 for strings and NONE
 * (not allowed there) and for STRUCT (allowed: its members have the
 * values). */
static inline unsigned sf_arg_fixed_size(uint8_t fmt)
{
	unsigned type = sf_arg_type(fmt);
	if (type == SF_AT_STR || type == SF_AT_RSTR || type == SF_AT_NONE || type == SF_AT_STRUCT)
		return 0;
	if (type == SF_AT_DOUBLE)
		return 8;
	if (type == SF_AT_FLOAT)
		return 4;
	return sf_arg_size(fmt);
}

/* FIXED layout: the offset of a value of `size` bytes (1, 2, 4, 8) after
 * the bytes up to *end; *end moves past it. */
static inline unsigned sf_arg_fixed_next(unsigned *end, unsigned size)
{
	unsigned off = (*end + size - 1) & ~(size - 1);
	*end = off + size;
	return off;
}

/* Values only (version 6, docs/FORMAT.md "Values-only ARGS events"):
 * an ARGS event whose count field is SF_ARGS_VALUES | n (sflog.h) holds
 * n records of values and nothing else; the function event right after
 * it (claimed with it) gives the function id and the direction (an entry:
 * the arguments; an exit: the return values). The items come from the
 * function's spec for that direction, logged once in an ARGSPEC chunk: a
 * FIXED header (function id, SF_ARGS_FIXED | SF_ARGS_RET for the exit's,
 * items, bytes) and the slot/format pairs, SF_ARGSPEC_BYTES(items) in
 * all. The values are laid out as in the FIXED layout, but from offset 0
 * (no header, no pairs): each value's low bytes at the next offset that
 * is a multiple of its size. Readers rebuild the FIXED payload from the
 * two (sf_args_expand), so everything after them sees the same event. */
#define SF_ARGSPEC_BYTES(n) (8u + ((2u * (n) + 7u) & ~7u))

/* The value offsets of a FIXED spec's items (pairs, n of them): for each
 * value in turn (STRUCT items have none), its size, its offset in the
 * FIXED layout (after the header) and in the values-only layout.
 * *nval = values, *fend and *vend = where the last ends in each. -1 if
 * an item has no fixed size (a string: not a FIXED spec). */
static inline int sf_args_layout(const uint8_t *pairs, unsigned n, uint8_t *size, uint8_t *foff, uint8_t *voff,
				 unsigned *nval, unsigned *fend, unsigned *vend)
{
	unsigned f = 2u * n, v = 0, k = 0;
	if (n > SF_ARG_MAX_ITEMS)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint8_t fmt = pairs[2 * i + 1];
		if (sf_arg_type(fmt) == SF_AT_STRUCT)
			continue;
		unsigned sz = sf_arg_fixed_size(fmt);
		if (!sz || k == SF_ARG_MAX_VALUES)
			return -1;
		size[k] = (uint8_t)sz;
		unsigned fo = sf_arg_fixed_next(&f, sz), vo = sf_arg_fixed_next(&v, sz);
		/* the payload within SF_ARGS_MAX_RECORDS, the header's
		 * record included; the values-only records within
		 * SF_ARGS_VALUES_MAX */
		if (8 + f > 8 * SF_ARGS_MAX_RECORDS || v > 8 * SF_ARGS_VALUES_MAX)
			return -1;
		foff[k] = (uint8_t)fo;
		voff[k] = (uint8_t)vo;
		k++;
	}
	*nval = k;
	*fend = f;
	*vend = v;
	return 0;
}

/* The FIXED payload of a values-only event into out (SF_ARGS_MAX_RECORDS
 * records): spec an ARGSPEC entry, func_id the function event's, vals and
 * nrec its value records. Returns the payload's records, 0 if the spec is
 * malformed or the values are not the n records it makes. */
static inline unsigned sf_args_expand(const uint8_t *spec, uint32_t func_id, const uint8_t *vals, unsigned nrec,
				      uint8_t *out)
{
	struct sf_args_head h;
	uint8_t size[SF_ARG_MAX_ITEMS], foff[SF_ARG_MAX_ITEMS], voff[SF_ARG_MAX_ITEMS];
	unsigned nval, fend, vend;
	memcpy(&h, spec, sizeof(h));
	if (!(h.flags & SF_ARGS_FIXED) || !h.nitems ||
	    sf_args_layout(spec + 8, h.nitems, size, foff, voff, &nval, &fend, &vend) < 0 || fend != h.nbytes ||
	    (vend + 7) / 8 != nrec)
		return 0;
	unsigned total = 1 + (fend + 7) / 8;
	memset(out, 0, 8u * total);
	h.func_id = func_id;
	memcpy(out, &h, sizeof(h));
	memcpy(out + 8, spec + 8, 2u * h.nitems);
	for (unsigned k = 0; k < nval; k++)
		memcpy(out + 8 + foff[k], vals + voff[k], size[k]);
	return total;
}

/* LEB128 of v at p (at most 10 bytes); returns the end. */
static inline uint8_t *sf_arg_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* A LEB128 from [*p, end): 0 and *p advanced, -1 if it runs past end. */
static inline int sf_arg_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0; *p < end && shift < 70; shift += 7) {
		uint8_t b = *(*p)++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* Spec lines (SFTRACE_ARGS, a file in the filter format written by
 * record): `0xADDR SPEC NAME`, SPEC a comma-separated list of items
 * `eSSFF` (on entry) or `xSSFF` (on exit), SS the slot byte and FF the fmt
 * byte in hex. */

#endif
