"""skepticS: claims of issues 24, 25, 28 and 29 tried on programs of our
own (tests/fixtures/skepS_*.c): what each program does untraced is what
it must do traced. Breaks still open are asserted as they should be and
say SKIP ("known break, issue N open: ...") while they fail.

Runs under tests/run.py, or alone: python3 tests/cases/test_skepticS.py."""
import os
import shutil
import subprocess
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import SFTRACE, Skip, build_c, check, eq, record, run, tmpdir  # noqa: E402


# --- claim 1 (issue 24): dladdr of a wrapped libc function ------------------

def _dladdr_lines(args=()):
    exe = build_c("skepS_dladdr", ["skepS_dladdr.c"], libs=["-ldl"])
    want = run([exe]).stdout.splitlines()
    p, _ = record([exe], args=["-q"] + list(args))
    return want, p.stdout.splitlines()


def _fields(line):
    name, rest = line.split(": ", 1)
    rest, plus1 = rest.split(" plus1: ")
    f = dict(kv.split("=", 1) for kv in rest.split())
    f.update(("plus1_" + k, v) for k, v in (kv.split("=", 1) for kv in plus1.split()))
    return name, f


def test_dladdr_saddr_is_the_address_asked():
    for args in ((), ("--alloc",)):
        want, got = _dladdr_lines(args)
        eq(len(got), len(want), f"lines {args}")
        bad = [_fields(g)[0] for w, g in zip(want, got) if _fields(w)[1]["saddr_is_addr"] != _fields(g)[1]["saddr_is_addr"]]
        eq(bad, [], f"functions whose dli_saddr != the address asked, traced {args}")


def test_dladdr_names_libc():
    for args in ((), ("--alloc",)):
        want, got = _dladdr_lines(args)
        for w, g in zip(want, got):
            n, fw = _fields(w)
            _, fg = _fields(g)
            for k in ("r", "file", "sym", "same_base_as_getpid", "lm", "sym_size", "sym_value_matches"):
                eq(fg[k], fw[k], f"{n} {k} {args}")


def test_dladdr_inside_wrapped_function():
    """dladdr(&system + 1), an address one byte into what the program calls
    system (a return address in a backtrace): traced it is the runtime's
    code, and dladdr names it as it is: libsftrace.so and the wrapper's
    name (libsftrace-alloc.so for malloc and free under --alloc), where
    untraced it is libc's. Asserted: exactly the wrapped functions differ,
    each named by the name the program called; every other function's
    answer is untraced's. Then a documented limit (README, "Supported
    platforms and known limits")."""
    wrapped = {"system", "popen", "close", "execve", "dup2", "posix_spawn", "dladdr"}
    for args in ((), ("--alloc",)):
        want, got = _dladdr_lines(args)
        eq(len(got), len(want), f"lines {args}")
        runtime = {n: "libsftrace.so" for n in wrapped}
        if args:
            runtime.update(malloc="libsftrace-alloc.so", free="libsftrace-alloc.so")
        for w, g in zip(want, got):
            n, fw = _fields(w)
            fg = _fields(g)[1]
            if n in runtime:
                eq((fg["plus1_file"], fg["plus1_sym"]), (runtime[n], n), f"{n}+1 traced {args}")
                eq(fw["plus1_file"], "libc.so.6", f"{n}+1 untraced")
            else:
                eq((fg["plus1_file"], fg["plus1_sym"]), (fw["plus1_file"], fw["plus1_sym"]), f"{n}+1 {args}")
    raise Skip("known limit, issue 24: an address inside a wrapped function (not its start) is the runtime's "
               "code, and dladdr names the object and function that hold it (libsftrace.so, the wrapper); "
               "naming libc's there would give a backtrace of the runtime's frames a libc symbol at an offset "
               "libc's function does not have")


def _mine():
    lib = build_c("libskepS_mine.so", ["skepS_mine.c"], shared=True, xray=False, libs=["-ldl"])
    exe = build_c("skepS_usemine", ["skepS_usemine.c"], libs=["-ldl"])
    want = run([exe], env={"LD_PRELOAD": lib}).stdout
    return lib, exe, want


