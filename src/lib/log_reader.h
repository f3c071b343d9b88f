/* The one reader of sftrace logs (format: src/format/sflog.h).
 *
 * lr_open maps the file read-only and indexes it: header, objects, threads
 * and the list of event batches (DATA chunks and live SLOT chunks). Memory is
 * bounded by the number of chunks, threads and objects, never by events:
 * events are decoded on the fly by the iterator, straight from the mapping.
 *
 * Damage is tolerated and reported as warnings (lr_warning): zero holes
 * between chunks are skipped silently, garbage is skipped by scanning for the
 * next chunk magic, a chunk cut by the end of the file keeps its complete
 * events. Zero events inside a DATA chunk (holes left by the writer) and
 * records with an unknown kind are skipped and counted as lost.
 *
 * Batch rules (see sflog.h): a thread is identified by its thread_serial, not
 * its tid. DATA chunk `count` is taken as the number of 8-byte records in
 * the payload, allocation payloads (sf_event_ext) included. A PACKED chunk
 * (version 4) holds the same records re-coded: it is decoded record by record
 * as it is read, in constant memory, and is otherwise a DATA chunk. A SLOT chunk's
 * events end at the first event whose word is zero; they are delivered unless a DATA
 * chunk with the same (serial, seq) exists. A SLOT with thread_serial 0 is a
 * free slot (the runtime's serials start at 1) and is ignored. A duplicated
 * DATA batch (same serial and seq) is delivered once.
 *
 * Cost: lr_open makes one sequential pass over the file (to count events and
 * losses per thread); iteration makes another. The file is mapped read-only
 * and must not shrink while open (SIGBUS).
 *
 * Every lr_log is independent: open one per process log.
 */
#ifndef SFTRACE_LIB_LOG_READER_H
#define SFTRACE_LIB_LOG_READER_H

#include <stddef.h>
#include <stdint.h>

#include "format/packed.h"
#include "format/sflog.h"

#define LR_PACKED_WINDOW (1 + SF_ARGS_MAX_RECORDS) /* an event and its longest payload */

struct lr_log;

