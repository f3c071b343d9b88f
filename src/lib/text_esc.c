#include "lib/text_esc.h"

#include <string.h>

#include "lib/util.h"

size_t sf_esc_unsafe(const unsigned char *p)
{
	if (*p < 0x20 || *p == 0x7f)
		return 1;
	if (*p < 0x80)
		return 0;
	size_t n = sf_utf8_len(p);
	if (!n)
		return 1; /* not UTF-8: the byte alone */
	if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0)
		return 2; /* U+0080..U+009F */
	return 0;
}

static size_t step(const unsigned char *p, size_t *bad)
{
	*bad = sf_esc_unsafe(p);
	return *bad ? *bad : sf_utf8_len(p);
}

static void put_hex(char *out, unsigned char c)
{
	out[0] = '\\';
	out[1] = 'x';
	out[2] = "0123456789abcdef"[c >> 4];
	out[3] = "0123456789abcdef"[c & 15];
}

const char *sf_esc(const char *s)
{
	static char *slot[SF_ESC_SLOTS];
	static size_t cap[SF_ESC_SLOTS];
	static unsigned next;
	if (!s)
		return NULL;
	const unsigned char *p = (const unsigned char *)s;
	size_t len = 0, extra = 0, bad;
	/* Fast path, dump's per-event case: printable ASCII needs no check. */
	while (p[len] >= 0x20 && p[len] < 0x7f)
		len++;
	if (!p[len])
		return s;
	while (p[len]) {
		size_t n = step(p + len, &bad);
		extra += 3 * bad;
		len += n;
	}
	if (!extra)
		return s;
	unsigned k = next++ % SF_ESC_SLOTS;
	if (cap[k] < len + extra + 1) {
		cap[k] = len + extra + 1;
		slot[k] = xrealloc(slot[k], cap[k]);
	}
	char *o = slot[k];
	while (*p) {
		size_t n = step(p, &bad);
		if (bad) {
			for (size_t i = 0; i < bad; i++, o += 4)
				put_hex(o, p[i]);
		} else {
			memcpy(o, p, n);
			o += n;
		}
		p += n;
	}
	*o = '\0';
	return slot[k];
}

void sf_esc_put(FILE *f, const char *s, const char *as_space)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t bad;
	while (*p) {
		size_t n = step(p, &bad);
		if (*p < 0x80 && as_space && strchr(as_space, *p)) {
			fputc(' ', f);
		} else if (bad) {
			char hex[4];
			for (size_t i = 0; i < bad; i++) {
				put_hex(hex, p[i]);
				fwrite(hex, 1, 4, f);
			}
		} else {
			fwrite(p, 1, n, f);
		}
		p += n;
	}
}
