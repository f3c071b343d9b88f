/* The call-path tree that report, folded stacks and the flame graph share.
 *
 * One node per distinct call path (the chain of functions from a root frame
 * down to a frame), with the frames that ran at that path folded into it:
 * calls, total (inclusive) ns, self ns, min and max frame duration. Memory
 * is bounded by distinct call paths, never by events.
 *
 * Nodes are keyed by (parent node, key). Keys are the input's func_key for
 * frames; synthetic nodes (a process, or a thread of a process) get keys with
 * CP_SYNTHETIC set and sit above the root frames when the tree is built with
 * CP_BY_PROCESS / CP_BY_THREAD. Node 0 is the root (no key, no frames).
 *
 *   struct cp_tree *t = cp_new();
 *   cp_collect(t, in, CP_BY_THREAD);    // one trace_run pass, then cp_finish
 *   ... cp_node(t, i), cp_func(t, i), cp_walk_merged(...)
 *   cp_free(t);
 *
 * Or, without a trace_input (tests, other producers): cp_begin/cp_end per
 * frame in per-stack nesting order, then cp_finish. The heap replay
 * (heap.h) walks the tree with cp_child alone: its stacks are nodes, and
 * only the tree's shape is used.
 */
#ifndef SFTRACE_LIB_CALLPATH_H
#define SFTRACE_LIB_CALLPATH_H

#include <stddef.h>
#include <stdint.h>

struct trace_input;

#define CP_ROOT 0u
#define CP_SYNTHETIC (1ull << 63)
/* Synthetic keys: a process (by its index in the input) and a thread (by
 * process index and lr_thread.index). */
#define CP_KEY_PROCESS(pi) (CP_SYNTHETIC | (uint64_t)(pi))
#define CP_KEY_THREAD(pi, ti) (CP_SYNTHETIC | (1ull << 62) | ((uint64_t)(pi) << 32) | (uint64_t)(ti))
/* A frame known by its name alone (the leak flame graph's inlined
 * functions): a frame, not a synthetic node (its times are its own), keyed
 * by a hash of the name in a slot no function key reaches (trace_func_key:
 * slot << 48 | address, slots counting names that share an address), and
 * entered with the name itself as owner (a string that outlives the tree)
 * and id CP_ID_NAMED. */
#define CP_KEY_NAMED(h) (0x7ffeull << 48 | ((h) & 0xffffffffffffull))
#define CP_ID_NAMED (UINT32_MAX - 1)

struct cp_node {
	uint64_t key;
	uint32_t parent;       /* CP_ROOT for the root itself */
	uint32_t func;         /* index into the function table (cp_func) */
	uint32_t first_child;  /* 0: none (node 0 is never a child) */
	uint32_t next_sibling; /* 0: none */
	uint32_t scope;        /* nearest synthetic ancestor (or CP_ROOT) */
	uint32_t depth;        /* 0 for the root */
	int nested;            /* an ancestor in the same scope has the same key
				  (recursion): its frames are already inside that
				  ancestor's total. Set by cp_finish. */
	uint64_t calls;        /* frames at this path */
	uint64_t total_ns;     /* sum of their durations; synthetic nodes and the
				  root: sum of their children's totals (cp_finish) */
	uint64_t self_ns;      /* durations minus the children's durations */
	uint64_t min_ns, max_ns;/* frame durations (UINT64_MAX / 0 without frames) */
	uint64_t sub_calls;    /* frames in the subtree, this node included (cp_finish) */
	/* total_ns and self_ns as recorded (fr_frame.r_begin, r_end): equal
	 * to them unless times are net of the tracer's cost, whose error
	 * bound grows with the difference (trace_net_uncertain). */
	uint64_t raw_total_ns, raw_self_ns;
	uint64_t raw_min_ns, raw_max_ns;
	/* The recorded durations of the frames min_ns and max_ns are of:
	 * report marks its Min and Max as replay marks those calls. */
	uint64_t min_at_raw_ns, max_at_raw_ns;
};

/* A distinct key, with the first (owner, id) it was entered with: the
 * producer's way back to a name (for cp_collect: the trace_proc and the
 * log's function id; for synthetic keys: the trace_proc and the thread
 * index, or UINT32_MAX for a process). */
