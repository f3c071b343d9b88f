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
 * The pipeline streams, so that the working set stays in cache whatever the
 * row group size (a first version buffered whole row groups and spent most
 * of its time waiting for memory):
 *
 *   rows -> staging block (STAGE_ROWS values per column)
 *        -> per column, a page encoder (dictionary indices as RLE/bit-packed
 *           runs, DELTA_BINARY_PACKED blocks, or PLAIN), fed block by block
 *        -> a full page is compressed and appended to the column's chunk
 *           buffer (compressed bytes only)
 *        -> at the end of the row group: dictionary page + chunk are written
 *
 * Choosing an encoding: trace columns differ a lot (time is monotonic, kind
 * has two values, func_id a few thousand), and no fixed choice is good for
 * all of them. So the first TRIAL_VALUES values of a chunk go through every
 * applicable encoder; their pages are compressed and the smallest wins for
 * the rest of the chunk and the next row groups. Trials run again every
 * TRIAL_EVERY row groups (the data may change), not on every chunk: a trial
 * costs several encoders and compressions.
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
#include "output/protobuf.h"
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
#define DEFAULT_ZSTD_LEVEL 3
#define STAGE_ROWS 1024u            /* rows staged before encoding (48 KiB for 6 columns) */
#define STAGE_STR_BYTES (1u << 20)  /* ... or fewer, past this many string bytes */
#define PAGE_VALUES (1u << 17)      /* values per data page */
#define PAGE_BYTES (1u << 20)       /* pages also end past this many bytes */
#define TRIAL_VALUES (1u << 15)     /* values encoded every way to choose */
#define TRIAL_EVERY 8               /* row groups from one trial to the next */
#define CHUNK_MAX_BYTES (256u << 20)/* end a row group early past this */
#define MAX_STR_LEN (1u << 28)
#define DICT_MAX_ENTRIES (1u << 20)
#define DICT_MAX_BYTES (16u << 20)
#define STAT_MAX_LEN 64             /* longer string min/max are truncated */
#define DELTA_BLOCK 128
#define DELTA_MINIBLOCKS 4
#define DELTA_MINI (DELTA_BLOCK / DELTA_MINIBLOCKS)
#define PAGE_HEADROOM 32            /* room before a page body for its DELTA header */
#define RLE_LIT_MAX 512             /* values per bit-packed run */
#define RAW_RATIO 0.9               /* zstd output above this share of its input: */
#define RAW_RUN 7                   /* ... store that many pages raw, then retry */
#define RAW_MIN_BYTES (64u << 10)   /* (judged on pages this big: small ones have
				     * relatively big zstd headers) */
#define RAW_BLOCK (128u << 10)      /* largest zstd block */

/* Growable byte buffers are protobuf.h's (ULEB128 varints and zigzag are
 * the same encodings in Parquet's DELTA headers). A zeroed one is empty. */
static void buf_put(struct pb_buf *b, const void *p, size_t n)
{
	if (n) {
		memcpy(pb_buf_reserve(b, n), p, n);
		b->len += n;
	}
}

static void buf_byte(struct pb_buf *b, uint8_t v)
{
	*pb_buf_reserve(b, 1) = v;
	b->len++;
}

static void buf_varint(struct pb_buf *b, uint64_t v)
{
	pb_put_varint(b, v);
}

