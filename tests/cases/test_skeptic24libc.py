"""Skeptic 24 (libc untouched): the runtime never rewrites libc's code, and
its wrappers go on to the next definition in lookup order, so a preload
after the runtime sees the program's calls. system() and popen() run the
runtime's copy of glibc's (exec_env.c) only when environ lacks the
tracer's variables; these cases hold that copy to glibc's behaviour with
exact outputs, with the environment kept (glibc's own run) and emptied
(the copy runs)."""
import os

from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, run, tmpdir

WANT_SHELL = """leaf 500500
system(leaf): exit 4
system(exit 3): exit 3
system(kill TERM): signal 15
system(not found): exit 127
system(NULL): 1
popen r read: leaf 500500
pclose r: exit 4
leaf read to the child
leaf 500500
pclose w: exit 4
popen re: close-on-exec 1
fclose of a popen stream: exit 6
waitpid after it: -1 errno 10
popen(rw): NULL errno 22
system(130929 bytes): exit 9
popen(130929 bytes): ok, pclose exit 9
system(131071 bytes): exit 9
popen(131071 bytes): ok, pclose exit 9
system(131072 bytes): exit 127
popen(131072 bytes): NULL errno E
system(200000 bytes): exit 127
popen(200000 bytes): NULL errno E
SIGINT after: handler
"""


def _glibc():
    major, minor = os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2]
    return int(major), int(minor)


# popen's errno when its spawn fails (E2BIG here): ENOMEM before glibc 2.38, the spawn's error since
WANT_SHELL = WANT_SHELL.replace("errno E\n", "errno %d\n" % (12 if _glibc() < (2, 38) else 7))


def _shell(mode):
    exe = build_c("sk24libc_shell", ["sk24libc_shell.c"])
    u = run([exe, mode])
    eq(u.stdout, WANT_SHELL, f"untraced {mode}")
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe, mode])
    eq(t.stdout, WANT_SHELL, f"traced {mode} ({t.stderr[-300:]!r})")
    logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
    leaf = sorted(count_calls(dump_events(os.path.join(d, f))).get("leaf", 0) for f in logs)
    eq(leaf, [0, 1000, 1000, 1000], f"leaf calls per log: {logs}")


def test_system_popen_after_clearenv_as_glibc_children_traced():
    """After clearenv (the runtime's copy of glibc's system and popen):
    statuses (exit 3, SIGTERM, 127 for a missing command and for a line
    the kernel refuses, E2BIG at 131072 bytes), system(NULL), popen "r",
    "w", "re" (close-on-exec kept), "rw" refused, fclose of a popen stream
    waiting for its child as glibc's does, lines of 130929 and 131071
    bytes run unchanged (a shell-prefix design once left the first
    untraced and showed its prefix to the shell), the program's SIGINT
    handler in place after: all as untraced; each child the program
    again, with a log of its own and its 1000 calls."""
    _shell("clear")


def test_system_popen_environment_kept_as_glibc():
    """The same with the environment kept: the wrappers go on to glibc's
    own system and popen (pclose and fclose to glibc's too). Both shell
    cases pass on main as well (main ran its copy of system and glibc's
    popen through a rewritten posix_spawn): guards for the copies."""
    _shell("keep")


def test_fd_calls_reach_a_preload_after_the_runtime():
    """record -- env LD_PRELOAD=shim.so prog: the shim wraps dup, dup3,
    close_range and closefrom. Untraced it sees "dup 1 dup3 2 close_range
    seen closefrom 1". Traced the runtime's wrappers made the system calls
    themselves: the shim saw "dup 0 dup3 0 close_range 0 closefrom 0".
    They go on to the next definitions now (closefrom: the pieces below the
    runtime's number through close_range, the rest through closefrom)."""
    exe = build_c("sk24libc_fds", ["sk24libc_fds.c"])
    shim = build_c("sk24libc_shim.so", ["sk24libc_shim.c"], libs=["-ldl"], xray=False, shared=True)
    u = run(["env", "LD_PRELOAD=" + shim, exe])
    want_err = "shim dup 1 dup3 2 close_range seen closefrom 1\n"
    eq(u.stderr, want_err, "untraced shim")
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", "env", "LD_PRELOAD=" + shim, exe])
    eq((t.stdout, t.stderr), (u.stdout, want_err), "traced: the program's results, the shim's counts")


def test_overlapping_system_glibc_and_copy_keep_sigint_ignored_then_handled():
    """Two system() calls overlap, one with the tracer's variables in
    environ (glibc's own) and one without (the runtime's copy), in both
    orders; a SIGINT sent while the later one still waits. Untraced one
    count of callers keeps SIGINT ignored until the last returns: 0 calls
    of the handler, the handler back after. With glibc's first, glibc puts
    the handler back when its call returns while the copy's still waits:
    without system_from_glibc (exec_env.c) the SIGINT reached the handler
    (1 call, checked by disabling it). The wrapper counts the calls it
    sends to glibc's, and the copy ignores the signals again when glibc's
    last one returns; while a copy's call waits, every call takes the
    copy. (main, which ran its copy for every call, passes too: a guard
    for the two-path design.)"""
    exe = build_c("sk24libc_sysmix", ["sk24libc_sysmix.c"], libs=["-lpthread"])
    want = ("glibc then copy: SIGINT handled 0 times during, after both: handler\n"
            "copy then complete: SIGINT handled 0 times during, after both: handler\n")
    eq(run([exe]).stdout, want, "untraced")
    d = tmpdir()
    eq(run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe]).stdout, want, "traced")


def test_overlapped_system_after_clearenv_leaves_the_mask_as_glibc():
    """After clearenv a thread's system("sleep 0.4") is overlapped by
    main's system("true"). glibc before 2.38 put the caller's mask back
    only when the last overlapping call returned (BZ #30163: main's SIGCHLD
    blocked for good), but Debian's 2.36 carries the fix: 0 and 0
    untraced here, so the copy cannot follow the version number; it puts
    the mask back at every return, and must match whatever the running
    libc does. (A guard: main passes too.)"""
    exe = build_c("sk24libc_sysmix", ["sk24libc_sysmix.c"], libs=["-lpthread"])
    u = run([exe, "mask"])
    check(u.stdout.startswith("SIGCHLD blocked in main after its overlapped system: "), u.stdout)
    d = tmpdir()
    eq(run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe, "mask"]).stdout, u.stdout,
       "traced")
