/* sftrace log reader: see log_reader.h for the rules it implements. */
#include "lib/log_reader.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "format/sf_args.h"
#include "format/sflog.h"
#include "lib/frames.h"
#include "lib/hashmap.h"
#include "lib/util.h"

/* Warnings beyond this many are only counted (a badly damaged file must not
 * make the warning list grow with the file). */
#define LR_MAX_WARNINGS 200

__extension__ typedef __int128 i128;

/* One batch of events: a DATA chunk, or a SLOT chunk's current batch. */
struct lr_batch {
	uint64_t off;    /* chunk offset */
	uint32_t nrec;   /* records usable (capacity cut by count and EOF) */
	uint64_t base;   /* time base of its events */
	uint32_t seq;
	uint32_t thread; /* index into lr_log.threads */
	uint8_t slot;
	uint8_t live;    /* delivered (not a duplicate) */
	uint8_t packed;  /* a PACKED chunk: nrec records coded in `bytes` bytes */
	uint8_t cut;     /* the end of the file cuts the chunk */
	uint32_t bytes;
	uint64_t depth0; /* SLOT: the thread's depth before its first record + 1; 0: not known */
};

struct lr_pair {
	uint64_t tsc, mono;
};

struct lr_log {
	struct lr_info info;
	const unsigned char *map;
	size_t map_len;
	char *cmdline;

	struct lr_object *objects;
	size_t nobjects, objects_cap;
	struct lr_object *untraced; /* SF_OBJ_UNTRACED chunks: objects without functions */
	size_t nuntraced, untraced_cap;
	uint32_t *by_first_id; /* object indices sorted by first_id */
	uint32_t *unloads;     /* sf_unload.index values, applied after indexing */
	size_t nunloads, unloads_cap;
	struct sf_switch *switches; /* SWITCH chunks, file order */
	/* ARGSPEC entries (format/sf_args.h, "Values only"), copied: by
	 * function id << 1 | 1 for the exit's, their offset in argspec + 1. */
	struct hashmap argspec_at;
	/* Ring logs: function id << 1 | 1 for the exit's, of every ARGS
	 * event with items in the window (find_before_window): functions
	 * with values asked though not values-only (strings, aarch64). */
	struct hashmap args_seen;
	unsigned char *argspec;
	size_t argspec_len, argspec_cap;
	size_t nswitches, switches_cap;
	uint64_t *pause_ns;    /* the pauses' times (lr_time_ns), ascending: every thread's */
	uint64_t *switch_ns;   /* every switch's time (lr_time_ns), ascending */

	struct lr_thread *threads;
	size_t nthreads, threads_cap;
	struct hashmap by_serial; /* serial -> thread index, while indexing */

	struct lr_batch *batches;
	size_t nbatches, batches_cap;
	uint32_t *order; /* live batches in delivery order */
	size_t norder;

	struct lr_pair *pairs;
	size_t npairs, pairs_cap;
	double slope;     /* ns per tick */
	double intercept; /* ns since start at tsc == anchor (a whole number) */
	uint64_t anchor_tsc;
	/* The same line in fixed point (48 fraction bits): converting every
	 * event through doubles took 12% of a whole conversion. 0: use the
	 * doubles (a slope of 2^15 ns per tick or more). */
	uint64_t slope_q48;
	i128 intercept_q48;

	char **warnings;
	size_t nwarnings;
	uint64_t warnings_lost;

	int truncated;          /* the last chunk is cut by the end of the file */
	int chunks_missing;     /* fewer whole chunks than the header counts (check_chunk_count) */
	uint64_t truncated_off;
	int64_t truncated_batch; /* its batch, or -1 */
	uint16_t truncated_type; /* its chunk type, 0 if even its header is cut */

	int fd; /* open while lr_open counts events (count_events reads with it) */
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	*cap = n;
	return xrealloc(p, n * elem);
}

static void warn(struct lr_log *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct lr_log *log, const char *fmt, ...)
{
	if (log->nwarnings >= LR_MAX_WARNINGS) {
		log->warnings_lost++;
		return;
	}
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!log->warnings)
		log->warnings = xcalloc(LR_MAX_WARNINGS + 1, sizeof(char *));
	log->warnings[log->nwarnings++] = xstrdup(buf);
}

static int is_zero16(const unsigned char *p)
{
	uint64_t a, b;
	memcpy(&a, p, 8);
	memcpy(&b, p + 8, 8);
	return (a | b) == 0;
}

/* Reads len bytes at off into dst; -1 if the read falls short. lr_open
 * reads what it scans (chunk headers, batches to count) this way, not
 * through the mapping: on a VM the first touch of a mapped page can cost
 * microseconds (on our shared 2-core VM 2.8 us per 4 KiB, 24 us for a fault
 * that maps the 64 KiB around it: 5-6 ns per raw event), where pread costs
 * about 3 us a call and copies gigabytes a second (bench/open_cost.c). */
static int read_at(const struct lr_log *log, uint64_t off, void *dst, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t r = pread(log->fd, (char *)dst + done, len - done, (off_t)(off + done));
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* The chunk header at off; bytes past the end of the file are zeros. */
static void chunk_header_at(const struct lr_log *log, uint64_t off, struct sf_chunk *c)
{
	uint64_t left = log->info.file_size - off;
	size_t len = left < sizeof(*c) ? (size_t)left : sizeof(*c);
	memset(c, 0, sizeof(*c));
	if (read_at(log, off, c, len) < 0)
		memcpy(c, log->map + off, len);
}

/* ---- header ---- */

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", path, buf);
	return -1;
}

/* argv from the NUL-separated cmdline; a last argument cut without its NUL
 * (cmdline_truncated) is kept. */
static void parse_cmdline(struct lr_log *log, const struct sf_header *h)
{
	size_t len = h->cmdline_len < SF_CMDLINE_MAX ? h->cmdline_len : SF_CMDLINE_MAX;
	log->cmdline = xmalloc(len + 1);
	memcpy(log->cmdline, h->cmdline, len);
	log->cmdline[len] = 0;
	int argc = 0;
	for (size_t i = 0; i < len; i += strlen(log->cmdline + i) + 1)
		argc++;
	log->info.argv = xcalloc((size_t)argc + 1, sizeof(char *));
	argc = 0;
	for (size_t i = 0; i < len; i += strlen(log->cmdline + i) + 1)
		log->info.argv[argc++] = log->cmdline + i;
	log->info.argc = argc;
	log->info.cmdline_truncated = h->cmdline_truncated != 0;
}
/* Below this, the rounds' spread understates how far a run's own calls
 * cost from the rounds' median: 256 pairs in a tight loop, where a real
 * run's calls share the cores, caches and frequency with the program and
 * the writer. skep28m_net (parent calling an empty child 1M times) ran
 * 2.5-5.1% off the median in six runs whose spread said 0.2-3%
 * (docs/DESIGN.md "Times net of the tracer"). */
#define COST_ERR_FLOOR 0.05

/* The cost's relative uncertainty (lr_info.cost_err): the larger distance
 * from the median total to the lowest or the highest kept round over the
 * median, or the exit's re-measure's distance from it, at least
 * COST_ERR_FLOOR. 0 without a spread (older logs). */
static double cost_err(uint64_t med, uint64_t spread, uint64_t exit)
{
	uint64_t lo = spread & UINT32_MAX, hi = spread >> 32;
	if (!med || !spread)
		return 0;
	double below = lo < med ? (double)(med - lo) : 0, above = hi > med ? (double)(hi - med) : 0;
	double err = (below > above ? below : above) / (double)med;
	uint64_t again = (exit & UINT32_MAX) + (exit >> 32);
	if (exit) {
		double drift = (again > med ? (double)(again - med) : (double)(med - again)) / (double)med;
		err = drift > err ? drift : err;
	}
	return err > COST_ERR_FLOOR ? err : COST_ERR_FLOOR;
}


