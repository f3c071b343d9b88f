"""How each process of a recording ended, as `sftrace info` reads it from
the log (docs/FORMAT.md "Exit state"): record's wait status for the
processes it reaps (its command, and every orphan as their subreaper), the
runtime's _exit code, else what the header's state says."""
import json
import re

from sfkit import SFTRACE, build_c, eq, record, run, tmpdir


def states(d):
    js = json.loads(run([SFTRACE, "info", "--format", "json", d]).stdout)
    text = run([SFTRACE, "info", d]).stdout
    by_pid = {}
    for block in text.split("# process ")[1:]:
        pid = int(block.split("\n", 1)[0])
        by_pid[pid] = re.search(r"^# exit state\s*: (.*)$", block, re.M).group(1)
    return {p["pid"]: (by_pid[p["pid"]], p["exit_code"], p["exit_signal"], p["exit_seen_by"])
            for p in js["processes"]}


def test_exit_state_of_each_process():
    """_exit(7) reaped by its traced parent: the runtime's code. exit(4)
    reaped by its traced parent: the runtime's on_exit handler's code, after
    the program's own exit handlers ran and printed as untraced. An orphan that SIGKILLs itself: record's keeper reaped it. main
    returning 5: record's own child."""
    exe = build_c("exit_paths", ["exit_paths.c"])
    d = tmpdir()
    p, _ = record([exe], out=d + "/sf.log", args=["-q"], check_rc=5)
    pids = {k: int(v) for k, v in re.findall(r"(\w)=(\d+)", p.stdout)}
    got = states(d)
    eq(len(got), 5, "five logs: main, a, b, c, d")
    eq(got[pids["a"]], ("exited 7 (_exit)", 7, None, "runtime"), "a: _exit(7), reaped by main")
    eq(got[pids["b"]], ("exited 4 (exit, or main's return)", 4, None, "runtime"), "b: exit(4), reaped by main")
    eq(p.stdout.splitlines()[:2], ["b atexit", "b on_exit 4 arg"], "b's own exit handlers, in order, flushed")
    eq(got[pids["d"]], ("killed by SIGKILL (signal 9)", None, "SIGKILL", "record"), "d: an orphan killed")
    main = [pid for pid in got if pid not in pids.values() and got[pid][0] != "exited 0 (_exit)"]
    eq([got[pid] for pid in main], [("exited 5", 5, None, "record")], "main returned 5")
