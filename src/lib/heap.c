/* Heap replay (heap.h): a sink of trace_run_merged. Frames move each
 * thread's position in a callpath.c tree; allocation events update the live
 * set and the sites, both lib/hashmap maps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sflog.h"
#include "lib/hashmap.h"
#include "lib/heap.h"
#include "lib/tail_claim.h"
#include "lib/util.h"

/* ---- the stacks: each thread's innermost traced frame in the tree ---- */

struct hthread {
	uint32_t node;               /* CP_ROOT: no traced frame open */
	/* A fork child's forking thread: frames open in the parent at the fork
	 * (its starting stack, below what the frames layer opens), not closed
	 * yet; their exits reach stacks_unmatched. */
	uint32_t seeded;
	struct tc_stack claims;      /* tail calls' claims on the next allocations (tail_claim.h) */
	uint32_t site_node, site_id; /* the last site looked up (+1; 0: none) ... */
	uint64_t site_addr;          /* ... and its call site: loops allocate from one site ... */
	uint32_t site_tag;           /* ... and its event's return-address tag */
};

struct stacks {
	struct cp_tree *tree;
	struct hthread *th;          /* by lr_thread.index */
	size_t nth;
	uint64_t until;              /* frames after this time are not followed (a fork parent's) */
	struct hashmap tail_callee;  /* heap_result.tail_callee */
	/* milestones */
	const struct heap_options *opt;
	void (*on_milestone)(void *ctx, uint64_t t);
	void *ctx;
};

static void stacks_free(struct stacks *s)
{
	hm_free(&s->tail_callee);
	for (size_t i = 0; i < s->nth; i++)
		tc_free(&s->th[i].claims);
	free(s->th);
	s->th = NULL;
}

static void stacks_init(struct stacks *s, const struct trace_proc *p, const struct heap_options *opt)
{
	memset(s, 0, sizeof(*s));
	s->tree = cp_new();
	s->nth = lr_nthreads(p->log) + 1;
	s->th = xcalloc(s->nth, sizeof(*s->th));
	s->opt = opt;
	s->until = UINT64_MAX;
}

/* Ids no object owns have func_key 0: kept apart by id (as cp_collect does). */
static uint64_t node_key(const struct fr_frame *f)
{
	uint64_t key = trace_func_key(f->proc, f->func_id);
	return key ? key : (1ull << 62) | f->func_id;
}

static int stacks_begin(void *ctx, const struct fr_frame *f)
{
	struct stacks *s = ctx;
	if (f->t_begin > s->until)
		return 0;
	struct hthread *t = &s->th[f->thread->index];
	uint32_t parent = t->node;
	t->node = cp_child(s->tree, t->node, node_key(f), f->proc, f->func_id);
	tc_frame_begin(&t->claims, f->proc, f, t->node, parent);
	const struct tail_claim *c = tc_top(&t->claims);
	if (c && c->callee == t->node && c->caller == parent) { /* F's traced tail callee */
		int added;
		uint64_t *v = hm_put(&s->tail_callee, t->node, &added);
		*v = added || *v == c->tail + 1 ? c->tail + 1 : UINT64_MAX;
	}
	const struct heap_options *o = s->opt;
	if (o && o->milestone && f->func_id < o->nmilestone && o->milestone[f->func_id] && s->on_milestone)
		s->on_milestone(s->ctx, f->t_begin);
	return 0;
}

static int stacks_end(void *ctx, const struct fr_frame *f)
{
	struct stacks *s = ctx;
	if (f->t_end > s->until)
		return 0;
	struct hthread *t = &s->th[f->thread->index];
	uint32_t ended = t->node;
	t->node = cp_node(s->tree, t->node)->parent;
	uint32_t parent_func = t->node == CP_ROOT ? UINT32_MAX : cp_func(s->tree, cp_node(s->tree, t->node)->func)->id;
	tc_frame_end(&t->claims, f, ended, t->node, parent_func);
	return 0;
}

