"""Skeptic k25c on issue 25 (the tracer's own work never shows up as the
program's): programs of its own (tests/fixtures/skep25n_*) that know the
truth, compared with what the runtime records, counts or costs.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25n.py."""
import os
import re
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import FIXBUILD, SFTRACE, Skip, build_c, check, eq, record, run, tmpdir  # noqa: E402

UNWIND_RE = re.compile(r"UNWIND\s+(?:\[depth (\d+)\]\s+)?(\d+) frames abandoned, depth (\d+) left")
SHIM_RE = re.compile(r"SHIM pid \d+ allocs=(\d+) frees=(\d+) reallocs=(\d+) bytes=(\d+)")
NOSIB = ["-fno-optimize-sibling-calls"]


def unwinds(log):
    """(abandoned, depth left) of each UNWIND line of `sftrace dump`, in order."""
    out = run([SFTRACE, "dump", log]).stdout
    return [(int(m.group(2)), int(m.group(3))) for m in UNWIND_RE.finditer(out)]


def shim():
    """A malloc-counting preload (gcc, no XRay): the program's own allocations, untraced."""
    return build_c("skep25n_mcount.so", ["skep25n_mcount.c"], shared=True, xray=False, compiler="gcc")


def shim_counts(cmd):
    """(allocs, frees, reallocs, bytes) the shim counts untraced; bytes are malloc, calloc and
    realloc(NULL)'s sizes."""
    p = run(cmd, env={"LD_PRELOAD": shim()}, check_rc=None)
    m = SHIM_RE.search(p.stderr)
    check(m, f"no shim line: {p.stderr[-500:]}")
    return tuple(int(x) for x in m.groups())


def memory_tsv(log):
    out = run([SFTRACE, "memory", "--format", "tsv", log]).stdout
    return dict(line.split("\t") for line in out.splitlines() if line.count("\t") == 1)


# --- breaks -----------------------------------------------------------------------------------


def test_skeptic25n_longjmp_out_of_coroutine_stack_in_callers_frame():
    exe = build_c("skep25n_costack_frame", ["skep25n_costack_frame.c"], flags=NOSIB)
    eq(run([exe]).stdout, "landed 3\n", "untraced")
    p, log = record([exe], args=["-q"])
    eq(p.stdout, "landed 3\n", "traced")
    # At each landing main, run, step, co and 4 thrower frames are open; step, co and the
    # throwers are abandoned.
    eq(unwinds(log), [(6, 2)] * 3, "UNWIND (abandoned, depth left) per landing")


def test_skeptic25n_siglongjmp_from_altstack_in_callers_frame():
    exe = build_c("skep25n_altstack_frame", ["skep25n_altstack_frame.c"], flags=NOSIB)
    eq(run([exe]).stdout, "landed 3\n", "untraced")
    p, log = record([exe], args=["-q"])
    eq(p.stdout, "landed 3\n", "traced")
    eq(unwinds(log), [(4, 2)] * 3, "UNWIND (abandoned, depth left) per landing")


def test_skeptic25n_siglongjmp_from_a_handler_that_interrupted_a_trampoline():
    exe = build_c("skep25n_handler_jump", ["skep25n_handler_jump.c"], flags=NOSIB, libs=["-lpthread"])
    n = 1000
    p, log = record([exe, str(n)], args=["-q"], timeout=120)
    eq(p.stdout, f"landings {n}\n", "traced output")
    # One pass over dump's output (tens of millions of lines; under load
    # gigabytes), in blocks of whole lines.
    seen = {"unwinds": 0, "exit_main": False}

    def scan(block):
        seen["unwinds"] += sum(1 for _ in UNWIND_RE.finditer(block))
        seen["exit_main"] = seen["exit_main"] or bool(re.search(r"EXIT\s+main\b", block))
    info = sfkit.dump_info(log, events=True, scan=scan)
    eq((seen["unwinds"], info["summary"]["lost"], info["summary"]["dropped"]), (n, 0, 0),
       "(UNWIND events, lost, dropped)")
    check(seen["exit_main"], "main's EXIT is missing")


