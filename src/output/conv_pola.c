/* convert --type pola: the reference tool's Parquet schema, and a thread table.
 *   OUT          frame_id u64, parent u64, tid u32, func_id u64, time duration[ns], kind u32
 *                one row per event: 1 entry, 2 exit, 3 tail call; repaired
 *                frames get an exit row at their repaired end
 *   OUT.symtab   func_id u64, name str, path str ("file:line"), aliases str
 *                one row per function that appears in OUT; aliases: the
 *                function's other names (identical code folding gives one
 *                address several), one per line, "" when it has none
 *   OUT.threads  tid u32, pid u32, ppid u32, thread_name str, process_name str,
 *                cmdline str, start duration[ns], end duration[ns], label str
 *                one row per thread of each process that has rows in OUT;
 *                start and end are its first and last row's time, so a tid
 *                the OS reused (a later thread or process) is told apart by
 *                time: OUT's rows of that tid lie in exactly one row's range;
 *                label: thread_name, and when the kernel cut it at 15 bytes,
 *                the thread's first outermost function beside it;
 *                tracer_cost_caller_ps u64, tracer_cost_call_ps u64: the
 *                tracer's own cost per traced call its process measured at
 *                start, in ps (0: not measured), the part in the caller's
 *                self time and the part in the call's duration; OUT's times
 *                are as recorded (report's net times take these off);
 *                tracer_cost_low_ps u64, tracer_cost_high_ps u64: the
 *                spread of that cost (caller's part plus call's) over the
 *                calibration's rounds at start and exit, the lowest and
 *                highest kept round (0: none); tracer_cost_error_ppm u64:
 *                the error it bounds the cost by, relative to it, in parts
 *                per million (report marks a net figure "<" when this
 *                times the cost taken off it passes 10% of it);
 *                tracer_cost_exit_caller_ps u64, tracer_cost_exit_call_ps
 *                u64: the cost measured again at the process's exit (0:
 *                not, the process did not exit or the log is older)
 *   OUT.alloc    allocation events, when there are any (conv_pola_alloc.h)
 *   OUT.args     arguments and return values, when there are any (conv_pola_args.h)
 * Times count from the recording's time 0 (trace_input.h), for every
 * process. The files are written atomically; on failure none is left behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/hashmap.h"
#include "lib/outfile.h"
#include "lib/util.h"
#include "output/conv_pola.h"
#include "output/conv_pola_alloc.h"
#include "output/conv_pola_args.h"
#include "output/converters.h"
#include "output/parquet.h"

enum { COL_FRAME, COL_PARENT, COL_TID, COL_FUNC, COL_TIME, COL_KIND };

static const struct pq_column event_cols[] = {
	{"frame_id", PQ_UINT64}, {"parent", PQ_UINT64}, {"tid", PQ_UINT32},
	{"func_id", PQ_UINT64},  {"time", PQ_DURATION_NS}, {"kind", PQ_UINT32},
};

static const struct pq_column symtab_cols[] = {
	{"func_id", PQ_UINT64}, {"name", PQ_STRING}, {"path", PQ_STRING}, {"aliases", PQ_STRING},
};

static const struct pq_column thread_cols[] = {
	{"tid", PQ_UINT32},          {"pid", PQ_UINT32},         {"ppid", PQ_UINT32},
	{"thread_name", PQ_STRING},  {"process_name", PQ_STRING}, {"cmdline", PQ_STRING},
	{"start", PQ_DURATION_NS},   {"end", PQ_DURATION_NS},    {"label", PQ_STRING},
	{"tracer_cost_caller_ps", PQ_UINT64}, {"tracer_cost_call_ps", PQ_UINT64},
	{"tracer_cost_low_ps", PQ_UINT64},    {"tracer_cost_high_ps", PQ_UINT64},
	{"tracer_cost_error_ppm", PQ_UINT64},
	{"tracer_cost_exit_caller_ps", PQ_UINT64}, {"tracer_cost_exit_call_ps", PQ_UINT64},
};

static uint64_t ps(double ns) { return (uint64_t)(ns * 1000 + 0.5); }

/* One thread of one process: the time span of its rows in OUT. */
struct thread_span {
	const struct trace_proc *proc;
	const struct lr_thread *thread;
	uint64_t start, end;
	int has_rows;
};

/* Functions seen, in order of first sighting: func_key and the (process,
 * func_id) that names it; `index` finds a key's entry. */
struct seen_func {
	uint64_t key;
	const struct trace_proc *proc;
	uint32_t id;
};

struct seen {
	struct hashmap index; /* func_key -> position in funcs */
	struct seen_func *funcs;
	size_t n, cap;
};

