"""aarch64 (issue 14): the fixtures cross-compiled with clang for aarch64 run
under qemu-aarch64 with the aarch64 runtime (make ARCH=aarch64) preloaded by
hand, since no binfmt_misc handler lets `sftrace record` start them. The
x86-64 CLI reads the logs and the counts are exact. One case runs the
cross-built CLI itself under qemu.

Not covered here: exec of another aarch64 image (qemu-user without binfmt
cannot start one, from either side), and Rust (no aarch64 std here)."""
import json
import os
import re
import shutil
import subprocess

from sfkit import (ROOT, SFTRACE, Skip, build_c, call_column, check, check_nesting, count_calls, dump_events, eq,
                   replay_text, run, tmpdir)

TARGET = "aarch64-linux-gnu"
# qemu's -L prefix. With Debian's multiarch libc6:arm64 installed (the
# CLI's :arm64 libraries pull it in), / already holds a consistent loader
# and libc; `-L /usr/aarch64-linux-gnu` would then pair the cross package's
# ld.so with the multiarch libc.so.6 found through /etc/ld.so.cache, two
# different glibc builds, and pthread_create spins forever.
SYSROOT = "/" if os.path.exists("/lib/ld-linux-aarch64.so.1") else "/usr/aarch64-linux-gnu"
ABUILD = os.path.join(ROOT, "build-aarch64")
AFIX = os.path.join(ABUILD, "fixtures")
RUNTIME = os.path.join(ABUILD, "libsftrace.so")

CALLS = {"leaf": 60, "middle": 20, "outer": 10, "recurse": 51, "tail_caller": 5, "tail_callee": 5,
         "thread_work": 8, "tleaf": 8000, "lib_add": 7, "lib_inner": 7, "deep": 21, "crash_here": 1, "main": 1}

_built = []


def toolchain():
    """Skips unless qemu-aarch64, clang and the cross packages are here;
    builds the aarch64 runtime and CLI once per run."""
    if not shutil.which("qemu-aarch64"):
        raise Skip("qemu-aarch64 not installed (scripts/install-deps.sh installs qemu-user)")
    if not shutil.which("clang") or not os.path.exists("/usr/aarch64-linux-gnu/lib/libc.so.6") \
            or not shutil.which(TARGET + "-ld"):
        raise Skip("aarch64 cross toolchain missing (scripts/install-deps.sh installs it)")
    if not _built:
        run(["make", "-s", "-C", ROOT, "ARCH=aarch64", "-j2", "all"], timeout=900)
        _built.append(1)


def cross(name, sources, libs=(), shared=False):
    """A fixture from tests/fixtures built for aarch64 (cached until a
    source changes)."""
    return build_c(name, sources, flags=["--target=" + TARGET, "-fnoxray-link-deps"], libs=libs, shared=shared,
                   outdir=AFIX)


def calls_fixture():
    cross("libcalls.so", ["libcalls.c"], shared=True)
    return cross("calls", ["calls.c"], libs=["-L" + AFIX, "-lcalls", "-Wl,-rpath," + AFIX, "-lpthread"])


def qemu(cmd, log, env=(), check_rc=0):
    """Runs an aarch64 command under qemu with the runtime preloaded, as
    the README says. Returns the CompletedProcess."""
    q = ["qemu-aarch64", "-L", SYSROOT, "-E", "LD_PRELOAD=" + RUNTIME, "-E", "SFTRACE_OUTPUT_FILE=" + log]
    for e in env:
        q += ["-E", e]
    return run(q + list(cmd), check_rc=check_rc, timeout=120)


def counts(log):
    return count_calls(dump_events(log))


def test_aarch64_calls_threads_recursion_tail_shared_library():
    toolchain()
    exe = calls_fixture()
    log = os.path.join(tmpdir(), "sf.log")
    p = qemu([exe], log)
    check("calls ok" in p.stdout, p.stdout)
    events = dump_events(log)
    c = count_calls(events)
    eq(dict(c), CALLS, "entries per function")
    eq(check_nesting(events), {}, "frames left open")
    eq(len({e.tid for e in events}), 9, "threads")
    # clang 14 marks aarch64 tail-call sleds as exits in xray_instr_map: the
    # tail call shows as tail_caller's exit, then tail_callee's entry.
    eq(sum(1 for e in events if e.kind in ("TAIL", "EXIT") and e.name == "tail_caller"), 5, "tail_caller exits")
    d = run([SFTRACE, "dump", log]).stdout
    check("machine: aarch64" in d, d[:800])
    m = re.search(r"clock: cntvct_el0, [0-9.]+ ns/tick, counter frequency (\d+) Hz", d)
    check(m and int(m.group(1)) > 0, d[:800])
    # Times are ns from the counter's frequency: the run took well under a
    # minute, and events are ordered per thread (check_nesting).
    check(0 < events[-1].time < 60e9, f"last event at {events[-1].time} ns")


def test_aarch64_crash_and_abort_keep_events():
    toolchain()
    exe = calls_fixture()
    log = os.path.join(tmpdir(), "sf.log")
    qemu([exe, "segv"], log, check_rc=-11)
    events = dump_events(log)
    c = count_calls(events)
    for fn in ("leaf", "middle", "outer", "tleaf", "lib_add"):
        eq(c[fn], CALLS[fn], f"{fn} before the crash")
    eq(c["deep"], 21, "deep frames at the crash")
    main_tid = next(e.tid for e in events if e.name == "main")
    eq(check_nesting(events).get(main_tid, []), ["main"] + ["deep"] * 21 + ["crash_here"], "open at the crash")
    log2 = os.path.join(tmpdir(), "sf.log")
    qemu([exe, "abort"], log2, check_rc=-6)
    c = counts(log2)
    eq(c["tleaf"], 8000, "abort: tleaf")
    eq(c["crash_here"], 1, "abort: crash_here")


def test_aarch64_dlopen_dlclose_reopen():
    toolchain()
    lib = cross("libplugin.so", ["plugin.c"], shared=True)
    exe = cross("dlopener", ["dlopener.c"], libs=["-ldl"])
    log = os.path.join(tmpdir(), "sf.log")
    p = qemu([exe, lib], log)
    check("dlopener ok" in p.stdout, p.stdout)
    events = dump_events(log)
    eq(check_nesting(events), {}, "frames left open")
    c = count_calls(events)
    eq((c["host_call"], c["plugin_fn"], c["plugin_inner"]), (5, 5, 5), "calls across two loads")


def test_aarch64_fork_child_log():
    toolchain()
    exe = cross("forker", ["forker.c"])
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = qemu([exe, "fork"], log)
    check("forker fork ok 0" in p.stdout, p.stdout)
    logs = sorted(x for x in os.listdir(d) if x.endswith(".log"))
    eq(len(logs), 2, f"one log per process: {logs}")
    child = os.path.join(d, next(x for x in logs if x != "sf.log"))
    check(re.fullmatch(r"sf\.\d+\.log", os.path.basename(child)), child)
    pc, cc = counts(log), counts(child)
    eq((pc["p_work"], pc["c_work"]), (5, 0), "parent")
    eq((cc["c_work"], cc["p_work"]), (5, 0), "child")