def test_skeptic25n_thread_dtv_bytes_are_the_programs():
    exe = build_c("skep25n_threads_only", ["skep25n_threads_only.c"], libs=["-lpthread"])
    allocs, frees, _, nbytes = shim_counts([exe])
    _, log = record([exe], args=["-q", "--alloc"])
    m = memory_tsv(log)
    eq((int(m["allocations"]), int(m["frees"]), int(m["bytes_allocated"])), (allocs, frees, nbytes),
       "(allocations, frees, bytes) traced vs the shim's untraced")


def test_skeptic25n_longjmp_from_one_coroutine_stack_to_another():
    exe = build_c("skep25n_costack_to_costack", ["skep25n_costack_to_costack.c"], flags=NOSIB)
    eq(run([exe, "20"]).stdout, "ok\n", "untraced")
    p, log = record([exe, "20"], args=["-q"])
    eq(p.stdout, "ok\n", "traced")
    # At each landing main, cob (on B), coa and 4 thrower frames (on A) are open.
    eq(unwinds(log), [(5, 2)] * 20, "UNWIND (abandoned, depth left) per landing")


def test_skeptic25n_thread_first_function_keeps_its_own_time():
    exe = build_c("skep25n_thread_first", ["skep25n_thread_first.c"], flags=NOSIB, libs=["-lpthread"])
    _, log = record([exe], args=["-q"])
    out = run([SFTRACE, "report", "--format", "tsv", "-n", "0", log]).stdout
    rows = {r[1]: r for r in (line.split("\t") for line in out.splitlines()[1:]) if len(r) >= 8}
    fmin, gmin = int(rows["f"][6]), int(rows["g"][6])
    check(fmin - gmin <= 100, f"shortest f {fmin} ns, shortest g {gmin} ns (same work)")


# --- claims that hold --------------------------------------------------------------------------


def test_skeptic25n_nested_siglongjmp_on_sigaltstack():
    """SIGUSR1's handler (on a sigaltstack) sigsetjmps and recurses until a nested SIGUSR2
    handler siglongjmps back into it, then it siglongjmps out to main: 6 abandoned with 8 left,
    then 7 abandoned with 1 left, three times; --alloc sees only the program's two blocks."""
    exe = build_c("skep25n_nested_sig", ["skep25n_nested_sig.c"], flags=NOSIB)
    p, log = record([exe], args=["-q", "--alloc"])
    eq(p.stdout, "ok\n", "traced")
    eq(unwinds(log), [(6, 8), (7, 1)] * 3, "UNWIND (abandoned, depth left)")
    m = memory_tsv(log)
    eq((m["allocations"], m["bytes_allocated"]), ("2", str(65536 + 4096)), "altstack + stdout buffer")


def dlshape_objects():
    build_c("libskep25n_initarr.so", ["skep25n_lib_initarr.c"], shared=True)
    build_c("libskep25n_dtinit.so", ["skep25n_lib_dtinit.c"], shared=True, flags=["-Wl,-init,dt_init_fn"])
    build_c("libskep25n_prio.so", ["skep25n_lib_prio.c"], shared=True)
    inner = build_c("libskep25n_inner.so", ["skep25n_lib_inner.c"], shared=True)
    build_c("libskep25n_outer.so", ["skep25n_lib_outer.c"], shared=True,
            flags=[f'-DSKEP25N_INNER="{inner}"'], libs=["-ldl"])
    build_c("libskep25n_deep.so", ["skep25n_lib_deep.c"], shared=True)
    build_c("libskep25n_ns.so", ["skep25n_lib_ns.c"], shared=True)
    build_c("libskep25n_thr.so", ["skep25n_lib_thr.c"], shared=True)
    return build_c("skep25n_dlshapes", ["skep25n_dlshapes.c"], libs=["-ldl", "-lpthread"])


