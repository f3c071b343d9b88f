"""Skeptic 46b: the claims of the last stop on issues 24 and 25, tried with
programs of our own (tests/fixtures/skep46b_*).

- h25rwx: "a program's own text protections survive patching" (each pass
  after the program's code may have run reads /proc/self/maps).
- h25cred: "the writer and keepers follow every per-thread credential
  change".
- mend45: one /proc/self/maps walker for the three readers."""
import os
import shutil
import subprocess

import sfkit
from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, record, run, tmpdir


def _paused_resume(prog, args, log, env=None):
    """record --paused PROG ARGS; on the program's "ready PID" line runs
    `sftrace resume PID`, then sends the program a line. Returns
    (resume's CompletedProcess, program rc, stdout, stderr)."""
    p = subprocess.Popen([SFTRACE, "record", "--paused", "-o", log, "--", prog] + list(args),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    try:
        line = p.stdout.readline()
        check(line.startswith("ready "), f"no ready line: {line!r}")
        pid = int(line.split()[1])
        r = run([SFTRACE, "resume", str(pid)], check_rc=None, timeout=120)
        p.stdin.write("go\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return r, p.returncode, line + out, err


def test_preinit_rwx_page_survives_startup_patch():
    """skep46b_preinit_rwx.c: a preinit_array function (the executable's
    code, run before every library's constructor, the runtime's included)
    makes a page of the program's text rwx; main writes to it, then calls
    work() 3 times. Untraced: "prot rwxp / wrote 1 / calls 3", rc 0.
    Traced: the same, and work is recorded 3 times (held: the start-up
    patch leaves the page rwx)."""
    prog = build_c("skep46b_preinit_rwx", ["skep46b_preinit_rwx.c"])
    u = run([prog])
    eq(u.stdout, "prot rwxp\nwrote 1\ncalls 3\n", "untraced")
    p, log = record([prog])
    eq(p.stdout, u.stdout, "traced stdout")
    eq(count_calls(dump_events(log)).get("work", 0), 3, "work calls")


def test_chroot_without_proc_keeps_rwx_page_across_resume():
    """skep46b_chroot_rwx.c: makes a page of its text rwx, chroots into an
    empty directory (no /proc in it), says "ready PID", waits for a line,
    then writes to the page and calls work() 3 times. Untraced: "wrote 1 /
    calls 3", rc 0. Traced with --paused and `sftrace resume PID` while it
    waits: the patch pass cannot read /proc/self/maps in the chroot, puts
    the segment's r-x on the whole page range, and the write faults.
    Without the chroot (same program, same resume) the page stays rwx:
    the difference is the maps read alone."""
    prog = build_c("skep46b_chroot_rwx", ["skep46b_chroot_rwx.c"])
    empty = tmpdir()
    u = subprocess.run([prog, empty], input="go\n", capture_output=True, text=True, timeout=60)
    eq((u.returncode, u.stdout.splitlines()[1:]), (0, ["wrote 1", "calls 3"]), "untraced")
    # control: no chroot, same resume: held
    r, rc, out, err = _paused_resume(prog, [], os.path.join(tmpdir(), "a.log"))
    eq((r.returncode, rc, out.splitlines()[1:]), (0, 0, ["wrote 1", "calls 3"]), "traced, no chroot: " + err)
    log = os.path.join(tmpdir(), "b.log")
    r, rc, out, err = _paused_resume(prog, [empty], log)
    eq(r.returncode, 0, "resume: " + r.stderr)
    eq((rc, out.splitlines()[1:]), (0, ["wrote 1", "calls 3"]), "traced in a chroot without /proc: " + err.strip())
    eq(count_calls(dump_events(log)).get("work", 0), 3, "work calls")


def test_33_own_rwx_ranges_survive_resume():
    """skep46b_many_rwx.c N: keeps N separate pages of its text rwx (every
    other page of an area in .text), says "ready PID", waits for a line,
    then writes into each and calls work() 3 times. Untraced: "wrote N /
    calls 3", rc 0, for any N. Traced --paused with `sftrace resume` while
    it waits: N = 32 holds; N = 33 (one range more than the stack buffer
    keeps, OWN_MAX) loses the last page's protection."""
    prog = build_c("skep46b_many_rwx", ["skep46b_many_rwx.c"])
    for n in (32, 33):
        u = subprocess.run([prog, str(n)], input="go\n", capture_output=True, text=True, timeout=60)
        eq((u.returncode, u.stdout.splitlines()[1:]), (0, [f"wrote {n}", "calls 3"]), f"untraced {n}")
    r, rc, out, err = _paused_resume(prog, ["32"], os.path.join(tmpdir(), "a.log"))
    eq((r.returncode, rc, out.splitlines()[1:]), (0, 0, ["wrote 32", "calls 3"]), "traced, 32 ranges: " + err)
    r, rc, out, err = _paused_resume(prog, ["33"], os.path.join(tmpdir(), "b.log"))
    eq(r.returncode, 0, "resume: " + r.stderr)
    eq((rc, out.splitlines()[1:]), (0, ["wrote 33", "calls 3"]), "traced, 33 ranges: " + err.strip())


@sfkit.known_break(25, "Landlock's landlock_restrict_self (through syscall(), as every program must: glibc has "
                       "no wrapper) is a per-thread credential change the writer does not follow: a child "
                       "forked in the program's domain was refused ptrace-read access (/proc/PPID/task/TID/mem) "
                       "to 1 task of its parent traced, 0 untraced: a thread of the program outside its sandbox")
def test_landlock_restrict_self_followed_by_writer():
    """skep46b_landlock.c: NO_NEW_PRIVS, then a Landlock ruleset (handles
    MAKE_FIFO only) and landlock_restrict_self on its only thread; forks;
    the child, in the same domain, opens /proc/PPID/task/TID/mem for every
    task of its parent (Landlock refuses a domain ptrace access to tasks
    outside it) and prints how many were refused; the parent calls work()
    3 times. Untraced: "landlock ok / refused 0 / calls 3". Traced: the
    writer thread is outside the domain, "refused 1"."""
    prog = build_c("skep46b_landlock", ["skep46b_landlock.c"])
    u = run([prog], check_rc=None)
    if u.returncode == 77:
        raise sfkit.Skip("no Landlock here: " + u.stdout.strip())
    eq((u.returncode, u.stdout), (0, "landlock ok\nrefused 0\ncalls 3\n"), "untraced")
    p, log = record([prog])
    eq(p.stdout, u.stdout, "traced stdout")
    eq(count_calls(dump_events(log)).get("work", 0), 3, "work calls")


@sfkit.known_break(25, "a single-threaded program that installs a seccomp filter (prctl, or syscall(SYS_seccomp) "
                       "without TSYNC) is wholly filtered untraced; traced, the writer thread has 'Seccomp: 0' "
                       "in /proc/self/task (1 unfiltered task where untraced has 0; NoNewPrivs was followed)")
def test_seccomp_filter_has_no_unfiltered_thread():
    """skep46b_seccomp.c [x]: NO_NEW_PRIVS, a seccomp filter (uname ->
    EPERM) on its only thread through prctl() (no argument) or
    syscall(SYS_seccomp) (argument), calls work() 3 times, then counts the
    tasks in /proc/self/task whose status lacks "Seccomp: 2" and
    "NoNewPrivs: 1". Untraced: "unfiltered 0 / nnp_missing 0" both ways.
    Traced: the writer thread is a thread of the program outside its
    sandbox (the claim's own reason: a runtime thread left with what the
    program dropped, in memory the program can write, is a way back)."""
    prog = build_c("skep46b_seccomp", ["skep46b_seccomp.c"])
    want = "filter 0\nunfiltered 0\nnnp_missing 0\ncalls 3\n"
    for extra in ([], ["x"]):
        eq(run([prog] + extra).stdout, want, f"untraced {extra}")
    for extra in ([], ["x"]):
        p, log = record([prog] + extra)
        eq(count_calls(dump_events(log)).get("work", 0), 3, "work calls")
        eq(p.stdout, want, f"traced {extra}")


def _maps_opens_at_startup(prog, stack_limit, loader=()):
    """Opens of /proc/self/maps by the traced program before main's own
    first open of /proc/self/task (skep46b_seccomp.c opens it after its
    work() calls: everything before is start-up), by strace -f (the
    program's pid: the first that opens libsftrace.so), with RLIMIT_STACK
    stack_limit ("unlimited" or KiB); loader: a prefix such as the dynamic
    loader's path ("ld.so PROG"). The CI's ASan CLI runs under strace
    without LeakSanitizer (it cannot work under ptrace: rc 1 otherwise)."""
    d = tmpdir()
    trace = os.path.join(d, "st.txt")
    log = os.path.join(d, "sf.log")
    r = run(["sh", "-c", f'ulimit -s {stack_limit} && t="$0" s="$1" l="$2" && shift 2 && '
             'exec strace -f -qq -e trace=openat -o "$t" "$s" record -o "$l" -- "$@"',
             trace, SFTRACE, log] + list(loader) + [prog],
            env={"ASAN_OPTIONS": ":".join(o for o in (os.environ.get("ASAN_OPTIONS", ""), "detect_leaks=0") if o)})
    lines = open(trace).read().splitlines()
    pid = next(ln.split()[0] for ln in lines if "libsftrace.so" in ln)
    mine = [ln for ln in lines if ln.split()[0] == pid]
    end = next(i for i, ln in enumerate(mine) if '"/proc/self/task"' in ln)
    return r, sum(1 for ln in mine[:end] if "/proc/self/maps" in ln)


def test_no_maps_read_at_startup_unlimited_stack():
    """skep46b_seccomp.c (any small program): strace counts the traced
    program's opens of /proc/self/maps during a whole run that never reads
    maps itself and has no landing. Default stack limit: 0 (held).
    `ulimit -s unlimited` (common for Fortran codes, some build systems):
    1, at start-up."""
    if not shutil.which("strace"):
        raise sfkit.Skip("no strace")
    prog = build_c("skep46b_seccomp", ["skep46b_seccomp.c"])
    r, n = _maps_opens_at_startup(prog, 8192)
    eq(n, 0, "maps opens, 8 MiB stack")
    r, n = _maps_opens_at_startup(prog, "unlimited")
    eq(r.stdout.splitlines()[-1], "calls 3", "program ran")
    eq(n, 0, "maps opens, unlimited stack")


def test_longjmp_on_hand_switched_stack_in_chroot():
    """skep46b_altstack_jmp.c [DIR]: runs on_stack() on a stack of its own
    switched to by assembly (no makecontext, no sigaltstack: the runtime
    learns it from maps), optionally after chroot(DIR) into an empty
    directory (no /proc); there setjmp + deep(3..0) + longjmp, 3 times.
    Untraced: "rounds 3 / depth 12". Traced, with or without /proc: deep
    entered 12 times, 3 landings each "4 frames abandoned, depth 2 left",
    on_stack's and main's exits recorded (held: the landing needs no maps
    here)."""
    prog = build_c("skep46b_altstack_jmp", ["skep46b_altstack_jmp.c"])
    empty = tmpdir()
    for extra in ([], [empty]):
        eq(run([prog] + extra).stdout, "rounds 3\ndepth 12\n", f"untraced {extra}")
        p, log = record([prog] + extra)
        eq(p.stdout, "rounds 3\ndepth 12\n", f"traced {extra}")
        text = run([SFTRACE, "dump", log]).stdout
        ev = [" ".join(ln.split()[2:]) for ln in text.splitlines() if len(ln.split()) > 2 and ln.split()[0].isdigit()]
        eq(ev.count("ENTRY deep"), 12, f"deep entries {extra}")
        eq(ev.count("UNWIND 4 frames abandoned, depth 2 left"), 3, f"landings {extra}")
        eq([e for e in ev if e.startswith("EXIT")], ["EXIT on_stack", "EXIT work", "EXIT main"], f"exits {extra}")


@sfkit.known_break(25, "a program that drops root by the bare syscall instruction (as Go's runtime and other "
                       "libc-free code do: setgroups, setresgid, setresuid to 65534) leaves the writer "
                       "thread root: 2 credential sets and 1 task with uid 0 in /proc/self/task traced, "
                       "1 set and 0 untraced")
def test_raw_syscall_privilege_drop_followed():
    """skep46b_rawsetuid.c, as root: setgroups/setresgid/setresuid(65534)
    by inline `syscall` on its only thread, work() 3 times, then counts the
    distinct credential sets of its tasks and the tasks with uid 0.
    Untraced: "dropped 0 / sets 1 / root_tasks 0 / calls 3". Traced: the
    writer never saw the change (no libc function ran), "sets 2 /
    root_tasks 1"."""
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root")
    prog = build_c("skep46b_rawsetuid", ["skep46b_rawsetuid.c"])
    want = "dropped 0\nsets 1\nroot_tasks 0\ncalls 3\n"
    eq(run([prog]).stdout, want, "untraced")
    p, log = record([prog])
    eq(count_calls(dump_events(log)).get("work", 0), 3, "work calls")
    eq(p.stdout, want, "traced")


def test_setup_abi_keeps_program_text_protections():
    """skep46b_setup_rwx.c: makes a page of its text rwx and another
    PROT_NONE, then calls sftrace_setup(entry, exit, tail) (found with
    dlsym; three `ret`+15-nop slots in its own text), prints both pages'
    protections, writes to the rwx page, calls work() 3 times. Untraced
    (no sftrace_setup): "rwx rwxp / guard ---p / wrote 1 / calls 3".
    Traced: the setup call's slot pointing (arch/x86_64/patch.c,
    sf_arch_point_slot) gives the whole segment PROT_READ|PROT_EXEC."""
    prog = build_c("skep46b_setup_rwx", ["skep46b_setup_rwx.c"], libs=["-ldl"])
    want = "rwx rwxp\nguard ---p\nwrote 1\ncalls 3\n"
    eq(run([prog]).stdout, want, "untraced")
    p, log = record([prog], check_rc=None)
    eq((p.returncode, p.stdout), (0, want), "traced: " + p.stderr.strip())
    eq(count_calls(dump_events(log)).get("work", 0), 3, "work calls")


def test_landings_below_startup_stack_limit():
    """skep46b_deepstack.c: main raises RLIMIT_STACK to 512 MiB (gcc does
    so at start-up), then lands 3 longjmps at each of 12 depths from 4 MiB
    to 94 MiB of main's stack: all but the first two depths below where
    the start-up 8 MiB limit (the runtime's main-stack bounds) ended, so
    more than the 8 maps reads a thread is allowed (STACK_READS).
    Untraced: "landings 36 / frames 144012". Traced: the same output, 36
    UNWIND lines each "3 frames abandoned", depth N+5 -> N+2 at each depth N,
    0 lost (held)."""
    prog = build_c("skep46b_deepstack", ["skep46b_deepstack.c"])
    want = "landings 36\nframes 144012\n"
    eq(run([prog]).stdout, want, "untraced")
    p, log = record([prog])
    eq(p.stdout, want, "traced")
    text = run([SFTRACE, "dump", log]).stdout
    unw = [" ".join(ln.split()[3:]) for ln in text.splitlines() if " UNWIND " in ln]
    want_unw = [f"[depth {1005 + 2000 * k}] 3 frames abandoned, depth {1002 + 2000 * k} left"
                for k in range(12) for _ in range(3)]
    eq(unw, want_unw, "landings")
    check(" 0 lost " in text, "losses: " + text.splitlines()[-1])


def test_daemon_outliving_main_gets_record_keeper():
    """skep46b_outlive.c GO DONE: main forks a daemon D (setsid, stdio on
    /dev/null) and exits on a line from stdin; D waits for the file GO,
    drops to nobody (so it may not create files in root's 0700 log
    directory: its child's log must come from record's keeper), forks C,
    which calls work() 3 times, and writes "done STATUS" to DONE.
    Untraced: "done 0". Traced: record lives on until D and C have ended
    (it holds the keeper's name all along, so nobody else can take it),
    C's log, made by record's keeper, has work() 3 times (held). As root."""
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root")
    prog = build_c("skep46b_outlive", ["skep46b_outlive.c"])
    shared = tmpdir()
    os.chmod(shared, 0o1777)
    logdir = tmpdir()
    os.chmod(logdir, 0o700)
    go, done = os.path.join(shared, "go"), os.path.join(shared, "done")
    u = subprocess.run([prog, go, done], input="x\n", capture_output=True, text=True, timeout=60)
    check(u.stdout.startswith("daemon "), u.stdout)
    open(go, "w").close()
    for _ in range(600):
        if os.path.exists(done) and open(done).read():
            break
        subprocess.run(["sleep", "0.1"])
    eq(open(done).read(), "done 0\n", "untraced")
    os.unlink(go)
    os.unlink(done)
    log = os.path.join(logdir, "sf.log")
    p = subprocess.Popen([SFTRACE, "record", "-o", log, "--", prog, go, done], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        dpid = int(line.split()[1])
        p.stdin.write("x\n")
        p.stdin.flush()
        open(go, "w").close()
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    eq(p.returncode, 0, "record: " + err)
    eq(open(done).read(), "done 0\n", "traced")
    logs = sorted(f for f in os.listdir(logdir) if f != "sf.log" and f != f"sf.{dpid}.log")
    eq(len(logs), 1, f"C's log among {os.listdir(logdir)}")
    eq(count_calls(dump_events(os.path.join(logdir, logs[0]))).get("work", 0), 3, "C's work calls")


def test_no_maps_read_at_startup_through_loader():
    """skep46b_seccomp.c started as `/lib64/ld-linux-x86-64.so.2 PROG`
    under record, default stack limit: strace counts the program's opens
    of /proc/self/maps before main's own first read of /proc/self/task.
    Untraced: 0. Traced: 2."""
    if not shutil.which("strace"):
        raise sfkit.Skip("no strace")
    ldso = "/lib64/ld-linux-x86-64.so.2"
    if not os.path.exists(ldso):
        raise sfkit.Skip("no " + ldso)
    prog = build_c("skep46b_seccomp", ["skep46b_seccomp.c"])
    r, n = _maps_opens_at_startup(prog, 8192, loader=[ldso])
    eq(r.stdout.splitlines()[-1], "calls 3", "program ran")
    eq(n, 0, "maps opens before main, started through ld.so")


@sfkit.known_break(25, "a worker thread's own identity (syscall(SYS_setresuid, -1, 65534, -1), per thread, as "
                       "Samba's thread credentials) is followed by the writer, which keeps it after the worker "
                       "ended: 2 credential sets and 1 task with euid 65534 in /proc/self/task traced, where the "
                       "untraced process, main alone and root, has 1 set and 0")
def test_worker_thread_identity_not_kept_by_writer():
    """skep46b_thread_cred.c, as root: a worker thread switches its own
    effective uid to 65534 (raw per-thread setresuid through syscall()),
    calls work() and ends; main (root all along) calls work() twice, then
    counts its tasks' distinct credential sets and those with a non-zero
    euid. Untraced: "worker 0 / sets 1 / nonroot_tasks 0 / calls 3".
    Traced: the writer took the worker's identity ("in the program's
    order") and kept it: "sets 2 / nonroot_tasks 1". Following every
    thread's per-thread change gives the writer the identity of whichever
    thread changed last, not the process's."""
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root")
    prog = build_c("skep46b_thread_cred", ["skep46b_thread_cred.c"], libs=["-lpthread"])
    want = "worker 0\nsets 1\nnonroot_tasks 0\ncalls 3\n"
    eq(run([prog]).stdout, want, "untraced")
    p, log = record([prog])
    eq(count_calls(dump_events(log)).get("work", 0), 3, "work calls")
    eq(p.stdout, want, "traced")


def test_privsep_chroot_seccomp_keeps_rwx_page():
    """skep46b_privsep.c [DIR]: keeps a page of its text rwx (between
    instrumented functions: inside the sled pages' range), calls before()
    and after(), optionally chroots into DIR (empty: no /proc), installs a
    strict seccomp filter (write/exit/exit_group/rt_sigreturn, else EPERM),
    writes into the page and calls work() 3 times. Untraced: "ready /
    wrote 1 / calls 3", rc 0, both ways. Traced: no chroot, held (the
    filter stops tracing, the unpatch reads maps); in the chroot, SIGSEGV
    at the write. No resume or other user action: the daemon's own habits."""
    prog = build_c("skep46b_privsep", ["skep46b_privsep.c"])
    empty = tmpdir()
    want = "ready\nwrote 1\ncalls 3\n"
    for extra in ([], [empty]):
        eq(run([prog] + extra).stdout, want, f"untraced {extra}")
    p, log = record([prog], check_rc=None)
    eq((p.returncode, p.stdout), (0, want), "traced, no chroot: " + p.stderr.strip())
    p, log = record([prog, empty], check_rc=None)
    eq((p.returncode, p.stdout), (0, want), "traced in a chroot without /proc: " + p.stderr.strip())


if __name__ == "__main__":
    sfkit.main(globals())
