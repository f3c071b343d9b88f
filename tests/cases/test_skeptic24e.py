"""Skeptic round 5 for issue 24 (production safety): attacks on the round-5
claims. CLONE_VFORK without CLONE_VM waited for on a pipe outside the lock,
syscall() fork-like calls on several threads at once, per-call in-flight slots
left by siglongjmp out of blocked close calls, close_range loops racing
snapshots and new threads."""
import glob
import os
import re

import sfkit

CFLAGS = ["-pthread"]


def _prog(name):
    return sfkit.build_c(name, [name + ".c"], flags=CFLAGS)


def _logs(out):
    d = os.path.dirname(out)
    return sorted(p for p in glob.glob(os.path.join(d, "sf.*.log")) if ".snap." not in p)


def _vclone(mode, sig, args=()):
    """Runs the vclone fixture untraced and traced; returns (untraced stdout,
    traced stdout, parent log, child logs)."""
    prog = _prog("skep24e_vclone")
    plain = sfkit.run([prog, str(mode), sig], timeout=60)
    p, out = sfkit.record([prog, str(mode), sig], args=["-q"] + list(args), timeout=60)
    return plain.stdout, p.stdout, out, _logs(out)


def test_vfork_clone_children_match_untraced():
    """glibc clone(fn, stack, CLONE_VFORK|SIGCHLD): a child that execs, _exits,
    crashes (SIGSEGV), closes every descriptor then execs, or sleeps then
    _exits. The parent resumes when untraced does (after the 300 ms sleeps,
    not before), sees the same exit status, also with SIGCHLD ignored or
    handled; the child has its own log holding child_work, the parent's log
    never does. Holds."""
    for mode in (0, 1, 2, 4, 5):
        for sig in ("n", "i", "h"):
            plain, traced, out, kids = _vclone(mode, sig)
            sfkit.eq(traced, plain, f"mode {mode} sig {sig}: parent's view")
            parent = sfkit.count_calls(sfkit.dump_events(out))
            sfkit.eq(parent.get("child_work", 0), 0, f"mode {mode} {sig}: child_work in parent's log")
            sfkit.eq(parent.get("main", 0), 1, f"mode {mode} {sig}: main in parent's log")
            sfkit.eq(len(kids), 1, f"mode {mode} {sig}: child logs {kids}")
            child = sfkit.count_calls(sfkit.dump_events(kids[0]))
            sfkit.eq(child.get("child_work", 0), 1, f"mode {mode} {sig}: child_work in child's log")
            sfkit.eq(child.get("main", 0), 0, f"mode {mode} {sig}: main in child's log")


def test_vfork_clone_children_under_alloc():
    """The same children under --alloc, SIGCHLD default and ignored. Holds."""
    for mode in (0, 1, 2, 4, 5):
        for sig in ("n", "i"):
            plain, traced, out, kids = _vclone(mode, sig, args=["--alloc"])
            sfkit.eq(traced, plain, f"--alloc mode {mode} sig {sig}: parent's view")
            sfkit.eq(len(kids), 1, f"--alloc mode {mode} {sig}: child logs {kids}")


def test_vfork_clone_child_forks_grandchild():
    """A CLONE_VFORK child (glibc clone() with its own stack, mode 3, or
    syscall(SYS_clone, CLONE_VFORK|SIGCHLD), mode 6) forks a grandchild that
    keeps running 600 ms and _exits 9. Untraced, the parent's clone returns as
    soon as the child _exits (dt_ge_250ms=0). Traced, the grandchild inherits
    the runtime's close-on-exec pipe, so the parent stays blocked in clone
    until the grandchild exits (observed with a 2 s grandchild: dt_ge_1s=1,
    dt=2.0 s; 600 ms gives dt_ge_250ms=1 and keeps the case short)."""
    for mode in (3, 6):
        for sig in ("n", "i"):
            plain, traced, out, kids = _vclone(mode, sig)
            sfkit.eq(plain, f"mode={mode} pid>0=1 dt_ge_1s=0 dt_ge_250ms=0 wait={1 if sig == 'n' else 0} "
                     f"status={'0x900' if sig == 'n' else '0xffffffff'}\n", "untraced")
            sfkit.eq(traced, plain, f"mode {mode} sig {sig}: parent's view")


