/* OUT.alloc (conv_pola_alloc.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sflog.h"
#include "lib/tail_claim.h"
#include "lib/util.h"
#include "output/conv_pola.h"
#include "output/conv_pola_alloc.h"

static const struct pq_column alloc_cols[] = {
	{"frame_id", PQ_UINT64}, {"tid", PQ_UINT32},   {"time", PQ_DURATION_NS}, {"kind", PQ_UINT32},
	{"ptr", PQ_UINT64},      {"size", PQ_UINT64}, {"align", PQ_UINT64},     {"site", PQ_UINT64},
	{"site_name", PQ_STRING},
};

/* Per thread of the current process. */
struct pola_thread {
	uint64_t cur;              /* innermost open frame's id (0: none) */
	struct tc_stack claims;    /* tail calls' claims (tail_claim.h) */
	uint32_t *funcs;           /* function ids of the open frames, by depth */
	size_t nfuncs;
};

struct pola_alloc {
	struct pola_thread *th;    /* by lr_thread.index */
	size_t nth;
	struct pola_side side;     /* OUT.alloc */
};

struct pola_alloc *pola_alloc_open(const char *out, const struct pq_options *po)
{
	struct pola_alloc *a = xcalloc(1, sizeof(*a));
	int ncols = (int)(sizeof(alloc_cols) / sizeof(alloc_cols[0]));
	if (pola_side_open(&a->side, out, "alloc", alloc_cols, ncols, po) < 0) {
		free(a);
		return NULL;
	}
	return a;
}

static void free_threads(struct pola_alloc *a)
{
	for (size_t i = 0; i < a->nth; i++) {
		free(a->th[i].funcs);
		tc_free(&a->th[i].claims);
	}
	free(a->th);
	a->th = NULL;
	a->nth = 0;
}

int pola_alloc_process_begin(struct pola_alloc *a, const struct trace_proc *p)
{
	free_threads(a);
	a->nth = lr_nthreads(p->log) + 1;
	a->th = xcalloc(a->nth, sizeof(*a->th));
	return 0;
}

void pola_alloc_frame(struct pola_alloc *a, const struct fr_frame *f, int begin)
{
	if (f->thread->index >= a->nth)
		return;
	struct pola_thread *t = &a->th[f->thread->index];
	if (begin) {
		t->cur = f->id;
		if (f->depth >= t->nfuncs) {
			size_t n = (size_t)f->depth * 2 + 16;
			t->funcs = xrealloc(t->funcs, n * sizeof(*t->funcs));
			t->nfuncs = n;
		}
		t->funcs[f->depth] = f->func_id;
		tc_frame_begin(&t->claims, f->proc, f, f->id, f->parent);
		return;
	}
	t->cur = f->parent;
	uint32_t parent_func = f->depth && f->depth - 1 < t->nfuncs ? t->funcs[f->depth - 1] : UINT32_MAX;
	tc_frame_end(&t->claims, f, f->id, f->parent, parent_func);
}

static int alloc_row(struct pola_alloc *a, const struct trace_proc *p, const struct lr_event *ev, uint32_t kind,
		     uint64_t ptr, uint64_t size, uint64_t frame)
{
	struct pq_writer *w = a->side.w;
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
	return pq_write_u64(w, 0, frame) || pq_write_u32(w, 1, ev->thread->tid) ||
	       pq_write_u64(w, 2, ev->time_ns) || pq_write_u32(w, 3, kind) || pq_write_u64(w, 4, ptr) ||
	       pq_write_u64(w, 5, size) || pq_write_u64(w, 6, kind == 1 || kind == 3 ? align : 0) ||
	       pq_write_u64(w, 7, vaddr) || pq_write_str(w, 8, name, strlen(name)) || pq_end_row(w);
}

int pola_alloc_event(void *ctx, const struct trace_proc *p, const struct lr_event *ev)
{
	struct pola_alloc *a = ctx;
	uint64_t frame = 0;
	if (ev->thread->index < a->nth) {
		struct pola_thread *t = &a->th[ev->thread->index];
		uint64_t claim = tc_claim(&t->claims, t->cur, p, ev);
		frame = claim ? claim : t->cur;
	}
	switch (ev->kind) {
	case SF_EV_HEAP_ALLOC: return alloc_row(a, p, ev, 1, ev->ptr, ev->size, frame);
	case SF_EV_HEAP_FREE: return alloc_row(a, p, ev, 2, ev->ptr, 0, frame);
	case SF_EV_HEAP_REALLOC:
		return alloc_row(a, p, ev, 4, ev->old_ptr, 0, frame) || alloc_row(a, p, ev, 3, ev->ptr, ev->size, frame);
	case SF_EV_ALLOC:
	case SF_EV_DEALLOC:
	case SF_EV_REALLOC_ALLOC:
	case SF_EV_REALLOC_DEALLOC:
		return alloc_row(a, p, ev, ev->kind - SF_EV_ALLOC + 1, ev->ptr, ev->size, frame);
	default:
		return 0;
	}
}

int pola_alloc_finish(struct pola_alloc *a, int ok)
{
	int rc = pola_side_finish(&a->side, ok); /* no allocation events: no file */
	free_threads(a);
	free(a);
	return rc;
}
