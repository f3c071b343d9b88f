"""Skeptic 28d: issue 28's terminal views (replay, graph, info), Perfetto at
any depth, folded names and the cut options, attacked with programs of our
own (written here, built with clang and XRay sleds). Cases that found a break
are known breaks with the numbers seen; the rest hold.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic28d.py."""
import json
import os
import re
import subprocess
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import SFTRACE, check, eq, record, run, tmpdir, tp_rows  # noqa: E402

XRAY = ["-O0", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1"]
_BUILT = {}


def build(name, src, flags=(), compiler="clang", ext="c"):
    """Builds SRC (text) once per run; returns the binary's path."""
    key = (name, src, tuple(flags), compiler)
    if key not in _BUILT:
        d = tmpdir()
        path = os.path.join(d, name + "." + ext)
        with open(path, "w") as f:
            f.write(src)
        out = os.path.join(d, name)
        run([compiler] + XRAY + list(flags) + ["-o", out, path])
        _BUILT[key] = out
    return _BUILT[key]


# A recursion that longjmps out from 1,500 frames deep, three times: the
# unwound frames have an ENTRY event and no EXIT. Untraced, one mid() takes
# about 3 us (27-36 us the first time, the stack's page faults).
UNWIND_SRC = r"""
#include <setjmp.h>
static jmp_buf jb;
__attribute__((noinline)) void d(int n) { if (n == 0) longjmp(jb, 1); d(n - 1); __asm__ volatile(""); }
__attribute__((noinline)) void mid(int n) { if (!setjmp(jb)) d(n); }
int main(void) { for (int i = 0; i < 3; i++) mid(1500); return 0; }
"""


def test_unwound_frames_net_time_and_min_duration():
    exe = build("unwind3", UNWIND_SRC)
    _, log = record([exe], args=["-q"])
    raw = run([SFTRACE, "replay", "--no-pager", "-f", "none", "--raw-times", "-F", "mid", "--max-depth", "1",
               "--min-duration", "1ns", log]).stdout
    eq([ln for ln in raw.splitlines() if not ln.startswith("#")], ["mid();"] * 3, "--raw-times --min-duration 1ns")
    net = run([SFTRACE, "replay", "--no-pager", "-f", "none", "-F", "mid", "--max-depth", "1",
               "--min-duration", "1ns", log]).stdout
    eq([ln for ln in net.splitlines() if not ln.startswith("#")], ["mid();"] * 3,
       "mid() calls --min-duration 1ns keeps (each runs 1,501 calls)")
    rep = run([SFTRACE, "report", log]).stdout
    row = next(ln for ln in rep.splitlines() if ln.endswith(" mid"))
    # Total Self Calls Avg Min Max name, each time a number and a unit: a Min
    # of 0 ns is neither a net figure (untraced >= 3 us) nor marked "<"
    cols = row.split()
    eq(cols[4], "3", f"report's mid row {row!r}: calls")
    check(" ".join(cols[7:9]) != "0 ns", f"report's mid row shows an unmarked Min of 0 ns: {row!r}")


def test_replay_into_head_exits_zero():
    exe = build("fib20", r"""
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) { return (int)(fib(20) & 1) - 1; }
""", flags=["-fno-optimize-sibling-calls"])
    _, log = record([exe], args=["-q"])
    # each writes more than a pipe holds (64 KiB) for this log
    for cmd in (["replay", "--no-pager", log], ["dump", log], ["query", log, "select * from frames"],
                ["convert", "-q", "-t", "chrome", "-o", "/dev/stdout", log]):
        p = subprocess.Popen([SFTRACE] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.readline()
        p.stdout.close()  # as head does after its lines
        err = p.stderr.read().decode(errors="replace")
        rc = p.wait(timeout=60)
        eq((rc, err), (0, ""), f"{cmd[0]}'s exit status and stderr when its reader leaves early")


def long_template_src(n):
    types = "".join(f"struct LongTypeNameNumber{i:04d}_abcdefghijklmnopqrstuvwxyz {{}};\n" for i in range(n))
    args = ",".join(f"LongTypeNameNumber{i:04d}_abcdefghijklmnopqrstuvwxyz" for i in range(n))
    return (types + "template <class... T> __attribute__((noinline)) int big(int x) { asm volatile(\"\"); "
            "return x + 1; }\nint main(int c, char **) { return big<" + args + ">(c) == 0; }\n")


def test_template_name_of_8k_demangled():
    # 160 type arguments: 8,172 characters mangled, demangled and shortened
    exe = build("long160", long_template_src(160), compiler="clang++", ext="cc")
    _, log = record([exe], args=["-q"])
    calls = sfkit.call_column(run([SFTRACE, "replay", "--no-pager", log]).stdout)
    eq(calls, ["main() {", "  big<…>();", "} /* main */"], "replay of a 160-argument template")


def test_template_name_of_10k_demangled():
    exe = build("long200", long_template_src(200), compiler="clang++", ext="cc")
    _, log = record([exe], args=["-q"])
    calls = sfkit.call_column(run([SFTRACE, "replay", "--no-pager", log]).stdout)
    eq(calls[1][:40], "  big<…>();", "replay of a 200-argument template")
    kept = run([SFTRACE, "replay", "--no-pager", "-f", "none", "-F", "^big", log]).stdout
    eq([ln for ln in kept.splitlines() if not ln.startswith("#")], ["big<…>();"], "-F '^big'")


# Two threads, each 700 frames deep with a 1,500-deep dive that longjmps out
# (with a signal handler at the bottom), three times: repairs past depth 512.
DEEP_SRC = r"""
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
static __thread jmp_buf jb;
__attribute__((noinline)) void handler(int s) { (void)s; }
__attribute__((noinline)) void d(int n) { if (n == 0) { raise(SIGUSR1); longjmp(jb, 1); } d(n - 1); __asm__ volatile(""); }
__attribute__((noinline)) void mid(int n) { if (!setjmp(jb)) d(n); }
__attribute__((noinline)) void up(int k) { if (k == 0) { mid(1500); return; } up(k - 1); __asm__ volatile(""); }
__attribute__((noinline)) void *worker(void *a) { for (int i = 0; i < 3; i++) up(700); return a; }
int main(void) {
    signal(SIGUSR1, handler);
    pthread_t t; pthread_create(&t, 0, worker, 0); pthread_join(t, 0);
    worker(0);
    return 0;
}
"""


def deep_log():
    if "deep" not in _BUILT:
        exe = build("deepjmp", DEEP_SRC, flags=["-lpthread"])
        _, log = record([exe], args=["-q"])
        _BUILT["deep"] = log
    return _BUILT["deep"]


def test_perfetto_deep_landings_load_whole():
    """Every call of two 2,203-deep threads with 6 landings of 1,501 frames
    loads in trace_processor: slice count = report's frames, no import
    problem, child tracks on the thread's utid."""
    sfkit.trace_processor()
    log = deep_log()
    out = os.path.join(tmpdir(), "deep.pb.gz")
    run([SFTRACE, "convert", "-q", "-o", out, log])
    frames = int(re.search(r"(\d+) frames", run([SFTRACE, "report", log]).stdout).group(1))
    eq(frames, 3 + 6 * (701 + 1 + 1501 + 1), "frames report counts")
    eq(tp_rows(out, "select printf('%d', count(*)), printf('%d', max(depth)), printf('%d', sum(dur < 0)) from slice;"), [[str(frames), "511", "0"]],
       "slices, max depth, negative durations")
    eq(tp_rows(out, "select name, value from stats where value > 0 and severity != 'info';"), [], "import stats")
    rows = tp_rows(out, "select printf('%d', count(distinct utid)), printf('%d', count(*)) from thread_track tt join slice s "
                        "on s.track_id = tt.id;")
    eq(rows, [["2", str(frames)]], "every slice on a thread track of one of the two threads")


def test_cut_options_agree_across_outputs():
    """--time through the dives, with -N handler, --tid and --max-depth: replay, report, info and Perfetto keep the same calls,
    and replay stays balanced."""
    sfkit.trace_processor()
    log = deep_log()
    info = json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)["processes"][0]
    tid = str(info["threads"][0]["tid"])
    # the window: from the thread's 1,000th event to its 5,000th (dump's
    # times are ns from the trace start, as --time's), through a dive
    times = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+)\s+" + tid + r"\s+(?:ENTRY|EXIT)",
                                                  run([SFTRACE, "dump", log]).stdout, re.M)]
    lo, hi = times[1000] // 1000, times[5000] // 1000 + 1  # us
    # (no --min-duration: info and convert judge it net only, and the net
    # times of unwound frames are the break of the first case)
    cut = ["--tid", tid, "--time", f"{lo}us..{hi}us", "-N", "handler", "--max-depth", "2000"]
    rp = run([SFTRACE, "replay", "--no-pager", "-f", "none"] + cut + [log])
    kept = int(re.search(r"kept (\d+) of", rp.stderr).group(1))
    lines = [ln.strip() for ln in rp.stdout.splitlines() if not ln.startswith("#")]
    opens = sum(ln.endswith("{") or " { /*" in ln for ln in lines)
    closes = sum(ln.startswith("}") for ln in lines)
    leaves = sum(bool(re.match(r"^[\w:]+\(\);", ln)) for ln in lines)
    eq(opens, closes, "replay balanced")
    eq(opens + leaves, kept, "replay's calls against its summary")
    check(kept > 100, f"the window keeps calls ({kept})")
    check("handler" not in rp.stdout, "-N handler")
    rep = run([SFTRACE, "report"] + cut + [log]).stdout
    eq(int(re.search(r"kept (\d+) of", rep).group(1)), kept, "report's kept calls")
    inf = json.loads(run([SFTRACE, "info", "--format", "json"] + cut + [log]).stdout)["processes"][0]
    eq(inf["frames_kept"], kept, "info's frames_kept")
    out = os.path.join(tmpdir(), "cut.pb.gz")
    run([SFTRACE, "convert", "-q", "-o", out] + cut + [log])
    eq(tp_rows(out, "select printf('%d', count(*)) from slice;"), [[str(kept)]], "Perfetto slices")
    eq(tp_rows(out, "select name, value from stats where value > 0 and severity != 'info';"), [], "import stats")


