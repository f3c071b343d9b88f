#!/usr/bin/env python3
"""Log size and time of the packed encoding (format version 4) against the
raw 8-byte records of version 3, unfiltered, in one run of each workload.

Both encodings are the same build: SFTRACE_ENCODING=raw makes the runtime
write DATA chunks, the default writes PACKED ones (docs/FORMAT.md). For each
workload and encoding the table gives the events, the bytes of every log the
run wrote, bytes per event, and the wall time of `sftrace record` (median
and minimum of --runs, the encodings interleaved), with ns/event over the
untraced run. The "sync" rows run with SFTRACE_WRITER=sync, where the traced
thread codes its own batches: packed minus raw there is the per-event cost
of the coding itself (with a writer thread it runs on the other CPU).

    python3 bench/encoding.py                      # fib, sqlite, rust-bench
    python3 bench/encoding.py --only fib --runs 5
    python3 bench/encoding.py --sftrace-build build

Workloads: bench/fib.c (fib 32, 14.1M events), bench/sqlite_driver.c (SQLite
built with XRay, 100k rows; needs the amalgamation, see bench/README.md),
examples/rust-bench (criterion, one benchmark, built offline like
bench/rust_bench.sh; skipped if it does not build), and any command given
after `--` (its own row). Logs go to --tmp (default /tmp) and are deleted
after each run.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.join(HERE, "build")
XRAY = ["-O2", "-fxray-instrument", "-fxray-instruction-threshold=1"]
NOSIB = ["-fno-optimize-sibling-calls"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def stale(out, *deps):
    return not os.path.exists(out) or any(os.path.getmtime(d) > os.path.getmtime(out) for d in deps)


def build_sftrace(args):
    if args.sftrace_build:
        return os.path.join(os.path.abspath(args.sftrace_build), "sftrace")
    rel = os.path.relpath(os.path.join(BUILD, "sf"), ROOT)
    log("build: sftrace (" + rel + ")")
    subprocess.run(["make", "-C", ROOT, "-j2", "BUILD=" + rel, "all"] + args.make, check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(BUILD, "sf", "sftrace")


def build_fib():
    out = os.path.join(BUILD, "fib")
    if stale(out, os.path.join(HERE, "fib.c")):
        os.makedirs(BUILD, exist_ok=True)
        subprocess.run(["clang", *XRAY, *NOSIB, "-I", HERE, "-o", out, os.path.join(HERE, "fib.c")], check=True)
    return out


def build_sqlite():
    """The driver on SQLite with clang's default tail-call sleds (as
    record_overhead.py's drv_tail). None if the amalgamation is missing."""
    d = os.path.join(BUILD, "sqlite")
    c = os.path.join(d, "package/deps/sqlite3/sqlite3.c")
    if not os.path.exists(c):
        log("sqlite: no amalgamation at " + c + " (python3 bench/record_overhead.py --only sqlite fetches it)")
        return None
    o = os.path.join(d, "sqlite3_tail.o")
    if stale(o, c):
        log("build: sqlite3_tail.o (a minute or two)")
        subprocess.run(["clang", *XRAY, "-c", "-o", o, c], check=True)
    drv = os.path.join(d, "drv_tail")
    src = os.path.join(HERE, "sqlite_driver.c")
    if stale(drv, src, o):
        subprocess.run(["clang", *XRAY, "-I", HERE, "-I", os.path.dirname(c), "-o", drv, src, o,
                        "-lpthread", "-ldl", "-lm"], check=True)
    return drv


def build_rust():
    """examples/rust-bench's criterion binary, or None."""
    rb = os.path.join(ROOT, "examples", "rust-bench")
    env = dict(os.environ, RUSTC_BOOTSTRAP="1", RUSTFLAGS="-Zinstrument-xray=always")
    env["PATH"] = os.path.expanduser("~/.cargo/bin") + ":" + env["PATH"]
    log("build: examples/rust-bench (cargo, offline; minutes the first time)")
    r = subprocess.run(["cargo", "+stable", "bench", "--profile", "profiling", "--no-run", "-q"], cwd=rb, env=env,
                       capture_output=True, text=True)
    if r.returncode:
        log("rust-bench: does not build, skipped\n" + r.stderr[-600:])
        return None
    deps = os.path.join(rb, "target", "profiling", "deps")
    bins = [os.path.join(deps, f) for f in os.listdir(deps) if f.startswith("resolver-") and not f.endswith(".d")]
    return max(bins, key=os.path.getmtime) if bins else None


