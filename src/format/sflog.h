/* The sftrace log format, shared by the runtime (writer) and the CLI
 * (reader). docs/FORMAT.md describes it in prose; this header is the
 * definition. Everything is little-endian x86-64 native layout.
 *
 * A log file is:
 *   - a file header of SF_HEADER_SIZE bytes at offset 0. The runtime keeps it
 *     mapped MAP_SHARED and updates its counters in place, so they survive a
 *     crash or kill -9 (the page is in the page cache);
 *   - then a sequence of chunks, each starting with struct sf_chunk at a
 *     16-byte aligned offset. Gaps between chunks are zero bytes (padding
 *     before page-aligned slots, or holes left by failed writes); a reader
 *     skips zero 16-byte units.
 *
 * Chunk types:
 *   OBJECT  an instrumented ELF object: path, build-id, load bias and the
 *           function address of every function id it owns.
 *   UNLOAD  an object was dlclose'd (its function ids are never reused).
 *   DATA    a batch of events of one thread, written with pwrite when the
 *           thread's slot filled up (or when the thread exited).
 *   PACKED  a DATA batch in fewer bytes (format/packed.h), written the same way.
 *   SLOT    a thread's live buffer, mapped MAP_SHARED by the runtime and
 *           reused across batches. Its events are the thread's newest batch
 *           (sequence number `seq`) unless a DATA chunk with the same thread
 *           serial and seq exists (the batch was flushed and the process died
 *           before the slot was cleared: the copy with more complete events
 *           wins). A thread may own several slots with consecutive batch
 *           numbers (docs/DESIGN.md). Events in a slot end at the first
 *           event whose word is zero. A SLOT whose thread_serial is 0 is free (its
 *           last owner exited and handed its events off): ignore it.
 *           Thread serials start at 1.
 */
#ifndef SFTRACE_FORMAT_SFLOG_H
#define SFTRACE_FORMAT_SFLOG_H

#include <stdint.h>

#define SF_MAGIC        0x0045434152544653ULL /* "SFTRACE\0" */
#define SF_VERSION      7                     /* 2: 8-byte events, batch time base; 3: + unwind and heap events; 4: + packed DATA chunks;
					       * 5: + kind 15 (op 4 with id 0 when packed) and sf_header.features;
					       * 6: + values-only ARGS events (SF_ARGS_VALUES) and ARGSPEC chunks;
					       * 7: + the fourth form of coded ARGS events (values and their function event) */
#define SF_VERSION_NO_ARGS 5                  /* what the runtime writes when no values can be recorded */
#define SF_VERSION_MIN  2                     /* oldest version readers accept (a subset of 5) */
#define SF_HEADER_SIZE  4096u
#define SF_CHUNK_MAGIC  0x4b434653u           /* "SFCK" */
#define SF_SLOT_SIZE    65536u                /* whole slot chunk, header included */
#define SF_CMDLINE_MAX  3072u

enum sf_clock {
	SF_CLOCK_TSC = 1,       /* event times are a hardware counter's raw values (x86-64: rdtsc;
				 * aarch64: cntvct_el0, see sf_header.machine and counter_hz);
				 * fit with calibration pairs */
	SF_CLOCK_MONOTONIC = 2, /* event times are CLOCK_MONOTONIC ns */
};

enum sf_state {
	SF_STATE_RUNNING = 1, /* still running, or died without running its exit hooks */
	SF_STATE_EXITED = 2,  /* exit() / return from main ran the runtime's destructor */
};

