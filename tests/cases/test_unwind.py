"""Unwinding under the tracer (issue 16, items 3 and 4): frames that a
longjmp, a caught C++ exception or a caught Rust panic abandons end where
control lands, so later calls nest under the right parent in every output;
--within windows close there too; debuggers and unwinders walk through the
trampolines; a throw through instrumented frames is still caught.

Fixtures: tests/fixtures/unwind_land.c (.cc, .rs) with exact call patterns.
Runs under tests/run.py, or alone: python3 tests/cases/test_unwind.py."""
import os
import re
import shutil
import subprocess
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import (RUNTIME, SFTRACE, Skip, build_c, check, chrome_slices, eq, perfetto_summary, record,  # noqa: E402
                   run, rust_fixture, tmpdir)


def land_c(name="unwind_land", flags=()):
    return build_c(name, ["unwind_land.c"], flags=list(flags))


def land_cxx():
    return build_c("unwind_land_cxx", ["unwind_land.cc"], compiler="clang++", libs=["-ldl"])


def folded(log, args=()):
    """{stack: calls} from convert --type folded --weight calls, and the
    convert's stderr."""
    out = os.path.join(os.path.dirname(log), "out.folded")
    p = run([SFTRACE, "convert", "-t", "folded", "--weight", "calls"] + list(args) + [log, "-o", out])
    stacks = {}
    with open(out) as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            stacks[stack] = int(n)
    return stacks, p.stderr


def unwound(stderr):
    m = re.search(r"(\d+) frames? closed by unwinding", stderr)
    return int(m.group(1)) if m else 0


def check_perfetto(log):
    """The Perfetto output agrees: every slice closed, the same parents."""
    out = os.path.join(os.path.dirname(log), "out.pb")
    run([SFTRACE, "convert", log, "-o", out])
    s = perfetto_summary(out)
    check(all(v == 0 for v in s["balance"].values()), f"unbalanced tracks {s['balance']}")
    return s


def check_chrome_parent(log, child, parent, not_in):
    """In the Chrome output, child's slice lies inside parent's and outside
    every slice named in not_in (the abandoned frames ended before it)."""
    (slices,) = chrome_slices(log).values()
    by = {}
    for b, e, name in slices:
        by.setdefault(name, []).append((b, e))
    (cb, ce), = by[child]
    check(any(b <= cb and ce <= e for b, e in by[parent]), f"{child} inside {parent}: {slices}")
    for n in not_in:
        check(all(not (b <= cb and ce <= e) for b, e in by[n]), f"{child} outside {n}: {slices}")


def traced(cmd, args=(), expect="ok"):
    p, log = record(cmd, args=args)
    check(expect in p.stdout, p.stdout + p.stderr)
    return log


# ---- 1. calls after the landing nest under the landing frame ----

def test_longjmp_lands_in_setjmp_caller():
    log = traced([land_c(), "longjmp"], expect="landed ok")
    stacks, err = folded(log)
    eq(stacks, {"main": 1, "main;foo": 1, "main;foo;baz": 1, "main;foo;baz;qux": 1, "main;bar": 1}, "call tree")
    eq(unwound(err), 3, f"frames closed at the landing: {err}")
    check_perfetto(log)


def test_longjmp_chk_fortified():
    # _FORTIFY_SOURCE turns longjmp into __longjmp_chk.
    exe = land_c("unwind_land_fortify", ["-D_FORTIFY_SOURCE=2"])
    check("__longjmp_chk" in run(["nm", "-D", exe]).stdout, "fixture calls __longjmp_chk")
    stacks, _ = folded(traced([exe, "longjmp"], expect="landed ok"))
    eq(stacks.get("main;bar"), 1, f"bar under main: {stacks}")
    check(not any(k.endswith("qux;bar") for k in stacks), f"bar nested too deep: {stacks}")


def test_siglongjmp_out_of_signal_handler():
    log = traced([land_c(), "siglongjmp"], expect="landed ok")
    stacks, err = folded(log)
    eq(stacks, {"main": 1, "main;foo": 1, "main;foo;baz": 1, "main;foo;baz;qux": 1,
                "main;foo;baz;qux;on_signal": 1, "main;bar": 1}, "call tree")
    eq(unwound(err), 4, f"frames closed at the landing: {err}")