static int bits_needed(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
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

/* ---- bit packing ---- */

/* Whole bytes: the low nb bytes of each little-endian value. A constant
 * nb (see pack) makes this a plain load/store loop. */
static inline __attribute__((always_inline)) uint8_t *pack_bytes(uint8_t *p, const uint64_t *v,
								size_t n, const size_t nb)
{
	for (size_t i = 0; i < n; i++, p += nb)
		memcpy(p, &v[i], 8);
	return p;
}

/* Pack n values (n * bw a multiple of 8) of bw bits each, least significant
 * bit first, as both the RLE/bit-packing hybrid and DELTA_BINARY_PACKED
 * miniblocks want. Values must fit in bw bits. Writes up to 8 bytes past
 * the packed data (the caller reserves them); returns the end of the data. */
static uint8_t *pack(uint8_t *p, const uint64_t *v, size_t n, int bw)
{
	switch (bw) {
	case 0: return p;
	case 8: return pack_bytes(p, v, n, 1);
	case 16: return pack_bytes(p, v, n, 2);
	case 24: return pack_bytes(p, v, n, 3);
	case 32: return pack_bytes(p, v, n, 4);
	case 40: return pack_bytes(p, v, n, 5);
	case 48: return pack_bytes(p, v, n, 6);
	case 56: return pack_bytes(p, v, n, 7);
	case 64: return pack_bytes(p, v, n, 8);
	}
	uint64_t acc = 0;
	int nbits = 0;
	for (size_t i = 0; i < n; i++) {
		acc |= v[i] << nbits;
		nbits += bw;
		if (nbits >= 64) {
			memcpy(p, &acc, 8);
			p += 8;
			nbits -= 64;
			acc = nbits ? v[i] >> (bw - nbits) : 0;
		}
	}
	memcpy(p, &acc, 8);
	return p + nbits / 8;
}

/* ---- page encoders ----
 *
 * A page body is built in `body` after PAGE_HEADROOM bytes (where the DELTA
 * header goes once the value count is known). Encoders take values block
 * by block and keep what does not yet form a whole unit (a DELTA block, an
 * RLE run) in their state. */

struct penc {
	struct pb_buf body;
	size_t nvals;
	/* M_DICT: index width of this page and RLE/bit-packing state */
	int bw;
	uint64_t run_val;
	size_t run_len;       /* the open RLE run */
	uint64_t lit[RLE_LIT_MAX];
	size_t nlit;          /* literals not yet written (whole groups) */
	uint32_t grp[8];
	size_t ngrp;          /* values of the next group */
	/* M_DELTA*: first value, last value, deltas not yet in a block and
	 * their minimum */
	uint64_t first, prev;
	uint64_t pend[DELTA_BLOCK];
	size_t npend;
	int64_t dmin;
};

static void penc_start(struct penc *p)
{
	p->body.len = 0;
	pb_buf_reserve(&p->body, PAGE_HEADROOM);
	p->body.len = PAGE_HEADROOM;
	p->nvals = 0;
	p->run_len = 0;
	p->nlit = 0;
	p->ngrp = 0;
	p->npend = 0;
	p->dmin = INT64_MAX;
}

/* -- RLE / bit-packing hybrid (dictionary indices) --
 * Values go in groups of 8: a group of 8 equal values starts or extends an
 * RLE run, any other group is bit-packed. Looking for runs only at group
 * boundaries is much faster than finding every run of 8, and zstd takes
 * care of what it misses. */

/* Write the buffered literals as one bit-packed run. Only the last run of a
 * page may end with a partial group of 8 (padded with zeros). */
static void lit_flush(struct penc *p)
{
	if (p->nlit == 0)
		return;
	size_t groups = (p->nlit + 7) / 8;
	for (size_t i = p->nlit; i < groups * 8; i++)
		p->lit[i] = 0;
	buf_varint(&p->body, (uint64_t)groups << 1 | 1);
	uint8_t *o = pb_buf_reserve(&p->body, groups * (size_t)p->bw + 8);
	p->body.len = (size_t)(pack(o, p->lit, groups * 8, p->bw) - p->body.data);
	p->nlit = 0;
}

static void lit_add(struct penc *p, const uint32_t *v, size_t k)
{
	for (size_t i = 0; i < k; i++)
		p->lit[p->nlit + i] = v[i];
	p->nlit += k;
	if (p->nlit == RLE_LIT_MAX)
		lit_flush(p);
}

/* Write the open run. A run of one group between literals costs less as
 * literals (no run headers). */
static void run_flush(struct penc *p)
{
	if (p->run_len == 8 && p->nlit) {
		uint32_t g[8];
		for (int k = 0; k < 8; k++)
			g[k] = (uint32_t)p->run_val;
		lit_add(p, g, 8);
	} else if (p->run_len) {
		lit_flush(p);
		buf_varint(&p->body, (uint64_t)p->run_len << 1);
		uint8_t *o = pb_buf_reserve(&p->body, 8);
		memcpy(o, &p->run_val, 8);
		p->body.len += (size_t)(p->bw + 7) / 8;
	}
	p->run_len = 0;
}

static void group_put(struct penc *p, const uint32_t *g)
{
	uint32_t x = g[0];
	uint32_t diff = (g[1] ^ x) | (g[2] ^ x) | (g[3] ^ x) | (g[4] ^ x) | (g[5] ^ x) | (g[6] ^ x) |
			(g[7] ^ x);
	if (diff == 0) {
		if (p->run_len && p->run_val == x) {
			p->run_len += 8;
			return;
		}
		run_flush(p);
		p->run_val = x;
		p->run_len = 8;
		return;
	}
	run_flush(p);
	lit_add(p, g, 8);
}

static void rle_put(struct penc *p, const uint32_t *v, size_t n)
{
	size_t i = 0;
	while (p->ngrp && i < n) {
		p->grp[p->ngrp++] = v[i++];
		if (p->ngrp == 8) {
			group_put(p, p->grp);
			p->ngrp = 0;
		}
	}
	for (; i + 8 <= n; i += 8)
		group_put(p, v + i);
	while (i < n)
		p->grp[p->ngrp++] = v[i++];
}

/* The last values: a partial group extends the run if it can. */
static void rle_finish(struct penc *p)
{
	size_t k = 0;
	while (k < p->ngrp && p->run_len && p->grp[k] == p->run_val)
		k++;
	if (k == p->ngrp) {
		p->run_len += k;
	} else {
		run_flush(p);
		lit_add(p, p->grp, p->ngrp);
	}
	p->ngrp = 0;
	run_flush(p);
	lit_flush(p);
}

/* -- DELTA_BINARY_PACKED -- */

/* One block of k <= DELTA_BLOCK deltas: min delta, one width per
 * miniblock, then the miniblocks (those past the last value left out; a
 * partial last miniblock is padded with zeros). `mask` keeps INT32 columns
 * in 32 bits (readers decode them in int32 and reject wider miniblocks). */
static void delta_block(struct penc *p, uint64_t mask, int bytes)
{
	size_t k = p->npend;
	int64_t min = p->dmin;
	uint64_t u[DELTA_BLOCK];
	uint8_t widths[DELTA_MINIBLOCKS] = { 0 };
	size_t minis = (k + DELTA_MINI - 1) / DELTA_MINI;
	for (size_t i = k; i < minis * DELTA_MINI; i++)
		p->pend[i] = (uint64_t)min; /* pads with zeros below */
	for (size_t m = 0; m < minis; m++) {
		uint64_t any = 0;
		const uint64_t *d = p->pend + m * DELTA_MINI;
		uint64_t *um = u + m * DELTA_MINI;
		for (size_t i = 0; i < DELTA_MINI; i++) {
			um[i] = (d[i] - (uint64_t)min) & mask;
			any |= um[i];
		}
		int bw = bits_needed(any);
		widths[m] = (uint8_t)(bytes ? (bw + 7) / 8 * 8 : bw);
	}
	uint8_t *o = pb_buf_reserve(&p->body, 10 + DELTA_MINIBLOCKS + DELTA_BLOCK * 8 + 8);
	o = pb_enc_varint(o, pb_zigzag64(min));
	memcpy(o, widths, DELTA_MINIBLOCKS);
	o += DELTA_MINIBLOCKS;
	for (size_t m = 0; m < minis; m++)
		o = pack(o, u + m * DELTA_MINI, DELTA_MINI, widths[m]);
	p->body.len = (size_t)(o - p->body.data);
	p->npend = 0;
	p->dmin = INT64_MAX;
}

/* Min/max of a column chunk so far, in the column's order. Signed columns
 * have their sign bit flipped, which maps signed order onto unsigned. */
struct range {
	uint64_t flip, lo, hi;
};

/* k more deltas into the pending block; `wide` is a constant at each call,
 * so the loop has no test for it. */
static inline __attribute__((always_inline)) void delta_run(struct penc *p, const uint64_t *x,
							    size_t stride, size_t k,
							    struct range *r, const int wide)
{
	uint64_t *d = p->pend + p->npend;
	uint64_t prev = p->prev, lo = r->lo, hi = r->hi, flip = r->flip;
	int64_t dmin = p->dmin;
	for (size_t j = 0; j < k; j++, x += stride) {
		uint64_t v = *x, y = v ^ flip, dj = v - prev;
		if (!wide)
			dj = (uint64_t)(int64_t)(int32_t)(uint32_t)dj;
		d[j] = dj;
		dmin = (int64_t)dj < dmin ? (int64_t)dj : dmin;
		prev = v;
		lo = y < lo ? y : lo;
		hi = y > hi ? y : hi;
	}
	p->dmin = dmin;
	p->prev = prev;
	p->npend += k;
	r->lo = lo;
	r->hi = hi;
}

/* Values are src[0], src[stride], ... (a column of the row-major staging
 * block). Deltas use the physical type's wrapping arithmetic: 64 bits, or
 * 32 bits sign-extended for INT32 columns. With `r`, the values also go
 * into that min/max: one pass over them instead of two. */
static void delta_put(struct penc *p, const uint64_t *src, size_t stride, size_t n, int wide,
		      int bytes, struct range *r)
{
	uint64_t mask = wide ? ~0ULL : 0xFFFFFFFFull;
	struct range none = { 0, UINT64_MAX, 0 };
	if (!r)
		r = &none;
	size_t i = 0;
	if (n && p->nvals == 0) {
		p->prev = p->first = src[0]; /* its delta is not stored */
		i = 1;
		r->lo = (src[0] ^ r->flip) < r->lo ? src[0] ^ r->flip : r->lo;
		r->hi = (src[0] ^ r->flip) > r->hi ? src[0] ^ r->flip : r->hi;
	}
	p->nvals += n;
	while (i < n) {
		size_t k = DELTA_BLOCK - p->npend;
		k = n - i < k ? n - i : k;
		if (wide)
			delta_run(p, src + i * stride, stride, k, r, 1);
		else
			delta_run(p, src + i * stride, stride, k, r, 0);
		i += k;
		if (p->npend == DELTA_BLOCK)
			delta_block(p, mask, bytes);
	}
}

/* Flush the last block and put the header (block size, miniblocks per
 * block, value count, first value) in front of the blocks. Returns where
 * the page body now starts. */
static size_t delta_finish(struct penc *p, int wide, int bytes)
{
	if (p->npend)
		delta_block(p, wide ? ~0ULL : 0xFFFFFFFFull, bytes);
	uint8_t hdr[PAGE_HEADROOM], *h = hdr;
	h = pb_enc_varint(h, DELTA_BLOCK);
	h = pb_enc_varint(h, DELTA_MINIBLOCKS);
	h = pb_enc_varint(h, p->nvals);
	h = pb_enc_varint(h, pb_zigzag64(wide ? (int64_t)p->first : (int32_t)(uint32_t)p->first));
	size_t hl = (size_t)(h - hdr);
	memcpy(p->body.data + PAGE_HEADROOM - hl, hdr, hl);
	return PAGE_HEADROOM - hl;
}

/* ---- dictionary ---- */

struct dict_slot {
	uint64_t key;  /* the value (integers) or its hash (strings) */
	uint32_t e1;   /* entry + 1; 0 = empty */
};

/* Entries in order of first appearance. The dictionary page body (the
 * entries, PLAIN) is built as entries come, and is where string entries
 * are compared. */
struct dict {
	struct pb_buf page;
	uint32_t *off;          /* strings: entry e starts at page.data + off[e] */
	uint32_t n, offcap;
	struct dict_slot *table;
	size_t mask;            /* slots - 1 */
	int shift;              /* 64 - log2(slots) */
	uint32_t *small;        /* entry + 1 of integer keys below SMALL_KEYS
				 * (kind, small enums): no hashing */
	struct dict_slot *cache;/* DICT_CACHE slots, direct-mapped: the table
				 * of a column like func_id outgrows L1 */
	int too_wide;           /* an entry of a 4-byte column had more bits */
};

#define SMALL_KEYS 1024u
#define DICT_CACHE_BITS 9
#define DICT_CACHE (1u << DICT_CACHE_BITS)

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

static void dict_reset(struct dict *d)
{
	if (!d->table) {
		dict_resize(d, 1024);
		d->small = xcalloc(SMALL_KEYS, sizeof(*d->small));
		d->cache = xcalloc(DICT_CACHE, sizeof(*d->cache));
	} else if (d->n) {
		memset(d->table, 0, (d->mask + 1) * sizeof(*d->table));
		memset(d->small, 0, SMALL_KEYS * sizeof(*d->small));
		memset(d->cache, 0, DICT_CACHE * sizeof(*d->cache));
	}
	d->n = 0;
	d->page.len = 0;
	d->too_wide = 0;
}

static uint32_t dict_insert(struct dict *d, size_t s, uint64_t key)
{
	uint32_t e = d->n++;
	d->table[s].key = key;
	d->table[s].e1 = e + 1;
	if ((size_t)d->n * 2 > d->mask)
		dict_resize(d, (d->mask + 1) * 2);
	return e;
}

static uint32_t dict_int(struct dict *d, uint64_t v, size_t width)
{
	if (v < SMALL_KEYS) {
		if (!d->small[v]) {
			buf_put(&d->page, &v, width);
			d->small[v] = ++d->n;
		}
		return d->small[v] - 1;
	}
	size_t s = dict_home(d, v);
	for (; d->table[s].e1; s = (s + 1) & d->mask)
		if (d->table[s].key == v)
			return d->table[s].e1 - 1;
	buf_put(&d->page, &v, width); /* little-endian: the low bytes */
	d->too_wide |= width == 4 && v > UINT32_MAX;
	return dict_insert(d, s, v);
}

static const uint8_t *dict_str_at(const struct dict *d, uint32_t e, uint32_t *len)
{
	memcpy(len, d->page.data + d->off[e], 4);
	return d->page.data + d->off[e] + 4;
}

static uint32_t dict_str(struct dict *d, const uint8_t *p, uint32_t len)
{
	uint64_t h = hash_bytes(p, len);
	size_t s = dict_home(d, h);
	for (; d->table[s].e1; s = (s + 1) & d->mask) {
		uint32_t e = d->table[s].e1 - 1, elen;
		if (d->table[s].key != h)
			continue;
		const uint8_t *q = dict_str_at(d, e, &elen);
		if (elen == len && memcmp(p, q, len) == 0)
			return e;
	}
	if (d->n == d->offcap) {
		d->offcap = d->offcap ? 2 * d->offcap : 1024;
		d->off = xrealloc(d->off, d->offcap * sizeof(*d->off));
	}
	d->off[d->n] = (uint32_t)d->page.len;
	buf_put(&d->page, &len, 4);
	buf_put(&d->page, p, len);
	return dict_insert(d, s, h);
}

static void dict_free(struct dict *d)
{
	pb_buf_free(&d->page);
	free(d->off);
	free(d->table);
	free(d->small);
	free(d->cache);
	memset(d, 0, sizeof(*d));
}

/* ---- columns ---- */

/* One encoding's output for the current chunk: its open page, the finished
 * pages (headers + compressed bodies) and their sizes. During a trial every
 * candidate has its own; afterwards only the chosen method's is used. */
struct cand {
	struct penc pe;
	struct pb_buf chunk;
	struct chunk_meta m;
	unsigned raw_pages;   /* pages to store without compressing */
};

struct column {
	char *name;
	enum pq_type type;
	int has;             /* has its value in the row being written */
	struct pb_buf str;      /* staged strings: value i is str.data[off[i] .. off[i+1]) */
	uint32_t *off;
	/* encoding */
	unsigned cands;      /* methods in use: several during a trial */
	enum method method;  /* the chosen one once cands has one bit */
	size_t trial_n;      /* values seen by the current trial */
	int retrial;         /* run a trial in the next row group */
	struct cand cand[M_COUNT];
	struct dict dict;
	uint32_t *idx;       /* dictionary indices of the staged block */
	/* min/max of the chunk's values so far */
	int has_range;
	uint64_t lo, hi;     /* integers */
	struct pb_buf smin, smax; /* strings, whole */
};

static int is_int64(enum pq_type t)
{
	return t == PQ_UINT64 || t == PQ_DURATION_NS;
}

static size_t value_width(enum pq_type t)
{
	return is_int64(t) ? 8 : 4;
}

static int trialing(const struct column *c)
{
	return (c->cands & (c->cands - 1)) != 0;
}

/* ---- the writer ---- */

struct pq_writer {
	struct column *cols;
	int ncols;
	int has_strings;
	struct pq_options opt;
	pq_write_fn write;
	void *ctx;
	int64_t offset;       /* bytes written so far */
	/* The staging block, row-major so that a row is one small copy; the
	 * encoders read a column with a stride. */
	uint64_t *stage;      /* STAGE_ROWS x ncols (PQ_UINT32 widened) */
	int partial;          /* values of the row being written (pq_write_*) */
	size_t nstage;        /* complete rows in the staging block */
	size_t stage_cap;     /* encode the block when it has this many */
	size_t stage_bytes;   /* string bytes staged */
	size_t rows;          /* rows of the current row group, encoded */
	uint64_t total_rows;  /* rows encoded */
	int flush_early;      /* a limit was reached: end the row group */
	struct rg_meta *rgs;
	size_t nrg, rgcap;
	ZSTD_CCtx *zc;
	struct tc_writer tc;  /* page headers and footer */
	struct pb_buf zbuf;      /* one compressed page */
	struct pb_buf page;      /* the dictionary page of a chunk */
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

static int allowed(const struct pq_writer *w, enum method m)
{
	static const unsigned bit[M_COUNT] = {
		[M_PLAIN] = PQ_ENC_PLAIN, [M_DICT] = PQ_ENC_DICT,
		[M_DELTA] = PQ_ENC_DELTA, [M_DELTA_BYTES] = PQ_ENC_DELTA_BYTES,
	};
	return (w->opt.encodings ? w->opt.encodings : ~0u) & bit[m];
}

/* The methods worth trying on column `c`. PLAIN is the fallback when
 * nothing else is allowed. */
static unsigned candidates(const struct pq_writer *w, const struct column *c)
{
	unsigned m = 0;
	if (allowed(w, M_DICT))
		m |= 1u << M_DICT;
	if (c->type != PQ_STRING) {
		if (allowed(w, M_DELTA))
			m |= 1u << M_DELTA;
		/* Byte-aligned widths help zstd find repeats; without
		 * compression they only cost space. */
		if (allowed(w, M_DELTA_BYTES) && w->opt.codec != PQ_CODEC_NONE)
			m |= 1u << M_DELTA_BYTES;
	}
	if (allowed(w, M_PLAIN) || m == 0)
		m |= 1u << M_PLAIN;
	return m;
}

/* ---- statistics ---- */

static int bytes_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
	int r = memcmp(a, b, la < lb ? la : lb);
	return r ? r : (la > lb) - (la < lb);
}

static void range_str(struct column *c, const uint8_t *p, size_t len)
{
	if (!c->has_range || bytes_cmp(p, len, c->smin.data, c->smin.len) < 0) {
		c->smin.len = 0;
		buf_put(&c->smin, p, len);
		pb_buf_reserve(&c->smin, 1);
	}
	if (!c->has_range || bytes_cmp(p, len, c->smax.data, c->smax.len) > 0) {
		c->smax.len = 0;
		buf_put(&c->smax, p, len);
		pb_buf_reserve(&c->smax, 1);
	}
	c->has_range = 1;
}

static void range_load(struct range *r, const struct column *c)
{
	r->flip = c->type == PQ_DURATION_NS ? 1ULL << 63 : 0;
	r->lo = c->has_range ? c->lo ^ r->flip : UINT64_MAX;
	r->hi = c->has_range ? c->hi ^ r->flip : 0;
}

static void range_store(const struct range *r, struct column *c)
{
	c->lo = r->lo ^ r->flip;
	c->hi = r->hi ^ r->flip;
	c->has_range = 1;
}

/* Min/max of n integers src[0], src[stride], ... */
static void range_ints(struct column *c, const uint64_t *src, size_t stride, size_t n)
{
	struct range r;
	if (n == 0)
		return;
	range_load(&r, c);
	/* two chains, as each min/max waits for the one before */
	uint64_t lo = r.lo, hi = r.hi, lo2 = lo, hi2 = hi;
	size_t i = 0;
	for (; i + 2 <= n; i += 2) {
		uint64_t a = src[i * stride] ^ r.flip, b = src[(i + 1) * stride] ^ r.flip;
		lo = a < lo ? a : lo;
		hi = a > hi ? a : hi;
		lo2 = b < lo2 ? b : lo2;
		hi2 = b > hi2 ? b : hi2;
	}
	if (i < n) {
		uint64_t a = src[i * stride] ^ r.flip;
		lo = a < lo ? a : lo;
		hi = a > hi ? a : hi;
	}
	r.lo = lo2 < lo ? lo2 : lo;
	r.hi = hi2 > hi ? hi2 : hi;
	range_store(&r, c);
}

/* A dictionary chunk takes its min/max from the entries, once. */
static void range_dict(struct column *c)
{
	const struct dict *d = &c->dict;
	for (uint32_t e = 0; e < d->n; e++) {
		if (c->type == PQ_STRING) {
			uint32_t len;
			const uint8_t *p = dict_str_at(d, e, &len);
			range_str(c, p, len);
		} else {
			uint64_t v = 0;
			memcpy(&v, d->page.data + e * value_width(c->type), value_width(c->type));
			range_ints(c, &v, 1, 1);
		}
	}
}

static void stat_set(uint8_t *dst, size_t *dlen, const void *src, size_t len)
{
	memcpy(dst, src, len);
	*dlen = len;
}

/* Byte-wise min/max. Values longer than STAT_MAX_LEN are cut: the min to a
 * prefix (still a lower bound), the max to a prefix whose last byte is
 * incremented (an upper bound), after dropping trailing 0xFF bytes. */
static void stats_str(const struct column *c, struct stats *st)
{
	st->min_exact = c->smin.len <= STAT_MAX_LEN;
	stat_set(st->min, &st->min_len, c->smin.data, st->min_exact ? c->smin.len : STAT_MAX_LEN);
	st->max_exact = c->smax.len <= STAT_MAX_LEN;
	st->has_max = 1;
	if (st->max_exact) {
		stat_set(st->max, &st->max_len, c->smax.data, c->smax.len);
		return;
	}
	size_t k = STAT_MAX_LEN;
	while (k > 0 && c->smax.data[k - 1] == 0xFF)
		k--;
	if (k == 0) {
		st->has_max = 0;
		return;
	}
	stat_set(st->max, &st->max_len, c->smax.data, k);
	st->max[k - 1]++;
}

static void chunk_stats(const struct column *c, struct stats *st)
{
	memset(st, 0, sizeof(*st));
	st->distinct = -1;
	if (!c->has_range)
		return;
	st->has = 1;
	if (c->type == PQ_STRING) {
		stats_str(c, st);
		return;
	}
	stat_set(st->min, &st->min_len, &c->lo, value_width(c->type));
	stat_set(st->max, &st->max_len, &c->hi, value_width(c->type));
	st->min_exact = st->max_exact = st->has_max = 1;
}

/* ---- pages ---- */

/* A zstd frame that stores p as it is (raw blocks): what zstd itself
 * writes for data it cannot compress, without the time spent finding that
 * out. Frame format (RFC 8878): magic; descriptor 0xA0 = single segment,
 * 4-byte content size; blocks of at most 128 KiB, each with a 3-byte
 * header (last-block bit, type 0 = raw, size << 3). */
static void raw_frame(struct pb_buf *z, const uint8_t *p, size_t n)
{
	static const uint8_t head[5] = { 0x28, 0xB5, 0x2F, 0xFD, 0xA0 };
	uint32_t size = (uint32_t)n;
	z->len = 0;
	buf_put(z, head, sizeof(head));
	buf_put(z, &size, 4);
	size_t off = 0;
	do {
		size_t k = n - off < RAW_BLOCK ? n - off : RAW_BLOCK;
		uint32_t bh = (uint32_t)k << 3 | (off + k == n);
		buf_put(z, &bh, 3);
		buf_put(z, p + off, k);
		off += k;
	} while (off < n);
}

/* raw: store the page in a raw zstd frame rather than compress it. */
static int compress_page(struct pq_writer *w, const uint8_t *p, size_t n, int raw,
			 const uint8_t **out, size_t *out_len)
{
	if (w->opt.codec == PQ_CODEC_NONE) {
		*out = p;
		*out_len = n;
		return 0;
	}
	if (raw) {
		raw_frame(&w->zbuf, p, n);
		*out = w->zbuf.data;
		*out_len = w->zbuf.len;
		return 0;
	}
	size_t bound = ZSTD_compressBound(n);
	w->zbuf.len = 0;
	pb_buf_reserve(&w->zbuf, bound);
	size_t r = ZSTD_compressCCtx(w->zc, w->zbuf.data, bound, p, n, w->opt.zstd_level);
	if (ZSTD_isError(r))
		return fail(w, "zstd: %s", ZSTD_getErrorName(r));
	*out = w->zbuf.data;
	*out_len = r;
	return 0;
}

/* Append one page (header + compressed body) to `dst`. Adds the sizes,
 * header included, to m->uncompressed / m->compressed. */
static int put_page(struct pq_writer *w, struct pb_buf *dst, int type, const uint8_t *body,
		    size_t len, size_t nvals, int enc, int raw, struct chunk_meta *m)
{
	const uint8_t *z = NULL;
	size_t zn = 0;
	if (len > INT32_MAX || nvals > INT32_MAX)
		return fail(w, "page too large");
	if (compress_page(w, body, len, raw, &z, &zn) < 0)
		return -1;
	if (zn > INT32_MAX)
		return fail(w, "page too large");

	struct tc_writer *t = &w->tc;
	tc_reset(t);
	tc_struct_open(t);
	tc_i32(t, 1, type);
	tc_i32(t, 2, (int32_t)len);
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
	buf_put(dst, t->out.data, t->out.len);
	buf_put(dst, z, zn);
	m->uncompressed += (int64_t)(t->out.len + len);
	m->compressed += (int64_t)(t->out.len + zn);
	return 0;
}

/* Close the open page of method m: encode what the encoder holds, compress,
 * append to the candidate's chunk, start a new page. */
static int page_finish(struct pq_writer *w, struct column *c, enum method m)
{
	struct cand *k = &c->cand[m];
	struct penc *p = &k->pe;
	size_t start = PAGE_HEADROOM;
	if (p->nvals == 0)
		return 0;
	if (m == M_DICT)
		rle_finish(p);
	else if (m == M_DELTA || m == M_DELTA_BYTES)
		start = delta_finish(p, is_int64(c->type), m == M_DELTA_BYTES);
	/* Pages zstd barely shrinks (random ids, noisy times) are stored raw
	 * for the next few; then zstd gets another try. Not during a trial,
	 * whose sizes must compare. */
	int raw = k->raw_pages > 0 && !trialing(c);
	int64_t before = k->m.compressed;
	if (put_page(w, &k->chunk, PAGE_DATA, p->body.data + start, p->body.len - start, p->nvals,
		     method_encoding(m), raw, &k->m) < 0)
		return -1;
	if (raw)
		k->raw_pages--;
	else if (p->body.len - start >= RAW_MIN_BYTES &&
		 (double)(k->m.compressed - before) > RAW_RATIO * (double)(p->body.len - start))
		k->raw_pages = RAW_RUN;
	k->m.num_values += (int64_t)p->nvals;
	k->m.data_pages++;
	penc_start(p);
	if (k->chunk.len > CHUNK_MAX_BYTES)
		w->flush_early = 1;
	return 0;
}

/* x86-64 is little-endian, as PLAIN is: integers are their low bytes. */
static void plain_put(struct penc *p, const struct column *c, const uint64_t *src, size_t stride,
		      size_t n)
{
	p->nvals += n;
	if (c->type == PQ_STRING) {
		for (size_t i = 0; i < n; i++) {
			uint32_t len = c->off[i + 1] - c->off[i];
			buf_put(&p->body, &len, 4);
			buf_put(&p->body, c->str.data + c->off[i], len);
		}
		return;
	}
	size_t width = value_width(c->type);
	uint8_t *o = pb_buf_reserve(&p->body, n * width + 8);
	for (size_t i = 0; i < n; i++, o += width)
		memcpy(o, &src[i * stride], 8);
	p->body.len += n * width;
}

/* Dictionary indices into the page. The page's index width is set when it
 * starts, from the entries known then (the whole staged block is already
 * in the dictionary); an index that does not fit ends the page. */
static int dict_put(struct pq_writer *w, struct column *c, size_t n)
{
	struct penc *p = &c->cand[M_DICT].pe;
	const uint32_t *idx = c->idx;
	while (n > 0) {
		if (p->nvals == 0) {
			int bw = bits_needed(c->dict.n - 1);
			p->bw = bw ? bw : 1;
			buf_byte(&p->body, (uint8_t)p->bw);
		}
		size_t fit = n;
		if ((c->dict.n - 1) >> p->bw) {
			for (fit = 0; fit < n && !(idx[fit] >> p->bw); fit++)
				;
		}
		rle_put(p, idx, fit);
		p->nvals += fit;
		idx += fit;
		n -= fit;
		if (n && page_finish(w, c, M_DICT) < 0)
			return -1;
	}
	return 0;
}

/* ---- choosing the encoding ---- */

static void cand_reset(struct cand *k)
{
	penc_start(&k->pe);
	k->chunk.len = 0;
	memset(&k->m, 0, sizeof(k->m));
}

/* Compressed size of the whole chunk (expected_n values), extrapolated from
 * the trial (the dictionary page counts once). */
static int trial_size(struct pq_writer *w, struct column *c, enum method m, size_t expected_n,
		      double *size)
{
	const struct cand *k = &c->cand[m];
	double data = (double)k->m.compressed;
	double dict = 0;
	if (m == M_DICT) {
		const uint8_t *z;
		size_t zn;
		if (compress_page(w, c->dict.page.data, c->dict.page.len, 0, &z, &zn) < 0)
			return -1;
		dict = (double)zn;
	}
	*size = dict + data * (double)expected_n / (double)(k->m.num_values ? k->m.num_values : 1);
	return 0;
}

/* End the trial: compress every candidate's page, keep the smallest.
 * `at_end`: the chunk ends here, so the trial saw all of it. */
static int trial_decide(struct pq_writer *w, struct column *c, int at_end)
{
	int best = -1;
	double best_size = 0;
	size_t expected = at_end ? c->trial_n : w->opt.row_group_rows;
	for (int m = 0; m < M_COUNT && trialing(c); m++) {
		double size;
		if (!(c->cands & (1u << m)))
			continue;
		if (page_finish(w, c, (enum method)m) < 0 ||
		    trial_size(w, c, (enum method)m, expected, &size) < 0)
			return -1;
		if (best < 0 || size < best_size) {
			best = m;
			best_size = size;
		}
	}
	if (best < 0) /* one candidate left */
		best = __builtin_ctz(c->cands);
	for (int m = 0; m < M_COUNT; m++)
		if (m != best && (c->cands & (1u << m)))
			cand_reset(&c->cand[m]);
	if (best != M_DICT && (c->cands & (1u << M_DICT)))
		dict_reset(&c->dict);
	c->cands = 1u << best;
	c->method = (enum method)best;
	return 0;
}

/* Dictionary indices of the staged values, adding new entries. */
static void dict_map(struct column *c, const uint64_t *src, size_t stride, size_t n)
{
	struct dict *d = &c->dict;
	if (!c->idx)
		c->idx = xmalloc(STAGE_ROWS * sizeof(*c->idx));
	if (c->type == PQ_STRING) {
		for (size_t i = 0; i < n; i++)
			c->idx[i] = dict_str(d, c->str.data + c->off[i], c->off[i + 1] - c->off[i]);
		return;
	}
	size_t width = value_width(c->type);
	uint64_t last = 0;
	uint32_t last_e = UINT32_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = src[i * stride];
		/* Small values known already, then runs of one value, skip
		 * the hash table (these branches are predictable; the one on
		 * v == last is not for a column like kind). */
		uint32_t e1 = v < SMALL_KEYS ? d->small[v] : 0;
		if (e1) {
			c->idx[i] = e1 - 1;
			continue;
		}
		if (last_e == UINT32_MAX || v != last) {
			size_t h = (size_t)((v * 0x9E3779B97F4A7C15ULL) >> (64 - DICT_CACHE_BITS));
			struct dict_slot *k = &d->cache[h];
			if (!k->e1 || k->key != v) {
				k->key = v;
				k->e1 = dict_int(d, v, width) + 1;
			}
			last = v;
			last_e = k->e1 - 1;
		}
		c->idx[i] = last_e;
	}
}

