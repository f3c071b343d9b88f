"""Skeptic round 24v on issue 24 (safe in production): system() now always
runs the runtime's own implementation, popen's environment ring, glibc's
thread count in clone() children, quick_exit, and record no longer adding
LD_LIBRARY_PATH. Each traced run is compared with the same program
untraced (glibc 2.36, Debian 12); the expected values are the untraced
ones."""
import os
import re
import shutil
import time

import sfkit
from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, run, tmpdir


def fixture():
    return build_c("skep24v", ["skep24v.c"], libs=["-lpthread"])


def both(args, env=None):
    """(untraced, traced) stdout and exit status of the fixture."""
    exe = fixture()
    u = run([exe] + args, env=env, check_rc=None)
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe] + args, env=env, check_rc=None)
    return (u.stdout, u.returncode), (t.stdout, t.returncode)


def test_system_statuses_errno_and_mask_as_glibc():
    """system("exit 3") 768, "kill -9 $$" 9, a missing command 32512 (127),
    system(NULL) 1, errno kept across a successful call, the caller's
    mask back and SIGCHLD unblocked after (held)."""
    want = ("exit 3: 768 exit 3\nkill 9: 9 sig 9\nmissing: 32512 exit 127\nnull: 1\n"
            "errno after success: 1234 (0)\nusr2 still blocked: 1, chld blocked: 0\n")
    u, t = both(["status"])
    eq(u, (want, 0), "untraced")
    eq(t, u, "traced")


def test_system_runs_no_atfork_handlers():
    """glibc's system spawns (posix_spawn): a pthread_atfork handler runs 0
    times, traced too (held)."""
    u, t = both(["atfork"])
    eq(u, ("atfork prepare 0 parent 0\n", 0), "untraced")
    eq(t, u, "traced")


def test_system_sigchld_handler_sees_the_shell_reaped():
    """A SIGCHLD handler that calls waitpid(-1, WNOHANG): called once after
    system returns, finds nothing to reap (held)."""
    u, t = both(["sigchld"])
    eq(u, ("exit 2: 512 exit 2\nhandler calls 1 reaped 0\n", 0), "untraced")
    eq(t, u, "traced")


def test_system_overlapping_threads_restore_sigint_once():
    """Two threads' system calls overlap: SIGINT ignored during, still
    ignored after the first ends, the program's handler back after both,
    SIGQUIT default (held)."""
    u, t = both(["sigint"])
    eq(u, ("during: ign 1\nafter one: ign 1\nafter both: ours 1 quit dfl 1 (0 0)\n", 0), "untraced")
    eq(t, u, "traced")


def test_system_from_handler_on_16k_altstack():
    """A SIGUSR1 handler on a 16 KiB sigaltstack calls system("exit 5"):
    1280 (held)."""
    u, t = both(["altstack", "16384"])
    eq(u, ("handler: 1280 exit 5\n", 0), "untraced")
    eq(t, u, "traced")


def test_crash_handler_on_8k_altstack_spawns_a_helper():
    """A SIGUSR1 handler on an 8 KiB sigaltstack (the classic SIGSTKSZ),
    as crash handlers do: fork + execl of `sh -c "exit 5"` (a debugger or
    symbolizer), or system("exit 5"). Untraced both give 0x500 (1280).
    Traced the forked child dies of SIGSEGV before its exec (status 0xb:
    the exec wrapper's 8 KiB environment buffer overflows the alternate
    stack), and system() kills the whole program (record exits 139)."""
    broke = []
    for how in ("forkexec", "system"):
        u, t = both(["altstack", "8192", how])
        eq(u, ("handler: 1280 exit 5\n", 0), f"untraced {how}")
        if t != u:
            broke.append(f"{how}: {t!r}")
    eq(broke, [], "traced unlike untraced (the environment copy is mapped now, not on the stack)")


def test_spawning_from_a_minimum_size_thread_stack():
    """A thread with a PTHREAD_STACK_MIN (16 KiB) stack calls system,
    popen+pclose or posix_spawn+waitpid of `sh -c "exit 4"`. Untraced each
    gives 1024. Traced each kills the program with SIGSEGV (record exits
    139): the wrappers put an 8 KiB environment buffer (ENV_BUF) on the
    caller's stack, and glibc's posix_spawn needs more below it. popen
    also dies at 20 KiB, system in this fixture too."""
    broke = []
    for how in ("system", "popen", "spawn"):
        u, t = both(["smallstack", "16384", how])
        eq(u, ("thread: 1024 exit 4\n", 0), f"untraced {how}")
        if t != u:
            broke.append(f"{how}: {t!r}")
    eq(broke, [], "traced unlike untraced (the environment copy is mapped now, not on the stack)")


