"""Skeptic's cases for issue 25 (landings from the shadow stack, the
runtime's own allocations, constructors of dlopen'd objects): programs
written to break the claims in claims-25, not taken from the developers'
tests. Cases marked FAILS NOW reproduce a break on the main they were
written against (602fa27).

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25.py."""
import os
import re
import shutil
import statistics
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import CG_WRITER_ENV, RUNTIME, SFTRACE, Skip, build_c, check, eq, record, run, run_each, tmpdir  # noqa: E402

ANY_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(ENTRY|EXIT|TAIL|UNWIND)\s+(?:\[depth \d+\] )?(.*?)\s*$")


def dump_all(log):
    """(kind, name) of every event, UNWIND included (name is then the count
    of frames it closes), and the dump's warnings."""
    p = run([SFTRACE, "dump", log])
    events = []
    for line in p.stdout.splitlines():
        m = ANY_RE.match(line)
        if m:
            kind, rest = m.group(3), m.group(4).strip()
            events.append((kind, int(rest.split()[0]) if kind == "UNWIND" else rest))
    return events, p.stderr


def replay(events):
    """Replays events on one thread's stack. Returns (stack left, list of the
    frames left on top after each UNWIND, None when it closes more frames
    than are open; list of exits whose name did not match the innermost
    frame)."""
    st, tops, bad = [], [], []
    for kind, x in events:
        if kind == "ENTRY":
            st.append(x)
        elif kind == "UNWIND":
            del st[max(0, len(st) - x):]
            tops.append(st[-1] if st else None)
        else:
            top = st.pop() if st else None
            if top != x:
                bad.append((kind, x, top))
    return st, tops, bad


def test_siglongjmp_from_timer_handler_closes_exactly_the_open_frames():
    """FAILS NOW. A SIGALRM timer interrupts fib anywhere, the tracer's
    trampolines included, and the handler siglongjmps back to loop(). Seen:
    an UNWIND closing one frame more than the trace has open above loop (the
    entry trampoline pushed its shadow entry, then was interrupted before
    recording the ENTRY: loop is closed, main left on top), one closing a
    frame too few (the exit trampoline popped, then was interrupted before
    recording the EXIT: a fib left on top), and a claimed but never written record (the
    trampoline was interrupted between its xadd and its store) at which the
    reader stops reading the thread: every later event is gone, yet dump
    says "0 lost"; main and loop never exit."""
    exe = build_c("skep25_sigjmp", ["skep25_sigjmp.c"])
    rounds = 60
    p, log = record([exe, str(rounds)], args=["-q"])
    eq(p.stdout, f"{rounds}\n", "the program's output")
    events, err = dump_all(log)
    unwinds = [x for k, x in events if k == "UNWIND"]
    st, tops, bad = replay(events)
    # First the landings the reader shows: each must leave loop() on top.
    eq(set(tops), {"loop"}, "after every landing loop() is the innermost open frame")
    # Then that none is missing (the reader stops at an unwritten record).
    eq(len(unwinds), rounds, "one UNWIND per landing (each abandons at least on_alarm)")
    eq(bad, [], "exits match their frames")
    eq(st, [], "main and loop closed by their own exits")


def _landing_overhead(exe, args, regex):
    """Median over 3 alternating runs of (traced - untraced) ns per landing,
    the traced runs recording only the functions `regex` selects. The
    program prints its own median ns per iteration, of its thread's CPU
    time (wall time on this shared machine varied 3x between runs)."""
    d = tmpdir()
    filt = os.path.join(d, "f.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", regex, "-o", filt])
    untraced, traced = [], []
    for i in range(3):
        untraced.append(float(run([exe] + args).stdout))
        p, _ = record([exe] + args, out=os.path.join(d, f"r{i}", "sf.log"), args=["-q", "-f", filt])
        traced.append(float(p.stdout))
    return statistics.median(traced) - statistics.median(untraced), untraced, traced


def test_longjmp_cost_when_the_setjmp_caller_is_not_recorded():
    """FAILS NOW (+2.0..2.5 us a landing measured). The abandoned frames
    a -> b -> leaf are recorded, the setjmp caller loop() is not (a filter
    that leaves it out, or an uninstrumented caller). Every recorded frame
    is then abandoned, so each landing takes the fallback unwinder walk. The
    issue asks for at most 100 ns a landing whatever the filter; 500 ns
    leaves room for this noisy machine."""
    exe = build_c("skep25_ljbench", ["skep25_ljbench.c"])
    extra, u, t = _landing_overhead(exe, ["20000"], "^(a|b|leaf)$")
    check(extra < 500, f"longjmp landing adds {extra:.0f} ns (untraced {u}, traced {t})")


