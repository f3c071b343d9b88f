/* Atomic output files: rename on commit, nothing left on abort or error,
 * gzip that zlib and gzip(1) read back, symlinks replaced not followed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "lib/outfile.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_outfile.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	umask(022);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'; rm -rf '%s'", dir, dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *in_dir(const char *name)
{
	static char bufs[4][512];
	static int i;
	char *p = bufs[i++ % 4];
	snprintf(p, 512, "%s/%s", dir, name);
	return p;
}

static int dir_entries(void)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	*len = n;
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Compressible but not trivial: text lines with counters. */
static uint8_t *make_data(size_t len)
{
	uint8_t *d = malloc(len);
	size_t off = 0;
	uint64_t x = 12345;
	while (off < len) {
		char line[64];
		x = x * 6364136223846793005ull + 1;
		int n = snprintf(line, sizeof(line), "event %zu func %u\n", off, (unsigned)(x >> 52));
		size_t k = (size_t)n < len - off ? (size_t)n : len - off;
		memcpy(d + off, line, k);
		off += k;
	}
	return d;
}

/* Writes `data` in a mix of small and large pieces. */
static void write_mixed(struct sf_outfile *of, const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {1, 7, 100, 4096, 3 << 20, 65536, 13, 700000};
	size_t off = 0;
	for (int i = 0; off < len; i++) {
		size_t n = sizes[i % 8] < len - off ? sizes[i % 8] : len - off;
		assert_int_equal(sf_outfile_write(of, data + off, n), 0);
		off += n;
	}
}

static void test_commit_renames(void **state)
{
	char err[512];
	const char *path = in_dir("out.bin");
	size_t len = 5u << 20;
	uint8_t *data = make_data(len);
	struct sf_outfile *of = sf_outfile_open(path, -1, err, sizeof(err));
	assert_non_null(of);
	write_mixed(of, data, len);
	/* before commit: only the hidden temporary file exists */
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(dir_entries(), 1);
	assert_int_equal(sf_outfile_commit(of), 0);
	assert_int_equal(dir_entries(), 1);
	size_t got_len;
	uint8_t *got = read_all(path, &got_len);
	assert_int_equal(got_len, len);
	assert_memory_equal(got, data, len);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	free(got);
	free(data);
}

static void test_commit_replaces_existing(void **state)
{
	char err[512];
	const char *path = in_dir("existing.txt");
	write_file(path, "old contents that are longer than the new ones\n");
	struct sf_outfile *of = sf_outfile_open(path, 0, err, sizeof(err));
	assert_non_null(of);
	assert_int_equal(sf_outfile_write_cb(of, "new\n", 4), 0);
	assert_int_equal(sf_outfile_bytes(of), 0); /* still buffered */
	assert_int_equal(sf_outfile_commit(of), 0);
	size_t n;
	uint8_t *got = read_all(path, &n);
	assert_int_equal(n, 4);
	assert_memory_equal(got, "new\n", 4);
	free(got);
	assert_int_equal(dir_entries(), 1);
}

static void test_abort_leaves_nothing(void **state)
{
	char err[512];
	struct sf_outfile *of = sf_outfile_open(in_dir("never.pb.gz"), -1, err, sizeof(err));
	assert_non_null(of);
	uint8_t *data = make_data(3u << 20); /* several gzip blocks: workers run */
	write_mixed(of, data, 3u << 20);
	free(data);
	sf_outfile_abort(of);
	assert_int_equal(dir_entries(), 0);

	/* an existing target is untouched */
	const char *keep = in_dir("keep.txt");
	write_file(keep, "keep me\n");
	of = sf_outfile_open(keep, 0, err, sizeof(err));
	assert_non_null(of);
	sf_outfile_write(of, "x", 1);
	sf_outfile_abort(of);
	size_t n;
	uint8_t *got = read_all(keep, &n);
	assert_int_equal(n, 8);
	assert_memory_equal(got, "keep me\n", 8);
	free(got);
	assert_int_equal(dir_entries(), 1);
	sf_outfile_abort(NULL);
}

