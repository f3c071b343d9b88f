/* The input side of every analysis command (convert, report, flamegraph,
 * memory, dump with a cut): opens the logs of one recording (files, or a
 * directory holding them), symbolizes them, puts every log on one time base,
 * and replays their frames into a sink. Memory: threads x depth + symbols,
 * never events.
 *
 * The pipeline, one struct fr_frame passed by pointer from stage to stage:
 *
 *   events (lr_next, [net of the tracer's cost: net_times], + the process's time shift)
 *     -> frames.c (frame repair)
 *     -> [trim: a cut with the log's record-time limits, if it has any]
 *     -> [the user's cut (trace_cut.h), if any]
 *     -> the sink's frame_begin / frame_end
 *   allocation events go to the sink's alloc_event after the frames before
 *   them on their thread.
 *
 *   struct trace_input *in = trace_open(paths, n, &opts);   // prints errors
 *   trace_run(in, &sink);      // begin/end callbacks per frame, per process
 *   trace_report_repairs(in);  // one summary line on stderr if anything was repaired
 *   trace_close(in);
 *
 * trace_run_merged replays one process with its threads merged in time
 * order and nothing cut: the heap analysis (heap.h) runs on it.
 */
#ifndef SFTRACE_LIB_TRACE_INPUT_H
#define SFTRACE_LIB_TRACE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/frames.h"
#include "lib/log_reader.h"
#include "lib/log_symbols.h"
#include "lib/trace_cut.h"

struct trace_options {
	const char *const *symbol_paths; /* -s/--symbol overrides */
	size_t nsymbol_paths;
	int force;       /* build-id mismatches and missing objects are not errors */
	int no_symbols;
	int symbols_optional; /* an object that cannot symbolize gets placeholder names and a
			       * warning, not an error (info: the recorded fields need no symbols) */
	int quiet;       /* no warnings, no progress */
	int no_progress; /* no progress line (stdout goes to a pager on the same terminal) */
	struct trace_cut_options cut; /* what to keep (trace_cut.h); zero: everything */
	int short_names; /* trace_name gives the short style (demangle.h) */
	int net_times;   /* trace_run gives times net of the tracer's measured cost
			  * (lr_info.cost_*; logs without the figure: raw) */
	int raw_cut;     /* --raw-times: --min-duration judges the recorded durations.
			  * Otherwise it judges net ones wherever the log has the cost,
			  * whatever the times given (net_times): every command keeps the
			  * same calls. A recording's own trim judges recorded durations
			  * always, as the runtime did (cut_set_limits) */
	int time_order;  /* trace_run gives each process's threads merged in time
			  * order (replay), not in the log's batch order */
};

/* One process: one log. */
struct trace_proc {
	size_t index;             /* 0.. in start order (ties: the order given) */
	struct lr_log *log;
	const struct lr_info *info;
	struct log_symbols *syms;
	const char *name;         /* process name: basename of argv[0] */
	const char *cmdline;      /* argv joined with spaces */
	/* The recording's time 0 on CLOCK_MONOTONIC (ns), the same for every
	 * process: frame times + this = absolute CLOCK_MONOTONIC ns. */
	uint64_t zero_mono_ns;
	/* This process's start on the recording's time base: the shift added
	 * to its log's times (0 for the first process). */
	uint64_t start_ns;
	/* After a run over it: its latest event time (recording's time base). */
	uint64_t last_ns;
	/* trace_func_key by function id (internal; use trace_func_key). */
	const uint64_t *func_keys;
	uint32_t nfunc_keys;
};

/* Callbacks get the sink's ctx. Any of them may be NULL. A non-zero return
 * stops the run (trace_run then returns -1).
 *
 * Frames (frames.h's struct fr_frame, valid only during the call): ids are
 * unique over the whole input, parent 0 is a root; times are ns since the
 * recording's time 0; proc is set; `cut` has CUT_START (begin moved to the
 * window's start) and, in frame_end, CUT_END (end moved to its end). */
