/* sftrace query LOG|DIR... SQL: SQL (SQLite) over a recording's frames,
 * functions and threads (src/lib/sql_tables.c; docs/QUERY.md).
 *
 * Statements run in order; the rows of the last one that returns columns
 * are printed, as a table on a terminal, else as TSV (--format picks csv,
 * tsv, json or table). Output is held back until every statement has run,
 * so a failing query prints its one-line error and nothing else.
 *
 * Read-only unless --writable: SQL that would create or write a file is
 * refused (query_guard below). Text from the logs is escaped in every
 * format (text_esc.h, json_out.h). */
#include <getopt.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/input_opts.h"
#include "lib/json_out.h"
#include "lib/sql_tables.h"
#include "lib/text_esc.h"
#include "lib/util.h"

enum qformat { Q_TABLE, Q_TSV, Q_CSV, Q_JSON };

static const char *const format_names[] = {"table", "tsv", "csv", "json"};

/* A cell as text (NULL for SQL NULL; blobs in hex), and whether it is a number. */
static char *cell_text(sqlite3_stmt *st, int i, int *num)
{
	int type = sqlite3_column_type(st, i);
	*num = type == SQLITE_INTEGER || type == SQLITE_FLOAT;
	if (type == SQLITE_NULL)
		return NULL;
	if (type == SQLITE_BLOB) {
		const unsigned char *b = sqlite3_column_blob(st, i);
		int n = sqlite3_column_bytes(st, i);
		char *s = xmalloc((size_t)n * 2 + 1);
		for (int k = 0; k < n; k++)
			sprintf(s + 2 * k, "%02x", b[k]);
		s[2 * n] = 0;
		return s;
	}
	return xstrdup((const char *)sqlite3_column_text(st, i));
}

/* ---- tsv, csv, json: streamed to a temporary file ---- */

/* Tabs and newlines would break the row: spaces. */
static void put_tsv(FILE *out, const char *s)
{
	if (s)
		sf_esc_put(out, s, "\t\n\r");
}

