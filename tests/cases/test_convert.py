"""sftrace convert: Perfetto (decoded with protoc) and Parquet (read by
polars and DuckDB) on fixtures with exact, known call counts; repairs of
broken call structure; bad input and outputs that cannot be written."""
import json
import os
import shutil

from sfkit import (ROOT, SFTRACE, Skip, calls_fixture, check, check_perfetto_times, eq, perfetto_summary, record, run,
                   tmpdir)

CALLS = {"leaf": 60, "middle": 20, "outer": 10, "recurse": 51, "tail_caller": 5, "tail_callee": 5,
         "thread_work": 8, "tleaf": 8000, "lib_add": 7, "lib_inner": 7, "deep": 21, "crash_here": 1, "main": 1}
PARQUET_DIR = os.path.join(ROOT, "tests", "parquet")


def pola_query(path):
    if not shutil.which("node"):
        raise Skip("node is not installed")
    if not os.path.isdir(os.path.join(PARQUET_DIR, "node_modules", "nodejs-polars-linux-x64-gnu")):
        run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PARQUET_DIR, timeout=600)
    p = run(["node", os.path.join(PARQUET_DIR, "pola_query.mjs"), path], timeout=300)
    return json.loads(p.stdout)


def recorded_calls():
    exe = calls_fixture()
    _, log = record([exe])
    return log


def test_perfetto_exact_slices():
    log = recorded_calls()
    for out in ("sf.pb.gz", "sf.pb"):
        path = os.path.join(os.path.dirname(log), out)
        run([SFTRACE, "convert", log, "-o", path])
        with open(path, "rb") as f:
            magic = f.read(2)
        eq(magic == b"\x1f\x8b", out.endswith(".gz"), f"{out} gzip or not")
        s = perfetto_summary(path)
        eq(dict(s["begins"]), CALLS, f"{out}: slices per function")
        eq(len(s["procs"]), 1, "process tracks")
        proc = next(iter(s["procs"].values()))
        eq(proc["name"], "calls", "process name")
        eq(len(s["threads"]), 9, "thread tracks")
        check(all(t["parent"] in s["procs"] and t["pid"] == proc["pid"] for t in s["threads"].values()),
              "thread tracks under the process")
        check(all(v == 0 for v in s["balance"].values()), f"unbalanced tracks: {s['balance']}")
        check(all(n == 1 for n in s["name_writes_per_seq"].values()),
              f"names interned once per thread sequence: {s['name_writes_per_seq']}")
        eq(len({seq for seq, _ in s["name_writes_per_seq"]}), 9, "one interning sequence per thread")
        eq((s["skipped"], s["missing_needs"]), (0, 0), "packets dropped / incremental state without the flag")
        check_perfetto_times(log, s)


def _pb_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _pb(num, v):
    """One protobuf field: an int (varint), or bytes / a list of fields (a
    nested message)."""
    if isinstance(v, int):
        return _pb_varint(num << 3) + _pb_varint(v)
    if isinstance(v, list):
        v = b"".join(v)
    return _pb_varint(num << 3 | 2) + _pb_varint(len(v)) + v


