"""A minimal, independent reader of sftrace logs for the benchmarks.

It counts events (by kind and by function id) and reads the object table and
the header's patch counters. It exists so the benchmarks can check event
counts without depending on the CLI, and cross-check the CLI when it is
there. Offsets come from bench/build/sflog_layout (compiled from
src/format/sflog.h), never typed in here.
"""
import array
import collections
import struct
import subprocess

KIND_NAMES = {1: "ENTRY", 2: "EXIT", 3: "TAIL"}


def load_layout(exe):
    """Runs the sflog_layout helper: {"hdr.patch_ns": 112, ...}."""
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    return {k: int(v) for k, v in (line.split() for line in out.splitlines())}


def read_header_u64(path, L, field):
    with open(path, "rb") as f:
        head = f.read(L["header_size"])
    return struct.unpack_from("<Q", head, L["hdr." + field])[0]


def _events(payload, n, L, stop_at_zero):
    """Function ids and kinds of the first n events of payload (uint32 arrays)."""
    a = array.array("I")
    a.frombytes(payload[: n * L["sizeof.event"]])
    ids, kinds = a[2::4], a[3::4]
    if stop_at_zero:
        # A slot's valid events end at the first all-zero record (kind 0).
        try:
            end = kinds.index(0)
            ids, kinds = ids[:end], kinds[:end]
        except ValueError:
            pass
    return ids, kinds


def scan(path, L, per_function=False):
    """Walks the chunks of one log. Returns a dict:
    kinds: Counter kind -> events; entries: Counter func_id -> ENTRY events
    (if per_function); objects: list of (path, first_id, [addresses])."""
    with open(path, "rb") as f:
        data = f.read()
    ev = L["sizeof.event"]
    chdr = L["sizeof.chunk"]
    kinds = collections.Counter()
    entries = collections.Counter()
    objects = []
    data_batches = set()
    slots = []
    off = L["header_size"]
    zero16 = bytes(16)
    while off + chdr <= len(data):
        if data[off:off + 16] == zero16:
            off += 16
            continue
        magic = struct.unpack_from("<I", data, off)[0]
        ctype = struct.unpack_from("<H", data, off + L["chunk.type"])[0]
        size = struct.unpack_from("<I", data, off + L["chunk.size"])[0]
        count = struct.unpack_from("<I", data, off + L["chunk.count"])[0]
        serial = struct.unpack_from("<Q", data, off + L["chunk.thread_serial"])[0]
        seq = struct.unpack_from("<I", data, off + L["chunk.seq"])[0]
        if magic != L["chunk.magic"] or size < chdr or size % 16:
            off += 16  # damage: resynchronise on the next 16-byte unit
            continue
        payload = data[off + chdr: off + size]
        if ctype == L["type.data"]:
            data_batches.add((serial, seq))
            ids, ks = _events(payload, count, L, stop_at_zero=False)
            _count(ids, ks, kinds, entries, per_function)
        elif ctype == L["type.slot"]:
            slots.append((serial, seq, payload))
        elif ctype == L["type.object"]:
            first_id = struct.unpack_from("<I", payload, L["object.first_id"])[0]
            plen = struct.unpack_from("<H", payload, L["object.path_len"])[0]
            po = L["sizeof.object"]
            opath = payload[po: po + plen].decode()
            ao = po + (plen + 7) // 8 * 8
            addrs = list(struct.unpack_from("<%dQ" % count, payload, ao))
            objects.append((opath, first_id, addrs))
        off += size
    for serial, seq, payload in slots:
        if serial == 0 or (serial, seq) in data_batches:
            continue  # free slot, or a batch already handed off as DATA
        ids, ks = _events(payload, len(payload) // ev, L, stop_at_zero=True)
        _count(ids, ks, kinds, entries, per_function)
    kinds.pop(0, None)  # zero records inside DATA chunks are holes, not events
    return {"kinds": kinds, "entries": entries, "objects": objects}


def _count(ids, ks, kinds, entries, per_function):
    kinds.update(ks)
    if per_function:
        entries.update(i for i, k in zip(ids, ks) if k == 1)


def function_names(objects):
    """func id -> symbol name, from each object's function addresses and nm."""
    names = {}
    for opath, first_id, addrs in objects:
        out = subprocess.run(["nm", "--defined-only", opath], capture_output=True, text=True).stdout
        by_addr = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                by_addr.setdefault(int(parts[0], 16), parts[2])
        for i, a in enumerate(addrs):
            names[first_id + i] = by_addr.get(a, "%s+0x%x" % (opath, a))
    return names
