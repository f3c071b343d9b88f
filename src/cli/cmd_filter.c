/* sftrace filter: choose the functions `sftrace record -f` records, by
 * regular expressions over their names, and write them as a filter file
 * (src/format/filter_file.h). The selection is lib/select.h's; this file
 * parses the options and prints what was selected. */

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/record_args.h"
#include "lib/name_match.h"
#include "lib/outfile.h"
#include "lib/select.h"
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
		"  -h, --help                this help\n"
		"\n"
		"sftrace filter --args SPECS -p OBJECT -o OUTPUT, run by record's runtime,\n"
		"resolves record's -A/-R/--auto-args in an object the program loads.\n");
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

static void print_object_summary(struct sel_object *o)
{
	printf("%s: %zu of %zu instrumented function%s selected\n", sf_esc(o->path), o->nselected, o->nfuncs,
	       o->nfuncs == 1 ? "" : "s");
	size_t shown = 0;
	for (size_t i = 0; i < o->nfuncs && shown < MAX_SHOWN; i++) {
		if (!sel_is_selected(&o->funcs[i]))
			continue;
		print_name(stdout, "  ", sel_func_name(o, &o->funcs[i]));
		shown++;
	}
	if (o->nselected > shown)
		printf("  ... and %zu more (the filter file lists them all)\n", o->nselected - shown);
}

/* Selected functions that the regexes found only inside generic arguments
 * (`criterion` in serde_json::de::from_trait::<…, criterion::SavedSample>):
 * rarely what was meant, so say so, show a few with the arguments elided
 * (the part that did not match), and the ways to leave them out. */
static void warn_generic_matches(struct sel_object *objs, size_t nobjs, const struct nm_patterns *inc)
{
	size_t count = 0;
	for (size_t i = 0; i < nobjs; i++)
		for (size_t j = 0; j < objs[i].nfuncs; j++)
			count += sel_is_selected(&objs[i].funcs[j]) && !objs[i].funcs[j].outside_generics;
	if (!count)
		return;
	sf_warn("%zu selected function%s match%s only inside generic arguments, for example (<…> marks them):", count,
		count == 1 ? "" : "s", count == 1 ? "es" : "");
	char *shown[MAX_GENERIC_SHOWN];
	size_t nshown = 0;
	for (size_t i = 0; i < nobjs && nshown < MAX_GENERIC_SHOWN; i++)
		for (size_t j = 0; j < objs[i].nfuncs && nshown < MAX_GENERIC_SHOWN; j++) {
			struct sel_func *f = &objs[i].funcs[j];
			if (!sel_is_selected(f) || f->outside_generics)
				continue;
			char *e = nm_elide_generics(sel_func_name(&objs[i], f));
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

/* ---- the command ---- */

struct filter_args {
	struct sel_filter fo;
	const char *output;
	const char **objects;
	size_t nobjects;
	struct nm_patterns inc, exc;
	enum nm_which which;
	int quiet, allow_empty, ignore_generic_args;
	const char *args_specs; /* --args: record's argument specs (record_args.h) */
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
		{"args", required_argument, 0, 'A'},
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
		case 'o': a->output = optarg; break;
		case 'm':
			if (nm_parse_which(optarg, &a->which) < 0) {
				sf_error("--match must be demangled, mangled or both, not '%s'", optarg);
				return 2;
			}
			break;
		case 'q': a->quiet = 1; break;
		case 'E': a->allow_empty = 1; break;
		case 'G': a->ignore_generic_args = 1; break;
		case 'A': a->args_specs = optarg; break;
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
	const char *missing = !a->nobjects                    ? "no object given (-p OBJECT)"
			      : a->args_specs && a->nobjects > 1 ? "--args takes one object (-p OBJECT)"
			      : !a->inc.n && !a->args_specs ? "no regex given (-r REGEX, or --list FILE with at least one regex)"
			      : !a->output ? "no output given (-o FILE)"
					      : NULL;
	if (missing) {
		sf_error("%s; see sftrace filter --help", missing);
		return 2;
	}
	return -1; /* go on */
}

static int run(struct filter_args *a, struct sel_object *objs, size_t *nobjs, int argc, char **argv)
{
	char err[PATH_MAX + 256];
	if (sf_outfile_check(a->output, err, sizeof(err)) < 0) {
		sf_error("%s", err);
		return 1;
	}
	if (nm_compile(&a->inc) < 0 || nm_compile(&a->exc) < 0)
		return 1;
	if (sel_load_all(a->objects, a->nobjects, objs, nobjs) < 0)
		return 1;
	struct sel_query q = {&a->inc, &a->exc, a->which, a->ignore_generic_args};
	size_t total = 0;
	for (size_t i = 0; i < *nobjs; i++) {
		if (sel_select(&objs[i], &q) < 0)
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
	if (sel_write_filter(a->output, &a->fo, objs, *nobjs, argc, argv) < 0)
		return 1;
	if (!a->quiet)
		printf("wrote %s: %zu function%s in %zu object%s (mode %s, unlisted %s)\n", sf_esc(a->output), total,
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
	struct sel_object *objs = NULL;
	size_t nobjs = 0;
	if (rc < 0 && a.args_specs) {
		rc = ra_object_file(a.args_specs, a.objects[0], a.output) < 0;
	} else if (rc < 0) {
		objs = xcalloc(a.nobjects, sizeof(*objs));
		rc = run(&a, objs, &nobjs, argc, argv);
	}
	for (size_t i = 0; i < nobjs; i++)
		sel_free(&objs[i]);
	free(objs);
	free(a.objects);
	nm_free(&a.inc);
	nm_free(&a.exc);
	return rc;
}
