/* Cutting a trace: see trace_cut.h. */
#include "lib/trace_cut.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/filter_file.h"
#include "lib/filter_merge.h"
#include "lib/log_reader.h"
#include "lib/tail_mark.h"
#include "lib/util.h"

/* ---- the filter file ---- */

struct cut_fobject {
	uint8_t build_id[64];
	int build_id_len;
	char *path;
	uint64_t *addrs; /* sorted */
	size_t n;
	/* The names the filter gives, as written (the alias its regexes matched). */
	struct cut_fname {
		uint64_t vaddr;
		char *name;
	} *names;
	size_t nnames;
};

struct cut_filter {
	int within;
	int unlisted_trace;
	struct cut_fobject *objs;
	size_t nobjs;
};

static int on_setting(void *ctx, const char *key, const char *value)
{
	struct cut_filter *f = ctx;
	if (!strcmp(key, "mode"))
		f->within = !strcmp(value, "within");
	else if (!strcmp(key, "unlisted"))
		f->unlisted_trace = !strcmp(value, "trace");
	return 0;
}

static int on_object(void *ctx, const char *bid, const char *path)
{
	struct cut_filter *f = ctx;
	f->objs = xrealloc(f->objs, (f->nobjs + 1) * sizeof(*f->objs));
	struct cut_fobject *o = &f->objs[f->nobjs++];
	memset(o, 0, sizeof(*o));
	o->build_id_len = ff_build_id_from_hex(bid, o->build_id, sizeof(o->build_id));
	o->path = xstrdup(path);
	return 0;
}

