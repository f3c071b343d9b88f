#include "lib/filter_merge.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/filter_file.h"
#include "lib/outfile.h"
#include "lib/util.h"

struct merged_func {
	uint64_t vaddr;
	char *name;
};

struct merged_obj {
	char *build_id, *path;
	struct merged_func *funcs;
	size_t nfuncs;
};

/* Every file's objects, one block per object: the runtime applies the first
 * block it finds for an object, so two files selecting functions in one
 * object must become one block holding the union of their selections. */
struct merged {
	struct merged_obj *objs;
	size_t nobjs, cur;
};

struct read_ctx {
	struct ff_info *info;
	struct merged *m; /* when merging: objects are gathered here */
};

static void out_line(struct sf_outfile *of, const char *a, const char *b, const char *c)
{
	sf_outfile_write(of, a, strlen(a));
	sf_outfile_write(of, " ", 1);
	sf_outfile_write(of, b, strlen(b));
	if (c) {
		sf_outfile_write(of, " ", 1);
		sf_outfile_write(of, c, strlen(c));
	}
	sf_outfile_write(of, "\n", 1);
}

/* The same object: the same build-id, or the same path for objects without
 * one ("-"). */
static int same_object(const struct merged_obj *o, const char *bid, const char *path)
{
	if (strcmp(bid, "-") || strcmp(o->build_id, "-"))
		return !strcmp(o->build_id, bid);
	return !strcmp(o->path, path);
}

static void merged_object(struct merged *m, const char *bid, const char *path)
{
	for (m->cur = 0; m->cur < m->nobjs; m->cur++)
		if (same_object(&m->objs[m->cur], bid, path))
			return;
	m->objs = xrealloc(m->objs, (m->nobjs + 1) * sizeof(*m->objs));
	m->objs[m->nobjs++] = (struct merged_obj){xstrdup(bid), xstrdup(path), NULL, 0};
}

static int cmp_func(const void *a, const void *b)
{
	const struct merged_func *x = a, *y = b;
	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* One block per object, each function once (two files may select it). */
static void merged_write(struct sf_outfile *of, struct merged *m)
{
	for (size_t i = 0; i < m->nobjs; i++) {
		struct merged_obj *o = &m->objs[i];
		out_line(of, "\nobject", o->build_id, o->path);
		if (o->nfuncs)
			qsort(o->funcs, o->nfuncs, sizeof(*o->funcs), cmp_func);
		for (size_t k = 0; k < o->nfuncs; k++) {
			if (k && !cmp_func(&o->funcs[k - 1], &o->funcs[k]))
				continue;
			char addr[32];
			snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)o->funcs[k].vaddr);
			out_line(of, addr, o->funcs[k].name, NULL);
		}
	}
}

static void merged_free(struct merged *m)
{
	for (size_t i = 0; i < m->nobjs; i++) {
		for (size_t k = 0; k < m->objs[i].nfuncs; k++)
			free(m->objs[i].funcs[k].name);
		free(m->objs[i].funcs);
		free(m->objs[i].build_id);
		free(m->objs[i].path);
	}
	free(m->objs);
}

static int on_setting(void *ctx, const char *key, const char *value)
{
	struct read_ctx *r = ctx;
	snprintf(!strcmp(key, "mode") ? r->info->mode : r->info->unlisted, sizeof(r->info->mode), "%s", value);
	return 0;
}

static int on_object(void *ctx, const char *bid, const char *path)
{
	struct read_ctx *r = ctx;
	struct ff_info *in = r->info;
	in->objs = xrealloc(in->objs, (in->nobjs + 1) * sizeof(*in->objs));
	in->objs[in->nobjs++] = (struct ff_object_info){xstrdup(bid), xstrdup(path), 0};
	if (r->m)
		merged_object(r->m, bid, path);
	return 0;
}

static int on_func(void *ctx, uint64_t vaddr, const char *name)
{
	struct read_ctx *r = ctx;
	r->info->objs[r->info->nobjs - 1].nfuncs++;
	if (r->m) {
		struct merged_obj *o = &r->m->objs[r->m->cur];
		o->funcs = xrealloc(o->funcs, (o->nfuncs + 1) * sizeof(*o->funcs));
		o->funcs[o->nfuncs++] = (struct merged_func){vaddr, xstrdup(name)};
	}
	return 0;
}