/* A trial drops the dictionary once it holds more than half the values:
 * it cannot win, and a big one costs time. */
static int dict_hopeless(const struct column *c, size_t seen)
{
	return trialing(c) && seen >= 2 * STAGE_ROWS && c->dict.n > seen / 2;
}

/* pq_write_row_u64s takes 64-bit values for every column. Rather than
 * checking PQ_UINT32 values on each row, the column's maximum is: after
 * each block, or for dictionary chunks (whose min/max come from the
 * entries) at the end of the chunk, before it is written. */
static int check_u32(struct pq_writer *w, const struct column *c)
{
	if (c->type == PQ_UINT32 && ((c->has_range && c->hi > UINT32_MAX) || c->dict.too_wide))
		return fail(w, "column %s: a value does not fit in 32 bits", c->name);
	return 0;
}

/* Feed the n staged values of column ci to its encoder(s). */
static int encode_block(struct pq_writer *w, int ci, size_t n)
{
	struct column *c = &w->cols[ci];
	const uint64_t *src = w->stage + ci; /* integers: src[i * stride] */
	size_t stride = (size_t)w->ncols;
	int trial = trialing(c), ranged = 0;
	struct range r;
	if (n == 0)
		return 0;
	range_load(&r, c);
	if (c->cands & (1u << M_DICT)) {
		dict_map(c, src, stride, n);
		if (c->dict.n > DICT_MAX_ENTRIES || c->dict.page.len > DICT_MAX_BYTES) {
			w->flush_early = 1;
			c->retrial = 1;
		}
		if (dict_hopeless(c, c->trial_n + n)) {
			cand_reset(&c->cand[M_DICT]);
			dict_reset(&c->dict);
			c->cands &= ~(1u << M_DICT);
		}
	}
	for (int m = 0; m < M_COUNT; m++) {
		if (!(c->cands & (1u << m)))
			continue;
		struct penc *p = &c->cand[m].pe;
		if (m == M_DICT) {
			if (dict_put(w, c, n) < 0)
				return -1;
		} else if (m == M_PLAIN) {
			plain_put(p, c, src, stride, n);
		} else {
			delta_put(p, src, stride, n, is_int64(c->type), m == M_DELTA_BYTES, ranged ? NULL : &r);
			if (!ranged)
				range_store(&r, c);
			ranged = 1;
		}
		if (!trial && (p->nvals >= PAGE_VALUES || p->body.len >= PAGE_BYTES) &&
		    page_finish(w, c, (enum method)m) < 0)
			return -1;
		if (trial && p->body.len >= PAGE_BYTES)
			c->trial_n = TRIAL_VALUES; /* enough to decide */
	}
	/* Dictionary chunks take their min/max from the entries at the end. */
	if (!ranged && (trial || c->method != M_DICT)) {
		if (c->type == PQ_STRING)
			for (size_t i = 0; i < n; i++)
				range_str(c, c->str.data + c->off[i], c->off[i + 1] - c->off[i]);
		else
			range_ints(c, src, stride, n);
	}
	if (check_u32(w, c) < 0)
		return -1;
	if (trial) {
		c->trial_n += n;
		if ((c->trial_n >= TRIAL_VALUES || !trialing(c)) && trial_decide(w, c, 0) < 0)
			return -1;
	}
	return 0;
}

