"""record --paused, sftrace resume / pause: tracing switched on and off in a
running process (tests/fixtures/switch_server.c, driven line by line on
stdin). Exact counts: only what ran while tracing was on is in the log, and
calls in flight at a switch are repaired and counted."""
import collections
import os
import re
import signal
import subprocess
import time

from sfkit import FIXTURES, SFTRACE, Skip, build_c, check, eq, iter_dump_events, run, tmpdir

PAUSED_RE = re.compile(r"sftrace: pid (\d+) started paused \(tracing off\); switch it on with: sftrace resume (\d+)\n")
SWITCH_RE = re.compile(r"pid (\d+): tracing (on|off): (\d+) sleds (un)?patched in [\d.]+ ms\n")


def server():
    return build_c("switch_server", ["switch_server.c"], libs=["-lpthread", "-ldl"])


def plug():
    return build_c("libswitch_plug.so", ["switch_plug.c"], shared=True)


class Server:
    """The fixture (or cmd) under `sftrace record --paused ARGS`."""

    def __init__(self, args=(), out=None, cmd=None):
        self.reads = cmd is None  # the fixture: main reads its commands with read(0, ...)
        self.dir = tmpdir()
        self.log = out or os.path.join(self.dir, "sf.log")
        self.p = subprocess.Popen([SFTRACE, "record", "--paused", "-o", self.log] + list(args) + ["--"] +
                                  (cmd or [server()]),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = int(self.p.stdout.readline().split()[1])
        # The runtime says how to resume before main runs: the first line on stderr.
        line = self.p.stderr.readline()
        m = PAUSED_RE.fullmatch(line)
        check(m and int(m.group(1)) == self.pid and int(m.group(2)) == self.pid, f"the paused line: {line!r}")

    def cmd(self, c):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        lines = []
        while True:
            line = self.p.stdout.readline()
            check(line, f"the server ended during {c!r}")
            if line == f"ok {c}\n":
                return lines
            lines.append(line)

    def wait_reading(self):
        """Until main is blocked reading its next command (in read_cmd: the
        fixture prints its pid before it calls serve, and each answer
        before it calls read_cmd again). A switch asked before that found
        main between the two, and a resume then recorded serve's or
        read_cmd's entry (under load; more often since the request
        needs no signal delivered)."""
        want = "63" if os.uname().machine == "aarch64" else "0"  # read(0, ...)
        for _ in range(1000):
            try:
                with open(f"/proc/{self.pid}/syscall") as f:
                    fields = f.read().split()
            except OSError:
                return
            if fields[:2] == [want, "0x0"]:
                return
            time.sleep(0.005)

    def switch(self, what, want_sleds=None):
        if self.reads:
            self.wait_reading()
        s = run([SFTRACE, what, str(self.pid)])
        m = SWITCH_RE.fullmatch(s.stdout)
        check(m and int(m.group(1)) == self.pid and m.group(2) == ("on" if what == "resume" else "off"), s.stdout)
        if want_sleds is not None:
            eq(int(m.group(3)), want_sleds, f"sleds switched by {what}")
        return int(m.group(3))

    def finish(self):
        self.cmd("q")
        out, err = self.p.communicate(timeout=120)
        eq(self.p.returncode, 0, f"record's exit status ({err})")
        return err


def report(log, extra=()):
    """{name: calls} and the repair line of `sftrace report`."""
    p = run([SFTRACE, "report", "--format", "tsv", "-n", "0"] + list(extra) + [log])
    lines = p.stdout.splitlines()
    cols = lines[0].split("\t")
    ni, ci = cols.index("name"), cols.index("calls")
    calls = {ln.split("\t")[ni]: int(ln.split("\t")[ci]) for ln in lines[1:] if ln}
    m = re.search(r"sftrace: repaired: (.*)\n", p.stderr)
    return calls, m.group(1) if m else ""


PHASE_B = {"read_cmd": 1, "phase_b": 1, "leaf_b": 1000}
# The read_cmd the resume found waiting for "B" returns after it: an exit
# without its entry. The one that waits for "C" is open at the pause.
REPAIRS = "1 unmatched exit dropped, 1 frame in flight closed at a pause"


def phases(args=()):
    s = Server(args)
    s.cmd("A")
    s.switch("resume")
    s.cmd("B")
    s.switch("pause")
    s.cmd("C")
    s.finish()
    return s


def test_paused_start_resume_pause_keeps_only_phase_b():
    s = phases()
    calls, repairs = report(s.log)
    eq(calls, PHASE_B, "calls")
    eq(repairs, REPAIRS, "repairs")
    info = run([SFTRACE, "info", s.log]).stdout
    check(re.search(r"# switched +: 1 resume, 1 pause ", info), info)
    # The same repairs as report's (REPAIRS), in info's order.
    check(re.search(r"# repaired +: 0 frames closed by unwinding, 0 open at thread end, 1 in flight at a pause, "
                    r"1 unmatched exit dropped\n", info), info)
    # Calibrated at the first resume (a process never resumed skips it).
    check(re.search(r"# tracer cost +: [1-9][\d.]* ns per call in the caller", info), info)
    replay = run([SFTRACE, "replay", s.log]).stdout
    eq(replay.count("/* 1 frame in flight at a pause */"), 1, "replay's note")
    # Every output repairs the same way: the Chrome trace balances too.
    out = os.path.join(s.dir, "t.json")
    c = run([SFTRACE, "convert", "-t", "chrome", "-o", out, s.log])
    check(REPAIRS in c.stderr, c.stderr)


def test_never_resumed_writes_no_log_and_says_why():
    s = Server()
    s.cmd("A")
    err = s.finish()
    eq(err, "sftrace: no log written: tracing was never switched on (--paused; 'sftrace resume PID' switches it "
            "on)\n", "record's last words")
    eq(os.listdir(s.dir), [], "no log")


def test_switch_with_a_ring():
    s = phases(["--ring", "1M"])
    calls, repairs = report(s.log)
    eq(calls, PHASE_B, "calls")
    eq(repairs, REPAIRS, "repairs")


def test_switch_with_alloc_records_heap_events_only_while_on():
    s = phases(["--alloc"])
    calls, _ = report(s.log)
    eq(calls, PHASE_B, "calls")
    sizes = collections.Counter()
    for line in run([SFTRACE, "dump", s.log]).stdout.splitlines():
        m = re.search(r"\sMALLOC\s+size=(\d+) ", line)
        if m and 4241 <= int(m.group(1)) <= 4243:
            sizes[int(m.group(1))] += 1
    eq(dict(sizes), {4242: 1}, "phase blocks allocated while tracing was on")


def test_switch_with_filter_regex_patches_what_the_filter_chooses():
    """-r is --filter-regex's short form, as in sftrace filter and cargo sftrace."""
    s = Server(["-r", "^(phase_|leaf_b)"])
    s.cmd("A")
    # phase_a, phase_b, phase_c and leaf_b: one entry and one exit sled each.
    s.switch("resume", want_sleds=8)
    s.cmd("B")
    s.switch("pause", want_sleds=8)
    s.cmd("C")
    s.finish()
    calls, repairs = report(s.log)
    eq(calls, {"phase_b": 1, "leaf_b": 1000}, "calls")
    eq(repairs, "", "nothing in flight: read_cmd is not selected")


def test_switch_twice_and_idempotent_requests():
    s = Server()
    s.switch("resume")
    r = run([SFTRACE, "resume", str(s.pid)])
    eq(r.stdout, f"pid {s.pid}: tracing was on already\n", "a second resume")
    s.cmd("B")
    s.switch("pause")
    s.cmd("A")
    r = run([SFTRACE, "pause", str(s.pid)])
    eq(r.stdout, f"pid {s.pid}: tracing was off already\n", "a second pause")
    s.switch("resume")
    s.cmd("C")
    s.switch("pause")
    s.finish()
    calls, repairs = report(s.log)
    eq(calls, {"read_cmd": 2, "phase_b": 1, "leaf_b": 1000, "phase_c": 1, "leaf_c": 1000}, "calls")
    eq(repairs, "2 unmatched exits dropped, 2 frames in flight closed at a pause", "repairs")


def test_within_window_open_at_a_pause_is_closed_by_the_next_resume():
    """--within, in_window() the only window: it is entered while on, the
    process is paused inside it, and it returns while paused (its exit is
    never seen). After the next resume no window is open, so phase A
    (phase_a, 1000 leaf_a) and the serve loop's read_cmd record nothing.
    Before the fix the thread's window depth stayed 1 after the resume and
    all of them were recorded as if inside a window."""
    s = Server(["--filter-regex", "^in_window$", "--within"])
    s.switch("resume")
    s.cmd("W")  # the answer comes from inside in_window: the window is open
    s.switch("pause")
    s.cmd("X")  # in_window returns while paused
    s.switch("resume")
    s.cmd("A")
    s.switch("pause")
    s.finish()
    calls, repairs = report(s.log)
    eq(calls, {"in_window": 1}, "calls")
    eq(repairs, "1 frame in flight closed at a pause", "repairs")


def test_dlopen_while_paused_is_patched_at_resume():
    s = Server()
    s.cmd("dlopen " + plug())
    s.cmd("plug")  # paused: not recorded
    s.switch("resume")
    s.cmd("plug")
    s.switch("pause")
    s.cmd("plug")
    s.finish()
    calls, _ = report(s.log)
    eq(calls.get("plug_work"), 1, "plug_work calls")
    eq(calls.get("plug_leaf"), 100, "plug_leaf calls")


def test_dlopen_while_paused_after_a_log_exists():
    """The object is found while paused, after the first resume made the
    log: its sled map is read, its functions numbered and its OBJECT chunk
    written at the next resume (named in the report, ids of its own)."""
    s = Server()
    s.switch("resume")
    s.cmd("B")
    s.switch("pause")
    s.cmd("dlopen " + plug())
    s.cmd("plug")  # paused: not recorded
    s.switch("resume")
    s.cmd("plug")
    s.switch("pause")
    s.finish()
    calls, _ = report(s.log)
    eq({k: v for k, v in calls.items() if k.startswith(("plug_", "leaf_", "phase_"))},
       {"phase_b": 1, "leaf_b": 1000, "plug_work": 1, "plug_leaf": 100}, "calls")
    info = run([SFTRACE, "info", s.log]).stdout
    check(re.search(r"libswitch_plug\.so", info), info)


def test_resume_and_pause_with_8_hot_threads():
    """8 threads call hot_outer (1000 hot_leaf calls each) nonstop through a
    resume and a pause; between them, the fixture's hot_sync waits until each
    thread has begun and ended a whole hot_outer (events, not a time). Per
    thread: every hot_outer whose entry and exit were both recorded has
    exactly 1000 hot_leaf children; at most the one
    hot_outer and hot_leaf in flight at each switch are repaired, and the
    report counts exactly the repairs the events call for (give or take an
    exit recorded after the pause, the same number of each)."""
    s = Server()
    s.cmd("hot 8")
    s.cmd("hot_sync")  # every thread is running hot_outer calls
    s.switch("resume")
    s.cmd("hot_sync")  # every thread has a whole hot_outer recorded: no time margin
    s.switch("pause")
    counts = s.cmd("stop")
    eq(len(counts), 8, "threads that ran")
    s.finish()
    stacks = collections.defaultdict(list)
    unmatched = collections.Counter()
    complete = collections.Counter()
    children = {}
    last_kind = {}
    for e in iter_dump_events(s.log):
        st = stacks[e.tid]
        last_kind[e.tid] = e.kind
        if e.kind == "ENTRY":
            st.append([e.name, 0])
            continue
        if not st or st[-1][0] != e.name:
            check(not st, f"thread {e.tid}: {e.name} exits over {st}")
            unmatched[e.tid] += 1
            continue
        name, kids = st.pop()
        if name == "hot_outer":
            eq(kids, 1000, f"thread {e.tid}: hot_leaf calls of a whole hot_outer")
            complete[e.tid] += 1
        if st:
            st[-1][1] += 1
    hot = [t for t in stacks if complete[t]]
    eq(len(hot), 8, "threads with whole hot_outer calls")
    total_unmatched = sum(unmatched.values())
    total_open = sum(len(st) for st in stacks.values())
    for t in hot:
        check(unmatched[t] <= 2 and len(stacks[t]) <= 2, f"thread {t}: {unmatched[t]} {stacks[t]}")
    check(total_unmatched >= 8 and total_open >= 8, f"{total_unmatched} unmatched exits, {total_open} open")
    _, repairs = report(s.log)
    # A thread the pause found inside an exit's trampoline (descheduled
    # there, under load) records that EXIT after the pause's time: the
    # report closes the frame at the pause and drops the late exit as
    # unmatched, one more of each than the count above, which has no pause
    # time. Only a thread whose last event is an EXIT can be one of those.
    late_max = sum(1 for t in hot if last_kind[t] == "EXIT")
    m = re.fullmatch(r"(\d+) unmatched exits? dropped, (\d+) frames? in flight closed at a pause", repairs)
    check(m, f"repairs: {repairs!r}")
    late = int(m.group(1)) - total_unmatched
    check(0 <= late <= late_max and int(m.group(2)) - total_open == late,
          f"repairs {repairs!r}: the events call for {total_unmatched} unmatched exits and {total_open} open frames, "
          f"plus as many of each (the same number) for at most {late_max} late exits")


def test_node_addon_server_switched_on_and_off_twice():
    """node runs a server of the instrumented addon: the runtime comes with
    the addon (node has no sleds), prints node's PID then, and resume/pause
    switch it twice; only the two traced bursts of work are in the log."""
    import shutil
    if not shutil.which("node") or not os.path.exists("/usr/include/node/node_api.h"):
        raise Skip("node or its Node-API headers are not installed")
    addon = build_c("addon.node", ["addon.c"], shared=True, flags=["-I/usr/include/node"])
    s = Server(cmd=["node", os.path.join(FIXTURES, "switch_server.js"), addon])
    s.cmd("work 10")
    s.switch("resume")
    s.cmd("work 3")
    s.switch("pause")
    s.cmd("work 10")
    s.switch("resume")
    s.cmd("work 4")
    s.switch("pause")
    s.cmd("work 10")
    s.finish()
    calls, repairs = report(s.log)
    eq(calls, {"work": 2, "addon_outer": 7, "addon_inner": 14}, "calls")
    eq(repairs, "", "repairs")
    info = run([SFTRACE, "info", s.log]).stdout
    check(re.search(r"# switched +: 2 resumes, 2 pauses ", info), info)


def stop(pid):
    """SIGSTOP, and wait until every thread of pid has stopped: kill returns
    before they do (each stops when it next runs), and the writer thread
    answers a request until then (it waits on its control page, not on a
    signal)."""
    os.kill(pid, signal.SIGSTOP)
    for _ in range(3000):
        states = []
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/stat") as f:
                    states.append(f.read().rpartition(")")[2].split()[0])
            except OSError:
                pass
        if states and all(st == "T" for st in states):
            return
        time.sleep(0.01)
    check(False, f"pid {pid} did not stop: {states}")


def test_bad_pids():
    # Not traced: this test's own process.
    r = run([SFTRACE, "resume", str(os.getpid())], check_rc=1)
    eq(r.stderr, f"sftrace: error: pid {os.getpid()} is not a traced process started with 'sftrace record --paused' "
                 f"(no SFTRACE_PAUSED=1 in its environment)\n", "not traced")
    # Traced, but not with --paused.
    d = tmpdir()
    p = subprocess.Popen([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", server()],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline().split()[1])
    r = run([SFTRACE, "pause", str(pid)], check_rc=1)
    check("is not a traced process started with 'sftrace record --paused'" in r.stderr, r.stderr)
    p.communicate("q\n", timeout=60)
    # Gone.
    g = subprocess.Popen(["true"])
    g.wait()
    r = run([SFTRACE, "resume", str(g.pid)], check_rc=1)
    eq(r.stderr, f"sftrace: error: pid {g.pid}: no such process\n", "gone")
    # Not a pid.
    r = run([SFTRACE, "resume", "x"], check_rc=2)
    eq(r.stderr, "sftrace: error: 'x' is not a process id\n", "not a pid")
    # Timed out: a stopped process cannot answer.
    s = Server()
    stop(s.pid)
    try:
        r = run([SFTRACE, "resume", "--timeout", "0.5", str(s.pid)], check_rc=1)
        eq(r.stderr, f"sftrace: error: pid {s.pid} did not answer the resume within 0.5 s (stopped?); it is "
                     "still asked, and served when the process goes on\n", "timed out")
    finally:
        os.kill(s.pid, signal.SIGCONT)
    # The request it took when it went on is served then: tracing is on.
    time.sleep(0.3)
    r = run([SFTRACE, "resume", str(s.pid)])
    eq(r.stdout, f"pid {s.pid}: tracing was on already\n", "the late request was served")
    s.p.stdin.write("q\n")
    s.p.stdin.flush()
    s.p.communicate(timeout=60)
    # A forked child that did not exec: the handler came with the fork, the
    # writer thread did not. Refused at once, nothing sent (was: a timeout).
    s = Server()
    child = int(s.cmd("fork")[0].split()[1])
    try:
        r = run([SFTRACE, "resume", "--timeout", "0.5", str(child)], check_rc=1)
        eq(r.stderr, f"sftrace: error: pid {child} has no sftrace-writer thread, which serves resume and pause: "
                     "it is a forked child that did not exec (a fork copies only the thread that called it), or it "
                     "has loaded no instrumented code; nothing sent\n", "a forked child")
        s.switch("resume")  # the parent still switches
    finally:
        os.kill(child, signal.SIGKILL)
    s.finish()
    # Gone while the command waited: stopped, then killed.
    s = Server()
    stop(s.pid)
    w = subprocess.Popen([SFTRACE, "pause", "--timeout", "30", str(s.pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    os.kill(s.pid, signal.SIGKILL)
    out, err = w.communicate(timeout=60)
    eq((w.returncode, out, err), (1, "", f"sftrace: error: pid {s.pid} exited before it answered the pause\n"),
       "gone while waiting")
    s.p.communicate(timeout=60)
    # Not ours: the traced process runs as root, the command as nobody.
    if os.geteuid() != 0:
        raise Skip("not root: cannot run the command as another uid")
    s = Server()
    r = run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", SFTRACE, "resume", str(s.pid)],
            check_rc=1)
    eq(r.stderr, f"sftrace: error: pid {s.pid} is not yours (it runs as uid 0, you are uid 65534)\n", "not ours")
    s.finish()


def test_frames_that_returned_while_paused_leave_no_trace_in_later_depths():
    """wait_outer -> wait_mid -> wait_inner are open at a pause and return
    while paused. After the resume, jump_catch -> jump_mid -> jump_leaf
    longjmps back into jump_catch: the landing leaves 1 recorded frame
    open, and the log says so (UNWIND_TO 1). Before the fix the x86-64
    runtime kept the three stale shadow-stack entries (less the one
    read_cmd's unmatched exit popped) and recorded depth 3, and the reader
    made up for it by counting frames closed at a pause as still open."""
    s = Server()
    s.switch("resume")
    s.cmd("D")  # answered from inside wait_inner
    s.switch("pause")
    s.cmd("X")  # the three return while paused
    s.switch("resume")
    s.cmd("J")
    s.switch("pause")
    s.finish()
    dump = run([SFTRACE, "dump", s.log]).stdout.split("\nevents:\n")[1].split("\n\nsummary")[0]
    rows = [ln.split(None, 2)[2] for ln in dump.splitlines()[1:]]
    # dump indents as the frames are built: from 0 again after each pause.
    eq(rows, ["EXIT     read_cmd", "ENTRY    wait_outer", "ENTRY      wait_mid", "ENTRY        wait_inner",
              "EXIT     read_cmd", "ENTRY    jump_catch", "ENTRY      jump_mid", "ENTRY        jump_leaf",
              "UNWIND         2 frames abandoned, depth 1 left", "EXIT     jump_catch", "ENTRY    read_cmd"],
       "the main thread's events")
    calls, repairs = report(s.log)
    eq(calls, {"read_cmd": 1, "wait_outer": 1, "wait_mid": 1, "wait_inner": 1, "jump_catch": 1, "jump_mid": 1,
               "jump_leaf": 1}, "calls")
    eq(repairs, "2 unmatched exits dropped, 2 frames closed by unwinding, 4 frames in flight closed at a pause",
       "repairs")


def test_resume_and_pause_after_the_writer_was_made_again():
    """Issue 24: resume and pause travel on a control page the writer
    thread holds in its own descriptor table (no signal). unshare(
    CLONE_NEWUSER) needs the process alone: the runtime stops the writer
    for the call and makes a new one, with a new table, so a new page takes
    the old one's place. Resumed before phase a, paused before b, resumed
    before c: 20 work calls in the log (a's and c's), each command
    answered."""
    exe = build_c("sig24_unshare", ["sig24_unshare.c"])
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = subprocess.Popen([SFTRACE, "record", "-q", "--paused", "-o", log, "--", exe],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        m = PAUSED_RE.fullmatch(line)
        check(m, f"the paused line: {line!r}")
        pid = m.group(1)
        got, writers = [], []
        for name, what in (("a", "resume"), ("b", "pause"), ("c", "resume")):
            eq(p.stdout.readline(), f"{name}\n", f"phase {name}")
            writers.append([t for t in os.listdir(f"/proc/{pid}/task")
                            if open(f"/proc/{pid}/task/{t}/comm").read() == "sftrace-writer\n"])
            s = run([SFTRACE, what, pid])
            check(SWITCH_RE.fullmatch(s.stdout), f"{what} before {name}: {s.stdout!r} {s.stderr!r}")
            p.stdin.write("go\n")
            p.stdin.flush()
            got.append(p.stdout.readline())
            if name == "a":
                got.append(p.stdout.readline())
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    eq(got, ["a 135\n", "unshare 0\n", "b 135\n", "c 135\n"], "the program's output")
    check(len(writers[0]) == 1 and len(writers[1]) == 1 and writers[0] != writers[1] and writers[1] == writers[2],
          f"a new writer thread after the unshare: {writers}")
    eq(p.returncode, 0, err)
    calls, _ = report(log)
    eq(calls.get("work", 0), 20, "work calls: phases a and c")
