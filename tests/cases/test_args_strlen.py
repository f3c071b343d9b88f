"""String arguments (-A take@arg1/s) of every length from 0 to 300 bytes,
with and without -R: every call comes back, with its string (shown up to
64 bytes). h46args: a full slot of calls with one 38- to 64-byte string
packs more records than bytes (the fourth form codes a repeated string's
records as bitmap bits), and the reader took a record per byte as the most
a PACKED chunk could hold, dropping the rest of the chunk."""
import collections
import re

import sfkit
from sfkit import build_c, eq, record, run, SFTRACE, call_column

MAX, N = 300, 1000
SHOWN = 63  # bytes of a string replay shows, then "..."

CALL = re.compile(r'take\("([a-z]*)"(\.\.\.)?\)(?: = (\d+);|;| \{)$')


def sweep(extra):
    exe = build_c("strlen_sweep", ["strlen_sweep.c"])
    p, log = record([exe, str(MAX), str(N)], args=["-q", "-A", "take@arg1/s"] + extra)
    eq(p.stdout, f"{N * MAX * (MAX + 1) // 2}\n", "program output")
    r = run([SFTRACE, "replay", "--no-pager", log])
    eq([ln for ln in r.stderr.splitlines() if "warning" in ln], [], "reader warnings")
    per_len, bad = collections.Counter(), []
    for c in call_column(r.stdout):
        c = c.strip()
        if not c.startswith("take("):
            continue
        m = CALL.match(c)
        if not m or (extra and m.group(3) is None) or (m.group(3) and int(m.group(3)) < len(m.group(1))):
            bad.append(c)
            continue
        per_len[len(m.group(1)) if not m.group(2) else "long"] += 1
    eq(bad[:3], [], "take calls not as expected")
    want = {n: N for n in range(SHOWN + 1)}
    want["long"] = N * (MAX - SHOWN)
    eq(dict(per_len), want, "take calls per shown string length")
    info = run([SFTRACE, "info", log]).stdout
    eq(re.search(r"losses\s*: (.*)", info).group(1), "0 dropped, 0 lost, 0 write errors", "info losses")


def test_every_length_arg_only():
    """-A take@arg1/s alone: N calls of each length 0..300, all replayed."""
    sweep([])


def test_every_length_with_retval():
    """-A take@arg1/s -R take@retval: the same, each with its return value."""
    sweep(["-R", "take@retval"])


if __name__ == "__main__":
    sfkit.main(globals())