/* The staging block fills up to the end of the row group at most. */
static void set_stage_cap(struct pq_writer *w)
{
	size_t left = w->opt.row_group_rows - w->rows;
	w->stage_cap = left < STAGE_ROWS ? left : STAGE_ROWS;
}

/* Encode the staging block of every column and empty it. */
static int encode_stage(struct pq_writer *w)
{
	for (int i = 0; i < w->ncols; i++) {
		if (encode_block(w, i, w->nstage) < 0)
			return -1;
		w->cols[i].str.len = 0;
	}
	w->rows += w->nstage;
	w->total_rows += w->nstage;
	w->nstage = 0;
	w->stage_bytes = 0;
	set_stage_cap(w);
	return 0;
}

/* ---- column chunks and row groups ---- */

/* Get column c ready for a new chunk: a trial in the first row group, every
 * TRIAL_EVERY row groups and after a dictionary overflow. */
static void chunk_start(struct pq_writer *w, struct column *c)
{
	unsigned all = candidates(w, c);
	int trial = (all & (all - 1)) && (w->nrg % TRIAL_EVERY == 0 || c->retrial);
	if (!(all & (all - 1)))
		c->method = (enum method)__builtin_ctz(all);
	c->cands = trial ? all : 1u << c->method;
	c->retrial = 0;
	c->trial_n = 0;
	c->has_range = 0;
	for (int m = 0; m < M_COUNT; m++)
		if (c->cands & (1u << m))
			cand_reset(&c->cand[m]);
	if (c->cands & (1u << M_DICT))
		dict_reset(&c->dict);
}