def test_cxx_catch_two_levels_up():
    log = traced([land_cxx(), "throw"], expect="cxx landed ok")
    stacks, err = folded(log)
    eq(stacks, {"main": 1, "main;catcher()": 1, "main;catcher();mid()": 1, "main;catcher();mid();thrower()": 1,
                "main;catcher();after()": 1, "main;bar()": 1}, "call tree")
    eq(unwound(err), 2, f"mid and thrower closed at the catch: {err}")
    check_chrome_parent(log, "after()", "catcher()", ["mid()", "thrower()"])


def test_cxx_landings_below_earlier_quiet_ones_still_close_a_frame_entered_since():
    """unwind_stateless.cc, 3 rounds: outer() throws and catches through 5
    unrecorded cleanups (every landing quiet); then inner(), recorded at
    the shadow stack's depth outer had but 20 frames lower, throws to a
    catch 10 frames below outer's entry: every one of those landings is
    below where outer's landed quietly, and the catch abandons inner. A
    landing test that kept a bound from earlier quiet landings past the
    catch (a floor in a slot that inner's push does not overwrite) calls
    it quiet and leaves inner open. With main recorded and without (every
    entry popped at the catch)."""
    exe = build_c("unwind_stateless", ["unwind_stateless.cc"], compiler="clang++")
    eq(run([exe, "3"]).stdout, "sum 9\n", "untraced output")
    for rx, left, head in (("^(main|outer|inner|probe)$", 1, [("ENTRY", "main")]), ("^(outer|inner|probe)$", 0, [])):
        p, log = record([exe, "3"], args=["-q", "--filter-regex", rx])
        eq(p.stdout, "sum 9\n", f"{rx}: traced output")
        got = []
        for line in run([SFTRACE, "dump", log]).stdout.split("events:", 1)[1].splitlines():
            f = line.split()
            if len(f) >= 4 and f[0].isdigit():
                got.append((f[2], " ".join(f[3:])))
        rnd = [("ENTRY", "outer"), ("EXIT", "outer"), ("ENTRY", "inner"),
               ("UNWIND", f"1 frames abandoned, depth {left} left"), ("ENTRY", "probe"), ("EXIT", "probe")]
        eq(got, head + rnd * 3 + [("EXIT", "main")] * len(head), f"{rx}: events (inner closed at each catch)")
        info = run([SFTRACE, "info", log]).stdout
        check("3 frames closed by unwinding, 0 open at thread end" in info, f"{rx}: {info}")


def test_cxx_throw_in_library_constructor():
    lib = build_c("libunwind_land_lib.so", ["unwind_land_lib.cc"], compiler="clang++", shared=True)
    ctor = build_c("libunwind_land_ctor.so", ["unwind_land_ctor.cc"], compiler="clang++", shared=True, xray=False,
                   libs=[lib])
    log = traced([land_cxx(), "ctor", lib, ctor], expect="cxx landed ok")
    stacks, err = folded(log)
    eq(stacks, {"main": 1, "main;lib_catcher": 1, "main;lib_catcher;lib_thrower": 1,
                "main;lib_catcher;lib_after": 1, "main;bar()": 1}, "call tree")
    eq(unwound(err), 1, f"lib_thrower closed at the catch: {err}")