def run_once(sftrace, argv, encoding, writer, tmp, env_extra):
    """(wall seconds, events, log bytes); encoding None: untraced."""
    env = dict(os.environ, **env_extra)
    for k in ("SFTRACE_ENCODING", "SFTRACE_WRITER"):
        env.pop(k, None)
    out = tempfile.mkdtemp(prefix="sftrace-enc-", dir=tmp)
    try:
        if encoding is None:
            cmd = argv
        else:
            env["SFTRACE_ENCODING"] = encoding
            if writer:
                env["SFTRACE_WRITER"] = writer
            cmd = [sftrace, "record", "-o", os.path.join(out, "sf.log"), "--"] + argv
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        if p.returncode:
            raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-1500:]}")
        if "DROPPED" in p.stderr:
            log("warning: events were dropped: " + p.stderr.strip().splitlines()[-1])
        events = sum(int(m) for m in re.findall(r"^sftrace: wrote .*?: (\d+) events", p.stderr, re.M))
        size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".log"))
        return wall, events, size
    finally:
        shutil.rmtree(out, ignore_errors=True)


def bench(name, sftrace, argv, args, env_extra=None, sync=False):
    modes = [(None, None), ("raw", None), ("packed", None)]
    if sync:
        modes += [("raw", "sync"), ("packed", "sync")]
    samples = {m: [] for m in modes}
    for _ in range(args.runs):
        for m in modes:
            samples[m].append(run_once(sftrace, argv, m[0], m[1], args.tmp, env_extra or {}))
    base = statistics.median(s[0] for s in samples[(None, None)])
    rows = []
    for (enc, writer), ss in samples.items():
        walls = [s[0] for s in ss]
        med, lo = statistics.median(walls), min(walls)
        if enc is None:
            rows.append((name, "untraced", "", "", "", f"{med:.3f}", f"{lo:.3f}", ""))
            continue
        events = statistics.median(s[1] for s in ss)
        size = statistics.median(s[2] for s in ss)
        ns = (med - base) * 1e9 / events if events else 0
        label = enc + (" (" + writer + ")" if writer else "")
        rows.append((name, label, f"{events / 1e6:.2f}M", f"{size / 1e6:.1f}", f"{size / events:.2f}",
                     f"{med:.3f}", f"{lo:.3f}", f"{ns:.1f}"))
    return rows, samples


def add_common_args(ap):
    """The options bench/trim_cost.py shares."""
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fib-n", type=int, default=32)
    ap.add_argument("--sftrace-build", help="an existing build directory (else bench/build/sf is built)")
    ap.add_argument("--make", action="append", default=[], help="extra make argument for the build")
    ap.add_argument("--tmp", default="/tmp", help="where the logs go")
    ap.add_argument("cmd", nargs="*", help="after --: another command to measure")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="fib,sqlite,rust", help="comma-separated subset of fib,sqlite,rust")
    add_common_args(ap)
    args = ap.parse_args()
    only = set(args.only.split(","))
    sftrace = build_sftrace(args)
    rows = []
    if "fib" in only:
        r, _ = bench(f"fib {args.fib_n}", sftrace, [build_fib(), str(args.fib_n)], args, sync=True)
        rows += r
    if "sqlite" in only:
        drv = build_sqlite()
        if drv:
            r, _ = bench("sqlite 100k", sftrace, [drv, "100000"], args, sync=True)
            rows += r
    if "rust" in only:
        rb = build_rust()
        if rb:
            crit = tempfile.mkdtemp(prefix="sftrace-enc-crit-", dir=args.tmp)
            argv = [rb, "--bench", "--noplot", "--warm-up-time", "1", "--measurement-time", "2",
                    "--sample-size", "10", "^resolve_warm$"]
            r, _ = bench("rust-bench", sftrace, argv, args, env_extra={"CRITERION_HOME": crit})
            shutil.rmtree(crit, ignore_errors=True)
            rows += r
    if args.cmd:
        r, _ = bench(os.path.basename(args.cmd[0]), sftrace, args.cmd, args)
        rows += r
    head = ("workload", "encoding", "events", "log MB", "B/event", "wall med s", "wall min s", "ns/event")
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    print(f"{args.runs} runs each, interleaved; ns/event = (median wall - untraced median) / events")
    for row in [head] + rows:
        print("  ".join(str(v).rjust(w) if i >= 2 else str(v).ljust(w) for i, (v, w) in enumerate(zip(row, widths))))


if __name__ == "__main__":
    main()
