"""Skeptic k24s, issue 24 ("safe to leave on in production"): the claims
of the session on dlsym/dlvsym of wrapped functions, clone(CLONE_VM)
without CLONE_THREAD, SYS_exit of the last thread, and seccomp filters.
Each attack is a program of its own (tests/fixtures/skep24s_*.c)."""
import glob
import os

import sfkit
from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, record, run, tmpdir


def _logs(out):
    return sorted(glob.glob(os.path.join(os.path.dirname(out), "sf*.log")))


def _calls(logs, name):
    return sum(count_calls(dump_events(l))[name] for l in logs)


# claim 1: posix_spawn taken through dlsym / dlvsym on a real handle.
def _spawn_case(ver):
    prog = build_c("skep24s_spawn", ["skep24s_spawn.c"], libs=["-ldl"])
    env = {"VER": ver} if ver else None
    plain = run([prog], env=env)
    p, out = record([prog], env=env)
    eq(p.stdout, plain.stdout, f"output with VER={ver}")
    logs = _logs(out)
    eq(len(logs), 2, f"logs with VER={ver}: {logs}")
    eq(_calls(logs, "work"), 5, "the spawned child's work calls")


def test_dlsym_handle_posix_spawn():
    _spawn_case(None)


def test_dlvsym_posix_spawn_glibc_2_15():
    _spawn_case("GLIBC_2.15")


def test_dlvsym_posix_spawn_glibc_2_2_5():
    # The compat version: untraced it is not &posix_spawn either (same=0).
    _spawn_case("GLIBC_2.2.5")


# claim 2: clone(CLONE_VM) without CLONE_THREAD.
def _clone(mode):
    prog = build_c("skep24s_clone", ["skep24s_clone.c"])
    plain = run([prog, str(mode)])
    p, out = record([prog, str(mode)])
    eq(p.stdout, plain.stdout, "program output")
    logs = _logs(out)
    return p, logs


def test_clone_vm_settls_own_tls():
    # CLONE_VM|CLONE_SETTLS with a TLS block of its own (a copy of the
    # parent's, self pointers fixed): runs, the child's calls are in no
    # log, the parent's later calls are all there, record says so.
    p, logs = _clone(2)
    eq(p.stdout, "shared=198 st=0 p=24\n", "output")
    eq(_calls(logs, "cwork"), 0, "child's calls in any log")
    eq(_calls(logs, "pwork"), 3, "parent's calls after the clone")
    check("CLONE_SETTLS" in p.stderr, p.stderr)


def test_clone_vm_vfork_child_reported():
    # clone(CLONE_VM|CLONE_VFORK) child that runs code and SYS_exits (no
    # exec): its calls land on its parent's suppressed storage, which
    # counts them (18 events); record says so.
    p, logs = _clone(1)
    eq(len(logs), 1, "logs")
    rec_cwork = _calls(logs, "cwork")
    check(rec_cwork == 9 or "CLONE_VM" in p.stderr,
          f"child's 9 calls neither recorded ({rec_cwork}) nor reported: {p.stderr!r}")


def test_vfork_child_that_runs_code_is_reported():
    # Same for vfork(): a child that calls cwork() x4 and _exits is said;
    # one that only execs says nothing.
    prog = build_c("skep24s_vfork", ["skep24s_vfork.c"])
    for args, said in (([], False), (["x"], True)):
        plain = run([prog] + args)
        p, out = record([prog] + args)
        eq(p.stdout, plain.stdout, f"output {args}")
        eq("vfork child" in p.stderr, said, f"said {args}: {p.stderr!r}")


def test_clone_vm_settls_parent_tls():
    # CLONE_VM|CLONE_SETTLS where tls = the parent's own fs: the child
    # shares the calling thread's storage, as without CLONE_SETTLS, so the
    # runtime's part of it is left alone and the calling thread stops
    # recording, and record says so (before: the child's reset of "its"
    # block reset the parent's and its 3 pwork calls were lost unsaid).
    p, logs = _clone(6)
    eq(_calls(logs, "cwork"), 0, "child's calls in any log")
    if _calls(logs, "pwork") != 3:
        check("calling thread" in p.stderr, f"parent's pwork lost and not said: {p.stderr!r}")


