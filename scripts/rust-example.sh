#!/bin/sh
# The main job, from a fresh clone: sftrace's reference workflow on a real
# Rust crate (examples/rust-bench: serde_json, regex, rayon, criterion).
# Installs dependencies, builds sftrace, builds the crate's criterion bench
# with XRay sleds, writes a filter, records a short profiling run, converts
# the log to Parquet and Perfetto, shows the top functions, and says where
# the files are and how to open them. The steps are the ones in
# skills/sftrace/SKILL.md.
#
# Environment (the tests use these; a fresh clone needs none):
#   SFTRACE    an sftrace binary to use; skips installing and building
#   CRATE_DIR  the crate to build and trace (default examples/rust-bench)
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${SFTRACE:-}" ]; then
	sh "$ROOT/scripts/install-deps.sh"
	sh "$ROOT/scripts/install-rust-deps.sh"
	make -C "$ROOT" -j2 all
	SFTRACE="$ROOT/build/sftrace"
fi
# 'sftrace' below is the one just built; cargo is rustup's.
PATH="$(cd "$(dirname "$SFTRACE")" && pwd):$HOME/.cargo/bin:$PATH"
cd "${CRATE_DIR:-$ROOT/examples/rust-bench}"

echo "== build the benchmark with XRay sleds (the first build takes about 2 minutes)"
RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zinstrument-xray=always" cargo +stable bench --profile profiling --no-run
BENCH_BIN="$(ls -t target/profiling/deps/resolver-* | grep -v '\.d$' | head -1)"

echo "== sftrace filter: the resolver's own functions"
sftrace filter -p "$BENCH_BIN" -r 'resolve|normalize|cache' -o sftrace.filter

echo "== sftrace record: one second of profiling per benchmark"
TRACE_DIR="sftrace-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$TRACE_DIR"
sftrace record -f sftrace.filter -o "$TRACE_DIR/sf.log" -- "$BENCH_BIN" --bench --profile-time 1

echo "== sftrace convert: Parquet (polars) and Perfetto"
sftrace convert --type pola "$TRACE_DIR/sf.log" -o "$TRACE_DIR/sf.pola"
sftrace convert "$TRACE_DIR/sf.log" -o "$TRACE_DIR/sf.pb.gz"

echo "== sftrace report: the top functions by self time"
sftrace report -n 15 "$TRACE_DIR/sf.log"

DIR="$PWD/$TRACE_DIR"
cat <<MSG

Trace files are in $DIR:
  sf.log                   the raw log: sftrace report / sftrace dump $DIR/sf.log
  sf.pb.gz                 Perfetto: open it in https://ui.perfetto.dev, or for large traces
                           vizviewer --use_external_processor $DIR/sf.pb.gz
  sf.pola, sf.pola.symtab  Parquet: polars  pl.scan_parquet("$DIR/sf.pola").join(
                             pl.scan_parquet("$DIR/sf.pola.symtab"), on="func_id")
                           DuckDB  SELECT count(*) FROM '$DIR/sf.pola'
The benchmark binary is $PWD/$BENCH_BIN and the filter $PWD/sftrace.filter.
MSG
