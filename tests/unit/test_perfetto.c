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

/* ---- writing ---- */

static int file_write(void *ctx, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -1;
}

static char *temp_path(const char *suffix)
{
	static int n;
	char *p = malloc(256);
	snprintf(p, 256, "/tmp/test_perfetto.%d.%d%s", (int)getpid(), n++, suffix);
	return p;
}

/* Field numbers used below (see perfetto.c). */
enum {
	P_TS = 8, P_SEQ = 10, P_TE = 11, P_INTERNED = 12, P_FLAGS = 13, P_TD = 60, P_FIRST = 87,
	TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11, TE_LOC_IID = 34,
};

#define TS0 1700000000000000ull /* 8-byte varints, like real boot times */

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
	/* a repeated key: the strings passed now must be ignored */
	assert_int_equal(pf_slice_begin(w, m, TS0 + 40, 2, "IGNORED", "IGNORED.c", 1), 0);
	assert_int_equal(pf_slice_end(w, m, TS0 + 50), 0);
	assert_int_equal(pf_slice_end(w, m, TS0 + 60), 0);
	assert_int_equal(pf_instant(w, m, TS0 + 70, 4, "tick_event", NULL, 0), 0);
	/* worker: inner { leaf } ; leaf has no source location */
	assert_int_equal(pf_slice_begin(w, wk, TS0 + 15, 2, "IGNORED", NULL, 0), 0);
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

static void check_thread_td(const struct node *pkt, uint64_t parent, uint64_t tid,
			    const char *name, uint64_t *uuid)
{
	struct node *td = get(pkt, P_TD);
	assert_non_null(td);
	assert_null(get(pkt, P_FLAGS));
	assert_null(get(pkt, P_FIRST));
	assert_int_equal(uint_of(td, 5, 0), parent); /* parent_uuid */
	assert_null(get(td, 3));                     /* no process descriptor */
	struct node *thd = get(td, 4);
	assert_non_null(thd);
	assert_int_equal(uint_of(thd, 1, 0), 4242); /* pid */
	assert_int_equal(uint_of(thd, 2, 0), tid);
	assert_string_equal(str_of(thd, 5), name);
	*uuid = uint_of(td, 1, 0);
}

static void test_descriptors(void **state)
{
	char *path = temp_path(".pb");
	write_small(path);
	struct node *root = decode_file(path, 0);
	/* 3 descriptors + 11 events + 1 descriptor + 2 events, one packet each */
	assert_int_equal(root->nkids, 17);
	assert_int_equal(count(root, 1), 17);

	struct node *pp = root->kids[0];
	uint64_t seq = uint_of(pp, P_SEQ, 0);
	assert_true(seq >= 2); /* 0 is invalid, 1 is the service's */
	assert_int_equal(uint_of(pp, P_FLAGS, 0), 1);  /* INCREMENTAL_STATE_CLEARED */
	assert_int_equal(uint_of(pp, P_FIRST, 0), 1);  /* first_packet_on_sequence */
	struct node *td = get(pp, P_TD);
	assert_non_null(td);
	uint64_t proc_uuid = uint_of(td, 1, 0);
	assert_true(proc_uuid != 0);
	struct node *pd = get(td, 3);
	assert_non_null(pd);
	assert_int_equal(uint_of(pd, 1, 0), 4242);
	assert_string_equal(str_of(pd, 2), "demo --fast");
	assert_string_equal(str_of(pd, 6), "demo");

	uint64_t u_main, u_worker, u_reused;
	check_thread_td(root->kids[1], proc_uuid, 4242, "main", &u_main);
	check_thread_td(root->kids[2], proc_uuid, 4243, "worker", &u_worker);
	check_thread_td(root->kids[14], proc_uuid, 4243, "worker2", &u_reused);
	assert_true(u_main != u_worker && u_worker != u_reused && u_main != u_reused);
	assert_true(u_main != proc_uuid && u_worker != proc_uuid && u_reused != proc_uuid);
	for (int i = 0; i < root->nkids; i++)
		assert_int_equal(uint_of(root->kids[i], P_SEQ, 0), seq);
	node_free(root);
	unlink(path);
	free(path);
}

