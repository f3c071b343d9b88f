/* OUT.alloc, the allocation table `convert --type pola` writes next to the
 * reference tool's two files when the logs hold allocation events:
 *   frame_id u64   the innermost traced frame open on the thread (OUT's
 *                  frame_id; 0: none), or the frame of F when F's tail
 *                  call claims the allocation (F ends in `jmp malloc`,
 *                  or jumps to untraced code that allocates: the rule is
 *                  lib/tail_claim.h's, as in `sftrace memory`),
 *                  tid u32, time duration[ns] (as OUT's: the recording's
 *                  time base, every process shifted onto it),
 *   kind u32       1 alloc, 2 dealloc, 3 realloc-alloc, 4 realloc-dealloc
 *                  (the setup ABI's kinds; an interposed realloc is a 4 row
 *                  for the old block, then a 3 row for the new one),
 *   ptr u64, size u64 (0 for frees), align u64 (0: the allocator's default),
 *   site u64       the call site's ELF address in its object (0: unknown),
 *   site_name str  the function holding the call site, or its runtime
 *                  address in hex when no recorded object holds it. */
#ifndef SFTRACE_OUTPUT_CONV_POLA_ALLOC_H
#define SFTRACE_OUTPUT_CONV_POLA_ALLOC_H

#include "lib/trace_input.h"
#include "output/parquet.h"

struct pola_alloc;

/* NULL after printing why. */
struct pola_alloc *pola_alloc_open(const char *out, const struct pq_options *po);
/* Frame f began (begin: 1) or ended; a frame ended by its tail call may
 * claim the allocations that follow (tail_claim.h). */
void pola_alloc_frame(struct pola_alloc *a, const struct fr_frame *f, int begin);
/* trace_sink callbacks. */
int pola_alloc_process_begin(struct pola_alloc *a, const struct trace_proc *p);
int pola_alloc_event(void *ctx, const struct trace_proc *p, const struct lr_event *ev);
/* ok: finish and commit (or drop the file when it has no rows); else
 * remove it. -1 after printing why. */
int pola_alloc_finish(struct pola_alloc *a, int ok);

#endif
