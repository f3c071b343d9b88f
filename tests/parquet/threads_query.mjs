// Reads `sftrace convert --type pola` output of a multi-process recording:
// OUT's rows with the process each belongs to, found through OUT.threads
// (tid, and time within the thread's [start, end]), with polars and with
// DuckDB; prints one JSON object for the Python cases to assert on.
//
//   node threads_query.mjs OUT.pola
import pl from "nodejs-polars";
import { DuckDBInstance } from "@duckdb/node-api";
import { types } from "./types.mjs";

const file = process.argv[2];
const threads = pl.scanParquet(file + ".threads").collectSync();
const ev = pl.scanParquet(file);
const symtab = pl.scanParquet(file + ".symtab");

// Every row joined to its thread by the documented rule.
const rows = ev
  .join(pl.scanParquet(file + ".threads"), { on: "tid" })
  .filter(pl.col("time").cast(pl.Int64).gtEq(pl.col("start").cast(pl.Int64))
    .and(pl.col("time").cast(pl.Int64).ltEq(pl.col("end").cast(pl.Int64))))
  .join(symtab, { on: "func_id" })
  .select("frame_id", "kind", pl.col("time").cast(pl.Int64).alias("t"), "pid", "name", "tid")
  .sort("t")
  .collectSync();

const db = await DuckDBInstance.create(":memory:");
const con = await db.connect();
const dt = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}.threads')`);
// The tracer's cost columns as DuckDB reads them, one row per process.
const duckCost = await con.runAndReadAll(
  `SELECT DISTINCT pid, tracer_cost_low_ps, tracer_cost_high_ps, tracer_cost_error_ppm,
          tracer_cost_exit_caller_ps, tracer_cost_exit_call_ps
   FROM read_parquet('${file}.threads') ORDER BY pid`);
const duck = await con.runAndReadAll(
  `SELECT t.pid, t.process_name, count(*) AS n FROM read_parquet('${file}') e
   JOIN read_parquet('${file}.threads') t ON e.tid = t.tid AND e.time BETWEEN t.start AND t."end"
   GROUP BY 1, 2 ORDER BY 1`);

console.log(JSON.stringify({
  types: types(threads),
  threads: threads.toRecords().map((r) => ({
    tid: r.tid, pid: r.pid, ppid: r.ppid, thread_name: r.thread_name, process_name: r.process_name,
    cmdline: r.cmdline, start: Number(r.start), end: Number(r.end),
    tracer_cost_caller_ps: Number(r.tracer_cost_caller_ps), tracer_cost_call_ps: Number(r.tracer_cost_call_ps),
    tracer_cost_low_ps: Number(r.tracer_cost_low_ps), tracer_cost_high_ps: Number(r.tracer_cost_high_ps),
    tracer_cost_error_ppm: Number(r.tracer_cost_error_ppm),
    tracer_cost_exit_caller_ps: Number(r.tracer_cost_exit_caller_ps),
    tracer_cost_exit_call_ps: Number(r.tracer_cost_exit_call_ps),
  })),
  events: Number(ev.select(pl.len()).collectSync().getColumn("len")[0]),
  rows: rows.toRecords().map((r) => [Number(r.frame_id), r.kind, Number(r.t), r.pid, r.name, r.tid]),
  duck_types: dt.getRowObjects().map((r) => [r.column_name, r.column_type]),
  duck_per_process: duck.getRowObjects().map((r) => [Number(r.pid), r.process_name, Number(r.n)]),
  duck_cost: duckCost.getRowObjects().map((r) => [Number(r.pid), Number(r.tracer_cost_low_ps),
    Number(r.tracer_cost_high_ps), Number(r.tracer_cost_error_ppm), Number(r.tracer_cost_exit_caller_ps),
    Number(r.tracer_cost_exit_call_ps)]),
}));