/* Event kinds (the low SF_KIND_BITS of sf_event.word). */
enum sf_event_kind {
	SF_EV_ENTRY = 1,
	SF_EV_EXIT = 2,
	SF_EV_TAIL = 3,
	/* Allocation events of the reference tool's setup ABI. The event is
	 * followed by one sf_event_ext (two records) holding size/align and
	 * pointer. */
	SF_EV_ALLOC = 4,
	SF_EV_DEALLOC = 5,
	SF_EV_REALLOC_ALLOC = 6,
	SF_EV_REALLOC_DEALLOC = 7,
	/* Unwinding landed (a catch, a catch_unwind, a cleanup pad, a
	 * longjmp target): the thread's `word >> SF_KIND_BITS` innermost
	 * recorded frames were abandoned and end at this event's time. */
	SF_EV_UNWIND = 8,
	/* (An UNWIND of SF_UNWIND_UNCOUNTED frames, 0, marks a landing the
	 * runtime could not count, sf_header.landings_uncounted: it closes
	 * nothing.) */
	/* Unwinding landed (as kind 8), said another way: `word >>
	 * SF_KIND_BITS` is the number of the thread's recorded frames still
	 * open after the landing, counted from the thread's first event (its
	 * depth). A reader closes innermost frames until its depth is that;
	 * the frames a reader never saw begin (frames open before a ring's
	 * window) come from the batch's start depth (sf_chunk.reserved of a
	 * SLOT chunk). Written by runtimes that keep a shadow stack (x86-64, aarch64). */
	SF_EV_UNWIND_TO = 9,
	/* Allocation events of the interposed libc allocator (record --alloc,
	 * libsftrace-alloc.so), each followed by payload records (u64 each,
	 * sf_event_payload_records): HEAP_ALLOC size_align, ptr, call site;
	 * HEAP_FREE ptr, call site; HEAP_REALLOC size_align, new ptr, old
	 * ptr, call site. The call site is the return address of the
	 * allocator call. */
	SF_EV_HEAP_ALLOC = 10,
	SF_EV_HEAP_FREE = 11,
	SF_EV_HEAP_REALLOC = 12,
	/* Arguments or return values of the next entry (or exit, tail call)
	 * of one function on this thread (record -A/-R, --auto-args). Unlike
	 * the kinds above, `word >> SF_KIND_BITS` is not a function id but the
	 * number of payload records that follow (1..SF_ARGS_MAX_RECORDS):
	 * struct sf_args_head, then the values' bytes (format/sf_args.h).
	 * Since version 6 the count may be SF_ARGS_VALUES | n instead: n
	 * records of values only, for the function event right after them
	 * (its id and direction), laid out by the function's spec in an
	 * ARGSPEC chunk (sf_args.h, "Values only"). */
	SF_EV_ARGS = 13,
	/* A tail call (as kind 3) whose sled's jump lands on the entry of a
	 * function of the same object whose entry sled was patched with it
	 * (the runtime decodes the `jmp`/`b` after each tail-call sled when
	 * it patches). In a log with SF_FEAT_TAIL_TARGET, kind 3 then means
	 * a tail call anywhere else: through the PLT or GOT, an indirect
	 * jump, a function that does not record. Readers deliver both as
	 * SF_EV_TAIL (lr_event.tail_to_entry tells them apart). */
	SF_EV_TAIL_ENTRY = 15,
};
/* The sled's function id with these bits set makes its trampoline store
 * kind 15 instead of 3: the trampolines rotate the id left by
 * SF_KIND_BITS (rather than shift it), bringing them down to bits 2-3,
 * and OR the kind in. Ids are below SF_FUNC_ID_LIMIT, so they are free. */
#define SF_TAIL_ENTRY_ID_BITS 0xc0000000u
#define SF_ARGS_MAX_RECORDS 32u /* payload records of one ARGS event, header included */
/* An ARGS word's count field SF_ARGS_VALUES | n (n from 1 to
 * SF_ARGS_VALUES_MAX): n records of values only (version 6). Older
 * readers take the count for a corrupt one: they refuse version 6. */
#define SF_ARGS_VALUES 0x40u
#define SF_ARGS_VALUES_MAX 31u

/* Whether an ARGS word is a values-only one (its count field is). */
static inline int sf_args_word_values(uint32_t word)
{
	uint32_t c = word >> 4;
	return (c & ~0x3fu) == SF_ARGS_VALUES && (c & 0x3fu) - 1 < SF_ARGS_VALUES_MAX;
}

