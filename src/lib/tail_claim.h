/* Which allocations a tail call claims (docs/DESIGN.md, "Tail calls"),
 * shared by the heap replay (heap.c: stack nodes) and OUT.alloc
 * (conv_pola_alloc.c: frame ids).
 *
 * F's tail-call event closes F's frame; the thread is back in F's caller P
 * while F's tail callee runs, and nothing in the trace marks its return.
 * F's claim covers the heap events at P's level (the thread's innermost
 * traced frame is P's) that the callee makes; it lasts
 *   - across frames opened and closed above P (a traced function the
 *     untraced callee calls, a signal handler): their own allocations are
 *     theirs, and the claim stands after them; but when the frame opened
 *     is F's traced tail callee itself (a function F's code jumps to), its
 *     end returns to P and ends the claim;
 *   - across allocations whose call site lies in the function F jumps to
 *     (decoded from F's code: the jmp after its tail-call sled; make_pair
 *     allocating three blocks);
 *   - across every heap event elsewhere (in a library, deeper untraced
 *     code) whose return-address tag is the claim's first: the slot the
 *     callee returns through still holds P's call that entered it, so the
 *     callee has not returned (two() in an untraced library allocating
 *     twice before it returns);
 *   - without a tag: when F jumps to another object's function through
 *     the PLT or GOT (dupit's `jmp strdup@plt`), across frees in code of
 *     objects the log did not record, up to and including the first
 *     allocation there only: P's own later calls into the same library
 *     (asprintf, printf's stdout buffer) allocate there too, and nothing
 *     in the trace tells them apart from the callee's, so the claim takes
 *     the one block a libc tail callee usually makes and ends;
 *   - across the first allocation, wherever its call site (the callee may
 *     reach the allocator through deeper untraced code);
 *   - until a heap event whose call site lies in P's code (the allocator
 *     returns into P): if the call there is the call of F, F jumped to the
 *     allocator and the event is F's; if it calls another function, P
 *     called the allocator itself and the event is P's (after_who's own
 *     malloc after who's `jmp getpid`). Either way the callee has returned:
 *     the claim ends. An event without a site (the setup ABI's) or without
 *     symbols to tell is F's and ends it, except the free half of a
 *     setup-ABI realloc, which passes the claim on to its allocation half;
 *   - until a later allocation elsewhere (P called other untraced code that
 *     allocates, e.g. puts' buffer): P's, and the claim ends;
 *   - until a heap event's return-address tag (FORMAT.md: the low bits of
 *     the return address in the slot of the thread's last popped frame,
 *     which after F's tail call is the slot the callee returns through)
 *     differs from the claim's first: the callee returned and P called
 *     something else from another call site (via's `jmp make2`, then
 *     main's own make2()); the event is P's. Tags count only while no frame
 *     other than F's traced tail callee opened at P's level since F's tail
 *     call (that frame's entry took the shadow-stack entry); a tag of 0
 *     (unknown: aarch64, older logs, the slot off the current stack) is
 *     ignored;
 *   - until P's frame ends, or another tail call replaces the claim. A tail
 *     call by F's traced tail callee G (mid -> leaf -> malloc) replaces it
 *     with G's and keeps the chain's head F: an allocation returning to P
 *     at P's call of F is then G's, the last tail caller's.
 * Per thread: two ids, two function ids and a flag; the call-site test
 * runs only for heap events at P's level during a claim, memoized per
 * site. */
#ifndef SFTRACE_LIB_TAIL_CLAIM_H
#define SFTRACE_LIB_TAIL_CLAIM_H

#include <stdint.h>

#include "format/sflog.h"
#include "lib/frames.h"
#include "lib/log_reader.h"
#include "lib/log_symbols.h"
#include "lib/trace_input.h"

struct tail_claim {
	uint64_t tail;         /* F's frame (node or frame id); 0: no claim */
	uint64_t caller;       /* P's frame, where F's tail call returned */
	uint32_t tail_func, caller_func;
	uint32_t head_func;    /* the chain's first tail caller (mid in mid -> leaf -> malloc), else tail_func */
	uint64_t callee;       /* the traced tail callee's frame, once open (0: none) */
	int seen;              /* an allocation was claimed */
	int tags;              /* the heap events' return-address tags still tell the callee's extent */
	uint32_t tag0;         /* the claim's first tag: P's call that entered the callee (0: none yet) */
	enum ls_tail_jump how; /* where F's tail-call event says its jump went */
};

