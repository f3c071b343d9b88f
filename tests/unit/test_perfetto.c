/* Perfetto writer: traces are decoded by an independent parser
 * (`protoc --decode_raw`) and checked field by field.
 *
 * Set SFTRACE_BENCH=1 to also run the throughput benchmark (20M slice
 * events, 4 threads, 2000 functions) to a null sink, a plain file and a
 * gzip file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/outfile.h"
#include "output/perfetto.h"

/* ---- a tree of protoc --decode_raw output ---- */

struct node {
	int field;
	char *value; /* NULL for a nested message */
	struct node **kids;
	int nkids, cap;
};

static struct node *node_new(int field, const char *value)
{
	struct node *n = calloc(1, sizeof(*n));
	n->field = field;
	n->value = value ? strdup(value) : NULL;
	return n;
}

static void node_add(struct node *parent, struct node *kid)
{
	if (parent->nkids == parent->cap) {
		parent->cap = parent->cap ? 2 * parent->cap : 4;
		parent->kids = realloc(parent->kids, sizeof(*parent->kids) * (size_t)parent->cap);
	}
	parent->kids[parent->nkids++] = kid;
}

static void node_free(struct node *n)
{
	for (int i = 0; i < n->nkids; i++)
		node_free(n->kids[i]);
	free(n->kids);
	free(n->value);
	free(n);
}

/* Runs `cmd` (which prints decode_raw text) and parses its output. */
static struct node *decode_cmd(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	struct node *root = node_new(0, NULL);
	struct node *stack[64];
	int depth = 0;
	stack[0] = root;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		char *s = line;
		while (*s == ' ')
			s++;
		s[strcspn(s, "\n")] = '\0';
		if (strcmp(s, "}") == 0) {
			assert_true(depth > 0);
			depth--;
			continue;
		}
		char *end;
		long field = strtol(s, &end, 10);
		if (strcmp(end, " {") == 0) {
			struct node *n = node_new((int)field, NULL);
			node_add(stack[depth], n);
			assert_true(depth < 63);
			stack[++depth] = n;
		} else {
			assert_true(end[0] == ':' && end[1] == ' ');
			char *v = end + 2;
			size_t len = strlen(v);
			if (len >= 2 && v[0] == '"' && v[len - 1] == '"') { /* plain strings only */
				v[len - 1] = '\0';
				v++;
			}
			node_add(stack[depth], node_new((int)field, v));
		}
	}
	int status = pclose(f);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(depth, 0);
	return root;
}

static struct node *decode_file(const char *path, int gz)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), gz ? "gzip -dc '%s' | protoc --decode_raw" : "protoc --decode_raw < '%s'", path);
	return decode_cmd(cmd);
}

static struct node *get(const struct node *n, int field)
{
	for (int i = 0; n && i < n->nkids; i++)
		if (n->kids[i]->field == field)
			return n->kids[i];
	return NULL;
}

static int count(const struct node *n, int field)
{
	int c = 0;
	for (int i = 0; i < n->nkids; i++)
		c += n->kids[i]->field == field;
	return c;
}

/* Value of a varint field, or `dflt` when absent. */
static uint64_t uint_of(const struct node *n, int field, uint64_t dflt)
{
	struct node *k = get(n, field);
	if (!k)
		return dflt;
	assert_non_null(k->value);
	return strtoull(k->value, NULL, 10);
}

static const char *str_of(const struct node *n, int field)
{
	struct node *k = get(n, field);
	return k ? k->value : NULL;
}

/* Field numbers used below (see perfetto.c for where they come from). */
enum {
	P_CLOCK_SNAPSHOT = 6, P_TS = 8, P_SEQ = 10, P_TE = 11, P_INTERNED = 12, P_FLAGS = 13,
	P_CLOCK_ID = 58, P_DEFAULTS = 59, P_TD = 60, P_FIRST = 87,
	TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11, TE_LOC_IID = 34,
	CLEARED = 1, NEEDS = 2, BOOTTIME = 6, INCREMENTAL = 64,
};

#define TS0 1700000000000000ull /* 8-byte varints, like real boot times */

/* ---- reading a trace back the way trace processor does ---- */

#define MAX_SEQ 64
#define MAX_IID 1024

/* Incremental state of one trusted_packet_sequence_id. */
struct seq_state {
	int valid;                 /* saw SEQ_INCREMENTAL_STATE_CLEARED */
	uint64_t def_track;        /* TrackEventDefaults.track_uuid, 0: none */
	uint64_t def_clock;        /* TracePacketDefaults.timestamp_clock_id, 0: none */
	int has_clock, incremental; /* clock 64, as the last ClockSnapshot set it */
	uint64_t clk_snap, clk_boot, clk_value;
	const char *names[MAX_IID], *files[MAX_IID];
	uint64_t lines[MAX_IID];
};

struct event {
	uint64_t seq, track, ts; /* ts: absolute, BOOTTIME */
	int type;
	const char *name, *file; /* resolved through the sequence's interning */
	uint64_t line;
	const struct node *pkt;
};

struct trace {
	struct node *root;
	struct event *ev;
	int nev;
	int skipped;   /* SEQ_NEEDS_INCREMENTAL_STATE on a sequence never cleared */
	int snapshots;
	struct seq_state *seqs;
};

static void clear_state(struct seq_state *s)
{
	memset(s, 0, sizeof(*s));
	s->valid = 1;
}

