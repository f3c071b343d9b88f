"""Times net of the tracer (issue 28 item 7): the runtime measures its own
cost per traced call at start and the log keeps it; report, replay and
graph take it off by default and say so, --raw-times gives times as
recorded; logs without the figure read as recorded, with no note."""
import json
import os
import re

from sfkit import SFTRACE, build_c, check, eq, realtime, record, run, tmpdir

N = 1000000


def report_json(log, extra=()):
    return json.loads(run([SFTRACE, "report", "--format", "json"] + list(extra) + [log]).stdout)


def row(doc, name):
    return next(r for r in doc["functions"] if r["name"] == name)


def test_parent_of_a_million_empty_calls_shows_its_untraced_time():
    # parent() only calls empty_child() N times. Untraced, the program
    # times its own loop; traced, the parent's self time as recorded holds
    # the tracer's part of every call (about 10 ns each here, 10 ms in
    # all), the net one must not. The machine is shared and loaded: the
    # least of ten untraced runs and the traced run closest to it, per call, within 10% or 1.5 ns (the
    # clock's and the machine's grain at ~1 ns a call); the raw figure is
    # several ns a call above that, so a reader that takes nothing off
    # fails.
    exe = build_c("net_parent", ["net_parent.c"])
    untraced = _untraced_per_call(exe)  # ~1 ms each
    net, raw = [], []
    for _ in range(3):
        log = _record([exe, str(N)])
        doc = report_json(log)
        eq(row(doc, "empty_child")["calls"], N, "calls of the child")
        check(doc["net_times"] is True, "net times by default")
        cost = doc["tracer_cost_ns"]
        check(0 < cost["caller"] < 1000 and 0 < cost["call"] < 1000, f"a measured cost: {cost}")
        net.append(row(doc, "parent")["self_ns"] / N)
        rawdoc = report_json(log, ["--raw-times"])
        check(rawdoc["net_times"] is False, "--raw-times says so")
        raw.append(row(rawdoc, "parent")["self_ns"] / N)
    # The run closest to untraced: under load one run's start-up
    # calibration can come out above or below what its loop then costs
    # (0.32 ns against 2.22 untraced once, at load 8); a reader that takes
    # nothing off, or always too much, is off in every run.
    best = min(net, key=lambda v: abs(v - untraced))
    tol = max(0.1 * untraced, 1.5)
    check(abs(best - untraced) <= tol,
          f"net self time per call {best:.2f} ns vs untraced {untraced:.2f} ns (raw {min(raw):.2f} ns)")
    check(min(raw) - untraced > tol, f"the raw figure shows the tracer's cost: {min(raw):.2f} vs {untraced:.2f} ns")


def _untraced_per_call(exe, *args):
    """The least of ten untraced runs' own timing of parent(), per call."""
    return min(int(run(realtime() + [exe, str(N)] + list(args)).stdout.split()[1]) for _ in range(10)) / N


def _record(cmd):
    """A timed run, recorded (sfkit.realtime)."""
    return record(cmd, args=["-q"], prefix=realtime())[1]


def test_net_times_one_level_down():
    # parent() calls middle() N times, middle() calls the empty child once:
    # two ENTRYs and two EXITs in a row. Untraced the whole loop costs U
    # per iteration; traced, the tracer's part is four events per
    # iteration, and a batch hand-off every 8,192 events (which, 8,192
    # being a multiple of 4, always lands in the same gap: middle's self
    # time, 28-121 ns a call when the hand-offs were left in). Net: the
    # whole loop within 10% or 3 ns (two traced calls at 1.5 ns each) of
    # U, and neither middle's nor parent's self time above U + 1.5 ns a
    # call (each is a part of U). The run closest to U for the first,
    # the least of the runs for the others (a preemption only adds).
    exe = build_c("net_parent", ["net_parent.c"])
    u = _untraced_per_call(exe, "nested")
    total, mid, par, raw_mid = [], [], [], []
    for _ in range(5):
        log = _record([exe, str(N), "nested"])
        doc = report_json(log)
        eq((row(doc, "middle")["calls"], row(doc, "empty_child")["calls"]), (N, N), "calls")
        total.append(row(doc, "parent")["total_ns"] / N)
        mid.append(row(doc, "middle")["self_ns"] / N)
        par.append(row(doc, "parent")["self_ns"] / N)
        raw_mid.append(row(report_json(log, ["--raw-times"]), "middle")["self_ns"] / N)
    best = min(total, key=lambda v: abs(v - u))
    got = {"loop": abs(best - u) <= max(0.1 * u, 3.0), "middle self": min(mid) <= u + 1.5,
           "parent self": min(par) <= u + 1.5, "raw middle self shows the tracer": min(raw_mid) > u + 1.5}
    eq(got, {k: True for k in got},
       f"per call, untraced loop {u:.2f} ns; net loop {[round(v, 2) for v in total]}, middle self "
       f"{[round(v, 2) for v in mid]}, parent self {[round(v, 2) for v in par]}; raw middle self "
       f"{[round(v, 2) for v in raw_mid]}")


