"""skeptic29n: issue 29's claims attacked with programs of our own:
strings read from the thread's stack with plain loads, log format 7's
values-only ARGS form, the --auto-args DWARF cache, and the cost.

tests/fixtures/skep29n_stack.c (strings on stacks with PROT_NONE pages),
skep29n_fmt.c (threads, recursion, longjmp, tail calls, many functions,
wide payloads), skep29n_cache.c (two builds of one size and build-id),
skep29n_fp.c (double arguments and return value checked by both sides).
Cases that hold are plain tests; a break is asserted as it should be and
decorated @sfkit.known_break(29, ...). Each docstring gives program,
expected and observed.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic29n.py."""
import os
import zlib
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import SFTRACE, build_c, call_column, check, eq, record, replay_text, run, tmpdir  # noqa: E402

SPECS = ["-A", "take@arg1/s", "-A", "keep@arg1/s"]


def stack_fixture():
    return build_c("skep29n_stack", ["skep29n_stack.c"], libs=["-lpthread"])


def untraced(mode):
    return run([stack_fixture(), mode]).stdout


def stack_calls(mode, args):
    """(program's stdout, exit status, take/keep lines of replay) of skep29n_stack MODE."""
    p, log = record([stack_fixture(), mode], args=["-q"] + args, check_rc=None)
    lines = []
    if p.returncode == 0:
        lines = [c.strip() for c in call_column(replay_text(log)) if "take(" in c or "keep(" in c]
    return p.stdout, p.returncode, lines


def _stack_case(mode, want_calls, want_auto):
    want_out = untraced(mode)
    out, rc, lines = stack_calls(mode, SPECS)
    eq((out, rc), (want_out, 0), f"{mode}: -A take@arg1/s: the program's output and status as untraced")
    eq(lines, want_calls, f"{mode}: -A values")
    out, rc, lines = stack_calls(mode, ["--auto-args"])
    eq((out, rc), (want_out, 0), f"{mode}: --auto-args: the program's output and status as untraced")
    eq(lines, want_auto, f"{mode}: --auto-args values")


# ---------------------------------------------------------------- stacks
def test_stack_strings_that_hold():
    """Strings straddling a page of main's stack, a local, a heap copy, and
    a string at the top of a sigaltstack whose next page is PROT_NONE
    (from the handler, which runs off the thread's stack): the values, and
    the program's output unchanged."""
    _stack_case("ok", ['take("straddle");', 'take("local");', 'take("heap");'],
                ['take("straddle") = 8;', 'take("local") = 5;', 'take("heap") = 4;'])
    _stack_case("alt", ['take("al");'], ['take("al") = 2;'])


def test_break_stack_string_before_prot_none_page():
    _stack_case("end", ['take("hi");'], ['take("hi") = 2;'])


def test_break_stack_pointer_into_prot_none_page():
    _stack_case("none", ["keep(<unreadable>);"], ["keep(<unreadable>) = 1;"])


def test_break_coroutine_stack_in_main_stack_with_guard():
    _stack_case("coro", ['take("co");'], ['take("co") = 2;'])


def test_break_thread_stack_string_before_prot_none_page():
    _stack_case("thread", ['take("hi");'], ['take("hi") = 2;'])


if __name__ == "__main__":
    sfkit.main(globals())


# ---------------------------------------------------------------- format 7
def fmt_fixture():
    return build_c("skep29n_fmt", ["skep29n_fmt.c"], libs=["-lpthread"])


def query_rows(log, sql):
    out = run([SFTRACE, "query", "--format", "tsv", log, sql]).stdout.splitlines()
    return [ln.split("\t") for ln in out[1:]]


def fn_args(log, func):
    """[(tid, {name: value})] of FUNC's frames in order, from query's args table."""
    rows = query_rows(log, "SELECT f.frame_id, f.tid, a.name, a.value FROM args a JOIN frames f USING (frame_id) "
                           f"WHERE f.name = '{func}' ORDER BY f.frame_id, a.\"index\"")
    out = {}
    for fid, tid, name, value in rows:
        out.setdefault(int(fid), (int(tid), {}))[1][name] = value
    return [out[k] for k in sorted(out)]