/* Clocks: BOOTTIME and the sequence's clock 64, in ns. */
static void read_snapshot(struct seq_state *s, const struct node *cs)
{
	uint64_t boot = 0, clk = 0, incremental = 0;
	int have_boot = 0, have_clk = 0;
	for (int i = 0; i < cs->nkids; i++) {
		const struct node *c = cs->kids[i];
		assert_int_equal(c->field, 1);
		assert_null(get(c, 4)); /* unit_multiplier_ns: ns */
		if (uint_of(c, 1, 0) == BOOTTIME) {
			boot = uint_of(c, 2, 0);
			have_boot = 1;
		} else {
			assert_int_equal(uint_of(c, 1, 0), INCREMENTAL);
			clk = uint_of(c, 2, 0);
			incremental = uint_of(c, 3, 0);
			have_clk = 1;
		}
	}
	assert_true(have_boot && have_clk);
	s->has_clock = 1;
	s->incremental = (int)incremental;
	s->clk_snap = s->clk_value = clk;
	s->clk_boot = boot;
}

/* The packet's clock is its timestamp_clock_id, else the sequence default,
 * else BOOTTIME. On an incremental clock the value is a delta that moves the
 * clock; a packet on another clock leaves it alone. */
static uint64_t abs_ts(struct seq_state *s, const struct node *pkt)
{
	uint64_t ts = uint_of(pkt, P_TS, 0);
	uint64_t clock = uint_of(pkt, P_CLOCK_ID, 0);
	if (!clock)
		clock = s->def_clock ? s->def_clock : BOOTTIME;
	if (clock == BOOTTIME)
		return ts;
	assert_int_equal(clock, INCREMENTAL);
	assert_true(s->has_clock); /* a snapshot came first */
	if (s->incremental) {
		s->clk_value += ts;
		ts = s->clk_value;
	}
	return ts - s->clk_snap + s->clk_boot;
}

static void read_interned(struct seq_state *s, const struct node *id)
{
	for (int j = 0; j < id->nkids; j++) {
		const struct node *e = id->kids[j];
		uint64_t iid = uint_of(e, 1, 0);
		assert_true(iid > 0 && iid < MAX_IID);
		if (e->field == 2) { /* EventName */
			s->names[iid] = str_of(e, 2);
		} else {
			assert_int_equal(e->field, 4); /* SourceLocation */
			s->files[iid] = str_of(e, 2);
			s->lines[iid] = uint_of(e, 4, UINT64_MAX);
		}
	}
}

static void read_event(struct trace *tr, struct seq_state *s, uint64_t seq,
		       const struct node *pkt, const struct node *te)
{
	struct event *e = &tr->ev[tr->nev++];
	e->seq = seq;
	e->pkt = pkt;
	e->ts = abs_ts(s, pkt);
	e->type = (int)uint_of(te, TE_TYPE, 0);
	e->track = uint_of(te, TE_TRACK, s->def_track);
	if (get(te, TE_NAME_IID)) {
		uint64_t iid = uint_of(te, TE_NAME_IID, 0);
		assert_true(iid < MAX_IID);
		e->name = s->names[iid];
		assert_non_null(e->name); /* defined in this or an earlier packet */
	}
	if (get(te, TE_LOC_IID)) {
		uint64_t iid = uint_of(te, TE_LOC_IID, 0);
		assert_true(iid < MAX_IID);
		e->file = s->files[iid];
		e->line = s->lines[iid];
		assert_non_null(e->file);
	}
}

static struct trace *read_trace(const char *path, int gz)
{
	struct trace *tr = calloc(1, sizeof(*tr));
	tr->root = decode_file(path, gz);
	tr->seqs = calloc(MAX_SEQ, sizeof(*tr->seqs));
	tr->ev = calloc((size_t)tr->root->nkids + 1, sizeof(*tr->ev));
	for (int i = 0; i < tr->root->nkids; i++) {
		const struct node *pkt = tr->root->kids[i];
		assert_int_equal(pkt->field, 1);
		uint64_t seq = uint_of(pkt, P_SEQ, 0);
		assert_true(seq < MAX_SEQ);
		struct seq_state *s = &tr->seqs[seq];
		uint64_t flags = uint_of(pkt, P_FLAGS, 0);
		if (flags & CLEARED)
			clear_state(s);
		const struct node *d = get(pkt, P_DEFAULTS);
		if (d) {
			s->def_clock = uint_of(d, 58, 0);
			s->def_track = uint_of(get(d, 11), 11, 0);
		}
		if (get(pkt, P_INTERNED) && s->valid)
			read_interned(s, get(pkt, P_INTERNED));
		if (get(pkt, P_CLOCK_SNAPSHOT)) { /* nothing else of the packet is read */
			read_snapshot(s, get(pkt, P_CLOCK_SNAPSHOT));
			tr->snapshots++;
			continue;
		}
		if ((flags & NEEDS) && !s->valid) {
			tr->skipped++;
			continue;
		}
		if (get(pkt, P_TE))
			read_event(tr, s, seq, pkt, get(pkt, P_TE));
	}
	return tr;
}

static void trace_free(struct trace *tr)
{
	node_free(tr->root);
	free(tr->ev);
	free(tr->seqs);
	free(tr);
}

/* ---- writing ---- */

