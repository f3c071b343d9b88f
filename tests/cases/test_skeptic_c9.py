"""Skeptic c9: thread cancellation blocked in masked sections (85862979)
and the log's locks that spin a little then yield (d4d8e31b), against
"safe to leave on in production". Each case runs a fixture of its own
(tests/fixtures/skc9_*.c) untraced and traced and compares output, status
and wall time; breaks found are known breaks of issue 24."""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sfkit  # noqa: E402

WRITERS = ("auto", "sync", "thread")


def _fx(name, libs=("-lpthread",)):
    return sfkit.build_c(name, [name + ".c"], libs=list(libs))


def _untraced(cmd, timeout=30, prefix=()):
    t0 = time.time()
    rc, out, err = sfkit.run_group(list(prefix) + cmd, timeout=timeout)
    return rc, out, err, time.time() - t0


def _traced(cmd, writer="auto", timeout=30, prefix=(), args=()):
    d = sfkit.tmpdir()
    log = os.path.join(d, "sf.log")
    t0 = time.time()
    rc, out, err = sfkit.run_group(list(prefix) + [sfkit.SFTRACE, "record", "-q", "-o", log, "--writer", writer]
                                   + list(args) + ["--"] + cmd, timeout=timeout)
    return rc, out, err, time.time() - t0, log


def _calls(log):
    tsv = sfkit.run([sfkit.SFTRACE, "report", "--format", "tsv", log]).stdout
    return {r[1]: int(r[2]) for r in (ln.split("\t") for ln in tsv.splitlines()[1:])}, tsv


# ---- claim 1: cancellation ----

def _async_case(mode, rounds, threads, depth, handler=False):
    p = _fx("skc9_cancel")
    cmd = [p, mode, str(rounds), str(threads), str(depth)]
    rc0, out0, _, u = _untraced(cmd)
    sfkit.eq(rc0, 0)
    n = rounds * threads
    want = f"cancelled {n} of {n}, cleanups {n}" + (", handled some" if handler else "") + "\n"
    sfkit.eq(out0, want, "untraced")
    for w in WRITERS:
        rc1, out1, err, t, log = _traced(cmd, w)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w} after {t:.1f} s (untraced {u:.2f} s): {err[-300:]}")
        calls, tsv = _calls(log)
        # every cleanup handler's 100 traced calls are in the log, and
        # every thread reached the bottom once
        sfkit.eq((calls.get("cu_leaf"), calls.get("bottom")), (100 * n, n), f"--writer {w}: report\n{tsv}")
        if mode == "async" or mode == "asig":
            sfkit.eq(calls.get("rec"), n * (depth + 1), f"--writer {w}: rec frames\n{tsv}")
        if mode == "tail":
            sfkit.eq(calls.get("trec"), n, f"--writer {w}: tail calls are one entry each\n{tsv}")
        if handler:
            # a cancel may land inside a handler, cutting its 20 calls short
            # (ASan build: 52 handlers, 1,031 h_leaf calls), at most one a thread
            h, k = calls.get("h_leaf", 0), calls.get("on_usr1", 0)
            sfkit.check(h > 0 and 20 * (k - n) <= h <= 20 * k, f"--writer {w}: the handler's calls\n{tsv}")
        rep = sfkit.run([sfkit.SFTRACE, "report", log]).stdout
        sfkit.check(re.search(rf"\b{n + 1} threads\b", rep), f"--writer {w}: report\n{rep}")


def test_async_cancel_deep_recursion_cleanup_records():
    """10 rounds of 4 threads, asynchronous cancellation landing in
    traced recursion 10 deep (-O2), a cleanup handler that makes 100
    traced calls: as untraced in each writer mode, the cleanups' calls
    all in the log (4,000), every rec frame once (440). Held."""
    _async_case("async", 10, 4, 10)


def test_async_cancel_tail_calls():
    """The same with the recursion by -O2 tail calls (jmp; one trec
    entry a thread, closed by the tail sleds). Held."""
    _async_case("tail", 10, 4, 10)


