"""sftrace record --alloc and sftrace memory: exact heap figures from fixtures
with known allocation patterns (tests/fixtures/heap_pattern.c, heap_rust.rs,
setup_abi.c), a crash with live blocks, and the errors for bad input.

Runs under tests/run.py, or alone: python3 tests/cases/test_memory.py."""
import json
import os
import re
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import (BUILD, CG_WRITER_ENV, FIXTURES, ROOT, RUNTIME, SFTRACE, Skip, build_c, calls_fixture, check,  # noqa: E402
                   dump_info, eq, record, run, rust_fixture, tmpdir)

_logs = {}


def heap_log(args=()):
    key = tuple(args)
    if key not in _logs:
        exe = build_c("heap_pattern", ["heap_pattern.c"], flags=["-fno-builtin", "-O1"], libs=["-lpthread"])
        _, log = record([exe] + list(args), args=["--alloc", "-q"], check_rc=None)
        _logs[key] = log
    return _logs[key]


def memory_tsv(log, extra=()):
    """(summary dict, rows [(section, stage, bytes, count, function, location, tail, stack, full_stack)]);
    stage rows have "-" for the last five."""
    out = run([SFTRACE, "memory", "--format", "tsv"] + list(extra) + [log]).stdout
    summary, rows = {}, []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) == 2:
            summary[f[0]] = int(f[1])
        else:
            f += ["-"] * (9 - len(f))
            rows.append((f[0], f[1], int(f[2]), int(f[3]), f[4], f[5], f[6], f[7], f[8]))
    return summary, rows


def by_func(rows, section, func):
    """bytes, count summed over the rows of a section whose allocating function is func."""
    b = c = 0
    for row in rows:
        if row[0] == section and row[4] == func:
            b += row[2]
            c += row[3]
    return b, c


def foreign(rows, section):
    """Bytes of rows whose call site is outside the executable (libc's own, e.g. pthread_create):
    "in /lib/.../libc.so.6" (an untraced object the log names), "in a library" in older logs."""
    return sum(r[2] for r in rows if r[0] == section and (r[5] == "in a library" or re.match(r"0x[0-9a-f]+$", r[5]) or
                                                         re.match(r"in /\S+\.so[.0-9]*$", r[5])))


def test_heap_pattern_sites_and_totals():
    s, rows = memory_tsv(heap_log())
    eq(by_func(rows, "site", "setup"), (2000, 11), "setup: 10 x 100 + 1000")
    eq(by_func(rows, "site", "work_a"), (1280, 5), "work_a: 5 calloc(4, 64)")
    eq(by_func(rows, "site", "grow"), (16 + 32 + 64 + 128, 4), "grow: malloc(16) then 3 reallocs")
    eq(by_func(rows, "site", "producer"), (1536, 3), "producer thread")
    eq(by_func(rows, "site", "make_temps"), (960, 20), "make_temps")
    eq(by_func(rows, "site", "leaf_leak"), (168, 7), "leaf_leak")
    eq(by_func(rows, "site", "peak"), (1048576, 1), "peak")
    eq(by_func(rows, "temporary", "make_temps")[1], 20, "make_temps temporaries")
    eq(by_func(rows, "temporary", "setup")[1], 10, "setup temporaries")
    eq(s["reallocs"], 3, "reallocs")
    eq(s["unmatched_frees"], 0, "every free matched (the consumer frees the producer's blocks)")
    eq(by_func(rows, "leak", "producer"), (0, 0), "freed on another thread")
    eq(by_func(rows, "leak", "grow"), (0, 0), "realloc chain freed")
    # the peak: the 1 MiB block plus what was live then (no libc allocation other than pthread's)
    eq(by_func(rows, "peak", "peak"), (1048576, 1), "held at the peak")
    eq(s["peak_bytes"], 1048576 + 1000 + 512 + 4096 + 96 + foreign(rows, "peak"), "peak_bytes")


def test_heap_pattern_aligned_and_calloc():
    out = run([SFTRACE, "dump", heap_log()]).stdout
    check(re.search(r"MALLOC\s+size=4096 align=64 ", out), "aligned_alloc(64, 4096)")
    check(re.search(r"MALLOC\s+size=256 align=128 ", out), "posix_memalign(128, 256)")
    check(re.search(r"MALLOC\s+size=96 align=32 ", out), "memalign(32, 96)")
    eq(len(re.findall(r"MALLOC\s+size=256 align=1 ", out)), 5, "calloc(4, 64) as 256 bytes")
    eq(len(re.findall(r"REALLOC\s+size=(?:32|64|128) ", out)), 3, "realloc events")