def test_aarch64_filters_plain_and_within():
    toolchain()
    exe = calls_fixture()
    lib = os.path.join(AFIX, "libcalls.so")
    d = tmpdir()
    # sftrace filter -p reads the aarch64 ELF files on this x86-64 host.
    only = os.path.join(d, "leaf.filter")
    p = run([SFTRACE, "filter", "-p", exe, "-p", lib, "-r", "^leaf$|^lib_inner$", "-o", only])
    said = p.stdout + p.stderr
    check(f"{exe}: 1 of 11 instrumented functions selected" in said, said)
    check(f"{lib}: 1 of 2 instrumented functions selected" in said, said)
    log = os.path.join(d, "only.log")
    qemu([exe], log, env=["SFTRACE_FILTER=" + only])
    eq(dict(counts(log)), {"leaf": 60, "lib_inner": 7}, "selected functions only")
    within = os.path.join(d, "outer.filter")
    run([SFTRACE, "filter", "-p", exe, "-p", lib, "-r", "^outer$|^lib_add$", "--within", "-o", within])
    log = os.path.join(d, "within.log")
    qemu([exe], log, env=["SFTRACE_FILTER=" + within])
    events = dump_events(log)
    eq(check_nesting(events), {}, "frames left open")
    # outer's second call of middle is a tail call: it runs after outer's
    # frame (and so its window) closed, and is not recorded.
    eq(dict(count_calls(events)), {"outer": 10, "middle": 10, "leaf": 30, "lib_add": 7, "lib_inner": 7},
       "--within: the selected functions and what they call")


def test_aarch64_monotonic_clock():
    # SFTRACE_CLOCK=monotonic routes every event through the C slow path.
    toolchain()
    exe = calls_fixture()
    log = os.path.join(tmpdir(), "sf.log")
    qemu([exe], log, env=["SFTRACE_CLOCK=monotonic"])
    events = dump_events(log)
    eq(dict(count_calls(events)), CALLS, "entries per function")
    eq(check_nesting(events), {}, "frames left open")


def test_aarch64_cli_under_qemu_reads_both_architectures():
    # The cross-built CLI reads an aarch64 log and an x86-64 one.
    toolchain()
    exe = calls_fixture()
    d = tmpdir()
    alog = os.path.join(d, "a.log")
    qemu([exe], alog)
    cli = ["qemu-aarch64", "-L", SYSROOT, os.path.join(ABUILD, "sftrace")]
    rep = run(cli + ["report", alog], timeout=120).stdout
    check(re.search(r" 8000 .* tleaf$", rep, re.M), rep)
    out = os.path.join(d, "a.folded")
    run(cli + ["convert", "-t", "folded", "--weight", "calls", alog, "-o", out], timeout=120)
    folded = open(out).read()
    # Tail calls (middle's last leaf, outer's second middle) show as siblings.
    for line in ("main;outer;middle;leaf 20", "main;middle;leaf 20", "main;leaf 10", "thread_work;tleaf 8000"):
        check(re.search("^" + re.escape(line) + "$", folded, re.M), f"{line} in\n{folded[:800]}")
    # An x86-64 log, written by the host's runtime, reads the same.
    from sfkit import calls_fixture as host_calls, record
    _, xlog = record([host_calls()], out=os.path.join(d, "x.log"))
    rep = run(cli + ["report", xlog]).stdout
    check(re.search(r" 8000 .* tleaf$", rep, re.M), rep)
    d2 = run(cli + ["dump", xlog]).stdout
    check("machine: x86-64" in d2, d2[:600])


def folded_calls(log):
    out = log + ".folded"
    p = run([SFTRACE, "convert", "-t", "folded", "--weight", "calls", log, "-o", out])
    with open(out) as f:
        return dict((s, int(n)) for s, n in (line.rstrip("\n").rsplit(" ", 1) for line in f)), p.stderr


def unwind_land_run(mode):
    """tests/fixtures/unwind_land.c MODE under qemu with the runtime, its
    landing checked in the output; returns the log."""
    toolchain()
    exe = cross("unwind_land", ["unwind_land.c"])
    log = os.path.join(tmpdir(), "sf.log")
    p = qemu([exe, mode], log)
    check("landed ok" in p.stdout, p.stdout)
    return log


def test_aarch64_longjmp_lands():
    # The longjmp hook on aarch64 (sf_arch_jmpbuf_sp: glibc's stack pointer
    # mangled with __pointer_chk_guard): frames that longjmp abandons end
    # where control lands (as in tests/cases/test_unwind.py). C++ exceptions
    # are not tried: no aarch64 libstdc++ is installed (the _Unwind_SetIP
    # path is: test_aarch64_shadow_forced_unwind_cleanup_and_catch).
    log = unwind_land_run("longjmp")
    stacks, err = folded_calls(log)
    eq(stacks, {"main": 1, "main;foo": 1, "main;foo;baz": 1, "main;foo;baz;qux": 1, "main;bar": 1}, "longjmp tree")
    check("3 frames closed by unwinding" in err, err)


def shadow_fixture():
    # -fexceptions: mid's cleanup gets a landing pad (the forced unwind's
    # _Unwind_SetIP); libgcc_s linked, so a walk would be possible: the
    # strace shows whether one ran.
    return build_c("a64_shadow", ["a64_shadow.c"], flags=["--target=" + TARGET, "-fnoxray-link-deps", "-fexceptions"],
                   libs=["-lgcc_s"], outdir=AFIX)


LANDING_RE = re.compile(r"\bUNWIND\s+(?:\[depth (\d+)\] )?(\d+) frames? abandoned, depth (\d+) left")


def shadow_run(args, log):
    """Runs tests/fixtures/a64_shadow.c under qemu -strace with the runtime.
    Returns (stdout, the rt_sigprocmask calls between the fixture's two
    getppid markers, [(frames abandoned, depth left)] of the dump's
    landings). A walk (unwind.c, walk_abandoned) holds signals back with
    rt_sigprocmask SIG_BLOCK then SIG_UNBLOCK; the shadow stack needs
    none, nor does the fixture (sigsetjmp(env, 0)). The runtime's other
    masks (the writer thread's log locks, whose lines qemu prints with the
    same pid, the slow path) use SIG_SETMASK and are not counted."""
    exe = shadow_fixture()
    q = ["qemu-aarch64", "-L", SYSROOT, "-strace", "-E", "LD_PRELOAD=" + RUNTIME, "-E", "SFTRACE_OUTPUT_FILE=" + log]
    p = run(q + [exe] + list(args), timeout=120)
    marks = [i for i, line in enumerate(p.stderr.splitlines()) if re.search(r"\bgetppid\(", line)]
    check(len(marks) >= 2, f"the fixture's markers in the strace: {p.stderr[-2000:]}")
    between = p.stderr.splitlines()[marks[-2]:marks[-1]]
    masks = sum(1 for line in between if re.search(r"\brt_sigprocmask\(SIG_(?:UN)?BLOCK,", line))
    dump = run([SFTRACE, "dump", log]).stdout
    lands = [(int(m.group(2)), int(m.group(3))) for m in LANDING_RE.finditer(dump)]
    check(len(lands) == len(re.findall(r"\bUNWIND\b", dump)), f"every landing says its depth left:\n{dump[-3000:]}")
    return p.stdout, masks, lands


def test_aarch64_shadow_longjmp_over_two_frames():
    # issue 25: the aarch64 trampolines keep the shadow stack (arch/aarch64/
    # trampoline.S), so a longjmp pops the frames it abandons, no walk.
    # Before: every landing walked with libgcc (2 rt_sigprocmask calls
    # each) and its event carried a count (kind 8), not the depth left.
    toolchain()
    log = os.path.join(tmpdir(), "sf.log")
    out, masks, lands = shadow_run(["jmp", "5"], log)
    eq(out, "jmp ok 5\n", "the program's output")
    eq(masks, 0, "rt_sigprocmask calls around the landings (a walk makes 2 each)")
    eq(lands, [(2, 1)] * 5, "each landing: two and one abandoned, main left open")
    stacks, err = folded_calls(log)
    eq(stacks, {"main": 1, "main;two": 5, "main;two;one": 5, "main;landed": 5}, "call tree")
    check("10 frames closed by unwinding" in err, err)


