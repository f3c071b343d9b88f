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

# The reference docs' two polars queries (nodejs-polars from tests/parquet),
# for builds of sftrace that have no 'report' command.
polars_top() {
	if [ ! -d "$ROOT/tests/parquet/node_modules/nodejs-polars-linux-x64-gnu" ]; then
		(cd "$ROOT/tests/parquet" && npm ci --no-audit --no-fund --loglevel=error)
	fi
	(cd "$ROOT/tests/parquet" && SF_POLA="$1" node --input-type=module -e '
import pl from "nodejs-polars";
const sf = pl.scanParquet(process.env.SF_POLA);
const symtab = pl.scanParquet(process.env.SF_POLA + ".symtab");
const short = (s) => (s.length > 110 ? s.slice(0, 107) + "..." : s);
console.log("most called functions (calls, name):");
const top = sf.filter(pl.col("kind").eq(1)).groupBy("func_id").agg(pl.len().alias("func_count"))
  .sort("func_count", true).head(10).join(symtab, { on: "func_id" }).sort("func_count", true).collectSync();
for (const r of top.toRecords()) console.log(String(r.func_count).padStart(10), " ", short(r.name));
console.log("longest leaf frames (duration, name):");
const frames = sf.groupBy("frame_id").agg(pl.col("time").cast(pl.Int64).min().alias("start"),
  pl.col("time").cast(pl.Int64).max().alias("end"), pl.col("func_id").first().alias("func_id"));
const parents = sf.select(pl.col("parent").alias("frame_id")).unique();
const leaves = frames.join(parents, { on: "frame_id", how: "anti" })
  .withColumns(pl.col("end").minus(pl.col("start")).alias("dur")).sort("dur", true).head(10)
  .join(symtab, { on: "func_id" }).sort("dur", true).collectSync();
for (const r of leaves.toRecords()) console.log((Number(r.dur) / 1000).toFixed(1).padStart(10) + " us", short(r.name));
')
}

echo "== the top functions"
if sftrace --help | grep -q '^  report '; then
	sftrace report -n 15 "$TRACE_DIR/sf.log"
else
	polars_top "$PWD/$TRACE_DIR/sf.pola"
fi

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
