"""Nothing the tracer did not create is trusted (issue 24, items 2-4): the
runtime's files in /tmp as another user's, the ring signal, FIFOs where a
file is read, a program that ignores SIGCHLD, the filter child after a
chroot, and the lifetime of record's private directory (descendants that
outlive the command, record killed)."""
import glob
import os
import shutil
import signal
import stat
import subprocess
import time

from sfkit import (FIXBUILD, RUNTIME, SFTRACE, build_c, calls_fixture, check, check_nesting, count_calls,
                   dump_events, eq, record, run, tmpdir)

CALLS = {"leaf": 60, "middle": 20, "outer": 10, "recurse": 51, "tail_caller": 5, "tail_callee": 5,
         "thread_work": 8, "tleaf": 8000, "lib_add": 7, "lib_inner": 7, "deep": 21, "crash_here": 1, "main": 1}
NOBODY = 65534
HANG = 20  # seconds: a FIFO that blocks fails the case instead of hanging CI


def trust_prog():
    return build_c("trust_prog", ["trust_prog.c"], libs=["-ldl"])


def plugin():
    return build_c("libplugin.so", ["plugin.c"], shared=True)


def counts(log):
    events = dump_events(log)
    eq(check_nesting(events), {}, "frames left open")
    return dict(count_calls(events))


def shared_tmp():
    """A directory like /tmp: world-writable and sticky."""
    d = tmpdir()
    os.chmod(d, 0o1777)
    return d


