#include "output/perfetto.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "lib/util.h"
#include "output/protobuf.h"

/* Field numbers and the semantics we rely on, checked against Perfetto's own
 * sources (google/perfetto):
 *
 *   protos/perfetto/trace/trace_packet.proto: TracePacket.clock_snapshot = 6,
 *     timestamp = 8, trusted_packet_sequence_id = 10, track_event = 11,
 *     interned_data = 12, sequence_flags = 13, timestamp_clock_id = 58,
 *     trace_packet_defaults = 59, track_descriptor = 60,
 *     first_packet_on_sequence = 87. trace_packet_defaults "Requires that any
 *     future packet emitted on the same sequence specifies the
 *     SEQ_NEEDS_INCREMENTAL_STATE flag"; a timestamp without a clock id (and
 *     no default) is BOOTTIME.
 *   protos/perfetto/trace/trace_packet_defaults.proto: TracePacketDefaults
 *     .timestamp_clock_id = 58, .track_event_defaults = 11.
 *   protos/perfetto/trace/track_event/track_event.proto: TrackEventDefaults
 *     .track_uuid = 11 (used by events that carry no track_uuid).
 *   protos/perfetto/trace/clock_snapshot.proto: ClockSnapshot.clocks = 1;
 *     Clock.clock_id = 1, timestamp = 2, is_incremental = 3,
 *     unit_multiplier_ns = 4. Ids 64..127 are sequence-scoped; with
 *     is_incremental each packet timestamp on that clock is a delta from the
 *     previous one on the sequence, the first from the snapshot's value.
 *   protos/perfetto/common/builtin_clock.proto: BUILTIN_CLOCK_BOOTTIME = 6.
 *
 * How trace processor reads them (src/trace_processor/importers/proto/
 * proto_trace_reader.cc, src/trace_processor/util/clock_synchronizer.{h,cc}):
 * trace_packet_defaults is applied before the packet's own timestamp; a
 * packet with a clock_snapshot is consumed by the snapshot and nothing else
 * in it is read (so the snapshot gets a packet of its own); the snapshot sets
 * the incremental clock's running value to its timestamp, and each packet
 * converted on that clock adds its delta to it, while a packet with another
 * clock id leaves it alone; a packet flagged SEQ_NEEDS_INCREMENTAL_STATE is
 * dropped unless its sequence saw SEQ_INCREMENTAL_STATE_CLEARED. The SDK
 * (src/tracing/internal/track_event_internal.cc) writes the same thing:
 * defaults {timestamp_clock_id 64, track_event_defaults.track_uuid} on the
 * packet that clears the state, a snapshot of the trace clock and clock 64
 * (is_incremental) at the same value, then deltas, falling back to an
 * absolute timestamp with an explicit clock id when time goes backwards. */
enum {
	F_TRACE_PACKET = 1,

	F_PKT_CLOCK_SNAPSHOT = 6,
	F_PKT_TIMESTAMP = 8,
	F_PKT_SEQ_ID = 10,
	F_PKT_TRACK_EVENT = 11,
	F_PKT_INTERNED_DATA = 12,
	F_PKT_SEQ_FLAGS = 13,
	F_PKT_TIMESTAMP_CLOCK_ID = 58,
	F_PKT_DEFAULTS = 59,
	F_PKT_TRACK_DESCRIPTOR = 60,
	F_PKT_FIRST_ON_SEQ = 87,

	F_CS_CLOCKS = 1,
	F_CLK_ID = 1,
	F_CLK_TIMESTAMP = 2,
	F_CLK_IS_INCREMENTAL = 3,

	F_TPD_TIMESTAMP_CLOCK_ID = 58,
	F_TPD_TRACK_EVENT_DEFAULTS = 11,
	F_TED_TRACK_UUID = 11,

	F_TE_TYPE = 9,
	F_TE_NAME_IID = 10,
	F_TE_SOURCE_LOCATION_IID = 34,
	F_TE_DEBUG_ANNOTATIONS = 4,

	F_DA_STRING_VALUE = 6,
	F_DA_NAME = 10,

	F_TD_UUID = 1,
	F_TD_NAME = 2,
	F_TD_PROCESS = 3,
	F_TD_THREAD = 4,
	F_TD_PARENT_UUID = 5,