def test_async_cancel_with_handler_flood():
    """The same with 20 SIGUSR1 a thread just before the cancel, the
    handler making 20 traced calls: cancellation lands in and around the
    handlers. Held (the reader repairs 71-183 backward timestamps in 50
    rounds: the handler's batches, as designed)."""
    _async_case("asig", 10, 4, 10, handler=True)


def test_deferred_cancel_points():
    """A thread cancelled in read, nanosleep, pthread_cond_wait,
    pthread_testcancel, system() and popen+fgets after traced calls, 2
    rounds: every one cancelled, its cleanup run, as untraced in each
    writer mode; and after clearenv() (system and popen then the
    runtime's own copies) under auto. Held. (popen's shell outlives the
    program by 0.2 s: record waits for it, as README says it waits for
    daemons.)"""
    p = _fx("skc9_cancel")
    for env in ("0", "1"):  # 1: clearenv() first, system and popen the runtime's copies
        cmd = [p, "deferred", "2", "0", env]
        rc0, out0, _, _ = _untraced(cmd)
        sfkit.eq(rc0, 0)
        sfkit.check(out0.count("cancelled") == 6, out0)
        for w in (WRITERS if env == "0" else ("auto",)):
            rc1, out1, err, t, log = _traced(cmd, w)
            sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w}, clearenv {env} ({t:.1f} s): {err[-300:]}")
            calls, tsv = _calls(log)
            sfkit.eq(calls.get("cu_leaf"), 1200, f"--writer {w}, clearenv {env}: cleanups' calls\n{tsv}")


def test_fork_while_async_cancel_threads_trace():
    """8 rounds: 3 threads on traced recursion 5 deep with asynchronous
    cancellation while main forks 5 children that make traced calls and
    exit 3, then cancelled: as untraced, a log a child (41), each writer
    mode. Held (20 rounds: untraced 1.95 s, traced 2.1-4.0 s)."""
    p = _fx("skc9_cancel")
    cmd = [p, "asyncfork", "8", "3", "5"]
    rc0, out0, _, _ = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "cancelled 24 of 24, children 40 of 40\n"))
    for w in WRITERS:
        rc1, out1, err, t, log = _traced(cmd, w)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w} ({t:.1f} s): {err[-300:]}")
        d = os.path.dirname(log)
        sfkit.eq(len([f for f in os.listdir(d) if f.endswith(".log")]), 41, f"--writer {w}: logs")


def test_fork_waitpid_cancel_while_threads_are_created():
    """A thread forking children (traced calls, _exit 3) and cancelled in
    waitpid, 10 rounds, while 2 threads create and join threads that make
    traced calls: as untraced, each writer mode. Held."""
    p = _fx("skc9_cancel")
    cmd = [p, "forkcancel", "10", "2"]
    rc0, out0, _, _ = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "cancelled 10 of 10\n"))
    for w in WRITERS:
        rc1, out1, err, t, _ = _traced(cmd, w)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w} ({t:.1f} s): {err[-300:]}")


def test_sigev_thread_timer_rate():
    """A SIGEV_THREAD timer every 2 ms for 300 ms (glibc delivers it with
    signal 32, each firing on a new thread that makes 50 traced calls),
    a thread looping on traced calls meanwhile: traced fires at least 60%
    as often as untraced (seen: untraced 132-174 of 200, traced 145-199,
    noise of the shared machine both ways). Held."""
    p = _fx("skc9_cancel")
    cmd = [p, "timer", "300"]
    fired = lambda e: int(re.search(r"fired (\d+) of", e).group(1))  # noqa: E731
    rc0, out0, err0, _ = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "timer fired\n"))
    for w in WRITERS:
        rc1, out1, err1, _, log = _traced(cmd, w)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w}: {err1[-300:]}")
        sfkit.check(fired(err1) * 10 >= fired(err0) * 6, f"--writer {w}: traced {err1.strip()}, untraced {err0.strip()}")
        calls, tsv = _calls(log)
        sfkit.check(calls.get("h_leaf", 0) >= 50 * fired(err1), f"--writer {w}\n{tsv}")


