"""Skeptic 27y's cases for issue 27 (heap analysis, integ3 9dda2b9), on
programs of its own (fixtures tests/fixtures/skep27y_*): the fixes of round
h27x (merged rows, fork chains, peak times, checked outputs, widths) attacked
again. Cases that reproduce a break skip as known until it is fixed.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic27y.py."""
import json
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import SFTRACE, Skip, build_c, check, eq, record, run, tmpdir  # noqa: E402


def tsv(log, extra=()):
    """{pid: {"process": name, key: [fields...], "site": [(bytes, n, fn, line, stack)]}} of memory --format tsv."""
    out = run([SFTRACE, "memory", "--format", "tsv", "-n", "0"] + list(extra) + [log]).stdout
    procs = {}
    cur = procs.setdefault(0, {"sites": []})  # one log: no process line
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "process":
            procs.pop(0, None)
            cur = procs.setdefault(int(f[1]), {"sites": []})
        elif f[0] == "site":
            cur["sites"].append((int(f[2]), int(f[3]), f[4], os.path.basename(f[5]), f[7]))
        elif f[0] in ("allocations", "bytes_allocated", "peak_bytes", "peak_blocks", "leaked_bytes", "inherited"):
            cur[f[0]] = [int(x) for x in f[1:]]
    return procs


def table(log, extra=()):
    return run([SFTRACE, "memory"] + list(extra) + [log]).stdout


def cols(s):
    return len(s)  # str length: one column per code point (… and ← are one each)


def test_merged_rows_three_callers_and_recursion():
    """Held on integ3. g allocates for a (10 B), b (20 B), c (30 B) and for
    the recursion top(3), top(1), rec(2) (5 B each; rec(0) tail-calls g at
    -O2, so the stacks are main;top;rec;rec;rec;g, main;top;rec;g and
    main;rec;rec;g). With the recursion alone, every stack ends in rec;g:
    the row names rec, then 2 callers (top, rec); with a, b and c too, g
    has 4 immediate callers and shares none."""
    exe = build_c("skep27y_merge", ["skep27y_merge.c"])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 3\n", "the program's output")
    g = [s for s in tsv(log).popitem()[1]["sites"] if s[2] == "g"]
    eq(g, [(15, 3, "g", "skep27y_merge.c:6", "…;rec;g")], "g's merged row, recursion only")
    eq([r for r in table(log).splitlines() if "  g  " in r][0].split("  g  ")[1],
       "skep27y_merge.c:6  ← rec ← 2 callers", "g's table row")
    stacks = sorted(s[4] for s in tsv(log, ["--group-by", "stack"]).popitem()[1]["sites"] if s[2] == "g")
    eq(stacks, ["main;rec;rec;g", "main;top;rec;g", "main;top;rec;rec;rec;g"], "--group-by stack")
    p, log = record([exe, "x"], args=["--alloc", "-q"])
    eq(p.stdout, "ok 6\n", "the program's output")
    g = [s for s in tsv(log).popitem()[1]["sites"] if s[2] == "g"]
    eq(g, [(75, 6, "g", "skep27y_merge.c:6", "…;g")], "g's merged row, 4 callers")
    eq([r for r in table(log).splitlines() if "  g  " in r][0].split("  g  ")[1],
       "skep27y_merge.c:6  ← 4 callers", "g's table row")


