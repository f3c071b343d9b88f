"""sftrace filter, and record -f: exactly the selected functions are
recorded (counted per function), --list, --exclude, several objects,
--within, --unlisted trace, mangled names, and the errors (other build,
nothing matched, invalid regex, unusable objects, malformed filter files).

Runs under tests/run.py, or alone: python3 tests/cases/test_filter.py
(SFTRACE_BUILD=build-dir selects the build, default build/)."""
import collections
import os
import re
import subprocess
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import (FIXBUILD, SFTRACE, build_c, check, check_nesting, count_calls, dump_events, eq, record,  # noqa: E402
                   run, tmpdir)

# The call pattern (entries per function, with no filter):
#   main -> resolve x3 -> normalize x2 each -> leaf x1 each
#                      -> helper x1 each    -> lib_inner x1 each (library)
#   main -> leaf x1 (outside resolve)
#   main -> lib_twice x1 (library) -> lib_inner x2
# No call is in tail position, so no window closes early in --within mode.
EXE_SRC = r"""
#include <stdio.h>
int lib_inner(int x);
int lib_twice(int x);
volatile int sink;
int leaf(int x) { sink += x; return x + 1; }
int normalize(int x) { return leaf(x) * 2; }
int helper(int x) { return lib_inner(x) - VARIANT; }
int resolve(int x)
{
	int a = normalize(x);
	a += normalize(a + 1);
	a += helper(a);
	return a ^ 5;
}
int main(void)
{
	int t = 0;
	for (int i = 0; i < 3; i++)
		t += resolve(i);
	t += leaf(t) * 3;
	t += lib_twice(t) * 3;
	printf("filter fixture %d\n", t & 0xff);
	return 0;
}
"""
LIB_SRC = r"""
int lib_inner(int x) { return x * 3 + 1; }
int lib_twice(int x) { return lib_inner(x) + lib_inner(x + 1) + 1; }
"""
CXX_SRC = r"""
namespace ns {
int calc(int x) { return x * 7; }
struct Box { int v; int get() const; };
int Box::get() const { return v + 1; }
}
int main(int argc, char **) { ns::Box b{argc}; return ns::calc(b.get()) == 1; }
"""
ALL_CALLS = {"main": 1, "resolve": 3, "normalize": 6, "helper": 3, "leaf": 7, "lib_twice": 1, "lib_inner": 5}
EXE_FUNCS = 5  # main resolve normalize helper leaf
FLAGS = ["-fno-inline"]
SRCDIR = os.path.join(FIXBUILD, "filter-src")


def _source(name, text):
    """Writes a fixture source once (unchanged text keeps its mtime, so
    build_c's cache holds)."""
    os.makedirs(SRCDIR, exist_ok=True)
    path = os.path.join(SRCDIR, name)
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)
    return path


def fixture(outdir=None, variant=1):
    """(exe, lib): the filter fixture linked with its instrumented library."""
    outdir = outdir or os.path.join(FIXBUILD, "filter")
    lib = build_c("libsffilt.so", [_source("libsffilt.c", LIB_SRC)], flags=FLAGS, shared=True, outdir=outdir)
    exe = build_c("filtfix", [_source("filtfix.c", EXE_SRC)], flags=FLAGS + [f"-DVARIANT={variant}"],
                  libs=["-L" + outdir, "-lsffilt", "-Wl,-rpath," + outdir], outdir=outdir)
    return exe, lib


def make_filter(args, check_rc=0):
    """sftrace filter ARGS -o <new file>. Returns (CompletedProcess, path)."""
    out = os.path.join(tmpdir(), "sf.filter")
    p = run([SFTRACE, "filter"] + list(args) + ["-o", out], check_rc=check_rc)
    return p, out


def record_counts(exe, filt):
    p, log = record([exe], args=["-f", filt])
    check("filter fixture" in p.stdout, p.stdout)
    events = dump_events(log)
    eq(check_nesting(events), {}, "frames left open")
    return events, dict(count_calls(events))


