/* Parquet writer. File layout (Apache Parquet format spec):
 *
 *   "PAR1"
 *   per row group, per column: a column chunk = [dictionary page] data pages
 *       each page = Thrift PageHeader + body (compressed with the codec)
 *   FileMetaData (Thrift compact), its length as uint32 LE, "PAR1"
 *
 * Columns are REQUIRED and flat, so pages hold no repetition/definition
 * levels: a data page v1 body is just the encoded values.
 *
 * For each column chunk we build the candidate encodings (dictionary,
 * DELTA_BINARY_PACKED, PLAIN), drop those much larger than the best before
 * compression, compress the rest and write the smallest. Trace columns
 * differ a lot (time is monotonic, kind has two values, func_id a few
 * thousand), and no fixed choice is good for all of them.
 */
#include "output/parquet.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "lib/util.h"
#include "output/arrow_schema.h"
#include "output/thrift_compact.h"

/* parquet.thrift enums */
enum { PT_INT32 = 1, PT_INT64 = 2, PT_BYTE_ARRAY = 6 };
enum { CT_UTF8 = 0, CT_UINT_32 = 13, CT_UINT_64 = 14 };
enum { REP_REQUIRED = 0 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_DELTA_BINARY_PACKED = 5, ENC_RLE_DICTIONARY = 8 };
enum { CODEC_UNCOMPRESSED = 0, CODEC_ZSTD = 6 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };

#define PQ_MAGIC "PAR1"
#define DEFAULT_ROW_GROUP (1u << 20)
#define PAGE_VALUES (1u << 17)      /* values per data page (fixed-width) */
#define PAGE_BYTES (1u << 20)       /* plain string pages end past this */
#define MAX_STR_LEN (1u << 30)
#define RG_STRING_BYTES (256u << 20) /* flush a row group early past this */
#define DICT_MAX_ENTRIES (1u << 20)
#define DICT_MAX_BYTES (16u << 20)
#define STAT_MAX_LEN 64             /* longer string min/max are truncated */
#define DELTA_BLOCK 128
#define DELTA_MINIBLOCKS 4
#define DELTA_MINI (DELTA_BLOCK / DELTA_MINIBLOCKS)

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static uint8_t *buf_reserve(struct buf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
	return b->p + b->len;
}

static void buf_put(struct buf *b, const void *p, size_t n)
{
	if (n) {
		memcpy(buf_reserve(b, n), p, n);
		b->len += n;
	}
}

static void buf_byte(struct buf *b, uint8_t v)
{
	*buf_reserve(b, 1) = v;
	b->len++;
}