/* Header fields, decoded. Strings live as long as the log. */
struct lr_info {
	const char *path;        /* the path given to lr_open */
	uint64_t file_size;
	unsigned mode;               /* the file's permission bits (st_mode & 07777) */
	uint32_t version;
	uint32_t header_size;
	uint32_t pid, ppid;
	uint32_t clock;          /* enum sf_clock */
	uint32_t machine;        /* ELF e_machine of the writer (old logs: 0, read as EM_X86_64) */
	uint64_t counter_hz;     /* TSC clock: the counter's frequency when the writer knew it, else 0 */
	uint32_t state;          /* enum sf_state */
	uint64_t start_realtime_ns;
	uint64_t start_tsc, start_mono_ns;
	uint64_t last_tsc, last_mono_ns;
	uint64_t dropped_events;
	uint64_t write_errors;
	uint32_t last_errno;
	uint32_t header_threads; /* sf_header.threads as written */
	uint32_t header_objects; /* sf_header.objects as written */
	/* Chunks whole in the file as the runtime counted them (sf_header.chunks;
	 * 0: not counted, an older log) and as this reader found them. Fewer
	 * found in the log of a process that ended: the file was cut
	 * (lr_truncated). */
	uint64_t header_chunks, chunks_found;
	/* How the process ended (sf_header.exit_state): enum sf_exit_source in
	 * bits 32-39, a wait(2) status in the low 32 bits; 0: not known. */
	uint64_t exit_state;
	/* A forked child's: the raw event time at which its parent began the
	 * fork (sf_header.fork_time; lr_time_ns converts it); 0: not a forked
	 * child, or an older log. */
	uint64_t fork_time;
	/* With fork_time: the pid whose heap the child started with
	 * (sf_header.fork_parent; ppid in older logs). */
	uint32_t fork_parent;
	uint32_t fork_tid;       /* its thread that forked (0: not known) */
	uint64_t features;       /* sf_header.features: SF_FEAT_* (0 in older logs) */
	/* The recording options (sf_header.max_size ...; zero and "" in older
	 * logs, which do not say: options_known 0). */
	int options_known;
	uint64_t max_size;
	int max_size_reached;
	uint32_t filter_funcs;
	char filter[SF_FILTER_DESC_MAX];
	int cmdline_truncated;
	/* Record-time trimming (record --min-duration / --max-depth; 0: off),
	 * which trace_input applies exactly, and the records the runtime left
	 * out for it. */
	uint64_t trim_min_ns;
	uint32_t trim_max_depth;
	uint64_t trimmed_records;
	/* record --ring: exited threads' events a later thread's ring took the
	 * slots of, not in this log (sf_header.ring_reused). */
	uint64_t ring_reused;
	/* Tracing stopped for good before a seccomp filter (sf_header.seccomp_stopped):
	 * the refused system call's number + 1 on the log's machine; 0: not stopped. */
	uint32_t seccomp_stopped;
	int argc;
	char **argv;             /* argc strings, then NULL */
	/* The time fit used by lr_time_ns, for display: ns since start =
	 * tsc_ns_per_tick * (raw - start_tsc) + tsc_offset_ns (TSC clock). */
	double tsc_ns_per_tick;
	double tsc_offset_ns;
	uint32_t calib_pairs;    /* calibration pairs the fit used */
	int calib_degenerate;    /* no usable pair span: 1 tick taken as 1 ns */
	/* record --ring: bytes per thread ring (0: not a ring log); for a
	 * snapshot, its number (from 1) and enum sf_snapshot_reason. */
	uint64_t ring_bytes;
	uint32_t snapshot, snapshot_reason;
	/* A snapshot's freeze (SF_HDR_SNAP_*; zero in older logs): the
	 * trigger's raw event time (lr_time_ns), thread and function id (0:
	 * the ring signal), a slow call's duration in ns. snap_missed: requests
	 * that came while a snapshot was being written and were not taken (in
	 * a process's log: all of them; in a snapshot: those before it). */
	uint64_t snap_time, snap_slow_ns, snap_missed;
	/* A process's log: freezes opened, and snapshots written of them
	 * (the difference was lost: the process ended first, or a write
	 * failed). */
	uint64_t snap_taken, snap_written;
	/* A process's log (zero in older logs): requests after
	 * --max-snapshots; requests sftrace snapshot sent, and those of them
	 * that reached the runtime (the rest the kernel merged with a ring
	 * signal still pending, or the process ended first). */
	uint64_t snap_over_max, snap_sent, snap_arrived;
	uint32_t snap_tid, snap_func;
	uint64_t before_window;  /* ring: frames open at their thread's window start, all threads */
	/* The tracer's own cost per traced call, measured by the runtime at
	 * start (SF_HDR_COST; docs/DESIGN.md "Times net of the tracer"): what
	 * a call adds to its caller's self time and to its own duration, in
	 * 1/256 of the event clock's unit as recorded, and in ns. cost_known
	 * is 0 for logs that carry no figure (older logs, monotonic clock). */
	uint64_t cost_parent_raw256, cost_child_raw256;
	double cost_parent_ns, cost_child_ns;
	int cost_known;
	/* How far the cost per call may be off, relative to it: the larger
	 * distance from the calibration's median round to its lowest or
	 * highest kept one (cost_spread) or to the exit's re-measure, at
	 * least 5% (log_reader.c's COST_ERR_FLOOR; 0 when the log has no
	 * spread). A net
	 * figure is as uncertain as this times the tracer's time taken off
	 * it (trace_net_uncertain). */
	double cost_err;
	/* The same spread in ns per call (caller's part plus call's): the
	 * lowest and the highest kept round; 0 and 0 when the log has none.
	 * And the cost measured again at the process's exit, its median round
	 * (sf_header.cost_exit): cost_exit_known 0 in older logs and for a
	 * process that did not exit. */
	uint64_t cost_spread_raw256, cost_exit_raw256;
	double cost_lo_ns, cost_hi_ns;
	double cost_exit_parent_ns, cost_exit_child_ns;
	int cost_exit_known;
	/* record --paused, sftrace resume / pause: SWITCH chunks in the log
	 * (tracing switched on, off). Frames open at a pause are closed
	 * there (frames.h). */
	uint32_t resumes, pauses;
};

