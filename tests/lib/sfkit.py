"""Helpers for the end-to-end cases: build fixtures, run sftrace, read what
it wrote. Everything goes through the real CLI; nothing here re-implements
the log reader."""
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("SFTRACE_BUILD", "build"))
SFTRACE = os.path.join(BUILD, "sftrace")
RUNTIME = os.path.join(BUILD, "libsftrace.so")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
FIXBUILD = os.path.join(BUILD, "fixtures")
XRAY_CFLAGS = ["-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1"]
# The writer thread asked for by name, for runs that count instructions under
# callgrind with the runtime preloaded (record's option; the variable for
# LD_PRELOAD runs). Under valgrind the default writer (auto) hands full
# batches off on the traced thread (init.c: the writer's table is the
# program's there), so each hand-off's write would count in the thread
# measured; every such figure was measured with the writer thread, which
# auto gave on this 2-CPU machine before.
CG_WRITER = ["--writer", "thread"]
CG_WRITER_ENV = {"SFTRACE_WRITER": "thread"}


class Skip(Exception):
    pass


def known_break(issue, why):
    """Decorates a case that found a break of issue ISSUE: the case runs,
    and a failed assertion skips as "known break, issue N open: WHY: ..."
    until the break is fixed (then the case passes)."""
    def wrap(fn):
        def case():
            try:
                fn()
            except AssertionError as e:
                raise Skip(f"known break, issue {issue} open: {why}: {str(e)[:300]}")
        case.__name__ = fn.__name__
        return case
    return wrap


def main(cases):
    """Runs a case file on its own (`python3 tests/cases/test_x.py`): every
    test_* function of CASES (the module's globals()), in name order, one
    line each; exits 1 if any failed. tests/run.py is the usual way."""
    failed = 0
    for name, fn in sorted((k, v) for k, v in cases.items() if k.startswith("test_") and callable(v)):
        try:
            fn()
            print(f"PASS {name}", flush=True)
        except Skip as e:
            print(f"SKIP {name}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
    print("all passed" if not failed else f"{failed} failed")
    sys.exit(1 if failed else 0)


def check(cond, msg=""):
    if not cond:
        raise AssertionError(msg)


def eq(got, want, what=""):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


MADE_DIRS = []  # every tmpdir() of this run, in order (run.py removes them)


def tmpdir():
    d = tempfile.mkdtemp(prefix="sftrace-test-")
    MADE_DIRS.append(d)
    return d


def run(cmd, check_rc=0, timeout=300, env=None, cwd=None, input=None):
    """Runs cmd; returns CompletedProcess with text stdout/stderr. check_rc
    None accepts any exit status."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd,
                       input=input, errors="replace")
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError(f"{cmd} exited {p.returncode}, want {check_rc}\nstdout:\n{p.stdout[-3000:]}"
                             f"\nstderr:\n{p.stderr[-3000:]}")
    return p


def run_group(cmd, timeout=30, env=None):
    """Runs cmd in a session of its own; on timeout the whole group gets
    SIGKILL (a traced program that cannot end, and record's keeper, must not
    outlive the case). Returns (returncode or "timeout", stdout, stderr)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                         start_new_session=True, env=full_env)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return "timeout", out, err


