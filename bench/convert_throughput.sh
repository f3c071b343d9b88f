#!/bin/sh
# Conversion throughput and memory: log -> Perfetto (.pb.gz) and -> Parquet
# (pola), on a recursive-fib trace at two sizes (10x apart, to show memory
# stays flat), against the peers' converters on traces of the same program:
# `uftrace dump --chrome` and `llvm-xray convert --output-format=trace_event`.
#
#   sh bench/convert_throughput.sh [FIB_N]      (default 30: about 2.7M events; +5 = 11x)
#
# Prints events/s and peak RSS for each. The machine is a shared 2-core VM:
# numbers move by 20-30% between runs; compare ratios within one run.
set -eu
cd "$(dirname "$0")/.."
N=${1:-30}
make -s all
SFT="$PWD/build/sftrace"
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-convbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
# The recording benchmark's fixture (bench/fib.c).
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls -Ibench -o "$W/fib" bench/fib.c
calls() { python3 -c "
import functools,sys
sys.setrecursionlimit(100000)
@functools.lru_cache(None)
def c(n): return 1 if n < 2 else 1 + c(n-1) + c(n-2)
print(c($1))"; }

measure() { # label events cmd...
	label=$1; ev=$2; shift 2
	/usr/bin/time -f "%e %M" -o "$W/time" "$@" >/dev/null 2>"$W/err" || { echo "$label: FAILED"; cat "$W/err"; return; }
	set -- $(cat "$W/time")
	python3 -c "print(f'  {\"$label\":<34} {$1:7.2f} s  {$ev/max($1,1e-9)/1e6:7.1f} M events/s  peak RSS {$2/1024:7.1f} MiB')"
}

for n in $N $((N + 5)); do
	ev=$((2 * $(calls $n)))
	echo "fib($n): $ev events"
	rm -rf "$W/t"
	"$SFT" record -q -o "$W/t/sf.log" -- "$W/fib" $n >/dev/null
	echo "  log: $(stat -c %s "$W/t/sf.log") bytes ($(( $(stat -c %s "$W/t/sf.log") / ev )) B/event)"
	measure "sftrace convert -> .pb.gz" $ev "$SFT" convert -q "$W/t/sf.log" -o "$W/t/sf.pb.gz"
	measure "sftrace convert --type pola" $ev "$SFT" convert -q --type pola "$W/t/sf.log" -o "$W/t/sf.pola"
	echo "  outputs: pb.gz $(stat -c %s "$W/t/sf.pb.gz") B, pola $(stat -c %s "$W/t/sf.pola") B ($(python3 -c "print(f'{$(stat -c %s "$W/t/sf.pola")/$ev:.2f}')") B/event)"
	if command -v uftrace >/dev/null 2>&1 && [ $n = $N ]; then
		rm -rf "$W/u"
		uftrace record --force -P . -d "$W/u" "$W/fib" $n >/dev/null 2>&1 || true
		measure "uftrace dump --chrome" $ev uftrace dump --chrome -d "$W/u"
	fi
	if command -v llvm-xray >/dev/null 2>&1 && [ $n = $N ]; then
		rm -f "$W"/xray-log.*
		(cd "$W" && XRAY_OPTIONS="patch_premain=true xray_mode=xray-basic verbosity=0 xray_logfile_base=$W/xray-log." ./fib $n >/dev/null)
		measure "llvm-xray convert trace_event" $ev llvm-xray convert --symbolize --instr_map="$W/fib" \
			--output-format=trace_event -o "$W/xray.json" "$W"/xray-log.*
	fi
done
