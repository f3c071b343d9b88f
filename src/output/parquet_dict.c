/* The dictionary of a column chunk: entries in order of first appearance,
 * their PLAIN page built as they come, and a lib/hashmap (with a direct
 * array for small integers and a direct-mapped cache in front) from value to
 * entry. */
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "output/parquet_int.h"

#define SMALL_KEYS 1024u
#define DICT_CACHE_BITS 9
#define DICT_CACHE (1u << DICT_CACHE_BITS)

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

void pq_dict_reset(struct dict *d)
{
	if (!d->ready) {
		d->ready = 1;
		hm_init(&d->map, 512);
		d->small = xcalloc(SMALL_KEYS, sizeof(*d->small));
		d->cache = xcalloc(DICT_CACHE, sizeof(*d->cache));
	} else if (d->n) {
		hm_clear(&d->map);
		memset(d->small, 0, SMALL_KEYS * sizeof(*d->small));
		memset(d->cache, 0, DICT_CACHE * sizeof(*d->cache));
	}
	d->n = 0;
	d->page.len = 0;
	d->too_wide = 0;
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
	int added;
	uint64_t *e = hm_put(&d->map, v, &added);
	if (added) {
		*e = d->n++;
		buf_put(&d->page, &v, width); /* little-endian: the low bytes */
		d->too_wide |= width == 4 && v > UINT32_MAX;
	}
	return (uint32_t)*e;
}

const uint8_t *pq_dict_str_at(const struct dict *d, uint32_t e, uint32_t *len)
{
	memcpy(len, d->page.data + d->off[e], 4);
	return d->page.data + d->off[e] + 4;
}

static uint32_t dict_str(struct dict *d, const uint8_t *p, uint32_t len)
{
	/* Strings of one hash (rare) take the keys after it: h + 1, h + 2... */
	uint64_t *e;
	for (uint64_t h = hash_bytes(p, len);; h++) {
		int added;
		uint32_t elen;
		e = hm_put(&d->map, h, &added);
		if (added)
			break;
		const uint8_t *q = pq_dict_str_at(d, (uint32_t)*e, &elen);
		if (elen == len && memcmp(p, q, len) == 0)
			return (uint32_t)*e;
	}
	if (d->n == d->offcap) {
		d->offcap = d->offcap ? 2 * d->offcap : 1024;
		d->off = xrealloc(d->off, d->offcap * sizeof(*d->off));
	}
	d->off[d->n] = (uint32_t)d->page.len;
	buf_put(&d->page, &len, 4);
	buf_put(&d->page, p, len);
	*e = d->n;
	return d->n++;
}

void pq_dict_free(struct dict *d)
{
	pb_buf_free(&d->page);
	free(d->off);
	hm_free(&d->map);
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
