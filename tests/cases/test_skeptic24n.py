"""Skeptic round 24n (issues 24 and 25) on the integ branch: popen streams
of glibc's popen and of the runtime's copy closed in each other's later
children, signal state of system()/popen() children, exit statuses when the
leader ends first (plain, --ring, --paused), a C++ plugin dlmopen'd into a
namespace of its own. Each traced run is compared with the same program
untraced (glibc 2.36, Debian 12)."""
import os
import re

from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, run, run_each, tmpdir


def logs_in(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def traced(cmd, args=(), check_rc=0, env=None):
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log")] + list(args) + ["--"] + cmd,
            check_rc=check_rc, env=env)
    return t, d


# --- popen streams of glibc's and of the copy --------------------------------

def test_popen_streams_of_glibc_and_copy_closed_in_each_others_children():
    """A glibc popen stream open while the copy (environ = NULL) runs a
    later popen child, and a copy's stream while glibc's runs one: the
    earlier stream's descriptor is closed in the later popen child (open
    in a system() child, as glibc's system does not close them). Held:
    identical untraced and traced."""
    exe = build_c("skep24n_popen", ["skep24n_popen.c"])
    want = ("glibc stream, copy child: fd of earlier stream in later popen child: closed\n"
            "glibc stream, copy child: in a system() child: 1 (pclose 0)\n"
            "pclose a: 0\n"
            "copy stream, glibc child: fd of earlier stream in later popen child: closed\n"
            "copy stream, glibc child: in a system() child: 1 (pclose 0)\n"
            "pclose b: 0\n")
    eq(run([exe]).stdout, want, "untraced")
    t, d = traced([exe])
    eq(t.stdout, want, "traced")


def test_system_popen_children_signal_state_as_glibc():
    """SIGUSR1 and SIGWINCH blocked, SIGTERM, SIGQUIT, SIGPIPE ignored,
    SIGUSR2 handled: the SigBlk/SigIgn lines a popen() and a system()
    child read from /proc/self/status, environ kept (glibc's) and NULL
    (the copy). Held: identical."""
    exe = build_c("skep24n_popen", ["skep24n_popen.c"])
    u = run([exe, "sig"])
    check(u.stdout.count("SigIgn:\t0000000180005004") == 4, u.stdout)
    t, d = traced([exe, "sig"])
    eq(t.stdout, u.stdout, "traced")


# --- the leader ends first ---------------------------------------------------

EXIT_MODES = {"sysexit": 5, "exit": 9, "return": 0, "exec": 4}


def test_leader_ends_first_exit_status_as_untraced():
    """main ends with a bare SYS_exit(3) or pthread_exit; the last thread
    then ends with SYS_exit(5), exit(9), a return, or an exec of
    `sh -c 'exit 4'`: 5, 9, 0 and 4 untraced, the same traced, plain,
    --ring=1M and --paused (18 runs held). The thread's call is in the
    plain log."""
    exe = build_c("skep24n_exit", ["skep24n_exit.c"], libs=["-lpthread"])
    for lead in ("sys", "pthread"):
        for mode, rc in EXIT_MODES.items():
            u = run([exe, mode, lead], check_rc=rc)
            for opts in ([], ["--ring=1M"], ["--paused"]):
                if opts and lead == "pthread" and mode in ("return", "exec"):
                    continue
                t, d = traced([exe, mode, lead], args=opts, check_rc=rc)
                eq(t.stdout, u.stdout, f"{lead} {mode} {opts}")
                if not opts:
                    calls = count_calls(dump_events(os.path.join(d, "sf.log")))
                    eq(calls.get("work", 0), 2, f"{lead} {mode}: work calls in the log")


# --- a C++ plugin in a namespace of its own ------------------------------------

def _mopen():
    plug = build_c("libskep24n_plug.so", ["skep24n_plug.cc"], compiler="clang++", shared=True)
    exe = build_c("skep24n_mopen", ["skep24n_mopen.c"], libs=["-ldl"])
    return plug, exe