/* An exit the frames layer dropped: on a fork child's forking thread with
 * nothing of its own open, the innermost frame open at the fork, when it
 * is that function's, ends. */
static int stacks_unmatched(void *ctx, const struct fr_frame *f)
{
	struct stacks *s = ctx;
	struct hthread *t = &s->th[f->thread->index];
	if (f->end_kind == FR_END_UNCOUNTED)
		return 0; /* a landing's mark: no function's exit */
	if (t->seeded && t->node != CP_ROOT && cp_func(s->tree, cp_node(s->tree, t->node)->func)->id == f->func_id) {
		t->node = cp_node(s->tree, t->node)->parent;
		t->seeded--;
	}
	return 0;
}

/* The node an allocation event of thread t belongs to: the innermost
 * frame's, or F's when F's tail call claims it (`grab(n) { return
 * malloc(n); }` jumps to malloc, so the allocator returns to F's caller
 * and F's frame is gone from the stack; tail_claim.h). *tail tells which. */
static uint32_t stacks_alloc_node(struct hthread *t, const struct trace_proc *p, const struct lr_event *ev, int *tail)
{
	uint32_t claim = (uint32_t)tc_claim(&t->claims, t->node, p, ev);
	*tail = claim != 0;
	return claim ? claim : t->node;
}

/* ---- heap_replay ---- */

/* A live block; in the pool, free entries chain through `site`. */
struct block {
	uint64_t size;
	uint32_t site;
	uint32_t stage;
};

/* A site's live bytes and blocks at the peak, kept as the replay goes:
 * when a site changes after the latest peak for the first time, its value
 * then is its value at the peak. */
struct site_peak {
	uint64_t bytes, blocks;
	uint64_t changed;            /* heap event number of its latest change */
};

struct hstate {
	struct stacks st;            /* first: the sink's ctx is this */
	struct heap_result *res;
	const struct heap_options *opt;
	struct hashmap addr_ix;      /* call-site address -> dense index | HEAP_FOREIGN */
	struct hashmap tag_ix;       /* a foreign address's index << 28 | tag -> dense index */
	uint32_t nix;                /* dense indices given */
	struct hashmap site_of;      /* node << 32 | address index -> site */
	struct hashmap live;         /* pointer -> block index */
	/* Pointers an allocation found live (do_alloc), -> the allocating
	 * thread's index + 1: an interposed realloc's event is stamped after
	 * the real realloc, so another thread's allocation that reused the
	 * block realloc moved from comes first. That realloc's free half is
	 * then the displaced block's (already dropped), not the new one's. */
	struct hashmap displaced;
	struct block *blocks;
	size_t nblocks, capblocks;
	uint32_t free_block;         /* index + 1 of a free pool entry; 0: none */
	struct site_peak *peak;      /* by site */
	size_t capsites, capstages;
	uint64_t curve_w;
	uint64_t cur_bytes;
	uint64_t seq;                /* heap events so far */
	uint64_t peak_seq;           /* the event that reached the peak */
	/* The latest heap event of the process, if an allocation: its site + 1
	 * (0: none) and size. A free of a block of that site and size is a
	 * temporary, heaptrack's rule (heap.h). */
	uint32_t last_site;
	uint64_t last_size;
	uint64_t until;              /* the replay stops after this time (a fork parent's, at the fork) */
};

static void new_stage(void *ctx, uint64_t t)
{
	struct hstate *h = ctx;
	struct heap_result *r = h->res;
	if (r->nstages)
		r->stages[r->nstages - 1].heap_at_end = h->cur_bytes;
	if (r->nstages == h->capstages) {
		h->capstages = h->capstages ? h->capstages * 2 : 16;
		r->stages = xrealloc(r->stages, h->capstages * sizeof(*r->stages));
	}
	r->stages[r->nstages++] = (struct heap_stage){.t_start = t};
}