def test_break_trigger_function_keeps_its_values():
    """skep29n_fmt alloc with --auto-args --ring 128K --trigger add: add's
    calls keep their values in the log ('add(4999, -121) = 4878;' last)
    and in the snapshot frozen at its first entry ('add(0, 0)'). Before,
    a trigger's sleds kept the slow trampolines and every call showed as
    'add();' (args.c gives them the args path now, whose C sends the
    event on to the slow path that looks at the trigger)."""
    d = tmpdir()
    log = os.path.join(d, "t.log")
    p, _ = record([fmt_fixture(), "alloc"], out=log, args=["-q", "--auto-args", "--ring", "128K", "--trigger", "add",
                                                           "--max-snapshots", "1"])
    eq(p.stdout, "alloc 12502200\n", "the program's output")
    snaps = [f for f in os.listdir(d) if ".snap." in f]
    eq(len(snaps), 1, "one snapshot")
    for f in [log, os.path.join(d, snaps[0])]:
        lines = [c.strip() for c in call_column(replay_text(f)) if "add(" in c]
        check(lines, f"{f}: add's calls")
        if f == log:
            eq(lines[-1], "add(4999, -121) = 4878;", "the log: add's last call")
        else:
            check(lines[0].startswith("add(0, 0)"), f"the snapshot: add's first call: {lines[0]!r}")


def _sums(log, func):
    """{name: (count, sum of values as integers)} of FUNC's values, from query."""
    rows = query_rows(log, "SELECT a.name, count(*), sum(cast(a.value AS bigint)) FROM args a JOIN frames f "
                           f"USING (frame_id) WHERE f.name = '{func}' GROUP BY 1 ORDER BY 1")
    return {n: (int(c), int(s)) for n, c, s in rows}


def test_format7_threads_recursion_longjmp_tails_many_functions():
    """skep29n_fmt under --auto-args: 8 threads x 20,000 add(t, i); rec
    30,000 deep; longjmp out of 6 deepj frames x 1,000; t1 tail-calling t2
    x 1,000; 3,000 distinct fN(N) = 2N (ids past the table). Every value
    exact (query's args table), tail calls' return marked."""
    exe = fmt_fixture()
    want = {
        "threads": ("threads 1600480000\n", "add", {"arg1": (160000, 560000), "arg2": (160000, 1599920000),
                                                    "retval": (160000, 1600480000)}),
        "deep": ("deep 60007\n", "rec", {"arg1": (30001, 450015000), "arg2": (30001, 450225007),
                                         "retval": (30001, 1350255007)}),
        "jump": ("jump 500500\n", "deepj", {"arg1": (6000, 2997000), "arg2": (6000, 15000)}),
        "tail": ("tail 501505000\n", "t2", {"arg1": (1000, 500500), "arg2": (1000, 1005000),
                                            "retval": (1000, 501505000)}),
    }
    for mode, (out, func, sums) in want.items():
        p, log = record([exe, mode], args=["-q", "--auto-args"])
        eq(p.stdout, out, f"{mode}: the program's output")
        eq(_sums(log, func), sums, f"{mode}: {func}'s values")
        if mode == "tail":
            eq(query_rows(log, "SELECT a.value, count(*) FROM args a JOIN frames f USING (frame_id) "
                               "WHERE f.name = 't1' AND a.name = 'retval' GROUP BY 1"), [["<unrecorded>", "1000"]],
               "t1's return value (it tail-called)")
        if mode == "threads":
            threads_log = log
    p, log = record([exe, "many"], args=["-q", "--auto-args"])
    eq(p.stdout, "many 8997000\n", "many: the program's output")
    rows = query_rows(log, "SELECT f.name, x.value || ',' || r.value FROM args x JOIN args r USING (frame_id) "
                           "JOIN frames f USING (frame_id) WHERE f.name GLOB 'f[0-9]*' AND x.name = 'arg1' "
                           "AND r.name = 'retval'")
    eq(len(rows), 3000, "many: fN's frames")
    bad = [r for r in rows if r[1] != f"{r[0][1:]},{2 * int(r[0][1:])}"]
    eq(bad[:5], [], f"many: fN(N) = 2N ({len(bad)} not)")
    # A log cut short: a warning in dump, every value read is whole.
    cut = os.path.join(tmpdir(), "cut.log")
    with open(threads_log, "rb") as f, open(cut, "wb") as g:
        g.write(f.read(1234567))
    d = run([SFTRACE, "dump", cut]).stdout
    check("truncated: log ends mid-chunk" in d, "dump warns of the cut")
    rows = query_rows(cut, "SELECT count(*), sum(cast(r.value AS bigint) = cast(x.value AS bigint) + "
                           "cast(y.value AS bigint)) FROM args r JOIN args x USING (frame_id) JOIN args y "
                           "USING (frame_id) JOIN frames f USING (frame_id) WHERE f.name = 'add' AND "
                           "r.name = 'retval' AND x.name = 'arg1' AND y.name = 'arg2'")
    check(int(rows[0][0]) > 50000 and rows[0][0] == rows[0][1], f"the cut log's add calls are whole: {rows}")