ICF_SRC = r"""
__attribute__((noinline)) int alpha_twin(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * 7; return s; }
__attribute__((noinline)) int zeta_twin(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * 7; return s; }
__attribute__((noinline)) int user(int x) { return alpha_twin(x) + zeta_twin(x + 1); }
int main(int c, char **v) { (void)v; return user(c) == 7 ? 0 : 1; }
"""


def test_icf_name_is_the_filters_everywhere():
    """lld --icf=all folds alpha_twin and zeta_twin onto one address: recorded
    with -r alpha, every view names both calls alpha_twin; info lists the
    other name as an alias."""
    sfkit.trace_processor()
    exe = build("icf", ICF_SRC, flags=["-O2", "-ffunction-sections", "-fuse-ld=lld", "-Wl,--icf=all"])
    syms = run(["nm", exe]).stdout
    addrs = {ln.split()[2]: ln.split()[0] for ln in syms.splitlines() if ln.endswith("_twin")}
    eq(addrs["alpha_twin"], addrs["zeta_twin"], "folded")
    _, log = record([exe], args=["-q", "-r", "alpha"])
    eq(sfkit.call_column(run([SFTRACE, "replay", "--no-pager", log]).stdout), ["alpha_twin();"] * 2, "replay")
    rep = run([SFTRACE, "report", log]).stdout
    check("alpha_twin" in rep and "zeta" not in rep, f"report: {rep}")
    gr = run([SFTRACE, "graph", "--no-pager", log]).stdout
    check("(2) alpha_twin" in gr and "zeta" not in gr, f"graph: {gr}")
    check("alias: alpha_twin = zeta_twin" in run([SFTRACE, "info", log]).stdout, "info's alias line")
    out = os.path.join(tmpdir(), "icf.pb.gz")
    run([SFTRACE, "convert", "-q", "-o", out, log])
    eq(tp_rows(out, "select name, printf('%d', count(*)) from slice group by name;"), [["alpha_twin", "2"]], "Perfetto")