static void buf_varint(struct buf *b, uint64_t v)
{
	uint8_t *p = buf_reserve(b, 10);
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	b->len += n;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- buffered column values (one row group) ---- */

struct column {
	char *name;
	enum pq_type type;
	size_t n, cap;
	uint64_t *v64;   /* PQ_UINT64, PQ_DURATION_NS */
	uint32_t *v32;   /* PQ_UINT32 */
	struct buf str;  /* PQ_STRING bytes; value i is str[off[i] .. off[i+1]) */
	uint64_t *off;   /* n + 1 entries */
};

static int is_int64(enum pq_type t)
{
	return t == PQ_UINT64 || t == PQ_DURATION_NS;
}

static const uint8_t *str_at(const struct column *c, size_t i, size_t *len)
{
	*len = (size_t)(c->off[i + 1] - c->off[i]);
	return c->str.p + c->off[i];
}

/* ---- what the footer records ---- */

struct stats {
	int has;
	uint8_t min[STAT_MAX_LEN], max[STAT_MAX_LEN];
	size_t min_len, max_len;
	int min_exact, has_max, max_exact;
	int64_t distinct; /* -1: unknown */
};

struct chunk_meta {
	int64_t start, data_off, dict_off; /* dict_off -1: no dictionary */
	int64_t uncompressed, compressed, num_values;
	int data_enc;       /* encoding of the data pages */
	int data_pages;
	struct stats st;
};

struct rg_meta {
	int64_t rows, start, uncompressed, compressed;
	struct chunk_meta *chunks;
};


/* ---- encoders ---- */

/* One column chunk encoded one way, before compression: the dictionary page
 * body (if any) and the data page bodies back to back. */
struct encoded {
	int enc;            /* ENC_PLAIN, ENC_DELTA_BINARY_PACKED, ENC_RLE_DICTIONARY */
	struct buf dict;
	uint32_t dict_n;
	struct buf data;
	size_t *page_end;   /* end offset in data of page i */
	uint32_t *page_vals;
	int npages, pcap;
};

static void end_page(struct encoded *e, uint32_t nvals)
{
	if (e->npages == e->pcap) {
		e->pcap = e->pcap ? 2 * e->pcap : 16;
		e->page_end = xrealloc(e->page_end, (size_t)e->pcap * sizeof(*e->page_end));
		e->page_vals = xrealloc(e->page_vals, (size_t)e->pcap * sizeof(*e->page_vals));
	}
	e->page_end[e->npages] = e->data.len;
	e->page_vals[e->npages] = nvals;
	e->npages++;
}

static void encoded_reset(struct encoded *e, int enc)
{
	e->enc = enc;
	e->dict.len = 0;
	e->dict_n = 0;
	e->data.len = 0;
	e->npages = 0;
}

static void encoded_free(struct encoded *e)
{
	buf_free(&e->dict);
	buf_free(&e->data);
	free(e->page_end);
	free(e->page_vals);
	memset(e, 0, sizeof(*e));
}

static size_t encoded_size(const struct encoded *e)
{
	return e->dict.len + e->data.len;
}

static int bits_needed(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

/* Bit-pack `n` (a multiple of 8) values of `bw` bits, least significant
 * bit first, as both the RLE/bit-packing hybrid and DELTA_BINARY_PACKED
 * miniblocks want. */
static void bitpack(struct buf *o, const uint64_t *v, size_t n, int bw)
{
	if (bw == 0)
		return;
	uint8_t *p = buf_reserve(o, n * (size_t)bw / 8 + 16);
	size_t k = 0;
	unsigned __int128 acc = 0;
	int nbits = 0;
	uint64_t mask = bw == 64 ? ~0ULL : (1ULL << bw) - 1;
	for (size_t i = 0; i < n; i++) {
		acc |= (unsigned __int128)(v[i] & mask) << nbits;
		nbits += bw;
		if (nbits >= 64) {
			uint64_t lo = (uint64_t)acc;
			memcpy(p + k, &lo, 8);
			k += 8;
			acc >>= 64;
			nbits -= 64;
		}
	}
	while (nbits > 0) {
		p[k++] = (uint8_t)acc;
		acc >>= 8;
		nbits -= 8;
	}
	o->len += k;
}

static size_t run_length(const uint32_t *v, size_t i, size_t n, size_t cap)
{
	size_t j = i + 1;
	while (j < n && j - i < cap && v[j] == v[i])
		j++;
	return j - i;
}

/* RLE / bit-packing hybrid of dictionary indices (no length prefix, as in a
 * dictionary-encoded data page). Runs of 8 or more equal values become RLE
 * runs; everything else is bit-packed in groups of 8, the last group padded
 * with zeros. */
static void rle_hybrid(struct buf *o, const uint32_t *v, size_t n, int bw)
{
	uint64_t group[8];
	size_t i = 0;
	while (i < n) {
		size_t run = run_length(v, i, n, SIZE_MAX);
		if (run >= 8) {
			buf_varint(o, (uint64_t)run << 1);
			for (int b = 0; b < (bw + 7) / 8; b++)
				buf_byte(o, (uint8_t)(v[i] >> (8 * b)));
			i += run;
			continue;
		}
		size_t start = i;
		do
			i += 8;
		while (i < n && run_length(v, i, n, 8) < 8);
		if (i > n)
			i = n;
		size_t groups = (i - start + 7) / 8;
		buf_varint(o, (uint64_t)groups << 1 | 1);
		for (size_t g = 0; g < groups; g++) {
			for (size_t k = 0; k < 8; k++) {
				size_t at = start + g * 8 + k;
				group[k] = at < i ? v[at] : 0;
			}
			bitpack(o, group, 8, bw);
		}
	}
}

static void put_zigzag(struct buf *o, int64_t v)
{
	buf_varint(o, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static uint64_t value_at(const struct column *c, size_t i)
{
	return is_int64(c->type) ? c->v64[i] : c->v32[i];
}

/* Difference of consecutive values in the physical type's wrapping
 * arithmetic, sign-extended: INT32 columns use 32-bit deltas (readers
 * decode them with int32 arithmetic and reject wider miniblocks). */
static int64_t delta_at(const struct column *c, size_t i)
{
	if (is_int64(c->type))
		return (int64_t)(c->v64[i] - c->v64[i - 1]);
	return (int32_t)(c->v32[i] - c->v32[i - 1]);
}

/* One block of up to DELTA_BLOCK deltas, deltas[0..k). */
static void delta_block(struct buf *o, const int64_t *d, size_t k, uint64_t mask)
{
	int64_t min = d[0];
	for (size_t i = 1; i < k; i++)
		if (d[i] < min)
			min = d[i];
	put_zigzag(o, min);

	uint64_t u[DELTA_BLOCK] = {0};
	uint8_t widths[DELTA_MINIBLOCKS] = {0};
	for (size_t i = 0; i < k; i++) {
		u[i] = ((uint64_t)d[i] - (uint64_t)min) & mask;
		int bw = bits_needed(u[i]);
		if (bw > widths[i / DELTA_MINI])
			widths[i / DELTA_MINI] = (uint8_t)bw;
	}
	buf_put(o, widths, sizeof(widths));
	/* Miniblocks past the last value are left out entirely. */
	for (size_t m = 0; m * DELTA_MINI < k; m++)
		bitpack(o, u + m * DELTA_MINI, DELTA_MINI, widths[m]);
}

/* DELTA_BINARY_PACKED stream of values [start, end): header (block size,
 * miniblocks per block, value count, first value), then blocks. */
static void delta_page(struct buf *o, const struct column *c, size_t start, size_t end)
{
	int64_t first = is_int64(c->type) ? (int64_t)c->v64[start] : (int32_t)c->v32[start];
	uint64_t mask = is_int64(c->type) ? ~0ULL : 0xFFFFFFFFull;
	int64_t d[DELTA_BLOCK];

	buf_varint(o, DELTA_BLOCK);
	buf_varint(o, DELTA_MINIBLOCKS);
	buf_varint(o, end - start);
	put_zigzag(o, first);
	for (size_t i = start + 1; i < end;) {
		size_t k = 0;
		while (k < DELTA_BLOCK && i < end)
			d[k++] = delta_at(c, i++);
		delta_block(o, d, k, mask);
	}
}

static size_t page_end_fixed(size_t start, size_t n)
{
	return n - start > PAGE_VALUES ? start + PAGE_VALUES : n;
}

static void encode_delta(const struct column *c, struct encoded *e)
{
	encoded_reset(e, ENC_DELTA_BINARY_PACKED);
	for (size_t s = 0; s < c->n;) {
		size_t end = page_end_fixed(s, c->n);
		delta_page(&e->data, c, s, end);
		end_page(e, (uint32_t)(end - s));
		s = end;
	}
}

static void plain_value(struct buf *o, const struct column *c, size_t i)
{
	if (c->type == PQ_STRING) {
		size_t len;
		const uint8_t *s = str_at(c, i, &len);
		uint32_t l32 = (uint32_t)len;
		buf_put(o, &l32, 4);
		buf_put(o, s, len);
	} else if (is_int64(c->type)) {
		buf_put(o, &c->v64[i], 8); /* x86-64 is little-endian, as PLAIN */
	} else {
		buf_put(o, &c->v32[i], 4);
	}
}

static void encode_plain(const struct column *c, struct encoded *e)
{
	encoded_reset(e, ENC_PLAIN);
	for (size_t s = 0; s < c->n;) {
		size_t end = s, start = e->data.len;
		if (c->type == PQ_STRING) {
			while (end < c->n && e->data.len - start < PAGE_BYTES)
				plain_value(&e->data, c, end++);
		} else {
			end = page_end_fixed(s, c->n);
			size_t w = is_int64(c->type) ? 8 : 4;
			buf_put(&e->data, is_int64(c->type) ? (const void *)(c->v64 + s)
							    : (const void *)(c->v32 + s),
				(end - s) * w);
		}
		end_page(e, (uint32_t)(end - s));
		s = end;
	}
}

/* ---- dictionary ---- */

struct dict {
	uint32_t *idx;     /* per value */
	uint64_t *first;   /* per entry: row of its first occurrence */
	uint64_t *hash;    /* per entry */
	uint32_t n, cap;
	uint32_t *table;   /* entry + 1, 0 = empty */
	size_t mask;
	size_t plain_bytes;
};

static uint64_t hash_u64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return v;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return hash_u64(h);
}

static int same_value(const struct column *c, size_t a, size_t b)
{
	if (c->type != PQ_STRING)
		return value_at(c, a) == value_at(c, b);
	size_t la, lb;
	const uint8_t *pa = str_at(c, a, &la), *pb = str_at(c, b, &lb);
	return la == lb && memcmp(pa, pb, la) == 0;
}

static void dict_rehash(struct dict *d, size_t slots)
{
	free(d->table);
	d->table = xcalloc(slots, sizeof(*d->table));
	d->mask = slots - 1;
	for (uint32_t e = 0; e < d->n; e++) {
		size_t s = d->hash[e] & d->mask;
		while (d->table[s])
			s = (s + 1) & d->mask;
		d->table[s] = e + 1;
	}
}

/* Index of row i's value, adding it if new. */
static uint32_t dict_add(struct dict *d, const struct column *c, size_t i)
{
	uint64_t h;
	size_t len = 8;
	if (c->type == PQ_STRING) {
		const uint8_t *p = str_at(c, i, &len);
		h = hash_bytes(p, len);
		len += 4;
	} else {
		h = hash_u64(value_at(c, i));
		len = is_int64(c->type) ? 8 : 4;
	}
	size_t s = h & d->mask;
	for (; d->table[s]; s = (s + 1) & d->mask) {
		uint32_t e = d->table[s] - 1;
		if (d->hash[e] == h && same_value(c, d->first[e], i))
			return e;
	}
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 1024;
		d->first = xrealloc(d->first, d->cap * sizeof(*d->first));
		d->hash = xrealloc(d->hash, d->cap * sizeof(*d->hash));
	}
	uint32_t e = d->n++;
	d->first[e] = i;
	d->hash[e] = h;
	d->table[s] = e + 1;
	d->plain_bytes += len;
	if ((size_t)d->n * 2 > d->mask)
		dict_rehash(d, (d->mask + 1) * 2);
	return e;
}

/* Build the dictionary of the buffered values. Returns 0 when it does not
 * pay (too many distinct values), checked at doubling row counts so a
 * column of unique values is given up early. */
static int dict_build(struct dict *d, const struct column *c, size_t n_alloc)
{
	d->n = 0;
	d->plain_bytes = 0;
	if (!d->table || d->mask + 1 < 2048) {
		dict_rehash(d, 2048);
	} else {
		memset(d->table, 0, (d->mask + 1) * sizeof(*d->table));
	}
	if (n_alloc > 0)
		d->idx = xrealloc(d->idx, n_alloc * sizeof(*d->idx));
	size_t check = 1u << 16;
	for (size_t i = 0; i < c->n; i++) {
		d->idx[i] = dict_add(d, c, i);
		if (d->n > DICT_MAX_ENTRIES || d->plain_bytes > DICT_MAX_BYTES)
			return 0;
		if (i + 1 == check) {
			if (d->n > check / 2)
				return 0;
			check *= 2;
		}
	}
	return c->n > 0;
}

static void dict_free(struct dict *d)
{
	free(d->idx);
	free(d->first);
	free(d->hash);
	free(d->table);
	memset(d, 0, sizeof(*d));
}

static void encode_dict(const struct column *c, const struct dict *d, struct encoded *e)
{
	encoded_reset(e, ENC_RLE_DICTIONARY);
	for (uint32_t k = 0; k < d->n; k++)
		plain_value(&e->dict, c, d->first[k]);
	e->dict_n = d->n;
	int bw = bits_needed(d->n - 1);
	if (bw == 0)
		bw = 1; /* one entry: width 0 is legal but rarely exercised by readers */
	for (size_t s = 0; s < c->n;) {
		size_t end = page_end_fixed(s, c->n);
		buf_byte(&e->data, (uint8_t)bw);
		rle_hybrid(&e->data, d->idx + s, end - s, bw);
		end_page(e, (uint32_t)(end - s));
		s = end;
	}
}

struct pq_writer {
	struct column *cols;
	int ncols;
	struct pq_options opt;
	pq_write_fn write;
	void *ctx;
	int64_t offset;       /* bytes written so far */
	size_t rows;          /* complete rows in the current row group */
	uint64_t total_rows;
	size_t str_bytes;     /* string bytes buffered in this row group */
	struct rg_meta *rgs;
	size_t nrg, rgcap;
	ZSTD_CCtx *zc;
	struct tc_writer tc;  /* page headers and footer */
	struct buf chunk[2];  /* compressed candidates: best so far, trial */
	struct buf zbuf;      /* one compressed page */
	struct dict dict;     /* scratch, reused across chunks */
	struct encoded cand[3];
	int failed;
	char err[256];
};

static int fail(struct pq_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct pq_writer *w, const char *fmt, ...)
{
	if (!w->failed) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->err, sizeof(w->err), fmt, ap);
		va_end(ap);
		w->failed = 1;
	}
	return -1;
}

