"""Skeptic's pass 28x on issue 28 (exact tail-call marks, kinds 15 and 3;
the shared pager options): programs written to break the claims (fixtures
tests/fixtures/skep28x_*), not taken from the developers' tests. A case that
found a break skips as a known break until it is fixed; the others show a
claim held under that attack.

Runs under tests/run.py."""
import os
import pty
import re
import select
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sfkit  # noqa: E402


_calls = sfkit.call_column
_replay = sfkit.replay_text


def _tty_run(cmd, env):
    """Runs cmd with stdin, stdout and stderr on a pty; returns (exit code,
    everything the terminal received)."""
    master, slave = pty.openpty()
    full = dict(os.environ)
    full.update(env)
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=full, close_fds=True)
    os.close(slave)
    got = b""
    while True:
        r, _, _ = select.select([master], [], [], 10)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the pty
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    return p.wait(timeout=30), got.decode(errors="replace")


def _tailshapes_log():
    prog = sfkit.build_c("skep28x_tailshapes", ["skep28x_tailshapes.c"])
    _, log = sfkit.record([prog], args=["-q"])
    return log


def test_tail_marks_exact_for_every_shape_inside_one_object():
    # disp: three conditional tail calls and one plain return; even/odd: mutual
    # tail recursion; viaptr: `jmp *table(,%rdi,8)` (indirect: never marked);
    # sw: a jump table of six tail calls; tostrlen(0) jumps to strlen, and
    # main's own b() after it is no tail call although tostrlen can jump to b.
    col = _calls(_replay(_tailshapes_log()))
    want = ["main() {", "  disp();",
            "  disp();", "  b(); /* tail call from disp */",
            "  disp();", "  c(); /* tail call from disp */",
            "  disp();", "  d(); /* tail call from disp */",
            "  even();", "  odd(); /* tail call from even */", "  even(); /* tail call from odd */",
            "  odd(); /* tail call from even */", "  even(); /* tail call from odd */",
            "  viaptr();", "  c();"]
    for callee in ["b", "c", "d", "b", "c", "d"]:
        want += ["  sw();", f"  {callee}(); /* tail call from sw */"]
    want += ["  sw();", "  tostrlen();", "  b();", "} /* main */"]
    sfkit.eq(col, want, "replay call column")


def test_tail_marks_in_graph_keep_tail_callees_apart():
    g = sfkit.run([sfkit.SFTRACE, "graph", "--no-pager", "main", _tailshapes_log()]).stdout
    for node in ["(2) b /* tail call from sw */", "(1) b /* tail call from disp */", "(2) c /* tail call from sw */",
                 "(2) odd /* tail call from even */", "(2) even /* tail call from odd */", "(1) c\n", "(1) b\n",
                 "(7) sw", "(4) disp", "(1) even\n"]:
        sfkit.check(node in g, f"{node!r} missing in graph:\n{g}")


def test_plt_tail_mark_not_given_to_the_callers_own_call():
    """Was a known break (issue 28): after a(0) tail-calls strlen through the
    PLT (kind 3, untraced), main's own `lib_f2(3)` (another object, traced)
    opens at a's depth and was drawn `lib_f2(); /* tail call from a */`:
    kind 3 says nothing about which PLT slot the jump took, and the reader
    marked any PLT target of a by name. The rule now (docs/DESIGN.md, "Which
    jump a tail call took"): after kind 3 the next frame is marked only when
    its function is the one name among the tail caller's jumps that may log
    kind 3. a jumps through the PLT to lib_f2 and to strlen, so neither of
    a's kind-3 tail calls is marked (a(2)'s real one into lib_f2 included:
    a missing mark, never a wrong one); viaplt's only tail jump goes to
    lib_g2, so its mark stays. Graph: no node marked from a."""
    fixdir = sfkit.FIXBUILD
    sfkit.build_c("libskep28x_plt.so", ["skep28x_plt_lib.c"], shared=True)
    prog = sfkit.build_c("skep28x_plt_mark", ["skep28x_plt_mark.c"],
                         libs=["-L" + fixdir, "-lskep28x_plt", "-Wl,-rpath," + fixdir])
    p, log = sfkit.record([prog], args=["-q"])
    sfkit.eq(p.stdout, "1\n", "program output")
    sfkit.eq(_calls(_replay(log)), ["main() {", "  a();", "  lib_f2();", "  a();",
                                    "  lib_f2();", "  viaplt();",
                                    "  lib_g2(); /* tail call from viaplt */", "} /* main */"], "replay call column")
    g = sfkit.run([sfkit.SFTRACE, "graph", "--no-pager", "main", log]).stdout
    sfkit.check("tail call from a " not in g and "(2) lib_f2\n" in g and
                "(1) lib_g2 /* tail call from viaplt */" in g, g)


