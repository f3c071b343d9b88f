"""`cargo sftrace` (issue 31): build with XRay sleds into target/sftrace/,
find the executables in cargo's JSON messages, record, convert, report.

Fixture crates (tests/fixtures/cargo_*) have no dependencies and build in
seconds; each is copied into BUILD/cargo/NAME, whose target/ persists across
runs. The bundled crate's bench reuses BUILD/rust-bench (test_rust_workflow
builds the same target/sftrace). Counts are exact: twobin's walk(n) calls
step n times; the bench walks one step per program argument plus one."""
import os
import re
import shutil

from sfkit import BUILD, ROOT, SFTRACE, Skip, check, eq, run, sync_tree, tmpdir

CARGO_SFTRACE = os.path.join(BUILD, "cargo-sftrace")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
RUST_BENCH = os.path.join(BUILD, "rust-bench")
XRAY = "-Zinstrument-xray=always"


RUST_VARS = ("RUSTC_BOOTSTRAP", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_TARGET_DIR", "CARGO", "RUSTC",
             "RUSTUP_TOOLCHAIN")


def env(extra=None):
    """The whole environment for cargo and cargo-sftrace: cargo and rustc
    from rustup, cargo-sftrace and sftrace from BUILD (so that `cargo
    sftrace` finds its subcommand), none of the Rust variables the tests
    decide, plus extra."""
    home_bin = os.path.expanduser("~/.cargo/bin")
    if not os.path.exists(os.path.join(home_bin, "cargo")) and not shutil.which("cargo"):
        raise Skip("cargo is not installed")
    e = {k: v for k, v in os.environ.items() if k not in RUST_VARS}
    e["PATH"] = f"{BUILD}:{home_bin}:{os.environ.get('PATH', '')}"
    e.update(extra or {})
    return e


def run_cs(args, cwd, check_rc=0, extra_env=None, timeout=900):
    """cargo-sftrace ARGS in cwd (CompletedProcess, text)."""
    import subprocess
    p = subprocess.run([CARGO_SFTRACE] + list(args), capture_output=True, text=True, cwd=cwd, env=env(extra_env),
                       timeout=timeout, errors="replace")
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError(f"cargo-sftrace {args} exited {p.returncode}, want {check_rc}\nstdout:\n"
                             f"{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def cargo(args, cwd):
    """Plain cargo, as the user runs it."""
    import subprocess
    p = subprocess.run(["cargo"] + list(args), capture_output=True, text=True, cwd=cwd, env=env(), timeout=900)
    eq(p.returncode, 0, f"cargo {args}: {p.stderr[-2000:]}")
    return p


def fixture(name):
    return sync_tree(os.path.join(FIXTURES, "cargo_" + name), os.path.join(BUILD, "cargo", name))


def trace_dir(p):
    m = re.search(r"^Trace files are in (\S+):$", p.stdout, re.M)
    check(m, f"closing note: {p.stdout[-2000:]}")
    return m.group(1)


def calls(log):
    """Calls per function name, from report's TSV (one row per function of
    each binary: summed by name)."""
    out = run([SFTRACE, "report", "--format", "tsv", "-n", "0", log]).stdout.splitlines()
    cols = out[0].split("\t")
    c = {}
    for f in (line.split("\t") for line in out[1:]):
        c[f[cols.index("name")]] = c.get(f[cols.index("name")], 0) + int(f[cols.index("calls")])
    return c


def logs(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".log"))


def build_line(p):
    m = re.search(r"^cargo-sftrace: building: (.*)$", p.stderr, re.M)
    check(m, p.stderr[-2000:])
    return m.group(1)