def test_perfetto_reader_follows_trace_processor():
    """The reader the cases above rely on (sfkit.perfetto_summary), on a
    hand-made trace: defaults, a clock snapshot, deltas, a timestamp that goes
    backwards (absolute, explicit BOOTTIME, the running value untouched), a
    packet on a sequence whose state was never cleared (dropped)."""
    T0 = 5_000_000_000
    ev = lambda typ, *f: _pb(11, [_pb(9, typ)] + list(f))  # noqa: E731
    seq = lambda *f: _pb(1, [_pb(10, 7)] + list(f))  # noqa: E731
    needs = _pb(13, 2)
    packets = [
        seq(_pb(13, 1), _pb(87, 1), _pb(59, [_pb(58, 64), _pb(11, [_pb(11, 42)])]),
            _pb(60, [_pb(1, 42), _pb(4, [_pb(1, 1), _pb(2, 2), _pb(5, b"t")])])),
        seq(_pb(8, T0), _pb(58, 6), needs,
            _pb(6, [_pb(1, [_pb(1, 6), _pb(2, T0)]), _pb(1, [_pb(1, 64), _pb(2, T0), _pb(3, 1)])])),
        seq(_pb(8, 0), needs, _pb(12, [_pb(2, [_pb(1, 1), _pb(2, b"outer")])]), ev(1, _pb(10, 1))),
        seq(_pb(8, 100), needs, _pb(12, [_pb(2, [_pb(1, 2), _pb(2, b"inner")])]), ev(1, _pb(10, 2))),
        seq(_pb(8, T0 + 50), _pb(58, 6), needs, ev(2)),      # backwards: absolute
        seq(_pb(8, 25), needs, ev(2)),                      # T0 + 100 + 25
        _pb(1, [_pb(10, 8), _pb(8, 1), needs, ev(1, _pb(23, b"lost"))]),
    ]
    d = tmpdir()
    path = os.path.join(d, "hand.pb")
    with open(path, "wb") as f:
        f.write(b"".join(packets))
    s = perfetto_summary(path)
    eq(s["slices"], {42: [("inner", T0 + 100, T0 + 50), ("outer", T0, T0 + 125)]}, "slices on the default track")
    eq(s["times"][42], {"begin": [T0, T0 + 100], "end": [T0 + 50, T0 + 125]}, "absolute times")
    eq((s["skipped"], s["missing_needs"]), (1, 0), "skipped / unflagged")
    shutil.rmtree(d)


def test_perfetto_default_type_is_explicit_too():
    log = recorded_calls()
    a, b = log + ".a.pb", log + ".b.pb"
    run([SFTRACE, "convert", log, "-o", a])
    run([SFTRACE, "convert", "--type", "perfetto", log, "-o", b])
    eq(open(a, "rb").read(), open(b, "rb").read(), "same bytes")


