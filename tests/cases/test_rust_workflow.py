"""The reference workflow end to end on a real Rust crate (issue 9).

examples/rust-bench (serde_json, regex, rayon, a criterion bench) is built
with XRay sleds, then:
  - the README's main command (scripts/rust-example.sh) runs on it;
  - the agent skill's ```sh blocks (skills/sftrace/SKILL.md) run on it;
  - filtered and unfiltered recordings are checked: the filter is honoured,
    every entry has its exit or tail call, names are demangled Rust paths,
    Perfetto decodes with balanced tracks, the reference polars queries and
    DuckDB read the Parquet, and rayon's threads are separate tids.

The crate is built once per build dir: BUILD/rust-bench is a copy of the
example whose target/ persists across runs (the first build takes about two
minutes on 2 cores, later ones about a second; scripts/test.sh makes it
beside the fuzzer with tests/prebuild_rust.py). Traces of the big runs are
deleted when their case passes."""
import collections
import filecmp
import json
import os
import re
import shutil
import subprocess

from sfkit import (BUILD, ROOT, SFTRACE, Skip, check, check_nesting, check_perfetto_times, count_calls,
                   dump_nesting, eq, parse_dump_events, perfetto_summary, run, tmpdir)

EXAMPLE = os.path.join(ROOT, "examples", "rust-bench")
CRATE = os.path.join(BUILD, "rust-bench")
SKILL = os.path.join(ROOT, "skills", "sftrace", "SKILL.md")
PARQUET_DIR = os.path.join(ROOT, "tests", "parquet")
FILTER_RE = "resolve|normalize|cache"
RESOLVE = "<importmap::engine::Resolver>::resolve"
RESOLVE_SHORT = "importmap::engine::Resolver::resolve"  # report's table (short names)
# Frames a rayon worker has open while it idles: the process exit leaves them.
IDLE_FRAME = re.compile(r"rayon_core::|std::thread::|__rust_begin_short_backtrace")
JOB_EXECUTE = re.compile(r"<rayon_core::job::StackJob<.* as rayon_core::job::Job>::execute$")
# The sizes of the small unfiltered run (the bench's defaults are 300, 4000):
# 180K events over the same ~510 functions as at 20, 200 (480K events),
# every one of them read back from dump, Perfetto and Parquet.
SMALL = {"IMPORTMAP_PACKAGES": "5", "IMPORTMAP_REQUESTS": "50"}

_built = {}      # the bench binary, once per run of the module
_symbols = {}    # exe -> {address: [raw symbols]}


def cargo_env():
    """cargo from rustup, cargo-sftrace and sftrace from BUILD; no Rust
    variables of the caller's (cargo sftrace sets what the build needs, and
    a different RUSTFLAGS would rebuild the crate)."""
    home_bin = os.path.expanduser("~/.cargo/bin")
    return {"RUSTC_BOOTSTRAP": None, "RUSTFLAGS": None, "CARGO_ENCODED_RUSTFLAGS": None, "CARGO_TARGET_DIR": None,
            "PATH": f"{os.path.dirname(SFTRACE)}:{home_bin}:{os.environ.get('PATH', '')}"}


def env_of(extra):
    """The whole environment: ours with extra applied (None removes)."""
    e = dict(os.environ)
    for k, v in extra.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def sync_crate():
    """Copies the example's sources into CRATE; unchanged files are left
    alone so cargo's fingerprints (mtimes) stay valid."""
    keep = {"target", ".gitignore", "sftrace.filter"}
    wanted = set()
    for d, dirs, files in os.walk(EXAMPLE):
        rel = os.path.relpath(d, EXAMPLE)
        dirs[:] = [x for x in dirs if not (rel == "." and (x in keep or x.startswith("sftrace-")))]
        for f in files:
            if rel == "." and f in keep:
                continue
            src = os.path.join(d, f)
            dst = os.path.normpath(os.path.join(CRATE, rel, f))
            wanted.add(dst)
            if not os.path.exists(dst) or not filecmp.cmp(src, dst, shallow=False):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)
    for sub in ("src", "benches"):
        for d, _, files in os.walk(os.path.join(CRATE, sub)):
            for f in files:
                if os.path.join(d, f) not in wanted:
                    os.remove(os.path.join(d, f))


