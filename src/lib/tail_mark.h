/* Which frame a tail call reached, for the views that mark it (replay's
 * and graph's "tail call from F"). F's tail-call event closes F's frame;
 * its callee, if traced, begins next at F's depth. Any other end first
 * means the callee was not traced. The frame that begins there is the
 * callee only if F's code jumps to it, by a jump of the class the event
 * names (frames.h tail_entry, docs/FORMAT.md kind 15): after F tail-calls
 * strlen, F's caller's own next call of a function F can also jump to is
 * no tail callee. */
#ifndef SFTRACE_LIB_TAIL_MARK_H
#define SFTRACE_LIB_TAIL_MARK_H

#include <stdint.h>

#include "lib/frames.h"
#include "lib/log_reader.h"
#include "lib/log_symbols.h"
#include "lib/trace_input.h"

struct tail_mark {
	int open;              /* the last frame to end at `depth` ended with a tail call */
	uint32_t from, depth;  /* its function and depth */
	enum ls_tail_jump how; /* where its event says the jump went */
};

/* Frame f ended. */
static inline void tm_frame_end(struct tail_mark *m, const struct fr_frame *f)
{
	m->open = f->end_kind == FR_END_TAIL;
	m->from = f->func_id;
	m->depth = f->depth;
	m->how = ls_tail_jump_of(f->proc ? f->proc->info->features : 0, f->tail_entry);
}

/* Frame f begins: 1 when it is the tail callee of the frame that ended
 * before it (m->from, the mark's "from"). */
static inline int tm_frame_begin(struct tail_mark *m, const struct fr_frame *f, struct log_symbols *syms)
{
	int tail = m->open && f->depth == m->depth && syms && ls_is_tail_callee(syms, m->from, f->func_id, m->how);
	m->open = 0;
	return tail;
}

#endif
