"""Skeptic 24k: issue 24's claims (the traced program behaves exactly as
untraced) against the two mechanisms new on this branch (libc's
posix_spawn rewritten to jump to the runtime's; a CLONE_FILES child's log
I/O in a short-lived helper process) and a few neighbours. Each case runs
the same program untraced and traced and compares what the program saw."""
import os
import shutil
import subprocess

import sfkit


def _fixture(name, libs=()):
    return sfkit.build_c(name, [name + ".c"], libs=list(libs))


def _run_group(cmd, timeout):
    return sfkit.run_group(cmd, timeout)


def _traced(cmd, timeout=120):
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    rc, out, err = _run_group([sfkit.SFTRACE, "record", "-o", log, "--"] + list(cmd), timeout)
    return rc, out, err, log


def _untraced(cmd, timeout=120):
    rc, out, err = _run_group(list(cmd), timeout)
    return rc, out, err


def _child_log(log):
    d = os.path.dirname(log)
    kids = [f for f in os.listdir(d) if f.startswith("sf.") and f.endswith(".log") and f[3:-4].isdigit()]
    sfkit.eq(len(kids), 1, f"child logs in {d}")
    return os.path.join(d, kids[0])


# ---- posix_spawn taken over ----

def test_spawn_compat_version_runs_script():
    """posix_spawn@GLIBC_2.2.5 (compat: runs a script without #! through
    /bin/sh) bound to the runtime's unversioned posix_spawn, which called
    __spawni without TRY_SHELL: ENOEXEC (8) traced, 0 untraced. The
    runtime's carry glibc's versions now (exec_env.c)."""
    exe = _fixture("sk24k_spawn_compat")
    d = sfkit.tmpdir()
    want = "script-ran\nposix_spawn=0 status=0 sum=14950\n"
    sfkit.eq(_untraced([exe, d])[:2], (0, want), "untraced")
    rc, out, err, log = _traced([exe, d])
    sfkit.eq((rc, out), (0, want), "traced: posix_spawn's result and the script's output")


def test_spawnp_compat_version_runs_script():
    """The same for posix_spawnp@GLIBC_2.2.5."""
    exe = _fixture("sk24k_spawn_compat")
    d = sfkit.tmpdir()
    want = "script-ran\nposix_spawn=0 status=0 sum=14950\n"
    sfkit.eq(_untraced([exe, d + "/", "p"])[:2], (0, want), "untraced")
    rc, out, err, log = _traced([exe, d + "/", "p"])
    sfkit.eq((rc, out), (0, want), "traced: posix_spawnp's result and the script's output")


CODE_LIMIT = ("known limit, issue 24: dlsym on libc's handle answers a wrapped function's wrapper, as &posix_spawn "
              "and dlsym(RTLD_DEFAULT) do (its calls, a spawn after clearenv, are then traced: test_dlsym_handles), "
              "so a program reading code at that address reads the runtime's; libc's own code, at the address its "
              "symbol table gives (dladdr1 RTLD_DL_SYMENT), is unchanged")


def code_bytes_hold(untraced, traced):
    """What holds of sk24k_code_bytes traced: the bytes at libc's own
    definitions and the handle's answer being &name are as untraced; only
    the bytes at the answer (the wrapper's) differ."""
    u, t = untraced.splitlines(), traced.splitlines()
    sfkit.eq(len(u), 9, "untraced lines")
    sfkit.eq(len(t), 9, "traced lines")
    for name in ("posix_spawn", "posix_spawnp", "system"):
        sfkit.check(f"{name}: the handle's is &{name}: 1" in u, f"untraced: {untraced}")
        sfkit.eq([ln for ln in t if ln.startswith(name + " ") or ln.startswith(name + ": the")],
                 [ln for ln in u if ln.startswith(name + " ") or ln.startswith(name + ": the")],
                 f"{name}: libc's own bytes, and the handle's answer is &{name}")
        w = [ln for ln in u if ln.startswith(name + ": ") and ": the" not in ln]
        sym = [ln for ln in u if ln.startswith(name + " in libc's")]
        sfkit.eq(w[0].split(":")[1], sym[0].split(":")[1], f"{name} untraced: the answer is libc's definition")


