/* The side files `convert --type pola` writes beside OUT, each a Parquet
 * file of its own (OUT.alloc, OUT.args): opened the same way, and kept only
 * when the conversion succeeded and they got rows. In conv_pola.c. */
#ifndef SFTRACE_OUTPUT_CONV_POLA_H
#define SFTRACE_OUTPUT_CONV_POLA_H

#include "lib/outfile.h"
#include "output/parquet.h"

struct pola_side {
	struct sf_outfile *of;
	struct pq_writer *w;
	char path[4096];       /* OUT.SUFFIX, for messages */
};

/* Starts OUT.suffix with these columns. 0, or -1 after printing why (then
 * nothing is left to free or remove). */
int pola_side_open(struct pola_side *s, const char *out, const char *suffix, const struct pq_column *cols,
		   int ncols, const struct pq_options *po);
/* ok and rows written: finish and commit; else remove the file. Frees the
 * writer. -1 after printing why. */
int pola_side_finish(struct pola_side *s, int ok);

#endif
