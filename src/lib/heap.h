/* Heap replay for `sftrace memory`: the allocation events of one process,
 * in time order over all its threads, matched against the live set (a hash
 * map pointer -> block) and attributed to the traced call stack open on the
 * allocating thread plus the exact call site.
 *
 * Threads are merged by event time (a free on another thread, a realloc
 * chain, a pointer reused after free all match exactly); each thread's
 * frames come from the shared frame-repair module. Memory: the live set,
 * the distinct stacks and sites, threads x depth; never the events.
 *
 * Definitions:
 *   temporary  an allocation freed by the thread that made it with no other
 *              allocation event of that thread in between;
 *   stage      with milestones, stage 0 runs until the first entry of a
 *              milestone function, stage k from the k-th entry on;
 *   leaked     still live when the log ends (exit or crash).
 */
#ifndef SFTRACE_LIB_HEAP_H
#define SFTRACE_LIB_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "lib/trace_input.h"

/* A node of the stack trie: node 0 is the root (no traced frame). */
struct heap_node {
	uint32_t parent;
	uint32_t func_id;
};

/* An allocation site: a traced stack and the call site's address. */
struct heap_site {
	uint32_t node;
	uint64_t addr;
	uint64_t allocs, bytes;       /* allocations made here (realloc results included) */
	uint64_t temporaries;
	uint64_t live_bytes, live_blocks;
	uint64_t peak_bytes, peak_blocks; /* live at the process's peak */
	uint64_t leak_bytes, leak_blocks; /* live at the end */
};

struct heap_stage {
	uint64_t t_start;             /* ns since the process start */
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
	uint64_t peak_bytes, peak_blocks, peak_time;
	uint64_t leak_bytes, leak_blocks;
	uint64_t events;              /* heap events replayed */
};

struct heap_result {
	const struct trace_proc *proc;
	struct heap_totals tot;
	struct heap_node *nodes;
	size_t nnodes;
	struct heap_site *sites;
	size_t nsites;
	struct heap_stage *stages;
	size_t nstages;
	uint64_t end_time;
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

/* Replays the process's log. 0, or -1 (out of memory is fatal anyway). */
int heap_replay(const struct trace_proc *p, const struct heap_options *opt, struct heap_result *r);

/* Calls cb for each allocation event of the process in time order, with
 * its index (the IDs `memory --interactive` shows), until cb returns
 * nonzero. stack is the site's node. */
struct heap_event {
	uint64_t id;
	uint32_t kind;                /* SF_EV_* */
	uint32_t tid;
	uint64_t time;
	uint64_t ptr, old_ptr, size, align, site_addr;
	uint32_t node;
};
int heap_foreach_event(const struct trace_proc *p, int (*cb)(void *ctx, const struct heap_event *e,
							     const struct heap_node *nodes),
		       void *ctx);

void heap_result_free(struct heap_result *r);

/* "812 B", "4.0 KiB", "1.00 MiB", "2.50 GiB". */
void heap_format_bytes(char *buf, size_t cap, double v);

#endif
