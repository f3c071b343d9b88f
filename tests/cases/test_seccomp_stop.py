"""Tracing that stops at a seccomp filter (issue 24, src/runtime/sandbox.c):
nothing recorded before the stop is lost, the log says the process exited
as it did, and each process that execs untraced under an inherited filter
is named. tests/fixtures/h24secc_sandbox.c: N calls of leaf(), an
allow-list filter (OpenSSH's preauth sandbox's way: kill on anything
else), M more calls, exit 0; with THREADS, threads that made N calls each
wait through the install."""
import os
import re

from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, record, run


def _prog():
    return build_c("h24secc_sandbox", ["h24secc_sandbox.c"], libs=["-lpthread"])


def _case(n, m, mode, threads=0, args=()):
    prog = _prog()
    cmd = [prog, str(n), str(m), mode] + ([str(threads)] if threads else [])
    plain = run(cmd)
    p, log = record(cmd, args=list(args))
    eq(p.stdout, plain.stdout, "output")  # record checked status 0
    check("tracing stopped at a seccomp filter (it refuses " in p.stderr, f"record said {p.stderr!r}")
    check("did not exit normally" not in p.stderr, f"record called a normal exit abnormal: {p.stderr!r}")
    d = run([SFTRACE, "dump", log]).stdout
    check("state: exited" in d, f"dump's header: {d[:600]!r}")
    summary = [l for l in d.splitlines() if l.startswith("summary:")]
    check(len(summary) == 1 and " 0 lost" in summary[0] and " 0 dropped" in summary[0], f"dump: {summary}")
    info = run([SFTRACE, "info", log]).stdout
    check(re.search(r"exit state\s+: exited 0", info), f"info: {info[:1500]!r}")
    calls = count_calls(dump_events(log))
    # every call made before the filter, none after (sleds unpatched)
    eq(calls["leaf"], n * (1 + threads), "leaf calls: those before the filter, every thread's")
    return p, log


def test_stop_small_list_one_slot():
    _case(10, 5, "small")


def test_stop_small_list_many_slots():
    # 100000 calls: many hand-offs, slots queued to the writer at the stop
    _case(100000, 5, "small")


def test_stop_threads_waiting_through_install():
    # two threads hold events in their slots (and the writer's queue) while
    # the main thread installs the filter; their later calls are not traced
    _case(100000, 5, "small", threads=2)


def test_stop_ssh_list_threads():
    _case(200000, 7, "ssh", threads=2)


def test_stop_writer_sync():
    _case(100000, 5, "small", threads=2, args=("--writer", "sync"))


def test_exec_under_inherited_filter_names_each_pid():
    # 3 children forked under the filter each exec the program untraced:
    # record names each of them, and the installer's line is said once
    _exec_case("exec")


def test_exec_under_inherited_filter_without_sigprocmask():
    # the same list without rt_sigprocmask: the forks are bare (no call of
    # the runtime's), the lines are relayed all the same
    _exec_case("execnomask")


def _exec_case(mode):
    prog = _prog()
    cmd = [prog, "10", "3", mode]
    plain = run(cmd)
    eq(plain.stdout, "child sum=145\n" * 3 + "sum=145\n", "untraced output")
    p, log = record(cmd)
    eq(p.stdout, plain.stdout, "output")
    pid = re.search(r"wrote \S+ \(pid (\d+)\)", p.stderr).group(1)
    lines = re.findall(r"sftrace: pid (\d+): runs a program untraced under the seccomp filter of pid (\d+)\n",
                       p.stderr)
    eq(len(lines), 3, f"one line per child: {p.stderr!r}")
    eq(len({c for c, _ in lines}), 3, f"three pids: {lines}")
    check(all(w == pid and c != pid for c, w in lines), f"children named, installer {pid}: {lines}")
    eq(p.stderr.count("a seccomp filter the runtime cannot start under"), 1, f"installer's line: {p.stderr!r}")
    eq(sorted(os.listdir(os.path.dirname(log))), ["sf.log"], "logs: the children's programs ran untraced")
    eq(count_calls(dump_events(log))["leaf"], 10, "installer's calls before the filter")


