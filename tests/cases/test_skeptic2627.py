"""Skeptic's cases for issue 27 (heap analysis: sites by function and line,
tail calls, allocator plumbing folded) and issue 26 item 1 (a flight
recorder whose snapshot holds its trigger): programs written to break the
claims, not taken from the developers' tests (fixtures
tests/fixtures/skep2627_*). Each case reproduces a break on the main it was
written against (2d83acc) and skips as a known break until it is fixed.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic2627.py."""
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import (SFTRACE, Skip, build_c, check, eq, parquet_query, record, run,  # noqa: E402
                   rust_fixture, tmpdir)


def site_rows(log, extra=()):
    """(bytes, count, function, location basename, tail) of every `site` row
    of `memory --format tsv -n 0`, in the order printed."""
    out = run([SFTRACE, "memory", "--format", "tsv", "-n", "0"] + list(extra) + [log]).stdout
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "site":
            rows.append((int(f[2]), int(f[3]), f[4], os.path.basename(f[5]), f[6], f[8]))
    return rows


def own_rows(rows, src):
    """(bytes, count, function, location, tail) of the rows at a line of src."""
    return sorted(r[:5] for r in rows if r[3].startswith(src + ":"))


def tailmiss_log(leak):
    exe = build_c("skep2627_tailmiss", ["skep2627_tailmiss.c"])
    _, log = record([exe] + (["leak"] if leak else []), args=["--alloc", "-q"])
    return log


def test_tail_call_to_a_non_allocator_does_not_take_the_callers_malloc():
    """FAILS NOW. who() tail-calls getpid; after_who() then mallocs 4242 B
    itself. The 4242 B are credited to who at who's line, "(tail call)",
    with stack main;after_who;who, although who allocates nothing (heaptrack_print:
    after_who at skep2627_tailmiss.c:16). The tail-call rule takes the next
    allocation after a tail call without checking that the allocator was
    reached through it (its return address is not the one after the call
    to who)."""
    log = tailmiss_log(leak=False)
    eq(own_rows(site_rows(log), "skep2627_tailmiss.c"),
       [(4096, 1, "main", "skep2627_tailmiss.c:25", "0"), (4242, 1, "after_who", "skep2627_tailmiss.c:16", "0")],
       "sites in the program (puts' buffer at main's puts line)")


def test_tail_call_to_a_non_allocator_flame_graph_and_parquet():
    """FAILS NOW. The same misattribution in the leak flame graph (a frame
    `who` under after_who holds the 4242 leaked bytes) and in OUT.alloc
    (frame_id is who's frame)."""
    log = tailmiss_log(leak=True)
    d = tmpdir()
    svg = os.path.join(d, "leak.svg")
    run([SFTRACE, "memory", "--flamegraph", svg, log])
    with open(svg) as f:
        text = f.read()
    check(re.search(r"(?<![\w])after_who \[", text), "after_who in the flame graph")
    check(not re.search(r"(?<![\w])who \[", text), "no frame `who` in the leak flame graph: it allocates nothing")
    out = os.path.join(d, "out.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    got = parquet_query("alloc_query.mjs", out)
    eq(got["byName"].get("after_who"), [1, 4242], "OUT.alloc rows joined to after_who's frame")
    eq(got["byName"].get("who"), None, "OUT.alloc rows joined to who's frame")


def test_signal_handler_between_tail_call_and_allocation():
    """FAILS NOW. via_tail tail-calls an untraced function that takes
    SIGUSR1 (traced handler on_usr1 allocates 333 B) and then allocates
    5555 B. The handler's balanced entry and exit end via_tail's tail call:
    the 5555 B go to main (at the untraced file's line), not to via_tail by
    a tail call."""
    obj = build_c("skep2627_sigtail_u.o", ["skep2627_sigtail_u.c"], flags=["-c"], xray=False)
    exe = build_c("skep2627_sigtail", ["skep2627_sigtail.c", obj])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    rows = site_rows(log)
    got = sorted((b, c, fn, tail) for b, c, fn, loc, tail, _ in rows if b in (333, 5555))
    eq(got, [(333, 1, "on_usr1", "0"), (5555, 1, "via_tail", "1")], "the two allocations")


def test_cxx_operator_new_sites_have_their_lines():
    """FAILS NOW. make_pair_of() does `new Big` (4000 B) at line 12 and
    `new Small` (24 B) at line 13, five times each. heaptrack_print gives
    two rows, make_pair_of at :12 and :13. sftrace memory gives one row,
    20,120 B in 10 blocks at libstdc++'s address inside operator new
    (0x7f...958c): the call site is malloc's return address, and operator
    new is not folded into the user's line."""
    exe = build_c("skep2627_new", ["skep2627_new.cc"], compiler="clang++")
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    eq(own_rows(site_rows(log), "skep2627_new.cc"),
       [(120, 5, "make_pair_of(…)", "skep2627_new.cc:13", "0"),
        (4096, 1, "main", "skep2627_new.cc:23", "0"),  # puts' stdout buffer
        (20000, 5, "make_pair_of(…)", "skep2627_new.cc:12", "0")], "sites at the program's lines")


def test_rust_hashmap_site_names_the_users_function():
    """FAILS NOW. fill_hash() inserts 1000 keys into a std HashMap; insert
    is not inlined in this program. The row reads
    `hashbrown::map::HashMap<…>::insert  map.rs:1841` (69,724 B, 10 blocks):
    only hashbrown::raw:: is folded, so std's HashMap plumbing hides the
    user's function, which the claim says a Rust program's top sites name."""
    exe = rust_fixture("skep2627_rustsites")
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "14805\n", "the program's output")
    rows = site_rows(log)
    users = [(fn, full) for b, c, fn, loc, tail, full in rows if "skep2627_rustsites::" in full]
    eq(sorted({fn for fn, _ in users} - {"skep2627_rustsites::main"}),
       ["skep2627_rustsites::boxes", "skep2627_rustsites::deque", "skep2627_rustsites::fill_btree",
        "skep2627_rustsites::fill_hash", "skep2627_rustsites::fmt_strings", "skep2627_rustsites::grow_vec",
        "skep2627_rustsites::make_strings"], "allocating functions of rows under the crate's code")
    hash_rows = [(b, c) for b, c, fn, loc, tail, full in rows if fn == "skep2627_rustsites::fill_hash"]
    eq(hash_rows, [(69724, 10)], "fill_hash's row")


