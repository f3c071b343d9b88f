#include "lib/demangle.h"

#include <libiberty/demangle.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define LEGACY_HASH_DIGITS 16

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

/* A Rust legacy symbol is an Itanium nested name whose last component is
 * `h` + 16 hex digits ("17h...E"), optionally followed by a `.suffix`. */
static bool is_rust_legacy(const char *m)
{
	const char *e;

	if (strncmp(m, "_ZN", 3) != 0)
		return false;
	e = strchr(m, '.');
	if (!e)
		e = m + strlen(m);
	if (e - m < 3 + 3 + LEGACY_HASH_DIGITS + 1 || e[-1] != 'E')
		return false;
	e -= 1 + LEGACY_HASH_DIGITS;
	return memcmp(e - 3, "17h", 3) == 0 && all_hex(e, LEGACY_HASH_DIGITS);
}

/* libiberty's Rust demangler already omits the hash, but when it rejects a
 * legacy symbol (e.g. a hash with upper-case digits, which rustc-demangle
 * accepts) the C++ demangler answers instead and keeps "::h<hash>". */
static void strip_legacy_hash(char *d)
{
	size_t n = strlen(d), tail = 3 + LEGACY_HASH_DIGITS; /* "::h" + hex */

	if (n > tail && memcmp(d + n - tail, "::h", 3) == 0 &&
	    all_hex(d + n - LEGACY_HASH_DIGITS, LEGACY_HASH_DIGITS))
		d[n - tail] = '\0';
}

#define DM_FLAGS (DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO)

/* libiberty's recursion limits (DEMANGLE_RECURSION_LIMIT, the printer's
 * own, and a refusal of names over about 1,000 characters, its arrays
 * being on the stack) stop it between 200 and 300 nested templates, and
 * at 1,000 characters of a flat one, where llvm-cxxfilt goes on: a
 * function template over 400 nested class templates (2,011 chars) or 200
 * type arguments (10,212 chars) stayed mangled. A C++ name it refuses is
 * tried again without them, on a thread of its own whose stack is sized
 * for the name: 1 KiB a character. Measured stack needs (libiberty
 * 20230104, x86-64, docs/DESIGN.md "Names"): 430-460 bytes a character
 * for one level of nesting a character (`P` pointers, `C`, `G`), 260 for
 * nested templates, arrays and pack expansions, 125 for flat template
 * arguments and nested names; so a hostile name cannot exhaust it. Thread
 * stacks are mapped, not committed: a 10 kB flat name touches 1.3 MiB.
 * Longer names than UNLIMITED_MAX stay mangled (libiberty itself gives up
 * on a 3,000-deep pointer or 70,000 characters of flat arguments). */
#define UNLIMITED_PER_CHAR 1024
#define UNLIMITED_BASE (256u << 10)
#define UNLIMITED_MAX (64u << 10)

struct unlimited_job {
	const char *mangled;
	char *out;
};

static void *demangle_job(void *arg)
{
	struct unlimited_job *j = arg;
	j->out = cplus_demangle(j->mangled, DM_FLAGS | DMGL_NO_RECURSE_LIMIT);
	return NULL;
}

/* When no thread can be had: on this stack, for names of at most one
 * character per KiB of its limit (2 MiB assumed when unlimited, glibc's
 * thread default), as before the thread. */
static size_t inline_max(void)
{
	struct rlimit rl;
	rlim_t stack = 2u << 20;
	if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		stack = rl.rlim_cur;
	return (size_t)(stack / 1024);
}

static char *demangle_unlimited(const char *mangled)
{
	size_t len = strlen(mangled);
	struct unlimited_job j = {mangled, NULL};
	if (len > UNLIMITED_MAX)
		return NULL;
	pthread_attr_t at;
	pthread_t t;
	int started = 0;
	if (pthread_attr_init(&at) == 0) {
		started = pthread_attr_setstacksize(&at, UNLIMITED_BASE + len * UNLIMITED_PER_CHAR) == 0 &&
			  pthread_create(&t, &at, demangle_job, &j) == 0;
		pthread_attr_destroy(&at);
	}
	if (started)
		pthread_join(t, NULL);
	else if (len <= inline_max())
		demangle_job(&j);
	return j.out;
}

char *sf_demangle(const char *mangled)
{
	char *d;

	if (!mangled || !*mangled)
		return NULL;
	d = cplus_demangle(mangled, DM_FLAGS);
	if (!d && !strncmp(mangled, "_Z", 2))
		d = demangle_unlimited(mangled);
	if (d && is_rust_legacy(mangled))
		strip_legacy_hash(d);
	return d;
}

/* ---- the short style ---- */

enum lang { LANG_OTHER, LANG_RUST, LANG_CXX };

struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_str(struct sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static char sb_last(const struct sbuf *b) { return b->n ? b->p[b->n - 1] : 0; }

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* Index of the bracket closing s[i] within [i, e), or e. Inside `<…>`, the
 * `->` of `Fn() -> T` closes nothing. */
static size_t match_close(const char *s, size_t i, size_t e, char open, char close)
{
	int depth = 0;
	for (size_t j = i; j < e; j++) {
		if (s[j] == open)
			depth++;
		else if (s[j] == close && !(close == '>' && j > 0 && s[j - 1] == '-') && --depth == 0)
			return j;
	}
	return e;
}

static bool is_hex_run(const char *s, size_t n)
{
	return n > 0 && all_hex(s, n);
}

/* Inherent impl paths like `alloc::vec::Vec<…>` may drop their brackets. */
static bool simple_path(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(is_ident(s[i]) || s[i] == ':' || s[i] == '<' || s[i] == '>' || (unsigned char)s[i] >= 0x80))
			return false;
	return n > 0;
}

static void shorten(struct sbuf *b, const char *s, size_t i, size_t e, enum lang lang);

static size_t short_angle(struct sbuf *b, const char *s, size_t i, size_t e, enum lang lang, bool generic)
{
	size_t j = match_close(s, i, e, '<', '>');
	if (j == e) {
		sb_put(b, s + i, e - i);
		return e;
	}
	if (generic) {
		sb_str(b, "<…>");
		return j + 1;
	}
	struct sbuf in = {0};
	shorten(&in, s, i + 1, j, lang);
	bool bare = in.n && simple_path(in.p, in.n) && j + 2 < e && s[j + 1] == ':' && s[j + 2] == ':';
	if (!bare)
		sb_put(b, "<", 1);
	if (in.n)
		sb_put(b, in.p, in.n);
	if (!bare)
		sb_put(b, ">", 1);
	free(in.p);
	return j + 1;
}

/* `{closure#0}`, `{{closure}}`, `{lambda(int)#1}`: the name alone. */
static size_t short_brace(struct sbuf *b, const char *s, size_t i, size_t e)
{
	size_t j = match_close(s, i, e, '{', '}');
	if (j == e) {
		sb_put(b, s + i, e - i);
		return e;
	}
	size_t a = i + 1, z = j;
	if (z > a + 1 && s[a] == '{' && s[z - 1] == '}') {
		a++;
		z--;
	}
	size_t k = a;
	while (k < z && s[k] != '#' && s[k] != '(')
		k++;
	sb_put(b, "{", 1);
	sb_put(b, s + a, k - a);
	sb_put(b, "}", 1);
	return j + 1;
}

/* After `operator`: the operator's own characters, which are no brackets. */
static size_t copy_operator(struct sbuf *b, const char *s, size_t i, size_t e, bool *generic_next)
{
	if (i + 1 < e && ((s[i] == '(' && s[i + 1] == ')') || (s[i] == '[' && s[i + 1] == ']'))) {
		sb_put(b, s + i, 2);
		return i + 2;
	}
	size_t k = i;
	while (k < e && k - i < 3 && strchr("+-*/%^&|~!=<>,", s[k]))
		k++;
	sb_put(b, s + i, k - i);
	if (k < e && s[k] == ' ' && k + 1 < e && s[k + 1] == '<')
		k++; /* `operator<< <int>`: template arguments follow */
	*generic_next = k < e && s[k] == '<';
	return k;
}

static void shorten(struct sbuf *b, const char *s, size_t i, size_t e, enum lang lang)
{
	bool generic_next = false;
	while (i < e) {
		char c = s[i];
		if (c == '<') {
			char last = sb_last(b);
			bool generic = generic_next || is_ident(last) || last == ':' || last == '}';
			generic_next = false;
			i = short_angle(b, s, i, e, lang, generic);
		} else if (c == '{') {
			i = short_brace(b, s, i, e);
		} else if (c == '[' && is_ident(sb_last(b)) && lang != LANG_CXX) {
			size_t j = match_close(s, i, e, '[', ']');
			if (j < e && is_hex_run(s + i + 1, j - i - 1))
				i = j + 1; /* a crate disambiguator */
			else
				sb_put(b, s + i++, 1);
		} else if (c == ' ' && !strncmp(s + i, " [clone ", 8)) {
			i = match_close(s, i + 1, e, '[', ']') + 1;
		} else if (c == '(' && lang == LANG_CXX && !strncmp(s + i, "(anonymous namespace)", 21)) {
			sb_put(b, s + i, 21);
			i += 21;
		} else if (c == '(' && lang == LANG_CXX) {
			size_t j = match_close(s, i, e, '(', ')');
			sb_str(b, j == i + 1 ? "()" : "(…)");
			i = j < e ? j + 1 : e;
		} else if (is_ident(c)) {
			size_t k = i;
			while (k < e && is_ident(s[k]))
				k++;
			sb_put(b, s + i, k - i);
			bool op = k - i == 8 && !strncmp(s + i, "operator", 8) && lang == LANG_CXX;
			i = op ? copy_operator(b, s, k, e, &generic_next) : k;
		} else {
			sb_put(b, s + i++, 1);
		}
	}
}

/* `void foo<…>(…)`: a template function's return type goes. The last space
 * outside brackets before the parameter list ends it (not the one of
 * `operator new`). */