def test_format7_ring_keeps_exact_values():
    """--ring 128K with 8 threads: the rings that survive hold add(6, i)
    for a run of i ending at 19,999, each = arg1 + arg2, in query and in
    Perfetto's args table."""
    p, log = record([fmt_fixture(), "threads"], args=["-q", "--auto-args", "--ring", "128K"])
    eq(p.stdout, "threads 1600480000\n", "the program's output")
    rows = fn_args(log, "add")
    whole = [a for _, a in rows if len(a) == 3]
    check(len(whole) > 500, f"add's whole frames in the ring: {len(whole)}")
    bad = [a for a in whole if int(a["retval"]) != int(a["arg1"]) + int(a["arg2"])]
    eq(bad, [], "retval = arg1 + arg2")
    last = {}
    for tid, a in rows:
        if "arg2" in a:
            last.setdefault(tid, []).append(int(a["arg2"]))
    for tid, v in last.items():
        eq(v, list(range(20000 - len(v), 20000)), f"thread {tid}'s add calls are the last ones, in order")


# ---------------------------------------------------------------- the DWARF cache
BUILD_ID = "-Wl,--build-id=0x29292929292929292929"


def cache_fixture(v):
    return build_c(f"skep29n_cache_v{v}", ["skep29n_cache.c"], flags=[f"-DV{v}", BUILD_ID])


def mix_line(exe, env, cwd=None):
    """(program's stdout, mix's replay line) of EXE recorded with --auto-args under ENV."""
    log = os.path.join(tmpdir(), "m.log")
    p = run([SFTRACE, "record", "-q", "--force", "--auto-args", "-o", log, "--", exe], env=env, cwd=cwd)
    os.chmod(log, 0o644)
    lines = [c.strip() for c in call_column(replay_text(log)) if "mix(" in c]
    return p.stdout, lines