static int emit(struct pq_writer *w, const void *p, size_t n)
{
	if (w->write(w->ctx, p, n) < 0)
		return fail(w, "write failed: %s", strerror(errno));
	w->offset += (int64_t)n;
	return 0;
}

/* ---- statistics ---- */

static void stat_set(uint8_t *dst, size_t *dlen, const void *src, size_t len)
{
	memcpy(dst, src, len);
	*dlen = len;
}

static void stats_int(const struct column *c, struct stats *st)
{
	if (c->type == PQ_DURATION_NS) {
		int64_t lo = (int64_t)c->v64[0], hi = lo;
		for (size_t i = 1; i < c->n; i++) {
			int64_t v = (int64_t)c->v64[i];
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		stat_set(st->min, &st->min_len, &lo, 8);
		stat_set(st->max, &st->max_len, &hi, 8);
	} else if (c->type == PQ_UINT64) {
		uint64_t lo = c->v64[0], hi = lo;
		for (size_t i = 1; i < c->n; i++) {
			lo = c->v64[i] < lo ? c->v64[i] : lo;
			hi = c->v64[i] > hi ? c->v64[i] : hi;
		}
		stat_set(st->min, &st->min_len, &lo, 8);
		stat_set(st->max, &st->max_len, &hi, 8);
	} else {
		uint32_t lo = c->v32[0], hi = lo;
		for (size_t i = 1; i < c->n; i++) {
			lo = c->v32[i] < lo ? c->v32[i] : lo;
			hi = c->v32[i] > hi ? c->v32[i] : hi;
		}
		stat_set(st->min, &st->min_len, &lo, 4);
		stat_set(st->max, &st->max_len, &hi, 4);
	}
	st->min_exact = st->max_exact = st->has_max = 1;
}

static int bytes_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
	int r = memcmp(a, b, la < lb ? la : lb);
	return r ? r : (la > lb) - (la < lb);
}

