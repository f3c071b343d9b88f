#!/bin/sh
# What an unwinding landing costs under the tracer (docs/DESIGN.md,
# Unwinding): the reliability fixtures run ITER longjmps, C++ throws and
# Rust panics, each over DEPTH+1 instrumented frames, untraced and traced;
# prints user+system CPU per iteration (median of RUNS). The C++ throw
# lands DEPTH+2 times (a cleanup pad per frame, then the catch).
#
#   sh bench/unwind_cost.sh [ITER] [DEPTH] [RUNS]
#   LIB=/other/libsftrace.so sh bench/unwind_cost.sh   # compare another runtime
set -eu
cd "$(dirname "$0")/.."
ITER=${1:-20000}
DEPTH=${2:-20}
RUNS=${3:-5}
make -s all
LIB=${LIB:-$PWD/build/libsftrace.so}
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-unwindbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
X="-O2 -g -fxray-instrument -fxray-instruction-threshold=1"
clang $X -o "$W/longjmp" tests/fixtures/unwind_longjmp.c
clang++ $X -o "$W/cxx" tests/fixtures/unwind_cxx.cc
RS=""
if RUSTC_BOOTSTRAP=1 rustc -O -Zinstrument-xray=always -o "$W/panic" tests/fixtures/unwind_panic.rs 2>/dev/null; then
	RS=panic
fi
cpu_us() { # median CPU microseconds per iteration of "$@"
	for r in $(seq "$RUNS"); do
		rm -f "$W/sf.log"
		/usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1
	done | awk -v it="$ITER" '{ print ($1 + $2) * 1e6 / it }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
printf '%-8s %12s %12s   (us of CPU per iteration, median of %s)\n' case untraced traced "$RUNS"
for c in longjmp cxx $RS; do
	u=$(cpu_us "$W/$c" "$ITER" "$DEPTH")
	t=$(cpu_us env LD_PRELOAD="$LIB" SFTRACE_OUTPUT_FILE="$W/sf.log" SFTRACE_WRITER=sync "$W/$c" "$ITER" "$DEPTH")
	printf '%-8s %12s %12s\n' "$c" "$u" "$t"
done
