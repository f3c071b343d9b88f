/* sftrace filter: choose the functions `sftrace record -f` records, by
 * regular expressions over their names, and write them as a filter file
 * (src/format/filter_file.h).
 *
 * Only functions with XRay sleds can be recorded, so the candidate set is
 * the object's xray_instr_map, not its symbol table; names come from the
 * symbol table (lib/symbols.h). A function matches when a regex finds its
 * demangled name (or, with --match mangled|both, its raw symbol, as the
 * reference tool did), or any alias's. */

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "format/filter_file.h"
#include "format/xray_map.h"
#include "lib/elf_buildid.h"
#include "lib/name_match.h"
#include "lib/outfile.h"
#include "lib/symbols.h"
#include "lib/text_esc.h"
#include "lib/util.h"

#define MAX_SHOWN 12      /* selected names printed per object */
#define MAX_NAME_SHOWN 110 /* characters of a name printed before "…" */
#define MAX_GENERIC_SHOWN 3

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace filter -p OBJECT [-p OBJECT...] (-r REGEX... | --list FILE)\n"
		"                      [--exclude REGEX...] [--within] [--unlisted skip|trace]\n"
		"                      [--match demangled|mangled|both] [--ignore-generic-args]\n"
		"                      [-q] -o OUTPUT\n"
		"\n"
		"Writes a filter file for `sftrace record -f OUTPUT`: the XRay-instrumented\n"
		"functions of each OBJECT (executable or shared library) whose name matches\n"
		"one of the regular expressions (PCRE2 syntax, searched anywhere in the\n"
		"demangled name: the name report and Perfetto show). Prints how many\n"
		"functions each object has selected, and their names; warns about\n"
		"functions matched only inside generic arguments <...>.\n"
		"\n"
		"options:\n"
		"  -p, --object OBJECT       an executable or shared library to select from\n"
		"  -r, --regex REGEX         select functions matching REGEX (repeatable: OR)\n"
		"      --list FILE           read regexes from FILE, one per line ('#' lines\n"
		"                            and blank lines are ignored)\n"
		"  -x, --exclude REGEX       drop functions matching REGEX (repeatable)\n"
		"      --within              record every function while a selected one is on\n"
		"                            the thread's stack (default: only the selected)\n"
		"      --unlisted skip|trace objects not given with -p: record nothing from them\n"
		"                            (skip, the default) or everything (trace)\n"
		"      --match demangled|mangled|both\n"
		"                            which names the regexes search: demangled (the\n"
		"                            default), raw symbols (mangled: the reference\n"
		"                            tool's behaviour; Rust v0 symbols also name the\n"
		"                            crates a generic was instantiated with), or both\n"
		"      --ignore-generic-args search demangled names with their generic arguments\n"
		"                            elided (Vec<…>, from_str::<…>): only a function's\n"
		"                            own path can match\n"
		"  -o, --output FILE         the filter file to write\n"
		"  -q, --quiet               print nothing but errors\n"
		"      --allow-empty         write the filter even when nothing matches\n"
		"  -h, --help                this help\n");
}

/* ---- one object ---- */

struct func {
	uint64_t vaddr;
	unsigned char hit, excluded, named;
	unsigned char outside_generics; /* a name matched outside generic arguments */
};

struct object {
	const char *arg;
	char path[PATH_MAX]; /* absolute */
	char build_id[2 * SF_BUILD_ID_MAX + 1]; /* hex, or "-" */
	struct func *funcs; /* sorted by vaddr, unique */
	size_t nfuncs, nselected;
	struct sym_object *sym;
};

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
static int load_xray_functions(struct object *o)
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

static struct func *find_func(struct object *o, uint64_t vaddr)
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
	struct object *o;
	const struct nm_patterns *inc, *exc;
	enum nm_which which;
	int ignore_generic_args;
};

/* Whether the patterns find the function under the names --match allows.
 * *outside_generics tells whether they also find it with generic arguments
 * elided (a mangled match counts as outside: it is what the user asked). */
static int names_match(const struct match_ctx *m, const struct nm_patterns *ps, const char *mangled,
		       const char *demangled, int *outside_generics)
{
	int hit = 0;
	if (m->which != NM_MANGLED && m->ignore_generic_args && demangled) {
		char *elided = nm_elide_generics(demangled);
		if (nm_match(ps, elided)) {
			hit = 1;
			if (outside_generics)
				*outside_generics = 1;
		}
		free(elided);
	} else if (m->which != NM_MANGLED && nm_match(ps, demangled)) {
		hit = 1;
		if (outside_generics && !*outside_generics) {
			char *elided = nm_elide_generics(demangled);
			*outside_generics = nm_match(ps, elided);
			free(elided);
		}
	}
	if (m->which != NM_DEMANGLED && nm_match(ps, mangled)) {
		hit = 1;
		if (outside_generics)
			*outside_generics = 1;
	}
	return hit;
}