def test_headers_say_so():
    exe = build_c("net_parent", ["net_parent.c"])
    p, log = record([exe, "1000"], args=["-q"])
    # with the cost's spread (record measures it at start and exit) and
    # what marks a figure whose net value the spread makes uncertain
    net_re = (r"# times net of the tracer's cost: \d+\.\d ns per call in the caller, \d+\.\d ns in the call, "
              r"each within \d+\.\d%; a figure marked < is as recorded \(net, it could be off by more than 10%\); "
              r"--raw-times for times as recorded")
    plain_net_re = (r"# times net of the tracer's cost: \d+\.\d ns per call in the caller, \d+\.\d ns in the call; "
                    r"--raw-times for times as recorded")
    raw_re = (r"# times as recorded \(--raw-times\); the tracer's cost: \d+\.\d ns per call in the caller, "
              r"\d+\.\d ns in the call")
    rep = run([SFTRACE, "report", log]).stdout.splitlines()
    check(re.fullmatch(net_re, rep[0]), f"report's first line: {rep[0]!r}")
    rep = run([SFTRACE, "report", "--raw-times", log]).stdout.splitlines()
    check(re.fullmatch(raw_re, rep[0]), f"report --raw-times's first line: {rep[0]!r}")
    rep = run([SFTRACE, "replay", "--no-pager", log]).stdout.splitlines()
    check(re.fullmatch(net_re, rep[0]), f"replay's first line: {rep[0]!r}")
    eq(rep[1], "# DURATION     TID      FUNCTION", "then the columns")
    rep = run([SFTRACE, "replay", "--no-pager", "--raw-times", log]).stdout.splitlines()
    check(re.fullmatch(raw_re, rep[0]), f"replay --raw-times's first line: {rep[0]!r}")
    rep = run([SFTRACE, "graph", "parent", log]).stdout.splitlines()
    check(re.fullmatch(net_re, rep[1]), f"graph's second line: {rep[1]!r}")
    rep = run([SFTRACE, "graph", "--raw-times", "parent", log]).stdout.splitlines()
    check(re.fullmatch(raw_re, rep[1]), f"graph --raw-times's second line: {rep[1]!r}")
    rep = run([SFTRACE, "report", "--diff", log, log]).stdout.splitlines()
    # --diff compares net figures and marks none: its note stays the plain one
    check(re.fullmatch("# old: " + plain_net_re[2:], rep[0]) and re.fullmatch("# new: " + plain_net_re[2:], rep[1]),
          f"report --diff's first lines: {rep[:2]!r}")
    # info gives the figures, the same as report's.
    cost = report_json(log)["tracer_cost_ns"]
    info = run([SFTRACE, "info", log]).stdout
    want = (f"# tracer cost       : {cost['caller']:.1f} ns per call in the caller, {cost['call']:.1f} ns in the "
            "call (measured at start; report, replay and graph take it off)\n")
    check(want in info, info)
    eq(json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)["processes"][0]["tracer_cost_ns"], cost,
       "info json")
    # The TSV stays as it was (scripts): the header row first.
    tsv = run([SFTRACE, "report", "--format", "tsv", log]).stdout.splitlines()
    eq(tsv[0], "func_id\tname\tcalls\ttotal_ns\tself_ns\tavg_ns\tmin_ns\tmax_ns", "tsv header")


def test_a_log_without_the_figure_reads_as_recorded():
    # A log whose header has no cost (older logs, the monotonic clock):
    # times as recorded, no note, --raw-times changes nothing.
    exe = build_c("net_parent", ["net_parent.c"])
    p, log = record([exe, "1000"], args=["-q"], env={"SFTRACE_CLOCK": "monotonic"})
    out = run([SFTRACE, "report", log]).stdout
    check(not out.startswith("#"), f"no note: {out[:200]!r}")
    eq(out, run([SFTRACE, "report", "--raw-times", log]).stdout, "the same with --raw-times")
    doc = report_json(log)
    check("net_times" not in doc, "no cost in the json")
    check("# tracer cost       : not measured (times are read as recorded)\n" in run([SFTRACE, "info", log]).stdout,
          "info says so")