def test_plt_tail_mark_needs_every_other_kind3_jump_decoded():
    # a and b have one PLT tail target each (lib_f2), but a can also jump
    # through a pointer and b to a function without sleds: after a(0) and
    # b(0) the lib_f2 that opens next (main's own; never's) is not theirs.
    # Before the rule both were drawn `lib_f2(); /* tail call from a/b */`.
    fixdir = sfkit.FIXBUILD
    sfkit.build_c("libskep28x_plt.so", ["skep28x_plt_lib.c"], shared=True)
    prog = sfkit.build_c("tailplt_mixed", ["tailplt_mixed.c"],
                         libs=["-L" + fixdir, "-lskep28x_plt", "-Wl,-rpath," + fixdir])
    dis = sfkit.run(["objdump", "-d", "--no-show-raw-insn", prog]).stdout
    body = dis[dis.index("<a>:"):]
    sfkit.check(re.search(r"jmp\s+\*%r", body[:body.index("\n\n")]), "precondition: a's indirect tail jump")
    p, log = sfkit.record([prog], args=["-q"])
    sfkit.eq(p.stdout, "1\n", "program output")
    sfkit.eq(_calls(_replay(log)), ["main() {", "  a();", "  lib_f2();", "  b();", "  lib_f2();", "  viaplt();",
                                    "  lib_g2(); /* tail call from viaplt */", "} /* main */"], "replay call column")


def test_pager_that_cannot_run_loses_no_output():
    """Known break (issue 28 open): on a terminal, PAGER=/nonexistent/pager
    `sftrace replay LOG` prints only `sh: 1: /nonexistent/pager: not found`
    and exits 0: the whole replay is lost, silently as far as the exit status
    goes. git, whose paging the claim follows, says `fatal: cannot run
    /nonexistent/pager: No such file or directory` and then writes its output
    to the terminal unpaged. Fixed: the pager's program is looked up first
    (pager.c, pager_runnable); one that cannot run is named and the output
    written unpaged."""
    log = _tailshapes_log()
    rc, got = _tty_run([sfkit.SFTRACE, "replay", log], {"PAGER": "/nonexistent/pager"})
    sfkit.check("} /* main */" in got, f"replay output lost (exit {rc}): {got!r}")


def test_pager_env_chain_and_no_pager_on_a_tty():
    # $PAGER is run through the shell with its arguments; an empty
    # $SFTRACE_PAGER wins over $PAGER and means no pager; --no-pager too.
    log = _tailshapes_log()
    env = {"PAGER": "sed s/^/P:/", "SFTRACE_PAGER": ""}
    rc, got = _tty_run([sfkit.SFTRACE, "replay", log], {"PAGER": "sed s/^/P:/"})
    sfkit.eq(rc, 0, "exit status, paged")
    lines = [ln for ln in got.splitlines() if ln.strip()]
    sfkit.check(lines and all(ln.startswith("P:") for ln in lines), f"not every line paged: {got!r}")
    sfkit.check("P:" in got and "} /* main */" in got, got)
    rc, got = _tty_run([sfkit.SFTRACE, "replay", log], env)
    sfkit.eq(rc, 0, "exit status, empty SFTRACE_PAGER")
    sfkit.check("P:" not in got and "} /* main */" in got, f"empty SFTRACE_PAGER paged: {got!r}")
    rc, got = _tty_run([sfkit.SFTRACE, "graph", "--no-pager", "main", log], {"PAGER": "sed s/^/P:/"})
    sfkit.eq(rc, 0, "exit status, --no-pager")
    sfkit.check("P:" not in got and "(7) sw" in got, f"--no-pager paged: {got!r}")


def _tailcut_log():
    prog = sfkit.build_c("skep28x_tailcut", ["skep28x_tailcut.c"])
    p, log = sfkit.record([prog], args=["-q"])
    sfkit.eq(p.stdout, "1\n", "program output")
    return log


def test_tail_mark_uncut_log():
    # Without a cut the kind-15 mark is right: b is a's tail callee, c is not.
    sfkit.eq(_calls(_replay(_tailcut_log())), ["main() {", "  a();", "  b(); /* tail call from a */", "  c();",
                                               "} /* main */"], "replay call column")


def test_tail_mark_survives_a_cut_that_removes_the_tail_callee():
    """Known break (issue 28 open): a(1) jumps to b (kind 15: a direct jump
    to a traced entry); main then calls c itself, and a's code also holds
    `jmp c`. `replay --min-duration 10us` (and `-N '^b$'`, and a log recorded
    with `record --min-duration 10us`, whose cut the reader applies) leaves b
    out, then draws main's own call as `c(); /* tail call from a */` (95 us);
    graph: `(1) c /* tail call from a */`. The uncut log shows `b(); /* tail
    call from a */` then `c();`. The mark is decided after the cut, on the
    next frame at a's depth, where it should be decided on the recorded
    events before anything is cut."""
    log = _tailcut_log()
    for extra in (["--min-duration", "10us"], ["-N", "^b$"]):
        sfkit.eq(_calls(_replay(log, extra)), ["main() {", "  a();", "  c();", "} /* main */"],
                 f"replay {extra} call column")
    g = sfkit.run([sfkit.SFTRACE, "graph", "--no-pager", "--min-duration", "10us", "main", log]).stdout
    sfkit.check("tail call from a" not in g, g)


