/* Which frame a tail call reached, for the views that mark it (replay's
 * and graph's "tail call from F"). F's tail-call event closes F's frame;
 * its callee, if traced, begins next at F's depth. Any other end first
 * means the callee was not traced. frames.c notes that frame on the
 * recorded events, before any cut (fr_frame.after_tail), so a cut that
 * drops the callee drops the mark with it. The frame that began there is
 * the callee only if F's code jumps to it, by a jump of the class the event
 * names (frames.h tail_entry, docs/FORMAT.md kind 15): after F tail-calls
 * strlen, F's caller's own next call of a function F can also jump to is
 * no tail callee (log_symbols.h ls_is_tail_callee). */
#ifndef SFTRACE_LIB_TAIL_MARK_H
#define SFTRACE_LIB_TAIL_MARK_H

#include <stdint.h>

#include "lib/frames.h"
#include "lib/log_symbols.h"
#include "lib/trace_input.h"

/* The function whose tail call reached frame f (begin or end), or
 * TM_NONE when f was reached by a call. */
#define TM_NONE UINT32_MAX
static inline uint32_t tm_tail_from(const struct fr_frame *f)
{
	struct log_symbols *syms = f->proc ? f->proc->syms : NULL;
	if (!f->after_tail || !syms)
		return TM_NONE;
	enum ls_tail_jump how = ls_tail_jump_of(f->proc->info->features, f->tail_from_entry);
	return ls_is_tail_callee(syms, f->tail_from, f->func_id, how) ? f->tail_from : TM_NONE;
}

#endif