def test_dladdr_with_users_preload_given_to_record():
    lib, exe, want = _mine()
    eq(want, "closes=10 dup2s=5 systems=1 close_in=libskepS_mine.so\n", "untraced")
    # record itself runs with the preload: the ASan CLI (CI) must not object to it coming first
    p, _ = record([exe], args=["-q"], env={"LD_PRELOAD": lib, "ASAN_OPTIONS": "verify_asan_link_order=0"})
    eq(p.stdout, want, "LD_PRELOAD around record")


def test_dladdr_with_users_preload_set_inside():
    lib, exe, want = _mine()
    p, _ = record(["env", "LD_PRELOAD=" + lib, exe], args=["-q"])
    eq(p.stdout, want, "LD_PRELOAD set by the command")


# --- claim 2 (issue 24): logs of sandboxed processes ------------------------

def _daemon():
    return build_c("skepS_daemon", ["skepS_daemon.c"])


def _sandbox_run(mode):
    """(untraced rc, traced rc, worker pid, log dir, record's stderr, the
    program's stderr) of skepS_daemon MODE; the program's stderr goes to a
    file of its own through sh (not instrumented: no log of its own)."""
    exe = _daemon()
    d = tmpdir()
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    want = run([exe, mode, empty], check_rc=None)
    logs = os.path.join(d, "logs")
    progerr = os.path.join(d, "progerr")
    p = run([SFTRACE, "record", "-q", "-o", os.path.join(logs, "sf.log"), "--", "sh", "-c",
             f'exec "$0" "$1" "$2" 2>"$3"', exe, mode, empty, progerr], check_rc=None)
    with open(progerr) as f:
        perr = f.read()
    return want, p, int(p.stdout.split()[0]), logs, perr


def _check_sandbox(mode):
    want, p, wpid, logs, perr = _sandbox_run(mode)
    eq(p.returncode, want.returncode, "exit status")
    eq(perr, "", "the program's stderr")
    log = os.path.join(logs, f"sf.{wpid}.log")
    check(os.path.exists(log), f"worker {wpid} log missing: {sorted(os.listdir(logs))}; record said {p.stderr!r}")
    st = os.stat(log)
    eq((st.st_uid, st.st_mode & 0o777), (os.getuid(), 0o600), "owner and mode")
    calls, _ = sfkit.report_calls(log)
    eq(sorted((n, c) for (tid, n), c in calls.items() if tid == wpid), [("leaf", 10), ("work", 1)],
       "the worker's calls")


def test_log_after_chroot_and_nobody():
    _check_sandbox("chroot")


def test_log_after_netns_chroot_and_nobody():
    # the keeper's abstract socket is in record's network namespace: the
    # parent's writer thread, still there, connects for the child before
    # the fork, and the child makes its log over that connection at once
    _check_sandbox("netns")


def test_log_after_netns_chroot_nobody_two_forks():
    # the child of the sandboxed process is out of record's network
    # namespace, and so is its keeper thread: it was handed a channel to
    # record's keeper at its fork (notes.c), keeps it, and asks over it
    # for its own children's
    _check_sandbox("netns2")


def test_log_after_netns_chroot_nobody_three_forks():
    _check_sandbox("netns3")


def test_no_loss_of_netns_grandchild():
    # the worker's log is made over its channel: record reports no loss
    want, p, wpid, logs, perr = _sandbox_run("netns3")
    eq(p.returncode, want.returncode, "exit status")
    eq(perr, "", "the program's stderr")
    check("wrote no log" not in p.stderr and "cannot create log" not in p.stderr, f"record said {p.stderr!r}")


def test_loss_of_clone_newnet_child_reaches_record():
    # a clone(CLONE_NEWNET) child has no thread in record's network
    # namespace and was handed no channel: the worker it forks, chrooted,
    # as nobody, can make no log and note nothing. Its line goes to its
    # family's shared page, and the top process's writer thread notes it.
    # The line names the program and the calls that failed: its own open
    # (in the new root) and its connect to record's keeper (issue 24).
    want, p, wpid, logs, perr = _sandbox_run("clonenet")
    eq(p.returncode, want.returncode, "exit status")
    eq(perr, "", "the program's stderr")
    eq(p.stderr, f"sftrace: pid {wpid} (skepS_daemon) wrote no log: cannot create log {logs}/sf.{wpid}.log "
                 "(openat: No such file or directory), and record's keeper could not be reached: connect: "
                 "Connection refused\n", "record's line")


def test_log_after_nofile_limit_chroot_and_nobody():
    _check_sandbox("nofile")