static void match_names(const struct match_ctx *m, struct func *f, const char *mangled, const char *demangled)
{
	int outside = f->outside_generics;
	if (names_match(m, m->inc, mangled, demangled, &outside))
		f->hit = 1;
	f->outside_generics = (unsigned char)outside;
	if (!f->excluded && names_match(m, m->exc, mangled, demangled, NULL))
		f->excluded = 1;
}

static int match_symbol(void *ctx, uint64_t vaddr, const char *mangled, const char *demangled)
{
	struct match_ctx *m = ctx;
	struct func *f = find_func(m->o, vaddr);
	if (f) {
		f->named = 1;
		match_names(m, f, mangled, demangled);
	}
	return 0;
}

static int select_functions(struct object *o, const struct nm_patterns *inc, const struct nm_patterns *exc,
			    enum nm_which which, int ignore_generic_args)
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

	struct match_ctx m = {o, inc, exc, which, ignore_generic_args};
	/* Every alias of a function counts; functions without a symbol of
	 * their own (stripped objects) go by the name sym_lookup makes up. */
	sym_foreach_function(o->sym, match_symbol, &m);
	for (size_t i = 0; i < o->nfuncs; i++) {
		struct func *f = &o->funcs[i];
		if (!f->named) {
			const struct sym_info *si = sym_lookup(o->sym, f->vaddr);
			match_names(&m, f, si->mangled, si->name);
		}
		o->nselected += f->hit && !f->excluded;
	}
	return 0;
}

static int is_selected(const struct func *f)
{
	return f->hit && !f->excluded;
}

/* A name on one line: long generic names are cut with "…"; escaped, as it
 * comes from the object (text_esc.h). */
static void print_name(FILE *out, const char *indent, const char *name)
{
	name = sf_esc(name);
	size_t len = strlen(name), n = len;
	if (n > MAX_NAME_SHOWN) {
		n = MAX_NAME_SHOWN;
		while (n && ((unsigned char)name[n] & 0xc0) == 0x80) /* not inside a UTF-8 sequence */
			n--;
	}
	fprintf(out, "%s%.*s%s\n", indent, (int)n, name, n < len ? "\xe2\x80\xa6" : "");
}

static void print_object_summary(struct object *o)
{
	printf("%s: %zu of %zu instrumented function%s selected\n", sf_esc(o->path), o->nselected, o->nfuncs,
	       o->nfuncs == 1 ? "" : "s");
	size_t shown = 0;
	for (size_t i = 0; i < o->nfuncs && shown < MAX_SHOWN; i++) {
		if (!is_selected(&o->funcs[i]))
			continue;
		print_name(stdout, "  ", sym_lookup(o->sym, o->funcs[i].vaddr)->name);
		shown++;
	}
	if (o->nselected > shown)
		printf("  ... and %zu more (the filter file lists them all)\n", o->nselected - shown);
}

/* Selected functions that the regexes found only inside generic arguments
 * (`criterion` in serde_json::de::from_trait::<…, criterion::SavedSample>):
 * rarely what was meant, so say so, show a few with the arguments elided
 * (the part that did not match), and the ways to leave them out. */
static void warn_generic_matches(struct object *objs, size_t nobjs, const struct nm_patterns *inc)
{
	size_t count = 0;
	for (size_t i = 0; i < nobjs; i++)
		for (size_t j = 0; j < objs[i].nfuncs; j++)
			count += is_selected(&objs[i].funcs[j]) && !objs[i].funcs[j].outside_generics;
	if (!count)
		return;
	sf_warn("%zu selected function%s match%s only inside generic arguments, for example (<…> marks them):", count,
		count == 1 ? "" : "s", count == 1 ? "es" : "");
	char *shown[MAX_GENERIC_SHOWN];
	size_t nshown = 0;
	for (size_t i = 0; i < nobjs && nshown < MAX_GENERIC_SHOWN; i++)
		for (size_t j = 0; j < objs[i].nfuncs && nshown < MAX_GENERIC_SHOWN; j++) {
			struct func *f = &objs[i].funcs[j];
			if (!is_selected(f) || f->outside_generics)
				continue;
			char *e = nm_elide_generics(sym_lookup(objs[i].sym, f->vaddr)->name);
			int dup = 0;
			for (size_t k = 0; k < nshown && !dup; k++)
				dup = !strcmp(shown[k], e);
			if (dup) {
				free(e);
				continue;
			}
			print_name(stderr, "    ", e);
			shown[nshown++] = e;
		}
	for (size_t k = 0; k < nshown; k++)
		free(shown[k]);
	fprintf(stderr, "  to leave them out, pass --ignore-generic-args, or anchor the regex on a crate or module "
			"path, e.g. -r '^<?(?:%s)::'\n",
		nm_text(inc, 0));
}