/* addr_ix's flag: the address is in no recorded object's function (libc's
 * printf, an untraced library), so the same address reached from different
 * lines of the allocating function is kept apart by the event's tag */
#define HEAP_FOREIGN (1ull << 32)

/* The dense index of call site addr (tail: reached by a tail call) with
 * tag, the event's return-address tag: kept only for a foreign address. */
static uint32_t addr_index(struct hstate *h, const struct trace_proc *p, uint64_t addr, int tail, uint32_t tag,
			   int *foreign)
{
	int added;
	/* a tail-called site is another site than a direct one at the same address */
	uint64_t *ix = hm_put(&h->addr_ix, addr ^ ((uint64_t)tail << 63), &added);
	if (added) {
		uint64_t vaddr;
		*ix = h->nix++ | (addr && p->syms && !ls_lookup_addr(p->syms, addr, &vaddr) ? HEAP_FOREIGN : 0);
	}
	*foreign = (*ix & HEAP_FOREIGN) != 0;
	if (!*foreign || !tag)
		return (uint32_t)*ix;
	uint64_t *t = hm_put(&h->tag_ix, (*ix & UINT32_MAX) << 28 | tag, &added);
	if (added)
		*t = h->nix++;
	return (uint32_t)*t;
}

/* The frame whose code made the call that returns to addr, when that is
 * not node's function but an open ancestor's: the thread left node's
 * frames without an event (swapcontext from a coroutine back to main, a
 * stack switch), and the ancestor runs again. Else node. Asked once per
 * (node, call site). */
static uint32_t open_owner(struct hstate *h, const struct trace_proc *p, uint32_t node, uint64_t addr)
{
	const struct cp_tree *t = h->st.tree;
	if (node == CP_ROOT || !addr || !p->syms)
		return node;
	if (ls_site_in_func(p->syms, addr, cp_func(t, cp_node(t, node)->func)->id))
		return node;
	for (uint32_t a = cp_node(t, node)->parent; a != CP_ROOT; a = cp_node(t, a)->parent)
		if (ls_site_in_func(p->syms, addr, cp_func(t, cp_node(t, a)->func)->id))
			return a;
	return node;
}

static uint32_t site_of(struct hstate *h, const struct trace_proc *p, uint32_t node, uint64_t addr, int tail,
			uint32_t tag)
{
	struct heap_result *r = h->res;
	int added, foreign;
	uint32_t ix = addr_index(h, p, addr, tail, tag, &foreign);
	uint64_t *at = hm_put(&h->site_of, (uint64_t)node << 32 | ix, &added);
	if (!added)
		return (uint32_t)*at;
	uint32_t owner = tail || foreign ? node : open_owner(h, p, node, addr);
	if (owner != node) {
		uint32_t sid = site_of(h, p, owner, addr, tail, tag);
		*hm_find(&h->site_of, (uint64_t)node << 32 | ix) = sid; /* the put above may have moved it */
		return sid;
	}
	if (r->nsites == h->capsites) {
		h->capsites = h->capsites ? h->capsites * 2 : 1024;
		r->sites = xrealloc(r->sites, h->capsites * sizeof(*r->sites));
		h->peak = xrealloc(h->peak, h->capsites * sizeof(*h->peak));
	}
	h->peak[r->nsites] = (struct site_peak){0};
	r->sites[r->nsites] = (struct heap_site){.node = node, .addr = addr, .tail = (uint8_t)tail,
						 .tag = foreign ? tag : 0};
	*at = r->nsites;
	return (uint32_t)r->nsites++;
}

/* The site's live count changes by (bytes, blocks) at the current event. */
static void site_change(struct hstate *h, uint32_t sid, int64_t bytes, int64_t blocks)
{
	struct heap_site *s = &h->res->sites[sid];
	struct site_peak *p = &h->peak[sid];
	if (p->changed <= h->peak_seq) {
		p->bytes = s->live_bytes;
		p->blocks = s->live_blocks;
	}
	p->changed = h->seq;
	s->live_bytes += (uint64_t)bytes;
	s->live_blocks += (uint64_t)blocks;
}

