#!/bin/sh
# Least ns of 20,000 siglongjmp landings out of a SIGUSR1 handler on a
# sigaltstack (mode 1) and out of one on the thread's stack (mode 2), with
# only main recorded (no abandoned frame recorded): untraced, and traced
# with each runtime given, interleaved ROUNDS times.
# usage: bench/landing_sigalt.sh [ROUNDS] [LIBSFTRACE.so...]
# (tests/fixtures/skep25p_first.c, built by the test suite into build/fixtures)
set -e
cd "$(dirname "$0")/.."
rounds=${1:-5}; shift || true
[ $# -gt 0 ] || set -- "$PWD/build/libsftrace.so"
exe=build/fixtures/skep25p_first
filt=$(mktemp -u /tmp/landing_sigalt.XXXXXX)
log=$(mktemp -u /tmp/landing_sigalt_log.XXXXXX)
build/sftrace filter -q -p "$exe" -r '^main$' -o "$filt"
for mode in 1 2; do
	i=0
	while [ $i -lt "$rounds" ]; do
		printf 'mode %s untraced %s' "$mode" "$("$exe" 20000 0 $mode | sed 's/.*min //')"
		for lib in "$@"; do
			rm -f "$log"
			printf '  %s %s' "$(basename "$(dirname "$(dirname "$lib")")")" \
				"$(SFTRACE_FILTER="$filt" SFTRACE_OUTPUT_FILE="$log" LD_PRELOAD="$lib" "$exe" 20000 0 $mode | sed 's/.*min //')"
		done
		echo
		i=$((i + 1))
	done
done
rm -f "$filt" "$log"
