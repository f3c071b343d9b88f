#!/usr/bin/env python3
"""Flight-recorder cost per event: record --ring against normal recording,
and what a trigger costs the functions that are not triggers.

A recursive fib (every call an instrumented entry and exit, nothing else)
runs untraced, under `record`, under `record --ring 1M`, and under
`record --ring 1M --trigger never_called` (a trigger on a function fib
never calls: fib keeps the fast path; only never_called's sleds take the
slow path). Runs are interleaved round-robin; the table gives the median and
range of ns per event over the untraced run (the program's own timing of
the recursion, so start-up and exit are not counted).

    python3 bench/ring_overhead.py [--n 30] [--runs 7]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SFTRACE = os.path.join(ROOT, "build", "sftrace")

FIB = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) void never_called(void) { puts("never"); }
__attribute__((noinline)) uint64_t fib(uint64_t n)
{
	if (n < 2)
		return n;
	uint64_t a = fib(n - 1), b = fib(n - 2);
	__asm__ volatile("" ::: "memory");
	return a + b;
}
int main(int argc, char **argv)
{
	int n = atoi(argv[1]);
	if (n < 0)
		never_called();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t v = fib((uint64_t)n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("fib %d = %llu work_ns %lld\n", n, (unsigned long long)v,
	       (long long)((t1.tv_sec - t0.tv_sec) * 1000000000LL + t1.tv_nsec - t0.tv_nsec));
	return 0;
}
"""


def fib_calls(n):
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1  # fib(n) makes 2*fib(n+1)-1 calls


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    subprocess.run(["make", "-s", "-C", ROOT, "all"], check=True)
    with tempfile.TemporaryDirectory(prefix="sftrace-ringbench.") as w:
        src = os.path.join(w, "fib.c")
        exe = os.path.join(w, "fib")
        open(src, "w").write(FIB)
        subprocess.run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1",
                        "-fno-optimize-sibling-calls", "-fnoxray-link-deps", "-o", exe, src], check=True)
        events = 2 * fib_calls(a.n) + 2
        modes = {
            "untraced": [],
            "record": [SFTRACE, "record", "-q", "--force", "-o", os.path.join(w, "n.log"), "--"],
            "record --ring 1M": [SFTRACE, "record", "-q", "--force", "--ring", "1M", "-o",
                                 os.path.join(w, "r.log"), "--"],
            "--ring 1M --trigger never_called": [SFTRACE, "record", "-q", "--force", "--ring", "1M",
                                                 "--trigger", "^never_called$", "-o",
                                                 os.path.join(w, "t.log"), "--"],
        }
        times = {m: [] for m in modes}
        sizes = {}
        for r in range(a.runs):
            for m, pre in modes.items():
                p = subprocess.run(pre + [exe, str(a.n)], capture_output=True, text=True, check=True)
                times[m].append(int(re.search(r"work_ns (\d+)", p.stdout).group(1)))
                if pre:
                    sizes[m] = os.path.getsize(pre[pre.index("-o") + 1])
        base = statistics.median(times["untraced"])
        print(f"fib({a.n}): {events} events, {a.runs} runs each, interleaved")
        print(f"{'mode':36} {'ns/event median':>16} {'range':>16} {'log bytes':>12}")
        for m in modes:
            per = [(t - base) / events for t in times[m]]
            med = statistics.median(per)
            print(f"{m:36} {med:16.2f} {min(per):7.2f}..{max(per):<7.2f} {sizes.get(m, 0):12}")


if __name__ == "__main__":
    sys.exit(main())