def bench_bin():
    """Builds the bench with sleds (cached) and returns its path, as
    cargo sftrace finds it (cargo's JSON messages)."""
    if "bin" in _built:
        return _built["bin"]
    if not (shutil.which("cargo") or os.path.exists(os.path.expanduser("~/.cargo/bin/cargo"))):
        raise Skip("cargo is not installed")
    run(["sh", os.path.join(ROOT, "scripts", "install-rust-deps.sh")], timeout=900)
    sync_crate()
    for old in os.listdir(CRATE):  # traces left by failed runs: hundreds of MB each
        if old.startswith("sftrace-"):
            shutil.rmtree(os.path.join(CRATE, old))
    # What `cargo sftrace --bench resolver` builds and runs (target/sftrace/).
    cs = os.path.join(os.path.dirname(SFTRACE), "cargo-sftrace")
    out = run([cs, "build", "--bench", "resolver"], cwd=CRATE, env=env_of(cargo_env()), timeout=3600).stdout
    bins = out.split()
    eq(len(bins), 1, f"cargo sftrace build printed one path: {out}")
    _built["bin"] = bins[0]
    return _built["bin"]


def raw_symbols(exe):
    """Address -> raw (mangled) symbol names, from nm."""
    if exe in _symbols:
        return _symbols[exe]
    by_addr = collections.defaultdict(list)
    for line in run(["nm", "--defined-only", exe]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            by_addr[int(parts[0], 16)].append(parts[2])
    _symbols[exe] = by_addr
    return by_addr


def node_polars(script, timeout=300):
    if not shutil.which("node"):
        raise Skip("node is not installed")
    if not os.path.isdir(os.path.join(PARQUET_DIR, "node_modules", "nodejs-polars-linux-x64-gnu")):
        run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PARQUET_DIR, timeout=600)
    return run(["node", "--input-type=module", "-e", script], cwd=PARQUET_DIR, timeout=timeout).stdout


def pola_query(path):
    """tests/parquet/pola_query.mjs: both reference polars queries, DuckDB."""
    node_polars("")
    return json.loads(run(["node", os.path.join(PARQUET_DIR, "pola_query.mjs"), path], timeout=600).stdout)


def symtab_rows(pola):
    out = node_polars("import pl from 'nodejs-polars';"
                      f"const df = pl.scanParquet({json.dumps(pola + '.symtab')}).collectSync();"
                      "console.log(JSON.stringify(df.toRecords().map(r => [String(r.func_id), r.name])));")
    return [(int(f), n) for f, n in json.loads(out)]


def check_demangled(names, min_count=1):
    names = set(names)
    check(len(names) >= min_count, f"{len(names)} functions, want at least {min_count}")
    bad = [n for n in names if "::" not in n or n.startswith(("_R", "_ZN"))]
    check(not bad, f"names that are not demangled Rust paths: {bad[:10]}")


def check_filter_honoured(pola, exe, regex=FILTER_RE):
    """Every function in the trace matches the regex in its demangled name
    or its raw symbol (what `sftrace filter` searches); func_id is the
    function's address in the executable."""
    rx = re.compile(regex)
    raw = raw_symbols(exe)
    rows = symtab_rows(pola)
    check(rows, "functions in the symtab")
    bad = [(hex(fid), name) for fid, name in rows
           if not rx.search(name) and not any(rx.search(r) for r in raw.get(fid, []))]
    check(not bad, f"traced functions outside the filter {regex!r}: {bad[:10]}")
    check_demangled([n for _, n in rows])
    return rows


def record_line(stderr, log):
    """events count from record's 'sftrace: wrote LOG (pid N): N events,
    ...' line, which must report no dropped or lost events."""
    m = re.search(r"^sftrace: wrote " + re.escape(log) + r" \(pid \d+\): (\d+) events, (\d+) threads?[^\n]*$",
                  stderr, re.M)
    check(m, f"record summary for {log}: {stderr[-2000:]}")
    check("DROPPED" not in m.group(0) and "lost" not in m.group(0), m.group(0))
    return int(m.group(1))