def _callgrind_per_throw(exe, env):
    """Instructions this thread runs per throw inside catcher() (callgrind,
    deterministic: the writer thread and start-up are not counted), from
    two runs of 1,000 and 3,000 throws (their difference), each traced one
    with its own log."""
    ir = []
    specs = []
    for n in (1000, 3000):
        e = dict(env, SFTRACE_OUTPUT_FILE=f"{env['SFTRACE_OUTPUT_FILE']}.{n}") if env else None
        specs.append(dict(cmd=["valgrind", "--tool=callgrind", "--smc-check=all", "--toggle-collect=catcher*",
                               "--callgrind-out-file=/dev/null", exe, "4", str(n)], env=e, timeout=600))
    for p in run_each(specs, jobs=1):
        m = re.search(r"Collected : (\d+)", p.stderr)
        check(m, f"callgrind output: {p.stderr[-1000:]}")
        ir.append(int(m.group(1)))
    return (ir[1] - ir[0]) / 2000


def test_throw_cost_when_the_catcher_is_not_recorded():
    """FAILED ONCE (+664 ns of thread CPU time a throw in a CI run:
    untraced 1,066 ns, traced 1,736 ns; the first measure, +1.6 us, was
    the fallback walk at every landing). A C++ throw from thrower() through
    mid(), caught in catcher(), which the filter leaves out, like main:
    every recorded frame is abandoned at each landing. The issue's target
    is 100 ns a landing. Medians of whole runs cannot judge it on a shared
    2-core machine: the same untraced run takes 1.1 or 1.8 us a throw from
    one run to the next. So, two measures that noise cannot make pass (the
    second only where valgrind is missing: timed rounds failed once more on
    an idle CI run, 2026-12-02):
      - instructions (callgrind) of the program's thread per throw, traced
        minus untraced, at most 1,000 (the throw itself runs 14,300, about
        14 a ns: 1,000 is 70 ns; one libgcc walk a landing is 4,000+);
      - thread CPU time per throw in 100 batches, the 10th percentile of
        a run's batches (a batch or a whole run is slower at times, and a
        rare batch reads low on this VM), the least of 3 runs each: traced
        minus untraced is the landing's cost plus the two entry events.
        A round over 100 ns is measured again, up to 3 rounds: a real cost
        fails them all."""
    exe = build_c("skep25_throw", ["skep25_throw.cc"], compiler="clang++", libs=["-lpthread"])
    d = tmpdir()
    filt = os.path.join(d, "f.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", "^(mid|thrower)", "-o", filt])
    if shutil.which("valgrind"):
        # the writer thread by name (sfkit.CG_WRITER_ENV): auto hands off
        # on the measured thread under valgrind
        env = {"LD_PRELOAD": RUNTIME, "SFTRACE_FILTER": filt, "SFTRACE_OUTPUT_FILE": os.path.join(d, "cg.log"),
               **CG_WRITER_ENV}
        base, traced = _callgrind_per_throw(exe, None), _callgrind_per_throw(exe, env)
        check(traced - base <= 1000, f"a throw runs {traced - base:.0f} more instructions traced "
              f"({base:.0f} untraced, {traced:.0f} traced)")
        # Counted instructions decide where valgrind runs: the timed rounds
        # below failed on a CI run with nothing else on the machine
        # (untraced alone ranged 1,115-1,853 ns a throw across 9 runs).
        return
    seen = []
    for _ in range(3):
        untraced, traced = [], []
        for i in range(3):
            untraced.append(float(run([exe, "4", "20000"]).stdout))
            p, _ = record([exe, "4", "20000"], out=os.path.join(d, f"r{len(seen)}{i}", "sf.log"),
                          args=["-q", "-f", filt])
            traced.append(float(p.stdout))
        seen.append((min(traced) - min(untraced), untraced, traced))
        if seen[-1][0] < 100:
            return
    check(False, "caught throw adds " + "; ".join(f"{x:.0f} ns (untraced {u}, traced {t})" for x, u, t in seen))