/* 8-byte payload records that follow an event of this kind. */
static inline unsigned sf_event_payload_records(uint32_t kind)
{
	switch (kind) {
	case SF_EV_ALLOC: case SF_EV_DEALLOC: case SF_EV_REALLOC_ALLOC: case SF_EV_REALLOC_DEALLOC:
		return 2;
	case SF_EV_HEAP_ALLOC:
		return 3;
	case SF_EV_HEAP_FREE:
		return 2;
	case SF_EV_HEAP_REALLOC:
		return 4;
	default:
		return 0;
	}
}

/* Whether a reader knows this kind (others are corrupt records). */
static inline int sf_event_kind_valid(uint32_t kind)
{
	return (kind >= SF_EV_ENTRY && kind <= SF_EV_UNWIND_TO) ||
	       (kind >= SF_EV_HEAP_ALLOC && kind <= SF_EV_ARGS) || kind == SF_EV_TAIL_ENTRY;
}

/* Whether an event of this kind closes its function's frame by a tail call. */
static inline int sf_kind_is_tail(uint32_t kind)
{
	return kind == SF_EV_TAIL || kind == SF_EV_TAIL_ENTRY;
}

/* Payload records that follow the event whose word this is: the kind's
 * fixed count, or an ARGS event's own (its word carries it). Every
 * walker of records skips by this. */
static inline unsigned sf_event_payload_count(uint32_t word)
{
	uint32_t kind = word & 15u;
	if (kind == SF_EV_ARGS) { /* a larger count is a corrupt word: nothing follows it */
		if (sf_args_word_values(word))
			return word >> 4 & 0x3fu;
		return word >> 4 <= SF_ARGS_MAX_RECORDS ? word >> 4 : 0;
	}
	return sf_event_payload_records(kind);
}

/* One event: 8 bytes.
 *
 * `word` is the function id shifted left by SF_KIND_BITS, or'ed with the
 * kind. It is never zero, so a zero word marks the end of a slot's valid
 * data; the runtime stores it after time_lo.
 *
 * `time_lo` is the low 32 bits of the event's time (rdtsc value or ns, per
 * sf_header.clock). The batch's chunk header carries a 64-bit `base`, and the
 * runtime keeps every event of a batch within SF_TIME_SPAN of it, before or
 * after (a thread idle for longer starts a new batch), so the full time is
 * base plus the signed 32-bit difference: sf_event_time(). */
struct sf_event {
	uint32_t time_lo;
	uint32_t word;
};

#define SF_KIND_BITS     4u
#define SF_KIND_MASK     ((1u << SF_KIND_BITS) - 1)
#define SF_FUNC_ID_LIMIT (1u << (32 - SF_KIND_BITS)) /* function ids are below this */
#define SF_UNWIND_UNCOUNTED 0u /* SF_EV_UNWIND's count: a landing the runtime could not count */
#define SF_TIME_SPAN     (1ull << 31)

static inline uint32_t sf_event_word(uint32_t func_id, uint32_t kind)
{
	return func_id << SF_KIND_BITS | kind;
}

static inline uint64_t sf_event_time(uint64_t base, uint32_t time_lo)
{
	return base + (uint64_t)(int64_t)(int32_t)(time_lo - (uint32_t)base);
}

/* size_align: size in the low 48 bits, log2(align) in the top 16. */
static inline uint64_t sf_size_align(uint64_t size, uint64_t align)
{
	uint64_t lg = align ? (uint64_t)__builtin_ctzll(align) : 0;
	return (size & 0xffffffffffffull) | lg << 48;
}

/* Payload that follows a setup-ABI allocation event, in the next two records. */
struct sf_event_ext {
	uint64_t size_align; /* size in the low 48 bits, log2(align) in the top 16 */
	uint64_t ptr;
};

#define SF_FILTER_DESC_MAX 256 /* sf_header.filter */

