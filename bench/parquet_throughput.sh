#!/bin/sh
# `sftrace convert --type pola` (log -> Parquet): throughput on one core,
# output size and memory, against issue 4's targets: at least 20M events/s,
# at most 4 bytes/event with the default compression on a real trace,
# memory flat as the log grows.
#
#   sh bench/parquet_throughput.sh [FIB_N]        (default 32)
#
# Records a recursive fib at FIB_N-5 and FIB_N (32: 1.3M and 14.1M events,
# 11x apart) and SQLite inserting 10k and 100k rows (about 2.7M and 27M
# events), then converts each log RUNS times pinned to CPU 0 and prints, per
# log: events (rows written), CPU time (user+sys, best and median run),
# events/s by CPU time and by wall time (best run), bytes/event of the
# output (events file + symtab) and peak RSS.
#
# Environment: BUILD (build dir, default build), RUNS (default 5), NO_SQLITE=1
# (fib only), SQLITE_DRIVER (an XRay build of bench/sqlite_driver.c; default
# bench/build/sqlite/drv_nosib if record_overhead.py built it, else it is
# built here from the SQLite amalgamation, fetched with `npm pack
# better-sqlite3@12` if bench/build/sqlite does not have it: a minute or two).
# The machine is a shared VM: wall times move a lot; CPU time is the figure.
set -eu
cd "$(dirname "$0")/.."
N=${1:-32}
RUNS=${RUNS:-5}
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" all >/dev/null
SFT="$PWD/$BUILD/sftrace"
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-pqbench.XXXXXX")
trap 'rm -rf "$W"' EXIT

XRAY="-O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls"
clang $XRAY -Ibench -o "$W/fib" bench/fib.c  # the recording benchmark's fixture

# Rows of a Parquet file: num_rows (field 3) of the footer's FileMetaData,
# read with a minimal Thrift compact-protocol walker.
cat > "$W/rows.py" <<'PY'
import struct, sys
def rows(path):
    with open(path, "rb") as f:
        f.seek(-8, 2)
        n = struct.unpack("<I", f.read(4))[0]
        f.seek(-8 - n, 2)
        b = f.read(n)
    pos = 0
    def varint():
        nonlocal pos
        v = s = 0
        while True:
            c = b[pos]; pos += 1
            v |= (c & 0x7F) << s; s += 7
            if c < 0x80:
                return v
    def skip(t):
        nonlocal pos
        if t in (3, 13):                  # i8; a bool as a list element
            pos += 1
        elif t in (4, 5, 6):
            varint()
        elif t == 7:
            pos += 8
        elif t == 8:
            n = varint(); pos += n
        elif t in (9, 10):
            h = b[pos]; pos += 1
            n = h >> 4 if h >> 4 != 15 else varint()
            for _ in range(n):
                skip(13 if (h & 15) in (1, 2) else h & 15)
        elif t == 12:
            walk(None)
    def walk(want):
        nonlocal pos
        fid = 0
        while True:
            h = b[pos]; pos += 1
            if h == 0:
                return None
            t = h & 15
            if h >> 4:
                fid += h >> 4
            else:                         # long form: the id follows, zigzag
                v = varint(); fid = (v >> 1) ^ -(v & 1)
            if want is not None and fid == want and t == 6:
                v = varint()
                return (v >> 1) ^ -(v & 1)
            if t not in (1, 2):
                skip(t)
    return walk(3)
print(rows(sys.argv[1]))
PY

# convert LABEL LOG: RUNS conversions pinned to CPU 0, one line of results.
# CPU time and peak RSS come from wait4 (microseconds; /usr/bin/time rounds
# to 10 ms).
convert() {
	python3 - "$1" "$2" "$W" "$SFT" "$RUNS" <<'PY'
import os, statistics, subprocess, sys, time
label, log, w, sft, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
out = os.path.join(w, "out.pola")
res = []
for _ in range(runs):
    for f in (out, out + ".symtab"):
        if os.path.exists(f):
            os.remove(f)
    t0 = time.monotonic()
    p = subprocess.Popen(["taskset", "-c", "0", sft, "convert", "-q", "--type", "pola", log, "-o", out])
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        sys.exit(f"{label}: convert failed")
    res.append((ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss / 1024))
rows = int(subprocess.run(["python3", os.path.join(w, "rows.py"), out], capture_output=True,
                          text=True, check=True).stdout)
size = os.path.getsize(out) + os.path.getsize(out + ".symtab")
res.sort()
best, wall, _ = res[0]
med = statistics.median(c for c, _, _ in res)
rss = max(r for _, _, r in res)
print(f"  {label:<20} {rows:>9} ev  log {os.path.getsize(log) / rows:4.1f} B/ev"
      f"  cpu {best:6.3f} s (median {med:6.3f})  {rows / best / 1e6:5.1f} M ev/s cpu"
      f"  {rows / wall / 1e6:5.1f} M ev/s wall  {size / rows:5.3f} B/ev  peak RSS {rss:5.1f} MiB",
      flush=True)
PY
}

echo "sftrace convert --type pola, $RUNS runs each on CPU 0 ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
for n in $((N - 5)) "$N"; do
	rm -rf "$W/t"
	"$SFT" record -q -o "$W/t/sf.log" -- "$W/fib" "$n" >/dev/null
	convert "fib($n)" "$W/t/sf.log"
done

sqlite_driver() {
	if [ -n "${SQLITE_DRIVER:-}" ]; then
		echo "$SQLITE_DRIVER"
		return
	fi
	if [ -x bench/build/sqlite/drv_nosib ]; then
		echo "$PWD/bench/build/sqlite/drv_nosib"
		return
	fi
	src=bench/build/sqlite/package/deps/sqlite3
	if [ ! -f "$src/sqlite3.c" ]; then
		echo "  fetching the SQLite amalgamation (npm pack better-sqlite3@12)" >&2
		(cd "$W" && npm pack better-sqlite3@12 >/dev/null 2>&1 &&
			tar xzf better-sqlite3-*.tgz package/deps/sqlite3/sqlite3.c package/deps/sqlite3/sqlite3.h) ||
			return 1
		src="$W/package/deps/sqlite3"
	fi
	echo "  building SQLite with XRay sleds (a minute or two)" >&2
	clang $XRAY -I"$src" -Ibench -o "$W/drv_nosib" bench/sqlite_driver.c "$src/sqlite3.c" \
		-lpthread -ldl -lm >&2 || return 1
	echo "$W/drv_nosib"
}

if [ "${NO_SQLITE:-0}" != 1 ]; then
	if drv=$(sqlite_driver); then
		for rows in 10000 100000; do
			rm -rf "$W/t"
			"$SFT" record -q -o "$W/t/sf.log" -- "$drv" "$rows" >/dev/null
			convert "sqlite($rows rows)" "$W/t/sf.log"
		done
	else
		echo "  sqlite: no driver (set SQLITE_DRIVER, or NO_SQLITE=1)"
	fi
fi
