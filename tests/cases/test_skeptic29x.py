"""skeptic29x: issue 29's arguments and return values (-A/-R, --auto-args)
tried the way a user would, on programs of our own.

tests/fixtures/skep29x_args.c (C at -O2, sibling calls on, one mode per
case), skep29x_rust.rs (Rust, --auto-args) and skep29x_dlopen.c with the
plugin skep29x_plug.c. Cases that hold are plain tests; a break that main
still has is asserted as it should be and says SKIP ("known break, issue 29
open: ...") while it fails. Each docstring gives program, expected and
observed.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic29x.py."""
import csv
import io
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import (RUNTIME, SFTRACE, Skip, build_c, call_column, check, eq, parquet_query, record, replay_text,  # noqa: E402
                   run, rust_fixture, tmpdir, trace_processor)

_runs = {}


def fixture():
    return build_c("skep29x_args", ["skep29x_args.c"], libs=["-lpthread"])


def recorded(mode, args=("-a",), extra=()):
    """(CompletedProcess, log) of skep29x_args MODE recorded with ARGS, once."""
    key = (mode, tuple(args), tuple(extra))
    if key not in _runs:
        _runs[key] = record([fixture(), mode] + list(extra), args=["-q"] + list(args))
    return _runs[key]


def calls(log):
    """Replay's call column, without main's own lines."""
    return [c.strip() for c in call_column(replay_text(log)) if "main" not in c]


def query(log, sql):
    """Rows of `sftrace query` as lists of strings (header dropped)."""
    out = run([SFTRACE, "query", "--format", "tsv", log, sql]).stdout.splitlines()
    return [ln.split("\t") for ln in out[1:]]


def args_of(log, func):
    """{frame_id: {name: value}} of FUNC's recorded values, from query."""
    rows = query(log, "SELECT a.frame_id, a.name, a.value FROM args a JOIN frames f USING (frame_id) "
                      f"WHERE f.name = '{func}' ORDER BY a.frame_id, a.\"index\"")
    out = {}
    for fid, name, value in rows:
        out.setdefault(int(fid), {})[name] = value
    return out


def known_break(what, fn):
    """Runs the assertions fn makes; their failure is the open break WHAT."""
    try:
        fn()
    except AssertionError as e:
        raise Skip(f"known break, issue 29 open: {what} ({str(e)[:300]})")


def perfetto_args(log):
    """[(slice name, key, display value)] of every debug.* arg, in slice order."""
    pb = os.path.join(os.path.dirname(log), "t.pb")
    run([SFTRACE, "convert", log, "-o", pb])
    q = ("select s.name, a.key, a.display_value from slice s join args a using (arg_set_id) "
         "where a.key like 'debug.%' order by s.ts, a.key")
    out = run([trace_processor(), "-Q", q, pb]).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return [tuple(r) for r in rows[1:]]


# ---------------------------------------------------------------- what holds

def test_ints_floats_and_narrow_returns():
    """C -O2, --auto-args: int/float mixes, float and double returns, and
    returns whose register holds more than their type (r_short(70000) is
    `mov %edi,%eax`: the short is 4464). Expected and observed: the values
    below, the program's output unchanged."""
    p, log = recorded("ints")
    eq(p.stdout, "7 108.000000 1.500000 2.500000 28 60\n4464 44 65534 1 59701\n", "output")
    got = [c for c in calls(log) if not c.startswith("seven(")]
    eq(got, ["add(3, 4) = 7;",
             "mix(1, 2.500000, 3, 4.500000, 'a') = 108.000000;",
             "halff(3.000000) = 1.500000;",
             "twice(1.250000) = 2.500000;",
             "vsum(3) = 60;",
             "r_short(70000) = 4464;",
             "r_schar(300) = ',';",
             "r_ushort(-2) = 65534;",
             got[8],
             "ext(true, -300, 60000) = 59701;"], "calls")
    check(re.fullmatch(r"r_bool\(0x[0-9a-f]+\) = true;", got[8]), got[8])


def test_strings_read_safely():
    """Strings by spec and --auto-args: 'aab' unterminated at the end of a
    page whose next page is unmapped (cut, not invented), a fresh untouched
    page (""), a 99,999-byte string (16 bytes under --auto-args, 64 by
    spec), NULL, a buffer changed right after the call (the value at the
    call), a pointer to page 0 (<unreadable>). slen ends in `jmp strlen`
    but for NULL: its return value is marked unknown (<tail call>)."""
    p, log = recorded("strings")
    eq(p.stdout, "4093 0 99999 0\nbefore\nXefore 16\n", "output")
    eq(calls(log), ['pass("aab"...) = 4093;', 'slen("") = <tail call>;', 'slen("LLLLLLLLLLLLLLLL"...) = <tail call>;',
                    "slen((null)) = 0;",
                    'ident("before") = "before";', 'clobber("before");', "pass(<unreadable>) = 16;"], "auto-args")
    _, log2 = recorded("strings", ["-A", "slen@arg1/s", "-A", "pass@arg1/s"])
    eq(calls(log2)[:3], ['pass("aab"...);', 'slen("");', 'slen("' + "L" * 64 + '"...);'], "by spec")


