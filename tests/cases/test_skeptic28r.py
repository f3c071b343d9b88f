"""Skeptic's pass 28r on issue 28 (replay, graph, info, srcline, Perfetto at
any depth, names, thread labels), after using the tool on software we did
not write (regex-syntax's test suite, the bcrypt npm addon under node).
Each break is reduced to a small program here (fixtures
tests/fixtures/skep28r_*); a case that found a break skips as a known break
until it is fixed, the others show a claim held under that attack.

Runs under tests/run.py."""
import collections
import csv
import io
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sfkit  # noqa: E402
from sfkit import FIXBUILD, FIXTURES, SFTRACE, Skip, build_c, check, eq, record, run, tmpdir  # noqa: E402


def _calls(log, extra=()):
    """replay's call column, without the net-times header."""
    return sfkit.call_column(sfkit.replay_text(log, ["-q"] + list(extra)))


# ---- identical code folding: the name the recording filter chose ----

def _icf():
    if not shutil.which("ld.lld"):
        raise Skip("ld.lld not installed (identical code folding needs lld's --icf=all)")
    return build_c("skep28r_icf", ["skep28r_icf.c"],
                   flags=["-fnoxray-link-deps", "-ffunction-sections", "-fuse-ld=lld", "-Wl,--icf=all"])


def _icf_names(log):
    return sorted({m.group(1) for m in (re.match(r"\s*(\w+)\(", ln) for ln in _calls(log)) if m})


def test_icf_named_as_the_record_filter_chose():
    """skep28r_icf: alpha_sum, beta_sum and gamma_sum are one address.
    Recorded with a filter made by `sftrace filter -r '^alpha_sum$'` (or
    with `record --filter-regex '^gamma_sum$'`), the four calls show as
    beta_sum in replay, report and info: the user sees a function the filter
    did not ask for (issue 28, "Names"). Only a `-c FILE` given to the
    reading command chose the name; record now keeps its filter as
    STEM.recorded.filter and readers take its names."""
    exe = _icf()
    d = tmpdir()
    filt = os.path.join(d, "alpha.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", "^alpha_sum$", "-o", filt])
    _, log_a = record([exe], out=os.path.join(d, "a", "sf.log"), args=["-q", "-f", filt])
    _, log_g = record([exe], out=os.path.join(d, "g", "out"), args=["-q", "--filter-regex", "^gamma_sum$"])
    eq(_icf_names(log_a), ["alpha_sum"], "names in the replay of the -f alpha.filter recording")
    eq(_icf_names(log_g), ["gamma_sum"], "names in the replay of the --filter-regex '^gamma_sum$' recording")
    eq(_calls(log_a), ["alpha_sum();"] * 4, "replay of the alpha_sum recording")
    rep = run([SFTRACE, "report", "-q", "--format", "tsv", log_g]).stdout.splitlines()
    eq([r.split("\t")[1:3] for r in rep[1:]], [["gamma_sum", "4"]], "report of the gamma_sum recording")
    info = run([SFTRACE, "info", "-q", log_g]).stdout
    alias = re.search(r"alias: (\w+) = (.*)", info)
    check(alias and alias.group(1) == "gamma_sum" and sorted(alias.group(2).split(", ")) == ["alpha_sum", "beta_sum"],
          f"info's alias line: {info}")
    q = run([SFTRACE, "query", "-q", log_a, "select name, count(*) from frames group by name order by name"]).stdout
    eq(q.splitlines()[1:], ["alpha_sum\t4"], "query's frames of the alpha_sum recording")
    pb = os.path.join(d, "a.pb.gz")
    run([SFTRACE, "convert", "-q", log_a, "-o", pb])
    with open(pb + ".sql", "w") as f:
        f.write("select name, count(*) as n from slice group by name;")
    try:
        tp = sfkit.trace_processor()
    except Skip:
        tp = None
    if tp:
        eq(run([tp, "-q", pb + ".sql", pb], timeout=120).stdout.split(), ['"name","n"', '"alpha_sum",4'],
           "Perfetto's slices, read by trace_processor")
    pola = os.path.join(d, "g.pola")
    run([SFTRACE, "convert", "-q", "--type", "pola", log_g, "-o", pola])
    eq(sorted(r[1] for r in sfkit.parquet_query("pola_query.mjs", pola)["symtab"]), ["gamma_sum"],
       "the Parquet symtab's names")
    # A later run into the same place without a filter takes its filter away.
    _, again = record([exe], out=log_a, args=["-q", "--force"])
    check(not os.path.exists(os.path.join(d, "a", "sf.recorded.filter")), "the earlier run's kept filter is gone")
    eq(len(_icf_names(again)), 2, "main and the symbol table's name")