struct lr_object {
	uint32_t index;          /* sf_object.index (object number in the process) */
	uint32_t first_id;       /* function ids first_id .. first_id + count - 1 */
	uint32_t count;
	uint32_t sleds, patched;
	uint8_t flags;           /* SF_OBJ_* */
	uint8_t build_id_len;
	uint8_t build_id[64];
	uint64_t load_bias;
	const char *path;        /* NUL-terminated */
	const uint64_t *funcs;   /* count ELF vaddrs, index = id - first_id */
	int unloaded;            /* an UNLOAD chunk named it (ids stay resolvable) */
	uint64_t offset;         /* file offset of its OBJECT chunk */
	uint64_t end;            /* SF_OBJ_UNTRACED: end of its extent (runtime address) */
};

struct lr_thread {
	uint32_t index;          /* 0.. in lr_thread_at order (sorted by serial) */
	uint64_t serial;
	uint32_t tid;            /* from the thread's latest batch */
	char name[17];           /* latest non-empty name seen, NUL-terminated */
	uint64_t events;         /* events the iterator delivers (payloads not counted) */
	uint64_t lost;           /* zero holes and corrupt records skipped */
	uint64_t args_events;    /* SF_EV_ARGS events among them (record -A/-R) */
	uint32_t data_batches;   /* DATA chunks delivered */
	uint32_t slots;          /* SLOT chunks seen */
	uint32_t live_slots;     /* SLOT batches delivered (not duplicates of DATA) */
	/* Internal: this thread's batches in seq order (indices into the log). */
	uint32_t nbatch;
	uint32_t *batch;
	/* Ring logs: functions whose frames were open when the thread's oldest
	 * kept event was recorded (their entries fell out of the ring),
	 * outermost first. The iterator delivers an ENTRY for each, flagged
	 * before_window, at the time of the thread's first event. */
	uint32_t nbefore;
	uint32_t *before;
	/* Their depths (1: the thread's outermost recorded frame), counting
	 * the frames open that are neither delivered nor placed: a landing
	 * can abandon such frames above placed ones. NULL when not known
	 * (no start depth): the placed frames are then the innermost. */
	uint64_t *before_pos;
	/* The process's pauses (sftrace pause), ns since start, ascending:
	 * shared by every thread of the log; frames.c closes the frames open
	 * at each. */
	const uint64_t *pause_ns;
	uint32_t npauses;
	int ends_paused;         /* the log's last switch is a pause */
	int ends_at_snapshot;    /* the log is a snapshot: the thread went on past its window's end */
	/* Ring logs: frames open at that point that are neither delivered
	 * nor placed (their exits are outside the window too), from the
	 * window's first batch's start depth; 0 when not known. */
	uint64_t outer;
};

struct lr_event {
	const struct lr_thread *thread;
	uint32_t kind;           /* enum sf_event_kind (the low SF_KIND_BITS of the word) */
	uint32_t func_id;
	uint64_t raw_time;       /* as recorded: TSC ticks or CLOCK_MONOTONIC ns */
	uint64_t time_ns;        /* ns since the program start, lr_time_ns(raw_time) */
	uint64_t rec_ns;         /* time_ns as recorded: trace_input may take the tracer's cost off time_ns
				  * (times net of the tracer), not off this one */
	uint64_t stall_ns;       /* tracer work recorded right after this event: a batch's first event
				  * stamped before the hand-off that began the batch, whose base the
				  * runtime takes after it (FORMAT.md, "Batches"); 0 for the others */
	/* Allocation kinds (SF_EV_ALLOC..SF_EV_REALLOC_DEALLOC, SF_EV_HEAP_*) only: */
	int has_ext;
	uint64_t size;
	uint64_t align;          /* bytes (1 << log2 from the record), 0 if out of range */
	uint64_t ptr;            /* allocated (or freed, for frees) */
	uint64_t old_ptr;        /* SF_EV_HEAP_REALLOC: the block it replaced */
	uint64_t site;           /* SF_EV_HEAP_*: return address of the allocator call */
	uint32_t ret_tag;        /* SF_EV_HEAP_*: the return-address tag (FORMAT.md; 0: unknown); func_id is 0 */
	/* SF_EV_ARGS only (func_id is the payload header's): the payload,
	 * struct sf_args_head then the items (format/sf_args.h), valid until
	 * the next event is read; NULL for a filler record. */
	const unsigned char *args;
	uint32_t args_len;
	int args_bare;           /* internal: a values-only ARGS event lr_next has not paired yet */
	/* Where it came from. */
	uint64_t offset;         /* file offset of the event record */
	uint32_t seq;            /* batch sequence number */
	int in_slot;             /* from a live SLOT chunk */
	int before_window;       /* ring: an ENTRY the reader placed at the window's start (not recorded) */
	uint64_t pos;            /* before_window: its lr_thread.before_pos (0: not known) */
};

