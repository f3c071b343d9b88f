#!/bin/sh
# record -A/-R's cost (issue 29). bench/args_cost.c makes N calls of one
# function with two int arguments; each row is the median wall time of RUNS
# runs, and ns per call over the untraced run:
#   - other, traced, with and without -A/-R naming add: an unnamed function
#     must cost the same (the named one's sleds alone change);
#   - add, traced plainly and with -A 'add@arg1,arg2' -R 'add@retval': the
#     difference is the price of the values (target: at most 40 ns a call);
#   - uftrace record -A/-R on the same source built with -pg, and without.
# The last column is the loop's CPU time on the program's own thread
# (median, ns per call over the untraced loop): the tracer's writer thread
# and the machine's other load left out, so it is the steadier one on a
# busy machine.
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

median_ms() { # cmd...: median wall time of RUNS runs, in ms; the loop's thread CPU ns in $W/cpu
	: >"$W/cpu"
	for i in $(seq "$RUNS"); do
		s=$(date +%s%N); "$@" >/dev/null 2>"$W/err"; e=$(date +%s%N)
		sed -n 's/^loop thread cpu ns //p' "$W/err" >>"$W/cpu"
		echo $(( (e - s) / 1000 ))
	done | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}
cpu_med() { sort -n "$W/cpu" | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]}'; }
SPEC="-A add@arg1,arg2 -R add@retval"
rec() { rm -rf "$W/t"; "$SFT" record -q "$@" -o "$W/t/sf.log" -- "$W/xray" "$WHICH" "$N"; }
urec() { rm -rf "$W/u"; uftrace record --force -d "$W/u" "$@" "$W/pg" "$WHICH" "$N"; }

WHICH=0
base=$(median_ms "$W/xray" 0 "$N")
cbase=$(cpu_med)
per() { awk -v t="$1" -v b="$base" -v n="$N" 'BEGIN {printf "%.1f", (t - b) * 1e6 / n}'; }
cper() { awk -v t="$(cpu_med)" -v b="$cbase" -v n="$N" 'BEGIN {printf "%.1f", (t - b) / n}'; }
row() { printf '%-44s %10s %12s %16s\n' "$1" "$2" "$(per "$2")" "$(cper)"; }
printf '%-44s %10s %12s %16s\n' "run ($N calls)" "ms" "ns/call" "thread ns/call"
printf '%-44s %10s %12s %16s\n' "untraced" "$base" "-" "-"
WHICH=1; t=$(median_ms rec); row "other, traced" "$t"
WHICH=1; t=$(median_ms rec $SPEC); row "other, traced, -A/-R on add" "$t"
WHICH=0; t=$(median_ms rec); row "add, traced" "$t"
WHICH=0; t=$(median_ms rec $SPEC); row "add, traced, -A add@arg1,arg2 -R add@retval" "$t"
if command -v uftrace >/dev/null; then
	WHICH=0; t=$(median_ms urec); row "add, uftrace record (-pg)" "$t"
	WHICH=0; t=$(median_ms urec -A add@arg1,arg2 -R add@retval); row "add, uftrace record -A/-R (-pg)" "$t"
fi
