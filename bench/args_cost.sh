#!/bin/sh
# record -A/-R's cost (issue 29), all in one run. bench/args_cost.c makes N
# calls of one function with two int arguments; RUNS rounds, every
# configuration once a round (interleaved, so that the machine's drifts hit
# all alike), medians:
#   - untraced; `other` traced, with and without -A/-R naming add (an
#     unnamed function must cost the same: its sleds do not change);
#   - add traced plainly and with -A 'add@arg1,arg2' -R 'add@retval': the
#     difference is the price of the values (target: at most 40 ns a call);
#   - uftrace record and record -A/-R on the same source built with -pg;
#   - with BEFORE=OTHER/build/sftrace, that build's add rows too (same
#     rounds), to compare two runtimes side by side.
# Columns: wall ms of the whole command; ns a call over the untraced run,
# of wall time and of the loop's CPU time on the program's own thread
# (bench/args_cost.c reads CLOCK_THREAD_CPUTIME_ID: the writer thread and
# the machine's other load left out); CPU ms of the whole command (user +
# sys, every thread: what the values cost in all, wherever they are paid).
# Then, where valgrind is installed (CALLGRIND=0 skips it), instructions a
# call of the program's process, every thread (callgrind, the difference
# of N/20 and N/10 calls: start-up left out): load-independent.
# Last, when the SQLite amalgamation is at hand (SQLITE_C=path/sqlite3.c,
# or the copy bench/record_overhead.py fetched), bench/sqlite_driver.c
# built -gdwarf-4: untraced, sftrace record, record --auto-args (target: at most
# 2x plain recording), uftrace record and record -a (built -pg), the same
# way, and (callgrind) instructions of the whole process at SQLITE_CG_ROWS.
#
#   sh bench/args_cost.sh [N] [RUNS]   (SQLITE_ROWS: the driver's rows, 20000)
set -eu
cd "$(dirname "$0")/.."
N=${1:-2000000}
RUNS=${2:-5}
make -s all
SFT="$PWD/build/sftrace"
BEFORE=${BEFORE:-}
W=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-argsbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps -o "$W/xray" bench/args_cost.c
HAVE_UF=
if command -v uftrace >/dev/null; then
	HAVE_UF=1
	gcc -O2 -g -pg -o "$W/pg" bench/args_cost.c
fi
SPEC="-A add@arg1,arg2 -R add@retval"

# Wall and CPU (user + sys of every process and thread it waited for) of a
# command, in microseconds; its output dropped, its errors kept.
TIMER='import os, resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
w = time.perf_counter() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(int(w * 1e6), int((r.ru_utime + r.ru_stime) * 1e6))'

# One run of a configuration: appends "wall_us cpu_us thread_ns" to $W/r.NAME.
run1() { # NAME cmd...
	name=$1
	shift
	rm -rf "$W/t" "$W/u"
	python3 -c "$TIMER" "$@" 2>"$W/err" >"$W/time"
	th=$(sed -n 's/^loop thread cpu ns //p' "$W/err")
	echo "$(cat "$W/time") ${th:-0}" >>"$W/r.$name"
}
med() { # NAME COLUMN: the median
	awk -v c="$2" '{print $c}' "$W/r.$1" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
REC="$SFT record -q -o $W/t/sf.log"
RECB="$BEFORE record -q -o $W/t/sf.log"
UREC="uftrace record --force -d $W/u"

CONFIGS="untraced other other_spec add add_spec"
[ -n "$BEFORE" ] && CONFIGS="$CONFIGS b_other b_add b_add_spec"
[ -n "$HAVE_UF" ] && CONFIGS="$CONFIGS uf uf_spec"
cmd_of() { # NAME: the command of a configuration, as words for run1
	case $1 in
	untraced) echo "$W/xray 0 $N" ;;
	other) echo "$REC -- $W/xray 1 $N" ;;
	other_spec) echo "$REC $SPEC -- $W/xray 1 $N" ;;
	add) echo "$REC -- $W/xray 0 $N" ;;
	add_spec) echo "$REC $SPEC -- $W/xray 0 $N" ;;
	b_other) echo "$RECB -- $W/xray 1 $N" ;;
	b_add) echo "$RECB -- $W/xray 0 $N" ;;
	b_add_spec) echo "$RECB $SPEC -- $W/xray 0 $N" ;;
	uf) echo "$UREC $W/pg 0 $N" ;;
	uf_spec) echo "$UREC $SPEC $W/pg 0 $N" ;;
	esac
}
# rounds CONFIGS CMD_OF: RUNS rounds, each running every configuration
# once (interleaved, so the machine's drift hits them alike).
rounds() {
	for r in $(seq "$RUNS"); do
		for c in $1; do
			# shellcheck disable=SC2046
			run1 "$c" $($2 "$c")
		done
	done
}
rounds "$CONFIGS" cmd_of

