/* OUT.args, the argument table `convert --type pola` writes when the logs
 * hold values recorded by record -A/-R (or --auto-args):
 *   frame_id u64   OUT's frame_id of the call
 *   index u32      0.. in the order shown by replay: the entry's values as
 *                  the spec lists them, then the return value
 *   name str       arg1..arg6, fparg1..fparg8, retval
 *   value str      as replay shows it: 3, "world", 1.500000, <unreadable> */
#ifndef SFTRACE_OUTPUT_CONV_POLA_ARGS_H
#define SFTRACE_OUTPUT_CONV_POLA_ARGS_H

#include "lib/frames.h"
#include "output/parquet.h"

struct pola_args;

/* NULL after printing why. */
struct pola_args *pola_args_open(const char *out, const struct pq_options *po);
/* At each frame's end: its rows, if it has values. -1 after a write failure. */
int pola_args_frame(struct pola_args *a, const struct fr_frame *f);
/* ok: finish and commit (or drop the file when it has no rows); else
 * remove it. -1 after printing why. */
int pola_args_finish(struct pola_args *a, int ok);

#endif
