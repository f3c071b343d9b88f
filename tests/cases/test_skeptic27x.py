"""Skeptic cases for issue 27 (sftrace memory: leaf-first sites, tail calls,
folding, one time base, --diff), written as a user would, against the claims
of the README's "Memory: leaks, peaks and allocation sites".

Programs are tests/fixtures/skeptic27x_*.{c,cc,rs}, built at -O2 with XRay
sleds. Cases that fail on main skip with "known break, issue 27 open: ...";
the rest pass and stay as regression tests.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic27x.py."""
import json
import os
import re
import stat
import subprocess
import sys
import time

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import SFTRACE, Skip, build_c, check, eq, record, run, rust_fixture, tmpdir  # noqa: E402

BREAK = "known break, issue 27 open: "


def fixture(name, src=None, flags=(), libs=(), compiler="clang"):
    return build_c("skeptic27x_" + name, [src or "skeptic27x_" + name + ".c"], flags=flags, libs=libs,
                   compiler=compiler)


def memory_json(path, extra=()):
    """The processes of `memory --format json` (one document, or a DIR's list)."""
    doc = json.loads(run([SFTRACE, "memory", "--format", "json"] + list(extra) + [path]).stdout)
    return doc["processes"] if "processes" in doc else [doc]


def sites(proc, section="sites_by_bytes"):
    """{(function, basename:line, tail_call, stack): (bytes, count)} of one process's section."""
    out = {}
    for r in proc[section]:
        loc = r["location"]
        loc = os.path.basename(loc) if loc.startswith("/") else loc
        key = (r["function"], loc, r["tail_call"], r["stack"])
        b, c = out.get(key, (0, 0))
        out[key] = (b + r["bytes"], c + r["count"])
    return out


def one(path, extra=()):
    procs = memory_json(path, extra)
    eq(len(procs), 1, "processes")
    return procs[0]


# ---------------------------------------------------------------- tail calls


def test_tail_chains_pointers_and_libc_tail_callees():
    """skeptic27x_tail_chain.c and skeptic27x_tail_edges.c at -O2: every
    allocator reached by `jmp`. Expected (and observed):
    grab 5x100 + grab2->grab chain 3x201 = 1103 B in 8 at grab (the last tail
    caller); viaptr (jmp *%rax to malloc) 4x300 = 1200 B; zero calloc 77 B;
    own (a real call) 2x1000 at own; mydup (jmp strdup) 12 B; release (jmp
    free) claims nothing; who (jmp getpid) does not take main's malloc(40);
    grow (jmp realloc) 100 then 1000 B; sel's two tail calls 10 B + 20 B;
    deep1->deep2->deep3 20 B at deep3."""
    exe = fixture("tail_chain")
    _, log = record([exe], args=["--alloc", "-q"])
    got = sites(one(log), "sites_by_bytes")
    eq(got[("grab", "skeptic27x_tail_chain.c:4", True, "main;grab")], (1103, 8), "grab")
    eq(got[("viaptr", "skeptic27x_tail_chain.c:8", True, "main;viaptr")], (1200, 4), "viaptr")
    eq(got[("zero", "skeptic27x_tail_chain.c:6", True, "main;zero")], (77, 1), "zero")
    eq(got[("own", "skeptic27x_tail_chain.c:9", False, "main;own")], (2000, 2), "own")
    check(not any(k[0] == "grab2" for k in got), f"grab2 is not the last tail caller: {got}")

    exe = fixture("tail_edges")
    _, log = record([exe], args=["--alloc", "-q"])
    p = one(log, ["--group-by", "stack"])
    got = sites(p)
    rows = [(r["function"], r["bytes"], r["count"]) for r in p["sites_by_bytes"]]
    eq(got[("mydup", "skeptic27x_tail_edges.c:6", True, "main;mydup")], (12, 1), "mydup")
    eq(got[("main", "skeptic27x_tail_edges.c:18", False, "main")], (40, 1), "main's malloc after who()")
    eq(got[("deep3", "skeptic27x_tail_edges.c:11", True, "main;deep3")], (20, 1), "deep3")
    eq(sorted(r[1:] for r in rows if r[0] == "grow"), [(100, 1), (1000, 1)], "grow")
    eq(sorted(r[1:] for r in rows if r[0] == "sel"), [(10, 1), (20, 1)], "sel")
    check(not any(k[0] in ("release", "who") for k in got), f"release/who claim nothing: {got}")
    eq((p["summary"]["allocations"], p["summary"]["reallocs"], p["summary"]["bytes_allocated"]),
       (7, 1, 5298), "summary")


