"""Skeptic's cases for issue 25 (landings from the shadow stack, the
runtime's own allocations, constructors of dlopen'd objects): programs
written to break the claims in claims-25, not taken from the developers'
tests. Cases marked FAILS NOW reproduce a break on the main they were
written against (602fa27).

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25.py."""
import os
import re
import statistics
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import SFTRACE, build_c, check, eq, record, run, tmpdir  # noqa: E402

ANY_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(ENTRY|EXIT|TAIL|UNWIND)\s+(?:\[depth \d+\] )?(.*?)\s*$")


def dump_all(log):
    """(kind, name) of every event, UNWIND included (name is then the count
    of frames it closes), and the dump's warnings."""
    p = run([SFTRACE, "dump", log])
    events = []
    for line in p.stdout.splitlines():
        m = ANY_RE.match(line)
        if m:
            kind, rest = m.group(3), m.group(4).strip()
            events.append((kind, int(rest.split()[0]) if kind == "UNWIND" else rest))
    return events, p.stderr


def replay(events):
    """Replays events on one thread's stack. Returns (stack left, list of the
    frames left on top after each UNWIND, list of exits whose name did not
    match the innermost frame)."""
    st, tops, bad = [], [], []
    for kind, x in events:
        if kind == "ENTRY":
            st.append(x)
        elif kind == "UNWIND":
            check(x <= len(st), f"UNWIND closes {x} frames, {len(st)} open")
            del st[len(st) - x:]
            tops.append(st[-1] if st else None)
        else:
            top = st.pop() if st else None
            if top != x:
                bad.append((kind, x, top))
    return st, tops, bad


def test_siglongjmp_from_timer_handler_closes_exactly_the_open_frames():
    """FAILS NOW. A SIGALRM timer interrupts fib anywhere, the tracer's
    trampolines included, and the handler siglongjmps back to loop(). Seen:
    an UNWIND closing one frame more than the trace has open above loop (the
    entry trampoline pushed its shadow entry, then was interrupted before
    recording the ENTRY), and a claimed but never written record (the
    trampoline was interrupted between its xadd and its store) at which the
    reader stops reading the thread: every later event is gone, yet dump
    says "0 lost"; main and loop never exit."""
    exe = build_c("skep25_sigjmp", ["skep25_sigjmp.c"])
    rounds = 60
    p, log = record([exe, str(rounds)], args=["-q"])
    eq(p.stdout, f"{rounds}\n", "the program's output")
    events, err = dump_all(log)
    unwinds = [x for k, x in events if k == "UNWIND"]
    eq(len(unwinds), rounds, "one UNWIND per landing (each abandons at least on_alarm)")
    st, tops, bad = replay(events)
    eq(set(tops), {"loop"}, "after every landing loop() is the innermost open frame")
    eq(bad, [], "exits match their frames")
    eq(st, [], "main and loop closed by their own exits")