def test_concurrent_syscall_forks_from_threads():
    """4 threads each make 12 children at once by syscall(SYS_fork),
    syscall(SYS_clone, SIGCHLD), clone3, syscall(SYS_clone,
    CLONE_VFORK|SIGCHLD) and clone3 with CLONE_VFORK; every child calls
    in_child then _exits with its own code, checked exactly by the parent.
    Each of the 48 children has its own log with in_child once and nothing
    else of the parent's; the parent's log has in_parent 48 and no in_child.
    Holds."""
    prog = _prog("skep24e_forks")
    for _ in range(2):
        p, out = sfkit.record([prog], args=["-q"], timeout=60)
        sfkit.eq(p.stdout, "bad=0\n", "parent's per-child exit codes")
        parent = sfkit.count_calls(sfkit.dump_events(out))
        sfkit.eq(parent.get("in_parent", 0), 48, "in_parent in the parent's log")
        sfkit.eq(parent.get("in_child", 0), 0, "in_child in the parent's log")
        kids = _logs(out)
        sfkit.eq(len(kids), 48, "child logs")
        for k in kids:
            sfkit.eq(dict(sfkit.count_calls(sfkit.dump_events(k))), {"in_child": 1}, k)


def test_longjmp_out_of_blocked_close_slots():
    """siglongjmp out of close() blocked on a lingering TCP socket, 200 times
    on main and once on each of 140 threads that then wait on a barrier (340
    in-flight slots abandoned, more than the 128 slots). Then the program
    dup2s/closes its own file, takes a ring snapshot, starts a new thread and
    does 100 dup/close pairs: its file holds exactly what it wrote, the
    snapshot is written, the new thread's first event comes well under a
    second, and every call is recorded. Holds."""
    prog = _prog("skep24e_longjmp")
    p, out = sfkit.record([prog, "200", "140", "s"], args=["--ring", "1M"], timeout=60)
    sfkit.eq(p.stdout, "longjmps=340 own=hello\n", "program's view")
    snaps = glob.glob(os.path.join(os.path.dirname(out), "sf.snap.*.log"))
    sfkit.eq(len(snaps), 1, "snapshots")
    sfkit.run([sfkit.SFTRACE, "dump", snaps[0]])
    m = re.search(r"first_event=([0-9.]+) 100closes=([0-9.]+)", p.stderr)
    sfkit.check(m and float(m.group(1)) < 1.0 and float(m.group(2)) < 1.0, p.stderr[-2000:])
    p, out = sfkit.record([prog, "200", "140"], args=["-q"], timeout=60)
    sfkit.eq(p.stdout, "longjmps=340 own=hello\n", "program's view, no ring")
    calls = sfkit.count_calls(sfkit.dump_events(out))
    sfkit.eq((calls.get("work", 0), calls.get("first_in_thread", 0)), (100, 1), "calls")


def test_close_range_loop_races_snapshots_and_threads():
    """One thread loops open(own file, O_APPEND)/write 1 byte/close_range(3,
    ~0U, 0) while main takes 20 ring snapshots and starts 60 threads. The
    file's size equals the bytes written, no call fails; without a ring the
    log holds tick exactly once per write and all 60 new threads' calls;
    with a ring every snapshot file reads back and their number matches what
    record says. Holds."""
    prog = _prog("skep24e_closerange")
    p, out = sfkit.record([prog, "0"], args=["-q"], timeout=60)
    sfkit.eq(p.stdout, "size_matches=1 bad=0 ticks_eq_writes=1\n", "program's view")
    writes = int(re.search(r"writes=(\d+)", p.stderr).group(1))
    calls = sfkit.count_calls(sfkit.dump_events(out))
    sfkit.eq((calls.get("tick", 0), calls.get("nt", 0), calls.get("in_new_thread", 0)), (writes, 60, 60), "calls")
    p, out = sfkit.record([prog, "20"], args=["--ring", "1M"], timeout=60)
    sfkit.eq(p.stdout, "size_matches=1 bad=0 ticks_eq_writes=1\n", "program's view with a ring")
    snaps = glob.glob(os.path.join(os.path.dirname(out), "sf.snap.*.log"))
    sfkit.check(1 <= len(snaps) <= 20, f"snapshots: {len(snaps)}")
    sfkit.check(f"{len(snaps)} snapshots in all" in p.stderr or len(snaps) <= 10, p.stderr[-1500:])
    sfkit.check("DROPPED" not in p.stderr and "failed" not in p.stderr, p.stderr[-1500:])
    # Every one of the 20 signals is written or counted (before, 15-19 were
    # written and the rest merged in silence).
    m = re.search(r", 20 snapshot requests: (\d+) written, (\d+) not taken \(a snapshot was being written\)$",
                  p.stderr, re.M)
    sfkit.check(len(snaps) == 20 if not m else (int(m.group(1)), int(m.group(2))) == (len(snaps), 20 - len(snaps)),
                p.stderr[-1500:])
    for s in snaps:
        sfkit.run([sfkit.SFTRACE, "dump", s])


