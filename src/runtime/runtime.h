/* libsftrace.so's internal interfaces: the map of the runtime that lives
 * inside traced processes. Each section below is one file and holds every
 * declaration that file defines, in the order an event meets them.
 *
 * Start-up and process life
 *   init.c        reads the configuration (SFTRACE_* variables), starts (in the
 *                 process's first constructor, then at __libc_start_main) and
 *                 ends the process's tracing in order; wires the layers
 *   rt_libc.c     the libc the runtime calls, hidden (never interposable);
 *                 anonymous mappings, the raw thread id
 *   fdguard.c     the runtime's descriptors out of the program's reach:
 *                 close, close_range, closefrom, dup, dup2, dup3, fcntl wrapped;
 *                 runtime opens optimistic (claim, fstat check), never waiting
 *   notes.c       messages on stderr, and notes for record when no log is written
 *   trust.c       paths from the environment: owner, mode and type checked, never followed
 *   exec_env.c    children exec'd with an environment of their own stay traced;
 *                 every exec waits for a snapshot being written
 *   hooks.c       fork, _Fork, clone(), raw clone/fork via syscall(), vfork bookkeeping;
 *                 the log made before the program changes its credentials;
 *                 _exit, _Exit, abort wait for a snapshot being written
 *   setup_abi.c   the reference tool's sftrace_setup ABI
 * Finding and patching code
 *   objects.c     loaded ELF objects with sleds: function ids, OBJECT chunks
 *   filter.c      which functions to patch (filter files, per-object regex filters)
 *   trigger.c     record --trigger: functions whose calls ask for a snapshot
 *   patch.c       sled patching common to every architecture (text writes)
 *   loader_hook.c objects loaded and unloaded later (the loader's debugger hook),
 *                 libgcc_s's unwinder once the program loads it
 *   switch.c      record --paused, sftrace resume/pause: sleds patched and
 *                 unpatched in a running process by the writer thread
 * One event, from sled to file (arch/<arch>/trampoline.S first)
 *   clock.c       timestamps and calibration pairs
 *   calib.c       the tracer's own cost per call, measured once at start
 *   buffer.c      per-thread slots and the slow path (first event, slot full,
 *                 thread exit, events with payloads); a batch's start depth
 *   section.c     masked sections (every signal blocked) run on a stack of the
 *                 thread's own, never on the program's
 *   suppress.c    stretches whose calls are the runtime's, not the program's
 *   unwind.c      frames abandoned by longjmp and caught exceptions: the
 *                 depth a landing leaves open (SF_EV_UNWIND_TO)
 *   elf_sym.c     symbols read from loaded objects' tables (no dlsym, no malloc)
 *   alloc.c       heap events of the interposed allocator (record --alloc)
 *   writer.c      the writer thread: full slots handed off the traced threads
 *                 (it sets its own CPUs: the attribute would allocate)
 *   trim.c        record --min-duration/--max-depth at hand-off
 *   batch_scan.c  the one vectorised scan of a full batch
 *   encode.c      what a full batch becomes in the file (packed or raw)
 *   logfile.c     the log file: header page, chunk appends, slot allocation
 *   budget.c      record --max-size: the byte budget shared by all processes
 *   snapshot.c    record --ring: snapshots written by the writer thread (unnamed
 *                 files linked in when complete; taken/written counted in the log)
 * Per architecture (arch/<arch>/, the Makefile's ARCH)
 *   trampoline.S  the fast path: a counter read + one slot claim, and the
 *                 shadow stack's push/pop
 *   sf_arch.h     inline pieces: raw system calls, the counter, block stores, jmp_buf
 *   sf_shadow.h   the shadow stack's layout, shared with trampoline.S
 *   clock.c       whether the counter may be the event clock; slow-path state size
 *   patch.c       sled bytes and how a sled reaches its trampoline
 *   loader_hook.c, loader_entry.S  the loader's hook function redirected to us
 *   vfork.S       vfork in place of glibc's
 *   section.S     a call on another stack (section.c)
 *   calib.S       (x86-64) calib.c's loop of trampoline calls, as sleds make them
 *   exports.map   symbol versions: every wrapper's, libc's (libgcc_s's) default
 * The library exports only what is marked visibility("default").
 *
 * Layers call down only: logfile.c calls nothing above it (init.c registers
 * what a new log must hold), and the hot path never leaves trampoline.S.
 *
 * Rules: libc and pthread only; never malloc (the traced program may have an
 * instrumented allocator); no locks or syscalls on the fast path; everything
 * reachable from a trampoline is async-signal-safe.
 */
#ifndef SFTRACE_RUNTIME_H
#define SFTRACE_RUNTIME_H

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/sf_env.h"
#include "format/sflog.h"
#include "sf_arch.h" /* src/runtime/arch/$(ARCH)/ */

/* The runtime's own mprotect (rt_libc.c): the name mprotect is the
 * program's, wrapped by patch.c to note changes to its text. */
int sf_mprotect(void *addr, size_t len, int prot) __attribute__((visibility("hidden")));
#define mprotect sf_mprotect

#define SF_HIDDEN __attribute__((visibility("hidden")))

/* ---- per-thread state (initial-exec TLS; the trampolines know the first
 * four fields' offsets) ---- */
/* The thread's heap state (alloc.c): the last heap event recorded on this
 * thread (for sf_heap_setup_dup), whether its slow path runs, and
 * libsftrace-alloc.so's word for the site an outer interposed function
 * leaves (src/alloc/outer_site.h): here, in our static TLS, so that
 * libsftrace-alloc.so has no TLS module of its own (each module adds 16 B
 * to the DTV glibc callocs for every new thread). */
struct sf_heap_tls {
	void *outer_site;
	uint64_t ptr; /* pointer allocated (or freed) */
	uint64_t old; /* realloc: the pointer freed (read only when the direction is realloc) */
	uint32_t tag; /* alloc.c's TAG(source, direction, realloc's setup-ABI halves still to match:
		       * bit 0 alloc, bit 1 free); source 0: nothing to match */
	uint32_t busy;
};

#ifdef SF_ARCH_SHADOW
/* The thread's stacks (stack.c): its own, known without reading
 * /proc/self/maps, and another it ran on (a coroutine's, a signal
 * stack), read from maps when needed, at most a few times per thread. */
struct sf_stack_range {
	uint64_t lo, hi;             /* the thread's own stack: all of it mapped from a frame up to hi */
	uint64_t other_lo, other_hi; /* the mapping of another; the main thread's [stack] reaches down to its limit */
	int32_t own;                 /* lo, hi: 0 not looked up yet, 1 known, -1 unknown */
	uint32_t learned;            /* times maps was read */
	/* The thread's signal stack as the kernel last told it (sf_stack_alt):
	 * [alt_lo, alt_hi), empty for none; valid while alt_known is 1. */
	uint64_t alt_lo, alt_hi;
	uint32_t alt_known;
	uint32_t ctx_writing; /* 1 while the thread changes stack.c's table of contexts */
	/* The context's stack last found in that table, [ctx_lo, ctx_hi),
	 * valid while the table's sequence is ctx_seq (0: none). */
	uint64_t ctx_seq, ctx_lo, ctx_hi;
};
#endif

struct sf_thread {
	uint64_t cursor; /* next free event slot (address); claimed with xadd */
	uint64_t limit;  /* end of the current buffer; cursor >= limit -> slow path */
	uint64_t window_depth; /* within mode: open frames of selected functions */
	uint64_t base;   /* time base of the current batch; the fast path records only
			  * times in [base, base + SF_TIME_SPAN) */
	struct sf_event *events; /* start of the buffer (slot payload, or scratch) */
	struct sf_slot *slot;    /* NULL when the thread has none */
	struct sf_slot *spare;   /* second slot, filled while the writer empties the first; may be NULL */
	uint64_t serial;
	uint32_t tid;
	uint32_t seq;
	uint32_t state; /* enum sf_thread_state */
	uint32_t in_slow;
	/* The frame of a stack walk under way (unwind.c), 0 when none: here,
	 * not in unwind.c's own TLS, so a landing's first test reaches it
	 * from the same TLS base as the shadow stack's, and in the same
	 * cache line as state (a thread's first landing runs cold: a
	 * thread that recorded nothing reads that line only). */
	uint64_t walk_frame;
#ifdef SF_ARCH_SHADOW
	/* The shadow stack (arch/<arch>/trampoline.S, which defines
	 * SF_ARCH_SHADOW): for each open frame whose entry the trampolines
	 * saw, the address of its return address (| 1 for a window frame;
	 * | SF_SHADOW_TAG once a landing checked it, see below), so a landing
	 * knows the frames it abandons without walking the stack (unwind.c).
	 * Entry i is at shadow[i] below SF_SHADOW_CAP, at shadow_ov[i -
	 * SF_SHADOW_CAP] past it (x86-64; sf_shadow_entry). */
#ifdef SF_SHADOW_TP
	/* x86-64: the depth (pushes minus pops, never below 0: the depth a
	 * landing records, SF_EV_UNWIND_TO, and a batch starts at, sf_chunk.
	 * reserved of its slot) as &shadow[depth], so that a push stores
	 * through it and _Unwind_SetIP reads the innermost entry below it with
	 * no load of the array's address; past the array only arithmetic.
	 * sf_shadow_depth and sf_shadow_set_depth read and write it. */
	uint64_t *shadow_tp;
	/* &shadow[SF_SHADOW_CAP] once the array is mapped, NULL before: the
	 * trampolines' push stores below it only. */
	uint64_t *shadow_plim;
#else
	uint64_t shadow_depth; /* pushes minus pops, never below 0: the depth a
				* landing records (SF_EV_UNWIND_TO) and a batch
				* starts at (sf_chunk.reserved of its slot) */
	/* The array of the outermost SF_SHADOW_CAP entries: shadow[i] is
	 * entry i, shadow[-1] the word below the first entry (UINT64_MAX once a
	 * landing set it, the "entry" no landing is above: unwind.c's
	 * _Unwind_SetIP reads shadow[d - 1] at depth d, and at depth 0 nothing
	 * is abandoned). Not in TLS: glibc carves a thread's static TLS from its
	 * stack block (4 KiB of entries were 308 frames of a 16 KiB thread's
	 * stack), so the array is a per-thread mapping, made at the thread's
	 * first push (trampoline.S, sf_shadow_blk_alloc). Until then, or when
	 * it cannot be had, shadow points into sf_shadow_none (zeros: nothing
	 * stored, which the fast paths read as "ask the full path"), so every
	 * push takes the out-of-line path and is
	 * counted only (sf_shadow_mapped). */
	uint64_t shadow_cap; /* SF_SHADOW_CAP once the array is mapped, 0 before */
#endif
	uint64_t *shadow;
	/* The mapping: 0 none yet, 1 none to be had (or being mapped, or the
	 * thread ended), else its address. */
	uint64_t shadow_blk;
#ifdef SF_SHADOW_TP
	/* &shadow[SF_SHADOW_CAP], mapped or not: _Unwind_SetIP reads the
	 * array at depths up to it. */
	uint64_t *shadow_lim;
#endif
	/* The entry of the last push past the array (raw, as the trampoline
	 * wrote it; tagged by a landing that checked it): _Unwind_SetIP's
	 * fast path compares with it at depths past the array. */
	uint64_t shadow_top;
	/* The last resume whose stale entries this thread dropped
	 * (sf_shadow_resync): entries pushed before a pause belong to frames
	 * the readers closed there, and many returned while paused. */
	uint32_t shadow_epoch;
#endif
	uint32_t listed; /* in the thread list (next_thread): 1 while in, 2 after its exit hook (never again) */
	struct sf_ring *ring;    /* record --ring: the thread's slots, NULL otherwise */
	/* Every thread with a state to clear from outside (buffer.c: its
	 * window depth at a resume), linked under a lock. */
	struct sf_thread *next_thread, *prev_thread;
#ifdef SF_ARCH_SHADOW
	/* The entries past the array (SF_SHADOW_OV_CAP of them), mapped at
	 * the thread's first push there (trampoline.S, sf_shadow_ov_alloc):
	 * 0 none yet, 1 none to be had (or being mapped), else the address. */
	uint64_t shadow_ov;
#endif
	/* In this block, not TLS variables of their own, so that the heap
	 * hooks' fast path (alloc.c) reaches all it reads from one TLS base:
	 * fewer registers, no frame. */
	struct sf_heap_tls heap;
	/* Payload records with a zero upper half stored in the thread's current
	 * batch by complete events (low 32 bits; may fall short, never over), and
	 * the batch's number in this thread (high 32 bits): alloc.c counts, the
	 * hand-off compares (has_unfilled). */
	uint64_t heap_zero;
#ifdef SF_ARCH_SHADOW
	struct sf_stack_range stack; /* stack.c */
#endif
	/* Nonzero while args.c's fast path is between its claim of several
	 * records (one xadd) and the stores or the cut filler that complete
	 * it: it compares its claim with t->limit and fills up to it, so the
	 * slot, its limit and its base must not change under it. A signal
	 * handler's event that would change them meanwhile is dropped and
	 * counted instead (store_event): it never waits on the interrupted
	 * claim (docs/DESIGN.md, "The args path and signal handlers"). A
	 * count: a handler's own args event nests. */
	uint32_t args_claim;
};