def test_merged_row_names_callers_of_all_its_blocks():
    """skeptic27x_merge_callers.c: grab(n){return malloc(n);} called by a()
    3x1000 B and by b() 5x10 B. --group-by stack: (main;a;grab) 3000 B in 3,
    (main;b;grab) 50 B in 5 (holds). Default --group-by line merges them into
    one row of 3050 B in 8 (holds), but that row's callers are those of one
    stack: text "grab merge.c:3 (tail call) ← a ← main", tsv/json stack
    "main;a;grab" for all 8 blocks, of which 5 (50 B) came from b.
    Now a merged row names the callers common to all its blocks, then how
    many different callers follow ("← 2 callers"; heaptrack_print says
    "from N places"), and its tsv/json stack is "…;grab": "…" stands for
    the callers that differ. Before: stack "main;a;grab", text "← a ← main"."""
    exe = fixture("merge_callers")
    _, log = record([exe], args=["--alloc", "-q"])
    got = sites(one(log, ["--group-by", "stack"]))
    eq(got, {("grab", "skeptic27x_merge_callers.c:3", True, "main;a;grab"): (3000, 3),
             ("grab", "skeptic27x_merge_callers.c:3", True, "main;b;grab"): (50, 5)}, "by stack")
    for group in ("line", "function"):
        rows = one(log, ["--group-by", group])["sites_by_bytes"]
        eq([(r["function"], r["bytes"], r["count"], r["stack"], r["full_stack"]) for r in rows],
           [("grab", 3050, 8, "…;grab", "…;grab")], f"merged row by {group}")
        text = run([SFTRACE, "memory", "--group-by", group, log]).stdout
        eq([ln.split(None, 3)[3] for ln in text.splitlines() if " grab " in ln][0],
           "grab  skeptic27x_merge_callers.c:3 (tail call)  ← 2 callers", f"text row by {group}")
    tsv = [ln.split("\t") for ln in run([SFTRACE, "memory", "--format", "tsv", log]).stdout.splitlines()
           if ln.startswith("site\t")]
    eq([r[7:] for r in tsv], [["…;grab", "…;grab"]], "tsv stacks")


def test_temporary_by_heaptracks_rule_tells_backtraces_apart():
    """skeptic27x_temporary.c, 5 rounds of: p = A(1) (main's line 13);
    q = A(0) (main's line 14); free(p); free(q). Both are 100 B from g's one
    malloc call, traced stack main;A;g. heaptrack's rule
    (AccumulatedTraceData: a free is temporary when the freed block's
    allocation info, size + whole backtrace, is that of the latest
    allocation, with nothing in between) sees two backtraces (main's return
    addresses differ), so free(p) is not temporary, and free(q) follows
    free(p): expected 0 (heaptrack_print 1.4 on this binary: 0 besides its
    own libstdc++ pool). Observed 5: sftrace's "site" is the allocator's call
    site and the traced functions, not the lines they were called from. On
    Lua's sort.lua: 12 temporaries against heaptrack's 10 (8 against 6 under
    luaE_extendCI, reached from several lines of luaV_execute)."""
    exe = fixture("temporary")
    _, log = record([exe], args=["--alloc", "-q"])
    p = one(log)
    eq((p["summary"]["allocations"], p["summary"]["frees"]), (10, 10), "counts")
    if p["summary"]["temporary"] != 0:
        raise Skip("known limit (README, memory, temporaries): "
                   f"{p['summary']['temporary']} temporaries where heaptrack's rule gives 0: the log has no "
                   "call-site addresses for callers' frames, so main's two lines are one site")


