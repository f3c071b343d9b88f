/* Per-thread buffers and the slow path.
 *
 * A thread's buffer is the payload of a slot, a region of the log file that
 * the runtime keeps mapped MAP_SHARED: events stored by the trampolines are
 * in the page cache at once. When the slot fills, the slow path hands the
 * batch to the file as a DATA chunk (one pwritev), bumps the batch number in
 * the slot header, clears the payload and starts over in the same, already
 * resident, pages. A thread that exits hands off its partial batch and
 * returns the slot for reuse.
 *
 * Signal handlers. A handler that records events can interrupt this thread
 * between a trampoline's claim of a record (xadd) and its stores. If the
 * handler then fills the buffer, the claimed record is still empty: handing
 * that slot off would write a hole where the event belongs, and the late
 * store would land in a slot that has been cleared for the next batch. So a
 * full slot that still holds an unfilled record is retired instead: left
 * as it is (still a SLOT chunk of the file with its batch number) while the
 * thread carries on in a fresh slot with the next batch number. Retired
 * slots are written, in order and by the thread itself, at its next
 * slow-path entry once their records are all filled (or at thread exit).
 * A record still unfilled that was claimed before a longjmp or exception
 * landing is presumed abandoned and padded (skip slots, below).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime.h"

#ifdef SF_ARCH_SHADOW
uint64_t sf_shadow_none[SF_SHADOW_CAP + 1];
uint32_t sf_shadow_lost;
/* Every thread starts without an array: reads find zeros (runtime.h). */
__thread struct sf_thread sf_self __attribute__((tls_model("initial-exec"))) = {
	.shadow = &sf_shadow_none[1],
#ifdef SF_SHADOW_TP
	.shadow_tp = &sf_shadow_none[1], /* depth 0 */
	.shadow_lim = &sf_shadow_none[1 + SF_SHADOW_CAP],
#endif
};
#else
__thread struct sf_thread sf_self __attribute__((tls_model("initial-exec")));
#endif
__thread struct sf_landing_mark sf_landing_mark __attribute__((tls_model("initial-exec")));

static uint64_t next_serial = 1;
static uint32_t live_threads; /* threads with a slot */
static pthread_key_t exit_key;
static int exit_key_ok;

/* Threads that cannot get a slot write into this scratch buffer, which is
 * never read: their events are counted as dropped at each wrap. Several
 * threads may share it; its contents do not matter. */
static struct sf_event scratch[1024];

static void thread_flush_exit(void); /* below, with the slot hand-offs */

/* Threads whose exit hook is set (their state can be reached from the
 * writer thread: sf_buffer_windows_close). A thread leaves the list in
 * its exit hook, under the lock, so the writer never touches a thread's
 * storage after it is gone. Taken with signals blocked. */
static struct sf_thread *threads;
static int threads_lock;

static void threads_lock_take(void)
{
	while (__atomic_test_and_set(&threads_lock, __ATOMIC_ACQUIRE))
		sf_arch_cpu_relax();
}

static void threads_lock_drop(void)
{
	__atomic_clear(&threads_lock, __ATOMIC_RELEASE);
}

/* t->listed: 0 never listed, 1 listed, 2 unlisted by its exit hook for
 * good. Code can run on the thread after its hook: later key destructors,
 * and a signal handler after glibc's last destructor round (then no hook
 * runs again and the thread's TLS is freed with its stack): a thread
 * listed then stayed on the list after it was gone, and the list's next
 * walk read unmapped memory or looped (skeptic29t). Such a thread records
 * into a slot as before, unlisted: if a later round runs the hook again it
 * hands its batch off; if none does, the batch stays in its slot, as a
 * thread's still running at process end does. Called with signals
 * blocked: a handler on the same thread never finds the lock taken. */
static void thread_list(struct sf_thread *t)
{
	if (t->listed)
		return;
	threads_lock_take();
	t->prev_thread = NULL;
	t->next_thread = threads;
	if (threads)
		threads->prev_thread = t;
	threads = t;
	t->listed = 1;
	threads_lock_drop();
}

static void thread_unlist(struct sf_thread *t)
{
	if (t->listed != 1) {
		t->listed = 2;
		return;
	}
	threads_lock_take();
	if (t->prev_thread)
		t->prev_thread->next_thread = t->next_thread;
	else
		threads = t->next_thread;
	if (t->next_thread)
		t->next_thread->prev_thread = t->prev_thread;
	t->listed = 2;
	threads_lock_drop();
}

/* Resumes so far: a thread whose shadow_epoch differs has not dropped
 * the shadow-stack entries it pushed before the last pause. */
uint32_t sf_resume_epoch;

/* A time base no event time lies in the span of (trampoline.S's check and
 * in_span both fail): the thread's next event takes the slow path, which
 * ends the batch there and re-bases. The batch's own base stays in its
 * slot's header (set_base). */
#define BASE_FORCE_SLOW (1ull << 63)

void sf_buffer_resumed(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* a handler's first event lists its thread */
	threads_lock_take();
	/* Before any base changes: a thread sent to the slow path sees the
	 * new epoch there. */
	__atomic_add_fetch(&sf_resume_epoch, 1, __ATOMIC_RELEASE);
	for (struct sf_thread *t = threads; t; t = t->next_thread) {
		__atomic_store_n(&t->window_depth, 0, __ATOMIC_RELAXED);
#ifdef SF_ARCH_SHADOW
		/* Nothing is patched yet and a landing records nothing while
		 * paused (unwind.c), so no thread changes its base now. A
		 * thread never listed takes the slow path first anyway. */
		__atomic_store_n(&t->base, BASE_FORCE_SLOW, __ATOMIC_RELAXED);
#endif
	}
	threads_lock_drop();	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

SF_LANDING_TEXT void sf_shadow_resync(struct sf_thread *t, uint32_t kind)
{
#ifdef SF_ARCH_SHADOW
	uint32_t e = __atomic_load_n(&sf_resume_epoch, __ATOMIC_ACQUIRE);
	if (t->shadow_epoch == e)
		return;
	t->shadow_epoch = e;
	uint64_t d = sf_shadow_depth(t);
	if (kind == SF_EV_ENTRY && d) {
		/* The trampoline pushed this entry's frame on top. Past the
		 * stored entries it was counted, not stored: 0 stands for it
		 * (any landing pops it, as the reader then closes it). */
		if (sf_shadow_mapped(t))
			t->shadow[0] = d - 1 < sf_shadow_stored(t) ? *sf_shadow_slot(t, d - 1) : 0;
		sf_shadow_set_depth(t, 1);
	} else {
		sf_shadow_set_depth(t, 0);
	}
#else
	(void)t;
	(void)kind;
#endif
}

/* A thread that mapped its shadow array (unwind.c) before, or without, a
 * slot of its own (an ignored thread, one that only throws): its exit hook
 * unmaps it. Any context, a signal handler's included: for a key of the
 * first block (glibc keeps 32 in the thread's descriptor) setting it is
 * two stores; past them glibc may allocate, so those threads keep the
 * mapping until the process ends (a page of memory and 8 KiB of address
 * space each). */
void sf_buffer_exit_hook_arm(void)
{
	if (exit_key_ok && exit_key < 32)
		pthread_setspecific(exit_key, (void *)1);
}

static void thread_exit_hook(void *arg)
{
	(void)arg;
	if (__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE))
		return; /* a seccomp filter may refuse the hand-off's calls (sandbox.c) */
	sf_unwind_thread_exit();
	sf_shadow_ov_free();
	thread_flush_exit();
	sf_section_stack_free();
}

/* This process's pid as the runtime last set it up (start-up, each fork
 * child's handler). A thread whose first event comes in another process
 * is a clone(CLONE_VM) child without CLONE_THREAD made by a system call
 * of the program's own (glibc's clone() is wrapped: hooks.c), on a fresh
 * thread block: it shares this memory and has no log of its own, so it
 * is not recorded, and counted (reported at exit: sf_buffer_vm_children). */
static uint32_t proc_pid;
static uint32_t vm_children;

void sf_buffer_init(void)
{
	exit_key_ok = pthread_key_create(&exit_key, thread_exit_hook) == 0;
	__atomic_store_n(&proc_pid, (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0), __ATOMIC_RELAXED);
}

uint32_t sf_buffer_vm_children(void)
{
	return __atomic_load_n(&vm_children, __ATOMIC_RELAXED);
}

/* Records an event of `kind` occupies: allocation events carry a payload. */
static size_t event_records(uint32_t kind)
{
	return 1 + sf_event_payload_records(kind);
}

/* Whether `time` can be stored in a batch with this base (sflog.h). */
static int in_span(uint64_t time, uint64_t base)
{
	return time - base + SF_TIME_SPAN < 2 * SF_TIME_SPAN;
}

static void store_record(struct sf_event *e, uint64_t time, uint32_t id, uint32_t kind)
{
	e->time_lo = (uint32_t)time;
	__atomic_store_n(&e->word, sf_event_word(id, kind), __ATOMIC_RELEASE);
}

/* A new batch starts in the thread's current slot: its time base is now. The
 * slot's header gets it before any event of the batch is stored. */
static void set_base(struct sf_thread *t, uint64_t base)
{
	t->base = base;
	if (t->slot) /* threads without one (dropping, ignored) keep it in TLS only */
		__atomic_store_n(&t->slot->hdr->base, base, __ATOMIC_RELEASE);
}

static void batch_begin(struct sf_thread *t)
{
	set_base(t, sf_now_raw());
	/* The next batch number, no zero-word payload counted yet: a count
	 * alloc.c adds for the batch that ended fails its compare-and-swap. */
	sf_self.heap_zero = ((sf_self.heap_zero >> 32) + 1) << 32;
}

static struct sf_event *slot_events(const struct sf_slot *s)
{
	return (struct sf_event *)(s->hdr + 1);
}

/* The thread's skip slots (below, "records a landing abandoned"). */
static __thread struct skip_pool *pool __attribute__((tls_model("initial-exec")));
static void skips_verify(struct sf_slot *s, size_t n);

/* Writes the n records of slot s as the thread's DATA batch number seq. */
static void write_batch(struct sf_thread *t, struct sf_slot *s, size_t n, uint32_t seq)
{
	if (!n)
		return;
	if (pool)
		skips_verify(s, n);
	struct sf_chunk c = {0};
	c.thread_serial = t->serial;
	c.tid = t->tid;
	c.seq = seq;
	c.base = s->hdr->base;
	sf_thread_name(c.name);
	sf_write_batch_chunk(&c, s, n);
}