def run_each(specs, jobs=2):
    """run(**spec) for each spec (a dict of run()'s arguments), up to `jobs`
    at a time (CI has 2 cores): for independent runs whose results are
    exact counts, not times. Returns the CompletedProcesses in the order of
    specs; the first failure is raised once every command has ended."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = [ex.submit(run, **spec) for spec in specs]
        concurrent.futures.wait(futs)
    return [f.result() for f in futs]


def run_parallel(cmds, jobs=2, **kw):
    """run(cmd, **kw) for each command, as run_each."""
    return run_each([dict(kw, cmd=c) for c in cmds], jobs)


_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _with_headers(srcs):
    """The sources and the fixture headers they include with quotes (one
    level deep: fixture headers include none of their own)."""
    deps = list(srcs)
    for s in srcs:
        try:
            with open(s, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        for h in _QUOTED_INCLUDE.findall(text):
            path = os.path.join(os.path.dirname(s), h)
            if os.path.exists(path) and path not in deps:
                deps.append(path)
    return deps


def _stale(out, deps):
    if not os.path.exists(out):
        return True
    t = os.path.getmtime(out)
    return any(os.path.getmtime(d) > t for d in deps)


class _BuildLock:
    """An exclusive lock on OUT.lock while a fixture is checked and built:
    `run.py -j` runs modules side by side, and two of them may build one
    fixture (one .tmp file, one stamp)."""

    def __init__(self, out):
        self.path = out + ".lock"

    def __enter__(self):
        import fcntl
        self.f = open(self.path, "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        self.f.close()  # and the lock with it


def build_c(name, sources, flags=(), libs=(), shared=False, compiler="clang", xray=True, outdir=None):
    """Builds a fixture from tests/fixtures sources; cached until a source
    changes. Returns the output path."""
    outdir = outdir or FIXBUILD
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, name)
    with _BuildLock(out):
        return _build_c(out, name, sources, flags, libs, shared, compiler, xray)


def _build_c(out, name, sources, flags, libs, shared, compiler, xray):
    srcs = [s if os.path.isabs(s) else os.path.join(FIXTURES, s) for s in sources]
    cmd = [compiler] + (XRAY_CFLAGS if xray else ["-O2", "-g"]) + list(flags)
    if shared:
        cmd += ["-fPIC", "-shared"]
    cmd += ["-o", out + ".tmp"] + srcs + list(libs)
    # The cache is keyed by name: two tests building one name with different
    # commands would each get whichever binary came first (a test of -O2
    # tail calls once ran on another's build of its fixture). The command is
    # kept beside the binary; a different one for the same name is an error.
    stamp = out + ".cmd"
    said = " ".join(cmd)
    if os.path.exists(stamp) and os.path.exists(out):
        with open(stamp) as f:
            before = f.read()
        if before != said:
            raise AssertionError(f"fixture {name} is built two ways:\n  {before}\n  {said}\n"
                                 "give one of them another name")
    if _stale(out, _with_headers(srcs)):
        run(cmd)
        os.replace(out + ".tmp", out)
        with open(stamp, "w") as f:
            f.write(said)
    elif not os.path.exists(stamp):
        with open(stamp, "w") as f:
            f.write(said)
    return out


def calls_fixture():
    """tests/fixtures/calls.c linked with the instrumented libcalls.so."""
    build_c("libcalls.so", ["libcalls.c"], shared=True)
    return build_c("calls", ["calls.c"], libs=["-L" + FIXBUILD, "-lcalls", "-Wl,-rpath," + FIXBUILD, "-lpthread"])


def rust_fixture(name="rust_prog"):
    src = os.path.join(FIXTURES, name + ".rs")
    out = os.path.join(FIXBUILD, name)
    os.makedirs(FIXBUILD, exist_ok=True)
    with _BuildLock(out):
        if _stale(out, [src]):
            rustc = shutil.which("rustc") or os.path.expanduser("~/.cargo/bin/rustc")
            run([rustc, "-O", "-g", "-Zinstrument-xray=always", "-o", out + ".tmp", src],
                env={"RUSTC_BOOTSTRAP": "1"})
            os.replace(out + ".tmp", out)
    return out


def record(cmd, out=None, args=(), check_rc=0, env=None, timeout=300, prefix=()):
    """PREFIX sftrace record -o OUT ARGS -- CMD. Returns (CompletedProcess, log path)."""
    if out is None:
        out = os.path.join(tmpdir(), "sf.log")
    p = run(list(prefix) + [SFTRACE, "record", "-o", out] + list(args) + ["--"] + list(cmd), check_rc=check_rc,
            env=env, timeout=timeout)
    return p, out


def realtime():
    """A prefix that runs a command at a real-time priority (SCHED_FIFO)
    when we may set one (root), for cases that time a loop: on the shared
    2-core machine other jobs otherwise preempt it for milliseconds, which
    land in some function's self time (untraced, the least of ten runs of
    a 1M-iteration loop went from 2.8 to 7.3 ns an iteration with the
    load; under SCHED_FIFO 3.7-4.6). The program and the tracer are the
    same; only the scheduler's choice of who else runs changes."""
    if os.geteuid() == 0 and shutil.which("chrt"):
        return ["chrt", "-f", "10"]
    return []