def test_aarch64_shadow_forced_unwind_cleanup_and_catch():
    # The _Unwind_SetIP path (what C++ catches and cleanups take; no aarch64
    # libstdc++ here): a forced unwind from C lands in mid's cleanup, whose
    # release() nests under mid, then its stop function siglongjmps to
    # catcher. _Unwind_GetCFA of the landing frame is its sp at the call,
    # the same test as a jmp_buf's sp.
    toolchain()
    log = os.path.join(tmpdir(), "sf.log")
    out, masks, lands = shadow_run(["cleanup", "3"], log)
    eq(out, "cleanup ok 6\n", "the program's output")
    eq(masks, 0, "rt_sigprocmask calls around the landings (a walk makes 2 each)")
    eq(lands, [(1, 3), (1, 2)] * 3, "thrower at the cleanup, mid at the catch")
    stacks, err = folded_calls(log)
    eq(stacks, {"main": 1, "main;catcher": 3, "main;catcher;mid": 3, "main;catcher;mid;thrower": 3,
                "main;catcher;mid;release": 3, "main;catcher;landed": 3}, "call tree")
    check("6 frames closed by unwinding" in err, err)


def test_aarch64_shadow_deeper_than_the_array():
    # 600 nested rec frames, more than the 512 the array stores: a longjmp
    # to rec(2) (depth 3) is above the deepest stored entry, so it pops
    # with no walk, and the 599 frames below it close. A target below the
    # array (rec(550)) takes the walk, with the same exact counts.
    toolchain()
    d = tmpdir()
    for maxd, tgt, walks in ((600, 2, False), (700, 550, True)):
        log = os.path.join(d, f"deep{tgt}.log")
        out, masks, lands = shadow_run(["deep", str(maxd), str(tgt)], log)
        eq(out, f"deep ok {tgt + 1}\n", "the program's output")
        if not walks:
            eq(masks, 0, "rt_sigprocmask calls around the landing (a walk makes 2)")
        eq(lands, [(maxd - tgt + 1, tgt + 1)], f"deep {maxd} {tgt}: frames abandoned, depth left")
        eq(dict(counts(log)), {"main": 1, "rec": maxd, "leaf": 1, "landed": 1}, "calls")
        # Every call on its own path: landed() under main, after the
        # landing closed the 599 (151) frames below its target.
        stacks, err = folded_calls(log)
        want = {"main" + ";rec" * k: 1 for k in range(maxd + 1)}
        want.update({"main" + ";rec" * maxd + ";leaf": 1, "main;landed": 1})
        eq(stacks, want, "call tree")
        check(f"{maxd - tgt + 1} frames closed by unwinding" in err, err)
        dump = run([SFTRACE, "dump", log]).stdout
        check(re.search(rf"UNWIND\s+\[depth {maxd + 2}\] {maxd - tgt + 1} frames abandoned", dump), dump[-2000:])


def test_aarch64_shadow_siglongjmp_out_of_a_handler():
    # A SIGUSR1 handler running inside qux siglongjmps to main: its own
    # frame (pushed on the same stack, below qux's) and the three below
    # the target close at one landing, leaving main open.
    log = unwind_land_run("siglongjmp")
    dump = run([SFTRACE, "dump", log]).stdout
    eq([(int(m.group(2)), int(m.group(3))) for m in LANDING_RE.finditer(dump)], [(4, 1)], "the landing")
    stacks, err = folded_calls(log)
    eq(stacks, {"main": 1, "main;foo": 1, "main;foo;baz": 1, "main;foo;baz;qux": 1,
                "main;foo;baz;qux;on_signal": 1, "main;bar": 1}, "call tree")
    check("4 frames closed by unwinding" in err, err)


def test_aarch64_signal_landings_deeper_than_the_array():
    """FAILED ON dd7feb7 (SIGSEGV), the tracer's bug, not qemu's.
    tests/fixtures/skep25b_sigdeep.c at base 520 (test_skeptic25b.py's
    x86-64 cases): SIGALRM every 200 us; each handler siglongjmps to loop(),
    deeper than the 512 stored frames, so each landing walks. Under
    qemu-aarch64 every UNWIND left depth 523, but the program died by
    SIGSEGV after 1,682 of them (24-36 s), its own landing count still 0.
    The untraced control below, same base and rate under qemu, makes its
    2,000 landings in about 2 s. Found with `qemu-aarch64 -g` + gdb-multiarch
    and `-strace`:
      - the landing's walk held signals back (rt_sigprocmask SIG_BLOCK /
        SIG_UNBLOCK) for 110-175 us under qemu on this loaded machine, 4 ms
        the first time: the next SIGALRM was pending when it ended;
      - glibc's siglongjmp restores the jmp_buf's mask (SIG_SETMASK) before
        its __longjmp, so that SIGALRM was delivered right there, on the
        abandoned stack: `-strace` showed SIG_BLOCK, SIG_UNBLOCK,
        SIG_SETMASK, SIGALRM, over and over, never a return to loop();
      - under gdb, on_alarm's sp stepped down 4,976 B (qemu's aarch64 signal
        frame and the handler's frames) at each of 1,683 hits, with the
        program's landings at 0, until sp was 8 MiB (RLIMIT_STACK) below
        main's and _Unwind_Backtrace's first store faulted;
      - each nested landing walked every frame nested before it, so it was
        slower than the last: the nesting never unwound.
    x86-64 natively did the same at a 50 us period, where the untraced
    program makes every landing; a real arm64 kernel delivers the pending
    signal at the same point (glibc's order). Now a walk that meets a signal
    frame among the abandoned ones starts again from the jmp_buf's x30, sp
    and x29 (arch/aarch64/walk_from.S): it costs the live frames only."""
    toolchain()
    exe = build_c("skep25b_sigdeep", ["skep25b_sigdeep.c"], flags=["--target=" + TARGET, "-fnoxray-link-deps"],
                  libs=["-Wl,--no-as-needed", "-lgcc_s"], outdir=AFIX)
    untraced = run(["qemu-aarch64", "-L", SYSROOT, exe, "520", "2000"], timeout=120)
    eq(untraced.stdout, "2000\n", "untraced control under qemu: every landing made")
    log = os.path.join(tmpdir(), "sf.log")
    p = qemu([exe, "520", "2000"], log)
    eq(p.stdout, "2000\n", "the program's output")
    lands = [int(m.group(3)) for m in LANDING_RE.finditer(run([SFTRACE, "dump", log]).stdout)]
    eq(set(lands), {523}, "the depth every landing leaves")
    check(len(lands) >= 2000, f"{len(lands)} landings recorded")


def test_aarch64_shadow_within_window_closed_by_longjmp():
    # --within: the window's shadow entry carries its mark (the window
    # trampoline's own recorder, sf_tramp_entry_wrec), so the landing
    # closes the window too and outside() records nothing. Each landing
    # leaves depth 0 (main is outside the selection: not recorded).
    toolchain()
    exe = cross("unwind_land", ["unwind_land.c"])
    d = tmpdir()
    filt = os.path.join(d, "w.filter")
    run([SFTRACE, "filter", "-p", exe, "-r", "^window$", "--within", "-o", filt])
    log = os.path.join(d, "sf.log")
    p = qemu([exe, "window", "3"], log, env=["SFTRACE_FILTER=" + filt])
    check("landed ok" in p.stdout, p.stdout)
    dump = run([SFTRACE, "dump", log]).stdout
    eq([(int(m.group(2)), int(m.group(3))) for m in LANDING_RE.finditer(dump)], [(3, 0)] * 3, "landings")
    stacks, err = folded_calls(log)
    eq(stacks, {"window": 3, "window;inner": 3, "window;inner;qux": 3}, "only the window subtrees")
    check("9 frames closed by unwinding" in err, err)


