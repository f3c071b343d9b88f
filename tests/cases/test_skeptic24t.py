"""skeptic24t: issue 24's claims tried with programs of my own (fixtures
skep24t_*), the way a user who did not write the tool's fixtures would."""
import collections
import os
import subprocess

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


def _nospawn():
    lib = build_c("libskep24t_lib.so", ["skep24t_lib.c"], shared=True)
    return build_c("skep24t_nospawn", ["skep24t_nospawn.c"], libs=["-ldl"]), lib


def test_filter_regex_child_under_no_spawn_sandbox():
    """skep24t_nospawn kill PLUGIN: installs a seccomp filter that kills the
    process on clone/clone3/fork/execve, then dlopens an instrumented plugin
    and calls it. Untraced: "ok", exit 0. Traced with --filter-regex (the
    runtime makes a filter per object at dlopen by running sftrace filter
    in a child) it must be the same; the README says a filter that refuses
    the runtime's calls stops tracing, never kills the program."""
    prog, lib = _nospawn()
    u = run([prog, "kill", lib])
    eq((u.returncode, u.stdout), (0, "ok\n"), "untraced")
    d = sfkit.tmpdir()
    t = run([SFTRACE, "record", "--filter-regex", "work|libentry", "-o", os.path.join(d, "s.log"), "--",
             prog, "kill", lib], check_rc=None)
    eq((t.returncode, t.stdout), (0, "ok\n"), f"traced (stderr: {t.stderr[-400:]})")
    eq(_all_calls(d)["work"], 7, "main's work calls recorded")


def test_filter_regex_child_under_eperm_sandbox():
    """The same sandbox failing clone/execve with EPERM instead: untraced
    "ok"; traced also "ok", exit 0, main's 7 work calls recorded (the
    plugin stays untraced and record says it could not make its filter)."""
    prog, lib = _nospawn()
    d = sfkit.tmpdir()
    t = run([SFTRACE, "record", "--filter-regex", "work|libentry", "-o", os.path.join(d, "s.log"), "--",
             prog, "errno", lib], check_rc=None)
    eq((t.returncode, t.stdout), (0, "ok\n"), f"traced (stderr: {t.stderr[-400:]})")
    eq(_all_calls(d)["work"], 7, "main's work calls recorded")
    check("could not make the filter" in t.stderr, t.stderr[-400:])


def _ctor():
    return build_c("skep24t_ctor", ["skep24t_ctor.c"])


def _ctor_run(pre, writer):
    prog = _ctor()
    d = sfkit.tmpdir()
    own = os.path.join(d, "own.txt")
    env = {"SKEP_OWN": own, "SKEP_PRE": pre}
    if writer is None:
        p = run([prog], env=env)
        return p.stdout, open(own).read(), None
    p = run([SFTRACE, "record", "-q", "--writer", writer, "-o", os.path.join(d, "c.log"), "--", prog], env=env)
    return p.stdout, open(own).read(), _calls(os.path.join(d, "c.log"))["work"]


def test_table_taken_over_before_main():
    """skep24t_ctor: a constructor (SKEP_PRE=0) or the preinit hook
    (SKEP_PRE=1) closes every descriptor above 2 (close_range), opens its
    own file, writes 19 bytes, dup2s it onto 1023 and writes "+" there;
    main writes "-" through 1023 after 100 work() calls. Untraced the file
    holds "ctor wrote 19 bytes+-". Traced, with the writer thread and with
    --writer sync: the same bytes, and all 100 calls recorded."""
    for pre in ("0", "1"):
        _, want, _ = _ctor_run(pre, None)
        eq(want, "ctor wrote 19 bytes+-", f"untraced SKEP_PRE={pre}")
        for writer in ("thread", "sync"):
            _, got, n = _ctor_run(pre, writer)
            eq(got, want, f"own file, SKEP_PRE={pre} --writer {writer}")
            eq(n, 100, f"work calls, SKEP_PRE={pre} --writer {writer}")


