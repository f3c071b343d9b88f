/* Parquet writer: files are written to memory, then taken apart here with a
 * Thrift compact decoder and page decoders (PLAIN, RLE/bit-packed hybrid
 * dictionary indices, DELTA_BINARY_PACKED, zstd) written for this test, and
 * compared with what was written. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "output/arrow_schema.h"
#include "output/parquet.h"

/* ---- an in-memory sink ---- */

struct mem {
	uint8_t *p;
	size_t len, cap;
	int calls, fail_at; /* fail the fail_at-th call (1-based); 0 = never */
};

static int mem_write(void *ctx, const void *buf, size_t len)
{
	struct mem *m = ctx;
	if (++m->calls == m->fail_at) {
		errno = ENOSPC;
		return -1;
	}
	if (m->len + len > m->cap) {
		m->cap = (m->len + len) * 2;
		m->p = realloc(m->p, m->cap);
		assert_non_null(m->p);
	}
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

/* ---- Thrift compact decoding into a tree ---- */

enum { T_TRUE = 1, T_FALSE = 2, T_I8 = 3, T_I16 = 4, T_I32 = 5, T_I64 = 6, T_BIN = 8,
       T_LIST = 9, T_STRUCT = 12 };

struct tnode {
	int id;
	int type;
	int64_t i;
	const uint8_t *bin;
	size_t blen;
	struct tnode *kids; /* struct fields or list elements */
	size_t nkids;
};

struct rd {
	const uint8_t *p;
	size_t len, pos;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;
	for (int shift = 0;; shift += 7) {
		assert_true(r->pos < r->len);
		uint8_t b = r->p[r->pos++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t rd_zigzag(struct rd *r)
{
	uint64_t v = rd_varint(r);
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void add_kid(struct tnode *n, struct tnode k)
{
	n->kids = realloc(n->kids, (n->nkids + 1) * sizeof(*n->kids));
	assert_non_null(n->kids);
	n->kids[n->nkids++] = k;
}

static void rd_struct(struct rd *r, struct tnode *n);

static void rd_value(struct rd *r, struct tnode *n)
{
	switch (n->type) {
	case T_TRUE:
	case T_FALSE:
		n->i = n->type == T_TRUE;
		break;
	case T_I8:
		assert_true(r->pos < r->len);
		n->i = (int8_t)r->p[r->pos++];
		break;
	case T_I16:
	case T_I32:
	case T_I64:
		n->i = rd_zigzag(r);
		break;
	case T_BIN:
		n->blen = rd_varint(r);
		assert_true(r->pos + n->blen <= r->len);
		n->bin = r->p + r->pos;
		r->pos += n->blen;
		break;
	case T_LIST: {
		assert_true(r->pos < r->len);
		uint8_t h = r->p[r->pos++];
		size_t count = h >> 4;
		if (count == 15)
			count = rd_varint(r);
		for (size_t k = 0; k < count; k++) {
			struct tnode e = { .type = h & 15 };
			if (e.type == T_TRUE) { /* list bools are bytes */
				e.i = r->p[r->pos++] == 1;
			} else {
				rd_value(r, &e);
			}
			add_kid(n, e);
		}
		break;
	}
	case T_STRUCT:
		rd_struct(r, n);
		break;
	default:
		fail_msg("unexpected thrift type %d", n->type);
	}
}

static void rd_struct(struct rd *r, struct tnode *n)
{
	int last = 0;
	for (;;) {
		assert_true(r->pos < r->len);
		uint8_t h = r->p[r->pos++];
		if (h == 0)
			return;
		struct tnode f = { .type = h & 15 };
		f.id = (h >> 4) ? last + (h >> 4) : (int)rd_zigzag(r);
		assert_true(f.id > last); /* the writer emits ids in order */
		last = f.id;
		rd_value(r, &f);
		add_kid(n, f);
	}
}

static void tree_free(struct tnode *n)
{
	for (size_t k = 0; k < n->nkids; k++)
		tree_free(&n->kids[k]);
	free(n->kids);
}

/* Field `id` of a struct node, or NULL. */
static const struct tnode *get(const struct tnode *n, int id)
{
	for (size_t k = 0; k < n->nkids; k++)
		if (n->kids[k].id == id)
			return &n->kids[k];
	return NULL;
}

static int64_t get_i(const struct tnode *n, int id)
{
	const struct tnode *f = get(n, id);
	assert_non_null(f);
	return f->i;
}

/* Parse a struct at `pos`; returns its size in bytes. */
static size_t parse_at(const uint8_t *p, size_t len, size_t pos, struct tnode *out)
{
	struct rd r = { p, len, pos };
	memset(out, 0, sizeof(*out));
	out->type = T_STRUCT;
	rd_struct(&r, out);
	return r.pos - pos;
}

/* The footer of a file: checks magic and length. */
static void parse_footer(const struct mem *m, struct tnode *fmd)
{
	assert_true(m->len >= 12);
	assert_memory_equal(m->p, "PAR1", 4);
	assert_memory_equal(m->p + m->len - 4, "PAR1", 4);
	uint32_t flen;
	memcpy(&flen, m->p + m->len - 8, 4);
	assert_true(flen + 12 <= m->len);
	size_t start = m->len - 8 - flen;
	assert_int_equal(parse_at(m->p, m->len - 8, start, fmd), flen);
}

/* ---- page decoding ---- */

struct column_values {
	uint64_t *u;
	char **s;
	size_t *slen;
	size_t n, cap;
};

static void cv_push(struct column_values *v, uint64_t u, const uint8_t *s, size_t slen)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 1024;
		v->u = realloc(v->u, v->cap * sizeof(*v->u));
		v->s = realloc(v->s, v->cap * sizeof(*v->s));
		v->slen = realloc(v->slen, v->cap * sizeof(*v->slen));
	}
	v->u[v->n] = u;
	v->s[v->n] = NULL;
	v->slen[v->n] = slen;
	if (s) {
		v->s[v->n] = malloc(slen + 1);
		memcpy(v->s[v->n], s, slen);
	}
	v->n++;
}

static void cv_free(struct column_values *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->s[i]);
	free(v->u);
	free(v->s);
	free(v->slen);
	memset(v, 0, sizeof(*v));
}

/* PLAIN: physical type 1 INT32, 2 INT64, 6 BYTE_ARRAY. */
static void decode_plain(const uint8_t *p, size_t len, int ptype, size_t count,
			 struct column_values *out)
{
	size_t pos = 0;
	for (size_t i = 0; i < count; i++) {
		if (ptype == 6) {
			uint32_t l;
			assert_true(pos + 4 <= len);
			memcpy(&l, p + pos, 4);
			assert_true(pos + 4 + l <= len);
			cv_push(out, 0, p + pos + 4, l);
			pos += 4 + l;
		} else {
			size_t w = ptype == 2 ? 8 : 4;
			uint64_t v = 0;
			assert_true(pos + w <= len);
			memcpy(&v, p + pos, w);
			cv_push(out, v, NULL, 0);
			pos += w;
		}
	}
	assert_int_equal(pos, len);
}

/* Read `bw` bits at bit offset *bit, LSB first. */
static uint64_t get_bits(const uint8_t *p, size_t len, size_t *bit, int bw)
{
	uint64_t v = 0;
	for (int k = 0; k < bw; k++, (*bit)++) {
		assert_true(*bit / 8 < len);
		v |= (uint64_t)((p[*bit / 8] >> (*bit % 8)) & 1) << k;
	}
	return v;
}

/* RLE/bit-packed hybrid: `count` indices of width bw. */
static void decode_hybrid(const uint8_t *p, size_t len, int bw, size_t count, uint32_t *out)
{
	struct rd r = { p, len, 0 };
	size_t got = 0;
	while (got < count) {
		uint64_t h = rd_varint(&r);
		if (h & 1) {
			size_t n = (h >> 1) * 8, bit = r.pos * 8;
			for (size_t k = 0; k < n; k++) {
				uint64_t v = get_bits(p, len, &bit, bw);
				if (got < count)
					out[got++] = (uint32_t)v;
			}
			r.pos += (h >> 1) * (size_t)bw;
		} else {
			uint64_t v = 0;
			for (int b = 0; b < (bw + 7) / 8; b++)
				v |= (uint64_t)p[r.pos++] << (8 * b);
			for (uint64_t k = 0; k < (h >> 1); k++) {
				assert_true(got < count);
				out[got++] = (uint32_t)v;
			}
		}
	}
	assert_int_equal(r.pos, len);
}

static int delta_odd_widths; /* miniblocks seen whose width is not whole bytes */

static void decode_delta(const uint8_t *p, size_t len, int ptype, size_t count,
			 struct column_values *out)
{
	struct rd r = { p, len, 0 };
	uint64_t block = rd_varint(&r), minis = rd_varint(&r), total = rd_varint(&r);
	assert_int_equal(total, count);
	assert_int_equal(block % 128, 0);
	assert_int_equal((block / minis) % 32, 0);
	uint64_t mask = ptype == 2 ? ~0ULL : 0xFFFFFFFFull;
	uint64_t prev = (uint64_t)rd_zigzag(&r);
	cv_push(out, prev & mask, NULL, 0);
	size_t got = 1, per = block / minis;
	while (got < count) {
		uint64_t min = (uint64_t)rd_zigzag(&r);
		const uint8_t *widths = p + r.pos;
		r.pos += minis;
		for (uint64_t m = 0; m < minis && got < count; m++) {
			assert_true(widths[m] <= (ptype == 2 ? 64 : 32));
			delta_odd_widths += widths[m] % 8 != 0;
			size_t bit = r.pos * 8;
			for (size_t k = 0; k < per; k++) {
				uint64_t u = get_bits(p, len, &bit, widths[m]);
				if (got < count) {
					prev = (prev + min + u) & mask;
					cv_push(out, prev, NULL, 0);
					got++;
				}
			}
			r.pos += per * widths[m] / 8;
		}
	}
	assert_int_equal(r.pos, len);
}

static int last_data_pages; /* data pages in the chunk decode_chunk read last */
static int last_raw_pages;  /* ... of which zstd frames of raw blocks only */

/* Whether every block of a zstd frame is raw (stored), from the frame
 * layout of RFC 8878. */
static int zstd_all_raw(const uint8_t *f, size_t n)
{
	static const size_t fcs_size[4] = { 0, 2, 4, 8 }, did_size[4] = { 0, 1, 2, 4 };
	assert_true(n >= 5);
	uint8_t d = f[4];
	size_t single = (d >> 5) & 1;
	size_t pos = 4 + 1 + !single + did_size[d & 3] + (d >> 6 == 0 ? single : fcs_size[d >> 6]);
	int raw = 1, last = 0;
	while (!last) {
		assert_true(pos + 3 <= n);
		uint32_t bh = f[pos] | (uint32_t)f[pos + 1] << 8 | (uint32_t)f[pos + 2] << 16;
		int type = (bh >> 1) & 3;
		last = bh & 1;
		raw &= type == 0;
		pos += 3 + (type == 1 ? 1 : bh >> 3);
	}
	return raw;
}

/* Decode a whole column chunk; returns the data page encoding seen (all
 * pages must agree). */
static int decode_chunk(const struct mem *f, const struct tnode *cc, struct column_values *out)
{
	const struct tnode *md = get(cc, 3);
	assert_non_null(md);
	int ptype = (int)get_i(md, 1), codec = (int)get_i(md, 4);
	int64_t nvals = get_i(md, 5), data_off = get_i(md, 9);
	const struct tnode *dict_f = get(md, 11);
	int64_t pos = dict_f ? dict_f->i : data_off;
	int64_t start = pos, unc_total = 0;
	assert_int_equal(get_i(cc, 2), start); /* ColumnChunk.file_offset */

	struct column_values dict = { 0 };
	int enc = -1;
	size_t before = out->n;
	last_data_pages = 0;
	last_raw_pages = 0;
	while ((int64_t)(out->n - before) < nvals) {
		struct tnode ph;
		size_t hl = parse_at(f->p, f->len, (size_t)pos, &ph);
		int type = (int)get_i(&ph, 1);
		size_t usize = (size_t)get_i(&ph, 2), csize = (size_t)get_i(&ph, 3);
		const uint8_t *body = f->p + pos + hl;
		assert_true(pos + (int64_t)(hl + csize) <= (int64_t)f->len);
		uint8_t *plain = malloc(usize + 1);
		if (codec == 6) {
			assert_int_equal(ZSTD_decompress(plain, usize, body, csize), usize);
			last_raw_pages += type == 0 && zstd_all_raw(body, csize);
		} else {
			assert_int_equal(codec, 0);
			assert_int_equal(csize, usize);
			memcpy(plain, body, usize);
		}
		if (type == 2) {
			assert_int_equal(pos, start); /* the dictionary page comes first */
			const struct tnode *dh = get(&ph, 7);
			assert_int_equal(get_i(dh, 2), 0); /* PLAIN entries */
			decode_plain(plain, usize, ptype, (size_t)get_i(dh, 1), &dict);
		} else {
			assert_int_equal(type, 0);
			if (enc < 0)
				assert_int_equal(pos, data_off);
			last_data_pages++;
			const struct tnode *dh = get(&ph, 5);
			size_t n = (size_t)get_i(dh, 1);
			int e = (int)get_i(dh, 2);
			assert_true(enc < 0 || e == enc);
			enc = e;
			if (e == 0) {
				decode_plain(plain, usize, ptype, n, out);
			} else if (e == 5) {
				decode_delta(plain, usize, ptype, n, out);
			} else {
				assert_int_equal(e, 8);
				assert_true(usize >= 1);
				uint32_t *idx = malloc(n * sizeof(*idx));
				decode_hybrid(plain + 1, usize - 1, plain[0], n, idx);
				for (size_t k = 0; k < n; k++) {
					assert_true(idx[k] < dict.n);
					cv_push(out, dict.u[idx[k]], (const uint8_t *)dict.s[idx[k]],
						dict.slen[idx[k]]);
				}
				free(idx);
			}
		}
		free(plain);
		unc_total += (int64_t)(hl + usize);
		pos += (int64_t)(hl + csize);
		tree_free(&ph);
	}
	assert_int_equal(out->n - before, nvals);
	assert_int_equal(get_i(md, 7), pos - start); /* total_compressed_size */
	assert_int_equal(get_i(md, 6), unc_total);   /* total_uncompressed_size */
	cv_free(&dict);
	return enc;
}

/* ---- test data ---- */

static const struct pq_column cols[] = {
	{ "frame_id", PQ_UINT64 }, { "tid", PQ_UINT32 }, { "time", PQ_DURATION_NS },
	{ "kind", PQ_UINT32 },     { "name", PQ_STRING },
};
#define NCOLS 5

struct row {
	uint64_t frame_id, time;
	uint32_t tid, kind;
	char name[96];
};

static size_t row_base; /* rows are make_row(row_base + i): 4 skips the edge values */

static void make_row(size_t i, struct row *r)
{
	i += row_base;
	static const uint64_t edge64[] = { UINT64_MAX, 0, 1ULL << 63, (1ULL << 63) - 1 };
	static const uint32_t edge32[] = { UINT32_MAX, 0, 1u << 31, 7 };
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ULL; /* splitmix64-style scramble */
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	x ^= x >> 31;
	r->frame_id = i < 4 ? edge64[i] : i / 2 + (x % 3);
	r->time = i < 4 ? edge64[i] : 1000 + i * 37 + (x % 11);
	r->tid = i < 4 ? edge32[i] : 100 + (uint32_t)((x >> 16) % 3);
	r->kind = i < 4 ? edge32[3 - i] : 1 + (uint32_t)((x >> 8) % 2);
	if (i % 97 == 5)
		memset(r->name, 'z', 90), r->name[90] = 0; /* longer than the stats limit */
	else
		snprintf(r->name, sizeof(r->name), "fn_%llu", (unsigned long long)(x % 40));
}

static struct pq_writer *write_rows(struct mem *m, size_t rows, const struct pq_options *opt)
{
	struct pq_writer *w = pq_open(cols, NCOLS, opt, mem_write, m);
	assert_non_null(w);
	for (size_t i = 0; i < rows; i++) {
		struct row r;
		make_row(i, &r);
		assert_int_equal(pq_write_u64(w, 0, r.frame_id), 0);
		assert_int_equal(pq_write_u32(w, 1, r.tid), 0);
		assert_int_equal(pq_write_u64(w, 2, r.time), 0);
		assert_int_equal(pq_write_u32(w, 3, r.kind), 0);
		assert_int_equal(pq_write_str(w, 4, r.name, strlen(r.name)), 0);
		assert_int_equal(pq_end_row(w), 0);
	}
	assert_int_equal(pq_rows(w), rows);
	return w;
}

static void write_file(struct mem *m, size_t rows, const struct pq_options *opt)
{
	struct pq_writer *w = write_rows(m, rows, opt);
	assert_int_equal(pq_finish(w), 0);
	assert_string_equal(pq_strerror(w), "");
	pq_free(w);
}

static uint64_t row_value(const struct row *r, int col)
{
	switch (col) {
	case 0: return r->frame_id;
	case 1: return r->tid;
	case 2: return r->time;
	default: return r->kind;
	}
}

/* Decode every chunk and compare with make_row. Sets a bit mask of the
 * data page encodings seen per column (bit = encoding number) in row groups
 * from `seen_from` on. */
static void check_contents(const struct mem *m, size_t rows, unsigned enc_seen[NCOLS],
			   size_t seen_from)
{
	struct tnode fmd;
	parse_footer(m, &fmd);
	assert_int_equal(get_i(&fmd, 3), (int64_t)rows);
	const struct tnode *rgs = get(&fmd, 4);
	size_t row0 = 0;
	for (size_t g = 0; g < rgs->nkids; g++) {
		const struct tnode *rg = &rgs->kids[g];
		const struct tnode *chunks = get(rg, 1);
		assert_int_equal(chunks->nkids, NCOLS);
		int64_t rg_rows = get_i(rg, 3);
		for (int c = 0; c < NCOLS; c++) {
			struct column_values v = { 0 };
			int enc = decode_chunk(m, &chunks->kids[c], &v);
			if (g >= seen_from)
				enc_seen[c] |= 1u << enc;
			assert_int_equal(v.n, rg_rows);
			for (size_t i = 0; i < v.n; i++) {
				struct row r;
				make_row(row0 + i, &r);
				if (c == 4) {
					assert_int_equal(v.slen[i], strlen(r.name));
					assert_memory_equal(v.s[i], r.name, v.slen[i]);
				} else {
					assert_int_equal(v.u[i], row_value(&r, c));
				}
			}
			cv_free(&v);
		}
		row0 += (size_t)rg_rows;
	}
	assert_int_equal(row0, rows);
	tree_free(&fmd);
}

/* ---- tests ---- */

static void test_roundtrip_every_encoding_and_codec(void **state)
{
	(void)state;
	static const unsigned masks[] = { 0, PQ_ENC_PLAIN, PQ_ENC_DICT, PQ_ENC_DELTA,
					  PQ_ENC_DELTA_BYTES };
	for (int codec = 0; codec < 2; codec++) {
		for (size_t k = 0; k < sizeof(masks) / sizeof(masks[0]); k++) {
			struct mem m = { 0 };
			struct pq_options opt = { .codec = codec ? PQ_CODEC_NONE : PQ_CODEC_ZSTD,
						  .encodings = masks[k], .row_group_rows = 1500 };
			write_file(&m, 5000, &opt);
			unsigned seen[NCOLS] = { 0 };
			delta_odd_widths = 0;
			check_contents(&m, 5000, seen, 0);
			/* a forced encoding is used where it applies */
			unsigned ints = 0;
			for (int c = 0; c < 4; c++)
				ints |= seen[c];
			if (masks[k] == PQ_ENC_PLAIN)
				assert_int_equal(ints | seen[4], 1u << 0);
			if (masks[k] == PQ_ENC_DICT)
				assert_int_equal(ints | seen[4], 1u << 8);
			if (masks[k] == PQ_ENC_DELTA) {
				assert_int_equal(ints, 1u << 5);
				assert_true(delta_odd_widths > 0);
				assert_int_equal(seen[4], 1u << 0); /* strings fall back to PLAIN */
			}
			if (masks[k] == PQ_ENC_DELTA_BYTES) {
				/* byte-rounded widths only pay with compression */
				assert_int_equal(ints, codec ? 1u << 0 : 1u << 5);
				assert_int_equal(delta_odd_widths, 0);
			}
			free(m.p);
		}
	}
}

/* Pages hold at most 128Ki values: a bigger chunk has several. The first
 * page of a chunk whose encoding is being chosen holds the 32Ki values the
 * candidates were compared on. */
static void test_multi_page_chunks(void **state)
{
	(void)state;
	struct mem m = { 0 };
	write_file(&m, 300000, NULL);
	unsigned seen[NCOLS] = { 0 };
	check_contents(&m, 300000, seen, 0);
	struct tnode fmd;
	parse_footer(&m, &fmd);
	const struct tnode *chunks = get(&get(&fmd, 4)->kids[0], 1);
	const struct tnode *stats = get(get(&chunks->kids[0], 3), 13); /* encoding_stats */
	const struct tnode *data = &stats->kids[stats->nkids - 1];
	assert_int_equal(get_i(data, 1), 0);  /* DATA_PAGE */
	assert_int_equal(get_i(data, 3), 4);  /* 32Ki + 128Ki + 128Ki + the rest */
	struct column_values v = { 0 };
	decode_chunk(&m, &chunks->kids[0], &v);
	assert_int_equal(last_data_pages, 4);
	cv_free(&v);
	tree_free(&fmd);
	free(m.p);
}

static void test_auto_choices(void **state)
{
	(void)state;
	struct mem m = { 0 };
	struct pq_options opt = { .row_group_rows = 10000 };
	row_base = 4; /* no edge values: they would sway a choice on few rows */
	write_file(&m, 20000, &opt);
	unsigned seen[NCOLS] = { 0 };
	check_contents(&m, 20000, seen, 0);
	row_base = 0;
	assert_int_equal(seen[1], 1u << 8); /* tid: 3 values -> dictionary */
	assert_int_equal(seen[3], 1u << 8); /* kind: 2 values -> dictionary */
	assert_int_equal(seen[4], 1u << 8); /* name: 41 values -> dictionary */
	assert_int_equal(seen[2], 1u << 5); /* time: steady steps -> delta */
	free(m.p);
}

static const struct tnode *schema_leaf(const struct tnode *fmd, int i)
{
	return &get(fmd, 2)->kids[1 + i];
}

static void test_footer_schema_and_metadata(void **state)
{
	(void)state;
	struct mem m = { 0 };
	struct pq_options opt = { .created_by = "sftrace test" };
	write_file(&m, 10, &opt);
	struct tnode fmd;
	parse_footer(&m, &fmd);
	assert_int_equal(get_i(&fmd, 1), 1); /* version */

	const struct tnode *schema = get(&fmd, 2);
	assert_int_equal(schema->nkids, NCOLS + 1);
	const struct tnode *root = &schema->kids[0];
	assert_null(get(root, 1));
	assert_int_equal(get_i(root, 5), NCOLS);
	static const struct { int ptype, conv, logical, bits; } want[NCOLS] = {
		{ 2, 14, 10, 64 }, /* INT64 UINT_64 INTEGER(64, false) */
		{ 1, 13, 10, 32 }, /* INT32 UINT_32 INTEGER(32, false) */
		{ 2, -1, -1, 0 },  /* INT64, nothing else: ARROW:schema says Duration */
		{ 1, 13, 10, 32 },
		{ 6, 0, 1, 0 },    /* BYTE_ARRAY UTF8 STRING */
	};
	for (int i = 0; i < NCOLS; i++) {
		const struct tnode *el = schema_leaf(&fmd, i);
		const struct tnode *name = get(el, 4);
		assert_int_equal(name->blen, strlen(cols[i].name));
		assert_memory_equal(name->bin, cols[i].name, name->blen);
		assert_int_equal(get_i(el, 1), want[i].ptype);
		assert_int_equal(get_i(el, 3), 0); /* REQUIRED */
		const struct tnode *conv = get(el, 6), *lt = get(el, 10);
		if (want[i].conv < 0) {
			assert_null(conv);
			assert_null(lt);
			continue;
		}
		assert_int_equal(conv->i, want[i].conv);
		assert_non_null(lt);
		assert_int_equal(lt->nkids, 1);
		assert_int_equal(lt->kids[0].id, want[i].logical);
		if (want[i].logical == 10) {
			assert_int_equal(get_i(&lt->kids[0], 1), want[i].bits);
			assert_int_equal(get(&lt->kids[0], 2)->type, T_FALSE);
		}
	}

	const struct tnode *kv = get(&fmd, 5);
	assert_int_equal(kv->nkids, 1);
	const struct tnode *key = get(&kv->kids[0], 1), *val = get(&kv->kids[0], 2);
	assert_int_equal(key->blen, 12);
	assert_memory_equal(key->bin, "ARROW:schema", 12);
	const struct arrow_field af[NCOLS] = {
		{ "frame_id", ARROW_UINT64, 0 }, { "tid", ARROW_UINT32, 0 },
		{ "time", ARROW_DURATION_NS, 0 }, { "kind", ARROW_UINT32, 0 },
		{ "name", ARROW_UTF8, 0 },
	};
	char *b64 = arrow_schema_base64(af, NCOLS);
	assert_int_equal(val->blen, strlen(b64));
	assert_memory_equal(val->bin, b64, val->blen);
	free(b64);

	const struct tnode *by = get(&fmd, 6);
	assert_int_equal(by->blen, strlen("sftrace test"));
	const struct tnode *orders = get(&fmd, 7);
	assert_int_equal(orders->nkids, NCOLS);
	for (int i = 0; i < NCOLS; i++) {
		assert_int_equal(orders->kids[i].nkids, 1);
		assert_int_equal(orders->kids[i].kids[0].id, 1); /* TYPE_ORDER */
	}

	const struct tnode *cc = &get(&get(&fmd, 4)->kids[0], 1)->kids[4];
	const struct tnode *path = get(get(cc, 3), 3);
	assert_int_equal(path->nkids, 1);
	assert_memory_equal(path->kids[0].bin, "name", 4);
	assert_int_equal(get_i(get(cc, 3), 4), 6); /* ZSTD by default */
	tree_free(&fmd);
	free(m.p);
}

static void expect_stat(const struct tnode *st, int id, const void *bytes, size_t len)
{
	const struct tnode *f = get(st, id);
	assert_non_null(f);
	assert_int_equal(f->blen, len);
	assert_memory_equal(f->bin, bytes, len);
}

/* min/max follow each column's order: unsigned for UINT columns, signed for
 * the duration, bytes for strings (cut at 64 bytes). */
static void test_statistics(void **state)
{
	(void)state;
	static const struct pq_column sc[] = {
		{ "u64", PQ_UINT64 }, { "u32", PQ_UINT32 }, { "dur", PQ_DURATION_NS }, { "s", PQ_STRING },
	};
	static const uint64_t u64[] = { 5, UINT64_MAX, 1 };
	static const uint32_t u32[] = { 3, UINT32_MAX, 9 };
	static const int64_t dur[] = { 7, -5, 0 };
	/* e-acute then 98 z's: the max under unsigned byte order, and too
	 * long to keep whole */
	char longz[101];
	memcpy(longz, "\xc3\xa9", 2);
	memset(longz + 2, 'z', 98);
	longz[100] = 0;
	const char *s[] = { "b", longz, "a" };
	struct mem m = { 0 };
	struct pq_writer *w = pq_open(sc, 4, NULL, mem_write, &m);
	for (int i = 0; i < 3; i++) {
		pq_write_u64(w, 0, u64[i]);
		pq_write_u32(w, 1, u32[i]);
		pq_write_u64(w, 2, (uint64_t)dur[i]);
		pq_write_str(w, 3, s[i], strlen(s[i]));
		assert_int_equal(pq_end_row(w), 0);
	}
	assert_int_equal(pq_close(w), 0);

	struct tnode fmd;
	parse_footer(&m, &fmd);
	const struct tnode *chunks = get(&get(&fmd, 4)->kids[0], 1);
	const struct tnode *st[4];
	for (int c = 0; c < 4; c++) {
		st[c] = get(get(&chunks->kids[c], 3), 12);
		assert_non_null(st[c]);
		assert_int_equal(get_i(st[c], 3), 0); /* null_count */
		assert_null(get(st[c], 1));           /* no signed-order legacy max */
		assert_null(get(st[c], 2));
	}
	uint64_t lo64 = 1, hi64 = UINT64_MAX;
	expect_stat(st[0], 6, &lo64, 8);
	expect_stat(st[0], 5, &hi64, 8);
	uint32_t lo32 = 3, hi32 = UINT32_MAX;
	expect_stat(st[1], 6, &lo32, 4);
	expect_stat(st[1], 5, &hi32, 4);
	int64_t lod = -5, hid = 7;
	expect_stat(st[2], 6, &lod, 8);
	expect_stat(st[2], 5, &hid, 8);
	expect_stat(st[3], 6, "a", 1);
	assert_int_equal(get(st[3], 8)->type, T_TRUE); /* min exact */
	char cut[64];
	memcpy(cut, longz, 64);
	cut[63] = 'z' + 1; /* a 64-byte upper bound of the long value */
	expect_stat(st[3], 5, cut, 64);
	assert_int_equal(get(st[3], 7)->type, T_FALSE); /* max not exact */
	tree_free(&fmd);
	free(m.p);
}

/* Bytes that are not UTF-8 become U+FFFD (readers refuse the file
 * otherwise); valid sequences pass unchanged. */
static void test_invalid_utf8_replaced(void **state)
{
	(void)state;
#define R "\xef\xbf\xbd"
	static const char *const in_out[][2] = {
		{ "plain", "plain" },
		{ "bad\xff\xfe!", "bad" R R "!" },
		{ "cut\xc3", "cut" R },                       /* truncated sequence */
		{ "\xc0\xaf", R R },                          /* overlong '/' */
		{ "\xed\xa0\x80", R R R },                    /* UTF-16 surrogate */
		{ "\xf4\x90\x80\x80", R R R R },              /* above U+10FFFF */
		{ "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" },
		{ "", "" },
	};
#undef R
	const size_t n = sizeof(in_out) / sizeof(in_out[0]);
	static const struct pq_column sc[] = { { "s", PQ_STRING } };
	struct mem m = { 0 };
	struct pq_options opt = { .encodings = PQ_ENC_PLAIN };
	struct pq_writer *w = pq_open(sc, 1, &opt, mem_write, &m);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(pq_write_str(w, 0, in_out[i][0], strlen(in_out[i][0])), 0);
		assert_int_equal(pq_end_row(w), 0);
	}
	assert_int_equal(pq_close(w), 0);
	struct tnode fmd;
	parse_footer(&m, &fmd);
	struct column_values v = { 0 };
	decode_chunk(&m, &get(&get(&fmd, 4)->kids[0], 1)->kids[0], &v);
	assert_int_equal(v.n, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(v.slen[i], strlen(in_out[i][1]));
		assert_memory_equal(v.s[i], in_out[i][1], v.slen[i]);
	}
	cv_free(&v);
	tree_free(&fmd);
	free(m.p);
}

static void test_row_groups_layout(void **state)
{
	(void)state;
	struct mem m = { 0 };
	struct pq_options opt = { .row_group_rows = 1000 };
	write_file(&m, 2500, &opt);
	struct tnode fmd;
	parse_footer(&m, &fmd);
	const struct tnode *rgs = get(&fmd, 4);
	assert_int_equal(rgs->nkids, 3);
	static const int64_t rows[] = { 1000, 1000, 500 };
	int64_t expect_start = 4; /* after the leading magic */
	for (size_t g = 0; g < 3; g++) {
		const struct tnode *rg = &rgs->kids[g];
		assert_int_equal(get_i(rg, 3), rows[g]);
		assert_int_equal(get_i(rg, 5), expect_start); /* file_offset */
		assert_int_equal(get_i(rg, 7), (int64_t)g);   /* ordinal */
		int64_t comp = 0, unc = 0;
		const struct tnode *chunks = get(rg, 1);
		for (size_t c = 0; c < chunks->nkids; c++) {
			const struct tnode *md = get(&chunks->kids[c], 3);
			/* chunks are back to back */
			assert_int_equal(get_i(&chunks->kids[c], 2), expect_start);
			assert_int_equal(get_i(md, 5), rows[g]);
			expect_start += get_i(md, 7);
			comp += get_i(md, 7);
			unc += get_i(md, 6);
		}
		assert_int_equal(get_i(rg, 6), comp);
		assert_int_equal(get_i(rg, 2), unc);
	}
	uint32_t flen;
	memcpy(&flen, m.p + m.len - 8, 4);
	assert_int_equal(expect_start, (int64_t)(m.len - 8 - flen)); /* then the footer */
	tree_free(&fmd);
	free(m.p);
}

static void test_empty_file(void **state)
{
	(void)state;
	struct mem m = { 0 };
	struct pq_writer *w = pq_open(cols, NCOLS, NULL, mem_write, &m);
	assert_int_equal(pq_close(w), 0);
	struct tnode fmd;
	parse_footer(&m, &fmd);
	assert_int_equal(get_i(&fmd, 3), 0);
	assert_int_equal(get(&fmd, 4)->nkids, 0);
	assert_int_equal(get(&fmd, 2)->nkids, NCOLS + 1);
	tree_free(&fmd);
	free(m.p);
}

static void test_row_errors(void **state)
{
	(void)state;
	struct mem m = { 0 };
	struct pq_writer *w = pq_open(cols, NCOLS, NULL, mem_write, &m);
	assert_int_equal(pq_write_u64(w, 0, 1), 0);
	assert_int_equal(pq_end_row(w), -1); /* tid missing */
	assert_non_null(strstr(pq_strerror(w), "tid"));
	assert_int_equal(pq_write_u64(w, 0, 1), -1); /* stays failed */
	assert_int_equal(pq_finish(w), -1);
	pq_free(w);

	w = pq_open(cols, NCOLS, NULL, mem_write, &m);
	assert_int_equal(pq_write_u32(w, 0, 1), -1); /* frame_id is UINT64 */
	assert_non_null(strstr(pq_strerror(w), "frame_id"));
	pq_free(w);

	w = pq_open(cols, NCOLS, NULL, mem_write, &m);
	assert_int_equal(pq_write_u64(w, 0, 1), 0);
	assert_int_equal(pq_write_u64(w, 0, 2), -1); /* two values in one row */
	pq_free(w);

	w = pq_open(cols, NCOLS, NULL, mem_write, &m);
	assert_int_equal(pq_write_u64(w, 9, 1), -1);
	pq_free(w);

	w = pq_open(cols, NCOLS, NULL, mem_write, &m);
	assert_int_equal(pq_write_u64(w, 0, 1), 0);
	assert_int_equal(pq_finish(w), -1); /* unfinished row */
	pq_free(w);
	free(m.p);

	errno = 0;
	assert_null(pq_open(cols, 0, NULL, mem_write, &m));
	assert_int_equal(errno, EINVAL);
}

static void test_write_errors(void **state)
{
	(void)state;
	struct mem m = { .fail_at = 1 };
	errno = 0;
	assert_null(pq_open(cols, NCOLS, NULL, mem_write, &m)); /* the magic */
	assert_int_equal(errno, ENOSPC);

	/* the third write is the second column chunk of the first row group */
	m = (struct mem){ .fail_at = 3 };
	struct pq_writer *w = write_rows(&m, 100, NULL);
	assert_int_equal(pq_finish(w), -1);
	assert_non_null(strstr(pq_strerror(w), "No space left"));
	pq_free(w);
	free(m.p);

	/* a failure while flushing a full row group surfaces in pq_end_row */
	m = (struct mem){ .fail_at = 2 };
	struct pq_options opt = { .row_group_rows = 10 };
	w = pq_open(cols, NCOLS, &opt, mem_write, &m);
	int rc = 0;
	for (int i = 0; i < 10 && rc == 0; i++) {
		for (int c = 0; c < NCOLS; c++)
			rc |= c == 4 ? pq_write_str(w, c, "x", 1)
				     : c % 2 ? pq_write_u32(w, c, 1) : pq_write_u64(w, c, 1);
		rc |= pq_end_row(w);
	}
	assert_int_equal(rc, -1);
	pq_free(w);
	free(m.p);
}


/* ---- tables written with pq_write_row_u64s ---- */

/* Decode column `c` of every row group, appending to out; the data page
 * encoding of row group g goes to enc[g] (enc may be NULL). Returns the
 * number of row groups. */
static size_t decode_column(const struct mem *m, int c, struct column_values *out, int *enc)
{
	struct tnode fmd;
	parse_footer(m, &fmd);
	const struct tnode *rgs = get(&fmd, 4);
	for (size_t g = 0; g < rgs->nkids; g++) {
		int e = decode_chunk(m, &get(&rgs->kids[g], 1)->kids[c], out);
		if (enc)
			enc[g] = e;
	}
	size_t n = rgs->nkids;
	tree_free(&fmd);
	return n;
}

static const struct pq_column row_cols[] = {
	{ "a", PQ_UINT64 }, { "b", PQ_UINT32 }, { "t", PQ_DURATION_NS },
};

static void row_values(size_t i, uint64_t v[3])
{
	v[0] = i * i * 7919 + (i % 3 ? 0 : UINT64_MAX / 3);
	v[1] = i % 9 == 0 ? UINT32_MAX : (uint32_t)(i % 5);
	v[2] = (uint64_t)(int64_t)(1000 - 3 * (int64_t)i);
}

/* Whole rows and single values mix freely, row by row. */
static void test_row_api(void **state)
{
	(void)state;
	struct mem m = { 0 };
	struct pq_options opt = { .row_group_rows = 3000 };
	struct pq_writer *w = pq_open(row_cols, 3, &opt, mem_write, &m);
	const size_t rows = 10000;
	for (size_t i = 0; i < rows; i++) {
		uint64_t v[3];
		row_values(i, v);
		if (i % 1000 == 999) {
			assert_int_equal(pq_write_u64(w, 0, v[0]), 0);
			assert_int_equal(pq_write_u32(w, 1, (uint32_t)v[1]), 0);
			assert_int_equal(pq_write_u64(w, 2, v[2]), 0);
			assert_int_equal(pq_end_row(w), 0);
		} else {
			assert_int_equal(pq_write_row_u64s(w, v), 0);
		}
		assert_int_equal(pq_rows(w), i + 1);
	}
	assert_int_equal(pq_close(w), 0);
	for (int c = 0; c < 3; c++) {
		struct column_values got = { 0 };
		assert_int_equal(decode_column(&m, c, &got, NULL), 4); /* 3000 x 3 + 1000 */
		assert_int_equal(got.n, rows);
		for (size_t i = 0; i < rows; i++) {
			uint64_t v[3];
			row_values(i, v);
			assert_int_equal(got.u[i], v[c]);
		}
		cv_free(&got);
	}
	free(m.p);
}

static void test_row_api_errors(void **state)
{
	(void)state;
	struct mem m = { 0 };
	uint64_t v[3] = { 1, 2, 3 };
	struct pq_writer *w = pq_open(row_cols, 3, NULL, mem_write, &m);
	assert_int_equal(pq_write_u64(w, 0, 1), 0);
	assert_int_equal(pq_write_row_u64s(w, v), -1); /* a row already begun */
	assert_non_null(strstr(pq_strerror(w), "pq_write_row_u64s"));
	assert_int_equal(pq_write_row_u64s(w, v), -1); /* stays failed */
	pq_free(w);

	w = pq_open(cols, NCOLS, NULL, mem_write, &m); /* has a string column */
	assert_int_equal(pq_write_row_u64s(w, v), -1);
	assert_non_null(strstr(pq_strerror(w), "string"));
	pq_free(w);

	/* a PQ_UINT32 value that does not fit fails, by pq_finish at the latest */
	w = pq_open(row_cols, 3, NULL, mem_write, &m);
	int rc = 0;
	for (int i = 0; i < 10 && rc == 0; i++) {
		v[1] = i == 5 ? 1ULL << 32 : 7;
		rc = pq_write_row_u64s(w, v);
	}
	if (rc == 0)
		rc = pq_finish(w);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(pq_strerror(w), "column b"));
	pq_free(w);

	/* the same in a dictionary-encoded column, checked from its entries */
	struct pq_options dict = { .encodings = PQ_ENC_DICT };
	w = pq_open(row_cols, 3, &dict, mem_write, &m);
	v[1] = UINT64_MAX;
	assert_int_equal(pq_write_row_u64s(w, v), 0);
	assert_int_equal(pq_finish(w), -1);
	assert_non_null(strstr(pq_strerror(w), "32 bits"));
	pq_free(w);
	free(m.p);
}

