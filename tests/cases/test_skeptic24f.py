"""Skeptic round 6 on issue 24 (safe in production): the round-5 wait pipe of
a CLONE_VFORK clone without CLONE_VM, exec routes, daemons and descriptor
limits. Each traced run is compared with the same program untraced.

Every break found here is fixed; a new one is marked with
sfkit.known_break(24, why)."""
import collections
import os
import re
import signal
import subprocess
import time

from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, run, tmpdir


def logs_in(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def test_vfork_clone_parent_dies_of_fatal_signal_at_once():
    """clone(fn, stack, CLONE_VFORK | SIGCHLD) without CLONE_VM, the child
    running 1.2 s, the parent's ITIMER_REAL (SIGALRM, default action) at
    200 ms. The kernel kills a vfork parent at once on a fatal signal:
    untraced the child, 600 ms in, prints "parent gone" and the program
    ends by SIGALRM. Traced it prints "parent alive": the runtime waits for
    the child on its pipe with every signal blocked (hooks.c
    vfork_wait_parent), so the fatal signal is held until the child exits
    (shell timing: untraced dead after 0.21 s, traced after 1.56 s). Same
    for SIGTERM/SIGINT sent by another process (a supervisor's stop,
    Ctrl-C). Fixed: the wait holds only the signals the program catches and
    the stop signals, as the kernel's killable vfork wait (hooks.c,
    vw_held_signals)."""
    exe = build_c("skep24f_vfork_signal", ["skep24f_vfork_signal.c"])
    u = run([exe], check_rc=-signal.SIGALRM)
    eq(u.stdout, "child at 600 ms: parent gone\n", "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe], check_rc=None)
    check("killed by signal 14" in t.stderr, t.stderr)
    eq(t.stdout, u.stdout, "traced: the parent dies while its child runs")


def test_vfork_clone_wait_pipe_not_passed_to_the_exec():
    """A CLONE_VFORK clone without CLONE_VM whose child clears FD_CLOEXEC on
    every descriptor in /proc/self/fd (a supervisor passing its sockets to
    the worker it execs), then execs a shell that lists its descriptors and
    lives 1 s. Untraced: clone returns at the exec ("clone returned after
    exec"), the worker has 0 1 2 3 + the runner's. Traced: the wait pipe's
    write end (fdguard does not guard it, so F_SETFD 0 works) is inherited
    by the worker: one more descriptor (a pipe, e.g. 1025) and clone
    returned only when the worker exited, 1 s later ("clone returned after
    worker exit"). A worker that is a daemon would block the parent
    forever. Fixed: the parent waits on a futex word the kernel marks at
    the child's exec or exit (robust list): no descriptor to inherit."""
    exe = build_c("skep24f_vfork_inherit", ["skep24f_vfork_inherit.c"])
    u = run([exe])
    check("clone returned after exec" in u.stdout, u.stdout)
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe], timeout=30)
    # the worker's list is its one line of numbers: the parent's line may
    # come between it and the worker's "fds" header (they race)
    fds = lambda out: sorted(re.search(r"^([\d ]+)$", out, re.M).group(1).split(), key=int)  # noqa: E731
    eq(fds(t.stdout), fds(u.stdout), "the descriptors the exec'd worker's ls inherits")
    check("clone returned after exec" in t.stdout, t.stdout)


def test_fexecve_memfd_image_gets_its_log():
    """fork, then fexecve of a memfd copy of the program (runc re-executes
    itself from a memfd this way). The new image makes 1000 leaf calls.
    Output identical ("child 500500", "parent 2 status 3"). Traced, only
    sf.log (the parent: main and one leaf, 4 events) is written: the exec'd
    image has LD_PRELOAD and the runtime mapped, but objects.c opens the
    executable by /proc/self/exe's link text ("/memfd:prog (deleted)"),
    which fails, and skips the object without a word: 1000 calls lost
    silently, no log, no message. The same holds for any program whose
    executable was deleted before it started patching. Fixed: objects.c
    opens /proc/self/exe itself and saves the image beside the log
    (STEM.<build-id>.exe), which the log names."""
    exe = build_c("skep24f_memfd_exec", ["skep24f_memfd_exec.c"])
    u = run([exe])
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe])
    eq(t.stdout, u.stdout, "output")
    logs = logs_in(d)
    silent = "memfd" in t.stderr or "wrote no log" in t.stderr
    check(len(logs) == 2 or silent, f"the exec'd image has no log and nothing says so: {logs}\n{t.stderr}")
    child = [p for p in logs if not p.endswith("/sf.log")]
    eq(count_calls(dump_events(child[0]))["leaf"], 1000, "the exec'd image's leaf calls")