def nm_functions(path):
    """name -> ELF vaddr of the defined text symbols."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            syms[parts[2]] = int(parts[0], 16)
    return syms


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


FilterFile = collections.namedtuple("FilterFile", "settings objects comments")


def read_filter(path):
    """Settings, objects ((build-id, path, [(vaddr, name)])) and comment lines."""
    settings, objects, comments = {}, [], []
    with open(path) as f:
        text = f.read()
    check(text.endswith("\n"), "filter ends with a newline")
    lines = text.splitlines()
    eq(lines[0], "sftrace-filter 1", "magic line")
    for line in lines[1:]:
        if line.startswith("#"):
            comments.append(line)
        elif not line.strip():
            continue
        elif line.split()[0] in ("mode", "unlisted"):
            k, v = line.split()
            settings[k] = v
        elif line.startswith("object "):
            _, bid, p = line.split(" ", 2)
            objects.append((bid, p, []))
        else:
            addr, name = line.split(" ", 1)
            check(addr.startswith("0x"), line)
            objects[-1][2].append((int(addr, 16), name))
    return FilterFile(settings, objects, comments)


def check_functions(obj, path, names):
    """obj lists exactly `names`, at their nm addresses, sorted by address."""
    bid, opath, funcs = obj
    eq(opath, os.path.realpath(path), "object path")
    eq(bid, build_id(path), "object build-id")
    syms = nm_functions(path)
    eq(funcs, sorted((syms[n], n) for n in names), "function lines")


def test_filter_regex_records_only_matches():
    exe, _ = fixture()
    p, filt = make_filter(["-p", exe, "-r", "^normalize$"])
    check(f"{os.path.realpath(exe)}: 1 of {EXE_FUNCS} instrumented functions selected" in p.stdout, p.stdout)
    check("\n  normalize\n" in p.stdout, p.stdout)
    ff = read_filter(filt)
    eq(ff.settings, {"mode": "select", "unlisted": "skip"}, "settings")
    eq(len(ff.objects), 1, "objects")
    check_functions(ff.objects[0], exe, ["normalize"])
    check(any(c == f"# made by: sftrace filter -p {exe} -r '^normalize$' -o {filt}" for c in ff.comments),
          ff.comments)
    _, counts = record_counts(exe, filt)
    eq(counts, {"normalize": 6}, "entries")


def test_filter_regex_is_a_search():
    # Unanchored, several -r OR'ed: "norm" finds normalize, "^h" helper.
    exe, _ = fixture()
    _, filt = make_filter(["-p", exe, "-r", "orm", "-r", "^h"])
    check_functions(read_filter(filt).objects[0], exe, ["normalize", "helper"])
    _, counts = record_counts(exe, filt)
    eq(counts, {"normalize": 6, "helper": 3}, "entries")


def test_filter_list_file():
    exe, _ = fixture()
    lst = os.path.join(tmpdir(), "names.txt")
    with open(lst, "w") as f:
        f.write("# functions to keep\n\n^leaf$\n   helper  \n\n# ^resolve$\n")
    p, filt = make_filter(["-p", exe, "--list", lst])
    check(f"2 of {EXE_FUNCS} instrumented functions selected" in p.stdout, p.stdout)
    check_functions(read_filter(filt).objects[0], exe, ["leaf", "helper"])
    _, counts = record_counts(exe, filt)
    eq(counts, {"leaf": 7, "helper": 3}, "entries")


def test_filter_exclude():
    exe, _ = fixture()
    _, filt = make_filter(["-p", exe, "-r", "^(resolve|normalize|leaf)$", "--exclude", "^le"])
    check_functions(read_filter(filt).objects[0], exe, ["resolve", "normalize"])
    _, counts = record_counts(exe, filt)
    eq(counts, {"resolve": 3, "normalize": 6}, "entries")


def test_filter_several_objects():
    exe, lib = fixture()
    p, filt = make_filter(["-p", exe, "-p", lib, "-r", "^(resolve|lib_inner)$"])
    check(f"{os.path.realpath(lib)}: 1 of 2 instrumented functions selected" in p.stdout, p.stdout)
    check("2 functions in 2 objects" in p.stdout, p.stdout)
    ff = read_filter(filt)
    eq(len(ff.objects), 2, "objects")
    check_functions(ff.objects[0], exe, ["resolve"])
    check_functions(ff.objects[1], lib, ["lib_inner"])
    _, counts = record_counts(exe, filt)
    eq(counts, {"resolve": 3, "lib_inner": 5}, "entries")


def test_filter_within_records_whole_subtree_only():
    exe, _ = fixture()
    _, filt = make_filter(["-p", exe, "-r", "^resolve$", "--within"])
    eq(read_filter(filt).settings, {"mode": "within", "unlisted": "skip"}, "settings")
    events, counts = record_counts(exe, filt)
    # Everything under resolve, in the library too; leaf and lib_inner only
    # for their calls inside resolve (main calls them outside as well).
    eq(counts, {"resolve": 3, "normalize": 6, "leaf": 6, "helper": 3, "lib_inner": 3}, "entries")
    stack = []
    for e in events:
        if e.kind == "ENTRY":
            check(e.name == "resolve" or "resolve" in stack, f"{e.name} recorded outside resolve")
            stack.append(e.name)
        else:
            stack.pop()


def test_filter_unlisted_trace():
    exe, _ = fixture()
    _, filt = make_filter(["-p", exe, "-r", "^resolve$", "--unlisted", "trace"])
    eq(read_filter(filt).settings, {"mode": "select", "unlisted": "trace"}, "settings")
    _, counts = record_counts(exe, filt)
    eq(counts, {"resolve": 3, "lib_twice": 1, "lib_inner": 5}, "entries")


def test_filter_no_filter_baseline():
    # The counts the filtered runs are compared against.
    exe, _ = fixture()
    _, log = record([exe])
    eq(dict(count_calls(dump_events(log))), ALL_CALLS, "entries without a filter")


def test_filter_mangled_and_demangled_names():
    src = _source("filtcxx.cc", CXX_SRC)
    exe = build_c("filtcxx", [src], flags=FLAGS, compiler="clang++", outdir=os.path.join(FIXBUILD, "filter"))
    for regex, match in ((r"^ns::calc\(int\)$", []), (r"^_ZN2ns4calcEi$", ["--match", "mangled"]),
                         (r"^_ZN2ns4calcEi$", ["--match", "both"])):
        _, filt = make_filter(["-p", exe, "-r", regex] + match)
        funcs = read_filter(filt).objects[0][2]
        eq([name for _, name in funcs], ["ns::calc(int)"], f"functions for {regex} {match}")
        eq(funcs[0][0], nm_functions(exe)["_ZN2ns4calcEi"], "address")
    # By default only demangled names are searched: the raw symbol is not.
    p, _ = make_filter(["-p", exe, "-r", r"^_ZN2ns4calcEi$"], check_rc=1)
    check("no instrumented function matches" in p.stderr, p.stderr)
    p, _ = make_filter(["-p", exe, "-r", "calc", "--match", "neither"], check_rc=2)
    check("--match must be demangled, mangled or both" in p.stderr, p.stderr)
    _, filt = make_filter(["-p", exe, "-r", "Box::get"])
    eq([name for _, name in read_filter(filt).objects[0][2]], ["ns::Box::get() const"], "Box::get")
    # --exclude searches the same names as -r.
    p, filt = make_filter(["-p", exe, "-r", "Box::get", "--exclude", "^_ZNK", "--match", "both"], check_rc=1)
    check("no instrumented function matches" in p.stderr, p.stderr)
    _, filt = make_filter(["-p", exe, "-r", "Box::get", "--exclude", "^_ZNK"])
    eq(len(read_filter(filt).objects[0][2]), 1, "a mangled --exclude does not apply by default")


def test_filter_quiet_and_compact_summary():
    exe, _ = fixture()
    p, filt = make_filter(["-p", exe, "-r", ".", "-q"])
    eq(p.stdout, "", "-q prints nothing")
    eq(len(read_filter(filt).objects[0][2]), EXE_FUNCS, "-q still writes the filter")
    p, _ = make_filter(["-p", exe, "-r", "."])
    lines = p.stdout.splitlines()
    eq(lines[0], f"{os.path.realpath(exe)}: {EXE_FUNCS} of {EXE_FUNCS} instrumented functions selected", "header")
    eq(sorted(x.strip() for x in lines[1:1 + EXE_FUNCS]), sorted(["main", "resolve", "normalize", "helper", "leaf"]),
       "every name listed")


def rust_names(exe):
    """address -> (demangled aliases, raw aliases) of the instrumented
    functions (the addresses sftrace filter -r '' selects; names from nm)."""
    _, everything = make_filter(["-p", exe, "-r", "", "-q"])
    addrs = {a for a, _ in read_filter(everything).objects[0][2]}
    names = {a: (set(), set()) for a in addrs}
    for demangle, slot in ((["-C"], 0), ([], 1)):
        out = subprocess.run(["nm", "--defined-only"] + demangle + [exe], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[1] in "tTwW" and int(parts[0], 16) in names:
                names[int(parts[0], 16)][slot].add(parts[2])
    return names


def elide_generics(name):
    """The test's own statement of the rule: the text inside a '<' that
    follows a name character or ':' (generic arguments) is dropped; a '<'
    elsewhere opens a qualified path and is kept."""
    out, depth = [], 0
    for i, c in enumerate(name):
        if depth:
            if c == "<":
                depth += 1
            elif c == ">" and name[i - 1] != "-":
                depth -= 1
                if not depth:
                    out.append("…>")
            continue
        out.append(c)
        if c == "<" and i and (name[i - 1].isalnum() or name[i - 1] in "_:") and not name[:i].endswith("operator"):
            depth = 1
    return "".join(out)


def check_exact_selection(exe, regex, names, match="demangled"):
    """The filter holds exactly the functions one of whose names (per
    --match) the regex finds. Returns (selected names, stderr)."""
    p, filt = make_filter(["-p", exe, "-r", regex, "--match", match])
    rx = re.compile(regex)
    slots = {"demangled": (0,), "mangled": (1,), "both": (0, 1)}[match]
    want = {a for a, n in names.items() if any(rx.search(x) for s in slots for x in n[s])}
    got = read_filter(filt).objects[0][2]
    eq({a for a, _ in got}, want, f"selection of -r {regex!r} --match {match}")
    return {name for _, name in got}, p.stderr


def test_filter_rust_generics_exact_selection():
    from sfkit import rust_fixture
    exe = rust_fixture()
    names = rust_names(exe)
    sel, err = check_exact_selection(exe, "closure", names)
    check("rust_prog::apply::<rust_prog::worker::{closure#1}>" in sel, sel)
    # apply<{closure}> matches only inside its generic arguments: warned, with the anchored form.
    check("match only inside generic arguments" in err and "    rust_prog::apply::<…>" in err.splitlines(), err)
    check("--ignore-generic-args" in err and "-r '^<?(?:closure)::'" in err, err)
    # --ignore-generic-args: only the functions' own paths are searched.
    _, filt = make_filter(["-p", exe, "-r", "closure", "--ignore-generic-args"])
    own = {a for a, _ in read_filter(filt).objects[0][2]}
    want = {a for a, n in names.items() if any("closure" in elide_generics(x) for x in n[0])}
    eq(own, want, "--ignore-generic-args selection")
    check(0 < len(own) < len(sel), f"{len(own)} of {len(sel)}")
    sel, err = check_exact_selection(exe, "Shape", names)
    check({"<rust_prog::Circle as rust_prog::Shape>::area", "<rust_prog::Square as rust_prog::Shape>::area"} <= sel,
          sel)
    # A trait impl's own path is not a generic argument.
    check("<rust_prog::Circle as rust_prog::Shape>::area" not in err, err)
    sel, err = check_exact_selection(exe, "^rust_prog::(fib|worker)$", names)
    eq(sel, {"rust_prog::fib", "rust_prog::worker"}, "anchored")
    eq(err, "", "no warning for an anchored regex")
    # Raw v0 symbols start with _R: the demangled names never do.
    p, _ = make_filter(["-p", exe, "-r", "^_R"], check_rc=1)
    check("no instrumented function matches" in p.stderr, p.stderr)
    sel, _ = check_exact_selection(exe, "^_R", names, match="mangled")
    check(len(sel) >= 40, f"{len(sel)} Rust functions by raw symbol")
    check_exact_selection(exe, "rust_prog", names, match="both")


def test_filter_readme_examples_on_rust_bench():
    """The README's two examples on examples/rust-bench select exactly the
    functions whose demangled names match; the names that only the v0
    symbols matched (issue 15) stay out unless --match mangled."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "test_rust_workflow", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_rust_workflow.py"))
    workflow = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workflow)
    exe = workflow.bench_bin()
    names = rust_names(exe)
    sel, _ = check_exact_selection(exe, "serde_json|regex", names)
    check(any(n.startswith("serde_json::") for n in sel) and any(n.startswith("regex::") for n in sel), len(sel))
    check("<alloc::raw_vec::RawVecInner>::finish_grow" not in sel, "finish_grow")
    check(not any(n.startswith("<aho_corasick::dfa::Builder>::build") for n in sel), "aho_corasick build")
    sel, err = check_exact_selection(exe, "resolve|normalize|cache", names)
    check("<importmap::engine::Resolver>::resolve" in sel, sel)
    check(not any(n.startswith("serde_json::de::from_trait") for n in sel), "from_trait")
    raw, _ = check_exact_selection(exe, "serde_json|regex", names, match="mangled")
    check(len(raw - sel) > 0, "raw symbols select more (the reference tool's behaviour)")