def test_rust_panic_caught_by_catch_unwind():
    try:
        exe = rust_fixture("unwind_land_rs")
    except (FileNotFoundError, AssertionError) as e:
        raise Skip(f"no rustc with -Zinstrument-xray: {e}")
    log = traced([exe, "panic"], expect="rust landed ok")
    stacks, err = folded(log)
    after = [k for k in stacks if k.endswith("unwind_land_rs::after_panic")]
    eq(len(after), 1, f"after_panic stacks: {after}")
    check(after[0].endswith("unwind_land_rs::main;unwind_land_rs::guarded;unwind_land_rs::after_panic"),
          f"after_panic under guarded: {after[0]}")
    bars = [k for k in stacks if k.endswith("unwind_land_rs::bar")]
    eq(len(bars), 1, f"bar stacks: {bars}")
    check(bars[0].endswith(";unwind_land_rs::main;unwind_land_rs::bar"), f"bar under main: {bars[0]}")
    dives = [k for k in stacks if k.endswith("unwind_land_rs::dive")]
    eq(sorted(k.count("unwind_land_rs::dive") for k in dives), [1, 2, 3, 4], f"dive frames: {dives}")
    check(unwound(err) >= 4, f"the 4 dive frames (and closures) closed at the landing: {err}")
    check_perfetto(log)


# ---- 2. --within windows close at the landing ----

def _window_case(cmd, window, inner, leaf):
    log = traced(cmd, args=["--filter-regex", f"^{re.escape(window)}$", "--within"], expect="landed ok")
    stacks, err = folded(log)
    eq(stacks, {window: 3, f"{window};{inner}": 3, f"{window};{inner};{leaf}": 3},
       "only the window subtrees (outside() runs after the windows were abandoned)")
    eq(unwound(err), 9, f"frames closed at the landings: {err}")


def test_within_window_closed_by_longjmp():
    _window_case([land_c(), "window", "3"], "window", "inner", "qux")


def test_within_window_closed_by_cxx_exception():
    _window_case([land_cxx(), "window", "3"], "window()", "inner()", "thrower()")


def test_within_window_closed_by_rust_panic():
    try:
        exe = rust_fixture("unwind_land_rs")
    except (FileNotFoundError, AssertionError) as e:
        raise Skip(f"no rustc with -Zinstrument-xray: {e}")
    log = traced([exe, "panic"], args=["--filter-regex", "unwind_land_rs::dive", "--within"], expect="rust landed ok")
    stacks, _ = folded(log)
    check(stacks, "the window was recorded")
    for k in stacks:
        check("after_panic" not in k and "::bar" not in k and "guarded" not in k,
              f"recorded outside the abandoned window: {k}")
    eq(sum(n for k, n in stacks.items() if k.endswith("unwind_land_rs::dive")), 4, "dive frames")



# ---- 3. unwinders walk through the trampolines ----

GDB_SCRIPT = """set pagination off
set breakpoint pending on
set confirm off
break sf_slow_event_tramp
run
bt
delete
break *(sf_tramp_entry+10)
continue
bt
delete
break *(sf_tramp_exit+10)
continue
bt
kill
"""


def test_gdb_backtrace_through_trampolines():
    if not shutil.which("gdb"):
        raise Skip("no gdb")
    exe = land_c()
    d = tmpdir()
    script = os.path.join(d, "bt.gdb")
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    out = os.path.join(d, "sf.log")
    p = run(["gdb", "-nx", "-batch", "-iex", f"set exec-wrapper env LD_PRELOAD={RUNTIME} SFTRACE_OUTPUT_FILE={out}",
             "-x", script, "--args", exe, "longjmp"], timeout=120)
    traces = re.split(r"\n(?=#0 )", p.stdout)[1:]
    eq(len(traces), 3, f"three backtraces: {p.stdout}")
    for t, where in zip(traces, ["sf_slow_event_tramp", "sf_tramp_entry", "sf_tramp_exit"]):
        check(where in t.splitlines()[0], f"stopped in {where}: {t}")
        check(re.search(r"^#\d+ .* in main \(", t, re.M), f"backtrace from {where} reaches main:\n{t}")
        check("?? ()" not in t, f"no unknown frames from {where}:\n{t}")


