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
#include "output/parquet_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "lib/util.h"

int pq_method_encoding(enum method m)
{
	static const int enc[M_COUNT] = {
		[M_PLAIN] = ENC_PLAIN,
		[M_DICT] = ENC_RLE_DICTIONARY,
		[M_DELTA] = ENC_DELTA_BINARY_PACKED,
		[M_DELTA_BYTES] = ENC_DELTA_BINARY_PACKED,
	};
	return enc[m];
}

int pq_fail(struct pq_writer *w, const char *fmt, ...)
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

int pq_emit(struct pq_writer *w, const void *p, size_t n)
{
	if (w->write(w->ctx, p, n) < 0)
		return pq_fail(w, "write failed: %s", strerror(errno));
	w->offset += (int64_t)n;
	return 0;
}

/* ---- encoding a staged block ---- */

/* pq_write_row_u64s takes 64-bit values for every column. Rather than
 * checking PQ_UINT32 values on each row, the column's maximum is: after
 * each block, or for dictionary chunks (whose min/max come from the
 * entries) at the end of the chunk, before it is written. */
static int check_u32(struct pq_writer *w, const struct column *c)
{
	if (c->type == PQ_UINT32 && ((c->has_range && c->hi > UINT32_MAX) || c->dict.too_wide))
		return pq_fail(w, "column %s: a value does not fit in 32 bits", c->name);
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
	pq_range_load(&r, c);
	if (c->cands & (1u << M_DICT)) {
		pq_dict_map(c, src, stride, n);
		if (c->dict.n > DICT_MAX_ENTRIES || c->dict.page.len > DICT_MAX_BYTES) {
			w->flush_early = 1;
			c->retrial = 1;
		}
		if (pq_dict_hopeless(c, c->trial_n + n)) {
			pq_cand_reset(&c->cand[M_DICT]);
			pq_dict_reset(&c->dict);
			c->cands &= ~(1u << M_DICT);
		}
	}
	for (int m = 0; m < M_COUNT; m++) {
		if (!(c->cands & (1u << m)))
			continue;
		struct penc *p = &c->cand[m].pe;
		if (m == M_DICT) {
			if (pq_dict_put(w, c, n) < 0)
				return -1;
		} else if (m == M_PLAIN) {
			pq_plain_put(p, c, src, stride, n);
		} else {
			pq_delta_put(p, src, stride, n, is_int64(c->type), m == M_DELTA_BYTES, ranged ? NULL : &r);
			if (!ranged)
				pq_range_store(&r, c);
			ranged = 1;
		}
		if (!trial && (p->nvals >= PAGE_VALUES || p->body.len >= PAGE_BYTES) &&
		    pq_page_finish(w, c, (enum method)m) < 0)
			return -1;
		if (trial && p->body.len >= PAGE_BYTES)
			c->trial_n = TRIAL_VALUES; /* enough to decide */
	}
	/* Dictionary chunks take their min/max from the entries at the end. */
	if (!ranged && (trial || c->method != M_DICT)) {
		if (c->type == PQ_STRING)
			for (size_t i = 0; i < n; i++)
				pq_range_str(c, c->str.data + c->off[i], c->off[i + 1] - c->off[i]);
		else
			pq_range_ints(c, src, stride, n);
	}
	if (check_u32(w, c) < 0)
		return -1;
	if (trial) {
		c->trial_n += n;
		if ((c->trial_n >= TRIAL_VALUES || !trialing(c)) && pq_trial_decide(w, c, 0) < 0)
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
	unsigned all = pq_candidates(w, c);
	int trial = (all & (all - 1)) && (w->nrg % TRIAL_EVERY == 0 || c->retrial);
	if (!(all & (all - 1)))
		c->method = (enum method)__builtin_ctz(all);
	c->cands = trial ? all : 1u << c->method;
	c->retrial = 0;
	c->trial_n = 0;
	c->has_range = 0;
	for (int m = 0; m < M_COUNT; m++)
		if (c->cands & (1u << m))
			pq_cand_reset(&c->cand[m]);
	if (c->cands & (1u << M_DICT))
		pq_dict_reset(&c->dict);
}

static int write_chunk(struct pq_writer *w, struct column *c, struct chunk_meta *out)
{
	if (trialing(c) && pq_trial_decide(w, c, 1) < 0)
		return -1;
	enum method m = c->method;
	struct cand *k = &c->cand[m];
	if (pq_page_finish(w, c, m) < 0)
		return -1;
	*out = k->m;
	out->data_enc = pq_method_encoding(m);
	out->start = w->offset;
	out->dict_off = -1;
	if (m == M_DICT)
		pq_range_dict(c);
	if (check_u32(w, c) < 0)
		return -1;
	if (m == M_DICT) {
		w->page.len = 0;
		if (pq_put_page(w, &w->page, PAGE_DICTIONARY, c->dict.page.data, c->dict.page.len, c->dict.n,
			     ENC_PLAIN, 0, out) < 0)
			return -1;
		out->dict_off = w->offset;
		if (pq_emit(w, w->page.data, w->page.len) < 0)
			return -1;
	}
	out->data_off = w->offset;
	if (pq_emit(w, k->chunk.data, k->chunk.len) < 0)
		return -1;
	pq_chunk_stats(c, &out->st);
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
	if (pq_emit(w, PQ_MAGIC, 4) < 0) {
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
		pq_fail(w, "column %d out of range", col);
		return NULL;
	}
	struct column *c = &w->cols[col];
	if (c->type != a && c->type != b) {
		pq_fail(w, "column %s: wrong value type", c->name);
		return NULL;
	}
	if (c->has) {
		pq_fail(w, "column %s: two values in one row", c->name);
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

/* Append s, replacing each byte that is not part of valid UTF-8 with
 * U+FFFD: polars and DuckDB refuse a whole file over one bad string, and
 * symbol names are bytes from ELF files. */
static void put_utf8(struct pb_buf *o, const uint8_t *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t start = i, k;
		while (i < len && (k = sf_utf8_seq(s + i, len - i)) > 0)
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
		return pq_fail(w, "column %s: string of %zu bytes is too long", c->name, len);
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
			return pq_fail(w, "row %llu: column %s has no value",
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
			return pq_fail(w, "pq_write_row_u64s: the table has string columns");
		return pq_fail(w, "row %llu: pq_write_row_u64s after pq_write_*",
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
		return pq_fail(w, "unfinished row at close");
	if (flush_row_group(w) < 0)
		return -1;
	if (pq_write_footer(w) < 0)
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
		pq_dict_free(&c->dict);
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
