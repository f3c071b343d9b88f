"""sftrace record: exact call counts, nesting, threads, exit status,
output naming, and what happens with programs that have no sleds."""
import os
import re
import subprocess

from sfkit import (RUNTIME, SFTRACE, Skip, build_c, calls_fixture, check, check_nesting, count_calls, dump_events,
                   eq, record, run, rust_fixture, tmpdir)

CALLS = {"leaf": 60, "middle": 20, "outer": 10, "recurse": 51, "tail_caller": 5, "tail_callee": 5,
         "thread_work": 8, "tleaf": 8000, "lib_add": 7, "lib_inner": 7, "deep": 21, "crash_here": 1, "main": 1}


def test_calls_exact_counts():
    exe = calls_fixture()
    p, log = record([exe])
    check("calls ok" in p.stdout, p.stdout)
    events = dump_events(log)
    counts = count_calls(events)
    for fn, n in CALLS.items():
        eq(counts[fn], n, f"entries of {fn}")
    eq(set(counts) - set(CALLS), set(), "unexpected functions")
    open_frames = check_nesting(events)
    eq(open_frames, {}, "frames left open")
    # One main thread and eight workers, each with its own tid.
    tids = {e.tid for e in events}
    eq(len(tids), 9, "threads")
    for t in tids:
        names = {e.name for e in events if e.tid == t}
        check(names in ({"thread_work", "tleaf"},) or "main" in names, f"thread {t} mixes {names}")
    # The tail call shows as a TAIL event of tail_caller.
    eq(sum(1 for e in events if e.kind == "TAIL" and e.name == "tail_caller"), 5, "tail events")
    check(re.search(r"wrote .*sf\.log \(pid \d+\): 16392 events, 9 threads, 2 objects", p.stderr), p.stderr)


def test_writer_modes():
    # auto (the default) runs a writer thread when the process may use more
    # than one CPU and hands off synchronously otherwise; sync never runs
    # one; thread always does. The writer shows as one more task, and every
    # mode keeps every call.
    exe = build_c("writer_tasks", ["writer_tasks.c"])
    two_cpus = len(os.sched_getaffinity(0)) >= 2
    cases = [([], None, 2 if two_cpus else 1), (["--writer", "sync"], None, 1),
             (["--writer", "thread"], None, 2), ([], "0", 1), (["--writer", "thread"], "0", 2)]
    for args, cpu, want_tasks in cases:
        pin = ["taskset", "-c", cpu] if cpu else []
        d = tmpdir()
        log = os.path.join(d, "sf.log")
        p = run(pin + [SFTRACE, "record", "-o", log] + args + ["--", exe, "100000"])
        what = f"{' '.join(args) or 'auto'}{' on CPU ' + cpu if cpu else ''}"
        eq(p.stdout.strip(), f"calls 100000 tasks {want_tasks}", f"{what}: calls and tasks")
        eq(count_calls(dump_events(log))["wleaf"], 100000, f"{what}: wleaf entries in the log")


def test_rust_threads_closures_traits():
    try:
        exe = rust_fixture()
    except (FileNotFoundError, AssertionError) as e:
        raise Skip(f"no rustc with -Zinstrument-xray: {e}")
    p, log = record([exe])
    check("rust ok" in p.stdout, p.stdout)
    events = dump_events(log)
    eq(check_nesting(events), {}, "frames left open")
    counts = count_calls(events)

    def total(pattern):
        return sum(n for name, n in counts.items() if re.search(pattern, name))
    eq(total(r"^<rust_prog::Circle as rust_prog::Shape>::area$"), 12, "Circle::area")
    eq(total(r"^<rust_prog::Square as rust_prog::Shape>::area$"), 16, "Square::area")
    eq(total(r"^rust_prog::fib$"), 177, "fib")
    eq(total(r"^rust_prog::worker$"), 4, "worker")
    eq(total(r"^rust_prog::apply"), 40, "apply")
    worker_tids = {e.tid for e in events if e.name == "rust_prog::worker"}
    eq(len(worker_tids), 4, "worker threads")


def test_exit_status_passthrough():
    exe = calls_fixture()
    p, _ = record([exe, "exit", "3"], check_rc=3)
    check("calls ok" in p.stdout)


def test_signal_death_reported():
    exe = calls_fixture()
    p, log = record([exe, "segv"], check_rc=128 + 11)
    check(re.search(r"killed by signal 11 \(Segmentation fault\)", p.stderr), p.stderr)
    # Every event up to the crash is in the log: the pattern before deep()
    # ran completely and deep() recursed 21 levels into crash_here.
    events = dump_events(log)
    counts = count_calls(events)
    for fn in ("leaf", "middle", "outer", "tleaf", "lib_add"):
        eq(counts[fn], CALLS[fn], f"{fn} before the crash")
    eq(counts["deep"], 21, "deep frames at the crash")
    eq(counts["crash_here"], 1, "crash_here")
    main_tid = next(e.tid for e in events if e.name == "main")
    open_frames = check_nesting(events).get(main_tid, [])
    eq(open_frames, ["main"] + ["deep"] * 21 + ["crash_here"], "open frames at the crash")