/* 5 values in random order in the first 1000 rows (a dictionary wins),
 * then steady steps (delta wins). */
static uint64_t trial_value(size_t i)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ULL;
	return i < 1000 ? ((x >> 40) % 5) * 1000003 : 5000000 + 3 * i;
}

/* The encoding chosen by the trial in the first row group is kept until
 * the next trial, 8 row groups later, even if the data changes. */
static void test_trial_every_8_row_groups(void **state)
{
	(void)state;
	static const struct pq_column xc[] = { { "x", PQ_UINT64 } };
	struct mem m = { 0 };
	struct pq_options opt = { .row_group_rows = 1000 };
	struct pq_writer *w = pq_open(xc, 1, &opt, mem_write, &m);
	const size_t rows = 12000;
	for (size_t i = 0; i < rows; i++) {
		uint64_t x = trial_value(i);
		assert_int_equal(pq_write_row_u64s(w, &x), 0);
	}
	assert_int_equal(pq_close(w), 0);
	struct column_values got = { 0 };
	int enc[12];
	assert_int_equal(decode_column(&m, 0, &got, enc), 12);
	for (int g = 0; g < 12; g++)
		assert_int_equal(enc[g], g < 8 ? 8 : 5);
	for (size_t i = 0; i < rows; i++)
		assert_int_equal(got.u[i], trial_value(i));
	cv_free(&got);
	free(m.p);
}

