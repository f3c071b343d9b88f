"""Skeptic's pass 28s on issue 28 (replay, graph, info, net times, Perfetto
at depth, folded names, thread labels): programs written to break the
claims (fixtures tests/fixtures/skep28s_*), not taken from the developers'
tests. Each case here failed when written; the lead decides which become
known breaks.

Runs under tests/run.py."""
import datetime
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sfkit  # noqa: E402



def _read(cmd):
    p = sfkit.run(cmd, check_rc=None)
    sfkit.eq(p.returncode, 0, f"{cmd} exit code; stderr {p.stderr}")
    return p


def _info_json(path):
    return json.loads(_read([sfkit.SFTRACE, "info", "--format", "json", path]).stdout)["processes"]


def test_info_started_of_a_forked_child_is_its_fork():
    # sftrace-info(1): "when it started (UTC)". The child is forked 300 ms
    # after the program's start; info gave it its parent's start to the ns
    # (the start words a forked child's log copies from its parent, FORMAT.md
    # offset 3352 has the fork time) in text and JSON.
    prog = sfkit.build_c("skep28s_forklate", ["skep28s_forklate.c"])
    p, log = sfkit.record([prog], args=["-q"])
    fork_ns = int(p.stdout)
    procs = _info_json(os.path.dirname(log))
    sfkit.eq(len(procs), 2, "processes")
    pids = {pr["pid"] for pr in procs}
    child = next(pr for pr in procs if pr["ppid"] in pids)
    parent = next(pr for pr in procs if pr is not child)
    sfkit.eq(child["ppid"], parent["pid"], "child's ppid")
    sfkit.check(parent["start_realtime_ns"] < fork_ns - 250_000_000, f"parent start {parent['start_realtime_ns']}")
    text = _read([sfkit.SFTRACE, "info", os.path.dirname(log)]).stdout
    started = re.findall(r"^# started +: (.*) UTC$", text, re.M)
    fork_utc = datetime.datetime.fromtimestamp(fork_ns // 10**9, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    got = {"child start_realtime_ns >= fork - 1 ms": child["start_realtime_ns"] >= fork_ns - 1_000_000,
           "text started lines differ": len(set(started)) == 2}
    sfkit.eq(got, {"child start_realtime_ns >= fork - 1 ms": True, "text started lines differ": True},
             f"info of a child forked at {fork_ns} ({fork_utc}): child {child['started']}, "
             f"parent {parent['started']}")


def test_replay_threads_merged_in_time_order_for_calls_with_callees():
    # sftrace-replay(1): "the threads of a process are merged in time order";
    # only a call without callees "is written when it ends, so it can come
    # after another thread's lines that began later". main() { began before
    # the thread existed but was printed after all of the thread's lines (its
    # brace waits for main's next event, after the join).
    prog = sfkit.build_c("skep28s_order", ["skep28s_order.c"], libs=["-lpthread"])
    _, log = sfkit.record([prog], args=["-q"])
    out = sfkit.replay_text(log, ["--raw-times", "-f", "tid,time"])
    rows = [(float(m.group(1)), m.group(2).strip())
            for m in re.finditer(r"^ \[\s*\d+\]\s+(\d+\.\d+) \| (.*)$", out, re.M)]
    sfkit.eq([c for _, c in rows][:1], ["main() {"], f"first line of the replay:\n{out}")
    opens = [t for t, c in rows if c.endswith("{") or c.startswith("}")]
    sfkit.eq(opens, sorted(opens), f"times of the brace lines in print order:\n{out}")


def test_net_self_time_of_a_function_that_calls_one_tiny_function():
    # Issue 28: "A function that makes a million tiny calls shows the tracer's
    # cost of those calls as its own self time" ... "report, replay and graph
    # show times net of that cost". one() makes 1M tiny calls (one per call of
    # it); untraced its self time is a call and a return. Net, report gave it
    # 28-97 ms (37 ns a call, raw 67 ns; the measured figures are ~15 + ~15
    # ns): the trampolines cost more between two ENTRYs and two EXITs than in
    # the ENTRY/EXIT pairs the calibration loop times.
    # (Fixed: the cause was the batch hand-offs, every 8,192 events, all in
    # one()'s self time, DESIGN.md "Times net of the tracer". The least of
    # three runs at a real-time priority: a preemption by another job only
    # adds, and lands in one()'s self time half the time.)
    prog = sfkit.build_c("skep28s_nested_net", ["skep28s_nested_net.c"])
    per_call = []
    for _ in range(3):
        _, log = sfkit.record([prog], args=["-q"], prefix=sfkit.realtime())
        out = _read([sfkit.SFTRACE, "report", "--format", "json", log]).stdout
        fns = {f["name"]: f for f in json.loads(out)["functions"]}
        one = fns["one"]
        sfkit.eq(one["calls"], 1000000, "calls of one")
        per_call.append(one["self_ns"] / one["calls"])
    sfkit.check(min(per_call) < 10, f"one()'s net self time is {[round(v, 1) for v in per_call]} ns a call in three "
                                    f"runs; untraced it is a call and a return, a few ns")