def test_heap_pattern_milestones():
    s, rows = memory_tsv(heap_log(), ["--milestone", "milestone"])
    eq(s["stages"], 4, "three milestones make four stages")
    leak = {int(r[1]): (r[2], r[3]) for r in rows if r[0] == "stage_leak"}
    eq(leak[0], (1000, 1), "stage 0 leak")
    eq(leak[1], (512, 2), "stage 1 leak")
    fb = foreign(rows, "leak")  # pthread_create's own block, made in stage 2
    eq(leak[2][0], 4096 + 96 + fb, "stage 2 leak")
    eq(leak[3], (168, 7), "stage 3 leak")
    eq(s["leaked_bytes"], 1000 + 512 + 4096 + 96 + 168 + fb, "leaked_bytes")
    s2, rows2 = memory_tsv(heap_log(), ["--milestone", "^mile.*ne$", "--select", "1,3"])
    eq(sum(r[2] for r in rows2 if r[0] == "leak"), 512 + 168, "--select 1,3 leak rows")
    p = run([SFTRACE, "memory", "--milestone", "no_such_function", heap_log()], check_rc=1)
    check("matches no instrumented function" in p.stderr and not p.stdout, p.stderr)


def test_heap_pattern_json_matches_tsv():
    for extra in ([], ["--milestone", "milestone"]):
        s, rows = memory_tsv(heap_log(), extra)
        doc = json.loads(run([SFTRACE, "memory", "--format", "json"] + extra + [heap_log()]).stdout)
        eq(doc["summary"], s, "summary keys and values %s" % extra)
        eq(doc["summary"]["stages"], 4 if extra else 1, "stages")
        eq(len(doc["stages"]), doc["summary"]["stages"], "one row per stage")
        for sec in ("stage_leak", "stage_heap"):
            want = [(int(r[1]), r[2], r[3]) for r in rows if r[0] == sec]
            got = [(x["stage"], x["leaked_bytes"], x["leaked_blocks"]) if sec == "stage_leak"
                   else (x["stage"], x["heap_at_end"], x["allocations"]) for x in doc["stages"]]
            eq(got, want, sec)
        for sec, key in (("site", "sites_by_bytes"), ("peak", "peak"), ("leak", "leak"),
                         ("temporary", "temporary")):
            want = [(r[2], r[3], r[4], r[5], r[6] == "1", r[7], r[8]) for r in rows if r[0] == sec]
            eq([(x["bytes"], x["count"], x["function"], x["location"], x["tail_call"], x["stack"], x["full_stack"])
                for x in doc[key]], want, key)
        by_count = sorted(doc["sites_by_count"], key=lambda x: -x["count"])
        eq([x["count"] for x in doc["sites_by_count"]], [x["count"] for x in by_count], "sorted by count")
        eq(sorted(map(str, doc["sites_by_count"])), sorted(map(str, doc["sites_by_bytes"])), "same sites")
        check(doc["pid"] > 0 and doc["process"], "pid and process")
    eq(by_func([("site", "-", x["bytes"], x["count"], x["function"]) for x in doc["sites_by_bytes"]], "site",
               "setup"), (2000, 11), "setup's sites in the JSON")
    p = run([SFTRACE, "memory", "--format", "json", "--interactive", heap_log()], check_rc=2)
    check("--interactive" in p.stderr and not p.stdout, p.stderr)


def test_heap_pattern_interactive():
    p = run([SFTRACE, "memory", "--interactive", "--milestone", "milestone", "-n", "1", heap_log()],
            input="stage-memory\nshow 0\ntrack 0\nexit\n")
    out = p.stdout
    check(re.search(r"^0:\t1000\n1:\t1512\n", out, re.M), "stage-memory")
    check(re.search(r"kind: alloc\n.*\n.*\nptr: 0x[0-9a-f]+\nsize: 100\n", out), "show 0")
    eq(len(re.findall(r"^\d+ (?:alloc|free)\ttid:", out, re.M)), 20, "track 0: the reused pointer's 20 events")


def test_crash_keeps_heap_state():
    s, rows = memory_tsv(heap_log(["crash"]))
    eq(by_func(rows, "leak", "leaf_leak"), (168, 7), "live at the crash")
    eq(by_func(rows, "leak", "setup"), (1000, 1), "live at the crash")
    out = run([SFTRACE, "memory", heap_log(["crash"])]).stdout
    check("did not exit normally" in out, out)


def test_rust_without_code_change():
    exe = rust_fixture("heap_rust")
    _, log = record([exe], args=["--alloc", "-q"])
    s, rows = memory_tsv(log)
    eq(by_func(rows, "leak", "heap_rust::make_box"), (120, 3), "Box::leak x3")
    eq(by_func(rows, "leak", "heap_rust::strings"), (60, 1), "forgotten String")
    check(all("vec_growth" not in r[8] and "heap_rust::map" not in r[8] for r in rows if r[0] == "leak"),
          "Vec and HashMap freed")
    check(s["reallocs"] >= 5, f"Vec growth by realloc: {s['reallocs']}")
    check(any("heap_rust::map" in r[8] for r in rows if r[0] == "site"), "HashMap allocation site")


