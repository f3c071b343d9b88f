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
 * For each column chunk we try the applicable encodings (dictionary,
 * DELTA_BINARY_PACKED with exact or byte-rounded widths, PLAIN) on its first
 * page, compress the trials, and encode the chunk with the smallest. Trace
 * columns differ a lot (time is monotonic, kind has two values, func_id a
 * few thousand), and no fixed choice is good for all of them.
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
#define TRIAL_VALUES (1u << 15)     /* values encoded to choose an encoding */
#define MAX_STR_LEN (1u << 28)
#define RG_STRING_BYTES (256u << 20) /* flush a row group early past this */
#define DICT_MAX_ENTRIES (1u << 20)
#define DICT_MAX_BYTES (16u << 20)
#define DIRECT_RANGE (1u << 16)
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


/* ---- encoders: each writes the body of one data page ---- */

/* The ways a column chunk can be encoded. */
enum method {
	M_PLAIN,
	M_DICT,        /* dictionary page + RLE_DICTIONARY indices */
	M_DELTA,       /* DELTA_BINARY_PACKED, narrowest miniblock widths */
	M_DELTA_BYTES, /* the same with widths rounded up to whole bytes */
	M_COUNT
};

static int method_encoding(enum method m)
{
	static const int enc[M_COUNT] = {
		[M_PLAIN] = ENC_PLAIN,
		[M_DICT] = ENC_RLE_DICTIONARY,
		[M_DELTA] = ENC_DELTA_BINARY_PACKED,
		[M_DELTA_BYTES] = ENC_DELTA_BINARY_PACKED,
	};
	return enc[m];
}

