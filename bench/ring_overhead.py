#!/usr/bin/env python3
"""Flight-recorder cost per event: record --ring against normal recording,
and what a trigger costs the functions that are not triggers.

bench/fib.c (every call an instrumented entry and exit, nothing else) runs
untraced, under `record`, under `record --ring 1M`, and under
`record --ring 1M --trigger '^main$>3600s'` (main is a trigger that never
fires: its two events take the slow path and the trigger table is live; fib
is not a trigger and keeps the fast path). Runs are interleaved
round-robin; the table gives the median and range of ns per event over the
untraced run's median (the program's own timing of the recursion, so
start-up and exit are not counted).

    nice python3 bench/ring_overhead.py [--n 30] [--runs 7]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SFTRACE = os.path.join(ROOT, "build", "sftrace")
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
from record_overhead import NOSIB, XRAY, fib_calls  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    subprocess.run(["make", "-s", "-C", ROOT, "all"], check=True)
    with tempfile.TemporaryDirectory(prefix="sftrace-ringbench.") as w:
        exe = os.path.join(w, "fib")
        subprocess.run(["clang"] + XRAY + NOSIB + ["-fnoxray-link-deps", "-o", exe, os.path.join(HERE, "fib.c")],
                       check=True)
        events = 2 * fib_calls(a.n) + 2  # fib's calls, main's entry and exit
        rec = [SFTRACE, "record", "-q", "--force"]
        modes = {
            "untraced": [],
            "record": rec + ["-o", os.path.join(w, "n.log"), "--"],
            "record --ring 1M": rec + ["--ring", "1M", "-o", os.path.join(w, "r.log"), "--"],
            "--ring 1M --trigger '^main$>3600s'": rec + ["--ring", "1M", "--trigger", "^main$>3600s", "-o",
                                                          os.path.join(w, "t.log"), "--"],
        }
        times = {m: [] for m in modes}
        sizes = {}
        for _ in range(a.runs):
            for m, pre in modes.items():
                p = subprocess.run(pre + [exe, str(a.n)], capture_output=True, text=True, check=True)
                times[m].append(int(re.search(r"work_ns (\d+)", p.stdout).group(1)))
                if pre:
                    sizes[m] = os.path.getsize(pre[pre.index("-o") + 1])
        base = statistics.median(times["untraced"])
        print(f"fib({a.n}): {events} events, {a.runs} runs each, interleaved")
        print(f"{'mode':36} {'ns/event median':>16} {'range':>16} {'log bytes':>12}")
        for m in modes:
            per = [(t - base) / events for t in times[m]]
            print(f"{m:36} {statistics.median(per):16.2f} {min(per):7.2f}..{max(per):<7.2f} {sizes.get(m, 0):12}")


if __name__ == "__main__":
    sys.exit(main())