def test_filter_for_other_build_refused():
    d = tmpdir()
    exe, _ = fixture(outdir=d)
    _, filt = make_filter(["-p", exe, "-r", "^resolve$"])
    old = build_id(exe)
    os.unlink(exe)
    exe, _ = fixture(outdir=d, variant=2)
    new = build_id(exe)
    check(old != new, "the rebuild changed the build-id")
    log = os.path.join(tmpdir(), "sf.log")
    p = run([SFTRACE, "record", "-f", filt, "-o", log, "--", exe], check_rc=1)
    check("filter fixture" not in p.stdout, "the program must not run")
    check(not os.path.exists(log), "no log written")
    check(os.path.realpath(exe) in p.stderr and old in p.stderr and new in p.stderr, p.stderr)
    check("build-id" in p.stderr and "re-run 'sftrace filter'" in p.stderr, p.stderr)
    eq(len(p.stderr.strip().splitlines()), 1, "one error line")


def test_record_rejects_broken_filter_files():
    exe, _ = fixture()
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    bad = os.path.join(d, "bad.filter")
    with open(bad, "w") as f:
        f.write("sftrace-filter 1\nmode select\nresolve\n")
    p = run([SFTRACE, "record", "-f", bad, "-o", log, "--", exe], check_rc=1)
    check(f"{bad}: line 3: expected a function address" in p.stderr, p.stderr)
    gone = os.path.join(d, "gone.filter")
    with open(gone, "w") as f:
        f.write(f"sftrace-filter 1\nobject - {d}/no-such-binary\n0x1000 f\n")
    p = run([SFTRACE, "record", "-f", gone, "-o", log, "--", exe], check_rc=1)
    check(f"{d}/no-such-binary: No such file or directory" in p.stderr, p.stderr)
    p = run([SFTRACE, "record", "-f", os.path.join(d, "missing.filter"), "-o", log, "--", exe], check_rc=1)
    check("missing.filter" in p.stderr, p.stderr)
    check(not os.path.exists(log), "no log written")


