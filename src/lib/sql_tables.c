#include "lib/sql_tables.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arg_values.h"
#include "lib/util.h"

/* ---- frames: rows produced by a trace_run on a thread of its own ---- */

enum {
	COL_FRAME_ID, COL_PARENT, COL_PID, COL_TID, COL_FUNC_ID, COL_NAME, COL_START, COL_DUR, COL_SELF, COL_DEPTH,
	COL_SHORT_NAME
};

struct frow {
	uint64_t frame_id, parent, func_id, start, dur, self;
	uint32_t pid, tid, depth;
	const char *name, *short_name;
};

/* Rows move in chunks so the lock is taken once per CHUNK_ROWS rows; NCHUNKS
 * bounds the memory of a scan (about 1.5 MiB) and how far decoding runs
 * ahead of SQLite. */
#define CHUNK_ROWS 4096
#define NCHUNKS 6

struct sql_tables {
	struct trace_input *in;   /* the caller's: one scan at a time uses it */
	int in_busy;
	const char *const *paths;
	size_t npaths;
	struct trace_options opt; /* for extra copies: quiet */
	pthread_mutex_t mu;
	uint64_t est_rows;        /* frames estimate for the planner */
	uint64_t scans;           /* frames scans started */
};

/* A join of frames with itself, or a correlated subquery on it, replays the
 * logs once per outer row: past this many rows replayed, give up and say
 * how to write it instead. */
#define MAX_REPLAYED_ROWS 500000000ull

/* Per-thread sums of closed children's durations, by depth. */
struct child_sums {
	uint64_t *acc;
	size_t cap;
};

struct producer {
	struct sql_tables *tabs;
	struct trace_input *in;
	int own_in;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct frow *chunk[NCHUNKS];
	size_t fill[NCHUNKS];
	size_t full[NCHUNKS], nfull, full_head; /* FIFO of filled chunk indices */
	size_t free_[NCHUNKS], nfree;           /* stack of empty chunk indices */
	int done, cancel;
	/* Producer-side state (its thread only). */
	int cur;                 /* chunk being filled, -1: none */
	struct child_sums *sums; /* by lr_thread.index of the current process */
	size_t nsums;
	const char **names;      /* by function id of the current process */
	const char **short_names; /* likewise, report's short style */
	size_t nnames;
};

static int take_free(struct producer *p)
{
	pthread_mutex_lock(&p->mu);
	while (!p->nfree && !p->cancel)
		pthread_cond_wait(&p->cv, &p->mu);
	int c = p->cancel ? -1 : (int)p->free_[--p->nfree];
	pthread_mutex_unlock(&p->mu);
	if (c >= 0)
		p->fill[c] = 0;
	return c;
}

