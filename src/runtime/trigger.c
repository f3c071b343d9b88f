/* record --ring --trigger: functions whose entry, or a call longer than a
 * duration, asks for a snapshot (snapshot.c).
 *
 * SFTRACE_TRIGGERS names a file in the filter-file format (format/
 * filter_file.h) that record wrote: `object BUILD-ID PATH` lines, then one
 * `0xADDR DUR_NS NAME` line per trigger function (DUR_NS 0: on entry).
 * Only those functions' sleds are patched with the *_mono trampolines
 * (SF_VARIANT_SLOW), which send every event of theirs through the C slow
 * path; there sf_trigger_event looks the function up. Every other function
 * keeps the fast path and pays nothing. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/filter_file.h"
#include "runtime/runtime.h"

#define MAX_TRIGGERS 64
#define MAX_TRIGGER_OBJECTS 16
#define SLOW_DEPTH 32 /* nested calls of slow triggers tracked per thread */

struct trigger {
	uint32_t obj;      /* index into objs */
	uint32_t func_id;  /* 0 until the object is patched */
	uint64_t vaddr;
	uint64_t dur_ns;   /* 0: on entry */
};

static struct {
	struct trigger t[MAX_TRIGGERS];
	uint32_t n;
	struct {
		uint8_t build_id[64];
		int build_id_len;
		char path[1024];
	} objs[MAX_TRIGGER_OBJECTS];
	uint32_t nobjs;
} T;

uint32_t sf_trigger_count SF_HIDDEN; /* triggers with a function id: the slow path looks only then */

/* Per thread: open calls of slow triggers (trigger index, entry time). */
struct slow_stack {
	uint32_t depth;
	uint8_t idx[SLOW_DEPTH];
	uint64_t t[SLOW_DEPTH];
};
#ifdef SF_ARCH_SHADOW
/* In the shadow array's mapping (sf_shadow_extra), not static TLS; a
 * thread without one (its mapping failed, counted at exit) tracks none. */
_Static_assert(sizeof(struct slow_stack) <= SF_SHADOW_EXTRA, "fits after the shadow array");
static struct slow_stack *slow_of(void)
{
	return sf_shadow_extra(&sf_self);
}
#else
static __thread struct slow_stack slow __attribute__((tls_model("initial-exec")));
static struct slow_stack *slow_of(void)
{
	return &slow;
}
#endif

static int on_object(void *ctx, const char *bid, const char *path)
{
	(void)ctx;
	if (T.nobjs == MAX_TRIGGER_OBJECTS)
		return 1;
	size_t n = strlen(path);
	if (n >= sizeof(T.objs[0].path))
		return 1;
	T.objs[T.nobjs].build_id_len = ff_build_id_from_hex(bid, T.objs[T.nobjs].build_id, 64);
	memcpy(T.objs[T.nobjs].path, path, n + 1);
	T.nobjs++;
	return 0;
}

static int on_func(void *ctx, uint64_t vaddr, const char *rest)
{
	(void)ctx;
	if (T.n == MAX_TRIGGERS)
		return 1;
	uint64_t dur = 0;
	const char *p = rest;
	if (*p < '0' || *p > '9')
		return 1;
	for (; *p >= '0' && *p <= '9'; p++)
		dur = dur * 10 + (uint64_t)(*p - '0');
	T.t[T.n++] = (struct trigger){.obj = T.nobjs - 1, .vaddr = vaddr, .dur_ns = dur};
	return 0;
}

void sf_trigger_init(void)
{
	const char *path = getenv(SF_ENV(TRIGGERS));
	if (!path || !path[0] || !sf_config.ring_slots)
		return;
	/* record writes it in its private directory: checked (trust.c), and
	 * read into private memory. */
	const char *why = NULL;
	size_t len = 0, map_len = 0;
	char *text = sf_trust_load(path, 1, 0, &len, &map_len, &why);
	if (!text) {
		sf_rt_message("cannot read triggers ", path, why);
		return;
	}
	struct ff_handler h = {NULL, on_object, on_func};
	char err[256];
	if (ff_parse(text, len, &h, NULL, err, sizeof(err)) < 0) {
		T.n = 0;
		sf_rt_message("bad triggers ", path, err);
	}
	munmap(text, map_len);
}

