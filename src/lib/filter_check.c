/* sf_filter_check_file: `sftrace record -f` checks the filter before it
 * starts the command, so that a filter made for another build fails loudly
 * here instead of silently recording nothing (the runtime can only leave
 * such an object untraced and print a line in the middle of the program's
 * output). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/filter_check.h"
#include "format/filter_file.h"
#include "lib/elf_buildid.h"
#include "lib/filter_merge.h"
#include "lib/util.h"

struct check_object {
	char *build_id; /* hex as written in the filter, or "-" */
	char *path;
};

struct check_ctx {
	struct check_object *v;
	size_t n;
};

static int on_object(void *ctx, const char *build_id_hex, const char *path)
{
	struct check_ctx *c = ctx;
	c->v = xrealloc(c->v, (c->n + 1) * sizeof(*c->v));
	c->v[c->n].build_id = xstrdup(build_id_hex);
	c->v[c->n].path = xstrdup(path);
	c->n++;
	return 0;
}

/* Same build-id as when the filter was made. Objects that had none are
 * matched by path at run time; nothing to compare. */
static int check_object(const char *filter, const struct check_object *o)
{
	uint8_t want[SF_BUILD_ID_MAX], have[SF_BUILD_ID_MAX];
	char err[PATH_MAX + 128];
	int want_len = ff_build_id_from_hex(o->build_id, want, sizeof(want));
	int have_len = sf_elf_build_id_path(o->path, have, sizeof(have), err, sizeof(err));
	if (have_len < 0) {
		sf_error("filter %s names %s", filter, err);
		return -1;
	}
	if (want_len <= 0)
		return 0;
	if (have_len == want_len && !memcmp(have, want, (size_t)want_len))
		return 0;
	char have_hex[2 * SF_BUILD_ID_MAX + 1];
	if (have_len > SF_BUILD_ID_MAX)
		have_len = SF_BUILD_ID_MAX;
	sf_build_id_hex(have, (size_t)have_len, have_hex, sizeof(have_hex));
	sf_error("filter %s was made for a different build of %s (filter build-id %s, file build-id %s); "
		 "re-run 'sftrace filter' to update it",
		 filter, o->path, o->build_id, have_len ? have_hex : "none");
	return -1;
}

int sf_filter_check_file(const char *path)
{
	size_t len;
	char *text = ff_read_text(path, &len);
	if (!text)
		return -1;
	struct check_ctx c = {0};
	struct ff_handler h = {.object = on_object};
	char err[256];
	int rc = ff_parse(text, len, &h, &c, err, sizeof(err));
	if (rc < 0)
		sf_error("filter %s: %s", path, err);
	for (size_t i = 0; i < c.n && rc == 0; i++)
		rc = check_object(path, &c.v[i]);
	for (size_t i = 0; i < c.n; i++) {
		free(c.v[i].build_id);
		free(c.v[i].path);
	}
	free(c.v);
	free(text);
	return rc;
}
