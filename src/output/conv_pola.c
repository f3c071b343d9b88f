/* convert --type pola: the reference tool's Parquet schema.
 *   OUT          frame_id u64, parent u64, tid u32, func_id u64, time duration[ns], kind u32
 *                one row per event: 1 entry, 2 exit, 3 tail call; repaired
 *                frames get an exit row at their repaired end
 *   OUT.symtab   func_id u64, name str, path str ("file:line")
 *                one row per function that appears in OUT
 *   OUT.alloc    allocation events, when there are any (conv_pola_alloc.h)
 * Both files are written atomically; on failure neither is left behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/outfile.h"
#include "lib/util.h"
#include "output/conv_pola_alloc.h"
#include "output/converters.h"
#include "output/parquet.h"

enum { COL_FRAME, COL_PARENT, COL_TID, COL_FUNC, COL_TIME, COL_KIND };

static const struct pq_column event_cols[] = {
	{"frame_id", PQ_UINT64}, {"parent", PQ_UINT64}, {"tid", PQ_UINT32},
	{"func_id", PQ_UINT64},  {"time", PQ_DURATION_NS}, {"kind", PQ_UINT32},
};

static const struct pq_column symtab_cols[] = {
	{"func_id", PQ_UINT64}, {"name", PQ_STRING}, {"path", PQ_STRING},
};

/* Functions seen: func_key -> (process, func_id) of the first sighting. */
struct seen {
	uint64_t *keys;
	const struct trace_proc **procs;
	uint32_t *ids;
	size_t n, cap; /* cap is a power of two */
};

static void seen_add(struct seen *s, uint64_t key, const struct trace_proc *p, uint32_t id);

static void seen_grow(struct seen *s)
{
	struct seen old = *s;
	s->cap = old.cap ? old.cap * 2 : 1024;
	s->n = 0;
	s->keys = xcalloc(s->cap, sizeof(*s->keys));
	s->procs = xcalloc(s->cap, sizeof(*s->procs));
	s->ids = xcalloc(s->cap, sizeof(*s->ids));
	for (size_t i = 0; i < old.cap; i++)
		if (old.procs[i])
			seen_add(s, old.keys[i], old.procs[i], old.ids[i]);
	free(old.keys);
	free(old.procs);
	free(old.ids);
}

static void seen_add(struct seen *s, uint64_t key, const struct trace_proc *p, uint32_t id)
{
	if ((s->n + 1) * 2 > s->cap)
		seen_grow(s);
	size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (s->cap - 1);
	while (s->procs[h]) {
		if (s->keys[h] == key)
			return;
		h = (h + 1) & (s->cap - 1);
	}
	s->keys[h] = key;
	s->procs[h] = p;
	s->ids[h] = id;
	s->n++;
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
	struct seen seen;
	struct marks *marks; /* by trace_proc.index */
	size_t nmarks;
};

