/* The interactive SVG flame graph of `sftrace flamegraph`: written by our
 * own code from the call-path tree, self-contained (inline CSS and a small
 * script: hover details, click to zoom, reset, search). */
#ifndef SFTRACE_OUTPUT_FLAMEGRAPH_H
#define SFTRACE_OUTPUT_FLAMEGRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "lib/trace_input.h"

struct fg_options {
	const char *out;     /* output path (written atomically) */
	int weight_calls;    /* frame width = calls in the subtree, not time */
	int weight_bytes;    /* fg_write_tree: the tree's total_ns are bytes */
	const char *title;   /* NULL: "Flame Graph" */
	unsigned width;      /* image width in px; 0: 1200 */
};

/* XML character data / attribute value, escaped, at most `maxchars`
 * characters (SIZE_MAX: all). Invalid UTF-8 becomes U+FFFD, control
 * characters '?' (XML 1.0 forbids them). Shared by the SVG writers. */
void fg_xml_text(FILE *f, const char *s, size_t maxchars);

/* One trace_run pass over `in`, then writes the SVG. Returns 0, or -1
 * after printing an error (nothing is left at opt->out then). */
int fg_write(struct trace_input *in, const struct fg_options *opt);

/* The same document for a tree built by the caller (cp_finish done), e.g.
 * leaked bytes by stack: frames whose duration is their bytes. */
struct cp_tree;
int fg_write_tree(struct cp_tree *t, struct trace_input *in, const struct fg_options *opt);

#endif