def as_nobody(fn):
    """Runs fn() in a forked child that has become uid/gid nobody."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            fn()
            code = 0
        finally:
            os._exit(code)
    _, st = os.waitpid(pid, 0)
    eq(os.waitstatus_to_exitcode(st), 0, "the other user's setup")


def run_gated(argv, env, prepare, stderr_path):
    """Forks the program, lets prepare(pid) run (the attack, knowing the
    pid), then execs it. Returns (exit code, stdout)."""
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(w)
            os.close(out_r)
            os.read(r, 1)
            os.dup2(out_w, 1)
            fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 2)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(r)
    os.close(out_w)
    prepare(pid)
    os.write(w, b"x")
    os.close(w)
    out = b""
    while True:
        chunk = os.read(out_r, 65536)
        if not chunk:
            break
        out += chunk
    os.close(out_r)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st), out.decode()


def runtime_env(**kw):
    env = dict(os.environ, LD_PRELOAD=RUNTIME)
    env.update(kw)
    return env


# ---- /tmp as another user's ----

def test_notes_dir_taken_by_another_user_is_not_written():
    """Another user recreates the notes directory with a symlink named after
    the traced process's pid, to a root-owned file: nothing is appended to
    it, the program runs as without the tracer."""
    exe = calls_fixture()
    d = shared_tmp()
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.chmod(victim, 0o644)
    notes = os.path.join(d, "sftrace-notes-abc123")
    as_nobody(lambda: os.mkdir(notes, 0o777))

    def attack(pid):
        as_nobody(lambda: os.symlink(victim, os.path.join(notes, str(pid))))

    err = os.path.join(d, "err")
    env = runtime_env(SFTRACE_OUTPUT_FILE=os.path.join(d, "sf.log"), SFTRACE_NOTES_DIR=notes,
                      SFTRACE_FILTER=os.path.join(d, "missing.filter"))
    rc, out = run_gated([exe], env, attack, err)
    eq(rc, 0, "exit status")
    check("calls ok 21" in out, out)
    eq(open(victim).read(), "precious\n", "the root-owned file")
    eq(os.stat(victim).st_uid, 0, "owner")
    eq(open(err).read().splitlines(), [
        f"sftrace: notes directory not used: {notes}: not a private directory of this user (owner or mode)",
        f"sftrace: cannot read filter {d}/missing.filter: no such file"], "stderr")


def test_empty_budget_file_does_not_kill_the_program():
    """An empty budget file (another user's, or our own) made the program
    die of SIGBUS when it was mapped; now it is refused and the run goes
    on with every call recorded."""
    exe = calls_fixture()
    d = shared_tmp()
    theirs = os.path.join(d, "sftrace-notes-xyz789")

    def make():
        os.mkdir(theirs, 0o777)
        open(os.path.join(theirs, ".budget"), "w").close()

    as_nobody(make)
    mine = os.path.join(d, "mine")
    os.mkdir(mine, 0o700)
    open(os.path.join(mine, ".budget"), "w").close()
    for budget, why in [(os.path.join(theirs, ".budget"), "not a private file of this user (owner, mode or links)"),
                        (os.path.join(mine, ".budget"), "too short")]:
        log = os.path.join(d, "sf.log")
        p = run([exe], env=runtime_env(SFTRACE_OUTPUT_FILE=log, SFTRACE_BUDGET_FILE=budget))
        check("calls ok 21" in p.stdout, p.stdout)
        eq(p.stderr.splitlines(), [f"sftrace: cannot use the size budget {budget}: {why}"], "stderr")
        eq(counts(log), CALLS, "calls")
        os.unlink(log)
        eq(os.path.getsize(budget), 0, "budget file untouched")


def test_triggers_file_of_another_user_is_refused():
    exe = calls_fixture()
    d = shared_tmp()
    trig = os.path.join(d, "triggers")

    def make():
        with open(trig, "w") as f:
            f.write(f"sftrace-filter 1\nobject - {exe}\n0x1000 0 outer\n")

    as_nobody(make)
    log = os.path.join(d, "sf.log")
    p = run([exe], env=runtime_env(SFTRACE_OUTPUT_FILE=log, SFTRACE_RING=str(1 << 20), SFTRACE_TRIGGERS=trig))
    check("calls ok 21" in p.stdout, p.stdout)
    eq(p.stderr, f"sftrace: cannot read triggers {trig}: not a private file of this user (owner, mode or links)\n",
       "stderr")


def test_merged_filter_of_another_user_is_refused():
    """record's merged filter lives in its private directory; one that
    another user put at that name is not loaded (no tracing without it)."""
    exe = calls_fixture()
    d = shared_tmp()
    notes = os.path.join(d, "sftrace-notes-m3rg3d")
    filt = os.path.join(notes, "merged.filter")
    good = os.path.join(d, "good.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", "^outer$", "-o", good])
    text = open(good).read()

    def make():
        os.mkdir(notes, 0o755)
        with open(filt, "w") as f:
            f.write(text)

    as_nobody(make)
    log = os.path.join(d, "sf.log")
    p = run([exe], env=runtime_env(SFTRACE_OUTPUT_FILE=log, SFTRACE_NOTES_DIR=notes, SFTRACE_FILTER=filt))
    check("calls ok 21" in p.stdout, p.stdout)
    eq(p.stderr.splitlines(), [
        f"sftrace: notes directory not used: {notes}: not a private directory of this user (owner or mode)",
        f"sftrace: cannot read filter {filt}: not a private file of this user (owner, mode or links)"], "stderr")
    check(not os.path.exists(log), "not traced")


# ---- lifetime of record's private directory ----

def notes_dirs(d):
    return sorted(glob.glob(os.path.join(d, "sftrace-notes-*")))


def test_descendant_outliving_the_command_keeps_the_merged_filter():
    """A daemon's grandchild execs a traced program after the command has
    exited: record waits for it, its merged filter (two -f files, one per
    object) is still there, and the private directory is gone when record
    returns."""
    exe = calls_fixture()
    prog = trust_prog()
    d = tmpdir()
    f1, f2 = os.path.join(d, "a.filter"), os.path.join(d, "b.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", "^outer$", "-o", f1])
    run([SFTRACE, "filter", "-q", "-p", os.path.join(FIXBUILD, "libcalls.so"), "-r", "^lib_inner$", "-o", f2])
    out = os.path.join(d, "out")
    os.mkdir(out)
    log = os.path.join(out, "sf.log")
    p = run([SFTRACE, "record", "-o", log, "-f", f1, "-f", f2, "--", prog, "daemon", exe],
            env={"TMPDIR": d}, timeout=60)
    logs = sorted(f for f in os.listdir(out) if f != "sf.recorded.filter")
    check("sf.recorded.filter" in os.listdir(out), "record keeps the merged filter next to the logs")
    eq(len(logs), 1, f"one log (the grandchild's; trust_prog's own calls are filtered out): {logs}")
    eq(counts(os.path.join(out, logs[0])), {"outer": 10, "lib_inner": 7}, "the grandchild's calls, filtered")
    check("calls ok 21" in p.stdout, p.stdout)
    check(os.path.join(out, logs[0]) in p.stderr, f"record lists the grandchild's log: {p.stderr}")
    check("cannot read filter" not in p.stderr, p.stderr)
    eq(notes_dirs(d), [], "private directory removed")


def test_record_killed_leaves_nothing_behind():
    """record is SIGKILLed while the program runs: the program keeps its
    files and finishes its log, and the private directory goes when it
    exits."""
    prog = trust_prog()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    go = os.path.join(d, "go")
    rec = subprocess.Popen([SFTRACE, "record", "-o", log, "--max-size", "100M", "--", prog, "waitfile", go],
                           env=dict(os.environ, TMPDIR=d), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(2000):
            if notes_dirs(d) and os.path.exists(log):
                break
            time.sleep(0.01)
        dirs = notes_dirs(d)
        eq(len(dirs), 1, "the private directory while the program runs")
        eq(stat.S_IMODE(os.stat(dirs[0]).st_mode), 0o711, "its mode (others may only open a file handed to them by name)")
        rec.kill()
        rec.wait()
        time.sleep(0.2)
        eq(notes_dirs(d), dirs, "kept while the program runs")
        open(go, "w").close()
        for _ in range(3000):
            if not notes_dirs(d):
                break
            time.sleep(0.01)
        eq(notes_dirs(d), [], "removed after the program exited")
    finally:
        if rec.poll() is None:
            rec.kill()
    # The directory goes only after the last process exited: the log is whole.
    eq(counts(log), {"work": 12, "main": 1}, "the program's calls")


def test_command_gets_the_shells_sigint():
    """record ignores ^C while it waits; the command it runs does not."""
    prog = trust_prog()
    p, _ = record([prog, "sigint"])
    eq(p.stdout, "sigint default\n", "SIGINT disposition in the command")


# ---- the ring signal ----

def test_ring_signal_refuses_fault_signals():
    d = tmpdir()
    ran = os.path.join(d, "ran")
    for name in ["SEGV", "SIGBUS", "ILL", "FPE", "TRAP", "SYS", "KILL", "STOP", "11", "PIPE", "TERM", "INT", "CHLD"]:
        p = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--ring", "1M", "--ring-signal", name, "--",
                 "sh", "-c", f"touch {ran}"], check_rc=None)
        eq(p.returncode, 2, f"{name}: exit status")
        sig = "SEGV" if name == "11" else name.replace("SIG", "")
        eq(p.stderr, f"sftrace: error: --ring-signal: SIG{sig} cannot ask for snapshots (its default action is "
                     "the program's: a fault would loop, PIPE or TERM would no longer end it); use USR1, USR2 or a "
                     "real-time signal by number (e.g. 40)\n", name)
        check(not os.path.exists(ran), f"{name}: the program never ran")
    eq(sorted(os.listdir(d)), [], "nothing written")


def test_runtime_refuses_a_fault_ring_signal():
    exe = calls_fixture()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = run([exe], env=runtime_env(SFTRACE_OUTPUT_FILE=log, SFTRACE_RING=str(1 << 20), SFTRACE_RING_SIGNAL="11"))
    check("calls ok 21" in p.stdout, p.stdout)
    eq(p.stderr, "sftrace: SFTRACE_RING_SIGNAL must be USR1, USR2 or a real-time signal: 11\n", "stderr")
    eq(os.listdir(d), [], "not traced")


# ---- FIFOs where a file is read ----

def fifo(d, name):
    path = os.path.join(d, name)
    os.mkfifo(path)
    return path


def test_fifo_as_object_filter_or_log_is_refused():
    exe = calls_fixture()
    p, log = record([exe])
    d = tmpdir()
    obj = fifo(d, "calls")  # the object's name, so --symbol applies to it
    for cmd in (["report", "--symbol", obj, log], ["convert", "--symbol", obj, log, "-o", os.path.join(d, "x.json")]):
        p = run([SFTRACE] + cmd, check_rc=1, timeout=HANG)
        eq(p.stderr, f"sftrace: error: cannot symbolize {exe} with --symbol {obj}: {obj}: not a regular file\n",
           cmd[0])
    p = run([SFTRACE, "filter", "-p", obj, "-r", "x", "-o", os.path.join(d, "o.filter")], check_rc=1, timeout=HANG)
    eq(p.stderr, f"sftrace: error: {obj}: not a regular file\n", "filter -p FIFO")
    filt = fifo(d, "f.filter")
    p = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "-f", filt, "--", exe], check_rc=1, timeout=HANG)
    eq(p.stderr, f"sftrace: error: filter {filt}: not a regular file\n", "record -f FIFO")
    p = run([SFTRACE, "report", fifo(d, "x.log")], check_rc=1, timeout=HANG)
    check("not a regular file" in p.stderr, p.stderr)
    eq(sorted(os.listdir(d)), ["calls", "f.filter", "x.log"], "nothing written")


def test_fifo_named_like_a_log_does_not_hang_record_q():
    exe = calls_fixture()
    d = tmpdir()
    log = os.path.join(d, "q.log")
    sib = os.path.join(d, "q.4242.log")
    p = run([SFTRACE, "record", "-q", "-o", log, "--", "sh", "-c", f"mkfifo {sib} && {exe}"], timeout=HANG)
    check("calls ok 21" in p.stdout, p.stdout)
    check(f"{sib}: unreadable" in p.stderr and "not a regular file" in p.stderr, p.stderr)
    eq(counts(log), CALLS, "calls")


def test_fifo_as_runtime_filter_or_triggers():
    exe = calls_fixture()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    filt = fifo(d, "f.filter")
    p = run([exe], env=runtime_env(SFTRACE_OUTPUT_FILE=log, SFTRACE_FILTER=filt), timeout=HANG)
    check("calls ok 21" in p.stdout, p.stdout)
    eq(p.stderr, f"sftrace: cannot read filter {filt}: not a regular file\n", "SFTRACE_FILTER FIFO")
    check(not os.path.exists(log), "not traced without its filter")
    trig = fifo(d, "triggers")
    p = run([exe], env=runtime_env(SFTRACE_OUTPUT_FILE=log, SFTRACE_RING=str(1 << 20), SFTRACE_TRIGGERS=trig),
            timeout=HANG)
    check("calls ok 21" in p.stdout, p.stdout)
    eq(p.stderr, f"sftrace: cannot read triggers {trig}: not a regular file\n", "SFTRACE_TRIGGERS FIFO")


# ---- the filter child ----

def test_program_ignoring_sigchld_gets_its_filter():
    prog, lib = trust_prog(), plugin()
    p, log = record([prog, "sigign", lib], args=["--filter-regex", "^plugin_fn$"])
    eq(p.stdout, "sum 11\n", "program output")
    check("could not make the filter" not in p.stderr, p.stderr)
    eq(counts(log), {"plugin_fn": 2}, "calls")


def test_filter_child_not_run_after_chroot():
    """After a chroot SFTRACE_CLI's path names a file of the new root: it
    is not run (here it would create /pwned)."""
    prog, lib = trust_prog(), plugin()
    d = tmpdir()
    root = os.path.join(d, "root")
    os.mkdir(root)
    shutil.copy(lib, os.path.join(root, "plugin.so"))
    src = os.path.join(d, "fake.c")
    with open(src, "w") as f:
        f.write('#include <fcntl.h>\nint main(void) { return open("/pwned", O_CREAT | O_WRONLY, 0644) < 0; }\n')
    cli = os.path.realpath(SFTRACE)
    os.makedirs(os.path.dirname(root + cli))
    run(["gcc", "-static", "-O1", "-o", root + cli, src])
    p, _ = record([prog, "chroot", root, "/plugin.so"], args=["--filter-regex", "^plugin_fn$"])
    eq(p.stdout, "sum 11\n", "program output")
    check("sftrace: not running sftrace filter for /plugin.so: the program changed its root directory (chroot); "
          "the object stays untraced" in p.stderr, p.stderr)
    check(not os.path.exists(os.path.join(root, "pwned")), "the chroot's binary never ran")


def test_filter_child_starts_clean():
    """The filter child gets the environment the program started with (not
    what it set later), no descriptor but 0-2, every signal at its default
    and unblocked. SFTRACE_CLI is a script here that records what it got."""
    prog, lib = trust_prog(), plugin()
    d = tmpdir()
    seen = os.path.join(d, "seen")
    cli = os.path.join(d, "cli.sh")
    with open(cli, "w") as f:
        f.write(f"#!/bin/sh\nexec 3>{seen}\nenv | sort >&3\nls /proc/self/fd >&3\n"
                f"grep -E '^Sig(Ign|Blk)' /proc/self/status >&3\nexit 1\n")
    os.chmod(cli, 0o755)
    filters = os.path.join(d, "filters")
    os.mkdir(filters)
    env = {"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": "/start", "LD_PRELOAD": RUNTIME,
           "SFTRACE_OUTPUT_FILE": os.path.join(d, "sf.log"), "SFTRACE_FILTER_REGEX": "^plugin_fn$",
           "SFTRACE_FILTER_DIR": filters, "SFTRACE_CLI": cli}
    p = subprocess.run([prog, "latestate", lib], env=env, capture_output=True, text=True, timeout=HANG)
    eq(p.stdout, "sum 11\n", "program output")
    lines = open(seen).read().splitlines()
    env_lines = [l for l in lines if "=" in l and not l.startswith(("PWD=", "SHLVL=", "_="))]
    eq(env_lines, ["LD_LIBRARY_PATH=/start", f"PATH={os.environ['PATH']}"], "environment")
    fds = [l for l in lines if l.isdigit()]
    eq(fds, ["0", "1", "2", "3", "4"], "descriptors (3: the script's output, 4: ls's own directory; no 9)")
    eq([l for l in lines if l.startswith("Sig")], ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"],
       "signals")


def test_exec_after_chroot_preloads_nothing_from_the_new_root():
    """A program chroots and execs a child with an environment of its own:
    the runtime's path inside the new root is someone else's file, so no
    LD_PRELOAD is added (here the file there would create /pwned)."""
    prog = trust_prog()
    d = tmpdir()
    root = os.path.join(d, "root")
    os.mkdir(root)
    fake, bare = os.path.join(d, "fake.c"), os.path.join(d, "bare.c")
    with open(fake, "w") as f:
        f.write('#include <fcntl.h>\n__attribute__((constructor)) static void pwn(void) '
                '{ open("/pwned", O_CREAT | O_WRONLY, 0644); }\n')
    with open(bare, "w") as f:
        f.write("int main(void) { return 0; }\n")
    lib = os.path.realpath(RUNTIME)
    os.makedirs(os.path.dirname(root + lib))
    run(["gcc", "-shared", "-fPIC", "-O1", "-o", root + lib, fake])
    run(["gcc", "-O1", "-o", os.path.join(root, "prog"), bare])
    for dep in ("/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6"):
        os.makedirs(os.path.dirname(root + dep), exist_ok=True)
        shutil.copy(dep, root + dep)
    p, _ = record([prog, "chrootexec", root])
    check(not os.path.exists(os.path.join(root, "pwned")), "nothing preloaded from the new root")
    eq(p.returncode, 0, "exit status")
