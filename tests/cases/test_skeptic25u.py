"""Skeptic 25u: programs of our own against issue 25's claims on integ
c383711 (the tracer's own work never shows up as the program's): the
makecontext table that spares a coroutine's landing the read of
/proc/self/maps, --alloc against an untraced counter of our own over the
whole allocator family, a program with its own allocator, and the
constructors of dlopen'd objects of every shape.

Costs are counted, never timed: /proc/self/maps opens under strace and
callgrind instruction counts inside the landing function (as
bench/landing_cost.sh --callgrind). Allocation counts are compared with
skep25u_shim.c preloaded into the untraced program.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25u.py."""
import collections
import os
import re
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import FIXBUILD, RUNTIME, SFTRACE, Skip, build_c, check, eq, record, run, tmpdir  # noqa: E402

ISSUE = 25


# ---- helpers ----------------------------------------------------------------

CLONE_RE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?(?:clone3?|fork|vfork)\b.*= (\d+)")


def maps_opens(cmd, args=("-q",)):
    """(stdout, log, number of /proc/self/maps opens by the traced program
    and its threads) of `sftrace record CMD` under strace -f: only the
    program's tasks count, after its execve (the CLI of an ASan build
    reads maps itself)."""
    if not shutil.which("strace"):
        raise Skip("strace is not installed")
    d = tmpdir()
    st = os.path.join(d, "strace.out")
    p = run(["strace", "-f", "-qq", "-e", "trace=openat,open,execve,clone,clone3,fork,vfork", "-o", st, SFTRACE,
             "record", "-o", os.path.join(d, "sf.log")] + list(args) + ["--"] + list(cmd),
            env={"ASAN_OPTIONS": "detect_leaks=0"})  # LeakSanitizer cannot run under ptrace (CI's ASan CLI)
    mine, n = set(), 0
    with open(st, errors="replace") as f:
        for line in f:
            pid = line.split(None, 1)[0]
            if f'execve("{cmd[0]}"' in line:
                mine.add(pid)
                continue
            m = CLONE_RE.match(line)
            if m and m.group(1) in mine:
                mine.add(m.group(2))
            elif pid in mine and "/proc/self/maps" in line and "resumed" not in line:
                n += 1
    return p.stdout, os.path.join(d, "sf.log"), n


def callgrind_in(cmd, fn, traced):
    """Instructions collected inside FN (callgrind --toggle-collect) for
    CMD, untraced or with the runtime preloaded."""
    if not shutil.which("valgrind"):
        raise Skip("valgrind is not installed")
    env = {}
    if traced:
        # the writer thread by name (sfkit.CG_WRITER_ENV): auto hands off
        # on the measured thread under valgrind
        env = {"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": os.path.join(tmpdir(), "cg.log"), **sfkit.CG_WRITER_ENV}
    p = run(["valgrind", "--tool=callgrind", "--smc-check=all", f"--toggle-collect={fn}",
             "--callgrind-out-file=/dev/null"] + list(cmd), env=env, timeout=900)
    m = re.search(r"Collected : (\d+)", p.stderr)
    check(m, f"callgrind's output: {p.stderr[-800:]}")
    return int(m.group(1))


def unwinds(log):
    """Counter of the UNWIND events' "N frames abandoned" texts."""
    out = run([SFTRACE, "dump", log]).stdout
    return collections.Counter(re.sub(r"\[depth \d+\] ", "", m.group(1))
                               for m in re.finditer(r"UNWIND\s+(.*?), depth", out))


def shim():
    return build_c("skep25u_shim.so", ["skep25u_shim.c"], shared=True, xray=False)


def counted(cmd):
    """Runs CMD untraced under skep25u_shim.so: (stdout, [(allocs, bytes,
    frees, reallocs)] per process that allocated)."""
    out = os.path.join(tmpdir(), "shim.out")
    p = run(cmd, env={"LD_PRELOAD": shim(), "SKEP25U_OUT": out})
    rows = []
    with open(out) as f:
        for line in f:
            pid, a, b, fr, r = (int(x) for x in line.split())
            if a or fr:
                rows.append((pid, (a, b, fr, r)))
    return p.stdout, [v for _, v in sorted(rows)]


