"""Skeptic's second pass on issue 28 (replay/graph/info: tail-call marks,
exit states, truncated logs, snapshot ends, thread labels): programs written
to break the claims (fixtures tests/fixtures/skep28b_*), not taken from the
developers' tests. A case that found a break skips as a known break until
it is fixed; the others show a claim held under that attack.

Runs under tests/run.py."""
import os
import re
import shutil
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sfkit  # noqa: E402


_calls = sfkit.call_column
_replay = sfkit.replay_text


def test_tail_mark_not_given_to_a_real_call_after_a_tail_call_into_libc():
    # a(0) tail-calls strlen (untraced); a's code also holds `jmp b` for a(x!=0).
    # main then calls b itself: that b is no tail call from a.
    prog = sfkit.build_c("skep28b_tailcond", ["skep28b_tailcond.c"])
    _, log = sfkit.record([prog], args=["-q"])
    sfkit.eq(_calls(_replay(log)), ["main() {", "  a();", "  b();", "  a();", "  b(); /* tail call from a */",
                                    "} /* main */"], "replay call column")
    g = sfkit.run([sfkit.SFTRACE, "graph", "main", log]).stdout
    sfkit.check("(1) b /* tail call from a */" in g and "(1) b\n" in g, g)


def test_tail_chain_and_mutual_recursion_by_tail_call_marked():
    prog = sfkit.build_c("skep28b_tailchain", ["skep28b_tailchain.c"])
    _, log = sfkit.record([prog], args=["-q"])
    want = ["main() {", "  c1();", "  c2(); /* tail call from c1 */", "  c3(); /* tail call from c2 */",
            "  leaf(); /* tail call from c3 */", "  iseven();"]
    for i in range(5):
        want.append("  isodd(); /* tail call from iseven */" if i % 2 == 0 else
                    "  iseven(); /* tail call from isodd */")
    # tolibc tail-calls strlen: the next call (after) is not marked.
    want += ["  tolibc();", "  after();", "} /* main */"]
    sfkit.eq(_calls(_replay(log)), want, "replay call column")


def test_tail_call_into_libc_that_calls_back_not_marked():
    # find/sortit tail-call bsearch/qsort, which call the traced cmp back.
    prog = sfkit.build_c("skep28b_tailcb", ["skep28b_tailcb.c"])
    _, log = sfkit.record([prog], args=["-q"])
    sfkit.eq(_calls(_replay(log)), ["main() {", "  find() {", "    cmp();", "  } /* find */", "  sortit();",
                                    "  cmp();", "  cmp();", "  cmp();", "  cmp();", "  viahidden();",
                                    "  target();", "} /* main */"], "replay call column")


def _exit_state(path):
    out = sfkit.run([sfkit.SFTRACE, "info", path]).stdout
    return [ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("# exit state")]


def test_exit_states_in_info():
    prog = sfkit.build_c("skep28b_exits", ["skep28b_exits.c"], libs=["-lpthread"])
    cases = {"t": (5, ["exited 5"]), "g": (9, ["exited 9"]), "a": (134, ["killed by SIGABRT (signal 6)"]),
             "r": (4, ["exited 4"]), "x": (7, ["exited 7"]), "s": (139, ["killed by SIGSEGV (signal 11)"])}
    for mode, (rc, want) in cases.items():
        d = sfkit.tmpdir()
        sfkit.record([prog, mode], out=os.path.join(d, "sf.log"), args=["-q"], check_rc=rc)
        sfkit.eq(_exit_state(d), want, "exit state, mode " + mode)
        shutil.rmtree(d)
    # A child reaped by its traced parent, not by record: _exit's and exit()'s codes are
    # kept; a raw exit_group syscall leaves it unknown, and info says so.
    kids = {"y": "exited 7 (_exit)", "c": "exited 6 (exit, or main's return)",
            "z": "unknown (no exit record: running, or it died and sftrace record did not reap it)"}
    for mode, want in kids.items():
        d = sfkit.tmpdir()
        sfkit.record([prog, mode], out=os.path.join(d, "sf.log"), args=["-q"])
        child = [f for f in os.listdir(d) if f != "sf.log"]
        sfkit.eq(len(child), 1, "child logs " + repr(child))
        sfkit.eq(_exit_state(os.path.join(d, child[0])), [want], "child exit state, mode " + mode)
        sfkit.eq(_exit_state(os.path.join(d, "sf.log")), ["exited 0"], "parent exit state, mode " + mode)
        shutil.rmtree(d)
    # exec of itself: the first image exec'd, the second exited 4 (read as a directory).
    d = sfkit.tmpdir()
    sfkit.record([prog, "e"], out=os.path.join(d, "sf.log"), args=["-q"], check_rc=4)
    sfkit.eq(_exit_state(d), ["exec'd (the same pid's next log is its new image)", "exited 4"], "exec")
    shutil.rmtree(d)