def repair_line(stderr):
    m = re.search(r"^sftrace: repaired: (.*)$", stderr, re.M)
    return m.group(1) if m else ""


def record_bench(args, out, filt=None, env=None, timeout=600):
    """sftrace record [-f FILTER] -o OUT -- BENCH ARGS, from the crate dir,
    criterion's files kept out of the tree. Returns the event count."""
    exe = bench_bin()
    e = {"CRITERION_HOME": os.path.join(os.path.dirname(out), "criterion")}
    e.update(env or {})
    cmd = [SFTRACE, "record", "-o", out] + (["-f", filt] if filt else []) + ["--", exe] + list(args)
    p = run(cmd, env=e, cwd=CRATE, timeout=timeout)
    return record_line(p.stderr, out)


def closed_at_end(n):
    return f"{n} open frame{'s' if n > 1 else ''} closed at thread end" if n else ""


def check_exit_race_only(open_frames, main_tid):
    """Filtered runs: the process exit may catch a rayon worker between
    setting the latch main waits on and returning from that job's execute()
    (a selected function: its type names the resolve closure). Nothing else
    may stay open."""
    check(main_tid not in open_frames, f"main thread left frames open: {open_frames.get(main_tid)}")
    for tid, stack in open_frames.items():
        check(len(stack) == 1 and JOB_EXECUTE.match(stack[0]), f"tid {tid}: frames left open: {stack}")


def check_idle_frames_only(open_frames, main_tid):
    check(main_tid not in open_frames, f"main thread left frames open: {open_frames.get(main_tid)}")
    for tid, stack in open_frames.items():
        check(all(IDLE_FRAME.search(n) for n in stack), f"tid {tid}: open frames beyond rayon's idle loop: {stack}")


def trace_summary(pola):
    """Row count, tids, query 1 (the most called functions) and the tids
    that ran resolve: the polars queries that stay fast at 40M rows
    (pola_query.mjs runs both reference queries on the smaller traces)."""
    out = node_polars("import pl from 'nodejs-polars';"
                      f"const f = {json.dumps(pola)};"
                      "const sf = pl.scanParquet(f), sym = pl.scanParquet(f + '.symtab');"
                      "const n = sf.select(pl.len().alias('n')).collectSync().toRecords()[0].n;"
                      "const tids = sf.select(pl.col('tid').nUnique().alias('t')).collectSync().toRecords()[0].t;"
                      "const top = sf.filter(pl.col('kind').eq(1)).groupBy('func_id').agg(pl.len().alias('func_count'))"
                      ".sort('func_count', true).head(10).join(sym, {on: 'func_id'}).collectSync().toRecords();"
                      "const rt = sf.filter(pl.col('kind').eq(1)).join(sym, {on: 'func_id'})"
                      f".filter(pl.col('name').eq(pl.lit({json.dumps(RESOLVE)})))"
                      ".select('tid').unique().collectSync().getColumn('tid').toArray();"
                      "console.log(JSON.stringify({rows: Number(n), tids: Number(tids),"
                      " top: Object.fromEntries(top.map(r => [r.name, Number(r.func_count)])),"
                      " resolve_tids: rt.map(Number)}));")
    return json.loads(out)