/* Byte-wise min/max. Values longer than STAT_MAX_LEN are cut: the min to a
 * prefix (still a lower bound), the max to a prefix whose last byte is
 * incremented (an upper bound), after dropping trailing 0xFF bytes. */
static void stats_str(const struct column *c, struct stats *st)
{
	size_t lo = 0, hi = 0;
	for (size_t i = 1; i < c->n; i++) {
		size_t la, lb;
		const uint8_t *a = str_at(c, i, &la);
		const uint8_t *m = str_at(c, lo, &lb);
		if (bytes_cmp(a, la, m, lb) < 0)
			lo = i;
		m = str_at(c, hi, &lb);
		if (bytes_cmp(a, la, m, lb) > 0)
			hi = i;
	}
	size_t len;
	const uint8_t *p = str_at(c, lo, &len);
	st->min_exact = len <= STAT_MAX_LEN;
	stat_set(st->min, &st->min_len, p, st->min_exact ? len : STAT_MAX_LEN);

	p = str_at(c, hi, &len);
	st->max_exact = len <= STAT_MAX_LEN;
	st->has_max = 1;
	if (st->max_exact) {
		stat_set(st->max, &st->max_len, p, len);
		return;
	}
	size_t k = STAT_MAX_LEN;
	while (k > 0 && p[k - 1] == 0xFF)
		k--;
	if (k == 0) {
		st->has_max = 0;
		return;
	}
	stat_set(st->max, &st->max_len, p, k);
	st->max[k - 1]++;
}

