"""Second skeptic's cases for issue 27 (heap analysis after the first
skeptic's breaks were fixed, main 6f046d1): programs written to break the
tail-call rule, the interposed operator new and the libc allocator family
(fixtures tests/fixtures/skep27b_*). Each case reproduces a break on that
main and skips as a known break until it is fixed.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic27b.py."""
import os
import sys

def test_folded_tail_caller_rows_at_the_callers_lines():
    """Failed before the fix. my_alloc() tail-calls malloc (`jmp malloc`);
    make_pair calls it on line 11 (16 B) and line 12 (n B), twice. With
    `--fold '^my_alloc$'` (as Lua's luaL_alloc for a comparison with
    heaptrack_print, whose unwinder never sees my_alloc's frame) the rows
    were one, at make_pair's definition (line 9); they are now at the
    allocator's return address in make_pair, lines 11 and 12, as
    heaptrack_print gives them."""
    exe = build_c("mem27_foldtail", ["mem27_foldtail.c"], flags=["-fno-builtin"])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 1\n", "the program's output")
    _, sites = summary_and_sites(log, ["--fold", "^my_alloc$"])
    eq([r for r in sites if r[2] == "make_pair"],
       [(32, 2, "make_pair", "mem27_foldtail.c:11", "0"), (300, 2, "make_pair", "mem27_foldtail.c:12", "0")],
       "make_pair's rows")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import FIXBUILD, SFTRACE, Skip, build_c, eq, record, run  # noqa: E402


def by_function(log):
    """{function: (bytes, count, tail)} of the `site` rows of
    `memory --format tsv -n 0 --group-by function`."""
    out = run([SFTRACE, "memory", "--format", "tsv", "-n", "0", "--group-by", "function", log]).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "site":
            rows[f[4]] = (int(f[2]), int(f[3]), f[6])
    return rows


def chain_log():
    exe = build_c("skep27b_chain", ["skep27b_chain.c"])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 12 skeptic 7-abcdefghij\n", "the program's output")
    return log


def test_tail_call_chain_credits_the_last_tail_caller():
    """FAILS NOW. mid() tail-calls leaf() (traced), which tail-calls malloc
    (`jmp leaf`, then `jmp malloc@plt`). The trace holds leaf's tail-call
    event just before each of the 4 allocations of 201 B, with no event in
    between (issue 27 "What to build" 2: attributed to leaf). sftrace
    memory credits all 804 B to main, not as a tail call: the claim is
    leaf's, the allocator returns into main after `call mid`, and the rule
    "the call before the site calls F" compares with leaf, not with the
    first function of the chain, so the event is main's."""
    rows = by_function(chain_log())
    eq(rows.get("leaf"), (804, 4, "1"), "leaf's allocations (by a tail call)")
    eq(rows.get("main", (0, 0, "0"))[:2], (4209, 3), "main's own (asprintf, stdout's buffer)")


def test_plt_tail_call_to_libc_does_not_keep_claiming_libc_allocations():
    """FAILS NOW. dupit() tail-calls strdup (`jmp strdup@plt`): 8 B. main
    then calls asprintf (allocations inside libc, 100 B then 13 B) and
    printf (stdout's 4,096 B buffer). sftrace memory credits all four,
    4,217 B, to dupit "(tail call)", and the leak of stdout's buffer too:
    the claim keeps every later allocation whose call site is in libc (an
    object the log did not record) until main ends. heaptrack_print credits
    strdup's 8 B to main:19 via __GI___strdup and asprintf's to main:21."""
    rows = by_function(chain_log())
    eq(rows.get("dupit"), (8, 1, "1"), "dupit's allocation (strdup, by a tail call)")


def test_diff_of_two_identical_runs_shows_no_changed_site():
    """FAILS NOW. main calls fopen, whose 472 B FILE is allocated inside
    libc. `memory` places the row at the runtime address of libc's malloc
    call (`main  0x7fcb57fb41fb`), which address-space randomization moves
    on every run, so `memory --diff RUN1 RUN2` of two identical runs lists
    the site twice, +1 / +472 B and -1 / -472 B (issue 27 "What to build"
    5: sites matched by function and line). heaptrack_print names the site
    __fopen_internal at iofopen.c:65, from main at skep27b_libsite.c:7."""
    exe = build_c("skep27b_libsite", ["skep27b_libsite.c"])
    logs = []
    for _ in range(2):
        p, log = record([exe], args=["--alloc", "-q"])
        eq(p.stdout, "ok\n", "the program's output")
        logs.append(log)
    out = run([SFTRACE, "memory", "--diff", "--format", "tsv", logs[0], logs[1]]).stdout
    eq([line for line in out.splitlines() if line.startswith("diff\t")], [], "changed sites")