/* The heap-size curve at bounded resolution: points are buckets of
 * curve_w ns (counted from the process's start) holding the highest size
 * in them; when HEAP_CURVE_MAX are used, neighbours merge and buckets
 * double. Times are kept from the process's start until heap_replay ends. */
#define HEAP_CURVE_MAX 8192
static void curve_point(struct hstate *h, uint64_t t)
{
	struct heap_result *r = h->res;
	if (!r->curve_t)
		return;
	uint64_t b = t / h->curve_w;
	if (r->ncurve && r->curve_t[r->ncurve - 1] / h->curve_w == b) {
		if (h->cur_bytes > r->curve_v[r->ncurve - 1])
			r->curve_v[r->ncurve - 1] = h->cur_bytes;
		r->curve_end[r->ncurve - 1] = h->cur_bytes;
		return;
	}
	if (r->ncurve == HEAP_CURVE_MAX) {
		h->curve_w *= 2;
		size_t n = 0;
		for (size_t i = 0; i < r->ncurve; i++) {
			if (n && r->curve_t[n - 1] / h->curve_w == r->curve_t[i] / h->curve_w) {
				if (r->curve_v[i] > r->curve_v[n - 1])
					r->curve_v[n - 1] = r->curve_v[i];
				r->curve_end[n - 1] = r->curve_end[i];
				continue;
			}
			r->curve_t[n] = r->curve_t[i];
			r->curve_v[n] = r->curve_v[i];
			r->curve_end[n++] = r->curve_end[i];
		}
		r->ncurve = n;
		curve_point(h, t);
		return;
	}
	r->curve_t[r->ncurve] = t;
	r->curve_v[r->ncurve] = h->cur_bytes;
	r->curve_end[r->ncurve++] = h->cur_bytes;
}

static uint32_t block_new(struct hstate *h)
{
	if (h->free_block) {
		uint32_t i = h->free_block - 1;
		h->free_block = h->blocks[i].site;
		return i;
	}
	if (h->nblocks == h->capblocks) {
		h->capblocks = h->capblocks ? h->capblocks * 2 : 4096;
		h->blocks = xrealloc(h->blocks, h->capblocks * sizeof(*h->blocks));
	}
	return (uint32_t)h->nblocks++;
}

/* Takes the block out of the live set (`at`: its slot there). */
static void block_drop(struct hstate *h, uint64_t *at)
{
	uint32_t i = (uint32_t)*at;
	struct block *b = &h->blocks[i];
	site_change(h, b->site, -(int64_t)b->size, -1);
	h->cur_bytes -= b->size;
	b->site = h->free_block;
	h->free_block = i + 1;
	hm_remove_at(&h->live, at);
}

