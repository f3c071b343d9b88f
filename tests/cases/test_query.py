"""sftrace query: each table against the Parquet output read by polars (exact
ids, times and counts), the README's two polars queries written in SQL, the
output formats, and errors."""
import collections
import csv
import io
import json
import os
import shutil

from sfkit import ROOT, SFTRACE, Skip, calls_fixture, check, eq, record, run

CALLS = {"leaf": 60, "middle": 20, "outer": 10, "recurse": 51, "tail_caller": 5, "tail_callee": 5,
         "thread_work": 8, "tleaf": 8000, "lib_add": 7, "lib_inner": 7, "deep": 21, "crash_here": 1, "main": 1}
PARQUET_DIR = os.path.join(ROOT, "tests", "parquet")

# docs/QUERY.md: the README's polars queries in SQL.
MOST_CALLED = ("select func_id, name, count(*) as func_count from frames group by func_id "
               "order by func_count desc limit 10")
LONGEST_LEAVES = ("select frame_id, name, dur_ns from frames where frame_id not in (select parent from frames) "
                  "order by dur_ns desc limit 10")

_cache = {}


def recorded():
    """The calls fixture's log, its Parquet output as polars reads it."""
    if "log" not in _cache:
        if not shutil.which("node"):
            raise Skip("node is not installed")
        if not os.path.isdir(os.path.join(PARQUET_DIR, "node_modules", "nodejs-polars-linux-x64-gnu")):
            run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PARQUET_DIR, timeout=600)
        _, log = record([calls_fixture()])
        pola = os.path.join(os.path.dirname(log), "sf.pola")
        run([SFTRACE, "convert", "--type", "pola", log, "-o", pola])
        p = run(["node", os.path.join(PARQUET_DIR, "pola_query.mjs"), pola, "--frames"], timeout=300)
        _cache["log"], _cache["pl"] = log, json.loads(p.stdout)
    return _cache["log"], _cache["pl"]


def query(log, sql, fmt="json", check_rc=0):
    p = run([SFTRACE, "query", "--format", fmt, log, sql], check_rc=check_rc)
    return json.loads(p.stdout) if fmt == "json" and check_rc == 0 else p


def test_frames_match_parquet():
    log, pl = recorded()
    rows = query(log, "select * from frames")
    eq(list(rows[0]), ["frame_id", "parent", "pid", "tid", "func_id", "name", "start_ns", "dur_ns", "self_ns",
                       "depth", "short_name"], "columns")
    names = {int(f): n for f, n, _ in pl["symtab"]}
    want = {int(f): (int(p), tid, int(fn), int(s), int(e) - int(s)) for f, p, tid, fn, s, e in pl["frames"]}
    got = {r["frame_id"]: (r["parent"], r["tid"], r["func_id"], r["start_ns"], r["dur_ns"]) for r in rows}
    eq(len(got), len(rows), "frame ids unique")
    eq(got, want, "frames = polars' frames (ids, parent, tid, func_id, start, duration)")
    eq(collections.Counter(r["name"] for r in rows), collections.Counter(CALLS), "calls per function")
    children = collections.defaultdict(int)
    for f, (parent, _, _, _, dur) in want.items():
        children[parent] += dur
    depth = {}

    def depth_of(f):
        if f not in depth:
            depth[f] = 0 if want[f][0] == 0 else depth_of(want[f][0]) + 1
        return depth[f]
    for r in rows:
        eq(r["name"], names[r["func_id"]], "name from the symtab")
        eq(r["self_ns"], r["dur_ns"] - children[r["frame_id"]], f"self_ns of frame {r['frame_id']}")
        eq(r["depth"], depth_of(r["frame_id"]), f"depth of frame {r['frame_id']}")
    eq({r["pid"] for r in rows}, {query(log, "select pid from threads limit 1")[0]["pid"]}, "one pid")


def test_functions_and_threads_tables():
    log, pl = recorded()
    funcs = {r["func_id"]: r for r in query(log, "select * from functions")}
    for fid, name, path in pl["symtab"]:
        r = funcs[int(fid)]
        eq(r["name"], name, "function name")
        eq(f"{r['file']}:{r['line']}", path, f"file:line of {name}")
        check(r["object"].endswith("/calls") or r["object"].endswith("/libcalls.so"), r["object"])
    eq({r["name"] for r in funcs.values()} >= set(CALLS), True, "every called function")
    threads = query(log, "select * from threads order by tid")
    eq(len(threads), 9, "threads")
    eq({t["process_name"] for t in threads}, {"calls"}, "process name")
    eq(sorted(t["tid"] for t in threads), sorted({tid for _, _, tid, _, _, _ in pl["frames"]}), "tids")
    per = query(log, "select t.tid, count(*) as n from frames f join threads t using (pid, tid) "
                     "group by t.tid order by n")
    eq([r["n"] for r in per], [sum(CALLS.values()) - 8 * 1001] + [1001] * 8, "frames per thread via a join")


