"""Perfetto's own trace processor (the parser behind ui.perfetto.dev and
vizviewer) loads every Perfetto and Chrome JSON trace the fixtures give, and
SQL on it finds exactly what the logs hold: slices per name, depth and
thread; thread and process rows; every slice's begin and duration equal to
`convert --type chrome`'s; nothing in `stats` of severity error or data_loss.

The expected values come from `sftrace dump` (each log's raw events, replayed
here independently of the converter) and from the fixtures' known call
patterns. The binary is ../shared/tools/trace_processor_shell next to the
checkout, or $SFTRACE_TRACE_PROCESSOR; without it every case says SKIP.
One batched query per trace (trace processor starts in well under a second)."""
import collections
import csv
import io
import json
import os
import re
import shutil

from sfkit import (BUILD, DUMP_RE, ROOT, SFTRACE, Skip, build_c, calls_fixture, check, chrome_slices, eq, record, run,
                   rust_fixture, tmpdir)
from sfkit import _THREAD_RE as THREAD_RE  # the thread table of `sftrace dump`

TP_ENV = "SFTRACE_TRACE_PROCESSOR"

# `sftrace dump`'s event lines, with the UNWIND events that close frames.
EVENT_RE = re.compile(DUMP_RE.pattern.replace("(ENTRY|EXIT|TAIL)", "(ENTRY|EXIT|TAIL|UNWIND)"))

# One result set per trace: every slice with its thread and process, the
# thread and process rows, and the stats that mean an import error or lost
# data. Slices on a track that is not a thread's are listed too (there must
# be none).
QUERY = """
select 'slice' as k, s.name as a, s.depth as b, t.tid as c, p.pid as d, s.ts as e, s.dur as f
  from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid)
  left join process p using (upid)
union all
select 'loose', s.name, s.depth, null, null, s.ts, s.dur from slice s
  where s.track_id not in (select id from thread_track)
union all
select 'thread', t.name, null, t.tid, p.pid, null, null from thread t left join process p using (upid)
  where t.tid != 0
union all
select 'process', p.name, null, null, p.pid, null, null from process p where p.pid != 0
union all
select 'stat', s.name || ' [' || s.severity || ', ' || s.source || ']', s.idx, null, null, s.value, null
  from stats s where s.value > 0 and s.severity in ('error', 'data_loss');
"""


def trace_processor():
    path = os.environ.get(TP_ENV) or os.path.join(os.path.dirname(ROOT), "shared", "tools",
                                                  "trace_processor_shell")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise Skip(f"Perfetto's trace_processor_shell not found at {path} (set {TP_ENV} to use another)")
    return path


def tp_load(trace):
    """The rows of QUERY on one trace, by kind."""
    tp = trace_processor()
    qfile = trace + ".sql"
    with open(qfile, "w") as f:
        f.write(QUERY)
    p = run([tp, "-q", qfile, trace], timeout=120)
    os.unlink(qfile)
    rows = collections.defaultdict(list)
    for r in csv.DictReader(io.StringIO(p.stdout)):
        rows[r["k"]].append(r)
    return rows


def expected_from_logs(logs):
    """From `sftrace dump` (one run per log), independently of the
    converter: slices per (name, depth, tid) (an exit or tail call closes its
    function's frame and the frames above it; one whose function is not open
    is dropped), the same with the depths trace processor gives them in a
    Chrome JSON trace (see json_depths), and the (tid, pid, thread name) and
    (pid, process name) of every log."""
    slices, json_slices = collections.Counter(), collections.Counter()
    threads, procs = set(), set()
    for log in logs:
        out = run([SFTRACE, "dump", log]).stdout
        head, _, events = out.partition("\nevents:")
        pid = int(head.split("pid: ", 1)[1].split()[0])
        argv0 = head.split("command line: ", 1)[1].split("\n", 1)[0].split()[0]
        procs.add((pid, os.path.basename(argv0)))
        for line in head.split("\nthreads (", 1)[1].splitlines():
            m = THREAD_RE.match(line)
            if m and int(m.group(4)):
                threads.add((int(m.group(2)), pid, m.group(3).strip() or "thread"))
        stacks, last, ended = collections.defaultdict(list), {}, []
        for line in events.splitlines():
            m = EVENT_RE.match(line)
            if not m:
                continue
            t, tid, kind, name = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4).strip()
            st = stacks[tid]
            last[tid] = t
            if kind == "ENTRY":
                slices[(name, len(st), tid)] += 1
                # [name, begin, end (None while open)]
                st.append([name, t, None])
            elif kind == "UNWIND":  # "N frames abandoned": they end here
                for _ in range(min(len(st), int(name.split()[0]))):
                    end(st, tid, t, ended)
            elif name in [f[0] for f in st]:
                while end(st, tid, t, ended)[0] != name:
                    pass
        for tid, st in stacks.items():  # still open: repaired at the thread's last time
            while st:
                end(st, tid, last[tid], ended)
        for tid in stacks:  # in the order the writer writes them: as they end
            fs = [(f[1], f[2], f[0]) for t, f in ended if t == tid]
            for name, depth in json_depths(fs):
                json_slices[(name, depth, tid)] += 1
    return slices, json_slices, threads, procs


