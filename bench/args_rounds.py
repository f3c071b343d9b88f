#!/usr/bin/env python3
"""--auto-args against plain recording on one program, several builds side
by side (issue 29): ROUNDS interleaved rounds of, for each build,
`sftrace record -q --force` and the same with `--auto-args`; per
configuration the median and least wall, CPU (user + sys of the command and
its children) and the program's own thread CPU ("loop thread cpu ns N" on
its stderr, as bench/sqlite_driver.c and bench/args_cost.c print it), ms;
then per build `--auto-args` over plain: the median of the rounds' ratios,
the ratio of the medians and the ratio of the minima.

  python3 bench/args_rounds.py PROGRAM ARG ROUNDS NAME=PATH/TO/sftrace...
  e.g. python3 bench/args_rounds.py /tmp/sq 20000 7 before=/tmp/old/build/sftrace after=build/sftrace

PROGRAM: sqlite_driver built as bench/args_cost.sh builds it. The log goes
to a temporary directory, replaced at each run."""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, text=True)
    w = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    th = 0.0
    for line in p.stderr.splitlines():
        if line.startswith("loop thread cpu ns "):
            th = int(line.split()[-1]) / 1e6
    return w * 1000, cpu * 1000, th


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    prog, arg, rounds, builds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    log = os.path.join(tempfile.mkdtemp(prefix="sftrace-argsrounds."), "t.log")
    cfgs = []
    for b in builds:
        name, sft = b.split("=", 1)
        rec = [sft, "record", "-q", "--force", "-o", log]
        cfgs.append((name + " plain", rec + ["--", prog, arg]))
        cfgs.append((name + " auto", rec + ["--auto-args", "--", prog, arg]))
    res = {n: [] for n, _ in cfgs}
    for _ in range(rounds):
        for n, c in cfgs:
            res[n].append(run(c))
    os.unlink(log)
    os.rmdir(os.path.dirname(log))
    cols = ("wall", "cpu", "thread")
    for n, _ in cfgs:
        v = res[n]
        print("%-18s" % n + " | ".join("%s med %7.1f min %7.1f" % (cols[k], statistics.median(x[k] for x in v),
                                                                   min(x[k] for x in v)) for k in range(3)))
    for b in builds:
        name = b.split("=", 1)[0]
        p, a = res[name + " plain"], res[name + " auto"]
        for k in range(3):
            ratios = [a[i][k] / p[i][k] for i in range(rounds) if p[i][k]]
            if not ratios:
                continue
            print("%s %s: --auto-args over plain, median of the rounds' ratios %.2fx, of the medians %.2fx, "
                  "of the minima %.2fx" % (name, cols[k], statistics.median(ratios),
                                           statistics.median(x[k] for x in a) / statistics.median(x[k] for x in p),
                                           min(x[k] for x in a) / min(x[k] for x in p)))


main()
