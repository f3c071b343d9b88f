#!/usr/bin/env python3
"""How tight the runtime's calibration of its own cost is, quiet and under
load: for RUNS recordings of calib_mix.c, the cost's relative error
(`info --format json`'s tracer_cost_error) and the share of replay's
closed lines whose net duration is marked uncertain ("<"). LOAD busy
loops (this script's own children, ended after) run during the load runs.

  python3 bench/calib_spread.py [--sftrace build/sftrace] [--runs 10] [--load 2]

Several runtimes side by side: --sftrace DIR1/sftrace --sftrace DIR2/sftrace
(each with its libsftrace.so beside it), interleaved run by run."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def build(tmp):
    exe = os.path.join(tmp, "calib_mix")
    subprocess.run(["clang", "-O1", "-fxray-instrument", "-fxray-instruction-threshold=1",
                    os.path.join(HERE, "calib_mix.c"), "-o", exe], check=True)
    return exe


def one(sf, exe, tmp):
    log = os.path.join(tmp, "sf.log")
    if os.path.exists(log):
        os.unlink(log)
    subprocess.run([sf, "record", "-q", "-o", log, "--", exe, "200"], check=True)
    info = json.loads(subprocess.run([sf, "info", "--format", "json", log], check=True,
                                     capture_output=True, text=True).stdout)["processes"][0]
    out = subprocess.run([sf, "replay", "--no-pager", "-q", log], check=True, capture_output=True, text=True).stdout
    closed = [ln for ln in out.splitlines() if re.match(r"^ *<?\d+\.\d+ +(us|ms| s)", ln)]
    marked = sum(1 for ln in closed if ln.lstrip().startswith("<"))
    return info.get("tracer_cost_error", 0.0), marked / max(1, len(closed))


def busy(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sftrace", action="append")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--load", type=int, default=2)
    a = ap.parse_args()
    sfs = a.sftrace or [os.path.join(os.path.dirname(HERE), "build", "sftrace")]
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp)
        for label, load in (("quiet", 0), (f"load {a.load}", a.load)):
            res = {sf: [] for sf in sfs}
            procs = busy(load)
            try:
                for _ in range(a.runs):
                    for sf in sfs:
                        res[sf].append(one(sf, exe, tmp))
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
            for sf in sfs:
                errs = sorted(e for e, _ in res[sf])
                fr = sorted(f for _, f in res[sf])
                print(f"{label:8} {sf}: cost error median {100 * statistics.median(errs):.1f}% "
                      f"(max {100 * errs[-1]:.1f}%), marked median {100 * statistics.median(fr):.0f}% "
                      f"(max {100 * fr[-1]:.0f}%) of {a.runs} runs")


if __name__ == "__main__":
    main()
