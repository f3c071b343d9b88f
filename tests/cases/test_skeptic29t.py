"""Skeptic 29t: issue 29's claims (record -A/-R/--auto-args) tried with
programs written for this, not the project's fixtures: -O2 tail calls,
stack arguments, varargs, longjmp and exceptions out of named functions,
strings at the budget's edges and behind pages another thread flips,
threads with a signal handler calling a named function, fork, raw clone,
a PID namespace, exec with an empty environment, dlopen, a misaligned
stack, C++ templates and overloads, Rust types, filters and rings, bad
specs, the cost of an unnamed function (callgrind), split DWARF, and Lua's
own test suite with every function's arguments named."""
import collections
import os
import re
import shutil

import sfkit
from sfkit import (FIXBUILD, FIXTURES, SFTRACE, build_c, check, eq, record, run, run_each, rust_fixture,
                   tmpdir)

ISSUE = 29
CALL_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(ARGS|ENTRY|EXIT|TAIL)\s+(.*)$")


def replay_calls(log, extra=()):
    """replay's FUNCTION column."""
    out = run([SFTRACE, "replay", "--no-pager"] + list(extra) + [log]).stdout
    return [line.split("| ", 1)[1] for line in out.splitlines() if not line.startswith("#") and "| " in line]


def calls(log):
    """Every call of a log as a dict (name, tid, args, ret), from dump: an
    ARGS event belongs to the next ENTRY of the same name on its thread (a
    signal handler may run between them) or to the EXIT/TAIL of the
    innermost open frame of that name."""
    out = run([SFTRACE, "dump", log]).stdout
    pend = collections.defaultdict(list)
    open_ = collections.defaultdict(list)
    res = []
    for line in out.splitlines():
        m = CALL_RE.match(line)
        if not m:
            continue
        tid, kind, rest = int(m.group(2)), m.group(3), m.group(4).strip()
        if kind == "ARGS":
            name, _, vals = rest.partition(" ")
            pend[tid].append((name, vals))
        elif kind == "ENTRY":
            a = next((x for x in reversed(pend[tid]) if x[0] == rest), None)
            if a:
                pend[tid].remove(a)
            d = {"name": rest, "tid": tid, "args": a[1] if a else None, "ret": None}
            open_[tid].append(d)
            res.append(d)
        else:
            top = open_[tid][-1] if open_[tid] else None
            a = next((x for x in reversed(pend[tid]) if top and x[0] == top["name"]), None)
            if a:
                pend[tid].remove(a)
            if top:
                open_[tid].pop()
                if a:
                    top["ret"] = a[1]
    return res


def num(text):
    return int(text, 0)


# ---------------------------------------------------------------- -O2 shapes

TAIL_SPECS = ["-A", "top@arg1", "-R", "top@retval", "-A", "mid@arg1", "-R", "mid@retval", "-A", "leaf@arg1",
              "-R", "leaf@retval", "-A", "pick@arg1", "-R", "pick@retval", "-A", "fact@arg1", "-R", "fact@retval",
              "-A", "eight@arg1,arg2,arg3,arg4,arg5,arg6", "-R", "eight@retval", "-A", "vsum@arg1/s,arg2,arg3,arg4,arg5",
              "-R", "vsum@retval", "-A", "jumper@arg1", "-R", "jumper@retval", "-A", "catcher@arg1",
              "-R", "catcher@retval", "-A", "mixf@arg1/i32,fparg1,arg2,fparg2/f32", "-R", "mixf@retval/f",
              "-A", "mkbig@arg2", "-R", "mkbig@retval/x"]


def tail_fixture():
    return build_c("skep29t_tail", ["skep29t_tail.c"])


def test_o2_tail_calls_stack_args_varargs_longjmp_by_spec():
    """skep29t_tail.c at -O2: top(4) jmps to mid(8), which jmps to leaf(9)
    (= 28); pick(3) tail-calls leaf(3) (= 10), pick(4) returns 400; fact
    is a loop; eight(1..8); vsum("abc", 3, 10, 20, 30) = 63; catcher(5)'s
    jumper(5) is left by longjmp; mixf(2, 0.5, 3, 0.25f) = 5.75. Untraced
    it prints "3638075 5.750000". Traced with -A/-R on each: the same
    output, and each value as passed, the tail-calling frames
    `= <tail call>` and the leaf's value marked as theirs, the abandoned
    jumper(5) with no value, and mkbig's arg2 the 40 (arg1 is the sret
    pointer, as uftrace reads registers); integers past +-100000 in hex,
    as uftrace's default format prints them (fact(10) = 0x375f00)."""
    exe = tail_fixture()
    eq(run([exe]).stdout, "3638075 5.750000\n", "untraced")
    p, log = record([exe], args=["-q"] + TAIL_SPECS)
    eq(p.stdout, "3638075 5.750000\n", "traced output")
    got = [re.sub(r"0x7ff[0-9a-f]+", "STACK", c) for c in replay_calls(log)]
    eq(got, ["main() {",
             "  top(4) = <tail call>;",
             "  mid(8) = <tail call>; /* tail call from top */",
             "  leaf(9) = 28; /* tail call from mid */",
             "  pick(3) = <tail call>;",
             "  leaf(3) = 10; /* tail call from pick */",
             "  pick(4) = 400;",
             "  fact(10) = 0x375f00;",
             "  eight(1, 2, 3, 4, 5, 6) = 8721;",
             "  mkbig(40) = STACK;",
             "  vsum(\"abc\", 3, 10, 20, 30) = 63;",
             "  catcher(1) {",
             "    jumper(1) = 1;",
             "  } = 11; /* catcher */",
             "  catcher(5) {",
             "    jumper(5);",
             "    /* 1 frame unwound */",
             "  } = -1; /* catcher */",
             "  mixf(2, 0.500000, 3, 0.250000) = 5.750000;",
             "} /* main */"], "replay")


def test_o2_shapes_auto_args():
    """The same program with --auto-args: the 7th and 8th (stack)
    arguments show <unrecorded>, vsum shows its two named parameters only,
    mkbig (32-byte sret) its x = 40 and no return value, and the tail-call
    pairing is the spec's."""
    exe = tail_fixture()
    p, log = record([exe], args=["-q", "-a"])
    eq(p.stdout, "3638075 5.750000\n", "traced output")
    got = replay_calls(log)[1:-1]
    eq(got, ["  top(4) = <tail call>;",
             "  mid(8) = <tail call>; /* tail call from top */",
             "  leaf(9) = 28; /* tail call from mid */",
             "  pick(3) = <tail call>;",
             "  leaf(3) = 10; /* tail call from pick */",
             "  pick(4) = 400;",
             "  fact(10) = 3628800;",
             "  eight(1, 2, 3, 4, 5, 6, <unrecorded>, <unrecorded>) = 8721;",
             "  mkbig(40);",
             "  vsum(\"abc\", 3) = 63;",
             "  catcher(1) {",
             "    jumper(1) = 1;",
             "  } = 11; /* catcher */",
             "  catcher(5) {",
             "    jumper(5);",
             "    /* 1 frame unwound */",
             "  } = -1; /* catcher */",
             "  mixf(2, 0.500000, 3, 0.250000) = 5.750000;"], "replay")