static void column_stats(const struct column *c, struct stats *st)
{
	memset(st, 0, sizeof(*st));
	st->distinct = -1;
	if (c->n == 0)
		return;
	st->has = 1;
	if (c->type == PQ_STRING)
		stats_str(c, st);
	else
		stats_int(c, st);
}

/* ---- pages and chunks ---- */

static int compress_page(struct pq_writer *w, const uint8_t *p, size_t n,
			 const uint8_t **out, size_t *out_len)
{
	if (w->opt.codec == PQ_CODEC_NONE) {
		*out = p;
		*out_len = n;
		return 0;
	}
	size_t bound = ZSTD_compressBound(n);
	w->zbuf.len = 0;
	buf_reserve(&w->zbuf, bound);
	size_t r = ZSTD_compressCCtx(w->zc, w->zbuf.p, bound, p, n, w->opt.zstd_level);
	if (ZSTD_isError(r))
		return fail(w, "zstd: %s", ZSTD_getErrorName(r));
	*out = w->zbuf.p;
	*out_len = r;
	return 0;
}

/* Append one page (header + compressed body) to `chunk`. Adds the sizes,
 * header included, to *unc / *comp. */
static int put_page(struct pq_writer *w, struct buf *chunk, int type, const uint8_t *body,
		    size_t n, uint32_t nvals, int enc, int64_t *unc, int64_t *comp)
{
	const uint8_t *z = NULL;
	size_t zn = 0;
	if (n > INT32_MAX)
		return fail(w, "page too large");
	if (compress_page(w, body, n, &z, &zn) < 0)
		return -1;
	if (zn > INT32_MAX)
		return fail(w, "page too large");

	struct tc_writer *t = &w->tc;
	tc_reset(t);
	tc_struct_open(t);
	tc_i32(t, 1, type);
	tc_i32(t, 2, (int32_t)n);
	tc_i32(t, 3, (int32_t)zn);
	if (type == PAGE_DICTIONARY) {
		tc_struct_begin(t, 7);
		tc_i32(t, 1, (int32_t)nvals);
		tc_i32(t, 2, ENC_PLAIN);
		tc_struct_end(t);
	} else {
		tc_struct_begin(t, 5);
		tc_i32(t, 1, (int32_t)nvals);
		tc_i32(t, 2, enc);
		tc_i32(t, 3, ENC_RLE); /* levels: none stored (REQUIRED, flat) */
		tc_i32(t, 4, ENC_RLE);
		tc_struct_end(t);
	}
	tc_struct_end(t);
	buf_put(chunk, t->buf, t->len);
	buf_put(chunk, z, zn);
	*unc += (int64_t)(t->len + n);
	*comp += (int64_t)(t->len + zn);
	return 0;
}

/* Compress candidate `e` into `chunk` (page headers + bodies); fills the
 * size/offset fields of `m` relative to the chunk start. */
static int build_chunk(struct pq_writer *w, const struct encoded *e, struct buf *chunk,
		       struct chunk_meta *m)
{
	chunk->len = 0;
	m->uncompressed = m->compressed = 0;
	m->dict_off = -1;
	m->data_off = 0;
	m->data_enc = e->enc;
	m->data_pages = e->npages;
	if (e->enc == ENC_RLE_DICTIONARY) {
		m->dict_off = 0;
		if (put_page(w, chunk, PAGE_DICTIONARY, e->dict.p, e->dict.len, e->dict_n, ENC_PLAIN,
			     &m->uncompressed, &m->compressed) < 0)
			return -1;
		m->data_off = (int64_t)chunk->len;
	}
	size_t start = 0;
	for (int i = 0; i < e->npages; i++) {
		if (put_page(w, chunk, PAGE_DATA, e->data.p + start, e->page_end[i] - start,
			     e->page_vals[i], e->enc, &m->uncompressed, &m->compressed) < 0)
			return -1;
		start = e->page_end[i];
	}
	return 0;
}

static unsigned allowed(const struct pq_writer *w, unsigned enc)
{
	return (w->opt.encodings ? w->opt.encodings : ~0u) & enc;
}

/* Build the candidates for column `c`. Returns how many. */
static int candidates(struct pq_writer *w, const struct column *c, struct dict *d,
		      struct encoded *cand)
{
	int n = 0;
	if (allowed(w, PQ_ENC_DICT) && dict_build(d, c, c->cap)) {
		encode_dict(c, d, &cand[n++]);
	}
	if (c->type != PQ_STRING && allowed(w, PQ_ENC_DELTA))
		encode_delta(c, &cand[n++]);
	/* PLAIN only when asked for or when nothing else is much smaller:
	 * it rarely wins and costs a full compression pass. */
	size_t plain = c->type == PQ_STRING ? c->str.len + 4 * c->n
					    : c->n * (is_int64(c->type) ? 8 : 4);
	int want_plain = n == 0;
	if (allowed(w, PQ_ENC_PLAIN) && !want_plain) {
		want_plain = 1;
		for (int i = 0; i < n; i++)
			if (encoded_size(&cand[i]) * 2 < plain)
				want_plain = 0;
	}
	if (want_plain)
		encode_plain(c, &cand[n++]);
	return n;
}

