"""Cutting traces: -c/--filter, --tid, --time, --min-duration and --max-depth
on every log-reading command (one stage in the shared input pipeline).
Exact counts on tests/fixtures/calls.c built without sibling calls, where
main -> outer -> middle -> leaf nest exactly; the cut outputs are checked
against what the uncut Chrome JSON of the same log predicts, frame by frame.

Runs under tests/run.py, or alone: python3 tests/cases/test_cuts.py."""
import collections
import json
import os
import re
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import (FIXBUILD, SFTRACE, build_c, calls_fixture, check, eq, perfetto_summary,  # noqa: E402
                   record, run, tmpdir, trace_processor)

# Entries per function of calls.c (see its top comment).
CALLS = {"leaf": 60, "middle": 20, "outer": 10, "recurse": 51, "tail_caller": 5, "tail_callee": 5,
         "thread_work": 8, "tleaf": 8000, "lib_add": 7, "lib_inner": 7, "deep": 21, "crash_here": 1, "main": 1}

_log = {}


def nosib(clock=None):
    """(executable, log) of calls.c without sibling calls, recorded once per
    clock. --min-duration judges durations net of the tracer's cost when the
    log has it, and convert gives recorded ones: cases that check the calls
    kept against convert's durations take the monotonic clock (cost not
    measured, so net is as recorded)."""
    if clock not in _log:
        calls_fixture()  # libcalls.so
        exe = build_c("calls_nosib", ["calls.c"], flags=["-fno-optimize-sibling-calls"],
                      libs=["-L" + FIXBUILD, "-lcalls", "-Wl,-rpath," + FIXBUILD, "-lpthread"])
        _, log = record([exe], env={"SFTRACE_CLOCK": clock} if clock else None)
        _log[clock] = (exe, log)
    return _log[clock]


def chrome(log, extra=()):
    """X events of `convert --type chrome` as dicts with int ns ts/dur."""
    out = os.path.join(tmpdir(), "t.json")
    p = run([SFTRACE, "convert", "--type", "chrome"] + list(extra) + [log, "-o", out])
    with open(out, encoding="utf-8") as fh:
        xs = [e for e in json.load(fh)["traceEvents"] if e["ph"] == "X"]
    for e in xs:
        e["ts"] = round(e["ts"] * 1000)
        e["dur"] = round(e["dur"] * 1000)
    return xs, p.stderr


def counts(xs):
    return dict(collections.Counter(e["name"] for e in xs))


def report_rows(log, extra=()):
    p = run([SFTRACE, "report", "--format", "tsv"] + list(extra) + [log])
    lines = p.stdout.splitlines()
    head = lines[0].split("\t")
    rows = {}
    for line in lines[1:]:
        r = dict(zip(head, line.split("\t")))
        rows[r["name"]] = {k: (v if k == "name" else int(v)) for k, v in r.items()}
    return rows


def start_mono(log):
    """The process start (CLOCK_MONOTONIC ns): what Chrome's ts is based on."""
    out = run([SFTRACE, "dump", log]).stdout
    return int(re.search(r"calibration: start tsc \d+ mono (\d+) ns", out).group(1))


def test_cut_max_depth():
    _, log = nosib()
    xs, err = chrome(log, ["--max-depth", "1"])
    eq(counts(xs), {"main": 1, "thread_work": 8}, "--max-depth 1: each thread's outermost calls")
    check("kept 9 of 8196 calls" in err, err)
    want2 = {"main": 1, "outer": 10, "recurse": 1, "tail_caller": 5, "lib_add": 7, "deep": 1,
             "thread_work": 8, "tleaf": 8000}
    eq(counts(chrome(log, ["--max-depth", "2"])[0]), want2, "--max-depth 2")
    eq({n: r["calls"] for n, r in report_rows(log, ["--max-depth", "2"]).items()}, want2, "report --max-depth 2")


def test_cut_tid():
    _, log = nosib()
    tids = sorted({e["tid"] for e in chrome(log)[0] if e["name"] == "thread_work"})
    eq(len(tids), 8, "worker threads")
    xs, _ = chrome(log, ["--tid", f"{tids[2]},{tids[5]}"])
    eq(counts(xs), {"thread_work": 2, "tleaf": 2000}, "--tid of two workers")
    eq({e["tid"] for e in xs}, {tids[2], tids[5]}, "only those threads")
    # dump shows the same cut as balanced ENTRY/EXIT lines.
    out = run([SFTRACE, "dump", "--tid", str(tids[2]), log]).stdout
    eq(len(re.findall(r" ENTRY +tleaf$", out, re.M)), 1000, "dump --tid: tleaf entries")
    eq(len(re.findall(r" EXIT +tleaf$", out, re.M)), 1000, "dump --tid: tleaf exits")
    check("cut: kept 1001 of 1001 calls" in out, out[-300:])
    # A tid of no thread: an empty output is said, not silent.
    xs, err = chrome(log, ["--tid", "1"])
    eq(xs, [], "--tid 1")
    check("the cut kept no call: --tid names no thread of the logs" in err, err)


