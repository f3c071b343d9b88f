#!/usr/bin/env python3
"""A long record --ring run stays bounded: the log file and the traced
process's memory do not grow with the run's length, only with the ring size
times the threads alive at once.

The program spawns THREADS worker threads at a time, each making calls for
about 50 ms and exiting, then the next THREADS, for DURATION seconds (so
thousands of threads come and go). Every second the script samples the
log's size and the traced process's resident and mapped memory, and prints
them, then the maximum against the bound:
    header + object chunk pages + (THREADS + 1) x ring slots x 68 KiB.

    nice python3 bench/ring_longrun.py --duration 600 --ring 1M --threads 4
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SFTRACE = os.path.join(ROOT, "build", "sftrace")

CHURN = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile int sink;
__attribute__((noinline)) void leaf(int i) { sink += i; }
__attribute__((noinline)) void step(int i) { leaf(i); leaf(i + 1); }
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
__attribute__((noinline)) void *worker(void *arg)
{
	double end = now() + 0.05;
	for (int i = 0; now() < end; i++)
		step(i);
	return arg;
}
int main(int argc, char **argv)
{
	double end = now() + atof(argv[1]);
	int nt = atoi(argv[2]);
	long spawned = 0;
	pthread_t th[64];
	while (now() < end) {
		for (int i = 0; i < nt; i++)
			pthread_create(&th[i], NULL, worker, NULL);
		for (int i = 0; i < nt; i++)
			pthread_join(th[i], NULL);
		spawned += nt;
	}
	printf("threads %ld\n", spawned);
	return 0;
}
"""


def status_kb(pid, key):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--ring", default="1M")
    ap.add_argument("--threads", type=int, default=4)
    a = ap.parse_args()
    subprocess.run(["make", "-s", "-C", ROOT, "all"], check=True)
    ring_bytes = int(a.ring[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[a.ring[-1]] \
        if a.ring[-1] in "KMG" else int(a.ring)
    with tempfile.TemporaryDirectory(prefix="sftrace-ringlong.") as w:
        src, exe, log = os.path.join(w, "churn.c"), os.path.join(w, "churn"), os.path.join(w, "sf.log")
        open(src, "w").write(CHURN)
        subprocess.run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1",
                        "-fnoxray-link-deps", "-o", exe, src, "-lpthread"], check=True)
        rec = subprocess.Popen([SFTRACE, "record", "--ring", a.ring, "-o", log, "--", exe, str(a.duration),
                                str(a.threads)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pid = None
        peak = {"size": 0, "rss": 0, "vm": 0}
        t0 = time.time()
        print(f"{'s':>6} {'log bytes':>12} {'VmRSS kB':>10} {'VmSize kB':>10}")
        while rec.poll() is None:
            time.sleep(1)
            if pid is None:
                kids = subprocess.run(["pgrep", "-P", str(rec.pid)], capture_output=True, text=True).stdout.split()
                pid = kids[0] if kids else None
            size = os.path.getsize(log) if os.path.exists(log) else 0
            rss, vm = (status_kb(pid, "VmRSS"), status_kb(pid, "VmSize")) if pid else (0, 0)
            peak = {"size": max(peak["size"], size), "rss": max(peak["rss"], rss), "vm": max(peak["vm"], vm)}
            el = time.time() - t0
            if el < 10 or int(el) % 30 == 0:
                print(f"{el:6.0f} {size:12} {rss:10} {vm:10}", flush=True)
        out, err = rec.communicate()
        slots = max(2, ring_bytes // 65536)
        bound = 4096 + 3 * 4096 + (a.threads + 1) * slots * (65536 + 4096)
        print(out.strip())
        print(err.strip().splitlines()[-1] if err.strip() else "")
        print(f"duration {a.duration:.0f} s, ring {a.ring}, {a.threads} threads at a time")
        print(f"peak log size {peak['size']} bytes, bound {bound} ({'within' if peak['size'] <= bound else 'OVER'})")
        print(f"peak VmRSS {peak['rss']} kB, peak VmSize {peak['vm']} kB")
        return 0 if peak["size"] <= bound else 1


if __name__ == "__main__":
    sys.exit(main())
