"""Tail calls in replay and graph (tests/fixtures/tail_marks.c): the
callee of a traced tail call is drawn where it returns, as its caller's
sibling, and marked with the caller; the next call after a tail call into
untraced code is not marked."""
from sfkit import SFTRACE, build_c, eq, record, run


def fixture_log():
    exe = build_c("tail_marks", ["tail_marks.c"])
    _, log = record([exe], args=["-q"])
    return log


def test_replay_marks_the_tail_callee():
    log = fixture_log()
    out = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none", log]).stdout.splitlines()
    eq([ln for ln in out if not ln.startswith("# ")],
       ["main() {", "  a() {", "    c();", "  } /* a */", "  b(); /* tail call from a */",
        "  q() {", "    c();", "  } /* q */", "  d();", "} /* main */"], "replay")


def test_graph_keeps_the_tail_callee_apart():
    log = fixture_log()
    out = run([SFTRACE, "graph", "-q", "main", log]).stdout
    tree = out.split("FUNCTION CALL GRAPH ==========\n", 1)[1].splitlines()[1:]
    eq([ln.split(" : ", 1)[1].rstrip() for ln in tree if ln.strip()],
       ["(1) main", " +-(1) a", " | (1) c", " |", " +-(1) b /* tail call from a */", " |", " +-(1) q",
        " | (1) c", " |", " +-(1) d"], "graph main")