def test_preinit_hook_sees_no_log():
    """skep24t_ctor's preinit hook lists /proc/self/fd before anything
    else of the program runs. Untraced: 0 1 2. Traced with the writer
    thread (README: "the log's descriptor is not in the program's table at
    all"): it must be the same list."""
    u, _, _ = _ctor_run("0", None)
    t, _, _ = _ctor_run("0", "thread")
    eq(t.splitlines()[0], u.splitlines()[0], "the preinit hook's descriptor list")


# The runtime's own calls a one-call deny list may hit, found by a sweep of
# every x86-64 number 0..460 with skep24t_deny (kill mode): untraced each
# printed "ok 40000" and exited 0.
DENY_KILLS_PROCESS = ["close", "fstat", "getpid", "fchown", "geteuid", "gettid", "tgkill", "openat"]
DENY_KILLS_CHILDREN = ["read", "munmap", "getppid", "prlimit64", "socket", "connect"]


def _deny(name, mode):
    prog = build_c("skep24t_deny", ["skep24t_deny.c"], libs=["-lpthread"])
    u = run([prog, name, mode, "drop"], check_rc=None)
    d = sfkit.tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "d.log"), "--", prog, name, mode, "drop"],
            check_rc=None)
    n = 0
    for log in _logs(d):
        p = run([SFTRACE, "dump", log], check_rc=None)
        n += sum(1 for e in sfkit.parse_dump_events(p.stdout) if e.kind == "ENTRY" and e.name == "work")
    return u, t, n


def _deny_kill_case(names):
    bad = []
    for name in names:
        u, t, _ = _deny(name, "kill")
        eq((u.returncode, u.stdout), (0, "ok 40000\n"), f"untraced, {name} denied")
        if (t.returncode, t.stdout) != (0, "ok 40000\n"):
            bad.append(f"{name}: rc {t.returncode} out {t.stdout!r}")
    eq(bad, [], "traced runs that differ from untraced")


def test_deny_one_call_kill_process():
    """skep24t_deny NAME kill drop: a seccomp filter with
    SECCOMP_RET_KILL_PROCESS on the one call NAME, then 20,000 calls, a
    thread, fork children (one after setresuid(nobody)). Untraced: "ok
    40000", exit 0. README: where a filter refuses the runtime's calls
    tracing stops, "the program is never killed by the runtime's calls"."""
    _deny_kill_case(DENY_KILLS_PROCESS)


def test_deny_one_call_kill_children():
    """As above; the calls whose denial kills the program's fork children
    (the parent lives on and reports their status)."""
    _deny_kill_case(DENY_KILLS_CHILDREN)


def test_deny_socket_errno_loss_is_said():
    """skep24t_deny socket errno drop: socket() fails with EPERM. The
    child forked after setresuid(nobody) needs record's keeper for its
    log, over a socket. Its 5,000 calls must be recorded or record must
    say they were lost. Holds: 45,000 recorded and record says "pid N
    wrote no log: cannot create log ...: Operation not permitted"."""
    u, t, n = _deny("socket", "errno")
    eq((t.returncode, t.stdout), (0, "ok 40000\n"), "traced")
    if n != 50000:
        check("wrote no log" in t.stderr or "lost" in t.stderr or "not recorded" in t.stderr,
              f"{n} of 50000 work calls recorded and record said nothing of it: {t.stderr[-300:]!r}")


def test_vfork_child_rearranges_descriptors():
    """skep24t_vfork_dup2 1023 HOW OWN: a vfork child dup2s a pipe onto
    1023 (the log's number where the runtime keeps it in the program's
    table) and execs /bin/true, or close_range(3..)s and execs, or dup2s
    and _exits; the parent then writes its own file and calls work() 1000
    times. Untraced: "own: parent says hello\\n!|child: 0" (5 for the
    _exit). Traced with the writer thread and with --writer sync: the same
    output, 19 bytes in the file, all 1002 calls recorded."""
    prog = build_c("skep24t_vfork_dup2", ["skep24t_vfork_dup2.c"])
    for how in ("dup2", "close", "dup2fail"):
        d = sfkit.tmpdir()
        own = os.path.join(d, "own")
        u = run([prog, "1023", how, own])
        for writer in ("thread", "sync"):
            d2 = sfkit.tmpdir()
            own2 = os.path.join(d2, "own")
            t = run([SFTRACE, "record", "-q", "--writer", writer, "-o", os.path.join(d2, "v.log"), "--",
                     prog, "1023", how, own2])
            eq(t.stdout, u.stdout, f"{how} --writer {writer}")
            eq(os.path.getsize(own2), 19, f"{how} --writer {writer}: own file size")
            eq(_all_calls(d2)["work"], 1002, f"{how} --writer {writer}: work calls")