def test_profiling_signal_unwinds_through_trampolines():
    # A SIGPROF handler walks the stack with _Unwind_Backtrace (what Rust
    # backtraces, glibc backtrace() and in-process profilers use) while a
    # traced recursive fib runs: most samples land inside a trampoline, and
    # every walk must reach main. Without CFI few do.
    lib = build_c("libunwind_sample.so", ["libunwind_sample.c"], shared=True)
    exe = build_c("unwind_sample", ["unwind_sample.c"],
                  libs=["-L" + os.path.dirname(lib), "-lunwind_sample", "-Wl,-rpath," + os.path.dirname(lib), "-lgcc_s"])
    d = tmpdir()
    p = run([exe, "24"], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": os.path.join(d, "sf.log")}, timeout=120)
    shutil.rmtree(d, ignore_errors=True)
    m = re.search(r"samples (\d+) reached (\d+)", p.stdout)
    check(m, p.stdout)
    eq(int(m.group(2)), int(m.group(1)), "walks from the profiling signal that reached main")


def test_stub_pages_have_unwind_information():
    # The PIE's sleds call through a slot near it (far sleds); libgcc must
    # find an FDE for the code called (the runtime's far thunk), whose range
    # starts at the thunk: no pc of the tracer's outside libsftrace.so.
    lib = build_c("libunwind_sample.so", ["libunwind_sample.c"], shared=True)
    exe = build_c("unwind_sample", ["unwind_sample.c"],
                  libs=["-L" + os.path.dirname(lib), "-lunwind_sample", "-Wl,-rpath," + os.path.dirname(lib), "-lgcc_s"])
    eq(run([exe, "stub"]).stdout.strip(), "stub fde unpatched", "untraced")
    d = tmpdir()
    p = run([exe, "stub"], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": os.path.join(d, "sf.log")})
    eq(p.stdout.strip(), "stub fde yes", "traced")
    p = run([exe, "24", "exe"], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": os.path.join(d, "sf2.log")},
            timeout=120)
    m = re.search(r"samples (\d+) reached (\d+)", p.stdout)
    check(m and m.group(1) == m.group(2), f"walks through stubs reached main: {p.stdout}")
    shutil.rmtree(d, ignore_errors=True)


def test_rust_panic_backtrace_complete():
    try:
        exe = rust_fixture("unwind_land_rs")
    except (FileNotFoundError, AssertionError) as e:
        raise Skip(f"no rustc with -Zinstrument-xray: {e}")
    out = os.path.join(tmpdir(), "sf.log")
    env = {"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": out, "RUST_BACKTRACE": "1"}
    p = run([exe, "backtrace", "5"], check_rc=101, env=env)
    frames = re.findall(r"^\s+\d+: (\S+)", p.stderr, re.M)
    eq(sum(1 for f in frames if f == "unwind_land_rs::dive"), 6, f"every dive frame in the backtrace:\n{p.stderr}")
    check("unwind_land_rs::main" in frames, f"the backtrace reaches main:\n{p.stderr}")
    check(os.path.getsize(out) > 4096, "the run was traced")


def test_cxx_uncaught_exception_still_terminates():
    exe = land_cxx()
    plain = run([exe, "uncaught"], check_rc=None)
    out = os.path.join(tmpdir(), "sf.log")
    traced_p = run([exe, "uncaught"], check_rc=None, env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": out})
    eq(plain.returncode, -6, "untraced: terminate() aborts")
    eq(traced_p.returncode, plain.returncode, "traced: the same exit")
    check("terminate called after throwing" in traced_p.stderr, traced_p.stderr)


# ---- 4. patching and the slow path's stack ----

def test_slow_path_fits_a_small_sigaltstack():
    # The process's first event comes from a handler on an 8 KiB alternate
    # stack (the classic SIGSTKSZ): the slow path saves the vector state
    # there (x87/SSE/AVX/AVX-512 only: AMX tiles would need 8 KiB more) and
    # creates the log.
    exe = build_c("sig_altstack", ["sig_altstack.c"])
    plain = int(re.search(r"used (\d+)", run([exe, "8192"]).stdout).group(1))
    p, log = record([exe, "8192"])
    used = int(re.search(r"used (\d+) of 8192", p.stdout).group(1))
    # 4608, plus up to 63 bytes the slow path's 64-byte alignment for xsave
    # takes depending on where the handler's stack pointer sits (seen: 4,624
    # on an AVX-512 machine where CI's run measured under 4,608).
    check(used - plain <= 4608 + 63, f"the slow path used {used - plain} bytes of the alternate stack ({used} in all)")
    stacks, _ = folded(log)
    eq(stacks, {"on_signal": 1, "on_signal;leaf": 1}, "the handler's calls")


def test_object_replaced_on_disk_is_left_unpatched():
    # libcalls.so is mapped, then replaced on disk by another build (the same
    # code and layout: only the build-id tells them apart) before
    # the runtime reads its section headers (a constructor preloaded after
    # the runtime and linked -z initfirst runs first: the last initfirst
    # object mapped wins). The runtime must see that the file is not the
    # object in memory, say so and leave it alone.
    from sfkit import calls_fixture
    exe = calls_fixture()
    d = tmpdir()
    libdir = os.path.join(d, "lib")
    os.makedirs(libdir)
    shutil.copy(os.path.join(os.path.dirname(exe), "libcalls.so"), os.path.join(libdir, "libcalls.so"))
    build_c("libcalls_other.so", ["libcalls.c"], flags=["-Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567"], shared=True, outdir=libdir)
    replacer = build_c("libreplace_on_load.so", ["replace_on_load.c"], flags=["-Wl,-z,initfirst"], shared=True,
                       xray=False)
    out = os.path.join(d, "sf.log")
    env = {"LD_LIBRARY_PATH": libdir, "LD_PRELOAD": f"{RUNTIME}:{replacer}", "SFTRACE_OUTPUT_FILE": out,
           "SF_REPLACE_TARGET": os.path.join(libdir, "libcalls.so"),
           "SF_REPLACE_WITH": os.path.join(libdir, "libcalls_other.so")}
    p = run([exe], env=env)
    check("calls ok" in p.stdout, p.stdout)
    warn = [ln for ln in p.stderr.splitlines() if "libcalls.so" in ln]
    eq(len(warn), 1, f"one warning: {p.stderr}")
    check("not patching" in warn[0] and "not the object in memory" in warn[0], warn[0])
    dump = run([SFTRACE, "dump", out]).stdout
    check("objects (1):" in dump and "libcalls" not in dump.split("threads (")[0], f"only the executable: {dump[:1500]}")
    eq(len(re.findall(r" ENTRY +outer$", dump, re.M)), 10, "the executable is still traced")


def _wx(mode, lib):
    exe = build_c("wx_refused", ["wx_refused.c"], libs=["-ldl"])
    p, log = record([exe, mode, lib])
    check("wx ok 1" in p.stdout or "wx ok 7" in p.stdout, p.stdout + p.stderr)
    return p, run([SFTRACE, "dump", log]).stdout


def test_wx_refused_single_thread_patches_through_proc_mem():
    # mprotect(PROT_WRITE|PROT_EXEC) fails (seccomp stands in for SELinux
    # execmem/execmod): with no other thread the sleds are written through
    # /proc/self/mem, and the text never loses PROT_EXEC.
    from sfkit import calls_fixture
    lib = os.path.join(os.path.dirname(calls_fixture()), "libcalls.so")
    p, dump = _wx("single", lib)
    check("wx ok 7" in p.stdout, p.stdout)
    eq(len(re.findall(r" ENTRY +lib_add$", dump, re.M)), 7, "lib_add traced")
    eq(len(re.findall(r" EXIT +lib_add$", dump, re.M)), 7, "lib_add exits traced")


def test_wx_refused_never_removes_exec_from_running_code():
    # The library's constructor starts a thread that runs its code. Making
    # that text writable without PROT_EXEC (the old fallback) would fault
    # it: the object is left untraced with a warning instead, unless it was
    # patched before the constructor ran (then no thread was running it).
    lib = build_c("libwx_spin.so", ["wx_spin.c"], shared=True, libs=["-lpthread"])
    p, dump = _wx("busy", lib)
    steps = len(re.findall(r" ENTRY +spin_step$", dump, re.M))
    if "other threads are running" in p.stderr:
        eq(steps, 0, "left untraced")
        check("libwx_spin.so" in p.stderr and "Permission denied" in p.stderr, p.stderr)
    else:
        check(steps > 0, f"patched before its constructor ran: {p.stderr}")