def _clonevm(mode):
    """(untraced stdout, traced stdout, the program's stderr traced,
    record's stderr, leaf2's calls in the logs, the logs)."""
    exe = build_c("skepS_clonevm", ["skepS_clonevm.c"])
    want = run([exe, mode]).stdout
    d = tmpdir()
    progerr = os.path.join(d, "progerr")
    logs = os.path.join(d, "logs")
    p = run([SFTRACE, "record", "-q", "-o", os.path.join(logs, "sf.log"), "--", "sh", "-c",
             'exec "$0" "$1" 2>"$2"', exe, mode, progerr])
    with open(progerr) as f:
        perr = f.read()
    files = sorted(os.path.join(logs, n) for n in os.listdir(logs))
    calls, _ = sfkit.report_calls(files)
    leaf2 = sum(c for (t, n), c in calls.items() if n == "leaf2")
    return want, p.stdout, perr, p.stderr, leaf2, files


def _reported(err, what):
    """record's lines about clone(CLONE_VM): exactly one, naming WHAT."""
    lines = [ln for ln in err.splitlines() if "without CLONE_THREAD" in ln]
    eq(len(lines), 1, f"record's clone(CLONE_VM) lines: {err!r}")
    check(lines[0].startswith("sftrace: pid ") and what in lines[0], f"record's line: {lines[0]!r}")


def test_clone_vm_says_nothing_on_program_stderr():
    """clone(CLONE_VM) without CLONE_THREAD: the child (1000 calls of leaf2)
    shares its parent's thread storage, so that thread stops recording.
    Nothing on the program's stderr; record says it, once; the log holds
    the parent's 3 calls before the clone and none of the child's."""
    want, got, perr, err, leaf2, files = _clonevm("vm")
    eq(got, want, "stdout")
    eq(perr, "", "the program's stderr")
    _reported(err, "clone(CLONE_VM) without CLONE_THREAD: the calling thread's calls are no longer recorded")
    eq(len(files), 1, "logs")
    eq(leaf2, 3, "leaf2 calls in the log (the parent's before the clone)")


def test_clone_vm_settls_succeeds():
    """clone(CLONE_VM|CLONE_SETTLS) without CLONE_THREAD runs as untraced
    (it failed with EINVAL); its child is not recorded, record says so."""
    want, got, perr, err, _, files = _clonevm("settls")
    eq(got, want, "stdout")
    eq(perr, "", "the program's stderr")
    _reported(err, "CLONE_SETTLS) without CLONE_THREAD: the child's calls are not recorded")
    eq(len(files), 1, "logs")


def test_clone_vm_settls_copied_block_not_merged():
    """CLONE_SETTLS with a thread block copied from the parent's (the
    runtime's part holds the parent's cursor into its slot): the child's
    1000 calls of leaf2 never land in the parent's log, which holds the
    parent's 3 + 4 exactly (without the runtime's reset of the child's
    block: 1003, the parent's later ones overwritten)."""
    if os.uname().machine != "x86_64":
        raise Skip("the fixture copies an x86-64 TLS block")
    want, got, perr, err, leaf2, files = _clonevm("copy")
    eq(got, want, "stdout")
    eq(perr, "", "the program's stderr")
    _reported(err, "CLONE_SETTLS) without CLONE_THREAD: the child's calls are not recorded")
    eq(len(files), 1, "logs")
    eq(leaf2, 7, "leaf2 calls in the log (the parent's)")


def test_clone_vm_raw_syscall_fresh_block_not_merged():
    """The same child made by a raw clone system call (CLONE_VM |
    CLONE_SETTLS, no glibc wrapper to see it) on a fresh, zeroed block:
    its first event registers it, in another process than the runtime's
    (a pid check then): not recorded, counted, and record says so once;
    the parent's log holds its 3 + 4 calls of leaf2 exactly."""
    if os.uname().machine != "x86_64":
        raise Skip("the fixture's raw clone is x86-64")
    want, got, perr, err, leaf2, files = _clonevm("raw")
    eq(got, want, "stdout")
    eq(perr, "", "the program's stderr")
    _reported(err, "(a system call of the program's): threads not recorded: 1")
    eq(len(files), 1, "logs")
    eq(leaf2, 7, "leaf2 calls in the log (the parent's)")


