#!/bin/sh
# The cost of following objects loaded later (the loader's debugger hook):
# N cycles of dlopen + one instrumented call + dlclose of a one-function
# library with no dependencies (tests/fixtures/beh_loader.c, beh_churn.c),
# untraced and under record with each writer mode. Prints wall seconds per
# run and microseconds per cycle.
#
#   sh bench/loader_churn.sh [N]      (default 2000)
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SFTRACE="${SFTRACE:-$ROOT/build/sftrace}"
[ -x "$SFTRACE" ] || make -C "$ROOT" -j2 all >/dev/null
N="${1:-2000}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
XRAY="-O2 -g -fxray-instrument -fxray-instruction-threshold=1"
clang $XRAY -fPIC -shared -nostdlib -o "$TMP/libchurn.so" "$ROOT/tests/fixtures/beh_churn.c"
clang $XRAY -o "$TMP/loader" "$ROOT/tests/fixtures/beh_loader.c" -ldl
now() { date +%s.%N; }
row() {
	t0=$(now)
	"$@" >/dev/null 2>&1
	t1=$(now)
	echo "$t0 $t1" | awk -v n="$N" -v what="$LABEL" '{ s = $2 - $1; printf "%-14s %7.2f s %8.1f us/cycle\n", what, s, s * 1e6 / n }'
}
echo "dlopen/dlclose churn, $N cycles"
LABEL=untraced row "$TMP/loader" churn "$N" "$TMP/libchurn.so"
for w in sync thread; do
	rm -f "$TMP/sf.log"
	LABEL="record $w" row "$SFTRACE" record -q --writer "$w" -o "$TMP/sf.log" -- "$TMP/loader" churn "$N" "$TMP/libchurn.so"
done
