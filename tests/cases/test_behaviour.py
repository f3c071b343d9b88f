"""The tracer never changes what the traced program does: loader semantics
(dlopen's caller, namespaces, constructors), credentials, re-entrancy into
the runtime, children and their environment, and clear errors for what
cannot be traced. Exact counts from fixtures with known call patterns."""
import os
import re

from sfkit import (FIXBUILD, SFTRACE, Skip, build_c, check, check_nesting, count_calls, dump_events, eq, record, run,
                   tmpdir)


def loader_fixture():
    plugdir = os.path.join(FIXBUILD, "plug")
    build_c("libbehp.so", ["beh_plug.c"], shared=True, outdir=plugdir)
    return build_c("beh_loader", ["beh_loader.c"], libs=["-ldl", "-Wl,-rpath,$ORIGIN/plug", "-Wl,--enable-new-dtags"])


def test_dlopen_keeps_callers_runpath_namespaces_and_constructors():
    exe = loader_fixture()
    alone = run([exe, "plug"])
    eq(alone.stdout.strip(), "plug ok 8", "untraced run")
    p, log = record([exe, "plug"])
    eq(p.stdout.strip(), "plug ok 8", "traced run: the same result")
    events = dump_events(log)
    c = count_calls(events)
    eq(c.get("plug_ctor_work"), 2, "constructor calls (base namespace and the new one): patched before they ran")
    eq(c.get("plug_fn"), 5, "plug_fn over both namespaces")
    eq(check_nesting(events), {}, "balanced")


def test_dlopen_churn_keeps_patching():
    exe = loader_fixture()
    # No libc dependency: each cycle maps one object (the loader's own cost).
    lib = build_c("libbehchurn.so", ["beh_churn.c"], shared=True, flags=["-nostdlib"])
    n = 8300  # past the 8,192 objects the runtime's table once held in a process's life
    p, log = record([exe, "churn", str(n), lib], args=["--writer", "sync"], timeout=600)
    check(p.stdout.startswith("churn ok"), p.stdout)
    # Without symbols (reading 8,300 object records' files is the reader's
    # cost, not what is tested): churn_fn is the library's only function.
    c = count_calls(dump_events(log, extra=["--no-symbols"]))
    eq(sum(v for k, v in c.items() if k.startswith("libbehchurn.so+")), n, "churn_fn over every load")


def test_dropping_root_reaches_every_task():
    if os.geteuid() != 0:
        raise Skip("needs root to drop privileges")
    exe = build_c("beh_dropuid", ["beh_dropuid.c"])
    d = tmpdir()
    os.chmod(d, 0o777)  # the log is created by the first event, before the drop
    log = os.path.join(d, "sf.log")
    p = run([SFTRACE, "record", "-o", log, "--writer", "thread", "--", exe])
    tasks = p.stdout.splitlines()
    eq(len(tasks), 2, f"two tasks, the program's and the writer: {p.stdout!r}")
    eq(set(tasks), {"task Uid=65534 Gid=65534"}, "every task has the new credentials")
    eq(count_calls(dump_events(log)).get("work"), 25, "work calls, before and after the drop")


def test_static_executable_refused_without_running():
    exe = build_c("beh_static", ["beh_static.c"], flags=["-static", "-fnoxray-link-deps"])
    eq(run([exe]).stdout.strip(), "static ran 2", "the fixture runs alone")
    d = tmpdir()
    out = os.path.join(d, "sub", "sf.log")
    p = run([SFTRACE, "record", "-o", out, "--", exe], check_rc=1)
    eq(p.stdout, "", "the program did not run")
    lines = p.stderr.splitlines()
    eq(len(lines), 1, f"one line: {p.stderr!r}")
    check(exe in lines[0] and "statically linked" in lines[0] and "link it dynamically" in lines[0], lines[0])
    eq(os.listdir(d), [], "nothing written")


def loader_of(exe):
    """The exe's PT_INTERP: the dynamic loader it names."""
    out = run(["readelf", "-lW", exe]).stdout
    return re.search(r"Requesting program interpreter: ([^\]]+)\]", out).group(1)


def test_program_started_through_its_loader_is_recorded():
    """`record -- LD.SO PROG ARGS`: the loader has no PT_INTERP (it is the
    interpreter) but a DT_SONAME, so record takes it, where a static-pie
    executable (ET_DYN, PT_DYNAMIC, no PT_INTERP, no DT_SONAME) is still
    refused; the runtime names and patches PROG, not the loader that
    /proc/self/exe names. Arguments, output and exit code pass through."""
    exe = build_c("beh_via_loader", ["beh_via_loader.c"])
    ld = loader_of(exe)
    untraced = run([ld, exe, "a", "b"], check_rc=3).stdout
    eq(untraced, "a b sum 3\n", "untraced through the loader")
    p, log = record([ld, exe, "a", "b"], args=["-q"], check_rc=3)
    eq(p.stdout, untraced, "traced output")
    eq(count_calls(dump_events(log)), {"main": 1, "leaf": 3}, "calls of the program, not the loader's")
    objs = run([SFTRACE, "dump", log]).stdout
    check(re.search(r"\[0\] " + re.escape(os.path.realpath(exe)) + r" \(main\)", objs), f"objects: {objs[:600]}")
    static_pie = build_c("beh_static_pie", ["beh_static.c"], flags=["-static-pie", "-fPIE", "-fnoxray-link-deps"])
    eq(run([static_pie]).stdout, "static ran 2\n", "the static-pie fixture runs alone")
    d = tmpdir()
    p = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", static_pie], check_rc=1)
    check(f"{static_pie} is statically linked" in p.stderr, p.stderr)
    eq(os.listdir(d), [], "nothing written for the static-pie executable")