def test_cargo_test_every_binary():
    """cargo sftrace test: the lib's unit tests and both integration test
    binaries, --filter-regex applied to each; the bin's (empty) test harness
    selects nothing and writes no log; doctests are named as not traced."""
    crate = fixture("twobin")
    p = run_cs(["test", "-r", "^twobin::"], crate)
    line = build_line(p)
    check(line.startswith("RUSTC_BOOTSTRAP='1' CARGO_TARGET_DIR='" + os.path.join(crate, "target", "sftrace") + "' "),
          f"stable: RUSTC_BOOTSTRAP=1, target/sftrace: {line}")
    check(" cargo test --no-run --message-format=json-render-diagnostics --profile sftrace --config "
          "'profile.sftrace.inherits=\"release\"' --config 'profile.sftrace.debug=\"line-tables-only\"' --config "
          "'build.rustflags=[\"" + XRAY + "\"]'" in line, f"no profiling profile: release + line tables: {line}")
    d = trace_dir(p)
    check(d.startswith(os.path.join(crate, "target", "sftrace", "traces", "test-")), d)
    eq(logs(d), ["lib-twobin.log", "test-one.log", "test-two.log"], "one log per test binary that ran twobin code")
    eq(calls(os.path.join(d, "lib-twobin.log")), {"twobin::walk": 1, "twobin::step": 3, "twobin::main": 1},
       "lib tests: walk(3), and the harness's main (twobin::main)")
    eq(calls(os.path.join(d, "test-one.log")), {"twobin::walk": 1, "twobin::step": 5}, "tests/one.rs")
    eq(calls(os.path.join(d, "test-two.log")), {"twobin::walk": 1, "twobin::step": 9}, "tests/two.rs: 7 + 2")
    eq(calls(d), {"twobin::walk": 3, "twobin::step": 17, "twobin::main": 1}, "the directory: every binary")
    for f in ("sf.pola", "sf.pola.symtab", "sf.pb.gz"):
        check(os.path.getsize(os.path.join(d, f)) > 0, f)
    check("Doctests are not traced (rustdoc builds and runs them itself): `cargo test --doc` runs them." in p.stdout,
          p.stdout[-1500:])
    check(re.search(r"^\s+Total\s+Self\s+Calls\s+Avg\s+Min\s+Max\s+Function$", p.stdout, re.M), "the report")

    # A FILTER: libtest's, in every binary; only tests/two.rs has a match.
    p = run_cs(["test", "seven", "-r", "^twobin::"], crate)
    d = trace_dir(p)
    eq(logs(d), ["lib-twobin.log", "test-two.log"], "the binaries whose twobin code ran")
    eq(calls(os.path.join(d, "lib-twobin.log")), {"twobin::main": 1}, "the lib's harness, no test")
    eq(calls(os.path.join(d, "test-two.log")), {"twobin::walk": 1, "twobin::step": 7}, "walks_seven alone")


def test_cargo_test_target():
    """--test NAME with the program's arguments after --."""
    crate = fixture("twobin")
    p = run_cs(["--test", "two", "-r", "^twobin::", "--", "steps_twice"], crate)
    d = trace_dir(p)
    check(os.path.basename(d).startswith("two-"), d)
    eq(logs(d), ["sf.log"], "one log")
    eq(calls(os.path.join(d, "sf.log")), {"twobin::step": 2}, "steps_twice only")


def test_cargo_bench_args_through_cargo():
    """`cargo sftrace --bench NAME` through cargo itself (the subcommand on
    PATH): default arguments --bench --profile-time 1 (3 arguments: walk(4)),
    or the user's."""
    crate = fixture("twobin")
    p = cargo(["sftrace", "--bench", "spin", "-r", "^twobin::"], crate)
    check("spin 10\n" in p.stdout, p.stdout[-500:])
    check(re.search(r"^cargo-sftrace: tracing bench spin: \S+/spin-[0-9a-f]+ --bench --profile-time 1$", p.stderr,
                    re.M), p.stderr[-2000:])
    eq(calls(trace_dir(p)), {"twobin::walk": 1, "twobin::step": 4}, "default bench arguments")
    p = run_cs(["--bench", "spin", "-r", "^twobin::", "--no-convert", "--", "only"], crate)
    d = trace_dir(p)
    eq(sorted(f for f in os.listdir(d) if not f.endswith((".filters", ".recorded.filter"))), ["sf.log"], "--no-convert: the log alone")
    eq(calls(d), {"twobin::walk": 1, "twobin::step": 2}, "the user's arguments")