# ---------------------------------------------------------------- volume


def test_empty_program_prints_zeros():
    """skeptic27x_no_alloc.c allocates nothing (write(2) only). Expected and
    observed: exit 0, all zeros, every table (none); without --alloc, exit 1
    and "no allocation events: record with --alloc"."""
    exe = fixture("no_alloc")
    _, log = record([exe], args=["--alloc", "-q"])
    p = one(log)
    eq({k: v for k, v in p["summary"].items() if k != "stages"},
       {k: 0 for k in ("allocations", "frees", "reallocs", "bytes_allocated", "temporary", "peak_bytes",
                       "peak_blocks", "peak_time_ns", "leaked_bytes", "leaked_blocks", "unmatched_frees")}
       | {"truncated": False}, "summary")
    eq([p[s] for s in ("peak", "sites_by_bytes", "sites_by_count", "temporary", "leak")], [[]] * 5, "tables")
    eq(run([SFTRACE, "memory", log]).stdout.count("(none)"), 5, "(none) tables")
    _, plain = record([exe], args=["-q"])
    r = run([SFTRACE, "memory", plain], check_rc=1)
    eq((r.stdout, r.stderr.strip()), ("", f"sftrace: error: {plain}: no allocation events: record with --alloc"),
       "no --alloc")


def test_flood_threads_free_each_others_blocks():
    """skeptic27x_flood.c 30000: 4 threads x 3 rounds x 30000 blocks of
    16+t B in mk() (tail call), each thread freeing the next one's. Expected
    and observed: mk 6,300,000 B in 360,000 (tail call, worker;mk), 0
    unmatched frees, peak 120,008 blocks = 2,100,000 + the 4 calloc'd arrays
    (960,000) + 4 thread DTVs (1152 B in libc, 288 B each as untraced) =
    3,061,152 B. (With 100000: 1,200,000 blocks, 10,201,152 B peak, also exact.)"""
    exe = fixture("flood", libs=["-lpthread"])
    _, log = record([exe, "30000"], args=["--alloc", "-q"])
    p = one(log)
    s = p["summary"]
    eq((s["allocations"], s["frees"], s["unmatched_frees"]), (360008, 360004, 0), "counts")
    eq((s["peak_bytes"], s["peak_blocks"], s["leaked_bytes"], s["leaked_blocks"]), (3061152, 120008, 1152, 4), "peak")
    got = sites(p)
    eq(got[("mk", "skeptic27x_flood.c:10", True, "worker;mk")], (6300000, 360000), "mk")


# ---------------------------------------------------------------- processes


def test_children_heap_on_recording_time_base_in_perfetto():
    """skeptic27x_procs.c: fork child (3 MiB in alloc_in_fork), fork+exec
    child (1 MiB in alloc_in_exec), posix_spawn child 300 ms later (2 MiB in
    alloc_in_spawn). Expected and observed in trace_processor: each process's
    "heap size" counter reaches its peak inside its allocating function's
    slice (e.g. exec child: counter at +294.119 ms, slice from +294.094 ms)."""
    tp = os.environ.get("SFTRACE_TRACE_PROCESSOR") or "/work/shared/tools/trace_processor_shell"
    if not os.access(tp, os.X_OK):
        raise Skip("trace_processor_shell not found (set SFTRACE_TRACE_PROCESSOR)")
    exe = fixture("procs")
    _, log = record([exe], args=["--alloc", "-q"])
    d = os.path.dirname(log)
    pb = os.path.join(d, "t.pb.gz")
    run([SFTRACE, "convert", d, "-o", pb])
    q = os.path.join(d, "q.sql")
    for name, mib in (("parent", 4), ("fork", 7), ("exec", 1), ("spawn", 2)):  # fork: 4 inherited + 3
        with open(q, "w") as f:
            f.write(f"""select s.ts, s.dur, (select min(c.ts) from counter c join process_counter_track t
  on c.track_id = t.id where t.upid = th.upid and t.name = 'heap size' and c.value >= {mib} * 1048576) as hit
from slice s join thread_track tt on s.track_id = tt.id join thread th using (utid)
where s.name = 'alloc_in_{name}';""")
        rows = run([tp, "-q", q, pb]).stdout.strip().splitlines()[1:]
        eq(len(rows), 1, f"alloc_in_{name} slices")
        ts, dur, hit = (int(x) for x in rows[0].split(","))
        check(ts <= hit <= ts + dur, f"alloc_in_{name}: heap reaches {mib} MiB at {hit}, slice [{ts}, {ts + dur}]")