static void seen_add(struct seen *s, uint64_t key, const struct trace_proc *p, uint32_t id)
{
	int added;
	uint64_t *at = hm_put(&s->index, key, &added);
	if (!added)
		return;
	*at = s->n;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->funcs = xrealloc(s->funcs, s->cap * sizeof(*s->funcs));
	}
	s->funcs[s->n++] = (struct seen_func){.key = key, .proc = p, .id = id};
}

/* Function ids of one process already in `seen`, one byte per id: a hash
 * lookup per event would cost as much as writing its row. */
struct marks {
	uint8_t *m;
	size_t n;
};

#define MARK_MAX_ID (1u << 24) /* larger ids (not from a sane log) skip the marks */

struct pola_sink {
	struct pq_writer *w;
	struct pola_alloc *alloc;
	struct pola_args *args;
	struct seen seen;
	struct marks *marks; /* by trace_proc.index */
	size_t nmarks;
	struct thread_span *spans; /* every process's threads, in trace_run order */
	size_t nspans;
	size_t proc_first;   /* spans index of the current process's thread 0 */
};

static int pola_process_begin(void *ctx, const struct trace_proc *p)
{
	struct pola_sink *s = ctx;
	size_t n = lr_nthreads(p->log);
	s->spans = xrealloc(s->spans, (s->nspans + n + 1) * sizeof(*s->spans));
	memset(s->spans + s->nspans, 0, (n + 1) * sizeof(*s->spans));
	s->proc_first = s->nspans;
	for (size_t i = 0; i < n; i++) {
		s->spans[s->nspans + i].proc = p;
		s->spans[s->nspans + i].thread = lr_thread_at(p->log, i);
	}
	s->nspans += n;
	return pola_alloc_process_begin(s->alloc, p);
}

/* A thread's first and last rows are those of its root frames (depth 0):
 * every other frame nests inside one. */
static inline struct thread_span *root_span(struct pola_sink *s, const struct fr_frame *f)
{
	return f->depth == 0 ? &s->spans[s->proc_first + f->thread->index] : NULL;
}

static void note_func(struct pola_sink *s, const struct fr_frame *f)
{
	size_t p = f->proc->index;
	uint32_t id = f->func_id;
	if (p < s->nmarks && id < s->marks[p].n && s->marks[p].m[id])
		return;
	seen_add(&s->seen, trace_func_key(f->proc, id), f->proc, id);
	if (id >= MARK_MAX_ID)
		return;
	if (p >= s->nmarks) {
		s->marks = xrealloc(s->marks, (p + 1) * sizeof(*s->marks));
		memset(s->marks + s->nmarks, 0, (p + 1 - s->nmarks) * sizeof(*s->marks));
		s->nmarks = p + 1;
	}
	struct marks *m = &s->marks[p];
	if (id >= m->n) {
		size_t n = m->n ? m->n : 1024;
		while (n <= id)
			n *= 2;
		m->m = xrealloc(m->m, n);
		memset(m->m + m->n, 0, n - m->n);
		m->n = n;
	}
	m->m[id] = 1;
}

/* The frame was just filled field by field. Compilers like to copy id and
 * parent with one 16-byte load, which cannot be forwarded from the two
 * 8-byte stores still in flight and stalls (about 3 ns per event here);
 * an empty asm makes them scalar loads. */
static inline uint64_t scalar(uint64_t v)
{
	__asm__("" : "+r"(v));
	return v;
}

static int row(struct pq_writer *w, const struct fr_frame *f, uint64_t t, uint32_t kind)
{
	uint64_t v[6];
	v[COL_FRAME] = scalar(f->id);
	v[COL_PARENT] = scalar(f->parent);
	v[COL_TID] = f->thread->tid;
	v[COL_FUNC] = trace_func_key(f->proc, f->func_id);
	v[COL_TIME] = t;
	v[COL_KIND] = kind;
	return pq_write_row_u64s(w, v);
}

static int pola_begin(void *ctx, const struct fr_frame *f)
{
	struct pola_sink *s = ctx;
	note_func(s, f);
	pola_alloc_frame(s->alloc, f, 1);
	struct thread_span *sp = root_span(s, f);
	if (sp && !sp->has_rows) {
		sp->has_rows = 1;
		sp->start = sp->end = f->t_begin;
	}
	return row(s->w, f, f->t_begin, 1);
}