def test_exec_with_an_environment_of_its_own():
    """skep24t_execs HOW: a fork (or vfork, clone, posix_spawn) child execs
    the program again with the environment {"X=1"} (no LD_PRELOAD) by
    execve, execle, fexecve, execveat(AT_EMPTY_PATH), syscall(SYS_execve),
    syscall(SYS_execveat), posix_spawn, vfork+execve or clone+execve.
    Untraced: "child 0". Traced: the same, and the exec'd child has a log
    with its 4 work() calls (6 in all with the parent's 2)."""
    prog = build_c("skep24t_execs", ["skep24t_execs.c"])
    for how in ("execve", "execle", "fexecve", "execveat", "sys_execve", "sys_execveat", "spawn_env",
                "vfork_execve", "clone_execve"):
        eq(run([prog, how]).stdout, "child 0\n", f"untraced {how}")
        d = sfkit.tmpdir()
        t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "s.log"), "--", prog, how])
        eq(t.stdout, "child 0\n", f"traced {how}")
        eq(_all_calls(d)["work"], 6, f"{how}: work calls in all logs")


def _status_lines(text, drop_cgt):
    return [l for l in text.splitlines() if not (drop_cgt and l.startswith("SigCgt"))]


def test_children_signal_state():
    """skep24t_sigkids: SIGUSR1 blocked, SIGUSR2 ignored, a SIGHUP handler;
    children started by system, popen, posix_spawn (SETSIGMASK), fork+exec,
    vfork+exec and a plain fork print their SigBlk/SigIgn/SigCgt. Traced
    with --writer sync: every line as untraced. With the writer thread:
    the same but SigCgt, where glibc's set-ID signal (33) is caught in the
    parent and the plain fork child (a documented limit: README,
    "Threads")."""
    prog = build_c("skep24t_sigkids", ["skep24t_sigkids.c"])
    u = run([prog]).stdout
    d = sfkit.tmpdir()
    t = run([SFTRACE, "record", "-q", "--writer", "sync", "-o", os.path.join(d, "k.log"), "--", prog]).stdout
    eq(t, u, "--writer sync")
    d = sfkit.tmpdir()
    t = run([SFTRACE, "record", "-q", "--writer", "thread", "-o", os.path.join(d, "k.log"), "--", prog]).stdout
    eq(_status_lines(t, True), _status_lines(u, True), "--writer thread, SigCgt aside")


def test_inherited_dispositions_and_limits():
    """skep24t_launch MODE skep24t_state: the program starts with SIGCHLD
    ignored (1), every signal blocked (2), every signal ignored (4),
    stdin/stdout/stderr closed (8), RLIMIT_NOFILE 16 (16), and some of
    them together; it reports its signal state, descriptors, a fork
    child's waitpid (ECHILD with SIGCHLD ignored), a dlopen of an
    instrumented plugin under --filter-regex, and how many files it can
    open. Traced (writer thread): the same report, SigCgt aside (glibc's
    set-ID signal), and all 18 work/libwork/libentry calls recorded."""
    launch = build_c("skep24t_launch", ["skep24t_launch.c"], xray=False)
    state = build_c("skep24t_state", ["skep24t_state.c"], libs=["-ldl"])
    lib = build_c("libskep24t_lib.so", ["skep24t_lib.c"], shared=True)
    for mode in ("1", "2", "4", "8", "16", "24", "3"):
        d = sfkit.tmpdir()
        run([launch, mode, state, os.path.join(d, "u"), lib])
        run([SFTRACE, "record", "-q", "--filter-regex", "work|libentry", "-o", os.path.join(d, "s.log"), "--",
             launch, mode, state, os.path.join(d, "t"), lib])
        u = open(os.path.join(d, "u")).read()
        t = open(os.path.join(d, "t")).read()
        eq(_status_lines(t, True), _status_lines(u, True), f"mode {mode}")
        c = _all_calls(d)
        eq((c["work"], c["libwork"], c["libentry"]), (13, 5, 1), f"mode {mode}: calls")


