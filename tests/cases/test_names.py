"""Readable names: the short style (--names short) in report, flamegraph,
folded and Chrome outputs, the full names where the data is (report --format
tsv, Parquet), and Perfetto's short slice names with the full name as the
slice's source function name. On the Rust fixture, whose generic and closure
names are long.

Runs under tests/run.py, or alone: python3 tests/cases/test_names.py."""
import json
import os
import re
import subprocess
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import ROOT, SFTRACE, Skip, build_c, check, eq, record, run, rust_fixture, tmpdir, tp_rows, trace_processor  # noqa: E402

# A trait impl on a generic type, in both styles (rust_prog's Vec of shapes).
DROP_FULL = "<alloc::vec::Vec<alloc::boxed::Box<dyn rust_prog::Shape>> as core::ops::drop::Drop>::drop"
DROP_SHORT = "<alloc::vec::Vec<…> as core::ops::drop::Drop>::drop"
# apply::<main::{closure#0}::{closure#0}::{closure#0}>-like generic over a closure
APPLY = re.compile(r"^rust_prog::apply::<…>$")

_log = []


def rust_log():
    if not _log:
        _, log = record([rust_fixture()])
        _log.append(log)
    return _log[0]


def report_names(args):
    out = run([SFTRACE, "report", "-n", "0"] + args + [rust_log()]).stdout
    names = []
    for line in out.splitlines()[1:]:
        if not line.strip():
            break
        names.append(re.split(r"\s{2}", line.strip())[-1])
    return names


def test_report_short_by_default_full_in_tsv():
    short = report_names([])
    check(DROP_SHORT in short, short)
    check(any(APPLY.match(n) for n in short), short)
    check(not any("{closure#" in n for n in short), short)
    check(max(len(n) for n in short) < 120, max(short, key=len))
    full = report_names(["--names", "full"])
    check(DROP_FULL in full, full)
    tsv = run([SFTRACE, "report", "--format", "tsv", rust_log()]).stdout
    check(DROP_FULL in tsv and DROP_SHORT not in tsv, "tsv keeps full names")
    tsv_short = run([SFTRACE, "report", "--format", "tsv", "--names", "short", rust_log()]).stdout
    check(DROP_SHORT in tsv_short, "tsv --names short")


def test_report_merges_equal_short_names():
    # Functions that differ only in their generic arguments share a short
    # name, and then a row: the calls add up.
    tsv = run([SFTRACE, "report", "--format", "tsv", rust_log()]).stdout.splitlines()[1:]
    full = [(l.split("\t")[1], int(l.split("\t")[2])) for l in tsv]
    short = run([SFTRACE, "report", "--format", "tsv", "--names", "short", rust_log()]).stdout.splitlines()[1:]
    rows = {}
    for l in short:
        name, calls = l.split("\t")[1], int(l.split("\t")[2])
        check(name not in rows, f"one row per short name: {name}")
        rows[name] = calls
    eq(sum(rows.values()), sum(c for _, c in full), "every call counted once")
    check(len(rows) <= len(full), "rows merged, never split")


def test_report_width_on_a_terminal():
    # `script` gives report a terminal of 80 columns: no row is longer, and
    # long names are cut to fit.
    if subprocess.run(["sh", "-c", "command -v script"], capture_output=True).returncode:
        raise Skip("script(1) not installed")
    p = run(["script", "-qec", f"stty cols 80; {SFTRACE} report --color never -n 0 {rust_log()}", "/dev/null"])
    lines = [l.rstrip("\r") for l in p.stdout.splitlines() if l.strip()]
    table = [l for l in lines if re.match(r"^\s*\d", l) and "events," not in l]
    check(table, p.stdout[-500:])
    check(all(len(l) <= 80 for l in table), max(table, key=len))
    # cut in the path, the function the name ends in kept (sf_fit_name)
    check(any("…" in l for l in table), "names cut to the width")


