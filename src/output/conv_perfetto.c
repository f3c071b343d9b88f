/* convert --type perfetto: one process track per log, one thread track per
 * thread, one slice per frame, named and located by the symbolizer. Times
 * are CLOCK_MONOTONIC ns (the recording's time 0 + offset), so the processes
 * of one recording line up. A process with allocation events also gets a
 * heap size counter track. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arg_values.h"
#include "lib/heap.h"
#include "lib/outfile.h"
#include "lib/util.h"
#include "output/converters.h"
#include "output/perfetto.h"

/* A thread's tracks: its own for depths 0..PF_MAX_DEPTH-1, then one child
 * track per further PF_MAX_DEPTH levels, made when first needed. */
struct pf_tracks {
	struct pf_thread *thread;
	struct pf_thread **deeper; /* [k]: depths (k+1)*PF_MAX_DEPTH .. */
	size_t ndeeper;
	char name[160]; /* the thread label (trace_thread_label), maybe cut */
};

struct pf_sink {
	struct trace_input *in;
	struct pf_writer *w;
	struct pf_process *proc;
	struct pf_tracks *threads; /* by lr_thread.index, for the current process */
	size_t nthreads;
	uint64_t base;              /* the recording's time 0, CLOCK_MONOTONIC ns */
	int has_alloc;              /* the current process has allocation events */
};

static void free_tracks(struct pf_sink *s)
{
	for (size_t i = 0; i < s->nthreads; i++)
		free(s->threads[i].deeper);
	free(s->threads);
	s->threads = NULL;
	s->nthreads = 0;
}

/* The track of a frame at `depth` on thread `t`. Child tracks are named
 * "<thread> depth 512-1023" (and so on), so the UI lists them under their
 * thread in depth order. */
static struct pf_thread *track_at(struct pf_sink *s, uint32_t ti, uint32_t depth)
{
	struct pf_tracks *tr = &s->threads[ti];
	if (depth < PF_MAX_DEPTH)
		return tr->thread;
	size_t k = depth / PF_MAX_DEPTH - 1;
	if (k >= tr->ndeeper) {
		tr->deeper = xrealloc(tr->deeper, (k + 1) * sizeof(*tr->deeper));
		memset(tr->deeper + tr->ndeeper, 0, (k + 1 - tr->ndeeper) * sizeof(*tr->deeper));
		tr->ndeeper = k + 1;
	}
	if (!tr->deeper[k]) {
		char name[224];
		snprintf(name, sizeof(name), "%s depth %zu-%zu", tr->name, (k + 1) * PF_MAX_DEPTH,
			 (k + 2) * PF_MAX_DEPTH - 1);
		tr->deeper[k] = pf_add_subtrack(s->w, tr->thread, name);
	}
	return tr->deeper[k];
}

static int pf_process_begin(void *ctx, const struct trace_proc *p)
{
	struct pf_sink *s = ctx;
	/* Times stay as recorded; the tracer's cost per call rides along as
	 * process labels for whoever wants net figures (docs/OUTPUTS.md): the
	 * start's figures, their rounds' spread and the error it bounds a net
	 * figure by, and the exit's re-measure. */
	char text[3][128];
	const char *labels[3];
	size_t n = 0;
	const struct lr_info *i = p->info;
	if (i->cost_known) {
		snprintf(text[n], sizeof(text[n]), "sftrace.tracer_cost_ns caller=%.1f call=%.1f", i->cost_parent_ns,
			 i->cost_child_ns);
		labels[n] = text[n], n++;
	}
	if (i->cost_known && i->cost_spread_raw256) {
		snprintf(text[n], sizeof(text[n]), "sftrace.tracer_cost_spread_ns low=%.1f high=%.1f error=%.4f",
			 i->cost_lo_ns, i->cost_hi_ns, i->cost_err);
		labels[n] = text[n], n++;
	}
	if (i->cost_known && i->cost_exit_known) {
		snprintf(text[n], sizeof(text[n]), "sftrace.tracer_cost_exit_ns caller=%.1f call=%.1f",
			 i->cost_exit_parent_ns, i->cost_exit_child_ns);
		labels[n] = text[n], n++;
	}
	s->proc = pf_add_process_labeled(s->w, i->pid, p->name, p->cmdline, labels, n);
	free_tracks(s);
	s->nthreads = lr_nthreads(p->log) + 1;
	s->threads = xcalloc(s->nthreads, sizeof(*s->threads));
	s->base = p->zero_mono_ns;
	s->has_alloc = 0;
	return s->proc ? 0 : -1;
}

static int pf_alloc_event(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	((struct pf_sink *)ctx)->has_alloc = 1;
	return 0;
}

/* A process with allocation events gets a "heap size" counter track: the
 * live bytes over time (heap.h: every thread merged by time, on the
 * recording's time base like the slices), at most 8192 buckets, each
 * written as its highest value then its last. */
