"""skeptic24w: the writer thread never changes a process's exit status nor
loses a thread's events once the leader has gone (issue 24). main ends by a
bare SYS_exit(4), its thread, the last, by a bare SYS_exit(9): 9 untraced.
The writer must leave at once (event-driven: the leader's exit word), with
--ring and --paused too, and give its log descriptor to threads with
credentials or a root of their own (pidfd_getfd) before it goes. Each case
runs the fixture untraced and traced and compares status, output and calls."""
import glob
import os
import signal
import subprocess
import time

import sfkit


def _exe():
    return sfkit.build_c("skep24w_after", ["skep24w_after.c"], libs=["-lpthread"])


_group = sfkit.run_group


def _record(args, opt=(), d=None):
    d = d or sfkit.tmpdir()
    os.chmod(d, 0o755)
    log = os.path.join(d, "sf.log")
    rc, out, err = _group([sfkit.SFTRACE, "record", "-q", *opt, "-o", log, "--", _exe(), *args])
    return rc, out, err, log


def _leaf(log):
    calls, _ = sfkit.report_calls(log)
    return sum(c for (t, n), c in calls.items() if n == "leaf")


def _losses(log):
    s = sfkit.dump_info(log, events=True)["summary"]
    return (s["lost"], s["dropped"], s["write_errors"])


def _soon(opt, want_leaf):
    """The thread ends 5, 20 and 60 ms after main (1000 calls first): the
    writer left within that, each of 3 runs (a writer that looked every
    100 ms, or stayed for --ring/--paused, ended the process with 4)."""
    want = "thread 499500\n"
    for ms in ("5", "20", "60"):
        rc, out, _ = _group([_exe(), "none", ms, "1000"])
        sfkit.eq((rc, out), (9, want), f"untraced, {ms} ms")
        for i in range(3):
            rc, out, err, log = _record(["none", ms, "1000"], opt)
            sfkit.eq((rc, out), (9, want), f"traced {' '.join(opt)}, {ms} ms, run {i}: status, output ({err[-300:]})")
            if not want_leaf:  # --paused, never resumed: nothing recorded, no log made
                sfkit.eq(os.path.exists(log), False, "a log")
                continue
            sfkit.eq(_leaf(log), want_leaf, f"traced {' '.join(opt)}, {ms} ms: leaf calls in the log")
            sfkit.eq(_losses(log), (0, 0, 0), "lost, dropped, write errors")


def test_thread_ends_soon_after_leader():
    """Held (the control: without --ring or --paused the writer already left
    on the leader's exit word)."""
    _soon((), 2000)


def test_thread_ends_soon_after_leader_ring():
    _soon(("--ring", "1M"), 2000)


def test_thread_ends_soon_after_leader_paused():
    _soon(("--paused",), 0)


def _as_root():
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root to change uid or root")


def test_own_uid_thread_paused_status():
    """(b) A thread with a uid of its own (raw SYS_setresuid to nobody),
    recorded --paused and never resumed, ends by a bare SYS_exit(9) 20 ms
    after main: 9 as untraced. Tracing off, no thread needs the log again
    (a resume is refused from then on): the writer leaves at once rather
    than wait for that thread to take its descriptor, which it never would."""
    _as_root()
    rc, out, _ = _group([_exe(), "uid", "20", "1000"])
    sfkit.eq((rc, out), (9, "thread 499500\n"), "untraced")
    rc, out, err, log = _record(["uid", "20", "1000"], ("--paused",))
    sfkit.eq((rc, out), (9, "thread 499500\n"), f"traced --paused: status, output ({err[-300:]})")


def test_own_uid_thread_takes_log_then_bare_exit():
    """A thread with a uid of its own makes 1,000,000 calls after main's
    bare exit and ends by a bare SYS_exit(9): 9, every call in the log
    (1000 of main's too), none lost: it could not open its creator's 0600
    log, so record's keeper opened it again for it at its first hand-off
    (the writer left at once)."""
    _as_root()
    rc, out, err, log = _record(["uid", "0", "1000000"])
    sfkit.eq(rc, 9, f"traced status ({err[-300:]})")
    sfkit.eq(_leaf(log), 1001000, "leaf calls")
    sfkit.eq(_losses(log), (0, 0, 0), "lost, dropped, write errors")


def test_own_uid_thread_few_calls_bare_exit():
    """A thread with a uid of its own makes 10 calls after main's bare
    SYS_exit(4) (fewer than a slot: it never needs the log) and ends by a
    bare SYS_exit(9): 9, as untraced. Under record the writer offers no
    descriptor (record's keeper opens the log again for any thread of the
    pid) and leaves at once; waiting for a taker that never came made it
    the last task, and the process ended with the leader's 4."""
    _as_root()
    rc, out, _ = _group([_exe(), "uid", "20", "10"])
    sfkit.eq((rc, out), (9, "thread 53\n"), "untraced")
    rc, out, err, log = _record(["uid", "20", "10"])
    sfkit.eq((rc, out), (9, "thread 53\n"), "traced: status, output")


def test_own_uid_thread_few_calls_bare_exit_ring():
    """The same with --ring 1M: 9 (the writer offers nothing there either:
    the keeper opens the log, and makes a snapshot's file, for the thread)."""
    _as_root()
    rc, out, err, log = _record(["uid", "20", "10"], ("--ring", "1M"))
    sfkit.eq((rc, out), (9, "thread 53\n"), f"traced --ring: status, output ({err[-300:]})")


