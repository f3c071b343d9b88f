/* record -A/-R: argument and return-value specs in uftrace's syntax,
 * checked before the program runs and resolved to addresses for the
 * runtime (src/runtime/args.c reads the file this writes). */
#include "cli/record_args.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args_cache.h"
#include "cli/record_notes_dir.h"
#include "format/sf_args.h"
#include "format/sf_env.h"
#include "format/xray_map.h"
#include "lib/dwarf_args.h"
#include "lib/hashmap.h"
#include "lib/name_match.h"
#include "lib/outfile.h"
#include "lib/select.h"
#include "lib/util.h"

/* "i32" and the like: the type letter's size suffix (0: none given). */
static int parse_size(const char *s, unsigned *size)
{
	if (!*s) {
		*size = 0;
		return 0;
	}
	static const struct { const char *text; unsigned size; } sizes[] = {
		{"8", 1}, {"16", 2}, {"32", 4}, {"64", 8},
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (!strcmp(s, sizes[i].text)) {
			*size = sizes[i].size;
			return 0;
		}
	return -1;
}

/* "/FMT" of an integer-register value -> fmt byte; NULL or an error text. */
static const char *int_format(const char *f, int ret, uint8_t *fmt)
{
	static const struct { char letter; unsigned type; int sized; } letters[] = {
		{'d', SF_AT_SINT, 1}, {'i', SF_AT_SINT, 1}, {'u', SF_AT_UINT, 1}, {'x', SF_AT_HEX, 1},
		{'p', SF_AT_PTR, 0},  {'c', SF_AT_CHAR, 0}, {'s', SF_AT_STR, 0},  {'S', SF_AT_RSTR, 0},
		{'b', SF_AT_BOOL, 0},
	};
	if (!f) {
		*fmt = sf_arg_fmt(SF_AT_AUTO, 8);
		return NULL;
	}
	if (f[0] == 'f')
		return ret ? NULL : "a floating-point argument is fpargN, not argN/f";
	for (size_t i = 0; i < sizeof(letters) / sizeof(letters[0]); i++) {
		if (f[0] != letters[i].letter)
			continue;
		unsigned size = 8;
		if (f[1] && (!letters[i].sized || parse_size(f + 1, &size) < 0))
			return "unknown format (i, u, x with 8/16/32/64; p, c, s, S, b; f for a float return value)";
		if (letters[i].type == SF_AT_CHAR)
			size = 1;
		if (letters[i].type == SF_AT_BOOL)
			size = 1;
		*fmt = sf_arg_fmt(letters[i].type, size ? size : 8);
		return NULL;
	}
	return "unknown format (i, u, x with 8/16/32/64; p, c, s, S, b; f for a float return value)";
}

/* "/f", "/f32", "/f64" or none -> DOUBLE or FLOAT. */
static const char *fp_format(const char *f, uint8_t *fmt)
{
	if (!f || !strcmp(f, "f") || !strcmp(f, "f64")) {
		*fmt = sf_arg_fmt(SF_AT_DOUBLE, 8);
		return NULL;
	}
	if (!strcmp(f, "f32")) {
		*fmt = sf_arg_fmt(SF_AT_FLOAT, 4);
		return NULL;
	}
	return "a floating-point value's format is f, f32 or f64";
}

/* N of "argN"/"fpargN" in [1, max]; -1 if not a number. N is read as
 * uftrace reads it (utils/argspec.c: strtol base 0), so arg01 is arg1 and
 * arg0x2 arg2, as there. */
static int index_of(const char *s, unsigned max)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	unsigned long n = strtoul(s, &end, 0);
	if (*end || n < 1 || n > max)
		return -1;
	return (int)n;
}