/* Hands events [0, n) of the slot to the file and clears the slot. */
static void slot_handoff(struct sf_thread *t, size_t n)
{
	write_batch(t, t->slot, n, t->seq);
	t->seq++;
	/* Batch number first, then the clearing: if we die in between, the
	 * reader sees a DATA chunk with this batch's seq and a slot with the
	 * next one, so nothing is read twice. */
	__atomic_store_n(&t->slot->hdr->seq, t->seq, __ATOMIC_RELEASE);
	sf_zero_events(t->events, n);
	batch_begin(t);
	sf_log_calibrate();
}

/* Hands the full slot to the writer thread and continues in the spare one,
 * waiting for it only if the writer has not emptied it yet. */
static void slot_swap(struct sf_thread *t, size_t n)
{
	struct sf_slot *full = t->slot, *next = t->spare;
	sf_writer_wait_ready(next);
	full->nevents = (uint32_t)n;
	sf_thread_name(full->hdr->name);
	sf_writer_submit(full);
	t->seq++;
	struct sf_chunk *h = next->hdr;
	h->thread_serial = t->serial;
	h->tid = t->tid;
	/* The spare's header still names whichever thread used the slot last
	 * (an exited one, whose slot went back to the free list); readers take
	 * a thread's name from its newest batch. */
	memcpy(h->name, full->hdr->name, sizeof(h->name));
	__atomic_store_n(&h->seq, t->seq, __ATOMIC_RELEASE);
	t->slot = next;
	t->spare = full;
	t->events = (struct sf_event *)(h + 1);
	t->limit = (uint64_t)(t->events + SF_SLOT_EVENTS);
	batch_begin(t);
	sf_log_calibrate();
}

/* ---- retired slots (see the comment at the top) ---- */

/* Slots that can wait at once in one thread: full batches recorded while
 * the interrupted context stayed interrupted (handlers running back to
 * back). The list is mapped on first use: a thread that never retires a
 * slot pays one pointer of TLS. */
#define MAX_RETIRED 255

struct retired_list {
	uint32_t n;
	uint32_t seq[MAX_RETIRED];
	uint32_t nrec[MAX_RETIRED]; /* records claimed in it */
	uint32_t zero[MAX_RETIRED]; /* zero-word payload records counted in it (sf_self.heap_zero) */
	struct sf_slot *slot[MAX_RETIRED];
};
static __thread struct retired_list *retired __attribute__((tls_model("initial-exec")));

static uint32_t nretired(void)
{
	return retired ? retired->n : 0;
}


/* Whether one of n records was claimed and not filled yet. Only an
 * interrupted context of this thread can still be filling it: the slow
 * path runs with signals blocked. Allocation payloads are skipped: they are
 * stored before their event's word, and may be zero. zero_payload: payload
 * records with a zero word known to be stored among the n (sf_self.heap_zero;
 * it may fall short of the true number, never exceed it). */
static int has_unfilled(const struct sf_event *ev, size_t n, uint32_t zero_payload)
{
	/* An unfilled record has a zero word. When every zero word is a
	 * counted payload record, none is unfilled; that count is one loop
	 * whose iterations do not depend on each other (the walk below must
	 * follow the records: 7 times slower). */
	if (sf_batch_zero_words(ev, n) == zero_payload)
		return 0;
	for (size_t i = 0; i < n;) {
		uint32_t w = __atomic_load_n(&ev[i].word, __ATOMIC_ACQUIRE);
		if (!w)
			return 1;
		i += 1 + sf_event_payload_count(w);
	}
	return 0;
}

/* ---- records a landing abandoned (see the comment at the top) ----
 *
 * A record claimed before the thread's last landing and still unfilled
 * when its batch goes out is presumed abandoned: the landing left the
 * context that claimed it. It is filled with a pad (an empty ARGS event,
 * which readers skip, as fill_cut_claim makes) and the batch goes out.
 * The presumption is wrong when the landing's target lay inside a handler
 * that interrupted the claim: that context may still store there, at the
 * pad's address, whenever it resumes. So the slot becomes one of the
 * thread's *skip slots*: it keeps, sorted, the record indices of its pads
 * (its skips) and is used again by this thread only, which never lets a
 * batch of it own a skip: the batch's limit is the next skip, and the slow
 * path, when the cursor reaches it, pads it and carries on past it in the
 * same batch (skips_step). A late store at a skip thus lands on a pad that
 * no event owns: the batch's hand-off checks every skip it covers
 * (skips_verify, with signals blocked, so the late context cannot run in
 * between), counts a changed one as one dropped event and writes the pad
 * back; a skip past the batch's end is checked when its slot is cleared.
 * A context whose late store is seen has stored its last: its skip is
 * dropped. Each skip costs one slow-path entry per batch of its slot and
 * two bytes: the slots are not held out of use, so a thread keeps
 * recording through landings without end, until MAX_POOL slots hold
 * MAX_SKIPS skips each (docs/DESIGN.md: about 126,000 abandoned claims). */
#define MAX_POOL 255  /* skip slots of a thread: as many as can be retired */
#define MAX_SKIPS 512 /* skips of one slot (one in 16 records) */
#define SKIPS_PREFERRED 64 /* above: a fresh slot is taken while the pool has room */
#define MAX_PADS 32 /* presumed in one batch */
#define PAD_WORD ((uint32_t)SF_EV_ARGS) /* sf_event_word(0, SF_EV_ARGS): an empty ARGS event */

struct skip_slot {
	struct sf_slot *slot;
	uint32_t n;    /* skips */
	uint32_t busy; /* the thread's current slot, or retired: not to be taken */
	uint16_t at[MAX_SKIPS]; /* record indices, ascending */
};
_Static_assert(SF_SLOT_EVENTS <= 65536, "record indices fit uint16_t");

struct skip_pool {
	uint32_t n;
	struct skip_slot e[MAX_POOL];
};
/* The skip slot the thread records in (its t->slot), NULL when that has no
 * skip; and the index of its first skip at or past the cursor. */
static __thread struct skip_slot *cur_skips __attribute__((tls_model("initial-exec")));
static __thread uint32_t cur_next __attribute__((tls_model("initial-exec")));

static struct skip_slot *skip_slot_of(const struct sf_slot *s)
{
	for (uint32_t k = 0; pool && k < pool->n; k++)
		if (pool->e[k].slot == s)
			return &pool->e[k];
	return NULL;
}

/* Whether a landing came after the claim of record i of batch seq
 * (events at ev): the landing's cursor was past it, or in a later batch. */
static int landed_after(const struct sf_event *ev, size_t i, uint32_t seq)
{
	const struct sf_landing_mark *m = &sf_landing_mark;
	if (!m->set)
		return 0;
	if (m->seq != seq)
		return (int32_t)(m->seq - seq) > 0;
	return m->at > (uint64_t)(ev + i);
}

static void skip_remove(struct skip_slot *q, uint32_t i)
{
	if (q == cur_skips && i < cur_next)
		cur_next--; /* a skip the current batch stepped over */
	memmove(&q->at[i], &q->at[i + 1], (q->n - i - 1) * sizeof(q->at[0]));
	q->n--;
}

/* The pad at record i of events ev (batch base base): the time of the
 * record before it, so that the packed coder's deltas stay small. */
static void store_pad(struct sf_event *ev, size_t i, uint64_t base)
{
	store_record(&ev[i], i ? ev[i - 1].time_lo : (uint32_t)base, 0, SF_EV_ARGS);
}

/* Skips of q at or past record `from` that a late store wrote to (the
 * slot was cleared since): each is one dropped event, its context done. */
static void skips_sweep(struct skip_slot *q, size_t from)
{
	struct sf_event *ev = slot_events(q->slot);
	for (uint32_t i = q->n; i-- > 0 && q->at[i] >= from;)
		if (__atomic_load_n(&ev[q->at[i]].word, __ATOMIC_ACQUIRE)) {
			sf_log_drop(1);
			ev[q->at[i]] = (struct sf_event){0};
			skip_remove(q, i);
		}
}

/* Before the n records of slot s go out: every skip among them holds the
 * pad skips_step stored, or a late store overwrote it (counted, written
 * back). Signals are blocked: no context of the thread stores meanwhile. */
static void skips_verify(struct sf_slot *s, size_t n)
{
	struct skip_slot *q = pool ? skip_slot_of(s) : NULL;
	struct sf_event *ev = slot_events(s);
	for (uint32_t i = 0; q && i < q->n && q->at[i] < n;) {
		uint32_t w = __atomic_load_n(&ev[q->at[i]].word, __ATOMIC_ACQUIRE);
		store_pad(ev, q->at[i], s->hdr->base);
		if (w != PAD_WORD) {
			sf_log_drop(1);
			if (w) {
				skip_remove(q, i);
				continue;
			}
		}
		i++;
	}
}

/* The limit of the current batch: the next skip, else the slot's end. */
static uint64_t skips_limit(const struct sf_thread *t)
{
	if (cur_skips && cur_next < cur_skips->n)
		return (uint64_t)(t->events + cur_skips->at[cur_next]);
	return (uint64_t)(t->events + SF_SLOT_EVENTS);
}

/* A batch begins at the start of the thread's current slot. */
static void skips_enter(struct sf_thread *t)
{
	cur_skips = pool && t->slot && t->state == SF_THREAD_ACTIVE ? skip_slot_of(t->slot) : NULL;
	cur_next = 0;
	if (cur_skips) {
		cur_skips->busy = 1;
		t->limit = skips_limit(t);
	}
}

/* The cursor reached a skip and the next nrec records do not fit before
 * it: the records up to it and the skip get pads, and the batch goes on
 * past it. A skip that holds a late store is counted and dropped. Signals
 * are blocked; the cursor is at or below the limit. */
static void skips_step(struct sf_thread *t, size_t nrec)
{
	uint64_t end = (uint64_t)(t->events + SF_SLOT_EVENTS);
	while (t->limit < end && t->cursor + nrec * sizeof(struct sf_event) > t->limit) {
		size_t i = (size_t)(t->cursor - (uint64_t)t->events) / sizeof(struct sf_event);
		size_t p = (size_t)(t->limit - (uint64_t)t->events) / sizeof(struct sf_event);
		for (; i < p; i++) /* an event of several records that does not fit before it */
			store_pad(t->events, i, t->base);
		if (__atomic_load_n(&t->events[p].word, __ATOMIC_ACQUIRE)) {
			sf_log_drop(1);
			skip_remove(cur_skips, cur_next);
		} else {
			cur_next++;
		}
		store_pad(t->events, p, t->base);
		t->cursor = (uint64_t)(t->events + p + 1);
		t->limit = skips_limit(t);
	}
}

/* A claim the slow path received (the record it claimed lay past the
 * limit it compared with) at a skip of another of the thread's slots than
 * the current one: that context, which the landing was presumed to leave,
 * is done with the skip, and the caller stores its event in the current
 * batch. 1 if it was one. */