static int on_func(void *ctx, uint64_t vaddr, const char *name)
{
	struct cut_filter *f = ctx;
	struct cut_fobject *o = &f->objs[f->nobjs - 1];
	o->addrs = xrealloc(o->addrs, (o->n + 1) * sizeof(*o->addrs));
	o->addrs[o->n++] = vaddr;
	if (name && *name) {
		o->names = xrealloc(o->names, (o->nnames + 1) * sizeof(*o->names));
		o->names[o->nnames++] = (struct cut_fname){vaddr, xstrdup(name)};
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct cut_filter *cut_filter_load(const char *path)
{
	size_t len;
	char *text = ff_read_text(path, &len);
	if (!text)
		return NULL;
	struct cut_filter *f = xcalloc(1, sizeof(*f));
	struct ff_handler h = {on_setting, on_object, on_func};
	char err[256];
	if (ff_parse(text, len, &h, f, err, sizeof(err)) < 0) {
		sf_error("filter %s: %s", path, err);
		free(text);
		cut_filter_free(f);
		return NULL;
	}
	free(text);
	for (size_t i = 0; i < f->nobjs; i++)
		if (f->objs[i].n) /* an object that selects nothing has no array (qsort(NULL, 0) is undefined) */
			qsort(f->objs[i].addrs, f->objs[i].n, sizeof(uint64_t), cmp_u64);
	return f;
}

void cut_filter_free(struct cut_filter *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nobjs; i++) {
		free(f->objs[i].path);
		free(f->objs[i].addrs);
		for (size_t k = 0; k < f->objs[i].nnames; k++)
			free(f->objs[i].names[k].name);
		free(f->objs[i].names);
	}
	free(f->objs);
	free(f);
}

/* The filter's entry for a log object: by build-id when both have one, else
 * by path (as the runtime matches). *mismatch: same path, other build-id. */
static const struct cut_fobject *match_object(const struct cut_filter *f, const struct lr_object *o, int *mismatch)
{
	*mismatch = 0;
	const struct cut_fobject *by_path = NULL;
	for (size_t i = 0; i < f->nobjs; i++) {
		const struct cut_fobject *fo = &f->objs[i];
		if (fo->build_id_len > 0 && o->build_id_len) {
			if (fo->build_id_len == o->build_id_len && !memcmp(fo->build_id, o->build_id, o->build_id_len))
				return fo;
			if (!strcmp(fo->path, o->path))
				*mismatch = 1;
		} else if (!strcmp(fo->path, o->path)) {
			by_path = fo;
		}
	}
	return by_path;
}

void cut_filter_each_name(const struct cut_filter *f, const struct lr_object *o,
			  void (*cb)(void *ctx, uint64_t vaddr, const char *name), void *ctx)
{
	int mismatch;
	const struct cut_fobject *fo = match_object(f, o, &mismatch);
	for (size_t k = 0; fo && !mismatch && k < fo->nnames; k++)
		cb(ctx, fo->names[k].vaddr, fo->names[k].name);
}

static int has_addr(const struct cut_fobject *fo, uint64_t a)
{
	return bsearch(&a, fo->addrs, fo->n, sizeof(uint64_t), cmp_u64) != NULL;
}

int cut_filter_check(const struct cut_filter *f, const char *filter_path, const struct lr_log *log, uint64_t *selected)
{
	*selected = 0;
	for (size_t i = 0; i < lr_nobjects(log); i++) {
		const struct lr_object *o = lr_object_at(log, i);
		int mismatch;
		const struct cut_fobject *fo = match_object(f, o, &mismatch);
		if (!fo && mismatch) {
			sf_error("filter %s was made for another build of %s than the one %s recorded (build-ids differ)",
				 filter_path, o->path, lr_info(log)->path);
			return -1;
		}
		for (uint32_t j = 0; fo && j < o->count; j++)
			*selected += has_addr(fo, o->funcs[j]);
		if (!fo && f->unlisted_trace)
			*selected += o->count;
	}
	return 0;
}

/* ---- the cut ---- */

enum { ST_DROP, ST_HELD, ST_KEPT };
enum { SEL_NO, SEL_YES, SEL_UNLISTED };

struct cut_frame {
	uint64_t id, t_begin, r_begin;
	uint32_t func;
	uint8_t state;
	uint8_t within;   /* a selected function is open here (within mode) */
	uint8_t marks;    /* CUT_MARK_* of the frames open here, itself included (-F, -N) */
	uint32_t depth;   /* among candidates: the output depth */
	uint32_t fdepth;  /* frames since the nearest -F match (itself: 0) */
	int32_t cand_up;  /* stack index of the nearest candidate ancestor, -1: none */
	uint8_t after_tail, tail_from_entry; /* passed on (fr_frame's) */
	uint32_t tail_from;
	/* The entry's values (fr_frame's args): the input owns them until
	 * the frame ends, so a held frame emitted late still has them. */
	const unsigned char *args;
	uint32_t args_len;
};

/* The window is on the recorded clock (fr_frame.r_begin), so that every
 * command keeps the same calls; times passed on are the frames' own
 * (t_begin: net of the tracer's cost, or as recorded). A call clipped at an
 * edge gets the thread's own time at that edge: from its last event before
 * it, the recorded time since then added, no later than its first event
 * after it. */
struct edge {
	uint64_t r, t;    /* the thread's last event before the edge */
	uint64_t at;      /* the thread's time at the edge, once an event after it was seen */
	int known;
};

struct cut_thread {
	struct cut_frame *st;
	size_t n, cap;
	size_t held;      /* index of the outermost held frame; == n: none */
	/* The frame that just ended by a tail call (its function, marks and
	 * fdepth), while its callee may still begin at its level: -F/-N hold
	 * the callee inside the tail caller's subtree (tail_inherit). */
	int tail_open;
	uint32_t tail_func, tail_fdepth;
	uint8_t tail_marks;
	struct edge s, e; /* the window's start and end */
	/* Unmatched exits kept but inside a held frame (--min-duration): each
	 * waits, with the stack size at its time, until the frames enclosing it
	 * are emitted (then it follows them), or one of them ends unkept (then
	 * it goes with that frame). Oldest first. */
	struct pending_unmatched {
		struct fr_frame f;
		size_t at; /* th->n when it happened: frames 0..at-1 enclose it */
	} *pend;
	size_t npend, cap_pend, first_pend;
	/* The innermost of the frames the thread started inside
	 * (cut_set_inherited): its outermost calls' "up" (within, marks,
	 * fdepth; never a candidate itself). */
	struct cut_frame base;
	int has_base;
};

struct trace_cut {
	struct trace_cut_options opt;
	const struct cut_filter *filter;
	struct fr_callbacks out;
	void *ctx;
	struct cut_stats stats;
	/* The current process: */
	uint8_t *sel;     /* by function id */
	size_t nsel;
	/* -F/-N: CUT_MARK_* by function id, MARK_KNOWN once asked. */
	cut_mark_fn marker;
	void *marker_ctx;
	uint8_t *marks;
	size_t nmarks;
	struct cut_thread *threads; /* by lr_thread.index */
	size_t nthreads;
	uint64_t s, e;    /* the window in this process's ns, on the recorded clock */
	int recorded_min; /* min_duration judges recorded durations (cut_set_limits) */
	double net_err;   /* on the net clock: the tracer's cost taken off is known within this fraction */
};

struct trace_cut *cut_new(const struct trace_cut_options *opt, const struct cut_filter *filter,
			 const struct fr_callbacks *out, void *ctx)
{
	struct trace_cut *c = xcalloc(1, sizeof(*c));
	c->opt = *opt;
	c->filter = filter;
	c->out = *out;
	c->ctx = ctx;
	return c;
}

static void free_threads(struct trace_cut *c)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		free(c->threads[i].st);
		free(c->threads[i].pend);
	}
	free(c->threads);
	c->threads = NULL;
	c->nthreads = 0;
}