def test_libc_code_bytes_unchanged():
    """libc's code was rewritten (posix_spawn's first 5 bytes 48 83 ec 10 6a
    became e9 + rel32, system's first 16 endbr64; jmp *0(%rip); .quad): a
    program reading them saw 2 of 3 functions changed. The runtime no
    longer writes into libc (exec_env.c runs copies of system and popen
    where the child's environment needs the tracer's variables): the
    bytes at libc's definitions, found through its symbol table, are as
    untraced. dlsym on libc's handle answers the wrapper, as &posix_spawn
    does (dlsym.c): reading there reads the runtime's code, a documented
    limit."""
    exe = _fixture("sk24k_code_bytes")
    rc, want, _ = _untraced([exe])
    sfkit.eq(rc, 0, "untraced exit")
    rc, out, err, log = _traced([exe])
    sfkit.eq(rc, 0, "traced exit")
    code_bytes_hold(want, out)
    raise sfkit.Skip(CODE_LIMIT)


def test_spawn_env_keeps_program_vars_and_errors():
    """Held: the child's environment is the program's, in order, first;
    only LD_PRELOAD and SFTRACE_* are added, a SFTRACE_OUTPUT_FILE= the
    program set is kept (its child untraced), and a missing binary gives
    ENOENT (2) from posix_spawn and posix_spawnp alike."""
    exe = _fixture("sk24k_spawn_env")
    rc, want, _ = _untraced([exe])
    sfkit.eq(rc, 0, "untraced exit")
    rc, out, err, log = _traced([exe])
    sfkit.eq(rc, 0, "traced exit")
    added = ("LD_PRELOAD=", "SFTRACE_")

    def blocks(text):
        bl, cur = [], []
        for ln in text.splitlines():
            cur.append(ln)
            if ln.startswith("--- ") or ln.startswith("missing"):
                bl.append(cur)
                cur = []
        return bl
    u, t = blocks(want), blocks(out)
    sfkit.eq(len(t), len(u), "blocks")
    for i, (a, b) in enumerate(zip(u, t)):
        mine = [ln for ln in b if not ln.startswith(added)]
        theirs = [ln for ln in a if not ln.startswith(added)]
        sfkit.eq(mine, theirs, f"block {i}: the program's own variables and results")
        if i in (0, 2):
            sfkit.eq(b[:len(a) - 1], a[:-1], f"block {i}: the program's variables first, in its order")
    sfkit.eq([ln for ln in t[2] if ln.startswith("SFTRACE_OUTPUT_FILE=")], ["SFTRACE_OUTPUT_FILE="],
             "the program's empty SFTRACE_OUTPUT_FILE kept")
    sfkit.check(out.endswith("missing r=2\nmissingp r=2\n"), f"ENOENT for missing binaries: {out[-60:]!r}")


# ---- CLONE_FILES children and their helpers ----

def _cf(mode, n=2000000):
    exe = _fixture("sk24k_cf_child", libs=["-lpthread"])
    env = dict(os.environ, N=str(n))
    cmd = [exe, mode]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    q = subprocess.run([sfkit.SFTRACE, "record", "-o", log, "--"] + cmd, capture_output=True, text=True, env=env,
                       timeout=300)
    return p, q, log


def test_clone_files_child_records_every_call():
    """Held: a CLONE_FILES child's 2,000,000 calls of leaf are all in its own
    log, and the output and statuses are untraced's."""
    p, q, log = _cf("plain")
    sfkit.eq(q.returncode, 0, "traced exit")
    sfkit.eq(q.stdout, p.stdout, "output")
    calls, _ = sfkit.report_calls(_child_log(log))
    sfkit.eq(sum(c for (t, n), c in calls.items() if n == "leaf"), 2000000, "leaf calls in the child's log")


