"""Issue 24 (h46exec): seccomp filters a process starts under.

A filter survives exec, and cannot be read back. The runtime of a program
exec'd under one must not make a call the filter refuses: from a traced
parent that installed it, the exec goes untraced where the chain refuses
any of the runtime's calls (sandbox.c, sf_seccomp_exec_untraced; the
nested cases of test_skeptic24v2); from a launcher no runtime watched (a
static one, a raw system call), the new runtime finds more filters than
the tracer knows (SFTRACE_SECCOMP_FILTERS against Seccomp_filters in
/proc/self/status) and makes no call but opening a file record watches
(record then says so once): untraced. Filters record itself runs under (a
container's) are known: traced as ever.

Each case compares the program's output and status untraced and traced."""
import glob
import os

from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, run, run_group, tmpdir


UNSEEN = "a program ran untraced (one or more): it started under a seccomp filter installed where the tracer did not see it"


def _status(rc):
    return -(rc - 128) if isinstance(rc, int) and rc > 128 else rc


def _fixtures():
    launch = build_c("h46_launch", ["h46_launch.c"], flags=["-static", "-Wall"], xray=False)
    lib = build_c("libskep24v2_lib.so", ["skep24v2_lib.c"], shared=True)
    exe = build_c("skep24v2_sec", ["skep24v2_sec.c"], flags=["-Wall"], libs=["-lpthread", "-ldl"])
    return launch, exe, lib


def _work_calls(d):
    return sum(count_calls(dump_events(log))["work"] for log in glob.glob(os.path.join(d, "sf*.log")))


def _via_launcher(action, targets, env=None):
    """record -- sh -c 'h46_launch ACTION TARGETS -- skep24v2_sec log ...':
    sh is traced, the static launcher is not (no runtime loads into it),
    the program starts under its filter. Returns (work calls logged,
    record's stderr)."""
    launch, exe, lib = _fixtures()
    cmd = [launch, action] + list(targets) + ["--", exe, "log", "prctl", lib, "mlock"]
    u = run(cmd, check_rc=None, env=env)
    d = tmpdir()
    sh = "exec " + " ".join(cmd)
    t = run_group([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", "/bin/sh", "-c", sh], timeout=60,
                  env=env)
    eq(t[0] != "timeout", True, f"{action} {targets}: record ended")
    eq((t[1], _status(t[0])), (u.stdout, u.returncode), f"{action} {targets}: output and status ({t[2][-600:]!r})")
    return _work_calls(d), t[2]


def test_untraced_launcher_kill_filter_program_runs_untraced():
    for action in ("kill", "killthread", "trap"):
        for targets in (["unshare"], ["sched_setaffinity", "sched_setscheduler"], ["ftruncate"], ["mprotect_wx"]):
            calls, err = _via_launcher(action, targets)
            eq(calls, 0, f"{action} {targets}: the program under an unknown filter is not traced")
            eq(err.count(UNSEEN), 1, f"{action} {targets}: record says so once: {err[-600:]!r}")


def test_untraced_launcher_errno_filter_untraced_too():
    # an unknown filter's action cannot be known either
    calls, err = _via_launcher("errno", ["unshare", "ftruncate"])
    eq(calls, 0, "untraced")


def test_untraced_launcher_without_filter_traced():
    calls, err = _via_launcher("none", ["unshare"])
    check(calls > 10000, f"traced: work calls {calls} ({err[-400:]!r})")
    eq(err.count(UNSEEN), 0, f"no line: {err[-600:]!r}")


def test_record_under_filter_traces():
    """A container's profile: record starts under it, so do its children;
    the filter is known (record's count) and the program is traced."""
    launch, exe, lib = _fixtures()
    cmd = [exe, "log", "prctl", lib, "mlock"]
    pre = [launch, "errno", "sched_setscheduler", "--"]
    u = run(pre + cmd, check_rc=None)
    d = tmpdir()
    t = run_group(pre + [SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--"] + cmd, timeout=60)
    eq((t[1], _status(t[0])), (u.stdout, u.returncode), f"output and status ({t[2][-600:]!r})")
    check(_work_calls(d) > 10000, f"traced: {_work_calls(d)}")
    eq(t[2].count(UNSEEN), 0, f"no line: {t[2][-600:]!r}")


def test_raw_install_then_nested_exec():
    """A filter installed with a raw system call instruction (no wrapper
    sees it) that kills unshare: the instrumented program the filtered one
    execs finds a filter it was not told of and stays out."""
    launch, exe, lib = _fixtures()
    env = {"SKEP_SPAWN": f"SKEP_SPAWN=true {exe} log prctl {lib} mlock"}
    for target in ("unshare", "ftruncate", "sched_setaffinity"):
        cmd = [exe, "kill", "asm", lib, target]
        u = run(cmd, check_rc=None, env=env)
        d = tmpdir()
        t = run_group([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--"] + cmd, timeout=60, env=env)
        eq((t[1], _status(t[0])), (u.stdout, u.returncode), f"{target}: output and status ({t[2][-600:]!r})")
        eq(t[2].count(UNSEEN), 1, f"{target}: the nested program's line: {t[2][-600:]!r}")


def test_known_filter_nested_exec_traced():
    """A traced program installs a filter that refuses none of the
    runtime's calls (LOG on mlock) and spawns (sh -c) another instrumented
    program: the filter is known to it (SFTRACE_SECCOMP_FILTERS raised by
    the exec), so it is traced too: every process's log has its calls."""
    launch, exe, lib = _fixtures()
    env = {"SKEP_SPAWN": f"SKEP_SPAWN=true {exe} log prctl {lib} mlock", "SKEP_NO_THREADS": "1"}
    cmd = [exe, "log", "prctl", lib, "mlock"]
    u = run(cmd, check_rc=None, env=env)
    d = tmpdir()
    t = run_group([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--"] + cmd, timeout=60, env=env)
    eq((t[1], _status(t[0])), (u.stdout, u.returncode), f"output and status ({t[2][-600:]!r})")
    per_log = sorted(count_calls(dump_events(log))["work"] for log in glob.glob(os.path.join(d, "sf*.log")))
    eq(len([c for c in per_log if c]), 6, f"logs with work calls (the program's three processes, twice): {per_log}")
    eq(t[2].count(UNSEEN), 0, f"no line: {t[2][-600:]!r}")


if __name__ == "__main__":
    import sfkit
    sfkit.main(globals())
