/* A recording as SQLite tables (sftrace query; columns in docs/QUERY.md):
 *
 *   frames(frame_id, parent, pid, tid, func_id, name, start_ns, dur_ns,
 *          self_ns, depth, short_name)
 *                               a virtual table that streams from the logs:
 *                               one row per repaired frame, ids as in the
 *                               Parquet output; each scan replays the logs
 *   functions(func_id, name, file, line, object, short_name)   at attach
 *   threads(pid, tid, thread_name, process_name, label)   at attach
 * short_name: report's short style of name; label: trace_thread_label.
 *
 * A frames scan runs the shared input pipeline (trace_run) on a thread of
 * its own and hands rows over in fixed-size chunks, so memory stays bounded
 * whatever the trace size and decoding overlaps SQLite's work. Concurrent
 * scans (a self-join) each open their own copy of the input. */
#ifndef SFTRACE_LIB_SQL_TABLES_H
#define SFTRACE_LIB_SQL_TABLES_H

#include <stddef.h>

#include "lib/trace_input.h"

struct sqlite3;
struct sql_tables;

/* Creates the three tables in db over `in` (opened from paths with opt,
 * which must outlive the result). NULL with a message in err on failure. */
struct sql_tables *sqlt_attach(struct sqlite3 *db, struct trace_input *in, const char *const *paths,
			       size_t npaths, const struct trace_options *opt, char *err, size_t errlen);

/* After the database is closed. */
void sqlt_free(struct sql_tables *t);

#endif