static int pola_end(void *ctx, const struct fr_frame *f)
{
	struct pola_sink *s = ctx;
	pola_alloc_frame(s->alloc, f, 0);
	if ((f->args || f->ret) && pola_args_frame(s->args, f) < 0)
		return -1;
	struct thread_span *sp = root_span(s, f);
	if (sp && f->t_end > sp->end)
		sp->end = f->t_end;
	return row(s->w, f, f->t_end, f->end_kind == FR_END_TAIL ? 3 : 2);
}

static int pola_alloc(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	return pola_alloc_event(((struct pola_sink *)ctx)->alloc, p, ev);
}

/* The other names of a function, one per line. */
struct alias_buf {
	const char *shown;
	char *text;
	size_t len;
};

static void add_alias(void *ctx, const char *mangled, const char *demangled)
{
	struct alias_buf *a = ctx;
	const char *name = demangled ? demangled : mangled;
	if (!name || !strcmp(name, a->shown))
		return;
	size_t n = strlen(name);
	a->text = xrealloc(a->text, a->len + n + 2);
	if (a->len)
		a->text[a->len++] = '\n';
	memcpy(a->text + a->len, name, n + 1);
	a->len += n;
}

static int write_symtab(struct pq_writer *w, const struct seen *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct seen_func *sf = &s->funcs[i];
		const struct sym_info *si = trace_symbol(sf->proc, sf->id);
		char path[4096];
		int n = 0;
		if (si->file && si->line)
			n = snprintf(path, sizeof(path), "%s:%u", si->file, si->line);
		else if (si->file)
			n = snprintf(path, sizeof(path), "%s", si->file);
		if (n < 0 || (size_t)n >= sizeof(path))
			n = (int)strlen(path);
		struct alias_buf a = {si->name, NULL, 0};
		ls_aliases(sf->proc->syms, sf->id, add_alias, &a);
		int bad = pq_write_u64(w, 0, sf->key) || pq_write_str(w, 1, si->name, strlen(si->name)) ||
			  pq_write_str(w, 2, path, (size_t)n) || pq_write_str(w, 3, a.text ? a.text : "", a.len) ||
			  pq_end_row(w);
		free(a.text);
		if (bad)
			return -1;
	}
	return 0;
}

static int put_str(struct pq_writer *w, int col, const char *str)
{
	return pq_write_str(w, col, str, strlen(str));
}

static int write_threads(struct pq_writer *w, const struct pola_sink *s)
{
	for (size_t i = 0; i < s->nspans; i++) {
		const struct thread_span *sp = &s->spans[i];
		if (!sp->has_rows)
			continue;
		const struct lr_info *info = sp->proc->info;
		if (pq_write_u32(w, 0, sp->thread->tid) || pq_write_u32(w, 1, info->pid) ||
		    pq_write_u32(w, 2, info->ppid) || put_str(w, 3, sp->thread->name) ||
		    put_str(w, 4, sp->proc->name) || put_str(w, 5, sp->proc->cmdline) ||
		    pq_write_u64(w, 6, sp->start) || pq_write_u64(w, 7, sp->end) ||
		    put_str(w, 8, trace_thread_label(sp->proc, sp->thread)) ||
		    pq_write_u64(w, 9, ps(info->cost_parent_ns)) || pq_write_u64(w, 10, ps(info->cost_child_ns)) ||
		    pq_write_u64(w, 11, ps(info->cost_lo_ns)) || pq_write_u64(w, 12, ps(info->cost_hi_ns)) ||
		    pq_write_u64(w, 13, (uint64_t)(info->cost_err * 1e6 + 0.5)) ||
		    pq_write_u64(w, 14, ps(info->cost_exit_parent_ns)) ||
		    pq_write_u64(w, 15, ps(info->cost_exit_child_ns)) || pq_end_row(w))
			return -1;
	}
	return 0;
}

static void seen_free(struct seen *s)
{
	hm_free(&s->index);
	free(s->funcs);
}

enum { OUT_EVENTS, OUT_SYMTAB, OUT_THREADS, NOUT };

/* Commits the files in order; if one fails, the ones already committed are
 * removed and the rest aborted, so no partial set is left. */
static int commit_all(struct sf_outfile **of, char paths[NOUT][4096])
{
	for (int i = 0; i < NOUT; i++) {
		if (sf_outfile_commit(of[i]) == 0)
			continue;
		for (int j = 0; j < i; j++)
			unlink(paths[j]);
		for (int j = i + 1; j < NOUT; j++)
			sf_outfile_abort(of[j]);
		return -1;
	}
	return 0;
}

