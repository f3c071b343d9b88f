"""record -A/-R (issue 29): arguments and return values of chosen
functions, by spec in uftrace's syntax, with exact values in replay, dump,
Perfetto (trace_processor's args table), Parquet (OUT.args) and query.
tests/fixtures/args_prog.c calls add(3, 4), greet("world"), scale(1.5, 4),
probe() with an unmapped pointer, a string cut by an unmapped page and NULL,
and mix('A', 42, -5, 2.5f)."""
import csv
import io
import os
import re

from sfkit import ROOT, RUNTIME, SFTRACE, Skip, build_c, check, eq, parquet_query, record, run, tmpdir

# mix's arg2 twice (/u, then /x): the later replaces the earlier, in its
# place, as uftrace does: one value per argument.
SPECS = ["-A", "add@arg1,arg2", "-R", "add@retval", "-A", "greet@arg1/s", "-A", "scale@fparg1,arg1",
         "-R", "scale@retval/f", "-A", "probe@arg1/s",
         "-A", "mix@arg1/c,arg2/u,arg3/i32,fparg1/f32,arg2/x", "-R", "mix@retval/i"]
PROGRAM_OUT = "7 world 6.000000 1 1 0 104\n"


def fixture():
    return build_c("args_prog", ["args_prog.c"])


def recorded(specs=SPECS):
    p, log = record([fixture()], args=["-q"] + specs)
    eq(p.stdout, PROGRAM_OUT, "the program's output is unchanged")
    return log


def replay_calls(log):
    """replay's FUNCTION column, without the durations and tids."""
    out = run([SFTRACE, "replay", "--no-pager", log]).stdout
    # past the header lines ("# times net of ...", "# DURATION ...")
    return [line.split("| ", 1)[1] for line in out.splitlines() if not line.startswith("#")]