/* One item of a spec: "arg2/s", "fparg1", "retval/x32". */
static const char *parse_item(char *item, int ret_opt, struct ra_item *out)
{
	char *slash = strchr(item, '/');
	const char *f = NULL;
	if (slash) {
		*slash = 0;
		f = slash + 1;
		if (!*f)
			return "empty format after '/'";
	}
	if (strchr(item, '%'))
		return "register and stack locations (%REG, %stack+N) are not supported";
	if (!strcmp(item, "retval")) {
		if (!ret_opt)
			return "retval goes in -R (--retval)";
		out->on_exit = 1;
		if (f && f[0] == 'f') {
			out->slot = SF_ARG_SLOT_FP;
			return fp_format(f, &out->fmt);
		}
		out->slot = 0;
		return int_format(f, 1, &out->fmt);
	}
	if (ret_opt)
		return "-R (--retval) takes retval[/FMT]; arguments go in -A";
	out->on_exit = 0;
	if (!strncmp(item, "fparg", 5)) {
		int n = index_of(item + 5, 8);
		if (n < 0)
			return "floating-point arguments are fparg1-fparg8 (the vector registers)";
		out->slot = (uint8_t)(SF_ARG_SLOT_FP | (unsigned)n);
		return fp_format(f, &out->fmt);
	}
	if (!strncmp(item, "arg", 3)) {
		int n = index_of(item + 3, 6);
		if (n < 0)
			return "integer arguments are arg1-arg6 (the registers; the stack is not read)";
		out->slot = (uint8_t)n;
		const char *why = int_format(f, 0, &out->fmt);
		if (!why && sf_arg_type(out->fmt) == SF_AT_RSTR && n == 6)
			return "/S takes two registers (pointer, length): arg6 has no next one";
		return why;
	}
	return "unknown item (argN, fpargN or retval, each with an optional /FMT)";
}

/* Whether FUNC is a plain name (letters, digits, _, :), matched whole,
 * rather than a regex. */
