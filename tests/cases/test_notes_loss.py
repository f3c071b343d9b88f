"""Issue 24: every process that gets no log is named by record with its
program and the system call that failed, carried from where it failed
(the runtime, or record's keeper's answer) in a note field: "loss CALL
ERRNO PROG<TAB>TEXT" (docs/FORMAT.md, "Runtime notes"), printed as
"sftrace: pid N (PROG) wrote no log: TEXT: CALL: ERROR". Notes in the
older form ("sftrace: cannot create log ...") still read as before."""
import glob
import os
import re

from sfkit import RUNTIME, SFTRACE, build_c, calls_fixture, eq, run, run_limited, tmpdir


def _netfork(profile):
    """record of skep24v2_netfork chroot EMPTY under a seccomp profile
    refusing PROFILE's calls with EPERM: (logs' names, record's lines
    saying a log was lost, the log directory)."""
    prof = build_c("skep24v2_prof", ["skep24v2_prof.c"], flags=["-Wall"], xray=False)
    exe = build_c("skep24v2_netfork", ["skep24v2_netfork.c"], flags=["-Wall"])
    d = tmpdir()
    os.chmod(d, 0o755)
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    t = run([prof] + profile + ["--", SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe, "chroot", empty])
    logs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "sf*.log")))
    return logs, [ln for ln in t.stderr.splitlines() if "wrote no log" in ln], d


def _kinds(lines, patterns, d):
    """How many of LINES are each of PATTERNS (D the log directory, {pid}
    the line's pid); every line must be one of them (readdir's order of
    the note files is no order to rely on)."""
    counts = [0] * len(patterns)
    for ln in lines:
        m = re.match(r"sftrace: pid (\d+) ", ln)
        wants = [pat.format(d=d, pid=m.group(1) if m else "?") for pat in patterns]
        eq(ln in wants, True, f"record's line {ln!r} is one of {wants}")
        counts[wants.index(ln)] += 1
    return counts


def test_keeper_socketpair_refused_named():
    """Profile refusing pidfd_getfd, pidfd_open and socketpair (record's
    keeper is under it too): the children forked after unshare(CLONE_NEWNET)
    get no channel to the keeper, whose socketpair was refused. Before:
    "its parent could not get a channel to record's keeper for it
    (Operation not permitted)", no call named. Now the keeper's answer
    names its call (sf_kf_rep.call) and record's line says it."""
    if os.geteuid() != 0:
        return  # unshare(CLONE_NEWNET), chroot
    logs, lines, d = _netfork(["pidfd_getfd", "pidfd_open", "socketpair"])
    eq(len(logs), 2, f"logs made (main, the child forked before the unshare): {logs}")
    eq(len(lines), 2, f"record's loss lines: {lines}")
    eq(_kinds(lines, ["sftrace: pid {pid} (skep24v2_netfork) wrote no log: cannot create log {d}/sf.{pid}.log "
                      "(openat: No such file or directory), and record's keeper is out of its reach: the keeper "
                      "could not make a channel to it for its parent: socketpair: Operation not permitted"], d),
       [2], "lines")


def test_sendmsg_refused_named():
    """Profile refusing pidfd_getfd and sendmsg: no child gets a log. The
    one forked before the unshare reaches the keeper but cannot send its
    request (before: "cannot create log ...: Operation not permitted",
    neither program nor call); the two forked after it inherit their
    parent's failed request for their channel (before: "its parent could
    not get a channel ... (Operation not permitted)")."""
    if os.geteuid() != 0:
        return
    logs, lines, d = _netfork(["pidfd_getfd", "sendmsg"])
    eq(logs, ["sf.log"], "logs made")
    eq(len(lines), 3, f"record's loss lines: {lines}")
    eq(_kinds(lines, ["sftrace: pid {pid} (skep24v2_netfork) wrote no log: cannot create log {d}/sf.{pid}.log "
                      "(openat: No such file or directory), and asking record's keeper to make it failed: sendmsg: "
                      "Operation not permitted",
                      "sftrace: pid {pid} (skep24v2_netfork) wrote no log: cannot create log {d}/sf.{pid}.log "
                      "(openat: No such file or directory), and record's keeper is out of its reach: its parent "
                      "could not ask the keeper for a channel to it: sendmsg: Operation not permitted"], d),
       [1, 2], "lines: the child forked before the unshare, the two after")