static int skips_claimed(const struct sf_thread *t, uint64_t at)
{
	for (uint32_t k = 0; pool && k < pool->n; k++) {
		struct skip_slot *q = &pool->e[k];
		struct sf_event *ev = slot_events(q->slot);
		if (q->slot == t->slot || at < (uint64_t)ev || at >= (uint64_t)(ev + SF_SLOT_EVENTS))
			continue;
		for (uint32_t i = 0; i < q->n; i++)
			if (at == (uint64_t)(ev + q->at[i])) {
				skip_remove(q, i);
				return 1;
			}
	}
	return 0;
}

/* Every skip of the thread's idle skip slots that a late store wrote to is
 * counted; a slot left with none goes back to the log. */
static void skips_check(void)
{
	uint32_t keep = 0;
	for (uint32_t k = 0; pool && k < pool->n; k++) {
		struct skip_slot *q = &pool->e[k];
		if (!q->busy) {
			skips_sweep(q, 0);
			if (!q->n) {
				sf_log_slot_put(q->slot); /* cleared by skips_sweep, free in the file */
				continue;
			}
		}
		if (keep != k) {
			if (cur_skips == q)
				cur_skips = &pool->e[keep];
			pool->e[keep] = *q;
		}
		keep++;
	}
	if (pool)
		pool->n = keep;
}

/* A fresh slot for a batch of this thread: one of its idle skip slots with
 * few skips, else a new one from the log while the pool has room for it,
 * else the idle skip slot with fewest skips. NULL if none. */
static struct sf_slot *skips_take(void)
{
	struct skip_slot *best = NULL;
	for (uint32_t k = 0; pool && k < pool->n; k++)
		if (!pool->e[k].busy && (!best || pool->e[k].n < best->n))
			best = &pool->e[k];
	if (best && best->n > SKIPS_PREFERRED && pool->n < MAX_POOL - 8) {
		struct sf_slot *s = sf_log_slot_get();
		if (s)
			return s;
	}
	if (!best)
		return sf_log_slot_get();
	best->busy = 1;
	/* Its pages were written back while it was idle: the batch's first
	 * store to each would fault, a long window between a trampoline's
	 * claim and its store for a signal to land in. */
	sf_prefault_write(best->slot->hdr, SF_SLOT_SIZE);
	return best->slot;
}

/* Thread end: no context of it can store any more. Its skip slots go back
 * to the log, cleared (the late stores there counted), but the current
 * one, which the caller gives back after clearing the batch (n records). */
static void skips_release(struct sf_thread *t, size_t n)
{
	for (uint32_t k = 0; pool && k < pool->n; k++) {
		struct skip_slot *q = &pool->e[k];
		skips_sweep(q, q->slot == t->slot ? n : 0);
		if (q->slot != t->slot) {
			sf_zero_events(slot_events(q->slot), SF_SLOT_EVENTS);
			sf_log_slot_put(q->slot);
		}
	}
	if (pool)
		munmap(pool, sizeof(*pool));
	pool = NULL;
	cur_skips = NULL;
}

/* Process end: the slots of this thread that readers take as they are
 * (its current one, n records filled, and the retired ones) hold no late
 * store at a skip, as batches that go out do not. */
static void skips_exit(struct sf_thread *t, size_t n)
{
	if (!pool)
		return;
	for (uint32_t i = 0; i < nretired(); i++)
		skips_verify(retired->slot[i], retired->nrec[i]);
	skips_verify(t->slot, n);
	if (cur_skips) {
		skips_sweep(cur_skips, n);
		t->limit = skips_limit(t); /* events after this (destructors) step over what is left */
	}
}

/* Adds the np record indices at[] (ascending, none a skip yet) to slot
 * s's skips. 0 if s has no room for them, or the pool none for s. */
static int skips_add(struct sf_slot *s, const size_t *at, uint32_t np)
{
	if (!pool)
		pool = sf_map_anon(sizeof(*pool));
	if (!pool)
		return 0;
	struct skip_slot *q = skip_slot_of(s);
	if (!q) {
		if (pool->n == MAX_POOL)
			return 0;
		q = &pool->e[pool->n++];
		*q = (struct skip_slot){.slot = s, .busy = 1};
	}
	if (q->n + np > MAX_SKIPS)
		return 0;
	for (uint32_t j = 0; j < np; j++) {
		uint32_t i = q->n++;
		for (; i && q->at[i - 1] > at[j]; i--)
			q->at[i] = q->at[i - 1];
		q->at[i] = (uint16_t)at[j];
	}
	return 1;
}

/* Pads every unfilled record of the n records at ev (batch base base):
 * at the thread's or the process's end, when no context of the thread
 * that claimed one can resume. Signals are blocked. */
static void pad_abandoned(struct sf_event *ev, size_t n, uint64_t base)
{
	if (!has_unfilled(ev, n, (uint32_t)sf_self.heap_zero))
		return;
	for (size_t i = 0; i < n;) {
		uint32_t w = __atomic_load_n(&ev[i].word, __ATOMIC_ACQUIRE);
		if (w) {
			i += 1 + sf_event_payload_count(w);
			continue;
		}
		store_pad(ev, i, base);
		i++;
	}
}

/* Pads the unfilled records of the n records of retired slot s (batch
 * seq) if every one was claimed before a landing, there are at most
 * MAX_PADS and s has room for them as skips; they become its skips. 1 if
 * it was padded (nothing unfilled is left in it). Signals are blocked. */
static int pad_presumed(struct sf_slot *s, size_t n, uint32_t seq)
{
	struct sf_event *ev = slot_events(s);
	size_t at[MAX_PADS];
	uint32_t np = 0;
	if (!sf_landing_mark.set)
		return 0;
	for (size_t i = 0; i < n;) {
		uint32_t w = __atomic_load_n(&ev[i].word, __ATOMIC_ACQUIRE);
		if (w) {
			i += 1 + sf_event_payload_count(w);
			continue;
		}
		if (np == MAX_PADS || !landed_after(ev, i, seq))
			return 0;
		at[np++] = i++;
	}
	if (!np || !skips_add(s, at, np))
		return 0;
	for (uint32_t j = 0; j < np; j++)
		store_pad(ev, at[j], s->hdr->base);
	return 1;
}

/* Writes the retired slots, oldest first, while their records are all
 * filled (all of them when force; holes are then read as lost records).
 * A slot with a hole is never reused: a late store may still land in it. */
static void flush_retired(struct sf_thread *t, int force)
{
	uint32_t done = 0, n = nretired();
	if (!n)
		return;
	if (t->spare)
		sf_writer_wait_ready(t->spare); /* the batch before them */
	for (; done < n; done++) {
		struct sf_slot *s = retired->slot[done];
		struct sf_event *ev = slot_events(s);
		int holes = has_unfilled(ev, retired->nrec[done], retired->zero[done]);
		int padded = holes && pad_presumed(s, retired->nrec[done], retired->seq[done]);
		holes &= !padded;
		if (holes && !force)
			break;
		write_batch(t, s, retired->nrec[done], retired->seq[done]);
		/* Free in the file first (readers ignore it), then cleared. */
		__atomic_store_n(&s->hdr->thread_serial, 0, __ATOMIC_RELEASE);
		if (holes)
			continue; /* a late store may still land anywhere in it */
		struct skip_slot *q = pool ? skip_slot_of(s) : NULL;
		if (q) /* the thread's again, cleared: a late store at a skip shows */
			skips_sweep(q, retired->nrec[done]);
		sf_zero_events(ev, SF_SLOT_EVENTS);
		if (q)
			q->busy = 0;
		else
			sf_log_slot_put(s);
	}
	for (uint32_t i = done; i < n; i++) {
		retired->slot[i - done] = retired->slot[i];
		retired->seq[i - done] = retired->seq[i];
		retired->nrec[i - done] = retired->nrec[i];
		retired->zero[i - done] = retired->zero[i];
	}
	retired->n = n - done;
}

/* Keeps the current slot, n records claimed, as it is and continues in a
 * fresh one with the next batch number. 0 if no slot can be had. */
static int retire_current(struct sf_thread *t, size_t n)
{
	if (!retired)
		retired = sf_map_anon(sizeof(*retired));
	struct sf_slot *fresh = retired && retired->n < MAX_RETIRED ? skips_take() : NULL;
	if (!fresh)
		return 0;
	retired->slot[retired->n] = t->slot;
	retired->seq[retired->n] = t->seq;
	retired->nrec[retired->n] = (uint32_t)n;
	retired->zero[retired->n] = (uint32_t)sf_self.heap_zero;
	retired->n++;
	t->seq++;
	struct sf_chunk *h = fresh->hdr;
	h->tid = t->tid;
	h->seq = t->seq;
	sf_thread_name(h->name);
	__atomic_store_n(&h->thread_serial, t->serial, __ATOMIC_RELEASE);
	t->slot = fresh;
	t->events = slot_events(fresh);
	t->limit = (uint64_t)(t->events + SF_SLOT_EVENTS);
	batch_begin(t);
	sf_log_calibrate();
	return 1;
}

/* A record claimed in a slot that was retired while the claiming context
 * was interrupted (it then compared its claim with the new slot's limit):
 * fill it in place. 1 if `at` was such a record. Signals are blocked. */
static int store_in_retired(uint64_t at, uint64_t time, uint32_t id, uint32_t kind)
{
	for (uint32_t i = 0; i < nretired(); i++) {
		struct sf_event *ev = slot_events(retired->slot[i]);
		if (at < (uint64_t)ev || at >= (uint64_t)(ev + SF_SLOT_EVENTS) || (at - (uint64_t)ev) % sizeof(*ev))
			continue;
		struct sf_event *e = (struct sf_event *)at;
		if (__atomic_load_n(&e->word, __ATOMIC_ACQUIRE))
			return 0;
		store_record(e, time, id, kind);
		return 1;
	}
	return 0;
}

/* Whether this hand-off goes to the writer thread. In auto mode only while
 * the traced threads leave a CPU for it: when they fill every CPU, the
 * writer would take its time from them and add wake-ups. The spare slot is
 * taken on first use (also by a thread that started before the writer did:
 * the main thread in a library's constructor, init.c). */
static int use_writer(struct sf_thread *t)
{
	if (!sf_writer_active() || sf_config.ring_slots)
		return 0;
	if (cur_skips) /* its skips are checked as its batch goes out, with signals blocked */
		return 0;
	if (t->listed == 2) /* past its exit hook: no spare (thread_list) */
		return 0;
	if (sf_config.writer == SF_WRITER_AUTO &&
	    (int)__atomic_load_n(&live_threads, __ATOMIC_RELAXED) >= sf_config.ncpus)
		return 0;
	if (!t->spare)
		t->spare = sf_log_slot_get();
	return t->spare != NULL;
}

static void start_dropping(struct sf_thread *t);

/* ---- record --ring ---- */

/* Fills a slot's header for the thread's batch t->seq; the serial last,
 * which makes the slot count for readers again. */
