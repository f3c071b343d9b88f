#!/usr/bin/python3
"""The sftrace end-to-end test runner.

Each tests/cases/test_*.py module holds test_* functions, one behaviour
each. Fixtures are built on demand (tests/lib/sfkit.py). Prints one line per
case and ends with 'N passed, N failed'.

    python3 tests/run.py                 # everything
    python3 tests/run.py -k filter       # cases whose name contains 'filter'
    python3 tests/run.py -x              # stop at the first failure
    python3 tests/run.py --durations 15  # then the 15 slowest cases
    python3 tests/run.py -j 2            # modules two at a time (SERIAL ones alone, at the end)
    python3 tests/run.py --all           # the long tier (tests/LONG) too; --long: only it
"""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import subprocess
import shutil
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
import sfkit  # noqa: E402


# With -j N, whole modules run N at a time, each in a process of its own
# (their module-level caches stay theirs); the cases of a module in order.
# Modules that share files outside their tmpdirs run one after the other in
# one job; SERIAL modules and cases run alone once every other job has ended.
TOGETHER = [
    # build/rust-bench, build/cargo and build/filter: crates and their traces
    {"test_cargo", "test_filter", "test_rust_workflow", "test_skeptic31", "test_trace_processor"},
]
SERIAL = {  # modules or single cases (module.case)
    # RLIMIT_NPROC as uid 65534 counts every process of that uid
    "test_skeptic24k.test_nproc_limit_left_to_the_program",
    "test_skeptic24k.test_nproc_limit_left_to_the_program_as_its_user",
    # net self times measured at SCHED_FIFO (realtime()): a neighbour's load shows in them
    "test_net_times.test_net_times_one_level_down",
    "test_net_times.test_parent_of_a_million_empty_calls_shows_its_untraced_time",
    "test_skeptic25m.test_skeptic25m_landing_frame_self_time_does_not_grow_with_the_frames_abandoned",
    "test_skeptic25q.test_abandoned_frame_self_time",
    "test_skeptic28m.test_skeptic28m_net_parent_of_1m_empty_children",
    "test_skeptic28s.test_net_self_time_of_a_function_that_calls_one_tiny_function",
    # wall-time bounds of tens of ms on the program's own calls
    "test_skeptic24d.test_blocking_close_stalls_first_call_of_fork_child_at_most_20ms",
    "test_skeptic24d.test_dup2_onto_a_fresh_runtime_number_does_not_stall",
    "test_skeptic24d.test_clone_vfork_without_vm_does_not_hold_other_threads",
    "test_production_runtime.test_vfork_clone_wait_is_not_held_by_a_posix_spawn_in_another_thread",
}