/* Slice counts per track, flags and timestamps of every event packet. */
static void test_events(void **state)
{
	char *path = temp_path(".pb");
	write_small(path);
	struct node *root = decode_file(path, 0);
	uint64_t u_main = uint_of(get(root->kids[1], P_TD), 1, 0);
	uint64_t u_worker = uint_of(get(root->kids[2], P_TD), 1, 0);
	uint64_t u_reused = uint_of(get(root->kids[14], P_TD), 1, 0);
	int begins[3] = {0}, ends[3] = {0}, instants = 0;
	for (int i = 0; i < root->nkids; i++) {
		struct node *pkt = root->kids[i];
		struct node *te = get(pkt, P_TE);
		if (!te)
			continue;
		assert_true(uint_of(pkt, P_TS, 0) > TS0);
		uint64_t track = uint_of(te, TE_TRACK, 0);
		int t = track == u_main ? 0 : track == u_worker ? 1 : track == u_reused ? 2 : -1;
		assert_true(t >= 0);
		assert_null(get(pkt, P_FIRST));
		switch (uint_of(te, TE_TYPE, 0)) {
		case 1: /* SLICE_BEGIN: uses interned data */
			begins[t]++;
			assert_int_equal(uint_of(pkt, P_FLAGS, 0), 2);
			assert_non_null(get(te, TE_NAME_IID));
			break;
		case 2: /* SLICE_END: no name, no interned data, no flags */
			ends[t]++;
			assert_null(get(pkt, P_FLAGS));
			assert_null(get(te, TE_NAME_IID));
			assert_null(get(pkt, P_INTERNED));
			break;
		case 3:
			instants++;
			assert_int_equal(t, 0);
			assert_int_equal(uint_of(pkt, P_FLAGS, 0), 2);
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
	/* exact timestamps in stream order */
	static const uint64_t want_ts[] = {10, 20, 30, 40, 50, 60, 70, 15, 16, 17, 18, 100, 101};
	int k = 0;
	for (int i = 0; i < root->nkids; i++)
		if (get(root->kids[i], P_TE))
			assert_int_equal(uint_of(root->kids[i], P_TS, 0), TS0 + want_ts[k++]);
	assert_int_equal(k, 13);
	node_free(root);
	unlink(path);
	free(path);
}

/* Interning: every string is defined once, before use, and the ids that
 * events carry resolve to the right strings. */
static void test_interning(void **state)
{
	char *path = temp_path(".pb");
	write_small(path);
	struct node *root = decode_file(path, 0);
	const char *names[16] = {0}, *files[16] = {0};
	uint64_t lines[16] = {0};
	int defs = 0, locs = 0;
	const char *seen[16];
	int nseen = 0;
	for (int i = 0; i < root->nkids; i++) {
		struct node *pkt = root->kids[i];
		struct node *id = get(pkt, P_INTERNED);
		if (id) {
			assert_int_equal(uint_of(pkt, P_FLAGS, 0), 2);
			for (int j = 0; j < id->nkids; j++) {
				struct node *e = id->kids[j];
				uint64_t iid = uint_of(e, 1, 0);
				assert_true(iid > 0 && iid < 16);
				if (e->field == 2) { /* EventName */
					assert_null(names[iid]);
					names[iid] = str_of(e, 2);
					defs++;
				} else {
					assert_int_equal(e->field, 4); /* SourceLocation */
					assert_null(files[iid]);
					files[iid] = str_of(e, 2);
					lines[iid] = uint_of(e, 4, UINT64_MAX);
					locs++;
				}
			}
		}
		struct node *te = get(pkt, P_TE);
		if (te && get(te, TE_NAME_IID)) {
			uint64_t iid = uint_of(te, TE_NAME_IID, 0);
			assert_non_null(names[iid]); /* defined in this or an earlier packet */
			seen[nseen++] = names[iid];
			if (get(te, TE_LOC_IID))
				assert_non_null(files[uint_of(te, TE_LOC_IID, 0)]);
		}
	}
	assert_int_equal(defs, 5);
	assert_int_equal(locs, 3);
	static const char *want[] = {"outer_function", "inner_function", "inner_function",
				     "tick_event", "inner_function", "leaf_function", "func#7"};
	assert_int_equal(nseen, 7);
	for (int i = 0; i < nseen; i++)
		assert_string_equal(seen[i], want[i]);
	/* ids are dense from 1 in first-use order */
	assert_string_equal(names[1], "outer_function");
	assert_string_equal(files[1], "src/a.c");
	assert_int_equal(lines[1], 12);
	assert_string_equal(files[2], "src/b.c");
	assert_int_equal(lines[2], 300);
	assert_null(files[3]); /* tick_event: no location */
	assert_null(files[4]); /* leaf_function */
	assert_string_equal(files[5], "src/c.c");
	assert_int_equal(lines[5], UINT64_MAX); /* line 0 is omitted */
	node_free(root);

	/* and each name appears exactly once in the raw file */
	FILE *f = fopen(path, "rb");
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	static const char *once[] = {"outer_function", "inner_function", "tick_event",
				     "leaf_function", "func#7", "src/b.c"};
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++) {
		int c = 0;
		for (const char *p = buf; (p = memmem(p, n - (size_t)(p - buf), once[i], strlen(once[i]))); p++)
			c++;
		assert_int_equal(c, 1);
	}
	assert_null(memmem(buf, n, "IGNORED", 7));
	unlink(path);
	free(path);
}

/* Two processes: two sequences, each with its own cleared state and its own
 * interning (the same key is defined again on the second sequence). */
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
	struct node *root = decode_file(path, 0);
	assert_int_equal(root->nkids, 8);
	uint64_t s1 = uint_of(root->kids[0], P_SEQ, 0), s2 = uint_of(root->kids[2], P_SEQ, 0);
	assert_true(s1 != s2);
	assert_int_equal(uint_of(root->kids[2], P_FLAGS, 0), 1);
	assert_int_equal(uint_of(root->kids[2], P_FIRST, 0), 1);
	assert_null(str_of(get(get(root->kids[2], P_TD), 3), 6)); /* no name given */
	assert_null(get(get(get(root->kids[0], P_TD), 3), 2));   /* no cmdline given */
	assert_int_equal(uint_of(root->kids[4], P_SEQ, 0), s1);
	assert_int_equal(uint_of(root->kids[5], P_SEQ, 0), s2);
	assert_non_null(get(root->kids[4], P_INTERNED));
	assert_non_null(get(root->kids[5], P_INTERNED));
	node_free(root);
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
	struct node *root = decode_file(path, 0);
	assert_int_equal(root->nkids, 4);
	assert_string_equal(str_of(get(get(root->kids[0], P_TD), 3), 6), name);
	struct node *id = get(root->kids[2], P_INTERNED);
	assert_string_equal(str_of(get(id, 2), 2), name);
	assert_string_equal(str_of(get(id, 4), 2), file);
	assert_int_equal(uint_of(get(id, 4), 4, 0), UINT32_MAX);
	assert_int_equal(uint_of(root->kids[2], P_TS, 0), UINT64_MAX);
	assert_int_equal(uint_of(root->kids[3], P_TS, 0), UINT64_MAX);
	node_free(root);
	unlink(path);
	free(path);
}

/* Many events: the writer flushes repeatedly; the stream stays valid and
 * interning holds across flushes and map growth. */
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
	struct node *root = decode_file(path, 0);
	assert_int_equal(root->nkids, 2 + 60000);
	int defs = 0;
	for (int i = 0; i < root->nkids; i++) {
		struct node *id = get(root->kids[i], P_INTERNED);
		if (id)
			defs += count(id, 2);
	}
	assert_int_equal(defs, 500);
	struct node *last = get(root->kids[root->nkids - 2], P_TE);
	assert_int_equal(uint_of(last, TE_NAME_IID, 0), (29999 % 500) + 1);
	node_free(root);
	unlink(path);
	free(path);
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
	struct node *root = decode_file(path, 1);
	assert_int_equal(root->nkids, 2 + 100000);
	assert_int_equal(uint_of(root->kids[root->nkids - 1], P_TS, 0), TS0 + 49999 * 3 + 1);
	node_free(root);
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
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_interning),
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_long_strings),
		cmocka_unit_test(test_many_events),
		cmocka_unit_test(test_write_failure),
		cmocka_unit_test(test_gzip_outfile),
		cmocka_unit_test(test_bench),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