/* record --ring: a thread's slots, used round robin (buffer.c), and a
 * second set that holds the ring as it was at a snapshot's freeze until
 * the writer thread has copied it (docs/DESIGN.md "Snapshots"). Records
 * are never unmapped: the writer thread walks them all (sf_rings), and an
 * exited thread's is reused by a new one. */
struct sf_ring {
	uint32_t n;          /* live slots taken so far (up to cap) */
	uint32_t cap;        /* sf_config.ring_slots */
	uint32_t cur;        /* index of the live slot being filled */
	uint32_t gen;        /* odd while the thread changes the live set (the writer's seqlock) */
	uint32_t epoch;      /* the last freeze this ring was taken for (CAS: its thread or the writer) */
	uint32_t frozen_epoch; /* the freeze the frozen set holds, set once it is in place */
	uint32_t nfrozen, frozen_cur; /* the frozen set: slots, index of its newest */
	uint32_t frozen_kept; /* 1: its batches still read as the thread's oldest; 2: the live set lapped, to be freed */
	uint32_t state;      /* enum sf_ring_state */
	uint32_t tid;
	uint64_t serial;     /* its thread's */
	struct sf_ring *next_all;  /* every ring record */
	struct sf_ring *next_free; /* exited threads' records, for new threads */
	struct sf_slot *reserve;   /* the first freeze's fresh slot, taken at start (no file work then) */
	struct sf_slot **live, **frozen; /* the two halves of store[], swapped at a freeze */
	struct sf_slot *store[];         /* 2 * cap */
};

enum sf_ring_state {
	SF_RING_LIVE = 1,   /* its thread records into it */
	SF_RING_EXITED = 2, /* its thread exited; its slots are free, their batches kept until reused */
	SF_RING_HELD = 3,   /* its thread exited while a freeze was open: the writer frees it */
};

/* arch/<arch>/trampoline.S addresses these fields by offset. */
_Static_assert(__builtin_offsetof(struct sf_thread, cursor) == 0, "tls layout");
_Static_assert(__builtin_offsetof(struct sf_thread, limit) == 8, "tls layout");
_Static_assert(__builtin_offsetof(struct sf_thread, window_depth) == 16, "tls layout");
_Static_assert(__builtin_offsetof(struct sf_thread, base) == 24, "tls layout");
_Static_assert(__builtin_offsetof(struct sf_thread, walk_frame) / 64 == __builtin_offsetof(struct sf_thread, state) / 64,
	       "a thread's first landing reads one line of its state (unwind.c, landing)");
_Static_assert(sizeof(struct sf_event) == 8, "the trampolines store 8-byte events");
#ifdef SF_ARCH_SHADOW
#ifdef SF_SHADOW_TP
_Static_assert(__builtin_offsetof(struct sf_thread, shadow_tp) == SF_SHADOW_TP_OFF, "tls layout");
_Static_assert(__builtin_offsetof(struct sf_thread, shadow_plim) == SF_SHADOW_PLIM_OFF, "tls layout");
#else
_Static_assert(__builtin_offsetof(struct sf_thread, shadow_depth) == SF_SHADOW_DEPTH_OFF, "tls layout");
_Static_assert(__builtin_offsetof(struct sf_thread, shadow_cap) == SF_SHADOW_CAP_OFF, "tls layout");
#endif
_Static_assert(__builtin_offsetof(struct sf_thread, shadow) == SF_SHADOW_PTR_OFF, "tls layout");
_Static_assert(__builtin_offsetof(struct sf_thread, shadow_blk) == SF_SHADOW_BLK_OFF, "tls layout");
_Static_assert((SF_SHADOW_CAP & (SF_SHADOW_CAP - 1)) == 0, "a power of two");
#ifdef SF_SHADOW_OV_CAP
_Static_assert(__builtin_offsetof(struct sf_thread, shadow_top) == SF_SHADOW_TOP_OFF, "tls layout");
_Static_assert(__builtin_offsetof(struct sf_thread, shadow_ov) == SF_SHADOW_OV_OFF, "tls layout");
#endif
/* A landing's mark on an entry it found on the same stack as every entry
 * below it (unwind.c, _Unwind_SetIP): above any address, so the
 * trampolines' raw entries never carry it. */
#define SF_SHADOW_TAG (1ull << 62)
/* The address an entry holds: no window bit, no tag. */
#define SF_SHADOW_ADDR(e) ((e) & ~(SF_SHADOW_TAG | 7))

/* The thread's shadow depth, as the trampolines keep it. */
static inline uint64_t sf_shadow_depth(const struct sf_thread *t)
{
#ifdef SF_SHADOW_TP
	return ((uint64_t)t->shadow_tp - (uint64_t)t->shadow) / 8;
#else
	return t->shadow_depth;
#endif
}

static inline void sf_shadow_set_depth(struct sf_thread *t, uint64_t d)
{
#ifdef SF_SHADOW_TP
	t->shadow_tp = (uint64_t *)((uint64_t)t->shadow + d * 8);
#else
	t->shadow_depth = d;
#endif
}

/* 1 once the thread's array is mapped (pushes store entries). */
static inline int sf_shadow_mapped(const struct sf_thread *t)
{
#ifdef SF_SHADOW_TP
	return t->shadow_plim != NULL;
#else
	return t->shadow_cap != 0;
#endif
}

/* How many entries from the outermost are stored: none without the
 * array's mapping, else the array's, and the overflow's once it is mapped (it is mapped at the first push past the
 * array, so every entry past it is stored from then on). */
static inline uint64_t sf_shadow_stored(const struct sf_thread *t)
{
#ifdef SF_SHADOW_OV_CAP
	return !sf_shadow_mapped(t) ? 0 : t->shadow_ov > 1 ? SF_SHADOW_CAP + SF_SHADOW_OV_CAP : SF_SHADOW_CAP;
#else
	return sf_shadow_mapped(t) ? SF_SHADOW_CAP : 0;
#endif
}

/* The array's mapping has room after it for per-thread state of rare
 * paths (trigger.c's slow stack), which static TLS would take from every
 * thread's stack: SF_SHADOW_EXTRA bytes, NULL while the thread has no
 * array (those paths then do without). */
#define SF_SHADOW_EXTRA 512
#define SF_SHADOW_BLK_BYTES ((SF_SHADOW_CAP + 1) * 8 + SF_SHADOW_EXTRA)
static inline void *sf_shadow_extra(struct sf_thread *t)
{
	return sf_shadow_mapped(t) ? (void *)(t->shadow + SF_SHADOW_CAP) : NULL;
}

/* Where entry i is kept (i < sf_shadow_stored). */
static inline uint64_t *sf_shadow_slot(struct sf_thread *t, uint64_t i)
{
	return i < SF_SHADOW_CAP ? &t->shadow[i] : (uint64_t *)t->shadow_ov + (i - SF_SHADOW_CAP);
}
#endif

enum sf_thread_state {
	SF_THREAD_NEW = 0,      /* no event yet */
	SF_THREAD_ACTIVE = 1,   /* has a slot */
	SF_THREAD_DROPPING = 2, /* no slot could be had: events are counted and dropped */
	SF_THREAD_IGNORED = 3,  /* SFTRACE_SETUP_THREAD_ONLY and not the setup thread */
};

/* ---- init.c ---- */
struct sf_config {
	char output[4096];   /* SFTRACE_OUTPUT_FILE; empty: no tracing */
	char filter[4096];   /* SFTRACE_FILTER */
	int clock;           /* enum sf_clock */
	int enabled;
	int writer;          /* enum sf_writer_mode (SFTRACE_WRITER) */
	int encoding;        /* enum sf_encoding (SFTRACE_ENCODING) */
	uint64_t trim_min_ns;   /* SFTRACE_MIN_DURATION (ns); 0: off */
	uint32_t trim_max_depth;/* SFTRACE_MAX_DEPTH; 0: off */
	int ncpus;           /* CPUs this process may run on, at start */
	cpu_set_t cpus;      /* which: the writer thread gets the same */
	uint32_t ring_slots;  /* SFTRACE_RING / SF_SLOT_SIZE; 0: not a ring */
	int ring_signal;      /* SFTRACE_RING_SIGNAL */
	uint32_t max_snapshots;
};
extern struct sf_config sf_config SF_HIDDEN;
/* The tracer's start in this process: counter, CLOCK_MONOTONIC and
 * CLOCK_REALTIME (the log header's start fields; trim and trigger scale
 * counter ticks with the first two). */
extern uint64_t sf_start_tsc SF_HIDDEN, sf_start_mono SF_HIDDEN, sf_start_realtime SF_HIDDEN;
/* Event-clock time of the latest fork this process began (hooks.c); a
 * forked child writes it in its header (sf_header.fork_time). 0: none. */
extern uint64_t sf_fork_time SF_HIDDEN;
/* The pid whose heap that was, and its thread that forked
 * (sf_header.fork_parent). */
extern uint32_t sf_fork_parent SF_HIDDEN;
extern uint32_t sf_fork_tid SF_HIDDEN;
void sf_services_start(void) SF_HIDDEN;          /* writer thread, ring handler, once sleds exist */
void sf_services_after_fork_child(void) SF_HIDDEN;

/* What a full batch becomes in the file (encode.c). */
enum sf_encoding {
	SF_ENCODING_PACKED = 0, /* SF_CHUNK_PACKED (format/packed.h) */
	SF_ENCODING_RAW = 1,    /* SF_CHUNK_DATA: the slot's 8-byte records as they are */
};

/* Who copies full slots into the log file. */
enum sf_writer_mode {
	SF_WRITER_AUTO = 0,   /* a writer thread while traced threads < CPUs, else the thread itself;
			       * sync under valgrind (init.c) */
	SF_WRITER_SYNC = 1,   /* always the traced thread itself */
	SF_WRITER_THREAD = 2, /* always the writer thread */
};

/* ---- rt_libc.c: the libc the runtime uses, hidden (no interposition) ---- */
void sf_rt_libc_init(void) SF_HIDDEN;
void *sf_map_anon(size_t len) SF_HIDDEN;       /* runtime allocation: mmap, never malloc */
uint32_t sf_gettid(void) SF_HIDDEN;            /* by the raw system call */
/* A descriptor the runtime keeps: moved near the top of the table (never
 * 0-2), close-on-exec; returns its new number, or -1 (fd closed, errno
 * set) when it could only stay in 0-2. */
int sf_fd_keep(int fd) SF_HIDDEN;
/* A descriptor used briefly: moved only if it took 0, 1 or 2 (a closed
 * stdin, stdout or stderr), which the program's own writes would reach. */
int sf_fd_brief(int fd) SF_HIDDEN;
/* "/proc/self/task/TID" + tail into path (NUL-terminated, cut to fit). */
void sf_task_path(char path[48], uint32_t tid, const char *tail) SF_HIDDEN;
int sf_close(int fd) SF_HIDDEN;                /* the bare system call (close is the program's) */