def test_cache_rebuilt_in_place_same_size_mtime_and_build_id():
    """Two builds of skep29n_cache.c with one fixed build-id and the same
    size (mix(int, int), then mix(double, double)); the second written over
    the first's inode, its mtime set back: the second run reads the DWARF
    again (the key's ctime), mix(1.500000, 4.000000) = 6.000000."""
    v1, v2 = cache_fixture(1), cache_fixture(2)
    # The same size: the shorter padded with zeros at its end, which no
    # loader or reader looks at (their sizes differ by a few bytes with
    # the build directory's path: 8 in CI's).
    with open(v1, "rb") as f:
        b1 = f.read()
    with open(v2, "rb") as f:
        b2 = f.read()
    size = max(len(b1), len(b2))
    b1, b2 = b1.ljust(size, b"\0"), b2.ljust(size, b"\0")
    d = tmpdir()
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "c"))
    prog = os.path.join(d, "prog")
    with open(prog, "wb") as g:
        g.write(b1)
    os.chmod(prog, 0o755)
    os.utime(prog, (1767225600, 1767225600))
    eq(mix_line(prog, env), ("5\n", ["mix(9, 4) = 5;"]), "v1")
    ino = os.stat(prog).st_ino
    with open(prog, "r+b") as g:
        g.write(b2)
    eq(os.path.getsize(prog), size, "the same size")
    os.utime(prog, (1767225600, 1767225600))
    eq(os.stat(prog).st_ino, ino, "the same inode")
    eq(mix_line(prog, env), ("6.0\n", ["mix(1.500000, 4.000000) = 6.000000;"]), "v2 over v1, same size and mtime")


def _entry(cache):
    files = [f for f in os.listdir(cache) if f.startswith("args-")]
    eq(len(files), 1, "one cache file")
    return os.path.join(cache, files[0])


def test_cache_refused_where_not_ours_and_never_in_the_way():
    """The cache directory a symlink, owned by nobody (with a forged entry
    in it), HOME unset and unwritable for nobody, the entry a FIFO, six
    runs at once on an empty cache, a full filesystem (as root, in a mount
    namespace): every run prints the program's output and mix(9, 4) = 5;
    nothing is written through the symlink, the FIFO does not block."""
    exe = cache_fixture(1)
    good = ("5\n", ["mix(9, 4) = 5;"])
    d = tmpdir()
    os.chmod(d, 0o755)
    # symlinked cache directory
    os.makedirs(os.path.join(d, "x"))
    os.makedirs(os.path.join(d, "target"))
    os.symlink("../target", os.path.join(d, "x", "sftrace"))
    eq(mix_line(exe, dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "x"))), good, "symlinked directory")
    eq(os.listdir(os.path.join(d, "target")), [], "nothing written through the symlink")
    # a forged entry (arg1's format hex) in a directory of another uid
    own = os.path.join(d, "own")
    env = dict(os.environ, XDG_CACHE_HOME=own)
    eq(mix_line(exe, env), good, "first run")
    path = _entry(os.path.join(own, "sftrace"))
    with open(path) as f:
        text = f.read()
    check(" 01110 02110 00111" in text, "mix's line")
    with open(path, "w") as f:
        body = text[:-13].replace(" 01110 02110 00111", " 01130 02130 00111")
        f.write(body + "end %08x\n" % zlib.crc32(body.encode()))  # re-signed (args_cache.c's checksum)
    eq(mix_line(exe, env), ("5\n", ["mix(0x9, 0x4) = 5;"]), "the forged entry is ours: read")
    if os.geteuid() == 0:
        os.chown(os.path.join(own, "sftrace"), 65534, 65534)
        os.chown(path, 65534, 65534)
        eq(mix_line(exe, env), good, "directory and entry owned by nobody: not read")
    # the entry a FIFO (a fresh directory)
    ff = os.path.join(d, "ff")
    env = dict(os.environ, XDG_CACHE_HOME=ff)
    eq(mix_line(exe, env), good, "first run")
    path = _entry(os.path.join(ff, "sftrace"))
    os.unlink(path)
    os.mkfifo(path, 0o600)
    eq(mix_line(exe, env), good, "a FIFO where the entry is")
    # six runs at once writing one entry
    cc = os.path.join(d, "cc")
    env = dict(os.environ, XDG_CACHE_HOME=cc)
    import subprocess
    procs = []
    for i in range(6):
        log = os.path.join(d, f"c{i}.log")
        procs.append((log, subprocess.Popen([SFTRACE, "record", "-q", "--force", "--auto-args", "-o", log, "--", exe],
                                            stdout=subprocess.PIPE, text=True, env=env)))
    for log, p in procs:
        eq((p.communicate(timeout=60)[0], p.returncode), ("5\n", 0), "a concurrent run")
        eq([c.strip() for c in call_column(replay_text(log)) if "mix(" in c], good[1], "a concurrent run's values")
    eq(len(os.listdir(os.path.join(cc, "sftrace"))), 1, "one entry, no temporary left")
    eq(mix_line(exe, env), good, "read back")
    if os.geteuid() != 0:
        return
    # as nobody: HOME unset, HOME unwritable, XDG at root's 0700 cache
    nb = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    for extra in (["-u", "HOME", "-u", "XDG_CACHE_HOME"], ["-u", "XDG_CACHE_HOME", "HOME=/"],
                  ["-u", "XDG_CACHE_HOME", "HOME=/proc"], [f"XDG_CACHE_HOME={own}"]):
        log = os.path.join(d, "nb.log")
        if os.path.exists(log):
            os.unlink(log)
        os.chmod(d, 0o777)
        p = run(nb + ["env"] + extra + [SFTRACE, "record", "-q", "--auto-args", "-o", log, "--", exe])
        eq(p.stdout, "5\n", f"nobody {extra}")
        eq([c.strip() for c in call_column(replay_text(log)) if "mix(" in c], good[1], f"nobody {extra}: values")
    # a full filesystem (a 12k tmpfs in a mount namespace)
    full = os.path.join(d, "full")
    os.makedirs(full)
    log = os.path.join(d, "full.log")
    fmt = fmt_fixture()
    sh = (f"mount -t tmpfs -o size=12k tmpfs {full} && XDG_CACHE_HOME={full} {SFTRACE} record -q --force "
          f"--auto-args -o {log} -- {fmt} tail && ls -A {full}/sftrace")
    p = run(["unshare", "-m", "sh", "-c", sh], check_rc=None)
    if p.returncode == 0:
        eq(p.stdout, "tail 501505000\n", "a full cache filesystem: output, and no entry left")
        eq([c.strip() for c in call_column(replay_text(log)) if "t2(1000" in c],
           ["t2(1000, 2004) = 1002004; /* tail call from t1 */"], "a full cache filesystem: values")


