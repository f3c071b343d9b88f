/* record's private directory by descriptor (record_notes_dir.h). */
#include "cli/record_notes_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int held = -1;
static char held_path[PATH_MAX];

int notes_dir_hold(const char *path, dev_t dev, ino_t ino)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_dev != dev || st.st_ino != ino ||
	    (size_t)snprintf(held_path, sizeof(held_path), "%s", path) >= sizeof(held_path)) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	if (held >= 0)
		close(held);
	held = fd;
	return 0;
}

int notes_dir_fd(void)
{
	return held;
}

int notes_dir_open(const char *path, int flags, mode_t mode)
{
	size_t n = strlen(held_path);
	if (held >= 0 && n && !strncmp(path, held_path, n) && path[n] == '/' && path[n + 1] &&
	    !strchr(path + n + 1, '/'))
		return openat(held, path + n + 1, flags, mode);
	return open(path, flags, mode);
}
