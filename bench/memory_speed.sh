#!/bin/sh
# `sftrace memory` speed on one large --alloc log, per grouping, against
# another build's sftrace (e.g. the tree before rows were grouped by line).
#   bench/memory_speed.sh [-n PAIRS] [-r RUNS] [-m MODE] [OTHER_SFTRACE]
# Records `alloc_bench MODE PAIRS` (bench/alloc_bench.c; default flat
# 5000000: 5M allocations and 5M frees, 10M heap events; pairs adds a
# traced call around each pair) with --alloc, then runs `memory -n 3`
# RUNS times (default 5) for each of --group-by line (the default),
# function and stack, and OTHER_SFTRACE's default, interleaved. Prints the
# median and the range of CPU time (user+sys), M events/s of CPU time
# at the median, and max RSS. On a shared machine CPU time is the figure
# to compare (wall time includes waiting for a core).
set -eu
PAIRS=5000000 RUNS=5 MODE=flat
while getopts n:r:m: o; do
	case $o in
	n) PAIRS=$OPTARG ;;
	r) RUNS=$OPTARG ;;
	m) MODE=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
OTHER=${1:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SF=${SFTRACE:-$ROOT/build/sftrace}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
clang -O2 -g -fno-builtin -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps \
	-o "$D/alloc_bench" "$ROOT/bench/alloc_bench.c"
"$SF" record -q --force --alloc -o "$D/big.log" -- "$D/alloc_bench" "$MODE" "$PAIRS" > /dev/null
EVENTS=$((2 * PAIRS))
[ "$MODE" = pairs ] && EVENTS=$((4 * PAIRS))
echo "log: alloc_bench $MODE $PAIRS, $EVENTS events, $(($(stat -c %s "$D/big.log") / 1000000)) MB"
variants="line function stack"
[ -n "$OTHER" ] && variants="$variants other"
for r in $(seq "$RUNS"); do
	for v in $variants; do
		if [ "$v" = other ]; then
			cmd="$OTHER memory -n 3 $D/big.log"
		else
			cmd="$SF memory -n 3 --group-by $v $D/big.log"
		fi
		/usr/bin/time -f "%U %S %M" -a -o "$D/$v.times" $cmd > /dev/null
	done
done
for v in $variants; do
	awk '{ print $1 + $2, $3 }' "$D/$v.times" | sort -n | awk -v v="$v" -v ev="$EVENTS" '
		{ t[NR] = $1; m = $2 > m ? $2 : m }
		END {
			med = t[int((NR + 1) / 2)]
			printf "  %-9s CPU %.2f s (%.2f-%.2f), %.1f M events/s, max RSS %.1f MiB\n",
				v, med, t[1], t[NR], ev / med / 1e6, m / 1024
		}'
done
[ -n "$OTHER" ] && echo "  (other: $OTHER)"
exit 0
