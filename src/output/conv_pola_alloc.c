/* OUT.alloc (conv_pola_alloc.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sflog.h"
#include "lib/outfile.h"
#include "lib/util.h"
#include "output/conv_pola_alloc.h"

static const struct pq_column alloc_cols[] = {
	{"frame_id", PQ_UINT64}, {"tid", PQ_UINT32},   {"time", PQ_DURATION_NS}, {"kind", PQ_UINT32},
	{"ptr", PQ_UINT64},      {"size", PQ_UINT64}, {"align", PQ_UINT64},     {"site", PQ_UINT64},
	{"site_name", PQ_STRING},
};

struct pola_alloc {
	struct pola_alloc_frames fr; /* first: pola_alloc_frame casts */
	struct sf_outfile *of;
	struct pq_writer *w;
	char path[4096];
};

struct pola_alloc *pola_alloc_open(const char *out, const struct pq_options *po)
{
	struct pola_alloc *a = xcalloc(1, sizeof(*a));
	char err[1024];
	if ((size_t)snprintf(a->path, sizeof(a->path), "%s.alloc", out) >= sizeof(a->path)) {
		sf_error("%s: path too long", out);
		free(a);
		return NULL;
	}
	a->of = sf_outfile_open(a->path, 0, err, sizeof(err));
	if (!a->of) {
		sf_error("%s", err);
		free(a);
		return NULL;
	}
	a->w = pq_open(alloc_cols, (int)(sizeof(alloc_cols) / sizeof(alloc_cols[0])), po, sf_outfile_write_cb, a->of);
	if (!a->w) {
		sf_error("%s: cannot start the Parquet file", a->path);
		sf_outfile_abort(a->of);
		free(a);
		return NULL;
	}
	return a;
}

int pola_alloc_process_begin(struct pola_alloc *a, const struct trace_proc *p)
{
	size_t n = lr_nthreads(p->log) + 1;
	if (n > a->fr.n) {
		a->fr.cur = xrealloc(a->fr.cur, n * sizeof(*a->fr.cur));
		a->fr.tail = xrealloc(a->fr.tail, n * sizeof(*a->fr.tail));
		a->fr.n = n;
	}
	memset(a->fr.cur, 0, a->fr.n * sizeof(*a->fr.cur));
	memset(a->fr.tail, 0, a->fr.n * sizeof(*a->fr.tail));
	return 0;
}

static int alloc_row(struct pola_alloc *a, const struct trace_proc *p, const struct lr_event *ev, uint32_t kind,
		     uint64_t ptr, uint64_t size)
{
	struct pq_writer *w = a->w;
	uint64_t vaddr = 0;
	char hex[32];
	const char *name = "";
	if (ev->site) {
		const struct sym_info *si = ls_lookup_addr(p->syms, ev->site, &vaddr);
		if (si) {
			name = si->name;
		} else {
			vaddr = 0;
			snprintf(hex, sizeof(hex), "0x%" PRIx64, ev->site);
			name = hex;
		}
	}
	uint64_t align = ev->kind >= SF_EV_HEAP_ALLOC && ev->align == 1 ? 0 : ev->align;
	uint32_t ti = ev->thread->index;
	return pq_write_u64(w, 0, a->fr.tail[ti] ? a->fr.tail[ti] : a->fr.cur[ti]) || pq_write_u32(w, 1, ev->thread->tid) ||
	       pq_write_u64(w, 2, ev->time_ns) || pq_write_u32(w, 3, kind) || pq_write_u64(w, 4, ptr) ||
	       pq_write_u64(w, 5, size) || pq_write_u64(w, 6, kind == 1 || kind == 3 ? align : 0) ||
	       pq_write_u64(w, 7, vaddr) || pq_write_str(w, 8, name, strlen(name)) || pq_end_row(w);
}

static int alloc_rows(struct pola_alloc *a, const struct trace_proc *p, const struct lr_event *ev);

int pola_alloc_event(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	struct pola_alloc *a = ctx;
	int rc = alloc_rows(a, p, ev);
	/* a tail call's claim lasts one allocation (an interposed realloc's
	 * free half keeps it for the alloc half) */
	if (ev->kind >= SF_EV_ALLOC && ev->kind != SF_EV_REALLOC_DEALLOC)
		a->fr.tail[ev->thread->index] = 0;
	return rc;
}

static int alloc_rows(struct pola_alloc *a, const struct trace_proc *p, const struct lr_event *ev)
{
	switch (ev->kind) {
	case SF_EV_HEAP_ALLOC: return alloc_row(a, p, ev, 1, ev->ptr, ev->size);
	case SF_EV_HEAP_FREE: return alloc_row(a, p, ev, 2, ev->ptr, 0);
	case SF_EV_HEAP_REALLOC:
		return alloc_row(a, p, ev, 4, ev->old_ptr, 0) || alloc_row(a, p, ev, 3, ev->ptr, ev->size);
	case SF_EV_ALLOC:
	case SF_EV_DEALLOC:
	case SF_EV_REALLOC_ALLOC:
	case SF_EV_REALLOC_DEALLOC:
		return alloc_row(a, p, ev, ev->kind - SF_EV_ALLOC + 1, ev->ptr, ev->size);
	default:
		return 0;
	}
}

int pola_alloc_finish(struct pola_alloc *a, int ok)
{
	int rc = 0;
	if (ok && pq_rows(a->w) > 0) {
		if (pq_finish(a->w) != 0) {
			sf_error("%s: %s", a->path, pq_strerror(a->w));
			sf_outfile_abort(a->of);
			rc = -1;
		} else {
			rc = sf_outfile_commit(a->of);
		}
	} else {
		sf_outfile_abort(a->of); /* failed, or no allocation events: no file */
	}
	pq_free(a->w);
	free(a->fr.cur);
	free(a->fr.tail);
	free(a);
	return rc;
}
