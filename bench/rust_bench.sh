#!/bin/sh
# The cost of tracing in the unit Rust users know: criterion's own time per
# iteration for the benchmarks of examples/rust-bench, measured three ways,
#   untraced   the bench binary alone (built with sleds, none patched);
#   filtered   under sftrace record -f with the workflow's filter
#              (-r 'resolve|normalize|cache', as in scripts/rust-example.sh);
#   full       under sftrace record with no filter (every sled patched).
# Prints one table row per benchmark: criterion's estimate (the middle of
# its "time: [low estimate high]"), the slowdown against untraced, and the
# events each traced run recorded (criterion runs more iterations of a
# faster benchmark, so the counts are per run, not per iteration).
#
#   sh bench/rust_bench.sh                  # all three benchmarks
#   sh bench/rust_bench.sh resolve_warm     # the benchmarks whose name matches
#
# Environment:
#   SFTRACE     the sftrace binary (default build/sftrace, built if missing)
#   MEASURE     criterion's --measurement-time in seconds (default 3)
#   ROUNDS      runs per mode, alternating modes; the lowest estimate is
#               shown, which is the least disturbed by other load (default 2)
#   TRACE_TMP   where the traced runs' logs go (default /tmp): an unfiltered
#               run writes about 50M events (800 MB) per second; each log is
#               deleted as soon as its run ends
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SFTRACE="${SFTRACE:-$ROOT/build/sftrace}"
[ -x "$SFTRACE" ] || make -C "$ROOT" -j2 all >/dev/null
MEASURE="${MEASURE:-3}"
ROUNDS="${ROUNDS:-2}"
ONLY="${1:-}"
PATH="$HOME/.cargo/bin:$PATH"

cd "$ROOT/examples/rust-bench"
sh "$ROOT/scripts/install-rust-deps.sh" >/dev/null
RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zinstrument-xray=always" cargo +stable bench --profile profiling --no-run -q
BENCH_BIN="$PWD/$(ls -t target/profiling/deps/resolver-* | grep -v '\.d$' | head -1)"

WORK="$(mktemp -d "${TRACE_TMP:-/tmp}/sftrace-rust-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT INT TERM
"$SFTRACE" filter -p "$BENCH_BIN" -r 'resolve|normalize|cache' -o "$WORK/sftrace.filter" >/dev/null

# One criterion run of one benchmark; prints "<estimate> <unit> <events>".
# Each mode keeps its own criterion directory, so no run is compared
# against another mode's baseline.
measure() { # BENCH MODE
	home="$WORK/criterion-$2"
	args="--bench --noplot --warm-up-time 1 --measurement-time $MEASURE --sample-size 10 ^$1\$"
	log="$WORK/$1-$2.log"
	case "$2" in
	untraced) CRITERION_HOME="$home" "$BENCH_BIN" $args >"$WORK/out" 2>&1 ;;
	filtered) CRITERION_HOME="$home" "$SFTRACE" record -f "$WORK/sftrace.filter" -o "$log" -- \
			"$BENCH_BIN" $args >"$WORK/out" 2>&1 ;;
	full) CRITERION_HOME="$home" "$SFTRACE" record -o "$log" -- "$BENCH_BIN" $args >"$WORK/out" 2>&1 ;;
	esac
	rm -f "$log"
	est=$(sed -n 's/.*time: *\[[^ ]* [^ ]* \([^ ]*\) \([^ ]*\) .*/\1 \2/p' "$WORK/out" | head -1 | sed 's/µs/us/')
	events=$(sed -n 's/^sftrace: wrote .*: \([0-9]*\) events.*/\1/p' "$WORK/out" | head -1)
	if [ -z "$est" ]; then
		echo "rust_bench: no criterion estimate for $1 ($2):" >&2
		tail -20 "$WORK/out" >&2
		exit 1
	fi
	if grep -q DROPPED "$WORK/out"; then
		echo "rust_bench: $1 ($2): events were dropped" >&2
	fi
	echo "$est ${events:--}"
}

ns() { # VALUE UNIT -> nanoseconds
	awk -v v="$1" -v u="$2" 'BEGIN {
		m = (u == "ps") ? 0.001 : (u == "ns") ? 1 : (u == "us") ? 1e3 : (u == "ms") ? 1e6 : 1e9
		printf "%.3f", v * m }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

events_m() { [ "$1" = - ] && echo - || awk -v e="$1" 'BEGIN { printf "%.1fM", e / 1e6 }'; }

# The smaller of two values with units ("1.2 ms" vs "980 us").
min_of() { # V1 U1 V2 U2
	if [ "$(awk -v a="$(ns "$1" "$2")" -v b="$(ns "$3" "$4")" 'BEGIN { print (a <= b) }')" = 1 ]; then
		echo "$1 $2"
	else
		echo "$3 $4"
	fi
}

echo "criterion time per iteration: the lowest estimate of $ROUNDS rounds"
echo "(criterion --warm-up-time 1 --measurement-time $MEASURE --sample-size 10; the modes alternate)"
echo "binary: $BENCH_BIN"
printf '%-18s %12s %12s %8s %9s %12s %8s %9s\n' benchmark untraced filtered slower events full slower events
for bench in parse_package_map resolve_cold resolve_warm; do
	case "$bench" in *$ONLY*) ;; *) continue ;; esac
	u="" f="" a=""
	round=0
	while [ "$round" -lt "$ROUNDS" ]; do
		set -- $(measure "$bench" untraced); u=$(if [ -n "$u" ]; then min_of $u "$1" "$2"; else echo "$1 $2"; fi)
		set -- $(measure "$bench" filtered); f_e=$3; f=$(if [ -n "$f" ]; then min_of $f "$1" "$2"; else echo "$1 $2"; fi)
		set -- $(measure "$bench" full); a_e=$3; a=$(if [ -n "$a" ]; then min_of $a "$1" "$2"; else echo "$1 $2"; fi)
		round=$((round + 1))
	done
	u_ns=$(ns $u)
	printf '%-18s %12s %12s %8s %9s %12s %8s %9s\n' "$bench" "$u" \
		"$f" "$(ratio "$(ns $f)" "$u_ns")" "$(events_m "$f_e")" \
		"$a" "$(ratio "$(ns $a)" "$u_ns")" "$(events_m "$a_e")"
done
