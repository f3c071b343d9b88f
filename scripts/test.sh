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
# Fuzz the log reader and the filter-file parser for a bounded time.
FUZZ_SECONDS=${FUZZ_SECONDS:-45} sh tests/fuzz/run.sh
# --durations: the slowest cases, to keep the suite well under 20 minutes on CI.
SFTRACE_BUILD=build-asan /usr/bin/python3 tests/run.py --durations 15 "$@"