def test_cut_filter_file():
    exe, log = nosib()
    d = tmpdir()
    flt = os.path.join(d, "sel.filter")
    run([SFTRACE, "filter", "-p", exe, "-r", "^(outer|leaf)$", "-o", flt])
    xs, err = chrome(log, ["-c", flt])
    eq(counts(xs), {"outer": 10, "leaf": 60}, "-c select: only the selected functions")
    # leaf hangs under outer now that middle is gone: outer's time is its own
    # plus its leaves'.
    rows = report_rows(log, ["--filter", flt])
    eq(rows["outer"]["self_ns"] + rows["leaf"]["total_ns"], rows["outer"]["total_ns"], "leaf reattached to outer")
    out = run([SFTRACE, "dump", "-c", flt, log]).stdout
    eq(len(re.findall(r"^ +\d+ +\d+ ENTRY      leaf$", out, re.M)), 60, "dump: leaf one level under outer")
    within = os.path.join(d, "within.filter")
    run([SFTRACE, "filter", "-p", exe, "-r", "^outer$", "--within", "-o", within])
    eq(counts(chrome(log, ["-c", within])[0]), {"outer": 10, "middle": 20, "leaf": 60}, "-c within: subtrees")
    # A filter for another program selects nothing: refused, naming it.
    other = build_c("nosleds_c", ["nosleds.c"], xray=False)
    run([SFTRACE, "filter", "-p", exe, "-r", "^outer$", "-o", os.path.join(d, "x.filter")])
    with open(os.path.join(d, "x.filter")) as fh:
        text = fh.read().replace(exe, other)
    text = re.sub(r"object [0-9a-f]+ ", "object - ", text)
    with open(os.path.join(d, "x.filter"), "w") as fh:
        fh.write(text)
    p = run([SFTRACE, "report", "-c", os.path.join(d, "x.filter"), log], check_rc=1)
    check("selects no function" in p.stderr and "x.filter" in p.stderr, p.stderr)
    eq(p.stdout, "", "no partial output")


def test_cut_min_duration():
    _, log = nosib("monotonic")
    full, _ = chrome(log)
    for dur_ns, arg in ((5000, "5us"), (100, "0.1us")):
        want = collections.Counter(e["name"] for e in full if e["dur"] >= dur_ns)
        xs, err = chrome(log, ["--min-duration", arg])
        eq(counts(xs), dict(want), f"--min-duration {arg}: the calls that long")
        check(f"kept {sum(want.values())} of 8196 calls" in err, err)
        # Kept calls keep their exact times.
        eq(sorted((e["tid"], e["ts"], e["dur"]) for e in xs),
           sorted((e["tid"], e["ts"], e["dur"]) for e in full if e["dur"] >= dur_ns), f"{arg}: exact times")
    check(counts(chrome(log, ["--min-duration", "5us"])[0]).get("tleaf", 0) < 100, "most 10 ns leaves dropped")


def window_case():
    """A window from the middle of the second worker's thread_work to the
    middle of the seventh's: main is cut at both edges, the two workers at
    one edge each. Returns (log, S, E, expected X events as tuples)."""
    _, log = nosib()
    full, _ = chrome(log)
    base = start_mono(log)
    works = sorted((e for e in full if e["name"] == "thread_work"), key=lambda e: e["ts"])
    a, b = works[1], works[6]
    s = a["ts"] - base + a["dur"] // 2
    e = b["ts"] - base + b["dur"] // 2
    want = []
    for x in full:
        t0, t1 = x["ts"] - base, x["ts"] - base + x["dur"]
        if not (t0 < e and (t1 > s or t0 >= s)):
            continue
        cut = ("start" if t0 < s else "") + ("end" if t1 > e else "")
        cut = {"startend": "both"}.get(cut, cut)
        c0, c1 = max(t0, s), min(t1, e)
        want.append((x["name"], x["tid"], c0 + base, c1 - c0, cut))
    return log, s, e, sorted(want)