static int write_chunk(struct pq_writer *w, struct column *c, struct chunk_meta *out)
{
	if (trialing(c) && trial_decide(w, c, 1) < 0)
		return -1;
	enum method m = c->method;
	struct cand *k = &c->cand[m];
	if (page_finish(w, c, m) < 0)
		return -1;
	*out = k->m;
	out->data_enc = method_encoding(m);
	out->start = w->offset;
	out->dict_off = -1;
	if (m == M_DICT)
		range_dict(c);
	if (check_u32(w, c) < 0)
		return -1;
	if (m == M_DICT) {
		w->page.len = 0;
		if (put_page(w, &w->page, PAGE_DICTIONARY, c->dict.page.data, c->dict.page.len, c->dict.n,
			     ENC_PLAIN, 0, out) < 0)
			return -1;
		out->dict_off = w->offset;
		if (emit(w, w->page.data, w->page.len) < 0)
			return -1;
	}
	out->data_off = w->offset;
	if (emit(w, k->chunk.data, k->chunk.len) < 0)
		return -1;
	chunk_stats(c, &out->st);
	if (m == M_DICT)
		out->st.distinct = c->dict.n;
	return 0;
}

static int flush_row_group(struct pq_writer *w)
{
	if (w->failed)
		return -1;
	if (encode_stage(w) < 0)
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
		if (write_chunk(w, &w->cols[i], &rg->chunks[i]) < 0)
			return -1;
		rg->uncompressed += rg->chunks[i].uncompressed;
		rg->compressed += rg->chunks[i].compressed;
		chunk_start(w, &w->cols[i]);
	}
	w->rows = 0;
	w->flush_early = 0;
	set_stage_cap(w);
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
	uint32_t len = (uint32_t)t->out.len;
	memcpy(tail, &len, 4);
	memcpy(tail + 4, PQ_MAGIC, 4);
	if (emit(w, t->out.data, t->out.len) < 0 || emit(w, tail, 8) < 0)
		return -1;
	return 0;
}