def test_dlmopen_cpp_plugin_runs_and_is_traced():
    """dlmopen(LM_ID_NEWLM) of a C++ plugin (own libc, libstdc++,
    libgcc_s): news, deletes, 10 throws caught: output as untraced
    (plug_run(8) = 54 twice), thrower's 16 calls in the trace. Held."""
    plug, exe = _mopen()
    want = "plug_run(8) = 54\nplug_run(8) = 54\nnamespace new\ndlclose 0\n"
    eq(run([exe, plug, "0", "8"]).stdout, want, "untraced")
    t, d = traced([exe, plug, "0", "8"])
    eq(t.stdout, want, "traced")
    eq(count_calls(dump_events(os.path.join(d, "sf.log"))).get("thrower(int)", 0)
       or count_calls(dump_events(os.path.join(d, "sf.log"))).get("thrower", 0), 16, "thrower calls")


def _thrower_allocs(exe, plug, n):
    t, d = traced([exe, plug, "0", str(n)], args=["--alloc"])
    mem = run([SFTRACE, "memory", os.path.join(d, "sf.log")]).stdout
    return [line.strip() for line in mem.splitlines() if "thrower" in line]


def _shim_counts(cmd):
    """(allocations, frees, bytes) the untraced run makes through the base
    namespace's malloc, from a preloaded counter (tests/fixtures/skep25q_shim.c)."""
    shim = build_c("libskep25q_shim.so", ["skep25q_shim.c"], shared=True, xray=False)
    m = re.search(r"SHIM pid \d+ allocs (\d+) frees (\d+) reallocs \d+ bytes (\d+) rbytes (\d+)",
                  run(cmd, env={"LD_PRELOAD": shim}).stderr)
    check(m, "no counter line")
    return int(m.group(1)), int(m.group(2)), int(m.group(3)) + int(m.group(4))


def test_dlmopen_plugin_throw_makes_no_allocation_of_the_runtimes():
    """A C++ plugin dlmopen'd into a namespace of its own allocates from
    that namespace's libc, which --alloc does not see, with one exception
    that is the program's: its first throw makes the plugin's libstdc++
    (__cxa_get_globals) touch its dynamic TLS, and ld.so allocates that
    block (32 B, allocate_dtv_entry from __tls_get_addr) with its own
    malloc, the base namespace's, untraced as well (gdb: the same backtrace
    into glibc's malloc without sftrace). So the throwing run shows the
    32 B under thrower, and plug_run(3), which throws nothing, none; the
    counts equal the untraced counter's (8: 40 / 8 / 25,762 B; 3: 39 / 8 /
    25,730 B): nothing of the runtime's."""
    plug, exe = _mopen()
    for n, thrower in ((3, 0), (8, 1)):
        cmd = [exe, plug, "0", str(n)]
        t, d = traced(cmd, args=["--alloc"])
        log = os.path.join(d, "sf.log")
        summary = {}
        for line in run([SFTRACE, "memory", "--format", "tsv", "-n", "0", log]).stdout.splitlines():
            f = line.split("\t")
            if len(f) == 2:
                summary[f[0]] = int(f[1])
        eq((summary["allocations"], summary["frees"], summary["bytes_allocated"]), _shim_counts(cmd),
           f"plug_run({n}): allocations, frees, bytes traced vs the untraced counter")
        lines = _thrower_allocs(exe, plug, n)
        eq(bool(lines), bool(thrower), f"plug_run({n}): rows under thrower: {lines}")
        check(all(line.startswith("32 B        1  ") for line in lines), f"the TLS block's 32 B: {lines}")


# --- switch and snapshot while the program sleeps ------------------------------

