"""record --filter-regex for a whole run (filters made per object when it
loads, by any process, kept in STEM.filters/ and reusable with -f DIR),
record's reasons when no log was written, and its report of processes that
never exited (issue 15, items 2, 3 and 6)."""
import os
import re
import shutil
import subprocess

from sfkit import (FIXBUILD, SFTRACE, Skip, build_c, check, check_nesting, count_calls, dump_events, eq, record,
                   run, tmpdir)

FILTFIX = None


def filter_fixture():
    """tests/cases/test_filter.py's fixture: filtfix + libsffilt.so."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "test_filter", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_filter.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.fixture()


def plugin_fixture():
    lib = build_c("libplugin.so", ["plugin.c"], shared=True)
    return build_c("dlopener", ["dlopener.c"], libs=["-ldl"]), lib


def filters_in(log):
    d = os.path.join(os.path.dirname(log), "sf.filters")
    return d, sorted(os.listdir(d))


def counts(log):
    events = dump_events(log)
    eq(check_nesting(events), {}, "frames left open")
    return dict(count_calls(events))


def test_filter_regex_through_sh_and_reuse():
    exe, lib = filter_fixture()
    p, log = record(["sh", "-c", exe], args=["--filter-regex", "^resolve$|lib_inner"])
    check("filter fixture" in p.stdout, p.stdout)
    eq(counts(log), {"resolve": 3, "lib_inner": 5}, "entries through sh -c")
    d, files = filters_in(log)
    eq(len(files), 2, "one filter per instrumented object (the executable and its library)")
    check("1 of 5 instrumented functions selected in " + os.path.realpath(exe) in p.stderr, p.stderr)
    check("1 of 2 instrumented functions selected in " + os.path.realpath(lib) in p.stderr, p.stderr)
    check(f"repeat with -f {d}" in p.stderr, p.stderr)
    # The saved filters give the same recording again, through -f DIR.
    _, log2 = record(["sh", "-c", exe], args=["-f", d])
    eq(counts(log2), {"resolve": 3, "lib_inner": 5}, "entries with -f DIR")
    # and through two -f files.
    _, log3 = record(["sh", "-c", exe], args=["-f", os.path.join(d, files[0]), "-f", os.path.join(d, files[1])])
    eq(counts(log3), {"resolve": 3, "lib_inner": 5}, "entries with two -f")
    # An earlier run's filters are not replaced silently.
    p = run([SFTRACE, "record", "-o", log, "--force", "--filter-regex", "leaf", "--", exe], check_rc=0)
    eq(counts(log), {"leaf": 7}, "--force starts a new filter directory")
    eq(len(filters_in(log)[1]), 2, "stale filters removed")
    os.unlink(log)
    p = run([SFTRACE, "record", "-o", log, "--filter-regex", "leaf", "--", exe], check_rc=1)
    check("sf.filters exists" in p.stderr, p.stderr)


def test_filter_regex_within_through_sh():
    exe, _ = filter_fixture()
    _, log = record(["sh", "-c", exe], args=["--filter-regex", "^resolve$", "--within"])
    # Under resolve: normalize x2, leaf x1 per normalize, helper, lib_inner (library) x1; x3.
    eq(counts(log), {"resolve": 3, "normalize": 6, "leaf": 6, "helper": 3, "lib_inner": 3}, "--within entries")


def test_filter_regex_dlopened_object():
    exe, lib = plugin_fixture()
    p, log = record([exe, lib], args=["--filter-regex", "plugin_inner"])
    check("dlopener ok" in p.stdout, p.stdout)
    eq(counts(log), {"plugin_inner": 5}, "the dlopen'd plugin's function, over both loads")
    check("0 of 3 instrumented functions selected in " + os.path.realpath(exe) in p.stderr, p.stderr)
    check("1 of 2 instrumented functions selected in " + os.path.realpath(lib) in p.stderr, p.stderr)


def test_filter_regex_child_is_invisible():
    """The runtime's sftrace filter child raises no SIGCHLD in the program
    and cannot be reaped by its wait()."""
    lib = build_c("libplugin.so", ["plugin.c"], shared=True)
    exe = build_c("sigchld_dlopen", ["sigchld_dlopen.c"], libs=["-ldl"])
    p, log = record([exe, lib], args=["--filter-regex", "plugin_fn"])
    check("sigchld 0 wait ECHILD sum 11" in p.stdout, p.stdout)
    eq(counts(log), {"plugin_fn": 2}, "plugin_fn")


def no_log(cmd, args=(), env=None):
    p, log = record(cmd, args=args, env=env)
    check(not os.path.exists(log), "no log")
    return p.stderr


def test_no_log_filter_for_another_program():
    exe, _ = filter_fixture()
    other = build_c("kill_self", ["kill_self.c"], libs=["-lpthread"])
    filt = os.path.join(tmpdir(), "other.filter")
    run([SFTRACE, "filter", "-q", "-p", other, "-r", "^outer$", "-o", filt])
    bid = re.search(r"^object (\S+) ", open(filt).read(), re.M).group(1)
    err = no_log([exe], args=["-f", filt])
    check(f"no log written: the filter {filt} names none of the instrumented objects the program loaded" in err, err)
    check(f"the filter names:     {os.path.realpath(other)} (build-id {bid})" in err, err)
    check(f"the program loaded:   {os.path.realpath(exe)} (build-id" in err, err)
    check("message above" not in err, err)


def test_no_log_reasons():
    d = tmpdir()
    src = os.path.join(d, "tiny.c")
    with open(src, "w") as f:
        f.write("int f1(int x) { return x + 1; }\nint main(int c, char **v) { return f1(c) - 2; }\n")
    flags = ["-O1", "-fxray-instrument", "-fxray-instruction-threshold=1", "-fnoxray-link-deps"]
    tiny = os.path.join(d, "tiny")
    run(["clang"] + flags + ["-o", tiny, src])
    # Nothing instrumented ran.
    err = no_log(["true"])
    check("no log written: true ran no XRay-instrumented code" in err, err)
    # A static binary: LD_PRELOAD cannot enter it.
    static = os.path.join(d, "tiny_static")
    if run(["clang"] + flags + ["-static", "-o", static, src], check_rc=None).returncode == 0:
        p = run([SFTRACE, "record", "-o", os.path.join(d, "static.log"), "--", static], check_rc=1)
        check(f"{static} is statically linked: the tracer's runtime cannot be loaded into it" in p.stderr, p.stderr)
        check(not os.path.exists(os.path.join(d, "static.log")), "no log")
    # The regex selects nothing in the objects that loaded.
    err = no_log([tiny], args=["--filter-regex", "^nothing$"])
    check("no log written: --filter-regex selects no function of the instrumented objects" in err, err)
    check(f"  {tiny}: 0 of 4 sleds patched" in err, err)
    # A runtime refusal: a filter for another build of a same-named program.
    other_dir = os.path.join(d, "v2")
    os.makedirs(other_dir)
    src2 = os.path.join(other_dir, "tiny.c")
    with open(src2, "w") as f:
        f.write("int f1(int x) { return x + 2; }\nint main(int c, char **v) { return f1(c) - 3; }\n")
    run(["clang"] + flags + ["-o", os.path.join(other_dir, "tiny"), src2])
    filt = os.path.join(d, "tiny.filter")
    run([SFTRACE, "filter", "-q", "-p", tiny, "-r", "f1", "-o", filt])
    err = no_log([os.path.join(other_dir, "tiny")], args=["-f", filt])
    check("no log written; the runtime said:\n  filter was made for a different build of " in err, err)


def test_no_log_setuid():
    if os.geteuid() != 0:
        raise Skip("needs root to make a setuid binary owned by another user")
    d = tmpdir()
    exe = os.path.join(d, "suid")
    shutil.copy(build_c("kill_self", ["kill_self.c"], libs=["-lpthread"]), exe)
    os.chmod(d, 0o755)
    subprocess.run(["chown", "nobody", exe], check=True)
    os.chmod(exe, 0o4755)
    # The program would kill itself; a traced run never gets a log either way.
    p, log = record([exe], check_rc=None)
    check(not os.path.exists(log), "no log")
    check(f"no log written: {exe} is a setuid program: the loader ignores LD_PRELOAD" in p.stderr, p.stderr)


def test_killed_process_reported():
    exe = build_c("kill_self", ["kill_self.c"], libs=["-lpthread"])
    p, log = record(["sh", "-c", exe + "; echo after"])
    check("kill_self dying" in p.stdout and "after" in p.stdout, p.stdout)
    m = re.search(r"wrote (\S+) \(pid (\d+)\)", p.stderr)
    check(m, p.stderr)
    check(f"sftrace: pid {m.group(2)} did not exit normally (killed, crashed, or ended by _exit or exec before its "
          "exit hooks ran): 5 calls left open in 2 threads" in p.stderr, p.stderr)
    # A process that exits normally gets no such line.
    exe2, _ = filter_fixture()
    p, _ = record([exe2])
    check("did not exit normally" not in p.stderr, p.stderr)


def test_filter_regex_node_addon():
    """node loads the instrumented .node addon with dlopen: the regex
    applies to it (node itself has no sleds)."""
    if not shutil.which("node"):
        raise Skip("node is not installed")
    if not os.path.exists("/usr/include/node/node_api.h"):
        raise Skip("Node-API headers not found in /usr/include/node")
    addon = build_c("addon.node", ["addon.c"], shared=True, flags=["-I/usr/include/node"])
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "addon_test.js")
    p, log = record(["node", script, addon], args=["--filter-regex", "^addon_inner$"])
    check("addon ok" in p.stdout, p.stdout + p.stderr)
    eq(counts(log), {"addon_inner": 20}, "the addon's function through node")
    eq(len(filters_in(log)[1]), 1, "one instrumented object: the addon")
