"""Bounded recordings: record --max-size (one byte budget for the whole run,
across processes) and record --ring (per-thread flight-recorder rings and
their snapshots). Exact event counts from tests/fixtures/ring_pattern.c."""
import os
import re

from sfkit import SFTRACE, build_c, check, dump_info, eq, record, run, tmpdir

BATCH = 8182  # records of one 64 KiB slot (docs/FORMAT.md)
CAP_RE = re.compile(r"--max-size (\d+) bytes reached [\d.]+ s into the run \(pid \d+\): recording stopped there; "
                    r"(\d+) events? not recorded")


def pattern():
    return build_c("ring_pattern", ["ring_pattern.c"], libs=["-lpthread"])


def logs_in(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def n_events(log):
    p = run([SFTRACE, "dump", log])
    return sum(1 for line in p.stdout.splitlines() if re.match(r"^\s*\d+\s+\d+\s+(ENTRY|EXIT|TAIL)\s", line))


def capped_run(args, cap, writer):
    d = tmpdir()
    p, _ = record([pattern()] + args, out=os.path.join(d, "sf.log"),
                  args=["--max-size", str(cap), "--writer", writer])
    return d, p


def test_max_size_single_process_exact():
    # 4 * 100000 + 4 events. sync: header 4096 + slot 69632 + three 65536-byte
    # batches fit in 300K, a fourth does not; with a writer thread the spare
    # slot (69632) leaves room for two.
    for writer, batches in (("sync", 3), ("thread", 2)):
        d, p = capped_run(["loop", "100000"], 300 << 10, writer)
        eq(p.returncode, 0, "exit code")
        eq(p.stdout, "ring_pattern loop ok\n", "the program's output")
        logs = logs_in(d)
        eq(len(logs), 1, f"{writer}: logs {logs}")
        check(sum(os.path.getsize(x) for x in logs) <= 300 << 10, f"{writer}: size over the cap")
        got = n_events(logs[0])
        eq(got, batches * BATCH, f"{writer}: events recorded")
        m = CAP_RE.search(p.stderr)
        check(m, p.stderr)
        eq(int(m.group(1)), 300 << 10, "cap reported")
        eq(int(m.group(2)), 400004 - got, f"{writer}: events not recorded")
        check(f"{400004 - got} DROPPED" in p.stderr, p.stderr)


def test_max_size_not_reached_says_nothing():
    d, p = capped_run(["loop", "1000"], 10 << 20, "auto")
    check("--max-size" not in p.stderr, p.stderr)
    eq(n_events(logs_in(d)[0]), 4004, "every event")


def test_max_size_smaller_than_a_slot():
    # The header fits, the first slot does not: a log with no events, all
    # of them counted.
    d, p = capped_run(["loop", "1000"], 8 << 10, "sync")
    eq(p.stdout, "ring_pattern loop ok\n")
    eq(n_events(logs_in(d)[0]), 0, "no events")
    eq(int(CAP_RE.search(p.stderr).group(2)), 4004, "all counted")


def test_max_size_across_processes():
    # A parent and its fork+exec'd child share one budget: the logs together
    # stay under it, each keeps whole batches, and every event of both is
    # either in a log or counted.
    for cap in (300 << 10, 600 << 10):
        d, p = capped_run(["fork", "100000"], cap, "sync")
        eq(p.returncode, 0)
        eq(p.stdout, "ring_pattern loop ok\nring_pattern fork ok\n", "outputs of both processes")
        logs = logs_in(d)
        check(sum(os.path.getsize(x) for x in logs) <= cap, f"{cap}: logs over the cap")
        counts = [n_events(x) for x in logs]
        for c in counts:
            eq(c % BATCH, 0, f"{cap}: whole batches only: {counts}")
        m = CAP_RE.search(p.stderr)
        check(m, p.stderr)
        eq(sum(counts) + int(m.group(2)), 2 * 400004, f"{cap}: recorded + not recorded: {counts}")