static int file_write(void *ctx, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -1;
}

static int count_write(void *ctx, const void *buf, size_t len)
{
	*(size_t *)ctx += len;
	return 0;
}

static char *temp_path(const char *suffix)
{
	static int n;
	char *p = malloc(256);
	snprintf(p, 256, "/tmp/test_perfetto.%d.%d%s", (int)getpid(), n++, suffix);
	return p;
}

/* Packets, in order: 0 process, 1 main, 2 worker (descriptors); 3 main's
 * clock snapshot, 4-10 main's events; 11 worker's snapshot, 12-15 its events;
 * 16 descriptor of the reused tid, 17 its snapshot, 18-19 its events. */
#define SMALL_PACKETS 20

static void write_small(const char *path)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	struct pf_writer *w = pf_open(file_write, f);
	struct pf_process *p = pf_add_process(w, 4242, "demo", "demo --fast");
	struct pf_thread *m = pf_add_thread(w, p, 4242, "main");
	struct pf_thread *wk = pf_add_thread(w, p, 4243, "worker");
	/* main: outer { inner {} inner {} } tick */
	assert_int_equal(pf_slice_begin(w, m, TS0 + 10, 1, "outer_function", "src/a.c", 12), 0);
	assert_int_equal(pf_slice_begin(w, m, TS0 + 20, 2, "inner_function", "src/b.c", 300), 0);
	assert_int_equal(pf_slice_end(w, m, TS0 + 30), 0);
	/* a repeated key on the thread: the strings passed now must be ignored */
	assert_int_equal(pf_slice_begin(w, m, TS0 + 40, 2, "IGNORED", "IGNORED.c", 1), 0);
	assert_int_equal(pf_slice_end(w, m, TS0 + 50), 0);
	assert_int_equal(pf_slice_end(w, m, TS0 + 60), 0);
	assert_int_equal(pf_instant(w, m, TS0 + 70, 4, "tick_event", NULL, 0), 0);
	/* worker: inner { leaf } ; leaf has no source location. Interning is per
	 * thread: key 2 is defined again on this sequence. */
	assert_int_equal(pf_slice_begin(w, wk, TS0 + 15, 2, "inner_function", "src/b.c", 300), 0);
	assert_int_equal(pf_slice_begin(w, wk, TS0 + 16, 3, "leaf_function", NULL, 0), 0);
	assert_int_equal(pf_slice_end(w, wk, TS0 + 17), 0);
	assert_int_equal(pf_slice_end(w, wk, TS0 + 18), 0);
	/* the tid 4243 is reused by a new thread: a track of its own */
	struct pf_thread *re = pf_add_thread(w, p, 4243, "worker2");
	assert_int_equal(pf_slice_begin(w, re, TS0 + 100, 7, NULL, "src/c.c", 0), 0);
	assert_int_equal(pf_slice_end(w, re, TS0 + 101), 0);
	assert_int_equal(pf_finish(w), 0);
	assert_int_equal(fclose(f), 0);
}

/* A thread's first packet: cleared state, defaults (clock 64, its own
 * track), its descriptor; no timestamp. */
static void check_thread_td(const struct node *pkt, uint64_t parent, uint64_t tid,
			    const char *name, uint64_t *uuid, uint64_t *seq)
{
	struct node *td = get(pkt, P_TD);
	assert_non_null(td);
	assert_int_equal(uint_of(pkt, P_FLAGS, 0), CLEARED);
	assert_int_equal(uint_of(pkt, P_FIRST, 0), 1);
	assert_null(get(pkt, P_TS));
	assert_int_equal(uint_of(td, 5, 0), parent); /* parent_uuid */
	assert_null(get(td, 3));                     /* no process descriptor */
	struct node *thd = get(td, 4);
	assert_non_null(thd);
	assert_int_equal(uint_of(thd, 1, 0), 4242); /* pid */
	assert_int_equal(uint_of(thd, 2, 0), tid);
	assert_string_equal(str_of(thd, 5), name);
	*uuid = uint_of(td, 1, 0);
	*seq = uint_of(pkt, P_SEQ, 0);
	struct node *d = get(pkt, P_DEFAULTS);
	assert_non_null(d);
	assert_int_equal(d->nkids, 2);
	assert_int_equal(uint_of(d, 58, 0), INCREMENTAL);        /* timestamp_clock_id */
	assert_int_equal(uint_of(get(d, 11), 11, 0), *uuid);      /* track_event_defaults.track_uuid */
}