/* Escaped first, so only commas and quotes still need quoting. */
static void put_csv(FILE *out, const char *s)
{
	if (!s)
		return;
	s = sf_esc(s);
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void put_json_value(FILE *out, sqlite3_stmt *st, int i, const char *text)
{
	int type = sqlite3_column_type(st, i);
	if (!text || (type == SQLITE_FLOAT && !isfinite(sqlite3_column_double(st, i))))
		fputs("null", out); /* JSON has no NaN or infinity */
	else if (type == SQLITE_INTEGER || type == SQLITE_FLOAT)
		fputs(text, out);
	else
		json_put_str(out, text);
}

static void stream_header(FILE *out, sqlite3_stmt *st, enum qformat f)
{
	if (f == Q_JSON) {
		fputc('[', out);
		return;
	}
	for (int i = 0; i < sqlite3_column_count(st); i++) {
		if (i)
			fputc(f == Q_CSV ? ',' : '\t', out);
		(f == Q_CSV ? put_csv : put_tsv)(out, sqlite3_column_name(st, i));
	}
	fputc('\n', out);
}

static void stream_row(FILE *out, sqlite3_stmt *st, enum qformat f, uint64_t rowno)
{
	int n = sqlite3_column_count(st);
	if (f == Q_JSON)
		fputs(rowno ? ",\n{" : "\n{", out);
	for (int i = 0; i < n; i++) {
		int num;
		char *s = cell_text(st, i, &num);
		if (f == Q_JSON) {
			if (i)
				fputc(',', out);
			json_put_str(out, sqlite3_column_name(st, i));
			fputc(':', out);
			put_json_value(out, st, i, s);
		} else {
			if (i)
				fputc(f == Q_CSV ? ',' : '\t', out);
			(f == Q_CSV ? put_csv : put_tsv)(out, s);
		}
		free(s);
	}
	fputs(f == Q_JSON ? "}" : "\n", out);
}

/* ---- table: every cell kept to size the columns ---- */

struct table {
	int ncols;
	char **cells;   /* rows x ncols, header first */
	char *num;      /* right-align this cell */
	size_t nrows, cap;
};

static void table_row(struct table *t, sqlite3_stmt *st, int header)
{
	for (int i = 0; i < t->ncols; i++) {
		int num = 0;
		char *s = header ? xstrdup(sqlite3_column_name(st, i)) : cell_text(st, i, &num);
		/* The display cell of t->nrows, column i. */
		size_t k = t->nrows * (size_t)t->ncols + (size_t)i;
		if (k + 1 > t->cap) {
			t->cap = t->cap ? t->cap * 2 : 256;
			t->cells = xrealloc(t->cells, t->cap * sizeof(*t->cells));
			t->num = xrealloc(t->num, t->cap);
		}
		t->cells[k] = xstrdup(s ? sf_esc(s) : "NULL");
		free(s);
		t->num[k] = (char)num;
	}
	t->nrows++;
}

static int utf8_width(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void table_print(struct table *t, FILE *out)
{
	int *wid = xcalloc((size_t)t->ncols, sizeof(int));
	for (size_t r = 0; r < t->nrows; r++)
		for (int c = 0; c < t->ncols; c++) {
			int w = utf8_width(t->cells[r * (size_t)t->ncols + (size_t)c]);
			if (w > wid[c])
				wid[c] = w;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		for (int c = 0; c < t->ncols; c++) {
			size_t k = r * (size_t)t->ncols + (size_t)c;
			const char *s = t->cells[k];
			int pad = wid[c] - utf8_width(s);
			int last = c == t->ncols - 1;
			if (t->num[k])
				fprintf(out, "%*s%s", pad, "", s);
			else
				fprintf(out, "%s%*s", s, last ? 0 : pad, "");
			fputs(last ? "\n" : "  ", out);
		}
	}
	free(wid);
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->num);
	memset(t, 0, sizeof(*t));
}

/* ---- read-only ----
 *
 * The database is in memory, so SQL writes to it (a temporary table) touch
 * no file. Files are written only through another database: ATTACH opens
 * (creating) the file it names, and VACUUM INTO runs an ATTACH of its
 * target inside. SQLite asks the authorizer about both, VACUUM's inner
 * ATTACH included, as SQLITE_ATTACH with the file name; the guard refuses
 * every one and remembers the name for the message. No attached database
 * is allowed either (SQLITE_LIMIT_ATTACHED 0), should an ATTACH ever get
 * past the authorizer. Extensions stay unloadable (SQLite's default). */

struct query_guard {
	int refused;
	char name[256]; /* the file an ATTACH named ("" if not a literal) */
};

static int guard_authorize(void *ctx, int action, const char *a1, const char *a2, const char *db, const char *view)
{
	(void)a2, (void)db, (void)view;
	if (action != SQLITE_ATTACH)
		return SQLITE_OK;
	struct query_guard *g = ctx;
	g->refused = 1;
	snprintf(g->name, sizeof(g->name), "%s", a1 ? a1 : "");
	return SQLITE_DENY;
}

static void guard_install(sqlite3 *db, struct query_guard *g)
{
	sqlite3_set_authorizer(db, guard_authorize, g);
	sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
}

/* One line for a failed statement: the guard's refusal, or SQLite's
 * message. guard: NULL with --writable. */
static void sql_error(sqlite3 *db, const struct query_guard *guard)
{
	if (guard && guard->refused)
		sf_error("query: refused to write %s%s%s: sftrace query is read-only (ATTACH and VACUUM INTO need "
			 "--writable)",
			 *guard->name ? "'" : "a file", guard->name, *guard->name ? "'" : "");
	else
		sf_error("query: %s", sqlite3_errmsg(db));
}

/* ---- running the statements ---- */

/* Runs every statement of sql; the last one with columns writes to *out (a
 * fresh temporary file each time) or into *tab. 0, or -1 after an error.
 * guard: the installed query_guard, NULL with --writable. */
static int run_sql(sqlite3 *db, const struct query_guard *guard, const char *sql, enum qformat f, FILE **out,
		   struct table *tab)
{
	const char *tail = sql;
	int statements = 0;
	while (tail && *tail) {
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(db, tail, -1, &st, &tail) != SQLITE_OK) {
			sql_error(db, guard);
			return -1;
		}
		if (!st)
			continue; /* only white space or a comment */
		statements++;
		int ncols = sqlite3_column_count(st);
		if (ncols) {
			if (*out)
				fclose(*out);
			table_free(tab);
			*out = NULL;
			if (f == Q_TABLE) {
				tab->ncols = ncols;
				table_row(tab, st, 1);
			} else {
				*out = tmpfile();
				if (!*out) {
					sf_error("query: cannot create a temporary file for the output");
					sqlite3_finalize(st);
					return -1;
				}
				stream_header(*out, st, f);
			}
		}
		uint64_t rows = 0;
		int rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (f == Q_TABLE)
				table_row(tab, st, 0);
			else
				stream_row(*out, st, f, rows);
			rows++;
		}
		if (rc != SQLITE_DONE) {
			sql_error(db, guard);
			sqlite3_finalize(st);
			return -1;
		}
		if (ncols && f == Q_JSON)
			fputs(rows ? "\n]\n" : "]\n", *out);
		sqlite3_finalize(st);
	}
	if (!statements) {
		sf_error("query: no SQL statement given");
		return -1;
	}
	return 0;
}