void cut_process(struct trace_cut *c, const struct lr_log *log, uint64_t offset_ns)
{
	free_threads(c);
	c->nthreads = lr_nthreads(log) + 1;
	c->threads = xcalloc(c->nthreads, sizeof(*c->threads));
	c->s = 0;
	c->e = UINT64_MAX;
	if (c->opt.has_window) {
		c->s = c->opt.win_start > offset_ns ? c->opt.win_start - offset_ns : 0;
		if (c->opt.win_end != UINT64_MAX)
			c->e = c->opt.win_end > offset_ns ? c->opt.win_end - offset_ns : 0;
	}
	free(c->sel);
	c->sel = NULL;
	c->nsel = 0;
	free(c->marks);
	c->marks = NULL;
	c->nmarks = 0;
	size_t nids = 0;
	for (size_t i = 0; i < lr_nobjects(log); i++) {
		const struct lr_object *o = lr_object_at(log, i);
		if ((size_t)o->first_id + o->count > nids)
			nids = (size_t)o->first_id + o->count;
	}
	if (c->marker) {
		c->nmarks = nids;
		c->marks = xcalloc(nids + 1, 1);
	}
	if (!c->filter)
		return;
	c->nsel = nids;
	c->sel = xcalloc(c->nsel + 1, 1);
	for (size_t i = 0; i < lr_nobjects(log); i++) {
		const struct lr_object *o = lr_object_at(log, i);
		int mismatch;
		const struct cut_fobject *fo = match_object(c->filter, o, &mismatch);
		for (uint32_t j = 0; j < o->count; j++)
			c->sel[o->first_id + j] = !fo ? SEL_UNLISTED : has_addr(fo, o->funcs[j]) ? SEL_YES : SEL_NO;
	}
}

void cut_set_marker(struct trace_cut *c, cut_mark_fn fn, void *ctx)
{
	c->marker = fn;
	c->marker_ctx = ctx;
}

enum { MARK_KNOWN = 0x80 };

static uint8_t marks_of(struct trace_cut *c, uint32_t func_id)
{
	if (func_id >= c->nmarks)
		return 0;
	if (!(c->marks[func_id] & MARK_KNOWN))
		c->marks[func_id] = (uint8_t)(MARK_KNOWN | c->marker(c->marker_ctx, func_id));
	return c->marks[func_id] & (CUT_MARK_ONLY | CUT_MARK_NOTRACE);
}

void cut_set_limits(struct trace_cut *c, uint64_t min_duration, uint32_t max_depth)
{
	c->opt.min_duration = min_duration;
	c->opt.max_depth = max_depth;
	c->recorded_min = 1;
}

