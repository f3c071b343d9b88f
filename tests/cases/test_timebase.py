"""One time base across the processes of a recording: Parquet, Chrome JSON
and Perfetto put a fork+exec'd child on the parent's clock, and OUT.threads
names every process (read back with polars and DuckDB)."""
import collections
import os
import re
import shutil

from sfkit import (SFTRACE, build_c, check, check_perfetto_times, chrome_slices, dump_events, eq, parquet_query,
                   perfetto_summary, record, run, tmpdir)


def threads_query(path):
    return parquet_query("threads_query.mjs", path)


def forker_recording(mode):
    exe = build_c("forker", ["forker.c"])
    d = tmpdir()
    p, log = record([exe, mode], out=os.path.join(d, "sf.log"))
    check(f"forker {mode} ok 0" in p.stdout, p.stdout)
    pid = int(run([SFTRACE, "dump", log]).stdout.split("pid: ", 1)[1].split()[0])
    return exe, d, pid


def dump_rows(d):
    """What every log says on its own, put on one clock by hand: (time since
    the earliest log start, tid, kind, name) per event, from `sftrace dump`
    (each log's times since its own start) and each header's start on
    CLOCK_MONOTONIC."""
    starts, events = {}, {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".log"):
            log = os.path.join(d, f)
            head = run([SFTRACE, "dump", log]).stdout
            starts[log] = int(re.search(r"^calibration: start tsc \d+ mono (\d+) ns", head, re.M).group(1))
            events[log] = dump_events(log)
    zero = min(starts.values())
    kinds = {"ENTRY": 1, "EXIT": 2, "TAIL": 3}
    return sorted((starts[log] - zero + e.time, e.tid, kinds[e.kind], e.name) for log in events for e in events[log])


def frames_of(rows):
    """frame_id -> (begin, end, pid, name) from (frame_id, kind, t, pid, name, tid) rows."""
    fr = {}
    for fid, kind, t, pid, name, _ in rows:
        b, e, _, _ = fr.get(fid, (None, None, pid, name))
        fr[fid] = (t, e, pid, name) if kind == 1 else (b, t, pid, name)
    return fr


def check_one_clock_rows(d, r):
    eq(sorted((t, tid, kind, name) for _, kind, t, _, name, tid in r["rows"]), dump_rows(d),
       "every row at its log's time plus its log's start, minus the earliest start")


def check_one_clock(d, r, parent_pid, child_fn, child_calls, parent_before):
    """The child's rows fall after the parent's pre-fork rows and inside the
    parent's main (it waits for the child), on the clock Chrome JSON uses."""
    check_one_clock_rows(d, r)
    frames = frames_of(r["rows"])
    parent = sorted(f for f in frames.values() if f[2] == parent_pid)
    child = sorted(f for f in frames.values() if f[2] != parent_pid)
    eq(collections.Counter(f[3] for f in child)[child_fn], child_calls, f"child {child_fn} frames")
    pmain = [f for f in parent if f[3] == "main"]
    eq(len(pmain), 1, "one parent main")
    pre_fork = [f for f in parent if f[3] == "p_work"][:parent_before]
    eq(len(pre_fork), parent_before, "parent's pre-fork p_work frames")
    check(max(f[1] for f in pre_fork) < min(f[0] for f in child),
          f"child rows start after the parent's pre-fork rows: {pre_fork} {child[:2]}")
    check(pmain[0][0] < min(f[0] for f in child) and max(f[1] for f in child) < pmain[0][1],
          f"child inside the parent's main: {pmain} {child[0]} {child[-1]}")
    check(min(f[0] for f in parent + child) < 10**9, "times count from the recording's time 0, not absolute")
    # Chrome JSON is absolute CLOCK_MONOTONIC: every frame of every process
    # is Parquet's frame shifted by the same constant (the time-0 instant).
    ch = sorted((b, e, n) for sl in chrome_slices(d).values() for b, e, n in sl)
    pq = sorted((b, e, n) for b, e, _, n in frames.values())
    eq(len(ch), len(pq), "frames in Chrome JSON and Parquet")
    shift = {(cb - pb, ce - pe) for (pb, pe, _), (cb, ce, _) in zip(pq, ch)}
    eq(len(shift), 1, f"one offset between Parquet and Chrome JSON for every frame: {sorted(shift)[:4]}")
    eq(len({a for a, _ in shift} | {b for _, b in shift}), 1, "same offset for begins and ends")


