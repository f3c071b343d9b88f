"""Skeptic k28c on issue 28 (replay, graph, info, Perfetto at depth): program
shapes compared with uftrace 0.13 on the same sources (gcc -pg), written
here as the expected call columns so the cases need no uftrace. Cases that
hold must pass; the breaks are known_break(28, ...) with what was seen.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic28c.py."""
import json
import os
import re
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import ROOT, SFTRACE, Skip, check, eq, run, tmpdir  # noqa: E402

TP = os.path.join(os.path.dirname(ROOT), "shared", "tools", "trace_processor_shell")
if not os.path.exists(TP):
    TP = "/work/shared/tools/trace_processor_shell"

def build(name, text, flags=("-O0",), libs=(), cxx=False):
    """Writes TEXT as a source and builds it with XRay sleds (sfkit.build_c)."""
    # A stable path, rewritten only when the text changes: build_c keys its
    # cache on the command, which names the source.
    d = os.path.join(sfkit.FIXBUILD, "k28c_src")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, name + (".cc" if cxx else ".c"))
    old = open(src).read() if os.path.exists(src) else None
    if old != text:
        with open(src, "w") as f:
            f.write(text)
    return sfkit.build_c("k28c_" + name, [src], flags=list(flags), libs=list(libs),
                         compiler="clang++" if cxx else "clang")


def record(binary, args=(), check_rc=0, rec_args=()):
    d = os.path.join(tmpdir(), "trace")
    sfkit.record([binary] + list(args), out=os.path.join(d, "sf.log"), args=["-q"] + list(rec_args),
                 check_rc=check_rc)
    return d


def sf(*args, check_rc=0):
    return run([SFTRACE] + list(args), check_rc=check_rc)


def column(text):
    """The call column of replay output (what follows 'TID] | '), comments
    of the header dropped."""
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if "| " in line:
            out.append(line.split("| ", 1)[1].rstrip())
    return out


def replay(trace, *opts):
    return sf("replay", "--no-pager", "--color", "never", *opts, trace).stdout


UNITS = {"us": 1e3, "ms": 1e6, "s": 1e9}


def ns(num, unit):
    return float(num) * UNITS[unit]


# ---------------------------------------------------------------- fixtures

HELLO = r"""
__attribute__((noinline)) void loop(void){ for(volatile int i=0;i<1000;i++); }
__attribute__((noinline)) void foo(void){ loop(); loop(); loop(); }
__attribute__((noinline)) void bar(void){ __asm__ volatile(""); }
int main(void){ foo(); foo(); bar(); return 0; }
"""

MUTUAL = r"""
int is_odd(int n);
int is_even(int n){ return n==0 ? 1 : is_odd(n-1); }
int is_odd(int n){ return n==0 ? 0 : is_even(n-1); }
int fib(int n){ return n<2 ? n : fib(n-1)+fib(n-2); }
int main(void){ int r = is_even(7); r += fib(5); return r==0; }
"""

DEEP = r"""
#include <stdlib.h>
int down(int n){ if(n==0) return 0; return 1+down(n-1); }
int main(int argc,char**argv){ int n = argc>1?atoi(argv[1]):3000; return down(n)!=n; }
"""

FORK = r"""
#include <unistd.h>
#include <sys/wait.h>
void child_work(void){}
void parent_work(void){}
void a(void){ child_work(); }
int main(void){ pid_t p=fork(); if(p==0){ a(); return 0;} waitpid(p,0,0); parent_work(); return 0; }
"""

THREADS = r"""
#include <pthread.h>
#include <unistd.h>
void leaf(void){ usleep(1000); }
void work(int i){ leaf(); if(i) leaf(); }
void *tmain(void *a){ long i=(long)a; usleep(3000*i); work(i); return 0; }
int main(void){ pthread_t t[3]; for(long i=0;i<3;i++) pthread_create(&t[i],0,tmain,(void*)(i+1));
  for(int i=0;i<3;i++) pthread_join(t[i],0); work(0); return 0; }
"""


