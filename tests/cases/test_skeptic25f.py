"""Skeptic 25f: programs written to break issue 25's per-thread landing floor
(src/runtime/unwind.c): after a throw's first quiet landing, landings below
the floor are told in 5 instructions; the floor is "never set for forced
unwinds". Written against a5832180. Each test is a plain failing assertion
of a break found.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25f.py."""
import os
import sys


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import FIXBUILD, SFTRACE, build_c, eq, record, run  # noqa: E402

RPATH = ["-L" + FIXBUILD, "-Wl,-rpath," + FIXBUILD]


def thread_lines(log):
    """`sftrace dump` event lines (kind and name) of the threads other than
    the main one, UNWIND lines included (dump_events leaves them out)."""
    p = run([SFTRACE, "dump", log])
    rows = []
    for line in p.stdout.split("events:", 1)[1].splitlines():
        f = line.split()
        if len(f) >= 4 and f[0].isdigit():
            rows.append((int(f[1]), f[2], " ".join(f[3:])))
    main_tid = next(t for t, k, n in rows if n == "main")
    return [(k, n.split()[0] if k == "UNWIND" else n.split("(")[0]) for t, k, n in rows if t != main_tid]


def test_forced_unwind_from_a_cleanup_during_a_throw_closes_the_frames_it_abandons():
    """A thread throws 42 through cxx_thrower (a destructor: the first,
    quiet landing sets the floor) and c_frame (gcc -fexceptions, a cleanup
    that calls the recorded fu_on_clean -> fu_quit -> pthread_exit), then mid
    (a printing destructor), to tbody's catch (int). pthread_exit's forced
    unwind lands at mid's cleanup ("mid cleanup" printed), abandoning
    fu_quit and fu_on_clean. Without the throw before it (fu_on_clean called
    straight from mid) the same landing records `UNWIND 2 frames abandoned`.
    Observed: no UNWIND at all, whether mid is recorded or not: the two
    frames are left open in the trace (the throw's floor or exception state
    outlives into the forced unwind its cleanup started)."""
    build_c("libskep25f_fuc.so", ["skep25f_fu_c.c"], shared=True, compiler="gcc", xray=False, flags=["-fexceptions"])
    build_c("libskep25f_fu.so", ["skep25f_fu_x.c"], shared=True, libs=["-lpthread"])
    exe = build_c("skep25f_fu", ["skep25f_fu.cc"], compiler="clang++",
                  libs=RPATH + ["-lskep25f_fuc", "-lskep25f_fu", "-lpthread"])
    want = "mid cleanup\njoined\n"
    eq(run([exe]).stdout, want, "untraced output")
    for rx, head in (("^(fu_|tbody|main)", []), ("^(fu_|tbody|main|mid)", [("ENTRY", "mid")])):
        p, log = record([exe], args=["-q", "--filter-regex", rx])
        eq(p.stdout, want, f"{rx}: traced output")
        got = [(k, n) for k, n in thread_lines(log)]
        expect = [("ENTRY", "tbody")] + head + [("ENTRY", "fu_on_clean"), ("ENTRY", "fu_quit"),
                                                ("ENTRY", "fu_leaf"), ("EXIT", "fu_leaf"), ("UNWIND", "2")]
        eq(got, expect, f"{rx}: the thread's events (mid's landing closes fu_quit and fu_on_clean)")
