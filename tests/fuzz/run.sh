#!/bin/sh
# Builds the libFuzzer harnesses (clang -fsanitize=fuzzer,address,undefined)
# and runs each for a bounded time on a copy of its seed corpus.
#
#   tests/fuzz/run.sh                   # FUZZ_SECONDS=60 per harness (the CI setting)
#   FUZZ_SECONDS=3600 tests/fuzz/run.sh # a long run
#
# Environment: FUZZ_SECONDS (per harness, default 60), FUZZ_OUT (work
# directory, default build-fuzz), FUZZ_JOBS (parallel fuzzing processes per
# harness, default 1). Inputs that crash are left in $FUZZ_OUT/crashes/<harness>/
# and the script exits non-zero; copy each one into
# tests/fuzz/regressions/<harness>/ (with a name saying what it broke) once
# the bug is fixed: tests/cases/test_badinput.py replays them all.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${FUZZ_OUT:-$ROOT/build-fuzz}
SECS=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-1}
CC=${FUZZ_CC:-clang}
CFLAGS="-std=gnu11 -D_GNU_SOURCE -I$ROOT/src -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"

mkdir -p "$OUT"
cd "$ROOT"
$CC $CFLAGS -o "$OUT/fuzz_log_reader" tests/fuzz/fuzz_log_reader.c \
	src/lib/log_reader.c src/lib/frames.c src/lib/util.c src/lib/text_esc.c src/lib/hashmap.c src/format/packed.c
$CC $CFLAGS -o "$OUT/fuzz_filter_file" tests/fuzz/fuzz_filter_file.c src/format/filter_file.c

# With -jobs, libFuzzer writes fuzz-N.log files into the current directory.
cd "$OUT"
parallel=""
[ "$JOBS" -gt 1 ] && parallel="-jobs=$JOBS -workers=$JOBS"
status=0
for h in log_reader filter_file; do
	corpus="$OUT/corpus/$h"
	crashes="$OUT/crashes/$h"
	mkdir -p "$corpus" "$crashes"
	cp "$ROOT"/tests/fuzz/corpus/$h/* "$corpus/"
	echo "== fuzz_$h for ${SECS}s"
	# Seeds and regressions are read; new inputs go to the work corpus.
	# shellcheck disable=SC2086
	if ! "$OUT/fuzz_$h" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 $parallel \
		-dict="$ROOT/tests/fuzz/$h.dict" -artifact_prefix="$crashes/" -print_final_stats=1 \
		"$corpus" "$ROOT/tests/fuzz/regressions/$h" 2>"$OUT/fuzz_$h.log"; then
		status=1
	fi
	tail -n 12 "$OUT/fuzz_$h.log"
	if ls "$crashes" | grep -q .; then
		echo "fuzz_$h: crashing inputs in $crashes:"
		ls -l "$crashes"
		status=1
	fi
done
exit $status