def test_skeptic25n_constructors_of_every_dlopen_shape():
    """Each constructor that calls nothing is recorded once: .init_array only, DT_INIT only,
    three priorities, one dlopen'd by another's constructor (nested in it), RTLD_LAZY|
    RTLD_DEEPBIND, dlmopen(LM_ID_NEWLM), dlopen from a thread while two others spin; and
    --alloc counts what the shim counts untraced."""
    exe = dlshape_objects()
    want = run([exe, FIXBUILD]).stdout
    eq(want, "loaded all: 1\n", "untraced")
    p, log = record([exe, FIXBUILD], args=["-q"])
    eq(p.stdout, want, "traced")
    calls = sfkit.count_calls(sfkit.dump_events(log))
    ctors = ["ia_fn", "dt_init_fn", "prio_a", "prio_b", "prio_c", "outer_init", "inner_init", "deep_init",
             "ns_init", "thr_init"]
    eq({c: calls[c] for c in ctors}, {c: 1 for c in ctors}, "constructor calls")
    out = run([SFTRACE, "dump", log]).stdout
    check(re.search(r"ENTRY\s+outer_init\n.*ENTRY\s+inner_init", out), "inner_init nested in outer_init")
    allocs, frees, reallocs, _ = shim_counts([exe, FIXBUILD])
    _, alog = record([exe, FIXBUILD], args=["-q", "--alloc"])
    m = memory_tsv(alog)
    eq((int(m["allocations"]), int(m["frees"]), int(m["reallocs"])), (allocs, frees, reallocs),
       "(allocations, frees, reallocs) traced vs untraced")


def test_skeptic25n_thousands_of_short_threads_jump():
    """3,000 threads, 4 at a time, each setjmp + longjmp over 4 frames and exits: 3,000
    landings of 4 abandoned with 1 left; --alloc counts the shim's allocations."""
    exe = build_c("skep25n_thread_jumps", ["skep25n_thread_jumps.c"], flags=NOSIB, libs=["-lpthread"])
    p, log = record([exe], args=["-q", "--alloc"])
    eq(p.stdout, "ok\n", "traced")
    eq(unwinds(log), [(4, 1)] * 3000, "UNWIND per thread")
    allocs, frees, reallocs, _ = shim_counts([exe])
    m = memory_tsv(log)
    eq((int(m["allocations"]), int(m["frees"]), int(m["reallocs"])), (allocs, frees, reallocs), "counts")


def test_skeptic25n_rethrow_through_tail_calls_allocations():
    """catch(...) { throw; } over a destructor frame and two -O2 tail calls, five times:
    --alloc counts what the shim counts untraced (72,704 B pool, exceptions, what())."""
    exe = build_c("skep25n_rethrow_alloc", ["skep25n_rethrow_alloc.cc"], compiler="clang++")
    allocs, frees, reallocs, nbytes = shim_counts([exe])
    p, log = record([exe], args=["-q", "--alloc"])
    eq(p.stdout, "caught 5\n", "traced")
    m = memory_tsv(log)
    eq((int(m["allocations"]), int(m["frees"]), int(m["reallocs"]), int(m["bytes_allocated"])),
       (allocs, frees, reallocs, nbytes), "(allocations, frees, reallocs, bytes)")
    eq(unwinds(log)[:3], [(1, 4), (1, 3), (1, 2)], "first throw's landings")


def test_skeptic25n_terminate_path_unchanged():
    """An uncaught throw with a terminate handler: same stderr and status 134 traced."""
    exe = build_c("skep25n_rethrow_alloc", ["skep25n_rethrow_alloc.cc"], compiler="clang++")
    u = run([exe, "1"], check_rc=-6)
    p, _ = record([exe, "1"], args=["-q", "--alloc"], check_rc=134)
    eq((p.stdout, p.stderr.replace(f"sftrace: {exe} was killed by signal 6 (Aborted)\n", "")),
       (u.stdout, u.stderr), "outputs")


