/* The --auto-args cache (args_cache.h). */
#include "cli/args_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "format/sf_env.h"
#include "lib/elf_buildid.h"
#include "lib/util.h"

/* 2: the last line carries the CRC-32 of the text before it, so that a
 * changed byte (a disk or memory error; same size, still well formed: a
 * flipped digit read as another format, skeptic29n) is a miss, not a
 * wrong answer. */
#define AC_MAGIC "sftrace-args-cache 2"
#define AC_END_LEN (sizeof("end 01234567\n") - 1)
#define AC_FILE_MAX (16u << 20)

/* This sftrace's build-id, hex ("" if none): the DWARF reading changes
 * from one build to the next, so an answer is only this build's. */
static const char *self_id(void)
{
	static char hex[2 * SF_BUILD_ID_MAX + 1];
	static int done;
	if (!done) {
		uint8_t id[SF_BUILD_ID_MAX];
		char err[256];
		int n = sf_elf_build_id_path("/proc/self/exe", id, sizeof(id), err, sizeof(err));
		if (n > 0)
			sf_build_id_hex(id, (size_t)n, hex, sizeof(hex));
		done = 1;
	}
	return hex;
}

int ac_key(const char *path, const char *bid, char *key, size_t cap)
{
	const char *off = getenv(SF_ENV(ARGS_CACHE));
	struct stat st;
	if ((off && !strcmp(off, "0")) || !bid || !bid[0] || bid[strspn(bid, "0123456789abcdef")] ||
	    !self_id()[0] || stat(path, &st) != 0)
		return -1;
	int n = snprintf(key, cap, "sftrace %s object %s %ju %ju %jd %jd.%09ld %jd.%09ld", self_id(), bid,
			 (uintmax_t)st.st_dev, (uintmax_t)st.st_ino, (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	if (n <= 0 || (size_t)n >= cap)
		return -1;
	/* -gsplit-dwarf: the answers come from the .dwo files too, so a
	 * changed, added or removed one is another key. */
	uint64_t digest;
	unsigned dwo = da_split_digest(path, &digest);
	if (dwo) {
		int m = snprintf(key + n, cap - (size_t)n, " dwo %u %016" PRIx64, dwo, digest);
		if (m <= 0 || (size_t)m >= cap - (size_t)n)
			return -1;
	}
	return 0;
}

/* The user's own cache directory for sftrace, opened (O_NOFOLLOW): made
 * 0700 if missing; -1 if it is not a directory of the user's that no one
 * else may write. */
static int cache_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[4096];
	if (xdg && xdg[0] == '/') {
		if ((size_t)snprintf(dir, sizeof(dir), "%s", xdg) >= sizeof(dir))
			return -1;
	} else if (home && home[0] == '/') {
		if ((size_t)snprintf(dir, sizeof(dir), "%s/.cache", home) >= sizeof(dir))
			return -1;
	} else {
		return -1;
	}
	mkdir(dir, 0700); /* the usual place; its owner is checked below, for sftrace's */
	size_t len = strlen(dir);
	if (len + sizeof("/sftrace") > sizeof(dir))
		return -1;
	memcpy(dir + len, "/sftrace", sizeof("/sftrace"));
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -1;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The file name of a key: FNV-1a of it. */
static void file_name(const char *key, char *out, size_t cap)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	snprintf(out, cap, "args-%016" PRIx64, h);
}

struct ac_func *ac_add(struct ac_set *s, uint64_t vaddr)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	struct ac_func *f = &s->v[s->n++];
	memset(f, 0, sizeof(*f));
	f->vaddr = vaddr;
	return f;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One function's line: VADDR N SSFFE... (hex: slot, format, on_exit).
 * Each item exactly as ac_store writes it, a space and 5 hex digits, read
 * by hand: sscanf was 9.4M of the 27.8M instructions of record's own
 * process on a cache hit (SQLite's driver, --auto-args, callgrind). */
static int parse_func(char *line, struct ac_set *s)
{
	char *end;
	errno = 0;
	uint64_t vaddr = strtoull(line, &end, 16);
	if (errno || end == line || *end != ' ')
		return -1;
	unsigned long n = strtoul(end + 1, &end, 10);
	if (!n || n > 2 * SF_ARG_MAX_ITEMS)
		return -1;
	struct ac_func *f = ac_add(s, vaddr);
	for (unsigned k = 0; k < n; k++) {
		int d[5];
		if (end[0] != ' ')
			return -1;
		for (int j = 0; j < 5; j++) /* stops at the string's NUL: not a digit */
			if ((d[j] = hex_digit(end[1 + j])) < 0)
				return -1;
		unsigned slot = (unsigned)(d[0] << 4 | d[1]), fmt = (unsigned)(d[2] << 4 | d[3]), on_exit = (unsigned)d[4];
		if (on_exit > 1 || sf_arg_type((uint8_t)fmt) >= SF_AT_LIMIT)
			return -1;
		f->it[k] = (struct da_item){(uint8_t)slot, (uint8_t)fmt, (uint8_t)on_exit};
		end += 6;
	}
	f->n = (unsigned)n;
	return *end ? -1 : 0;
}

/* The file's text: its key line must be key's, every line well formed,
 * the last one "end" (a file cut short is a miss). */
static int parse(char *text, const char *key, struct ac_set *s)
{
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	if (!line || strcmp(line, AC_MAGIC) || !(line = strtok_r(NULL, "\n", &save)) || strncmp(line, "key ", 4) ||
	    strcmp(line + 4, key))
		return -1;
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (!strcmp(line, "end"))
			return strtok_r(NULL, "\n", &save) ? -1 : 0;
		if (parse_func(line, s) < 0)
			return -1;
	}
	return -1;
}

/* 1 if text (n bytes) ends with "end CRC\n" whose CRC-32 is that of the
 * bytes before it; the line is then cut to "end\n" for parse. */
static int checked(char *text, size_t n)
{
	if (n < AC_END_LEN)
		return 0;
	char *end = text + n - AC_END_LEN;
	if (strncmp(end, "end ", 4) || text[n - 1] != '\n' || (end > text && end[-1] != '\n'))
		return 0;
	char *stop;
	errno = 0;
	unsigned long want = strtoul(end + 4, &stop, 16);
	if (errno || stop != text + n - 1 || stop - (end + 4) != 8)
		return 0;
	if (crc32(0L, (const Bytef *)text, (uInt)(end - text)) != want)
		return 0;
	end[3] = '\n';
	end[4] = 0;
	return 1;
}

int ac_load(const char *key, struct ac_set *s)
{
	int dir = cache_dir();
	if (dir < 0)
		return 0;
	char name[64];
	file_name(key, name, sizeof(name));
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dir);
	struct stat st;
	if (fd < 0)
		return 0;
	char *text = NULL;
	int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) &&
		 st.st_size > 0 && (uint64_t)st.st_size <= AC_FILE_MAX;
	if (ok) {
		text = xmalloc((size_t)st.st_size + 1);
		ok = pread(fd, text, (size_t)st.st_size, 0) == st.st_size;
	}
	close(fd);
	if (ok) {
		text[st.st_size] = 0;
		ok = strlen(text) == (size_t)st.st_size && checked(text, (size_t)st.st_size) && parse(text, key, s) == 0;
	}
	free(text);
	if (!ok) {
		free(s->v);
		*s = (struct ac_set){0};
	}
	return ok;
}