def test_fork_after_stop_under_a_list_without_sigprocmask():
    # The runtime's fork handlers (the lock's signal mask, getpid) ran
    # after the stop and the filter killed the program (SIGSYS) where
    # untraced its fork works: the fork is bare once tracing stopped
    for n in (10, 100000):
        prog = _prog()
        cmd = [prog, str(n), "1000", "smallfork"]
        plain = run(cmd)
        p, log = record(cmd)
        eq(p.stdout, plain.stdout, f"n={n}: output")
        check("did not exit normally" not in p.stderr and "killed" not in p.stderr, f"n={n}: {p.stderr!r}")
        eq(count_calls(dump_events(log))["leaf"], n, f"n={n}: leaf calls before the filter")
        eq(sorted(os.listdir(os.path.dirname(log))), ["sf.log"], f"n={n}: logs (the child records nothing)")


def test_every_runtime_syscall_is_listed():
    """Every system call the runtime's sources name (SYS_x in src/runtime)
    is in one of sandbox.c's tables, checked at a filter's install, or in
    its SF_UNCHECKED ledger with the reason it is not: a new call of the
    runtime's cannot go unseen by the check."""
    root = os.path.join(os.path.dirname(__file__), "..", "..", "src", "runtime")
    used = set()
    for d in (root, os.path.join(root, "arch", "x86_64"), os.path.join(root, "arch", "aarch64")):
        for f in os.listdir(d):
            if f != "sandbox.c" and f.endswith((".c", ".h", ".S")):
                with open(os.path.join(d, f)) as fh:
                    used |= set(re.findall(r"\bSYS_([a-z_0-9]+)", fh.read()))
    with open(os.path.join(root, "sandbox.c")) as fh:
        sb = fh.read()
    listed = set(re.findall(r"\{SYS_([a-z_0-9]+),", sb))
    listed |= set(re.findall(r"allows(?:_pinned)?\((?:0x[0-9a-f]+, )?SYS_([a-z_0-9]+)", sb))
    listed |= set(re.findall(r"SYS_([a-z_0-9]+)", sb[sb.index("static int cred_possible"):]))
    for line in re.findall(r"SF_UNCHECKED ([^:]*):", sb):
        listed |= set(line.split())
    eq(sorted(used - listed), [], "runtime system calls in no table of sandbox.c and not in its ledger")


def test_no_refused_call_after_a_one_call_deny_list():
    """skep24t_deny NAME errno drop under strace -f, for each call the
    runtime makes after an install (the program itself makes none of
    them): no process of the program's makes NAME after the install (an
    EPERM there is a runtime call the filter refused), and the output is
    the untraced one."""
    import shutil
    if not shutil.which("strace"):
        import sfkit
        raise sfkit.Skip("no strace")
    import sfkit
    prog = build_c("skep24t_deny", ["skep24t_deny.c"], libs=["-lpthread"])
    bad = []
    for name in ["close", "fstat", "getpid", "fchown", "geteuid", "gettid", "tgkill", "openat", "read",
                 "munmap", "getppid", "prlimit64", "socket", "connect"]:
        d = sfkit.tmpdir()
        st = os.path.join(d, "st")
        # a session of its own: in the runner's process group, a SIGHUP the
        # kernel sent the group (orphaned with a stopped member) killed this
        # record at its start once (CI: "+++ killed by SIGHUP +++", no output)
        rc, out, err = sfkit.run_group(["strace", "-f", "-qq", "-o", st, SFTRACE, "record", "-q", "-o",
                                        os.path.join(d, "d.log"), "--", prog, name, "errno", "drop"], timeout=120)
        if out != "ok 40000\n":
            bad.append(f"{name}: out {out!r} (status {rc}, stderr {err[-200:]!r})")
        lines = open(st).read().splitlines()
        at = [i for i, l in enumerate(lines) if "PR_SET_SECCOMP" in l]
        if not at:
            bad.append(f"{name}: no install seen")
            continue
        refused = [l for l in lines[at[0]:] if re.match(r"\d+ %s\(.*= -1 EPERM" % name, l)]
        if refused:
            bad.append(f"{name}: {refused[0]}")
    eq(bad, [], "runtime calls the filter refused, made after the install")