static int read_header(struct lr_log *log, char *err, size_t errlen)
{
	const char *path = log->info.path;
	uint64_t size = log->info.file_size;
	uint64_t magic = 0;
	uint32_t version = 0;
	if (size >= 8)
		memcpy(&magic, log->map, 8);
	if (magic != SF_MAGIC)
		return fail(err, errlen, path, "not an sftrace log (bad magic)");
	if (size < 12)
		return fail(err, errlen, path, "header truncated (%" PRIu64 " of %u bytes)", size, SF_HEADER_SIZE);
	memcpy(&version, log->map + 8, 4);
	if (version > SF_VERSION)
		return fail(err, errlen, path,
			    "log format version %u is newer than this sftrace supports (%u)",
			    version, SF_VERSION);
	if (version == 0)
		return fail(err, errlen, path, "log format version 0 is not valid");
	if (version < SF_VERSION_MIN)
		return fail(err, errlen, path,
			    "log format version %u was written by an older sftrace; this one reads versions %u-%u "
			    "(record again)", version, SF_VERSION_MIN, SF_VERSION);
	if (size < SF_HEADER_SIZE)
		return fail(err, errlen, path, "header truncated (%" PRIu64 " of %u bytes)", size, SF_HEADER_SIZE);

	struct sf_header h;
	memcpy(&h, log->map, sizeof(h));
	struct lr_info *in = &log->info;
	in->version = h.version;
	in->header_size = h.header_size;
	in->pid = h.pid;
	in->ppid = h.ppid;
	in->clock = h.clock;
	in->machine = h.machine ? h.machine : EM_X86_64;
	in->counter_hz = h.counter_hz;
	in->state = h.state;
	in->start_realtime_ns = h.start_realtime_ns;
	in->start_tsc = h.start_tsc;
	in->start_mono_ns = h.start_mono_ns;
	in->last_tsc = h.last_tsc;
	in->last_mono_ns = h.last_mono_ns;
	in->dropped_events = h.dropped_events;
	in->write_errors = h.write_errors;
	in->last_errno = h.last_errno;
	in->header_threads = h.threads;
	in->header_objects = h.objects;
	in->header_chunks = h.chunks;
	in->exit_state = h.exit_state;
	in->fork_time = h.fork_time;
	in->fork_parent = h.fork_time ? (h.fork_parent ? (uint32_t)h.fork_parent : h.ppid) : 0;
	in->fork_tid = h.fork_time ? (uint32_t)(h.fork_parent >> 32) : 0;
	in->features = h.version >= 5 ? h.features : 0;
	in->options_known = (in->features & SF_FEAT_OPTIONS) != 0;
	in->max_size = h.max_size;
	in->max_size_reached = h.max_size_reached != 0;
	in->filter_funcs = h.filter_funcs;
	memcpy(in->filter, h.filter, sizeof(in->filter));
	in->filter[sizeof(in->filter) - 1] = 0;
	in->ring_bytes = h.ring_bytes;
	in->snapshot = h.snapshot;
	in->snapshot_reason = h.snapshot_reason;
	if (h.version >= 4) {
		in->trim_min_ns = h.reserved[SF_HDR_TRIM_MIN_NS];
		in->trim_max_depth = h.reserved[SF_HDR_TRIM_MAX_DEPTH] > UINT32_MAX ? UINT32_MAX
					: (uint32_t)h.reserved[SF_HDR_TRIM_MAX_DEPTH];
		in->trimmed_records = h.reserved[SF_HDR_TRIMMED];
		in->cost_parent_raw256 = h.reserved[SF_HDR_COST] & UINT32_MAX;
		in->cost_child_raw256 = h.reserved[SF_HDR_COST] >> 32;
		in->cost_err = cost_err(in->cost_parent_raw256 + in->cost_child_raw256, h.cost_spread, h.cost_exit);
		in->cost_spread_raw256 = h.cost_spread;
		in->cost_exit_raw256 = h.cost_exit;
		if (h.ring_bytes) {
			in->snap_time = h.reserved[SF_HDR_SNAP_TIME];
			in->snap_tid = (uint32_t)h.reserved[SF_HDR_SNAP_THREAD];
			in->snap_func = (uint32_t)h.reserved[SF_HDR_SNAP_FUNC];
			in->snap_slow_ns = h.reserved[SF_HDR_SNAP_SLOW_NS];
			in->snap_missed = h.reserved[SF_HDR_SNAP_MISSED];
			in->snap_taken = h.reserved[SF_HDR_SNAP_TAKEN];
			in->snap_written = h.reserved[SF_HDR_SNAP_WRITTEN];
			in->snap_over_max = h.snap_over_max;
			in->snap_sent = h.snap_sent;
			in->snap_arrived = h.snap_arrived;
			in->ring_reused = h.ring_reused;
		}
	}
	parse_cmdline(log, &h);
	in->seccomp_stopped = h.seccomp_stopped;
	if (h.seccomp_stopped) {
		const char *n = lr_syscall_name(h.machine, h.seccomp_stopped - 1);
		warn(log, "tracing stopped for good where the program installed a seccomp filter that refuses %s%s"
		     "(system call %u), which the runtime makes on its threads: the program ran on untraced",
		     n ? n : "", n ? " " : "", h.seccomp_stopped - 1);
	}
	if (h.ring_bytes && h.ring_reused)
		warn(log, "%" PRIu64 " event%s of exited threads %s not in the log: later threads' rings took their "
		     "slots (--ring keeps SIZE per thread alive at once)", (uint64_t)h.ring_reused,
		     h.ring_reused == 1 ? "" : "s", h.ring_reused == 1 ? "is" : "are");
	if (h.landings_uncounted)
		warn(log, "%" PRIu64 " landing%s (longjmp or exception) deeper than the runtime's stored shadow stack "
		     "could not be counted: the frames %s abandoned stay open until an outer exit, and depths after "
		     "%s may be off", (uint64_t)h.landings_uncounted, h.landings_uncounted == 1 ? "" : "s",
		     h.landings_uncounted == 1 ? "it" : "they", h.landings_uncounted == 1 ? "it" : "them");
	if (h.header_size != SF_HEADER_SIZE)
		warn(log, "header_size is %u, expected %u; chunks read from offset %u",
		     h.header_size, SF_HEADER_SIZE, SF_HEADER_SIZE);
	if (h.clock != SF_CLOCK_TSC && h.clock != SF_CLOCK_MONOTONIC)
		warn(log, "unknown clock %u; event times taken as CLOCK_MONOTONIC ns", h.clock);
	return 0;
}

/* ---- chunk index ---- */

static uint32_t thread_for_serial(struct lr_log *log, uint64_t serial)
{
	int added;
	uint64_t *index = hm_put(&log->by_serial, serial, &added);
	if (!added)
		return (uint32_t)*index;
	*index = log->nthreads;
	log->threads = grow(log->threads, &log->threads_cap, log->nthreads + 1, sizeof(*log->threads));
	struct lr_thread *t = &log->threads[log->nthreads];
	memset(t, 0, sizeof(*t));
	t->serial = serial;
	return (uint32_t)log->nthreads++;
}

static void add_pair(struct lr_log *log, uint64_t tsc, uint64_t mono)
{
	if (!tsc || !mono)
		return;
	log->pairs = grow(log->pairs, &log->pairs_cap, log->npairs + 1, sizeof(*log->pairs));
	log->pairs[log->npairs++] = (struct lr_pair){tsc, mono};
}

/* OBJECT payload: sf_object, path, pad to 8, count function addresses. */
static void add_object(struct lr_log *log, uint64_t off, const struct sf_chunk *c)
{
	const unsigned char *base = log->map + off;
	if (c->size < sizeof(struct sf_chunk) + sizeof(struct sf_object)) {
		warn(log, "object chunk at offset %" PRIu64 " is too small (%u bytes); skipped", off, c->size);
		return;
	}
	struct sf_object o;
	memcpy(&o, base + sizeof(*c), sizeof(o));
	uint64_t path_off = sizeof(*c) + sizeof(o);
	uint64_t funcs_off = path_off + (((uint64_t)o.path_len + 7) & ~(uint64_t)7);
	if (funcs_off + (uint64_t)c->count * 8 > c->size || o.build_id_len > sizeof(o.build_id)) {
		warn(log, "object chunk at offset %" PRIu64 " is inconsistent (path %u bytes, %u functions, chunk %u bytes); skipped",
		     off, o.path_len, c->count, c->size);
		return;
	}
	char *path = xmalloc((size_t)o.path_len + 1);
	memcpy(path, base + path_off, o.path_len);
	path[o.path_len] = 0;
	if (o.flags & SF_OBJ_UNTRACED) { /* kept apart: no function ids, only a place for addresses */
		log->untraced = grow(log->untraced, &log->untraced_cap, log->nuntraced + 1, sizeof(*log->untraced));
		struct lr_object *u = &log->untraced[log->nuntraced++];
		memset(u, 0, sizeof(*u));
		u->index = o.index;
		u->flags = o.flags;
		u->build_id_len = o.build_id_len;
		memcpy(u->build_id, o.build_id, o.build_id_len);
		u->load_bias = o.load_bias;
		u->end = o.load_bias + ((uint64_t)o.reserved << 12);
		u->path = path;
		u->offset = off;
		return;
	}
	/* A second chunk for an object names where its file is now: the
	 * runtime's copy of an executable replaced on disk during the run
	 * (docs/FORMAT.md). The rest is the first chunk's. */
	for (size_t j = 0; j < log->nobjects; j++)
		if (log->objects[j].index == o.index && log->objects[j].first_id == o.first_id) {
			free((char *)log->objects[j].path);
			log->objects[j].path = path;
			return;
		}
	log->objects = grow(log->objects, &log->objects_cap, log->nobjects + 1, sizeof(*log->objects));
	struct lr_object *obj = &log->objects[log->nobjects++];
	memset(obj, 0, sizeof(*obj));
	obj->index = o.index;
	obj->first_id = o.first_id;
	obj->count = c->count;
	obj->sleds = o.sleds;
	obj->patched = o.patched;
	obj->flags = o.flags;
	obj->build_id_len = o.build_id_len;
	memcpy(obj->build_id, o.build_id, o.build_id_len);
	obj->load_bias = o.load_bias;
	obj->path = path;
	/* Chunks are 16-aligned in a page-aligned mapping and funcs_off is a
	 * multiple of 8, so the array is naturally aligned. */
	obj->funcs = (const uint64_t *)(const void *)(base + funcs_off);
	obj->offset = off;
}

static void add_unload(struct lr_log *log, uint64_t off, const struct sf_chunk *c)
{
	if (c->size < sizeof(*c) + sizeof(struct sf_unload)) {
		warn(log, "unload chunk at offset %" PRIu64 " is too small; skipped", off);
		return;
	}
	struct sf_unload u;
	memcpy(&u, log->map + off + sizeof(*c), sizeof(u));
	log->unloads = grow(log->unloads, &log->unloads_cap, log->nunloads + 1, sizeof(*log->unloads));
	log->unloads[log->nunloads++] = u.index;
}

static void add_switch(struct lr_log *log, uint64_t off, const struct sf_chunk *c)
{
	if (c->size < sizeof(*c) + sizeof(struct sf_switch)) {
		warn(log, "switch chunk at offset %" PRIu64 " is too small; skipped", off);
		return;
	}
	log->switches = grow(log->switches, &log->switches_cap, log->nswitches + 1, sizeof(*log->switches));
	memcpy(&log->switches[log->nswitches++], log->map + off + sizeof(*c), sizeof(struct sf_switch));
}

/* An ARGSPEC chunk's entries (the later of two for the same function
 * and direction wins: they are the same). */