def test_exec_child_peak_time_on_recording_time_base():
    """skeptic27x_procs.c, `memory --format json DIR`: the peak time of each
    process. The parent sleeps 100+100 ms before fork+exec'ing the child,
    which sleeps 50 ms before allocating; the spawned child starts after 300
    more. Expected: peak_time_ns on the recording's time base, as Perfetto,
    Parquet and the fork child's own (fork child 182 ms, >= 150 ms: holds):
    exec child >= 250 ms, spawn child >= 550 ms (Parquet's OUT.alloc: 294
    and 606 ms); text and tsv give the same instants. Before: exec child 56
    ms, spawn child 58.8 ms (their own start), two time bases in one table."""
    exe = fixture("procs")
    _, log = record([exe], args=["--alloc", "-q"])
    procs = memory_json(os.path.dirname(log))
    eq(len(procs), 4, "processes")
    by = {}
    for p in procs:
        # the process by its alloc_in_* frame (touch(), inlined into it,
        # names the row itself)
        stack = p["sites_by_bytes"][0]["stack"].split(";") if p["sites_by_bytes"] else []
        top = next((f for f in stack if f.startswith("alloc_in_")), None)
        if p["summary"].get("inherited_bytes"):
            top = "alloc_in_fork"
        by[top] = p["summary"]["peak_time_ns"]
    check(by["alloc_in_fork"] >= 150_000_000, f"fork child peak at {by['alloc_in_fork']} ns")
    check(by["alloc_in_exec"] >= 250_000_000 and by["alloc_in_spawn"] >= 550_000_000,
          f"exec/spawn children's peak_time_ns on their own clock: exec {by['alloc_in_exec']} ns, "
          f"spawn {by['alloc_in_spawn']} ns, fork {by['alloc_in_fork']} ns")
    # the same instants in tsv and text
    tsv = run([SFTRACE, "memory", "--format", "tsv", os.path.dirname(log)]).stdout
    eq(sorted(int(ln.split("\t")[1]) for ln in tsv.splitlines() if ln.startswith("peak_time_ns\t")),
       sorted(by.values()), "tsv peak times")
    text = run([SFTRACE, "memory", os.path.dirname(log)]).stdout
    eq(sorted(re.findall(r" blocks at ([0-9.]+) ms;", text)), sorted(f"{v / 1e6:.3f}" for v in by.values()),
       "text peak times")