def end(st, tid, t, ended):
    """Ends the innermost open frame of thread tid's stack st at t, and
    lists it in ended; returns it."""
    f = st.pop()
    f[2] = t
    ended.append((tid, f))
    return f


def json_depths(frames):
    """The (name, depth) trace processor gives each of one thread's frames
    (begin, end, name), in the order they are written, in a Chrome JSON
    trace. Complete ("X") events carry only times: it takes them by begin,
    the longer first, then in file order, and a slice beginning at ts
    closes every open slice that ended before ts or ends at ts having begun
    before it. So a frame of 0 ns at the very end of its callers (a repair:
    a crash, a longjmp landing in the tick the frame began) closes them and
    sits one below the nearest enclosing frame that ends after it (or
    under a longer frame beginning at that instant); a frame with its
    caller's begin and end, written first, holds its caller; any other
    frame gets its own depth."""
    stack, out = [], []
    for _, (b, e, name) in sorted(enumerate(frames), key=lambda x: (x[1][0], x[1][0] - x[1][1], x[0])):
        while stack and (stack[-1][1] < b or stack[-1][1] == b and stack[-1][0] < b):
            stack.pop()
        out.append((name, len(stack)))
        stack.append((b, e))
    return out


def logs_of(path):
    if os.path.isdir(path):
        return sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".log"))
    return [path]


def check_loaded(what, rows, slices, threads, procs, chrome):
    eq(rows["stat"], [], f"{what}: stats of severity error or data_loss")
    eq(rows["loose"], [], f"{what}: slices on a track that is not a thread's")
    got = collections.Counter((r["a"], int(r["b"]), int(r["c"])) for r in rows["slice"])
    if got != slices:
        diff = {k: (got[k], slices[k]) for k in set(got) | set(slices) if got[k] != slices[k]}
        raise AssertionError(f"{what}: slices per (name, depth, tid), got vs want: {sorted(diff.items())[:20]}")
    # Trace processor gives every process a row for its main thread (tid =
    # pid), named or not; one without events of its own has no name.
    got_threads = {(int(r["c"]), int(r["d"]), r["a"]) for r in rows["thread"]}
    got_threads -= {(t, p, "[NULL]") for t, p, _ in got_threads if t == p and t not in {x for x, _, _ in threads}}
    eq(got_threads, threads, f"{what}: thread rows (tid, pid, name)")
    eq({(int(r["d"]), r["a"]) for r in rows["process"]}, procs, f"{what}: process rows (pid, name)")
    check(all(int(r["f"]) >= 0 for r in rows["slice"]), f"{what}: a slice without an end (dur -1)")
    per_tid = collections.defaultdict(list)
    for r in rows["slice"]:
        b = int(r["e"])
        per_tid[int(r["c"])].append((b, b + int(r["f"]), r["a"]))
    eq({t: sorted(v) for t, v in per_tid.items()}, chrome, f"{what}: every slice's (begin, end, name) vs Chrome JSON")


def check_trace_processor(path, shown_threads=None, more_procs=None):
    """Converts a log (or a recording's directory) to Perfetto (gzip'd) and
    Chrome JSON and checks both as trace processor reads them (the JSON
    depths as json_depths gives them).
    shown_threads: {"pb"|"json": {(tid, pid, name): row or None}}, the thread
    rows trace processor shows differently, and more_procs {"pb"|"json": set}
    the process rows it adds (see the reused tid case)."""
    trace_processor()
    slices, json_slices, threads, procs = expected_from_logs(logs_of(path))
    base = os.path.join(path, "all") if os.path.isdir(path) else path
    # Full names, as `dump` prints them (the default short slice names are
    # checked in test_names.py).
    chrome = chrome_slices(path, names="full", keep=base + ".json")
    run([SFTRACE, "convert", "--names", "full", path, "-o", base + ".pb.gz"])
    for kind, out, want in (("pb", base + ".pb.gz", slices), ("json", base + ".json", json_slices)):
        shown = (shown_threads or {}).get(kind, {})
        want_threads = {shown.get(t, t) for t in threads} - {None}
        want_procs = procs | (more_procs or {}).get(kind, set())
        check_loaded(f"{os.path.basename(out)}", tp_load(out), want, want_threads, want_procs, chrome)
    return slices


