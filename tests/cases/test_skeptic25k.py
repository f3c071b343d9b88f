"""Skeptic cases for issue 25 (k): the quiet landing test (a landing's CFA
compared with the innermost open entry of the shadow stack) where stacks
are not ordered like the frames: coroutines and signal stacks mapped above
the main stack, deep recursion, nested throws, forced unwinds; --alloc
counts; a constructor-only dlopen'd library."""
import re

import sfkit

CXX = dict(compiler="clang++")
UNWIND_RE = re.compile(r"^\s*\d+\s+\d+\s+UNWIND\s+(?:\[depth \d+\] )?(\d+) frames? abandoned, depth (\d+) left")


def unwinds(log):
    """(abandoned, depth left) of each UNWIND event `sftrace dump` prints."""
    out = sfkit.run([sfkit.SFTRACE, "dump", log]).stdout
    return [(int(m.group(1)), int(m.group(2))) for m in map(UNWIND_RE.match, out.splitlines()) if m]


def replay_calls(log):
    """(indent depth, text) of each call line of `sftrace replay`."""
    out = sfkit.run([sfkit.SFTRACE, "replay", "--no-pager", "-f", "none", log]).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        body = line.split("| ", 1)[-1] if "| " in line else line
        stripped = body.lstrip(" ")
        rows.append(((len(body) - len(stripped)) // 2, stripped))
    return rows


def record_same(exe, args, rec_args=(), check_rc=0):
    """Runs exe untraced and traced; their stdout and exit status must be
    equal. Returns the log."""
    plain = sfkit.run([exe] + list(args), check_rc=None)
    p, log = sfkit.record([exe] + list(args), args=list(rec_args), check_rc=None)
    sfkit.eq((p.stdout, p.returncode), (plain.stdout, plain.returncode), "traced output/status vs untraced")
    sfkit.eq(plain.returncode, check_rc, "exit status")
    return log


def costack():
    return sfkit.build_c("skep25k_costack", ["skep25k_costack.cc"], **CXX)


def check_costack_inner(where):
    for mode in ("inner", "innerjmp"):
        log = record_same(costack(), [where, mode])
        # 10 landings, each abandoning thrower (jumper) only: main and
        # run_co stay open
        sfkit.eq(unwinds(log), [(1, 2)] * 10, f"{mode}, coroutine {where} the main stack: UNWIND events")
        rows = replay_calls(log)
        sfkit.eq([r for r in rows if r[1].startswith("after")], [(1, "after();")],
                 f"{mode}: after() nests under main")


def test_skeptic25k_costack_below():
    check_costack_inner("below")


def test_skeptic25k_costack_above():
    check_costack_inner("above")


def test_skeptic25k_costack_suspended():
    """g left suspended on the coroutine's stack, then f abandoned by a throw
    on the main stack: same answer whichever side the coroutine is on."""
    for where in ("below", "above"):
        log = record_same(costack(), [where, "suspended"])
        sfkit.eq(unwinds(log), [(3, 1)], f"coroutine {where}: UNWIND events")


def altstack():
    return sfkit.build_c("skep25k_altstack", ["skep25k_altstack.cc"], **CXX)


def check_altstack(where):
    log = record_same(altstack(), [where])
    sfkit.eq(unwinds(log), [(1, 2)] * 5, f"sigaltstack {where} the main stack: UNWIND events")
    rows = replay_calls(log)
    sfkit.eq([r for r in rows if r[1].startswith("after")], [(1, "after();")], "after() nests under main")


def test_skeptic25k_altstack_below():
    check_altstack("below")


def test_skeptic25k_altstack_above():
    check_altstack("above")


def test_skeptic25k_altstack_jump_below():
    """A recorded handler on a sigaltstack below the main stack siglongjmps
    to main: work and the handler end at the landing."""
    log = record_same(altstack(), ["below", "jump"])
    sfkit.eq(unwinds(log), [(2, 1)], "UNWIND events")
    rows = replay_calls(log)
    sfkit.eq([r for r in rows if r[1].startswith("after")], [(1, "after();")], "after() nests under main")


def test_skeptic25k_deep_throws():
    """Recursion 700 deep (past the 512 stored frames) with a throw at every
    depth abandoning 4 frames: every landing closes exactly those 4."""
    exe = sfkit.build_c("skep25k_deep", ["skep25k_deep.cc"], **CXX)
    log = record_same(exe, ["700"])
    sfkit.eq(unwinds(log), [(4, d + 2) for d in range(700)], "UNWIND events")
    calls = sfkit.count_calls(sfkit.dump_events(log))
    sfkit.eq((calls["rec"], calls["sub"], calls["after"]), (701, 2800, 1), "calls")
    rows = replay_calls(log)
    sfkit.eq([r for r in rows if r[1].startswith("after")], [(1, "after();")], "after() nests under main")
    # landings that cross the array's end: 601 frames abandoned from depth
    # d + 2 (30 throws), and 21 at every depth of 600
    for mx, k in ((30, 600), (600, 20)):
        log = record_same(exe, [str(mx), str(k)])
        sfkit.eq(unwinds(log), [(k + 1, d + 2) for d in range(mx)], f"max {mx}, sub({k}): UNWIND events")


def mcount():
    return sfkit.build_c("libskep25k_mcount.so", ["skep25k_mcount.c"], shared=True, xray=False)


def check_alloc_equal(exe, args, want):
    """--alloc counts exactly the allocations the program makes untraced
    (a malloc-counting shim's count), which is `want`."""
    plain = sfkit.run([exe] + args, env={"LD_PRELOAD": mcount()})
    m = re.search(r"mcount (\d+)", plain.stderr)
    sfkit.eq(int(m.group(1)), want, "untraced allocations (shim)")
    p, log = sfkit.record([exe] + args, args=["--alloc"])
    out = sfkit.run([sfkit.SFTRACE, "memory", "--no-pager", log]).stdout
    got = int(re.search(r"^(\d+) allocations", out, re.M).group(1))
    sfkit.eq(got, want, "allocations in sftrace memory")


def test_skeptic25k_alloc_longjmp_only():
    exe = sfkit.build_c("skep25k_sjlj", ["skep25k_sjlj.c"])
    check_alloc_equal(exe, ["10"], 0)


def test_skeptic25k_alloc_throw_only():
    """10 exception objects and libstdc++'s emergency pool: 11, traced or
    not."""
    exe = sfkit.build_c("skep25k_throw", ["skep25k_throw.cc"], **CXX)
    check_alloc_equal(exe, ["10"], 11)


def test_skeptic25k_alloc_deep_and_coroutine():
    """Landings on the walk and maps paths allocate nothing either: 700
    exceptions, the pool and stdout's buffer; the coroutine's 14 (its
    fopen of maps included)."""
    check_alloc_equal(sfkit.build_c("skep25k_deep", ["skep25k_deep.cc"], **CXX), ["700"], 702)
    check_alloc_equal(costack(), ["above", "inner"], 14)


def test_skeptic25k_ctor_only_dlopen():
    """A library whose only function is its (volatile-storing) constructor,
    as .init_array or DT_INIT, or as the dependency of a dlopen'd library;
    loaded by dlopen, from a thread, or by dlmopen into a new namespace:
    one call of plug_init each time."""
    libs = {
        "init_array": sfkit.build_c("libskep25k_ctor.so", ["skep25k_ctorlib.c"], shared=True),
        "dt_init": sfkit.build_c("libskep25k_ctorinit.so", ["skep25k_ctorlib.c"], shared=True,
                                 flags=["-DAS_INIT", "-Wl,-init=plug_init"]),
    }
    libs["needed"] = sfkit.build_c("libskep25k_ctordep.so", ["skep25k_ctorhost.c"], shared=True, xray=False,
                                   flags=["-DAS_DEP", "-Wl,--no-as-needed"],
                                   libs=["-L" + sfkit.FIXBUILD, "-lskep25k_ctor", "-Wl,-rpath," + sfkit.FIXBUILD])
    host = sfkit.build_c("skep25k_ctorhost", ["skep25k_ctorhost.c"], xray=False, libs=["-ldl", "-lpthread"])
    for how in ("open", "thread", "mopen"):
        for kind, lib in libs.items():
            log = record_same(host, [how, lib])
            calls = sfkit.count_calls(sfkit.dump_events(log))
            sfkit.eq(dict(calls), {"plug_init": 1}, f"{how} {kind}: calls")


def texit():
    return sfkit.build_c("skep25k_texit", ["skep25k_texit.c"], libs=["-lpthread"])


def check_texit(mode):
    log = record_same(texit(), [mode])
    # thread_fn, a and b are abandoned by the forced unwind's end (glibc's
    # own jump back to start_thread); key_dtor runs after it, outermost.
    sfkit.eq(unwinds(log), [(3, 0)], f"pthread {mode}: UNWIND events")
    p = sfkit.run([sfkit.SFTRACE, "replay", "--no-pager", log])
    sfkit.check("open frames closed at thread end" not in p.stderr, f"pthread {mode}: {p.stderr.strip()}")


def test_skeptic25k_pthread_exit():
    check_texit("exit")


def test_skeptic25k_pthread_cancel():
    check_texit("cancel")


NEST_WANT = {
    # a's catch (thrower, b), its catch block's cleanup (thrower, c), main (a)
    "catchthrow": [(2, 2), (2, 2), (1, 1)],
    # a2's cleanup (thrower, b), d's catch inside the destructor (thrower),
    # main (a2)
    "dtorcatch": [(2, 2), (1, 3), (1, 1)],
    # the thread's catch in tfn (thrower, b); main's rethrow out of r
    "rethread": [(1, 1), (2, 1)],
    # thrower2 (tail-called from tb, in tb's place) and ta
    "tail": [(2, 1)],
    # big_thrower and mid_alloca, below cat_alloca's alloca
    "alloca": [(2, 2)],
}


def test_skeptic25k_nested_throws():
    """Throws from a catch block, from a destructor's own try during a
    throw, rethrow_exception in another thread, a throw after a -O2 tail
    call, alloca'd frames; with and without frame pointers."""
    for fp in ("omit", "no-omit"):
        exe = sfkit.build_c(f"skep25k_nest_{fp}", ["skep25k_nest.cc"], flags=[f"-f{fp}-frame-pointer"],
                            libs=["-lpthread"], **CXX)
        for mode, want in NEST_WANT.items():
            log = record_same(exe, [mode])
            sfkit.eq(sorted(unwinds(log)), sorted(want), f"{fp} {mode}: UNWIND events")
            rows = replay_calls(log)
            sfkit.eq([r for r in rows if r[1].startswith("after")], [(1, "after();")], f"{fp} {mode}: after()")


def test_skeptic25k_rust_nested_catch_unwind():
    """Nested catch_unwind, a panic inside the Err arm of another: each Drop
    landing closes the one frame below it; 12 landings, none closing
    nothing; after() under main."""
    exe = sfkit.rust_fixture("skep25k_rust_nest")
    log = record_same(exe, [])
    # depth left: lang_start's closure, __rust_begin_short_backtrace, main,
    # outer, inner (5), then level frames above it
    want = [(1, 9), (1, 8), (1, 7), (1, 6), (1, 5), (1, 8), (1, 7), (1, 6), (1, 5), (1, 6), (1, 5), (1, 4)]
    sfkit.eq(unwinds(log), want, "UNWIND events")
    calls = sfkit.count_calls(sfkit.dump_events(log))
    drops = sum(v for k, v in calls.items() if k.endswith("Drop>::drop"))
    sfkit.eq((calls["skep25k_rust_nest::level"], calls["skep25k_rust_nest::boom"], drops), (9, 3, 9), "calls")
    rows = replay_calls(log)
    sfkit.eq([r for r in rows if "nest::after" in r[1]], [(3, "skep25k_rust_nest::after();")], "after() under main")


def callgrind_ir(p):
    """Instructions callgrind counts for the traced program (the last
    'Collected' line: record's own helpers come first), from its run."""
    got = re.findall(r"Collected : (\d+)", p.stderr + p.stdout)
    sfkit.check(got, f"no callgrind count: {p.stderr[-500:]}")
    return int(got[-1])


def cxx_cost():
    return sfkit.build_c("skep25k_cost", ["skep25k_cost.cc"], **CXX)


_untraced_per = {}  # (exe, depth, collect) -> untraced instructions a throw


def throw_cost(depth, regex, exe=None, collect="loop"):
    """Instructions a throw through chain<50> (or exe's panic) costs traced
    (filter regex) over untraced, from the slope between 100 and 200
    throws, under `depth` recorded frames of rec(). Counted only inside
    `collect` (the throwing loop, landings included): the whole program's
    count moves by some 38,000 instructions now and then with the run's
    length (the log's writing, not the throws). The untraced slope (the
    same for every regex) is measured once per program and depth. The runs
    go one at a time: two at once moved the counts by ~10 a throw, and the
    margins here are 75."""
    import shutil
    vg = shutil.which("valgrind")
    if not vg:
        raise sfkit.Skip("no valgrind")
    exe = exe or cxx_cost()
    d = sfkit.tmpdir()
    vgcmd = [vg, "--tool=callgrind", "--smc-check=all", f"--toggle-collect={collect}", f"--callgrind-out-file={d}/cg.%p"]
    key = (exe, depth, collect)
    runs = [(True, 100), (True, 200)] + ([] if key in _untraced_per else [(False, 100), (False, 200)])
    cmds = []
    for traced, n in runs:
        cmd = vgcmd + [exe, str(depth), str(n)]
        if traced:
            # the writer thread by name (sfkit.CG_WRITER): auto hands off
            # on the measured thread under valgrind
            cmd = [sfkit.SFTRACE, "record", "-o", f"{d}/sf{n}.log", "--filter-regex", regex] + sfkit.CG_WRITER + \
                ["--"] + cmd
        cmds.append(cmd)
    ir = [callgrind_ir(p) for p in sfkit.run_parallel(cmds, jobs=1, timeout=600)]
    if key not in _untraced_per:
        _untraced_per[key] = (ir[3] - ir[2]) // 100
    untraced = _untraced_per[key]
    return (ir[1] - ir[0]) // 100 - untraced, untraced


def test_skeptic25k_throw_cost_shallow():
    """Measured inside loop(): +925 over 414,905 (main, loop and rec(0)
    recorded and open; or nothing recorded), +925 with 512 recorded frames
    open (rec 509 deep)."""
    for depth, regex in ((0, "^(main|loop|rec)$"), (0, "^zzz$"), (509, "^(main|loop|rec)$")):
        extra, base = throw_cost(depth, regex)
        sfkit.check(extra <= 1000, f"depth {depth} {regex}: +{extra} instructions a throw over {base}")


def test_skeptic25k_throw_cost_deep():
    extra, base = throw_cost(600, "^(main|loop|rec)$")
    sfkit.check(extra <= 1000, f"depth 600: +{extra} instructions a throw over {base}")


RUST_RUN = "*rust_cost::run*"


def rust_cost():
    return sfkit.rust_fixture("skep25k_rust_cost")


def test_skeptic25k_panic_cost_shallow():
    """A panic through 20 Drop frames: measured +690 over 182,707, main, run
    and rec(0) recorded and open, or nothing recorded."""
    for regex in ("rust_cost::(main|run|rec)$", "^zzz$"):
        extra, base = throw_cost(0, regex, rust_cost(), RUST_RUN)
        sfkit.check(extra <= 800, f"{regex}: +{extra} instructions a panic over {base}")


def test_skeptic25k_panic_cost_deep():
    extra, base = throw_cost(600, "rust_cost::(main|run|rec)$", rust_cost(), RUST_RUN)
    sfkit.check(extra <= 800, f"depth 600: +{extra} instructions a panic over {base}")


def test_skeptic25k_thread_custom_stack():
    """A thread on a 64 KiB stack of its own, mmap'd below or above the
    main stack; its unrecorded function catches 5 throws through mid and
    thrower: each landing closes both, depth 0 left."""
    exe = sfkit.build_c("skep25k_tstack", ["skep25k_tstack.cc"], libs=["-lpthread"], **CXX)
    for where in ("below", "above"):
        log = record_same(exe, [where])
        sfkit.eq(unwinds(log), [(2, 0)] * 5, f"thread stack {where}: UNWIND events")
        rows = replay_calls(log)
        sfkit.eq(sorted(r for r in rows if "after" in r[1]), [(0, "tafter();"), (1, "after();")],
                 f"thread stack {where}: after()s")


def check_suspended2(where):
    exe = costack()
    # all recorded: thrower, g (left on the coroutine, nested under f2 in
    # the thread's events) and f2 end at main's catch
    log = record_same(exe, [where, "suspended2"])
    sfkit.eq(unwinds(log), [(3, 1)], f"coroutine {where}, all recorded: UNWIND events")
    rows = replay_calls(log)
    sfkit.eq([r for r in rows if r[1].startswith("after")], [(1, "after();")], "after() nests under main")
    # thrower not recorded: the landing's quiet test compares with g's entry
    log = record_same(exe, [where, "suspended2"], rec_args=["--filter-regex", "^(main|f2|g|after)$"])
    sfkit.eq(unwinds(log), [(2, 1)], f"coroutine {where}, thrower not recorded: UNWIND events")


def test_skeptic25k_costack_suspended2_below():
    check_suspended2("below")


def test_skeptic25k_costack_suspended2_above():
    check_suspended2("above")


def test_skeptic25k_costack_suspended2_armed_above():
    log = record_same(costack(), ["above", "suspended2w"], rec_args=["--filter-regex", "^(main|f2|g|after)$"])
    sfkit.eq(unwinds(log), [(2, 1)], "coroutine above, fast path armed: UNWIND events")


def test_skeptic25k_costack_suspended2_armed_below():
    log = record_same(costack(), ["below", "suspended2w"], rec_args=["--filter-regex", "^(main|f2|g|after)$"])
    sfkit.eq(unwinds(log), [(2, 1)], "coroutine below, fast path armed: UNWIND events")