def test_start_stop_daemon_background():
    """Debian's start-stop-daemon --start --background (uninstrumented:
    forks, setsid, closes every descriptor, /dev/null on 0-2) runs
    skep24t_svc, which waits for a go file, lists its descriptors, writes
    19 bytes to its own file, calls work() 50 times and forks a worker
    that closes 0..1023 and calls work() 5 times. Untraced the service
    sees "0 1 2" and its file holds exactly "service says hello\\n".
    Traced: the same, and logs with 50 + 5 work calls."""
    import shutil
    ssd = shutil.which("start-stop-daemon") or "/usr/sbin/start-stop-daemon"
    if not os.path.exists(ssd):
        raise sfkit.Skip("no start-stop-daemon")
    prog = build_c("skep24t_svc", ["skep24t_svc.c"])
    res = {}
    for traced in (False, True):
        d = sfkit.tmpdir()
        cmd = [ssd, "--start", "--background", "--make-pidfile", "--pidfile", os.path.join(d, "pid"),
               "--exec", prog, "--", d]
        if traced:
            cmd = [SFTRACE, "record", "-q", "-o", os.path.join(d, "s.log"), "--"] + cmd
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not traced:
            p.wait(timeout=60)
        open(os.path.join(d, "go"), "w").close()
        if traced:
            p.wait(timeout=120)  # record waits for the service and its worker
        else:
            pid = int(open(os.path.join(d, "pid")).read())
            for _ in range(6000):  # the service ends on its own once go exists
                if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
                    break
                import time
                time.sleep(0.01)
        res[traced] = (open(os.path.join(d, "fds")).read(), open(os.path.join(d, "own.txt"), "rb").read())
        if traced:
            eq(_all_calls(d)["work"], 55, "work calls in the service's logs")
    eq(res[False], ("0 1 2 ", b"service says hello\n"), "untraced")
    eq(res[True], res[False], "traced")


def test_descriptor_churn_while_flooding():
    """skep24t_churn DIR fork|self: one thread calls work() 100,000 times
    while another opens, dup2s (or dup3s through syscall()) onto every
    number 3..1023 in turn, writes a line and closes, 3,000 times, with a
    close_range(3, ~0U) or closefrom(3) every 500 rounds; in a fork child
    (the log in the program's table) or in the process itself. Untraced:
    "files ok" (each of the 50 files holds exactly its own 60 lines).
    Traced, writer thread and --writer sync: "files ok", and all 100,001
    work calls recorded."""
    prog = build_c("skep24t_churn", ["skep24t_churn.c"], libs=["-lpthread"])
    d = sfkit.tmpdir()
    eq(run([prog, d, "fork"]).stdout, "files ok\n", "untraced")
    for how in ("fork", "self"):
        for writer in ("thread", "sync"):
            d = sfkit.tmpdir()
            files = os.path.join(d, "files")
            os.mkdir(files)
            t = run([SFTRACE, "record", "-q", "--writer", writer, "-o", os.path.join(d, "c.log"), "--",
                     prog, files, how])
            eq(t.stdout, "files ok\n", f"{how} --writer {writer}")
            eq(_all_calls(d)["work"], 100001, f"{how} --writer {writer}: work calls")


