// Reads the files written by gen.c with the real readers and compares them
// with the expected contents gen.c wrote beside them.
//
//   node check.mjs OUTDIR
//
// Prints one PASS/FAIL line per check and a closing "N passed, M failed".
import fs from "node:fs";
import path from "node:path";
import pl from "nodejs-polars";
import { DuckDBInstance } from "@duckdb/node-api";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node check.mjs OUTDIR");
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed++;
    console.log(`PASS ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}${detail ? ": " + detail : ""}`);
  }
}

function readJsonl(name) {
  const text = fs.readFileSync(path.join(dir, name), "utf8");
  return text.split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
}

const EVENTS = {
  cols: ["frame_id", "parent", "tid", "func_id", "time", "kind"],
  // polars' own type names (as printed by the Rust side: the JS binding
  // reports every Duration as "ms", so the printed header is what we trust)
  polars: ["u64", "u64", "u32", "u64", "duration[ns]", "u32"],
  duckdb: ["UBIGINT", "UBIGINT", "UINTEGER", "UBIGINT", "BIGINT", "UINTEGER"],
  signed: new Set(["time"]),
};
const SYMTAB = {
  cols: ["func_id", "name", "path"],
  polars: ["u64", "str", "str"],
  duckdb: ["UBIGINT", "VARCHAR", "VARCHAR"],
  signed: new Set(),
};

// "Series: 'time' [duration[ns]]" -> "duration[ns]"
function polarsType(df, col) {
  const text = df.getColumn(col).head(0).toString();
  const m = text.match(/^Series: .* \[(.*)\]$/m);
  return m ? m[1] : text;
}

// Every value as a string: durations through Int64 (their nanoseconds).
function polarsRows(df, spec) {
  const exprs = spec.cols.map((c) =>
    spec.polars[spec.cols.indexOf(c)].startsWith("duration")
      ? pl.col(c).cast(pl.Int64).cast(pl.Utf8)
      : pl.col(c).cast(pl.Utf8),
  );
  return df.select(...exprs).toRecords();
}

function firstDiff(got, want, cols) {
  if (got.length !== want.length) return `rows ${got.length} != ${want.length}`;
  for (let i = 0; i < want.length; i++)
    for (const c of cols)
      if (String(got[i][c]) !== want[i][c])
        return `row ${i} ${c}: ${JSON.stringify(got[i][c])} != ${JSON.stringify(want[i][c])}`;
  return null;
}

function checkPolars(file, spec, expected) {
  const name = path.basename(file);
  let df;
  try {
    df = pl.scanParquet(file).collectSync();
  } catch (e) {
    check(`polars read ${name}`, false, e.message);
    return;
  }
  check(`polars columns ${name}`, JSON.stringify(df.columns) === JSON.stringify(spec.cols),
    JSON.stringify(df.columns));
  const types = spec.cols.map((c) => polarsType(df, c));
  check(`polars dtypes ${name}`, JSON.stringify(types) === JSON.stringify(spec.polars),
    JSON.stringify(types));
  const diff = firstDiff(polarsRows(df, spec), expected, spec.cols);
  check(`polars values ${name}`, diff === null, diff);
}