def test_recursion_each_frame_its_own_values():
    """fib(15) recursive, -A fib@arg1 -R fib@retval: every frame (clang
    keeps 987 of the source's 1,973 calls) has retval = fib(arg1) (query's
    args table joined to frames)."""
    _, log = recorded("fib", ["-A", "fib@arg1", "-R", "fib@retval"])
    want = [0, 1]
    while len(want) < 16:
        want.append(want[-1] + want[-2])
    vals = args_of(log, "fib")
    frames = int(query(log, "SELECT count(*) FROM frames WHERE name = 'fib'")[0][0])
    check(frames > 100, f"{frames} fib frames")
    eq(len(vals), frames, "fib frames with values")
    bad = [v for v in vals.values() if int(v["retval"], 0) != want[int(v["arg1"])]]
    eq(bad, [], "frames whose retval is not fib(arg1)")


def test_longjmp_and_signal_frames():
    """mid(3) -> deep(3) longjmps out: neither frame gets a return value;
    SIGPROF lands in spin(n) and its handler calls spin(3): the handler's
    frame shows 3, every interrupted spin(n) keeps n*(n-1)/2."""
    p, log = recorded("jumps", ["-A", "mid@arg1", "-A", "deep@arg1", "-A", "spin@arg1",
                                "-R", "mid@retval", "-R", "deep@retval", "-R", "spin@retval"])
    eq(p.stdout, "11\njumped\n21\nbad 0\n", "output")
    c = calls(log)
    eq(c[:8], ["mid(1) {", "deep(1) = 10;", "} = 11; /* mid */", "mid(3) {", "deep(3);", "} /* mid */",
               "/* 2 frames unwound */", "mid(2) {"], "jumps")
    vals = args_of(log, "spin")
    check(any(v == {"arg1": "3", "retval": "3"} for v in vals.values()), "no handler spin(3) = 3")
    bad = [v for v in vals.values() if int(v["retval"], 0) != int(v["arg1"], 0) * (int(v["arg1"], 0) - 1) // 2]
    eq(bad, [], "spin frames with a wrong retval")


def test_threads_exact_records():
    """8 threads x 10,000 calls of tadd(id, i), -A tadd@arg1,arg2 -R
    tadd@retval: exactly 80,000 values of each name; per thread arg1 is
    its id, arg2 runs 0..9999 and retval = arg1 + arg2 in every frame.
    (By hand, 8 x 1,000,000: exactly 8,000,000 ARGS records of each kind
    in dump.)"""
    p, log = recorded("threads", ["-A", "tadd@arg1,arg2", "-R", "tadd@retval"], ["8", "10000"])
    eq(p.stdout, f"{8 * 49995000 + 10000 * 28}\n", "output")
    rows = query(log, "WITH p AS (SELECT frame_id, max(CASE WHEN name = 'arg1' THEN CAST(value AS INT) END) a, "
                      "max(CASE WHEN name = 'arg2' THEN CAST(value AS INT) END) b, "
                      "max(CASE WHEN name = 'retval' THEN CAST(value AS INT) END) r, count(*) n FROM args GROUP BY "
                      "frame_id) SELECT min(a), max(a), count(*), sum(b), count(DISTINCT b), sum(r = a + b), sum(n) "
                      "FROM p JOIN frames f USING (frame_id) GROUP BY f.tid ORDER BY min(a)")
    eq(rows, [[str(i), str(i), "10000", "49995000", "10000", "10000", "30000"] for i in range(8)], "per thread")


def test_dlopen_regex_each_load():
    """A plugin dlopen'd, called, dlclose'd, twice, named by regex:
    -A '^plug_m.*@arg1,arg2' -R '^plug_m.*@retval' -R 'plug_name@retval/s':
    both loads show their values."""
    lib = build_c("libskep29x_plug.so", ["skep29x_plug.c"], shared=True)
    prog = build_c("skep29x_dlopen", ["skep29x_dlopen.c"], xray=False, libs=["-ldl"])
    p, log = record([prog, lib], args=["-q", "-A", "^plug_m.*@arg1,arg2", "-R", "^plug_m.*@retval",
                                       "-R", "plug_name@retval/s"])
    eq(p.stdout, "42 plugin\n48 plugin\n", "output")
    eq(calls(log), ["plug_mul(6, 7) = 42;", 'plug_name() = "plugin";', "plug_mul(6, 8) = 48;",
                    'plug_name() = "plugin";'], "calls")


def test_rust_auto_args():
    """Rust (rustc -O -g), --auto-args, values through black_box: &str and
    u64, bool and char, i64/i8/i16, char return."""
    prog = rust_fixture("skep29x_rust")
    p, log = record([prog], args=["-q", "-a"])
    eq(p.stdout, "6\ntrue\nBlue\n-308\nB\n28\n", "output")
    c = [x.strip() for x in call_column(replay_text(log))]
    for want in ['skep29x_rust::count("hello", 3) = 6;', "skep29x_rust::flag(true, 'x') = true;",
                 "skep29x_rust::neg(-5, -3, -300) = -308;", "skep29x_rust::ch('A') = 'B';"]:
        check(want in c, f"{want!r} not in {[x for x in c if 'skep29x_rust::' in x]}")


STRSIM = "/usr/share/cargo/registry/strsim-0.10.0"


def strsim_tests():
    """strsim 0.10's own unit-test binary (Debian's source package, built
    offline with sleds and DWARF into build/fixtures; kept for the next
    run). Skip without the crate or cargo."""
    import json
    import shutil
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    if not os.path.isdir(STRSIM) or not os.access(cargo, os.X_OK):
        raise Skip("no strsim crate source (librust-strsim-dev) or no cargo")
    from sfkit import FIXBUILD, sync_tree
    d = sync_tree(STRSIM, os.path.join(FIXBUILD, "skep29x_strsim"), keep=("target", "Cargo.lock", ".cargo"))
    os.makedirs(os.path.join(d, ".cargo"), exist_ok=True)
    with open(os.path.join(d, ".cargo", "config.toml"), "w") as f:
        f.write('[source.crates-io]\nreplace-with = "debian"\n'
                '[source.debian]\ndirectory = "/usr/share/cargo/registry"\n')
    if os.path.exists(os.path.join(d, ".cargo-checksum.json")):
        os.remove(os.path.join(d, ".cargo-checksum.json"))
    p = run([cargo, "test", "--release", "--lib", "--no-run", "--offline", "--message-format=json"], cwd=d,
            timeout=600, env={"RUSTC_BOOTSTRAP": "1", "RUSTFLAGS": "-Zinstrument-xray=always",
                              "CARGO_PROFILE_RELEASE_DEBUG": "true"})
    exes = [m["executable"] for m in map(json.loads, p.stdout.splitlines())
            if m.get("reason") == "compiler-artifact" and m.get("executable")]
    eq(len(exes), 1, "test binaries")
    return exes[0]


def test_crate_tests_auto_args_output_unchanged():
    """strsim 0.10's 88 unit tests under --auto-args: the same output as
    untraced (test order fixed by --test-threads=1, the time masked), no
    word on stderr, and its &str arguments and f64 returns recorded, e.g.
    jaro_winkler("martha", "marhta") = 0.961111 (its &str are arg1/arg2
    and arg3/arg4)."""
    exe = strsim_tests()
    mask = lambda t: re.sub(r"finished in [0-9.]+s", "finished in Xs", t)  # noqa: E731
    plain = run([exe, "--test-threads=1"])
    p, log = record([exe, "--test-threads=1"], args=["-q", "-a"])
    eq((mask(p.stdout), p.stderr), (mask(plain.stdout), plain.stderr), "output")
    check("test result: ok. 88 passed" in plain.stdout, plain.stdout[-300:])
    rows = query(log, "SELECT group_concat(a.name || '=' || a.value, ' ') FROM frames f JOIN args a USING (frame_id) "
                      "WHERE f.name = 'strsim::jaro_winkler' GROUP BY f.frame_id")
    check(['arg1="martha" arg3="marhta" retval=0.961111'] in rows, rows[:5])


def test_values_in_every_output():
    """ints mode, --auto-args: add's 3, 4 and 7 and mix's 2.5 in dump,
    query, Parquet (nodejs-polars) and Perfetto (trace_processor's args)."""
    _, log = recorded("ints")
    dump = run([SFTRACE, "dump", log]).stdout
    check(re.search(r"ARGS +add arg1=3 arg2=4\n", dump) and re.search(r"ARGS +add retval=7\n", dump), "dump")
    eq(list(args_of(log, "add").values()), [{"arg1": "3", "arg2": "4", "retval": "7"}], "query")
    pola = os.path.join(os.path.dirname(log), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", pola])
    rows = parquet_query("args_query.mjs", pola)["rows"]
    for want in ["add 0 arg1 3", "add 1 arg2 4", "add 2 retval 7", "mix 1 fparg1 2.500000"]:
        check(want in rows, f"parquet: {want!r} not in {rows[:12]}")
    pf = perfetto_args(log)
    for want in [("add", "debug.arg1", "3"), ("add", "debug.arg2", "4"), ("add", "debug.retval", "7"),
                 ("mix", "debug.fparg1", "2.500000")]:
        check(want in pf, f"perfetto: {want} not in {pf[:12]}")


def test_spec_naming_nothing_warns_once():
    """-A 'nosuch@arg1' -A '^zz.*@arg2': the run succeeds, one warning line
    per spec after it, naming the spec."""
    p, _ = record([fixture(), "ints"], args=["-q", "-A", "nosuch@arg1", "-A", "^zz.*@arg2"])
    lines = p.stderr.splitlines()
    eq(len(lines), 2, f"stderr lines: {lines}")
    check("-A 'nosuch@arg1'" in lines[0] and "-A '^zz.*@arg2'" in lines[1], lines)


BAD_SPECS = [["-A", "add"], ["-A", "add@"], ["-A", "@arg1"], ["-A", "add@arg0"], ["-A", "add@arg7"],
             ["-A", "add@arg1/q"], ["-A", "add@arg1/i7"], ["-A", "add@fparg9"], ["-A", "add@retval"],
             ["-R", "add@arg1"], ["-A", "add@arg1/f"], ["-A", "add@fparg1/s"], ["-A", "add@arg6/S"]]


def test_malformed_specs_one_line_before_running():
    """Each malformed spec: exit 2, one stderr line quoting it, the command
    not run (it would create a file)."""
    d = tmpdir()
    mark = os.path.join(d, "ran")
    for spec in BAD_SPECS:
        p = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log")] + spec +
                ["--", "sh", "-c", f"touch {mark}; exec {fixture()} ints"], check_rc=None)
        eq((p.returncode, len(p.stderr.splitlines()), f"'{spec[1]}'" in p.stderr, os.path.exists(mark)),
           (2, 1, True, False), f"{spec}: {p.stderr!r}")


def test_guarded_constants_no_fault():
    """The program makes a page of its own read-only data PROT_NONE
    (mprotect, as a guard) and passes a pointer into it to pass(), which
    never reads it; -A 'pass@arg1/s'.
    Expected: output "0", exit 0, `pass(<unreadable>);`.
    Was: the runtime read the main program's read-only segments with
    plain loads (args.c readable_until: "nothing a program does removes
    read access to its own constants"): SIGSEGV, exit 139. Now every
    string goes through process_vm_readv."""
    fx = fixture()
    eq(run([fx, "guarded"]).stdout, "0\n", "untraced")
    p, log = record([fx, "guarded"], args=["-q", "-A", "pass@arg1/s"], check_rc=None)

    eq((p.returncode, p.stdout), (0, "0\n"), f"traced run (stderr {p.stderr.strip()!r})")
    eq(calls(log), ["pass(<unreadable>);"], "calls")


def test_tail_call_return_value_marked():
    """tailer(4) returns leaf(5) by a tail jump (and slen(s) ends in `jmp
    strlen`); -A tailer@arg1 -R tailer@retval -R leaf@retval.
    Expected: tailer(4) = 15; (leaf's exit is tailer's return to main: the
    value is in rax there), or a mark that the value is unknown.
    Was: `tailer(4);` -- the same line as a void function's. Now the
    tail-call sled of a function whose return value is asked for records
    that it is not known: replay `tailer(4) = <tail call>;`, dump
    `retval=<unrecorded>`; leaf keeps its own value."""
    _, log = recorded("tail", ["-A", "tailer@arg1", "-R", "tailer@retval", "-R", "leaf@retval"])
    eq([c for c in calls(log) if c.startswith(("tailer(", "leaf("))],
       ["tailer(4) = <tail call>;", "leaf() = 15; /* tail call from tailer */"], "calls")
    dump = run([SFTRACE, "dump", log]).stdout
    check(re.search(r"ARGS +tailer retval=<unrecorded>\n.* TAIL +tailer\n", dump), dump[-900:])


def test_one_return_value_per_call():
    """-A add@arg1 -A add@arg1/x -R add@retval -R add@retval/x (two specs
    for one function, e.g. a regex and a name).
    Expected: one return value per call, the same in replay and Perfetto
    (the later spec, or a refusal).
    Was: replay `add(3, 0x3) = 7, 0x7;` (two return values); query two
    retval rows. Now, as uftrace does (utils/filter.c add_arg_spec), a
    later spec for the same argument or the return value replaces the
    earlier: add(0x3) = 0x7; except that a regex never replaces what a
    spec naming the function whole gave (the name's /x stays)."""
    _, log = recorded("ints", ["-A", "add@arg1", "-A", "add@arg1/x", "-R", "add@retval", "-R", "add@retval/x"])
    eq([c for c in calls(log) if c.startswith("add(")], ["add(0x3) = 0x7;"], "later spec")
    eq(list(args_of(log, "add").values()), [{"arg1": "0x3", "retval": "0x7"}], "query")
    _, log = recorded("ints", ["-A", "add@arg1/x", "-A", "^ad.*@arg1,arg2", "-R", "add@retval/x", "-R", "^ad.*@retval"])
    eq([c for c in calls(log) if c.startswith("add(")], ["add(0x3, 4) = 0x7;"], "name over regex")


def test_bad_regex_refused_before_running():
    """-A '(@arg1' (a FUNC regex that does not compile), command
    `sh -c 'touch ran; exec skep29x_args ints'`.
    Expected: refused like every other malformed spec: exit 2, one line
    naming '(@arg1' (and PCRE2's message), the command not run.
    Was: the command ran; per instrumented object two error lines
    ("invalid regex '(' (-A)", "cannot read the functions of ...") and
    "recorded without values", then a warning that '(' named nothing; exit
    0. Now FUNC's regex is compiled when the spec is parsed."""
    d = tmpdir()
    mark = os.path.join(d, "ran")
    for spec in (["-A", "(@arg1"], ["-R", "a[@retval"]):
        p = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log")] + spec + ["--", "sh", "-c",
                f"touch {mark}; exec {fixture()} ints"], check_rc=None)
        eq((p.returncode, len(p.stderr.splitlines()), f"{spec[0]} '{spec[1]}'" in p.stderr, os.path.exists(mark)),
           (2, 1, True, False), f"stderr {p.stderr!r}")
    eq(p.stderr, "sftrace: error: invalid regex 'a[' (-R 'a[@retval'): missing terminating ] for character class "
                 "at position 2\n", "the message")