/* ---- fdguard.c (the runtime's descriptors out of the program's reach) ---- */
/* A descriptor the runtime writes through, by number: fd changes only
 * behind the gate (sf_fd_publish), and a writer holds it between
 * sf_fd_use and sf_fd_unuse (with signals blocked). */
struct sf_fd_guard {
	int fd;
	uint32_t epoch;
	uint32_t users[2];
	uint64_t dev, ino; /* the file fd holds: the program's calls check it before leaving fd alone */
};
void sf_fd_guard_resolve(void) SF_HIDDEN;     /* glibc's close, at start-up */
void sf_fd_guard_add(struct sf_fd_guard *g) SF_HIDDEN; /* the program's calls leave g->fd alone */
int sf_fd_use(struct sf_fd_guard *g, uint32_t *ticket) SF_HIDDEN; /* g->fd, held until sf_fd_unuse */
void sf_fd_unuse(struct sf_fd_guard *g, uint32_t ticket) SF_HIDDEN;
/* The runtime changes a guard's number only between these (so does a
 * program dup2 onto a guarded number): a spin among holders that make a
 * few system calls with signals blocked. No program close or dup waits
 * for it, and the runtime never waits for a program call. */
void sf_fd_gate_lock(sigset_t *old) SF_HIDDEN;
void sf_fd_gate_unlock(const sigset_t *old) SF_HIDDEN;
/* Under the gate: g->fd = fd, once no writer holds the old number. */
void sf_fd_publish(struct sf_fd_guard *g, int fd) SF_HIDDEN;
/* Under the gate, fd just opened by the runtime and meant to be the file
 * (dev, ino): claims fd, checks it still holds that file (a program close
 * or dup2 may have reached the number first), moves it high, publishes it
 * in g and checks again. The new number; -EAGAIN if the program took the
 * number meanwhile (left alone: open again); -ESTALE if fd is the file at
 * path but not (dev, ino) (closed); -EBADF if it could not be moved. */
int sf_fd_adopt(struct sf_fd_guard *g, int fd, uint64_t dev, uint64_t ino, const char *path) SF_HIDDEN;
/* Under the gate: a file the runtime makes, opened by open_fn(path, 0),
 * checked (named 1: the regular file at path; 2: one record's keeper sent,
 * regular, one link, empty; 0: an unnamed file, linked nowhere and empty)
 * and adopted in g; while the program takes the number
 * first (-EAGAIN), opened again by open_fn(path, 1), up to 8 times. The
 * number and *st; -1 with *err. */
struct stat;
int sf_fd_open_adopt(struct sf_fd_guard *g, int (*open_fn)(const char *path, int again), const char *path,
		     int named, struct stat *st, int *err) SF_HIDDEN;
/* Under the gate: g->fd = -1, and the descriptor closed if it still is
 * (dev, ino); a program dup2 onto it meanwhile waits for the close. */
void sf_fd_release(struct sf_fd_guard *g, uint64_t dev, uint64_t ino) SF_HIDDEN;
void sf_fd_guard_after_fork_child(void) SF_HIDDEN;
/* syscall(2) of close, close_range, dup2, dup3 (hooks.c): 1, *r = result or -errno. */
int sf_fd_syscall(long nr, const long *a, long *r) SF_HIDDEN;

/* ---- notes.c (why no log was written, for sftrace record) ---- */
void sf_notes_init(void) SF_HIDDEN;
void sf_messages_init(void) SF_HIDDEN; /* at start: is stderr open? */
/* One line on stderr, "sftrace: ABC" (": " before c when given), also kept
 * in the notes. Async-signal-safe (write(2)). */
void sf_rt_message(const char *a, const char *b, const char *c) SF_HIDDEN;
/* The system call that failed, carried from where it failed (this
 * process, or record's keeper, whose answer names it: keeper_files.h) to
 * the loss line record prints (issue 24: the cause named, not guessed). */
struct sf_fail {
	char call[24]; /* "": no call failed (a check refused, or nothing was tried) */
	int err;       /* its errno; 0: nothing failed */
	int keeper;    /* 1: the call was record's keeper's */
};
/* f = {call, -r or r}: r is -errno or an errno (either sign). */
void sf_fail_set(struct sf_fail *f, const char *call, long r) SF_HIDDEN;
/* A loss (a process that gets no log): "ABC" (a, b, c concatenated: what
 * could not be done) and the call that failed. Under record (a notes
 * directory) only in the notes, never on the program's stderr, as
 * "loss CALL ERRNO PROG\tABC" (docs/FORMAT.md, "Runtime notes"): record
 * names the pid, the program and the call (record_why.c). Without one,
 * "sftrace: ABC: CALL: STRERROR" on stderr. */
void sf_rt_lost(const char *a, const char *b, const char *c, const struct sf_fail *f) SF_HIDDEN;
/* A report (calls not recorded): in the notes, which record prints after
 * the run ("sftrace: pid N: ..."); on stderr only without record. */
void sf_rt_report(const char *a, const char *b, const char *c) SF_HIDDEN;
/* A file made by record's keeper (src/format/keeper_files.h: op
 * SF_KF_*): its descriptor (close-on-exec, wherever the kernel put it), 0
 * for a request that returns none, or -errno. path (cap bytes, may be
 * NULL) gets the path the keeper gave it; name goes with the request,
 * send_fd (-1 for none) along. f (may be NULL) gets the call that
 * failed, this process's or record's keeper's (f->keeper). */
int sf_recfile(int op, int first, const char *name, int send_fd, char *path, size_t cap, struct sf_fail *f) SF_HIDDEN;
/* 1 if the process runs under record, whose keeper sf_recfile asks. */
int sf_recfile_keeper(void) SF_HIDDEN;
/* Before the effective uid changes to `to` (hooks.c): the note file is
 * handed to that uid while root can still make it. */
void sf_notes_hand_over(uid_t to) SF_HIDDEN;
/* A connection to record's keeper handed down at fork, for a thread out of
 * record's network namespace (sf_netns_moved, ns.c): made by the writer, in
 * the forking thread's table for the fork (-1: none needed or possible);
 * in the child, taken for its first request, and closed if unused. */
int sf_keeper_conn_for_fork(void) SF_HIDDEN;
/* Why record's keeper is out of this process's reach (NULL: it is not
 * known to be), *f the call that failed (its parent's, at the fork). */
const char *sf_keeper_unreachable(struct sf_fail *f) SF_HIDDEN;
void sf_keeper_conn_handed(int fd) SF_HIDDEN;
void sf_keeper_conn_drop(void) SF_HIDDEN;
extern __thread int sf_netns_moved SF_HIDDEN;
/* Loss lines relayed within a fork family (notes.c): flushed by a writer. */
void sf_notes_relay_flush(void) SF_HIDDEN;
void sf_notes_relay_listen(int on) SF_HIDDEN;
void sf_notes_relay_settle(void) SF_HIDDEN; /* the image ends */
void sf_notes_relay_forked(void) SF_HIDDEN;
uint32_t *sf_notes_relay_word(uint32_t *seen) SF_HIDDEN;
int sf_notes_relay_pending(void) SF_HIDDEN;
int sf_notes_relay_report(uint32_t pid, const char *a, const char *b, int wake) SF_HIDDEN; /* a line relayed for pid */
void sf_seccomp_exec_note(void) SF_HIDDEN;    /* sandbox.c: an exec goes untraced under the chain */
void sf_seccomp_exit_settle(void) SF_HIDDEN;  /* sandbox.c: exit after a stop: relayed lines noted */

/* ---- trust.c (paths from the environment: checked, never followed) ---- */
/* A directory fd (O_NOFOLLOW) when it is ours or root's and writable by
 * no one else; -1 with *why. */
int sf_trust_dir(const char *path, const char **why) SF_HIDDEN;
/* A file the runtime made: mode 0600 whatever the program's umask (a
 * umask of 0777 made a fork child's log 0000, which record, run by its
 * user, could not read). Nothing when it already is. */
void sf_own_mode(int fd) SF_HIDDEN;
/* openat with O_NOFOLLOW|O_NONBLOCK: a regular file, ours or root's,
 * writable by no one else, one link; -1 with *why. */
int sf_trust_open(int dirfd, const char *path, int flags, mode_t mode, const char **why) SF_HIDDEN;
/* A filter-format file (filters, triggers, argument specs) whole, in
 * private memory (munmap(p, *map_len)), NUL-ended after *len: one record
 * wrote (private_file) opened with sf_trust_open, one the user named
 * (SFTRACE_FILTER) checked for type only. NULL with *why when it cannot be
 * read, or is empty and empty_ok is 0. */
char *sf_trust_load(const char *path, int private_file, int empty_ok, size_t *len, size_t *map_len,
		    const char **why) SF_HIDDEN;
/* The root directory at start-up, and whether the program has chrooted
 * since (stat("/") dev and inode differ). */
void sf_root_init(void) SF_HIDDEN;
int sf_root_changed(void) SF_HIDDEN;

/* ---- exec_env.c ---- */
void sf_exec_env_resolve(void) SF_HIDDEN;
void sf_exec_env_init(void) SF_HIDDEN;
void sf_exec_env_after_fork_child(void) SF_HIDDEN;
/* The execve/execveat system call (a: its six arguments)
 * with the tracer's variables added to its environment; -errno. */
long sf_exec_syscall(long nr, const long *a) SF_HIDDEN;

/* ---- hooks.c ---- */
void sf_hooks_resolve(void) SF_HIDDEN; /* the real clone, at start-up */
void sf_hooks_init(void) SF_HIDDEN;
/* glibc's clone(3), past our wrapper: the runtime's own children. */
int sf_clone_real(int (*fn)(void *), void *stack, int flags, void *arg) SF_HIDDEN;
int sf_clone_real_tls(int (*fn)(void *), void *stack, int flags, void *arg, pid_t *ptid, void *tls,
		      pid_t *ctid) SF_HIDDEN;
/* Called by arch/<arch>/vfork.S around the real vfork. */
void sf_vfork_prepare(void) SF_HIDDEN;
void sf_vfork_parent(void) SF_HIDDEN;
int sf_in_vfork_child(void) SF_HIDDEN;
long sf_set_errno(int e) SF_HIDDEN;
int sf_syscall_vforks(long nr, long a0, long a1) SF_HIDDEN; /* arch/<arch>/vfork.S: syscall() */
long sf_syscall_c(long nr, long a0, long a1, long a2, long a3, long a4, long a5) SF_HIDDEN;
/* The image goes now (exec, _exit): snapshot settled, a parent waiting
 * for this CLONE_VFORK child told where the kernel does not. */
void sf_image_ends(void) SF_HIDDEN;
/* Around an exec: the image ends if it succeeds; a parent waiting for
 * this CLONE_VFORK child is released only then where the kernel can tell. */
void sf_exec_begins(void) SF_HIDDEN;
/* logfile.c: a clone(CLONE_FILES) child keeps its descriptor from now on
 * (before a credential change) */
void sf_log_hold(void) SF_HIDDEN;
void sf_log_exec_spare(void) SF_HIDDEN; /* logfile.c: a slot kept for after a failed exec */
void sf_exec_failed(void) SF_HIDDEN;

/* ---- setup_abi.c ---- */
extern uint32_t sf_setup_only_tid SF_HIDDEN; /* SFTRACE_SETUP_THREAD_ONLY: the one thread traced */

