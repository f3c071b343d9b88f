#include "cli/record_why.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/xray_map.h"
#include "lib/filter_merge.h"
#include "lib/text_esc.h"
#include "lib/util.h"

struct noted_object {
	char *build_id, *path;
	unsigned long sleds, patched;
};

struct notes {
	char **messages;
	size_t nmessages;
	struct noted_object *objs;
	size_t nobjs;
};

static void add_message(struct notes *n, const char *m)
{
	for (size_t i = 0; i < n->nmessages; i++)
		if (!strcmp(n->messages[i], m))
			return;
	n->messages = xrealloc(n->messages, (n->nmessages + 1) * sizeof(*n->messages));
	n->messages[n->nmessages++] = xstrdup(m);
}

static void add_object(struct notes *n, const char *line)
{
	unsigned long sleds, patched;
	char bid[160];
	int used = 0;
	if (sscanf(line, "object %lu %lu %159s %n", &sleds, &patched, bid, &used) != 3 || !used)
		return;
	const char *path = line + used;
	for (size_t i = 0; i < n->nobjs; i++)
		if (!strcmp(n->objs[i].path, path) && !strcmp(n->objs[i].build_id, bid)) {
			if (patched > n->objs[i].patched)
				n->objs[i].patched = patched;
			return;
		}
	n->objs = xrealloc(n->objs, (n->nobjs + 1) * sizeof(*n->objs));
	n->objs[n->nobjs++] = (struct noted_object){xstrdup(bid), xstrdup(path), sleds, patched};
}

/* Calls cb with the path of every file in dir (one per process). */
static void foreach_note_file(const char *dir, void (*cb)(const char *path, void *ctx), void *ctx)
{
	DIR *d = dir ? opendir(dir) : NULL;
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		cb(path, ctx);
	}
	closedir(d);
}

/* Calls cb with each line of the note file at path, its newline cut. */
static void foreach_note_line(const char *path, void (*cb)(const char *line, void *ctx), void *ctx)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[len - 1] = 0;
		cb(line, ctx);
	}
	free(line);
	fclose(f);
}

/* A loss line of the runtime's (sf_rt_lost; docs/FORMAT.md, "Runtime
 * notes"): "loss CALL ERRNO PROG\tTEXT", CALL "-" for none, ERRNO 0 for
 * none. Its fields, copied; 0 if line is not one. */
struct loss {
	char call[32], prog[256];
	int err;
	const char *text; /* in line */
};

static int parse_loss(const char *line, struct loss *o)
{
	int used = 0;
	if (sscanf(line, "loss %31[a-z0-9_-] %d %n", o->call, &o->err, &used) != 2 || !used)
		return 0;
	const char *p = line + used, *tab = strchr(p, '\t');
	if (!tab || tab == p)
		return 0;
	snprintf(o->prog, sizeof(o->prog), "%.*s", (int)(tab - p), p);
	o->text = tab + 1;
	return 1;
}

/* "TEXT: CALL: STRERROR" (the call and the error as they are there). */
static void loss_cause(const struct loss *o, char *out, size_t cap)
{
	int named = strcmp(o->call, "-") != 0;
	snprintf(out, cap, "%s%s%s%s%s", o->text, named ? ": " : "", named ? o->call : "", o->err > 0 ? ": " : "",
		 o->err > 0 ? strerror(o->err) : "");
}

static void read_note_line(const char *line, void *ctx)
{
	struct notes *n = ctx;
	struct loss lo;
	if (!strncmp(line, "sftrace: ", 9)) {
		add_message(n, line + 9);
	} else if (parse_loss(line, &lo)) {
		char m[4096];
		loss_cause(&lo, m, sizeof(m));
		add_message(n, m);
	}
	else if (!strncmp(line, "object ", 7))
		add_object(n, line);
}

static void read_note_file(const char *path, void *ctx)
{
	foreach_note_line(path, read_note_line, ctx);
}

struct lost_scan {
	const char *pid; /* the file's process */
	int own;	 /* its own first loss was said */
	int count;
};

