"""The table of makecontext contexts' stacks (src/runtime/stack.c, docs/
DESIGN.md, Unwinding, "The thread's stack"): every live context the
program made is found at a landing without reading /proc/self/maps,
whatever their number, the order of their stacks in memory, or a stack
reused by a newer context; a landing's cost grows with the log of the
number of contexts, a later landing on the same stack needs no search,
and makecontext's added cost is bounded.

Costs are callgrind instruction counts (bench/ctx_table.py prints them for
64, 1,000 and 100,000 contexts), never times. Fixture:
tests/fixtures/ctx_many.c and ctx_race.c.

Runs under tests/run.py, or alone: python3 tests/cases/test_ctx_table.py."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # skeptic25u's helpers

import sfkit  # noqa: E402
from sfkit import build_c, check, eq, run  # noqa: E402
from test_skeptic25u import callgrind_in, maps_opens, unwinds  # noqa: E402


def many():
    return build_c("ctx_many", ["ctx_many.c"])


def test_many_contexts_every_order():
    """ctx_many 20000 3 MODE: 20,000 live contexts made in rising, falling
    and shuffled stack order, and (reuse) every one made again over two
    older stacks, the runners on part of theirs: "contexts 20000 landings
    9" untraced and traced, no /proc/self/maps open, 9 UNWINDs of two
    frames (3 runners, the first, middle and last made, 3 landings each)
    plus main's one."""
    exe = many()
    for mode in ("rise", "fall", "rand", "reuse"):
        want = "contexts 20000 landings 10\n"
        eq(run([exe, "20000", "3", mode]).stdout, want, f"{mode}: untraced")
        out, log, n = maps_opens([exe, "20000", "3", mode])
        eq(out, want, f"{mode}: traced")
        eq(n, 0, f"{mode}: /proc/self/maps opens")
        eq(unwinds(log).get("2 frames abandoned", 0), 10, f"{mode}: UNWINDs of two frames")


def cost(n, mode="rise"):
    """Instructions the runtime adds (traced minus untraced, callgrind):
    per first landing on a context's stack, per later one, per
    makecontext."""
    exe = many()
    args = [exe, str(n), "4", mode]
    d = {fn: callgrind_in(args, fn, True) - callgrind_in(args, fn, False)
         for fn in ("land_first", "land_again", "make_all")}
    return d["land_first"] / 3, d["land_again"] / 9, d["make_all"] / (2 * n if mode == "same" else n)


def test_costs_grow_with_the_log():
    """callgrind, 64 against 10,000 live contexts (rising and falling
    order): a first landing on a context's stack costs at most 150
    instructions more (a binary search 7 levels deeper: measured +37-40),
    a later landing on the same stack the same within 20 (the thread's
    last hit, no search), and makecontext adds at most 400 instructions
    (measured 280-300: the stub, the lock, one search, no entry moved in
    either order)."""
    for mode in ("rise", "fall"):
        f64, a64, m64 = cost(64, mode)
        f10k, a10k, m10k = cost(10000, mode)
        msg = f"{mode}: 64 contexts first {f64:.0f} later {a64:.0f} make {m64:.0f}; " \
              f"10,000: first {f10k:.0f} later {a10k:.0f} make {m10k:.0f}"
        check(f10k - f64 <= 150, msg)
        check(abs(a10k - a64) <= 20, msg)
        check(m10k <= 400, msg)


def test_landings_while_contexts_are_made():
    """ctx_race 3 20000 4 500: 3 threads making 20,000 contexts each
    (stacks in shuffled order) while 4 threads each land 500 times on a
    coroutine of their own made before: "made 60000 landings 2000"
    untraced and traced, no /proc/self/maps open (a landing that meets a
    writer waits for it, yielding the CPU, rather than give up), 2,000
    UNWINDs of two frames."""
    exe = build_c("ctx_race", ["ctx_race.c"], libs=["-lpthread"])
    args = [exe, "3", "20000", "4", "500"]
    want = "made 60000 landings 2000\n"
    eq(run(args).stdout, want, "untraced")
    out, log, n = maps_opens(args)
    eq(out, want, "traced")
    eq(n, 0, "/proc/self/maps opens")
    eq(unwinds(log).get("2 frames abandoned", 0), 2000, "UNWINDs of two frames")


if __name__ == "__main__":
    sfkit.main(globals())
