"""h25bt: the program's own mappings look as untraced in /proc/self/maps
(issue 25: a program reading its maps, as Rust's backtrace symbolizer does
with one allocation per line, must not see the tracer's patching)."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import build_c, check, eq, record, run  # noqa: E402


def test_text_mappings_not_split_by_patching():
    """h25bt_maps prints its executable's and the loader's maps lines
    (permissions, offset, file). Untraced: one "r-xp" line each. Traced,
    before: the executable's text as two lines (the pages of its sleds
    made writable, then given back, stay a mapping of their own: the
    kernel's VM_ACCOUNT mark of a once-writable private mapping), three
    with a filter selecting one function, and the loader's as three (the
    loader hook's page). Now the first write of a segment covers it whole
    (patch.c, whole_segment_once; sf_text_whole_span for the loader's hook
    and setup-ABI slots), so every later partial pass merges back."""
    exe = build_c("h25bt_maps", ["h25bt_maps.c"])
    untraced = run([exe]).stdout
    check(untraced.count("r-xp") == 2, f"untraced: one text line each: {untraced!r}")
    for args in (["-q"], ["-q", "--alloc"], ["-q", "-r", "^mid_fn$"]):
        p, _ = record([exe], args=args)
        eq(p.stdout, untraced, f"maps lines, record {' '.join(args)}")


if __name__ == "__main__":
    sfkit.main(globals())
