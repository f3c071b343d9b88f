"""Attacks on the issue-24 claims (the runtime never touches the program's
descriptors, files, processes or signals; nothing in /tmp is trusted),
written by a skeptical QA pass with programs of its own. Cases marked
FAILS ON MAIN reproduce a break found at fc60acf."""
import os
import shutil
import stat
import subprocess

from sfkit import (FIXBUILD, SFTRACE, build_c, check, count_calls, dump_events, eq, record, run, tmpdir)


def test_skep_dup2_race_never_writes_into_program_file():
    # FAILS ON MAIN: the fstat check (is_log) and the pwritev are two system
    # calls; a thread that dup2s its own file over 900..1023 while two
    # threads record gets SFCK chunks written into its file (19 bytes grew
    # to 300 KB-1.1 MB in 4 of 4 runs), and `record` reports no error.
    # Claim: "never a write into another file".
    exe = build_c("skep24_dup2race", ["skep24_dup2race.c"], flags=["-pthread"])
    d = tmpdir()
    own = os.path.join(d, "own.txt")
    p, log = record([exe, own, "1"], out=os.path.join(d, "sf.log"), check_rc=None, timeout=300)
    data = open(own, "rb").read()
    os.unlink(log)  # hundreds of MB
    eq(data, b"program data 19 b\n!", "the program's own file")
    eq(p.returncode, 0, "exit status")