/* A dictionary page grows with the chunk; a data page whose index width
 * no longer fits the entries ends, and the next one is wider. */
static void test_dictionary_grows(void **state)
{
	(void)state;
	static const struct pq_column xc[] = { { "x", PQ_UINT64 } };
	struct mem m = { 0 };
	struct pq_options opt = { .encodings = PQ_ENC_DICT, .codec = PQ_CODEC_NONE };
	struct pq_writer *w = pq_open(xc, 1, &opt, mem_write, &m);
	const size_t rows = 40000;
	for (size_t i = 0; i < rows; i++) {
		uint64_t x = (i / 2) * 1000 + 1000000; /* 20000 values, each twice */
		assert_int_equal(pq_write_row_u64s(w, &x), 0);
	}
	assert_int_equal(pq_close(w), 0);
	struct column_values got = { 0 };
	int enc;
	assert_int_equal(decode_column(&m, 0, &got, &enc), 1);
	assert_int_equal(enc, 8);
	assert_true(last_data_pages > 2);
	for (size_t i = 0; i < rows; i++)
		assert_int_equal(got.u[i], (i / 2) * 1000 + 1000000);
	struct tnode fmd;
	parse_footer(&m, &fmd);
	const struct tnode *st = get(get(&get(&get(&fmd, 4)->kids[0], 1)->kids[0], 3), 12);
	assert_int_equal(get_i(st, 4), 20000); /* distinct_count: the entries */
	tree_free(&fmd);
	cv_free(&got);
	free(m.p);
}