def test_siglongjmp_out_of_the_fallback_walk_keeps_recording():
    """FAILS NOW. The filter leaves the setjmp caller inner() out, so every
    longjmp from leaf takes the runtime's fallback walk, during which the
    thread is suppressed (sf_suppress_begin). A SIGALRM handler that
    siglongjmps out of it skips sf_suppress_end: the thread records nothing
    again. Seen: on_alarm recorded once or twice of 50 calls, marker() 0 of
    1000, and dump still says "0 lost ... 0 dropped by the runtime"."""
    exe = build_c("skep25_sigwalk", ["skep25_sigwalk.c"])
    d = tmpdir()
    filt = os.path.join(d, "f.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", "^(a|b|leaf|marker|on_alarm)$", "-o", filt])
    rounds = 50
    p, log = record([exe, str(rounds)], out=os.path.join(d, "sf.log"), args=["-q", "-f", filt])
    eq(p.stdout, f"{rounds}\n", "the program's output")
    events, _ = dump_all(log)
    entries = [x for k, x in events if k == "ENTRY"]
    eq(entries.count("marker"), 1000, "marker() calls after the rounds")
    check(entries.count("on_alarm") >= rounds, f"on_alarm entries: {entries.count('on_alarm')} < {rounds}")


def test_fork_child_landing_counts_only_its_own_frames():
    """FAILS NOW (minor: the reader clamps it). The child of a fork at
    depth 10 longjmps to rec(5) before recording anything: landing() returns
    early for a thread with no event yet and leaves the shadow entries of
    rec 6..10. Its second landing (deeper x4, all in the child's log) then
    says "9 frames abandoned" instead of 4."""
    exe = build_c("skep25_forkjmp", ["skep25_forkjmp.c"])
    d = tmpdir()
    record([exe], out=os.path.join(d, "sf.log"), args=["-q"])
    child = [f for f in os.listdir(d) if f.startswith("sf.") and f != "sf.log" and f.endswith(".log")]
    eq(len(child), 1, f"one child log: {os.listdir(d)}")
    events, _ = dump_all(os.path.join(d, child[0]))
    eq([x for k, x in events if k == "UNWIND"], [4], "the child's UNWIND events")
    eq(events[:4], [("ENTRY", "deeper")] * 4, "the child's first events")


def test_longjmp_cost_when_the_setjmp_caller_is_uninstrumented():
    """FAILS NOW (untraced ~19 ns, traced ~5.6 us a landing measured while
    the machine was busy). No filter at all: main's translation unit is
    built without XRay, the abandoned a -> b -> leaf with it. Every recorded
    frame is abandoned at each landing, so each takes the fallback walk."""
    import sfkit
    d = sfkit.FIXBUILD
    os.makedirs(d, exist_ok=True)
    lib_o, main_o, exe = (os.path.join(d, n) for n in ("skep25_ljlib.o", "skep25_plainmain.o", "skep25_plainmain"))
    run(["clang"] + sfkit.XRAY_CFLAGS + ["-DNO_MAIN", "-c", "-o", lib_o,
                                        os.path.join(sfkit.FIXTURES, "skep25_ljbench.c")])
    run(["clang", "-O2", "-g", "-c", "-o", main_o, os.path.join(sfkit.FIXTURES, "skep25_plainmain.c")])
    run(["clang", "-fxray-instrument", "-o", exe, main_o, lib_o])
    untraced, traced = [], []
    t = tmpdir()
    for i in range(3):
        untraced.append(float(run([exe, "20000"]).stdout))
        p, _ = record([exe, "20000"], out=os.path.join(t, f"r{i}", "sf.log"), args=["-q"])
        traced.append(float(p.stdout))
    extra = statistics.median(traced) - statistics.median(untraced)
    check(extra < 500, f"longjmp landing adds {extra:.0f} ns (untraced {untraced}, traced {traced})")


def test_program_loading_libgcc_s_sees_and_pays_for_its_own_load():
    """FAILS NOW. The runtime dlopens libgcc_s.so.1 at start-up in every
    traced process (unwind.c sf_unwind_init), so a C program that loads it
    itself (glibc does, for backtrace() and pthread_cancel) finds it already
    loaded: its output changes ("preloaded 1" instead of 0), and the
    loader's allocations for that load, the program's own untraced, vanish
    from `sftrace memory` (1 allocation shown, 9 made untraced, as counted
    by an LD_PRELOAD malloc counter, tests/fixtures/skep25_mcount.c)."""
    exe = build_c("skep25_gccload", ["skep25_gccload.c"], libs=["-ldl"])
    shim = build_c("skep25_mcount.so", ["skep25_mcount.c"], shared=True, xray=False, libs=["-ldl"])
    untraced = run([exe], env={"LD_PRELOAD": shim})
    m = re.search(r"mcount: (\d+) allocs", untraced.stderr)
    check(m, f"shim output: {untraced.stderr!r}")
    p, log = record([exe], args=["-q", "--alloc"])
    eq(p.stdout, "preloaded 0 loaded 1\n", "the program's output")
    out = run([SFTRACE, "memory", log]).stdout
    eq(int(out.split()[0]), int(m.group(1)), f"allocations in `sftrace memory` vs untraced: {out.splitlines()[0]}")


