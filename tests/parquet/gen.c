/* Writes Parquet files with sftrace's two table schemas for check.mjs to read
 * with the real readers (nodejs-polars, DuckDB), plus the expected contents
 * as JSON lines (every value as a decimal string, so 64-bit values survive
 * JavaScript).
 *
 *   gen OUTDIR
 *
 * Files: events-<codec>-<enc>.parquet and symtab-<codec>-<enc>.parquet for
 * codec zstd/none and enc auto/plain/dict/delta (the writer's choice, or one
 * encoding forced), several row groups each; events-big.parquet (multi-page
 * chunks); events-empty.parquet (no rows); events.jsonl, symtab.jsonl,
 * events-big.jsonl; query.json (the expected top functions of the big file);
 * events-rows.parquet (the big file's rows again, written a whole row at a
 * time with pq_write_row_u64s, in row groups of 20000: the encodings are
 * chosen in the first row group, kept, and chosen again in the ninth).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/parquet.h"
#include "synth.h"

static const struct pq_column event_cols[] = {
	{ "frame_id", PQ_UINT64 }, { "parent", PQ_UINT64 }, { "tid", PQ_UINT32 },
	{ "func_id", PQ_UINT64 },  { "time", PQ_DURATION_NS }, { "kind", PQ_UINT32 },
};
static const struct pq_column symtab_cols[] = {
	{ "func_id", PQ_UINT64 }, { "name", PQ_STRING }, { "path", PQ_STRING },
};

#define NFUNCS 3000
#define SMALL_ROWS 5000
#define BIG_ROWS 300000

static const char *outdir;

static void die(const char *what)
{
	fprintf(stderr, "gen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static char *path_of(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/%s", outdir, name);
	return buf;
}

/* Rows with edge values first, then the synthetic trace. */
static void event_row(size_t i, struct synth *s, struct synth_row *r)
{
	static const struct synth_row edge[] = {
		{ UINT64_MAX, 0, UINT64_MAX, (uint64_t)INT64_MAX, UINT32_MAX, UINT32_MAX },
		{ 0, UINT64_MAX, 0, 0, 0, 0 },
		{ 1ULL << 63, (1ULL << 63) - 1, 1ULL << 63, (uint64_t)-5, 1u << 31, 1 },
		{ (1ULL << 63) - 1, 1ULL << 63, 12345, 1, (1u << 31) - 1, 2 },
		{ UINT64_MAX - 1, 1, 7, (uint64_t)INT64_MAX - 1, 7, 2 },
		{ 7, 7, 7, 7, 7, 7 },
	};
	size_t nedge = sizeof(edge) / sizeof(edge[0]);
	if (i < nedge)
		*r = edge[i];
	else
		synth_next(s, r);
}

static void put_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void event_json(FILE *f, const struct synth_row *r)
{
	fprintf(f,
		"{\"frame_id\":\"%" PRIu64 "\",\"parent\":\"%" PRIu64 "\",\"tid\":\"%" PRIu32
		"\",\"func_id\":\"%" PRIu64 "\",\"time\":\"%" PRId64 "\",\"kind\":\"%" PRIu32 "\"}\n",
		r->frame_id, r->parent, r->tid, r->func_id, (int64_t)r->time, r->kind);
}

static void check(struct pq_writer *w, int rc)
{
	if (rc < 0) {
		fprintf(stderr, "gen: parquet: %s\n", pq_strerror(w));
		exit(1);
	}
}

