"""Skeptic's cases for issue 31 (`cargo sftrace`): crates written to break
its claims as a Rust user would meet them, not taken from the developers'
tests (fixtures tests/fixtures/skep31_*, each a crate with no dependencies
that builds in seconds, copied into BUILD/cargo/skep31_NAME whose target/
persists). Each case reproduces a break on the main it was written against
(6f046d1) and skips as a known break until it is fixed.

Every fixture's lib has walk(n), which calls step n times; each test calls
walk(3), so a traced run has exactly 3 calls of CRATE::step.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic31.py."""
import os
import re
import subprocess
import sys

def test_skep31_profiling_profile_inline():
    """The crate's own `profiling` profile written as `[profile]` with an
    inline table `profiling = {...}` (valid TOML, cargo takes it): cargo
    sftrace looks for a `[profile.profiling]` line only, misses it and
    builds with its own `sftrace` profile. (The same happens for a
    [profile.profiling] in .cargo/config.toml, which cargo also takes.)"""
    d = crate("profile")
    p = run_cs(["test", "--no-convert"], d)
    traced_test_t(p, "skep31_profile")
    m = re.search(r"^cargo-sftrace: building: .*$", p.stderr, re.M)
    check(m and " --profile profiling" in m.group(0), f"build command: {said(p)}")
    check(re.search(r"^The test t executable is \S+/target/sftrace/profiling/deps/t-", p.stdout, re.M), said(p))


def test_skep31_libtest_bench_args():
    """`cargo sftrace --bench NAME` on a bench with libtest's harness (no
    `harness = false`): the default program arguments --bench
    --profile-time 1 are criterion's; libtest says "Unrecognized option:
    'profile-time'" and exits 101 where `cargo bench --bench lb` exits 0."""
    d = crate("libbench")
    plain = subprocess.run(["cargo", "bench", "--bench", "lb"], capture_output=True, text=True, cwd=d, env=env(),
                           timeout=900)
    eq(plain.returncode, 0, f"plain cargo bench: {plain.stderr[-2000:]}")
    p = run_cs(["--bench", "lb", "--no-convert"], d)
    eq(p.returncode, 0, f"cargo sftrace --bench lb: {said(p)}")
    check("Unrecognized option" not in p.stderr, said(p))


def test_skep31_cargo_run_time_env():
    """`cargo test` runs each test with cargo's run-time variables
    (CARGO_PKG_VERSION_MAJOR/MINOR/PATCH/PRE, CARGO_PKG_AUTHORS,
    CARGO_PKG_DESCRIPTION, CARGO_MANIFEST_PATH, ...); cargo sftrace sets
    only CARGO_MANIFEST_DIR, CARGO_PKG_NAME, CARGO_PKG_VERSION (and
    CARGO_CRATE_NAME, which cargo does not set at run time), so a test
    reading one fails."""
    d = crate("pkgenv")
    eq(cargo_test_rc(d), 0, "plain cargo test passes")
    traced_test_t(run_cs(["test", "--no-convert"], d), "skep31_pkgenv")


def test_skep31_space_in_path_commands():
    """A crate under a directory with a space: the build and the run work,
    but the closing note's commands (sftrace report DIR, vizviewer ...
    DIR/sf.pb.gz) print DIR unquoted, so pasting one into a shell hands
    sftrace two arguments."""
    import shlex
    d = sync_tree(os.path.join(ROOT, "tests", "fixtures", "skep31_plain"),
                  os.path.join(BUILD, "cargo", "skep31 space", "plain"))
    p = run_cs(["--test", "t"], d)
    eq(p.returncode, 0, said(p))
    m = re.search(r"^Trace files are in (.+):$", p.stdout, re.M)
    check(m and " space/" in m.group(1), said(p))
    tdir = m.group(1)
    m = re.search(r"the raw logs: (.*) / (sftrace replay .*)$", p.stdout, re.M)
    check(m, said(p))
    eq(shlex.split(m.group(1)), ["sftrace", "report", tdir], "the report command, as a shell reads it")
    eq(shlex.split(m.group(2)), ["sftrace", "replay", tdir], "the replay command, as a shell reads it")
    m = re.search(r"^\s+(vizviewer .*)$", p.stdout, re.M)
    check(m, said(p))
    eq(shlex.split(m.group(1)), ["vizviewer", "--use_external_processor", tdir + "/sf.pb.gz"], "the vizviewer command")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import BUILD, ROOT, SFTRACE, Skip, check, eq, run, sync_tree, tmpdir  # noqa: E402

CARGO_SFTRACE = os.path.join(BUILD, "cargo-sftrace")
RUST_VARS = ("RUSTC_BOOTSTRAP", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_TARGET_DIR", "CARGO", "RUSTC",
             "RUSTUP_TOOLCHAIN", "LD_LIBRARY_PATH")