# claim 3: main leaves by SYS_exit, the last thread by SYS_exit(40) after
# the leader is a zombie.
def test_sys_exit_last_thread_status():
    prog = build_c("skep24s_exit", ["skep24s_exit.c"], libs=["-lpthread"])
    plain = run([prog, "1"], check_rc=40)
    p, out = record([prog, "1"], check_rc=40)
    eq(p.stdout, plain.stdout, "output")


# claim 4: seccomp filters made by libseccomp (seccomp(2) via syscall()).
def _seccomp_prog():
    if not os.path.exists("/usr/include/seccomp.h"):
        raise sfkit.Skip("libseccomp-dev is not installed (apt install libseccomp-dev)")
    return build_c("skep24s_seccomp", ["skep24s_seccomp.c"], libs=["-lseccomp", "-lpthread"])


def _seccomp(mode, env=None, want_rc=0):
    prog = _seccomp_prog() or build_c("skep24s_seccomp", ["skep24s_seccomp.c"], libs=["-lseccomp", "-lpthread"])
    plain = run([prog, str(mode)], env=env, check_rc=want_rc)
    p, out = record([prog, str(mode)], env=env, check_rc=None)
    eq(p.returncode, want_rc, f"exit status under record (untraced {want_rc}); stderr {p.stderr[-400:]!r}")
    eq(p.stdout, plain.stdout, "output")
    check("tracing stopped at a seccomp filter" in p.stderr, p.stderr)
    return p, out


def test_seccomp_errno_on_writer_calls():
    # Default ALLOW, EPERM on pwritev/fallocate/openat/mmap/socket...
    p, out = _seccomp(0)
    eq(count_calls(dump_events(out))["work"], 100, "work calls before the filter")


def test_seccomp_kill_thread_allowlist():
    _seccomp(1)


def test_seccomp_kill_process_allowlist():
    _seccomp(2)


def test_seccomp_kill_process_in_one_thread():
    _seccomp(2, env={"INTHREAD": "1"})


def test_seccomp_filter_fork_exec():
    prog = _seccomp_prog()
    plain = run([prog, "3"])
    eq(plain.stdout, "child sum 1499500\nchild status 1280\nsum 600004950\n", "untraced output")
    p, out = record([prog, "3"], check_rc=None)
    eq(p.returncode, 0, "status")
    eq(p.stdout, plain.stdout, f"output under record; stderr {p.stderr[-300:]!r}")


def test_seccomp_arg_dependent_kill():
    _seccomp(4)


def _preauth(mode, env):
    prog = _seccomp_prog()
    plain = run([prog, str(mode)], env=env)
    p, out = record([prog, str(mode)], env=env, check_rc=None)
    eq(p.returncode, 0, "status")
    eq(p.stdout, plain.stdout, "output")
    n = count_calls(dump_events(out))["work"]
    check(n == 20100 or "tracing stopped at a seccomp filter" in p.stderr,
          f"{n} of 20100 work calls recorded and record says nothing: {p.stderr!r}")


def test_seccomp_openssh_preauth_kill_thread():
    _preauth(5, None)


def test_seccomp_openssh_preauth_kill_process_return():
    _preauth(6, {"RET": "1"})


def test_no_filter_baseline_all_calls():
    _preauth(5, {"NOFILTER": "1"})


def test_seccomp_errno_in_one_thread_tsync():
    _seccomp(0, env={"INTHREAD": "1", "TSYNC": "1"})


# claims 5 and 6: a daemon (fork, setsid, fork, chdir /, umask, close
# 0..1023 but its directory fd) counts its descriptors; with an argument it
# then does unshare(CLONE_NEWNET) + chroot + setresuid(nobody) and forks a
# worker. It writes daemon.out in the directory it is given.
def _daemon(jail):
    import time
    prog = build_c("skep24s_daemon", ["skep24s_daemon.c"])
    res = []
    for traced in (False, True):
        d = tmpdir()
        os.chmod(d, 0o777)
        work = os.path.join(d, "w")
        os.mkdir(work)
        os.chmod(work, 0o777)
        cmd = [prog, work] + (["j"] if jail else [])
        out = os.path.join(d, "sf.log")
        p = record(cmd, out=out)[0] if traced else run(cmd)
        f = os.path.join(work, "daemon.out")
        for _ in range(600):  # the daemon outlives its parent: wait for its file, not for a time
            if os.path.exists(f) and os.path.getsize(f):
                break
            time.sleep(0.05)
        with open(f) as fh:
            res.append((p, fh.read(), out))
    return res


