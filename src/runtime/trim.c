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
 * and its mark together. */
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

/* In stack[]: the entry begins a call that is kept whatever its length. */
#define TRIM_KEEP 0x80000000u

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
		if (w && kind == SF_EV_ENTRY) {
			stack[h++] = (uint32_t)k | (k == after_tail ? TRIM_KEEP : 0);
			out[k++] = ev[i++];
			continue;
		}
		if (w && (kind == SF_EV_EXIT || sf_kind_is_tail(kind)) && h &&
		    out[stack[h - 1] & ~TRIM_KEEP].word >> SF_KIND_BITS == w >> SF_KIND_BITS) {
			size_t e = stack[--h] & ~TRIM_KEEP;
			int keep = pinned > h || i + 1 == n || (stack[h] & TRIM_KEEP);
			if (pinned > h)
				pinned = h;
			if (!keep) {
				uint64_t t0 = sf_event_time(base, out[e].time_lo);
				uint64_t t1 = sf_event_time(base, ev[i].time_lo);
				if ((max_depth && h >= max_depth) || (t1 >= t0 && t1 - t0 < thr)) {
					k = e; /* the call and its subtree */
					after_tail = SIZE_MAX;
					i++;
					continue;
				}
			}
			out[k++] = ev[i++];
			after_tail = sf_kind_is_tail(kind) ? k : SIZE_MAX;
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
