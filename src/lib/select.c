/* Function selection (lib/select.h): an object's instrumented functions,
 * the regexes' choice among them, and the filter file that lists it. */
#include "lib/select.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/filter_file.h"
#include "format/xray_map.h"
#include "lib/demangle.h"
#include "lib/outfile.h"
#include "lib/symbols.h"
#include "lib/util.h"

/* ---- the candidates: functions with sleds ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* the file is shorter than its headers say */
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/* Opens the file and explains why it cannot be used. */
static int open_object(const char *arg, int *fd_out)
{
	int fd = open(arg, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: refused below, not waited on */
	struct stat st;
	unsigned char ident[EI_DATA + 1];
	if (fd < 0) {
		sf_error("%s: %s", arg, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		sf_error("%s: %s", arg, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		sf_error("%s: %s", arg, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		close(fd);
		return -1;
	}
	if (read_at(fd, ident, sizeof(ident), 0) < 0 || memcmp(ident, ELFMAG, SELFMAG) != 0) {
		sf_error("%s: not an ELF file", arg);
		close(fd);
		return -1;
	}
	if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB) {
		sf_error("%s: unsupported ELF file (sftrace reads 64-bit little-endian objects)", arg);
		close(fd);
		return -1;
	}
	*fd_out = fd;
	return 0;
}

/* The distinct functions that own recordable sleds, from xray_instr_map. */
static int load_xray_functions(struct sel_object *o)
{
	int fd;
	if (open_object(o->arg, &fd) < 0)
		return -1;
	struct xray_section sec;
	int found = xray_find_section(fd, &sec);
	if (found <= 0) {
		if (found < 0)
			sf_error("%s: truncated or corrupt ELF file", o->arg);
		else
			sf_error("%s: no XRay instrumentation map (build with -fxray-instrument or "
				 "-Zinstrument-xray=always)",
				 o->arg);
		close(fd);
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || sec.size % XRAY_ENTRY_SIZE || sec.file_offset > (uint64_t)st.st_size ||
	    sec.size > (uint64_t)st.st_size - sec.file_offset) {
		sf_error("%s: corrupt xray_instr_map section", o->arg);
		close(fd);
		return -1;
	}
	unsigned char *raw = xmalloc(sec.size);
	if (read_at(fd, raw, sec.size, sec.file_offset) < 0) {
		sf_error("%s: cannot read xray_instr_map: %s", o->arg, strerror(errno));
		free(raw);
		close(fd);
		return -1;
	}
	close(fd);
	size_t n = sec.size / XRAY_ENTRY_SIZE, k = 0;
	uint64_t *fn = xmalloc(n * sizeof(*fn));
	for (size_t i = 0; i < n; i++) {
		struct xray_sled s;
		xray_decode(raw + i * XRAY_ENTRY_SIZE, sec.vaddr + i * XRAY_ENTRY_SIZE, &s);
		if (xray_kind_traced(s.kind))
			fn[k++] = s.function;
	}
	free(raw);
	qsort(fn, k, sizeof(*fn), cmp_u64);
	o->funcs = xcalloc(k, sizeof(*o->funcs));
	o->nfuncs = 0;
	for (size_t i = 0; i < k; i++)
		if (!o->nfuncs || o->funcs[o->nfuncs - 1].vaddr != fn[i])
			o->funcs[o->nfuncs++].vaddr = fn[i];
	free(fn);
	return 0;
}

int sel_load(struct sel_object *o, const char *arg)
{
	memset(o, 0, sizeof(*o));
	o->arg = arg;
	if (load_xray_functions(o) < 0)
		return -1;
	if (!realpath(o->arg, o->path)) {
		sf_error("%s: %s", o->arg, strerror(errno));
		return -1;
	}
	return 0;
}

/* Reads every object's sled map first, so that a bad one fails before any
 * selection is made. */
int sel_load_all(const char *const *args, size_t n, struct sel_object *objs, size_t *nobjs)
{
	*nobjs = 0;
	for (size_t i = 0; i < n; i++) {
		struct sel_object *o = &objs[*nobjs];
		++*nobjs; /* sel_free'd by the caller from here on */
		if (sel_load(o, args[i]) < 0)
			return -1;
		for (size_t j = 0; j + 1 < *nobjs; j++) {
			if (strcmp(objs[j].path, o->path) != 0)
				continue;
			sf_warn("%s given twice; using it once", o->arg);
			sel_free(o);
			--*nobjs;
			break;
		}
	}
	return 0;
}

void sel_free(struct sel_object *o)
{
	sym_close(o->sym);
	for (size_t i = 0; i < o->nfuncs; i++)
		free(o->funcs[i].matched_name);
	free(o->funcs);
	o->sym = NULL;
	o->funcs = NULL;
	o->nfuncs = o->nselected = 0;
}

/* ---- matching ---- */

static struct sel_func *find_func(struct sel_object *o, uint64_t vaddr)
{
	size_t lo = 0, hi = o->nfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->funcs[mid].vaddr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < o->nfuncs && o->funcs[lo].vaddr == vaddr ? &o->funcs[lo] : NULL;
}

struct match_ctx {
	struct sel_object *o;
	const struct sel_query *q;
};

static int short_match(const struct nm_patterns *ps, const char *mangled, const char *demangled)
{
	char *s = sf_short_name(demangled, mangled);
	int hit = nm_match(ps, s);
	free(s);
	return hit;
}

/* Whether the patterns find the function under the names q->which allows
 * (the demangled name in full or in report's short style).
 * *outside_generics tells whether they also find it with generic arguments
 * elided (a mangled match counts as outside: it is what the user asked). */
static int names_match(const struct sel_query *q, const struct nm_patterns *ps, const char *mangled,
		       const char *demangled, int *outside_generics)
{
	int hit = 0;
	if (q->which != NM_MANGLED && q->ignore_generic_args && demangled) {
		char *elided = nm_elide_generics(demangled);
		if (nm_match(ps, elided)) {
			hit = 1;
			if (outside_generics)
				*outside_generics = 1;
		}
		free(elided);
	} else if (q->which != NM_MANGLED && nm_match(ps, demangled)) {
		hit = 1;
		if (outside_generics && !*outside_generics) {
			char *elided = nm_elide_generics(demangled);
			*outside_generics = nm_match(ps, elided);
			free(elided);
		}
	}
	if (!hit && q->which != NM_MANGLED && demangled && short_match(ps, mangled, demangled)) {
		/* As report prints it (`Regex::is_match` for `<Regex>::is_match`). */
		hit = 1;
		if (outside_generics)
			*outside_generics = 1;
	}
	if (q->which != NM_DEMANGLED && nm_match(ps, mangled)) {
		hit = 1;
		if (outside_generics)
			*outside_generics = 1;
	}
	return hit;
}

static void match_names(const struct sel_query *q, struct sel_func *f, const char *mangled, const char *demangled)
{
	int outside = f->outside_generics;
	if (names_match(q, q->inc, mangled, demangled, &outside)) {
		f->hit = 1;
		if (!f->matched_name && demangled)
			f->matched_name = xstrdup(demangled);
	}
	f->outside_generics = (unsigned char)outside;
	if (!f->excluded && q->exc && names_match(q, q->exc, mangled, demangled, NULL))
		f->excluded = 1;
}

static int match_symbol(void *ctx, uint64_t vaddr, const char *mangled, const char *demangled)
{
	struct match_ctx *m = ctx;
	struct sel_func *f = find_func(m->o, vaddr);
	if (f) {
		f->named = 1;
		match_names(m->q, f, mangled, demangled);
	}
	return 0;
}

int sel_select(struct sel_object *o, const struct sel_query *q)
{
	char err[PATH_MAX + 256];
	o->sym = sym_open(o->path, NULL, NULL, 0, 0, err, sizeof(err));
	if (!o->sym) {
		sf_error("%s", err);
		return -1;
	}
	const uint8_t *id;
	size_t idlen = sym_build_id(o->sym, &id);
	if (idlen)
		sf_build_id_hex(id, idlen, o->build_id, sizeof(o->build_id));
	else
		snprintf(o->build_id, sizeof(o->build_id), "-");

	struct match_ctx m = {o, q};
	/* Every alias of a function counts; functions without a symbol of
	 * their own (stripped objects) go by the name sym_lookup makes up. */
	sym_foreach_function(o->sym, match_symbol, &m);
	for (size_t i = 0; i < o->nfuncs; i++) {
		struct sel_func *f = &o->funcs[i];
		if (!f->named) {
			const struct sym_info *si = sym_lookup(o->sym, f->vaddr);
			match_names(q, f, si->mangled, si->name);
		}
		o->nselected += sel_is_selected(f);
	}
	return 0;
}

const char *sel_func_name(const struct sel_object *o, const struct sel_func *f)
{
	return f->matched_name ? f->matched_name : sym_lookup(o->sym, f->vaddr)->name;
}

/* ---- the filter file ---- */

void sel_write_name(FILE *out, const char *name)
{
	for (const char *p = name; *p; p++)
		fputc((unsigned char)*p < 0x20 ? '?' : *p, out);
}

/* The command line, for the header comment: one line, arguments with
 * blanks or quotes single-quoted as a shell would take them back. */
static void write_command_line(FILE *out, int argc, char **argv)
{
	fputs("# made by: sftrace", out);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		int quote = !*a || strpbrk(a, " \t'\"\\$`*?[]{}()|&;<>#~!") != NULL;
		fprintf(out, " %s", quote ? "'" : "");
		for (const char *p = a; *p; p++) {
			if (*p == '\'')
				fputs("'\\''", out);
			else
				fputc((unsigned char)*p < 0x20 ? '?' : *p, out);
		}
		fputs(quote ? "'" : "", out);
	}
	fputc('\n', out);
}

static void write_filter_text(FILE *out, const struct sel_filter *f, const struct sel_object *objs, size_t n,
			      int argc, char **argv)
{
	fprintf(out, "%s %d\n", FF_MAGIC, FF_VERSION);
	write_command_line(out, argc, argv);
	fprintf(out, "mode %s\nunlisted %s\n", f->within ? "within" : "select", f->unlisted_trace ? "trace" : "skip");
	for (size_t i = 0; i < n; i++) {
		const struct sel_object *o = &objs[i];
		fprintf(out, "\n# %zu of %zu instrumented functions\n", o->nselected, o->nfuncs);
		fprintf(out, "object %s %s\n", o->build_id, o->path);
		for (size_t j = 0; j < o->nfuncs; j++) {
			if (!sel_is_selected(&o->funcs[j]))
				continue;
			fprintf(out, "0x%" PRIx64 " ", o->funcs[j].vaddr);
			sel_write_name(out, sel_func_name(o, &o->funcs[j]));
			fputc('\n', out);
		}
	}
}

int sel_write_filter(const char *path, const struct sel_filter *f, const struct sel_object *objs, size_t n, int argc,
		     char **argv)
{
	char err[PATH_MAX + 256];
	struct sf_outfile *of = sf_outfile_open(path, 0, err, sizeof(err));
	if (!of) {
		sf_error("%s", err);
		return -1;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (!mem) {
		sf_error("out of memory");
		exit(1);
	}
	write_filter_text(mem, f, objs, n, argc, argv);
	if (fclose(mem) != 0) {
		sf_error("out of memory");
		exit(1);
	}
	sf_outfile_write(of, text, len);
	free(text);
	return sf_outfile_commit(of);
}
