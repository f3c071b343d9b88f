"""Issue 24: "a log first made in a library constructor sits in the
program's descriptor table until the writer starts". h24led_ctor_main
links libh24led_ctor_b.so, which needs libh24led_ctor_a.so: a's
constructor (the program's first) calls work() 10 times (the log is made
there) and lists its descriptors above 2 and its thread count; b's
constructor lists them too, close_range(3, ~0U)s, writes 19 bytes to a
file of its own and calls work() 5 times; main prints what they saw, calls
work() 100 times and writes 19 more bytes. Untraced the constructors see
no descriptor and one thread. Traced (writer thread) they saw the log at
1023: it is now held only for each use until step 2, where the writer
takes it (no thread made for it: they still see one)."""
import os

import sfkit
from sfkit import SFTRACE, build_c, eq, run

ISSUE = 24


def _prog():
    a = build_c("libh24led_ctor_a.so", ["h24led_ctor_a.c"], shared=True)
    da = os.path.dirname(a)
    build_c("libh24led_ctor_b.so", ["h24led_ctor_b.c"], shared=True,
            libs=["-L" + da, "-lh24led_ctor_a", "-Wl,-rpath," + da])
    return build_c("h24led_ctor_main", ["h24led_ctor_main.c"],
                   libs=["-L" + da, "-lh24led_ctor_b", "-lh24led_ctor_a", "-Wl,-rpath," + da])


def test_constructor_log_out_of_the_program_table():
    prog = _prog()
    d0 = sfkit.tmpdir()
    u = run([prog], env={"H24LED_FILE": os.path.join(d0, "own.txt")})
    eq(u.stdout.splitlines()[:2], ["ctor a: threads 1", "ctor b: threads 1"], "untraced")
    for i in range(3):
        d = sfkit.tmpdir()
        own = os.path.join(d, "own.txt")
        t = run([SFTRACE, "record", "-q", "--writer", "thread", "-o", os.path.join(d, "c.log"), "--", prog],
                env={"H24LED_FILE": own})
        eq(t.stdout.splitlines()[:2], u.stdout.splitlines()[:2], f"run {i}: what the constructors saw")
        with open(own, "rb") as f:
            eq(f.read(), b"program's own data\n" * 2, f"run {i}: the program's file")
        calls = sfkit.count_calls(sfkit.dump_events(os.path.join(d, "c.log")))
        eq(calls.get("work", 0), 115, f"run {i}: work calls")


if __name__ == "__main__":
    sfkit.main(globals())
