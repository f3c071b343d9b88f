#!/bin/sh
# What a landing adds to the program (docs/DESIGN.md, Unwinding): ns of the
# program thread's CPU per landing, untraced, traced with everything
# recorded ("all": the abandoned frames' own entry events included), and
# traced with a filter that records only main ("none abandoned": what the
# landing itself costs, with no event of the abandoned frames), and traced
# with a filter that records only the abandoned frames ("only": every
# recorded frame is abandoned, neither the setjmp caller or catcher nor
# main is recorded; their entry events included). Cases: a C
# longjmp over two frames (bench/landing.c), a C++ throw caught two frames
# up (bench/landing.cc), and, given the path of a Lua interpreter built
# with XRay, Lua's pcall(error, {}) (bench/landing_pcall.lua). Medians of
# RUNS interleaved runs; "+all" and "+none" are the differences.
#
#   sh bench/landing_cost.sh [LUA] [RUNS]
#   SF=/path/to/other/build/sftrace sh bench/landing_cost.sh   (another build's record)
#   (Lua: make -C lua-src CC=clang MYCFLAGS="-O2 -fxray-instrument -fxray-instruction-threshold=1" MYLDFLAGS=-fxray-instrument)
set -eu
cd "$(dirname "$0")/.."
LUA=${1:-}
RUNS=${2:-5}
make -s all
SF=${SF:-$PWD/build/sftrace}
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-landing.XXXXXX")
trap 'rm -rf "$W"' EXIT
X="-O2 -fxray-instrument -fxray-instruction-threshold=1"
clang $X -o "$W/longjmp" bench/landing.c
clang++ $X -o "$W/cxx" bench/landing.cc
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# case ONLY-REGEX EXE ARGS...: one line of figures
measure() {
	name=$1
	only=$2
	shift 2
	"$SF" filter -q -p "$1" -r '^main$' -o "$W/$name.filter" >/dev/null
	"$SF" filter -q -p "$1" -r "$only" -o "$W/$name.only.filter" >/dev/null
	: >"$W/u"
	: >"$W/a"
	: >"$W/n"
	: >"$W/o"
	for _ in $(seq "$RUNS"); do
		"$@" >>"$W/u"
		rm -f "$W/sf.log"
		"$SF" record -o "$W/sf.log" -- "$@" 2>/dev/null >>"$W/a"
		rm -f "$W/sf.log"
		"$SF" record -f "$W/$name.filter" -o "$W/sf.log" -- "$@" 2>/dev/null >>"$W/n"
		rm -f "$W/sf.log"
		"$SF" record -f "$W/$name.only.filter" -o "$W/sf.log" -- "$@" 2>/dev/null >>"$W/o"
	done
	u=$(median <"$W/u")
	a=$(median <"$W/a")
	n=$(median <"$W/n")
	o=$(median <"$W/o")
	printf '%-14s %10s %10s %10s %10s %8.1f %8.1f %8.1f\n' "$name" "$u" "$a" "$n" "$o" \
		"$(echo "$a - $u" | bc)" "$(echo "$n - $u" | bc)" "$(echo "$o - $u" | bc)"
}
printf '%-14s %10s %10s %10s %10s %8s %8s %8s   (ns per landing, median of %s)\n' case untraced all none only +all +none +only "$RUNS"
measure longjmp '^(mid|leaf)$' "$W/longjmp" 1000000
measure cxx-throw '^(middle|thrower)' "$W/cxx" 200000
if [ -n "$LUA" ] && [ -x "$LUA" ]; then
	measure lua-pcall '^(luaB_error|lua_error|luaG_errormsg|luaD_throw)$' "$LUA" bench/landing_pcall.lua 300000
else
	echo "lua-pcall: skipped (give the path of an XRay-built lua)"
fi