def test_temporaries_through_realloc_match_heaptrack():
    """Failed before the fix. round_trip() mallocs n bytes (line 10), reallocs the
    block to 4n (line 12) and frees it, five times, with no other
    allocation in between. heaptrack_print: 10 temporary allocations, 5 at
    line 10 (the block realloc replaced at once) and 5 at line 12. sftrace
    memory: `temporary 5`, only line 12's; the malloc a realloc replaces
    before anything else was allocated is never a temporary (Lua's
    luaL_Buffer box, lauxlib.c resizebox: heaptrack 22 temporaries on
    testes/strings.lua, sftrace 14)."""
    exe = build_c("skep27b_temp", ["skep27b_temp.c"], flags=["-fno-builtin"])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    out = run([SFTRACE, "memory", "--format", "tsv", "-n", "0", log]).stdout
    summary = dict(line.split("\t") for line in out.splitlines() if line.count("\t") == 1)
    eq(summary["temporary"], "10", "temporary allocations")
    temp = sorted((int(f[3]), f[4], os.path.basename(f[5])) for f in (line.split("\t") for line in out.splitlines())
                  if f[0] == "temporary" and len(f) > 5)
    eq(temp, [(5, "round_trip", "skep27b_temp.c:10"), (5, "round_trip", "skep27b_temp.c:12")], "temporary rows")


def summary_and_sites(log, extra=()):
    out = run([SFTRACE, "memory", "--format", "tsv", "-n", "0"] + list(extra) + [log]).stdout
    lines = [line.split("\t") for line in out.splitlines()]
    summary = {f[0]: f[1] for f in lines if len(f) == 2}
    sites = sorted((int(f[2]), int(f[3]), f[4], os.path.basename(f[5]), f[6]) for f in lines if f[0] == "site")
    return summary, sites


def test_library_constructor_allocation_is_seen():
    """Failed before libsftrace.so was made initfirst (docs/DESIGN.md
    "Start-up"). libskep27b_ctorlib.so's constructor mallocs a 5,000 B
    table that the program reads and never frees; main mallocs 300 B.
    heaptrack_print: 3 calls of the program (5,000 B at
    skep27b_ctorlib.c:10, 300 B, stdout's 4,096 B), 9.10K leaked. sftrace
    memory: 2 allocations, 4,396 B, 4,096 B leaked: the library's table is
    not in any table, nor in the leaks. libstdc++'s 72,704 B emergency pool
    is missed the same way in every C++ program."""
    build_c("libskep27b_ctorlib.so", ["skep27b_ctorlib.c"], shared=True)
    exe = build_c("skep27b_ctormain", ["skep27b_ctormain.c"], flags=["-fno-builtin"],
                  libs=["-L" + FIXBUILD, "-lskep27b_ctorlib", "-Wl,-rpath," + FIXBUILD])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 7\n", "the program's output")
    summary, sites = summary_and_sites(log)
    eq((summary["allocations"], summary["leaked_bytes"]), ("3", "9096"), "allocations, leaked bytes")
    eq([r for r in sites if r[3].startswith("skep27b_ctorlib.c")],
       [(5000, 1, "make_table", "skep27b_ctorlib.c:10", "0")], "the constructor's row")


def test_cxx_library_allocations_at_the_users_line():
    """Failed before the fix. shared() returns std::make_shared<long>(v) (line 10);
    text() builds a 300-char std::string (line 15). sftrace memory:
    `shared(…)  new_allocator.h:137` (std::__new_allocator, which the fold
    list names, inlined) and `text(…)  0x7f…f95c` (basic_string::_M_construct
    in libstdc++, which calls operator new: the interposed new leaves the
    return address in libstdc++ as the site, a runtime address that changes
    with every run). Issue 27: allocator plumbing folded into the function
    it serves, at its line. heaptrack_print: from shared(long) at
    skep27b_cxxlines.cc:10 and from text at skep27b_cxxlines.cc:15."""
    exe = build_c("skep27b_cxxlines", ["skep27b_cxxlines.cc"], compiler="clang++")
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 7 300\n", "the program's output")
    _, sites = summary_and_sites(log)
    # the line itself may be the call's or the function's (its definition,
    # as for folded plumbing): the file must be the program's
    eq([(b, c, fn, loc.split(":")[0]) for b, c, fn, loc, _ in sites if fn in ("shared(…)", "text(…)")],
       [(24, 1, "shared(…)", "skep27b_cxxlines.cc"), (301, 1, "text(…)", "skep27b_cxxlines.cc")],
       "shared's and text's rows (file of the location)")


