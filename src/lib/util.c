#include "lib/util.h"

#include "lib/text_esc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

/* Messages name paths and functions taken from logs: escaped (text_esc.h),
 * so that a hostile log cannot drive the terminal through stderr. Through
 * sf_esc_put, which keeps no state: a reader thread (query's frames) may
 * warn while the main thread formats its output. Under stderr's lock, so two
 * threads' messages do not interleave. */
static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	char buf[4096];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	flockfile(stderr);
	fprintf(stderr, "sftrace: %s", prefix);
	sf_esc_put(stderr, buf, NULL);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void sf_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("error: ", fmt, ap);
	va_end(ap);
}

void sf_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

static void *check(void *p)
{
	if (!p) {
		fputs("sftrace: error: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

void *xmalloc(size_t n) { return check(malloc(n ? n : 1)); }
void *xcalloc(size_t n, size_t size) { return check(calloc(n ? n : 1, size ? size : 1)); }
void *xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1)); }
char *xstrdup(const char *s) { return check(strdup(s)); }

size_t sf_utf8_len(const unsigned char *p)
{
	return sf_utf8_seq(p, SIZE_MAX); /* a NUL stops the scan: it is no continuation byte */
}

size_t sf_utf8_seq(const unsigned char *p, size_t avail)
{
	unsigned c = p[0], v, min;
	size_t n;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	if (n > avail)
		return 0;
	v = c & (0x3f >> (n - 1));
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return n;
}

int sf_open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		close(fd);
		errno = e;
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

FILE *sf_fopen_regular(const char *path)
{
	int fd = sf_open_regular(path);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	return f;
}

const char *sf_open_error(int err)
{
	return err == EINVAL ? "not a regular file" : strerror(err);
}

unsigned sf_uftrace_unit(uint64_t ns, uint64_t *whole, uint64_t *frac)
{
	static const uint64_t limit[] = {1000, 1000, 1000, 60, 24, UINT64_MAX};
	uint64_t v = ns, small = 0;
	unsigned i;
	for (i = 0; i < 4; i++) {
		small = v % limit[i];
		v /= limit[i];
		if (v < limit[i + 1])
			break;
	}
	if (i == 4) { /* the hours' step: uftrace's loop stops there */
		small = v % limit[4];
		v /= limit[4];
	}
	if (v > 999)
		v = small = 999;
	*whole = v;
	*frac = small;
	return i;
}

void sf_format_duration(char *buf, size_t len, double ns, enum sf_duration_style style)
{
	static const char *const unit[] = {"ns", "us", "ms", "s"};
	static const double scale[] = {1, 1e3, 1e6, 1e9};
	int u = 0;
	if (style == SF_DURATION_SIG3) {
		if (ns < 1000) {
			snprintf(buf, len, "%.0f ns", ns);
			return;
		}
		/* Rounds up into the next unit where 3 digits would show 1000. */
		double v = ns;
		while (u < 3 && v >= 999.5) {
			v /= 1000;
			u++;
		}
		/* v < 999.5 now, except for seconds, which do not go further. */
		snprintf(buf, len, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, unit[u]);
		return;
	}
	while (u < 3 && ns >= scale[u + 1])
		u++;
	if (style == SF_DURATION_FIXED)
		snprintf(buf, len, !u ? "%.0f %s" : u < 3 ? "%.1f %s" : "%.2f %s", ns / scale[u], unit[u]);
	else
		snprintf(buf, len, u ? "%g%s" : "%.0f%s", ns / scale[u], unit[u]);
}

int sf_stdout_reader_gone(void)
{
	struct stat st;
	if (fstat(1, &st) < 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return 0;
	/* A pipe's write end polls POLLERR once no reader is left; a socket's
	 * POLLHUP or POLLERR once the peer shut it. */
	struct pollfd p = {.fd = 1, .events = POLLOUT};
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

int sf_path_lookup(const char *cmd, char *path, size_t cap)
{
	if (strchr(cmd, '/')) {
		snprintf(path, cap, "%s", cmd);
		return access(path, X_OK) == 0 ? 0 : -1;
	}
	const char *p = getenv("PATH");
	for (p = p ? p : "/bin:/usr/bin"; p && *p;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		snprintf(path, cap, "%.*s/%s", (int)n, n ? p : ".", cmd);
		if (access(path, X_OK) == 0)
			return 0;
		p = colon ? colon + 1 : NULL;
	}
	return -1;
}

size_t sf_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, len, fmt, ap);
	return n <= 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