/* ---- objects.c ---- */
struct sf_object_rt {
	struct sf_object info;
	uint64_t *func_addr;  /* ELF vaddr of each function, index = id - first_id */
	size_t func_cap;      /* bytes mapped at func_addr */
	struct sf_object_rt *next_free; /* record kept for reuse after an unload */
	uint32_t nfuncs;
	int numbered;         /* func_addr and nfuncs are set (a paused scan leaves that to the resume) */
	uint64_t lo, hi;      /* runtime address range of the object's PT_LOADs */
	uintptr_t dl_addr;    /* dlpi_addr, to recognise it again */
	const void *phdr;     /* dlpi_phdr: program headers, for segment protections */
	int phnum;
	int logged;           /* OBJECT chunk written to the current log */
	int untraced;         /* no xray_instr_map: an SF_OBJ_UNTRACED chunk names it */
	int image_gone;       /* the main executable's path names another file or none: saved with the log */
	int main_image;       /* the main executable (its path checked again when the image ends) */
	int image_saved;      /* save_image ran: path names the copy (or the copy failed, said once) */
	uint64_t xray_vaddr, xray_size; /* its xray_instr_map (ELF vaddr, bytes): read again at a switch */
	/* Its file ("" until known), in the records' arena (objects.c): many
	 * records share a page, and each first touch of a page at start is a
	 * fault (some 45 us on a virtual machine). */
	char *path;
	uint32_t path_cap;    /* bytes at path, kept when the record is reused */
	/* Bit i: program header i's executable segment was made writable
	 * whole once (patch.c, whole_segment_once). */
	uint64_t text_whole;
};
/* logfile.c: "DIR/STEM" + tail, DIR the log's directory and STEM the
 * requested log name without its extension; 0, or -1 when too long. */
int sf_log_sibling_path(char *out, size_t cap, const char *tail) SF_HIDDEN;
void sf_objects_scan(int flags) SF_HIDDEN;      /* find and patch new objects; flags: SF_OBJ_* */
void sf_objects_check_unloaded(void) SF_HIDDEN;
void sf_objects_log_all(void) SF_HIDDEN;        /* write OBJECT chunks not yet in this log */
void sf_objects_image_ends(void) SF_HIDDEN;     /* under the log lock: an executable replaced since start, saved */
void sf_objects_after_fork_child(void) SF_HIDDEN;
uint32_t sf_objects_patched_total(void) SF_HIDDEN;
void sf_objects_foreach_instrumented(void (*cb)(const struct sf_object_rt *o)) SF_HIDDEN;
int sf_objects_holds(uint64_t lo, uint64_t hi, int exec) SF_HIDDEN; /* inside one PT_LOAD of a known object */
#if defined(SF_ARCH_SHADOW) && defined(SF_SHADOW_OV_CAP)
/* past_scan.c: a landing past the stored entries counted on the stack; -1 if it cannot be */
int64_t sf_past_scan_pop(struct sf_thread *t, uint64_t sp, uint64_t last, uint64_t stub_lo, uint64_t stub_hi) SF_HIDDEN;
/* A landing past the stored entries that nothing could count: the header's counter, which readers warn of. */
void sf_past_uncounted(void) SF_HIDDEN;
#endif
/* switch.c: patches (on) or unpatches every instrumented object's sleds
 * the filter selects, under the log lock; returns the sleds changed, and
 * in *read_ns the time spent reading the sled maps (the rest is text). */
uint32_t sf_objects_switch(int on, uint64_t *read_ns) SF_HIDDEN;
int sf_objects_any_instrumented(void) SF_HIDDEN; /* an object with sleds, patched or not */
extern uint64_t sf_patch_ns SF_HIDDEN; /* time spent in sf_objects_scan */

/* ---- filter.c ---- */
/* At start: loads SFTRACE_FILTER, or sets up per-object filters for
 * SFTRACE_FILTER_REGEX. -1 (after a message): do not trace. */
int sf_filter_init(void) SF_HIDDEN;
/* Per-object mode: makes sure the object's filter file exists (runs
 * `sftrace filter` for it). Called without the log lock held. */
void sf_filter_prepare_object(const char *path, const uint8_t *build_id, size_t len) SF_HIDDEN;
int sf_filter_per_object(void) SF_HIDDEN;
/* How to patch the function at vaddr of obj: sets *variant, returns 0 to
 * leave it unpatched. */
int sf_filter_selects(const struct sf_object_rt *obj, uint64_t func_vaddr, uint8_t *variant) SF_HIDDEN;
/* Called once per object before sf_filter_selects: 0 if the object may be
 * patched (reports a build-id mismatch and returns -1). */
int sf_filter_check_object(const struct sf_object_rt *obj) SF_HIDDEN;
/* Running the sftrace CLI (SFTRACE_CLI) from the process, as the
 * per-object filters do: sf_cli_enable, at start, takes its path and the
 * environment the program started with (-1: no usable SFTRACE_CLI);
 * sf_cli_run runs `sftrace ARGS...` (args NULL-terminated, at most 15)
 * and returns 0 when it exited 0. Called without the log lock held. */
int sf_cli_enable(void) SF_HIDDEN;
int sf_cli_run(const char *const *args) SF_HIDDEN;

/* ---- trigger.c (record --trigger: snapshots on a function's entry or slow call) ---- */
void sf_trigger_init(void) SF_HIDDEN;
/* At patch time: a trigger function's sleds get SF_VARIANT_SLOW (under
 * --within SF_VARIANT_SLOW_GATED or _WINDOW: outside a window it asks for
 * nothing). */
void sf_trigger_select(const struct sf_object_rt *o, uint64_t vaddr, uint32_t func_id, uint8_t *variant) SF_HIDDEN;
void sf_trigger_event(uint32_t func_id, uint32_t kind, uint64_t time) SF_HIDDEN;
extern uint32_t sf_trigger_count SF_HIDDEN;
int sf_trigger_watches(uint32_t func_id) SF_HIDDEN; /* trigger.c: func_id is a trigger's */

/* ---- args.c (record -A/-R: arguments and return values of chosen functions) ---- */
void sf_args_init(void) SF_HIDDEN;
void sf_args_after_fork_child(void) SF_HIDDEN; /* the pid strings are read from */
/* At patch time: a chosen function's sleds that have values to read get
 * SF_VARIANT_ARGS: its entry sleds when arguments are asked for, its exit
 * and tail-call sleds when its return value is. kind: the sled's
 * (XRAY_SLED_*). In within mode a gated or window sled gets
 * SF_VARIANT_ARGS_GATED or _WINDOW; a trigger's (SF_VARIANT_SLOW,
 * _SLOW_GATED, _SLOW_WINDOW), SF_VARIANT_ARGS, _ARGS_GATED or
 * _ARGS_WINDOW, its events sent on to the slow path. */
void sf_args_select(const struct sf_object_rt *o, uint64_t vaddr, uint32_t func_id, int kind,
		    uint8_t *variant) SF_HIDDEN;
/* Before an object with sleds is scanned (without the log lock): the
 * specs resolved in it (`sftrace filter --args`), for an object the
 * start-up file did not cover. sf_args_per_object: whether there are
 * specs to resolve. */
void sf_args_prepare_object(const char *path, const uint8_t *build_id, size_t len) SF_HIDDEN;
/* An object unloaded (under the log lock): its function ids [first,
 * first + count) leave the table, so that loads and unloads without end
 * (a plugin reloaded) never fill it. */
void sf_args_forget_ids(uint32_t first, uint32_t count) SF_HIDDEN;
/* Writes the ARGSPEC chunk of the functions selected since the last call
 * (all: every selected one, for a log just created), under the log lock;
 * nothing while there is no log (its creation writes them all). */
void sf_args_log_specs(int all) SF_HIDDEN;
/* Whether values may be recorded (specs loaded, or objects resolved as
 * they load): the log is then version 6 (values-only ARGS events). */
int sf_args_any(void) SF_HIDDEN;
int sf_args_per_object(void) SF_HIDDEN;
/* The registers the args trampolines save (arch/<arch>/trampoline.S
 * lays them out): the integer argument registers in order, the return
 * value register, and the low 64 bits of the vector argument registers. */
#define SF_ARGS_GP 6   /* x86-64: rdi rsi rdx rcx r8 r9; aarch64: x0-x5 */
#ifdef __aarch64__
#define SF_ARGS_RET2 1 /* the second return value register is gp[1] (x1) */
#define SF_ARGS_NGP 8  /* integer argument registers saved: x6 and x7 are saved[0] and saved[1] */
#else
#define SF_ARGS_RET2 2 /* the second return value register is gp[2] (rdx) */
#define SF_ARGS_NGP 6
#endif
#define SF_ARGS_STACK 2 /* x86-64: saved[2] is the address of the first stack argument (entry) */
struct sf_args_regs {
	uint64_t gp[SF_ARGS_GP];
	uint64_t ret; /* rax */
	uint64_t saved[3];
	uint64_t fp[8]; /* xmm0-7 */
};
/* Called by the args trampolines at a chosen function's entry or exit,
 * before its event is recorded: records an ARGS event if the spec asks
 * (aarch64: the ordinary trampoline records the event after it). Returns
 * nonzero for a --trigger function, whose event is then to go through
 * the slow path (the monotonic trampoline of its kind), which looks at
 * the trigger. */
int sf_args_capture(const struct sf_args_regs *r, uint32_t func_id, uint32_t kind) SF_HIDDEN;
/* The same, then the function event itself, with one time read and one
 * claim for both (x86-64, after the trampoline's shadow-stack step).
 * Returns 0 if both are recorded, 1 if the caller is to record the
 * function event on its slow path (ARGS recorded or not asked for). */
int sf_args_event(const struct sf_args_regs *r, uint32_t func_id, uint32_t kind) SF_HIDDEN;
/* sf_args_event(r, func_id, SF_EV_ENTRY) and (..., SF_EV_EXIT): what the
 * entry and exit args trampolines call. */
int sf_args_event_entry(const struct sf_args_regs *r, uint32_t func_id) SF_HIDDEN;
int sf_args_event_exit(const struct sf_args_regs *r, uint32_t func_id) SF_HIDDEN;
/* fn(a, b, c) with the program's vector (and x87) state saved around it
 * (arch/<arch>/trampoline.S): for C reached from the args trampolines,
 * which save none, on its way into code that may change vector registers. */
void sf_vec_safe_call3(void (*fn)(uint64_t, uint64_t, uint64_t), uint64_t a, uint64_t b, uint64_t c) SF_HIDDEN;

/* ---- patch.c ---- */
struct xray_sled_rt {
	uint64_t address;
	uint32_t func_id;
	uint8_t kind;
	uint8_t selected; /* patch this sled at all */
	uint8_t variant;  /* enum sf_variant */
	uint8_t tail_entry; /* a tail sled whose jump lands on the entry of a selected function of the object */
};
/* The id a sled passes its trampoline: a tail sled's records kind 15 when
 * its jump lands on a patched entry (format/sflog.h, SF_EV_TAIL_ENTRY). */
static inline uint32_t sf_sled_id(const struct xray_sled_rt *s)
{
	return s->func_id | (s->tail_entry ? SF_TAIL_ENTRY_ID_BITS : 0);
}

enum sf_variant {
	SF_VARIANT_PLAIN = 0,  /* always record */
	SF_VARIANT_GATED = 1,  /* within mode, outside the selection: record inside a window only */
	SF_VARIANT_WINDOW = 2, /* within mode, selected: opens/closes a window */
	SF_VARIANT_SLOW = 3,   /* record --trigger: the *_mono trampolines (every event to the slow path) */
	SF_VARIANT_ARGS = 4,   /* record -A/-R: the args trampolines, then the plain ones */
	/* record -A/-R in within mode: the args trampolines behind the gate
	 * (a function recorded inside a window only), or after the window's
	 * count (a function that opens one). A trigger's sleds with values to
	 * read take SF_VARIANT_ARGS, and args.c sends their events to the
	 * slow path, where the trigger is looked at. */
	SF_VARIANT_ARGS_GATED = 5,
	SF_VARIANT_ARGS_WINDOW = 6,
	/* record --trigger with --within: a trigger function's sleds keep the
	 * gate or the window count in front of the *_mono trampolines (every
	 * event of theirs to the slow path, which looks at the trigger). */
	SF_VARIANT_SLOW_GATED = 7,
	SF_VARIANT_SLOW_WINDOW = 8,
	SF_VARIANTS
};
/* What a variant is to within mode (unwind.c, the selected count):
 * SF_VARIANT_PLAIN, SF_VARIANT_GATED or SF_VARIANT_WINDOW. */
