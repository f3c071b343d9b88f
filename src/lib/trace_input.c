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
#include "lib/hashmap.h"
#include "lib/kept_filter.h"
#include "lib/name_match.h"
#include "lib/outfile.h"
#include "lib/text_esc.h"
#include "lib/thread_label.h"
#include "lib/util.h"

struct proc_state {
	struct trace_proc pub;
	char *name, *cmdline;
	uint64_t *keys;       /* func_key by function id (pub.func_keys) */
	size_t threads_read;  /* threads the latest trace_run read (--tid leaves some out) */
	int short_style;
	char **short_names;   /* by function id, built on first use */
	size_t nshort;
	char **labels;        /* trace_thread_label by thread index, built on first use */
	size_t nlabels;
	/* Its part of the latest trace_run's repairs: the totals when it
	 * began, then (at its end) the difference (trace_proc_stats). */
	struct fr_stats stats;
	uint64_t last_rec_ns; /* its latest event on the recorded clock (lr_event.rec_ns) */
	struct trace_input *in;
};

/* One replay: the pipeline's stages and where it is. */
struct pass {
	struct trace_input *in;
	const struct trace_sink *sink;
	struct frames *frames;
	struct trace_cut *cut;     /* the user's cut; NULL: nothing cut */
	/* Record-time trimming (a log's header asks for it): a first cut with
	 * each log's own limits, feeding the user's cut. NULL: none asked. */
	struct trace_cut *trim;
	struct proc_state *cur;
	uint8_t *seen;             /* by lr_thread.index of cur: 1 fed to frames, 2 also announced */
	size_t nseen;
	struct net_clock *net;     /* by lr_thread.index of cur: net times (NULL: raw) */
	int shown_raw;             /* net times for the cut only: the sink gets recorded ones */
	int failed;
	uint64_t events;
	struct timespec start;
	int progress_shown;
};

