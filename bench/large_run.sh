#!/bin/sh
# A recording larger than the page cache holds dirty: where writeback to the
# disk starts to set the pace, and what the packed encoding buys there.
# Records `fib N` (default 40: 662M events, 5.3 GB raw, about 1.4 GB packed)
# with SFTRACE_ENCODING=raw and packed, once on tmpfs (/dev/shm) and once on
# the disk (DISK_DIR, default /var/tmp), and prints for each: log bytes,
# bytes/event and wall seconds. Logs are deleted after each run.
#
#   sh bench/large_run.sh [N]
#
# It first prints the kernel's dirty-page limits and the memory, which say
# how much of a log can sit in the page cache before writers are throttled:
# with vm.dirty_ratio R, about R% of available memory.
# Needs free space of about 1.2x the raw log on both file systems.
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${1:-40}"
SFTRACE="${SFTRACE:-$ROOT/build/sftrace}"
DISK_DIR="${DISK_DIR:-/var/tmp}"
[ -x "$SFTRACE" ] || make -C "$ROOT" -j2 all >/dev/null
FIB="$ROOT/bench/build/fib"
mkdir -p "$ROOT/bench/build"
[ -x "$FIB" ] || clang -O2 -fxray-instrument -fxray-instruction-threshold=1 -fno-optimize-sibling-calls \
	-I "$ROOT/bench" -o "$FIB" "$ROOT/bench/fib.c"

echo "vm: dirty_ratio $(cat /proc/sys/vm/dirty_ratio)% dirty_background_ratio" \
	"$(cat /proc/sys/vm/dirty_background_ratio)% dirty_bytes $(cat /proc/sys/vm/dirty_bytes)" \
	"dirty_expire $(cat /proc/sys/vm/dirty_expire_centisecs)cs"
awk '/^MemTotal|^MemAvailable|^Dirty/ {printf "%s %.1f GB  ", $1, $2 / 1048576} END {print ""}' /proc/meminfo
df -h /dev/shm "$DISK_DIR" | sed 1d | awk '{print "free on " $6 ": " $4}'

printf '%-10s %-7s %12s %8s %8s\n' where encoding "log bytes" B/event "wall s"
for dir in /dev/shm "$DISK_DIR"; do
	for enc in raw packed; do
		work="$(mktemp -d "$dir/sftrace-large.XXXXXX")"
		start=$(date +%s.%N)
		SFTRACE_ENCODING=$enc "$SFTRACE" record -o "$work/sf.log" -- "$FIB" "$N" >"$work/out" 2>&1 || {
			tail -5 "$work/out"; rm -rf "$work"; exit 1; }
		sync -f "$work/sf.log" # the disk run ends when its bytes are on the disk
		end=$(date +%s.%N)
		events=$(sed -n 's/^sftrace: wrote .*: \([0-9]*\) events.*/\1/p' "$work/out")
		bytes=$(stat -c %s "$work/sf.log")
		grep DROPPED "$work/out" || true
		printf '%-10s %-7s %12s %8.2f %8.1f\n' "$dir" $enc "$bytes" \
			"$(echo "$bytes / $events" | bc -l)" "$(echo "$end - $start" | bc -l)"
		rm -rf "$work"
	done
done