def hello_trace():
    return record(build("hello", HELLO))


# ------------------------------------------------------- cases that hold

def test_hello_shape_matches_uftrace_column_and_graph():
    t = hello_trace()
    eq(column(replay(t)), [
        "main() {", "  foo() {", "    loop();", "    loop();", "    loop();", "  } /* foo */",
        "  foo() {", "    loop();", "    loop();", "    loop();", "  } /* foo */",
        "  bar();", "} /* main */"], "replay column (uftrace's, same source)")
    g = sf("graph", "--no-pager", "main", t).stdout
    calls = [ln.split(" : ", 1)[1] for ln in g.splitlines() if " : " in ln and not ln.startswith("#")]
    eq(calls, ["(1) main", " +-(2) foo", " | (6) loop", " | ", " +-(1) bar"], "graph main (uftrace's)")


def test_mutual_recursion_cuts_match_uftrace():
    t = record(build("mutual", MUTUAL))
    # Each expected column is uftrace 0.13's replay of the gcc -pg build.
    eq(column(replay(t, "-F", "is_odd")),
       ["is_odd() {", "  is_even() {", "    is_odd() {", "      is_even() {", "        is_odd() {",
        "          is_even() {", "            is_odd();", "          } /* is_even */", "        } /* is_odd */",
        "      } /* is_even */", "    } /* is_odd */", "  } /* is_even */", "} /* is_odd */"], "-F is_odd")
    # --max-depth counts again from each nested call -F finds (uftrace -D).
    eq(column(replay(t, "-F", "fib", "--max-depth", "2")),
       ["fib() {", "  fib() {", "    fib() {", "      fib() {", "        fib();", "        fib();",
        "      } /* fib */", "      fib();", "    } /* fib */", "    fib() {", "      fib();", "      fib();",
        "    } /* fib */", "  } /* fib */", "  fib() {", "    fib() {", "      fib();", "      fib();",
        "    } /* fib */", "    fib();", "  } /* fib */", "} /* fib */"], "-F fib --max-depth 2")
    eq(column(replay(t, "-N", "fib", "-F", "is_even", "--max-depth", "2")),
       ["is_even() {", "  is_odd() {", "    is_even() {", "      is_odd() {", "        is_even() {",
        "          is_odd() {", "            is_even() {", "              is_odd();", "            } /* is_even */",
        "          } /* is_odd */", "        } /* is_even */", "      } /* is_odd */", "    } /* is_even */",
        "  } /* is_odd */", "} /* is_even */"], "-N fib -F is_even --max-depth 2")
    g = sf("graph", "--no-pager", "fib", t).stdout
    counts = re.findall(r": \((\d+)\) fib", g)
    eq(counts, ["1", "2", "4", "6", "2"], "graph fib: uftrace's counts per level")


def test_deep_recursion_graph_is_flat_3001_levels():
    t = record(build("deep", DEEP), ["3000"])
    g = sf("graph", "--no-pager", "down", t).stdout
    levels = [ln for ln in g.splitlines() if re.search(r" : \(1\) down$", ln)]
    eq(len(levels), 3001, "graph down: one flat line per level")
    check(" +-" not in g, "a single path is drawn flat")


def test_perfetto_20000_deep_one_root_per_track_nested():
    if not os.path.exists(TP):
        raise Skip("trace_processor_shell not found (../shared/tools)")
    t = record(build("deep", DEEP), ["20000"])
    pb = os.path.join(tmpdir(), "d.pb.gz")
    sf("convert", "-q", os.path.join(t, "sf.log"), "-o", pb)
    q = os.path.join(tmpdir(), "q.sql")
    with open(q, "w") as f:
        f.write("select count(*) as n, max(depth) as maxd, count(distinct track_id) as tracks,"
                " (select count(*) from slice b where b.depth=0 and b.track_id>1 and"
                "  (select count(*) from slice a where a.track_id=b.track_id-1 and a.depth=511"
                "   and b.ts>=a.ts and b.ts+b.dur<=a.ts+a.dur)=1) as nested,"
                " (select count(*) from stats where value>0 and severity!='info') as bad from slice;\n")
    out = run([TP, "-q", q, pb]).stdout.strip().splitlines()[-1]
    # 20,002 calls (main + 20,001 down) on 40 tracks of 512 levels; each
    # child track's root lies inside the deepest slice of the one before.
    eq(out, "20002,511,40,39,0", "slices, max depth, tracks, nested child roots, import errors")