/* Frame f (id `id`) began in `parent`. */
static inline void tc_frame_begin(struct tail_claim *c, const struct trace_proc *p, const struct fr_frame *f,
				  uint64_t id, uint64_t parent)
{
	if (c->tail && parent == c->caller) {
		/* its entry takes the shadow-stack entry the tags read: a tail
		 * callee's holds the same slot; any other's does not */
		if (!c->callee && p && p->syms && ls_is_tail_callee(p->syms, c->tail_func, f->func_id, c->how))
			c->callee = id;
		else
			c->tags = 0;
	}
}

/* Frame f (id `id`) ended; the thread is back in `parent` (function
 * parent_func, UINT32_MAX for none). */
static inline void tc_frame_end(struct tail_claim *c, const struct fr_frame *f, uint64_t id, uint64_t parent,
				uint32_t parent_func)
{
	if (f->end_kind == FR_END_TAIL) {
		/* F is the traced tail callee of the claim's tail caller: a chain,
		 * whose allocator still returns to P after P's call of its head */
		uint32_t head = c->tail && c->callee == id ? c->head_func : f->func_id;
		*c = (struct tail_claim){.tail = id, .caller = parent, .tail_func = f->func_id, .caller_func = parent_func,
					 .head_func = head, .tags = 1,
					 .how = ls_tail_jump_of(f->proc ? f->proc->info->features : 0, f->tail_entry)};
	} else if (c->tail && (id == c->caller || id == c->callee))
		c->tail = 0;
}

/* The tail-calling frame that claims heap event ev of a thread whose
 * innermost frame is `cur`, or 0 (the event is cur's). */
static inline uint64_t tc_claim(struct tail_claim *c, uint64_t cur, const struct trace_proc *p,
				const struct lr_event *ev)
{
	uint32_t k = ev->kind;
	int alloc = k == SF_EV_ALLOC || k == SF_EV_REALLOC_ALLOC || k == SF_EV_HEAP_ALLOC || k == SF_EV_HEAP_REALLOC;
	int free_ = k == SF_EV_DEALLOC || k == SF_EV_REALLOC_DEALLOC || k == SF_EV_HEAP_FREE;
	if (!c->tail || cur != c->caller || !(alloc || free_))
		return 0;
	/* running: the tag is the claim's first, so the slot the callee
	 * returns through still holds P's call that entered it */
	int running = 0;
	if (c->tags && ev->ret_tag) {
		if (!c->tag0) {
			c->tag0 = ev->ret_tag;
		} else if (ev->ret_tag != c->tag0) { /* the callee returned; P called again */
			c->tail = 0;
			return 0;
		}
		running = 1;
	}
	uint64_t f = c->tail;
	int where = p->syms ? ls_tail_site(p->syms, ev->site, c->caller_func, c->tail_func) : LS_SITE_UNKNOWN;
	if (where == LS_SITE_CALLER_OWN && c->head_func != c->tail_func &&
	    ls_tail_site(p->syms, ev->site, c->caller_func, c->head_func) == LS_SITE_CALLS_TAILER)
		where = LS_SITE_CALLS_TAILER; /* P's call of the chain's head: the last tail caller's */
	switch (where) {
	case LS_SITE_CALLER_OWN:
		f = 0;
		/* fallthrough */
	case LS_SITE_CALLS_TAILER:
	case LS_SITE_UNKNOWN: /* the allocator returns into P: the tail callee is done */
		if (k != SF_EV_REALLOC_DEALLOC)
			c->tail = 0;
		return f;
	case LS_SITE_IN_CALLEE:
		c->seen |= alloc;
		return f;
	case LS_SITE_IN_LIBRARY: /* without a tag, the first allocation in the library ends the claim */
		if (running) {
			c->seen |= alloc;
			return f;
		}
		if (c->seen)
			break;
		if (alloc)
			c->tail = 0;
		return f;
	default: /* elsewhere */
		break;
	}
	if (!c->seen || running) { /* the first allocation, wherever its site, or the callee still runs */
		c->seen = alloc;
		return f;
	}
	if (alloc)
		c->tail = 0;
	return 0;
}

#endif
