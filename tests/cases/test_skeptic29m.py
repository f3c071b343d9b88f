"""Skeptic's pass 29m on issue 29 (arguments and return values: -A/-R,
--auto-args, and their outputs): programs written to break the claims
(fixtures tests/fixtures/skep29m_*), not taken from the developers' tests.
A case that found a break skips as a known break until it is fixed; the
others show a claim held under that attack.

Runs under tests/run.py."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sfkit  # noqa: E402

_logs = {}
MARKS = ("<unrecorded>", "<optimized out>")


def _auto_log(key, build):
    """A --auto-args recording of the fixture BUILD() makes, once per run."""
    if key not in _logs:
        prog = build()
        want = sfkit.run([prog]).stdout
        p, log = sfkit.record([prog], args=["-q", "-a"])
        sfkit.eq(p.stdout, want, "program output under --auto-args")
        _logs[key] = log
    return _logs[key]


def _rust_log():
    return _auto_log("rs", lambda: sfkit.rust_fixture("skep29m_rs"))


def _dead_log():
    return _auto_log("dead", lambda: sfkit.build_c("skep29m_dead", ["skep29m_dead.c"]))


def _args(log, func_like):
    """(frame_id, name, value) rows of query's args table for the frames of
    the functions whose name is LIKE func_like, in order."""
    p = sfkit.run([sfkit.SFTRACE, "query", log,
                   "select a.frame_id, a.name, a.value from args a join frames f using (frame_id) "
                   f"where f.name like '{func_like}' order by a.frame_id, a.\"index\""])
    return [tuple(ln.split("\t")) for ln in p.stdout.splitlines()[1:]]


def _lines(log, word):
    return [c.strip() for c in sfkit.call_column(sfkit.replay_text(log)) if word in c]


def test_rust_nocall_dead_return_value_not_invented():
    log = _rust_log()
    lines = _lines(log, "skep29m_rs::compute(")
    sfkit.eq(len(lines), 3, f"compute calls: {lines}")
    for x, line in zip((10, 11, 12), lines):
        # the source's value, a mark, or no value at all: never a register's leftover
        ok = (f"compute({x});", f"compute({x}) = {7 * x};", f"compute({x}) = <unrecorded>;")
        sfkit.check(line.endswith(ok), f"compute({x}) shown as {line!r}")


def test_rust_nocall_str_return_not_invented():
    log = _rust_log()
    rows = [r for r in _args(log, "%strret%") if r[1] == "retval"]
    sfkit.eq(len(rows), 1, f"strret's return value rows: {rows}")
    sfkit.check(rows[0][2] in ('"hello"',) + MARKS, f"strret(5)'s return value shown as {rows[0][2]!r}")


def test_rust_closure_parameters_from_their_registers():
    log = _rust_log()
    lines = _lines(log, "skep29m_rs::main::{closure}(")
    sfkit.eq(len(lines), 1, f"closure calls: {lines}")
    rows = [r for r in _args(log, "skep29m_rs::main::{closure#0}") if r[1] != "retval"]
    vals = [v for _, _, v in rows]
    sfkit.eq(len(vals), 2, f"closure argument rows {rows}")
    for want, got in zip(("3", "4"), vals):
        sfkit.check(got in (want,) + MARKS, f"closure called (3, 4) shown as {lines[0]!r}")


def _dead_values(fn, want):
    log = _dead_log()
    rows = _args(log, fn)
    got = [v for _, _, v in rows]
    sfkit.eq(len(got), len(want), f"{fn} values {rows}")
    bad = [(r[1], r[2]) for r, w in zip(rows, want) if r[2] != w and r[2] not in MARKS]
    sfkit.eq(bad, [], f"{fn}'s values that are neither the call's nor a mark ({_lines(log, fn + '(')})")


def test_c_optimized_out_parameters_not_invented():
    # Was: after(1, 140726670630312, 140726670630328, 93840536832704,
    # 93840536844928, {6, 7}): b-e have no DW_AT_location (optimized out),
    # the caller leaves their registers unset.
    _dead_values("after", ["1", "2", "3", "4", "5", "{6, 7}", "14"])


def test_c_unused_struct_in_memory_not_invented():
    _dead_values("after2", ["1", "2", "3", "4", "5", "{6, 7}", "8", "9"])


def _chrome_args(log, func):
    out = os.path.join(sfkit.tmpdir(), "t.json")
    sfkit.run([sfkit.SFTRACE, "convert", "-q", "-t", "chrome", "-o", out, log])
    with open(out) as f:
        data = json.load(f)
    evs = data["traceEvents"] if isinstance(data, dict) else data
    got = []
    for e in evs:
        if e.get("name") == func and e.get("ph") in ("B", "X"):
            got.append({k: v for k, v in (e.get("args") or {}).items() if k not in ("function", "src")})
    return got


def _perfetto_args(log, func):
    tp = os.path.join(os.path.dirname(sfkit.ROOT), "shared", "tools", "trace_processor_shell")
    if not os.path.exists(tp):
        tp = "/work/shared/tools/trace_processor_shell"
    if not os.path.exists(tp):
        return None
    d = sfkit.tmpdir()
    pb, sql = os.path.join(d, "t.pb"), os.path.join(d, "q.sql")
    sfkit.run([sfkit.SFTRACE, "convert", "-q", "-o", pb, log])
    with open(sql, "w") as f:
        f.write("select count(*) from slice s join args a using (arg_set_id) "
                f"where s.name = '{func}' and a.key like 'debug.%' and a.key != 'debug.function';")
    p = sfkit.run([tp, "-q", sql, pb])
    return int(p.stdout.splitlines()[-1])


def test_perfetto_and_chrome_keep_every_value():
    log = _dead_log()
    rows = _args(log, "wide")
    per_call = [r for r in rows if r[0] == rows[0][0]]
    sfkit.eq([v for _, _, v in per_call], ["1", "<optimized out>", "<optimized out>", "7", "38"], "query's wide")
    chrome = _chrome_args(log, "wide")
    sfkit.eq(len(chrome), 2, f"chrome wide events {chrome}")
    sfkit.eq(len(chrome[0]), len(per_call), f"Chrome args of wide's first call {chrome[0]}")
    n = _perfetto_args(log, "wide")
    if n is not None:
        sfkit.eq(n, 2 * len(per_call), "trace_processor's args rows for wide's two calls")


def test_held_optimized_out_constants_and_resigned_registers():
    # wide(a, b, c, d) with b, c constant at every call: clang drops them,
    # and d comes in esi; --auto-args reads d from there (held).
    log = _dead_log()
    sfkit.eq(_lines(log, "wide("), ["wide(1, <optimized out>, <optimized out>, 7) = 38;",
                                    "wide(2, <optimized out>, <optimized out>, 8) = 40;"], "wide at -O2")


def test_c_byte_integers_as_numbers():
    log = _auto_log("u8", lambda: sfkit.build_c("skep29m_u8", ["skep29m_u8.c"]))
    got = [c for c in _lines(log, "(") if not c.startswith(("main", "}"))]
    sfkit.eq(got, ["low(1793) = 224;", "neg8(-100) = 100;", "upper('a') = 'A';"], "byte integers and a char")


HELD_SPECS = ["-A", "tailer@arg1", "-R", "tailer@retval", "-A", "leaf@arg1", "-R", "leaf@retval",
              "-A", "jumper@arg1", "-R", "jumper@retval", "-A", "f@arg1/i", "-R", "f@retval/i",
              "-A", "first@arg1/s", "-R", "first@retval/c"]


def test_held_tail_longjmp_signal_guard_page_threads():
    prog = sfkit.build_c("skep29m_held", ["skep29m_held.c"], libs=["-lpthread"])
    p, log = sfkit.record([prog], args=["-q"] + HELD_SPECS)
    sfkit.eq(p.stdout, "630352 -19\n", "program output")
    calls = [c.strip() for c in sfkit.call_column(sfkit.replay_text(log))]
    main = calls[:calls.index("} /* main */") + 1] if "} /* main */" in calls else calls
    main = [c for c in main if not c.startswith("thr(") and "thr */" not in c]
    sfkit.eq(main[:14], [
        "main() {",
        "tailer(4) = <tail call>;",                      # its value is leaf's, not invented
        "leaf(5) = 15; /* tail call from tailer */",
        "jumper(7);",                                    # left by longjmp: no return value
        "/* 1 frame unwound */",
        "jumper(-1) = 4;",
        "f(1) = 3;",
        "handler() {",
        "f(-10) = -19;",
        "} /* handler */",
        "f(2) = 5;",
        'first("edge") = \'e\';',
        'first("gey"...) = \'g\';',                      # unterminated before a PROT_NONE page
        'first("y"...) = \'y\';',
    ], "main thread")
    q = sfkit.run([sfkit.SFTRACE, "query", log,
                   "select count(*), sum(cast(r.value as integer) = 2 * cast(a.value as integer) + 1) "
                   "from frames f join args a on a.frame_id = f.frame_id and a.name = 'arg1' "
                   "join args r on r.frame_id = f.frame_id and r.name = 'retval' where f.name = 'f'"])
    sfkit.eq(q.stdout.splitlines()[1], "303\t303", "f's values on every thread (3 x 100 + 3)")


def test_spec_func_with_parameter_list():
    prog = sfkit.build_c("skep29m_ov", ["skep29m_ov.cc"], compiler="clang++")
    p, log = sfkit.record([prog], args=["-q", "-A", "ov(int)@arg1", "-A", "ns::K::add(int, int) const@arg2,arg3"])
    sfkit.eq(p.stdout, "135\n", "program output")
    sfkit.eq(p.stderr, "", "record's warnings")
    got = [c.strip() for c in sfkit.call_column(sfkit.replay_text(log)) if "(" in c and not c.strip().startswith(("main", "}"))]
    sfkit.eq(got, ["ov(7);", "ov();", "ns::K::add(5, 6);"], "values of the functions named with their parameters")


def _a64_auto_replay(src):
    """--auto-args on aarch64 under qemu-user, the runtime preloaded by hand
    (README, "aarch64"), with the args file `sftrace filter --args` makes."""
    rt = os.path.join(sfkit.ROOT, "build-aarch64", "libsftrace.so")
    qemu = shutil.which("qemu-aarch64")
    if not os.path.exists(rt) or not qemu:
        raise sfkit.Skip("needs build-aarch64/libsftrace.so (make ARCH=aarch64) and qemu-aarch64")
    d = sfkit.tmpdir()
    prog = os.path.join(d, "prog")
    p = sfkit.run(["clang", "--target=aarch64-linux-gnu", "-fxray-instrument", "-fxray-instruction-threshold=1",
                   "-fnoxray-link-deps", "-g", "-O2", "-o", prog, os.path.join(sfkit.FIXTURES, src)], check_rc=None)
    if p.returncode != 0:
        raise sfkit.Skip(f"no aarch64 cross toolchain: {p.stderr[:200]}")
    specs, args, log = (os.path.join(d, n) for n in ("specs", "prog.args", "sf.log"))
    with open(specs, "w") as f:
        f.write("sftrace-args-specs 1\n--auto-args\n")
    sfkit.run([sfkit.SFTRACE, "filter", "-q", "--args", specs, "-p", prog, "-o", args])
    out = sfkit.run([qemu, "-E", "LD_PRELOAD=" + rt, "-E", "SFTRACE_OUTPUT_FILE=" + log,
                     "-E", "SFTRACE_ARGS=" + args, prog], timeout=60).stdout
    return out, [c.strip() for c in sfkit.call_column(sfkit.replay_text(log))]


def test_aarch64_parameters_past_x5_marked():
    out, calls = _a64_auto_replay("skep29m_a64.c")
    sfkit.eq(out, "56\n", "program output under qemu")
    got = [c for c in calls if c.startswith(("seven(", "five_s("))]
    sfkit.eq(len(got), 2, f"calls {calls}")
    seven = got[0].split(") = ")[0][len("seven("):].split(", ")
    sfkit.eq(len(seven), 7, f"seven's values in {got[0]!r}")
    sfkit.check(seven[6] in ("7", "<unrecorded>"), got[0])
    sfkit.check(got[1] in ("five_s(1, 2, 3, 4, 5, {6, 7}) = 28;", "five_s(1, 2, 3, 4, 5, <unrecorded>) = 28;"),
                f"five_s shown as {got[1]!r}")


def test_rust_resigned_without_nocall():
    log = _auto_log("rs2", lambda: sfkit.rust_fixture("skep29m_rs2"))
    rows = _args(log, "skep29m_rs2::bs")
    vals = {n: v for _, n, v in rows}
    sfkit.eq(vals.get("retval"), "14", f"bs's return value {rows}")
    shown = [v for _, n, v in rows if n != "retval"]
    sfkit.eq(len(shown), 2, f"bs's argument values {rows}")
    sfkit.check(shown[0] in ('"\\x01\\x02zz"',) + MARKS, f"bs's b shown as {shown[0]!r}")
    sfkit.check(shown[1] in ("10",) + MARKS, f"bs's n (in rsi) shown as {shown[1]!r}")
    rows = _args(log, "skep29m_rs2::sref")
    arg = [v for _, n, v in rows if n != "retval"]
    sfkit.check(len(arg) == 1 and arg[0] in MARKS, f"sref's &String (not passed: its length is) shown as {rows}")


def test_utf8_string_values_kept():
    log = _auto_log("utf8", lambda: sfkit.rust_fixture("skep29m_utf8"))
    got = [c for c in _lines(log, "skep29m_utf8::greet(")]
    sfkit.eq(got, ['skep29m_utf8::greet("héllo", 3) = 5;', 'skep29m_utf8::greet("日本", 1) = 7;'], "replay")
    rows = [v for _, n, v in _args(log, "skep29m_utf8::greet") if n != "retval" and v.startswith('"')]
    sfkit.eq(rows, ['"héllo"', '"日本"'], "query's args")


def test_aarch64_struct_in_two_x_registers_then_an_argument():
    out, calls = _a64_auto_replay("skep29m_a64s.c")
    sfkit.eq(out, "30.000000\n", "program output under qemu")
    got = [c for c in calls if c.startswith(("t1(", "t3(", "t4("))]
    sfkit.eq(got, ["t1({-1, 0.500000, 9}, 0.250000) = 8.750000;", "t3({-1, 0.500000, 9}, 4) = 12.500000;",
                   "t4(0.250000, {-1, 0.500000, 9}) = 8.750000;"], "aarch64 struct values")


def test_packed_struct_in_memory_read():
    log = _auto_log("packed", lambda: sfkit.build_c("skep29m_packed", ["skep29m_packed.c"]))
    got = [c for c in _lines(log, "(") if c.startswith(("p16(", "p24("))]
    sfkit.eq(len(got), 2, f"calls {got}")
    # the members as replay shows a struct's ({'a', 1000, then d's seven bytes})
    sfkit.check(got[0].startswith("p16({'a', 1000, ") and got[0].endswith("}, 1) = 1098;"), f"p16 shown as {got[0]!r}")
    sfkit.check(got[1].startswith("p24({'c', 3000, 4000, ") and got[1].endswith("}, 3) = 7102;"),
                f"p24 shown as {got[1]!r}")


def _callgrind_calls(path):
    """Calls per callee name in a callgrind output file."""
    import collections
    import re
    names, calls, cur = {}, collections.Counter(), None
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                cur = names.get(m.group(2)) if m.group(1) == "cfn" else None
                continue
            m = re.match(r"^calls=(\d+)", line)
            if m and cur:
                calls[cur] += int(m.group(1))
                cur = None
    return calls


def test_exit_without_values_keeps_the_plain_path():
    vg = shutil.which("valgrind")
    if not vg:
        raise sfkit.Skip("needs valgrind")
    prog = sfkit.build_c("skep29m_cost", ["skep29m_cost.c"])
    out = os.path.join(sfkit.tmpdir(), "cg.out")
    p, log = sfkit.record([vg, "--tool=callgrind", "--smc-check=all", "--callgrind-out-file=" + out, prog],
                          args=["-q", "-A", "g@arg1"])
    sfkit.eq(p.stdout, "199990000\n", "program output")
    calls = _callgrind_calls(out)
    got = {k: calls[k] for k in ("sf_tramp_entry_args", "sf_tramp_exit_args")}
    sfkit.eq(got, {"sf_tramp_entry_args": 20000, "sf_tramp_exit_args": 0}, "args trampolines taken by g's 20000 calls")