def test_reallocarray_counted_once():
    """FAILS NOW. grow_array() calls reallocarray(NULL, 10, 30) then
    reallocarray(r, 20, 30). heaptrack_print: one call at line 12, one at
    line 14. sftrace memory: 3 allocations, 2 reallocs, 1,800 B for the
    program's 900 B: the interposer records reallocarray and then the realloc
    glibc's reallocarray makes through the PLT (a second row, 900 B in 2
    blocks at libc's address)."""
    exe = build_c("skep2627_reallocarray", ["skep2627_reallocarray.c"])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    out = run([SFTRACE, "memory", "--format", "tsv", "-n", "0", log]).stdout
    summary = dict(line.split("\t") for line in out.splitlines() if line.count("\t") == 1)
    eq(summary["reallocs"], "1", "reallocs")
    rows = [r[:5] for r in site_rows(log) if r[2] == "grow_array"]
    eq(sorted(rows), [(300, 1, "grow_array", "skep2627_reallocarray.c:12", "0"),
                      (600, 1, "grow_array", "skep2627_reallocarray.c:14", "0")], "grow_array's sites")


def test_every_allocation_of_a_tail_callee_goes_to_the_tail_caller():
    """FAILS NOW. via() tail-calls make_pair, built without sleds, which
    allocates 16, 111 and 222 B. Only the first (16 B) is credited to via
    "(tail call)"; the 111 and 222 B go to main, at make_pair's lines
    (`main  skep2627_tailmany_u.c:6`: a row naming main at a line of
    another file's function). No traced event came between: via's tail
    call is still the frame that reached them."""
    obj = build_c("skep2627_tailmany_u.o", ["skep2627_tailmany_u.c"], flags=["-c"], xray=False)
    exe = build_c("skep2627_tailmany", ["skep2627_tailmany.c", obj])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    got = sorted((b, c, fn, tail) for b, c, fn, loc, tail, _ in site_rows(log, ["--group-by", "function"])
                 if fn in ("via", "dup", "main") and loc != "in a library" and not re.match(r"0x[0-9a-f]+$|in /", loc))
    # main's own: puts' stdout buffer, at the puts line (the return-address tag)
    eq(got, [(6, 1, "dup", "1"), (349, 3, "via", "1"), (4096, 1, "main", "0")],
       "via's and dup's allocations, none to main but puts' buffer")


