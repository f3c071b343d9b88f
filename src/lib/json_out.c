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