static void test_descriptors(void **state)
{
	char *path = temp_path(".pb");
	write_small(path);
	struct trace *tr = read_trace(path, 0);
	struct node *root = tr->root;
	assert_int_equal(root->nkids, SMALL_PACKETS);
	assert_int_equal(count(root, 1), SMALL_PACKETS);

	struct node *pp = root->kids[0];
	uint64_t seq = uint_of(pp, P_SEQ, 0);
	assert_true(seq >= 2); /* 0 is invalid, 1 is the service's */
	assert_int_equal(uint_of(pp, P_FLAGS, 0), CLEARED);
	assert_int_equal(uint_of(pp, P_FIRST, 0), 1);
	assert_null(get(pp, P_DEFAULTS)); /* no events on the process sequence */
	struct node *td = get(pp, P_TD);
	assert_non_null(td);
	uint64_t proc_uuid = uint_of(td, 1, 0);
	assert_true(proc_uuid != 0);
	struct node *pd = get(td, 3);
	assert_non_null(pd);
	assert_int_equal(uint_of(pd, 1, 0), 4242);
	assert_string_equal(str_of(pd, 2), "demo --fast");
	assert_string_equal(str_of(pd, 6), "demo");

	uint64_t u_main, u_worker, u_reused, s_main, s_worker, s_reused;
	check_thread_td(root->kids[1], proc_uuid, 4242, "main", &u_main, &s_main);
	check_thread_td(root->kids[2], proc_uuid, 4243, "worker", &u_worker, &s_worker);
	check_thread_td(root->kids[16], proc_uuid, 4243, "worker2", &u_reused, &s_reused);
	assert_true(u_main != u_worker && u_worker != u_reused && u_main != u_reused);
	assert_true(u_main != proc_uuid && u_worker != proc_uuid && u_reused != proc_uuid);
	/* one sequence per thread, none shared with the process */
	uint64_t seqs[] = {seq, s_main, s_worker, s_reused};
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			assert_true(seqs[i] != seqs[j]);
	/* after its first packet, everything on a thread sequence needs the
	 * incremental state that packet set up */
	for (int i = 3; i < root->nkids; i++)
		if (i != 16)
			assert_int_equal(uint_of(root->kids[i], P_FLAGS, 0), NEEDS);
	assert_int_equal(tr->skipped, 0);
	trace_free(tr);
	unlink(path);
	free(path);
}

/* One ClockSnapshot per thread, before its first event, at that event's
 * time: BOOTTIME and clock 64 (incremental) at the same value. */
static void test_clock_snapshots(void **state)
{
	char *path = temp_path(".pb");
	write_small(path);
	struct trace *tr = read_trace(path, 0);
	static const struct { int pkt, thread_td; uint64_t t0; } want[] = {
		{3, 1, TS0 + 10}, {11, 2, TS0 + 15}, {17, 16, TS0 + 100}};
	assert_int_equal(tr->snapshots, 3);
	for (int i = 0; i < 3; i++) {
		struct node *pkt = tr->root->kids[want[i].pkt];
		assert_int_equal(uint_of(pkt, P_SEQ, 0), uint_of(tr->root->kids[want[i].thread_td], P_SEQ, 0));
		assert_int_equal(uint_of(pkt, P_TS, 0), want[i].t0);
		assert_int_equal(uint_of(pkt, P_CLOCK_ID, 0), BOOTTIME); /* not the incremental default */
		assert_null(get(pkt, P_TE));
		struct node *cs = get(pkt, P_CLOCK_SNAPSHOT);
		assert_non_null(cs);
		assert_int_equal(cs->nkids, 2);
		assert_int_equal(uint_of(cs->kids[0], 1, 0), BOOTTIME);
		assert_int_equal(uint_of(cs->kids[0], 2, 0), want[i].t0);
		assert_null(get(cs->kids[0], 3));
		assert_int_equal(uint_of(cs->kids[1], 1, 0), INCREMENTAL);
		assert_int_equal(uint_of(cs->kids[1], 2, 0), want[i].t0);
		assert_int_equal(uint_of(cs->kids[1], 3, 0), 1); /* is_incremental */
	}
	trace_free(tr);
	unlink(path);
	free(path);
}

/* Slice counts per track, flags, and timestamps of every event packet:
 * small deltas on the wire, the exact absolute times once read back. */
static void test_events(void **state)
{
	char *path = temp_path(".pb");
	write_small(path);
	struct trace *tr = read_trace(path, 0);
	uint64_t u_main = uint_of(get(tr->root->kids[1], P_TD), 1, 0);
	uint64_t u_worker = uint_of(get(tr->root->kids[2], P_TD), 1, 0);
	uint64_t u_reused = uint_of(get(tr->root->kids[16], P_TD), 1, 0);
	int begins[3] = {0}, ends[3] = {0}, instants = 0;
	assert_int_equal(tr->nev, 13);
	for (int i = 0; i < tr->nev; i++) {
		const struct event *e = &tr->ev[i];
		const struct node *te = get(e->pkt, P_TE);
		uint64_t track = e->track;
		int t = track == u_main ? 0 : track == u_worker ? 1 : track == u_reused ? 2 : -1;
		assert_true(t >= 0);
		assert_null(get(te, TE_TRACK));          /* the sequence default */
		assert_null(get(e->pkt, P_CLOCK_ID));    /* the sequence default */
		assert_null(get(e->pkt, P_FIRST));
		assert_int_equal(uint_of(e->pkt, P_FLAGS, 0), NEEDS);
		switch (e->type) {
		case 1: /* SLICE_BEGIN */
			begins[t]++;
			assert_non_null(get(te, TE_NAME_IID));
			break;
		case 2: /* SLICE_END: the type and nothing else */
			ends[t]++;
			assert_int_equal(te->nkids, 1);
			assert_null(get(e->pkt, P_INTERNED));
			break;
		case 3:
			instants++;
			assert_int_equal(t, 0);
			assert_non_null(get(te, TE_NAME_IID));
			break;
		default:
			fail_msg("unexpected event type");
		}
	}
	assert_int_equal(begins[0], 3);
	assert_int_equal(ends[0], 3);
	assert_int_equal(begins[1], 2);
	assert_int_equal(ends[1], 2);
	assert_int_equal(begins[2], 1);
	assert_int_equal(ends[2], 1);
	assert_int_equal(instants, 1);
	/* stream order: the value on the wire, and the absolute time */
	static const uint64_t want_raw[] = {0, 10, 10, 10, 10, 10, 10, 0, 1, 1, 1, 0, 1};
	static const uint64_t want_ts[] = {10, 20, 30, 40, 50, 60, 70, 15, 16, 17, 18, 100, 101};
	for (int i = 0; i < tr->nev; i++) {
		assert_int_equal(uint_of(tr->ev[i].pkt, P_TS, UINT64_MAX), want_raw[i]);
		assert_int_equal(tr->ev[i].ts, TS0 + want_ts[i]);
	}
	trace_free(tr);
	unlink(path);
	free(path);
}

