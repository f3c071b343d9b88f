"""The tracer's own work never shows up as the program's (issue 25): no
allocation of the runtime's under --alloc, no time of its bookkeeping in
the frames a landing abandons, no missing constructor call of a dlopen'd
object. Exact counts from fixtures with known call and heap patterns."""
import os
import re
import statistics
import subprocess

from sfkit import FIXBUILD, SFTRACE, build_c, check, count_calls, dump_events, eq, record, run


def memory_summary(log):
    out = run([SFTRACE, "memory", "--format", "tsv", log]).stdout
    return {f[0]: int(f[1]) for f in (line.split("\t") for line in out.splitlines()) if len(f) == 2}


def test_longjmp_program_shows_only_its_own_allocation():
    # The program mallocs 100 bytes once and frees them, and lands 50
    # times. Before: libgcc's unwinder, walking the stack at the first
    # landing, malloc'd the sorted table of the FDEs the runtime had
    # registered for its stub pages (2 more allocations, 24 B left live).
    exe = build_c("own_longjmp", ["own_longjmp.c"], flags=["-fno-builtin"])  # keep the malloc
    p, log = record([exe, "50"], args=["--alloc", "-q"])
    eq(p.stdout, "jumps 50\n", "the program's output")
    s = memory_summary(log)
    eq((s["allocations"], s["bytes_allocated"], s["frees"], s["leaked_blocks"]), (1, 100, 1, 0),
       "the program's one malloc(100) and its free, nothing else")


def test_cxx_throws_show_only_the_exception_objects():
    # Each throw allocates its exception object and the catch frees it:
    # N allocations, N frees; live at the end only libstdc++'s emergency
    # pool (72,704 B), allocated in its constructor (test_startup.py).
    # Before: 2 more of libgcc's (its table for the registered stub pages),
    # one left live.
    exe = build_c("own_throw", ["own_throw.cc"], compiler="clang++")
    p, log = record([exe, "20"], args=["--alloc", "-q"])
    eq(p.stdout, "caught 20\n", "the program's output")
    s = memory_summary(log)
    eq((s["allocations"], s["frees"], s["leaked_blocks"], s["leaked_bytes"], s["unmatched_frees"]),
       (21, 20, 1, 72704, 0), "one allocation per exception object, each freed, and the pool")


UNWIND_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+UNWIND\s+(?:\[depth \d+\] )?(\d+) frames? abandoned")
EVENT_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(ENTRY|EXIT|TAIL)\s+(.*?)\s*$")


def self_times(log):
    """{function: [ns from its entry to the next event]} for the two leaves,
    and the number of frames each UNWIND event closed."""
    out = run([SFTRACE, "dump", log]).stdout
    events = []
    for line in out.splitlines():
        m = UNWIND_RE.match(line)
        if m:
            events.append((int(m.group(1)), "UNWIND", m.group(3)))
            continue
        m = EVENT_RE.match(line)
        if m:
            events.append((int(m.group(1)), m.group(3), m.group(4).strip()))
    times = {"jump_leaf": [], "ret_leaf": []}
    closed = []
    for (t, kind, name), (t2, kind2, what) in zip(events, events[1:]):
        if kind == "ENTRY" and name in times:
            times[name].append((t2 - t, kind2))
        if kind == "UNWIND":
            closed.append(name)
    return times, closed


def test_abandoned_frame_self_time_excludes_the_landing():
    # jump_leaf and ret_leaf do the same work; one longjmps out, the other
    # returns. The landing's time is read before the runtime's bookkeeping,
    # so their self times agree. Before, the landing walked the stack with
    # libgcc first (about 1 us a landing here, 25 us the first time) and
    # stamped its event after. Medians over 3,000 calls each; a bound of
    # 100 ns a landing (the target) is far above the noise of medians on
    # a loaded machine and far below the cost of a walk.
    n = 3000
    exe = build_c("own_selftime", ["own_selftime.c"])
    p, log = record([exe, str(n), "100"], args=["-q"])
    eq(p.stdout.strip(), "selftime ok", "the program's output")
    times, closed = self_times(log)
    eq(len(times["jump_leaf"]), n, "jump_leaf calls")
    eq(len(times["ret_leaf"]), n, "ret_leaf calls")
    eq({k for _, k in times["jump_leaf"]}, {"UNWIND"}, "each jump_leaf frame ends at a landing")
    eq({k for _, k in times["ret_leaf"]}, {"EXIT"}, "each ret_leaf frame ends at its exit")
    eq(closed, ["1"] * n, "each landing closes exactly the one abandoned frame")
    jump = statistics.median(t for t, _ in times["jump_leaf"])
    ret = statistics.median(t for t, _ in times["ret_leaf"])
    check(jump - ret < 100, f"abandoned frame's self time {jump} ns vs returning frame's {ret} ns (median)")