bw=$(med untraced 1)
bt=$(med untraced 3)
label() {
	case $1 in
	untraced) echo "untraced" ;;
	other) echo "other, traced" ;;
	other_spec) echo "other, traced, -A/-R on add" ;;
	add) echo "add, traced" ;;
	add_spec) echo "add, traced, -A add@arg1,arg2 -R add@retval" ;;
	b_other) echo "BEFORE: other, traced" ;;
	b_add) echo "BEFORE: add, traced" ;;
	b_add_spec) echo "BEFORE: add, traced, -A/-R" ;;
	uf) echo "add, uftrace record (-pg)" ;;
	uf_spec) echo "add, uftrace record -A/-R (-pg)" ;;
	esac
}
per_w() { awk -v t="$(med "$1" 1)" -v b="$bw" -v n="$N" 'BEGIN {printf "%.1f", (t - b) * 1e3 / n}'; }
per_t() { awk -v t="$(med "$1" 3)" -v b="$bt" -v n="$N" 'BEGIN {printf "%.1f", (t - b) / n}'; }
printf '%-44s %9s %9s %9s %9s\n' "run ($N calls, median of $RUNS)" "wall ms" "wall ns" "thread ns" "cpu ms"
for c in $CONFIGS; do
	if [ "$c" = untraced ]; then
		printf '%-44s %9.1f %9s %9s %9.1f\n' "$(label "$c")" "$(echo "$bw" | awk '{print $1/1000}')" - - \
			"$(med "$c" 2 | awk '{print $1/1000}')"
		continue
	fi
	printf '%-44s %9.1f %9s %9s %9.1f\n' "$(label "$c")" "$(med "$c" 1 | awk '{print $1/1000}')" "$(per_w "$c")" \
		"$(per_t "$c")" "$(med "$c" 2 | awk '{print $1/1000}')"
done
diff() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.1f", a - b}'; }
cdiff() { awk -v a="$(med "$1" 2)" -v b="$(med "$2" 2)" -v n="$N" 'BEGIN {printf "%+.1f", (a - b) * 1e3 / n}'; }
echo
echo "side by side, ns a call (wall, thread, whole-process cpu):"
echo "  named (add -A/-R) over plain add:           $(diff "$(per_w add_spec)" "$(per_w add)"), $(diff "$(per_t add_spec)" "$(per_t add)"), $(cdiff add_spec add)   (target: at most +40)"
echo "  unnamed (other) with the spec over without: $(diff "$(per_w other_spec)" "$(per_w other)"), $(diff "$(per_t other_spec)" "$(per_t other)"), $(cdiff other_spec other)   (target: noise)"
if [ -n "$BEFORE" ]; then
	echo "  BEFORE, named over plain:                   $(diff "$(per_w b_add_spec)" "$(per_w b_add)"), $(diff "$(per_t b_add_spec)" "$(per_t b_add)"), $(cdiff b_add_spec b_add)"
	echo "  plain add over BEFORE's:                    $(diff "$(per_w add)" "$(per_w b_add)"), $(diff "$(per_t add)" "$(per_t b_add)"), $(cdiff add b_add)   (unnamed cost unchanged: noise)"
fi
if [ -n "$HAVE_UF" ]; then
	echo "  uftrace, -A/-R over plain:                  $(diff "$(per_w uf_spec)" "$(per_w uf)"), $(diff "$(per_t uf_spec)" "$(per_t uf)"), $(cdiff uf_spec uf)"
fi