def test_icf_srcline_is_the_shown_name_s_line():
    """skep28r_icf recorded without a filter: outputs name the folded
    function beta_sum (say), but `replay --srcline`, `report --srcline` and
    query's functions.line give the line of alpha_sum's definition: the
    name and its source line disagree."""
    exe = _icf()
    _, log = record([exe], args=["-q"])
    names = _icf_names(log)
    eq(len(names), 2, f"main and one name for the folded function: {names}")
    shown = [n for n in names if n != "main"][0]
    src = os.path.join(FIXTURES, "skep28r_icf.c")
    want = 1 + next(i for i, ln in enumerate(open(src)) if ln.startswith(f"__attribute__((noinline)) long {shown}("))
    lines = [ln for ln in _calls(log, ["--srcline"]) if shown in ln]
    eq(len(lines), 4, "four calls of the folded function")
    got = re.search(r"skep28r_icf\.c:(\d+) \*/$", lines[0])
    check(got, f"a source line: {lines[0]!r}")
    eq(int(got.group(1)), want, f"replay --srcline's line of {shown} (not another alias's)")
    rep = [ln for ln in run([SFTRACE, "report", "-q", "--srcline", log]).stdout.splitlines() if shown in ln]
    eq(len(rep), 1, "report's row of the folded function")
    check(rep[0].endswith(f"skep28r_icf.c:{want}"), f"report --srcline: {rep[0]!r}")
    q = run([SFTRACE, "query", "-q", log, f"select line from functions where name = '{shown}'"]).stdout.split()
    eq(q, ["line", str(want)], "query's functions.line")


# ---- info: the recording options ----

def test_info_shows_the_recording_filter_and_cap():
    """Issue 28 item 3: info gives "the recording options (filter, ring,
    cap, alloc, trims)". A run recorded with `-f FILE --max-size 1M` shows
    ring, trims and allocations but neither the filter nor the cap (text
    or json); `sleds patched : 3 of 5 (a filter, or objects loaded late)`
    only guesses. (Fixed: the log header keeps them, docs/FORMAT.md.)"""
    exe = build_c("skep28r_plain", ["skep28r_icf.c"])  # no folding needed: any program
    d = tmpdir()
    filt = os.path.join(d, "beta.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", "^beta_sum$", "-o", filt])
    _, log = record([exe], out=os.path.join(d, "r", "sf.log"), args=["-q", "-f", filt, "--max-size", "1M"])
    text = run([SFTRACE, "info", "-q", log]).stdout
    js = run([SFTRACE, "info", "-q", "--format", "json", log]).stdout
    has_filter = "beta.filter" in text and "beta.filter" in js
    has_cap = re.search(r"1(\.0)? MiB|1048576", text) and "1048576" in js
    check(has_filter and has_cap, f"info names the filter and the cap: {text}")
    proc = json.loads(js)["processes"][0]
    eq(_info_lines(text, ("sleds patched", "filter", "max size")),
       [f"3 of {proc['sleds']} (the filter)", f"-f {os.path.realpath(filt)} (1 function selected)",
        "1048576 bytes (1.00 MiB), not reached"], "info's option lines")
    eq({k: proc[k] for k in ("filter", "filter_functions", "max_size", "max_size_reached")},
       {"filter": f"-f {os.path.realpath(filt)}", "filter_functions": 1, "max_size": 1048576,
        "max_size_reached": False}, "info's json options")