def _program_pid(pid, exe):
    """The program under record's keeper: the descendant running exe."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        for k in kids:
            try:   # comm, not exe: a leader that has ended has no exe link
                with open(f"/proc/{k}/comm") as f:
                    if f.read().strip() == os.path.basename(exe)[:15]:
                        return k
            except OSError:
                pass
            found = _program_pid(k, exe)
            if found:
                return found
    return None


def _start(exe, args, opts):
    """record OPTS -- exe ARGS in the background; (Popen, dir, program pid)."""
    import subprocess
    import time
    d = tmpdir()
    p = subprocess.Popen([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log")] + opts + ["--", exe] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = None
    for _ in range(300):
        pid = _program_pid(p.pid, exe)
        if pid:
            break
        time.sleep(0.01)
    check(pid, "no program started")
    time.sleep(0.6)   # main has printed and sleeps (join) or ended (sys); the thread sleeps
    return p, d, pid


def _finish(p):
    out, err = p.communicate(timeout=30)
    return p.returncode, out, err


SLEEP_WANT = {"join": "main: work 45\nthread: work 4950\nmain: sleep(2) left 0\nthread: sleep(2) left 0\n",
              "sys": "main: work 45\nthread: work 4950\nthread: sleep(2) left 0\n"}


_untraced_checked = {}  # exe -> mtime: the untraced runs (2 s each) once per build, not once per case


def _sleep_exe():
    exe = build_c("skep24n_exit", ["skep24n_exit.c"], libs=["-lpthread"])
    if _untraced_checked.get(exe) != os.path.getmtime(exe):
        leads = (("join", 0), ("sys", 6))  # side by side: each sleeps 2 s
        for (lead, _), p in zip(leads, run_each([dict(cmd=[exe, "sleep", lead], check_rc=rc) for lead, rc in leads])):
            eq(p.stdout, SLEEP_WANT[lead], f"untraced {lead}")
        _untraced_checked[exe] = os.path.getmtime(exe)
    return exe


def test_resume_does_not_cut_the_programs_sleep_short():
    exe = _sleep_exe()
    p, d, pid = _start(exe, ["sleep", "join"], ["--paused"])
    sw = run([SFTRACE, "resume", "-q", str(pid)], check_rc=None)
    rc, out, err = _finish(p)
    eq(sw.returncode, 0, f"resume ({sw.stderr!r})")
    eq((rc, out), (0, SLEEP_WANT["join"]), "traced")


def test_refused_resume_after_main_ended_leaves_the_program_alone():
    exe = _sleep_exe()
    p, d, pid = _start(exe, ["sleep", "sys"], ["--paused"])
    sw = run([SFTRACE, "resume", str(pid)], check_rc=None)
    rc, out, err = _finish(p)
    eq(sw.returncode, 1, "resume refused")
    check("main thread has ended" in sw.stderr, sw.stderr)
    eq((rc, out), (6, SLEEP_WANT["sys"]), "traced")


def test_snapshot_after_main_ended_under_ring():
    exe = _sleep_exe()
    p, d, pid = _start(exe, ["sleep", "sys"], ["--ring=1M"])
    sn = run([SFTRACE, "snapshot", str(pid)], check_rc=None)
    rc, out, err = _finish(p)
    eq((sn.returncode, sn.stderr, rc, out), (0, "", 6, SLEEP_WANT["sys"]), "snapshot, then the program")
    snaps = [f for f in os.listdir(d) if ".snap." in f]
    eq(len(snaps), 1, "snapshots written")


def test_snapshot_does_not_cut_the_programs_sleep_short():
    exe = _sleep_exe()
    p, d, pid = _start(exe, ["sleep", "join"], ["--ring=1M"])
    sn = run([SFTRACE, "snapshot", str(pid)], check_rc=None)
    rc, out, err = _finish(p)
    eq(sn.returncode, 0, f"snapshot ({sn.stderr!r})")
    eq((rc, out), (0, SLEEP_WANT["join"]), "traced")


# --- credentials and chroot ---------------------------------------------------

def test_thread_with_own_uid_and_chrooted_threads_keep_recording():
    """A thread drops to uid 65534 with a raw SYS_setresuid (only itself),
    another unshares its fs and chroots into an empty directory, then main
    chroots the process; each makes 1000 leaf calls and starts a thread
    that makes 1000 more: 6000 leaf calls in the log, 0 lost. Held."""
    exe = build_c("skep24n_creds", ["skep24n_creds.c"], libs=["-lpthread"])
    root = tmpdir()
    want = "dropper 2997000 chrooter 2997000 main chroot 0 2997000\n"
    eq(run([exe, root]).stdout, want, "untraced")
    t, d = traced([exe, root])
    eq(t.stdout, want, "traced")
    log = os.path.join(d, "sf.log")
    eq(count_calls(dump_events(log)).get("leaf", 0), 6000, "leaf calls")
    summary = [line for line in run([SFTRACE, "dump", log]).stdout.splitlines() if line.startswith("summary:")]
    check(summary and " 0 lost" in summary[0] and " 0 dropped" in summary[0], summary)


def _dropfork(mode):
    exe = build_c("skep24n_creds", ["skep24n_creds.c"], libs=["-lpthread"])
    root = tmpdir()
    err = os.path.join(tmpdir(), "prog.err")
    shell = f"{exe} {root} {mode} 2>{err}"
    u = run(["sh", "-c", shell])
    with open(err) as f:
        uerr = f.read()
    eq((u.stdout, uerr), ("dropfork child status 1792\n", ""), "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", "sh", "-c", shell])
    with open(err) as f:
        terr = f.read()
    leaf = sum(count_calls(dump_events(lg)).get("leaf", 0) for lg in logs_in(d))
    eq((t.stdout, terr), (u.stdout, ""), "traced: the program's stdout and its own stderr file")
    eq(leaf, 2000, f"the child's leaf calls in the logs (record said {t.stderr!r})")
    for lg in logs_in(d):  # the child's made by record's keeper: record's user, 0600, as the others
        st = os.stat(lg)
        eq((st.st_uid, st.st_mode & 0o777), (os.geteuid(), 0o600), f"{lg}: owner, mode")


def test_fork_after_dropping_root_single_thread():
    """main (one thread, log made) setresuid(65534) through libc's wrapper,
    then forks; the child makes 2000 leaf calls and exits 7. Untraced the
    program's stderr file is empty; traced too (the runtime once wrote
    'sftrace: cannot create log ...: Permission denied' there and lost the
    calls, record silent): record's keeper made the child's log (0600,
    record's user) and handed it over, 2000 leaf calls in it."""
    _dropfork("main")


def test_fork_after_raw_setresuid_in_a_thread():
    """The same from a thread that drops with a raw SYS_setresuid (that
    thread only) and forks: the child's log made by record's keeper, 2000
    leaf calls, nothing in the program's stderr file."""
    _dropfork("raw")


def test_many_children_after_dropping_root_get_their_logs_at_once():
    """main drops to 65534 (libc), then forks 16 children at once, each
    with a thread (2000 leaf calls per child): 16 logs asked of record's
    keeper at the same time, each child's own (its pid in the header,
    2000 leaf calls), record's user, 0600; nothing on the program's
    stderr."""
    exe = build_c("skep24n_creds", ["skep24n_creds.c"], libs=["-lpthread"])
    root = tmpdir()
    want = "drop 0, 16 of 16 children ok\n"
    eq(run([exe, root, "many", "16"]).stdout, want, "untraced")
    t, d = traced([exe, root, "many", "16"])
    eq((t.stdout, t.stderr), (want, ""), "traced")
    kids = [lg for lg in logs_in(d) if not lg.endswith("/sf.log")]
    eq(len(kids), 16, "the children's logs")
    for lg in kids:
        eq(count_calls(dump_events(lg)).get("leaf", 0), 2000, f"{lg}: leaf calls")
        st = os.stat(lg)
        eq((st.st_uid, st.st_mode & 0o777), (os.geteuid(), 0o600), f"{lg}: owner, mode")


def test_fork_after_dropping_root_log_directory_gone():
    """As test_fork_after_dropping_root_single_thread, but main (its log
    made) first renames the output directory away: the child's log cannot
    be made, by it or by record's keeper (No such file or directory). The
    program's stderr file stays empty as untraced (the runtime said it
    there once); the child, as nobody, notes why through the keeper, and
    record names it: one line 'pid N (skep24n_creds) wrote no log: cannot
    create log DIR/sf.N.log (openat: Permission denied), and record's
    keeper could not make it either: openat: No such file or directory'
    (the child's own open and the keeper's, each with its call); its
    status is the command's, as for every loss it reports."""
    import re
    exe = build_c("skep24n_creds", ["skep24n_creds.c"], libs=["-lpthread"])
    root = tmpdir()
    base = tmpdir()
    err = os.path.join(base, "prog.err")
    for traced_run in (False, True):
        d = os.path.join(base, f"out{int(traced_run)}")
        os.mkdir(d)
        moved = d + ".moved"
        shell = f"{exe} {root} moved {d} {moved} 2>{err}"
        cmd = ["sh", "-c", shell]
        if traced_run:
            cmd = [SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--"] + cmd
        t = run(cmd)
        with open(err) as f:
            eq((t.stdout, f.read()), ("dropfork child status 1792\n", ""), f"traced {traced_run}: stdout, stderr file")
    lost = [line for line in t.stderr.splitlines() if "wrote no log" in line]
    eq(len(lost), 1, f"record's loss lines: {t.stderr!r}")
    check(re.fullmatch(r"sftrace: pid (\d+) \(skep24n_creds\) wrote no log: cannot create log " + re.escape(d) +
                       r"/sf\.\1\.log \(openat: Permission denied\), and record's keeper could not make it "
                       r"either: openat: No such file or directory", lost[0]), lost[0])
    eq(len(logs_in(moved)), 1, "main's log, moved with its directory")


# --- a preload after the runtime ----------------------------------------------

def test_spawn_exec_dup2_system_popen_reach_a_later_preload():
    """record -- env LD_PRELOAD=shim.so prog: the shim wraps posix_spawn,
    posix_spawnp, dup2, system, popen and execve. Untraced and traced it
    sees 'spawn 1 spawnp 1 dup2 1 system 1 popen 1' in the program, its
    execve of itself and of /bin/true. Held."""
    exe = build_c("skep24n_shimprog", ["skep24n_shimprog.c"])
    shim = build_c("skep24n_shim.so", ["skep24n_shim.c"], libs=["-ldl"], xray=False, shared=True)
    u = run(["env", "LD_PRELOAD=" + shim, exe])
    check("shim spawn 1 spawnp 1 dup2 1 system 1 popen 1\n" in u.stderr, u.stderr)
    eq(u.stderr.count("shim execve "), 2, u.stderr)
    t, d = traced(["env", "LD_PRELOAD=" + shim, exe])
    eq((t.stdout, t.stderr), (u.stdout, u.stderr), "traced")


# --- popen streams across fork and threads, cancellation ------------------------

def test_popen_stream_closed_in_fork_child_thread_and_fopen_as_glibc():
    """Streams of glibc's popen and of the copy: pclose and fclose in a
    fork child (-1, ECHILD), then in the parent (768), a stream opened in a
    thread closed by main (1536), pclose of an fopen'd stream (0). Held."""
    exe = build_c("skep24n_pfork", ["skep24n_pfork.c"], libs=["-lpthread"])
    u = run([exe])
    check(u.stdout.count("child pclose: -1 errno 10") == 2 and u.stdout.count("main: 1536") == 2, u.stdout)
    t, d = traced([exe])
    eq(t.stdout, u.stdout, "traced")


def test_cancel_in_pclose_and_system_as_glibc():
    """pthread_cancel of a thread in pclose() and in system(), glibc's and
    the copy's: after it, SIGINT at default, SIGCHLD unblocked in main,
    waitpid(-1) finds no child (ECHILD) in all four. Held."""
    exe = build_c("skep24n_cancel", ["skep24n_cancel.c"], libs=["-lpthread"])
    u = run([exe])
    eq(u.stdout.count("SIGINT default, SIGCHLD unblocked in main, waitpid none status -1 errno 10"), 4, u.stdout)
    t, d = traced([exe])
    eq(t.stdout, u.stdout, "traced")


# --- --alloc and operator new ---------------------------------------------------

def test_alloc_credits_operator_new_to_callers_tail_own_noplt():
    """-O2: tail_new tail-calls operator new (jmp _Znwm@plt, or through the
    GOT with -fno-plt), plain_new calls new[]; also with an executable's
    own operator new over malloc. `sftrace memory` credits '3.9 KiB 2
    tail_new(…)' and '400 B 1 plain_new(…)' in all four builds. Held."""
    for name, flags in (("skep24n_new", []), ("skep24n_new_own", ["-DOWN_NEW"]),
                        ("skep24n_new_noplt", ["-fno-plt"]), ("skep24n_new_own_noplt", ["-DOWN_NEW", "-fno-plt"])):
        exe = build_c(name, ["skep24n_new.cc"], flags=["-O2"] + flags, compiler="clang++")
        u = run([exe])
        t, d = traced([exe], args=["--alloc"])
        eq(t.stdout, u.stdout, name)
        mem = run([SFTRACE, "memory", os.path.join(d, "sf.log")]).stdout
        sites = mem[mem.index("Top allocation sites by bytes"):].split("\n\n")[0]
        check(any(line.split()[:4] == ["3.9", "KiB", "2", "tail_new(…)"] for line in sites.splitlines()),
              f"{name}: {sites}")
        check(any(line.split()[:4] == ["400", "B", "1", "plain_new(…)"] for line in sites.splitlines()),
              f"{name}: {sites}")


def test_threads_seen_after_the_leader_ended_as_untraced():
    """main ends with SYS_exit; 300 ms later its thread reads 'Threads:' in
    /proc/self/status and counts /proc/self/task: 'Threads: 2' and 4
    entries untraced, the same traced, plain, --ring=1M and --paused (the
    writer has left). Held."""
    exe = build_c("skep24n_exit", ["skep24n_exit.c"], libs=["-lpthread"])
    u = run([exe, "tasks", "sys"], check_rc=6)
    check("thread: 4 entries in /proc/self/task" in u.stdout, u.stdout)
    for opts in ([], ["--ring=1M"], ["--paused"]):
        t, d = traced([exe, "tasks", "sys"], args=opts, check_rc=6)
        eq(t.stdout, u.stdout, f"traced {opts}")


def test_fork_while_a_thread_waits_in_system_as_glibc():
    """A thread waits in system() (glibc's, then the copy's) while main
    forks; the child's own system() returns 2 and leaves SIGINT and SIGQUIT
    ignored (the count it inherited), main's handler is back after the
    thread's call returns 3. Held."""
    exe = build_c("skep24n_sysfork", ["skep24n_sysfork.c"], libs=["-lpthread"])
    u = run([exe])
    eq(u.stdout.count("fork child: system 2, then SIGINT ignored SIGQUIT ignored"), 2, u.stdout)
    t, d = traced([exe])
    eq(t.stdout, u.stdout, "traced")


def test_popen_system_with_stdin_stdout_closed_as_glibc():
    """Descriptors 0 and 1 closed (a daemon): popen "r" gets fd 0 and reads
    the child's line, popen "w" gets fd 1 and the child writes the file,
    system's child finds no fd 0 (exit 11): glibc's and the copy's, traced
    as untraced. Held."""
    exe = build_c("skep24n_lowfd", ["skep24n_lowfd.c"])
    du, dt = tmpdir(), tmpdir()
    u = run([exe, os.path.join(du, "f")])
    want = "r fd 0 read ok r status 0; w fd 1 status 0 file ok system 11\n"
    eq(u.stderr, "glibc: " + want + "copy: " + want, "untraced")
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(dt, "sf.log"), "--", exe, os.path.join(dt, "f")])
    eq(t.stderr, u.stderr, "traced")


