#include "lib/json_out.h"

#include "lib/util.h"

void json_put_str(FILE *m, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', m);
	while (*p) {
		if (*p == '"' || *p == '\\') {
			fputc('\\', m);
			fputc(*p++, m);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(m, "\\u%04x", *p++);
		} else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0) {
			/* C1 controls (U+0080..U+009F): terminals act on them
			 * too, so JSON printed raw stays inert (text_esc.h). */
			fprintf(m, "\\u%04x", p[1]);
			p += 2;
		} else {
			size_t n = sf_utf8_len(p);
			if (n) {
				fwrite(p, 1, n, m);
				p += n;
			} else {
				fputs("\\ufffd", m);
				p++;
			}
		}
	}
	fputc('"', m);
}