static int same_object(const struct sf_object_rt *o, uint32_t i)
{
	if (o->info.build_id_len && T.objs[i].build_id_len > 0)
		return o->info.build_id_len == T.objs[i].build_id_len &&
		       !memcmp(o->info.build_id, T.objs[i].build_id, (size_t)o->info.build_id_len);
	return !strcmp(o->path, T.objs[i].path);
}

void sf_trigger_select(const struct sf_object_rt *o, uint64_t vaddr, uint32_t func_id, uint8_t *variant)
{
	/* Under --within a trigger keeps its gate or window count, in front
	 * of the trampolines that send every event to the slow path. Before,
	 * its sleds kept the within trampolines, whose events never reach the
	 * slow path, and the trigger never fired (skepticS, issue 29). */
	uint8_t to = *variant == SF_VARIANT_PLAIN    ? SF_VARIANT_SLOW
		     : *variant == SF_VARIANT_GATED  ? SF_VARIANT_SLOW_GATED
		     : *variant == SF_VARIANT_WINDOW ? SF_VARIANT_SLOW_WINDOW
						     : *variant;
	for (uint32_t i = 0; i < T.n; i++) {
		if (T.t[i].vaddr != vaddr || !same_object(o, T.t[i].obj))
			continue;
		*variant = to;
		if (!T.t[i].func_id) {
			T.t[i].func_id = func_id;
			__atomic_add_fetch(&sf_trigger_count, 1, __ATOMIC_RELEASE);
		}
	}
}

/* Whether func_id is a trigger's (buffer.c's drop_under_claim: only its
 * events need the slow path when dropped). Read without a lock: a
 * trigger's id is set (sf_trigger_select) before its sleds are patched. */
int sf_trigger_watches(uint32_t func_id)
{
	for (uint32_t i = 0; i < T.n; i++)
		if (__atomic_load_n(&T.t[i].func_id, __ATOMIC_RELAXED) == func_id)
			return 1;
	return 0;
}

/* Raw clock ticks -> ns (TSC: the slope since start; off the hot path). */
static uint64_t ticks_to_ns(uint64_t ticks)
{
	if (sf_config.clock != SF_CLOCK_TSC)
		return ticks;
	uint64_t dt = sf_now_raw() - sf_start_tsc, dn = sf_mono_ns() - sf_start_mono;
	return dt ? (uint64_t)((unsigned __int128)ticks * dn / dt) : ticks;
}

/* An event of a trigger function, after it was stored: a snapshot frozen
 * at its time (snapshot.c). */
void sf_trigger_event(uint32_t func_id, uint32_t kind, uint64_t time)
{
	for (uint32_t i = 0; i < T.n; i++) {
		if (T.t[i].func_id != func_id)
			continue;
		if (!T.t[i].dur_ns) {
			if (kind == SF_EV_ENTRY)
				sf_snapshot_trigger(SF_SNAP_ENTRY, func_id, time, 0);
			continue;
		}
		struct slow_stack *s = slow_of();
		if (!s)
			continue;
		if (kind == SF_EV_ENTRY) {
			if (s->depth < SLOW_DEPTH) {
				s->idx[s->depth] = (uint8_t)i;
				s->t[s->depth] = time;
			}
			s->depth++;
			continue;
		}
		if (kind != SF_EV_EXIT && !sf_kind_is_tail(kind))
			continue;
		/* The innermost open call of this trigger (calls abandoned by
		 * unwinding above it are dropped with it). */
		uint32_t d = s->depth < SLOW_DEPTH ? s->depth : SLOW_DEPTH;
		while (d && s->idx[d - 1] != i)
			d--;
		if (!d)
			continue;
		uint64_t began = s->t[d - 1];
		s->depth = d - 1;
		uint64_t ns = time > began ? ticks_to_ns(time - began) : 0;
		if (ns > T.t[i].dur_ns)
			sf_snapshot_trigger(SF_SNAP_SLOW, func_id, time, ns);
	}
}
