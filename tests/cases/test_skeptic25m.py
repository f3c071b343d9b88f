"""Skeptic k25b on issue 25 (the tracer's own work never shows up as the
program's): programs of its own (tests/fixtures/skep25m_*) that know the
truth, compared with what the runtime records or does.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25m.py."""
import os
import re
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import RUNTIME, SFTRACE, Skip, build_c, check, eq, record, run, tmpdir  # noqa: E402

UNWIND_RE = re.compile(r"UNWIND\s+(?:\[depth (\d+)\]\s+)?(\d+) frames abandoned, depth (\d+) left")


def unwinds(log):
    """(abandoned, depth left) of each UNWIND line of `sftrace dump`, in order."""
    out = run([SFTRACE, "dump", log]).stdout
    return [(int(m.group(2)), int(m.group(3))) for m in UNWIND_RE.finditer(out)]


def dlerror_fixture():
    return build_c("skep25m_dlerror", ["skep25m_dlerror.c"], libs=["-ldl"])


def check_dlerror(mode):
    exe = dlerror_fixture()
    want = run([exe, str(mode)]).stdout
    check("cannot open shared object" in want, f"untraced: {want!r}")
    p, _ = record([exe, str(mode)], args=["-q"])
    eq(p.stdout, want, f"dlerror() after a failed dlopen and call {mode} (0 setuid, 1 setgid, 2 _Fork)")


def test_skeptic25m_dlerror_kept_across_setuid():
    check_dlerror(0)


def test_skeptic25m_dlerror_kept_across_setgid():
    check_dlerror(1)


def test_skeptic25m_dlerror_kept_across__Fork():
    check_dlerror(2)


def test_skeptic25m_dlerror_frees_under_alloc_are_the_programs():
    """A failed dlopen then setuid: `memory --alloc` counts the frees a malloc-counting shim counts
    untraced (the runtime's lookup no longer frees the pending dlerror message)."""
    exe = dlerror_fixture()
    shim = build_c("skep25m_mcount.so", ["skep25m_mcount.c"], shared=True, xray=False, compiler="gcc")
    u = run([exe, "0"], env={"LD_PRELOAD": shim})
    m = re.search(r"SHIM allocs=(\d+) frees=(\d+)", u.stderr)
    check(m, u.stderr)
    _, log = record([exe, "0"], args=["-q", "--alloc"])
    out = run([SFTRACE, "memory", "--format", "tsv", log]).stdout
    got = dict(line.split("\t") for line in out.splitlines() if line.count("\t") == 1)
    eq((int(got["allocations"]) + int(got["reallocs"]), int(got["frees"])), (int(m.group(1)), int(m.group(2))),
       "(allocations + reallocs, frees) traced vs the shim's untraced")


def test_skeptic25m_small_stack_thread_recursion():
    """A 16 KiB (PTHREAD_STACK_MIN) thread recursing 16-byte frames 300 deep: 509 deep works
    untraced; traced it died of SIGSEGV past 201 while the runtime's static TLS (4,952 B, 0x1358,
    carved from every thread's stack block) held the shadow array. Now 504 B (docs/DESIGN.md,
    "The array is not TLS")."""
    exe = build_c("skep25m_smallstack", ["skep25m_smallstack.c"], libs=["-lpthread"])
    args = [exe, "1", "300", "16384"]
    u = run(args, check_rc=None)
    if u.returncode != 0:
        raise Skip(f"untraced run failed here ({u.returncode}): the stack layout differs")
    p, _ = record(args, args=["-q"], check_rc=None)
    eq(p.returncode, 0, "traced exit status (untraced 0)")


def test_skeptic25m_thread_without_its_shadow_array_runs_unchanged():
    """A thread whose shadow array cannot be mapped (RLIMIT_AS leaves it no room) recurses and
    longjmps: the program's output and exit status are untraced's, and the runtime says how many
    threads had no array (docs/DESIGN.md, "The array is not TLS")."""
    exe = build_c("skep25m_nomap", ["skep25m_nomap.c"], libs=["-lpthread"])
    u = run([exe, "0"], check_rc=None)
    if u.returncode != 0:
        raise Skip(f"untraced run failed here ({u.returncode}: {u.stdout.strip()}): the address space differs")
    p, _ = record([exe, "0"], args=["-q"], check_rc=None)
    eq((p.returncode, p.stdout), (0, u.stdout), "traced (exit status, output)")
    check("threads that had no shadow stack (its mapping failed; their landings are walked, or repaired by "
          "the readers): 1" in p.stderr, p.stderr[-2000:])


def test_skeptic25m_many_deep_threads_leave_no_mappings():
    """1,000 threads each diving 600 deep (past the 512-entry array: each maps its overflow area) and
    longjmp'ing out: the mappings left afterwards are what they are at the first thread's end, and
    every abandoned frame is closed by one landing per thread."""
    exe = build_c("skep25m_smallstack", ["skep25m_smallstack.c"], libs=["-lpthread"])
    p, log = record([exe, "1000", "600"], args=["-q"])
    m = re.search(r"vmas before (\d+) after (\d+)", p.stdout)
    check(m, p.stdout)
    check(int(m.group(2)) - int(m.group(1)) <= 20, f"VMAs grew with the threads: {p.stdout}")
    u = unwinds(log)
    eq(len(u), 1000, "one landing per thread")
    eq(set(u), {(601, 2)}, "each: dive(0..600) abandoned, thr and go left open")


