#include "lib/hashmap.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

#define HM_MIN_SLOTS 16u

static void hm_alloc(struct hashmap *m, size_t slots)
{
	m->slots = xcalloc(slots, sizeof(*m->slots));
	m->mask = slots - 1;
	unsigned bits = 0;
	while (((size_t)1 << bits) < slots)
		bits++;
	m->shift = 64 - bits;
}

void hm_init(struct hashmap *m, size_t expect)
{
	memset(m, 0, sizeof(*m));
	size_t slots = HM_MIN_SLOTS;
	while (slots < expect * 2)
		slots *= 2;
	hm_alloc(m, slots);
}

void hm_free(struct hashmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

void hm_clear(struct hashmap *m)
{
	if (m->slots && m->count)
		memset(m->slots, 0, (m->mask + 1) * sizeof(*m->slots));
	m->count = 0;
	m->has_zero = 0;
	m->zero_val = 0;
}

/* Double the table (keys are distinct and nonzero: no compare needed). */
static void hm_grow(struct hashmap *m)
{
	struct hm_slot *old = m->slots;
	size_t n = m->mask + 1;
	hm_alloc(m, n * 2);
	for (size_t i = 0; i < n; i++) {
		if (!old[i].key)
			continue;
		size_t j = hm_home(m, old[i].key);
		while (m->slots[j].key)
			j = (j + 1) & m->mask;
		m->slots[j] = old[i];
	}
	free(old);
}

uint64_t *hm_put(struct hashmap *m, uint64_t key, int *added)
{
	int dummy;
	if (!added)
		added = &dummy;
	if (key == 0) {
		*added = !m->has_zero;
		if (!m->has_zero) {
			m->has_zero = 1;
			m->zero_val = 0;
			m->count++;
		}
		return &m->zero_val;
	}
	if (!m->slots)
		hm_alloc(m, HM_MIN_SLOTS);
	size_t i = hm_home(m, key);
	for (; m->slots[i].key; i = (i + 1) & m->mask) {
		if (m->slots[i].key == key) {
			*added = 0;
			return &m->slots[i].val;
		}
	}
	*added = 1;
	if ((m->count + 1) * 2 > m->mask + 1) {
		hm_grow(m);
		i = hm_home(m, key);
		while (m->slots[i].key)
			i = (i + 1) & m->mask;
	}
	m->slots[i].key = key;
	m->slots[i].val = 0;
	m->count++;
	return &m->slots[i].val;
}

void hm_remove_at(struct hashmap *m, uint64_t *val)
{
	m->count--;
	if (val == &m->zero_val) {
		m->has_zero = 0;
		m->zero_val = 0;
		return;
	}
	struct hm_slot *at = (struct hm_slot *)(void *)((char *)val - offsetof(struct hm_slot, val));
	size_t i = (size_t)(at - m->slots);
	/* Close the gap: a later entry of the run moves back into it unless its
	 * home lies between the gap and itself (then the gap would hide it). */
	for (size_t j = (i + 1) & m->mask; m->slots[j].key; j = (j + 1) & m->mask) {
		size_t home = hm_home(m, m->slots[j].key);
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].key = 0;
	m->slots[i].val = 0;
}

int hm_remove(struct hashmap *m, uint64_t key)
{
	uint64_t *v = hm_find(m, key);
	if (!v)
		return 0;
	hm_remove_at(m, v);
	return 1;
}

int hm_next(const struct hashmap *m, size_t *pos, uint64_t *key, uint64_t *val)
{
	/* Position 0 is key 0, position i + 1 is slot i. */
	if (*pos == 0) {
		*pos = 1;
		if (m->has_zero) {
			*key = 0;
			*val = m->zero_val;
			return 1;
		}
	}
	size_t n = m->slots ? m->mask + 1 : 0;
	for (; *pos <= n; (*pos)++) {
		const struct hm_slot *s = &m->slots[*pos - 1];
		if (s->key) {
			*key = s->key;
			*val = s->val;
			(*pos)++;
			return 1;
		}
	}
	return 0;
}
