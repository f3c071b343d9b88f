/* Function selection at patch time (sftrace record -f / SFTRACE_FILTER).
 * The filter file (src/format/filter_file.h) is parsed once at start into
 * mmap'd tables; objects are matched by build-id (or path when the object
 * has none). Without a filter every function is patched. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/filter_file.h"
#include "runtime/runtime.h"

#define MAX_FILTER_OBJECTS 256

struct filter_object {
	const char *path;
	uint8_t build_id[64];
	int build_id_len;
	uint64_t *funcs; /* sorted */
	size_t nfuncs;
	int reported;
};

static struct {
	int loaded;
	int mode;     /* enum ff_mode */
	int unlisted; /* enum ff_unlisted */
	struct filter_object objs[MAX_FILTER_OBJECTS];
	size_t nobjs;
	uint64_t *funcs;
	size_t nfuncs, cap;
} F;

static int on_setting(void *ctx, const char *key, const char *value)
{
	(void)ctx;
	if (!strcmp(key, "mode"))
		F.mode = !strcmp(value, "within") ? FF_MODE_WITHIN : FF_MODE_SELECT;
	else
		F.unlisted = !strcmp(value, "trace") ? FF_UNLISTED_TRACE : FF_UNLISTED_SKIP;
	return 0;
}

static int on_object(void *ctx, const char *bid, const char *path)
{
	(void)ctx;
	if (F.nobjs == MAX_FILTER_OBJECTS)
		return -1;
	struct filter_object *o = &F.objs[F.nobjs++];
	o->path = path;
	o->build_id_len = ff_build_id_from_hex(bid, o->build_id, sizeof(o->build_id));
	o->funcs = F.funcs + F.nfuncs;
	return 0;
}

static int on_func(void *ctx, uint64_t vaddr, const char *name)
{
	(void)ctx;
	(void)name;
	if (F.nfuncs == F.cap)
		return -1;
	F.funcs[F.nfuncs++] = vaddr;
	F.objs[F.nobjs - 1].nfuncs++;
	return 0;
}

static void sort_u64(uint64_t *v, size_t n)
{
	/* Shell sort: no recursion, no allocation, fine for filter sizes. */
	for (size_t gap = n / 2; gap; gap /= 2)
		for (size_t i = gap; i < n; i++)
			for (size_t j = i; j >= gap && v[j - gap] > v[j]; j -= gap) {
				uint64_t t = v[j];
				v[j] = v[j - gap];
				v[j - gap] = t;
			}
}

int sf_filter_load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		sf_rt_message("cannot read filter ", path, fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size_t len = (size_t)st.st_size;
	char *text = len ? mmap(NULL, len + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (len && text == MAP_FAILED) {
		sf_rt_message("cannot map filter ", path, strerror(errno));
		return -1;
	}
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	F.cap = lines;
	F.funcs = sf_map_anon(lines * sizeof(uint64_t));
	if (!F.funcs)
		return -1;
	struct ff_handler h = {on_setting, on_object, on_func};
	char err[256];
	if (ff_parse(text, len, &h, NULL, err, sizeof(err)) < 0) {
		sf_rt_message("bad filter ", path, err);
		return -1;
	}
	for (size_t i = 0; i < F.nobjs; i++)
		sort_u64(F.objs[i].funcs, F.objs[i].nfuncs);
	F.loaded = 1;
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The filter's entry for obj: same build-id, or same path when either has
 * no build-id. *mismatch is set when the path matches but the build-id
 * does not. */
static struct filter_object *find(const struct sf_object_rt *obj, int *mismatch)
{
	*mismatch = 0;
	for (size_t i = 0; i < F.nobjs; i++) {
		struct filter_object *f = &F.objs[i];
		int both = f->build_id_len > 0 && obj->info.build_id_len > 0;
		if (both && f->build_id_len == obj->info.build_id_len &&
		    !memcmp(f->build_id, obj->info.build_id, (size_t)f->build_id_len))
			return f;
		if (!strcmp(f->path, obj->path) || !strcmp(base_name(f->path), base_name(obj->path))) {
			if (!both)
				return f;
			*mismatch = 1;
		}
	}
	return NULL;
}

int sf_filter_check_object(const struct sf_object_rt *obj)
{
	if (!F.loaded)
		return 0;
	int mismatch;
	if (!find(obj, &mismatch) && mismatch) {
		sf_rt_message("filter was made for a different build of ", obj->path,
			      "build-id differs; object left untraced (re-run sftrace filter)");
		return -1;
	}
	return 0;
}

int sf_filter_selects(const struct sf_object_rt *obj, uint64_t vaddr, uint8_t *variant)
{
	*variant = SF_VARIANT_PLAIN;
	if (!F.loaded)
		return 1;
	int mismatch;
	struct filter_object *f = find(obj, &mismatch);
	int listed = 0;
	if (f) {
		size_t lo = 0, hi = f->nfuncs;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (f->funcs[mid] < vaddr)
				lo = mid + 1;
			else
				hi = mid;
		}
		listed = lo < f->nfuncs && f->funcs[lo] == vaddr;
	}
	if (F.mode == FF_MODE_WITHIN) {
		if (listed) {
			*variant = SF_VARIANT_WINDOW;
			return 1;
		}
		/* Unlisted objects: with "unlisted skip" their functions are
		 * still recorded inside a window; "trace" records them always. */
		if (!f && F.unlisted == FF_UNLISTED_TRACE)
			return 1;
		*variant = SF_VARIANT_GATED;
		return 1;
	}
	if (!f)
		return F.unlisted == FF_UNLISTED_TRACE;
	return listed;
}