static void slot_claim(struct sf_thread *t, struct sf_slot *s)
{
	struct sf_chunk *h = s->hdr;
	h->tid = t->tid;
	__atomic_store_n(&h->seq, t->seq, __ATOMIC_RELEASE);
	sf_thread_name(h->name);
	__atomic_store_n(&h->thread_serial, t->serial, __ATOMIC_RELEASE);
}

/* Ring records (struct sf_ring): every one made, and those of exited
 * threads, for new ones. ring_lock guards the free list and the states of
 * records; it is taken with signals blocked, before the log's lock. */
static struct sf_ring *all_rings;
static struct sf_ring *free_rings;
static int ring_lock;

/* The writer serves requests while it waits here (sf_rings_thaw), as it
 * does for the log's lock: an exiting thread holds ring_lock while it
 * gives its slots back under the log's lock (ring_release), whose holder
 * may be a thread waiting for the writer to map it a fresh slot
 * (sf_log_slot_get: with_log_fd). A writer that only spun here waited
 * for itself through two threads: the program hung for good (CI, test_ring's
 * churn case, ASan CLI, once in a few hundred runs). */
static void ring_lock_take(void)
{
	sf_lock_take(&ring_lock, 1);
}

static void ring_lock_drop(void)
{
	sf_lock_give(&ring_lock);
}

struct sf_ring *sf_rings(void)
{
	return __atomic_load_n(&all_rings, __ATOMIC_ACQUIRE);
}

static size_t ring_size(uint32_t cap)
{
	return sizeof(struct sf_ring) + 2 * (size_t)cap * sizeof(struct sf_slot *);
}

/* The live set changes between these two (the writer thread copies it
 * without a lock and checks gen afterwards: a seqlock). */
static void ring_write_begin(struct sf_ring *r)
{
	__atomic_store_n(&r->gen, r->gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void ring_write_end(struct sf_ring *r)
{
	__atomic_store_n(&r->gen, r->gen + 1, __ATOMIC_RELEASE);
}

static void ring_start(struct sf_thread *t)
{
	uint32_t cap = sf_config.ring_slots;
	ring_lock_take();
	struct sf_ring *r = free_rings;
	if (r)
		free_rings = r->next_free;
	ring_lock_drop();
	int fresh = !r;
	if (fresh) {
		r = sf_map_anon(ring_size(cap));
		if (!r)
			return; /* then the one slot is the ring (ring_advance) */
		r->cap = cap;
		r->live = r->store;
		r->frozen = r->store + cap;
		sf_prefault_write(r->store, 2 * (size_t)cap * sizeof(r->store[0]));
	}
	ring_write_begin(r);
	r->serial = t->serial;
	r->tid = t->tid;
	r->n = 1;
	r->cur = 0;
	r->live[0] = t->slot;
	r->nfrozen = 0;
	__atomic_store_n(&r->frozen_kept, 0, __ATOMIC_RELAXED);
	/* With triggers, the slot a first freeze goes on in, taken now: the
	 * trigger's thread then does no file work at the trigger (without
	 * one, or when none could be had, it takes one then). */
	if (!r->reserve && __atomic_load_n(&sf_trigger_count, __ATOMIC_RELAXED)) {
		r->reserve = sf_log_slot_get();
		if (r->reserve)
			sf_prefault_write(r->reserve->hdr, SF_SLOT_SIZE);
	}
	/* A freeze open now began before this thread's first event: nothing
	 * of it belongs there (an empty frozen set for it). */
	uint32_t last = __atomic_load_n(&sf_freeze_last, __ATOMIC_ACQUIRE);
	__atomic_store_n(&r->epoch, last, __ATOMIC_RELAXED);
	__atomic_store_n(&r->frozen_epoch, last, __ATOMIC_RELEASE);
	__atomic_store_n(&r->state, SF_RING_LIVE, __ATOMIC_RELAXED);
	ring_write_end(r);
	if (fresh) {
		struct sf_ring *head = __atomic_load_n(&all_rings, __ATOMIC_RELAXED);
		do
			r->next_all = head;
		while (!__atomic_compare_exchange_n(&all_rings, &head, r, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	}
	t->ring = r;
}

/* Slot i of a set of n whose newest is cur, counted from the oldest. */
static uint32_t ring_index(uint32_t cur, uint32_t n, uint32_t i)
{
	return (cur + 1 + i) % n;
}

/* The thread's current slot is the batch t->seq + 1's, cleared: the
 * cursor's buffer. */
static void ring_enter(struct sf_thread *t, struct sf_slot *next)
{
	t->seq++;
	slot_claim(t, next);
	t->slot = next;
	t->events = slot_events(next);
	t->limit = (uint64_t)(t->events + SF_SLOT_EVENTS);
	batch_begin(t);
}

/* A freeze is open that this ring has not been taken for: the live set
 * (the thread's batches up to now, the current one included) becomes the
 * frozen set, which nothing writes to until the writer thread has copied
 * it, and the thread goes on in the other set (the frozen set of the last
 * freeze, copied long since), or in a first slot of it. 1 if done; 0 when
 * there is no freeze to take, or no slot to go on in (the writer then
 * copies the live set as it stands). The freeze is claimed with a CAS on
 * the ring's epoch, which the writer thread makes too when it copied the
 * live set first. Signals are blocked. */
static int ring_freeze(struct sf_thread *t)
{
	struct sf_ring *r = t->ring;
	uint32_t e = __atomic_load_n(&sf_freeze_open, __ATOMIC_ACQUIRE);
	uint32_t seen = __atomic_load_n(&r->epoch, __ATOMIC_ACQUIRE);
	if (!e || seen == e)
		return 0;
	struct sf_slot *first = NULL;
	if (!r->nfrozen) {
		first = r->reserve ? r->reserve : sf_log_slot_get();
		if (!first)
			return 0;
	}
	if (!__atomic_compare_exchange_n(&r->epoch, &seen, e, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (first && first != r->reserve)
			sf_log_slot_put(first);
		return 0;
	}
	if (first == r->reserve)
		r->reserve = NULL;
	ring_write_begin(r);
	struct sf_slot **in = r->frozen;
	uint32_t nin = r->nfrozen;
	r->frozen = r->live;
	r->nfrozen = r->n;
	r->frozen_cur = r->cur;
	__atomic_store_n(&r->frozen_kept, 1, __ATOMIC_RELAXED);
	r->live = in;
	if (first) {
		in[0] = first;
		nin = 1;
	}
	/* Slots of an earlier freeze the writer never took (their thread
	 * began after it had walked the rings) still read as batches. */
	for (uint32_t i = first ? 1 : 0; i < nin; i++)
		__atomic_store_n(&in[i]->hdr->thread_serial, 0, __ATOMIC_RELEASE);
	r->n = nin;
	r->cur = 0;
	if (!first)
		sf_log_slot_invalidate(in[0]);
	ring_enter(t, in[0]);
	ring_write_end(r);
	__atomic_store_n(&r->frozen_epoch, e, __ATOMIC_RELEASE);
	sf_log_calibrate();
	return 1;
}

/* The frozen set's batches made free in the file (serial 0). Its thread
 * and the writer thread may both do it at once: the same stores. */
static void ring_free_frozen(struct sf_ring *r)
{
	for (uint32_t i = 0; i < r->nfrozen; i++)
		__atomic_store_n(&r->frozen[i]->hdr->thread_serial, 0, __ATOMIC_RELEASE);
}

/* The live set laps: the frozen set's batches, the thread's oldest in the
 * file until now, would no longer be contiguous with it. They are made
 * free in the file, once the writer thread has copied them: here if the
 * freeze they were taken for is closed, else by sf_rings_thaw, which
 * closes it and then reads frozen_kept. Each side stores, fences, then
 * loads what the other stores, so at least one of them sees the other's
 * store: a lap just before the close is never missed by both (issue 28:
 * a thread that laps no more kept an earlier lap in the log). */
static void ring_drop_frozen(struct sf_ring *r)
{
	__atomic_store_n(&r->frozen_kept, 2, __ATOMIC_RELAXED); /* not contiguous any more */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&sf_freeze_open, __ATOMIC_ACQUIRE) == r->frozen_epoch)
		return;
	ring_free_frozen(r);
	__atomic_store_n(&r->frozen_kept, 0, __ATOMIC_RELAXED);
}

/* The batch in the current slot is complete: the next one goes into a new
 * slot while the ring may still grow, else into the oldest, which is made
 * free in the file and cleared first (a reader sees the old batch, no
 * batch, or the new one; never a mix). No write, no copy: the batch stays
 * where it is until the ring comes round to it. A freeze open for this
 * ring takes the whole ring instead (ring_freeze). */
static void ring_advance(struct sf_thread *t)
{
	struct sf_ring *r = t->ring;
	sf_writer_offer_poll(); /* the leaving writer's descriptor, taken now (writer.c) */
	if (r)
		sf_snapshot_take_asked(); /* the writer has left: sftrace snapshot's request taken here */
	if (r && __atomic_load_n(&sf_freeze_open, __ATOMIC_ACQUIRE)) {
		int frozen = ring_freeze(t);
		sf_snapshot_serve_left(); /* the writer has left after the leader: written here (snapshot.c) */
		if (frozen)
			return;
	}
	struct sf_slot *next = r && r->n < r->cap ? sf_log_slot_get() : NULL;
	if (r)
		ring_write_begin(r);
	if (!next && r && __atomic_load_n(&r->frozen_kept, __ATOMIC_RELAXED))
		ring_drop_frozen(r);
	if (next) {
		r->live[r->n] = next;
		r->cur = r->n++;
	} else {
		if (r) {
			r->cur = (r->cur + 1) % r->n;
			next = r->live[r->cur];
		} else {
			next = t->slot;
		}
		sf_log_slot_invalidate(next);
	}
	ring_enter(t, next);
	if (r)
		ring_write_end(r);
	sf_log_calibrate();
}

void sf_buffer_freeze_self(void)
{
	struct sf_thread *t = &sf_self;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* not under an interrupted args claim (sf_thread.args_claim): the
	 * thread's next slow-path entry freezes it */
	if (t->state == SF_THREAD_ACTIVE && t->ring && !t->args_claim && ring_freeze(t))
		t->cursor = (uint64_t)t->events;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A chain of slots for sf_log_slots_put: s goes in front, so it is
 * given out before those chained until now. */
struct slot_chain {
	struct sf_slot *first, *last;
};

static void chain_front(struct slot_chain *c, struct sf_slot *s)
{
	s->next_free = c->first;
	c->first = s;
	if (!c->last)
		c->last = s;
}

/* A set's slots on the chain, the oldest in front, so that new threads
 * take the oldest batches first: what stays readable of an exited
 * thread is its newest batches, contiguous. A frozen set's batches are
 * older than the live set's, maybe by more than a lap: made free in the
 * file. Under ring_lock. */
static void ring_chain_set(struct slot_chain *c, struct sf_slot **set, uint32_t n, uint32_t cur, int frozen)
{
	for (uint32_t i = n; i-- > 0;) {
		struct sf_slot *s = set[ring_index(cur, n, i)];
		if (frozen)
			__atomic_store_n(&s->hdr->thread_serial, 0, __ATOMIC_RELEASE);
		chain_front(c, s);
	}
}

/* An exited thread's ring freed: its slots back to the free list and the
 * ring to free_rings, at the exit, or at the thaw when a freeze open at
 * the exit held it. Under the ring lock. The slots go back in one step
 * under the log's lock: put one by one, a thread taking a slot between
 * two puts took the newest batch while the older stayed, and the exited
 * thread's window ended 136 calls early (CI, skeptic29n's ring case). */
static void ring_free_exited(struct sf_ring *r)
{
	struct slot_chain c = {0};
	ring_write_begin(r);
	ring_chain_set(&c, r->live, r->n, r->cur, 0);
	ring_chain_set(&c, r->frozen, r->nfrozen, r->frozen_cur, r->frozen_kept != 1);
	r->nfrozen = 0;
	if (r->reserve)
		chain_front(&c, r->reserve);
	r->reserve = NULL;
	if (c.first)
		sf_log_slots_put(c.first, c.last);
	__atomic_store_n(&r->state, SF_RING_EXITED, __ATOMIC_RELEASE);
	ring_write_end(r);
	r->next_free = free_rings;
	free_rings = r;
}

/* Thread exit in ring mode: its batches stay readable where they are; the
 * slots go back for new threads, which clear them when they take them.
 * While a freeze is open they stay as they are (nothing writes to them
 * now) until the writer thread has copied them and frees them
 * (sf_rings_thaw). */
static void ring_release(struct sf_thread *t)
{
	struct sf_ring *r = t->ring;
	if (!r) {
		sf_log_slot_put(t->slot);
		t->slot = NULL;
		return;
	}
	ring_lock_take();
	if (__atomic_load_n(&sf_freeze_open, __ATOMIC_ACQUIRE))
		__atomic_store_n(&r->state, SF_RING_HELD, __ATOMIC_RELEASE);
	else
		ring_free_exited(r);
	ring_lock_drop();
	t->ring = NULL;
	t->slot = NULL;
}

/* ---- the writer thread's side of a freeze ---- */

static void copy_slot(unsigned char *to, const struct sf_slot *s)
{
	__builtin_memcpy(to, s->hdr, SF_SLOT_SIZE);
}

/* The live set of a running thread, copied whole between two equal
 * readings of gen; if the thread froze its ring meanwhile, the frozen
 * set. 0 after too many tries (a thread descheduled mid-change). */
static uint32_t capture_live(struct sf_ring *r, uint32_t e, unsigned char *copies)
{
	for (int tries = 0; tries < 100000; tries++) {
		if (__atomic_load_n(&r->frozen_epoch, __ATOMIC_ACQUIRE) == e) {
			uint32_t n = r->nfrozen;
			for (uint32_t i = 0; i < n; i++)
				copy_slot(copies + (size_t)i * SF_SLOT_SIZE, r->frozen[ring_index(r->frozen_cur, n, i)]);
			return n;
		}
		uint32_t g1 = __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE);
		uint32_t seen = __atomic_load_n(&r->epoch, __ATOMIC_ACQUIRE);
		if ((g1 & 1) || seen == e) { /* changing, or freezing: wait for it */
			/* Its thread may be waiting for a request of another
			 * thread's to be served first: an exited thread gives
			 * its slots back mid-change (ring_free_exited, gen
			 * odd) under the log's lock, which a thread holds
			 * while the writer maps it a slot. Served here, or
			 * the change never ends (and the 100,000 yields to a
			 * loaded machine's spinning threads took minutes). */
			sf_writer_serve();
			sf_yield();
			continue;
		}
		uint32_t n = r->n, cur = r->cur;
		struct sf_slot **set = r->live;
		for (uint32_t i = 0; i < n && n <= r->cap; i++)
			copy_slot(copies + (size_t)i * SF_SLOT_SIZE, set[ring_index(cur, n, i)]);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->gen, __ATOMIC_RELAXED) != g1 || n > r->cap)
			continue;
		/* Taken: the thread must not freeze for this epoch now. If it
		 * claimed it first, its frozen set is the window. */
		if (__atomic_compare_exchange_n(&r->epoch, &seen, e, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return n;
	}
	return 0;
}

/* An exited thread's batches, in slots on the free list that new threads
 * may take at any moment: each copy is kept only if the slot still holds
 * the same batch afterwards, newest first, stopping at the first taken
 * (new threads take the oldest first: what is kept is contiguous). */
static uint32_t capture_exited(struct sf_ring *r, unsigned char *copies)
{
	uint32_t g1 = __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE);
	if (g1 & 1)
		return 0;
	uint32_t n = r->n, cur = r->cur, kept = 0;
	uint64_t serial = r->serial;
	struct sf_slot **set = r->live;
	if (n > r->cap)
		return 0;
	for (uint32_t i = n; i-- > 0;) {
		const struct sf_chunk *c = set[ring_index(cur, n, i)]->hdr;
		uint32_t seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&c->thread_serial, __ATOMIC_ACQUIRE) != serial)
			break;
		unsigned char *to = copies + (size_t)(n - 1 - kept) * SF_SLOT_SIZE;
		__builtin_memcpy(to, c, SF_SLOT_SIZE);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&c->thread_serial, __ATOMIC_RELAXED) != serial ||
		    __atomic_load_n(&c->seq, __ATOMIC_RELAXED) != seq)
			break;
		kept++;
	}
	if (__atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) != g1)
		return 0; /* the record went to a new thread meanwhile */
	if (kept < n) /* oldest first, from the start of copies */
		__builtin_memmove(copies, copies + (size_t)(n - kept) * SF_SLOT_SIZE, (size_t)kept * SF_SLOT_SIZE);
	return kept;
}