/* ---- public API ---- */

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
		w->opt.zstd_level = DEFAULT_ZSTD_LEVEL;
	w->write = write;
	w->ctx = ctx;
	w->ncols = ncols;
	w->cols = xcalloc((size_t)ncols, sizeof(*w->cols));
	for (int i = 0; i < ncols; i++) {
		struct column *c = &w->cols[i];
		c->name = xstrdup(cols[i].name);
		c->type = cols[i].type;
		if (c->type == PQ_STRING) {
			c->off = xmalloc((STAGE_ROWS + 1) * sizeof(*c->off));
			c->off[0] = 0;
			pb_buf_reserve(&c->str, 1); /* never NULL, even for empty strings */
			w->has_strings = 1;
		}
		chunk_start(w, c);
	}
	w->stage = xmalloc(STAGE_ROWS * (size_t)ncols * sizeof(*w->stage));
	set_stage_cap(w);

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
	if (c->has) {
		fail(w, "column %s: two values in one row", c->name);
		return NULL;
	}
	c->has = 1;
	w->partial++;
	return c;
}

int pq_write_u64(struct pq_writer *w, int col, uint64_t v)
{
	if (!value_slot(w, col, PQ_UINT64, PQ_DURATION_NS))
		return -1;
	w->stage[w->nstage * (size_t)w->ncols + (size_t)col] = v;
	return 0;
}