struct sf_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint32_t pid;
	uint32_t ppid;
	uint32_t clock;            /* enum sf_clock */
	uint32_t state;            /* enum sf_state, updated in place */
	uint64_t start_realtime_ns;/* CLOCK_REALTIME at start */
	/* Calibration: (tsc, CLOCK_MONOTONIC ns) at start, and the latest pair
	 * taken (updated in place on every buffer hand-off and at exit). */
	uint64_t start_tsc;
	uint64_t start_mono_ns;
	uint64_t last_tsc;
	uint64_t last_mono_ns;
	/* Counters, updated in place with atomic adds. */
	uint64_t dropped_events;   /* events that could not be stored */
	uint64_t write_errors;     /* failed chunk writes (their events are in dropped_events) */
	uint32_t last_errno;       /* errno of the last failed write */
	uint32_t threads;          /* threads that recorded at least one event */
	uint32_t objects;          /* OBJECT chunks written */
	uint32_t cmdline_len;      /* bytes used in cmdline */
	uint32_t cmdline_truncated;
	uint32_t machine;          /* ELF e_machine of the writer (EM_X86_64 62, EM_AARCH64 183); 0: x86-64 */
	uint64_t patch_ns;         /* time spent patching sleds so far (all objects) */
	uint64_t sleds_patched;    /* sleds patched so far */
	/* ring_bytes: record --ring's per-thread
	 * ring size (0: not a ring log); the log then holds each thread's
	 * newest batches only, in SLOT chunks reused oldest first. snapshot: 0
	 * for a process's own log, else the number of this snapshot (from 1),
	 * a copy of the ring taken while the process ran (docs/FORMAT.md). */
	uint64_t ring_bytes;
	uint32_t snapshot;
	uint32_t snapshot_reason;  /* enum sf_snapshot_reason */
	uint64_t reserved[11];     /* zero, but for the snapshot and trimming words (SF_HDR_*) */
	uint64_t counter_hz;       /* SF_CLOCK_TSC: the counter's exact frequency (aarch64 cntfrq_el0);
				    * 0: not known (x86-64), readers fit the calibration pairs */
	/* argv, each argument NUL-terminated. */
	char cmdline[SF_CMDLINE_MAX];
	/* Since issue 28 (zero in older logs, which readers then read as
	 * before). How the process ended: sf_exit_pack(); 0 not known. The
	 * runtime stores it at _exit/_Exit, `sftrace record` when it reaps the
	 * process (docs/FORMAT.md "Exit state"). */
	uint64_t exit_state;
	/* Chunks whole in the file (atomic counter): each chunk counted after
	 * its write completed, each SLOT when its space was reserved. A
	 * reader that finds fewer reads a cut file. 0: not counted (older
	 * logs); not meaningful in a snapshot (a copy of some chunks). */
	uint64_t chunks;
	/* Since issue 24 (zero in older logs): record --ring's snapshot
	 * requests, in a process's own log (atomic counters). snap_over_max:
	 * requests that came after --max-snapshots were taken, not taken.
	 * snap_sent: requests `sftrace snapshot` made (it adds 1 here, through
	 * a shared mapping, and wakes the low half as a shared futex: the
	 * writer thread waits on it; no signal); snap_arrived: those the
	 * runtime took. The difference counts those the process ended before
	 * taking. (Until issue 24's signal fix the request was a sigqueue'd
	 * ring signal, and the difference counted those the kernel merged
	 * into one still pending.) */
	uint64_t snap_over_max;
	uint64_t snap_sent;
	uint64_t snap_arrived;
	/* Since issue 27 (zero in older logs and in every log but a forked
	 * child's): the event-clock time at which the parent began the fork
	 * that made this process (its atfork prepare handler), on the
	 * parent's clock, which the child keeps (same start words). Readers
	 * give the child the parent's live heap at that time. */
	uint64_t fork_time;
	/* Since issue 28's tail-call fix (zero in older logs): SF_FEAT_* bits
	 * saying what the events of this log tell (docs/FORMAT.md). */
	uint64_t features;
	/* Since issue 28's info (zero in older logs): the recording options
	 * that shape what was recorded, for `sftrace info`. max_size: record
	 * --max-size, the run's byte cap (0: none); max_size_reached: 1 once
	 * the cap refused a claim of any process of the run, as seen by this
	 * one (at the refusal, at exit). filter_funcs: functions whose entry
	 * sled the filter selected, over the objects this process loaded
	 * (atomic adds). filter: what record was given, NUL-terminated ("-f
	 * PATH", "--filter-regex RE[ --within]"; "" no filter). */
	uint64_t max_size;
	uint32_t max_size_reached;
	uint32_t filter_funcs;
	char filter[SF_FILTER_DESC_MAX];
	/* Since issue 27's double-fork fix (zero in older logs, which read
	 * ppid instead): with fork_time, the pid of the process whose heap
	 * this child started with, at fork_time: its fork parent, or, when
	 * that parent was itself a forked child that had recorded nothing
	 * before forking (a daemon's intermediate child), that parent's own
	 * origin, whose heap it still was. ppid is getppid() when the log was
	 * made, which is the reaper once the parent has exited. High 32 bits:
	 * the tid of that process's thread that forked (0: not known). */
	uint64_t fork_parent;
	/* Since issue 28's net-time bound (zero in older logs): the spread of
	 * the tracer's cost per call over the calibration's rounds, as
	 * sf_hdr_cost_pack packs it (1/256 of the event clock's unit): the
	 * lowest round's total (caller's part + call's) in the low 32 bits,
	 * the highest kept round's in the high 32 (calib.c). Readers bound
	 * each net figure's error with it (docs/DESIGN.md "Times net of the
	 * tracer"). */
	uint64_t cost_spread;
	/* Since issue 28's deep landings (zero in older logs; atomic counter):
	 * landings deeper than the stored shadow entries that neither a walk
	 * nor the runtime's stack scan could count (unwind.c, past_scan.c).
	 * Their abandoned frames stay open in the readers until an outer exit,
	 * and later depths may be off: every reader warns. */
	uint64_t landings_uncounted;
	/* Since issue 28's exit re-measure (zero in older logs, and when the
	 * process ended without exiting or the re-measure saw no events): the
	 * tracer's cost per call measured again at the process's exit, the
	 * median round's, packed as SF_HDR_COST (calib.c). The start's figure
	 * is the one times are net of; this one says how far the cost drifted
	 * (cost_spread already takes in its rounds). */
	uint64_t cost_exit;
	/* Since the ring9 fix (zero in older logs; atomic counter): record
	 * --ring's events of exited threads that the final log lost because a
	 * later thread took their slots (an exited thread's batches stay in the
	 * log only until then: the file is bounded by the threads alive at
	 * once). Readers and record report it. A snapshot keeps the count at
	 * its writing: those events are not in it either. */
	uint64_t ring_reused;
	/* Since issue 24's seccomp fix (zero in older logs): tracing stopped
	 * for good just before the program installed a seccomp filter that
	 * refuses a system call the runtime makes on the program's threads
	 * (runtime/sandbox.c): that call's number + 1; 0: not stopped. The
	 * program ran on untraced, its events end there. */
	uint32_t seccomp_stopped;
	uint32_t seccomp_pad;
};
/* sf_header.features: TAIL events are kind 15 when their sled jumps to a
 * patched entry of the same object, else kind 3 (without it, kind 3 is
 * any tail call). */
