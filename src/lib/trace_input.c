#include "lib/trace_input.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format/sflog.h"
#include "lib/demangle.h"
#include "lib/outfile.h"
#include "lib/util.h"

struct proc_state {
	struct trace_proc pub;
	char *name, *cmdline;
	uint64_t *keys;       /* func_key by function id */
	uint32_t nkeys;
	uint8_t *thread_seen; /* by lr_thread.index: 1 fed to frames, 2 also announced */
	uint64_t shift_ns;    /* added to the log's times: its start - the recording's time 0 */
	int short_style;
	char **short_names;   /* by function id, built on first use */
	size_t nshort;
};

struct trace_input {
	struct proc_state *procs;
	size_t nprocs;
	struct trace_options opt;
	char **object_ids;    /* distinct non-main objects (build-id hex or path) */
	size_t nobject_ids;
	struct frames *frames;
	struct cut_filter *filter;  /* -c FILE */
	struct trace_cut *cut;     /* NULL: nothing cut */
	/* Record-time trimming (a log's header asks for it): a first cut with
	 * each log's own limits, feeding the user's cut. NULL: none asked. */
	struct trace_cut *trim;
	/* During trace_run: */
	const struct trace_sink *sink;
	struct proc_state *cur;
	int failed;
	uint64_t events;
	struct timespec start;
	int progress_shown;
};

/* A process's own log (not a ring snapshot: a copy of one, read only when
 * named). */
static int is_process_log(const char *path)
{
	/* Regular files only: a FIFO named *.log must not block the scan. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat st;
	struct sf_header h = {0};
	ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, &h, sizeof(h)) : 0;
	close(fd);
	return n >= (ssize_t)sizeof(h.magic) && h.magic == SF_MAGIC && !(n == (ssize_t)sizeof(h) && h.snapshot);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Expands directories into the sftrace logs they hold. */
static int expand_paths(const char *const *paths, size_t n, char ***out, size_t *nout)
{
	char **v = NULL;
	size_t nv = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(paths[i]);
			if (!d) {
				sf_error("%s: %s", paths[i], strerror(errno));
				goto fail;
			}
			size_t first = nv;
			struct dirent *e;
			while ((e = readdir(d))) {
				size_t len = strlen(e->d_name);
				if (len < 5 || strcmp(e->d_name + len - 4, ".log"))
					continue;
				size_t plen = strlen(paths[i]) + len + 2;
				char *p = xmalloc(plen);
				snprintf(p, plen, "%s/%s", paths[i], e->d_name);
				if (!is_process_log(p)) {
					free(p);
					continue;
				}
				v = xrealloc(v, (nv + 1) * sizeof(*v));
				v[nv++] = p;
			}
			closedir(d);
			if (nv == first) {
				sf_error("%s: directory holds no sftrace logs (*.log)", paths[i]);
				goto fail;
			}
			qsort(v + first, nv - first, sizeof(*v), cmp_str);
		} else {
			v = xrealloc(v, (nv + 1) * sizeof(*v));
			v[nv++] = xstrdup(paths[i]);
		}
	}
	*out = v;
	*nout = nv;
	return 0;
fail:
	for (size_t i = 0; i < nv; i++)
		free(v[i]);
	free(v);
	return -1;
}

static char *join_argv(const struct lr_info *info)
{
	size_t len = 1;
	for (int i = 0; i < info->argc; i++)
		len += strlen(info->argv[i]) + 1;
	char *s = xmalloc(len), *p = s;
	*p = 0;
	for (int i = 0; i < info->argc; i++)
		p += sprintf(p, "%s%s", i ? " " : "", info->argv[i]);
	return s;
}

static char *process_name(const struct lr_info *info, const struct lr_log *log)
{
	const char *src = info->argc > 0 ? info->argv[0] : NULL;
	if (!src || !*src) {
		for (size_t i = 0; i < lr_nobjects(log); i++)
			if (lr_object_at(log, i)->flags & SF_OBJ_MAIN)
				src = lr_object_at(log, i)->path;
	}
	if (!src)
		return xstrdup("?");
	const char *slash = strrchr(src, '/');
	return xstrdup(slash ? slash + 1 : src);
}