int pq_write_u32(struct pq_writer *w, int col, uint32_t v)
{
	if (!value_slot(w, col, PQ_UINT32, PQ_UINT32))
		return -1;
	w->stage[w->nstage * (size_t)w->ncols + (size_t)col] = v;
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
static void put_utf8(struct pb_buf *o, const uint8_t *s, size_t len)
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
	size_t before = c->str.len;
	put_utf8(&c->str, (const uint8_t *)s, len);
	c->off[w->nstage + 1] = (uint32_t)c->str.len;
	w->stage_bytes += c->str.len - before;
	if (w->stage_bytes >= STAGE_STR_BYTES)
		w->stage_cap = w->nstage + 1; /* encode after this row */
	return 0;
}

/* Out of line: keeps the per-row path of the callers short. */
static __attribute__((noinline)) int stage_full(struct pq_writer *w)
{
	if (encode_stage(w) < 0)
		return -1;
	if (w->rows >= w->opt.row_group_rows || w->flush_early)
		return flush_row_group(w);
	return 0;
}

/* The row in the staging block is complete. */
static inline int row_done(struct pq_writer *w)
{
	return ++w->nstage >= w->stage_cap ? stage_full(w) : 0;
}

int pq_end_row(struct pq_writer *w)
{
	if (w->failed)
		return -1;
	for (int i = 0; i < w->ncols; i++)
		if (!w->cols[i].has)
			return fail(w, "row %llu: column %s has no value",
				    (unsigned long long)pq_rows(w), w->cols[i].name);
	for (int i = 0; i < w->ncols; i++)
		w->cols[i].has = 0;
	w->partial = 0;
	return row_done(w);
}

