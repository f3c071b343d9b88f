"""skeptic24u: issue 24's claims of this stop tried with programs of my own
(fixtures skep24u_*), the way a user who did not write the tool's fixtures
would: a container's seccomp profile, sandboxes that refuse the calls the
ledger marks "unverified", fork storms, deep namespace chains, forks from
signal handlers."""
import collections
import os

import sfkit
from sfkit import SFTRACE, build_c, check, eq, run

ISSUE = 24


def _logs(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def _calls(log):
    return sfkit.count_calls(sfkit.dump_events(log))


def _all_calls(d):
    c = collections.Counter()
    for log in _logs(d):
        c.update(_calls(log))
    return c


def _container():
    return build_c("skep24u_container", ["skep24u_container.c"], xray=False)


# record inside the container: the profile refuses ptrace, which an ASan
# build's LeakSanitizer needs at exit (CI's CLI; "LeakSanitizer has
# encountered a fatal error", exit 1)
IN_CONTAINER = {"ASAN_OPTIONS": "detect_leaks=0"}


def _fdserver_case(wrapper, args=(), all_calls=True):
    prog = build_c("skep24u_fdserver", ["skep24u_fdserver.c"], flags=["-pthread"])
    u_dir, t_dir, d = sfkit.tmpdir(), sfkit.tmpdir(), sfkit.tmpdir()
    u = run(wrapper + [prog, u_dir])
    t = run(wrapper + [SFTRACE, "record", "-o", os.path.join(d, "s.log")] + list(args) + ["--", prog, t_dir],
            check_rc=None, env=IN_CONTAINER)
    eq(t.returncode, 0, f"traced exit (stderr: {t.stderr[-400:]})")
    check(u.stdout.startswith("fds before: 0 1 2 \nopened 1021, highest 1023, then Too many open files, 0 not exact"),
          f"untraced: {u.stdout!r}")
    eq(t.stdout, u.stdout, "traced output (descriptors seen, files opened before EMFILE)")
    if all_calls:
        eq(_all_calls(d)["work"], 3100, "work calls recorded")
    return t, d


def test_server_fd_table_plain():
    """skep24u_fdserver under RLIMIT_NOFILE 1024 (prlimit), no filter:
    closes 3..1023, starts a thread, opens files until EMFILE. Untraced:
    "fds before: 0 1 2", 1021 files opened (3..1023), each exact. Traced:
    the same (the log sits in the writer's own table), 3100 work calls."""
    _fdserver_case(["prlimit", "--nofile=1024"])


def test_server_fd_table_no_writer_thread():
    """The same server with no writer thread to hold the log (--writer
    sync; the default writer on one CPU): the log is held in the program's
    table only for each use (logfile.c, log_brief), so the server finds
    0 1 2 and gets its 1021 files, and the 3100 calls are recorded."""
    _fdserver_case(["prlimit", "--nofile=1024"], ["--writer", "sync"])
    _fdserver_case(["taskset", "-c", "0", "prlimit", "--nofile=1024"])
    _fdserver_case([_container(), "-n", "1024"], ["--writer", "sync"])


def test_full_table_no_writer_thread_loses_nothing():
    """skep24u_fillcalls: a program fills its table (RLIMIT_NOFILE 256)
    and makes 100,000 calls with it full, then 100,000 more after one
    close. With no writer thread (--writer sync) the log is held for each
    use only; a use that finds the table full hands the log to a keeper
    (logfile.c, keeper_takes_log): as many files as untraced, every call
    recorded, no write error (the first version of h46fd: 24 failed
    writes, 196,368 events dropped)."""
    prog = build_c("skep24u_fillcalls", ["skep24u_fillcalls.c"])
    wrap = ["prlimit", "--nofile=256"]
    u = run(wrap + [prog, "100000"])
    for args in (["--writer", "sync"], []):
        d = sfkit.tmpdir()
        log = os.path.join(d, "s.log")
        t = run(wrap + [SFTRACE, "record", "-o", log] + args + ["--", prog, "100000"])
        eq(t.stdout, u.stdout, f"traced output {args}")
        check("DROPPED" not in t.stderr and "failed writes" not in t.stderr, f"{args}: {t.stderr[-300:]}")
        eq(_calls(log)["work"], 200001, f"work calls {args}")


def test_server_fd_table_in_a_container():
    """skep24u_container -n 1024 skep24u_fdserver: the same server started
    the way `docker run` starts it (RLIMIT_NOFILE 1024 and the default
    seccomp profile of a container without CAP_SYS_ADMIN: unshare, setns,
    pidfd_getfd... fail with EPERM, everything a server uses allowed),
    with `sftrace record` inside the container. Untraced: "fds before:
    0 1 2", 1021 files (3..1023). Traced, it must be the same: the issue
    asks that the program's own files hold exactly what it wrote and that
    it find its table as untraced; the claim of this stop is that a daemon
    closing 0..1023 then listing /proc/self/fd sees what it sees untraced.
    The runtime's writer cannot unshare(CLONE_FILES) there, and needs
    not: it is made without CLONE_FILES, its copy of the table emptied
    at once, and the log held in its own (writer.c, start_raw)."""
    _fdserver_case([_container(), "-n", "1024"], all_calls=False)


def test_server_calls_in_a_container_full_table():
    """skep24u_fdserver in the container (RLIMIT_NOFILE 1024, Docker's
    default profile: unshare EPERM): every one of the 3100 work calls
    recorded. The writer once made its table its own with
    unshare(CLONE_FILES), which the profile refuses: the log was then
    held in the program's table for each use, and a chunk written while
    the server's table was full failed with EMFILE ("201 DROPPED (1
    failed writes, last: Too many open files)", 3000 of 3100, in most
    runs). The writer is now a clone without CLONE_FILES (writer.c,
    start_raw), its copy of the table emptied at once but for the log's
    descriptor: the log lives in its table, the server's is its own."""
    t, d = _fdserver_case([_container(), "-n", "1024"], all_calls=False)
    eq(_all_calls(d)["work"], 3100, f"work calls recorded (record said {t.stderr[-300:]!r})")


def test_server_fd_table_in_a_container_said():
    """The same server in the same container: the writer's table is its
    own without unshare (a clone without CLONE_FILES), the log held
    there, so record has nothing to say about the table (it once said "the log's descriptor stays in the
    descriptor table of skep24u_fdserver", h24k2). Every call recorded:
    test_server_calls_in_a_container_full_table."""
    prog = build_c("skep24u_fdserver", ["skep24u_fdserver.c"], flags=["-pthread"])
    t_dir, d = sfkit.tmpdir(), sfkit.tmpdir()
    t = run([_container(), "-n", "1024", SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog, t_dir],
            check_rc=None, env=IN_CONTAINER)
    eq(t.returncode, 0, f"traced exit (stderr: {t.stderr[-400:]})")
    lines = [ln for ln in t.stderr.splitlines() if "descriptor table" in ln]
    eq(lines, [], f"lines about the table (stderr: {t.stderr[-400:]})")


def _readypipe_case(wrapper, mode):
    prog = build_c("skep24u_readypipe", ["skep24u_readypipe.c"])
    want = "read ready\neof before the word, daemon status 0\n"
    eq(run(wrapper + [prog] + mode).stdout, want, "untraced")
    d = sfkit.tmpdir()
    rc, out, err = sfkit.run_group(wrapper + [SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog] + mode,
                                   timeout=60, env=IN_CONTAINER)
    eq((rc, out), (0, want), f"traced (stderr: {err[-400:]})")
    eq(sorted(_calls(log)["work"] for log in _logs(d)), [0, 300], "work calls per log (starter, daemon)")


def test_readiness_pipe_closed_by_a_daemon():
    """skep24u_readypipe: a daemon execed with a pipe's write end at its
    start writes "ready" and closes it; its starter reads until EOF before
    it lets the daemon end. Untraced: EOF with the close. Traced: the
    same: the writer thread, made without CLONE_FILES at the daemon's
    start, had a copy of that write end and closed it at once (with the
    copy kept, the starter's read waited its 10 s: "eof not in 10 s")."""
    _readypipe_case([], [])


def test_readiness_pipe_after_a_netns_move():
    """The same daemon moving to a network namespace of its own first
    (unshare(CLONE_NEWNET)): the writer stops and is made again around
    it, its table a fresh copy with the write end in it. EOF with the
    close, as untraced."""
    _readypipe_case([], ["netns"])


def test_readiness_pipe_in_a_container():
    """The same in the container (Docker's profile: unshare EPERM for the
    runtime and the daemon alike): EOF with the close, 300 work calls."""
    _readypipe_case([_container()], ["netns"])


def _nsunder(nr, where, flags):
    prog = build_c("skep24u_nsunder", ["skep24u_nsunder.c"])
    u = run([prog, str(nr), where, flags])
    want = "main rc=0\n" if where == "main" else "child rc=0\nparent st=0\n"
    eq(u.stdout, want, "untraced")
    d = sfkit.tmpdir()
    rc, out, err = sfkit.run_group([SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog, str(nr), where,
                                    flags], timeout=60)
    eq((rc, out), (0, want), f"traced (stderr: {err[-400:]})")
    eq(_all_calls(d)["work"], 300, "work calls recorded in the process's log(s)")
    return err


def test_unverified_pidfd_getfd_kills_main_unshare():
    """skep24u_nsunder 438 main user: a sandbox filter (kill on
    pidfd_getfd, everything else allowed) then unshare(CLONE_NEWUSER) in
    main. Untraced (root): "main rc=0". Traced: must be the same, with
    300 work calls (sandbox.c claims that every call the runtime can make
    after an install is checked, and a refusal stops tracing, never kills
    the program)."""
    _nsunder(438, "main", "user")


def test_unverified_pidfd_open_kills_child_unshare():
    """skep24u_nsunder 434 child mnt: the filter kills on pidfd_open; a
    fork child makes traced calls (its keeper thread starts), then
    unshare(CLONE_NEWNS). Untraced: "child rc=0", "parent st=0". Traced:
    must be the same, 300 work calls in the two logs."""
    _nsunder(434, "child", "mnt")


def test_unverified_getdents64_kills_main_unshare():
    """skep24u_nsunder 217 main user: a sandbox that cannot list
    directories (kill on getdents64), then unshare(CLONE_NEWUSER) in main.
    Untraced: "main rc=0". Traced: must be the same, 300 work calls; the
    writer leaves at the install (the runtime's threads gone before the
    filter: unshare finds the process alone) and record says why."""
    err = _nsunder(217, "main", "user")
    check("the writer thread left at the filter's install" in err and "refuses system call 217" in err, err[-400:])


def _setnsany(kind, where):
    prog = build_c("skep24u_setnsany", ["skep24u_setnsany.c"])
    u = run([prog, kind, where])
    want = "setns rc=0\n" if where == "main" else "setns rc=0\nparent st=0\n"
    eq(u.stdout, want, "untraced")
    d = sfkit.tmpdir()
    rc, out, err = sfkit.run_group([SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog, kind, where],
                                   timeout=60)
    eq((rc, out), (0, want), f"traced (stderr: {err[-400:]})")
    eq(_all_calls(d)["work"], 200, "work calls recorded")


def test_setns_any_type_under_ioctl_allow_list_main():
    """skep24u_setnsany net main: a filter pinning ioctl's request to
    TCGETS and FIONREAD, then setns(fd, 0) with fd a network namespace.
    Untraced: "setns rc=0". Traced: must be the same, 200 work calls."""
    _setnsany("net", "main")


def test_setns_any_type_under_ioctl_allow_list_child():
    """skep24u_setnsany user child: as above, from a fork child whose
    keeper thread runs, into a user namespace (a call that needs the
    process alone). Untraced: "setns rc=0", "parent st=0"."""
    _setnsany("user", "child")


def test_records_side_by_side_keep_their_keepers():
    """skep24u_tiny under `sftrace record`, 150 times in each of two
    streams at once (two users' CI jobs, or make -j2 over traced tests).
    Untraced: "tiny 45" each time. Traced: "tiny 45" and no warning: a
    keeper that cannot listen leaves every process of that run that drops
    its privileges or chroots without a log."""
    import concurrent.futures
    prog = build_c("skep24u_tiny", ["skep24u_tiny.c"])
    d = sfkit.tmpdir()

    def stream(k):
        bad = []
        for i in range(150):
            out = os.path.join(d, f"s{k}_{i}.log")
            p = run([SFTRACE, "record", "-o", out, "--", prog], check_rc=None)
            if p.returncode != 0 or p.stdout != "tiny 45\n" or "Address already in use" in p.stderr:
                bad.append((i, p.returncode, p.stdout, p.stderr[-200:]))
            for f in os.listdir(d):
                if f.startswith(f"s{k}_"):
                    os.unlink(os.path.join(d, f))
        return bad
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        bad = [b for f in [ex.submit(stream, k) for k in (0, 1)] for b in f.result()]
    eq(len(bad), 0, f"records with a warning or a wrong result, of 300 (first: {bad[:1]})")


def test_tsync_filter_refusing_ftruncate():
    """skep24u_onekill with SK_NR=77 SK_TSYNC=1 (main installs, with
    SECCOMP_FILTER_FLAG_TSYNC, a filter that kills on ftruncate). Untraced:
    "ok 1024". Traced: must be the same, with the 500 work calls."""
    prog = build_c("skep24u_onekill", ["skep24u_onekill.c"], flags=["-pthread"])
    env = {"SK_NR": "77", "SK_TSYNC": "1", "SK_WHERE": "main"}
    eq(run([prog], env=env).stdout, "ok 1024\n", "untraced")
    d = sfkit.tmpdir()
    rc, out, err = sfkit.run_group([SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog], timeout=60,
                                   env=env)
    eq((rc, out), (0, "ok 1024\n"), f"traced (stderr: {err[-300:]})")
    eq(_all_calls(d)["work"], 500, "work calls")


# One-call kill filters the sweep over 0-460 found fatal to a traced main's
# unshare(CLONE_NEWUSER) (all harmless untraced: the program never makes
# them): the writer's stop and restart around the call (ns.c) makes them.
NS_KILLERS = {3: "close", 5: "fstat", 11: "munmap", 14: "rt_sigprocmask", 72: "fcntl", 144: "sched_setscheduler",
              147: "sched_get_priority_min", 186: "gettid", 203: "sched_setaffinity", 217: "getdents64",
              234: "tgkill", 257: "openat", 273: "set_robust_list", 302: "prlimit64", 334: "rseq",
              434: "pidfd_open", 435: "clone3", 436: "close_range", 438: "pidfd_getfd"}


def test_unshare_under_one_call_sandboxes():
    """skep24u_nsunder NR main user for each NR of NS_KILLERS: a filter
    that kills on NR alone, then unshare(CLONE_NEWUSER) in main. Untraced
    (root): "main rc=0" for each. Traced: each must be the same (the
    claim: every call the runtime can make after an install is checked,
    and a refusal stops tracing, never kills the program)."""
    prog = build_c("skep24u_nsunder", ["skep24u_nsunder.c"])
    bad = []
    for nr, name in sorted(NS_KILLERS.items()):
        if run([prog, str(nr), "main", "user"], check_rc=None).stdout != "main rc=0\n":
            continue  # this kernel or libc makes it untraced too
        d = sfkit.tmpdir()
        rc, out, _ = sfkit.run_group([SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog, str(nr), "main",
                                      "user"], timeout=60)
        if (rc, out) != (0, "main rc=0\n"):
            bad.append(f"{name}({nr}): rc={rc} out={out!r}")
    eq(bad, [], "filters under which the traced program differs")


def _jail_case(wrapper, env=None):
    prog = build_c("skep24u_jail", ["skep24u_jail.c"])
    jail, d = sfkit.tmpdir(), sfkit.tmpdir()
    os.chmod(jail, 0o755)
    eq(run(wrapper + [prog, jail]).stdout, "worker st=0\n", "untraced")
    t = run(wrapper + [SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog, jail], check_rc=None, env=env)
    eq((t.returncode, t.stdout), (0, "worker st=0\n"), f"traced (stderr: {t.stderr[-300:]})")
    check("Address already in use" not in t.stderr and "keeper cannot" not in t.stderr, f"stderr: {t.stderr[-300:]}")
    per_log = sorted(_calls(log)["work"] for log in _logs(d))
    eq(per_log, [100, 200, 300], f"work calls per log (stderr: {t.stderr[-400:]})")


def test_jailed_worker_plain():
    """skep24u_jail: unshare(CLONE_NEWNET), a worker that chroots and
    drops to nobody, and its helper. Untraced: "worker st=0". Traced:
    the same, three logs with 100, 200 and 300 work calls (the claim of
    this stop: the netns hand-off works at any depth)."""
    _jail_case([])


def test_jailed_worker_in_a_container_with_sys_admin():
    """skep24u_container --cap-sys-admin skep24u_jail: the same daemon in
    a container started with --cap-add SYS_ADMIN (so it may unshare and
    chroot), Docker's default profile otherwise (pidfd_getfd fails with
    EPERM). Untraced: "worker st=0". Traced: three logs, 100, 200 and 300
    work calls: every new process gets its own log however it was made,
    and the channel handed down at fork need not copy a descriptor out of
    another thread's table: with pidfd_getfd refused, the server sends it
    over a unix socket the forking thread listens on for the hand-over
    (abstract where both are in one network namespace, as the chrooted
    worker and its keeper are; else a path in the private directory)."""
    _jail_case([_container(), "--cap-sys-admin"], env=IN_CONTAINER)


def _same_traced(prog_args, d, sort_lines=False, env=None, limits=None):
    pre = ["prlimit", f"--nofile={limits}"] if limits else []
    u = run(pre + prog_args, env=env)
    t = run(pre + [SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--"] + prog_args, env=env)
    norm = (lambda x: sorted(x.splitlines())) if sort_lines else (lambda x: x)
    eq(norm(t.stdout), norm(u.stdout), "traced output")
    return u, t


def test_keeper_name_taken_by_another_keeper():
    """skep24u_jail under `sftrace record` whose keeper's name (after the
    private directory's dev/ino) is already bound by another socket, three
    times over (SFTRACE_TEST_KEEPER_SQUAT=3: record binds a squatter on
    the name of each of its first three directories, as a keeper of an
    earlier run whose directory had the same inode and is gone would).
    The collision of test_records_side_by_side_keep_their_keepers (5 of
    300 there) forced every time: record makes another directory while the
    taken one exists, until its bind succeeds; no warning, the worker that
    chroots and drops to nobody still gets its log: 100, 200, 300."""
    _jail_case([], env={"SFTRACE_TEST_KEEPER_SQUAT": "3"})


def test_fork_storm_under_low_nofile():
    """skep24u_storm 200 under RLIMIT_NOFILE 10 for record and the program
    (prlimit): 200 children started together. Untraced and traced: the
    same 201 lines; traced: 200 child logs holding 1000 + i work calls
    each (219,900 in all), no warning."""
    prog = build_c("skep24u_storm", ["skep24u_storm.c"])
    d = sfkit.tmpdir()
    _, t = _same_traced([prog, "200"], d, sort_lines=True, limits=10)
    per = sorted(_calls(log)["work"] for log in _logs(d) if not log.endswith("/s.log"))
    eq(per, [1000 + i for i in range(200)], "work calls per child log")
    check("warning" not in t.stderr, t.stderr[-300:])


def test_children_lowering_nofile_to_4():
    """skep24u_storm 20 nofile4: each child sets RLIMIT_NOFILE 4 before its
    first traced call. Untraced: each gets fd 3, then EMFILE. Traced: the
    same (its keeper's table is not the program's), 20 child logs."""
    prog = build_c("skep24u_storm", ["skep24u_storm.c"])
    d = sfkit.tmpdir()
    u, _ = _same_traced([prog, "20", "nofile4"], d, sort_lines=True)
    check("a=3 b=-1(Too many open files)" in u.stdout, u.stdout[:200])
    eq(len(_logs(d)), 21, "logs")


def test_netns_chain_seven_deep_with_close_loops():
    """skep24u_deep 6 ncr: seven levels, each moving to a network namespace
    of its own, running a close loop and close_range, then forking the
    next. Untraced and traced: the same lines (descriptor lists
    included); traced: seven logs, 100..700 + 100 work calls each."""
    prog = build_c("skep24u_deep", ["skep24u_deep.c"])
    d = sfkit.tmpdir()
    _same_traced([prog, "6", "ncr"], d)
    eq(sorted(_calls(log)["work"] for log in _logs(d)), [200, 300, 400, 500, 600, 700, 800], "work calls per log")


def test_fork_from_a_signal_handler_in_a_child():
    """skep24u_sigfork: 40 forks from a SIGALRM handler interrupting traced
    calls in a fork child. Untraced and traced: "child forks=40 ok=40";
    traced: 42 logs, each grandchild's with exactly 10 work calls."""
    prog = build_c("skep24u_sigfork", ["skep24u_sigfork.c"])
    d = sfkit.tmpdir()
    _same_traced([prog], d)
    per = collections.Counter(_calls(log)["work"] for log in _logs(d))
    eq((len(_logs(d)), per[10]), (42, 40), "logs, grandchild logs with 10 calls")


def test_preinit_hook_unshares_closes_and_forks():
    """skep24u_preinit with PM=ucf: a preinit hook makes traced calls, then
    unshare(CLONE_NEWUSER), a close loop and a fork. Untraced and traced:
    the same line (unshare 0, the child's status 1280, the same
    descriptor lists); traced: two logs, 50 and 150 work calls."""
    prog = build_c("skep24u_preinit", ["skep24u_preinit.c"])
    d = sfkit.tmpdir()
    _same_traced([prog], d, env={"PM": "ucf"})
    eq(sorted(_calls(log)["work"] for log in _logs(d)), [50, 150], "work calls per log")


def _wx_case(action):
    lib = build_c("libskep24u_wxlib.so", ["skep24u_wxlib.c"], shared=True)
    prog = build_c("skep24u_wx", ["skep24u_wx.c"], libs=["-ldl"])
    eq(run([prog, lib, action]).stdout, "ok 20825\n", "untraced")
    d = sfkit.tmpdir()
    rc, out, err = sfkit.run_group([SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog, lib, action],
                                   timeout=60)
    eq((rc, out), (0, "ok 20825\n"), f"traced (stderr: {err[-300:]})")
    c = _all_calls(d)
    eq((c["work"], c["libwork"]), (200, 50), "main's work calls, the plugin's (patched through /proc/self/mem)")


def test_wx_filter_errno_then_dlopen():
    """skep24u_wx PLUGIN errno: the W^X filter failing W+X maps with EPERM
    (systemd's MemoryDenyWriteExecute=), then a dlopen. Untraced and
    traced: "ok 20825"; traced: 200 work calls (and the plugin's 50)."""
    _wx_case("errno")


def test_wx_filter_kill_then_dlopen():
    """skep24u_wx PLUGIN kill: the same W^X filter killing instead of
    failing. Untraced: "ok 20825". Traced: the same: the patcher asks the
    filter before its mprotect(RWX) and takes the way that needs none
    (/proc/self/mem, one thread), so 200 work and 50 libwork calls."""
    _wx_case("kill")


def test_programs_run_after_a_seccomp_stop():
    """skep24u_spawnunder 107: after a filter that kills on geteuid alone
    (the runtime stops tracing at its install and says so), the program
    runs /bin/true three ways. Untraced: "ok 0". Traced: must be "ok 0":
    what the process execs after the stop runs without the runtime."""
    prog = build_c("skep24u_spawnunder", ["skep24u_spawnunder.c"])
    eq(run([prog, "107"]).stdout, "ok 0\n", "untraced")
    d = sfkit.tmpdir()
    rc, out, err = sfkit.run_group([SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog, "107"],
                                   timeout=60)
    eq((rc, out), (0, "ok 0\n"), f"traced (stderr: {err[-300:]})")
    check("tracing stopped at a seccomp filter (it refuses geteuid)" in err, f"the stop named: {err[-400:]}")
    eq(err.count(": runs a program untraced under the seccomp filter of pid"), 1,
       f"the fork+exec child named (posix_spawn's and vfork's share the parent's memory: no line) {err[-400:]}")


if __name__ == "__main__":
    sfkit.main(globals())
