/* Heap replay (heap.h): per-thread iterators merged by time, frames from
 * frames.c, a stack trie, and an open-addressing live set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sflog.h"
#include "lib/frames.h"
#include "lib/heap.h"
#include "lib/util.h"

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* ---- u64 -> u32 map for the trie's children and the sites (never deleted) ---- */

struct idmap {
	uint64_t *k1, *k2;
	uint32_t *v; /* value + 1; 0 = empty */
	size_t cap, n;
};

static uint32_t idmap_get(struct idmap *m, uint64_t a, uint64_t b, uint32_t new_value, int *added)
{
	if (2 * (m->n + 1) > m->cap) {
		struct idmap old = *m;
		m->cap = old.cap ? old.cap * 2 : 1024;
		m->k1 = xcalloc(m->cap, sizeof(*m->k1));
		m->k2 = xcalloc(m->cap, sizeof(*m->k2));
		m->v = xcalloc(m->cap, sizeof(*m->v));
		m->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.v[i]) {
				int ad;
				idmap_get(m, old.k1[i], old.k2[i], old.v[i] - 1, &ad);
			}
		free(old.k1);
		free(old.k2);
		free(old.v);
	}
	size_t i = mix64(a * 0x9e3779b97f4a7c15ULL ^ b) & (m->cap - 1);
	while (m->v[i]) {
		if (m->k1[i] == a && m->k2[i] == b) {
			*added = 0;
			return m->v[i] - 1;
		}
		i = (i + 1) & (m->cap - 1);
	}
	m->k1[i] = a;
	m->k2[i] = b;
	m->v[i] = new_value + 1;
	m->n++;
	*added = 1;
	return new_value;
}

static void idmap_free(struct idmap *m)
{
	free(m->k1);
	free(m->k2);
	free(m->v);
}

/* ---- the live set: ptr -> block, linear probing, backward-shift deletion ---- */

struct block {
	uint64_t ptr; /* 0 = empty */
	uint64_t size;
	uint32_t site;
	uint32_t stage;
};

struct liveset {
	struct block *b;
	size_t cap, n;
};

static size_t live_slot(const struct liveset *s, uint64_t ptr)
{
	return mix64(ptr) & (s->cap - 1);
}

static struct block *live_find(struct liveset *s, uint64_t ptr)
{
	if (!s->cap)
		return NULL;
	for (size_t i = live_slot(s, ptr);; i = (i + 1) & (s->cap - 1)) {
		if (s->b[i].ptr == ptr)
			return &s->b[i];
		if (!s->b[i].ptr)
			return NULL;
	}
}

static void live_put(struct liveset *s, const struct block *blk);

static void live_grow(struct liveset *s)
{
	struct liveset old = *s;
	s->cap = old.cap ? old.cap * 2 : 4096;
	s->b = xcalloc(s->cap, sizeof(*s->b));
	s->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.b[i].ptr)
			live_put(s, &old.b[i]);
	free(old.b);
}

/* The pointer must not be live. */
static void live_put(struct liveset *s, const struct block *blk)
{
	if (2 * (s->n + 1) > s->cap)
		live_grow(s);
	size_t i = live_slot(s, blk->ptr);
	while (s->b[i].ptr)
		i = (i + 1) & (s->cap - 1);
	s->b[i] = *blk;
	s->n++;
}

