#!/bin/sh
# What a clone(CLONE_FILES) child costs (bench/cfiles_child.c): the mean
# time from clone() to its first event's return and to its reaping, against
# another build's, side by side in the same run, 5 runs each.
#   bench/cfiles_child.sh [BUILD] [OTHER_BUILD] [CHILDREN]
set -e
B=${1:-build}
O=${2:-}
N=${3:-200}
mkdir -p "$B/bench"
clang -O2 -fxray-instrument -fxray-instruction-threshold=1 -o "$B/bench/cfiles_child" bench/cfiles_child.c
D=$(mktemp -d)
for i in 1 2 3 4 5; do
	echo "untraced: $("$B/bench/cfiles_child" "$N")"
	for b in "$B" $O; do
		echo "$b: $("$b/sftrace" record -q -o "$D/sf.log" -- "$B/bench/cfiles_child" "$N")"
		rm -f "$D"/*
	done
done
rm -rf "$D"
