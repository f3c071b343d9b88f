"""Skeptic 25v: programs written to break the claims of the raw writer
thread (own TLS, set*id following), the two-level makecontext table and the
unsplit text mappings, merged on integ at 3d9246b. A claim that holds is a
passing case; a break is a known_break(25, ...) that fails today.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25v.py."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import Skip, build_c, check, count_calls, dump_events, eq, known_break, record, run, tmpdir  # noqa: E402


# --writer auto falls back to the traced thread itself (no writer thread,
# the log's descriptor in the program's table: documented) when the machine
# is busy; the claims are about the writer thread, so the cases ask for it.
WRITER = ["--writer", "thread"]


# The program runs `sftrace resume/pause` of itself; the runtime is preloaded
# into that child too, which an ASan build of the CLI (CI) refuses unless told.
ASAN_INNER = "verify_asan_link_order=0"


def _root():
    if os.geteuid() != 0:
        raise Skip("needs root (credential changes)")


def creds_fixture():
    return build_c("skep25v_creds", ["skep25v_creds.c"], libs=["-lpthread"])


def same_creds(mode):
    """The fixture changes credentials by MODE, then prints the distinct
    credential sets of /proc/self/task/*/status: untraced it is one task,
    one set; traced the writer thread must hold the same set."""
    _root()
    exe = creds_fixture()
    want = run([exe, mode]).stdout
    check("distinct=1\n" in want and "distinct=2" not in want, f"untraced {mode}: {want}")
    got, log = record([exe, mode], args=WRITER)
    eq(got.stdout, want, f"traced {mode}: credentials of every task")
    eq(count_calls(dump_events(log))["work"], 2000, f"{mode} work calls")


def test_creds_untouched():
    same_creds("none")


def test_creds_setgroups_setresgid():
    same_creds("setgroups")


def test_creds_setresuid_from_thread_while_others_run():
    _root()
    exe = creds_fixture()
    want = run([exe, "thread"]).stdout
    got, log = record([exe, "thread"], args=WRITER)
    eq(got.stdout, want, "traced thread setresuid: credentials of every task")


def test_creds_vfork_child_setuid_leaves_parent_writer():
    same_creds("vfork")


def test_creds_clone_vm_child_setuid_leaves_parent_writer():
    # (the caller of a CLONE_VM clone is not recorded after it: documented)
    _root()
    exe = creds_fixture()
    want = run([exe, "clonevm"]).stdout
    got, _ = record([exe, "clonevm"], args=WRITER)
    eq(got.stdout, want, "credentials of every task after a CLONE_VM child's setuid")


def test_creds_fork_child_setuid():
    _root()
    exe = creds_fixture()
    want = run([exe, "fork"]).stdout
    got, _ = record([exe, "fork"], args=WRITER)
    eq(got.stdout, want, "fork child's setuid")


def test_creds_raw_syscall_setuid():
    same_creds("syscall_setuid")


def test_creds_inline_asm_setresuid():
    # The one change no wrapper sees: the program's output is its own, the
    # trace complete; the writer keeps the credentials it had.
    _root()
    exe = creds_fixture()
    got, log = record([exe, "asm_setresuid"], args=WRITER)
    check("--- set 0\nUid:\t1000\t1000\t1000\t1000" in got.stdout, f"main dropped to 1000: {got.stdout}")
    eq(count_calls(dump_events(log))["work"], 2000, "asm_setresuid work calls")
    raise Skip("known limit, issue 25: a credential change made by an inline syscall instruction (no libc "
               "wrapper, no syscall()) is not seen: the writer thread keeps the credentials it had "
               "(README, Credentials; docs/DESIGN.md)")


def test_creds_capset_libc():
    same_creds("capset_libc")


def test_creds_capset_raw():
    same_creds("capset")


def test_creds_keepcaps_then_setresuid():
    same_creds("keepcaps")


def test_creds_no_new_privs():
    same_creds("nnp")


def test_creds_capbset_drop():
    same_creds("capbset")


def test_creds_setfsuid():
    same_creds("setfsuid")


def _maps_norm(text):
    """skep25v_maps' output with the tracer's own mappings (its log files,
    its anonymous shared pages) left out, each section's lines sorted (the
    runtime's mappings move the others around in the address space)."""
    out, sec = [], []
    for line in text.splitlines():
        if line.startswith("==") or line.startswith("acc"):
            out.append(sorted(sec))
            out.append(line)
            sec = []
        elif not line.split()[-1].startswith(("sf.", "zero")) and "(deleted)" not in line:
            sec.append(line)
    return out


def maps_fixtures(flags=()):
    lib = build_c("libskep25v_maps.so", ["skep25v_mapslib.c"], shared=True)
    name = "skep25v_maps" + "".join(f.replace("-", "_").replace(",", "_").replace("=", "_") for f in flags)
    return build_c(name, ["skep25v_maps.c"], flags=flags, libs=["-ldl"]), lib


def same_maps(args=(), flags=(), paused=False):
    from sfkit import SFTRACE
    exe, lib = maps_fixtures(flags)
    env = {"SKEP_SFTRACE": SFTRACE, "ASAN_OPTIONS": ASAN_INNER} if paused else None
    want = run([exe, lib], env={"SKEP_SFTRACE": "/bin/false"} if paused else None).stdout
    got, log = record([exe, lib], args=WRITER + list(args) + (["--paused"] if paused else []), env=env)
    eq(_maps_norm(got.stdout), _maps_norm(want), f"maps of exe, libc, ld.so, dlopen'd lib with {args} {flags}")
    return log


def test_maps_unsplit_full_patch():
    log = same_maps()
    c = count_calls(dump_events(log))
    eq((c["work"], c["lib_work"], c["inner"]), (100, 100, 100), "calls")


def test_maps_unsplit_regex_partial():
    log = same_maps(args=["-r", "^inner$"])
    c = count_calls(dump_events(log))
    eq((c["work"], c["inner"]), (0, 100), "calls under -r")


def test_maps_unsplit_nonpie_noseparate_code():
    same_maps(flags=["-no-pie", "-Wl,-z,noseparate-code"])


def test_maps_unsplit_lld():
    same_maps(flags=["-fuse-ld=lld"])


def test_maps_paused_resume_pause():
    log = same_maps(paused=True)
    c = count_calls(dump_events(log))
    eq((c["work"], c["show"]), (100, 1), "calls between resume and pause")


def single_fixture():
    return build_c("skep25v_single", ["skep25v_single.c"])


def same_single(mode):
    exe = single_fixture()
    want = run([exe, mode])
    got, log = record([exe, mode], check_rc=None, args=WRITER)
    eq((got.returncode, got.stdout), (want.returncode, want.stdout), f"traced {mode}")
    eq(count_calls(dump_events(log))["work"], 100, f"{mode} work calls")


def test_single_unshare_newuser():
    _root()
    same_single("unshare_user")


def test_single_unshare_newns():
    _root()
    same_single("unshare_ns")


def test_single_unshare_fs_chdir():
    same_single("unshare_fs")


def test_single_setns_own_mnt():
    _root()
    same_single("setns_mnt")


@known_break(25, "the raw writer is a kernel thread of the process: /proc/self/status says Threads: 2 "
             "traced, 1 untraced")
def test_single_proc_status_threads():
    same_single("threads")


@known_break(25, "tgkill(SIGUSR1) to every tid of /proc/self/task (a setxid emulation's broadcast): the "
             "writer blocks every signal, so 1 of 2 handlers runs and the program waits until its "
             "alarm kills it (exit -14 traced; untraced tasks=1 handled=1, exit 0)")
def test_single_tgkill_every_task():
    same_single("tgkill_all")


def exits_fixture():
    return build_c("skep25v_exits", ["skep25v_exits.c"], libs=["-lpthread"])


def same_exit(mode, work, child_work=None):
    exe = exits_fixture()
    want = run([exe, mode], check_rc=None)
    d = tmpdir()
    got, log = record([exe, mode], out=os.path.join(d, "sf.log"), check_rc=None, args=WRITER)
    rc = want.returncode if want.returncode >= 0 else 128 - want.returncode  # record: 128+signal
    eq((got.returncode, got.stdout), (rc, want.stdout), f"traced {mode}: status and output")
    eq(count_calls(dump_events(log))["work"], work, f"{mode}: work calls in the log")
    others = sorted(f for f in os.listdir(d) if f.endswith(".log") and f != "sf.log")
    if child_work is None:
        eq(others, [], f"{mode}: no other log")
    else:
        eq(len(others), 1, f"{mode}: the child's log")
        eq(count_calls(dump_events(os.path.join(d, others[0])))["work"], child_work, f"{mode}: child's work")


def test_exit_plain():
    same_exit("exit", 300)


def test_exit_group_from_thread():
    same_exit("thread_exit_group", 200)


def test_exit_from_thread():
    same_exit("thread_exit", 200)


def test_exit_main_pthread_exit():
    same_exit("main_pthread_exit", 300)


def test_exit_abort():
    same_exit("abort", 300)


def test_exit_segv():
    same_exit("segv", 300)


def test_exit_sigkill_self():
    same_exit("kill", 300)


def test_exit_underscore_exit():
    same_exit("_exit", 300)


def test_exit_exec():
    same_exit("exec", 300)


def test_exit_fork_child_exit():
    same_exit("fork_exit", 300, child_work=100)


def test_exit_vfork_exec():
    same_exit("vfork_exec", 300)


def same_glibc(*args):
    exe = build_c("skep25v_glibc", ["skep25v_glibc.c"], libs=["-lpthread", "-ldl"])
    want = run([exe] + list(args)).stdout
    got, log = record([exe] + list(args), args=WRITER)
    eq(got.stdout, want, f"traced {args}")
    return count_calls(dump_events(log))


def test_glibc_own_malloc_no_call_before_main():
    c = same_glibc("own_malloc")
    eq((c["work"], c["malloc"]), (100, 1), "calls (printf's buffer is the one malloc)")


def test_glibc_pthread_atfork_handlers():
    c = same_glibc("atfork")
    eq((c["a_prep"], c["a_par"]), (1, 1), "parent's atfork handlers")


def test_glibc_nss_getpwnam_mallocs():
    same_glibc("nss")


def test_glibc_setlocale_mallocs():
    same_glibc("locale")


def test_glibc_dlopen_from_thread():
    lib = build_c("libskep25v_maps.so", ["skep25v_mapslib.c"], shared=True)
    c = same_glibc("dlopen_thread", lib)
    eq((c["lib_work"], c["inner"], c["work"]), (50, 50, 100), "calls")


def _gdb_threads(cmd):
    import shutil
    if not shutil.which("gdb"):
        raise Skip("no gdb")
    return ["gdb", "-batch", "-nx", "-ex", "set startup-with-shell off", "-ex", "break work", "-ex", "run",
            "-ex", "info threads", "-ex", "kill", "--args"] + cmd


# The writer is made with CLONE_UNTRACED: gdb is not attached to it (issue 25).
def test_gdb_info_threads():
    import re
    exe = single_fixture()
    want = run(_gdb_threads([exe, "threads"]), timeout=120).stdout
    got, _ = record(_gdb_threads([exe, "threads"]), check_rc=None, timeout=120, args=WRITER)
    n = lambda t: len(re.findall(r"^[* ] +\d+ +Thread ", t, re.M))  # noqa: E731
    eq(n(want), 1, f"untraced threads: {want}")
    eq(n(got.stdout), n(want), f"threads gdb lists traced: {got.stdout[-600:]}")


def ctx_unwinds(args, alloc=False):
    """Runs skep25v_ctx ARGS untraced and traced; returns (output as
    untraced, Counter of the UNWIND lines' texts, level3 entries)."""
    import collections
    import re
    from sfkit import SFTRACE
    exe = build_c("skep25v_ctx", ["skep25v_ctx.c"], libs=["-lpthread"])
    want = run([exe] + list(args)).stdout
    got, log = record([exe] + list(args), args=WRITER + (["--alloc"] if alloc else []))
    eq(got.stdout, want, f"traced ctx {args}")
    text = run([SFTRACE, "dump", log]).stdout
    unw = collections.Counter(re.sub(r"\s+", " ", m) for m in re.findall(r"UNWIND\s+(.*)$", text, re.M))
    return unw, len(re.findall(r"ENTRY\s+level3$", text, re.M))


def test_ctx_50k_random_order():
    # 200,000 held too by hand (same counts), but touches 800 MB of stacks
    unw, l3 = ctx_unwinds(["order", "50000", "random"])
    eq((dict(unw), l3), ({"2 frames abandoned, depth 2 left": 50000}, 50000), "landings")


def test_ctx_fork_while_thread_makes_contexts():
    import re
    from sfkit import SFTRACE
    exe = build_c("skep25v_ctx", ["skep25v_ctx.c"], libs=["-lpthread"])
    d = tmpdir()
    got, log = record([exe, "forkctx", "20", "20000"], out=os.path.join(d, "sf.log"), args=WRITER)
    eq(got.stdout, "forks ok 20\n", "output")
    per = []
    for f in sorted(os.listdir(d)):
        if f.endswith(".log"):
            text = run([SFTRACE, "dump", os.path.join(d, f)]).stdout
            per.append(tuple(sorted(set(re.sub(r"\s+", " ", m) for m in re.findall(r"UNWIND\s+(.*)$", text, re.M))))
                       + (len(re.findall(r"UNWIND", text)),))
    eq(sorted(per), sorted([("2 frames abandoned, depth 2 left", 10)] * 20
                           + [("2 frames abandoned, depth 2 left", 20000)]), "landings per process")


def test_ctx_descending_stacks():
    unw, l3 = ctx_unwinds(["order", "20000", "desc"])
    eq((dict(unw), l3), ({"2 frames abandoned, depth 2 left": 20000}, 20000), "landings")


def test_ctx_alloc_counts():
    unw, l3 = ctx_unwinds(["order", "2000", "random"], alloc=True)
    eq((dict(unw), l3), ({"2 frames abandoned, depth 2 left": 2000}, 2000), "landings with --alloc")


def test_ctx_reused_overlapping_stacks():
    unw, l3 = ctx_unwinds(["reuse", "2000"])
    eq((dict(unw), l3), ({"2 frames abandoned, depth 2 left": 4002}, 4002), "landings")


def test_ctx_threads_at_once():
    unw, l3 = ctx_unwinds(["threads", "4", "5000"])
    eq((dict(unw), l3), ({"2 frames abandoned, depth 2 left": 20000}, 20000), "landings")


def test_ctx_old_stack_reused_as_sigaltstack():
    unw, l3 = ctx_unwinds(["altstack"])
    eq((dict(unw), l3), ({"2 frames abandoned, depth 2 left": 4}, 4), "landings")


def test_ctx_old_stack_on_main_thread_stack():
    unw, l3 = ctx_unwinds(["onstack"])
    eq((dict(unw), l3), ({"2 frames abandoned, depth 3 left": 1, "2 frames abandoned, depth 23 left": 3}, 4),
       "landings")


def test_ctx_old_stack_remapped_as_pthread_stack():
    unw, l3 = ctx_unwinds(["threadreuse"])
    eq((dict(unw), l3), ({"2 frames abandoned, depth 2 left": 4}, 4), "landings")


def test_ctx_makecontext_in_signal_handler():
    unw, l3 = ctx_unwinds(["sighandler", "100"])
    eq((dict(unw), l3), ({"2 frames abandoned, depth 3 left": 100}, 100), "landings")



# Under valgrind the writer waits without futex_waitv (issue 25).
def test_valgrind_no_unknown_syscall_warnings():
    import re
    import shutil
    import platform
    if not shutil.which("valgrind") or platform.machine() != "x86_64":
        raise Skip("no valgrind on x86_64")
    exe = single_fixture()
    cmd = ["valgrind", "-q", "--tool=none", exe, "threads"]
    want = run(cmd, timeout=120)
    got, _ = record(cmd, timeout=120, args=WRITER)
    warn = lambda t: re.findall(r"unhandled [\w-]+ syscall: \d+", t)  # noqa: E731
    eq(warn(got.stderr), warn(want.stderr), "valgrind's warnings about unknown system calls")



def test_status_at_main_and_end_as_untraced():
    exe = build_c("skep25v_status", ["skep25v_status.c"])
    want = run([exe]).stdout
    check("arena=0 uord=0 hblks=0 single=1" in want, want)
    got, log = record([exe], args=WRITER)
    eq(got.stdout, want, "mallinfo2, __libc_single_threaded, signal masks, fds as untraced")
    eq(count_calls(dump_events(log))["work"], 100000, "work calls")


def _drop(args=()):
    _root()
    exe = build_c("skep25v_drop", ["skep25v_drop.c"])
    own = tmpdir()
    os.chmod(own, 0o777)
    want = run([exe, own]).stdout
    d = tmpdir()  # root's, 0700: only the tracer may write there once the program is uid 1000
    got, log = record([exe, own], out=os.path.join(d, "sf.log"), args=WRITER + list(args))
    eq(got.stdout, want, "output")
    check("own file uid=1000 gid=1000" in want, want)
    return d, sorted(f for f in os.listdir(d) if f.endswith(".log"))


def test_drop_root_then_log_complete_and_child_log():
    d, logs = _drop()
    eq(len(logs), 2, f"logs {logs}")
    c = count_calls(dump_events(os.path.join(d, "sf.log")))
    eq((c["work"], c["after_drop"]), (301000, 1), "parent's calls, most after the drop")
    child = [f for f in logs if f != "sf.log"][0]
    eq(count_calls(dump_events(os.path.join(d, child)))["in_child"], 100, "the dropped child's calls")


def test_drop_root_then_ring_trigger_snapshot():
    d, logs = _drop(["--ring", "128K", "--trigger", "after_drop"])
    eq(len([f for f in logs if ".snap." in f]), 1, f"the trigger's snapshot after the drop: {logs}")



def _selfmod(args=()):
    from sfkit import SFTRACE
    exe = build_c("skep25v_selfmod", ["skep25v_selfmod.c"])
    want = run([exe])
    eq(want.stdout, "own rwx: rwxp\nafter resume/pause: rwxp\nwrote own text, acc=14950\n", "untraced")
    got, log = record([exe], args=WRITER + ["--paused"] + list(args),
                      env={"SKEP_SFTRACE": SFTRACE, "ASAN_OPTIONS": ASAN_INNER},
                      check_rc=None)
    eq((got.returncode, got.stdout), (0, want.stdout), "a page of its text the program made rwx, after "
       "sftrace resume + pause")
    eq(count_calls(dump_events(log))["work"], 100, "work calls while resumed")


def test_selfmod_text_perms_survive_resume_pause():
    _selfmod()


def test_selfmod_text_perms_survive_resume_pause_regex():
    _selfmod(["-r", "^work$"])



def test_exit_exec_from_thread():
    exe = build_c("skep25v_execthr", ["skep25v_execthr.c"], libs=["-lpthread"])
    got, log = record([exe], args=WRITER)
    eq(got.stdout, "execd\n", "output")
    eq(count_calls(dump_events(log))["work"], 300000, "calls before the thread's exec")


if __name__ == "__main__":
    from sfkit import main
    main(globals())