static void report_lost_line(const char *line, void *ctx)
{
	struct lost_scan *s = ctx;
	/* "relayed PID LINE": a relative noted PID's line for it (the
	 * runtime's fork-family page, notes.c), PID could note nothing */
	const char *who = s->pid, *l = line;
	char rpid[16];
	int used = 0;
	if (sscanf(line, "relayed %15[0-9] %n", rpid, &used) == 1 && used) {
		who = rpid;
		l = line + used;
	} else if (s->own) {
		return;
	}
	struct loss lo;
	if (parse_loss(l, &lo)) {
		char m[4096];
		loss_cause(&lo, m, sizeof(m));
		if (strcmp(lo.prog, "-"))
			fprintf(stderr, "sftrace: pid %s (%s) wrote no log: %s\n", sf_esc(who), sf_esc(lo.prog), sf_esc(m));
		else
			fprintf(stderr, "sftrace: pid %s wrote no log: %s\n", sf_esc(who), sf_esc(m));
		s->count++;
		if (who == s->pid)
			s->own = 1; /* its first such line only */
	} else if (!strncmp(l, "sftrace: cannot create log ", 27) || !strncmp(l, "sftrace: cannot write log ", 26) ||
		   !strncmp(l, "sftrace: cannot map log ", 24)) { /* a runtime's from before "loss" lines */
		fprintf(stderr, "sftrace: pid %s wrote no log: %s\n", sf_esc(who), sf_esc(l + 9));
		s->count++;
		if (who == s->pid)
			s->own = 1; /* its first such line only */
	}
}

static void report_lost_file(const char *path, void *ctx)
{
	int *count = ctx;
	struct lost_scan s = {strrchr(path, '/') + 1, 0, 0};
	foreach_note_line(path, report_lost_line, &s);
	*count += s.count;
}

int record_report_lost(const char *notes_dir)
{
	int count = 0;
	foreach_note_file(notes_dir, report_lost_file, &count);
	return count;
}

static void free_notes(struct notes *n);

struct report_scan {
	struct notes n; /* its messages, each once */
	size_t *times;	/* how often each came */
};

static void report_line(const char *line, void *ctx)
{
	struct report_scan *s = ctx;
	/* "relayed PID report sftrace: ...": a process under a seccomp
	 * filter that could not note its own (the runtime's
	 * sf_seccomp_exec_note), said for it by a relative's writer */
	char rpid[16];
	int used = 0;
	if (sscanf(line, "relayed %15[0-9] %n", rpid, &used) == 1 && used && !strncmp(line + used, "report sftrace: ", 16)) {
		fprintf(stderr, "sftrace: pid %s: %s\n", sf_esc(rpid), sf_esc(line + used + 16));
		return;
	}
	if (strncmp(line, "report sftrace: ", 16))
		return;
	size_t i = 0;
	while (i < s->n.nmessages && strcmp(s->n.messages[i], line + 16))
		i++;
	if (i == s->n.nmessages) {
		add_message(&s->n, line + 16);
		s->times = xrealloc(s->times, s->n.nmessages * sizeof(*s->times));
		s->times[i] = 0;
	}
	s->times[i]++;
}

/* A process's "report" lines (the runtime's sf_rt_report: calls it ran
 * but did not record, such as a clone(CLONE_VM) child's), one line each,
 * the same one counted. */
static void report_file(const char *path, void *ctx)
{
	(void)ctx;
	const char *pid = strrchr(path, '/') + 1;
	struct report_scan s = {{0}, NULL};
	foreach_note_line(path, report_line, &s);
	for (size_t i = 0; i < s.n.nmessages; i++) {
		fprintf(stderr, "sftrace: pid %s: %s", sf_esc(pid), sf_esc(s.n.messages[i]));
		if (s.times[i] > 1)
			fprintf(stderr, " (%zu times)", s.times[i]);
		fputc('\n', stderr);
	}
	free(s.times);
	free_notes(&s.n);
}

void record_report_notes(const char *notes_dir)
{
	foreach_note_file(notes_dir, report_file, NULL);
}

static void free_notes(struct notes *n)
{
	for (size_t i = 0; i < n->nmessages; i++)
		free(n->messages[i]);
	for (size_t i = 0; i < n->nobjs; i++) {
		free(n->objs[i].build_id);
		free(n->objs[i].path);
	}
	free(n->messages);
	free(n->objs);
}

/* 1 if the dynamic section dyn describes has a DT_SONAME. */
static int has_soname(int fd, const Elf64_Phdr *dyn)
{
	for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dyn->p_filesz; at += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;
		if (pread(fd, &d, sizeof(d), (off_t)(dyn->p_offset + at)) != (ssize_t)sizeof(d) || d.d_tag == DT_NULL)
			return 0;
		if (d.d_tag == DT_SONAME)
			return 1;
	}
	return 0;
}

/* 1 if the file is a 64-bit ELF executable without a program interpreter
 * (statically linked: LD_PRELOAD never applies). The dynamic loader has
 * none either, being the interpreter itself, but run as a command
 * ("ld.so PROG", as relocatable bundles start theirs) it honours
 * LD_PRELOAD: it is told apart from a static-pie executable (ET_DYN with a
 * PT_DYNAMIC too) by its DT_SONAME. */
