#!/bin/sh
# record -A/-R's cost (issue 29). bench/args_cost.c makes N calls of one
# function with two int arguments; each row is the median wall time of RUNS
# runs, and ns per call over the untraced run:
#   - other, traced, with and without -A/-R naming add: an unnamed function
#     must cost the same (the named one's sleds alone change);
#   - add, traced plainly and with -A 'add@arg1,arg2' -R 'add@retval': the
#     difference is the price of the values (target: at most 40 ns a call);
#   - uftrace record -A/-R on the same source built with -pg, and without;
#   - a summary: named over plain, unnamed with the spec over without, and
#     (when the SQLite amalgamation is at hand, SQLITE_C=path/sqlite3.c or
#     the copy bench/record_overhead.py fetched) bench/sqlite_driver.c
#     built -g, recorded plainly and with --auto-args (target: at most 2x),
#     and uftrace record and record -a on it built -pg.
# The last column is the loop's CPU time on the program's own thread
# (median, ns per call over the untraced loop): the tracer's writer thread
# and the machine's other load left out, so it is the steadier one on a
# busy machine.
#
#   sh bench/args_cost.sh [N] [RUNS]      (SQLITE_ROWS: the driver's rows, 20000)
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
WHICH=1; t=$(median_ms rec); row "other, traced" "$t"; o_w=$(per "$t"); o_c=$(cper)
WHICH=1; t=$(median_ms rec $SPEC); row "other, traced, -A/-R on add" "$t"; os_w=$(per "$t"); os_c=$(cper)
WHICH=0; t=$(median_ms rec); row "add, traced" "$t"; a_w=$(per "$t"); a_c=$(cper)
WHICH=0; t=$(median_ms rec $SPEC); row "add, traced, -A add@arg1,arg2 -R add@retval" "$t"; as_w=$(per "$t"); as_c=$(cper)
if command -v uftrace >/dev/null; then
	WHICH=0; t=$(median_ms urec); row "add, uftrace record (-pg)" "$t"
	WHICH=0; t=$(median_ms urec -A add@arg1,arg2 -R add@retval); row "add, uftrace record -A/-R (-pg)" "$t"
fi

diff() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.1f", a - b}'; }
echo
echo "side by side, ns/call (wall, thread):"
echo "  named (add -A/-R) over plain add:      $(diff "$as_w" "$a_w"), $(diff "$as_c" "$a_c")   (target: at most +40)"
echo "  unnamed (other) with the spec over without: $(diff "$os_w" "$o_w"), $(diff "$os_c" "$o_c")   (target: noise)"

# SQLite --auto-args against plain recording (target: at most 2x).
SQ=${SQLITE_C:-bench/build/sqlite/package/deps/sqlite3/sqlite3.c}
ROWS=${SQLITE_ROWS:-20000}
if [ ! -f "$SQ" ]; then
	echo "SQLite: no amalgamation at $SQ (SQLITE_C=...; bench/record_overhead.py --only sqlite fetches one): skipped"
	exit 0
fi
OBJ=bench/build/sqlite/sqlite3_args_g.o # compiling it takes minutes: kept, rebuilt when the source changes
mkdir -p bench/build/sqlite
if [ ! -f "$OBJ" ] || [ "$SQ" -nt "$OBJ" ]; then
	echo "building $OBJ (a few minutes)" >&2
	clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls -c -o "$OBJ.tmp" "$SQ"
	mv "$OBJ.tmp" "$OBJ"
fi
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls -I "$(dirname "$SQ")" \
	-o "$W/sq" bench/sqlite_driver.c "$OBJ" -lpthread -ldl -lm
srec() { rm -rf "$W/t"; "$SFT" record -q "$@" -o "$W/t/sf.log" -- "$W/sq" "$ROWS"; }
sbase=$(median_ms "$W/sq" "$ROWS")
splain=$(median_ms srec)
sauto=$(median_ms srec --auto-args)
echo
printf '%-44s %10s\n' "SQLite driver, $ROWS rows" "ms"
printf '%-44s %10s\n' "untraced" "$sbase"
printf '%-44s %10s\n' "sftrace record" "$splain"
printf '%-44s %10s  (%sx plain; target at most 2x)\n' "sftrace record --auto-args" "$sauto" \
	"$(awk -v a="$sauto" -v b="$splain" 'BEGIN {printf "%.2f", a / b}')"
if command -v uftrace >/dev/null && [ -n "${SQLITE_PG:-1}" ]; then
	if [ ! -f bench/build/sqlite/sqlite3_pg.o ] || [ "$SQ" -nt bench/build/sqlite/sqlite3_pg.o ]; then
		echo "building bench/build/sqlite/sqlite3_pg.o (a few minutes)" >&2
		gcc -O2 -g -pg -c -o bench/build/sqlite/sqlite3_pg.o.tmp "$SQ"
		mv bench/build/sqlite/sqlite3_pg.o.tmp bench/build/sqlite/sqlite3_pg.o
	fi
	gcc -O2 -g -pg -I "$(dirname "$SQ")" -o "$W/sqpg" bench/sqlite_driver.c bench/build/sqlite/sqlite3_pg.o \
		-lpthread -ldl -lm
	surec() { rm -rf "$W/u"; uftrace record --force -d "$W/u" "$@" "$W/sqpg" "$ROWS"; }
	uplain=$(median_ms surec)
	uauto=$(median_ms surec -a)
	printf '%-44s %10s\n' "uftrace record (-pg)" "$uplain"
	printf '%-44s %10s  (%sx plain)\n' "uftrace record -a (-pg)" "$uauto" \
		"$(awk -v a="$uauto" -v b="$uplain" 'BEGIN {printf "%.2f", a / b}')"
fi
