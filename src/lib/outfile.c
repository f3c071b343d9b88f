#include "lib/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef SF_NO_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif
#include <zlib.h>

#include "lib/util.h"

/* Plain files: small writes are gathered into this much before write(2).
 * gzip: the input is cut into blocks of this size, compressed in parallel. */
#define OF_BLOCK (1u << 20)

/* Deflate comes from ISA-L's igzip, not zlib: on a 303 MB Perfetto trace
 * here igzip level 1 compresses at 820 MB/s to 17.2% of the input, against
 * 140 MB/s and 17.9% for zlib level 1 (`igzip -1 -T 1` vs `gzip -1`). Level
 * 2 gains under 0.1% for 5% more time; level 3 is three times slower. */
#define GZ_LEVEL 1
#ifndef SF_NO_ISAL
#define GZ_LEVEL_BUF ISAL_DEF_LVL1_DEFAULT
#endif
/* Each block is compressed with the previous block's last 32 KiB (deflate's
 * whole window) as a preset dictionary, so cutting blocks costs almost no
 * compression ratio. */
#define GZ_DICT (32u << 10)
#define GZ_MAX_WORKERS 4
#define GZ_SLOTS 8 /* blocks in flight: filling, queued, compressing, written */

/* ---- parallel gzip ----
 *
 * Like pigz: every block becomes a run of raw deflate blocks that ends on a
 * byte boundary (a sync flush), the last one ends the stream, so the blocks
 * concatenate into ONE deflate stream. We add the gzip header and the
 * trailer (CRC-32 combined from the per-block CRCs, and the length), which
 * makes a single-member .gz any reader accepts.
 *
 * The writing thread fills a slot, queues it, and writes finished slots in
 * order; worker threads compress. Workers start only when the output
 * exceeds one block: small files are compressed inline. */

enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_BUSY, SLOT_DONE };

struct gz_slot {
	uint8_t *in;
	size_t in_len;
	uint8_t *dict; /* tail of the previous block */
	size_t dict_len;
	uint8_t *out;
	size_t out_len, out_cap;
	uint32_t crc;
	int final;
	int error;
	enum slot_state state; /* under gz.mu */
};

struct gz {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a block was queued, or stop */
	pthread_cond_t done; /* a block was compressed */
	struct gz_slot slots[GZ_SLOTS];
	uint64_t submitted; /* block n lives in slots[n % GZ_SLOTS] */
	uint64_t taken;     /* blocks claimed by workers (under mu) */
	uint64_t written;
	int stop;
	int nworkers;
	pthread_t workers[GZ_MAX_WORKERS];
	struct gz_stream *inline_zs; /* used when there are no workers */
	uint32_t crc;
	uint32_t isize; /* input length mod 2^32, as gzip stores it */
};

struct sf_outfile {
	int fd;
	int failed;
	int err_no;
	const char *err_what; /* "cannot write" ... for the message */
	char *path;
	char *dest; /* path with its symlinks resolved: what the temporary replaces */
	char *tmp;
	unsigned long long bytes;
	uint8_t *buf; /* plain: staging; gzip: the input of the filling slot */
	size_t len;
	struct gz *gz; /* NULL when not compressing */
};

/* ---- errors and raw output ---- */

static void fail(struct sf_outfile *of, const char *what, int err_no)
{
	if (!of->failed) {
		of->failed = 1;
		of->err_what = what;
		of->err_no = err_no;
	}
}

static int write_all(struct sf_outfile *of, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(of->fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail(of, "cannot write", errno);
			return -1;
		}
		p += n;
		len -= (size_t)n;
		of->bytes += (size_t)n;
	}
	return 0;
}

/* ---- gzip: compression of one block (any thread) ---- */

#ifndef SF_NO_ISAL
/* One compressor: ISA-L's stream state plus the working memory its level
 * needs. */
struct gz_stream {
	struct isal_zstream zs;
	uint8_t level_buf[GZ_LEVEL_BUF];
};

static struct gz_stream *gz_stream_new(void)
{
	return xmalloc(sizeof(struct gz_stream));
}

