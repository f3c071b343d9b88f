/* Pages: a page body is built by an encoder in `body` after PAGE_HEADROOM
 * bytes (where the DELTA header goes once the value count is known), then
 * compressed (or stored in a raw zstd frame when zstd barely shrinks it)
 * and appended to its candidate's chunk behind a Thrift PageHeader. */
#include <string.h>

#include <zstd.h>

#include "output/parquet_int.h"

void pq_penc_start(struct penc *p)
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
int pq_compress_page(struct pq_writer *w, const uint8_t *p, size_t n, int raw,
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
		return pq_fail(w, "zstd: %s", ZSTD_getErrorName(r));
	*out = w->zbuf.data;
	*out_len = r;
	return 0;
}

/* Append one page (header + compressed body) to `dst`. Adds the sizes,
 * header included, to m->uncompressed / m->compressed. */
int pq_put_page(struct pq_writer *w, struct pb_buf *dst, int type, const uint8_t *body,
		    size_t len, size_t nvals, int enc, int raw, struct chunk_meta *m)
{
	const uint8_t *z = NULL;
	size_t zn = 0;
	if (len > INT32_MAX || nvals > INT32_MAX)
		return pq_fail(w, "page too large");
	if (pq_compress_page(w, body, len, raw, &z, &zn) < 0)
		return -1;
	if (zn > INT32_MAX)
		return pq_fail(w, "page too large");

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
int pq_page_finish(struct pq_writer *w, struct column *c, enum method m)
{
	struct cand *k = &c->cand[m];
	struct penc *p = &k->pe;
	size_t start = PAGE_HEADROOM;
	if (p->nvals == 0)
		return 0;
	if (m == M_DICT)
		pq_rle_finish(p);
	else if (m == M_DELTA || m == M_DELTA_BYTES)
		start = pq_delta_finish(p, is_int64(c->type), m == M_DELTA_BYTES);
	/* Pages zstd barely shrinks (random ids, noisy times) are stored raw
	 * for the next few; then zstd gets another try. Not during a trial,
	 * whose sizes must compare. */
	int raw = k->raw_pages > 0 && !trialing(c);
	int64_t before = k->m.compressed;
	if (pq_put_page(w, &k->chunk, PAGE_DATA, p->body.data + start, p->body.len - start, p->nvals,
		     pq_method_encoding(m), raw, &k->m) < 0)
		return -1;
	if (raw)
		k->raw_pages--;
	else if (p->body.len - start >= RAW_MIN_BYTES &&
		 (double)(k->m.compressed - before) > RAW_RATIO * (double)(p->body.len - start))
		k->raw_pages = RAW_RUN;
	k->m.num_values += (int64_t)p->nvals;
	k->m.data_pages++;
	pq_penc_start(p);
	if (k->chunk.len > CHUNK_MAX_BYTES)
		w->flush_early = 1;
	return 0;
}

/* x86-64 is little-endian, as PLAIN is: integers are their low bytes. */
void pq_plain_put(struct penc *p, const struct column *c, const uint64_t *src, size_t stride,
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
int pq_dict_put(struct pq_writer *w, struct column *c, size_t n)
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
		pq_rle_put(p, idx, fit);
		p->nvals += fit;
		idx += fit;
		n -= fit;
		if (n && pq_page_finish(w, c, M_DICT) < 0)
			return -1;
	}
	return 0;
}
