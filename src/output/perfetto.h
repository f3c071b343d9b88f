/* Perfetto trace writer (TrackEvent), streaming.
 *
 * The output is a perfetto.protos.Trace: a sequence of `Trace.packet` (field
 * 1) records, one TracePacket each, written through a callback as the buffer
 * fills, so the trace is never held in memory. Memory is bounded by the
 * number of processes, threads and distinct functions, not by events.
 *
 * Layout:
 *   - every process gets its own trusted_packet_sequence_id (from 2 up; 1 is
 *     the tracing service's own sequence in real Perfetto traces). Its first
 *     packet is the process TrackDescriptor, flagged
 *     SEQ_INCREMENTAL_STATE_CLEARED + first_packet_on_sequence;
 *   - every pf_add_thread call gets a fresh track uuid (a tid that is reused
 *     within a process gets a second track), with parent_uuid = the process
 *     track;
 *   - slice begin / instant events refer to their name and source location
 *     by interned id. The strings are emitted once per process sequence, in
 *     the InternedData of the first packet that uses them; every packet that
 *     uses interned ids carries SEQ_NEEDS_INCREMENTAL_STATE. Slice end packets
 *     use no interned data and carry no flags.
 *
 * Timestamps are absolute nanoseconds in TracePacket.timestamp with no
 * timestamp_clock_id, i.e. Perfetto's default clock (BOOTTIME). Callers may
 * pass CLOCK_MONOTONIC-based values: within one trace only their differences
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

/* Emits a thread TrackDescriptor (pid, tid, thread_name) under the process
 * track. thread_name may be NULL. The handle lives until pf_finish. */
struct pf_thread *pf_add_thread(struct pf_writer *w, struct pf_process *p,
				uint32_t tid, const char *thread_name);

/* A slice begins on the thread's track. func_key identifies the function
 * within the thread's process: name, file and line are read only the first
 * time the key is seen on that process (they are interned). name NULL is
 * written as "func#<key>"; file NULL or "" means no source location; line 0
 * means no line number. Returns 0, or -1 after a write failure. */
int pf_slice_begin(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns,
		   uint64_t func_key, const char *name, const char *file,
		   uint32_t line);

/* Ends the innermost open slice on the thread's track. */
int pf_slice_end(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns);

/* A zero-duration event, interned like pf_slice_begin. */
int pf_instant(struct pf_writer *w, struct pf_thread *t, uint64_t ts_ns,
	       uint64_t func_key, const char *name, const char *file,
	       uint32_t line);

/* Bytes handed to the write callback so far (excluding what is buffered). */
uint64_t pf_bytes_written(const struct pf_writer *w);

/* Flushes, frees the writer and every process/thread handle. Returns 0, or
 * -1 if any write failed. */
int pf_finish(struct pf_writer *w);

#endif