def test_aarch64_setup_abi():
    # sftrace_setup and sftrace_alloc_event from a program linked with the
    # aarch64 libsftrace.so (the slots themselves are x86-64 code in the
    # reference tool and are left alone here).
    toolchain()
    exe = cross("setup_abi", ["setup_abi.c"], libs=["-L" + ABUILD, "-lsftrace", "-Wl,-rpath," + ABUILD, "-lpthread"])
    d = tmpdir()
    for only, t_work in (("", 3), ("1", 0)):
        log = os.path.join(d, f"sf{only}.log")
        p = qemu([exe], log, env=["SFTRACE_SETUP_THREAD_ONLY=" + only])
        check("setup abi ok" in p.stdout, p.stdout)
        c = counts(log)
        eq((c["s_work"], c["t_work"]), (4, t_work), f"calls, SFTRACE_SETUP_THREAD_ONLY={only!r}")
        dump = run([SFTRACE, "dump", log]).stdout
        eq(len(re.findall(r"\bALLOC\s+size=64 ", dump)), 2, "setup-ABI allocs")
        eq(len(re.findall(r"DEALLOC\s+size=64 ", dump)), 2, "setup-ABI deallocs")


def test_aarch64_alloc_heap_pattern():
    # --alloc by hand: libsftrace-alloc.so preloaded after the runtime. The
    # same totals per site as tests/cases/test_memory.py on x86-64.
    toolchain()
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "test_memory", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_memory.py"))
    mem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mem)
    exe = build_c("heap_pattern", ["heap_pattern.c"], flags=["--target=" + TARGET, "-fnoxray-link-deps",
                                                             "-fno-builtin", "-O1"], libs=["-lpthread"], outdir=AFIX)
    log = os.path.join(tmpdir(), "sf.log")
    run(["qemu-aarch64", "-L", SYSROOT, "-E", "LD_PRELOAD=" + RUNTIME + ":" + os.path.join(ABUILD, "libsftrace-alloc.so"),
         "-E", "SFTRACE_OUTPUT_FILE=" + log, exe], timeout=120)
    s, rows = mem.memory_tsv(log)
    for func, want in (("setup", (2000, 11)), ("work_a", (1280, 5)), ("grow", (240, 4)), ("producer", (1536, 3)),
                       ("make_temps", (960, 20)), ("leaf_leak", (168, 7)), ("peak", (1048576, 1))):
        eq(mem.by_func(rows, "site", func), want, f"allocations at {func}")
    eq(s["reallocs"], 3, "reallocs")
    eq(s["unmatched_frees"], 0, "every free matched")
    eq(mem.by_func(rows, "leak", "producer"), (0, 0), "freed on another thread")


def test_aarch64_raw_fork_and_vfork():
    # syscall(SYS_clone, SIGCHLD) (aarch64 has no SYS_fork) gets the fork
    # handlers; vfork goes through arch/aarch64/vfork.S (qemu-user runs a
    # vfork as a fork, so this checks the wrapper's paths, not shared memory).
    toolchain()
    exe = cross("beh_forks", ["beh_forks.c"])
    for mode, want in (("raw", [3, 3]), ("vfork", [3])):
        d = tmpdir()
        log = os.path.join(d, "sf.log")
        p = qemu([exe, mode], log)
        eq(p.stdout.strip(), f"{mode} ok", mode)
        logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
        eq(sorted(counts(os.path.join(d, f)).get("work") for f in logs), want, f"{mode}: work per log {logs}")
        eq(counts(log).get("work"), 3, f"{mode}: the parent's log holds its own calls only")


def test_aarch64_syscall_vforks():
    # syscall(SYS_clone, CLONE_VM|CLONE_VFORK|SIGCHLD, 0) takes vfork's path
    # (the assembly syscall of arch/aarch64/vfork.S): the child's 8 calls
    # stay out of the parent's log; CLONE_VFORK without CLONE_VM is a fork:
    # the child gets its own log. (qemu-user has no clone3: mode 5 is left
    # to the x86-64 case in test_skeptic24c.)
    toolchain()
    exe = cross("skep24c_vfork", ["skep24c_vfork.c"])
    for mode, nlogs in ((1, 1), (4, 2)):
        d = tmpdir()
        log = os.path.join(d, "sf.log")
        p = qemu([exe, str(mode)], log)
        eq(p.stdout, "child status 0\n", f"mode {mode}: output")
        logs = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))
        eq(len(logs), nlogs, f"mode {mode}: logs {logs}")
        eq(dict(counts(log)), {"main": 1, "parent_work": 100}, f"mode {mode}: parent's calls")
        for child in (l for l in logs if l != log):
            eq(dict(counts(child)), {"child_setup": 1, "child_work": 7}, f"mode {mode}: child's calls")