static inline int sf_variant_role(int v)
{
	return v == SF_VARIANT_GATED || v == SF_VARIANT_ARGS_GATED || v == SF_VARIANT_SLOW_GATED ? SF_VARIANT_GATED
	       : v == SF_VARIANT_WINDOW || v == SF_VARIANT_ARGS_WINDOW || v == SF_VARIANT_SLOW_WINDOW
		       ? SF_VARIANT_WINDOW
		       : SF_VARIANT_PLAIN;
}
struct sf_patch_result {
	uint32_t patched;
	uint32_t skipped; /* sleds whose bytes were not the expected unpatched form */
};
/* Patch (on) or unpatch (!on: sf_arch_unpatch_sled) the selected sleds
 * of one object (entry, exit, tail call). */
int sf_patch_object(struct sf_object_rt *obj, const struct xray_sled_rt *sleds, uint32_t nsleds, int on,
		    struct sf_patch_result *res) SF_HIDDEN;

/* Where a sled of (variant, kind) goes: index variant * SF_STUB_KINDS + kind. */
enum { SF_STUB_ENTRY, SF_STUB_EXIT, SF_STUB_TAIL, SF_STUB_KINDS };
#define SF_STUB_COUNT (SF_STUB_KINDS * SF_VARIANTS)
#define SF_PAGE 4096ull
/* How sled bytes reach the text: stores while it is writable and
 * executable, or writes through /proc/self/mem (mem_fd >= 0). */
struct sf_text_writer {
	int mem_fd;
	int failed;
};
/* The variant of an entry sled whose call goes to trampoline `to`. */
int sf_patch_variant_of(uint64_t to) SF_HIDDEN;
/* Writes n bytes at `at`; n == 2 or 4 is one atomic store (a sled's last write). */
void sf_text_put(struct sf_text_writer *w, void *at, const void *b, size_t n) SF_HIDDEN;
/* patch.c: makes [*page, + *len), pages of code, writable and executable,
 * widened to the whole executable segment holding them when it can be
 * (the range then says so), so that the mapping is not left split in
 * /proc/self/maps once its protection is given back (patch.c says why).
 * 0, or -1 with errno. */
int sf_text_make_writable(uint64_t *page, size_t *len) SF_HIDDEN;
/* patch.c: the program's own text protections (noted by the mprotect
 * wrappers there and by hooks.c's syscall), and a write into text that
 * keeps them (setup-ABI slots). */
void sf_text_prot_note(uint64_t addr, uint64_t len, int prot) SF_HIDDEN;
int sf_text_rewrite(uint64_t lo, uint64_t hi, int def, void (*write)(void *), void *arg) SF_HIDDEN;

/* ---- switch.c (record --paused, sftrace resume / pause) ---- */
void sf_switch_refuse_left(void) SF_HIDDEN; /* the writer has left: a request answered refused */
/* 1 while tracing is off: no sled patched, no heap event recorded. */
extern uint32_t sf_tracing_off SF_HIDDEN;
void sf_switch_config(void) SF_HIDDEN;      /* SFTRACE_PAUSED: start paused, serve requests */
int sf_switch_enabled(void) SF_HIDDEN;
void sf_switch_start(void) SF_HIDDEN;       /* with the writer thread: the "started paused" line */
/* On the writer: its table its own (1) or not (0): the control page made there. */
void sf_switch_writer_table(int own) SF_HIDDEN;
/* The control page's futex word and its value now (NULL: no page). */
uint32_t *sf_switch_wait_word(uint32_t *val) SF_HIDDEN;
void sf_switch_service(void) SF_HIDDEN;     /* writer thread: switches, logs, answers */
void sf_switch_log_created(void) SF_HIDDEN; /* a new log (lock held): the last switch, if any */
void sf_switch_after_fork_child(void) SF_HIDDEN;

/* ---- loader_hook.c ---- */
int sf_loader_hook_install(void) SF_HIDDEN; /* 0 ok; reports why not */
void sf_loader_event(void) SF_HIDDEN;       /* called by arch/<arch>/loader_entry.S */

/* ---- calib.c (the tracer's own cost per call, for net times) ---- */
/* Per traced call, in 1/256 of the event clock's unit; 0: not measured.
 * Written into every log's header (SF_HDR_COST). */
extern uint64_t sf_cost_parent SF_HIDDEN, sf_cost_child SF_HIDDEN;
/* The rounds' spread: the lowest and highest kept total per call, same
 * unit (SF_HDR's cost_spread); 0 and 0: not measured. */
extern uint64_t sf_cost_lo SF_HIDDEN, sf_cost_hi SF_HIDDEN;
void sf_calib_warm(void) SF_HIDDEN;    /* a thread's first event, signals blocked (buffer.c) */
void sf_calib_measure(void) SF_HIDDEN; /* once, before the first patch (at start; --paused: the first resume) */
void sf_calib_remeasure(void) SF_HIDDEN; /* at exit: widens the spread (cost_spread) with the end's rounds */

/* ---- clock.c ---- */
void sf_clock_init(void) SF_HIDDEN;
uint64_t sf_mono_ns(void) SF_HIDDEN;
uint64_t sf_now_raw(void) SF_HIDDEN; /* raw counter or monotonic ns, per sf_config.clock */

/* ---- section.c ---- */
/* fn(arg) with every signal blocked, on the thread's section stack
 * (in place under valgrind, inside another section, or without one). */
void sf_masked_run(void (*fn)(void *), void *arg) SF_HIDDEN;
void sf_section_stack_free(void) SF_HIDDEN; /* the thread's exit hook */
/* arch/<arch>/section.S: fn(arg) with the stack pointer at top */
void sf_arch_call_on(void (*fn)(void *), void *arg, uint64_t top) SF_HIDDEN;

/* ---- buffer.c ---- */
/* The calling thread's state (struct sf_thread above). */
extern __thread struct sf_thread sf_self __attribute__((tls_model("initial-exec"))) SF_HIDDEN;
/* The code a longjmp or exception landing runs, gathered on as few pages
 * as the linker allows (ld groups .text.hot.* of every object): a
 * thread's first landing runs cold, and each page of code it reaches is
 * an iTLB miss, a two-level page walk in a VM (docs/DESIGN.md,
 * Unwinding, "What a landing costs"). */
#define SF_LANDING_TEXT __attribute__((section(".text.hot.sf_landing")))
/* Called by the trampolines (all registers saved) when the fast path cannot
 * store: first event of a thread, buffer full, or monotonic-clock mode
 * (time == 0 then). claimed: the record the fast path claimed, 0 if none. */
void sf_slow_event_at(uint64_t time, uint32_t func_id, uint32_t kind, uint64_t claimed) SF_HIDDEN;
/* The x86-64 trampolines' slow path: frame is their frame pointer (trampoline.S, sf_slow_common). */
struct sf_event *sf_slow_event_tramp(uint64_t time, uint32_t func_id, uint32_t kind, uint64_t claimed, const uint64_t *frame) SF_HIDDEN;
/* The thread's last longjmp or exception landing: its batch number and
 * cursor then (unwind.c notes it, buffer.c reads it at a hand-off). A
 * record claimed before a landing and still unfilled at the hand-off is
 * presumed abandoned (docs/DESIGN.md, "Signal handlers that fill the
 * buffer"). set: 0 until the thread's first landing in its current slot
 * life. */
struct sf_landing_mark {
	uint64_t at;
	uint32_t seq;
	uint32_t set;
};
extern __thread struct sf_landing_mark sf_landing_mark __attribute__((tls_model("initial-exec"))) SF_HIDDEN;
static inline void sf_buffer_note_landing(const struct sf_thread *t)
{
	sf_landing_mark.seq = t->seq;
	sf_landing_mark.at = t->cursor;
	sf_landing_mark.set = 1;
}
void sf_record_ext(uint32_t kind, uint64_t a, uint64_t b) SF_HIDDEN;
/* An event without payload, stamped with a time read before (sf_now_raw),
 * from C (async-signal-safe). */
void sf_record_event_at(uint32_t kind, uint32_t id, uint64_t time) SF_HIDDEN;
/* An event with sf_event_payload_records(kind) payload records and the
 * word's id field `id`, stored at `time` (or now, for a thread's first
 * event): the slow path of alloc.c, which blocks signals around it. */
void sf_record_payload(uint32_t id, uint32_t kind, uint64_t time, const uint64_t *payload) SF_HIDDEN;
/* The same at `time` even for a thread's first event (signals blocked). */
void sf_record_payload_at(uint32_t id, uint32_t kind, uint64_t time, const uint64_t *payload) SF_HIDDEN;
/* alloc.c: heap events kept from before the first patched sled go into
 * the log, once a sled is patched (the loader hook, before the new
 * object's constructors). */
void sf_heap_early_flush(void) SF_HIDDEN;
void sf_heap_early_after_fork_child(void) SF_HIDDEN;
/* The mapping of /proc/self/maps holding addr (stack.c): 1 if found, its
 * bounds in *lo, *hi; *grows for the main thread's [stack]. */
/* maps.c: /proc/self/maps line by line, in address order. line() is
 * called for each mapping until it returns nonzero; that value is
 * returned, 0 at the end, -1 if the file cannot be opened. high: the
 * descriptor kept high (sf_fd_brief), as where the program runs on. */
struct sf_map {
	uint64_t lo, hi;
	int prot;     /* PROT_READ | PROT_WRITE | PROT_EXEC as listed */
	int is_stack; /* the main thread's "[stack]" */
};
int sf_maps_walk(int high, int (*line)(const struct sf_map *, void *), void *arg) SF_HIDDEN;
int sf_mapping_of(uint64_t addr, uint64_t *lo, uint64_t *hi, int *grows) SF_HIDDEN;
/* "/proc/self/map_files/LO-HI", the link to the file mapped there
 * (logfile.c). */
void sf_map_files_path(char *out, size_t cap, uint64_t lo, uint64_t hi) SF_HIDDEN;
#ifdef SF_ARCH_SHADOW
/* The thread's stack range is sf_self.stack (one TLS base with the rest). */
/* 1 if addr lies on the calling thread's own stack. */
int sf_stack_own_holds(uint64_t addr) SF_HIDDEN;
int sf_on_this_stack_slow(uint64_t addr, uint64_t cur) SF_HIDDEN;
/* The signal stack the thread runs on at frame cur: [*lo, *hi), or 0 if
 * it runs on none (stack.c: cached, without a system call). */
int sf_stack_alt(uint64_t cur, uint64_t *lo, uint64_t *hi) SF_HIDDEN;
/* The bounds [lo, hi) of the stack holding addr (the thread's own or
 * another it runs on, from maps): 1 if known. */
int sf_stack_of(uint64_t addr, uint64_t *lo, uint64_t *hi) SF_HIDDEN;
/* makecontext's stub (arch/<arch>/makecontext.S): notes the context's
 * stack (stack.c) and returns the makecontext to go on to. */
struct ucontext_t;
void *sf_makecontext_route(const struct ucontext_t *ucp) SF_HIDDEN;
void sf_stack_after_fork_child(void) SF_HIDDEN; /* the table of contexts' lock */

/* 1 if addr lies on the stack the thread runs on now, at or above the
 * caller's frame: mapped. */
static inline __attribute__((always_inline)) int sf_on_this_stack(uint64_t addr)
{
	uint64_t cur = (uint64_t)__builtin_frame_address(0);
	if (__builtin_expect(cur >= sf_self.stack.lo && cur < sf_self.stack.hi, 1))
		return addr >= cur && addr < sf_self.stack.hi;
	return sf_on_this_stack_slow(addr, cur);
}
#endif
/* An ARGS event (args.c) with its n payload records, stamped now: one
 * claim while the slot has room, else with signals blocked. */
void sf_record_args(const uint64_t *payload, uint32_t n) SF_HIDDEN;
/* args.c's fast path claimed [at, ...) past the slot's limit: the part
 * inside the slot becomes a filler (zero: sf_self.heap_zero before the claim). */