def test_filter_hand_written_file_accepted():
    # The format is for people too: comments, no build-id check for '-',
    # addresses as nm prints them (no 0x).
    exe, _ = fixture()
    addr = nm_functions(exe)["helper"]
    filt = os.path.join(tmpdir(), "hand.filter")
    with open(filt, "w") as f:
        f.write(f"sftrace-filter 1   # by hand\n\nobject - {os.path.realpath(exe)}\n{addr:016x}  helper\n")
    _, counts = record_counts(exe, filt)
    eq(counts, {"helper": 3}, "entries")


def test_filter_matching_nothing_is_an_error():
    exe, _ = fixture()
    out = os.path.join(tmpdir(), "sf.filter")
    p = run([SFTRACE, "filter", "-p", exe, "-r", "^no_such_function$", "-o", out], check_rc=1)
    check("no instrumented function matches" in p.stderr, p.stderr)
    check(not os.path.exists(out), "no filter written")
    check(not os.listdir(os.path.dirname(out)), "no temporary file left")
    # An existing filter is left as it was.
    with open(out, "w") as f:
        f.write("old\n")
    run([SFTRACE, "filter", "-p", exe, "-r", "^leaf$", "--exclude", "leaf", "-o", out], check_rc=1)
    eq(open(out).read(), "old\n", "existing file untouched")