static void add_argspec(struct lr_log *log, uint64_t off, const struct sf_chunk *c)
{
	const unsigned char *p = log->map + off + sizeof(*c), *end = log->map + off + c->size;
	for (uint32_t i = 0; i < c->count; i++) {
		struct sf_args_head h;
		if (end - p < 8)
			break;
		memcpy(&h, p, sizeof(h));
		size_t len = SF_ARGSPEC_BYTES(h.nitems);
		if ((size_t)(end - p) < len || h.nitems > SF_ARG_MAX_ITEMS)
			break;
		log->argspec = grow(log->argspec, &log->argspec_cap, log->argspec_len + len, 1);
		memcpy(log->argspec + log->argspec_len, p, len);
		*hm_put(&log->argspec_at, (uint64_t)h.func_id << 1 | (h.flags & SF_ARGS_RET), NULL) = log->argspec_len + 1;
		log->argspec_len += len;
		p += len;
	}
	if (c->count && p == log->map + off + sizeof(*c))
		warn(log, "argument spec chunk at offset %" PRIu64 " is malformed; skipped", off);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* After the clock fit: the pauses' times in ns, ascending, given to every
 * thread (frames.c closes what is open there). */
static void apply_switches(struct lr_log *log)
{
	size_t n = 0;
	for (size_t i = 0; i < log->nswitches; i++) {
		if (log->switches[i].on)
			log->info.resumes++;
		else
			log->info.pauses++;
	}
	if (!log->nswitches)
		return;
	log->switch_ns = xmalloc(log->nswitches * sizeof(*log->switch_ns));
	for (size_t i = 0; i < log->nswitches; i++)
		log->switch_ns[i] = lr_time_ns(log, log->switches[i].time);
	qsort(log->switch_ns, log->nswitches, sizeof(*log->switch_ns), cmp_u64);
	/* Tracing ended off: frames left open at a thread's end were in
	 * flight at the last pause (frames.c). */
	int ends_off = !log->switches[log->nswitches - 1].on;
	for (size_t i = 0; i < log->nthreads; i++)
		log->threads[i].ends_paused = ends_off;
	if (!log->info.pauses)
		return;
	log->pause_ns = xmalloc(log->info.pauses * sizeof(*log->pause_ns));
	for (size_t i = 0; i < log->nswitches; i++)
		if (!log->switches[i].on)
			log->pause_ns[n++] = lr_time_ns(log, log->switches[i].time);
	qsort(log->pause_ns, n, sizeof(*log->pause_ns), cmp_u64);
	for (size_t i = 0; i < log->nthreads; i++) {
		log->threads[i].pause_ns = log->pause_ns;
		log->threads[i].npauses = (uint32_t)n;
	}
}

static const char *batch_type_name(uint16_t type)
{
	return type == SF_CHUNK_DATA ? "data" : type == SF_CHUNK_PACKED ? "packed" : "slot";
}

/* avail: bytes of the chunk present in the file. */
static void add_batch(struct lr_log *log, uint64_t off, const struct sf_chunk *c, uint64_t avail)
{
	uint64_t cap = (c->size - sizeof(*c)) / sizeof(struct sf_event);
	uint64_t in_file = (avail - sizeof(*c)) / sizeof(struct sf_event);
	uint64_t n = c->count, bytes = 0;
	if (c->type == SF_CHUNK_PACKED) {
		/* Coded ARGS events put up to SF_PK_MAX_PER_BYTE records in a
		 * byte (a repeated string's records cost a bitmap bit each):
		 * count can never exceed that many times the bytes. */
		uint64_t room = c->size - sizeof(*c);
		bytes = c->reserved;
		if (bytes > room) {
			warn(log, "packed chunk at offset %" PRIu64 ": %" PRIu64 " bytes exceed its %" PRIu64 "; using %" PRIu64,
			     off, bytes, room, room);
			bytes = room;
		}
		cap = bytes * SF_PK_MAX_PER_BYTE;
		in_file = n;
		if (bytes > avail - sizeof(*c))
			bytes = avail - sizeof(*c);
	}
	if (c->type == SF_CHUNK_SLOT && n == 0)
		n = cap;
	if (n > cap) {
		warn(log, "%s chunk at offset %" PRIu64 ": count %u exceeds its %" PRIu64 " records; using %" PRIu64,
		     batch_type_name(c->type), off, c->count, cap, cap);
		n = cap;
	}
	if (n > in_file)
		n = in_file;
	log->batches = grow(log->batches, &log->batches_cap, log->nbatches + 1, sizeof(*log->batches));
	struct lr_batch *b = &log->batches[log->nbatches++];
	b->off = off;
	b->nrec = (uint32_t)n;
	b->packed = c->type == SF_CHUNK_PACKED;
	b->cut = avail < c->size;
	b->bytes = (uint32_t)bytes;
	b->base = c->base;
	b->seq = c->seq;
	b->thread = thread_for_serial(log, c->thread_serial);
	b->slot = c->type == SF_CHUNK_SLOT;
	b->depth0 = b->slot ? c->reserved : 0;
	b->live = 1;
}

static int header_valid(const struct sf_chunk *c)
{
	return c->magic == SF_CHUNK_MAGIC &&
	       ((c->type >= SF_CHUNK_OBJECT && c->type <= SF_CHUNK_ARGSPEC) || c->type == SF_CHUNK_SWITCH) &&
	       c->size >= sizeof(*c) && c->size % 16 == 0;
}

static uint32_t read_u32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* After garbage at p: the next 16-aligned offset holding a valid chunk
 * header (or a chunk magic whose header the end of the file cuts), or size. */
static uint64_t resync(const struct lr_log *log, uint64_t p)
{
	uint64_t size = log->info.file_size;
	for (p += 16; p + 16 <= size; p += 16) {
		if (read_u32(log->map + p) != SF_CHUNK_MAGIC)
			continue;
		if (p + sizeof(struct sf_chunk) > size)
			return p;
		struct sf_chunk c;
		memcpy(&c, log->map + p, sizeof(c));
		if (header_valid(&c))
			return p;
	}
	return size;
}

/* Memory stays flat however big the log: pages already read are dropped
 * from our mapping (they stay in the page cache) once 16 MiB have passed.
 * Reading them again later (a slot, a second pass) just maps them back. */
static void drop_behind(const struct lr_log *log, uint64_t *released, uint64_t off)
{
	uint64_t start = *released & ~(uint64_t)4095, end = off & ~(uint64_t)4095;
	if (off < *released) {
		*released = off & ~(uint64_t)4095;
		return;
	}
	if (end < start + (16u << 20))
		return;
	madvise((void *)(log->map + start), (size_t)(end - start), MADV_DONTNEED);
	*released = end;
}

static void index_chunks(struct lr_log *log)
{
	uint64_t size = log->info.file_size;
	uint64_t p = SF_HEADER_SIZE, released = 0;
	while (p + 16 <= size) {
		drop_behind(log, &released, p);
		const unsigned char *q = log->map + p;
		struct sf_chunk c;
		chunk_header_at(log, p, &c);
		if (is_zero16((const unsigned char *)&c)) {
			/* Space claimed but never written: scanned in the mapping
			 * (a read per 16 bytes would cost more) */
			for (p += 16; p + 16 <= size && is_zero16(log->map + p); p += 16)
				drop_behind(log, &released, p);
			continue;
		}
		if (p + sizeof(struct sf_chunk) > size && c.magic == SF_CHUNK_MAGIC) {
			log->truncated = 1;
			log->truncated_off = p;
			log->truncated_batch = -1;
			p = size;
			break;
		}
		if (p + sizeof(c) > size || !header_valid(&c)) {
			uint64_t next = resync(log, p);
			if (next < size)
				warn(log, "garbage at offset %" PRIu64 ": %" PRIu64 " bytes skipped up to the chunk at offset %" PRIu64,
				     p, next - p, next);
			else
				warn(log, "garbage at offset %" PRIu64 ": %" PRIu64 " bytes skipped to the end of the file",
				     p, size - p);
			p = next;
			continue;
		}
		uint64_t avail = size - p < c.size ? size - p : c.size;
		if (avail < c.size) {
			log->truncated = 1;
			log->truncated_off = p;
			log->truncated_batch = -1;
			log->truncated_type = c.type;
		}
		add_pair(log, c.tsc, c.mono_ns);
		log->info.chunks_found += avail == c.size;
		if (c.type == SF_CHUNK_SLOT && c.thread_serial == 0) {
			/* A free slot (serials start at 1; the runtime clears the
			 * serial when a thread exits and gives its slot back). Its
			 * events were handed off and zeroed before that, except in
			 * a ring log: a snapshot's frozen batches, once the live set
			 * laps or their thread exits, are made free by the serial
			 * alone (runtime/buffer.c ring_drop_frozen, ring_put_set:
			 * no write at a hand-off), their records left as they were. */
			if (!log->info.ring_bytes && avail >= sizeof(c) + 16 && !is_zero16(q + sizeof(c)))
				warn(log, "free slot at offset %" PRIu64 " holds data; ignored", p);
		} else if (c.type == SF_CHUNK_DATA || c.type == SF_CHUNK_SLOT || c.type == SF_CHUNK_PACKED) {
			if (log->truncated)
				log->truncated_batch = (int64_t)log->nbatches;
			add_batch(log, p, &c, avail);
		} else if (!log->truncated) {
			if (c.type == SF_CHUNK_OBJECT)
				add_object(log, p, &c);
			else if (c.type == SF_CHUNK_SWITCH)
				add_switch(log, p, &c);
			else if (c.type == SF_CHUNK_ARGSPEC)
				add_argspec(log, p, &c);
			else
				add_unload(log, p, &c);
		}
		if (log->truncated) {
			p = size;
			break;
		}
		p += c.size;
	}
	if (p < size) {
		/* Fewer than 16 bytes left: harmless if zero. */
		for (uint64_t i = p; i < size; i++)
			if (log->map[i]) {
				warn(log, "%" PRIu64 " stray bytes at the end of the file (offset %" PRIu64 ")", size - p, p);
				break;
			}
	}
}

/* A file cut at a chunk boundary reads as a whole one: every chunk in it
 * is whole. The runtime counts the chunks it wrote whole in the header
 * (sf_header.chunks), which a reader compares once the process has ended
 * (its exit hooks ran, or an exit state was recorded): before, chunks may
 * still be on their way. A snapshot copies its process's count but only
 * some of its chunks: not compared. */
static void check_chunk_count(struct lr_log *log)
{
	const struct lr_info *in = &log->info;
	int ended = in->state == SF_STATE_EXITED || in->exit_state;
	if (log->truncated || in->snapshot || !ended || in->chunks_found >= in->header_chunks)
		return;
	log->chunks_missing = 1;
	warn(log, "truncated: the file holds %" PRIu64 " of the %" PRIu64 " chunks the runtime wrote (cut at a chunk "
		  "boundary: a copy taken mid-run, a full disk, a partial download); what follows is missing",
	     in->chunks_found, in->header_chunks);
}

/* ---- post-processing ---- */

static void apply_unloads(struct lr_log *log)
{
	for (size_t i = 0; i < log->nunloads; i++) {
		int found = 0;
		for (size_t j = 0; j < log->nobjects; j++)
			if (log->objects[j].index == log->unloads[i]) {
				log->objects[j].unloaded = 1;
				found = 1;
			}
		if (!found)
			warn(log, "unload of unknown object %u", log->unloads[i]);
	}
}

static int cmp_first_id(const void *a, const void *b, void *arg)
{
	const struct lr_object *objects = arg;
	const struct lr_object *x = &objects[*(const uint32_t *)a];
	const struct lr_object *y = &objects[*(const uint32_t *)b];
	if (x->first_id != y->first_id)
		return x->first_id < y->first_id ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void sort_objects(struct lr_log *log)
{
	log->by_first_id = xcalloc(log->nobjects, sizeof(uint32_t));
	for (size_t i = 0; i < log->nobjects; i++)
		log->by_first_id[i] = (uint32_t)i;
	qsort_r(log->by_first_id, log->nobjects, sizeof(uint32_t), cmp_first_id, log->objects);
	for (size_t i = 1; i < log->nobjects; i++) {
		const struct lr_object *a = &log->objects[log->by_first_id[i - 1]];
		const struct lr_object *b = &log->objects[log->by_first_id[i]];
		if ((uint64_t)a->first_id + a->count > b->first_id)
			warn(log, "objects %u (%s) and %u (%s) have overlapping function ids", a->index, a->path,
			     b->index, b->path);
	}
}

static int cmp_serial(const void *a, const void *b)
{
	const struct lr_thread *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* Threads sorted by serial; batch thread indices follow. */
static void sort_threads(struct lr_log *log)
{
	for (size_t i = 0; i < log->nthreads; i++)
		log->threads[i].index = (uint32_t)i; /* old index, temporarily */
	if (log->nthreads)
		qsort(log->threads, log->nthreads, sizeof(*log->threads), cmp_serial);
	uint32_t *remap = xcalloc(log->nthreads, sizeof(uint32_t));
	for (size_t i = 0; i < log->nthreads; i++) {
		remap[log->threads[i].index] = (uint32_t)i;
		log->threads[i].index = (uint32_t)i;
	}
	for (size_t i = 0; i < log->nbatches; i++)
		log->batches[i].thread = remap[log->batches[i].thread];
	free(remap);
	hm_free(&log->by_serial);
}

/* seq, then DATA before SLOT, then file order. */
static int cmp_batch(const void *a, const void *b, void *arg)
{
	const struct lr_batch *batches = arg;
	const struct lr_batch *x = &batches[*(const uint32_t *)a];
	const struct lr_batch *y = &batches[*(const uint32_t *)b];
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* tid and name from the thread's newest batch (highest seq). */
static void thread_identity(struct lr_log *log, struct lr_thread *t, const uint32_t *all, size_t n)
{
	if (!n)
		return;
	struct sf_chunk c;
	chunk_header_at(log, log->batches[all[n - 1]].off, &c);
	t->tid = c.tid;
	for (size_t i = n - 1; !c.name[0] && i-- > 0;)
		chunk_header_at(log, log->batches[all[i]].off, &c);
	if (c.name[0]) {
		memcpy(t->name, c.name, sizeof(c.name));
		t->name[16] = 0;
	}
}

static int batch_complete_events(const struct lr_log *log, const struct lr_batch *b);
/* The time of the log's first switch (sftrace resume / pause) after t,
 * UINT64_MAX when none: where a thread's depths start afresh. */
static uint64_t first_switch_after(const struct lr_log *log, uint64_t t)
{
	for (size_t k = 0; k < log->nswitches; k++)
		if (log->switch_ns[k] > t)
			return log->switch_ns[k];
	return UINT64_MAX;
}

static void find_before_window(struct lr_log *log);

/* A ring thread's window is its newest run of consecutive batches. Older
 * ones not contiguous with it are from an earlier lap (a process that died
 * while a snapshot's freeze kept them, docs/DESIGN.md "Snapshots"):
 * delivering them would stitch two laps together. */
static void ring_newest_run(struct lr_log *log, struct lr_thread *t)
{
	uint32_t k = t->nbatch;
	while (k > 1 && log->batches[t->batch[k - 2]].seq + 1 == log->batches[t->batch[k - 1]].seq)
		k--;
	if (k <= 1)
		return;
	uint32_t drop = k - 1;
	for (uint32_t i = 0; i < drop; i++) {
		struct lr_batch *b = &log->batches[t->batch[i]];
		b->live = 0;
		if (b->slot)
			t->live_slots--;
		else
			t->data_batches--;
	}
	memmove(t->batch, t->batch + drop, (t->nbatch - drop) * sizeof(*t->batch));
	t->nbatch -= drop;
	warn(log, "thread %" PRIu64 ": %u batch%s of an earlier lap of the ring left out (not contiguous with its newest)",
	     t->serial, drop, drop == 1 ? "" : "es");
}

/* Per thread: batches sorted by seq, duplicates dropped, identity taken. */
static void build_thread_batches(struct lr_log *log)
{
	uint32_t *counts = xcalloc(log->nthreads + 1, sizeof(uint32_t));
	for (size_t i = 0; i < log->nbatches; i++)
		counts[log->batches[i].thread]++;
	uint32_t *all = xcalloc(log->nbatches + 1, sizeof(uint32_t));
	uint32_t *start = xcalloc(log->nthreads + 1, sizeof(uint32_t));
	for (size_t t = 1; t <= log->nthreads; t++)
		start[t] = start[t - 1] + counts[t - 1];
	memset(counts, 0, (log->nthreads + 1) * sizeof(uint32_t));
	for (size_t i = 0; i < log->nbatches; i++) {
		uint32_t t = log->batches[i].thread;
		all[start[t] + counts[t]++] = (uint32_t)i;
	}
	for (size_t ti = 0; ti < log->nthreads; ti++) {
		struct lr_thread *t = &log->threads[ti];
		uint32_t *list = all + start[ti];
		size_t n = counts[ti];
		qsort_r(list, n, sizeof(uint32_t), cmp_batch, log->batches);
		thread_identity(log, t, list, n);
		t->batch = xcalloc(n + 1, sizeof(uint32_t));
		for (size_t i = 0; i < n; i++) {
			struct lr_batch *b = &log->batches[list[i]];
			if (b->slot)
				t->slots++;
			if (t->nbatch) {
				const struct lr_batch *prev = &log->batches[t->batch[t->nbatch - 1]];
				if (prev->seq == b->seq) {
					/* A slot whose batch was flushed is expected;
					 * anything else is a writer problem. */
					if (!b->slot)
						warn(log, "thread %" PRIu64 ": duplicate data batch %u at offset %" PRIu64 " ignored",
						     t->serial, b->seq, b->off);
					else if (!prev->slot &&
						 batch_complete_events(log, b) > batch_complete_events(log, prev)) {
						/* The process died while writing the DATA copy
						 * (a write cut short by SIGKILL or a full
						 * disk): the slot still holds the whole batch. */
						log->batches[t->batch[t->nbatch - 1]].live = 0;
						t->batch[t->nbatch - 1] = list[i];
						t->data_batches--;
						t->live_slots++;
						continue;
					} else if (!prev->slot)
						; /* flushed slot: its DATA copy is delivered */
					else
						warn(log, "thread %" PRIu64 ": two slots hold batch %u; the one at offset %" PRIu64 " is ignored",
						     t->serial, b->seq, b->off);
					b->live = 0;
					continue;
				}
			}
			t->batch[t->nbatch++] = list[i];
			if (b->slot)
				t->live_slots++;
			else
				t->data_batches++;
		}
		if (log->info.ring_bytes)
			ring_newest_run(log, t);
	}
	free(all);
	free(start);
	free(counts);
}

/* Delivery order: live DATA batches in file order, then live slots. Each
 * thread's batches are then permuted among the positions that thread
 * occupies so that it sees them in seq order even if the file does not. */
static void build_order(struct lr_log *log)
{
	log->order = xcalloc(log->nbatches + 1, sizeof(uint32_t));
	log->norder = 0;
	for (int slot = 0; slot <= 1; slot++)
		for (size_t i = 0; i < log->nbatches; i++)
			if (log->batches[i].live && log->batches[i].slot == slot)
				log->order[log->norder++] = (uint32_t)i;
	uint32_t *cursor = xcalloc(log->nthreads + 1, sizeof(uint32_t));
	int reordered = 0;
	for (size_t k = 0; k < log->norder; k++) {
		struct lr_thread *t = &log->threads[log->batches[log->order[k]].thread];
		uint32_t want = t->batch[cursor[t->index]++];
		if (want != log->order[k])
			reordered = 1;
		log->order[k] = want;
	}
	free(cursor);
	if (reordered && !log->info.ring_bytes) /* a ring reuses its slots round robin */
		warn(log, "batches are not in sequence order in the file; delivered in sequence order");
}

/* ---- records ---- */

enum rec_result { REC_EVENT, REC_HOLE, REC_CORRUPT, REC_END };

/* 1 if a record after p, up to end, holds anything. */
static int any_later_record(const unsigned char *p, const unsigned char *end)
{
	for (p += sizeof(struct sf_event); p + sizeof(struct sf_event) <= end; p += sizeof(struct sf_event)) {
		uint64_t x;
		memcpy(&x, p, sizeof(x));
		if (x)
			return 1;
	}
	return 0;
}

/* Decodes the record at p, in a batch with time base `base`; *used =
 * records consumed. In a DATA chunk a zero word is a hole. In a slot it ends
 * the batch, unless records follow it: then it is a record claimed and never
 * completed (a signal handler that interrupted the trampoline between its
 * claim and its store jumped out of it), a hole too. */
/* An ARGS event (format/sf_args.h): the function id is in its payload's
 * header; ev->args points at the payload (valid until the next read). */
static enum rec_result decode_args(const unsigned char *p, const unsigned char *end, const struct sf_event *e,
				   struct lr_event *ev, size_t *used)
{
	size_t np = sf_event_payload_count(e->word);
	if (!np && e->word >> SF_KIND_BITS)
		return REC_CORRUPT;
	if ((size_t)(end - p) < sizeof(*e) * (1 + np))
		return REC_CORRUPT; /* payload cut off */
	*used = 1 + np;
	ev->func_id = 0;
	if (np) {
		/* Skipped by its count, never by its contents (lib/arg_values.c
		 * checks those when it shows them). */
		struct sf_args_head h;
		memcpy(&h, p + sizeof(*e), sizeof(h));
		ev->func_id = h.func_id;
		ev->args = p + sizeof(*e);
		ev->args_len = (uint32_t)(np * 8);
		/* Values only: lr_next pairs them with the event after them. */
		ev->args_bare = sf_args_word_values(e->word);
		if (ev->args_bare)
			ev->func_id = 0;
	}
	return REC_EVENT;
}

static enum rec_result decode(const unsigned char *p, const unsigned char *end, int slot, uint64_t base,
			      struct lr_event *ev, size_t *used)
{
	struct sf_event e;
	memcpy(&e, p, sizeof(e));
	*used = 1;
	if (!e.word)
		return slot && !any_later_record(p, end) ? REC_END : REC_HOLE;
	uint32_t kind = e.word & SF_KIND_MASK;
	if (!sf_event_kind_valid(kind))
		return REC_CORRUPT;
	ev->kind = kind;
	ev->func_id = e.word >> SF_KIND_BITS;
	ev->raw_time = sf_event_time(base, e.time_lo);
	ev->has_ext = 0;
	ev->size = ev->align = ev->ptr = ev->old_ptr = ev->site = 0;
	ev->ret_tag = 0;
	ev->args = NULL;
	ev->args_len = 0;
	ev->args_bare = 0;
	if (kind == SF_EV_ARGS)
		return decode_args(p, end, &e, ev, used);
	size_t np = sf_event_payload_records(kind);
	if (np) {
		uint64_t x[4] = {0};
		if ((size_t)(end - p) < sizeof(e) * (1 + np))
			return REC_CORRUPT; /* payload cut off */
		/* one 8-byte load each: a loop here becomes a memcpy call, a third
		 * of the time of reading a log of allocation events */
		const unsigned char *q = p + sizeof(e);
		memcpy(&x[0], q, 8);
		memcpy(&x[1], q + 8, 8);
		if (np > 2)
			memcpy(&x[2], q + 16, 8);
		if (np > 3)
			memcpy(&x[3], q + 24, 8);
		*used = 1 + np;
		ev->has_ext = 1;
		uint64_t sa = 0;
		switch (kind) {
		case SF_EV_HEAP_ALLOC: sa = x[0]; ev->ptr = x[1]; ev->site = x[2]; break;
		case SF_EV_HEAP_FREE: ev->ptr = x[0]; ev->site = x[1]; break;
		case SF_EV_HEAP_REALLOC: sa = x[0]; ev->ptr = x[1]; ev->old_ptr = x[2]; ev->site = x[3]; break;
		default: sa = x[0]; ev->ptr = x[1]; break;
		}
		if (kind >= SF_EV_HEAP_ALLOC && kind <= SF_EV_HEAP_REALLOC) { /* the word's id field is the tag */
			ev->ret_tag = ev->func_id;
			ev->func_id = 0;
		}
		ev->size = sa & ((1ULL << 48) - 1);
		unsigned lg = (unsigned)(sa >> 48);
		ev->align = lg < 64 ? 1ULL << lg : 0;
	}
	return REC_EVENT;
}

static void batch_range(const struct lr_log *log, const struct lr_batch *b, const unsigned char **rec,
			const unsigned char **end)
{
	*rec = log->map + b->off + sizeof(struct sf_chunk);
	*end = *rec + (size_t)b->nrec * sizeof(struct sf_event);
}

/* ---- packed batches (format/packed.h) ---- */

static void packed_start(struct lr_packed *pk, const struct lr_log *log, const struct lr_batch *b)
{
	const uint8_t *p = log->map + b->off + sizeof(struct sf_chunk);
	sf_unpack_init(&pk->un, b->base, p, p + b->bytes);
	pk->left = b->nrec;
	pk->nwin = 0;
	pk->lost = 0;
}

/* The next record of a packed batch, read as decode() reads raw ones: the
 * window holds the event and as many records after it as its payload can
 * take. A malformed stream loses the batch's remaining records, unless the
 * end of the file cut the chunk (a cut raw chunk keeps its complete records
 * and counts no loss either). */
/* How many records decode() needs in the window for the event whose word
 * starts it: the event and its payload (a heap event: 1 + 2 to 4); an
 * ARGS event takes the whole window, which also holds the event after it
 * for pair_values. Reading no further than needed leaves the window empty
 * after a heap event, so the next function event takes packed_decode's
 * direct path, and nothing is left to move: filling the window to its
 * 33 records and moving the rest down after each heap event cost some 70
 * instructions per event of `memory`'s replay. */
static inline __attribute__((always_inline)) uint32_t window_need(const struct sf_event *e)
{
	uint32_t kind = e->word & SF_KIND_MASK;
	if (!e->word || !sf_event_kind_valid(kind))
		return 1;
	return kind == SF_EV_ARGS ? LR_PACKED_WINDOW : 1 + sf_event_payload_records(kind);
}

static enum rec_result packed_decode(struct lr_packed *pk, int cut, uint64_t base, struct lr_event *ev,
				     const uint8_t **at)
{
	if (!pk->nwin && pk->left) {
		/* Most records are function events without payload: straight
		 * into *ev, without the window. */
		int r = sf_unpack_next(&pk->un, &pk->win[0], &pk->at[0]);
		if (r <= 0) {
			if (!cut)
				pk->lost += pk->left;
			pk->left = 0;
			return REC_END;
		}
		pk->left--;
		uint32_t w = pk->win[0].word, kind = w & SF_KIND_MASK;
		if (w && sf_event_kind_valid(kind) && kind != SF_EV_ARGS && !sf_event_payload_records(kind)) {
			ev->kind = kind;
			ev->func_id = w >> SF_KIND_BITS;
			ev->raw_time = sf_event_time(base, pk->win[0].time_lo);
			ev->has_ext = 0;
			ev->size = ev->align = ev->ptr = ev->old_ptr = ev->site = 0;
			ev->args = NULL;
			ev->args_len = 0;
			ev->args_bare = 0;
			*at = pk->at[0];
			return REC_EVENT;
		}
		pk->nwin = 1;
	}
	uint32_t need = pk->nwin ? window_need(&pk->win[0]) : LR_PACKED_WINDOW;
	while (pk->nwin < need && pk->left) {
		int r = sf_unpack_next(&pk->un, &pk->win[pk->nwin], &pk->at[pk->nwin]);
		if (r <= 0) {
			if (!cut) /* a cut chunk ends where the file does */
				pk->lost += pk->left;
			pk->left = 0;
			break;
		}
		if (!pk->nwin++)
			need = window_need(&pk->win[0]);
		pk->left--;
	}
	if (!pk->nwin)
		return REC_END;
	size_t used;
	const unsigned char *w = (const unsigned char *)pk->win;
	enum rec_result r = decode(w, w + pk->nwin * sizeof(struct sf_event), 0, base, ev, &used);
	if (r == REC_EVENT && ev->args) { /* out of the window, which moves below */
		memcpy(pk->args, ev->args, ev->args_len);
		ev->args = pk->args;
	}
	*at = pk->at[0];
	pk->nwin -= (uint32_t)used;
	if (pk->nwin) { /* an ARGS event's read-ahead, or a record decode refused */
		memmove(pk->win, pk->win + used, pk->nwin * sizeof(pk->win[0]));
		memmove(pk->at, pk->at + used, pk->nwin * sizeof(pk->at[0]));
	}
	return r;
}

/* ---- counting ---- */

/* The reference count: every record decoded, as lr_next reads them
 * (lr_count_decoded, for tests). */
static uint64_t packed_count_decoded(const struct lr_log *log, const struct lr_batch *b, uint64_t *lost)
{
	struct lr_packed pk;
	packed_start(&pk, log, b);
	uint64_t n = 0, bad = 0;
	enum rec_result r;
	struct lr_event ev;
	const uint8_t *at;
	while ((r = packed_decode(&pk, b->cut, b->base, &ev, &at)) != REC_END) {
		if (r == REC_EVENT)
			n++;
		else
			bad++;
	}
	*lost = bad + pk.lost;
	return n;
}

static uint64_t batch_count_decoded(const struct lr_log *log, const struct lr_batch *b, uint64_t *lost)
{
	if (b->packed)
		return packed_count_decoded(log, b, lost);
	const unsigned char *p, *end;
	batch_range(log, b, &p, &end);
	uint64_t n = 0, bad = 0;
	while (p < end) {
		struct lr_event ev;
		size_t used;
		enum rec_result r = decode(p, end, b->slot, b->base, &ev, &used);
		if (r == REC_END)
			break;
		if (r == REC_EVENT)
			n++;
		else
			bad++;
		p += used * sizeof(struct sf_event);
	}
	*lost = bad;
	return n;
}

void lr_count_decoded(const struct lr_log *log, const struct lr_thread *t, uint64_t *events, uint64_t *lost)
{
	*events = *lost = 0;
	for (uint32_t i = 0; i < t->nbatch; i++) {
		uint64_t l;
		*events += batch_count_decoded(log, &log->batches[t->batch[i]], &l);
		*lost += l;
	}
}

/* Kinds that decode() finds a whole event in one record (valid, no
 * payload), a bit each. tests/unit/test_log_count.c checks every kind. */
#define ONE_RECORD_KINDS \
	(1u << SF_EV_ENTRY | 1u << SF_EV_EXIT | 1u << SF_EV_TAIL | 1u << SF_EV_UNWIND | 1u << SF_EV_UNWIND_TO | \
	 1u << SF_EV_TAIL_ENTRY)

/* decode()'s count of raw records, *bad += the ones skipped. Opening a log
 * counts every record, so the usual one (a function event) costs a test;
 * anything else (zero words, unknown kinds, payloads) goes to decode(). */
/* ARGS events raw_count has seen (count_events moves them to the thread). */
static _Thread_local uint64_t counted_args;

static uint64_t raw_count(const unsigned char *p, const unsigned char *end, int slot, uint64_t *bad)
{
	uint64_t n = 0;
	while (p < end) {
		uint32_t word;
		memcpy(&word, p + offsetof(struct sf_event, word), sizeof(word));
		if (ONE_RECORD_KINDS >> (word & SF_KIND_MASK) & 1) {
			n++;
			p += sizeof(struct sf_event);
			continue;
		}
		struct lr_event ev;
		size_t used;
		enum rec_result r = decode(p, end, slot, 0, &ev, &used);
		if (r == REC_END)
			break;
		if (r == REC_EVENT)
			n++;
		else
			(*bad)++;
		counted_args += r == REC_EVENT && ev.kind == SF_EV_ARGS;
		p += used * sizeof(struct sf_event);
	}
	return n;
}

/* packed_count_decoded's counts without decoding function events. The
 * records of a packed batch decode as raw ones would, in groups that
 * decode() reads whole: one record per function op, a RAW word with its
 * payload (or what is left of it where the records end). So function ops
 * are counted by sf_unpack_count, each RAW group by raw_count. */
static uint64_t packed_count(const struct lr_batch *b, const uint8_t *p, uint64_t *lost)
{
	struct sf_unpack u;
	sf_unpack_init(&u, b->base, p, p + b->bytes);
	uint32_t left = b->nrec;
	uint64_t n = 0, bad = 0;
	while (left) {
		uint32_t k;
		int r = sf_unpack_count(&u, left, &k);
		n += k;
		left -= k;
		if (r == SF_COUNT_RAW) {
			struct sf_event g[LR_PACKED_WINDOW]; /* a word and its payload records */
			uint32_t ng = 0;
			const uint8_t *at;
			while (left && (r = sf_unpack_next(&u, &g[ng], &at)) > 0) {
				ng++;
				left--;
				if (!u.payload_left || ng == LR_PACKED_WINDOW)
					break;
			}
			const unsigned char *gp = (const unsigned char *)g;
			n += raw_count(gp, gp + ng * sizeof(g[0]), 0, &bad);
		}
		if (r <= 0) {
			/* Malformed or short: the rest is lost, unless the end of
			 * the file cut the chunk. */
			if (!b->cut)
				bad += left;
			break;
		}
	}
	*lost = bad;
	return n;
}

/* Bytes of a batch's payload (packed bytes or raw records). */
static size_t batch_len(const struct lr_batch *b)
{
	return b->packed ? b->bytes : (size_t)b->nrec * sizeof(struct sf_event);
}

/* Events a batch delivers, and records it skips (holes, corrupt ones), from
 * its payload at p. */
static uint64_t batch_count(const struct lr_batch *b, const unsigned char *p, uint64_t *lost)
{
	*lost = 0;
	if (b->packed)
		return packed_count(b, p, lost);
	return raw_count(p, p + batch_len(b), b->slot, lost);
}

static uint64_t batch_count_mapped(const struct lr_log *log, const struct lr_batch *b, uint64_t *lost)
{
	return batch_count(b, log->map + b->off + sizeof(struct sf_chunk), lost);
}

/* Batches up to this size are read into a buffer to be counted. */
#define LR_COUNT_READ_MAX (1u << 20)

/* A batch's payload read into *buf (grown as needed; see read_at for why),
 * or NULL (too big, or the read fell short: the caller counts from the
 * mapping). */
static const unsigned char *batch_read(const struct lr_log *log, const struct lr_batch *b, unsigned char **buf,
				       size_t *cap)
{
	size_t len = batch_len(b);
	if (len > LR_COUNT_READ_MAX)
		return NULL;
	if (len > *cap) {
		*cap = len > 65536 ? len : 65536;
		free(*buf);
		*buf = xmalloc(*cap);
	}
	return read_at(log, b->off + sizeof(struct sf_chunk), *buf, len) < 0 ? NULL : *buf;
}

static int batch_complete_events(const struct lr_log *log, const struct lr_batch *b)
{
	uint64_t lost;
	return (int)batch_count_mapped(log, b, &lost);
}

/* Events and losses per thread; also the truncated chunk's warning. */
static void count_events(struct lr_log *log)
{
	uint64_t released = 0;
	unsigned char *buf = NULL;
	size_t cap = 0;
	for (size_t k = 0; k < log->norder; k++) {
		const struct lr_batch *b = &log->batches[log->order[k]];
		struct lr_thread *t = &log->threads[b->thread];
		const unsigned char *p = batch_read(log, b, &buf, &cap);
		uint64_t lost, events;
		counted_args = 0;
		if (p) {
			events = batch_count(b, p, &lost);
		} else {
			drop_behind(log, &released, b->off);
			events = batch_count_mapped(log, b, &lost);
		}
		t->lost += lost;
		t->events += events;
		t->args_events += counted_args;
		if (log->truncated && log->truncated_batch == (int64_t)log->order[k])
			warn(log, "truncated: log ends mid-chunk at offset %" PRIu64 "; %" PRIu64 " complete events kept",
			     log->truncated_off, events);
	}
	free(buf);
	if (log->truncated && log->truncated_batch < 0 && log->truncated_type)
		warn(log, "truncated: log ends mid-chunk at offset %" PRIu64 "; the %s chunk there is dropped",
		     log->truncated_off, log->truncated_type == SF_CHUNK_OBJECT ? "object" : "unload");
	else if (log->truncated && log->truncated_batch < 0)
		warn(log, "truncated: log ends mid-chunk at offset %" PRIu64 "; 0 complete events kept",
		     log->truncated_off);
	else if (log->truncated && !log->batches[log->truncated_batch].live)
		warn(log, "truncated: log ends mid-chunk at offset %" PRIu64 " (a duplicate batch)", log->truncated_off);
}

/* ---- time ---- */

/* TSC fit: a line through the start pair (so the start maps to 0 exactly)
 * whose slope is the least-squares fit of every later calibration pair
 * (header last pair, chunk pairs). Pairs before the start or with a zero
 * member are ignored. Degenerate (no pair with a positive tsc and mono span
 * from the anchor): 1 tick = 1 ns, with a warning. Without a start pair the
 * anchor is the pair with the smallest tsc. */
static void fit_clock(struct lr_log *log)
{
	struct lr_info *in = &log->info;
	add_pair(log, in->last_tsc, in->last_mono_ns);
	uint64_t a_tsc = in->start_tsc, a_mono = in->start_mono_ns;
	if (!a_tsc || !a_mono) {
		a_tsc = UINT64_MAX;
		for (size_t i = 0; i < log->npairs; i++)
			if (log->pairs[i].tsc < a_tsc) {
				a_tsc = log->pairs[i].tsc;
				a_mono = log->pairs[i].mono;
			}
	}
	long double sxx = 0, sxy = 0;
	uint32_t used = 0;
	for (size_t i = 0; i < log->npairs; i++) {
		const struct lr_pair *q = &log->pairs[i];
		if (q->tsc <= a_tsc || q->mono <= a_mono)
			continue;
		long double x = (long double)(q->tsc - a_tsc), y = (long double)(q->mono - a_mono);
		sxx += x * x;
		sxy += x * y;
		used++;
	}
	log->anchor_tsc = a_tsc == UINT64_MAX ? 0 : a_tsc;
	/* Time 0 is the program start (start_mono_ns), which the anchor may not be. */
	log->intercept = a_mono > in->start_mono_ns && in->start_mono_ns ? (double)(a_mono - in->start_mono_ns) : 0;
	if (in->counter_hz) {
		/* The writer knew the counter's frequency (aarch64): exact. */
		log->slope = 1e9 / (double)in->counter_hz;
		in->calib_pairs = used + 1;
	} else if (used && sxx > 0 && sxy > 0) {
		log->slope = (double)(sxy / sxx);
		in->calib_pairs = used + 1;
	} else {
		log->slope = 1.0;
		in->calib_degenerate = 1;
		if (in->clock == SF_CLOCK_TSC)
			warn(log, "clock calibration unusable (no two pairs span any time): 1 TSC tick taken as 1 ns");
	}
	in->tsc_ns_per_tick = log->slope;
	/* Net times: the runtime's cost figures in ns (lr_info). */
	double unit = in->clock == SF_CLOCK_TSC ? log->slope : 1.0;
	in->cost_known = in->cost_parent_raw256 || in->cost_child_raw256;
	in->cost_parent_ns = (double)in->cost_parent_raw256 * unit / 256.0;
	in->cost_child_ns = (double)in->cost_child_raw256 * unit / 256.0;
	in->cost_lo_ns = (double)(in->cost_spread_raw256 & UINT32_MAX) * unit / 256.0;
	in->cost_hi_ns = (double)(in->cost_spread_raw256 >> 32) * unit / 256.0;
	in->cost_exit_known = in->cost_exit_raw256 != 0;
	in->cost_exit_parent_ns = (double)(in->cost_exit_raw256 & UINT32_MAX) * unit / 256.0;
	in->cost_exit_child_ns = (double)(in->cost_exit_raw256 >> 32) * unit / 256.0;
	in->tsc_offset_ns = log->intercept - log->slope * (double)(int64_t)(log->anchor_tsc - in->start_tsc);
	log->slope_q48 = log->slope < 32768.0 ? (uint64_t)(log->slope * 0x1p48 + 0.5) : 0;
	log->intercept_q48 = (i128)(uint64_t)log->intercept << 48;
}

uint64_t lr_time_ns(const struct lr_log *log, uint64_t raw)
{
	if (log->info.clock != SF_CLOCK_TSC)
		return raw > log->info.start_mono_ns ? raw - log->info.start_mono_ns : 0;
	if (log->slope_q48) {
		i128 q = (i128)(int64_t)(raw - log->anchor_tsc) * (i128)log->slope_q48 + log->intercept_q48;
		if (q <= 0)
			return 0;
		q = (q + ((i128)1 << 47)) >> 48; /* rounded to the nearest ns */
		return q >= (i128)UINT64_MAX ? UINT64_MAX : (uint64_t)q;
	}
	double ns = log->intercept + log->slope * (double)(int64_t)(raw - log->anchor_tsc);
	if (!(ns > 0))
		return 0;
	if (ns >= 1.8e19)
		return UINT64_MAX;
	return (uint64_t)(ns + 0.5);
}

uint64_t lr_start_realtime_ns(const struct lr_log *log)
{
	const struct lr_info *i = &log->info;
	return i->start_realtime_ns + (i->fork_time ? lr_time_ns(log, i->fork_time) : 0);
}

/* ---- open / close ---- */

/* Holes of a log on tmpfs (space the runtime claimed but could not write:
 * the disk was full) are mapped as anonymous zero pages. Reading a tmpfs
 * hole through a file mapping allocates a page, and on a full tmpfs that
 * fault is a SIGBUS. (Other filesystems read holes as zeros for free.) */
static void map_holes_as_zero(int fd, unsigned char *m, uint64_t size)
{
	struct statfs fs;
	if (fstatfs(fd, &fs) < 0 || fs.f_type != TMPFS_MAGIC)
		return;
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t off = 0;
	while (off < size) {
		off_t hole = lseek(fd, (off_t)off, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole >= size)
			return;
		off_t data = lseek(fd, hole, SEEK_DATA);
		uint64_t end = data < 0 ? size : (uint64_t)data;
		uint64_t lo = ((uint64_t)hole + page - 1) & ~(page - 1);
		uint64_t hi = end >= size ? (size + page - 1) & ~(page - 1) : end & ~(page - 1);
		if (hi > lo)
			mmap(m + lo, hi - lo, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		off = end;
	}
}

static int map_file(struct lr_log *log, char *err, size_t errlen)
{
	const char *path = log->info.path;
	/* O_NONBLOCK: a FIFO given as a log must not block the open. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return fail(err, errlen, path, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return fail(err, errlen, path, "cannot stat: %s", strerror(e));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return fail(err, errlen, path, "is a directory");
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, errlen, path, "not a regular file");
	}
	if (st.st_size == 0) {
		close(fd);
		return fail(err, errlen, path, "empty file");
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int e = errno;
	if (m == MAP_FAILED) {
		close(fd);
		return fail(err, errlen, path, "cannot map: %s", strerror(e));
	}
	map_holes_as_zero(fd, m, (uint64_t)st.st_size);
	log->fd = fd;
	madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
	log->map = m;
	log->map_len = (size_t)st.st_size;
	log->info.file_size = (uint64_t)st.st_size;
	log->info.mode = (unsigned)(st.st_mode & 07777);
	return 0;
}

struct lr_log *lr_open(const char *path, char *err, size_t errlen)
{
	struct lr_log *log = xcalloc(1, sizeof(*log));
	log->fd = -1;
	log->info.path = xstrdup(path);
	if (map_file(log, err, errlen) < 0 || read_header(log, err, errlen) < 0) {
		lr_close(log);
		return NULL;
	}
	index_chunks(log);
	check_chunk_count(log);
	apply_unloads(log);
	sort_objects(log);
	sort_threads(log);
	build_thread_batches(log);
	build_order(log);
	count_events(log);
	close(log->fd);
	log->fd = -1;
	fit_clock(log);
	apply_switches(log);
	if (log->info.ring_bytes)
		find_before_window(log);
	for (size_t i = 0; i < log->nthreads; i++)
		log->threads[i].ends_at_snapshot = log->info.snapshot != 0;
	if (log->warnings_lost) {
		/* The spare slot warn() reserved. */
		char buf[96];
		snprintf(buf, sizeof(buf), "... and %" PRIu64 " more warnings", log->warnings_lost);
		log->warnings[log->nwarnings++] = xstrdup(buf);
	}
	return log;
}

void lr_close(struct lr_log *log)
{
	if (!log)
		return;
	if (log->map)
		munmap((void *)log->map, log->map_len);
	if (log->fd >= 0)
		close(log->fd);
	for (size_t i = 0; i < log->nobjects; i++)
		free((void *)log->objects[i].path);
	free(log->objects);
	for (size_t i = 0; i < log->nuntraced; i++)
		free((void *)log->untraced[i].path);
	free(log->untraced);
	free(log->by_first_id);
	free(log->unloads);
	free(log->switches);
	hm_free(&log->argspec_at);
	hm_free(&log->args_seen);
	free(log->argspec);
	free(log->pause_ns);
	free(log->switch_ns);
	for (size_t i = 0; i < log->nthreads; i++)
		free(log->threads[i].batch), free(log->threads[i].before), free(log->threads[i].before_pos);
	free(log->threads);
	hm_free(&log->by_serial);
	free(log->batches);
	free(log->order);
	free(log->pairs);
	for (size_t i = 0; i < log->nwarnings; i++)
		free(log->warnings[i]);
	free(log->warnings);
	free(log->info.argv);
	free(log->cmdline);
	free((void *)log->info.path);
	free(log);
}

/* ---- accessors ---- */

const struct lr_info *lr_info(const struct lr_log *log) { return &log->info; }
size_t lr_nobjects(const struct lr_log *log) { return log->nobjects; }
size_t lr_nthreads(const struct lr_log *log) { return log->nthreads; }
int lr_truncated(const struct lr_log *log) { return log->truncated ? 1 : log->chunks_missing ? 2 : 0; }

int lr_exited_normally(const struct lr_info *info)
{
	uint32_t src = (uint32_t)(info->exit_state >> 32), st = (uint32_t)info->exit_state;
	if (info->snapshot)
		return 0;
	if (src == SF_EXIT_CALLED || src == SF_EXIT_EXITED)
		return 1;
	if (src == SF_EXIT_REAPED)
		return WIFEXITED(st);
	return info->state == SF_STATE_EXITED;
}

const struct lr_object *lr_object_at(const struct lr_log *log, size_t i)
{
	return i < log->nobjects ? &log->objects[i] : NULL;
}

const struct lr_object *lr_untraced_at(const struct lr_log *log, uint64_t addr)
{
	const struct lr_object *best = NULL;
	for (size_t i = 0; i < log->nuntraced; i++) { /* the latest chunk wins (an object loaded at a freed place) */
		const struct lr_object *u = &log->untraced[i];
		if (u->load_bias <= addr && addr < u->end)
			best = u;
	}
	return best;
}

const struct lr_thread *lr_thread_at(const struct lr_log *log, size_t i)
{
	return i < log->nthreads ? &log->threads[i] : NULL;
}

size_t lr_nwarnings(const struct lr_log *log) { return log->nwarnings; }

const char *lr_warning(const struct lr_log *log, size_t i)
{
	return i < log->nwarnings ? log->warnings[i] : NULL;
}

int lr_func(const struct lr_log *log, uint32_t func_id, const struct lr_object **object, uint64_t *vaddr)
{
	size_t lo = 0, hi = log->nobjects;
	/* Last object with first_id <= func_id. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (log->objects[log->by_first_id[mid]].first_id <= func_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	const struct lr_object *o = &log->objects[log->by_first_id[lo - 1]];
	if ((uint64_t)func_id >= (uint64_t)o->first_id + o->count)
		return -1;
	if (object)
		*object = o;
	if (vaddr)
		*vaddr = o->funcs[func_id - o->first_id];
	return 0;
}

void lr_summary(const struct lr_log *log, struct lr_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < log->nthreads; i++) {
		s->events += log->threads[i].events;
		s->lost += log->threads[i].lost;
	}
	s->threads = log->nthreads;
	s->objects = log->nobjects;
	s->dropped = log->info.dropped_events;
	s->write_errors = log->info.write_errors;
	s->warnings = log->nwarnings + log->warnings_lost - (log->warnings_lost ? 1 : 0);
	s->pid = log->info.pid;
	s->state = log->info.state;
}

/* ---- iteration ---- */

/* Ring logs: per thread, the frames open at the start of what the ring
 * kept. Their exits come with nothing of theirs open below (everything
 * entered later is nested inside and closed first); an exit with a
 * non-empty stack that does not match is left to frames.c's repairs. */
/* Depths of frames open at once, outermost first: each deeper than the
 * last, from 1 (a runtime whose depths disagree with the events: none). */
static int positions_valid(const uint64_t *pos, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (pos[i] <= (i ? pos[i - 1] : 0))
			return 0;
	return 1;
}

static void find_before_window(struct lr_log *log)
{
	size_t cap = 64;
	uint32_t *stack = xmalloc(cap * sizeof(uint32_t));
	for (size_t ti = 0; ti < log->nthreads; ti++) {
		struct lr_thread *t = &log->threads[ti];
		size_t depth = 0, nmiss = 0, miss_cap = 0;
		uint32_t *miss = NULL;
		uint64_t *pos = NULL; /* each miss's depth: the frames outside when it exits */
		struct lr_iter it;
		struct lr_event ev;
		/* With switches (sftrace resume / pause): a thread that lost no
		 * batch has no frame before its window, and an exit after a
		 * switch is one in flight there, which frames.c repairs; only
		 * exits before the first switch in the window are candidates. */
		if (log->nswitches && (!t->nbatch || log->batches[t->batch[0]].seq == 0))
			continue;
		uint64_t until = UINT64_MAX;
		int first = 1;
		/* Frames open outside stack[0, depth): at first every one open
		 * at the window's start (its first batch's depth, when the
		 * runtime wrote it), less each found here as it exits. */
		uint64_t d0 = t->nbatch ? log->batches[t->batch[0]].depth0 : 0;
		int64_t start = d0 ? (int64_t)(d0 - 1) : 0, outer = start;
		lr_iter_init_thread(&it, log, t);
		while (lr_next(&it, &ev)) {
			if (first) {
				until = first_switch_after(log, ev.time_ns);
				first = 0;
			}
			if (ev.time_ns > until)
				break;
			if (ev.kind == SF_EV_ARGS && ev.args && ev.args_len >= sizeof(struct sf_args_head)) {
				struct sf_args_head h;
				memcpy(&h, ev.args, sizeof(h));
				if (h.nitems)
					hm_put(&log->args_seen, (uint64_t)h.func_id << 1 | (h.flags & SF_ARGS_RET), NULL);
			}
			if (ev.kind == SF_EV_ENTRY) {
				if (depth == cap)
					stack = xrealloc(stack, (cap *= 2) * sizeof(uint32_t));
				stack[depth++] = ev.func_id;
			} else if (ev.kind == SF_EV_EXIT || sf_kind_is_tail(ev.kind)) {
				size_t d = depth;
				while (d && stack[d - 1] != ev.func_id)
					d--;
				if (d) {
					depth = d - 1;
				} else {
					/* A frame from before the window: the ones
					 * begun since were abandoned (a landing the
					 * runtime did not see), as frames.c closes
					 * the frames above an exit's. */
					depth = 0;
					if (nmiss == miss_cap) {
						miss_cap = miss_cap ? 2 * miss_cap : 8;
						miss = xrealloc(miss, miss_cap * sizeof(uint32_t));
						pos = xrealloc(pos, miss_cap * sizeof(uint64_t));
					}
					pos[nmiss] = outer > 0 ? (uint64_t)outer : 0;
					miss[nmiss++] = ev.func_id;
					outer--;
				}
			} else if (ev.kind == SF_EV_UNWIND) {
				size_t n = ev.func_id;
				depth = n < depth ? depth - n : 0;
			} else if (ev.kind == SF_EV_UNWIND_TO) {
				depth -= fr_unwind_to(depth, &outer, ev.func_id);
			}
		}
		t->outer = start > (int64_t)nmiss ? (uint64_t)(start - (int64_t)nmiss) : 0;
		/* Found innermost first; delivered outermost first. */
		for (size_t i = 0; i < nmiss / 2; i++) {
			uint32_t x = miss[i];
			miss[i] = miss[nmiss - 1 - i];
			miss[nmiss - 1 - i] = x;
			uint64_t y = pos[i];
			pos[i] = pos[nmiss - 1 - i];
			pos[nmiss - 1 - i] = y;
		}
		t->before = miss;
		t->before_pos = d0 && positions_valid(pos, nmiss) ? pos : (free(pos), NULL);
		t->nbefore = (uint32_t)nmiss;
		log->info.before_window += nmiss;
	}
	free(stack);
}

size_t lr_inherited_frames(const struct lr_log *log, const struct lr_thread *t, uint32_t **ids)
{
	*ids = NULL;
	/* A fork child's thread that made the fork has the child's pid as
	 * its tid; the runtime counts its depth from 0 in the child (buffer.c,
	 * sf_buffer_after_fork_child), so how many frames it inherited is not
	 * written: every exit that matches nothing open is one of them, as
	 * frames.c drops it. Other threads of the child began there. */
	if (log->info.ring_bytes || !log->info.fork_time || t->tid != log->info.pid)
		return 0;
	int64_t outer = 0; /* landings count the child's frames only */
	size_t depth = 0, cap = 64, n = 0, ncap = 0;
	uint32_t *stack = xmalloc(cap * sizeof(*stack)), *miss = NULL;
	uint64_t until = UINT64_MAX;
	int first = 1;
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init_thread(&it, log, t);
	while (lr_next(&it, &ev)) {
		/* after a switch the runtime counts depths afresh (find_before_window) */
		if (first)
			until = first_switch_after(log, ev.time_ns);
		first = 0;
		if (ev.time_ns > until)
			break;
		if (ev.kind == SF_EV_ENTRY) {
			if (depth == cap)
				stack = xrealloc(stack, (cap *= 2) * sizeof(*stack));
			stack[depth++] = ev.func_id;
		} else if (ev.kind == SF_EV_EXIT || sf_kind_is_tail(ev.kind)) {
			size_t d = depth;
			while (d && stack[d - 1] != ev.func_id)
				d--;
			if (d) {
				depth = d - 1;
				continue;
			}
			depth = 0; /* as frames.c closes the frames above an exit's */
			if (n == ncap)
				miss = xrealloc(miss, (ncap = ncap ? 2 * ncap : 8) * sizeof(*miss));
			miss[n++] = ev.func_id;
		} else if (ev.kind == SF_EV_UNWIND) {
			depth = ev.func_id < depth ? depth - ev.func_id : 0;
		} else if (ev.kind == SF_EV_UNWIND_TO) {
			depth -= fr_unwind_to(depth, &outer, ev.func_id);
		}
	}
	free(stack);
	for (size_t i = 0; i < n / 2; i++) { /* found innermost first */
		uint32_t x = miss[i];
		miss[i] = miss[n - 1 - i];
		miss[n - 1 - i] = x;
	}
	*ids = miss;
	return n;
}

void lr_iter_init(struct lr_iter *it, const struct lr_log *log)
{
	memset(it, 0, sizeof(*it));
	it->log = log;
}

void lr_iter_init_thread(struct lr_iter *it, const struct lr_log *log, const struct lr_thread *thread)
{
	lr_iter_init(it, log);
	it->only = thread;
}

static int next_batch(struct lr_iter *it)
{
	const struct lr_log *log = it->log;
	uint32_t bi;
	if (it->only) {
		if (it->next >= it->only->nbatch)
			return 0;
		bi = it->only->batch[it->next++];
	} else {
		if (it->next >= log->norder)
			return 0;
		bi = log->order[it->next++];
	}
	const struct lr_batch *b = &log->batches[bi];
	drop_behind(log, &it->released, b->off);
	batch_range(log, b, &it->rec, &it->end);
	it->packed = b->packed;
	it->cut = b->cut;
	if (b->packed) {
		it->rec = it->end; /* read through pk instead */
		packed_start(&it->pk, log, b);
	}
	it->thread = &log->threads[b->thread];
	if (it->thread->nbefore && it->thread->batch[0] == bi) {
		it->pre_thread = it->thread;
		it->pre_left = it->thread->nbefore;
		it->pre_raw_valid = 0;
	}
	it->seq = b->seq;
	it->slot = b->slot;
	it->base = b->base;
	it->first = 1;
	it->win_first = log->info.ring_bytes && it->thread->batch[0] == bi;
	return 1;
}

/* lr_iter.win_first's event ev, or an entry that fell out of the window
 * (before_window): 1 if it came without the values its function asks for
 * (an ARGSPEC entry for it, and its ARGS event fell out), then ev is an
 * ARGS event marking them `<unrecorded>` and the event waits in it->hold. */
static int window_lost_args(struct lr_iter *it, struct lr_event *ev, unsigned char *buf)
{
	int ret = ev->kind == SF_EV_EXIT || sf_kind_is_tail(ev->kind);
	uint64_t key = (uint64_t)ev->func_id << 1 | ret;
	if ((ev->kind != SF_EV_ENTRY && !ret) ||
	    (!hm_find(&it->log->argspec_at, key) && !hm_find(&it->log->args_seen, key)))
		return 0;
	struct sf_args_head h = {ev->func_id, (uint8_t)(ret ? SF_ARGS_RET : 0), 1, 2};
	uint8_t item[2] = {SF_ARG_SLOT_REST, sf_arg_fmt(SF_AT_NONE, 8)};
	memset(buf, 0, sizeof(it->win_args));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), item, sizeof(item));
	it->hold = *ev;
	it->held = 1;
	ev->kind = SF_EV_ARGS;
	ev->args = buf;
	ev->args_len = sizeof(it->win_args);
	return 1;
}

/* A values-only ARGS event (ev->args_bare) as the ARGS event it stands
 * for: the function id and direction of the event after it (next, NULL
 * if none), the items from the log's spec, the FIXED payload rebuilt
 * into it->vargs (format/sf_args.h). Without them, an empty (filler) ARGS
 * event, which readers skip. */
static void pair_values(struct lr_iter *it, struct lr_event *ev, const struct sf_event *next)
{
	uint32_t kind = next ? next->word & SF_KIND_MASK : 0, id = next ? next->word >> SF_KIND_BITS : 0;
	int ret = kind == SF_EV_EXIT || sf_kind_is_tail(kind);
	const uint64_t *at = kind == SF_EV_ENTRY || ret ? hm_find(&it->log->argspec_at, (uint64_t)id << 1 | ret) : NULL;
	unsigned n = at ? sf_args_expand(it->log->argspec + *at - 1, id, ev->args, ev->args_len / 8, it->vargs) : 0;
	ev->args_bare = 0;
	ev->func_id = n ? id : 0;
	ev->args = n ? it->vargs : NULL;
	ev->args_len = 8 * n;
}

static void fill_event(struct lr_iter *it, struct lr_event *ev, const unsigned char *p)
{
	ev->thread = it->thread;
	ev->time_ns = ev->rec_ns = lr_time_ns(it->log, ev->raw_time);
	ev->stall_ns = 0;
	if (it->first && it->base > ev->raw_time) {
		uint64_t resumed = lr_time_ns(it->log, it->base);
		ev->stall_ns = resumed > ev->time_ns ? resumed - ev->time_ns : 0;
	}
	it->first = 0;
	ev->offset = (uint64_t)(p - it->log->map);
	ev->seq = it->seq;
	ev->in_slot = it->slot;
	ev->before_window = 0;
	ev->pos = 0;
}

int lr_next(struct lr_iter *it, struct lr_event *ev)
{
	if (it->held) { /* after its window_lost_args mark */
		*ev = it->hold;
		it->held = 0;
		return 1;
	}
	for (;;) {
		if (it->pre_left && it->pre_thread == it->thread) {
			/* Ring: the entries that fell out, outermost first, before
			 * anything of the thread's first batch, at the time of its
			 * first recorded event (the batch's base if it has none). A
			 * ring log's batches are SLOT chunks (raw records), never
			 * packed. */
			if (!it->pre_raw_valid) {
				struct lr_event first;
				size_t used;
				const unsigned char *p = it->rec;
				while (p < it->end && decode(p, it->end, it->slot, it->base, &first, &used) != REC_EVENT)
					p += used * sizeof(struct sf_event);
				it->pre_raw = p < it->end ? first.raw_time : it->base;
				it->pre_raw_valid = 1;
			}
			const struct lr_thread *t = it->pre_thread;
			memset(ev, 0, sizeof(*ev));
			ev->thread = t;
			ev->kind = SF_EV_ENTRY;
			ev->pos = t->before_pos ? t->before_pos[t->nbefore - it->pre_left] : 0;
			ev->func_id = t->before[t->nbefore - it->pre_left--];
			ev->raw_time = it->pre_raw;
			ev->time_ns = ev->rec_ns = lr_time_ns(it->log, ev->raw_time);
			ev->seq = it->seq;
			ev->in_slot = it->slot;
			ev->before_window = 1;
			/* Its ARGS event fell out with it: the values its spec
			 * promises show <unrecorded>, not as no parameters. */
			if (window_lost_args(it, ev, it->pre_args))
				ev->before_window = 0; /* the mark; the entry (held) is */
			return 1;
		}
		if (it->packed) {
			const uint8_t *at;
			enum rec_result r;
			while ((r = packed_decode(&it->pk, it->cut, it->base, ev, &at)) != REC_END) {
				if (r == REC_EVENT) {
					if (ev->args_bare) /* the window holds the event after it, if any */
						pair_values(it, ev, it->pk.nwin ? &it->pk.win[0] : NULL);
					fill_event(it, ev, at);
					return 1;
				}
			}
			it->packed = 0;
		}
		while (it->rec < it->end) {
			size_t used;
			const unsigned char *p = it->rec;
			enum rec_result r = decode(p, it->end, it->slot, it->base, ev, &used);
			if (r == REC_END) {
				it->rec = it->end;
				break;
			}
			it->rec += used * sizeof(struct sf_event);
			if (r != REC_EVENT)
				continue;
			if (ev->args_bare) {
				struct sf_event next;
				if (it->rec < it->end)
					memcpy(&next, it->rec, sizeof(next));
				pair_values(it, ev, it->rec < it->end ? &next : NULL);
			}
			fill_event(it, ev, p);
			if (it->win_first && (ev->kind != SF_EV_ARGS || (ev->args && ev->args_len >= 8 && ev->args[5]))) {
				/* a filler (no items, byte 5 of the header)
				 * does not count; an ARGS event with values is
				 * its event's own */
				it->win_first = 0;
				window_lost_args(it, ev, it->win_args);
			}
			return 1;
		}
		if (!next_batch(it))
			return 0;
	}
}

int lr_foreach_event(const struct lr_log *log, int (*cb)(void *ctx, const struct lr_event *ev), void *ctx)
{
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init(&it, log);
	while (lr_next(&it, &ev)) {
		int r = cb(ctx, &ev);
		if (r)
			return r;
	}
	return 0;
}

const char *lr_kind_name(uint32_t kind)
{
	static const char *const names[] = {"?", "ENTRY", "EXIT", "TAIL", "ALLOC", "DEALLOC", "RALLOC",
					    "RDEALLOC", "UNWIND", "UNWIND", "MALLOC", "FREE", "REALLOC", "ARGS",
					    "?", "TAIL" /* kind 15: to a patched entry */};
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

const char *lr_syscall_name(uint32_t machine, uint32_t nr)
{
	static const struct {
		uint16_t x86, a64;
		const char *name;
	} t[] = {
		{14, 135, "rt_sigprocmask"}, {202, 98, "futex"}, {39, 172, "getpid"}, {186, 178, "gettid"},
		{9, 222, "mmap"}, {11, 215, "munmap"}, {231, 94, "exit_group"}, {18, 68, "pwrite64"},
		{296, 70, "pwritev"}, {285, 47, "fallocate"}, {257, 56, "openat"}, {3, 57, "close"},
		{5, 80, "fstat"}, {72, 25, "fcntl"}, {10, 226, "mprotect"}, {0, 63, "read"}, {1, 64, "write"},
		{41, 198, "socket"}, {42, 203, "connect"}, {46, 211, "sendmsg"}, {47, 212, "recvmsg"},
		{54, 208, "setsockopt"}, {55, 209, "getsockopt"}, {110, 173, "getppid"}, {302, 261, "prlimit64"},
		{93, 55, "fchown"}, {107, 175, "geteuid"}, {234, 131, "tgkill"}, {262, 79, "newfstatat"},
		{56, 220, "clone"}, {436, 436, "close_range"}, {449, 449, "futex_waitv"}, {157, 167, "prctl"},
		{60, 93, "exit"}, {228, 113, "clock_gettime"}, {24, 124, "sched_yield"}, {35, 101, "nanosleep"},
		{108, 177, "getegid"}, {13, 134, "rt_sigaction"}, {59, 221, "execve"}, {269, 48, "faccessat"},
		{61, 260, "wait4"}
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if ((machine == 183 ? t[i].a64 : t[i].x86) == nr)
			return t[i].name;
	return NULL;
}