static size_t return_type_end(const char *s)
{
	size_t cut = 0;
	int depth = 0;
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		if (c == '<' || c == '{' || c == '[')
			depth++;
		else if (c == '>' || c == '}' || c == ']')
			depth--;
		else if (c == '(' && !strncmp(s + i, "(anonymous namespace)", 21))
			i += 20;
		else if (c == '(' && depth == 0)
			break;
		else if (c == ' ' && depth == 0 && !(i >= 8 && !strncmp(s + i - 8, "operator", 8)))
			cut = i + 1;
	}
	return cut;
}

char *sf_short_name(const char *name, const char *mangled)
{
	enum lang lang = LANG_OTHER;
	if (mangled && (!strncmp(mangled, "_R", 2) || is_rust_legacy(mangled)))
		lang = LANG_RUST;
	else if (mangled && !strncmp(mangled, "_Z", 2))
		lang = LANG_CXX;
	struct sbuf b = {0};
	sb_put(&b, "", 0);
	shorten(&b, name, 0, strlen(name), lang);
	strip_legacy_hash(b.p);
	if (lang == LANG_CXX) {
		size_t cut = return_type_end(b.p);
		if (cut)
			memmove(b.p, b.p + cut, strlen(b.p + cut) + 1);
	}
	return b.p;
}

/* n less a member function's trailing qualifiers (" const", " &&"...). */
static size_t sans_qualifiers(const char *name, size_t n)
{
	static const char *const quals[] = {" const", " volatile", " &&", " &", " noexcept", " restrict"};
	for (size_t k = 0; k < sizeof(quals) / sizeof(quals[0]); k++) {
		size_t q = strlen(quals[k]);
		if (n > q && !memcmp(name + n - q, quals[k], q))
			return sans_qualifiers(name, n - q);
	}
	return n;
}

size_t sf_name_sans_params(const char *name, const char *mangled)
{
	size_t all = strlen(name), n = all;
	if (!mangled || strncmp(mangled, "_Z", 2) || !n)
		return n;
	n = sans_qualifiers(name, n);
	if (!n || name[n - 1] != ')')
		return all;
	int level = 0;
	for (size_t i = n; i-- > 0;) {
		if (name[i] == ')')
			level++;
		else if (name[i] == '(' && --level == 0)
			return i ? i : all;
	}
	return all;
}

/* Display columns of UTF-8 text (one per code point). */
static size_t text_cols(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n && s[i]; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* Appends the first `cols` columns of s[0, n) (never half a character). */
static void put_cols(char *buf, size_t cap, size_t *len, const char *s, size_t n, size_t cols)
{
	size_t k = 0, c = 0;
	for (; k < n && s[k]; k++)
		if (((unsigned char)s[k] & 0xc0) != 0x80 && ++c > cols)
			break;
	if (*len + k >= cap)
		k = *len + 1 < cap ? cap - *len - 1 : 0;
	memcpy(buf + *len, s, k);
	*len += k;
	buf[*len] = 0;
}

static void put_str(char *buf, size_t cap, size_t *len, const char *s)
{
	put_cols(buf, cap, len, s, strlen(s), SIZE_MAX);
}

/* Where the last component of a qualified name starts: after its last
 * `::` outside <>, (), [] and {} (0: none); a Rust turbofish (`::<…>`)
 * belongs to the component before it (`reserve_rehash::<…>`). */
static size_t last_component(const char *name)
{
	size_t at = 0;
	int depth = 0;
	for (size_t i = 0; name[i]; i++) {
		char c = name[i];
		if (c == '<' || c == '(' || c == '[' || c == '{')
			depth++;
		else if ((c == '>' || c == ')' || c == ']' || c == '}') && depth > 0)
			depth--;
		else if (c == ':' && name[i + 1] == ':' && depth == 0 && name[i + 2] != '<')
			at = i + 2, i++;
	}
	return at;
}

void sf_fit_name(const char *name, size_t cols, char *buf, size_t cap)
{
	size_t len = 0, n = strlen(name), all = text_cols(name, n);
	if (!cap)
		return;
	buf[0] = 0;
	if (all <= cols) {
		put_str(buf, cap, &len, name);
		return;
	}
	if (!cols)
		return;
	size_t at = last_component(name), tail = at ? text_cols(name + at - 2, n) : 0;
	if (at && tail + 2 <= cols) { /* "ns::Class…::method": at least a column of the path */
		put_cols(buf, cap, &len, name, at - 2, cols - tail - 1);
		put_str(buf, cap, &len, "…");
		put_str(buf, cap, &len, name + at - 2);
		return;
	}
	/* the last component alone is too wide (or there is no path): its
	 * start, cut at the end, after "…" when a path was left out */
	const char *s = at ? name + at : name;
	size_t room = at ? cols - 1 : cols;
	if (at)
		put_str(buf, cap, &len, "…");
	if (text_cols(s, strlen(s)) <= room) {
		put_str(buf, cap, &len, s);
		return;
	}
	if (!room)
		return;
	put_cols(buf, cap, &len, s, strlen(s), room - 1);
	put_str(buf, cap, &len, "…");
}
