/* The footer: FileMetaData in Thrift compact (schema with logical types,
 * row groups and column chunk metadata with statistics), the ARROW:schema
 * key-value entry that makes polars read exact types, its length and the
 * trailing magic. */
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "output/arrow_schema.h"
#include "output/parquet_int.h"

static int physical_type(enum pq_type t)
{
	return t == PQ_UINT32 ? PT_INT32 : t == PQ_STRING ? PT_BYTE_ARRAY : PT_INT64;
}

static void footer_schema(struct tc_writer *t, const struct pq_writer *w)
{
	tc_list(t, 2, TC_STRUCT, (uint32_t)w->ncols + 1);
	tc_struct_open(t);
	tc_string(t, 4, "schema");
	tc_i32(t, 5, w->ncols);
	tc_struct_end(t);
	for (int i = 0; i < w->ncols; i++) {
		const struct column *c = &w->cols[i];
		tc_struct_open(t);
		tc_i32(t, 1, physical_type(c->type));
		tc_i32(t, 3, REP_REQUIRED);
		tc_string(t, 4, c->name);
		if (c->type == PQ_UINT64 || c->type == PQ_UINT32) {
			tc_i32(t, 6, c->type == PQ_UINT64 ? CT_UINT_64 : CT_UINT_32);
			tc_struct_begin(t, 10);     /* LogicalType */
			tc_struct_begin(t, 10);     /* .INTEGER: IntType */
			tc_i8(t, 1, c->type == PQ_UINT64 ? 64 : 32);
			tc_bool(t, 2, 0);
			tc_struct_end(t);
			tc_struct_end(t);
		} else if (c->type == PQ_STRING) {
			tc_i32(t, 6, CT_UTF8);
			tc_struct_begin(t, 10);     /* LogicalType */
			tc_struct_begin(t, 1);      /* .STRING: StringType {} */
			tc_struct_end(t);
			tc_struct_end(t);
		}
		tc_struct_end(t);
	}
}

static void footer_stats(struct tc_writer *t, const struct stats *st)
{
	tc_struct_begin(t, 12);
	tc_i64(t, 3, 0); /* null_count */
	if (st->distinct >= 0)
		tc_i64(t, 4, st->distinct);
	if (st->has) {
		if (st->has_max)
			tc_binary(t, 5, st->max, st->max_len);
		tc_binary(t, 6, st->min, st->min_len);
		if (st->has_max)
			tc_bool(t, 7, st->max_exact);
		tc_bool(t, 8, st->min_exact);
	}
	tc_struct_end(t);
}

static void footer_encodings(struct tc_writer *t, const struct chunk_meta *m)
{
	int dict = m->dict_off >= 0;
	tc_list(t, 2, TC_I32, dict ? 3 : 2);
	if (dict || m->data_enc == ENC_PLAIN)
		tc_put_i32(t, ENC_PLAIN);
	tc_put_i32(t, ENC_RLE);
	if (m->data_enc != ENC_PLAIN)
		tc_put_i32(t, m->data_enc);
}

/* encoding_stats: how many pages of each kind, so readers can tell that
 * every data page is dictionary-encoded. */
static void footer_encoding_stats(struct tc_writer *t, const struct chunk_meta *m)
{
	int dict = m->dict_off >= 0;
	tc_list(t, 13, TC_STRUCT, dict ? 2 : 1);
	if (dict) {
		tc_struct_open(t);
		tc_i32(t, 1, PAGE_DICTIONARY);
		tc_i32(t, 2, ENC_PLAIN);
		tc_i32(t, 3, 1);
		tc_struct_end(t);
	}
	tc_struct_open(t);
	tc_i32(t, 1, PAGE_DATA);
	tc_i32(t, 2, m->data_enc);
	tc_i32(t, 3, m->data_pages);
	tc_struct_end(t);
}

