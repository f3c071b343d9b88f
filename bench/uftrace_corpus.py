#!/usr/bin/env python3
"""uftrace's own test corpus against `sftrace replay`.

For every case of uftrace's tests/ (tests/tNNN_*.py) whose expected output
is a plain call graph of one thread (`name() {`, `} /* name */`, `name();`
only, no arguments, return values or events) and which runs the default way
(no runcmd, prepare or build of its own, and a setup that only sets
uftrace options sftrace replay has: -F, -N, -D, -t (--min-duration), given to
replay; C), this
builds its
s-NAME.c with XRay sleds (clang -O0, uftrace's default flags), records it
with sftrace, and compares `sftrace replay -f none` with the expected call
column, library calls aside: lines of functions the source does not define
are dropped on both sides, and a call left without callees is written as a
leaf.

    bench/uftrace_corpus.py UFTRACE_CHECKOUT [-v]

Prints one line per case (match, MISMATCH, or why it was left out) and the
counts."""
import ast
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SF = os.environ.get("SFTRACE", os.path.join(ROOT, "build", "sftrace"))
CALL = re.compile(r"^(\s*)([A-Za-z_][\w:~]*)\(\)( \{|;)$")
CLOSE = re.compile(r"^(\s*)\} /\* ([A-Za-z_][\w:~]*) \*/$")
CFLAGS = ["-O0", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1", "-fno-inline", "-fno-builtin",
          "-fno-omit-frame-pointer", "-D_FORTIFY_SOURCE=0"]


def setup_options(text):
    """The uftrace options a case's setup() sets, as sftrace replay options:
    ([options], None), or (None, why) when setup does anything else or sets
    an option with no sftrace counterpart. A case without setup: ([], None)."""
    tree = ast.parse(text)
    setup = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "setup"]
    if not setup:
        return [], None
    opts = ""
    for st in setup[0].body:
        if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)):
            continue
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Attribute)
                and st.targets[0].attr == "option" and isinstance(st.value, ast.Constant)
                and isinstance(st.value.value, str)):
            opts = st.value.value
            continue
        return None, "setup"
    out, toks = [], shlex.split(opts)
    while toks:
        t = toks.pop(0)
        m = re.fullmatch(r"(-F|-N|--filter|--notrace|-D|--depth|-t|--time-filter)(?:=?(.+))?", t)
        if t in ("--no-libcall", "-f") and (t != "-f" or (toks and toks.pop(0) == "none")):
            continue  # library calls are dropped on both sides; -f none is what the script runs
        if not m:
            return None, "option " + t
        flag, val = m.group(1), m.group(2)
        if val is None:
            if not toks:
                return None, "option " + t
            val = toks.pop(0)
        if "@" in val:
            return None, "option " + t + " with a trigger"
        out += [{"-F": "-F", "--filter": "-F", "-N": "-N", "--notrace": "-N", "-t": "--min-duration",
                 "--time-filter": "--min-duration"}.get(flag, "--max-depth"), val]
    return out, None


def plain_case(text):
    """(source name, expected call lines, sftrace replay options) or (None, why, None)."""
    for hook in ("def runcmd", "def prepare", "def build", "def fixup", "def sort"):
        if hook in text:
            return None, hook.split()[1], None
    opts, why = setup_options(text)
    if why:
        return None, why, None
    m = re.search(r"TestBase\.__init__\(self,\s*'([\w-]+)',\s*(?:result\s*=\s*)?(?:r?\"\"\")(.*?)\"\"\"(.*?)\)", text, re.S)
    if not m:
        return None, "not a plain TestBase", None
    name, body, rest = m.groups()
    if re.search(r"lang\s*=\s*'(?!C')", rest) or "cflags" in rest or "ldflags" in rest:
        return None, "language or flags", None
    calls, tids = [], set()
    for ln in body.splitlines():
        if "|" not in ln or ln.startswith("#"):
            continue
        head, call = ln.split("|", 1)
        tids.update(re.findall(r"\[\s*(\d+)\]", head))
        call = call[1:] if call.startswith(" ") else call
        if not (CALL.match(call) or CLOSE.match(call)):
            return None, "not a plain call graph", None
        calls.append(call)
    if len(tids) > 1:
        return None, "several threads", None
    if not calls:
        return None, "no call lines", None
    return name, calls, opts


