#!/bin/sh
# The close() wrapper's cost, untraced and traced (bench/close_cost.c).
#   bench/close_cost.sh [BUILD]     (BUILD: the sftrace build dir, default build)
set -e
B=${1:-build}
mkdir -p "$B/bench"
clang -O2 -fxray-instrument -fxray-instruction-threshold=1 -o "$B/bench/close_cost" bench/close_cost.c
D=$(mktemp -d)
echo "untraced:"
"$B/bench/close_cost"
echo "traced:"
"$B/sftrace" record -o "$D/sf.log" -- "$B/bench/close_cost" "$D/sf.log"
rm -rf "$D"