/* Runs of equal dictionary indices become RLE runs, also across the
 * writer's internal blocks; other lengths mix runs and bit-packed groups. */
static void test_rle_runs(void **state)
{
	(void)state;
	static const struct pq_column rc[] = { { "long", PQ_UINT32 }, { "mixed", PQ_UINT32 } };
	struct mem m = { 0 };
	struct pq_options opt = { .encodings = PQ_ENC_DICT, .codec = PQ_CODEC_NONE };
	struct pq_writer *w = pq_open(rc, 2, &opt, mem_write, &m);
	const size_t rows = 30000;
	uint32_t *mixed = malloc(rows * sizeof(*mixed));
	uint32_t val = 0;
	for (size_t i = 0, len = 1; i < rows; len = len % 25 + 1, val = (val + 1) % 3)
		for (size_t k = 0; k < len && i < rows; k++)
			mixed[i++] = val;
	for (size_t i = 0; i < rows; i++) {
		uint64_t v[2] = { (i / 7000) % 3, mixed[i] };
		assert_int_equal(pq_write_row_u64s(w, v), 0);
	}
	assert_int_equal(pq_close(w), 0);
	for (int c = 0; c < 2; c++) {
		struct column_values got = { 0 };
		decode_column(&m, c, &got, NULL);
		assert_int_equal(got.n, rows);
		for (size_t i = 0; i < rows; i++)
			assert_int_equal(got.u[i], c ? mixed[i] : (i / 7000) % 3);
		cv_free(&got);
	}
	/* five runs: a few bytes of data page, not 30000 x 2 bits */
	struct tnode fmd;
	parse_footer(&m, &fmd);
	const struct tnode *md = get(&get(&get(&fmd, 4)->kids[0], 1)->kids[0], 3);
	assert_true(get_i(md, 6) < 200); /* total_uncompressed_size */
	tree_free(&fmd);
	free(mixed);
	free(m.p);
}

