"""Landings that abandon a trampoline's claim, many more of them than the
quarantine of issue 25 could hold (255 slots, about 9,000 landings, after
which the thread dropped every event): a timer signals the thread every
20 us while it runs recorded calls and the handler siglongjmps out. A
slot whose batch got pads for abandoned claims is used again by its
thread, each batch stepping over the pads (docs/DESIGN.md, "Signal
handlers that fill the buffer"), so the thread records every call.

Runs under tests/run.py, or alone: python3 tests/cases/test_landing_skips.py."""
import collections
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import build_c, check, eq, record  # noqa: E402

EV_RE = re.compile(r"^\s*\d+\s+\d+\s+(ENTRY|EXIT|TAIL|UNWIND)\s+(?:\[depth \d+\] )?\s*(\S+)")
# EV_RE over a block of lines at once (its spaces stay on their line).
EV_LINES_RE = re.compile(EV_RE.pattern.replace(r"\s", r"[^\S\n]"), re.M)
AFTER = 1000


def check_run(n, writer):
    exe = build_c("landing_skips", ["landing_skips.c"], flags=["-fno-optimize-sibling-calls"])
    p, log = record([exe, str(n), str(AFTER), "20"], args=["-q", "--writer", writer], timeout=120)
    eq(p.stdout, f"landings {n} after {AFTER} sum {sum(3 * i + 2 for i in range(AFTER))}\n", "traced output")
    # One dump for the summary and the events: EV_RE on each line of it.
    evs = []
    info = sfkit.dump_info(log, events=True, scan=lambda block: evs.extend(EV_LINES_RE.findall(block)))
    eq((info["summary"]["lost"], info["summary"]["dropped"]), (0, 0), "(lost, dropped)")
    eq(sum(1 for k, _ in evs if k == "UNWIND"), n, "UNWIND events: one a landing")
    last = max(i for i, (k, _) in enumerate(evs) if k == "UNWIND")
    tail = collections.Counter(evs[last + 1:])
    # After the landings: loop's EXIT, then after() and its leaf() AFTER
    # times each, then main's EXIT.
    eq((tail[("ENTRY", "after")], tail[("EXIT", "after")], tail[("ENTRY", "leaf")], tail[("EXIT", "leaf")]),
       (AFTER,) * 4, "after/leaf ENTRY/EXIT after the last landing")
    eq((tail[("EXIT", "loop")], tail[("EXIT", "main")]), (1, 1), "loop's and main's EXIT")
    check(evs[-1] == ("EXIT", "main"), f"last event {evs[-1]}")


def test_landing_skips_15000_landings_keep_recording():
    check_run(15000, "sync")


def test_landing_skips_with_writer_thread():
    check_run(10000, "thread")


if __name__ == "__main__":
    sfkit.main(globals())