# ------------------------------------------------------------------ strings

def test_string_budget_escapes_and_16mb_string():
    """skep29t_str.c passes two(s64, ""), two(s65, "x"), two(40 c's, 40
    d's), two("", ""), two(escapes, bytes), two(16 MB, 16 MB), ch() at
    0/255/-128 and ints() at the 64-bit extremes; untraced it prints
    33555119. By spec the two strings of a call share 64 bytes (the second
    shows cut, `""...`, once the first used them); with --auto-args each
    string gets 16 bytes. The output is unchanged either way."""
    exe = build_c("skep29t_str", ["skep29t_str.c"])
    eq(run([exe]).stdout, "33555119\n", "untraced")
    p, log = record([exe], args=["-q", "-A", "two@arg1/s,arg2/s", "-R", "two@retval/u",
                                 "-A", "ch@arg1/c,arg2/c,arg3/c", "-R", "ch@retval",
                                 "-A", "ints@arg1/i,arg2/x,arg3/u", "-R", "ints@retval/i8"])
    eq(p.stdout, "33555119\n", "traced output")
    a64, b64, c40, d24, z64 = "a" * 64, "b" * 64, "c" * 40, "d" * 24, "z" * 64
    eq(replay_calls(log)[1:-1], [
        f'  two("{a64}"..., ""...) = 64;',
        f'  two("{b64}"..., ""...) = 66;',
        f'  two("{c40}", "{d24}"...) = 80;',
        '  two("", "") = 0;',
        '  two("tab\\there\\nnl\\"q\\\\", "\\x01\\x7f\\xff\u00e9") = 19;',
        f'  two("{z64}"..., ""...) = 33554430;',
        "  ch('\\x00', '\\xff', '\\x80') = 127;",
        "  ch('\\x0a', '\\x00', '\\x7f') = 137;",
        "  ch('\\x27', 'A', '\\x5c') = 196;",
        "  ints(-1, 0x8000000000000000, 9223372036854775807) = 0;"], "replay by spec")
    p, log = record([exe], args=["-q", "-a"])
    eq(p.stdout, "33555119\n", "traced output (-a)")
    a, b, c, d, z = "a" * 16, "b" * 16, "c" * 16, "d" * 16, "z" * 16
    eq(replay_calls(log)[1:-1], [
        f'  two("{a}"..., "") = 64;',
        f'  two("{b}"..., "x") = 66;',
        f'  two("{c}"..., "{d}"...) = 80;',
        '  two("", "") = 0;',
        '  two("tab\\there\\nnl\\"q\\\\", "\\x01\\x7f\\xff\u00e9") = 19;',
        f'  two("{z}"..., "{z}"...) = 33554430;',
        "  ch('\\x00', '\\xff', '\\x80') = 127;",
        "  ch('\\x0a', '\\x00', '\\x7f') = 137;",
        "  ch('\\x27', 'A', '\\x5c') = 196;",
        "  ints(-1, -9223372036854775808, 9223372036854775807) = 0;"], "replay -a")


def test_string_behind_pages_another_thread_flips():
    """skep29t_flip.c: look(p, i) 200,000 times with p 8..23 bytes before
    the end of the first of two pages that another thread switches between
    PROT_READ (filled with one letter, 'q'..'x') and PROT_NONE; they are
    made readable before the first fill, so a read then sees "" (CI saw
    two, i = 74 and 75). Untraced it
    prints 20000100000 (look never reads p). Traced with -A look@arg1/s:
    the same, exit 0, 200,000 values each <unreadable> or letters q-x
    (cut at 64 bytes; a read racing the other thread's memset may mix two
    letters, as the memory did), and every retval i + 1."""
    exe = build_c("skep29t_flip", ["skep29t_flip.c"], libs=["-lpthread"])
    eq(run([exe]).stdout, "20000100000\n", "untraced")
    for _ in range(3):
        p, log = record([exe], args=["-q", "-A", "look@arg1/s,arg2", "-R", "look@retval"])
        eq(p.stdout, "20000100000\n", "traced output")
        cs = [c for c in calls(log) if c["name"] == "look"]
        eq(len(cs), 200000, "look calls")
        bad = []
        for c in cs:
            # "": the first fill, read before memset reached p (the
            # pages start zeroed and turn readable before they are filled).
            m = re.match(r'arg1=(<unreadable>|""|"[q-x]+"(\.\.\.)?) arg2=(\w+)$', c["args"] or "")
            if not m or c["ret"] is None or num(c["ret"].split("=")[1]) != num(m.group(3)) + 1:
                bad.append(c)
        eq(bad[:3], [], f"values not as passed ({len(bad)} of 200,000)")


# ------------------------------------------------- threads, signals, fork

def mt_fixture():
    return build_c("skep29t_mt", ["skep29t_mt.c"], libs=["-lpthread"])


def check_work(log, want_seqs):
    """Every work(t, i, tag) call's values against the program's: retval
    t*1e6 + i + tag[0], i consecutive per thread from 0; every inh(v)
    = v + 7. Returns the calls."""
    cs = calls(log)
    seq = {}
    bad = []
    for c in cs:
        if c["name"] == "work":
            m = re.match(r'arg1=(\w+) arg2=(\w+) arg3="(\w+)"$', c["args"] or "")
            if not m or c["ret"] is None:
                bad.append(c)
                continue
            t, i, tag = num(m.group(1)), num(m.group(2)), m.group(3)
            if num(c["ret"].split("=")[1]) != t * 1000000 + i + ord(tag[0]) or seq.get((c["tid"], tag), -1) + 1 != i:
                bad.append(c)
            seq[(c["tid"], tag)] = i
        elif c["name"] == "inh":
            m = re.match(r"arg1=(\w+)$", c["args"] or "")
            if not m or c["ret"] != f"retval={num(m.group(1)) + 7}":
                bad.append(c)
    eq(bad[:3], [], f"calls with values other than the program's ({len(bad)})")
    eq(sorted((tag, n + 1) for (_, tag), n in seq.items()), want_seqs, "calls per thread")
    return cs


