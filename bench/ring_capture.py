#!/usr/bin/env python3
"""Trigger capture under load (issue 26): a program making ~100M events/s
on each of two threads makes one 20 ms call to slow() and goes on for a
second. Recorded with `record --ring SIZE --trigger '^slow$>10ms'`, the
snapshot must hold the slow call, closing main's window, and the time
before it that the ring reaches (at least 1 ms); the program's own work
must not stall for more than 1 ms when the snapshot is taken (its longest
block of 1024 calls after the trigger, against before it).

bench/trigger_capture.c is the program. Runs alternate untraced / traced;
the table gives, per traced run: events/s of each thread, main's window
before slow's entry (ms of events), whether the window ends at slow's exit,
whether every thread's window ends there, and the longest block after the
trigger.

    nice python3 bench/ring_capture.py [--runs 5] [--ring 32M] [--after 0.05]

The process's own log (a ring large enough to reach back past the
trigger) gives the freeze's cost as the program saw it: main's gap from
slow's exit to its next event, and the other thread's longest gap between
two events in the 10 ms after the trigger (it freezes at its next slot
hand-off). "longest block" is the program's own longest run of 1024 calls
after the trigger, traced and untraced: on a loaded machine scheduling
dominates it.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SFTRACE = os.path.join(ROOT, "build", "sftrace")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
from record_overhead import XRAY  # noqa: E402

LINE = re.compile(r"^(main|other) (before|after): ([\d.]+) M events/s, longest 1024 calls ([\d.]+) ms$", re.M)


def program_stats(out):
    return {(m.group(1), m.group(2)): (float(m.group(3)), float(m.group(4))) for m in LINE.finditer(out)}


def snapshot_window(path):
    """main's window before slow's entry (ms), whether it ends with slow's
    exit, and whether every thread's events end by then."""
    out = subprocess.run([SFTRACE, "dump", path], capture_output=True, text=True, check=True).stdout
    pid = int(re.search(r"^pid: (\d+)", out, re.M).group(1))
    evs = [line.split() for line in out.partition("\nevents:\n")[2].splitlines()]
    evs = [(int(e[0]), int(e[1]), e[2], e[3]) for e in evs if len(e) == 4 and e[2] in ("ENTRY", "EXIT", "TAIL")]
    main = [e for e in evs if e[1] == pid]
    ends = [(k, f) for _, _, k, f in main[-2:]] == [("ENTRY", "slow"), ("EXIT", "slow")]
    before_ms = (main[-2][0] - main[0][0]) / 1e6 if ends else 0.0
    all_end = max(e[0] for e in evs) <= main[-1][0]
    return before_ms, ends, all_end, main[-1][0]


def stalls(log, t_exit):
    """From the process's log (its ring reaches back past the trigger):
    main's gap from slow's exit to its next event (the trigger's own
    freeze), and the other thread's longest gap between two events in the
    10 ms after the trigger (its freeze at its next slot hand-off), in us."""
    out = subprocess.run([SFTRACE, "dump", log], capture_output=True, text=True, check=True).stdout
    pid = int(re.search(r"^pid: (\d+)", out, re.M).group(1))
    evs = [line.split() for line in out.partition("\nevents:\n")[2].splitlines()]
    evs = [(int(e[0]), int(e[1]), e[3]) for e in evs if len(e) == 4 and e[2] in ("ENTRY", "EXIT", "TAIL")]
    main = [e for e in evs if e[1] == pid]
    # slow's exit: its last event (the log's own time fit, not the snapshot's)
    i = max((k for k, e in enumerate(main) if e[2] == "slow"), default=None)
    main_gap = (main[i + 1][0] - main[i][0]) / 1e3 if i is not None and i + 1 < len(main) else float("nan")
    t_exit = main[i][0] if i is not None else t_exit
    other = [e[0] for e in evs if e[1] != pid and t_exit - 1000 <= e[0] <= t_exit + 10_000_000]
    other_gap = max((b - a for a, b in zip(other, other[1:])), default=float("nan")) / 1e3
    return main_gap, other_gap


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ring", default="32M")
    ap.add_argument("--after", default="0.05", help="seconds of work after the slow call")
    a = ap.parse_args()
    subprocess.run(["make", "-s", "-C", ROOT, "all"], check=True)
    with tempfile.TemporaryDirectory(prefix="sftrace-capture.") as w:
        exe = os.path.join(w, "trigger_capture")
        subprocess.run(["clang"] + XRAY + ["-o", exe, os.path.join(HERE, "trigger_capture.c"), "-lpthread"],
                       check=True)
        print(f"| run | main Mev/s | other Mev/s | main window before slow | ends at slow's exit | all threads end there "
              f"| main's freeze | other's longest gap in 10 ms after | longest block after (main, other) "
              f"| untraced (main, other) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in range(a.runs):
            base = program_stats(subprocess.run([exe, "20", a.after], capture_output=True, text=True).stdout)
            d = os.path.join(w, f"run{r}")
            os.mkdir(d)
            p = subprocess.run([SFTRACE, "record", "-q", "--ring", a.ring, "--trigger", "^slow$>10ms", "-o",
                                os.path.join(d, "sf.log"), "--", exe, "20", a.after], capture_output=True, text=True)
            st = program_stats(p.stdout)
            if len(st) != 4 or len(base) != 4:
                print(f"| {r} | failed: exit {p.returncode}: {p.stderr.strip()[-300:]} {p.stdout.strip()[-200:]} |")
                continue
            snaps = [f for f in os.listdir(d) if ".snap." in f]
            if len(snaps) != 1:
                print(f"| {r} | snapshots: {snaps} |")
                continue
            before_ms, ends, all_end, t_exit = snapshot_window(os.path.join(d, snaps[0]))
            main_gap, other_gap = stalls(os.path.join(d, "sf.log"), t_exit)
            print(f"| {r} | {st[('main', 'after')][0]:.0f} | {st[('other', 'after')][0]:.0f} | {before_ms:.2f} ms "
                  f"| {'yes' if ends else 'NO'} | {'yes' if all_end else 'NO'} "
                  f"| {main_gap:.1f} us | {other_gap:.1f} us "
                  f"| {st[('main', 'after')][1]:.3f}, {st[('other', 'after')][1]:.3f} ms "
                  f"| {base[('main', 'after')][1]:.3f}, {base[('other', 'after')][1]:.3f} ms |")


if __name__ == "__main__":
    main()
