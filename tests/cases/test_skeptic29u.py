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
import subprocess

import sfkit
from sfkit import SFTRACE, build_c, check, eq, record, run, tmpdir

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


def chunk_types(log):
    """{chunk type: count} of a log, walking its chunks by their sizes from
    the end of the 4096-byte header (zero 16-byte units between chunks are
    skipped, as readers do)."""
    import struct
    data = open(log, "rb").read()
    off, res = 4096, {}
    while off + 16 <= len(data):
        magic, typ = struct.unpack_from("<IH", data, off)
        size = struct.unpack_from("<I", data, off + 8)[0]
        if magic != 0x4B434653 or size < 80 or size % 16:
            off += 16
            continue
        res[typ] = res.get(typ, 0) + 1
        off += size
    return res


def tsc_slack_ns(ticks):
    """How far the ns the test computes for a TSC value TICKS after the
    log's start may be from the reader's own without anything wrong: dump's
    times are rounded to the ns, and its slope is printed rounded to 1e-9
    ns/tick (5e-10 ns a tick since the start: 0.3 ns at 0.2 s of run)."""
    return 1 + 5e-10 * ticks


def test_gap_times_match_the_programs_own_tsc():
    """skep29u_vals tsc: 560 calls of vt (named) after busy gaps of
    2^8..2^21 TSC ticks (40 lengths a power), each gap after 32 calls of
    vfill, so that the thread's slot fills and most of vt's entries are read
    back from PACKED chunks (DATA with SFTRACE_ENCODING=raw; checked).
    The program reads the TSC just before each call (b) and first thing in
    vt's body (i), after the entry trampoline read its own. Every ENTRY's
    time in dump must lie in [conv(b), conv(i)], conv being the log's own
    ticks-to-ns line (the slope and start tsc dump prints: readers fit one
    line through the calibration pairs, FORMAT.md "Times", so a tick is the
    same ns everywhere in the run), give or take the rounding (1 ns, and
    the printed slope's 5e-10 ns a tick). Then every entry-to-entry gap is
    the program's own TSC gap to within the two calls' brackets, and ticks
    lost or added by the runtime or the coder, or times mis-scaled, push
    entries out once past the margins: measured at least 10 ns on each
    side (this TSC counts in steps of 27 ticks), the brackets' median width
    20 ns after short gaps, 150-190 ns after gaps of 2^19 ticks and more,
    with the late side 10-20 ns throughout. A decoder dropping 32 ticks
    (12 ns) from gaps of 2^17 ticks and more, or a reader running 2e-7 fast,
    fail it (tried).

    Before, each gap was compared with the program's gap read before both
    calls, per power of two, median within 20 ns. The part of the entry
    path before the trampoline's read is not constant (about 10 ns after
    short gaps, 140-190 ns after most of those past 2^18 ticks, apparently
    the first call after a long spin missing the caches), so a gap between
    a slow and a fast call was 130-150 ns off either way, and a bucket's
    median landed wherever the mix put it: -111.1 ns at 2^21 on one CI run
    of main; here 9.7 and -15.2 ns idle, and 4 of 11 runs of main's case
    failing beside two busy loops (-50.7 and -75.4 ns among them). Not the
    clock's calibration: dump's ns come from one line for the whole run
    and both checks use its slope. Nor was the coder in it: the 2,242
    events stayed in the live slot, read raw in both encodings."""
    for enc in ("packed", "raw"):
        p, log = record([vals(), "tsc"], args=["-q", "-A", "vt@arg1/i", "-R", "vt@retval/i"],
                        env={"SFTRACE_ENCODING": enc})
        d = run([SFTRACE, "dump", "--raw", log]).stdout
        if "clock: tsc" not in d:
            raise sfkit.Skip("the log's clock is not the TSC")
        nspt = float(re.search(r"^clock: tsc, ([\d.]+) ns/tick", d, re.M).group(1))
        start = int(re.search(r"^calibration: start tsc (\d+) ", d, re.M).group(1))
        ent = [(int(m.group(1)), bool(m.group(2))) for m in
               re.finditer(r"^\s*(\d+)\s+\d+ ENTRY\s+vt  \[raw \d+ id \d+ seq \d+( slot)? @\d+\]$", d, re.M)]
        brackets = [tuple(int(x) for x in line.split()) for line in p.stdout.splitlines()]
        eq(len(ent), len(brackets), enc + ": entries")
        kinds = chunk_types(log)
        coded = sum(1 for _, in_slot in ent if not in_slot)
        coder = kinds.get(5, 0) >= 4 if enc == "packed" else kinds.get(3, 0) >= 4 and not kinds.get(5)  # PACKED, DATA
        check(coded >= 400 and coder,
              f"{enc}: {coded} of vt's {len(ent)} entries from chunks; chunk types {kinds}")
        bad = {}
        for n, ((t, _), (b, i)) in enumerate(zip(ent, brackets)):
            early = nspt * (b - start) - tsc_slack_ns(b - start) - t
            late = t - nspt * (i - start) - tsc_slack_ns(i - start)
            if early > 0 or late > 0:
                k = 8 + n // 40
                cnt, worst = bad.get(k, (0, 0))
                bad[k] = (cnt + 1, max(worst, round(max(early, late), 1)))
        eq(bad, {}, enc + ": {power of two of the gap: (entries outside the program's bracket, worst ns past it)}")


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


