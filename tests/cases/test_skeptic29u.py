"""Skeptic 29u: issue 29's claims (record -A/-R, --auto-args) after the
per-shape named-call path (h29perf3) and the writer's new fast paths, tried
with programs written for this: specs of 1, 2, 3, 6, 7 and 8 values, a mix
of integer/float/string values in one spec, a function named twice, a
recursive one, a tail caller, a function re-entered from a signal handler;
values walking by 1, 255, 256, 65535, 65536 and back, negatives,
alternations; time gaps of 2^0..2^21 spin iterations; 64 functions of
different shapes sharing the coder's 128 slots; stack strings with the NUL
at each offset, strings ending at a page end before a PROT_NONE page,
strings on another thread's stack, with -A (64-byte budget) and
--auto-args (16 bytes)."""
import os
import re

import sfkit
from sfkit import SFTRACE, build_c, check, eq, record, run

ISSUE = 29
I = "/i"   # decimal always (the default format shows values past +-100000 in hex, as uftrace's auto)

SHAPE_SPECS = ["-A", "v1@arg1/i", "-R", "v1@retval/i",
               "-A", "v2@arg1/i,arg2/i", "-R", "v2@retval/i",
               "-A", "v3@arg1/i,arg2/i,arg3/i", "-R", "v3@retval/i",
               "-A", "v6@arg1/i,arg2/i,arg3/i,arg4/i,arg5/i,arg6/i", "-R", "v6@retval/i",
               "-A", "v7@arg1/i,arg2/i,arg3/i,arg4/i,arg5/i,arg6/i,fparg1", "-R", "v7@retval/i",
               "-A", "v8@arg1/i,arg2/i,arg3/i,arg4/i,arg5/i,arg6/i,fparg1,fparg2", "-R", "v8@retval/i",
               "-A", "mix@arg1/i32,fparg1,arg2/s,fparg2/f32", "-R", "mix@retval/f",
               # named twice: the specs add up, a later one for arg1 replaces the earlier
               "-A", "twice@arg1/i", "-A", "twice@arg2/i", "-A", "twice@arg1/x", "-R", "twice@retval/i",
               "-A", "rec@arg1/i,arg2/i", "-R", "rec@retval/i",
               "-A", "tcall@arg1/i", "-R", "tcall@retval/i"]


def vals():
    return build_c("skep29u_vals", ["skep29u_vals.c"])


def replay_lines(log, extra=()):
    out = run([SFTRACE, "replay", "--no-pager"] + list(extra) + [log]).stdout
    res = []
    for line in out.splitlines():
        if line.startswith("#") or "| " not in line:
            continue
        text = line.split("| ", 1)[1].strip()
        if text in ("main() {", "} /* main */"):
            continue
        res.append(text)
    return res


def first_diff(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"line {i}: got {g!r}, want {w!r} (of {len(got)} / {len(want)})"
    return f"lengths {len(got)} / {len(want)}"


def compare(mode, specs, extra_env=None):
    prog = vals()
    plain = run([prog, mode]).stdout
    p, log = record([prog, mode], args=["-q"] + specs, env=extra_env)
    eq(p.stdout, plain, f"{mode}: the program's output traced")
    want = [x.strip() for x in plain.splitlines()]
    got = replay_lines(log)
    check(got == want, f"{mode}: replay differs from the program's own lines: {first_diff(got, want)}")
    return log


def test_shapes_1_2_3_6_7_8_values_mixes_twice_rec_tail():
    """skep29u_vals shapes: 69 rounds of v1..v8 (1, 2, 3, 6, 7 and 8
    values, with a return value), mix(int, double, char *, float), twice
    (named three times), a real recursion and a tail caller; untraced it
    prints the line replay should show for each call; traced, replay must
    show exactly those lines."""
    compare("shapes", SHAPE_SPECS)


def test_shapes_raw_encoding():
    """The same with SFTRACE_ENCODING=raw (the writer's packed coder out of
    the way): replay the same lines."""
    compare("shapes", SHAPE_SPECS, extra_env={"SFTRACE_ENCODING": "raw"})


def test_deltas_one_byte_255_256_65535_65536_alternating():
    """skep29u_vals deltas: 20,000 calls v2(x, ±x), x walking by
    ±1, ±255, ±256, ±65535, ±65536, ±2^32, ∓2^40: replay shows each
    call's values exactly."""
    compare("deltas", ["-A", "v2@arg1/i,arg2/i", "-R", "v2@retval/i"])


def test_gaps_busy_loops():
    """skep29u_vals gaps: v1/v2 calls separated by busy loops of 2^k-2 ..
    2^k+2 iterations, k 0..21 (time gaps across 2^10 and 2^17 ticks):
    values exact, and dump's times never go back."""
    log = compare("gaps", ["-A", "v1@arg1/i", "-R", "v1@retval/i", "-A", "v2@arg1/i,arg2/i", "-R", "v2@retval/i"])
    ev = sfkit.dump_events(log)
    times = [e.time for e in ev]
    bad = [i for i in range(1, len(times)) if times[i] < times[i - 1]]
    eq(bad, [], "dump times going back")


def test_many_functions_shared_slots():
    """skep29u_vals many: 30,000 calls spread over 64 functions g0..g63 by a
    fixed LCG; regex specs give every g two values, g10-g19 a third (a
    double) and g0-g39 a return value, so shapes of 2, 3 and 1 values
    share the coder's 128 slots; replay must show each call exactly."""
    compare("many", ["-A", "^g[0-9]+$@arg1/i,arg2/i", "-A", "^g1[0-9]$@fparg1", "-R", "^g([0-9]|[0-3][0-9])$@retval/i"])


def test_signal_reenters_named_function():
    """skep29u_vals sig: sigf(n) for n < 3 raises SIGUSR1 whose handler
    calls sigf(1000) while the first sigf runs on the thread, 2,000 times:
    replay must nest each handler call inside its interrupted call with
    both values right."""
    compare("sig", ["-A", "sigf@arg1/i", "-R", "sigf@retval/i"])


if __name__ == "__main__":
    sfkit.main(globals())