def test_fork_child_keeps_frames_open_at_fork():
    """skeptic27x_fork_frames.c: main -> work(), which forks; the child calls
    leaf(300) and mallocs 500 B on line 10 of work, then _exits inside work.
    The child starts inside the frames its parent's forking thread had open
    at the fork (from the parent's log): leaf 300 B at line 4 with stack
    work;leaf, and the 500 B at `work  fork_frames.c:10`, stack work. (The
    skeptic expected main;work, as heaptrack shows; but main is
    `return work();`, a tail call at -O2, so main's frame is gone, and the
    parent's own 100 B read work;leaf.) Before: "[no traced frame]" with an
    empty stack, and leaf's stack "leaf". Inheritance holds (100 B in 1
    block from the parent).
    skeptic27x_fork_return.c: the child returns from work and outer (exits
    of frames it never entered) and allocates in each on the way out: 10 B
    at main;outer;work, 20 B at main;outer, 40 B at main."""
    exe = fixture("fork_frames")
    _, log = record([exe], args=["--alloc", "-q"])
    procs = memory_json(os.path.dirname(log))
    child = [p for p in procs if p["summary"].get("inherited_bytes")]
    eq(len(child), 1, "forked children")
    s = child[0]["summary"]
    eq((s["inherited_bytes"], s["inherited_blocks"], s["allocations"], s["unmatched_frees"]), (100, 1, 2, 0),
       "child summary")
    parent = [p for p in procs if p is not child[0]][0]
    eq(sites(parent), {("leaf", "skeptic27x_fork_frames.c:4", False, "work;leaf"): (100, 1)}, "parent")
    eq(sites(child[0]), {("work", "skeptic27x_fork_frames.c:10", False, "work"): (500, 1),
                         ("leaf", "skeptic27x_fork_frames.c:4", False, "work;leaf"): (300, 1)}, "child")

    exe = fixture("fork_return")
    _, log = record([exe], args=["--alloc", "-q"])
    procs = memory_json(os.path.dirname(log))
    eq(len(procs), 2, "processes")
    child = [p for p in procs if p["sites_by_bytes"]]
    eq(len(child), 1, "the child allocates")
    eq(sites(child[0]), {("work", "skeptic27x_fork_return.c:10", False, "main;outer;work"): (10, 1),
                         ("outer", "skeptic27x_fork_return.c:16", False, "main;outer"): (20, 1),
                         ("main", "skeptic27x_fork_return.c:22", False, "main"): (40, 1)}, "child returning")


def test_fork_child_log_alone_says_what_it_lacks():
    """skeptic27x_fork_frames.c, `memory` given the fork child's log alone
    (sf.PID.log, as a user picks one process). With the directory the child
    starts with the parent's 100 B in 1 block, peak 900 B, leaks 900 B
    (holds). Alone, expected: the same figures (the parent's log is beside
    it) or a line saying the inherited heap is not counted (the child's log
    holds its fork time and parent pid); nothing lost silently. Now: peak
    800 B, leaks 800 B, and one warning line naming the parent's pid (before:
    no word of the fork)."""
    exe = fixture("fork_frames")
    _, log = record([exe], args=["--alloc", "-q"])
    d = os.path.dirname(log)
    child = [p for p in memory_json(d) if p["summary"].get("inherited_bytes")]
    eq(len(child), 1, "forked children")
    s = child[0]["summary"]
    eq((s["peak_bytes"], s["leaked_bytes"]), (900, 900), "child in the directory")
    path = os.path.join(d, f"sf.{child[0]['pid']}.log")
    warn = (f"sftrace: warning: {path}: forked from pid {s['fork_parent_pid']}, whose log was not given: "
            "the heap it inherited at the fork is not counted\n")
    for fmt in ("table", "tsv", "json"):
        r = run([SFTRACE, "memory", "--format", fmt, path])
        eq(r.stderr, warn, f"{fmt}: the child's log alone")
    alone = one(path)["summary"]
    eq((alone["peak_bytes"], alone["leaked_bytes"], "inherited_bytes" in alone), (800, 800, False), "alone")
    eq(run([SFTRACE, "memory", "-q", path]).stderr, "", "-q")


