#!/usr/bin/python3
"""The sftrace end-to-end test runner.

Each tests/cases/test_*.py module holds test_* functions, one behaviour
each. Fixtures are built on demand (tests/lib/sfkit.py). Prints one line per
case and ends with 'N passed, N failed'.

    python3 tests/run.py                 # everything
    python3 tests/run.py -k filter       # cases whose name contains 'filter'
    python3 tests/run.py -x              # stop at the first failure
    python3 tests/run.py --durations 15  # then the 15 slowest cases
"""
import argparse
import importlib.util
import os
import shutil
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
import sfkit  # noqa: E402


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", action="append", help="run cases whose name contains this")
    ap.add_argument("-x", action="store_true", help="stop at the first failure")
    ap.add_argument("--durations", type=int, default=0, metavar="N",
                    help="at the end, list the N slowest cases (the suite must stay well under 20 minutes on CI)")
    args = ap.parse_args()
    cases = load_cases(args.k)
    passed = failed = skipped = 0
    failures = []
    durations = []
    t0 = time.time()
    kept = set()  # tmpdirs made while a case failed: left for a look
    for name, fn in cases:
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
    print(f"\n{len(cases)} cases in {time.time() - t0:.0f}s")
    remove_dirs(kept)
    if args.durations > 0:
        print(f"slowest {min(args.durations, len(durations))}:")
        for secs, name in sorted(durations, reverse=True)[:args.durations]:
            print(f"  {secs:7.1f}s  {name}")
    for name, _ in failures:
        print(f"  failed: {name}")
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