static struct pq_writer *open_out(const char *name, const struct pq_column *cols, int n,
				  const struct pq_options *opt, int *fd)
{
	*fd = open(path_of(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (*fd < 0)
		die(name);
	struct pq_writer *w = pq_open(cols, n, opt, pq_fd_write, fd);
	if (!w)
		die("pq_open");
	return w;
}

static void close_out(struct pq_writer *w, int fd)
{
	check(w, pq_finish(w));
	pq_free(w);
	if (close(fd) < 0)
		die("close");
}

/* Writes `rows` events to `name`; also to `json` when not NULL. Counts
 * entries per func id into `calls` when not NULL. With `whole_rows`, rows
 * go in with pq_write_row_u64s rather than one value at a time. */
static void write_events(const char *name, size_t rows, int with_edges,
			 const struct pq_options *opt, FILE *json, uint64_t *calls, int whole_rows)
{
	int fd;
	struct pq_writer *w = open_out(name, event_cols, 6, opt, &fd);
	struct synth s;
	synth_init(&s, NFUNCS, 42);
	for (size_t i = 0; i < rows; i++) {
		struct synth_row r;
		if (with_edges)
			event_row(i, &s, &r);
		else
			synth_next(&s, &r);
		if (whole_rows) {
			uint64_t v[6] = { r.frame_id, r.parent, r.tid, r.func_id, r.time, r.kind };
			check(w, pq_write_row_u64s(w, v));
		} else {
			check(w, pq_write_u64(w, 0, r.frame_id));
			check(w, pq_write_u64(w, 1, r.parent));
			check(w, pq_write_u32(w, 2, r.tid));
			check(w, pq_write_u64(w, 3, r.func_id));
			check(w, pq_write_u64(w, 4, r.time));
			check(w, pq_write_u32(w, 5, r.kind));
			check(w, pq_end_row(w));
		}
		if (json)
			event_json(json, &r);
		if (calls && r.kind == 1 && r.func_id <= NFUNCS)
			calls[r.func_id]++;
	}
	close_out(w, fd);
}

static const char *func_name(uint64_t id, char *buf, size_t len)
{
	switch (id) {
	case 1: return "";
	case 2: return "\xc3\xbcnic\xc3\xb8" "de::\xce\xbb::{{closure}}";
	case 3: return "quote\" backslash\\ comma, newline\n tab\t end";
	case 5: return "bad\xff utf8\xc3"; /* written as U+FFFD each */
	case 4:
		/* longer than the 64-byte statistics limit */
		return "core::ptr::drop_in_place<alloc::vec::Vec<alloc::string::String>>::"
		       "h0123456789abcdef_and_some_more_text_to_make_it_long";
	default:
		snprintf(buf, len, "app::module_%" PRIu64 "::function_%" PRIu64, id % 17, id);
		return buf;
	}
}

/* What readers should see for func_name(id). */
static const char *func_name_read(uint64_t id, char *buf, size_t len)
{
	return id == 5 ? "bad\xef\xbf\xbd utf8\xef\xbf\xbd" : func_name(id, buf, len);
}

static const char *func_path(uint64_t id)
{
	if (id % 7 == 0)
		return "/usr/lib/x86_64-linux-gnu/libc.so.6";
	return id % 2 ? "/opt/app/bin/app" : "/opt/app/lib/libwork.so";
}

static void write_symtab(const char *name, const struct pq_options *opt, FILE *json)
{
	int fd;
	struct pq_writer *w = open_out(name, symtab_cols, 3, opt, &fd);
	for (uint64_t id = 1; id <= NFUNCS; id++) {
		char buf[128];
		const char *fn = func_name(id, buf, sizeof(buf));
		const char *path = func_path(id);
		check(w, pq_write_u64(w, 0, id));
		check(w, pq_write_str(w, 1, fn, strlen(fn)));
		check(w, pq_write_str(w, 2, path, strlen(path)));
		check(w, pq_end_row(w));
		if (json) {
			fprintf(json, "{\"func_id\":\"%" PRIu64 "\",\"name\":", id);
			put_json_str(json, func_name_read(id, buf, sizeof(buf)));
			fputs(",\"path\":", json);
			put_json_str(json, path);
			fputs("}\n", json);
		}
	}
	close_out(w, fd);
}

static FILE *open_json(const char *name)
{
	FILE *f = fopen(path_of(name), "w");
	if (!f)
		die(name);
	return f;
}

static void close_json(FILE *f)
{
	if (f && fclose(f) != 0)
		die("fclose");
}

/* Expected result of: events where kind == 1, grouped by func_id, count,
 * top 10 by count (ties by func_id), joined with the symbol table. */
static void write_query(const uint64_t *calls)
{
	FILE *f = open_json("query.json");
	int used[NFUNCS + 1] = { 0 };
	fputs("[", f);
	for (int k = 0; k < 10; k++) {
		uint64_t best = 0;
		for (uint64_t id = 1; id <= NFUNCS; id++)
			if (!used[id] && calls[id] > 0 && (best == 0 || calls[id] > calls[best]))
				best = id;
		if (best == 0)
			break;
		used[best] = 1;
		char buf[128];
		fprintf(f, "%s{\"func_id\":\"%" PRIu64 "\",\"len\":\"%" PRIu64 "\",\"name\":", k ? "," : "",
			best, calls[best]);
		put_json_str(f, func_name_read(best, buf, sizeof(buf)));
		fputs("}", f);
	}
	fputs("]\n", f);
	close_json(f);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen OUTDIR\n");
		return 2;
	}
	outdir = argv[1];
	static const struct { const char *name; enum pq_codec codec; } codecs[] = {
		{ "zstd", PQ_CODEC_ZSTD }, { "none", PQ_CODEC_NONE },
	};
	static const struct { const char *name; unsigned mask; } encs[] = {
		{ "auto", 0 }, { "plain", PQ_ENC_PLAIN }, { "dict", PQ_ENC_DICT }, { "delta", PQ_ENC_DELTA },
	};
	FILE *ev_json = open_json("events.jsonl"), *sym_json = open_json("symtab.jsonl");
	for (size_t c = 0; c < 2; c++) {
		for (size_t e = 0; e < 4; e++) {
			int first = c == 0 && e == 0;
			struct pq_options opt = { .codec = codecs[c].codec, .encodings = encs[e].mask,
						  .row_group_rows = 2048 };
			char name[64];
			snprintf(name, sizeof(name), "events-%s-%s.parquet", codecs[c].name, encs[e].name);
			write_events(name, SMALL_ROWS, 1, &opt, first ? ev_json : NULL, NULL, 0);
			opt.row_group_rows = 1024;
			snprintf(name, sizeof(name), "symtab-%s-%s.parquet", codecs[c].name, encs[e].name);
			write_symtab(name, &opt, first ? sym_json : NULL);
		}
	}
	close_json(ev_json);
	close_json(sym_json);

	/* Chunks of several pages (a page holds at most 128Ki values). */
	static uint64_t calls[NFUNCS + 1];
	struct pq_options big = { .row_group_rows = 200000 };
	FILE *big_json = open_json("events-big.jsonl");
	write_events("events-big.parquet", BIG_ROWS, 0, &big, big_json, calls, 0);
	close_json(big_json);
	write_query(calls);
	struct pq_options groups = { .row_group_rows = 20000 };
	write_events("events-rows.parquet", BIG_ROWS, 0, &groups, NULL, NULL, 1);

	write_events("events-empty.parquet", 0, 0, NULL, NULL, NULL, 0);
	return 0;
}
