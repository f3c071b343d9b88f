/* /proc/self/maps, line by line, for the runtime's three readers: a
 * landing's mapping (stack.c, sf_mapping_of), the main stack's floor at
 * start-up (stack.c) and the program's own protections inside a text
 * segment (patch.c). No allocation and a small buffer: a landing may run
 * on a signal stack. Only each line's bounds, permissions and whether it
 * is the main thread's "[stack]" are kept; the kernel lists mappings in
 * address order, so a walker can stop at the first one past what it
 * looks for. */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/runtime.h"

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A line's start ("lo-hi rwxp"): 1 and its fields if it parses. */
static int parse_head(const char *l, size_t n, struct sf_map *m)
{
	size_t i = 0;
	uint64_t a = 0, b = 0;
	int v;
	while (i < n && (v = hex_value(l[i])) >= 0)
		a = a << 4 | (uint64_t)v, i++;
	if (i >= n || l[i++] != '-')
		return 0;
	while (i < n && (v = hex_value(l[i])) >= 0)
		b = b << 4 | (uint64_t)v, i++;
	if (i + 4 >= n || l[i++] != ' ')
		return 0;
	m->lo = a;
	m->hi = b;
	m->prot = (l[i] == 'r' ? PROT_READ : 0) | (l[i + 1] == 'w' ? PROT_WRITE : 0) | (l[i + 2] == 'x' ? PROT_EXEC : 0);
	return 1;
}

int sf_maps_walk(int high, int (*line)(const struct sf_map *, void *), void *arg)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (high)
		fd = sf_fd_brief(fd);
	if (fd < 0)
		return -1;
	/* the last 7 bytes of a line, one per byte of the word: "[stack]" */
	const uint64_t stack_tag = 0x5b737461636b5dULL;
	char buf[512], head[48];
	size_t hn = 0;
	uint64_t tail = 0;
	int rc = 0;
	ssize_t n;
	while (!rc && (n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n && !rc; i++) {
			char c = buf[i];
			if (c != '\n') {
				if (hn < sizeof(head))
					head[hn++] = c;
				tail = (tail << 8 | (uint8_t)c) & 0xffffffffffffffULL;
				continue;
			}
			struct sf_map m;
			if (parse_head(head, hn, &m)) {
				m.is_stack = tail == stack_tag;
				rc = line(&m, arg);
			}
			hn = 0;
			tail = 0;
		}
	sf_close(fd);
	return rc;
}
