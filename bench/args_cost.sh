#!/bin/sh
# record -A/-R's cost (issue 29). bench/args_cost.c makes N calls of one
# function with two int arguments; each row is the median wall time of RUNS
# runs, and ns per call over the untraced run:
#   - other, traced, with and without -A/-R naming add: an unnamed function
#     must cost the same (the named one's sleds alone change);
#   - add, traced plainly and with -A 'add@arg1,arg2' -R 'add@retval': the
#     difference is the price of the values (target: at most 40 ns a call);
#   - uftrace record -A/-R on the same source built with -pg, and without.
#
#   sh bench/args_cost.sh [N] [RUNS]
set -eu
cd "$(dirname "$0")/.."
N=${1:-2000000}
RUNS=${2:-5}
make -s all
SFT="$PWD/build/sftrace"
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-argsbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps -o "$W/xray" bench/args_cost.c
gcc -O2 -g -pg -o "$W/pg" bench/args_cost.c

median_ms() { # cmd...: median wall time of RUNS runs, in ms
	for i in $(seq "$RUNS"); do
		s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N)
		echo $(( (e - s) / 1000 ))
	done | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}
SPEC="-A add@arg1,arg2 -R add@retval"
rec() { rm -rf "$W/t"; "$SFT" record -q "$@" -o "$W/t/sf.log" -- "$W/xray" "$WHICH" "$N"; }
urec() { rm -rf "$W/u"; uftrace record --force -d "$W/u" "$@" "$W/pg" "$WHICH" "$N"; }

WHICH=0
base=$(median_ms "$W/xray" 0 "$N")
per() { awk -v t="$1" -v b="$base" -v n="$N" 'BEGIN {printf "%.1f", (t - b) * 1e6 / n}'; }
printf '%-44s %10s %12s\n' "run ($N calls)" "ms" "ns/call"
printf '%-44s %10s %12s\n' "untraced" "$base" "-"
WHICH=1; t=$(median_ms rec); printf '%-44s %10s %12s\n' "other, traced" "$t" "$(per "$t")"
WHICH=1; t=$(median_ms rec $SPEC); printf '%-44s %10s %12s\n' "other, traced, -A/-R on add" "$t" "$(per "$t")"
WHICH=0; t=$(median_ms rec); printf '%-44s %10s %12s\n' "add, traced" "$t" "$(per "$t")"
WHICH=0; t=$(median_ms rec $SPEC); printf '%-44s %10s %12s\n' "add, traced, -A add@arg1,arg2 -R add@retval" "$t" "$(per "$t")"
if command -v uftrace >/dev/null; then
	WHICH=0; t=$(median_ms urec); printf '%-44s %10s %12s\n' "add, uftrace record (-pg)" "$t" "$(per "$t")"
	WHICH=0; t=$(median_ms urec -A add@arg1,arg2 -R add@retval)
	printf '%-44s %10s %12s\n' "add, uftrace record -A/-R (-pg)" "$t" "$(per "$t")"
fi