def tree_state(root, skip):
    """(relative path, mtime_ns, size) of every file under root, skipping
    the directory skip."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if os.path.join(d, x) != skip]
        for f in files:
            st = os.stat(os.path.join(d, f))
            out.append((os.path.relpath(os.path.join(d, f), root), st.st_mtime_ns, st.st_size))
    return sorted(out)


def test_cargo_user_target_untouched():
    """The user's normal build stays cached: cargo sftrace writes only
    target/sftrace/, and a normal `cargo build` after it compiles nothing."""
    crate = fixture("twobin")
    cargo(["build", "--bin", "hop"], crate)
    target = os.path.join(crate, "target")
    before = tree_state(target, os.path.join(target, "sftrace"))
    p = run_cs(["--bin", "hop", "-r", "^twobin::"], crate)
    eq(calls(trace_dir(p)), {"twobin::walk": 1, "twobin::step": 2}, "the bin")
    eq(tree_state(target, os.path.join(target, "sftrace")), before, "target/ outside target/sftrace")
    p = cargo(["build", "--bin", "hop"], crate)
    check("Compiling" not in p.stderr and "Finished" in p.stderr, f"a normal build after it: {p.stderr}")
    # Cargo itself may rewrite its uplifted dep-info (debug/hop.d) on a fresh
    # build; every artifact and fingerprint must stay as it was.
    def kept(state):
        return [x for x in state if not (x[0].startswith("debug/") and x[0].count("/") == 1 and x[0].endswith(".d"))]
    eq(kept(tree_state(target, os.path.join(target, "sftrace"))), kept(before), "target/ after the normal build")


def one_error(p, want):
    """The last stderr line is cargo-sftrace's cause, exit 1."""
    eq(p.returncode, 1, f"exit status: {p.stderr[-1500:]}")
    eq(p.stderr.rstrip("\n").splitlines()[-1], want, "the cause")


def test_cargo_test_env_and_fail_fast():
    """`cargo sftrace test` as `cargo test`: the config's [env] (a plain
    value kept from the caller, a forced one replaced, a relative one
    resolved), binaries in cargo's order (a_env, b_fail, c_after), exit 101
    at the first failing binary (c_after not run), every binary run with
    --no-fail-fast."""
    crate = fixture("envfail")
    caller = {"PLAIN": "caller", "FORCED": "caller"}
    p = run_cs(["test", "-r", "^envfail::", "--no-convert"], crate, check_rc=101, extra_env=caller)
    d = trace_dir(p)
    eq(logs(d), ["lib-envfail.log", "test-a_env.log", "test-b_fail.log"], "stops after b_fail")
    eq(calls(os.path.join(d, "test-a_env.log")), {"envfail::walk": 1, "envfail::step": 3}, "a_env ran and passed")
    eq(calls(os.path.join(d, "test-b_fail.log")), {"envfail::walk": 1, "envfail::step": 2}, "b_fail")
    check("test a_env exited" not in p.stderr, p.stderr[-2000:])
    p = run_cs(["test", "-r", "^envfail::", "--no-convert", "--no-fail-fast"], crate, check_rc=101, extra_env=caller)
    d = trace_dir(p)
    eq(logs(d), ["lib-envfail.log", "test-a_env.log", "test-b_fail.log", "test-c_after.log"], "--no-fail-fast: every binary")
    eq(calls(os.path.join(d, "test-c_after.log")), {"envfail::walk": 1, "envfail::step": 1}, "c_after")