static uint64_t object_key(struct trace_input *in, const struct lr_object *o)
{
	if (o->flags & SF_OBJ_MAIN)
		return 0;
	char id[160];
	if (o->build_id_len) {
		size_t p = 0;
		for (int i = 0; i < o->build_id_len; i++)
			p += (size_t)snprintf(id + p, sizeof(id) - p, "%02x", o->build_id[i]);
	} else {
		snprintf(id, sizeof(id), "path:%s", o->path);
	}
	for (size_t i = 0; i < in->nobject_ids; i++)
		if (!strcmp(in->object_ids[i], id))
			return i + 1;
	in->object_ids = xrealloc(in->object_ids, (in->nobject_ids + 1) * sizeof(char *));
	in->object_ids[in->nobject_ids++] = xstrdup(id);
	return in->nobject_ids;
}

/* Precomputes func_key for every function id of a log. */
static void compute_keys(struct trace_input *in, struct proc_state *ps)
{
	const struct lr_log *log = ps->pub.log;
	uint32_t max = 0;
	for (size_t i = 0; i < lr_nobjects(log); i++) {
		const struct lr_object *o = lr_object_at(log, i);
		if (o->first_id + o->count > max)
			max = o->first_id + o->count;
	}
	ps->nkeys = max + 1;
	ps->keys = xcalloc(ps->nkeys, sizeof(uint64_t));
	for (size_t i = 0; i < lr_nobjects(log); i++) {
		const struct lr_object *o = lr_object_at(log, i);
		uint64_t k = object_key(in, o);
		for (uint32_t j = 0; j < o->count; j++)
			ps->keys[o->first_id + j] = (k << 48) | (o->funcs[j] & 0xffffffffffffull);
	}
}

/* -c FILE: parsed once, checked against every log. A filter that selects
 * nothing would give an empty output: refused, naming the file. */
static int load_filter(struct trace_input *in)
{
	const char *path = in->opt.cut.filter_path;
	in->filter = cut_filter_load(path);
	if (!in->filter)
		return -1;
	uint64_t selected = 0;
	for (size_t i = 0; i < in->nprocs; i++) {
		uint64_t n;
		if (cut_filter_check(in->filter, path, in->procs[i].pub.log, &n) < 0)
			return -1;
		selected += n;
	}
	if (!selected) {
		sf_error("filter %s selects no function of the given log%s (made for another program?)", path,
			 in->nprocs == 1 ? "" : "s");
		return -1;
	}
	return 0;
}

/* Start order. A forked child's log keeps its parent's start: the parent
 * goes first. */
static int cmp_start(const void *a, const void *b)
{
	const struct proc_state *x = a, *y = b;
	uint64_t sx = x->pub.info->start_mono_ns, sy = y->pub.info->start_mono_ns;
	if (sx != sy)
		return sx < sy ? -1 : 1;
	if (x->pub.info->pid != y->pub.info->pid) {
		if (y->pub.info->ppid == x->pub.info->pid)
			return -1;
		if (x->pub.info->ppid == y->pub.info->pid)
			return 1;
	}
	return x->pub.index < y->pub.index ? -1 : x->pub.index > y->pub.index;
}

/* One clock for every process: each log's times count from its own start,
 * so shift them all onto the earliest start. A header without a start time
 * (0: damaged) keeps its own zero. Processes are put in start order, so a
 * parent comes before the children it started. */
static void set_time_zero(struct trace_input *in)
{
	qsort(in->procs, in->nprocs, sizeof(*in->procs), cmp_start);
	for (size_t i = 0; i < in->nprocs; i++)
		in->procs[i].pub.index = i;

	uint64_t zero = 0;
	for (size_t i = 0; i < in->nprocs; i++) {
		uint64_t s = in->procs[i].pub.info->start_mono_ns;
		if (s && (!zero || s < zero))
			zero = s;
	}
	for (size_t i = 0; i < in->nprocs; i++) {
		struct proc_state *ps = &in->procs[i];
		uint64_t s = ps->pub.info->start_mono_ns;
		ps->shift_ns = s ? s - zero : 0;
		ps->pub.zero_mono_ns = s ? zero : 0;
	}
}

