"""sftrace memory: allocation sites in an object the log did not record (an
uninstrumented executable linking an instrumented library, as node with an
instrumented addon: tests/fixtures/mem_unrecorded_main.c and _lib.c).

Runs under tests/run.py, or alone: python3 tests/cases/test_memory_unrecorded.py."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import FIXBUILD, SFTRACE, build_c, eq, known_break, record, run  # noqa: E402


def unrecorded_log():
    lib = build_c("libmemunrec.so", ["mem_unrecorded_lib.c"], shared=True)
    exe = build_c("mem_unrecorded_main", ["mem_unrecorded_main.c"], xray=False, flags=["-O0"],
                  libs=["-L" + FIXBUILD, "-lmemunrec", "-Wl,-rpath," + FIXBUILD])
    eq(os.path.dirname(lib), FIXBUILD, "library directory")
    _, log = record([exe], args=["--alloc", "-q"])
    return log


def rows_by_bytes(log):
    """(bytes, blocks, function, location's basename) of the site rows (by bytes)."""
    out = run([SFTRACE, "memory", "--format", "tsv", log]).stdout
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 6 and f[0] == "site":
            rows.append((int(f[2]), int(f[3]), f[4], os.path.basename(f[5])))
    return rows


@known_break(27, "sites in an object the log did not record (an uninstrumented executable, node itself) "
                 "all read '[no traced frame]' 'in a library': rows 1000 B/10, 1000 B/5 and libc's 4096 B/1 "
                 "differ only by numbers; the log records instrumented objects only (FORMAT.md OBJECT), so "
                 "no object, symbol or line can be named")
def test_unrecorded_executable_sites_name_object_function_and_line():
    rows = rows_by_bytes(unrecorded_log())
    eq(sorted(r for r in rows if r[2] != "[no traced frame]" or r[0] != 4096), sorted([
        (1000, 10, "site_a", "mem_unrecorded_main.c:7"),
        (1000, 5, "site_b", "mem_unrecorded_main.c:8"),
        (300, 1, "f", "mem_unrecorded_lib.c:3"),
    ]), "rows by bytes")