int cut_tid_wanted(const struct trace_cut *c, uint32_t tid)
{
	if (!c->opt.ntids)
		return 1;
	for (size_t i = 0; i < c->opt.ntids; i++)
		if (c->opt.tids[i] == tid)
			return 1;
	return 0;
}

static struct cut_thread *thread_of(struct trace_cut *c, const struct lr_thread *t)
{
	return &c->threads[t->index];
}

/* The frame to pass on for held/kept frame i of the thread `in` is on:
 * parent and depth among the kept frames. */
static struct fr_frame out_frame(const struct fr_frame *in, const struct cut_thread *th, size_t i)
{
	const struct cut_frame *f = &th->st[i];
	return (struct fr_frame){.proc = in->proc, .thread = in->thread, .id = f->id,
				 .parent = f->cand_up >= 0 ? th->st[f->cand_up].id : 0, .func_id = f->func,
				 .depth = f->depth, .t_begin = f->t_begin, .r_begin = f->r_begin, .after_tail = f->after_tail,
				 .tail_from = f->tail_from, .tail_from_entry = f->tail_from_entry,
				 .args = f->args, .args_len = f->args_len};
}

/* An event of the thread at r (recorded) and t (as given), after the edge
 * or not. */
static void edge_see(struct edge *g, uint64_t edge, int after, uint64_t r, uint64_t t)
{
	if (!after) {
		g->r = r;
		g->t = t;
	} else if (!g->known) {
		uint64_t at = g->t + (edge - g->r);
		g->at = at < t ? at : t;
		g->known = 1;
	}
}

static void see(struct trace_cut *c, struct cut_thread *th, uint64_t r, uint64_t t)
{
	edge_see(&th->s, c->s, r >= c->s, r, t);
	edge_see(&th->e, c->e, r > c->e, r, t); /* an event at the end is inside */
}

/* A frame begun before the window starts at its start. */
static void clip_start(struct trace_cut *c, const struct cut_thread *th, struct fr_frame *o)
{
	if (o->r_begin < c->s) {
		o->cut |= CUT_START;
		o->r_begin = c->s;
		o->t_begin = th->s.at;
	}
}

/* The waiting unmatched exits whose enclosing frames are all out (none
 * of frames 0..at-1 is still held) go on, oldest first. */
static void flush_unmatched(struct trace_cut *c, struct cut_thread *th, size_t upto)
{
	while (th->first_pend < th->npend && th->pend[th->first_pend].at <= upto) {
		if (c->out.unmatched)
			c->out.unmatched(c->ctx, &th->pend[th->first_pend].f);
		th->first_pend++;
	}
	if (th->first_pend == th->npend)
		th->first_pend = th->npend = 0;
}

static void emit_begin(struct trace_cut *c, const struct fr_frame *in, struct cut_thread *th, size_t i)
{
	flush_unmatched(c, th, i); /* those that happened before frame i began */
	struct fr_frame o = out_frame(in, th, i);
	th->st[i].state = ST_KEPT;
	if (o.r_begin < c->s)
		c->stats.cut_start++;
	clip_start(c, th, &o);
	c->stats.kept++;
	c->out.begin(c->ctx, &o);
}

/* Whether frame f, open at t (as given) and r (recorded), is still shorter
 * than min_duration: on the clock the frames come on, or for the
 * record-time trim on the recorded one, as the runtime judged it. */
static int too_short(const struct trace_cut *c, const struct cut_frame *f, uint64_t t, uint64_t r)
{
	uint64_t rec = r - f->r_begin;
	if (c->recorded_min)
		return rec < c->opt.min_duration;
	/* Net. A frame whose whole duration went as the tracer's cost (net
	 * 0) is judged at the far end of the cost's error: a frame that a
	 * longjmp left with 1,501 calls abandoned had more cost taken off
	 * than the 15.7 us it lasted (cost within 11.5%), showed as recorded
	 * ("<15.7 us"), and --min-duration 1ns dropped it (skeptic28d, once
	 * in CI). A net figure above 0 is the one judged. */
	uint64_t net = t - f->t_begin;
	if (net || !c->net_err)
		return net < c->opt.min_duration;
	/* All of it taken off: the cost, known within net_err, may have
	 * been that much too high. */
	return (double)rec * c->net_err < (double)c->opt.min_duration;
}