def deltas_expected():
    want = []
    for line in run([vals(), "deltas"]).stdout.splitlines():
        m = re.match(r"v2\((-?\d+), (-?\d+)\) = (-?\d+);", line)
        want += [("arg1", m.group(1)), ("arg2", m.group(2)), ("retval", m.group(3))]
    return want


def deltas_log():
    p, log = record([vals(), "deltas"], args=["-q", "-A", "v2@arg1/i,arg2/i", "-R", "v2@retval/i"])
    return log


def test_deltas_in_query_args_table():
    """The deltas run's 60,000 values in query's args table, in frame and
    index order: exactly the program's own."""
    log = deltas_log()
    out = run([SFTRACE, "query", log, 'select a.name, a.value from args a join frames f using (frame_id) '
               'where f.name = \'v2\' order by f.start_ns, a."index"']).stdout.splitlines()[1:]
    got = [tuple(x.split("\t")) for x in out]
    want = deltas_expected()
    check(got == want, f"query: {first_diff(got, want)}")


def test_deltas_in_perfetto_args():
    """The same values as Perfetto slice args (trace_processor)."""
    log = deltas_log()
    pb = log + ".pb.gz"
    run([SFTRACE, "convert", log, "-o", pb])
    rows = sfkit.tp_rows(pb, "select a.key, a.display_value from slice s join args a using (arg_set_id) "
                             "where s.name = 'v2' and a.key like 'debug.%' order by s.ts, a.key;")
    got = [(k[len("debug."):], v) for k, v in rows]
    want = deltas_expected()
    check(got == want, f"perfetto: {first_diff(got, want)}")


def test_deltas_in_chrome_json_args():
    """The same values in Chrome JSON's event args."""
    import json
    log = deltas_log()
    out = log + ".json"
    run([SFTRACE, "convert", "--type", "chrome", log, "-o", out])
    with open(out) as f:
        doc = json.load(f)
    got = []
    for e in sorted((e for e in doc["traceEvents"] if e.get("name") == "v2" and e.get("ph") == "X"),
                    key=lambda e: e["ts"]):
        a = e.get("args", {})
        got += [(k, str(a.get(k))) for k in ("arg1", "arg2", "retval")]
    want = deltas_expected()
    check(got == want, f"chrome: {first_diff(got, want)}")


def test_deltas_in_parquet_args():
    """The same values in Parquet's OUT.args (nodejs-polars)."""
    log = deltas_log()
    out = log + ".pola"
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    res = sfkit.parquet_query("args_query.mjs", out)
    got = [tuple(r.split(" ")[2:4]) for r in res["rows"]]
    want = deltas_expected()
    check(got == want, f"parquet: {first_diff(got, want)}")
    eq(res["duckdb"], len(want), "duckdb rows")


# ---------------------------------------------------------------- strings

def strprog():
    return build_c("skep29u_str", ["skep29u_str.c"], libs=["-lpthread"])


def fill(n, seed):
    return "".join(chr(ord("A") + (i + seed) % 26) for i in range(n))


def shown(text, left):
    """A string as replay shows it when LEFT bytes of the call's budget are
    left: whole when its NUL is among them, else LEFT characters and ...
    (what the runtime does: the budget counts characters, not the NUL)."""
    if len(text) < left:
        return f'"{text}"', left - len(text)
    return f'"{text[:left]}"...', 0


def want_strings(out, budget, ret=False):
    res = []
    for line in out.splitlines():
        w = line.split()
        r = ""
        if w[0] == "s1":
            ln, off = int(w[1]), int(w[2])
            txt = shown(fill(ln, off), budget)[0]
            if ret:
                r = f" = {2 if ln else 1}"
            res.append(f"s1({txt}){r};")
        elif w[0] == "s2":
            a, left = shown(fill(int(w[1]), 1), budget)
            b = shown(fill(int(w[2]), 2), left if budget == 64 else budget)[0]
            res.append(f"s2({a}, {b}){' = 2' if ret else ''};")
        elif w[0] in ("g1", "g0"):
            ln = int(w[1])
            txt = fill(ln, 3 if w[0] == "g1" else 4)
            if w[0] == "g1":
                t = shown(txt, budget)[0]
            else:
                t = f'"{txt[:budget]}"...'
            res.append(f"s1({t}){(' = ' + str(2 if ln else 1)) if ret else ''};")
        elif w[0] == "t":
            ln = int(w[1])
            t = shown(fill(50, 5)[50 - ln:], budget)[0]
            res.append(f"s1({t}){' = 2' if ret else ''};")
    return res


def str_case(mode, auto=False):
    prog = strprog()
    plain = run([prog, mode]).stdout
    specs = ["--auto-args"] if auto else ["-A", "s1@arg1/s", "-A", "s2@arg1/s,arg2/s"]
    p, log = record([prog, mode], args=["-q"] + specs)
    eq(p.stdout, plain, f"{mode}: output traced")
    got = [x for x in replay_lines(log) if x.startswith(("s1(", "s2("))]
    want = want_strings(plain, 16 if auto else 64, ret=auto)
    check(got == want, f"{mode}: {first_diff(got, want)}")