def test_system_does_not_call_the_programs_waitpid():
    """The program defines waitpid (counting, then libc's), and sigaction,
    sigprocmask, sigaddset, kill, pthread_mutex_lock/unlock and
    posix_spawnattr_init/setflags the same way, then calls system and
    popen+pclose. glibc reaches them inside libc: the program's are called
    0 times. Traced waitpid was called once and the others 15 times (13
    from system, popen's lock and unlock: the runtime called them through
    the PLT, which binds to the executable's definitions): it now calls
    libc's own, found in libc's symbol table, and fills the spawn
    attributes itself."""
    u, t = both(["waitpid"])
    eq(u, ("exit 2: 512 exit 2\nprogram waitpid calls during system: 0, others 0\n", 0), "untraced")
    eq(t, u, "traced")


def test_clone_child_threads_end_as_untraced():
    """clone(fn, stack, SIGCHLD): the child creates a thread, then either
    pthread_exits (the second thread's end ends the process, stdio
    flushed, status 0) or joins it and returns 6 (held)."""
    u, t = both(["clone_exit"])
    eq(u, ("second thread done\nclone child: 0 exit 0\n", 0), "untraced exit")
    eq(t, u, "traced exit")
    u, t = both(["join"])
    eq(u, ("second thread done joined\n\nclone child: 1536 exit 6\n", 0), "untraced join")
    eq(t, u, "traced join")


def test_quick_exit_runs_program_handlers_in_order():
    """at_quick_exit handlers run in reverse order, atexit ones not, status
    3 (held)."""
    u, t = both(["quick"])
    eq(u, ("unflushedqe2\nqe1\n", 3), "untraced")
    eq(t, u, "traced")


def test_users_ld_library_path_reaches_program_and_shell():
    """LD_LIBRARY_PATH set by the user reaches the program and its
    system() shell unchanged; unset stays unset (held)."""
    cases = [("/opt/x:/usr/lib", {"LD_LIBRARY_PATH": "/opt/x:/usr/lib"})]
    if "LD_LIBRARY_PATH" not in os.environ:  # run() can add variables, not remove them
        cases.append(("(unset)", None))
    for shown, env in cases:
        u, t = both(["llp"], env=env)
        eq(u, (f"llp: {shown}\nshell llp: {shown}\n", 0), f"untraced {shown}")
        eq(t, u, f"traced {shown}")


def test_system_shell_signal_state_and_sigchld_ignored():
    """The shell (grep of its own /proc status) sees the same blocked,
    ignored and caught sets traced; with SIGCHLD ignored system returns -1
    with ECHILD (10) (held)."""
    u, t = both(["shellsig"])
    eq(u, ("SigBlk:\t0000000000000000\nSigIgn:\t0000000180001000\nSigCgt:\t0000000000000400\n", 0), "untraced")
    eq(t, u, "traced shell signals")
    u, t = both(["chldign"])
    eq(u, ("status -1 errno 10\n", 0), "untraced")
    eq(t, u, "traced SIGCHLD ignored")


def test_system_cancelled_kills_and_reaps_the_shell():
    """A thread in system("exec sleep 5") is cancelled after 0.2 s: the
    join gives PTHREAD_CANCELED, the program's SIGINT handler is back, no
    child is left to reap (ECHILD), the next system works, all well under
    5 s (held)."""
    start = time.monotonic()
    u, t = both(["cancel"])
    eq(u, ("cancelled 1, SIGINT ours 1, left -1 errno 10\nafter: 256 exit 1\n", 0), "untraced")
    eq(t, u, "traced")
    eq(time.monotonic() - start < 4, True, "cancel did not wait for the sleep")


