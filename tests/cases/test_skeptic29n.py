"""skeptic29n: issue 29's claims attacked with programs of our own:
strings read from the thread's stack with plain loads, log format 7's
values-only ARGS form, the --auto-args DWARF cache, and the cost.

tests/fixtures/skep29n_stack.c (strings on stacks with PROT_NONE pages),
skep29n_fmt.c (threads, recursion, longjmp, tail calls, many functions).
Cases that hold are plain tests; a break is asserted as it should be and
decorated @sfkit.known_break(29, ...). Each docstring gives program,
expected and observed.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic29n.py."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import SFTRACE, build_c, call_column, check, eq, record, replay_text, run, tmpdir  # noqa: E402

SPECS = ["-A", "take@arg1/s", "-A", "keep@arg1/s"]


def stack_fixture():
    return build_c("skep29n_stack", ["skep29n_stack.c"], libs=["-lpthread"])


def untraced(mode):
    return run([stack_fixture(), mode]).stdout


def stack_calls(mode, args):
    """(program's stdout, exit status, take/keep lines of replay) of skep29n_stack MODE."""
    p, log = record([stack_fixture(), mode], args=["-q"] + args, check_rc=None)
    lines = []
    if p.returncode == 0:
        lines = [c.strip() for c in call_column(replay_text(log)) if "take(" in c or "keep(" in c]
    return p.stdout, p.returncode, lines


def _stack_case(mode, want_calls, want_auto):
    want_out = untraced(mode)
    out, rc, lines = stack_calls(mode, SPECS)
    eq((out, rc), (want_out, 0), f"{mode}: -A take@arg1/s: the program's output and status as untraced")
    eq(lines, want_calls, f"{mode}: -A values")
    out, rc, lines = stack_calls(mode, ["--auto-args"])
    eq((out, rc), (want_out, 0), f"{mode}: --auto-args: the program's output and status as untraced")
    eq(lines, want_auto, f"{mode}: --auto-args values")


# ---------------------------------------------------------------- stacks
def test_stack_strings_that_hold():
    """Strings straddling a page of main's stack, a local, a heap copy, and
    a string at the top of a sigaltstack whose next page is PROT_NONE
    (from the handler, which runs off the thread's stack): the values, and
    the program's output unchanged."""
    _stack_case("ok", ['take("straddle");', 'take("local");', 'take("heap");'],
                ['take("straddle") = 8;', 'take("local") = 5;', 'take("heap") = 4;'])
    _stack_case("alt", ['take("al");'], ['take("al") = 2;'])


@sfkit.known_break(29, "a legal 2-byte string in the last 3 bytes of a main-stack page whose next page the "
                       "program made PROT_NONE: the traced program dies of SIGSEGV (exit 139) with -A take@arg1/s "
                       "and with --auto-args; untraced it prints 'end 2' (stack_copy memcpy's the whole 64-byte "
                       "budget with plain loads)")
def test_break_stack_string_before_prot_none_page():
    _stack_case("end", ['take("hi");'], ['take("hi") = 2;'])


@sfkit.known_break(29, "a pointer into a PROT_NONE page of main's own stack passed to keep(const char *): "
                       "SIGSEGV (exit 139) with -A keep@arg1/s and --auto-args, instead of keep(<unreadable>)")
def test_break_stack_pointer_into_prot_none_page():
    _stack_case("none", ["keep(<unreadable>);"], ["keep(<unreadable>) = 1;"])


@sfkit.known_break(29, "a makecontext coroutine stack carved from main's stack with a PROT_NONE guard above it "
                       "(as between coroutine stacks): take(\"co\") at its top kills the traced program (SIGSEGV, "
                       "exit 139); the coroutine's frame lies inside main's stack range, so plain loads are used")
def test_break_coroutine_stack_in_main_stack_with_guard():
    _stack_case("coro", ['take("co");'], ['take("co") = 2;'])


@sfkit.known_break(29, "a pthread's own stack with a PROT_NONE page after a legal string 'hi' in its frame: "
                       "SIGSEGV (exit 139) traced with -A or --auto-args; untraced prints 'thread 2'")
def test_break_thread_stack_string_before_prot_none_page():
    _stack_case("thread", ['take("hi");'], ['take("hi") = 2;'])


if __name__ == "__main__":
    sfkit.main(globals())


# ---------------------------------------------------------------- format 7
def fmt_fixture():
    return build_c("skep29n_fmt", ["skep29n_fmt.c"], libs=["-lpthread"])


def query_rows(log, sql):
    out = run([SFTRACE, "query", "--format", "tsv", log, sql]).stdout.splitlines()
    return [ln.split("\t") for ln in out[1:]]


def fn_args(log, func):
    """[(tid, {name: value})] of FUNC's frames in order, from query's args table."""
    rows = query_rows(log, "SELECT f.frame_id, f.tid, a.name, a.value FROM args a JOIN frames f USING (frame_id) "
                           f"WHERE f.name = '{func}' ORDER BY f.frame_id, a.\"index\"")
    out = {}
    for fid, tid, name, value in rows:
        out.setdefault(int(fid), (int(tid), {}))[1][name] = value
    return [out[k] for k in sorted(out)]


@sfkit.known_break(29, "a --trigger function records no values: skep29n_fmt alloc with --auto-args --ring 128K "
                       "--trigger add shows every call as 'add();' in the log and in the snapshot (without "
                       "--trigger: 'add(4999, -121) = 4878;'); the same with -A add@arg1,arg2 -R add@retval")
def test_break_trigger_function_keeps_its_values():
    d = tmpdir()
    log = os.path.join(d, "t.log")
    p, _ = record([fmt_fixture(), "alloc"], out=log, args=["-q", "--auto-args", "--ring", "128K", "--trigger", "add",
                                                           "--max-snapshots", "1"])
    eq(p.stdout, "alloc 12502200\n", "the program's output")
    snaps = [f for f in os.listdir(d) if ".snap." in f]
    eq(len(snaps), 1, "one snapshot")
    for f in [log, os.path.join(d, snaps[0])]:
        lines = [c.strip() for c in call_column(replay_text(f)) if "add(" in c]
        check(lines, f"{f}: add's calls")
        if f == log:
            eq(lines[-1], "add(4999, -121) = 4878;", "the log: add's last call")
        else:
            check(lines[0].startswith("add(0, 0)"), f"the snapshot: add's first call: {lines[0]!r}")


def _sums(log, func):
    """{name: (count, sum of values as integers)} of FUNC's values, from query."""
    rows = query_rows(log, "SELECT a.name, count(*), sum(cast(a.value AS bigint)) FROM args a JOIN frames f "
                           f"USING (frame_id) WHERE f.name = '{func}' GROUP BY 1 ORDER BY 1")
    return {n: (int(c), int(s)) for n, c, s in rows}


def test_format7_threads_recursion_longjmp_tails_many_functions():
    """skep29n_fmt under --auto-args: 8 threads x 20,000 add(t, i); rec
    30,000 deep; longjmp out of 6 deepj frames x 1,000; t1 tail-calling t2
    x 1,000; 3,000 distinct fN(N) = 2N (ids past the table). Every value
    exact (query's args table), tail calls' return marked."""
    exe = fmt_fixture()
    want = {
        "threads": ("threads 1600480000\n", "add", {"arg1": (160000, 560000), "arg2": (160000, 1599920000),
                                                    "retval": (160000, 1600480000)}),
        "deep": ("deep 60007\n", "rec", {"arg1": (30001, 450015000), "arg2": (30001, 450225007),
                                         "retval": (30001, 1350255007)}),
        "jump": ("jump 500500\n", "deepj", {"arg1": (6000, 2997000), "arg2": (6000, 15000)}),
        "tail": ("tail 501505000\n", "t2", {"arg1": (1000, 500500), "arg2": (1000, 1005000),
                                            "retval": (1000, 501505000)}),
    }
    for mode, (out, func, sums) in want.items():
        p, log = record([exe, mode], args=["-q", "--auto-args"])
        eq(p.stdout, out, f"{mode}: the program's output")
        eq(_sums(log, func), sums, f"{mode}: {func}'s values")
        if mode == "tail":
            eq(query_rows(log, "SELECT a.value, count(*) FROM args a JOIN frames f USING (frame_id) "
                               "WHERE f.name = 't1' AND a.name = 'retval' GROUP BY 1"), [["<unrecorded>", "1000"]],
               "t1's return value (it tail-called)")
        if mode == "threads":
            threads_log = log
    p, log = record([exe, "many"], args=["-q", "--auto-args"])
    eq(p.stdout, "many 8997000\n", "many: the program's output")
    rows = query_rows(log, "SELECT f.name, x.value || ',' || r.value FROM args x JOIN args r USING (frame_id) "
                           "JOIN frames f USING (frame_id) WHERE f.name GLOB 'f[0-9]*' AND x.name = 'arg1' "
                           "AND r.name = 'retval'")
    eq(len(rows), 3000, "many: fN's frames")
    bad = [r for r in rows if r[1] != f"{r[0][1:]},{2 * int(r[0][1:])}"]
    eq(bad[:5], [], f"many: fN(N) = 2N ({len(bad)} not)")
    # A log cut short: a warning in dump, every value read is whole.
    cut = os.path.join(tmpdir(), "cut.log")
    with open(threads_log, "rb") as f, open(cut, "wb") as g:
        g.write(f.read(1234567))
    d = run([SFTRACE, "dump", cut]).stdout
    check("truncated: log ends mid-chunk" in d, "dump warns of the cut")
    rows = query_rows(cut, "SELECT count(*), sum(cast(r.value AS bigint) = cast(x.value AS bigint) + "
                           "cast(y.value AS bigint)) FROM args r JOIN args x USING (frame_id) JOIN args y "
                           "USING (frame_id) JOIN frames f USING (frame_id) WHERE f.name = 'add' AND "
                           "r.name = 'retval' AND x.name = 'arg1' AND y.name = 'arg2'")
    check(int(rows[0][0]) > 50000 and rows[0][0] == rows[0][1], f"the cut log's add calls are whole: {rows}")


def test_format7_ring_keeps_exact_values():
    """--ring 128K with 8 threads: the rings that survive hold add(6, i)
    for a run of i ending at 19,999, each = arg1 + arg2, in query and in
    Perfetto's args table."""
    p, log = record([fmt_fixture(), "threads"], args=["-q", "--auto-args", "--ring", "128K"])
    eq(p.stdout, "threads 1600480000\n", "the program's output")
    rows = fn_args(log, "add")
    whole = [a for _, a in rows if len(a) == 3]
    check(len(whole) > 500, f"add's whole frames in the ring: {len(whole)}")
    bad = [a for a in whole if int(a["retval"]) != int(a["arg1"]) + int(a["arg2"])]
    eq(bad, [], "retval = arg1 + arg2")
    last = {}
    for tid, a in rows:
        if "arg2" in a:
            last.setdefault(tid, []).append(int(a["arg2"]))
    for tid, v in last.items():
        eq(v, list(range(20000 - len(v), 20000)), f"thread {tid}'s add calls are the last ones, in order")