static void live_del(struct liveset *s, struct block *at)
{
	size_t i = (size_t)(at - s->b), mask = s->cap - 1;
	for (size_t j = (i + 1) & mask; s->b[j].ptr; j = (j + 1) & mask) {
		size_t home = live_slot(s, s->b[j].ptr);
		/* move j back to i if its home is not in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			s->b[i] = s->b[j];
			i = j;
		}
	}
	s->b[i].ptr = 0;
	s->n--;
}

/* ---- the time-ordered merge of a process's threads ---- */

struct tstate {
	struct lr_iter it;
	struct lr_event ev;
	int has;
	uint32_t node;      /* innermost traced frame's trie node */
	uint64_t last_alloc; /* pointer of this thread's latest heap event if an allocation */
	uint32_t site_node, site_id; /* the last site looked up (+1; 0: none) ... */
	uint64_t site_addr;          /* ... and its call site: loops allocate from one site */
};

struct replay {
	const struct trace_proc *p;
	struct tstate *ts;
	size_t nts;
	size_t *heap; /* binary min-heap of thread indices by next event time */
	size_t nheap;
	int delivered; /* heap[0]'s event was returned: advance it first */
	struct frames *fr;
	struct idmap children;
	struct heap_node *nodes;
	size_t nnodes, capnodes;
	/* milestone entries */
	const struct heap_options *opt;
	void (*on_milestone)(void *ctx, uint64_t t);
	void *ctx;
};

static uint32_t child_node(struct replay *r, uint32_t parent, uint32_t func)
{
	int added;
	uint32_t id = idmap_get(&r->children, parent, func, (uint32_t)r->nnodes, &added);
	if (added) {
		if (r->nnodes == r->capnodes) {
			r->capnodes = r->capnodes ? r->capnodes * 2 : 1024;
			r->nodes = xrealloc(r->nodes, r->capnodes * sizeof(*r->nodes));
		}
		r->nodes[r->nnodes++] = (struct heap_node){parent, func};
	}
	return id;
}

static void on_begin(void *ctx, const struct lr_thread *thread, uint64_t frame_id, uint64_t parent_frame_id,
		     uint32_t func_id, uint32_t depth, uint64_t t_ns)
{
	struct replay *r = ctx;
	struct tstate *t = &r->ts[thread->index];
	t->node = child_node(r, t->node, func_id);
	if (r->opt && r->opt->milestone && func_id < r->opt->nmilestone && r->opt->milestone[func_id] &&
	    r->on_milestone)
		r->on_milestone(r->ctx, t_ns);
}

static void on_end(void *ctx, const struct lr_thread *thread, uint64_t frame_id, uint64_t parent_frame_id,
		   uint32_t func_id, uint32_t depth, uint64_t t_begin_ns, uint64_t t_end_ns, enum fr_end_kind k)
{
	struct replay *r = ctx;
	struct tstate *t = &r->ts[thread->index];
	t->node = r->nodes[t->node].parent;
}

static uint64_t ts_time(const struct replay *r, size_t i)
{
	return r->ts[r->heap[i]].ev.time_ns;
}

static void sift_down(struct replay *r, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < r->nheap && ts_time(r, l) < ts_time(r, m))
			m = l;
		if (l + 1 < r->nheap && ts_time(r, l + 1) < ts_time(r, m))
			m = l + 1;
		if (m == i)
			return;
		size_t x = r->heap[i];
		r->heap[i] = r->heap[m];
		r->heap[m] = x;
		i = m;
	}
}

static void replay_init(struct replay *r, const struct trace_proc *p, const struct heap_options *opt)
{
	memset(r, 0, sizeof(*r));
	r->p = p;
	r->opt = opt;
	r->nts = lr_nthreads(p->log);
	r->ts = xcalloc(r->nts + 1, sizeof(*r->ts));
	r->heap = xcalloc(r->nts + 1, sizeof(*r->heap));
	child_node(r, 0, 0); /* node 0: the root */
	struct fr_callbacks cb = {on_begin, on_end};
	r->fr = fr_new(&cb, r);
	for (size_t i = 0; i < r->nts; i++) {
		lr_iter_init_thread(&r->ts[i].it, p->log, lr_thread_at(p->log, i));
		if ((r->ts[i].has = lr_next(&r->ts[i].it, &r->ts[i].ev)))
			r->heap[r->nheap++] = i;
	}
	for (size_t i = r->nheap; i-- > 0;)
		sift_down(r, i);
}

/* Moves the thread that delivered the last event to its next one. */
static void replay_advance(struct replay *r)
{
	size_t ti = r->heap[0];
	struct tstate *t = &r->ts[ti];
	if (!(t->has = lr_next(&t->it, &t->ev))) {
		r->heap[0] = r->heap[--r->nheap];
		fr_end_thread(r->fr, lr_thread_at(r->p->log, ti));
	}
	if (r->nheap)
		sift_down(r, 0);
}

/* The next event in time order (a thread's own order always kept), fed to
 * the frames first; valid until the next call. NULL at the end. The event
 * is not copied: it stays in its thread's state until the next call. */
static const struct lr_event *replay_next(struct replay *r)
{
	if (r->delivered) {
		replay_advance(r);
		r->delivered = 0;
	}
	if (!r->nheap)
		return NULL;
	const struct lr_event *ev = &r->ts[r->heap[0]].ev;
	r->delivered = 1;
	fr_feed(r->fr, ev);
	return ev;
}

static void replay_free(struct replay *r)
{
	fr_free(r->fr);
	idmap_free(&r->children);
	free(r->ts);
	free(r->heap);
	free(r->nodes);
}

/* ---- heap_replay ---- */

struct hstate {
	struct replay rp;
	struct heap_result *res;
	struct idmap sitemap;
	size_t capsites, capstages;
	uint64_t curve_w;
	struct liveset live;
	uint64_t cur_bytes;
	uint64_t stop_at;  /* peak pass: stop after this many heap events */
	int peak_pass;
};