def test_abort_and_exit_keep_events():
    exe = calls_fixture()
    for mode, rc in (("abort", 128 + 6), ("_exit", 5)):
        _, log = record([exe, mode], check_rc=rc)
        counts = count_calls(dump_events(log))
        eq(counts["tleaf"], 8000, f"{mode}: tleaf")
        eq(counts["crash_here"], 1, f"{mode}: crash_here")


def test_existing_output_refused_then_forced():
    exe = calls_fixture()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    record([exe], out=log)
    before = os.path.getsize(log)
    p = run([SFTRACE, "record", "-o", log, "--", exe], check_rc=1)
    check("exists" in p.stderr and "--force" in p.stderr, p.stderr)
    eq(os.path.getsize(log), before, "existing log untouched")
    record([exe], out=log, args=["--force"])
    eq(len([f for f in os.listdir(d) if f.endswith(".log")]), 1, "one log after --force")


def test_no_sleds_program():
    exe = build_c("nosleds", ["nosleds.c"], xray=False)
    p, log = record([exe])
    check("no sleds here" in p.stdout)
    check("no log written" in p.stderr, p.stderr)
    check(not os.path.exists(log), "no log file for a program without sleds")


def test_missing_command():
    p = run([SFTRACE, "record", "-o", os.path.join(tmpdir(), "sf.log"), "--", "/nonexistent/prog"], check_rc=127)
    check("cannot run /nonexistent/prog" in p.stderr, p.stderr)


def test_unwritable_output_dir():
    if os.geteuid() == 0:
        d = tmpdir()
        target = os.path.join(d, "file")
        open(target, "w").close()
        p = run([SFTRACE, "record", "-o", os.path.join(target, "sf.log"), "--", "true"], check_rc=1)
        check("not a directory" in p.stderr, p.stderr)
        return
    p = run([SFTRACE, "record", "-o", "/proc/sf.log", "--", "true"], check_rc=1)
    check("/proc" in p.stderr, p.stderr)


def test_print_solib_and_install_dir():
    p = run([SFTRACE, "record", "--print-solib"])
    eq(p.stdout.strip(), os.path.realpath(RUNTIME), "solib next to the binary")
    p = run([SFTRACE, "record", "--print-solib-install-dir"], env={"XDG_DATA_HOME": "/x/data"})
    eq(p.stdout.strip(), "/x/data/sftrace", "XDG data dir")
    p = run([SFTRACE, "record", "--print-solib-install-dir"], env={"XDG_DATA_HOME": "", "HOME": "/home/u"})
    eq(p.stdout.strip(), "/home/u/.local/share/sftrace", "default data dir")


def test_make_install_finds_runtime():
    root = os.path.dirname(os.path.dirname(SFTRACE))
    prefix = tmpdir()
    build = os.path.relpath(os.path.dirname(SFTRACE), root)
    run(["make", "-s", "-C", root, f"BUILD={build}", "install", f"PREFIX={prefix}"])
    sft = os.path.join(prefix, "bin", "sftrace")
    p = run([sft, "record", "--print-solib"], env={"HOME": "/nonexistent"})
    eq(p.stdout.strip(), os.path.join(prefix, "lib", "sftrace", "libsftrace.so"), "installed runtime")
    exe = calls_fixture()
    p, log = record([exe])
    check(os.path.exists(log))
    # A copy in the per-user dir is found when nothing else is.
    lone = os.path.join(tmpdir(), "sftrace")
    subprocess.run(["cp", sft, lone], check=True)
    home = tmpdir()
    p = run([lone, "record", "--print-solib"], env={"HOME": home, "XDG_DATA_HOME": ""}, check_rc=1)
    check("libsftrace.so not found" in p.stderr, p.stderr)
    os.makedirs(os.path.join(home, ".local/share/sftrace"))
    subprocess.run(["cp", RUNTIME, os.path.join(home, ".local/share/sftrace/")], check=True)
    p = run([lone, "record", "--print-solib"], env={"HOME": home, "XDG_DATA_HOME": ""})
    eq(p.stdout.strip(), os.path.join(home, ".local/share/sftrace/libsftrace.so"), "per-user runtime")


def test_ld_preload_appended():
    exe = calls_fixture()
    d = tmpdir()
    # An existing LD_PRELOAD entry stays first and keeps working.
    shim = build_c("libshim.so", ["shim.c"], shared=True, xray=False)
    # (ASan, when the CLI is built with it, must not insist on coming first.)
    p, log = record([exe], out=os.path.join(d, "sf.log"),
                    env={"LD_PRELOAD": shim, "ASAN_OPTIONS": "verify_asan_link_order=0"})
    check("shim loaded" in p.stderr, p.stderr)
    eq(count_calls(dump_events(log))["leaf"], 60, "leaf with another preload")


def test_help_everywhere():
    for cmd in (["--help"], ["record", "--help"]):
        p = run([SFTRACE] + cmd)
        check("usage:" in p.stdout, p.stdout)
    p = run([SFTRACE, "record", "--bogus"], check_rc=2)
    check("usage" in p.stderr or "unrecognized" in p.stderr, p.stderr)
    p = run([SFTRACE, "nosuchcommand"], check_rc=2)
    check("unknown command" in p.stderr)