static int bits_needed(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

/* Bit-pack `n` (a multiple of 8) values of `bw` bits, least significant
 * bit first, as both the RLE/bit-packing hybrid and DELTA_BINARY_PACKED
 * miniblocks want. Values must fit in `bw` bits. */
static void bitpack(struct buf *o, const uint64_t *v, size_t n, int bw)
{
	if (bw == 0)
		return;
	uint8_t *p = buf_reserve(o, n * (size_t)bw / 8 + 16);
	size_t k = 0;
	if (bw % 8 == 0) {
		/* whole bytes: the low bytes of each little-endian value */
		for (size_t i = 0; i < n; i++, k += (size_t)bw / 8)
			memcpy(p + k, &v[i], (size_t)bw / 8);
	} else if (bw <= 32) {
		uint64_t acc = 0;
		int nbits = 0;
		for (size_t i = 0; i < n; i++) {
			acc |= v[i] << nbits;
			nbits += bw;
			if (nbits >= 32) {
				uint32_t lo = (uint32_t)acc;
				memcpy(p + k, &lo, 4);
				k += 4;
				acc >>= 32;
				nbits -= 32;
			}
		}
		for (; nbits > 0; nbits -= 8, acc >>= 8)
			p[k++] = (uint8_t)acc;
	} else {
		unsigned __int128 acc = 0;
		int nbits = 0;
		for (size_t i = 0; i < n; i++) {
			acc |= (unsigned __int128)v[i] << nbits;
			nbits += bw;
			if (nbits >= 64) {
				uint64_t lo = (uint64_t)acc;
				memcpy(p + k, &lo, 8);
				k += 8;
				acc >>= 64;
				nbits -= 64;
			}
		}
		for (; nbits > 0; nbits -= 8, acc >>= 8)
			p[k++] = (uint8_t)acc;
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

/* One block of k <= DELTA_BLOCK deltas: min delta, one width per
 * miniblock, then the miniblocks (those past the last value left out). */
static void delta_block(struct buf *o, const int64_t *d, size_t k, uint64_t mask, int bytes)
{
	int64_t min = d[0];
	for (size_t i = 1; i < k; i++)
		min = d[i] < min ? d[i] : min;
	put_zigzag(o, min);

	uint64_t u[DELTA_BLOCK] = {0};
	uint8_t widths[DELTA_MINIBLOCKS] = {0};
	for (size_t m = 0; m * DELTA_MINI < k; m++) {
		uint64_t any = 0;
		for (size_t i = m * DELTA_MINI; i < k && i < (m + 1) * DELTA_MINI; i++) {
			u[i] = ((uint64_t)d[i] - (uint64_t)min) & mask;
			any |= u[i];
		}
		int bw = bits_needed(any);
		widths[m] = (uint8_t)(bytes ? (bw + 7) / 8 * 8 : bw);
	}
	buf_put(o, widths, sizeof(widths));
	for (size_t m = 0; m * DELTA_MINI < k; m++)
		bitpack(o, u + m * DELTA_MINI, DELTA_MINI, widths[m]);
}

/* DELTA_BINARY_PACKED stream of values [start, end): header (block size,
 * miniblocks per block, value count, first value), then blocks. Deltas use
 * the physical type's wrapping arithmetic: INT32 columns get 32-bit deltas
 * (readers decode them in int32 and reject wider miniblocks). */
static void delta_page(struct buf *o, const struct column *c, size_t start, size_t end,
		       int bytes)
{
	int wide = is_int64(c->type);
	int64_t first = wide ? (int64_t)c->v64[start] : (int32_t)c->v32[start];
	uint64_t mask = wide ? ~0ULL : 0xFFFFFFFFull;
	int64_t d[DELTA_BLOCK];

	buf_varint(o, DELTA_BLOCK);
	buf_varint(o, DELTA_MINIBLOCKS);
	buf_varint(o, end - start);
	put_zigzag(o, first);
	for (size_t i = start + 1; i < end;) {
		size_t k = end - i < DELTA_BLOCK ? end - i : DELTA_BLOCK;
		if (wide) {
			for (size_t j = 0; j < k; j++)
				d[j] = (int64_t)(c->v64[i + j] - c->v64[i + j - 1]);
		} else {
			for (size_t j = 0; j < k; j++)
				d[j] = (int32_t)(c->v32[i + j] - c->v32[i + j - 1]);
		}
		delta_block(o, d, k, mask, bytes);
		i += k;
	}
}

static void plain_string(struct buf *o, const struct column *c, size_t i)
{
	size_t len;
	const uint8_t *s = str_at(c, i, &len);
	uint32_t l32 = (uint32_t)len;
	buf_put(o, &l32, 4);
	buf_put(o, s, len);
}

/* PLAIN values [start, end); x86-64 is little-endian, as PLAIN is. */
static void plain_page(struct buf *o, const struct column *c, size_t start, size_t end)
{
	if (c->type == PQ_STRING) {
		for (size_t i = start; i < end; i++)
			plain_string(o, c, i);
	} else if (is_int64(c->type)) {
		buf_put(o, c->v64 + start, (end - start) * 8);
	} else {
		buf_put(o, c->v32 + start, (end - start) * 4);
	}
}

/* ---- dictionary ---- */

struct dict_slot {
	uint64_t key;  /* the value (integers) or its hash (strings) */
	uint32_t e1;   /* entry + 1; 0 = empty */
};

struct dict {
	uint32_t *idx;          /* per value: its entry */
	uint64_t *first;        /* per entry: row of its first occurrence */
	uint32_t n, cap;
	struct dict_slot *table;
	size_t mask;            /* slots - 1 */
	int shift;              /* 64 - log2(slots) */
	size_t plain_bytes;     /* size of the dictionary page */
	int bw;                 /* index bit width */
	uint32_t *direct;       /* DIRECT_RANGE slots: entry + 1 of value lo + i */
};

/* Slot of a key: Fibonacci hashing, the top bits of key * 2^64/phi. */
static size_t dict_home(const struct dict *d, uint64_t key)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> d->shift);
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static void dict_resize(struct dict *d, size_t slots)
{
	struct dict_slot *old = d->table;
	size_t old_n = old ? d->mask + 1 : 0;
	d->table = xcalloc(slots, sizeof(*d->table));
	d->mask = slots - 1;
	d->shift = 64 - bits_needed(d->mask);
	for (size_t i = 0; i < old_n; i++) {
		if (!old[i].e1)
			continue;
		size_t s = dict_home(d, old[i].key);
		while (d->table[s].e1)
			s = (s + 1) & d->mask;
		d->table[s] = old[i];
	}
	free(old);
}

static uint32_t dict_insert(struct dict *d, size_t s, uint64_t key, size_t row, size_t bytes)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 1024;
		d->first = xrealloc(d->first, d->cap * sizeof(*d->first));
	}
	uint32_t e = d->n++;
	d->first[e] = row;
	d->table[s].key = key;
	d->table[s].e1 = e + 1;
	d->plain_bytes += bytes;
	if ((size_t)d->n * 2 > d->mask)
		dict_resize(d, (d->mask + 1) * 2);
	return e;
}

