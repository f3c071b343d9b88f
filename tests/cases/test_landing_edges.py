"""Landings the shadow stack alone cannot settle (issue 25, after the
skeptic's cases in test_skeptic25.py): every recorded frame abandoned on
the thread's own stack (no walk, exact counts), a jump to another stack
(nothing closed), and the fallback walk interrupted by a signal handler
that jumps out of it.

Runs under tests/run.py, or alone: python3 tests/cases/test_landing_edges.py."""
import collections
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import SFTRACE, build_c, eq, record, run, tmpdir  # noqa: E402

EV_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(ENTRY|EXIT|TAIL|UNWIND)\s+(?:\[depth \d+\] )?(.*?)\s*$")


def events(log):
    """(tid, kind, name or count of frames closed) of every event."""
    out = []
    for line in run([SFTRACE, "dump", log]).stdout.splitlines():
        m = EV_RE.match(line)
        if m:
            rest = m.group(4).strip()
            out.append((m.group(2), m.group(3), int(rest.split()[0]) if m.group(3) == "UNWIND" else rest))
    return out


def filtered(exe, regex, args, d):
    filt = os.path.join(d, "f.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", regex, "-o", filt])
    return record([exe] + args, out=os.path.join(d, "sf.log"), args=["-q", "-f", filt])


def test_every_recorded_frame_abandoned_in_threads_closes_exactly_them():
    """Only rec is recorded, not loop() that called setjmp: each landing
    pops every shadow entry of its thread (on the thread's own stack, so
    no walk). Thread t's k-th landing abandons (k % 5) + 1 rec frames: the
    UNWIND counts are exactly those, and no frame is left open."""
    exe = build_c("skep25_mtjmp", ["skep25_mtjmp.c"], libs=["-lpthread"])
    p, log = filtered(exe, "^rec$", ["2000", "2"], tmpdir())
    eq(p.stdout, "4000\n", "the program's output")
    ev = events(log)
    eq(sorted(collections.Counter(x for _, k, x in ev if k == "UNWIND").items()),
       [(1, 800), (2, 800), (3, 800), (4, 800), (5, 800)], "UNWIND counts")
    open_frames = collections.Counter()
    for tid, kind, x in ev:
        open_frames[tid] += 1 if kind == "ENTRY" else -x if kind == "UNWIND" else -1
    eq(set(open_frames.values()), {0}, "frames left open per thread")


def test_longjmp_to_another_stack_closes_nothing():
    """main (not recorded) switches to a coroutine on an mmap'd stack,
    where f -> g longjmp back to main's stack, three times. Every recorded
    frame lies below the target, but on another stack: the frames are not
    known to be abandoned, and no UNWIND closes them (as before the shadow
    stack: the walk never reached the target)."""
    exe = build_c("d25_costack", ["d25_costack.c"])
    p, log = filtered(exe, "^(f|g|marker)$", [], tmpdir())
    eq(p.stdout, "ok\n", "the program's output")
    eq([(k, x) for _, k, x in events(log)],
       [("ENTRY", "f"), ("ENTRY", "g")] * 3 + [("ENTRY", "marker"), ("EXIT", "marker")], "the events")


def test_signal_handler_jumping_out_of_the_fallback_walk():
    """Every landing abandons 601 recorded frames, more than the shadow
    stack holds, so each takes the fallback walk; a SIGALRM handler
    siglongjmps out of the rounds, often while a walk runs. The walk holds
    signals back (the handler runs just after it, recorded) and the thread
    keeps recording: every on_alarm call the program counted and all 1000
    marker() calls after the rounds are in the trace. (Before: the
    handler's jump left the thread suppressed; marker 0 of 1000.)"""
    exe = build_c("d25_sigdeep", ["d25_sigdeep.c"])
    p, log = record([exe, "20"], args=["-q"])
    rounds, alarms = (int(x) for x in p.stdout.split())
    eq(rounds, 20, "the program's rounds")
    entries = collections.Counter(x for _, k, x in events(log) if k == "ENTRY")
    eq((entries["marker"], entries["on_alarm"]), (1000, alarms), "marker and on_alarm entries")

