"""Skeptic round 4d for issue 24 (safe to leave on in production): glibc's
syscall() replaced by the runtime's, vforks made through it, the program's
closes counted in flight while the runtime claims a number."""
import os
import re

import sfkit
from sfkit import build_c, check, count_calls, dump_events, eq, record, run, tmpdir


def fixture(name, libs=("-lpthread",)):
    return build_c("skep24d_" + name, ["skep24d_%s.c" % name], libs=list(libs))


def test_syscall_results_and_errno_match_untraced():
    """Bad numbers (-1, 1000, 1e8), EBADF/EINVAL of close/dup2/dup3/close_range,
    errno untouched on success, six arguments (preadv2 flags), a futex wait
    that times out after 200 ms, syscall() from a signal handler: the same
    output traced and untraced."""
    prog = fixture("sys")
    want = run([prog]).stdout
    p, log = record([prog])
    eq(p.stdout, want, "traced output")
    check("nr-1 r=-1 errno=38" in want and "close-ok r=0 errno=78" in want and "futex-ms-ok 1" in want, want)
    calls = count_calls(dump_events(log))
    eq(calls["show"], 17, "show calls")
    eq(calls["main"], 1, "main calls")


def _vfork_case(mode):
    prog = fixture("vfork", libs=())
    hello = fixture("hello", libs=())
    d = tmpdir()
    p, log = record([prog, mode, hello], out=os.path.join(d, "sf.log"))
    eq(sorted(l for l in p.stdout.splitlines()), ["depth 3000 status 0", "hello 20"], "output")
    calls = count_calls(dump_events(log))
    eq(calls["recurse"], 3001, "parent recurse")
    eq(calls["spawn"], 1, "parent spawn")
    eq(calls["child_only"], 0, "vfork child's call in the parent's log")
    others = [f for f in os.listdir(d) if f != "sf.log"]
    eq(len(others), 1, "child logs")
    ccalls = count_calls(dump_events(os.path.join(d, others[0])))
    eq(ccalls["hello_leaf"], 5, "exec'd program's calls")
    eq(ccalls["child_only"], 0, "pre-exec vfork child calls (not recorded)")


def test_syscall_vfork_after_deep_recursion_then_exec_traced():
    _vfork_case("vfork")


def test_syscall_clone_vm_vfork_after_deep_recursion():
    _vfork_case("clone")


def test_syscall_vfork_from_signal_handler_tail_called():
    _vfork_case("sig")


def test_concurrent_syscall_forks_get_what_they_asked_for():
    """hooks.c sf_syscall_c stores the system call number in a static
    (nr_of_call) BEFORE fork_with_handlers takes the runtime's lock; a second
    thread's fork-like syscall() overwrites it, so one thread's
    syscall(SYS_fork) runs as the other's SYS_clone (with its own args) and
    vice versa. Untraced: 0 and 0 mismatches."""
    prog = fixture("forkrace")
    eq(run([prog, "100"]).stdout, "bad fork 0 bad clone 0\n", "untraced")
    d = tmpdir()
    p, log = record([prog, "100"], out=os.path.join(d, "sf.log"))
    eq(p.stdout, "bad fork 0 bad clone 0\n", "traced")
    eq(len(os.listdir(d)), 201, "logs: the parent's and one per child")


def test_blocking_close_stalls_first_call_of_fork_child_at_most_20ms():
    """A thread of a fork child sits in a close() that lingers 2 s (SO_LINGER,
    peer never reads); the child's first instrumented call creates its log,
    and sf_fd_adopt waits for the close in flight: claims-24 says "at most
    ~20 ms". Measured 192-274 ms (1000 nanosleeps of 20 us, each far longer
    on a loaded machine); untraced 0 ms."""
    prog = fixture("linger")
    # The stall was in every run; a loaded machine can stretch one good run
    # past 40 ms (93 ms once, load average 66): the best of up to 3 runs.
    seen = []
    for _ in range(3):
        p, _ = record([prog, "2"])
        m = re.search(r"first-call-ms (\d+) close-ms (\d+)", p.stdout)
        check(m, p.stdout)
        check(int(m.group(2)) >= 1900, "the close lingered: " + p.stdout)
        seen.append(int(m.group(1)))
        if seen[-1] <= 40:
            break
    check(min(seen) <= 40, f"first call stalled in every run: first-call-ms {seen}")


