#!/usr/bin/env python3
"""`sftrace memory` against heaptrack_print on real software: Lua's own test
scripts (issue 27, "Real software"), top sites side by side per source line.

    python3 bench/memory_vs_heaptrack.py LUA_SOURCE_DIR [TEST.lua ...]
        [--lua BINARY] [--top N]

Builds Lua (the .c files of LUA_SOURCE_DIR, as bench/switch_lua.py does,
with -g and a fixed hash seed, -D'luai_makeseed()=0') unless --lua gives
a build, then runs, without address-space randomization (setarch -R),
each test script of
LUA_SOURCE_DIR/testes (default: strings.lua sort.lua tpack.lua utf8.lua)
once under heaptrack and once under `sftrace record --alloc`.

Both tools name a site by the innermost frame's source line: heaptrack's
unwinder gives the line of the allocator call (luaL_alloc tail-calls
realloc, so its frame is gone and the line is its caller's,
lmem.c:206 in luaM_malloc_); sftrace memory runs with
`--fold '^luaL_alloc$'`, which folds the tail caller into that same line.
heaptrack_print's top-level entries (-a: calls, -l: leaked, -p: peak) are
merged per file:line, and so are sftrace's `site`, `leak`, `peak` and `temporary` rows
(`--format tsv -n 0`). Lines in libc (heaptrack names glibc's sources;
sftrace reads them as "in a library") are summed into one row. Bytes are
printed as heaptrack_print prints them (base 1000, two decimals), so equal
strings mean equal to that precision. Exit status 0; the table is the
result."""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SF = os.path.join(ROOT, "build", "sftrace")
LIB = "(libc)"
# Without address-space randomization: tables keyed by pointers (and the
# allocator's own layout) then behave the same in both runs.
NOASLR = ["setarch", os.uname().machine, "-R"]


def build(src, out):
    cs = [os.path.join(src, f) for f in sorted(os.listdir(src))
          if f.endswith(".c") and f not in ("luac.c", "onelua.c", "ltests.c")]
    # a fixed hash seed (Lua's default mixes in addresses and the time), so
    # that both runs make the same allocations
    subprocess.run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1", "-DLUA_USE_LINUX",
                    "-Dluai_makeseed()=0", "-w", "-o", out] + cs + ["-lm", "-ldl"], check=True)


def fmt_bytes(b):
    """heaptrack_print's formatBytes, without a width."""
    x, units = float(b), "BKMGT"
    i = 0
    while i < len(units) - 1 and abs(x) > 1000.0:
        x /= 1000.0
        i += 1
    return "%dB" % b if i == 0 else "%.2f%s" % (x, units[i])


def ht_key(path, line, program_files):
    base = os.path.basename(path)
    return "%s:%s" % (base, line) if base in program_files else LIB