def test_signal_handler_nests_where_it_lands():
    src = r"""
#include <signal.h>
void handler_leaf(void){}
void handler(int s){ handler_leaf(); }
void inner(void){ raise(SIGUSR1); }
void outer(void){ inner(); }
int main(void){ signal(SIGUSR1, handler); outer(); return 0; }
"""
    t = record(build("sig", src))
    eq(column(replay(t)), ["main() {", "  outer() {", "    inner() {", "      handler() {",
                           "        handler_leaf();", "      } /* handler */", "    } /* inner */",
                           "  } /* outer */", "} /* main */"], "uftrace's column")


def test_siglongjmp_out_of_a_handler_is_one_repair_comment():
    src = r"""
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>
static sigjmp_buf jb;
volatile int stop;
void in_handler(void){}
void handler(int s){ in_handler(); siglongjmp(jb, 1); }
void spin3(void){ while(!stop); }
void spin2(void){ spin3(); }
void spin1(void){ spin2(); }
void after(void){}
int main(void){ signal(SIGALRM, handler); if(!sigsetjmp(jb,1)){ ualarm(2000,0); spin1(); } after(); return 0; }
"""
    t = record(build("sigjmp", src))
    # uftrace 0.13 loses the stack here (after() nested in handler, then
    # "stopped tracing with remaining functions"); sftrace repairs it.
    eq(column(replay(t)), ["main() {", "  spin1() {", "    spin2() {", "      spin3() {", "        handler() {",
                           "          in_handler();", "        } /* handler */", "      } /* spin3 */",
                           "    } /* spin2 */", "  } /* spin1 */", "  /* 4 frames unwound */", "  after();",
                           "} /* main */"], "column")


def test_cxx_exception_through_destructors_like_uftrace_t186():
    src = r"""
#include <stdexcept>
struct C { __attribute__((noinline)) C(){} __attribute__((noinline)) ~C(){} };
__attribute__((noinline)) void thrower(){ throw std::runtime_error("x"); }
__attribute__((noinline)) void mid(){ C c; thrower(); }
__attribute__((noinline)) void top(){ try { mid(); } catch(...) {} }
__attribute__((noinline)) void after(){}
int main(){ top(); after(); return 0; }
"""
    t = record(build("exc", src, cxx=True))
    # uftrace t186's shape, library calls aside, with the repairs shown
    # where the unwinder left each frame (the destructor runs in mid
    # during the unwinding, after thrower was left).
    eq(column(replay(t)), ["main() {", "  top() {", "    mid() {", "      C::C();", "      thrower();",
                           "      /* 1 frame unwound */", "      C::~C();", "    } /* mid */",
                           "    /* 1 frame unwound */", "  } /* top */", "  after();", "} /* main */"], "column")


def test_constructor_destructor_atexit_are_outermost():
    src = r"""
#include <stdlib.h>
void in_ctor(void){}
void in_dtor(void){}
void in_atexit(void){}
void atexit_fn(void){ in_atexit(); }
__attribute__((constructor)) void my_ctor(void){ in_ctor(); }
__attribute__((destructor)) void my_dtor(void){ in_dtor(); }
int main(void){ atexit(atexit_fn); return 0; }
"""
    t = record(build("ctor", src))
    eq(column(replay(t)), ["my_ctor() {", "  in_ctor();", "} /* my_ctor */", "main();", "atexit_fn() {",
                           "  in_atexit();", "} /* atexit_fn */", "my_dtor() {", "  in_dtor();",
                           "} /* my_dtor */"], "uftrace's column")


