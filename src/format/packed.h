/* The packed DATA chunk (type SF_CHUNK_PACKED, format version 4): a
 * lossless re-coding of a batch's 8-byte records, done when a full slot is
 * handed off (docs/FORMAT.md describes it byte by byte). Shared by the
 * runtime (encoder) and the reader (streaming decoder): no allocation, no
 * libc beyond memcpy, so both sides can use it.
 *
 * Each event is a tag byte `op << 4 | more << 3 | t` then operands:
 *   time: zigzag(int32(time_lo - previous time_lo)), low 3 bits in t, the
 *         rest as a LEB128 varint when `more` is set (previous: the batch
 *         base's low half for the first event);
 *   ops:  see enum sf_pack_op; exits and tail calls of the innermost open
 *         entry of the batch need no id; an entry of a function
 *         that is still in its slot of an 8-way table of entered ids
 *         (slot = a hash of the id) names the slot in the op.
 * Records that are not function or unwind events (allocation and heap
 * events, zero words) are copied whole, with their payload records. */
#ifndef SFTRACE_FORMAT_PACKED_H
#define SFTRACE_FORMAT_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "format/sflog.h"

enum sf_pack_op {
	/* 0 is no op: a zero tag is a byte never written (a hand-off cut
	 * short by a crash leaves zeros), so decoding stops there. */
	SF_PK_EXIT = 1,      /* exit of the innermost open entry */
	SF_PK_EXIT_ID = 2,   /* exit, varint id */
	SF_PK_TAIL = 3,      /* tail call of the innermost open entry */
	SF_PK_TAIL_ID = 4,   /* tail call, varint id; id 0: kind 15 (SF_EV_TAIL_ENTRY) of the innermost open entry */
	SF_PK_ENTRY_ID = 5,  /* entry, varint id */
	SF_PK_UNWIND = 6,    /* unwind, varint frame count */
	SF_PK_RAW = 7,       /* u32 word, then its payload records (8 bytes each) */
	SF_PK_ENTRY_MRU = 8, /* 8..15: entry of the function in table slot op - 8 */
};

#define SF_PK_MRU   8u
#define SF_PK_STACK 64u   /* open entries remembered (a ring: deeper ones are forgotten) */
#define SF_PK_MAX_GROUP 48u /* most bytes one event and its payload take */
#define SF_PK_MAX_RECORD 11u /* most bytes per 8-byte record, over a whole batch */
/* Most records per payload byte, over a whole chunk: a coded ARGS event
 * is its word, up to 32 payload records and (fourth form) the function
 * event after it, 34 records, in as few as 7 bytes when its values repeat
 * (tag, form byte, op or slot byte, a 4-byte bitmap of zeros): 4.7 a
 * byte. A reader checks a PACKED chunk's count against its bytes times
 * this (a record per byte is not a bound: a call with a long /s string
 * codes 8 records in 4 bytes). */
#define SF_PK_MAX_PER_BYTE 5u

/* Prediction state, reset at the start of every batch (each chunk decodes
 * on its own). Encoder and decoder update it identically. */
#define SF_PK_ARGS_CODED 0x80000000u /* op 7's word: an ARGS event with its payload coded (first form, read only) */
#define SF_PK_AHIST 8u               /* ARGS payloads remembered, by header (sf_pk_args_slot) */
#define SF_PK_AREC 32u               /* payload records of one ARGS event at most (SF_ARGS_MAX_RECORDS) */
/* The second form (what encoders write): op 7's first byte has the low
 * nibble SF_PK_ARGS2 (kind 14, which no word copied by op 7 may have)
 * instead of a 4-byte word; docs/FORMAT.md. */
#define SF_PK_ARGS2 0x0eu
#define SF_PK_A2_HEAD 0x10u  /* the first byte's flag: the count and the header follow */
#define SF_PK_A2_WORD 0x2eu  /* op 7's first byte for a word of kind 14 (not an ARGS event): the word follows */
#define SF_PK_VALUES 0x4eu   /* the third form: a values-only ARGS event (version 6), | SF_PK_A2_HEAD */
/* The fourth form (version 7): a values-only ARGS event and the entry or
 * exit right after it, at its time, in one op 7 (docs/FORMAT.md): this
 * byte, then the function event's op | SF_PK_V4_HEAD | a bitmap of up to
 * 3 records, its id if the op spells one, the count if the head flag is
 * set, a bitmap past 3 records, the XORs. */
#define SF_PK_FUSED 0x6eu
#define SF_PK_V4_HEAD 0x08u  /* the fourth form's second byte: the count follows */
#define SF_PK_A2SLOTS 128u   /* payloads remembered, by header (sf_pk_a2_slot) */
#define SF_PK_A2REC 16u      /* records remembered of each (the later ones are coded against zero) */