def test_vfork_clone_files_child_forks_and_threads():
    """clone(fn, stack, CLONE_VFORK|SIGCHLD), with and without CLONE_FILES
    (the runtime's old locked route): the child forks and reaps a grandchild,
    or starts and joins a thread, or execs. No deadlock, the parent sees the
    same status as untraced, the child and grandchild each have their own
    log, the parent's log has no child_work. Holds."""
    prog = _prog("skep24e_vfiles")
    for mode, nlogs, cw in ((0, 2, [1, 1]), (1, 1, [2]), (2, 1, [1])):
        for f in ("f", "n"):
            plain = sfkit.run([prog, str(mode), f], timeout=30)
            p, out = sfkit.record([prog, str(mode), f], args=["-q"], timeout=30)
            sfkit.eq(p.stdout, plain.stdout, f"mode {mode} {f}: parent's view")
            sfkit.eq(sfkit.count_calls(sfkit.dump_events(out)).get("child_work", 0), 0, f"mode {mode} {f}: parent")
            kids = _logs(out)
            sfkit.eq(len(kids), nlogs, f"mode {mode} {f}: child logs")
            sfkit.eq([sfkit.count_calls(sfkit.dump_events(k)).get("child_work", 0) for k in kids], cw,
                     f"mode {mode} {f}: child_work per child log")


def test_vfork_clone_races_fork_in_another_thread():
    """Main makes 100 clone(fn, stack, CLONE_VFORK|SIGCHLD) children that
    _exit(3) at once; another thread fork()s (glibc wrapper, or
    syscall(SYS_fork)) a child every 10 ms that sleeps 1 s without exec.
    Untraced the slowest clone returns in well under 0.8 s (0.07 s
    measured). Traced, a fork child inherits the runtime's wait pipe of a
    clone in progress, and that clone returns only when the unrelated fork
    child exits: observed worst 1.04-1.06 s (slow=1) in 4 of 4 runs."""
    prog = _prog("skep24e_vrace")
    for args in ([], ["raw"]):
        plain = sfkit.run([prog] + args, timeout=60)
        sfkit.eq(plain.stdout, "bad=0 slow=0\n", "untraced")
        p, out = sfkit.record([prog] + args, args=["-q"], timeout=60)
        sfkit.eq(p.stdout, "bad=0 slow=0\n", f"traced {args}: {p.stderr[-300:]}")


def test_pthread_cancel_out_of_blocked_close():
    """150 threads, one after another, block in close() on a lingering TCP
    socket and are pthread_cancel'ed there (150 in-flight slots abandoned by
    exited threads, more than the 128 slots). Then the program's own
    dup2/close/pread are exact, a ring snapshot is written, a new thread's
    first event and 100 dup/close pairs take well under a second, and every
    call is recorded. Each thread is cancelled once it is seen inside
    close(2) (in_close=150): after a fixed 2 ms, a loaded machine cancelled
    up to a third of them before they got there, their sockets stayed
    open, and once in 60-500 runs mkstemp got 200, the number the own phase
    copies to (test_own_file_phase_when_mkstemp_gets_200). Holds."""
    prog = _prog("skep24e_cancel")
    p, out = sfkit.record([prog, "0", "150", "s"], args=["--ring", "1M", "-q"], timeout=60)
    sfkit.eq(p.stdout, "longjmps=150 own=hello\n", "program's view")
    sfkit.check("in_close=150\n" in p.stderr, p.stderr[-2000:])
    snaps = glob.glob(os.path.join(os.path.dirname(out), "sf.snap.*.log"))
    sfkit.eq(len(snaps), 1, "snapshots")
    m = re.search(r"first_event=([0-9.]+) 100closes=([0-9.]+)", p.stderr)
    sfkit.check(m and float(m.group(1)) < 1.0 and float(m.group(2)) < 1.0, p.stderr[-2000:])
    p, out = sfkit.record([prog, "0", "150"], args=["-q"], timeout=60)
    sfkit.eq(p.stdout, "longjmps=150 own=hello\n", "program's view, no ring")
    sfkit.check("in_close=150\n" in p.stderr, p.stderr[-2000:])
    calls = sfkit.count_calls(sfkit.dump_events(out))
    sfkit.eq((calls.get("work", 0), calls.get("first_in_thread", 0), calls.get("cancelled", 0)), (100, 1, 150), "calls")