Event = collections.namedtuple("Event", "time tid kind name")
DUMP_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(ENTRY|EXIT|TAIL)\s+(?:\[depth \d+\] )?(.*?)\s*$")


# dump_events' pattern over the whole output at once (2x faster than line
# by line on a million events): DUMP_RE with separators that stay on their
# line and the name taken whole (stripped after).
_DUMP_ALL_RE = re.compile(r"^[^\S\n]*(\d+)[^\S\n]+(\d+)[^\S\n]+(ENTRY|EXIT|TAIL)[^\S\n]+(?:\[depth \d+\] )?(.*)$",
                          re.M)
# Line breaks of str.splitlines() other than \n: with any of them, line by line.
_OTHER_BREAKS_RE = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def parse_dump_events(text):
    """The events of `sftrace dump`'s output: lines DUMP_RE matches, as
    Event(time, tid, kind, name)."""
    if _OTHER_BREAKS_RE.search(text):
        events = []
        for line in text.splitlines():
            m = DUMP_RE.match(line)
            if m:
                events.append(Event(int(m.group(1)), int(m.group(2)), m.group(3), m.group(4).strip()))
        return events
    return [Event(int(t), int(tid), k, n.strip()) for t, tid, k, n in _DUMP_ALL_RE.findall(text)]


def dump_events(log, extra=()):
    """Events of a log as printed by `sftrace dump` (time, tid, kind, name)."""
    return parse_dump_events(run([SFTRACE, "dump"] + list(extra) + [log]).stdout)


def count_calls(events):
    """ENTRY counts per function name."""
    c = collections.Counter()
    for e in events:
        if e.kind == "ENTRY":
            c[e.name] += 1
    return c


def check_nesting(events):
    """Per thread: every EXIT/TAIL closes the innermost open frame, and times
    never go backwards. Returns the open frames left per tid. (The messages
    are made only on a failure: formatting them for each of a million
    events was most of this function's time.)"""
    stacks = collections.defaultdict(list)
    last = {}
    for e in events:
        if e.time < last.get(e.tid, 0):
            check(False, f"time went backwards on tid {e.tid}: {e}")
        last[e.tid] = e.time
        st = stacks[e.tid]
        if e.kind == "ENTRY":
            st.append(e.name)
        else:
            if not st:
                check(False, f"{e.kind} with no open frame on tid {e.tid}: {e}")
            top = st.pop()
            if top != e.name:
                eq(top, e.name, f"tid {e.tid} {e.kind} closes the innermost frame")
    return {t: s for t, s in stacks.items() if s}


_DUMP_PLAIN_RE = re.compile(r"^ *(\d+) +(\d+) (ENTRY|EXIT|TAIL) +(?:\[depth \d+\] )?(.*)$", re.M)


def dump_nesting(log):
    """check_nesting and count_calls of a big log in one pass, without
    making an Event per event (4x faster on a million events): `sftrace
    dump`'s event lines (spaces only, names as printed). Returns (open frames
    left per tid, ENTRY counts per name)."""
    stacks = collections.defaultdict(list)
    last = {}
    names = collections.Counter()
    for t, tid, kind, name in _DUMP_PLAIN_RE.findall(run([SFTRACE, "dump", log]).stdout):
        t = int(t)
        if t < last.get(tid, 0):
            check(False, f"time went backwards on tid {tid}: {t} {kind} {name}")
        last[tid] = t
        st = stacks[tid]
        if kind == "ENTRY":
            st.append(name)
            names[name] += 1
        elif not st:
            check(False, f"{kind} with no open frame on tid {tid}: {t} {name}")
        else:
            top = st.pop()
            if top != name:
                eq(top, name, f"tid {tid} {kind} closes the innermost frame at {t}")
    return {int(t): s for t, s in stacks.items() if s}, names