def test_chrome_and_folded_names():
    d = tmpdir()
    js = os.path.join(d, "t.json")
    run([SFTRACE, "convert", "--type", "chrome", rust_log(), "-o", js])
    with open(js, encoding="utf-8") as fh:
        xs = [e for e in json.load(fh)["traceEvents"] if e["ph"] == "X"]
    drops = [e for e in xs if e["name"] == DROP_SHORT]
    check(drops and all(e["args"]["function"] == DROP_FULL for e in drops), "Chrome: short name, full in args")
    check(all("function" not in e["args"] for e in xs if e["name"] == "rust_prog::fib"), "no copy when equal")
    run([SFTRACE, "convert", "--type", "chrome", "--names", "full", rust_log(), "-o", js])
    with open(js, encoding="utf-8") as fh:
        check(DROP_FULL in {e.get("name") for e in json.load(fh)["traceEvents"]}, "--names full")
    fo = os.path.join(d, "t.folded")
    run([SFTRACE, "convert", "--type", "folded", rust_log(), "-o", fo])
    with open(fo, encoding="utf-8") as fh:
        check(DROP_FULL in fh.read(), "folded: full names by default")
    run([SFTRACE, "convert", "--type", "folded", "--names", "short", rust_log(), "-o", fo])
    with open(fo, encoding="utf-8") as fh:
        text = fh.read()
    check(DROP_SHORT in text and "{closure#" not in text, "folded --names short")
    svg = os.path.join(d, "f.svg")
    run([SFTRACE, "flamegraph", rust_log(), "-o", svg])
    with open(svg, encoding="utf-8") as fh:
        text = fh.read()
    check("std::thread::lifecycle::JoinInner&lt;…&gt;::join" in text and "{closure}" in text
          and "{closure#" not in text, "flamegraph: short names")


def test_perfetto_short_slice_full_function():
    tp = trace_processor()
    d = tmpdir()
    pb = os.path.join(d, "t.pb.gz")
    run([SFTRACE, "convert", rust_log(), "-o", pb])
    q = os.path.join(d, "q.sql")
    with open(q, "w") as fh:
        fh.write("select s.name, a.display_value from slice s join args a using (arg_set_id)"
                 " where a.key = 'source.function_name' and s.name like '<alloc::vec::Vec<%Drop>::drop' limit 1;\n")
    out = run([tp, "-q", q, pb]).stdout.strip().splitlines()[-1]
    eq(out, f'"{DROP_SHORT}","{DROP_FULL}"', "slice name short, source function name full")
    with open(q, "w") as fh:
        fh.write("select count(*) from stats where value > 0 and severity != 'info';\n")
    eq(run([tp, "-q", q, pb]).stdout.strip().splitlines()[-1], "0", "no import errors")


def test_perfetto_slice_named_in_full_has_no_source_function():
    """A C function's short name is its name: its slice's source location
    holds the file and line, and no function name (NULL in trace
    processor), as README says."""
    trace_processor()
    prog = build_c("skep28s_unwind", ["skep28s_unwind.c"])
    _, log = record([prog], args=["-q"])
    pb = os.path.join(tmpdir(), "t.pb")
    run([SFTRACE, "convert", log, "-o", pb])
    rows = tp_rows(pb, "select distinct a.key, coalesce(a.display_value, 'NULL') from slice s join args a using "
                       "(arg_set_id) where s.name = 'leaf' and a.key like 'source.%' order by a.key;")
    eq(rows, [["source.file_name", os.path.join(ROOT, "tests", "fixtures", "skep28s_unwind.c")],
              ["source.function_name", "NULL"], ["source.line_number", "8"]], "leaf's source location")


def test_parquet_keeps_full_names():
    d = tmpdir()
    out = os.path.join(d, "t.pola")
    run([SFTRACE, "convert", "--type", "pola", "--names", "short", "--uncompressed", rust_log(), "-o", out])
    with open(out + ".symtab", "rb") as fh:
        data = fh.read()
    check(DROP_FULL.encode() in data and DROP_SHORT.encode() not in data, "symtab holds full names")


if __name__ == "__main__":
    sfkit.main(globals())