def test_pola_schema_and_reference_queries():
    log = recorded_calls()
    out = os.path.join(os.path.dirname(log), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    r = pola_query(out)
    eq(r["types"], [["frame_id", "u64"], ["parent", "u64"], ["tid", "u32"], ["func_id", "u64"],
                    ["time", "duration[ns]"], ["kind", "u32"]], "polars event schema")
    eq(r["symtab_types"], [["func_id", "u64"], ["name", "str"], ["path", "str"], ["aliases", "str"]],
       "polars symtab schema")
    eq(r["calls"], CALLS, "query 1: calls per function")
    eq(r["rows"], 2 * sum(CALLS.values()), "one row per event")
    eq(r["symtab_rows"], len(CALLS), "one symtab row per function")
    eq(r["bad_frames"], 0, "frames without exactly one entry and one end")
    eq(r["orphans"], 0, "parents that are not frames")
    eq(r["tids"], 9, "threads")
    check(r["leaves"] and all(x["rows"] == 2 for x in r["leaves"]), f"query 2: {r['leaves']}")
    eq(r["duck_rows"], r["rows"], "DuckDB row count")
    eq(r["duck_types"], [["frame_id", "UBIGINT"], ["parent", "UBIGINT"], ["tid", "UINTEGER"],
                         ["func_id", "UBIGINT"], ["time", "BIGINT"], ["kind", "UINTEGER"]], "DuckDB types")
    eq(r["duck_symtab_types"], [["func_id", "UBIGINT"], ["name", "VARCHAR"], ["path", "VARCHAR"], ["aliases", "VARCHAR"]],
       "DuckDB symtab types")


def test_pola_func_id_matches_nm():
    exe = calls_fixture()
    _, log = record([exe])
    out = os.path.join(os.path.dirname(log), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", out])
    nm = run(["nm", exe]).stdout
    addr = {line.split()[2]: int(line.split()[0], 16) for line in nm.splitlines() if len(line.split()) == 3}
    if not shutil.which("node"):
        raise Skip("node is not installed")
    script = ("import pl from 'nodejs-polars';"
              f"const df = pl.scanParquet('{out}.symtab').collectSync();"
              "console.log(JSON.stringify(df.toRecords().map(r => [r.name, String(r.func_id), r.path])));")
    p = run(["node", "--input-type=module", "-e", script], cwd=PARQUET_DIR)
    rows = json.loads(p.stdout)
    for name, fid, path in rows:
        if name in ("lib_add", "lib_inner"):
            check(int(fid) >> 48 >= 1, f"{name}: shared-library ids carry an object number")
            continue
        eq(int(fid), addr[name], f"func_id of {name} is its nm address")
        check(path.endswith("tests/fixtures/calls.c:" + path.rsplit(":", 1)[1]) and int(path.rsplit(":", 1)[1]) > 0,
              f"path of {name}: {path}")


def test_crash_repaired_and_reported():
    exe = calls_fixture()
    _, log = record([exe, "segv"], check_rc=139)
    out = os.path.join(os.path.dirname(log), "sf.pb")
    p = run([SFTRACE, "convert", log, "-o", out])
    check("23 open frames closed at thread end" in p.stderr, p.stderr)
    s = perfetto_summary(out)
    check(all(v == 0 for v in s["balance"].values()), "balanced after repair")
    eq(s["begins"]["deep"], 21, "deep frames")
    check_perfetto_times(log, s)
    pola = os.path.join(os.path.dirname(log), "sf.pola")
    run([SFTRACE, "convert", "--type", "pola", log, "-o", pola])
    r = pola_query(pola)
    eq(r["bad_frames"], 0, "every entry has one end row after repair")


def test_bad_inputs_fail_cleanly():
    d = tmpdir()
    empty = os.path.join(d, "empty.log")
    open(empty, "w").close()
    rnd = os.path.join(d, "random.log")
    with open(rnd, "wb") as f:
        f.write(os.urandom(10000))
    cases = [
        (empty, "empty"),
        (rnd, "not an sftrace log"),
        (d, "no sftrace logs"),
        (os.path.join(d, "missing.log"), "No such file"),
    ]
    for path, msg in cases:
        out = os.path.join(d, "out.pb")
        p = run([SFTRACE, "convert", path, "-o", out], check_rc=1)
        check(msg in p.stderr, f"{path}: {p.stderr}")
        eq(len(p.stderr.strip().splitlines()), 1, f"one line for {path}: {p.stderr}")
        check(not os.path.exists(out), "no output left")
    log = recorded_calls()
    p = run([SFTRACE, "convert", log, "-o", "/nonexistent-dir/x.pb"], check_rc=1)
    check("/nonexistent-dir/x.pb" in p.stderr, p.stderr)
    p = run([SFTRACE, "convert", "--type", "nope", log, "-o", os.path.join(d, "x")], check_rc=2)
    check("unknown output type" in p.stderr, p.stderr)
    p = run([SFTRACE, "convert", log], check_rc=2)
    check("-o OUT" in p.stderr, p.stderr)
    p = run([SFTRACE, "convert", "--bogus", log], check_rc=2)


def test_truncated_log_converts_with_warning():
    log = recorded_calls()
    data = open(log, "rb").read()
    cut = os.path.join(os.path.dirname(log), "cut.log")
    with open(cut, "wb") as f:
        f.write(data[: len(data) - 3000])
    out = os.path.join(os.path.dirname(log), "cut.pb")
    p = run([SFTRACE, "convert", cut, "-o", out])
    check("warning" in p.stderr, p.stderr)
    s = perfetto_summary(out)
    check(all(v == 0 for v in s["balance"].values()), "balanced")


def test_build_id_mismatch_refused():
    d = tmpdir()
    src = os.path.join(d, "prog.c")
    with open(src, "w") as f:
        f.write("__attribute__((noinline)) int f(int x){return x+1;}\nint main(void){return f(0)-1;}\n")
    exe = os.path.join(d, "prog")
    run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1", "-o", exe, src])
    _, log = record([exe], out=os.path.join(d, "sf.log"))
    saved = exe + ".orig"
    shutil.copy(exe, saved)
    with open(src, "a") as f:
        f.write("int unused_change(void){return 42;}\n")
    run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1", "-o", exe, src])
    out = os.path.join(d, "out.pb")
    p = run([SFTRACE, "convert", log, "-o", out], check_rc=1)
    check("build-id" in p.stderr and "mismatch" in p.stderr, p.stderr)
    check(not os.path.exists(out))
    run([SFTRACE, "convert", "--force", log, "-o", out])
    run([SFTRACE, "convert", "-s", saved, log, "-o", out])
    eq(perfetto_summary(out)["begins"]["f"], 1, "symbolized through --symbol")
