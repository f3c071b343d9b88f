/* Record-time trimming at hand-off (record --min-duration / --max-depth).
 *
 * The reader applies the exact rule to everything it delivers (the header
 * carries the thresholds), so this pass only has to save disk, and may only
 * drop what the exact rule drops for certain. It looks at one batch at a
 * time and keeps no state across batches:
 *   - an entry and its matching exit (or tail call) both in the batch, with
 *     only whole pairs between them, form a call whose subtree the reader
 *     rebuilds exactly as here; removing it changes no other frame;
 *   - such a call shorter than the duration (with a margin for the
 *     reader's own tick-to-ns fit) is dropped, and so is everything in it,
 *     which is shorter still;
 *   - such a call opened with at least max_depth in-batch entries still
 *     open around it is at least that deep for the reader: dropped.
 * Calls that cross a batch boundary, or enclose an allocation, heap or
 * unwind record, a hole, or an exit the reader would repair, are kept; so
 * is the batch's last record (it may be the thread's last time, which
 * closes frames still open at its end), and so is a call that begins right
 * after a kept tail-call record: it is the tail callee the reader marks
 * (lib/frames.h after_tail); dropped here, the caller's next call would
 * begin there instead and take the mark. The reader's own cut drops it
 * and its mark together.
 * An ARGS event (record -A/-R) right before the entry or exit it is for
 * travels with it: a dropped call takes its values along, a kept one
 * keeps them, and neither pins the calls around it. One with anything
 * between (a signal handler's records after a slow-path ARGS event) is
 * kept like any record with a payload. */
#include "format/sf_args.h"
#include "runtime/runtime.h"

/* Ticks below which a call is certainly shorter than trim_min_ns for the
 * reader: 5% under this process's own tick rate so far. 0 (drop nothing)
 * until a millisecond has passed, when the rate is not known well yet. */
static uint64_t short_ticks(void)
{
	uint64_t ns = sf_config.trim_min_ns;
	if (!ns || sf_config.clock != SF_CLOCK_TSC)
		return ns;
	uint64_t dt = sf_now_raw() - sf_start_tsc, dn = sf_mono_ns() - sf_start_mono;
	if (dn < 1000000 || (int64_t)dt <= 0)
		return 0;
	unsigned __int128 t = (unsigned __int128)ns * dt / dn * 19 / 20;
	return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

/* In stack[]: the entry begins a call that is kept whatever its length;
 * the call begins with its entry's ARGS event (the out index is the
 * ARGS event's, the entry follows its payload). */
#define TRIM_KEEP 0x80000000u
#define TRIM_ARGS 0x40000000u
#define TRIM_INDEX 0x3fffffffu

/* Records of the ARGS event at ev[i] (word w) when the event right after
 * it is the one it is for: its function's entry, or with SF_ARGS_RET its
 * exit (format/sflog.h; tail-call sleds record none), or any entry or
 * exit after a values-only one. 0 otherwise. */
static size_t args_lead(const struct sf_event *ev, size_t i, size_t n, uint32_t w)
{
	size_t extra = sf_event_payload_count(w);
	if (!extra || i + 1 + extra >= n)
		return 0;
	uint32_t next = __atomic_load_n(&ev[i + 1 + extra].word, __ATOMIC_RELAXED);
	if (sf_args_word_values(w)) /* values only: always the event right after */
		return next && ((next & SF_KIND_MASK) == SF_EV_ENTRY || (next & SF_KIND_MASK) == SF_EV_EXIT) ? 1 + extra : 0;
	uint32_t want = ev[i + 1].word & SF_ARGS_RET ? SF_EV_EXIT : SF_EV_ENTRY;
	return next && (next & SF_KIND_MASK) == want && next >> SF_KIND_BITS == ev[i + 1].time_lo ? 1 + extra : 0;
}

/* The out index of the entry event of the call stack entry s begins. */
static size_t entry_of(const struct sf_event *out, uint32_t s)
{
	size_t at = s & TRIM_INDEX;
	return s & TRIM_ARGS ? at + 1 + sf_event_payload_count(out[at].word) : at;
}

size_t sf_trim_batch(const struct sf_event *ev, size_t n, uint64_t base, struct sf_event *out, uint32_t *stack)
{
	uint64_t thr = short_ticks();
	uint32_t max_depth = sf_config.trim_max_depth;
	size_t k = 0;      /* records in out */
	size_t h = 0;      /* open entries: stack[j] is the out index of the j-th */
	size_t pinned = 0; /* stack[0, pinned) enclose a record that is always kept */
	size_t after_tail = SIZE_MAX; /* k right after a kept tail-call record */
	for (size_t i = 0; i < n;) {
		uint32_t w = __atomic_load_n(&ev[i].word, __ATOMIC_RELAXED);
		uint32_t kind = w & SF_KIND_MASK;
		size_t lead = w && kind == SF_EV_ARGS ? args_lead(ev, i, n, w) : 0; /* ARGS records before the event */
		uint32_t ew = lead ? __atomic_load_n(&ev[i + lead].word, __ATOMIC_RELAXED) : w;
		uint32_t ekind = ew & SF_KIND_MASK;
		if (ew && ekind == SF_EV_ENTRY) {
			stack[h++] = (uint32_t)k | (k == after_tail ? TRIM_KEEP : 0) | (lead ? TRIM_ARGS : 0);
			for (size_t j = 0; j <= lead; j++)
				out[k++] = ev[i++];
			continue;
		}
		if (ew && (ekind == SF_EV_EXIT || sf_kind_is_tail(ekind)) && h &&
		    out[entry_of(out, stack[h - 1])].word >> SF_KIND_BITS == ew >> SF_KIND_BITS) {
			uint32_t s = stack[--h];
			size_t e = s & TRIM_INDEX;
			int keep = pinned > h || i + lead + 1 == n || (s & TRIM_KEEP);
			if (pinned > h)
				pinned = h;
			if (!keep) {
				uint64_t t0 = sf_event_time(base, out[entry_of(out, s)].time_lo);
				uint64_t t1 = sf_event_time(base, ev[i + lead].time_lo);
				if ((max_depth && h >= max_depth) || (t1 >= t0 && t1 - t0 < thr)) {
					k = e; /* the call and its subtree, with their values */
					after_tail = SIZE_MAX;
					i += lead + 1;
					continue;
				}
			}
			for (size_t j = 0; j <= lead; j++)
				out[k++] = ev[i++];
			after_tail = sf_kind_is_tail(ekind) ? k : SIZE_MAX;
			continue;
		}
		size_t extra = w && sf_event_kind_valid(kind) ? sf_event_payload_count(w) : 0;
		if (extra)
			pinned = h; /* allocation records stay, and so do the calls around them */
		else
			h = pinned = 0; /* hole, unwind, unknown or repaired exit: nothing open is sure */
		for (size_t j = 0; j <= extra && i < n; j++)
			out[k++] = ev[i++];
		after_tail = w && sf_kind_is_tail(kind) ? k : SIZE_MAX; /* an unmatched tail call */
	}
	return k;
}
