/* The dictionary of a column chunk: entries in order of first appearance,
 * their PLAIN page built as they come, and an open-addressing table (with a
 * small direct-mapped cache in front) from value to entry. */
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "output/parquet_int.h"

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

void pq_dict_reset(struct dict *d)
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

const uint8_t *pq_dict_str_at(const struct dict *d, uint32_t e, uint32_t *len)
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
		const uint8_t *q = pq_dict_str_at(d, e, &elen);
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

void pq_dict_free(struct dict *d)
{
	pb_buf_free(&d->page);
	free(d->off);
	free(d->table);
	free(d->small);
	free(d->cache);
	memset(d, 0, sizeof(*d));
}

/* Dictionary indices of the staged values, adding new entries. */
void pq_dict_map(struct column *c, const uint64_t *src, size_t stride, size_t n)
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