/* Raw deflate (gzip_flag 0): we write the gzip framing ourselves. */
static void compress_slot(struct gz_slot *s, struct gz_stream *gs)
{
	struct isal_zstream *zs = &gs->zs;
	isal_deflate_init(zs);
	zs->level = GZ_LEVEL;
	zs->level_buf = gs->level_buf;
	zs->level_buf_size = sizeof(gs->level_buf);
	zs->flush = s->final ? NO_FLUSH : SYNC_FLUSH;
	zs->end_of_stream = (uint16_t)(s->final != 0);
	s->out_len = 0;
	s->crc = crc32_gzip_refl(0, s->in, s->in_len);
	if (s->dict_len && isal_deflate_set_dict(zs, s->dict, (uint32_t)s->dict_len) != COMP_OK) {
		s->error = 1;
		return;
	}
	zs->next_in = s->in;
	zs->avail_in = (uint32_t)s->in_len;
	for (;;) {
		if (s->out_cap - s->out_len < 4096) {
			s->out_cap = s->out_cap * 2 + (s->in_len >> 2) + 4096;
			s->out = xrealloc(s->out, s->out_cap);
		}
		zs->next_out = s->out + s->out_len;
		zs->avail_out = (uint32_t)(s->out_cap - s->out_len);
		if (isal_deflate(zs) != COMP_OK) {
			s->error = 1;
			return;
		}
		s->out_len = s->out_cap - zs->avail_out;
		/* Done: the stream ended, or (sync flush) every input byte
		 * went out and the block is closed on a byte boundary. */
		if (s->final ? zs->internal_state.state == ZSTATE_END
			     : zs->avail_in == 0 && zs->internal_state.state == ZSTATE_NEW_HDR)
			return;
	}
}
#else
/* Built without ISA-L (SF_NO_ISAL: cross builds, where Debian's libisal-dev
 * cannot be installed for two architectures at once): zlib's deflate, the
 * same raw stream, slower. */
struct gz_stream {
	z_stream zs;
};

static struct gz_stream *gz_stream_new(void)
{
	return xcalloc(1, sizeof(struct gz_stream));
}

static void compress_slot(struct gz_slot *s, struct gz_stream *gs)
{
	z_stream *zs = &gs->zs;
	memset(zs, 0, sizeof(*zs));
	s->out_len = 0;
	s->crc = (uint32_t)crc32(0, s->in, (uInt)s->in_len);
	if (deflateInit2(zs, GZ_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		s->error = 1;
		return;
	}
	if (s->dict_len && deflateSetDictionary(zs, s->dict, (uInt)s->dict_len) != Z_OK)
		s->error = 1;
	zs->next_in = s->in;
	zs->avail_in = (uInt)s->in_len;
	while (!s->error) {
		if (s->out_cap - s->out_len < 4096) {
			s->out_cap = s->out_cap * 2 + (s->in_len >> 2) + 4096;
			s->out = xrealloc(s->out, s->out_cap);
		}
		zs->next_out = s->out + s->out_len;
		zs->avail_out = (uInt)(s->out_cap - s->out_len);
		int r = deflate(zs, s->final ? Z_FINISH : Z_SYNC_FLUSH);
		if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
			s->error = 1;
			break;
		}
		s->out_len = s->out_cap - zs->avail_out;
		if (s->final ? r == Z_STREAM_END : zs->avail_in == 0 && zs->avail_out > 0)
			break;
	}
	deflateEnd(zs);
}
#endif

static void *gz_worker(void *arg)
{
	struct gz *g = arg;
	struct gz_stream *zs = gz_stream_new();
	pthread_mutex_lock(&g->mu);
	for (;;) {
		while (!g->stop && g->taken == g->submitted)
			pthread_cond_wait(&g->work, &g->mu);
		if (g->stop)
			break;
		struct gz_slot *s = &g->slots[g->taken++ % GZ_SLOTS];
		s->state = SLOT_BUSY;
		pthread_mutex_unlock(&g->mu);
		compress_slot(s, zs);
		pthread_mutex_lock(&g->mu);
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&g->done);
	}
	pthread_mutex_unlock(&g->mu);
	free(zs);
	return NULL;
}

/* ---- gzip: the writing thread's side ---- */

static struct gz *gz_new(void)
{
	struct gz *g = xcalloc(1, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->work, NULL);
	pthread_cond_init(&g->done, NULL);
	for (int i = 0; i < GZ_SLOTS; i++)
		g->slots[i].state = SLOT_FREE;
	return g;
}