def check_workflow_trace(trace_dir, stderr, exe):
    """The checks on a recording of the workflow (filtered; 20-40M events
    with `--profile-time 1`, 150K with `--bench --test`): the C repair
    counters, polars, the symtab."""
    log, pola, pb = (os.path.join(trace_dir, f) for f in ("sf.log", "sf.pola", "sf.pb.gz"))
    events = record_line(stderr, log)
    check(events > 100000, f"{events} events")
    # Every entry has its exit or tail call, except what the process exit
    # leaves: a rayon worker that has just set the latch main waits on may
    # still be inside that job's execute() when main exits. Each conversion
    # prints its repairs; the Parquet rows say how many were this log's.
    # (The skill's ring step adds the calls whose entry fell out of a ring.)
    reps = [part for line in re.findall(r"^sftrace: repaired: (.*)$", stderr, re.M) for part in line.split(", ")]
    check(all(re.fullmatch(r"\d+ (open frames? closed at thread end|frames? began before the ring's window)", x)
              for x in reps), f"convert repaired more than exit-time frames: {reps}")
    with open(pb, "rb") as f:
        eq(f.read(2), b"\x1f\x8b", "sf.pb.gz is gzip")
    r = trace_summary(pola)
    n_open = r["rows"] - events
    check(0 <= n_open <= r["tids"] - 1, f"{r['rows']} rows for {events} events, {r['tids']} threads")
    check(n_open == 0 or closed_at_end(n_open) in reps, f"{n_open} repaired ends, reported: {reps}")
    check(r["top"].get(RESOLVE, 0) > 1000, f"query 1 (most called): {r['top']}")
    check(r["tids"] >= 2, f"tids: {r['tids']}")
    check(len(r["resolve_tids"]) >= 2, f"rayon workers resolving: tids {r['resolve_tids']}")
    check_filter_honoured(pola, exe)


def test_example_script():
    """The README's main command: scripts/rust-example.sh, with one
    iteration per benchmark (its arguments go to cargo sftrace). The same
    command with its default one-second profiling runs is the skill's first
    step (test_skill_blocks_run checks that trace the same way)."""
    exe = bench_bin()
    env = env_of(dict(cargo_env(), SFTRACE=SFTRACE, CRATE_DIR=CRATE))
    p = run(["sh", os.path.join(ROOT, "scripts", "rust-example.sh"), "--", "--bench", "--test"], env=env,
            timeout=1800)
    check(re.search(r"^cargo-sftrace: tracing bench resolver: \S+/resolver-[0-9a-f]+ --bench --test$", p.stderr, re.M),
          f"the script's arguments reach the bench: {p.stderr[-2000:]}")
    m = re.search(r"^Trace files are in (\S+):$", p.stdout, re.M)
    check(m, f"closing note: {p.stdout[-2000:]}")
    trace_dir = m.group(1)
    for hint in ("https://ui.perfetto.dev", "vizviewer --use_external_processor", "pl.scan_parquet(",
                 "SELECT count(*) FROM"):
        check(hint in p.stdout, f"closing note names {hint}")
    table = p.stdout.split("== sftrace report", 1)[-1]
    check(re.search(r"^\s+Total\s+Self\s+Calls\s+Avg\s+Min\s+Max\s+Function$", table, re.M), table[:3000])
    # One iteration each: the resolver's helpers outweigh resolve's own
    # self time, and the table holds the top 15 by self time.
    check(re.search(r"^.*\s(\d+)\s+\S+ \S+\s+\S+ \S+\s+\S+ \S+\s+" + re.escape(RESOLVE_SHORT) + r"(_\w+)?$", table,
                    re.M), f"the resolver's functions in the report: {table[:3000]}")
    check_workflow_trace(trace_dir, p.stderr, exe)
    shutil.rmtree(trace_dir)


