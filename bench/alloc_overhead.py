#!/usr/bin/env python3
"""Cost of a traced allocation event against a function event and heaptrack,
and `sftrace memory` throughput (bench/README.md, "Allocation tracing").

    python3 bench/alloc_overhead.py [--runs 5] [--n 2000000] [--memory-n 5000000]

Per-event costs use the fixture's in-program clock around its loop:
  function event = (calls traced - calls untraced) / (2 N)      (entry + exit)
  heap event     = (pairs --alloc - pairs traced) / (2 N)       (malloc + free)
  heaptrack      = (pairs under heaptrack - pairs untraced) / (2 N)
Runs interleave the variants; medians and ranges are printed. The memory
throughput is `sftrace memory` on a log of 2 x memory-n heap events (wall
and CPU time, max RSS from wait4; on a shared machine CPU time is the
figure to compare, wall time includes waiting for a core)."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SF = os.path.join(ROOT, "build", "sftrace")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def prog_ns(cmd):
    """The fixture's own figure: the only all-digit line (heaptrack prints its own lines around it)."""
    return int([line for line in sh(cmd).stdout.splitlines() if line.strip().isdigit()][-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", type=int, default=2000000)
    ap.add_argument("--memory-n", type=int, default=5000000)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sf-alloc-bench-")
    exe = os.path.join(d, "alloc_bench")
    sh(["clang", "-O2", "-g", "-fno-builtin", "-fxray-instrument", "-fxray-instruction-threshold=1", "-fnoxray-link-deps",
        "-o", exe, os.path.join(ROOT, "bench", "alloc_bench.c")])
    have_ht = shutil.which("heaptrack") is not None
    n = str(a.n)
    res = {k: [] for k in ("calls0", "calls1", "pairs0", "pairs1", "pairs2", "heaptrack")}
    for r in range(a.runs):
        log = os.path.join(d, "sf.log")
        res["calls0"].append(prog_ns([exe, "calls", n]))
        res["calls1"].append(prog_ns([SF, "record", "-q", "--force", "-o", log, "--", exe, "calls", n]))
        res["pairs0"].append(prog_ns([exe, "pairs", n]))
        res["pairs1"].append(prog_ns([SF, "record", "-q", "--force", "-o", log, "--", exe, "pairs", n]))
        res["pairs2"].append(prog_ns([SF, "record", "-q", "--force", "--alloc", "-o", log, "--", exe, "pairs", n]))
        if have_ht:
            res["heaptrack"].append(prog_ns(["heaptrack", "-o", os.path.join(d, f"ht{r}"), exe, "pairs", n]))
        print(f"run {r + 1}/{a.runs} done", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in res.items() if v}
    rng = {k: (min(v), max(v)) for k, v in res.items() if v}
    ev = 2 * a.n
    fn = (med["calls1"] - med["calls0"]) / ev
    heap = (med["pairs2"] - med["pairs1"]) / ev
    print(f"N = {a.n} (2N events of each kind), {a.runs} interleaved runs, medians (ranges) of in-program ns:")
    for k in res:
        if res[k]:
            print(f"  {k:10s} {med[k] / 1e6:9.1f} ms  ({rng[k][0] / 1e6:.1f}-{rng[k][1] / 1e6:.1f})")
    print(f"function event:           {fn:6.1f} ns")
    print(f"heap event (--alloc):     {heap:6.1f} ns   = {heap / fn:.2f}x a function event")
    print(f"untraced malloc+free pair {med['pairs0'] / a.n:6.1f} ns")
    if have_ht:
        ht = (med["heaptrack"] - med["pairs0"]) / ev
        print(f"heaptrack per malloc/free:{ht:6.1f} ns   sftrace heap event = 1/{ht / heap:.0f} of it")
    # memory throughput on a large log
    log = os.path.join(d, "big.log")
    sh([SF, "record", "-q", "--force", "--alloc", "-o", log, "--", exe, "flat", str(a.memory_n)])
    events = 2 * a.memory_n
    walls, cpus, rss = [], [], []
    for _ in range(3):
        t = time.monotonic()
        p = subprocess.Popen([SF, "memory", "-n", "3", log], stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = 0
        if status != 0:
            sys.exit("sftrace memory failed")
        walls.append(time.monotonic() - t)
        cpus.append(ru.ru_utime + ru.ru_stime)
        rss.append(ru.ru_maxrss)
    size = os.path.getsize(log)
    print(f"sftrace memory on {events / 1e6:.0f}M heap events ({size / 1e6:.0f} MB log): "
          f"{events / max(walls) / 1e6:.1f}-{events / min(walls) / 1e6:.1f} M events/s wall, "
          f"{events / max(cpus) / 1e6:.1f}-{events / min(cpus) / 1e6:.1f} M events/s of CPU time (user+sys), "
          f"max RSS {min(rss) / 1024:.0f}-{max(rss) / 1024:.0f} MiB (mapped log pages included)")
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
