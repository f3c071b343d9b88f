#!/bin/sh
# The whole test suite from a fresh clone: dependencies, build, unit tests
# (cmocka), then the same unit tests and every end-to-end case with the CLI
# built under AddressSanitizer + UndefinedBehaviorSanitizer (the runtime
# that goes into traced programs is never sanitized).
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
make -j2 all
make unit
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
make -j2 BUILD=build-asan SAN="$SAN" all
make BUILD=build-asan SAN="$SAN" unit
# The Rust example crate's first build (about two minutes on 2 cores; the
# e2e cases share it: BUILD/rust-bench) runs at low priority beside the
# fuzzer, which keeps one core busy for a fixed time, so it is mostly done
# before the e2e cases start; they wait for it, not race it.
SFTRACE_BUILD=build-asan nice /usr/bin/python3 tests/prebuild_rust.py >build-asan/prebuild-rust.log 2>&1 &
prebuild=$!
# Fuzz the log reader and the filter-file parser for a bounded time.
fuzz=0
FUZZ_SECONDS=${FUZZ_SECONDS:-45} sh tests/fuzz/run.sh || fuzz=$?
if ! wait "$prebuild"; then
	cat build-asan/prebuild-rust.log >&2
	echo "test.sh: building examples/rust-bench beside the fuzzer failed (above); the e2e cases build it again" >&2
fi
[ "$fuzz" = 0 ] || exit "$fuzz"
# Two modules at a time (tests/run.py: SERIAL cases run alone at the end),
# without the long tier (tests/LONG, the cases of 5 s or more): the suite
# stays well under 20 minutes on CI. `sh scripts/test.sh --all` runs every
# case. --durations: the slowest cases, to keep it that way.
SFTRACE_BUILD=build-asan /usr/bin/python3 tests/run.py -j 2 --durations 15 "$@"