MEM_RE = re.compile(r"^(\d+) allocations \(([^)]*)\), (\d+) frees, (\d+) reallocs")


def memory_counts(log):
    first = run([SFTRACE, "memory", log]).stdout.splitlines()[0]
    m = MEM_RE.match(first)
    check(m, f"memory's first line: {first!r}")
    return int(m.group(1)), int(m.group(3)), int(m.group(4))


def coro():
    return build_c("skep25u_coro", ["skep25u_coro.c"])


# ---- time: landings on the stacks of many coroutines -----------------------------

def test_thousand_live_coroutines_landings():
    """skep25u_coro sep N R K: N ucontext coroutines made by makecontext,
    all alive at once (a server's coroutine per connection), each stack
    its own mmap with a guard page; each coroutine makes K longjmp
    landings (two frames abandoned) each time it runs, R rounds. Untraced
    and traced: "landings N*R*K". With the 64-slot ring of k25u the
    contexts made first were gone from the table while still in use (N =
    1,000: maps read 8 times, 4-8 ms each, charged to land; the 65th
    coroutine's first landing +41,000 instructions over the 64th's); the
    table now holds every live context (h25ctx2). Checked: no maps open
    under strace; the first landing of the 65th coroutine costs no more
    than the 64th's (callgrind, within 1,000 instructions)."""
    exe = coro()
    out, log, n = maps_opens([exe, "sep", "1000", "2", "1"])
    eq(out, "landings 2000\n", "traced output")
    eq(unwinds(log).get("2 frames abandoned", 0) >= 1000, True, "landings recorded")
    c = {(k, t): callgrind_in([exe, "sep", str(k), "1", "1"], "land", t) for k in (64, 65) for t in (False, True)}
    extra = (c[65, True] - c[64, True]) - (c[65, False] - c[64, False])
    check(n == 0 and extra <= 1000,
          f"/proc/self/maps opened {n} times (want 0); the 65th coroutine's first landing costs {extra} "
          f"instructions more traced (callgrind inside land: {c})")


def test_thread_pool_of_coroutines_landings():
    """skep25u_thrctx T: every thread makes a context on its own mmap'd
    stack, all meet on a barrier, then each swaps into its coroutine and
    lands once. Untraced and traced: "threads T landings T" and T UNWINDs
    of two frames, no maps read. With the 64-slot ring of k25u, T = 100
    lost the contexts made first and 36 threads each read maps, all at
    once, their time charged to land (median 26 ms a landing with T =
    200); the table now holds every live context (h25ctx2)."""
    exe = build_c("skep25u_thrctx", ["skep25u_thrctx.c"], libs=["-lpthread"])
    out, log, n = maps_opens([exe, "100"])
    eq(out, "threads 100 landings 100\n", "traced output")
    eq(dict(unwinds(log)), {"2 frames abandoned": 100}, "UNWIND events")
    eq(n, 0, "/proc/self/maps opens with 100 threads")


def test_coroutines_the_table_holds():
    """HELD. skep25u_coro sep 64 3 2 (64 coroutines, each its own mapping,
    384 landings) and pool 64 3 2 (one mmap carved in 64 stacks):
    "landings 384"; no /proc/self/maps open under strace; every landing
    an UNWIND of its two frames. skep25u_xthread 2 3: three contexts made
    on the main thread with stacks on the heap (malloc), in .bss and in a
    frame of a third thread parked on a pipe, resumed by a worker thread:
    "landings 18", no maps open, 18 UNWINDs of 2 frames (and one of 3 at
    the worker's exit: the suspended contexts' frames). skep25u_thrctx
    64: 64 threads each with one coroutine, one landing each: no maps
    open, 64 UNWINDs of two frames."""
    exe = coro()
    for mode in ("sep", "pool"):
        out, log, n = maps_opens([exe, mode, "64", "3", "2"])
        eq(out, "landings 384\n", f"{mode}: traced output")
        eq(n, 0, f"{mode}: /proc/self/maps opens")
        eq(unwinds(log).get("2 frames abandoned", 0), 384, f"{mode}: landings of two frames")
    x = build_c("skep25u_xthread", ["skep25u_xthread.c"], libs=["-lpthread"])
    eq(run([x, "2", "3"]).stdout, "landings 18\n", "xthread untraced")
    out, log, n = maps_opens([x, "2", "3"])
    eq(out, "landings 18\n", "xthread traced")
    eq(n, 0, "xthread: /proc/self/maps opens")
    eq(unwinds(log).get("2 frames abandoned", 0), 18, "xthread: landings of two frames")
    tc = build_c("skep25u_thrctx", ["skep25u_thrctx.c"], libs=["-lpthread"])
    out, log, n = maps_opens([tc, "64"])
    eq(out, "threads 64 landings 64\n", "thrctx 64: traced")
    eq(n, 0, "thrctx 64: /proc/self/maps opens")
    eq(dict(unwinds(log)), {"2 frames abandoned": 64}, "thrctx 64: UNWIND events")


