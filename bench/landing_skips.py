#!/usr/bin/env python3
"""Landings that abandon trampoline claims, at full size: a timer signals
the thread every US microseconds while it runs recorded calls and the
handler siglongjmps out, N times; then 1000 calls of after().
(tests/fixtures/landing_skips.c; tests/cases/test_landing_skips.py runs a
smaller one exactly.) For each sftrace given (default build/sftrace):
wall seconds, UNWIND events, after() entries, lost and dropped events,
pads ("(filler)" lines of dump), the log's size, and the program's
mappings, resident and virtual size at its end (/proc/self). A run that takes more than LIMIT seconds (300) is
stopped and reported as it stands.

    python3 bench/landing_skips.py [N] [US] [SFTRACE...]"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    us = sys.argv[2] if len(sys.argv) > 2 else "20"
    tools = sys.argv[3:] or [os.path.join(ROOT, "build", "sftrace")]
    limit = int(os.environ.get("LIMIT", "300"))  # seconds a run may take
    w = tempfile.mkdtemp(prefix="sftrace-landskip.")
    exe = os.path.join(w, "landing_skips")
    subprocess.run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1",
                    "-fno-optimize-sibling-calls", "-o", exe,
                    os.path.join(ROOT, "tests", "fixtures", "landing_skips.c")], check=True)
    for sft in tools:
        log = os.path.join(w, "sf.log")
        if os.path.exists(log):
            os.unlink(log)
        t0 = time.monotonic()
        p = subprocess.Popen([sft, "record", "-q", "--writer", "sync", "-o", log, "--", exe, str(n), "1000", us],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, LANDING_SKIPS_VM="1"))
        try:
            stdout, stderr = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:  # stopped (SIGINT to the program): what the log holds by then
            p.send_signal(signal.SIGINT)  # record passes it on to the program
            stdout, stderr = p.communicate()
            stdout = f"stopped after {limit} s " + stdout
        wall = time.monotonic() - t0
        vm = re.search(r"vm maps \d+ rss \d+ kB size \d+ kB", stderr)
        out = subprocess.run([sft, "dump", log], capture_output=True, text=True).stdout
        unw = len(re.findall(r"\bUNWIND\b", out))
        after = len(re.findall(r"ENTRY\s+after\b", out))
        pads = out.count("(filler)")
        m = re.search(r"(\d+) dropped, (\d+) lost", subprocess.run([sft, "info", log], capture_output=True,
                                                                     text=True).stdout)
        print(f"{sft}: {stdout.strip()!r} wall {wall:.1f} s, UNWIND {unw}, after {after}, "
              f"dropped {m.group(1)}, lost {m.group(2)}, pads {pads}, log {os.path.getsize(log) / 2**20:.1f} MiB, "
              f"{vm.group(0) if vm else 'vm: none (stopped)'}")
        os.unlink(log)
    os.unlink(exe)
    os.rmdir(w)


if __name__ == "__main__":
    main()