def env(extra=None):
    home_bin = os.path.expanduser("~/.cargo/bin")
    if not os.path.exists(os.path.join(home_bin, "cargo")) and not shutil_which("cargo"):
        raise Skip("cargo is not installed")
    e = {k: v for k, v in os.environ.items() if k not in RUST_VARS}
    e["PATH"] = f"{BUILD}:{home_bin}:{os.environ.get('PATH', '')}"
    e.update(extra or {})
    return e


def shutil_which(name):
    import shutil
    return shutil.which(name)


def crate(name):
    return sync_tree(os.path.join(ROOT, "tests", "fixtures", "skep31_" + name),
                     os.path.join(BUILD, "cargo", "skep31_" + name))


def run_cs(args, cwd, extra_env=None):
    return subprocess.run([CARGO_SFTRACE] + list(args), capture_output=True, text=True, cwd=cwd,
                          env=env(extra_env), timeout=900, errors="replace")


def cargo_test_rc(cwd):
    """What plain `cargo test` exits with on the crate (into target/, as
    the user runs it)."""
    return subprocess.run(["cargo", "test"], capture_output=True, text=True, cwd=cwd, env=env(),
                          timeout=900).returncode


def said(p):
    return f"exit {p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-2500:]}"


def trace_dir(p):
    m = re.search(r"^Trace files are in (\S+):$", p.stdout, re.M)
    check(m, f"closing note: {said(p)}")
    return m.group(1)


def step_calls(log, crate_name):
    out = run([SFTRACE, "report", "--format", "tsv", "-n", "0", log]).stdout.splitlines()
    cols = out[0].split("\t")
    n = 0
    for f in (line.split("\t") for line in out[1:]):
        if f[cols.index("name")] == f"{crate_name}::step":
            n += int(f[cols.index("calls")])
    return n


def traced_test_t(p, crate_name):
    """The run passed, and test t's log holds walk(3)'s 3 step calls."""
    eq(p.returncode, 0, f"cargo sftrace test: {said(p)}")
    log = os.path.join(trace_dir(p), "test-t.log")
    check(os.path.exists(log), f"no {log}: {said(p)}")
    eq(step_calls(log, crate_name), 3, f"{crate_name}::step calls in {log}")


def test_skep31_config_env():
    """`cargo test` sets .cargo/config.toml's [env] variables for the tests
    it runs; cargo sftrace test runs the binaries itself without them, so a
    test reading one fails (exit 101) where `cargo test` passes."""
    d = crate("env")
    eq(cargo_test_rc(d), 0, "plain cargo test passes")
    traced_test_t(run_cs(["test", "--no-convert"], d), "skep31_env")


def test_skep31_target_rustflags():
    """A .cargo/config.toml with target.<triple>.rustflags: cargo takes it
    over build.rustflags, so the --config build.rustflags carrying
    -Zinstrument-xray is dropped; the tests run without sleds and cargo
    sftrace ends with "no log was written" (exit 1), not naming the cause."""
    d = crate("tflags")
    traced_test_t(run_cs(["test", "--no-convert"], d), "skep31_tflags")


def test_skep31_string_rustflags():
    """build.rustflags written as one string (cargo accepts a string or an
    array): cargo refuses to merge cargo sftrace's --config array into it
    ("failed to merge key `build`"), so the build fails."""
    d = crate("sflags")
    traced_test_t(run_cs(["test", "--no-convert"], d), "skep31_sflags")


def test_skep31_build_script_dylib():
    """A build script that builds a C shared library into OUT_DIR and links
    it (rustc-link-search=native=OUT_DIR): `cargo test` puts OUT_DIR on
    LD_LIBRARY_PATH; cargo sftrace does not, so the test binary cannot load
    it (exit 127)."""
    d = crate("dylib")
    eq(cargo_test_rc(d), 0, "plain cargo test passes")
    traced_test_t(run_cs(["test", "--no-convert"], d), "skep31_dylib")


def test_skep31_abort_exit_status():
    """A test binary killed by a signal (a test calls abort): `cargo test`
    exits 101; cargo sftrace test exits 134, the shell's code for the signal."""
    d = crate("abort")
    want = cargo_test_rc(d)
    eq(want, 101, "plain cargo test")
    p = run_cs(["test", "--no-convert"], d)
    eq(p.returncode, want, f"cargo sftrace test's exit status: {said(p)}")


def test_skep31_release_and_target_dir():
    """cargo's build options --release and --target-dir (cargo test takes
    both; the usage says [cargo build options]) are refused as unknown
    options. Expected: accepted, the test traced, and --target-dir DIR
    used the way CARGO_TARGET_DIR=DIR is (traces under DIR/sftrace/)."""
    d = crate("plain")
    traced_test_t(run_cs(["test", "--release", "--no-convert"], d), "skep31_plain")
    t = tmpdir()
    p = run_cs(["test", "--target-dir", t, "--no-convert"], d)
    traced_test_t(p, "skep31_plain")
    check(trace_dir(p).startswith(os.path.join(os.path.realpath(t), "sftrace") + "/"), said(p))


if __name__ == "__main__":
    sfkit.main(globals())
