"""sftrace memory: allocation sites in an object the log did not record (an
uninstrumented executable linking an instrumented library, as node with an
instrumented addon: tests/fixtures/mem_unrecorded_main.c and _lib.c).

Runs under tests/run.py, or alone: python3 tests/cases/test_memory_unrecorded.py."""
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import FIXBUILD, SFTRACE, build_c, check, eq, record, run  # noqa: E402


def unrecorded_log():
    lib = build_c("libmemunrec.so", ["mem_unrecorded_lib.c"], shared=True)
    exe = build_c("mem_unrecorded_main", ["mem_unrecorded_main.c"], xray=False, flags=["-O0"],
                  libs=["-L" + FIXBUILD, "-lmemunrec", "-Wl,-rpath," + FIXBUILD])
    eq(os.path.dirname(lib), FIXBUILD, "library directory")
    _, log = record([exe], args=["--alloc", "-q"])
    return log


def rows_by_bytes(log):
    """(bytes, blocks, function, location with paths cut to basenames) of the site rows (by bytes)."""
    out = run([SFTRACE, "memory", "--format", "tsv", log]).stdout
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 6 and f[0] == "site":
            rows.append((int(f[2]), int(f[3]), f[4], re.sub(r"(^|\s)/\S*/", r"\1", f[5])))
    return rows


def test_unrecorded_executable_sites_name_object_function_and_line():
    rows = rows_by_bytes(unrecorded_log())
    # libc's stdout buffer: a row of its own, in libc (its name and line
    # depend on the libc build and its debug info)
    eq(sorted(r for r in rows if r[0] != 4096), sorted([
        (1000, 10, "site_a", "mem_unrecorded_main.c:7"),
        (1000, 5, "site_b", "mem_unrecorded_main.c:8"),
        (300, 1, "f", "mem_unrecorded_lib.c:3"),
    ]), "rows by bytes")



def test_unrecorded_sites_in_the_table():
    out = run([SFTRACE, "memory", unrecorded_log()]).stdout
    table = out[out.index("Top allocation sites by bytes"):].split("\n\n")[0].splitlines()
    eq([line for line in table if "site_" in line or "  f  " in line], [
        "    1000 B       10  site_a  mem_unrecorded_main.c:7",
        "    1000 B        5  site_b  mem_unrecorded_main.c:8",
        "     300 B        1  f  mem_unrecorded_lib.c:3 (tail call)",
    ], "table rows")
    check(not any("[no traced frame]" in line for line in table), f"every row named: {table}")


def test_identical_runs_diff_as_equal():
    a, b = unrecorded_log(), unrecorded_log()
    out = run([SFTRACE, "memory", "--diff", a, b]).stdout
    check(out.rstrip().endswith("(none)"), f"no changed site between two runs:\n{out}")


def test_executable_without_dwarf_is_named_by_symbol():
    build_c("libmemunrec.so", ["mem_unrecorded_lib.c"], shared=True)
    exe = build_c("mem_unrecorded_nodw", ["mem_unrecorded_main.c"], xray=False, flags=["-O0", "-g0"],
                  libs=["-L" + FIXBUILD, "-lmemunrec", "-Wl,-rpath," + FIXBUILD])
    _, log = record([exe], args=["--alloc", "-q"])
    rows = [r for r in rows_by_bytes(log) if r[0] != 4096]
    eq(sorted(rows), sorted([
        (1000, 10, "site_a", "in mem_unrecorded_nodw (executable)"),
        (1000, 5, "site_b", "in mem_unrecorded_nodw (executable)"),
        (300, 1, "f", "mem_unrecorded_lib.c:3"),
    ]), "rows by bytes")