/* Decompresses with zlib's gzread. */
static uint8_t *gunzip(const char *path, size_t *len)
{
	gzFile g = gzopen(path, "rb");
	assert_non_null(g);
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	int got;
	while ((got = gzread(g, buf + n, (unsigned)(cap - n))) > 0) {
		n += (size_t)got;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	assert_true(got == 0);
	assert_int_equal(gzclose(g), Z_OK);
	*len = n;
	return buf;
}

static void check_gzip(const char *name, int gzip_arg, size_t len)
{
	char err[512], cmd[1200];
	const char *path = in_dir(name);
	uint8_t *data = make_data(len);
	struct sf_outfile *of = sf_outfile_open(path, gzip_arg, err, sizeof(err));
	assert_non_null(of);
	write_mixed(of, data, len);
	unsigned long long before = sf_outfile_bytes(of);
	assert_int_equal(sf_outfile_commit(of), 0);
	size_t raw_len;
	uint8_t *raw = read_all(path, &raw_len);
	assert_true(raw_len >= 18);
	assert_int_equal(raw[0], 0x1f); /* gzip magic */
	assert_int_equal(raw[1], 0x8b);
	assert_true(raw_len < len / 2 + 100); /* it did compress */
	assert_true(before <= raw_len);
	free(raw);
	size_t n;
	uint8_t *got = gunzip(path, &n);
	assert_int_equal(n, len);
	assert_memory_equal(got, data, len);
	free(got);
	/* gzip(1) checks the CRC and the length in the trailer */
	snprintf(cmd, sizeof(cmd), "gzip -dc '%s' > '%s.plain' && gzip -t '%s'", path, path, path);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s.plain", path);
	got = read_all(cmd, &n);
	assert_int_equal(n, len);
	assert_memory_equal(got, data, len);
	free(got);
	unlink(cmd);
	free(data);
}

static void test_gzip_small(void **state)
{
	check_gzip("small.pb.gz", -1, 1000);   /* by extension, one inline block */
	check_gzip("forced.bin", 1, 50000);    /* forced without the extension */
}

static void test_gzip_empty(void **state)
{
	char err[512];
	const char *path = in_dir("empty.gz");
	struct sf_outfile *of = sf_outfile_open(path, -1, err, sizeof(err));
	assert_non_null(of);
	assert_int_equal(sf_outfile_commit(of), 0);
	size_t n;
	uint8_t *got = gunzip(path, &n);
	assert_int_equal(n, 0);
	free(got);
}

/* Many 1 MiB blocks compressed by worker threads, joined into one stream;
 * an exact multiple of the block size ends with an empty final block. */
static void test_gzip_large(void **state)
{
	check_gzip("large.pb.gz", -1, (9u << 20) + 12345);
	check_gzip("exact.pb.gz", -1, 4u << 20);
}

static void test_no_gzip_for_gz_name(void **state)
{
	char err[512];
	const char *path = in_dir("plain.gz");
	struct sf_outfile *of = sf_outfile_open(path, 0, err, sizeof(err));
	assert_non_null(of);
	sf_outfile_write(of, "plain", 5);
	assert_int_equal(sf_outfile_commit(of), 0);
	size_t n;
	uint8_t *got = read_all(path, &n);
	assert_int_equal(n, 5);
	assert_memory_equal(got, "plain", 5);
	free(got);
}

static void assert_err(const char *err, const char *path, int err_no)
{
	char want[1024];
	snprintf(want, sizeof(want), "cannot create %s: %s", path, strerror(err_no));
	assert_string_equal(err, want);
}

static void test_unwritable(void **state)
{
	char err[512] = "";
	/* missing directory */
	const char *missing = in_dir("nodir/out.pb");
	assert_null(sf_outfile_open(missing, -1, err, sizeof(err)));
	assert_err(err, missing, ENOENT);
	assert_int_equal(sf_outfile_check(missing, err, sizeof(err)), -1);
	assert_err(err, missing, ENOENT);
	/* a file where a directory should be */
	write_file(in_dir("file"), "x");
	const char *notdir = in_dir("file/out.pb");
	assert_null(sf_outfile_open(notdir, -1, err, sizeof(err)));
	assert_err(err, notdir, ENOTDIR);
	/* the target is a directory */
	const char *isdir = in_dir("sub");
	assert_int_equal(mkdir(isdir, 0755), 0);
	assert_int_equal(sf_outfile_check(isdir, err, sizeof(err)), -1);
	assert_err(err, isdir, EISDIR);
	const char *slash = in_dir("sub/");
	assert_null(sf_outfile_open(slash, -1, err, sizeof(err)));
	assert_err(err, slash, EISDIR);
	assert_int_equal(rmdir(isdir), 0); /* nothing was created inside */
	/* a directory without write permission; root ignores modes, so use a
	 * directory of a filesystem that refuses new files even to root */
	const char *ro;
	int want;
	if (geteuid() != 0) {
		assert_int_equal(chmod(dir, 0555), 0);
		ro = in_dir("out.pb");
		want = EACCES;
	} else {
		ro = "/sys/sftrace-test-out.pb";
		int fd = open(ro, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd >= 0) {
			close(fd);
			unlink(ro);
			skip();
		}
		want = errno;
	}
	assert_null(sf_outfile_open(ro, -1, err, sizeof(err)));
	assert_err(err, ro, want);
	assert_int_equal(sf_outfile_check(ro, err, sizeof(err)), -1);
	assert_err(err, ro, want);
	chmod(dir, 0700);
	/* and a writable one passes, leaving nothing behind */
	int before = dir_entries();
	assert_int_equal(sf_outfile_check(in_dir("ok.pb"), err, sizeof(err)), 0);
	assert_int_equal(dir_entries(), before);
}

/* An output that is a symlink is written through it, as the shell's `>`
 * does: the link stays and its target gets the content, replaced
 * atomically (the temporary beside the target). */
static void test_symlink_followed(void **state)
{
	(void)state;
	char err[512];
	const char *victim = in_dir("victim.txt");
	const char *link = in_dir("link.txt");
	write_file(victim, "victim\n");
	assert_int_equal(symlink(victim, link), 0);
	struct sf_outfile *of = sf_outfile_open(link, 0, err, sizeof(err));
	assert_non_null(of);
	sf_outfile_write(of, "new\n", 4);
	assert_int_equal(sf_outfile_commit(of), 0);
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	size_t n;
	uint8_t *got = read_all(victim, &n);
	assert_int_equal(n, 4);
	assert_memory_equal(got, "new\n", 4);
	free(got);
}

/* A write error (file size limit) fails the commit with a message naming
 * the target, and leaves neither the target nor the temporary file. */
static void check_write_error(const char *name, int gzip)
{
	const char *path = in_dir(name);
	char err[512], log[600];
	snprintf(log, sizeof(log), "/tmp/test_outfile.%d.stderr", (int)getpid());
	struct sf_outfile *of = sf_outfile_open(path, gzip, err, sizeof(err));
	assert_non_null(of);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 100000;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	size_t len = 4u << 20;
	uint8_t *data = malloc(len);
	for (size_t i = 0; i < len; i++) /* incompressible */
		data[i] = (uint8_t)((i * 2654435761u) >> 13);
	int rc = 0;
	for (size_t off = 0; off < len && rc == 0; off += 65536)
		rc = sf_outfile_write(of, data + off, 65536);
	free(data);
	fflush(stderr);
	int saved = dup(2);
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 2);
	close(fd);
	int crc = sf_outfile_commit(of);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(crc, -1);
	size_t n;
	char *msg = (char *)read_all(log, &n);
	unlink(log);
	msg = realloc(msg, n + 1);
	msg[n] = '\0';
	char want[1024];
	snprintf(want, sizeof(want), "sftrace: error: cannot write %s: %s\n", path, strerror(EFBIG));
	assert_string_equal(msg, want);
	free(msg);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(dir_entries(), 0);
}

