/* libFuzzer harness over the filter-file parser (src/format/filter_file.c),
 * which the runtime runs inside traced processes: whatever the bytes,
 * ff_parse returns 0 or -1 with a "line N: ..." message, never reads
 * outside the len bytes it is given, and hands its callbacks NUL-terminated
 * strings. The input is copied into a buffer of exactly its size so ASan
 * sees any read past the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/filter_file.h"

static volatile uint64_t sink;

static int on_setting(void *ctx, const char *key, const char *value)
{
	(void)ctx;
	sink += strlen(key) + strlen(value);
	return 0;
}

static int on_object(void *ctx, const char *bid, const char *path)
{
	uint8_t id[64];
	int *objects = ctx;
	(*objects)++;
	sink += strlen(path) + (uint64_t)ff_build_id_from_hex(bid, id, sizeof(id));
	return *objects > 1000; /* a handler may refuse: that path too */
}

static int on_func(void *ctx, uint64_t vaddr, const char *name)
{
	(void)ctx;
	sink += vaddr + strlen(name);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	struct ff_handler h = {on_setting, on_object, on_func};
	char err[256];
	int objects = 0;
	int r = ff_parse(text, size, &h, &objects, err, sizeof(err));
	if (r < 0 && (strncmp(err, "line ", 5) || !memchr(err, 0, sizeof(err))))
		__builtin_trap(); /* every refusal names its line */
	if (r != 0 && r != -1)
		__builtin_trap();
	free(text);
	return 0;
}