def test_dup2_storm_and_close_range_race_snapshots():
    """As above, but after each write the looping thread also dup2s its file
    over every number 3..1023 (the log's and a snapshot's included) before
    close_range. Its file holds exactly the bytes it wrote, every snapshot
    file reads back, nothing is DROPPED. Holds."""
    prog = _prog("skep24e_closerange")
    for _ in range(2):
        p, out = sfkit.record([prog, "20", "storm"], args=["--ring", "1M"], timeout=60)
        sfkit.eq(p.stdout, "size_matches=1 bad=0 ticks_eq_writes=1\n", "program's view")
        sfkit.check("DROPPED" not in p.stderr, p.stderr[-1500:])
        snaps = glob.glob(os.path.join(os.path.dirname(out), "sf.snap.*.log"))
        sfkit.check(1 <= len(snaps) <= 20, f"snapshots: {len(snaps)}")
        for s in snaps:
            sfkit.run([sfkit.SFTRACE, "dump", s])


def test_many_threads_blocked_in_close():
    """140 threads blocked in close() at the same time (1 s SO_LINGER on
    unread loopback TCP sockets: more calls in flight than the 128 slots).
    Meanwhile main's own dup2/close/pread are exact, a ring snapshot is
    written, a new thread's first event and 100 dup/close pairs take well
    under a second; all 140 closes return 0 as untraced. Holds."""
    prog = _prog("skep24e_blocked")
    p, out = sfkit.record([prog, "0", "140", "s"], args=["--ring", "1M", "-q"], timeout=60)
    sfkit.eq(p.stdout, "closes_ok=140 own=hello\n", "program's view")
    snaps = glob.glob(os.path.join(os.path.dirname(out), "sf.snap.*.log"))
    sfkit.eq(len(snaps), 1, "snapshots")
    m = re.search(r"first_event=([0-9.]+) 100closes=([0-9.]+)", p.stderr)
    sfkit.check(m and float(m.group(1)) < 0.5 and float(m.group(2)) < 0.5, p.stderr[-2000:])
    p, out = sfkit.record([prog, "0", "140"], args=["-q"], timeout=60)
    sfkit.eq(p.stdout, "closes_ok=140 own=hello\n", "program's view, no ring")
    calls = sfkit.count_calls(sfkit.dump_events(out))
    sfkit.eq((calls.get("work", 0), calls.get("first_in_thread", 0)), (100, 1), "calls")


def test_own_file_phase_when_mkstemp_gets_200():
    """The own-files phase of the lingering-close fixtures (mkstemp, write
    "hello\\n", dup2 to 200, close the mkstemp descriptor, pread the copy)
    when mkstemp's number is 200 itself: every lower number taken, as after
    threads cancelled before they reached close() (a loaded machine: they
    had not run within the 2 ms) left exactly enough sockets open. Before,
    dup2(200, 200) did nothing and close closed the only descriptor: the
    pread read nothing, untraced as traced (test_pthread_cancel_out_of_
    blocked_close printed "own=" in CI and under load, 1 run in 60-500;
    caught with mkstemp fd=200). The phase now copies to a number that is
    not its own file's."""
    prog = _prog("skep24e_own200")
    want = "mkstemp_fd=200 own=hello\n"
    sfkit.eq(sfkit.run([prog, "x", "y"], timeout=30).stdout, want, "untraced")
    p, out = sfkit.record([prog, "x", "y"], args=["-q"], timeout=30)
    sfkit.eq(p.stdout, want, "traced")
    p, out = sfkit.record([prog, "x", "y", "s"], args=["--ring", "1M", "-q"], timeout=30)
    sfkit.eq(p.stdout, want, "traced, with a ring snapshot")
    sfkit.eq(len(glob.glob(os.path.join(os.path.dirname(out), "sf.snap.*.log"))), 1, "snapshots")
