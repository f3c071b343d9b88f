// Runs the reference tool's two polars queries on `sftrace convert --type
// pola` output and reads the same files with DuckDB; prints one JSON object
// for the Python cases to assert on.
//
//   node pola_query.mjs OUT.pola            # counts, queries, types
//   node pola_query.mjs OUT.pola --frames   # also one row per frame (test_query.py
//                                           # compares them; millions on a big trace)
import pl from "nodejs-polars";
import { DuckDBInstance } from "@duckdb/node-api";
import { types } from "./types.mjs";

const file = process.argv[2];
const wantFrames = process.argv.includes("--frames");
const sf = pl.scanParquet(file);
const symtab = pl.scanParquet(file + ".symtab");

const events = sf.collectSync();
const syms = symtab.collectSync();

// Query 1 (reference docs): top functions by call count, joined with names.
const top = sf
  .filter(pl.col("kind").eq(1))
  .groupBy("func_id")
  .agg(pl.len().alias("func_count"))
  .sort("func_count", true)
  .head(1000)
  .join(symtab, { on: "func_id" })
  .collectSync();
const calls = {};
for (const r of top.toRecords()) calls[r.name] = (calls[r.name] || 0) + Number(r.func_count);

// Query 2 (reference docs): the longest leaf frames (frames nobody calls
// from), from each frame's entry and exit times.
const parents = sf.select(pl.col("parent").alias("frame_id")).unique();
const leaves = sf
  .groupBy("frame_id")
  .agg(
    pl.col("time").cast(pl.Int64).min().alias("start"),
    pl.col("time").cast(pl.Int64).max().alias("end"),
    pl.col("func_id").first().alias("func_id"),
    pl.len().alias("rows"),
  )
  .join(parents, { on: "frame_id", how: "anti" })
  .withColumns(pl.col("end").minus(pl.col("start")).alias("dur"))
  .sort("dur", true)
  .head(10)
  .join(symtab, { on: "func_id" })
  .collectSync();

// Consistency: every frame has exactly two rows, one entry.
const perFrame = sf.groupBy("frame_id").agg(pl.len().alias("n"), pl.col("kind").eq(1).sum().alias("entries")).collectSync();
const badFrames = perFrame.filter(pl.col("n").neq(2).or(pl.col("entries").neq(1))).height;
// Every nonzero parent refers to an existing frame.
const frames = sf.select("frame_id").unique();
const orphans = sf
  .filter(pl.col("parent").neq(0))
  .select(pl.col("parent").alias("frame_id"))
  .unique()
  .join(frames, { on: "frame_id", how: "anti" })
  .collectSync().height;

// One row per frame, entry and end rows folded (test_query.py compares
// `sftrace query`'s frames with these); 64-bit ids as strings.
const frameRows = !wantFrames ? undefined : sf
  .groupBy("frame_id")
  .agg(
    pl.col("parent").first().alias("parent"),
    pl.col("tid").first().alias("tid"),
    pl.col("func_id").first().alias("func_id"),
    pl.col("time").cast(pl.Int64).min().alias("start"),
    pl.col("time").cast(pl.Int64).max().alias("end"),
  )
  .collectSync()
  .toRecords()
  .map((r) => [String(r.frame_id), String(r.parent), r.tid, String(r.func_id), String(r.start), String(r.end)]);

const db = await DuckDBInstance.create(":memory:");
const con = await db.connect();
const rd = await con.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${file}')`);
const duckRows = Number(rd.getRowObjects()[0].n);
const dt = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`);
const duckTypes = dt.getRowObjects().map((r) => [r.column_name, r.column_type]);
const st = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}.symtab')`);
const duckSymTypes = st.getRowObjects().map((r) => [r.column_name, r.column_type]);

console.log(JSON.stringify({
  rows: events.height,
  symtab_rows: syms.height,
  types: types(events),
  symtab_types: types(syms),
  calls,
  leaves: leaves.toRecords().map((r) => ({ frame_id: String(r.frame_id), name: r.name, dur: Number(r.dur),
    rows: Number(r.rows) })),
  frames: frameRows,
  symtab: syms.toRecords().map((r) => [String(r.func_id), r.name, r.path]),
  aliases: syms.toRecords().map((r) => [r.name, r.aliases]),
  bad_frames: badFrames,
  orphans,
  tids: events.getColumn("tid").unique().len(),
  duck_rows: duckRows,
  duck_types: duckTypes,
  duck_symtab_types: duckSymTypes,
}));
