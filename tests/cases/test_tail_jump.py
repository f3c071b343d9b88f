"""Which jump a tail call took (issue 28, FORMAT.md kind 15): the runtime
marks each tail-call event whose sled's direct jump lands on a traced
entry, and replay/graph mark a tail callee only then. Packed batches carry
the mark (op 4 with id 0); logs written before it (version 4) read as
before.

Runs under tests/run.py."""
import struct

import sfkit


def _replay(log):
    return sfkit.call_column(sfkit.replay_text(log))


def _chunks(data, ctype):
    off, res = 4096, []
    while off + 80 <= len(data):
        if data[off:off + 4] == b"SFCK":
            t, size = struct.unpack_from("<H", data, off + 4)[0], struct.unpack_from("<I", data, off + 8)[0]
            if t == ctype:
                res.append(off)
            off += size
        else:
            off += 16
    return res


def test_tail_marks_exact_through_packed_batches():
    prog = sfkit.build_c("tail_jump_loop", ["tail_jump_loop.c"])
    _, log = sfkit.record([prog], args=["-q"])
    data = open(log, "rb").read()
    sfkit.check(len(_chunks(data, 5)) >= 2, "packed chunks in the log")
    # a(i) odd: a, b (a's callee, marked), b (main's); even: a (strlen), b (main's).
    want = ["main() {"]
    for i in range(6000):
        want.append("  a();")
        if i & 1:
            want.append("  b(); /* tail call from a */")
        want.append("  b();")
    want.append("} /* main */")
    sfkit.eq(_replay(log), want, "replay call column")
    g = sfkit.run([sfkit.SFTRACE, "graph", "--no-pager", "main", log]).stdout
    sfkit.check("(3000) b /* tail call from a */" in g and "(6000) b\n" in g, g)


def test_version_4_log_read_as_before():
    # The same run as an older runtime wrote it: version 4, no features word,
    # kind 3 for every tail call (the slot's raw records). The reader falls
    # back to "a's code can jump to b": both b after a(3) and main's b after
    # a(0) are marked, as before this fix.
    prog = sfkit.build_c("skep28b_tailcond", ["skep28b_tailcond.c"])
    _, log = sfkit.record([prog], args=["-q"])
    data = bytearray(open(log, "rb").read())
    sfkit.eq(struct.unpack_from("<I", data, 8)[0], 5, "version written")
    sfkit.eq(struct.unpack_from("<Q", data, 3360)[0] & 1, 1, "SF_FEAT_TAIL_TARGET written")
    slots = _chunks(data, 4)
    sfkit.eq(len(slots), 1, "one slot")
    words = [struct.unpack_from("<I", data, slots[0] + 80 + 8 * i + 4)[0] for i in range(10)]
    sfkit.eq([w & 15 for w in words], [1, 1, 3, 1, 2, 1, 15, 1, 2, 2], "kinds as recorded")
    sfkit.eq(_replay(log), ["main() {", "  a();", "  b();", "  a();", "  b(); /* tail call from a */",
                            "} /* main */"], "new log")
    for i, w in enumerate(words):
        if w & 15 == 15:
            struct.pack_into("<I", data, slots[0] + 80 + 8 * i + 4, w & ~15 | 3)
    struct.pack_into("<I", data, 8, 4)
    struct.pack_into("<Q", data, 3360, 0)
    old = log + ".v4"
    open(old, "wb").write(data)
    sfkit.eq(_replay(old), ["main() {", "  a();", "  b(); /* tail call from a */", "  a();",
                            "  b(); /* tail call from a */", "} /* main */"], "version-4 log")