def test_record_messages_escape_object_paths():
    """skep24t_nospawn errno PLUGIN, with the plugin at a path holding an
    escape sequence (ESC ]0;pwn BEL: sets a terminal's title): the runtime
    cannot make the plugin's filter (clone fails with EPERM) and record
    says so, naming the object. A path is the program's data: record's
    lines must escape its control characters as dump and the tables do."""
    prog, lib = _nospawn()
    d = sfkit.tmpdir()
    odd = os.path.join(d, "lib\x1b]0;pwn\x07.so")
    import shutil
    shutil.copy(lib, odd)
    t = run([SFTRACE, "record", "--filter-regex", "work|libentry", "-o", os.path.join(d, "s.log"), "--",
             prog, "errno", odd], check_rc=None)
    eq(t.stdout, "ok\n", "traced")
    check("could not make the filter" in t.stderr, t.stderr[-300:])
    bad = [l for l in t.stderr.splitlines() if any(ord(ch) < 32 and ch != "\t" for ch in l)]
    eq(bad, [], "record's lines with raw control characters")


def test_prefork_server_with_a_busy_thread():
    """skep24t_prefork: one thread calls busy() 200,000 times while main
    forks 20 workers in turn, worker i calling serve() 1000 + i times and
    leaving by exit or _exit. Untraced: "workers ok". Traced, writer
    thread and --writer sync: the same; 21 logs; each worker's holds
    exactly its 1000 + i serve() calls and nothing else, the parent's
    200,000 busy() and no serve()."""
    _prefork("fork", set())


def test_clone_workers_with_a_busy_thread():
    """skep24t_prefork clone: the same, the workers made by glibc's clone()
    with stacks of their own (no CLONE_VM); each worker's log also holds
    its one worker() frame."""
    _prefork("clone", {"worker"})


def _prefork(how, extra):
    # (documented on test_prefork_server_with_a_busy_thread)
    prog = build_c("skep24t_prefork", ["skep24t_prefork.c"], libs=["-lpthread"])
    eq(run([prog, how]).stdout, "workers ok\n", "untraced")
    for writer in ("thread", "sync"):
        d = sfkit.tmpdir()
        t = run([SFTRACE, "record", "-q", "--writer", writer, "-o", os.path.join(d, "p.log"), "--", prog, how])
        eq(t.stdout, "workers ok\n", f"--writer {writer}")
        logs = _logs(d)
        eq(len(logs), 21, f"--writer {writer}: logs")
        workers = []
        for log in logs:
            c = _calls(log)
            if os.path.basename(log) == "p.log":
                eq((c["busy"], c["serve"]), (200000, 0), f"--writer {writer}: parent")
            else:
                eq(set(c) - {"serve"} - extra, set(), f"--writer {writer}: {log} holds only serve")
                workers.append(c["serve"])
        eq(sorted(workers), list(range(1000, 1020)), f"--writer {writer}: serve calls per worker")


def test_full_table_dup2_onto_the_top():
    """skep24t_launch 16 skep24t_full FILE: with RLIMIT_NOFILE 16, a fork
    child fills its table, then dup2s its file onto 15, 14, 13 and 12 (the
    runtime's log sits at the top of the table there) writing the number
    through each, and calls work() 100 times. Untraced: "dup2 ok" and
    15..12 in the file. Traced (writer thread and --writer sync): the same,
    and the child's 100 calls recorded."""
    launch = build_c("skep24t_launch", ["skep24t_launch.c"], xray=False)
    prog = build_c("skep24t_full", ["skep24t_full.c"])
    d = sfkit.tmpdir()
    want = "dup2 ok\n15\n14\n13\n12\n"
    eq(run([launch, "16", prog, os.path.join(d, "u")]).stdout, want, "untraced")
    for writer in ("thread", "sync"):
        d = sfkit.tmpdir()
        t = run([SFTRACE, "record", "-q", "--writer", writer, "-o", os.path.join(d, "f.log"), "--",
                 launch, "16", prog, os.path.join(d, "t")])
        eq(t.stdout, want, f"--writer {writer}")
        eq(_all_calls(d)["work"], 101, f"--writer {writer}: work calls")


