"""Skeptic's cases for issue 28 (uftrace-style replay, graph and info;
thread labels; -F/-N in every reading command): programs written to break
the claims, not taken from the developers' tests (fixtures
tests/fixtures/skep28_*). Each case reproduces a break on the main it was
written against (6f046d1) and skips as a known break until it is fixed.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic28.py."""
import json
import os
import re
import shutil
import sys

def test_tail_call_shown_as_the_callers_callee():
    """FAILS NOW. a() calls c() then tail-calls b() (-O2: `jmp b`). uftrace
    replay of the -pg twin prints main { a { c(); b(); } }, as the source
    reads. sftrace replay prints b() as main's own call after a closed, with
    nothing on the line to say it was reached from a by a tail call, and
    graph counts b under main: a reader concludes main calls b. The log
    knows (dump shows `TAIL a` just before `ENTRY b`)."""
    exe = build_c("skep28_tail", ["skep28_tail.c"])
    _, log = record([exe], args=["-q"])
    dump = run([SFTRACE, "dump", log]).stdout
    check(re.search(r"TAIL\s+a\s*\n.*ENTRY\s+b", dump), "the log records a's tail call into b")
    lines = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none", log]).stdout.splitlines()
    uftrace_like = ["main() {", "  a() {", "    c();", "    b();", "  } /* a */", "} /* main */"]
    marked = any(re.match(r"\s*b\(\);.*tail", l) for l in lines)
    check(lines == uftrace_like or marked, "b nested under a, or its line marks the tail call: %r" % lines)


def test_plain_name_in_F_and_N_is_an_exact_name_as_in_uftrace():
    """FAILS NOW. Issue 28 item 7: -F/-N "as uftrace's replay has". uftrace
    takes a pattern without regex characters as the exact name: on the -pg
    twin of skep28_prefix.c (parse, and parse_all which calls parse twice),
    `uftrace replay -F parse` prints parse(); three times and `-N parse`
    prints main { parse_all(); } (uftrace v0.13). sftrace searches the name
    for the text: -F parse also keeps parse_all with its calls, and -N parse
    drops parse_all, leaving `main();`: a uftrace habit silently selects
    other functions (every name containing `main`, `new`, `get`...)."""
    exe = build_c("skep28_prefix", ["skep28_prefix.c"])
    _, log = record([exe], args=["-q"])

    def calls(*opts):
        out = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none"] + list(opts) + [log]).stdout
        return [ln for ln in out.splitlines() if not ln.startswith("# ")]  # the net-times header
    eq(calls(), ["main() {", "  parse();", "  parse_all() {", "    parse();", "    parse();", "  } /* parse_all */",
                 "} /* main */"], "the whole run")
    eq(calls("-F", "parse"), ["parse();"] * 3, "-F parse")
    eq(calls("-N", "parse"), ["main() {", "  parse_all();", "} /* main */"], "-N parse")


def test_uftrace_corpus_depth_with_filters():
    """FAILS NOW. The same depth rule in uftrace's own corpus (fixture shaped
    like its s-allocfree.c; library calls aside): t020_filter_depth
    (`-D1 -F "alloc[135]"`) expects alloc1 { alloc3 { alloc5(); } }, and
    t023_replay_filter (`-F alloc3 -D2 -F "free[15]"`) expects
    alloc3 { alloc4(); } then free1 { free2 { free5(); } }. sftrace prints
    `alloc1();` and free1 { free2(); }: the corpus comparison
    (bench/uftrace_corpus.py) leaves these cases out (they set options)."""
    exe = build_c("skep28_chain", ["skep28_chain.c"], flags=["-O0"])
    _, log = record([exe], args=["-q"])

    def calls(*opts):
        out = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none"] + list(opts) + [log]).stdout
        return [ln for ln in out.splitlines() if not ln.startswith("# ")]  # the net-times header
    eq(calls("--max-depth", "1", "-F", "alloc[135]"),
       ["alloc1() {", "  alloc3() {", "    alloc5();", "  } /* alloc3 */", "} /* alloc1 */"], "t020")
    eq(calls("-F", "alloc3", "--max-depth", "2", "-F", "free[15]"),
       ["alloc3() {", "  alloc4();", "} /* alloc3 */", "free1() {", "  free2() {", "    free5();", "  } /* free2 */",
        "} /* free1 */"], "t023")