void cut_set_net_err(struct trace_cut *c, double err)
{
	c->net_err = err > 0 ? err : 0;
}

/* Held frames that qualify by `now` (an event inside them) are emitted,
 * outermost first. Ancestors qualify before their descendants (they are
 * older and begin earlier), so the scan stops at the first that does not. */
static void release(struct trace_cut *c, const struct fr_frame *in, struct cut_thread *th, uint64_t now,
		    uint64_t now_r)
{
	while (th->held < th->n) {
		struct cut_frame *f = &th->st[th->held];
		if (f->state == ST_HELD) {
			if (too_short(c, f, now, now_r) || now_r < c->s || f->r_begin >= c->e)
				return;
			emit_begin(c, in, th, th->held);
		}
		th->held++;
	}
	flush_unmatched(c, th, th->n);
}

/* Whether frame `in` is the callee of tail caller `from` (tail_mark.h);
 * frames without a process's symbols (unit tests) trust frames.c's note. */
static int is_tail_callee(const struct fr_frame *in, uint32_t from)
{
	if (in->proc && in->proc->syms)
		return tm_tail_from(in) == from;
	return in->after_tail && in->tail_from == from;
}

/* uftrace's -F/-N take "F and everything it calls": a frame F's tail
 * call entered is F's callee, though drawn beside F (F's frame ended at
 * the jump). So it takes F's marks as if F were still open, and a chain
 * of tail calls passes them on (each callee's marks hold its caller's).
 * With -F its --max-depth count is one below F's. */
static void tail_inherit(struct cut_thread *th, struct cut_frame *f, const struct fr_frame *in)
{
	if (!th->tail_open || !is_tail_callee(in, th->tail_func))
		return;
	f->marks |= th->tail_marks;
	if (th->tail_marks & CUT_MARK_ONLY)
		f->fdepth = th->tail_fdepth + 1;
}

int cut_wants_inherited(const struct trace_cut *c)
{
	return c->marks || (c->filter && c->filter->within);
}

void cut_set_inherited(struct trace_cut *c, uint32_t t, const uint32_t *ids, size_t n)
{
	if (t >= c->nthreads || !n)
		return;
	struct cut_frame *b = &c->threads[t].base;
	memset(b, 0, sizeof(*b));
	b->state = ST_DROP;
	b->cand_up = -1;
	for (size_t i = 0; i < n; i++) {
		b->fdepth = i ? b->fdepth + 1 : 0;
		unsigned own = c->marks ? marks_of(c, ids[i]) : 0;
		b->marks |= own;
		if (own & CUT_MARK_ONLY)
			b->fdepth = 0;
		if (c->filter && ids[i] < c->nsel)
			b->within |= c->sel[ids[i]] == SEL_YES;
	}
	c->threads[t].has_base = 1;
}

static int is_candidate(struct trace_cut *c, struct cut_thread *th, struct cut_frame *f, uint32_t func_id,
			const struct fr_frame *in)
{
	const struct cut_frame *up = th->n ? &th->st[th->n - 1] : th->has_base ? &th->base : NULL;
	f->cand_up = !up ? -1 : up->state != ST_DROP ? (int32_t)(th->n - 1) : up->cand_up;
	f->depth = f->cand_up >= 0 ? th->st[f->cand_up].depth + 1 : 0;
	f->within = up ? up->within : 0;
	f->marks = up ? up->marks : 0;
	f->fdepth = up ? up->fdepth + 1 : 0;
	if (c->marks) {
		tail_inherit(th, f, in);
		unsigned own = marks_of(c, func_id);
		f->marks |= own;
		if (own & CUT_MARK_ONLY)
			f->fdepth = 0;
		if ((c->opt.nonly_funcs && !(f->marks & CUT_MARK_ONLY)) || (f->marks & CUT_MARK_NOTRACE))
			return 0;
	}
	if (c->filter) {
		int sel = func_id < c->nsel ? c->sel[func_id] : SEL_UNLISTED;
		f->within |= sel == SEL_YES;
		int ok = c->filter->within ? f->within : sel == SEL_YES;
		if (!ok && !(sel == SEL_UNLISTED && c->filter->unlisted_trace))
			return 0;
	}
	/* With -F, --max-depth counts from the nearest match, and restarts at
	 * each nested one, as uftrace (its corpus t020, t023). */
	uint32_t depth = c->opt.nonly_funcs ? f->fdepth : f->depth;
	return !c->opt.max_depth || depth < c->opt.max_depth;
}

