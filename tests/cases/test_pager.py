"""Paging as git does (issue 28): every reading command that prints text
takes --pager and --no-pager from one shared parser; replay and graph page
on a terminal by default, report, info, query and dump only with --pager.
The terminal is a pty; the pager a shell command that records what it got.

Runs under tests/run.py."""
import os
import pty
import re
import subprocess
import threading

import sfkit

READERS = {"replay": [], "graph": [], "report": [], "info": [], "dump": [],
           "query": ["SELECT name FROM functions WHERE name = 'main'"]}
BY_DEFAULT = {"replay", "graph"}


def _on_tty(cmd, pager_out, env=None):
    """Runs cmd with stdout on a pty and a pager that writes PAGED, then its
    input, to pager_out. Returns (exit status, stderr, what reached the pty)."""
    master, slave = pty.openpty()
    full = dict(os.environ, SFTRACE_PAGER="{ echo PAGED; cat; } > " + pager_out)
    full.update(env or {})
    full.pop("NO_COLOR", None)
    got = []

    def drain():
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                return
            if not b:
                return
            got.append(b)
    t = threading.Thread(target=drain)
    t.start()
    p = subprocess.run(cmd, stdout=slave, stderr=subprocess.PIPE, env=full, timeout=60)
    os.close(slave)
    t.join(timeout=10)
    os.close(master)
    return p.returncode, p.stderr.decode(errors="replace"), b"".join(got).decode(errors="replace")


def _log():
    prog = sfkit.build_c("skep28b_tailcond", ["skep28b_tailcond.c"])
    _, log = sfkit.record([prog], args=["-q"])
    return log


def test_pager_options_in_every_reading_command():
    log = _log()
    d = sfkit.tmpdir()
    for cmd, extra in READERS.items():
        plain = sfkit.run([sfkit.SFTRACE, cmd, log] + extra).stdout
        sfkit.check(plain, cmd + " printed nothing")
        for opts, paged in (([], cmd in BY_DEFAULT), (["--no-pager"], False), (["--pager"], True),
                            (["--paginate"], True), (["--pager", "--no-pager"], False)):
            out = os.path.join(d, cmd + "".join(opts) + ".txt")
            rc, err, tty = _on_tty([sfkit.SFTRACE, cmd] + opts + [log] + extra, out)
            what = f"{cmd} {' '.join(opts)}"
            sfkit.eq(rc, 0, what + " exit status; stderr: " + err)
            sfkit.eq(os.path.exists(out), paged, what + " paged")
            if paged:
                text = open(out).read()
                sfkit.check(text.startswith("PAGED\n") and "main" in text, what + ": " + text)
                sfkit.check("main" not in tty, what + " wrote to the terminal too: " + tty)
            else:
                sfkit.check("main" in tty, what + " on the terminal: " + tty)
        # Not on a terminal: never paged, whatever the options.
        for opts in ([], ["--pager"], ["--no-pager"]):
            p = sfkit.run([sfkit.SFTRACE, cmd] + opts + [log] + extra,
                          env={"SFTRACE_PAGER": "{ echo PAGED; cat; } > " + os.path.join(d, "never")})
            sfkit.eq(p.stdout, plain, f"{cmd} {opts} to a pipe")
        sfkit.check(not os.path.exists(os.path.join(d, "never")), cmd + " paged into a pipe")


def test_pager_options_refused_where_nothing_pages():
    log = _log()
    for cmd in (["convert", "-t", "chrome", "-o", os.path.join(sfkit.tmpdir(), "x.json")],
                ["flamegraph", "-o", os.path.join(sfkit.tmpdir(), "x.svg")]):
        p = sfkit.run([sfkit.SFTRACE] + cmd + ["--no-pager", log], check_rc=2)
        sfkit.check("unrecognized option '--no-pager'" in p.stderr, p.stderr)


def test_pager_quit_early_is_no_error():
    # 4000 calls: more than a pipe holds. The reader reads 100 bytes and quits.
    prog = sfkit.build_c("pager_many", ["pager_many.c"])
    _, log = sfkit.record([prog], args=["-q"])
    d = sfkit.tmpdir()
    for cmd in (["replay"], ["graph"], ["dump", "--pager"], ["report", "--pager", "-n", "0"]):
        out = os.path.join(d, cmd[0])
        rc, err, _ = _on_tty([sfkit.SFTRACE] + cmd + [log], out,
                             env={"SFTRACE_PAGER": "head -c 100 > " + out})
        sfkit.eq((rc, err), (0, ""), " ".join(cmd))
        sfkit.eq(len(open(out).read()), 100, cmd[0] + " pager's input")


def test_memory_and_the_diffs_page_when_asked():
    # memory, memory --diff and report --diff page as report does: only
    # with --pager.
    # The table keeps the terminal's width (decided before the pager takes
    # stdout): a 50-column pty gives rows of at most 50 columns.
    prog = sfkit.build_c("heap_tail", ["heap_tail.c"], flags=["-fno-builtin"])
    _, log = sfkit.record([prog], args=["-q", "--alloc"])
    d = sfkit.tmpdir()
    for cmd in (["memory", log], ["memory", "--diff", log, log], ["report", "--diff", log, log]):
        plain = sfkit.run([sfkit.SFTRACE] + cmd).stdout
        sfkit.check("allocations" in plain or "grab" in plain, plain)
        out = os.path.join(d, "paged.txt")
        rc, err, tty = _on_tty([sfkit.SFTRACE, cmd[0], "--pager"] + cmd[1:], out)
        sfkit.eq((rc, err), (0, ""), " ".join(cmd))
        text = open(out).read()
        # colour stays on through the pager, as git keeps it (LESS=FRX)
        sfkit.eq(re.sub(r"\x1b\[[0-9;]*m", "", text), "PAGED\n" + plain, "the pager's input")
        sfkit.check(tty.strip() == "", "wrote to the terminal too: " + tty)
        os.unlink(out)
        rc, err, tty = _on_tty([sfkit.SFTRACE] + cmd, out)
        sfkit.eq(rc, 0, err)
        sfkit.check(not os.path.exists(out) and ("allocations" in tty or "grab" in tty), "paged without --pager: " + tty)
    p = sfkit.run([sfkit.SFTRACE, "memory", "--pager", "--interactive", log], check_rc=2)
    sfkit.check("--interactive does not go with --pager" in p.stderr, p.stderr)