def test_clone_files_child_rusage_children_empty():
    """Held since the helper processes behind this break were
    reverted (f7e3e7c); the break it found: the helpers are the child's children, reaped
    with wait4: its RUSAGE_CHILDREN after 2,000,000 calls is maxrss 2884 kB,
    utime 21 ms, 489 voluntary switches traced, all 0 untraced."""
    p, q, log = _cf("rusage")
    sfkit.check("maxrss 0 ut 0 st 0 minflt 0 nvcsw 0 nivcsw 0" in p.stdout, f"untraced: {p.stdout}")
    sfkit.eq(q.returncode, 0, "traced exit")
    sfkit.eq(q.stdout, p.stdout, "the child's RUSAGE_CHILDREN (it made no child)")


def test_clone_files_child_sees_no_children():
    """Held since the helper processes behind this break were
    reverted (f7e3e7c); the break it found: a thread of a CLONE_FILES child reading
    /proc/self/task/TID/children while another makes 2,000,000 calls sees the
    helpers: 3430 to 5619 entries traced, 0 untraced."""
    p, q, log = _cf("children")
    sfkit.check("children seen 0\n" in p.stdout, f"untraced: {p.stdout}")
    sfkit.eq(q.returncode, 0, "traced exit")
    sfkit.eq(q.stdout, p.stdout, "children the child's threads see")


def test_clone_files_child_under_seccomp_no_clone():
    """Held since the helper processes behind this break were
    reverted (f7e3e7c); the break it found: a CLONE_FILES child that forbids clone/clone3
    with seccomp (SECCOMP_RET_KILL_PROCESS, a no-new-processes sandbox) and
    makes 2,000,000 calls: untraced exit 0, traced killed by SIGSYS (status
    0x1f) at its first helper, 8182 of 4,000,002 events in its log."""
    p, q, log = _cf("seccomp")
    sfkit.check("child status 0x0\n" in p.stdout, f"untraced: {p.stdout}")
    sfkit.eq(q.stdout, p.stdout, "output (the child's status)")


# ---- descriptors and exits ----

def test_fd_count_after_close_range():
    """After close_range(3, ~0U, 0) a program counting /proc/self/fd finds
    3, as untraced (it found 4: the log's descriptor). The log's descriptor
    now lives only in the writer thread's own table (logfile.c)."""
    exe = _fixture("sk24k_fd_count")
    rc, want, _ = _untraced([exe])
    sfkit.eq((rc, want), (0, "fds after close_range 3, sum 5000050000\n"), "untraced")
    rc, out, err, log = _traced([exe])
    sfkit.eq(rc, 0, "traced exit")
    sfkit.eq(out, want, "descriptors in /proc/self/fd")


def test_calls_after_close_range_recorded():
    """Held: the calls after the close_range are all in the log (200,000
    calls of work), nothing lost, no write error."""
    exe = _fixture("sk24k_fd_count")
    rc, out, err, log = _traced([exe])
    sfkit.eq(rc, 0, "traced exit")
    info = sfkit.dump_info(log, events=True)
    sfkit.eq((info["summary"]["events"], info["summary"]["lost"], info["summary"]["write_errors"]),
             (400002, 0, 0), "events, lost, write errors")


def test_main_thread_raw_exit_ends_process():
    exe = _fixture("sk24k_raw_exit")
    sfkit.eq(_untraced([exe, "10", "plain"])[:2], (3, "sum 53\n"), "untraced")
    rc, out, err, log = _traced([exe, "10", "plain"], timeout=10)
    sfkit.eq((rc, out), (3, "sum 53\n"), "traced: exit status and output")