static int pf_process_end(void *ctx, const struct trace_proc *p)
{
	struct pf_sink *s = ctx;
	if (!s->has_alloc)
		return 0;
	struct heap_options ho = {.curve = 1};
	struct heap_result r;
	heap_replay(s->in, p->index, &ho, &r);
	struct pf_counter *c = pf_add_counter(s->w, s->proc, "heap size");
	/* 0 at the image's own start: an exec'd image (same pid, a log of its
	 * own) begins with an empty heap, not with the old image's bytes. A
	 * forked child begins at the fork with its parent's live heap (the
	 * curve's first point); its start is its parent's. */
	int rc = r.fork_parent ? 0 : pf_counter_value(s->w, c, s->base + p->start_ns, 0);
	for (size_t i = 0; i < r.ncurve && !rc; i++) {
		uint64_t t = s->base + r.curve_t[i];
		rc = pf_counter_value(s->w, c, t, (int64_t)r.curve_v[i]);
		if (!rc && r.curve_end[i] != r.curve_v[i])
			rc = pf_counter_value(s->w, c, t + 1, (int64_t)r.curve_end[i]);
	}
	heap_result_free(&r);
	return rc;
}

static int pf_thread_begin(void *ctx, const struct trace_proc *p, const struct lr_thread *t)
{
	struct pf_sink *s = ctx;
	struct pf_tracks *tr = &s->threads[t->index];
	const char *label = trace_thread_label(p, t); /* a cut name with the thread's first function */
	snprintf(tr->name, sizeof(tr->name), "%s", label[0] ? label : "thread");
	tr->thread = pf_add_thread(s->w, s->proc, t->tid, tr->name);
	return tr->thread ? 0 : -1;
}

/* A payload's values as annotations of x: "arg1" = "3" (record -A/-R). */
struct pf_values {
	struct av_item items[SF_ARG_MAX_ITEMS];
	const char *names[SF_ARG_MAX_ITEMS], *values[SF_ARG_MAX_ITEMS];
};

static void add_values(struct pf_values *v, const unsigned char *payload, uint32_t len, struct pf_slice_extra *x)
{
	int n = av_decode(payload, len, v->items, SF_ARG_MAX_ITEMS);
	for (int i = 0; i < n; i++) {
		v->names[i] = v->items[i].name;
		v->values[i] = v->items[i].value;
	}
	x->nvals = n > 0 ? (unsigned)n : 0;
	x->val_names = v->names;
	x->val_values = v->values;
}

static int pf_frame_begin(void *ctx, const struct fr_frame *f)
{
	struct pf_sink *s = ctx;
	struct pf_thread *t = track_at(s, f->thread->index, f->depth);
	uint64_t ts = s->base + f->t_begin, key = trace_func_key(f->proc, f->func_id);
	key = key ? key : f->func_id;
	if (!f->cut && !f->args) {
		int known = pf_slice_begin_known(s->w, t, ts, key);
		if (known)
			return known < 0 ? -1 : 0;
	}
	/* The slice is named in the chosen style; the full name is the source
	 * location's function name whenever the two differ. */
	const struct sym_info *si = trace_symbol(f->proc, f->func_id);
	const char *name = trace_name(f->proc, f->func_id);
	struct pf_slice_extra x = {strcmp(name, si->name) ? si->name : NULL, NULL, NULL, 0, NULL, NULL};
	struct pf_values v;
	if (f->args)
		add_values(&v, f->args, f->args_len, &x);
	if (f->cut & CUT_START) {
		x.note_name = "cut";
		x.note_value = "began before the --time window";
	}
	return pf_slice_begin_ex(s->w, t, ts, key, name, si->file, si->line, &x);
}

static int pf_frame_end(void *ctx, const struct fr_frame *f)
{
	struct pf_sink *s = ctx;
	struct pf_thread *t = track_at(s, f->thread->index, f->depth);
	if (f->ret) {
		struct pf_slice_extra x = {0};
		struct pf_values v;
		add_values(&v, f->ret, f->ret_len, &x);
		if (f->cut & CUT_END) {
			x.note_name = "cut_end";
			x.note_value = "ended after the --time window";
		}
		return pf_slice_end_ex(s->w, t, s->base + f->t_end, &x);
	}
	if (f->cut & CUT_END)
		return pf_slice_end_note(s->w, t, s->base + f->t_end, "cut_end", "ended after the --time window");
	return pf_slice_end(s->w, t, s->base + f->t_end);
}

int conv_perfetto(struct trace_input *in, const struct conv_options *opt)
{
	char err[1024];
	struct sf_outfile *of = sf_outfile_open(opt->out, opt->gzip, err, sizeof(err));
	if (!of) {
		sf_error("%s", err);
		return -1;
	}
	struct pf_sink s = {.in = in};
	s.w = pf_open(sf_outfile_write_cb, of);
	struct trace_sink sink = {.ctx = &s, .process_begin = pf_process_begin, .thread_begin = pf_thread_begin,
				  .frame_begin = pf_frame_begin, .frame_end = pf_frame_end, .process_end = pf_process_end,
				  .alloc_event = pf_alloc_event};
	int r = trace_run(in, &sink);
	int fin = pf_finish(s.w);
	free_tracks(&s);
	if (fin < 0 || r < 0)
		return sf_outfile_fail(of, opt->out);
	return sf_outfile_commit(of);
}
