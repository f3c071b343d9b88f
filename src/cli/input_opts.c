#include "cli/input_opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/pager.h"
#include "format/sf_env.h"
#include "lib/outfile.h"
#include "lib/util.h"

void input_opts_init(struct input_opts *o, int symbol_char)
{
	memset(o, 0, sizeof(*o));
	o->symbol_char = symbol_char;
	o->names = -1;
	o->pager = -1;
}

void input_opts_pager_usage(FILE *out, int by)
{
	if (by != IO_PAGE_NEVER)
		fputs("paging (as git: $" SF_ENV(PAGER) ", else $PAGER, else less; empty or cat: none):\n", out);
	if (by == IO_PAGE_BY_DEFAULT)
		fprintf(out, "      --no-pager         write straight to stdout, not through a pager\n"
			     "      --pager            page on a terminal (the default; also --paginate)\n");
	else if (by == IO_PAGE_ASKED)
		fprintf(out, "      --pager            on a terminal, page the output (also --paginate)\n"
			     "      --no-pager         write straight to stdout (the default)\n");
}

int input_opts_page(struct input_opts *o)
{
	if (!o->paging && (o->pager == 1 || (o->pager < 0 && o->page_by == IO_PAGE_BY_DEFAULT)))
		o->paging = pager_start() == 0;
	o->trace.no_progress |= o->paging;
	return o->paging;
}

int input_opts_end_output(struct input_opts *o, int ok, const char *what)
{
	errno = 0;
	int written = fflush(stdout) == 0 && !ferror(stdout);
	int err = errno; /* the failed write's cause, unless an earlier one was cleared since */
	/* a pager quit early, or a pipe's reader, took what the reader wanted */
	int gone = !written && (o->paging || sf_stdout_reader_gone());
	int rc = ok && (written || gone) ? 0 : 1;
	if (ok && !written && !gone) {
		/* name what stdout is (a file, a device), as errors name files */
		char target[256] = "";
		ssize_t n = readlink("/proc/self/fd/1", target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		sf_error("cannot write %s to stdout%s%s%s%s%s", what, *target ? " (" : "", target, *target ? ")" : "",
			 err ? ": " : "", err ? strerror(err) : "");
	}
	input_opts_pager_done(o);
	return rc;
}

void input_opts_pager_done(struct input_opts *o)
{
	if (o->paging) {
		pager_end();
		o->paging = 0;
	}
}

int io_parse_duration(const char *opt, const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double mul; } units[] = {
		{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9},
	};
	char *end;
	double v = strtod(s, &end);
	if (end == s || v < 0 || !(v < 1.8e19)) {
		sf_error("%s: '%s' is not a duration (a number and ns, us, ms or s)", opt, s);
		return -1;
	}
	if (!*end && v == 0) {
		*ns = 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit) && v * units[i].mul < 1.8e19) {
			*ns = (uint64_t)(v * units[i].mul + 0.5);
			return 0;
		}
	sf_error("%s: '%s' needs a unit: ns, us, ms or s (for example 1.5ms)", opt, s);
	return -1;
}

/* START..END, either side optional. */
static int parse_window(struct trace_cut_options *c, const char *s)
{
	const char *dots = strstr(s, "..");
	if (!dots) {
		sf_error("--time must be START..END (either side may be empty), not '%s'", s);
		return -1;
	}
	char start[64], end[64];
	size_t n = (size_t)(dots - s);
	if (n >= sizeof(start) || strlen(dots + 2) >= sizeof(end)) {
		sf_error("--time: '%s' is too long", s);
		return -1;
	}
	memcpy(start, s, n);
	start[n] = 0;
	strcpy(end, dots + 2);
	c->win_start = 0;
	c->win_end = UINT64_MAX;
	if ((*start && io_parse_duration("--time", start, &c->win_start) < 0) ||
	    (*end && io_parse_duration("--time", end, &c->win_end) < 0))
		return -1;
	if (c->win_end <= c->win_start) {
		sf_error("--time: the end (%s) must come after the start (%s)", end, start);
		return -1;
	}
	c->has_window = 1;
	return 0;
}

static int parse_tids(struct input_opts *o, const char *s)
{
	const char *p = s;
	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p || v > UINT32_MAX || (*end && *end != ',')) {
			sf_error("--tid must be a comma-separated list of thread ids, not '%s'", s);
			return -1;
		}
		o->tids = xrealloc(o->tids, (o->trace.cut.ntids + 1) * sizeof(*o->tids));
		o->tids[o->trace.cut.ntids++] = (uint32_t)v;
		p = *end ? end + 1 : end;
	}
	o->trace.cut.tids = o->tids;
	return 0;
}

