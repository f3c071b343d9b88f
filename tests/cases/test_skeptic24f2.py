"""skeptic24f2: issue 24's two newer claims, attacked with programs of our own.
A: when the leader leaves by a bare SYS_exit while threads run on, the writer
hands over and leaves, so the last thread's code is the status, every event
logged. B: every wrapper carries the wrapped symbol's default version, so
dlvsym/dlsym/&name agree traced as untraced and every route still reaches it."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sfkit  # noqa: E402


def _c(name, libs=(), compiler="clang", src=None, xray=True, shared=False):
    return sfkit.build_c(name, [src or name + ".c"], libs=list(libs), compiler=compiler, xray=xray, shared=shared)


def _leaf_calls(log):
    calls, _ = sfkit.report_calls(log)
    return sum(c for (t, n), c in calls.items() if n == "leaf")


def _info(log, key):
    p = sfkit.run([sfkit.SFTRACE, "info", log])
    return [ln.split(":", 1)[1].strip() for ln in p.stdout.splitlines() if ln.startswith("# " + key)][0]


def _record_group(cmd, log, args=(), timeout=10):
    """record in a session of its own; on timeout the whole group is killed
    and None returned for the status."""
    rc, out, err = sfkit.run_group([sfkit.SFTRACE, "record", "-q", "-o", log] + list(args) + ["--"] + cmd, timeout)
    return (None if rc == "timeout" else rc), out, err


# ---- claim A: the writer hands over (held) ----

def test_leader_gone_threads_end_every_way():
    exe = _c("skep24f2_ends", ["-lpthread"])
    u = sfkit.run([exe], check_rc=9)
    d = sfkit.tmpdir()
    log = os.path.join(d, "sf.log")
    t = sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log, "--", exe], check_rc=9)
    sfkit.check(u.stdout.startswith("child 3 leaf "), f"untraced: {u.stdout!r}")
    sfkit.check(t.stdout.startswith("child 3 leaf "), f"traced: {t.stdout!r}")
    want = int(t.stdout.split()[-1])
    sfkit.eq(_leaf_calls(log), want, "leaf calls in the log (threads, late thread, SIGALRM handlers)")
    sfkit.eq(_info(log, "losses"), "0 dropped, 0 lost, 0 write errors", "losses")
    kids = [f for f in os.listdir(d) if f != "sf.log"]
    sfkit.eq(len(kids), 1, "the fork child's own log")
    sfkit.eq(_leaf_calls(os.path.join(d, kids[0])), 50000, "leaf calls in the child's log")


def test_leader_gone_then_close_range_own_file():
    exe = _c("skep24f2_ends", ["-lpthread"])
    d = sfkit.tmpdir()
    sfkit.run([exe, "closerange", os.path.join(d, "u.txt")], check_rc=23)
    log = os.path.join(d, "sf.log")
    sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log, "--", exe, "closerange", os.path.join(d, "t.txt")],
              check_rc=23)
    for f in ("u.txt", "t.txt"):
        with open(os.path.join(d, f), "rb") as fh:
            sfkit.eq(fh.read(), b"the program's own file\nend\n", f)
    sfkit.eq(_leaf_calls(log), 1800000, "leaf calls")
    sfkit.eq(_info(log, "losses"), "0 dropped, 0 lost, 0 write errors", "losses")


def test_chroot_leader_then_last_thread_status():
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root for chroot")
    exe = _c("skep24f2_chroot_leader", ["-lpthread"])
    root = sfkit.tmpdir()
    sfkit.run([exe, root], check_rc=9)
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    rc, out, err = _record_group([exe, root], log, timeout=6)
    sfkit.eq(rc, 9, "traced status (None: still running after 6 s)")


def test_chroot_then_sys_exit_alone_ends():
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root for chroot")
    exe = _c("skep24f2_chroot_leader", ["-lpthread"])
    root = sfkit.tmpdir()
    sfkit.run([exe, root, "alone"], check_rc=4)
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    rc, out, err = _record_group([exe, root, "alone"], log, timeout=6)
    sfkit.eq(rc, 4, "traced status (None: still running after 6 s)")


def test_nofile_limit_then_leader_gone_loses_nothing():
    exe = _c("skep24f2_nofile", ["-lpthread"])
    sfkit.run([exe, "1"], check_rc=9)
    for args in (("--writer", "sync"), ()):
        log = os.path.join(sfkit.tmpdir(), "sf.log")
        sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log] + list(args) + ["--", exe, "1"], check_rc=9)
        sfkit.eq(_info(log, "losses"), "0 dropped, 0 lost, 0 write errors", f"losses {' '.join(args)}")
        sfkit.eq(_leaf_calls(log), 1001000, f"leaf calls {' '.join(args)}")


def test_thread_root_then_leader_gone_loses_nothing():
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root for chroot")
    exe = _c("skep24f2_thread_root", ["-lpthread"])
    root = sfkit.tmpdir()
    sfkit.run([exe, root], check_rc=9)
    for args in (("--writer", "sync"), ()):
        log = os.path.join(sfkit.tmpdir(), "sf.log")
        sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log] + list(args) + ["--", exe, root], check_rc=9)
        sfkit.eq(_info(log, "losses"), "0 dropped, 0 lost, 0 write errors", f"losses {' '.join(args)}")
        sfkit.eq(_leaf_calls(log), 1001000, f"leaf calls {' '.join(args)}")


def test_thread_uid_then_leader_gone_loses_nothing():
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root to change uid")
    exe = _c("skep24f2_thread_root", ["-lpthread"])
    sfkit.run([exe, "uid"], check_rc=9)
    for args in (("--writer", "sync"), ()):
        d = sfkit.tmpdir()
        os.chmod(d, 0o755)
        log = os.path.join(d, "sf.log")
        sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log] + list(args) + ["--", exe, "uid"], check_rc=9)
        sfkit.eq(_info(log, "losses"), "0 dropped, 0 lost, 0 write errors", f"losses {' '.join(args)}")
        sfkit.eq(_leaf_calls(log), 1001000, f"leaf calls {' '.join(args)}")


def test_thread_uid_then_leader_gone_bare_exit_status():
    if os.geteuid() != 0:
        raise sfkit.Skip("needs root to change uid")
    if os.uname().machine != "x86_64":
        raise sfkit.Skip("the fixture's bare instruction is x86-64's")
    exe = _c("skep24f2_thread_root", ["-lpthread"])
    sfkit.run([exe, "uid", "insn"], check_rc=9)
    d = sfkit.tmpdir()
    os.chmod(d, 0o755)
    log = os.path.join(d, "sf.log")
    p = sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log, "--", exe, "uid", "insn"], check_rc=None)
    sfkit.eq(_info(log, "losses"), "0 dropped, 0 lost, 0 write errors", "losses")
    sfkit.eq(_leaf_calls(log), 1001000, "leaf calls")
    sfkit.eq(p.returncode, 9, "traced status")


# ---- claim B: symbol versions ----

def _shim_run(where, old):
    exe = _c("skep24f2_spawner")
    shim = _c("skep24f2_shim.so", ["-ldl"], src="skep24f2_shim.c", xray=False, shared=True)
    d = sfkit.tmpdir()
    log = os.path.join(d, "sf.log")
    env = {"SHIM_OLD": old} if old else {}
    if where == "before":
        # record itself starts with the shim preloaded: CI's ASan build
        # of the CLI refuses a library ahead of its runtime unless told.
        env["LD_PRELOAD"] = shim
        env["ASAN_OPTIONS"] = ":".join(o for o in (os.environ.get("ASAN_OPTIONS", ""), "verify_asan_link_order=0") if o)
        cmd = [exe]
    else:  # record puts the runtime first, the program's own preload after it
        cmd = ["env", "LD_PRELOAD=" + shim, exe]
    p = sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log, "--"] + cmd, env=env)
    return p, len([f for f in os.listdir(d) if f != "sf.log"])


def test_rtld_next_shim_before_runtime_reaches_wrappers():
    for old in ("", "1"):
        p, kids = _shim_run("before", old)
        what = f"shim before, SHIM_OLD={old!r}"
        sfkit.eq(p.stdout, "spawn 0 7\nexec 7\n", what)
        sfkit.check("shim posix_spawn -> libsftrace.so" in p.stderr, f"{what}: {p.stderr!r}")
        sfkit.check("shim execve -> libsftrace.so" in p.stderr, f"{what}: {p.stderr!r}")
        sfkit.eq(kids, 2, f"{what}: child logs")


def test_rtld_next_shim_after_runtime_still_called():
    """A preload after the runtime (record -- env LD_PRELOAD=shim.so prog):
    untraced its posix_spawn, execve and dup2 run (2 messages, 'shim dup2
    calls 1'); traced the runtime's wrappers skipped it (libc's rewritten
    posix_spawn, the bare system calls): 0 posix_spawn/execve messages,
    'shim dup2 calls 0'. They go on to the next definition now."""
    exe = _c("skep24f2_spawner")
    shim = _c("skep24f2_shim.so", ["-ldl"], src="skep24f2_shim.c", xray=False, shared=True)
    u = sfkit.run(["env", "LD_PRELOAD=" + shim, exe])
    sfkit.eq(u.stdout, "spawn 0 7\nexec 7\n", "untraced")
    sfkit.eq(sorted(u.stderr.splitlines()), ["shim dup2 calls 1",
                                                   "shim execve -> libc.so.6", "shim posix_spawn -> libc.so.6"],
             "untraced shim lines")
    p, kids = _shim_run("after", "")
    sfkit.eq(p.stdout, "spawn 0 7\nexec 7\n", "traced")
    sfkit.eq(kids, 2, "child logs")
    got = p.stderr.splitlines()
    sfkit.eq(("shim dup2 calls 1" in got, sum(ln.startswith("shim posix_spawn") for ln in got),
              sum(ln.startswith("shim execve") for ln in got)), (True, 1, 1),
             "traced: the shim saw dup2, posix_spawn, execve")


def test_quick_exit_old_version_runs_tls_destructors():
    exe = _c("skep24f2_qexit", src="skep24f2_qexit.cc", compiler="clang++")
    want = "tls dtor\nat_quick_exit\n"
    sfkit.eq(sfkit.run([exe], check_rc=5).stdout, want, "untraced")
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    sfkit.eq(sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log, "--", exe], check_rc=5).stdout, want, "traced")


def test_probe_for_absent_library_functions():
    exe = _c("skep24f2_probe", ["-ldl"])
    want = ("_Unwind_Find_FDE@GCC_3.0 absent\n_Unwind_SetIP absent\n"
            "_Znwm@GLIBCXX_3.4 absent\n_ZnwmSt11align_val_t absent\n")
    sfkit.eq(sfkit.run([exe, "call"]).stdout, want, "untraced")
    for args in ((), ("--alloc",)):
        log = os.path.join(sfkit.tmpdir(), "sf.log")
        p = sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log] + list(args) + ["--", exe, "call"], check_rc=None)
        sfkit.eq((p.returncode, p.stdout), (0, want), f"traced {' '.join(args)}")


if __name__ == "__main__":
    sfkit.main(globals())