def test_skeptic25n_rust_catch_unwind_allocations():
    rustc = shutil.which("rustc") or os.path.expanduser("~/.cargo/bin/rustc")
    os.makedirs(FIXBUILD, exist_ok=True)
    exe = os.path.join(FIXBUILD, "skep25n_panic")
    src = os.path.join(sfkit.FIXTURES, "skep25n_panic.rs")
    if sfkit._stale(exe, [src]):
        run([rustc, "-O", "-g", "-Zinstrument-xray=always", "-o", exe, src], env={"RUSTC_BOOTSTRAP": "1"})
    allocs, frees, reallocs, _ = shim_counts([exe])
    p, log = record([exe], args=["-q", "--alloc"])
    eq(p.stdout, "caught 5\n", "traced")
    m = memory_tsv(log)
    eq((int(m["allocations"]), int(m["frees"]), int(m["reallocs"])), (allocs, frees, reallocs), "counts")
    eq(unwinds(log)[:4], [(1, 6), (1, 5), (1, 4), (1, 3)], "first panic's landings")


def test_skeptic25n_fork_children_jump_without_allocations():
    exe = build_c("skep25n_forkjump", ["skep25n_forkjump.c"])
    eq(shim_counts([exe])[:3], (0, 0, 0), "untraced")
    d = tmpdir()
    record([exe], out=os.path.join(d, "sf.log"), args=["-q", "--alloc"])
    logs = sorted(os.listdir(d))
    eq(len(logs), 4, f"logs {logs}")
    for f in logs:
        m = memory_tsv(os.path.join(d, f))
        eq((m["allocations"], m["frees"]), ("0", "0"), f)


def callgrind_total(cmd, prefix=()):
    d = tmpdir()
    out = os.path.join(d, "cg.out")
    run(list(prefix) + ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--toggle-collect=loop*"]
        + cmd, check_rc=None)
    with open(out) as f:
        m = re.search(r"^totals: (\d+)", f.read(), re.M)
    check(m, "no callgrind totals")
    return int(m.group(1))


def slope(cmd, prefix=()):
    """Instructions per iteration of loop(N), between N = 50 and 100."""
    return (callgrind_total(cmd + ["100"], prefix) - callgrind_total(cmd + ["50"], prefix)) // 50


def traced_prefix(extra=()):
    """record for a callgrind run: the writer thread by name
    (sfkit.CG_WRITER), auto hands off on the measured thread under valgrind."""
    return [SFTRACE, "record", "-q", "--force", "-o", os.path.join(tmpdir(), "sf.log")] + sfkit.CG_WRITER + \
        list(extra) + ["--"]


def test_skeptic25n_rethrow_cost_callgrind():
    """Two caught exceptions an iteration (the throw, caught by catch(...), and its rethrow),
    through a destructor and two tail calls: callgrind, traced minus untraced, at most 2,000
    instructions an iteration (1,000 an exception: 100 ns at 10 a ns) with every frame recorded
    (its 9 events included) and with none of the abandoned frames in the filter. Measured here:
    untraced 40,127; +1,710 and +90."""
    if not shutil.which("valgrind"):
        raise Skip("no valgrind")
    exe = build_c("skep25n_rethrow", ["skep25n_rethrow.cc"], compiler="clang++")
    flt = os.path.join(tmpdir(), "loop.filter")
    run([SFTRACE, "filter", "-p", exe, "-r", "^(main|loop)", "-o", flt])
    base = slope([exe])
    full = slope([exe], traced_prefix())
    none = slope([exe], traced_prefix(["-f", flt]))
    check(full - base <= 2000 and none - base <= 2000,
          f"untraced {base}, full +{full - base}, filtered +{none - base} instructions an iteration")


def test_skeptic25n_siglongjmp_from_altstack_handler_cost_callgrind():
    """raise() in a recorded frame, the handler (on a sigaltstack) siglongjmps two recorded
    frames out: traced minus untraced at most 1,000 instructions a landing (measured +122,
    the 5 events included; untraced 115)."""
    if not shutil.which("valgrind"):
        raise Skip("no valgrind")
    exe = build_c("skep25n_sigcost", ["skep25n_sigcost.c"], flags=NOSIB)
    base = slope([exe])
    traced = slope([exe], traced_prefix())
    check(traced - base <= 1000, f"untraced {base}, traced +{traced - base} instructions a landing")


if __name__ == "__main__":
    sfkit.main(globals())
