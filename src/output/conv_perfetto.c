/* convert --type perfetto: one process track per log, one thread track per
 * thread, one slice per frame, named and located by the symbolizer. Times
 * are CLOCK_MONOTONIC ns (the recording's time 0 + offset), so the processes
 * of one recording line up. */
#include <stdio.h>
#include <stdlib.h>

#include "lib/outfile.h"
#include "lib/util.h"
#include "output/converters.h"
#include "output/perfetto.h"

struct pf_sink {
	struct pf_writer *w;
	struct pf_process *proc;
	struct pf_thread **threads; /* by lr_thread.index, for the current process */
	size_t nthreads;
	uint64_t base;              /* the recording's time 0, CLOCK_MONOTONIC ns */
};

static int pf_process_begin(void *ctx, const struct trace_proc *p)
{
	struct pf_sink *s = ctx;
	s->proc = pf_add_process(s->w, p->info->pid, p->name, p->cmdline);
	free(s->threads);
	s->nthreads = lr_nthreads(p->log) + 1;
	s->threads = xcalloc(s->nthreads, sizeof(*s->threads));
	s->base = p->zero_mono_ns;
	return s->proc ? 0 : -1;
}

static int pf_thread_begin(void *ctx, const struct trace_proc *p, const struct lr_thread *t)
{
	struct pf_sink *s = ctx;
	(void)p;
	char name[64];
	snprintf(name, sizeof(name), "%s", t->name[0] ? t->name : "thread");
	s->threads[t->index] = pf_add_thread(s->w, s->proc, t->tid, name);
	return s->threads[t->index] ? 0 : -1;
}

static int pf_frame_begin(void *ctx, const struct trace_frame *f)
{
	struct pf_sink *s = ctx;
	struct pf_thread *t = s->threads[f->thread->index];
	uint64_t ts = s->base + f->t_begin, key = f->func_key ? f->func_key : f->func_id;
	int known = pf_slice_begin_known(s->w, t, ts, key);
	if (known)
		return known < 0 ? -1 : 0;
	const struct sym_info *si = trace_symbol(f->proc, f->func_id);
	return pf_slice_begin(s->w, t, ts, key, si->name, si->file, si->line);
}

static int pf_frame_end(void *ctx, const struct trace_frame *f)
{
	struct pf_sink *s = ctx;
	return pf_slice_end(s->w, s->threads[f->thread->index], s->base + f->t_end);
}

int conv_perfetto(struct trace_input *in, const struct conv_options *opt)
{
	char err[1024];
	struct sf_outfile *of = sf_outfile_open(opt->out, opt->gzip, err, sizeof(err));
	if (!of) {
		sf_error("%s", err);
		return -1;
	}
	struct pf_sink s = {0};
	s.w = pf_open(sf_outfile_write_cb, of);
	struct trace_sink sink = {&s, pf_process_begin, pf_thread_begin, pf_frame_begin, pf_frame_end, NULL};
	int r = trace_run(in, &sink);
	int fin = pf_finish(s.w);
	free(s.threads);
	if (fin < 0 || r < 0)
		return sf_outfile_fail(of, opt->out);
	return sf_outfile_commit(of);
}