def test_rlimit_lowered_then_full_child_log_reported():
    """Holds: the program lowers RLIMIT_NOFILE to 32 at run time and opens
    /dev/null until EMFILE, then forks a worker. Both runs open the same
    number of files and print the same lines. With --writer sync the
    worker cannot have a log (no free number below the limit) and record's
    output says so ("cannot create log ...: openat: Too many open files") instead
    of losing it silently; with a thread (auto, on more than one CPU) the
    worker's keeper holds its log in a table of its own, which has room:
    its call is in it."""
    exe = build_c("skep24f_rlimit_child", ["skep24f_rlimit_child.c"])
    u = run([exe])
    d = tmpdir()
    t = run([SFTRACE, "record", "--writer", "sync", "-o", os.path.join(d, "sf.log"), "--", exe])
    eq(t.stdout, u.stdout, "output")
    check(re.search(r"cannot create log \S+: openat: Too many open files", t.stderr), t.stderr)
    eq(count_calls(dump_events(os.path.join(d, "sf.log")))["work"], 1, "the parent's own call")
    if os.cpu_count() < 2:
        return
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe])
    eq(t.stdout, u.stdout, "output with a thread")
    check("cannot create log" not in t.stderr and "wrote no log" not in t.stderr, t.stderr)
    logs = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))
    eq(len(logs), 2, f"logs {logs}")
    eq([count_calls(dump_events(l))["work"] for l in logs], [1, 1], "the worker's call (work(10) hoisted out of its loop), the parent's")


def environ_of(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)


def wait_for(pred, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_daemon_outlives_killed_record_reopens_on_hup():
    """Holds: a daemon (double fork, setsid, chdir /, umask 0, close 0..1023,
    /dev/null on 0-2, pidfile) writing its own log on fd 3, reopened on
    SIGHUP. record is SIGKILLed 0.4 s in, then the daemon gets SIGHUP. Its
    log holds exactly its 30 ticks, one "reopened" and "done 44955000", as
    untraced; its trace has all 30000 work calls; the notes directory named
    in its environment is gone once it exits."""
    exe = build_c("skep24f_daemon_hup", ["skep24f_daemon_hup.c"])
    d = tmpdir()
    rec = subprocess.Popen([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe, d],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pidfile = os.path.join(d, "daemon.pid")
    check(wait_for(lambda: os.path.exists(pidfile) and open(pidfile).read().endswith("\n"), 5), "no pidfile")
    pid = int(open(pidfile).read())
    notes = environ_of(pid).get(b"SFTRACE_NOTES_DIR", b"").decode()
    time.sleep(0.4)
    rec.kill()
    rec.wait()
    os.kill(pid, signal.SIGHUP)
    dlog = os.path.join(d, "daemon.log")
    check(wait_for(lambda: "done" in open(dlog).read(), 10), open(dlog).read())
    check(wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 5), "daemon still running")
    lines = open(dlog).read().splitlines()
    eq([x for x in lines if x.startswith("tick")], [f"tick {i}" for i in range(30)], "ticks")
    eq(lines.count("reopened"), 1, "one reopen")
    eq(lines[-1], "done 44955000", "last line")
    own = [p for p in logs_in(d) if p.endswith(f".{pid}.log")]
    eq(len(own), 1, f"the daemon's log: {logs_in(d)}")
    eq(count_calls(dump_events(own[0]))["work"], 30000, "the daemon's work calls")
    if notes:
        check(wait_for(lambda: not os.path.exists(notes), 5), f"{notes} left behind")


def test_group_sigkill_of_record_leaves_notes_dir():
    """`timeout -s KILL 1 sftrace record -o D/sf.log -- daemon D 40`:
    timeout SIGKILLs its process group, record and its keeper; the daemon
    (setsid, 40 ticks of 50 ms) escaped and goes on. Its log is complete
    (40000 work calls, "done 59940000"), but the notes directory named in
    its SFTRACE_NOTES_DIR (/tmp/sftrace-notes-XXXXXX, 0711 root) stays in
    /tmp for good after the daemon exits: nobody is left to remove it. The
    issue asks: nothing left behind when the last one exits, or when record
    is killed. Fixed: the keeper moves to a process group of its own
    (same session) once the command is forked, so it survives the group
    kill and removes the directory after the daemon."""
    exe = build_c("skep24f_daemon_hup", ["skep24f_daemon_hup.c"])
    d = tmpdir()
    p = run(["timeout", "-s", "KILL", "1", SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe, d,
             "40"], check_rc=None, timeout=30)
    check(p.returncode in (-9, 128 + 9), f"timeout SIGKILLs its own group too: {p.returncode}")
    pid = int(open(os.path.join(d, "daemon.pid")).read())
    try:
        notes = environ_of(pid).get(b"SFTRACE_NOTES_DIR", b"").decode()
    except FileNotFoundError:
        raise AssertionError("the daemon ended before its environment was read")
    check(notes.startswith("/tmp/sftrace-notes-"), notes)
    check(wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 10), "daemon still running")
    eq(open(os.path.join(d, "daemon.log")).read().splitlines()[-1], "done 59940000", "the daemon's last line")
    eq(count_calls(dump_events(os.path.join(d, f"sf.{pid}.log")))["work"], 40000, "the daemon's work calls")
    left = wait_for(lambda: not os.path.exists(notes), 3)
    if not left:
        subprocess.run(["rm", "-rf", notes])
    check(left, f"{notes} left behind after the last traced process exited")