/* count: 0 for the halves of an interposed realloc (counted as one realloc) */
static void do_alloc(struct hstate *h, struct hthread *t, const struct trace_proc *p, const struct lr_event *ev,
		     uint64_t ptr, uint64_t size, int count, uint32_t node, int tail)
{
	struct heap_result *r = h->res;
	uint64_t site = ev->site ^ ((uint64_t)tail << 63);
	if (!(t->site_id && t->site_node == node && t->site_addr == site && t->site_tag == ev->ret_tag)) {
		t->site_id = site_of(h, p, node, ev->site, tail, ev->ret_tag) + 1;
		t->site_node = node;
		t->site_addr = site;
		t->site_tag = ev->ret_tag;
	}
	uint32_t sid = t->site_id - 1;
	int added;
	uint64_t *at = hm_put(&h->live, ptr, &added);
	if (!added) { /* its free was never recorded, or a realloc's comes later */
		block_drop(h, at);
		r->tot.replaced++;
		*hm_put(&h->displaced, ptr, NULL) = (uint64_t)(t - h->st.th) + 1;
		at = hm_put(&h->live, ptr, &added);
	}
	uint32_t stage = (uint32_t)r->nstages - 1;
	uint32_t bi = block_new(h);
	h->blocks[bi] = (struct block){.size = size, .site = sid, .stage = stage};
	*at = bi;
	site_change(h, sid, (int64_t)size, 1);
	h->cur_bytes += size;
	struct heap_site *s = &r->sites[sid];
	s->allocs++;
	s->bytes += size;
	r->tot.allocs += (uint64_t)count;
	r->tot.bytes += size;
	r->stages[stage].allocs++;
	r->stages[stage].bytes += size;
	if (h->cur_bytes > r->tot.peak_bytes) {
		r->tot.peak_bytes = h->cur_bytes;
		r->tot.peak_blocks = h->live.count;
		r->tot.peak_time = ev->time_ns;
		h->peak_seq = h->seq;
	}
}

static void do_free(struct hstate *h, uint64_t ptr, int count)
{
	struct heap_result *r = h->res;
	if (h->displaced.count) /* the block there now is freed: a new life */
		hm_remove(&h->displaced, ptr);
	uint64_t *at = hm_find(&h->live, ptr);
	if (!at) {
		r->tot.unmatched_frees++; /* heaptrack drops these: no effect on temporaries */
		return;
	}
	uint32_t sid = h->blocks[*at].site;
	int temporary = h->last_site == sid + 1 && h->last_size == h->blocks[*at].size;
	block_drop(h, at);
	r->tot.frees += (uint64_t)count;
	r->stages[r->nstages - 1].frees++;
	if (temporary) {
		r->sites[sid].temporaries++;
		r->tot.temporaries++;
	}
	h->last_site = 0;
}

/* Whether a realloc on thread t of old frees the block another thread's
 * allocation found live at old (hstate.displaced): that allocation reused
 * the address realloc had freed, so the block it dropped was this free's
 * and the block there now stays. */
static int realloc_freed_displaced(struct hstate *h, const struct hthread *t, uint64_t old)
{
	uint64_t *d = h->displaced.count ? hm_find(&h->displaced, old) : NULL;
	if (!d || *d == (uint64_t)(t - h->st.th) + 1)
		return 0;
	hm_remove_at(&h->displaced, d);
	h->res->tot.replaced--;
	return 1;
}

/* The allocation just made (do_alloc: its thread's site) is the latest. */
static void note_alloc(struct hstate *h, const struct hthread *t, uint64_t size)
{
	h->last_site = t->site_id;
	h->last_size = size;
}

static int heap_alloc_event(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	struct hstate *h = ctx;
	if (ev->time_ns > h->until)
		return 1; /* a fork parent's replay, past the fork: stop */
	struct hthread *t = &h->st.th[ev->thread->index];
	int tail;
	uint32_t node = stacks_alloc_node(t, p, ev, &tail);
	h->seq++;
	switch (ev->kind) {
	case SF_EV_ALLOC:
	case SF_EV_REALLOC_ALLOC:
	case SF_EV_HEAP_ALLOC:
		do_alloc(h, t, p, ev, ev->ptr, ev->size, 1, node, tail);
		note_alloc(h, t, ev->size);
		break;
	case SF_EV_DEALLOC:
	case SF_EV_REALLOC_DEALLOC:
	case SF_EV_HEAP_FREE:
		do_free(h, ev->ptr, 1);
		break;
	case SF_EV_HEAP_REALLOC:
		/* heaptrack's realloc: a free of the old block, then an allocation */
		if (!realloc_freed_displaced(h, t, ev->old_ptr))
			do_free(h, ev->old_ptr, 0);
		do_alloc(h, t, p, ev, ev->ptr, ev->size, 0, node, tail);
		note_alloc(h, t, ev->size);
		h->res->tot.reallocs++;
		break;
	default:
		h->seq--;
		return 0;
	}
	h->res->tot.events++;
	curve_point(h, ev->time_ns - p->start_ns);
	return 0;
}

