#!/usr/bin/env python3
"""What record-time trimming costs and saves per event: `record` with no
trimming, `--min-duration 10us` and `--max-depth 4`, on bench/fib.c (and on
any command given after `--`).

For each setting the table gives the events that reached the log, the log's
bytes, bytes per event of the UNTRIMMED run (so settings compare on the same
work), and the wall time of `sftrace record` (median and minimum of --runs,
settings interleaved), with ns/event over the untraced run. The "sync" rows
run with SFTRACE_WRITER=sync, where the traced thread trims and codes its
own batches: the difference to the untrimmed sync row is the per-event cost
of the trimming pass itself (with a writer thread it runs on the other CPU).

    python3 bench/trim_cost.py                     # fib 32, 3 runs
    python3 bench/trim_cost.py --runs 5 --sftrace-build build
    python3 bench/trim_cost.py -- /path/to/program args
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from encoding import add_common_args, build_fib, build_sftrace  # noqa: E402

SETTINGS = [("none", []), ("--min-duration 10us", ["--min-duration", "10us"]), ("--max-depth 4", ["--max-depth", "4"])]


def run_once(sftrace, argv, opts, writer, tmp):
    """(wall seconds, events in the log, log bytes); opts None: untraced."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SFTRACE_")}
    if writer:
        env["SFTRACE_WRITER"] = writer
    out = tempfile.mkdtemp(prefix="sftrace-trim-", dir=tmp)
    try:
        cmd = argv if opts is None else [sftrace, "record", "-o", os.path.join(out, "sf.log")] + opts + ["--"] + argv
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        if p.returncode:
            raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-1500:]}")
        events = sum(int(m) for m in re.findall(r"^sftrace: wrote .*?: (\d+) events", p.stderr, re.M))
        size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".log"))
        return wall, events, size
    finally:
        shutil.rmtree(out, ignore_errors=True)


def bench(name, sftrace, argv, args):
    modes = [("untraced", None, None)]
    for writer in (None, "sync"):
        modes += [(label + (" (sync)" if writer else ""), opts, writer) for label, opts in SETTINGS]
    samples = {m[0]: [] for m in modes}
    for _ in range(args.runs):
        for label, opts, writer in modes:
            samples[label].append(run_once(sftrace, argv, opts, writer, args.tmp))
    base = statistics.median(s[0] for s in samples["untraced"])
    full = statistics.median(s[1] for s in samples["none"])  # the work, in events
    rows = []
    for label, ss in samples.items():
        walls = [s[0] for s in ss]
        med, lo = statistics.median(walls), min(walls)
        if label == "untraced":
            rows.append((name, label, "", "", "", f"{med:.3f}", f"{lo:.3f}", ""))
            continue
        events = statistics.median(s[1] for s in ss)
        size = statistics.median(s[2] for s in ss)
        rows.append((name, label, f"{events / 1e6:.3f}M", f"{size / 1e6:.2f}", f"{size / full:.3f}",
                     f"{med:.3f}", f"{lo:.3f}", f"{(med - base) * 1e9 / full:.1f}"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    args = ap.parse_args()
    sftrace = build_sftrace(args)
    rows = bench(f"fib {args.fib_n}", sftrace, [build_fib(), str(args.fib_n)], args)
    if args.cmd:
        rows += bench(os.path.basename(args.cmd[0]), sftrace, args.cmd, args)
    head = ("workload", "trimming", "logged", "log MB", "B/event", "wall med s", "wall min s", "ns/event")
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    print(f"{args.runs} runs each, interleaved; B/event and ns/event per event of the untrimmed run "
          "(ns/event = (median wall - untraced median) / events)")
    for row in [head] + rows:
        print("  ".join(str(v).rjust(w) if i >= 2 else str(v).ljust(w) for i, (v, w) in enumerate(zip(row, widths))))


if __name__ == "__main__":
    main()