def test_deny_one_call_trap_handler():
    """skep24t_deny NAME trap drop: SECCOMP_RET_TRAP on NAME and a SIGSYS
    handler (as sandboxes that broker or emulate denied calls install).
    Untraced the program never makes the call: "ok 40000", the handler
    never runs. Traced it must be the same: a seccomp filter's verdict on
    the runtime's own calls is the runtime's business, never the
    program's handler's."""
    bad = []
    for name in DENY_KILLS_PROCESS + DENY_KILLS_CHILDREN:
        u, t, _ = _deny(name, "trap")
        eq((u.returncode, u.stdout), (0, "ok 40000\n"), f"untraced, {name} trapped")
        if (t.returncode, t.stdout) != (0, "ok 40000\n"):
            bad.append(f"{name}: rc {t.returncode} out {t.stdout!r}")
    eq(bad, [], "traced runs that differ from untraced")


def test_deny_exit_group_errno():
    """skep24t_deny exit_group errno drop (x86-64 number 231): with
    exit_group refused, glibc's _exit falls back to SYS_exit, which ends
    the process when it is the last thread: untraced "ok 40000", exit 0.
    Traced the runtime's writer thread is still there; the README says the
    writer leaves once main has gone (a last thread's bare SYS_exit gives
    the process its status)."""
    prog = build_c("skep24t_deny", ["skep24t_deny.c"], libs=["-lpthread"])
    nr = "231" if os.uname().machine == "x86_64" else "94"
    u = run([prog, nr, "errno", "drop"], check_rc=None, timeout=60)
    eq((u.returncode, u.stdout), (0, "ok 40000\n"), "untraced")
    d = sfkit.tmpdir()
    rc, out, err = sfkit.run_group([SFTRACE, "record", "-q", "-o", os.path.join(d, "d.log"), "--",
                                    prog, nr, "errno", "drop"], timeout=20)
    eq((rc, out), (0, "ok 40000\n"), f"traced (stderr {err[-300:]!r})")


def test_program_umask_and_child_log_mode():
    """skep24t_umask: umask(0777), 5 work() calls, a fork child with 7.
    record run as nobody (setpriv) into a directory nobody may write: both
    logs must be 0600, readable by record's user, 12 work calls in all."""
    import shutil
    import stat
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        raise sfkit.Skip("needs root and setpriv")
    prog = build_c("skep24t_umask", ["skep24t_umask.c"])
    d = sfkit.tmpdir()
    os.chmod(d, 0o777)
    exe = os.path.join(d, "um")
    shutil.copy(prog, exe)
    os.chmod(exe, 0o755)
    t = run([setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env", "TMPDIR=" + d,
             SFTRACE, "record", "-o", os.path.join(d, "u.log"), "--", exe], check_rc=None)
    eq(t.stdout, "done\n", f"traced ({t.stderr[-300:]!r})")
    modes = {f: stat.S_IMODE(os.stat(os.path.join(d, f)).st_mode) for f in os.listdir(d) if f.endswith(".log")}
    eq(sorted(modes.values()), [0o600, 0o600], f"log modes {modes}")
    check("unreadable" not in t.stderr, t.stderr[-300:])


def test_signalfd_supervisor():
    """skep24t_sigfd PLUGIN: every signal blocked, a signalfd for SIGCHLD,
    SIGTERM and SIGHUP; dlopens an instrumented plugin, forks 5 workers and
    reaps them with waitpid(-1, WNOHANG) as SIGCHLD arrives, then reads a
    SIGHUP it sends itself. Untraced: "statuses 10 11 12 13 14 strangers 0
    sighup 1 plugin ok". Traced (default, --filter-regex, which runs
    sftrace filter at the dlopen, --writer sync, --ring 1M): the same line
    (no child of the runtime's reaped, no signal taken), 50 work and 3
    libwork calls."""
    prog = build_c("skep24t_sigfd", ["skep24t_sigfd.c"], libs=["-ldl"])
    lib = build_c("libskep24t_lib.so", ["skep24t_lib.c"], shared=True)
    want = "statuses 10 11 12 13 14 strangers 0 sighup 1 plugin ok\n"
    eq(run([prog, lib]).stdout, want, "untraced")
    for extra in ([], ["--filter-regex", "work|libentry"], ["--writer", "sync"], ["--ring", "1M"]):
        d = sfkit.tmpdir()
        t = run([SFTRACE, "record", "-q"] + extra + ["-o", os.path.join(d, "s.log"), "--", prog, lib])
        eq(t.stdout, want, f"traced {extra}")
        c = _all_calls(d)
        eq((c["work"], c["libwork"]), (50, 3), f"traced {extra}: calls")


