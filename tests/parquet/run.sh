#!/bin/sh
# Writes Parquet files with sftrace's writer (gen.c) and reads them back
# with nodejs-polars and DuckDB (check.mjs). Installs the readers from the
# pinned package-lock.json on first use. Exits non-zero on any failure.
#
#   tests/parquet/run.sh            (CC, CFLAGS and KEEP=1 are honoured)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ ! -d "$here/node_modules/nodejs-polars-linux-x64-gnu" ] ||
   [ ! -d "$here/node_modules/@duckdb/node-api" ]; then
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/sftrace-parquet.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
	echo "output kept in $out"
else
	trap 'rm -rf "$out"' EXIT
fi

${CC:-cc} -std=gnu11 -D_GNU_SOURCE -I"$root/src" -O2 -g \
	-Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes ${CFLAGS:-} \
	-o "$out/gen" "$here/gen.c" \
	"$root"/src/output/parquet*.c "$root/src/output/arrow_schema.c" \
	"$root/src/output/thrift_compact.c" "$root/src/output/protobuf.c" "$root/src/lib/util.c" "$root/src/lib/text_esc.c" -lzstd
"$out/gen" "$out"
node "$here/check.mjs" "$out"
