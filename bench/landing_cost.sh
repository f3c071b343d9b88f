#!/bin/sh
# What a landing adds to the program (docs/DESIGN.md, Unwinding), against
# untraced, in three configurations of the filter:
#   all   everything recorded (the abandoned frames' own entry events too);
#   none  only main recorded: the landing alone, no abandoned frame recorded;
#   only  only the abandoned frames recorded: neither the setjmp caller or
#         catcher nor main is, so every recorded frame is abandoned at each
#         landing (their entry events included).
# Cases: a C longjmp over two frames (bench/landing.c), a C++ throw caught
# two frames up (bench/landing.cc), one caught 1,000 frames up
# (bench/landing_deep.cc: what the runtime adds at every frame lookup, 3
# instructions each while x86-64 stood in front of _Unwind_Find_FDE for its
# stub pages, none since far sleds), and, given the path of a Lua interpreter
# built with XRay, Lua's pcall(error, {}) (bench/landing_pcall.lua).
#
# Time (default): ns per landing, each program printing the 10th
# percentile of its CPU time per landing over batches (thread CPU; Lua:
# process CPU), the least of RUNS interleaved runs per configuration. On a
# shared VM a batch or a whole run is slower at times (1.4-1.8x), and a rare
# batch reads low: medians of runs swing by more than the target.
# --callgrind: instructions per landing of the program's thread (valgrind
# callgrind, collecting inside the landing loop's function only, the
# difference of two run lengths): deterministic, any load.
#
#   sh bench/landing_cost.sh [--callgrind] [LUA] [RUNS]
#   SF=/path/to/other/build/sftrace sh bench/landing_cost.sh   (another build)
#   (Lua: git archive of github:lua/lua, then in its directory
#    clang -O2 -fxray-instrument -fxray-instruction-threshold=1 -DLUA_USE_LINUX -o lua \
#      $(ls *.c | grep -v -e luac.c -e onelua.c -e ltests.c) -lm -ldl)
set -eu
cd "$(dirname "$0")/.."
MODE=time
if [ "${1:-}" = "--callgrind" ]; then
	MODE=callgrind
	shift
fi
LUA=${1:-}
RUNS=${2:-5}
make -s all
SF=${SF:-$PWD/build/sftrace}
RT=$(dirname "$SF")/libsftrace.so
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-landing.XXXXXX")
trap 'rm -rf "$W"' EXIT
X="-O2 -fxray-instrument -fxray-instruction-threshold=1"
clang $X -o "$W/longjmp" bench/landing.c
clang++ $X -o "$W/cxx" bench/landing.cc
clang++ $X -o "$W/deep" bench/landing_deep.cc

# Time: one run of configuration $1 (untraced, all, none, only); prints ns.
time_run() {
	cfg=$1
	shift
	rm -f "$W/sf.log"
	case $cfg in
	untraced) "$@" ;;
	all) "$SF" record -q -o "$W/sf.log" -- "$@" ;;
	*) "$SF" record -q -f "$W/$cfg.filter" -o "$W/sf.log" -- "$@" ;;
	esac
}

# Callgrind: instructions collected inside function $2 in configuration $1,
# for the program and arguments that follow.
cg_run() {
	cfg=$1
	fn=$2
	shift 2
	set -- valgrind --tool=callgrind --smc-check=all "--toggle-collect=$fn" --callgrind-out-file=/dev/null "$@"
	rm -f "$W"/cg*.log
	case $cfg in
	untraced) "$@" 2>&1 >/dev/null ;;
	# the writer thread by name: the default (auto) hands off on the
	# measured thread under valgrind (src/runtime/init.c)
	all) LD_PRELOAD=$RT SFTRACE_WRITER=thread SFTRACE_OUTPUT_FILE=$W/cg.log "$@" 2>&1 >/dev/null ;;
	*) LD_PRELOAD=$RT SFTRACE_WRITER=thread SFTRACE_FILTER=$W/$cfg.filter SFTRACE_OUTPUT_FILE=$W/cg.log "$@" 2>&1 >/dev/null ;;
	esac | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

# Callgrind: instructions per landing in configuration $1, collected in
# function $2: runs of $3 and $4 landings (the program's last argument) of
# the command that follows differ by $4 - $3 landings.
cg_per_landing() {
	cfg=$1
	fn=$2
	n1=$3
	n2=$4
	shift 4
	a=$(cg_run "$cfg" "$fn" "$@" "$n1")
	b=$(cg_run "$cfg" "$fn" "$@" "$n2")
	echo "($b - $a) / ($n2 - $n1)" | bc -l
}

# measure NAME ONLY-REGEX FUNC N1 N2 N EXE [ARGS...]: one line of figures.
measure() {
	name=$1
	only=$2
	fn=$3
	n1=$4
	n2=$5
	n=$6
	shift 6
	"$SF" filter -q -p "$1" -r '^main$' -o "$W/none.filter" >/dev/null
	"$SF" filter -q -p "$1" -r "$only" -o "$W/only.filter" >/dev/null
	if [ "$MODE" = callgrind ]; then
		u=$(cg_per_landing untraced "$fn" "$n1" "$n2" "$@")
		a=$(cg_per_landing all "$fn" "$n1" "$n2" "$@")
		o=$(cg_per_landing none "$fn" "$n1" "$n2" "$@")
		y=$(cg_per_landing only "$fn" "$n1" "$n2" "$@")
	else
		u=1e18 a=1e18 o=1e18 y=1e18
		for _ in $(seq "$RUNS"); do
			u=$(printf '%s\n%s\n' "$u" "$(time_run untraced "$@" "$n")" | sort -g | head -1)
			a=$(printf '%s\n%s\n' "$a" "$(time_run all "$@" "$n")" | sort -g | head -1)
			o=$(printf '%s\n%s\n' "$o" "$(time_run none "$@" "$n")" | sort -g | head -1)
			y=$(printf '%s\n%s\n' "$y" "$(time_run only "$@" "$n")" | sort -g | head -1)
		done
	fi
	printf '%-12s %10.1f %8.1f %8.1f %8.1f\n' "$name" "$u" "$(echo "$a - $u" | bc -l)" \
		"$(echo "$o - $u" | bc -l)" "$(echo "$y - $u" | bc -l)"
}

if [ "$MODE" = callgrind ]; then
	printf '%-12s %10s %8s %8s %8s   (instructions per landing, callgrind)\n' case untraced +all +none +only
else
	printf '%-12s %10s %8s %8s %8s   (ns per landing, least of %s runs)\n' case untraced +all +none +only "$RUNS"
fi
measure longjmp '^(mid|leaf)$' jumper 2000 6000 1000000 "$W/longjmp"
measure cxx-throw '^(middle|thrower)' 'catcher*' 1000 3000 200000 "$W/cxx"
measure cxx-deep1000 '^dive' 'catcher*' 5 15 2000 "$W/deep" 1000
if [ -n "$LUA" ] && [ -x "$LUA" ]; then
	measure lua-pcall '^(luaB_error|lua_error|luaG_errormsg|luaD_throw)$' luaB_pcall 2000 6000 300000 \
		"$LUA" bench/landing_pcall.lua
else
	echo "lua-pcall: skipped (give the path of an XRay-built lua)"
fi