char *ff_read_text(const char *path, size_t *len)
{
	FILE *f = sf_fopen_regular(path); /* a FIFO is refused, never waited on */
	struct stat st;
	if (!f || fstat(fileno(f), &st) < 0) {
		sf_error("filter %s: %s", path, sf_open_error(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	char *text = xmalloc((size_t)st.st_size + 1);
	*len = fread(text, 1, (size_t)st.st_size, f);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		sf_error("filter %s: read error", path);
		free(text);
		return NULL;
	}
	text[*len] = 0;
	return text;
}

static int read_into(const char *path, struct ff_info *info, struct merged *m)
{
	size_t len;
	char *text = ff_read_text(path, &len);
	if (!text)
		return -1;
	memset(info, 0, sizeof(*info));
	snprintf(info->mode, sizeof(info->mode), "select");
	snprintf(info->unlisted, sizeof(info->unlisted), "skip");
	struct read_ctx r = {info, m};
	struct ff_handler h = {on_setting, on_object, on_func};
	char err[256];
	int rc = 0;
	if (ff_parse(text, len, &h, &r, err, sizeof(err)) < 0) {
		sf_error("filter %s: %s", path, err);
		rc = -1;
	}
	free(text);
	if (rc < 0)
		ff_info_free(info);
	return rc;
}

int ff_info_read(const char *path, struct ff_info *info)
{
	return read_into(path, info, NULL);
}

void ff_info_free(struct ff_info *info)
{
	for (size_t i = 0; i < info->nobjs; i++) {
		free(info->objs[i].build_id);
		free(info->objs[i].path);
	}
	free(info->objs);
	memset(info, 0, sizeof(*info));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_file(char ***files, size_t *n, char *path)
{
	*files = xrealloc(*files, (*n + 1) * sizeof(**files));
	(*files)[(*n)++] = path;
}

int ff_expand_input(const char *arg, char ***files, size_t *nfiles)
{
	struct stat st;
	if (stat(arg, &st) < 0) {
		sf_error("filter %s: %s", arg, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		add_file(files, nfiles, xstrdup(arg));
		return 0;
	}
	DIR *d = opendir(arg);
	if (!d) {
		sf_error("filter directory %s: %s", arg, strerror(errno));
		return -1;
	}
	size_t first = *nfiles;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len < 8 || strcmp(e->d_name + len - 7, ".filter"))
			continue;
		char *p = xmalloc(strlen(arg) + len + 2);
		sprintf(p, "%s/%s", arg, e->d_name);
		add_file(files, nfiles, p);
	}
	closedir(d);
	if (*nfiles == first) {
		sf_error("filter directory %s holds no *.filter file", arg);
		return -1;
	}
	qsort(*files + first, *nfiles - first, sizeof(**files), cmp_str);
	return 0;
}

int ff_merge(char *const *files, size_t nfiles, const char *out, int beside)
{
	char err[PATH_MAX + 256];
	struct sf_outfile *of = beside ? sf_outfile_open_beside(out, err, sizeof(err))
				       : sf_outfile_open(out, 0, err, sizeof(err));
	if (!of) {
		sf_error("%s", err);
		return -1;
	}
	struct ff_info first = {0};
	if (read_into(files[0], &first, NULL) < 0) {
		sf_outfile_abort(of);
		return -1;
	}
	char head[128];
	snprintf(head, sizeof(head), "%s %d\n# merged by sftrace record\nmode %s\nunlisted %s\n", FF_MAGIC, FF_VERSION,
		 first.mode, first.unlisted);
	sf_outfile_write(of, head, strlen(head));
	int rc = 0;
	struct merged m = {0};
	for (size_t i = 0; i < nfiles && rc == 0; i++) {
		struct ff_info info;
		if (read_into(files[i], &info, &m) < 0) {
			rc = -1;
			break;
		}
		if (strcmp(info.mode, first.mode) || strcmp(info.unlisted, first.unlisted)) {
			sf_error("filters %s (mode %s, unlisted %s) and %s (mode %s, unlisted %s) disagree; they cannot "
				 "be used together",
				 files[0], first.mode, first.unlisted, files[i], info.mode, info.unlisted);
			rc = -1;
		}
		ff_info_free(&info);
	}
	ff_info_free(&first);
	if (rc == 0)
		merged_write(of, &m);
	merged_free(&m);
	if (rc < 0) {
		sf_outfile_abort(of);
		return -1;
	}
	return sf_outfile_commit(of);
}
