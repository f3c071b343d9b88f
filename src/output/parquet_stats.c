/* Column chunk statistics for the footer: min/max of integers (in the
 * column's signed or unsigned order) and of strings (byte-wise, cut to
 * STAT_MAX_LEN bytes). */
#include <string.h>

#include "output/parquet_int.h"

static int bytes_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
	int r = memcmp(a, b, la < lb ? la : lb);
	return r ? r : (la > lb) - (la < lb);
}

void pq_range_str(struct column *c, const uint8_t *p, size_t len)
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

void pq_range_load(struct range *r, const struct column *c)
{
	r->flip = c->type == PQ_DURATION_NS ? 1ULL << 63 : 0;
	r->lo = c->has_range ? c->lo ^ r->flip : UINT64_MAX;
	r->hi = c->has_range ? c->hi ^ r->flip : 0;
}

void pq_range_store(const struct range *r, struct column *c)
{
	c->lo = r->lo ^ r->flip;
	c->hi = r->hi ^ r->flip;
	c->has_range = 1;
}

/* Min/max of n integers src[0], src[stride], ... */
void pq_range_ints(struct column *c, const uint64_t *src, size_t stride, size_t n)
{
	struct range r;
	if (n == 0)
		return;
	pq_range_load(&r, c);
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
	pq_range_store(&r, c);
}

/* A dictionary chunk takes its min/max from the entries, once. */
void pq_range_dict(struct column *c)
{
	const struct dict *d = &c->dict;
	for (uint32_t e = 0; e < d->n; e++) {
		if (c->type == PQ_STRING) {
			uint32_t len;
			const uint8_t *p = pq_dict_str_at(d, e, &len);
			pq_range_str(c, p, len);
		} else {
			uint64_t v = 0;
			memcpy(&v, d->page.data + e * value_width(c->type), value_width(c->type));
			pq_range_ints(c, &v, 1, 1);
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

void pq_chunk_stats(const struct column *c, struct stats *st)
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