struct trace_input *trace_open(const char *const *paths, size_t npaths, const struct trace_options *opt)
{
	char **files;
	size_t nfiles;
	if (expand_paths(paths, npaths, &files, &nfiles) < 0)
		return NULL;
	struct trace_input *in = xcalloc(1, sizeof(*in));
	if (opt)
		in->opt = *opt;
	in->procs = xcalloc(nfiles, sizeof(*in->procs));
	int ok = 1;
	for (size_t i = 0; i < nfiles; i++) {
		char err[1024];
		struct proc_state *ps = &in->procs[in->nprocs];
		ps->pub.log = lr_open(files[i], err, sizeof(err));
		if (!ps->pub.log) {
			sf_error("%s", err);
			ok = 0;
			continue;
		}
		struct ls_options lo = {opt ? opt->symbol_paths : NULL, opt ? opt->nsymbol_paths : 0,
					opt ? opt->force : 0, opt ? opt->no_symbols : 0};
		ps->pub.syms = ls_open(ps->pub.log, &lo, err, sizeof(err));
		if (!ps->pub.syms) {
			sf_error("%s", err);
			lr_close(ps->pub.log);
			ok = 0;
			continue;
		}
		ps->pub.index = in->nprocs;
		ps->pub.info = lr_info(ps->pub.log);
		/* What is written from these logs is no more readable than they are. */
		sf_outfile_limit_mode(ps->pub.info->mode);
		ps->name = process_name(ps->pub.info, ps->pub.log);
		ps->cmdline = join_argv(ps->pub.info);
		ps->pub.name = ps->name;
		ps->pub.cmdline = ps->cmdline;
		ps->thread_seen = xcalloc(lr_nthreads(ps->pub.log) + 1, 1);
		ps->short_style = opt && opt->short_names;
		compute_keys(in, ps);
		in->nprocs++;
	}
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	set_time_zero(in);
	if (ok && opt && opt->cut.filter_path)
		ok = load_filter(in) == 0;
	if (!ok) {
		trace_close(in);
		return NULL;
	}
	return in;
}

size_t trace_nprocs(const struct trace_input *in) { return in->nprocs; }
const struct trace_proc *trace_proc_at(const struct trace_input *in, size_t i) { return &in->procs[i].pub; }

const struct sym_info *trace_symbol(const struct trace_proc *p, uint32_t func_id)
{
	return ls_lookup(p->syms, func_id);
}

const char *trace_name(const struct trace_proc *p, uint32_t func_id)
{
	struct proc_state *ps = (struct proc_state *)p;
	const struct sym_info *si = ls_lookup(p->syms, func_id);
	if (!ps->short_style)
		return si->name;
	if (func_id >= ps->nshort) {
		size_t n = (size_t)func_id + 256;
		ps->short_names = xrealloc(ps->short_names, n * sizeof(char *));
		memset(ps->short_names + ps->nshort, 0, (n - ps->nshort) * sizeof(char *));
		ps->nshort = n;
	}
	if (!ps->short_names[func_id])
		ps->short_names[func_id] = sf_short_name(si->name, si->mangled);
	return ps->short_names[func_id];
}

uint64_t trace_func_key(const struct trace_proc *p, uint32_t func_id)
{
	const struct proc_state *ps = (const struct proc_state *)p;
	return func_id < ps->nkeys ? ps->keys[func_id] : 0;
}

static void fill_frame(struct trace_input *in, struct trace_frame *f, const struct lr_thread *thread,
		       uint64_t id, uint64_t parent, uint32_t func_id, uint32_t depth)
{
	f->proc = &in->cur->pub;
	f->thread = thread;
	f->id = id;
	f->parent = parent;
	f->func_id = func_id;
	f->func_key = trace_func_key(&in->cur->pub, func_id);
	f->depth = depth;
}

/* With a cut, a thread is announced with its first kept frame, so threads
 * with nothing kept get no empty track. */