def test_sigkill_mid_run_replay_graph_info():
    src = r"""
#include <signal.h>
#include <unistd.h>
void leaf(int i){ __asm__ volatile(""); }
void victim(void){ kill(getpid(), SIGKILL); }
void loop(int n){ for(int i=0;i<n;i++) leaf(i); victim(); }
int main(void){ loop(1000); return 0; }
"""
    t = record(build("killme", src), check_rc=137)
    col = column(replay(t))
    eq(col[-4:], ["    victim();", "  } /* loop */", "} /* main */", "/* 3 frames open at thread end */"], "tail")
    eq(sum(1 for c in col if c == "    leaf();"), 1000, "leaf calls")
    g = sf("graph", "--no-pager", "loop", t).stdout
    check("(1000) leaf" in g and "(1) victim" in g, g)
    info = json.loads(sf("info", "--format", "json", t).stdout)["processes"][0]
    eq((info["events"], info["frames"], info["exit_signal"], info["open_at_end"], info["dropped"]),
       (2003, 1003, "SIGKILL", 3, 0), "info: events, frames, signal, open at end, dropped")
    eq(sum(th["events"] for th in info["threads"]), 2003, "thread events sum")


def test_min_duration_keeps_exactly_the_calls_at_or_above():
    t = record(build("threads", THREADS, libs=["-lpthread"]))
    full = replay(t)
    cut = replay(t, "--min-duration", "1500us")
    durs = [ns(m.group(1), m.group(2)) for m in re.finditer(r"^\s*([\d.]+) (us|ms|s) \[", full, re.M)]
    kept = [ns(m.group(1), m.group(2)) for m in re.finditer(r"^\s*([\d.]+) (us|ms|s) \[", cut, re.M)]
    eq(len(kept), sum(1 for d in durs if d >= 1.5e6), "kept = calls of 1.5 ms or more")
    check(all(d >= 1.5e6 for d in kept), "no kept call under the threshold")


def test_tid_replay_is_that_thread_only():
    t = record(build("threads", THREADS, libs=["-lpthread"]))
    info = json.loads(sf("info", "--format", "json", t).stdout)["processes"][0]
    tids = [th["tid"] for th in info["threads"]]
    eq(len(tids), 4, "threads")
    two = [tid for tid in tids if tid != info["pid"]][1]
    col = column(replay(t, "--tid", str(two)))
    eq(col, ["tmain() {", "  work() {", "    leaf();", "    leaf();", "  } /* work */", "} /* tmain */"],
       "--tid: the second worker's calls")
    lines = [ln for ln in replay(t).splitlines() if "| " in ln and not ln.startswith("#")]
    got_tids = {int(re.search(r"\[\s*(\d+)\]", ln).group(1)) for ln in lines}
    eq(got_tids, set(tids), "every thread in the merged replay")


def test_icf_folded_name_follows_the_filter():
    if not shutil.which("ld.lld"):
        raise Skip("ld.lld not installed")
    src = r"""
__attribute__((noinline)) int alpha_one(int x){ return x*7+3; }
__attribute__((noinline)) int beta_two(int x){ return x*7+3; }
__attribute__((noinline)) int gamma_three(int x){ return x*7+3; }
int main(int c, char**v){ return alpha_one(c) + beta_two(c) + gamma_three(c) == 0; }
"""
    b = build("icf", src, flags=["-ffunction-sections", "-fuse-ld=lld", "-Wl,--icf=all"])
    filt = os.path.join(tmpdir(), "f.filter")
    sf("filter", "-q", "-p", b, "-r", "gamma", "-o", filt)
    t = record(b, rec_args=["-f", filt])
    eq(column(replay(t)), ["gamma_three();"] * 3, "named as the filter chose")
    check("gamma_three" in sf("report", t).stdout, "report")


# ------------------------------------------------------------------ breaks