def test_clone_vm_without_record_says_it_on_stderr():
    """Without record (SFTRACE_OUTPUT_FILE and the preload alone) there is
    no note for record to print: the line goes to stderr, as DESIGN says."""
    exe = build_c("skepS_clonevm", ["skepS_clonevm.c"])
    d = tmpdir()
    env = dict(os.environ, LD_PRELOAD=sfkit.RUNTIME, SFTRACE_OUTPUT_FILE=os.path.join(d, "sf.log"))
    env.pop("SFTRACE_NOTES_DIR", None)
    p = subprocess.run([exe, "settls"], env=env, capture_output=True, text=True)
    eq(p.returncode, 0, "status")
    eq(p.stderr, "sftrace: clone(CLONE_VM | CLONE_SETTLS) without CLONE_THREAD: the child's calls are not recorded "
       "(it shares this process's memory)\n", "stderr")


def _seccomp(mode, n, args=("-q",)):
    """(untraced, traced CompletedProcess, log) of skepS_seccomp N MODE."""
    exe = build_c("skepS_seccomp_modes", ["skepS_seccomp.c"], libs=["-lpthread"])
    cmd = [exe, str(n)] + ([mode] if mode else [])
    want = run(cmd, check_rc=None)
    eq(want.returncode, 0, f"untraced {mode}: {want.stderr}")
    p, log = record(cmd, args=list(args), check_rc=None)
    return want, p, log


def _leaf_calls(log):
    calls, _ = sfkit.report_calls(log)
    return sorted(c for (tid, name), c in calls.items() if name == "leaf")


def test_seccomp_sandbox_survives():
    # an allow-list without rt_sigprocmask: tracing stops for good just
    # before the filter (the runtime's wrappers see it coming), the
    # program runs on untraced; never killed
    for n in (10, 1000000):
        want, p, _ = _seccomp("", n)
        eq((p.returncode, p.stdout), (want.returncode, want.stdout), f"n={n}: status and output")


def test_seccomp_stop_is_reported():
    _, p, log = _seccomp("", 100000, args=())
    check("tracing stopped at a seccomp filter (it refuses rt_sigprocmask)" in p.stderr, f"record said {p.stderr!r}")
    eq(_leaf_calls(log), [10], "leaf calls: those before the filter")


def test_seccomp_openssh_list_keeps_tracing():
    # OpenSSH's preauth list allows what the event path needs (futex by
    # operation, rt_sigprocmask, anonymous mmap) but not prctl: the
    # thread's name is not refreshed, every call is recorded
    want, p, log = _seccomp("ssh", 100000, args=())
    eq((p.returncode, p.stdout), (want.returncode, want.stdout), "status and output")
    check("seccomp" not in p.stderr, f"record said {p.stderr!r}")
    eq(_leaf_calls(log), [100010], "leaf calls")


def test_seccomp_thread_made_after_filter_is_traced():
    want, p, log = _seccomp("thread", 100000, args=())
    eq((p.returncode, p.stdout), (want.returncode, want.stdout), "status and output")
    eq(_leaf_calls(log), [10, 100000], "leaf calls per thread: main before the filter, the new thread after")


def test_seccomp_tsync_and_fork_survive():
    # TSYNC reaches the writer thread (it leaves first); a child forked
    # under the filter would have to write its log itself (open, pwrite:
    # refused): tracing stops before the filter in both
    for mode in ("tsync", "fork"):
        want, p, log = _seccomp(mode, 100000, args=())
        eq((p.returncode, p.stdout), (want.returncode, want.stdout), f"{mode}: status and output")
        check("tracing stopped at a seccomp filter" in p.stderr, f"{mode}: record said {p.stderr!r}")
        eq(_leaf_calls(log), [10], f"{mode}: leaf calls")


def test_daemon_double_fork_closes_all_chroot_nobody():
    exe = _daemon()
    d = tmpdir()
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    pidf = os.path.join(d, "pid")
    logs = os.path.join(d, "logs")
    p = run([SFTRACE, "record", "-q", "-o", os.path.join(logs, "sf.log"), "--", exe, "daemon", empty, pidf])
    with open(pidf) as f:
        wpid, rc = f.read().split()
    eq(rc, "17", "worker's work() as seen by the daemon")
    eq(p.stderr, "", "record's stderr")
    log = os.path.join(logs, f"sf.{wpid}.log")
    check(os.path.exists(log), f"worker log missing: {sorted(os.listdir(logs))}")
    st = os.stat(log)
    eq((st.st_uid, st.st_mode & 0o777), (os.getuid(), 0o600), "owner and mode")


