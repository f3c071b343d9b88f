"""Skeptic 24v2: attacks on the seccomp claims merged into integ for issue
24 (src/runtime/sandbox.c), with programs of this pass's own. The first
rule: the traced program behaves exactly as untraced, so each case runs
the same program untraced and under `sftrace record` and compares what it
printed and how it ended.

skep24v2_sec installs a filter (ACTION HOW TARGETS, see its header), then
runs threads, a fork with a grandchild, signals, a dlopen of an
instrumented library and a posix_spawn, printing only exact values."""
import glob
import os
import subprocess

from sfkit import (FIXBUILD, SFTRACE, build_c, check, count_calls, dump_events, eq, run, run_group,
                   tmpdir)


def _sec():
    lib = build_c("libskep24v2_lib.so", ["skep24v2_lib.c"], shared=True)
    exe = build_c("skep24v2_sec", ["skep24v2_sec.c"], flags=["-Wall"], libs=["-lpthread", "-ldl"])
    return exe, lib


def _status(rc):
    """record exits 128+N for a program killed by signal N; Popen says -N."""
    return -(rc - 128) if isinstance(rc, int) and rc > 128 else rc


def _both(args, env=None, extra=(), timeout=60):
    """(untraced CompletedProcess, traced (rc, stdout, stderr), log dir)."""
    exe, lib = _sec()
    cmd = [exe, args[0], args[1], lib] + list(args[2:])
    u = run(cmd, check_rc=None, env=env, timeout=60)
    d = tmpdir()
    t = run_group([SFTRACE, "record", "-o", os.path.join(d, "sf.log")] + list(extra) + ["--"] + cmd,
                  timeout=timeout, env=env)
    return u, t, d


def _same(args, env=None):
    u, t, d = _both(args, env)
    rc, out, err = t
    eq(out, u.stdout, f"{' '.join(args)}: traced stdout (record said: {err[-600:]!r})")
    eq(_status(rc), u.returncode, f"{' '.join(args)}: exit status")
    return u, t, d


# ---- claim 1: every call the runtime makes after a filter is checked ----

def test_kill_socket_unix_only():
    # argument-dependent: socket(AF_UNIX) kills, other families pass
    _same(["kill", "prctl", "socket_unix"])


def test_kill_openat_creat_only_seccomp_call():
    _same(["kill", "seccomp", "openat_creat"])


def test_errno_openat_creat():
    _same(["errno", "prctl", "openat_creat"])


def test_trap_no_handler_runtime_only_calls():
    # calls the program itself never makes (untraced it exits 3): TRAP
    # without a SIGSYS handler would kill it
    u, t, d = _same(["trap", "prctl", "sched_yield", "nanosleep", "clock_nanosleep", "clock_gettime", "pidfd_open",
                     "pidfd_getfd", "getuid"])
    eq(u.returncode, 3, "untraced exit")


def test_trap_with_handler_counts_no_sigsys():
    u, t, d = _same(["traph", "prctl", "sched_yield", "nanosleep", "clock_nanosleep", "clock_gettime", "pidfd_open",
                     "pidfd_getfd", "getuid", "socket", "connect", "sendmsg", "recvmsg"])
    check("sigsys 0\n" in t[1], t[1])


def test_kill_thread_runtime_only_calls():
    _same(["killthread", "prctl", "sched_yield", "nanosleep", "clock_nanosleep", "clock_gettime", "pidfd_open",
           "pidfd_getfd", "getuid"])


def test_kill_each_runtime_call_alone():
    # one filter per call the runtime makes and the program does not: the
    # dlopen scan's pread64, the fork channel, the keeper, the log's path
    for target in ("pread64", "pidfd_open", "pidfd_getfd", "getuid", "sendmsg", "connect", "unshare",
                   "clock_gettime", "readlinkat", "getcwd", "dup3", "close_range", "fcntl", "memfd_create",
                   "prlimit64", "sched_getaffinity", "process_vm_readv", "ftruncate", "fallocate"):
        _same(["kill", "prctl", target])


