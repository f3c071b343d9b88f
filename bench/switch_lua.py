#!/usr/bin/env python3
"""Real software switched on and off (issue 26): the Lua interpreter, built
from its own sources with XRay sleds, runs a line server
(bench/switch_lua/server.lua: each request sorts N numbers and answers a
checksum) under `sftrace record --paused`. Two requests run paused, then
`sftrace resume PID`, two requests (the burst), `sftrace pause PID`, one more
request and the end. The answers must equal an untraced run's, and the log
must hold exactly the burst's two requests.

    python3 bench/switch_lua.py LUA_SOURCE_DIR   (the .c files of Lua 5.4/5.5)

Prints the switch lines, record's summary, and the calls of the functions
that run once per request (sort, str_format, luaB_print, luaB_tonumber).
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SFTRACE = os.path.join(os.path.dirname(HERE), "build", "sftrace")
SCRIPT = os.path.join(HERE, "switch_lua", "server.lua")
REQS = ["work 1000", "work 2000", "burst 3000", "burst 4000", "work 500"]
PER_REQUEST = ["sort", "str_format", "luaB_print", "luaB_tonumber"]


def build(src, out):
    cs = [os.path.join(src, f) for f in sorted(os.listdir(src))
          if f.endswith(".c") and f not in ("luac.c", "onelua.c", "ltests.c")]
    subprocess.run(["clang", "-O2", "-fxray-instrument", "-fxray-instruction-threshold=1", "-DLUA_USE_LINUX", "-w",
                    "-o", out] + cs + ["-lm", "-ldl"], check=True)


def talk(p, line):
    p.stdin.write(line + "\n")
    p.stdin.flush()
    return p.stdout.readline()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory(prefix="sftrace-lua.") as w:
        lua = os.path.join(w, "lua")
        build(sys.argv[1], lua)
        p = subprocess.Popen([lua, SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        plain = [talk(p, r) for r in REQS + ["q"]]
        p.wait()
        log = os.path.join(w, "sf.log")
        p = subprocess.Popen([SFTRACE, "record", "--paused", "-o", log, "--", lua, SCRIPT], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pid = re.search(r"pid (\d+)", p.stderr.readline()).group(1)
        out = [talk(p, r) for r in REQS[:2]]
        print(subprocess.run([SFTRACE, "resume", pid], capture_output=True, text=True, check=True).stdout.strip())
        out += [talk(p, r) for r in REQS[2:4]]
        print(subprocess.run([SFTRACE, "pause", pid], capture_output=True, text=True, check=True).stdout.strip())
        out += [talk(p, r) for r in REQS[4:] + ["q"]]
        _, err = p.communicate()
        print(err.strip())
        print("answers unchanged:", out == plain)
        rep = subprocess.run([SFTRACE, "report", "--format", "tsv", "-n", "0", log], capture_output=True, text=True,
                             check=True)
        print(rep.stderr.strip())
        lines = rep.stdout.splitlines()
        cols = lines[0].split("\t")
        calls = {ln.split("\t")[cols.index("name")]: int(ln.split("\t")[cols.index("calls")]) for ln in lines[1:]}
        print("calls:", {f: calls.get(f, 0) for f in PER_REQUEST}, f"({len(calls)} functions)")


if __name__ == "__main__":
    main()