def test_cut_time_window_balanced():
    log, s, e, want = window_case()
    xs, err = chrome(log, ["--time", f"{s}ns..{e}ns"])
    got = sorted((x["name"], x["tid"], x["ts"], x["dur"], x["args"].get("cut", "")) for x in xs)
    eq(got, want, "Chrome: every call overlapping the window, clipped at its edges")
    cuts = collections.Counter(w[4] for w in want)
    check(cuts["both"] == 1 and [w[0] for w in want if w[4] == "both"] == ["main"], cuts)
    check(cuts["start"] >= 1 and cuts["end"] >= 1, cuts)
    n_start, n_end = cuts["start"] + cuts["both"], cuts["end"] + cuts["both"]
    line = f"kept {len(want)} of 8196 calls, {n_start} cut at the window's start, {n_end} at its end"
    check(line in err, err)
    # report says so in its footer.
    out = run([SFTRACE, "report", "--raw-times", "--time", f"{s}ns..{e}ns", log]).stdout  # the window is on raw times
    check(line in out, out[-400:])
    # Perfetto: balanced on every track, same slices.
    pb = os.path.join(tmpdir(), "w.pb")
    run([SFTRACE, "convert", "--time", f"{s}ns..{e}ns", log, "-o", pb])
    summ = perfetto_summary(pb)
    eq(sum(summ["begins"].values()), len(want), "Perfetto slices")
    check(all(v == 0 for v in summ["balance"].values()), f"balanced: {summ['balance']}")
    # dump: the cut's events nest.
    out = run([SFTRACE, "dump", "--time", f"{s}ns..{e}ns", log]).stdout
    eq(len(re.findall(r"\(cut at the window's start\)$", out, re.M)), n_start, "dump marks")


def test_cut_perfetto_trace_processor():
    tp = trace_processor()
    log, s, e, want = window_case()
    d = tmpdir()
    pb = os.path.join(d, "w.pb.gz")
    run([SFTRACE, "convert", "--time", f"{s}ns..{e}ns", log, "-o", pb])
    q = os.path.join(d, "q.sql")
    with open(q, "w") as fh:
        fh.write("select (select count(*) from slice) n,"
                 " (select count(*) from slice join args using (arg_set_id) where key = 'debug.cut') cs,"
                 " (select count(*) from slice join args using (arg_set_id) where key = 'debug.cut_end') ce,"
                 " (select count(*) from stats where value > 0 and severity != 'info') bad,"
                 " (select count(*) from slice where dur < 0) neg;\n")
    out = run([tp, "-q", q, pb]).stdout.strip().splitlines()[-1]
    cuts = collections.Counter(w[4] for w in want)
    eq(out, f"{len(want)},{cuts['start'] + cuts['both']},{cuts['end'] + cuts['both']},0,0",
       "slices, cut annotations, no errors, no negative durations")


def test_cut_options_combine_and_flamegraph():
    _, log = nosib("monotonic")
    xs, _ = chrome(log, ["--max-depth", "1", "--min-duration", "5us"])
    full, _ = chrome(log, ["--max-depth", "1"])
    eq(counts(xs), dict(collections.Counter(e["name"] for e in full if e["dur"] >= 5000)), "depth and duration")
    svg = os.path.join(tmpdir(), "f.svg")
    run([SFTRACE, "flamegraph", "--max-depth", "1", log, "-o", svg])
    with open(svg, encoding="utf-8") as fh:
        text = fh.read()
    check("thread_work" in text and ">tleaf" not in text and "tleaf (" not in text, "flamegraph cut")


def test_cut_bad_values():
    _, log = nosib()
    for args, msg in ((["--time", "5..10"], "needs a unit"), (["--time", "2ms..1ms"], "must come after"),
                      (["--time", "5ms"], "START..END"), (["--min-duration", "abc"], "not a duration"),
                      (["--max-depth", "0"], "--max-depth"), (["--tid", "x"], "--tid"),
                      (["--names", "tiny"], "--names")):
        for cmd in (["report"], ["dump"], ["convert", "-o", os.path.join(tmpdir(), "x.pb")]):
            p = run([SFTRACE] + cmd + args + [log], check_rc=2)
            check(msg in p.stderr, f"{cmd} {args}: {p.stderr}")
    p = run([SFTRACE, "convert", "-c", "/nonexistent.filter", log, "-o", os.path.join(tmpdir(), "x.pb")],
            check_rc=1)
    check("/nonexistent.filter" in p.stderr, p.stderr)


if __name__ == "__main__":
    sfkit.main(globals())
