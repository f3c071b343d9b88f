"""The terminal views of a run: `sftrace replay` (uftrace's layout), with
exact call columns for known call patterns (tests/fixtures/views.c: main ->
foo x2 -> loop x3, bar; with "more": a recursion to a leaf and two threads
one after the other), the cut options applied to it, and repairs as
comments (own_longjmp.c).

Runs under tests/run.py, or alone: python3 tests/cases/test_views.py."""
import os
import re
import subprocess
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import DUMP_RE, ROOT, SFTRACE, Skip, build_c, check, dump_events, eq, record, tmpdir, tp_rows, trace_processor  # noqa: E402
from sfkit import run as sf_run  # noqa: E402

# The first line report, replay and graph print about net times
# (test_net_times.py checks it): these cases look at what follows.
NET_NOTE_RE = re.compile(r"^# times (net of the tracer's cost: |as recorded \(--raw-times\); ).*\n", re.M)


def run(cmd, **kw):
    p = sf_run(cmd, **kw)
    if len(cmd) > 1 and cmd[1] in ("replay", "graph", "report"):
        p.stdout = NET_NOTE_RE.sub("", p.stdout)
    return p

# uftrace's replay line: 10-column duration (blank or "%3d.%03d UNIT"), the
# tid as "[%7d]", " | ", then the call.
LINE_RE = re.compile(r"^ (.{10}) \[ *(\d+)\] \| (.*)$")
# a duration, or one as recorded marked "<" (its net figure uncertain: the
# tracer's cost taken off it is large against it; a decimal fewer for room)
DUR_RE = re.compile(r"^ *(\d{1,3}\.\d{3}|<\d{1,3}\.\d{2,3}) (us|ms| s| m| h)$")
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


def _peak_rss_kb(cmd, out):
    """The peak RSS of cmd (KiB), its stdout to the file out."""
    with open(out, "wb") as fh:
        pr = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(pr.pid, 0)
    eq(status, 0, f"{cmd} status")
    return usage.ru_maxrss


