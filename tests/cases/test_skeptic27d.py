"""Skeptic 27d's cases for issue 27 (`sftrace memory`, `record --alloc`):
programs written from the issue and the docs (README, man pages, DESIGN,
OUTPUTS), not from the developers' tests (fixtures tests/fixtures/skep27d_*).
Cases that found a break skip as known breaks until it is fixed; the rest
are plain tests of claims that held.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic27d.py."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sfkit  # noqa: E402
from sfkit import FIXBUILD, SFTRACE, check, eq, run, tmpdir  # noqa: E402


def rec(binary, args=()):
    d = tmpdir()
    sfkit.record([binary] + list(args), out=os.path.join(d, "sf.log"), args=["--alloc"])
    return d


def memory(d, *extra):
    return run([SFTRACE, "memory"] + list(extra) + [d]).stdout


def tsv_rows(d, section="site", extra=()):
    """(bytes, count, function, location basename, tail) of each tsv row."""
    rows = []
    for ln in memory(d, "--format", "tsv", *extra).splitlines():
        f = ln.split("\t")
        if f[0] == section:
            loc = f[5]
            if loc.startswith("in /"):
                loc = "in " + os.path.basename(loc)
            elif ":" in loc:
                loc = os.path.basename(loc)
            rows.append((int(f[2]), int(f[3]), f[4], loc, f[6]))
    return rows


def summary(d):
    out = {}
    for ln in memory(d, "--format", "tsv").splitlines():
        f = ln.split("\t")
        if len(f) == 2:
            out[f[0]] = f[1]
    return out


def test_skep27d_tail_called_allocators():
    """-O2 tail calls of malloc, calloc, realloc, aligned_alloc and
    posix_memalign and a tail call through a function pointer: each credited
    to the function that tail-called, at its line; an inlined helper names
    its own row (DWARF's inline scope), as in test_skeptic27c2."""
    b = sfkit.build_c("skep27d_basic", ["skep27d_basic.c"])
    d = rec(b)
    rows = {r[2]: r for r in tsv_rows(d)}
    eq(rows["grab"], (1045, 10, "grab", "skep27d_basic.c:7", "1"), "grab")
    eq(rows["zeroed"], (77, 1, "zeroed", "skep27d_basic.c:8", "1"), "zeroed")
    eq(rows["chain"], (10000, 4, "chain", "skep27d_basic.c:9", "1"), "chain")
    eq(rows["al"], (256, 1, "al", "skep27d_basic.c:10", "1"), "al")
    eq(rows["pm"], (300, 1, "pm", "skep27d_basic.c:11", "1"), "pm")
    eq(rows["viafp"], (250, 5, "viafp", "skep27d_basic.c:14", "1"), "viafp")
    # the inlined helper names its row (its caller useinl follows in the stack)
    eq(rows["inl"], (33, 1, "inl", "skep27d_basic.c:15", "0"), "inl inlined into useinl")
    s = summary(d)
    eq((s["allocations"], s["frees"], s["reallocs"], s["leaked_blocks"], s["unmatched_frees"]),
       ("20", "20", "3", "0", "0"), "summary")


def test_skep27d_xthread_realloc_matches():
    """README/man: "frees on another thread, realloc chains and reused
    pointers match exactly". A consumer thread reallocs each block a
    producer thread malloc'd, then frees it: 100,000 blocks, every free
    matches."""
    b = sfkit.build_c("skep27d_xrealloc", ["skep27d_xrealloc.c"], libs=["-lpthread"])
    d = rec(b)
    s = summary(d)
    eq((s["allocations"], s["frees"], s["reallocs"], s["leaked_blocks"]), ("100002", "100000", "100000", "2"),
       "counts")
    eq(s["unmatched_frees"], "0", "frees of blocks allocated before recording began")




def row_widths(out):
    return [(len(ln), ln) for ln in out.splitlines()]


def test_skep27d_merged_row_fits_width():
    """man: "table rows fit N columns"; a row whose callers do not fit ends
    in "<- ...", its file:line whole."""
    b = sfkit.build_c("skep27d_wide", ["skep27d_wide.c"])
    d = rec(b)
    for w in (80, 90, 97, 100):
        out = memory(d, "-n", "0", "--width", str(w))
        over = [(n, ln) for n, ln in row_widths(out) if n > w and "allocate_a" in ln]
        eq(over, [], f"rows wider than {w}")
        cut = [ln for ln in out.splitlines() if re.search(r"skep27d_wide\.c:\d+…", ln)]
        eq(cut, [], f"location run into an ellipsis at {w}")


def test_skep27d_rows_fit_100_and_80():
    """Plain rows (one caller) fit 100 and 80 columns, and the output of a
    pipe is 100 columns wide."""
    b = sfkit.build_c("skep27d_basic", ["skep27d_basic.c"])
    d = rec(b)
    for w in (80, 100):
        out = memory(d, "-n", "0", "--width", str(w))
        eq([ln for n, ln in row_widths(out) if n > w], [], f"rows wider than {w}")
    check("grab  skep27d_basic.c:7 (tail call)  ← main" in memory(d), memory(d))


def test_skep27d_stripped_own_call_site():
    """man: without DWARF, a function's own calls of the allocator read
    'in OBJECT'. Stripped, the object is the same executable."""
    nodw = sfkit.build_c("skep27d_nodw", ["skep27d_basic.c"], flags=["-g0"])
    stripped = os.path.join(tmpdir(), "skep27d_strip")
    run(["strip", "-o", stripped, nodw])
    rows_nodw = {r[2]: r for r in tsv_rows(rec(nodw))}
    eq(rows_nodw["useinl"][3], "in skep27d_nodw", "-g0 location")
    rows = tsv_rows(rec(stripped))
    us = [r for r in rows if r[1] == 1 and r[0] == 33]
    eq(len(us), 1, f"one 33 B row: {rows}")
    eq(us[0][3], "in skep27d_strip", "stripped location of useinl's malloc")


def test_skep27d_tsv_tab_in_name():
    b = sfkit.build_c("skep27d_names", ["skep27d_names.c"])
    d = rec(b)
    rows = tsv_rows(d)
    names = sorted(r[2] for r in rows if r[0] in (11, 22))
    eq(names, ["ctl\\x1b[31mRED", "tab by"], "function names")


def test_skep27d_json_and_table_escape():
    """Escape sequences never reach the terminal; JSON keeps the names as
    \\u escapes."""
    b = sfkit.build_c("skep27d_names", ["skep27d_names.c"])
    d = rec(b)
    out = memory(d)
    check("\x1b" not in out and "\t" not in out, repr(out))
    check("ctl\\x1b[31mRED  skep27d_names.c:8" in out, out)
    js = json.loads(memory(d, "--format", "json"))
    names = sorted(r["function"] for r in js["sites_by_bytes"] if r["bytes"] in (11, 22))
    eq(names, ["ctl\x1b[31mRED", "tab\tby"], "json names")


def test_skep27d_same_call_site_claims():
    """README: a tail call claims what its callee allocates, "nor the blocks
    of the caller's own later call of make_pair"."""
    sfkit.build_c("libskep27d_x.so", ["skep27d_samesite_lib.c"], shared=True, xray=False)
    b = sfkit.build_c("skep27d_samesite", ["skep27d_samesite.c"],
                      libs=["-L" + FIXBUILD, "-lskep27d_x", "-Wl,-rpath," + FIXBUILD])
    d = rec(b)
    rows = [r for r in tsv_rows(d) if r[0] != 4096]
    f = [r for r in rows if r[2] == "F"]
    m = [r for r in rows if r[2] == "main"]
    eq([(r[0], r[1], r[4]) for r in f], [(48, 3, "1")], "F's tail-called blocks")
    eq([(r[0], r[1]) for r in m], [(48, 3)], "main's own calls of X")


def test_skep27d_diff_known_changes():
    """--diff of two runs: 10 -> 30 tail-called grabs of 100 B (half freed),
    4 -> 10 mallocs of 1000 B in mk (every other one freed)."""
    b = sfkit.build_c("skep27d_diff", ["skep27d_diff.c"])
    old, new = rec(b, ["10", "4"]), rec(b, ["30", "10"])
    rows = [ln.split("\t") for ln in run([SFTRACE, "memory", "--diff", "--format", "tsv", old, new]).stdout.splitlines()
            if ln.startswith("diff\t")]
    eq([r[1:11] for r in rows],
       [["6", "6000", "3000", "3000", "3", "4", "10", "4000", "10000", "mk"],
        ["20", "2000", "2000", "1000", "10", "10", "30", "1000", "3000", "grab"]], "diff rows")
    same = run([SFTRACE, "memory", "--diff", old, old]).stdout
    check("(none)" in same, same)


def test_skep27d_group_by():
    """work() allocates on lines 5, 6, 7; a() calls it twice (the second a
    tail call), b() once (a tail call), main calls a, b, a."""
    b = sfkit.build_c("skep27d_group", ["skep27d_group.c"])
    d = rec(b)
    eq([r[:4] for r in tsv_rows(d, extra=("--group-by", "function"))], [(960, 15, "work", "skep27d_group.c:8")],
       "by function")
    eq([r[:4] for r in tsv_rows(d, extra=("--group-by", "line"))],
       [(480, 5, "work", "skep27d_group.c:8"), (320, 5, "work", "skep27d_group.c:7"),
        (160, 5, "work", "skep27d_group.c:6")], "by line")
    eq(len(tsv_rows(d, extra=("--group-by", "stack"))), 6, "by stack")


def test_skep27d_entry_points_and_zero_sizes():
    """Every interposed entry point once, realloc(NULL, 0), malloc(0),
    realloc(p, 0) and free(NULL)."""
    b = sfkit.build_c("skep27d_entry", ["skep27d_entry.c"])
    d = rec(b)
    s = summary(d)
    eq((s["allocations"], s["frees"], s["reallocs"], s["bytes_allocated"], s["leaked_blocks"],
        s["unmatched_frees"], s["temporary"]), ("10", "10", "2", "3306", "0", "0", "2"), "summary")
    got = sorted((int(r[3].split(":")[1]), r[0], r[1]) for r in tsv_rows(d))
    eq(got, [(7, 100, 1), (8, 200, 1), (9, 300, 1), (10, 200, 1), (11, 400, 1), (12, 500, 1), (13, 256, 1),
             (14, 600, 1), (15, 700, 1), (16, 0, 1), (17, 0, 1), (18, 50, 1)], "rows (line, bytes, blocks)")


def fork_run():
    b = sfkit.build_c("skep27d_fork", ["skep27d_fork.c"])
    return rec(b)


def test_skep27d_fork_exec_heap_counter_in_slice():
    """One time base: each process's heap counter in Perfetto steps up
    inside the slice of the function that allocated (parent, forked child,
    fork+exec'd child started 60 and 120 ms later), and memory's
    peak_time_ns is on the same base."""
    d = fork_run()
    pb = os.path.join(d, "sf.pb.gz")
    run([SFTRACE, "convert", d, "-o", pb])
    slices = {r[0]: (int(r[1]), int(r[2]), r[3]) for r in sfkit.tp_rows(
        pb, "select s.name, s.ts, s.dur, thread.tid from slice s join thread_track tt on s.track_id = tt.id "
            "join thread using(utid) where s.name like 'alloc_in_%'")}
    eq(sorted(slices), ["alloc_in_child", "alloc_in_fork", "alloc_in_parent"], "slices")
    steps = sfkit.tp_rows(pb, "select t.name, p.pid, c.ts, c.value from counter c join process_counter_track t "
                              "on c.track_id = t.id join process p using(upid) where t.name = 'heap size' order by c.ts")
    want = {"alloc_in_parent": 3 << 20, "alloc_in_fork": 5 << 20, "alloc_in_child": 1 << 20}
    step_at = {}
    for name, (ts, dur, tid) in slices.items():
        up = [int(r[2]) for r in steps if r[1] == tid and int(float(r[3])) == want[name]]
        check(up, f"{name}: no heap step to {want[name]} in pid {tid}: {steps}")
        check(ts <= up[0] <= ts + dur, f"{name}: heap step at {up[0]}, slice {ts}..{ts + dur}")
        step_at[tid] = up[0]
    js = json.loads(memory(d, "--format", "json"))
    peak = {str(p["pid"]): p["summary"]["peak_time_ns"] for p in js["processes"]}
    eq(sorted(peak), sorted(step_at), "processes")
    offsets = sorted(step_at[pid] - peak[pid] for pid in peak)
    check(offsets[-1] - offsets[0] <= 1000, f"Perfetto time - peak_time_ns per process: {offsets}")


def test_skep27d_summary_lines_fit_width():
    """man --width: table rows fit N columns; "the summary lines above the
    tables break after a comma or semicolon to fit"."""
    d = fork_run()
    out = memory(d, "--width", "60")
    eq([ln for ln in out.splitlines() if len(ln) > 60], [], "lines wider than 60")


def rust_rows():
    b = sfkit.rust_fixture("skep27d_rust")
    return tsv_rows(rec(b))


def test_skep27d_rust_sites_name_user_functions():
    """Issue 27: a Rust program's top sites name the user's function at the
    line of its growth (Vec::push, String::push_str, HashMap::insert,
    BTreeMap::insert, VecDeque::push_front), Box::new and format! reached by
    tail calls: never finish_grow, alloc:: or __rust_alloc."""
    rows = rust_rows()
    top = [(r[0], r[1], r[2], r[3], r[4]) for r in rows[:7]]
    m = "skep27d_rust::"
    eq(top, [(262112, 13, m + "grow_vec", "skep27d_rust.rs:8", "0"),
             (69724, 10, m + "fill_map", "skep27d_rust.rs:20", "0"),
             (34368, 167, m + "fill_btree", "skep27d_rust.rs:26", "0"),
             (16376, 11, m + "grow_string", "skep27d_rust.rs:14", "0"),
             (8176, 9, m + "deque", "skep27d_rust.rs:36", "0"),
             (5400, 51, m + "boxed", "skep27d_rust.rs:31", "1"),
             (3400, 101, m + "fmt_strings", "skep27d_rust.rs:41", "1")], "top sites")
    check(not [r for r in rows if re.search(r"alloc::|__rust|finish_grow|hashbrown", r[2])], rows)


def test_skep27d_rust_no_traced_frame_named():
    """man: a site with no traced frame at all is named from the object it
    lies in: the function there by its own symbols and the call's
    file:line from its DWARF."""
    rows = rust_rows()
    un = [r for r in rows if r[3].startswith("thread_info.rs:")]
    eq(len(un), 1, f"one thread_info.rs row: {rows}")
    check(un[0][2] != "[no traced frame]", f"function of {un[0]}")


def test_skep27d_tail_mark_kept_narrow():
    """man: rows reached by a tail call are marked (tail call); a row too
    narrow puts the location alone on its line and the name on the next."""
    b = sfkit.build_c("skep27d_basic", ["skep27d_basic.c"])
    out = memory(rec(b), "-n", "0", "--width", "50")
    cut = [ln.strip() for ln in out.splitlines() if re.search(r"\(t[a-z ]*…$", ln)]
    eq(cut, [], "rows whose (tail call) mark is cut")


def test_skep27d_diff_narrow_name_two_lines():
    """man --width: "when the location leaves the name under 10 columns, the
    location stands alone on the row's line and the name follows on the
    next; also in the --diff table"."""
    old = rec(sfkit.build_c("skep27d_basic", ["skep27d_basic.c"]))
    new = rec(sfkit.build_c("skep27d_wide", ["skep27d_wide.c"]))
    out = run([SFTRACE, "memory", "--diff", "--width", "80", old, new]).stdout
    short = [ln.strip() for ln in out.splitlines() if re.search(r"  [^ ]{1,9}…  skep27d_", ln)]
    eq(short, [], "diff rows with names cut under 10 columns")


def test_skep27d_location_whole_at_40():
    """man --width: a name that does not fit is cut, "and its file:line
    whole"; README: "never the file:line"."""
    b = sfkit.build_c("skep27d_basic", ["skep27d_basic.c"])
    d = rec(b)
    for w in (40, 44):
        out = memory(d, "-n", "0", "--width", str(w))
        sect = out.split("Top allocation sites by bytes:")[1].split("\n\n")[0]
        rows = [ln for ln in sect.splitlines()[2:] if re.match(r"\s+[\d.]+ (B|KiB)\s", ln)]
        eq(len(rows), 7, f"rows at {w}")
        eq([ln.strip() for ln in rows if not re.search(r"skep27d_basic\.c:\d+", ln)], [], f"rows without a line at {w}")


def test_skep27d_rust_iterator_sites_name_user_function():
    """README: "So a Rust program's top sites name its own functions";
    issue 27: each row names the allocating function and its call site."""
    b = sfkit.rust_fixture("skep27d_rust_iter")
    d = rec(b)
    rows = tsv_rows(d)
    # by stack, the closure's 300 to_uppercase Strings are their own row
    # (k27d: by line they merge with upper's Vec growth on line 11)
    top = max(tsv_rows(d, extra=("--group-by", "stack")), key=lambda r: r[1])
    eq((top[1], top[2], top[3]), (300, "skep27d_rust_iter::upper", "skep27d_rust_iter.rs:11"),
       f"top site by count: {top}")
    up = [r for r in rows if r[2] == "skep27d_rust_iter::upper"]
    eq(sorted({r[3] for r in up}), ["skep27d_rust_iter.rs:11"], "upper's location")


def test_skep27d_rust_push_format_line():
    """README: folded plumbing is "at the line of its call into them ... or
    its own line when those calls lie on several lines": here every
    allocating call is on one line."""
    b = sfkit.rust_fixture("skep27d_rust_fmt")
    rows = [r for r in tsv_rows(rec(b)) if r[2] == "skep27d_rust_fmt::work"]
    eq([(r[0], r[1], r[3]) for r in rows], [(28480, 508, "skep27d_rust_fmt.rs:7")], "work's rows")


if __name__ == "__main__":
    sfkit.main(globals())
