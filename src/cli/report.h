/* What `report` (cmd_report.c) and `report --diff` (report_diff.c) share. */
#ifndef SFTRACE_CLI_REPORT_H
#define SFTRACE_CLI_REPORT_H

#include <stdio.h>

#include "cli/input_opts.h"

enum report_format { REPORT_TABLE, REPORT_TSV, REPORT_JSON };

/* Prints `name` cut to `cols` columns (UTF-8 aware); cols < 0: whole. */
void report_put_name(const char *name, int cols);
/* A name in a TSV cell: tabs and newlines become spaces. */
void report_put_tsv_name(const char *s);
/* Widths of a table's ncol value columns (at least the header's), from the
 * cells of rows [0, n) as cells(rows, i, out) formats them (32 bytes each);
 * returns the columns left for the trailing name (-1: whole, width 0). */
int report_fit_columns(int ncol, const char *const *names, const void *rows, size_t n,
		       void (*cells)(const void *rows, size_t i, char (*out)[32]), int width, int *wid);
/* Columns of the terminal on stdout (COLUMNS, else 80). */
int report_terminal_width(void);

struct report_diff_opts {
	const char *sort;      /* self (default), total, calls or name; NULL: self */
	long limit;            /* rows; <0: all */
	enum report_format format;
	int color;
	int width;             /* terminal columns, 0: do not truncate */
	int by_name;           /* rows keyed by (short) name, as report's */
};

/* report --diff: argv[first] is OLD, argv[first + 1] NEW (argc - first must
 * be 2). Returns the exit status; errors are printed. */
int report_diff(struct input_opts *io, int argc, char **argv, int first, const struct report_diff_opts *o);

#endif
