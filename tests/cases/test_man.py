"""Man pages (docs/man/*.1): each renders without a warning, and mentions
every option its command's --help lists, so the two cannot drift apart.

Runs under tests/run.py, or alone: python3 tests/cases/test_man.py."""
import os
import re
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import BUILD, ROOT, SFTRACE, Skip, check, eq, run, tmpdir  # noqa: E402

MAN = os.path.join(ROOT, "docs", "man")
COMMANDS = ["record", "filter", "convert", "replay", "graph", "info", "report", "flamegraph", "dump", "query", "memory", "snapshot", "resume", "pause"]


def render(page):
    """The page as plain text, and groff's warnings."""
    if not shutil.which("groff"):
        raise Skip("groff not installed (scripts/install-deps.sh installs groff-base)")
    p = run(["groff", "-man", "-Tutf8", "-ww", "-P", "-cbou", os.path.join(MAN, page)],
            env={"LC_ALL": "C.UTF-8"})
    return p.stdout, p.stderr


def help_options(cmd):
    """Every option spelled in `sftrace CMD --help` (or `cargo-sftrace
    --help` for "cargo"): --long and -x."""
    argv = [os.path.join(BUILD, "cargo-sftrace")] if cmd == "cargo" else [SFTRACE] + ([cmd] if cmd else [])
    text = run(argv + ["--help"]).stdout
    longs = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))
    shorts = set(re.findall(r"(?m)^\s+(-[a-zA-Z]),", text))
    return longs | shorts


def test_man_pages_render_cleanly():
    pages = sorted(f for f in os.listdir(MAN) if f.endswith(".1"))
    eq(pages, sorted(["sftrace.1", "cargo-sftrace.1"] + [f"sftrace-{c}.1" for c in COMMANDS]),
       "one page per command, and cargo sftrace's")
    for page in pages:
        text, warnings = render(page)
        eq(warnings, "", f"{page}: groff warnings")
        name = page[:-2]
        check(re.search(r"^NAME\n\s+" + re.escape(name) + r" - ", text, re.M), f"{page}: NAME section")
        for section in ("SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "SEE ALSO"):
            check(re.search(f"^{section}$", text, re.M), f"{page}: {section}")
    if shutil.which("man"):
        p = run(["man", "-l", os.path.join(MAN, "sftrace-convert.1")], env={"MANPAGER": "cat", "MANWIDTH": "80"})
        check("--min-duration" in p.stdout, "man -l renders it")


def test_man_pages_list_every_help_option():
    for cmd in COMMANDS + [None, "cargo"]:
        page = "cargo-sftrace.1" if cmd == "cargo" else f"sftrace-{cmd}.1" if cmd else "sftrace.1"
        text, _ = render(page)
        words = set(re.findall(r"(?<![\w-])--?[a-zA-Z][a-z0-9-]*", text))
        missing = sorted(help_options(cmd) - words)
        eq(missing, [], f"{page}: options of --help the page does not mention")


def test_make_install_puts_pages_in_man1():
    d = tmpdir()
    run(["make", "-s", "install", f"PREFIX={d}"], cwd=ROOT, timeout=600)
    for exe in ("sftrace", "cargo-sftrace"):  # cargo finds `cargo sftrace` next to sftrace
        check(os.access(os.path.join(d, "bin", exe), os.X_OK), f"bin/{exe} installed")
    got = sorted(os.listdir(os.path.join(d, "share", "man", "man1")))
    eq(got, sorted(f for f in os.listdir(MAN) if f.endswith(".1")), "installed pages")
    if shutil.which("man"):
        p = run(["man", "-M", os.path.join(d, "share", "man"), "sftrace-report"], env={"MANPAGER": "cat"})
        check("per-function time table" in p.stdout, p.stdout[:300])


if __name__ == "__main__":
    sfkit.main(globals())