static void new_stage(void *ctx, uint64_t t)
{
	struct hstate *h = ctx;
	struct heap_result *r = h->res;
	if (h->peak_pass)
		return;
	if (r->nstages)
		r->stages[r->nstages - 1].heap_at_end = h->cur_bytes;
	if (r->nstages == h->capstages) {
		h->capstages = h->capstages ? h->capstages * 2 : 16;
		r->stages = xrealloc(r->stages, h->capstages * sizeof(*r->stages));
	}
	r->stages[r->nstages++] = (struct heap_stage){.t_start = t};
}

static uint32_t site_of(struct hstate *h, uint32_t node, uint64_t addr)
{
	struct heap_result *r = h->res;
	int added;
	uint32_t id = idmap_get(&h->sitemap, node, addr, (uint32_t)r->nsites, &added);
	if (added) {
		if (r->nsites == h->capsites) {
			h->capsites = h->capsites ? h->capsites * 2 : 1024;
			r->sites = xrealloc(r->sites, h->capsites * sizeof(*r->sites));
		}
		r->sites[r->nsites++] = (struct heap_site){.node = node, .addr = addr};
	}
	return id;
}

/* The heap-size curve at bounded resolution: points are buckets of
 * curve_w ns holding the highest size in them; when HEAP_CURVE_MAX are
 * used, neighbours merge and buckets double. */
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

/* count: 0 for the halves of an interposed realloc (counted as one realloc) */
static void do_alloc(struct hstate *h, struct tstate *t, const struct lr_event *ev, uint64_t ptr, uint64_t size,
		     int count)
{
	struct heap_result *r = h->res;
	if (!(t->site_id && t->site_node == t->node && t->site_addr == ev->site)) {
		t->site_id = site_of(h, t->node, ev->site) + 1; /* may move r->sites */
		t->site_node = t->node;
		t->site_addr = ev->site;
	}
	uint32_t sid = t->site_id - 1;
	struct heap_site *s = &r->sites[sid];
	struct block *old = live_find(&h->live, ptr);
	if (old) { /* its free was never recorded */
		r->sites[old->site].live_bytes -= old->size;
		r->sites[old->site].live_blocks--;
		h->cur_bytes -= old->size;
		live_del(&h->live, old);
		if (!h->peak_pass)
			r->tot.replaced++;
	}
	uint32_t stage = r->nstages - 1;
	struct block b = {.ptr = ptr, .size = size, .site = (uint32_t)(s - r->sites), .stage = stage};
	live_put(&h->live, &b);
	s->live_bytes += size;
	s->live_blocks++;
	h->cur_bytes += size;
	if (!h->peak_pass) {
		s->allocs++;
		s->bytes += size;
		r->tot.allocs += (uint64_t)count;
		r->tot.bytes += size;
		r->stages[stage].allocs++;
		r->stages[stage].bytes += size;
		if (h->cur_bytes > r->tot.peak_bytes) {
			r->tot.peak_bytes = h->cur_bytes;
			r->tot.peak_blocks = h->live.n;
			r->tot.peak_time = ev->time_ns;
			h->stop_at = r->tot.events + 1;
		}
	}
}

static void do_free(struct hstate *h, struct tstate *t, uint64_t ptr, int count)
{
	struct heap_result *r = h->res;
	struct block *b = live_find(&h->live, ptr);
	if (!b) {
		if (!h->peak_pass)
			r->tot.unmatched_frees++;
		return;
	}
	struct heap_site *s = &r->sites[b->site];
	s->live_bytes -= b->size;
	s->live_blocks--;
	h->cur_bytes -= b->size;
	if (!h->peak_pass) {
		r->tot.frees += (uint64_t)count;
		r->stages[r->nstages - 1].frees++;
		if (t->last_alloc == ptr) {
			s->temporaries++;
			r->tot.temporaries++;
		}
	}
	live_del(&h->live, b);
}

static void heap_event(struct hstate *h, const struct lr_event *ev)
{
	struct tstate *t = &h->rp.ts[ev->thread->index];
	uint64_t last = t->last_alloc;
	t->last_alloc = 0;
	switch (ev->kind) {
	case SF_EV_ALLOC:
	case SF_EV_REALLOC_ALLOC:
	case SF_EV_HEAP_ALLOC:
		do_alloc(h, t, ev, ev->ptr, ev->size, 1);
		t->last_alloc = ev->ptr;
		break;
	case SF_EV_DEALLOC:
	case SF_EV_REALLOC_DEALLOC:
	case SF_EV_HEAP_FREE:
		t->last_alloc = last;
		do_free(h, t, ev->ptr, 1);
		t->last_alloc = 0;
		break;
	case SF_EV_HEAP_REALLOC:
		do_free(h, t, ev->old_ptr, 0);
		do_alloc(h, t, ev, ev->ptr, ev->size, 0);
		t->last_alloc = ev->ptr;
		if (!h->peak_pass)
			h->res->tot.reallocs++;
		break;
	default:
		return;
	}
	if (!h->peak_pass) {
		h->res->tot.events++;
		curve_point(h, ev->time_ns);
	}
}

