#!/bin/sh
# A small end-to-end run on examples/c-demo, from a fresh clone: install
# dependencies, build sftrace, build examples/c-demo with XRay sleds, record
# it, convert the log to Perfetto and Parquet, and print a report.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
make -j2 all
SFTRACE="$PWD/build/sftrace"
OUT="$PWD/trace"
mkdir -p "$OUT"
clang -O2 -g -fxray-instrument -fxray-instruction-threshold=1 -o "$OUT/demo" examples/c-demo/demo.c -lpthread

echo "== sftrace record"
"$SFTRACE" record --force -o "$OUT/sf.log" -- "$OUT/demo" 20000
echo "== sftrace convert (Perfetto, Parquet)"
"$SFTRACE" convert "$OUT/sf.log" -o "$OUT/sf.pb.gz"
"$SFTRACE" convert --type pola "$OUT/sf.log" -o "$OUT/sf.pola"
echo "== sftrace report"
"$SFTRACE" report -n 10 "$OUT/sf.log"
cat <<MSG

Trace files are in $OUT:
  sf.log                  the raw log   (sftrace dump $OUT/sf.log | less)
  sf.pb.gz                Perfetto      (open in https://ui.perfetto.dev, or vizviewer --use_external_processor)
  sf.pola, sf.pola.symtab Parquet       (polars: pl.scan_parquet("$OUT/sf.pola"); DuckDB: SELECT * FROM '$OUT/sf.pola')
  sf.pola.threads         Parquet       (one row per thread: tid, pid, names, command line, first and last row time)
MSG