def test_dladdr_of_wrapped_libc_functions_names_libc():
    """dladdr names the object a function lives in: untraced 'system:
    libc.so.6 (system)', the same for dlsym(RTLD_DEFAULT, "system"), popen,
    execve, dup2, close (__close), posix_spawn, and dladdr1. Traced each
    said 'libsftrace.so', the wrapper's object; the runtime's dladdr
    (dladdr.c) answers for an exported wrapper's address as for the
    definition the program would have had untraced. An address inside the
    runtime's code that is not an export's start is named as it is."""
    exe = build_c("skep24n_dladdr", ["skep24n_dladdr.c"], libs=["-ldl"])
    u = run([exe])
    check("system: libc.so.6 (system)\n" in u.stdout, u.stdout)
    t, d = traced([exe])
    eq(t.stdout.splitlines()[:-1], u.stdout.splitlines()[:-1], "traced")
    eq((u.stdout.splitlines()[-1], t.stdout.splitlines()[-1]), ("system+1: libc", "system+1: other"),
       "a byte into the wrapper is the runtime's code, untraced libc's")


def test_resume_of_a_server_that_sigwaits():
    exe = build_c("skep24n_sigwait", ["skep24n_sigwait.c"])
    eq(run([exe]).stdout, "served 100, took no signal\n", "untraced")
    p, d, pid = _start(exe, [], ["--paused"])
    sw = run([SFTRACE, "resume", "-q", "-t", "3", str(pid)], check_rc=None)
    rc, out, err = _finish(p)
    eq((out, sw.returncode), ("served 100, took no signal\n", 0), f"traced, resume ({sw.stderr!r})")


