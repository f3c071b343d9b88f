"""`sftrace info`'s counters agree with what the other reading commands say
of the same logs: its per-process "repaired" counts add up to the
"repaired: ..." notice (frames begun before a ring's window included), and
each notice is printed once per command, also by the commands that read two
recordings (report --diff, memory --diff).

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
    keys = ("unwound", "open_at_end", "open_at_snapshot_end", "in_flight_at_pause", "before_window",
            "unmatched_exits", "backward_timestamps")
    eq([[p[k] for k in keys] for p in procs], [[3, 0, 0, 0, 0, 0, 0], [2, 0, 0, 0, 0, 0, 0]], "info's JSON repairs")
    rep = run([SFTRACE, "report", d])
    eq(re.findall(r"repaired: .*", rep.stdout + rep.stderr), ["repaired: 5 frames closed by unwinding"],
       "report's notice")


def test_info_repairs_count_frames_begun_before_the_ring_window():
    """A 200,000-call flood under --ring 128K: main and flood began before
    the ring's window (tests/fixtures/skep28s_ringfill.c)."""
    prog = sfkit.build_c("skep28s_ringfill", ["skep28s_ringfill.c"])
    _, log = sfkit.record([prog], args=["-q", "--ring", "128K"])
    eq(_repaired_lines(run([SFTRACE, "info", log]).stdout),
       ["0 frames closed by unwinding, 0 open at thread end, 2 began before the ring's window"], "info text")
    p = json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)["processes"][0]
    eq((p["before_window"], p["unwound"], p["open_at_end"]), (2, 0, 0), "info JSON")
    for cmd in (["report"], ["replay", "--no-pager"], ["graph"]):
        out = run([SFTRACE] + cmd + [log])
        eq(re.findall(r"repaired: .*", out.stdout + out.stderr), ["repaired: 2 frames began before the ring's window"],
           f"{cmd[0]}'s notice")