def test_heap_events_on_thousand_coroutines():
    """HELD. skep25u_coro sep 1000 2 0 alloc: 1,000 live coroutines, each
    mallocs and frees a block each time it runs (2 rounds), no landings.
    `record --alloc` opens no /proc/self/maps (strace) and `sftrace
    memory` equals the untraced counter: 2,003 allocations, 2,000 frees."""
    exe = coro()
    cmd = [exe, "sep", "1000", "2", "0", "alloc"]
    out, rows = counted(cmd)
    eq(out, "landings 0\n", "untraced")
    tout, log, n = maps_opens(cmd, args=("-q", "--alloc"))
    eq(tout, out, "traced")
    eq(n, 0, "/proc/self/maps opens")
    a, _, fr, r = rows[0]
    eq(memory_counts(log), (a, fr, r), "(allocations, frees, reallocs): memory vs the counter")


def test_contexts_made_every_way():
    """HELD. skep25u_ctxvia MODE 3, each stack its own mmap: makecontext
    from dlsym(RTLD_DEFAULT), from dlsym on a dlopen("libc.so.6") handle,
    four contexts whose functions return and chain by uc_link, and a
    SIGUSR1 handler (raise) that swapcontexts into a coroutine. Untraced
    and traced: "MODE landings 9" (12 for link); no /proc/self/maps open
    under strace; every landing one UNWIND of its two frames."""
    exe = build_c("skep25u_ctxvia", ["skep25u_ctxvia.c"], libs=["-ldl"])
    for mode, n in (("default", 9), ("libc", 9), ("link", 12), ("signal", 9)):
        want = f"{mode} landings {n}\n"
        eq(run([exe, mode, "3"]).stdout, want, f"{mode}: untraced")
        out, log, opens = maps_opens([exe, mode, "3"])
        eq(out, want, f"{mode}: traced")
        eq(opens, 0, f"{mode}: /proc/self/maps opens")
        eq(dict(unwinds(log)), {"2 frames abandoned": n}, f"{mode}: UNWIND events")


# ---- exceptions through destructors that throw, and std::terminate ------------------

def test_destructors_throwing_inside_unwinding():
    """HELD. skep25u_dtorthrow 10: outer -> tail_to_level -> level(5) ...
    level(0) throws; each level's Guard destructor, run by a cleanup
    landing during the unwinding, throws and catches an int two frames
    down (inner_try -> inner_mid -> inner_throw). Untraced and traced:
    "rounds 10 guards 60 inner 210 sum 45". Traced: every function's
    count as called (60 level, ~Guard, inner_try, inner_mid, inner_throw;
    10 outer and tail_to_level), 70 UNWINDs of 2 frames (60 inner throws,
    10 final landings in outer) and 50 of 1 frame (the cleanup landings
    from level(0) to level(4)). Natively a round took 11.4-11.6 us
    untraced and 12.0-12.2 us traced after the first."""
    exe = build_c("skep25u_dtorthrow", ["skep25u_dtorthrow.cc"], compiler="clang++")
    want = "rounds 10 guards 60 inner 210 sum 45\n"
    eq(run([exe, "10"]).stdout, want, "untraced")
    p, log = record([exe, "10"], args=["-q"])
    eq(p.stdout, want, "traced")
    calls = sfkit.count_calls(sfkit.dump_events(log))
    eq(dict(calls), {"main": 1, "outer(int)": 10, "tail_to_level(int)": 10, "level(int, int)": 60,
                     "Guard::~Guard()": 60, "inner_try(int)": 60, "inner_mid(int)": 60, "inner_throw(int)": 60},
       "calls")
    eq(dict(unwinds(log)), {"2 frames abandoned": 70, "1 frames abandoned": 50}, "UNWIND events")