int record_is_static_elf(int fd)
{
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
		return 0;
	int shared_object = 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return 0;
		if (ph.p_type == PT_INTERP)
			return 0;
		if (ph.p_type == PT_DYNAMIC && eh.e_type == ET_DYN)
			shared_object = has_soname(fd, &ph);
	}
	return !shared_object && (eh.e_type == ET_EXEC || eh.e_type == ET_DYN);
}

/* No note from any process: nothing instrumented ran to the end. The
 * command's own file may say why. */
static void explain_from_command(const char *cmd)
{
	char path[PATH_MAX];
	struct stat st;
	int fd = -1;
	if (sf_path_lookup(cmd, path, sizeof(path)) == 0 && stat(path, &st) == 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "sftrace: no log written: %s ran no XRay-instrumented code\n", cmd);
		return;
	}
	struct xray_section sec;
	int sleds = xray_find_section(fd, &sec) == 1;
	close(fd);
	if (st.st_mode & (S_ISUID | S_ISGID))
		fprintf(stderr,
			"sftrace: no log written: %s is a set%s program: the loader ignores LD_PRELOAD for it and "
			"sftrace never traces it (run a copy without the set%s bit)\n",
			path, st.st_mode & S_ISUID ? "uid" : "gid", st.st_mode & S_ISUID ? "uid" : "gid");
	else if (sleds)
		fprintf(stderr,
			"sftrace: no log written: %s has XRay sleds, but none of its instrumented functions ran, or it "
			"ended without running exit handlers (_exit, exec, a signal) before its first event\n",
			cmd);
	else
		fprintf(stderr,
			"sftrace: no log written: %s ran no XRay-instrumented code (no object it loaded has sleds: build "
			"with clang -fxray-instrument or rustc -Zinstrument-xray=always)\n",
			cmd);
}

static int same_object(const struct ff_object_info *f, const struct noted_object *o)
{
	if (strcmp(f->build_id, "-") && strcmp(o->build_id, "-"))
		return !strcmp(f->build_id, o->build_id);
	return !strcmp(f->path, o->path);
}

/* With -f: whether the filter names any object the program loaded. */
static int explain_filter(const struct record_why *w, const struct notes *n)
{
	struct ff_info info;
	if (!w->filter || ff_info_read(w->filter, &info) < 0)
		return 0;
	int named = 0;
	for (size_t i = 0; i < info.nobjs && !named; i++)
		for (size_t j = 0; j < n->nobjs && !named; j++)
			named = same_object(&info.objs[i], &n->objs[j]);
	if (!named) {
		fprintf(stderr, "sftrace: no log written: the filter %s names none of the instrumented objects the "
				"program loaded\n",
			w->filter_shown);
		for (size_t i = 0; i < info.nobjs; i++)
			fprintf(stderr, "  the filter names:     %s (build-id %s)\n", sf_esc(info.objs[i].path),
				sf_esc(info.objs[i].build_id));
		for (size_t j = 0; j < n->nobjs; j++)
			fprintf(stderr, "  the program loaded:   %s (build-id %s)\n", sf_esc(n->objs[j].path),
				sf_esc(n->objs[j].build_id));
		fprintf(stderr, "  make a filter for them: sftrace filter -p %s -r REGEX -o FILTER\n", sf_esc(n->objs[0].path));
	}
	ff_info_free(&info);
	return !named;
}

void record_explain_no_log(const struct record_why *w)
{
	struct notes n = {0};
	foreach_note_file(w->notes_dir, read_note_file, &n);
	if (n.nmessages) {
		fprintf(stderr, "sftrace: no log written; the runtime said:\n");
		for (size_t i = 0; i < n.nmessages; i++)
			fprintf(stderr, "  %s\n", sf_esc(n.messages[i]));
	} else if (n.nobjs && explain_filter(w, &n)) {
		/* said */
	} else if (n.nobjs) {
		unsigned long patched = 0;
		for (size_t i = 0; i < n.nobjs; i++)
			patched += n.objs[i].patched;
		if (!patched && (w->filter || w->filter_regex))
			fprintf(stderr, "sftrace: no log written: %s selects no function of the instrumented objects "
					"the program loaded:\n",
				w->filter_regex ? "--filter-regex" : "the filter");
		else if (!patched)
			fprintf(stderr, "sftrace: no log written: no sled could be patched in:\n");
		else
			fprintf(stderr, "sftrace: no log written: sleds were patched, but none of the selected "
					"functions ran:\n");
		for (size_t i = 0; i < n.nobjs; i++)
			fprintf(stderr, "  %s: %lu of %lu sleds patched\n", sf_esc(n.objs[i].path), n.objs[i].patched,
				n.objs[i].sleds);
	} else {
		explain_from_command(w->cmd);
	}
	free_notes(&n);
}