def test_double_fork_daemon_inherits_and_frees():
    """skeptic27x_daemon.c: main mallocs 111 B in before(), forks; the child
    setsid()s, forks again and exits; the grandchild closes every descriptor
    (close_range 0..~0), leaks 3x7777 B in daemon_work, frees the 111 B block
    and writes a file with fopen. Expected: the grandchild inherits 111 B in
    1 block (through the intermediate child), its free matches
    (unmatched_frees 0), daemon_work 23,331 B in 3 leaked; the file is
    written (holds). The intermediate child records nothing, so it has no
    log: the grandchild's header names main as the origin of its heap
    (fork_parent) and main's fork time. Before: no inherited heap,
    unmatched_frees 1 (the header's ppid was the reaper's)."""
    exe = fixture("daemon")
    d = tmpdir()
    out = os.path.join(d, "done.txt")
    _, log = record([exe, out], args=["--alloc", "-q"])
    for _ in range(100):
        if os.path.exists(out) and open(out).read():
            break
        time.sleep(0.05)
    time.sleep(0.2)  # the grandchild returns right after writing the file
    eq(open(out).read(), "daemon done\n", "daemon's file")
    procs = memory_json(os.path.dirname(log))
    grand = [p for p in procs if any(r["function"] == "daemon_work" for r in p["sites_by_bytes"])]
    eq(len(grand), 1, "grandchild")
    g = grand[0]
    eq([(r["bytes"], r["count"]) for r in g["leak"] if r["function"] == "daemon_work"], [(23331, 3)], "leak")
    s = g["summary"]
    main = [p for p in procs if p is not g]
    eq(len(main), 1, "logs: main and the grandchild (the intermediate child recorded nothing)")
    eq((s.get("inherited_bytes"), s.get("inherited_blocks"), s.get("fork_parent_pid"), s["unmatched_frees"]),
       (111, 1, main[0]["pid"], 0), "grandchild inherits main's block")


# ---------------------------------------------------------------- languages


def test_cxx_containers_and_shared_ptr_sites():
    """skeptic27x_containers.cc at -O2: vector<int> 100 push_backs (8 blocks,
    1020 B at line 8), map<int,int> 10 nodes (400 B at line 9), make_shared
    3x48 B (line 10), shared_ptr(new Node) 2x(32+24) B (line 11), unordered_map
    reserve+5 emplace (120 B in 6 at line 13), keep.reserve(8) 128 B at line
    18: all hold. string += "abcdefghij" x10 in build_str (3 blocks, 213 B):
    at `build_str  containers.cc:12`: the inline chain at the call is
    append <- operator+= <- build_str, and operator+= is folded with append
    (before: basic_string.h:1340, operator+='s line)."""
    exe = fixture("containers", src="skeptic27x_containers.cc", compiler="clang++")
    _, log = record([exe], args=["--alloc", "-q"])
    rows = {(r["function"], os.path.basename(r["location"])): (r["bytes"], r["count"])
            for r in one(log)["sites_by_bytes"]}
    f = "skeptic27x_containers.cc:"
    eq(rows[("fill_vec(…)", f + "8")], (1020, 8), "vector")
    eq(rows[("fill_map(…)", f + "9")], (400, 10), "map")
    eq(rows[("make_node()", f + "10")], (144, 3), "make_shared")
    eq(rows[("new_node()", f + "11")], (112, 4), "shared_ptr(new)")
    eq(rows[("fill_umap(…)", f + "13")], (120, 6), "unordered_map")
    eq(rows[("main", f + "18")], (128, 1), "reserve")
    strs = {k: v for k, v in rows.items() if k[0].startswith("build_str")}
    eq(strs, {("build_str[abi:cxx11](…)", f + "12"): (213, 3)}, "string")