// Unsigned and signed comparison of decimal strings, byte-wise for strings.
function cmp(a, b, kind) {
  if (kind === "str") return Buffer.compare(Buffer.from(a), Buffer.from(b));
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

async function checkDuckdb(con, file, spec, expected, rowGroupRows) {
  const name = path.basename(file);
  const q = `'${file}'`;
  let r;
  try {
    r = await con.runAndReadAll(`SELECT * FROM read_parquet(${q}) LIMIT 0`);
  } catch (e) {
    check(`duckdb read ${name}`, false, e.message);
    return;
  }
  const types = r.columnTypes().map(String);
  check(`duckdb types ${name}`, JSON.stringify(types) === JSON.stringify(spec.duckdb),
    JSON.stringify(types));

  const sel = spec.cols.map((c) => `CAST("${c}" AS VARCHAR) AS "${c}"`).join(", ");
  r = await con.runAndReadAll(`SELECT ${sel} FROM read_parquet(${q})`);
  const diff = firstDiff(r.getRowObjectsJS(), expected, spec.cols);
  check(`duckdb values ${name}`, diff === null, diff);

  // Footer statistics, per row group and column, against the data.
  r = await con.runAndReadAll(
    `SELECT row_group_id, path_in_schema, stats_min_value, stats_max_value, stats_null_count
     FROM parquet_metadata(${q}) ORDER BY row_group_id, column_id`);
  let bad = null;
  for (const m of r.getRowObjectsJS()) {
    const rg = Number(m.row_group_id);
    const col = m.path_in_schema;
    const kind = spec.polars[spec.cols.indexOf(col)] === "str" ? "str" : "int";
    const vals = expected.slice(rg * rowGroupRows, (rg + 1) * rowGroupRows).map((e) => e[col]);
    let lo = vals[0];
    let hi = vals[0];
    for (const v of vals) {
      if (cmp(v, lo, kind) < 0) lo = v;
      if (cmp(v, hi, kind) > 0) hi = v;
    }
    if (m.stats_min_value !== lo || m.stats_max_value !== hi || Number(m.stats_null_count) !== 0) {
      bad = `rg ${rg} ${col}: min ${m.stats_min_value} max ${m.stats_max_value} want ${lo} ${hi}`;
      break;
    }
  }
  check(`duckdb statistics ${name}`, bad === null, bad);
}

// Filters whose answer depends on the statistics being compared unsigned:
// a reader that prunes row groups with them must still find these rows.
async function checkPushdown(con, file, expected) {
  const name = path.basename(file);
  const big = (1n << 62n);
  const want = expected.filter((e) => BigInt(e.frame_id) >= big).length;
  const r = await con.runAndReadAll(
    `SELECT count(*) AS n FROM read_parquet('${file}') WHERE frame_id >= ${big}`);
  const got = Number(r.getRowObjectsJS()[0].n);
  check(`duckdb pushdown ${name}`, got === want, `${got} != ${want}`);

  const df = pl.scanParquet(file)
    .filter(pl.col("frame_id").gtEq(pl.lit(Number(big)).cast(pl.UInt64)))
    .collectSync();
  check(`polars pushdown ${name}`, df.height === want, `${df.height} != ${want}`);
}

// The query from the issue: which functions are entered most often.
function checkQuery(events, symtab, expected) {
  let res;
  try {
    const sf = pl.scanParquet(events);
    const sym = pl.scanParquet(symtab);
    res = sf
      .filter(pl.col("kind").eq(1))
      .groupBy("func_id")
      .agg(pl.len())
      .sort({ by: ["len", "func_id"], descending: [true, false] })
      .head(10)
      .join(sym, { on: "func_id", how: "left" })
      .collectSync();
  } catch (e) {
    check("polars query", false, e.message);
    return;
  }
  const got = res.select(
    pl.col("func_id").cast(pl.Utf8), pl.col("len").cast(pl.Utf8), pl.col("name"),
  ).toRecords();
  const diff = firstDiff(got, expected, ["func_id", "len", "name"]);
  check("polars query top functions", diff === null, diff);
}

const events = readJsonl("events.jsonl");
const symtab = readJsonl("symtab.jsonl");
const eventsBig = readJsonl("events-big.jsonl");
const query = JSON.parse(fs.readFileSync(path.join(dir, "query.json"), "utf8"));

const inst = await DuckDBInstance.create(":memory:");
const con = await inst.connect();
for (const codec of ["zstd", "none"]) {
  for (const enc of ["auto", "plain", "dict", "delta"]) {
    const ev = path.join(dir, `events-${codec}-${enc}.parquet`);
    checkPolars(ev, EVENTS, events);
    await checkDuckdb(con, ev, EVENTS, events, 2048);
    await checkPushdown(con, ev, events);
    const st = path.join(dir, `symtab-${codec}-${enc}.parquet`);
    checkPolars(st, SYMTAB, symtab);
    await checkDuckdb(con, st, SYMTAB, symtab, 1024);
  }
}
const big = path.join(dir, "events-big.parquet");
checkPolars(big, EVENTS, eventsBig);
await checkDuckdb(con, big, EVENTS, eventsBig, 200000);
const rows = path.join(dir, "events-rows.parquet");
checkPolars(rows, EVENTS, eventsBig);
await checkDuckdb(con, rows, EVENTS, eventsBig, 20000);
checkPolars(path.join(dir, "events-empty.parquet"), EVENTS, []);
await checkDuckdb(con, path.join(dir, "events-empty.parquet"), EVENTS, [], 1);
checkQuery(big, path.join(dir, "symtab-zstd-auto.parquet"), query);

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