def test_tp_calls_threads_tail_calls_library():
    _, log = record([calls_fixture()])
    s = check_trace_processor(log)
    eq(s[("tleaf", 1, next(t for n, _, t in s if n == "thread_work"))], 1000, "tleaf under one thread_work")
    eq(sum(n for (name, _, _), n in s.items() if name == "recurse"), 51, "recurse")
    shutil.rmtree(os.path.dirname(log))


def test_tp_crash_repaired():
    """The frame open at the crash, crash_here, began at the thread's last
    timestamp, which closes it and every frame under it: it lasts 0 ns and
    begins the instant its parents end. Perfetto's begin/end events keep
    its nesting. Chrome JSON's complete ("X") events carry only times, and
    trace processor closes a slice that ends at the instant the next one
    begins, so in the JSON trace crash_here sits at depth 0. Its time and
    duration are still exact (checked against the JSON itself)."""
    _, log = record([calls_fixture(), "segv"], check_rc=128 + 11)
    s = check_trace_processor(log)
    eq(s[("crash_here", 22, next(t for n, _, t in s if n == "crash_here"))], 1, "crash_here at depth 22")
    eq(sum(n for (name, _, _), n in s.items() if name == "deep"), 21, "deep frames closed at the crash")
    shutil.rmtree(os.path.dirname(log))


def test_tp_fork_exec_and_fork_merged():
    exe = build_c("forker", ["forker.c"])
    for mode, procs in (("exec", 2), ("fork", 2)):
        d = tmpdir()
        record([exe, mode], out=os.path.join(d, "sf.log"))
        eq(len(logs_of(d)), procs, f"{mode}: logs")
        s = check_trace_processor(d)
        eq(len({t for _, _, t in s}), 2, f"{mode}: threads with slices")
        shutil.rmtree(d)


def test_tp_reused_tid():
    """A forked child runs instrumented code, then execs: the new image keeps
    the pid and the tid. Trace processor keeps the two processes apart in the
    Perfetto trace (a process track each), but gives the process and thread
    names to the later process and thread with that pid and tid only, so the
    earlier ones show no name. The
    Chrome JSON format has nothing but pid and tid to tell them apart: both
    are one thread there, named after the later one. Slices, times and
    depths are exact in both."""
    exe = build_c("tid_reuse", ["tid_reuse.c"])
    d = tmpdir()
    p, _ = record([exe], out=os.path.join(d, "sf.log"))
    check("tid_reuse ok 0" in p.stdout, p.stdout)
    pids = sorted(int(f.split(".")[1]) for f in os.listdir(d) if f.count(".") >= 2)
    child = pids[0]
    earlier = (child, child, "tid_reuse")
    s = check_trace_processor(d, shown_threads={"pb": {earlier: (child, child, "[NULL]")}, "json": {earlier: None}},
                              more_procs={"pb": {(child, "[NULL]")}})
    eq(sum(n for (f, _, t), n in s.items() if t == child), 6, "before_exec x2, main and after_exec x3")
    shutil.rmtree(d)


def test_tp_unwind_repairs_cxx_longjmp():
    cases = (("unwind_cxx", ["unwind_cxx.cc"], "clang++", "thrower"), ("unwind_longjmp", ["unwind_longjmp.c"],
                                                                        "clang", "dive"))
    for name, src, cc, fn in cases:
        exe = build_c(name, src, compiler=cc)
        _, log = record([exe, "20", "5"])
        s = check_trace_processor(log)
        eq(sum(n for (f, _, _), n in s.items() if f.startswith(fn)), 20 * 6, f"{name}: {fn} slices")
        shutil.rmtree(os.path.dirname(log))


def test_tp_json_zero_length_frame_at_callers_end():
    """The rules json_depths models, every run, on a hand-made Chrome JSON
    trace (the longjmp case meets them only when the innermost frame began
    in the landing's clock tick), its events in the writer's order (as
    frames end, callee first). g [0, 2000] ns holds p [0, 1000], which
    holds q [500, 1000], which holds the 0 ns z [1000, 1000]; then w
    [1000, 1500] holding y [1200, 1300] holding x [1200, 1300]; then the
    0 ns u [1700, 1700] holding v [1700, 1700]. Trace processor closes p
    and q at z's begin and puts z under w, the longer slice beginning then;
    x, written before y, holds y; v holds u. Every time is kept."""
    frames = [("z", 1000, 1000), ("q", 500, 1000), ("p", 0, 1000), ("x", 1200, 1300), ("y", 1200, 1300),
              ("w", 1000, 1500), ("v", 1700, 1700), ("u", 1700, 1700), ("g", 0, 2000)]
    events = [{"ph": "M", "pid": 7, "tid": 7, "name": "thread_name", "args": {"name": "t"}}]
    for name, b, e in frames:  # ts and dur as the writer prints them: 3 decimals and a 2
        events.append({"ph": "X", "pid": 7, "tid": 7, "ts": f"@{b // 1000}.{b % 1000:03}2@",
                       "dur": f"@{(e - b) // 1000}.{(e - b) % 1000:03}2@", "name": name})
    d = tmpdir()
    trace = os.path.join(d, "zero.json")
    with open(trace, "w") as f:
        f.write(json.dumps({"traceEvents": events}).replace('"@', "").replace('@"', ""))
    depth = dict(json_depths([(b, e, n) for n, b, e in frames]))
    eq(depth, {"g": 0, "p": 1, "q": 2, "z": 2, "w": 1, "x": 2, "y": 3, "v": 1, "u": 2}, "json_depths")
    rows = tp_load(trace)
    eq({(r["a"], int(r["b"]), int(r["e"]), int(r["f"])) for r in rows["slice"]},
       {(n, depth[n], b, e - b) for n, b, e in frames}, "trace processor's slices")
    eq(rows["stat"], [], "stats of severity error or data_loss")
    shutil.rmtree(d)


