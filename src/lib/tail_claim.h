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
 * Tail calls made inside the callee do not replace F's claim: claims are
 * kept per level (tc_stack). A frame above P that tail-calls (outer ->
 * measure -> strlen, a signal handler's hgrab -> malloc) claims at its own
 * level and its claim goes with that level's frame. A frame the callee
 * opened at P's level that tail-calls (tsearch's comparator ending in
 * `jmp strcmp`) nests a claim over F's that keeps only its own events:
 * sites in the function it jumps to, in P's code after a call of it; for
 * others the tag tells whether P itself called it (F's claim is stale and
 * the nested one replaces it) or the callee did (the event passes to
 * F's); tc_nested.
 * Once such a frame H opened at P's level, the tag reads H's slot: a tag
 * equal to the event's own call site says that the function that called
 * H (the callee) makes this call, so it still runs.
 * Per claim: two ids, three function ids and flags; the call-site test
 * runs only for heap events at P's level during a claim, memoized per
 * site. */
#ifndef SFTRACE_LIB_TAIL_CLAIM_H
#define SFTRACE_LIB_TAIL_CLAIM_H

#include <stdint.h>
#include <stdlib.h>

#include "format/sflog.h"
#include "lib/frames.h"
#include "lib/log_reader.h"
#include "lib/log_symbols.h"
#include "lib/trace_input.h"
#include "lib/util.h"

struct tail_claim {
	uint64_t tail;         /* F's frame (node or frame id); 0: no claim */
	uint64_t caller;       /* P's frame, where F's tail call returned */
	uint32_t tail_func, caller_func;
	uint32_t head_func;    /* the chain's first tail caller (mid in mid -> leaf -> malloc), else tail_func */
	uint64_t callee;       /* the traced tail callee's frame, once open (0: none) */
	int seen;              /* an allocation was claimed */
	int tags;              /* TC_TAGS_*: what the heap events' return-address tags tell */
	int nested;            /* made by a frame the callee opened at P's level (not F's traced tail callee) */
	uint32_t tag0;         /* the claim's first tag: P's call that entered the callee (0: none yet) */
	int tag0_indirect;     /* tag0 names an indirect call in P, which may call the callee itself */
	enum ls_tail_jump how; /* where F's tail-call event says its jump went */
};

/* The tags' slot: F's (a tag equal to the first one: the callee still
 * runs), a frame the callee opened at P's level (a tag naming the event's
 * own call site: the function that called that frame makes this call from
 * the same stack slot, so it still runs), or none that tells. */
enum { TC_TAGS_NONE = 0, TC_TAGS_FIRST = 1, TC_TAGS_OPENED = 2 };

/* A thread's claims, one per level (a nested claim shares its outer
 * claim's level): a tail call made inside F's tail callee, by a frame
 * opened above P (a traced function the callee called, a signal handler)
 * or at P's level by the callee, claims what its own callee allocates and
 * leaves F's claim standing below it. */
struct tc_stack {
	struct tail_claim *v;
	uint32_t n, cap;
};

static inline void tc_free(struct tc_stack *s)
{
	free(s->v);
	*s = (struct tc_stack){0};
}

static inline struct tail_claim *tc_top(struct tc_stack *s)
{
	return s->n ? &s->v[s->n - 1] : NULL;
}

static inline struct tail_claim *tc_push(struct tc_stack *s)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	return &s->v[s->n++];
}

/* The low bits of a return address a tag keeps (FORMAT.md). */
static inline uint32_t tc_tag_of(uint64_t addr)
{
	return (uint32_t)(addr & ((1u << (32 - SF_KIND_BITS)) - 1));
}