def test_replay_threads_in_time_order_with_flat_memory():
    # main() { begins before the thread exists; main's next event comes
    # after the join. Every line in time order, and the thread's lines do
    # not wait for main's: a replay of 1M calls of the thread takes no more
    # memory than one of 1,000 calls, beyond the mapped log.
    exe = build_c("replay_join", ["replay_join.c"], libs=["-lpthread"])
    _, log = record([exe, "2"], args=["-q"])
    _, rows = replay(log, ["--no-pager"])
    main_tid = rows[0][1]
    eq([("M " if t == main_tid else "T ") + c for _, t, c in rows],
       ["M main() {", "T body() {", "T   work();", "T   work();", "T } /* body */", "M   after_join();",
        "M } /* main */"], "call column by thread")
    # A window in the middle of the thread's calls: the calls open at its
    # start come first, at the start (main, without a call of its own in
    # the window, and body), then the rest in time order.
    _, lg = record([exe, "1000"], args=["-q"])
    works = [e.time for e in dump_events(lg) if e.name == "work"]
    s, e = works[len(works) // 2], works[len(works) // 2 + 40]
    out = run([SFTRACE, "replay", "--no-pager", "-f", "time", "--time", f"{s}ns..{e}ns", lg]).stdout
    rows = [(float(t), c) for t, c in re.findall(r"^\s*(\d+\.\d+) \| (.*)$", out, re.M)]
    eq(sorted(c.strip() for _, c in rows[:2]),
       ["body() { /* cut at window start */", "main(); /* cut at window start */ /* cut at window end */"],
       f"first lines:\n{out}")
    eq([t for t, _ in rows], sorted(t for t, _ in rows), f"times in print order:\n{out}")
    d = tmpdir()
    rss = {}
    for n in (1000, 1000000):
        _, lg = record([exe, str(n)], out=os.path.join(d, f"{n}.log"), args=["-q"])
        rss[n] = _peak_rss_kb([SFTRACE, "replay", "--no-pager", lg], os.path.join(d, f"{n}.txt"))
    grow = rss[1000000] - rss[1000]
    size_kb = os.path.getsize(os.path.join(d, "1000000.log")) // 1024
    check(grow <= size_kb + 2048, f"peak RSS {rss} KiB: +{grow} KiB for 999,000 more calls, the log being {size_kb} KiB")


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
    exe, log = views_log()
    for _ in range(5):  # the two events can share a nanosecond: record again
        evs = [e for e in (DUMP_RE.match(ln) for ln in run([SFTRACE, "dump", log]).stdout.splitlines()) if e]
        loops = [(int(e.group(1)), e.group(3)) for e in evs if e.group(4) == "loop"]
        exit1, entry2 = loops[1][0], loops[2][0]
        eq([loops[1][1], loops[2][1]], ["EXIT", "ENTRY"], "loop events")
        if entry2 > exit1:
            break
        _, log = record([exe])
    check(entry2 > exit1, "loop calls apart in time")
    start = (exit1 + entry2 + 1) // 2
    _, rows = replay(log, ["--raw-times", "--time", f"{start}ns.."])  # the window is on dump's raw times
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


# ---- graph ----

GRAPH_RE = re.compile(r"^  (.{10}) : (.*)$")


def graph(args):
    """`sftrace graph` lines, with each graph line's time column checked and
    cut off (blank lines between siblings: the time is blank)."""
    p = run([SFTRACE, "graph"] + list(args))
    out = []
    for ln in p.stdout.splitlines():
        m = GRAPH_RE.match(ln)
        if m and not ln.startswith("# "):
            t, call = m.group(1), m.group(2)
            if call.strip(" |"):
                # blank: 0 ns, as uftrace (an empty function, net of the tracer)
                check(DUR_RE.match(t) or not t.strip(), f"time {t!r} of {call!r}")
            else:
                eq(t.strip(), "", "blank line's time")
            out.append("T : " + call)
        else:
            out.append(re.sub(r"time +(\d+\.\d{3}|<\d+\.\d{2,3}) (us|ms| s)", "time X", re.sub(r"\(0x[0-9a-f]+\)", "(ADDR)", ln)))
    return out


def test_graph_main():
    exe, log = views_log()
    pid = re.search(r"\(pid (\d+)\)", run([SFTRACE, "graph", "main", log]).stdout).group(1)
    eq(graph(["main", log]), [
        f"# Function Call Graph for 'main' (pid {pid})",
        "=============== BACKTRACE ===============",
        " backtrace #0: hit 1, time X",
        "   [0] main (ADDR)",
        "",
        "========== FUNCTION CALL GRAPH ==========",
        "# TOTAL TIME   FUNCTION",
        "T : (1) main",
        "T :  +-(2) foo",
        "T :  | (6) loop",
        "T :  | ",
        "T :  +-(1) bar",
        ""], "graph main")


def test_graph_recursion_threads_and_depth():
    _, log = views_log("more")
    g = graph(["recurse", log])
    eq(g[2:5], [" backtrace #0: hit 1, time X", "   [0] main (ADDR)", "   [1] recurse (ADDR)"], "backtrace")
    eq(g[8:], ["T : (1) recurse", "T : (1) recurse", "T : (1) recurse", "T : (1) recurse", "T : (1) bottom", ""],
       "a single path stays flat")
    whole = graph([log])
    eq(whole[0].split(" (pid")[0], "# Function Call Graph for 'views'", "whole process")
    eq(whole[3:], ["T : (1) views",
                   "T :  +-(1) main",
                   "T :  |  +-(2) foo",
                   "T :  |  | (6) loop",
                   "T :  |  | ",
                   "T :  |  +-(1) bar",
                   "T :  |  | ",
                   "T :  |  +-(1) recurse",
                   "T :  |    (1) recurse",
                   "T :  |    (1) recurse",
                   "T :  |    (1) recurse",
                   "T :  |    (1) bottom",
                   "T :  | ",
                   "T :  +-(2) worker",
                   "T :    (4) wleaf",
                   ""], "whole graph")
    eq(graph(["--depth", "1", log])[3:], ["T : (1) views", "T :  +-(1) main", "T :  | ", "T :  +-(2) worker", ""],
       "--depth 1")
    eq(graph(["--max-depth", "1", "main", log])[7:], ["T : (1) main", ""], "a cut applies")
    p = run([SFTRACE, "graph", "nosuchfunc", log], check_rc=1)
    eq(p.stdout, "", "no output")
    check("no call of 'nosuchfunc'" in p.stderr, p.stderr)


# ---- info ----

def test_info_fields():
    exe, log = views_log("more")
    j = __import__("json").loads(run([SFTRACE, "info", "--format", "json", log]).stdout)
    eq(len(j["processes"]), 1, "processes")
    p = j["processes"][0]
    bid = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", exe]).stdout).group(1)
    want = {"cmdline": f"{exe} more", "argv": [exe, "more"], "machine": "x86-64", "exit_state": "exited 0",
            "ring_bytes": 0, "trim_min_ns": 0, "trim_max_depth": 0, "alloc_events": 0,
            # main thread: main, foo x2, loop x6, bar, recurse x4, bottom; each worker: worker, wleaf x2
            "events": 42, "frames": 21, "dropped": 0, "lost": 0, "write_errors": 0, "unwound": 0,
            "open_at_end": 0, "log_bytes": os.path.getsize(log), "log_path": log}
    eq({k: p[k] for k in want}, want, "info fields")
    eq(p["sleds"], p["sleds_patched"], "every sled patched")
    eq([(o["path"], o["build_id"], o["main"]) for o in p["objects"]], [(os.path.realpath(exe), bid, True)],
       "objects")
    eq(sorted(t["events"] for t in p["threads"]), [6, 6, 30], "events per thread")
    text = run([SFTRACE, "info", log]).stdout
    lines = dict(re.findall(r"^# (\w[\w ]*?) *: (.*)$", text, re.M))
    eq({k: lines[k] for k in ("pid", "ppid", "exit state", "events", "frames", "threads", "objects")},
       {"pid": str(p["pid"]), "ppid": str(p["ppid"]), "exit state": "exited 0", "events": "42", "frames": "21",
        "threads": "3", "objects": "1"}, "text fields")
    check(f"build-id {bid}, sleds {p['sleds']}, patched {p['sleds']}" in text, text)
    eq(lines["log"], f"{os.path.getsize(log)} bytes ({os.path.getsize(log) / 42:.1f} bytes per event)", "log size")


# ---- Perfetto at any depth ----

def test_perfetto_deep_recursion_on_child_tracks():
    """3,000 nested rec() calls (main -> run -> rec x3000: depths 0..3001).
    trace_processor keeps at most 512 nested slices on a track; depths past
    it go to child tracks of the thread, 512 levels each, so every call loads,
    each at its own depth, with one root on the thread's track and no import
    error or data loss."""
    exe = build_c("stress_recursion", ["stress_recursion.c"], libs=["-lpthread"])
    _, log = record([exe, "main", "2999"])
    out = os.path.join(tmpdir(), "t.pb")
    run([SFTRACE, "convert", log, "-o", out])
    rows = tp_rows(out, """
select 'slice', s.name, s.depth, coalesce(t.name, ''), tt.utid from slice s
  left join thread_track tt on s.track_id = tt.id left join track t on t.id = s.track_id
union all
select 'stat', name, idx, severity, value from stats where value > 0 and severity in ('error', 'data_loss');
""")
    eq([r for r in rows if r[0] == "stat"], [], "import errors or data loss")
    slices = [r for r in rows if r[0] == "slice"]
    eq(len(slices), 3002, "every call loaded")
    eq({r[4] for r in slices} - {""}, {slices[0][4]}, "every slice on a track of the thread")
    check(all(r[4] for r in slices), "no slice off the thread")
    got = sorted((r[3], int(r[2]), r[1]) for r in slices)
    thread = "stress_recursio"
    want = [("", 0, "main"), ("", 1, "run")] + [("", d, "rec") for d in range(2, 512)]
    for d in range(512, 3002):
        k = d // 512
        want.append((f"{thread} depth {k * 512}-{k * 512 + 511}", d % 512, "rec"))
    eq(got, sorted(want), "slices by track and depth")
    eq(sum(1 for r in slices if r[3] == "" and r[2] == "0"), 1, "one root on the thread's track")


# ---- names of folded functions ----

def icf_exe():
    """tests/fixtures/icf_twins.cc linked by lld with --icf=all: app::twin_a and
    app::twin_b are one function, and so are app::fold_me and std::fold_me."""
    import shutil
    if not shutil.which("ld.lld"):
        raise Skip("ld.lld not installed (identical code folding needs lld's --icf=all)")
    exe = build_c("icf_twins", ["icf_twins.cc"], compiler="clang++",
                  flags=["-ffunction-sections", "-fuse-ld=lld", "-Wl,--icf=all"])
    nm = run(["nm", "-C", exe]).stdout
    addr = {ln.split(" ", 2)[2]: ln.split()[0] for ln in nm.splitlines() if "twin" in ln or "fold_me" in ln}
    eq(addr["app::twin_a(int)"], addr["app::twin_b(int)"], "twins folded")
    eq(addr["app::fold_me(int)"], addr["std::fold_me(int)"], "fold_me folded")
    return exe


def test_folded_function_named_as_the_filter_chose():
    exe = icf_exe()
    _, log = record([exe])
    # Without a filter: one name each, the user's namespace over std's.
    _, rows = replay(log)
    eq([c for _, _, c in rows], ["main() {", "  app::twin_a();", "  app::twin_a();", "  app::fold_me();",
                                 "  app::fold_me();", "} /* main */"], "default names")
    d = tmpdir()
    for want, other in (("twin_b", "twin_a"), ("twin_a", "twin_b")):
        flt = os.path.join(d, want + ".filter")
        run([SFTRACE, "filter", "-p", exe, "-r", "^app::" + want, "-o", flt])
        with open(flt) as fh:
            named = [ln.split(" ", 1)[1] for ln in fh.read().splitlines() if ln.startswith("0x")]
        eq(named, [f"app::{want}(int)"], "the filter file names the alias its regex matched")
        _, rows = replay(log, ["-c", flt])
        eq([c for _, _, c in rows], [f"app::{want}();"] * 2, f"replay -c {want}")
        rep = run([SFTRACE, "report", "--format", "tsv", "-c", flt, log]).stdout.splitlines()
        eq([(r.split("\t")[1], r.split("\t")[2]) for r in rep[1:]], [(f"app::{want}(int)", "2")], "report -c")
    info = __import__("json").loads(run([SFTRACE, "info", "--format", "json", log]).stdout)
    eq(info["processes"][0]["objects"][0]["aliases"],
       [{"name": "app::twin_a(int)", "aliases": ["app::twin_b(int)"]},
        {"name": "app::fold_me(int)", "aliases": ["std::fold_me(int)"]}], "info's aliases")
    text = run([SFTRACE, "info", log]).stdout
    check("#       alias: app::fold_me(int) = std::fold_me(int)\n" in text, text)


def test_replay_srcline():
    """--srcline: each call's file:line (the function's definition in views.c)."""
    _, log = views_log()
    src = os.path.join(ROOT, "tests", "fixtures", "views.c")
    with open(src) as fh:
        lines = fh.read().splitlines()

    def line_of(func):
        return next(i + 1 for i, ln in enumerate(lines) if re.match(r"^(__attribute__\(\(noinline\)\) )?\w+ \*?" +
                                                                   func + r"\(", ln))
    _, rows = replay(log, ["--srcline"])
    want = []
    for c in BASIC + ["} /* main */"]:
        m = re.match(r"^( *)(\w+)\(\)( \{|;)$", c)
        want.append(f"{m.group(1)}{m.group(2)}(){m.group(3)} /* {src}:{line_of(m.group(2))} */" if m else c)
    eq([c for _, _, c in rows], want, "--srcline")


def _on_terminal(argv, env):
    """(output, exit status) of argv run on a pseudo-terminal."""
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(env)
        os.execv(argv[0], argv)
    out = b""
    while True:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
    _, st = os.waitpid(pid, 0)
    return out.decode().replace("\r\n", "\n"), os.waitstatus_to_exitcode(st)


def test_replay_pages_on_a_terminal():
    """On a terminal the output goes through $PAGER (here one that keeps two
    lines and quits: replay stops quietly, status 0); --no-pager and a
    pipe write it straight."""
    _, log = views_log()
    whole = sf_run([SFTRACE, "replay", log]).stdout.splitlines()
    out, rc = _on_terminal([SFTRACE, "replay", "--color", "never", log], {"PAGER": "sed -n 1,2p"})
    eq((out.splitlines(), rc), (whole[:2], 0), "paged")
    out, rc = _on_terminal([SFTRACE, "replay", "--color", "never", "--no-pager", log], {"PAGER": "sed -n 1,2p"})
    eq((out.splitlines(), rc), (whole, 0), "--no-pager")


# ---- -F/--filter-func and -N/--notrace (uftrace's), in every reading command ----

def test_filter_func_and_notrace_in_every_reader():
    """-F keeps the matching functions and what they call; -N drops them and
    what they call; both repeatable, on demangled names."""
    _, log = views_log("more")
    _, rows = replay(log, ["-F", "^foo$"])
    eq([c for _, _, c in rows], ["foo() {", "  loop();", "  loop();", "  loop();", "} /* foo */"] * 2, "replay -F foo")
    _, rows = replay(log, ["-N", "foo|worker", "-N", "^recurse"])
    eq([c for _, _, c in rows], ["main() {", "  bar();", "} /* main */"], "replay -N foo|worker -N recurse")
    _, rows = replay(log, ["-F", "recurse", "-N", "bottom", "--max-depth", "2"])
    # Each nested -F match restarts the depth count, as uftrace: every level
    # of the recursion is a match, so all four show; bottom is dropped by -N.
    eq([c for _, _, c in rows], ["recurse() {", "  recurse() {", "    recurse() {", "      recurse();",
                                 "    } /* recurse */", "  } /* recurse */", "} /* recurse */"],
       "-F with -N and --max-depth")
    rep = run([SFTRACE, "report", "--format", "tsv", "-F", "^recurse", log]).stdout.splitlines()
    eq(sorted((r.split("\t")[1], r.split("\t")[2]) for r in rep[1:]), [("bottom", "1"), ("recurse", "4")],
       "report -F")
    g = run([SFTRACE, "graph", "-N", "^loop$", "main", log]).stdout
    check("(2) foo" in g and "(1) bar" in g and "loop" not in g, g)
    js = os.path.join(tmpdir(), "f.json")
    run([SFTRACE, "convert", "--type", "chrome", "--filter-func", "wleaf", log, "-o", js])
    with open(js, encoding="utf-8") as fh:
        xs = [e["name"] for e in __import__("json").load(fh)["traceEvents"] if e["ph"] == "X"]
    eq(sorted(xs), ["wleaf"] * 4, "convert --filter-func")
    q = run([SFTRACE, "query", "--format", "tsv", "--notrace", "^(foo|recurse|worker)$", log,
             "select name, count(*) from frames group by 1 order by 1"]).stdout.splitlines()
    eq(q[1:], ["bar\t1", "main\t1"], "query --notrace")
    d = run([SFTRACE, "dump", "-F", "^bar$", log]).stdout
    eq(re.findall(r" (ENTRY|EXIT) +(\w+)$", d, re.M), [("ENTRY", "bar"), ("EXIT", "bar")], "dump -F")
    p = run([SFTRACE, "replay", "-F", "(", log], check_rc=1)
    check("invalid regex '(' (-F)" in p.stderr and not p.stdout, p.stderr)
    p = run([SFTRACE, "memory", "-F", "foo", log], check_rc=2)
    check("-F, -N" in p.stderr, p.stderr)


def test_filter_func_picks_the_folded_alias():
    """-F names a folded function by an alias: every output uses that name."""
    _, log = record([icf_exe()])
    _, rows = replay(log, ["-F", "^app::twin_b"])
    eq([c for _, _, c in rows], ["app::twin_b();"] * 2, "the alias -F matched")
    _, rows = replay(log, ["-N", "^std::fold_me"])
    eq([c for _, _, c in rows], ["main() {", "  app::twin_a();", "  app::twin_a();", "} /* main */"],
       "-N by an alias drops the folded function")


# ---- short names accepted wherever a name is taken ----

# rust_prog's Vec<Box<dyn Shape>> drop (tests/cases/test_names.py).
DROP_FULL = "<alloc::vec::Vec<alloc::boxed::Box<dyn rust_prog::Shape>> as core::ops::drop::Drop>::drop"
DROP_SHORT = "<alloc::vec::Vec<…> as core::ops::drop::Drop>::drop"


def test_short_names_in_query_filters_and_cuts():
    """A name as report prints it finds the function: query's short_name
    columns, -F/-N, and sftrace filter -r (which --trigger shares)."""
    from sfkit import rust_fixture
    exe = rust_fixture()
    _, log = record([exe])
    tsv = run([SFTRACE, "report", "--format", "tsv", "--names", "full", log]).stdout.splitlines()
    full = {r.split("\t")[1]: int(r.split("\t")[2]) for r in tsv[1:]}
    check(full.get(DROP_FULL), f"{DROP_FULL} called: {sorted(full)}")
    q = run([SFTRACE, "query", "--format", "tsv", log,
             f"select name, count(*) from frames where short_name = '{DROP_SHORT}' group by 1"]).stdout
    eq(q.splitlines()[1:], [f"{DROP_FULL}\t{full[DROP_FULL]}"], "frames.short_name")
    q = run([SFTRACE, "query", "--format", "tsv", log,
             f"select name from functions where short_name = '{DROP_SHORT}'"]).stdout
    eq(q.splitlines()[1:], [DROP_FULL], "functions.short_name")
    short_re = re.escape(DROP_SHORT)  # finds the short name only: "Vec<…>" is not in the full one
    check(not re.search(short_re, DROP_FULL), "the regex misses the full name")
    rep = run([SFTRACE, "report", "--format", "tsv", "--names", "full", "-F", short_re, "-N", ".", log])
    eq(rep.stdout.splitlines()[1:], [], "-N . drops everything")
    p = run([SFTRACE, "replay", "-f", "none", "--max-depth", "1", "-F", short_re, log])
    eq(p.stdout.splitlines(), [f"{DROP_SHORT}();"] * full[DROP_FULL], "replay -F by the short name")
    flt = os.path.join(tmpdir(), "drop.filter")
    run([SFTRACE, "filter", "-p", exe, "-r", "^" + short_re + "$", "-o", flt])
    with open(flt, encoding="utf-8") as fh:
        named = [ln.split(" ", 1)[1] for ln in fh.read().splitlines() if ln.startswith("0x")]
    eq(named, [DROP_FULL], "filter -r by the short name")


def _node_records(path, cols):
    """Rows of a Parquet file read back with polars (node)."""
    import json
    import shutil
    if not shutil.which("node"):
        raise Skip("node is not installed")
    pq = os.path.join(ROOT, "tests", "parquet")
    if not os.path.isdir(os.path.join(pq, "node_modules", "nodejs-polars-linux-x64-gnu")):
        run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=pq, timeout=600)
    script = ("import pl from 'nodejs-polars';"
              f"const df = pl.scanParquet({json.dumps(path)}).collectSync();"
              f"console.log(JSON.stringify(df.toRecords().map(r => {json.dumps(cols)}.map(c => String(r[c])))));")
    return json.loads(run(["node", "--input-type=module", "-e", script], cwd=pq).stdout)


