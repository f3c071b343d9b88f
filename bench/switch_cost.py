#!/usr/bin/env python3
"""What record --paused and sftrace resume / pause cost (issue 26).

1. While paused: fib(N) (bench/fib.c) and the SQLite workload
   (bench/sqlite_driver.c, ROWS rows) untraced against `sftrace record
   --paused` never resumed, interleaved round by round. Prints the median
   and the spread (min-max) of the in-program time and of the wall time,
   and the paused/untraced ratio of the medians (target: within 3%).

2. Switching: a generated program with FUNCS instrumented functions
   (2 sleds each) and 8 threads calling them nonstop, each measuring the
   longest gap between two of its loop iterations. Each round: the gaps of
   a quiet window (no switch), then a resume and a pause, each timed by the
   command (wall, signal to answer) and by the runtime (patching alone),
   with the threads' longest gap during it. Target: at most 50 ms per
   switch, no thread stopped longer than 1 ms beyond what the quiet window
   shows (on a machine with fewer CPUs than threads, the scheduler's time
   slices are in both).

    python3 bench/switch_cost.py [--rounds 11] [--fib 32] [--sqlite-rows 100000] [--funcs 50000] [--switch-rounds 5]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, os.environ.get("SFTRACE_BUILD", "build"))
SFT = os.path.join(BUILD, "sftrace")
XRAY = ["-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1"]

HOT = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define NFUNCS %(funcs)d
#define THREADS 8
volatile uint64_t sink;
%(defs)s
typedef void (*fn)(void);
static fn table[NFUNCS] = {%(table)s};
static uint64_t gap[THREADS];
static volatile int resetting;
static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static void *run(void *arg)
{
	long me = (long)arg;
	uint64_t last = now();
	for (uint64_t i = (uint64_t)me * 7919;; i++) {
		table[i %% NFUNCS]();
		uint64_t t = now();
		if (t - last > __atomic_load_n(&gap[me], __ATOMIC_RELAXED))
			__atomic_store_n(&gap[me], t - last, __ATOMIC_RELAXED);
		last = t;
	}
	return 0;
}
int main(void)
{
	pthread_t th[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&th[i], 0, run, (void *)i);
	printf("pid %%d\n", (int)getpid());
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		if (line[0] == 'r') { /* reset */
			for (int i = 0; i < THREADS; i++)
				__atomic_store_n(&gap[i], 0, __ATOMIC_RELAXED);
		} else if (line[0] == 'g') { /* the longest gap of any thread, ns */
			uint64_t m = 0;
			for (int i = 0; i < THREADS; i++)
				m = gap[i] > m ? gap[i] : m;
			printf("%%llu\n", (unsigned long long)m);
			fflush(stdout);
		} else if (line[0] == 'q') {
			_exit(0);
		}
	}
	return 0;
}
"""


def spread(xs):
    return f"median {statistics.median(xs):9.1f}  min {min(xs):9.1f}  max {max(xs):9.1f}"


