"""Issue 29, h29max: what one call records is bounded (SF_ARG_MAX_ITEMS,
24 items an entry or an exit: every argument register of x86-64 and
aarch64, with room for struct members); what the bound still cuts is
marked `<unrecorded>` (a last item named `rest`), never dropped unmarked
(skeptic 29u found the 13th and 14th register parameters dropped so)."""
import os

import sfkit
from sfkit import SFTRACE, build_c, check, eq, record, run

ISSUE = 29


def cut_prog():
    return build_c("h29max_cut", ["h29max_cut.c"])


def calls(log, name):
    out = run([SFTRACE, "replay", "--no-pager", log]).stdout
    return [line.split("| ", 1)[1].strip() for line in out.splitlines()
            if "| " in line and line.split("| ", 1)[1].strip().startswith(name + "(")]


def dump_args(log, name):
    out = run([SFTRACE, "dump", log]).stdout
    return [line.split(" ARGS ", 1)[1].split(None, 1) for line in out.splitlines()
            if " ARGS " in line and line.split(" ARGS ", 1)[1].split()[0] == name]


def test_thirty_parameters_marked_past_the_limit():
    """many30(1, .., 30) under --auto-args: 6 registers, then the 24
    stack arguments marked one each; the output unchanged. (Before
    h46args the marks counted as values: the 24th item marked the rest,
    `rest=<unrecorded>` in dump; marks and struct heads have no value, so
    only the 24 values are the limit, within SF_ARG_MAX_ITEMS items.)"""
    prog = cut_prog()
    plain = run([prog]).stdout
    p, log = record([prog], args=["-q", "--auto-args"])
    eq(p.stdout, plain)
    want = "many30(1, 2, 3, 4, 5, 6, " + ", ".join(["<unrecorded>"] * 24) + ") = 465;"
    eq(calls(log, "many30")[0], want)
    entry = [rest for rest in dump_args(log, "many30") if "arg1=" in rest[1]][0][1]
    check("rest=" not in entry, entry)
    eq(entry.count("=<unrecorded>"), 24)


def test_values_past_one_payload_marked():
    """strs_structs(6 strings of 17+ bytes, two 64-byte structs of longs
    near -2^63) under --auto-args: the strings (16 bytes each, 64 in all)
    and the first struct's 10-byte values fill the payload; the second
    struct is marked `<unrecorded>` (`rest`), not cut short or dropped."""
    prog = cut_prog()
    p, log = record([prog], args=["-q", "--auto-args"])
    eq(p.stdout, "465\n28\n")
    got = calls(log, "strs_structs")[0]
    first = "{" + ", ".join(str(-0x7000000000000000 + k) for k in range(8)) + "}"
    check_prefix = 'strs_structs("string number on"..., "string number tw"..., '
    sfkit.check(got.startswith(check_prefix), got)
    sfkit.check(got.endswith(", " + first + ", <unrecorded>) = 28;"), got)
    entry = [rest for rest in dump_args(log, "strs_structs") if "arg1=" in rest[1]][0][1]
    eq(entry.split()[-1], "rest=<unrecorded>")


def test_ring_window_start_marks_lost_values():
    """h29max_ring under --ring 128K --trigger '^fin$' with -A/-R on g7:
    the window starts with a slot whose first event is g7's ARGS event
    (slow path). Made a filler in the log (as if it had been in the slot
    before, which a runtime before h29max could do: skeptic 29u's
    `g7() = -3330;`), the reader marks the event after it: replay shows
    `g7(<unrecorded>) = N;`, dump `rest=<unrecorded>`; unpatched, the
    values as recorded."""
    import re
    prog = build_c("h29max_ring", ["h29max_ring.c"])
    p, log = record([prog], args=["-q", "--ring", "128K", "--trigger", "^fin$", "-A", "g7@arg1,arg2", "-R",
                                  "g7@retval"])
    raw = run([SFTRACE, "dump", "--raw", log]).stdout
    ev = [line for line in raw.split("events:", 1)[1].splitlines() if " g7 " in line or line.endswith(" g7")]
    m = re.search(r"ARGS\s+g7 (arg1=(\d+) arg2=3333|retval=(-?\d+)).*@(\d+)\]", ev[0])
    sfkit.check(m, ev[:2])
    with open(log, "r+b") as f:
        f.seek(int(m.group(4)) + 8 + 5)  # the header's item count: a filler
        f.write(b"\0")
    first = calls(log, "g7")[0]
    if m.group(2):   # an entry's values
        sfkit.check(re.fullmatch(r"g7\(<unrecorded>\) = -?\d+;", first), first)
    else:            # an exit's: the frame began before the window
        sfkit.check(first.startswith("g7(") and "= <unrecorded>;" in first, first)
    sfkit.check("rest=<unrecorded>" in run([SFTRACE, "dump", log]).stdout, "dump's mark")


if __name__ == "__main__":
    sfkit.main(globals())