def test_parquet_symtab_lists_aliases():
    _, log = record([icf_exe()])
    out = os.path.join(tmpdir(), "icf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    rows = _node_records(out + ".symtab", ["name", "aliases"])
    eq(sorted(map(tuple, rows)), [("app::fold_me(int)", "std::fold_me(int)"), ("app::twin_a(int)", "app::twin_b(int)"),
                                  ("main", "")], "symtab names and aliases")


# ---- thread labels: a name the kernel cut, with the thread's first function ----

def threads_log():
    exe = build_c("views_threads", ["views_threads.c"], flags=["-fno-optimize-sibling-calls"], libs=["-lpthread"])
    _, log = record([exe])
    return log


def test_thread_labels_where_names_are_cut():
    log = threads_log()
    p = run([SFTRACE, "replay", "-f", "tid", log])
    tids = []
    for t in re.findall(r"\[ *(\d+)\]|# thread (\d+)", p.stdout):
        t = t[0] or t[1]
        if t not in tids:
            tids.append(t)
    eq(len(tids), 4, "threads")
    text = re.sub(r"\[ *(\d+)\]|(?<=# thread )(\d+)",
                  lambda m: f"[T{tids.index(m.group(1))}]" if m.group(1) else f"T{tids.index(m.group(2))}", p.stdout)
    eq(text.splitlines(), [
        "#   TID      FUNCTION",
        " [T0] | main() {",
        " [T0] |   main_work();",
        "# thread T1: ast::parse::tes (test_alpha)",
        " [T1] | test_alpha() {",
        " [T1] |   leaf();",
        " [T1] | } /* test_alpha */",
        "# thread T2: ast::parse::tes (test_beta)",
        " [T2] | test_beta() {",
        " [T2] |   leaf();",
        " [T2] |   leaf();",
        " [T2] | } /* test_beta */",
        " [T3] | other() {",
        " [T3] |   leaf();",
        " [T3] | } /* other */",
        " [T0] | } /* main */"], "replay: a label line before a cut-named thread's first call")
    heads = re.findall(r"^== thread (.*) \(tid (\d+)\) in ", run([SFTRACE, "report", "--threads", log]).stdout, re.M)
    eq(sorted((n, tids.index(t)) for n, t in heads),
       [("ast::parse::tes (test_alpha)", 1), ("ast::parse::tes (test_beta)", 2), ("short", 3),
        ("views_threads", 0)], "report --threads")
    q = run([SFTRACE, "query", "--format", "tsv", log, "select tid, thread_name, label from threads"]).stdout
    eq(sorted((tids.index(r.split("\t")[0]), r.split("\t")[1], r.split("\t")[2]) for r in q.splitlines()[1:]),
       [(0, "views_threads", "views_threads"), (1, "ast::parse::tes", "ast::parse::tes (test_alpha)"),
        (2, "ast::parse::tes", "ast::parse::tes (test_beta)"), (3, "short", "short")], "query threads")
    js = os.path.join(tmpdir(), "t.json")
    run([SFTRACE, "convert", "--type", "chrome", log, "-o", js])
    with open(js, encoding="utf-8") as fh:
        names = {str(e["tid"]): e["args"]["name"] for e in __import__("json").load(fh)["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "thread_name"}
    eq([names[t] for t in tids], ["views_threads", "ast::parse::tes (test_alpha)", "ast::parse::tes (test_beta)",
                                  "short"], "Chrome thread names")
    pb = os.path.join(tmpdir(), "t.pb")
    run([SFTRACE, "convert", log, "-o", pb])
    try:
        rows = tp_rows(pb, "select 't' || tid, name from thread where tid != 0")
        eq(sorted((tids.index(t[1:]), n) for t, n in rows),
           [(0, "views_threads"), (1, "ast::parse::tes (test_alpha)"), (2, "ast::parse::tes (test_beta)"),
            (3, "short")], "Perfetto thread names")
    except Skip:
        pass
    out = os.path.join(tmpdir(), "t.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    rows = _node_records(out + ".threads", ["tid", "label"])
    eq(sorted((tids.index(t), n) for t, n in rows),
       [(0, "views_threads"), (1, "ast::parse::tes (test_alpha)"), (2, "ast::parse::tes (test_beta)"),
        (3, "short")], "Parquet threads.label")


# ---- the repairs notice, once per command ----

def test_repairs_notice_once():
    exe = build_c("own_longjmp", ["own_longjmp.c"], flags=["-fno-builtin"])
    _, log = record([exe, "1"])
    p = run([SFTRACE, "report", log])
    eq((p.stdout + p.stderr).count("repaired: 2 frames closed by unwinding"), 1, "report: stdout footer only")
    eq(p.stderr, "", "report's stderr")
    p = run([SFTRACE, "report", "--format", "tsv", log])
    eq(p.stderr, "sftrace: repaired: 2 frames closed by unwinding\n", "tsv has no footer: stderr says it")
    for cmd in (["replay"], ["graph"]):
        p = run([SFTRACE] + cmd + [log])
        eq(p.stderr.count("repaired:"), 1, f"{cmd[0]}'s stderr")


# ---- Chrome JSON past trace_processor's nesting limit ----

def test_chrome_json_deep_recursion_warns_with_the_count():
    """3,000 nested rec() calls: the JSON keeps every call; convert says how
    many lie 512 or more levels deep, which is what trace_processor (so
    Perfetto's UI) drops from a JSON trace."""
    exe = build_c("stress_recursion", ["stress_recursion.c"], libs=["-lpthread"])
    _, log = record([exe, "main", "2999"])
    out = os.path.join(tmpdir(), "t.json")
    p = run([SFTRACE, "convert", "--type", "chrome", log, "-o", out])
    eq(p.stderr, "sftrace: warning: 2490 calls are nested 512 or more levels deep: Perfetto's UI and "
       "trace_processor drop them from a JSON trace; --type perfetto keeps every call\n", "warning")
    with open(out, encoding="utf-8") as fh:
        xs = [e for e in __import__("json").load(fh)["traceEvents"] if e["ph"] == "X"]
    eq(len(xs), 3002, "every call in the JSON")
    eq(run([SFTRACE, "convert", "-q", "--type", "chrome", log, "-o", out]).stderr, "", "-q")
    small = os.path.join(tmpdir(), "s.json")
    eq(run([SFTRACE, "convert", "--type", "chrome", views_log()[1], "-o", small]).stderr, "", "no warning")
    rows = tp_rows(out, "select 'n', count(*) from slice union all "
                        "select name, value from stats where name = 'slice_max_depth_exceeded'")
    eq(sorted(rows), [["n", "512"], ["slice_max_depth_exceeded", "2490"]], "trace_processor drops that many")


if __name__ == "__main__":
    sfkit.main(globals())