/* What is still live leaked: by site and by the stage that allocated it. */
static void count_leaks(struct hstate *h, const struct heap_options *opt)
{
	struct heap_result *r = h->res;
	size_t pos = 0;
	uint64_t ptr, bi;
	while (hm_next(&h->live, &pos, &ptr, &bi)) {
		const struct block *b = &h->blocks[bi];
		if (!opt || !opt->select || (b->stage < opt->nselect && opt->select[b->stage])) {
			r->sites[b->site].leak_bytes += b->size;
			r->sites[b->site].leak_blocks++;
		}
		r->stages[b->stage].leak_bytes += b->size;
		r->stages[b->stage].leak_blocks++;
		r->tot.leak_bytes += b->size;
		r->tot.leak_blocks++;
	}
}

/* The process process i was forked from (its log's fork time set, and the
 * same start words, which a forked child keeps and an exec'd image does
 * not, and pid its fork_parent: the parent, or a double fork's origin when
 * the intermediate child recorded nothing), or SIZE_MAX; *t_fork: the fork's time on the
 * recording's time base. */
static size_t fork_parent(struct trace_input *in, size_t i, uint64_t *t_fork)
{
	const struct trace_proc *p = trace_proc_at(in, i);
	const struct lr_info *c = p->info;
	if (!c->fork_time)
		return SIZE_MAX;
	for (size_t j = 0; j < trace_nprocs(in); j++) {
		const struct lr_info *q = trace_proc_at(in, j)->info;
		if (j != i && q->pid == c->fork_parent && q->start_tsc == c->start_tsc && q->start_mono_ns == c->start_mono_ns &&
		    q->start_realtime_ns == c->start_realtime_ns) {
			*t_fork = lr_time_ns(p->log, c->fork_time) + p->start_ns;
			return j;
		}
	}
	return SIZE_MAX;
}

/* The node of h's tree at the same traced path (function keys) as node n
 * of tree `from`: the fork parent's stacks are the child's. Ancestors
 * whose function the child's log does not list end the path there. */
static uint32_t map_node(struct hstate *h, const struct trace_proc *p, const struct cp_tree *from, uint32_t n,
			 struct hashmap *memo, struct hashmap *ids)
{
	if (n == CP_ROOT)
		return CP_ROOT;
	uint64_t *m = hm_find(memo, n);
	if (m)
		return (uint32_t)*m;
	const struct cp_node *fn = cp_node(from, n);
	uint32_t up = map_node(h, p, from, fn->parent, memo, ids);
	uint64_t *id = hm_find(ids, fn->key);
	uint32_t to = id ? cp_child(h->st.tree, up, fn->key, p, (uint32_t)*id) : up;
	int added;
	*hm_put(memo, n, &added) = to;
	return to;
}

/* The thread of log `p` whose tid is `tid`, or NULL. */
static const struct lr_thread *thread_of(const struct trace_proc *p, uint32_t tid)
{
	for (size_t i = 0; tid && i < lr_nthreads(p->log); i++)
		if (lr_thread_at(p->log, i)->tid == tid)
			return lr_thread_at(p->log, i);
	return NULL;
}

/* The child's forking thread (its main thread: tid = pid) starts inside
 * the frames the parent's forking thread had open at the fork. */
static void seed_stack(struct hstate *h, const struct trace_proc *p, const struct hstate *parent,
		       struct hashmap *memo, struct hashmap *ids)
{
	const struct lr_thread *pt = thread_of(parent->res->proc, p->info->fork_tid);
	const struct lr_thread *ct = thread_of(p, p->info->pid);
	if (!pt || !ct)
		return;
	uint32_t node = map_node(h, p, parent->res->tree, parent->st.th[pt->index].node, memo, ids);
	struct hthread *t = &h->st.th[ct->index];
	t->node = node;
	for (uint32_t x = node; x != CP_ROOT; x = cp_node(h->st.tree, x)->parent)
		t->seeded++;
}

