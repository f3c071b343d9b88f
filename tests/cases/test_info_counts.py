"""`sftrace info`'s counters agree with what the other reading commands say
of the same logs: its per-process frames and "repaired" counts add up to
report's footer and the "repaired: ..." notice (frames begun before a
ring's window included; a cut says what it kept), and
each notice is printed once per command, also by the commands that read two
recordings (report --diff). Two breaks found tracing Lua 5.4's test
suite: a landing below a ring's window start (fixed), and the warnings a
ring log gives after a trigger's snapshots (a known break).

Runs under tests/run.py."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sfkit  # noqa: E402
from sfkit import SFTRACE, eq, run  # noqa: E402


def _repaired_lines(text):
    return re.findall(r"^# repaired +: (.*)$", text, re.M)


def test_info_repairs_per_process_add_up_to_the_notice():
    """A parent and its forked child each longjmp out of nested calls
    (tests/fixtures/info_repairs_fork.c): 3 frames abandoned in the parent,
    2 in the child."""
    prog = sfkit.build_c("info_repairs_fork", ["info_repairs_fork.c"])
    _, log = sfkit.record([prog], args=["-q"])
    d = os.path.dirname(log)
    eq(_repaired_lines(run([SFTRACE, "info", d]).stdout),
       ["3 frames closed by unwinding, 0 open at thread end", "2 frames closed by unwinding, 0 open at thread end"],
       "info's repaired lines, parent then child")
    procs = json.loads(run([SFTRACE, "info", "--format", "json", d]).stdout)["processes"]
    none = {"unmatched_exits": 0, "unwound": 0, "open_at_end": 0, "open_at_snapshot": 0, "open_at_pause": 0,
            "clamped": 0, "before_window": 0}
    eq([(p["unwound"], p["repairs"]) for p in procs], [(3, dict(none, unwound=3)), (2, dict(none, unwound=2))],
       "info's JSON repairs")
    rep = run([SFTRACE, "report", d])
    eq(re.findall(r"repaired: .*", rep.stdout + rep.stderr), ["repaired: 5 frames closed by unwinding"],
       "report's notice")
    eq(json.loads(run([SFTRACE, "report", "--format", "json", d]).stdout)["repairs"], dict(none, unwound=5),
       "report's JSON repairs: the same kinds, summed")
    # A cut: frames as recorded (report's footer counts them), and what it kept.
    text = run([SFTRACE, "info", "--max-depth", "1", d]).stdout
    eq(re.findall(r"^# frames +: (.*)$", text, re.M), ["4 (1 kept by the cut)", "2 (1 kept by the cut)"], "info text")
    procs = json.loads(run([SFTRACE, "info", "--format", "json", "--max-depth", "1", d]).stdout)["processes"]
    eq([(p["frames"], p["frames_kept"]) for p in procs], [(4, 1), (2, 1)], "info JSON")
    footer = run([SFTRACE, "report", "--max-depth", "1", d]).stdout.splitlines()[-1]
    eq(re.sub(r"\d+(\.\d+)? [mu]?s traced", "T traced", footer),
       "9 events, 6 frames, 2 threads, 2 processes, T traced; repaired: 5 frames closed by unwinding; "
       "cut: kept 2 of 6 calls", "report's footer")


def test_info_repairs_count_frames_begun_before_the_ring_window():
    """A 200,000-call flood under --ring 128K: main and flood began before
    the ring's window (tests/fixtures/skep28s_ringfill.c)."""
    prog = sfkit.build_c("skep28s_ringfill", ["skep28s_ringfill.c"])
    _, log = sfkit.record([prog], args=["-q", "--ring", "128K"])
    eq(_repaired_lines(run([SFTRACE, "info", log]).stdout),
       ["0 frames closed by unwinding, 0 open at thread end, 2 began before the ring's window"], "info text")
    p = json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)["processes"][0]
    eq((p["repairs"]["before_window"], p["unwound"], p["open_at_end"]), (2, 0, 0), "info JSON")
    eq(json.loads(run([SFTRACE, "report", "--format", "json", log]).stdout)["repairs"]["before_window"], 2,
       "report JSON")
    for cmd in (["report"], ["replay", "--no-pager"], ["graph"]):
        out = run([SFTRACE] + cmd + [log])
        eq(re.findall(r"repaired: .*", out.stdout + out.stderr), ["repaired: 2 frames began before the ring's window"],
           f"{cmd[0]}'s notice")