def test_aarch64_argument_values():
    """record -A/-R's trampolines on aarch64: x0-x5 and d0-d7 at entry, x0
    and d0 at exit. The spec file is written here as record writes it
    (record resolves names in the executable it runs, here qemu); slot and
    format bytes as in format/sf_args.h. Strings: qemu-user hands
    process_vm_readv the guest's addresses unchanged, so under qemu they
    read as unreadable; a real aarch64 machine reads them."""
    toolchain()
    exe = cross("args_prog", ["args_prog.c"])
    syms = {}
    for line in run(["nm", exe]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T":
            syms[parts[2]] = int(parts[0], 16)
    d = tmpdir()
    spec = os.path.join(d, "args")
    with open(spec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n")
        for name, items in (("add", "e0100,e0200,x0000"), ("greet", "e0106"), ("scale", "e4108,e0100,x4008"),
                            ("probe", "e0106,x0000"), ("mix", "e0135,e0202,e0311,e4119,x0001")):
            f.write(f"{syms[name]:#x} {items} {name}\n")
    os.chmod(spec, 0o600)
    log = os.path.join(d, "sf.log")
    p = qemu([exe], log, env=["SFTRACE_ARGS=" + spec])
    eq(p.stdout, "7 world 6.000000 1 1 0 104\n", "the program's output")
    calls = [line.split("| ", 1)[1] for line in run([SFTRACE, "replay", "--no-pager", log]).stdout.splitlines()[1:]]
    check(calls[2] in ('  greet("world");', "  greet(<unreadable>);"), calls[2])
    eq([calls[i] for i in (0, 1, 3, 6, 7, 8)], [
        "main() {", "  add(3, 4) = 7;", "  scale(1.500000, 4) = 6.000000;", "  probe((null)) = 0;",
        "  mix('A', 42, -5, 2.500000) = 104;", "} /* main */"], "replay")


def test_aarch64_argument_fp_registers_kept():
    """skep29n_fp's g8(6 longs, 8 doubles), 20,000 calls, with its first
    double argument and its return value asked for: every call gets the
    values passed and the caller the value returned. The args trampoline
    stores d0-d7 and restores none; its slow part (a slot's hand-off,
    libc and batch_scan.o's vector code) runs with q0-q31 saved
    (sf_vec_safe_call3). On x86-64 about one call a batch got other
    values before (skeptic29n); under qemu the aarch64 build without the
    save shows none, so this case checks the save itself: a wrong offset
    or a register left out changes the program's doubles."""
    toolchain()
    exe = cross("skep29n_fp", ["skep29n_fp.c"])
    addr = None
    for line in run(["nm", exe]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T" and parts[2] == "g8":
            addr = int(parts[0], 16)
    d = tmpdir()
    spec = os.path.join(d, "args")
    with open(spec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n{addr:#x} e4108,e4808,x4008 g8\n")
    os.chmod(spec, 0o600)
    log = os.path.join(d, "sf.log")
    p = qemu([exe, "20000"], log, env=["SFTRACE_ARGS=" + spec])
    eq(p.stdout, "bad args: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 bad ret 0\n", "the program's view of its doubles")
    eq(counts(log).get("g8"), 20000, "g8's calls")


def test_aarch64_argument_values_of_triggers_and_within_windows():
    """The args trampolines in front of a trigger and in within mode on
    aarch64 (before, those sleds kept their own trampolines and recorded
    no values). args_prog 3000 (add(i, 1), i < 3,000) with add's values
    asked for: (1) add the trigger, on entry, with a ring (SFTRACE_RING,
    SFTRACE_TRIGGERS as record writes them): sf_args_capture says so and
    the args trampoline goes on to the monotonic one, whose slow path
    fires it: every add call keeps its values, and the snapshot has the
    first one; (2) --within with main the window (its argc asked for too:
    the window's count, then the args path and the window recorder) and
    add gated: main(2) and every add call with its values; (3)
    unwind_land window 3 with a value asked of window, inner, qux and
    outside: the landings close the windows (the window's shadow entry
    marked on the args path too), so outside() is not recorded."""
    toolchain()
    exe = cross("args_prog", ["args_prog.c"])
    syms = {}
    for line in run(["nm", exe]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T":
            syms[parts[2]] = int(parts[0], 16)
    d = tmpdir()
    spec = os.path.join(d, "args")
    with open(spec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n{syms['add']:#x} e0100,e0200,x0000 add\n"
                f"{syms['main']:#x} e0100 main\n")
    trig = os.path.join(d, "triggers")
    with open(trig, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n{syms['add']:#x} 0 add\n")
    for path in (spec, trig):
        os.chmod(path, 0o600)
    want = [f"add({i}, 1) = {i + 1};" for i in range(3000)]

    def adds(log):
        return [c.strip() for c in call_column(replay_text(log)) if "add(" in c]

    # (1) the trigger
    log = os.path.join(d, "t.log")
    p = qemu([exe, "3000"], log, env=["SFTRACE_ARGS=" + spec, "SFTRACE_RING=" + str(1 << 20),
                                      "SFTRACE_TRIGGERS=" + trig, "SFTRACE_MAX_SNAPSHOTS=1"])
    eq(p.stdout, "4501500\n", "trigger: the program's output")
    eq(adds(log), want, "trigger: add's calls in the log")
    snaps = [f for f in os.listdir(d) if ".snap." in f]
    eq(len(snaps), 1, f"trigger: one snapshot: {os.listdir(d)}")
    eq(adds(os.path.join(d, snaps[0])), ["add(0, 1);"], "trigger: the snapshot's add")
    # (2) within mode: main the window, add gated
    within = os.path.join(d, "main.filter")
    run([SFTRACE, "filter", "-p", exe, "-r", "^main$", "--within", "-o", within])
    log = os.path.join(d, "w.log")
    p = qemu([exe, "3000"], log, env=["SFTRACE_ARGS=" + spec, "SFTRACE_FILTER=" + within])
    eq(p.stdout, "4501500\n", "within: the program's output")
    calls = [c.strip() for c in call_column(replay_text(log))]
    eq((calls[0], calls[1:-1], calls[-1]), ("main(2) {", want, "} /* main */"), "within: replay")
    # (3) windows with values closed by longjmp
    land = cross("unwind_land", ["unwind_land.c"])
    syms = {}
    for line in run(["nm", land]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T":
            syms[parts[2]] = int(parts[0], 16)
    lspec = os.path.join(d, "largs")
    with open(lspec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {land}\n")
        for name in sorted(("window", "inner", "qux", "outside"), key=lambda n: syms[n]):
            f.write(f"{syms[name]:#x} e0103 {name}\n")
    os.chmod(lspec, 0o600)
    filt = os.path.join(d, "w.filter")
    run([SFTRACE, "filter", "-p", land, "-r", "^window$", "--within", "-o", filt])
    log = os.path.join(d, "l.log")
    p = qemu([land, "window", "3"], log, env=["SFTRACE_FILTER=" + filt, "SFTRACE_ARGS=" + lspec])
    check("landed ok" in p.stdout, p.stdout)
    calls = [re.sub(r"\((0x[0-9a-f]+|[0-9]+)\)", "(X)", c.strip()) for c in call_column(replay_text(log))]
    eq(calls, ["window(X) {", "inner(X) {", "qux(X);", "} /* inner */", "} /* window */",
               "/* 3 frames unwound */"] * 3, "windows closed by longjmp: replay (no outside())")


def test_aarch64_trigger_inside_within_window():
    """A --trigger fires under --within on aarch64 as on x86-64 (issue 29:
    the trigger's sleds kept the within trampolines, whose events never
    reach the slow path): skepS_tail with win the window, one request per
    call in a window (win and trig 3, 'win>1ns' 3, g2 6: its seventh
    call, from main, is outside every window), with and without trig's
    values asked for; with trig the window, gd (called by win, outside
    it) asks for nothing. The snapshot's header names the trigger."""
    toolchain()
    exe = cross("skepS_tail", ["skepS_tail.c"])
    syms = {}
    for line in run(["nm", exe]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T":
            syms[parts[2]] = int(parts[0], 16)
    d = tmpdir()
    spec = os.path.join(d, "args")
    with open(spec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n{syms['trig']:#x} e0100,e0200,x0000 trig\n")
    os.chmod(spec, 0o600)
    filters = {}
    for w in ("win", "trig"):
        filters[w] = os.path.join(d, w + ".filter")
        run([SFTRACE, "filter", "-p", exe, "-r", f"^{w}$", "--within", "-o", filters[w]])
    k = 0
    for window, fn, dur, values, want in (("win", "win", 0, False, 3), ("win", "trig", 0, False, 3),
                                          ("win", "trig", 0, True, 3), ("win", "win", 1, False, 3),
                                          ("win", "g2", 0, False, 6), ("trig", "gd", 0, False, 0),
                                          ("trig", "gd", 1, False, 0), ("trig", "trig", 0, True, 3)):
        k += 1
        sub = os.path.join(d, str(k))
        os.mkdir(sub)
        trig = os.path.join(sub, "triggers")
        with open(trig, "w") as f:
            f.write(f"sftrace-filter 1\nobject - {exe}\n{syms[fn]:#x} {dur} {fn}\n")
        os.chmod(trig, 0o600)
        log = os.path.join(sub, "t.log")
        env = ["SFTRACE_RING=" + str(1 << 20), "SFTRACE_TRIGGERS=" + trig, "SFTRACE_FILTER=" + filters[window]]
        p = qemu([exe], log, env=env + (["SFTRACE_ARGS=" + spec] if values else []))
        what = f"window {window}, trigger {fn}{'>1ns' if dur else ''}{' with values' if values else ''}"
        eq(p.stdout, "494\n", f"{what}: the program's output")
        info = json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)
        r = info["processes"][0]["snapshot_requests"]
        snaps = sorted(f for f in os.listdir(sub) if ".snap." in f)
        eq((r["all"], r["written"]), (want, len(snaps)), f"{what}: requests, written ({r})")
        if want:
            check(snaps, f"{what}: no snapshot")
            head = run([SFTRACE, "dump", os.path.join(sub, snaps[0])]).stdout
            why = "a slow trigger call" if dur else "a trigger's entry"
            check(f"taken on {why} while the process ran: {fn} " in head,
                  f"{what}: the snapshot's header: {[ln for ln in head.splitlines() if 'snapshot' in ln]}")


def test_aarch64_libc_start_main_versions():
    """The runtime's __libc_start_main has glibc's aarch64 versions
    (GLIBC_2.34, GLIBC_2.17; arch/aarch64/exports.map): an executable that
    wraps it and finds the next one by dlvsym of either version, or by
    dlsym, and a plain executable (its reference is @GLIBC_2.34) all start
    through it: start-up's second step starts the writer thread, one thread
    more than the process has without the runtime (qemu's own included).
    Before, dlvsym skipped the runtime's unversioned definition."""
    toolchain()
    plain = build_c("wrap_start_plain", ["skep25s_wrap_start.c"],
                    flags=["--target=" + TARGET, "-fnoxray-link-deps", "-DNO_WRAP"], outdir=AFIX)
    wrap = cross("wrap_start", ["skep25s_wrap_start.c"], libs=["-ldl"])
    untraced = run(["qemu-aarch64", "-L", SYSROOT, plain]).stdout
    m = re.match(r"Threads:\s*(\d+)\n$", untraced)
    check(m, f"untraced: {untraced!r}")
    want = f"Threads:\t{int(m.group(1)) + 1}\n"
    d = tmpdir()
    for exe, ver in ((plain, None), (wrap, None), (wrap, "GLIBC_2.34"), (wrap, "GLIBC_2.17")):
        env = ["SFTRACE_WRITER=thread"] + ([f"SKEP_LSM_VER={ver}"] if ver else [])
        log = os.path.join(d, f"{os.path.basename(exe)}-{ver}.log")
        p = qemu([exe], log, env=env)
        eq(p.stdout, want, f"{os.path.basename(exe)} {ver or 'dlsym'}: threads at main")
        eq(counts(log).get("tick"), 1000, f"{os.path.basename(exe)} {ver or 'dlsym'}: tick() calls")


def _call_column(log):
    return call_column(replay_text(log))


def test_aarch64_tail_call_marked_only_when_its_jump_reached_the_callee():
    # a(0) tail-calls strlen (through the PLT), a(3) branches to b: the
    # runtime marks the sled before `b b` (kind 15) when it patches, on the
    # fast path (counter clock) and the C slow path (monotonic clock) alike.
    toolchain()
    exe = cross("skep28b_tailcond", ["skep28b_tailcond.c"])
    want = ["main() {", "  a();", "  b();", "  a();", "  b(); /* tail call from a */", "} /* main */"]
    for env in ([], ["SFTRACE_CLOCK=monotonic"]):
        log = os.path.join(tmpdir(), "sf.log")
        qemu([exe], log, env=env)
        eq(_call_column(log), want, "replay call column " + repr(env))
        tails = [e for e in dump_events(log) if e.kind == "TAIL"]
        eq([e.name for e in tails], ["a", "a"], "tail events " + repr(env))


def test_aarch64_tail_call_return_value_marked():
    """-A a@arg1 -R a@retval -R b@retval on aarch64 (the spec file as
    record writes it): a(0) tail-calls strlen, a(3) branches to b, so
    neither a has a return value of its own: its tail-call sled takes the
    args trampoline, which records that the value is not known, and the
    tail event keeps its kind (15 for the jump to b), on the fast path and
    the monotonic slow path alike."""
    toolchain()
    exe = cross("skep28b_tailcond", ["skep28b_tailcond.c"])
    syms = {p[2]: int(p[0], 16) for p in (l.split() for l in run(["nm", exe]).stdout.splitlines()) if len(p) == 3}
    d = tmpdir()
    spec = os.path.join(d, "args")
    with open(spec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n{syms['a']:#x} e0100,x0000 a\n{syms['b']:#x} x0000 b\n")
    os.chmod(spec, 0o600)
    want = ["main() {", "  a(0) = <tail call>;", "  b() = 2;", "  a(3) = <tail call>;",
            "  b() = 3; /* tail call from a */", "} /* main */"]
    for env in ([], ["SFTRACE_CLOCK=monotonic"]):
        log = os.path.join(d, "sf.log")
        p = qemu([exe], log, env=env + ["SFTRACE_ARGS=" + spec])
        eq(p.stdout, "10\n", "the program's output")
        eq(_call_column(log), want, "replay call column " + repr(env))
        eq([e.kind for e in dump_events(log) if e.kind.startswith("TAIL")], ["TAIL", "TAIL"], "tail events")


def test_aarch64_args_trampoline_keeps_x9_to_x18():
    """The args trampolines keep x9-x16 and x18 (args_tailreg.c), which
    sf_args_capture, C, may change: dispb's tail-call sled sits before
    `br x9` (x8 holds its struct result's address), dispbti's before
    `br x16` (BTI), dispv's and dispv6's before `br x1` and `br x6` (kept
    before as well); pm is preserve_most and its caller keeps a value in
    x9 across the call. Before, -R/-A on dispb or dispbti crashed the
    program (SIGSEGV: the branch went to whatever the C code left in the
    register) and on pm changed its caller's sum. Each function asked
    for alone, with the counter clock and the monotonic one (the _mono
    args trampolines), then all of them under --auto-args; the program
    prints what it prints untraced, and the values are the ones
    passed."""
    toolchain()
    exe = cross("args_tailreg", ["args_tailreg.c"])
    dis = run([TARGET + "-objdump", "-d", "--no-show-raw-insn", exe]).stdout
    for fn, reg in (("dispb", "x9"), ("dispbti", "x16")):
        body = dis.split(f"<{fn}>:\n", 1)[1].split("\n\n", 1)[0]
        check(re.search(r"\tbr\t" + reg + r"\n?$", body.rstrip() + "\n") is not None,
              f"{fn} ends in br {reg}:\n{body}")
    want = run(["qemu-aarch64", "-L", SYSROOT, exe, "3"], timeout=120).stdout
    eq(want, "688 5.50\n", "the program's output untraced")
    d = tmpdir()
    specs, spec = os.path.join(d, "specs"), os.path.join(d, "args")

    def traced(lines, env=()):
        log = os.path.join(d, f"sf{len(os.listdir(d))}.log")  # a new one each run
        with open(specs, "w") as f:
            f.write("sftrace-args-specs 1\n" + "".join(line + "\n" for line in lines))
        run([SFTRACE, "filter", "-q", "--args", specs, "-p", exe, "-o", spec])
        os.chmod(spec, 0o600)
        p = qemu([exe, "3"], log, env=list(env) + ["SFTRACE_ARGS=" + spec])
        eq(p.stdout, want, f"the program's output with {lines} {list(env)}")
        return _call_column(log)

    for fn, arg1 in (("dispb", "2"), ("dispbti", "2"), ("dispv6", "2"), ("pm", "2")):
        for env in ([], ["SFTRACE_CLOCK=monotonic"]):
            calls = traced([f"-A {fn}@arg1", f"-R {fn}@retval"], env)
            got = [c.strip() for c in calls if c.strip().startswith(fn + "(")]
            eq(len(got), 3, f"{fn}'s calls {env}: {calls}")
            if fn == "pm":
                eq(got[2], "pm(2) = 7;", f"pm's values {env}")
            else:
                eq(got[2], f"{fn}({arg1}) = <tail call>;", f"{fn}'s values {env}")
    calls = traced(["--auto-args"])
    # (pm has none under --auto-args: DWARF names its calling convention;
    # dispb returns its struct in memory, so no value to mark at its tail)
    eq([c.strip() for c in calls if c.strip().startswith(("dispb(", "dispbti(", "user("))][:3],
       ["dispb(0, 2, 3, 4, 5, 6, 7, 0);", "dispbti(0, 0) = <tail call>;", "user(0, 100) {"],
       "--auto-args")


def test_aarch64_auto_args_after_types_without_format():
    """--auto-args on aarch64 (AAPCS64): __int128 in an even-numbered pair
    of x registers (i128a's b in x4, not x3), or on the stack with no x
    register after it (i128s: x7 left unused), long double in one q
    register, _Complex double in two d registers, a 16-byte vector in one
    q register: the parameters after each keep theirs."""
    toolchain()
    exe = cross("f29s_abi", ["f29s_abi.c"], libs=["-lm"])
    d = tmpdir()
    specs, spec = os.path.join(d, "specs"), os.path.join(d, "args")
    with open(specs, "w") as f:
        f.write("sftrace-args-specs 1\n--auto-args\n")
    run([SFTRACE, "filter", "-q", "--args", specs, "-p", exe, "-o", spec])
    os.chmod(spec, 0o600)
    log = os.path.join(d, "sf.log")
    p = qemu([exe], log, env=["SFTRACE_ARGS=" + spec])
    eq(p.stdout, "78 27.75\n", "the program's output")
    eq([c.strip() for c in _call_column(log)][1:-1], [
        "i128a(1, <unrecorded>, 3) = 9;", "i128o(<unrecorded>, 8, 9.000000) = 24;",
        "i128s(1, 2, 3, 4, 5, 6, 7, <unrecorded>, <unrecorded>) = 45;",
        "ldbl(<unrecorded>, 2.500000, 3) = 6.750000;", "cplx(<unrecorded>, 2.500000, 4) = 9.500000;",
        "vec(<unrecorded>, 0.500000, 6) = 11.500000;"], "replay")


def test_aarch64_struct_values_auto_args():
    """--auto-args on aarch64 (AAPCS64): a composite of up to 16 bytes in
    one or two x registers, its bytes in order (struct pt in x0, struct
    mixed {long; double} in x0 and x1, the packed struct odd in x0: no
    MEMORY class here), an HFA of doubles or floats one member per v
    register (struct dd in d0 and d1, struct ff in s0-s2, also returned
    there), larger ones by reference (struct big, struct tri: the address
    in x0, not recorded), and a struct returned in memory through x8, so
    make's argument stays in x0. The spec file is what `sftrace filter
    --args` writes for an object (the runtime runs it for each library;
    here the x86-64 CLI reads the aarch64 DWARF). The string "hi" shows
    as unreadable: every string is read with process_vm_readv, which
    qemu-user hands the guest's address unchanged (a real aarch64 machine
    reads it)."""
    toolchain()
    exe = cross("args_struct", ["args_struct.c"])
    d = tmpdir()
    specs, spec = os.path.join(d, "specs"), os.path.join(d, "args")
    with open(specs, "w") as f:
        f.write("sftrace-args-specs 1\n--auto-args\n")
    run([SFTRACE, "filter", "-q", "--args", specs, "-p", exe, "-o", spec])
    os.chmod(spec, 0o600)
    log = os.path.join(d, "sf.log")
    p = qemu([exe], log, env=["SFTRACE_ARGS=" + spec])
    eq(p.stdout, "15 10.0 19 113 6\n-3.00 61 34 8 -8 -9 0.25 124\n8.00 0.75 1.50 3.00 46\n", "the program's output")
    eq(_call_column(log), [
        "main() {",
        "  norm({1, 2}, 5) = 15;",
        "  mixf({3, 0.500000}, 2.000000, 7) = 10.000000;",
        "  sum(<unrecorded>, 9) = 19;",
        "  oddf({'a', 5}, 11) = 113;",
        "  make(6);",
        "  dsum({1.500000, -2.250000}, 4) = -3.000000;",
        "  tsum(<unrecorded>, 1) = 61;",
        "  smf(3, {'z', -300, 2.500000, '\\x07', '\\xc8'}) = 34;",
        "  mkpt(8) = {8, -8};",
        "  mkmixed(-9) = {-9, 0.250000};",
        "  tag(<unreadable>, {4, 5}) = 124;",
        "  fsum({0.500000, 1.500000, 2.000000}, 2.000000) = 8.000000;",
        "  mkff(0.750000) = {0.750000, 1.500000, 3.000000};",
        "  tpair(<unrecorded>, <unrecorded>, 2) = 46;",
        "} = 0; /* main */"], "replay")
    got = [re.sub(r"^\s*\d+\s+\d+\s+ARGS\s+", "", line) for line in run([SFTRACE, "dump", log]).stdout.splitlines()
           if " ARGS " in line]
    eq([g for g in got if g.split()[0] in ("mixf", "sum", "make", "dsum", "fsum")],
       ["mixf arg1={3, 0.500000} fparg1=2.000000 arg3=7", "mixf retval=10.000000", "sum arg1=<unrecorded> arg2=9",
        "sum retval=19", "make arg1=6", "dsum fparg1={1.500000, -2.250000} arg1=4", "dsum retval=-3.000000",
        "fsum fparg1={0.500000, 1.500000, 2.000000} fparg4=2.000000", "fsum retval=8.000000"],
       "dump: the registers")


def test_aarch64_libc_system_overlapped_keeps_the_sigint_handler():
    """skeptic24v's libcsys and waitpid modes under qemu: libc's system
    (dlsym on libc) overlapped by the wrapper's leaves the program's SIGINT
    handler in place (with the tracer's variables in environ the wrapper
    goes on to libc's: one count of callers), and the program's own
    waitpid, sigaction and the rest see no call from system or popen, as
    untraced."""
    toolchain()
    exe = cross("skep24v", ["skep24v.c"], libs=["-lpthread"])
    want = {"libcsys": "SIGINT after: handler 1 ignored 0 (0 0)\n",
            "waitpid": "exit 2: 512 exit 2\nprogram waitpid calls during system: 0, others 0\n"}
    for mode, out in want.items():
        u = run(["qemu-aarch64", "-L", SYSROOT, exe, mode], timeout=120)
        eq(u.stdout, out, f"untraced {mode}")
        t = qemu([exe, mode], os.path.join(tmpdir(), "sf.log"))
        eq(t.stdout, out, f"traced {mode}")


def test_aarch64_popen_spawns_with_the_tracers_variables_environ_untouched():
    """exec_env.c's popen_copy under qemu: after clearenv popen's shell
    sees the tracer's variables while environ never changes (a watching
    thread; skeptic24v's slow reader: torn 0 foreign 0). The shells are the
    host's /bin/sh (qemu-user), which skips the aarch64 preload with a
    loader warning."""
    toolchain()
    exe = cross("popen_spawn_env", ["popen_spawn_env.c"], libs=["-lpthread", "-ldl"])
    t = qemu([exe], os.path.join(tmpdir(), "sf.log"))
    eq(t.stdout.splitlines()[:2], ["popen child: traced", "environ changed during popen: 0"],
       f"traced ({t.stderr[-500:]!r})")
    exe = cross("skep24v_envread", ["skep24v_envread.c"], libs=["-lpthread"])
    t = qemu([exe], os.path.join(tmpdir(), "sf.log"))
    check(re.fullmatch(r"torn 0 foreign 0 \(looked \d+\)\n", t.stdout), f"traced: {t.stdout!r}")


def test_aarch64_libc_code_bytes_unchanged():
    """skeptic24k's reader of libc's code under qemu: the first 16 bytes of
    posix_spawn, posix_spawnp and system at libc's definitions as
    untraced (posix_spawn's `mov w6, #0; b` became a `b` to the runtime's,
    system's first 20 bytes `bti c; ldr x16, #8; br x16; .quad`); dlsym on
    libc's handle answers the wrapper, as &posix_spawn does (a documented
    limit: test_skeptic24k)."""
    toolchain()
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_skeptic24k as sk24k
    exe = cross("sk24k_code_bytes", ["sk24k_code_bytes.c"], libs=["-ldl"])
    u = run(["qemu-aarch64", "-L", SYSROOT, exe], timeout=120)
    t = qemu([exe], os.path.join(tmpdir(), "sf.log"))
    sk24k.code_bytes_hold(u.stdout, t.stdout)
    raise Skip(sk24k.CODE_LIMIT)


def test_aarch64_posix_spawn_versions_and_lookups():
    """aarch64's glibc has one version of posix_spawn and posix_spawnp,
    GLIBC_2.17 (no compat one: it began after 2.15), and the runtime's carry
    it: reached as linked, through dlsym and through dlvsym by that
    version, each returns what libc's does for a file without "#!" (under
    qemu-user: 0, and the child's status 127) and each script that runs has
    the tracer's preload (dlvsym skipped an unversioned definition: its
    children were untraced)."""
    toolchain()
    exe = cross("spawn_versions", ["spawn_versions.c"], libs=["-ldl"])
    d = tmpdir()
    u = run(["qemu-aarch64", "-L", SYSROOT, exe, d], timeout=120)
    eq(u.stdout.count("ran\n"), 6, f"untraced scripts run: {u.stdout}")
    t = qemu([exe, d], os.path.join(d, "sf.log"))
    eq(t.stdout, u.stdout.replace("ran\n", "ran traced\n"), "traced: results, and every script traced")


def test_aarch64_landings_that_abandon_claims_keep_recording():
    """tests/fixtures/landing_skips.c (test_landing_skips.py) under qemu:
    a timer every 100 us, the handler siglongjmps out, 15,000 times (the
    quarantine before skip slots held about 9,000; main's runtime dropped
    122,803 events here), then 1,000 after() calls: every landing and call
    recorded, nothing dropped."""
    toolchain()
    exe = cross("landing_skips", ["landing_skips.c"])
    log = os.path.join(tmpdir(), "sf.log")
    p = qemu([exe, "15000", "1000", "100"], log)
    eq(p.stdout, "landings 15000 after 1000 sum 1500500\n", "output")
    d = run([SFTRACE, "dump", log]).stdout
    eq(len(re.findall(r"\bUNWIND\b", d)), 15000, "UNWIND events")
    eq(len(re.findall(r"ENTRY\s+after\b", d)), 1000, "after() entries")
    m = re.search(r"(\d+) dropped, (\d+) lost", run([SFTRACE, "info", log]).stdout)
    eq((m.group(1), m.group(2)), ("0", "0"), "(dropped, lost)")


def test_aarch64_alloc_dtv_growth_bytes():
    """--alloc by hand, 14, 15 and 24 TLS libraries dlopen'd and touched
    by main and a thread created after them (skep25q_tlsmain) or before
    them (skep25q_tlslate): the same allocations, frees and bytes as the
    untraced counter (tests/fixtures/skep25q_shim.c) under qemu, the DTV
    read at tpidr_el0 (tlsmain 15: 94 / 15 / 29,887 B)."""
    toolchain()
    shim = build_c("libskep25q_shim.so", ["skep25q_shim.c"], flags=["--target=" + TARGET], shared=True, xray=False,
                   outdir=AFIX)
    d = os.path.join(AFIX, "skep25q_tls")
    for i in range(24):
        build_c(f"libskep25q_tls{i}.so", ["skep25q_tlslib.c"], flags=["--target=" + TARGET], shared=True, outdir=d)
    alloc = os.path.join(ABUILD, "libsftrace-alloc.so")
    for name in ("skep25q_tlsmain", "skep25q_tlslate"):
        exe = cross(name, [name + ".c"], libs=["-ldl", "-lpthread"])
        for n in (14, 15, 24):
            p = run(["qemu-aarch64", "-L", SYSROOT, "-E", "LD_PRELOAD=" + shim, exe, d, str(n)], timeout=120)
            m = re.search(r"allocs (\d+) frees (\d+) reallocs \d+ bytes (\d+) rbytes (\d+)", p.stderr)
            check(m, f"no counter line: {p.stderr[-500:]}")
            want = (int(m.group(1)), int(m.group(2)), int(m.group(3)) + int(m.group(4)))
            log = os.path.join(tmpdir(), "sf.log")
            run(["qemu-aarch64", "-L", SYSROOT, "-E", f"LD_PRELOAD={RUNTIME}:{alloc}", "-E", "SFTRACE_OUTPUT_FILE=" + log,
                 exe, d, str(n)], timeout=120)
            s = {}
            for line in run([SFTRACE, "memory", "--format", "tsv", "-n", "0", log]).stdout.splitlines():
                f = line.split("\t")
                if len(f) == 2:
                    s[f[0]] = int(f[1])
            eq((s["allocations"], s["frees"], s["bytes_allocated"]), want, f"{name} {n}: traced vs untraced counter")


def test_aarch64_dlsym_handles_and_scopes():
    """test_dlsym_handles under qemu (arch/aarch64/dlsym.S): dlsym on libc's
    handle answers the wrapper and its posix_spawn child is traced; every
    RTLD_DEFAULT and RTLD_NEXT lookup is made from the caller's object (a
    plugin's local dependency found, a preload after the runtime finds
    libc's getpid and not its own); every line as untraced."""
    toolchain()
    notail = ["--target=" + TARGET, "-fnoxray-link-deps", "-fno-optimize-sibling-calls"]
    cross("libdlsc_dep.so", ["dlsym_scope_dep.c"], shared=True)
    build_c("libdlsc_plug.so", ["dlsym_scope_plug.c"], flags=notail, shared=True, outdir=AFIX,
            libs=["-Wl,--no-as-needed", "-L" + AFIX, "-ldlsc_dep", "-Wl,-rpath," + AFIX])
    pre = build_c("libdlsc_pre.so", ["dlsym_scope_pre.c"], flags=notail, shared=True, outdir=AFIX)
    exe = cross("dlsym_scope", ["dlsym_scope.c"], libs=["-ldl", "-Wl,-rpath," + AFIX])
    for pre_env in ([], ["LD_PRELOAD=" + pre]):
        u = run(["qemu-aarch64", "-L", SYSROOT] + [a for e in pre_env for a in ("-E", e)] + [exe, "GLIBC_2.17"],
                timeout=120)
        eq(u.stdout.count("untraced\n"), 1, f"untraced {pre_env}: {u.stdout}")
        check(("preload: getpid calls 3\n" in u.stdout) == bool(pre_env), f"untraced {pre_env}: {u.stdout}")
        env = ["LD_PRELOAD=" + RUNTIME + ":" + pre] if pre_env else []
        t = qemu([exe, "GLIBC_2.17"], os.path.join(tmpdir(), "sf.log"), env=env)
        eq(t.stdout, u.stdout.replace("untraced\n", "traced\n"), f"traced {pre_env}")


def test_aarch64_makecontext_passes_every_argument():
    """The runtime's makecontext stub (arch/aarch64/makecontext.S) passes
    10 ints (two past x0-x7's, on the stack), none, and a context made
    twice on one stack, as untraced; the coroutines' calls are traced."""
    toolchain()
    exe = cross("skep25s_ctxargs", ["skep25s_ctxargs.c"])
    want = run(["qemu-aarch64", "-L", SYSROOT, exe]).stdout
    eq(want, "sum 55 last 10 first 1\nnone\nsum 55 last 10 first 1\n", "untraced output")
    log = os.path.join(tmpdir(), "sf.log")
    eq(qemu([exe], log).stdout, want, "traced output")
    c = counts(log)
    eq((c["ten"], c["none"]), (2, 1), "the coroutines' calls")