static void footer_chunk(struct tc_writer *t, const struct pq_writer *w, int ci,
			 const struct chunk_meta *m)
{
	const struct column *c = &w->cols[ci];
	tc_struct_open(t);              /* ColumnChunk */
	tc_i64(t, 2, m->start);         /* file_offset */
	tc_struct_begin(t, 3);          /* meta_data */
	tc_i32(t, 1, physical_type(c->type));
	footer_encodings(t, m);
	tc_list(t, 3, TC_BINARY, 1);
	tc_put_binary(t, c->name, strlen(c->name));
	tc_i32(t, 4, w->opt.codec == PQ_CODEC_NONE ? CODEC_UNCOMPRESSED : CODEC_ZSTD);
	tc_i64(t, 5, m->num_values);
	tc_i64(t, 6, m->uncompressed);
	tc_i64(t, 7, m->compressed);
	tc_i64(t, 9, m->data_off);
	if (m->dict_off >= 0)
		tc_i64(t, 11, m->dict_off);
	footer_stats(t, &m->st);
	footer_encoding_stats(t, m);
	tc_struct_end(t);
	tc_struct_end(t);
}

static void footer_row_groups(struct tc_writer *t, const struct pq_writer *w)
{
	tc_list(t, 4, TC_STRUCT, (uint32_t)w->nrg);
	for (size_t r = 0; r < w->nrg; r++) {
		const struct rg_meta *rg = &w->rgs[r];
		tc_struct_open(t);
		tc_list(t, 1, TC_STRUCT, (uint32_t)w->ncols);
		for (int i = 0; i < w->ncols; i++)
			footer_chunk(t, w, i, &rg->chunks[i]);
		tc_i64(t, 2, rg->uncompressed); /* total_byte_size */
		tc_i64(t, 3, rg->rows);
		tc_i64(t, 5, rg->start);        /* file_offset */
		tc_i64(t, 6, rg->compressed);   /* total_compressed_size */
		tc_i16(t, 7, (int16_t)r);       /* ordinal */
		tc_struct_end(t);
	}
}

static void footer_arrow_schema(struct tc_writer *t, const struct pq_writer *w)
{
	static const enum arrow_type map[] = {
		[PQ_UINT64] = ARROW_UINT64,
		[PQ_UINT32] = ARROW_UINT32,
		[PQ_DURATION_NS] = ARROW_DURATION_NS,
		[PQ_STRING] = ARROW_UTF8,
	};
	struct arrow_field *f = xcalloc((size_t)w->ncols, sizeof(*f));
	for (int i = 0; i < w->ncols; i++) {
		f[i].name = w->cols[i].name;
		f[i].type = map[w->cols[i].type];
		f[i].nullable = 0;
	}
	char *b64 = arrow_schema_base64(f, w->ncols);
	tc_list(t, 5, TC_STRUCT, 1);
	tc_struct_open(t);
	tc_string(t, 1, "ARROW:schema");
	tc_string(t, 2, b64);
	tc_struct_end(t);
	free(b64);
	free(f);
}

int pq_write_footer(struct pq_writer *w)
{
	struct tc_writer *t = &w->tc;
	tc_reset(t);
	tc_struct_open(t);
	tc_i32(t, 1, 1); /* version */
	footer_schema(t, w);
	tc_i64(t, 3, (int64_t)w->total_rows);
	footer_row_groups(t, w);
	footer_arrow_schema(t, w);
	tc_string(t, 6, w->opt.created_by ? w->opt.created_by : "sftrace");
	/* column_orders: TypeDefinedOrder for every column, which makes min/max
	 * of UINT columns compare unsigned. */
	tc_list(t, 7, TC_STRUCT, (uint32_t)w->ncols);
	for (int i = 0; i < w->ncols; i++) {
		tc_struct_open(t);
		tc_struct_begin(t, 1);
		tc_struct_end(t);
		tc_struct_end(t);
	}
	tc_struct_end(t);

	uint8_t tail[8];
	uint32_t len = (uint32_t)t->out.len;
	memcpy(tail, &len, 4);
	memcpy(tail + 4, PQ_MAGIC, 4);
	if (pq_emit(w, t->out.data, t->out.len) < 0 || pq_emit(w, tail, 8) < 0)
		return -1;
	return 0;
}