def test_system_without_a_shell():
    """/usr/bin (so /bin/sh) hidden under an empty tmpfs in a mount
    namespace: system("exit 3") 32512 with errno ENOENT, system(NULL) 0
    (held). Needs root for unshare -m."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return
    exe = fixture()
    hide = ["unshare", "-m", "/bin/bash", "-c", 'mount -t tmpfs none /usr/bin && exec "$@"', "hide"]
    u = run(hide + [exe, "nosh"])
    eq(u.stdout, "status 32512 errno 2 null 0\n", "untraced")
    d = tmpdir()
    t = run(hide + [SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe, "nosh"])
    eq(t.stdout, u.stdout, "traced")


def test_clone_files_children_ending_normally_leave_no_descriptor():
    """clone(CLONE_FILES | SIGCHLD) children whose function returns 3,
    whose second thread calls exit(3), or whose main thread pthread_exits
    and the second returns: 0 descriptors gained in the parent (held)."""
    want = {"return": "0:300 1:300 2:300 \n", "thread_exit": "0:300 0:300 1:300 0:300 1:300 2:300 \n",
            "main_pthread_exit": "0:0 0:0 1:0 0:0 1:0 2:0 \n"}
    for how, statuses in want.items():
        u, t = both(["cfiles", how])
        eq(u, (statuses + f"{how}: descriptors gained 0\n", 0), f"untraced {how}")
        eq(t, u, f"traced {how}")


def cfiles_as_untraced(how, statuses, work_calls):
    """The fixture's cfiles mode `how` (3 CLONE_FILES children): untraced
    the children's statuses and 0 descriptors gained in the parent; traced
    the same, and each child's own log holds work_calls calls of work()."""
    want = (statuses + f"{how}: descriptors gained 0\n", 0)
    u = run([fixture(), "cfiles", how], check_rc=None)
    eq((u.stdout, u.returncode), want, f"untraced {how}")
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", fixture(), "cfiles", how], check_rc=None)
    eq((t.stdout, t.returncode), want, f"traced {how} (stderr {t.stderr[-2000:]!r})")
    logs = sorted(c for c in os.listdir(d) if c != "sf.log")
    calls = [count_calls(dump_events(os.path.join(d, c)))["work"] for c in logs]
    eq(calls, [work_calls] * 3, f"{how}: work() calls in each child's log {logs} (stderr {t.stderr[-2000:]!r})")


def test_clone_files_children_killed_leave_no_descriptor():
    """clone(CLONE_FILES | SIGCHLD) children that call work() and die by
    abort(), raise(SIGKILL), raise(SIGSEGV), or a second thread's abort().
    Untraced the parent's table gains 0 descriptors. Traced it gained 3
    for each route: each dead child's own log descriptor stayed open in
    the table it shared with the parent (a pool whose workers crash leaked
    one descriptor per crash, toward EMFILE). Such a child now holds its
    descriptor only while it writes; each child's log still has its
    work() calls (the second thread's too)."""
    cfiles_as_untraced("abort", "0:6 1:6 2:6 \n", 1)
    cfiles_as_untraced("kill", "0:9 1:9 2:9 \n", 1)
    cfiles_as_untraced("segv", "0:b 1:b 2:b \n", 1)
    cfiles_as_untraced("thread_abort", "0:6 1:6 2:6 \n", 2)


def test_clone_files_children_many_calls_then_killed():
    """Each of 3 CLONE_FILES children makes 1 + 2 x 20000 work() calls in
    two threads (slots and chunks well past the first, each opening the
    log again), then aborts: every call is in its log, no descriptor left
    in the parent's table, as untraced."""
    cfiles_as_untraced("many_abort", "0:6 1:6 2:6 \n", 40001)


def test_clone_files_child_dropping_root_keeps_recording():
    """CLONE_FILES children that setuid(65534) after their first call, then
    make 2 x 20000 calls and return 3: the log (root's, 0600) cannot be
    opened again as nobody, so each keeps its descriptor from the
    credential change on (closed at its return): every call recorded (3637
    of 40001 when it was given up after each use), no descriptor gained.
    Needs root."""
    if os.geteuid() != 0:
        return
    cfiles_as_untraced("drop_many", "0:300 1:300 2:300 \n", 40001)


