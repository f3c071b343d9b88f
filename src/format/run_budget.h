/* record --max-size: one byte budget for every log a recording writes.
 *
 * `sftrace record` creates this 4096-byte file in the run's private
 * directory and names it in SFTRACE_BUDGET_FILE; every traced process
 * (forked or exec'd) maps it MAP_SHARED and claims the bytes of each log
 * header, slot and chunk with one atomic add on `used` before writing them.
 * The first claim that does not fit sets `capped`: from then on every claim
 * fails, threads stop recording and count what they drop (in their log's
 * dropped_events, or in `dropped_nolog` for a process refused a log). */
#ifndef SFTRACE_FORMAT_RUN_BUDGET_H
#define SFTRACE_FORMAT_RUN_BUDGET_H

#include <stdint.h>

#include "format/sflog.h"

#define SF_BUDGET_MAGIC 0x5447444255534653ULL /* "SFSUBDGT" */
#define SF_BUDGET_SIZE  4096u

/* The smallest cap under which a log can hold an event: its header and one
 * thread's buffer (a slot, claimed whole when the thread starts, though the
 * finished log keeps only what was written), before the objects' chunks. */
#define SF_BUDGET_MIN_EVENTS (SF_HEADER_SIZE + SF_SLOT_SIZE)
#define SF_BUDGET_MIN_TEXT   "68K"
_Static_assert(SF_BUDGET_MIN_EVENTS == 68 * 1024, "SF_BUDGET_MIN_TEXT");

struct sf_budget {
	uint64_t magic;
	uint64_t cap;           /* bytes all logs may take together */
	uint64_t used;          /* bytes claimed so far (may pass cap by the refused claim) */
	uint32_t capped;        /* 1 once a claim was refused */
	uint32_t capped_pid;    /* the process whose claim was refused first */
	uint64_t capped_mono_ns;/* CLOCK_MONOTONIC when that happened */
	uint64_t dropped_nolog; /* events of processes that got no log because of the cap */
};

_Static_assert(sizeof(struct sf_budget) <= SF_BUDGET_SIZE, "budget size");

#endif
