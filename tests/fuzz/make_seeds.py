#!/usr/bin/python3
"""Regenerates the fuzzers' seed corpus (tests/fuzz/corpus/).

Log seeds are real recordings of small fixtures, made compact so the
fuzzer's inputs stay a few KiB: zero padding between chunks is dropped, free
slots are dropped, and each live SLOT chunk is cut after its last event
(its size and capacity fields say so). Every seed still reads without a
warning. Two more are derived: one with allocation events and an UNLOAD
chunk added by hand (no fixture uses the setup ABI), and one cut in the
middle of an event. Filter seeds are hand-written files plus one written
by `sftrace filter`.

    SFTRACE_BUILD=build-rel python3 tests/fuzz/make_seeds.py
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import sfkit  # noqa: E402

CORPUS = os.path.join(HERE, "corpus")
CHUNK = struct.Struct("<IHHIIQIIQQ16sQQ")  # struct sf_chunk, 80 bytes (v2)
CHDR = CHUNK.size
EVENT = struct.Struct("<II")  # struct sf_event: time_lo, word = func_id << 4 | kind
KIND_MASK = 0xF
EXT_RECORDS = 2  # an allocation event's sf_event_ext payload: the next two records
HEADER = 4096
START_TSC = 40  # offset of sf_header.start_tsc


def chunks(data):
    p = HEADER
    while p + 16 <= len(data):
        if data[p:p + 16] == bytes(16):
            p += 16
            continue
        magic, typ, flags, size, count, serial, tid, seq, tsc, mono, name, base, _ = CHUNK.unpack_from(data, p)
        assert magic == 0x4b434653 and size >= CHDR and size % 16 == 0, f"bad chunk at {p}"
        yield p, typ, size, count, serial, data[p:p + size]
        p += size


def slot_records(raw):
    """Records a slot's events use: up to the first zero word, an allocation
    event's payload records included (their word position is not a word)."""
    n, cap = 0, (len(raw) - CHDR) // EVENT.size
    while n < cap:
        _, word = EVENT.unpack_from(raw, CHDR + EVENT.size * n)
        if word == 0:
            break
        n += 1 + (EXT_RECORDS if 4 <= word & KIND_MASK <= 7 else 0)
    return min(n, cap)


def compact(data):
    out = bytearray(data[:HEADER])
    for off, typ, size, count, serial, raw in chunks(data):
        raw = bytearray(raw)
        if typ == 4:  # SLOT
            if serial == 0:
                continue
            n = slot_records(raw)
            raw = raw[:CHDR + EVENT.size * n]
            raw += bytes(-len(raw) % 16)  # chunk sizes stay multiples of 16
            struct.pack_into("<II", raw, 8, len(raw), n)
        out += raw
    return bytes(out)


def chunk(typ, payload, count=0, serial=0, tid=0, seq=0, base=0):
    size = CHDR + (len(payload) + 15) // 16 * 16
    hdr = CHUNK.pack(0x4b434653, typ, 0, size, count, serial, tid, seq, 0, 0, b"seed", base, 0)
    return hdr + payload + bytes(size - CHDR - len(payload))


def with_alloc_and_unload(data):
    """Adds a DATA chunk of allocation events (each followed by its
    sf_event_ext payload, two records) for a new thread, and an UNLOAD of
    object 0. The batch's base is its first event's time, as the runtime
    picks it; the times straddle a multiple of 2^32 so time_lo wraps."""
    start_tsc = struct.unpack_from("<Q", data, START_TSC)[0]
    base = (start_tsc | 0xFFFFFFFF) - 15  # after the start, 16 ticks below a wrap of time_lo
    recs, t = b"", base
    for kind, size, ptr in ((4, 64, 0x1000), (6, 128, 0x2000), (7, 64, 0x1000), (5, 128, 0x2000)):
        recs += EVENT.pack(t & 0xFFFFFFFF, kind) + struct.pack("<QQ", size | (3 << 48), ptr)
        t += 10
    out = data + chunk(3, recs, count=len(recs) // EVENT.size, serial=99, tid=4242, seq=0, base=base)
    return out + chunk(2, struct.pack("<II", 0, 0))


def record_seed(name, cmd, env=None):
    _, log = sfkit.record(cmd, env=env, check_rc=None)
    data = compact(open(log, "rb").read())
    with open(os.path.join(CORPUS, "log_reader", name), "wb") as f:
        f.write(data)
    return data


def main():
    os.makedirs(os.path.join(CORPUS, "log_reader"), exist_ok=True)
    os.makedirs(os.path.join(CORPUS, "filter_file"), exist_ok=True)
    threads = sfkit.build_c("stress_threads", ["stress_threads.c"], libs=["-lpthread"])
    ext = sfkit.build_c("stress_exit_thread", ["stress_exit_thread.c"], libs=["-lpthread"])
    lj = sfkit.build_c("unwind_longjmp", ["unwind_longjmp.c"])
    raw = {"SFTRACE_ENCODING": "raw"}  # version-3 style DATA chunks
    base = record_seed("threads.sflog", [threads, "short", "3", "2"], env=raw)
    record_seed("threads-monotonic.sflog", [threads, "short", "2", "1"], env={"SFTRACE_CLOCK": "monotonic", **raw})
    record_seed("exit-thread.sflog", [ext, "3"], env=raw)
    record_seed("longjmp.sflog", [lj, "2", "3"], env=raw)
    # packed DATA chunks (format version 4), the default
    record_seed("packed-threads.sflog", [threads, "short", "3", "2"])
    with open(os.path.join(CORPUS, "log_reader", "alloc-unload.sflog"), "wb") as f:
        f.write(with_alloc_and_unload(base))
    with open(os.path.join(CORPUS, "log_reader", "cut-mid-event.sflog"), "wb") as f:
        f.write(base[:len(base) - 20])  # in the middle of an event

    filters = {
        "select.filter": "sftrace-filter 1\nmode select\nunlisted skip\n"
                         "object 8f3a00c1 /abs/path/prog\n0x1a2b0 my_crate::resolve\n0x1a410 normalize # c\n",
        "within.filter": "# comment\nsftrace-filter 1\nmode within   # inline\nunlisted trace\n\n"
                         "object - /abs/lib/libplugin.so\n0x2210 plugin_entry\n0X10 {closure#0}\n",
        "minimal.filter": "sftrace-filter 1\n",
    }
    for name, text in filters.items():
        with open(os.path.join(CORPUS, "filter_file", name), "w") as f:
            f.write(text)
    out = os.path.join(sfkit.tmpdir(), "made.filter")
    sfkit.run([sfkit.SFTRACE, "filter", "-p", threads, "-r", "tick|sleaf", "-o", out])
    with open(out) as src, open(os.path.join(CORPUS, "filter_file", "made-by-filter.filter"), "w") as f:
        f.write(src.read().replace(threads, "/fixtures/stress_threads"))
    for sub in ("log_reader", "filter_file"):
        for fn in sorted(os.listdir(os.path.join(CORPUS, sub))):
            print(sub, fn, os.path.getsize(os.path.join(CORPUS, sub, fn)))


if __name__ == "__main__":
    main()