def test_kill_log_writes_on_high_fds():
    # the runtime's descriptors sit high: a filter refusing writes and
    # closes on fd >= 64 only
    _same(["kill", "prctl", "write_hi", "pwrite_hi", "pwritev_hi"])
    _same(["killthread", "prctl", "close_hi"])


def test_log_action_changes_nothing_and_traces():
    u, t, d = _same(["log", "prctl", "madvise", "sched_yield", "clock_gettime", "pidfd_open", "getuid", "socket"])
    eq(len(glob.glob(os.path.join(d, "sf*.log"))), 3, "logs (process, child, grandchild)")


def test_tsync_thread_and_stacked_installs():
    _same(["kill", "tsync", "socket_unix"])
    _same(["kill", "thread", "socket_unix"])
    _same(["kill", "stack", "openat_creat", "socket_unix", "pidfd_open", "getuid"])


def test_raw_syscall_install_socket_unix():
    # documented as not seen (sandbox.c's header); what happens anyway
    _same(["kill", "asm", "socket_unix"])


def test_dup3_over_runtime_fds_under_filters():
    # the log's move when the program dup3s /dev/null over 900..1023, with
    # the move's own calls refused (argument-dependent on fcntl's command)
    env = {"SKEP_DUP2": "1"}
    for args in (["log", "prctl", "mlock"], ["kill", "prctl", "fcntl_dupfd"], ["kill", "prctl", "fcntl_setfd"],
                 ["kill", "prctl", "dup"], ["trap", "prctl", "fcntl_dupfd", "fcntl_dupfd0", "dup"],
                 ["killthread", "prctl", "fcntl_dupfd", "fcntl_dupfd0", "dup"]):
        u, t, d = _same(args, env=env)
        check("dup3 failures 0\n" in u.stdout, u.stdout)


def _nested(target):
    """The filtered program runs (posix_spawn of /bin/sh -c) another
    instrumented program: the same fixture, with a harmless LOG filter."""
    exe, lib = _sec()
    return _same(["kill", "prctl", target], env={"SKEP_SPAWN": f"SKEP_SPAWN=true {exe} log prctl {lib} mlock"})


def test_exec_under_filter_nested_program_runs():
    for target in ("socket_unix", "pidfd_open", "pidfd_getfd", "getuid", "clock_gettime", "pread64", "ioctl",
                   "prlimit64", "close_range", "memfd_create", "fallocate", "readlinkat"):
        _nested(target)


def test_exec_under_filter_unshare_kills_nested():
    for target in ("unshare", "sched_setaffinity", "sched_setscheduler"):
        _nested(target)


def test_exec_under_filter_ftruncate_kills_nested_at_exit():
    _nested("ftruncate")


def test_exec_under_filter_killthread_hangs_nested():
    exe, lib = _sec()
    env = {"SKEP_SPAWN": f"SKEP_SPAWN=true {exe} log prctl {lib} mlock"}
    u, t, d = _both(["killthread", "prctl", "unshare"], env=env, timeout=8)
    eq(t[0] != "timeout", True, "record ended (no hang)")
    eq((t[1], _status(t[0])), (u.stdout, u.returncode), "output and status")


# ---- claim 2: W^X filters never kill the program ----

def test_wx_errno_same():
    _same(["errno", "prctl", "mprotect_wx"])


def test_wx_kill_spawned_child():
    _same(["kill", "prctl", "mprotect_wx"])


def test_wx_trap_spawned_child():
    _same(["trap", "prctl", "mprotect_wx"])


def test_exec_mprotect_killthread_spawned_child():
    _same(["killthread", "prctl", "mprotect_exec"])


def _wx_dlopen(action, env, extra=()):
    u, t, d = _both([action, "prctl", "mprotect_wx"], env=env, extra=extra)
    rc, out, err = t
    eq((out, _status(rc)), (u.stdout, u.returncode), f"{action} {env} {extra}: output and status ({err[-400:]!r})")
    info = run([SFTRACE, "dump", os.path.join(d, "sf.log")]).stdout
    calls = count_calls(dump_events(os.path.join(d, "sf.log")))
    said = "not be traced" in err or "untraced" in err or "untraced" in info.split("events:")[0]
    check(calls["skep24v2_libg"] == 1000 or said,
          f"{action} {env} {extra}: skep24v2_libg calls {calls['skep24v2_libg']} of 1000, and no line; "
          f"record said: {err[-600:]!r}")


