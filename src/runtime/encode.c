/* What a full batch becomes in the log file: the packed chunk of
 * format/packed.h (about a third of the raw records' bytes), or the raw
 * records themselves. The trampolines still store raw 8-byte records into
 * the mapped slot, so live slots are as crash-safe as before; only the copy
 * handed off is re-coded, by the writer thread where there is one.
 *
 * The workspace (prediction state and output) belongs to the slot, because
 * exactly one context hands a slot's batch off at a time (its thread in the
 * slow path, or the writer thread once the slot is queued). It is mapped
 * on first use, never malloc'd, and is reused by the slot's later owners. */
#include "format/packed.h"
#include "runtime/runtime.h"

#define RAW_BYTES (SF_SLOT_EVENTS * sizeof(struct sf_event))

struct sf_pack_area {
	struct sf_pack_state st;
	/* Room for the worst case, so the coder checks nothing per event;
	 * pages past what a batch uses are never touched. */
	uint8_t out[SF_SLOT_EVENTS * SF_PK_MAX_RECORD + SF_PK_MAX_GROUP];
	/* Record-time trimming (trim.c): the batch without the calls it
	 * drops. Pages untouched unless trimming is on. */
	struct sf_event trimmed[SF_SLOT_EVENTS];
	uint32_t stack[SF_SLOT_EVENTS];
};

static const struct sf_event *slot_records(const struct sf_slot *s)
{
	return (const struct sf_event *)(s->hdr + 1);
}

void sf_write_batch_chunk(struct sf_chunk *c, struct sf_slot *s, size_t n)
{
	if (!n)
		return;
	const struct sf_event *ev = slot_records(s);
	if ((sf_config.encoding == SF_ENCODING_PACKED || sf_trim_enabled()) && !s->pack)
		s->pack = sf_map_anon(sizeof(struct sf_pack_area));
	if (sf_trim_enabled() && s->pack) {
		struct sf_pack_area *a = s->pack;
		size_t kept = sf_trim_batch(ev, n, c->base, a->trimmed, a->stack);
		struct sf_header *h = sf_log_header();
		if (kept < n && h)
			__atomic_add_fetch(&h->reserved[SF_HDR_TRIMMED], n - kept, __ATOMIC_RELAXED);
		ev = a->trimmed;
		n = kept;
	}
	size_t raw = n * sizeof(struct sf_event);
	c->count = (uint32_t)n;
	if (sf_config.encoding == SF_ENCODING_PACKED && s->pack) {
		struct sf_pack_area *a = s->pack;
		sf_pack_reset(&a->st, c->base);
		/* Never more bytes than raw: a batch that does not shrink goes raw. */
		size_t len = sf_pack_batch(&a->st, ev, n, a->out, sizeof(a->out));
		if (len && len < raw) {
			c->type = SF_CHUNK_PACKED;
			c->reserved = len;
			sf_log_write_chunk(c, a->out, len, n);
			return;
		}
	}
	c->type = SF_CHUNK_DATA;
	sf_log_write_chunk(c, ev, raw, n);
}
