#include "cli/solib.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sf_solib_install_dir(char *out, size_t cap)
{
	const char *xdg = getenv("XDG_DATA_HOME");
	if (xdg && xdg[0] == '/') {
		snprintf(out, cap, "%s/sftrace", xdg);
		return 0;
	}
	const char *home = getenv("HOME");
	if (!home || !home[0])
		return -1;
	snprintf(out, cap, "%s/.local/share/sftrace", home);
	return 0;
}

int sf_find_solib(char *out, size_t cap, char *err, size_t errlen)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char cand[4][PATH_MAX + 64];
	int nc = 0;
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		*slash = 0;
		snprintf(cand[nc++], sizeof(cand[0]), "%s/libsftrace.so", exe);
		snprintf(cand[nc++], sizeof(cand[0]), "%s/../lib/sftrace/libsftrace.so", exe);
		snprintf(cand[nc++], sizeof(cand[0]), "%s/../lib/libsftrace.so", exe);
	}
	char dir[PATH_MAX];
	if (sf_solib_install_dir(dir, sizeof(dir)) == 0)
		snprintf(cand[nc++], sizeof(cand[0]), "%s/libsftrace.so", dir);
	for (int i = 0; i < nc; i++) {
		char real[PATH_MAX];
		if (access(cand[i], R_OK) == 0 && realpath(cand[i], real)) {
			snprintf(out, cap, "%s", real);
			return 0;
		}
	}
	size_t pos = (size_t)snprintf(err, errlen, "runtime library libsftrace.so not found; looked in:");
	for (int i = 0; i < nc && pos < errlen; i++)
		pos += (size_t)snprintf(err + pos, errlen - pos, " %s", cand[i]);
	return -1;
}