static void test_write_error(void **state)
{
	check_write_error("big.bin", 0);
	check_write_error("big.bin.gz", -1);
}

/* Outputs get the bits every input log has, less the umask; the temporary
 * file has them already (no window in which others may open it). Runs last:
 * the limit lasts for the process, as in the CLI. */
static void test_mode_follows_the_logs(void **state)
{
	(void)state;
	char err[512];
	const char *path = in_dir("private.pb");
	sf_outfile_limit_mode(0640 | S_IXUSR);
	sf_outfile_limit_mode(0604);
	mode_t old = umask(0);
	struct sf_outfile *of = sf_outfile_open(path, -1, err, sizeof(err));
	umask(old);
	assert_non_null(of);
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d)))
		if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			assert_int_equal(fstatat(dirfd(d), e->d_name, &st, 0), 0);
			assert_int_equal(st.st_mode & 07777, 0600); /* the temporary file */
		}
	closedir(d);
	assert_int_equal(sf_outfile_write(of, "x", 1), 0);
	assert_int_equal(sf_outfile_commit(of), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* A later, wider log widens nothing; the umask still applies. */
	sf_outfile_limit_mode(0666);
	old = umask(0200);
	of = sf_outfile_open(in_dir("umask.pb"), 0, err, sizeof(err));
	umask(old);
	assert_non_null(of);
	assert_int_equal(sf_outfile_commit(of), 0);
	assert_int_equal(stat(in_dir("umask.pb"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit_renames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_replaces_existing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip_small, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_gzip_for_gz_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_follows_the_logs, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
