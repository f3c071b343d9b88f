"""Skeptic's cases for issue 24 (third pass, "Round-3 claims": the
optimistic open of src/runtime/fdguard.c, the fork/clone/spawn claims),
written with programs of their own against main 95c141e. Each compares
what a program sees traced with what it sees untraced (the first rule).
Cases marked FAILS ON MAIN are known breaks kept behind a Skip; the others
show a claim holding under an attack and must pass."""
import glob
import os
import resource

from sfkit import SFTRACE, Skip, build_c, check, count_calls, dump_events, eq, record, run, tmpdir


def _vfork():
    return build_c("skep24c_vfork", ["skep24c_vfork.c"])


def _logs(log):
    """Every log record wrote next to log (sf.log, sf.PID.log, ...), sorted."""
    return sorted(glob.glob(os.path.join(os.path.dirname(log), "sf*.log")))


def _vfork_case(mode):
    exe = _vfork()
    eq(run([exe, str(mode)]).stdout, "child status 0\n", "untraced output")
    p, log = record([exe, str(mode)])
    eq(p.stdout, "child status 0\n", "traced output")
    return p, log


def test_skep24c_glibc_vfork_and_clone_vm_vfork_child_stay_out_of_parent_log():
    # HOLDS: a vfork child (glibc vfork(), or clone() with CLONE_VM|CLONE_VFORK
    # on its own stack) that runs instrumented code before _exit leaves the
    # parent's trace exact (main 1, parent_work 100, no child_* call). Its
    # own calls are not recorded (the claim: the caller is suppressed).
    for mode in (0, 3):
        p, log = _vfork_case(mode)
        eq(_logs(log), [log], f"mode {mode}: logs")
        eq(dict(count_calls(dump_events(log))), {"main": 1, "parent_work": 100}, f"mode {mode}: parent's calls")


def test_skep24c_syscall_vfork_child_writes_into_parent_log():
    # FAILS ON MAIN: a vfork made through glibc's syscall(): mode 1
    # syscall(SYS_clone, CLONE_VM|CLONE_VFORK|SIGCHLD, 0, ...), mode 2
    # syscall(SYS_vfork). The child runs child_setup (7 child_work calls)
    # and _exits. Untraced and traced print "child status 0".
    #   build/sftrace record -o D/sf.log -- build/fixtures/skep24c_vfork 1
    # Observed (varies run to run): one log; the parent's holds the
    # child's calls under the parent's thread (dump: child_setup 1,
    # child_work 7 between the parent's calls; some runs report
    # child_setup 2, child_work 14 and only 50 of 100 parent_work, with
    # record saying the parent "did not exit normally ... 2 calls left
    # open" and info "0 lost"). Expected: the parent's trace exact (main 1,
    # parent_work 100, nothing of the child's), as with glibc's vfork. Claims: "clone()
    # with CLONE_VM|CLONE_VFORK: caller suppressed until it resumes",
    # "syscall(SYS_clone/...) children each get their own log", issue 24
    # "never merged into another process's log". hooks.c's syscall() only
    # treats clone without CLONE_VM/CLONE_VFORK as a fork; SYS_vfork and
    # CLONE_VM|CLONE_VFORK go through as raw calls with no suppression.
    for mode in (1, 2):
        p, log = _vfork_case(mode)
        eq(dict(count_calls(dump_events(log))), {"main": 1, "parent_work": 100}, f"mode {mode}: parent's calls")
        check_no_abnormal(p, mode)


def check_no_abnormal(p, mode):
    eq("did not exit normally" in p.stderr, False, f"mode {mode}: record's summary calls the parent abnormal")