/* Opens and indexes a log. NULL on failure with one line in err naming the
 * file and the cause. */
struct lr_log *lr_open(const char *path, char *err, size_t errlen);
void lr_close(struct lr_log *log);

const struct lr_info *lr_info(const struct lr_log *log);

size_t lr_nobjects(const struct lr_log *log);
/* Objects in file order (their OBJECT chunks). */
const struct lr_object *lr_object_at(const struct lr_log *log, size_t i);

/* The object without functions (SF_OBJ_UNTRACED: the executable of an
 * uninstrumented program, libc) whose extent holds runtime address addr,
 * or NULL (none, or a log written before such objects were recorded).
 * These objects are not among lr_object_at's. */
const struct lr_object *lr_untraced_at(const struct lr_log *log, uint64_t addr);

/* Resolves a function id: 0 and *object, *vaddr set, or -1 if no object owns
 * the id (object and vaddr untouched). Either pointer may be NULL. */
int lr_func(const struct lr_log *log, uint32_t func_id,
	    const struct lr_object **object, uint64_t *vaddr);

size_t lr_nthreads(const struct lr_log *log);
/* Whether the file was cut (a copy taken mid-run, a full disk, a partial
 * download): 1 when it ends inside its last chunk, 2 when it holds fewer
 * whole chunks than the header counts (cut at a chunk boundary; only known
 * for the log of a process that ended). Either way what the header says
 * about the run's end does not hold for the events read. */
int lr_truncated(const struct lr_log *log);
/* Whether the process ended by exiting (exit, a return from main, _exit,
 * or a wait status of an exit), not by a signal or an exec, as far as the
 * log knows: its exit hooks ran or an exit was recorded (docs/FORMAT.md
 * "Exit state"). A snapshot's process had not ended: 0. */
int lr_exited_normally(const struct lr_info *info);
const struct lr_thread *lr_thread_at(const struct lr_log *log, size_t i);

/* Warnings found while indexing, one line each (no file name prefix). */
size_t lr_nwarnings(const struct lr_log *log);
const char *lr_warning(const struct lr_log *log, size_t i);

/* Event time to ns since the program start, never negative.
 * CLOCK_MONOTONIC logs: raw - start_mono_ns. TSC logs: a line through the
 * header's start pair whose slope is the least-squares fit over every later
 * calibration pair (header last pair, each chunk's pair; pairs with a zero
 * member or from before the start are ignored). With no usable pair, 1 tick
 * is taken as 1 ns and a warning says so (lr_info.calib_degenerate). */
uint64_t lr_time_ns(const struct lr_log *log, uint64_t raw);

/* When the process began, in CLOCK_REALTIME ns: a forked child's fork time
 * (lr_info.fork_time: its start words are its parent's, docs/FORMAT.md),
 * else the header's start_realtime_ns. */
uint64_t lr_start_realtime_ns(const struct lr_log *log);

struct lr_summary {
	uint64_t events;         /* delivered events, all threads */
	uint64_t threads;
	uint64_t objects;
	uint64_t dropped;        /* sf_header.dropped_events (the runtime's count) */
	uint64_t write_errors;
	uint64_t lost;           /* holes and corrupt records found by the reader */
	uint64_t warnings;
	uint32_t pid;
	uint32_t state;
};
void lr_summary(const struct lr_log *log, struct lr_summary *s);

/* For tests: a thread's events and lost records counted by decoding every
 * record, as lr_next reads them. lr_open counts without decoding; its
 * lr_thread.events and .lost must equal these. */
void lr_count_decoded(const struct lr_log *log, const struct lr_thread *t, uint64_t *events, uint64_t *lost);