/* Time going backwards on a thread: that packet is absolute on BOOTTIME,
 * and the next delta is still from the incremental clock's last value. A
 * thread may also start with a slice end: its snapshot still comes first. */
static void test_backwards_time(void **state)
{
	char *path = temp_path(".pb");
	FILE *f = fopen(path, "wb");
	struct pf_writer *w = pf_open(file_write, f);
	struct pf_process *p = pf_add_process(w, 1, "back", NULL);
	struct pf_thread *t = pf_add_thread(w, p, 1, "t");
	struct pf_thread *u = pf_add_thread(w, p, 2, "u");
	pf_slice_begin(w, t, TS0 + 100, 1, "a", NULL, 0);
	pf_slice_begin(w, t, TS0 + 90, 2, "b", NULL, 0);
	pf_slice_end(w, t, TS0 + 95);
	pf_slice_end(w, t, TS0 + 130);
	pf_slice_end(w, u, TS0 + 7);
	pf_slice_begin(w, u, TS0 + 8, 1, "c", NULL, 0);
	assert_int_equal(pf_finish(w), 0);
	fclose(f);
	struct trace *tr = read_trace(path, 0);
	assert_int_equal(tr->nev, 6);
	assert_int_equal(tr->snapshots, 2);
	static const uint64_t want_ts[] = {100, 90, 95, 130, 7, 8};
	static const uint64_t want_raw[] = {0, TS0 + 90, TS0 + 95, 30, 0, 1};
	static const uint64_t want_clock[] = {0, BOOTTIME, BOOTTIME, 0, 0, 0};
	for (int i = 0; i < tr->nev; i++) {
		assert_int_equal(tr->ev[i].ts, TS0 + want_ts[i]);
		assert_int_equal(uint_of(tr->ev[i].pkt, P_TS, UINT64_MAX), want_raw[i]);
		assert_int_equal(uint_of(tr->ev[i].pkt, P_CLOCK_ID, 0), want_clock[i]);
		assert_int_equal(uint_of(tr->ev[i].pkt, P_FLAGS, 0), NEEDS);
	}
	assert_string_equal(tr->ev[1].name, "b");
	/* u's snapshot (packet 8, after t's 3 and its 4 events) precedes its end */
	struct node **k = tr->root->kids;
	assert_non_null(get(k[8], P_CLOCK_SNAPSHOT));
	assert_int_equal(uint_of(k[8], P_SEQ, 0), uint_of(k[2], P_SEQ, 0));
	assert_int_equal(uint_of(k[8], P_TS, 0), TS0 + 7);
	assert_int_equal(uint_of(get(k[9], P_TE), TE_TYPE, 0), 2);
	trace_free(tr);
	unlink(path);
	free(path);
}

/* Interning is per thread sequence: every string is defined once on each
 * sequence that uses it, before use, and the ids resolve to the right
 * strings. */
static void test_interning(void **state)
{
	char *path = temp_path(".pb");
	write_small(path);
	struct trace *tr = read_trace(path, 0);
	int defs = 0, locs = 0;
	uint64_t next_iid[MAX_SEQ] = {0};
	for (int i = 0; i < tr->root->nkids; i++) {
		struct node *pkt = tr->root->kids[i];
		struct node *id = get(pkt, P_INTERNED);
		if (!id)
			continue;
		uint64_t seq = uint_of(pkt, P_SEQ, 0);
		assert_int_equal(uint_of(pkt, P_FLAGS, 0), NEEDS);
		assert_non_null(get(pkt, P_TE)); /* defined by the first packet that uses it */
		for (int j = 0; j < id->nkids; j++) {
			uint64_t iid = uint_of(id->kids[j], 1, 0);
			if (id->kids[j]->field == 2) {
				assert_int_equal(iid, ++next_iid[seq]); /* dense from 1, per sequence */
				defs++;
			} else {
				assert_int_equal(iid, next_iid[seq]); /* the same id as the name */
				locs++;
			}
		}
	}
	assert_int_equal(defs, 6);
	assert_int_equal(locs, 4);
	static const struct { const char *name, *file; uint64_t line; } want[] = {
		{"outer_function", "src/a.c", 12}, {"inner_function", "src/b.c", 300},
		{"inner_function", "src/b.c", 300}, {"tick_event", NULL, 0},
		{"inner_function", "src/b.c", 300}, {"leaf_function", NULL, 0},
		{"func#7", "src/c.c", UINT64_MAX}, /* line 0 is omitted */
	};
	int k = 0;
	for (int i = 0; i < tr->nev; i++) {
		const struct event *e = &tr->ev[i];
		if (!e->name)
			continue;
		assert_true(k < 7);
		assert_string_equal(e->name, want[k].name);
		if (want[k].file) {
			assert_string_equal(e->file, want[k].file);
			assert_int_equal(e->line, want[k].line);
		} else {
			assert_null(e->file);
		}
		k++;
	}
	assert_int_equal(k, 7);
	trace_free(tr);

	/* and each string appears once per thread that uses it in the raw file */
	FILE *f = fopen(path, "rb");
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	static const struct { const char *s; int times; } once[] = {
		{"outer_function", 1}, {"inner_function", 2}, {"tick_event", 1},
		{"leaf_function", 1}, {"func#7", 1}, {"src/b.c", 2}, {"IGNORED", 0}};
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++) {
		int c = 0;
		for (const char *p = buf; (p = memmem(p, n - (size_t)(p - buf), once[i].s, strlen(once[i].s))); p++)
			c++;
		assert_int_equal(c, once[i].times);
	}
	unlink(path);
	free(path);
}

