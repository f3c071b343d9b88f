/* A small open-addressing hash map from a 64-bit key to a 64-bit value (a
 * count, an index into the caller's array, or a pointer as uintptr_t).
 * Linear probing, Fibonacci hashing (the top bits of key * 2^64/phi, which
 * spread both consecutive ids and addresses sharing low bits), at most half
 * full. Key 0 marks an empty slot, so key 0 itself is kept beside the table.
 * hm_remove takes one entry out (backward-shift deletion: no tombstones, so
 * a map with as many removals as inserts, a live set, stays fast); hm_clear
 * empties the whole map. */
#ifndef SFTRACE_HASHMAP_H
#define SFTRACE_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct hm_slot {
	uint64_t key;
	uint64_t val;
};

struct hashmap {
	struct hm_slot *slots; /* NULL until the first insert */
	size_t mask;
	size_t count;          /* entries, key 0 included */
	unsigned shift;        /* 64 - log2(slots) */
	int has_zero;
	uint64_t zero_val;
};

#define HASHMAP_INIT {0}

/* An empty map sized for about `expect` entries without growing (0: small). */
void hm_init(struct hashmap *m, size_t expect);
void hm_free(struct hashmap *m);
/* Forget every entry, keep the memory. */
void hm_clear(struct hashmap *m);

/* The value slot of key, inserting it with value 0 when absent; *added says
 * which. The pointer is good until the next insert. */
uint64_t *hm_put(struct hashmap *m, uint64_t key, int *added);

/* Removes key; returns 1 if it was there, else 0. */
int hm_remove(struct hashmap *m, uint64_t key);
/* Removes the entry whose value slot hm_find or hm_put returned. */
void hm_remove_at(struct hashmap *m, uint64_t *val);

/* Walk the entries in no particular order: start with *pos = 0; returns 0
 * when done. No inserts during a walk. */
int hm_next(const struct hashmap *m, size_t *pos, uint64_t *key, uint64_t *val);

static inline size_t hm_home(const struct hashmap *m, uint64_t key)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> m->shift);
}

/* The value slot of key, or NULL when absent. Inline: it is on the
 * converters' per-event path. */
static inline uint64_t *hm_find(const struct hashmap *m, uint64_t key)
{
	if (key == 0)
		return m->has_zero ? (uint64_t *)&m->zero_val : NULL;
	if (!m->slots)
		return NULL;
	for (size_t i = hm_home(m, key);; i = (i + 1) & m->mask) {
		struct hm_slot *s = &m->slots[i];
		if (s->key == key)
			return &s->val;
		if (s->key == 0)
			return NULL;
	}
}

/* The value of key, or `dflt` when absent. */
static inline uint64_t hm_get(const struct hashmap *m, uint64_t key, uint64_t dflt)
{
	const uint64_t *v = hm_find(m, key);
	return v ? *v : dflt;
}

#endif
