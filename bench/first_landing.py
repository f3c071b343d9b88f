#!/usr/bin/env python3
"""A thread's first longjmp landing, in ns, as the program reads it
(tests/fixtures/skep25p_first.c: CLOCK_MONOTONIC right before siglongjmp
and right after sigsetjmp returns; 100 landings in each of 2 threads run
one after the other, LD_BIND_NOW=1), side by side in one run, RUNS
interleaved rounds:

  untraced    the program alone
  forwarder   bench/fwd_siglongjmp.c preloaded: the least interposer of
              siglongjmp, what any interposition costs a cold first call
  main        traced, only main recorded: the threads record nothing
  abandoned   traced, only the frames the landing abandons recorded
              (doomed, via): the thread's first event comes just before
  both        main and those: the log exists before the threads start

for each sftrace given (default build/sftrace). Prints per variant and
thread the median and least first landing, and the page faults each
thread took in its first landing (the fixture's FAULTS mode, one more
round: getrusage(RUSAGE_THREAD) around it).

    python3 bench/first_landing.py [RUNS] [SFTRACE...]"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST_RE = re.compile(r"T(\d+) first (\d+) min \d+(?: faults (\d+))?")
FILTERS = (("main", "^main$"), ("abandoned", "^(doomed|via|handler_body)$"),
           ("both", "^(main|doomed|via|handler_body)$"))


def build(w):
    exe = os.path.join(w, "skep25p_first")
    subprocess.run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1", "-o", exe,
                    os.path.join(ROOT, "tests", "fixtures", "skep25p_first.c"), "-lpthread"], check=True)
    fwd = os.path.join(w, "fwd_siglongjmp.so")
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-o", fwd, os.path.join(ROOT, "bench", "fwd_siglongjmp.c"),
                    "-ldl"], check=True)
    return exe, fwd


def variants(w, exe, fwd, tools):
    """(name, command prefix, extra environment) of every variant."""
    out = [("untraced", [], {}), ("forwarder", [], {"LD_PRELOAD": fwd})]
    for i, sft in enumerate(tools):
        tag = "" if len(tools) == 1 else f"[{i}]"
        for name, regex in FILTERS:
            filt = os.path.join(w, f"{i}.{name}.filter")
            subprocess.run([sft, "filter", "-q", "-p", exe, "-r", regex, "-o", filt], check=True)
            log = os.path.join(w, f"{i}.sf.log")
            out.append((name + tag, [sft, "record", "-q", "--force", "-f", filt, "-o", log, "--"], {}))
    return out


def first(prefix, env, exe, faults):
    e = dict(os.environ, LD_BIND_NOW="1", **env)
    p = subprocess.run(prefix + [exe, "100", "2", "0"] + (["1"] if faults else []), env=e, check=True,
                       stdout=subprocess.PIPE, text=True)
    return {int(t): (int(ns), int(f) if f else None) for t, ns, f in FIRST_RE.findall(p.stdout)}


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    tools = sys.argv[2:] or [os.path.join(ROOT, "build", "sftrace")]
    w = tempfile.mkdtemp(prefix="sftrace-first.")
    exe, fwd = build(w)
    vs = variants(w, exe, fwd, tools)
    ns = {(v[0], t): [] for v in vs for t in (1, 2)}
    for _ in range(runs):
        for name, prefix, env in vs:
            for t, (n, _f) in first(prefix, env, exe, False).items():
                ns[(name, t)].append(n)
    print(f"first landing, ns (median / least of {runs}), page faults in it; load {os.getloadavg()[0]:.1f}")
    for name, prefix, env in vs:
        f = first(prefix, env, exe, True)
        cells = [f"T{t} {statistics.median(ns[(name, t)]):6.0f} / {min(ns[(name, t)]):5d}  faults {f[t][1]}"
                 for t in (1, 2)]
        print(f"{name:12s} " + "   ".join(cells))


if __name__ == "__main__":
    main()