int pola_side_open(struct pola_side *s, const char *out, const char *suffix, const struct pq_column *cols,
		   int ncols, const struct pq_options *po)
{
	char err[1024];
	if ((size_t)snprintf(s->path, sizeof(s->path), "%s.%s", out, suffix) >= sizeof(s->path)) {
		sf_error("%s: path too long", out);
		return -1;
	}
	s->of = sf_outfile_open(s->path, 0, err, sizeof(err));
	if (!s->of) {
		sf_error("%s", err);
		return -1;
	}
	s->w = pq_open(cols, ncols, po, sf_outfile_write_cb, s->of);
	if (!s->w) {
		sf_error("%s: cannot start the Parquet file", s->path);
		sf_outfile_abort(s->of);
		return -1;
	}
	return 0;
}

int pola_side_finish(struct pola_side *s, int ok)
{
	int rc = 0;
	if (ok && pq_rows(s->w) > 0) {
		if (pq_finish(s->w) != 0) {
			sf_error("%s: %s", s->path, pq_strerror(s->w));
			sf_outfile_abort(s->of);
			rc = -1;
		} else {
			rc = sf_outfile_commit(s->of);
		}
	} else {
		sf_outfile_abort(s->of); /* failed, or no rows: no file */
	}
	pq_free(s->w);
	return rc;
}

int conv_pola(struct trace_input *in, const struct conv_options *opt)
{
	static const char *const suffix[NOUT] = {"", ".symtab", ".threads"};
	char err[1024], paths[NOUT][4096];
	struct sf_outfile *of[NOUT] = {0};
	struct pq_writer *w[NOUT] = {0};
	for (int i = 0; i < NOUT; i++) {
		if ((size_t)snprintf(paths[i], sizeof(paths[i]), "%s%s", opt->out, suffix[i]) >= sizeof(paths[i])) {
			sf_error("%s: path too long", opt->out);
			goto abort;
		}
	}
	for (int i = 0; i < NOUT; i++) {
		of[i] = sf_outfile_open(paths[i], 0, err, sizeof(err));
		if (!of[i]) {
			sf_error("%s", err);
			goto abort;
		}
	}
	struct pq_options po = {0};
	po.codec = opt->uncompressed ? PQ_CODEC_NONE : PQ_CODEC_ZSTD;
	po.zstd_level = opt->zstd_level;
	w[OUT_EVENTS] = pq_open(event_cols, 6, &po, sf_outfile_write_cb, of[OUT_EVENTS]);
	w[OUT_SYMTAB] = pq_open(symtab_cols, 4, &po, sf_outfile_write_cb, of[OUT_SYMTAB]);
	w[OUT_THREADS] = pq_open(thread_cols, sizeof(thread_cols) / sizeof(thread_cols[0]), &po, sf_outfile_write_cb, of[OUT_THREADS]);
	struct pola_sink s = {0};
	s.w = w[OUT_EVENTS];
	s.alloc = pola_alloc_open(opt->out, &po);
	s.args = s.alloc ? pola_args_open(opt->out, &po) : NULL;
	int ok = w[OUT_EVENTS] && w[OUT_SYMTAB] && w[OUT_THREADS] && s.alloc && s.args;
	if (ok) {
		struct trace_sink sink = {.ctx = &s, .process_begin = pola_process_begin, .frame_begin = pola_begin,
					  .frame_end = pola_end, .alloc_event = pola_alloc};
		ok = trace_run(in, &sink) == 0 && pq_finish(w[OUT_EVENTS]) == 0 &&
		     write_symtab(w[OUT_SYMTAB], &s.seen) == 0 && pq_finish(w[OUT_SYMTAB]) == 0 &&
		     write_threads(w[OUT_THREADS], &s) == 0 && pq_finish(w[OUT_THREADS]) == 0;
		for (int i = 0; i < NOUT && !ok; i++)
			if (pq_strerror(w[i])[0]) {
				sf_error("%s: %s", paths[i], pq_strerror(w[i]));
				break;
			}
	}
	for (int i = 0; i < NOUT; i++)
		if (w[i])
			pq_free(w[i]);
	seen_free(&s.seen);
	for (size_t i = 0; i < s.nmarks; i++)
		free(s.marks[i].m);
	free(s.marks);
	free(s.spans);
	if (s.alloc && pola_alloc_finish(s.alloc, ok) < 0)
		ok = 0;
	if (s.args && pola_args_finish(s.args, ok) < 0)
		ok = 0;
	if (!ok) {
		sf_error("%s: conversion failed; nothing written", opt->out);
		goto abort;
	}
	return commit_all(of, paths);
abort:
	for (int i = 0; i < NOUT; i++)
		if (of[i])
			sf_outfile_abort(of[i]);
	return -1;
}