def test_fork_chain_from_a_thread_and_a_signal_handler():
    """Held on integ3. Three generations forked from a thread (each child
    allocates 2000, 3000, 4000 B in grab_child) and a child forked in a
    SIGUSR1 handler (8000 B): each child inherits the live heap at its fork
    (788 B in 3 blocks: main's 200 B, thr's 300 B, the thread's 288 B DTV
    in libc, its untraced size; then each generation adds its block), and its stacks start
    from the forking thread's frames open at the fork."""
    exe = build_c("skep27y_fork", ["skep27y_fork.c"], libs=["-pthread"])
    p, log = record([exe], out=os.path.join(tmpdir(), "t", "sf.log"), args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    procs = tsv(os.path.dirname(log))
    kids = sorted((v["bytes_allocated"][0], v["inherited"][0], v["inherited"][1], v["peak_bytes"][0],
                   [s[1:] for s in v["sites"] if s[2] == "grab_child"])
                  for v in procs.values() if "inherited" in v)
    want_stack = "thr;spawn_chain;child_work;grab_child"
    eq(kids, [
        (2000, 788, 3, 2788, [(1, "grab_child", "skep27y_fork.c:12", want_stack)]),
        (3000, 2788, 4, 5788, [(1, "grab_child", "skep27y_fork.c:12", "…;spawn_chain;child_work;grab_child")]),
        (4000, 5788, 5, 9788, [(1, "grab_child", "skep27y_fork.c:12", "…;spawn_chain;child_work;grab_child")]),
        (8000, 788, 3, 8788, [(1, "grab_child", "skep27y_fork.c:12", "main;handler;child_work;grab_child")]),
    ], "(allocated, inherited bytes, blocks, peak, grab_child rows) per child")


def test_exit_via__exit_is_not_called_abnormal():
    """Fixed in h27g (was a break: the condition looked only at the
    header's state, not at the exit record info reads). A fork child ending
    with _exit(0) (the usual idiom after fork) is recorded as exited 0
    (`sftrace info`: "exited 0 (_exit)"), and `memory` writes no "(the
    process did not exit normally)" beside its heap, as for the parent."""
    exe = build_c("skep27y_exit", ["skep27y_exit.c"])
    p, log = record([exe], out=os.path.join(tmpdir(), "t", "sf.log"), args=["--alloc", "-q"])
    d = os.path.dirname(log)
    states = re.findall(r"exit state\s*: (.*)", run([SFTRACE, "info", d]).stdout)
    eq(sorted(states), ["exited 0", "exited 0 (_exit)"], "info's exit states")
    eq(sorted(re.findall(r"live at the end(.*)", table(d))), ["", ""], "what follows 'live at the end'")


def test_symlinked_output_updates_its_target():
    """Fixed in h27g (was a break: the temporary was renamed over the link,
    real.svg kept its old content). `--flamegraph link.svg` where link.svg
    is a symlink to real.svg writes real.svg, as the shell's `>`, cp and the
    compilers do, and the link stays; the replacement is still atomic (a
    rename over the resolved path)."""
    exe = build_c("skep27y_merge", ["skep27y_merge.c"])
    _, log = record([exe], args=["--alloc", "-q"])
    d = tmpdir()
    real, link = os.path.join(d, "real.svg"), os.path.join(d, "link.svg")
    with open(real, "w") as f:
        f.write("old\n")
    os.symlink("real.svg", link)
    run([SFTRACE, "memory", "--flamegraph", link, log])
    with open(link) as f:
        eq(f.read(5), "<?xml", "what link.svg reads")
    with open(real) as f:
        eq(f.read(5), "<?xml", "what real.svg reads")
    eq(os.readlink(link), "real.svg", "link.svg is still the link")
    eq(sorted(os.listdir(d)), ["link.svg", "real.svg"], "no temporary file left")


def test_width_40_header_fits():
    """Fixed in h27g (minor; was: the header line "bytes  blocks
    allocated in  at  ← called from" 52 columns wide at --width 40, and a
    row whose name filled the text column lost its location). At every
    width the site rows and the header fit; the header keeps the heads
    that fit ("allocated in  at" at 40). heap_pattern's rows at --width
    40 each keep a location after the name (cut, never left out); since
    h27b, the location whole on the row's line and the name below it."""
    exe = build_c("skep27y_merge", ["skep27y_merge.c"])
    _, log = record([exe], args=["--alloc", "-q"])
    for w in (40, 60, 80, 100, 200):
        out = table(log, ["--width", str(w)])
        rows = [r for r in out.splitlines() if re.match(r"^\s+[\d.]+ (B|KiB)\s", r)]
        eq([r for r in rows if cols(r) > w], [], f"site rows wider than {w}")
        heads = sorted({r.split("blocks  ")[1] for r in out.splitlines() if "allocated in" in r and "blocks" in r})
        eq(heads, ["allocated in  at" if w < 60 else "allocated in  at  ← called from"], f"heads at {w}")
        eq(sorted({r for r in out.splitlines() if "allocated in" in r and cols(r) > w}), [], f"headers wider than {w}")
    exe = build_c("heap_pattern", ["heap_pattern.c"], flags=["-fno-builtin", "-O1"], libs=["-lpthread"])
    _, log = record([exe], args=["--alloc", "-q"], check_rc=None)
    out = table(log, ["--width", "40", "-n", "0"])
    lines = out.splitlines()
    rows = [(r[21:], lines[i + 1] if i + 1 < len(lines) else "") for i, r in enumerate(lines)
            if re.match(r"^\s+[\d.]+ (B|KiB)\s", r)]
    # h27b: a row whose location whole leaves the name under 10 columns is
    # the location alone, whole, with the name on the next line, indented
    alone = [(r, nxt) for r, nxt in rows if re.fullmatch(r"heap_pattern\.c:\d+( \(tail call\))?", r)]
    check(alone and all(nxt.startswith(" " * 23) and nxt.strip() for _, nxt in alone), f"names below: {alone[:3]}")
    eq([r for r, nxt in rows if (r, nxt) not in alone and (len(r.split("  ")) < 2 or not r.split("  ")[1])], [],
       "rows without a location at 40")
    eq([r for r in rows if cols(r) > 19], [], "row texts wider than 19 columns at 40")


def test_peak_times_of_children_200ms_apart_agree_with_perfetto():
    """Held on integ3. Children started 200 ms apart (fork, fork+exec,
    fork then exit()) hold 100000, 300000 and 500000 B in alloc_in_child:
    memory's peak of each child is that block, inside its alloc_in_child
    slice in trace_processor, and the peak times memory gives differ by
    exactly what the Perfetto counters' times differ (one time base)."""
    tp = os.environ.get("SFTRACE_TRACE_PROCESSOR") or "/work/shared/tools/trace_processor_shell"
    if not os.access(tp, os.X_OK):
        raise Skip("trace_processor_shell not available")
    exe = build_c("skep27y_peaks", ["skep27y_peaks.c"])
    d = tmpdir()
    p, _ = record([exe], out=os.path.join(d, "sf.log"), args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    out = run([SFTRACE, "memory", "--format", "tsv", "-n", "0", d]).stdout
    peaks, pid = {}, None
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "process":
            pid = int(f[1])
        elif f[0] in ("peak_bytes", "peak_time_ns"):
            peaks.setdefault(pid, {})[f[0]] = int(f[1])
    pb = os.path.join(d, "all.pb")
    run([SFTRACE, "convert", d, "-o", pb])
    q = os.path.join(d, "q.sql")
    with open(q, "w") as fh:
        fh.write("select p.pid, c.ts, c.value, s.ts, s.dur from counter c "
                 "join process_counter_track t on c.track_id = t.id join process p using (upid) "
                 "join thread using (upid) join thread_track tt using (utid) join slice s on s.track_id = tt.id "
                 "where t.name = 'heap size' and c.value >= 100000 and s.name = 'alloc_in_child' order by c.ts;")
    rows = [[int(float(x)) for x in line.replace('"', '').split(",")]
            for line in run([tp, "-q", q, pb]).stdout.splitlines()[1:] if line.strip()]
    eq([(r[2], peaks[r[0]]["peak_bytes"]) for r in rows], [(100000, 100000), (300000, 300000), (500000, 500000)],
       "(Perfetto counter, memory's peak) per child")
    for pid_, ts, _, sts, sdur in rows:
        eq(sts <= ts < sts + sdur, True, f"pid {pid_}'s counter at {ts} inside alloc_in_child {sts}..{sts + sdur}")
    for a, b in zip(rows, rows[1:]):
        gap_tp = b[1] - a[1]
        gap_mem = peaks[b[0]]["peak_time_ns"] - peaks[a[0]]["peak_time_ns"]
        eq(abs(gap_tp - gap_mem) < 2000, True, f"peak gaps: Perfetto {gap_tp} ns, memory {gap_mem} ns")


def test_truncated_log_is_not_a_clean_report():
    """Fixed in h27g (claim 8; was: exit 0 with "0 allocations ... 0 B in
    0 blocks live at the end" and nothing on stdout saying so, a report
    that read as a clean, leak-free run). The rule (FORMAT.md: a truncated
    log is read up to the cut, with a warning): the log cut to its first
    chunk (before any allocation event) gives the warning on stderr, exit
    0, and the report itself says its figures are partial: a text line,
    tsv's `truncated 1`, json's "truncated": true. The whole log says 0 /
    false."""
    exe = build_c("skep27y_merge", ["skep27y_merge.c"])
    _, log = record([exe], args=["--alloc", "-q"])
    cut = os.path.join(tmpdir(), "cut.log")
    with open(log, "rb") as f, open(cut, "wb") as g:
        g.write(f.read(5000))
    p = run([SFTRACE, "memory", cut], check_rc=0)
    eq("truncated" in p.stderr, True, f"a warning: {p.stderr!r}")
    eq(p.stdout.splitlines()[0],
       "partial: the log is truncated, these figures cover only the events before the cut", "the text's first line")
    for path, want in ((cut, ("1", True)), (log, ("0", False))):
        out = run([SFTRACE, "memory", "--format", "tsv", path], check_rc=0).stdout
        eq(re.findall(r"^truncated\t(.*)$", out, re.M), [want[0]], f"tsv's truncated of {path}")
        doc = json.loads(run([SFTRACE, "memory", "--format", "json", path], check_rc=0).stdout)
        eq(doc["summary"]["truncated"], want[1], f"json's truncated of {path}")
    eq("partial" in table(log), False, "the whole log's report says nothing of a cut")


def test_string_growth_tail_called_at_o2_is_at_the_users_line():
    """Fixed in h27g (claim 17: operator+=/append/replace of basic_string
    folded, also when inlined at -O2; was at basic_string.h:1422 and 2171,
    the inlined append's and _M_replace's lines). op_pluseq(s) { s += big; }
    compiles to `jmp basic_string::_M_append@plt` (operator+= and append
    inlined, the growth out of line in libstdc++, tail-called). The row is
    op_pluseq's, a tail call, at the user's line 8 (the outermost inlined
    call's line); append, insert and replace likewise. The constructor
    (line 23, a call, not a tail call) is right."""
    exe = build_c("skep27y_strops", ["skep27y_strops.cc"], compiler="clang++")
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    rows = {s[2]: (s[0], s[1], s[3]) for s in tsv(log).popitem()[1]["sites"] if s[2].startswith("op_")}
    eq(rows["op_ctor(…)"], (301, 1, "skep27y_strops.cc:23"), "op_ctor's row")
    want = {"op_pluseq(…)": (301, 1, "skep27y_strops.cc:8"), "op_append(…)": (301, 1, "skep27y_strops.cc:11"),
            "op_insert(…)": (301, 1, "skep27y_strops.cc:14"), "op_replace(…)": (301, 1, "skep27y_strops.cc:17")}
    eq({k: rows.get(k) for k in want}, want, "the tail-called growths' rows")
    out = table(log, ["--width", "200"])
    eq([r.split("  op_pluseq(…)  ")[1].split("  ←")[0] for r in out.splitlines() if "  op_pluseq(…)  " in r],
       ["skep27y_strops.cc:8 (tail call)"] * 3, "op_pluseq's rows (sites, peak, leaks)")


def test_diff_rows_keep_file_line_whole_at_every_width():
    """Fixed in h27g (claim 12: rows keep `file:line` whole and shorten the
    function name with `…`, also in --diff; was `g  skep27y_merg…` at
    --width 60, and no `(tail call)` mark). skep27y_merge run without and
    with its argument: g gains 3 blocks, 60 B; its row reads
    `g  skep27y_merge.c:6` at every width (the diff's number columns take
    44, so at 40 the row is wider than asked rather than cut). heap_tail's
    grab and chain tail-call their allocator: marked `(tail call)` as in
    the site tables, the long name cut, never the location."""
    exe = build_c("skep27y_merge", ["skep27y_merge.c"])
    _, old = record([exe], args=["--alloc", "-q"])
    _, new = record([exe, "x"], args=["--alloc", "-q"])
    got = {}
    for w in (40, 60, 80, 100):
        out = run([SFTRACE, "memory", "--diff", "--width", str(w), old, new]).stdout
        rows = [r for r in out.splitlines() if re.match(r"^\s+[+-]\d+\s", r)]
        eq(len(rows), 1, f"one changed site at --width {w}: {out}")
        eq(rows[0].split()[:4], ["+3", "+60", "B", "0"], "g's change")
        got[w] = rows[0].split("  ")[-1]
    eq(got, {w: "skep27y_merge.c:6" for w in (40, 60, 80, 100)}, "the diff's file:line per width")
    exe = build_c("heap_tail", ["heap_tail.c"], flags=["-fno-builtin"])
    _, t_old = record([exe], args=["--alloc", "-q"])
    _, t_new = record([exe, "more"], args=["--alloc", "-q"])
    out = run([SFTRACE, "memory", "--diff", "--width", "100", t_old, t_new]).stdout
    eq([r[43:] for r in out.splitlines() if "heap_tail.c:19" in r], ["grab  heap_tail.c:19 (tail call)"],
       "grab's diff row at --width 100")
    # k27d: at 60 the location whole leaves the name under 10 columns (was
    # "g…"): the location alone on the row's line, the name and the mark
    # (never cut) on the next (man --width: "also in the --diff table")
    out = run([SFTRACE, "memory", "--diff", "--width", "60", t_old, t_new]).stdout.splitlines()
    at = [i for i, r in enumerate(out) if "heap_tail.c:19" in r]
    eq([(out[i][43:], out[i + 1].strip()) for i in at], [("heap_tail.c:19", "grab (tail call)")],
       "grab's diff row at --width 60")


if __name__ == "__main__":
    sfkit.main(globals())