uint32_t sf_ring_capture(struct sf_ring *r, uint32_t e, unsigned char *copies)
{
	switch (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE)) {
	case SF_RING_LIVE:
	case SF_RING_HELD:
		return capture_live(r, e, copies);
	case SF_RING_EXITED:
		return capture_exited(r, copies);
	default:
		return 0;
	}
}

/* A running thread's ring that lapped while freeze e was open: its frozen
 * set, copied now, is made free (ring_drop_frozen left it to us). Only a
 * set frozen for e: once frozen_epoch reads e, its thread has finished
 * that freeze's swap and takes no other before the next freeze, which
 * cannot open until the writer is done (busy); nor can the thread give
 * the slots back meanwhile (ring_release waits for ring_lock). Its hot
 * path writes only to the live set. The thread may free the set at the
 * same moment: the same stores, and frozen_kept only goes 2 -> 0 here. */
static void ring_thaw_lapped(struct sf_ring *r, uint32_t e)
{
	if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != SF_RING_LIVE ||
	    __atomic_load_n(&r->frozen_epoch, __ATOMIC_ACQUIRE) != e)
		return;
	uint32_t lapped = 2;
	if (__atomic_load_n(&r->frozen_kept, __ATOMIC_RELAXED) != lapped)
		return;
	ring_free_frozen(r);
	__atomic_compare_exchange_n(&r->frozen_kept, &lapped, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}


/* The writer thread has copied freeze e: it closes. Exited threads' rings
 * go back; running threads' rings that lapped during it drop their frozen
 * set, after the close (the order ring_drop_frozen relies on). */
void sf_rings_thaw(uint32_t e)
{
	ring_lock_take();
	for (struct sf_ring *r = sf_rings(); r; r = r->next_all)
		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == SF_RING_HELD)
			ring_free_exited(r);
	__atomic_store_n(&sf_freeze_open, 0, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (struct sf_ring *r = sf_rings(); r; r = r->next_all)
		ring_thaw_lapped(r, e);
	ring_lock_drop();
}

/* Gives a slot back, free in the file (readers ignore it) and cleared. */
static void slot_release(struct sf_slot *s)
{
	__atomic_store_n(&s->hdr->thread_serial, 0, __ATOMIC_RELEASE);
	sf_zero_events(slot_events(s), SF_SLOT_EVENTS);
	sf_log_slot_put(s);
}

/* record --max-size was reached: this thread stops recording. The n
 * records in its slot are dropped and counted, its slots go back, and its
 * later events are counted as dropped (start_dropping). */
static void stop_recording(struct sf_thread *t, size_t n)
{
	if (t->spare) {
		sf_writer_wait_ready(t->spare);
		slot_release(t->spare);
		t->spare = NULL;
	}
	flush_retired(t, 1); /* refused too, and counted */
	sf_log_drop(n);
	slot_release(t->slot);
	t->slot = NULL;
	__atomic_sub_fetch(&live_threads, 1, __ATOMIC_RELAXED);
	start_dropping(t);
}

/* The batch of n records ends (the buffer is full, or the next event is
 * too far in time from its base): to the writer thread when there is one,
 * else ourselves;
 * retired instead while an interrupted context still has to fill one of
 * its records, or while an older batch waits (batches go out in order).
 * Returns -1 when the buffer must stay full: a record is still owed and no
 * more slots can be retired (signal handlers starving the code they
 * interrupt for 255 slots' worth of events). The caller then drops, and
 * counts, the new event rather than write out a slot with a hole. */
static int handoff_full(struct sf_thread *t, size_t n)
{
	if (sf_log_capped()) {
		stop_recording(t, n);
		return 0;
	}
	if (sf_config.ring_slots) {
		/* A record an interrupted context still owes stays in its slot,
		 * which is not reused before the ring comes round. */
		ring_advance(t);
		return 0;
	}
	if (pool)
		skips_check();
	flush_retired(t, 0);
	int owed = has_unfilled(t->events, n, (uint32_t)sf_self.heap_zero);
	if ((nretired() || owed) && retire_current(t, n)) {
		if (owed && sf_landing_mark.set)
			flush_retired(t, 0); /* out now if a landing abandoned what it owes */
		return 0;
	}
	/* No room to retire more. Retired slots that are complete went out
	 * above; any left still owe a record, and so does the current slot if
	 * owed: nothing may be written past them yet. */
	if (owed || nretired())
		return -1;
	if (use_writer(t)) {
		slot_swap(t, n);
	} else {
		if (t->spare)
			sf_writer_wait_ready(t->spare); /* its batch goes first */
		slot_handoff(t, n);
	}
	if (sf_log_capped()) /* this batch was refused: nothing more is written */
		stop_recording(t, 0);
	return 0;
}

