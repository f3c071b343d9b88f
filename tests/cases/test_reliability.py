"""Reliability of the runtime (issue 7): traced programs keep working and
their traces stay complete under threads, signals, crashes, unwinding, full
disks and deep recursion; the security properties of the runtime.

Every case runs a fixture under `sftrace record` (or with the runtime
preloaded directly, where `record` itself would refuse first) and checks
both the program's own result and the trace, with exact counts.

Sizes: the defaults are the CI setting (the whole file runs in about a
minute on 2 cores): 64 threads x 1M events, 10,000 short-lived threads,
200,000 frames deep. SFTRACE_STRESS=full (tests/stress.sh) runs larger
ones: 64 threads x 2M events, 100,000 short-lived threads, a million frames
deep, 3000 signals per thread. Every recording runs under a file-size and CPU
limit, so a runaway case cannot fill the disk."""
import collections
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import threading
import time

from sfkit import (RUNTIME, SFTRACE, Skip, _limits, build_c, calls_fixture, check, check_nesting, dump_info, eq,
                   iter_dump_events, perfetto_summary, record_limited, report_calls, run, run_limited, rust_fixture,
                   tmpdir)

FULL = os.environ.get("SFTRACE_STRESS") == "full"
SIZES = {
    "threads": 64,
    "calls": 1_000_000 if FULL else 500_000,      # per thread: 2 * calls + 2 events (1M+ in CI)
    "sync_calls": 200_000 if FULL else 50_000,
    "short_threads": 100_000 if FULL else 10_000,
    "short_batch": 16,
    "signals": 3000 if FULL else 300,             # per thread
    "signal_threads": 4 if FULL else 2,
    "kill_threads": 16 if FULL else 4,
    "depth": 1_000_000 if FULL else 200_000,
    "unwind_iter": 2000 if FULL else 200,
    "unwind_depth": 20,
}
FIB_CALLS = 3193  # fib(16) in sig_timer.c: 2 * fib(17) - 1 calls


def fixture(name, src, libs=("-lpthread",), **kw):
    return build_c(name, [src], libs=list(libs), **kw)


def cleanup(*paths):
    """The big logs go as soon as a case is done with them."""
    for p in paths:
        shutil.rmtree(p if os.path.isdir(p) else os.path.dirname(p), ignore_errors=True)


def convert_stderr(log, out=None, check_rc=0, extra=()):
    out = out or os.path.join(os.path.dirname(log), "out.pb")
    p = run([SFTRACE, "convert"] + list(extra) + [log, "-o", out], check_rc=check_rc)
    return p.stderr, out


def repairs(stderr):
    """The numbers of convert/report's 'repaired: ...' line, by kind."""
    got = {}
    for m in re.finditer(r"(\d+) (unmatched exits? dropped|frames? closed by unwinding|open frames? closed at "
                         r"thread end|backward timestamps? raised)", stderr):
        key = m.group(2).split()[0]  # unmatched, frame(s), open, backward
        got[{"frame": "unwound", "frames": "unwound"}.get(key, key)] = int(m.group(1))
    return got


# ---- 1. threads ----

