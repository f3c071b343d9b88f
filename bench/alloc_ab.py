#!/usr/bin/env python3
"""A heap event's time under two or more builds, side by side (bench/README.md,
"Allocation tracing"): `alloc_bench flat N` (N malloc(32)/free pairs in one
traced call, heap events only) under `record --alloc` of each build and
untraced, in a shuffled order each round, the fixture's own clock
(ALLOC_BENCH_CLOCK=thread: the loop's thread CPU time).

    python3 bench/alloc_ab.py [--rounds 21] [--n 2000000] SFTRACE [SFTRACE...]

Per build: heap event = (flat --alloc - flat untraced) / 2N, median and
each round's figure; with two builds, also the second's over the first's
round by round (the same round's untraced run for both) and their median:
on a shared machine the rounds swing by a third, the paired ratio less.
Instructions, which load does not move: bench/alloc_instructions.py
--sftrace."""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    p = subprocess.run(cmd, env=dict(os.environ, ALLOC_BENCH_CLOCK="thread"), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-2000:]}")
    return int([line for line in p.stdout.splitlines() if line.strip().isdigit()][-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--n", type=int, default=2000000)
    ap.add_argument("sftrace", nargs="+", help="sftrace binaries (their libraries are next to them)")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sf-alloc-ab-")
    exe, log = os.path.join(d, "alloc_bench"), os.path.join(d, "sf.log")
    subprocess.run(["clang", "-O2", "-g", "-fno-builtin", "-fxray-instrument", "-fxray-instruction-threshold=1",
                    "-fnoxray-link-deps", "-o", exe, os.path.join(ROOT, "bench", "alloc_bench.c")], check=True)
    cmds = {"untraced": [exe, "flat", str(a.n)]}
    for i, sf in enumerate(a.sftrace):
        cmds[i] = [sf, "record", "-q", "--force", "--alloc", "-o", log, "--", exe, "flat", str(a.n)]
    res = {k: [] for k in cmds}
    for _ in range(a.rounds):
        order = list(cmds)
        random.shuffle(order)
        for k in order:
            res[k].append(run(cmds[k]))
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)
    u = res["untraced"]
    per = {i: [(res[i][r] - u[r]) / (2 * a.n) for r in range(a.rounds)] for i in range(len(a.sftrace))}
    print(f"ns a heap event (alloc_bench flat {a.n}, thread CPU time, {a.rounds} shuffled rounds):")
    for i, sf in enumerate(a.sftrace):
        print(f"  {sf}: median {statistics.median(per[i]):.1f}   rounds {' '.join(f'{x:.1f}' for x in per[i])}")
    if len(a.sftrace) == 2:
        r = [y / x for x, y in zip(per[0], per[1]) if x > 0]
        print(f"  second / first, round by round: {' '.join(f'{x:.2f}' for x in r)}   (median {statistics.median(r):.3f})")


if __name__ == "__main__":
    main()