static void start_dropping(struct sf_thread *t)
{
	t->state = SF_THREAD_DROPPING;
	t->events = scratch;
	t->cursor = (uint64_t)scratch;
	t->limit = (uint64_t)(scratch + sizeof(scratch) / sizeof(scratch[0]));
	t->base = sf_now_raw(); /* keeps the fast path fast, though nothing is kept */
}

static void thread_begin(struct sf_thread *t)
{
	uint32_t pid = __atomic_load_n(&proc_pid, __ATOMIC_RELAXED);
	if (pid && (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0) != pid) {
		start_dropping(t); /* the scratch buffer: shared, never read */
		t->state = SF_THREAD_IGNORED;
		__atomic_add_fetch(&vm_children, 1, __ATOMIC_RELAXED);
		return;
	}
	t->tid = sf_gettid();
#ifdef SF_ARCH_SHADOW
	/* The thread's stack bounds, looked up here, in a slow path already,
	 * rather than by its first landing, whose time the program sees. */
	(void)sf_stack_own_holds(0);
#endif
	uint32_t only = __atomic_load_n(&sf_setup_only_tid, __ATOMIC_ACQUIRE);
	if (only && only != t->tid) {
		/* SFTRACE_SETUP_THREAD_ONLY: other threads are not recorded
		 * (by request, so not counted as dropped). */
		start_dropping(t);
		t->state = SF_THREAD_IGNORED;
		return;
	}
	t->serial = __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
	t->seq = 0;
	sf_landing_mark.set = 0; /* a landing of an earlier slot life */
	t->slot = sf_log_slot_get();
	if (!t->slot) {
		start_dropping(t);
		/* Its exit counts the events still in the scratch buffer. */
		if (exit_key_ok) {
			pthread_setspecific(exit_key, (void *)1);
			thread_list(t);
		}
		return;
	}
	struct sf_chunk *h = t->slot->hdr;
	h->thread_serial = t->serial;
	h->tid = t->tid;
	h->seq = 0;
	sf_thread_name(h->name);
	t->events = (struct sf_event *)(h + 1);
	t->cursor = (uint64_t)t->events;
	t->limit = (uint64_t)(t->events + SF_SLOT_EVENTS);
	batch_begin(t);
	t->state = SF_THREAD_ACTIVE;
	if (sf_config.ring_slots)
		ring_start(t);
	/* No spare after the thread's exit hook (thread_list): one no hook
	 * may give back. */
	t->spare = sf_writer_active() && sf_config.writer == SF_WRITER_THREAD && !sf_config.ring_slots &&
			   t->listed != 2
			   ? sf_log_slot_get()
			   : NULL;
	__atomic_add_fetch(&live_threads, 1, __ATOMIC_RELAXED);
	/* The spare holds no batch until slot_swap switches to it: it stays
	 * free in the file (serial 0), or readers would see two slots holding
	 * batch 0. */
	sf_log_thread_started();
	if (exit_key_ok) {
		pthread_setspecific(exit_key, (void *)1);
		thread_list(t);
	}
}

static void thread_start(struct sf_thread *t)
{
	thread_begin(t);
	/* Last: the lines its first landing reads, for the reason above,
	 * asked for after this function's own work (a slot's hand-off can
	 * sleep, and wake on another CPU). unwind.c, "a thread's first
	 * landing". */
	sf_landing_warm();
}

/* A batch begins with this event: its slot's header gets the thread's
 * depth before it, + 1 (sf_chunk.reserved, SF_EV_UNWIND_TO), so a reader
 * that starts there (a ring's window) knows how many frames were open.
 * The trampoline already pushed (entry) or popped (exit, tail call) this
 * event's own frame. */
static void batch_depth(struct sf_thread *t, uint32_t kind)
{
#ifdef SF_ARCH_SHADOW
	uint64_t d = sf_shadow_depth(t);
	if (kind == SF_EV_ENTRY)
		d -= d > 0;
	else if (kind == SF_EV_EXIT || sf_kind_is_tail(kind))
		d++;
	__atomic_store_n(&t->slot->hdr->reserved, d + 1, __ATOMIC_RELAXED);
#else
	(void)t;
	(void)kind;
#endif
}

/* Whether an event of nrec records at `time`, stored now, would end the
 * batch (or step over a skip) while the context this signal handler
 * interrupted is inside args.c's claim (sf_thread.args_claim): the slot,
 * its limit and its base must stay as that claim saw them, so the event
 * is dropped (claim_drop), never waiting on the interrupted claim.
 * store_event asks with signals blocked, drop_under_claim before. */
static int claim_blocks(const struct sf_thread *t, uint64_t time, size_t nrec)
{
	if (__builtin_expect(!t->args_claim, 1) || t->state != SF_THREAD_ACTIVE)
		return 0;
	uint64_t c = __atomic_load_n(&t->cursor, __ATOMIC_RELAXED), cur = c < t->limit ? c : t->limit;
	return cur + nrec * sizeof(struct sf_event) > t->limit || !in_span(time, t->base);
}

/* Drops and counts such an event; a cursor the handler's claim took past
 * the limit goes back to it, so the records outside the buffer are not
 * counted (a CAS: a nested handler's xadd meanwhile is past it too). */
static void claim_drop(struct sf_thread *t)
{
	sf_log_drop(1);
	uint64_t c = __atomic_load_n(&t->cursor, __ATOMIC_RELAXED);
	if (c > t->limit)
		sf_arch_cas_local(&t->cursor, c, t->limit);
}

/* Stores one event (with its payload records for allocation events),
 * making room first if needed. Signals are blocked. */
static void store_event(struct sf_thread *t, uint64_t time, uint32_t id, uint32_t kind,
			const uint64_t *payload)
{
	size_t nrec = kind == SF_EV_ARGS ? 1 + id : event_records(kind); /* ARGS: id is the payload count */
	sf_shadow_resync(t, kind); /* before batch_depth reads the depth */
	if (t->state == SF_THREAD_NEW)
		thread_start(t);
	if (claim_blocks(t, time, nrec)) {
		claim_drop(t);
		return;
	}
	if (cur_skips && t->state == SF_THREAD_ACTIVE)
		skips_step(t, nrec);
	uint64_t cur = t->cursor < t->limit ? t->cursor : t->limit;
	size_t used = (size_t)(cur - (uint64_t)t->events) / sizeof(struct sf_event);
	/* An ARGS event keeps a record of room for its function event,
	 * which comes next on the slow path (args.c): in the slot after, a
	 * ring's window could start between the two and keep the entry
	 * without its values, unmarked (skeptic 29u's `g7() = -3330;` under
	 * --ring --trigger). */
	size_t room = nrec + (kind == SF_EV_ARGS ? event_records(SF_EV_ENTRY) : 0);
	int full = cur + room * sizeof(struct sf_event) > t->limit;
	if (t->state == SF_THREAD_ACTIVE && used && (full || !in_span(time, t->base))) {
		/* The batch ends here: full, or this event is too far from
		 * its base to be stored in it (the thread was idle). */
		if (handoff_full(t, used) < 0) {
			sf_log_drop(1);
			t->cursor = t->limit;
			return;
		}
		t->cursor = (uint64_t)t->events;
		if (pool || cur_skips)
			skips_enter(t); /* the new batch's limit: its slot's first skip */
	} else if (full) {
		if (t->state == SF_THREAD_DROPPING)
			sf_log_drop(used);
		t->cursor = (uint64_t)t->events;
	}
	/* An empty batch takes this event's time as its base; a thread
	 * without a slot re-bases at will, to keep its fast path. */
	if (!in_span(time, t->base) && (t->cursor == (uint64_t)t->events || t->state != SF_THREAD_ACTIVE))
		set_base(t, time);
	struct sf_event *e = (struct sf_event *)t->cursor;
	if (e == t->events && t->slot)
		batch_depth(t, kind);
	t->cursor += nrec * sizeof(struct sf_event);
	uint32_t zero = 0;
	for (size_t i = 1; payload && i < nrec; i++) { /* before the word that validates them */
		((uint64_t *)e)[i] = payload[i - 1];
		zero += (uint32_t)(payload[i - 1] >> 32) == 0;
	}
	store_record(e, time, id, kind);
	if (t->state == SF_THREAD_ACTIVE)
		sf_self.heap_zero += zero; /* see has_unfilled; signals are blocked */
}


#if defined(__x86_64__)
extern uint64_t sf_xsave_size SF_HIDDEN; /* arch/x86_64/clock.c */

/* What the return from a thread's first event (sf_slow_common, frame its
 * frame pointer) and the program's next call touch, brought back into the
 * caches and TLBs the set-up emptied: the save area below the frame (the
 * vector state's, which xrstor reads), the registers above it, the return
 * address's line and, after an entry or tail sled, what it called
 * through: the trampoline (mov $id,%r10d; call rel32) or, after a far
 * sled (call *slot(%rip)), the slot the program's next sled reads too.
 * Reads of the program's code only within the return address's page;
 * the rest is prefetched, which never faults. */
static void warm_frame(const uint64_t *frame, uint32_t kind)
{
	const volatile unsigned char *p = (const unsigned char *)frame - sf_xsave_size - 64;
	for (; p < (const unsigned char *)(frame + 11); p += 64)
		(void)*p;
	const unsigned char *ra = (const unsigned char *)frame[10];
	__builtin_prefetch(ra);
	if (kind == SF_EV_EXIT || ((uintptr_t)ra & (SF_PAGE - 1)) < 11)
		return;
	int32_t rel;
	if (ra[-6] == 0xff && ra[-5] == 0x15 && ra[0] == 0x3d) { /* far: ra is the sled's sixth byte */
		memcpy(&rel, ra - 4, sizeof(rel));
		__builtin_prefetch(ra + rel);
		return;
	}
	if (ra[-11] != 0x41 || ra[-10] != 0xba || ra[-5] != 0xe8)
		return;
	memcpy(&rel, ra - 4, sizeof(rel));
	__builtin_prefetch(ra + rel);
}
#endif

/* The time from a thread's first event's stamp to the program's next
 * instruction was the program's: 4-5 us in the process's first function,
 * 0.3-0.4 us in a later thread's (docs/DESIGN.md, "Times net of the
 * tracer"). The set-up (the log's creation, the slot's page faults) leaves
 * the slow path's rest, the trampoline's return and the program's next
 * sled cold. So, signals still blocked, the trampolines run a few times
 * into scratch (sf_calib_warm) and the return's lines are read again
 * (warm_frame); the event, stored with the stamp taken after the set-up,
 * is stamped again after the mask's system call (restamp_first), and on
 * x86-64 once more by the trampoline after its restore (sf_slow_common). */
static void warm_return(const uint64_t *frame, uint32_t kind)
{
	sf_calib_warm();
#if defined(__x86_64__)
	if (frame)
		warm_frame(frame, kind);
#else
	(void)frame;
	(void)kind;
#endif
}