/* The child's heap starts as the fork parent's live set (parent, replayed
 * up to the fork): each block at its site's stack and call site. */
static void inherit(struct hstate *h, const struct trace_proc *p, const struct hstate *parent, uint64_t t_fork)
{
	struct heap_result *r = h->res;
	const struct heap_result *pr = parent->res;
	struct hashmap memo = {0}, ids = {0};
	int added;
	for (uint32_t f = 0; f < p->nfunc_keys; f++)
		if (p->func_keys[f])
			*hm_put(&ids, p->func_keys[f], &added) = f;
	size_t pos = 0;
	uint64_t ptr, bi;
	while (hm_next(&parent->live, &pos, &ptr, &bi)) {
		const struct block *b = &parent->blocks[bi];
		const struct heap_site *ps = &pr->sites[b->site];
		uint32_t node = map_node(h, p, pr->tree, ps->node, &memo, &ids);
		uint32_t sid = site_of(h, p, node, ps->addr, ps->tail, ps->tag);
		uint64_t *at = hm_put(&h->live, ptr, &added);
		uint32_t nb = block_new(h);
		h->blocks[nb] = (struct block){.size = b->size, .site = sid, .stage = 0};
		*at = nb;
		site_change(h, sid, (int64_t)b->size, 1);
		h->cur_bytes += b->size;
		r->tot.inherited_bytes += b->size;
		r->tot.inherited_blocks++;
	}
	seed_stack(h, p, parent, &memo, &ids);
	hm_free(&memo);
	hm_free(&ids);
	if (h->cur_bytes) {
		r->tot.peak_bytes = h->cur_bytes;
		r->tot.peak_blocks = h->live.count;
		r->tot.peak_time = t_fork;
		curve_point(h, t_fork > p->start_ns ? t_fork - p->start_ns : 0);
	}
}

static void hstate_free(struct hstate *h)
{
	stacks_free(&h->st);
	hm_free(&h->addr_ix);
	hm_free(&h->tag_ix);
	hm_free(&h->site_of);
	hm_free(&h->live);
	hm_free(&h->displaced);
	free(h->blocks);
	free(h->peak);
}

/* Replays process i into h (r: its result) up to time `until`, starting
 * from its fork parent's live heap at the fork when it is a forked child. */
static int replay_into(struct trace_input *in, size_t i, const struct heap_options *opt, struct heap_result *r,
		       struct hstate *h, uint64_t until)
{
	const struct trace_proc *p = trace_proc_at(in, i);
	memset(r, 0, sizeof(*r));
	r->proc = p;
	*h = (struct hstate){.res = r, .opt = opt, .until = until};
	stacks_init(&h->st, p, opt);
	h->st.until = until;
	h->st.on_milestone = new_stage;
	h->st.ctx = h;
	new_stage(h, p->start_ns);
	if (opt && opt->curve) {
		h->curve_w = 1;
		r->curve_t = xmalloc(HEAP_CURVE_MAX * sizeof(uint64_t));
		r->curve_v = xmalloc(HEAP_CURVE_MAX * sizeof(uint64_t));
		r->curve_end = xmalloc(HEAP_CURVE_MAX * sizeof(uint64_t));
	}
	uint64_t t_fork;
	size_t j = fork_parent(in, i, &t_fork);
	if (j != SIZE_MAX) {
		struct heap_result pr;
		struct hstate ph;
		replay_into(in, j, NULL, &pr, &ph, t_fork);
		pr.tree = ph.st.tree; /* heap_result_free frees it */
		inherit(h, p, &ph, t_fork);
		r->fork_parent = pr.proc;
		hstate_free(&ph);
		heap_result_free(&pr);
	} else if (p->info->fork_time) {
		r->fork_parent_missing = p->info->fork_parent;
	}
	struct trace_sink sink = {.ctx = h, .frame_begin = stacks_begin, .frame_end = stacks_end,
				  .alloc_event = heap_alloc_event, .frame_unmatched = stacks_unmatched};
	int rc = trace_run_merged(in, i, &sink);
	return until == UINT64_MAX ? rc : 0; /* a fork parent's replay stops on purpose */
}