def sqlite_driver(work):
    """bench/sqlite_driver.c over the SQLite amalgamation with sleds (about
    3,800), built once into bench/build/sqlite/ (shared with
    record_overhead.py, which fetches it the same way)."""
    d = os.path.join(ROOT, "bench", "build", "sqlite")
    os.makedirs(d, exist_ok=True)
    c = os.path.join(d, "package", "deps", "sqlite3", "sqlite3.c")
    if not os.path.exists(c):
        print("build: fetching the SQLite amalgamation (npm pack better-sqlite3@12)", file=sys.stderr)
        subprocess.run(["npm", "pack", "better-sqlite3@12", "--pack-destination", d], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tgz = [n for n in os.listdir(d) if n.endswith(".tgz")][0]
        subprocess.run(["tar", "xzf", os.path.join(d, tgz), "-C", d, "package/deps/sqlite3/sqlite3.c",
                        "package/deps/sqlite3/sqlite3.h"], check=True)
    obj = os.path.join(d, "sqlite3_tail.o")
    if not os.path.exists(obj) or os.path.getmtime(obj) < os.path.getmtime(c):
        print("build: sqlite3_tail.o (a few minutes)", file=sys.stderr)
        subprocess.run(["clang", "-O2", "-fxray-instrument", "-fxray-instruction-threshold=1", "-c", "-o", obj, c],
                       check=True)
    exe = os.path.join(work, "sqlite_driver")
    subprocess.run(["clang"] + XRAY + ["-I", os.path.join(ROOT, "bench"), "-I", os.path.dirname(c), "-o", exe,
                                       os.path.join(ROOT, "bench", "sqlite_driver.c"), obj, "-lpthread", "-ldl",
                                       "-lm"], check=True)
    return exe


def paused_cost(work, args):
    fib = os.path.join(work, "fib")
    subprocess.run(["clang"] + XRAY + ["-fno-optimize-sibling-calls", "-I", os.path.join(ROOT, "bench"), "-o", fib,
                                       os.path.join(ROOT, "bench", "fib.c")], check=True)
    workloads = [(f"fib({args.fib})", [fib, str(args.fib)])]
    if args.sqlite_rows:
        workloads.append((f"SQLite {args.sqlite_rows} rows", [sqlite_driver(work), str(args.sqlite_rows)]))
    for title, cmd in workloads:
        paused_cost_of(work, args, title, cmd)


def paused_cost_of(work, args, title, cmd):
    # "paused": the program alone under the runtime, as record --paused
    # starts it (its wall time is the process's); "record": the whole
    # `sftrace record --paused` command, its own start-up included.
    paused_env = dict(os.environ, LD_PRELOAD=os.path.join(BUILD, "libsftrace.so"), SFTRACE_PAUSED="1",
                      SFTRACE_OUTPUT_FILE=os.path.join(work, "pre.log"))
    runs = {"untraced": (cmd, None),
            "paused": (cmd, paused_env),
            "record": ([SFT, "record", "-q", "--paused", "-o", os.path.join(work, "p", "sf.log"), "--"] + cmd, None)}
    if args.before_lib:  # another build's runtime, paused the same way, in the same rounds
        runs["before"] = (cmd, dict(paused_env, LD_PRELOAD=os.path.abspath(args.before_lib)))
    got = {k: ([], [], []) for k in runs}
    for r in range(args.rounds):
        order = list(runs) if r % 2 == 0 else list(reversed(runs))
        for k in order:
            t0 = time.monotonic()
            p = subprocess.Popen(runs[k][0], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 env=runs[k][1])
            out = p.stdout.read()
            _, status, ru = os.wait4(p.pid, 0)
            wall = (time.monotonic() - t0) * 1e3
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode:
                sys.exit(f"{runs[k][0]} exited {p.returncode}")
            work_ns = int(re.search(r"work_ns (\d+)", out).group(1))
            got[k][0].append(work_ns / 1e6)
            got[k][1].append(wall)
            # CPU time (user + sys) of the process and those it waited for:
            # less at the mercy of a loaded machine than wall time.
            got[k][2].append((ru.ru_utime + ru.ru_stime) * 1e3)
    print(f"While paused: {title}, {args.rounds} interleaved rounds (ms)")
    for k in runs:
        print(f"  {k:9s} in-program {spread(got[k][0])}")
        print(f"  {k:9s} wall       {spread(got[k][1])}")
        print(f"  {k:9s} CPU        {spread(got[k][2])}")
    for k in [k for k in runs if k != "untraced"]:
        for i, what in ((0, "in-program"), (1, "wall"), (2, "CPU")):
            ratio = statistics.median(got[k][i]) / statistics.median(got["untraced"][i])
            print(f"  {k}/untraced {what}: {ratio:.4f} ({(ratio - 1) * 100:+.2f}%)")


def switch_cost(work, args):
    n = args.funcs
    # Built once into bench/build/ (gitignored): that many functions take minutes.
    cache = os.path.join(ROOT, "bench", "build")
    os.makedirs(cache, exist_ok=True)
    src = os.path.join(cache, f"switch_hot_{n}.c")
    exe = os.path.join(cache, f"switch_hot_{n}")
    t0 = time.monotonic()
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(__file__):
        defs = "\n".join(f"__attribute__((noinline)) void f{i}(void) {{ sink += {i}; }}" for i in range(n))
        table = ",".join(f"f{i}" for i in range(n))
        with open(src, "w") as f:
            f.write(HOT % {"funcs": n, "defs": defs, "table": table})
        # No -g: debug information for that many functions only slows the build.
        subprocess.run(["clang"] + [f for f in XRAY if f != "-g"] + ["-o", exe + ".tmp", src, "-lpthread"], check=True)
        os.replace(exe + ".tmp", exe)
    print(f"\nSwitching: {n} functions ({2 * n} sleds + main's), 8 busy threads "
          f"(built in {time.monotonic() - t0:.0f} s); CPUs: {os.cpu_count()}")
    p = subprocess.Popen([SFT, "record", "-q", "--paused", "-o", os.path.join(work, "s", "sf.log"), "--", exe],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    pid = p.stdout.readline().split()[1]

    def cmd(c):
        p.stdin.write(c + "\n")
        p.stdin.flush()
        return p.stdout.readline().strip() if c == "g" else None

    def switch(what):
        cmd("r")
        t0 = time.monotonic()
        out = subprocess.run([SFT, what, "-v", pid], capture_output=True, text=True, check=True).stdout
        wall = (time.monotonic() - t0) * 1e3
        m = re.search(r"(\d+) sleds (?:un)?patched in ([\d.]+) ms", out)
        v = re.search(r"([\d.]+) ms reading the sled maps, ([\d.]+) ms writing the text, ([\d.]+) ms of CPU; "
                      r"([\d.]+) ms from the signal", out)
        return wall, float(m.group(2)), int(m.group(1)), int(cmd("g")) / 1e6, float(v.group(1)), \
            float(v.group(2)), float(v.group(4)), float(v.group(3))

    time.sleep(0.5)
    rows = {"quiet": [], "resume": [], "pause": []}
    for _ in range(args.switch_rounds):
        cmd("r")
        time.sleep(0.05)
        rows["quiet"].append((0, 0, 0, int(cmd("g")) / 1e6, 0, 0, 0, 0))
        rows["resume"].append(switch("resume"))
        time.sleep(0.05)
        rows["pause"].append(switch("pause"))
        time.sleep(0.05)
    cmd("q")
    p.wait()
    print(f"  {args.switch_rounds} rounds (ms): command wall (signal to answer), runtime patching, "
          "longest thread gap")
    for k, r in rows.items():
        if k == "quiet":
            print(f"  {k:7s} window of 50 ms, no switch:         longest gap {spread([x[3] for x in r])}")
            continue
        print(f"  {k:7s} sleds {r[0][2]}: wall {spread([x[0] for x in r])}")
        print(f"  {'':7s} signal to answer         {spread([x[6] for x in r])}")
        print(f"  {'':7s} runtime's switch         {spread([x[1] for x in r])}")
        print(f"  {'':7s}   reading sled maps      {spread([x[4] for x in r])}")
        print(f"  {'':7s}   writing the text       {spread([x[5] for x in r])}")
        print(f"  {'':7s}   of which CPU           {spread([x[7] for x in r])}")
        print(f"  {'':7s} longest gap              {spread([x[3] for x in r])}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--fib", type=int, default=32)
    ap.add_argument("--sqlite-rows", type=int, default=100000, help="0: no SQLite workload")
    ap.add_argument("--before-lib", help="another build's libsftrace.so, measured paused alongside")
    ap.add_argument("--funcs", type=int, default=50000)
    ap.add_argument("--switch-rounds", type=int, default=5)
    ap.add_argument("--only", choices=["paused", "switch"])
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", ROOT, "all"], check=True)
    with tempfile.TemporaryDirectory(prefix="sftrace-switchbench-") as work:
        if args.only != "switch":
            paused_cost(work, args)
        if args.only != "paused":
            switch_cost(work, args)


if __name__ == "__main__":
    sys.exit(main())