static uint32_t dict_add_int(struct dict *d, uint64_t v, size_t row, size_t width)
{
	size_t s = dict_home(d, v);
	for (; d->table[s].e1; s = (s + 1) & d->mask)
		if (d->table[s].key == v)
			return d->table[s].e1 - 1;
	return dict_insert(d, s, v, row, width);
}

static uint32_t dict_add_str(struct dict *d, const struct column *c, size_t row)
{
	size_t len, elen;
	const uint8_t *p = str_at(c, row, &len);
	uint64_t h = hash_bytes(p, len);
	size_t s = dict_home(d, h);
	for (; d->table[s].e1; s = (s + 1) & d->mask) {
		if (d->table[s].key != h)
			continue;
		uint32_t e = d->table[s].e1 - 1;
		const uint8_t *q = str_at(c, d->first[e], &elen);
		if (elen == len && memcmp(p, q, len) == 0)
			return e;
	}
	return dict_insert(d, s, h, row, len + 4);
}

/* Give up when the dictionary grows too big to pay; checked at doubling row
 * counts from 16Ki, so a column of unique values costs little. */
static int dict_hopeless(const struct dict *d, size_t rows, size_t *check)
{
	if (d->n > DICT_MAX_ENTRIES || d->plain_bytes > DICT_MAX_BYTES)
		return 1;
	if (rows == *check) {
		*check *= 2;
		return d->n > rows / 2;
	}
	return 0;
}

