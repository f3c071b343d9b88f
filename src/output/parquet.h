/* A streaming Parquet writer for flat tables of a few column types, as
 * `sftrace convert --type pola` needs (readable by polars and DuckDB).
 *
 * Rows are appended one value per column, then pq_end_row(), or a whole
 * row of integers at once with pq_write_row_u64s(). The writer streams:
 * rows are encoded a few thousand at a time into pages, pages are
 * compressed as they fill, and a row group (opt.row_group_rows rows) is
 * handed to the write callback as its compressed bytes; pq_finish writes
 * the footer. Memory: the compressed row group plus a fixed amount per
 * column, whatever the number of rows.
 *
 * Each column is REQUIRED (no nulls). The writer tries the applicable
 * encodings (dictionary, DELTA_BINARY_PACKED, PLAIN) on the first values
 * of a column chunk, keeps the one that compressed best, and tries again
 * every few row groups. A row group ends early if a dictionary outgrows
 * its limits (2^20 entries, 16 MiB). The footer has min/max statistics and an `ARROW:schema` entry, so polars
 * reads each column with its exact type (UInt64, UInt32, Duration(ns),
 * String); DuckDB reads UBIGINT, UINTEGER, BIGINT, VARCHAR.
 */
#ifndef SFTRACE_OUTPUT_PARQUET_H
#define SFTRACE_OUTPUT_PARQUET_H

#include <stddef.h>
#include <stdint.h>

enum pq_type {
	PQ_UINT64,      /* INT64, UINT_64 / INTEGER(64, unsigned) */
	PQ_UINT32,      /* INT32, UINT_32 / INTEGER(32, unsigned) */
	PQ_DURATION_NS, /* INT64 (signed); Arrow Duration(ns) via ARROW:schema */
	PQ_STRING,      /* BYTE_ARRAY, UTF8 / STRING */
};

enum pq_codec {
	PQ_CODEC_ZSTD = 0, /* the default */
	PQ_CODEC_NONE = 1,
};

/* Encodings the writer may choose from (mask bits for pq_options). PLAIN is
 * the fallback whatever the mask says. */
enum pq_enc {
	PQ_ENC_PLAIN = 1,
	PQ_ENC_DICT = 2,  /* dictionary page + RLE_DICTIONARY indices */
	PQ_ENC_DELTA = 4, /* DELTA_BINARY_PACKED (integer columns) */
	PQ_ENC_DELTA_BYTES = 8, /* the same, miniblock widths rounded to bytes
				 * (compresses better; only tried with zstd) */
};

struct pq_column {
	const char *name;
	enum pq_type type;
};

/* Returns 0, or -1 with errno set. Must write all `len` bytes. */
typedef int (*pq_write_fn)(void *ctx, const void *buf, size_t len);

/* All-zero fields mean the defaults. */
struct pq_options {
	enum pq_codec codec;
	int zstd_level;        /* 0: 3 */
	size_t row_group_rows; /* 0: 1 << 20 */
	unsigned encodings;    /* mask of enum pq_enc; 0: all */
	const char *created_by;/* NULL: "sftrace" */
};

struct pq_writer;

/* Writes the leading magic at once. NULL with errno set on bad arguments
 * (EINVAL) or a failed write. */
struct pq_writer *pq_open(const struct pq_column *cols, int ncols,
			  const struct pq_options *opt, pq_write_fn write, void *ctx);

/* Append a value to column `col` of the current row. pq_write_u64 serves
 * PQ_UINT64 and PQ_DURATION_NS (nanoseconds as int64), pq_write_u32
 * PQ_UINT32, pq_write_str PQ_STRING (bytes are copied; bytes that are not
 * valid UTF-8 become U+FFFD, as readers reject the file otherwise).
 * All return 0, or -1 (see pq_strerror); after an error every call fails
 * and only pq_free is useful. */
int pq_write_u64(struct pq_writer *w, int col, uint64_t v);
int pq_write_u32(struct pq_writer *w, int col, uint32_t v);
int pq_write_str(struct pq_writer *w, int col, const char *s, size_t len);

/* A whole row at once, for tables without string columns: v[i] is column
 * i's value. The same as one pq_write_u64/pq_write_u32 per column and
 * pq_end_row, with less overhead per value; the row must not have begun
 * with pq_write_*. A PQ_UINT32 value must fit in 32 bits: values are
 * checked a block at a time, so one that does not makes this call or a
 * later one (pq_finish at the latest) fail. */
int pq_write_row_u64s(struct pq_writer *w, const uint64_t *v);

/* Finish the row: every column must have received exactly one value.
 * Writes a row group when it is full. */
int pq_end_row(struct pq_writer *w);

/* Write the last row group, the footer and the trailing magic. Returns 0 or
 * -1 (see pq_strerror). The writer stays allocated: free it with pq_free. */
int pq_finish(struct pq_writer *w);

/* pq_finish + pq_free, for callers that only need success or failure. */
int pq_close(struct pq_writer *w);

/* Free without writing a footer (the output is not a valid file). */
void pq_free(struct pq_writer *w);

/* Text of the last error ("" if none). */
const char *pq_strerror(const struct pq_writer *w);

/* Rows appended so far (complete rows only). */
uint64_t pq_rows(const struct pq_writer *w);

/* A pq_write_fn for a file descriptor: ctx points to an int. Retries short
 * writes and EINTR. */
int pq_fd_write(void *ctx, const void *buf, size_t len);

#endif