def test_tail_call_row_at_the_tail_calls_line():
    """Failed before: a tail-call row was placed at the function's
    declaration line (h27fix_tailline.c:11, `make_buf(size_t n)`), not at
    the line of the tail call (`return malloc(n + 1);`, line 15)."""
    exe = build_c("h27fix_tailline", ["h27fix_tailline.c"])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    eq(own_rows(site_rows(log), "h27fix_tailline.c"),
       [(153, 3, "make_buf", "h27fix_tailline.c:15", "1"), (4096, 1, "main", "h27fix_tailline.c:24", "0")],
       "make_buf's row, and puts' buffer at main's puts line")


def test_cxx_container_plumbing_folded_into_the_users_function():
    """Failed before: std::map's node allocations were a row of
    `std::_Rb_tree<…>::_M_emplace_hint_unique<…>(…)` and std::unordered_map's
    bucket arrays one of `std::_Hashtable<…>::_M_rehash_aux(…)`: templates
    instantiated in the program, so traced, and not folded (their demangled
    names start with the return type). Per function: fill_map 100 nodes of
    40 B; fill_hash 100 nodes of 16 B and 4 bucket arrays (1,824 B)."""
    exe = build_c("h27fix_containers", ["h27fix_containers.cc"], compiler="clang++")
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "200\n", "the program's output")
    got = sorted((b, c, fn) for b, c, fn, loc, tail, full in site_rows(log, ["--group-by", "function"])
                 if fn != "main")
    # and libstdc++'s emergency pool, allocated in its constructor before
    # any traced frame (test_startup.py)
    eq(got, [(3424, 104, "fill_hash(…)"), (4000, 100, "fill_map(…)"), (72704, 1, "[no traced frame]")],
       "rows by function")


def test_memory_help_lists_no_option_it_refuses():
    """Failed before: `memory --help` listed the trace-cutting options
    (-c, --tid, --time, --min-duration, --max-depth) that memory refuses
    with a usage error. The help names them only as refused."""
    out = run([SFTRACE, "memory", "--help"]).stdout
    listed = sorted(o for o in ["--filter FILE", "--tid LIST", "--time START..END", "--min-duration DUR",
                                "--max-depth N"] if o in out)
    eq(listed, [], "cut options listed with their arguments")
    check("are refused" in out, "the help says memory refuses them")
    exe = build_c("skep2627_reallocarray", ["skep2627_reallocarray.c"])
    _, log = record([exe], args=["--alloc", "-q"])
    p = run([SFTRACE, "memory", "--tid", "1", log], check_rc=None)
    eq(p.returncode, 2, "memory --tid: a usage error")


def _ring_end_run(exe, mode):
    d = tmpdir()
    p = run([SFTRACE, "record", "--ring", "1M", "--trigger", "slow>10ms", "-o", os.path.join(d, "sf.log"),
             "--", exe, mode], check_rc=None)
    eq(p.returncode, 134 if mode == "abort" else 0, f"{mode}: record's exit status")
    files = sorted(os.listdir(d))
    return p.stderr, files, d


def test_ring_snapshot_survives_exec_and_exit_right_after_the_trigger():
    """FAILS NOW. slow() lasts 20 ms, its exit fires the 'slow>10ms'
    trigger, and the program then execs /bin/true (or calls _exit(0), or
    aborts) at once. Seen: no snapshot at all, or a stray `sf.snap.PID.1.log.tmp` with
    no threads, and record says nothing (no snapshot line, no "not taken"):
    exec, 5 of 5 runs; _exit, 5 of 5; a crash (abort) likewise. A return
    from main, or exit() with another thread running, works (the control
    case)."""
    exe = build_c("skep2627_ringend", ["skep2627_ringend.c"])
    for mode in ["return", "exec", "_exit", "abort", "exec", "_exit", "abort", "exit_group"]:
        err, files, d = _ring_end_run(exe, mode)
        eq([f for f in files if f.endswith(".tmp")], [], f"{mode}: stray temporary files")
        snaps = [f for f in files if ".snap." in f]
        if "1 snapshot request: 0 written, 1 not written (" in err:
            eq(snaps, [], f"{mode}: a request reported as not taken leaves no file")
            continue
        eq(len(snaps), 1, f"{mode}: one snapshot ({files}; record said {err!r})")
        snap = os.path.join(d, snaps[0])
        check(f"sftrace: snapshot {snap} (on a slow trigger call" in err, f"{mode}: record names it: {err!r}")
        dump = run([SFTRACE, "dump", snap]).stdout
        eq(len(re.findall(r"^\s*\d+\s+\d+\s+EXIT\s+slow$", dump, re.M)), 1, f"{mode}: slow's exit in the snapshot")


if __name__ == "__main__":
    sfkit.main(globals())
