"""Children whose environment the program sized to the kernel's limit
(ARG_MAX): the runtime adds its variables to a child's environment, and
when that takes it past the limit it runs the child with the program's own
environment, as untraced (that child goes untraced), instead of failing
with E2BIG where the program ran fine untraced (skeptic24n found it for
system/popen after clearenv; here execve, execvpe and posix_spawn with an
environment built by hand)."""
import os

import sfkit
from sfkit import build_c, eq, run


def _limit(exe, how, want):
    lo, hi = 100000, 4000000
    while hi - lo > 1:
        mid = (lo + hi) // 2
        p = run([exe, str(mid), how], check_rc=None)
        if (p.returncode, p.stdout) == want:
            lo = mid
        else:
            hi = mid
    return lo


def _case(how, want):
    exe = build_c("e2big_exec", ["e2big_exec.c"])
    f = _limit(exe, how, want)
    p = run([exe, str(f + 1), how], check_rc=None)
    sfkit.check((p.returncode, p.stdout) != want, f"untraced past the limit F={f}: {p.stdout!r}")
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    t = run([sfkit.SFTRACE, "record", "-q", "-o", log, "--", exe, str(f), how], check_rc=None)
    eq((t.returncode, t.stdout), want, f"traced at the untraced limit F={f} ({how}): {t.stderr[-300:]}")


def test_execve_at_the_limit():
    _case("execve", (7, ""))


def test_execvpe_at_the_limit():
    _case("execvpe", (7, ""))


def test_posix_spawn_at_the_limit():
    _case("spawn", (0, "spawn 0 status 7\n"))


if __name__ == "__main__":
    sfkit.main([test_execve_at_the_limit, test_execvpe_at_the_limit, test_posix_spawn_at_the_limit])