def test_seed_queries_in_sql():
    log, pl = recorded()
    top = query(log, MOST_CALLED)
    eq([r["func_count"] for r in top], sorted(pl["calls"].values(), reverse=True)[:10], "query 1: counts")
    tenth = top[-1]["func_count"]
    eq({r["name"] for r in top if r["func_count"] > tenth}, {n for n, c in pl["calls"].items() if c > tenth},
       "query 1: names above the last tie")
    leaves = query(log, LONGEST_LEAVES)
    eq([r["dur_ns"] for r in leaves], sorted((x["dur"] for x in pl["leaves"]), reverse=True), "query 2: durations")
    parents = {int(p) for _, p, _, _, _, _ in pl["frames"]}
    durs = {int(f): int(e) - int(s) for f, _, _, _, s, e in pl["frames"]}
    for r in leaves:
        check(r["frame_id"] not in parents and durs[r["frame_id"]] == r["dur_ns"], f"leaf {r}")


def test_formats_agree():
    log, _ = recorded()
    sql = "select name, count(*) as n, sum(dur_ns) as d, null as z from frames group by name order by name"
    j = query(log, sql)
    t = run([SFTRACE, "query", log, sql]).stdout  # not a terminal: tsv
    eq(t, run([SFTRACE, "query", "--format", "tsv", log, sql]).stdout, "tsv is the default off a terminal")
    eq(run([SFTRACE, "query", os.path.dirname(log), sql]).stdout, t, "a recording's directory")
    lines = [x.split("\t") for x in t.splitlines()]
    eq(lines[0], ["name", "n", "d", "z"], "tsv header")
    eq(lines[1:], [[r["name"], str(r["n"]), str(r["d"]), ""] for r in j], "tsv = json")
    c = list(csv.reader(io.StringIO(run([SFTRACE, "query", "--format", "csv", log, sql]).stdout)))
    eq(c, lines, "csv = tsv")
    tab = run([SFTRACE, "query", "--format", "table", log, sql]).stdout.splitlines()
    eq([x.split() for x in tab[1:]], [[r["name"], str(r["n"]), str(r["d"]), "NULL"] for r in j], "table")
    eq(query(log, "select 1 as a where 0"), [], "no rows: an empty array")
    eq(query(log, "create temp table x as select 2 as a; select a from x; select 1 as b where 0"), [],
       "the last statement with columns is printed")


def test_thread_window_and_callers():
    log, pl = recorded()
    main_tid = query(log, "select tid from frames where name = 'main'")[0]["tid"]
    rng = query(log, "select min(start_ns) filter (where name = 'outer') as t1, "
                "max(start_ns + dur_ns) filter (where name in ('middle', 'leaf')) as t2 from frames")[0]
    got = query(log, f"select name, count(*) as n from frames where tid = {main_tid} and start_ns "
                     f">= {rng['t1']} and start_ns < {rng['t2']} group by name order by name")  # a call starting as the last ends (same ns) is after the window
    eq({r["name"]: r["n"] for r in got}, {"outer": 10, "middle": 20, "leaf": 60}, "what main did in the window")
    callers = query(log, "with c as materialized (select parent from frames where name = 'leaf') "
                         "select p.name as caller, count(*) as calls from frames p join c on c.parent = p.frame_id "
                         "group by p.name order by p.name")
    names = {int(f): n for f, n, _ in pl["symtab"]}
    func = {int(f): int(fn) for f, _, _, fn, _, _ in pl["frames"]}
    want = collections.Counter(names[func[int(p)]] for f, p, _, fn, _, _ in pl["frames"] if names[int(fn)] == "leaf")
    eq({r["caller"]: r["calls"] for r in callers}, dict(want), "who calls leaf (tail calls make siblings)")
    eq(sum(want.values()), 60, "leaf frames")
    # The cut options apply to query's frames as to every reader: -c keeps
    # the functions a filter selects.
    filt = os.path.join(os.path.dirname(log), "leaf.filter")
    run([SFTRACE, "filter", "-q", "-p", calls_fixture(), "-r", "^leaf$", "-o", filt])
    p = run([SFTRACE, "query", "--format", "json", "-c", filt, log, "select name, count(*) as n from frames "
             "group by name"])
    eq({r["name"]: r["n"] for r in json.loads(p.stdout)}, {"leaf": 60}, "query -c leaf.filter")


def test_errors_are_one_line():
    log, _ = recorded()
    cases = [([log, "selec 1"], "syntax error"), ([log, "select * from nope"], "no such table: nope"),
             ([log + ".missing", "select 1"], ".missing"), ([log, "  ; "], "no SQL statement"),
             ([log, "select 1; select * from nope"], "no such table")]
    for args, what in cases:
        p = run([SFTRACE, "query"] + args, check_rc=1)
        eq(p.stdout, "", f"no output for {args}")
        eq(len(p.stderr.splitlines()), 1, f"one line: {p.stderr!r}")
        check(p.stderr.startswith("sftrace: error: ") and what in p.stderr, p.stderr)
    p = run([SFTRACE, "query", log], check_rc=2)
    check("needs a log" in p.stderr, p.stderr)
    run([SFTRACE, "query", "--format", "xml", log, "select 1"], check_rc=2)