struct trace_input {
	struct proc_state *procs;
	size_t nprocs;
	struct trace_options opt;
	char **object_ids;    /* distinct non-main objects (build-id hex or path) */
	size_t nobject_ids;
	struct cut_filter *filter;  /* -c FILE */
	struct nm_patterns only, notrace; /* -F, -N (compiled) */
	struct pass run;      /* the latest trace_run (its stages hold the totals) */
	int repairs_shown;    /* the command's output states the repairs and the cut */
	char **no_lines;      /* objects trace_srcline said have no source lines */
	size_t nno_lines;
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

/* The key slot (the bits above 48) of an object id: 1.. in order met. */
static uint64_t key_slot(struct trace_input *in, const char *id)
{
	for (size_t i = 0; i < in->nobject_ids; i++)
		if (!strcmp(in->object_ids[i], id))
			return i + 1;
	in->object_ids = xrealloc(in->object_ids, (in->nobject_ids + 1) * sizeof(char *));
	in->object_ids[in->nobject_ids++] = xstrdup(id);
	return in->nobject_ids;
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
	return key_slot(in, id);
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
	ps->pub.nfunc_keys = max + 1;
	ps->keys = xcalloc(ps->pub.nfunc_keys, sizeof(uint64_t));
	ps->pub.func_keys = ps->keys;
	for (size_t i = 0; i < lr_nobjects(log); i++) {
		const struct lr_object *o = lr_object_at(log, i);
		uint64_t k = object_key(in, o);
		for (uint32_t j = 0; j < o->count; j++)
			ps->keys[o->first_id + j] = (k << 48) | (o->funcs[j] & 0xffffffffffffull);
	}
}

/* ---- one key per name a folded function goes by ---- */

#define KEY_ADDR_MASK 0xffffffffffffull

/* Names one folded function (a base key) goes by in the processes, in
 * process order: the first keeps the key. */
struct key_names {
	const char **names;
	size_t n;
};

struct renamed_keys {
	const uint64_t *keys;
	struct hashmap *ix; /* base key -> index + 1 into the key_names */
	size_t n;
};

static void note_renamed(void *ctx, uint32_t func_id)
{
	struct renamed_keys *r = ctx;
	int added;
	uint64_t *slot = hm_put(r->ix, r->keys[func_id], &added);
	if (added)
		*slot = ++r->n;
}

/* The key of the function of base key `key` under its v-th name (v >= 1):
 * the same address, in a key slot of its own for the object's v-th names. */
static uint64_t variant_key(struct trace_input *in, uint64_t key, size_t v)
{
	uint64_t slot = key >> 48;
	char id[200];
	snprintf(id, sizeof(id), "%s\x1f%zu", slot ? in->object_ids[slot - 1] : "main", v);
	return key_slot(in, id) << 48 | (key & KEY_ADDR_MASK);
}

/* The name's index among the function's names, added if new. */
static size_t name_index(struct key_names *kn, const char *name)
{
	for (size_t i = 0; i < kn->n; i++)
		if (!strcmp(kn->names[i], name))
			return i;
	kn->names = xrealloc(kn->names, (kn->n + 1) * sizeof(*kn->names));
	kn->names[kn->n] = name;
	return kn->n++;
}

/* The naming decision is each process's own (its recording's kept filter,
 * ls_prefer_name), and keys are per object: where two processes name one
 * folded function differently (recordings with opposite filters in one
 * directory), each name gets a key of its own, so that a row of an
 * aggregate over processes (report, flamegraph, query's functions,
 * Perfetto's and Parquet's interned functions) is one (object, address,
 * name), with that name's calls. The earliest process's name keeps the
 * key. Only renamed functions can differ: with one process, or no rename,
 * this is one pass over an empty list. */
static void split_keys_by_name(struct trace_input *in)
{
	if (in->nprocs < 2)
		return;
	struct hashmap ix = HASHMAP_INIT;
	struct renamed_keys r = {NULL, &ix, 0};
	for (size_t i = 0; i < in->nprocs; i++) {
		r.keys = in->procs[i].keys;
		ls_each_renamed(in->procs[i].pub.syms, note_renamed, &r);
	}
	hm_remove(&ix, 0); /* ids no object owns */
	struct key_names *kn = r.n ? xcalloc(r.n + 1, sizeof(*kn)) : NULL;
	for (size_t i = 0; i < in->nprocs && kn; i++) {
		struct proc_state *ps = &in->procs[i];
		for (uint32_t id = 0; id < ps->pub.nfunc_keys; id++) {
			uint64_t k = hm_get(&ix, ps->keys[id], 0);
			size_t v = k ? name_index(&kn[k - 1], ls_lookup(ps->pub.syms, id)->name) : 0;
			if (v)
				ps->keys[id] = variant_key(in, ps->keys[id], v);
		}
	}
	for (size_t i = 0; i < r.n; i++)
		free(kn[i].names);
	free(kn);
	hm_free(&ix);
}

/* A filter's names: where it names a function by one of its aliases
 * (identical code folding), every output calls the function that. */
struct filter_names {
	struct log_symbols *syms;
	const struct lr_object *obj;
	struct hashmap ids; /* vaddr -> function id + 1 */
};

static void prefer_filter_name(void *ctx, uint64_t vaddr, const char *name)
{
	struct filter_names *fn = ctx;
	uint64_t id = hm_get(&fn->ids, vaddr, 0);
	if (id)
		ls_prefer_name(fn->syms, (uint32_t)(id - 1), name);
}

static void apply_filter_names(struct proc_state *p, const struct cut_filter *f)
{
	const struct lr_log *log = p->pub.log;
	for (size_t k = 0; k < lr_nobjects(log); k++) {
		const struct lr_object *o = lr_object_at(log, k);
		struct filter_names fn = {p->pub.syms, o, HASHMAP_INIT};
		hm_init(&fn.ids, o->count);
		for (uint32_t j = 0; j < o->count; j++)
			*hm_put(&fn.ids, o->funcs[j], NULL) = (uint64_t)o->first_id + j + 1;
		cut_filter_each_name(f, o, prefer_filter_name, &fn);
		hm_free(&fn.ids);
	}
}

/* The filter each log was recorded with, kept next to it by record
 * (kept_filter.h): its names are the ones outputs use, unless -c chooses
 * again. Logs of one run share the file: each is read once. A kept filter
 * that cannot be read leaves the names as the symbol table gives them. */
static void apply_kept_filters(struct trace_input *in)
{
	char (*paths)[PATH_MAX] = xcalloc(in->nprocs + 1, sizeof(*paths));
	struct cut_filter **filters = xcalloc(in->nprocs + 1, sizeof(*filters));
	size_t n = 0;
	for (size_t i = 0; i < in->nprocs; i++) {
		char path[PATH_MAX];
		if (kf_find_for_log(in->procs[i].pub.info->path, path, sizeof(path)) < 0)
			continue;
		size_t k = 0;
		while (k < n && strcmp(paths[k], path))
			k++;
		if (k == n) {
			memcpy(paths[n], path, sizeof(path));
			filters[n++] = cut_filter_load(path);
		}
		if (filters[k])
			apply_filter_names(&in->procs[i], filters[k]);
	}
	for (size_t k = 0; k < n; k++)
		cut_filter_free(filters[k]);
	free(filters);
	free(paths);
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
	for (size_t i = 0; i < in->nprocs; i++)
		apply_filter_names(&in->procs[i], in->filter);
	return 0;
}

static int func_found(const struct nm_patterns *ps, struct proc_state *p, uint32_t id);

/* Whether any function of any log is found by the patterns. */
static int any_func_found(struct trace_input *in, const struct nm_patterns *ps)
{
	for (size_t i = 0; i < in->nprocs; i++) {
		const struct lr_log *log = in->procs[i].pub.log;
		for (size_t k = 0; k < lr_nobjects(log); k++) {
			const struct lr_object *o = lr_object_at(log, k);
			for (uint32_t j = 0; j < o->count; j++)
				if (func_found(ps, &in->procs[i], o->first_id + j) >= 0)
					return 1;
		}
	}
	return 0;
}

int trace_add_name_pattern(struct trace_input *in, struct nm_patterns *ps, const char *text, const char *origin)
{
	char *whole = nm_whole_pattern(text);
	struct nm_patterns probe = {0};
	nm_add(&probe, whole, origin);
	if (nm_compile(&probe) < 0) {
		nm_free(&probe);
		free(whole);
		return -1;
	}
	nm_add(ps, any_func_found(in, &probe) ? whole : text, origin);
	nm_free(&probe);
	free(whole);
	return 0;
}

int trace_func_found(const struct trace_proc *p, const struct nm_patterns *ps, uint32_t func_id)
{
	return func_found(ps, (struct proc_state *)p, func_id) >= 0;
}

/* -F/-N: names taken whole or regexes (nm_whole_pattern's rule), compiled
 * once; a bad regex is named. */
static int compile_func_regexes(struct trace_input *in)
{
	const struct trace_cut_options *c = &in->opt.cut;
	for (size_t i = 0; i < c->nonly_funcs; i++)
		if (trace_add_name_pattern(in, &in->only, c->only_funcs[i], "-F") < 0)
			return -1;
	for (size_t i = 0; i < c->nnotrace_funcs; i++)
		if (trace_add_name_pattern(in, &in->notrace, c->notrace_funcs[i], "-N") < 0)
			return -1;
	return nm_compile(&in->only) < 0 || nm_compile(&in->notrace) < 0 ? -1 : 0;
}

/* -F/-N rename a folded function to the alias they find (func_found).
 * Left to the cut, a process's rename would come after the keys were split
 * by name (split_keys_by_name), and one name would have two keys (two
 * "alpha_sum" rows of report, test_skeptic28z): with several processes,
 * every function that has aliases is settled at open. */
static void settle_pattern_names(struct trace_input *in)
{
	if (in->nprocs < 2 || (!in->only.n && !in->notrace.n))
		return;
	for (size_t i = 0; i < in->nprocs; i++) {
		struct proc_state *p = &in->procs[i];
		for (uint32_t id = 0; id < p->pub.nfunc_keys; id++) {
			if (!p->keys[id] || !ls_aliases(p->pub.syms, id, NULL, NULL))
				continue;
			if (in->only.n)
				func_found(&in->only, p, id);
			if (in->notrace.n)
				func_found(&in->notrace, p, id);
		}
	}
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
		ps->pub.start_ns = s ? s - zero : 0;
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
					opt ? opt->force : 0, opt ? opt->no_symbols : 0,
					opt ? opt->symbols_optional : 0};
		ps->pub.syms = ls_open(ps->pub.log, &lo, err, sizeof(err));
		if (!ps->pub.syms) {
			sf_error("%s", err);
			lr_close(ps->pub.log);
			ok = 0;
			continue;
		}
		ps->pub.index = in->nprocs;
		ps->in = in;
		ps->pub.info = lr_info(ps->pub.log);
		/* What is written from these logs is no more readable than they are. */
		sf_outfile_limit_mode(ps->pub.info->mode);
		ps->name = process_name(ps->pub.info, ps->pub.log);
		ps->cmdline = join_argv(ps->pub.info);
		ps->pub.name = ps->name;
		ps->pub.cmdline = ps->cmdline;
		ps->short_style = opt && opt->short_names;
		compute_keys(in, ps);
		in->nprocs++;
	}
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	set_time_zero(in);
	if (ok && !(opt && opt->no_symbols))
		apply_kept_filters(in);
	if (ok && opt && opt->cut.filter_path)
		ok = load_filter(in) == 0;
	if (ok)
		ok = compile_func_regexes(in) == 0;
	if (ok && !(opt && opt->no_symbols)) {
		settle_pattern_names(in);
		split_keys_by_name(in);
	}
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

