#!/bin/sh
# The long reliability runs: the runtime cases of tests/cases/test_reliability.py
# at full size (64 threads x 1M+ events, 100,000 short-lived threads, a
# million frames deep, 3000 signals per thread, ...), then the fuzzers for
# FUZZ_SECONDS each (default 600). CI runs the same cases at smaller sizes
# (plain `python3 tests/run.py`) and tests/fuzz/run.sh for 60 s.
#
#   tests/stress.sh                     # BUILD=build
#   SFTRACE_BUILD=build-rel tests/stress.sh
#
# Needs a few GB free in $TMPDIR (the 64-thread log is about 1 GB; each
# case deletes its logs when done).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export SFTRACE_STRESS=full
status=0
python3 tests/run.py -k test_reliability || status=1
FUZZ_SECONDS=${FUZZ_SECONDS:-600} FUZZ_OUT=${FUZZ_OUT:-$ROOT/${SFTRACE_BUILD:-build}-fuzz} \
	sh tests/fuzz/run.sh || status=1
exit $status
