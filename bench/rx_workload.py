#!/usr/bin/env python3
"""Issue 17's regex-crate target: log size and wall time of an unfiltered
recording of bench/rx_workload (a `cargo test`-shaped run of the regex
crate: hundreds of short test threads, should_panic tests, a panicking
helper thread), with raw 8-byte records (SFTRACE_ENCODING=raw, the format
of version 3) against the default packed encoding (version 4).

    python3 bench/rx_workload.py                        # 3 runs, 300 tests x 4 lines
    nice python3 bench/rx_workload.py --runs 5 --sftrace-build build
    python3 bench/rx_workload.py --tests 600 --size 8   # a larger run

Each round runs the program untraced, under `sftrace record` with
SFTRACE_ENCODING=raw and with the default encoding, in an order that
rotates from round to round, and the two traced runs again with
`record -q` (no summary: the summary reads the whole log back, which the
others include). It prints, per mode: events, log bytes,
bytes/event, wall time and the wall-time ratio traced/untraced (each
round's traced run over the same round's untraced run), as medians and
ranges over the rounds, and the size ratio raw/packed. The wall time of a
traced run is the whole `sftrace record` command, including its summary;
CPU s is user + sys time of the command and all its processes, which
other load on the machine disturbs less than wall time.

--before DIR adds an older build's recording (for example main before the
packed encoding: `git archive main | tar -x -C bench/build/main-src` and
`make -C bench/build/main-src -j2 all`, then --before
bench/build/main-src/build), with and without -q.

Checks (exit status 1 if one fails): the program prints the same line in
every run, traced or not; and `sftrace report` gives every function the
same call count in the raw, the packed (and the before) log of each round,
and in every round (the workload calls the same functions the same number of times on
every run). Logs go to --tmp (default /tmp) and are deleted after each
round; the build goes to bench/build/rx_workload.
"""
import argparse
import collections
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from encoding import BUILD, ROOT, build_sftrace, log  # noqa: E402

SRC = os.path.join(HERE, "rx_workload")
MODES = ("untraced", "raw", "packed", "raw -q", "packed -q")


def fail(msg):
    print("rx_workload: " + msg, file=sys.stderr)
    sys.exit(1)


def build_workload():
    """cargo build of bench/rx_workload with XRay sleds in every crate,
    offline against Debian's crates; returns the binary."""
    if not os.path.isdir("/usr/share/cargo/registry") or not any(
            d.startswith("regex-1.") for d in os.listdir("/usr/share/cargo/registry")):
        fail("no regex crate in /usr/share/cargo/registry (run sh scripts/install-rust-deps.sh)")
    target = os.path.join(BUILD, "rx_workload")
    env = dict(os.environ, RUSTC_BOOTSTRAP="1", RUSTFLAGS="-Zinstrument-xray=always", CARGO_TARGET_DIR=target)
    env["PATH"] = os.path.expanduser("~/.cargo/bin") + ":" + env["PATH"]
    log("build: bench/rx_workload (cargo, offline; about a minute the first time)")
    try:
        r = subprocess.run(["cargo", "+stable", "build", "--profile", "profiling", "-q"], cwd=SRC, env=env,
                           capture_output=True, text=True)
    except FileNotFoundError:
        fail("cargo not found (a Rust toolchain from rustup is needed)")
    if r.returncode:
        fail("bench/rx_workload does not build:\n" + r.stderr[-1500:])
    return os.path.join(target, "profiling", "rx_workload")