static void note_func(struct pola_sink *s, const struct trace_frame *f)
{
	size_t p = f->proc->index;
	uint32_t id = f->func_id;
	if (p < s->nmarks && id < s->marks[p].n && s->marks[p].m[id])
		return;
	seen_add(&s->seen, f->func_key, f->proc, id);
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

static int row(struct pq_writer *w, const struct trace_frame *f, uint64_t t, uint32_t kind)
{
	uint64_t v[6];
	v[COL_FRAME] = scalar(f->id);
	v[COL_PARENT] = scalar(f->parent);
	v[COL_TID] = f->thread->tid;
	v[COL_FUNC] = f->func_key;
	v[COL_TIME] = t;
	v[COL_KIND] = kind;
	return pq_write_row_u64s(w, v);
}

static int pola_begin(void *ctx, const struct trace_frame *f)
{
	struct pola_sink *s = ctx;
	note_func(s, f);
	pola_alloc_frame(s->alloc, f, f->id);
	return row(s->w, f, f->t_begin, 1);
}

static int pola_end(void *ctx, const struct trace_frame *f)
{
	struct pola_sink *s = ctx;
	pola_alloc_frame(s->alloc, f, f->parent);
	return row(s->w, f, f->t_end, f->end_kind == FR_END_TAIL ? 3 : 2);
}

static int pola_process_begin(void *ctx, const struct trace_proc *p)
{
	return pola_alloc_process_begin(((struct pola_sink *)ctx)->alloc, p);
}

static int pola_alloc(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	return pola_alloc_event(((struct pola_sink *)ctx)->alloc, p, ev);
}

static int write_symtab(struct pq_writer *w, const struct seen *s)
{
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->procs[i])
			continue;
		const struct sym_info *si = trace_symbol(s->procs[i], s->ids[i]);
		char path[4096];
		int n = 0;
		if (si->file && si->line)
			n = snprintf(path, sizeof(path), "%s:%u", si->file, si->line);
		else if (si->file)
			n = snprintf(path, sizeof(path), "%s", si->file);
		if (n < 0 || (size_t)n >= sizeof(path))
			n = (int)strlen(path);
		if (pq_write_u64(w, 0, s->keys[i]) || pq_write_str(w, 1, si->name, strlen(si->name)) ||
		    pq_write_str(w, 2, path, (size_t)n) || pq_end_row(w))
			return -1;
	}
	return 0;
}

static void seen_free(struct seen *s)
{
	free(s->keys);
	free(s->procs);
	free(s->ids);
}

int conv_pola(struct trace_input *in, const struct conv_options *opt)
{
	char err[1024], symtab_path[4096];
	if ((size_t)snprintf(symtab_path, sizeof(symtab_path), "%s.symtab", opt->out) >= sizeof(symtab_path)) {
		sf_error("%s: path too long", opt->out);
		return -1;
	}
	struct sf_outfile *ev_out = sf_outfile_open(opt->out, 0, err, sizeof(err));
	if (!ev_out) {
		sf_error("%s", err);
		return -1;
	}
	struct sf_outfile *sym_out = sf_outfile_open(symtab_path, 0, err, sizeof(err));
	if (!sym_out) {
		sf_error("%s", err);
		sf_outfile_abort(ev_out);
		return -1;
	}
	struct pq_options po = {0};
	po.codec = opt->uncompressed ? PQ_CODEC_NONE : PQ_CODEC_ZSTD;
	po.zstd_level = opt->zstd_level;
	struct pola_sink s = {0};
	s.w = pq_open(event_cols, 6, &po, sf_outfile_write_cb, ev_out);
	struct pq_writer *sw = pq_open(symtab_cols, 3, &po, sf_outfile_write_cb, sym_out);
	s.alloc = pola_alloc_open(opt->out, &po);
	int ok = s.w && sw && s.alloc;
	if (ok) {
		struct trace_sink sink = {&s, pola_process_begin, NULL, pola_begin, pola_end, NULL, pola_alloc};
		ok = trace_run(in, &sink) == 0 && pq_finish(s.w) == 0 && write_symtab(sw, &s.seen) == 0 &&
		     pq_finish(sw) == 0;
		if (!ok && s.w && pq_strerror(s.w)[0])
			sf_error("%s: %s", opt->out, pq_strerror(s.w));
		else if (!ok && sw && pq_strerror(sw)[0])
			sf_error("%s: %s", symtab_path, pq_strerror(sw));
	}
	if (s.w)
		pq_free(s.w);
	if (sw)
		pq_free(sw);
	seen_free(&s.seen);
	for (size_t i = 0; i < s.nmarks; i++)
		free(s.marks[i].m);
	free(s.marks);
	if (s.alloc && pola_alloc_finish(s.alloc, ok) < 0)
		ok = 0;
	if (!ok) {
		sf_outfile_abort(ev_out);
		sf_outfile_abort(sym_out);
		sf_error("%s: conversion failed; nothing written", opt->out);
		return -1;
	}
	if (sf_outfile_commit(ev_out) < 0) {
		sf_outfile_abort(sym_out);
		return -1;
	}
	if (sf_outfile_commit(sym_out) < 0) {
		unlink(opt->out);
		return -1;
	}
	return 0;
}