def test_break_cache_entry_with_one_bit_flipped():
    exe = cache_fixture(1)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmpdir(), "c"))
    eq(mix_line(exe, env), ("5\n", ["mix(9, 4) = 5;"]), "first run")
    path = _entry(os.path.join(env["XDG_CACHE_HOME"], "sftrace"))
    with open(path, "rb") as f:
        data = bytearray(f.read())
    at = data.index(b" 01110 02110 00111") + 4
    data[at] ^= 0x02  # '1' -> '3'
    with open(path, "wb") as f:
        f.write(data)
    eq(mix_line(exe, env), ("5\n", ["mix(9, 4) = 5;"]), "a corrupt entry is not believed")


# ---------------------------------------------------------------- the program's registers
def fp_counts(args, n="20000"):
    exe = build_c("skep29n_fp", ["skep29n_fp.c"])
    if args is None:
        return run([exe, n]).stdout
    p, _ = record([exe, n], args=["-q"] + args)
    return p.stdout


def test_break_named_function_fp_registers_kept():
    clean = "bad args: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 bad ret 0\n"
    eq(fp_counts(None), clean, "untraced")
    eq(fp_counts([]), clean, "traced, nothing named")
    for args in (["-A", "g8@arg1"], ["-R", "g8@retval"], ["--auto-args"], ["-A", "g8@fparg8"]):
        eq(fp_counts(args), clean, " ".join(args))