static void push_full(struct producer *p, int c)
{
	pthread_mutex_lock(&p->mu);
	p->full[(p->full_head + p->nfull++) % NCHUNKS] = (size_t)c;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static int on_process(void *ctx, const struct trace_proc *tp)
{
	struct producer *p = ctx;
	for (size_t i = 0; i < p->nsums; i++)
		free(p->sums[i].acc);
	free(p->sums);
	p->nsums = lr_nthreads(tp->log);
	p->sums = xcalloc(p->nsums + 1, sizeof(*p->sums));
	uint32_t max = 0;
	for (size_t i = 0; i < lr_nobjects(tp->log); i++) {
		const struct lr_object *o = lr_object_at(tp->log, i);
		if (o->first_id + o->count > max)
			max = o->first_id + o->count;
	}
	free(p->names);
	free(p->short_names);
	p->nnames = max;
	p->names = xcalloc(max + 1, sizeof(*p->names));
	p->short_names = xcalloc(max + 1, sizeof(*p->short_names));
	return 0;
}

static const char *frame_name(struct producer *p, const struct fr_frame *f)
{
	if (f->func_id >= p->nnames)
		return trace_symbol(f->proc, f->func_id)->name;
	if (!p->names[f->func_id])
		p->names[f->func_id] = trace_symbol(f->proc, f->func_id)->name;
	return p->names[f->func_id];
}

/* Names live as long as the input, which outlives the statement. */
static const char *frame_short_name(struct producer *p, const struct fr_frame *f)
{
	if (f->func_id >= p->nnames)
		return trace_short_name(f->proc, f->func_id);
	if (!p->short_names[f->func_id])
		p->short_names[f->func_id] = trace_short_name(f->proc, f->func_id);
	return p->short_names[f->func_id];
}

/* Children end before their parent: when a frame at depth d ends, acc[d + 1]
 * holds its children's durations. */
static uint64_t self_time(struct producer *p, const struct fr_frame *f, uint64_t dur)
{
	struct child_sums *s = &p->sums[f->thread->index];
	size_t need = (size_t)f->depth + 2;
	if (need > s->cap) {
		size_t cap = s->cap ? s->cap : 64;
		while (cap < need)
			cap *= 2;
		s->acc = xrealloc(s->acc, cap * sizeof(*s->acc));
		memset(s->acc + s->cap, 0, (cap - s->cap) * sizeof(*s->acc));
		s->cap = cap;
	}
	uint64_t children = s->acc[f->depth + 1];
	s->acc[f->depth + 1] = 0;
	s->acc[f->depth] += dur;
	return children <= dur ? dur - children : 0;
}

static int on_frame_end(void *ctx, const struct fr_frame *f)
{
	struct producer *p = ctx;
	if (p->cur < 0 && (p->cur = take_free(p)) < 0)
		return 1;
	struct frow *r = &p->chunk[p->cur][p->fill[p->cur]++];
	r->frame_id = f->id;
	r->parent = f->parent;
	r->pid = f->proc->info->pid;
	r->tid = f->thread->tid;
	r->func_id = trace_func_key(f->proc, f->func_id);
	r->name = frame_name(p, f);
	r->short_name = frame_short_name(p, f);
	r->start = f->t_begin;
	r->dur = f->t_end - f->t_begin;
	r->self = self_time(p, f, r->dur);
	r->depth = f->depth;
	if (p->fill[p->cur] == CHUNK_ROWS) {
		push_full(p, p->cur);
		p->cur = -1;
	}
	return 0;
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct trace_sink sink = {.ctx = p, .process_begin = on_process, .frame_end = on_frame_end};
	p->cur = -1;
	trace_run(p->in, &sink);
	pthread_mutex_lock(&p->mu);
	if (p->cur >= 0 && !p->cancel)
		p->full[(p->full_head + p->nfull++) % NCHUNKS] = (size_t)p->cur;
	p->done = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static struct producer *producer_start(struct sql_tables *t, char *err, size_t errlen)
{
	if (++t->scans > 8 && t->scans * t->est_rows > MAX_REPLAYED_ROWS) {
		snprintf(err, errlen,
			 "frames was read %llu times (a join or correlated subquery on it); "
			 "materialize one side: WITH x AS MATERIALIZED (SELECT ... FROM frames ...), see docs/QUERY.md",
			 (unsigned long long)t->scans - 1);
		return NULL;
	}
	struct producer *p = xcalloc(1, sizeof(*p));
	p->tabs = t;
	pthread_mutex_lock(&t->mu);
	if (!t->in_busy) {
		t->in_busy = 1;
		p->in = t->in;
	}
	pthread_mutex_unlock(&t->mu);
	if (!p->in) {
		p->in = trace_open(t->paths, t->npaths, &t->opt);
		p->own_in = 1;
		if (!p->in) {
			snprintf(err, errlen, "cannot open the logs again for a second scan of frames");
			free(p);
			return NULL;
		}
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (int i = 0; i < NCHUNKS; i++) {
		p->chunk[i] = xmalloc(CHUNK_ROWS * sizeof(struct frow));
		p->free_[p->nfree++] = (size_t)i;
	}
	if (pthread_create(&p->thread, NULL, produce, p)) {
		snprintf(err, errlen, "cannot start a thread to read the logs");
		p->done = 1; /* nothing to join */
		p->thread = 0;
	}
	return p;
}

/* Stops the producer (if still running) and frees everything. */
static void producer_stop(struct producer *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->cancel = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->thread)
		pthread_join(p->thread, NULL);
	for (int i = 0; i < NCHUNKS; i++)
		free(p->chunk[i]);
	for (size_t i = 0; i < p->nsums; i++)
		free(p->sums[i].acc);
	free(p->sums);
	free(p->names);
	free(p->short_names);
	if (p->own_in) {
		trace_close(p->in);
	} else {
		pthread_mutex_lock(&p->tabs->mu);
		p->tabs->in_busy = 0;
		pthread_mutex_unlock(&p->tabs->mu);
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

/* The next filled chunk (index), giving back `done_with` (-1: none); -1 at
 * the end. */
static int next_chunk(struct producer *p, int done_with)
{
	pthread_mutex_lock(&p->mu);
	if (done_with >= 0) {
		p->free_[p->nfree++] = (size_t)done_with;
		pthread_cond_broadcast(&p->cv);
	}
	while (!p->nfull && !p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	int c = -1;
	if (p->nfull) {
		c = (int)p->full[p->full_head];
		p->full_head = (p->full_head + 1) % NCHUNKS;
		p->nfull--;
	}
	pthread_mutex_unlock(&p->mu);
	return c;
}

/* ---- the virtual table ---- */

struct frames_vtab {
	sqlite3_vtab base;
	struct sql_tables *tabs;
};

struct frames_cursor {
	sqlite3_vtab_cursor base;
	struct producer *prod;
	int chunk;       /* being read, -1: none */
	size_t pos;
	const struct frow *row;
	int eof;
};

static int frames_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
			  char **err)
{
	int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(frame_id INTEGER, parent INTEGER, pid INTEGER, "
					  "tid INTEGER, func_id INTEGER, name TEXT, start_ns INTEGER, "
					  "dur_ns INTEGER, self_ns INTEGER, depth INTEGER, short_name TEXT)");
	if (rc != SQLITE_OK)
		return rc;
	struct frames_vtab *v = sqlite3_malloc(sizeof(*v));
	if (!v)
		return SQLITE_NOMEM;
	memset(v, 0, sizeof(*v));
	v->tabs = aux;
	*out = &v->base;
	return SQLITE_OK;
}

static int frames_disconnect(sqlite3_vtab *v)
{
	sqlite3_free(v);
	return SQLITE_OK;
}

/* Full scans only: each costs a replay of the logs. */
static int frames_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
	struct frames_vtab *fv = (struct frames_vtab *)v;
	info->estimatedRows = (sqlite3_int64)fv->tabs->est_rows;
	info->estimatedCost = (double)fv->tabs->est_rows + 1e6;
	return SQLITE_OK;
}

static int frames_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
	struct frames_cursor *c = sqlite3_malloc(sizeof(*c));
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	c->chunk = -1;
	c->eof = 1;
	*out = &c->base;
	return SQLITE_OK;
}

static int frames_close(sqlite3_vtab_cursor *cur)
{
	struct frames_cursor *c = (struct frames_cursor *)cur;
	producer_stop(c->prod);
	sqlite3_free(c);
	return SQLITE_OK;
}

static int frames_next(sqlite3_vtab_cursor *cur)
{
	struct frames_cursor *c = (struct frames_cursor *)cur;
	struct producer *p = c->prod;
	if (c->chunk >= 0 && ++c->pos < p->fill[c->chunk]) {
		c->row = &p->chunk[c->chunk][c->pos];
		return SQLITE_OK;
	}
	c->chunk = next_chunk(p, c->chunk);
	c->pos = 0;
	c->eof = c->chunk < 0;
	c->row = c->eof ? NULL : &p->chunk[c->chunk][0];
	return SQLITE_OK;
}

static int frames_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
	struct frames_cursor *c = (struct frames_cursor *)cur;
	struct frames_vtab *v = (struct frames_vtab *)cur->pVtab;
	producer_stop(c->prod);
	char err[256];
	c->chunk = -1;
	c->prod = producer_start(v->tabs, err, sizeof(err));
	if (!c->prod) {
		sqlite3_free(v->base.zErrMsg);
		v->base.zErrMsg = sqlite3_mprintf("%s", err);
		return SQLITE_ERROR;
	}
	return frames_next(cur);
}

static int frames_eof(sqlite3_vtab_cursor *cur) { return ((struct frames_cursor *)cur)->eof; }

static int frames_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	const struct frow *r = ((struct frames_cursor *)cur)->row;
	switch (col) {
	case COL_FRAME_ID: sqlite3_result_int64(ctx, (sqlite3_int64)r->frame_id); break;
	case COL_PARENT: sqlite3_result_int64(ctx, (sqlite3_int64)r->parent); break;
	case COL_PID: sqlite3_result_int64(ctx, r->pid); break;
	case COL_TID: sqlite3_result_int64(ctx, r->tid); break;
	case COL_FUNC_ID: sqlite3_result_int64(ctx, (sqlite3_int64)r->func_id); break;
	/* Names live as long as the input, which outlives the statement. */
	case COL_NAME: sqlite3_result_text(ctx, r->name, -1, SQLITE_STATIC); break;
	case COL_START: sqlite3_result_int64(ctx, (sqlite3_int64)r->start); break;
	case COL_DUR: sqlite3_result_int64(ctx, (sqlite3_int64)r->dur); break;
	case COL_SELF: sqlite3_result_int64(ctx, (sqlite3_int64)r->self); break;
	case COL_DEPTH: sqlite3_result_int64(ctx, r->depth); break;
	case COL_SHORT_NAME: sqlite3_result_text(ctx, r->short_name, -1, SQLITE_STATIC); break;
	}
	return SQLITE_OK;
}