def test_thread_records_300000_calls_after_the_leader_ended():
    """main ends with SYS_exit; its thread then makes 300000 calls (far
    more than a buffer holds) and SYS_exit(8)s: exit 8 as untraced, and
    300002 work entries in the log, 0 lost, 0 dropped. Held."""
    exe = build_c("skep24n_exit", ["skep24n_exit.c"], libs=["-lpthread"])
    u = run([exe, "many", "sys"], check_rc=8)
    t, d = traced([exe, "many", "sys"], check_rc=8)
    eq(t.stdout, u.stdout, "traced")
    log = os.path.join(d, "sf.log")
    eq(count_calls(dump_events(log)).get("work", 0), 300002, "work calls")
    summary = [line for line in run([SFTRACE, "dump", log]).stdout.splitlines() if line.startswith("summary:")]
    check(summary and " 0 lost" in summary[0] and " 0 dropped" in summary[0], summary)


def test_sigchld_and_sigint_during_system_as_glibc():
    """A second thread leaves SIGCHLD unblocked; SIGINT and SIGQUIT are
    sent to the process during each of three system() calls: statuses 256,
    pclose 512, SIGCHLD handled 4 times, SIGINT 0, glibc's and the copy's,
    traced as untraced. Held."""
    exe = build_c("skep24n_chld", ["skep24n_chld.c"], libs=["-lpthread"])
    want = ("glibc: statuses 256 256 256 pclose 512, SIGCHLD handled 4, SIGINT handled 0\n"
            "copy: statuses 256 256 256 pclose 512, SIGCHLD handled 4, SIGINT handled 0\n")
    eq(run([exe]).stdout, want, "untraced")
    t, d = traced([exe])
    eq(t.stdout, want, "traced")