/* Frame f (id `id`) began in `parent`. */
static inline void tc_frame_begin(struct tc_stack *s, const struct trace_proc *p, const struct fr_frame *f,
				  uint64_t id, uint64_t parent)
{
	struct tail_claim *c = tc_top(s);
	if (c && parent == c->caller) {
		/* its entry takes the shadow-stack entry the tags read: a tail
		 * callee's holds the same slot; any other's is the slot of a call
		 * the callee (or P) made */
		if (!c->callee && p && p->syms && ls_is_tail_callee(p->syms, c->tail_func, f->func_id, c->how))
			c->callee = id;
		else
			for (uint32_t i = s->n; i-- && s->v[i].caller == parent;)
				s->v[i].tags = TC_TAGS_OPENED;
	}
}

/* Frame f (id `id`) ended; the thread is back in `parent` (function
 * parent_func, UINT32_MAX for none). */
static inline void tc_frame_end(struct tc_stack *s, const struct fr_frame *f, uint64_t id, uint64_t parent,
				uint32_t parent_func)
{
	/* P's end ends the claims of its level (a nested claim's and F's) */
	while (s->n && s->v[s->n - 1].caller == id)
		s->n--;
	struct tail_claim *c = tc_top(s);
	int at_level = c && c->caller == parent;
	if (f->end_kind == FR_END_TAIL) {
		/* F is the traced tail callee of the claim's tail caller: a chain,
		 * whose allocator still returns to P after P's call of its head,
		 * replacing that claim; a frame the callee opened at P's level
		 * (measure's `return strlen(s)`, tsearch's comparator) nests a
		 * claim over F's; a frame above P starts its level's claim */
		uint32_t head = f->func_id;
		int nested = 0;
		if (at_level && c->callee == id)
			head = c->head_func, nested = c->nested;
		else if (at_level && c->nested)
			nested = 1;
		else if (at_level)
			nested = 1, c = NULL;
		if (!at_level || !c)
			c = tc_push(s);
		*c = (struct tail_claim){.tail = id, .caller = parent, .tail_func = f->func_id, .caller_func = parent_func,
					 .head_func = head, .tags = TC_TAGS_FIRST, .nested = nested,
					 .how = ls_tail_jump_of(f->proc ? f->proc->info->features : 0, f->tail_entry)};
	} else if (at_level && id == c->callee) {
		/* F's traced tail callee returned to P: its claims end */
		while (s->n && s->v[s->n - 1].caller == parent)
			s->n--;
	}
}

/* Pops the claims of P's level (the callee returned into P). */
static inline void tc_end_level(struct tc_stack *s, uint64_t caller)
{
	while (s->n && s->v[s->n - 1].caller == caller)
		s->n--;
}

/* A nested claim G over F's at P's level (G's frame opened there while F's
 * claim stood: either F's callee called G, or the callee had returned
 * unseen and P called G). The event is G's when its call site is in the
 * function G jumps to, or in P's code after a call of G (then the level's
 * claims end). Otherwise the tag decides: one naming a call in P means
 * P's call of G is the slot G's callee returns through, so P called G and
 * F's claim is stale: G's replaces it and takes the event; another
 * nonzero tag means the callee called G, which returned (measure's
 * strlen, tsearch's comparator): G's claim ends and F's decides. Without a
 * tag, a site in the function F jumps to is F's; any other is G's (F's
 * claim replaced, as a tail call at P's level did before claims nested).
 * -1: not G's, F's claim below decides. */
