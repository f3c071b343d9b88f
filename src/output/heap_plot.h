/* `sftrace memory --plot OUT.svg|OUT.html`: heap size over time. */
#ifndef SFTRACE_OUTPUT_HEAP_PLOT_H
#define SFTRACE_OUTPUT_HEAP_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/heap.h"

struct heap_plot_options {
	const char *out;        /* .html: the SVG inside a page; else SVG */
	int fold;               /* each stage from its own start, overlaid */
	const uint8_t *select;  /* with fold: the stages drawn (NULL: all) */
	size_t nselect;
};

/* One panel per result (each needs heap_options.curve). 0, or -1 after
 * printing why (nothing is left at out then). */
int heap_plot_write(const struct heap_result *r, size_t nres, const struct heap_plot_options *opt);

#endif