void cut_begin(void *ctx, const struct fr_frame *in)
{
	struct trace_cut *c = ctx;
	struct cut_thread *th = thread_of(c, in->thread);
	uint64_t t_ns = in->t_begin, r_ns = in->r_begin;
	see(c, th, r_ns, t_ns);
	release(c, in, th, t_ns, r_ns);
	if (th->n == th->cap) {
		th->cap = th->cap ? th->cap * 2 : 64;
		th->st = xrealloc(th->st, th->cap * sizeof(*th->st));
	}
	struct cut_frame *f = &th->st[th->n];
	f->id = in->id;
	f->t_begin = t_ns;
	f->r_begin = r_ns;
	f->func = in->func_id;
	f->after_tail = in->after_tail;
	f->tail_from = in->tail_from;
	f->tail_from_entry = in->tail_from_entry;
	f->args = in->args;
	f->args_len = in->args ? in->args_len : 0;
	f->state = ST_DROP;
	int cand = is_candidate(c, th, f, in->func_id, in);
	th->tail_open = 0; /* only the frame that begins next can be the callee */
	if (cand && r_ns < c->e)
		f->state = ST_HELD;
	int now = f->state == ST_HELD && !c->opt.min_duration && r_ns >= c->s;
	th->n++;
	if (f->state == ST_HELD && th->held == th->n - 1 && now) {
		emit_begin(c, in, th, th->n - 1);
		th->held = th->n;
	} else if (th->held == th->n - 1 && f->state != ST_HELD) {
		th->held = th->n; /* nothing held up to here */
	}
}

/* Frame `i` ended: the unmatched exits still waiting inside it (it was
 * never emitted, or one inside it was not) go with it. An uncounted
 * landing moves out to the frame's nearest candidate ancestor instead
 * (landing_kept), when -F or a within filter keep that. */
static void drop_unmatched_inside(const struct trace_cut *c, struct cut_thread *th, size_t i)
{
	size_t kept = th->first_pend;
	int32_t up = th->st[i].cand_up;
	int outside = up < 0 && (c->opt.nonly_funcs || (c->filter && c->filter->within));
	for (size_t k = th->first_pend; k < th->npend; k++) {
		struct pending_unmatched *p = &th->pend[k];
		if (p->at > i && p->f.end_kind == FR_END_UNCOUNTED && !outside) {
			p->at = (size_t)(up + 1);
			p->f.depth = up >= 0 ? th->st[up].depth + 1 : 0;
			p->f.parent = up >= 0 ? th->st[up].id : 0;
		}
		if (p->at <= i)
			th->pend[kept++] = *p;
	}
	th->npend = kept;
	if (th->first_pend == th->npend)
		th->first_pend = th->npend = 0;
}