def call_counts(sftrace, logfile):
    """{function name: calls} from `sftrace report --format tsv` (rows that
    share a name are summed)."""
    r = subprocess.run([sftrace, "report", "--format", "tsv", "-n", "0", "-q", logfile],
                       capture_output=True, text=True)
    if r.returncode:
        fail(f"sftrace report {logfile}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    counts = collections.Counter()
    lines = r.stdout.splitlines()
    head = lines[0].split("\t")
    name, calls = head.index("name"), head.index("calls")
    for line in lines[1:]:
        f = line.split("\t")
        counts[f[name]] += int(f[calls])
    return counts


def run_mode(sftrace, recorder, argv, mode, tmp, writer=None):
    """One run: {wall, cpu, out, events, bytes, counts}; cpu is user + sys
    seconds of the command and every process it waited for. recorder is
    the sftrace that records; sftrace reads the log."""
    env = dict(os.environ)
    for k in ("SFTRACE_ENCODING", "SFTRACE_WRITER"):
        env.pop(k, None)
    if writer:
        env["SFTRACE_WRITER"] = writer
    d = tempfile.mkdtemp(prefix="sftrace-rx-", dir=tmp)
    try:
        cmd = argv
        quiet = mode.endswith(" -q")
        if mode != "untraced":
            if mode.startswith("raw"):
                env["SFTRACE_ENCODING"] = "raw"
            cmd = [recorder, "record"] + (["-q"] if quiet else []) + ["-o", os.path.join(d, "sf.log"), "--"] + argv
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        if p.returncode:
            fail(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-800:]}")
        res = {"wall": wall, "cpu": cpu, "out": p.stdout}
        if mode == "untraced":
            return res
        logs = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log")]
        res["bytes"] = sum(os.path.getsize(f) for f in logs)
        if quiet:
            return res
        if "DROPPED" in p.stderr:
            log(f"warning: {mode}: events were dropped: " + p.stderr.strip().splitlines()[-1])
        res["events"] = sum(int(m) for m in re.findall(r"^sftrace: wrote .*?: (\d+) events", p.stderr, re.M))
        if len(logs) != 1 or not res["events"]:
            fail(f"{mode}: expected one log with events in {d}, found {len(logs)}: {p.stderr.strip()[-300:]}")
        res["counts"] = call_counts(sftrace, logs[0])
        return res
    finally:
        shutil.rmtree(d, ignore_errors=True)