def test_parallel_closes_cost_within_noise():
    """8 threads closing numbers that hold nothing: the in-flight counters
    are shared atomics. Traced within 1.5x of untraced (measured here:
    3.6-4.3 us/close both, a loaded 2-core machine)."""
    prog = fixture("closes")
    def ns(cmd):
        out = run(cmd).stdout
        return float(re.search(r"ns-per-close ([\d.]+)", out).group(1))
    u = min(ns([prog, "8", "50000"]) for _ in range(2))
    t = min(ns([sfkit.SFTRACE, "record", "-q", "-o", os.path.join(tmpdir(), "sf.log"), "--", prog, "8", "50000"])
            for _ in range(2))
    check(t <= 1.5 * u + 200, f"traced {t} ns vs untraced {u} ns per close")


def test_rust_command_children_each_get_own_log():
    """Rust std's Command: three output() spawns (posix_spawn, glibc's
    internal CLONE_VM|CLONE_VFORK) and one status() with pre_exec (fork):
    each exec'd traced child has its own log with its 5 calls, the pre_exec
    closure's calls are in the fork child's log, none in the parent's."""
    prog = sfkit.rust_fixture("skep24d_spawn")
    hello = fixture("hello", libs=())
    d = tmpdir()
    p, log = record([prog, hello], out=os.path.join(d, "sf.log"))
    eq(p.stdout, "hello 20\nok 4\n", "output")
    calls = count_calls(dump_events(log))
    eq(calls["skep24d_spawn::run_all"], 1, "parent run_all")
    eq(calls["skep24d_spawn::in_pre_exec"], 0, "pre_exec call in the parent's log")
    per_log = sorted((count_calls(dump_events(os.path.join(d, f)))["hello_leaf"],
                      count_calls(dump_events(os.path.join(d, f)))["skep24d_spawn::in_pre_exec"])
                     for f in os.listdir(d) if f != "sf.log")
    eq(per_log, [(0, 1), (5, 0), (5, 0), (5, 0), (5, 0)], "child logs (hello_leaf, in_pre_exec)")


def _snapshots(mode):
    prog = fixture("leave")
    d = tmpdir()
    p, log = record([prog, mode], out=os.path.join(d, "sf.log"), args=["--ring", "1M"])
    eq(p.stdout, "done %s\n" % mode, "output")
    snaps = sorted(f for f in os.listdir(d) if ".snap." in f)
    return p, snaps


def test_thread_cancelled_inside_close_leaves_no_count_behind():
    """pthread_cancel of a thread blocked in a lingering close (the close()
    wrapper's cleanup handler leaves the in-flight count): five ring
    snapshots 60 ms apart afterwards are all taken, as with no such close."""
    eq(len(_snapshots("none")[1]), 5, "snapshots, no lingering close")
    eq(len(_snapshots("cancel")[1]), 5, "snapshots after a cancelled close")


def test_siglongjmp_out_of_close_leaves_no_count_behind():
    """A SIGALRM handler siglongjmps out of a close that lingers (the classic
    alarm timeout): the close() wrapper's prog_enter is never matched
    (fdguard.c counts calls in flight; only pthread cancellation is
    handled). From then on every runtime open waits its full budget in
    wait_program_calls: here 2 snapshots of 5 (the others silently not
    taken: record prints no "not taken" count), and the run takes 3.6 s
    instead of 0.7 s (the exit waits for the slow snapshots)."""
    p, snaps = _snapshots("jmp")
    eq(len(snaps), 5, "snapshots after a close left by siglongjmp")