def test_format7_wide_payloads_exact():
    """skep29n_fmt wide under --auto-args: 20,000 calls of wide(6 longs, 8
    doubles) and words(4 strings) with values from an LCG: every recorded
    value is the one passed, all eight doubles (the seventh and eighth
    were left out, unmarked, before h29max raised the per-call items
    from 12 to 24)."""
    p, log = record([fmt_fixture(), "wide"], args=["-q", "--auto-args"])
    st, mask = 29, (1 << 64) - 1

    def lcg():
        nonlocal st
        st = (st * 6364136223846793005 + 1442695040888963407) & mask
        return st >> 20
    want_w, want_s = [], []
    for _ in range(20000):
        v = [(lcg() % 2000001) - 1000000 for _ in range(6)]
        x = [((lcg() % 4001) - 2000) / 4 for _ in range(8)]
        want_w.append("wide(" + ", ".join(map(str, v)) + ", " + ", ".join("%f" % a for a in x) + ")")
        want_s.append("words(" + ", ".join('"w%d"' % (lcg() % 100000) for _ in range(4)) + ") = ")
    out = call_column(replay_text(log))
    got_w = [c.strip() for c in out if "wide(" in c]
    got_s = [c.strip() for c in out if "words(" in c]
    eq((len(got_w), len(got_s)), (20000, 20000), "calls")
    eq([g for g, w in zip(got_w, want_w) if not g.startswith(w)][:3], [], "wide's values")
    eq([g for g, w in zip(got_s, want_s) if not g.startswith(w)][:3], [], "words' values")


def test_format7_values_in_perfetto_exact():
    """skep29n_fmt threads under --auto-args converted to Perfetto:
    trace_processor's args table holds add's 160,000 calls with the exact
    sums of arg1, arg2 and retval, and reports no error or data loss."""
    tp = sfkit.trace_processor()
    p, log = record([fmt_fixture(), "threads"], args=["-q", "--auto-args"])
    pb = os.path.join(os.path.dirname(log), "t.pb")
    run([SFTRACE, "convert", log, "-o", pb])
    rows = sfkit.tp_rows(pb, "select a.key, count(*), sum(cast(a.display_value as int)) from slice s join args a "
                             "using (arg_set_id) where s.name = 'add' and a.key like 'debug.%' group by a.key "
                             "order by a.key")
    eq(rows, [["debug.arg1", "160000", "560000"], ["debug.arg2", "160000", "1599920000"],
              ["debug.retval", "160000", "1600480000"]], "add's values in Perfetto")
    bad = sfkit.tp_rows(pb, "select name, value from stats where value > 0 and severity != 'info'")
    eq(bad, [], "trace_processor's errors")
    check(tp, "trace_processor")


def test_break_within_window_function_keeps_its_values():
    """skep29n_fmt alloc with --auto-args -r '^add$', with and without
    --within: add's 5,000 calls, the last 'add(4999, -121) = 4878;'.
    Before, the function that opens a window kept the window trampolines
    and recorded 'add();' with no warning (SF_VARIANT_ARGS_WINDOW now)."""
    for extra in ([], ["--within"]):
        p, log = record([fmt_fixture(), "alloc"], args=["-q", "--auto-args", "-r", "^add$"] + extra)
        eq(p.stdout, "alloc 12502200\n", "the program's output")
        lines = [c.strip() for c in call_column(replay_text(log)) if "add(" in c]
        eq((len(lines), lines[-1]), (5000, "add(4999, -121) = 4878;"), f"add's last call {extra}")


def test_break_sqlite_real_values_unchanged():
    obj = os.path.join(sfkit.ROOT, "bench", "build", "sqlite", "sqlite3_args_g4.o")
    src = os.path.join(sfkit.ROOT, "bench", "build", "sqlite", "package", "deps", "sqlite3")
    if not (os.path.exists(obj) and os.path.isdir(src)):
        raise sfkit.Skip("no instrumented SQLite object (sh bench/args_cost.sh builds bench/build/sqlite)")
    exe = build_c("skep29n_sqlite_real", ["skep29n_sqlite_real.c"], flags=["-I" + src], libs=[obj, "-lpthread",
                                                                                             "-ldl", "-lm"])
    want = run([exe]).stdout
    eq(want, "93719630.142857 9361.428571 140584394.464286 19797\n", "untraced")
    eq(record([exe], args=["-q"])[0].stdout, want, "plain recording")
    eq(record([exe], args=["-q", "--auto-args"])[0].stdout, want, "--auto-args")