static int frames_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = (sqlite3_int64)((struct frames_cursor *)cur)->row->frame_id;
	return SQLITE_OK;
}

static const sqlite3_module frames_module = {
	.iVersion = 0,
	.xCreate = frames_connect,
	.xConnect = frames_connect,
	.xBestIndex = frames_best_index,
	.xDisconnect = frames_disconnect,
	.xDestroy = frames_disconnect,
	.xOpen = frames_open,
	.xClose = frames_close,
	.xFilter = frames_filter,
	.xNext = frames_next,
	.xEof = frames_eof,
	.xColumn = frames_column,
	.xRowid = frames_rowid,
};

/* ---- functions and threads: small, loaded once ---- */

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	return -1;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Runs a bound INSERT and resets it for the next row: 0 or -1. */
static int insert_row(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	sqlite3_reset(st);
	return rc;
}

/* Every instrumented function of every log, once per func_id. */
static int load_functions(sqlite3 *db, struct trace_input *in, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO functions VALUES (?, ?, ?, ?, ?, ?)", -1, &st, NULL)) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -1;
	}
	int rc = 0;
	for (size_t pi = 0; pi < trace_nprocs(in) && !rc; pi++) {
		const struct trace_proc *p = trace_proc_at(in, pi);
		for (size_t oi = 0; oi < lr_nobjects(p->log) && !rc; oi++) {
			const struct lr_object *o = lr_object_at(p->log, oi);
			for (uint32_t k = 0; k < o->count && !rc; k++) {
				uint32_t id = o->first_id + k;
				const struct sym_info *si = trace_symbol(p, id);
				sqlite3_bind_int64(st, 1, (sqlite3_int64)trace_func_key(p, id));
				sqlite3_bind_text(st, 2, si->name, -1, SQLITE_STATIC);
				bind_text_or_null(st, 3, si->file);
				if (si->line)
					sqlite3_bind_int64(st, 4, si->line);
				else
					sqlite3_bind_null(st, 4);
				sqlite3_bind_text(st, 5, o->path, -1, SQLITE_STATIC);
				sqlite3_bind_text(st, 6, trace_short_name(p, id), -1, SQLITE_STATIC);
				rc = insert_row(st);
			}
		}
	}
	if (rc)
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

