"""The terminal views of a run: `sftrace replay` (uftrace's layout), with
exact call columns for known call patterns (tests/fixtures/views.c: main ->
foo x2 -> loop x3, bar; with "more": a recursion to a leaf and two threads
one after the other), the cut options applied to it, and repairs as
comments (own_longjmp.c).

Runs under tests/run.py, or alone: python3 tests/cases/test_views.py."""
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import DUMP_RE, SFTRACE, build_c, check, eq, record, run  # noqa: E402

# uftrace's replay line: 10-column duration (blank or "%3d.%03d UNIT"), the
# tid as "[%7d]", " | ", then the call.
LINE_RE = re.compile(r"^ (.{10}) \[ *(\d+)\] \| (.*)$")
DUR_RE = re.compile(r"^ *\d{1,3}\.\d{3} (us|ms| s| m| h)$")
HEADER = "# DURATION     TID      FUNCTION"

# uftrace's documented example: main calls foo twice, foo calls loop three
# times, then bar.
BASIC = ["main() {",
         "  foo() {", "    loop();", "    loop();", "    loop();", "  } /* foo */",
         "  foo() {", "    loop();", "    loop();", "    loop();", "  } /* foo */",
         "  bar();"]
MORE = ["  recurse() {", "    recurse() {", "      recurse() {", "        recurse() {", "          bottom();",
        "        } /* recurse */", "      } /* recurse */", "    } /* recurse */", "  } /* recurse */"]
WORKER = ["worker() {", "  wleaf();", "  wleaf();", "} /* worker */"]

_logs = {}


def views_log(arg=None):
    """(exe, log) of views.c, recorded once per argument."""
    if arg not in _logs:
        exe = build_c("views", ["views.c"], flags=["-fno-optimize-sibling-calls"], libs=["-lpthread"])
        _, log = record([exe] + ([arg] if arg else []))
        _logs[arg] = (exe, log)
    return _logs[arg]


def replay(log, extra=()):
    """(header, [(duration, tid, call)]) of `sftrace replay`; every line checked."""
    p = run([SFTRACE, "replay"] + list(extra) + [log])
    lines = p.stdout.splitlines()
    eq(lines[0], HEADER, "header")
    rows = []
    for ln in lines[1:]:
        m = LINE_RE.match(ln)
        check(m, f"not a replay line: {ln!r}")
        rows.append((m.group(1), int(m.group(2)), m.group(3)))
    return lines[0], rows


def check_durations(rows):
    """Opening lines and comments have no duration; closes and leaves have one."""
    for dur, _, call in rows:
        if call.endswith("{") or call.lstrip().startswith("/*"):
            eq(dur.strip(), "", f"duration of {call!r}")
        else:
            check(DUR_RE.match(dur), f"duration {dur!r} of {call!r}")


def test_replay_uftrace_example():
    _, log = views_log()
    _, rows = replay(log)
    eq([c for _, _, c in rows], BASIC + ["} /* main */"], "call column")
    eq(len({t for _, t, _ in rows}), 1, "one thread")
    check_durations(rows)


def test_replay_recursion_and_threads():
    """Threads merged in time order, each at its own depth; tids as recorded."""
    _, log = views_log("more")
    _, rows = replay(log)
    tids = []
    for _, t, _ in rows:
        if t not in tids:
            tids.append(t)
    eq(len(tids), 3, "threads")
    labelled = [f"T{tids.index(t)} {c}" for _, t, c in rows]
    want = ([f"T0 {c}" for c in BASIC + MORE] + [f"T1 {c}" for c in WORKER] + [f"T2 {c}" for c in WORKER] +
            ["T0 } /* main */"])
    eq(labelled, want, "call column with threads")
    check_durations(rows)


def test_replay_cut_tid_and_depth():
    _, log = views_log("more")
    _, rows = replay(log)
    main_tid = rows[0][1]
    _, cut = replay(log, ["--tid", str(main_tid), "--max-depth", "2"])
    eq([c for _, _, c in cut], ["main() {", "  foo();", "  foo();", "  bar();", "  recurse();", "} /* main */"],
       "--tid --max-depth 2")
    eq({t for _, t, _ in cut}, {main_tid}, "tids")


def test_replay_cut_window_comments():
    """A window starting between the first two loop() calls: main and foo are
    cut at its start (said in a comment), the first loop() is left out."""
    _, log = views_log()
    evs = [e for e in (DUMP_RE.match(ln) for ln in run([SFTRACE, "dump", log]).stdout.splitlines()) if e]
    loops = [(int(e.group(1)), e.group(3)) for e in evs if e.group(4) == "loop"]
    exit1, entry2 = loops[1][0], loops[2][0]
    eq([loops[1][1], loops[2][1]], ["EXIT", "ENTRY"], "loop events")
    check(entry2 > exit1, "loop calls apart in time")
    start = (exit1 + entry2 + 1) // 2
    _, rows = replay(log, ["--time", f"{start}ns.."])
    eq([c for _, _, c in rows],
       ["main() { /* cut at window start */", "  foo() { /* cut at window start */", "    loop();", "    loop();",
        "  } /* foo */"] + BASIC[6:] + ["} /* main */"], "--time")


def test_replay_fields():
    _, log = views_log()
    p = run([SFTRACE, "replay", "-f", "none", log])
    eq(p.stdout.splitlines(), BASIC + ["} /* main */"], "-f none")
    p = run([SFTRACE, "replay", "-f", "all", log])
    eq(p.stdout.splitlines()[0], "# DURATION     TID       ADDRESS        TIMESTAMP      TIMEDELTA   ELAPSED "
       "       TASK NAME      MODULE NAME   FUNCTION", "-f all header")
    tid = replay(log)[1][0][1]
    p = run([SFTRACE, "replay", "-f", "tid", log])
    eq(p.stdout.splitlines()[:2], ["#   TID      FUNCTION", f" [{tid:7}] | main() {{"], "-f tid")
    p = run([SFTRACE, "replay", "-f", "bogus", log], check_rc=2)
    check("unknown field 'bogus'" in p.stderr, p.stderr)


def test_replay_unwound_comment():
    """Frames longjmp abandoned close where it landed, then one comment."""
    exe = build_c("own_longjmp", ["own_longjmp.c"], flags=["-fno-builtin"])
    _, log = record([exe, "1"])
    _, rows = replay(log)
    eq([c for _, _, c in rows], ["main() {", "  jumper() {", "    mid() {", "      leaf();", "    } /* mid */",
                                 "    /* 2 frames unwound */", "  } /* jumper */", "} /* main */"], "call column")
    check_durations(rows)


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok", name)