def test_perfetto_and_parquet_keep_raw_times_and_carry_the_cost():
    # convert keeps the times as recorded: main's Parquet span is report's
    # --raw-times total; the cost rides along as metadata, the same
    # figures info gives (ps in Parquet, process labels in Perfetto): the
    # start's cost, its rounds' spread (start and exit) with the error it
    # bounds net figures by, and the exit's re-measure. Read back with
    # trace_processor (the labels are the process's args), polars and DuckDB.
    from sfkit import parquet_query, tp_rows
    exe = build_c("net_parent", ["net_parent.c"])
    p, log = record([exe, "1000"], args=["-q"])
    cost = report_json(log)["tracer_cost_ns"]
    info = json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)["processes"][0]
    eq(info["tracer_cost_ns"], cost, "info's cost is report's")
    spread, again, err = info["tracer_cost_spread_ns"], info["tracer_cost_exit_ns"], info["tracer_cost_error"]
    check(spread and again and 0 < spread["low"] <= spread["high"], f"a spread and an exit figure: {info}")
    d = tmpdir()
    pf = os.path.join(d, "t.perfetto")
    run([SFTRACE, "convert", "--type", "perfetto", log, "-o", pf])
    rows = tp_rows(pf, "select a.key, a.display_value from process p join args a using(arg_set_id) "
                       "where p.pid = %d and a.flat_key = 'chrome.process_label' order by a.key;" % info["pid"])
    eq(rows, [["chrome.process_label[0]", f"sftrace.tracer_cost_ns caller={cost['caller']:.1f} "
                                          f"call={cost['call']:.1f}"],
              ["chrome.process_label[1]", f"sftrace.tracer_cost_spread_ns low={spread['low']:.1f} "
                                          f"high={spread['high']:.1f} error={err:.4f}"],
              ["chrome.process_label[2]", f"sftrace.tracer_cost_exit_ns caller={again['caller']:.1f} "
                                          f"call={again['call']:.1f}"]], "Perfetto's process labels")
    out = os.path.join(d, "t.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    r = parquet_query("threads_query.mjs", out)
    th = r["threads"]
    eq(len(th), 1, "one thread")

    def near(ps, ns):
        return abs(ps / 1000 - ns) <= 0.051

    t = th[0]
    check(near(t["tracer_cost_caller_ps"], cost["caller"]) and near(t["tracer_cost_call_ps"], cost["call"]) and
          near(t["tracer_cost_low_ps"], spread["low"]) and near(t["tracer_cost_high_ps"], spread["high"]) and
          abs(t["tracer_cost_error_ppm"] / 1e6 - err) <= 0.00005 and
          near(t["tracer_cost_exit_caller_ps"], again["caller"]) and
          near(t["tracer_cost_exit_call_ps"], again["call"]), f"polars reads Parquet's figures {t} vs {info}")
    eq(r["duck_cost"], [[info["pid"], t["tracer_cost_low_ps"], t["tracer_cost_high_ps"], t["tracer_cost_error_ppm"],
                         t["tracer_cost_exit_caller_ps"], t["tracer_cost_exit_call_ps"]]], "DuckDB reads the same")


def _kept(cmd):
    """The N of "cut: kept N of M calls" a reading command says."""
    p = run(cmd)
    m = re.search(r"cut: kept (\d+) of \d+ calls", p.stdout + p.stderr)
    check(m, f"{cmd}: no 'cut: kept' line:\n{p.stdout[-500:]}{p.stderr}")
    return int(m.group(1))


def test_min_duration_judges_one_clock_in_every_command():
    # One rule: --min-duration judges durations net of the tracer wherever
    # the log has its cost, in every command, whatever the times it shows
    # (convert, query, flamegraph and dump keep recorded times); --raw-times, in
    # the commands that have it, judges the recorded ones. parent() makes
    # 20,000 empty calls: recorded it lasts several times what it lasts net,
    # and the threshold lies between the two.
    exe = build_c("net_parent", ["net_parent.c"])
    p, log = record([exe, "20000"], args=["-q"])
    net = row(report_json(log), "parent")["total_ns"]
    raw = row(report_json(log, ["--raw-times"]), "parent")["total_ns"]
    check(net * 2 < raw, f"parent's net {net} ns and recorded {raw} ns too close to test")
    thr = ["--min-duration", f"{int((net * raw) ** 0.5)}ns"]
    d = tmpdir()
    net_cmds = {"replay": [SFTRACE, "replay", "--no-pager"] + thr + [log],
                "report": [SFTRACE, "report"] + thr + [log],
                "graph": [SFTRACE, "graph"] + thr + [log],
                "convert": [SFTRACE, "convert"] + thr + [log, "-o", os.path.join(d, "t.pb")],
                "query": [SFTRACE, "query"] + thr + [log, "select count(*) from frames"],
                "flamegraph": [SFTRACE, "flamegraph"] + thr + [log, "-o", os.path.join(d, "f.svg")],
                "dump": [SFTRACE, "dump"] + thr + [log]}
    kept = {k: _kept(c) for k, c in net_cmds.items()}
    raw_kept = {k: _kept(net_cmds[k][:2] + ["--raw-times"] + net_cmds[k][2:]) for k in ("replay", "report", "graph")}
    eq((set(kept.values()), set(raw_kept.values())), ({kept["replay"]}, {raw_kept["replay"]}),
       f"calls kept, net {kept}, --raw-times {raw_kept}")
    # Which clock: parent is kept only on the recorded one (with a child
    # when a batch hand-off's wait made one of its calls that long).
    got = [_replay_calls(log, thr), _replay_calls(log, thr + ["--raw-times"])]
    eq([any(c.startswith("parent()") for c in calls) for calls in got], [False, True],
       f"parent() in the replay, net and --raw-times: {got}")


def _replay_calls(log, extra):
    """replay -f none's call column, header lines left out."""
    out = run([SFTRACE, "replay", "--no-pager", "-f", "none"] + list(extra) + [log]).stdout
    return [ln.strip() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
