/* Per-function figures folded from a call-path tree: what `report` prints
 * and what `report --diff` compares. One row per (scope, function key):
 * scope is the tree's synthetic section node (CP_ROOT for a flat tree).
 *
 *   total  summed durations of the function's frames not nested in another
 *          frame of the same function (recursion counted once);
 *   self   summed durations minus the children's;
 *   sum    every frame's duration, nested ones included (for avg);
 *   min, max  single frame durations (min UINT64_MAX without calls). */
#ifndef SFTRACE_LIB_FUNC_STATS_H
#define SFTRACE_LIB_FUNC_STATS_H

#include <stddef.h>
#include <stdint.h>

struct cp_tree;

struct fs_row {
	uint32_t scope;   /* tree node of the section (CP_ROOT when merged) */
	uint32_t func;    /* cp_func index (by name: the first function met with the name) */
	uint32_t id;      /* what rows are keyed by: func, or its name's rank */
	uint64_t calls, total, self, min, max;
	uint64_t sum;
	uint64_t raw_total, raw_self; /* total, self, sum, min and max as recorded (cp_node's raw_*) */
	uint64_t raw_sum, raw_min, raw_max;
	uint64_t min_at_raw, max_at_raw; /* the recorded durations of the frames min and max are of */
	const char *name; /* cp_func_name */
};

/* Rows of every non-synthetic node of t, in no particular order; *n set.
 * by_name: functions that share a name (short names merge the instances of
 * a generic function) share a row, with recursion through any of them
 * counted once. The caller frees the array. */
struct fs_row *fs_aggregate(const struct cp_tree *t, int by_name, size_t *n);

/* Mean single-call duration (0 without calls). */
static inline uint64_t fs_avg(const struct fs_row *w) { return w->calls ? w->sum / w->calls : 0; }
static inline uint64_t fs_raw_avg(const struct fs_row *w) { return w->calls ? w->raw_sum / w->calls : 0; }

#endif