def long_tier():
    """tests/LONG's case names: the cases left out unless asked for."""
    names = set()
    with open(os.path.join(HERE, "LONG")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                names.add(line[0])
    return names


def pick_tier(cases, args):
    """-k picks from every case; otherwise the long tier only with --all
    (everything) or --long (only it)."""
    if args.k or args.cases or args.all:
        return cases
    slow = long_tier()
    gone = slow - {c[0] for c in cases}
    if gone:  # a renamed case would otherwise drop out of both tiers unseen
        sys.exit(f"run.py: tests/LONG names cases that do not exist: {' '.join(sorted(gone))}")
    return [c for c in cases if (c[0] in slow) == args.long]


def load_cases(pattern):
    cases = []
    cdir = os.path.join(HERE, "cases")
    for fn in sorted(os.listdir(cdir)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        name = fn[:-3]
        spec = importlib.util.spec_from_file_location(name, os.path.join(cdir, fn))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for attr in sorted(vars(mod)):
            fn_obj = getattr(mod, attr)
            if attr.startswith("test_") and callable(fn_obj):
                full = f"{name}.{attr}"
                if not pattern or any(p in full for p in pattern):
                    cases.append((full, fn_obj))
    return cases


def remove_dirs(kept):
    """The run's temporary directories go at its end (a case may reuse one
    an earlier case made), but those a failed case made, and all of them
    with SFTRACE_KEEP_TMP=1: a full run leaves gigabytes otherwise."""
    if os.environ.get("SFTRACE_KEEP_TMP"):
        return
    for d in sfkit.MADE_DIRS:
        if d not in kept:
            shutil.rmtree(d, ignore_errors=True)
    if kept:
        print(f"kept for a look (failed cases): {' '.join(sorted(kept))}")


def jobs_of(cases):
    """The -j jobs: [(serial, [case names])], in the cases' order, the
    TOGETHER sets merged, SERIAL ones last."""
    jobs = {}
    for name, _ in cases:
        mod = name.split(".", 1)[0]
        if name in SERIAL:
            key = name
        else:
            key = next((min(t) for t in TOGETHER if mod in t), mod)
        jobs.setdefault(key, []).append(name)
    par = [(False, v) for k, v in jobs.items() if k not in SERIAL]
    ser = [(True, v) for k, v in jobs.items() if k in SERIAL]
    par.sort(key=lambda j: -len(j[1]))  # the long ones first (by cases: no timings at hand)
    return par + ser


def run_jobs(cases, args):
    """-j N: each job is `run.py --cases FILE --results FILE` (its lines go
    straight to our stdout). Returns what the serial loop returns."""
    import tempfile
    jobs = jobs_of(cases)
    tmp = tempfile.mkdtemp(prefix="sftrace-run-")
    results = []
    stop = []

    def one(i, names):
        if stop:
            return
        cf, rf = os.path.join(tmp, f"{i}.cases"), os.path.join(tmp, f"{i}.json")
        with open(cf, "w") as f:
            f.write("\n".join(names))
        cmd = [sys.executable, os.path.abspath(__file__), "--cases", cf, "--results", rf] + (["-x"] if args.x else [])
        subprocess.run(cmd, stdin=subprocess.DEVNULL)
        try:
            with open(rf) as f:
                r = json.load(f)
        except (OSError, ValueError):  # the job died: its unfinished cases failed
            r = {"passed": 0, "failed": 1, "skipped": 0, "durations": [],
                 "failures": [[names[0] if names else "?", "the job's runner died"]]}
        results.append(r)
        if r["failed"] and args.x:
            stop.append(1)

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as ex:
        futs = [ex.submit(one, i, names) for i, (serial, names) in enumerate(jobs) if not serial]
        concurrent.futures.wait(futs)
        for f in futs:
            f.result()
    for i, (serial, names) in enumerate(jobs):
        if serial:
            one(i, names)
    shutil.rmtree(tmp, ignore_errors=True)
    out = {"passed": 0, "failed": 0, "skipped": 0, "durations": [], "failures": []}
    for r in results:
        for k in out:
            out[k] += r[k]
    return out


def default_signals():
    """Cases compare programs' signal dispositions with glibc's untraced
    behaviour: a runner started as an asynchronous command of a shell
    without job control inherits SIGINT and SIGQUIT ignored, and so did
    every program it ran (skeptic 24n/24v/24z's untraced expectations
    failed, SigIgn 0x6). Both back to the default for the children."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def main():
    default_signals()
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", action="append", help="run cases whose name contains this")
    ap.add_argument("-x", action="store_true", help="stop at the first failure")
    ap.add_argument("--durations", type=int, default=0, metavar="N",
                    help="at the end, list the N slowest cases (the suite must stay well under 20 minutes on CI)")
    ap.add_argument("-j", type=int, default=1, metavar="N",
                    help="run N modules at a time (TOGETHER and SERIAL above say which may not)")
    tier = ap.add_mutually_exclusive_group()
    tier.add_argument("--all", action="store_true", help="the long tier (tests/LONG) too")
    tier.add_argument("--long", action="store_true", help="only the long tier (tests/LONG)")
    ap.add_argument("--cases", help=argparse.SUPPRESS)    # -j's jobs: a file of exact case names
    ap.add_argument("--results", help=argparse.SUPPRESS)  # -j's jobs: where the counts go (JSON)
    args = ap.parse_args()
    cases = pick_tier(load_cases(args.k), args)
    if args.cases:
        with open(args.cases) as f:
            want = set(f.read().split())
        cases = [c for c in cases if c[0] in want]
    passed = failed = skipped = 0
    failures = []
    durations = []
    t0 = time.time()
    kept = set()  # tmpdirs made while a case failed: left for a look
    if args.j > 1 and not args.cases:
        r = run_jobs(cases, args)
        passed, failed, skipped = r["passed"], r["failed"], r["skipped"]
        durations = [tuple(d) for d in r["durations"]]
        failures = [tuple(f) for f in r["failures"]]
        cases_run = []
    else:
        cases_run = cases
    for name, fn in cases_run:
        start = time.time()
        made = len(sfkit.MADE_DIRS)
        try:
            try:
                fn()
            finally:
                durations.append((time.time() - start, name))
        except sfkit.Skip as e:
            skipped += 1
            print(f"SKIP {name}: {e}", flush=True)
            continue
        except Exception:  # noqa: BLE001 - report every failure
            failed += 1
            failures.append((name, traceback.format_exc()))
            print(f"FAIL {name} ({time.time() - start:.1f}s)", flush=True)
            print(traceback.format_exc(), flush=True)
            kept.update(sfkit.MADE_DIRS[made:])
            if args.x:
                break
            continue
        passed += 1
        print(f"PASS {name} ({time.time() - start:.1f}s)", flush=True)
    if args.results:
        with open(args.results, "w") as f:
            json.dump({"passed": passed, "failed": failed, "skipped": skipped, "durations": durations,
                       "failures": failures}, f)
        remove_dirs(kept)
        return 1 if failed else 0
    print(f"\n{len(cases)} cases in {time.time() - t0:.0f}s")
    remove_dirs(kept)
    if args.durations > 0:
        print(f"slowest {min(args.durations, len(durations))}:")
        for secs, name in sorted(durations, reverse=True)[:args.durations]:
            print(f"  {secs:7.1f}s  {name}")
    for name, text in failures:
        # again at the end, where a CI log's tail shows it
        tail = text.rstrip().splitlines()[-12:]
        print(f"  failed: {name}\n" + "\n".join("      " + line[:400] for line in tail))
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
