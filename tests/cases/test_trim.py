"""Record-time trimming: `record --min-duration DUR` and `--max-depth N`.

tests/fixtures/trim_calls.c (built without sibling calls, so depths are as
written) has calls of known depth, 3 ms or well under a microsecond, in 3
threads of about 7 batches each, so calls cross batch boundaries. The
runtime drops only what it can prove; the reader applies the exact rule to
everything it delivers, the raw slot tail of a crashed process included.

Runs under tests/run.py, or alone: python3 tests/cases/test_trim.py."""
import collections
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import (SFTRACE, build_c, check, chrome_slices, dump_events, dump_info, eq, parquet_query, perfetto_summary,  # noqa: E402
                   record, report_calls, run, tmpdir)

SLOW = {"worker", "slow_outer", "slow_inner"}   # 3 ms or more: always kept by --min-duration 1ms
FAST = {"mid", "inner", "leaf", "tiny"}          # well under 1 ms, unless a hand-off or preemption lands inside
THREADS = 3
# Calls per worker() by depth (see trim_calls.c).
DEPTH = {"worker": 1, "slow_outer": 2, "slow_inner": 3, "mid": 2, "inner": 3, "leaf": 4}
PER_WORKER = {"worker": 1, "slow_outer": 3, "slow_inner": 3, "mid": 2000, "inner": 2000, "leaf": 8000,
              "tiny": 17000}
_runs = {}


def fixture():
    return build_c("trim_calls", ["trim_calls.c"], flags=["-fno-optimize-sibling-calls"], libs=["-lpthread"])


def recorded(key, args=(), mode="threads"):
    """(CompletedProcess, log) of trim_calls MODE recorded with ARGS, once."""
    if key not in _runs:
        _runs[key] = record([fixture(), mode], args=list(args), check_rc=134 if mode == "abort" else 0)
    return _runs[key]


def by_name(calls):
    c = collections.Counter()
    for (_, name), n in calls.items():
        c[name] += n
    return dict(c)


def fast_bound(log):
    """How many short calls a loaded machine can make 1 ms long: four
    nested ones per buffer hand-off, and as many per preemption."""
    batches = sum(t["data"] + t["slots"] for t in dump_info(log)["threads"])
    return 4 * batches + 40


def check_balanced(log, want_slices):
    """Perfetto: balanced on every track, the same slices as Chrome JSON."""
    pb = os.path.join(tmpdir(), "t.pb")
    run([SFTRACE, "convert", log, "-o", pb])
    s = perfetto_summary(pb)
    check(all(v == 0 for v in s["balance"].values()), f"Perfetto balanced: {s['balance']}")
    eq(sum(s["begins"].values()), want_slices, "Perfetto slices")
    ch = chrome_slices(log)
    eq(sum(len(v) for v in ch.values()), want_slices, "Chrome slices")
    return ch


def test_trim_untrimmed_counts():
    p, log = recorded("full")
    calls, _ = report_calls(log)
    want = {k: v * THREADS for k, v in PER_WORKER.items()}
    want["main"] = 1
    eq(by_name(calls), want, "untrimmed calls")
    check("trimmed" not in p.stderr, p.stderr)


def test_trim_min_duration():
    p, log = recorded("min", ["--min-duration", "1ms"])
    m = re.search(r"(\d+) events, .*, (\d+) trimmed \(--min-duration/--max-depth\)", p.stderr)
    check(m and int(m.group(2)) > 100000, f"record says what the runtime trimmed: {p.stderr}")
    calls, rp = report_calls(log)
    got = by_name(calls)
    for name in SLOW:
        eq(got.get(name), PER_WORKER[name] * THREADS, f"{name}: every 3 ms call kept")
    eq(got.get("main"), 1, "main kept")
    fast = sum(got.get(n, 0) for n in FAST)
    # Only a call a buffer hand-off or a preemption made 1 ms long can stay
    # (with up to 3 callers in FAST around it); untrimmed there are 81000.
    check(fast <= fast_bound(log), f"short calls trimmed: {got}")
    check(re.search(r"cut: kept \d+ of \d+ calls \(recorded with --min-duration 1ms; the runtime left out \d+ "
                    r"records\)", rp.stderr), rp.stderr)
    ch = check_balanced(log, sum(got.values()))
    for tid, sl in ch.items():
        for b, e, name in sl:
            check(e - b >= 1000000, f"tid {tid}: {name} lasts {e - b} ns, under 1 ms")
    # Every worker's tid still has its worker frame: ancestors of kept calls stay.
    eq(sorted(collections.Counter(n for sl in ch.values() for _, _, n in sl if n == "worker").values()),
       [THREADS], "workers")


def test_trim_max_depth():
    p, log = recorded("depth", ["--max-depth", "3"])
    calls, rp = report_calls(log)
    want = {k: PER_WORKER[k] * THREADS for k, d in DEPTH.items() if d <= 3}
    want["main"] = 1
    eq(by_name(calls), want, "--max-depth 3: the calls at depth 1-3")
    check("(recorded with --max-depth 3;" in rp.stderr, rp.stderr)
    check_balanced(log, sum(want.values()))
    # The runtime dropped what it could prove deeper (tiny under slow_inner
    # and leaf), so fewer events reached the log.
    n = sum(t["events"] for t in dump_info(log)["threads"])
    full = sum(t["events"] for t in dump_info(recorded("full")[1])["threads"])
    check(n < full - 9000 * THREADS, f"{n} vs {full} events")