def test_fork_child_dropped_exit_shows_in_replay():
    t = record(build("fork", FORK))
    logs = sorted(f for f in os.listdir(t) if f != "sf.log")
    eq(len(logs), 1, "one child log")
    child = os.path.join(t, logs[0])
    info = json.loads(sf("info", "--format", "json", child).stdout)["processes"][0]
    eq(info["repairs"]["unmatched_exits"], 1, "info counts the dropped exit")
    col = column(replay(child))
    eq(col[:3], ["a() {", "  child_work();", "} /* a */"], "child's calls")
    eq(col[3:], ["/* unmatched exit dropped: main */"], "the dropped exit, where it happened")


def test_fork_child_dropped_exit_under_cuts():
    """The dropped exit stays under a cut, where a call of main at its place
    (the child's outermost level) would: the cut judges it as that call
    (-F/-N by main's name, --max-depth by its level; under -F/-N the child's
    calls are main's too, as the child starts inside it); --min-duration does
    not judge it (it has no duration), and --tid keeps its thread."""
    t = record(build("fork", FORK))
    child = os.path.join(t, sorted(f for f in os.listdir(t) if f != "sf.log")[0])
    tid = json.loads(sf("info", "--format", "json", child).stdout)["processes"][0]["pid"]
    dropped = "/* unmatched exit dropped: main */"
    whole = ["a() {", "  child_work();", "} /* a */", dropped]
    for cut, want in ((["--max-depth", "1"], ["a();", dropped]),
                      (["-N", "^a$"], [dropped]),
                      (["-F", "^main$"], whole),  # the child starts inside main (skeptic28d)
                      (["-F", "^a$"], whole[:3]),
                      (["-N", "^main$"], []),  # and -N main drops all of it
                      (["--min-duration", "1s"], [dropped]),
                      (["--tid", str(tid)], whole),
                      (["--time", "0.."], whole)):
        eq(column(replay(child, *cut)), want, f"replay {' '.join(cut)}")
    d = sf("dump", "--max-depth", "1", child).stdout
    ev = [re.sub(r"^ *\d+ +\d+ ", "", ln) for ln in d.split("events:\n", 1)[1].split("\n\n")[0].splitlines()[1:]]
    eq([re.sub(r" +", " ", e) for e in ev], ["ENTRY a", "EXIT a", "EXIT main (repaired: unmatched, dropped)"],
       "dump under a cut: the dropped exit where it happened")


def test_graph_root_is_the_kept_calls():
    t = hello_trace()
    g = sf("graph", "--no-pager", t).stdout
    m = re.search(r"^\s*([\d.]+) (us|ms|s) : \(1\) k28c_hello$", g, re.M)
    mm = re.search(r"^\s*([\d.]+) (us|ms|s) : \(1\) main$", g, re.M)
    check(m and mm, g)
    root, main = ns(m.group(1), m.group(2)), ns(mm.group(1), mm.group(2))
    check(root <= main * 1.5, f"graph root {root / 1e3:.3f} us vs main {main / 1e3:.3f} us "
                              f"(uftrace: root = main)")


def test_graph_root_takes_the_tid_cut():
    t = record(build("threads", THREADS, libs=["-lpthread"]))
    info = json.loads(sf("info", "--format", "json", t).stdout)["processes"][0]
    tid = [th["tid"] for th in info["threads"] if th["tid"] != info["pid"]][0]
    g = sf("graph", "--no-pager", "--tid", str(tid), t).stdout
    m = re.search(r"^\s*([\d.]+) (us|ms|s) : \(1\) k28c_threads$", g, re.M)
    mm = re.search(r"^\s*([\d.]+) (us|ms|s) : \(1\) tmain$", g, re.M)
    check(m and mm, g)
    root, top = ns(m.group(1), m.group(2)), ns(mm.group(1), mm.group(2))
    check(root <= top * 1.05, f"graph --tid root {root / 1e6:.3f} ms vs tmain {top / 1e6:.3f} ms")


def test_first_function_self_time_is_not_tracer_setup():
    t = hello_trace()
    rep = json.loads(sf("report", "--format", "json", t).stdout)
    main = [f for f in rep["functions"] if f["name"] == "main"][0]
    check(main["self_ns"] < 1000, f"main self {main['self_ns']} ns of {main['total_ns']} ns total "
                                  "(its body only calls foo twice and bar)")


