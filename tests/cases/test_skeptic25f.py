"""Skeptic 25f: programs written to break issue 25's per-thread landing floor
(src/runtime/unwind.c): after a throw's first quiet landing, landings below
the floor are told in 5 instructions; the floor is "never set for forced
unwinds". Written against a5832180. The floor was taken out again for the first
break (a forced unwind begun in a cleanup during a throw kept the floor
and left the recorded frames it abandoned open); that case now guards it.
The two breaks older than the floor were fixed by issue 25's stateless
landing test (no floor).

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25f.py."""
import os
import sys


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import FIXBUILD, SFTRACE, build_c, eq, record, run, tmpdir  # noqa: E402

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
        # then the forced unwind ends the thread: tbody (and mid) are
        # closed there, by the runtime's thread-exit hook
        expect = [("ENTRY", "tbody")] + head + [("ENTRY", "fu_on_clean"), ("ENTRY", "fu_quit"),
                                                ("ENTRY", "fu_leaf"), ("EXIT", "fu_leaf"), ("UNWIND", "2"),
                                                ("UNWIND", str(1 + len(head)))]
        eq(got, expect, f"{rx}: the thread's events (mid's landing closes fu_quit and fu_on_clean)")


def deep_fixture():
    return build_c("skep25f_deep", ["skep25f_deep.cc"], compiler="clang++")


def test_throw_after_a_recorded_callee_returned_records_no_unwind():
    """dive() recurses 50 frames with destructors (none recorded); the
    deepest calls the recorded note() (it returns: ENTRY, EXIT), then throws
    1, caught by run_one. The throw abandons no recorded frame, so the trace
    is note's ENTRY and EXIT per throw and nothing else. Observed (also
    before the floor, 3587093a~1): 52 `UNWIND 0 frames abandoned, depth 0
    left` events per throw (156 for 3 throws): note's stale entry in the
    shadow slot above the top reads as a half-exited frame at every
    landing, so none is told quietly and no floor is ever set. Fixed:
    an exception's landing reads no slot above the top (unwind.c,
    _Unwind_SetIP)."""
    exe = deep_fixture()
    eq(run([exe, "3", "1"]).stdout, "caught 3\n", "untraced output")
    p, log = record([exe, "3", "1"], args=["-q", "--filter-regex", "^note$"])
    eq(p.stdout, "caught 3\n", "traced output")
    kinds = {}
    for line in run([SFTRACE, "dump", log]).stdout.split("events:", 1)[1].splitlines():
        f = line.split()
        if len(f) >= 4 and f[0].isdigit():
            kinds[f[2]] = kinds.get(f[2], 0) + 1
    eq(kinds, {"ENTRY": 3, "EXIT": 3}, "event kinds of 3 throws that abandon nothing recorded")


def callgrind_per_throw(exe, call_note, filt=None):
    """Instructions inside run_one per throw (runs of 1000 and 2000 throws,
    one at a time: two at once moved the counts past this case's
    100-instruction margin), untraced or with the runtime preloaded and
    filter file filt. With 100 and 200 a one-off cost in one run and not the
    other (a hand-off, a first touch: about 1,700 instructions) moved the
    figure by 17 a throw: +421, +438, +455 and +463 for the same code."""
    import re
    import shutil
    from sfkit import RUNTIME, Skip, run_each
    if not shutil.which("valgrind"):
        raise Skip("valgrind not installed")
    d = tmpdir()
    cmds, envs = [], []
    for n in (1000, 2000):
        env = {}
        if filt:
            # the writer thread by name (sfkit.CG_WRITER_ENV): auto hands
            # off on the measured thread under valgrind
            env.update(LD_PRELOAD=RUNTIME, SFTRACE_FILTER=filt, SFTRACE_OUTPUT_FILE=os.path.join(d, f"cg{n}.log"),
                       **sfkit.CG_WRITER_ENV)
        envs.append(env)
        cmds.append(["valgrind", "--tool=callgrind", "--smc-check=all", "--toggle-collect=run_one(int)",
                     "--callgrind-out-file=" + os.path.join(d, f"cg{n}.out"), exe, str(n), str(call_note)])
    got = []
    for n, p in zip((1000, 2000), run_each([dict(cmd=c, env=e, check_rc=None) for c, e in zip(cmds, envs)], jobs=1)):
        eq(p.stdout, f"caught {n}\n", "output under callgrind")
        got.append(int(re.search(r"Collected : (\d+)", p.stderr).group(1)))
    return (got[1] - got[0]) // 1000