def test_cargo_errors():
    crate = fixture("twobin")
    empty = tmpdir()
    p = run_cs(["--bench", "spin"], empty, check_rc=None)
    one_error(p, f"cargo-sftrace: error: no Cargo.toml in {empty} or any parent directory")
    eq(len(p.stderr.splitlines()), 1, "one line")
    for sel, name, have in (("--bench", "nope", "spin"), ("--test", "nope", "one, two")):
        p = run_cs([sel, name], crate, check_rc=None)
        one_error(p, f"cargo-sftrace: error: no {sel[2:]} target named 'nope' in {crate}/Cargo.toml "
                     f"({sel[2:]} targets: {have})")
        eq(len(p.stderr.splitlines()), 1, "one line")
    p = run_cs(["--bench", "spin"], crate, check_rc=None, extra_env={"RUSTC_BOOTSTRAP": "-1"})
    rel = re.search(r"^release: (\S+)$", run(["rustc", "-vV"], env=env()).stdout, re.M).group(1)
    one_error(p, f"cargo-sftrace: error: rustc {rel} (stable, RUSTC_BOOTSTRAP=-1) cannot take -Z flags: the "
                 "option `Z` is only accepted on the nightly compiler")
    eq(len(p.stderr.splitlines()), 1, "one line")
    shutil.rmtree(empty)

    broken = fixture("broken")
    p = run_cs(["--bin", "broken"], broken, check_rc=None)
    check("error[E0308]: mismatched types" in p.stderr, f"cargo's own output: {p.stderr[-2000:]}")
    one_error(p, "cargo-sftrace: error: the build failed (cargo exited 101; its errors are above)")
    check(not os.path.exists(os.path.join(broken, "target", "sftrace", "traces")), "no trace directory")
    # A nightly toolchain takes -Z flags: no RUSTC_BOOTSTRAP added.
    p = run_cs(["--bin", "broken"], broken, check_rc=None, extra_env={"RUSTUP_TOOLCHAIN": "nightly"})
    check("RUSTC_BOOTSTRAP" not in build_line(p) and XRAY in build_line(p), build_line(p))
    one_error(p, "cargo-sftrace: error: the build failed (cargo exited 101; its errors are above)")

    app = os.path.join(sync_tree(os.path.join(FIXTURES, "cargo_xraydep"), os.path.join(BUILD, "cargo", "xraydep")),
                       "app")
    p = run_cs(["--bin", "xrayapp"], app, check_rc=None)
    check("xraydep does not build with XRay sleds" in p.stderr, p.stderr[-2000:])
    one_error(p, "cargo-sftrace: error: dependency 'xraydep' failed to build with XRay sleds (" + XRAY + "); "
                 "cargo's errors are above")
    cargo(["build", "-q"], app)  # without sleds it builds


def test_cargo_cdylib_under_node():
    """cargo sftrace build --cdylib --out: a Node-API addon with sleds,
    traced under node."""
    if not shutil.which("node"):
        raise Skip("node is not installed")
    crate = fixture("addon")
    d = tmpdir()
    node_file = os.path.join(d, "walk.node")
    p = run_cs(["build", "--cdylib", "--out", node_file], crate)
    eq(p.stdout, node_file + "\n", "build prints the copy's path")
    log = os.path.join(d, "sf.log")
    r = run([SFTRACE, "record", "--filter-regex", "^walkaddon::", "-o", log, "--", "node", "-e",
             f"console.log(require({node_file!r}).walk(6))"])
    eq(r.stdout, "21\n", "the addon's answer")
    eq(calls(log), {"walkaddon::js_walk": 1, "walkaddon::walk": 1, "walkaddon::step": 6}, "calls")
    shutil.rmtree(d)


def test_cargo_bundled_bench():
    """The bundled crate's criterion bench (examples/rust-bench), built with
    its `profiling` profile; one iteration per benchmark on a small input:
    resolve_batch runs in resolve_cold's iteration, in resolve_warm's setup
    and its iteration, 200 requests each."""
    # BUILD/rust-bench, shared with test_rust_workflow (one build of the crate).
    import importlib.util
    spec = importlib.util.spec_from_file_location("test_rust_workflow",
                                                  os.path.join(os.path.dirname(__file__), "test_rust_workflow.py"))
    workflow = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workflow)
    workflow.sync_crate()
    run(["sh", os.path.join(ROOT, "scripts", "install-rust-deps.sh")], timeout=900)
    crit = tmpdir()
    p = run_cs(["--bench", "resolver", "-r", "resolve|normalize|cache", "--", "--bench", "--test"], RUST_BENCH,
               extra_env={"IMPORTMAP_PACKAGES": "20", "IMPORTMAP_REQUESTS": "200", "CRITERION_HOME": crit},
               timeout=3600)
    line = build_line(p)
    check(" cargo bench --no-run --message-format=json-render-diagnostics --profile profiling --config "
          "'build.rustflags=[\"" + XRAY + "\"]' --bench resolver" in line, line)
    d = trace_dir(p)
    check(os.path.basename(d).startswith("resolver-"), d)
    c = calls(d)
    eq((c.get("<importmap::engine::Resolver>::resolve_batch"), c.get("<importmap::engine::Resolver>::resolve")),
       (3, 600), f"resolve_batch, resolve: {sorted(c.items())[:20]}")
    # The resolver's own functions among the top rows (which of them is
    # 15th by self time, where the table stops, varies from run to run).
    check(re.search(r"  importmap::engine::Resolver::resolve\w*$", p.stdout.split("== sftrace report", 1)[1], re.M),
          "the report's rows")
    shutil.rmtree(d)
    shutil.rmtree(crit)