def test_main_thread_raw_insn_exit_ends_process():
    """The same exit by a bare syscall instruction (no wrapper sees it): the
    writer thread, idle, finds no thread of the program's left and ends the
    process with the leader's status, within its 100 ms idle check."""
    exe = _fixture("sk24k_raw_exit")
    sfkit.eq(_untraced([exe, "10", "insn"])[:2], (3, "sum 53\n"), "untraced")
    rc, out, err, log = _traced([exe, "10", "insn"], timeout=10)
    sfkit.eq((rc, out), (3, "sum 53\n"), "traced: exit status and output")
    info = sfkit.dump_info(log, events=True)
    sfkit.eq((info["summary"]["events"], info["summary"]["lost"]), (21, 0), "events (main's entry, 10 calls), lost")


def test_leader_then_last_thread_syscall_exit_ends_process():
    """main ends by a bare SYS_exit(4) while a thread works; that thread's
    syscall(SYS_exit, 9) ends the process, with its own code, 9, as
    untraced (Linux 5.19 on: the last thread's code is the process's). All
    100,000 calls of leaf are in the log."""
    exe = _fixture("sk24k_raw_exit_thread", libs=["-lpthread"])
    want = "thread 4999950000\n"
    sfkit.eq(_untraced([exe, "syscall"])[:2], (9, want), "untraced")
    rc, out, err, log = _traced([exe, "syscall"], timeout=10)
    sfkit.eq((rc, out), (9, want), "traced: exit status and output")
    calls, _ = sfkit.report_calls(log)
    sfkit.eq(sum(c for (t, n), c in calls.items() if n == "leaf"), 100000, "leaf calls in the log")


def test_leader_then_last_thread_raw_exit_ends_process():
    """main ends by a bare SYS_exit(4) while a thread works, and that thread
    by a bare SYS_exit(9) instruction: untraced the process ends with 9 (the
    last thread's code, Linux 5.19 on). Traced too: the writer thread, seeing
    the leader gone and a thread of the program's left, hands over and
    leaves, so it is not the last task. All 100,000 calls of leaf are in
    the log, none lost."""
    exe = _fixture("sk24k_raw_exit_thread", libs=["-lpthread"])
    want = "thread 4999950000\n"
    sfkit.eq(_untraced([exe, "insn"])[:2], (9, want), "untraced")
    rc, out, err, log = _traced([exe, "insn"], timeout=10)
    sfkit.eq((rc, out), (9, want), "traced: exit status and output")
    calls, _ = sfkit.report_calls(log)
    sfkit.eq(sum(c for (t, n), c in calls.items() if n == "leaf"), 100000, "leaf calls in the log")
    info = sfkit.dump_info(log, events=True)
    sfkit.eq(info["summary"]["lost"], 0, "lost")


def _leader_then_last_thread_with(opt):
    exe = _fixture("sk24k_raw_exit_thread", libs=["-lpthread"])
    want = "thread 4999950000\n"
    sfkit.eq(_untraced([exe, "insn"])[:2], (9, want), "untraced")
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    rc, out, err = _run_group([sfkit.SFTRACE, "record", *opt, "-o", log, "--", exe, "insn"], 10)
    sfkit.eq((rc, out), (9, want), f"traced with {' '.join(opt)}: exit status and output")


def test_leader_then_last_thread_raw_exit_under_ring():
    """The same program (main's bare SYS_exit(4), then the thread's bare
    SYS_exit(9)) under --ring 1M: 9 as untraced. The writer leaves after the
    leader with --ring too (it stayed to write snapshots: 4); the program's
    threads write them from then on (snapshot.c, sf_snapshot_serve_left)."""
    _leader_then_last_thread_with(["--ring", "1M"])


def test_leader_then_last_thread_raw_exit_paused():
    """The same under --paused: 9 as untraced. The writer leaves after the
    leader (it stayed to serve resume and pause: 4); a switch asked later is
    refused (switch.c, SF_SWITCH_LEADER_GONE)."""
    _leader_then_last_thread_with(["--paused"])