/* Encode, pick and write the chunk of column `ci` in the current row group. */
static int write_chunk(struct pq_writer *w, int ci, struct chunk_meta *m)
{
	struct column *c = &w->cols[ci];
	struct encoded *cand = w->cand;
	int nc = candidates(w, c, &w->dict, cand);

	size_t best_enc = SIZE_MAX;
	for (int i = 0; i < nc; i++)
		if (encoded_size(&cand[i]) < best_enc)
			best_enc = encoded_size(&cand[i]);

	int best = -1;
	struct chunk_meta trial = {0};
	for (int i = 0; i < nc; i++) {
		if (encoded_size(&cand[i]) > 2 * best_enc + 64)
			continue;
		struct buf *dst = &w->chunk[best < 0 ? 0 : 1];
		if (build_chunk(w, &cand[i], dst, &trial) < 0)
			return -1;
		if (best < 0 || trial.compressed < m->compressed) {
			if (best >= 0) {
				struct buf tmp = w->chunk[0];
				w->chunk[0] = w->chunk[1];
				w->chunk[1] = tmp;
			}
			*m = trial;
			best = i;
		}
	}
	column_stats(c, &m->st);
	if (cand[best].enc == ENC_RLE_DICTIONARY)
		m->st.distinct = w->dict.n;

	m->start = w->offset;
	m->data_off += w->offset;
	if (m->dict_off >= 0)
		m->dict_off += w->offset;
	m->num_values = (int64_t)c->n;
	return emit(w, w->chunk[0].p, w->chunk[0].len);
}

static int flush_row_group(struct pq_writer *w)
{
	if (w->rows == 0 || w->failed)
		return w->failed ? -1 : 0;
	if (w->nrg == w->rgcap) {
		w->rgcap = w->rgcap ? 2 * w->rgcap : 8;
		w->rgs = xrealloc(w->rgs, w->rgcap * sizeof(*w->rgs));
	}
	struct rg_meta *rg = &w->rgs[w->nrg];
	memset(rg, 0, sizeof(*rg));
	rg->chunks = xcalloc((size_t)w->ncols, sizeof(*rg->chunks));
	rg->rows = (int64_t)w->rows;
	rg->start = w->offset;
	w->nrg++;
	for (int i = 0; i < w->ncols; i++) {
		if (write_chunk(w, i, &rg->chunks[i]) < 0)
			return -1;
		rg->uncompressed += rg->chunks[i].uncompressed;
		rg->compressed += rg->chunks[i].compressed;
		w->cols[i].n = 0;
		w->cols[i].str.len = 0;
	}
	w->rows = 0;
	w->str_bytes = 0;
	return 0;
}

/* ---- footer ---- */

static int physical_type(enum pq_type t)
{
	return t == PQ_UINT32 ? PT_INT32 : t == PQ_STRING ? PT_BYTE_ARRAY : PT_INT64;
}

static void footer_schema(struct tc_writer *t, const struct pq_writer *w)
{
	tc_list(t, 2, TC_STRUCT, (uint32_t)w->ncols + 1);
	tc_struct_open(t);
	tc_string(t, 4, "schema");
	tc_i32(t, 5, w->ncols);
	tc_struct_end(t);
	for (int i = 0; i < w->ncols; i++) {
		const struct column *c = &w->cols[i];
		tc_struct_open(t);
		tc_i32(t, 1, physical_type(c->type));
		tc_i32(t, 3, REP_REQUIRED);
		tc_string(t, 4, c->name);
		if (c->type == PQ_UINT64 || c->type == PQ_UINT32) {
			tc_i32(t, 6, c->type == PQ_UINT64 ? CT_UINT_64 : CT_UINT_32);
			tc_struct_begin(t, 10);     /* LogicalType */
			tc_struct_begin(t, 10);     /* .INTEGER: IntType */
			tc_i8(t, 1, c->type == PQ_UINT64 ? 64 : 32);
			tc_bool(t, 2, 0);
			tc_struct_end(t);
			tc_struct_end(t);
		} else if (c->type == PQ_STRING) {
			tc_i32(t, 6, CT_UTF8);
			tc_struct_begin(t, 10);     /* LogicalType */
			tc_struct_begin(t, 1);      /* .STRING: StringType {} */
			tc_struct_end(t);
			tc_struct_end(t);
		}
		tc_struct_end(t);
	}
}

static void footer_stats(struct tc_writer *t, const struct stats *st)
{
	tc_struct_begin(t, 12);
	tc_i64(t, 3, 0); /* null_count */
	if (st->distinct >= 0)
		tc_i64(t, 4, st->distinct);
	if (st->has) {
		if (st->has_max)
			tc_binary(t, 5, st->max, st->max_len);
		tc_binary(t, 6, st->min, st->min_len);
		if (st->has_max)
			tc_bool(t, 7, st->max_exact);
		tc_bool(t, 8, st->min_exact);
	}
	tc_struct_end(t);
}

static void footer_encodings(struct tc_writer *t, const struct chunk_meta *m)
{
	int dict = m->dict_off >= 0;
	tc_list(t, 2, TC_I32, dict ? 3 : 2);
	if (dict || m->data_enc == ENC_PLAIN)
		tc_put_i32(t, ENC_PLAIN);
	tc_put_i32(t, ENC_RLE);
	if (m->data_enc != ENC_PLAIN)
		tc_put_i32(t, m->data_enc);
}

/* encoding_stats: how many pages of each kind, so readers can tell that
 * every data page is dictionary-encoded. */