def _info_lines(text, keys):
    got = dict(re.findall(r"^# (\w[\w ]*?)\s*: (.*)$", text, re.M))
    return [got.get(k) for k in keys]


def test_info_shows_a_filter_regex_and_a_cap_reached():
    """`record --filter-regex RE --within --max-size 40K` on skep28r_window
    (200,010 calls: far more than 40K of log): info says the regex, the
    functions it selected (the two that open windows), the cap and that the
    recording stopped at it; a recording without either says none."""
    exe = build_c("skep28r_window", ["skep28r_window.c"])
    d = tmpdir()
    _, log = record([exe], out=os.path.join(d, "r", "sf.log"),
                    args=["-q", "--filter-regex", "^(tiny|mark)$", "--within", "--max-size", "40K"])
    text = run([SFTRACE, "info", "-q", log]).stdout
    eq(_info_lines(text, ("filter", "max size")),
       ["--filter-regex ^(tiny|mark)$ --within (2 functions selected)",
        "40960 bytes (40.0 KiB), reached: recording stopped there (below a log's header and one thread's "
        "buffer, which the cap counts whole: at least 68K plus the objects' chunks records events)"],
       "info's option lines")
    proc = json.loads(run([SFTRACE, "info", "-q", "--format", "json", log]).stdout)["processes"][0]
    eq([proc[k] for k in ("filter", "filter_functions", "max_size", "max_size_reached")],
       ["--filter-regex ^(tiny|mark)$ --within", 2, 40960, True], "info's json options")
    _, plain = record([exe, "10"], out=os.path.join(d, "p", "sf.log"), args=["-q"])
    eq(_info_lines(run([SFTRACE, "info", "-q", plain]).stdout, ("sleds patched", "filter", "max size")),
       ["8 of 8", "none", "none"], "info without a filter or a cap")


# ---- thread names ----

def test_main_thread_keeps_its_name_after_a_named_thread_exits():
    """skep28r_tname: a worker names itself worker::tests:x, makes one
    traced call and exits; main then makes 6,000 traced calls (one buffer
    hand-off) and ends. The program prints `main is skep28r_tname`, but
    query's threads table, info and report --threads call main
    worker::tests:x: the buffer main continued in was the worker's, and its
    header kept the worker's name (the runtime's slot_swap did not rename
    the slot it switches to; it now copies the thread's name). Seen first on regex-syntax's test suite,
    whose main thread showed as `utf8::tests::si (regex_syntax::main)`."""
    exe = build_c("skep28r_tname", ["skep28r_tname.c"], libs=["-lpthread"])
    bad = []
    for _ in range(3):
        p, log = record([exe, "6000"], args=["-q"])
        eq(p.stdout, "main is skep28r_tname\n", "the program's own view")
        pid = int(run([SFTRACE, "info", "-q", "--format", "json", log]).stdout.split('"pid":', 1)[1].split(",")[0])
        rows = run([SFTRACE, "query", "-q", log, f"select thread_name from threads where tid = {pid}"]).stdout
        if rows.split("\n")[1] != "skep28r_tname":
            bad.append(rows.split("\n")[1])
    eq(bad, [], "main's name in runs where it differs from skep28r_tname")


# ---- source lines with line tables only ----

