#!/bin/sh
# What fork children cost traced (bench/fork_exec.c): perf stat's
# task-clock (ms, every task of the run) and context switches of
# `sftrace record` over N forks, per mode (0: fork+exec of /bin/true,
# 1: one traced call in the child first, 2: fork+_exit), against another
# build's, interleaved, 3 runs each.
#   bench/fork_exec.sh [BUILD] [OTHER_BUILD] [N]
set -e
B=${1:-build}
O=${2:-}
N=${3:-500}
mkdir -p "$B/bench"
clang -O1 -fxray-instrument -fxray-instruction-threshold=1 -o "$B/bench/fork_exec" bench/fork_exec.c
D=$(mktemp -d)
for i in 1 2 3; do
	for b in "$B" $O; do
		for m in 2 0 1; do
			printf '%s mode %s: ' "$b" "$m"
			perf stat -e task-clock,context-switches -x, "$b/sftrace" record -q -o "$D/sf.log" -- \
				"$B/bench/fork_exec" "$N" "$m" 2>&1 >/dev/null | cut -d, -f1 | tr '\n' ' '
			echo
			rm -f "$D"/*
		done
	done
done
rm -rf "$D"