static void dict_start(struct dict *d, const struct column *c)
{
	d->n = 0;
	d->plain_bytes = 0;
	d->idx = xrealloc(d->idx, (c->cap ? c->cap : 1) * sizeof(*d->idx));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Renumber entries by decreasing frequency: frequent values get small
 * indices, whose bit patterns zstd then compresses better (a few percent
 * on func_id). */
static void dict_sort(struct dict *d, const struct column *c)
{
	uint64_t *key = xcalloc(d->n, sizeof(*key));
	uint32_t *rank = xmalloc(d->n * sizeof(*rank));
	uint64_t *first = xmalloc(d->n * sizeof(*first));
	for (size_t i = 0; i < c->n; i++)
		key[d->idx[i]] += 1ULL << 32;
	/* ascending order of (UINT32_MAX - count, entry) */
	for (uint32_t e = 0; e < d->n; e++)
		key[e] = ((uint64_t)UINT32_MAX << 32) - (key[e] & ~0xFFFFFFFFULL) + e;
	qsort(key, d->n, sizeof(*key), cmp_u64);
	for (uint32_t k = 0; k < d->n; k++) {
		uint32_t e = (uint32_t)key[k];
		rank[e] = k;
		first[k] = d->first[e];
	}
	memcpy(d->first, first, d->n * sizeof(*first));
	for (size_t i = 0; i < c->n; i++)
		d->idx[i] = rank[d->idx[i]];
	free(key);
	free(rank);
	free(first);
}

static int dict_finish(struct dict *d, const struct column *c)
{
	if (d->n > 1)
		dict_sort(d, c);
	d->bw = bits_needed(d->n > 1 ? d->n - 1 : 1); /* >= 1: width 0 is rarely exercised */
	return c->n > 0;
}

/* Unsigned columns whose values span less than DIRECT_RANGE (tid, kind,
 * func_id): entries are found by indexing an array with value - lo, which
 * is several times faster than hashing. */
static int dict_build_direct(struct dict *d, const struct column *c, uint64_t lo)
{
	dict_start(d, c);
	if (!d->direct)
		d->direct = xcalloc(DIRECT_RANGE, sizeof(*d->direct));
	size_t check = 1u << 14, width = is_int64(c->type) ? 8 : 4;
	int ok = 1;
	for (size_t i = 0; i < c->n && ok; i++) {
		uint64_t v = width == 8 ? c->v64[i] : c->v32[i];
		uint32_t *slot = &d->direct[v - lo];
		if (!*slot) {
			if (d->n == d->cap) {
				d->cap = d->cap ? 2 * d->cap : 1024;
				d->first = xrealloc(d->first, d->cap * sizeof(*d->first));
			}
			d->first[d->n] = i;
			*slot = ++d->n;
			d->plain_bytes += width;
		}
		d->idx[i] = *slot - 1;
		ok = !dict_hopeless(d, i + 1, &check);
	}
	/* Leave the array zeroed for the next chunk. */
	for (uint32_t e = 0; e < d->n; e++) {
		uint64_t v = width == 8 ? c->v64[d->first[e]] : c->v32[d->first[e]];
		d->direct[v - lo] = 0;
	}
	return ok && dict_finish(d, c);
}

/* Build the dictionary of the buffered values. Returns 0 if it does not pay.
 * `st` holds the column's min/max, for the direct-index case. */
static int dict_build(struct dict *d, const struct column *c, const struct stats *st)
{
	if ((c->type == PQ_UINT64 || c->type == PQ_UINT32) && st->has) {
		uint64_t lo = 0, hi = 0;
		memcpy(&lo, st->min, st->min_len);
		memcpy(&hi, st->max, st->max_len);
		if (hi - lo < DIRECT_RANGE)
			return dict_build_direct(d, c, lo);
	}
	dict_start(d, c);
	if (d->table)
		memset(d->table, 0, (d->mask + 1) * sizeof(*d->table));
	else
		dict_resize(d, 4096);
	size_t check = 1u << 14, width = is_int64(c->type) ? 8 : 4;
	uint64_t prev = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (c->type == PQ_STRING) {
			d->idx[i] = dict_add_str(d, c, i);
		} else {
			uint64_t v = width == 8 ? c->v64[i] : c->v32[i];
			/* runs of one value skip the hash table */
			d->idx[i] = i && v == prev ? d->idx[i - 1] : dict_add_int(d, v, i, width);
			prev = v;
		}
		if (dict_hopeless(d, i + 1, &check))
			return 0;
	}
	return dict_finish(d, c);
}

static void dict_free(struct dict *d)
{
	free(d->idx);
	free(d->first);
	free(d->table);
	free(d->direct);
	memset(d, 0, sizeof(*d));
}

/* The dictionary page body: the entries, PLAIN. */
static void dict_page(struct buf *o, const struct column *c, const struct dict *d)
{
	for (uint32_t k = 0; k < d->n; k++) {
		size_t row = d->first[k];
		if (c->type == PQ_STRING)
			plain_string(o, c, row);
		else
			plain_page(o, c, row, row + 1);
	}
}

static void dict_data_page(struct buf *o, const struct dict *d, size_t start, size_t end)
{
	buf_byte(o, (uint8_t)d->bw);
	rle_hybrid(o, d->idx + start, end - start, d->bw);
}

/* Where the data page starting at `start` ends: a fixed number of values,
 * or for PLAIN strings about PAGE_BYTES of data. */
static size_t page_end(const struct column *c, enum method m, size_t start)
{
	if (c->type == PQ_STRING && m == M_PLAIN) {
		size_t end = start;
		while (end < c->n && c->off[end] - c->off[start] < PAGE_BYTES)
			end++;
		return end > start ? end : start + 1;
	}
	return c->n - start > PAGE_VALUES ? start + PAGE_VALUES : c->n;
}