def _timer_rate(writer, period_us):
    p = _fx("skc9_cancel")
    cmd = [p, "timer", "400", str(period_us), "0"]
    fired = lambda e: int(re.search(r"fired (\d+) of", e).group(1))  # noqa: E731
    rc0, out0, err0, _ = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "timer fired\n"))
    for _ in range(2):  # the loss is in some runs only
        rc1, out1, err1, _, _ = _traced(cmd, writer)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {writer}: {err1[-300:]}")
        sfkit.check(fired(err1) * 10 >= fired(err0) * 6,
                    f"--writer {writer}: traced {err1.strip()[-200:]}, untraced {err0.strip()}")


def test_sigev_thread_timer_fast_auto():
    """A SIGEV_THREAD timer every 200 us for 400 ms, nothing else running
    (each firing a new thread making 50 traced calls): --writer auto fires
    as often as untraced (seen 1,745-1,911 against 1,679-1,792 of 2,000).
    Held. (With a thread flooding traced calls beside it, 445 and 1,230
    against 1,741 and 1,618: the flood's own tracing on 2 CPUs.)"""
    _timer_rate("auto", 200)


def test_sigev_thread_timer_fast_sync():
    """Held since the log's locks sleep on a futex and sf_writer_call wakes one
    waiter a release (CI on 53d94cfa and b7c9c0b2, and here). Before: a
    SIGEV_THREAD timer every 200 us for 400 ms (a new thread a firing, 50
    traced calls each), nothing else running: untraced 1,679-1,792 firings
    of 2,000, traced --writer sync 278, 361, 1,152 (auto 1,745-1,911; every
    50 us: untraced 4,221-4,494 of 8,000, sync 213-508; intermittent: the
    case passed once on the ASan build): each notify thread's exit writes
    its slot itself."""
    _timer_rate("sync", 200)


def test_setuid_while_threads_trace():
    """300 setresuid + 300 setuid from main while a thread loops on traced
    calls: the same output, traced within 3x untraced + 1 s (glibc
    broadcasts signal 33 to every thread and waits; a masked section
    leaves it open). Seen: 1,000 rounds with 2 threads untraced 4.1-9.4 s,
    traced 1.0-6.6 s (the shared machine); with no thread, 10,000 calls
    0.02-0.16 s untraced, 0.28-0.32 s traced auto (the writer follows
    each call). Held."""
    p = _fx("skc9_cancel")
    cmd = [p, "setuid", "300", "1"]
    rc0, out0, _, u = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "setuid calls 600, failed 0\n"))
    for w in ("auto", "sync"):
        rc1, out1, err, t, _ = _traced(cmd, w)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w}: {err[-300:]}")
        sfkit.check(t <= 3 * u + 1.0, f"--writer {w}: traced {t:.2f} s, untraced {u:.2f} s")


def test_async_cancel_in_first_calls_churn():
    """2,000 threads cancelled asynchronously just after their start (in
    their first traced calls: the slow path maps or takes the section
    stack with signals open), after 200 of warm-up: VmSize and the maps
    lines move by the section stacks' pool at most (32 stacks of 260 kB,
    2 lines each; seen +0 and +204 kB, +0 lines), as untraced (+0). Held."""
    p = _fx("skc9_cancel")
    cmd = [p, "churn", "2000"]
    rc0, out0, _, _ = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "cancelled 2200 of 2200\n"))
    for w in ("auto", "sync"):
        rc1, out1, err, t, _ = _traced(cmd, w)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w} ({t:.1f} s): {err[-300:]}")
        kb, lines = map(int, re.search(r"VmSize ([-+]\d+) kB, maps lines ([-+]\d+)", err).groups())
        sfkit.check(kb <= 1024 + 32 * 260 and lines <= 6 + 2 * 32, f"--writer {w}: {err.strip()[-300:]}")


