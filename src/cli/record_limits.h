/* record's bounds on a long run: --max-size (one byte budget shared by every
 * process of the run) and --ring (per-thread flight-recorder rings, with
 * snapshots on a signal or a trigger). Options -> the runtime's
 * environment, and the summary lines after the run. */
#ifndef SFTRACE_CLI_RECORD_LIMITS_H
#define SFTRACE_CLI_RECORD_LIMITS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* "4096", "64K", "1.5M", "2G" (or KiB, MiB, GiB; powers of 1024) -> bytes,
 * at least min. -1 after a one-line error naming opt. */
int rl_parse_size(const char *opt, const char *s, uint64_t min, uint64_t *bytes);

/* Creates DIR/.budget for cap bytes and sets SFTRACE_BUDGET_FILE (path
 * receives its name, for rl_budget_report and removal). -1 after a message. */
int rl_budget_create(const char *dir, uint64_t cap, char *path, size_t cap_len);

/* After the run: if the cap was reached, one line saying when (seconds
 * after start_mono_ns) and how many events were not recorded: dropped
 * (the logs' counters, summed by the caller) plus those of processes that
 * got no log at all. Returns 1 if it was reached. */
int rl_budget_report(const char *path, uint64_t cap, uint64_t start_mono_ns, uint64_t dropped_in_logs);

/* "USR2", "SIGUSR2", "12" -> signal number; -1 after a message. */
int rl_parse_signal(const char *opt, const char *s);

/* --trigger FUNC or 'FUNC>DUR', each resolved the way sftrace filter -r
 * FUNC selects, in exe (the command's executable) and in the
 * --trigger-object files objs[0..nobjs), into DIR/.triggers (filter-file
 * format: an object line, then one `0xADDR DUR_NS NAME` line per function;
 * DUR_NS 0: on entry). An executable without sleds is passed over when
 * other objects are given (node and an addon). Sets SFTRACE_TRIGGERS. -1
 * after a message (a FUNC that matches nothing anywhere too). */
int rl_triggers_write(const char *dir, const char *exe, char *const *objs, size_t nobjs, char *const *specs,
		      size_t n, char *path, size_t cap);

/* Lists DIR/STEM.snap.*EXT written since `since` (the run's snapshots). */
void rl_list_snapshots(const char *dir, const char *stem, const char *ext, time_t since);

#endif