static void footer_encoding_stats(struct tc_writer *t, const struct chunk_meta *m)
{
	int dict = m->dict_off >= 0;
	tc_list(t, 13, TC_STRUCT, dict ? 2 : 1);
	if (dict) {
		tc_struct_open(t);
		tc_i32(t, 1, PAGE_DICTIONARY);
		tc_i32(t, 2, ENC_PLAIN);
		tc_i32(t, 3, 1);
		tc_struct_end(t);
	}
	tc_struct_open(t);
	tc_i32(t, 1, PAGE_DATA);
	tc_i32(t, 2, m->data_enc);
	tc_i32(t, 3, m->data_pages);
	tc_struct_end(t);
}

static void footer_chunk(struct tc_writer *t, const struct pq_writer *w, int ci,
			 const struct chunk_meta *m)
{
	const struct column *c = &w->cols[ci];
	tc_struct_open(t);              /* ColumnChunk */
	tc_i64(t, 2, m->start);         /* file_offset */
	tc_struct_begin(t, 3);          /* meta_data */
	tc_i32(t, 1, physical_type(c->type));
	footer_encodings(t, m);
	tc_list(t, 3, TC_BINARY, 1);
	tc_put_binary(t, c->name, strlen(c->name));
	tc_i32(t, 4, w->opt.codec == PQ_CODEC_NONE ? CODEC_UNCOMPRESSED : CODEC_ZSTD);
	tc_i64(t, 5, m->num_values);
	tc_i64(t, 6, m->uncompressed);
	tc_i64(t, 7, m->compressed);
	tc_i64(t, 9, m->data_off);
	if (m->dict_off >= 0)
		tc_i64(t, 11, m->dict_off);
	footer_stats(t, &m->st);
	footer_encoding_stats(t, m);
	tc_struct_end(t);
	tc_struct_end(t);
}

static void footer_row_groups(struct tc_writer *t, const struct pq_writer *w)
{
	tc_list(t, 4, TC_STRUCT, (uint32_t)w->nrg);
	for (size_t r = 0; r < w->nrg; r++) {
		const struct rg_meta *rg = &w->rgs[r];
		tc_struct_open(t);
		tc_list(t, 1, TC_STRUCT, (uint32_t)w->ncols);
		for (int i = 0; i < w->ncols; i++)
			footer_chunk(t, w, i, &rg->chunks[i]);
		tc_i64(t, 2, rg->uncompressed); /* total_byte_size */
		tc_i64(t, 3, rg->rows);
		tc_i64(t, 5, rg->start);        /* file_offset */
		tc_i64(t, 6, rg->compressed);   /* total_compressed_size */
		tc_i16(t, 7, (int16_t)r);       /* ordinal */
		tc_struct_end(t);
	}
}

static void footer_arrow_schema(struct tc_writer *t, const struct pq_writer *w)
{
	static const enum arrow_type map[] = {
		[PQ_UINT64] = ARROW_UINT64,
		[PQ_UINT32] = ARROW_UINT32,
		[PQ_DURATION_NS] = ARROW_DURATION_NS,
		[PQ_STRING] = ARROW_UTF8,
	};
	struct arrow_field *f = xcalloc((size_t)w->ncols, sizeof(*f));
	for (int i = 0; i < w->ncols; i++) {
		f[i].name = w->cols[i].name;
		f[i].type = map[w->cols[i].type];
		f[i].nullable = 0;
	}
	char *b64 = arrow_schema_base64(f, w->ncols);
	tc_list(t, 5, TC_STRUCT, 1);
	tc_struct_open(t);
	tc_string(t, 1, "ARROW:schema");
	tc_string(t, 2, b64);
	tc_struct_end(t);
	free(b64);
	free(f);
}

static int write_footer(struct pq_writer *w)
{
	struct tc_writer *t = &w->tc;
	tc_reset(t);
	tc_struct_open(t);
	tc_i32(t, 1, 1); /* version */
	footer_schema(t, w);
	tc_i64(t, 3, (int64_t)w->total_rows);
	footer_row_groups(t, w);
	footer_arrow_schema(t, w);
	tc_string(t, 6, w->opt.created_by ? w->opt.created_by : "sftrace");
	/* column_orders: TypeDefinedOrder for every column, which makes min/max
	 * of UINT columns compare unsigned. */
	tc_list(t, 7, TC_STRUCT, (uint32_t)w->ncols);
	for (int i = 0; i < w->ncols; i++) {
		tc_struct_open(t);
		tc_struct_begin(t, 1);
		tc_struct_end(t);
		tc_struct_end(t);
	}
	tc_struct_end(t);

	uint8_t tail[8];
	uint32_t len = (uint32_t)t->len;
	memcpy(tail, &len, 4);
	memcpy(tail + 4, PQ_MAGIC, 4);
	if (emit(w, t->buf, t->len) < 0 || emit(w, tail, 8) < 0)
		return -1;
	return 0;
}

/* ---- public API ---- */

static void column_grow(struct column *c, size_t limit)
{
	size_t cap = c->cap ? c->cap * 2 : 4096;
	if (cap > limit)
		cap = limit;
	if (cap <= c->n)
		cap = c->n + 1;
	if (is_int64(c->type))
		c->v64 = xrealloc(c->v64, cap * sizeof(*c->v64));
	else if (c->type == PQ_UINT32)
		c->v32 = xrealloc(c->v32, cap * sizeof(*c->v32));
	else
		c->off = xrealloc(c->off, (cap + 1) * sizeof(*c->off));
	c->cap = cap;
}