def decode_raw(data):
    """Decodes protobuf bytes with `protoc --decode_raw` into a tree of
    (field_number, value_or_children) pairs."""
    p = subprocess.run(["protoc", "--decode_raw"], input=data, capture_output=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"protoc --decode_raw failed: {p.stderr.decode(errors='replace')[:500]}")
    root, stack = [], []
    cur = root
    for line in p.stdout.decode(errors="replace").splitlines():
        line = line.strip()
        if line.endswith("{"):
            node = []
            cur.append((int(line[:-1].strip()), node))
            stack.append(cur)
            cur = node
        elif line == "}":
            cur = stack.pop()
        elif line:
            k, _, v = line.partition(": ")
            if v.startswith('"'):
                v = bytes(v[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
            else:
                v = int(v) if v.lstrip("-").isdigit() else v
            cur.append((int(k), v))
    return root


def field(node, num, default=None):
    for k, v in node:
        if k == num:
            return v
    return default


def fields(node, num):
    return [v for k, v in node if k == num]


# Perfetto facts the reader below relies on (checked against Perfetto's
# protos and trace processor; see src/output/perfetto.c for the sources).
PF_SEQ_CLEARED, PF_SEQ_NEEDS = 1, 2      # TracePacket.sequence_flags (13)
PF_BOOTTIME = 6                          # BuiltinClock: the default trace clock


class _PfSequence:
    """Incremental state of one trusted_packet_sequence_id, as trace
    processor keeps it."""

    def __init__(self):
        self.valid = False        # saw SEQ_INCREMENTAL_STATE_CLEARED
        self.names = {}           # EventName iid -> name
        self.locs = {}            # SourceLocation iid -> (file, line)
        self.default_track = None  # TrackEventDefaults.track_uuid
        self.default_clock = None  # TracePacketDefaults.timestamp_clock_id
        self.clocks = {}          # sequence-scoped clock id -> _PfClock

    def clear(self):
        self.valid = True
        self.names, self.locs = {}, {}
        self.default_track = self.default_clock = None


class _PfClock:
    def __init__(self, ts, boot, incremental):
        self.snap, self.boot, self.incremental = ts, boot, incremental
        self.value = ts           # running value of an incremental clock


def _pf_clock_snapshot(st, cs):
    """ClockSnapshot (6): clocks (1) = Clock {clock_id 1, timestamp 2,
    is_incremental 3, unit_multiplier_ns 4}. Only what our writer needs:
    sequence-scoped clocks (64..127) related to BOOTTIME in ns."""
    clocks = {field(c, 1): c for c in fields(cs, 1)}
    if PF_BOOTTIME not in clocks:
        raise AssertionError(f"ClockSnapshot without BOOTTIME: {cs}")
    boot = field(clocks[PF_BOOTTIME], 2)
    for cid, c in clocks.items():
        if field(c, 4, 1) != 1:
            raise AssertionError(f"clock {cid}: unit_multiplier_ns unsupported here")
        if cid == PF_BOOTTIME:
            continue
        if not 64 <= cid < 128:
            raise AssertionError(f"clock {cid}: only sequence-scoped clocks are supported here")
        # Trace processor: the snapshot sets the clock's value; an incremental
        # clock then adds every delta converted on it.
        st.clocks[cid] = _PfClock(field(c, 2), boot, bool(field(c, 3, 0)))


def _pf_timestamp(st, pkt):
    """Absolute (BOOTTIME) ns of a packet's timestamp (8): its clock is
    timestamp_clock_id (58), else the sequence default, else BOOTTIME. On an
    incremental clock the value is a delta from the clock's previous value on
    the sequence; any other clock leaves that value alone."""
    ts = field(pkt, 8)
    cid = field(pkt, 58) or st.default_clock or PF_BOOTTIME
    if cid == PF_BOOTTIME:
        return ts
    c = st.clocks.get(cid)
    if c is None:
        raise AssertionError(f"timestamp on clock {cid} before any ClockSnapshot of it: {pkt}")
    if c.incremental:
        c.value += ts
        ts = c.value
    return ts - c.snap + c.boot


def perfetto_summary(path):
    """Reads a Perfetto trace (gzip or not) back the way trace processor
    does: per-sequence interning, TracePacketDefaults (default track and
    clock), ClockSnapshots and incremental timestamps. Returns process and
    thread tracks, per-name slice begin counts, begin/end balance per track,
    how often each interned name string was written (overall and per
    sequence), and per track the absolute begin/end times and the slices
    (name, begin, end). 'skipped' counts packets trace processor would drop
    (SEQ_NEEDS_INCREMENTAL_STATE on a sequence never cleared) and
    'missing_needs' packets that use incremental state without the flag."""
    import gzip
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    tree = decode_raw(data)
    procs, threads = {}, {}
    seqs = collections.defaultdict(_PfSequence)
    name_writes = collections.Counter()
    name_writes_per_seq = collections.Counter()
    begins = collections.Counter()
    balance = collections.Counter()
    times = collections.defaultdict(lambda: {"begin": [], "end": []})
    slices = collections.defaultdict(list)
    stacks = collections.defaultdict(list)
    skipped = missing_needs = 0
    for k, pkt in tree:
        if k != 1:
            continue
        seq = field(pkt, 10, 0)
        st = seqs[seq]
        flags = field(pkt, 13, 0)
        if flags & PF_SEQ_CLEARED:
            st.clear()
        defaults = field(pkt, 59)
        if defaults is not None:
            st.default_clock = field(defaults, 58)
            ted = field(defaults, 11)
            st.default_track = field(ted, 11) if ted is not None else None
        interned = field(pkt, 12)
        if interned is not None and st.valid:
            for en in fields(interned, 2):
                st.names[field(en, 1)] = field(en, 2)
                name_writes[field(en, 2)] += 1
                name_writes_per_seq[(seq, field(en, 2))] += 1
            for sl in fields(interned, 4):
                st.locs[field(sl, 1)] = (field(sl, 2), field(sl, 4))
        cs = field(pkt, 6)
        if cs is not None:
            _pf_clock_snapshot(st, cs)  # trace processor reads nothing else of it
            continue
        if flags & PF_SEQ_NEEDS and not st.valid:
            skipped += 1
            continue
        te = field(pkt, 11)
        # Interned ids, the default track and the default clock are all
        # incremental state.
        uses_clock = field(pkt, 8) is not None and field(pkt, 58) is None and st.default_clock is not None
        uses_ids = te is not None and (field(te, 10) is not None or field(te, 34) is not None)
        uses_track = te is not None and field(te, 11) is None and st.default_track is not None
        needs = uses_clock or uses_ids or uses_track
        if needs and not flags & PF_SEQ_NEEDS:
            missing_needs += 1
        ts = _pf_timestamp(st, pkt) if field(pkt, 8) is not None else None
        td = field(pkt, 60)
        if td is not None:
            uuid = field(td, 1)
            if field(td, 3) is not None:
                pd = field(td, 3)
                procs[uuid] = {"pid": field(pd, 1), "name": field(pd, 6), "cmdline": fields(pd, 2)}
            if field(td, 4) is not None:
                t = field(td, 4)
                threads[uuid] = {"pid": field(t, 1), "tid": field(t, 2), "name": field(t, 5),
                                 "parent": field(td, 5)}
        if te is None:
            continue
        if ts is None:
            raise AssertionError(f"TrackEvent without timestamp: {pkt}")
        typ = field(te, 9)
        track = field(te, 11, st.default_track or 0)
        if typ in (1, 3):
            name = st.names.get(field(te, 10), field(te, 23))
            if typ == 1:
                begins[name] += 1
                balance[track] += 1
                times[track]["begin"].append(ts)
                stacks[track].append((name, ts))
            else:
                slices[track].append((name, ts, ts))
        elif typ == 2:
            balance[track] -= 1
            times[track]["end"].append(ts)
            if stacks[track]:
                name, b = stacks[track].pop()
                slices[track].append((name, b, ts))
    return {"procs": procs, "threads": threads, "begins": begins, "balance": balance,
            "name_writes": name_writes, "name_writes_per_seq": name_writes_per_seq,
            "times": dict(times), "slices": dict(slices), "skipped": skipped, "missing_needs": missing_needs}


def trace_processor():
    """Perfetto's trace_processor_shell: $SFTRACE_TRACE_PROCESSOR, else
    shared/tools beside the checkout, else /work/shared/tools (a worktree
    one level deeper). Skip without it."""
    cands = [os.environ.get("SFTRACE_TRACE_PROCESSOR", ""),
             os.path.join(os.path.dirname(ROOT), "shared", "tools", "trace_processor_shell"),
             "/work/shared/tools/trace_processor_shell"]
    tp = next((c for c in cands if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)
    if not tp:
        raise Skip("Perfetto's trace_processor_shell not found (set SFTRACE_TRACE_PROCESSOR)")
    return tp


def tp_rows(trace, sql):
    """Rows of one query on a Perfetto trace, as lists of strings
    (trace_processor's CSV output, the header left out)."""
    import csv
    qf = os.path.join(tmpdir(), "q.sql")
    with open(qf, "w") as fh:
        fh.write(sql)
    p = run([trace_processor(), "-q", qf, trace], timeout=120)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith('"')]
    return list(csv.reader(lines))[1:]


def parquet_query(script, path, timeout=300):
    """Runs tests/parquet/SCRIPT PATH (nodejs-polars and DuckDB, installed
    from the pinned package-lock.json on first use) and returns the JSON it
    prints. Skip without node."""
    import json
    d = os.path.join(ROOT, "tests", "parquet")
    if not shutil.which("node"):
        raise Skip("node is not installed")
    if not os.path.isdir(os.path.join(d, "node_modules", "nodejs-polars-linux-x64-gnu")):
        run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=d, timeout=600)
    return json.loads(run(["node", os.path.join(d, script), path], timeout=timeout).stdout)


def chrome_slices(log, names=None, keep=None):
    """Per tid, the sorted (begin_ns, end_ns, name) of every frame, from
    `convert --type chrome` of a log or a directory of logs (ts and dur:
    microseconds with 3 exact decimals). keep: write the JSON there and
    leave it."""
    import decimal
    import json
    out = keep or log.rstrip("/") + ".chrome.json"
    run([SFTRACE, "convert", "--type", "chrome"] + (["--names", names] if names else []) + [log, "-o", out])
    with open(out) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    if not keep:
        os.unlink(out)
    per_tid = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            b = int(e["ts"] * 1000)
            per_tid[e["tid"]].append((b, b + int(e["dur"] * 1000), e["name"]))
    return {t: sorted(v) for t, v in per_tid.items()}


def check_perfetto_times(log, s, names=None):
    """Every Perfetto slice, its absolute times rebuilt from the clock
    snapshot and the deltas as trace processor does, equals the frame the
    Chrome JSON output shows for the same thread (absolute CLOCK_MONOTONIC
    ns, no delta encoding)."""
    pf = collections.defaultdict(list)
    for uuid, sl in s["slices"].items():
        pf[s["threads"][uuid]["tid"]].extend(sl)
    pf = {t: sorted((b, e, n) for n, b, e in v) for t, v in pf.items()}
    ch = chrome_slices(log, names)
    eq(sorted(pf), sorted(ch), "threads with slices")
    for tid in ch:
        eq(len(pf[tid]), len(ch[tid]), f"tid {tid}: slices")
        for a, b in zip(pf[tid], ch[tid]):
            eq(a, b, f"tid {tid}: slice (begin ns, end ns, name), Perfetto vs Chrome JSON")
    for uuid, t in s["times"].items():
        eq(t["begin"], sorted(t["begin"]), f"track {uuid}: begin times in order")
        check(t["begin"] and t["begin"][0] > 10**9, f"track {uuid}: absolute times, not deltas: {t['begin'][:3]}")


# ---- reliability helpers (tests/cases/test_reliability.py, test_badinput.py) ----

def _limits(fsize=None, cpu=None, stack=None):
    """A preexec_fn applying resource limits to the child (inherited by
    everything it starts): RLIMIT_FSIZE bytes, RLIMIT_CPU seconds,
    RLIMIT_STACK bytes (-1: unlimited)."""
    import resource

    def apply():
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if cpu is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        if stack is not None:
            lim = resource.RLIM_INFINITY if stack < 0 else stack
            resource.setrlimit(resource.RLIMIT_STACK, (lim, lim))
    return apply


def run_limited(cmd, check_rc=0, timeout=300, env=None, cwd=None, fsize=None, cpu=None, stack=None):
    """run() with resource limits on the child (see _limits). The default
    callers pass a file-size cap as a safety net, so a runaway recording can
    never fill the disk."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd,
                       errors="replace", preexec_fn=_limits(fsize, cpu, stack))
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError(f"{cmd} exited {p.returncode}, want {check_rc}\nstdout:\n{p.stdout[-3000:]}"
                             f"\nstderr:\n{p.stderr[-3000:]}")
    return p


def record_limited(cmd, out=None, args=(), check_rc=0, env=None, timeout=300, fsize=4 << 30, cpu=300,
                   stack=None):
    """record() under resource limits (default: logs capped at 4 GiB, 300 s
    of CPU). Returns (CompletedProcess, log path)."""
    if out is None:
        out = os.path.join(tmpdir(), "sf.log")
    p = run_limited([SFTRACE, "record", "-o", out] + list(args) + ["--"] + list(cmd), check_rc=check_rc,
                    env=env, timeout=timeout, fsize=fsize, cpu=cpu, stack=stack)
    return p, out


_THREAD_RE = re.compile(r"^\s+(\d+)\s+(\d+)\s+(.{16}) +(\d+)\s+(\d+)\s+(\d+) data(?: \+ (\d+) slots? \((\d+) live\))?$")
_COUNTERS_RE = re.compile(r"^counters: dropped events (\d+), write errors (\d+)")
_SUMMARY_RE = re.compile(r"^summary: (\d+) events?, (\d+) threads?, (\d+) objects?, (\d+) lost .*?, (\d+) dropped by the "
                         r"runtime, (\d+) write errors?")


_EVENTS_END = ("\nwarnings (", "\nsummary: ")


def _dump_info_lines(stream, events, scan=None):
    """dump's lines without their newlines, the event lines left out: the
    lines up to 'events:', then (events=True) those from the first line
    starting 'warnings (' or 'summary: ' on. The event lines are skipped in
    1 MiB blocks, not line by line: a log of 8M events was 15 s of Python.
    scan, when given, is called with the whole output, in blocks of whole
    lines."""
    for line in stream:
        if scan:
            scan(line)
        line = line.rstrip("\n")
        yield line
        if line == "events:":
            break
    else:
        return
    if not events:
        return
    buf = "\n"  # we are at the start of a line
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            if scan:
                scan(buf)
            return
        buf += chunk
        ends = [i for i in (buf.find(m) for m in _EVENTS_END) if i >= 0]
        if ends:
            rest = buf[min(ends) + 1:] + stream.read()
            if scan:
                scan(buf[:min(ends) + 1])
                scan(rest)
            yield from rest.splitlines()
            return
        cut = buf.rfind("\n")  # a partial line may still start a marker
        if scan:
            scan(buf[:cut])
        buf = buf[cut:]


def dump_info(log, extra=(), events=False, timeout=600, scan=None):
    """What `sftrace dump` says about a log, without keeping its events:
    {'state', 'dropped', 'write_errors', 'threads': [{serial, tid, name,
    events, lost, data, slots, live}], and, when events=True (the dump is
    read to its end, events skipped line by line), 'warnings' and
    'summary' {events, threads, objects, lost, dropped, write_errors}}.
    With events=False dump is stopped once its thread table is out, which
    keeps this cheap on logs of millions of events. scan (events=True): a
    function given the whole of dump's output, in blocks of whole lines
    (to count lines of millions without a second dump)."""
    p = subprocess.Popen([SFTRACE, "dump"] + list(extra) + [log], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors="replace")
    info = {"threads": [], "warnings": [], "summary": None}
    section = "header"
    try:
        for line in _dump_info_lines(p.stdout, events, scan if events else None):
            if section == "header":
                m = _COUNTERS_RE.match(line)
                if m:
                    info["dropped"], info["write_errors"] = int(m.group(1)), int(m.group(2))
                if line.startswith("pid: "):
                    info["state"] = line.split("state: ", 1)[1]
                if line.startswith("threads ("):
                    section = "threads"
                continue
            if section == "threads":
                m = _THREAD_RE.match(line)
                if m:
                    info["threads"].append({
                        "serial": int(m.group(1)), "tid": int(m.group(2)), "name": m.group(3).strip(),
                        "events": int(m.group(4)), "lost": int(m.group(5)), "data": int(m.group(6)),
                        "slots": int(m.group(7) or 0), "live": int(m.group(8) or 0)})
                elif line == "events:":
                    if not events:
                        break
                    section = "events"
                continue
            if section == "events":
                if line.startswith("warnings ("):
                    section = "warnings"
                elif line.startswith("summary: "):
                    section = "warnings"
                else:
                    continue
            if section == "warnings":
                m = _SUMMARY_RE.match(line)
                if m:
                    keys = ("events", "threads", "objects", "lost", "dropped", "write_errors")
                    info["summary"] = dict(zip(keys, map(int, m.groups())))
                elif line.startswith("  "):
                    info["warnings"].append(line.strip())
    finally:
        p.stdout.close()
        if events:
            rc = p.wait(timeout=timeout)
            err = p.stderr.read()
            p.stderr.close()
            if rc != 0:
                raise AssertionError(f"sftrace dump {log} exited {rc}: {err[-2000:]}")
        else:
            p.kill()
            p.wait(timeout=timeout)
            p.stderr.close()
    if events and info["summary"] is None:
        raise AssertionError(f"sftrace dump {log}: no summary line")
    return info


def iter_dump_events(log, extra=()):
    """The events of `sftrace dump`, streamed (for logs of millions of
    events): yields Event(time, tid, kind, name) like dump_events."""
    p = subprocess.Popen([SFTRACE, "dump"] + list(extra) + [log], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors="replace", bufsize=1 << 20)
    try:
        for line in p.stdout:
            if line.startswith("events:"):
                break
        next(p.stdout, None)  # column titles
        for line in p.stdout:
            parts = line.split(None, 3)
            if not parts:
                break  # the blank line after the events
            if len(parts) < 4 or parts[2] not in ("ENTRY", "EXIT", "TAIL"):
                continue  # allocation events
            name = parts[3].rstrip("\n").strip()
            if name.startswith("[depth "):
                name = name.split("] ", 1)[1]
            yield Event(int(parts[0]), int(parts[1]), parts[2], name)
    finally:
        p.stdout.close()
        p.kill()
        p.wait()
        p.stderr.close()


def replay_text(log, extra=()):
    """`sftrace replay --no-pager` of a log, its whole text."""
    return run([SFTRACE, "replay", "--no-pager"] + list(extra) + [log]).stdout


def call_column(out):
    """The call column of replay's output (after 'TID] | '), comments kept."""
    return [ln.split("] | ", 1)[1].rstrip() for ln in out.splitlines() if "] | " in ln and not ln.startswith("#")]


