"""Outputs and tools are safe with a private or hostile log (issue 24, item 5).

- Every file the CLI writes from logs gets the logs' permission bits (their
  intersection when there are several), less the umask: a 0600 log never
  gives a 0644 trace with its command line in it.
- Text taken from a log (object paths, function, thread and process names,
  the command line) reaches the terminal escaped (\\xHH) in dump, report,
  query, memory, filter and error messages; JSON escapes it as \\u00HH.
- `query` is read-only: ATTACH and VACUUM INTO, which create files, are
  refused with one line and no file, unless --writable.

Runs under tests/run.py, or alone: python3 tests/cases/test_outputs_safety.py."""
import contextlib
import json
import os
import re
import shutil
import stat
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import SFTRACE, XRAY_CFLAGS, check, eq, record, run, tmpdir  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "esc_names.c")
FUNC = "hostile\x1b]0;pwned\x07"  # the fixture's function: an OSC window-title sequence
THREAD = "w\x1b[2J"                # its worker thread's name: clear screen
DIRNAME = "ev\x1b[31mil"           # the directory it runs from: red
EXE = "esc\x1b[7m"                 # its file name, so its process name: reverse video

_cache = {}


def esc(s):
    """What the tools show for s (src/lib/text_esc.h): controls as \\xHH."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7f else c for c in s)


def hostile_log():
    """The fixture, built at <tmp>/ev<ESC>[31mil/esc<ESC>[7m and recorded with
    --alloc: (log, exe path, pid of the recording)."""
    if "log" not in _cache:
        d = os.path.join(tmpdir(), DIRNAME)
        os.makedirs(d)
        exe = os.path.join(d, EXE)
        run(["clang"] + XRAY_CFLAGS + ["-O1", "-fno-builtin", "-o", exe, FIXTURE, "-lpthread"])
        _, log = record([exe], args=["--alloc", "-q"])
        _cache["log"], _cache["exe"] = log, exe
    return _cache["log"], _cache["exe"]


def no_raw_controls(p, what):
    """Nothing a terminal would act on in stdout or stderr (the tools' own
    newlines and TSV tabs aside)."""
    for name, text in (("stdout", p.stdout), ("stderr", p.stderr)):
        bad = sorted({c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0})
        eq(bad, [], f"{what}: raw control characters on {name}")


@contextlib.contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


# ---- permissions ----

def outputs_of(log, d):
    """Runs every command that writes files from `log` into d; returns the
    paths written."""
    o = lambda name: os.path.join(d, name)  # noqa: E731
    run([SFTRACE, "convert", "-q", log, "-o", o("t.pb.gz")])
    run([SFTRACE, "convert", "-q", log, "-o", o("t.pb")])
    run([SFTRACE, "convert", "-q", "-t", "chrome", log, "-o", o("t.json")])
    run([SFTRACE, "convert", "-q", "-t", "folded", log, "-o", o("t.folded")])
    run([SFTRACE, "convert", "-q", "-t", "pola", log, "-o", o("t.pq")])
    run([SFTRACE, "flamegraph", "-q", log, "-o", o("f.svg")])
    run([SFTRACE, "memory", "-q", log, "--flamegraph", o("leak.svg"), "--plot", o("heap.svg")])
    run([SFTRACE, "memory", "-q", log, "--plot", o("heap.html")])
    want = ["f.svg", "heap.html", "heap.svg", "leak.svg", "t.folded", "t.json", "t.pb", "t.pb.gz", "t.pq",
            "t.pq.alloc", "t.pq.symtab", "t.pq.threads"]
    eq(sorted(os.listdir(d)), want, "outputs written (and no temporary file left)")
    return [os.path.join(d, f) for f in want]


def modes(paths):
    return {os.path.basename(p): oct(stat.S_IMODE(os.stat(p).st_mode)) for p in paths}


def test_outputs_get_the_log_mode():
    src, _ = hostile_log()
    d = tmpdir()
    for mode in (0o600, 0o640, 0o604):
        log = os.path.join(d, f"sf{mode:o}.log")
        shutil.copy(src, log)
        os.chmod(log, mode)
        out = os.path.join(d, f"out{mode:o}")
        os.makedirs(out)
        with umask(0):
            paths = outputs_of(log, out)
        eq(set(modes(paths).values()), {oct(mode)}, f"every output of a {mode:o} log (umask 0): {modes(paths)}")


def test_outputs_mode_keeps_the_umask():
    src, _ = hostile_log()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    shutil.copy(src, log)
    os.chmod(log, 0o662)
    out = os.path.join(d, "out")
    os.makedirs(out)
    with umask(0o020):
        paths = outputs_of(log, out)
    eq(set(modes(paths).values()), {oct(0o642)}, f"a 0662 log under umask 020 gives 0642: {modes(paths)}")


def test_outputs_of_several_logs_get_the_common_mode():
    src, _ = hostile_log()
    d = tmpdir()
    logs = os.path.join(d, "logs")
    os.makedirs(logs)
    for name, mode in (("a.log", 0o640), ("b.log", 0o604)):
        shutil.copy(src, os.path.join(logs, name))
        os.chmod(os.path.join(logs, name), mode)
    with umask(0):
        run([SFTRACE, "convert", "-q", logs, "-o", os.path.join(d, "dir.pb")])
        run([SFTRACE, "convert", "-q", "-t", "chrome", os.path.join(logs, "a.log"), os.path.join(logs, "b.log"),
             "-o", os.path.join(d, "files.json")])
    eq(modes([os.path.join(d, "dir.pb"), os.path.join(d, "files.json")]), {"dir.pb": "0o600", "files.json": "0o600"},
       "0640 and 0604 logs give 0600 (the bits both have)")


# ---- escaping ----

def test_dump_escapes_text_from_the_log():
    log, exe = hostile_log()
    p = run([SFTRACE, "dump", log])
    no_raw_controls(p, "dump")
    lines = p.stdout.splitlines()
    eq([ln for ln in lines if ln.startswith("command line:")], [f"command line: '{esc(exe)}'"], "command line")
    check(f"  [0] {esc(exe)} (main)" in lines, f"object path escaped:\n{p.stdout[:2000]}")
    eq(len([ln for ln in lines if ln.split()[2:3] == [esc(THREAD)]]), 1, "the worker's thread row")
    names = [ln.split()[3] for ln in lines if ln[14:15] == " " and ln.split()[2:3] in (["ENTRY"], ["EXIT"])]
    eq(names.count(esc(FUNC)), 8, "4 calls of the function, its ENTRY and EXIT lines escaped")
    # The cut view (frames through trace_input) too.
    p = run([SFTRACE, "dump", "--tid", str(worker_tid(log)), log])
    no_raw_controls(p, "dump --tid")
    eq(sum(ln.rstrip().endswith(" " + esc(FUNC)) for ln in p.stdout.splitlines()), 6, "the worker's 3 calls")


def worker_tid(log):
    rows = json.loads(run([SFTRACE, "query", "--format", "json", log,
                           "select tid, thread_name from threads"]).stdout)
    return [r["tid"] for r in rows if r["thread_name"] == THREAD][0]


def test_report_escapes_text_from_the_log():
    log, _ = hostile_log()
    p = run([SFTRACE, "report", log])
    no_raw_controls(p, "report")
    row = re.compile(r"^\s*\S+ \S+\s+\S+ \S+\s+(\d+)\s.*  " + re.escape(esc(FUNC)) + "$")  # Total, Self, Calls
    eq([m.group(1) for m in map(row.match, p.stdout.splitlines()) if m], ["4"], "the function's row, 4 calls")
    p = run([SFTRACE, "report", "--format", "tsv", log])
    no_raw_controls(p, "report tsv")
    eq([ln.split("\t")[2] for ln in p.stdout.splitlines() if ln.split("\t")[1] == esc(FUNC)], ["4"], "tsv row")
    p = run([SFTRACE, "report", "--threads", log])
    no_raw_controls(p, "report --threads")
    heads = [ln for ln in p.stdout.splitlines() if ln.startswith("== thread " + esc(THREAD))]
    eq(len(heads), 1, f"the worker's section:\n{p.stdout}")
    check(f" in {esc(EXE)} (pid " in heads[0], heads[0])
    p = run([SFTRACE, "report", "--processes", log])
    no_raw_controls(p, "report --processes")
    # past the times note ("# times net of the tracer's cost ...")
    body = "\n".join(ln for ln in p.stdout.splitlines() if not ln.startswith("# "))
    check(body.startswith(f"== process {esc(EXE)} (pid "), p.stdout)
    p = run([SFTRACE, "report", "--format", "json", log])
    eq([f["calls"] for f in json.loads(p.stdout)["functions"] if f["name"] == FUNC], [4], "json keeps the name")
    check("\\u001b]0;pwned\\u0007" in p.stdout, "json escapes it its own way")
    d = tmpdir()
    shutil.copy(log, os.path.join(d, "new.log"))
    p = run([SFTRACE, "report", "--diff", log, os.path.join(d, "new.log")])
    no_raw_controls(p, "report --diff")
    eq(len([ln for ln in p.stdout.splitlines() if ln.endswith("  " + esc(FUNC))]), 1, "diff row")
    p = run([SFTRACE, "report", "--diff", "--format", "tsv", log, os.path.join(d, "new.log")])
    no_raw_controls(p, "report --diff tsv")
    eq(len([ln for ln in p.stdout.splitlines() if ln.split("\t")[0] == esc(FUNC)]), 1, "diff tsv row")


def test_query_formats_escape_text_from_the_log():
    log, _ = hostile_log()
    sql = f"select name, count(*) as n from frames where name = '{FUNC}' group by name"
    want = {"tsv": ["name\tn", f"{esc(FUNC)}\t4"], "csv": ["name,n", f"{esc(FUNC)},4"],
            "table": [f"{'name':<{len(esc(FUNC))}}  n", f"{esc(FUNC)}  4"]}
    for fmt, lines in want.items():
        p = run([SFTRACE, "query", "--format", fmt, log, sql])
        no_raw_controls(p, "query " + fmt)
        eq(p.stdout.splitlines(), lines, fmt)
    p = run([SFTRACE, "query", "--format", "json", log, sql])
    no_raw_controls(p, "query json")
    eq(json.loads(p.stdout), [{"name": FUNC, "n": 4}], "json")
    p = run([SFTRACE, "query", "--format", "tsv", log,
             f"select thread_name from threads where thread_name = '{THREAD}'"])
    eq(p.stdout.splitlines(), ["thread_name", esc(THREAD)], "thread name")


def test_memory_escapes_text_from_the_log():
    log, _ = hostile_log()
    p = run([SFTRACE, "memory", "--format", "tsv", log])
    no_raw_controls(p, "memory tsv")
    leaks = [ln.split("\t") for ln in p.stdout.splitlines() if ln.startswith("leak\t")]
    eq([r[2:4] for r in leaks if r[4] == esc(FUNC) and r[7] == f"worker;{esc(FUNC)}"], [["24", "1"]],
       f"the fixture's leak:\n{p.stdout}")
    p = run([SFTRACE, "memory", log])
    no_raw_controls(p, "memory")
    check(f"  {esc(FUNC)}  esc_names.c:" in p.stdout and f"  ← worker" in p.stdout, p.stdout)


def test_filter_listing_and_messages_escape():
    log, exe = hostile_log()
    d = tmpdir()
    p = run([SFTRACE, "filter", "-p", exe, "-r", "^hostile", "-o", os.path.join(d, "f")])
    no_raw_controls(p, "filter")
    eq(p.stdout.splitlines()[:2], [f"{esc(exe)}: 1 of 3 instrumented functions selected", "  " + esc(FUNC)],
       "filter listing")
    missing = os.path.join(d, "gone\x1b[31m.log")
    p = run([SFTRACE, "dump", missing], check_rc=1)
    no_raw_controls(p, "error message")
    check(esc(missing) in p.stderr, p.stderr)


# ---- query is read-only ----

REFUSED = ("sftrace: error: query: refused to write '{}': sftrace query is read-only "
           "(ATTACH and VACUUM INTO need --writable)\n")


def test_query_is_read_only():
    log, _ = hostile_log()
    d = tmpdir()
    for sql in ("ATTACH '{}' AS p; CREATE TABLE p.t(x); SELECT 1", "VACUUM INTO '{}'"):
        target = os.path.join(d, "new.db")
        p = run([SFTRACE, "query", log, sql.format(target)], check_rc=1)
        eq(p.stderr, REFUSED.format(target), sql)
        eq(p.stdout, "", "no output")
        check(not os.path.exists(target), f"{sql}: no file made")
    p = run([SFTRACE, "query", log, f"ATTACH '{d}/a' || '.db' AS p"], check_rc=1)
    check(p.stderr.startswith("sftrace: error: query: refused to write a file: "), p.stderr)
    eq(os.listdir(d), [], "no file made")
    # SQL that writes only the in-memory database still works.
    p = run([SFTRACE, "query", "--format", "tsv", log,
             "CREATE TEMP TABLE t AS SELECT name FROM frames; SELECT count(*) AS n FROM t"])
    eq(p.stdout, "n\n6\n", "a temporary table (one row per frame)")


def test_query_writable_allows_files():
    log, _ = hostile_log()
    d = tmpdir()
    attached, vacuumed = os.path.join(d, "attached.db"), os.path.join(d, "vacuumed.db")
    p = run([SFTRACE, "query", "--writable", "--format", "tsv", log,
             f"ATTACH '{attached}' AS p; CREATE TABLE p.t AS SELECT name FROM frames; SELECT count(*) AS n FROM p.t"])
    eq(p.stdout, "n\n6\n", "rows written to the attached database (one per frame)")
    run([SFTRACE, "query", "--writable", log, f"VACUUM INTO '{vacuumed}'"])
    for f in (attached, vacuumed):
        with open(f, "rb") as fh:
            eq(fh.read(16), b"SQLite format 3\0", f"{f} is an SQLite database")


if __name__ == "__main__":
    sfkit.main(globals())
