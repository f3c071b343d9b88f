/* Argument and return values as text (arg_values.h). */
#include "lib/arg_values.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/util.h"

/* uftrace's default: decimal for small magnitudes, hex past 100000. */
static void put_auto(int64_t v, char *out, size_t cap)
{
	if (v > -100000 && v < 100000)
		snprintf(out, cap, "%" PRId64, v);
	else
		snprintf(out, cap, "%#" PRIx64, (uint64_t)v);
}

/* A string's bytes, quoted: control characters (C0, DEL, C1) and bytes
 * that are not UTF-8 escaped as \xHH, valid UTF-8 kept (uftrace shows
 * "héllo"; so does every output, terminals included: text_esc.h's rule). */
static size_t put_quoted(const unsigned char *s, unsigned n, int more, char *out, size_t cap)
{
	size_t o = 0;
	out[o++] = '"';
	for (unsigned i = 0; i < n && o + 8 < cap; i++) {
		unsigned char c = s[i];
		size_t len;
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c == '\t') {
			out[o++] = '\\';
			out[o++] = 't';
		} else if (c >= 0x80 && (len = sf_utf8_seq(s + i, n - i)) >= 2 && !(c == 0xc2 && s[i + 1] < 0xa0)) {
			memcpy(out + o, s + i, len); /* o + 8 < cap */
			o += len;
			i += (unsigned)len - 1;
		} else if (c < 0x20 || c >= 0x7f) {
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o++] = '"';
	if (more && o + 4 < cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = 0;
	return o;
}

/* An integer-class value (sign-extended already for signed types). */
static void put_int(uint64_t v, uint8_t fmt, char *out, size_t cap)
{
	unsigned type = sf_arg_type(fmt), size = sf_arg_size(fmt);
	switch (type) {
	case SF_AT_SINT: snprintf(out, cap, "%" PRId64, (int64_t)v); break;
	case SF_AT_UINT: snprintf(out, cap, "%" PRIu64, v); break;
	case SF_AT_HEX: snprintf(out, cap, "%#" PRIx64, v); break;
	case SF_AT_PTR: snprintf(out, cap, "%#" PRIx64, v); break;
	case SF_AT_BOOL: snprintf(out, cap, "%s", v ? "true" : "false"); break;
	case SF_AT_CHAR: /* a C char, or a Rust char's code point (size 4) */
		if (v >= 0x20 && v < 0x7f && v != '\'' && v != '\\')
			snprintf(out, cap, "'%c'", (char)v);
		else if (size == 1)
			snprintf(out, cap, "'\\x%02x'", (unsigned)(v & 0xff));
		else
			snprintf(out, cap, "'\\u{%" PRIx64 "}'", v);
		break;
	default: put_auto((int64_t)v, out, cap); break;
	}
}

/* uftrace's "%f" where it shows the value: 6 decimals keep at least
 * three significant digits from 1e-4 up and stay under 23 characters
 * below 1e15. Outside that range "%f" would print 0.000000 for 5e-10 or
 * 301 digits for 1e300, so "%g" (six significant digits, 5e-10, 1e+300).
 * Zero, infinities and NaN keep "%f" (0.000000, inf, nan). */
static void put_double(double d, char *out, size_t cap)
{
	double a = fabs(d);
	int plain = a == 0 || !isfinite(a) || (a >= 1e-4 && a < 1e15);
	snprintf(out, cap, plain ? "%f" : "%g", d);
}

/* One item's value from *p; -1 if it runs past end. */
static int decode_value(const unsigned char **p, const unsigned char *end, uint8_t fmt, char *out, size_t cap)
{
	unsigned type = sf_arg_type(fmt);
	if (type == SF_AT_DOUBLE || type == SF_AT_FLOAT) {
		unsigned n = type == SF_AT_DOUBLE ? 8 : 4;
		if ((size_t)(end - *p) < n)
			return -1;
		double d;
		if (n == 8) {
			memcpy(&d, *p, 8);
		} else {
			float f;
			memcpy(&f, *p, 4);
			d = f;
		}
		*p += n;
		put_double(d, out, cap);
		return 0;
	}
	if (type == SF_AT_NONE) {
		snprintf(out, cap, "<unrecorded>");
		return 0;
	}
	if (type == SF_AT_STR || type == SF_AT_RSTR) {
		if (*p >= end)
			return -1;
		unsigned lb = *(*p)++;
		if (lb == SF_ARG_STR_NULL) {
			snprintf(out, cap, "(null)");
			return 0;
		}
		if (lb == SF_ARG_STR_UNREADABLE) {
			snprintf(out, cap, "<unreadable>");
			return 0;
		}
		unsigned n = lb & 0x7f;
		if ((size_t)(end - *p) < n)
			return -1;
		put_quoted(*p, n, lb & 0x80, out, cap);
		*p += n;
		return 0;
	}
	uint64_t v;
	if (sf_arg_get_varint(p, end, &v) < 0)
		return -1;
	if (sf_arg_type_signed(type))
		v = v >> 1 ^ (uint64_t)-(int64_t)(v & 1);
	put_int(v, fmt, out, cap);
	return 0;
}

static void name_item(struct av_item *it)
{
	unsigned idx = it->slot & SF_ARG_SLOT_INDEX;
	if (it->slot & SF_ARG_STACK) /* a struct in memory: its byte offset among the stack arguments */
		snprintf(it->name, sizeof(it->name), "stack%u", 8 * (it->slot & ~SF_ARG_STACK & 0xffu));
	else if (!idx)
		snprintf(it->name, sizeof(it->name), "retval");
	else if (idx == SF_ARG_SLOT_STACK)
		snprintf(it->name, sizeof(it->name), "stack");
	else if (idx == SF_ARG_SLOT_GONE && sf_arg_type(it->fmt) == SF_AT_NONE)
		snprintf(it->name, sizeof(it->name), "optimized");
	else if (idx == SF_ARG_SLOT_UNKNOWN && sf_arg_type(it->fmt) == SF_AT_NONE)
		snprintf(it->name, sizeof(it->name), "param");
	else if (idx == SF_ARG_SLOT_REST && sf_arg_type(it->fmt) == SF_AT_NONE)
		snprintf(it->name, sizeof(it->name), "rest"); /* the parameters past the items recorded */
	else
		snprintf(it->name, sizeof(it->name), "%s%u", it->slot & SF_ARG_SLOT_FP ? "fparg" : "arg", idx);
}

/* A FIXED value (sf_args.h): its `size` raw bytes at v. */
static void fixed_value(const unsigned char *v, unsigned size, uint8_t fmt, char *out, size_t cap)
{
	unsigned type = sf_arg_type(fmt);
	uint64_t x = 0;
	memcpy(&x, v, size); /* little-endian, as the writer */
	if (type == SF_AT_DOUBLE) {
		double d;
		memcpy(&d, &x, 8);
		put_double(d, out, cap);
		return;
	}
	if (type == SF_AT_FLOAT) {
		float f;
		uint32_t w = (uint32_t)x;
		memcpy(&f, &w, 4);
		put_double(f, out, cap);
		return;
	}
	if (size < 8 && sf_arg_type_signed(type) && (x >> (size * 8 - 1) & 1))
		x |= ~0ull << (size * 8);
	put_int(x, fmt, out, cap);
}

/* Decoded items into items[0, cap): a STRUCT item's members (the next
 * ones, format/sf_args.h) go into its value, as uftrace shows a struct:
 * "{1, 2}". */
struct fold {
	struct av_item *items;
	unsigned n, cap;
	unsigned members; /* of the open struct, still to come */
	int kept;         /* the open struct is items[n - 1] */
};

static void close_struct(struct fold *f)
{
	if (f->kept) {
		struct av_item *s = &f->items[f->n - 1];
		size_t o = strlen(s->value);
		snprintf(s->value + o, sizeof(s->value) - o, "}");
	}
	f->members = 0;
	f->kept = 0;
}

static void fold_item(struct fold *f, const struct av_item *it)
{
	if (f->members) {
		if (f->kept) {
			struct av_item *s = &f->items[f->n - 1];
			size_t o = strlen(s->value);
			snprintf(s->value + o, sizeof(s->value) - o, "%s%s", o > 1 ? ", " : "", it->value);
		}
		if (!--f->members)
			close_struct(f);
		return;
	}
	int is_struct = sf_arg_type(it->fmt) == SF_AT_STRUCT, stored = f->n < f->cap;
	if (stored) {
		f->items[f->n] = *it;
		if (is_struct) /* the members' values go after the brace */
			snprintf(f->items[f->n].value, sizeof(f->items[f->n].value), "{");
		f->n++;
	}
	if (is_struct) {
		f->members = sf_arg_struct_count(it->fmt);
		f->kept = stored;
		if (!f->members)
			close_struct(f);
	}
}

/* The decoded count; a struct whose members the payload cut short is
 * closed with what it has. */
static int fold_end(struct fold *f)
{
	if (f->members)
		close_struct(f);
	return (int)f->n;
}

/* The FIXED layout: pairs, then values at aligned offsets. */
static int decode_fixed(const struct sf_args_head *h, const unsigned char *p, struct av_item *items, unsigned cap)
{
	unsigned end = 2u * h->nitems;
	struct fold f = {items, 0, cap, 0, 0};
	if (end > h->nbytes)
		return -1;
	for (unsigned i = 0; i < h->nitems; i++) {
		struct av_item it = {.slot = p[2 * i], .fmt = p[2 * i + 1]};
		unsigned size = sf_arg_fixed_size(it.fmt), type = sf_arg_type(it.fmt);
		if (type >= SF_AT_LIMIT || (!size && (type != SF_AT_STRUCT || f.members)))
			return -1;
		name_item(&it);
		if (size) {
			unsigned off = sf_arg_fixed_next(&end, size);
			if (end > h->nbytes)
				return -1;
			fixed_value(p + off, size, it.fmt, it.value, sizeof(it.value));
		}
		fold_item(&f, &it);
	}
	return fold_end(&f);
}

/* Names made unique within a payload: the marks' names repeat
 * (`optimized`, `param`, `stack` for each parameter so marked), and
 * Perfetto and Chrome JSON key values by name, keeping one of each; the
 * second is `optimized#2`, the third `optimized#3`. */
static void unique_names(struct av_item *items, int n)
{
	/* Last first: the names before i are still unsuffixed when it is
	 * counted (forward, the third `optimized` saw `optimized#2` and
	 * came out `#2` again). */
	for (int i = n - 1; i >= 1; i--) {
		int same = 0;
		for (int j = 0; j < i; j++)
			same += !strcmp(items[j].name, items[i].name);
		if (same) {
			size_t o = strlen(items[i].name);
			snprintf(items[i].name + o, sizeof(items[i].name) - o, "#%d", same + 1);
		}
	}
}

static int decode(const unsigned char *payload, size_t len, struct av_item *items, unsigned cap);

int av_decode(const unsigned char *payload, size_t len, struct av_item *items, unsigned cap)
{
	int n = decode(payload, len, items, cap);
	unique_names(items, n);
	return n;
}

static int decode(const unsigned char *payload, size_t len, struct av_item *items, unsigned cap)
{
	struct sf_args_head h;
	if (!payload || len < sizeof(h))
		return -1;
	memcpy(&h, payload, sizeof(h));
	if (sizeof(h) + h.nbytes > len)
		return -1;
	const unsigned char *p = payload + sizeof(h), *end = p + h.nbytes;
	if (h.flags & SF_ARGS_FIXED)
		return decode_fixed(&h, p, items, cap);
	struct fold f = {items, 0, cap, 0, 0};
	for (unsigned i = 0; i < h.nitems; i++) {
		if (end - p < 2)
			return -1;
		struct av_item it = {.slot = p[0], .fmt = p[1]};
		p += 2;
		unsigned type = sf_arg_type(it.fmt);
		/* A member is a scalar with a value. */
		if (type >= SF_AT_LIMIT || (f.members && (type == SF_AT_STRUCT || type == SF_AT_NONE)))
			return -1;
		name_item(&it);
		if (type != SF_AT_STRUCT && decode_value(&p, end, it.fmt, it.value, sizeof(it.value)) < 0)
			return -1;
		if (type == SF_AT_NONE && it.slot == SF_ARG_SLOT_GONE)
			snprintf(it.value, sizeof(it.value), "<optimized out>");
		fold_item(&f, &it);
	}
	return fold_end(&f);
}

void av_join(const unsigned char *payload, size_t len, char *out, size_t cap)
{
	struct av_item items[SF_ARG_MAX_ITEMS];
	int n = av_decode(payload, len, items, SF_ARG_MAX_ITEMS);
	size_t o = 0;
	out[0] = 0;
	if (n < 0) {
		snprintf(out, cap, "<bad values>");
		return;
	}
	for (int i = 0; i < n && o + 1 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? ", " : "", items[i].value);
}