#define SF_FEAT_TAIL_TARGET 1u
/* record --alloc was on: libsftrace-alloc.so attached to the runtime, so a
 * log without heap events is a program that allocated nothing. */
#define SF_FEAT_ALLOC 2u
/* ... but the program's malloc comes before libsftrace-alloc.so's in the
 * lookup order (an executable with its own allocator): the program's
 * allocations are not seen. */
#define SF_FEAT_ALLOC_HIDDEN 4u
/* The header's recording options (max_size, filter_funcs, filter) are
 * filled in: zero there then means no cap, no filter. */
#define SF_FEAT_OPTIONS 8u

/* sf_header.exit_state: a wait(2) status in the low 32 bits (WIFEXITED,
 * WEXITSTATUS, WIFSIGNALED, WTERMSIG and WCOREDUMP read it), and in bits
 * 32-39 who saw it. */
enum sf_exit_source {
	SF_EXIT_NONE = 0,
	SF_EXIT_CALLED = 1, /* the runtime: the process called _exit/_Exit(code) (status: code << 8) */
	SF_EXIT_REAPED = 2, /* sftrace record reaped it (its parent, or the subreaper of its orphans): the
			     * kernel's wait status, signals included */
	SF_EXIT_EXITED = 3, /* the runtime: exit(code), or main returned code (an on_exit handler that runs
			     * after every other exit handler and destructor; status: code << 8) */
	SF_EXIT_EXECD = 4,  /* the runtime: the image exec'd (stored at the exec, cleared if it fails;
			     * status 0): the same pid's next log is its new image */
};
static inline uint64_t sf_exit_pack(enum sf_exit_source src, uint32_t wait_status)
{
	return (uint64_t)src << 32 | wait_status;
}