static int announce(struct trace_input *in, const struct lr_thread *thread)
{
	uint8_t *seen = &in->cur->thread_seen[thread->index];
	if (*seen == 2)
		return 0;
	*seen = 2;
	return in->sink->thread_begin ? in->sink->thread_begin(in->sink->ctx, &in->cur->pub, thread) : 0;
}

static void emit_begin(void *ctx, const struct lr_thread *thread, uint64_t id, uint64_t parent, uint32_t func_id,
		       uint32_t depth, uint64_t t, unsigned cut)
{
	struct trace_input *in = ctx;
	if (in->failed)
		return;
	if (announce(in, thread)) {
		in->failed = 1;
		return;
	}
	if (!in->sink->frame_begin)
		return;
	struct trace_frame f;
	fill_frame(in, &f, thread, id, parent, func_id, depth);
	f.t_begin = t;
	f.t_end = 0;
	f.end_kind = 0;
	f.cut = cut;
	if (in->sink->frame_begin(in->sink->ctx, &f))
		in->failed = 1;
}

static void emit_end(void *ctx, const struct lr_thread *thread, uint64_t id, uint64_t parent, uint32_t func_id,
		     uint32_t depth, uint64_t t_begin, uint64_t t_end, enum fr_end_kind kind, unsigned cut)
{
	struct trace_input *in = ctx;
	if (in->failed || !in->sink->frame_end)
		return;
	struct trace_frame f;
	fill_frame(in, &f, thread, id, parent, func_id, depth);
	f.t_begin = t_begin;
	f.t_end = t_end;
	f.end_kind = kind;
	f.cut = cut;
	if (in->sink->frame_end(in->sink->ctx, &f))
		in->failed = 1;
}

static void on_begin(void *ctx, const struct lr_thread *thread, uint64_t id, uint64_t parent, uint32_t func_id,
		     uint32_t depth, uint64_t t)
{
	emit_begin(ctx, thread, id, parent, func_id, depth, t, 0);
}

static void on_end(void *ctx, const struct lr_thread *thread, uint64_t id, uint64_t parent, uint32_t func_id,
		   uint32_t depth, uint64_t t_begin, uint64_t t_end, enum fr_end_kind kind)
{
	emit_end(ctx, thread, id, parent, func_id, depth, t_begin, t_end, kind, 0);
}