def _leader_gone_busy(writer, *how, code=0):
    exe = _fixture("sk24k_leader_gone_busy", libs=["-lpthread"])
    rc, want, _ = _untraced([exe, "1000000", *how])
    sfkit.eq((rc, len(want.splitlines())), (code, 4), "untraced")
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    rc, out, err = _run_group([sfkit.SFTRACE, "record", "--writer", writer, "-o", log, "--", exe, "1000000", *how],
                              120)
    sfkit.eq((rc, sorted(out.splitlines())), (code, sorted(want.splitlines())), f"{writer}: exit status and output")
    calls, _ = sfkit.report_calls(log)
    sfkit.eq(sum(c for (t, n), c in calls.items() if n == "leaf"), 4000000, f"{writer}: leaf calls in the log")
    info = sfkit.dump_info(log, events=True)
    sfkit.eq((info["summary"]["lost"], info["summary"]["write_errors"]), (0, 0), f"{writer}: lost, write errors")
    return info


def test_leader_gone_while_threads_hand_off():
    """main ends by a bare SYS_exit(4) while 4 threads make 1,000,000 calls
    each, handing slots to the writer (--writer thread) and the file space
    it maps ahead: the writer leaves in the middle of that (slots queued,
    requests posted), and the last thread's return ends the process with
    its own code, 0 (start_thread's SYS_exit: main's bare exit left glibc's
    count at 1), as untraced; it came out 4 (the leader's, from the writer)
    before the writer left. All 4,000,000 calls of leaf are in the log,
    none lost, no write error."""
    _leader_gone_busy("thread")


def test_leader_gone_while_threads_hand_off_auto():
    """The same with --writer auto (the default)."""
    _leader_gone_busy("auto")


def test_leader_gone_then_exit_runs_exit_hooks():
    """The same, but thread 0 joins the others and calls exit(5) once the
    writer has left: status 5, and the exit hooks run there (the log's
    state is exited)."""
    info = _leader_gone_busy("thread", "exit", code=5)
    sfkit.eq(info["state"], "exited", "log state")


def test_leader_gone_then_new_thread_and_fork():
    """After the writer has left (main's bare SYS_exit(4), a thread left),
    that thread starts another that makes 100,000 calls of leaf, forks a
    child that makes 50,000 and _exits 3, and ends by a bare SYS_exit(9):
    status 9 as untraced, the new thread's calls all in the log, the
    child's in a log of its own, none lost."""
    exe = _fixture("sk24k_leader_gone_after", libs=["-lpthread"])
    want = "t2 4999950000\nchild 1249975000\nchild status 3\n"
    sfkit.eq(_untraced([exe])[:2], (9, want), "untraced")
    rc, out, err, log = _traced([exe], timeout=20)
    sfkit.eq((rc, out), (9, want), "traced: exit status and output")
    calls, _ = sfkit.report_calls(log)
    sfkit.eq(sum(c for (t, n), c in calls.items() if n == "leaf"), 100000, "leaf calls in the log")
    kid = _child_log(log)
    kcalls, _ = sfkit.report_calls(kid)
    sfkit.eq(sum(c for (t, n), c in kcalls.items() if n == "leaf"), 50000, "leaf calls in the child's log")
    for lg in (log, kid):
        info = sfkit.dump_info(lg, events=True)
        sfkit.eq(info["summary"]["lost"], 0, f"lost in {os.path.basename(lg)}")


def test_idle_writer_does_not_wake():
    """The writer's watch for the program's end costs no wake-up while main
    lives (it waits for main's exit word and its own futex at once): a
    program asleep for 1 s after 1,000 calls sees at most 8 voluntary context
    switches more in RUSAGE_SELF than untraced (start-up's own: 2 to 6 here,
    before the change too; a 100 ms poll would add 10 more)."""
    exe = _fixture("sk24k_idle")
    rc, out, _ = _untraced([exe])
    sfkit.eq(rc, 0, "untraced exit")
    rc2, out2, err, log = _traced([exe])
    sfkit.eq(rc2, 0, "traced exit")
    u, t = int(out.split()[-1]), int(out2.split()[-1])
    sfkit.eq(out2.split()[:2], ["sum", "499500"], "output")
    sfkit.check(t <= u + 8, f"voluntary switches: untraced {u}, traced {t}")