const char *trace_short_name(const struct trace_proc *p, uint32_t func_id)
{
	struct proc_state *ps = (struct proc_state *)p;
	const struct sym_info *si = ls_lookup(p->syms, func_id);
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

int trace_short_style(const struct trace_proc *p)
{
	return ((const struct proc_state *)p)->short_style;
}

const char *trace_name(const struct trace_proc *p, uint32_t func_id)
{
	const struct proc_state *ps = (const struct proc_state *)p;
	return ps->short_style ? trace_short_name(p, func_id) : ls_lookup(p->syms, func_id)->name;
}

const char *trace_srcline(const struct trace_proc *p, uint32_t func_id, uint32_t *line)
{
	const struct sym_info *si = ls_lookup(p->syms, func_id);
	*line = si->line;
	if (si->file)
		return si->file;
	struct trace_input *in = ((struct proc_state *)p)->in;
	const char *obj = ls_object_without_dwarf(p->syms, func_id);
	if (!obj)
		return NULL;
	for (size_t i = 0; i < in->nno_lines; i++)
		if (!strcmp(in->no_lines[i], obj))
			return NULL;
	in->no_lines = xrealloc(in->no_lines, (in->nno_lines + 1) * sizeof(char *));
	in->no_lines[in->nno_lines++] = xstrdup(obj);
	sf_warn("%s: no source lines (no DWARF: built without -g, or stripped); --srcline shows none for its "
		"functions",
		sf_esc(obj));
	return NULL;
}

int trace_thread_name_cut(const struct trace_proc *p, const struct lr_thread *t)
{
	return strlen(t->name) >= SF_THREAD_NAME_CUT && strncmp(t->name, p->name, SF_THREAD_NAME_CUT) != 0;
}

const char *trace_thread_label(const struct trace_proc *p, const struct lr_thread *t)
{
	struct proc_state *ps = (struct proc_state *)p;
	if (!trace_thread_name_cut(p, t))
		return t->name;
	if (!ps->labels) {
		ps->nlabels = lr_nthreads(p->log) + 1;
		ps->labels = xcalloc(ps->nlabels, sizeof(*ps->labels));
	}
	char **l = &ps->labels[t->index];
	if (!*l) {
		uint32_t fn;
		if (tl_pick(p, t, &fn) == 0) {
			const char *f = trace_short_name(p, fn), *c;
			size_t flen = tl_owner(f); /* a test: the test's name, not its closure's shim */
			size_t clen = flen ? 0 : tl_closure_of(trace_symbol(p, fn)->name, &c);
			f += flen != 0;
			flen = flen ? flen : strlen(f);
			size_t n = strlen(t->name) + (clen ? clen + sizeof("::{closure}") : flen) + 4;
			*l = xmalloc(n);
			if (clen) /* a wrapper of a closure that calls only plumbing: the closure */
				snprintf(*l, n, "%s (%.*s::{closure})", t->name, (int)clen, c);
			else
				snprintf(*l, n, "%s (%.*s)", t->name, (int)flen, f);
		} else {
			*l = xstrdup(t->name);
		}
	}
	return *l;
}

/* ---- the pipeline's last stage: frames into the sink ---- */

/* With a cut, a thread is announced with its first kept frame, so threads
 * with nothing kept get no empty track. */
static int announce(struct pass *ps, const struct lr_thread *thread)
{
	uint8_t *seen = &ps->seen[thread->index];
	if (*seen == 2)
		return 0;
	*seen = 2;
	return ps->sink->thread_begin ? ps->sink->thread_begin(ps->sink->ctx, &ps->cur->pub, thread) : 0;
}

/* The frame as the sink gets it: on the recorded clock when the pipeline
 * ran on the net one only to judge --min-duration (pass.shown_raw). A call
 * the window clipped then gets the edge itself, as the cut gives it on the
 * recorded clock (r_begin, r_end). */
static const struct fr_frame *shown(const struct pass *ps, const struct fr_frame *f, struct fr_frame *copy)
{
	if (!ps->shown_raw)
		return f;
	*copy = *f;
	copy->t_begin = f->r_begin;
	copy->t_end = f->r_end;
	return copy;
}

static void to_sink_begin(void *ctx, const struct fr_frame *f)
{
	struct pass *ps = ctx;
	struct fr_frame copy;
	if (ps->failed)
		return;
	if (announce(ps, f->thread) ||
	    (ps->sink->frame_begin && ps->sink->frame_begin(ps->sink->ctx, shown(ps, f, &copy))))
		ps->failed = 1;
}

static void to_sink_end(void *ctx, const struct fr_frame *f)
{
	struct pass *ps = ctx;
	struct fr_frame copy;
	if (!ps->failed && ps->sink->frame_end && ps->sink->frame_end(ps->sink->ctx, shown(ps, f, &copy)))
		ps->failed = 1;
}

static void to_sink_unmatched(void *ctx, const struct fr_frame *f)
{
	struct pass *ps = ctx;
	struct fr_frame copy;
	if (!ps->failed && ps->sink->frame_unmatched && ps->sink->frame_unmatched(ps->sink->ctx, shown(ps, f, &copy)))
		ps->failed = 1;
}

static const struct fr_callbacks to_sink = {to_sink_begin, to_sink_end, to_sink_unmatched};

/* ---- -F/-N: which functions the regexes find ---- */

struct alias_hit {
	const struct nm_patterns *ps;
	char *copy; /* the first alias the patterns find (demangled, else raw) */
};

static void alias_found(void *ctx, const char *mangled, const char *demangled)
{
	struct alias_hit *a = ctx;
	const char *name = demangled ? demangled : mangled;
	if (!a->copy && name && nm_match(a->ps, name))
		a->copy = xstrdup(name);
}

/* `name` without its trailing parameter list ("ns::f(int)" -> "ns::f"), as
 * uftrace names a function, so that `-N 'f$'` finds it; NULL when it has
 * none. malloc'd. */
static char *without_params(const char *name)
{
	size_t n = strlen(name);
	if (!n || name[n - 1] != ')')
		return NULL;
	int depth = 0;
	for (size_t i = n; i-- > 0;) {
		depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
		if (!depth)
			return i ? strndup(name, i) : NULL;
	}
	return NULL;
}

/* Which pattern (the last one) finds the function by its name, full or
 * short (as report prints it), or by one of its aliases (identical code
 * folding): then that alias is the name every output uses, as for a filter
 * file. -1: none does. */
static int func_found(const struct nm_patterns *ps, struct proc_state *p, uint32_t id)
{
	const struct sym_info *si = ls_lookup(p->pub.syms, id);
	int hit = nm_match_last(ps, si->name);
	char *s = sf_short_name(si->name, si->mangled);
	int hit_short = nm_match_last(ps, s);
	free(s);
	if (hit_short > hit)
		hit = hit_short;
	char *bare = without_params(si->name);
	int hit_bare = bare ? nm_match_last(ps, bare) : -1;
	free(bare);
	if (hit_bare > hit)
		hit = hit_bare;
	if (hit >= 0)
		return hit;
	struct alias_hit a = {ps, NULL};
	ls_aliases(p->pub.syms, id, alias_found, &a);
	if (!a.copy)
		return -1;
	hit = nm_match_last(ps, a.copy);
	if (id >= p->nshort || !p->short_names[id])
		ls_prefer_name(p->pub.syms, id, a.copy);
	free(a.copy);
	return hit;
}

/* A function both -F and -N find follows the later of the two options, as
 * uftrace (`-F 'ns1::.*' -N 'bar2$'` drops bar2). */
static unsigned mark_func(void *ctx, uint32_t id)
{
	struct pass *ps = ctx;
	const struct trace_cut_options *c = &ps->in->opt.cut;
	int only = ps->in->only.n ? func_found(&ps->in->only, ps->cur, id) : -1;
	int notrace = ps->in->notrace.n ? func_found(&ps->in->notrace, ps->cur, id) : -1;
	if (only >= 0 && notrace >= 0 && c->only_seq && c->notrace_seq)
		return c->only_seq[only] > c->notrace_seq[notrace] ? CUT_MARK_ONLY : CUT_MARK_NOTRACE;
	return (only >= 0 ? CUT_MARK_ONLY : 0) | (notrace >= 0 ? CUT_MARK_NOTRACE : 0);
}
static const struct fr_callbacks to_cut = {.begin = cut_begin, .end = cut_end, .unmatched = cut_unmatched};

static double elapsed(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

/* Progress on stderr for long jobs, only when a person is watching. */
static void progress(struct pass *ps, const struct lr_event *ev)
{
	if (ps->in->opt.quiet || ps->in->opt.no_progress || !isatty(2))
		return;
	if (elapsed(&ps->start) < 1.0)
		return;
	const struct lr_info *info = ps->cur->pub.info;
	double pct = info->file_size ? 100.0 * (double)ev->offset / (double)info->file_size : 0;
	fprintf(stderr, "\rsftrace: log %zu/%zu, %llu events (%.0f%%)   ", ps->cur->pub.index + 1, ps->in->nprocs,
		(unsigned long long)ps->events, pct);
	ps->progress_shown = 1;
}

static int any_trim(const struct trace_input *in)
{
	for (size_t i = 0; i < in->nprocs; i++)
		if (in->procs[i].pub.info->trim_min_ns || in->procs[i].pub.info->trim_max_depth)
			return 1;
	return 0;
}

static void pass_free(struct pass *ps)
{
	if (ps->frames)
		fr_free(ps->frames);
	cut_free(ps->cut);
	cut_free(ps->trim);
	free(ps->seen);
	free(ps->net);
	memset(ps, 0, sizeof(*ps));
}

/* Times net of the tracer (docs/DESIGN.md): each thread runs on a clock
 * that stops while the tracer works. Only the sums are measured: the
 * parent part (an EXIT's time to the next ENTRY's) and the child part (an
 * ENTRY's time to its EXIT's), not how each event's own work splits around
 * its timestamp. Each event is charged half of both, as the entry and exit
 * trampolines do the same work: an ENTRY half the parent part before its
 * time and half the child part after, an EXIT (or TAIL) the other halves.
 * A call with both events then loses the child part from its duration and
 * its caller the parent part, as if all were charged at the ENTRY; but a
 * frame a longjmp or an exception abandoned (an ENTRY and no EXIT) is
 * charged only its ENTRY's cost, which is all the tracer spent in it, and
 * an EXIT whose ENTRY came before a ring's window only its own. Entries
 * the reader made up (ring windows) and landings (not measured) cost
 * nothing. A thread's net clock never runs backwards. */
struct net_clock {
	double spent;   /* ns of tracer work so far on this thread */
	uint64_t last;  /* the latest net time given */
};

/* Whether the pipeline (frames, trim, cut) runs on the net clock: then
 * --min-duration judges net durations. The sink gets net times only with
 * net_times; otherwise to_sink gives it the recorded ones (shown_raw). */
static int in_net_times(const struct trace_input *in, const struct proc_state *p)
{
	return (in->opt.net_times || !in->opt.raw_cut) && p->pub.info->cost_known;
}

static void net_time(struct net_clock *c, const struct lr_info *info, struct lr_event *ev)
{
	double before = 0, after = 0;
	if (ev->kind == SF_EV_ENTRY && !ev->before_window) {
		before = info->cost_parent_ns / 2;
		after = info->cost_child_ns / 2;
	} else if (ev->kind == SF_EV_EXIT || sf_kind_is_tail(ev->kind)) {
		before = info->cost_child_ns / 2;
		after = info->cost_parent_ns / 2;
	}
	c->spent += before;
	uint64_t spent = (uint64_t)c->spent;
	uint64_t t = ev->time_ns > spent ? ev->time_ns - spent : 0;
	if (t < c->last)
		t = c->last;
	ev->time_ns = c->last = t;
	c->spent += after;
	c->spent += (double)ev->stall_ns; /* a batch hand-off's wait, which the calibration leaves out */
}

/* frames -> [trim] -> [cut] -> the sink, each stage the next one's input.
 * whole: every frame as recorded (no trim, no cut). */
static void pass_init(struct pass *ps, struct trace_input *in, const struct trace_sink *sink, int whole)
{
	static const struct trace_cut_options no_cut;
	memset(ps, 0, sizeof(*ps));
	ps->in = in;
	ps->sink = sink;
	if (!whole && cut_active(&in->opt.cut)) {
		ps->cut = cut_new(&in->opt.cut, in->filter, &to_sink, ps);
		if (in->only.n || in->notrace.n)
			cut_set_marker(ps->cut, mark_func, ps);
	}
	if (!whole && any_trim(in))
		ps->trim = ps->cut ? cut_new(&no_cut, NULL, &to_cut, ps->cut) : cut_new(&no_cut, NULL, &to_sink, ps);
	if (ps->trim)
		ps->frames = fr_new(&to_cut, ps->trim);
	else if (ps->cut)
		ps->frames = fr_new(&to_cut, ps->cut);
	else
		ps->frames = fr_new(&to_sink, ps);
	clock_gettime(CLOCK_MONOTONIC, &ps->start);
}

/* A fork child's threads start inside their parent's open frames: -F/-N
 * and a within filter count its calls as under them (the child's log
 * gives their names only by their exits, so only then is it read ahead). */
static void inherit_frames(struct trace_cut *cut, const struct lr_log *log)
{
	for (size_t i = 0; cut_wants_inherited(cut) && i < lr_nthreads(log); i++) {
		const struct lr_thread *t = lr_thread_at(log, i);
		uint32_t *ids;
		size_t n = lr_inherited_frames(log, t, &ids);
		cut_set_inherited(cut, t->index, ids, n);
		free(ids);
	}
}

/* Before a process's events. 0, or -1 if the sink failed. */
static int proc_begin(struct pass *ps, struct proc_state *p)
{
	ps->cur = p;
	ps->nseen = lr_nthreads(p->pub.log) + 1;
	free(ps->seen);
	ps->seen = xcalloc(ps->nseen, 1);
	free(ps->net);
	ps->net = in_net_times(ps->in, p) ? xcalloc(ps->nseen, sizeof(*ps->net)) : NULL;
	ps->shown_raw = ps->net && !ps->in->opt.net_times;
	if (ps->cut)
		cut_set_net_err(ps->cut, ps->net ? p->pub.info->cost_err : 0);
	p->pub.last_ns = 0;
	p->last_rec_ns = 0;
	if (ps == &ps->in->run) /* trace_run_merged leaves the totals alone */
		p->stats = *fr_stats(ps->frames);
	fr_set_proc(ps->frames, &p->pub);
	if (ps->sink->process_begin && ps->sink->process_begin(ps->sink->ctx, &p->pub))
		return -1;
	if (ps->cut) {
		cut_process(ps->cut, p->pub.log, 0); /* times are on the recording's clock already */
		inherit_frames(ps->cut, p->pub.log);
	}
	if (ps->trim) {
		cut_set_limits(ps->trim, p->pub.info->trim_min_ns, p->pub.info->trim_max_depth);
		cut_process(ps->trim, p->pub.log, 0);
	}
	return 0;
}

/* One event through the pipeline. */
static void feed(struct pass *ps, struct lr_event *ev)
{
	struct proc_state *p = ps->cur;
	uint32_t ti = ev->thread->index;
	if (!ps->seen[ti]) {
		if (ps->cut && !cut_tid_wanted(ps->cut, ev->thread->tid))
			return;
		ps->seen[ti] = 1;
		if (!ps->cut && !ps->trim && announce(ps, ev->thread)) {
			ps->failed = 1;
			return;
		}
	}
	if (ps->net)
		net_time(&ps->net[ti], p->pub.info, ev);
	ev->time_ns += p->pub.start_ns;
	ev->rec_ns += p->pub.start_ns;
	fr_feed(ps->frames, ev);
	if (ps->shown_raw)
		ev->time_ns = ev->rec_ns; /* the net time was for the cut */
	if (ev->time_ns > p->pub.last_ns)
		p->pub.last_ns = ev->time_ns;
	if (ev->rec_ns > p->last_rec_ns)
		p->last_rec_ns = ev->rec_ns;
	/* Allocation kinds are the ones with payloads (not the unwind kinds
	 * between them). */
	if (sf_event_payload_records(ev->kind) && ps->sink->alloc_event &&
	    ps->sink->alloc_event(ps->sink->ctx, &p->pub, ev))
		ps->failed = 1;
	if (!ev->before_window && (++ps->events & 0xfffff) == 0)
		progress(ps, ev);
}

/* A snapshot's end on the recorded clock: its trigger's time (the
 * writer cut every thread's window there), else (older logs) the
 * process's last event. 0 for other logs. */
static uint64_t snapshot_end(const struct proc_state *p)
{
	const struct lr_info *i = p->pub.info;
	if (!i->snapshot)
		return 0;
	uint64_t t = i->snap_time ? lr_time_ns(p->pub.log, i->snap_time) + p->pub.start_ns : 0;
	return t > p->last_rec_ns ? t : p->last_rec_ns;
}

/* After a process's events: its open frames close, the sink hears of its end. */
static void proc_end(struct pass *ps)
{
	struct proc_state *p = ps->cur;
	uint64_t snap_r = snapshot_end(p);
	for (size_t t = 0; t < lr_nthreads(p->pub.log) && !ps->failed; t++)
		if (ps->seen[t])
			fr_end_thread(ps->frames, lr_thread_at(p->pub.log, t), snap_r);
	if (ps == &ps->in->run)
		fr_stats_since(fr_stats(ps->frames), &p->stats, &p->stats);
	if (!ps->failed && ps->sink->process_end && ps->sink->process_end(ps->sink->ctx, &p->pub))
		ps->failed = 1;
}

static void feed_merged(struct pass *ps, struct proc_state *p);

/* A process's events in the log's batch order (lr_iter). */
static void feed_batches(struct pass *ps, struct proc_state *p)
{
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init(&it, p->pub.log);
	while (!ps->failed && lr_next(&it, &ev))
		feed(ps, &ev);
}

int trace_run(struct trace_input *in, const struct trace_sink *sink)
{
	struct pass *ps = &in->run;
	pass_free(ps);
	pass_init(ps, in, sink, 0);
	for (size_t i = 0; i < in->nprocs && !ps->failed; i++) {
		struct proc_state *p = &in->procs[i];
		if (proc_begin(ps, p) < 0) {
			ps->failed = 1;
			break;
		}
		if (in->opt.time_order)
			feed_merged(ps, p);
		else
			feed_batches(ps, p);
		proc_end(ps);
		p->threads_read = 0;
		for (size_t t = 0; t < lr_nthreads(p->pub.log); t++)
			p->threads_read += ps->seen[t] != 0;
	}
	if (ps->progress_shown)
		fprintf(stderr, "\r%60s\r", "");
	return ps->failed ? -1 : 0;
}

/* ---- one process, threads merged in time order ---- */

struct merge {
	struct lr_iter *it;   /* by thread index */
	struct lr_event *ev;  /* each thread's next event */
	size_t *heap;         /* binary min-heap of thread indices by next event time */
	size_t n;
};

static uint64_t merge_time(const struct merge *m, size_t i) { return m->ev[m->heap[i]].time_ns; }

static void merge_sift(struct merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, k = i;
		if (l < m->n && merge_time(m, l) < merge_time(m, k))
			k = l;
		if (l + 1 < m->n && merge_time(m, l + 1) < merge_time(m, k))
			k = l + 1;
		if (k == i)
			return;
		size_t x = m->heap[i];
		m->heap[i] = m->heap[k];
		m->heap[k] = x;
		i = k;
	}
}

static void merge_init(struct merge *m, const struct lr_log *log)
{
	size_t nt = lr_nthreads(log);
	m->it = xcalloc(nt + 1, sizeof(*m->it));
	m->ev = xcalloc(nt + 1, sizeof(*m->ev));
	m->heap = xcalloc(nt + 1, sizeof(*m->heap));
	m->n = 0;
	for (size_t i = 0; i < nt; i++) {
		lr_iter_init_thread(&m->it[i], log, lr_thread_at(log, i));
		if (lr_next(&m->it[i], &m->ev[i]))
			m->heap[m->n++] = i;
	}
	for (size_t i = m->n; i-- > 0;)
		merge_sift(m, i);
}

/* The thread on top of the heap has its next event read: it goes down the
 * heap, or out of it when it has none. */
static void merge_advanced(struct merge *m, int more)
{
	if (!more)
		m->heap[0] = m->heap[--m->n];
	if (m->n > 1) /* one thread (the common case): nothing to order */
		merge_sift(m, 0);
}

/* The earliest next event time of the threads below the top one. */
static uint64_t merge_others(const struct merge *m)
{
	uint64_t t = UINT64_MAX;
	for (size_t i = 1; i < 3 && i < m->n; i++)
		if (merge_time(m, i) < t)
			t = merge_time(m, i);
	return t;
}

/* When the cut or the trim holds a frame of the thread, the time its begin
 * will have; UINT64_MAX when neither does. */
static uint64_t held_from(const struct pass *ps, const struct lr_thread *t)
{
	uint64_t a = ps->cut ? cut_held_from(ps->cut, t) : UINT64_MAX;
	uint64_t b = ps->trim ? cut_held_from(ps->trim, t) : UINT64_MAX;
	return a < b ? a : b;
}

/* Whether a time-ordered sink wants the thread's next event now. */
static int wants_next(const struct pass *ps, const struct lr_thread *t)
{
	return ps->sink->wants_next(ps->sink->ctx, t) || held_from(ps, t) != UINT64_MAX;
}

/* The top thread's earliest event, and for a sink that writes in time
 * order (trace_sink.wants_next) the thread's next ones while its output
 * waits on them; a thread whose events are all in closes its frames then.
 * Ties keep the heap's order, and a thread's own events always come in
 * its order. */
static void merge_feed_top(struct pass *ps, struct merge *m)
{
	size_t ti = m->heap[0];
	/* fed in place: lr_next then rewrites every field feed changes (the
	 * times), and a copy of the event was a memcpy per event */
	struct lr_event *ev = &m->ev[ti];
	const struct lr_thread *t = ev->thread;
	int ordered = ps->sink->wants_next != NULL;
	if (ordered)
		ps->sink->horizon(ps->sink->ctx, NULL, ev->rec_ns + ps->cur->pub.start_ns);
	feed(ps, ev);
	int more = lr_next(&m->it[ti], ev);
	while (ordered && more && !ps->failed && wants_next(ps, t)) {
		if (ev->time_ns <= merge_others(m)) { /* in time order all the same (one thread: always) */
			uint64_t h = ev->rec_ns + ps->cur->pub.start_ns, held = held_from(ps, t);
			ps->sink->horizon(ps->sink->ctx, t, h < held ? h : held);
		}
		feed(ps, ev);
		more = lr_next(&m->it[ti], ev);
	}
	if (ordered && !more && ps->seen[t->index])
		fr_end_thread(ps->frames, t, snapshot_end(ps->cur)); /* proc_end finds nothing left open */
	merge_advanced(m, more);
}

static void merge_free(struct merge *m)
{
	free(m->it);
	free(m->ev);
	free(m->heap);
}

/* A process's events, its threads merged in time order. */
static void feed_merged(struct pass *ps, struct proc_state *p)
{
	struct merge m;
	merge_init(&m, p->pub.log);
	while (!ps->failed && m.n)
		merge_feed_top(ps, &m);
	merge_free(&m);
}

int trace_run_merged(struct trace_input *in, size_t i, const struct trace_sink *sink)
{
	struct pass ps;
	pass_init(&ps, in, sink, 1);
	struct proc_state *p = &in->procs[i];
	if (proc_begin(&ps, p) < 0) {
		pass_free(&ps);
		return -1;
	}
	feed_merged(&ps, p);
	proc_end(&ps);
	if (ps.progress_shown)
		fprintf(stderr, "\r%60s\r", "");
	int rc = ps.failed ? -1 : 0;
	pass_free(&ps);
	return rc;
}

/* ---- totals ---- */

const struct fr_stats *trace_stats(const struct trace_input *in)
{
	static const struct fr_stats none;
	return in->run.frames ? fr_stats(in->run.frames) : &none;
}

const struct fr_stats *trace_proc_stats(const struct trace_proc *p)
{
	return &((const struct proc_state *)p)->stats;
}

uint64_t trace_events(const struct trace_input *in) { return in->run.events; }

size_t trace_threads(const struct trace_input *in)
{
	size_t n = 0;
	for (size_t i = 0; i < in->nprocs; i++)
		n += in->procs[i].threads_read;
	return n;
}

const struct cut_stats *trace_cut_stats(const struct trace_input *in)
{
	return in->run.cut ? cut_stats(in->run.cut) : in->run.trim ? cut_stats(in->run.trim) : NULL;
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
	sf_format_duration(dur, sizeof(dur), (double)min, SF_DURATION_OPTION);
	return snprintf(buf, len, " (recorded with%s%s%s%.0u; the runtime left out %llu records)",
			min ? " --min-duration " : "", min ? dur : "", depth ? " --max-depth " : "", depth,
			(unsigned long long)left);
}

int trace_net_times(const struct trace_input *in)
{
	return in->opt.net_times;
}

double trace_cost_err(const struct trace_input *in)
{
	double err = 0;
	for (size_t i = 0; in->opt.net_times && i < in->nprocs; i++) {
		const struct lr_info *f = in->procs[i].pub.info;
		if (f->cost_known && f->cost_err > err)
			err = f->cost_err;
	}
	return err;
}

static int format_net(const struct trace_input *in, char *buf, size_t len, int marks)
{
	for (size_t i = 0; i < in->nprocs; i++) {
		const struct lr_info *f = in->procs[i].pub.info;
		if (!f->cost_known)
			continue;
		char per[160];
		snprintf(per, sizeof(per), "%.1f ns per call in the caller, %.1f ns in the call%s", f->cost_parent_ns,
			 f->cost_child_ns, in->nprocs > 1 ? " (first process; each process's own figure applies)" : "");
		double err = marks ? trace_cost_err(in) : 0;
		if (in->opt.net_times && err > 0)
			snprintf(buf, len, "times net of the tracer's cost: %s, each within %.1f%%; a figure marked "
				 NET_UNCERTAIN_MARK " is as recorded (net, it could be off by more than 10%%); --raw-times "
				 "for times as recorded", per, 100 * err);
		else if (in->opt.net_times)
			snprintf(buf, len, "times net of the tracer's cost: %s; --raw-times for times as recorded", per);
		else
			snprintf(buf, len, "times as recorded (--raw-times); the tracer's cost: %s", per);
		return 1;
	}
	return 0;
}

int trace_format_net(const struct trace_input *in, char *buf, size_t len)
{
	return format_net(in, buf, len, 0);
}

int trace_format_net_marked(const struct trace_input *in, char *buf, size_t len)
{
	return format_net(in, buf, len, 1);
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
	if (in->run.trim && n >= 0 && (size_t)n < len)
		format_trim(in, buf + n, len - (size_t)n);
	return 1;
}

/* The reader's warnings of each log, and the runtime's dropped events. */
static void warn_logs(const struct trace_input *in)
{
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
}

/* How input in's repairs (what 1) or cut (what 0) part reads, without
 * its "repaired: " lead. 0 when it has none, or its command showed it. */
static int notice_part(const struct trace_input *in, int what, char *buf, size_t len)
{
	if (in->repairs_shown)
		return 0;
	if (!what)
		return trace_format_cut(in, buf, len);
	if (!fr_format_repairs(trace_stats(in), buf, len))
		return 0;
	memmove(buf, buf + strlen(FR_REPAIRED), strlen(buf + strlen(FR_REPAIRED)) + 1);
	return 1;
}

/* "sftrace: repaired: ..." (what 1) or "sftrace: cut: ..." (what 0) for
 * all inputs, each input's part after its label when there are labels. */
static void print_notice(const struct trace_input *const *in, const char *const *label, size_t n, int what)
{
	char buf[512];
	int parts = 0;
	for (size_t k = 0; k < n; k++) {
		if (!notice_part(in[k], what, buf, sizeof(buf)))
			continue;
		fprintf(stderr, "%s%s%s%s", parts++ ? "; " : what ? "sftrace: " FR_REPAIRED : "sftrace: cut: ",
			label ? label[k] : "", label ? ": " : "", buf);
	}
	if (parts)
		fputc('\n', stderr);
}

void trace_report_repairs_of(const struct trace_input *const *in, const char *const *label, size_t n)
{
	if (!n || in[0]->opt.quiet)
		return;
	for (size_t k = 0; k < n; k++)
		warn_logs(in[k]);
	print_notice(in, label, n, 1);
	print_notice(in, label, n, 0);
	for (size_t k = 0; k < n; k++)
		if (in[k]->run.cut && !cut_stats(in[k]->run.cut)->kept)
			sf_warn("the cut kept no call%s%s: %s", label ? " in " : "", label ? label[k] : "",
				!trace_threads(in[k]) ? "--tid names no thread of the logs"
						      : "see -F, -N, --time (from the trace start), --min-duration, "
							"--max-depth, -c");
}

void trace_report_repairs(const struct trace_input *in)
{
	trace_report_repairs_of(&in, NULL, 1);
}

void trace_repairs_shown(struct trace_input *in) { in->repairs_shown = 1; }

int trace_quiet(const struct trace_input *in) { return in->opt.quiet; }

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
		for (size_t k = 0; k < ps->nshort; k++)
			free(ps->short_names[k]);
		free(ps->short_names);
		for (size_t k = 0; k < ps->nlabels; k++)
			free(ps->labels[k]);
		free(ps->labels);
	}
	pass_free(&in->run);
	cut_filter_free(in->filter);
	nm_free(&in->only);
	nm_free(&in->notrace);
	for (size_t i = 0; i < in->nobject_ids; i++)
		free(in->object_ids[i]);
	free(in->object_ids);
	for (size_t i = 0; i < in->nno_lines; i++)
		free(in->no_lines[i]);
	free(in->no_lines);
	free(in->procs);
	free(in);
}