/* pf_slice_begin_known writes nothing for a key new to the sequence, and
 * exactly what pf_slice_begin would for a known one. */
static void test_begin_known(void **state)
{
	(void)state;
	char *paths[2] = {temp_path(".pb"), temp_path(".pb")};
	for (int known = 0; known < 2; known++) {
		FILE *f = fopen(paths[known], "wb");
		assert_non_null(f);
		struct pf_writer *w = pf_open(file_write, f);
		struct pf_process *p = pf_add_process(w, 4242, "demo", NULL);
		struct pf_thread *a = pf_add_thread(w, p, 1, "a"), *b = pf_add_thread(w, p, 2, "b");
		for (int i = 0; i < 6; i++) {
			struct pf_thread *t = i % 2 ? b : a;
			uint64_t ts = TS0 + 10 * (uint64_t)i, key = (uint64_t)(i / 4);
			int r = known ? pf_slice_begin_known(w, t, ts, key) : 0;
			/* keys 0 and 1 are new on each thread at i = 0, 1 and 4, 5 */
			assert_int_equal(r, known && (i == 2 || i == 3) ? 1 : 0);
			if (!r)
				assert_int_equal(pf_slice_begin(w, t, ts, key, i / 4 ? "g" : "f", "x.c", 1), 0);
			assert_int_equal(pf_slice_end(w, t, ts + 5), 0);
		}
		assert_int_equal(pf_finish(w), 0);
		assert_int_equal(fclose(f), 0);
	}
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", paths[0], paths[1]);
	assert_int_equal(system(cmd), 0);
	for (int i = 0; i < 2; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
}

/* Two processes: each with its own sequence and cleared state; each thread
 * with its own, defining the same key again. */
static void test_two_processes(void **state)
{
	char *path = temp_path(".pb");
	FILE *f = fopen(path, "wb");
	struct pf_writer *w = pf_open(file_write, f);
	struct pf_process *p1 = pf_add_process(w, 10, "one", NULL);
	struct pf_thread *t1 = pf_add_thread(w, p1, 10, "one");
	struct pf_process *p2 = pf_add_process(w, 20, NULL, NULL);
	struct pf_thread *t2 = pf_add_thread(w, p2, 20, "two");
	pf_slice_begin(w, t1, TS0, 5, "shared_name", NULL, 0);
	pf_slice_begin(w, t2, TS0, 5, "shared_name", NULL, 0);
	pf_slice_end(w, t1, TS0 + 1);
	pf_slice_end(w, t2, TS0 + 1);
	assert_int_equal(pf_finish(w), 0);
	fclose(f);
	struct trace *tr = read_trace(path, 0);
	struct node **k = tr->root->kids;
	/* descriptors p1 t1 p2 t2, snapshot + begin t1, snapshot + begin t2, ends */
	assert_int_equal(tr->root->nkids, 10);
	uint64_t s1 = uint_of(k[1], P_SEQ, 0), s2 = uint_of(k[3], P_SEQ, 0);
	assert_true(s1 != s2 && s1 != uint_of(k[0], P_SEQ, 0) && s2 != uint_of(k[2], P_SEQ, 0));
	assert_int_equal(uint_of(k[2], P_FLAGS, 0), CLEARED);
	assert_int_equal(uint_of(k[2], P_FIRST, 0), 1);
	assert_null(str_of(get(get(k[2], P_TD), 3), 6)); /* no name given */
	assert_null(get(get(get(k[0], P_TD), 3), 2));   /* no cmdline given */
	assert_int_equal(uint_of(k[5], P_SEQ, 0), s1);
	assert_int_equal(uint_of(k[7], P_SEQ, 0), s2);
	assert_non_null(get(k[5], P_INTERNED));
	assert_non_null(get(k[7], P_INTERNED));
	assert_int_equal(tr->nev, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(tr->ev[i].ts, TS0 + (i >= 2));
	assert_string_equal(tr->ev[1].name, "shared_name");
	trace_free(tr);
	unlink(path);
	free(path);
}

/* Strings longer than 127 bytes make every enclosing length two bytes. */
static void test_long_strings(void **state)
{
	char name[300], file[200];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memset(file, 'f', sizeof(file) - 1);
	file[sizeof(file) - 1] = '\0';
	char *path = temp_path(".pb");
	FILE *f = fopen(path, "wb");
	struct pf_writer *w = pf_open(file_write, f);
	struct pf_process *p = pf_add_process(w, 1, name, name);
	struct pf_thread *t = pf_add_thread(w, p, 1, name);
	pf_slice_begin(w, t, UINT64_MAX, UINT64_MAX, name, file, UINT32_MAX);
	pf_slice_end(w, t, UINT64_MAX);
	assert_int_equal(pf_finish(w), 0);
	fclose(f);
	struct trace *tr = read_trace(path, 0);
	struct node *root = tr->root;
	assert_int_equal(root->nkids, 5); /* process, thread, snapshot, begin, end */
	assert_string_equal(str_of(get(get(root->kids[0], P_TD), 3), 6), name);
	struct node *id = get(root->kids[3], P_INTERNED);
	assert_string_equal(str_of(get(id, 2), 2), name);
	assert_string_equal(str_of(get(id, 4), 2), file);
	assert_int_equal(uint_of(get(id, 4), 4, 0), UINT32_MAX);
	assert_int_equal(uint_of(root->kids[2], P_TS, 0), UINT64_MAX);
	assert_int_equal(tr->nev, 2);
	assert_int_equal(tr->ev[0].ts, UINT64_MAX);
	assert_int_equal(tr->ev[1].ts, UINT64_MAX);
	trace_free(tr);
	unlink(path);
	free(path);
}

/* Many events: the writer flushes repeatedly; the stream stays valid and
 * interning and the incremental clock hold across flushes and map growth. */
static void test_many_events(void **state)
{
	char *path = temp_path(".pb");
	FILE *f = fopen(path, "wb");
	struct pf_writer *w = pf_open(file_write, f);
	struct pf_process *p = pf_add_process(w, 1, "many", NULL);
	struct pf_thread *t = pf_add_thread(w, p, 1, "t");
	char name[32];
	for (int i = 0; i < 30000; i++) {
		int key = i % 500;
		snprintf(name, sizeof(name), "function_%d", key);
		assert_int_equal(pf_slice_begin(w, t, TS0 + 2 * (uint64_t)i, (uint64_t)key, name, NULL, 0), 0);
		assert_int_equal(pf_slice_end(w, t, TS0 + 2 * (uint64_t)i + 1), 0);
	}
	assert_true(pf_bytes_written(w) > 256 * 1024);
	assert_int_equal(pf_finish(w), 0);
	fclose(f);
	struct trace *tr = read_trace(path, 0);
	assert_int_equal(tr->root->nkids, 3 + 60000);
	int defs = 0;
	for (int i = 0; i < tr->root->nkids; i++) {
		struct node *id = get(tr->root->kids[i], P_INTERNED);
		if (id)
			defs += count(id, 2);
	}
	assert_int_equal(defs, 500);
	struct node *last = get(tr->root->kids[tr->root->nkids - 2], P_TE);
	assert_int_equal(uint_of(last, TE_NAME_IID, 0), (29999 % 500) + 1);
	assert_int_equal(tr->nev, 60000);
	for (int i = 0; i < tr->nev; i++)
		assert_int_equal(tr->ev[i].ts, TS0 + (uint64_t)i);
	assert_string_equal(tr->ev[59998].name, "function_499");
	trace_free(tr);
	unlink(path);
	free(path);
}

/* Bytes written for `pairs` begin/end pairs after the first (interning)
 * one, 1 ns apart. */
static size_t bytes_for(int pairs, const char *file)
{
	size_t n = 0;
	struct pf_writer *w = pf_open(count_write, &n);
	struct pf_process *p = pf_add_process(w, 1, "x", NULL);
	struct pf_thread *t = pf_add_thread(w, p, 1, "t");
	uint64_t ts = TS0;
	pf_slice_begin(w, t, ts++, 1, "f", file, 3);
	pf_slice_end(w, t, ts++);
	for (int i = 0; i < pairs; i++) {
		pf_slice_begin(w, t, ts++, 1, "f", file, 3);
		pf_slice_end(w, t, ts++);
	}
	assert_int_equal(pf_finish(w), 0);
	return n;
}

/* The hot-path packets, byte for byte: a begin is packet header 2 +
 * timestamp 2 + sequence 2 + flags 2 + track event header 2 + type 2 +
 * name_iid 2 (+ source_location_iid 3); an end has no ids. */
static void test_packet_sizes(void **state)
{
	assert_int_equal(bytes_for(1000, "f.c") - bytes_for(0, "f.c"), 1000 * (17 + 12));
	assert_int_equal(bytes_for(1000, NULL) - bytes_for(0, NULL), 1000 * (14 + 12));
}

static int calls;
static int failing_write(void *ctx, const void *buf, size_t len)
{
	calls++;
	return -1;
}

static void test_write_failure(void **state)
{
	calls = 0;
	struct pf_writer *w = pf_open(failing_write, NULL);
	struct pf_process *p = pf_add_process(w, 1, "x", NULL);
	struct pf_thread *t = pf_add_thread(w, p, 1, "t");
	int rc = 0, i;
	for (i = 0; i < 1000000 && rc == 0; i++)
		rc = pf_slice_begin(w, t, TS0 + (uint64_t)i, 1, "f", NULL, 0);
	assert_int_equal(rc, -1); /* reported once the buffer was handed over */
	assert_int_equal(calls, 1);
	assert_int_equal(pf_slice_end(w, t, TS0), -1);
	assert_int_equal(pf_finish(w), -1);
	assert_int_equal(calls, 1); /* nothing more is written after a failure */

	calls = 0;
	w = pf_open(failing_write, NULL);
	pf_add_process(w, 1, "x", NULL);
	assert_int_equal(pf_finish(w), -1); /* failure at the final flush */
	assert_int_equal(calls, 1);
}

/* Through sf_outfile with gzip: what a `convert -o x.pb.gz` does. */
static void test_gzip_outfile(void **state)
{
	char *path = temp_path(".pb.gz");
	char err[256];
	struct sf_outfile *of = sf_outfile_open(path, -1, err, sizeof(err));
	assert_non_null(of);
	struct pf_writer *w = pf_open(sf_outfile_write_cb, of);
	struct pf_process *p = pf_add_process(w, 7, "gz", NULL);
	struct pf_thread *t = pf_add_thread(w, p, 7, "gz");
	for (int i = 0; i < 50000; i++) {
		pf_slice_begin(w, t, TS0 + (uint64_t)i * 3, (uint64_t)(i % 3), i % 3 ? "b_func" : "a_func", NULL, 0);
		pf_slice_end(w, t, TS0 + (uint64_t)i * 3 + 1);
	}
	assert_int_equal(pf_finish(w), 0);
	assert_int_equal(sf_outfile_commit(of), 0);
	struct trace *tr = read_trace(path, 1);
	assert_int_equal(tr->root->nkids, 3 + 100000);
	assert_int_equal(tr->nev, 100000);
	assert_int_equal(tr->ev[tr->nev - 1].ts, TS0 + 49999 * 3 + 1);
	trace_free(tr);
	unlink(path);
	free(path);
}

/* ---- benchmark (SFTRACE_BENCH=1) ---- */

static int null_write(void *ctx, const void *buf, size_t len)
{
	*(size_t *)ctx += len;
	return 0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* 20M events, 4 threads taking turns in runs of 256 events, random nesting
 * up to depth 40 over 2000 functions, random 1..64 ns gaps. */
static void bench_one(const char *out, const char *label)
{
	static char names[2000][48];
	for (int i = 0; i < 2000; i++)
		snprintf(names[i], sizeof(names[i]), "crate::module::function_number_%d", i);
	size_t nbytes = 0;
	struct sf_outfile *of = NULL;
	char err[256];
	double t0 = now();
	struct pf_writer *w;
	if (out) {
		of = sf_outfile_open(out, -1, err, sizeof(err));
		assert_non_null(of);
		w = pf_open(sf_outfile_write_cb, of);
	} else {
		w = pf_open(null_write, &nbytes);
	}
	struct pf_process *p = pf_add_process(w, 1234, "bench", "bench");
	struct pf_thread *th[4];
	int depth[4] = {0};
	uint64_t ts[4], rng = 88172645463325252ull;
	for (int i = 0; i < 4; i++) {
		th[i] = pf_add_thread(w, p, 1234 + (uint32_t)i, "worker");
		ts[i] = TS0;
	}
	const long total = 20000000;
	long ev = 0;
	while (ev < total) {
		for (int i = 0; i < 4; i++) {
			for (int k = 0; k < 256; k++, ev++) {
				rng ^= rng << 13;
				rng ^= rng >> 7;
				rng ^= rng << 17;
				ts[i] += 1 + (rng >> 58);
				if (depth[i] == 0 || (depth[i] < 40 && (rng & 1))) {
					unsigned f = (unsigned)((rng >> 8) % 2000);
					pf_slice_begin(w, th[i], ts[i], f, names[f], "src/lib.rs", f + 1);
					depth[i]++;
				} else {
					pf_slice_end(w, th[i], ts[i]);
					depth[i]--;
				}
			}
		}
	}
	assert_int_equal(pf_finish(w), 0);
	unsigned long long fbytes = 0;
	if (of) {
		assert_int_equal(sf_outfile_commit(of), 0);
		struct stat st;
		assert_int_equal(stat(out, &st), 0);
		fbytes = (unsigned long long)st.st_size;
	}
	double dt = now() - t0;
	printf("bench %-11s %ld events %.3f s = %5.1f M events/s", label, ev,
	       dt, (double)ev / dt / 1e6);
	if (out)
		printf(", %.1f B/event in file\n", (double)fbytes / (double)ev);
	else
		printf(", %.1f B/event encoded\n", (double)nbytes / (double)ev);
	if (out)
		unlink(out);
}

static void test_bench(void **state)
{
	if (!getenv("SFTRACE_BENCH"))
		skip();
	bench_one(NULL, "null sink");
	char *plain = temp_path(".pb"), *gz = temp_path(".pb.gz");
	bench_one(plain, "file .pb");
	bench_one(gz, "file .pb.gz");
	free(plain);
	free(gz);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_descriptors),
		cmocka_unit_test(test_clock_snapshots),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_backwards_time),
		cmocka_unit_test(test_interning),
		cmocka_unit_test(test_begin_known),
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_long_strings),
		cmocka_unit_test(test_many_events),
		cmocka_unit_test(test_packet_sizes),
		cmocka_unit_test(test_write_failure),
		cmocka_unit_test(test_gzip_outfile),
		cmocka_unit_test(test_bench),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