def test_terminate_paths():
    """HELD. skep25u_terminate MODE (with skep25u_noeh_c.c, a C frame
    without unwind tables): caught (control: exit 0, "caught boom"); a
    throw out of a noexcept function, one across the C frame, and a
    destructor throwing during unwinding all end in std::terminate: exit
    134, the same "terminate called after throwing ..." on stderr, traced
    and untraced. The trace ends with what happened: noexcept, 2 frames
    abandoned (the landing in guarded's terminate pad); cframe, none (the
    search phase fails before any landing); dtor, 2 then ~Bad's 1."""
    noeh = os.path.join(FIXBUILD, "skep25u_noeh_c.o")
    run(["clang"] + sfkit.XRAY_CFLAGS + ["-fno-asynchronous-unwind-tables", "-fno-exceptions", "-c", "-o", noeh,
                                         os.path.join(sfkit.FIXTURES, "skep25u_noeh_c.c")])
    exe = build_c("skep25u_terminate", ["skep25u_terminate.cc", noeh], compiler="clang++")
    want_unwinds = {"caught": {"2 frames abandoned": 1}, "noexcept": {"2 frames abandoned": 1}, "cframe": {},
                    "dtor": {"2 frames abandoned": 1, "1 frames abandoned": 1}}
    for mode, uw in want_unwinds.items():
        u = run([exe, mode], check_rc=None)
        rc = 0 if mode == "caught" else -6
        eq(u.returncode, rc, f"{mode}: untraced exit")
        p, log = record([exe, mode], args=["-q"], check_rc=None)
        eq(p.returncode, 0 if mode == "caught" else 134, f"{mode}: record's exit")
        eq(p.stdout, u.stdout, f"{mode}: stdout")
        err = "".join(line for line in p.stderr.splitlines(True) if not line.startswith("sftrace:"))
        eq(err, u.stderr, f"{mode}: stderr")
        eq(dict(unwinds(log)), uw, f"{mode}: UNWIND events")


def test_stack_limit_raised_by_the_program():
    """HELD. skep25u_rlimit D 10: main raises its own RLIMIT_STACK to
    1 GiB (setrlimit, after the runtime took the 8 MiB limit at start-up),
    recurses D frames of 64 KiB, and makes 10 longjmp landings at the
    bottom. D = 1000 runs 64 MiB below the bounds the runtime knows.
    Untraced and traced: "depth D landings 10"; no /proc/self/maps open
    (strace); 10 UNWINDs of two frames, for D = 50 and 1000."""
    exe = build_c("skep25u_rlimit", ["skep25u_rlimit.c"])
    for d in ("50", "1000"):
        want = f"depth {d} landings 10\n"
        eq(run([exe, d, "10"]).stdout, want, f"{d}: untraced")
        out, log, n = maps_opens([exe, d, "10"])
        eq(out, want, f"{d}: traced")
        eq(n, 0, f"{d}: /proc/self/maps opens")
        eq(dict(unwinds(log)), {"2 frames abandoned": 10}, f"{d}: UNWIND events")


def test_thread_per_request_first_landings():
    """HELD. skep25u_thrland T K: T threads one after another, each K
    longjmp landings. callgrind inside land, traced minus untraced: a
    thread's first landing (T 11 minus T 1, per thread) +433
    instructions, a later one (K 102 minus K 2, per landing) +433: the
    first landing of each new thread costs no more than a later one."""
    exe = build_c("skep25u_thrland", ["skep25u_thrland.c"], libs=["-lpthread"])
    eq(run([exe, "3", "2"]).stdout, "threads 3 landings 6\n", "untraced")
    c = {(a, t): callgrind_in([exe] + a.split(), "land", t) for a in ("1 1", "11 1", "1 2", "1 102")
         for t in (False, True)}
    first = ((c["11 1", True] - c["1 1", True]) - (c["11 1", False] - c["1 1", False])) / 10
    later = ((c["1 102", True] - c["1 2", True]) - (c["1 102", False] - c["1 2", False])) / 100
    check(first <= later + 50, f"a thread's first landing +{first} instructions, a later one +{later}: {c}")