def _chunks(data):
    off, res = 4096, []
    while off < len(data):
        if data[off:off + 4] == b"SFCK":
            size = struct.unpack_from("<I", data, off + 8)[0]
            res.append(off)
            off += size
        else:
            off += 16
    return res


def test_log_cut_at_every_chunk_boundary_warns_once_in_every_command():
    prog = sfkit.build_c("skep28b_many", ["skep28b_many.c"], libs=["-lpthread"])
    _, log = sfkit.record([prog], args=["-q"], check_rc=3)
    data = open(log, "rb").read()
    total = struct.unpack_from("<Q", data, 3320)[0]
    offs = _chunks(data)
    sfkit.eq(len(offs), total, "chunks in the whole file")
    d = sfkit.tmpdir()
    cut = os.path.join(d, "sf.log")
    for i, off in enumerate(offs):
        with open(cut, "wb") as f:
            f.write(data[:off])
        want = f"truncated: the file holds {i} of the {total} chunks"
        for cmd in (["info"], ["replay", "--no-pager"], ["report"], ["graph"]):
            p = sfkit.run([sfkit.SFTRACE] + cmd + [cut])
            sfkit.eq(p.stderr.count(want), 1, f"{cmd[0]} warning at offset {off}")
        sfkit.eq(_exit_state(cut), ["exited 3 (log truncated: the file ends before chunks the runtime wrote)"],
                 f"info at offset {off}")
    shutil.rmtree(d)


def test_snapshot_end_frames_named_as_such():
    prog = sfkit.build_c("skep28b_snap", ["skep28b_snap.c"], libs=["-lpthread"])
    d = sfkit.tmpdir()
    sfkit.record([prog], out=os.path.join(d, "sf.log"), args=["-q", "--ring", "128K", "--trigger", "^boom$"])
    snaps = sorted(f for f in os.listdir(d) if ".snap." in f)
    sfkit.check(len(snaps) >= 1, snaps)
    snap = os.path.join(d, snaps[0])
    out = _replay(snap)
    sfkit.check("open at the snapshot's end */" in out and "open at thread end" not in out, out)
    sfkit.eq(_exit_state(snap), ["running (a snapshot, taken while it ran)"], "snapshot exit state")
    info = sfkit.run([sfkit.SFTRACE, "info", snap]).stdout
    sfkit.check("0 open at thread end, 6 open at the snapshot's end" in info, info)
    dump = sfkit.run([sfkit.SFTRACE, "dump", "--names", "short", snap]).stdout
    sfkit.eq(dump.count("(repaired: open at the snapshot's end)"), 6, "dump's repaired frames")
    js = os.path.join(d, "x.json")
    sfkit.run([sfkit.SFTRACE, "convert", "-t", "chrome", "-o", js, snap])
    sfkit.eq(open(js).read().count('"end":"snapshot end"'), 6, "Chrome JSON frames ended by the snapshot")
    shutil.rmtree(d)


def test_rust_thread_label_is_the_threads_own_function():
    # Threads named past 15 characters, spawned on a closure that calls a user function:
    # the label should be that function, not std's closure shim.
    prog = sfkit.rust_fixture("skep28b_threads")
    _, log = sfkit.record([prog], args=["-q"])
    out = _replay(log)
    labels = sorted(ln for ln in out.splitlines() if ln.startswith("# thread "))
    sfkit.eq([ln.split(": ", 1)[1] for ln in labels].count("ast::parse::tes (skep28b_threads::parse_numbers_worker)")
             + [ln.split(": ", 1)[1] for ln in labels].count("ast::parse::tes (skep28b_threads::tokenize_identifiers_worker)"),
             2, "labels " + repr(labels))


