#!/usr/bin/env python3
"""What the table of makecontext contexts (src/runtime/stack.c) costs, in
callgrind instructions the runtime adds (traced minus untraced, inside the
fixture's functions; deterministic under any load), for N live contexts
(tests/fixtures/ctx_many.c, three of them run):
  first   per first landing on a context's stack (a search of the table)
  later   per later landing on the same stack (the thread's last hit)
  make    per makecontext (the stub, the lock, one search, the insert)
    python3 bench/ctx_table.py [N,N,...] [rise|fall|rand|same]
    (default 64,1000,100000 rise)"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cases"))

from test_ctx_table import cost  # noqa: E402

ns = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "64,1000,100000").split(",")]
mode = sys.argv[2] if len(sys.argv) > 2 else "rise"
print(f"{'contexts':>9} {'first':>7} {'later':>7} {'make':>7}   ({mode})")
for n in ns:
    f, a, m = cost(n, mode)
    print(f"{n:>9} {f:>7.0f} {a:>7.0f} {m:>7.0f}", flush=True)
