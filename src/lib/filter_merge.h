/* Reading and merging filter files on the CLI side: `record -f` takes
 * several files or a directory of them (the per-object filters that
 * `record --filter-regex` saved next to its log) and gives the runtime one. */
#ifndef SFTRACE_LIB_FILTER_MERGE_H
#define SFTRACE_LIB_FILTER_MERGE_H

#include <stddef.h>

struct ff_object_info {
	char *build_id; /* hex, or "-" */
	char *path;
	size_t nfuncs;
};

struct ff_info {
	char mode[16], unlisted[16];
	struct ff_object_info *objs;
	size_t nobjs;
};

/* The whole file, NUL-terminated (malloc'd), or NULL after a message
 * "filter PATH: ...". */
char *ff_read_text(const char *path, size_t *len);

/* Parses one filter file; -1 after a message naming it. */
int ff_info_read(const char *path, struct ff_info *info);
void ff_info_free(struct ff_info *info);

/* The filter files an argument names: itself, or a directory's *.filter
 * files in name order (malloc'd paths appended to *files). -1 after a
 * message (unreadable, or a directory without filters). */
int ff_expand_input(const char *arg, char ***files, size_t *nfiles);

/* Writes the objects of every file into one filter at out. The files must
 * agree on mode and unlisted. beside: out is a name the command chose
 * beside its output (sf_outfile_open_beside: nothing there followed).
 * -1 after a message. */
int ff_merge(char *const *files, size_t nfiles, const char *out, int beside);

#endif