def test_srcline_with_line_tables_only_names_the_function_s_own_file():
    """skep28r_cellbump.rs built with `-C debuginfo=line-tables-only` (what
    `cargo sftrace` uses for a crate without a profiling profile: "release
    code generation with line tables"): bump's first instruction is
    RefCell::borrow_mut inlined from core, and `--srcline` gives
    library/core/src/cell.rs:NNNN for bump, a file the user never wrote. The
    DWARF has the inlined call's site (DW_AT_call_file/line: line 12 of the
    fixture); with full debug info it is bump's line, 11. Seen on
    regex-syntax: ParserI::bump at core/src/cell.rs:555."""
    src = os.path.join(FIXTURES, "skep28r_cellbump.rs")
    out = os.path.join(FIXBUILD, "skep28r_cellbump_lt")
    os.makedirs(FIXBUILD, exist_ok=True)
    rustc = shutil.which("rustc") or os.path.expanduser("~/.cargo/bin/rustc")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        run([rustc, "-O", "-C", "debuginfo=line-tables-only", "-Zinstrument-xray=always", "-o", out, src],
            env={"RUSTC_BOOTSTRAP": "1"})
    p, log = record([out], args=["-q"])
    eq(p.stdout, "5\n", "the program's output")
    q = run([SFTRACE, "query", "-q", log,
             "select file, line from functions where short_name = 'skep28r_cellbump::bump'"]).stdout
    rows = list(csv.reader(io.StringIO(q), delimiter="\t"))
    eq(len(rows), 2, f"bump's row: {q!r}")
    file, line = rows[1]
    rep = [ln for ln in run([SFTRACE, "report", "-q", "--srcline", log]).stdout.splitlines() if "::bump" in ln]
    eq(len(rep), 1, "report's bump row")
    eq((file, line), (src, "12"), "bump's line: the inlined borrow_mut's call site in the user's file")
    check(rep[0].endswith(f"{src}:{line}"), rep[0])


def test_srcline_without_line_info_says_so():
    """`--srcline` on a program built without -g prints no source line and
    no word on stderr, exit 0: the reader cannot tell an object without
    line tables from an option that did nothing. Cargo's release profile
    strips debug info even with RUSTFLAGS=-g, so this is what the first try
    on a crate's test binary gives."""
    exe = build_c("skep28r_nog", ["skep28r_icf.c"], flags=["-g0"])
    _, log = record([exe], args=["-q"])
    for cmd in (["replay", "--no-pager"], ["report"]):
        p = run([SFTRACE] + cmd + ["--srcline", log])
        check(not re.search(r"skep28r_icf\.c:\d", p.stdout), p.stdout)
        lines = p.stderr.splitlines()
        eq(len(lines), 1, f"one line on stderr from {cmd[0]} --srcline: {p.stderr!r}")
        check(exe in lines[0] and "no source lines" in lines[0], lines[0])


# ---- Perfetto past trace processor's nesting limit (a claim that held) ----

TP_QUERY = """
select s.name as name, s.depth as depth, s.ts as ts, s.dur as dur, t.name as track, th.tid as tid
  from slice s join thread_track t on s.track_id = t.id join thread th using (utid)
union all
select 'STAT ' || name, idx, value, null, null, null from stats
  where value > 0 and severity in ('error', 'data_loss');
"""


def test_deep_shapes_load_whole_in_trace_processor():
    """skep28r_deep: a 3,001-deep recursion with calls after inner calls
    return, a 1,502-deep mutual recursion, a thread 1,201 deep at the same
    time, and a longjmp out of 2,001 frames. Every call is one slice; each
    thread has one root on its own track; each slice that starts a
    continuation track lies inside a depth-511 slice of the track before
    it; absolute depths reach 3,002; no import error or data loss."""
    tp = sfkit.trace_processor()
    exe = build_c("skep28r_deep", ["skep28r_deep.c"], flags=["-fno-optimize-sibling-calls"], libs=["-lpthread"])
    p, log = record([exe], args=["-q"])
    eq(p.stdout, "2999 1200\n", "the program's output")
    out = os.path.join(os.path.dirname(log), "sf.pb.gz")
    run([SFTRACE, "convert", "-q", log, "-o", out])
    qfile = out + ".sql"
    with open(qfile, "w") as f:
        f.write(TP_QUERY)
    rows = list(csv.DictReader(io.StringIO(run([tp, "-q", qfile, out], timeout=120).stdout)))
    eq([r["name"] for r in rows if r["name"].startswith("STAT ")], [], "import errors")
    slices = [r for r in rows if not r["name"].startswith("STAT ")]
    eq(collections.Counter(r["name"] for r in slices),
       collections.Counter({"down": 4202, "jump_down": 2001, "odd": 751, "even": 751, "leaf": 10,
                            "main": 1, "thr": 1, "catcher": 1}), "slices per function")
    start = {}  # track name -> its first absolute depth
    for r in slices:
        m = re.search(r" depth (\d+)-(\d+)$", r["track"])
        start[r["track"]] = int(m.group(1)) if m else 0
    eq(max(start[r["track"]] + int(r["depth"]) for r in slices), 3002, "deepest absolute depth")
    roots = sorted((r["tid"], r["name"]) for r in slices if r["depth"] == "0" and start[r["track"]] == 0)
    eq([n for _, n in roots], ["main", "thr"], "one root per thread, on the thread's own track")
    by_track = collections.defaultdict(list)
    for r in slices:
        by_track[(r["tid"], start[r["track"]])].append((int(r["ts"]), int(r["ts"]) + int(r["dur"]), int(r["depth"])))
    for (tid, first), ss in by_track.items():
        if not first:
            continue
        parents = [(b, e) for b, e, dep in by_track[(tid, first - 512)] if dep == 511]
        for b, e, dep in ss:
            if dep == 0:
                check(any(pb <= b and e <= pe for pb, pe in parents),
                      f"tid {tid}: a root of the track from depth {first} at {b} has no parent on the track before")