	F_PD_PID = 1,
	F_PD_CMDLINE = 2,
	F_PD_PROCESS_NAME = 6,
	F_PD_PROCESS_LABELS = 8,

	F_THD_PID = 1,
	F_THD_TID = 2,
	F_THD_THREAD_NAME = 5,

	F_ID_EVENT_NAMES = 2,
	F_ID_SOURCE_LOCATIONS = 4,

	F_EN_IID = 1,
	F_EN_NAME = 2,

	F_SL_IID = 1,
	F_SL_FILE_NAME = 2,
	F_SL_FUNCTION_NAME = 3,
	F_SL_LINE_NUMBER = 4,
};

enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
/* Counter tracks (protos/perfetto/trace/track_event/track_descriptor.proto,
 * counter_descriptor.proto, track_event.proto): TrackDescriptor.counter = 8,
 * CounterDescriptor.unit = 3 (UNIT_SIZE_BYTES = 3), TrackEvent.track_uuid =
 * 11, TrackEvent.counter_value = 30 (int64). */
enum { F_TD_COUNTER = 8, F_CD_UNIT = 3, UNIT_SIZE_BYTES = 3, F_TE_TRACK_UUID = 11, F_TE_COUNTER_VALUE = 30 };
/* The absolute clock (what a timestamp without clock id means) and our
 * sequence-scoped incremental one. */
enum { CLOCK_BOOTTIME = 6, CLOCK_INCREMENTAL = 64 };

/* One-byte tags used on the hot path: (field << 3) | wire type. */
#define TAG1(field, wt) ((uint8_t)(((field) << 3) | (wt)))

/* Hand the buffer to the callback once it holds this much: large enough that
 * the callback cost vanishes, small enough to stay in L2. */
#define PF_FLUSH_AT (256u * 1024u)
/* An event packet without interned data never exceeds this (at most 41
 * bytes: 10-byte absolute timestamp + clock id, 5-byte ids). */
#define PF_EVENT_MAX 64u
/* Interned ids carry this bit in the map when the function has a source
 * location (ids themselves stay far below it). */
#define IID_HAS_LOC 0x80000000u

struct pf_process {
	struct pf_process *next;
	uint64_t uuid;
	uint32_t pid;
};

/* A thread is one packet sequence: its interning and its incremental clock
 * are its own. The fields the hot path touches come first. */
struct pf_thread {
	uint64_t last_ts;   /* clock 64's running value on this sequence */
	uint32_t seq_id;
	int clock_ready;    /* the ClockSnapshot has been written */
	struct hashmap interned; /* func_key -> interned id (0: none yet) */
	uint32_t next_iid;
	uint32_t tid;
	uint64_t uuid;
	struct pf_thread *next;
};

struct pf_counter {
	uint64_t uuid;
	uint32_t seq_id;
	struct pf_counter *next;
};

struct pf_writer {
	struct pf_counter *counters;
	pf_write_fn write;
	void *ctx;
	struct pb_buf out;
	int failed;
	uint64_t bytes_written;
	uint64_t next_uuid;
	uint32_t next_seq_id;
	struct pf_process *procs;
	struct pf_thread *threads;
};

/* ---- output buffer ---- */

static void flush(struct pf_writer *w)
{
	if (w->out.len == 0)
		return;
	if (!w->failed) {
		if (w->write(w->ctx, w->out.data, w->out.len) != 0)
			w->failed = 1;
		else
			w->bytes_written += w->out.len;
	}
	w->out.len = 0;
}

static inline void maybe_flush(struct pf_writer *w)
{
	if (w->out.len >= PF_FLUSH_AT)
		flush(w);
}

/* ---- writer lifetime ---- */

struct pf_writer *pf_open(pf_write_fn write, void *ctx)
{
	struct pf_writer *w = xcalloc(1, sizeof(*w));
	w->write = write;
	w->ctx = ctx;
	pb_buf_init(&w->out, PF_FLUSH_AT + 4096);
	w->next_uuid = 1;
	w->next_seq_id = 2;
	return w;
}

uint64_t pf_bytes_written(const struct pf_writer *w)
{
	return w->bytes_written;
}