def test_flood_threads_and_staggered_children():
    """Holds: 4 threads x 100k calls while main starts 12 children 3 ms
    apart (fork, clone(CLONE_VFORK) with its own stack, posix_spawn of
    itself), 20k calls each. 13 logs: main's 400,000 tleaf on 4 threads,
    each child's exactly 20,000 cleaf, 0 lost, output as untraced (also
    held at 500k and 100k: 4,000,010 events, 0 lost)."""
    exe = build_c("skep24f_flood_spawn", ["skep24f_flood_spawn.c"], libs=["-lpthread"])
    u = run([exe])
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe])
    eq(t.stdout, u.stdout, "output")
    eq(len(logs_in(d)), 13, "one log per process")
    q = run([SFTRACE, "query", "-q", "--format", "tsv", d,
             "select pid, short_name, count(*) from frames group by pid, short_name"]).stdout
    per = collections.defaultdict(dict)
    for line in q.splitlines()[1:]:
        pid, name, n = line.split("\t")
        per[int(pid)][name] = int(n)
    eq(len(per), 13, "processes with calls")
    mains = [c for c in per.values() if "tleaf" in c]
    eq(len(mains), 1, "tleaf in one process only")
    eq((mains[0]["tleaf"], mains[0]["thr"], mains[0].get("cleaf", 0)), (400000, 4, 0), "main's calls")
    eq(sorted(c["cleaf"] for c in per.values() if "tleaf" not in c), [20000] * 12, "each child's cleaf")
    info = run([SFTRACE, "dump", os.path.join(d, "sf.log")]).stdout
    check(re.search(r"summary: 800010 events, 5 threads, .* 0 lost", info), info[-500:])


def test_spawn_file_actions_high_numbers():
    """Holds: posix_spawn of itself with file actions dup2 1->1000, 1->512,
    open /dev/null at 700, closefrom(1001), dup2 1000->1023 (the number the
    log takes at ulimit -n >= 1024). The spawned image writes through 1023,
    1000 and 512 exactly as untraced and has 500 leaf calls in its own log;
    its descriptor list is the untraced one (its own log, once an extra
    number that F_GETFD answered with EBADF, is in its writer thread's
    table only)."""
    exe = build_c("skep24f_spawn_actions", ["skep24f_spawn_actions.c"])
    u = run([exe])
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe])
    body = lambda out: [x for x in out.splitlines() if not x.startswith("fds ")]  # noqa: E731
    eq(body(t.stdout), body(u.stdout), "output")
    eq(body(u.stdout)[:3], ["via 1023 125250", "via 1000", "via 512"], "writes through the spawned numbers")
    fds = lambda out: set(re.search(r"^fds (.*)$", out, re.M).group(1).split())  # noqa: E731
    extra = fds(t.stdout) - fds(u.stdout)
    eq(fds(u.stdout) - fds(t.stdout), set(), "descriptors lost")
    eq(extra, set(), "descriptors gained")
    child = [p for p in logs_in(d) if not p.endswith("/sf.log")]
    eq(len(child), 1, logs_in(d))
    eq(count_calls(dump_events(child[0]))["leaf"], 500, "the spawned image's calls")