# ---- exit state of a traced child ----

def test_child_exit_code_is_recorded_for_exit_and_return():
    """skep28r_exits: main forks and execs itself three times and reaps
    each child. info gives `exited 7 (_exit)` for the child that called
    _exit(7), but `exited (code not recorded: its parent was not sftrace
    record)` for the one that called exit(5) and the one whose main
    returned 6: the common endings lose their code, though glibc hands it
    to on_exit handlers (the runtime now registers one). Under `sftrace record -- cargo test` (or npm
    test), every test binary is such a child: which one failed is not in
    the logs."""
    exe = build_c("skep28r_exits", ["skep28r_exits.c"])
    d = tmpdir()
    p, _ = record([exe], out=os.path.join(d, "sf.log"), args=["-q"])
    kids = {m: (int(pid), int(code)) for m, pid, code in re.findall(r"(\S)=(\d+) (\d+)", p.stdout)}
    eq(sorted((m, c) for m, (_, c) in kids.items()), [("_", 7), ("e", 5), ("r", 6)], "the children's own codes")
    text = run([SFTRACE, "info", "-q", d]).stdout
    state = {int(b.split("\n", 1)[0]): re.search(r"^# exit state\s*: (.*)$", b, re.M).group(1)
             for b in text.split("# process ")[1:]}
    eq(state[kids["_"][0]], "exited 7 (_exit)", "the _exit child")
    got = (state[kids["e"][0]], state[kids["r"][0]])
    eq([g.split()[:2] for g in got], [["exited", "5"], ["exited", "6"]], "exit(5) and return 6")


# ---- a name copied from report, as a trigger ----

