/* What `report` (cmd_report.c) and `report --diff` (report_diff.c) print
 * their tables with (cli/report_table.h). */
#include "cli/report_table.h"
#include "lib/demangle.h"
#include "lib/text_esc.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Prints `name` cut to `cols` columns (UTF-8 aware); cols < 0: whole.
 * Escaped first (text_esc.h): names come from the logs and their objects. */
void report_put_name(const char *name, int cols)
{
	name = sf_esc(name);
	if (cols < 0) {
		fputs(name, stdout);
		return;
	}
	/* `memory`'s cut (sf_fit_name): the function or method the name ends
	 * in stays, the path before it gives way */
	size_t cap = (size_t)cols * 4 + 8;
	char *buf = xmalloc(cap);
	sf_fit_name(name, (size_t)cols, buf, cap);
	fputs(buf, stdout);
	free(buf);
}

int report_fit_columns(int ncol, const char *const *names, const void *rows, size_t n,
		       void (*cells)(const void *rows, size_t i, char (*out)[32]), int width, int *wid)
{
	char c[ncol][32];
	for (int k = 0; k < ncol; k++)
		wid[k] = (int)strlen(names[k]);
	for (size_t i = 0; i < n; i++) {
		cells(rows, i, c);
		for (int k = 0; k < ncol; k++)
			if ((int)strlen(c[k]) > wid[k])
				wid[k] = (int)strlen(c[k]);
	}
	int used = 0;
	for (int k = 0; k < ncol; k++)
		used += wid[k] + 2;
	return width ? (width - used > 10 ? width - used : 10) : -1;
}

/* Tabs and newlines would break a TSV row: spaces; other control
 * characters escaped (text_esc.h). */
void report_put_tsv_name(const char *s)
{
	sf_esc_put(stdout, s, "\t\n\r");
}

int report_terminal_width(void)
{
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	const char *c = getenv("COLUMNS");
	return c && atoi(c) > 0 ? atoi(c) : 80;
}