def test_graph_backtrace_marks_a_tail_call_on_the_path():
    # leaf is reached by c1 -> c2 -> c3 -> leaf, all tail calls: replay and the call
    # graph mark `leaf` as a tail call from c3, the backtrace shows `main -> leaf` bare.
    prog = sfkit.build_c("skep28b_tailchain", ["skep28b_tailchain.c"])
    _, log = sfkit.record([prog], args=["-q"])
    g = sfkit.run([sfkit.SFTRACE, "graph", "leaf", log]).stdout
    bt = [ln.strip() for ln in g.split("BACKTRACE", 1)[1].split("CALL GRAPH", 1)[0].splitlines() if "] " in ln]
    sfkit.eq(len(bt), 2, "backtrace frames " + repr(bt))
    sfkit.check(bt[1].startswith("[1] leaf (") and bt[1].endswith("/* tail call from c3 */"), repr(bt))


def _rust_test_fixture(name):
    """A single-file libtest binary (rustc --test) with XRay sleds; cached."""
    src = os.path.join(sfkit.FIXTURES, name + ".rs")
    out = os.path.join(sfkit.FIXBUILD, name)
    os.makedirs(sfkit.FIXBUILD, exist_ok=True)
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        rustc = shutil.which("rustc") or os.path.expanduser("~/.cargo/bin/rustc")
        sfkit.run([rustc, "--test", "-O", "-g", "-Zinstrument-xray=always", "-o", out, src],
                  env={"RUSTC_BOOTSTRAP": "1"})
    return out


def test_libtest_thread_label_is_its_test():
    # Two tests whose names Linux cuts to `tests::parses_f` / `tests::parses_n`; each thread's
    # first own function is `<lt::tests::NAME::{closure} as FnOnce<…>>::call_once` (the test),
    # which calls lt::parse. The label should name the test, not the function the test calls.
    prog = _rust_test_fixture("skep28b_libtest")
    _, log = sfkit.record([prog, "--test-threads=2"], args=["-q"])
    q = sfkit.run([sfkit.SFTRACE, "query", log, "select label from threads order by label"]).stdout.split()
    labels = [ln for ln in sfkit.run([sfkit.SFTRACE, "replay", "--no-pager", log]).stdout.splitlines()
              if ln.startswith("# thread ")]
    got = sorted(ln.split(": ", 1)[1] for ln in labels)
    sfkit.eq(len(got), 2, "labels " + repr(got))
    for lab, test in zip(got, ["parses_flat_parentheses", "parses_nested_parentheses"]):
        # the test itself, or its closure (the issue: "for libtest, the test's closure")
        sfkit.check(re.fullmatch(r"tests::parses_[fn] \(skep28b_libtest::tests::%s(::\{closure\})?\)" % test, lab),
                    "label " + repr(lab))
    sfkit.check(any("parses_flat_parentheses" in x for x in q), q)


def test_exit_state_of_a_process_killed_by_another():
    import signal
    import subprocess
    import time
    prog = sfkit.build_c("skep28b_exits", ["skep28b_exits.c"], libs=["-lpthread"])
    d = sfkit.tmpdir()
    log = os.path.join(d, "sf.log")
    rec = subprocess.Popen([sfkit.SFTRACE, "record", "-q", "-o", log, "--", prog, "k"])
    pid = None
    for _ in range(200):  # the log appears with main's first event; then the program waits in pause()
        if os.path.exists(log):
            out = sfkit.run([sfkit.SFTRACE, "info", log], check_rc=None).stdout
            pids = [ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("# pid ")]
            if pids:
                pid = int(pids[0])
                break
        time.sleep(0.05)
    sfkit.check(pid is not None, "no log")
    time.sleep(0.2)
    os.kill(pid, signal.SIGTERM)
    sfkit.eq(rec.wait(timeout=60), 128 + 15, "record's exit status")
    sfkit.eq(_exit_state(log), ["killed by SIGTERM (signal 15)"], "exit state")
    shutil.rmtree(d)