void sf_args_cut_claim(uint64_t at, uint64_t time, uint64_t zero) SF_HIDDEN;
void sf_buffer_init(void) SF_HIDDEN;
void sf_buffer_after_fork_child(void) SF_HIDDEN;
uint32_t sf_buffer_pid(void) SF_HIDDEN;         /* buffer.c: the pid set up at start / fork */
void sf_buffer_process_exit_stopped(void) SF_HIDDEN; /* exit after a seccomp stop: counts only, no call */
void sf_fork_child_stopped(void) SF_HIDDEN;     /* buffer.c: a child forked after a seccomp stop, no call */
void sf_writer_forget_stopped(void) SF_HIDDEN;  /* writer.c: its memory-only part */
void sf_log_finish_stopped(void) SF_HIDDEN;      /* logfile.c: the same for the header's end state */
uint32_t sf_buffer_vm_children(void) SF_HIDDEN; /* buffer.c: threads of clone(CLONE_VM) children not recorded */
void sf_buffer_exit_hook_arm(void) SF_HIDDEN; /* the thread's exit hook runs (its shadow array) */
void sf_buffer_process_exit(void) SF_HIDDEN; /* counts what slotless threads dropped */
/* A resume (switch.c, before any sled is patched): every thread's window
 * depth back to 0. Windows open at the pause were closed there (readers
 * close frames in flight at a pause); those that returned while paused
 * never counted out. With a shadow stack, every listed thread's next
 * event also takes the slow path, where it drops the entries pushed
 * before the pause (sf_shadow_resync). */
void sf_buffer_resumed(void) SF_HIDDEN;
/* The calling thread, at its first slow-path event or landing after a
 * resume: drops every shadow-stack entry from before it, but the one its
 * own entry event (kind SF_EV_ENTRY) just pushed. One compare otherwise. */
void sf_shadow_resync(struct sf_thread *t, uint32_t kind) SF_HIDDEN;
extern uint32_t sf_resume_epoch SF_HIDDEN; /* bumped at each resume: a thread's shadow_epoch behind it resyncs */
/* record --ring snapshots (snapshot.c drives them). The calling thread's
 * ring is frozen now: the trigger's thread, at its trigger. */
void sf_buffer_freeze_self(void) SF_HIDDEN;
/* Every ring record (acquire); walk with next_all. */
struct sf_ring *sf_rings(void) SF_HIDDEN;
/* Ring r's window for freeze `epoch`: its slots' images, oldest first,
 * copied to copies (r->cap slot images); returns how many. 0 for a
 * thread that began after the freeze. Writer thread only. */
uint32_t sf_ring_capture(struct sf_ring *r, uint32_t epoch, unsigned char *copies) SF_HIDDEN;
/* The freeze's snapshot is written: rings of threads that exited
 * meanwhile are freed, and the freeze closes (sf_freeze_open = 0). */
void sf_rings_thaw(uint32_t epoch) SF_HIDDEN;

/* ---- suppress.c: this thread's events are dropped in between ---- */
struct sf_suppress_state {
	uint64_t cursor, limit, window_depth, base;
	/* sf_suppressed is 0 or 1: one bit, so that the two static TLS copies
	 * (hooks.c's vfork, unwind.c's walk) are 8 bytes smaller each. */
	uint64_t shadow_depth : 63, was : 1;
};
/* Nonzero while suppressed; 1 plus the events the slow path dropped since
 * sf_suppress_begin (saturating): a CLONE_VM | CLONE_VFORK child's calls
 * land there and its parent reads how many (hooks.c). */
extern __thread uint32_t sf_suppressed __attribute__((tls_model("initial-exec"))) SF_HIDDEN;
void sf_suppress_begin(struct sf_suppress_state *st) SF_HIDDEN;
void sf_suppress_end(const struct sf_suppress_state *st) SF_HIDDEN;

/* ---- stack.c ---- */
void sf_stack_alt_forget(void) SF_HIDDEN; /* the program set its signal stack (sigaltstack, syscall()) */
void sf_stack_init(void) SF_HIDDEN; /* at start-up, on the main thread: its stack's bounds */

/* ---- unwind.c ---- */
/* libgcc_s's unwinder for the fallback walk, if the program has it loaded:
 * at start and at each loader event (never loads it). */
void sf_unwind_init(void) SF_HIDDEN;
void sf_unwind_resolve(void) SF_HIDDEN; /* the real longjmp family, once */
void sf_unwind_thread_exit(void) SF_HIDDEN; /* closes the frames still open at a thread's end */
void sf_landing_warm(void) SF_HIDDEN; /* asks the CPU for a landing's lines (thread_start) */
void sf_shadow_ov_alloc(void) SF_HIDDEN; /* maps the shadow stack's entries past the array (trampoline.S) */
void sf_shadow_blk_alloc(void) SF_HIDDEN; /* maps the thread's array at its first push (trampoline.S) */
void sf_shadow_ov_free(void) SF_HIDDEN;  /* unmaps both at the thread's end */
#ifdef SF_ARCH_SHADOW
/* Zeros: the array of a thread without one (struct sf_thread, shadow). */
extern uint64_t sf_shadow_none[SF_SHADOW_CAP + 1] SF_HIDDEN;
extern uint32_t sf_shadow_lost SF_HIDDEN; /* threads whose array could not be mapped */
#endif

/* ---- elf_sym.c: dlsym without dlsym (no allocation: a miss allocates) ---- */
/* name's default-version definition in the object at base (dlpi_addr,
 * dlpi_phdr, dlpi_phnum), from its dynamic symbol table; NULL if none. */
void *sf_sym_in(uintptr_t base, const void *phdr, int phnum, const char *name) SF_HIDDEN;
/* The first definition in an object loaded after the one holding self
 * (RTLD_NEXT's order, whatever the object's scope). */
void *sf_sym_next(const char *name, const void *self) SF_HIDDEN;
/* The definition in the first loaded object whose file name starts with lib. */
void *sf_sym_lib(const char *lib, const char *name) SF_HIDDEN;
/* The same, with the definition's size (st_size; 0 when not found). */
void *sf_sym_lib_sized(const char *lib, const char *name, size_t *size) SF_HIDDEN;
/* dlsym(RTLD_NEXT, name) and dlvsym(RTLD_NEXT, name, ver) without libdl,
 * which would change the program's dlerror state; libc's definition when
 * no object after the runtime has one. The runtime's only way to its next
 * definitions. */
void *sf_real(const char *name) SF_HIDDEN;
void *sf_real_v(const char *name, const char *ver) SF_HIDDEN;
/* dlvsym(RTLD_DEFAULT, name, ver) the same way. */
void *sf_sym_any_v(const char *name, const char *ver) SF_HIDDEN;
/* What a program's reference to name@ver would bind to were the tracer's
 * objects (libsftrace.so, libsftrace-alloc.so) not loaded. */
void *sf_sym_untraced_v(const char *name, const char *ver) SF_HIDDEN;
/* 1 and the name and version (NULL: none) of the function a tracer object
 * exports at exactly addr; 0 for any other address. */
int sf_tracer_symbol_at(const void *addr, const char **name, const char **ver) SF_HIDDEN;
/* 1 if addr lies in one of the tracer's objects. */
int sf_in_tracer_object(const void *addr) SF_HIDDEN;
/* 1 if a tracer object defines name of version ver (NULL: the default
 * one): one pass over the loaded objects, a hash lookup in the tracer's. */
int sf_tracer_defines(const char *name, const char *ver) SF_HIDDEN;

/* ---- alloc.c ---- */
/* 1 if a setup-ABI allocation event repeats the interposed one just recorded. */
int sf_heap_setup_dup(uint32_t kind, void *ptr) SF_HIDDEN;

/* ---- writer.c ---- */
void sf_writer_resolve(void) SF_HIDDEN;              /* at start-up: glibc's thread count */
/* own_tls.c: thread storage for a thread glibc does not know (the writer) */
struct sf_own_tls {
	void *tp;      /* the clone's CLONE_SETTLS value */
	uint32_t *tid; /* its CLONE_PARENT_SETTID / CLONE_CHILD_CLEARTID word */
	void *mem;
	size_t len;
};
void sf_own_tls_resolve(void) SF_HIDDEN;
int sf_own_tls_make(struct sf_own_tls *t) SF_HIDDEN;
void sf_own_tls_free(struct sf_own_tls *t) SF_HIDDEN;
int sf_writer_start(const cpu_set_t *cpus) SF_HIDDEN; /* at start-up; -1: hand-offs stay synchronous */
int sf_writer_active(void) SF_HIDDEN;
int sf_writer_left(void) SF_HIDDEN;
void sf_writer_offer_settle(void) SF_HIDDEN;
void sf_writer_offer_poll(void) SF_HIDDEN;   /* buffer.c, a ring's slot full: the offer taken if one waits */ /* hooks.c: a thread ending takes the writer's offer first */
void sf_log_reopen_now(void) SF_HIDDEN;      /* logfile.c: the log in the program's table now, if it can be */      /* left after the leader (hand_over): snapshots and switches without it */
int sf_writer_offer_take(void) SF_HIDDEN; /* the leaving writer's log descriptor, copied here; -1: none */
int sf_thread_count(void) SF_HIDDEN; /* ns.c */
void sf_wait_alone(void) SF_HIDDEN;   /* ns.c: the writer out of the thread group (after sf_writer_stop) */
int sf_last_thread_status(int own, int *status, uint32_t writer_tid) SF_HIDDEN; /* ns.c: SYS_exit here ends the process */
int sf_writer_on_valgrind(void) SF_HIDDEN; /* writer.c: RUNNING_ON_VALGRIND, from the writer's start */
int sf_running_on_valgrind(void) SF_HIDDEN; /* writer.c: RUNNING_ON_VALGRIND, now */
uint32_t sf_writer_here_at_exit(void) SF_HIDDEN; /* writer.c: the writer's tid if it outlasts a SYS_exit here */
long sf_rlimit_syscall(long nr, const long *a) SF_HIDDEN;
void sf_strict_begins(void) SF_HIDDEN;                     /* rt_libc.c: SECCOMP_MODE_STRICT next */
/* sandbox.c: seccomp filters the program installs (prctl, syscall()) */
void sf_seccomp_installing(const void *prog, unsigned long flags) SF_HIDDEN; /* before the install */
void sf_seccomp_undo(void) SF_HIDDEN;                                         /* it failed */
int sf_seccomp_allows(long nr, long a0, long a1, long a2, long a3, long a4, long a5) SF_HIDDEN;
void sf_thread_name(char *name) SF_HIDDEN; /* prctl(PR_GET_NAME) unless a filter refuses it */
int sf_seccomp_exec_untraced(void) SF_HIDDEN; /* an exec now: its runtime would meet a refusal */
int sf_seccomp_start_unknown(void) SF_HIDDEN;  /* filters at start the tracer knows nothing of */
long sf_seccomp_known_filters(void) SF_HIDDEN; /* for SFTRACE_SECCOMP_FILTERS in a child, -1: as it came */
int sf_seccomp_refuses_writer(void) SF_HIDDEN; /* a writer made now would be killed */
int sf_seccomp_refuses_writer_start(void) SF_HIDDEN; /* a writer made now: its start refused */
int sf_seccomp_refuses_writer_stop(void) SF_HIDDEN;  /* a program thread may not stop the writer */
int sf_seccomp_refuses_handover(void) SF_HIDDEN;     /* the writer may not hand the log over */
int sf_seccomp_refuses_scan(void) SF_HIDDEN;         /* a dlopen's object may not be scanned */
int sf_seccomp_refuses_move(void) SF_HIDDEN;         /* the log's move at a dup2 onto it */
int sf_seccomp_refuses_save(void) SF_HIDDEN;
void sf_yield(void) SF_HIDDEN;       /* rt_libc.c: sched_yield, or a futex nap where refused */
void sf_nap(long ns) SF_HIDDEN;      /* rt_libc.c: nanosleep, or a futex wait where refused */
long sf_futex_wait(const uint32_t *w, uint32_t seen, long ns) SF_HIDDEN; /* rt_libc.c: private futex, ns 0: unbounded */
void sf_futex_wake(const uint32_t *w, int n) SF_HIDDEN;
void sf_lock_take(int *lock, int serve) SF_HIDDEN; /* lock.c: futex mutex; serve: the writer serves while it waits */
void sf_lock_give(int *lock) SF_HIDDEN;
extern int sf_sandbox_no_yield SF_HIDDEN;     /* sandbox.c: sched_yield refused */
extern int sf_sandbox_no_nanosleep SF_HIDDEN; /* sandbox.c: nanosleep refused */
extern int sf_sandbox_no_clock SF_HIDDEN;
void sf_clock_line_fix(void) SF_HIDDEN; /* clock.c: at such an install, while the clock may be read */     /* sandbox.c: clock_gettime refused: the counter's line */
void sf_log_ctor_brief_end(void) SF_HIDDEN; /* logfile.c: step 2, a constructor's log held again */
int sf_services_started(void) SF_HIDDEN;   /* init.c: step 2 has come */
int sf_seccomp_refuses_vfork_wait(void) SF_HIDDEN; /* hooks.c's wait for a CLONE_VFORK child */         /* a deleted executable's copy */
int sf_seccomp_allows_fd_call(long nr, long a1, long a2) SF_HIDDEN; /* argument 0 a descriptor */
void sf_writer_leave_now(void) SF_HIDDEN;      /* writer.c: before a TSYNC filter that refuses its calls */
/* A filter refuses the exit path's own checks (the executable's file
 * looked at again, a note): they are left out (logfile.c, notes.c). */