/* Only while no other record followed e: a signal handler that recorded
 * events since the mask came off (a signal held back during the set-up
 * lands right there) leaves the first stamp, which is before its events.
 * One that lands after the check stamps its events after the new time,
 * read before it. */
static void restamp_first(struct sf_thread *t, struct sf_event *e)
{
	uint64_t now = sf_now_raw();
	if (__atomic_load_n(&t->cursor, __ATOMIC_RELAXED) == (uint64_t)(e + 1) && t->seq == 0 &&
	    t->state == SF_THREAD_ACTIVE && in_span(now, t->base))
		__atomic_store_n(&e->time_lo, (uint32_t)now, __ATOMIC_RELAXED);
}

/* Whether sf_shadow_resync has nothing to do. */
static int shadow_in_sync(const struct sf_thread *t)
{
#ifdef SF_ARCH_SHADOW
	return t->shadow_epoch == __atomic_load_n(&sf_resume_epoch, __ATOMIC_ACQUIRE);
#else
	(void)t;
	return 1;
#endif
}

/* A signal handler's event while the context it interrupted is inside
 * args.c's claim, which store_event would drop (claim_blocks): dropped and
 * counted here, before any system call. On the slow path proper (two
 * sigprocmask an event) a handler of a few calls took longer than a
 * 20 us timer's period on a paravirtualized machine (3.4 us a
 * sigprocmask): each return delivered the next signal at once, and the
 * interrupted claim, which ends the batch, never ran on (skeptic29s's
 * signal cases: 60 s timeouts; 100 M sigprocmask for 20,000 loops). Left
 * to the slow path: retired slots, a trigger function's event (watched)
 * and a shadow stack to resync, which need signals blocked; any other
 * event while a trigger is set drops here too (skeptic 7: a --trigger
 * that never fired brought the livelock back, 60 s timeouts, two
 * sigprocmask a drop). 1 if dropped. */
static int drop_under_claim(struct sf_thread *t, uint64_t time, size_t nrec, int watched)
{
	if (!claim_blocks(t, time, nrec) || nretired() || watched || !shadow_in_sync(t))
		return 0;
	claim_drop(t);
	return 1;
}

/* slow_event's part with every signal blocked (sf_masked_run). */
struct slow_args {
	uint64_t time;
	uint32_t func_id, kind;
	uint64_t claimed;
	const uint64_t *frame;
	struct sf_event *first; /* out: the thread's first record, if this made its slot */
};

static void slow_masked(void *arg)
{
	struct slow_args *a = arg;
	struct sf_thread *t = &sf_self;
	uint64_t time = a->time, claimed = a->claimed;
	uint32_t func_id = a->func_id, kind = a->kind;
	int skip = claimed && pool && skips_claimed(t, claimed);
	if (!skip && nretired() && store_in_retired(claimed, time, func_id, kind))
		return;
	/* The trampoline's xadd moved the cursor past the limit; take it back
	 * so the slot it claimed (outside the buffer) is not counted. */
	if (t->state != SF_THREAD_NEW && t->cursor > t->limit)
		t->cursor = t->limit;
	struct sf_event *first = NULL;
	if (t->state == SF_THREAD_NEW) {
		t->cursor = 0;
		/* Getting a slot (file space, mapping) takes a while: stamp the
		 * thread's first event after it, so the tracer's set-up cost
		 * does not show as time spent in the program's first call. */
		thread_start(t);
		time = sf_now_raw();
		first = t->state == SF_THREAD_ACTIVE ? t->events : NULL;
	}
	store_event(t, time, func_id, kind, NULL);
	if (__atomic_load_n(&sf_trigger_count, __ATOMIC_RELAXED))
		sf_trigger_event(func_id, kind, time);
	if (first)
		warm_return(a->frame, kind);
	a->first = first;
}

/* The trampolines' slow path; claimed is the record address their xadd
 * returned (0 in monotonic mode); frame the x86-64 trampoline's frame
 * pointer, or NULL. */
static struct sf_event *slow_event(uint64_t time, uint32_t func_id, uint32_t kind, uint64_t claimed,
				   const uint64_t *frame)
{
	struct sf_thread *t = &sf_self;
	if (sf_suppressed) { /* suppress.c: dropped, and counted (saturating) */
		uint32_t n = sf_suppressed;
		if (n < UINT32_MAX)
			__atomic_store_n(&sf_suppressed, n + 1, __ATOMIC_RELAXED);
		return NULL;
	}
	/* A tail sled that jumps to a patched entry carries SF_TAIL_ENTRY_ID_BITS
	 * in its id: kind 15, as the fast path's rotate makes it. */
	kind |= func_id >> (32 - SF_KIND_BITS);
	func_id &= SF_FUNC_ID_LIMIT - 1;
	if (time == 0) {
		/* Monotonic-clock mode sends every event here (and C callers
		 * such as unwind.c their own). While the buffer has room,
		 * claim a slot the way the trampoline does (one xadd, safe
		 * against signal handlers) and skip the signal masking. */
		time = sf_now_raw();
		if (t->state == SF_THREAD_ACTIVE && time - t->base < SF_TIME_SPAN) {
			uint64_t at = __atomic_fetch_add(&t->cursor, sizeof(struct sf_event), __ATOMIC_RELAXED);
			if (at + sizeof(struct sf_event) <= t->limit) {
				store_record((struct sf_event *)at, time, func_id, kind);
				if (__atomic_load_n(&sf_trigger_count, __ATOMIC_RELAXED))
					sf_trigger_event(func_id, kind, time);
				return NULL;
			}
			claimed = at;
		}
	}
	if (drop_under_claim(t, time, event_records(kind),
			     __atomic_load_n(&sf_trigger_count, __ATOMIC_RELAXED) && sf_trigger_watches(func_id)))
		return NULL;
	struct slow_args a = {.time = time, .func_id = func_id, .kind = kind, .claimed = claimed, .frame = frame};
	sf_masked_run(slow_masked, &a); /* section.c: on the thread's section stack */
	if (!a.first)
		return NULL;
	restamp_first(t, a.first);
	return sf_config.clock == SF_CLOCK_TSC ? a.first : NULL;
}

void sf_slow_event_at(uint64_t time, uint32_t func_id, uint32_t kind, uint64_t claimed)
{
	slow_event(time, func_id, kind, claimed, NULL);
}

/* The x86-64 trampolines' (trampoline.S, sf_slow_common): a thread's first
 * record comes back, for them to stamp again after their restore. */
struct sf_event *sf_slow_event_tramp(uint64_t time, uint32_t func_id, uint32_t kind, uint64_t claimed,
				     const uint64_t *frame)
{
	return slow_event(time, func_id, kind, claimed, frame);
}

struct ext_args {
	uint32_t kind;
	uint64_t x[2];
};

static void ext_masked(void *arg)
{
	struct ext_args *e = arg;
	struct sf_thread *t = &sf_self;
	if (t->state == SF_THREAD_NEW)
		thread_start(t);
	store_event(t, sf_now_raw(), 0, e->kind, e->x);
}

/* An event with a 16-byte payload (allocation events of the setup ABI):
 * three consecutive records, claimed together with signals blocked. */
void sf_record_ext(uint32_t kind, uint64_t a, uint64_t b)
{
	if (sf_suppressed) /* suppress.c */
		return;
	struct ext_args e = {.kind = kind, .x = {a, b}};
	sf_masked_run(ext_masked, &e);
}

void sf_record_payload(uint32_t id, uint32_t kind, uint64_t time, const uint64_t *payload)
{
	struct sf_thread *t = &sf_self;
	if (sf_suppressed) /* the runtime's own allocations, a vfork child's (suppress.c) */
		return;
	if (t->state == SF_THREAD_NEW) {
		thread_start(t);
		time = sf_now_raw();
	} else if (t->cursor > t->limit) {
		t->cursor = t->limit; /* see sf_slow_event_at */
	}
	store_event(t, time, id, kind, payload);
}

/* An event of an earlier time (alloc.c's heap events from before the
 * first patched sled), stored as it is: an empty batch takes its time as
 * its base (store_event), so the thread's first event keeps it too.
 * Signals blocked by the caller. */
void sf_record_payload_at(uint32_t id, uint32_t kind, uint64_t time, const uint64_t *payload)
{
	struct sf_thread *t = &sf_self;
	if (sf_suppressed)
		return;
	if (t->state != SF_THREAD_NEW && t->cursor > t->limit)
		t->cursor = t->limit; /* see sf_slow_event_at */
	store_event(t, time, id, kind, payload);
}

/* A claim cut by the end of the slot: records [at, limit) become one
 * ARGS event with an empty header (nitems 0, which readers skip), so the
 * slot holds no hole. Its zero records are counted for has_unfilled as
 * alloc.c counts its own (zero: sf_self.heap_zero read before the claim). */
static void fill_cut_claim(uint64_t at, uint64_t limit, uint64_t time, uint64_t zero)
{
	size_t n = (size_t)(limit - at) / sizeof(struct sf_event);
	uint64_t *r = (uint64_t *)at;
	for (size_t i = 1; i < n; i++)
		r[i] = 0;
	store_record((struct sf_event *)at, time, (uint32_t)(n - 1), SF_EV_ARGS);
	if (n > 1)
		sf_arch_cas_local(&sf_self.heap_zero, zero, zero + n - 1);
}

/* sf_record_args's slow part: a batch or the thread's first slot to
 * start, with signals blocked. */
struct args_slow {
	const uint64_t *payload;
	uint32_t n;
	uint64_t time;
};

static void args_masked(void *arg)
{
	struct args_slow *a = arg;
	struct sf_thread *t = &sf_self;
	uint64_t time = a->time;
	if (t->state == SF_THREAD_NEW) {
		thread_start(t);
		time = sf_now_raw();
	} else if (t->cursor > t->limit) {
		t->cursor = t->limit; /* see sf_slow_event_at */
	}
	store_event(t, time, a->n, SF_EV_ARGS, a->payload);
}

static void record_args_slow(uint64_t payload, uint64_t n, uint64_t time)
{
	struct args_slow a = {.payload = (const uint64_t *)(uintptr_t)payload, .n = (uint32_t)n, .time = time};
	sf_masked_run(args_masked, &a);
}