def test_children_with_their_own_environment_are_traced():
    exe = build_c("beh_spawn", ["beh_spawn.c"])
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = run([SFTRACE, "record", "-o", log, "--", exe, "parent"])
    lines = p.stdout.splitlines()
    eq(sorted(line.split("=", 1)[0] for line in lines),
       sorted(["FOO", "LD_PRELOAD", "SFTRACE_KEEPER", "SFTRACE_NOTES_DIR", "SFTRACE_OUTPUT_FILE", "SFTRACE_SECCOMP_FILTERS"] * 2), f"each child's environment: {p.stdout!r}")
    eq(lines.count("FOO=1"), 2, "FOO kept as given")
    eq(lines.count("SFTRACE_OUTPUT_FILE=" + log), 2, "the tracer's output file")
    check(all(line == "LD_PRELOAD=" + os.path.realpath(os.path.join(os.path.dirname(SFTRACE), "libsftrace.so"))
              or not line.startswith("LD_PRELOAD=") for line in lines), p.stdout)
    logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
    eq(len(logs), 3, f"the parent's log and one per child: {logs}")
    counts = sorted(count_calls(dump_events(os.path.join(d, f))).get("child_work") for f in logs)
    eq(counts, [2, 3, 3], "child_work per process")


def test_children_with_their_own_environment_keep_alloc_tracing():
    """record --alloc: a child given its own envp gets both preloads back,
    so its malloc(12345) is recorded with its calls."""
    exe = build_c("beh_spawn", ["beh_spawn.c"])
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = run([SFTRACE, "record", "--alloc", "-o", log, "--", exe, "parent"])
    libdir = os.path.realpath(os.path.dirname(SFTRACE))
    want = "LD_PRELOAD=%s:%s" % (os.path.join(libdir, "libsftrace.so"), os.path.join(libdir, "libsftrace-alloc.so"))
    eq([line for line in p.stdout.splitlines() if line.startswith("LD_PRELOAD=")], [want] * 2, "each child's preload")
    logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
    eq(len(logs), 3, f"the parent's log and one per child: {logs}")
    per_log = []
    for f in logs:
        text = run([SFTRACE, "dump", os.path.join(d, f)]).stdout
        per_log.append((count_calls(dump_events(os.path.join(d, f))).get("child_work"),
                        len(re.findall(r"MALLOC +size=12345 ", text))))
    eq(sorted(per_log), [(2, 0), (3, 1), (3, 1)], "child_work calls and malloc(12345) per process")


def test_raw_fork_and_vfork_children_keep_out_of_the_parents_slots():
    exe = build_c("beh_forks", ["beh_forks.c"])
    for mode, want in (("raw", [3, 3]), ("vfork", [3])):
        d = tmpdir()
        log = os.path.join(d, "sf.log")
        p = run([SFTRACE, "record", "-o", log, "--", exe, mode], timeout=60)
        eq(p.stdout.strip(), f"{mode} ok", mode)
        eq(count_calls(dump_events(log)).get("work"), 3, f"{mode}: the parent's log holds its own calls only")
        logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
        counts = sorted(count_calls(dump_events(os.path.join(d, f))).get("work") for f in logs)
        eq(counts, want, f"{mode}: work per log {logs}")


def test_interposed_libc_functions_do_not_reenter_the_runtime():
    exe = build_c("beh_interpose", ["beh_interpose.c"])
    for writer in ("sync", "thread"):
        p, log = record([exe], args=["--writer", writer], timeout=60)
        eq(p.stdout.strip(), "interpose ok", writer)
        c = count_calls(dump_events(log))
        eq({k: c.get(k) for k in ("clock_gettime", "open", "realpath", "strerror")},
           {"clock_gettime": 3, "open": 2, "realpath": 1, "strerror": 1}, f"{writer}: the program's own calls only")


def test_slow_clock_is_announced_once_with_its_cost():
    exe = build_c("calls_once", ["beh_static.c"])
    p, _ = record([exe], args=["--clock", "monotonic"])
    notes = [line for line in p.stderr.splitlines() if "slow path" in line]
    eq(len(notes), 1, p.stderr)
    check(re.search(r"CLOCK_MONOTONIC read: \d+ ns here\), about 2 us per event", notes[0]), notes[0])
    p, _ = record([exe], args=["--clock", "tsc"])
    check("slow path" not in p.stderr, p.stderr)