extern int sf_sandbox_limited SF_HIDDEN;
extern int sf_sandbox_no_notes SF_HIDDEN; /* a filter refuses a note's calls (notes.c) */
extern int sf_sandbox_no_cli SF_HIDDEN;   /* a filter refuses sftrace filter's child (filter.c) */
extern int sf_sandbox_no_vm_readv SF_HIDDEN; /* a filter refuses process_vm_readv (args.c's string reads) */
extern int sf_sandbox_no_populate SF_HIDDEN; /* a filter refuses madvise(MADV_POPULATE_WRITE) (logfile.c) */
extern int sf_sandbox_stopped SF_HIDDEN; /* tracing stopped for a filter (log_trim: no request either) */
void sf_log_seccomp_stopped(long nr) SF_HIDDEN; /* logfile.c: the header says so */
void sf_switch_off_for_good(void) SF_HIDDEN;               /* switch.c: every sled unpatched, no resume */
extern __thread int sf_strict_thread SF_HIDDEN;  /* ns.c: setrlimit, prlimit64 */
int sf_program_gone(int *status) SF_HIDDEN;                /* ns.c: only the writer and an exited leader left */
int sf_leader_status(int *status) SF_HIDDEN;                /* ns.c: the exiting leader's code in *status */
int sf_log_dir_open(void) SF_HIDDEN;                         /* on the writer: the log's directory, O_PATH; -1 */
int sf_log_writer_hands_over(void) SF_HIDDEN;                /* the writer's number of the log, -1: none */
int sf_log_keeper_reopens(void) SF_HIDDEN; /* logfile.c: on the writer: record's keeper gives the log to this pid again */
int sf_log_reopenable(void) SF_HIDDEN;                    /* logfile.c: on the writer: a program thread could open the log again */            /* logfile.c: on the writer, leaving: the program's table again */
void sf_watch_quick_exit(void) SF_HIDDEN; /* hooks.c */
void sf_writer_submit(struct sf_slot *s) SF_HIDDEN;
void sf_writer_wait_ready(struct sf_slot *s) SF_HIDDEN;
void sf_writer_drain(void) SF_HIDDEN;          /* process exit: finish the queue */
void sf_writer_after_fork_child(void) SF_HIDDEN;
void sf_writer_kick(void) SF_HIDDEN;           /* wakes the writer thread; async-signal-safe */
int sf_writer_stop(void) SF_HIDDEN;            /* ends it, the queue written: 1 if there was one */
void sf_writer_restart(void) SF_HIDDEN;        /* after sf_writer_stop */
/* Descriptor uses on the writer thread (its table is its own: logfile.c). */
long sf_writer_call(long (*fn)(void *), void *arg) SF_HIDDEN; /* fn(arg) run there; blocks signals meanwhile */
void sf_writer_serve(void) SF_HIDDEN;          /* on the writer: run a pending request */
int sf_writer_on_thread(void) SF_HIDDEN;
int sf_writer_defer_message(const char *buf, size_t n) SF_HIDDEN; /* notes.c: 1 if the requester prints it */
void sf_messages_print(const char *buf, size_t n) SF_HIDDEN;      /* on stderr, if it still is the start's */
void sf_writer_set_private(int on) SF_HIDDEN;
int sf_writer_private(void) SF_HIDDEN;         /* the writer's table is its own */
int sf_writer_table_copied(void) SF_HIDDEN;    /* on the writer: made without CLONE_FILES (its table a copy) */
uint32_t sf_writer_tid(void) SF_HIDDEN;
void sf_writer_open_proc(int keeper) SF_HIDDEN; /* on the writer or keeper, its table its own: /proc/self held there */
int sf_writer_proc_dir(void) SF_HIDDEN;        /* that directory on the thread that holds it, else -1 */
long sf_proc_open(const char *path, int flags) SF_HIDDEN; /* ns.c: a /proc/self/... path, through that directory */
int sf_program_threads_share_net(void) SF_HIDDEN; /* ns.c: every program thread in the writer's network namespace */
int sf_program_threads_like_writer(int *no_room) SF_HIDDEN; /* ns.c: every program thread could reopen the log as the writer */
/* writer.c: a clone(CLONE_FILES) child's keeper thread (its descriptor uses, in a table of its own) */
int sf_keeper_start(void) SF_HIDDEN;    /* in the child, first: -1 if it cannot be made */
int sf_keeper_alive(void) SF_HIDDEN;
uint32_t sf_keeper_tid(void) SF_HIDDEN;
int sf_keeper_start_keeping(int fd) SF_HIDDEN;
void sf_keeper_defer(void) SF_HIDDEN;
void sf_keeper_make_due(void) SF_HIDDEN;
void sf_keeper_defer_cancel(void) SF_HIDDEN;
int sf_seccomp_refuses_keeper(void) SF_HIDDEN;
void sf_log_keeper_left(int fd) SF_HIDDEN;
int sf_log_files_shared(void) SF_HIDDEN;
int sf_services_thread_wanted(void) SF_HIDDEN;
int sf_runtime_thread(void) SF_HIDDEN;  /* a writer or a keeper runs */
void sf_cred_followed(long nr, const long *a, long r) SF_HIDDEN; /* hooks.c: after a call that may change credentials */
void sf_keeper_follow(long nr, long a0, long a1, long a2, long a3, long a4) SF_HIDDEN; /* after a credential change (hooks.c) */
void sf_log_keeper(int on) SF_HIDDEN;   /* logfile.c: the log's descriptor is the keeper's (on) */
int sf_keeper_stop(void) SF_HIDDEN;     /* ns.c: the keeper ended, its log descriptor copied here (or -1) */
/* A log made before the writer can be (a preinit hook's or a library
 * constructor's event): the keeper holds it until step 2 (writer.c). */
void sf_keeper_early_allow(int on) SF_HIDDEN; /* init.c: from start-up to step 2, in the first process */
void sf_keeper_make_early(void) SF_HIDDEN;    /* logfile.c: at the log's creation */
int sf_keeper_early_end(void) SF_HIDDEN;      /* -2: no early keeper; else sf_keeper_stop's */
void sf_log_early_keeper_end(void) SF_HIDDEN; /* init.c, step 2, before the writer: the log in the program's table */
void sf_keeper_resume(int fd) SF_HIDDEN; /* ns.c: a new keeper, keeping fd */
int sf_log_keeper_fd(void) SF_HIDDEN;   /* the log's number in the keeper's table */
void sf_log_keeper_again(int fd) SF_HIDDEN; /* a new keeper holds fd (-1: it opens the log again) */
void sf_log_writer_started(void) SF_HIDDEN;    /* writer.c: move the log's descriptor into its table */
void sf_log_writer_leaving(void) SF_HIDDEN;
int sf_log_writer_begins(void) SF_HIDDEN;      /* writer.c, on the writer: its table its own (1) */
int sf_log_writer_before_start(void) SF_HIDDEN; /* writer.c: no log yet, so made by the writer from the start */
void sf_log_writer_failed(void) SF_HIDDEN;
void sf_log_writer_refill(void) SF_HIDDEN;     /* writer.c, on the writer: regions mapped ahead (logfile.c) */     /* writer.c: pthread_create failed after that */
#define SF_WRITER_REFUSED (-4000L)             /* sf_writer_call: no writer to run it: use the program's table */    /* writer.c: and back, before it ends */

/* ---- ns.c: namespace changes that need a single-threaded process ---- */
/* unshare or setns (nr), as the system call returns it (-errno). */
long sf_ns_syscall(long nr, long a0, long a1) SF_HIDDEN;

/* ---- trim.c ---- */
/* Record-time trimming at hand-off: copies records [0, n) of ev to out
 * without the entry/exit pairs the reader's exact trimming would drop for
 * certain (docs/DESIGN.md "Record-time trimming"); returns the records
 * kept. stack: n words of workspace. */
size_t sf_trim_batch(const struct sf_event *ev, size_t n, uint64_t base, struct sf_event *out,
		     uint32_t *stack) SF_HIDDEN;
static inline int sf_trim_enabled(void) { return sf_config.trim_min_ns || sf_config.trim_max_depth; }

/* ---- batch_scan.c (the one file built with vector registers) ---- */
/* How many of the n records have a zero word (an unfilled record, or a
 * payload record with a zero upper half). */
size_t sf_batch_zero_words(const struct sf_event *ev, size_t n) SF_HIDDEN;

/* ---- encode.c ---- */
/* Writes records [0, n) of slot s as one batch chunk (packed, or raw per
 * sf_config.encoding or when packing does not pay); c holds the batch's
 * identity (serial, tid, seq, base, name). Called by whoever owns the
 * slot's batch: the writer thread, or the thread itself with signals
 * blocked. */
void sf_write_batch_chunk(struct sf_chunk *c, struct sf_slot *s, size_t n) SF_HIDDEN;

/* ---- logfile.c ---- */
/* A slot: a page-aligned region of the log file mapped MAP_SHARED, reused by
 * one thread at a time. */
struct sf_slot {
	struct sf_chunk *hdr; /* mapping of the whole slot chunk */
	uint64_t file_offset;
	struct sf_slot *next_free;
	struct sf_slot *next_all;    /* every slot of the log (fork child: unmap them) */
	struct sf_slot *next_queued; /* writer queue link */
	uint32_t state;              /* enum sf_slot_state (futex word) */
	uint32_t nevents;            /* queued: events to write */
	struct sf_pack_area *pack;   /* encode.c's workspace, mapped on first use */
};

enum sf_slot_state {
	SF_SLOT_READY = 0,  /* empty, cleared, owned by its thread */
	SF_SLOT_QUEUED = 1, /* full, waiting for the writer thread */
};
#define SF_SLOT_EVENTS ((SF_SLOT_SIZE - sizeof(struct sf_chunk)) / sizeof(struct sf_event))

/* The lock guards log creation, slot allocation and the object table; all
 * signals are blocked while it is held. */
void sf_log_lock_sig(sigset_t *old) SF_HIDDEN;
void sf_log_unlock_sig(const sigset_t *old) SF_HIDDEN;
/* What a new log must hold before its first batch (init.c: the OBJECT
 * chunks and patch statistics); called with the lock held. */
void sf_log_on_create(void (*fn)(void)) SF_HIDDEN;
int sf_log_ready(void) SF_HIDDEN;
void sf_log_write_chunk(struct sf_chunk *hdr, const void *payload, size_t payload_len,
			uint64_t events_for_drop) SF_HIDDEN;
struct sf_slot *sf_log_slot_get(void) SF_HIDDEN;
/* Ring mode: makes a slot that still holds an old batch free in the file
 * and clears it, so a reader never sees a half-overwritten batch. */
