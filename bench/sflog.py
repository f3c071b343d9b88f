"""A minimal, independent reader of sftrace logs for the benchmarks.

It counts events (by kind and by function id) and reads the object table and
the header's patch counters, for the format version sflog_layout was built
with (8-byte events whose word is the function id shifted left by the kind
bits, or'ed with the kind; since version 4 also packed DATA chunks, decoded
here from docs/FORMAT.md alone), refusing logs of any other version.
It exists so the benchmarks can check event
counts without depending on the CLI, and cross-check the CLI when it is
there. Offsets come from bench/build/sflog_layout (compiled from
src/format/sflog.h), never typed in here.
"""
import array
import collections
import struct
import subprocess

KIND_NAMES = {1: "ENTRY", 2: "EXIT", 3: "TAIL", 15: "TAIL>ENTRY"}
TAIL_ENTRY = 15  # a tail call whose jump lands on a traced entry (format version 5)


def load_layout(exe):
    """Runs the sflog_layout helper: {"hdr.patch_ns": 112, ...}."""
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    return {k: int(v) for k, v in (line.split() for line in out.splitlines())}


def read_header_u64(path, L, field):
    with open(path, "rb") as f:
        head = f.read(L["header_size"])
    return struct.unpack_from("<Q", head, L["hdr." + field])[0]


def _formats(L):
    """Lookup tables indexed by the low byte of an event's word (the kind is
    its low event.kind_bits bits): the kind, and 1 for allocation kinds."""
    bits = L["event.kind_bits"]
    assert bits <= 8, "the kind must fit in the word's low byte"
    mask = (1 << bits) - 1
    first, last = L["kind.alloc_first"], L["kind.alloc_last"]
    return {"kind": bytes(b & mask for b in range(256)),
            "alloc": bytes(first <= b & mask <= last for b in range(256)),
            "ext": L["sizeof.event_ext"] // L["sizeof.event"]}


def _events(payload, n, L, fmt, stop_at_zero):
    """Words (uint32 array) and kinds (bytes) of the events among the first n
    records of payload. An allocation event is followed by fmt["ext"]
    payload records, which are not events (where an event has its word, they
    hold the high half of a size or pointer, often zero). In a slot
    (stop_at_zero) the events end at the first zero word; in a DATA chunk a
    zero word is a hole, returned with kind 0. Runs of events without
    allocations are sliced whole, so a big log costs C loops, not Python ones."""
    ev, wo = L["sizeof.event"], L["event.word"]
    n = min(n, len(payload) // ev)
    recs = payload[: n * ev]
    a = array.array("I")
    a.frombytes(recs)
    words = a[wo // 4:: ev // 4]
    low = recs[wo:: ev]  # the low byte of each word (little-endian)
    kinds, allocs = low.translate(fmt["kind"]), low.translate(fmt["alloc"])
    out_words, out_kinds = array.array("I"), bytearray()

    def take(i, j):
        out_words.extend(words[i:j])
        out_kinds.extend(kinds[i:j])

    pos = 0
    while pos < n:
        at = allocs.find(1, pos)
        end = n if at < 0 else at  # single-record events up to here
        if stop_at_zero:
            try:
                zero = words.index(0, pos, end)
                take(pos, zero)
                break
            except ValueError:
                pass
        take(pos, end)
        if at < 0:
            break
        if at + 1 + fmt["ext"] <= n:
            take(at, at + 1)
            pos = at + 1 + fmt["ext"]
        else:
            pos = at + 1  # its payload is cut off: not an event (the CLI skips it as corrupt)
    return out_words, bytes(out_kinds)


# Packed chunks (docs/FORMAT.md, "Packed DATA chunks"): op -> kind.
PK_RAW, PK_ENTRY_ID, PK_UNWIND, PK_MRU_FIRST, PK_MRU = 7, 5, 6, 8, 8
PK_KIND = {1: 2, 2: 2, 3: 3, 4: 3, 5: 1, 6: 8}
PAYLOAD_RECORDS = {4: 2, 5: 2, 6: 2, 7: 2, 10: 3, 11: 2, 12: 4}


def _packed(payload, n):
    """Words and kinds of the events among the n records of a packed
    payload. Only what counting needs is tracked: entries' ids (the table
    of entered ids); exits are counted by kind without their ids."""
    words, ks = array.array("I"), bytearray()
    mru = [0] * PK_MRU
    p, rec, end = 0, 0, len(payload)
    while rec < n and p < end:
        tag = payload[p]
        p += 1
        if tag & 8:  # the rest of the time delta: a LEB128 varint
            while payload[p] & 0x80:
                p += 1
            p += 1
        op = tag >> 4
        operand = 0
        if op == 0:
            break  # bytes never written
        if op in (2, 4, 5, 6):
            shift = 0
            while True:
                b = payload[p]
                p += 1
                operand |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
        rec += 1
        if op == PK_RAW:
            word = struct.unpack_from("<I", payload, p)[0]
            p += 4
            kind = word & 0xF
            np = PAYLOAD_RECORDS.get(kind, 0) if word else 0
            np = min(np, n - rec)
            p += 8 * np
            rec += np
            words.append(word)
            ks.append(kind if word and np == PAYLOAD_RECORDS.get(kind, 0) else 0)
            continue
        if op >= PK_MRU_FIRST:
            operand = mru[op - PK_MRU_FIRST]
        elif op == PK_ENTRY_ID:
            mru[((operand * 0x9E3779B1) & 0xFFFFFFFF) >> 29] = operand
        kind = PK_KIND.get(op, 1)
        if op == 4 and operand == 0:
            kind = 15  # a tail call to a patched entry, of the innermost open entry (id not tracked)
        words.append(operand << 4 | kind)
        ks.append(kind)
    return words, bytes(ks)


def scan(path, L, per_function=False):
    """Walks the chunks of one log. Returns a dict:
    kinds: Counter kind -> events; entries: Counter func_id -> ENTRY events
    (if per_function); objects: list of (path, first_id, [addresses])."""
    with open(path, "rb") as f:
        data = f.read()
    version = struct.unpack_from("<I", data, L["hdr.version"])[0]
    # A run without argument values writes the older version (sflog.h,
    # SF_VERSION_NO_ARGS); this reader does not decode values-only ARGS events.
    if version not in (L["format.version"], L["format.version_no_args"]):
        raise ValueError(f"{path}: log format version {version}; this reader reads versions "
                         f"{L['format.version_no_args']} and {L['format.version']}")
    fmt = _formats(L)
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
            # count: 8-byte records, allocation payloads included
            words, ks = _events(payload, count, L, fmt, stop_at_zero=False)
            _count(words, ks, L, kinds, entries, per_function)
        elif ctype == L.get("type.packed"):
            data_batches.add((serial, seq))
            nbytes = struct.unpack_from("<Q", data, off + L["chunk.reserved"])[0]
            words, ks = _packed(payload[:nbytes], count)
            _count(words, ks, L, kinds, entries, per_function)
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
        words, ks = _events(payload, len(payload) // ev, L, fmt, stop_at_zero=True)
        _count(words, ks, L, kinds, entries, per_function)
    # Holes (kind 0) and unknown kinds in DATA chunks are not events.
    for k in [k for k in kinds if not (1 <= k <= L["kind.alloc_last"] or k == TAIL_ENTRY)]:
        del kinds[k]
    return {"kinds": kinds, "entries": entries, "objects": objects}


def _count(words, ks, L, kinds, entries, per_function):
    kinds.update(ks)
    if per_function:
        bits, entry = L["event.kind_bits"], L["kind.entry"]
        entries.update(w >> bits for w, k in zip(words, ks) if k == entry)


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