def test_chroot_thread_ring_flood():
    """(d) --ring 1M, a thread with a root of its own (unshare(CLONE_FS),
    chroot into an empty directory) makes 1,000,000 calls after main's bare
    exit, then SYS_exit(9): 9, and its ring lost nothing to write errors
    (0 lost, 0 dropped, 0 write errors: it took the writer's descriptor
    for its new slots)."""
    _as_root()
    root = sfkit.tmpdir()
    rc, out, _ = _group([_exe(), root, "0", "1000000"])
    sfkit.eq((rc, out), (9, "thread 499999500000\n"), "untraced")
    for i in range(3):
        rc, out, err, log = _record([root, "0", "1000000"], ("--ring", "1M"))
        sfkit.eq((rc, out), (9, "thread 499999500000\n"), f"traced --ring, run {i}: status, output ({err[-300:]})")
        sfkit.eq(_losses(log), (0, 0, 0), f"run {i}: lost, dropped, write errors")


def _running(args, opt, d):
    """record started on the fixture (whose thread calls on for argv[4] ms);
    returns (Popen, the program's pid) once main has gone."""
    log = os.path.join(d, "sf.log")
    p = subprocess.Popen([sfkit.SFTRACE, "record", "-q", *opt, "-o", log, "--", _exe(), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    line = p.stderr.readline()
    while line.startswith("sftrace: "):  # --paused says how to resume first
        line = p.stderr.readline()
    sfkit.check(line.startswith("pid "), f"the fixture's pid line: {line!r}")
    pid = int(line.split()[1])
    for _ in range(200):  # main a zombie: the writer has left by then
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.01)
    time.sleep(0.2)
    return p, pid, log


def _finish(p, what):
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{what}: still running after 30 s")
    return p.returncode, out, err


def _snapshot_after_leader(first):
    d = sfkit.tmpdir()
    os.chmod(d, 0o755)
    p, pid, log = _running([first, "0", "0", "1500"], ("--ring", "1M"), d)
    s = sfkit.run([sfkit.SFTRACE, "snapshot", "-t", "5", str(pid)], check_rc=None)
    rc, out, err = _finish(p, "traced")
    sfkit.eq((rc, out), (9, "thread 0\n"), f"traced status, output ({err[-300:]})")
    sfkit.eq(s.returncode, 0, f"sftrace snapshot's status ({s.stderr.strip()})")
    snaps = glob.glob(os.path.join(d, "sf.snap.*.log"))
    sfkit.eq(len(snaps), 1, "snapshots written")
    st = os.stat(snaps[0])
    sfkit.eq((st.st_uid, st.st_mode & 0o777), (os.geteuid(), 0o600), "the snapshot's owner, mode")
    sfkit.check(_leaf(snaps[0]) > 1000, "the snapshot holds the thread's calls")


def test_ring_snapshot_after_leader_gone():
    """`sftrace snapshot` after main's bare exit, while the thread calls on:
    exit 0 and one snapshot file, written by the thread at its next ring
    advance (the writer has left); the process's status is 9."""
    _snapshot_after_leader("none")


def test_ring_snapshot_after_leader_gone_chrooted():
    """(c) The same with the thread chrooted into an empty directory (its
    own root, unshare(CLONE_FS)): the log's directory is not there for it
    by path ('cannot write snapshot ...: No such file or directory', and
    sftrace snapshot exited 1), so the leaving writer offers an O_PATH
    descriptor of it with the log's, and the thread makes the snapshot
    through it (openat O_TMPFILE, linkat AT_EMPTY_PATH)."""
    _as_root()
    _snapshot_after_leader(sfkit.tmpdir())


def test_ring_snapshot_after_leader_gone_own_uid():
    """(c) The same with the thread as uid nobody, the only thread left: it
    may not create the snapshot in its creator's 0755 directory ('cannot
    write snapshot .../sf.snap.PID.1.log.tmp: Permission denied', and
    sftrace snapshot exited 1, once). record's keeper makes the unnamed
    file for it and links it in by name once written: one snapshot,
    record's user, 0600."""
    _as_root()
    _snapshot_after_leader("uid")


def test_switch_refused_after_leader_gone():
    """--paused: `sftrace resume` after main has gone is refused at once with
    a message (exit 1, reply SF_SWITCH_LEADER_GONE), not left to time out;
    the process still ends with 9 and its log holds none of the thread's
    calls (tracing stayed off)."""
    d = sfkit.tmpdir()
    os.chmod(d, 0o755)
    p, pid, log = _running(["none", "0", "0", "1000"], ("--paused",), d)
    t0 = time.monotonic()
    s = sfkit.run([sfkit.SFTRACE, "resume", "-t", "5", str(pid)], check_rc=None)
    took = time.monotonic() - t0
    rc, out, err = _finish(p, "traced")
    sfkit.eq((rc, out), (9, "thread 0\n"), f"traced status, output ({err[-300:]})")
    sfkit.eq(s.returncode, 1, f"resume's status ({s.stdout!r} {s.stderr!r})")
    sfkit.eq(s.stderr.strip(), f"sftrace: error: pid {pid}: resume refused: its main thread has ended, and with it the "
                               "runtime's writer thread, which switches tracing; tracing stays as it was",
             "resume's message")
    sfkit.check(took < 2, f"answered at once: {took:.2f} s")


if __name__ == "__main__":
    sfkit.main(globals())