/* ---- output ---- */

static void out_printf(struct sf_outfile *of, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct sf_outfile *of, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		sf_error("out of memory");
		exit(1);
	}
	sf_outfile_write(of, s, (size_t)n);
	free(s);
}

/* The command line, for the header comment: one line, arguments with
 * blanks or quotes single-quoted as a shell would take them back. */
static void write_command_line(struct sf_outfile *of, int argc, char **argv)
{
	out_printf(of, "# made by: sftrace");
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		int quote = !*a || strpbrk(a, " \t'\"\\$`*?[]{}()|&;<>#~!") != NULL;
		out_printf(of, " %s", quote ? "'" : "");
		for (const char *p = a; *p; p++) {
			if (*p == '\'')
				out_printf(of, "'\\''");
			else
				out_printf(of, "%c", (unsigned char)*p < 0x20 ? '?' : *p);
		}
		out_printf(of, "%s", quote ? "'" : "");
	}
	out_printf(of, "\n");
}

/* Names are for people (the runtime goes by address), but keep the file
 * parseable: no control characters. */
static void write_name(struct sf_outfile *of, const char *name)
{
	for (const char *p = name; *p; p++)
		out_printf(of, "%c", (unsigned char)*p < 0x20 ? '?' : *p);
}

struct filter_opts {
	int within, unlisted_trace;
	const char *output;
};

static int write_filter(const struct filter_opts *fo, struct object *objs, size_t nobjs, int argc, char **argv)
{
	char err[PATH_MAX + 256];
	struct sf_outfile *of = sf_outfile_open(fo->output, 0, err, sizeof(err));
	if (!of) {
		sf_error("%s", err);
		return -1;
	}
	out_printf(of, "%s %d\n", FF_MAGIC, FF_VERSION);
	write_command_line(of, argc, argv);
	out_printf(of, "mode %s\nunlisted %s\n", fo->within ? "within" : "select",
		   fo->unlisted_trace ? "trace" : "skip");
	for (size_t i = 0; i < nobjs; i++) {
		struct object *o = &objs[i];
		out_printf(of, "\n# %zu of %zu instrumented functions\n", o->nselected, o->nfuncs);
		out_printf(of, "object %s %s\n", o->build_id, o->path);
		for (size_t j = 0; j < o->nfuncs; j++) {
			if (!is_selected(&o->funcs[j]))
				continue;
			out_printf(of, "0x%" PRIx64 " ", o->funcs[j].vaddr);
			write_name(of, sym_lookup(o->sym, o->funcs[j].vaddr)->name);
			out_printf(of, "\n");
		}
	}
	return sf_outfile_commit(of);
}

/* ---- the command ---- */

struct filter_args {
	struct filter_opts fo;
	const char **objects;
	size_t nobjects;
	struct nm_patterns inc, exc;
	enum nm_which which;
	int quiet, allow_empty, ignore_generic_args;
};

static int parse_args(int argc, char **argv, struct filter_args *a)
{
	static const struct option longopts[] = {
		{"object", required_argument, 0, 'p'},
		{"regex", required_argument, 0, 'r'},
		{"list", required_argument, 0, 'l'},
		{"exclude", required_argument, 0, 'x'},
		{"within", no_argument, 0, 'w'},
		{"unlisted", required_argument, 0, 'u'},
		{"output", required_argument, 0, 'o'},
		{"match", required_argument, 0, 'm'},
		{"quiet", no_argument, 0, 'q'},
		{"allow-empty", no_argument, 0, 'E'},
		{"ignore-generic-args", no_argument, 0, 'G'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:r:x:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			a->objects = xrealloc(a->objects, (a->nobjects + 1) * sizeof(*a->objects));
			a->objects[a->nobjects++] = optarg;
			break;
		case 'r': nm_add(&a->inc, optarg, "-r"); break;
		case 'l':
			if (nm_read_list(&a->inc, optarg) < 0)
				return 1;
			break;
		case 'x': nm_add(&a->exc, optarg, "--exclude"); break;
		case 'w': a->fo.within = 1; break;
		case 'u':
			if (strcmp(optarg, "skip") && strcmp(optarg, "trace")) {
				sf_error("--unlisted must be skip or trace, not '%s'", optarg);
				return 2;
			}
			a->fo.unlisted_trace = !strcmp(optarg, "trace");
			break;
		case 'o': a->fo.output = optarg; break;
		case 'm':
			if (nm_parse_which(optarg, &a->which) < 0) {
				sf_error("--match must be demangled, mangled or both, not '%s'", optarg);
				return 2;
			}
			break;
		case 'q': a->quiet = 1; break;
		case 'E': a->allow_empty = 1; break;
		case 'G': a->ignore_generic_args = 1; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "(sftrace filter --help describes the options)\n");
			return 2;
		}
	}
	if (optind < argc) {
		sf_error("unexpected argument '%s' (usage: sftrace filter -p OBJECT -r REGEX -o FILE)", argv[optind]);
		return 2;
	}
	const char *missing = !a->nobjects ? "no object given (-p OBJECT)"
			      : !a->inc.n  ? "no regex given (-r REGEX, or --list FILE with at least one regex)"
			      : !a->fo.output ? "no output given (-o FILE)"
					      : NULL;
	if (missing) {
		sf_error("%s; see sftrace filter --help", missing);
		return 2;
	}
	return -1; /* go on */
}