def test_uftrace_corpus_filter_cases():
    """FAILS NOW. uftrace's corpus, filter cases (fixtures shaped like its
    s-abc.c and s-namespace.cpp; library calls aside). t004_filter_F
    (`-F a`) expects a { b { c(); } }: sftrace's -F a also matches `main`
    and prints the whole run. t034_filter_demangle4 (`-F "ns1::.*" -N
    "bar2$"`) expects bar { bar1(); }: uftrace applies the later option to
    a function both select, so bar2 is dropped; sftrace keeps bar2 and bar3
    under bar1."""
    abc = build_c("skep28_abc", ["skep28_abc.c"], flags=["-O0"])
    _, log = record([abc], args=["-q"])
    got = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none", "-F", "a", log]).stdout.splitlines()
    got = [ln for ln in got if not ln.startswith("# ")]  # the net-times header
    eq(got, ["a() {", "  b() {", "    c();", "  } /* b */", "} /* a */"], "t004 -F a")
    ns = build_c("skep28_ns", ["skep28_ns.cc"], flags=["-O0"], compiler="clang++")
    _, log = record([ns], args=["-q"])
    got = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none", "-F", "ns1::.*", "-N", "bar2$", log]
              ).stdout.splitlines()
    got = [ln for ln in got if not ln.startswith("# ")]
    eq(got, ["ns::ns1::foo::bar() {", "  ns::ns1::foo::bar1();", "} /* ns::ns1::foo::bar */"], "t034")


def test_graph_func_named_like_a_file_in_the_cwd():
    """FAILS NOW. `sftrace graph FUNC LOG` takes FUNC as a log when a file
    or directory of that name exists. Run where the program was built (its
    binary, or a source directory, has the function's name): `sftrace graph
    a sf.log` beside a file `a` fails with `a: not an sftrace log (bad
    magic)`, and beside a directory `a` with `a: directory holds no sftrace
    logs`. A FUNC that is not a log should be taken as the name."""
    abc = build_c("skep28_abc", ["skep28_abc.c"], flags=["-O0"])
    d = tmpdir()
    _, log = record([abc], out=os.path.join(d, "sf.log"), args=["-q"])
    want = run([SFTRACE, "graph", "a", log]).stdout
    check("(1) a" in want and "(1) c" in want, "graph a in a clean directory")
    shutil.copy(abc, os.path.join(d, "a"))
    got = run([SFTRACE, "graph", "a", "sf.log"], cwd=d, check_rc=None)
    eq((got.returncode, got.stdout), (0, want), "graph a beside a binary named a")
    os.remove(os.path.join(d, "a"))
    os.mkdir(os.path.join(d, "a"))
    got = run([SFTRACE, "graph", "a", "sf.log"], cwd=d, check_rc=None)
    eq((got.returncode, got.stdout), (0, want), "graph a beside a directory named a")


def test_graph_unknown_func_error_is_one_line():
    """FAILS NOW. `sftrace graph nosuch LOG` on a log with repairs: stderr is
    the error line, then `sftrace: repaired: ...` after it (COMMON: an error
    is one clear line, no partial output on failure)."""
    exe = build_c("skep28_exit", ["skep28_exit.c"])
    _, log = record([exe, "term"], args=["-q"], check_rc=None)
    p = run([SFTRACE, "graph", "nosuch", log], check_rc=1)
    eq(p.stdout, "", "stdout")
    eq(p.stderr.splitlines(), ["sftrace: error: no call of 'nosuch' in the trace "
                               "(names as report shows them, or full names)"], "stderr")