def test_skep24c_syscall_clone_vfork_without_vm_child_gets_no_log():
    # FAILS ON MAIN: syscall(SYS_clone, CLONE_VFORK|SIGCHLD, 0, ...) (mode 4)
    # and syscall(SYS_clone3, {.flags = CLONE_VFORK, .exit_signal =
    # SIGCHLD}) (mode 5): a child with its own copy of memory (no CLONE_VM),
    # which calls child_setup (1) and child_work (7) then _exits.
    #   build/sftrace record -o D/sf.log -- build/fixtures/skep24c_vfork 4
    # Observed: one log (the parent's, exact); the child's 8 calls are in
    # no log and nothing says so. Expected (claim "syscall(SYS_clone/
    # SYS_fork/clone3) children each get their own log", issue 24 "every
    # new process gets its own log, however it was made"): a second log
    # with child_setup 1, child_work 7. fork_like() in hooks.c refuses any
    # flags with CLONE_VFORK, though without CLONE_VM the child is a fork.
    for mode in (4, 5):
        p, log = _vfork_case(mode)
        logs = _logs(log)
        eq(len(logs), 2, f"mode {mode}: logs")
        eq(dict(count_calls(dump_events(log))), {"main": 1, "parent_work": 100}, f"mode {mode}: parent's calls")
        child = [l for l in logs if l != log][0]
        eq(dict(count_calls(dump_events(child))), {"child_setup": 1, "child_work": 7}, f"mode {mode}: child's calls")


def _nofile(n):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return apply


def test_skep24c_raw_close_leaves_program_fd_unclosable():
    # FAILS ON MAIN: with RLIMIT_NOFILE 64, a program makes 100 calls (the
    # log is created at 63), closes everything with its own system call
    # instruction (close_range(3, ~0U, 0), as an io_uring close or a static
    # helper would), opens /dev/null until EMFILE (61 files, 3..63), then
    # fcntl(F_GETFD)s and closes each.
    #   prlimit --nofile=64 build/sftrace record -o D/sf.log -- build/fixtures/skep24c_rawclose
    # Untraced: "opened 61 last 63, fcntl failed 0, close failed 0".
    # Traced: "close(63): Bad file descriptor" and "fcntl failed 1, close
    # failed 1": the guard still names 63 as the runtime's (stale until the
    # next chunk write), so the program's own file at 63 cannot be closed
    # (it stays open for good; a pipe's write end there would never give
    # its reader EOF) and fcntl calls it not open. The documented limit is
    # only the fstat->pwritev window, not the program losing its own fd.
    exe = build_c("skep24c_rawclose", ["skep24c_rawclose.c"])
    import subprocess
    want = subprocess.run([exe], capture_output=True, text=True, preexec_fn=_nofile(64)).stdout
    eq(want, "opened 61 last 63, fcntl failed 0, close failed 0\n", "untraced output")
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = subprocess.run([SFTRACE, "record", "-o", log, "--", exe], capture_output=True, text=True,
                       preexec_fn=_nofile(64))
    eq(p.returncode, 0, "record's exit status")
    eq(p.stdout, want, "traced output")
    eq(count_calls(dump_events(log))["work"], 200, "work calls")


def test_skep24c_clone_files_child_dup2_loop_never_hits_parent_log():
    # HOLDS: a clone(CLONE_FILES|SIGCHLD) child (own memory, shared table)
    # dup2s its victim file over every number 900..1023 in a loop while the
    # parent makes 300,000 calls; the victim stays empty and every call is
    # recorded (the parent finds its log replaced and opens it again).
    exe = build_c("skep24c_clonefiles", ["skep24c_clonefiles.c"])
    d = tmpdir()
    victim = os.path.join(d, "victim")
    p, log = record([exe, victim], out=os.path.join(d, "out", "sf.log"))
    eq(p.stdout, "victim bytes 0\n", "traced output")
    eq(os.path.getsize(victim), 0, "victim size")
    eq(count_calls(dump_events(log))["work"], 300000, "parent's work calls")