# Instructions: callgrind over every process of the command; only the
# program's own (its command line starts with the program) are summed.
CALLGRIND=${CALLGRIND:-1}
cg_instr() { # PROGRAM cmd...: instructions of PROGRAM's processes
	prog=$1
	shift
	rm -rf "$W"/cg.* "$W/t"
	# SFTRACE_WRITER=thread (record passes it on): the default (auto) hands
	# off on the program's thread under valgrind (src/runtime/init.c); the
	# figures were measured with the writer thread
	SFTRACE_WRITER=thread valgrind --tool=callgrind --trace-children=yes --trace-children-skip='*/sftrace' \
		--callgrind-out-file="$W/cg.%p" "$@" >/dev/null 2>&1 || echo "callgrind: $* failed" >&2
	# The others (sftrace record; a fork of it counts what it ran before
	# the fork too): the largest into $W/cg_rec.
	for f in "$W"/cg.*; do
		if ! grep -q "^cmd: *$prog\( \|$\)" "$f"; then sed -n 's/^totals: //p' "$f"; fi
	done | awk '$1 > m {m = $1} END {print m + 0}' >"$W/cg_rec"
	for f in "$W"/cg.*; do
		if grep -q "^cmd: *$prog\( \|$\)" "$f"; then sed -n 's/^totals: //p' "$f"; fi
	done | awk '{s += $1} END {print s + 0}'
}
if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null; then
	N1=$((N / 20))
	N2=$((N / 10))
	cg_per() { # cmd words with NN for the call count
		# shellcheck disable=SC2046 # words without spaces, split on purpose
		a=$(cg_instr "$W/xray" $(echo "$@" | sed "s/ NN$/ $N1/"))
		# shellcheck disable=SC2046
		b=$(cg_instr "$W/xray" $(echo "$@" | sed "s/ NN$/ $N2/"))
		awk -v a="$a" -v b="$b" -v n="$((N2 - N1))" 'BEGIN {printf "%.1f", (b - a) / n}'
	}
	iu=$(cg_per "$W/xray" 0 NN)
	ia=$(cg_per "$SFT" record -q -o "$W/t/sf.log" -- "$W/xray" 0 NN)
	is=$(cg_per "$SFT" record -q $SPEC -o "$W/t/sf.log" -- "$W/xray" 0 NN)
	io=$(cg_per "$SFT" record -q -o "$W/t/sf.log" -- "$W/xray" 1 NN)
	ios=$(cg_per "$SFT" record -q $SPEC -o "$W/t/sf.log" -- "$W/xray" 1 NN)
	echo
	echo "instructions a call (callgrind, every thread of the program; $N1 and $N2 calls):"
	echo "  untraced $iu; add traced $ia; add -A/-R $is (+$(awk -v a="$is" -v b="$ia" 'BEGIN {printf "%.1f", a - b}') over plain)"
	echo "  other traced $io; other traced, -A/-R on add $ios ($(awk -v a="$ios" -v b="$io" 'BEGIN {printf "%+.1f", a - b}'))"
	if [ -n "$BEFORE" ]; then
		iba=$(cg_per "$BEFORE" record -q -o "$W/t/sf.log" -- "$W/xray" 0 NN)
		ibs=$(cg_per "$BEFORE" record -q $SPEC -o "$W/t/sf.log" -- "$W/xray" 0 NN)
		echo "  BEFORE: add traced $iba; add -A/-R $ibs (+$(awk -v a="$ibs" -v b="$iba" 'BEGIN {printf "%.1f", a - b}') over plain)"
	fi
fi

# SQLite --auto-args against plain recording (target: at most 2x).
SQ=${SQLITE_C:-bench/build/sqlite/package/deps/sqlite3/sqlite3.c}
ROWS=${SQLITE_ROWS:-20000}
if [ ! -f "$SQ" ]; then
	echo "SQLite: no amalgamation at $SQ (SQLITE_C=...; bench/record_overhead.py --only sqlite fetches one): skipped"
	exit 0
fi
# DWARF 4: valgrind 3.19 gives up on clang 14's DWARF 5 (callgrind below).
OBJ=bench/build/sqlite/sqlite3_args_g4.o # compiling it takes minutes: kept, rebuilt when the source changes
mkdir -p bench/build/sqlite
if [ ! -f "$OBJ" ] || [ "$SQ" -nt "$OBJ" ]; then
	echo "building $OBJ (a few minutes)" >&2
	clang -O2 -gdwarf-4 -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls -c -o "$OBJ.tmp" "$SQ"
	mv "$OBJ.tmp" "$OBJ"
fi
clang -O2 -gdwarf-4 -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls -I "$(dirname "$SQ")" \
	-o "$W/sq" bench/sqlite_driver.c "$OBJ" -lpthread -ldl -lm
SQ_UF=
if [ -n "$HAVE_UF" ] && [ -n "${SQLITE_PG:-1}" ]; then
	if [ ! -f bench/build/sqlite/sqlite3_pg.o ] || [ "$SQ" -nt bench/build/sqlite/sqlite3_pg.o ]; then
		echo "building bench/build/sqlite/sqlite3_pg.o (a few minutes)" >&2
		gcc -O2 -g -pg -c -o bench/build/sqlite/sqlite3_pg.o.tmp "$SQ"
		mv bench/build/sqlite/sqlite3_pg.o.tmp bench/build/sqlite/sqlite3_pg.o
	fi
	gcc -O2 -g -pg -I "$(dirname "$SQ")" -o "$W/sqpg" bench/sqlite_driver.c bench/build/sqlite/sqlite3_pg.o \
		-lpthread -ldl -lm
	SQ_UF=1
