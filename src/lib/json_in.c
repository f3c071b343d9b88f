/* A small recursive-descent JSON reader (json_in.h). Depth is bounded so a
 * hostile document cannot exhaust the stack. */
#include "lib/json_in.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

#define JV_MAX_DEPTH 200

struct parser {
	const char *p;
	const char *start;
	char *err;
	size_t errlen;
	int failed;
};

static void fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parser *ps, const char *fmt, ...)
{
	if (ps->failed)
		return;
	ps->failed = 1;
	char msg[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "JSON: %s at byte %zu", msg, (size_t)(ps->p - ps->start));
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* \uXXXX at s (after the backslash-u), with a following low surrogate for
 * a high one; the code point in *cp, the input used in the return. */
static size_t unicode_escape(struct parser *ps, const char *s, unsigned *cp)
{
	if (hex4(s, cp) < 0) {
		fail(ps, "bad \\u escape");
		return 0;
	}
	if (*cp >= 0xd800 && *cp < 0xdc00) {
		unsigned lo;
		if (s[4] != '\\' || s[5] != 'u' || hex4(s + 6, &lo) < 0 || lo < 0xdc00 || lo >= 0xe000) {
			fail(ps, "lone surrogate in \\u escape");
			return 0;
		}
		*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
		return 10;
	}
	if (*cp >= 0xdc00 && *cp < 0xe000) {
		fail(ps, "lone surrogate in \\u escape");
		return 0;
	}
	return 4;
}

/* A string at ps->p (on its opening quote); the decoded text, malloc'd. */
static char *parse_string(struct parser *ps)
{
	const char *s = ++ps->p;
	/* The decoded text is never longer than the escaped one. */
	const char *end = s;
	while (*end && *end != '"')
		end += (*end == '\\' && end[1]) ? 2 : 1;
	if (*end != '"') {
		fail(ps, "unterminated string");
		return NULL;
	}
	char *out = xmalloc((size_t)(end - s) + 1), *o = out;
	while (s < end) {
		if ((unsigned char)*s < 0x20) {
			ps->p = s;
			fail(ps, "control character in string");
			free(out);
			return NULL;
		}
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		char c = s[1];
		s += 2;
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned cp;
			size_t used = unicode_escape(ps, s, &cp);
			if (!used || s + used > end) {
				ps->p = s;
				fail(ps, "bad \\u escape");
				free(out);
				return NULL;
			}
			s += used;
			o += put_utf8(o, cp);
			break;
		}
		default:
			ps->p = s - 2;
			fail(ps, "bad escape");
			free(out);
			return NULL;
		}
	}
	*o = 0;
	ps->p = end + 1;
	return out;
}

static int parse_value(struct parser *ps, struct jv *v, int depth);

static void append(struct jv *v, size_t *cap, char *key)
{
	if (v->n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		v->items = xrealloc(v->items, *cap * sizeof(*v->items));
		if (v->type == JV_OBJECT)
			v->keys = xrealloc(v->keys, *cap * sizeof(*v->keys));
	}
	memset(&v->items[v->n], 0, sizeof(v->items[0]));
	if (v->type == JV_OBJECT)
		v->keys[v->n] = key;
	v->n++;
}

/* An array or object at ps->p (on its opening bracket). */
static int parse_container(struct parser *ps, struct jv *v, int depth)
{
	char close = *ps->p == '[' ? ']' : '}';
	v->type = close == ']' ? JV_ARRAY : JV_OBJECT;
	size_t cap = 0;
	ps->p++;
	skip_ws(ps);
	if (*ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		skip_ws(ps);
		if (v->type == JV_OBJECT) {
			if (*ps->p != '"') {
				fail(ps, "expected a string key");
				return -1;
			}
			if (!(key = parse_string(ps)))
				return -1;
			skip_ws(ps);
			if (*ps->p != ':') {
				free(key);
				fail(ps, "expected ':'");
				return -1;
			}
			ps->p++;
		}
		append(v, &cap, key);
		if (parse_value(ps, &v->items[v->n - 1], depth + 1) < 0)
			return -1;
		skip_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			return 0;
		}
		fail(ps, "expected ',' or '%c'", close);
		return -1;
	}
}

static int parse_literal(struct parser *ps, struct jv *v, const char *word, enum jv_type type)
{
	size_t n = strlen(word);
	if (strncmp(ps->p, word, n)) {
		fail(ps, "unexpected character");
		return -1;
	}
	ps->p += n;
	v->type = type;
	return 0;
}

static int parse_number(struct parser *ps, struct jv *v)
{
	char *end;
	v->number = strtod(ps->p, &end);
	if (end == ps->p) {
		fail(ps, "unexpected character");
		return -1;
	}
	ps->p = end;
	v->type = JV_NUMBER;
	return 0;
}

static int parse_value(struct parser *ps, struct jv *v, int depth)
{
	if (depth > JV_MAX_DEPTH) {
		fail(ps, "nested deeper than %d", JV_MAX_DEPTH);
		return -1;
	}
	skip_ws(ps);
	switch (*ps->p) {
	case '{':
	case '[':
		return parse_container(ps, v, depth);
	case '"':
		v->type = JV_STRING;
		return (v->string = parse_string(ps)) ? 0 : -1;
	case 't':
		return parse_literal(ps, v, "true", JV_TRUE);
	case 'f':
		return parse_literal(ps, v, "false", JV_FALSE);
	case 'n':
		return parse_literal(ps, v, "null", JV_NULL);
	case '-':
	case '0' ... '9':
		return parse_number(ps, v);
	case 0:
		fail(ps, "unexpected end");
		return -1;
	default:
		fail(ps, "unexpected character");
		return -1;
	}
}

static void free_members(struct jv *v)
{
	free(v->string);
	for (size_t i = 0; i < v->n; i++) {
		free_members(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
}

struct jv *jv_parse(const char *text, char *err, size_t errlen)
{
	struct parser ps = {.p = text, .start = text, .err = err, .errlen = errlen};
	struct jv *v = xcalloc(1, sizeof(*v));
	if (parse_value(&ps, v, 0) == 0) {
		skip_ws(&ps);
		if (*ps.p)
			fail(&ps, "text after the value");
	}
	if (ps.failed) {
		jv_free(v);
		return NULL;
	}
	return v;
}

void jv_free(struct jv *v)
{
	if (!v)
		return;
	free_members(v);
	free(v);
}

const struct jv *jv_get(const struct jv *obj, const char *key)
{
	if (!obj || obj->type != JV_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

const struct jv *jv_at(const struct jv *arr, size_t i)
{
	return arr && arr->type == JV_ARRAY && i < arr->n ? &arr->items[i] : NULL;
}

size_t jv_len(const struct jv *arr)
{
	return arr && arr->type == JV_ARRAY ? arr->n : 0;
}

const char *jv_str(const struct jv *v)
{
	return v && v->type == JV_STRING ? v->string : NULL;
}

int jv_true(const struct jv *v)
{
	return v && v->type == JV_TRUE;
}

int jv_has_str(const struct jv *arr, const char *s)
{
	for (size_t i = 0; i < jv_len(arr); i++) {
		const char *x = jv_str(jv_at(arr, i));
		if (x && !strcmp(x, s))
			return 1;
	}
	return 0;
}