/* -F/-N REGEX: one more pattern on the list, with its place among all -F
 * and -N (the later option wins for a function both find, as uftrace). */
static void add_regex(struct input_opts *o, const char ***v, unsigned **seq, size_t *n, const char *arg)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	*seq = xrealloc(*seq, (*n + 1) * sizeof(**seq));
	(*seq)[*n] = o->nfunc_opts++;
	(*v)[(*n)++] = arg;
}

/* The cut and name options; 1 if c was one. */
static int handle_cut(struct input_opts *o, int c, const char *arg)
{
	struct trace_cut_options *cut = &o->trace.cut;
	long v = 0;
	switch (c) {
	case 'c': cut->filter_path = arg; break;
	case 'F':
		add_regex(o, &o->only_funcs, &o->only_seq, &cut->nonly_funcs, arg);
		cut->only_funcs = o->only_funcs;
		cut->only_seq = o->only_seq;
		break;
	case 'N':
		add_regex(o, &o->notrace_funcs, &o->notrace_seq, &cut->nnotrace_funcs, arg);
		cut->notrace_funcs = o->notrace_funcs;
		cut->notrace_seq = o->notrace_seq;
		break;
	case IO_TID: o->failed |= parse_tids(o, arg) < 0; break;
	case IO_TIME: o->failed |= parse_window(cut, arg) < 0; break;
	case IO_MIN_DURATION: o->failed |= io_parse_duration("--min-duration", arg, &cut->min_duration) < 0; break;
	case IO_MAX_DEPTH:
		o->failed |= parse_number("--max-depth", arg, 1, 1L << 30, &v) < 0;
		cut->max_depth = (uint32_t)v;
		break;
	case IO_NAMES:
		if (!strcmp(arg, "full") || !strcmp(arg, "short"))
			o->names = !strcmp(arg, "short");
		else {
			sf_error("--names must be 'full' or 'short', not '%s'", arg);
			o->failed = 1;
		}
		break;
	default: return 0;
	}
	return 1;
}

int input_opts_short_names(const struct input_opts *o, int dflt) { return o->names < 0 ? dflt : o->names; }

int input_opts_handle(struct input_opts *o, int c, const char *arg)
{
	if (c == o->symbol_char) {
		o->symbols = xrealloc(o->symbols, (o->nsymbols + 1) * sizeof(*o->symbols));
		o->symbols[o->nsymbols++] = arg;
	} else if (c == IO_FORCE) {
		o->trace.force = 1;
	} else if (c == IO_NO_SYMBOLS) {
		o->trace.no_symbols = 1;
	} else if (c == 'q') {
		o->trace.quiet = 1;
	} else if (c == IO_PAGER || c == IO_NO_PAGER) {
		o->pager = c == IO_PAGER;
	} else {
		return handle_cut(o, c, arg);
	}
	return 1;
}

void input_opts_usage_symbols(FILE *out, int symbol_char)
{
	if (symbol_char > ' ' && symbol_char < 127)
		fprintf(out, "  -%c, --symbol PATH      ", symbol_char);
	else
		fprintf(out, "      --symbol PATH      ");
	fprintf(out,
		"read symbols from PATH for the object with the same\n"
		"                         build-id (or file name): a moved binary or a debug file\n"
		"      --force            symbolize despite build-id mismatches or missing objects\n"
		"      --no-symbols       do not read ELF files; name functions by address\n"
		"  -q, --quiet            no warnings or progress\n"
		"      --names full|short  function names in full, or short: generic arguments\n"
		"                         as <…>, closures as {closure}, no crate hashes\n");
}

void input_opts_usage(FILE *out, int symbol_char)
{
	input_opts_usage_symbols(out, symbol_char);
	fprintf(out,
		"cutting the trace (kept calls keep exact times; outputs stay balanced):\n"
		"  -c, --filter FILE      keep calls of the functions a filter file selects\n"
		"                         (sftrace filter; within mode: and everything under them)\n"
		"  -F, --filter-func REGEX  keep only calls of functions whose name REGEX finds\n"
		"                         (demangled, full or short as report prints it), and\n"
		"                         everything they call (repeatable)\n"
		"  -N, --notrace REGEX    drop calls of functions whose name REGEX finds, and\n"
		"                         everything they call (repeatable)\n"
		"                         (-F/-N NAME with no regex metacharacter: that name,\n"
		"                         whole, as uftrace; '^NAME' for every name starting so;\n"
		"                         for a function both find, the later option wins)\n"
		"      --tid LIST         keep these threads (comma-separated tids)\n"
		"      --time START..END  keep this window, from the trace start (units ns, us,\n"
		"                         ms, s; either side may be empty): calls open at an\n"
		"                         edge are cut there and counted\n"
		"      --min-duration DUR drop calls shorter than DUR (e.g. 50us)\n"
		"      --max-depth N      keep calls with fewer than N kept callers (1: each\n"
		"                         thread's outermost calls; with -F, counted from each\n"
		"                         call -F finds, nested ones included, as uftrace)\n");
}