static inline int64_t tc_nested(struct tc_stack *s, struct tail_claim *c, const struct trace_proc *p,
				const struct lr_event *ev, int alloc)
{
	uint64_t ret;
	int where = p->syms ? ls_tail_site(p->syms, ev->site, c->caller_func, c->tail_func) : LS_SITE_UNKNOWN;
	uint64_t g = c->tail;
	switch (where) {
	case LS_SITE_CALLER_OWN:
		g = 0;
		/* fallthrough */
	case LS_SITE_CALLS_TAILER:
	case LS_SITE_UNKNOWN:
		if (ev->kind != SF_EV_REALLOC_DEALLOC)
			tc_end_level(s, c->caller);
		return (int64_t)g;
	case LS_SITE_IN_CALLEE:
		c->seen |= alloc;
		return (int64_t)g;
	default:
		break;
	}
	const struct tail_claim *f = s->n > 1 && s->v[s->n - 2].caller == c->caller ? &s->v[s->n - 2] : NULL;
	int stale = !f;
	if (!stale && ev->ret_tag)
		stale = ls_tag_call(p->syms, c->caller_func, ev->ret_tag, &ret) ||
			ls_tag_indirect_call(p->syms, c->caller_func, ev->ret_tag);
	else if (!stale)
		stale = ls_tail_site(p->syms, ev->site, f->caller_func, f->tail_func) != LS_SITE_IN_CALLEE;
	if (!stale) {
		s->n--;
		return -1;
	}
	/* G's claim replaces F's stale one and goes on under the normal rule */
	c->nested = 0;
	if (f) {
		s->v[s->n - 2] = *c;
		s->n--;
	}
	return -2;
}

/* tc_claim's work, once a claim stands at cur's level. */
static uint64_t tc_claim_at(struct tc_stack *s, uint64_t cur, const struct trace_proc *p,
			    const struct lr_event *ev)
{
	uint32_t k = ev->kind;
	int alloc = k == SF_EV_ALLOC || k == SF_EV_REALLOC_ALLOC || k == SF_EV_HEAP_ALLOC || k == SF_EV_HEAP_REALLOC;
	int free_ = k == SF_EV_DEALLOC || k == SF_EV_REALLOC_DEALLOC || k == SF_EV_HEAP_FREE;
	struct tail_claim *c = tc_top(s);
	if (!c || cur != c->caller || !(alloc || free_))
		return 0;
	if (c->nested) {
		int64_t g = tc_nested(s, c, p, ev, alloc);
		if (g >= 0)
			return (uint64_t)g;
		c = tc_top(s); /* F's (-1), or G's in F's place (-2) */
		if (!c || cur != c->caller)
			return 0;
	}
	/* running: the tag is the claim's first, so the slot the callee
	 * returns through still holds P's call that entered it; or, once the
	 * callee opened a frame at P's level, the tag is the event's own call
	 * site, made from the slot of that frame's call */
	int running = 0;
	if (c->tags == TC_TAGS_FIRST && ev->ret_tag) {
		if (!c->tag0) {
			c->tag0 = ev->ret_tag;
			c->tag0_indirect = p->syms && ls_tag_indirect_call(p->syms, c->caller_func, ev->ret_tag);
		} else if (ev->ret_tag != c->tag0) { /* the callee returned; P called again */
			tc_end_level(s, c->caller);
			return 0;
		}
		/* P's indirect call that entered F can have called F's callee
		 * itself since (one `call *%rax` calling F, then X): the same tag
		 * tells nothing then, so the claim keeps its first allocation and
		 * the sites the rule gives F whatever the tag */
		running = !c->tag0_indirect;
	} else if (c->tags == TC_TAGS_OPENED && ev->ret_tag && ev->site && ev->ret_tag == tc_tag_of(ev->site)) {
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
			tc_end_level(s, c->caller);
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
			tc_end_level(s, c->caller);
		return f;
	default: /* elsewhere */
		break;
	}
	if (!c->seen || running) { /* the first allocation, wherever its site, or the callee still runs */
		c->seen = alloc;
		return f;
	}
	if (alloc)
		tc_end_level(s, c->caller);
	return 0;
}

/* The tail-calling frame that claims heap event ev of a thread whose
 * innermost frame is `cur`, or 0 (the event is cur's). Inline up to the
 * test that a claim stands at cur's level: most heap events have none,
 * and a call per event showed in memory's replay cost. */
static inline __attribute__((always_inline)) uint64_t tc_claim(struct tc_stack *s, uint64_t cur,
							       const struct trace_proc *p, const struct lr_event *ev)
{
	if (!s->n || s->v[s->n - 1].caller != cur)
		return 0;
	return tc_claim_at(s, cur, p, ev);
}

#endif
