"""record --ring: an exited thread's batches stay in the log only until a
later thread takes their slots (the file is bounded by SIZE times the
threads alive at once). What that overwrites is counted and reported,
never lost silently. Exact counts from tests/fixtures/ring_reuse.c: thread
A makes 80004 events (hot, the trigger, at its 40002nd), exits; the
snapshot is written; then B (and C) run. Every batch is 8182 records."""
import json
import os
import re

from sfkit import SFTRACE, build_c, calls_fixture, check, eq, record, run, tmpdir

BATCH = 8182


def reuse_run(n, m):
    d = tmpdir()
    exe = build_c("ring_reuse", ["ring_reuse.c"], libs=["-lpthread"])
    p, log = record([exe, d, str(n), str(m)], out=os.path.join(d, "sf.log"),
                    args=["--ring", "16M", "--trigger", "^hot$"])
    eq(p.stdout, "ring_reuse ok\n")
    snaps = [f for f in os.listdir(d) if ".snap." in f]
    eq(len(snaps), 1, f"snapshots: {snaps}")
    return p, log, os.path.join(d, snaps[0])


def per_thread(log):
    """Events per thread (tid order of first appearance), and the warnings
    (dump prints them after the events)."""
    p = run([SFTRACE, "dump", log])
    counts = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*\d+\s+(\d+)\s+(ENTRY|EXIT|TAIL)\s", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return list(counts.values()), p.stdout + p.stderr


def info_reused(log):
    """info's losses line (text) and ring_reused (JSON)."""
    text = run([SFTRACE, "info", log]).stdout
    losses = re.search(r"^# losses\s*: (.*)$", text, re.M).group(1)
    j = json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)["processes"][0]
    return losses, j["ring_reused"], j["lost"]


def dump_summary(err):
    return next(l for l in err.splitlines() if l.startswith("summary: "))


def summary(p):
    return next(l for l in p.stderr.splitlines() if l.startswith("sftrace: wrote "))


def test_ring_reuse_whole_thread_overwritten():
    # B (40000 calls) needs A's 10 slots and a reserve: none of A is left.
    p, log, snap = reuse_run(40000, 0)
    counts, err = per_thread(log)
    eq(sorted(counts), [2, 80002], "main, and B whole")
    check(summary(p).endswith(": 80004 events, 2 threads, 1 object, "
                              "80004 events of exited threads overwritten by later threads' rings"), summary(p))
    check("80004 events of exited threads are not in the log: later threads' rings took their slots" in err, err)
    eq(info_reused(log), ("0 dropped, 0 lost, 0 write errors, 80004 overwritten by later threads' rings", 80004, 0),
       "info: losses line, ring_reused, lost")
    eq(dump_summary(err), "summary: 80004 events, 2 threads, 1 object, 0 lost (holes or corrupt records), "
       "80004 overwritten by later threads' rings, 0 dropped by the runtime, 0 write errors", "dump's summary")
    # The snapshot, taken before B began, has A up to the trigger; its
    # header says nothing of the process's later reuse.
    scounts, serr = per_thread(snap)
    eq(sorted(scounts), [1, 40002], "main's entry, A up to hot's entry")
    check("not in the log" not in serr, serr)
    eq(info_reused(snap), ("0 dropped, 0 lost, 0 write errors, 0 overwritten by later threads' rings", 0, 0),
       "the snapshot's info")


def test_ring_reuse_oldest_batches_go_first():
    # B: 20002 events, 3 slots, and a reserve: A's 4 oldest batches go;
    # A keeps its newest 6 (contiguous).
    p, log, _ = reuse_run(10000, 0)
    counts, err = per_thread(log)
    eq(sorted(counts), [2, 20002, 80004 - 4 * BATCH], "main, B, A's newest batches")
    check(summary(p).endswith(": 67280 events, 3 threads, 1 object, "
                              "32728 events of exited threads overwritten by later threads' rings"), summary(p))
    check("32728 events of exited threads are not in the log" in err, err)
    eq(info_reused(log), ("0 dropped, 0 lost, 0 write errors, 32728 overwritten by later threads' rings", 32728, 0),
       "info: losses line, ring_reused, lost")
    # One count for the process: the log does not say whose events they
    # were (here all A's), so no thread's lost column carries them.
    lost_col = [int(m.group(1)) for m in re.finditer(r"^\s+\d+\s+\d+\s+\S+\s+\d+\s+(\d+)\s+\d+ data", err, re.M)]
    eq(lost_col, [0, 0, 0], "dump's lost column")
    check(", 0 lost (holes or corrupt records), 32728 overwritten by later threads' rings, 0 dropped" in
          dump_summary(err), dump_summary(err))
    # kept + overwritten = everything the program made.
    eq(67280 + 32728, 2 + 80004 + 20002, "the sum")


def test_ring_reuse_two_later_threads():
    # B as above; then C takes B's slots and more of A's: kept + overwritten
    # is the whole run.
    p, log, _ = reuse_run(10000, 10000)
    counts, _ = per_thread(log)
    eq(sum(counts), 67280, "events kept")
    check(summary(p).endswith(": 67280 events, 3 threads, 1 object, "
                              "52730 events of exited threads overwritten by later threads' rings"), summary(p))
    eq(67280 + 52730, 2 + 80004 + 2 * 20002, "the sum")


def test_ring_without_reuse_says_nothing():
    # No thread after A: nothing overwritten, nothing said.
    d = tmpdir()
    exe = build_c("ring_reuse", ["ring_reuse.c"], libs=["-lpthread"])
    p, log = record([exe, d, "0", "0"], out=os.path.join(d, "sf.log"), args=["--ring", "16M", "--trigger", "^hot$"])
    counts, err = per_thread(log)
    eq(sorted(counts), [2, 80004], "main, A whole")
    check("overwritten" not in p.stderr, p.stderr)
    check("not in the log" not in err, err)
    eq(info_reused(log), ("0 dropped, 0 lost, 0 write errors, 0 overwritten by later threads' rings", 0, 0),
       "info: losses line, ring_reused, lost")
    check("overwritten" not in dump_summary(err), dump_summary(err))
    # Without --ring: no such count, null in JSON, nothing in text.
    p, log = record([calls_fixture()], out=os.path.join(d, "plain.log"))
    eq(info_reused(log), ("0 dropped, 0 lost, 0 write errors", None, 0), "info of a log without a ring")


def test_ring_exiting_thread_gives_its_slots_back_at_once():
    # tests/fixtures/ring_exit_race.c: 300 threads A make 12002 events
    # each (two batches: 8182, then 3820 ending in done's exit) and wait;
    # then each A exits while a new thread B takes its first slot. B gets
    # a free slot from before A's exit or A's oldest batch: an A keeps
    # both batches or its newest (3820), never its oldest alone (8182);
    # one whose slots both went to Bs is gone, counted. Before the slots
    # went back in one step, B took the newest now and then (1-5 As of 300
    # a run kept 8182 and lost done: CI, skeptic29n's ring case).
    exe = build_c("ring_exit_race", ["ring_exit_race.c"], libs=["-lpthread"])
    p, log = record([exe, "300", "6000"], args=["--ring", "128K"])
    eq(p.stdout, "ring_exit_race 300\n")
    counts, _ = per_thread(log)
    a = [c for c in counts if c > 2]
    check(len(a) > 0, "some As in the log")
    eq(sorted(set(a) - {12002}), [12002 - BATCH], "the As' event counts but whole ones: the newest batch only")
    # Kept and overwritten are the whole run (2 events per B).
    eq(sum(counts) + info_reused(log)[1], 300 * (12002 + 2), "events kept and overwritten")
