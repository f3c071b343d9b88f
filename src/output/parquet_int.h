/* Internals of the Parquet writer (parquet.h), shared by its files:
 *   parquet.c          the writer: staging, column chunks, row groups, API
 *   parquet_choose.c   choosing each chunk's encoding by trial
 *   parquet_page.c     page assembly and compression
 *   parquet_bitpack.c  bit packing, RLE / bit-packing hybrid
 *   parquet_delta.c    DELTA_BINARY_PACKED
 *   parquet_dict.c     dictionaries
 *   parquet_stats.c    min/max statistics
 *   parquet_footer.c   the Thrift footer and ARROW:schema
 * Not an interface for anything else. */
#ifndef SFTRACE_OUTPUT_PARQUET_INT_H
#define SFTRACE_OUTPUT_PARQUET_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <zstd.h>

#include "lib/hashmap.h"
#include "output/parquet.h"
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
static inline void buf_put(struct pb_buf *b, const void *p, size_t n)
{
	if (n) {
		memcpy(pb_buf_reserve(b, n), p, n);
		b->len += n;
	}
}

static inline void buf_byte(struct pb_buf *b, uint8_t v)
{
	*pb_buf_reserve(b, 1) = v;
	b->len++;
}

static inline int bits_needed(uint64_t v)
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

/* ---- encoders ----
 * Encoders take values block by block and keep what does not yet form a
 * whole unit (a DELTA block, an RLE run) in their state. */

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

/* Min/max of a column chunk so far, in the column's order. Signed columns
 * have their sign bit flipped, which maps signed order onto unsigned. */
struct range {
	uint64_t flip, lo, hi;
};

/* ---- dictionary ---- */

struct dict_slot {
	uint64_t key;  /* the value */
	uint32_t e1;   /* entry + 1; 0 = empty */
};

/* Entries in order of first appearance. The dictionary page body (the
 * entries, PLAIN) is built as entries come, and is where string entries
 * are compared. */
struct dict {
	struct pb_buf page;
	uint32_t *off;          /* strings: entry e starts at page.data + off[e] */
	uint32_t n, offcap;
	struct hashmap map;     /* value (integers) or hash (strings) -> entry */
	int ready;              /* map, small and cache allocated */
	uint32_t *small;        /* entry + 1 of integer keys below SMALL_KEYS
				 * (kind, small enums): no hashing */
	struct dict_slot *cache;/* DICT_CACHE slots, direct-mapped: the table
				 * of a column like func_id outgrows L1 */
	int too_wide;           /* an entry of a 4-byte column had more bits */
};

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

static inline int is_int64(enum pq_type t)
{
	return t == PQ_UINT64 || t == PQ_DURATION_NS;
}

static inline size_t value_width(enum pq_type t)
{
	return is_int64(t) ? 8 : 4;
}

/* Several methods in use: a trial is running. */
static inline int trialing(const struct column *c)
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

/* parquet.c */
int pq_fail(struct pq_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pq_emit(struct pq_writer *w, const void *p, size_t n);
int pq_method_encoding(enum method m);

/* parquet_bitpack.c */
/* Packs n values (n * bw a multiple of 8) of bw bits each, least significant
 * bit first. Writes up to 8 bytes past the data; returns its end. */
uint8_t *pq_pack(uint8_t *p, const uint64_t *v, size_t n, int bw);
/* Dictionary indices into the RLE / bit-packing hybrid (width p->bw). */
void pq_rle_put(struct penc *p, const uint32_t *v, size_t n);
void pq_rle_finish(struct penc *p);

/* parquet_delta.c */
/* Values src[0], src[stride], ...; with r, their min/max too. */
void pq_delta_put(struct penc *p, const uint64_t *src, size_t stride, size_t n, int wide, int bytes,
		  struct range *r);
/* Returns where the page body starts (after the header's headroom). */
size_t pq_delta_finish(struct penc *p, int wide, int bytes);

/* parquet_dict.c */
void pq_dict_reset(struct dict *d);
void pq_dict_free(struct dict *d);
const uint8_t *pq_dict_str_at(const struct dict *d, uint32_t e, uint32_t *len);
/* Indices of the n staged values into c->idx, adding new entries. */
void pq_dict_map(struct column *c, const uint64_t *src, size_t stride, size_t n);

/* parquet_stats.c */
void pq_range_load(struct range *r, const struct column *c);
void pq_range_store(const struct range *r, struct column *c);
void pq_range_ints(struct column *c, const uint64_t *src, size_t stride, size_t n);
void pq_range_str(struct column *c, const uint8_t *p, size_t len);
void pq_range_dict(struct column *c);
void pq_chunk_stats(const struct column *c, struct stats *st);

/* parquet_page.c */
void pq_penc_start(struct penc *p);
int pq_compress_page(struct pq_writer *w, const uint8_t *p, size_t n, int raw, const uint8_t **out,
		     size_t *out_len);
int pq_put_page(struct pq_writer *w, struct pb_buf *dst, int type, const uint8_t *body, size_t len,
		size_t nvals, int enc, int raw, struct chunk_meta *m);
int pq_page_finish(struct pq_writer *w, struct column *c, enum method m);
void pq_plain_put(struct penc *p, const struct column *c, const uint64_t *src, size_t stride, size_t n);
int pq_dict_put(struct pq_writer *w, struct column *c, size_t n);

/* parquet_choose.c */
unsigned pq_candidates(const struct pq_writer *w, const struct column *c);
void pq_cand_reset(struct cand *k);
int pq_trial_decide(struct pq_writer *w, struct column *c, int at_end);
int pq_dict_hopeless(const struct column *c, size_t seen);

/* parquet_footer.c */
int pq_write_footer(struct pq_writer *w);

#endif
