/* OUT.args (conv_pola_args.h). */
#include "output/conv_pola_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arg_values.h"
#include "lib/util.h"
#include "output/conv_pola.h"

static const struct pq_column args_cols[] = {
	{"frame_id", PQ_UINT64}, {"index", PQ_UINT32}, {"name", PQ_STRING}, {"value", PQ_STRING},
};

struct pola_args {
	struct pola_side side;     /* OUT.args */
};

struct pola_args *pola_args_open(const char *out, const struct pq_options *po)
{
	struct pola_args *a = xcalloc(1, sizeof(*a));
	int ncols = (int)(sizeof(args_cols) / sizeof(args_cols[0]));
	if (pola_side_open(&a->side, out, "args", args_cols, ncols, po) < 0) {
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
		if (pq_write_u64(a->side.w, 0, frame_id) || pq_write_u32(a->side.w, 1, (*index)++) ||
		    pq_write_str(a->side.w, 2, items[i].name, strlen(items[i].name)) ||
		    pq_write_str(a->side.w, 3, items[i].value, strlen(items[i].value)) || pq_end_row(a->side.w))
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
	int rc = pola_side_finish(&a->side, ok); /* no recorded values: no file */
	free(a);
	return rc;
}