def test_slow_environ_reader_during_popens():
    """After clearenv the program sets environ to its own arrays {REQ=i,
    ALSO=i} (8 of them) and calls popen("true") 300 times; a reader thread
    takes environ, waits 20 ms (a slow logger), then walks the array it
    took. Untraced: "torn 0 foreign 0": the array is the program's and
    never changes. Traced it was "torn 2 foreign 7" (one run): the reader
    took the runtime's ring array during popen's window, saw LD_PRELOAD
    and SFTRACE_ entries, and its first entry was rewritten to another
    request's value under it (the ring slot reused in place 4 popens
    later). The runtime's copy of glibc's popen now spawns the shell with
    an explicit environment: environ never changes."""
    exe = build_c("skep24v_envread", ["skep24v_envread.c"], libs=["-lpthread"])
    u = run([exe])
    # how many times the reader looked depends on the machine's load
    # (0 on a busy one); what it saw does not
    check(re.fullmatch(r"torn 0 foreign 0 \(looked \d+\)\n", u.stdout), f"untraced: {u.stdout!r}")
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe])
    check(re.fullmatch(r"torn 0 foreign 0 \(looked \d+\)\n", t.stdout), f"traced: {t.stdout!r}")


def test_libc_system_overlapping_the_wrapper_keeps_the_sigint_handler():
    """One thread calls libc's system (dlsym on dlopen("libc.so.6"): what a
    plugin loader, another preload's RTLD_NEXT or a RTLD_DEEPBIND library
    reaches) with "sleep 0.1"; 50 ms later another calls system("sleep
    0.3"). Untraced both are glibc's, one count of callers: the program's
    SIGINT handler is back after both. Traced the second was the
    runtime's, with a count of its own: it saved the SIG_IGN glibc's had
    set and put it back last: SIGINT stayed ignored for good (Ctrl-C and a
    graceful shutdown handler lost). With the tracer's variables in
    environ the wrapper goes on to glibc's: one count again (libc's code
    is no longer rewritten to jump to the runtime's)."""
    u, t = both(["libcsys"])
    eq(u, ("SIGINT after: handler 1 ignored 0 (0 0)\n", 0), "untraced")
    eq(t, u, "traced")


def cfiles_killed(n, how):
    """The cfiles_killed fixture's output: untraced, then traced."""
    exe = build_c("cfiles_killed", ["cfiles_killed.c"])
    want = f"killed {n} of {n}\ndescriptors as before\n"
    eq(run([exe, str(n), how]).stdout, want, "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe, str(n), how], check_rc=None)
    return t, want


def test_clone_files_children_killed_at_random_points_leave_no_descriptor():
    """300 clone(CLONE_FILES | SIGCHLD) children calling work() without
    end, each SIGKILLed after a random 0..3 ms: the parent's /proc/self/fd
    holds exactly what it held before, as untraced. It held 34 of the
    children's log descriptors while each child held its own for each use
    (its log's creation, a reopen, a chunk, a new slot) in the table it
    shares with its parent; a keeper thread with a table of its own now
    makes every use (docs/DESIGN.md)."""
    t, want = cfiles_killed(300, "run")
    eq((t.stdout, t.returncode), (want, 0), "traced")


def test_clone_files_children_dropping_root_then_killed_leave_no_descriptor():
    """As above, each child setuid(65534) after its first call (100
    children; needs root). It left 68: a child that changed credentials
    kept its descriptor between uses (it could not open its creator's 0600
    log again); the keeper follows the change and keeps it in its own
    table."""
    if os.geteuid() != 0:
        return
    t, want = cfiles_killed(100, "drop")
    eq((t.stdout, t.returncode), (want, 0), "traced")


def test_clone_files_child_unshares_a_user_namespace():
    """A CLONE_FILES child calls work(), unshare(CLONE_NEWUSER), work()
    again and returns 3. Untraced the unshare succeeds. With the child's
    keeper thread it failed with EINVAL (the kernel wants the process
    alone); the keeper now ends for the call and a new one is made after
    it, keeping the log's descriptor: both calls in the child's log, the
    parent's descriptors as before."""
    exe = build_c("cfiles_userns", ["cfiles_userns.c"])
    u = run([exe], check_rc=None)
    if "unshare(CLONE_NEWUSER) 0" not in u.stdout:
        return  # user namespaces not allowed here
    eq(u.stdout, "unshare(CLONE_NEWUSER) 0 errno 0\nstatus 300, descriptors as before\n", "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe], check_rc=None)
    eq((t.stdout, t.returncode), (u.stdout, 0), "traced")
    logs = sorted(c for c in os.listdir(d) if c != "sf.log")
    eq([count_calls(dump_events(os.path.join(d, c)))["work"] for c in logs], [2], f"work() in the child's log {logs}")