/* Why a snapshot was taken (sf_header.snapshot_reason). */
enum sf_snapshot_reason {
	SF_SNAP_SIGNAL = 1,  /* the ring signal (kill -USR2) */
	SF_SNAP_ENTRY = 2,   /* record --trigger FUNC: FUNC was entered */
	SF_SNAP_SLOW = 3,    /* record --trigger 'FUNC>DUR': a call of FUNC lasted longer */
	SF_SNAP_COMMAND = 4, /* sftrace snapshot's request (snap_sent), taken by the writer thread */
};

/* Record-time trimming (record --min-duration / --max-depth), in
 * sf_header.reserved[]: zero is off. Readers apply the same trimming
 * exactly to everything they deliver (the runtime trims only what it can
 * prove, docs/DESIGN.md "Record-time trimming"). */
/* record --ring snapshots (docs/FORMAT.md): the freeze a snapshot holds,
 * in its own header; SF_HDR_SNAP_MISSED also in the process's log. */
#define SF_HDR_SNAP_TIME      0 /* offset 144: event-clock time of the trigger; every thread's window ends there */
#define SF_HDR_SNAP_THREAD    1 /* offset 152: tid of the thread it fired on (the ring signal: the one that took it) */
#define SF_HDR_SNAP_FUNC      2 /* offset 160: function id of the trigger function (0: the ring signal) */
#define SF_HDR_SNAP_MISSED    3 /* offset 168: requests that came while a snapshot was being written, not taken */
#define SF_HDR_SNAP_SLOW_NS   7 /* offset 200: reason 3: how long the slow call lasted (ns) */
#define SF_HDR_SNAP_REQUEST   7 /* offset 200: reason 4: the number of the sftrace snapshot request it answers (snap_sent after that command's add) */
/* In the process's log only (atomic counters): requests taken (a freeze
 * opened), and snapshots written. Taken but not written: the process
 * ended (a crash, a kill) or the write failed before the file was there. */
#define SF_HDR_SNAP_TAKEN     8 /* offset 208 */
#define SF_HDR_SNAP_WRITTEN   9 /* offset 216 */
#define SF_HDR_TRIM_MIN_NS    4 /* offset 176: calls shorter than this many ns are not wanted */
#define SF_HDR_TRIM_MAX_DEPTH 5 /* offset 184: frames deeper than this are not wanted (1: outermost) */
#define SF_HDR_TRIMMED        6 /* offset 192: records the runtime left out (atomic counter) */
/* The tracer's own cost per traced call, measured at start (runtime/calib.c),
 * in 1/256 of the event clock's unit (TSC ticks or ns): the part its caller's
 * self time gains (the trampolines' work before the ENTRY's timestamp and
 * after the EXIT's), and the part its own duration gains (between them).
 * 0 and 0: not measured (older logs, monotonic clock): readers show raw times. */