def heaptrack_sites(lua, test, cwd, out, program_files):
    """{line: [calls, leaked, peak]} from heaptrack_print's top-level entries
    (leaked and peak as heaptrack prints them), and its summary."""
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    subprocess.run(NOASLR + ["heaptrack", "-o", os.path.join(out, "ht"), lua, test], cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    data = [os.path.join(out, f) for f in os.listdir(out) if f.startswith("ht")][0]
    text = subprocess.run(["heaptrack_print", "-a", "-l", "-p", "-T", "-n", "100000", "-s", "0", data],
                          capture_output=True, text=True, check=True).stdout
    sites = collections.defaultdict(lambda: [0, [], [], 0])
    section = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("MOST CALLS"):
            section = "calls"
        elif line.startswith("PEAK MEMORY"):
            section = "peak"
        elif line.startswith("MEMORY LEAKS"):
            section = "leak"
        elif line.startswith("MOST TEMPORARY"):
            section = "temp"
        m = re.match(r"^(\d+) calls to allocation functions with (\S+) peak consumption from$", line)
        m2 = re.match(r"^(\S+) peak memory consumed over (\d+) calls from$", line)
        m3 = re.match(r"^(\S+) leaked over (\d+) calls from$", line)
        m4 = re.match(r"^(\d+) temporary allocations of \d+ allocations in total .* from$", line)
        if not (m or m2 or m3 or m4) or i + 2 >= len(lines):
            continue
        at = re.match(r"^\s+at (.+):(\d+)$", lines[i + 2])
        key = ht_key(at.group(1), at.group(2), program_files) if at else LIB
        if m and section == "calls":
            sites[key][0] += int(m.group(1))
        elif m2 and section == "peak":
            sites[key][2].append(m2.group(1))
        elif m3 and section == "leak":
            sites[key][1].append(m3.group(1))
        elif m4 and section == "temp":
            sites[key][3] += int(m4.group(1))
    summary = {}
    for k, pat in (("calls", r"calls to allocation functions: (\d+)"), ("temporary", r"temporary memory allocations: (\d+)"),
                   ("peak", r"peak heap memory consumption: (\S+)"), ("leaked", r"total memory leaked: (\S+)")):
        m = re.search(pat, text)
        summary[k] = m.group(1) if m else "?"
    return sites, summary


def sftrace_sites(lua, test, cwd, out, program_files):
    log = os.path.join(out, "sf.log")
    subprocess.run(NOASLR + [SF, "record", "-q", "--force", "--alloc", "-o", log, "--", lua, test], cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    text = subprocess.run([SF, "memory", "--format", "tsv", "-n", "0", "--fold", "^luaL_alloc$", log],
                          capture_output=True, text=True, check=True).stdout
    sites = collections.defaultdict(lambda: [0, 0, 0, 0])
    summary = {}
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) == 2:
            summary[f[0]] = f[1]
            continue
        if f[0] not in ("site", "leak", "peak", "temporary"):
            continue
        loc = f[5]
        m = re.match(r"^(.*):(\d+)$", loc)
        key = ht_key(m.group(1), m.group(2), program_files) if m else LIB
        col = {"site": 0, "leak": 1, "peak": 2, "temporary": 3}[f[0]]
        sites[key][col] += int(f[3]) if col in (0, 3) else int(f[2])
    return sites, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("tests", nargs="*", default=["strings.lua", "sort.lua", "tpack.lua", "utf8.lua"])
    ap.add_argument("--lua", help="a Lua built with XRay and -g (default: build one)")
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_intermixed_args()
    src = os.path.abspath(a.src)
    program_files = {f for f in os.listdir(src) if f.endswith((".c", ".h"))}
    with tempfile.TemporaryDirectory(prefix="sftrace-mvh.") as w:
        lua = os.path.abspath(a.lua) if a.lua else os.path.join(w, "lua")
        if not a.lua:
            build(src, lua)
        out = os.path.join(w, "out")
        os.mkdir(out)
        for test in a.tests:
            ht, hsum = heaptrack_sites(lua, test, os.path.join(src, "testes"), out, program_files)
            sf, ssum = sftrace_sites(lua, test, os.path.join(src, "testes"), out, program_files)
            allocs = int(ssum.get("allocations", 0)) + int(ssum.get("reallocs", 0))
            print(f"\n== testes/{test}")
            print(f"   heaptrack_print: {hsum['calls']} calls, {hsum['temporary']} temporary, peak {hsum['peak']}, "
                  f"leaked {hsum['leaked']}")
            print(f"   sftrace memory:  {allocs} calls ({ssum.get('allocations')} allocations, "
                  f"{ssum.get('reallocs')} reallocs), {ssum.get('temporary')} temporary, "
                  f"peak {fmt_bytes(int(ssum.get('peak_bytes', 0)))}, leaked {fmt_bytes(int(ssum.get('leaked_bytes', 0)))}")
            keys = sorted(set(ht) | set(sf), key=lambda k: (-max(ht[k][0] if k in ht else 0, sf[k][0] if k in sf else 0), k))
            print("   %-16s %8s %8s  %9s %9s  %9s %9s  %6s %6s  %s" % (
                "line", "calls ht", "calls sf", "leak ht", "leak sf", "peak ht", "peak sf", "tmp ht", "tmp sf", "same"))
            same_all = True
            for k in keys[:a.top]:
                h = ht.get(k, [0, [], [], 0])
                s = sf.get(k, [0, 0, 0, 0])
                hleak = "+".join(h[1]) or "0B"
                hpeak = "+".join(h[2]) or "0B"
                sleak, speak = fmt_bytes(s[1]), fmt_bytes(s[2])
                ok = (h[0] == s[0] and (len(h[1]) <= 1 and hleak == sleak) and (len(h[2]) <= 1 and hpeak == speak)
                      and h[3] == s[3])
                same_all &= ok or k == LIB
                print("   %-16s %8d %8d  %9s %9s  %9s %9s  %6d %6d  %s" % (
                    k, h[0], s[0], hleak, sleak, hpeak, speak, h[3], s[3], "yes" if ok else ("n/a" if k == LIB else "NO")))
            print(f"   program lines shown agree: {'yes' if same_all else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