def test_filtered_nesting_names_perfetto():
    """One iteration of each benchmark, filtered: small enough to read back
    every event (dump) and every Perfetto slice."""
    exe = bench_bin()
    d = tmpdir()
    filt = os.path.join(d, "sftrace.filter")
    run([SFTRACE, "filter", "-p", exe, "-r", FILTER_RE, "-o", filt])
    log = os.path.join(d, "sf.log")
    n = record_bench(["--bench", "--test"], log, filt=filt)
    dump = run([SFTRACE, "dump", log]).stdout  # once: its events and its header's pid
    events = parse_dump_events(dump)
    eq(len(events), n, "dump shows every recorded event")
    main_tid = int(re.search(r"^pid: (\d+)", dump, re.M).group(1))
    open_frames = check_nesting(events)
    check_exit_race_only(open_frames, main_tid)
    n_open = sum(len(s) for s in open_frames.values())
    calls = count_calls(events)
    check(calls[RESOLVE] >= 4000, f"resolve calls: {calls[RESOLVE]}")
    tids = {e.tid for e in events}
    check(len(tids) >= 2, f"threads with events: {tids}")
    check({e.tid for e in events if e.name == RESOLVE} - {main_tid}, "resolve runs on rayon's workers")

    pb = os.path.join(d, "sf.pb.gz")
    p = run([SFTRACE, "convert", "--names", "full", log, "-o", pb])  # dump's names
    eq(repair_line(p.stderr), closed_at_end(n_open), "convert repaired only the exit-time frames")
    s = perfetto_summary(pb)
    eq(dict(s["begins"]), dict(calls), "one Perfetto slice per call, by name")
    check(all(v == 0 for v in s["balance"].values()), f"unbalanced tracks: {s['balance']}")
    eq(sorted(t["tid"] for t in s["threads"].values()), sorted(tids), "one thread track per tid")
    eq((s["skipped"], s["missing_needs"]), (0, 0), "packets dropped / incremental state without the flag")
    check_perfetto_times(log, s, names="full")

    pola = os.path.join(d, "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", pola])
    r = pola_query(pola)
    eq(r["calls"], dict(calls), "query 1: calls per function, as dump counts them")
    eq(r["rows"], len(events) + n_open, "rows")
    eq(r["tids"], len(tids), "tids")
    eq(r["bad_frames"], 0, "bad frames")
    rows = check_filter_honoured(pola, exe)
    eq({name for _, name in rows}, set(calls), "symtab and dump name the same functions")
    shutil.rmtree(d)


def test_unfiltered_small():
    """Every sled of the real binary patched; a small input so that every
    event and every Perfetto slice can be read back."""
    exe = bench_bin()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    n = record_bench(["--bench", "--test"], log, env=SMALL)
    dump = run([SFTRACE, "dump", log]).stdout  # once: its header and its events
    head = dump.split("\nevents:", 1)[0]
    m = re.search(r"sleds (\d+), patched (\d+), functions (\d+)", head)
    check(m, head)
    check(int(m.group(1)) > 5000 and int(m.group(3)) > 2000, f"a real binary: {m.group(0)}")
    eq(m.group(2), m.group(1), "every sled patched")
    main_tid = int(re.search(r"^pid: (\d+)", head, re.M).group(1))
    events = parse_dump_events(dump)
    eq(len(events), n, "dump shows every recorded event")
    open_frames = check_nesting(events)
    check_idle_frames_only(open_frames, main_tid)
    n_open = sum(len(s) for s in open_frames.values())
    calls = count_calls(events)
    check_demangled(calls, min_count=300)
    tids = {e.tid for e in events}
    # rayon starts a worker per CPU (2 on CI); on a loaded machine the
    # small input can end before the second worker is first scheduled
    check(len(tids) >= 2, f"main thread and rayon workers: {tids}")
    check(collections.Counter(e.kind for e in events)["TAIL"] > 0, "tail calls recorded")

    pb = os.path.join(d, "sf.pb.gz")
    p = run([SFTRACE, "convert", "--names", "full", log, "-o", pb])  # dump's names
    eq(repair_line(p.stderr), closed_at_end(n_open), "the only repairs: the workers' frames at exit")
    s = perfetto_summary(pb)
    eq(dict(s["begins"]), dict(calls), "one Perfetto slice per call")
    check(all(v == 0 for v in s["balance"].values()), f"unbalanced tracks: {s['balance']}")
    eq(len(s["threads"]), len(tids), "thread tracks")

    pola = os.path.join(d, "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", pola])
    r = pola_query(pola)
    eq(r["calls"], dict(calls), "query 1: calls per function")
    eq(r["rows"], len(events) + n_open, "rows: every event plus the repaired ends")
    eq((r["bad_frames"], r["orphans"], r["tids"]), (0, 0, len(tids)), "bad frames, orphans, tids")
    shutil.rmtree(d)


