/* Heap replay for `sftrace memory` and the Perfetto heap counter: the
 * allocation events of one process, in time order over all its threads,
 * matched against the live set (lib/hashmap: pointer -> block) and
 * attributed to the traced call stack open on the allocating thread plus
 * the exact call site.
 *
 * It is a sink of the reader pipeline (trace_input.h's trace_run_merged):
 * threads merged by event time (a free on another thread, a realloc chain,
 * a pointer reused after free all match exactly), frames from frames.c,
 * times on the recording's time base like every other output. Stacks are
 * nodes of a callpath.c tree. One pass: each site's share of the peak is
 * kept as the replay goes. Memory: the live set, the distinct stacks and
 * sites, threads x depth; never the events.
 *
 * Definitions:
 *   temporary  heaptrack's rule: a free (a realloc frees its old block
 *              first) of a block whose site and size are those of the
 *              process's latest heap event, which was an allocation (no
 *              free in between, on any thread: events in time order);
 *   stage      with milestones, stage 0 runs until the first entry of a
 *              milestone function, stage k from the k-th entry on;
 *   leaked     still live when the log ends (exit or crash).
 */
#ifndef SFTRACE_LIB_HEAP_H
#define SFTRACE_LIB_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "lib/callpath.h"
#include "lib/hashmap.h"
#include "lib/trace_input.h"

/* An allocation site: a traced stack and the call site's address. When
 * `tail`, the allocation came right after the tail-call event of node's
 * function F (F ends in `jmp malloc`): node is F's, and addr, the
 * allocator's return address, lies in F's caller. */
struct heap_site {
	uint32_t node;                /* in heap_result.tree; CP_ROOT: no traced frame */
	uint8_t tail;                 /* reached by a tail call from node's function */
	uint32_t tag;                 /* addr in no recorded object's function: the events' return-address
				       * tag (FORMAT.md), which tells node's call into that code; else 0 */
	uint64_t addr;
	uint64_t allocs, bytes;       /* allocations made here (realloc results included) */
	uint64_t temporaries;
	uint64_t live_bytes, live_blocks;
	uint64_t peak_bytes, peak_blocks; /* live at the process's peak */
	uint64_t leak_bytes, leak_blocks; /* live at the end */
};

struct heap_stage {
	uint64_t t_start;             /* recording's time base (the first: the process's start) */
	uint64_t allocs, bytes;       /* allocated during the stage */
	uint64_t frees;
	uint64_t leak_bytes, leak_blocks; /* allocated during the stage, live at the end */
	uint64_t heap_at_end;
};

struct heap_totals {
	uint64_t allocs, frees, reallocs, bytes;
	uint64_t temporaries;
	uint64_t unmatched_frees;     /* pointer not live (allocated before recording began) */
	uint64_t replaced;            /* allocation of a pointer still live (its free was lost) */
	uint64_t peak_bytes, peak_blocks, peak_time; /* peak_time: recording's time base */
	uint64_t leak_bytes, leak_blocks;
	uint64_t events;              /* heap events replayed */
	/* A forked child's: its fork parent's blocks live at the fork, the
	 * child's starting heap (not counted as its allocations; frees of
	 * them match; those never freed are its leaks). */
	uint64_t inherited_bytes, inherited_blocks;
};

struct heap_result {
	const struct trace_proc *proc;
	const struct trace_proc *fork_parent; /* the process it was forked from (heap inherited), or NULL */
	/* A forked child whose parent's log is not among the inputs: the
	 * parent's pid (the heap it inherited is not counted); else 0. */
	uint32_t fork_parent_missing;
	struct heap_totals tot;
	/* The stacks: one node per distinct traced call path (keys are
	 * trace_func_keys, cp_func's owner the trace_proc and id the log's
	 * function id). Only the tree's shape is used: no durations. */
	struct cp_tree *tree;
	struct heap_site *sites;
	size_t nsites;
	/* Nodes that opened as a tail caller's traced tail callee (add's `jmp
	 * vector::_M_realloc_insert`): node -> the tail caller's node + 1, or
	 * UINT64_MAX when entered from several tail callers. A folded callee's
	 * allocations are its tail caller's (memory_sites.c). */
	struct hashmap tail_callee;
	struct heap_stage *stages;
	size_t nstages;
	uint64_t end_time;            /* the process's last event (recording's time base) */
	/* heap size over time (--plot), at most 8192 points: from curve_t[i]
	 * on, the highest size was curve_v[i] and the last curve_end[i].
	 * NULL unless heap_options.curve. */
	uint64_t *curve_t, *curve_v, *curve_end;
	size_t ncurve;
};

struct heap_options {
	const uint8_t *milestone;     /* per function id: 1 = milestone; NULL: none */
	size_t nmilestone;
	const uint8_t *select;        /* per stage: 1 = its leaks count in the sites' leaks; NULL: all */
	size_t nselect;
	int curve;                    /* keep the heap-size curve */
};

/* Replays the log of process i of the input. 0, or -1 (out of memory is
 * fatal anyway). May run inside a trace_run's callback. */
int heap_replay(struct trace_input *in, size_t i, const struct heap_options *opt, struct heap_result *r);

/* The function id and the parent of a node of r->tree. */
static inline uint32_t heap_node_func(const struct heap_result *r, uint32_t node)
{
	return cp_func(r->tree, cp_node(r->tree, node)->func)->id;
}
static inline uint32_t heap_node_parent(const struct heap_result *r, uint32_t node)
{
	return cp_node(r->tree, node)->parent;
}

/* Calls cb for each allocation event of process i in time order, with its
 * index (the IDs `memory --interactive` shows), until cb returns nonzero
 * (then returns that value). node is the allocating thread's innermost
 * traced frame in `tree` (a tree of its own, shaped as heap_result.tree),
 * or the tail-calling frame as for heap_site.tail. */
struct heap_event {
	uint64_t id;
	uint32_t kind;                /* SF_EV_* */
	uint32_t tid;
	uint64_t time;                /* recording's time base */
	uint64_t ptr, old_ptr, size, align, site_addr;
	uint32_t node;
	int tail;                     /* node's function tail-called the allocator (heap_site.tail) */
};
int heap_foreach_event(struct trace_input *in, size_t i,
		       int (*cb)(void *ctx, const struct heap_event *e, const struct cp_tree *tree), void *ctx);

void heap_result_free(struct heap_result *r);

/* "812 B", "4.0 KiB", "1.00 MiB", "2.50 GiB". */
void heap_format_bytes(char *buf, size_t cap, double v);

#endif