def med_range(xs, fmt):
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def count_diff(a, b):
    """A few functions whose counts differ, for the message."""
    names = sorted(n for n in set(a) | set(b) if a.get(n, 0) != b.get(n, 0))
    return ", ".join(f"{n}: {a.get(n, 0)} vs {b.get(n, 0)}" for n in names[:5]) + \
        (f" (+{len(names) - 5} more)" if len(names) > 5 else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="rounds (each runs every mode once)")
    ap.add_argument("--tests", type=int, default=300, help="test threads (default 300)")
    ap.add_argument("--size", type=int, default=4, help="lines each test matches (default 4)")
    ap.add_argument("--sftrace-build", help="an existing build directory (else bench/build/sf is built)")
    ap.add_argument("--make", action="append", default=[], help="extra make argument for the build")
    ap.add_argument("--tmp", default="/tmp", help="where the logs go")
    ap.add_argument("--writer", choices=("auto", "sync", "thread"),
                    help="SFTRACE_WRITER for every traced run (default: record's own, auto)")
    ap.add_argument("--before", metavar="DIR",
                    help="also record with DIR/sftrace, an older build (rows 'before'; its logs are read by "
                         "this build's report)")
    args = ap.parse_args()
    if args.runs < 1:
        fail("--runs must be at least 1")
    before = None
    if args.before:
        before = os.path.join(os.path.abspath(args.before), "sftrace")
        if not os.access(before, os.X_OK):
            fail(f"--before {args.before}: no executable sftrace there")
    sftrace = build_sftrace(args)
    argv = [build_workload(), str(args.tests), str(args.size)]
    modes = MODES + (("before", "before -q") if before else ())
    counted = [m for m in modes if m != "untraced" and not m.endswith(" -q")]
    runs = {m: [] for m in modes}
    ok = True
    for i in range(args.runs):
        order = modes[i % len(modes):] + modes[:i % len(modes)]
        log(f"round {i + 1}/{args.runs}: " + ", ".join(order))
        got = {m: run_mode(sftrace, before if m.startswith("before") else sftrace, argv, m, args.tmp, args.writer)
               for m in order}
        for m in modes:
            runs[m].append(got[m])
        for m in counted[1:]:
            if got[m]["counts"] != got["raw"]["counts"]:
                ok = False
                log(f"round {i + 1}: call counts MISMATCH raw vs {m}: "
                    + count_diff(got["raw"]["counts"], got[m]["counts"]))

    outs = {r["out"] for m in modes for r in runs[m]}
    same_out = len(outs) == 1
    first = runs["raw"][0]["counts"]
    same_counts = ok and all(r["counts"] == first for m in counted for r in runs[m])
    if ok and not same_counts:
        log("call counts differ between rounds (the workload is not deterministic here): "
            + count_diff(first, next(r["counts"] for m in counted for r in runs[m] if r["counts"] != first)))

    print(f"bench/rx_workload {args.tests} tests x {args.size} lines, {args.runs} rounds "
          f"(modes interleaved){', writer ' + args.writer if args.writer else ''}; median (min–max)")
    print(f"program output: {next(iter(outs)).strip() if same_out else 'differs'}")
    print()
    print("| mode | events | log bytes | bytes/event | wall s | wall ratio traced/untraced | CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    base = [r["wall"] for r in runs["untraced"]]
    cpu = {m: med_range([r["cpu"] for r in runs[m]], '{:.2f}') for m in modes}
    print(f"| untraced | – | – | – | {med_range(base, '{:.3f}')} | – | {cpu['untraced']} |")
    for m in modes[1:]:
        rs = runs[m]
        events = statistics.median(r["events"] for r in runs[m.split()[0]])
        size = statistics.median(r["bytes"] for r in rs)
        ratio = [r["wall"] / b for r, b in zip(rs, base)]
        print(f"| {m.replace(' -q', ', record -q')} | {events:,.0f} | {size:,.0f} | {size / events:.2f} | "
              f"{med_range([r['wall'] for r in rs], '{:.3f}')} | {med_range(ratio, '{:.2f}×')} | {cpu[m]} |")
    print()
    sizes = [r["bytes"] / p["bytes"] for r, p in zip(runs["raw"], runs["packed"])]
    walls = [p["wall"] / r["wall"] for r, p in zip(runs["raw"], runs["packed"])]
    quiet = [p["wall"] / r["wall"] for r, p in zip(runs["raw -q"], runs["packed -q"])]
    print(f"size raw/packed: {med_range(sizes, '{:.2f}×')}; wall packed/raw: {med_range(walls, '{:.2f}×')}, "
          f"with record -q: {med_range(quiet, '{:.2f}×')}")
    if before:
        sizes = [b["bytes"] / p["bytes"] for b, p in zip(runs["before"], runs["packed"])]
        walls = [p["wall"] / b["wall"] for b, p in zip(runs["before"], runs["packed"])]
        quiet = [p["wall"] / b["wall"] for b, p in zip(runs["before -q"], runs["packed -q"])]
        print(f"size before/packed: {med_range(sizes, '{:.2f}×')}; wall packed/before: "
              f"{med_range(walls, '{:.2f}×')}, with record -q: {med_range(quiet, '{:.2f}×')}")
    nfunc = len(first)
    ncalls = sum(first.values())
    print(f"program output identical traced and untraced: {'OK' if same_out else 'MISMATCH'}")
    print(f"sftrace report call counts {' vs '.join(counted)} ({nfunc} functions, {ncalls:,} calls): "
          f"{'OK' if ok else 'MISMATCH'}; the same in every round: {'OK' if same_counts else 'MISMATCH'}")
    if not same_out:
        for o in sorted(outs):
            log("output: " + o.strip())
    sys.exit(0 if same_out and same_counts else 1)


if __name__ == "__main__":
    main()