def test_graph_func_takes_a_folded_alias_as_F_does():
    """FAILS NOW. tests/fixtures/icf_twins.cc linked with lld --icf=all:
    app::twin_a and app::twin_b are one address. `replay -F twin_b` finds
    both calls and names them app::twin_b (the name the user asked for), but
    `graph app::twin_b` says `no call of 'app::twin_b' in the trace`: the
    name a reading command accepts depends on the command."""
    if not shutil.which("ld.lld"):
        raise Skip("ld.lld not installed (identical code folding needs lld's --icf=all)")
    exe = build_c("icf_twins", ["icf_twins.cc"], compiler="clang++",
                  flags=["-ffunction-sections", "-fuse-ld=lld", "-Wl,--icf=all"])
    _, log = record([exe], args=["-q"])
    got = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none", "-F", "^app::twin_b", log]).stdout.splitlines()
    got = [ln for ln in got if not ln.startswith("# ")]  # the net-times header
    eq(got, ["app::twin_b();"] * 2, "replay -F ^app::twin_b")
    p = run([SFTRACE, "graph", "-q", "app::twin_b", log], check_rc=None)
    eq(p.returncode, 0, "graph app::twin_b exit status (stderr %r)" % p.stderr)
    check("(2) app::twin_b" in p.stdout, "graph counts the two calls under the alias: %r" % p.stdout)


def test_snapshot_end_is_not_called_thread_end():
    """FAILS NOW. A flight-recorder snapshot (--ring, --trigger '^leaf$')
    taken at main's first leaf call: replay prints `/* 3 frames open at
    thread end */` and info says `3 open at thread end`, `running, or died
    without its exit hooks`, though the thread and the process went on
    (the full log holds the whole run, exited). The frames were open at the
    snapshot's end: a window edge, as `--time` says `cut at window end`."""
    exe = build_c("skep28_mutual", ["skep28_mutual.c"], flags=["-O0"])
    d = tmpdir()
    record([exe, "50"], out=os.path.join(d, "sf.log"),
           args=["-q", "--ring", "128K", "--trigger", "^leaf$", "--max-snapshots", "1"])
    snaps = sorted(f for f in os.listdir(d) if ".snap." in f)
    eq(len(snaps), 1, "one snapshot")
    snap = os.path.join(d, snaps[0])
    lines = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none", snap]).stdout.splitlines()
    lines = [ln for ln in lines if not ln.startswith("# ")]  # the net-times header
    eq(lines[:3], ["main() {", "  foo() {", "    leaf();"], "the snapshot's calls")
    check(not any("thread end" in ln for ln in lines), "replay says the thread ended: %r" % lines)
    text = run([SFTRACE, "info", "-q", snap]).stdout
    check("open at thread end" not in text.replace("0 open at thread end", ""),
          "info says frames were open at thread end")


def test_report_srcline():
    """FAILS NOW. Issue 28 item 4: "--srcline in replay and report shows
    each function's file:line from DWARF". replay has it; `sftrace report
    --srcline` is refused (`report: unrecognized option '--srcline'`), and
    report has no other source-line option."""
    exe = build_c("skep28_abc", ["skep28_abc.c"], flags=["-O0"])
    _, log = record([exe], args=["-q"])
    p = run([SFTRACE, "report", "--srcline", log], check_rc=None)
    eq(p.returncode, 0, "report --srcline exit status (stderr %r)" % p.stderr)
    src = os.path.join(FIXTURES, "skep28_abc.c")
    for func, line in (("main", 8), ("a", 6), ("b", 5), ("c", 4)):
        check(re.search(r"\b%s\b.*%s:%d" % (func, re.escape(src), line), p.stdout),
              "report shows %s at %s:%d: %r" % (func, src, line, p.stdout))