def test_cxx_exceptions_and_forced_unwind_through_traced_frames():
    """C++: 10 rounds of 4 threads throwing and catching exceptions across
    traced recursion 8 deep (deferred around each throw), then async
    cancellation in a traced loop below a catch (abi::__forced_unwind &)
    that rethrows and a destructor that makes 10 traced calls: as
    untraced in each writer mode, every destructor's calls in the log.
    Held."""
    p = sfkit.build_c("skc9_unwind", ["skc9_unwind.cpp"], compiler="clang++", libs=["-lpthread"])
    cmd = [p, "10", "4", "8"]
    rc0, out0, _, _ = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "cancelled 40 of 40, guards 40, rethrows 40, caught some 1\n"))
    for w in WRITERS:
        rc1, out1, err, t, log = _traced(cmd, w)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w} ({t:.1f} s): {err[-300:]}")
        calls, tsv = _calls(log)
        sfkit.eq((calls.get("d_leaf"), calls.get("mid"), calls.get("crec"), calls.get("spin_loop")),
                 (400, 40, 360, 40), f"--writer {w}\n{tsv}")


def test_cxx_forced_unwind_out_of_altstack_handlers():
    """The same C++ program, each thread with a 64 KiB mmap'd alternate
    signal stack and 20 SIGUSR1 just before its cancel (the SA_ONSTACK
    handler makes 20 traced calls; the cancel may land in it): as
    untraced, and in the log every destructor's d_leaf call comes right
    inside Guard::~Guard (the handler's and the loop's frames closed at
    the landing, UNWIND before it), each writer mode. Held."""
    p = sfkit.build_c("skc9_unwind", ["skc9_unwind.cpp"], compiler="clang++", libs=["-lpthread"])
    cmd = [p, "4", "4", "8", "sig"]
    rc0, out0, _, _ = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "cancelled 16 of 16, guards 16, rethrows 16, caught some 1\n"))
    # u_leaf and thrower left out (-r): the loop's flood made the dumps
    # too long to read in the time a case has
    rx = ["-r", "^(body|Guard|d_leaf|h_leaf|on_usr1|mid|crec|spin_loop)"]
    for w in WRITERS:
        rc1, out1, err, t, log = _traced(cmd, w, args=rx)
        sfkit.eq((rc1, out1), (rc0, out0), f"--writer {w} ({t:.1f} s): {err[-300:]}")
        dump = sfkit.run([sfkit.SFTRACE, "dump", log]).stdout
        last, parents = {}, {}
        for ln in dump.splitlines():
            f = ln.split(None, 3)
            if len(f) < 4 or f[2] not in ("ENTRY", "EXIT", "UNWIND"):
                continue
            name = f[3].strip()
            if name == "d_leaf":
                if f[2] == "ENTRY":
                    parents[last.get(f[1])] = parents.get(last.get(f[1]), 0) + 1
                continue
            last[f[1]] = f[2] + " " + name
        sfkit.eq(parents, {"ENTRY Guard::~Guard()": 160}, f"--writer {w}: what each d_leaf call comes after")


# ---- claim 2: the log's locks, real-time and pinned threads ----

def _fifo_case(writer):
    p = _fx("skc9_rt")
    cmd = [p, "fifo", "2", "10000", "50"]
    rc0, out0, _, u = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "fifo total 500000\n"))
    rc1, out1, err, t, _ = _traced(cmd, writer, timeout=4)
    sfkit.eq((rc1, out1), (rc0, out0), f"after {t:.1f} s: {err[-300:]}")
    sfkit.check(t <= max(1.0, 5 * u), f"--writer {writer}: traced {t:.2f} s, untraced {u:.2f} s")