def test_unfiltered_full_size():
    """The stress case: the bench's full input, unfiltered (millions of
    events on three threads), checked through the C repair counters, polars
    and DuckDB. One benchmark, resolve_warm (its setup parses the map,
    compiles the patterns and resolves the batch, then its iteration
    resolves it again: 8000 resolve calls, 3.5M events; all three
    benchmarks write 6.4M events over the same ~520 functions)."""
    exe = bench_bin()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    n = record_bench(["--bench", "--test", "resolve_warm"], log)
    check(n > 1000000, f"{n} events")
    pola = os.path.join(d, "sf.pola")
    p = run([SFTRACE, "convert", "--type", "pola", log, "-o", pola])
    rep = repair_line(p.stderr)
    m = re.fullmatch(r"(?:(\d+) open frames? closed at thread end)?", rep)
    check(m, f"only idle frames may be closed at exit: {rep!r}")
    n_open = int(m.group(1) or 0)
    check(n_open <= 12, f"{n_open} open frames at exit")
    r = pola_query(pola)
    eq(r["rows"], n + n_open, "rows")
    eq(r["duck_rows"], r["rows"], "DuckDB rows")
    eq((r["bad_frames"], r["orphans"]), (0, 0), "bad frames, orphans")
    check(r["tids"] >= 3, f"tids: {r['tids']}")
    check(r["calls"].get(RESOLVE, 0) >= 8000, f"resolve calls: {r['calls'].get(RESOLVE)}")
    check(r["leaves"], "query 2")
    rows = symtab_rows(pola)
    check_demangled([name for _, name in rows], min_count=400)
    raw = raw_symbols(exe)
    check(all(fid in raw for fid, _ in rows), "every func_id is a function address of the binary")
    p = run([SFTRACE, "convert", log, "-o", os.path.join(d, "sf.pb.gz")])
    eq(repair_line(p.stderr), rep, "Perfetto: the same repairs")
    shutil.rmtree(d)


# --- the skill ---------------------------------------------------------------

def skill_blocks():
    text = open(SKILL).read()
    return re.findall(r"^```sh\n(.*?)^```$", text, re.M | re.S)


_TRACE_PATH = re.compile(r'\$TRACE_DIR/([\w.-]+)')
_FILTER_FILE = re.compile(r'\b[\w-]+\.filter\b')


def skill_jobs(blocks):
    """Splits the blocks into a setup (up to the block that writes
    sftrace.filter: it sets TRACE_DIR and BENCH_BIN) and jobs that can run
    side by side: blocks that name the same file under $TRACE_DIR or the
    same filter file (other than what the setup wrote) are in one job, in
    their order. Returns (setup, [[block index, ...], ...])."""
    ends = [i for i, b in enumerate(blocks) if "-o sftrace.filter" in b]
    check(ends, "a block writes sftrace.filter")
    n_setup = ends[0] + 1
    for b in blocks[n_setup:]:
        check(not re.search(r'^\s*(TRACE_DIR|BENCH_BIN)=', b, re.M), f"only the setup sets TRACE_DIR/BENCH_BIN: {b}")
    setup_names = {"sf.log"} | {x for b in blocks[:n_setup] for x in _FILTER_FILE.findall(b) + _TRACE_PATH.findall(b)}
    jobs = []  # [(names, [indices])]
    for i in range(n_setup, len(blocks)):
        names = (set(_TRACE_PATH.findall(blocks[i])) | set(_FILTER_FILE.findall(blocks[i]))) - setup_names
        merged = [j for j in jobs if j[0] & names]
        job = (names.union(*(j[0] for j in merged)), sorted([i] + [k for j in merged for k in j[1]]))
        jobs = [j for j in jobs if j not in merged] + [job]
    return blocks[:n_setup], sorted((j[1] for j in jobs), key=lambda ix: ix[0])