def test_plugin_reloads_keep_values():
    """A host loads, calls and unloads one plugin 17,000 times;
    -A 'plug_mul@arg1' names one function.
    Expected: 17,000 plug_mul frames, each with its arg1 (0 to 16,999).
    Was: values stopped after 16,384 loads ("argument specs: too many
    functions loaded; ..."): every load took a new entry of the runtime's
    16,384-function table and dlclose never gave it back. Now an unloaded
    object's function ids leave the table.
    (Read with --no-symbols: see test_break_reader_many_object_loads.)"""
    p, log = churn(17000, ["-A", "plug_mul@arg1"])
    rows = run([SFTRACE, "query", "--no-symbols", "--format", "tsv", log,
                "SELECT (SELECT count(*) FROM frames), count(*), count(DISTINCT value), min(CAST(value AS INT)), "
                "max(CAST(value AS INT)) FROM args"]).stdout.split()[-5:]
    eq((rows, p.stderr), (["17000", "17000", "17000", "0", "16999"], ""), "frames, values, stderr")


def test_table_full_warning_names_the_object():
    """A spec file (as record writes it) naming 16,385 functions of the
    program, the runtime preloaded with it.
    Expected: one warning naming the program (what the user gave), the
    program's output unchanged.
    Was: the warning named record's internal file
    (/tmp/sftrace-notes-*/.args)."""
    exe = fixture()
    d = tmpdir()
    spec, log = os.path.join(d, ".args"), os.path.join(d, "sf.log")
    with open(spec, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {exe}\n")
        f.writelines(f"{0x100000 + 16 * k:#x} e0100 f{k}\n" for k in range(16385))
    os.chmod(spec, 0o600)
    p = run([exe, "ints"], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": log, "SFTRACE_ARGS": spec})
    eq((p.stdout, p.stderr), ("7 108.000000 1.500000 2.500000 28 60\n4464 44 65534 1 59701\n",
                              "sftrace: argument specs: functions past the first 16384 are recorded without values, "
                              f"from {exe}\n"), "output, stderr")


# ------------------------------------------------------------ open breaks

def test_break_seventh_argument_not_silently_dropped():
    """seven(1, 2, 3, 4, 5, 6, 7) (7 longs: the 7th on the stack),
    --auto-args.
    Expected: seven(1, 2, 3, 4, 5, 6, 7) = 28; or the 7th marked
    (<unrecorded>, as a struct in memory is).
    Observed: seven(1, 2, 3, 4, 5, 6) = 28; -- it reads as a 6-argument
    call, the 7th lost without a mark."""
    _, log = recorded("ints")
    got = [c for c in calls(log) if c.startswith("seven(")]
    check(got and re.fullmatch(r"seven\(1, 2, 3, 4, 5, 6, (7|<unrecorded>)\) = 28;", got[0]), f"got {got}")


def test_break_register_arguments_after_stack_ones():
    """nine_fp(1, ..., 9, 10): nine doubles (the 9th on the stack) then int
    k, which is in rdi; ldk(1.25L, 4): the long double on the stack, k in
    rdi, the return value in st0. --auto-args.
    Expected: k shown (10, 4) with the stack values marked, e.g.
    nine_fp(1.000000, ..., 8.000000, <unrecorded>, 10) = 55.000000;
    ldk(<unrecorded>, 4);
    Observed: nine_fp(1.000000, ..., 8.000000) = 55.000000; and ldk(); --
    k is read from nowhere although it sits in a register, and nothing
    says that anything is missing."""
    p, log = recorded("stackargs")
    eq(p.stdout, "55 5\n", "output")
    c = calls(log)
    eights = ", ".join(f"{i}.000000" for i in range(1, 9))

    def want():
        eq(len(c), 2, f"calls {c}")
        check(re.fullmatch(re.escape(f"nine_fp({eights}, ") + r"(9\.000000|<[a-z ]+>), 10\) = 55\.000000;", c[0]),
              f"nine_fp: {c[0]!r}")
        check(re.fullmatch(r"ldk\((1\.25\d*|<[a-z ]+>), 4\)( = (5\.0*|<[a-z ]+>))?;", c[1]), f"ldk: {c[1]!r}")
    want()


def test_break_cxx_const_member_name():
    """C++ `int ns::K::add(int, int) const` on an object with base 100,
    k.add(1, 2); --auto-args.
    Expected: one argument list, e.g. ns::K::add(0x7ffc..., 1, 2) const = 103;
    Was: ns::K::add(…) const(0x7ffc..., 1, 2) = 103;. Now the qualifiers
    go with the parameter list, as uftrace shows C++ calls (the expectation
    narrowed to that form). Static, overloaded and template functions are
    right: ns::K::sadd(3, 4) = 7; ns::over(5) = 6;
    ns::over(1.500000, 2) = 3; ns::tmax<…>(3, 9) = 9;"""
    prog = build_c("skep29x_cxx", ["skep29x_cxx.cc"], compiler="clang++")
    p, log = record([prog], args=["-q", "-a"])
    eq(p.stdout, "103 7 6 3 9\n", "output")
    c = calls(log)
    eq(c[1:], ["ns::K::sadd(3, 4) = 7;", "ns::over(5) = 6;", "ns::over(1.500000, 2) = 3;", "ns::tmax<…>(3, 9) = 9;"],
       "the others")
    check(re.fullmatch(r"ns::K::add\(0x[0-9a-f]+, 1, 2\) = 103;", c[0]), f"got {c[0]!r}")


def test_break_ms_abi_function():
    """`__attribute__((ms_abi)) long wadd(long a, long b)` (the Microsoft
    x64 convention: a in rcx, b in rdx; DWARF says DW_CC_LLVM_Win64),
    wadd(3, 4); --auto-args.
    Expected: wadd(3, 4) = 7; (or no values: not a System V prototype).
    Observed: wadd(1, 140731479672344) = 7; -- rdi and rsi, which hold
    whatever the caller left there."""
    p, log = recorded("msabi")
    eq(p.stdout, "7\n", "output")
    c = calls(log)
    check(c and c[0] in ("wadd(3, 4) = 7;", "wadd();"), f"got {c}")


def test_break_auto_args_debuglink():
    """The ints program with its DWARF moved to a separate file, as distros
    ship it (objcopy --only-keep-debug; --strip-debug
    --add-gnu-debuglink=prog.debug, side by side); --auto-args.
    Expected: add(3, 4) = 7; as with the DWARF inside (query's functions
    table finds add's file and line through the same link).
    Was: "warning: --auto-args: ./prog has no DWARF (build with -g):
    no values recorded", and add();. Now --auto-args finds the DWARF as
    the symbolizer does (symbols.c's sym_dwarf)."""
    d = tmpdir()
    prog = os.path.join(d, "prog")
    run(["cp", fixture(), prog])
    run(["objcopy", "--only-keep-debug", prog, prog + ".debug"])
    run(["objcopy", "--strip-debug", "--add-gnu-debuglink=prog.debug", prog], cwd=d)
    p, log = record([prog, "ints"], args=["-q", "-a"])
    eq(query(log, "SELECT file LIKE '%skep29x_args.c', line > 0 FROM functions WHERE name = 'add'"), [["1", "1"]],
       "add's source line through the debuglink")
    c = [x for x in calls(log) if x.startswith("add(")]
    eq((c, p.stderr), (["add(3, 4) = 7;"], ""), "add, stderr")


def test_break_query_help_lists_args_table():
    """`sftrace query --help` lists its tables (frames, functions, threads).
    Expected: the args table (frame_id, index, name, value) among them,
    as README and docs/QUERY.md say.
    Was: not listed."""
    out = run([SFTRACE, "query", "--help"]).stdout
    check(re.search(r"^\s*args\(frame_id, index, name, value", out, re.M), out[:600])


def churn(n, args):
    lib = build_c("libskep29x_plug.so", ["skep29x_plug.c"], shared=True)
    prog = build_c("skep29x_churn", ["skep29x_churn.c"], xray=False, libs=["-ldl"])
    p, log = record([prog, lib, str(n)], args=["-q"] + list(args))
    eq(p.stdout, f"{n * (n - 1)}\n", "output")
    return p, log


def test_break_reader_many_object_loads():
    """(Found here, not issue 29's own code.) The same host, 1,100 loads
    of the plugin, plain record; then `sftrace report` under the usual
    soft limit of 1,024 open files.
    Expected: the report (one function, 1,100 calls).
    Observed: "error: .../libskep29x_plug.so: Too many open files (use
    --symbol PATH, --force for placeholder names, or --no-symbols)", exit
    1: the reader kept a descriptor per object load. Now the loads of one
    file (path, build-id) share one opened file."""
    _, log = churn(1100, [])
    p = run(["sh", "-c", 'ulimit -n 1024 && exec "$0" report --format tsv "$1"', SFTRACE, log], check_rc=None)
    eq((p.returncode, p.stderr, re.findall(r"plug_mul\t(\d+)", p.stdout)[:1]), (0, "", ["1100"]), "report")
    for cmd, sql in (["replay"], None), (["dump"], None), (["query", "--format", "tsv"], "SELECT count(*) FROM frames"):
        q = run(["sh", "-c", 'ulimit -n 1024 && exec "$@"', "sh", SFTRACE] + cmd + [log] + ([sql] if sql else []),
                check_rc=None)
        eq((q.returncode, q.stderr.count("Too many open files")), (0, 0), f"{cmd[0]}: {q.stderr[-200:]!r}")
        check(q.stdout.count("plug_mul") >= 1100 or q.stdout.split()[-1] == "1100", f"{cmd[0]} output")


def test_trimmed_recording_keeps_values_in_log():
    """fib(20) with -A fib@arg1 -R fib@retval and record --max-depth 2,
    the log read by dump (the log's events, untrimmed by the reader).
    Expected: the runtime trims (records left out) and every call it keeps
    keeps its values: fib(20)'s arg1=20 right before its entry and
    retval=6765 right before its exit, as many fib ARGS events as fib
    entries and exits. Was: an ARGS record pinned every call around it,
    so nothing was trimmed ("0 records left out by the runtime").
    fib(20), not fib(15): the runtime trims a batch when it hands it off,
    and since values-only ARGS events (6 records a call, 10 before) fib(15)
    fits in one slot, which is never handed off."""
    _, log = recorded("fib20", ["--max-depth", "2", "-A", "fib@arg1", "-R", "fib@retval"])
    dump = run([SFTRACE, "dump", log]).stdout
    left = re.search(r"(\d+) records left out by the runtime", dump)
    check(left and int(left.group(1)) > 0, f"trimming: {left and left.group(0)}")
    ev = [re.sub(r"^\s*\d+\s+\d+\s+", "", ln).split() for ln in dump.split("\nevents:\n")[1].splitlines()[1:]]
    at = ev.index(["ARGS", "fib", "arg1=20"])
    eq(ev[at + 1], ["ENTRY", "fib"], "fib(20)'s entry after its values")
    at = ev.index(["ARGS", "fib", "retval=6765"])
    eq(ev[at + 1], ["EXIT", "fib"], "fib(20)'s exit after its value")
    eq(sum(e[:2] == ["ARGS", "fib"] for e in ev), sum(e in (["ENTRY", "fib"], ["EXIT", "fib"]) for e in ev),
       "fib ARGS events, fib entries and exits")


def test_break_trimmed_recording_keeps_values():
    """fib(15) with -A fib@arg1 -R fib@retval and record --max-depth 2 (by
    hand also --min-duration 1ms on fib(27): the 103 kept frames show no
    values either).
    Expected: the kept frame with its values: fib(15) = 610;
    Was: fib(); -- every value of the kept frames was gone: the runtime's
    trim kept no call that had values (h29a), and the reader's cut, which
    applies the header's thresholds, did not carry values (h29b)."""
    p, log = recorded("fib", ["--max-depth", "2", "-A", "fib@arg1", "-R", "fib@retval"])
    eq(p.stdout, "610\n", "output")
    c = calls(log)
    eq(c, ["fib(15) = 610;"], "calls")


def test_break_read_time_cuts_keep_values():
    """fib(15) recorded with -A fib@arg1 -R fib@retval (987 frames, all
    with values); then read with a cut: replay -F fib, replay --tid TID
    (which keeps every call: "kept 987 of 987"), query -F fib.
    Expected: the same values as without the cut: fib(15) { first, 987
    frames with values in query.
    Was: fib() { in replay, 0 rows in query's args table: any
    -F/-N/--tid/--max-depth cut dropped every value (Chrome JSON too).
    Now the cut carries each frame's values with it."""
    _, log = recorded("fib", ["-A", "fib@arg1", "-R", "fib@retval"])
    eq(calls(log)[0], "fib(15) {", "uncut")
    tid = query(log, "SELECT tid FROM threads")[0][0]
    by_f = calls_cut(log, ["-F", "fib"])
    by_tid = calls_cut(log, ["--tid", tid])
    n = query_cut(log, ["-F", "fib"], "SELECT count(DISTINCT frame_id) FROM args")
    eq((by_f[0], by_tid[0], n), ("fib(15) {", "fib(15) {", "987"), "-F, --tid, query -F")
    eq(calls_cut(log, ["--max-depth", "2"]), ["fib(15) = 610;"], "--max-depth")
    import json
    js = os.path.join(os.path.dirname(log), "c.json")
    run([SFTRACE, "convert", "-t", "chrome", "-F", "fib", log, "-o", js])
    with open(js) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("name") == "fib"]
    eq((len(ev), sum("retval" in e["args"] for e in ev), max(int(e["args"]["arg1"]) for e in ev)), (987, 987, 15),
       "Chrome -F: fib events, with a retval, the largest arg1")


def calls_cut(log, cut):
    return [c.strip() for c in call_column(replay_text(log, cut)) if "main" not in c]


def query_cut(log, cut, sql):
    return run([SFTRACE, "query", "--format", "tsv"] + cut + [log, sql]).stdout.split()[-1]


def test_break_small_and_large_doubles():
    """twice(5e-10) = 1e-09 and twice(1e300) = 2e300, --auto-args.
    Expected: values that read back as those doubles in replay, query,
    Parquet and Perfetto (which all carry the same text).
    Was: printf "%f": twice(0.000000) = 0.000000; and 1e300 as a
    301-digit decimal. Now "%g" outside [1e-4, 1e15): twice(5e-10) =
    1e-09;"""
    p, log = recorded("tiny")
    eq(p.stdout, "1e-09 2e+300\n", "output")
    vals = list(args_of(log, "twice").values())

    def want():
        eq(len(vals), 2, "twice frames")
        got = [(float(v["fparg1"]), float(v["retval"])) for v in vals]
        ok = [abs(a / w - 1) < 1e-9 and abs(r / 2 / w - 1) < 1e-9 for (a, r), w in zip(got, [5e-10, 1e300])]
        eq(ok, [True, True], f"values {vals}")
    want()


def test_break_specialised_parameters_not_invented():
    """C: static spin3(int mode, int x, int y), called once as spin3(2, 10,
    10); clang -O2 drops `mode` (DWARF: DW_OP_consts 2, x in rdi, y in
    rsi). Rust: wide(1, 2, 3, 4, 5, 6, 7) with 2..6 constant (DWARF
    DW_CC_nocall). --auto-args.
    Expected: the values as called, or none/<unrecorded> where the
    registers no longer hold them (DWARF says which).
    Observed: spin3(10, 10, -100451376) = 190; and wide(1, 7,
    18446744073709551612, 1, 0, 0) = 28: wrong values shown as facts
    (README names the limitation; the DWARF to avoid it is there).
    wide's return value is DW_CC_nocall's: LLVM may have dropped it (no
    caller used it: skeptic 29m's compute leaves rax as it was) and DWARF
    does not say whether, so it shows <unrecorded> (issue 29)."""
    _, log = recorded("spin3")
    c = calls(log)
    prog = rust_fixture("skep29x_rust")
    _, rlog = record([prog], args=["-q", "-a"])
    r = [x.strip() for x in call_column(replay_text(rlog)) if "skep29x_rust::wide(" in x]

    def want():
        check(c and re.fullmatch(r"spin3\((2|<[a-z ]+>), 10, 10\) = 190;", c[0]), f"spin3: {c}")
        check(r and re.fullmatch(r"skep29x_rust::wide\(1, (2|<[a-z ]+>), (3|<[a-z ]+>), (4|<[a-z ]+>), "
                                 r"(5|<[a-z ]+>), (6|<[a-z ]+>)(, 7|, <[a-z ]+>)?\) = (28|<unrecorded>);", r[0]), f"wide: {r}")
    want()


def test_break_rust_u8_enum():
    """Rust #[repr(u8)] enum Color { Red = 1, Green = 2, Blue = 200 },
    paint(Color::Blue) returns Blue; --auto-args.
    Expected: paint(200) = 200; (or the variant's name).
    Was: paint(-56) = -56; (the u8 read as signed). Now the enum's
    underlying type (DW_AT_type) gives the signedness."""
    prog = rust_fixture("skep29x_rust")
    _, log = record([prog], args=["-q", "-a"])
    got = [x.strip() for x in call_column(replay_text(log)) if "skep29x_rust::paint(" in x]
    check(got and re.fullmatch(r"skep29x_rust::paint\((200|Blue)\) = (200|Blue);", got[0]), f"got {got}")


if __name__ == "__main__":
    sfkit.main(globals())
