"""The seccomp ledger (issue 24, src/runtime/sandbox.c's SF_UNCHECKED
entries once marked "unverified"): the runtime's calls on a program thread
after a filter's install, each path in turn, under a filter that refuses
one call with SECCOMP_RET_KILL_PROCESS, ERRNO(EPERM) or TRAP (a SIGSYS
handler of the program's that counts and fails the call).

tests/fixtures/h24led_deny.c NR ACTION PATH: the filter, 20,000 work()
calls, PATH (a dlopen, a namespace change, a lowered RLIMIT_NPROC, a
CLONE_VFORK clone through syscall(), dup2 over every number, a fork), 20,000
more. Untraced and traced must print the same and end the same (a
handler that ran for a call of the runtime's prints "trapped N"); where
tracing goes on, the calls after the install are in the log; where it
stops, record names the call."""
import os
import re

import sfkit
from sfkit import SFTRACE, build_c, check, eq, run

ISSUE = 24
ACTIONS = ("kill", "errno", "trap")


def _nr(name):
    x86 = dict(pread64=17, mincore=27, getcwd=79, ioctl=16, getuid=102, getdents64=217, set_robust_list=273,
               sched_setaffinity=203, pidfd_open=434, pidfd_getfd=438, fcntl=72, prlimit64=302, sched_yield=24,
               nanosleep=35, rt_sigprocmask=14, futex=202, clock_gettime=228, readlinkat=267)
    a64 = dict(pread64=67, mincore=232, getcwd=17, ioctl=29, getuid=174, getdents64=61, set_robust_list=99,
               sched_setaffinity=122, pidfd_open=434, pidfd_getfd=438, fcntl=25, prlimit64=261, sched_yield=124,
               nanosleep=101, rt_sigprocmask=135, futex=98, clock_gettime=113, readlinkat=78)
    return str((x86 if os.uname().machine == "x86_64" else a64)[name])


def _prog():
    return build_c("h24led_deny", ["h24led_deny.c"], libs=["-lpthread", "-ldl"])


def _lib():
    return build_c("libh24led_lib.so", ["h24led_lib.c"], shared=True)


def _norm(out):
    return re.sub(r"clone \d+ ", "clone N ", out)


def _pair(name, action, path, extra=()):
    """Untraced and traced runs of one case: (untraced, traced, log dir)."""
    cmd = [_prog(), _nr(name), action, path] + list(extra)
    u = run(cmd, check_rc=None, timeout=60)
    d = sfkit.tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--"] + cmd, check_rc=None, timeout=120)
    return u, t, d


def _same(name, action, path, extra=()):
    """The traced run as the untraced one; returns (traced, log dir) or a
    line saying how they differ."""
    u, t, d = _pair(name, action, path, extra)
    urc = 128 - u.returncode if u.returncode < 0 else u.returncode  # record: 128 + signal
    if (urc, _norm(u.stdout)) != (t.returncode, _norm(t.stdout)):
        return f"{path} {name} {action}: untraced {urc} {u.stdout!r}, traced {t.returncode} {t.stdout!r} " \
               f"({t.stderr[-200:]!r})", None, None
    return None, t, d


def _work_calls(d):
    logs = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log")]
    return sum(sfkit.count_calls(sfkit.dump_events(l)).get("work", 0) for l in logs)


def _matrix(cases):
    bad = []
    for name, path, extra in cases:
        for a in ACTIONS:
            why, _, _ = _same(name, a, path, extra)
            if why:
                bad.append(why)
    eq(bad, [], "traced runs that differ from untraced")


def test_dlopen_after_install_scan_refused():
    """A dlopen after an install (loader_hook.c: objects.c's scan, the
    sleds' patching): under a filter that refuses a call of the scan's
    (mincore, getcwd, readlinkat: never the program's own), the object
    stays untraced and the dlopen runs as untraced; main's calls before
    and after are recorded. Without such a filter the library's 1,000
    calls are recorded."""
    lib = _lib()
    _matrix([(n, "dlopen", [lib]) for n in ("mincore", "getcwd", "readlinkat")])
    why, t, d = _same("mincore", "errno", "dlopen", [lib])
    check(why is None, why)
    calls = sfkit.count_calls(sfkit.dump_events(os.path.join(d, "s.log")))
    eq((calls.get("work", 0), calls.get("lib_work", 0)), (40000, 0), "mincore refused: work and lib_work calls")
    # no filter that refuses a call of the runtime's: the library traced
    cmd = [_prog(), "9999", "errno", "dlopen", lib]
    d = sfkit.tmpdir()
    run([SFTRACE, "record", "-q", "-o", os.path.join(d, "s.log"), "--"] + cmd)
    calls = sfkit.count_calls(sfkit.dump_events(os.path.join(d, "s.log")))
    eq((calls.get("work", 0), calls.get("lib_work", 0)), (40000, 1000), "no refusal: work and lib_work calls")


