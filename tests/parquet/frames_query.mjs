// Frames as polars sees them in `sftrace convert --type pola` output, and
// the reference tool's two queries, for test_query.py to compare with
// `sftrace query`. Prints one JSON object; 64-bit ids as strings.
//
//   node frames_query.mjs OUT.pola
import pl from "nodejs-polars";

const file = process.argv[2];
const sf = pl.scanParquet(file);
const symtab = pl.scanParquet(file + ".symtab");
const str = (v) => String(v);

// One row per frame: its entry and end rows folded.
const frames = sf
  .groupBy("frame_id")
  .agg(
    pl.col("parent").first().alias("parent"),
    pl.col("tid").first().alias("tid"),
    pl.col("func_id").first().alias("func_id"),
    pl.col("time").cast(pl.Int64).min().alias("start"),
    pl.col("time").cast(pl.Int64).max().alias("end"),
  )
  .sort("frame_id")
  .collectSync();

// Query 1 (README): the most called functions.
const top = sf
  .filter(pl.col("kind").eq(1))
  .groupBy("func_id")
  .agg(pl.len().alias("func_count"))
  .sort("func_count", true)
  .head(10)
  .join(symtab, { on: "func_id" })
  .collectSync();

// Query 2 (README): the longest leaf frames.
const parents = sf.select(pl.col("parent").alias("frame_id")).unique();
const leaves = sf
  .groupBy("frame_id")
  .agg(
    pl.col("time").cast(pl.Int64).min().alias("start"),
    pl.col("time").cast(pl.Int64).max().alias("end"),
    pl.col("func_id").first().alias("func_id"),
  )
  .join(parents, { on: "frame_id", how: "anti" })
  .withColumns(pl.col("end").minus(pl.col("start")).alias("dur"))
  .sort("dur", true)
  .head(10)
  .join(symtab, { on: "func_id" })
  .collectSync();

console.log(JSON.stringify({
  frames: frames.toRecords().map((r) => [str(r.frame_id), str(r.parent), r.tid, str(r.func_id), str(r.start), str(r.end)]),
  symtab: symtab.collectSync().toRecords().map((r) => [str(r.func_id), r.name, r.path]),
  top: top.toRecords().map((r) => [str(r.func_id), r.name, Number(r.func_count)]),
  leaves: leaves.toRecords().map((r) => [str(r.frame_id), r.name, str(r.dur)]),
}));