#define SF_HDR_COST           10 /* offset 224: the caller's part in the low 32 bits, the call's in the high */
static inline uint64_t sf_hdr_cost_pack(uint64_t parent, uint64_t child)
{
	return (parent > UINT32_MAX ? UINT32_MAX : parent) | (child > UINT32_MAX ? UINT32_MAX : child) << 32;
}

enum sf_chunk_type {
	SF_CHUNK_OBJECT = 1,
	SF_CHUNK_UNLOAD = 2,
	SF_CHUNK_DATA = 3,
	SF_CHUNK_SLOT = 4,
	/* A DATA batch re-coded by format/packed.h (version 4): `count`
	 * records as in DATA, `reserved` = the payload's length in bytes. */
	SF_CHUNK_PACKED = 5,
	/* Since version 6: the argument specs of functions whose values
	 * come in values-only ARGS events, `count` entries, each a struct
	 * sf_args_head (its function id, SF_ARGS_FIXED, SF_ARGS_RET for the
	 * exit's) and its slot/format pairs, padded to 8 bytes
	 * (format/sf_args.h, "Values only"). */
	SF_CHUNK_ARGSPEC = 6,
	/* Tracing switched on or off in the running process (record --paused,
	 * sftrace resume / pause): payload struct sf_switch. Numbered apart
	 * from the others so new chunk kinds can take 6 and up. Readers that
	 * predate it skip it as garbage; logs without it read as before. */
	SF_CHUNK_SWITCH = 16,
};

/* Payload of a SWITCH chunk. A pause's `time` is taken after every sled
 * was unpatched: each thread's frames still open then were in flight at
 * the pause, and readers close them there (frames.h, FR_END_PAUSED). A
 * resume's `time` is taken before the first sled is patched: no event of
 * the resumed stretch is older. */
struct sf_switch {
	uint64_t time;     /* event clock (sf_header.clock), like an event's full time */
	uint32_t on;       /* 1: resume (tracing on from here), 0: pause (off from here) */
	uint32_t sleds;    /* sleds patched (resume) or unpatched (pause) */
	uint64_t took_ns;  /* how long patching or unpatching took */
	uint64_t reserved;
};

/* Every chunk starts with this 80-byte header. */
struct sf_chunk {
	uint32_t magic;         /* SF_CHUNK_MAGIC */
	uint16_t type;          /* enum sf_chunk_type */
	uint16_t flags;
	uint32_t size;          /* bytes of the whole chunk, header included, multiple of 16 */
	uint32_t count;         /* DATA: events in the payload; OBJECT: functions; SLOT: capacity */
	uint64_t thread_serial; /* DATA/SLOT: unique per thread within the process (tids get reused) */
	uint32_t tid;           /* DATA/SLOT: OS thread id */
	uint32_t seq;           /* DATA/SLOT: batch number within the thread, from 0 */
	uint64_t tsc;           /* calibration pair taken when the chunk was written */
	uint64_t mono_ns;
	char name[16];          /* DATA/SLOT: thread name (prctl PR_GET_NAME) */
	uint64_t base;          /* DATA/SLOT: time base of the batch's events (sf_event_time) */
	uint64_t reserved;      /* PACKED: payload bytes; SLOT: the thread's depth before the
				 * batch's first event + 1 (0: not known), see SF_EV_UNWIND_TO */
};

/* Payload of an OBJECT chunk: this struct, then `path_len` bytes of path
 * (no NUL), padded to 8, then `count` uint64_t function addresses (ELF
 * virtual addresses, i.e. runtime address minus load_bias), function id
 * first_id + i at index i. */
struct sf_object {
	uint32_t index;         /* object number in this process, from 0 */
	uint32_t first_id;      /* first global function id */
	uint64_t load_bias;     /* runtime address = ELF vaddr + load_bias */
	uint32_t sleds;         /* sleds in xray_instr_map */
	uint32_t patched;       /* sleds patched (after filtering) */
	uint16_t path_len;
	uint8_t build_id_len;
	uint8_t flags;          /* SF_OBJ_* */
	uint32_t reserved;      /* SF_OBJ_UNTRACED: pages (4 KiB) from load_bias to the end of its last PT_LOAD */
	uint8_t build_id[64];
};