static void gz_stop_workers(struct gz *g)
{
	pthread_mutex_lock(&g->mu);
	g->stop = 1;
	pthread_cond_broadcast(&g->work);
	pthread_mutex_unlock(&g->mu);
	for (int i = 0; i < g->nworkers; i++)
		pthread_join(g->workers[i], NULL);
	g->nworkers = 0;
}

static void gz_free(struct gz *g)
{
	if (!g)
		return;
	gz_stop_workers(g);
	for (int i = 0; i < GZ_SLOTS; i++) {
		free(g->slots[i].in);
		free(g->slots[i].dict);
		free(g->slots[i].out);
	}
	free(g->inline_zs);
	pthread_cond_destroy(&g->done);
	pthread_cond_destroy(&g->work);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

static void gz_start_workers(struct gz *g)
{
	/* CPUs we may run on (a cpuset or taskset may allow fewer than the
	 * machine has). */
	cpu_set_t set;
	long cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
								 : sysconf(_SC_NPROCESSORS_ONLN);
	int want = cpus > GZ_MAX_WORKERS ? GZ_MAX_WORKERS : (int)cpus;
	if (want < 2)
		return; /* one CPU: threads would only add switching */
	for (int i = 0; i < want; i++) {
		if (pthread_create(&g->workers[i], NULL, gz_worker, g) != 0)
			break; /* run with what we have; zero means inline */
		g->nworkers++;
	}
}

/* Writes block number g->written (waiting for it if `wait`), frees its slot.
 * Returns 1 if a block was written, 0 if none was ready. */
static int gz_write_next(struct sf_outfile *of, int wait)
{
	struct gz *g = of->gz;
	if (g->written == g->submitted)
		return 0;
	struct gz_slot *s = &g->slots[g->written % GZ_SLOTS];
	pthread_mutex_lock(&g->mu);
	while (wait && s->state != SLOT_DONE)
		pthread_cond_wait(&g->done, &g->mu);
	int ready = s->state == SLOT_DONE;
	pthread_mutex_unlock(&g->mu);
	if (!ready)
		return 0;
	if (s->error)
		fail(of, "cannot compress", EIO);
	else if (!of->failed)
		write_all(of, s->out, s->out_len);
	g->crc = (uint32_t)crc32_combine(g->crc, s->crc, (z_off_t)s->in_len);
	g->isize += (uint32_t)s->in_len;
	pthread_mutex_lock(&g->mu);
	s->state = SLOT_FREE;
	pthread_mutex_unlock(&g->mu);
	g->written++;
	return 1;
}

/* Makes slot number g->submitted the filling one: waits for it to be free,
 * allocates its buffers, primes its dictionary from the previous block. */
static void gz_take_slot(struct sf_outfile *of)
{
	struct gz *g = of->gz;
	struct gz_slot *s = &g->slots[g->submitted % GZ_SLOTS];
	while (g->submitted - g->written >= GZ_SLOTS)
		gz_write_next(of, 1);
	if (!s->in) {
		s->in = xmalloc(OF_BLOCK);
		s->dict = xmalloc(GZ_DICT);
	}
	s->dict_len = 0;
	if (g->submitted > 0) {
		/* The previous block's input is intact even if it was
		 * already written: a slot is refilled only GZ_SLOTS blocks
		 * later. */
		struct gz_slot *prev = &g->slots[(g->submitted - 1) % GZ_SLOTS];
		size_t n = prev->in_len < GZ_DICT ? prev->in_len : GZ_DICT;
		memcpy(s->dict, prev->in + prev->in_len - n, n);
		s->dict_len = n;
	}
	of->buf = s->in;
	of->len = 0;
}

/* Hands the filling slot to the compressor; with `final`, it ends the stream. */
static void gz_submit(struct sf_outfile *of, int final)
{
	struct gz *g = of->gz;
	struct gz_slot *s = &g->slots[g->submitted % GZ_SLOTS];
	s->in_len = of->len;
	s->final = final;
	s->error = 0;
	if (!final && g->submitted == 0)
		gz_start_workers(g); /* more than one block: worth threads */
	if (g->nworkers == 0) {
		if (!g->inline_zs)
			g->inline_zs = gz_stream_new();
		compress_slot(s, g->inline_zs);
		s->state = SLOT_DONE;
		g->submitted++;
	} else {
		pthread_mutex_lock(&g->mu);
		s->state = SLOT_QUEUED;
		g->submitted++;
		pthread_cond_signal(&g->work);
		pthread_mutex_unlock(&g->mu);
	}
	while (gz_write_next(of, 0))
		; /* keep output flowing and slots free */
	of->buf = NULL;
	of->len = 0;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Ends the stream: last block, every block written, trailer. */
static void gz_finish(struct sf_outfile *of)
{
	struct gz *g = of->gz;
	gz_submit(of, 1);
	while (g->written < g->submitted)
		gz_write_next(of, 1);
	uint8_t trailer[8];
	put_le32(trailer, g->crc);
	put_le32(trailer + 4, g->isize);
	if (!of->failed)
		write_all(of, trailer, sizeof(trailer));
}

/* ---- paths ---- */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The creation mode of outputs (sf_outfile_limit_mode). The CLI runs one
 * command per process, and every output of that command is made from the
 * same logs, so one process-wide value is the whole state. */
static unsigned out_mode = 0644;
static int out_mode_limited;

void sf_outfile_limit_mode(unsigned mode)
{
	mode &= 0666;
	out_mode = out_mode_limited ? out_mode & mode : mode;
	out_mode_limited = 1;
}

/* Creates "<dir>/.<base>.<random>.tmp" with O_EXCL. Returns the fd and sets
 * *tmp_out (malloc'd), or -1 with errno set. */
static int create_temp_mode(const char *path, char **tmp_out, unsigned mode);

static int create_temp(const char *path, char **tmp_out)
{
	return create_temp_mode(path, tmp_out, out_mode);
}

static int create_temp_mode(const char *path, char **tmp_out, unsigned mode)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0; /* keeps the '/' */
	const char *base = slash ? slash + 1 : path;
	if (*base == '\0') {
		errno = EISDIR;
		return -1;
	}
	/* Keep the name under NAME_MAX (255) whatever the base length. */
	int baselen = (int)strnlen(base, 200);
	size_t cap = dirlen + (size_t)baselen + 40;
	char *tmp = xmalloc(cap);
	static unsigned counter;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
	for (int attempt = 0; attempt < 100; attempt++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull + counter++;
		snprintf(tmp, cap, "%.*s.%.*s.%08x.tmp", (int)dirlen, path, baselen, base,
			 (unsigned)(seed >> 32));
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
		if (fd >= 0) {
			*tmp_out = tmp;
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	int e = errno;
	free(tmp);
	errno = e;
	return -1;
}

/* The file a write to path lands in, as the shell's `>`, cp and the
 * compilers write it: a symlink at path (or at the end of a chain of them)
 * stands for its target, which the new content replaces while the links
 * stay. A link to a missing file gives that file's path (created, as `>`
 * does). Directories on the way are left as given: rename(2) follows
 * them. malloc'd. */
static char *resolve_links(const char *path)
{
	char *cur = xstrdup(path);
	for (int hops = 0; hops < 40; hops++) { /* the kernel's own limit (ELOOP) */
		char buf[4096];
		ssize_t n = readlink(cur, buf, sizeof(buf) - 1);
		if (n <= 0)
			return cur; /* not a link (or unreadable: the open says why) */
		buf[n] = '\0';
		const char *slash = strrchr(cur, '/');
		char *next;
		if (buf[0] == '/' || !slash)
			next = xstrdup(buf);
		else if (asprintf(&next, "%.*s%s", (int)(slash - cur + 1), cur, buf) < 0)
			next = NULL;
		if (!next)
			return cur;
		free(cur);
		cur = next;
	}
	return cur;
}

/* A target that exists and is neither a regular file nor a directory (a
 * device such as /dev/null or /dev/full, a FIFO, a socket; also through a
 * symlink such as /dev/stdout) is written in place: a temporary file renamed
 * over it would replace the device node itself (as root, /dev/full became a
 * regular file), and its write errors would go unseen. */
static int is_special(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int sf_outfile_check(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(EISDIR));
		return -1;
	}
	if (is_special(path)) {
		if (access(path, W_OK) == 0)
			return 0;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	char *tmp, *dest = resolve_links(path);
	int fd = create_temp(dest, &tmp);
	free(dest);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	close(fd);
	unlink(tmp);
	free(tmp);
	return 0;
}

/* ---- public API ---- */

struct sf_outfile *sf_outfile_open(const char *path, int gzip, char *err, size_t errlen)
{
	char *tmp = NULL, *dest = resolve_links(path);
	int special = is_special(path);
	int fd = special ? open(path, O_WRONLY | O_CLOEXEC) : create_temp(dest, &tmp);
	if (fd < 0) {
		snprintf(err, errlen, "cannot %s %s: %s", special ? "open" : "create", path, strerror(errno));
		free(dest);
		return NULL;
	}
	struct sf_outfile *of = xcalloc(1, sizeof(*of));
	of->fd = fd;
	of->tmp = tmp;
	of->path = xstrdup(path);
	of->dest = dest;
	if (gzip < 0 ? ends_with(path, ".gz") : gzip != 0) {
		/* Header: magic, deflate, no flags, no mtime (reproducible
		 * output), no extra flags, OS = Unix. */
		static const uint8_t header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
		of->gz = gz_new();
		gz_take_slot(of);
		write_all(of, header, sizeof(header));
	} else {
		of->buf = xmalloc(OF_BLOCK);
	}
	return of;
}

struct sf_outfile *sf_outfile_open_beside(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(path, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
		snprintf(err, errlen, "not replacing %s: %s", path,
			 S_ISLNK(st.st_mode)   ? "it is a symlink (a name the command makes: nothing there is followed)"
			 : !S_ISREG(st.st_mode) ? "not a regular file"
						: "another user's file");
		return NULL;
	}
	char *tmp = NULL;
	int fd = create_temp_mode(path, &tmp, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return NULL;
	}
	struct sf_outfile *of = xcalloc(1, sizeof(*of));
	of->fd = fd;
	of->tmp = tmp;
	of->path = xstrdup(path);
	of->dest = xstrdup(path); /* renamed over the name: a link put there meanwhile is replaced, not followed */
	of->buf = xmalloc(OF_BLOCK);
	return of;
}

int sf_outfile_write(struct sf_outfile *of, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	if (of->failed)
		return -1;
	if (!of->gz) {
		if (len > OF_BLOCK - of->len) {
			if (write_all(of, of->buf, of->len) < 0)
				return -1;
			of->len = 0;
			if (len >= OF_BLOCK / 2) /* large writes skip the copy */
				return write_all(of, p, len);
		}
		memcpy(of->buf + of->len, p, len);
		of->len += len;
		return 0;
	}
	while (len > 0) {
		size_t n = OF_BLOCK - of->len < len ? OF_BLOCK - of->len : len;
		memcpy(of->buf + of->len, p, n);
		of->len += n;
		p += n;
		len -= n;
		if (of->len == OF_BLOCK) {
			gz_submit(of, 0);
			gz_take_slot(of);
		}
	}
	return of->failed ? -1 : 0;
}

int sf_outfile_write_cb(void *ctx, const void *buf, size_t len)
{
	return sf_outfile_write(ctx, buf, len);
}

unsigned long long sf_outfile_bytes(const struct sf_outfile *of)
{
	return of->bytes;
}

static void release(struct sf_outfile *of)
{
	if (of->gz)
		gz_free(of->gz);
	else
		free(of->buf);
	free(of->tmp);
	free(of->path);
	free(of->dest);
	free(of);
}

void sf_outfile_abort(struct sf_outfile *of)
{
	if (!of)
		return;
	if (of->fd >= 0)
		close(of->fd);
	if (of->tmp)
		unlink(of->tmp);
	release(of);
}

int sf_outfile_commit(struct sf_outfile *of)
{
	if (of->gz)
		gz_finish(of);
	else if (!of->failed)
		write_all(of, of->buf, of->len);
	if (close(of->fd) != 0)
		fail(of, "cannot write", errno);
	of->fd = -1;
	if (!of->failed && of->tmp && rename(of->tmp, of->dest) != 0)
		fail(of, "cannot rename temporary file to", errno);
	if (of->failed) {
		/* -o /dev/stdout into `| head`: a reader leaving early is no
		 * error to report (main.c makes the status 0) */
		if (!(of->err_no == EPIPE && !of->tmp && sf_stdout_reader_gone()))
			sf_error("%s %s: %s", of->err_what, of->path, strerror(of->err_no));
		sf_outfile_abort(of);
		return -1;
	}
	release(of);
	return 0;
}

int sf_outfile_fail(struct sf_outfile *of, const char *out)
{
	if (sf_outfile_write(of, "", 0) < 0) {
		sf_outfile_commit(of);
		return -1;
	}
	sf_outfile_abort(of);
	sf_error("%s: conversion failed; nothing written", out);
	return -1;
}