def test_runtime_start_up_never_reaches_the_programs_own_malloc():
    """The executable defines malloc/calloc/realloc/free itself (forwarding
    to __libc_*) and counts calls. Untraced: 0 before main. Traced, with or
    without --alloc: 0 before main too, and none during (was 23: loading
    libgcc_s, dlsym misses, the affinity attribute; then 1: the writer
    thread's pthread_create callocs the thread's DTV with the process's
    calloc. The writer is now a raw clone on thread storage of the
    runtime's own: own_tls.c, docs/DESIGN.md "Writer thread")."""
    exe = build_c("skep25_ownmalloc", ["skep25_ownmalloc.c"])
    untraced = run([exe])
    eq(untraced.stderr, "before main 0, during 0\n", "untraced")
    for extra in ([], ["--alloc"]):
        p, _ = record([exe], args=["-q"] + extra)
        eq(p.stderr, "before main 0, during 0\n", f"traced {extra}: the program's malloc calls")



def _tops_by_thread(log):
    """Per tid: Counter of the frame left on top after each UNWIND, and the
    count of exits that did not match the innermost frame."""
    import collections
    p = run([SFTRACE, "dump", log])
    st, tops, bad = collections.defaultdict(list), collections.Counter(), 0
    for line in p.stdout.splitlines():
        m = ANY_RE.match(line)
        if not m:
            continue
        s, kind, rest = st[m.group(2)], m.group(3), m.group(4).strip()
        if kind == "ENTRY":
            s.append(rest)
        elif kind == "UNWIND":
            n = int(rest.split()[0])
            bad += n > len(s)
            del s[max(0, len(s) - n):]
            tops[s[-1] if s else None] += 1
        else:
            bad += (s.pop() if s else None) != rest
    return tops, bad, sum(len(s) for s in st.values())


def test_hot_longjmps_in_four_threads_are_exact():
    """Holds (guard). 4 threads x 20000 landings abandoning 1..5 frames
    each: every UNWIND leaves loop() on top, nothing left open."""
    exe = build_c("skep25_mtjmp", ["skep25_mtjmp.c"], libs=["-lpthread"])
    p, log = record([exe, "20000", "4"], args=["-q"])
    eq(p.stdout, "80000\n", "the program's output")
    tops, bad, left = _tops_by_thread(log)
    eq(dict(tops), {"loop": 80000}, "frames on top after the landings")
    eq((bad, left), (0, 0), "mismatched exits, frames left open")


def test_stack_overflow_recovered_on_sigaltstack():
    """Holds (guard). rec recurses until SIGSEGV (stack limited to 1 MiB),
    the handler on a malloc'd sigaltstack siglongjmps back to main: more
    than 512 frames, so the fallback walk crosses the signal frame. One
    UNWIND closes every rec frame and on_segv."""
    exe = build_c("skep25_overflow", ["skep25_overflow.c"])
    p, log = record(["sh", "-c", f"ulimit -s 1024 && exec {exe}"], args=["-q"])
    eq(p.stdout, "ok 1\n", "the program's output")
    events, _ = dump_all(log)
    recs = sum(1 for k, x in events if k == "ENTRY" and x == "rec")
    eq([x for k, x in events if k == "UNWIND"], [recs + 1], "one UNWIND: every rec and on_segv")
    st, tops, bad = replay(events)
    eq((tops, bad, st), (["main"], [], []), "main on top, then closed by its exit")


def test_landings_are_not_allocations():
    """FAILS on 2d83acc: the reader passed unwind events (kinds 8 and 9,
    numbered between the allocation kinds) to the allocation consumers, so
    `info` said "allocations: recorded (N events)" for a program that only
    longjmps, N its landings. 4 threads x 500 landings, no --alloc."""
    exe = build_c("skep25_mtjmp", ["skep25_mtjmp.c"], libs=["-lpthread"])
    p, log = record([exe, "500", "4"], args=["-q"])
    eq(p.stdout, "2000\n", "the program's output")
    info = run([SFTRACE, "info", log]).stdout
    alloc = [l for l in info.splitlines() if l.startswith("# allocations")]
    eq(alloc, ["# allocations       : none (0 events)"], "info's allocation line")
    tops, bad, left = _tops_by_thread(log)
    eq(dict(tops), {"loop": 2000}, "frames on top after the landings")