def test_filter_invalid_regex():
    exe, _ = fixture()
    out = os.path.join(tmpdir(), "sf.filter")
    p = run([SFTRACE, "filter", "-p", exe, "-r", "ok", "-r", "res(olve", "-o", out], check_rc=1)
    check("res(olve" in p.stderr and "missing closing parenthesis" in p.stderr and "position 8" in p.stderr,
          p.stderr)
    lst = os.path.join(os.path.dirname(out), "list.txt")
    with open(lst, "w") as f:
        f.write("# comment\nleaf\n[z-a]\n")
    p = run([SFTRACE, "filter", "-p", exe, "--list", lst, "-o", out], check_rc=1)
    check(f"{lst} line 3" in p.stderr and "position" in p.stderr, p.stderr)
    p = run([SFTRACE, "filter", "-p", exe, "-r", "leaf", "--exclude", "*x", "-o", out], check_rc=1)
    check("'*x'" in p.stderr and "position 0" in p.stderr, p.stderr)
    check(not os.path.exists(out), "no filter written")


def test_filter_unusable_objects():
    exe, _ = fixture()
    d = tmpdir()
    out = os.path.join(d, "sf.filter")
    plain = build_c("filtplain", [_source("filtplain.c", "int main(void) { return 0; }\n")], xray=False,
                    outdir=os.path.join(FIXBUILD, "filter"))
    cases = [
        (os.path.join(d, "missing"), "No such file or directory"),
        (_source("filtfix.c", EXE_SRC), "not an ELF file"),
        (d, "is a directory"),
        (plain, "no XRay instrumentation map (build with -fxray-instrument or -Zinstrument-xray=always)"),
    ]
    for obj, msg in cases:
        p = run([SFTRACE, "filter", "-p", exe, "-p", obj, "-r", "leaf", "-o", out], check_rc=1)
        check(f"{obj}: {msg}" in p.stderr, p.stderr)
        eq(len(p.stderr.strip().splitlines()), 1, f"one error line for {obj}")
        eq(p.stdout, "", "objects are checked before any summary")
        check(not os.path.exists(out), "no filter written")