int pf_finish(struct pf_writer *w)
{
	flush(w);
	int ret = w->failed ? -1 : 0;
	for (struct pf_thread *t = w->threads, *n; t; t = n) {
		n = t->next;
		hm_free(&t->interned);
		free(t);
	}
	for (struct pf_process *p = w->procs, *n; p; p = n) {
		n = p->next;
		free(p);
	}
	for (struct pf_counter *c = w->counters, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	pb_buf_free(&w->out);
	free(w);
	return ret;
}

/* ---- descriptors ---- */

/* The process track stays on a sequence of its own: it carries no events,
 * hence no defaults, no clock and no interning. */
struct pf_process *pf_add_process(struct pf_writer *w, uint32_t pid,
				  const char *process_name, const char *cmdline)
{
	return pf_add_process_labeled(w, pid, process_name, cmdline, NULL, 0);
}

struct pf_process *pf_add_process_labeled(struct pf_writer *w, uint32_t pid, const char *process_name,
					  const char *cmdline, const char *const *labels, size_t nlabels)
{
	struct pf_process *p = xcalloc(1, sizeof(*p));
	p->uuid = w->next_uuid++;
	p->pid = pid;
	p->next = w->procs;
	w->procs = p;

	struct pb_buf *b = &w->out;
	size_t pkt = pb_nest_begin(b, F_TRACE_PACKET);
	pb_put_uint(b, F_PKT_SEQ_ID, w->next_seq_id++);
	pb_put_uint(b, F_PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_put_uint(b, F_PKT_FIRST_ON_SEQ, 1);
	size_t td = pb_nest_begin(b, F_PKT_TRACK_DESCRIPTOR);
	pb_put_uint(b, F_TD_UUID, p->uuid);
	size_t pd = pb_nest_begin(b, F_TD_PROCESS);
	pb_put_uint(b, F_PD_PID, pid);
	if (cmdline)
		pb_put_string(b, F_PD_CMDLINE, cmdline);
	if (process_name)
		pb_put_string(b, F_PD_PROCESS_NAME, process_name);
	for (size_t i = 0; i < nlabels; i++)
		pb_put_string(b, F_PD_PROCESS_LABELS, labels[i]);
	pb_nest_end(b, pd);
	pb_nest_end(b, td);
	pb_nest_end(b, pkt);
	maybe_flush(w);
	return p;
}

/* TracePacketDefaults of a thread's sequence: timestamps are on clock 64
 * and events without track_uuid belong to the thread's track. */
static void put_thread_defaults(struct pb_buf *b, const struct pf_thread *t)
{
	size_t d = pb_nest_begin(b, F_PKT_DEFAULTS);
	pb_put_uint(b, F_TPD_TIMESTAMP_CLOCK_ID, CLOCK_INCREMENTAL);
	size_t ted = pb_nest_begin(b, F_TPD_TRACK_EVENT_DEFAULTS);
	pb_put_uint(b, F_TED_TRACK_UUID, t->uuid);
	pb_nest_end(b, ted);
	pb_nest_end(b, d);
}

/* The first packet of the thread's own sequence: it clears the incremental
 * state, sets the defaults and describes the track. It has no timestamp, so
 * it does not need the clock that the first event will set up. */
/* A new track with a sequence of its own (a thread, or a thread's
 * sub-track): its record, and the first packet on its sequence opened in
 * w->out with the track defaults; *pkt is that packet, to be closed by the
 * caller after the track descriptor. */
static struct pf_thread *new_sequence_track(struct pf_writer *w, uint32_t tid, size_t *pkt)
{
	struct pf_thread *t = xcalloc(1, sizeof(*t));
	t->uuid = w->next_uuid++;
	t->seq_id = w->next_seq_id++;
	t->tid = tid;
	t->next_iid = 1;
	hm_init(&t->interned, 32);
	t->next = w->threads;
	w->threads = t;

	struct pb_buf *b = &w->out;
	*pkt = pb_nest_begin(b, F_TRACE_PACKET);
	pb_put_uint(b, F_PKT_SEQ_ID, t->seq_id);
	pb_put_uint(b, F_PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_put_uint(b, F_PKT_FIRST_ON_SEQ, 1);
	put_thread_defaults(b, t);
	return t;
}

struct pf_thread *pf_add_thread(struct pf_writer *w, struct pf_process *p,
				uint32_t tid, const char *thread_name)
{
	size_t pkt;
	struct pf_thread *t = new_sequence_track(w, tid, &pkt);
	struct pb_buf *b = &w->out;
	size_t td = pb_nest_begin(b, F_PKT_TRACK_DESCRIPTOR);
	pb_put_uint(b, F_TD_UUID, t->uuid);
	pb_put_uint(b, F_TD_PARENT_UUID, p->uuid);
	size_t thd = pb_nest_begin(b, F_TD_THREAD);
	pb_put_uint(b, F_THD_PID, p->pid);
	pb_put_uint(b, F_THD_TID, tid);
	if (thread_name)
		pb_put_string(b, F_THD_THREAD_NAME, thread_name);
	pb_nest_end(b, thd);
	pb_nest_end(b, td);
	pb_nest_end(b, pkt);
	maybe_flush(w);
	return t;
}

struct pf_thread *pf_add_subtrack(struct pf_writer *w, struct pf_thread *parent, const char *name)
{
	size_t pkt;
	struct pf_thread *t = new_sequence_track(w, parent->tid, &pkt);
	struct pb_buf *b = &w->out;
	size_t td = pb_nest_begin(b, F_PKT_TRACK_DESCRIPTOR);
	pb_put_uint(b, F_TD_UUID, t->uuid);
	pb_put_uint(b, F_TD_PARENT_UUID, parent->uuid);
	pb_put_string(b, F_TD_NAME, name);
	pb_nest_end(b, td);
	pb_nest_end(b, pkt);
	maybe_flush(w);
	return t;
}

/* A counter track on a sequence of its own, without defaults or
 * incremental state: its values carry absolute BOOTTIME timestamps and
 * their track_uuid. */
struct pf_counter *pf_add_counter(struct pf_writer *w, struct pf_process *p, const char *name)
{
	struct pf_counter *c = xcalloc(1, sizeof(*c));
	c->uuid = w->next_uuid++;
	c->seq_id = w->next_seq_id++;
	c->next = w->counters;
	w->counters = c;
	struct pb_buf *b = &w->out;
	size_t pkt = pb_nest_begin(b, F_TRACE_PACKET);
	pb_put_uint(b, F_PKT_SEQ_ID, c->seq_id);
	pb_put_uint(b, F_PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_put_uint(b, F_PKT_FIRST_ON_SEQ, 1);
	size_t td = pb_nest_begin(b, F_PKT_TRACK_DESCRIPTOR);
	pb_put_uint(b, F_TD_UUID, c->uuid);
	pb_put_uint(b, F_TD_PARENT_UUID, p->uuid);
	pb_put_string(b, F_TD_NAME, name);
	size_t cd = pb_nest_begin(b, F_TD_COUNTER);
	pb_put_uint(b, F_CD_UNIT, UNIT_SIZE_BYTES);
	pb_nest_end(b, cd);
	pb_nest_end(b, td);
	pb_nest_end(b, pkt);
	maybe_flush(w);
	return c;
}

int pf_counter_value(struct pf_writer *w, struct pf_counter *c, uint64_t ts_ns, int64_t value)
{
	struct pb_buf *b = &w->out;
	size_t pkt = pb_nest_begin(b, F_TRACE_PACKET);
	pb_put_uint(b, F_PKT_TIMESTAMP, ts_ns);
	pb_put_uint(b, F_PKT_SEQ_ID, c->seq_id);
	size_t te = pb_nest_begin(b, F_PKT_TRACK_EVENT);
	pb_put_uint(b, F_TE_TYPE, TYPE_COUNTER);
	pb_put_uint(b, F_TE_TRACK_UUID, c->uuid);
	pb_put_uint(b, F_TE_COUNTER_VALUE, (uint64_t)value);
	pb_nest_end(b, te);
	pb_nest_end(b, pkt);
	maybe_flush(w);
	return w->failed ? -1 : 0;
}

/* ---- time ---- */

static void put_clock(struct pb_buf *b, uint32_t id, uint64_t ts, int incremental)
{
	size_t c = pb_nest_begin(b, F_CS_CLOCKS);
	pb_put_uint(b, F_CLK_ID, id);
	pb_put_uint(b, F_CLK_TIMESTAMP, ts);
	if (incremental)
		pb_put_uint(b, F_CLK_IS_INCREMENTAL, 1);
	pb_nest_end(b, c);
}

/* Before the thread's first event: clock 64 starts at t0, which is t0 on
 * BOOTTIME too, so the conversion is the identity and every event keeps the
 * absolute time it would have had without a clock id. The packet's own
 * timestamp names BOOTTIME explicitly, not the incremental default (trace
 * processor ignores it anyway: the snapshot consumes the packet). Like every
 * packet after the defaults, it is flagged as needing incremental state. */
static void put_clock_snapshot(struct pf_writer *w, struct pf_thread *t, uint64_t t0)
{
	struct pb_buf *b = &w->out;
	size_t pkt = pb_nest_begin(b, F_TRACE_PACKET);
	pb_put_uint(b, F_PKT_TIMESTAMP, t0);
	pb_put_uint(b, F_PKT_TIMESTAMP_CLOCK_ID, CLOCK_BOOTTIME);
	pb_put_uint(b, F_PKT_SEQ_ID, t->seq_id);
	pb_put_uint(b, F_PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	size_t cs = pb_nest_begin(b, F_PKT_CLOCK_SNAPSHOT);
	put_clock(b, CLOCK_BOOTTIME, t0, 0);
	put_clock(b, CLOCK_INCREMENTAL, t0, 1);
	pb_nest_end(b, cs);
	pb_nest_end(b, pkt);
	t->last_ts = t0;
	t->clock_ready = 1;
}

/* TracePacket.timestamp of an event: the delta from the previous value of
 * clock 64 (the sequence default, so no clock id). A delta is unsigned: if
 * time went backwards the packet carries its absolute time on BOOTTIME with
 * an explicit clock id, and clock 64 keeps its value. At most 14 bytes. */
static inline uint8_t *enc_timestamp(uint8_t *p, struct pf_thread *t, uint64_t ts)
{
	*p++ = TAG1(F_PKT_TIMESTAMP, PB_VARINT);
	if (__builtin_expect(ts >= t->last_ts, 1)) {
		p = pb_enc_varint(p, ts - t->last_ts);
		t->last_ts = ts;
		return p;
	}
	p = pb_enc_varint(p, ts);
	p = pb_enc_tag(p, F_PKT_TIMESTAMP_CLOCK_ID, PB_VARINT);
	*p++ = CLOCK_BOOTTIME;
	return p;
}

/* Every event packet of a thread starts like this: timestamp, sequence and
 * SEQ_NEEDS_INCREMENTAL_STATE. All of them depend on incremental state: the
 * defaults give them their track, clock 64 their time, and begin/instant
 * events name their function by interned id. Trace processor drops such
 * packets on a sequence whose state was not cleared, rather than putting
 * them on the wrong track or at the wrong time. */
static inline uint8_t *enc_event_head(uint8_t *p, struct pf_thread *t, uint64_t ts)
{
	p = enc_timestamp(p, t, ts);
	*p++ = TAG1(F_PKT_SEQ_ID, PB_VARINT);
	p = pb_enc_varint(p, t->seq_id);
	*p++ = TAG1(F_PKT_SEQ_FLAGS, PB_VARINT);
	*p++ = SEQ_NEEDS_INCREMENTAL_STATE;
	return p;
}

/* ---- events ---- */

/* The packet of an event whose function is already interned on the
 * sequence. Every length fits in one byte (see PF_EVENT_MAX), so the packet
 * is encoded straight into reserved space without nesting bookkeeping. */
static inline void put_named_event(struct pf_writer *w, struct pf_thread *t,
				   uint64_t ts, uint32_t type, uint32_t iid_val)
{
	uint8_t *start = pb_buf_reserve(&w->out, PF_EVENT_MAX);
	uint8_t *p = enc_event_head(start + 2, t, ts); /* after the packet's tag + length */
	*p++ = TAG1(F_PKT_TRACK_EVENT, PB_LEN);
	uint8_t *te_len = p++;
	uint8_t *te = p;
	*p++ = TAG1(F_TE_TYPE, PB_VARINT);
	*p++ = (uint8_t)type;
	uint32_t iid = iid_val & ~IID_HAS_LOC;
	*p++ = TAG1(F_TE_NAME_IID, PB_VARINT);
	p = pb_enc_varint(p, iid);
	if (iid_val & IID_HAS_LOC) {
		p = pb_enc_tag(p, F_TE_SOURCE_LOCATION_IID, PB_VARINT);
		p = pb_enc_varint(p, iid);
	}
	*te_len = (uint8_t)(p - te);
	start[0] = TAG1(F_TRACE_PACKET, PB_LEN);
	start[1] = (uint8_t)(p - start - 2);
	pb_buf_commit(&w->out, p);
}

/* An event in the general nested encoding: the first use of a function on
 * a sequence (the packet then also carries the InternedData that defines
 * its name and source location) or an event with a debug annotation. Rare,
 * so it copes with any string length rather than being fast. */
static uint32_t put_general_event(struct pf_writer *w, struct pf_thread *t, uint64_t ts, uint32_t type,
				  uint64_t key, const char *name, const struct pf_slice_extra *x, const char *file,
				  uint32_t line)
{
	uint32_t val = type == TYPE_SLICE_END ? 0 : (uint32_t)hm_get(&t->interned, key, 0);
	int intern = type != TYPE_SLICE_END && !val;
	const char *function = x ? x->function : NULL;
	char fallback[32];
	if (intern) {
		int has_loc = (file && *file) || function;
		val = t->next_iid++ | (has_loc ? IID_HAS_LOC : 0);
		if (!name) {
			snprintf(fallback, sizeof(fallback), "func#%" PRIu64, key);
			name = fallback;
		}
	}
	uint32_t iid = val & ~IID_HAS_LOC;

	struct pb_buf *b = &w->out;
	size_t pkt = pb_nest_begin(b, F_TRACE_PACKET);
	pb_buf_commit(b, enc_event_head(pb_buf_reserve(b, PF_EVENT_MAX), t, ts));
	if (intern) {
		size_t id = pb_nest_begin(b, F_PKT_INTERNED_DATA);
		size_t en = pb_nest_begin(b, F_ID_EVENT_NAMES);
		pb_put_uint(b, F_EN_IID, iid);
		pb_put_string(b, F_EN_NAME, name);
		pb_nest_end(b, en);
		if (val & IID_HAS_LOC) {
			size_t sl = pb_nest_begin(b, F_ID_SOURCE_LOCATIONS);
			pb_put_uint(b, F_SL_IID, iid);
			pb_put_string(b, F_SL_FILE_NAME, file && *file ? file : "");
			if (function)
				pb_put_string(b, F_SL_FUNCTION_NAME, function);
			if (line)
				pb_put_uint(b, F_SL_LINE_NUMBER, line);
			pb_nest_end(b, sl);
		}
		pb_nest_end(b, id);
		*hm_put(&t->interned, key, NULL) = val;
	}
	size_t te = pb_nest_begin(b, F_PKT_TRACK_EVENT);
	pb_put_uint(b, F_TE_TYPE, type);
	if (type != TYPE_SLICE_END) {
		pb_put_uint(b, F_TE_NAME_IID, iid);
		if (val & IID_HAS_LOC)
			pb_put_uint(b, F_TE_SOURCE_LOCATION_IID, iid);
	}
	if (x && x->note_name) {
		size_t da = pb_nest_begin(b, F_TE_DEBUG_ANNOTATIONS);
		pb_put_string(b, F_DA_NAME, x->note_name);
		pb_put_string(b, F_DA_STRING_VALUE, x->note_value);
		pb_nest_end(b, da);
	}
	for (unsigned i = 0; x && i < x->nvals; i++) {
		size_t da = pb_nest_begin(b, F_TE_DEBUG_ANNOTATIONS);
		pb_put_string(b, F_DA_NAME, x->val_names[i]);
		pb_put_string(b, F_DA_STRING_VALUE, x->val_values[i]);
		pb_nest_end(b, da);
	}
	pb_nest_end(b, te);
	pb_nest_end(b, pkt);
	return val;
}

static uint32_t put_interning_event(struct pf_writer *w, struct pf_thread *t, uint64_t ts, uint32_t type,
				    uint64_t key, const char *name, const char *file, uint32_t line)
{
	return put_general_event(w, t, ts, type, key, name, NULL, file, line);
}

/* The clock snapshot goes out lazily, before the thread's first event,
 * because only then is its start time known. */
static inline void need_clock(struct pf_writer *w, struct pf_thread *t, uint64_t ts)
{
	if (__builtin_expect(!t->clock_ready, 0))
		put_clock_snapshot(w, t, ts);
}

/* An event whose function the thread's sequence has already interned: 1 when
 * written, 0 when the key is new to the sequence (nothing written), -1 after
 * a write failure. */
static inline int known_event(struct pf_writer *w, struct pf_thread *t, uint64_t ts,
			      uint32_t type, uint64_t key)
{
	if (__builtin_expect(w->failed, 0))
		return -1;
	uint32_t val = (uint32_t)hm_get(&t->interned, key, 0);
	if (__builtin_expect(val == 0, 0))
		return 0;
	need_clock(w, t, ts);
	put_named_event(w, t, ts, type, val);
	maybe_flush(w);
	return w->failed ? -1 : 1;
}

static inline int named_event(struct pf_writer *w, struct pf_thread *t, uint64_t ts,
			      uint32_t type, uint64_t key, const char *name,
			      const char *file, uint32_t line)
{
	int known = known_event(w, t, ts, type, key);
	if (known)
		return known < 0 ? -1 : 0;
	need_clock(w, t, ts);
	put_interning_event(w, t, ts, type, key, name, file, line);
	maybe_flush(w);
	return w->failed ? -1 : 0;
}

int pf_slice_begin(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns,
		   uint64_t func_key, const char *name, const char *file,
		   uint32_t line)
{
	return named_event(w, t, ts_ns, TYPE_SLICE_BEGIN, func_key, name, file, line);
}

int pf_slice_begin_ex(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns, uint64_t func_key,
		      const char *name, const char *file, uint32_t line, const struct pf_slice_extra *x)
{
	if (!x->note_name && !x->nvals) {
		int known = known_event(w, t, ts_ns, TYPE_SLICE_BEGIN, func_key);
		if (known)
			return known < 0 ? -1 : 0;
	}
	if (w->failed)
		return -1;
	need_clock(w, t, ts_ns);
	put_general_event(w, t, ts_ns, TYPE_SLICE_BEGIN, func_key, name, x, file, line);
	maybe_flush(w);
	return w->failed ? -1 : 0;
}

int pf_slice_end_note(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns, const char *note_name,
		      const char *note_value)
{
	if (w->failed)
		return -1;
	need_clock(w, t, ts_ns);
	struct pf_slice_extra x = {NULL, note_name, note_value, 0, NULL, NULL};
	put_general_event(w, t, ts_ns, TYPE_SLICE_END, 0, NULL, &x, NULL, 0);
	maybe_flush(w);
	return w->failed ? -1 : 0;
}

int pf_slice_end_ex(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns, const struct pf_slice_extra *x)
{
	if (w->failed)
		return -1;
	need_clock(w, t, ts_ns);
	put_general_event(w, t, ts_ns, TYPE_SLICE_END, 0, NULL, x, NULL, 0);
	maybe_flush(w);
	return w->failed ? -1 : 0;
}

int pf_slice_begin_known(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns, uint64_t func_key)
{
	return known_event(w, t, ts_ns, TYPE_SLICE_BEGIN, func_key);
}

int pf_instant(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns,
	       uint64_t func_key, const char *name, const char *file,
	       uint32_t line)
{
	return named_event(w, t, ts_ns, TYPE_INSTANT, func_key, name, file, line);
}

/* Slice ends name nothing: timestamp, sequence, flags and the type. */
int pf_slice_end(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns)
{
	if (__builtin_expect(w->failed, 0))
		return -1;
	need_clock(w, t, ts_ns);
	uint8_t *start = pb_buf_reserve(&w->out, PF_EVENT_MAX);
	uint8_t *p = enc_event_head(start + 2, t, ts_ns);
	*p++ = TAG1(F_PKT_TRACK_EVENT, PB_LEN);
	*p++ = 2;
	*p++ = TAG1(F_TE_TYPE, PB_VARINT);
	*p++ = TYPE_SLICE_END;
	start[0] = TAG1(F_TRACE_PACKET, PB_LEN);
	start[1] = (uint8_t)(p - start - 2);
	pb_buf_commit(&w->out, p);
	maybe_flush(w);
	return w->failed ? -1 : 0;
}