def test_tp_rust_threads_and_panic_unwind():
    try:
        prog = rust_fixture()
        panic = rust_fixture("unwind_panic")
    except (FileNotFoundError, AssertionError) as e:
        raise Skip(f"no rustc with -Zinstrument-xray: {e}")
    _, log = record([prog])
    check_trace_processor(log)
    shutil.rmtree(os.path.dirname(log))
    _, log = record([panic, "20", "5"])
    s = check_trace_processor(log)
    eq(sum(n for (f, _, _), n in s.items() if f.startswith("unwind_panic::dive")), 20 * 6, "dive slices")
    shutil.rmtree(os.path.dirname(log))


def _pb(num, v):
    """One protobuf field: an int (varint), or bytes / a list of fields."""
    def varint(x):
        out = bytearray()
        while x >= 0x80:
            out.append((x & 0x7f) | 0x80)
            x >>= 7
        return bytes(out + bytes([x]))
    if isinstance(v, int):
        return varint(num << 3) + varint(v)
    v = b"".join(v) if isinstance(v, list) else v
    return varint(num << 3 | 2) + varint(len(v)) + v


def test_tp_query_sees_import_errors():
    """The stats half of QUERY is not vacuous: a hand-made trace whose slice
    is timed on a sequence clock (64) that no ClockSnapshot defined is an
    error and a data loss for trace processor, and the slice is lost."""
    trace_processor()
    thread = _pb(1, [_pb(10, 7), _pb(13, 1), _pb(60, [_pb(1, 42), _pb(4, [_pb(1, 1), _pb(2, 2), _pb(5, b"t")])])])
    begin = _pb(1, [_pb(10, 7), _pb(13, 2), _pb(8, 1000), _pb(58, 64),
                    _pb(11, [_pb(9, 1), _pb(11, 42), _pb(23, b"lost")])])
    d = tmpdir()
    path = os.path.join(d, "bad.pb")
    with open(path, "wb") as f:
        f.write(thread + begin)
    rows = tp_load(path)
    eq(sorted(r["a"] for r in rows["stat"]),
       ["clock_sync_failure_undeferrable_packet_loss [data_loss, analysis]",
        "clock_sync_failure_unknown_source_clock [error, analysis]"], "stats seen")
    eq(rows["slice"], [], "the slice is dropped")
    shutil.rmtree(d)


def test_tp_rust_workflow_bench():
    """The Rust workflow's criterion bench (examples/rust-bench: serde_json,
    regex, rayon), filtered as the workflow does, one iteration of each
    benchmark, resolve and normalize only (about 19k slices). Its build
    takes minutes, so this reuses the one
    test_rust_workflow.py made earlier in the run, and says SKIP without it."""
    trace_processor()
    deps = os.path.join(BUILD, "rust-bench", "target", "sftrace", "profiling", "deps")  # cargo sftrace build
    bins = [os.path.join(deps, f) for f in os.listdir(deps)
            if f.startswith("resolver-") and not f.endswith(".d")] if os.path.isdir(deps) else []
    if not bins:
        raise Skip(f"the Rust workflow's bench is not built in {deps} (tests/cases/test_rust_workflow.py builds it)")
    exe = max(bins, key=os.path.getmtime)
    d = tmpdir()
    filt = os.path.join(d, "sftrace.filter")
    run([SFTRACE, "filter", "-p", exe, "-r", "Resolver>::resolve$|normalize", "-o", filt])
    log = os.path.join(d, "sf.log")
    record([exe, "--bench", "--test"], out=log, args=["-f", filt],
           env={"CRITERION_HOME": os.path.join(d, "criterion")})
    s = check_trace_processor(log)
    check(sum(n for (f, _, _), n in s.items() if f == "<importmap::engine::Resolver>::resolve") >= 4000,
          "resolve slices")
    check(len({t for _, _, t in s}) >= 2, "main thread and rayon workers")
    shutil.rmtree(d)