def test_F_and_trigger_take_a_name_copied_from_report_whole():
    """skep28r_trig: report prints `ns::P<…>::bump()` and
    `ns::P<…>::bump_space()`; main calls bump_space, then bump. `-F
    'ns::P<…>::bump'` keeps bump alone, but the name as report prints it,
    `-F 'ns::P<…>::bump()'`, keeps bump_space too (its parentheses make it
    a regex, unanchored), and `record --ring 128K --trigger
    'ns::P<…>::bump()'` snapshots on the entry of bump_space. Seen on
    regex-syntax: --trigger 'regex_syntax::ast::parse::ParserI<…>::bump>1ms',
    copied from report, fired on ParserI::bump_space."""
    exe = build_c("skep28r_trig", ["skep28r_trig.cc"], compiler="clang++")
    d = tmpdir()
    _, plain = record([exe], out=os.path.join(d, "plain.log"), args=["-q"])
    check("ns::P<…>::bump()\n" in run([SFTRACE, "report", "-q", plain]).stdout, "report's name for bump")
    eq(_calls(plain, ["-F", "ns::P<…>::bump"]), ["ns::P<…>::bump();"], "-F without the parentheses")
    f_got = _calls(plain, ["-F", "ns::P<…>::bump()"])
    eq(sorted(_calls(plain, ["-F", "P<.*>::bump"])), ["ns::P<…>::bump();", "ns::P<…>::bump_space();"],
       "a regex no function is named by still finds both")
    run([SFTRACE, "record", "-q", "--ring", "128K", "--trigger", "ns::P<…>::bump()", "--max-snapshots", "1",
         "-o", os.path.join(d, "ring", "sf.log"), "--", exe])
    snaps = [f for f in os.listdir(os.path.join(d, "ring")) if ".snap." in f]
    eq(len(snaps), 1, "one snapshot")
    head = [ln for ln in run([SFTRACE, "dump", os.path.join(d, "ring", snaps[0])]).stdout.splitlines()
            if ln.startswith("snapshot 1,")]
    eq(len(head), 1, "the snapshot's header")
    fired = re.search(r"while the process ran: (.*?) entered at", head[0]).group(1)
    eq(f_got, ["ns::P<…>::bump();"], "-F with the parentheses, as report prints the name")
    eq(fired, "ns::P<int>::bump()", "the function --trigger 'ns::P<…>::bump()' fired on")


def test_a_chosen_alias_keeps_the_other_names_as_aliases():
    """skep28r_icf recorded whole: info lists `alias: beta_sum = alpha_sum,
    gamma_sum`. Read with `-c FILE` where FILE was made by `filter -r
    '^alpha_sum$'`, outputs name the function alpha_sum, as they should, but
    info says `alias: alpha_sum = gamma_sum` and the Parquet symtab's
    aliases lose beta_sum too: the name the choice displaced is no longer
    listed anywhere (issue 28: "The others are listed as aliases in info and
    in the Parquet symtab")."""
    exe = _icf()
    d = tmpdir()
    _, log = record([exe], out=os.path.join(d, "r", "sf.log"), args=["-q"])
    whole = re.search(r"alias: (\w+) = (.*)", run([SFTRACE, "info", "-q", log]).stdout)
    check(whole, "an alias line without -c")
    eq(sorted([whole.group(1)] + whole.group(2).split(", ")), ["alpha_sum", "beta_sum", "gamma_sum"], "all three names")
    filt = os.path.join(d, "alpha.filter")
    run([SFTRACE, "filter", "-q", "-p", exe, "-r", "^alpha_sum$", "-o", filt])
    eq(_calls(log, ["-c", filt]), ["alpha_sum();"] * 4, "replay -c names it alpha_sum")
    src = os.path.join(FIXTURES, "skep28r_icf.c")
    want = 1 + next(i for i, ln in enumerate(open(src)) if ln.startswith("__attribute__((noinline)) long alpha_sum("))
    lines = {re.search(r"skep28r_icf\.c:(\d+) \*/$", ln).group(1)
             for ln in _calls(log, ["-c", filt, "--srcline"]) if "alpha_sum" in ln}
    eq(lines, {str(want)}, "replay -c --srcline gives alpha_sum's own line")
    got = re.search(r"alias: (\w+) = (.*)", run([SFTRACE, "info", "-q", "-c", filt, log]).stdout)
    check(got and got.group(1) == "alpha_sum", f"info -c names alpha_sum first: {got and got.group(0)}")
    pola = os.path.join(d, "c.pola")
    run([SFTRACE, "convert", "-q", "-c", filt, "--type", "pola", log, "-o", pola])
    in_symtab = b"beta_sum" in open(pola + ".symtab", "rb").read()
    eq(sorted(got.group(2).split(", ")), ["beta_sum", "gamma_sum"], "info -c's aliases of alpha_sum")
    check(in_symtab, "the Parquet symtab keeps beta_sum")


# ---- thread labels: a spawned closure that only allocates ----