def test_stack_strings_nul_at_each_offset():
    """skep29u_str stack: s1(buf + off), a stack buffer, off 0..15, the NUL
    at each length 0..80 (1,296 calls): -A s1@arg1/s shows each whole up to
    63 characters, else its first 64 and ..."""
    str_case("stack")


def test_stack_strings_auto_args_16():
    """The same under --auto-args: 16 bytes of each string."""
    str_case("stack", auto=True)


def test_two_strings_share_the_budget():
    """skep29u_str two: s2(a, b), lengths 0..70 and 0..70 by 7: the first
    string takes what it shows of the 64 bytes, the second the rest."""
    str_case("two")


def test_strings_at_a_page_end_before_prot_none():
    """skep29u_str guard: strings ending at the last byte of a page followed
    by a PROT_NONE page, with their NUL there (lengths 0..80) and without
    one (1..80): no crash, whole or cut as replay shows it."""
    str_case("guard")


def test_strings_at_a_page_end_auto_args():
    str_case("guard", auto=True)


def test_strings_on_another_threads_stack():
    """skep29u_str thread: the main thread calls s1 on 50 suffixes of a
    string on another (blocked) thread's stack."""
    str_case("thread")


def test_rust_str_among_double_int_cstring_float():
    """skep29u_str smix: mixs(p, n, d, k, s, f) named as
    arg1/S (a &str: pointer and length, here slices of a buffer with no
    NUL after them), fparg1, arg3/i, arg4/s, fparg2/f32, and retval/s: 90
    calls with slices of 0..89 bytes and C strings of 0..39: the &str
    takes its length of the 64-byte budget, the C string the rest."""
    prog = strprog()
    plain = run([prog, "smix"]).stdout
    p, log = record([prog, "smix"], args=["-q", "-A", "mixs@arg1/S,fparg1,arg3/i,arg4/s,fparg2/f32",
                                          "-R", "mixs@retval/s"])
    eq(p.stdout, plain)
    slab = fill(200, 6)
    want = []
    for i, line in enumerate(plain.splitlines()):
        off, n, cl = (int(x) for x in line.split()[1:])
        sl = slab[off:off + n]
        st = f'"{sl}"' if n <= 64 else f'"{sl[:64]}"...'
        cs = shown(fill(cl, 7), 64 - min(n, 64))[0]
        ret = shown(fill(cl, 7), 64)[0] if n else f'"{slab[off:off + 64]}"...'
        want.append(f"mixs({st}, {i * 0.25:f}, {-i * 1000}, {cs}, {i * 0.5:f}) = {ret};")
    got = [x for x in replay_lines(log) if x.startswith("mixs(")]
    check(got == want, first_diff(got, want))


def test_auto_args_dead_parameters():
    """skep29u_dead: at -O2 used(a, b, c) never reads b and c, fdead never
    reads x and y; the caller (same file) leaves those registers as they
    are. --auto-args must not show the registers' leftovers as what the
    call was given: replay shows <optimized out> (it does)."""
    prog = build_c("skep29u_dead", ["skep29u_dead.c"], flags=["-Wno-unused-parameter"])
    plain = run([prog, "4"]).stdout
    p, log = record([prog, "4"], args=["-q", "--auto-args"])
    eq(p.stdout, plain)
    got = [x for x in replay_lines(log) if x.startswith(("used(", "fdead("))]
    want = []
    for i in range(4):
        want += [f"used({i}, <optimized out>, <optimized out>) = {i + 1};",
                 f"fdead(<optimized out>, <optimized out>, {i}) = {2 * i}.000000;"]
    eq(got, want)


TW_Q = ("select w.value, count(*), sum(cast(i.value as integer)), sum(cast(r.value as integer)) from frames f "
        "join args w on w.frame_id = f.frame_id and w.name = 'arg1' join args i on i.frame_id = f.frame_id "
        "and i.name = 'arg2' join args r on r.frame_id = f.frame_id and r.name = 'retval' where f.name = 'tw' "
        "group by w.value order by cast(w.value as integer)")
TF_Q = ("select w.value, count(*), sum(cast(x.value as real)), sum(cast(r.value as real)) from frames f "
        "join args w on w.frame_id = f.frame_id and w.name = 'arg1' join args x on x.frame_id = f.frame_id "
        "and x.name = 'fparg1' join args r on r.frame_id = f.frame_id and r.name = 'retval' where f.name = 'tf' "
        "group by w.value order by cast(w.value as integer)")