def ctor_fixture(name, flags):
    lib = build_c(name, ["ctor_only.c"], flags=flags, shared=True)
    exe = build_c("ctor_loader", ["ctor_loader.c"], libs=["-ldl"])
    return exe, lib


def test_constructor_only_library_traced():
    # The constructor is the library's only function and calls nothing.
    # A volatile store keeps it a run-time constructor at -O2: one call
    # per load, patched before it ran (the loader hook runs at
    # RT_CONSISTENT, before relocation and before _dl_init).
    exe, lib = ctor_fixture("libctor_volatile.so", ["-DCTOR_VOLATILE=volatile"])
    p, log = record([exe, lib], args=["-q"])
    eq(p.stdout, "r=41\n", "the constructor ran")
    eq(count_calls(dump_events(log)).get("plug_init"), 1, "plug_init's one call")
    # Issue 25's exact source at -O0: the same.
    exe, lib = ctor_fixture("libctor_O0.so", ["-O0"])
    p, log = record([exe, lib], args=["-q"])
    eq(p.stdout, "r=41\n", "the constructor ran")
    eq(count_calls(dump_events(log)).get("plug_init"), 1, "plug_init's one call at -O0")


def test_constructor_folded_by_the_compiler_is_not_a_call():
    # Issue 25's exact source at -O2: clang evaluates the constructor at
    # compile time (r = 41 in .data) and drops it from .init_array, so
    # nothing calls plug_init, traced or not; its sleds are still patched.
    exe, lib = ctor_fixture("libctor_folded.so", [])
    init = subprocess.run(["readelf", "-x", ".init_array", lib], capture_output=True, text=True).stdout
    sym = subprocess.run(["nm", lib], capture_output=True, text=True).stdout
    addr = int(re.search(r"^([0-9a-f]+) T plug_init$", sym, re.M).group(1), 16)
    words = [int.from_bytes(bytes.fromhex(w), "little") for line in init.splitlines()
             if line.strip().startswith("0x") for w in line.split()[1:5] if re.fullmatch(r"[0-9a-f]{8}", w)]
    pointers = [words[i] | words[i + 1] << 32 for i in range(0, len(words) - 1, 2)]
    check(addr not in pointers, f"plug_init not in .init_array {pointers} (clang folded it)")
    eq(run([exe, lib]).stdout, "r=41\n", "untraced: r is 41 without a call")
    p, log = record([exe, lib], args=["-q"])
    eq(p.stdout, "r=41\n", "traced: the same")
    eq(count_calls(dump_events(log)).get("plug_init"), None, "no call, as untraced")
    dump = run([SFTRACE, "dump", log]).stdout
    check(re.search(r"libctor_folded\.so \(dlopen\)\n.*sleds 2, patched 2", dump), dump)


def test_landing_beyond_the_shadow_stack_falls_back_to_the_walk():
    # 10 landings, each abandoning 601 recorded frames: more than the 512
    # the trampolines' ring holds, so each is counted by the walk instead.
    # Exact either way: every dive frame closed, after_jump under jumper.
    exe = build_c("unwind_longjmp", ["unwind_longjmp.c"])
    p, log = record([exe, "10", "600"], args=["-q"])
    eq(p.stdout.strip(), "longjmp ok 10", "the program's output")
    out = run([SFTRACE, "dump", log]).stdout
    closed = [int(m.group(1)) for m in re.finditer(r"UNWIND\s+(?:\[depth \d+\] )?(\d+) frames? abandoned", out)]
    eq(closed, [601] * 10, "frames each landing closed")
    eq(count_calls(dump_events(log)).get("after_jump"), 10, "after_jump calls")
    folded = os.path.join(os.path.dirname(log), "out.folded")
    run([SFTRACE, "convert", "-t", "folded", "--weight", "calls", log, "-o", folded])
    with open(folded) as f:
        stacks = dict(line.rstrip("\n").rsplit(" ", 1) for line in f)
    eq(stacks.get("main;jumper;after_jump"), "10", "after_jump nested right under jumper")