def test_dup2_onto_a_fresh_runtime_number_does_not_stall():
    """A fork child's thread cycles close(n); dup2(src, n) on n = 3..6 while
    the main thread's first call creates the child's log. The dup2 counts
    itself in flight, then waits while the claim on n holds the runtime's
    file (wait_claim); the claim waits for calls in flight
    (wait_program_calls): each waits for the other until the budget runs
    out. Measured: in 5 of 8 runs the dup2 took 121-151 ms and the first
    call as long; untraced at most 4 ms. Claim: "a program's close/dup2/
    fcntl calls never wait on a runtime system call"."""
    prog = fixture("dupclaim")
    # The stall (121-151 ms) came in 5 of 8 runs; a loaded machine
    # stretches a good run well past 40 ms (73 ms at load average 66; 72
    # and 59 ms in two runs of one CI run with five helpers at work), so a
    # run counts as stalled past 100 ms only: at most 1 of 6 (with the
    # stall, 1 or fewer of 6 has a chance of about 3%).
    slow = []
    for _ in range(6):
        p, _ = record([prog], args=["-q"])
        m = re.search(r"worst-dup2-ms (\d+) first-call-ms (\d+)", p.stdout)
        check(m, p.stdout)
        if int(m.group(1)) > 100 or int(m.group(2)) > 100:
            slow.append(p.stdout.strip())
    check(len(slow) <= 1, f"runs slower than 100 ms: {slow}")


def test_chrooted_child_gets_its_own_log():
    """A fork child chroots (chroot() or syscall(SYS_chroot)) and drops to
    nobody through syscall() before its first call. It cannot make its log
    itself (ENOENT inside the new root; nothing is written into the jail:
    holds). Once it said "cannot create log DIR/sf.log" (the parent's
    name), then "DIR/sf.PID.log: No such file or directory" and the log
    was lost; now record's keeper (reached on its abstract socket from
    inside the jail) makes sf.PID.log for it: the child's 1 call there,
    no message."""
    prog = build_c("skep24d_chroot", ["skep24d_chroot.c"])
    for how in ("libc", "sys"):
        jail = tmpdir()
        d = tmpdir()
        p, log = record([prog, jail, how], out=os.path.join(d, "sf.log"))
        eq(p.stdout, "child 0\n", "output")
        eq(os.listdir(jail), [], "files in the jail")
        eq(count_calls(dump_events(log))["work"], 1, "parent's calls")
        check("cannot create log" not in p.stderr and "wrote no log" not in p.stderr, p.stderr)
        kids = [f for f in os.listdir(d) if re.fullmatch(r"sf\.\d+\.log", f)]
        eq(len(kids), 1, f"the child's log: {os.listdir(d)}")
        eq(sum(count_calls(dump_events(os.path.join(d, kids[0]))).values()), 1, "the child's calls")


def test_tail_called_syscall_vfork_twenty_times():
    """-O2: my_vfork_sys() is "jmp syscall@plt" after its tail sled, so the
    vfork child and the parent both return from syscall() straight into
    spawn(); the child calls child_only() and execs a traced program. 20
    rounds: all children exec (bad 0), 20 children's logs with 5 calls each,
    the parent's log has 20 spawn/TAIL my_vfork_sys and no child_only.
    (The same through vfork() is undefined behaviour: clang cannot tail-call
    a returns_twice function, and untraced it already runs the child's
    path in the parent, exit 127; traced the same.) Untraced, glibc's own
    syscall(SYS_vfork) fails this way too; traced it works."""
    prog = build_c("skep24d_tailvfork", ["skep24d_tailvfork.c"])
    hello = fixture("hello", libs=())
    # Untraced, glibc's syscall() returns through a C frame in the vfork
    # child (undefined behaviour): the parent then runs the child's path
    # and the program exits 127. The runtime's assembly syscall() does not.
    d = tmpdir()
    p, log = record([prog, "sys", hello], out=os.path.join(d, "sf.log"))
    eq(p.stdout.splitlines(), ["hello 20"] * 20 + ["bad 0"], "output")
    ev = dump_events(log)
    calls = count_calls(ev)
    eq((calls["spawn"], calls["my_vfork_sys"], calls["child_only"]), (20, 20, 0), "parent's calls")
    eq(sum(1 for e in ev if e.kind == "TAIL" and e.name == "my_vfork_sys"), 20, "tail events")
    kids = [f for f in os.listdir(d) if f != "sf.log"]
    eq(len(kids), 20, "children's logs")
    eq(sorted(count_calls(dump_events(os.path.join(d, f)))["hello_leaf"] for f in kids), [5] * 20, "child calls")