def test_info_repaired_counts_frames_begun_before_the_ring_window():
    # sftrace-info(1): the counters include "frames repaired"; every other
    # command says "repaired: 2 frames began before the ring's window" for
    # this ring recording, info says 0 and 0 (text) and has no field (JSON).
    prog = sfkit.build_c("skep28s_ringfill", ["skep28s_ringfill.c"])
    _, log = sfkit.record([prog], args=["-q", "--ring", "128K"])
    rep = _read([sfkit.SFTRACE, "report", log])
    sfkit.check("repaired: 2 frames began before the ring's window" in rep.stdout, rep.stdout)
    text = _read([sfkit.SFTRACE, "info", log]).stdout
    line = re.search(r"^# repaired +: (.*)$", text, re.M).group(1)
    sfkit.check("2" in line and "window" in line,
                f"info's repaired line for a ring whose window cut 2 frames: {line!r}")


def test_repaired_notice_once_in_report_diff():
    # Issue 28: 'The "repaired: ..." notice is printed once per command, not
    # twice.' report --diff of a recording against itself printed the same
    # line twice, with nothing to tell OLD's from NEW's.
    prog = sfkit.build_c("skep28s_unwind", ["skep28s_unwind.c"])
    _, log = sfkit.record([prog], args=["-q"])
    p = _read([sfkit.SFTRACE, "report", log])
    sfkit.eq((p.stdout + p.stderr).count("repaired:"), 1, f"report (footer and stderr):\n{p.stdout}{p.stderr}")
    p = _read([sfkit.SFTRACE, "report", "--diff", log, log])
    sfkit.eq((p.stdout + p.stderr).count("repaired:"), 1, f"report --diff (stdout and stderr):\n{p.stdout}{p.stderr}")


def _kept(cmd):
    """The 'cut: kept N of M calls' a reading command says on stderr."""
    p = _read(cmd)
    m = re.search(r"cut: kept (\d+) of (\d+) calls", p.stdout + p.stderr)
    sfkit.check(m, f"{cmd}: no 'cut: kept' line:\n{p.stderr}")
    return int(m.group(1))


def test_min_duration_keeps_the_same_calls_in_every_command():
    # The man pages' CUTTING THE TRACE: "every output is cut the same way";
    # README: "--min-duration judges a call by its real duration". With a
    # threshold between parent()'s net and recorded durations, replay, graph
    # and report (net) dropped parent's 5 calls while convert, query and
    # flamegraph (recorded) kept them: on a 3,000-deep recursion, replay kept
    # 5,599 calls of 20,351 and convert 12,785 for --min-duration 20us.
    prog = sfkit.build_c("skep28s_mindur", ["skep28s_mindur.c"])
    _, log = sfkit.record([prog], args=["-q"])
    net = {f["name"]: f for f in json.loads(_read([sfkit.SFTRACE, "report", "--format", "json", log]).stdout)["functions"]}
    raw = {f["name"]: f for f in json.loads(_read([sfkit.SFTRACE, "report", "--format", "json", "--raw-times",
                                                   log]).stdout)["functions"]}
    lo, hi = net["parent"]["avg_ns"], raw["parent"]["avg_ns"]
    sfkit.check(lo * 1.2 < hi, f"parent's net average {lo} ns and recorded average {hi} ns too close to test")
    thr = f"{int((lo * hi) ** 0.5)}ns"
    d = sfkit.tmpdir()
    got = {"replay": _kept([sfkit.SFTRACE, "replay", "--no-pager", "--min-duration", thr, log]),
           "report": _kept([sfkit.SFTRACE, "report", "--min-duration", thr, log]),
           "convert": _kept([sfkit.SFTRACE, "convert", "--min-duration", thr, log, "-o", os.path.join(d, "t.pb")]),
           "query": _kept([sfkit.SFTRACE, "query", "--min-duration", thr, log, "select count(*) from frames"])}
    sfkit.eq(len(set(got.values())), 1, f"calls kept by --min-duration {thr} (parent: net {lo} ns, recorded "
                                         f"{hi} ns): {got}")


def test_replay_time_column_is_clock_monotonic():
    # sftrace-replay(1): "-f ... time (CLOCK_MONOTONIC when the line
    # happened)". After 1M traced calls the column, net of the tracer's cost
    # by default, ran tens of ms behind CLOCK_MONOTONIC (92 ms on a 3M-call
    # run); with --raw-times it agrees to within microseconds.
    prog = sfkit.build_c("skep28s_monotime", ["skep28s_monotime.c"])
    p, log = sfkit.record([prog], args=["-q"])
    mono = int(p.stdout) / 1e9
    got = {}
    for opt in ([], ["--raw-times"]):
        out = sfkit.replay_text(log, opt + ["-f", "time", "-F", "mark"])
        m = re.search(r"^\s*(\d+\.\d+) \| mark\(\);", out, re.M)
        sfkit.check(m, out)
        got[" ".join(opt) or "net"] = f"{round((float(m.group(1)) - mono) * 1e3):+d} ms"
    sfkit.eq(got, {"net": "+0 ms", "--raw-times": "+0 ms"},
             f"mark()'s time column within 1 ms of CLOCK_MONOTONIC read just before it ({mono:.9f})")