def test_rust_top_sites_name_user_functions():
    """skeptic27x_rust_sites.rs (rustc -O): grow_vec pushes 1000 u64 (9
    blocks, 8*(4+8+...+1024) = 16,352 B), boxed(7) makes 7 Box<[u8;100]> and
    a Vec of 7 pointers (756 B in 8), strings(50) with format!. Expected and
    observed: the top sites are r::grow_vec, r::make_map, r::strings, r::boxed
    at their own lines, never alloc::/RawVec/__rust_alloc."""
    exe = rust_fixture("skeptic27x_rust_sites")
    _, log = record([exe], args=["--alloc", "-q"])
    rows = one(log)["sites_by_bytes"]
    mine = {r["function"]: (r["bytes"], r["count"], os.path.basename(r["location"])) for r in rows
            if r["function"].startswith("skeptic27x_rust_sites::")}
    eq(mine["skeptic27x_rust_sites::grow_vec"], (16352, 9, "skeptic27x_rust_sites.rs:3"), "grow_vec")
    eq(mine["skeptic27x_rust_sites::boxed"], (756, 8, "skeptic27x_rust_sites.rs:7"), "boxed")
    eq(mine["skeptic27x_rust_sites::make_map"][2], "skeptic27x_rust_sites.rs:5", "make_map")
    eq(mine["skeptic27x_rust_sites::strings"][2], "skeptic27x_rust_sites.rs:9", "strings")
    check(not any(re.search(r"alloc::|RawVec|__rust_alloc|finish_grow", r["function"]) for r in rows), str(rows))


# ---------------------------------------------------------------- diff, width, bad input


def test_diff_of_two_runs_and_identical_runs():
    """skeptic27x_diff_leak.c N: N x 64 B leaked in a tail-called cache entry
    (line 3), 10 temporaries of 32N B in parse_token (line 4). N=10 vs N=25.
    Expected and observed: parse_token +0 allocs, +4800 B, peak +480 B, leak
    0, listed first; cache entry +15, +960 B, leak +960 B. Two runs of N=10:
    no changed site."""
    exe = fixture("diff_leak")
    _, a = record([exe, "10"], args=["--alloc", "-q"])
    _, b = record([exe, "25"], args=["--alloc", "-q"])
    _, c = record([exe, "10"], args=["--alloc", "-q"])
    rows = [ln.split("\t") for ln in run([SFTRACE, "memory", "--diff", "--format", "tsv", a, b]).stdout.splitlines()
            if ln.startswith("diff\t")]
    eq([(r[10], r[11], r[1:5]) for r in rows],
       [("parse_token", "skeptic27x_diff_leak.c:4", ["0", "4800", "480", "0"]),
        ("cache_entry_with_a_rather_long_function_name_for_width", "skeptic27x_diff_leak.c:3",
         ["15", "960", "960", "960"])], "diff rows")
    same = run([SFTRACE, "memory", "--diff", a, c]).stdout
    check("Changed sites, largest increase first:" in same and same.rstrip().endswith("(none)"), same)


def test_rows_fit_80_and_100_columns():
    """skeptic27x_diff_leak.c 25 under `--width 80` and `--width 100` (and
    100 by default, output not a terminal): every row of every table fits
    (holds; the summary line above the tables, 84 columns, is not a row).
    At 100 and 80 columns the row of the 55-character function keeps its
    file:line whole and its name is cut (before: the name whole, the
    location cut to "skeptic27x_diff_leak.c…"), in --diff's table too."""
    exe = fixture("diff_leak")
    _, log = record([exe, "25"], args=["--alloc", "-q"])
    for extra, width in (([], 100), (["--width", "80"], 80), (["--width", "100"], 100)):
        out = run([SFTRACE, "memory"] + extra + [log]).stdout
        long = [ln for ln in out.splitlines() if ln.startswith(" ") and len(ln) > width]
        eq(long, [], f"table rows wider than {width}")
    # the location stays whole, the name is cut (also in --diff's table)
    for width, name in ((100, "cache_entry_with_a_rather_long_function_…"), (80, "cache_entry_with_a_r…")):
        out = run([SFTRACE, "memory", "--width", str(width), log]).stdout
        row = [ln for ln in out.splitlines() if "cache_entry_with" in ln][0]
        eq(row[row.index("cache_ent"):], f"{name}  skeptic27x_diff_leak.c:3 (tail call)", f"row at {width}")
    _, old = record([exe, "10"], args=["--alloc", "-q"])
    # --diff marks the tail call as the site tables do (h27g); at 80 its 44
    # columns of figures leave 36, too few for the location whole with a
    # name of 10 columns: the location alone on the row's line, the name on
    # the next (man --width; k27d: the row grew to 83 before)
    out = run([SFTRACE, "memory", "--diff", "--width", "100", old, log]).stdout
    row = [ln for ln in out.splitlines() if "cache_ent" in ln][0]
    eq((len(row), row[43:]), (99, "cache_entry_with_…  skeptic27x_diff_leak.c:3 (tail call)"), "diff at 100")
    out = run([SFTRACE, "memory", "--diff", "--width", "80", old, log]).stdout.splitlines()
    at = [i for i, ln in enumerate(out) if ln.endswith("  skeptic27x_diff_leak.c:3 (tail call)")][0]
    eq((out[at][43:], out[at + 1]), ("skeptic27x_diff_leak.c:3 (tail call)", " " * 45 + "cache_entry_with_a_rather_long_fu…"),
       "diff at 80")