static int copy_out(FILE *in)
{
	char buf[65536];
	size_t n;
	rewind(in);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, stdout) != n)
			return 0; /* stdout's error: input_opts_end_output's to judge (a reader gone is none) */
	return ferror(in) ? -1 : 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sftrace query [OPTIONS] LOG|DIR... SQL\n"
		"\n"
		"Runs SQL (SQLite) over a recording. Tables (docs/QUERY.md has the details):\n"
		"  frames(frame_id, parent, pid, tid, func_id, name, start_ns, dur_ns, self_ns, depth,\n"
		"         short_name)\n"
		"         one row per call, repaired as in every output; streamed from the logs\n"
		"         (every scan reads them again)\n"
		"  functions(func_id, name, file, line, object, short_name)   every instrumented\n"
		"         function\n"
		"  threads(pid, tid, thread_name, process_name, label)   every thread with events\n"
		"  args(frame_id, index, name, value)   every argument and return value that\n"
		"         record -A/-R or --auto-args recorded, as replay shows it (index: quote it)\n"
		"short_name: the name as report prints it; label: the thread name, with the\n"
		"thread's first function where the kernel cut the name.\n"
		"Times are ns since the process start. Statements run in order; the rows of\n"
		"the last one that returns rows are printed.\n"
		"\n"
		"options:\n"
		"      --format FMT       table (default on a terminal), tsv (default otherwise),\n"
		"                         csv or json (an array of objects, one per row)\n"
		"      --writable         allow SQL that writes files (ATTACH, VACUUM INTO);\n"
		"                         without it, query is read-only\n"
		"  -h, --help             this help\n");
	input_opts_usage(out, 's');
}

struct query_opts {
	int fmt; /* format_names index, -1: by stdout */
	int writable;
};

static int query_option(void *ctx, int c, const char *arg)
{
	struct query_opts *q = ctx;
	if (c == 'W') {
		q->writable = 1;
		return 0;
	}
	if (c != 'f')
		return -1;
	q->fmt = -1;
	for (int i = 0; i < 4; i++)
		if (!strcmp(arg, format_names[i]))
			q->fmt = i;
	if (q->fmt < 0) {
		sf_error("--format must be table, tsv, csv or json, not '%s'", arg);
		return -1;
	}
	return 0;
}

int cmd_query(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, 0, 'f'},
		{"writable", no_argument, 0, 'W'},
		{0, 0, 0, 0},
	};
	struct input_opts io;
	input_opts_init(&io, 's');
	int usage_error;
	struct query_opts qo = {-1, 0};
	const struct cmd_opts own = {longopts, NULL, query_option, &qo, usage, IO_PAGE_ASKED};
	switch (input_opts_parse(&io, &own, argc, argv)) {
	case IO_HELP_SHOWN: input_opts_free(&io); return 0;
	case IO_USAGE_ERROR: goto out_usage;
	}
	int fmt = qo.fmt, writable = qo.writable;
	if (argc - optind < 2) {
		sf_error("query needs a log (or directory) and an SQL statement (usage: sftrace query [OPTIONS] "
			 "LOG|DIR... SQL)");
		goto out_usage;
	}
	enum qformat f = fmt >= 0 ? (enum qformat)fmt : isatty(1) ? Q_TABLE : Q_TSV;
	const char *sql = argv[argc - 1];
	struct trace_input *in = input_opts_open(&io, "query", argc - 1, argv, optind, NULL, 0, &usage_error);
	if (!in) {
		if (usage_error)
			goto out_usage;
		input_opts_free(&io);
		return 1;
	}
	int rc = 1;
	sqlite3 *db = NULL;
	struct sql_tables *tabs = NULL;
	FILE *out = NULL;
	struct table tab = {0};
	struct query_guard guard = {0};
	char err[1024];
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		sf_error("query: cannot open an SQLite database: %s", db ? sqlite3_errmsg(db) : "out of memory");
	} else if (!(tabs = sqlt_attach(db, in, (const char *const *)argv + optind, (size_t)(argc - 1 - optind),
					&io.trace, err, sizeof(err)))) {
		sf_error("query: %s", err);
	} else {
		if (!writable)
			guard_install(db, &guard);
		if (run_sql(db, writable ? NULL : &guard, sql, f, &out, &tab) == 0) {
			if (f == Q_TABLE)
				table_print(&tab, stdout);
			else if (out && copy_out(out) < 0)
				sf_error("query: cannot read back the output");
			rc = input_opts_end_output(&io, !(out && ferror(out)), "the result");
		}
	}
	input_opts_pager_done(&io);
	if (out)
		fclose(out);
	table_free(&tab);
	sqlite3_close(db);
	sqlt_free(tabs);
	trace_report_repairs(in);
	trace_close(in);
	input_opts_free(&io);
	return rc;
out_usage:
	return input_opts_usage_error(&io, "query");
}