def test_landing_cost_under_deep_recursion():
    """HELD (the cost grows with the log of the depth). skep25u_deep D K:
    a recursive descent D frames deep whose bottom makes K landings two
    frames up; the shadow stack keeps 512 entries in its array, the rest
    past it. callgrind inside land, per landing (K 102 minus K 2, over
    100), traced minus untraced, land/deep/deeper's events included:
    +548 at D = 100, +718 at D = 5,000, +818 at D = 50,000 (untraced 110
    at every depth). Checked: D = 50,000 within 400 of D = 100."""
    exe = build_c("skep25u_deep", ["skep25u_deep.c"])
    eq(run([exe, "5000", "3"]).stdout, "depth 5000 landings 3\n", "untraced")
    p, _ = record([exe, "5000", "3"], args=["-q"])
    eq(p.stdout, "depth 5000 landings 3\n", "traced")

    def per_landing(d):
        c = {(k, t): callgrind_in([exe, str(d), str(k)], "land", t) for k in (2, 102) for t in (False, True)}
        return ((c[102, True] - c[2, True]) - (c[102, False] - c[2, False])) / 100
    shallow, deepest = per_landing(100), per_landing(50000)
    check(deepest <= shallow + 400, f"per landing: +{shallow} at depth 100, +{deepest} at depth 50,000")


def test_allocator_edge_cases():
    """HELD. skep25u_edges 10: malloc(0), free(NULL), calloc and
    reallocarray overflows, malloc(SIZE_MAX - i), a failing realloc (the
    old block kept, then freed), realloc(NULL), realloc to 0,
    posix_memalign EINVAL and ENOMEM, aligned_alloc(64, 100), through
    volatile pointers. Untraced and traced: "edges 10 fails 60"; the
    counter and `sftrace memory`: 41 allocations (5.4 KiB), 40 frees."""
    exe = build_c("skep25u_edges", ["skep25u_edges.c"])
    out, rows = counted([exe, "10"])
    eq(out, "edges 10 fails 60\n", "untraced")
    p, log = record([exe, "10"], args=["-q", "--alloc"])
    eq(p.stdout, out, "traced")
    a, _, fr, r = rows[0]
    eq(memory_counts(log), (a, fr, r), "(allocations, frees, reallocs): memory vs the counter")


# ---- heap ------------------------------------------------------------------------

def family():
    return build_c("skep25u_family", ["skep25u_family.cc"], compiler="clang++",
                   flags=["-std=c++17", "-fsized-deallocation"])


def test_allocator_family_counts():
    """HELD. skep25u_family 20: 20 rounds of posix_memalign (and its
    EINVAL), aligned_alloc, memalign, valloc, pvalloc, reallocarray (grow,
    shrink, overflow), realloc to 0, calloc, malloc_usable_size, C++
    new/delete (aligned type, arrays, nothrow, sized and aligned sized
    delete), std::string growth, strdup, getline, fopen/fclose, a throw
    caught two frames up, qsort. The untraced counter and `record --alloc`
    + `sftrace memory` agree: 342 allocations, 340 frees, 60 reallocs
    (bytes differ by pvalloc's rounding only: the counter counts the
    rounded 8,192, memory the 5,000 asked)."""
    exe = family()
    _, rows = counted([exe, "20"])
    eq(len(rows), 1, "processes that allocated untraced")
    a, _, fr, r = rows[0]
    _, log = record([exe, "20"], args=["-q", "--alloc"])
    eq(memory_counts(log), (a, fr, r), "(allocations, frees, reallocs): memory vs the untraced counter")


