#!/bin/sh
# Cost of filtered recording on the functions a filter leaves out:
#   - select mode: the unselected sleds stay unpatched, so a run should cost
#     what an untraced run costs;
#   - within mode: outside a window every sled is patched to a gated
#     trampoline that returns at once (target: at most 2 ns per event).
# A recursive fib (about 2.8M calls at N=30) with a filter that selects only
# `never_called`, so fib is always outside.
#
#   sh bench/filter_overhead.sh [N] [RUNS]
set -eu
cd "$(dirname "$0")/.."
N=${1:-30}
RUNS=${2:-7}
make -s all
SFT="$PWD/build/sftrace"
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-filterbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
cat > "$W/fib.c" <<'SRC'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) void never_called(void) { puts("never"); }
__attribute__((noinline)) int fib(int n)
{
	if (n < 2)
		return n;
	int a = fib(n - 1), b = fib(n - 2);
	__asm__ volatile("" ::: "memory");
	return a + b;
}
int main(int argc, char **argv)
{
	int n = atoi(argv[1]);
	if (n < 0)
		never_called();
	printf("%d\n", fib(n));
	return 0;
}
SRC
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls -fnoxray-link-deps \
	-o "$W/fib" "$W/fib.c"
"$SFT" filter -p "$W/fib" -r '^never_called$' -o "$W/select.filter" >/dev/null
"$SFT" filter -p "$W/fib" -r '^never_called$' --within -o "$W/within.filter" >/dev/null
calls=$(python3 -c "
import functools,sys
sys.setrecursionlimit(100000)
@functools.lru_cache(None)
def c(n): return 1 if n < 2 else 1 + c(n-1) + c(n-2)
print(c($N))")
events=$((2 * calls))

median_ms() { # cmd...: median wall time of RUNS runs, in ms
	for i in $(seq "$RUNS"); do
		s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N)
		echo $(( (e - s) / 1000 ))
	done | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}
rec() { rm -rf "$W/t"; "$SFT" record -q "$@" -o "$W/t/sf.log" -- "$W/fib" "$N"; }

# Interleave to share the machine's noise.
u=""; s=""; w=""; f=""
for r in 1 2 3; do
	u="$u $(median_ms "$W/fib" "$N")"
	s="$s $(median_ms rec -f "$W/select.filter")"
	w="$w $(median_ms rec -f "$W/within.filter")"
	f="$f $(median_ms rec)"
done
python3 - "$events" "$u" "$s" "$w" "$f" <<'PY'
import sys, statistics as st
ev = int(sys.argv[1])
med = [st.median(float(x) for x in a.split()) for a in sys.argv[2:]]
u, s, w, f = med
print(f"fib: {ev} events outside the filter (median wall ms of 3 x medians; noisy 2-core VM)")
print(f"  untraced                       {u:8.1f} ms")
print(f"  record -f (select, unpatched)  {s:8.1f} ms   {(s-u)*1e6/ev:6.2f} ns/event over untraced (includes record's start-up)")
print(f"  record -f (within, gated)      {w:8.1f} ms   {(w-u)*1e6/ev:6.2f} ns/event over untraced")
print(f"  record, no filter (reference)  {f:8.1f} ms   {(f-u)*1e6/ev:6.2f} ns/event over untraced")
PY