def test_skeptic25m_landing_past_the_overflow_area_keeps_later_depths_exact():
    exe = build_c("skep25m_ljdepth", ["skep25m_ljdepth.c"], libs=["-lpthread"])
    # run(1) + rec(0..A): A + 2 open after landing at A; B + 2 open before.
    p, log = record([exe, "599990", "600000", "10", "600"], args=["-q"], timeout=60)
    eq(p.stdout, "landings 2\n", "program output")
    u = unwinds(log)
    check(u, "no UNWIND at all")
    eq(u[-2:] if len(u) >= 2 else u, [(10, 599992), (590, 12)],
       "the two landings (abandoned, depth left), the thread's end aside")


def test_skeptic25m_landings_at_511_513_and_600000_deep():
    """Landings around the array's bound and from 600,000 deep are exact."""
    exe = build_c("skep25m_ljdepth", ["skep25m_ljdepth.c"], libs=["-lpthread"])
    pairs = ["5", "600", "511", "513", "509", "511", "510", "600000", "10", "600000", "5", "600"]
    p, log = record([exe] + pairs, args=["-q"], timeout=60)
    eq(p.stdout, "landings 6\n", "program output")
    want = []
    for a, b in zip(pairs[::2], pairs[1::2]):
        want.append((int(b) - int(a), int(a) + 2))
    eq(unwinds(log)[:6], want, "landings (abandoned, depth left)")


def self_ns_per_call(log, func):
    """Self ns per call of func, times as recorded (report --raw-times --format tsv)."""
    out = run([SFTRACE, "report", "--raw-times", "--format", "tsv", "-n", "0", log]).stdout
    for line in out.splitlines()[1:]:
        f = line.split("\t")
        if len(f) >= 5 and f[1] == func:
            return int(f[4]) / int(f[2])
    raise AssertionError(f"{func} not in the report of {log}")


def test_skeptic25m_landing_frame_self_time_does_not_grow_with_the_frames_abandoned():
    """once()'s self time a call when rec's longjmp abandons 5 recorded frames vs 600 (report
    --raw-times, 2,000 landings): 79 vs 889 ns when the landing scanned each popped entry; the
    bisection (unwind.c, known_left) made it 87-117 vs 46-134 ns."""
    exe = build_c("skep25m_ljloop", ["skep25m_ljloop.c"])
    shallow, deep = [], []
    for _ in range(3):
        for bottom, into in (("5", shallow), ("600", deep)):
            _, log = record(sfkit.realtime() + [exe, "2000", bottom], args=["-q"])
            into.append(self_ns_per_call(log, "once"))
    s, d = min(shallow), min(deep)
    check(d - s <= 100, f"once()'s self ns a call: {s:.0f} with 5 frames abandoned, {d:.0f} with 600")


def callgrind_in_longjmp(cmd, env=None):
    """Instructions collected inside functions named longjmp (the runtime's export, or libc's)."""
    p = run(["valgrind", "--tool=callgrind", "--smc-check=all", "--toggle-collect=longjmp",
             "--callgrind-out-file=/dev/null"] + cmd, env=env, check_rc=None, timeout=120)
    m = re.search(r"Collected : (\d+)", p.stderr)
    check(m, p.stderr[-2000:])
    return int(m.group(1))


def test_skeptic25m_landing_over_600_frames_costs_at_most_1000_instructions():
    """Instructions inside longjmp a landing over 595 recorded frames, traced minus untraced (59):
    +17,615 with a scan of the popped entries (29 each), +378 with the bisection."""
    if not shutil.which("valgrind"):
        raise Skip("no valgrind")
    exe = build_c("skep25m_ljloop", ["skep25m_ljloop.c"])
    d = tmpdir()

    def per_landing(env_for):
        a = callgrind_in_longjmp([exe, "20", "600"], env_for("a"))
        b = callgrind_in_longjmp([exe, "40", "600"], env_for("b"))
        return (b - a) / 20

    untraced = per_landing(lambda k: None)
    # the writer thread by name (sfkit.CG_WRITER_ENV): auto hands off on
    # the measured thread under valgrind
    traced = per_landing(lambda k: {"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": os.path.join(d, k + ".log"),
                                    **sfkit.CG_WRITER_ENV})
    check(traced - untraced <= 1000,
          f"instructions a landing over 595 frames: untraced {untraced:.0f}, traced {traced:.0f}")


def test_skeptic25m_cxx_mix_allocations_are_the_programs():
    """C++ rethrow, throw_with_nested, exception_ptr, a throw 700 deep and a longjmp 900 deep (past the
    array: each thread maps its overflow area), in 4 threads and main, then a dlopen of an XRay library:
    `memory` counts what a malloc-counting shim counts untraced (2,770 allocations, 2,758 frees here)."""
    exe = build_c("skep25m_cxmix", ["skep25m_cxmix.cc"], libs=["-lpthread", "-ldl"], compiler="clang++")
    lib = build_c("libskep25m_ctorlib.so", ["skep25m_ctorlib.c"], shared=True)
    shim = build_c("skep25m_mcount.so", ["skep25m_mcount.c"], shared=True, xray=False, compiler="gcc")
    u = run([exe, lib], env={"LD_PRELOAD": shim})
    m = re.search(r"SHIM allocs=(\d+) frees=(\d+)", u.stderr)
    check(m, u.stderr)
    _, log = record([exe, lib], args=["-q", "--alloc"])
    out = run([SFTRACE, "memory", "--format", "tsv", log]).stdout
    got = dict(line.split("\t") for line in out.splitlines() if line.count("\t") == 1)
    eq((int(got["allocations"]) + int(got["reallocs"]), int(got["frees"])), (int(m.group(1)), int(m.group(2))),
       "(allocations + reallocs, frees) traced vs the shim's untraced")


if __name__ == "__main__":
    sfkit.main(globals())
