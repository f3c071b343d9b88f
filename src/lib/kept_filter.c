/* The recording's kept filter: see kept_filter.h. */
#include "lib/kept_filter.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/filter_merge.h"
#include "lib/util.h"

#define KF_SUFFIX ".recorded.filter"

int kf_path_for_output(const char *output, char *out, size_t cap)
{
	const char *slash = strrchr(output, '/');
	const char *base = slash ? slash + 1 : output;
	const char *dot = strrchr(base, '.');
	size_t stem = dot && dot != base ? (size_t)(dot - output) : strlen(output);
	int n = snprintf(out, cap, "%.*s%s", (int)stem, output, KF_SUFFIX);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int kf_keep(const char *output, char *const *files, size_t nfiles)
{
	char path[4096];
	if (kf_path_for_output(output, path, sizeof(path)) < 0) {
		sf_error("%s: path too long", output);
		return -1;
	}
	return ff_merge(files, nfiles, path, 1); /* a name of record's: no link there followed */
}

void kf_drop(const char *output)
{
	char path[4096];
	struct stat st;
	/* only a file of this user's (a sticky shared directory: not another's) */
	if (kf_path_for_output(output, path, sizeof(path)) == 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && unlink(path) < 0)
		sf_warn("%s: cannot remove the filter an earlier run kept: %s", path, strerror(errno));
}

int kf_find_for_log(const char *log_path, char *out, size_t cap)
{
	const char *slash = strrchr(log_path, '/');
	const char *base = slash ? slash + 1 : log_path;
	/* The whole name first: `-o DIR/out` has no extension. */
	for (const char *end = log_path + strlen(log_path); end > base; end--) {
		if (*end && *end != '.')
			continue;
		int n = snprintf(out, cap, "%.*s%s", (int)(end - log_path), log_path, KF_SUFFIX);
		struct stat st;
		/* lstat: record writes a regular file there, never a link */
		if (n >= 0 && (size_t)n < cap && lstat(out, &st) == 0 && S_ISREG(st.st_mode))
			return 0;
	}
	return -1;
}