def test_info_without_the_recorded_binary():
    src = build("hello", HELLO)
    b = os.path.join(tmpdir(), "prog")
    shutil.copy(src, b)
    t = record(b)
    os.remove(b)
    p = sf("info", t, check_rc=None)
    check(p.returncode == 0 and "# cmdline" in p.stdout and "# events" in p.stdout,
          f"info exit {p.returncode}, stdout {p.stdout[:200]!r}, stderr {p.stderr.strip()[:200]!r}")
    log = os.path.join(t, "sf.log")
    eq(p.stderr, f"sftrace: warning: {log}: {b}: No such file or directory; its functions are named "
                 "prog+0x<address>\n", "info: one note naming the object and the cause")
    check("# events            : 20" in p.stdout, p.stdout)
    for cmd in ("replay", "graph"):
        r = sf(cmd, "--no-pager", t, check_rc=1)
        eq(r.stderr, f"sftrace: error: {b}: No such file or directory; use --symbol PATH to name a copy of the "
                     "recorded build, --force for placeholder names, or --no-symbols\n", cmd)
    # Rebuilt: a different build-id at the recorded path.
    shutil.copy(build("other", "int main(void){ return 0; }\n"), b)
    p = sf("info", t, check_rc=None)
    check(p.returncode == 0 and "# events            : 20" in p.stdout, p.stdout[:300])
    check(re.fullmatch(rf"sftrace: warning: {re.escape(log)}: {re.escape(b)}: build-id mismatch: expected \w+, "
                       r"file has \w+; its functions are named prog\+0x<address>\n", p.stderr), p.stderr)
    r = sf("replay", "--no-pager", t, check_rc=1)
    check(re.fullmatch(rf"sftrace: error: {re.escape(b)}: build-id mismatch: expected \w+, file has \w+; use "
                       r"--symbol PATH to name the recorded build, --force to read this file anyway \(names "
                       r"may be wrong\), or --no-symbols\n", r.stderr), r.stderr)
    check("prog+0x" in replay(t, "--force") or "main()" in replay(t, "--force"), "--force reads on")


def test_max_size_counts_every_event_kept_or_dropped():
    src = r"""
volatile long s;
__attribute__((noinline)) void leaf(long i){ s+=i; }
__attribute__((noinline)) void mid(long n){ for(long i=0;i<n;i++) leaf(i); }
int main(void){ for(int k=0;k<20;k++) mid(100000); return 0; }
"""
    b = build("lots", src, flags=["-O1"])
    t = record(b, rec_args=["--max-size", "1M"])
    p = json.loads(sf("info", "--format", "json", "-q", t).stdout)["processes"][0]
    # 20 x 100,000 leaf calls + 20 mid + main = 2,000,021 calls, 4,000,042 events.
    eq(p["events"] + p["dropped"], 4000042, "events kept + dropped")
    eq(p["max_size_reached"], True, "max size reached")
    col = column(replay(t, "-q"))
    eq(col[-1], "/* 2 frames open at thread end */", "replay says where the recording stopped")


def test_deeply_nested_template_name_is_demangled():
    src = r"""
template<class T> struct W {};
template<int N> struct Deep { typedef W<typename Deep<N-1>::type> type; };
template<> struct Deep<0> { typedef int type; };
template<class T> __attribute__((noinline)) int f(T*) { return sizeof(T); }
template<class T> __attribute__((noinline)) int g(T* p) { return f(p) + 1; }
int main(){ return g((Deep<400>::type*)0) == 0; }
"""
    t = record(build("deepname", src, flags=["-O0", "-ftemplate-depth=2000"], cxx=True))
    col = column(replay(t))
    eq(len(col), 5, f"main, g, f: {[c[:40] for c in col]}")
    check(not col[1].strip().startswith("_Z"), f"g's name left mangled: {col[1].strip()[:60]}... "
                                               f"({len(col[1].strip())} chars)")


if __name__ == "__main__":
    sfkit.main(globals())