/* Pages zstd cannot shrink are stored in raw zstd frames, which every
 * reader decompresses as usual. */
static void test_incompressible_pages_stored_raw(void **state)
{
	(void)state;
	static const struct pq_column xc[] = { { "x", PQ_UINT64 } };
	struct mem m = { 0 };
	struct pq_options opt = { .encodings = PQ_ENC_PLAIN };
	struct pq_writer *w = pq_open(xc, 1, &opt, mem_write, &m);
	const size_t rows = 300000;
	uint64_t x = 1;
	for (size_t i = 0; i < rows; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64: random bits */
		uint64_t v = x >> 8; /* zstd saves about 6%: it compresses, we do not */
		assert_int_equal(pq_write_row_u64s(w, &v), 0);
	}
	assert_int_equal(pq_close(w), 0);
	struct column_values got = { 0 };
	decode_column(&m, 0, &got, NULL);
	/* zstd saves under 10% on the first page: the next ones are stored */
	assert_int_equal(last_data_pages, 3);
	assert_int_equal(last_raw_pages, 2);
	x = 1;
	for (size_t i = 0; i < rows; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		assert_int_equal(got.u[i], x >> 8);
	}
	cv_free(&got);
	free(m.p);
}

/* Long strings: rows are encoded in smaller blocks, whatever their size. */
static void test_long_strings(void **state)
{
	(void)state;
	static const struct pq_column sc[] = { { "id", PQ_UINT64 }, { "s", PQ_STRING } };
	struct mem m = { 0 };
	struct pq_writer *w = pq_open(sc, 2, NULL, mem_write, &m);
	const size_t rows = 24, len = 300000;
	char *buf = malloc(len);
	for (size_t i = 0; i < rows; i++) {
		memset(buf, 'a' + (int)(i % 26), len);
		snprintf(buf, 16, "%05zu", i);
		assert_int_equal(pq_write_u64(w, 0, i), 0);
		assert_int_equal(pq_write_str(w, 1, buf, len - i), 0);
		assert_int_equal(pq_end_row(w), 0);
	}
	assert_int_equal(pq_close(w), 0);
	struct column_values got = { 0 };
	assert_int_equal(decode_column(&m, 1, &got, NULL), 1);
	assert_int_equal(got.n, rows);
	for (size_t i = 0; i < rows; i++) {
		memset(buf, 'a' + (int)(i % 26), len);
		snprintf(buf, 16, "%05zu", i);
		assert_int_equal(got.slen[i], len - i);
		assert_memory_equal(got.s[i], buf, len - i);
	}
	cv_free(&got);
	free(buf);
	free(m.p);
}