void sf_log_slot_invalidate(struct sf_slot *s) SF_HIDDEN;
/* DIR/STEM.snap.<pid>.<n>EXT for the configured output DIR/STEM.EXT. */
void sf_log_snapshot_path(char *out, size_t cap, uint32_t n) SF_HIDDEN;
/* The whole log mapped read-only (snapshot.c); NULL if there is none. */
void *sf_log_map_readonly(uint64_t *size) SF_HIDDEN;
void sf_log_slot_put(struct sf_slot *slot) SF_HIDDEN;
void sf_log_slots_put(struct sf_slot *first, struct sf_slot *last) SF_HIDDEN;
void sf_log_drop(uint64_t events) SF_HIDDEN;
int sf_log_capped(void) SF_HIDDEN;             /* record --max-size was reached: stop recording */
void sf_log_calibrate(void) SF_HIDDEN;         /* refresh last (tsc, mono) pair in the header */
void sf_log_thread_started(void) SF_HIDDEN;
void sf_log_object_logged(void) SF_HIDDEN;     /* counts an OBJECT chunk in the header */
void sf_log_finish(void) SF_HIDDEN;            /* process exit */
void sf_log_exec_mark(int on) SF_HIDDEN; /* the exec's mark in the exit state; 0 takes it back */
void sf_log_exit_called(int status) SF_HIDDEN; /* _exit(status): the code in the header */
void sf_exit_group_now(int status) SF_HIDDEN __attribute__((noreturn)); /* hooks.c: after sf_image_ends */
void sf_log_watch_exit(void) SF_HIDDEN;	      /* at start: exit(status) puts the code in the header */
void sf_log_update_patch_stats(uint64_t patch_ns, uint32_t sleds_patched) SF_HIDDEN;
/* files_shared: the child shares the descriptor table (CLONE_FILES). */
void sf_log_after_fork_child(int files_shared) SF_HIDDEN;
/* The log now, if this process has sleds and none yet (before a
 * credential change: hooks.c). */
void sf_log_create_early(void) SF_HIDDEN;
/* A clone(CLONE_FILES) child's function returned: its descriptor leaves
 * the shared table. */
void sf_log_child_return(void) SF_HIDDEN;
void sf_log_image_ends(void) SF_HIDDEN; /* exec, _exit: a CLONE_FILES child's descriptor closed */
struct sf_header *sf_log_header(void) SF_HIDDEN; /* the mapped header, NULL before the log exists */
void sf_log_add_features(uint64_t bits) SF_HIDDEN; /* SF_FEAT_* bits into the header, now or at its creation */
/* Clears n slot records front to back: a crashed process's reader stops at
 * the first zero word, so the slot reads as empty from the first store on. */
void sf_zero_events(struct sf_event *ev, size_t n) SF_HIDDEN;
/* The write faults of n bytes at p taken now, not on the event path (logfile.c). */
void sf_prefault_write(void *p, size_t n) SF_HIDDEN;

/* ---- budget.c (record --max-size: one byte budget for the whole run) ---- */
void sf_budget_init(void) SF_HIDDEN;
int sf_budget_take(uint64_t bytes) SF_HIDDEN;   /* 0: claimed; -1: over the cap (now or before) */
int sf_budget_capped(void) SF_HIDDEN;
uint64_t sf_budget_cap(void) SF_HIDDEN;      /* the --max-size cap in bytes; 0: none */
uint64_t sf_budget_room(void) SF_HIDDEN;     /* bytes the cap has left; UINT64_MAX: none */
void sf_log_note_capped(void) SF_HIDDEN;     /* the cap was reached: say so in the header, if any */
void sf_log_note_options(void) SF_HIDDEN;    /* a new log: the filter and cap in its header */
void sf_filter_describe(char *out, size_t cap) SF_HIDDEN; /* "-f PATH", "--filter-regex RE"; "" none */
void sf_filter_count_selected(uint32_t funcs) SF_HIDDEN; /* an object's functions the filter selected */
void sf_budget_drop_nolog(uint64_t events) SF_HIDDEN;

/* ---- snapshot.c (record --ring: snapshots written by the writer thread) ---- */
void sf_snapshot_init(void) SF_HIDDEN;          /* installs the ring signal's handler */
/* The freeze open now (its epoch number; 0: none), and the last one opened.
 * A thread reads sf_freeze_open at each slot hand-off. */
extern uint32_t sf_freeze_open SF_HIDDEN, sf_freeze_last SF_HIDDEN;
void sf_snapshot_request(uint32_t reason) SF_HIDDEN; /* the ring signal; async-signal-safe */
/* A trigger fired on this thread at `time` (its event's): freezes every
 * ring at that time, this thread's at once. slow_ns: reason SF_SNAP_SLOW's
 * call duration. */
void sf_snapshot_trigger(uint32_t reason, uint32_t func_id, uint64_t time, uint64_t slow_ns) SF_HIDDEN;
void sf_snapshot_service(void) SF_HIDDEN;       /* writer thread: writes what was requested */
/* The log header's word `sftrace snapshot` counts its requests in (a
 * shared futex word) and its value now; NULL without a ring log. */
uint32_t *sf_snapshot_wait_word(uint32_t *val) SF_HIDDEN;
/* The writer has left: a request of sftrace snapshot's taken on this
 * thread (a slot hand-off), 1 if a freeze was opened for it. */
int sf_snapshot_take_asked(void) SF_HIDDEN;
int sf_snapshot_pending(void) SF_HIDDEN;        /* asked for and not written yet (exit waits) */
/* The process image goes away now (exec, _exit, abort: exec_env.c,
 * hooks.c): waits for a snapshot asked for and not written yet. */
void sf_snapshot_adopt_dir(int fd) SF_HIDDEN; /* under the gate: the log's directory, from the leaving writer */
void sf_snapshot_serve_left(void) SF_HIDDEN; /* the writer has left: the open freeze written on this thread */
void sf_snapshot_settle(void) SF_HIDDEN;

/* ---- arch/<arch>/trampoline.S ---- */
#define SF_TRAMPS(X) \
	X(entry) X(exit) X(tail) X(entry_mono) X(exit_mono) X(tail_mono) \
	X(entry_gated) X(exit_gated) X(tail_gated) X(entry_mono_gated) X(exit_mono_gated) X(tail_mono_gated) \
	X(entry_window) X(exit_window) X(tail_window) X(entry_mono_window) X(exit_mono_window) X(tail_mono_window) \
	X(entry_args) X(exit_args) X(entry_mono_args) X(exit_mono_args) X(tail_args) X(tail_mono_args) \
	X(entry_args_gated) X(exit_args_gated) X(tail_args_gated) \
	X(entry_mono_args_gated) X(exit_mono_args_gated) X(tail_mono_args_gated) \
	X(entry_args_window) X(exit_args_window) X(tail_args_window) \
	X(entry_mono_args_window) X(exit_mono_args_window) X(tail_mono_args_window)
#define SF_DECLARE_TRAMP(n) void sf_tramp_##n(void) SF_HIDDEN;
SF_TRAMPS(SF_DECLARE_TRAMP)
#if defined(__x86_64__)
/* What a far sled's slot holds (trampoline.S, "Far sleds"). */
#define SF_DECLARE_FAR(n) void sf_tramp_##n##_far(void) SF_HIDDEN;
SF_TRAMPS(SF_DECLARE_FAR)
#endif

/* ---- arch/<arch>/clock.c ---- */
void sf_arch_clock_init(void) SF_HIDDEN;     /* probes what the slow path must save */
int sf_arch_counter_stable(void) SF_HIDDEN;  /* the counter may be the event clock */
uint64_t sf_arch_counter_hz(void) SF_HIDDEN; /* its frequency; 0: not known (fit the pairs) */

/* ---- arch/<arch>/patch.c ---- */
/* Fills target[] with what sleds of obj call for each (variant, kind),
 * given the trampolines' addresses (slots within reach, on x86-64). -1: none. */
int sf_arch_patch_targets(const struct sf_object_rt *obj, const uint64_t tramp[SF_STUB_COUNT],
			  uint64_t target[SF_STUB_COUNT]) SF_HIDDEN;
/* Patches one unpatched sled (counts it in res: patched or skipped). */
void sf_arch_patch_sled(const struct xray_sled_rt *s, const uint64_t target[SF_STUB_COUNT],
			struct sf_text_writer *w, struct sf_patch_result *res) SF_HIDDEN;
/* Unpatches one sled we patched (a pause): its first instruction only,
 * atomically; counts it in res->patched (else skipped). */
void sf_arch_unpatch_sled(const struct xray_sled_rt *s, const uint64_t target[SF_STUB_COUNT],
			  struct sf_text_writer *w, struct sf_patch_result *res) SF_HIDDEN;
/* Where the direct jump right after the tail-call sled at `sled` goes
 * (the compiler's `jmp rel32`/`jmp rel8`, or `b`); 0 for any other
 * instruction (an indirect jump). Reads only the code, within [lo, hi). */
uint64_t sf_arch_tail_target(uint64_t sled, uint64_t lo, uint64_t hi) SF_HIDDEN;
/* Whether the sled the map calls an exit sled precedes a branch, not a
 * return: a tail call (clang 14 and older label aarch64 tail-call sleds
 * exits). Reads only the code, within [lo, hi). */
int sf_arch_exit_is_tail(uint64_t sled, uint64_t lo, uint64_t hi) SF_HIDDEN;
/* Points a setup-ABI slot (setup_abi.c) at a trampoline, if this
 * architecture knows the slot's form. */
void sf_arch_point_slot(void (*slot)(void), void (*target)(void)) SF_HIDDEN;
/* enum sf_variant of the patched entry sled at function address fn, -1 if
 * there is none. Reads only the code. */
int sf_patch_entry_variant(uint64_t fn) SF_HIDDEN;
/* A slot page [lo, hi) made (x86-64's far sleds: past_scan.c tells a
 * recorded frame's return address by a call through one). */
void sf_unwind_note_stubs(uint64_t lo, uint64_t hi) SF_HIDDEN;

/* ---- got_bind.c ----
 * A stand-in for a library function, reached through the GOT slots of the
 * references bound to that library's definition, never exported. */
struct sf_bind {
	const char *name;           /* the symbol */
	const char *lib;            /* basename prefix of the library whose definition it stands in front of */
	uintptr_t (*resolver)(void); /* returns the stand-in (an IRELATIVE resolver) */
	int calls_only;             /* PLT slots only: a GOT slot (GLOB_DAT) may be an address the program compares */
};
/* Binds the references of every loaded object: at start (at_start, every
 * object relocated) and at each loader event (the objects new since the
 * last call, mapped and not yet relocated). Loader lock held or single-threaded start-up. */
void sf_bind_scan(int at_start) SF_HIDDEN;
/* unwind.c's stand-ins. */
const struct sf_bind *sf_unwind_binds(int *n) SF_HIDDEN;

/* ---- arch/<arch>/loader_hook.c, loader_entry.S ---- */
/* Makes the loader's hook function (hook) reach entry (sf_loader_entry).
 * NULL on success, else why not. */
const char *sf_arch_hook_loader(void *hook, uint64_t entry) SF_HIDDEN;
void sf_loader_entry(void) SF_HIDDEN;

/* bytes claimed at *cursor the way the trampolines claim a record: one
 * xadd without a lock prefix (only a signal handler on this thread can
 * race with it, and it lands before or after the one instruction).
 * Returns where the claim starts. */
/* Around a claim of several records and the stores (or the cut filler)
 * that complete it: see sf_thread.args_claim. A plain increment: a
 * handler that lands between its load and store leaves the count as it
 * found it. The signal fences keep the compiler from moving the claim or
 * the stores out from between them. */
static inline __attribute__((always_inline)) void sf_args_claim_enter(struct sf_thread *t)
{
	t->args_claim++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline __attribute__((always_inline)) void sf_args_claim_leave(struct sf_thread *t)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->args_claim--;
}

static inline __attribute__((always_inline)) uint64_t sf_claim_local(uint64_t *cursor, uint64_t bytes)
{
#ifdef __x86_64__
	__asm__ volatile("xaddq %0, %1" : "+r"(bytes), "+m"(*cursor) : : "cc", "memory");
	return bytes;
#else
	return __atomic_fetch_add(cursor, bytes, __ATOMIC_RELAXED);
#endif
}

#endif