/* Internal: decoding state of a packed batch (format/packed.h), a window
 * of the records of one event and its payload, decoded as they are read. */
struct lr_packed {
	struct sf_unpack un;
	uint32_t left;               /* records of the batch not decoded yet */
	uint32_t nwin;               /* records in win */
	struct sf_event win[LR_PACKED_WINDOW]; /* an event and its payload records */
	const uint8_t *at[LR_PACKED_WINDOW]; /* where each one's bytes start */
	unsigned char args[8 * SF_ARGS_MAX_RECORDS]; /* the last ARGS event's payload (lr_event.args) */
	uint64_t lost;               /* records lost to a malformed stream */
};

/* Event iteration. Order: every DATA batch in file order, then the live SLOT
 * batches; a thread's events always come in recording (seq) order. */
struct lr_iter {
	const struct lr_log *log;
	const struct lr_thread *only; /* NULL: all threads */
	size_t next;                  /* next batch position */
	const unsigned char *rec, *end;
	const struct lr_thread *thread;
	uint32_t seq;
	int slot;
	uint64_t base;                /* the batch's time base */
	int first;                    /* the batch's first event is still to come (lr_event.stall_ns) */
	int packed;                   /* the batch is a packed chunk: read through pk */
	int cut;                      /* ... cut by the end of the file */
	struct lr_packed pk;
	unsigned char vargs[8 * SF_ARGS_MAX_RECORDS]; /* a values-only ARGS event's payload, rebuilt */
	uint64_t released;            /* pages before this offset were dropped */
	uint32_t pre_left;            /* ring: before-window entries still to deliver */
	uint32_t pre_raw_valid;
	uint64_t pre_raw;             /* their time (the thread's first event) */
	const struct lr_thread *pre_thread;
	/* Ring: the thread's first batch's first event is still to come.
	 * A function event there whose function has values asked (an
	 * ARGSPEC entry) came without them: its ARGS event was in the slot
	 * before, outside the window (a runtime before h29max could end a
	 * slot with a slow ARGS event). lr_next delivers an ARGS event of
	 * one NONE item SF_ARG_SLOT_REST before it (`<unrecorded>`), from
	 * win_args, and holds the event back in `hold`. The same for an
	 * entry from before the window (before_window), from pre_args: a
	 * buffer of its own, as the consumer may still hold the entry's
	 * mark when the first event's comes. */
	int win_first, held;
	struct lr_event hold;
	unsigned char win_args[16], pre_args[16];
};

void lr_iter_init(struct lr_iter *it, const struct lr_log *log);
/* Only one thread's events, in recording order. */
void lr_iter_init_thread(struct lr_iter *it, const struct lr_log *log,
			 const struct lr_thread *thread);
/* 1 and *ev filled, or 0 at the end. */
int lr_next(struct lr_iter *it, struct lr_event *ev);

/* Frames open on thread t before the log's first event that no reader sees
 * begin and the log does not deliver either, known by their exits: a fork
 * child's thread that made the fork (the frames its parent had open then,
 * main at least, which exit in the child too). Their ids, outermost first,
 * in *ids (the caller frees it); their count (0 for other threads, and for
 * ring logs: their iterator delivers such frames, lr_thread.before). Reads
 * the whole thread (up to the first pause or resume), as the log does not
 * say how many there are: callers ask only when they need the names
 * (-F/-N). */
size_t lr_inherited_frames(const struct lr_log *log, const struct lr_thread *t, uint32_t **ids);

/* Calls cb for every event in lr_iter order; stops early when cb returns
 * nonzero and returns that value, else 0. */
int lr_foreach_event(const struct lr_log *log,
		     int (*cb)(void *ctx, const struct lr_event *ev), void *ctx);

/* "ENTRY", "EXIT", "TAIL", "ALLOC", "DEALLOC", "RALLOC", "RDEALLOC",
 * "MALLOC", "FREE", "REALLOC" or "?". */
const char *lr_kind_name(uint32_t kind);

/* The name of system call nr on ELF machine (EM_X86_64, EM_AARCH64; 0 is
 * x86-64) among those the runtime makes, else NULL. */
const char *lr_syscall_name(uint32_t machine, uint32_t nr);
#endif
