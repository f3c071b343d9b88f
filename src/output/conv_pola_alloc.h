/* OUT.alloc, the allocation table `convert --type pola` writes next to the
 * reference tool's two files when the logs hold allocation events:
 *   frame_id u64   the innermost traced frame open on the thread (OUT's
 *                  frame_id; 0: none), or the frame of F when the
 *                  allocation came right after F's tail call (F ends in
 *                  `jmp malloc`: no event in between on the thread),
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
/* The thread's innermost open frame is now frame_id (at each begin: its id,
 * at each end: its parent); a frame ended by its tail call is kept for the
 * allocation that may follow. */
static inline void pola_alloc_frame(struct pola_alloc *a, const struct fr_frame *f, uint64_t frame_id);
/* trace_sink callbacks. */
int pola_alloc_process_begin(struct pola_alloc *a, const struct trace_proc *p);
int pola_alloc_event(void *ctx, const struct trace_proc *p, const struct lr_event *ev);
/* ok: finish and commit (or drop the file when it has no rows); else
 * remove it. -1 after printing why. */
int pola_alloc_finish(struct pola_alloc *a, int ok);

struct pola_alloc_frames {
	uint64_t *cur;  /* by lr_thread.index of the current process */
	uint64_t *tail; /* the frame whose tail call was the thread's latest event (0: none) */
	size_t n;
};

static inline void pola_alloc_frame(struct pola_alloc *a, const struct fr_frame *f, uint64_t frame_id)
{
	struct pola_alloc_frames *fr = (struct pola_alloc_frames *)a; /* first member */
	if (f->thread->index < fr->n) {
		fr->cur[f->thread->index] = frame_id;
		fr->tail[f->thread->index] = f->end_kind == FR_END_TAIL ? f->id : 0;
	}
}

#endif
