/* The tables of `report` (cmd_report.c) and `report --diff`
 * (report_diff.c): names cut to the terminal, TSV cells, column widths. */
#ifndef SFTRACE_CLI_REPORT_TABLE_H
#define SFTRACE_CLI_REPORT_TABLE_H

#include <stddef.h>
#include <stdio.h>

enum report_format { REPORT_TABLE, REPORT_TSV, REPORT_JSON };

/* Prints `name` cut to `cols` columns with "…" keeping its last component
 * (sf_fit_name); cols < 0: whole. */
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

#endif