/* Threads that recorded events. */
static int load_threads(sqlite3 *db, struct sql_tables *t, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "INSERT INTO threads VALUES (?, ?, ?, ?, ?)", -1, &st, NULL)) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -1;
	}
	int rc = 0;
	for (size_t pi = 0; pi < trace_nprocs(t->in) && !rc; pi++) {
		const struct trace_proc *p = trace_proc_at(t->in, pi);
		for (size_t ti = 0; ti < lr_nthreads(p->log) && !rc; ti++) {
			const struct lr_thread *th = lr_thread_at(p->log, ti);
			if (!th->events)
				continue;
			t->est_rows += th->events / 2;
			sqlite3_bind_int64(st, 1, p->info->pid);
			sqlite3_bind_int64(st, 2, th->tid);
			bind_text_or_null(st, 3, th->name[0] ? th->name : NULL);
			sqlite3_bind_text(st, 4, p->name, -1, SQLITE_STATIC);
			const char *label = trace_thread_label(p, th);
			bind_text_or_null(st, 5, label[0] ? label : NULL);
			rc = insert_row(st);
		}
	}
	if (rc)
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

/* ---- args: the values record -A/-R recorded, loaded at attach when the
 * logs hold any (one replay of the logs, on a quiet copy of the input) ---- */

struct args_load {
	sqlite3_stmt *st;
	int failed;
};

