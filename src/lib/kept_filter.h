/* The recording's filter, kept next to its logs so that readers name a
 * folded function (identical code folding: several names, one address) as
 * the filter chose. `record -f` and `record --filter-regex` write
 * DIR/STEM.recorded.filter for `-o DIR/STEM.EXT` (every log of the run,
 * DIR/STEM.<pid>.EXT and snapshots included, shares it); a run without a
 * filter removes a stale one. Readers without the file (older logs) name
 * functions as before. docs/FORMAT.md, "A recording's filter". */
#ifndef SFTRACE_LIB_KEPT_FILTER_H
#define SFTRACE_LIB_KEPT_FILTER_H

#include <stddef.h>

/* DIR/STEM.recorded.filter for record's output path DIR/STEM.EXT. -1 when
 * it does not fit. */
int kf_path_for_output(const char *output, char *out, size_t cap);

/* Writes the filter files (one merged filter) as the kept filter of output;
 * -1 after a message. */
int kf_keep(const char *output, char *const *files, size_t nfiles);

/* Removes output's kept filter of an earlier run, if any. */
void kf_drop(const char *output);

/* The kept filter of a log: DIR/P.recorded.filter for the longest P that
 * is the log's name or a prefix of it ending before a '.', whose file
 * exists.
 * 0 with the path in out, -1 when there is none. */
int kf_find_for_log(const char *log_path, char *out, size_t cap);

#endif