void cut_end(void *ctx, const struct fr_frame *in)
{
	struct trace_cut *c = ctx;
	struct cut_thread *th = thread_of(c, in->thread);
	uint64_t t_end = in->t_end, r_end = in->r_end;
	see(c, th, r_end, t_end);
	size_t i = th->n - 1;
	struct cut_frame *f = &th->st[i];
	if (f->state == ST_HELD && !too_short(c, f, t_end, r_end) && f->r_begin < c->e &&
	    (f->r_begin >= c->s || r_end > c->s)) {
		/* It qualifies, so do its held ancestors (older, begun earlier). */
		release(c, in, th, t_end, r_end);
		if (th->held == i)
			emit_begin(c, in, th, i);
	}
	if (f->state == ST_KEPT) {
		struct fr_frame o = out_frame(in, th, i);
		o.end_kind = in->end_kind;
		o.repair = in->repair;
		o.tail_entry = in->tail_entry;
		o.ret = in->ret;
		o.ret_len = in->ret ? in->ret_len : 0;
		o.t_end = t_end;
		o.r_end = r_end;
		clip_start(c, th, &o);
		if (o.r_end > c->e) {
			o.r_end = c->e;
			o.t_end = th->e.at;
			o.cut |= CUT_END;
			c->stats.cut_end++;
		}
		c->out.end(c->ctx, &o);
	}
	th->tail_open = in->end_kind == FR_END_TAIL;
	th->tail_func = f->func;
	th->tail_marks = f->marks;
	th->tail_fdepth = f->fdepth;
	th->n--;
	if (th->held > th->n)
		th->held = th->n;
	drop_unmatched_inside(c, th, th->n);
	if (th->held >= th->n)
		flush_unmatched(c, th, th->n); /* a landing moved out to a frame already passed on */
}

/* A landing the runtime could not count happened somewhere among the
 * thread's open frames (which ones it abandoned is not known: they stay
 * open): it is shown inside the innermost frame the cut keeps (-N,
 * --max-depth and a select filter then move it out to a kept line), when
 * that is inside what -F or a within filter asks for. */
static int landing_kept(const struct trace_cut *c, const struct cut_thread *th, struct cut_frame *probe)
{
	const struct cut_frame *up = th->n ? &th->st[th->n - 1] : NULL;
	probe->cand_up = !up ? -1 : up->state != ST_DROP ? (int32_t)(th->n - 1) : up->cand_up;
	probe->depth = probe->cand_up >= 0 ? th->st[probe->cand_up].depth + 1 : 0;
	if (c->opt.nonly_funcs && !(up && (up->marks & CUT_MARK_ONLY)))
		return 0;
	return !(c->filter && c->filter->within && !(up && up->within));
}

void cut_unmatched(void *ctx, const struct fr_frame *in)
{
	struct trace_cut *c = ctx;
	struct cut_thread *th = thread_of(c, in->thread);
	uint64_t r = in->r_end;
	see(c, th, r, in->t_end);
	release(c, in, th, in->t_end, r);
	if (r < c->s || r > c->e)
		return;
	struct cut_frame probe = {0};
	size_t at = th->n;
	if (in->end_kind == FR_END_UNCOUNTED) {
		if (!landing_kept(c, th, &probe))
			return;
		at = (size_t)(probe.cand_up + 1);
	} else if (!is_candidate(c, th, &probe, in->func_id, in)) {
		/* Kept where a call of its function beginning here would be a
		 * candidate: it stands for that call's missing entry. */
		return;
	}
	struct fr_frame o = *in;
	o.depth = probe.depth;
	o.parent = probe.cand_up >= 0 ? th->st[probe.cand_up].id : 0;
	if (th->held >= at && th->first_pend == th->npend) {
		if (c->out.unmatched)
			c->out.unmatched(c->ctx, &o);
		return;
	}
	if (th->npend == th->cap_pend) {
		th->cap_pend = th->cap_pend ? th->cap_pend * 2 : 8;
		th->pend = xrealloc(th->pend, th->cap_pend * sizeof(*th->pend));
	}
	th->pend[th->npend++] = (struct pending_unmatched){o, at};
}

const struct cut_stats *cut_stats(const struct trace_cut *c) { return &c->stats; }

uint64_t cut_held_from(const struct trace_cut *c, const struct lr_thread *t)
{
	const struct cut_thread *th = &c->threads[t->index];
	if (th->held >= th->n || th->st[th->held].state != ST_HELD)
		return UINT64_MAX;
	uint64_t r = th->st[th->held].r_begin;
	return r < c->s ? c->s : r;
}

void cut_free(struct trace_cut *c)
{
	if (!c)
		return;
	free_threads(c);
	free(c->sel);
	free(c->marks);
	free(c);
}
