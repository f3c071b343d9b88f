#!/bin/sh
# The least thread stack libiberty's demangler (without its recursion
# limit, as sf_demangle's retry) needs per name shape and length: the
# figures behind demangle.c's 1 KiB a character (docs/DESIGN.md "Names").
# Usage: sh bench/demangle_stack.sh
set -e
d=$(mktemp -d /tmp/demangle_stack.XXXXXX)
trap 'rm -rf "$d"' EXIT
cc -O2 -o "$d/probe" "$(dirname "$0")/demangle_stack.c" -liberty -lpthread
python3 - "$d" <<'PY'
import subprocess, sys
d = sys.argv[1]
def fn(n):
    t = "v"
    for _ in range(n):
        t = "PF" + t + "vE"
    return "_Z1f" + t
shapes = {
    "flat template args": lambda n: "_Z3bigIJ" + "".join(f"6T{i:05d}" for i in range(n)) + "EEii",
    "nested templates": lambda n: "_Z1f" + "1AI" * n + "i" + "E" * n,
    "pointer chain": lambda n: "_Z1f" + "P" * n + "i",
    "function types": fn,
    "arrays": lambda n: "_Z1f" + "A1_" * n + "i",
    "expressions": lambda n: "_Z1fIX" + "pl" * n + "Li1E" + "Li1E" * n + "EEvv",
    "C chain": lambda n: "_Z1f" + "C" * n + "d",
}
for name, g in shapes.items():
    for n in (200, 1000):
        with open(f"{d}/n.txt", "w") as f:
            f.write(g(n))
        out = subprocess.run([f"{d}/probe", f"{d}/n.txt"], capture_output=True, text=True).stdout.strip()
        print(f"{name:20} {n:5}  {out}")
PY
