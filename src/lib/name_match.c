#define PCRE2_CODE_UNIT_WIDTH 8

#include "lib/name_match.h"

#include <errno.h>
#include <limits.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

struct nm_pattern {
	char *text;
	char origin[PATH_MAX + 32]; /* where it came from, for messages */
	pcre2_code *re;
};

int nm_parse_which(const char *s, enum nm_which *out)
{
	static const char *const names[] = {"demangled", "mangled", "both"};
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*out = (enum nm_which)i;
			return 0;
		}
	return -1;
}

void nm_add(struct nm_patterns *ps, const char *text, const char *origin)
{
	ps->v = xrealloc(ps->v, (ps->n + 1) * sizeof(*ps->v));
	struct nm_pattern *p = &ps->v[ps->n++];
	p->text = xstrdup(text);
	snprintf(p->origin, sizeof(p->origin), "%s", origin);
	p->re = NULL;
}

static char *trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = 0;
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

int nm_read_list(struct nm_patterns *ps, const char *path)
{
	FILE *f = sf_fopen_regular(path);
	if (!f) {
		sf_error("%s: %s", path, sf_open_error(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char origin[PATH_MAX + 32];
		snprintf(origin, sizeof(origin), "%s line %u", path, lineno);
		nm_add(ps, s, origin);
	}
	int bad = ferror(f);
	free(line);
	fclose(f);
	if (bad) {
		sf_error("%s: read error", path);
		return -1;
	}
	return 0;
}

/* UTF mode like the Rust regex crate; PCRE2_MATCH_INVALID_UTF lets a name
 * that is not valid UTF-8 be searched instead of failing the match. */
int nm_compile(struct nm_patterns *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct nm_pattern *p = &ps->v[i];
		int code;
		PCRE2_SIZE off;
		p->re = pcre2_compile((PCRE2_SPTR)p->text, PCRE2_ZERO_TERMINATED,
				      PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &off, NULL);
		if (!p->re) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(code, msg, sizeof(msg));
			sf_error("invalid regex '%s' (%s): %s at position %zu", p->text, p->origin,
				 (const char *)msg, (size_t)off);
			return -1;
		}
		pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->re, NULL);
		if (!md) {
			sf_error("out of memory");
			return -1;
		}
		if (!ps->md || pcre2_get_ovector_count(md) > pcre2_get_ovector_count(ps->md)) {
			pcre2_match_data_free(ps->md);
			ps->md = md;
		} else {
			pcre2_match_data_free(md);
		}
	}
	return 0;
}

int nm_match(const struct nm_patterns *ps, const char *s)
{
	if (!s)
		return 0;
	for (size_t i = 0; i < ps->n; i++)
		if (pcre2_match(ps->v[i].re, (PCRE2_SPTR)s, strlen(s), 0, 0, ps->md, NULL) >= 0)
			return 1;
	return 0;
}

int nm_match_last(const struct nm_patterns *ps, const char *s)
{
	if (!s)
		return -1;
	for (size_t i = ps->n; i-- > 0;)
		if (pcre2_match(ps->v[i].re, (PCRE2_SPTR)s, strlen(s), 0, 0, ps->md, NULL) >= 0)
			return (int)i;
	return -1;
}

const char *nm_text(const struct nm_patterns *ps, size_t i)
{
	return ps->v[i].text;
}

void nm_free(struct nm_patterns *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		free(ps->v[i].text);
		pcre2_code_free(ps->v[i].re);
	}
	free(ps->v);
	pcre2_match_data_free(ps->md);
	memset(ps, 0, sizeof(*ps));
}

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       (unsigned char)c >= 0x80;
}

/* A '<' opens generic arguments after a name (Vec<T>) or a turbofish's
 * "::"; elsewhere (start of the name, after '(' ',' '&' ' ') it opens a
 * qualified path such as <T as Trait>. C++'s operator< and operator<< are
 * names, not openers. */
static int opens_generics(const char *name, size_t i)
{
	if (i == 0 || !(name_char(name[i - 1]) || name[i - 1] == ':'))
		return 0;
	static const char op[] = "operator";
	size_t j = i;
	while (j > 0 && name[j - 1] == '<')
		j--;
	return !(j >= sizeof(op) - 1 && !memcmp(name + j - (sizeof(op) - 1), op, sizeof(op) - 1));
}

char *nm_elide_generics(const char *name)
{
	size_t len = strlen(name);
	char *out = xmalloc(3 * len + 4); /* "<>" becomes "<…>" */
	size_t o = 0, depth = 0;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (depth) {
			if (c == '<')
				depth++;
			else if (c == '>' && name[i - 1] != '-' && --depth == 0) {
				memcpy(out + o, "\xe2\x80\xa6>", 4); /* "…>" */
				o += 4;
			}
			continue;
		}
		out[o++] = c;
		if (c == '<' && opens_generics(name, i))
			depth = 1;
	}
	if (depth) { /* unbalanced: keep what was cut, marked */
		memcpy(out + o, "\xe2\x80\xa6", 3);
		o += 3;
	}
	out[o] = 0;
	return out;
}

/* A method's trailing qualifiers: replay and report print `S::get()` for
 * `S::get() const`, so a name is compared whole without them, on both
 * sides. */
static const char *const qualifiers[] = {" const", " volatile", " &&", " &", " noexcept"};
#define QUALIFIERS_RE "( const| volatile| &&| &| noexcept)*"

/* Length of text[0..n) without its trailing qualifiers. */
static size_t without_qualifiers(const char *text, size_t n)
{
	for (int again = 1; again;) {
		again = 0;
		for (size_t i = 0; i < sizeof(qualifiers) / sizeof(*qualifiers); i++) {
			size_t q = strlen(qualifiers[i]);
			if (n > q && !memcmp(text + n - q, qualifiers[i], q)) {
				n -= q;
				again = 1;
			}
		}
	}
	return n;
}

/* Length of text without its trailing qualifiers and then one trailing
 * "()". */
static size_t without_call_parens(const char *text)
{
	size_t n = without_qualifiers(text, strlen(text));
	return n > 2 && !memcmp(text + n - 2, "()", 2) ? n - 2 : n;
}

char *nm_whole_pattern(const char *text)
{
	size_t n = without_call_parens(text);
	/* \Q...\E quotes all but "\E" itself: that is closed and reopened. */
	char *out = xmalloc(6 * n + sizeof("^\\Q\\E(\\(.*\\))?" QUALIFIERS_RE "$"));
	size_t o = (size_t)sprintf(out, "^\\Q");
	for (size_t i = 0; i < n; i++) {
		if (text[i] == '\\' && i + 1 < n && text[i + 1] == 'E') {
			o += (size_t)sprintf(out + o, "\\E\\\\\\Q");
			continue;
		}
		out[o++] = text[i];
	}
	strcpy(out + o, "\\E(\\(.*\\))?" QUALIFIERS_RE "$");
	return out;
}
