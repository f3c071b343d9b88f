"""graph's backtraces merge callers the output names alike
(tests/fixtures/graph_mono.rs: leaf reached through two instantiations of
the generic apply, both shown as `apply::<…>`), as its call graph does:
one backtrace of 2 hits, not two that differ only by an address."""
import re

from sfkit import SFTRACE, eq, record, run, rust_fixture


def test_instantiations_share_a_backtrace():
    exe = rust_fixture("graph_mono")
    _, log = record([exe], args=["-q"])
    out = run([SFTRACE, "graph", "-q", "graph_mono::leaf", log]).stdout
    bt = out.split("=============== BACKTRACE ===============\n", 1)[1].split("\n\n", 1)[0]
    eq([re.sub(r"time +<?[\d.]+ us|time +$", "time T", re.sub(r"0x[0-9a-f]+", "ADDR", ln)) for ln in bt.splitlines()],
       [" backtrace #0: hit 2, time T",
        "   [0] std::rt::lang_start::<…>::{closure} (ADDR)",
        "   [1] std::sys::backtrace::__rust_begin_short_backtrace::<…> (ADDR)",
        "   [2] graph_mono::main (ADDR)",
        "   [3] graph_mono::apply::<…> (ADDR and other instantiations)",
        "   [4] graph_mono::leaf (ADDR)"], "the backtraces of leaf")
