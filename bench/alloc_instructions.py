#!/usr/bin/env python3
"""Instructions per heap event against a function event, counted by
valgrind's callgrind (bench/README.md, "Allocation tracing"): the same
programs as bench/alloc_overhead.py, any load.

    python3 bench/alloc_instructions.py [--n1 100000] [--n2 300000] [--sftrace PATH]

The runtime is preloaded as `sftrace record` does (LD_PRELOAD libsftrace.so,
with --alloc libsftrace-alloc.so too; SFTRACE_OUTPUT_FILE). Callgrind
counts the instructions of the program's thread inside the loop's function
only (--toggle-collect: pair, nop or flat and what they call, the
trampolines, the interposed allocator, the runtime and its hand-offs of
full batches; not start-up, not the writer thread), in runs of n1 and n2
iterations: their difference over n2 - n1 is one iteration, start-up and
the last hand-off cancel out. Then, as alloc_overhead.py does with time:
  function event = (calls traced - calls untraced) / 2           (entry + exit)
  heap event     = (pairs --alloc - pairs traced) / 2            (malloc + free)
  heap event in a loop without function events
                 = (flat --alloc - flat untraced) / 2
Instructions are not time: the counter read (rdtsc) that every event makes
is one instruction and most of a function event's time (bench/README.md)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def collected(cmd, fn, env):
    p = subprocess.run(["valgrind", "--tool=callgrind", "--smc-check=all", f"--toggle-collect={fn}",
                        "--callgrind-out-file=/dev/null"] + cmd, env=env, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        sys.exit(f"{' '.join(cmd)}: {p.stderr[-2000:]}")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n1", type=int, default=100000)
    ap.add_argument("--n2", type=int, default=300000)
    ap.add_argument("--sftrace", default=os.path.join(ROOT, "build", "sftrace"),
                    help="the sftrace binary whose libraries are preloaded (default: build/sftrace)")
    a = ap.parse_args()
    libdir = os.path.dirname(os.path.abspath(a.sftrace))
    rt, alloc = os.path.join(libdir, "libsftrace.so"), os.path.join(libdir, "libsftrace-alloc.so")
    d = tempfile.mkdtemp(prefix="sf-alloc-ins-")
    exe = os.path.join(d, "alloc_bench")
    subprocess.run(["clang", "-O2", "-g", "-fno-builtin", "-fxray-instrument", "-fxray-instruction-threshold=1",
                    "-fnoxray-link-deps", "-o", exe, os.path.join(ROOT, "bench", "alloc_bench.c")], check=True)
    log = os.path.join(d, "sf.log")
    base = {k: v for k, v in os.environ.items() if not k.startswith("SFTRACE_") and k != "LD_PRELOAD"}
    # The writer thread by name: the default (auto) hands off on the
    # measured thread under valgrind (src/runtime/init.c); the figures in
    # bench/README.md were measured with the writer.
    envs = {"untraced": base,
            "traced": dict(base, LD_PRELOAD=rt, SFTRACE_OUTPUT_FILE=log, SFTRACE_WRITER="thread"),
            "alloc": dict(base, LD_PRELOAD=f"{rt}:{alloc}", SFTRACE_OUTPUT_FILE=log, SFTRACE_WRITER="thread")}
    per = {}  # (mode, variant) -> instructions per iteration
    for mode, fn in (("calls", "nop"), ("pairs", "pair"), ("flat", "flat")):
        for v, env in envs.items():
            if (mode, v) in (("calls", "alloc"), ("flat", "traced")):
                continue
            ir = [collected([exe, mode, str(n)], fn, env) for n in (a.n1, a.n2)]
            per[mode, v] = (ir[1] - ir[0]) / (a.n2 - a.n1)
            print(f"  {mode:5s} {v:8s} {per[mode, v]:7.1f} instructions per iteration", file=sys.stderr)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)
    fn = (per["calls", "traced"] - per["calls", "untraced"]) / 2
    heap = (per["pairs", "alloc"] - per["pairs", "traced"]) / 2
    flat = (per["flat", "alloc"] - per["flat", "untraced"]) / 2
    print(f"instructions (callgrind, the program's thread; n = {a.n1} and {a.n2} iterations):")
    print(f"  untraced malloc+free pair          {per['flat', 'untraced']:6.1f}")
    print(f"  function event (entry or exit)     {fn:6.1f}")
    print(f"  heap event (malloc or free)        {heap:6.1f}   = {heap / fn:.2f}x a function event")
    print(f"  heap event, loop without calls     {flat:6.1f}   = {flat / fn:.2f}x")


if __name__ == "__main__":
    main()