def test_filter_usage_errors():
    p = run([SFTRACE, "filter", "--help"])
    check("usage: sftrace filter" in p.stdout and "--within" in p.stdout, p.stdout)
    exe, _ = fixture()
    for args, msg in ((["-r", "x", "-o", "f"], "no object"), (["-p", exe, "-o", "f"], "no regex"),
                      (["-p", exe, "-r", "x"], "no output"),
                      (["-p", exe, "-r", "x", "-o", "f", "--unlisted", "maybe"], "skip or trace")):
        p = run([SFTRACE, "filter"] + args, check_rc=2)
        check(msg in p.stderr, p.stderr)


def test_record_filter_regex_builds_filter_on_the_fly():
    from sfkit import calls_fixture, count_calls, dump_events, record, tmpdir
    exe = calls_fixture()
    tmp = tmpdir()
    env = {"TMPDIR": tmp}
    p, log = record([exe], args=["--filter-regex", "^(outer|leaf)$"], env=env)
    if "calls ok" not in p.stdout:
        raise AssertionError(p.stdout)
    counts = count_calls(dump_events(log))
    if dict(counts) != {"outer": 10, "leaf": 60}:
        raise AssertionError(f"--filter-regex: {dict(counts)}")
    if "2 of 11 instrumented functions selected" not in p.stderr:
        raise AssertionError(f"the filter summary goes to stderr: {p.stderr}")
    # --within: everything under thread_work, nothing else.
    p, log = record([exe], args=["--filter-regex", "^thread_work$", "--within"], env=env)
    counts = count_calls(dump_events(log))
    if dict(counts) != {"thread_work": 8, "tleaf": 8000}:
        raise AssertionError(f"--filter-regex --within: {dict(counts)}")
    if os.listdir(tmp):
        raise AssertionError(f"temporary files left behind: {os.listdir(tmp)}")


def test_record_filter_regex_errors():
    from sfkit import calls_fixture, tmpdir
    exe = calls_fixture()
    out = os.path.join(tmpdir(), "sf.log")
    p = run([SFTRACE, "record", "--filter-regex", "(", "-o", out, "--", exe], check_rc=1)
    if "position" not in p.stderr:
        raise AssertionError(p.stderr)
    p = run([SFTRACE, "record", "--filter-regex", "^no_such_function$", "-o", out, "--", exe])
    if "no log written: --filter-regex selects no function" not in p.stderr:
        raise AssertionError(p.stderr)
    if "0 of 11 instrumented functions selected in" not in p.stderr:
        raise AssertionError(p.stderr)
    p = run([SFTRACE, "record", "--within", "-o", out, "--", exe], check_rc=2)
    if os.path.exists(out):
        raise AssertionError("no log when the command line is refused")


if __name__ == "__main__":
    sfkit.main(globals())