def test_wx_dlopen_single_thread_traced_or_said():
    env = {"SKEP_NO_SPAWN": "1", "SKEP_NO_THREADS": "1"}
    _wx_dlopen("kill", env, ["--writer", "sync"])
    _wx_dlopen("kill", env)


def test_wx_errno_dlopen_single_thread_traced():
    env = {"SKEP_NO_SPAWN": "1", "SKEP_NO_THREADS": "1"}
    for action in ("eperm", "eacces"):
        _wx_dlopen(action, env, ["--writer", "sync"])
        _wx_dlopen(action, env)


def test_wx_kill_dlopen_threads_traced_or_said():
    _wx_dlopen("kill", {"SKEP_NO_SPAWN": "1"})


def test_wx_kill_dlopen_no_kill():
    # the dlopen itself never kills (no spawn here)
    _same(["kill", "prctl", "mprotect_wx"], env={"SKEP_NO_SPAWN": "1"})


# ---- claim 3: after a stop, children are exec'd without the runtime ----

def test_stop_exec_without_runtime():
    for target in ("socket_unix", "connect", "sendmsg", "close_range"):
        u, t, d = _same(["kill", "prctl", target], env={"SKEP_SPAWN_MAPS": "1"})
        check("tracing stopped at a seccomp filter" in t[2], t[2][-600:])


# ---- claim 6: a log first made in a constructor ----

def _ctor(args=(), prefix=()):
    build_c("libskep24v2_ctorlib.so", ["skep24v2_ctorlib.c"], shared=True)
    exe = build_c("skep24v2_ctor", ["skep24v2_ctor.c"],
                  libs=["-L" + FIXBUILD, "-lskep24v2_ctorlib", "-Wl,-rpath," + FIXBUILD])
    u = run(list(prefix) + [exe])
    d = tmpdir()
    t = run(list(prefix) + [SFTRACE, "record", "-o", os.path.join(d, "sf.log")] + list(args) + ["--", exe])
    ul, tl = u.stdout.splitlines(), t.stdout.splitlines()
    eq(tl[:2], ul[:2], f"{args} {prefix}: the constructor's lines (its descriptors, its threads)")
    # main's lines: the descriptors must match; threads may not (a writer)
    for a, b in zip(ul[2:], tl[2:]):
        eq(b.split(" threads:")[0], a.split(" threads:")[0], f"{args} {prefix}: main's descriptors")
    calls = count_calls(dump_events(os.path.join(d, "sf.log")))
    eq(calls["skep24v2_ctorwork"], 200000, "calls recorded")


def test_ctor_log_not_in_fd_table_writer_thread():
    _ctor()
    _ctor(["--writer", "thread"])


def test_ctor_log_one_cpu_default_writer():
    _ctor(prefix=["taskset", "-c", "0"])


def test_ctor_log_writer_sync():
    _ctor(["--writer", "sync"])


# ---- claim 5: a Docker-like profile inherited across exec ----

def _netfork(profile, mode=()):
    prof = build_c("skep24v2_prof", ["skep24v2_prof.c"], flags=["-Wall"], xray=False)
    exe = build_c("skep24v2_netfork", ["skep24v2_netfork.c"], flags=["-Wall"])
    d = tmpdir()
    os.chmod(d, 0o755)
    args = list(mode)
    if args == ["chroot"]:
        os.mkdir(os.path.join(d, "empty"))
        args.append(os.path.join(d, "empty"))
    u = run([prof] + profile + ["--", exe] + args)
    t = run([prof] + profile + ["--", SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe] + args)
    eq(t.stdout, u.stdout, f"{profile} {mode}: the program's output")
    counts = {}
    for log in glob.glob(os.path.join(d, "sf*.log")):
        counts[os.path.basename(log)] = count_calls(dump_events(log))["nf_work"]
    return counts, t.stderr


