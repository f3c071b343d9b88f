/* The environment contract between `sftrace record` and the runtime: every
 * SFTRACE_* variable, once. `record` (src/cli) sets them, the runtime
 * (src/runtime) reads them, and exec_env.c passes every one of them on to
 * children exec'd with an environment of their own, so a variable added
 * here cannot be lost on the way (README.md and sftrace-record(1) document
 * them; tests/cases/test_env_contract.py checks that this is the only file
 * that spells a name, and that every name is documented).
 *
 * Use SF_ENV(CLOCK) for "SFTRACE_CLOCK": a string literal, so it joins
 * other literals (SF_ENV(RING) "=" is "SFTRACE_RING="). */
#ifndef SFTRACE_FORMAT_SF_ENV_H
#define SFTRACE_FORMAT_SF_ENV_H

/* X(NAME, meaning): the variable is SFTRACE_NAME. */
#define SF_ENV_LIST(X)                                                                                         \
	X(OUTPUT_FILE, "log path; unset or empty: no tracing")                                               \
	X(FILTER, "filter file (sftrace filter)")                                                            \
	X(FILTER_REGEX, "record --filter-regex: make each instrumented object's filter when it loads")      \
	X(FILTER_DIR, "with FILTER_REGEX: the directory of the per-object filters (absolute)")              \
	X(FILTER_WITHIN, "with FILTER_REGEX: 1 for --within")                                                \
	X(CLI, "with FILTER_REGEX or ARGS_SPECS: the sftrace binary that makes the per-object files (absolute)") \
	X(CLOCK, "tsc or monotonic (default: tsc when the TSC is invariant)")                                \
	X(WRITER, "auto, sync or thread: who writes full batches to the log")                                \
	X(ENCODING, "packed (default) or raw: how batches are written")                                     \
	X(MIN_DURATION, "record --min-duration in ns, decimal; unset, empty or 0: off")                      \
	X(MAX_DEPTH, "record --max-depth, decimal; unset, empty or 0: off")                                  \
	X(SETUP_THREAD_ONLY, "non-empty: with sftrace_setup, record only the thread that called it")        \
	X(NOTES_DIR, "record's private directory where the runtime says why no log was written")             \
	X(KEEPER, "record's keeper: PID, or PID-SALT (hex) when its socket's name is salted; 0: none to ask")   \
	X(SECCOMP_FILTERS, "seccomp filters on the process known to the tracer (record's own, or its traced parent's): a count, or any") \
	X(BUDGET_FILE, "record --max-size: the run's shared byte budget (format/run_budget.h)")              \
	X(RING, "record --ring: bytes per thread")                                                           \
	X(RING_SIGNAL, "with RING: the snapshot signal's number")                                            \
	X(MAX_SNAPSHOTS, "with RING: the snapshot limit")                                                    \
	X(TRIGGERS, "with RING: the trigger functions, a file in the filter format")                        \
	X(PAUSED, "record --paused: 1: start with no sled patched; sftrace resume/pause switch tracing")  \
	X(ARGS, "record -A/-R: the functions whose arguments or return values are recorded, a filter-format file") \
	X(ARGS_SPECS, "record -A/-R/--auto-args: the specs, resolved in each other instrumented object as it loads")

/* Variables the user sets for the CLI's own behaviour: not part of the
 * contract with the runtime, never passed on by exec_env.c (their man
 * pages document them). */
#define SF_ENV_USER_LIST(X)                                                                                    \
	X(PAGER, "replay's pager (before $PAGER; empty or cat: none)")                                       \
	X(ARGS_CACHE, "0: record --auto-args neither reads nor writes its cache of DWARF answers")            \
	X(TEST_KEEPER_SQUAT, "tests only: N: record finds its first N keeper names taken")

/* "SFTRACE_" NAME, as a string literal. */
#define SF_ENV(name) "SFTRACE_" #name

/* The prefix every name shares (the filter helper's child gets none). */
#define SF_ENV_PREFIX "SFTRACE_"

/* In SFTRACE_NOTES_DIR: an empty file record made and watches (inotify,
 * IN_OPEN). A runtime that starts under seccomp filters it was not told
 * of (SECCOMP_FILTERS) makes no call of its own but opening and closing
 * it, read-only, as the loader opens a library: record counts the opens
 * and says that many programs ran untraced. */
#define SF_UNSEEN_FILTER_FILE "unseen-seccomp"

/* How many variables the list holds. */
#define SF_ENV_ONE_(name, meaning) +1
#define SF_ENV_COUNT (0 SF_ENV_LIST(SF_ENV_ONE_))

#endif