struct trace_sink {
	void *ctx;
	int (*process_begin)(void *ctx, const struct trace_proc *p);
	int (*thread_begin)(void *ctx, const struct trace_proc *p, const struct lr_thread *t);
	int (*frame_begin)(void *ctx, const struct fr_frame *f);
	int (*frame_end)(void *ctx, const struct fr_frame *f);
	int (*process_end)(void *ctx, const struct trace_proc *p);
	/* Allocation events (kinds >= SF_EV_ALLOC), after the frames before
	 * them on their thread; time_ns on the recording's time base. */
	int (*alloc_event)(void *ctx, const struct trace_proc *p, const struct lr_event *ev);
	/* An exit or tail the frames layer dropped: its function was not open
	 * on the thread; or (end_kind FR_END_UNCOUNTED, func_id FR_NO_FUNC) a
	 * landing the runtime could not count (fr_callbacks.unmatched). With a
	 * cut, where the cut keeps its place (trace_cut.h's cut_unmatched),
	 * depth and parent among the kept frames. */
	int (*frame_unmatched)(void *ctx, const struct fr_frame *f);
	/* With time_order, for a sink that writes in time order (replay): a
	 * thread whose output waits on its next event (a begun call not yet
	 * known to have callees) gets it at once, ahead of the other threads'
	 * earlier events; so does one whose begins the cut holds, and a
	 * thread's open frames close as soon as its last event is in. Then
	 * `horizon` says, before an event in time order, that every frame
	 * begin or end still to come is at or after t (recorded clock,
	 * fr_frame.r_begin/r_end), except for what the thread `ahead`, when
	 * not NULL, still owes the sink itself (it runs ahead, and its next
	 * event is earlier than any other thread's): what the sink holds
	 * before t can go out, up to the earliest line it waits to finish. */
	int (*wants_next)(void *ctx, const struct lr_thread *t);
	void (*horizon)(void *ctx, const struct lr_thread *ahead, uint64_t t);
};

struct trace_input;

/* paths: log files, or directories (every *.log inside that is an sftrace
 * log). NULL after printing one error line per problem.
 * One time base for all of them: time 0 is the earliest header start time
 * (start_mono_ns) among the logs, i.e. when the tracer started in the
 * recording's first process; every event time is shifted onto it. */
struct trace_input *trace_open(const char *const *paths, size_t npaths, const struct trace_options *opt);

size_t trace_nprocs(const struct trace_input *in);
const struct trace_proc *trace_proc_at(const struct trace_input *in, size_t i);

/* The function's name, file and line (never NULL). */
const struct sym_info *trace_symbol(const struct trace_proc *p, uint32_t func_id);

/* The name outputs show: the full name, or the short style when the
 * options asked for it (cached; never NULL; lives as long as the input). */
const char *trace_name(const struct trace_proc *p, uint32_t func_id);
/* The short style whatever the options (report's names): cached like
 * trace_name's, so a process's short names are built once. Not safe from
 * two threads on one input. */
const char *trace_short_name(const struct trace_proc *p, uint32_t func_id);
/* Whether trace_name gives the short style (trace_options.short_names). */
int trace_short_style(const struct trace_proc *p);

/* --srcline: the source file of the function's definition (*line its
 * line), or NULL. NULL for a function of an object without DWARF also
 * says so on stderr, once per object for the whole input. */
const char *trace_srcline(const struct trace_proc *p, uint32_t func_id, uint32_t *line);

/* A name given where a function is taken (-F/-N, --milestone), added to ps
 * by name_match.h's rule over every function of the input: the name whole
 * when some function has it, else the text as a regex. -1 after a message
 * (a bad pattern). ps is compiled by the caller. */
struct nm_patterns;
int trace_add_name_pattern(struct trace_input *in, struct nm_patterns *ps, const char *text, const char *origin);
/* Whether the compiled patterns find the function by its name, full or
 * short, without its parameter list, or by an alias (which then becomes
 * its name, as a filter's choice). */
int trace_func_found(const struct trace_proc *p, const struct nm_patterns *ps, uint32_t func_id);

/* Linux keeps 15 bytes of a thread's name: a name that long was probably
 * cut (libtest's threads all read "ast::parse::tes"). */
#define SF_THREAD_NAME_CUT 15

/* Whether the kernel cut the thread's name (15 bytes long), and it is not
 * the process's own name (the main thread, and threads that kept it: the
 * process already tells them). */
int trace_thread_name_cut(const struct trace_proc *p, const struct lr_thread *t);

/* The thread's name as outputs show it: its name, and when the kernel cut
 * the name (trace_thread_name_cut), the thread's first outermost function (short style) beside it:
 * "ast::parse::tes (ast::parse::tests::nested::{closure})". "" for a thread
 * with no name. Cached; lives as long as the input. Reads the thread's
 * first events once (any time, also inside a trace_run callback). */