CTL_SRC = r"""
#define _GNU_SOURCE
#include <pthread.h>
__attribute__((noinline)) void f1(void) __asm__("evil\x1b[31mred\x07\"q\\b\n\tx");
__attribute__((noinline)) void f1(void) { __asm__ volatile(""); }
__attribute__((noinline)) void f2(void) __asm__("bad\xff\xfeutf");
__attribute__((noinline)) void f2(void) { __asm__ volatile(""); }
int main(void) { pthread_setname_np(pthread_self(), "m\"a\\i\x1b\n\xff"); f1(); f2(); return 0; }
"""


def test_control_characters_escaped_and_json_valid():
    exe = build("ctl", CTL_SRC, flags=["-lpthread"])
    _, log = record([exe], args=["-q"])
    calls = sfkit.call_column(run([SFTRACE, "replay", "--no-pager", log]).stdout)
    eq(calls, ["main() {", '  evil\\x1b[31mred\\x07"q\\b\\x0a\\x09x();', "  bad\\xff\\xfeutf();", "} /* main */"],
       "replay escapes controls and bytes that are not UTF-8")
    doc = json.loads(run([SFTRACE, "info", "--format", "json", log]).stdout)
    eq(doc["processes"][0]["threads"][0]["name"], 'm"a\\i\x1b\n\ufffd', "info json thread name")
    json.loads(run([SFTRACE, "report", "--format", "json", log]).stdout)
    for c in ("replay", "graph", "report", "info"):
        out = run([SFTRACE, c] + (["--no-pager"] if c in ("replay", "graph") else []) + [log]).stdout
        check("\x1b" not in out and "\x07" not in out, f"{c} prints a raw control character")


FORK_SRC = r"""
#include <sys/wait.h>
#include <unistd.h>
__attribute__((noinline)) int child(void) { return 7; }
__attribute__((noinline)) void after(void) { __asm__ volatile(""); }
int main(void) { pid_t p = fork(); if (p == 0) { child(); after(); return 0; }
                 int st; waitpid(p, &st, 0); after(); return 0; }
"""


def test_fork_child_calls_are_under_main():
    exe = build("forkmain", FORK_SRC)
    _, log = record([exe], args=["-q"])
    d = os.path.dirname(log)
    def calls(opts):
        out = run([SFTRACE, "replay", "--no-pager", "-f", "none"] + opts + [d]).stdout
        return [ln.strip() for ln in out.splitlines() if ln and not ln.startswith("#")]
    eq(calls([]), ["main() {", "after();", "} /* main */", "child();", "after();",
                   "/* unmatched exit dropped: main */"], "replay")
    eq(calls(["-N", "main"]), [], "-N main: every call is main's or under it")
    eq(calls(["-F", "main"]), ["main() {", "after();", "} /* main */", "child();", "after();",
                               "/* unmatched exit dropped: main */"], "-F main (the child's dropped exit of main kept, skeptic28c)")


if __name__ == "__main__":
    sfkit.main(globals())
