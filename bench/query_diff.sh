#!/bin/sh
# report --diff and query on recursive-fib traces (bench/fib.c):
#  - report --diff of two fib(D) logs (D=32: 14.1M events each) against two
#    plain report runs (target: at most 1.5x);
#  - query on a fib(Q) trace (Q=34: 18.5M frames): rows/s and peak RSS of
#    the streamed frames table, and of loading it into an SQLite table first;
#  - with TP=1, Perfetto's trace_processor_shell (../shared/tools) loading the
#    same trace converted to .pb.gz and running the same GROUP BY (minutes).
#
#   sh bench/query_diff.sh [D] [Q]      TP=1 sh bench/query_diff.sh
#
# The machine is a shared 2-core VM: wall times move a lot with the load,
# so user+sys CPU seconds are printed too; compare ratios within one run.
set -eu
cd "$(dirname "$0")/.."
D=${1:-32}
Q=${2:-34}
make -s all
SFT="$PWD/build/sftrace"
TPS="$PWD/../shared/tools/trace_processor_shell"
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-querybench.XXXXXX")
trap 'rm -rf "$W"' EXIT
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls -Ibench -o "$W/fib" bench/fib.c

# label rows cmd...: wall, CPU, rows/s (by wall) and peak RSS
measure() {
	label=$1; rows=$2; shift 2
	/usr/bin/time -f "%e %U %S %M" -o "$W/time" "$@" >"$W/out" 2>"$W/err" || { echo "$label: FAILED"; cat "$W/err"; return; }
	set -- $(cat "$W/time")
	python3 -c "print(f'  {\"$label\":<44} {$1:7.2f} s wall {$2+$3:7.2f} s cpu  {$rows/max($1,1e-9)/1e6:6.2f} M rows/s  peak RSS {$4/1024:7.1f} MiB')"
}

echo "report --diff: two fib($D) logs"
"$SFT" record -q -o "$W/a/sf.log" -- "$W/fib" $D >/dev/null
"$SFT" record -q -o "$W/b/sf.log" -- "$W/fib" $D >/dev/null
frames=$("$SFT" query "$W/a" "select count(*) from frames" | tail -1)
echo "  $((frames * 2)) events per log"
for i in 1 2 3; do
	measure "report A" $frames "$SFT" report -q "$W/a"
	measure "report B" $frames "$SFT" report -q "$W/b"
	measure "report --diff A B" $((frames * 2)) "$SFT" report -q --diff "$W/a" "$W/b"
done

echo "query: fib($Q)"
"$SFT" record -q -o "$W/q/sf.log" -- "$W/fib" $Q >/dev/null
rm -rf "$W/a" "$W/b"
frames=$("$SFT" query "$W/q" "select count(*) from frames" | tail -1)
echo "  $frames frames"
GROUP="select name, count(*) from frames group by name"
measure "report (the same pass, for scale)" $frames "$SFT" report -q "$W/q"
measure "query count(*)" $frames "$SFT" query -q "$W/q" "select count(*) from frames"
measure "query sum(self_ns), max(dur_ns)" $frames "$SFT" query -q "$W/q" "select sum(self_ns), max(dur_ns) from frames"
measure "query $GROUP" $frames "$SFT" query -q "$W/q" "$GROUP"
measure "load into a table, then group (temp file)" $frames "$SFT" query -q "$W/q" \
	"create temp table f as select * from frames; select name, count(*) from f group by name"
measure "load into a table, then group (memory)" $frames "$SFT" query -q "$W/q" \
	"pragma temp_store = memory; create temp table f as select * from frames; select name, count(*) from f group by name"
if [ "${TP:-0}" = 1 ] && [ -x "$TPS" ]; then
	"$SFT" convert -q "$W/q/sf.log" -o "$W/q.pb.gz"
	echo "$GROUP;" | sed 's/frames/slice/' >"$W/q.sql"
	measure "trace_processor_shell: load + same query" $frames "$TPS" -q "$W/q.sql" "$W/q.pb.gz"
fi