static int is_heap_kind(uint32_t k)
{
	return k >= SF_EV_ALLOC;
}

/* One pass; the peak pass stops right after the peak's event. */
static void run_pass(struct hstate *h, const struct trace_proc *p, const struct heap_options *opt)
{
	replay_init(&h->rp, p, opt);
	h->rp.on_milestone = new_stage;
	h->rp.ctx = h;
	uint64_t n = 0;
	const struct lr_event *ev;
	while ((ev = replay_next(&h->rp))) {
		if (ev->time_ns > h->res->end_time && !h->peak_pass)
			h->res->end_time = ev->time_ns;
		if (!is_heap_kind(ev->kind))
			continue;
		heap_event(h, ev);
		if (h->peak_pass && ++n == h->stop_at)
			break;
	}
}

int heap_replay(const struct trace_proc *p, const struct heap_options *opt, struct heap_result *r)
{
	memset(r, 0, sizeof(*r));
	r->proc = p;
	struct hstate h = {.res = r};
	new_stage(&h, 0);
	if (opt && opt->curve) {
		h.curve_w = 1;
		r->curve_t = xmalloc(HEAP_CURVE_MAX * sizeof(uint64_t));
		r->curve_v = xmalloc(HEAP_CURVE_MAX * sizeof(uint64_t));
		r->curve_end = xmalloc(HEAP_CURVE_MAX * sizeof(uint64_t));
	}
	run_pass(&h, p, opt);
	/* what is still live leaked; by site and by the stage that allocated it */
	for (size_t i = 0; i < h.live.cap; i++) {
		struct block *b = &h.live.b[i];
		if (!b->ptr)
			continue;
		if (!opt || !opt->select || (b->stage < opt->nselect && opt->select[b->stage])) {
			r->sites[b->site].leak_bytes += b->size;
			r->sites[b->site].leak_blocks++;
		}
		r->stages[b->stage].leak_bytes += b->size;
		r->stages[b->stage].leak_blocks++;
		r->tot.leak_bytes += b->size;
		r->tot.leak_blocks++;
	}
	r->stages[r->nstages - 1].heap_at_end = h.cur_bytes;
	/* second pass, to the peak: what each site held then */
	if (r->tot.peak_bytes) {
		uint64_t stop = h.stop_at;
		struct replay keep = h.rp;
		free(h.live.b);
		h.live = (struct liveset){0};
		for (size_t i = 0; i < r->nsites; i++)
			r->sites[i].live_bytes = r->sites[i].live_blocks = 0;
		h.peak_pass = 1;
		h.stop_at = stop;
		h.cur_bytes = 0;
		run_pass(&h, p, opt);
		for (size_t i = 0; i < r->nsites; i++) {
			r->sites[i].peak_bytes = r->sites[i].live_bytes;
			r->sites[i].peak_blocks = r->sites[i].live_blocks;
		}
		/* the nodes of the first pass are the ones sites refer to */
		replay_free(&h.rp);
		h.rp = keep;
	}
	r->nodes = h.rp.nodes;
	r->nnodes = h.rp.nnodes;
	h.rp.nodes = NULL;
	replay_free(&h.rp);
	idmap_free(&h.sitemap);
	free(h.live.b);
	return 0;
}

void heap_result_free(struct heap_result *r)
{
	free(r->nodes);
	free(r->sites);
	free(r->stages);
	free(r->curve_t);
	free(r->curve_v);
	free(r->curve_end);
	memset(r, 0, sizeof(*r));
}

/* ---- heap_foreach_event ---- */

int heap_foreach_event(const struct trace_proc *p,
		       int (*cb)(void *ctx, const struct heap_event *e, const struct heap_node *nodes), void *ctx)
{
	struct replay rp;
	replay_init(&rp, p, NULL);
	const struct lr_event *ev;
	uint64_t id = 0;
	int rc = 0;
	while (!rc && (ev = replay_next(&rp))) {
		if (!is_heap_kind(ev->kind))
			continue;
		struct heap_event e = {
			.id = id++, .kind = ev->kind, .tid = ev->thread->tid, .time = ev->time_ns, .ptr = ev->ptr,
			.old_ptr = ev->old_ptr, .size = ev->size, .align = ev->align, .site_addr = ev->site,
			.node = rp.ts[ev->thread->index].node,
		};
		rc = cb(ctx, &e, rp.nodes);
	}
	replay_free(&rp);
	return rc;
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
