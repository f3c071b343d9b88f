/* OUT.args (conv_pola_args.h). */
#include "output/conv_pola_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arg_values.h"
#include "lib/outfile.h"
#include "lib/util.h"

static const struct pq_column args_cols[] = {
	{"frame_id", PQ_UINT64}, {"index", PQ_UINT32}, {"name", PQ_STRING}, {"value", PQ_STRING},
};

struct pola_args {
	struct sf_outfile *of;
	struct pq_writer *w;
	char path[4096];
};

struct pola_args *pola_args_open(const char *out, const struct pq_options *po)
{
	struct pola_args *a = xcalloc(1, sizeof(*a));
	char err[1024];
	if ((size_t)snprintf(a->path, sizeof(a->path), "%s.args", out) >= sizeof(a->path)) {
		sf_error("%s: path too long", out);
		free(a);
		return NULL;
	}
	a->of = sf_outfile_open(a->path, 0, err, sizeof(err));
	if (!a->of) {
		sf_error("%s", err);
		free(a);
		return NULL;
	}
	a->w = pq_open(args_cols, (int)(sizeof(args_cols) / sizeof(args_cols[0])), po, sf_outfile_write_cb, a->of);
	if (!a->w) {
		sf_error("%s: cannot start the Parquet file", a->path);
		sf_outfile_abort(a->of);
		free(a);
		return NULL;
	}
	return a;
}

static int rows(struct pola_args *a, uint64_t frame_id, const unsigned char *payload, uint32_t len, uint32_t *index)
{
	struct av_item items[SF_ARG_MAX_ITEMS];
	int n = av_decode(payload, len, items, SF_ARG_MAX_ITEMS);
	for (int i = 0; i < n; i++) {
		if (pq_write_u64(a->w, 0, frame_id) || pq_write_u32(a->w, 1, (*index)++) ||
		    pq_write_str(a->w, 2, items[i].name, strlen(items[i].name)) ||
		    pq_write_str(a->w, 3, items[i].value, strlen(items[i].value)) || pq_end_row(a->w))
			return -1;
	}
	return 0;
}

int pola_args_frame(struct pola_args *a, const struct fr_frame *f)
{
	uint32_t index = 0;
	if (f->args && rows(a, f->id, f->args, f->args_len, &index) < 0)
		return -1;
	if (f->ret && rows(a, f->id, f->ret, f->ret_len, &index) < 0)
		return -1;
	return 0;
}

int pola_args_finish(struct pola_args *a, int ok)
{
	int rc = 0;
	if (ok && pq_rows(a->w) > 0) {
		if (pq_finish(a->w) != 0) {
			sf_error("%s: %s", a->path, pq_strerror(a->w));
			sf_outfile_abort(a->of);
			rc = -1;
		} else {
			rc = sf_outfile_commit(a->of);
		}
	} else {
		sf_outfile_abort(a->of); /* failed, or no recorded values: no file */
	}
	pq_free(a->w);
	free(a);
	return rc;
}