def test_callers_own_call_of_the_tail_callee_is_the_callers():
    """Failed before the fix. via() tail-calls make2 (built without sleds; it mallocs
    16, n and n+1 B). main calls via(10), then make2(100) itself. sftrace
    memory credits all six blocks, 254 B, to via "(tail call)": a site in
    the function via jumps to is via's "every time", and nothing ends the
    claim when the callee returns into main and main calls it again (no
    heap event had its site in main's code). Expected: via 37 B in 3
    blocks, main 217 B (+ stdout's 4,096 B) in 4. heaptrack_print credits
    make2's lines, from main at skep27b_again.c:13 and :14."""
    obj = build_c("skep27b_again_u.o", ["skep27b_again_u.c"], flags=["-c"], xray=False)
    exe = build_c("skep27b_again", ["skep27b_again.c", obj])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 1\n", "the program's output")
    rows = by_function(log)
    eq((rows.get("via"), rows.get("main")), ((37, 3, "1"), (4313, 4, "0")), "via's and main's allocations")


def test_tsv_lists_zero_byte_sites():
    """Failed before the fix. zeros() calls malloc(0) three times (line 9; each returns
    a block to free). `memory --format json` lists the site (0 B, 3
    blocks) in sites_by_count, and the summary counts the 3 allocations,
    but `--format tsv` has no `site` row for it: its site rows add up to
    fewer allocations than its own summary. heaptrack_print: "3 calls to
    allocation functions with 0B peak consumption from zeros at
    skep27b_zero.c:9"."""
    exe = build_c("skep27b_zero", ["skep27b_zero.c"], flags=["-fno-builtin"])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 1\n", "the program's output")
    summary, sites = summary_and_sites(log)
    eq(summary["allocations"], str(sum(r[1] for r in sites)), "allocations in the summary = in the site rows")
    eq([r for r in sites if r[2] == "zeros"], [(0, 3, "zeros", "skep27b_zero.c:9", "0")], "zeros' row")


def test_cxx_containers_folded_at_O0():
    """FAILS NOW. fill_map() and fill_umap() insert 100 ints into a
    std::map and a std::unordered_map, built at -O0 (a debug build: every
    container member is a traced frame). sftrace memory --group-by
    function: 4,000 B in 100 blocks to `std::_Rb_tree<…>::_Auto_node::
    _Auto_node<…>(…)` at stl_tree.h:1634, 1,600 B to `std::_Hashtable<…>::
    _Scoped_node::_Scoped_node<…>(…)`, 1,824 B in 4 to `std::unordered_map<…>::
    operator[](…)`; fill_map and fill_umap have no row. At -O2 the same
    program gives fill_map 4,000/100 and fill_umap 3,424/104 (README: the
    node and bucket allocation of std::map/set and std::unordered_map/set
    are folded into the function they serve)."""
    exe = build_c("skep27b_cont0", ["skep27b_cont0.cc"], flags=["-O0"], compiler="clang++")
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 100 100\n", "the program's output")
    rows = by_function(log)
    eq((rows.get("fill_map(…)"), rows.get("fill_umap(…)")), ((4000, 100, "0"), (3424, 104, "0")),
       "fill_map's and fill_umap's allocations")


def test_cxx_sequence_containers_folded_at_O0():
    """Failed before the fix (vector, deque and list members were not in
    the fold list). fill_vec(), fill_deque() and fill_list() push 100 longs
    each, built at -O0: every _Vector_base::_M_allocate, _M_realloc_insert,
    _Deque_base::_M_create_nodes and _List_base::_M_get_node is a traced
    frame. Rows by function: fill_vec 8 blocks of 8..1,024 B (2,040 B),
    fill_deque its 64 B map and two 512 B nodes, fill_list 100 nodes of
    24 B."""
    exe = build_c("skep27b_seq0", ["skep27b_seq0.cc"], flags=["-O0"], compiler="clang++")
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok 100 100 100\n", "the program's output")
    rows = by_function(log)
    eq([rows.get(f) for f in ("fill_vec(…)", "fill_deque(…)", "fill_list(…)")],
       [(2040, 8, "0"), (1088, 3, "0"), (2400, 100, "0")], "the three functions' allocations")


if __name__ == "__main__":
    sfkit.main(globals())