def _many_threads(writer, calls):
    exe = fixture("stress_threads", "stress_threads.c")
    n = SIZES["threads"]
    p, log = record_limited([exe, "many", str(n), str(calls)], env={"SFTRACE_WRITER": writer})
    try:
        check("stress ok" in p.stdout, p.stdout[-500:])
        want = {}
        for line in p.stdout.splitlines():
            if line.startswith("thread "):
                _, i, tid, c = line.split()
                want[int(tid)] = 2 * int(c) + 2  # work() entry/exit + tick() calls
        eq(len(want), n, "threads reported by the program")
        info = dump_info(log)
        eq((info["dropped"], info["write_errors"]), (0, 0), "dropped events and write errors")
        got = {t["tid"]: t for t in info["threads"]}
        eq(len(info["threads"]), n + 1, "threads in the log (workers and main)")
        for tid, events in want.items():
            check(tid in got, f"thread {tid} missing from the log")
            eq((got[tid]["events"], got[tid]["lost"]), (events, 0), f"events and losses of thread {tid}")
        main = [t for t in info["threads"] if t["tid"] not in want]
        eq([(t["events"], t["lost"]) for t in main], [(2, 0)], "main thread: main entry and exit")
        # The frame pass over every event: nothing unmatched, unwound or
        # out of order, and the calls per thread are exact.
        calls_by, rep = report_calls(log)
        eq(repairs(rep.stderr), {}, "repairs")
        check("warning" not in rep.stderr, rep.stderr)
        for tid, events in want.items():
            eq(calls_by[(tid, "tick")], (events - 2) // 2, f"tick calls on {tid}")
            eq(calls_by[(tid, "work")], 1, f"work calls on {tid}")
    finally:
        cleanup(log)


def test_threads_64_concurrent_exact():
    _many_threads("thread", SIZES["calls"])


def test_threads_64_concurrent_sync_writes():
    # Every thread hands its own batches off (pwritev at offsets claimed
    # with an atomic add): 64 writers at once.
    _many_threads("sync", SIZES["sync_calls"])


def test_threads_short_lived_bounded_memory():
    exe = fixture("stress_threads", "stress_threads.c")
    n, batch = SIZES["short_threads"], SIZES["short_batch"]
    base = run_limited([exe, "short", str(n), str(batch)], fsize=1 << 20)
    rss_untraced = int(re.search(r"maxrss (\d+)", base.stdout).group(1))
    p, log = record_limited([exe, "short", str(n), str(batch)])
    try:
        check("stress ok" in p.stdout, p.stdout)
        rss = int(re.search(r"maxrss (\d+)", p.stdout).group(1))
        info = dump_info(log, events=True)
        eq(info["summary"]["threads"], n + 1, "threads")
        per = collections.Counter(t["events"] for t in info["threads"])
        eq(dict(per), {22: n, 2: 1}, "events per thread (22 per short thread, 2 for main)")
        eq(sum(t["lost"] for t in info["threads"]), 0, "lost")
        eq((info["summary"]["dropped"], info["warnings"]), (0, []), "dropped, warnings")
        # Slots of exited threads are reused: at most `batch` threads (two
        # slots each) plus main are alive at once, so the file holds a few
        # dozen 68 KiB slots and the 256-byte DATA chunk of every thread.
        # Without reuse it would hold one slot pair per thread (GiBs).
        size = os.path.getsize(log)
        bound = 4096 + 65536 + 2 * (batch + 2) * (65536 + 4096) + n * (80 + 22 * 8)
        check(size <= bound, f"log is {size} bytes, more than {bound}: slots not reused")
        # Each slot is resident while mapped: memory must not grow per thread.
        check(rss - rss_untraced < 2 * (batch + 2) * 64 + 16384,
              f"max RSS {rss} KiB traced vs {rss_untraced} KiB untraced")
    finally:
        cleanup(log)


# ---- 2. signals ----

def _signal_run(mode, nthreads, signals, handler_calls, env=None, period_us=100):
    exe = fixture("sig_timer", "sig_timer.c", libs=("-lpthread", "-lrt"))
    p, log = record_limited([exe, mode, str(nthreads), str(signals), str(handler_calls), str(period_us)], env=env,
                            timeout=240, cpu=120, fsize=8 << 30)  # full size: 2.3 GB of log
    check("fib ok" in p.stdout, f"program result: {p.stdout[-500:]}")
    want = {}
    for line in p.stdout.splitlines():
        m = re.match(r"thread (\d+) handled (\d+) iterations (\d+)", line)
        if m:
            want[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    eq(len(want), nthreads, "threads reported")
    for tid, (handled, _) in want.items():
        check(handled >= signals, f"thread {tid} handled {handled} signals, want {signals}")
    return log, want


def _check_signal_counts(log, want, handler_calls):
    calls, rep = report_calls(log)
    got = repairs(rep.stderr)
    clamped = got.pop("backward", 0)
    eq(got, {}, "repairs other than clamped times")
    # A signal that lands between the trampoline's rdtsc and its slot claim
    # stores the interrupted event after the handler's, with an earlier
    # time: at most one per signal.
    check(clamped <= sum(h for h, _ in want.values()), f"{clamped} clamped times")
    for tid, (handled, iters) in want.items():
        eq(calls[(tid, "on_signal")], handled, f"on_signal calls on {tid}")
        eq(calls[(tid, "handler_leaf")], handled * handler_calls, f"handler_leaf calls on {tid}")
        eq(calls[(tid, "fib")], iters * FIB_CALLS, f"fib calls on {tid}")
    info = dump_info(log)
    eq(sum(t["lost"] for t in info["threads"]), 0, "records lost")
    eq(info["dropped"], 0, "dropped")


def test_signals_handler_nests_in_interrupted_frame():
    # (Fewer signals than the other case: every event is replayed here.)
    for mode, nthreads in (("timer", SIZES["signal_threads"]), ("real", 1)):
        log, want = _signal_run(mode, nthreads, SIZES["signals"] * 2 // 3, 3)
        try:
            _check_signal_counts(log, want, 3)
            # Replay every event: each on_signal frame opens on top of the
            # frame it interrupted (a workload function, never the handler
            # itself), and every exit closes the innermost frame.
            stacks = collections.defaultdict(list)
            last = {}
            inversions = 0
            for e in iter_dump_events(log):
                st = stacks[e.tid]
                if e.time < last.get(e.tid, 0):
                    inversions += 1
                last[e.tid] = max(e.time, last.get(e.tid, 0))
                if e.kind == "ENTRY":
                    if e.name == "on_signal":
                        check(st and st[-1] in ("fib", "compute", "worker", "main"),
                              f"{mode}: on_signal entered on top of {st[-3:]}")
                    st.append(e.name)
                    continue
                check(st, f"{mode}: {e.kind} of {e.name} on tid {e.tid} with no open frame")
                eq(st.pop(), e.name, f"{mode}: tid {e.tid} {e.kind} closes the innermost frame")
            for tid, st in stacks.items():
                eq(st, [], f"{mode}: frames left open on {tid}")
            check(inversions <= sum(h for h, _ in want.values()), f"{inversions} time inversions")
        finally:
            cleanup(log)


def test_signals_heavy_handler_nothing_lost():
    # Handlers that record 2000 events each fill the 4092-event buffer
    # while the code they interrupted is between claiming a record and
    # storing it: the claimed record must not be lost nor overwritten.
    # (Every 250 us: handlers seldom run back to back; when they do, the
    # interrupted context waits through several full batches.)
    modes = [{"SFTRACE_WRITER": "thread"}, {"SFTRACE_WRITER": "sync"}]
    # Monotonic-clock mode makes every event a C call, so its handlers can
    # outlast the 250 us period and run back to back: about one run in
    # twenty starves the interrupted code for more than the 255 slots the
    # runtime will retire (a million events), and the runtime then drops
    # and counts events rather than write a slot with a hole
    # (docs/DESIGN.md). Exact counts cannot hold then, so the case runs
    # only in tests/stress.sh.
    if FULL:
        modes.append({"SFTRACE_CLOCK": "monotonic"})
    for env in modes:
        log, want = _signal_run("timer", SIZES["signal_threads"], 3 * SIZES["signals"], 1000, env=env,
                                period_us=250)
        try:
            _check_signal_counts(log, want, 1000)
        except AssertionError as e:
            raise AssertionError(f"{env}: {e}") from None
        finally:
            cleanup(log)


# ---- 3. crashes ----

def test_crash_deep_stack_repairs_counted():
    exe = calls_fixture()
    for mode, rc in (("segv", 139), ("abort", 134), ("_exit", 5)):
        _, log = record_limited([exe, mode], check_rc=rc)
        calls, _ = report_calls(log)
        eq(sum(n for (t, f), n in calls.items() if f == "tleaf"), 8000, f"{mode}: tleaf before the crash")
        err, _ = convert_stderr(log)
        # main, deep x21 and crash_here were open when the process died.
        eq(repairs(err), {"open": 23}, f"{mode}: repairs")
        cleanup(log)


def _read_progress(path, n):
    data = open(path, "rb").read()
    return [struct.unpack_from("<qq", data, 16 * i) for i in range(n)]


def test_crash_kill9_keeps_every_event_before_it():
    exe = fixture("stress_kill", "stress_kill.c")
    n = SIZES["kill_threads"]
    d = tmpdir()
    log, progress = os.path.join(d, "sf.log"), os.path.join(d, "progress")
    # Its own session: whatever happens, the fixture (which never ends by
    # itself) goes with the process group at the end.
    p = subprocess.Popen([SFTRACE, "record", "-o", log, "--", exe, str(n), progress], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=_limits(2 << 30, 120),
                         start_new_session=True)

    def kill_group():
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    watchdog = threading.Timer(120, kill_group)
    watchdog.start()
    try:
        line = p.stdout.readline()
        check(line.startswith("ready "), f"fixture said {line!r}")
        pid = int(line.split()[1])
        time.sleep(0.3)  # it keeps recording: batches in flight, in slots, in the writer's queue
        os.kill(pid, signal.SIGKILL)
        out, err = p.communicate(timeout=60)
    finally:
        watchdog.cancel()
        kill_group()
        p.wait()
    eq(p.returncode, 128 + 9, f"record's status; stderr: {err}")
    check("killed by signal 9" in err, err)
    done = _read_progress(progress, n)
    info = dump_info(log)
    eq(info["state"], "running (or died without exit hooks)", "state")
    eq(sum(t["lost"] for t in info["threads"]), 0, "lost records")
    calls, rep = report_calls(log)
    for tid, completed in done:
        check(tid > 0 and completed >= 20000, f"progress record {tid} {completed}")
        # Every iteration the program completed is in the trace, and at
        # most the one it was in when it died.
        check(calls[(tid, "outer")] in (completed, completed + 1),
              f"thread {tid}: {calls[(tid, 'outer')]} outer calls, {completed} completed")
        check(2 * completed <= calls[(tid, "inner")] <= 2 * completed + 2,
              f"thread {tid}: {calls[(tid, 'inner')]} inner calls, {completed} completed")
        eq(calls[(tid, "worker")], 1, f"worker on {tid}")
    got = repairs(rep.stderr)
    eq(set(got) - {"open"}, set(), f"repairs: {rep.stderr}")
    # Prefix-consistent: per thread every exit closes the innermost frame,
    # and what is left open is the path the thread was on.
    left = check_nesting(list(iter_dump_events(log)))
    for tid, st in left.items():
        check(st in (["main"], ["worker"], ["worker", "outer"], ["worker", "outer", "inner"]),
              f"open frames on {tid}: {st}")
    eq(got.get("open", 0), sum(len(s) for s in left.values()), "open frames closed at thread end")
    cleanup(log)


# ---- 4. unwinding ----

def _unwind_case(exe, name, skipped_fn, extra_check=None):
    it, depth = SIZES["unwind_iter"], SIZES["unwind_depth"]
    p, log = record_limited([exe, str(it), str(depth)])
    check(f"ok {it}" in p.stdout, p.stdout)
    events = list(iter_dump_events(log))
    entries = sum(1 for e in events if e.kind == "ENTRY" and e.name.startswith(skipped_fn))
    exits = sum(1 for e in events if e.kind != "ENTRY" and e.name.startswith(skipped_fn))
    eq((entries, exits), (it * (depth + 1), 0), f"{name}: {skipped_fn} entries and exits (all exits skipped)")
    # Independently of the converter: replay the events and count the frames
    # an exit has to close before reaching its own.
    stacks = collections.defaultdict(list)
    unwound = 0
    for e in events:
        st = stacks[e.tid]
        if e.kind == "ENTRY":
            st.append(e.name)
        elif e.name in st:
            while st[-1] != e.name:
                st.pop()
                unwound += 1
            st.pop()
    if extra_check:
        extra_check(events, unwound)
    else:
        eq(unwound, it * (depth + 1), f"{name}: frames skipped")
    err, out = convert_stderr(log)
    got = repairs(err)
    eq(got.get("unwound"), unwound, f"{name}: 'frames closed by unwinding' in {err!r}")
    eq(got.get("unmatched"), None, f"{name}: unmatched exits")
    s = perfetto_summary(out)
    check(all(v == 0 for v in s["balance"].values()), f"{name}: unbalanced tracks {s['balance']}")
    eq(sum(n for f, n in s["begins"].items() if f.startswith(skipped_fn)), it * (depth + 1), f"{name}: slices")
    cleanup(log)
    return events


def test_unwind_cxx_exceptions():
    exe = build_c("unwind_cxx", ["unwind_cxx.cc"], compiler="clang++")
    events = _unwind_case(exe, "C++", "thrower")
    it, depth = SIZES["unwind_iter"], SIZES["unwind_depth"]
    guards = sum(1 for e in events if e.kind == "ENTRY" and e.name == "Guard::~Guard()")
    eq(guards, it * (depth + 1), "destructors run during unwinding")


def test_unwind_longjmp():
    exe = build_c("unwind_longjmp", ["unwind_longjmp.c"])
    _unwind_case(exe, "longjmp", "dive")


def test_unwind_rust_panic_catch_unwind():
    try:
        exe = rust_fixture("unwind_panic")
    except (FileNotFoundError, AssertionError) as e:
        raise Skip(f"no rustc with -Zinstrument-xray: {e}")
    it, depth = SIZES["unwind_iter"], SIZES["unwind_depth"]

    def frames_per_panic(events, unwound):
        # dive's frames, plus any instrumented closure or generic std frame
        # between guarded and the panic: the same number for every panic.
        check(unwound >= it * (depth + 1) and unwound % it == 0, f"{unwound} frames skipped over {it} panics")
    _unwind_case(exe, "Rust", "unwind_panic::dive", frames_per_panic)


# ---- 5. resource exhaustion ----

def _expected_many(stdout):
    total = 2  # main entry and exit
    for line in stdout.splitlines():
        if line.startswith("thread "):
            total += 2 * int(line.split()[3]) + 2
    return total


def _check_drops_exact(p, log, why):
    check("stress ok" in p.stdout, f"program output: {p.stdout[-300:]}")
    expected = _expected_many(p.stdout)
    m = re.search(r"(\d+) events, .*?(\d+) DROPPED \((\d+) failed writes, last: ([^)]*)\)", p.stderr)
    check(m, f"record's summary says what was dropped: {p.stderr}")
    eq(m.group(4), why, "last error")
    info = dump_info(log, events=True)
    s = info["summary"]
    # Every event is either in the log or counted as dropped, never both.
    eq(s["events"] + s["dropped"], expected, "events recorded + dropped")
    eq((s["events"], s["dropped"]), (int(m.group(1)), int(m.group(2))), "record's summary agrees with dump")
    check(s["dropped"] > 0, "something was dropped")
    calls, rep = report_calls(log)  # the part written stays readable
    return s


def test_exhaust_fsize_limit():
    exe = fixture("stress_threads", "stress_threads.c")
    # 300 KiB: the main thread and one worker get slots, the others drop
    # everything; 48 KiB: no thread gets a slot at all.
    for limit in (300 << 10, 48 << 10):
        for writer in ("thread", "sync"):
            p, log = record_limited([exe, "many", "8", "100000"], fsize=limit, env={"SFTRACE_WRITER": writer},
                                    check_rc=None)
            eq(p.returncode, 0, f"no SIGXFSZ, exit 0 (limit {limit}): {p.stderr}")
            s = _check_drops_exact(p, log, "File too large")
            check(os.path.getsize(log) <= limit, "never wrote past the limit")
            if limit < 64 << 10:
                eq(s["events"], 0, "nothing recorded without a slot")
            cleanup(log)


def _mount_tmpfs(path, opts):
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode}): needs root with CAP_SYS_ADMIN")


def _umount(path):
    subprocess.run(["umount", path], capture_output=True)


def test_exhaust_tiny_filesystem():
    exe = fixture("stress_threads", "stress_threads.c")
    d = tmpdir()
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    _mount_tmpfs(mnt, "size=256k")
    try:
        for writer in ("thread", "sync"):
            log = os.path.join(mnt, f"sf-{writer}.log")
            p, _ = record_limited([exe, "many", "8", "100000"], out=log, env={"SFTRACE_WRITER": writer})
            _check_drops_exact(p, log, "No space left on device")
            # The full filesystem leaves holes in the log (space claimed by
            # writes that failed): readers map them as zeros (a tmpfs hole
            # read through a mapping would be SIGBUS on a full tmpfs).
            err, _ = convert_stderr(log, out=os.path.join(d, f"{writer}.pb"))
            os.unlink(log)
    finally:
        _umount(mnt)
        cleanup(d)


def test_exhaust_unwritable_directory():
    exe = calls_fixture()
    d = tmpdir()
    ro = os.path.join(d, "ro")
    os.mkdir(ro)
    _mount_tmpfs(ro, "ro,size=64k")
    try:
        # record checks the directory first and runs nothing.
        p = run([SFTRACE, "record", "-o", os.path.join(ro, "sf.log"), "--", exe], check_rc=1)
        check(f"cannot write to directory {ro}" in p.stderr and "Read-only file system" in p.stderr, p.stderr)
        check("calls ok" not in p.stdout, "command not run")
        # The runtime alone (a directory that turned read-only after the
        # check, or SFTRACE_OUTPUT_FILE set by hand): the program runs on.
        for target, why in ((os.path.join(ro, "sf.log"), "Read-only file system"),
                            ("/proc/sftrace-test.log", "")):
            p = run([exe], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": target})
            check("calls ok 21" in p.stdout, p.stdout)
            lines = p.stderr.strip().splitlines()
            eq(len(lines), 1, f"one message: {p.stderr}")
            check(lines[0].startswith(f"sftrace: cannot create log {target}") and why in lines[0], lines[0])
            check(not os.path.exists(target), "no log")
    finally:
        _umount(ro)
        cleanup(d)


# ---- 6. deep recursion, exit from a thread ----

def test_deep_recursion():
    exe = fixture("stress_recursion", "stress_recursion.c")
    depth = SIZES["depth"]
    for where, stack in (("thread", None), ("main", -1)):
        p, log = record_limited([exe, where, str(depth)], stack=stack)
        check(f"depth {depth} ok" in p.stdout, p.stdout)
        calls, rep = report_calls(log)
        eq(repairs(rep.stderr), {}, f"{where}: repairs")
        eq(sum(n for (t, f), n in calls.items() if f == "rec"), depth + 1, f"{where}: rec calls")
        events = list(iter_dump_events(log))
        eq(check_nesting(events), {}, f"{where}: open frames")
        deepest, cur = 0, collections.Counter()
        for e in events:
            cur[e.tid] += 1 if e.kind == "ENTRY" else -1
            deepest = max(deepest, cur[e.tid])
        # [main,] run, then rec x depth + 1
        eq(deepest, depth + (2 if where == "thread" else 3), f"{where}: deepest stack")
        cleanup(log)


def test_exit_from_a_thread():
    exe = fixture("stress_exit_thread", "stress_exit_thread.c")
    n = 50_000
    p, log = record_limited([exe, str(n)], check_rc=7)
    check("exiting" in p.stdout, p.stdout)
    info = dump_info(log)
    eq(info["state"], "exited", "the exit hooks ran (on the exiting thread)")
    calls, rep = report_calls(log)
    leaf = sorted(c for (t, f), c in calls.items() if f == "work_leaf")
    eq(leaf, [n] * 4, "work_leaf per thread (3 workers, the exiting thread)")
    exiter = next(t for (t, f) in calls if f == "do_exit")
    eq(calls[(exiter, "at_exit_handler")], 1, "atexit handler recorded on the exiting thread")
    # main; worker + wait_forever x3; exiter + do_exit.
    err, out = convert_stderr(log)
    eq(repairs(err), {"open": 9}, "open frames closed at thread end")
    cleanup(log)


# ---- 8. security ----

def test_security_symlink_at_log_path():
    exe = calls_fixture()
    d = tmpdir()
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    log = os.path.join(d, "sf.log")
    dangling = os.path.join(d, "nothing-here")
    for target in (victim, dangling):
        if os.path.lexists(log):
            os.unlink(log)
        os.symlink(target, log)
        # record refuses an existing path...
        p = run([SFTRACE, "record", "-o", log, "--", exe], check_rc=1)
        check("exists" in p.stderr, p.stderr)
        # ...and a symlink planted after that check (here: the runtime run
        # directly) is not followed: the log goes to the per-process name.
        p = run([exe], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": log})
        check("calls ok" in p.stdout, p.stdout)
        eq(open(victim).read(), "precious\n", "symlink target untouched")
        check(not os.path.exists(dangling), "dangling symlink target not created")
        check(os.path.islink(log), "the symlink itself is left alone")
        logs = [f for f in os.listdir(d) if re.fullmatch(r"sf\.\d+\.log", f)]
        eq(len(logs), 1, f"a log under the fallback name: {os.listdir(d)}")
        st = os.lstat(os.path.join(d, logs[0]))
        check(stat.S_ISREG(st.st_mode), "a regular file")
        eq(sum(n for (t, f), n in report_calls(os.path.join(d, logs[0]))[0].items() if f == "leaf"), 60, "leaf")
        os.unlink(os.path.join(d, logs[0]))
    # --force removes the symlink, not its target.
    p = run([SFTRACE, "record", "--force", "-o", log, "--", exe])
    check(not os.path.islink(log) and stat.S_ISREG(os.lstat(log).st_mode), "--force: a new regular file")
    check(not os.path.exists(dangling), "--force did not follow the symlink")
    cleanup(d)


def test_security_log_mode_0600():
    exe = calls_fixture()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    old = os.umask(0)
    try:
        record_limited([exe], out=log)
    finally:
        os.umask(old)
    eq(stat.S_IMODE(os.stat(log).st_mode), 0o600, "log mode (umask 0)")
    cleanup(d)


def test_security_patched_text_never_writable():
    exe = fixture("sec_maps", "sec_maps.c", libs=("-ldl",))
    calls_fixture()
    lib = os.path.join(os.path.dirname(exe), "libcalls.so")
    p, log = record_limited([exe, lib])
    eq(re.findall(r"^wx (?:main|dlopen) .*$", p.stdout, re.M), [], "writable+executable mappings")
    check("wx total 0" in p.stdout, p.stdout)
    # Patching in passes mprotects only each pass's pages, which may leave
    # the text split into several mappings; every one must be r-x again.
    eq(sorted(set(re.findall(r"^exe text (\S+) (\S+)$", p.stdout, re.M))), [("dlopen", "r-xp"), ("main", "r-xp")],
       "the executable's code after patching")
    info = dump_info(log)
    calls, _ = report_calls(log)
    check(sum(n for (t, f), n in calls.items() if f == "lib_add") == 1, "the dlopen'd library was patched too")
    cleanup(log)


def _setpriv():
    if os.geteuid() != 0:
        raise Skip("needs root to make a setuid binary")
    if not shutil.which("setpriv"):
        raise Skip("setpriv (util-linux) is not installed")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_security_setuid_setgid_inert():
    as_nobody = _setpriv()
    d = tmpdir()
    os.chmod(d, 0o755)
    lib = os.path.join(d, "libsftrace.so")
    shutil.copy(RUNTIME, lib)
    exe = os.path.join(d, "sec_setuid")
    # Linked against the runtime (the setup-ABI way), so it loads even
    # where the loader ignores LD_PRELOAD (secure-execution mode).
    run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1", "-o", exe,
         os.path.join(os.path.dirname(__file__), "..", "fixtures", "sec_setuid.c"), "-L" + d, "-lsftrace",
         "-Wl,-rpath," + d])
    out = os.path.join(d, "out")
    os.mkdir(out)
    os.chmod(out, 0o777)
    # Control: not setuid, the runtime records (so the checks below can fail).
    p = run(as_nobody + [exe], env={"SFTRACE_OUTPUT_FILE": os.path.join(out, "plain.log")})
    check("ruid=65534 euid=65534" in p.stdout, p.stdout)
    check(os.path.exists(os.path.join(out, "plain.log")), "control run wrote a log")
    for bits, ids in ((stat.S_ISUID, "ruid=65534 euid=0"), (stat.S_ISGID, "rgid=65534 egid=0")):
        os.chmod(exe, 0o755 | bits)
        name = "setuid.log" if bits == stat.S_ISUID else "setgid.log"
        p = run(as_nobody + [exe], env={"SFTRACE_OUTPUT_FILE": os.path.join(out, name)})
        if ids not in p.stdout:
            raise Skip(f"set-id bits not honoured here (nosuid mount of {d}?): {p.stdout.strip()}")
        eq(p.stderr, "", "silent")
        eq(sorted(os.listdir(out)), ["plain.log"], f"{name}: no log written by a setuid/setgid program")
    cleanup(d)


def test_security_environment_validated():
    exe = calls_fixture()
    d = tmpdir()
    garbage = os.path.join(d, "garbage.filter")
    with open(garbage, "wb") as f:
        f.write(os.urandom(300) + b"\n")
    log = os.path.join(d, "sf.log")
    cases = [
        ({"SFTRACE_OUTPUT_FILE": "/tmp/" + "x" * 5000}, "SFTRACE_OUTPUT_FILE is too long"),
        ({"SFTRACE_OUTPUT_FILE": log, "SFTRACE_CLOCK": "sundial"}, "SFTRACE_CLOCK must be"),
        ({"SFTRACE_OUTPUT_FILE": log, "SFTRACE_WRITER": "pigeon"}, "SFTRACE_WRITER must be"),
        ({"SFTRACE_OUTPUT_FILE": log, "SFTRACE_FILTER": garbage}, f"bad filter {garbage}"),
        ({"SFTRACE_OUTPUT_FILE": log, "SFTRACE_FILTER": os.path.join(d, "missing")}, "cannot read filter"),
        ({"SFTRACE_OUTPUT_FILE": log, "SFTRACE_FILTER": d}, "not a regular file"),
        ({"SFTRACE_OUTPUT_FILE": log, "SFTRACE_FILTER": "/" + "f" * 5000}, "SFTRACE_FILTER is too long"),
        # A directory where the log file should be: no sibling "DIR.<pid>".
        ({"SFTRACE_OUTPUT_FILE": os.path.join(d, "adir")}, f"cannot create log {d}/adir: Is a directory"),
    ]
    os.mkdir(os.path.join(d, "adir"))
    for env, msg in cases:
        env = dict(env, LD_PRELOAD=RUNTIME)
        p = run([exe], env=env)
        check("calls ok 21" in p.stdout, f"{msg}: program output {p.stdout}")
        lines = p.stderr.strip().splitlines()
        eq(len(lines), 1, f"one line for {msg!r}: {p.stderr!r}")
        check(lines[0].startswith("sftrace: ") and msg in lines[0], f"{msg!r} in {lines[0]!r}")
        eq(sorted(f for f in os.listdir(d) if f not in ("garbage.filter", "adir")), [], f"{msg}: no log")
    cleanup(d)


# ---- 9. valgrind ----

def test_valgrind_memcheck_runtime():
    if not shutil.which("valgrind"):
        raise Skip("valgrind is not installed")
    # DWARF 4: valgrind 3.19 cannot read clang 14's default DWARF 5.
    vdir = os.path.join(os.path.dirname(calls_fixture()), "dwarf4")
    build_c("libcalls.so", ["libcalls.c"], flags=["-gdwarf-4"], shared=True, outdir=vdir)
    exe = build_c("calls", ["calls.c"], flags=["-gdwarf-4"], outdir=vdir,
                  libs=["-L" + vdir, "-lcalls", "-Wl,-rpath," + vdir, "-lpthread"])
    d = tmpdir()
    # --smc-check=all: valgrind re-translates code the runtime patches (the
    # sleds, the stub pages). The writer thread is a bare clone(); valgrind
    # follows it like any thread. Errors anywhere (our frames included) fail.
    # The writer by name: the default (auto) hands off on the traced thread
    # under valgrind (init.c), as sync does.
    for i, env in enumerate(({"SFTRACE_WRITER": "thread"}, {}, {"SFTRACE_CLOCK": "monotonic"})):
        log = os.path.join(d, f"sf{i}.log")
        env = dict(env, LD_PRELOAD=RUNTIME, SFTRACE_OUTPUT_FILE=log)
        p = run(["valgrind", "--tool=memcheck", "--smc-check=all", "--error-exitcode=99", "--track-origins=yes",
                 exe], env=env, check_rc=None, timeout=300)
        eq(p.returncode, 0, f"{env}: valgrind status\n{p.stderr[-3000:]}")
        check("calls ok 21" in p.stdout, p.stdout)
        check("ERROR SUMMARY: 0 errors" in p.stderr, p.stderr[-2000:])
        check("libsftrace" not in p.stderr, f"no report mentions the runtime: {p.stderr[-2000:]}")
        calls, _ = report_calls(log)
        eq(sum(n for (t, f), n in calls.items() if f == "tleaf"), 8000, f"{env}: tleaf under valgrind")
        eq(sum(n for (t, f), n in calls.items() if f == "lib_add"), 7, f"{env}: lib_add under valgrind")
    cleanup(d)