static double elapsed(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

/* Progress on stderr for long jobs, only when a person is watching. */
static void progress(struct trace_input *in, const struct lr_event *ev)
{
	if (in->opt.quiet || !isatty(2))
		return;
	if (elapsed(&in->start) < 1.0)
		return;
	const struct lr_info *info = in->cur->pub.info;
	double pct = info->file_size ? 100.0 * (double)ev->offset / (double)info->file_size : 0;
	fprintf(stderr, "\rsftrace: log %zu/%zu, %llu events (%.0f%%)   ", in->cur->pub.index + 1, in->nprocs,
		(unsigned long long)in->events, pct);
	in->progress_shown = 1;
}

/* The trim's kept frames go on to the user's cut (the trim never clips, so
 * its cut flags are always 0). */
static void trim_to_cut_begin(void *ctx, const struct lr_thread *t, uint64_t id, uint64_t parent, uint32_t func_id,
			      uint32_t depth, uint64_t t_ns, unsigned cut)
{
	(void)cut;
	cut_begin(ctx, t, id, parent, func_id, depth, t_ns);
}

static void trim_to_cut_end(void *ctx, const struct lr_thread *t, uint64_t id, uint64_t parent, uint32_t func_id,
			    uint32_t depth, uint64_t t_begin, uint64_t t_end, enum fr_end_kind kind, unsigned cut)
{
	(void)cut;
	cut_end(ctx, t, id, parent, func_id, depth, t_begin, t_end, kind);
}

static int any_trim(const struct trace_input *in)
{
	for (size_t i = 0; i < in->nprocs; i++)
		if (in->procs[i].pub.info->trim_min_ns || in->procs[i].pub.info->trim_max_depth)
			return 1;
	return 0;
}

/* frames -> [trim] -> [cut] -> the sink's callbacks. */
static void build_stages(struct trace_input *in)
{
	struct fr_callbacks cb = {on_begin, on_end}, cut_cb = {cut_begin, cut_end};
	static const struct cut_out cut_emit = {emit_begin, emit_end};
	static const struct cut_out trim_to_cut = {trim_to_cut_begin, trim_to_cut_end};
	static const struct trace_cut_options no_cut;
	if (in->frames)
		fr_free(in->frames);
	cut_free(in->cut);
	cut_free(in->trim);
	in->cut = in->trim = NULL;
	if (cut_active(&in->opt.cut))
		in->cut = cut_new(&in->opt.cut, in->filter, &cut_emit, in);
	if (any_trim(in))
		in->trim = cut_new(&no_cut, NULL, in->cut ? &trim_to_cut : &cut_emit,
				   in->cut ? (void *)in->cut : (void *)in);
	if (in->trim || in->cut)
		in->frames = fr_new(&cut_cb, in->trim ? in->trim : in->cut);
	else
		in->frames = fr_new(&cb, in);
}

int trace_run(struct trace_input *in, const struct trace_sink *sink)
{
	build_stages(in);
	in->sink = sink;
	in->failed = 0;
	in->events = 0;
	clock_gettime(CLOCK_MONOTONIC, &in->start);
	for (size_t i = 0; i < in->nprocs && !in->failed; i++) {
		struct proc_state *ps = &in->procs[i];
		in->cur = ps;
		memset(ps->thread_seen, 0, lr_nthreads(ps->pub.log) + 1);
		if (sink->process_begin && sink->process_begin(sink->ctx, &ps->pub)) {
			in->failed = 1;
			break;
		}
		struct lr_iter it;
		struct lr_event ev;
		if (in->cut)
			cut_process(in->cut, ps->pub.log, 0); /* times are on the recording's clock already */
		if (in->trim) {
			cut_set_limits(in->trim, ps->pub.info->trim_min_ns, ps->pub.info->trim_max_depth);
			cut_process(in->trim, ps->pub.log, 0);
		}
		lr_iter_init(&it, ps->pub.log);
		while (!in->failed && lr_next(&it, &ev)) {
			uint32_t ti = ev.thread->index;
			if (!ps->thread_seen[ti]) {
				if (in->cut && !cut_tid_wanted(in->cut, ev.thread->tid))
					continue;
				ps->thread_seen[ti] = 1;
				if (!in->cut && !in->trim && announce(in, ev.thread)) {
					in->failed = 1;
					break;
				}
			}
			ev.time_ns += ps->shift_ns;
			fr_feed(in->frames, &ev);
			if (ev.kind >= SF_EV_ALLOC && sink->alloc_event && sink->alloc_event(sink->ctx, &ps->pub, &ev))
				in->failed = 1;
			if (!ev.before_window && (++in->events & 0xfffff) == 0)
				progress(in, &ev);
		}
		for (size_t t = 0; t < lr_nthreads(ps->pub.log) && !in->failed; t++)
			if (ps->thread_seen[t])
				fr_end_thread(in->frames, lr_thread_at(ps->pub.log, t));
		if (!in->failed && sink->process_end && sink->process_end(sink->ctx, &ps->pub))
			in->failed = 1;
	}
	if (in->progress_shown)
		fprintf(stderr, "\r%60s\r", "");
	return in->failed ? -1 : 0;
}

const struct fr_stats *trace_stats(const struct trace_input *in)
{
	static const struct fr_stats none;
	return in->frames ? fr_stats(in->frames) : &none;
}

uint64_t trace_events(const struct trace_input *in) { return in->events; }

size_t trace_threads(const struct trace_input *in)
{
	size_t n = 0;
	for (size_t i = 0; i < in->nprocs; i++)
		for (size_t t = 0; t < lr_nthreads(in->procs[i].pub.log); t++)
			n += in->procs[i].thread_seen[t] != 0;
	return n;
}

const struct cut_stats *trace_cut_stats(const struct trace_input *in)
{
	return in->cut ? cut_stats(in->cut) : in->trim ? cut_stats(in->trim) : NULL;
}

/* "10us", "1.5ms": a duration as the options take it. */
static void format_duration(char *buf, size_t len, uint64_t ns)
{
	static const struct { const char *unit; uint64_t mul; } units[] = {{"s", 1000000000}, {"ms", 1000000},
									   {"us", 1000}};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ns >= units[i].mul) {
			snprintf(buf, len, "%g%s", (double)ns / (double)units[i].mul, units[i].unit);
			return;
		}
	snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

/* " (recorded with --min-duration 10us --max-depth 4; the runtime left
 * out 1234 records)": the first log's limits (a recording's processes
 * share them), and the records left out over all logs. */
static int format_trim(const struct trace_input *in, char *buf, size_t len)
{
	uint64_t min = 0, left = 0;
	uint32_t depth = 0;
	for (size_t i = 0; i < in->nprocs; i++) {
		const struct lr_info *info = in->procs[i].pub.info;
		if (!min && !depth) {
			min = info->trim_min_ns;
			depth = info->trim_max_depth;
		}
		left += info->trimmed_records;
	}
	char dur[32];
	format_duration(dur, sizeof(dur), min);
	return snprintf(buf, len, " (recorded with%s%s%s%.0u; the runtime left out %llu records)",
			min ? " --min-duration " : "", min ? dur : "", depth ? " --max-depth " : "", depth,
			(unsigned long long)left);
}

int trace_format_cut(const struct trace_input *in, char *buf, size_t len)
{
	const struct cut_stats *c = trace_cut_stats(in);
	if (!c) {
		if (len)
			buf[0] = 0;
		return 0;
	}
	int n = snprintf(buf, len, "kept %llu of %llu calls", (unsigned long long)c->kept,
			 (unsigned long long)trace_stats(in)->frames);
	uint64_t edge = c->cut_start + c->cut_end;
	if (edge && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", %llu cut at the window's start, %llu at its end",
			      (unsigned long long)c->cut_start, (unsigned long long)c->cut_end);
	if (in->trim && n >= 0 && (size_t)n < len)
		format_trim(in, buf + n, len - (size_t)n);
	return 1;
}

void trace_report_repairs(const struct trace_input *in)
{
	if (in->opt.quiet)
		return;
	for (size_t i = 0; i < in->nprocs; i++) {
		const struct trace_proc *p = &in->procs[i].pub;
		for (size_t w = 0; w < lr_nwarnings(p->log); w++)
			sf_warn("%s: %s", p->info->path, lr_warning(p->log, w));
		for (size_t w = 0; w < ls_nwarnings(p->syms); w++)
			sf_warn("%s: %s", p->info->path, ls_warning(p->syms, w));
		if (p->info->dropped_events)
			sf_warn("%s: the runtime dropped %llu events (%llu failed writes)", p->info->path,
				(unsigned long long)p->info->dropped_events, (unsigned long long)p->info->write_errors);
	}
	char buf[512];
	if (fr_format_repairs(trace_stats(in), buf, sizeof(buf)))
		fprintf(stderr, "sftrace: %s\n", buf);
	if (trace_format_cut(in, buf, sizeof(buf)))
		fprintf(stderr, "sftrace: cut: %s\n", buf);
	if (in->cut && !cut_stats(in->cut)->kept)
		sf_warn("the cut kept no call: %s", !trace_threads(in) ? "--tid names no thread of the logs"
					: "see --time (from the trace start), --min-duration, --max-depth, -c");
}

void trace_close(struct trace_input *in)
{
	if (!in)
		return;
	for (size_t i = 0; i < in->nprocs; i++) {
		struct proc_state *ps = &in->procs[i];
		ls_close(ps->pub.syms);
		lr_close(ps->pub.log);
		free(ps->name);
		free(ps->cmdline);
		free(ps->keys);
		free(ps->thread_seen);
		for (size_t k = 0; k < ps->nshort; k++)
			free(ps->short_names[k]);
		free(ps->short_names);
	}
	cut_free(in->cut);
	cut_free(in->trim);
	cut_filter_free(in->filter);
	for (size_t i = 0; i < in->nobject_ids; i++)
		free(in->object_ids[i]);
	free(in->object_ids);
	free(in->procs);
	if (in->frames)
		fr_free(in->frames);
	free(in);
}