def test_skill_blocks_run():
    """Every ```sh block of skills/sftrace/SKILL.md, in order within each
    job (skill_jobs): the setup blocks as one script in the crate's
    directory, then the independent jobs two at a time (CI has 2 cores);
    each block's output is joined in the document's order, and then what the
    steps wrote is checked."""
    exe = bench_bin()
    blocks = skill_blocks()
    check(len(blocks) >= 8, f"{len(blocks)} sh blocks in {SKILL}")
    setup, jobs = skill_jobs(blocks)
    check(len(jobs) >= 4, f"independent jobs: {jobs}")
    env = cargo_env()
    script = "set -eu\n" + "\n".join(setup) + '\necho "TRACE_VARS=$TRACE_DIR $BENCH_BIN"\n'
    p = run(["sh", "-c", script], env=env_of(env), cwd=CRATE, timeout=1800)
    m = re.search(r"^TRACE_VARS=(\S+) (\S+)$", p.stdout, re.M)
    check(m, p.stdout[-2000:])
    env.update(TRACE_DIR=m.group(1), BENCH_BIN=m.group(2))
    outs = {}
    import concurrent.futures

    def run_job(ix):
        for i in ix:  # one block after the other; the first failure stops the job
            outs[i] = run(["sh", "-c", "set -eu\n" + blocks[i]], env=env_of(env), cwd=CRATE, timeout=1800)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        futs = [ex.submit(run_job, ix) for ix in jobs]
        concurrent.futures.wait(futs)
    for f in futs:
        f.result()
    done = [p] + [outs[i] for i in range(len(setup), len(blocks))]
    p = subprocess.CompletedProcess(p.args, 0, "".join(x.stdout for x in done), "".join(x.stderr for x in done))
    trace_dir = os.path.join(CRATE, m.group(1))
    for f in ("sf.log", "sf.pola", "sf.pola.symtab", "sf.pb.gz", "once.log", "within.log", "procs.pb.gz",
              "once.json", "once.folded", "once.svg"):
        check(os.path.getsize(os.path.join(trace_dir, f)) > 0, f"{f} written by the skill's steps")
    procs = [f for f in os.listdir(os.path.join(trace_dir, "procs")) if f.endswith(".log")]
    eq(len(procs), 2, f"one log per bench process: {procs}")
    check(re.search(r"^.*\s(\d+)\s+\S+ \S+\s+\S+ \S+\s+\S+ \S+\s+" + re.escape(RESOLVE_SHORT) + "$",
                    p.stdout.split("== sftrace report", 1)[-1].split("Trace files are in", 1)[0], re.M),
          f"resolve in cargo sftrace's report: {p.stdout[:3000]}")
    tables = len(re.findall(r"^\s+Total\s+Self\s+Calls\s+Avg\s+Min\s+Max\s+Function$", p.stdout, re.M))
    check(tables >= 4, f"report: one table, then one per thread (main and rayon's): {tables}")
    check(re.search(r"^\d+ functions in both, \d+ only in old, \d+ only in new$", p.stdout, re.M),
          "report --diff of the before and after runs")
    check(re.search(r"^caller\tcalls\n(.+\t\d+\n)+", p.stdout, re.M), "query: the callers of resolve")
    check(re.search(r"^\s+\d+\s+\d+ ENTRY\s+" + re.escape("<importmap::engine::Resolver>::resolve_bare"), p.stdout,
                    re.M), f"the --within dump starts at resolve_bare: {p.stdout[-2000:]}")
    check_workflow_trace(trace_dir, p.stderr, exe)
    open_frames, names = dump_nesting(os.path.join(trace_dir, "within.log"))  # 1.2M events
    eq(open_frames, {}, "within: every entry has its exit")
    check(names["<importmap::engine::Resolver>::resolve_bare"] > 0 and len(names) > 10,
          f"within records resolve_bare's subtree: {names.most_common(5)}")
    once = run([SFTRACE, "report", "--format", "tsv", "-n", "0", os.path.join(trace_dir, "once.log")]).stdout
    names = [line.split("\t")[1] for line in once.splitlines()[1:] if line]
    check(len(names) > 10 and all(re.match(r"<?importmap::", n) for n in names),
          f"the anchored filter keeps only importmap's functions: {names[:10]}")
    shutil.rmtree(trace_dir)