def test_skep24c_dup2_loop_over_low_numbers_during_snapshots():
    # HOLDS: one thread dup2s a pipe's write end over 3..12 again and again
    # (checking each number holds it right after), while the main thread asks
    # for 200 ring snapshots: every dup2 lands, no number holds another
    # file, no runtime copy of the pipe is left (the read end sees EOF once
    # the program closes its copies), 5 descriptors open at the end as
    # untraced (what the harness passed in), and snapshots are written.
    exe = build_c("skep24c_snapdup", ["skep24c_snapdup.c"], libs=["-lpthread"])
    want = run([exe, "3"]).stdout
    eq(want.splitlines()[0], "lost 0 wrong 0 eof yes", "untraced output")
    p, log = record([exe, "3"], args=["--ring", "1M"])
    eq(p.stdout, want, "traced output")
    snaps = glob.glob(os.path.join(os.path.dirname(log), "sf.snap.*.log"))
    eq(len(snaps) > 0, True, "snapshots written")


def test_skep24c_daemon_double_fork_close_all_drop_to_nobody():
    # HOLDS: daemon(3) by hand: fork, setsid, fork, chdir /, close 0..1023,
    # open /dev/null as 0 and dup(0) as 1 and 2 (relying on lowest-free),
    # setuid nobody, write its own file, fork a worker. record waits for the
    # grandchild; the daemon's file is exactly what it wrote; three logs
    # with exact calls (the middle child makes no instrumented call after
    # the fork and writes none).
    exe = build_c("skep24c_daemon", ["skep24c_daemon.c"])
    d = tmpdir()
    os.chmod(d, 0o1777)
    out = os.path.join(d, "out")
    logdir = os.path.join(d, "logs")
    os.mkdir(logdir)
    os.chmod(logdir, 0o777)
    p, log = record([exe, out], out=os.path.join(logdir, "sf.log"))
    with open(out) as f:
        eq(f.read(), "daemon ok fds 012 fd 3 uid 65534\nworker 0\n", "daemon's file")
    logs = _logs(log)
    eq(len(logs), 3, "logs")
    got = sorted(tuple(sorted(count_calls(dump_events(l)).items())) for l in logs)
    eq(got, sorted([(("main", 1), ("work", 1)), (("redirect", 1), ("work", 1000)), (("work", 500), ("worker", 1))]),
       "calls per process")


def test_skep24c_exec_chain_with_fork_children_leaks_no_descriptor():
    # HOLDS: a program that execs itself 20 times; each generation counts
    # its descriptors before its first instrumented call (main is
    # xray_never_instrument), makes 10 calls and forks a child making 3.
    # Output identical untraced/traced (no runtime descriptor survives an
    # exec); 42 logs, each with its exact calls.
    exe = build_c("skep24c_execchain", ["skep24c_execchain.c"])
    want = run([exe]).stdout
    eq(len(want.splitlines()), 21, "generations untraced")
    p, log = record([exe])
    eq(p.stdout, want, "traced output")
    logs = _logs(log)
    eq(len(logs), 42, "logs")
    got = sorted(count_calls(dump_events(l))["work"] for l in logs)
    eq(got, [3] * 21 + [10] * 21, "work calls per log")