const char *trace_thread_label(const struct trace_proc *p, const struct lr_thread *t);

/* A function id stable across the whole input: the ELF address for the
 * main executable (so it matches `nm`), and (k << 48) | address for the
 * k-th distinct other object (k >= 1, objects told apart by build-id, else
 * by path). One key is one name: a folded function that processes name
 * differently (their recordings' filters chose different aliases) keeps
 * the key under the earliest process's name, and each other name gets
 * (k' << 48) | address with a slot k' of its own. 0 for ids no object
 * owns. */
static inline uint64_t trace_func_key(const struct trace_proc *p, uint32_t func_id)
{
	return func_id < p->nfunc_keys ? p->func_keys[func_id] : 0;
}

/* Replays every log in order (each log's events in lr_iter order, or its
 * threads merged in time order with opt.time_order) through the whole
 * pipeline. Returns 0, or -1 if a sink callback failed. The
 * totals below describe the latest trace_run. */
int trace_run(struct trace_input *in, const struct trace_sink *sink);

/* Replays process i alone: its threads merged in time order (a thread's own
 * order always kept), every frame as recorded (no trim, no cut), on the
 * same time base as trace_run. May run inside a trace_run's callback; it
 * leaves the totals alone. Returns 0, or -1 if a sink callback failed. */
int trace_run_merged(struct trace_input *in, size_t i, const struct trace_sink *sink);

/* Totals after trace_run. */
const struct fr_stats *trace_stats(const struct trace_input *in);
/* The same for one process: its part of the totals (max_depth: the run's
 * so far), set when its frames have closed, before the sink's process_end. */
const struct fr_stats *trace_proc_stats(const struct trace_proc *p);
uint64_t trace_events(const struct trace_input *in);
/* Threads whose events the last run read (--tid leaves the others out). */
size_t trace_threads(const struct trace_input *in);
/* What the cut kept, or NULL when the options cut nothing. */
const struct cut_stats *trace_cut_stats(const struct trace_input *in);
/* "kept 120 of 8196 calls, 3 cut at the window's edges" (NULL: no cut). */
int trace_format_cut(const struct trace_input *in, char *buf, size_t len);
/* One line on net times (trace_options.net_times) for a command's header:
 * the tracer's measured cost per call and whether it was taken off. 0 and
 * nothing written when no log carries the figure (times are as recorded). */
int trace_format_net(const struct trace_input *in, char *buf, size_t len);
/* The same for a view that marks uncertain net figures (trace_net_uncertain):
 * the cost's spread and the mark, when the logs have a spread. */
int trace_format_net_marked(const struct trace_input *in, char *buf, size_t len);
int trace_net_times(const struct trace_input *in); /* the net_times option */
/* How far a net figure may be off, per ns of the tracer's time taken off
 * it: the largest lr_info.cost_err of the processes (0 with raw times, or
 * without a measured spread). */
double trace_cost_err(const struct trace_input *in);
/* Whether a net figure is uncertain: its error bound, the tracer's time
 * taken off it (raw - net) times err, is over 10% of it. The views then
 * show the raw figure marked NET_UNCERTAIN_MARK (docs/DESIGN.md "Times
 * net of the tracer"). */
static inline int trace_net_uncertain(double err, uint64_t net, uint64_t raw)
{
	return raw > net && err * (double)(raw - net) > 0.1 * (double)net;
}
#define NET_UNCERTAIN_MARK "<"

/* Prints the repairs (if any), the cut and the reader's warnings to stderr. */
void trace_report_repairs(const struct trace_input *in);
/* The same for a command that read n recordings (report --diff: OLD and
 * NEW), each named by its label: each one's warnings, then one
 * "repaired: old: ...; new: ..." line and one "cut: ..." line for all of
 * them, so each notice is printed once per command. */
void trace_report_repairs_of(const struct trace_input *const *in, const char *const *label, size_t n);
/* The command's own output states the repairs and the cut (report's
 * footer): trace_report_repairs leaves those two lines out, so each notice
 * is printed once per command. */
void trace_repairs_shown(struct trace_input *in);

/* Whether -q asked for no warnings. */
int trace_quiet(const struct trace_input *in);

void trace_close(struct trace_input *in);

#endif