static void encode_page(struct buf *o, const struct column *c, const struct dict *d,
			enum method m, size_t start, size_t end)
{
	switch (m) {
	case M_DICT:
		dict_data_page(o, d, start, end);
		break;
	case M_DELTA:
	case M_DELTA_BYTES:
		delta_page(o, c, start, end, m == M_DELTA_BYTES);
		break;
	case M_PLAIN:
	case M_COUNT:
		plain_page(o, c, start, end);
		break;
	}
}

/* ---- the writer ---- */

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
	struct dict dict;     /* scratch, reused across chunks */
	struct buf page;      /* one encoded page */
	struct buf zbuf;      /* one compressed page */
	struct buf trial[M_COUNT]; /* column chunk bytes per method */
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
 * header included, to m->uncompressed / m->compressed. */
static int put_page(struct pq_writer *w, struct buf *chunk, int type, const struct buf *body,
		    size_t nvals, int enc, struct chunk_meta *m)
{
	const uint8_t *z = NULL;
	size_t zn = 0;
	if (body->len > INT32_MAX)
		return fail(w, "page too large");
	if (compress_page(w, body->p, body->len, &z, &zn) < 0)
		return -1;
	if (zn > INT32_MAX)
		return fail(w, "page too large");

	struct tc_writer *t = &w->tc;
	tc_reset(t);
	tc_struct_open(t);
	tc_i32(t, 1, type);
	tc_i32(t, 2, (int32_t)body->len);
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
	m->uncompressed += (int64_t)(t->len + body->len);
	m->compressed += (int64_t)(t->len + zn);
	return 0;
}

/* Encode and compress values [0, limit) of column `c` with `method` into
 * `chunk`: the dictionary page if any, then data pages. Fills m's sizes,
 * offsets (relative to the chunk) and num_values. */
static int build_chunk(struct pq_writer *w, const struct column *c, enum method method,
		       size_t limit, struct buf *chunk, struct chunk_meta *m)
{
	memset(m, 0, sizeof(*m));
	chunk->len = 0;
	m->dict_off = -1;
	m->data_enc = method_encoding(method);
	if (method == M_DICT) {
		m->dict_off = 0;
		w->page.len = 0;
		dict_page(&w->page, c, &w->dict);
		if (put_page(w, chunk, PAGE_DICTIONARY, &w->page, w->dict.n, ENC_PLAIN, m) < 0)
			return -1;
		m->data_off = (int64_t)chunk->len;
	}
	if (limit > c->n)
		limit = c->n;
	for (size_t s = 0; s < limit;) {
		size_t end = page_end(c, method, s);
		end = end < limit ? end : limit;
		w->page.len = 0;
		encode_page(&w->page, c, &w->dict, method, s, end);
		if (put_page(w, chunk, PAGE_DATA, &w->page, end - s, m->data_enc, m) < 0)
			return -1;
		m->data_pages++;
		s = end;
	}
	m->num_values = (int64_t)limit;
	return 0;
}

static int allowed(const struct pq_writer *w, enum method m)
{
	static const unsigned bit[M_COUNT] = {
		[M_PLAIN] = PQ_ENC_PLAIN, [M_DICT] = PQ_ENC_DICT,
		[M_DELTA] = PQ_ENC_DELTA, [M_DELTA_BYTES] = PQ_ENC_DELTA_BYTES,
	};
	return (w->opt.encodings ? w->opt.encodings : ~0u) & bit[m];
}

/* The methods worth trying on column `c` (builds the dictionary). PLAIN
 * is the fallback when nothing else is allowed. */
static int methods(struct pq_writer *w, const struct column *c, const struct stats *st,
		   enum method *out)
{
	int n = 0;
	if (allowed(w, M_DICT) && dict_build(&w->dict, c, st))
		out[n++] = M_DICT;
	if (c->type != PQ_STRING) {
		if (allowed(w, M_DELTA))
			out[n++] = M_DELTA;
		/* Byte-aligned widths help zstd find repeats; without
		 * compression they only cost space. */
		if (allowed(w, M_DELTA_BYTES) && w->opt.codec != PQ_CODEC_NONE)
			out[n++] = M_DELTA_BYTES;
	}
	if (allowed(w, M_PLAIN) || n == 0)
		out[n++] = M_PLAIN;
	return n;
}