void ac_store(const char *key, const struct ac_set *s)
{
	int dir = cache_dir();
	if (dir < 0)
		return;
	char name[64], tmp[96];
	file_name(key, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", name, (long)getpid());
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m) {
		close(dir);
		return;
	}
	fprintf(m, AC_MAGIC "\nkey %s\n", key);
	for (size_t i = 0; i < s->n; i++) {
		fprintf(m, "%" PRIx64 " %u", s->v[i].vaddr, s->v[i].n);
		for (unsigned k = 0; k < s->v[i].n; k++)
			fprintf(m, " %02x%02x%x", s->v[i].it[k].slot, s->v[i].it[k].fmt, s->v[i].it[k].on_exit);
		fputc('\n', m);
	}
	if (fclose(m) != 0) {
		free(text);
		close(dir);
		return;
	}
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		if (fd >= 0) {
			close(fd);
			unlinkat(dir, tmp, 0);
		}
		free(text);
		close(dir);
		return;
	}
	fwrite(text, 1, len, f);
	fprintf(f, "end %08lx\n", (unsigned long)crc32(0L, (const Bytef *)text, (uInt)len));
	free(text);
	if (fclose(f) != 0 || renameat(dir, tmp, dir, name) != 0)
		unlinkat(dir, tmp, 0);
	close(dir);
}