def _strict(mode):
    exe = _fixture("sk24k_raw_exit")
    sfkit.eq(_untraced([exe, "10", mode])[:2], (3, "sum 53\n"), "untraced")
    rc, out, err, log = _traced([exe, "10", mode], timeout=20)
    sfkit.eq((rc, out), (3, "sum 53\n"), "traced: exit status and output")
    info = sfkit.dump_info(log, events=True)
    sfkit.eq((info["summary"]["events"], info["summary"]["lost"]), (1, 0), "events (main's entry), lost")


def test_seccomp_strict_program():
    """Under SECCOMP_MODE_STRICT (read, write, exit, sigreturn; rdtsc faults)
    a program making 10 calls prints its sum and exits 3 by
    syscall(SYS_exit), as untraced: the runtime unpatches every sled before
    the prctl (the trampolines read the TSC), makes no system call of its
    own in the strict thread, and its writer thread, left alone with the
    exited leader, ends the process with the leader's status. main's entry,
    before the prctl, is in the log."""
    _strict("strict")


def test_seccomp_strict_by_syscall():
    """The same with strict mode asked by syscall(SYS_seccomp,
    SECCOMP_SET_MODE_STRICT)."""
    _strict("strict-syscall")


def test_subreaper_reaps_only_its_children():
    """Held since the helper processes behind this break were
    reverted (f7e3e7c); the break it found: a subreaper (PR_SET_CHILD_SUBREAPER) that
    SIGKILLs its CLONE_FILES children 0..3 ms after their start and reaps with
    waitpid(-1, 0) until ECHILD: 100 rounds reap 0 pids it did not make
    untraced, 37 to 95 traced (helpers orphaned mid-use, reparented to it with
    SIGCHLD)."""
    exe = _fixture("sk24k_subreaper")
    want = "rounds 100 reaped mine 100 foreign 0\n"
    sfkit.eq(_untraced([exe, "100"])[:2], (0, want), "untraced")
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    rc, out, err = _run_group([sfkit.SFTRACE, "record", "-q", "-o", log, "--", exe, "100"], 300)
    sfkit.eq((rc, out), (0, want), "traced: pids reaped")


def _as_nobody(cmd):
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + list(cmd)


def test_nproc_limit_left_to_the_program():
    """A single-threaded program, as a uid of its own (60825) with
    RLIMIT_NPROC 2 (itself and one worker), forks 10 workers one at a
    time: 10 succeed untraced. With sftrace record run as that user too,
    record and its keeper are tasks of the user's (the kernel counts every
    task of the real uid), so the program is over its limit before its
    first fork: 0 succeed, exactly as under `strace -f` or a shell that
    waits for it (`sh -c 'prog; :'`), run as that user. What holds: the
    runtime's writer thread is stopped at the setrlimit (/proc/self/task
    lists 1 task, as untraced), the program's result and exit are its own,
    and every call is in the log. A documented limit (README, "Threads")."""
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root to run as another uid")
    exe = _fixture("sk24k_nproc")
    as_user = ["setpriv", "--reuid=60825", "--regid=60825", "--clear-groups"]
    want = "sum 1999999000000 forks ok 10 failed 0 tasks 1\n"
    over = "sum 1999999000000 forks ok 0 failed 10 tasks 1\n"
    sfkit.eq(_untraced(as_user + [exe])[:2], (0, want), "untraced")
    sfkit.eq(_untraced(as_user + ["sh", "-c", exe + "; :"])[:2], (0, over), "under a shell of the user's")
    if shutil.which("strace"):
        sfkit.eq(_untraced(as_user + ["strace", "-f", "-o", "/dev/null", exe])[:2], (0, over),
                 "under strace -f as the user")
    d = sfkit.tmpdir()
    os.chmod(d, 0o777)
    for writer in ("auto", "sync"):
        log = os.path.join(d, f"sf-{writer}.log")
        rc, out, err = _run_group(as_user + [sfkit.SFTRACE, "record", "--writer", writer, "-o", log, "--", exe], 120)
        sfkit.eq((rc, out), (0, over), f"traced, --writer {writer}: forks and tasks")
        info = sfkit.dump_info(log, events=True)
        sfkit.eq((info["summary"]["events"], info["summary"]["lost"]), (4000002, 0), f"events, lost ({writer})")
    raise sfkit.Skip("known limit, issue 24: record and its keeper are tasks of the user who runs record, so they "
                     "count against that user's RLIMIT_NPROC, as strace -f or a waiting shell does: run record as "
                     "another user (root) and the program as its own "
                     "(test_nproc_limit_left_to_the_program_as_its_user)")