def test_report_diff_gives_one_notice_for_both_sides():
    """report --diff of a recording with 3 frames unwound
    (tests/fixtures/skep28s_unwind.c) against a ring recording whose window
    cut 2: one "repaired:" line and one "cut:" line, each side's part named."""
    unwind = sfkit.build_c("skep28s_unwind", ["skep28s_unwind.c"])
    _, old = sfkit.record([unwind], args=["-q"])
    ring = sfkit.build_c("skep28s_ringfill", ["skep28s_ringfill.c"])
    _, new = sfkit.record([ring], args=["-q", "--ring", "128K"])
    p = run([SFTRACE, "report", "--diff", old, new])
    eq(p.stderr, "sftrace: repaired: old: 3 frames closed by unwinding; new: 2 frames began before the ring's window\n",
       "report --diff's stderr")
    eq(p.stdout.count("repaired"), 0, "no notice on stdout")
    p = run([SFTRACE, "report", "--diff", "--max-depth", "1", new, old])
    eq(p.stderr, "sftrace: repaired: old: 2 frames began before the ring's window; new: 3 frames closed by unwinding\n"
                 "sftrace: cut: old: kept 1 of 7726 calls; new: kept 1 of 8 calls\n", "with a cut")
    eq(run([SFTRACE, "report", "--diff", "-q", old, new]).stderr, "", "-q")


def test_ring_landing_below_frames_begun_before_the_window():
    """tests/fixtures/ring_deep_landing.c: the window starts 1,002 frames
    deep; a longjmp leaves 302 open (the runtime's UNWIND_TO says so) and
    main and the 301 landing() frames then exit in the window. The reader
    places them at the window's start at the depths it found them (the
    700 deep() frames it never saw sit above them), so the landing closes
    none of them and every exit matches. Before, placed frames were taken
    as the innermost: the landing closed all 302 and their exits were
    dropped (found on Lua 5.4's calls.lua under --ring 256K --trigger
    luaD_throw: a snapshot with 330 unmatched exits dropped and 835 frames
    closed by unwinding, now 0 and 795)."""
    prog = sfkit.build_c("ring_deep_landing", ["ring_deep_landing.c"])
    _, log = sfkit.record([prog], args=["-q", "--ring", "128K"])
    dump = run([SFTRACE, "dump", log]).stdout
    eq(re.findall(r"UNWIND +(.*)", dump), ["0 frames abandoned, depth 302 left"], "dump's landing")
    p = run([SFTRACE, "report", log])
    eq(re.findall(r"repaired: .*", p.stdout), ["repaired: 302 frames began before the ring's window"],
       "report's repairs")
    eq(_repaired_lines(run([SFTRACE, "info", log]).stdout),
       ["0 frames closed by unwinding, 0 open at thread end, 302 began before the ring's window"], "info's")


def _ring_log_warnings(trigger):
    """report's warnings on skep28s_ringfill's own log (exits normally)
    recorded with --ring 128K and the trigger options, paths and offsets
    taken out."""
    prog = sfkit.build_c("skep28s_ringfill", ["skep28s_ringfill.c"])
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    sfkit.record([prog], out=log, args=["-q", "--ring", "128K"] + trigger)
    return re.sub(r"/\S+: |offset \d+", "", run([SFTRACE, "report", log]).stderr)


def test_ring_log_after_trigger_snapshots_reads_without_warnings():
    """tests/fixtures/skep28s_ringfill.c exits normally; its own log, next
    to the snapshots a trigger took, warned on every reading command, as if
    the file were damaged: 2 "free slot ... holds data" with --max-snapshots
    2 (found on Lua 5.4's calls.lua with --ring 256K --trigger luaD_throw: 4).
    In a ring log a free slot keeps its records by design: a snapshot's
    frozen batches are made free by their serial alone (runtime/buffer.c)."""
    eq(_ring_log_warnings(["--trigger", "empty", "--max-snapshots", "2"]), "",
       "report's warnings on the process's log, --trigger empty --max-snapshots 2")


def test_ring_log_after_a_lapped_freeze_reads_without_warnings():
    """The same program with --trigger flood (one snapshot at flood's entry,
    then 400K events through a 2-slot ring while the snapshot is written):
    the process's own log holds main's frozen batch of the first lap beside
    its newest run, which the reader leaves out with a warning meant for a
    process that died during a freeze. docs/DESIGN.md "Snapshots": a log
    never holds two laps of one thread."""
    eq(_ring_log_warnings(["--trigger", "flood"]), "", "report's warnings on the process's log, --trigger flood")