# --- claim 3 (issue 24): resume/pause/snapshot send no signal ----------------

def _quiet(mode, record_args, steps):
    """Runs skepS_quiet MODE under record RECORD_ARGS; STEPS are "w" (the
    program runs work()) or a command (resume, pause, snapshot, with its
    options: "snapshot -t 0.2") sent to it.
    Returns ([(step, rc, out+err)], program's last line, record's rc, log dir)."""
    exe = build_c("skepS_quiet", ["skepS_quiet.c"], libs=["-lpthread"])
    d = tmpdir()
    p = subprocess.Popen([SFTRACE, "record", "-q"] + list(record_args) + ["-o", os.path.join(d, "sf.log"), "--",
                          exe, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        ready = p.stdout.readline().split()
        eq(ready[:1], ["ready"], "first line")
        pid = ready[1]
        if mode == "mainexit":  # wait until the main thread is gone (a zombie leader)
            import time
            while True:
                with open(f"/proc/{pid}/task/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break
                time.sleep(0.01)
        done = []
        for s in steps:
            if s == "w":
                p.stdin.write("w\n")
                p.stdin.flush()
                eq(p.stdout.readline().split()[:1], ["ok"], "work's answer")
                continue
            r = run([SFTRACE] + s.split() + [pid], check_rc=None, timeout=60)
            done.append((s, r.returncode, r.stdout + r.stderr))
        out, err = p.communicate("q\n", timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
    return done, out.strip().splitlines()[-1], p.returncode, d


def test_no_signal_sleep_signalfd_sigtimedwait():
    for mode in ("sleep", "signalfd", "sigwait", "closeall"):
        done, last, rc, d = _quiet(mode, ["--ring", "1M", "--paused"],
                                   ["resume", "w", "snapshot", "pause", "snapshot", "resume", "w", "snapshot"])
        eq([x[1] for x in done], [0] * 6, f"{mode}: command statuses {done}")
        eq(last, "signals=0 woken=0 last=0", f"{mode}: what the program noticed")
        eq(rc, 0, f"{mode}: record's status")
        snaps = sorted(f for f in os.listdir(d) if ".snap." in f)
        eq(len(snaps), 3, f"{mode}: one snapshot per request: {snaps}")


def test_main_exit_refuses_resume_and_keeps_snapshots():
    done, last, rc, d = _quiet("mainexit", ["--ring", "1M", "--paused"], ["resume", "pause"])
    eq([x[1] for x in done], [1, 1], f"statuses {done}")
    check(all("main thread has ended" in x[2] for x in done), f"messages {done}")
    eq(last, "signals=0 woken=0 last=0", "what the program noticed")
    # No thread hands a slot off before the end: each snapshot command gives
    # up (after 0.2 s, not the default 10), the request stays, and the
    # process writes both as it ends.
    done, last, rc, d = _quiet("mainexit", ["--ring", "1M"], ["w", "snapshot -t 0.2", "w", "snapshot -t 0.2"])
    eq(last, "signals=0 woken=0 last=0", "what the program noticed")
    check(all(x[1] == 0 or "the request stays" in x[2] for x in done), f"snapshot commands {done}")
    snaps = sorted(f for f in os.listdir(d) if ".snap." in f)
    eq(len(snaps), 2, f"one snapshot per request: {snaps}")


def test_concurrent_snapshot_requests_each_get_their_own():
    """8 `sftrace snapshot PID` at once: 8 snapshots were written, but the
    commands reported the newest file (sf.snap.N.8.log by 4 of them, .2-.4
    by none). Each request's number is now in the snapshot that answers it,
    and each command reports its own."""
    exe = build_c("skepS_quiet", ["skepS_quiet.c"], libs=["-lpthread"])
    d = tmpdir()
    p = subprocess.Popen([SFTRACE, "record", "-q", "--ring", "1M", "-o", os.path.join(d, "sf.log"), "--", exe, "sleep"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        pid = p.stdout.readline().split()[1]
        p.stdin.write("w\n")
        p.stdin.flush()
        p.stdout.readline()
        qs = [subprocess.Popen([SFTRACE, "snapshot", pid], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(8)]
        res = [(q.wait(timeout=60), q.stdout.read().strip()) for q in qs]
        out, _ = p.communicate("q\n", timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
    eq(out.strip().splitlines()[-1], "signals=0 woken=0 last=0", "what the program noticed")
    eq([r[0] for r in res], [0] * 8, f"statuses {res}")
    eq(len([f for f in os.listdir(d) if ".snap." in f]), 8, "snapshots written")
    names = sorted(os.path.basename(r[1]) for r in res)
    eq(len(set(names)), 8, f"distinct snapshots reported {names}")


# --- claim 4 (issue 25): throws and longjmps while tracing is switched ------

def test_throws_and_longjmps_across_resume_pause_and_snapshots():
    """skepS_throws (C++, PIE, -O2): 4 threads throw through 30 frames and
    longjmp through 30 more in a loop while record --paused gets 20
    resume/pause pairs, then --ring gets 20 snapshots. Untraced every catch
    sees depth 30: "bad=0 good>0=1"."""
    exe = build_c("skepS_throws", ["skepS_throws.cc"], flags=["-fpie", "-pie"], libs=["-lpthread"],
                  compiler="clang++")
    for args, cmds in ((["--paused"], ("resume", "pause")), (["--ring", "256K"], ("snapshot",))):
        d = tmpdir()
        p = subprocess.Popen([SFTRACE, "record", "-q"] + args + ["-o", os.path.join(d, "sf.log"), "--", exe],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            pid = p.stdout.readline().split()[1]
            for i in range(20):
                for c in cmds:
                    r = run([SFTRACE, c, pid], check_rc=None, timeout=60)
                    eq(r.returncode, 0, f"{args} {c} {i}: {r.stderr[-300:]}")
            out, err = p.communicate("", timeout=120)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait()
        eq((p.returncode, out.strip()), (0, "bad=0 good>0=1"), f"{args}: status and output")


# --- claim 5 (issue 29): values with --trigger and inside --within ----------

def _tail():
    return build_c("skepS_tail", ["skepS_tail.c"])


def test_args_for_trigger_function_in_snapshot():
    p, log = record([_tail()], args=["-q", "--auto-args", "--ring", "1M", "--trigger", "trig"])
    eq(p.stdout, "494\n", "output")
    snap = log.replace("sf.log", f"sf.snap.{_snap_pid(log)}.1.log")
    calls = [c.strip() for c in sfkit.call_column(sfkit.replay_text(snap))]
    check("trig(1, 2);" in calls or any(c.startswith("trig(1, 2)") for c in calls), f"trig's values: {calls}")


def _snap_pid(log):
    d = os.path.dirname(log)
    snaps = [f for f in os.listdir(d) if ".snap." in f]
    check(snaps, f"no snapshot in {sorted(os.listdir(d))}")
    return snaps[0].split(".")[2]


def test_args_inside_within_window_with_tail_calls():
    p, log = record([_tail()], args=["-q", "-a", "--filter-regex", "^win$", "--within"])
    eq(p.stdout, "494\n", "output")
    calls = [c.strip() for c in sfkit.call_column(sfkit.replay_text(log))]
    for want in ("g2(1, 2, 3, -1, 2, 7) = <tail call>; /* tail call from trig */",
                 "g3(7, 2, -1, 3, 2, 1) = 36; /* tail call from g2 */", "gd(1.500000, 1.000000, 1) = 2.500000;"):
        check(want in calls, f"{want!r} not in {calls}")


def _trigger_run(trig, regex, within, extra=()):
    """record --ring 1M --trigger TRIG --filter-regex REGEX [--within] of
    skepS_tail: (snapshot requests, snapshot files, stderr)."""
    import re
    p, log = record([_tail()], args=["--ring", "1M", "--trigger", trig, *extra, "--filter-regex", regex]
                    + (["--within"] if within else []))
    eq(p.stdout, "494\n", "output")
    d = os.path.dirname(log)
    snaps = sorted(os.path.join(d, f) for f in os.listdir(d) if ".snap." in f)
    m = re.search(r"(\d+) snapshot requests?: (\d+) written", p.stderr)
    # record prints the requests only when one was not written (cmd_record.c
    # print_snapshot_requests): without the line, every request has its file
    asked, written = (int(m.group(1)), int(m.group(2))) if m else (len(snaps), len(snaps))
    eq(written, len(snaps), f"--trigger {trig}: snapshots said written vs files ({p.stderr[-400:]!r})")
    return asked, snaps, p.stderr


def test_trigger_fires_inside_within_window():
    """A --trigger function fires under --within exactly as without it,
    whether it opens the window (win) or runs inside one (trig, and g2,
    tail-called from trig and called through fp): one request per call
    in a window. skepS_tail calls win 3 times; win calls trig once and g2
    (through fp) once, trig tail-calls g2; main calls g2 once more,
    outside any window, where a trigger is not recorded and asks for
    nothing (DESIGN.md, Triggers): 6 requests for g2, not 7. Each
    snapshot's header names the trigger function."""
    for trig, fn, want in (("win", "win", 3), ("trig", "trig", 3), ("win>1ns", "win", 3), ("g2", "g2", 6)):
        for extra in ((), ("-a",)):
            asked, snaps, err = _trigger_run(trig, "^win$", True, extra)
            eq(asked, want, f"--trigger {trig} {extra} --within: snapshot requests ({err[-400:]!r})")
            check(snaps, f"--trigger {trig} {extra} with --within: no snapshot; record said {err[-400:]!r}")
            head = run([SFTRACE, "dump", snaps[0]]).stdout
            why = "a slow trigger call" if ">" in trig else "a trigger's entry"
            check(f"taken on {why} while the process ran: {fn} " in head,
                  f"--trigger {trig} {extra}: the snapshot's header: {[ln for ln in head.splitlines() if 'snapshot' in ln]}")
    # The same triggers without --within (win and trig both selected): the
    # same requests, and g2's seventh call, outside win, asks too.
    for trig, want in (("win", 3), ("trig", 3), ("win>1ns", 3), ("g2", 7)):
        asked, _, err = _trigger_run(trig, "^(win|trig|g2)$", False)
        eq(asked, want, f"--trigger {trig} without --within: snapshot requests ({err[-400:]!r})")


def test_trigger_outside_within_window_asks_nothing():
    """Under --within a trigger function called outside every window is
    not recorded, so it asks for no snapshot (gd: called by win, the
    window here is trig); the window's own function still fires."""
    for extra in ((), ("-a",)):
        asked, snaps, err = _trigger_run("gd", "^trig$", True, extra)
        eq((asked, snaps), (0, []), f"--trigger gd {extra} outside the window ({err[-400:]!r})")
        asked, snaps, err = _trigger_run("gd>1ns", "^trig$", True, extra)
        eq((asked, snaps), (0, []), f"--trigger gd>1ns {extra} outside the window ({err[-400:]!r})")
        asked, snaps, err = _trigger_run("trig", "^trig$", True, extra)
        eq(asked, 3, f"--trigger trig {extra} opening the window ({err[-400:]!r})")


# --- claim 6 (issue 28): --ring under churn, snapshots and signals ----------

def test_ring_churn_exit_mid_wave_under_snapshot_flood():
    """skepS_churn: waves of 8 threads, a fork every 16th wave, a SIGUSR1
    handler running instrumented code; a thread sends SIGUSR1, SIGUSR2 and
    `sftrace snapshot` in a loop while the program exit(4)s with 8
    threads running. Untraced: "exit mid-wave usr1=1", status 4. Ten
    runs; none may hang."""
    import threading
    exe = build_c("skepS_churn", ["skepS_churn.c"], libs=["-lpthread"])
    for k in range(10):
        d = tmpdir()
        p = subprocess.Popen([SFTRACE, "record", "-q", "--ring", "128K", "--max-snapshots", "1000", "--trigger", "leaf",
                              "-o", os.path.join(d, "sf.log"), "--", exe], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        pid = int(p.stdout.readline().split()[1])
        stop = []
        sent = []

        def flood():
            while not stop:
                try:
                    os.kill(pid, 10)
                    os.kill(pid, 12)
                except ProcessLookupError:
                    return
                run([SFTRACE, "snapshot", str(pid)], check_rc=None, timeout=60)
                sent.append(1)

        th = threading.Thread(target=flood)
        th.start()
        while len(sent) < 3 and p.poll() is None:
            th.join(0.05)
        p.stdin.write("x")
        p.stdin.flush()
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            out, err = "hang", ""
        finally:
            stop.append(1)
            th.join()
        eq((p.returncode, out.strip()), (4, "exit mid-wave usr1=1"), f"run {k}: status and output (stderr {err[-300:]!r})")


if __name__ == "__main__":
    sfkit.main(globals())