def test_fifo_threads_pinned_sync():
    """Held since the log's locks sleep on a futex and sf_writer_call wakes one
    waiter a release (CI on 53d94cfa and b7c9c0b2, and here). Before: 2
    SCHED_FIFO threads pinned to CPU 0 (50 wakes of 1 ms, 10,000 traced
    calls each) while main (SCHED_OTHER, same CPU) makes traced calls:
    untraced 0.09 s, traced --writer sync 4.10, 5.13, 3.31, 1.51 s and one
    run hung 674 s (timeout's SIGTERM pending for good: every thread had
    every signal blocked; one FIFO thread spinning in log_reopen's
    reopen_lock, a pause loop with no yield, the other FIFO thread runnable
    in write_chunk_at never scheduled, main spinning on reopen_lock too); 20
    wakes: 0.11-5.26 s. The spinner is 74% of samples; only RT throttling
    lets main run at all."""
    _fifo_case("sync")


def test_fifo_threads_pinned_auto():
    """Held since the log's locks sleep on a futex and sf_writer_call wakes one
    waiter a release (CI on 53d94cfa and b7c9c0b2, and here). Before: the
    same under --writer auto: 20 wakes untraced 0.04-0.05 s, traced
    1.15-9.18 s (7 of 7 over 1 s; 100 wakes: 38.2 s, SCHED_RR 27.2 s): the
    FIFO thread spins in arena_copy's spin_lock_sig (lock_take): its
    sched_yield never gives the CPU to the SCHED_OTHER holder; main without
    traced calls: 0.09-0.17 s."""
    _fifo_case("auto")


def test_fifo_threads_pinned_thread_writer():
    """The same under --writer thread: seen 0.26-0.46 s (20 wakes:
    0.14-0.34 s). Held (within 1 s)."""
    _fifo_case("thread")


def test_thousand_live_threads_one_cpu():
    """Held since the log's locks sleep on a futex and sf_writer_call wakes one
    waiter a release (CI on 53d94cfa and b7c9c0b2, and here). Before: 1,000
    threads live at once (skf8_threads live 1000) under taskset -c 0:
    untraced 0.22 s, traced --writer auto 56.8 s and 2 runs over 30 s, sync
    over 60 s, thread 3.5 s (850 threads: 1.1 s; 950: over 30 s); later
    runs: 1,000 over 8 s and 1.10 s, 1,200 over 8 s and 1.34 s, 1,000 five
    of 6 in 1.14-1.30 s and one over 3 s, the case passed once on the ASan
    build: intermittent: 97% of samples in log_reopen's reopen_lock, a pause
    loop with no yield, from each exiting thread's flush (thread_exit_hook,
    slot_handoff, log_fd_use); its holder preempted on the one CPU."""
    p = sfkit.build_c("skf8_threads", ["skf8_threads.c"], libs=["-lpthread"])
    cmd = [p, "live", "1000"]
    rc0, out0, _, u = _untraced(cmd, prefix=["taskset", "-c", "0"])
    sfkit.eq((rc0, out0), (0, "created 1000 of 1000\n"))
    # the cliff was hit in some runs only (1 of 6 over 3 s in one series):
    # the best of three tries, 1.6 s each (good runs took 1.10-1.34 s; the
    # spinning lock's cliff took 20-60 s); one try failed with two skeptics
    # loading the machine
    seen = []
    for _ in range(3):
        rc1, out1, err, t, _ = _traced(cmd, "auto", timeout=1.6, prefix=["taskset", "-c", "0"])
        if (rc1, out1) == (rc0, out0):
            return
        seen.append(f"{t:.1f} s rc {rc1}: {err[-200:]}")
    sfkit.check(False, f"traced (untraced {u:.2f} s), three tries: {seen}")



@sfkit.known_break(24, "3,000 threads live at once (skf8_threads live 3000), no pinning: untraced 0.52 s, "
                       "traced --writer auto 14.3 s, thread 12.4 s (2,000: 0.39-0.54 s against 3.54-5.98 s, 3 runs): each "
                       "exiting thread's flush asks the writer (sf_writer_call), whose call_lock wakes every "
                       "waiter at each release (futex_wake_all): 59% of samples in the kernel's wake-ups, "
                       "quadratic in the threads exiting together")