def test_aligned_block_usable_size():
    """skep25u_family 1 and 20: the program sums malloc_usable_size of
    its posix_memalign(64, 100 + i) and calloc(7, 9) blocks with other
    exact values (sorted data, string lengths). Untraced: "family 1 sum
    911", "family 20 sum 17894" (every run). Traced (record -q, with or
    without --alloc): 879 and 17862: the first aligned block's usable size
    is 104 instead of 136 (libstdc++'s 73 KiB emergency pool is the only
    block before it untraced)."""
    exe = family()
    for n in ("1", "20"):
        want = run([exe, n]).stdout
        for args in (["-q"], ["-q", "--alloc"]):
            p, _ = record([exe, n], args=args)
            eq(p.stdout, want, f"family {n}, record {' '.join(args)}")


def test_own_allocator_sees_only_its_program():
    """skep25u_ownmalloc 10: malloc, calloc, realloc, free, the memalign
    family and malloc_usable_size defined in the executable (a bump
    arena counting calls), so every caller in the process binds to them.
    main prints the calls made before it and those it made (10
    malloc/free rounds, strdup, a thread). Untraced: "before-main 0 after
    23". Traced: "before-main 1 after 23"; `sftrace memory` of the
    --alloc run explains that the program's allocator comes first."""
    exe = build_c("skep25u_ownmalloc", ["skep25u_ownmalloc.c"], libs=["-lpthread"])
    want = run([exe, "10"]).stdout
    eq(want, "before-main 0 after 23\n", "untraced")
    for args in (["-q"], ["-q", "--alloc"]):
        p, _ = record([exe, "10"], args=args)
        eq(p.stdout, want, f"record {' '.join(args)}")


# ---- constructors of dlopen'd objects ----------------------------------------------

def plugins():
    d = os.path.join(FIXBUILD, "skep25u_plugs")
    src = ["skep25u_plug_ctor.c"]
    build_c("libskep25u_pa.so", src, flags=["-DNAME=plug_a", "-DSHAPE=0"], shared=True, outdir=d)
    build_c("libskep25u_pb.so", src, flags=["-DNAME=plug_b", "-DSHAPE=1", "-Wl,-init=plug_b"], shared=True, outdir=d)
    build_c("libskep25u_pc.so", src, flags=["-DNAME=plug_c", "-DSHAPE=2"], libs=["-ldl"], shared=True, outdir=d)
    build_c("libskep25u_pd.so", src, flags=["-DNAME=plug_d", "-DSHAPE=0"], shared=True, outdir=d)
    build_c("libskep25u_pe.so", src, flags=["-DNAME=plug_e", "-DSHAPE=0"], shared=True, outdir=d)
    return d


def test_constructor_shapes():
    """HELD. skep25u_ctor_host loads constructor-only plugins that call
    nothing: A (init_array) by dlopen, B (DT_INIT: -Wl,-init, no
    attribute), C whose constructor dlopen's D (constructor-only), E by
    dlmopen(LM_ID_NEWLM) into a new namespace, then A again with
    RTLD_NOLOAD | RTLD_GLOBAL. Untraced and traced: "A 41 B 41 C 2 D 41 E
    41 noload ok". Traced: plug_a, plug_b, plug_c, plug_d, plug_e once
    each (plug_d inside plug_c), none twice."""
    d = plugins()
    host = build_c("skep25u_ctor_host", ["skep25u_ctor_host.c"], libs=["-ldl"])
    want = "A 41 B 41 C 2 D 41 E 41 noload ok\n"
    eq(run([host, d]).stdout, want, "untraced")
    p, log = record([host, d], args=["-q"])
    eq(p.stdout, want, "traced")
    events = sfkit.dump_events(log)
    calls = sfkit.count_calls(events)
    eq({k: calls.get(k, 0) for k in ("plug_a", "plug_b", "plug_c", "plug_d", "plug_e")},
       {"plug_a": 1, "plug_b": 1, "plug_c": 1, "plug_d": 1, "plug_e": 1}, "constructor calls")
    order = [(e.kind, e.name) for e in events if e.name.startswith("plug_c") or e.name.startswith("plug_d")]
    eq(order, [("ENTRY", "plug_c"), ("ENTRY", "plug_d"), ("EXIT", "plug_d"), ("EXIT", "plug_c")],
       "plug_d's constructor inside plug_c's")


if __name__ == "__main__":
    sfkit.main(globals())