/* Reads every object's sled map first, so that a bad -p fails before any
 * summary is printed. Duplicates (same file) are dropped. */
static int load_objects(const struct filter_args *a, struct object *objs, size_t *nobjs)
{
	for (size_t i = 0; i < a->nobjects; i++) {
		struct object *o = &objs[*nobjs];
		memset(o, 0, sizeof(*o));
		o->arg = a->objects[i];
		if (load_xray_functions(o) < 0)
			return -1;
		++*nobjs; /* owns o->funcs from here on */
		if (!realpath(o->arg, o->path)) {
			sf_error("%s: %s", o->arg, strerror(errno));
			return -1;
		}
		for (size_t j = 0; j + 1 < *nobjs; j++) {
			if (strcmp(objs[j].path, o->path) != 0)
				continue;
			sf_warn("%s given twice; using it once", o->arg);
			free(o->funcs);
			--*nobjs;
			break;
		}
	}
	return 0;
}

static int run(struct filter_args *a, struct object *objs, size_t *nobjs, int argc, char **argv)
{
	char err[PATH_MAX + 256];
	if (sf_outfile_check(a->fo.output, err, sizeof(err)) < 0) {
		sf_error("%s", err);
		return 1;
	}
	if (nm_compile(&a->inc) < 0 || nm_compile(&a->exc) < 0)
		return 1;
	if (load_objects(a, objs, nobjs) < 0)
		return 1;
	size_t total = 0;
	for (size_t i = 0; i < *nobjs; i++) {
		if (select_functions(&objs[i], &a->inc, &a->exc, a->which, a->ignore_generic_args) < 0)
			return 1;
		if (!a->quiet)
			print_object_summary(&objs[i]);
		total += objs[i].nselected;
	}
	if (!total && !a->allow_empty) {
		sf_error("no instrumented function matches%s; no filter written", a->exc.n ? " (after --exclude)" : "");
		return 1;
	}
	fflush(stdout);
	if (!a->quiet) {
		for (size_t i = 0; i < *nobjs; i++)
			if (!objs[i].nselected)
				sf_warn("%s: no function selected: nothing in it will be recorded", objs[i].arg);
		warn_generic_matches(objs, *nobjs, &a->inc);
	}
	if (write_filter(&a->fo, objs, *nobjs, argc, argv) < 0)
		return 1;
	if (!a->quiet)
		printf("wrote %s: %zu function%s in %zu object%s (mode %s, unlisted %s)\n", sf_esc(a->fo.output), total,
		       total == 1 ? "" : "s", *nobjs, *nobjs == 1 ? "" : "s", a->fo.within ? "within" : "select",
		       a->fo.unlisted_trace ? "trace" : "skip");
	return 0;
}

int cmd_filter(int argc, char **argv)
{
	/* The runtime starts us (record --filter-regex) with every signal
	 * blocked; a command line tool should take ^C. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	struct filter_args a = {0};
	int rc = parse_args(argc, argv, &a);
	struct object *objs = NULL;
	size_t nobjs = 0;
	if (rc < 0) {
		objs = xcalloc(a.nobjects, sizeof(*objs));
		rc = run(&a, objs, &nobjs, argc, argv);
	}
	for (size_t i = 0; i < nobjs; i++) {
		sym_close(objs[i].sym);
		free(objs[i].funcs);
	}
	free(objs);
	free(a.objects);
	nm_free(&a.inc);
	nm_free(&a.exc);
	return rc;
}