def test_fork_exec_parquet_one_clock_and_threads_table():
    exe, d, parent_pid = forker_recording("exec")
    out = os.path.join(d, "all.pola")
    run([SFTRACE, "convert", "--type", "pola", d, "-o", out])
    r = threads_query(out)
    eq(r["types"], [["tid", "u32"], ["pid", "u32"], ["ppid", "u32"], ["thread_name", "str"],
                    ["process_name", "str"], ["cmdline", "str"], ["start", "duration[ns]"],
                    ["end", "duration[ns]"], ["label", "str"],
                    ["tracer_cost_caller_ps", "u64"], ["tracer_cost_call_ps", "u64"],
                    ["tracer_cost_low_ps", "u64"], ["tracer_cost_high_ps", "u64"], ["tracer_cost_error_ppm", "u64"],
                    ["tracer_cost_exit_caller_ps", "u64"], ["tracer_cost_exit_call_ps", "u64"]],
       "polars OUT.threads schema")
    eq([t for _, t in r["duck_types"]], ["UINTEGER", "UINTEGER", "UINTEGER", "VARCHAR", "VARCHAR", "VARCHAR",
                                         "BIGINT", "BIGINT", "VARCHAR"] + ["UBIGINT"] * 7,
       "DuckDB OUT.threads types")
    th = r["threads"]
    eq(len(th), 2, f"one thread per process: {th}")
    par, kid = th  # start order: the parent first
    eq((par["pid"], par["tid"], par["process_name"], par["cmdline"]), (parent_pid, parent_pid, "forker",
                                                                     f"{exe} exec"), "parent row")
    eq((kid["ppid"], kid["tid"], kid["process_name"], kid["cmdline"]), (parent_pid, kid["pid"], "forker",
                                                                     f"{exe} child"), "exec'd child row")
    check(kid["pid"] != parent_pid, "child pid")
    eq(kid["thread_name"], "exe", "the kernel's name after exec of /proc/self/exe")
    eq(r["events"], len(r["rows"]), "every OUT row maps to exactly one OUT.threads row")
    eq(r["duck_per_process"], [[parent_pid, "forker", 4], [kid["pid"], "forker", 10]] if parent_pid < kid["pid"]
       else [[kid["pid"], "forker", 10], [parent_pid, "forker", 4]], "DuckDB: rows per process by the same rule")
    check(par["start"] < kid["start"] <= kid["end"] < par["end"], f"spans on one clock: {th}")
    check_one_clock(d, r, parent_pid, "c_work", 4, 1)
    # The rows of the file come in start order too: the parent's first.
    eq(r["rows"][0][3:5], [parent_pid, "main"], "first row by time")
    shutil.rmtree(d)


def test_fork_parquet_and_perfetto_one_clock():
    _, d, parent_pid = forker_recording("fork")
    out = os.path.join(d, "all.pola")
    run([SFTRACE, "convert", "--type", "pola", d, "-o", out])
    r = threads_query(out)
    eq(sorted((t["pid"] == parent_pid, t["process_name"]) for t in r["threads"]),
       [(False, "forker"), (True, "forker")], "both processes named")
    check_one_clock(d, r, parent_pid, "c_work", 5, 3)
    pb = os.path.join(d, "all.pb")
    run([SFTRACE, "convert", d, "-o", pb])
    check_perfetto_times(d, perfetto_summary(pb))
    shutil.rmtree(d)


def test_reused_tid_told_apart_by_time():
    """The forked child's tid comes back in the process its exec starts (same
    pid). OUT.threads has a row for each, with spans that do not overlap, and
    the documented join (tid, time within start..end) puts every row of OUT
    in the right one."""
    exe = build_c("tid_reuse", ["tid_reuse.c"])
    d = tmpdir()
    p, log = record([exe], out=os.path.join(d, "sf.log"))
    check("tid_reuse ok 0" in p.stdout, p.stdout)
    eq(len([f for f in os.listdir(d) if f.endswith(".log")]), 3, "logs: parent, child, exec'd image")
    out = os.path.join(d, "all.pola")
    run([SFTRACE, "convert", "--type", "pola", d, "-o", out])
    r = threads_query(out)
    th = r["threads"]
    eq([(t["process_name"], t["cmdline"]) for t in th], [("tid_reuse", exe), ("tid_reuse", exe),
                                                         ("tid_reuse", f"{exe} again")], "start order: parent first")
    parent, child, image = th
    eq((child["tid"], child["pid"], image["tid"], image["pid"]), (child["tid"],) * 4, "one tid, one pid")
    eq((child["ppid"], image["ppid"]), (parent["pid"], parent["pid"]), "both children of the parent")
    check(child["end"] < image["start"], f"disjoint spans: {th}")
    eq(r["events"], len(r["rows"]), "every row joins exactly one OUT.threads row")
    by_span = collections.Counter()
    for _, kind, t, _, name, tid in r["rows"]:
        owner = [i for i, x in enumerate(th) if x["tid"] == tid and x["start"] <= t <= x["end"]]
        eq(len(owner), 1, f"row {name} at {t}: threads rows")
        by_span[(owner[0], name)] += kind == 1
    eq(dict(by_span), {(0, "main"): 1, (1, "before_exec"): 2, (2, "main"): 1, (2, "after_exec"): 3}, "frames by owner")
    eq(r["rows"], sorted(r["rows"], key=lambda x: x[2]), "rows by time")
    check_one_clock_rows(d, r)
    shutil.rmtree(d)
