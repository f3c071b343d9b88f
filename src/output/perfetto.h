/* Perfetto trace writer (TrackEvent), streaming.
 *
 * The output is a perfetto.protos.Trace: a sequence of `Trace.packet` (field
 * 1) records, one TracePacket each, written through a callback as the buffer
 * fills, so the trace is never held in memory. Memory is bounded by the
 * number of processes and threads and the functions each thread calls, not
 * by events.
 *
 * Layout (the way Perfetto's own SDK writes TrackEvents; field numbers and
 * the trace processor semantics they rely on are listed in perfetto.c):
 *   - every process gets a sequence (trusted_packet_sequence_id, from 2 up;
 *     1 is the tracing service's own in real Perfetto traces) holding only
 *     its TrackDescriptor, flagged SEQ_INCREMENTAL_STATE_CLEARED +
 *     first_packet_on_sequence;
 *   - every pf_add_thread call gets a fresh track uuid (a tid that is reused
 *     within a process gets a second track), with parent_uuid = the process
 *     track, and a sequence of its own. Its first packet clears the state,
 *     holds the thread TrackDescriptor and TracePacketDefaults: events carry
 *     no track_uuid (the default is the thread's track) and no clock id (the
 *     default is clock 64, sequence-scoped and incremental);
 *   - before the thread's first event, a ClockSnapshot packet sets clock 64
 *     to that event's time on BOOTTIME; every event timestamp is then the
 *     delta from the previous one. A timestamp that goes backwards is written
 *     absolute, with timestamp_clock_id = BOOTTIME;
 *   - slice begin / instant events refer to their name and source location
 *     by interned id. The strings are emitted once per thread sequence, in
 *     the InternedData of the first packet that uses them;
 *   - every packet after the first on a thread sequence carries
 *     SEQ_NEEDS_INCREMENTAL_STATE (they all rely on the defaults and clock).
 *
 * Timestamps are absolute nanoseconds as seen by a reader: BOOTTIME, the
 * clock a Perfetto timestamp without clock id is on. Callers may pass
 * CLOCK_MONOTONIC-based values: within one trace only their differences
 * matter for display.
 *
 * Not thread-safe: one writer is used by one thread.
 * Out of memory exits (xmalloc). A failed write callback makes every later
 * call return -1 without writing; pf_finish reports it too.
 */
#ifndef SFTRACE_OUTPUT_PERFETTO_H
#define SFTRACE_OUTPUT_PERFETTO_H

#include <stddef.h>
#include <stdint.h>

/* Returns 0 on success, anything else on failure. sf_outfile_write_cb fits. */
typedef int (*pf_write_fn)(void *ctx, const void *buf, size_t len);

struct pf_writer;
struct pf_process;
struct pf_thread;

struct pf_writer *pf_open(pf_write_fn write, void *ctx);

/* Emits the process TrackDescriptor (pid, process_name, cmdline) as the first
 * packet of a new sequence. process_name and cmdline may be NULL. cmdline is
 * one string (arguments joined by the caller), written as one
 * ProcessDescriptor.cmdline entry. The handle lives until pf_finish. */
struct pf_process *pf_add_process(struct pf_writer *w, uint32_t pid,
				  const char *process_name, const char *cmdline);
/* The same, with nlabels ProcessDescriptor.process_labels entries:
 * convert's metadata, such as the tracer's measured cost. */
struct pf_process *pf_add_process_labeled(struct pf_writer *w, uint32_t pid, const char *process_name,
					  const char *cmdline, const char *const *labels, size_t nlabels);

/* Emits a thread TrackDescriptor (pid, tid, thread_name) under the process
 * track, as the first packet of the thread's own sequence (with its
 * defaults). thread_name may be NULL. The handle lives until pf_finish. */
struct pf_thread *pf_add_thread(struct pf_writer *w, struct pf_process *p,
				uint32_t tid, const char *thread_name);

/* A track under a thread's track, for its slices nested deeper than trace
 * processor keeps on one track (PF_MAX_DEPTH): a named TrackDescriptor with
 * parent_uuid = the thread's track, on a sequence of its own, used with the
 * slice calls like a thread. Trace processor files it under the thread (the
 * UI shows it inside the thread's track group). The handle lives until
 * pf_finish. */
struct pf_thread *pf_add_subtrack(struct pf_writer *w, struct pf_thread *parent, const char *name);

/* trace_processor's SliceTracker::kMaxDepth: slices nested deeper on one
 * track are dropped and the ones after them mis-nested. */
#define PF_MAX_DEPTH 512

/* A slice begins on the thread's track. func_key identifies the function
 * within the thread's process: name, file and line are read only the first
 * time the key is seen on that thread (they are interned per thread). name
 * NULL is written as "func#<key>"; file NULL or "" means no source location;
 * line 0 means no line number. Returns 0, or -1 after a write failure. */
int pf_slice_begin(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns,
		   uint64_t func_key, const char *name, const char *file,
		   uint32_t line);

/* pf_slice_begin for a function the thread's sequence has already named:
 * returns 1 when written, 0 when func_key is new to the sequence (nothing
 * written: call pf_slice_begin with its names), -1 after a write failure.
 * It spares callers the symbol lookup on every call but the first. */
int pf_slice_begin_known(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns, uint64_t func_key);

/* pf_slice_begin with more: the function's full name as its source
 * location's function_name (the UI shows it in the slice's details, so the
 * slice name can be the short one), and one debug annotation (a string
 * argument of this slice; NULL: none). Either may be NULL. */
struct pf_slice_extra {
	const char *function;
	const char *note_name, *note_value;
	/* More string annotations (record -A/-R: "arg1" = "3"), nvals of them. */
	unsigned nvals;
	const char *const *val_names, *const *val_values;
};
int pf_slice_begin_ex(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns, uint64_t func_key,
		      const char *name, const char *file, uint32_t line, const struct pf_slice_extra *x);

/* pf_slice_end with a debug annotation (added to the slice's arguments). */
int pf_slice_end_note(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns, const char *note_name,
		      const char *note_value);

/* pf_slice_end with x's annotations (note and values; function unused). */
int pf_slice_end_ex(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns, const struct pf_slice_extra *x);

/* Ends the innermost open slice on the thread's track. */
int pf_slice_end(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns);

/* A zero-duration event, interned like pf_slice_begin. */
int pf_instant(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns,
	       uint64_t func_key, const char *name, const char *file,
	       uint32_t line);

/* A counter track (unit: bytes) named `name` under the process track, and
 * its values. Handles live until pf_finish. */
struct pf_counter;
struct pf_counter *pf_add_counter(struct pf_writer *w, struct pf_process *p, const char *name);
int pf_counter_value(struct pf_writer *w, struct pf_counter *c, uint64_t ts_ns, int64_t value);

/* Bytes handed to the write callback so far (excluding what is buffered). */
uint64_t pf_bytes_written(const struct pf_writer *w);

/* Flushes, frees the writer and every process/thread handle. Returns 0, or
 * -1 if any write failed. */
int pf_finish(struct pf_writer *w);

#endif