def report_calls(logs, extra=(), check_rc=0):
    """Calls per (tid, function name) from `sftrace report --threads
    --format tsv` (which runs the same frame repair as convert, so any
    repair shows on its stderr). Returns (Counter, CompletedProcess)."""
    logs = [logs] if isinstance(logs, str) else list(logs)
    p = run([SFTRACE, "report", "--threads", "--format", "tsv", "-n", "0"] + list(extra) + logs, check_rc=check_rc)
    calls = collections.Counter()
    lines = p.stdout.splitlines()
    if lines:
        cols = lines[0].split("\t")
        ti, ni, ci = cols.index("tid"), cols.index("name"), cols.index("calls")
        for line in lines[1:]:
            f = line.split("\t")
            if len(f) == len(cols):
                calls[(int(f[ti]), f[ni])] += int(f[ci])
    return calls, p


def sync_tree(src, dst, keep=("target", "Cargo.lock")):
    """Copies the crate or tree at src into dst, leaving unchanged files (and
    the names in keep at its top) alone, so cargo's fingerprints (mtimes)
    stay valid and dst's target/ keeps its builds; removes files src no
    longer has. Returns dst."""
    import filecmp
    wanted = set()
    for d, dirs, files in os.walk(src):
        rel = os.path.relpath(d, src)
        dirs[:] = [x for x in dirs if not (rel == "." and x in keep)]
        for f in files:
            s, t = os.path.join(d, f), os.path.normpath(os.path.join(dst, rel, f))
            wanted.add(t)
            if not os.path.exists(t) or not filecmp.cmp(s, t, shallow=False):
                os.makedirs(os.path.dirname(t), exist_ok=True)
                shutil.copy2(s, t)
    for d, dirs, files in os.walk(dst):
        rel = os.path.relpath(d, dst)
        dirs[:] = [x for x in dirs if not (rel == "." and x in keep)]
        for f in files:
            if os.path.join(d, f) not in wanted and not (rel == "." and f in keep):
                os.remove(os.path.join(d, f))
    return dst