def test_check_not_a_call_names_none():
    """A log whose header exceeds RLIMIT_FSIZE: the runtime's own check
    refuses (no system call failed, none is named: "loss - 27 calls")."""
    exe = calls_fixture()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = run_limited([SFTRACE, "record", "-q", "-o", log, "--", exe], fsize=2048)
    eq(p.stdout, "calls ok 21\n", "the program's output")
    lines = [ln for ln in p.stderr.splitlines() if "wrote no log" in ln]
    eq(len(lines), 1, f"record said {p.stderr!r}")
    check_re = re.fullmatch(r"sftrace: pid \d+ \(calls\) wrote no log: cannot write log " + re.escape(log) +
                            r": File too large", lines[0])
    eq(bool(check_re), True, f"record's line: {lines[0]!r}")


def test_without_record_stderr_names_call():
    """Without record (no notes) the line goes to the program's stderr,
    the call named as record would: "sftrace: cannot create log PATH:
    openat: ERROR"."""
    exe = calls_fixture()
    d = tmpdir()
    target = os.path.join(d, "gone", "sf.log")
    p = run([exe], env={"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": target})
    eq((p.stdout, p.stderr), ("calls ok 21\n", f"sftrace: cannot create log {target}: openat: No such file or "
                              "directory\n"), "output, stderr")


def test_old_and_new_note_lines_read():
    """record reads the notes a process left, in both forms: a command
    (not instrumented: no log, so record reports what the notes say)
    appends lines to its note file as a runtime would. The first own loss
    line is said once (as before); relayed lines for other pids each; a
    loss line with no call and no errno, or no program, says less; a
    malformed one is skipped."""
    d = tmpdir()
    notes = "\n".join([
        "sftrace: cannot create log /x/sf.1.log: No such file or directory",  # older runtime, own
        "loss openat 2 later\tcannot create log /x/sf.2.log",                 # own again: not repeated
        "relayed 4242 loss sendmsg 1 my prog\tcannot create log /x/sf.4242.log",
        "relayed 4243 loss - 0 -\tcannot create log /x/sf.4243.log",
        "relayed 4244 loss - 27 w\tcannot write log /x/sf.4244.log",
        "relayed 4245 sftrace: cannot map log /x/sf.4245.log: Bad file descriptor",  # older runtime, relayed
        "relayed 4246 loss sendmsg x\tmalformed",
        "relayed 4247 loss sendmsg 1 \tno program",
    ]) + "\n"
    src = os.path.join(d, "notes.txt")
    with open(src, "w") as f:
        f.write(notes)
    p = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", "sh", "-c",
             'cat "$0" >> "$SFTRACE_NOTES_DIR/$$"; echo "$$"', src])
    pid = p.stdout.strip()
    eq(p.stderr, f"sftrace: pid {pid} wrote no log: cannot create log /x/sf.1.log: No such file or directory\n"
       "sftrace: pid 4242 (my prog) wrote no log: cannot create log /x/sf.4242.log: sendmsg: Operation not "
       "permitted\n"
       "sftrace: pid 4243 wrote no log: cannot create log /x/sf.4243.log\n"
       "sftrace: pid 4244 (w) wrote no log: cannot write log /x/sf.4244.log: File too large\n"
       "sftrace: pid 4245 wrote no log: cannot map log /x/sf.4245.log: Bad file descriptor\n", "record's lines")


if __name__ == "__main__":
    import sfkit
    sfkit.main(globals())