def test_skep24c_program_close_of_its_own_fd_fails_while_runtime_claims_it():
    # FAILS ON MAIN: a thread loops close_range(3, 12, 0); fd = open(
    # "/dev/null"); close(fd), counting closes of its own fd that fail,
    # while the main thread asks for ring snapshots (raise SIGUSR2, 600
    # or 1000 times; each one makes the writer thread open a file).
    #   build/sftrace record --ring 1M --max-snapshots 1000 -o D/sf.log -- build/fixtures/skep24c_snapclose 1000
    # Untraced: "close failed 0". Traced, 5 runs of 1000: "close failed"
    # 11, 9, 19, 2, 16 (6 runs of 600: 0, 0, 2, 8, 1, 4). The runtime
    # opens N (lowest free), the program's
    # close_range closes N before the runtime claims it, the program's
    # open gets N, the runtime claims N (sf_fd_adopt): the program's
    # close(N) of its own descriptor then fails with EBADF and closes
    # nothing (the file stays open) until the runtime's check sees N is not
    # its file. Claim (round 3): "close/dup/fcntl by the program on the
    # log's number give EBADF"; here it is the program's own number. Once
    # in ~800 snapshots the same race also cost a snapshot: "sftrace:
    # cannot write snapshot D/sf.snap.PID.87.log: error 9" (and "error 9"
    # where other messages say "Bad file descriptor").
    exe = build_c("skep24c_snapclose", ["skep24c_snapclose.c"], libs=["-lpthread"])
    eq(run([exe, "1000"]).stdout, "close failed 0\n", "untraced output")
    for _ in range(3):
        p, log = record([exe, "1000"], args=["--ring", "1M", "--max-snapshots", "1000"])
        eq(p.stdout, "close failed 0\n", "traced output")
        eq([l for l in p.stderr.splitlines() if "cannot write snapshot" in l], [], "snapshot failures")


def _setuid_case(name):
    exe = build_c(name, ["skep24c_setuid.c"], flags=["-DRAW_SETID"] if "raw" in name else [])
    eq(run([exe]).stdout, "child 0\n", "untraced output")
    p, log = record([exe])
    eq(p.stdout, "child 0\n", "traced output")
    return p, log


def test_skep24c_glibc_setresuid_child_creates_its_log_first():
    # HOLDS: a fork child that drops to nobody with glibc's setresgid/
    # setresuid and then makes 5 calls gets its log (root's, created before
    # the change) with child_work 5; the parent's has work 3.
    p, log = _setuid_case("skep24c_glibcsetuid")
    logs = _logs(log)
    eq(len(logs), 2, "logs")
    got = sorted(tuple(sorted(count_calls(dump_events(l)).items())) for l in logs)
    eq(got, [(("child_work", 5),), (("main", 1), ("work", 3))], "calls per process")


def test_skep24c_syscall_setresuid_child_loses_its_log():
    # FAILS ON MAIN: the same child dropping through syscall(SYS_setresgid)
    # and syscall(SYS_setresuid) (per-thread credentials, as Samba does to
    # avoid glibc's broadcast), log dir root's 0755:
    #   build/sftrace record -o D/sf.log -- build/fixtures/skep24c_rawsetuid (tests/fixtures/skep24c_setuid.c -DRAW_SETID)
    # Observed: one log (the parent's); the child's 5 calls are lost; the
    # child says "sftrace: cannot create log D/sf.log: Permission denied"
    # (the parent's name, not sf.PID.log), and record prints no "pid N
    # wrote no log" line. Expected (claim: "setuid/setgid/setreuid/
    # setresuid ... are wrapped: a process with instrumented code creates
    # its log before the credential change"; hooks.c's syscall() wraps
    # fork-like and descriptor calls only): a second log with child_work 5.
    p, log = _setuid_case("skep24c_rawsetuid")
    logs = _logs(log)
    eq(len(logs), 2, "logs")
    got = sorted(tuple(sorted(count_calls(dump_events(l)).items())) for l in logs)
    eq(got, [(("child_work", 5),), (("main", 1), ("work", 3))], "calls per process")


