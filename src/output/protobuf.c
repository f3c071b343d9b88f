#include "output/protobuf.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

void pb_buf_init(struct pb_buf *b, size_t initial_cap)
{
	b->cap = initial_cap ? initial_cap : 256;
	b->data = xmalloc(b->cap);
	b->len = 0;
}

void pb_buf_free(struct pb_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void pb_buf_grow(struct pb_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void pb_put_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len)
{
	uint8_t *p = pb_buf_reserve(b, 2 * PB_VARINT_MAX + len);
	p = pb_enc_tag(p, field, PB_LEN);
	p = pb_enc_varint(p, len);
	if (len)
		memcpy(p, data, len);
	pb_buf_commit(b, p + len);
}

void pb_put_string(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_put_bytes(b, field, s, strlen(s));
}

/* The body outgrew the one length byte reserved by pb_nest_begin: move it
 * right to make room for the full varint. */
void pb_nest_end_slow(struct pb_buf *b, size_t mark, size_t body)
{
	size_t extra = pb_varint_size(body) - 1;
	pb_buf_reserve(b, extra);
	memmove(b->data + mark + extra, b->data + mark, body);
	pb_enc_varint(b->data + mark - 1, body);
	b->len += extra;
}
