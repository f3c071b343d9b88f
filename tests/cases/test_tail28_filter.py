"""-F/-N and tail calls (issue 28): a frame F's tail call entered is inside
F's subtree for -F/-N (uftrace's "F and everything it calls"), and so is
what that frame tail-calls in turn, though replay draws it beside F."""
import sfkit


def _chain():
    exe = sfkit.build_c("tail28_chain", ["tail28_chain.c"])
    _, log = sfkit.record([exe], args=["-q"])
    return log


def test_tail28_filter_func_keeps_a_tail_chain():
    log = _chain()
    calls = sfkit.call_column(sfkit.replay_text(log, ["-q"]))
    sfkit.eq(calls, ["main() {", "  f();", "  g(); /* tail call from f */", "  h(); /* tail call from g */",
                     "  other();", "  h();", "} /* main */"], "replay, no cut")
    calls = sfkit.call_column(sfkit.replay_text(log, ["-q", "-F", "^f$"]))
    sfkit.eq(calls, ["f();", "g(); /* tail call from f */", "h(); /* tail call from g */"], "replay -F f")
    calls = sfkit.call_column(sfkit.replay_text(log, ["-q", "-F", "^g$"]))
    sfkit.eq(calls, ["g(); /* tail call from f */", "h(); /* tail call from g */"], "replay -F g")
    calls = sfkit.call_column(sfkit.replay_text(log, ["-q", "-F", "^f$", "--max-depth", "2"]))
    sfkit.eq(calls, ["f();", "g(); /* tail call from f */"], "replay -F f --max-depth 2: g one below f")
    rows, _ = sfkit.report_calls([log], ["-F", "^f$"])
    sfkit.eq(sorted((n, c) for (_, n), c in rows.items()), [("f", 1), ("g", 1), ("h", 1)], "report -F f")


def test_tail28_notrace_replay_drops_a_tail_chain():
    log = _chain()
    calls = sfkit.call_column(sfkit.replay_text(log, ["-q", "-N", "^f$"]))
    sfkit.eq(calls, ["main() {", "  other();", "  h();", "} /* main */"], "replay -N f")
    calls = sfkit.call_column(sfkit.replay_text(log, ["-q", "-N", "^g$"]))
    sfkit.eq(calls, ["main() {", "  f();", "  other();", "  h();", "} /* main */"], "replay -N g")