int pq_write_row_u64s(struct pq_writer *w, const uint64_t *v)
{
	if (__builtin_expect(w->failed | w->has_strings | w->partial, 0)) {
		if (w->failed)
			return -1;
		if (w->has_strings)
			return fail(w, "pq_write_row_u64s: the table has string columns");
		return fail(w, "row %llu: pq_write_row_u64s after pq_write_*",
			    (unsigned long long)pq_rows(w));
	}
	uint64_t *dst = w->stage + w->nstage * (size_t)w->ncols;
	/* A loop rather than memcpy, whose call costs more than the copy. */
	int i = 0;
	for (; i + 2 <= w->ncols; i += 2) {
		uint64_t a = v[i], b = v[i + 1];
		dst[i] = a;
		dst[i + 1] = b;
	}
	if (i < w->ncols)
		dst[i] = v[i];
	return row_done(w);
}

int pq_finish(struct pq_writer *w)
{
	if (w->failed)
		return -1;
	if (w->partial)
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
		free(c->off);
		free(c->idx);
		pb_buf_free(&c->str);
		pb_buf_free(&c->smin);
		pb_buf_free(&c->smax);
		for (int m = 0; m < M_COUNT; m++) {
			pb_buf_free(&c->cand[m].pe.body);
			pb_buf_free(&c->cand[m].chunk);
		}
		dict_free(&c->dict);
	}
	free(w->cols);
	free(w->stage);
	for (size_t r = 0; r < w->nrg; r++)
		free(w->rgs[r].chunks);
	free(w->rgs);
	ZSTD_freeCCtx(w->zc);
	tc_free(&w->tc);
	pb_buf_free(&w->zbuf);
	pb_buf_free(&w->page);
	free(w);
}

const char *pq_strerror(const struct pq_writer *w)
{
	return w->err;
}

uint64_t pq_rows(const struct pq_writer *w)
{
	return w->total_rows + w->nstage;
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