def test_spawned_thread_label_is_not_the_allocator():
    """skep28r_spawn: a thread named spawned::worker::long (cut to
    `spawned::worker`) runs a closure the compiler inlines into std's
    __rust_begin_short_backtrace::<skep28r_spawn::main::{closure#0}, usize>;
    all it calls is the allocator (RawVec growth, __rust_alloc). The label is
    `spawned::worker (__rustc::__rust_no_alloc_shim_is_unstable_v2)`: the
    allocator plumbing the label is meant to skip (fixed: plumbing a wrapper
    calls is skipped, and a wrapper that calls only plumbing is named by the
    closure in its type arguments). The closure
    (skep28r_spawn::main's) is in the frames' names. Seen on regex-syntax:
    no_stack_overflow_on_drop's spawned thread is labelled
    `ast::tests::no_ (__rustc::__rust_dealloc)`."""
    exe = sfkit.rust_fixture("skep28r_spawn")
    p, log = record([exe], args=["-q"])
    eq(p.stdout, "500500\n", "the program's output")
    rows = run([SFTRACE, "query", "-q", log, "select label from threads where thread_name = 'spawned::worker'"]).stdout
    rows = rows.splitlines()
    eq(len(rows), 2, f"one cut-named thread: {rows}")
    label = rows[1]
    check(label.startswith("spawned::worker ("), label)
    check("__rust" not in label and "alloc" not in label and "skep28r_spawn::main" in label,
          f"the spawned thread's label names its closure: {label!r}")
    eq(label, "spawned::worker (skep28r_spawn::main::{closure})", "the label")


# ---- --time: one window, the same calls in every command ----

def _window_functions(cmd, log, window):
    p = run([SFTRACE] + cmd + ["-q", "--time", window, log])
    return p.stdout


def test_time_window_keeps_the_same_calls_in_every_command():
    """skep28r_window: 200,000 tiny calls, then mark, then 10 more. dump
    shows mark's entry at T ns from the trace start; `--time T..T+1us` keeps
    mark in dump, convert and `replay --raw-times`, but `replay`, `report`
    and `graph` (net times by default) cut their window on a clock with the
    tracer's cost taken off, which is milliseconds behind by then: they
    keep tiny calls from elsewhere and no mark (fixed: every command cuts
    on the recorded clock, and shows its own times). SKILL says `--time` is
    measured from the trace start and every reading command takes the same
    options. Seen on a 2-thread recursion: `report --time` dropped a whole
    thread that dump, convert and Perfetto kept in the same window."""
    exe = build_c("skep28r_window", ["skep28r_window.c"])
    p, log = record([exe], args=["-q"])
    eq(p.stdout, "1\n", "the program's output")
    ev = [ln.split() for ln in run([SFTRACE, "dump", "-q", log]).stdout.split("\nevents:\n", 1)[1].splitlines()]
    t = next(int(f[0]) for f in ev if len(f) >= 4 and f[2] == "ENTRY" and f[-1] == "mark")
    window = f"{t}ns..{t + 1000}ns"
    dumped = {ln.split()[-1].replace("(cut", "").strip() for ln in
              run([SFTRACE, "dump", "-q", "--time", window, log]).stdout.split("\nevents:\n", 1)[1].splitlines()[1:]
              if " ENTRY " in ln}
    check("mark" in dumped, f"dump --time {window} keeps mark: {dumped}")
    raw = sfkit.call_column(_window_functions(["replay", "--no-pager", "--raw-times"], log, window))
    check(any(ln.strip().startswith("mark()") for ln in raw), f"replay --raw-times keeps mark: {raw}")
    net = sfkit.call_column(_window_functions(["replay", "--no-pager"], log, window))
    rep = _window_functions(["report", "--format", "tsv"], log, window)
    graph = _window_functions(["graph"], log, window)
    # The window is cut on the recorded clock everywhere: net and raw
    # replays keep the same calls; only their times differ.
    eq(net, raw, f"replay's calls with net and raw times in --time {window}")
    check(any(ln.strip().startswith("mark()") for ln in net), f"replay keeps mark: {net}")
    check("\tmark\t" in rep, f"report keeps mark: {rep}")
    check(re.search(r"\(1\) mark$", graph, re.M), f"graph keeps mark: {graph}")
