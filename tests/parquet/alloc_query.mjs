// Reads OUT.alloc (sftrace convert --type pola) with nodejs-polars and DuckDB:
// column types, allocation rows per innermost traced function (joined with
// OUT on frame_id and OUT.symtab on func_id), bytes freed, and DuckDB's count.
import pl from 'nodejs-polars';
import { DuckDBInstance } from '@duckdb/node-api';

const out = process.argv[2];
const alloc = pl.scanParquet(out + '.alloc').collectSync();
const ev = pl.scanParquet(out).collectSync();
const sym = pl.scanParquet(out + '.symtab').collectSync();
const types = Object.fromEntries(alloc.columns.map((c, i) => [c, String(alloc.dtypes[i])]));
const frames = ev.filter(pl.col('kind').eq(1)).select('frame_id', 'func_id').join(sym, { on: 'func_id' });
const per = alloc.filter(pl.col('kind').eq(1)).join(frames, { on: 'frame_id', how: 'left' })
  .groupBy('name').agg(pl.len().alias('n'), pl.col('size').sum().alias('bytes'));
const byName = {};
for (const r of per.toRecords()) byName[r.name ?? ''] = [Number(r.n), Number(r.bytes)];
const kinds = {};
for (const r of alloc.groupBy('kind').agg(pl.len().alias('n')).toRecords()) kinds[r.kind] = Number(r.n);
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
const reader = await con.runAndReadAll(`SELECT count(*) AS n, sum(CASE WHEN site_name <> '' THEN 1 ELSE 0 END) AS named FROM read_parquet('${out}.alloc')`);
const row = reader.getRowObjects()[0];
console.log(JSON.stringify({ types, byName, kinds, duckdb: Number(row.n), named: Number(row.named),
  aligned: alloc.filter(pl.col('align').eq(64)).height }));