def test_setup_abi_not_counted_twice():
    exe = build_c("setup_abi", ["setup_abi.c"], libs=["-L" + BUILD, "-lsftrace", "-Wl,-rpath," + BUILD,
                                                       "-lpthread"])
    # main: malloc(64), sftrace_alloc_event(alloc), sftrace_alloc_event(dealloc), free, twice.
    # The first report of each wins: the interposed malloc, then the setup ABI's dealloc.
    _, log = record([exe], args=["--alloc", "-q"])
    dump = run([SFTRACE, "dump", log]).stdout
    eq(len(re.findall(r"MALLOC\s+size=64 ", dump)), 2, "interposed mallocs")
    eq(len(re.findall(r"\bALLOC\s+size=64 ", dump)), 0, "setup-ABI allocs dropped as repeats")
    eq(len(re.findall(r"DEALLOC\s+size=64 ", dump)), 2, "setup-ABI deallocs")
    eq(len(re.findall(r"\bFREE\b", dump)), 0, "interposed frees dropped as repeats")
    s, rows = memory_tsv(log)
    eq(s["unmatched_frees"], 0, "unmatched frees")
    check(all(r[2] != 64 for r in rows if r[0] == "leak"), "the 64-byte blocks are freed")
    _, log = record([exe], args=["-q"])
    s, rows = memory_tsv(log)
    eq((s["allocations"], s["frees"], s["leaked_bytes"]), (2, 2, 0), "setup ABI alone")


def test_no_alloc_events_is_an_error():
    _, log = record([calls_fixture()], args=["-q"], check_rc=None)
    p = run([SFTRACE, "memory", log], check_rc=1)
    check("no allocation events: record with --alloc" in p.stderr and not p.stdout, p.stderr)
    for cut in (["-c", log], ["--tid", "1"], ["--time", "1ms.."], ["--max-depth", "1"]):
        p = run([SFTRACE, "memory"] + cut + [log], check_rc=2)
        check("memory replays the whole heap" in p.stderr and not p.stdout, p.stderr)


