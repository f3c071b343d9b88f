#include "format/filter_file.h"

#include <stdio.h>
#include <string.h>

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static char *skip_space(char *p)
{
	while (is_space(*p))
		p++;
	return p;
}

/* Cuts the next whitespace-separated word out of *p. */
static char *word(char **p)
{
	char *s = skip_space(*p);
	char *e = s;
	while (*e && !is_space(*e))
		e++;
	if (*e)
		*e++ = 0;
	*p = e;
	return s;
}

static void trim_end(char *s)
{
	size_t n = strlen(s);
	while (n && is_space(s[n - 1]))
		s[--n] = 0;
}

/* '#' starts a comment at the start of a line or after a blank, so that
 * names such as Rust's `{closure#0}` and paths containing '#' survive. */
static void cut_comment(char *s)
{
	for (char *p = s; (p = strchr(p, '#')); p++)
		if (p == s || is_space(p[-1])) {
			*p = 0;
			return;
		}
}

static int parse_hex(const char *s, uint64_t *out)
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s)
		return -1;
	uint64_t v = 0;
	for (int n = 0; *s; s++, n++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return -1;
		if (n >= 16)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

int ff_build_id_from_hex(const char *hex, uint8_t *out, size_t cap)
{
	if (!strcmp(hex, "-"))
		return 0;
	size_t n = strlen(hex);
	if (n % 2 || n / 2 > cap || n == 0)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		uint64_t b;
		char two[3] = {hex[2 * i], hex[2 * i + 1], 0};
		if (parse_hex(two, &b) < 0)
			return -1;
		out[i] = (uint8_t)b;
	}
	return (int)(n / 2);
}

int ff_cache_name(const uint8_t *build_id, size_t len, const char *path, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the path */
	const char *prefix = "path-";
	if (!len) {
		for (const char *p = path; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		for (; *prefix && o < cap; prefix++)
			out[o++] = *prefix;
	}
	size_t digits = len ? 2 * len : 16;
	for (size_t i = 0; i < digits && o < cap; i++) {
		unsigned v = len ? (unsigned)(build_id[i / 2] >> (i % 2 ? 0 : 4)) & 15u
				 : (unsigned)(h >> (60 - 4 * i)) & 15u;
		out[o++] = hex[v];
	}
	for (const char *s = ".filter"; *s && o < cap; s++)
		out[o++] = *s;
	if (o >= cap)
		return -1;
	out[o] = 0;
	return 0;
}

static int fail(char *err, size_t errlen, unsigned line, const char *msg)
{
	if (err && errlen && !err[0])
		snprintf(err, errlen, "line %u: %s", line, msg);
	return -1;
}

int ff_parse(char *text, size_t len, const struct ff_handler *h, void *ctx, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	unsigned line = 0;
	int have_magic = 0, have_object = 0;
	size_t pos = 0;
	while (pos < len) {
		char *s = text + pos;
		size_t n = 0;
		while (pos + n < len && s[n] != '\n')
			n++;
		if (pos + n < len)
			s[n] = 0;
		else if (n && s[n - 1] != 0)
			return fail(err, errlen, line + 1, "missing newline at end of file");
		pos += n + 1;
		line++;
		if (memchr(s, 0, n))
			return fail(err, errlen, line, "NUL byte in filter file");
		cut_comment(s);
		trim_end(s);
		char *p = skip_space(s);
		if (!*p)
			continue;
		char *key = word(&p);
		if (!have_magic) {
			if (strcmp(key, FF_MAGIC) != 0)
				return fail(err, errlen, line, "not an sftrace filter file (first line must be 'sftrace-filter 1')");
			char *ver = word(&p);
			if (strcmp(ver, "1") != 0)
				return fail(err, errlen, line, "unsupported filter file version (this sftrace reads version 1)");
			have_magic = 1;
			continue;
		}
		if (!strcmp(key, "mode") || !strcmp(key, "unlisted")) {
			char *value = word(&p);
			if (*skip_space(p))
				return fail(err, errlen, line, "extra text after setting");
			if (!strcmp(key, "mode") && strcmp(value, "select") && strcmp(value, "within"))
				return fail(err, errlen, line, "mode must be 'select' or 'within'");
			if (!strcmp(key, "unlisted") && strcmp(value, "skip") && strcmp(value, "trace"))
				return fail(err, errlen, line, "unlisted must be 'skip' or 'trace'");
			if (h->setting && h->setting(ctx, key, value))
				return fail(err, errlen, line, "rejected setting");
		} else if (!strcmp(key, "object")) {
			char *bid = word(&p);
			char *path = skip_space(p);
			uint8_t tmp[64];
			if (!*bid || !*path)
				return fail(err, errlen, line, "expected 'object BUILD-ID PATH'");
			if (ff_build_id_from_hex(bid, tmp, sizeof(tmp)) < 0)
				return fail(err, errlen, line, "bad build-id (hex digits or '-')");
			have_object = 1;
			if (h->object && h->object(ctx, bid, path))
				return fail(err, errlen, line, "rejected object");
		} else {
			uint64_t vaddr;
			if (parse_hex(key, &vaddr) < 0)
				return fail(err, errlen, line, "expected a function address (hex), 'object', 'mode' or 'unlisted'");
			if (!have_object)
				return fail(err, errlen, line, "function listed before any 'object' line");
			if (h->func && h->func(ctx, vaddr, skip_space(p)))
				return fail(err, errlen, line, "rejected function");
		}
	}
	if (!have_magic)
		return fail(err, errlen, 1, "empty filter file");
	return 0;
}