def test_trim_log_smaller():
    _, full = recorded("full")
    _, small = recorded("min", ["--min-duration", "1ms"])
    a, b = os.path.getsize(full), os.path.getsize(small)
    check(b < a * 0.6, f"trimmed log {b} bytes, untrimmed {a}")
    out = run([SFTRACE, "dump", small]).stdout
    check(re.search(r"^trimming: min duration 1000000 ns, max depth 0 \(0: off\); \d+ records left out",
                    out, re.M), out[:1200])


def test_trim_slot_tail_at_abort():
    """abort(): the last batch stays raw in the live slot, untrimmed by the
    runtime; every output still trims it exactly."""
    p, log = recorded("abort", ["--min-duration", "1ms"], mode="abort")
    check("aborting" in p.stdout, p.stdout)
    raw = collections.Counter(e.name for e in dump_events(log) if e.kind == "ENTRY")
    check(raw["mid"] > 0 and raw["tiny"] > 0, f"the raw tail holds short calls: {raw}")
    calls, rp = report_calls(log)
    got = by_name(calls)
    for name in SLOW:
        eq(got.get(name), PER_WORKER[name], f"{name}: kept")
    eq(got.get("main"), 1, "main kept (closed at the thread's end)")
    check(sum(got.get(n, 0) for n in FAST) <= fast_bound(log), f"short calls of the slot tail trimmed: {got}")
    check("1 open frame closed at thread end" in rp.stderr or "open frames closed" in rp.stderr, rp.stderr)
    check_balanced(log, sum(got.values()))


def test_trim_parquet_balanced():
    """Parquet (read back with polars): one begin and one end row per kept
    frame, the same counts as report."""
    _, log = recorded("depth", ["--max-depth", "3"])
    out = os.path.join(tmpdir(), "t.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    rows = parquet_query("threads_query.mjs", out)["rows"]
    kinds = collections.defaultdict(list)
    for frame_id, kind, _, _, _, _ in rows:
        kinds[frame_id].append(kind)
    check(all(sorted(k) == [1, 2] for k in kinds.values()), "every frame has one begin and one end")
    begins = collections.Counter(r[4] for r in rows if r[1] == 1)
    want = {k: PER_WORKER[k] * THREADS for k, d in DEPTH.items() if d <= 3}
    want["main"] = 1
    eq(dict(begins), want, "Parquet frames")


def test_trim_and_cut_compose():
    """A convert-time cut applies on top of the recorded trimming."""
    _, log = recorded("depth", ["--max-depth", "3"])
    calls, rp = report_calls(log, ["--max-depth", "2"])
    eq(by_name(calls), {"main": 1, "worker": 3, "slow_outer": 9, "mid": 6000}, "recorded 3, cut 2")
    # --raw-times: slow_inner spins 3 ms by the wall clock, so a hand-off
    # stall the net times take off (preemption included, on a loaded
    # machine) can leave it under 1 ms net (8 of 9 kept in 1 run of 5)
    calls, _ = report_calls(log, ["--min-duration", "1ms", "--raw-times"])
    eq({k: v for k, v in by_name(calls).items() if k in SLOW or k == "main"},
       {"main": 1, "worker": 3, "slow_outer": 9, "slow_inner": 9}, "recorded depth 3, cut 1ms")


def test_trim_child_processes():
    """An exec'd child inherits the trimming: both logs say so and both
    are trimmed (forker exec: main -> p_work; child main -> c_work x4)."""
    exe = build_c("forker", ["forker.c"])
    d = tmpdir()
    p, _ = record([exe, "exec"], out=os.path.join(d, "sf.log"), args=["--max-depth", "1"])
    check("forker exec ok 0" in p.stdout, p.stdout)
    logs = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))
    eq(len(logs), 2, "logs")
    for log in logs:
        check("trimming: min duration 0 ns, max depth 1 " in run([SFTRACE, "dump", log]).stdout, log)
    calls, _ = report_calls(d)
    eq(by_name(calls), {"main": 2}, "each process's outermost frame only")


def test_trim_bad_values():
    exe = fixture()
    for args, msg in ((["--min-duration", "fast"], "--min-duration: 'fast' is not a duration"),
                      (["--max-depth", "0"], "--max-depth"), (["--max-depth", "x"], "--max-depth")):
        p = run([SFTRACE, "record", "-o", os.path.join(tmpdir(), "sf.log")] + args + ["--", exe], check_rc=2)
        check(msg in p.stderr, p.stderr)
    # The runtime refuses a bad variable and stays off, saying why.
    p = run([exe], env={"LD_PRELOAD": os.path.join(os.path.dirname(SFTRACE), "libsftrace.so"),
                        "SFTRACE_OUTPUT_FILE": os.path.join(tmpdir(), "x.log"), "SFTRACE_MAX_DEPTH": "3x"})
    check("sftrace: SFTRACE_MAX_DEPTH is not a decimal number: 3x\n" in p.stderr, p.stderr)


if __name__ == "__main__":
    sfkit.main(globals())
