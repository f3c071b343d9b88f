#!/usr/bin/env python3
"""Cost of a traced allocation event against a function event and heaptrack,
and `sftrace memory` throughput (bench/README.md, "Allocation tracing").

    python3 bench/alloc_overhead.py [--runs 5] [--n 2000000] [--depths 5,30,60]
        [--depth-n N] [--clock wall|thread] [--memory-n 5000000] [--no-memory]
        [--no-heaptrack] [--sftrace PATH]

Per-event costs use the fixture's in-program clock around its loop:
  function event = (calls traced - calls untraced) / (2 N)      (entry + exit)
  heap event     = (pairs --alloc - pairs traced) / (2 N)       (malloc + free)
and, D frames deep (alloc_bench depth D: the loop under D frames of the
program, which heaptrack unwinds at every malloc and free):
  sftrace        = (depth --alloc - depth untraced) / (2 N)
  heaptrack      = (depth under heaptrack - depth untraced) / (2 N)
Runs interleave the variants; medians and ranges are printed, and every
ratio is of medians from the same runs. --clock thread times the loop in
the thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a shared machine the
wall clock also counts waiting for a core (and sftrace's writer thread, or
heaptrack's interpreter, competing for one). The memory throughput is
`sftrace memory` on a log of 2 x memory-n heap events (wall and CPU time,
max RSS from wait4; on a shared machine CPU time is the figure to compare,
wall time includes waiting for a core), grouped by line (the default) and
by stack. Instructions per event, which load does not move:
bench/alloc_instructions.py (callgrind, same fixture)."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SF = os.path.join(ROOT, "build", "sftrace")  # --sftrace: another build's, to compare


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def prog_ns(cmd, env):
    """The fixture's own figure: the only all-digit line (heaptrack prints its own lines around it)."""
    return int([line for line in sh(cmd, env=env).stdout.splitlines() if line.strip().isdigit()][-1])


def memory_speed(log, events, group):
    walls, cpus, rss = [], [], []
    for _ in range(3):
        t = time.monotonic()
        p = subprocess.Popen([SF, "memory", "-n", "3", "--group-by", group, log], stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = 0
        if status != 0:
            sys.exit("sftrace memory failed")
        walls.append(time.monotonic() - t)
        cpus.append(ru.ru_utime + ru.ru_stime)
        rss.append(ru.ru_maxrss)
    print(f"  --group-by {group:8s} {events / max(walls) / 1e6:.1f}-{events / min(walls) / 1e6:.1f} M events/s wall, "
          f"{events / max(cpus) / 1e6:.1f}-{events / min(cpus) / 1e6:.1f} M events/s of CPU time (user+sys), "
          f"max RSS {min(rss) / 1024:.0f}-{max(rss) / 1024:.0f} MiB (mapped log pages included)")
    return statistics.median(cpus)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", type=int, default=2000000)
    ap.add_argument("--depths", default="5,30,60")
    ap.add_argument("--depth-n", type=int, default=0, help="N of the depth runs (default: --n)")
    ap.add_argument("--clock", choices=("wall", "thread"), default="wall")
    ap.add_argument("--memory-n", type=int, default=5000000)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--no-heaptrack", action="store_true")
    ap.add_argument("--sftrace", help="the sftrace binary (default: build/sftrace)")
    a = ap.parse_args()
    global SF
    SF = os.path.abspath(a.sftrace) if a.sftrace else SF
    depths = [int(x) for x in a.depths.split(",") if x]
    dn = a.depth_n or a.n
    env = dict(os.environ, ALLOC_BENCH_CLOCK=a.clock)
    d = tempfile.mkdtemp(prefix="sf-alloc-bench-")
    exe = os.path.join(d, "alloc_bench")
    sh(["clang", "-O2", "-g", "-fno-builtin", "-fxray-instrument", "-fxray-instruction-threshold=1", "-fnoxray-link-deps",
        "-o", exe, os.path.join(ROOT, "bench", "alloc_bench.c")])
    have_ht = shutil.which("heaptrack") is not None and not a.no_heaptrack
    n = str(a.n)
    log = os.path.join(d, "sf.log")
    rec = [SF, "record", "-q", "--force", "-o", log, "--"]
    rec_alloc = [SF, "record", "-q", "--force", "--alloc", "-o", log, "--"]
    variants = [("calls0", [exe, "calls", n]), ("calls1", rec + [exe, "calls", n]),
                ("pairs0", [exe, "pairs", n]), ("pairs1", rec + [exe, "pairs", n]), ("pairs2", rec_alloc + [exe, "pairs", n])]
    for dep in depths:
        args = [exe, "depth", str(dep), str(dn)]
        variants += [(f"d{dep}_0", args), (f"d{dep}_sf", rec_alloc + args)]
        if have_ht:
            variants.append((f"d{dep}_ht", ["heaptrack", "-o", os.path.join(d, "ht")] + args))
    res = {k: [] for k, _ in variants}
    for r in range(a.runs):
        for k, cmd in variants:
            res[k].append(prog_ns(cmd, env))
            for f in os.listdir(d):  # heaptrack's output: not needed, and large
                if f.startswith("ht"):
                    os.unlink(os.path.join(d, f))
        print(f"run {r + 1}/{a.runs} done", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in res.items() if v}
    rng = {k: (min(v), max(v)) for k, v in res.items() if v}
    fn = (med["calls1"] - med["calls0"]) / (2 * a.n)
    heap = (med["pairs2"] - med["pairs1"]) / (2 * a.n)
    print(f"N = {a.n} (2N events of each kind; depth runs N = {dn}), {a.runs} interleaved runs, "
          f"{a.clock} clock, medians (ranges) of in-program ms:")
    for k in res:
        print(f"  {k:10s} {med[k] / 1e6:9.1f} ms  ({rng[k][0] / 1e6:.1f}-{rng[k][1] / 1e6:.1f})")
    print(f"function event:           {fn:6.1f} ns")
    print(f"heap event (--alloc):     {heap:6.1f} ns   = {heap / fn:.2f}x a function event (target: at most 2x)")
    print(f"untraced malloc+free pair {med['pairs0'] / a.n:6.1f} ns")
    print("per malloc or free, D frames deep (ns):")
    print(f"  {'D':>3s}  {'untraced pair':>13s}  {'sftrace':>8s}  {'heaptrack':>9s}  sftrace/heaptrack")
    for dep in depths:
        base = med[f"d{dep}_0"]
        sf = (med[f"d{dep}_sf"] - base) / (2 * dn)
        line = f"  {dep:3d}  {base / dn:13.1f}  {sf:8.1f}"
        if have_ht:
            ht = (med[f"d{dep}_ht"] - base) / (2 * dn)
            line += f"  {ht:9.1f}  1/{ht / sf:.1f}" + ("   (target at 30: 1/15 or less)" if dep == 30 else "")
        print(line)
    if not have_ht and not a.no_heaptrack:
        print("  (heaptrack not installed: apt-get install heaptrack)")
    if a.no_memory:
        shutil.rmtree(d)
        return
    # memory throughput on a large log
    log = os.path.join(d, "big.log")
    sh([SF, "record", "-q", "--force", "--alloc", "-o", log, "--", exe, "flat", str(a.memory_n)])
    events = 2 * a.memory_n
    print(f"sftrace memory on {events / 1e6:.0f}M heap events ({os.path.getsize(log) / 1e6:.0f} MB log):")
    line = memory_speed(log, events, "line")
    stack = memory_speed(log, events, "stack")
    print(f"  CPU time by line / by stack (per call site, as before grouping by line): {line / stack:.2f}x")
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
