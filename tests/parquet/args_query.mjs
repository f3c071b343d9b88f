// Reads OUT.args (sftrace convert --type pola) with nodejs-polars and DuckDB:
// column types, and every value row as "function index name value" (joined
// with OUT on frame_id and OUT.symtab on func_id), in frame order.
import pl from 'nodejs-polars';
import { DuckDBInstance } from '@duckdb/node-api';

const out = process.argv[2];
const args = pl.scanParquet(out + '.args').collectSync();
const ev = pl.scanParquet(out).collectSync();
const sym = pl.scanParquet(out + '.symtab').collectSync();
const types = Object.fromEntries(args.columns.map((c, i) => [c, String(args.dtypes[i])]));
const frames = ev.filter(pl.col('kind').eq(1)).select('frame_id', 'func_id').join(sym, { on: 'func_id' });
const rows = args.join(frames, { on: 'frame_id', how: 'left' }).sort(['frame_id', 'index'])
  .toRecords().map((r) => `${r.name_right ?? r.name} ${r.index} ${r.name} ${r.value}`);
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
const reader = await con.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${out}.args')`);
console.log(JSON.stringify({ types, rows, duckdb: Number(reader.getRowObjects()[0].n) }));