def test_futex_token_ring_with_parallel_closes():
    """8 threads pass a token with syscall(SYS_futex) waits (no timeout) and
    wakes; each round opens and syscall(SYS_close)s /dev/null, dups and
    closes its file, and writes one line. Each file holds exactly its 300
    lines; exact call counts; 0 lost."""
    prog = fixture("futex")
    files = tmpdir()
    p, log = record([prog, files])
    eq(p.stdout, "token 2400 bad 0\n", "output")
    for t in range(8):
        with open(os.path.join(files, "t%d" % t)) as f:
            eq(f.read(), "".join("%d %d\n" % (t, r) for r in range(300)), "file t%d" % t)
    calls = count_calls(dump_events(log))
    eq((calls["worker"], calls["wait_turn"], calls["pass"], calls["step"], calls["main"]), (8, 2400, 2400, 2400, 1),
       "calls")
    check(" 0 lost" in run([sfkit.SFTRACE, "dump", log]).stdout.splitlines()[-1], "lost events")


def test_clone_vfork_without_vm_does_not_hold_other_threads():
    """syscall(SYS_clone, CLONE_VFORK | SIGCHLD, 0, ...) is treated as a fork
    (claim), but fork_with_handlers holds the runtime's log lock
    (before_fork) until the call returns, i.e. until the child exits or
    execs. Meanwhile every other thread of the parent that needs the lock
    (a new thread's first event) spins: a new thread's start-to-join took
    1012 ms (the child's lifetime) instead of 6 ms; and a child that waits
    for a byte a new parent thread writes never gets it (untraced: yes, in
    0.2 s; traced: no after its 3 s timeout, 2 s of CPU spinning; without the
    timeout, a deadlock)."""
    prog = fixture("vforkcopy")
    eq(run([prog, "pipe"]).stdout, "child got the byte: yes\n", "untraced")
    for mode in ("pipe", "clone"):  # clone: glibc's clone() with a stack, same result
        p, _ = record([prog, mode], timeout=60)
        eq(p.stdout, "child got the byte: yes\n", "traced " + mode)
    p, _ = record([prog], timeout=60)
    m = re.search(r"worst-thread-ms (\d+)", p.stdout)
    check(m and int(m.group(1)) < 200, p.stdout)


def test_syscall_setid_child_creates_its_log_first():
    """A fork child drops to nobody with syscall(SYS_setgroups / setresgid /
    setresuid) before its first call; record's directory is root's 0700.
    Its log is created before the drop: 7 work calls in sf.PID.log."""
    prog = build_c("skep24d_setid", ["skep24d_setid.c"])
    d = tmpdir()
    os.chmod(d, 0o700)
    p, log = record([prog], out=os.path.join(d, "sf.log"))
    eq(p.stdout, "child 0\n", "output")
    kids = [f for f in os.listdir(d) if f != "sf.log"]
    eq(len(kids), 1, "child logs")
    eq(count_calls(dump_events(os.path.join(d, kids[0])))["work"], 7, "child's calls")
    eq(count_calls(dump_events(log))["work"], 1, "parent's calls")