static int args_rows(struct args_load *a, uint64_t frame_id, const unsigned char *payload, uint32_t len,
		     int *index)
{
	struct av_item items[SF_ARG_MAX_ITEMS];
	int n = av_decode(payload, len, items, SF_ARG_MAX_ITEMS);
	for (int i = 0; i < n; i++) {
		sqlite3_bind_int64(a->st, 1, (sqlite3_int64)frame_id);
		sqlite3_bind_int64(a->st, 2, (*index)++);
		sqlite3_bind_text(a->st, 3, items[i].name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(a->st, 4, items[i].value, -1, SQLITE_TRANSIENT);
		if (insert_row(a->st) < 0)
			return -1;
	}
	return 0;
}

static int args_frame_end(void *ctx, const struct fr_frame *f)
{
	struct args_load *a = ctx;
	int index = 0;
	if ((f->args && args_rows(a, f->id, f->args, f->args_len, &index) < 0) ||
	    (f->ret && args_rows(a, f->id, f->ret, f->ret_len, &index) < 0)) {
		a->failed = 1;
		return 1;
	}
	return 0;
}

static int any_args(struct trace_input *in)
{
	for (size_t pi = 0; pi < trace_nprocs(in); pi++) {
		const struct trace_proc *p = trace_proc_at(in, pi);
		for (size_t ti = 0; ti < lr_nthreads(p->log); ti++)
			if (lr_thread_at(p->log, ti)->args_events)
				return 1;
	}
	return 0;
}

static int load_args(sqlite3 *db, struct sql_tables *t, char *err, size_t errlen)
{
	if (!any_args(t->in))
		return 0;
	struct args_load a = {0};
	if (sqlite3_prepare_v2(db, "INSERT INTO args VALUES (?, ?, ?, ?)", -1, &a.st, NULL)) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -1;
	}
	struct trace_input *in = trace_open(t->paths, t->npaths, &t->opt);
	int rc = -1;
	if (!in) {
		snprintf(err, errlen, "cannot read the logs again for the args table");
	} else {
		struct trace_sink sink = {.ctx = &a, .frame_end = args_frame_end};
		rc = trace_run(in, &sink) < 0 || a.failed ? -1 : 0;
		if (rc)
			snprintf(err, errlen, "args: %s", sqlite3_errmsg(db));
		trace_close(in);
	}
	sqlite3_finalize(a.st);
	return rc;
}

struct sql_tables *sqlt_attach(sqlite3 *db, struct trace_input *in, const char *const *paths, size_t npaths,
			       const struct trace_options *opt, char *err, size_t errlen)
{
	struct sql_tables *t = xcalloc(1, sizeof(*t));
	t->in = in;
	t->paths = paths;
	t->npaths = npaths;
	t->opt = *opt;
	t->opt.quiet = 1; /* the first copy already said everything */
	pthread_mutex_init(&t->mu, NULL);
	if (sqlite3_create_module(db, "sftrace_frames", &frames_module, t) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		sqlt_free(t);
		return NULL;
	}
	if (exec(db,
		 "CREATE VIRTUAL TABLE frames USING sftrace_frames;"
		 "CREATE TABLE functions(func_id INTEGER PRIMARY KEY, name TEXT NOT NULL, file TEXT, line INTEGER,"
		 " object TEXT NOT NULL, short_name TEXT NOT NULL);"
		 "CREATE TABLE threads(pid INTEGER NOT NULL, tid INTEGER NOT NULL, thread_name TEXT,"
		 " process_name TEXT NOT NULL, label TEXT);"
		 "CREATE TABLE args(frame_id INTEGER NOT NULL, \"index\" INTEGER NOT NULL, name TEXT NOT NULL,"
		 " value TEXT NOT NULL);"
		 "BEGIN",
		 err, errlen) < 0 ||
	    load_functions(db, in, err, errlen) < 0 || load_threads(db, t, err, errlen) < 0 ||
	    load_args(db, t, err, errlen) < 0 ||
	    exec(db, "COMMIT", err, errlen) < 0) {
		sqlt_free(t);
		return NULL;
	}
	return t;
}

void sqlt_free(struct sql_tables *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->mu);
	free(t);
}
