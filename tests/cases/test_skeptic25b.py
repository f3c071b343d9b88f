"""Skeptic 25b: programs written to break the new claims of issue 25's
second session (UNWIND_TO, the 512-entry shadow array keeping the outermost
frames, the fallback walk for landings deeper than 512, pause/resume).
Each case reproduces a break on the main it was written against (6f046d1).

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25b.py."""
import collections
import os
import re
import sys

def test_cxx_program_start_up_allocation_is_in_memory():
    """Failed before libsftrace.so was made initfirst (docs/DESIGN.md
    "Start-up"). A C++ program that throws and catches 5 ints makes 7
    allocations untraced (LD_PRELOAD malloc counter, skep25_mcount.c): 72 KiB
    for libstdc++'s emergency exception pool at libstdc++'s start-up, stdout's
    4 KiB buffer, 5 exceptions. `record --alloc` then `sftrace memory` shows 6
    allocations (4.6 KiB): the pool, the program's largest block and live to
    the end, is missing, so 'peak heap' and 'live at the end' are 4 KiB where
    the program holds 76 KiB."""
    exe = build_c("skep25b_throw", ["skep25b_throw.cc"], compiler="clang++")
    shim = build_c("skep25_mcount.so", ["skep25_mcount.c"], shared=True, xray=False, libs=["-ldl"])
    untraced = run([exe], env={"LD_PRELOAD": shim})
    m = re.search(r"mcount: (\d+) allocs", untraced.stderr)
    eq(bool(m), True, f"shim output: {untraced.stderr!r}")
    p, log = record([exe], args=["-q", "--alloc"])
    eq(p.stdout, "5\n", "the program's output")
    out = run([SFTRACE, "memory", log]).stdout
    eq(int(out.split()[0]), int(m.group(1)), f"allocations in `sftrace memory` vs untraced: {out.splitlines()[0]}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import SFTRACE, Skip, build_c, check, eq, record, run  # noqa: E402

LEFT_RE = re.compile(r"\bUNWIND\s.*? frames? abandoned, depth (\d+) left")
ANY_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(ENTRY|EXIT|TAIL|UNWIND)\s+(?:\[depth \d+\] )?(.*?)\s*$")


def replay(log):
    """Replays `sftrace dump` per thread. Returns (Counter of (depth, frame)
    left after each UNWIND, exits that did not match the innermost frame,
    frames left open)."""
    p = run([SFTRACE, "dump", log])
    st, tops, bad = collections.defaultdict(list), collections.Counter(), []
    for line in p.stdout.splitlines():
        m = ANY_RE.match(line)
        if not m:
            continue
        s, kind, rest = st[m.group(2)], m.group(3), m.group(4).strip()
        if kind == "ENTRY":
            s.append(rest)
        elif kind == "UNWIND":
            n = int(rest.split()[0])
            del s[max(0, len(s) - n):]
            tops[(len(s), s[-1] if s else None)] += 1
        else:
            top = s.pop() if s else None
            if top != rest:
                bad.append((kind, rest, top))
    return tops, bad, sum(len(s) for s in st.values())


def test_signal_landings_deeper_than_512_with_libgcc_walk():
    """FAILED ON 95c141e. loop() sits 520 pre() frames deep (523 open frames with
    main and loop); a 200 us SIGALRM's handler siglongjmps back to it (from
    work(), or from loop() itself between two work() calls); the program
    links libgcc_s, so each landing takes the fallback walk. Expected: every
    UNWIND leaves depth 523 with loop() innermost. Seen (fixture's -O2
    build): the first landing is right ("[depth 525] 2 frames abandoned,
    depth 523 left"), later ones record too small a depth, e.g. on_alarm
    entered at depth 523 over loop() then "[depth 524] 2 frames abandoned,
    depth 522 left" (loop closed, pre innermost; depths 511..522 seen), then
    loop's and pre's exits do not match ("unmatched exits dropped" in
    report). Built at -O1 (work() truly recursive) the later landings leave
    depth 302, 221 frames too few. Same program with a synchronous raise()
    at the same depths, plain longjmps at the same depths, C++ throws
    through 600+ frames, and this program at base 400: all right.
    The cause: the walk counted the abandoned frames, and a frame the
    signal caught in a trampoline, before its shadow push or after its pop,
    was counted one way and stood in the depth the other; the depth drifted
    from landing to landing. The walk now counts the live frames inside the
    array's last one (unwind.c, walk_live), the frames a landing keeps."""
    exe = build_c("skep25b_sigdeep", ["skep25b_sigdeep.c"], libs=["-Wl,--no-as-needed", "-lgcc_s"])
    p, log = record([exe, "520", "100"], args=["-q"])
    eq(p.stdout, "100\n", "the program's output")
    tops, bad, left = replay(log)
    eq(set(tops), {(523, "loop")}, "depth and innermost frame after every landing")
    eq((bad[:5], left), ([], 0), "exits match their frames, nothing left open")
    # At -O1 work() truly recurses: landings from up to 300 frames deeper.
    exe = build_c("skep25b_sigdeep_O1", ["skep25b_sigdeep.c"], flags=["-O1"],
                  libs=["-Wl,--no-as-needed", "-lgcc_s"])
    p, log = record([exe, "520", "100"], args=["-q"])
    eq(p.stdout, "100\n", "the program's output (-O1)")
    tops, bad, left = replay(log)
    eq(set(tops), {(523, "loop")}, "depth and innermost frame after every landing (-O1)")
    eq((bad[:5], left), ([], 0), "exits match their frames, nothing left open (-O1)")


def test_signal_landings_deeper_than_512_faster_than_the_walk():
    """FAILED ON dd7feb7 (SIGSEGV). skep25b_sigdeep at base 520 with a 50 us
    timer: untraced it makes its landings (checked below: 1,000, about 0.1 s).
    Traced, it died by SIGSEGV after 5,286 UNWIND events (30 s; 2,515 at
    20 us) and the program's own count never passed 0: under gdb, on_alarm's
    sp stepped down by 3,328 B at each hit, landings=0 at every one of the
    2,517 hits before the SIGSEGV (8 MiB, RLIMIT_STACK, / 3,328 B = 2,520).
    The cause (the same under qemu-aarch64 at 200 us, test_aarch64.py):
      SIGALRM -> on_alarm -> siglongjmp (ours) -> landing: the target is
      deeper than the array, so walk_abandoned blocks signals and walks
      with libgcc (6.5 us median here, but the first takes longer, and
      so does one the machine's load delays) -> the next SIGALRM is pending -> glibc's siglongjmp restores the jmp_buf's mask
      before its __longjmp -> the pending SIGALRM is delivered right there,
      on the abandoned stack -> on_alarm again, whose walk went through all
      the nested frames too, so it took longer still: a spiral, where
      untraced the nesting ends at the first handler shorter than the period.
    Now a walk that meets a signal frame among the abandoned ones starts
    again from the jmp_buf's state (walk_from.S): its cost is the live
    frames', whatever is nested below. -O1 with frame pointers: the outer
    frames' CFAs come from rbp, which the restart takes from the jmp_buf.
    Only the depth each landing leaves is checked: at this rate about a
    third of the landings jump out of a trampoline between its claim and
    its store, whose record the reader counts as lost (docs/DESIGN.md), so
    the replayed exits need not match."""
    for tag, flags in (("", []), ("_O1fp", ["-O1", "-fno-omit-frame-pointer"])):
        exe = build_c("skep25b_sigdeep" + tag, ["skep25b_sigdeep.c"], flags=flags,
                      libs=["-Wl,--no-as-needed", "-lgcc_s"])
        eq(run([exe, "520", "1000", "50"], timeout=60).stdout, "1000\n", "untraced control: every landing made")
        p, log = record([exe, "520", "1000", "50"], args=["-q"], timeout=120)
        eq(p.stdout, "1000\n", f"the program's output{tag}")
        left = collections.Counter(int(d) for d in LEFT_RE.findall(run([SFTRACE, "dump", log]).stdout))
        eq(set(left), {523}, f"the depth every landing leaves{tag}")
        # Not one per landing: a landing whose handler's entry record is
        # lost (a hole) closes nothing recorded and records nothing.
        check(sum(left.values()) >= 500, f"{sum(left.values())} landings recorded{tag}")


if __name__ == "__main__":
    sfkit.main(globals())