def test_skep24c_thread_raw_setresuid_log_made_with_the_process_credentials():
    # The main thread alone drops to nobody with a setresuid system call
    # instruction of its own (not glibc's, not syscall(): the runtime wraps
    # that) before any traced code (main is not instrumented), then makes
    # 3 calls;
    # record's directory is root's 0700:
    #   build/sftrace record --writer thread -o D/sf.log -- build/fixtures/skep24c_rawthreadcred
    # With a writer thread the log is made by the writer (its descriptor
    # table is its own), with the process's credentials as glibc last set
    # them for every thread: root's, so the log exists (owned by root) and
    # holds work 3. Without one (--writer sync, as main in every mode) the
    # thread may not make it as nobody ("cannot create log D/sf.log:
    # Permission denied" and no log, once): record's keeper makes it and
    # hands it over (docs/DESIGN.md, "Who creates the log"), owned by root
    # too, with work 3.
    if os.uname().machine != "x86_64":
        raise Skip("the fixture's system call instruction is x86-64's")
    exe = build_c("skep24c_rawthreadcred", ["skep24c_rawthreadcred.c"])
    eq(run([exe]).stdout, "uid 65534\n", "untraced output")
    p, log = record([exe], args=["--writer", "thread"])
    eq(p.stdout, "uid 65534\n", "traced output (writer)")
    eq(_logs(log), [log], "logs (writer)")
    eq(os.stat(log).st_uid, 0, "the log's owner (writer)")
    eq(sorted(count_calls(dump_events(log)).items()), [("work", 3)], "calls (writer)")
    p, log = record([exe], args=["--writer", "sync"])
    eq(p.stdout, "uid 65534\n", "traced output (sync)")
    eq(_logs(log), [log], "logs (sync)")
    eq((os.stat(log).st_uid, os.stat(log).st_mode & 0o777), (0, 0o600), "the log's owner, mode (sync)")
    eq(sorted(count_calls(dump_events(log)).items()), [("work", 3)], "calls (sync)")
    check("cannot create log" not in p.stderr, p.stderr)


def test_skep24c_raw_close_then_dup2_keeps_a_pipe_open():
    # FAILS ON MAIN: RLIMIT_NOFILE 64; after 100 calls (log at 63) the
    # program closes everything with its own system call instruction, makes
    # a pipe, fills the table with /dev/null up to 62, puts a copy of the
    # pipe's write end at 63 (fcntl F_DUPFD 63), frees 62, dup2s /dev/null
    # over 63, closes its write end and reads the pipe.
    #   prlimit --nofile=64 build/sftrace record -o D/sf.log -- build/fixtures/skep24c_rawpipe
    # Untraced: "F_DUPFD 63, dup2 63, read 0 (EOF)". Traced: "read: no EOF
    # after 3 s" (exit 1; without the program's alarm it hangs for good):
    # the guard still names 63 as the log, so the dup2 wrapper "moves the
    # log" first, F_DUPFD_CLOEXEC of the program's pipe end to 62, and
    # keeps that copy. Claims: "dup2/dup3 onto it first move the log high";
    # documented limit for raw system calls is only the fstat->pwritev
    # window, not a program descriptor duplicated and kept.
    exe = build_c("skep24c_rawpipe", ["skep24c_rawpipe.c"])
    import subprocess
    want = subprocess.run([exe], capture_output=True, text=True, preexec_fn=_nofile(64)).stdout
    eq(want, "F_DUPFD 63, dup2 63, read 0 (EOF)\n", "untraced output")
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = subprocess.run([SFTRACE, "record", "-o", log, "--", exe], capture_output=True, text=True,
                       preexec_fn=_nofile(64), timeout=60)
    eq(p.stdout, want, "traced output")
    eq(p.returncode, 0, "record's exit status")
    eq(count_calls(dump_events(log))["work"], 200, "work calls")


def test_skep24c_fork_during_dup2_loop_leaves_no_log_fd_in_children():
    # HOLDS: one thread dup2s /dev/null over every number 900..1023 in a
    # loop (the runtime moves the log each time it is hit) while another
    # forks 300 children; no child (none runs instrumented code) holds a
    # descriptor of the parent's log after fork returns.
    exe = build_c("skep24c_forkdup", ["skep24c_forkdup.c"], libs=["-lpthread"])
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p, _ = record([exe, log], out=log)
    eq(p.stdout, "children holding the parent's log: 0\n", "traced output")
    eq(_logs(log), [log], "logs")