def own_functions(src):
    with open(src, errors="replace") as fh:
        text = fh.read()
    return set(re.findall(r"^[\w \*]*?\b([A-Za-z_]\w*)\s*\([^;{)]*\)\s*\{", text, re.M))


def normalize(calls, own):
    """Library calls dropped (their callees move up to their depth); a call
    left without callees becomes a leaf; indentation rebuilt from the
    nesting that remains."""
    out, open_kept = [], []  # open_kept: for each open call, whether it was kept
    for c in calls:
        m = CALL.match(c) or CLOSE.match(c)
        if not m:
            out.append("  " * sum(open_kept) + c.strip())  # a comment (a repair): kept, so it shows
            continue
        name, kept = m.group(2), m.group(2).split("::")[-1] in own
        depth = sum(open_kept)
        if CLOSE.match(c):
            was_kept = open_kept.pop() if open_kept else True
            if not was_kept:
                continue
            depth = sum(open_kept)
            last = CALL.match(out[-1].strip()) if out else None
            if last and out[-1].endswith("{") and last.group(2) == name:
                out[-1] = out[-1][:-2] + ";"
            else:
                out.append("  " * depth + f"}} /* {name} */")
            continue
        if m.group(3) == " {":
            open_kept.append(kept)
        if kept:
            out.append("  " * depth + name + "()" + m.group(3))
    return out


def run_case(tests, name, expected, opts, verbose):
    src = next((os.path.join(tests, f"s-{name}{e}") for e in (".c",) if os.path.exists(
        os.path.join(tests, f"s-{name}{e}"))), None)
    if not src:
        return "left out: no C source"
    own = own_functions(src)
    d = tempfile.mkdtemp(prefix="uftcorpus-")
    exe = os.path.join(d, "t-" + name)
    b = subprocess.run(["clang"] + CFLAGS + ["-o", exe, src, "-lpthread", "-ldl"], capture_output=True, text=True)
    if b.returncode:
        return "left out: does not build with clang"
    log = os.path.join(d, "sf.log")
    r = subprocess.run([SF, "record", "-q", "-o", log, "--", exe], capture_output=True, text=True, cwd=tests,
                       timeout=60)
    if not os.path.exists(log):
        return f"left out: record failed ({r.stderr.strip()[:80]})"
    p = subprocess.run([SF, "replay", "-q", "--no-pager", "-f", "none"] + opts + [d], capture_output=True, text=True)
    # the header lines (times net of the tracer's cost) are not calls
    got = normalize([ln for ln in p.stdout.splitlines() if not ln.startswith("# ")], own)
    want = normalize(expected, own)
    if got == want:
        return "match"
    if verbose:
        import difflib
        print("\n".join(difflib.unified_diff(want, got, "uftrace", "sftrace", lineterm="")))
    return "MISMATCH"


def main():
    tests = os.path.join(sys.argv[1], "tests")
    verbose = "-v" in sys.argv
    counts = {}
    for fn in sorted(os.listdir(tests)):
        if not re.match(r"t\d+_.*\.py$", fn):
            continue
        with open(os.path.join(tests, fn)) as fh:
            name, calls, opts = plain_case(fh.read())
        res = run_case(tests, name, calls, opts, verbose) if name else f"left out: {calls}"
        if name and opts:
            res += " (replay " + " ".join(shlex.quote(o) for o in opts) + ")"
        kind = res.split(" (")[0] if not res.startswith("left out") else "left out"
        counts[kind] = counts.get(kind, 0) + 1
        if verbose or kind != "left out":
            print(f"{fn}: {res}")
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