def test_three_thousand_live_threads():
    p = sfkit.build_c("skf8_threads", ["skf8_threads.c"], libs=["-lpthread"])
    cmd = [p, "live", "3000"]
    rc0, out0, _, u = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "created 3000 of 3000\n"))
    rc1, out1, err, t, _ = _traced(cmd, "auto", timeout=4)
    sfkit.eq((rc1, out1), (rc0, out0), f"traced after {t:.1f} s (untraced {u:.2f} s): {err[-300:]}")
    sfkit.check(t <= 3 * u + 1.0, f"traced {t:.2f} s, untraced {u:.2f} s")



def test_thousand_live_threads_sync():
    """Held since the log's locks sleep on a futex and sf_writer_call wakes one
    waiter a release (CI on 53d94cfa and b7c9c0b2, and here). Before:
    skeptic f8's 1,000 live threads under --writer sync (f8's case runs auto
    only), no pinning: untraced 0.18 s, traced 1.68 s, then over 20 s
    (killed): the exiting threads' flushes spin in log_reopen's reopen_lock
    as in the mass cancel below; intermittent: two tries."""
    p = sfkit.build_c("skf8_threads", ["skf8_threads.c"], libs=["-lpthread"])
    cmd = [p, "live", "1000"]
    rc0, out0, _, u = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, "created 1000 of 1000\n"))
    seen = []
    for _ in range(2):
        rc1, out1, err, t, _ = _traced(cmd, "sync", timeout=2.2)
        if (rc1, out1) == (rc0, out0):
            return
        seen.append(f"{t:.1f} s rc {rc1}: {err[-200:]}")
    sfkit.check(False, f"traced (untraced {u:.2f} s), two tries: {seen}")


def _mass(writer, n, timeout, tries=1):
    p = _fx("skc9_cancel")
    cmd = [p, "mass", "1", str(n)]
    rc0, out0, _, u = _untraced(cmd)
    sfkit.eq((rc0, out0), (0, f"cancelled {n} of {n}, cleanups {n}\n"))
    for _ in range(tries):
        rc1, out1, err, t, _ = _traced(cmd, writer, timeout=timeout)
        sfkit.eq((rc1, out1), (rc0, out0),
                 f"--writer {writer}: traced after {t:.1f} s (untraced {u:.2f} s): {err[-300:]}")
        sfkit.check(t <= 3 * u + 1.0, f"--writer {writer}: traced {t:.2f} s, untraced {u:.2f} s")


def test_mass_cancel_sync():
    """Held since the log's locks sleep on a futex and sf_writer_call wakes one
    waiter a release (CI on 53d94cfa and b7c9c0b2, and here). Before: N
    threads (64 KiB stacks) make traced calls, block in read, and are all
    cancelled at once, --writer sync: 200 threads 2.33 s, 500 9.10 s, 1,000
    over 30 s (twice), 2,000 over 30 s, against 0.12 s untraced at 1,000:
    99.5% of samples in log_reopen's reopen_lock (a pause loop, no yield),
    65% from the exiting threads' flush (thread_exit_hook), 23% from
    sections' hand-offs. Intermittent: 300 threads 1.88 s, 14.2 s, 14.6 s,
    and once 0.6 s (the case passed once on the ASan build): two tries."""
    _mass("sync", 300, 2.2, tries=2)


@sfkit.known_break(24, "2,000 threads blocked in read after traced calls, all cancelled at once, --writer auto: "
                       "untraced 0.30 s, traced 4.38 s (1,000: 0.12 s against 0.88 s): the exiting threads' "
                       "flushes through the writer (sf_writer_call's call_lock wakes every waiter)")
def test_mass_cancel_auto():
    _mass("auto", 2000, 4)


if __name__ == "__main__":
    sfkit.main(globals())