def _render(path, d):
    """Screenshot in headless Chromium (tests/cases/test_analysis.py's helpers): console lines, pixels."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_analysis import _chromium_run, _png_pixels
    png = os.path.join(d, os.path.basename(path) + ".png")
    console = _chromium_run(path, png, d)
    return console, _png_pixels(png)


def test_leak_flamegraph_and_plot_render():
    d = tmpdir()
    svg, plot, fold = (os.path.join(d, n) for n in ("leak.svg", "heap.svg", "fold.html"))
    run([SFTRACE, "memory", "--milestone", "milestone", "--flamegraph", svg, "--plot", plot, heap_log()])
    run([SFTRACE, "memory", "--milestone", "milestone", "--plot", fold, "--overlay", "--select", "1,2,3", heap_log()])
    text = open(svg, encoding="utf-8").read()
    s, rows = memory_tsv(heap_log())
    traced = sum(r[2] for r in rows if r[0] == "leak" and r[4] != "[no traced frame]")
    check(f"<title>all\n{traced} bytes" in text, "the root box holds the leaked bytes under traced frames")
    check(re.search(r"<title>leaf_leak \[[^]]*\]\n168 bytes", text), "leaf_leak: 168 bytes")
    p = open(plot, encoding="utf-8").read()
    eq(len(re.findall(r"<title>stage \d+ starts</title>", p)), 3, "stage lines")
    check("<title>peak 1.01 MiB</title>" in p, "peak marker (1054568 bytes)")
    f = open(fold, encoding="utf-8").read()
    check(f.startswith("<!DOCTYPE html>") and "http" not in f.replace("http://www.w3.org/2000/svg", ""),
          "self-contained HTML")
    eq(re.findall(r"<title>(stage \d)</title></path>", f), ["stage 1", "stage 2", "stage 3"], "folded stages")
    for path in (svg, fold):  # the SVG plot is the same drawing as the page's
        console, px = _render(path, d)
        eq([c for c in console if "Uncaught" in c or "Error" in c], [], f"no script errors in {path}")
        check(len(set(px)) > 20, f"{path}: the screenshot is not one flat colour")


def test_pola_alloc_table():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_convert import PARQUET_DIR, pola_query
    log = heap_log()
    out = os.path.join(tmpdir(), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    pola_query(out)  # installs the readers if needed (or skips); the reference files still check out
    r = json.loads(run(["node", os.path.join(PARQUET_DIR, "alloc_query.mjs"), out], timeout=300).stdout)
    eq(r["types"]["time"], "DataType(Duration(ms))", "time: a duration, typed like OUT's")
    eq(r["types"]["size"], "DataType(UInt64)", "size u64")
    eq(r["types"]["site_name"], "DataType(String)", "site_name str")
    for name, want in {"setup": [11, 2000], "work_a": [5, 1280], "producer": [3, 1536], "leaf_leak": [7, 168],
                       "make_temps": [20, 960], "peak": [1, 1048576], "grow": [1, 16]}.items():
        eq(r["byName"][name], want, f"alloc rows joined to {name}")
    eq((r["kinds"]["3"], r["kinds"]["4"]), (3, 3), "realloc-alloc and realloc-dealloc rows")
    eq(r["duckdb"], sum(r["kinds"].values()), "DuckDB reads every row")
    eq(r["named"], r["duckdb"], "every call site named")
    eq(r["aligned"], 1, "aligned_alloc(64, ...) row")
    # a log without allocation events gets no OUT.alloc
    _, plain = record([calls_fixture()], args=["-q"], check_rc=None)
    out2 = os.path.join(tmpdir(), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", plain, "-o", out2])
    check(os.path.exists(out2) and not os.path.exists(out2 + ".alloc"), "no OUT.alloc without allocation events")


def test_perfetto_heap_counter():
    tp = "/work/shared/tools/trace_processor_shell"
    if not os.access(tp, os.X_OK):
        from sfkit import Skip
        raise Skip("trace_processor_shell not available")
    log = heap_log()
    d = tmpdir()
    pb = os.path.join(d, "sf.pb")
    run([SFTRACE, "convert", log, "-o", pb])
    q = os.path.join(d, "q.sql")
    with open(q, "w") as fh:
        fh.write("select t.name, count(*) as n, cast(max(c.value) as int) as mx, "
                 "cast((select c2.value from counter c2 where c2.track_id = t.id order by c2.ts desc limit 1) as int) "
                 "as last from counter c join process_counter_track t on c.track_id = t.id group by t.id;")
    out = run([tp, "-q", q, pb]).stdout
    s, _ = memory_tsv(log)
    rows = [line for line in out.splitlines() if line.startswith('"heap size"')]
    eq(len(rows), 1, f"one heap counter track: {out}")
    name, n, mx, last = rows[0].split(",")
    check(int(n) > 90, f"counter rows: {n}")
    eq(int(mx), s["peak_bytes"], "counter peak = memory's peak_bytes")
    eq(int(last), s["leaked_bytes"], "last value = leaked bytes")


def test_perfetto_heap_counter_of_an_exec_child_on_the_recording_clock():
    """The parent sleeps 200 ms, then fork+execs a child whose
    alloc_in_child() holds 1 MiB: in trace_processor, the child's heap
    counter reaches 1 MiB inside that slice (the counter sits on the
    recording's time base, as slices do; it used to sit 200 ms early)."""
    tp = os.environ.get("SFTRACE_TRACE_PROCESSOR") or "/work/shared/tools/trace_processor_shell"
    if not os.access(tp, os.X_OK):
        from sfkit import Skip
        raise Skip("trace_processor_shell not available")
    exe = build_c("heap_pattern", ["heap_pattern.c"], flags=["-fno-builtin", "-O1"], libs=["-lpthread"])
    d = tmpdir()
    record([exe, "spawn"], out=os.path.join(d, "sf.log"), args=["--alloc", "-q"])
    pb = os.path.join(d, "all.pb")
    run([SFTRACE, "convert", d, "-o", pb])
    q = os.path.join(d, "q.sql")
    with open(q, "w") as fh:
        fh.write("select 'slice' as k, p.pid as pid, s.ts as ts, s.dur as dur from slice s "
                 "join thread_track tt on s.track_id = tt.id join thread using (utid) join process p using (upid) "
                 "where s.name = 'alloc_in_child' "
                 "union all select 'counter', p.pid, min(c.ts), null from counter c "
                 "join process_counter_track t on c.track_id = t.id join process p using (upid) "
                 "where t.name = 'heap size' and c.value >= 1048576 group by p.pid;")
    out = run([tp, "-q", q, pb]).stdout
    rows = [line.replace('"', '').split(",") for line in out.splitlines()[1:] if line.strip()]
    slices = [r for r in rows if r[0] == "slice"]
    counters = [r for r in rows if r[0] == "counter"]
    eq(len(slices), 1, f"one alloc_in_child slice: {out}")
    eq(len(counters), 1, f"one process's heap counter reaches 1 MiB: {out}")
    eq(counters[0][1], slices[0][1], "the counter is the child's")
    ts, dur, reach = int(slices[0][2]), int(slices[0][3]), int(counters[0][2])
    check(ts <= reach < ts + dur, f"counter reaches 1 MiB at {reach}, alloc_in_child runs {ts}..{ts + dur}")


def test_large_live_set_freed_out_of_order():
    s, rows = memory_tsv(heap_log(["churn"]))
    n = 20000
    want = sum(i % 97 + 1 for i in range(n) if i % 7 == 0)
    eq(by_func(rows, "site", "churn"), (sum(i % 97 + 1 for i in range(n)), n), "churn allocations")
    eq(by_func(rows, "leak", "churn"), (want, len(range(0, n, 7))), "blocks left live")
    eq(by_func(rows, "peak", "churn"), (sum(i % 97 + 1 for i in range(n)), n), "all live at the peak")
    eq(s["unmatched_frees"], 0, "every free matched")


def test_signal_handlers_that_allocate_lose_no_heap_event():
    """A SIGALRM handler makes 1500 malloc(200)/free pairs (more records
    than a slot holds) every ms, interrupting a loop of malloc(24)/free,
    sometimes between the claim of a heap event's records and their stores.
    The hand-off must then keep that slot until the records are filled (the
    runtime counts the zero-word payload records of complete heap events so
    it can skip walking a batch: a wrong count would write a hole). Every
    allocation is in the trace, by function, with its free."""
    exe = build_c("sig_heap", ["sig_heap.c"], flags=["-fno-builtin"])
    p, log = record([exe, "400", "1500", "1000"], args=["--alloc", "-q"], timeout=240)
    m = re.search(r"pairs (\d+) handled (\d+)", p.stdout)
    check(m, p.stdout)
    pairs, handled = int(m.group(1)), int(m.group(2))
    check(handled >= 400 and pairs > 0, p.stdout)
    s, rows = memory_tsv(log)
    eq(by_func(rows, "site", "work"), (24 * pairs, pairs), "the loop's allocations")
    eq(by_func(rows, "site", "on_signal"), (200 * 1500 * handled, 1500 * handled), "the handlers' allocations")
    eq(by_func(rows, "leak", "work") + by_func(rows, "leak", "on_signal"), (0, 0, 0, 0), "every block freed")
    eq(s["unmatched_frees"], 0, "every free matched")
    info = dump_info(log)
    eq((sum(t["lost"] for t in info["threads"]), info["dropped"]), (0, 0), "records lost, events dropped")


def test_errno_and_every_event_across_slot_hand_offs():
    """malloc, calloc and free under --alloc leave errno as the program
    set it, on their fast path and on the slow one (30,000 rounds: 120,000
    heap events, tens of full slots handed off), and every one of them is
    recorded at the program's function with its size (calloc: n x size)."""
    exe = build_c("heap_errno", ["heap_errno.c"], flags=["-fno-builtin"])
    n = 30000
    want = f"{n} rounds, errno changed 0 times\n"
    eq(run([exe, str(n)]).stdout, want, "untraced output")
    p, log = record([exe, str(n)], args=["--alloc", "-q"])
    eq(p.stdout, want, "traced output")
    s, rows = memory_tsv(log)
    nbytes = sum(16 + i % 64 + 2 * (8 + i % 32) for i in range(n))
    eq(by_func(rows, "site", "churn"), (nbytes, 2 * n), "churn's allocations")
    eq(by_func(rows, "leak", "churn"), (0, 0), "every block freed")
    eq(s["unmatched_frees"], 0, "every free matched")
    info = dump_info(log)
    eq((sum(t["lost"] for t in info["threads"]), info["dropped"]), (0, 0), "records lost, events dropped")


def _instructions_per_round(exe, env, n1=20000, n2=60000):
    """Instructions of the program's thread inside flat() per malloc+free
    round (callgrind: the difference of two run lengths)."""
    ir = []
    for n in (n1, n2):
        p = run(["valgrind", "--tool=callgrind", "--smc-check=all", "--toggle-collect=flat",
                 "--callgrind-out-file=/dev/null", exe, "flat", str(n)], env=env, timeout=600)
        m = re.search(r"Collected : (\d+)", p.stderr)
        check(m, f"callgrind output: {p.stderr[-1000:]}")
        ir.append(int(m.group(1)))
    return (ir[1] - ir[0]) / (n2 - n1)


def test_heap_event_takes_the_fast_path():
    """Instructions per heap event (malloc or free, recorded under --alloc)
    in bench/alloc_bench.c's flat loop, counted by callgrind: 106.6 now,
    136.0 before the hooks' fast path (main 63bad6d), 150 or more when
    every event takes the general path. At most 120; deterministic, so
    the machine's load cannot fail it (bench/alloc_instructions.py gives
    the function event's 32.6 beside it)."""
    if not shutil.which("valgrind"):
        raise Skip("valgrind not installed: instruction counts need it")
    exe = build_c("alloc_bench", [os.path.join(ROOT, "bench", "alloc_bench.c")], flags=["-fno-builtin"])
    d = tmpdir()
    alloc = os.path.join(os.path.dirname(RUNTIME), "libsftrace-alloc.so")
    untraced = _instructions_per_round(exe, {"LD_PRELOAD": ""})
    # the writer thread by name (sfkit.CG_WRITER_ENV): auto hands off on
    # the measured thread under valgrind
    traced = _instructions_per_round(exe, {"LD_PRELOAD": f"{RUNTIME}:{alloc}", **CG_WRITER_ENV,
                                           "SFTRACE_OUTPUT_FILE": os.path.join(d, "sf.log")})
    per_event = (traced - untraced) / 2
    check(per_event <= 120, f"a heap event runs {per_event:.1f} instructions ({untraced:.1f} a round untraced, "
          f"{traced:.1f} traced)")


# ---- tail calls, leaf-first rows, folding, --diff (issue 27) ----

_tail_logs = {}


def tail_log(args=()):
    """tests/fixtures/heap_tail.c at -O2: grab, zeroed, chain and aligned tail-call their allocator."""
    key = tuple(args)
    if key not in _tail_logs:
        exe = build_c("heap_tail", ["heap_tail.c"], flags=["-fno-builtin"])
        _, _tail_logs[key] = record([exe] + list(args), args=["--alloc", "-q"],
                                    out=os.path.join(tmpdir(), "tail.log"))
    return _tail_logs[key]


def fixture_line(name, text):
    with open(os.path.join(FIXTURES, name)) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


def test_tail_called_allocators_are_their_callers():
    exe = build_c("heap_tail", ["heap_tail.c"], flags=["-fno-builtin"])
    dis = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    for fn, alloc in (("grab", "malloc"), ("zeroed", "calloc"), ("chain", "realloc"), ("aligned", "aligned_alloc")):
        body = re.search(r"<%s>:\n(.*?)\n\n" % fn, dis, re.S).group(1)
        check(re.search(r"jmp\s+[0-9a-f]+ <%s@plt>" % alloc, body) and not re.search(r"\bcall\b", body),
              f"{fn} tail-calls {alloc}:\n{body}")
    s, rows = memory_tsv(tail_log())
    src = os.path.join(FIXTURES, "heap_tail.c")
    at = lambda text: "%s:%d" % (src, fixture_line("heap_tail.c", text))  # noqa: E731
    site = [(r[2], r[3], r[4], r[5], r[6], r[7]) for r in rows if r[0] == "site"]
    # tail-called sites are at the function's own line; main's direct malloc at its call
    eq(site, [(101000, 11, "grab", at("*grab("), "1", "main;grab"),
              (10000, 4, "chain", at("*chain("), "1", "main;chain"),
              (500, 1, "main", at("free(malloc(500))"), "0", "main"),
              (256, 1, "aligned", at("*aligned("), "1", "main;aligned"),
              (77, 1, "zeroed", at("*zeroed("), "1", "main;zeroed")], "one row per function and line")
    eq([(r[2], r[3], r[4]) for r in rows if r[0] == "leak"], [(4000, 1, "chain"), (77, 1, "zeroed")],
       "chain's last realloc (4,000 B) and zeroed's calloc are live at the end")
    eq((s["allocations"], s["reallocs"], s["bytes_allocated"]), (15, 3, 101000 + 10000 + 500 + 256 + 77), "totals")
    dump = run([SFTRACE, "dump", tail_log()]).stdout
    check(re.search(r"MALLOC\s+size=77 align=1 ", dump), "calloc(7, 11) as one 77-byte block")
    out = run([SFTRACE, "memory", tail_log()]).stdout
    check("  98.6 KiB       11  grab  heap_tail.c:%d (tail call)  ← main\n" % fixture_line("heap_tail.c", "*grab(")
          in out, out)
    p = run([SFTRACE, "memory", "--interactive", "-n", "1", tail_log()], input="show 0\nexit\n")
    check(re.search(r"^stack: main;grab @ main \[0x[0-9a-f]+\] \(tail call\)$", p.stdout, re.M), p.stdout)
    # grouped by stack, grab's 11 calls stay apart (one per return address in main), all grab's
    _, st = memory_tsv(tail_log(), ["--group-by", "stack"])
    eq(sum(r[3] for r in st if r[0] == "site" and r[4] == "grab"), 11, "by stack: grab's rows")
    check(len([r for r in st if r[0] == "site"]) > 5, "by stack: more rows than by line")
    _, fn = memory_tsv(tail_log(), ["--group-by", "function"])
    eq([(r[2], r[4]) for r in fn if r[0] == "site"], [(101000, "grab"), (10000, "chain"), (500, "main"),
                                                       (256, "aligned"), (77, "zeroed")], "by function")


def test_rows_fit_80_and_100_columns():
    exe = rust_fixture("heap_rust")
    _, log = record([exe], args=["--alloc", "-q"], out=os.path.join(tmpdir(), "rust.log"))
    for width, args in ((100, []), (80, ["--width", "80"]), (40, ["--width", "40"])):
        out = run([SFTRACE, "memory", "-n", "0"] + args + [log]).stdout  # not a terminal: 100 by default
        rows = [ln for ln in out.splitlines() if re.match(r"^ +[0-9.]+ [KM]?i?B +\d+  ", ln)]
        check(rows and all(len(ln) <= width for ln in rows), f"rows fit {width} columns:\n{out}")
        lines = out.split("Top allocation sites by bytes:\n")[1].splitlines()
        # map's HashMap::insert on line 43 (its RawTable growth is traced
        # plumbing entered there), as heaptrack_print reads it
        want = {100: "   2.1 KiB        5  heap_rust::map  heap_rust.rs:43  ← heap_rust::main ← …",
                80: "   2.1 KiB        5  heap_rust::map  heap_rust.rs:43  ← heap_rust::main ← …",
                # the location whole leaves the name under 10 columns: the
                # location alone, the name on the next line
                40: "   2.1 KiB        5  heap_rust.rs:43\n                       heap_rust::map"}[width]
        eq("\n".join(lines[1:3 if width == 40 else 2]), want, f"top row at {width} columns")
        i = next(i for i, ln in enumerate(lines) if ln.startswith("     120 B        3  "))
        want = {100: "     120 B        3  heap_rust::make_box  heap_rust.rs:11  ← heap_rust::leak_boxes ← …",
                80: "     120 B        3  heap_rust::make_box  heap_rust.rs:11  ← heap_rust::leak_bo…",
                40: "     120 B        3  heap_rust.rs:11\n                       heap_r…::make_box"}[width]
        eq("\n".join(lines[i:i + 2 if width == 40 else i + 1]), want, f"callers as far as {width} columns allow")


def test_rust_top_sites_name_the_crate_not_the_allocator():
    exe = rust_fixture("heap_rust")
    _, log = record([exe], args=["--alloc", "-q"], out=os.path.join(tmpdir(), "rust.log"))
    _, rows = memory_tsv(log)
    site = [r for r in rows if r[0] == "site"]
    eq([(r[2], r[3], r[4]) for r in site[:2]], [(2188, 5, "heap_rust::map"), (2016, 6, "heap_rust::vec_growth")],
       "top sites: the crate's functions (HashMap growth, Vec growth 32..1024 B)")
    check("finish_grow" in site[1][8] and "__rust_realloc" in site[1][8], "the full stack keeps the plumbing")
    _, raw = memory_tsv(log, ["--no-fold"])
    eq([r[4] for r in raw if r[0] == "site"][:2], ["__rustc::__rust_alloc", "__rustc::__rust_realloc"],
       "--no-fold shows the allocator's frames")
    _, more = memory_tsv(log, ["--fold", r"heap_rust::map$"])
    eq([(r[2], r[4]) for r in more if r[0] == "site"][0], (2188, "heap_rust::main"), "--fold adds a pattern")
    p = run([SFTRACE, "memory", "--fold", "(", log], check_rc=2)
    check("--fold '('" in p.stderr and not p.stdout, p.stderr)


def test_diff_of_two_runs():
    old, new = tail_log(), tail_log(["more"])
    out = run([SFTRACE, "memory", "--diff", "--format", "tsv", old, new]).stdout
    eq(out.splitlines(), ["diff\t4\t26000\t0\t4000\t0\t4\t8\t10000\t36000\tchain\theap_tail.c:%d"
                          % fixture_line("heap_tail.c", "*chain("),
                          "diff\t1\t9000\t9000\t0\t0\t11\t12\t101000\t110000\tgrab\theap_tail.c:%d"
                          % fixture_line("heap_tail.c", "*grab("),
                          "diff\t-1\t-77\t0\t-77\t-1\t1\t0\t77\t0\tzeroed\theap_tail.c:%d"
                          % fixture_line("heap_tail.c", "*zeroed(")],
       "changed sites by largest increase; main and aligned unchanged")
    doc = json.loads(run([SFTRACE, "memory", "--diff", "--format", "json", old, new]).stdout)
    eq((doc["old"]["bytes"], doc["new"]["bytes"]), (111833, 111833 + 26000 + 9000 - 77), "totals")
    eq([(x["function"], x["bytes"]) for x in doc["sites"]], [("chain", 26000), ("grab", 9000), ("zeroed", -77)],
       "json sites")
    table = run([SFTRACE, "memory", "--diff", old, new]).stdout
    check("      +4  +25.4 KiB        0 B   +3.9 KiB  chain  heap_tail.c:" in table, table)
    p = run([SFTRACE, "memory", "--diff", old], check_rc=2)
    check("--diff takes two recordings" in p.stderr and not p.stdout, p.stderr)


def test_pola_alloc_frame_of_a_tail_call():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_convert import PARQUET_DIR, pola_query
    out = os.path.join(tmpdir(), "tail.pola")
    run([SFTRACE, "convert", "--type", "pola", tail_log(), "-o", out])
    pola_query(out)  # installs the readers if needed (or skips)
    r = json.loads(run(["node", os.path.join(PARQUET_DIR, "alloc_query.mjs"), out], timeout=300).stdout)
    # kind-1 rows (allocations) joined to their frame's function: grab's frames, not main's
    eq(r["byName"].get("grab"), [11, 101000], "grab's allocations in grab's frames")
    eq(r["byName"].get("zeroed"), [1, 77], "zeroed's calloc in zeroed's frame")
    eq(r["byName"].get("aligned"), [1, 256], "aligned's aligned_alloc")
    eq(r["byName"].get("main"), [1, 500], "main keeps only its direct malloc")


def test_leak_flamegraph_credits_the_tail_caller():
    svg = os.path.join(tmpdir(), "tail-leak.svg")
    run([SFTRACE, "memory", "--flamegraph", svg, tail_log()])
    text = open(svg, encoding="utf-8").read()
    check(re.search(r"<title>chain \[[^]]*\]\n4000 bytes", text), "chain's leaked realloc under chain")
    check(re.search(r"<title>zeroed \[[^]]*\]\n77 bytes", text), "zeroed's leaked calloc under zeroed")
    check(re.search(r"<title>main \[[^]]*\]\n4077 bytes", text), "main holds both through its children")


def inline_log():
    _, log = record([build_c("mem_inline", ["mem_inline.c"])], args=["--alloc", "-q"])
    return log


def test_inlined_function_names_its_rows():
    """mem_inline.c: leafy() inlined into three traced functions (once through
    mid(), itself inlined) names the rows whose line lies in it, its caller's
    name beside the call's line; host_c's own malloc stays host_c's."""
    log = inline_log()
    got = [(r[2], r[3], r[4], os.path.basename(r[5]), r[7]) for r in memory_tsv(log, ["-n", "0"])[1]
           if r[0] == "site" and "mem_inline.c" in r[5]]
    eq(got, [(400, 1, "leafy", "mem_inline.c:6", "main;host_c;leafy"),
             (301, 1, "leafy", "mem_inline.c:6", "main;host_b;mid;leafy"),
             (300, 2, "leafy", "mem_inline.c:6", "main;host_a;leafy"),
             (50, 1, "host_c", "mem_inline.c:13", "main;host_c")], "tsv rows")
    out = run([SFTRACE, "memory", "--width", "100", "-n", "4", log]).stdout.splitlines()
    i = out.index("Top allocation sites by bytes:")
    eq([re.sub(r"^\s*[\d.]+ \S+\s+\d+  ", "", l) for l in out[i + 2:i + 6]],
       ["leafy  mem_inline.c:6  ← host_c mem_inline.c:13 ← main",
        "leafy  mem_inline.c:6  ← mid mem_inline.c:7 ← host_b mem_inline.c:12 ← main",
        # two inlined calls on lines 9 and 10 merged: no one line to name
        "leafy  mem_inline.c:6  ← host_a ← main",
        "host_c  mem_inline.c:13  ← main"], "table rows")
    fn = [(r[2], r[4], r[7]) for r in memory_tsv(log, ["-n", "0", "--group-by", "stack"])[1]
          if r[0] == "site" and r[4] == "leafy"]
    eq(sorted(fn), [(100, "leafy", "main;host_a;leafy"), (200, "leafy", "main;host_a;leafy"),
                    (301, "leafy", "main;host_b;mid;leafy"), (400, "leafy", "main;host_c;leafy")], "by stack")


def test_inlined_lambda_reads_as_its_definer():
    """mem_inline_lambda.cc: a lambda inlined into fill() through
    std::for_each (inlined too) allocates on line 8, inside fill's source:
    the row is fill's, not the lambda's nor for_each's."""
    b = build_c("mem_inline_lambda", ["mem_inline_lambda.cc"], compiler="clang++")
    _, log = record([b], args=["--alloc", "-q"])
    got = [(r[2], r[3], r[4], os.path.basename(r[5]), r[7]) for r in memory_tsv(log, ["-n", "0"])[1]
           if r[0] == "site" and "mem_inline_lambda.cc" in r[5]]
    eq(got, [(48, 3, "fill(…)", "mem_inline_lambda.cc:8", "main;fill(…)"),
             (12, 1, "fill(…)", "mem_inline_lambda.cc:7", "main;fill(…)")], "rows")


def test_leak_flamegraph_draws_inlined_functions():
    """mem_inline.c's leaks (every block is kept): the inlined frames the rows
    name are drawn above the traced ones, mid between host_b and leafy."""
    svg = os.path.join(tmpdir(), "inline-leak.svg")
    run([SFTRACE, "memory", "--flamegraph", svg, inline_log()])
    titles = re.findall(r"<title>(.*?)</title>", open(svg, encoding="utf-8").read(), re.S)
    got = [t.split(" (")[0].replace("\n", " ") for t in titles if not t.startswith("all")]
    eq(sorted(got), sorted(["main [mem_inline] 1051 bytes", "host_a [mem_inline] 300 bytes", "leafy 300 bytes",
                            "host_b [mem_inline] 301 bytes", "mid 301 bytes", "leafy 301 bytes",
                            "host_c [mem_inline] 450 bytes", "leafy 400 bytes"]), "frames")
