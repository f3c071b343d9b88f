#!/bin/sh
# Context switches of the log's descriptor uses on the writer thread
# (logfile.c: with_log_fd), against another build's (the descriptor in the
# program's table), side by side in the same run, 3 runs each.
#   bench/fd_requests.sh [BUILD] [OTHER_BUILD] [THREADS] [CALLS]
set -e
B=${1:-build}
O=${2:-}
T=${3:-4}
N=${4:-2000000}
mkdir -p "$B/bench"
clang -O2 -fxray-instrument -fxray-instruction-threshold=1 -o "$B/bench/fd_requests" bench/fd_requests.c -lpthread
D=$(mktemp -d)
for i in 1 2 3; do
	for b in "$B" $O; do
		out=$("$b/sftrace" record -q -o "$D/sf.log" -- "$B/bench/fd_requests" "$T" "$N")
		chunks=$("$b/sftrace" info "$D/sf.log" 2>/dev/null | grep -E "^# (events|log) " | tr -s " " | tr "\n" " ")
		echo "$b: $out $chunks"
		rm -f "$D"/*
	done
done
rm -rf "$D"