int heap_replay(struct trace_input *in, size_t i, const struct heap_options *opt, struct heap_result *r)
{
	struct hstate h;
	int rc = replay_into(in, i, opt, r, &h, UINT64_MAX);
	const struct trace_proc *p = r->proc;
	r->end_time = p->last_ns;
	count_leaks(&h, opt);
	r->stages[r->nstages - 1].heap_at_end = h.cur_bytes;
	/* each site's share of the peak */
	for (size_t s = 0; s < r->nsites; s++) {
		int since = h.peak[s].changed > h.peak_seq;
		r->sites[s].peak_bytes = since ? h.peak[s].bytes : r->sites[s].live_bytes;
		r->sites[s].peak_blocks = since ? h.peak[s].blocks : r->sites[s].live_blocks;
	}
	for (size_t c = 0; c < r->ncurve; c++)
		r->curve_t[c] += p->start_ns;
	r->tree = h.st.tree;
	r->tail_callee = h.st.tail_callee;
	h.st.tail_callee = (struct hashmap){0};
	hstate_free(&h);
	return rc;
}

void heap_result_free(struct heap_result *r)
{
	cp_free(r->tree);
	hm_free(&r->tail_callee);
	free(r->sites);
	free(r->stages);
	free(r->curve_t);
	free(r->curve_v);
	free(r->curve_end);
	memset(r, 0, sizeof(*r));
}

/* ---- heap_foreach_event ---- */

struct each {
	struct stacks st;            /* first: the sink's ctx is this */
	int (*cb)(void *ctx, const struct heap_event *e, const struct cp_tree *tree);
	void *ctx;
	uint64_t id;
	int rc;
};

static int each_alloc_event(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	struct each *x = ctx;
	int tail;
	uint32_t node = stacks_alloc_node(&x->st.th[ev->thread->index], p, ev, &tail);
	struct heap_event e = {
		.id = x->id++, .kind = ev->kind, .tid = ev->thread->tid, .time = ev->time_ns, .ptr = ev->ptr,
		.old_ptr = ev->old_ptr, .size = ev->size, .align = ev->align, .site_addr = ev->site,
		.node = node, .tail = tail,
	};
	x->rc = x->cb(x->ctx, &e, x->st.tree);
	return x->rc;
}

int heap_foreach_event(struct trace_input *in, size_t i,
		       int (*cb)(void *ctx, const struct heap_event *e, const struct cp_tree *tree), void *ctx)
{
	struct each x = {.cb = cb, .ctx = ctx};
	stacks_init(&x.st, trace_proc_at(in, i), NULL);
	struct trace_sink sink = {.ctx = &x, .frame_begin = stacks_begin, .frame_end = stacks_end,
				  .alloc_event = each_alloc_event};
	trace_run_merged(in, i, &sink);
	cp_free(x.st.tree);
	stacks_free(&x.st);
	return x.rc;
}

void heap_format_bytes(char *buf, size_t cap, double v)
{
	if (v < 1024)
		snprintf(buf, cap, "%.0f B", v);
	else if (v < 1048576)
		snprintf(buf, cap, "%.1f KiB", v / 1024);
	else if (v < 1073741824.0)
		snprintf(buf, cap, "%.2f MiB", v / 1048576);
	else
		snprintf(buf, cap, "%.2f GiB", v / 1073741824.0);
}
