"""h25rwx: the protections a program gives its own text survive the
runtime's patch passes (issue 25, skeptic 25v's rwx page): what the runtime
puts back is read from /proc/self/maps at each pass, so a change the
program makes between passes (sftrace resume, its mprotect, sftrace pause)
is kept, in both directions.

Runs under tests/run.py, or alone: python3 tests/cases/test_h25rwx.py."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import build_c, count_calls, dump_events, eq, record, run  # noqa: E402

WRITER = ["--writer", "thread"]
ASAN_INNER = "verify_asan_link_order=0"  # the CLI the program runs has the runtime preloaded (CI's ASan CLI)


def _flip(mode, want_out, args=()):
    from sfkit import SFTRACE
    exe = build_c("h25rwx_flip", ["h25rwx_flip.c"])
    want = run([exe, mode])
    eq(want.stdout, want_out, "untraced")
    got, log = record([exe, mode], args=WRITER + ["--paused"] + list(args),
                      env={"SKEP_SFTRACE": SFTRACE, "ASAN_OPTIONS": ASAN_INNER}, check_rc=None)
    eq((got.returncode, got.stdout), (0, want.stdout), f"{mode}: the program's own protection after pause")
    eq(count_calls(dump_events(log))["work"], 100, "work calls while resumed")


def test_made_rwx_between_resume_and_pause_stays_rwx():
    _flip("late", "after pause: rwxp\nwrote own text\nacc=14950\n")


def test_made_rx_again_between_resume_and_pause_stays_rx():
    _flip("undo", "after pause: r-xp\nacc=14950\n")


def test_made_rwx_between_passes_regex():
    _flip("late", "after pause: rwxp\nwrote own text\nacc=14950\n", ["-r", "^work$"])


if __name__ == "__main__":
    from sfkit import main
    main(globals())