def _as_nobody(cmd):
    import shutil
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        raise sfkit.Skip("needs root and setpriv")
    return run([setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + cmd)


def _shared_dir_with_link(name, target):
    """A sticky world-writable directory (as /tmp, or a team's shared
    output directory) where nobody made NAME a symlink to TARGET."""
    try:
        if open("/proc/sys/fs/protected_symlinks").read().strip() != "0":
            raise sfkit.Skip("fs.protected_symlinks is on: the kernel refuses the link before the tool is tried")
    except OSError:
        pass
    d = sfkit.tmpdir()
    os.chmod(d, 0o755)
    shared = os.path.join(d, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    _as_nobody(["ln", "-s", target, os.path.join(shared, name)])
    return shared


def test_kept_filter_follows_another_users_symlink():
    """record -o SHARED/s.log --filter-regex ... (and -f FILTER) keeps the
    run's filter beside the log as s.recorded.filter. In a sticky
    world-writable directory another user (nobody) made that name a
    symlink to a root-owned file. The run must not write through it (the
    issue: O_NOFOLLOW, nothing trusted that record did not make); the
    target must still read "victim data"."""
    prog = build_c("skep24t_state", ["skep24t_state.c"], libs=["-ldl"])
    lib = build_c("libskep24t_lib.so", ["skep24t_lib.c"], shared=True)
    for how in (["--filter-regex", "work|libentry"], ["-f", None]):
        d = sfkit.tmpdir()
        victim = os.path.join(d, "victim")
        with open(victim, "w") as f:
            f.write("victim data\n")
        shared = _shared_dir_with_link("s.recorded.filter", victim)
        args = list(how)
        if args[1] is None:
            filt = os.path.join(d, "my.filter")
            run([SFTRACE, "filter", "-q", "-p", prog, "-r", "work", "-o", filt])
            args[1] = filt
        run([SFTRACE, "record", "-q"] + args + ["-o", os.path.join(shared, "s.log"), "--", prog,
                                                 os.path.join(d, "st"), lib], check_rc=None)
        eq(open(victim).read(), "victim data\n", f"the other user's link target after record {how[0]}")


def test_filters_dir_of_another_user_refused():
    """record --force --filter-regex ... -o SHARED/s.log where another user
    (nobody) made SHARED/s.filters (mode 0777): that directory is not the
    run's, --force or not. record refuses in one line naming it before the
    program runs, and the link it found for s.recorded.filter is still
    only that user's."""
    prog = build_c("skep24t_state", ["skep24t_state.c"], libs=["-ldl"])
    lib = build_c("libskep24t_lib.so", ["skep24t_lib.c"], shared=True)
    d = sfkit.tmpdir()
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("victim data\n")
    shared = _shared_dir_with_link("s.recorded.filter", victim)
    _as_nobody(["mkdir", "-m", "0777", os.path.join(shared, "s.filters")])
    t = run([SFTRACE, "record", "-q", "--force", "--filter-regex", "work", "-o", os.path.join(shared, "s.log"),
             "--", prog, os.path.join(d, "st"), lib], check_rc=None)
    check(t.returncode != 0, f"record ran: rc {t.returncode}")
    check("s.filters is not a directory of this user" in t.stderr, t.stderr[-300:])
    check(not os.path.exists(os.path.join(d, "st")), "the program ran")
    eq(open(victim).read(), "victim data\n", "the link's target")


def test_ring_signal_glibc_numbers_refused_by_name():
    """--ring-signal 32 or 33 (glibc's thread cancellation and set*id
    signals, below SIGRTMIN): refused in one line before the program runs,
    naming the signal by its number (it was "SIG?")."""
    for n in ("32", "33"):
        d = sfkit.tmpdir()
        t = run([SFTRACE, "record", "--ring", "1M", "--ring-signal", n, "-o", os.path.join(d, "r.log"), "--",
                 "/bin/sh", "-c", "echo ran"], check_rc=None)
        eq((t.returncode, t.stdout), (2, ""), f"--ring-signal {n}")
        lines = t.stderr.splitlines()
        eq(len(lines), 1, f"--ring-signal {n}: {t.stderr!r}")
        check(f"signal {n} is glibc's own" in lines[0] and "SIG?" not in lines[0], lines[0])


def test_seccomp_stop_says_what_is_lost():
    """skep24t_deny close errno drop: close() fails with EPERM, which stops
    tracing (the runtime needs it). record's line on the log must say what
    is lost (the process's calls from then on and its later children's),
    not only where tracing stopped or what an exec runs."""
    prog = build_c("skep24t_deny", ["skep24t_deny.c"], libs=["-lpthread"])
    d = sfkit.tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "d.log"), "--", prog, "close", "errno", "drop"],
            check_rc=None)
    eq((t.returncode, t.stdout), (0, "ok 40000\n"), "traced")
    line = [l for l in t.stderr.splitlines() if "tracing stopped at a seccomp filter (it refuses close)" in l]
    eq(len(line), 1, t.stderr[-400:])
    check("nothing this process runs, nor any child it makes afterwards, is recorded" in line[0], line[0])
    eq(_all_calls(d)["work"] < 50000, True, "calls after the stop are not recorded (else the line is wrong)")


