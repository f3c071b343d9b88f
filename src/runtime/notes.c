/* The runtime's messages (sf_rt_message: one line on stderr, unless
 * stderr was closed at start) and notes for `sftrace record`
 * (SFTRACE_NOTES_DIR, set by record only): so
 * that a run that wrote no log can say why. Each process appends to
 * NOTES/<pid>: every message the runtime prints ("message ..."), and at
 * exit, when it created no log, one line per instrumented object it saw
 * ("object SLEDS PATCHED BUILD-ID PATH"). Nothing is written on the hot
 * path or by processes that wrote a log. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime.h"

static char notes_dir[4096];
static size_t notes_dir_len;

void sf_notes_init(void)
{
	const char *dir = getenv(SF_ENV(NOTES_DIR));
	size_t n = dir ? strlen(dir) : 0;
	if (!n || dir[0] != '/' || n + 32 >= sizeof(notes_dir))
		return;
	const char *why;
	int fd = sf_trust_dir(dir, &why);
	if (fd < 0) {
		sf_rt_message("notes directory not used: ", dir, why);
		return;
	}
	sf_close(fd);
	memcpy(notes_dir, dir, n + 1);
	notes_dir_len = n;
}

/* Opens (creating it 0600) this process's note file, named for its pid
 * taken now: a forked child writes its own file. The directory is checked
 * again each time (trust.c): record may be gone and the name taken by
 * someone else. Async-signal-safe; -1 when there is no trusted file. */
static int note_open(void)
{
	if (!notes_dir_len)
		return -1;
	char name[16], tmp[16];
	int k = 0;
	size_t n = 0;
	for (unsigned pid = (unsigned)getpid(); pid || !k; pid /= 10)
		tmp[k++] = (char)('0' + pid % 10);
	while (k)
		name[n++] = tmp[--k];
	name[n] = 0;
	const char *why;
	int dfd = sf_trust_dir(notes_dir, &why);
	if (dfd < 0)
		return -1;
	int fd = sf_trust_open(dfd, name, O_WRONLY | O_CREAT | O_APPEND, 0600, &why);
	sf_close(dfd);
	return fd;
}

/* Async-signal-safe: open, write, close. */
static void note_write_here(const char *line, size_t len)
{
	int fd = note_open();
	if (fd < 0)
		return;
	ssize_t r = write(fd, line, len);
	(void)r;
	sf_close(fd);
}

struct note_line {
	const char *line;
	size_t len;
	uid_t to;
};

static long note_write_req(void *arg)
{
	const struct note_line *n = arg;
	note_write_here(n->line, n->len);
	return 0;
}

/* In a clone(CLONE_FILES) child the note's descriptor is the keeper's
 * (writer.c): the table the child shares with its parent never holds
 * it, even when the child is killed meanwhile. */
static int on_keeper(long (*fn)(void *), void *arg)
{
	return sf_keeper_alive() && !sf_writer_on_thread() && sf_writer_call(fn, arg) != SF_WRITER_REFUSED;
}

static void note_write(const char *line, size_t len)
{
	struct note_line n = {line, len, 0};
	if (!on_keeper(note_write_req, &n))
		note_write_here(line, len);
}

/* Before the process takes another effective uid (hooks.c), as root: its
 * note file is made now and given to that uid, so that it, or a program
 * it execs as that user (start-stop-daemon --chuid, su), can still say
 * why it wrote no log. record's directory is 0711 for that: a file in it
 * can be opened by its name, but nobody else can list the directory or
 * create anything in it. */
static void hand_over_here(uid_t to)
{
	uid_t me = geteuid();
	if (me != 0 || to == (uid_t)-1 || to == me)
		return;
	int fd = note_open();
	if (fd < 0)
		return;
	sf_syscall3(SYS_fchown, fd, (long)to, -1);
	sf_close(fd);
}

static long hand_over_req(void *arg)
{
	hand_over_here(((const struct note_line *)arg)->to);
	return 0;
}

void sf_notes_hand_over(uid_t to)
{
	struct note_line n = {NULL, 0, to};
	if (!on_keeper(hand_over_req, &n))
		hand_over_here(to);
}

static void put(char *buf, size_t cap, size_t *pos, const char *s)
{
	while (*s && *pos + 1 < cap)
		buf[(*pos)++] = *s++;
}

static void put_u(char *buf, size_t cap, size_t *pos, uint64_t v)
{
	char tmp[24];
	int k = 0;
	do
		tmp[k++] = (char)('0' + v % 10);
	while (v /= 10);
	while (k && *pos + 1 < cap)
		buf[(*pos)++] = tmp[--k];
}

static void note_object(const struct sf_object_rt *o)
{
	static const char hex[] = "0123456789abcdef";
	char line[4096 + 256];
	size_t pos = 0;
	put(line, sizeof(line), &pos, "object ");
	put_u(line, sizeof(line), &pos, o->info.sleds);
	put(line, sizeof(line), &pos, " ");
	put_u(line, sizeof(line), &pos, o->info.patched);
	put(line, sizeof(line), &pos, " ");
	for (unsigned i = 0; i < o->info.build_id_len && pos + 3 < sizeof(line); i++) {
		line[pos++] = hex[o->info.build_id[i] >> 4];
		line[pos++] = hex[o->info.build_id[i] & 15];
	}
	if (!o->info.build_id_len)
		put(line, sizeof(line), &pos, "-");
	put(line, sizeof(line), &pos, " ");
	put(line, sizeof(line), &pos, o->path);
	line[pos++] = '\n';
	note_write(line, pos);
}

/* Runs before the runtime's own destructor (priority 101). */
__attribute__((destructor(102))) static void notes_at_exit(void)
{
	if (notes_dir_len && sf_config.enabled && !sf_log_ready())
		sf_objects_foreach_instrumented(note_object);
}

/* What descriptor 2 was when the process started (closed: st_nlink 0
 * kept as "none"). Messages go to it only while it is still that file: a
 * program that closed stderr and opened a file of its own, which took
 * number 2, must find that file holding exactly what it wrote. */
static struct {
	int open;
	dev_t dev;
	ino_t ino;
} err_at_start;

void sf_messages_init(void)
{
	struct stat st;
	if (sf_syscall3(SYS_fstat, 2, (long)&st, 0) == 0) {
		err_at_start.open = 1;
		err_at_start.dev = st.st_dev;
		err_at_start.ino = st.st_ino;
	}
}

static int stderr_is_ours_to_write(void)
{
	struct stat st;
	return err_at_start.open && sf_syscall3(SYS_fstat, 2, (long)&st, 0) == 0 && st.st_dev == err_at_start.dev &&
	       st.st_ino == err_at_start.ino;
}

/* One line on stderr, and in the notes for record (note_write). */
void sf_rt_message(const char *a, const char *b, const char *c)
{
	char buf[1024];
	size_t n = 0;
	const char *parts[] = {"sftrace: ", a, b, c ? ": " : "", c};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		for (const char *p = parts[i]; p && *p && n < sizeof(buf) - 1; p++)
			buf[n++] = *p;
	buf[n++] = '\n';
	if (!sf_writer_defer_message(buf, n)) /* the writer's table has no stderr */
		sf_messages_print(buf, n);
	note_write(buf, n); /* record repeats it if no log was written */
}

/* A message line on stderr, if it is still the one the process started with. */
void sf_messages_print(const char *buf, size_t n)
{
	if (stderr_is_ours_to_write()) {
		ssize_t r = write(2, buf, n);
		(void)r;
	}
}
