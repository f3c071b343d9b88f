#!/usr/bin/env python3
"""Cost of a traced allocation event against a function event and heaptrack,
and `sftrace memory` throughput (bench/README.md, "Allocation tracing").

    python3 bench/alloc_overhead.py [--runs 5] [--n 2000000] [--depths 5,30,60]
        [--depth-n N] [--clock wall|thread] [--memory-n 5000000] [--no-memory]
        [--no-heaptrack] [--sftrace PATH] [--total-cpu]

Per-event costs use the fixture's in-program clock around its loop:
  function event = (calls traced - calls untraced) / (2 N)      (entry + exit)
  heap event     = (pairs --alloc - pairs traced) / (2 N)       (malloc + free)
and, D frames deep (alloc_bench depth D: the loop under D frames of the
program, which heaptrack unwinds at every malloc and free):
  sftrace        = (depth --alloc - depth untraced) / (2 N)
  heaptrack      = (depth under heaptrack - depth untraced) / (2 N)
Runs interleave the variants (in a shuffled order each round, so that no
variant always follows heaptrack's write-out); medians and ranges are
printed, every ratio of medians is from the same runs, and the ratios are
also given round by round: each round's heaptrack and sftrace runs of the
same binary against that round's untraced run, and the median of those. --clock thread times the loop in
the thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a shared machine the
wall clock also counts waiting for a core (and sftrace's writer thread, or
heaptrack's interpreter, competing for one). --total-cpu adds, at 30 frames,
the CPU time of everything each tool runs (user + sys of the command and
all it waited for: sftrace's writer thread, heaptrack's interpreter and
compressor), from runs with N and N/5 calls subtracted so that start-up
and the final write-out cancel. The memory throughput is
`sftrace memory` on a log of 2 x memory-n heap events (wall and CPU time,
max RSS from wait4; on a shared machine CPU time is the figure to compare,
wall time includes waiting for a core), grouped by line (the default) and
by stack. Instructions per event, which load does not move:
bench/alloc_instructions.py (callgrind, same fixture)."""
import argparse
import os
import random
import resource
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


def prog_ns(cmd, env, cpu=None):
    """The fixture's own figure: the only all-digit line (heaptrack prints its own lines around it).
    cpu: a list that gets the CPU time (user + sys, ns) of the command and every process it waited for."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {err[-2000:]}")
    if cpu is not None:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(ru.ru_utime + ru.ru_stime)
    return int([line for line in out.splitlines() if line.strip().isdigit()][-1])


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


def total_cpu(tot, dn, have_ht):
    """CPU time (user + sys) of all each command ran, per malloc or free at 30 frames: the program's
    thread, sftrace's writer thread, heaptrack's interpreter and compressor; the run with a fifth of
    the calls subtracted, so that start-up and the end's write-out and symbol work cancel."""
    ev = 2 * (dn - dn // 5)
    runs = len(tot["d30_0"])
    def per(tool, r):
        return ((tot[f"d30_{tool}"][r] - tot[f"t30_{tool}"][r]) - (tot["d30_0"][r] - tot["t30_0"][r])) / ev * 1e9
    sf = [per("sf", r) for r in range(runs)]
    line = f"  30 frames, all processes' CPU time: sftrace {' '.join(f'{x:.1f}' for x in sf)} ns"
    if have_ht:
        ht = [per("ht", r) for r in range(runs)]
        line += f"; heaptrack {' '.join(f'{x:.0f}' for x in ht)} ns; sftrace/heaptrack " + \
            " ".join(f"1/{h / s:.1f}" for s, h in zip(sf, ht)) + \
            f"   (median 1/{statistics.median(h / s for s, h in zip(sf, ht)):.1f})"
    print(line)


def rounds(res, n, dn, depths, have_ht):
    """The ratios round by round: each from one round's runs alone."""
    runs = len(res["calls0"])
    per = [((res["pairs2"][r] - res["pairs1"][r]) / (2 * n)) / ((res["calls1"][r] - res["calls0"][r]) / (2 * n))
           for r in range(runs)]
    print(f"round by round (each round's runs alone; median):")
    print(f"  heap / function event:  {' '.join(f'{x:.2f}x' for x in per)}   ({statistics.median(per):.2f}x)")
    for dep in depths if have_ht else []:
        sf = [(res[f"d{dep}_sf"][r] - res[f"d{dep}_0"][r]) / (2 * dn) for r in range(runs)]
        ht = [(res[f"d{dep}_ht"][r] - res[f"d{dep}_0"][r]) / (2 * dn) for r in range(runs)]
        ratio = [h / s if s > 0 else float("inf") for s, h in zip(sf, ht)]
        print(f"  {dep:2d} frames, heaptrack ns: {' '.join(f'{x:.0f}' for x in ht)}; sftrace ns: "
              f"{' '.join(f'{x:.1f}' for x in sf)}")
        print(f"  {dep:2d} frames, sftrace/heaptrack: {' '.join(f'1/{x:.1f}' for x in ratio)}   "
              f"(median 1/{statistics.median(ratio):.1f})")


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
    ap.add_argument("--total-cpu", action="store_true",
                    help="also the CPU time of everything each tool runs at 30 frames (writer thread, interpreter)")
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
        if a.total_cpu and dep == 30:  # a fifth of the calls: start-up and write-out cancel in the difference
            short = [exe, "depth", str(dep), str(dn // 5)]
            variants += [("t30_0", short), ("t30_sf", rec_alloc + short)]
            if have_ht:
                variants.append(("t30_ht", ["heaptrack", "-o", os.path.join(d, "ht")] + short))
        if have_ht:
            variants.append((f"d{dep}_ht", ["heaptrack", "-o", os.path.join(d, "ht")] + args))
    res = {k: [] for k, _ in variants}
    tot = {k: [] for k, _ in variants}  # CPU time of the whole command, s
    order = random.Random(27)
    for r in range(a.runs):
        for k, cmd in order.sample(variants, len(variants)):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = []
            res[k].append(prog_ns(cmd, env, cpu))
            tot[k].append(cpu[0] - before.ru_utime - before.ru_stime)
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
    rounds(res, a.n, dn, depths, have_ht)
    if a.total_cpu and 30 in depths:
        total_cpu(tot, dn, have_ht)
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
