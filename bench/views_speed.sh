#!/bin/sh
# The uftrace views' speed: `replay` to a file, `graph` and `report` on one
# recording of N outer calls, each making 9 leaf calls (10N frames, 20N
# events; default N=500000: 10M events). Prints seconds and peak RSS each.
# Then the deep shape: `replay` of fib(FIB) (default 32: 14.1M events,
# depth up to 32, long indentation; most leaves marked uncertain) to a
# file and to /dev/null, wall and CPU (user + sys) seconds.
#   bench/views_speed.sh [N [FIB]]
set -eu
N=${1:-500000}
FIB=${2:-32}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SF=${SFTRACE:-$ROOT/build/sftrace}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cat > "$D/big.c" <<C
static volatile int sink;
__attribute__((noinline)) void leaf(int i) { sink += i; }
__attribute__((noinline)) void mid(int i) { for (int k = 0; k < 9; k++) leaf(i + k); sink++; }
int main(void) { for (int i = 0; i < $N; i++) mid(i); return 0; }
C
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -o "$D/big" "$D/big.c"
"$SF" record -q -o "$D/sf.log" -- "$D/big"
for cmd in "replay --no-pager" "graph" "graph mid" "report"; do
	/usr/bin/time -f "$cmd: %e s, max RSS %M KB" "$SF" $cmd "$D/sf.log" > "$D/out.txt"
done
echo "events: $((20 * N + 2)), frames: $((10 * N + 1))"
cat > "$D/fib.c" <<C
#include <stdlib.h>
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int c, char **v) { return (int)(fib(atoi(v[1])) & 1) - 1; }
C
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls -o "$D/fib" "$D/fib.c"
rm -f "$D/sf.log"
"$SF" record -q -o "$D/fib.log" -- "$D/fib" "$FIB" || true
EV=$("$SF" info --format json "$D/fib.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["events"])')
for to in "$D/out.txt" /dev/null; do
	/usr/bin/time -f "replay fib($FIB) > $to: %e s wall, %U + %S s CPU, max RSS %M KB" "$SF" replay --no-pager "$D/fib.log" > "$to"
done
echo "fib($FIB) events: $EV, replay text: $(wc -c < "$D/out.txt") bytes"