def test_nproc_limit_left_to_the_program_as_its_user():
    """The same program, record run as root and the program alone as a uid
    of its own (60824: RLIMIT_NPROC counts every process of the uid on the
    machine, and other runs may use 65534 meanwhile): its
    setrlimit(RLIMIT_NPROC, 2) stops the runtime's writer thread (a task of
    the user's), so its 10 forks succeed and it has 1 task, as untraced,
    and every call is in the log."""
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root to run as uid 65534")
    exe = _fixture("sk24k_nproc")
    want = "sum 1999999000000 forks ok 10 failed 0 tasks 1\n"
    as_user = ["setpriv", "--reuid=60824", "--regid=60824", "--clear-groups"]
    sfkit.eq(_untraced(as_user + [exe])[:2], (0, want), "untraced")
    d = sfkit.tmpdir()
    os.chmod(d, 0o777)
    log = os.path.join(d, "sf.log")
    rc, out, err = _run_group([sfkit.SFTRACE, "record", "-o", log, "--"] + as_user + [exe], 120)
    sfkit.eq((rc, out), (0, want), "traced: forks and tasks")
    info = sfkit.dump_info(log, events=True)
    sfkit.eq((info["summary"]["events"], info["summary"]["lost"]), (4000002, 0), "events, lost")


def test_nproc_limit_left_to_a_fork_child():
    """A fork child of a root program drops to a uid of its own (60827),
    makes 2,000,000 calls (its log, and the keeper thread that holds it,
    made at its first), sets RLIMIT_NPROC 2 and forks 10 workers one at a
    time: the keeper ends for good at the setrlimit (the log back in the
    child's table), so 10 succeed with 1 task, as untraced, and every call
    is in the child's log."""
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root to run as another uid")
    exe = _fixture("sk24k_nproc")
    want = "sum 1999999000000 forks ok 10 failed 0 tasks 1\n"
    sfkit.eq(_untraced([exe, "60827"])[:2], (0, want), "untraced")
    rc, out, err, log = _traced([exe, "60827"])
    sfkit.eq((rc, out), (0, want), "traced: forks and tasks")
    d = os.path.dirname(log)
    kids = sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("sf.") and f != "sf.log")
    sfkit.eq(len(kids), 11, f"child and worker logs in {d}")
    leaf = sorted(sfkit.count_calls(sfkit.dump_events(k))["leaf"] for k in kids)
    sfkit.eq(leaf, [1] * 10 + [2000000], "leaf calls: the workers', the child's")
    for k in kids:
        sfkit.eq(sfkit.dump_info(k, events=True)["summary"]["lost"], 0, f"lost in {k}")


def test_clone_files_child_wall_reaper_reaps_nothing():
    """Held since the helper processes behind this break were
    reverted (f7e3e7c); the break it found: a CLONE_FILES child's thread reaping with
    waitpid(-1, __WALL | WNOHANG) while another makes 2,000,000 calls reaps 87
    to 301 helpers traced, 0 untraced (the child made no child)."""
    exe = _fixture("sk24k_cf_wall", libs=["-lpthread"])
    want = "child: sum 1999999000000 reaped 0 sigchld 0\nparent: status 0x0\n"
    sfkit.eq(_untraced([exe])[:2], (0, want), "untraced")
    rc, out, err, log = _traced([exe])
    sfkit.eq((rc, out), (0, want), "traced: what the child reaped")