/* Compressed size of the whole chunk, extrapolated from a trial on its
 * first values (the dictionary page counts once). */
static double estimate(const struct column *c, const struct chunk_meta *m, size_t dict_bytes)
{
	double data = (double)(m->compressed - (int64_t)dict_bytes);
	return (double)dict_bytes + data * (double)c->n / (double)(m->num_values ? m->num_values : 1);
}

/* Encode column `ci` of the current row group, keeping the method whose
 * trial compresses best, and write it. */
static int write_chunk(struct pq_writer *w, int ci, struct chunk_meta *m)
{
	struct column *c = &w->cols[ci];
	enum method cand[M_COUNT];
	struct stats st;
	column_stats(c, &st);
	int nc = methods(w, c, &st, cand);

	/* Trial: the first TRIAL_VALUES values with each method. */
	int best = 0;
	double best_size = 0;
	for (int i = 0; i < nc && nc > 1; i++) {
		struct chunk_meta t;
		if (build_chunk(w, c, cand[i], TRIAL_VALUES, &w->trial[cand[i]], &t) < 0)
			return -1;
		size_t dict_bytes = t.dict_off >= 0 ? (size_t)t.data_off : 0;
		double size = estimate(c, &t, dict_bytes);
		if (i == 0 || size < best_size) {
			best = i;
			best_size = size;
			*m = t;
		}
	}
	struct buf *chunk = &w->trial[cand[best]];
	if (nc == 1 || (size_t)m->num_values < c->n) {
		if (build_chunk(w, c, cand[best], c->n, chunk, m) < 0)
			return -1;
	}

	m->st = st;
	if (cand[best] == M_DICT)
		m->st.distinct = w->dict.n;
	m->start = w->offset;
	m->data_off += w->offset;
	if (m->dict_off >= 0)
		m->dict_off += w->offset;
	return emit(w, chunk->p, chunk->len);
}

static int flush_row_group(struct pq_writer *w)
{
	if (w->failed)
		return -1;
	if (w->rows == 0)
		return 0;
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

/* Length of the valid UTF-8 sequence at p (n > 0 bytes left), or 0
 * (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const uint8_t *p, size_t n)
{
	uint8_t b = p[0];
	if (b < 0x80)
		return 1;
	size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
	uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
	if (b < 0xC2 || b > 0xF4 || n < len)
		return 0;
	if (b == 0xE0)
		lo = 0xA0;
	else if (b == 0xED)
		hi = 0x9F;
	else if (b == 0xF0)
		lo = 0x90;
	else if (b == 0xF4)
		hi = 0x8F;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (p[k] < 0x80 || p[k] > 0xBF)
			return 0;
	return len;
}

/* Append s, replacing each byte that is not part of valid UTF-8 with
 * U+FFFD: polars and DuckDB refuse a whole file over one bad string, and
 * symbol names are bytes from ELF files. */
static void put_utf8(struct buf *o, const uint8_t *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t start = i, k;
		while (i < len && (k = utf8_seq(s + i, len - i)) > 0)
			i += k;
		buf_put(o, s + start, i - start);
		if (i < len) {
			buf_put(o, "\xEF\xBF\xBD", 3);
			i++;
		}
	}
}

int pq_write_str(struct pq_writer *w, int col, const char *s, size_t len)
{
	struct column *c = value_slot(w, col, PQ_STRING, PQ_STRING);
	if (!c)
		return -1;
	if (len > MAX_STR_LEN)
		return fail(w, "column %s: string of %zu bytes is too long", c->name, len);
	put_utf8(&c->str, (const uint8_t *)s, len);
	c->n++;
	c->off[c->n] = c->str.len;
	w->str_bytes += c->off[c->n] - c->off[c->n - 1];
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
	buf_free(&w->page);
	buf_free(&w->zbuf);
	for (int i = 0; i < M_COUNT; i++)
		buf_free(&w->trial[i]);
	dict_free(&w->dict);
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