def test_threads_fork_exec_later_process():
    """skep29u_proc: tw(who, i) and tf(x, who) named (-A/-R), called 50,000
    times each from 8 threads at once, 10,000 from a fork child, 5,000 from
    that child's exec'd image, 7,000 from a second child forked after the
    first exited, 3 from main: untraced prints each process's sums;
    traced, output the same and query's args table over the directory has
    every call's values: per who, count, sum of i and of returns exact."""
    prog = build_c("skep29u_proc", ["skep29u_proc.c"], libs=["-lpthread"])
    plain = run([prog]).stdout
    d = tmpdir()
    p, _ = record([prog], out=os.path.join(d, "sf.log"),
                  args=["-q", "-A", "tw@arg1/i,arg2/i", "-R", "tw@retval/i", "-A", "tf@fparg1,arg1/i",
                        "-R", "tf@retval/f"])
    eq(sorted(p.stdout.splitlines()), sorted(plain.splitlines()), "output traced")
    runs = {0: 3, 100: 10000, 200: 5000, 300: 7000}
    runs.update({k: 50000 for k in range(1, 9)})
    want_tw = [[str(w), str(n), str(n * (n - 1) // 2), str(w * 1000003 * n + n * (n - 1) // 2)]
               for w, n in sorted(runs.items())]
    got = [x.split("\t") for x in run([SFTRACE, "query", d, TW_Q]).stdout.splitlines()[1:]]
    eq(got, want_tw, "tw per who")
    want_tf = [[str(w), str(n), repr(n * n / 2), repr(float(n * n))] for w, n in sorted(runs.items())]
    got = [x.split("\t") for x in run([SFTRACE, "query", d, TF_Q]).stdout.splitlines()[1:]]
    eq(got, want_tf, "tf per who")


A64_SPECS = """-A v1@arg1/i
-R v1@retval/i
-A v2@arg1/i,arg2/i
-R v2@retval/i
-A v3@arg1/i,arg2/i,arg3/i
-R v3@retval/i
-A v6@arg1/i,arg2/i,arg3/i,arg4/i,arg5/i,arg6/i
-R v6@retval/i
-A v7@arg1/i,arg2/i,arg3/i,arg4/i,arg5/i,arg6/i,fparg1
-R v7@retval/i
-A v8@arg1/i,arg2/i,arg3/i,arg4/i,arg5/i,arg6/i,fparg1,fparg2
-R v8@retval/i
-A mix@arg1/i32,fparg1,arg2/s,fparg2/f32
-R mix@retval/f
-A twice@arg1/i
-A twice@arg2/i
-A twice@arg1/x
-R twice@retval/i
-A rec@arg1/i,arg2/i
-R rec@retval/i
-A tcall@arg1/i
-R tcall@retval/i
-A sigf@arg1/i
-R sigf@retval/i
-A ^g[0-9]+$@arg1/i,arg2/i
-A ^g1[0-9]$@fparg1
-R ^g([0-9]|[0-3][0-9])$@retval/i
"""


def test_aarch64_shapes_deltas_gaps_slots_signal_under_qemu():
    """skep29u_vals cross-built for aarch64, run under qemu-aarch64 with
    the aarch64 runtime preloaded and the specs resolved by `sftrace
    filter --args` (what the runtime runs; qemu-user cannot run it from
    inside): every mode's replay equals the program's own lines, strings
    <unreadable> (qemu-user hands process_vm_readv guest addresses)."""
    import shutil
    if not shutil.which("qemu-aarch64") or not os.path.exists("/usr/aarch64-linux-gnu/lib/libc.so.6"):
        raise sfkit.Skip("no qemu-aarch64 or aarch64 sysroot")
    abuild = os.path.join(sfkit.ROOT, "build-aarch64")
    run(["make", "-s", "-C", sfkit.ROOT, "ARCH=aarch64", "-j2", "all"], timeout=900)
    exe = build_c("skep29u_vals", ["skep29u_vals.c"], flags=["--target=aarch64-linux-gnu", "-fnoxray-link-deps"],
                  outdir=os.path.join(abuild, "fixtures"))
    d = tmpdir()
    specs, args = os.path.join(d, "specs"), os.path.join(d, "args")
    with open(specs, "w") as f:
        f.write("sftrace-args-specs 1\n" + A64_SPECS)
    run([SFTRACE, "filter", "--args", specs, "-p", exe, "-o", args])
    os.chmod(args, 0o600)
    sysroot = "/" if os.path.exists("/lib/ld-linux-aarch64.so.1") else "/usr/aarch64-linux-gnu"
    for mode in ("shapes", "deltas", "gaps", "many", "sig"):
        q = ["qemu-aarch64", "-L", sysroot]
        plain = run(q + [exe, mode], timeout=300).stdout
        log = os.path.join(d, mode + ".log")
        p = run(q + ["-E", "LD_PRELOAD=" + os.path.join(abuild, "libsftrace.so"), "-E", "SFTRACE_OUTPUT_FILE=" + log,
                     "-E", "SFTRACE_ARGS=" + args, exe, mode], timeout=300)
        eq(p.stdout, plain, mode + " output")
        want = [re.sub(r'"s\d+"', "<unreadable>", x.strip()) for x in plain.splitlines()]
        got = replay_lines(log)
        check(got == want, f"aarch64 {mode}: {first_diff(got, want)}")


def test_aarch64_auto_args_sixteen_register_parameters():
    """skep29u_cap cross-built for aarch64 under qemu with --auto-args:
    all16(i, 1, .., 7, 0.5, 1.5, .., 7.5) must show its 16 parameters (or
    a mark for each not recorded)."""
    import shutil
    if not shutil.which("qemu-aarch64") or not os.path.exists("/usr/aarch64-linux-gnu/lib/libc.so.6"):
        raise sfkit.Skip("no qemu-aarch64 or aarch64 sysroot")
    abuild = os.path.join(sfkit.ROOT, "build-aarch64")
    run(["make", "-s", "-C", sfkit.ROOT, "ARCH=aarch64", "-j2", "all"], timeout=900)
    exe = build_c("skep29u_cap", ["skep29u_cap.c"], flags=["--target=aarch64-linux-gnu", "-fnoxray-link-deps"],
                  outdir=os.path.join(abuild, "fixtures"))
    d = tmpdir()
    specs, args = os.path.join(d, "specs"), os.path.join(d, "args")
    with open(specs, "w") as f:
        f.write("sftrace-args-specs 1\n--auto-args\n")
    run([SFTRACE, "filter", "--args", specs, "-p", exe, "-o", args])
    os.chmod(args, 0o600)
    sysroot = "/" if os.path.exists("/lib/ld-linux-aarch64.so.1") else "/usr/aarch64-linux-gnu"
    log = os.path.join(d, "sf.log")
    p = run(["qemu-aarch64", "-L", sysroot, "-E", "LD_PRELOAD=" + os.path.join(abuild, "libsftrace.so"),
             "-E", "SFTRACE_OUTPUT_FILE=" + log, "-E", "SFTRACE_ARGS=" + args, exe], timeout=300)
    eq(p.stdout, "771.00 226.50\n")
    got = [x for x in replay_lines(log) if x.startswith("all16(")]
    eq(got[0], "all16(0, 1, 2, 3, 4, 5, 6, 7, 0.500000, 1.500000, 2.500000, 3.500000, 4.500000, 5.500000, "
               "6.500000, 7.500000) = 74.500000;", "all16's first call")


def callgrind_total(cmd, d, prog=None):
    """Instructions of every process of CMD under callgrind (sftrace's own
    record process included: it cancels out in a difference). With PROG,
    also the instructions of PROG's main thread alone: the writer thread's
    share depends on when it wakes (CI: 200.89 vs 197.90 a call, every
    thread counted), the main thread's does not."""
    import glob
    import shutil
    if not shutil.which("valgrind"):
        raise sfkit.Skip("valgrind not installed")
    for f in glob.glob(os.path.join(d, "cg.*")):
        os.unlink(f)
    run(["valgrind", "--tool=callgrind", "--trace-children=yes", "--trace-children-skip=*/sftrace",
         "--separate-threads=yes", "--callgrind-out-file=" + os.path.join(d, "cg.%p")] + cmd, timeout=900)
    tot = 0
    main = None
    for f in glob.glob(os.path.join(d, "cg.*")):
        with open(f) as fh:
            text = fh.read()
        m = re.search(r"^summary: (\d+)", text, re.M)
        if not m:
            continue
        tot += int(m.group(1))
        c = re.search(r"^cmd:\s*(\S+)", text, re.M)
        t = re.search(r"^thread: (\d+)", text, re.M)
        if prog and c and c.group(1) == prog and t and t.group(1) == "1":
            main = int(m.group(1))
    if prog:
        check(main is not None, f"no callgrind file for {prog}'s main thread in {d}")
        return tot, main
    return tot


COST_SPECS = ["-A", "add@arg1,arg2", "-R", "add@retval", "-A", "six@arg1,arg2,arg3,arg4,arg5,arg6", "-R", "six@retval",
              "-A", "fd@fparg1,arg1", "-R", "fd@retval/f"]


def test_callgrind_unnamed_equal_named_add_cost():
    """skep29u_cost, N = 50,000 and 100,000 calls, instructions a call as
    the difference (callgrind): other() (never named) with and without
    specs naming add, six and fd must be within 2 instructions in the
    program's main thread (the writer's share varies with its wake-ups); add named -A add@arg1,arg2 -R
    add@retval over plain within the claimed +373, with 10% room (measured
    +364.1; six's 7 values +494, fd's +401 for information)."""
    prog = build_c("skep29u_cost", ["skep29u_cost.c"], flags=["-gdwarf-4", "-fnoxray-link-deps"])
    d = tmpdir()
    per = {}
    # the plain build's record: valgrind cannot run CI's ASan-built one
    plain = os.path.join(sfkit.ROOT, "build", "sftrace")
    if not os.access(plain, os.X_OK):
        raise sfkit.Skip("no plain build/sftrace")
    for fn in ("other", "add"):
        for label, extra in (("plain", []), ("spec", COST_SPECS)):
            # the writer thread by name (sfkit.CG_WRITER): auto hands off
            # on the measured thread under valgrind
            t = [callgrind_total([plain, "record", "-q", "--force", "-o", os.path.join(d, "x.log")] + sfkit.CG_WRITER +
                                 extra + ["--", prog, fn, str(n)], d, prog) for n in (50000, 100000)]
            per[fn, label] = (t[1][0] - t[0][0]) / 50000
            per[fn, label, "main"] = (t[1][1] - t[0][1]) / 50000
    diff_other = per["other", "spec", "main"] - per["other", "plain", "main"]
    diff_add = per["add", "spec"] - per["add", "plain"]
    check(abs(diff_other) < 2, f"unnamed other(), main thread: {per['other', 'plain', 'main']:.2f} plain, "
          f"{per['other', 'spec', 'main']:.2f} with specs")
    check(diff_add < 373 * 1.1, f"named add: +{diff_add:.1f} instructions a call")


# ---------------------------------------------------------------- registers

REGS_SPECS = [
    ["-A", "wide@arg1", "-R", "wide@retval"],
    ["-R", "wide@retval/x", "-R", "twod@retval/f", "-R", "mixret@retval", "-R", "ldret@retval/f", "-R", "ldarg@retval/f",
     "-R", "allregs@retval/f", "-R", "vadd@retval/f", "-R", "sret@retval"],
    ["-A", "twod@fparg1", "-A", "mixret@arg1", "-A", "ldret@arg1", "-A", "ldarg@arg1", "-A", "allregs@arg1",
     "-A", "vadd@arg1", "-A", "sret@arg1"],
    ["-A", "allregs@fparg8,arg6", "-A", "vadd@fparg1,fparg2", "-A", "sret@arg2,arg3"],
    ["-A", "twod@fparg1", "-R", "twod@retval/f", "-A", "mixret@arg1", "-R", "mixret@retval", "-A", "ldret@arg1",
     "-R", "ldret@retval", "-A", "vadd@arg1", "-R", "vadd@retval/f", "-A", "ldarg@arg1", "-R", "ldarg@retval"],
    ["--auto-args"],
]


def regs():
    return build_c("skep29u_regs", ["skep29u_regs.c"])


def test_small_specs_leave_other_registers_alone():
    """skep29u_regs: functions named by one- or two-value specs (the
    per-shape path, no registers pushed) that return in rax:rdx
    (__int128), xmm0:xmm1, rax:xmm0, st(0) (long double), ymm (AVX, when
    the CPU has it), memory (sret), or take registers the spec does not
    read (6 ints + 8 doubles, a long double on the stack): 1,000 calls
    each; untraced prints checksums; traced under six spec sets (and
    --auto-args), the same checksums."""
    prog = regs()
    plain = run([prog]).stdout
    for specs in REGS_SPECS:
        p, _ = record([prog], args=["-q", "--force"] + specs)
        eq(p.stdout, plain, " ".join(specs))


ALLREGS_WANT = ("allregs(0, 1, 2, 3, 4, 5, 0.500000, 1.500000, 2.500000, 3.500000, 4.500000, 5.500000, 6.500000, "
                "7.500000) = 256.000000;")


def test_auto_args_fourteen_register_parameters():
    """skep29u_regs under --auto-args: allregs(i, i+1, .., i+5, 0.5, 1.5,
    .., 6.5, 7.5 + i): its first call must show all 14 parameters (or a
    mark for each that is not recorded)."""
    prog = regs()
    p, log = record([prog], args=["-q", "--auto-args"])
    got = [x for x in replay_lines(log) if x.startswith("allregs(")]
    eq(got[0], ALLREGS_WANT, "allregs's first call")


def test_specs_adding_up_past_twelve_values():
    """The same 14 registers named by one spec, and by two specs that add
    up: all 14 recorded either way (every argument register a spec may
    name fits one call's SF_ARG_MAX_ITEMS, 24; h29max: before, one spec
    of 14 was refused and two were cut to 12 silently). Past the limit a
    spec is refused with a line naming it."""
    prog = regs()
    every = "allregs@arg1,arg2,arg3,arg4,arg5,arg6,fparg1,fparg2,fparg3,fparg4,fparg5,fparg6,fparg7,fparg8"
    log = os.path.join(tmpdir(), "x.log")
    run([SFTRACE, "record", "-q", "-o", log, "-A", every, "-R", "allregs@retval/f", "--", prog])
    got = [x for x in replay_lines(log) if x.startswith("allregs(")]
    eq(got[0], ALLREGS_WANT, "one spec of 14: allregs's first call")
    log = os.path.join(tmpdir(), "y.log")
    p = run([SFTRACE, "record", "-q", "-o", log, "-A", "allregs@arg1,arg2,arg3,arg4,arg5,arg6,fparg1,fparg2,fparg3,"
             "fparg4,fparg5,fparg6", "-A", "allregs@fparg7,fparg8", "-R", "allregs@retval/f", "--", prog])
    eq(p.stderr, "", "two specs adding up to 14")
    got = [x for x in replay_lines(log) if x.startswith("allregs(")]
    eq(got[0], ALLREGS_WANT, "two specs: allregs's first call")
    many = "allregs@" + ",".join(["arg1"] * 25)
    bad = run([SFTRACE, "record", "-q", "-o", os.path.join(tmpdir(), "z.log"), "-A", many, "--", prog], check_rc=2)
    eq(bad.stderr.strip().count("\n"), 0, "one line")
    check("more than 24 values" in bad.stderr and many in bad.stderr, bad.stderr)


def test_pause_resume_inside_named_calls():
    """skep29u_pause under record --paused: outer(1) resumes tracing inside
    itself, outer(2) pauses it, outer(4) resumes it again; outer(k) =
    inner(k) + 1 = 10k + 1. The frames cut by a pause or resume must not
    take another call's values: replay shows outer(5) and outer(6) whole
    with their values, outer(2) in flight, the exits of outer(1) and
    outer(4) (entered paused) dropped, not given to outer(2)."""
    prog = build_c("skep29u_pause", ["skep29u_pause.c"])
    eq(run([prog, "/bin/true"]).stdout, "217\n")
    # the program runs `sftrace pause/resume` with the runtime preloaded:
    # CI's ASan-built CLI must be told that is fine
    p, log = record([prog, SFTRACE], args=["-q", "--paused", "-A", "outer@arg1/i", "-R", "outer@retval/i",
                                           "-A", "inner@arg1/i", "-R", "inner@retval/i"],
                    env={"ASAN_OPTIONS": "verify_asan_link_order=0"})
    eq(p.stdout, "217\n")
    got = [x for x in replay_lines(log) if not x.startswith("/*")]
    eq(got, ["inner(1) = 10;", "outer(5) {", "inner(5) = 50;", "} = 51; /* outer */", "outer(2);", "inner(4) = 40;",
             "outer(6) {", "inner(6) = 60;", "} = 61; /* outer */"])


def test_daemon_dlopens_named_library():
    """skep29u_daemon: double fork, setsid, chdir("/"), umask 0, every fd
    closed with close_range, stdio on /dev/null, then dlopen of
    skep29u_libdm.so and 1,000 calls of dm_work(i, "abc"/"xyz"), named by
    -A/-R; untraced writes 999500 to a file; traced the same, and the
    daemon's log has all 1,000 calls with their values."""
    lib = build_c("libskep29u_dm.so", ["skep29u_libdm.c"], shared=True)
    prog = build_c("skep29u_daemon", ["skep29u_daemon.c"], libs=["-ldl"])
    d = tmpdir()
    res = os.path.join(d, "res")
    run([prog, lib, res])
    with open(res) as f:
        eq(f.read(), "999500\n")
    os.unlink(res)
    tr = os.path.join(d, "tr")
    record([prog, lib, res], out=os.path.join(tr, "sf.log"),
           args=["-q", "-A", "dm_work@arg1/i,arg2/s", "-R", "dm_work@retval/i"])
    with open(res) as f:
        eq(f.read(), "999500\n")
    got = [x for x in replay_lines(tr) if x.startswith("dm_work(")]
    want = [f'dm_work({i}, "{"xyz" if i & 1 else "abc"}") = {2 * i + (i & 1)};' for i in range(1000)]
    eq(got, want)


SQ_SPECS = ["-A", "sqlite3_prepare_v2@arg2/s,arg3/i32", "-R", "sqlite3_prepare_v2@retval/i32",
            "-A", "sqlite3_bind_int64@arg2/i32,arg3/i", "-R", "sqlite3_bind_int64@retval/i32",
            "-A", "sqlite3_bind_double@arg2/i32,fparg1", "-R", "sqlite3_bind_double@retval/i32",
            "-A", "sqlite3_bind_text@arg2/i32,arg3/s,arg4/i32", "-R", "sqlite3_bind_text@retval/i32",
            "-R", "sqlite3_step@retval/i32", "-R", "sqlite3_column_int64@retval/i", "-R", "sqlite3_column_double@retval/f"]
SQ_Q = ("select name, group_concat(value, '|') from (select f.frame_id, f.start_ns, f.name, a.value from frames f "
        "join args a using (frame_id) where f.depth = 1 and f.name like 'sqlite3_%' order by f.start_ns, f.frame_id, "
        "a.\"index\") group by frame_id order by start_ns, frame_id")
SQ_CALLS = ("sqlite3_bind_int64", "sqlite3_bind_double", "sqlite3_bind_text", "sqlite3_step", "sqlite3_column_int64",
            "sqlite3_column_double")


def sqlite_client():
    cands = [os.environ.get("SQLITE_C", ""), os.path.join(sfkit.ROOT, "bench/build/sqlite/package/deps/sqlite3/sqlite3.c"),
             "/work/main/bench/build/sqlite/package/deps/sqlite3/sqlite3.c"]
    sq = next((c for c in cands if c and os.path.exists(c)), None)
    if not sq:
        raise sfkit.Skip("no SQLite amalgamation (SQLITE_C=...)")
    return build_c("skep29u_sqlite", ["skep29u_sqlite.c", sq],
                   flags=["-I" + os.path.dirname(sq), "-DSQLITE_THREADSAFE=0", "-DSQLITE_OMIT_LOAD_EXTENSION",
                          "-fnoxray-link-deps"], libs=["-lm"])


def sqlite_want(plain, budget, ret_text):
    def shown_(t):
        return f'"{t}"' if len(t) < budget else f'"{t[:budget]}"...'
    want = []
    for line in plain.splitlines():
        w = line.split()
        if w[0] == "bind_int64":
            want.append(("sqlite3_bind_int64", f"1|{w[2]}|{w[4]}"))
        elif w[0] == "bind_double":
            want.append(("sqlite3_bind_double", f"2|{w[2]}|{w[4]}"))
        elif w[0] == "bind_text":
            txt, ln = (w[2], w[3]) if len(w) == 6 else ("", w[2])
            want.append(("sqlite3_bind_text", f"3|{shown_(txt)}|{ln}|{ret_text}"))
        elif w[0] == "step":
            want.append(("sqlite3_step", w[1]))
        elif w[0] == "row":
            want += [("sqlite3_step", "100"), ("sqlite3_column_int64", w[1]), ("sqlite3_column_double", w[2])]
    return want


def test_sqlite_own_client_specs_and_auto_args():
    """skep29u_sqlite, a client of its own linked with the SQLite
    amalgamation built with XRay: 400 rows bound with integers at the
    edges (LLONG_MIN, LLONG_MAX, 2^32, ...), doubles and texts of 0..80
    bytes (length -1 and explicit), then a select read back with
    column_int64/column_double; untraced prints every call and its result.
    Traced with -A/-R on prepare, bind_*, step and column_*, then with
    --auto-args: output unchanged, and query's args table (depth-1 calls,
    values by index) equals the program's lines: 1,604 calls. bind_text
    ends by a tail call: its return value is <unrecorded>, as documented."""
    prog = sqlite_client()
    plain = run([prog]).stdout
    for specs, budget in ((SQ_SPECS, 64), (["--auto-args"], 16)):
        p, log = record([prog], args=["-q"] + specs)
        eq(p.stdout, plain, " ".join(specs))
        rows = [x.split("\t") for x in run([SFTRACE, "query", log, SQ_Q]).stdout.splitlines()[1:]]
        if budget == 16:  # --auto-args: drop the statement pointer (and bind_text's destructor, column's index)
            def strip(r):
                v = r[1].split("|")
                if r[0] in ("sqlite3_column_int64", "sqlite3_column_double"):
                    v = v[2:]
                elif r[0] == "sqlite3_bind_text":
                    v = v[1:4] + v[5:]
                else:
                    v = v[1:]
                return [r[0], "|".join(v)]
            rows = [strip(r) for r in rows]
        got = [(r[0], r[1]) for r in rows if r[0] in SQ_CALLS]
        want = sqlite_want(plain, budget, "<unrecorded>")
        check(got == want, f"{specs[0]}: {first_diff(got, want)}")
        prep = [r[1] for r in rows if r[0] == "sqlite3_prepare_v2"]
        check(prep and prep[0].startswith('"insert into t va') and "|-1|" in prep[0] + "|", str(prep))


def flood_check(log):
    """Per thread, every tw ENTRY has its args, every EXIT its return value,
    and the return value is arg1 * 1000003 + arg2. Returns (entries,
    exits, bad)."""
    out = subprocess.run([SFTRACE, "dump", log], capture_output=True, text=True).stdout
    args, pend, rp = {}, {}, {}
    ent = ex = bad = 0
    for line in out.splitlines():
        w = line.split()
        if len(w) < 4 or w[3] != "tw" and not (len(w) > 4 and w[2] == "ARGS" and w[3] == "tw"):
            continue
        tid, kind = w[1], w[2]
        if kind == "ARGS":
            if w[4].startswith("arg1="):
                args[tid] = (int(w[4][5:]), int(w[5][5:]))
                pend[tid] = True
            else:
                a = args.get(tid)
                if not a or int(w[4][7:]) != a[0] * 1000003 + a[1]:
                    bad += 1
                rp[tid] = True
        elif kind == "ENTRY":
            ent += 1
            bad += 0 if pend.pop(tid, False) else 1
        elif kind == "EXIT":
            ex += 1
            bad += 0 if rp.pop(tid, False) else 1
    return ent, ex, bad


def test_flood_and_budget():
    """skep29u_proc flood 4 250000: four threads call tw (named -A/-R) as
    fast as they can, 1,000,000 calls: every call in the log with its
    values right; then with --max-size 2M (recording stops when the budget
    is used up, the program runs on): output unchanged, and of the calls
    kept none without its values or with another's (a frame open at the
    cut has no return value: entries - exits <= 4)."""
    prog = build_c("skep29u_proc", ["skep29u_proc.c"], libs=["-lpthread"])
    plain = run([prog, "flood", "4", "250000"]).stdout
    specs = ["-q", "-A", "tw@arg1/i,arg2/i", "-R", "tw@retval/i"]
    p, log = record([prog, "flood", "4", "250000"], args=specs)
    eq(p.stdout, plain)
    eq(flood_check(log), (1000000, 1000000, 0), "entries, exits, bad")
    p, log = record([prog, "flood", "4", "250000"], args=specs + ["--max-size", "2M"])
    eq(p.stdout, plain)
    ent, ex, bad = flood_check(log)
    check(ent > 1000 and 0 <= ent - ex <= 4 and bad == 0, f"budget: {ent} entries, {ex} exits, {bad} bad")


if __name__ == "__main__":
    sfkit.main(globals())