def test_throw_through_50_cleanups_nothing_recorded_costs_at_most_1000_instructions():
    """The claim: a throw through 50 cleanup frames with nothing recorded
    costs <= 1,000 instructions more than untraced (callgrind). Held with
    main recorded (+984 measured). Observed with a filter that records only
    note(), which the throwing thread never calls (no recorded frame open:
    depth 0): +5,776 a throw, every landing on the full path
    (abandons_nothing refuses depth 0); after one call of note() from the
    deepest frame: +11,514 (test above). Fixed: +937 and +1,013, the 76
    more being note's own ENTRY and EXIT, recorded: the landings cost the
    same whether a recorded callee returned before the throw or not.
    Measured over 1000 and 2000 throws (callgrind_per_throw): +362 and
    +427 here; over 100 and 200 the second ranged from +421 to +463 with
    the same code, one-off costs, and failed the margin on CI of integ6."""
    exe = deep_fixture()
    filt = os.path.join(tmpdir(), "note.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", "^note$", "-o", filt])
    extra = [callgrind_per_throw(exe, n, filt) - callgrind_per_throw(exe, n) for n in (0, 1)]
    if extra[0] > 1000:
        raise AssertionError(f"no recorded frame open: +{extra[0]} instructions a throw (claim <= 1,000)")
    # note's two events (two trampolines' fast paths, about 38 instructions
    # each) and nothing else: no landing may pay for note's returned entry.
    if extra[1] - extra[0] > 100:
        raise AssertionError(f"note called: +{extra[1]} instructions a throw, +{extra[0]} without (more than note's events)")


def test_nested_and_crossing_exceptions_leave_the_stack_where_it_is():
    """Held on a5832180 (a guard). Scenarios of skep25f_mix.cc: a destructor
    that throws and catches during unwinding, catch(...) { throw; } 7
    levels, an exception_ptr made on another thread rethrown 9 frames deep,
    longjmp out of a destructor during unwinding and out of a catch block, a
    deeper catch then a throw from a shallower point, 8 threads throwing 200
    times each, a SIGUSR1 on a sigaltstack raised by a destructor while a
    throw is on its way (its handler throws and catches), an -O2 tail-call
    chain that throws; under 4 filters. The output is untraced's, and each
    probe() main calls after a scenario sits at depth 1, under main."""
    import re
    exe = build_c("skep25f_mix", ["skep25f_mix.cc"], compiler="clang++", libs=["-lpthread"])
    modes = {"nested": 1, "rethrow": 2, "eptr": 9, "ljdtor": 10, "ljcatch": 20, "shallow": 3, "threads": 159200,
             "sig": 23, "tail": 5}
    for rx in (None, "^(main|probe|leaf)", "^(main|probe|chain|rethrow_lvl|lj_inner|deepcatch|on_sig|tail_to)",
               "^(main|probe|shallow|s_nested|s_eptr|rethrow_ep|lj_catch|sig_inner|tail_from|thrower|many|mk)"):
        for mode, sum_ in modes.items():
            want = f"{mode} {sum_}\n"
            eq(run([exe, mode]).stdout, want, f"{mode}: untraced output")
            p, log = record([exe, mode], args=["-q"] + (["--filter-regex", rx] if rx else []))
            eq(p.stdout, want, f"{mode} {rx}: traced output")
            depths = []
            for line in run([SFTRACE, "dump", log]).stdout.split("events:", 1)[1].splitlines():
                m = re.match(r"\s*\d+\s+\d+\s+ENTRY(\s+)probe", line)
                if m:
                    depths.append((len(m.group(1)) - 4) // 2)
            eq(depths, [1], f"{mode} {rx}: probe's depth")
