/* DELTA_BINARY_PACKED (Parquet encodings spec): blocks of DELTA_BLOCK deltas
 * in DELTA_MINIBLOCKS bit-packed miniblocks, each block with its minimum
 * delta, behind a header (block size, miniblocks, value count, first value)
 * that is written last, in the page's headroom, once the count is known. */
#include <string.h>

#include "output/parquet_int.h"

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
		o = pq_pack(o, u + m * DELTA_MINI, DELTA_MINI, widths[m]);
	p->body.len = (size_t)(o - p->body.data);
	p->npend = 0;
	p->dmin = INT64_MAX;
}

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
void pq_delta_put(struct penc *p, const uint64_t *src, size_t stride, size_t n, int wide,
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
size_t pq_delta_finish(struct penc *p, int wide, int bytes)
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