fi
SCONFIGS="s_untraced s_plain s_auto"
[ -n "$BEFORE" ] && SCONFIGS="$SCONFIGS sb_plain sb_auto"
[ -n "$SQ_UF" ] && SCONFIGS="$SCONFIGS su_plain su_auto"
scmd_of() {
	case $1 in
	s_untraced) echo "$W/sq $ROWS" ;;
	s_plain) echo "$REC -- $W/sq $ROWS" ;;
	s_auto) echo "$REC --auto-args -- $W/sq $ROWS" ;;
	sb_plain) echo "$RECB -- $W/sq $ROWS" ;;
	sb_auto) echo "$RECB --auto-args -- $W/sq $ROWS" ;;
	su_plain) echo "$UREC $W/sqpg $ROWS" ;;
	su_auto) echo "$UREC -a $W/sqpg $ROWS" ;;
	esac
}
slabel() {
	case $1 in
	s_untraced) echo "untraced" ;;
	s_plain) echo "sftrace record" ;;
	s_auto) echo "sftrace record --auto-args" ;;
	sb_plain) echo "BEFORE: sftrace record" ;;
	sb_auto) echo "BEFORE: sftrace record --auto-args" ;;
	su_plain) echo "uftrace record (-pg)" ;;
	su_auto) echo "uftrace record -a (-pg)" ;;
	esac
}
rounds "$SCONFIGS" scmd_of
ratio() { awk -v a="$(med "$1" "$3")" -v b="$(med "$2" "$3")" 'BEGIN {printf "%.2fx", a / b}'; }
echo
# thread ms: the driver's own thread's CPU time over its work (stderr,
# "loop thread cpu ns"): the wall time it does not show is waiting (for
# the writer thread to give a slot back, for a CPU).
printf '%-44s %9s %9s %9s   %s\n' "SQLite driver, $ROWS rows (median of $RUNS)" "wall ms" "cpu ms" "thread ms" \
	"over plain (wall, cpu, thread)"
for c in $SCONFIGS; do
	case $c in
	s_auto) x="$(ratio s_auto s_plain 1), $(ratio s_auto s_plain 2), $(ratio s_auto s_plain 3)   (target: at most 2x)" ;;
	sb_auto) x="$(ratio sb_auto sb_plain 1), $(ratio sb_auto sb_plain 2), $(ratio sb_auto sb_plain 3)" ;;
	su_auto) x="$(ratio su_auto su_plain 1), $(ratio su_auto su_plain 2), $(ratio su_auto su_plain 3)" ;;
	*) x= ;;
	esac
	printf '%-44s %9.1f %9.1f %9.1f   %s\n' "$(slabel "$c")" "$(med "$c" 1 | awk '{print $1/1000}')" \
		"$(med "$c" 2 | awk '{print $1/1000}')" "$(med "$c" 3 | awk '{print $1/1e6}')" "$x"
done
if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null; then
	CR=${SQLITE_CG_ROWS:-2000}
	su=$(cg_instr "$W/sq" "$W/sq" "$CR")
	sp=$(cg_instr "$W/sq" "$SFT" record -q -o "$W/t/sf.log" -- "$W/sq" "$CR")
	spr=$(cat "$W/cg_rec")
	sa=$(cg_instr "$W/sq" "$SFT" record -q --auto-args -o "$W/t/sf.log" -- "$W/sq" "$CR")
	sar=$(cat "$W/cg_rec")
	echo "instructions, $CR rows (callgrind, the program's process): untraced $su, record $sp," \
		"--auto-args $sa ($(awk -v a="$sa" -v b="$sp" 'BEGIN {printf "%.2fx", a / b}') plain)"
	echo "  sftrace record's own process: $spr plain, $sar with --auto-args (DWARF read for the specs)"
	if [ -n "$BEFORE" ]; then
		sbp=$(cg_instr "$W/sq" "$BEFORE" record -q -o "$W/t/sf.log" -- "$W/sq" "$CR")
		sba=$(cg_instr "$W/sq" "$BEFORE" record -q --auto-args -o "$W/t/sf.log" -- "$W/sq" "$CR")
		echo "  BEFORE: record $sbp, --auto-args $sba ($(awk -v a="$sba" -v b="$sbp" 'BEGIN {printf "%.2fx", a / b}') plain)"
	fi
fi