def check_mt_logs(d, with_inh=False):
    """Both logs of skep29t_mt (the parent's 170,000 work calls, the fork
    child's 5,000) against the program's values; query's args sums."""
    per = {}
    for name in os.listdir(d):
        if name.endswith(".log"):
            per[name] = sum(1 for c in calls(os.path.join(d, name)) if c["name"] == "work")
    eq(sorted(per.values()), [5000, 170000], "work calls per log")
    for name, n in per.items():
        path = os.path.join(d, name)
        if n == 5000:
            check_work(path, [("child", 5000)])
            continue
        cs = check_work(path, [("T1", 20000), ("T2", 20000), ("T3", 20000), ("T4", 20000), ("T5", 20000),
                               ("T6", 20000), ("main", 50000)])
        if with_inh:
            check(any(c["name"] == "inh" for c in cs), "no handler call recorded")
        q = run([SFTRACE, "query", "--format", "tsv", path,
                 "select a.name, a.value from args a join frames f using (frame_id) where f.name = 'work'"]).stdout
        sums = collections.Counter()
        for line in q.splitlines()[1:]:
            k, v = line.split("\t")
            if k != "arg3":
                sums[k] += num(v)
        eq(dict(sums), {"arg1": 6 * 20000 * 7 // 2, "arg2": 6 * 199990000 + 1249975000,
                        "retval": 421210020000 + 1255425000}, "query sums")


MT_SPECS = ["-A", "work@arg1,arg2,arg3/s", "-R", "work@retval", "-A", "inh@arg1", "-R", "inh@retval"]
MT_OUT = ["child 495012992500", "main 1255425000 threads 421210020000"]


def test_threads_and_fork_child_values():
    """skep29t_mt.c (no timer): 6 threads x 20,000 work(t, i, "Tt"), main
    50,000, a fork child 5,000. Untraced: "child 495012992500", "main
    1255425000 threads 421210020000". Traced with -A/-R: the same lines,
    every call's three arguments and return value those the program
    computed, in both logs; query's args table gives the same sums."""
    exe = mt_fixture()
    eq(sorted(run([exe]).stdout.splitlines()), MT_OUT, "untraced")
    d = tmpdir()
    p, _ = record([exe], out=os.path.join(d, "sf.log"), args=["-q"] + MT_SPECS)
    eq(sorted(p.stdout.splitlines()), MT_OUT, "output")
    check_mt_logs(d)