struct trace_input *input_opts_open(struct input_opts *o, const char *cmd, int argc, char **argv, int first,
				    const char *out, int out_required, int *usage_error)
{
	*usage_error = 0;
	if (first >= argc) {
		sf_error("no log given (usage: sftrace %s [OPTIONS] LOG...%s)", cmd, out_required ? " -o OUT" : "");
		*usage_error = 1;
		return NULL;
	}
	if (out_required && !out) {
		sf_error("no output given: pass -o OUT");
		*usage_error = 1;
		return NULL;
	}
	char err[1024];
	if (out && sf_outfile_check(out, err, sizeof(err)) < 0) {
		sf_error("%s", err);
		return NULL;
	}
	input_opts_page(o);
	o->trace.symbol_paths = o->symbols;
	o->trace.nsymbol_paths = o->nsymbols;
	return trace_open((const char *const *)argv + first, (size_t)(argc - first), &o->trace);
}

void input_opts_free(struct input_opts *o)
{
	input_opts_pager_done(o); /* an error ended the output early */
	free(o->tids);
	o->tids = NULL;
	free(o->only_funcs);
	free(o->notrace_funcs);
	o->only_funcs = o->notrace_funcs = NULL;
	free(o->only_seq);
	free(o->notrace_seq);
	o->only_seq = o->notrace_seq = NULL;
	free(o->symbols);
	o->symbols = NULL;
	o->nsymbols = 0;
}

int input_opts_parse(struct input_opts *o, const struct cmd_opts *c, int argc, char **argv)
{
	const struct option shared[] = {INPUT_LONGOPTS(o->symbol_char), {"help", no_argument, 0, 'h'},
					PAGER_LONGOPTS};
	size_t nown = 0, nshared = sizeof(shared) / sizeof(shared[0]) - (c->page_by == IO_PAGE_NEVER ? 3 : 0);
	o->page_by = c->page_by;
	while (c->longopts && c->longopts[nown].name)
		nown++;
	struct option *all = xcalloc(nown + nshared + 1, sizeof(*all));
	memcpy(all, c->longopts, nown * sizeof(*all));
	memcpy(all + nown, shared, nshared * sizeof(*all));
	char shorts[64];
	int sym = o->symbol_char > ' ' && o->symbol_char < 127;
	snprintf(shorts, sizeof(shorts), "%s%s%s" INPUT_SHORTOPTS "h", c->shortopts ? c->shortopts : "",
		 sym ? (char[]){(char)o->symbol_char, 0} : "", sym ? ":" : "");
	int rc = IO_PARSED, opt;
	optind = 1;
	while (rc == IO_PARSED && (opt = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
		if (input_opts_handle(o, opt, optarg)) {
			if (o->failed)
				rc = IO_USAGE_ERROR;
		} else if (opt == 'h') {
			c->usage(stdout);
			input_opts_pager_usage(stdout, c->page_by);
			rc = IO_HELP_SHOWN;
		} else if (opt == '?' || opt == ':' || !c->handle || c->handle(c->ctx, opt, optarg) < 0) {
			rc = IO_USAGE_ERROR;
		}
	}
	free(all);
	return rc;
}

int input_opts_usage_error(struct input_opts *o, const char *cmd)
{
	input_opts_free(o);
	fprintf(stderr, "(sftrace %s --help describes the options)\n", cmd);
	return 2;
}

int parse_color(const char *arg, const char **color)
{
	if (strcmp(arg, "auto") && strcmp(arg, "always") && strcmp(arg, "never")) {
		sf_error("--color must be auto, always or never, not '%s'", arg);
		return -1;
	}
	*color = arg;
	return 0;
}

int parse_weight(const char *arg, int *calls)
{
	if (!strcmp(arg, "calls"))
		*calls = 1;
	else if (!strcmp(arg, "time"))
		*calls = 0;
	else {
		sf_error("--weight must be 'calls' or 'time', not '%s'", arg);
		return -1;
	}
	return 0;
}

int parse_number(const char *name, const char *arg, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (!*arg || *end || v < lo || v > hi) {
		sf_error("%s must be a whole number from %ld to %ld, not '%s'", name, lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}