def test_log_cut_at_a_page_boundary_is_not_silent():
    """FAILS NOW. A log cut short (copied mid-run, disk full, a partial
    download) at a 4 KiB boundary: replay, graph and info read it with no
    warning and exit 0. Cut at 4096 or 8192 bytes, the 3,000-deep recursion
    reads as a complete run of 0 events (`exit state: exited`); on a
    threaded run cut at a chunk boundary, three threads of four vanish
    while the header's own counters say 4 threads. Only a cut mid-chunk
    warns `truncated`."""
    exe = build_c("skep28_mutual", ["skep28_mutual.c"], flags=["-O0"])
    _, log = record([exe, "3000"], args=["-q"])
    with open(log, "rb") as f:
        data = f.read()
    d = tmpdir()
    for n in sorted({4096, 8192, len(data) // 2 // 4096 * 4096}):
        if n >= len(data):
            continue
        cut = os.path.join(d, "cut%d.log" % n)
        with open(cut, "wb") as f:
            f.write(data[:n])
        for cmd in (["replay", "--no-pager"], ["graph"], ["info"]):
            p = run([SFTRACE] + cmd + [cut], check_rc=None)
            check(p.returncode != 0 or "truncated" in p.stderr,
                  "%s on the log cut at %d of %d bytes: rc %d, stderr %r" % (cmd[0], n, len(data), p.returncode,
                                                                             p.stderr))


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import (FIXBUILD, FIXTURES, SFTRACE, Skip, _stale, build_c, check, eq, record, run,  # noqa: E402
                   tmpdir)


def libtest_fixture():
    """tests/fixtures/skep28_libtest.rs built as a libtest binary (rustc
    --test), XRay on every function."""
    src = os.path.join(FIXTURES, "skep28_libtest.rs")
    out = os.path.join(FIXBUILD, "skep28_libtest")
    os.makedirs(FIXBUILD, exist_ok=True)
    if _stale(out, [src]):
        rustc = shutil.which("rustc") or os.path.expanduser("~/.cargo/bin/rustc")
        run([rustc, "--test", "-g", "-Zinstrument-xray=always", "-o", out, src], env={"RUSTC_BOOTSTRAP": "1"})
    return out


def test_libtest_thread_label_is_the_test_not_the_allocator():
    """FAILS NOW. Issue 28 item 7: where Linux cut a thread's name to 15
    characters, the label shows "the thread's first outermost function
    (for libtest, the test's closure)". On a libtest binary each test
    thread (name `parser_tests_mo`, cut) first runs std's thread start-up,
    whose outermost calls are __rust_dealloc/__rust_alloc: every test thread
    is labelled `parser_tests_mo (__rustc::__rust_dealloc)` in report
    --threads, replay and Perfetto; the test (lt's closure
    parses_a_long_expression_name) is not named anywhere in the label."""
    exe = libtest_fixture()
    _, log = record([exe, "--test-threads=1"], args=["-q"])
    out = run([SFTRACE, "report", "--threads", log]).stdout
    heads = sorted(re.findall(r"^== thread (parser_tests_mo.*?) \(tid \d+\)", out, re.M))
    eq(len(heads), 2, "two test threads")
    for h in heads:
        check("__rust_" not in h, "label names the allocator: " + h)
    check(any("parses_a_long_expression_name" in h for h in heads),
          "one label names the test parses_a_long_expression_name: %r" % heads)
    check(any("parses_another_expression" in h for h in heads),
          "one label names the test parses_another_expression: %r" % heads)


def exit_info(how):
    exe = build_c("skep28_exit", ["skep28_exit.c"])
    p, log = record([exe, how], args=["-q"], check_rc=None)
    text = run([SFTRACE, "info", log]).stdout
    state = re.search(r"^# exit state\s*: (.*)$", text, re.M).group(1)
    js = json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)
    return p.returncode, state, js["processes"][0]["exit_state"]


def test_info_exit_state_gives_the_exit_code():
    """FAILS NOW. Issue 28 item 3: info shows the exit state. A program that
    calls exit(3) (record itself exits 3) is shown as `exited`, in text and
    JSON, with no code: a run that failed reads like one that succeeded
    (uftrace info: `exit status : exited with code: 3`)."""
    rc, state, js = exit_info("exit3")
    eq(rc, 3, "record's exit code")
    check(re.search(r"\b3\b", state), "exit state names code 3: %r" % state)
    check(re.search(r"\b3\b", js), "JSON exit_state names code 3: %r" % js)


def test_info_exit_state_names_the_signal():
    """FAILS NOW. A program killed by SIGTERM (record exits 143) is shown as
    `running, or died without its exit hooks`: info does not say it was
    killed, nor by which signal, though record waited for it and saw the
    signal (uftrace info: `terminated by signal: 15`)."""
    rc, state, js = exit_info("term")
    eq(rc, 143, "record's exit code")
    check(re.search(r"SIGTERM|signal 15", state), "exit state names SIGTERM: %r" % state)
    check("running" not in state, "a killed process is not 'running': %r" % state)
    check(re.search(r"SIGTERM|signal 15", js), "JSON exit_state names SIGTERM: %r" % js)


def test_info_pre_exec_image_is_not_running():
    """FAILS NOW. A child that forks, calls child_work and then execs: the
    log of its pre-exec image says exit state `running, or died without its
    exit hooks`, though the same pid's next log shows it went on (exec)."""
    exe = build_c("skep28_forkexec", ["skep28_forkexec.c"])
    d = tmpdir()
    record([exe], out=os.path.join(d, "sf.log"), args=["-q"])
    js = json.loads(run([SFTRACE, "info", "--format", "json", d]).stdout)
    procs = js["processes"]
    eq(len(procs), 3, "parent, child before exec, child after exec")
    child = [p for p in procs if p["argv"][1:] == ["exec"]]
    eq(len(child), 1, "one exec'd image")
    pre = [p for p in procs if p["pid"] == child[0]["pid"] and p is not child[0]]
    eq(len(pre), 1, "one pre-exec image")
    check("running" not in pre[0]["exit_state"] and "died" not in pre[0]["exit_state"],
          "pre-exec image's exit state: %r" % pre[0]["exit_state"])


def test_truncated_log_info_says_so():
    """FAILS NOW. A log cut in half (a copy taken mid-run, a full disk):
    info's stdout (text and JSON) keeps the header's `exited`, counts one
    thread of four and says `repaired: 0 ...`, as for a complete recording;
    the truncation is only a stderr warning, which a JSON reader never
    sees."""
    exe = build_c("skep28_mutual", ["skep28_mutual.c"], flags=["-O0"])
    _, log = record([exe, "3000"], args=["-q"])
    cut = os.path.join(tmpdir(), "half.log")
    with open(log, "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    text = run([SFTRACE, "info", "-q", cut]).stdout
    check("truncated" in text, "info's text output says the log is truncated")
    js = run([SFTRACE, "info", "-q", "--format", "json", cut]).stdout
    check("truncated" in js, "info's JSON says the log is truncated")


def test_nested_filter_matches_reset_depth_as_uftrace():
    """FAILS NOW. Issue 28 item 7: -F/-N "as uftrace's replay has". With
    nested matches, uftrace's depth limit counts from the innermost match:
    on even(6)/odd mutual recursion, `uftrace replay -F odd -D 1` (uftrace
    v0.16 on the -pg twin of skep28_mutual.c) prints odd { odd { odd(); } }
    and `-F even -D 2` prints the whole even/odd chain. sftrace's
    `--max-depth` counts from the outermost match only and prints one
    `odd();` and `even() { odd(); }`."""
    exe = build_c("skep28_mutual", ["skep28_mutual.c"], flags=["-O0"])
    _, log = record([exe, "6"], args=["-q"])

    def calls(*opts):
        out = run([SFTRACE, "replay", "--no-pager", "-q", "-f", "none"] + list(opts) + [log]).stdout
        return [ln for ln in out.splitlines() if not ln.startswith("# ")]  # the net-times header
    eq(calls("-F", "odd", "--max-depth", "1"),
       ["odd() {", "  odd() {", "    odd();", "  } /* odd */", "} /* odd */"], "-F odd --max-depth 1")
    eq(calls("-F", "even", "--max-depth", "2"),
       ["even() {", "  odd() {", "    even() {", "      odd() {", "        even() {", "          odd() {",
        "            even();", "          } /* odd */", "        } /* even */", "      } /* odd */",
        "    } /* even */", "  } /* odd */", "} /* even */"], "-F even --max-depth 2")


if __name__ == "__main__":
    sfkit.main(globals())