def test_closefrom_and_close_loop_reach_a_later_preload_unchanged():
    """record -- env LD_PRELOAD=cshim.so closer: after one traced call
    (the log exists), closefrom(3), or close() over 3..1023, then open:
    the shim counts 'close 0 close_range 0 closefrom 1' and 'close 1021
    close_range 0 closefrom 0' untraced and traced (no close_range of the
    runtime's making reaches it), the program's file is fd 3. Held."""
    exe = build_c("skep24n_closer", ["skep24n_closer.c"])
    shim = build_c("skep24n_cshim.so", ["skep24n_cshim.c"], libs=["-ldl"], xray=False, shared=True)
    for mode, want in (("closefrom", "shim close 0 close_range 0 closefrom 1\n"),
                       ("loop", "shim close 1021 close_range 0 closefrom 0\n")):
        u = run(["env", "LD_PRELOAD=" + shim, exe, mode])
        eq((u.stdout, u.stderr), ("fd 3 steps 2\n", want), f"untraced {mode}")
        t, d = traced(["env", "LD_PRELOAD=" + shim, exe, mode])
        eq((t.stdout, t.stderr), (u.stdout, want), f"traced {mode}")


def test_system_popen_at_the_kernels_argument_limit_after_clearenv():
    exe = build_c("skep24n_bigenv", ["skep24n_bigenv.c"])
    good = "system 9 popen 8\n"
    lo, hi = 100000, 4000000
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if run([exe, str(mid)]).stdout == good:
            lo = mid
        else:
            hi = mid
    eq(run([exe, str(lo + 1)]).stdout, "system 127 popen -1\n", f"untraced past the limit F={lo}")
    t, d = traced([exe, str(lo)])
    eq(t.stdout, good, f"traced at the untraced limit F={lo}")