def test_unwritable_outputs_fail():
    """skeptic27x_diff_leak.c 10. A missing directory for --flamegraph/--plot:
    exit 1, one line naming the file. A full disk (/dev/full) for
    --flamegraph, --plot, or stdout of `memory --format json` and `report`:
    exit 1, one line naming the file and the cause, nothing on stdout. The
    device is written in place: before, as root, the temporary file was
    renamed over /dev/full, which became a regular file (exit 0)."""
    exe = fixture("diff_leak")
    _, log = record([exe, "10"], args=["--alloc", "-q"])
    for opt in ("--flamegraph", "--plot"):
        r = run([SFTRACE, "memory", opt, "/nonexistent/x.svg", log], check_rc=1)
        eq((r.stdout, r.stderr), ("", "sftrace: error: cannot create /nonexistent/x.svg: No such file or directory\n"),
           opt)
    if not stat.S_ISCHR(os.stat("/dev/full").st_mode):
        raise Skip("/dev/full is not a device here")
    for opt in ("--flamegraph", "--plot"):
        r = run([SFTRACE, "memory", opt, "/dev/full", log], check_rc=1)
        eq(r.stderr, "sftrace: error: cannot write /dev/full: No space left on device\n", opt)
        check(stat.S_ISCHR(os.stat("/dev/full").st_mode), f"{opt} replaced the device /dev/full")
    for cmd, what in ((["memory", "--format", "json"], "the memory report"), (["report"], "the report")):
        with open("/dev/full", "w") as full:
            p = subprocess.run([SFTRACE] + cmd + [log], stdout=full, stderr=subprocess.PIPE, text=True)
        eq((p.returncode, p.stderr),
           (1, f"sftrace: error: cannot write {what} to stdout (/dev/full): No space left on device\n"), cmd)
    # /dev/null takes a flame graph in place and stays a device
    run([SFTRACE, "memory", "--flamegraph", "/dev/null", log])
    check(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null replaced")


def test_truncated_log():
    """skeptic27x_diff_leak.c 25's log cut inside its 4096-byte header: exit 1,
    "header truncated (100 of 4096 bytes)", no output (holds). Cut in the
    middle: a warning naming the file and the events kept, and the kept
    events' numbers (holds)."""
    exe = fixture("diff_leak")
    _, log = record([exe, "25"], args=["--alloc", "-q"])
    data = open(log, "rb").read()
    d = tmpdir()
    cut = os.path.join(d, "cut.log")
    with open(cut, "wb") as f:
        f.write(data[:100])
    r = run([SFTRACE, "memory", cut], check_rc=1)
    eq((r.stdout, r.stderr), ("", f"sftrace: error: {cut}: header truncated (100 of 4096 bytes)\n"), "header")
    with open(cut, "wb") as f:
        f.write(data[:len(data) - 7])
    r = run([SFTRACE, "memory", "--format", "json", cut])
    check(re.match(rf"sftrace: warning: {re.escape(cut)}: truncated: .* complete events kept\n$", r.stderr), r.stderr)


if __name__ == "__main__":
    sfkit.main(globals())