def test_tail_mark_survives_the_runtime_trim():
    # record --min-duration: the runtime's trim keeps a call that begins
    # right after a kept tail call (b here, 10 ns), so the reader, which
    # applies the exact cut, drops b with its mark and leaves main's c
    # unmarked. Dropped by the runtime, b left c right after a's tail call.
    prog = sfkit.build_c("tailcut_trim", ["tailcut_trim.c"])
    p, log = sfkit.record([prog], args=["-q", "--min-duration", "10us"])
    sfkit.eq(p.stdout, "1\n", "program output")
    names = [e.name for e in sfkit.dump_events(log) if e.name != "tiny"]
    sfkit.eq(names, ["main", "tailcut_main", "a", "a", "b", "b", "c", "c", "tailcut_main", "main"],
             "events the runtime kept")
    col = [ln for ln in _calls(_replay(log)) if ln != "  tiny();"]  # one may last 10 us on a busy machine
    sfkit.eq(col, ["main() {", "  tailcut_main() {", "    a();", "    c();", "  } /* tailcut_main */",
                   "} /* main */"], "replay call column")


def test_tail_mark_on_a_short_jmp():
    """Known break (issue 28 open): pick() tail-calls near() and far() with
    2-byte `jmp rel8` (`eb 2b`, `eb 4d` in clang 14's -O2 build: the callees
    sit right after pick). The runtime decodes rel8 jumps
    (sf_arch_tail_target) and logs kind 15, but the reader's decoder
    (branch_target in src/lib/symbols.c) knows only `e8`/`e9` and the GOT
    forms, so sym_tail_targets finds no target and the mark is lost: replay
    shows `near();` and `far();` where it should show `near(); /* tail call
    from pick */` and `far(); /* tail call from pick */`. The same happens in
    a shared library (DT_NEEDED or dlopen'd) whose static helpers follow
    their caller; memory's tail claims read the same targets. Fixed:
    branch_target decodes `jmp rel8`."""
    prog = sfkit.build_c("skep28x_shortjmp", ["skep28x_shortjmp.c"])
    dis = sfkit.run(["objdump", "-d", prog]).stdout
    sfkit.check(any(re.search(r":\s+eb [0-9a-f]{2}\s+jmp .*<near>", ln) for ln in dis.splitlines()),
                "precondition: jmp rel8 to near")
    p, log = sfkit.record([prog], args=["-q"])
    sfkit.eq(p.stdout, "1\n", "program output")
    sfkit.eq(_calls(_replay(log)), ["main() {", "  pick();", "  near(); /* tail call from pick */", "  pick();",
                                    "  far(); /* tail call from pick */", "  pick();", "} /* main */"],
             "replay call column")


def test_ring_window_start_shows_where_it_cut():
    """Known break (issue 28 open): `record --ring 128K` of main -> outer ->
    300000 leaf calls keeps the newest 5449 leaf calls; main and outer began
    before the ring's window. stderr says `repaired: 2 frames began before the
    ring's window`, but replay draws `main() {` / `outer() {` with no comment
    and closes them with `7.325 us ... } /* outer */`, `37.098 us ... } /*
    main */` as if those were their durations (the run took 26 ms; graph's
    process line says 26.362 ms). A `--time` cut marks the same repair
    `/* cut at window start */`; the claim lists it among the repairs shown
    as comments where they happen. Fixed: the reader's placed entries open
    frames marked CUT_START (frames.c), which replay comments."""
    prog = sfkit.build_c("skep28x_ringstart", ["skep28x_ringstart.c"])
    p, log = sfkit.record([prog], args=["-q", "--ring", "128K"])
    sfkit.eq(p.stdout, "1\n", "program output")
    col = _calls(_replay(log))
    sfkit.eq(col[:2], ["main() { /* cut at window start */", "  outer() { /* cut at window start */"],
             "frames open at the ring's start")


def test_ring_fixture_whole_without_ring():
    # Control for the ring case: without --ring, every frame and all 300000
    # leaf calls, with no comment.
    prog = sfkit.build_c("skep28x_ringstart", ["skep28x_ringstart.c"])
    _, log = sfkit.record([prog], args=["-q"])
    first = [ln for ln in _calls(_replay(log)) if not ln.strip().startswith("leaf")]
    sfkit.eq(first, ["main() {", "  outer() {", "  } /* outer */", "} /* main */"], "uncut frames")
    leaves = [ln for ln in _calls(_replay(log)) if ln.strip() == "leaf();"]
    sfkit.eq(len(leaves), 300000, "leaf calls")