struct cp_func {
	uint64_t key;
	const void *owner;
	uint32_t id;
};

struct cp_tree;

struct cp_tree *cp_new(void);
void cp_free(struct cp_tree *t);

/* The child of `parent` with `key`, created if needed (owner/id recorded
 * for a new function key). Returns the node index. */
uint32_t cp_child(struct cp_tree *t, uint32_t parent, uint64_t key, const void *owner, uint32_t id);

/* Frame replay into the tree. `stack` tells apart independent call stacks
 * (threads), any small dense number; `base` is the node root frames of that
 * stack hang under (CP_ROOT or a synthetic node). Frames of one stack must
 * nest: begin at depth d, then its children at d+1, then its end. A new
 * begin at depth d replaces whatever was open at d (stacks need no reset
 * between processes). */
void cp_begin(struct cp_tree *t, uint32_t stack, uint32_t base, uint32_t depth, uint64_t key, const void *owner,
	      uint32_t id);
void cp_end(struct cp_tree *t, uint32_t stack, uint32_t depth, uint64_t t_begin, uint64_t t_end);
/* The same with the frame's times as recorded too (raw_total_ns, raw_self_ns). */
void cp_end_raw(struct cp_tree *t, uint32_t stack, uint32_t depth, uint64_t t_begin, uint64_t t_end, uint64_t r_begin,
		uint64_t r_end);

/* After the last frame: synthetic and root totals, sub_calls, nested flags. */
void cp_finish(struct cp_tree *t);

size_t cp_nnodes(const struct cp_tree *t);
const struct cp_node *cp_node(const struct cp_tree *t, uint32_t i);
size_t cp_nfuncs(const struct cp_tree *t);
const struct cp_func *cp_func(const struct cp_tree *t, uint32_t i);

/* ---- building from a trace ---- */

enum cp_levels {
	CP_FLAT = 0,           /* root frames of every thread under the root */
	CP_BY_PROCESS = 1,     /* root -> process -> frames */
	CP_BY_THREAD = 2,      /* root -> process -> thread -> frames */
};

/* One trace_run pass over `in` into `t`, then cp_finish. Returns 0, or -1
 * if the run failed. */
int cp_collect(struct cp_tree *t, struct trace_input *in, enum cp_levels levels);

/* Names the functions of a tree built without cp_collect (owners are
 * trace_procs, ids their log's function ids), after cp_finish. */
void cp_name_funcs(struct cp_tree *t);

/* Display strings of function i of a tree built by cp_collect: the
 * demangled name; for synthetic keys "NAME (pid N)" or "tid N (NAME)".
 * `module` (may be NULL) gets what frames are coloured/grouped by: the
 * object's file name for frame keys, "" for synthetic keys. The strings
 * live as long as the input. */
const char *cp_func_name(const struct cp_tree *t, uint32_t i, const char **module);

/* ---- walking with equal names merged ---- */

/* Depth-first, pre-order walk where siblings whose functions have the same
 * rank are one group (their numbers summed, their children merged): what a
 * folded-stack or flame-graph consumer sees, since two functions with one
 * name (statics of two objects) are one frame there. rank[f] for every
 * function f orders siblings (ascending; ties impossible by construction
 * since equal ranks merge). The walk is iterative: depth is unbounded.
 *
 * The callback gets the group's depth (1 for children of the root), a
 * representative node, and the summed calls / total / self / sub_calls of
 * the group. Return 0 to descend, 1 to skip the group's children, -1 to
 * stop (cp_walk_merged then returns -1). */
struct cp_group {
	uint32_t depth;
	uint32_t node;   /* one node of the group (for func / key) */
	uint32_t nnodes; /* nodes merged into it */
	uint64_t calls, total_ns, self_ns, sub_calls;
};
int cp_walk_merged(const struct cp_tree *t, const uint32_t *rank,
		   int (*cb)(void *ctx, const struct cp_group *g), void *ctx);

/* Ranks by name (strcmp of names[f]), equal names equal rank. rank must
 * hold cp_nfuncs(t) entries. */
void cp_rank_by_name(const struct cp_tree *t, const char *const *names, uint32_t *rank);

#endif