struct pq_writer *pq_open(const struct pq_column *cols, int ncols,
			  const struct pq_options *opt, pq_write_fn write, void *ctx)
{
	if (!cols || ncols <= 0 || !write) {
		errno = EINVAL;
		return NULL;
	}
	for (int i = 0; i < ncols; i++) {
		if (!cols[i].name || cols[i].type < PQ_UINT64 || cols[i].type > PQ_STRING) {
			errno = EINVAL;
			return NULL;
		}
	}
	struct pq_writer *w = xcalloc(1, sizeof(*w));
	if (opt)
		w->opt = *opt;
	if (w->opt.row_group_rows == 0)
		w->opt.row_group_rows = DEFAULT_ROW_GROUP;
	if (w->opt.zstd_level == 0)
		w->opt.zstd_level = 3;
	w->write = write;
	w->ctx = ctx;
	w->ncols = ncols;
	w->cols = xcalloc((size_t)ncols, sizeof(*w->cols));
	for (int i = 0; i < ncols; i++) {
		w->cols[i].name = xstrdup(cols[i].name);
		w->cols[i].type = cols[i].type;
		column_grow(&w->cols[i], w->opt.row_group_rows);
		if (cols[i].type == PQ_STRING)
			w->cols[i].off[0] = 0;
	}
	tc_init(&w->tc);
	if (w->opt.codec != PQ_CODEC_NONE) {
		w->zc = ZSTD_createCCtx();
		if (!w->zc) {
			pq_free(w);
			errno = ENOMEM;
			return NULL;
		}
	}
	if (emit(w, PQ_MAGIC, 4) < 0) {
		int e = errno;
		pq_free(w);
		errno = e;
		return NULL;
	}
	return w;
}

static struct column *value_slot(struct pq_writer *w, int col, enum pq_type a, enum pq_type b)
{
	if (w->failed)
		return NULL;
	if (col < 0 || col >= w->ncols) {
		fail(w, "column %d out of range", col);
		return NULL;
	}
	struct column *c = &w->cols[col];
	if (c->type != a && c->type != b) {
		fail(w, "column %s: wrong value type", c->name);
		return NULL;
	}
	if (c->n > w->rows) {
		fail(w, "column %s: two values in one row", c->name);
		return NULL;
	}
	if (c->n == c->cap)
		column_grow(c, w->opt.row_group_rows);
	return c;
}

int pq_write_u64(struct pq_writer *w, int col, uint64_t v)
{
	struct column *c = value_slot(w, col, PQ_UINT64, PQ_DURATION_NS);
	if (!c)
		return -1;
	c->v64[c->n++] = v;
	return 0;
}

int pq_write_u32(struct pq_writer *w, int col, uint32_t v)
{
	struct column *c = value_slot(w, col, PQ_UINT32, PQ_UINT32);
	if (!c)
		return -1;
	c->v32[c->n++] = v;
	return 0;
}

int pq_write_str(struct pq_writer *w, int col, const char *s, size_t len)
{
	struct column *c = value_slot(w, col, PQ_STRING, PQ_STRING);
	if (!c)
		return -1;
	if (len > MAX_STR_LEN)
		return fail(w, "column %s: string of %zu bytes is too long", c->name, len);
	buf_put(&c->str, s, len);
	c->n++;
	c->off[c->n] = c->str.len;
	w->str_bytes += len;
	return 0;
}

int pq_end_row(struct pq_writer *w)
{
	if (w->failed)
		return -1;
	for (int i = 0; i < w->ncols; i++)
		if (w->cols[i].n != w->rows + 1)
			return fail(w, "row %llu: column %s has no value",
				    (unsigned long long)w->total_rows, w->cols[i].name);
	w->rows++;
	w->total_rows++;
	if (w->rows >= w->opt.row_group_rows || w->str_bytes >= RG_STRING_BYTES)
		return flush_row_group(w);
	return 0;
}

int pq_finish(struct pq_writer *w)
{
	if (w->failed)
		return -1;
	for (int i = 0; i < w->ncols; i++)
		if (w->cols[i].n != w->rows)
			return fail(w, "unfinished row at close");
	if (flush_row_group(w) < 0)
		return -1;
	if (write_footer(w) < 0)
		return -1;
	return 0;
}

int pq_close(struct pq_writer *w)
{
	int rc = pq_finish(w);
	pq_free(w);
	return rc;
}

void pq_free(struct pq_writer *w)
{
	if (!w)
		return;
	for (int i = 0; i < w->ncols; i++) {
		struct column *c = &w->cols[i];
		free(c->name);
		free(c->v64);
		free(c->v32);
		free(c->off);
		buf_free(&c->str);
	}
	free(w->cols);
	for (size_t r = 0; r < w->nrg; r++)
		free(w->rgs[r].chunks);
	free(w->rgs);
	ZSTD_freeCCtx(w->zc);
	tc_free(&w->tc);
	buf_free(&w->chunk[0]);
	buf_free(&w->chunk[1]);
	buf_free(&w->zbuf);
	dict_free(&w->dict);
	for (int i = 0; i < 3; i++)
		encoded_free(&w->cand[i]);
	free(w);
}

const char *pq_strerror(const struct pq_writer *w)
{
	return w->err;
}

uint64_t pq_rows(const struct pq_writer *w)
{
	return w->total_rows;
}

int pq_fd_write(void *ctx, const void *buf, size_t len)
{
	int fd = *(const int *)ctx;
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
