/* The packed DATA chunk's codec (packed.h). Both directions walk the same
 * prediction state, so a chunk decodes without anything outside it. */
#include <stddef.h>
#include <string.h>

#include "format/packed.h"

void sf_pack_reset(struct sf_pack_state *st, uint64_t base)
{
	/* Not the second form's records: a2n says which are in use. */
	memset(st, 0, offsetof(struct sf_pack_state, a2));
	st->prev = (uint32_t)base;
}

/* (d << 1) ^ (d >> 31) for the signed d, in unsigned arithmetic: shifting
 * a negative or large int left is undefined. */
static uint32_t zigzag(uint32_t delta)
{
	return (delta << 1) ^ (0u - (delta >> 31));
}

static uint32_t unzigzag(uint32_t z)
{
	return (z >> 1) ^ (0u - (z & 1));
}

static uint8_t *put_varint(uint8_t *o, uint32_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

static uint32_t stack_top(const struct sf_pack_state *st)
{
	return st->stack[(st->sp - 1) % SF_PK_STACK];
}

static void stack_pop(struct sf_pack_state *st, uint32_t n)
{
	st->sp -= n < st->sp ? n : st->sp;
}

static void stack_push(struct sf_pack_state *st, uint32_t id)
{
	st->stack[st->sp % SF_PK_STACK] = id;
	st->sp++;
}

static inline __attribute__((always_inline)) uint8_t *put_time(uint8_t *o, uint32_t op, uint32_t z)
{
	if (z < 8) {
		*o++ = (uint8_t)(op << 4 | z);
		return o;
	}
	*o++ = (uint8_t)(op << 4 | 8 | (z & 7));
	z >>= 3;
	if (z < 0x80) { /* the usual case, without the loop */
		*o++ = (uint8_t)z;
		return o;
	}
	if (z < 0x4000) { /* 2^10 to 2^17 ticks apart (a call of a few hundred ns): still no loop */
		o[0] = (uint8_t)(z | 0x80);
		o[1] = (uint8_t)(z >> 7);
		return o + 2;
	}
	return put_varint(o, z);
}

/* The bytes of x that are not zero, after a mask byte with a bit for
 * each (low first): 1 to 9 bytes. x is not zero. */
static inline __attribute__((always_inline)) uint8_t *put_xor(uint8_t *o, uint64_t x)
{
	if (x <= 0xff) { /* the commonest: a count or an int that moved by a little */
		o[0] = 1;
		o[1] = (uint8_t)x;
		return o + 2;
	}
	/* The mask without the loop: bit 7 of each byte of nz says that byte
	 * of x is not zero; the multiply gathers those bits into the top byte.
	 * Where they are bytes 0 to k-1 (a pointer or a count that moved: the
	 * common case on SQLite under --auto-args), all 8 bytes are stored
	 * and k kept: 9 bytes at most, as the loop writes. */
	uint64_t nz = (((x & 0x7f7f7f7f7f7f7f7full) + 0x7f7f7f7f7f7f7f7full) | x) & 0x8080808080808080ull;
	uint32_t mask = (uint32_t)(((nz >> 7) * 0x0102040810204080ull) >> 56);
	if (!(mask & (mask + 1))) {
		o[0] = (uint8_t)mask;
		memcpy(o + 1, &x, 8);
		return o + 2 + ((63 - __builtin_clzll(x)) >> 3); /* 1 + k */
	}
	uint8_t *m = o++;
	for (; x; x >>= 8)
		if (x & 0xff)
			*o++ = (uint8_t)x;
	*m = (uint8_t)mask;
	return o;
}

/* A slot's SF_PK_A2REC records zeroed by 16 stores, not the `rep stos`
 * the compiler makes of a loop: its start-up costs more than they do (a
 * slot restarts at about 1 ARGS event in 10 on SQLite under
 * --auto-args). */
_Static_assert(SF_PK_A2REC == 16, "zero_slot's stores");
static inline __attribute__((always_inline)) void zero_slot(uint64_t *h)
{
	h[0] = h[1] = h[2] = h[3] = h[4] = h[5] = h[6] = h[7] = 0;
	h[8] = h[9] = h[10] = h[11] = h[12] = h[13] = h[14] = h[15] = 0;
}

/* An ARGS event (np payload records, 1 to SF_PK_AREC) in the second form
 * (docs/FORMAT.md): a byte SF_PK_ARGS2, | SF_PK_A2_HEAD when the count or
 * the header differs from its slot's; the slot; if so, the count and the
 * header, 8 bytes; a bitmap of the records after the header that differ
 * from the slot's (bit j - 1 for record j, (np + 6) / 8 bytes); for each
 * of them, put_xor of the difference. At most 17 + (np + 6) / 8 + 9 (np -
 * 1) bytes with its tag, within SF_PK_MAX_RECORD a record. Each record
 * read where it is used: a copy into a local array first was a call of
 * the runtime's memcpy (`rep movsb`), whose start-up costs more than
 * these few records (bench/args_cost.sh). */
static inline __attribute__((always_inline)) uint8_t *pack_args2(struct sf_pack_state *st, uint8_t *o, const struct sf_event *pl, uint32_t np)
{
	uint64_t r0;
	memcpy(&r0, &pl[0], 8);
	uint32_t s = sf_pk_a2_slot(r0);
	uint64_t *h = st->a2[s];
	int head = st->a2n[s] != np || h[0] != r0;
	*o++ = (uint8_t)(SF_PK_ARGS2 | (head ? SF_PK_A2_HEAD : 0));
	*o++ = (uint8_t)s;
	if (head) {
		if (!st->a2n[s]) /* first use in this batch */
			zero_slot(h);
		st->a2n[s] = (uint8_t)np;
		h[0] = r0;
		*o++ = (uint8_t)np;
		memcpy(o, &r0, 8);
		o += 8;
	}
	/* The bitmap in a register (np - 1 <= 31 bits), stored after. */
	uint8_t *bits = o;
	uint32_t nb = (np + 6) / 8, bm = 0, j = 1, kept = np < SF_PK_A2REC ? np : SF_PK_A2REC;
	o += nb;
	for (; j < kept; j++) {
		uint64_t rj;
		memcpy(&rj, &pl[j], 8);
		uint64_t x = rj ^ h[j];
		h[j] = rj;
		if (x) {
			bm |= 1u << (j - 1);
			o = put_xor(o, x);
		}
	}
	for (; j < np; j++) { /* not remembered: against zero */
		uint64_t rj;
		memcpy(&rj, &pl[j], 8);
		if (rj) {
			bm |= 1u << (j - 1);
			o = put_xor(o, rj);
		}
	}
	if (nb) /* 1 up to 9 records: the common case */
		bits[0] = (uint8_t)bm;
	for (uint32_t k = 1; k < nb; k++)
		bits[k] = (uint8_t)(bm >> 8 * k);
	return o;
}

/* pack_values' common case, the same bytes without its loops: a slot
 * that holds this function and direction already (the last call's
 * values), 1 or 2 records (what the runtime's small plans write: 265k of
 * SQLite's 356k ARGS events under --auto-args). The writer's instructions
 * there: 75.1M -> 68.0M (bench/args_cost.sh's callgrind, 2,000 rows);
 * with pack_values' own shortcut for 3 to 8 records, 66.5M. */
static inline __attribute__((always_inline)) uint8_t *pack_values_again(uint8_t *o, uint64_t *h,
									 const struct sf_event *pl, uint32_t nv,
									 uint32_t s)
{
	uint64_t r0, r1 = 0, x1 = 0;
	memcpy(&r0, &pl[0], 8);
	uint64_t x0 = r0 ^ h[0];
	h[0] = r0;
	if (nv == 2) {
		memcpy(&r1, &pl[1], 8);
		x1 = r1 ^ h[1];
		h[1] = r1;
	}
	o[0] = (uint8_t)SF_PK_VALUES;
	o[1] = (uint8_t)s;
	o[2] = (uint8_t)((x0 != 0) | (x1 != 0) << 1);
	o += 3;
	if (x0)
		o = put_xor(o, x0);
	if (x1)
		o = put_xor(o, x1);
	return o;
}

/* Records j in [from, to) against the slot's h[j], which takes them:
 * put_xor of each that differs, bit j set in *mask. */
static inline __attribute__((always_inline)) uint8_t *put_xors(uint8_t *o, uint64_t *h, const struct sf_event *pl,
							       uint32_t from, uint32_t to, uint32_t *mask)
{
	for (uint32_t j = from; j < to; j++) {
		uint64_t rj;
		memcpy(&rj, &pl[j], 8);
		uint64_t x = rj ^ h[j];
		h[j] = rj;
		if (x) {
			*mask |= 1u << j;
			o = put_xor(o, x);
		}
	}
	return o;
}


/* A values slot taken over by another function or count (the head form):
 * its remembered records start from zero, and the count nv is written. */
static inline __attribute__((always_inline)) uint8_t *restart_slot(struct sf_pack_state *st, uint32_t s, uint32_t tag,
								    uint8_t *o, uint32_t nv)
{
	zero_slot(st->a2[s]);
	st->a2n[s] = (uint8_t)tag;
	*o++ = (uint8_t)nv;
	return o;
}

/* nv records at pl as a bitmap of (nv + 7) / 8 bytes and put_xor of each
 * record that differs: the first SF_PK_A2REC against the slot's memory h
 * (then remembered), the rest against zero. The third form's general case
 * and the fourth form's for more than 3 records. */
static inline __attribute__((always_inline)) uint8_t *put_bitmap_xors(uint8_t *o, uint64_t *h, const struct sf_event *pl,
								       uint32_t nv)
{
	uint8_t *bits = o;
	uint32_t nb = (nv + 7) / 8, bm = 0, kept = nv < SF_PK_A2REC ? nv : SF_PK_A2REC;
	o = put_xors(o + nb, h, pl, 0, kept, &bm);
	for (uint32_t j = kept; j < nv; j++) { /* not remembered: against zero */
		uint64_t rj;
		memcpy(&rj, &pl[j], 8);
		if (rj) {
			bm |= 1u << j;
			o = put_xor(o, rj);
		}
	}
	for (uint32_t k = 0; k < nb; k++)
		bits[k] = (uint8_t)(bm >> 8 * k);
	return o;
}
/* A values-only ARGS event (nv records, version 6) in the third form
 * (docs/FORMAT.md): a byte SF_PK_VALUES, | SF_PK_A2_HEAD when its slot
 * holds something else; the slot, picked by `key` (the word of the event
 * after it, whose values they are: the same function and direction come
 * to the same slot); if so, nv; a bitmap of the records that differ from
 * the slot's ((nv + 7) / 8 bytes, bit j for record j); put_xor of each
 * difference. The slots are the second form's, their count
 * SF_ARGS_VALUES | nv. */
static inline __attribute__((always_inline)) uint8_t *pack_values(struct sf_pack_state *st, uint8_t *o,
								   const struct sf_event *pl, uint32_t nv, uint32_t key)
{
	/* by the event's word alone: XOR'ed with nv, an entry with 2 values
	 * and its exit with 1 (id << 4 | 1 ^ 2, id << 4 | 2 ^ 1) took the
	 * same slot and evicted each other at every call */
	uint32_t s = sf_pk_a2_slot(key), tag = SF_ARGS_VALUES | nv;
	uint64_t *h = st->a2[s];
	int head = st->a2n[s] != tag;
	if (__builtin_expect(!head && nv <= 2, 1))
		return pack_values_again(o, h, pl, nv, s);
	if (!head && nv <= 8) { /* one bitmap byte, every record remembered */
		o[0] = (uint8_t)SF_PK_VALUES;
		o[1] = (uint8_t)s;
		uint8_t *bm8 = o + 2;
		uint32_t m = 0;
		o = put_xors(o + 3, h, pl, 0, nv, &m);
		*bm8 = (uint8_t)m;
		return o;
	}
	*o++ = (uint8_t)(SF_PK_VALUES | (head ? SF_PK_A2_HEAD : 0));
	*o++ = (uint8_t)s;
	if (head)
		o = restart_slot(st, s, tag, o, nv);
	return put_bitmap_xors(o, h, pl, nv);
}

/* The op of an entry or exit whose time needs no operand (the fourth
 * form's function event, at its values' time): pack_call's choice and
 * its updates of the stack and the table; *spell when the id follows. */
static inline __attribute__((always_inline)) uint32_t call_op(uint32_t *stack, uint32_t *mru, uint32_t *sp,
							      uint32_t kind, uint32_t id, uint32_t *spell)
{
	if (kind == SF_EV_ENTRY) {
		uint32_t slot = sf_pk_slot(id);
		*spell = mru[slot] != id;
		mru[slot] = id;
		stack[*sp % SF_PK_STACK] = id;
		++*sp;
		return *spell ? SF_PK_ENTRY_ID : SF_PK_ENTRY_MRU + slot;
	}
	uint32_t top = stack[(*sp - 1) % SF_PK_STACK];
	*spell = (top != id) | (*sp == 0);
	*sp -= *sp != 0;
	return SF_PK_EXIT + *spell;
}

/* A values-only ARGS event (nv records at pl) and the entry or exit fw
 * after it at the same time, in the fourth form (version 7,
 * docs/FORMAT.md), after op 7's tag: SF_PK_FUSED; a byte with the
 * function event's op, SF_PK_V4_HEAD when the slot (the third form's, by
 * fw) holds something else, and for up to 3 records their bitmap; the id
 * if the op spells it; the count if the head flag is set; for more than
 * 3 records, their bitmap; put_xor of each record that differs. Against
 * the third form and the function event's own tag: no slot byte, one
 * byte for the tag and the event, the bitmap in it for most calls (SQLite
 * under --auto-args, 20,000 rows: log 38.5 -> see docs/DESIGN.md). */
static inline __attribute__((always_inline)) uint8_t *pack_fused(struct sf_pack_state *st, uint8_t *o,
								  const struct sf_event *pl, uint32_t nv, uint32_t fw,
								  uint32_t *stack, uint32_t *mru, uint32_t *sp)
{
	uint32_t spell, op = call_op(stack, mru, sp, fw & SF_KIND_MASK, fw >> SF_KIND_BITS, &spell);
	uint32_t s = sf_pk_a2_slot(fw), tag = SF_ARGS_VALUES | nv, bm = 0;
	uint64_t *h = st->a2[s];
	int head = st->a2n[s] != tag;
	uint8_t *f = o + 1;
	o[0] = (uint8_t)SF_PK_FUSED;
	o += 2;
	if (__builtin_expect(spell, 0))
		o = put_varint(o, fw >> SF_KIND_BITS);
	if (__builtin_expect(!head && nv <= 2, 1)) {
		/* the common case (pack_values_again's): no loop */
		uint64_t r0, r1 = 0, x1 = 0;
		memcpy(&r0, &pl[0], 8);
		uint64_t x0 = r0 ^ h[0];
		h[0] = r0;
		if (nv == 2) {
			memcpy(&r1, &pl[1], 8);
			x1 = r1 ^ h[1];
			h[1] = r1;
		}
		*f = (uint8_t)(op << 4 | (x0 != 0) | (x1 != 0) << 1);
		if (x0)
			o = put_xor(o, x0);
		if (x1)
			o = put_xor(o, x1);
		return o;
	}
	if (head)
		o = restart_slot(st, s, tag, o, nv);
	if (nv <= 3) {
		o = put_xors(o, h, pl, 0, nv, &bm);
		*f = (uint8_t)(op << 4 | (head ? SF_PK_V4_HEAD : 0) | bm);
		return o;
	}
	*f = (uint8_t)(op << 4 | (head ? SF_PK_V4_HEAD : 0));
	return put_bitmap_xors(o, h, pl, nv);
}

/* Whether the values-only ARGS event at ev[i] (nv records) and the record
 * after them go in the fourth form: an entry or exit at its time. */
static inline __attribute__((always_inline)) int fusable(const struct sf_event *ev, size_t i, uint32_t nv, size_t n)
{
	if (i + 1 + nv >= n)
		return 0;
	uint32_t fk = ev[i + 1 + nv].word & SF_KIND_MASK;
	return (fk == SF_EV_ENTRY || fk == SF_EV_EXIT) && ev[i + 1 + nv].time_lo == ev[i].time_lo;
}

/* An XOR difference as put_xor wrote it, at *p before end: 0, or -1 if
 * cut or its mask is zero. */
static int get_xor(const uint8_t **p, const uint8_t *end, uint64_t *x)
{
	if (*p >= end || !**p)
		return -1;
	uint8_t m = *(*p)++;
	*x = 0;
	for (unsigned b = 0; b < 8; b++)
		if (m >> b & 1) {
			if (*p >= end)
				return -1;
			*x |= (uint64_t) * (*p)++ << (8 * b);
		}
	return 0;
}

/* The third form (pack_values), from its first byte on: the ARGS word
 * into *word. */
static int unpack_values(struct sf_unpack *u, uint32_t *word)
{
	const uint8_t *p = u->p, *end = u->end;
	struct sf_pack_state *st = &u->st;
	if (end - p < 2 || (p[0] & ~(SF_PK_VALUES | SF_PK_A2_HEAD)) || p[1] >= SF_PK_A2SLOTS)
		return -1;
	int head = p[0] & SF_PK_A2_HEAD;
	uint32_t s = p[1];
	uint64_t *h = st->a2[s];
	p += 2;
	if (head) {
		if (end - p < 1 || p[0] - 1u >= SF_ARGS_VALUES_MAX)
			return -1;
		memset(h, 0, sizeof(st->a2[s]));
		st->a2n[s] = (uint8_t)(SF_ARGS_VALUES | p[0]);
		p++;
	} else if (!(st->a2n[s] & SF_ARGS_VALUES)) {
		return -1; /* empty, or a second-form payload's */
	}
	uint32_t nv = st->a2n[s] & 0x3fu;
	const uint8_t *bits = p;
	if ((size_t)(end - p) < (nv + 7) / 8)
		return -1;
	p += (nv + 7) / 8;
	for (uint32_t j = 0; j < nv; j++) {
		uint64_t x = 0, prev = j < SF_PK_A2REC ? h[j] : 0;
		if (bits[j >> 3] >> (j & 7) & 1 && get_xor(&p, end, &x) < 0)
			return -1;
		u->coded_rec[j] = prev ^ x;
		if (j < SF_PK_A2REC)
			h[j] = prev ^ x;
	}
	if (nv & 7 && bits[(nv - 1) >> 3] >> (nv & 7)) /* bits past the last record are zero */
		return -1;
	u->p = p;
	u->coded = 1;
	u->coded_next = 0;
	u->payload_left = nv;
	*word = sf_event_word(SF_ARGS_VALUES | nv, SF_EV_ARGS);
	return 0;
}

static inline int varint_at(const uint8_t **p, const uint8_t *end, uint32_t *v);

/* The fourth form (pack_fused), from its first byte on: the ARGS word
 * into *word; its values, then the function event at the ARGS event's
 * time, become the coded records that follow. Out of line: inlined,
 * sf_unpack_next saved more registers on every record (`sftrace memory`
 * on a heap log: 6 instructions more a record). */
static __attribute__((noinline)) int unpack_fused(struct sf_unpack *u, uint32_t *word)
{
	const uint8_t *p = u->p + 1, *end = u->end;
	struct sf_pack_state *st = &u->st;
	if (p >= end)
		return -1;
	uint8_t f = *p++;
	uint32_t op = f >> 4, id, fw, bm = f & 7;
	if (op == SF_PK_EXIT) {
		if (!st->sp)
			return -1;
		id = stack_top(st);
		stack_pop(st, 1);
		fw = sf_event_word(id, SF_EV_EXIT);
	} else if (op == SF_PK_EXIT_ID || op == SF_PK_ENTRY_ID) {
		if (varint_at(&p, end, &id) < 0 || id >= SF_FUNC_ID_LIMIT)
			return -1;
		if (op == SF_PK_ENTRY_ID) {
			st->mru[sf_pk_slot(id)] = id;
			stack_push(st, id);
			fw = sf_event_word(id, SF_EV_ENTRY);
		} else {
			stack_pop(st, 1);
			fw = sf_event_word(id, SF_EV_EXIT);
		}
	} else if (op >= SF_PK_ENTRY_MRU) {
		id = st->mru[op - SF_PK_ENTRY_MRU];
		stack_push(st, id);
		fw = sf_event_word(id, SF_EV_ENTRY);
	} else {
		return -1; /* tail calls, unwinds, op 7: not in this form */
	}
	uint32_t s = sf_pk_a2_slot(fw);
	uint64_t *h = st->a2[s];
	if (f & SF_PK_V4_HEAD) {
		if (p >= end || p[0] - 1u >= SF_ARGS_VALUES_MAX)
			return -1;
		memset(h, 0, sizeof(st->a2[s]));
		st->a2n[s] = (uint8_t)(SF_ARGS_VALUES | p[0]);
		p++;
	} else if (!(st->a2n[s] & SF_ARGS_VALUES)) {
		return -1; /* empty, or a second-form payload's */
	}
	uint32_t nv = st->a2n[s] & 0x3fu;
	if (nv <= 3) {
		if (bm >> nv) /* bits past the last record are zero */
			return -1;
	} else {
		if (bm || (size_t)(end - p) < (nv + 7) / 8)
			return -1;
		for (uint32_t k = 0; k < (nv + 7) / 8; k++)
			bm |= (uint32_t)p[k] << 8 * k;
		p += (nv + 7) / 8;
		if (bm >> nv)
			return -1;
	}
	for (uint32_t j = 0; j < nv; j++) {
		uint64_t x = 0, prev = j < SF_PK_A2REC ? h[j] : 0;
		if (bm >> j & 1 && get_xor(&p, end, &x) < 0)
			return -1;
		u->coded_rec[j] = prev ^ x;
		if (j < SF_PK_A2REC)
			h[j] = prev ^ x;
	}
	struct sf_event fe = {st->prev, fw}; /* the ARGS event's time, just decoded */
	memcpy(&u->coded_rec[nv], &fe, 8);
	u->p = p;
	u->coded = 1;
	u->coded_next = 0;
	u->payload_left = nv + 1; /* the function event after the values */
	*word = sf_event_word(SF_ARGS_VALUES | nv, SF_EV_ARGS);
	return 0;
}

/* The second form, from its first byte on: the ARGS word into *word. */
static int unpack_args2(struct sf_unpack *u, uint32_t *word)
{
	const uint8_t *p = u->p, *end = u->end;
	struct sf_pack_state *st = &u->st;
	if (end - p >= 1 && (p[0] & ~SF_PK_A2_HEAD) == SF_PK_VALUES)
		return unpack_values(u, word);
	if (end - p >= 1 && p[0] == SF_PK_FUSED)
		return unpack_fused(u, word);
	if (end - p < 2 || (p[0] & ~(SF_PK_ARGS2 | SF_PK_A2_HEAD)) || p[1] >= SF_PK_A2SLOTS)
		return -1;
	int head = p[0] & SF_PK_A2_HEAD;
	uint32_t s = p[1];
	uint64_t *h = st->a2[s];
	p += 2;
	if (head) {
		if (end - p < 9 || p[0] - 1u >= SF_PK_AREC)
			return -1;
		if (!st->a2n[s])
			memset(h, 0, sizeof(st->a2[s]));
		st->a2n[s] = p[0];
		memcpy(&h[0], p + 1, 8);
		p += 9;
	} else if (!st->a2n[s] || st->a2n[s] > SF_PK_AREC) {
		return -1; /* empty, or a values-only payload's */
	}
	uint32_t np = st->a2n[s];
	const uint8_t *bits = p;
	if ((size_t)(end - p) < (np + 6) / 8)
		return -1;
	p += (np + 6) / 8;
	u->coded_rec[0] = h[0];
	for (uint32_t j = 1; j < np; j++) {
		uint64_t x = 0, prev = j < SF_PK_A2REC ? h[j] : 0;
		if (bits[(j - 1) >> 3] >> ((j - 1) & 7) & 1 && get_xor(&p, end, &x) < 0)
			return -1;
		u->coded_rec[j] = prev ^ x;
		if (j < SF_PK_A2REC)
			h[j] = prev ^ x;
	}
	/* Bits past the last record are zero (one encoding per payload). */
	if ((np - 1) & 7 && bits[(np - 2) >> 3] >> ((np - 1) & 7))
		return -1;
	u->p = p;
	u->coded = 1;
	u->coded_next = 0;
	u->payload_left = np;
	*word = sf_event_word(np, SF_EV_ARGS);
	return 0;
}

/* The first form (logs written before the second; still read). */
static int unpack_args(struct sf_unpack *u, uint32_t np)
{
	const uint8_t *p = u->p, *end = u->end;
	if (p >= end || (*p & 0x78))
		return -1;
	uint8_t first = *p++;
	uint64_t *h = u->st.ahist[first & 7];
	if (first & 0x80) {
		if (end - p < 8)
			return -1;
		memcpy(&h[0], p, 8);
		p += 8;
	}
	for (uint32_t j = 1; j < np; j++) {
		if (p >= end)
			return -1;
		uint8_t m = *p++;
		uint64_t x = 0;
		for (unsigned b = 0; b < 8; b++)
			if (m >> b & 1) {
				if (p >= end)
					return -1;
				x |= (uint64_t)*p++ << (8 * b);
			}
		h[j] ^= x;
	}
	memcpy(u->coded_rec, h, (size_t)np * 8);
	u->p = p;
	u->coded = 1;
	u->coded_next = 0;
	u->payload_left = np;
	return 0;
}

/* Records other than entries, exits and tail calls. Of the prediction
 * state only the depth changes (an unwind pops frames). */
static uint8_t *pack_other(uint32_t *sp, uint8_t *o, const struct sf_event *ev, size_t *i, size_t n, uint32_t z)
{
	uint32_t word = ev[*i].word;
	if (word && (word & SF_KIND_MASK) == SF_EV_UNWIND) {
		uint32_t frames = word >> SF_KIND_BITS;
		*sp -= frames < *sp ? frames : *sp;
		o = put_time(o, SF_PK_UNWIND, z);
		return put_varint(o, frames);
	}
	if ((word & SF_KIND_MASK) == SF_EV_TAIL_ENTRY)
		*sp -= *sp != 0; /* not its entry's: copied, but it pops like a tail call (the decoder does the same) */
	o = put_time(o, SF_PK_RAW, z);
	if ((word & SF_KIND_MASK) == SF_PK_ARGS2) /* not to be read as the second form of ARGS */
		*o++ = SF_PK_A2_WORD;
	memcpy(o, &word, 4);
	o += 4;
	size_t np = word ? sf_event_payload_count(word) : 0;
	for (; np && *i + 1 < n; np--) {
		++*i;
		memcpy(o, &ev[*i], 8);
		o += 8;
	}
	return o;
}

_Static_assert(SF_EV_EXIT + 1 == SF_EV_TAIL && SF_PK_EXIT + 2 == SF_PK_TAIL && SF_PK_EXIT + 1 == SF_PK_EXIT_ID &&
		       SF_PK_TAIL + 1 == SF_PK_TAIL_ID,
	       "pack_call computes the exit and tail-call ops from the kind");

/* The tag and the time, the usual delta (8 to 1023) without put_time's
 * tests. */
static inline __attribute__((always_inline)) uint8_t *put_tag(uint8_t *o, uint32_t op, uint32_t z)
{
	if (__builtin_expect(z - 8 < 0x400 - 8, 1)) {
		o[0] = (uint8_t)(op << 4 | 8 | (z & 7));
		o[1] = (uint8_t)(z >> 3);
		return o + 2;
	}
	return put_time(o, op, z);
}

/* One entry, exit or tail call. The prediction state is in the caller's
 * locals: kept in *st, the stack depth would go through memory on every
 * event (stores into st->stack may alias it, as far as the compiler knows),
 * chaining each event to the one before. */
static inline __attribute__((always_inline)) uint8_t *pack_call(uint8_t *o, uint32_t *stack, uint32_t *mru,
								 uint32_t *sp, uint32_t kind, uint32_t id, uint32_t z)
{
	uint32_t op, spell;
	if (kind == SF_EV_ENTRY) {
		uint32_t slot = sf_pk_slot(id);
		spell = mru[slot] != id;
		mru[slot] = id;
		stack[*sp % SF_PK_STACK] = id;
		++*sp;
		op = spell ? SF_PK_ENTRY_ID : SF_PK_ENTRY_MRU + slot;
	} else {
		uint32_t top = stack[(*sp - 1) % SF_PK_STACK];
		spell = (top != id) | (*sp == 0);
		if (__builtin_expect(spell && !id && kind == SF_EV_TAIL, 0)) {
			/* op 4 with id 0 is kind 15's: a kind-3 word with id 0
			 * (never a function's) is copied, op 7, which pops nothing */
			uint32_t w = sf_event_word(0, SF_EV_TAIL);
			o = put_time(o, SF_PK_RAW, z);
			memcpy(o, &w, 4);
			return o + 4;
		}
		*sp -= *sp != 0;
		op = (kind - SF_EV_EXIT) * 2 + SF_PK_EXIT + spell;
	}
	o = put_tag(o, op, z);
	if (__builtin_expect(spell, 0))
		o = put_varint(o, id);
	return o;
}

/* An entry whose exit comes next (a leaf call, the commonest pair of events
 * in a trace): the exit is the innermost open entry's, so it is coded
 * without the stack, and the depth is as before the pair. The entry is
 * still pushed, because the decoder pushes it. */
static inline __attribute__((always_inline)) uint8_t *pack_leaf(uint8_t *o, uint32_t *stack, uint32_t *mru,
								 uint32_t sp, uint32_t id, uint32_t z, uint32_t z_exit)
{
	uint32_t slot = sf_pk_slot(id), spell = mru[slot] != id;
	mru[slot] = id;
	stack[sp % SF_PK_STACK] = id;
	o = put_tag(o, spell ? SF_PK_ENTRY_ID : SF_PK_ENTRY_MRU + slot, z);
	if (__builtin_expect(spell, 0))
		o = put_varint(o, id);
	return put_tag(o, SF_PK_EXIT, z_exit);
}

size_t sf_pack_batch(struct sf_pack_state *restrict st, const struct sf_event *restrict ev, size_t n,
		     uint8_t *restrict out, size_t cap)
{
	uint8_t *o = out, *end = out + cap;
	uint32_t prev = st->prev, sp = st->sp;
	uint32_t stack[SF_PK_STACK], mru[SF_PK_MRU];
	memcpy(stack, st->stack, sizeof(stack));
	memcpy(mru, st->mru, sizeof(mru));
	for (size_t i = 0; i < n; i++) {
		/* Room for the rest at the most bytes a record can take: the
		 * loop below then checks nothing per event. */
		if ((size_t)(end - o) < (n - i) * SF_PK_MAX_RECORD + SF_PK_MAX_GROUP) {
			if ((size_t)(end - o) < SF_PK_MAX_GROUP)
				return 0;
		} else {
			for (; i < n; i++) {
				uint32_t word = ev[i].word, kind = word & SF_KIND_MASK;
				if (__builtin_expect(kind - SF_EV_ENTRY > SF_EV_TAIL - SF_EV_ENTRY, 0)) {
					/* record -A/-R puts an ARGS event before nearly every
					 * call of its functions: op 7 here, as pack_other
					 * codes it, without leaving the loop. The room check
					 * above covers it (SF_PK_MAX_RECORD per record). */
					/* First the runtime's common case, with one test of
					 * the word: a values-only ARGS event and the entry or
					 * exit claimed with it, at its time (the fourth
					 * form); nv a constant in the copies of pack_fused
					 * for 1 and 2 records (the small plans'). The same
					 * bytes as the general way below, fewer instructions
					 * (the writer's packing is what record -A/-R's calls
					 * wait for: bench/args_cost.sh). */
					uint32_t d = word - sf_event_word(SF_ARGS_VALUES | 1, SF_EV_ARGS);
					if (__builtin_expect(!(d & 15) && d <= (SF_ARGS_VALUES_MAX - 1) << SF_KIND_BITS, 1)) {
						uint32_t nv = (d >> SF_KIND_BITS) + 1;
						size_t j = i + 1 + nv; /* the function event */
						if (j < n) {
							uint32_t fw = ev[j].word, fk = fw & SF_KIND_MASK;
							if (fk - SF_EV_ENTRY <= SF_EV_EXIT - SF_EV_ENTRY && ev[j].time_lo == ev[i].time_lo) {
								o = put_tag(o, SF_PK_RAW, zigzag(ev[i].time_lo - prev));
								prev = ev[i].time_lo;
								if (nv == 1)
									o = pack_fused(st, o, &ev[i + 1], 1, fw, stack, mru, &sp);
								else if (nv == 2)
									o = pack_fused(st, o, &ev[i + 1], 2, fw, stack, mru, &sp);
								else
									o = pack_fused(st, o, &ev[i + 1], nv, fw, stack, mru, &sp);
								i = j;
								continue;
							}
						}
					}
					uint32_t np = word >> SF_KIND_BITS;
					if (kind == SF_EV_ARGS && sf_args_word_values(word) && i + (np & 0x3f) < n) {
						uint32_t nv = np & 0x3f;
						o = put_time(o, SF_PK_RAW, zigzag(ev[i].time_lo - prev));
						prev = ev[i].time_lo;
						if (__builtin_expect(fusable(ev, i, nv, n), 1)) {
							/* the function event the runtime claimed
							 * with the values, at their time */
							o = pack_fused(st, o, &ev[i + 1], nv, ev[i + 1 + nv].word, stack, mru, &sp);
							i += nv + 1;
							continue;
						}
						o = pack_values(st, o, &ev[i + 1], nv, i + 1 + nv < n ? ev[i + 1 + nv].word : 0);
						i += nv;
						/* The function event the runtime claimed with the
						 * values, at their time: coded here, without the
						 * loop's dispatch (the same bytes: a leaf pair
						 * codes as its entry and exit do apart). */
						if (i + 1 < n) {
							uint32_t fw = ev[i + 1].word, fk = fw & SF_KIND_MASK;
							if (fk - SF_EV_ENTRY <= SF_EV_TAIL - SF_EV_ENTRY && ev[i + 1].time_lo == prev) {
								o = pack_call(o, stack, mru, &sp, fk, fw >> SF_KIND_BITS, 0);
								i++;
							}
						}
						continue;
					}
					if (kind != SF_EV_ARGS || np > SF_ARGS_MAX_RECORDS || i + np >= n)
						break;
					o = put_time(o, SF_PK_RAW, zigzag(ev[i].time_lo - prev));
					prev = ev[i].time_lo;
					if (!np) {
						memcpy(o, &word, 4);
						o += 4;
						continue;
					}
					o = pack_args2(st, o, &ev[i + 1], np);
					i += np;
					continue;
				}
				uint32_t z = zigzag(ev[i].time_lo - prev);
				prev = ev[i].time_lo;
				if (kind == SF_EV_ENTRY && i + 1 < n &&
				    ev[i + 1].word == word - SF_EV_ENTRY + SF_EV_EXIT) {
					uint32_t z_exit = zigzag(ev[i + 1].time_lo - prev);
					prev = ev[++i].time_lo;
					o = pack_leaf(o, stack, mru, sp, word >> SF_KIND_BITS, z, z_exit);
					continue;
				}
				o = pack_call(o, stack, mru, &sp, kind, word >> SF_KIND_BITS, z);
			}
			if (i == n)
				break;
		}
		uint32_t word = ev[i].word, kind = word & SF_KIND_MASK;
		uint32_t z = zigzag(ev[i].time_lo - prev);
		prev = ev[i].time_lo;
		if (kind - SF_EV_ENTRY <= SF_EV_TAIL - SF_EV_ENTRY) {
			o = pack_call(o, stack, mru, &sp, kind, word >> SF_KIND_BITS, z);
			continue;
		}
		uint32_t np = word >> SF_KIND_BITS;
		if (kind == SF_EV_TAIL_ENTRY && sp && stack[(sp - 1) % SF_PK_STACK] == np) {
			/* its entry's, as op 3 for kind 3: op 4 with id 0 */
			sp--;
			o = put_tag(o, SF_PK_TAIL_ID, z);
			*o++ = 0;
			continue;
		}
		if (sf_pk_args_coded(word))
			return 0; /* a corrupt ARGS word that would read as coded: the batch goes raw */
		if (kind == SF_EV_ARGS && sf_args_word_values(word) && i + (np & 0x3f) < n) {
			uint32_t nv = np & 0x3f; /* as in the loop above */
			if ((size_t)(end - o) < SF_PK_MAX_GROUP + 10 + 9 * (size_t)nv)
				return 0;
			o = put_time(o, SF_PK_RAW, z);
			if (fusable(ev, i, nv, n)) { /* as in the loop above */
				o = pack_fused(st, o, &ev[i + 1], nv, ev[i + 1 + nv].word, stack, mru, &sp);
				i += nv + 1;
				continue;
			}
			o = pack_values(st, o, &ev[i + 1], nv, i + 1 + nv < n ? ev[i + 1 + nv].word : 0);
			i += nv;
			continue;
		}
		if (kind == SF_EV_ARGS && np && np <= SF_ARGS_MAX_RECORDS && i + np < n) {
			/* Coded as in the loop above, so the bytes do not depend
			 * on the room; at most 10 + 9 bytes a payload record. */
			if ((size_t)(end - o) < SF_PK_MAX_GROUP + 10 + 9 * (size_t)np)
				return 0;
			o = put_time(o, SF_PK_RAW, z);
			o = pack_args2(st, o, &ev[i + 1], np);
			i += np;
			continue;
		}
		o = pack_other(&sp, o, ev, &i, n, z);
	}
	st->prev = prev;
	st->sp = sp;
	memcpy(st->stack, stack, sizeof(stack));
	memcpy(st->mru, mru, sizeof(mru));
	return (size_t)(o - out);
}

void sf_unpack_init(struct sf_unpack *u, uint64_t base, const uint8_t *p, const uint8_t *end)
{
	sf_pack_reset(&u->st, base);
	u->p = p;
	u->end = end;
	u->payload_left = 0;
	u->coded = 0;
	u->coded_next = 0;
}

/* A varint of at most 32 bits at *p, before end; -1 if cut or too long. */
static inline int varint_at(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t x = 0;
	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		if (shift == 28 && b > 0x0f)
			return -1;
		x |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

static int get_varint(struct sf_unpack *u, uint32_t *v)
{
	return varint_at(&u->p, u->end, v);
}

/* A coded ARGS event (second, third or fourth form) into rec, whose time
 * is set: sf_unpack_next's, out of its way. Inlined there, the forms'
 * decoders made it save four registers on every record (`sftrace
 * memory` on a heap log, test_skeptic27c2: 1,399 -> 1,473 instructions
 * a heap event); called in a tail position, nothing is saved. */
static __attribute__((noinline)) int coded_args(struct sf_unpack *u, struct sf_event *rec)
{
	uint32_t word;
	if (unpack_args2(u, &word) < 0)
		return -1;
	rec->word = word;
	return 1;
}

/* The first form's ARGS event (word, its flag cleared) into rec, as
 * coded_args. */
static __attribute__((noinline)) int first_form_args(struct sf_unpack *u, struct sf_event *rec, uint32_t word)
{
	if (unpack_args(u, word >> SF_KIND_BITS) < 0)
		return -1;
	rec->word = word;
	return 1;
}

int sf_unpack_next(struct sf_unpack *u, struct sf_event *rec, const uint8_t **at)
{
	*at = u->p;
	/* A coded payload's records are decoded already: they come even
	 * where the bytes end (the last event of a batch, often a filler a
	 * cut claim left at the end of a slot; they were read as lost). */
	if (u->payload_left && u->coded) {
		memcpy(rec, &u->coded_rec[u->coded_next++], 8);
		u->coded = --u->payload_left != 0;
		return 1;
	}
	if (u->p >= u->end)
		return 0;
	if (u->payload_left) {
		if ((size_t)(u->end - u->p) < 8)
			return -1;
		memcpy(rec, u->p, 8);
		u->p += 8;
		u->payload_left--;
		return 1;
	}
	uint8_t tag = *u->p++;
	uint32_t z = tag & 7, hi, id = 0, word;
	if (tag & 8) {
		if (get_varint(u, &hi) < 0 || hi > 0x1fffffff)
			return -1;
		z |= hi << 3;
	}
	struct sf_pack_state *st = &u->st;
	rec->time_lo = st->prev + unzigzag(z);
	st->prev = rec->time_lo;
	unsigned op = tag >> 4;
	switch (op) {
	case SF_PK_EXIT:
	case SF_PK_TAIL:
		if (!st->sp)
			return -1;
		id = stack_top(st);
		stack_pop(st, 1);
		word = sf_event_word(id, op == SF_PK_EXIT ? SF_EV_EXIT : SF_EV_TAIL);
		break;
	case SF_PK_EXIT_ID:
	case SF_PK_TAIL_ID:
	case SF_PK_ENTRY_ID:
	case SF_PK_UNWIND:
		if (get_varint(u, &id) < 0 || id >= SF_FUNC_ID_LIMIT)
			return -1;
		if (op == SF_PK_TAIL_ID && !id) { /* kind 15 of the innermost open entry */
			if (!st->sp)
				return -1;
			id = stack_top(st);
			stack_pop(st, 1);
			word = sf_event_word(id, SF_EV_TAIL_ENTRY);
		} else if (op == SF_PK_ENTRY_ID) {
			st->mru[sf_pk_slot(id)] = id;
			stack_push(st, id);
			word = sf_event_word(id, SF_EV_ENTRY);
		} else if (op == SF_PK_UNWIND) {
			stack_pop(st, id);
			word = sf_event_word(id, SF_EV_UNWIND);
		} else {
			stack_pop(st, 1);
			word = sf_event_word(id, op == SF_PK_EXIT_ID ? SF_EV_EXIT : SF_EV_TAIL);
		}
		break;
	case SF_PK_RAW:
		if (u->p < u->end && (*u->p & SF_KIND_MASK) == SF_PK_ARGS2 && *u->p != SF_PK_A2_WORD)
			return coded_args(u, rec); /* a tail call: this function saves no register */
		int esc = u->p < u->end && *u->p == SF_PK_A2_WORD;
		u->p += esc;
		if ((size_t)(u->end - u->p) < 4)
			return -1;
		memcpy(&word, u->p, 4);
		u->p += 4;
		if (esc != ((word & SF_KIND_MASK) == SF_PK_ARGS2))
			return -1; /* one encoding for each word */
		if (sf_pk_args_coded(word))
			return first_form_args(u, rec, word & ~SF_PK_ARGS_CODED); /* a tail call too */
		u->payload_left = word ? sf_event_payload_count(word) : 0;
		if ((word & SF_KIND_MASK) == SF_EV_TAIL_ENTRY)
			stack_pop(st, 1);
		break;
	case 0:
		return -1;
	default: {
		id = st->mru[op - SF_PK_ENTRY_MRU];
		stack_push(st, id);
		word = sf_event_word(id, SF_EV_ENTRY);
		break;
	}
	}
	rec->word = word;
	return 1;
}

uint32_t sf_unpack_prefix(uint64_t base, const uint8_t *p, size_t len, uint32_t n, size_t *used)
{
	struct sf_unpack u;
	struct sf_event rec;
	const uint8_t *at;
	uint32_t k = 0;
	sf_unpack_init(&u, base, p, p + len);
	*used = 0;
	while (k < n && sf_unpack_next(&u, &rec, &at) == 1) {
		k++;
		*used = (size_t)(u.p - p);
	}
	return k;
}

int sf_unpack_count(struct sf_unpack *u, uint32_t max, uint32_t *n)
{
	/* Locals, not u's fields: stores through u would be reloaded each op. */
	const uint8_t *p = u->p, *end = u->end;
	uint32_t k = 0, sp = u->st.sp, hi, id;
	/* The ids of open entries and the table, as sf_unpack_next keeps
	 * them: the fourth form's slot is its function event's (an exit of
	 * the top, an entry from the table), so the RAW groups it reads
	 * after this need them right. */
	uint32_t *stack = u->st.stack, *mru = u->st.mru;
	enum sf_count_stop r = SF_COUNT_MAX;
	if (u->payload_left)
		max = 0, r = SF_COUNT_RAW; /* sf_unpack_next is mid-group */
	for (; k < max; k++) {
		if (p >= end) {
			r = SF_COUNT_END;
			break;
		}
		unsigned op = *p >> 4;
		if (op == SF_PK_RAW) { /* left whole for sf_unpack_next */
			r = SF_COUNT_RAW;
			break;
		}
		/* Times are not kept, but a bad one ends the stream. Most take
		 * one byte after the tag. */
		if (!(*p++ & 8))
			;
		else if (p < end && *p < 0x80)
			p++;
		else if (varint_at(&p, end, &hi) < 0 || hi > 0x1fffffff) {
			r = SF_COUNT_BAD;
			break;
		}
		if (op >= SF_PK_ENTRY_MRU) {
			stack[sp++ % SF_PK_STACK] = mru[op - SF_PK_ENTRY_MRU];
		} else if (op == SF_PK_EXIT || op == SF_PK_TAIL) {
			if (!sp) {
				r = SF_COUNT_BAD;
				break;
			}
			sp--;
		} else if (op == 0 || varint_at(&p, end, &id) < 0 || id >= SF_FUNC_ID_LIMIT) {
			r = SF_COUNT_BAD;
			break;
		} else if (op == SF_PK_ENTRY_ID) {
			mru[sf_pk_slot(id)] = id;
			stack[sp++ % SF_PK_STACK] = id;
		} else if (op == SF_PK_TAIL_ID && !id && !sp) { /* kind 15 of the top, on an empty stack */
			r = SF_COUNT_BAD;
			break;
		} else {
			uint32_t pop = op == SF_PK_UNWIND ? id : 1;
			sp -= pop < sp ? pop : sp;
		}
	}
	u->p = p;
	u->st.sp = sp;
	*n = k;
	return r;
}

_Static_assert(SF_PK_AREC == SF_ARGS_MAX_RECORDS, "a coded ARGS payload fits the history");
