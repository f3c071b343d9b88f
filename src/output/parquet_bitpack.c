/* Bit packing, and the RLE / bit-packing hybrid that carries dictionary
 * indices (Parquet encodings spec: "Run Length Encoding / Bit-Packing
 * Hybrid"). Values go in groups of 8: a group of 8 equal values starts or
 * extends an RLE run, any other group is bit-packed. Looking for runs only at
 * group boundaries is much faster than finding every run of 8, and zstd
 * takes care of what it misses. */
#include <string.h>

#include "output/parquet_int.h"

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
uint8_t *pq_pack(uint8_t *p, const uint64_t *v, size_t n, int bw)
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

/* Write the buffered literals as one bit-packed run. Only the last run of a
 * page may end with a partial group of 8 (padded with zeros). */
static void lit_flush(struct penc *p)
{
	if (p->nlit == 0)
		return;
	size_t groups = (p->nlit + 7) / 8;
	for (size_t i = p->nlit; i < groups * 8; i++)
		p->lit[i] = 0;
	pb_put_varint(&p->body, (uint64_t)groups << 1 | 1);
	uint8_t *o = pb_buf_reserve(&p->body, groups * (size_t)p->bw + 8);
	p->body.len = (size_t)(pq_pack(o, p->lit, groups * 8, p->bw) - p->body.data);
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
		pb_put_varint(&p->body, (uint64_t)p->run_len << 1);
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

void pq_rle_put(struct penc *p, const uint32_t *v, size_t n)
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
void pq_rle_finish(struct penc *p)
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