def test_two_pid_namespace_children_keep_their_logs_apart():
    """h24sb_pidns: two raw clone(CLONE_NEWPID) children in turn, each pid
    1 in its own namespace, calling work() 3 and 4 times. Traced: the
    output as untraced, two logs with distinct names (s.1.log, s.1.1.log)
    holding 3 and 4 calls, and record's lines say the pid is a
    namespace's."""
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root (CLONE_NEWPID)")
    prog = build_c("h24sb_pidns", ["h24sb_pidns.c"])
    u = run([prog])
    d = sfkit.tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "s.log"), "--", prog])
    eq(t.stdout, u.stdout, "output")
    kids = sorted(os.path.basename(l) for l in _logs(d) if os.path.basename(l) != "s.log")
    eq(kids, ["s.1.1.log", "s.1.log"], "the children's logs")
    eq(sorted(_calls(os.path.join(d, k))["work"] for k in kids), [3, 4], "work calls per child")
    eq(t.stderr.count("(pid 1 in a pid namespace of its own)"), 2, t.stderr[-400:])


def test_log_made_in_a_library_constructor_stays_out_of_the_table():
    """h24sb_early_main with libh24sb_early.so: the library's constructor
    (before the writer thread can exist) calls work() 10 times, forks a
    child (7 calls) and starts a thread (200,000 calls) that runs on while
    the runtime's start-up hands the log to the writer;
    main calls work() 100,000 times and lists its descriptors. Traced
    (writer thread), 5 runs: the list as untraced (with the log made by a
    keeper there, a thread that opened the log again meanwhile once left
    it at 1023; now the keeper is made in the preinit array only),
    300,010 calls in the process's log and 7 in the child's."""
    d0 = os.path.dirname(build_c("libh24sb_early.so", ["h24sb_early_lib.c"], shared=True, libs=["-lpthread"]))
    prog = build_c("h24sb_early_main", ["h24sb_early_main.c"],
                   libs=["-L" + d0, "-lh24sb_early", "-Wl,-rpath," + d0])
    u = run([prog]).stdout
    for i in range(5):
        d = sfkit.tmpdir()
        t = run([SFTRACE, "record", "-q", "--writer", "thread", "-o", os.path.join(d, "e.log"), "--", prog])
        eq(t.stdout, u, f"run {i}: main's descriptors")
        got = sorted(_calls(l)["work"] for l in _logs(d))
        eq(got, [7, 300010], f"run {i}: work calls per log")


if __name__ == "__main__":
    sfkit.main(globals())