def test_profile_pidfd_getfd_refused_children_logged():
    if os.geteuid() != 0:
        return  # unshare(CLONE_NEWNET), chroot and setresuid need root
    for mode in ((), ("drop",), ("chroot",)):
        counts, err = _netfork(["pidfd_getfd"], mode)
        eq(sorted(counts.values()), [100, 200, 300, 1010], f"{mode}: nf_work calls per log (record said {err!r})")
    for mode in ((), ("drop",)):
        counts, err = _netfork(["pidfd_getfd", "pidfd_open", "socketpair"], mode)
        eq(sorted(counts.values()), [100, 200, 300, 1010], f"{mode}: nf_work calls per log (record said {err!r})")


def test_profile_impossible_names_program_and_call():
    if os.geteuid() != 0:
        return
    for profile, made in ((["pidfd_getfd", "pidfd_open", "socketpair"], [100, 1010]),
                          (["pidfd_getfd", "sendmsg"], [1010])):
        counts, err = _netfork(profile, ("chroot",))
        eq(sorted(counts.values()), made, f"{profile}: logs made (record said {err!r})")
        lines = [ln for ln in err.splitlines() if "wrote no log" in ln]
        eq(len(lines), 4 - len(made), f"{profile}: lines for the children without a log: {err!r}")
        for ln in lines:
            check("netfork" in ln and any(c in ln for c in profile), f"{profile}: names program and call: {ln!r}")


# ---- claim 4: record's keeper name is record's alone ----

def _keeper_run(squat):
    """record of netfork (children chrooted: their logs come from the
    keeper) with TMPDIR on a fresh tmpfs, whose inode numbers are
    sequential as on a tmpfs /tmp; SQUAT names of the next inodes are
    bound and listened on by another process first. Returns (log counts,
    connections the squatter got, record's stderr)."""
    import select
    import socket
    import threading
    d = tmpdir()
    os.chmod(d, 0o755)
    t = os.path.join(d, "t")
    os.mkdir(t)
    run(["mount", "-t", "tmpfs", "-o", "mode=1777", "none", t])
    socks = []
    try:
        probe = os.path.join(t, "probe")
        os.mkdir(probe)
        st = os.stat(probe)
        os.rmdir(probe)
        for ino in range(st.st_ino + 1, st.st_ino + 1 + squat):
            so = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            so.bind(b"\0" + f"sftrace-keeper-{st.st_dev:x}-{ino:x}".encode())
            so.listen(64)
            so.setblocking(False)
            socks.append(so)
        exe = build_c("skep24v2_netfork", ["skep24v2_netfork.c"], flags=["-Wall"])
        os.mkdir(os.path.join(d, "empty"))
        # the squatter accepts and hangs up at once (a silent one makes each
        # request wait for its time-out: 20 s of the program's time)
        got = [0]
        stop = threading.Event()

        def squatter():
            while not stop.is_set():
                ready, _, _ = select.select(socks, [], [], 0.05)
                for so in ready:
                    try:
                        c, _ = so.accept()
                    except BlockingIOError:
                        continue
                    got[0] += 1
                    c.close()
        th = threading.Thread(target=squatter)
        th.start()
        try:
            p = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe, "chroot",
                     os.path.join(d, "empty")], env={"TMPDIR": t})
        finally:
            stop.set()
            th.join()
        got = got[0]
        counts = sorted(count_calls(dump_events(log))["nf_work"] for log in glob.glob(os.path.join(d, "sf*.log")))
        return counts, got, p.stderr
    finally:
        for so in socks:
            so.close()
        run(["umount", t], check_rc=None)


def test_keeper_name_taken_few_times():
    if os.geteuid() != 0:
        return  # mount
    counts, got, err = _keeper_run(4)
    eq((counts, got), ([100, 200, 300, 1010], 0), f"logs' nf_work calls, squatter's connections ({err[-500:]!r})")


def test_keeper_name_taken_many_times():
    if os.geteuid() != 0:
        return
    counts, got, err = _keeper_run(64)
    eq((counts, got), ([100, 200, 300, 1010], 0), f"logs' nf_work calls, squatter's connections ({err[-500:]!r})")


if __name__ == "__main__":
    import sfkit
    sfkit.main(globals())