def test_daemon_fd_table_after_close_loop():
    # the daemon's log is held by its keeper thread, in a table of its own
    (p0, plain, _), (p1, traced, out) = _daemon(False)
    eq(p1.stdout, p0.stdout, "parent output")
    eq(plain, "f=0 fds 1 [3,] then 1 [3,] worker st 0 s 145\n", "untraced daemon.out")
    eq(traced, plain, "daemon.out under record")


def test_daemon_worker_logs():
    (p0, plain, _), (p1, traced, out) = _daemon(False)
    logs = _logs(out)
    eq(len(logs), 3, f"logs {logs}")
    eq(_calls(logs, "dwork"), 17, "dwork calls of daemon (10) and worker (7)")


def test_jailed_worker_gets_log():
    # the daemon's keeper, made at its first call, stayed in record's
    # network namespace: it connects for the worker
    (p0, plain, _), (p1, traced, out) = _daemon(True)
    eq(plain, "f=0 fds 1 [3,] then -1 [] worker st 0 s 145\n", "untraced daemon.out")
    logs = _logs(out)
    eq(_calls(logs, "dwork"), 17, f"dwork calls in {logs}; record said {p1.stderr!r}")



# claim 1: RTLD_NEXT chains of two user preloads wrapping posix_spawn, with
# dlerror after failed lookups; and 1e5 lookups that must all agree.
def _next_prog():
    a = build_c("libskep24s_preA.so", ["skep24s_pre.c"], flags=['-DL="A"'], libs=["-ldl"], shared=True, xray=False)
    b = build_c("libskep24s_preB.so", ["skep24s_pre.c"], flags=['-DL="B"'], libs=["-ldl"], shared=True, xray=False)
    return build_c("skep24s_next", ["skep24s_next.c"], libs=["-ldl"]), a + " " + b


def test_rtld_next_two_preloads():
    prog, pre = _next_prog()
    plain = run([prog], env={"LD_PRELOAD": pre})
    eq(plain.stdout.count("null ./"), 0, "untraced dlerror names the object by its path")  # paths are absolute here
    check("A>null " in plain.stdout and "B>null " in plain.stdout and "child 14\nst 3\n" in plain.stdout, plain.stdout)
    p, out = record([prog], env={"LD_PRELOAD": pre, "ASAN_OPTIONS": "verify_asan_link_order=0"})
    eq(p.stdout, plain.stdout, "output of the chain under record")
    eq(_calls(_logs(out), "nwork"), 4, "spawned child's calls")


def test_dlsym_loop_1e5():
    prog, _ = _next_prog()
    plain = run([prog, "loop"])
    p, out = record([prog, "loop"])
    eq(p.stdout, plain.stdout, "output")
    eq(p.stdout, "bad 0 same 1\n", "lookups")
    eq(count_calls(dump_events(out))["nwork"], 100000, "nwork calls")



# claim 6: every new process gets its own log: Rust's std::process::Command
# (posix_spawn or fork+exec inside std) from four threads at once.
def test_rust_command_in_threads():
    prog = sfkit.rust_fixture("skep24s_cmd")
    plain = run([prog])
    p, out = record([prog], args=["-q"])
    eq(p.stdout, plain.stdout, "output")
    logs = _logs(out)
    eq(len(logs), 13, "logs: the parent and 12 children")
    n = sum(c for l in logs for k, c in count_calls(dump_events(l)).items() if k.endswith("rwork"))
    eq(n, 312, "rwork calls of the 12 children")


if __name__ == "__main__":
    sfkit.main(globals())


# A fork child whose first call comes on a thread of its own: its keeper
# is made there, not on the leader, and still sees the leader's bare
# exit instruction (the leader's exit word is found at the fork).
def test_fork_child_first_call_on_a_thread():
    prog = build_c("skep24s_forkthread", ["skep24s_forkthread.c"], libs=["-lpthread"])
    plain = run([prog])
    eq(plain.stdout, "child s 35\nstatus 7\n", "untraced")
    p, out = record([prog])
    eq(p.stdout, plain.stdout, "traced")
    logs = _logs(out)
    eq(len(logs), 2, f"logs {logs}")
    eq(_calls(logs, "work"), 5, "the child's thread's work calls")