static int plain_name(const char *func)
{
	for (const char *p = func; *p; p++)
		if (!(*p == '_' || *p == ':' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return 0;
	return 1;
}

/* Whether c is a character of a C++ identifier. */
static int ident_char(char c)
{
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Whether FUNC is a demangled C++ name with its parameter list, as
 * replay or c++filt shows it (`ov(int)`, `ns::K::add(int, int) const`,
 * `ns::tmax<double>(double, double)`, `double ns::tmax<double>(double,
 * double)`): a name (a template's arguments and a template function's
 * return type may hold spaces, commas, `<>`, `*` and `&`), then a list of
 * what C++ types are written with, ending in `)` and its qualifiers
 * (const, volatile, &, &&, noexcept), and none of | ? + ^ $ \ { }, which
 * a regex written so would need. */
static int name_with_params(const char *func)
{
	const char *open = strchr(func, '('), *close = strrchr(func, ')');
	if (!open || open == func || !close)
		return 0;
	for (const char *p = func; p < open; p++)
		if (!(ident_char(*p) || strchr(":~<>, *&", *p)))
			return 0;
	if (strpbrk(func, "|?+^$\\{}"))
		return 0;
	for (const char *p = close + 1; *p; p++)
		if (!(*p == ' ' || *p == '&' || (*p >= 'a' && *p <= 'z')))
			return 0;
	return 1;
}

/* Characters around which the demangler may or may not put a space
 * (`int, int`, `vector<vector<int> >`, `char*`, `) const`). */
static int spaced_punct(char c)
{
	return c && strchr(",()<>*&", c);
}

/* name_with_params' FUNC as a regex matching that demangled name whole,
 * each character taken as itself, spaces as the demangler may write them
 * (one between two words, where the user wrote one; none or one around
 * punctuation), and, for a template function (its name ends in `>`), the
 * return type the demangler puts first (`double ns::tmax<double>(double,
 * double)`) whether written or not. */
static void params_regex(const char *func, char *o)
{
	const char *open = strchr(func, '('), *end = open;
	while (end > func && end[-1] == ' ')
		end--;
	*o++ = '^';
	if (end > func && end[-1] == '>')
		o += sprintf(o, "(?:.* )?");
	char prev = 0;
	for (const char *c = func; *c; c++) {
		if (*c == ' ')
			continue;
		if (prev) {
			if (spaced_punct(prev) || spaced_punct(*c))
				o += sprintf(o, " ?");
			else if (c[-1] == ' ')
				*o++ = ' ';
		}
		if (strchr(".*[]()", *c))
			*o++ = '\\';
		*o++ = *c;
		prev = *c;
	}
	strcpy(o, "$");
}

/* FUNC as a regex: a plain name matches that demangled name exactly (a
 * C++ name with its parameter list too), as uftrace matches plain names;
 * a name with its parameter list matches that demangled name exactly
 * (params_regex); anything else is a regex, as in filters. */
static char *func_regex(const char *func)
{
	size_t n = 5 * strlen(func) + 16;
	char *r = xmalloc(n);
	if (plain_name(func))
		snprintf(r, n, "^%s(\\(.*)?$", func);
	else if (name_with_params(func))
		params_regex(func, r);
	else
		snprintf(r, n, "%s", func);
	return r;
}

/* Whether FUNC's regex compiles: checked with the rest of the spec,
 * before the program runs (PCRE2's message, the spec named). */
static int func_compiles(const char *opt, const char *text, const char *func)
{
	size_t n = strlen(opt) + strlen(text) + 4;
	char *origin = xmalloc(n), *regex = func_regex(func);
	snprintf(origin, n, "%s '%s'", opt, text);
	struct nm_patterns p = {0};
	nm_add(&p, regex, origin);
	int rc = nm_compile(&p);
	nm_free(&p);
	free(regex);
	free(origin);
	return rc;
}

int ra_parse(struct ra_spec *s, const char *opt, const char *text)
{
	memset(s, 0, sizeof(*s));
	s->text = text;
	const char *at = strrchr(text, '@');
	if (at == text) {
		sf_error("%s '%s': no FUNC before '@'", opt, text);
		return -1;
	}
	if (!at) {
		sf_error("%s '%s': expected FUNC@%s", opt, text, strcmp(opt, "-R") ? "arg1,arg2/s,..." : "retval[/FMT]");
		return -1;
	}
	if (!at[1]) {
		sf_error("%s '%s': nothing after '@'", opt, text);
		return -1;
	}
	s->func = strndup(text, (size_t)(at - text));
	if (func_compiles(opt, text, s->func) < 0) {
		free(s->func);
		s->func = NULL;
		return -1;
	}
	char *items = xstrdup(at + 1);
	int ret_opt = !strcmp(opt, "-R");
	for (char *it = items, *next; it; it = next) {
		char shown[64];
		if ((next = strchr(it, ',')))
			*next++ = 0;
		if (!*it) {
			/* uftrace takes an empty item for a module name, "" (which
			 * limits the spec to the main executable): not a spec's. */
			sf_error("%s '%s': an empty item (a ',' with no item before or after it)", opt, text);
			goto bad;
		}
		snprintf(shown, sizeof(shown), "%s", it);
		if (s->n == SF_ARG_MAX_VALUES) {
			sf_error("%s '%s': more than %u values", opt, text, SF_ARG_MAX_VALUES);
			goto bad;
		}
		const char *why = parse_item(it, ret_opt, &s->items[s->n]);
		if (why) {
			sf_error("%s '%s': %s: %s", opt, text, shown, why);
			goto bad;
		}
		s->n++;
	}
	if (!s->n) {
		sf_error("%s '%s': nothing after '@'", opt, text);
		goto bad;
	}
	free(items);
	return 0;
bad:
	free(items);
	free(s->func);
	s->func = NULL;
	return -1;
}

void ra_free(struct ra_spec *s)
{
	free(s->func);
	s->func = NULL;
}

/* One function's line of the file: every item the specs give it. */
struct ra_func {
	uint64_t vaddr;
	char *name;
	struct ra_item items[2 * SF_ARG_MAX_ITEMS];
	uint8_t exact[2 * SF_ARG_MAX_ITEMS]; /* items[i] came from a spec naming the function whole */
	unsigned n;
	const char *opt, *spec; /* the first spec that gave it items, for a message */
};

struct ra_funcs {
	struct ra_func *v;
	size_t n, cap;
	struct hashmap at; /* vaddr -> index + 1 */
};

static struct ra_func *func_at(struct ra_funcs *fs, uint64_t vaddr, const char *name)
{
	int added;
	uint64_t *slot = hm_put(&fs->at, vaddr, &added);
	if (!added)
		return &fs->v[*slot - 1];
	if (fs->n == fs->cap) {
		fs->cap = fs->cap ? 2 * fs->cap : 64;
		fs->v = xrealloc(fs->v, fs->cap * sizeof(*fs->v));
	}
	struct ra_func *f = &fs->v[fs->n++];
	memset(f, 0, sizeof(*f));
	f->vaddr = vaddr;
	f->name = xstrdup(name);
	*slot = fs->n;
	return f;
}

/* The item of f that a new one takes the place of: the return value, or
 * the same argument register; f->n if none. */
static unsigned same_item(const struct ra_func *f, const struct ra_item *it)
{
	for (unsigned i = 0; i < f->n; i++)
		if (f->items[i].on_exit == it->on_exit && (it->on_exit || f->items[i].slot == it->slot))
			return i;
	return f->n;
}

/* A spec's items for f. As in uftrace (utils/filter.c add_arg_spec), a
 * later spec for the same argument or the return value replaces the
 * earlier one (one value per slot, never two), except that a regex does
 * not replace what a spec naming the function whole gave. The specs of
 * one function are merged: its entry's items and its exit's each make
 * one plan of the runtime's, SF_ARG_MAX_VALUES at most. Every argument
 * register a spec may name (arg1-arg6, fparg1-fparg8) fits, so this
 * cannot be met by specs alone; if it were, -1 (nothing added), for a
 * message naming both specs: never a value silently left out (before,
 * items past 12 were, skeptic 29u). */
static int add_items(struct ra_func *f, const struct ra_item *items, unsigned n, int exact)
{
	unsigned count[2] = {0, 0};
	for (unsigned i = 0; i < f->n; i++)
		count[f->items[i].on_exit != 0]++;
	for (unsigned i = 0; i < n; i++)
		if (same_item(f, &items[i]) == f->n && ++count[items[i].on_exit != 0] > SF_ARG_MAX_VALUES)
			return -1;
	for (unsigned i = 0; i < n; i++) {
		unsigned k = same_item(f, &items[i]);
		if (k < f->n && f->exact[k] && !exact)
			continue;
		f->items[k] = items[i];
		f->exact[k] = (uint8_t)exact;
		f->n += k == f->n;
	}
	return 0;
}

/* The functions of obj that spec s names get its items; *funcs += their
 * number. -1 after a message. */
static int resolve(const struct ra_spec *s, const char *opt, const char *obj, struct ra_funcs *fs, size_t *funcs,
		   char *build_id, size_t bid_cap)
{
	char *regex = func_regex(s->func);
	struct nm_patterns inc = {0};
	nm_add(&inc, regex, opt);
	struct sel_query q = {&inc, NULL, NM_DEMANGLED, 0};
	struct sel_object o = {0};
	int rc = 0;
	if (nm_compile(&inc) < 0 || sel_load(&o, obj) < 0 || sel_select(&o, &q) < 0) {
		sf_error("%s '%s': cannot read the functions of %s", opt, s->text, obj);
		rc = -1;
	} else {
		snprintf(build_id, bid_cap, "%s", o.build_id);
		for (size_t i = 0; i < o.nfuncs && !rc; i++) {
			if (!sel_is_selected(&o.funcs[i]))
				continue;
			struct ra_func *f = func_at(fs, o.funcs[i].vaddr, sel_func_name(&o, &o.funcs[i]));
			if (add_items(f, s->items, s->n, plain_name(s->func) || name_with_params(s->func)) < 0) {
				if (f->spec)
					sf_error("%s '%s' and %s '%s': more than %u values for %s together", f->opt, f->spec,
						 opt, s->text, SF_ARG_MAX_VALUES, f->name);
				else
					sf_error("%s '%s': more than %u values for %s", opt, s->text, SF_ARG_MAX_VALUES, f->name);
				rc = -1;
			} else if (!f->spec) {
				f->opt = opt;
				f->spec = s->text;
			}
		}
		*funcs += o.nselected;
	}
	sel_free(&o);
	nm_free(&inc);
	free(regex);
	return rc;
}

/* The DWARF items of every instrumented function of o (obj's) that has
 * some, by vaddr, into *s: from the user's cache when it answers for
 * this very file (args_cache.h), else read and kept there. -1 (after a
 * warning) when obj has no DWARF. */
static int auto_items(const char *obj, const struct sel_object *o, struct ac_set *s)
{
	char key[AC_KEY_MAX], again[AC_KEY_MAX];
	int keyed = ac_key(obj, o->build_id, key, sizeof(key)) == 0;
	if (keyed && ac_load(key, s))
		return 0;
	struct da_file *d = da_open(obj);
	if (!d) {
		sf_warn("--auto-args: %s has no DWARF (build with -g): no values recorded", obj);
		return -1;
	}
	for (size_t i = 0; i < o->nfuncs; i++) {
		struct da_item di[2 * SF_ARG_MAX_ITEMS]; /* the entry's and the exit's */
		unsigned n = da_items(d, o->funcs[i].vaddr, di, 2 * SF_ARG_MAX_ITEMS);
		if (!n)
			continue;
		struct ac_func *f = ac_add(s, o->funcs[i].vaddr);
		memcpy(f->it, di, n * sizeof(di[0]));
		f->n = n;
	}
	const char *dwo;
	unsigned missing = da_missing_dwo(d, &dwo);
	if (missing == 1)
		sf_warn("--auto-args: %s: split DWARF file %s not found: its functions recorded without values", obj,
			dwo);
	else if (missing)
		sf_warn("--auto-args: %s: %u split DWARF files not found (%s, ...): their functions recorded without "
			"values", obj, missing, dwo);
	da_close(d);
	/* Not if the file changed while it was read (its key with it), nor
	 * without a .dwo file (the message on every run until it is there). */
	if (keyed && !missing && ac_key(obj, o->build_id, again, sizeof(again)) == 0 && !strcmp(key, again))
		ac_store(key, s);
	return 0;
}

/* --auto-args: every instrumented function of obj that no spec named,
 * with what its DWARF prototype says. -1 after a message. */
static int resolve_auto(const char *obj, struct ra_funcs *fs, char *build_id, size_t bid_cap)
{
	struct nm_patterns inc = {0};
	nm_add(&inc, "", "--auto-args");
	struct sel_query q = {&inc, NULL, NM_DEMANGLED, 0};
	struct sel_object o = {0};
	int rc = 0;
	if (nm_compile(&inc) < 0 || sel_load(&o, obj) < 0 || sel_select(&o, &q) < 0) {
		sf_error("--auto-args: cannot read the functions of %s", obj);
		rc = -1;
	} else {
		snprintf(build_id, bid_cap, "%s", o.build_id);
		struct ac_set s = {0};
		if (auto_items(obj, &o, &s) == 0) {
			/* Both by vaddr: the cache's entries are the object's
			 * functions that have items. */
			size_t k = 0;
			for (size_t i = 0; i < o.nfuncs && k < s.n; i++) {
				if (o.funcs[i].vaddr != s.v[k].vaddr)
					continue;
				const struct ac_func *a = &s.v[k++];
				if (hm_find(&fs->at, a->vaddr))
					continue; /* a spec names it: the spec's values only */
				struct ra_func *f = func_at(fs, a->vaddr, sel_func_name(&o, &o.funcs[i]));
				for (unsigned j = 0; j < a->n && f->n < sizeof(f->items) / sizeof(f->items[0]); j++)
					f->items[f->n++] = (struct ra_item){a->it[j].slot, a->it[j].fmt, a->it[j].on_exit};
			}
		}
		free(s.v);
	}
	sel_free(&o);
	nm_free(&inc);
	return rc;
}

/* Every spec (and --auto-args) resolved in one object: its functions in
 * fs, its build-id, and matched[i] = 1 for each spec that names one of
 * them. -1 after a message. */
static int resolve_object(const char *obj, const struct ra_spec *specs, const char *const *opts, size_t n,
			  int auto_args, struct ra_funcs *fs, char *build_id, size_t bid_cap, unsigned char *matched)
{
	for (size_t i = 0; i < n; i++) {
		size_t funcs = 0;
		if (resolve(&specs[i], opts[i], obj, fs, &funcs, build_id, bid_cap) < 0)
			return -1;
		matched[i] = funcs > 0;
	}
	return auto_args ? resolve_auto(obj, fs, build_id, bid_cap) : 0;
}

static void free_funcs(struct ra_funcs *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		free(fs->v[i].name);
	free(fs->v);
	hm_free(&fs->at);
}

/* One function's line: `0xADDR ITEMS NAME`. The address and the items
 * formatted by hand into one buffer, written with one fwrite: fprintf's
 * parsing, per item, was 7% of --auto-args' resolution of SQLite (8.4M
 * of 118M instructions, callgrind, no cache). The same bytes. */
static void put_func(FILE *out, const struct ra_func *f)
{
	static const char hex[] = "0123456789abcdef";
	char buf[2 + 16 + 1 + 2 * SF_ARG_MAX_ITEMS * 6 + 1], *p = buf;
	*p++ = '0';
	*p++ = 'x';
	int digits = 1;
	while (digits < 16 && f->vaddr >> 4 * digits)
		digits++;
	for (int k = digits - 1; k >= 0; k--)
		*p++ = hex[f->vaddr >> 4 * k & 15];
	*p++ = ' ';
	unsigned in = 0, ex = 0, written = 0;
	for (unsigned i = 0; i < f->n; i++) {
		/* the runtime takes SF_ARG_MAX_ITEMS of each */
		if (f->items[i].on_exit ? ex++ >= SF_ARG_MAX_ITEMS : in++ >= SF_ARG_MAX_ITEMS)
			continue;
		if (written++)
			*p++ = ',';
		*p++ = f->items[i].on_exit ? 'x' : 'e';
		*p++ = hex[f->items[i].slot >> 4 & 15];
		*p++ = hex[f->items[i].slot & 15];
		*p++ = hex[f->items[i].fmt >> 4 & 15];
		*p++ = hex[f->items[i].fmt & 15];
	}
	*p++ = ' ';
	/* the name as sel_write_name writes it (a control character as
	 * '?'), through the same buffer */
	for (const char *c = f->name;; c++) {
		if (!*c || p == buf + sizeof(buf)) {
			fwrite(buf, 1, (size_t)(p - buf), out);
			p = buf;
		}
		if (!*c)
			break;
		*p++ = (unsigned char)*c < 0x20 ? '?' : *c;
	}
	fputc('\n', out);
}

static int cmp_vaddr(const void *a, const void *b)
{
	const struct ra_func *x = a, *y = b;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* The comment that says which specs an object's file matched (read back
 * by ra_report_unmatched). */
#define MATCHED_LINE "# specs matched:"

/* One object's file: which specs it matched, the object, then one line
 * per function (an object without any still has its line: the runtime
 * then knows it was resolved). */
static void write_args(FILE *out, const char *obj, const char *build_id, struct ra_funcs *fs,
		       const unsigned char *matched, size_t n)
{
	if (fs->n) /* NULL without functions */
		qsort(fs->v, fs->n, sizeof(*fs->v), cmp_vaddr);
	fprintf(out, "sftrace-filter 1\n" MATCHED_LINE);
	for (size_t i = 0; i < n; i++)
		if (matched[i])
			fprintf(out, " %zu", i);
	fprintf(out, "\nobject %s %s\n", build_id, obj);
	for (size_t i = 0; i < fs->n; i++)
		put_func(out, &fs->v[i]);
}

/* A new 0600 file in record's private directory (whatever the umask: the
 * runtime refuses a file others may write, src/runtime/trust.c). */
static FILE *create_private(const char *path)
{
	int fd = notes_dir_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!out) {
		if (fd >= 0)
			close(fd);
		sf_error("%s: %s (needed by -A/-R/--auto-args)", path, strerror(errno));
	}
	return out;
}

static int close_private(FILE *out, const char *path)
{
	if (fclose(out) != 0) {
		sf_error("%s: %s", path, strerror(errno));
		unlink(path);
		return -1;
	}
	return 0;
}

/* DIR/.args-specs: the specs as given, for `sftrace filter --args` to
 * resolve in the objects that load later (ra_object_file). */
#define SPECS_MAGIC "sftrace-args-specs 1"

static int write_specs(const char *path, const struct ra_spec *specs, const char *const *opts, size_t n,
		       int auto_args)
{
	FILE *out = create_private(path);
	if (!out)
		return -1;
	fprintf(out, SPECS_MAGIC "\n");
	if (auto_args)
		fprintf(out, "--auto-args\n");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %s\n", opts[i], specs[i].text);
	return close_private(out, path);
}

/* 0 if the file at path is a script (#!) or an ELF file without an XRay
 * map (a launcher, sh, or a program whose instrumented code is all in
 * its libraries), else 1 (errors are sel_load's to report). */
static int has_xray_map(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char magic[2] = {0};
	struct xray_section sec;
	int script = fd >= 0 && pread(fd, magic, 2, 0) == 2 && magic[0] == '#' && magic[1] == '!';
	int found = fd >= 0 && !script ? xray_find_section(fd, &sec) : -1;
	if (fd >= 0)
		close(fd);
	return !script && found != 0;
}

int ra_write(const char *dir, const char *exe, const struct ra_spec *specs, const char *const *opts, size_t n,
	     int auto_args, char *path, size_t cap)
{
	struct ra_funcs fs = {0};
	char build_id[2 * 64 + 2] = "-", specs_path[PATH_MAX], abs[PATH_MAX], cli[PATH_MAX];
	unsigned char *matched = xcalloc(n + 1, 1);
	int in_exe = has_xray_map(exe);
	int rc = in_exe ? resolve_object(exe, specs, opts, n, auto_args, &fs, build_id, sizeof(build_id), matched) : 0;
	path[0] = 0;
	if (!rc && !realpath("/proc/self/exe", cli)) {
		sf_error("cannot find the sftrace binary: %s", strerror(errno));
		rc = -1;
	}
	if (!rc && in_exe) {
		if (!realpath(exe, abs))
			snprintf(abs, sizeof(abs), "%s", exe);
		snprintf(path, cap, "%s/.args", dir);
		FILE *out = create_private(path);
		if (out)
			write_args(out, abs, build_id, &fs, matched, n);
		rc = out ? close_private(out, path) : -1;
	}
	snprintf(specs_path, sizeof(specs_path), "%s/.args-specs", dir);
	if (!rc)
		rc = write_specs(specs_path, specs, opts, n, auto_args);
	if (!rc) {
		if (path[0])
			setenv(SF_ENV(ARGS), path, 1);
		setenv(SF_ENV(ARGS_SPECS), specs_path, 1);
		setenv(SF_ENV(CLI), cli, 1);
	} else {
		path[0] = 0;
	}
	free(matched);
	free_funcs(&fs);
	return rc;
}

/* The specs of a file write_specs wrote, parsed again (texts[i] holds
 * the text specs[i] points into; opts are static strings); *n of them
 * parsed, to be freed whatever is returned. -1 after a message. */
static int read_specs(const char *path, struct ra_spec **specs, const char ***opts, char ***texts, size_t *n,
		      int *auto_args)
{
	FILE *f = sf_fopen_regular(path);
	if (!f) {
		sf_error("%s: %s", path, sf_open_error(errno));
		return -1;
	}
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	int rc = 0, first = 1, bad_spec = 0;
	*n = 0;
	*auto_args = 0;
	while (!rc && !bad_spec && (len = getline(&line, &lcap, f)) >= 0) {
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		if (first) {
			first = 0;
			if (strcmp(line, SPECS_MAGIC))
				rc = -1;
			continue;
		}
		if (!strcmp(line, "--auto-args")) {
			*auto_args = 1;
			continue;
		}
		const char *opt = !strncmp(line, "-A ", 3) ? "-A" : !strncmp(line, "-R ", 3) ? "-R" : NULL;
		if (!opt) {
			rc = -1;
			break;
		}
		*specs = xrealloc(*specs, (*n + 1) * sizeof(**specs));
		*opts = xrealloc(*opts, (*n + 1) * sizeof(**opts));
		*texts = xrealloc(*texts, (*n + 1) * sizeof(**texts));
		(*texts)[*n] = xstrdup(line + 3);
		(*opts)[*n] = opt;
		if (ra_parse(&(*specs)[*n], opt, (*texts)[*n]) < 0) { /* after its message */
			free((*texts)[*n]);
			bad_spec = 1;
			break;
		}
		++*n;
	}
	if (rc || first)
		sf_error("%s: not a file of argument specs record wrote", path);
	fclose(f);
	free(line);
	return rc || first || bad_spec ? -1 : 0;
}

int ra_object_file(const char *specs_path, const char *obj, const char *out_path)
{
	struct ra_spec *specs = NULL;
	const char **opts = NULL;
	char **texts = NULL;
	size_t n = 0;
	int auto_args = 0;
	int rc = read_specs(specs_path, &specs, &opts, &texts, &n, &auto_args);
	struct ra_funcs fs = {0};
	char build_id[2 * 64 + 2] = "-", abs[PATH_MAX];
	unsigned char *matched = xcalloc(n + 1, 1);
	if (!rc)
		rc = resolve_object(obj, specs, opts, n, auto_args, &fs, build_id, sizeof(build_id), matched);
	if (!rc) {
		/* Written whole or not at all: the processes of a run share the
		 * file, and one may read it while another makes it. */
		char *text = NULL, err[PATH_MAX + 128];
		size_t len = 0;
		FILE *mem = open_memstream(&text, &len);
		if (!realpath(obj, abs))
			snprintf(abs, sizeof(abs), "%s", obj);
		write_args(mem, abs, build_id, &fs, matched, n);
		fclose(mem);
		sf_outfile_limit_mode(0600);
		struct sf_outfile *of = sf_outfile_open(out_path, 0, err, sizeof(err));
		if (!of) {
			sf_error("%s", err);
			rc = -1;
		} else {
			sf_outfile_write(of, text, len);
			rc = sf_outfile_commit(of);
		}
		free(text);
	}
	for (size_t i = 0; i < n; i++) {
		ra_free(&specs[i]);
		free(texts[i]);
	}
	free(specs);
	free(opts);
	free(texts);
	free(matched);
	free_funcs(&fs);
	return rc;
}

/* Marks in matched[] the specs the file at dirfd/name says it matched. */
static void read_matched(int dirfd, const char *name, unsigned char *matched, size_t n)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return;
	}
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, MATCHED_LINE, sizeof(MATCHED_LINE) - 1))
			continue;
		char *p = line + sizeof(MATCHED_LINE) - 1, *end;
		for (unsigned long i; (i = strtoul(p, &end, 10)), end != p; p = end)
			if (i < n)
				matched[i] = 1;
		break;
	}
	fclose(f);
}

void ra_report_unmatched(const char *dir, const struct ra_spec *specs, const char *const *opts, size_t n)
{
	int fd = n ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	unsigned char *matched = xcalloc(n, 1);
	for (struct dirent *e; (e = readdir(d));)
		if (!strcmp(e->d_name, ".args") || !strncmp(e->d_name, "args-", 5))
			read_matched(dirfd(d), e->d_name, matched, n);
	closedir(d);
	for (size_t i = 0; i < n; i++)
		if (!matched[i])
			sf_warn("%s '%s': no instrumented function of the program or of the objects it loaded is named "
				"'%s': nothing recorded for it (sftrace filter -p OBJECT -r REGEX shows which are)",
				opts[i], specs[i].text, specs[i].func);
	free(matched);
}