def test_signal_handler_on_exiting_threads():
    """skep29t_sigexit.c: 20 waves of 8 threads, each 2,000 work(t, i)
    calls, while a 50 us SIGALRM handler calls inh(); untraced prints
    1439840000, exit 0, every run. Traced up to 4 times with -A/-R on
    both (each run in its own session, killed after 60 s; the case stops
    at the first bad run), and skep29t_mt.c with its timer twice: each exits 0 with the untraced output, and every
    work/inh value is the program's (handler calls included)."""
    exe = build_c("skep29t_sigexit", ["skep29t_sigexit.c"], libs=["-lpthread"])
    for _ in range(3):
        eq(run([exe]).stdout, "1439840000\n", "untraced")
    for i in range(4):
        log = os.path.join(tmpdir(), "sf.log")
        rc, out, err = sfkit.run_group([SFTRACE, "record", "-q", "-o", log, "-A", "work@arg1,arg2", "-R",
                                        "work@retval", "-A", "inh@arg1", "-R", "inh@retval", "--", exe], timeout=60)
        eq((rc, out), (0, "1439840000\n"), f"skep29t_sigexit traced, run {i + 1} ({err[-200:]!r})")
        if rc == 0:
            for c in calls(log):
                if c["name"] == "work":
                    m = re.match(r"arg1=(\w+) arg2=(\w+)$", c["args"] or "")
                    check(m and c["ret"] and num(c["ret"].split("=")[1]) == num(m.group(1)) * 1000 + num(m.group(2)),
                          f"work values {c}")
    mt = mt_fixture()
    for _ in range(2):
        d = tmpdir()
        rc, out, err = sfkit.run_group([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log")] + MT_SPECS +
                                       ["--", mt, "sig"], timeout=120)
        eq((rc, sorted(out.splitlines())), (0, MT_OUT), f"skep29t_mt with its timer ({err[-300:]!r})")
        check_mt_logs(d, with_inh=True)


def test_code_after_the_thread_exit_hook():
    """skep29t_dtorexit.c (deterministic): a key destructor of the
    program's re-arms itself and calls work() in each of glibc's 4
    destructor rounds, after the runtime's exit hook in each (a signal
    handler can run there too, after the last round: the case above). 4
    threads, two of them with a 64 MiB stack that glibc unmaps at the join.
    Was SIGSEGV every run (the thread stayed on the runtime's thread list
    with its memory gone). Traced plainly, with -A/-R, with the writer
    thread and with --ring: exit 0 and the untraced line; each log holds
    all 20 work() calls (4 from the threads, 16 from the destructors)."""
    exe = build_c("skep29t_dtorexit", ["skep29t_dtorexit.c"], libs=["-lpthread"])
    eq(run([exe]).stdout, "dtor 16 sum 40\n", "untraced")
    for extra in ([], ["-A", "work@arg1", "-R", "work@retval"], ["--writer", "thread"], ["--writer", "sync"]):
        log = os.path.join(tmpdir(), "sf.log")
        rc, out, err = sfkit.run_group([SFTRACE, "record", "-q", "-o", log] + extra + ["--", exe], timeout=120)
        eq((rc, out), (0, "dtor 16 sum 40\n"), f"traced {extra} ({err[-200:]!r})")
        cs = [c for c in calls(log) if c["name"] == "work"]
        eq(len(cs), 20, f"work calls {extra}")
        if extra[:1] == ["-A"]:
            eq(sorted(c["args"] for c in cs), sorted([f"arg1={t}" for t in range(1, 5)] * 5), "work args")
    d = tmpdir()
    rc, out, err = sfkit.run_group([SFTRACE, "record", "-q", "--ring", "128K", "-o", os.path.join(d, "sf.log"),
                                    "--", exe], timeout=120)
    eq((rc, out), (0, "dtor 16 sum 40\n"), f"traced --ring ({err[-200:]!r})")


def test_filter_and_ring_with_specs():
    """skep29t_mt (no timer) with -r '^work$' (inh is named but not
    recorded: no inh call, no stray value) and with --ring 128K (the kept
    calls' values exact, each thread's window consecutive)."""
    exe = mt_fixture()
    d = tmpdir()
    p, _ = record([exe], out=os.path.join(d, "sf.log"),
                  args=["-q", "-r", "^work$", "-A", "work@arg1,arg2,arg3/s", "-R", "work@retval", "-A", "inh@arg1"])
    for name in os.listdir(d):
        if name.endswith(".log"):
            cs = calls(os.path.join(d, name))
            eq({c["name"] for c in cs}, {"work"}, "recorded functions")
            n = len(cs)
            check_work(os.path.join(d, name), [("child", 5000)] if n == 5000 else
                       [("T1", 20000), ("T2", 20000), ("T3", 20000), ("T4", 20000), ("T5", 20000), ("T6", 20000),
                        ("main", 50000)])
    d = tmpdir()
    record([exe], out=os.path.join(d, "sf.log"),
           args=["-q", "--ring", "128K", "-A", "work@arg1,arg2,arg3/s", "-R", "work@retval", "-A", "inh@arg1", "-R",
                 "inh@retval"])
    for name in os.listdir(d):
        if not name.endswith(".log"):
            continue
        cs = calls(os.path.join(d, name))
        seq = {}
        bad = []
        for c in cs:
            if c["name"] != "work" or c["args"] is None:
                continue  # the ring's oldest kept event may be a frame's exit
            m = re.match(r'arg1=(\w+) arg2=(\w+) arg3="(\w+)"$', c["args"])
            t, i, tag = num(m.group(1)), num(m.group(2)), m.group(3)
            if c["ret"] is not None and num(c["ret"].split("=")[1]) != t * 1000000 + i + ord(tag[0]):
                bad.append(c)
            if (c["tid"], tag) in seq and seq[(c["tid"], tag)] + 1 != i:
                bad.append(c)
            seq[(c["tid"], tag)] = i
        eq(bad[:3], [], f"{name}: values ({len(bad)})")
        check(seq, f"{name}: no work call kept")


# ------------------------------------------- processes: exec, clone, pidns

def test_exec_empty_environment_clearenv_and_dlopen():
    """skep29t_exec.c: step(i, "top") x3, then two re-executions of itself
    (execve with envp {NULL}; clearenv() then execv), each step(i + 10k,
    "exec'd") x3, then libstep(5, "lib") from a dlopen'd library named by
    a regex. Untraced: "1 84", "2 144", "0 320". Traced: the same lines;
    three logs, each with its values."""
    lib = build_c("libskep29t_lib.so", ["skep29t_lib.c"], shared=True)
    exe = build_c("skep29t_exec", ["skep29t_exec.c"], libs=["-ldl"])
    eq(run([exe, "0", lib]).stdout, "1 84\n2 144\n0 320\n", "untraced")
    d = tmpdir()
    p, log = record([exe, "0", lib], out=os.path.join(d, "sf.log"),
                    args=["-q", "-A", "step@arg1,arg2/s", "-R", "step@retval", "-A", ".*step@arg1,arg2/s",
                          "-R", "lib.*@retval"])
    eq(p.stdout, "1 84\n2 144\n0 320\n", "traced")
    got = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            got.append([c for c in replay_calls(os.path.join(d, name)) if "step" in c])
    eq(sorted(got), sorted([
        ['  step(0, "top") = 3;', '  step(1, "top") = 5;', '  step(2, "top") = 7;', '  libstep(5, "lib") = 305;'],
        ['  step(10, "exec\'d") = 26;', '  step(11, "exec\'d") = 28;', '  step(12, "exec\'d") = 30;'],
        ['  step(20, "exec\'d") = 46;', '  step(21, "exec\'d") = 48;', '  step(22, "exec\'d") = 50;']]), "replays")


def test_raw_clone_child_and_pid_namespace_read_their_own_strings():
    """skep29t_clone.c: a child made by syscall(SYS_clone, SIGCHLD) (glibc's
    fork handlers do not run) or by fork after unshare(CLONE_NEWPID)
    rewrites its copy of a heap string ("parent-text" -> "child-text")
    and calls look(buf, 1..3); the parent, which keeps "parent-text",
    waits. Untraced: "child 36", "parent 31". Traced: the child's values
    are its own string, not the parent's (read from its own memory)."""
    exe = build_c("skep29t_clone", ["skep29t_clone.c"])
    for mode in ("0", "1"):
        if mode == "1" and os.geteuid() != 0:
            continue
        d = tmpdir()
        p, _ = record([exe, mode], out=os.path.join(d, "sf.log"),
                      args=["-q", "-A", "look@arg1/s,arg2", "-R", "look@retval"])
        eq(sorted(p.stdout.splitlines()), ["child 36", "parent 31"], "output")
        got = sorted(tuple(c.strip() for c in replay_calls(os.path.join(d, n)) if "look" in c)
                     for n in os.listdir(d) if n.endswith(".log"))
        eq(got, [('look("child-text", 1) = 11;', 'look("child-text", 2) = 12;', 'look("child-text", 3) = 13;'),
                 ('look("parent-text", 0) = 11;', 'look("parent-text", 9) = 20;')], f"mode {mode}")


def test_misaligned_stack_named_calls():
    """skep29t_misalign.c: 300,000 calls each of plain(i, 3) and named(i,
    5) through a stub that misaligns the stack by 8. Untraced prints
    359999700000. Traced with -A/-R on named, with --auto-args, and with
    --writer sync (the batch hand-off on the program's thread, on that
    stack): the same, and named's values i, 5, 5i + 2 for every call."""
    exe = build_c("skep29t_misalign", ["skep29t_misalign.c"])
    eq(run([exe]).stdout, "359999700000\n", "untraced")
    for extra in (["-A", "named@arg1,arg2", "-R", "named@retval"], ["-a"], ["--writer", "sync", "-a"]):
        p, log = record([exe], args=["-q"] + extra)
        eq(p.stdout, "359999700000\n", f"traced {extra}")
        n = 0
        bad = 0
        for c in calls(log):
            if c["name"] == "named":
                m = re.match(r"arg1=(\w+) arg2=5$", c["args"] or "")
                if not m or c["ret"] is None or num(c["ret"].split("=")[1]) != 5 * num(m.group(1)) + 2 \
                        or num(m.group(1)) != n:
                    bad += 1
                n += 1
        eq((n, bad), (300000, 0), f"named calls, bad values ({extra})")


# ---------------------------------------------------------------- C++, Rust

def test_cxx_templates_overloads_exceptions():
    """skep29t_cxx.cc: twice<long>(21), twice<double>(1.25), twice<int>(-4),
    over(5L), over(6L, 7L), over(9.0), Acc{100}.add(5), guard(1..4) where
    thrower(3) throws, cstr(s). Untraced prints 296. Traced with specs
    naming each overload and template instance by signature: 296, and
    each value; thrower(3)'s frame unwound with no value."""
    exe = build_c("skep29t_cxx", ["skep29t_cxx.cc"], compiler="clang++")
    eq(run([exe]).stdout, "296\n", "untraced")
    specs = ["-A", "ns::twice<long>(long)@arg1", "-R", "ns::twice<long>@retval", "-A", "ns::twice<double>@fparg1",
             "-R", "ns::twice<double>(double)@retval/f", "-A", "ns::over(long, long)@arg1,arg2",
             "-R", "ns::over(long,long)@retval", "-A", "ns::over(double)@fparg1", "-R", "ns::over(double)@retval/f",
             "-A", "ns::over(long)@arg1", "-A", "ns::Acc::add@arg2", "-R", "ns::Acc::add(long) const@retval",
             "-A", "thrower@arg1", "-R", "thrower@retval", "-A", "guard@arg1", "-R", "guard@retval",
             "-A", "cstr@arg1/p", "-R", "cstr@retval/s", "-A", "ns::twice<int>@arg1/i32",
             "-R", "ns::twice<int>@retval/i32"]
    p, log = record([exe], args=["-q"] + specs)
    eq(p.stdout, "296\n", "traced")
    got = [re.sub(r"0x7ff[0-9a-f]+", "STACK", c) for c in replay_calls(log)
           if re.match(r"\s*(ns::|guard|thrower|cstr|}|/\*)", c)]
    eq(got, ["  ns::twice<…>(21) = 42;", "  ns::twice<…>(1.250000) = 2.500000;", "  ns::twice<…>(-4) = -8;",
             "  ns::over(5);", "  ns::over(6, 7) = 42;", "  ns::over(9.000000) = 4.500000;",
             "  ns::Acc::add(5) = 105;",
             "  guard(1) {", "    thrower(1) = 10;", "  } = 10; /* guard */",
             "  guard(2) {", "    thrower(2) = 20;", "  } = 20; /* guard */",
             "  guard(3) {", "    thrower(3);", "    /* 1 frame unwound */", "  } = -3; /* guard */",
             "  guard(4) {", "    thrower(4) = 40;", "  } = 40; /* guard */",
             '  cstr(STACK) = "a std::string longer than sso buffer";', "} /* main */"], "replay")


def test_rust_auto_args_claimed_kinds():
    """skep29t_rust.rs (rustc -O -g): paint(Color::Green=200 as repr(u8),
    Sign::Neg=-5 as repr(i32)) = -1000, flag(true, 'é', -3, 70) = 'é',
    bytes(b"\\x01\\x02\\x03") = 6, fl(1.5, 2.0f32, -1) = 2.0, emoji(a
    UTF-8 string) cut at 16 bytes. Untraced: "18446744073709550979 ABC".
    Traced with --auto-args: the same, and those values."""
    if not (shutil.which("rustc") or os.path.exists(os.path.expanduser("~/.cargo/bin/rustc"))):
        raise sfkit.Skip("no rustc")
    exe = rust_fixture("skep29t_rust")
    eq(run([exe]).stdout, "18446744073709550979 ABC\n", "untraced")
    p, log = record([exe], args=["-q", "-a"])
    eq(p.stdout, "18446744073709550979 ABC\n", "traced")
    got = [c.strip() for c in replay_calls(log) if re.search(r"skep29t_rust::(paint|flag|bytes|fl|emoji|shout)\(", c)]
    eq(got, ['skep29t_rust::shout("abc");', "skep29t_rust::paint(200, -5) = -1000;",
             "skep29t_rust::paint(1, 5) = 5;", "skep29t_rust::paint(7, 5) = 35;",
             "skep29t_rust::flag(true, '\\u{e9}', -3, 70) = '\\u{e9}';", 'skep29t_rust::bytes("\\x01\\x02\\x03") = 6;',
             "skep29t_rust::fl(1.500000, 2.000000, -1) = 2.000000;",
             'skep29t_rust::emoji("h\u00e9llo\u2192\U0001f980 an"...) = <tail call>;'], "replay")


# -------------------------------------------------------------- bad specs

BAD_SPECS = {
    ("-A", "two"): "expected FUNC@",
    ("-A", "two@"): "nothing after '@'",
    ("-A", "@arg1"): "no FUNC",
    ("-A", "two@arg0"): "arg1-arg6",
    ("-A", "two@arg7"): "arg1-arg6",
    ("-A", "two@arg99999999999999999999"): "arg1-arg6",
    ("-A", "two@fparg9"): "fparg1-fparg8",
    ("-A", "two@arg1/z"): "unknown format",
    ("-A", "two@arg1/i7"): "unknown format",
    ("-A", "two@arg1/"): "empty format",
    ("-A", "two@arg1,,arg2"): "empty item",
    ("-A", "two@retval"): "-R",
    ("-R", "two@arg1"): "-A",
    ("-A", "two@fparg1/i"): "f, f32 or f64",
    ("-A", "two@arg6/S"): "no next",
    ("-A", "two@0x1"): "unknown item",
    ("-A", "(two@arg1"): "",
    ("-A", "two[@arg1"): "",
}


def test_bad_specs_one_line_each():
    """Each malformed -A/-R: exit 2 before the program runs (it would
    print), no log, one line on stderr quoting the spec and saying what is
    wrong."""
    exe = build_c("skep29t_str", ["skep29t_str.c"])
    d = tmpdir()
    specs = []
    for (opt, spec) in BAD_SPECS:
        specs.append(dict(cmd=[SFTRACE, "record", "-q", "-o", os.path.join(d, "x.log"), opt, spec, "--", exe],
                          check_rc=None))
    for ((opt, spec), why), p in zip(BAD_SPECS.items(), run_each(specs)):
        eq(p.returncode, 2, f"{opt} {spec!r} status")
        eq(p.stdout, "", f"{opt} {spec!r}: the program ran")
        lines = p.stderr.splitlines()
        eq(len(lines), 1, f"{opt} {spec!r} stderr {p.stderr!r}")
        check(f"'{spec}'" in lines[0] and why in lines[0], f"{opt} {spec!r}: {lines[0]!r}")
    eq(os.listdir(d), [], "logs")


# ------------------------------------------------------------------- cost

def test_unnamed_function_costs_the_same_callgrind():
    """skep29t_cost.c: loop(n) calls other() n times between named(1, 2)
    and named(3, 4). callgrind, collecting inside loop() only (so the
    sleds of other() and its trampolines), the difference of n = 10,000
    and 30,000: instructions per other() call traced without -A, and with
    -A/-R naming named(). The claim: the same (the args path only on
    named functions)."""
    if not shutil.which("valgrind"):
        raise sfkit.Skip("no valgrind")
    exe = build_c("skep29t_cost", ["skep29t_cost.c"])
    # valgrind cannot run an ASan-built record (CI's SFTRACE): the plain
    # build's, which CI makes too, where there is one
    plain = os.path.join(sfkit.ROOT, "build", "sftrace")
    cli = plain if os.path.exists(plain) else SFTRACE
    d = tmpdir()
    per = []
    for spec in ([], ["-A", "named@arg1,arg2", "-R", "named@retval"]):
        tot = []
        for n in (10000, 30000):
            cg = os.path.join(d, "cg")
            shutil.rmtree(cg, ignore_errors=True)
            os.makedirs(cg)
            # the writer thread by name (sfkit.CG_WRITER): auto hands off
            # on the measured thread under valgrind
            run(["valgrind", "--tool=callgrind", "--trace-children=yes", "--trace-children-skip=*/sftrace",
                 "--toggle-collect=loop", f"--callgrind-out-file={cg}/cg.%p", cli, "record", "-q", "--force",
                 "-o", os.path.join(d, "sf.log")] + sfkit.CG_WRITER + spec + ["--", exe, str(n)], timeout=600)
            t = None
            for f in os.listdir(cg):
                text = open(os.path.join(cg, f)).read()
                if re.search(r"^cmd: *\S*skep29t_cost ", text, re.M):
                    t = int(re.search(r"^totals: (\d+)", text, re.M).group(1))
            check(t is not None, "no callgrind output for the program")
            tot.append(t)
        per.append((tot[1] - tot[0]) / 20000)
    check(abs(per[1] - per[0]) < 0.5, f"instructions an other() call: plain {per[0]:.2f}, with -A on named {per[1]:.2f}")


# ------------------------------------------------------------- split DWARF

def split_build(d, dwarf, cc="clang"):
    """skep29t_dwarf.c built with CC -O2 -g DWARF -gsplit-dwarf to an
    object in d (its .dwo beside it), linked with clang's XRay runtime:
    (exe, .dwo path)."""
    tag = f"{cc}{dwarf}"
    obj = os.path.join(d, f"skep29t_dwarf{tag}.o")
    exe = os.path.join(d, f"skep29t_dwarf{tag}")
    run([cc, "-O2", "-g", dwarf, "-gsplit-dwarf", "-fxray-instrument", "-fxray-instruction-threshold=1",
         "-c", "-o", obj, os.path.join(FIXTURES, "skep29t_dwarf.c")], cwd=d)
    run(["clang", "-fxray-instrument", "-o", exe, obj], cwd=d)
    dwo = [f for f in os.listdir(d) if f.endswith(".dwo") and tag in f]
    eq(len(dwo), 1, f"the .dwo of {tag} ({os.listdir(d)})")
    return exe, os.path.join(d, dwo[0])


SPLIT_WANT = ["add(3, 4) = 7;", "scale(1.500000, 4) = 6.000000;", "norm({1, 2}, 5) = 15;"]


def split_calls(log):
    return [c.strip() for c in replay_calls(log) if re.match(r"\s*(add|scale|norm)\(", c)]


def test_auto_args_split_dwarf():
    """skep29t_dwarf.c compiled with -g -gsplit-dwarf to an object (its
    skep29t_dwarf.dwo beside it, named in the skeleton unit), then linked.
    Untraced: "7 world 6.000000 15". --auto-args shows add(3, 4) = 7 and
    scale(1.500000, 4) = 6.000000 as with plain -g, for DWARF 5's
    skeleton units and DWARF 4's GNU ones: the readers follow each
    skeleton to its split unit in the .dwo (dwarf_get_units). Was: add();
    scale(); and, -gdwarf-5, 'has no DWARF'. --srcline finds main's
    declaration line (9: its DIE is in the .dwo), not the line table's."""
    d = tmpdir()
    for dwarf in ("-gdwarf-5", "-gdwarf-4"):
        exe, _ = split_build(d, dwarf)
        eq(run([exe]).stdout, "7 world 6.000000 15\n", "untraced")
        p, log = record([exe], args=["-q", "-a"], env=dict(os.environ, SFTRACE_ARGS_CACHE="0"))
        eq(p.stdout, "7 world 6.000000 15\n", "traced")
        check("DWARF" not in p.stderr, f"{dwarf}: a warning: {p.stderr!r}")
        eq(split_calls(log), SPLIT_WANT, f"replay {dwarf}")
        mains = [c for c in replay_calls(log, ["--srcline"]) if c.startswith("main()")]
        eq([os.path.basename(m.group(1)) for m in map(re.compile(r"/\* (\S+) \*/").search, mains) if m],
           ["skep29t_dwarf.c:9"], f"{dwarf}: main's source line")


def test_auto_args_split_dwarf_missing_dwo_and_cache():
    """The .dwo moved away: one warning line naming it, the calls still
    recorded, without values; nothing kept in the cache for it. Back in
    place: the values; the answer is kept (one cache file), a second run
    reads it (still one file, same values); the .dwo touched (its mtime)
    is another key (a second file), as is the object's own change."""
    d = tmpdir()
    exe, dwo = split_build(d, "-gdwarf-5")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "cache"))
    cache = os.path.join(d, "cache", "sftrace")

    def entries():
        return sorted(f for f in os.listdir(cache) if f.startswith("args-")) if os.path.isdir(cache) else []

    os.rename(dwo, dwo + ".away")
    p, log = record([exe], args=["-q", "-a"], env=env)
    eq(p.stdout, "7 world 6.000000 15\n", "traced without the .dwo")
    warn = [ln for ln in p.stderr.splitlines() if "auto-args" in ln]
    eq(len(warn), 1, f"one line: {p.stderr!r}")
    check(dwo in warn[0] and "not found" in warn[0], warn[0])
    eq(split_calls(log), ["add();", "scale();", "norm();"], "calls without values")
    eq(entries(), [], "nothing cached without the .dwo")
    os.rename(dwo + ".away", dwo)
    for n in (1, 1):
        p, log = record([exe], args=["-q", "-a"], env=env)
        eq(p.stderr, "", "no warning")
        eq(split_calls(log), SPLIT_WANT, "with the .dwo")
        eq(len(entries()), n, f"cache files {entries()}")
    st = os.stat(dwo)
    os.utime(dwo, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    p, log = record([exe], args=["-q", "-a"], env=env)
    eq(split_calls(log), SPLIT_WANT, "after touching the .dwo")
    eq(len(entries()), 2, f"a touched .dwo is another key: {entries()}")


def test_auto_args_split_dwarf_gcc():
    """gcc -gsplit-dwarf's skeletons (gcc makes no XRay sleds: its
    functions are not recorded): a clang-built main with the XRay sleds
    and a gcc-built gadd() in another object, both split; --auto-args
    reads the clang unit's .dwo beside gcc's without a warning."""
    if not shutil.which("gcc"):
        raise sfkit.Skip("no gcc")
    d = tmpdir()
    for dwarf in ("-gdwarf-5", "-gdwarf-4"):
        src = os.path.join(d, "gpart.c")
        with open(src, "w") as f:
            f.write("int gadd(int a, int b) { return a * b; }\n")
        gobj = os.path.join(d, f"gpart{dwarf}.o")
        run(["gcc", "-O2", "-g", dwarf, "-gsplit-dwarf", "-c", "-o", gobj, src], cwd=d)
        check(os.path.exists(os.path.join(d, f"gpart{dwarf}.dwo")), f"gcc's .dwo {os.listdir(d)}")
        obj = os.path.join(d, f"skep29t_dwarf{dwarf}.o")
        run(["clang", "-O2", "-g", dwarf, "-gsplit-dwarf", "-fxray-instrument", "-fxray-instruction-threshold=1",
             "-c", "-o", obj, os.path.join(FIXTURES, "skep29t_dwarf.c")], cwd=d)
        exe = os.path.join(d, f"mixed{dwarf}")
        run(["clang", "-fxray-instrument", "-o", exe, obj, gobj], cwd=d)
        p, log = record([exe], args=["-q", "-a"], env=dict(os.environ, SFTRACE_ARGS_CACHE="0"))
        eq(p.stdout, "7 world 6.000000 15\n", "traced")
        eq(p.stderr, "", f"{dwarf}: no warning")
        eq(split_calls(log), SPLIT_WANT, f"replay {dwarf}")


# ---------------------------------------------------------- real software

LUA_MIRROR = "/work/.mirror/lua+lua/repo"


def lua_build():
    src = os.path.join(FIXBUILD, "skep29t_lua")
    exe = os.path.join(src, "lua")
    if os.path.exists(exe):
        return src, exe
    if not os.path.isdir(LUA_MIRROR):
        raise sfkit.Skip("no Lua source (fetch github:lua/lua)")
    shutil.rmtree(src, ignore_errors=True)
    run(["git", "clone", "-q", LUA_MIRROR, src])
    run(["make", "-C", src, "CC=clang", "CFLAGS=-Wall -O2 -std=c99 -DLUA_USE_LINUX -fno-stack-protector "
         "-fno-common -g -fxray-instrument -fxray-instruction-threshold=1", "-j2"], timeout=900)
    return src, exe


def lua_out(text):
    """The suite's files and its verdict (the rest varies with its random
    seeds and timings)."""
    return [ln for ln in text.splitlines() if ln.startswith("***** FILE") or "final OK" in ln]


def test_lua_suite_every_function_named():
    """Lua's own test suite (portable mode) under --ring 4M with -A naming
    every function's 6 integer arguments and first double, -R every
    return value, and luaS_new's string: the suite ends "final OK" as
    untraced, exit 0, the same test files run; the kept luaS_new calls
    show their strings."""
    src, exe = lua_build()
    cwd = os.path.join(src, "testes")
    plain = run([exe, "-e_port=true", "all.lua"], cwd=cwd, timeout=900)
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    p = run([SFTRACE, "record", "-q", "-o", log, "--ring", "4M", "-A", ".*@arg1,arg2,arg3/x,arg4,arg5,arg6,fparg1",
             "-R", ".*@retval", "-A", "luaS_new@arg2/s", "--", exe, "-e_port=true", "all.lua"], cwd=cwd,
            timeout=3600, check_rc=None)
    eq(p.returncode, 0, f"traced suite's status; its output ends {p.stdout[-1500:]!r} {p.stderr[-1500:]!r}")
    check("final OK" in p.stdout, p.stdout[-500:])
    eq(lua_out(p.stdout), lua_out(plain.stdout), "the suite's files and verdict")
    strs = [c for c in replay_calls(log) if re.match(r'\s*luaS_new\(0x[0-9a-f]+, "', c)]
    check(strs, "no luaS_new call with its string in the kept ring")


SQLITE_OBJ = "/work/main/bench/build/sqlite/sqlite3_args_g4.o"
SQLITE_OUT = ("first row-496\nrows 71 sum 8910.50 last rc 101\nbad rc 1: near \"selec\": syntax error\n"
              "exec row 500 3390\n")


def test_sqlite_client_of_our_own():
    """skep29t_sqlite.c, linked with the bench's instrumented SQLite
    amalgamation (bench/build/sqlite, where it was built): 500 prepared
    INSERTs binding "row-i" and i * 0.25, a query calling a user function
    back from SQL, a syntax error, sqlite3_exec with a callback. Untraced
    it prints SQLITE_OUT. Traced with -A/-R on prepare/step/bind/exec and
    the callback, and with --auto-args: the same output; by spec, query's
    args table holds each SQL text the program passed, prepare's 0, 0, 1,
    twice's argc 1 for each of the 71 rows, every "row-i" once, and 71 of
    the user query's steps return 100."""
    obj = SQLITE_OBJ if os.path.exists(SQLITE_OBJ) else os.path.join(sfkit.ROOT, "bench/build/sqlite/sqlite3_args_g4.o")
    if not os.path.exists(obj):
        raise sfkit.Skip("no instrumented SQLite object (bench/args_cost.sh builds it)")
    inc = os.path.join(os.path.dirname(obj), "package/deps/sqlite3")
    exe = build_c("skep29t_sqlite", ["skep29t_sqlite.c"], flags=["-I" + inc], libs=[obj, "-lpthread", "-ldl", "-lm"])
    eq(run([exe, "500"]).stdout, SQLITE_OUT, "untraced")
    p, log = record([exe, "500"], args=["-q", "-A", "sqlite3_prepare_v2@arg2/s,arg3/i32", "-R", "sqlite3_prepare_v2@retval",
                                        "-R", "sqlite3_step@retval", "-A", "sqlite3_bind_text@arg2/i32,arg3/s",
                                        "-A", "sqlite3_bind_double@arg2/i32,fparg1", "-A", "sqlite3_exec@arg2/s",
                                        "-R", "sqlite3_exec@retval", "-A", "twice@arg2/i32"])
    eq(p.stdout, SQLITE_OUT, "traced output")

    def q(sql):
        return [tuple(ln.split("\t")) for ln in run([SFTRACE, "query", "--format", "tsv", log, sql]).stdout.splitlines()[1:]]
    eq(q("select a.name, a.value from args a join frames f using (frame_id) where f.name = 'sqlite3_prepare_v2' "
         "order by f.start_ns, a.\"index\""),
       [("arg2", '"insert into t(name, v) values (?1, ?2)"'), ("arg3", "-1"), ("retval", "0"),
        ("arg2", '"select name, twice(v) from t where id % 7 = 0 order by id desc"'), ("arg3", "-1"), ("retval", "0"),
        ("arg2", '"selec oops from nowhere"'), ("arg3", "-1"), ("retval", "1")], "prepare's values")
    execs = [v for (v,) in q("select a.value from args a join frames f using (frame_id) where f.name = 'sqlite3_exec' "
                             "and a.name = 'arg2' order by f.start_ns")]
    for sql in ('"create table t(id integer primary key, name text, v real)"', '"begin"', '"commit"',
                '"select count(*), sum(length(name)) from t"'):
        check(sql in execs, f"{sql} not among sqlite3_exec's SQL {execs}")
    eq(q("select count(*), min(a.value), max(a.value) from args a join frames f using (frame_id) "
         "where f.name = 'twice' and a.name = 'arg2'"), [("71", "1", "1")], "twice's argc")
    names = [v for (v,) in q("select a.value from args a join frames f using (frame_id) "
                             "where f.name = 'sqlite3_bind_text' and a.name = 'arg3'")]
    eq(sorted(names), sorted(f'"row-{i}"' for i in range(500)), "bound names")
    doubles = [v for (v,) in q("select a.value from args a join frames f using (frame_id) "
                               "where f.name = 'sqlite3_bind_double' and a.name = 'fparg1'")]
    eq(sorted(doubles), sorted("%f" % (i * 0.25) for i in range(500)), "bound doubles")
    steps = dict(q("select a.value, count(*) from args a join frames f using (frame_id) "
                   "where f.name = 'sqlite3_step' and a.name = 'retval' group by 1"))
    check(int(steps.get("100", 0)) >= 71 and int(steps.get("101", 0)) >= 501, f"step values {steps}")
    p, log = record([exe, "500"], args=["-q", "-a"])
    eq(p.stdout, SQLITE_OUT, "traced output (-a)")
    got = [re.sub(r"0x[0-9a-f]{6,}", "PTR", c.strip()) for c in replay_calls(log)
           if re.match(r"\s*sqlite3_(prepare_v2|bind_text)\(", c)]
    eq(got[:3], ['sqlite3_prepare_v2(PTR, "insert into t(na"..., -1, PTR, 0) {',
                 'sqlite3_bind_text(PTR, 1, "row-0", -1, PTR) {',
                 'sqlite3_bind_text(PTR, 1, "row-1", -1, PTR) {'], "replay -a")
    eq(len(got), 503, "prepare and bind_text calls (-a)")


def test_mutual_tail_recursion_100000_deep():
    """skep29t_mutual.c: is_even(100000) and is_odd(7) tail-call each other
    to 0 (at -O2 each call is a jmp); tag() around a vfork. Untraced: "11
    228 3". Traced with -A/-R by regex on both and on tag: the same; each
    of the 100,001 + 8 frames shows its own argument (n, n-1, ..., 0 in
    order) and `<tail call>`, only the last one returns 1; tag's values
    exact; the vfork child's call is not recorded, as documented."""
    exe = build_c("skep29t_mutual", ["skep29t_mutual.c"])
    eq(run([exe]).stdout, "11 228 3\n", "untraced")
    p, log = record([exe], args=["-q", "-A", "is_(even|odd)@arg1", "-R", "is_(even|odd)@retval",
                                 "-A", "tag@arg1,arg2/s", "-R", "tag@retval"])
    eq(p.stdout, "11 228 3\n", "traced")
    lines = replay_calls(log)
    rest = [c.strip() for c in lines if not re.match(
        r"\s*is_(even|odd)\(\w+\) = <tail call>; /\* tail call from is_(even|odd) \*/$", c)]
    eq(rest, ["main() {", "is_even(0x186a0) = <tail call>;", "is_even(0) = 1; /* tail call from is_odd */",
              "is_odd(7) = <tail call>;", "is_even(0) = 1; /* tail call from is_odd */",
              'tag(1, "parent-before") = 113;', 'tag(3, "parent-after") = 115;', "} /* main */"], "replay")
    eq(len(lines) - len(rest), 99999 + 6, "middle frames")
    seq = [num(c["args"].split("=")[1]) for c in calls(log) if c["name"].startswith("is_")]
    eq(seq, list(range(100000, -1, -1)) + list(range(7, -1, -1)), "arguments in order")


ADLER = "/usr/share/cargo/registry/adler-1.0.2/src/lib.rs"


def test_adler_crate_own_tests_auto_args():
    """The adler 1.0.2 crate's own unit tests (Debian's registry copy,
    rustc --test -O -g -Zinstrument-xray=always), 2 test threads. Untraced:
    "test result: ok. 5 passed". Under --auto-args: exit 0 and the same
    lines (timings aside); write_slice's &[u8] shows its first 16 bytes as
    the tests passed them (0x00, 0xff, 0xa5 runs)."""
    rustc = shutil.which("rustc") or os.path.expanduser("~/.cargo/bin/rustc")
    if not os.path.exists(ADLER) or not os.path.exists(rustc):
        raise sfkit.Skip("no adler crate source or rustc")
    exe = os.path.join(FIXBUILD, "skep29t_adler_tests")
    with sfkit._BuildLock(exe):
        if not os.path.exists(exe):
            run([rustc, "--edition", "2015", "--crate-name", "adler", "--test", "-O", "-g", "-Zinstrument-xray=always",
                 ADLER, "-o", exe + ".tmp"], env={"RUSTC_BOOTSTRAP": "1"}, timeout=600)
            os.replace(exe + ".tmp", exe)

    def norm(text):
        return sorted(re.sub(r"finished in [0-9.]+s", "", ln) for ln in text.splitlines())
    plain = run([exe, "--test-threads", "2"])
    check("test result: ok. 5 passed" in plain.stdout, plain.stdout)
    p, log = record([exe, "--test-threads", "2"], args=["-q", "-a"])
    eq(norm(p.stdout), norm(plain.stdout), "the tests' output")
    slices = sorted(re.sub(r"0x[0-9a-f]+", "PTR", c.strip()) for c in replay_calls(log)
                    if "adler::Adler32::write_slice(" in c)
    check(slices, "no write_slice call")
    for s in slices:
        check(re.match(r'adler::Adler32::write_slice\(PTR, "(\\x00|\\xff|\\xa5|[ -~])*"(\.\.\.)?\)', s), s)
    check(any("\\xa5" * 16 in s for s in slices), f"no 0xa5 run among {slices}")


def test_values_kept_when_the_program_dies():
    """skep29t_die.c: 1,000 f(i, "abc") calls, prints 596500, then dies by
    SIGABRT, SIGSEGV or SIGKILL. Traced with -A/-R on f and a spec naming
    nothing: record exits 128+N as the program died, the spec naming
    nothing gets one warning, and all 1,000 calls keep their values."""
    exe = build_c("skep29t_die", ["skep29t_die.c"])
    for mode, sig in (("a", 6), ("s", 11), ("k", 9)):
        p, log = record([exe, mode], check_rc=128 + sig,
                        args=["-q", "-A", "f@arg1,arg2/s", "-R", "f@retval", "-A", "nothing_here@arg1"])
        eq(p.stdout, "596500\n", f"output ({mode})")
        eq(p.stderr.count("warning: -A 'nothing_here@arg1'"), 1, f"warnings ({mode}): {p.stderr!r}")
        got = [c.strip() for c in replay_calls(log) if c.strip().startswith("f(")]
        eq(got, [f'f({i}, "abc") = {i + 97};' for i in range(1000)], f"values ({mode})")