def test_vfork_files_clone_new_parent_thread_not_stalled():
    """clone(fn, stack, CLONE_VFORK | CLONE_FILES | SIGCHLD), no CLONE_VM:
    the child waits (poll, 3 s at most) for a byte that a thread its parent
    starts 100 ms later writes after one traced call. Untraced: "child got
    the byte: yes; clone took < 1 s" (0.12 s). Traced: "no; >= 1 s" (3.2 s):
    with CLONE_FILES the runtime keeps CLONE_VFORK and holds its lock until
    the child exits (hooks.c clone: the wait pipe is used only without
    CLONE_FILES), so the new thread's first event waits for the lock and
    the child never hears from it. Without the poll timeout: a hang. This
    is round 4's break, fixed only for clones without CLONE_FILES. Fixed:
    CLONE_FILES clones take the futex-word wait too, the lock let go."""
    exe = build_c("skep24f_vfork_files_thread", ["skep24f_vfork_files_thread.c"], libs=["-lpthread"])
    u = run([exe])
    eq(u.stdout, "child got the byte: yes; clone took < 1 s\n", "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe], timeout=30)
    eq(t.stdout, u.stdout, "traced")


def test_reexec_of_deleted_binary_gets_its_log():
    """A program deletes its own binary (as an upgrade replaces it), then
    re-executes itself through /proc/self/exe; the new image makes 1000
    leaf calls. Output identical ("first 1", "re-exec'd 500500"). Traced:
    only the first image's sf.log; the new image is silently untraced (no
    log, no message), as with a memfd: objects.c opens the executable by the
    text of /proc/self/exe ("... (deleted)"). Fixed as the memfd case."""
    exe = build_c("skep24f_reexec_deleted", ["skep24f_reexec_deleted.c"])
    d = tmpdir()
    u_exe, t_exe = os.path.join(d, "u_prog"), os.path.join(d, "t_prog")
    for p in (u_exe, t_exe):
        run(["cp", exe, p])
    u = run([u_exe])
    eq(u.stdout, "first 1\nre-exec'd 500500\n", "untraced")
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", t_exe])
    eq(t.stdout, u.stdout, "output")
    logs = logs_in(d)
    check(len(logs) == 2 or "deleted" in t.stderr, f"the re-exec'd image has no log and nothing says so: "
                                                   f"{logs}\n{t.stderr}")
    new = [p for p in logs if not p.endswith("/sf.log")]
    eq(count_calls(dump_events(new[0]))["leaf"], 1000, "the re-exec'd image's leaf calls")


def test_exec_through_syscall_with_clean_env_gets_its_log():
    """Three fork children exec the program again with a clean environment
    {PATH, LANG}: through execve(), syscall(SYS_execve) and
    syscall(SYS_execveat). Output identical (three "... 500500" lines).
    Traced: 2 logs, not 4: only the execve() image (1000 leaf calls) has
    one. exec_env.c adds the tracer's variables for the libc exec functions,
    but syscall() with the exec numbers passes the caller's environment as
    is (hooks.c only waits for a snapshot), so those images run untraced,
    without a word. Fixed: hooks.c hands those numbers to exec_env.c's
    sf_exec_syscall, as execve() does."""
    exe = build_c("skep24f_syscall_exec_env", ["skep24f_syscall_exec_env.c"])
    u = run([exe])
    eq(u.stdout, "execve 500500\nsys_execve 500500\nsys_execveat 500500\n", "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe])
    eq(t.stdout, u.stdout, "output")
    images = [p for p in logs_in(d) if count_calls(dump_events(p))["leaf"] == 1000]
    eq(len(images), 3, f"a log for each exec'd image: {logs_in(d)}\n{t.stderr}")


def test_children_after_clearenv_get_their_logs():
    """The program calls clearenv() and sets PATH (a daemon sanitizing its
    environment), then runs itself through system() and fork + execl.
    Output identical ("system 500500", "execl 500500"). Traced: only
    sf.log; both children run untraced, without a word. exec_env.c keeps
    children traced when the caller passes its own environment (execve,
    posix_spawn, ...), but assumes that the functions using `environ`
    (execl, execv, system, popen) still find the tracer's variables there.
    Fixed: those build the child's environment from environ plus the
    runtime's start-up copy (test_exec_env_children has popen too)."""
    exe = build_c("skep24f_clearenv_children", ["skep24f_clearenv_children.c"])
    u = run([exe])
    eq(u.stdout, "system 500500\nexecl 500500\n", "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe])
    eq(t.stdout, u.stdout, "output")
    images = [p for p in logs_in(d) if count_calls(dump_events(p))["leaf"] == 1000]
    eq(len(images), 2, f"a log for each child: {logs_in(d)}\n{t.stderr}")


def test_vfork_clone_vm_grandchild_does_not_hold_the_parent():
    """clone(CLONE_VFORK | SIGCHLD) child C (own memory) starts a helper G
    with clone(CLONE_VM | SIGCHLD) (shares C's memory, not a thread) and
    exits; G lives 1 s more. Untraced: "clone returned when C exited".
    Traced: "when G exited": G got a copy of C's descriptor table with the
    wait pipe's write end, and the round-5 fix closes inherited write ends
    only in fork-like children (hooks.c vw_after_fork_child), not in a
    CLONE_VM child (clone_shared_vm). Fixed: no pipe any more (the futex
    word the kernel marks at C's exit)."""
    exe = build_c("skep24f_vfork_vm_grandchild", ["skep24f_vfork_vm_grandchild.c"])
    u = run([exe])
    eq(u.stdout, "clone returned when C exited\n", "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe], timeout=30)
    eq(t.stdout, u.stdout, "traced")
