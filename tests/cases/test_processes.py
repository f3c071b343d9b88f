"""What real workflows run: dlopen'd libraries (a Node.js addon, plugins),
child processes (fork, exec, shell scripts) and programs built for the
reference tool's setup ABI. Exact counts per process."""
import os
import re
import shutil

from sfkit import (BUILD, FIXBUILD, FIXTURES, RUNTIME, SFTRACE, Skip, build_c, calls_fixture, check, check_nesting,
                   check_perfetto_times, count_calls, dump_events, eq, perfetto_summary, record, run, tmpdir)


def logs_in(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def counts_by_log(d):
    return {os.path.basename(p): count_calls(dump_events(p)) for p in logs_in(d)}


def test_fork_keeps_tracing_in_both():
    exe = build_c("forker", ["forker.c"])
    d = tmpdir()
    p, log = record([exe, "fork"], out=os.path.join(d, "sf.log"))
    check("forker fork ok 0" in p.stdout, p.stdout)
    logs = logs_in(d)
    eq(len(logs), 2, f"one log per process: {logs}")
    parent, child = os.path.join(d, "sf.log"), [x for x in logs if x != os.path.join(d, "sf.log")][0]
    check(re.fullmatch(r"sf\.\d+\.log", os.path.basename(child)), child)
    pc, cc = count_calls(dump_events(parent)), count_calls(dump_events(child))
    eq(pc["p_work"], 5, "parent p_work")
    eq(pc["c_work"], 0, "no child events in the parent's log")
    eq(cc["c_work"], 5, "child c_work")
    eq(cc["p_work"], 0, "the child never repeats the parent's events")
    for path in logs:
        check(path in p.stderr, f"record lists {path}: {p.stderr}")


def test_fork_exec_traces_new_image():
    exe = build_c("forker", ["forker.c"])
    d = tmpdir()
    p, _ = record([exe, "exec"], out=os.path.join(d, "sf.log"))
    check("forker exec ok 0" in p.stdout, p.stdout)
    counts = counts_by_log(d)
    eq(len(counts), 2, f"logs: {list(counts)}")
    eq(counts["sf.log"]["p_work"], 1, "parent")
    other = [c for name, c in counts.items() if name != "sf.log"][0]
    eq(other["c_work"], 4, "exec'd image")


def test_shell_script_runs_three_programs():
    exe = calls_fixture()
    d = tmpdir()
    script = f"{exe} >/dev/null; {exe} exit 0 >/dev/null; {exe} >/dev/null; echo done"
    p, _ = record(["/bin/sh", "-c", script], out=os.path.join(d, "sf.log"))
    check("done" in p.stdout)
    counts = counts_by_log(d)
    eq(len(counts), 3, f"three logs (sh itself has no sleds): {list(counts)}")
    for name, c in counts.items():
        eq(c["tleaf"], 8000, f"{name}: tleaf")
    # convert merges the directory into one trace with a process track each.
    out = os.path.join(d, "all.pb")
    run([SFTRACE, "convert", d, "-o", out])
    s = perfetto_summary(out)
    eq(len(s["procs"]), 3, "process tracks")
    eq(s["begins"]["tleaf"], 24000, "slices over all processes")
    check(all(v == 0 for v in s["balance"].values()))
    eq((s["skipped"], s["missing_needs"]), (0, 0), "packets dropped / incremental state without the flag")
    check_perfetto_times(d, s)


def test_dlopen_dlclose_dlopen_again():
    build_c("libplugin.so", ["plugin.c"], shared=True)
    exe = build_c("dlopener", ["dlopener.c"], libs=["-ldl"])
    p, log = record([exe, os.path.join(FIXBUILD, "libplugin.so")])
    check("dlopener ok" in p.stdout, p.stdout)
    events = dump_events(log)
    c = count_calls(events)
    eq(c["plugin_fn"], 5, "plugin_fn over both loads")
    eq(c["plugin_inner"], 5, "plugin_inner")
    eq(c["host_call"], 5, "host_call")
    eq(check_nesting(events), {}, "balanced")
    dump = run([SFTRACE, "dump", log]).stdout
    eq(len(re.findall(r"^\s+\[\d+\] .*libplugin\.so", dump, re.M)), 2, "two object records, one per load")
    check("unloaded" in dump, "the first load is marked unloaded")


def node_headers():
    if os.path.exists("/usr/include/node/node_api.h"):
        return "/usr/include/node"
    raise Skip("Node-API headers not found in /usr/include/node")


def addon_fixture():
    if not shutil.which("node"):
        raise Skip("node is not installed")
    inc = node_headers()
    return build_c("addon.node", ["addon.c"], shared=True, flags=["-I" + inc])


def test_node_addon_exact_counts():
    addon = addon_fixture()
    script = os.path.join(FIXTURES, "addon_test.js")
    p, log = record(["node", script, addon])
    check("addon ok" in p.stdout, p.stdout + p.stderr)
    c = count_calls(dump_events(log))
    eq(c["addon_init"], 1, "addon_init")
    eq(c["addon_outer"], 10, "addon_outer")
    eq(c["addon_inner"], 20, "addon_inner")


def test_node_addon_in_worker_threads():
    addon = addon_fixture()
    script = os.path.join(FIXTURES, "addon_test.js")
    p, log = record(["node", script, addon, "workers"])
    check("addon ok" in p.stdout, p.stdout + p.stderr)
    events = dump_events(log)
    c = count_calls(events)
    eq(c["addon_init"], 3, "addon_init once per JS context")
    eq(c["addon_outer"], 20, "10 in main + 5 per worker")
    eq(c["addon_inner"], 40, "addon_inner")
    eq(len({e.tid for e in events if e.name == "addon_outer"}), 3, "three JS threads")
    eq(check_nesting(events), {}, "balanced")


def setup_abi_fixture():
    return build_c("setup_abi", ["setup_abi.c"],
                   libs=["-L" + BUILD, "-lsftrace", "-Wl,-rpath," + BUILD, "-lpthread"])


def test_setup_abi_through_environment():
    exe = setup_abi_fixture()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = run([exe], env={"SFTRACE_OUTPUT_FILE": log, "LD_PRELOAD": ""})
    check("setup abi ok" in p.stdout, p.stdout + p.stderr)
    c = count_calls(dump_events(log))
    eq(c["s_work"], 4, "s_work")
    eq(c["t_work"], 3, "t_work")
    dump = run([SFTRACE, "dump", log]).stdout
    eq(len(re.findall(r"\bALLOC\b", dump)), 2, f"alloc events")
    eq(len(re.findall(r"\bDEALLOC\b", dump)), 2, "dealloc events")
    check(re.search(r"ALLOC\s+size=64 align=8 ptr=0x", dump), "alloc size shown")


def test_setup_abi_without_output_file_does_not_trace():
    exe = setup_abi_fixture()
    p = run([exe], env={"SFTRACE_OUTPUT_FILE": "", "LD_PRELOAD": ""})
    check("setup abi ok" in p.stdout)


def test_setup_abi_thread_only():
    exe = setup_abi_fixture()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    run([exe], env={"SFTRACE_OUTPUT_FILE": log, "SFTRACE_SETUP_THREAD_ONLY": "1", "LD_PRELOAD": ""})
    c = count_calls(dump_events(log))
    eq(c["s_work"], 4, "setup thread recorded")
    eq(c["t_work"], 0, "other threads not recorded")


def test_setup_abi_under_record_patched_once():
    exe = setup_abi_fixture()
    p, log = record([exe])
    check("setup abi ok" in p.stdout)
    events = dump_events(log)
    c = count_calls(events)
    eq(c["s_work"], 4, "s_work once per call, not twice")
    eq(c["t_work"], 3, "t_work")
    eq(check_nesting(events), {}, "balanced: no duplicated or missing events")