struct sf_pack_state {
	uint32_t prev;               /* previous event's time_lo */
	uint32_t sp;                 /* open entries pushed minus popped (>= 0) */
	uint32_t stack[SF_PK_STACK]; /* function ids, index sp % SF_PK_STACK */
	uint32_t mru[SF_PK_MRU];     /* ids of entered functions, at slot sf_pk_slot(id) */
	/* The last coded ARGS payload of each slot: its header and values. */
	uint64_t ahist[SF_PK_AHIST][SF_PK_AREC];
	/* The second form's: a2n[s] its record count (0: the slot is empty
	 * in this batch, and its records are taken as zero; SF_ARGS_VALUES |
	 * n: the third form's, n values-only records), a2[s] the header (not
	 * in the third form) and the first records. Only a2n is cleared per
	 * batch. */
	uint8_t a2n[SF_PK_A2SLOTS];
	uint64_t a2[SF_PK_A2SLOTS][SF_PK_A2REC];
};

/* The table slot of a function id: the top 3 bits of id * 0x9e3779b1. */
static inline uint32_t sf_pk_slot(uint32_t id)
{
	return (id * 0x9e3779b1u) >> 29;
}

/* Whether op 7's word is a coded ARGS event: the flag, kind ARGS and 1 to
 * SF_PK_AREC payload records. (Other words with the top bit set, function
 * ids of 2^27 and up, are copied as they are; an ARGS record word that
 * would read as this makes its batch go raw.) */
static inline int sf_pk_args_coded(uint32_t word)
{
	uint32_t np = (word & ~SF_PK_ARGS_CODED) >> SF_KIND_BITS;
	return (word & SF_PK_ARGS_CODED) && (word & SF_KIND_MASK) == SF_EV_ARGS && np - 1 < SF_PK_AREC;
}

/* The ARGS history slot of a payload header. */
static inline uint32_t sf_pk_args_slot(uint64_t head)
{
	return sf_pk_slot((uint32_t)head ^ (uint32_t)(head >> 32));
}

/* The second form's slot of a payload header: 7 bits of the same hash. */
static inline uint32_t sf_pk_a2_slot(uint64_t head)
{
	return ((uint32_t)head ^ (uint32_t)(head >> 32)) * 0x9e3779b1u >> 25;
}

void sf_pack_reset(struct sf_pack_state *st, uint64_t base);

/* Encodes n records into out (cap bytes). Returns the bytes written, or 0
 * if they do not fit in cap (the caller then writes the records raw). */
size_t sf_pack_batch(struct sf_pack_state *restrict st, const struct sf_event *restrict ev, size_t n,
		     uint8_t *restrict out, size_t cap);

/* Streaming decoder: one record per call. */
struct sf_unpack {
	struct sf_pack_state st;
	const uint8_t *p, *end;
	uint32_t payload_left; /* payload records of the last raw event still to come */
	uint32_t coded_next;   /* a coded ARGS payload: the next of coded[] (payload_left > 0) */
	int coded;             /* payload_left counts coded[] records, not bytes */
	uint64_t coded_rec[SF_PK_AREC];
};

void sf_unpack_init(struct sf_unpack *u, uint64_t base, const uint8_t *p, const uint8_t *end);
/* The next record into *rec and its byte position into *at: 1; 0 at the end
 * of the bytes; -1 on a malformed op or operand (the rest is unreadable). */
int sf_unpack_next(struct sf_unpack *u, struct sf_event *rec, const uint8_t **at);

/* Of the first `len` bytes of a packed payload of n records (base: the
 * batch's time base): how many records decode whole; *used = their bytes. */
uint32_t sf_unpack_prefix(uint64_t base, const uint8_t *p, size_t len, uint32_t n, size_t *used);

/* Counting without decoding (opening a log counts every batch): walks up to
 * max records of function ops (entries, exits, tail calls, unwinds: one
 * event each) under the same rules as sf_unpack_next, keeping the open
 * entries and the table of entered ids (the fourth form's slot is named
 * by its function's id), not the times. *n = records passed. Stops before
 * a RAW op (or inside one's payload) for sf_unpack_next to read; from then
 * on that decodes which records are whole and the RAW words and payloads
 * right, but not the times of function events (not kept). */
enum sf_count_stop {
	SF_COUNT_MAX = 1,  /* max records passed */
	SF_COUNT_RAW = 2,  /* a RAW record next: read it with sf_unpack_next */
	SF_COUNT_END = 0,  /* the bytes ended (as sf_unpack_next's 0) */
	SF_COUNT_BAD = -1, /* a malformed op or operand (as sf_unpack_next's -1) */
};
int sf_unpack_count(struct sf_unpack *u, uint32_t max, uint32_t *n);

#endif
