#!/bin/sh
# The uftrace views' speed: `replay` to a file, `graph` and `report` on one
# recording of N outer calls, each making 9 leaf calls (10N frames, 20N
# events; default N=500000: 10M events). Prints seconds and peak RSS each.
#   bench/views_speed.sh [N]
set -eu
N=${1:-500000}
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