void sf_record_args(const uint64_t *payload, uint32_t n)
{
	struct sf_thread *t = &sf_self;
	if (sf_suppressed)
		return;
	uint64_t time = sf_config.clock == SF_CLOCK_TSC ? sf_arch_counter() : sf_mono_ns();
	size_t bytes = (1 + (size_t)n) * sizeof(struct sf_event);
	sf_args_claim_enter(t);
	if (t->state == SF_THREAD_ACTIVE && time - t->base < SF_TIME_SPAN) {
		/* One xadd claims the event and its payload, as the trampolines
		 * claim one record: a signal handler's records go before or
		 * after, never in between. */
		uint64_t zero = __atomic_load_n(&sf_self.heap_zero, __ATOMIC_RELAXED); /* before the claim: its batch */
		uint64_t at = sf_claim_local(&t->cursor, bytes);
		/* With a record to spare for the function event the caller
		 * stores next (store_event): never the slot's last records. */
		if (at + bytes < t->limit) {
			uint64_t *r = (uint64_t *)at;
			unsigned z = 0;
			for (uint32_t i = 0; i < n; i++) { /* before the word that validates them */
				r[1 + i] = payload[i];
				z += (uint32_t)(payload[i] >> 32) == 0;
			}
			store_record((struct sf_event *)at, time, n, SF_EV_ARGS);
			if (z) /* see has_unfilled */
				sf_arch_cas_local(&sf_self.heap_zero, zero, zero + z);
			sf_args_claim_leave(t);
			return;
		}
		if (at < t->limit)
			fill_cut_claim(at, t->limit, time, zero);
	}
	sf_args_claim_leave(t);
	if (drop_under_claim(t, time, 1 + (size_t)n, 0)) /* triggers look at function events, not ARGS */
		return;
	/* The args trampolines save no vector register (a plain ARGS event
	 * needs none); what follows may reach code that changes them (a
	 * slot's hand-off, batch_scan.o, libc), so it runs with the vector
	 * state saved: the program's floating-point arguments and return
	 * values are live at the sled (skeptic29n's g8 and SQLite cases). */
	sf_vec_safe_call3(record_args_slow, (uint64_t)(uintptr_t)payload, n, time);
}

/* A claim of args.c's fast path that the end of the slot cut. */
void sf_args_cut_claim(uint64_t at, uint64_t time, uint64_t zero)
{
	struct sf_thread *t = &sf_self;
	if (at < t->limit)
		fill_cut_claim(at, t->limit, time, zero);
}

/* What the trampolines do with a time they read: one xadd while the
 * buffer has room and the time is in the batch's span, else the slow path
 * with the record claimed (or none). */
SF_LANDING_TEXT void sf_record_event_at(uint32_t kind, uint32_t id, uint64_t time)
{
	struct sf_thread *t = &sf_self;
	uint64_t claimed = 0;
	if (sf_suppressed)
		return;
	if (t->state == SF_THREAD_ACTIVE && time - t->base < SF_TIME_SPAN) {
		claimed = __atomic_fetch_add(&t->cursor, sizeof(struct sf_event), __ATOMIC_RELAXED);
		if (claimed + sizeof(struct sf_event) <= t->limit) {
			store_record((struct sf_event *)claimed, time, id, kind);
			if (__atomic_load_n(&sf_trigger_count, __ATOMIC_RELAXED))
				sf_trigger_event(id, kind, time);
			return;
		}
	}
	sf_slow_event_at(time ? time : 1, id, kind, claimed);
}

/* Thread exit (pthread key destructor): hand off the partial batch and give
 * the slot back. Events after this (other destructors) start a new slot. */
static void thread_flush_exit(void)
{
	struct sf_thread *t = &sf_self;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	thread_unlist(t);
	if (t->state == SF_THREAD_ACTIVE && sf_config.ring_slots) {
		ring_release(t);
		t->cursor = t->limit = 0;
		t->state = SF_THREAD_NEW;
		__atomic_sub_fetch(&live_threads, 1, __ATOMIC_RELAXED);
	} else if (t->state == SF_THREAD_ACTIVE) {
		uint64_t cur = t->cursor < t->limit ? t->cursor : t->limit;
		size_t n = (size_t)(cur - (uint64_t)t->events) / sizeof(struct sf_event);
		if (t->spare)
			sf_writer_wait_ready(t->spare); /* its batch precedes this one */
		flush_retired(t, 1);
		pad_abandoned(t->events, n, t->base);
		if (retired) {
			munmap(retired, sizeof(*retired));
			retired = NULL;
		}
		slot_handoff(t, n);
		skips_release(t, n);
		struct sf_slot *s = t->slot;
		__atomic_store_n(&s->hdr->thread_serial, 0, __ATOMIC_RELEASE);
		if (t->spare) {
			__atomic_store_n(&t->spare->hdr->thread_serial, 0, __ATOMIC_RELEASE);
			sf_log_slot_put(t->spare);
			t->spare = NULL;
		}
		t->slot = NULL;
		t->cursor = t->limit = 0;
		t->state = SF_THREAD_NEW;
		sf_log_slot_put(s);
		__atomic_sub_fetch(&live_threads, 1, __ATOMIC_RELAXED);
	} else if (t->state == SF_THREAD_DROPPING || t->state == SF_THREAD_IGNORED) {
		uint64_t cur = t->cursor < t->limit ? t->cursor : t->limit;
		if (t->state == SF_THREAD_DROPPING)
			sf_log_drop((cur - (uint64_t)t->events) / sizeof(struct sf_event));
		t->cursor = t->limit = 0;
		t->state = SF_THREAD_NEW;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Another thread's name, from /proc/self/task/TID/comm; left as it was
 * when the file cannot be read (no /proc, the thread gone). */
static void task_name(uint32_t tid, char name[16])
{
	char path[48], buf[17];
	sf_task_path(path, tid, "/comm");
	long fd = sf_proc_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	long r = sf_syscall3(SYS_read, fd, (long)buf, 16);
	sf_syscall3(SYS_close, fd, 0, 0);
	if (r <= 0)
		return;
	if (buf[r - 1] == '\n')
		r--;
	__builtin_memset(name, 0, 16);
	__builtin_memcpy(name, buf, (size_t)r);
}

/* The names of the threads still running at process end into their
 * current slots: a name is otherwise taken when a batch begins, and one
 * set inside a thread's last batch would be lost (readers take a thread's
 * name from its newest batch). Not the hot path: the exit path only. */
static void refresh_live_names(void)
{
	struct sf_thread *self = &sf_self;
	if (self->state == SF_THREAD_ACTIVE && self->slot)
		sf_thread_name(self->slot->hdr->name);
	threads_lock_take();
	for (struct sf_thread *t = threads; t; t = t->next_thread) {
		struct sf_slot *s = __atomic_load_n(&t->slot, __ATOMIC_ACQUIRE);
		if (t != self && s && __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == SF_THREAD_ACTIVE)
			task_name(t->tid, s->hdr->name);
	}
	threads_lock_drop();
}

/* Process exit, on the exiting thread (no key destructor runs for it): a
 * thread without a slot counts what its scratch buffer holds as dropped.
 * (A thread with a slot keeps its last batch in the slot, named as the
 * thread is named now.) */
void sf_buffer_process_exit(void)
{
	struct sf_thread *t = &sf_self;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	refresh_live_names();
#ifdef SF_ARCH_SHADOW
	uint32_t lost = __atomic_load_n(&sf_shadow_lost, __ATOMIC_RELAXED);
	if (lost) { /* their landings were walked, or left to the readers' repair */
		char num[12], *p = num + sizeof(num);
		*--p = 0;
		do
			*--p = (char)('0' + lost % 10);
		while (lost /= 10);
		sf_rt_message("threads that had no shadow stack (its mapping failed; their landings are walked, or repaired by the readers): ",
			      p, NULL);
	}
#endif
	if (t->state == SF_THREAD_ACTIVE && t->slot && !sf_config.ring_slots) {
		uint64_t cur = t->cursor < t->limit ? t->cursor : t->limit;
		size_t n = (size_t)(cur - (uint64_t)t->events) / sizeof(struct sf_event);
		pad_abandoned(t->events, n, t->base);
		skips_exit(t, n);
	}
	if (t->state == SF_THREAD_DROPPING) {
		uint64_t cur = t->cursor < t->limit ? t->cursor : t->limit;
		sf_log_drop((cur - (uint64_t)t->events) / sizeof(struct sf_event));
		t->cursor = (uint64_t)t->events;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* fork child: this thread's slot belongs to the parent's log. Forget it;
 * the next event starts a fresh thread record in the child's own log. The
 * shadow stack's open frames are the parent's too: their entries are not
 * in the child's log, so a landing must not count them as closing any
 * frame of it (their exits pop nothing at depth 0). */
void sf_buffer_after_fork_child(void)
{
	struct sf_thread *t = &sf_self;
	__atomic_store_n(&proc_pid, (uint32_t)sf_syscall3(SYS_getpid, 0, 0, 0), __ATOMIC_RELAXED);
	__atomic_store_n(&vm_children, 0, __ATOMIC_RELAXED);
#ifdef SF_ARCH_SHADOW
	sf_shadow_set_depth(t, 0);
#endif
	t->cursor = t->limit = 0;
	t->events = NULL;
	t->slot = NULL;
	t->spare = NULL;
	t->ring = NULL; /* its mapping is the parent's (a page of address space) */
	t->state = SF_THREAD_NEW;
	if (retired)
		retired->n = 0; /* the parent's slots */
	if (pool)
		pool->n = 0; /* the parent's slots */
	cur_skips = NULL;
	sf_landing_mark.set = 0;
	next_serial = 1;
	live_threads = 0;
	/* The parent's ring records (copies of them here) and its freeze: the
	 * child has no writer thread, so no snapshots. */
	all_rings = free_rings = NULL;
	__atomic_store_n(&ring_lock, 0, __ATOMIC_RELAXED);
	/* Only this thread is left: it joins the list again at its next start. */
	threads = NULL;
	t->listed = 0;
	__atomic_clear(&threads_lock, __ATOMIC_RELAXED);
	sf_freeze_open = 0;
}

/* The pid the runtime last set up for (start, each fork child): where a
 * seccomp filter refuses getpid (logfile.c, log_is_own). */
uint32_t sf_buffer_pid(void)
{
	return __atomic_load_n(&proc_pid, __ATOMIC_RELAXED);
}

/* Process exit after tracing stopped at a seccomp filter (sandbox.c): no
 * system call, only what sf_buffer_process_exit counts in memory (the
 * events a slotless thread dropped since its last wrap). A current slot's
 * events are in the file already (the slot is the file's, MAP_SHARED). */
void sf_buffer_process_exit_stopped(void)
{
	struct sf_thread *t = &sf_self;
	if (t->state == SF_THREAD_DROPPING) {
		uint64_t cur = t->cursor < t->limit ? t->cursor : t->limit;
		sf_log_drop((cur - (uint64_t)t->events) / sizeof(struct sf_event));
		t->cursor = (uint64_t)t->events;
	}
}

/* A child forked after tracing stopped at a seccomp filter (hooks.c,
 * fork_bare): no call. Its pid is unknown (0: log_is_own's fallback then
 * never takes its parent's header for its own), it has no writer, and
 * its writer-side relay listening is its parent's. */
void sf_fork_child_stopped(void)
{
	__atomic_store_n(&proc_pid, 0, __ATOMIC_RELAXED);
	sf_writer_forget_stopped();
}