def test_leader_exit_dlopen_under_pread64_refused():
    """main's pthread_exit loads libgcc_s (a dlopen) while a thread runs on:
    the scan's pread64 killed the program (KILL, TRAP) where untraced it
    ends "ok 60000"."""
    _matrix([("pread64", "leader", [])])


def test_namespace_calls_under_filter():
    """setns(fd, 0) asks the descriptor's type (ioctl NS_GET_NSTYPE), a
    lowered RLIMIT_NPROC asks getuid: the program's handler saw the
    runtime's calls (TRAP), KILL killed it. Now they are asked only where
    the filter allows them; tracing goes on (the 40,000 calls)."""
    _matrix([("ioctl", "setns", []), ("getuid", "nproc", [])])
    for name, path in (("ioctl", "setns"), ("getuid", "nproc")):
        why, t, d = _same(name, "errno", path)
        check(why is None, why)
        eq(_work_calls(d), 40000, f"{path} under a filter refusing {name}: work calls")


def test_unshare_writer_cycle_under_filter():
    """unshare(CLONE_NEWNS) stops the writer thread and makes a new one
    (ns.c): the new one is made under the filter, and the stop's calls are
    made on the program's thread. Under a filter that refuses any of
    them, the call is made as it is (or the writer is not made again);
    before, KILL and TRAP ended the program."""
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root (unshare CLONE_NEWNS)")
    _matrix([(n, "unshare", []) for n in ("getdents64", "set_robust_list", "sched_setaffinity", "pidfd_open",
                                           "pidfd_getfd", "fcntl", "sched_yield")])
    why, t, d = _same("pidfd_getfd", "errno", "unshare")
    check(why is None, why)
    eq(_work_calls(d), 40000, "unshare under a filter refusing pidfd_getfd: work calls")


def test_vfork_clone_after_stop():
    """syscall(SYS_clone, CLONE_VFORK | SIGCHLD) after tracing stopped at
    the filter: the runtime's wait for the child (hooks.c, vw_wait: the
    signal mask, a futex wait) ran after the stop and the filter killed
    the parent. Stopped, the clone is the program's own."""
    _matrix([(n, "vclone", []) for n in ("futex", "rt_sigprocmask", "sched_yield")])


def test_dup2_over_the_log_under_filter():
    """dup2 of /dev/null over every number 3..1023 (the log's among them)
    under a filter that refuses a call of the log's move (fdguard.c,
    move_away: prlimit64, fcntl F_DUPFD_CLOEXEC; the gate's nanosleep)."""
    _matrix([(n, "dup2", []) for n in ("fcntl", "prlimit64", "nanosleep")])


def test_clock_and_waits_without_their_calls():
    """clock_gettime (the vDSO falls back to the system call without a
    vDSO clock source), sched_yield and nanosleep (the waits for the
    writer at exit and at a fork, the descriptor gate): a fork child's exit
    waited with sched_yield after the install and the filter killed it
    (KILL). Where the filter refuses them, the waits are futex naps and
    the clock is the counter's line: tracing goes on, every call recorded
    (40,000 and the child's 5,000), and the log's times stay in order."""
    _matrix([(n, "fork", []) for n in ("sched_yield", "nanosleep", "clock_gettime")])
    for name in ("clock_gettime", "sched_yield", "nanosleep"):
        why, t, d = _same(name, "errno", "fork")
        check(why is None, why)
        check("tracing stopped" not in t.stderr, f"{name}: {t.stderr[-400:]!r}")
        eq(_work_calls(d), 45000, f"{name} refused: work calls in the two logs")
        ts = [e[0] for e in sfkit.dump_events(os.path.join(d, "s.log"))]
        eq(ts == sorted(ts) and ts[-1] > ts[0], True, f"{name} refused: the parent's event times in order")


def test_fork_child_trap_on_glibcs_own_call():
    """TRAP on set_robust_list, which glibc's fork makes in the child (the
    program's own call, not the runtime's): untraced the handler counts it
    and the child works; traced the child died of SIGSYS ("child status
    31")."""
    _matrix([("set_robust_list", "fork", [])])


if __name__ == "__main__":
    sfkit.main(globals())
