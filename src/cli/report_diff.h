/* `report --diff OLD NEW` (report_diff.c), started by cmd_report.c. */
#ifndef SFTRACE_CLI_REPORT_DIFF_H
#define SFTRACE_CLI_REPORT_DIFF_H

#include "cli/input_opts.h"
#include "cli/report_table.h"

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
