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
CHUNK = struct.Struct("<IHHIIQIIQQ16s")  # struct sf_chunk, 64 bytes
HEADER = 4096


def chunks(data):
    p = HEADER
    while p + 16 <= len(data):
        if data[p:p + 16] == bytes(16):
            p += 16
            continue
        magic, typ, flags, size, count, serial, tid, seq, tsc, mono, name = CHUNK.unpack_from(data, p)
        assert magic == 0x4b434653 and size >= 64 and size % 16 == 0, f"bad chunk at {p}"
        yield p, typ, size, count, serial, data[p:p + size]
        p += size


def compact(data):
    out = bytearray(data[:HEADER])
    for off, typ, size, count, serial, raw in chunks(data):
        raw = bytearray(raw)
        if typ == 4:  # SLOT
            if serial == 0:
                continue
            n = 0
            while 64 + 16 * (n + 1) <= len(raw) and raw[64 + 16 * n:64 + 16 * (n + 1)] != bytes(16):
                n += 1
            raw = raw[:64 + 16 * n]
            struct.pack_into("<II", raw, 8, len(raw), n)
        out += raw
    return bytes(out)


def chunk(typ, payload, count=0, serial=0, tid=0, seq=0):
    size = 64 + (len(payload) + 15) // 16 * 16
    hdr = CHUNK.pack(0x4b434653, typ, 0, size, count, serial, tid, seq, 0, 0, b"seed")
    return hdr + payload + bytes(size - 64 - len(payload))


def with_alloc_and_unload(data):
    """Adds a DATA chunk of allocation events (each followed by its
    sf_event_ext record) for a new thread, and an UNLOAD of object 0."""
    t = struct.unpack_from("<Q", data, 32)[0] + 1000  # start_tsc + a little
    recs = b""
    for kind, size, ptr in ((4, 64, 0x1000), (6, 128, 0x2000), (7, 64, 0x1000), (5, 128, 0x2000)):
        recs += struct.pack("<QII", t, 0, kind) + struct.pack("<QQ", size | (3 << 48), ptr)
        t += 10
    out = data + chunk(3, recs, count=len(recs) // 16, serial=99, tid=4242, seq=0)
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
    base = record_seed("threads.sflog", [threads, "short", "3", "2"])
    record_seed("threads-monotonic.sflog", [threads, "short", "2", "1"], env={"SFTRACE_CLOCK": "monotonic"})
    record_seed("exit-thread.sflog", [ext, "3"])
    record_seed("longjmp.sflog", [lj, "2", "3"])
    with open(os.path.join(CORPUS, "log_reader", "alloc-unload.sflog"), "wb") as f:
        f.write(with_alloc_and_unload(base))
    with open(os.path.join(CORPUS, "log_reader", "cut-mid-event.sflog"), "wb") as f:
        f.write(base[:len(base) - 24])

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