/* SF_OBJ_UNTRACED: an object with no xray_instr_map (the executable of an
 * uninstrumented program, libc), recorded so that readers can name the
 * allocation sites in it: no functions (count 0), index
 * SF_OBJ_UNTRACED_INDEX | n, no UNLOAD. */
enum { SF_OBJ_MAIN = 1, SF_OBJ_DLOPEN = 2, SF_OBJ_UNTRACED = 4 };
#define SF_OBJ_UNTRACED_INDEX 0x80000000u

/* Payload of an UNLOAD chunk. */
struct sf_unload {
	uint32_t index;
	uint32_t reserved;
};

_Static_assert(sizeof(struct sf_event) == 8, "event size");
_Static_assert(sizeof(struct sf_event_ext) == 2 * sizeof(struct sf_event), "event ext size");
_Static_assert(sizeof(struct sf_chunk) == 80, "chunk header size");
_Static_assert(sizeof(struct sf_header) <= SF_HEADER_SIZE, "header size");
_Static_assert(__builtin_offsetof(struct sf_header, machine) == 108, "docs/FORMAT.md: machine");
_Static_assert(__builtin_offsetof(struct sf_header, ring_bytes) == 128, "docs/FORMAT.md: ring words");
_Static_assert(__builtin_offsetof(struct sf_header, reserved) + 8 * SF_HDR_TRIM_MIN_NS == 176,
	       "docs/FORMAT.md: trimming words");
_Static_assert(__builtin_offsetof(struct sf_header, counter_hz) == 232, "docs/FORMAT.md: counter_hz");
_Static_assert(__builtin_offsetof(struct sf_header, reserved) + 8 * SF_HDR_COST == 224, "sf_header's cost word");
_Static_assert(__builtin_offsetof(struct sf_header, reserved) + 8 * SF_HDR_SNAP_TIME == 144 &&
		       __builtin_offsetof(struct sf_header, reserved) + 8 * SF_HDR_SNAP_SLOW_NS == 200,
	       "docs/FORMAT.md: snapshot words");
_Static_assert(__builtin_offsetof(struct sf_header, exit_state) == 3312 &&
		       __builtin_offsetof(struct sf_header, chunks) == 3320,
	       "docs/FORMAT.md: exit state and chunk count");
_Static_assert(__builtin_offsetof(struct sf_header, max_size) == 3368 &&
		       __builtin_offsetof(struct sf_header, filter_funcs) == 3380 &&
		       __builtin_offsetof(struct sf_header, filter) == 3384,
	       "docs/FORMAT.md: recording options");
_Static_assert(__builtin_offsetof(struct sf_header, snap_over_max) == 3328 &&
		       __builtin_offsetof(struct sf_header, snap_arrived) == 3344,
	       "docs/FORMAT.md: snapshot request counters");
_Static_assert(__builtin_offsetof(struct sf_header, fork_time) == 3352, "docs/FORMAT.md: fork time");
_Static_assert(__builtin_offsetof(struct sf_header, features) == 3360, "docs/FORMAT.md: features");
_Static_assert(__builtin_offsetof(struct sf_header, fork_parent) == 3640, "docs/FORMAT.md: fork parent");
_Static_assert(__builtin_offsetof(struct sf_header, cost_spread) == 3648, "docs/FORMAT.md: cost spread");
_Static_assert(__builtin_offsetof(struct sf_header, landings_uncounted) == 3656, "docs/FORMAT.md: uncounted landings");
_Static_assert(__builtin_offsetof(struct sf_header, cost_exit) == 3664, "docs/FORMAT.md: cost at exit");
_Static_assert(__builtin_offsetof(struct sf_header, ring_reused) == 3672, "docs/FORMAT.md: ring events reused");
_Static_assert(sizeof(struct sf_object) == 96, "object size");
_Static_assert(sizeof(struct sf_switch) == 32, "switch size");

#endif