def _cf_threads(mode):
    """The clone child's run, traced: (its wall time in ms, its log or None)."""
    exe = _fixture("sk24k_cf_threads", libs=["-lpthread"])
    rc, out, err, log = _traced([exe, mode])
    sfkit.eq(rc, 0, f"traced {mode} exit")
    m = out.split()
    sfkit.eq(m[:3], [mode, "status", "0"], f"{mode}: output")
    return float(m[4]), (_child_log(log) if mode == "files" else None)


def test_clone_files_child_threads_record_every_call():
    """A clone(CLONE_FILES) child whose 8 threads make 500,000 calls each
    and hand their slots off at the same moments: every event is in its
    log, none dropped, no write error. Each use of the log's descriptor
    (given up between uses in such a child) once gave up the one another
    thread had just opened for its own use: 8182 events (a chunk) dropped
    as a write error in 3 of 6 runs."""
    for _ in range(3):
        _, log = _cf_threads("files")
        info = sfkit.dump_info(log, events=True)
        s = info["summary"]
        sfkit.eq((s["events"], s["lost"], s["dropped"], s["write_errors"]), (8000018, 0, 0, 0),
                 "the child's events, lost, dropped, write errors")


def test_clone_files_child_costs_as_a_fork_child():
    """The same child with CLONE_FILES costs at most twice what it costs
    without (it opens its log's descriptor for a use when no other use
    holds it, and closes it after). Measured here at a load of 9 on 2
    CPUs, 10 runs each: median 622 ms with CLONE_FILES, 508 without (a
    helper process per use once made it 4.5 times)."""
    # best of 4 each, taken in turns: a loaded machine slows either run,
    # never speeds one up, and a burst of load hits both alike
    times = {"files": [], "nofiles": []}
    for _ in range(4):
        for m in times:
            times[m].append(_cf_threads(m)[0])
    best = {m: min(t) for m, t in times.items()}
    sfkit.check(best["files"] <= 2 * best["nofiles"],
                f"best of 4, ms: CLONE_FILES {best['files']:.0f}, without {best['nofiles']:.0f} ({times})")


def test_clone_files_child_fork_then_clone_files():
    """Held since the helper processes behind this break were
    reverted (f7e3e7c); the break it found: a fork made by a CLONE_FILES child while
    another of its threads waits for a helper copies the helper lock taken
    (never reset in the fork child): the worker's own CLONE_FILES grandchild
    then spins in sched_yield with every signal blocked at its first event;
    untraced 0.7 s, traced hung (killed here after 60 s)."""
    exe = _fixture("sk24k_cf_fork", libs=["-lpthread"])
    want = "child: grandchildren ok 1\nparent: status 0x0\n"
    sfkit.eq(_untraced([exe], timeout=60)[:2], (0, want), "untraced")
    rc, out, err, log = _traced([exe], timeout=60)
    sfkit.eq((rc, out), (0, want), "traced: exit and output")


def test_last_thread_pthread_exit_ends_process():
    exe = _fixture("sk24k_pthread_exit", libs=["-lpthread"])
    want = "thread 4999950000\n"
    sfkit.eq(_untraced([exe], timeout=20)[:2], (0, want), "untraced")
    rc, out, err, log = _traced([exe], timeout=10)
    sfkit.eq((rc, out), (0, want), "traced: exit status and output")


def test_main_pthread_exit_ends_process():
    exe = _fixture("sk24k_main_pthread_exit", libs=["-lpthread"])
    want = "main 4999950000\n"
    sfkit.eq(_untraced([exe], timeout=20)[:2], (0, want), "untraced")
    rc, out, err, log = _traced([exe], timeout=10)
    sfkit.eq((rc, out), (0, want), "traced: exit status and output")
