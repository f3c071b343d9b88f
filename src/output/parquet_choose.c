/* Choosing a column chunk's encoding: the first TRIAL_VALUES values go
 * through every applicable encoder; their pages are compressed and the
 * smallest, extrapolated to the whole chunk, wins (see parquet.c). */
#include <string.h>

#include "output/parquet_int.h"

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
unsigned pq_candidates(const struct pq_writer *w, const struct column *c)
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

void pq_cand_reset(struct cand *k)
{
	pq_penc_start(&k->pe);
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
		if (pq_compress_page(w, c->dict.page.data, c->dict.page.len, 0, &z, &zn) < 0)
			return -1;
		dict = (double)zn;
	}
	*size = dict + data * (double)expected_n / (double)(k->m.num_values ? k->m.num_values : 1);
	return 0;
}

/* End the trial: compress every candidate's page, keep the smallest.
 * `at_end`: the chunk ends here, so the trial saw all of it. */
int pq_trial_decide(struct pq_writer *w, struct column *c, int at_end)
{
	int best = -1;
	double best_size = 0;
	size_t expected = at_end ? c->trial_n : w->opt.row_group_rows;
	for (int m = 0; m < M_COUNT && trialing(c); m++) {
		double size;
		if (!(c->cands & (1u << m)))
			continue;
		if (pq_page_finish(w, c, (enum method)m) < 0 ||
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
			pq_cand_reset(&c->cand[m]);
	if (best != M_DICT && (c->cands & (1u << M_DICT)))
		pq_dict_reset(&c->dict);
	c->cands = 1u << best;
	c->method = (enum method)best;
	return 0;
}

/* A trial drops the dictionary once it holds more than half the values:
 * it cannot win, and a big one costs time. */
int pq_dict_hopeless(const struct column *c, size_t seen)
{
	return trialing(c) && seen >= 2 * STAGE_ROWS && c->dict.n > seen / 2;
}