def replay_first_call(log):
    """replay_calls(log)[0], reading the rest of replay's output in binary
    chunks and dropping it: a 30,000-deep window replays as 1.8 GB of
    indentation (as text lines in Python: a minute)."""
    import subprocess
    p = subprocess.Popen([SFTRACE, "replay", "--no-pager", log], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = None
    for line in p.stdout:
        if not line.startswith(b"#"):
            first = line.decode(errors="replace").rstrip("\n").split("| ", 1)[1]
            break
    while p.stdout.read(1 << 20):
        pass
    err = p.stderr.read()
    eq(p.wait(), 0, f"replay's status ({err[-500:]!r})")
    return first


def test_replay_by_spec():
    eq(replay_calls(recorded()), [
        "main() {",
        "  add(3, 4) = 7;",
        "  greet(\"world\");",
        "  scale(1.500000, 4) = 6.000000;",
        "  probe(<unreadable>);",
        "  probe(\"abc\"...);",
        "  probe((null));",
        "  mix('A', 0x2a, -5, 2.500000) = 104;",
        "} /* main */",
    ], "replay")


def test_string_return_value():
    log = recorded(["-A", "greet@arg1/s", "-R", "greet@retval/s"])
    eq(replay_calls(log), ["main() {", "  add();", "  greet(\"world\") = \"world\";", "  scale();", "  probe();",
                           "  probe();", "  probe();", "  mix();", "} /* main */"], "replay")


def test_unnamed_functions_record_as_before():
    # Only add is named: every other function's events are the plain ones,
    # and add's entry and exit are each preceded by one ARGS event.
    log = recorded(["-A", "add@arg1,arg2", "-R", "add@retval"])
    kinds = [line.split()[2:4] for line in run([SFTRACE, "dump", log]).stdout.split("\nevents:\n", 1)[1]
             .splitlines()[1:] if re.match(r"^\s*\d+\s+\d+\s+[A-Z]+", line)]
    eq(kinds, [["ENTRY", "main"], ["ARGS", "add"], ["ENTRY", "add"], ["ARGS", "add"], ["EXIT", "add"],
               ["ENTRY", "greet"], ["EXIT", "greet"], ["ENTRY", "scale"], ["EXIT", "scale"],
               ["ENTRY", "probe"], ["EXIT", "probe"], ["ENTRY", "probe"], ["EXIT", "probe"],
               ["ENTRY", "probe"], ["EXIT", "probe"], ["ENTRY", "mix"], ["EXIT", "mix"], ["EXIT", "main"]],
       "events")


def test_dump_shows_values():
    out = run([SFTRACE, "dump", recorded()]).stdout
    got = [re.sub(r"^\s*\d+\s+\d+\s+ARGS\s+", "", line) for line in out.splitlines() if " ARGS " in line]
    eq(got, ["add arg1=3 arg2=4", "add retval=7", "greet arg1=\"world\"", "scale fparg1=1.500000 arg1=4",
             "scale retval=6.000000", "probe arg1=<unreadable>", "probe arg1=\"abc\"...", "probe arg1=(null)",
             "mix arg1='A' arg2=0x2a arg3=-5 fparg1=2.500000", "mix retval=104"], "dump")


EXPECTED_ROWS = [
    ("add", 0, "arg1", "3"), ("add", 1, "arg2", "4"), ("add", 2, "retval", "7"),
    ("greet", 0, "arg1", "\"world\""),
    ("scale", 0, "fparg1", "1.500000"), ("scale", 1, "arg1", "4"), ("scale", 2, "retval", "6.000000"),
    ("probe", 0, "arg1", "<unreadable>"), ("probe", 0, "arg1", "\"abc\"..."), ("probe", 0, "arg1", "(null)"),
    ("mix", 0, "arg1", "'A'"), ("mix", 1, "arg2", "0x2a"), ("mix", 2, "arg3", "-5"), ("mix", 3, "fparg1", "2.500000"),
    ("mix", 4, "retval", "104"),
]


def test_query_args_table():
    log = recorded()
    out = run([SFTRACE, "query", "--format", "csv", log,
               "select f.name, a.\"index\", a.name, a.value from args a join frames f using (frame_id) "
               "order by f.start_ns, a.\"index\""]).stdout
    rows = [(r[0], int(r[1]), r[2], r[3]) for r in list(csv.reader(io.StringIO(out)))[1:]]
    eq(rows, EXPECTED_ROWS, "query's args")
    # A recording without values has an empty args table.
    p, plain = record([fixture()], args=["-q"])
    eq(run([SFTRACE, "query", plain, "select count(*) from args"]).stdout, "count(*)\n0\n", "no values")


def test_parquet_args():
    log = recorded()
    out = os.path.join(tmpdir(), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    got = parquet_query("args_query.mjs", out)
    eq(got["types"], {"frame_id": "DataType(UInt64)", "index": "DataType(UInt32)", "name": "DataType(String)",
                      "value": "DataType(String)"}, "types")
    eq(got["rows"], [f"{f} {i} {n} {v}" for f, i, n, v in EXPECTED_ROWS], "OUT.args rows")
    eq(got["duckdb"], len(EXPECTED_ROWS), "DuckDB's count")
    # Without values, no OUT.args file.
    p, plain = record([fixture()], args=["-q"])
    out2 = os.path.join(tmpdir(), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", plain, "-o", out2])
    check(not os.path.exists(out2 + ".args"), "OUT.args without values")


def perfetto_args(log):
    """(slice, key, value) of every debug arg trace_processor reads from the
    Perfetto conversion of log, in slice and arg order."""
    tp = os.environ.get("SFTRACE_TRACE_PROCESSOR") or os.path.join(os.path.dirname(ROOT), "shared", "tools",
                                                                    "trace_processor_shell")
    if not os.access(tp, os.X_OK):
        raise Skip(f"Perfetto's trace_processor_shell not found at {tp}")
    pb = os.path.join(tmpdir(), "sf.pb")
    run([SFTRACE, "convert", log, "-o", pb])
    q = pb + ".sql"
    with open(q, "w") as f:
        f.write("select s.name as fn, substr(a.key, 7) as k, replace(a.display_value, '\"', '#') as v from slice s "
                "join args a using (arg_set_id) where a.key like 'debug.%' order by s.ts, a.id;\n")
    # (trace_processor's CSV does not double the quotes inside a value.)
    return [(r["fn"], r["k"], r["v"].replace("#", '"'))
            for r in csv.DictReader(io.StringIO(run([tp, "-q", q, pb]).stdout))]


def test_perfetto_args():
    rows = perfetto_args(recorded())
    want = [(f, n, v) for f, _, n, v in EXPECTED_ROWS]
    eq(sorted(rows), sorted(want), "trace_processor's args")


def test_chrome_args():
    # Chrome JSON carries the same values as the Perfetto output: each
    # slice's args, by python's json and by trace_processor's JSON importer.
    import json
    log = recorded()
    out = os.path.join(tmpdir(), "sf.json")
    run([SFTRACE, "convert", "--type", "chrome", log, "-o", out])
    with open(out) as f:
        xs = sorted((e for e in json.load(f)["traceEvents"] if e["ph"] == "X"), key=lambda e: e["ts"])
    got = [(e["name"], k, v) for e in xs for k, v in e["args"].items() if k not in ("src", "function")]
    want = [(f, n, v) for f, _, n, v in EXPECTED_ROWS]
    eq(got, want, "the values in each slice's args, in order")
    eq([e["args"]["src"].rsplit("/", 1)[1] for e in xs[:2]], ["args_prog.c:24", "args_prog.c:14"], "src kept")
    tp = os.environ.get("SFTRACE_TRACE_PROCESSOR") or os.path.join(os.path.dirname(ROOT), "shared", "tools",
                                                                    "trace_processor_shell")
    if not os.access(tp, os.X_OK):
        raise Skip(f"Perfetto's trace_processor_shell not found at {tp}")
    q = out + ".sql"
    with open(q, "w") as f:
        f.write("select s.name as fn, substr(a.key, 6) as k, replace(a.display_value, '\"', '#') as v from slice s "
                "join args a using (arg_set_id) where a.key like 'args.%' and a.key != 'args.src' "
                "order by s.ts, a.id;\n")
    rows = [(r["fn"], r["k"], r["v"].replace("#", '"'))
            for r in csv.DictReader(io.StringIO(run([tp, "-q", q, out]).stdout))]
    eq(rows, want, "trace_processor's args")


BAD = [
    (["-A", "add"], "-A 'add': expected FUNC@arg1,arg2/s,..."),
    (["-A", "@arg1"], "-A '@arg1': no FUNC before '@'"),
    (["-A", "add@"], "-A 'add@': nothing after '@'"),
    (["-A", "add@arg7"], "-A 'add@arg7': arg7: integer arguments are arg1-arg6 (the registers; the stack is not read)"),
    (["-A", "add@arg1/z"], "-A 'add@arg1/z': arg1/z: unknown format (i, u, x with 8/16/32/64; p, c, s, S, b; "
                           "f for a float return value)"),
    (["-A", "add@retval"], "-A 'add@retval': retval: retval goes in -R (--retval)"),
    (["-R", "add@arg1"], "-R 'add@arg1': arg1: -R (--retval) takes retval[/FMT]; arguments go in -A"),
    (["-A", "add@fparg9"], "-A 'add@fparg9': fparg9: floating-point arguments are fparg1-fparg8 (the vector registers)"),
    (["-A", "add@arg1/f"], "-A 'add@arg1/f': arg1/f: a floating-point argument is fpargN, not argN/f"),
    (["-A", "add@arg1%rdi"], "-A 'add@arg1%rdi': arg1%rdi: register and stack locations (%REG, %stack+N) are not "
                             "supported"),
    (["-A", "add@arg6/S"], "-A 'add@arg6/S': arg6/S: /S takes two registers (pointer, length): arg6 has no next one"),
    (["-R", "add@retval/f16"], "-R 'add@retval/f16': retval/f16: a floating-point value's format is f, f32 or f64"),
    # uftrace reads an empty item as a module name (""): not a value
    (["-A", "add@arg1,"], "-A 'add@arg1,': an empty item (a ',' with no item before or after it)"),
    (["-A", "add@arg1,,arg2"], "-A 'add@arg1,,arg2': an empty item (a ',' with no item before or after it)"),
    # N as uftrace reads it (strtol base 0): arg01 is arg1, arg08 nothing
    (["-A", "add@arg08"], "-A 'add@arg08': arg08: integer arguments are arg1-arg6 (the registers; the stack is not "
                          "read)"),
]


def test_bad_specs():
    exe = fixture()
    for args, msg in BAD:
        d = tmpdir()
        p = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log")] + args + ["--", exe], check_rc=2)
        eq(p.stderr, f"sftrace: error: {msg}\n", f"{args}")
        eq(p.stdout, "", f"{args}: the program did not run")
        eq(os.listdir(d), [], f"{args}: no log")
    # A FUNC found in no object: the program runs (the function may be in
    # an object it loads), and record says so at exit.
    p, log = record([exe], args=["-q", "-A", "nosuch@arg1", "-A", "add@arg1"])
    eq(p.stdout, PROGRAM_OUT, "the program ran")
    eq(p.stderr, "sftrace: warning: -A 'nosuch@arg1': no instrumented function of the program or of the objects "
                 "it loaded is named 'nosuch': nothing recorded for it (sftrace filter -p OBJECT -r REGEX shows "
                 "which are)\n", "a FUNC that names nothing")
    eq(replay_calls(log)[1], "  add(3);", "the other spec applies")
    # arg01 is arg1, as uftrace reads it
    p, log = record([exe], args=["-q", "-A", "add@arg02"])
    eq(replay_calls(log)[1], "  add(4);", "add@arg02")


def test_auto_args_c():
    # Types from DWARF: every function of the fixture; main's argv is a
    # pointer (its value varies), its return value 0 (uftrace's "} = 0;").
    p, log = record([fixture()], args=["-q", "--auto-args"])
    eq(p.stdout, PROGRAM_OUT, "the program's output is unchanged")
    calls = replay_calls(log)
    check(re.fullmatch(r"main\(1, 0x[0-9a-f]+\) \{", calls[0]), calls[0])
    eq(calls[1:], [
        "  add(3, 4) = 7;",
        "  greet(\"world\") = \"world\";",
        "  scale(1.500000, 4) = 6.000000;",
        "  probe(<unreadable>) = 1;",
        "  probe(\"abc\"...) = 1;",
        "  probe((null)) = 0;",
        "  mix('A', 42, -5, 2.500000) = 104;",
        "} = 0; /* main */",
    ], "replay --auto-args")


ABI_CALLS = ["i128a(1, <unrecorded>, 3) = 9;", "i128o(<unrecorded>, 8, 9.000000) = 24;",
             "ldbl(<unrecorded>, 2.500000, 3) = 6.750000;", "cplx(<unrecorded>, 2.500000, 4) = 9.500000;",
             "vec(<unrecorded>, 0.500000, 6) = 11.500000;"]


def test_auto_args_after_types_without_format():
    """--auto-args: a parameter whose type has no format (__int128 in two
    registers, long double in memory, _Complex double in two vector
    registers, a 16-byte vector in one) still takes its registers, so the
    ones after it show. An __int128 that does not fit in r8:r9 goes
    whole to the stack, or (clang before 18) half in r9: the ones after it
    are not known, so not shown."""
    exe = build_c("f29s_abi", ["f29s_abi.c"], flags=["-O0"], libs=["-lm"])
    p, log = record([exe], args=["-q", "-a"])
    eq(p.stdout, "78 27.75\n")
    got = [x.strip() for x in replay_calls(log)]
    eq(got[1:7], ABI_CALLS[:2] + ["i128s(1, 2, 3, 4, 5, 6, <unrecorded>, <unrecorded>, <unrecorded>) = 45;"]
       + ABI_CALLS[2:])


def test_auto_args_spec_wins_and_string_budget():
    # -A/-R name add: its values are the spec's alone; --auto-args gives
    # greet 16 bytes of each string.
    p, log = record([fixture()], args=["-q", "--auto-args", "-A", "add@arg2/x"])
    calls = replay_calls(log)
    eq(calls[1:3], ["  add(0x4);", "  greet(\"world\") = \"world\";"], "replay")


def test_auto_args_rust():
    from sfkit import rust_fixture
    exe = rust_fixture("args_rust")
    p, log = record([exe], args=["-q", "--auto-args"])
    eq(p.stdout, "6 first z42\n", "the program's output is unchanged")
    calls = [c.strip() for c in replay_calls(log) if "args_rust::" in c]
    # label returns a String through a hidden pointer: 42 and 'z' are in
    # rsi and rdx (they used to be read from rdi and rsi).
    eq(calls, ["args_rust::main() {", "args_rust::count_vowels(\"hello\", 3) = 6;",
               "args_rust::pick(true, 'x') = \"first\";", "args_rust::label(42, 'z') {", "} /* args_rust::label */",
               "} /* args_rust::main */"], "replay")
    # The same by spec: /S reads a &str's pointer and length.
    p, log = record([exe], args=["-q", "-A", "args_rust::count_vowels@arg1/S,arg3/u",
                                 "-R", "args_rust::count_vowels@retval/u"])
    calls = [c.strip() for c in replay_calls(log) if "count_vowels" in c]
    eq(calls, ["args_rust::count_vowels(\"hello\", 3) = 6;"], "replay by spec")


def test_values_across_packed_batches():
    # 30000 calls fill several 64 KiB slots: the batches handed off are
    # packed (the ARGS events as raw records) and the last stays in its
    # slot; every call's values come back, in order.
    n = 30000
    p, log = record([fixture(), str(n)], args=["-q", "-A", "add@arg1,arg2", "-R", "add@retval"])
    eq(p.stdout, f"{n * (n + 1) // 2}\n", "the program's output")
    rows = run([SFTRACE, "query", "--format", "csv", log,
                "select a.frame_id, a.value from args a join frames f using (frame_id) where f.name = 'add' "
                "order by a.frame_id, a.\"index\""]).stdout.splitlines()[1:]
    calls = {}
    for r in rows:
        fid, v = r.split(",", 1)
        calls.setdefault(int(fid), []).append(v)
    out = [" ".join(calls[k]) for k in sorted(calls)]
    eq(len(out), n, "calls with values")
    bad = [(i, v) for i, v in enumerate(out) if v != f"{i} 1 {i + 1}"]
    eq(bad[:3], [], "values of every call")


def more_fixture():
    return build_c("args_more", ["args_more.c"])


MORE_OUT = "147 -5000070101\n"


def test_auto_args_bytes_and_sizes():
    # unsigned char * is bytes (a pointer), not a C string; one value of
    # each integer size and a double come back sign- and zero-extended
    # from the fixed layout. say's exit is a tail call to strlen: its
    # return value is strlen's, marked unknown.
    p, log = record([more_fixture()], args=["-q", "--auto-args"])
    eq(p.stdout, MORE_OUT, "the program's output is unchanged")
    calls = replay_calls(log)
    check(re.fullmatch(r"  bytes\(0x[0-9a-f]+, 4\) = 9;", calls[1]), calls[1])
    eq(calls[2:], [
        "  three(\"aaaaaaaaaaaaaaaa\"..., \"bbbbbbbbbbbbbbbb\"..., \"cccccccccccccccc\"...) = 120;",
        "  say(\"literal\") = <tail call>;",
        "  say(\"on the heap\") = <tail call>;",
        "  sizes('\\xfd', -300, -70000, -5000000000, '\\xc8', 2.500000) = -5000070101;",
        "} = 0; /* main */",
    ], "replay --auto-args")


def test_call_string_budget():
    # The strings of one call share 64 bytes: the first of three 40-byte
    # strings whole, the second cut at the 24 left, the third empty and cut.
    p, log = record([more_fixture()], args=["-q", "-A", "three@arg1/s,arg2/s,arg3/s", "-A", "say@arg1/s"])
    eq(p.stdout, MORE_OUT, "the program's output is unchanged")
    eq(replay_calls(log)[1:6], [
        "  bytes();",
        "  three(\"" + "a" * 40 + "\", \"" + "b" * 24 + "\"..., \"\"...);",
        "  say(\"literal\");",
        "  say(\"on the heap\");",
        "  sizes();",
    ], "replay")


def test_each_string_read_by_one_system_call():
    # Every string goes through process_vm_readv, the program's own
    # literals too (a page of its image may be made unreadable at any
    # time: test_skeptic29x's guarded case), one call per string: two in
    # all, the literal and the heap string.
    import shutil
    if not shutil.which("strace"):
        raise Skip("strace is not installed")
    d = tmpdir()
    trace = os.path.join(d, "strace.txt")
    p = run(["strace", "-f", "-e", "trace=process_vm_readv", "-o", trace, SFTRACE, "record", "-q",
             "-A", "say@arg1/s", "-o", os.path.join(d, "t", "sf.log"), "--", more_fixture()],
            env={"ASAN_OPTIONS": "detect_leaks=0"})  # LeakSanitizer cannot run under ptrace (a sanitizer build)
    eq(p.stdout, MORE_OUT, "the program's output is unchanged")
    with open(trace) as f:
        reads = [line for line in f if "process_vm_readv(" in line]
    eq(len(reads), 2, f"process_vm_readv calls: {reads}")
    eq(replay_calls(os.path.join(d, "t", "sf.log"))[3:5], ["  say(\"literal\");", "  say(\"on the heap\");"], "replay")


def lib_fixtures():
    """libargs_lib.so (add, greet), args_needed linking it, args_dlopen
    loading the path it is given."""
    from sfkit import FIXBUILD
    lib = build_c("libargs_lib.so", ["args_lib.c"], shared=True)
    needed = build_c("args_needed", ["args_needed.c"], libs=["-L" + FIXBUILD, "-largs_lib", "-Wl,-rpath," + FIXBUILD])
    return lib, needed, build_c("args_dlopen", ["args_dlopen.c"], libs=["-ldl"])


LIB_SPECS = ["-A", "add@arg1,arg2", "-R", "add@retval", "-A", "greet@arg1/s"]


def test_needed_library():
    # add and greet are in a DT_NEEDED library: resolved when the runtime
    # finds it at start, by spec and from its DWARF.
    lib, needed, _ = lib_fixtures()
    p, log = record([needed], args=["-q"] + LIB_SPECS)
    eq((p.stdout, p.stderr), ("7 world\n", ""), "the program's output, no warning")
    eq(replay_calls(log), ["main() {", "  add(3, 4) = 7;", "  greet(\"world\");", "} /* main */"], "by spec")
    p, log = record([needed], args=["-q", "--auto-args"])
    eq(p.stdout, "7 world\n", "the program's output")
    eq(replay_calls(log), ["main() {", "  add(3, 4) = 7;", "  greet(\"world\") = \"world\";", "} = 0; /* main */"],
       "--auto-args")
    # Started by a command that has no XRay map (sh): nothing to resolve
    # at start (it used to be an error), the exec'd program and its
    # library are resolved as they load.
    p, log = record(["sh", "-c", needed], args=["-q"] + LIB_SPECS)
    eq((p.stdout, p.stderr), ("7 world\n", ""), "the program's output, no warning")
    eq(replay_calls(log), ["main() {", "  add(3, 4) = 7;", "  greet(\"world\");", "} /* main */"], "under sh")
    # The same from a script (not an ELF file: it used to be an error).
    script = os.path.join(tmpdir(), "run.sh")
    with open(script, "w") as f:
        f.write(f"#!/bin/sh\nexec {needed}\n")
    os.chmod(script, 0o755)
    p, log = record([script], args=["-q"] + LIB_SPECS)
    eq((p.stdout, p.stderr), ("7 world\n", ""), "the script's output, no warning")
    eq(replay_calls(log), ["main() {", "  add(3, 4) = 7;", "  greet(\"world\");", "} /* main */"], "a script")


def test_dlopened_library():
    # add and greet exist in no object at start: the specs apply when the
    # library arrives by dlopen, and record does not call them unmatched.
    # The library is loaded twice (dlclose between): its functions' new
    # ids the second time get the values too.
    lib, _, opener = lib_fixtures()
    p, log = record([opener, lib], args=["-q"] + LIB_SPECS)
    eq((p.stdout, p.stderr), ("7 world\n7 world\n", ""), "the program's output, no warning")
    once = ["  load_and_call() {", "    add(3, 4) = 7;", "    greet(\"world\");", "  } /* load_and_call */"]
    eq(replay_calls(log), ["main() {"] + once + once + ["} /* main */"], "by spec")
    p, log = record([opener, lib], args=["-q", "--auto-args", "-R", "add@retval/x"])
    eq(p.stdout, "7 world\n7 world\n", "the program's output")
    calls = replay_calls(log)
    check(re.fullmatch(r"main\(2, 0x[0-9a-f]+\) \{", calls[0]), calls[0])
    # load_and_call's path argument is cut at --auto-args' 16 bytes; its
    # exit is a tail call (to dlclose): its return value is marked unknown.
    once = [f"  load_and_call(\"{lib[:16]}\"...) {{", "    add() = 0x7;",
            "    greet(\"world\") = \"world\";", "  } = <tail call>; /* load_and_call */"]
    eq(calls[1:], once + once + ["} = 0; /* main */"], "--auto-args, add by spec")



STRUCT_OUT = "15 10.0 19 113 6\n-3.00 61 34 8 -8 -9 0.25 124\n8.00 0.75 1.50 3.00 46\n"


def struct_recorded():
    import platform
    if platform.machine() != "x86_64":
        raise Skip("the struct classification is x86-64's")
    exe = build_c("args_struct", ["args_struct.c"])
    p, log = record([exe], args=["-q", "--auto-args"])
    eq(p.stdout, STRUCT_OUT, "the program's output is unchanged")
    return log


def test_auto_args_struct_arguments():
    # x86-64 System V: struct pt {int x, y} takes rdi, struct mixed {long;
    # double} rdi and xmm0, struct dd {double a, b} xmm0 and xmm1, struct
    # sm {char; short; float; unsigned char[2]} (after an int) rsi; each
    # shows its members' values, typed from DWARF. A 32-byte struct, a
    # 24-byte one and a packed one with an unaligned field go in memory:
    # their members are read from the stack at the entry (tpair's second
    # one 24 bytes past its first), and the arguments after them come
    # from the right registers. make returns a struct in memory: its argument is in rsi
    # (rdi holds the address; it used to be read as the argument); mkpt
    # and mkmixed return theirs in rax, and in rax and xmm0; struct ff
    # {float a, b, c} is a and b in xmm0's two halves, c in xmm1. tag's string
    # makes its values the coded layout's, not the fixed one's.
    log = struct_recorded()
    eq(replay_calls(log), [
        "main() {",
        "  norm({1, 2}, 5) = 15;",
        "  mixf({3, 0.500000}, 2.000000, 7) = 10.000000;",
        "  sum({1, 2, 3, 4}, 9) = 19;",
        "  oddf({'a', 5}, 11) = 113;",
        "  make(6);",
        "  dsum({1.500000, -2.250000}, 4) = -3.000000;",
        "  tsum({10, 20, 30}, 1) = 61;",
        "  smf(3, {'z', -300, 2.500000, '\\x07', '\\xc8'}) = 34;",
        "  mkpt(8) = {8, -8};",
        "  mkmixed(-9) = {-9, 0.250000};",
        "  tag(\"hi\", {4, 5}) = 124;",
        "  fsum({0.500000, 1.500000, 2.000000}, 2.000000) = 8.000000;",
        "  mkff(0.750000) = {0.750000, 1.500000, 3.000000};",
        "  tpair({10, 20, 30}, {1, 2, 3, 4}, 2) = 46;",
        "} = 0; /* main */",
    ], "replay --auto-args")
    out = run([SFTRACE, "dump", log]).stdout
    got = [re.sub(r"^\s*\d+\s+\d+\s+ARGS\s+", "", line) for line in out.splitlines() if " ARGS " in line]
    eq(got[:19], ["norm arg1={1, 2} arg2=5", "norm retval=15", "mixf arg1={3, 0.500000} fparg2=2.000000 arg2=7",
                  "mixf retval=10.000000", "sum stack0={1, 2, 3, 4} arg1=9", "sum retval=19",
                  "oddf stack0={'a', 5} arg1=11", "oddf retval=113", "make arg2=6",
                  "dsum fparg1={1.500000, -2.250000} arg1=4", "dsum retval=-3.000000",
                  "tsum stack0={10, 20, 30} arg1=1", "tsum retval=61",
                  "smf arg1=3 arg2={'z', -300, 2.500000, '\\x07', '\\xc8'}", "smf retval=34",
                  "mkpt arg1=8", "mkpt retval={8, -8}", "mkmixed arg1=-9", "mkmixed retval={-9, 0.250000}"],
       "dump: the registers")
    eq([g for g in got if g.startswith("tpair")], ["tpair stack0={10, 20, 30} stack24={1, 2, 3, 4} arg1=2",
                                                   "tpair retval=46"], "dump: two structs on the stack")


def test_auto_args_cxx_struct_members():
    # A C++ static data member is no byte of the object (it was read as a
    # member at offset 0: normp({1, 2, 1}, 5)), and a derived struct's
    # base members are not its DW_TAG_member children: not recorded rather
    # than shown in part. DWARF 4 (static members as declared members) and
    # DWARF 5 (as variables).
    import platform
    if platform.machine() != "x86_64":
        raise Skip("the struct classification is x86-64's")
    for v in ("4", "5"):
        exe = build_c(f"args_struct_cxx{v}", ["args_struct_cxx.cc"], flags=[f"-gdwarf-{v}"], compiler="clang++")
        p, log = record([exe], args=["-q", "--auto-args"])
        eq(p.stdout, "22 13\n", "the program's output is unchanged")
        eq(replay_calls(log), ["main() {", "  normp({1, 2}, 5) = 22;", "  dsum(<unrecorded>, 6) = 13;",
                               "} = 0; /* main */"], f"replay, DWARF {v}")


def test_stack_struct_past_the_stack_top_is_not_read():
    # The spec file (as record writes it; format/sf_args.h) says target
    # takes a struct in memory at word 60 of its stack arguments, 480 bytes
    # up; target runs near the top of a makecontext stack with an unmapped
    # page above it. The struct is not on the stack the thread runs on: it
    # shows as not recorded, its member not read (it was: SIGSEGV), and
    # the argument and return value after it are recorded.
    import platform
    if platform.machine() != "x86_64":
        raise Skip("structs in memory are x86-64's")
    exe = build_c("args_stack_top", ["args_stack_top.c"])
    syms = {p[2]: int(p[0], 16) for p in (l.split() for l in run(["nm", exe]).stdout.splitlines()) if len(p) == 3}
    d = tmpdir()
    spec, log = os.path.join(d, "args"), os.path.join(d, "sf.log")
    with open(spec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n{syms['target']:#x} ebc1c,e8001,e0111,x0011 target\n")
    os.chmod(spec, 0o600)
    p = run([exe], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": log, "SFTRACE_ARGS": spec})
    eq(p.stdout, "42\n", "the program's output")
    eq([c.strip() for c in replay_calls(log) if "target" in c], ["target(<unrecorded>, 41) = 42;"], "replay")
    out = run([SFTRACE, "dump", log]).stdout
    eq([re.sub(r"^\s*\d+\s+\d+\s+ARGS\s+", "", l) for l in out.splitlines() if " ARGS " in l],
       ["target stack480=<unrecorded> arg1=41", "target retval=42"], "dump")


def test_struct_member_past_byte_0_of_its_register():
    # mid(short c, struct {short a; int b}): c in rdi, a and b in rsi (b at
    # its byte 4). The values-only record holds c, a and b at offsets 0, 2
    # and 4: b's value used to bring rsi's bytes below it along, ORed over
    # c and a (`mid(3, {2, 3})` for mid(1, {2, 3}), `mid(-5, ...)` for -7).
    # after's float member at byte 4 of its register is the aarch64 case
    # (skeptic 29m, there in the FIXED layout: `<bad values>`).
    import platform
    if platform.machine() != "x86_64":
        raise Skip("the struct classification is x86-64's")
    p, log = record([build_c("args_member_bytes", ["args_member_bytes.c"])], args=["-q", "--auto-args"])
    eq(p.stdout, "39373 8.75\n", "the program's output is unchanged")
    eq(replay_calls(log), ["main() {", "  mid(1, {2, 3}) = 123;", "  mid(-7, {-5, 40000}) = 39250;",
                           "  after({-1, 0.500000, 9}, 0.250000) = 8.750000;", "} = 0; /* main */"], "replay")


# Struct values as every consumer reads them (function, index, name, value).
STRUCT_ROWS = [
    ("norm", 0, "arg1", "{1, 2}"), ("norm", 1, "arg2", "5"), ("norm", 2, "retval", "15"),
    ("mixf", 0, "arg1", "{3, 0.500000}"), ("mixf", 1, "fparg2", "2.000000"), ("mixf", 2, "arg2", "7"),
    ("mixf", 3, "retval", "10.000000"),
    ("dsum", 0, "fparg1", "{1.500000, -2.250000}"), ("dsum", 1, "arg1", "4"), ("dsum", 2, "retval", "-3.000000"),
    ("mkpt", 0, "arg1", "8"), ("mkpt", 1, "retval", "{8, -8}"),
    ("mkmixed", 0, "arg1", "-9"), ("mkmixed", 1, "retval", "{-9, 0.250000}"),
    ("tag", 0, "arg1", "\"hi\""), ("tag", 1, "arg2", "{4, 5}"), ("tag", 2, "retval", "124"),
    ("tpair", 0, "stack0", "{10, 20, 30}"), ("tpair", 1, "stack24", "{1, 2, 3, 4}"), ("tpair", 2, "arg1", "2"),
    ("tpair", 3, "retval", "46"),
]
STRUCT_FUNCS = sorted({r[0] for r in STRUCT_ROWS})


def test_struct_values_in_query_and_parquet():
    log = struct_recorded()
    names = ", ".join(f"'{f}'" for f in STRUCT_FUNCS)
    out = run([SFTRACE, "query", "--format", "csv", log,
               "select f.name, a.\"index\", a.name, a.value from args a join frames f using (frame_id) "
               f"where f.name in ({names}) order by f.start_ns, a.\"index\""]).stdout
    rows = [(r[0], int(r[1]), r[2], r[3]) for r in list(csv.reader(io.StringIO(out)))[1:]]
    eq(rows, STRUCT_ROWS, "query's args")
    pola = os.path.join(tmpdir(), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", pola])
    got = parquet_query("args_query.mjs", pola)
    eq([r for r in got["rows"] if r.split(" ")[0] in STRUCT_FUNCS],
       [f"{f} {i} {n} {v}" for f, i, n, v in STRUCT_ROWS], "OUT.args rows")


def test_struct_values_in_perfetto():
    rows = perfetto_args(struct_recorded())
    eq(sorted(r for r in rows if r[0] in STRUCT_FUNCS), sorted((f, n, v) for f, _, n, v in STRUCT_ROWS),
       "trace_processor's args")


def test_packed_struct_members_across_stack_words():
    # Packed structs in memory (x86-64 System V: an unaligned field makes
    # them MEMORY): each member is loaded unaligned from its first byte,
    # p16's long at byte 1 and t13's int at 3 and short at 7 across two
    # words; p16's d[] and t13's u, in the struct's last 8 bytes, from
    # those bytes shifted (never past the struct). Before, such a struct
    # was `<unrecorded>`.
    import platform
    if platform.machine() != "x86_64":
        raise Skip("structs in memory are x86-64's")
    p, log = record([build_c("args_packed", ["args_packed.c"])], args=["-q", "--auto-args"])
    eq(p.stdout, "123596005\n", "the program's output is unchanged")
    eq(replay_calls(log), [
        "main() {",
        "  p16({'a', -1000, '\\x01', '\\x02', '\\x03', '\\x04', '\\x05', '\\x06', '\\x07'}, 1) = -895;",
        "  t13({-2, 'x', 70000, -3, 123456789}, 5) = 123526909;",
        "  both({-2, 'x', 70000, -3, 123456789}, {7, 'y', -1, 8, -9}) = 69991;",
        "} = 0; /* main */"], "replay")
    out = run([SFTRACE, "dump", log]).stdout
    eq([re.sub(r"^\s*\d+\s+\d+\s+ARGS\s+", "", l) for l in out.splitlines() if " ARGS " in l and "both" in l],
       ["both stack0={-2, 'x', 70000, -3, 123456789} stack16={7, 'y', -1, 8, -9}", "both retval=69991"],
       "dump: the second struct's offset")


def test_stack_struct_member_at_the_stack_top_read_within_it():
    # The spec file says target takes a struct in the last 8 bytes of its
    # makecontext stack (the next page unmapped; the fixture prints how
    # far its first stack argument is from the top), a short at its byte
    # 6 and a char at 7. A member's 8-byte load starts at its first byte
    # unless that would pass the struct's end: then it comes from the
    # struct's last 8 bytes, shifted (from byte 7 on: SIGSEGV).
    import platform
    if platform.machine() != "x86_64":
        raise Skip("structs in memory are x86-64's")
    exe = build_c("args_stack_edge", ["args_stack_edge.c"], flags=["-fno-omit-frame-pointer"])
    plain = run([exe]).stdout
    gap = int(plain.split()[1])
    check(gap % 8 == 0 and 8 <= gap <= 8 * 128, f"stack top {gap} bytes above the first stack argument")
    syms = {p[2]: int(p[0], 16) for p in (l.split() for l in run(["nm", exe]).stdout.splitlines()) if len(p) == 3}
    d = tmpdir()
    spec, log = os.path.join(d, "args"), os.path.join(d, "sf.log")
    word = gap // 8 - 1
    with open(spec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n"
                f"{syms['target']:#x} e{0x80 | word:02x}2c,ee021,ef035,e0111,x0011 target\n")
    os.chmod(spec, 0o600)
    p = run([exe], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": log, "SFTRACE_ARGS": spec})
    eq(p.stdout, plain, "the program's output")
    # makecontext leaves the top word zero or a pointer: bytes 6 and 7 zero
    eq([c.strip() for c in replay_calls(log) if "target" in c], ["target({0, '\\x00'}, 41) = 42;"], "replay")


# ---- with --trigger and --within (skeptic29n: these functions recorded no values) ----
def fmt_fixture():
    return build_c("skep29n_fmt", ["skep29n_fmt.c"], libs=["-lpthread"])


def value_sums(log, func):
    """{name: (count, sum of values as integers)} of FUNC's values, from query."""
    out = run([SFTRACE, "query", "--format", "tsv", log,
               "SELECT a.name, count(*), sum(cast(a.value AS bigint)) FROM args a JOIN frames f USING (frame_id) "
               f"WHERE f.name = '{func}' GROUP BY 1 ORDER BY 1"]).stdout.splitlines()
    return {n: (int(c), int(s)) for n, c, s in (ln.split("\t") for ln in out[1:])}


def test_trigger_function_values_by_spec_entry_and_duration():
    """-A add@arg1,arg2 -R add@retval on skep29n_fmt alloc (add(k, (char)k),
    k < 5,000) with --ring 128K and add as the trigger, on its entry and
    on a call longer than 1 ns (at its exit): every add call the ring
    kept has its values (arg2 = (char)arg1, retval their sum, the last
    k = 4,999), and the snapshot shows add's first call with its values,
    the duration one with its return value (the exit that fired it is
    stored before it)."""
    for trig, first in (("add", "add(0, 0);"), ("add>1ns", "add(0, 0) = 0;")):
        d = tmpdir()
        p, log = record([fmt_fixture(), "alloc"], out=os.path.join(d, "t.log"),
                        args=["-q", "-A", "add@arg1,arg2", "-R", "add@retval", "--ring", "128K", "--trigger", trig,
                              "--max-snapshots", "1"])
        eq(p.stdout, "alloc 12502200\n", "the program's output")
        calls = [c.strip() for c in replay_calls(log) if "add(" in c]
        if calls and calls[0].endswith("/* cut at window start */"):  # its entry fell out of the ring
            calls = calls[1:]
        check(len(calls) > 1000, f"--trigger {trig}: add's calls in the ring: {len(calls)}")
        bad = [c for c in calls if not re.fullmatch(r"add\((\d+), (-?\d+)\) = (-?\d+);", c)
               or (lambda k, b, r: b != (k + 128) % 256 - 128 or r != k + b)(*map(int, re.findall(r"-?\d+", c)))]
        eq(bad[:3], [], f"--trigger {trig}: add's values")
        eq(calls[-1], "add(4999, -121) = 4878;", f"--trigger {trig}: add's last call")
        snaps = [f for f in os.listdir(d) if ".snap." in f]
        eq(len(snaps), 1, "one snapshot")
        calls = [c.strip() for c in replay_calls(os.path.join(d, snaps[0])) if "add(" in c]
        eq(calls, [first], f"--trigger {trig}: the snapshot's add")


def test_within_window_and_gated_functions_values():
    """skep29n_fmt deep (rec 30,000 deep) and jump (longjmp out of 6 deepj
    frames, 1,000 times) under --auto-args --within -r '^main$': main
    opens the window and shows its arguments (main(2, 0x...)), rec and
    deepj are recorded inside it (gated) with the exact sums of a run
    without --within."""
    exe = fmt_fixture()
    cases = (("deep", "deep 60007\n", "rec", {"arg1": (30001, 450015000), "arg2": (30001, 450225007),
                                              "retval": (30001, 1350255007)}),
             ("jump", "jump 500500\n", "deepj", {"arg1": (6000, 2997000), "arg2": (6000, 15000)}))
    for mode, out, func, sums in cases:
        p, log = record([exe, mode], args=["-q", "--auto-args", "--within", "-r", "^main$"])
        eq(p.stdout, out, f"{mode}: the program's output")
        eq(value_sums(log, func), sums, f"{mode}: {func}'s values")
        first = replay_first_call(log)
        check(first.startswith("main(2, 0x"), f"{mode}: main's values: {first!r}")


def test_within_windows_with_values_closed_by_longjmp():
    """tests/fixtures/unwind_land window 3 (window -> inner -> qux,
    longjmp back to main; then outside()) with -r '^window$' --within and
    a value asked of each (their sleds take the args trampolines behind
    the window's count and the gate): only the window subtrees, each
    frame with its value, the 9 frames closed at the landings, and
    outside() not recorded (the landings closed the windows)."""
    exe = build_c("unwind_land", ["unwind_land.c"])
    specs = []
    for f in ("window", "inner", "qux", "outside"):
        specs += ["-A", f"{f}@arg1/x"]
    p, log = record([exe, "window", "3"], args=["-q", "-r", "^window$", "--within"] + specs)
    eq(p.stdout, "landed ok\n", "the program's output")
    calls = [re.sub(r"\((0x[0-9a-f]+|[0-9]+)\)", "(X)", c.strip()) for c in replay_calls(log)]
    eq(calls, ["window(X) {", "inner(X) {", "qux(X);", "} /* inner */", "} /* window */",
               "/* 3 frames unwound */"] * 3, "replay")
    out = os.path.join(os.path.dirname(log), "out.folded")
    err = run([SFTRACE, "convert", "-t", "folded", "--weight", "calls", log, "-o", out]).stderr
    check("9 frames closed by unwinding" in err, err)


def test_tail_call_sleds_keep_the_jumps_registers():
    """The x86-64 side of args_tailreg.c (test_aarch64's
    test_aarch64_args_trampoline_keeps_x9_to_x18 for the other): dispv's
    tail-call sled sits before `mov $2, %al` ... `jmp *%rcx` (a variadic
    callee: al counts its vector registers), dispv6's before `xor %eax,
    %eax` ... `jmp *%r11` (six argument registers and al taken). The args
    trampoline puts back rax, rcx, rdx, rsi, rdi and r8-r11 after C, so
    both jumps go where they went: asked for by spec (the tail's `= <tail
    call>` mark) with the TSC and the monotonic clock, in within mode
    (main opens the window: the gated tail trampoline), and under
    --auto-args; the program prints what it prints untraced. Without the
    r11 restore the program dies of SIGSEGV. (dispb and dispbti pass
    stack arguments on x86-64: not tail calls here.)"""
    exe = build_c("args_tailreg", ["args_tailreg.c"])
    dis = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    for fn, jump in (("dispv", "jmp    *%rcx"), ("dispv6", "jmp    *%r11")):
        body = [line.split("\t")[-1].strip() for line in dis.split(f"<{fn}>:\n", 1)[1].split("\n\n", 1)[0]
                .splitlines()]
        body = [i for i in body if not i.startswith(("nop", "xchg", "cs nop", "data16"))]
        eq(body[-1], jump, f"{fn}'s last instruction")
    want = run([exe, "3"]).stdout
    eq(want, "688 5.50\n", "the program's output untraced")
    spec = ["-A", "dispv@fparg1,arg1", "-R", "dispv@retval/f", "-A", "dispv6@arg1,arg6", "-R", "dispv6@retval"]
    for env, extra in (({}, []), ({"SFTRACE_CLOCK": "monotonic"}, []), ({}, ["--within", "-r", "^main$"])):
        p, log = record([exe, "3"], args=["-q"] + extra + spec, env=dict(os.environ, **env))
        eq(p.stdout, want, f"the program's output {env} {extra}")
        got = [c.strip() for c in replay_calls(log) if c.strip().startswith(("dispv(", "dispv6("))]
        eq(got, ["dispv(0.000000, 0) = <tail call>;", "dispv6(0, 0) = <tail call>;",
                 "dispv(0.500000, 1) = <tail call>;", "dispv6(1, 1) = <tail call>;",
                 "dispv(1.000000, 2) = <tail call>;", "dispv6(2, 2) = <tail call>;"], f"values {env} {extra}")
    p, log = record([exe, "3"], args=["-q", "--auto-args"])
    eq(p.stdout, want, "the program's output under --auto-args")
    got = [c.strip() for c in replay_calls(log) if c.strip().startswith(("dispv(", "dispv6(", "vsuml("))][:3]
    eq(got, ["dispv(0.000000, 0) = <tail call>;", "dispv6(0, 1, 2, 3, 4, 0) = <tail call>;", "vsuml(5) = 10;"],
       "--auto-args")