/* A dictionary that outgrows its limit (2^20 entries) ends the row group
 * early; the next one starts a new dictionary. */
static void test_dictionary_limit_ends_row_group(void **state)
{
	(void)state;
	static const struct pq_column xc[] = { { "x", PQ_UINT64 } };
	struct mem m = { 0 };
	struct pq_options opt = { .encodings = PQ_ENC_DICT, .row_group_rows = 4u << 20,
				  .codec = PQ_CODEC_NONE };
	struct pq_writer *w = pq_open(xc, 1, &opt, mem_write, &m);
	const size_t rows = 1100000;
	for (size_t i = 0; i < rows; i++) {
		uint64_t x = i * 3 + 1;
		assert_int_equal(pq_write_row_u64s(w, &x), 0);
	}
	assert_int_equal(pq_close(w), 0);
	struct tnode fmd;
	parse_footer(&m, &fmd);
	const struct tnode *rgs = get(&fmd, 4);
	assert_int_equal(rgs->nkids, 2);
	int64_t r0 = get_i(&rgs->kids[0], 3), r1 = get_i(&rgs->kids[1], 3);
	assert_true(r0 > (1 << 20) && r0 < (1 << 20) + 10000);
	assert_int_equal(r0 + r1, (int64_t)rows);
	struct column_values got = { 0 };
	assert_int_equal(decode_chunk(&m, &get(&rgs->kids[1], 1)->kids[0], &got), 8);
	assert_int_equal(got.n, (size_t)r1);
	for (size_t i = 0; i < got.n; i++)
		assert_int_equal(got.u[i], ((size_t)r0 + i) * 3 + 1);
	cv_free(&got);
	tree_free(&fmd);
	free(m.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_every_encoding_and_codec),
		cmocka_unit_test(test_multi_page_chunks),
		cmocka_unit_test(test_auto_choices),
		cmocka_unit_test(test_footer_schema_and_metadata),
		cmocka_unit_test(test_statistics),
		cmocka_unit_test(test_invalid_utf8_replaced),
		cmocka_unit_test(test_row_groups_layout),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_row_errors),
		cmocka_unit_test(test_write_errors),
		cmocka_unit_test(test_row_api),
		cmocka_unit_test(test_row_api_errors),
		cmocka_unit_test(test_trial_every_8_row_groups),
		cmocka_unit_test(test_dictionary_grows),
		cmocka_unit_test(test_rle_runs),
		cmocka_unit_test(test_long_strings),
		cmocka_unit_test(test_incompressible_pages_stored_raw),
		cmocka_unit_test(test_dictionary_limit_ends_row_group),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
