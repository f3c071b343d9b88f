/* Process start and exit: read the configuration from the environment,
 * find and patch the objects loaded at start, mark the log at exit. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "format/ring_signal.h"
#include "runtime/runtime.h"

struct sf_config sf_config SF_HIDDEN;
uint64_t sf_start_tsc SF_HIDDEN, sf_start_mono SF_HIDDEN, sf_start_realtime SF_HIDDEN;

static size_t slen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* A decimal number in [lo, hi] from variable `name` (unset: dflt). -1
 * after a message. */
static int env_number(const char *name, uint64_t lo, uint64_t hi, uint64_t dflt, uint64_t *v)
{
	const char *s = getenv(name);
	*v = dflt;
	if (!s || !s[0])
		return 0;
	uint64_t n = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || n > UINT64_MAX / 10) {
			sf_rt_message(name, " is not a decimal number", s);
			return -1;
		}
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (n < lo || n > hi) {
		sf_rt_message(name, " is out of range", s);
		return -1;
	}
	*v = n;
	return 0;
}

/* record --ring: SFTRACE_RING (bytes per thread), SFTRACE_RING_SIGNAL,
 * SFTRACE_MAX_SNAPSHOTS. */
static int read_ring_config(void)
{
	uint64_t bytes, sig, maxs;
	if (env_number(SF_ENV(RING), 2 * SF_SLOT_SIZE, (uint64_t)SF_SLOT_SIZE << 20, 0, &bytes) < 0 ||
	    env_number(SF_ENV(RING_SIGNAL), 1, 64, SIGUSR2, &sig) < 0 ||
	    env_number(SF_ENV(MAX_SNAPSHOTS), 0, UINT32_MAX, 100, &maxs) < 0)
		return -1;
	/* Only signals without a meaning of their own to the program
	 * (format/ring_signal.h says why); record refuses the others too. */
	if (bytes && sf_ring_signal_refused((int)sig)) {
		sf_rt_message(SF_ENV(RING_SIGNAL) " must be USR1, USR2 or a real-time signal", "", getenv(SF_ENV(RING_SIGNAL)));
		return -1;
	}
	sf_config.ring_slots = (uint32_t)(bytes / SF_SLOT_SIZE);
	sf_config.ring_signal = (int)sig;
	sf_config.max_snapshots = (uint32_t)maxs;
	return 0;
}

/* Every variable is validated: a bad value is reported and tracing stays
 * off rather than guessing. */
static int read_config(void)
{
	const char *out = getenv(SF_ENV(OUTPUT_FILE));
	if (!out || !out[0])
		return 0; /* no output file: no tracing (the reference tool's rule) */
	size_t len = slen(out);
	if (len >= sizeof(sf_config.output) - 64) {
		sf_rt_message(SF_ENV(OUTPUT_FILE) " is too long", "", NULL);
		return 0;
	}
	if (out[0] != '/') {
		/* Children may chdir before their first event: fix the path now. */
		if (!getcwd(sf_config.output, sizeof(sf_config.output) - len - 2)) {
			sf_rt_message(SF_ENV(OUTPUT_FILE) " is relative and the cwd is unknown", "", NULL);
			return 0;
		}
		size_t c = slen(sf_config.output);
		sf_config.output[c] = '/';
		memcpy(sf_config.output + c + 1, out, len + 1);
	} else {
		memcpy(sf_config.output, out, len + 1);
	}

	const char *clock = getenv(SF_ENV(CLOCK));
	if (clock && clock[0]) {
		if (!strcmp(clock, "tsc"))
			sf_config.clock = SF_CLOCK_TSC;
		else if (!strcmp(clock, "monotonic"))
			sf_config.clock = SF_CLOCK_MONOTONIC;
		else {
			sf_rt_message(SF_ENV(CLOCK) " must be 'tsc' or 'monotonic', not ", clock, NULL);
			return 0;
		}
	}
	/* auto by default: a writer thread takes the copy into the page cache
	 * off the traced threads while there is a CPU to spare for it
	 * (bench/README.md: 15% less overhead for a single-threaded program
	 * on 2 CPUs, 10% more when the program's threads already fill them). */
	const char *writer = getenv(SF_ENV(WRITER));
	sf_config.writer = SF_WRITER_AUTO;
	if (writer && writer[0]) {
		if (!strcmp(writer, "thread"))
			sf_config.writer = SF_WRITER_THREAD;
		else if (!strcmp(writer, "sync"))
			sf_config.writer = SF_WRITER_SYNC;
		else if (strcmp(writer, "auto")) {
			sf_rt_message(SF_ENV(WRITER) " must be 'auto', 'thread' or 'sync', not ", writer, NULL);
			return 0;
		}
	}
	/* auto under valgrind: the traced thread hands off (sync). valgrind
	 * runs one thread at a time, so a writer takes no copy off anyone
	 * there, and under it the writer keeps the program's descriptor table
	 * (logfile.c, own_table_refused): the log's descriptor is in that
	 * table during each of the writer's writes, and valgrind may switch
	 * to a program thread in the middle of one, which then lists it in
	 * /proc/self/fd (fd 1023 at main's start in 2 runs of 6 of
	 * test_skeptic24z's close-all case). A thread's own hand-off is
	 * never in flight while that thread lists. --writer thread (or a
	 * ring, a switch) still gets the writer thread; callgrind cost cases
	 * ask for it, their figures measured with the writer. */
	if (sf_config.writer == SF_WRITER_AUTO && sf_running_on_valgrind())
		sf_config.writer = SF_WRITER_SYNC;
	/* packed by default (format version 4); raw keeps the 8-byte records
	 * of version 3 in DATA chunks, for comparison (bench/encoding.py). */
	const char *enc = getenv(SF_ENV(ENCODING));
	sf_config.encoding = SF_ENCODING_PACKED;
	if (enc && enc[0]) {
		if (!strcmp(enc, "raw"))
			sf_config.encoding = SF_ENCODING_RAW;
		else if (strcmp(enc, "packed")) {
			sf_rt_message(SF_ENV(ENCODING) " must be 'packed' or 'raw', not ", enc, NULL);
			return 0;
		}
	}
	if (env_number(SF_ENV(MIN_DURATION), 0, UINT64_MAX / 2, 0, &sf_config.trim_min_ns) < 0)
		return 0;
	uint64_t depth = 0;
	if (env_number(SF_ENV(MAX_DEPTH), 0, 1u << 30, 0, &depth) < 0)
		return 0;
	sf_config.trim_max_depth = (uint32_t)depth;
	if (sched_getaffinity(0, sizeof(sf_config.cpus), &sf_config.cpus) == 0) {
		sf_config.ncpus = CPU_COUNT(&sf_config.cpus);
	} else {
		sf_config.ncpus = 1;
		CPU_ZERO(&sf_config.cpus);
	}
	if (read_ring_config() < 0)
		return 0;
	const char *filter = getenv(SF_ENV(FILTER));
	if (filter && filter[0]) {
		if (slen(filter) >= sizeof(sf_config.filter)) {
			sf_rt_message(SF_ENV(FILTER) " is too long", "", NULL);
			return 0;
		}
		memcpy(sf_config.filter, filter, slen(filter) + 1);
	}
	return 1;
}

/* A new log (the first, or a fork child's) starts with the objects patched
 * so far and what patching them cost. */
static void log_created(void)
{
	sf_objects_log_all();
	sf_args_log_specs(1);
	sf_log_update_patch_stats(sf_patch_ns, sf_objects_patched_total());
	struct sf_header *h = sf_log_header();
	if (h) {
		h->reserved[SF_HDR_COST] = sf_hdr_cost_pack(sf_cost_parent, sf_cost_child);
		h->cost_spread = sf_hdr_cost_pack(sf_cost_lo, sf_cost_hi);
	}
	sf_log_note_options();
	sf_switch_log_created();
}

/* Start-up comes in two steps, because the runtime's constructor is the
 * first of the process (libsftrace.so is linked -z initfirst: DF_1_INITFIRST
 * makes glibc's _dl_init call it before the executable's preinit array and
 * before every other object's constructors, libc's own included;
 * docs/DESIGN.md "Start-up" says what holds at that point and why):
 *   1. sf_init, in that constructor: configuration, clock, patching, the
 *      loader hook. Nothing in it calls code of the program's (its malloc
 *      above all: an allocator library's constructor has not run yet), so
 *      every constructor after it, of any object, runs patched, and with
 *      --alloc every allocation they make is recorded.
 *   2. sf_services_start (the writer thread, the ring and switch signals):
 *      once every library's constructor has run, where the whole start-up
 *      ran before. pthread_create calls the program's malloc and makes the
 *      process multi-threaded (__libc_single_threaded), which the
 *      libraries' constructors must not see. Until then a full slot is
 *      written by its own thread, as in a forked child. */
static int libraries_ready;

/* The start's three clocks as one moment. Readers place a forked child's
 * start at start_realtime + (its fork time - start_mono), so any gap
 * between the realtime and monotonic reads moves every child's start by
 * that much: sf_clock_init (it may read /proc) once sat between them, and
 * on a loaded machine put children 1 ms and more before their fork. The
 * realtime read is bracketed by two monotonic ones and taken again when a
 * preemption made the bracket wide. */
static void take_start_clocks(void)
{
	uint64_t m0 = 0, m1 = 0;
	struct timespec rt = {0, 0};
	for (int tries = 0; tries < 8; tries++) {
		m0 = sf_mono_ns();
		clock_gettime(CLOCK_REALTIME, &rt);
		m1 = sf_mono_ns();
		if (m1 - m0 < 20000)
			break;
	}
	sf_start_realtime = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	sf_start_mono = m0 + (m1 - m0) / 2;
	sf_start_tsc = sf_config.clock == SF_CLOCK_TSC ? sf_now_raw() : 0;
}

static void start_tracing(void)
{
	/* Under filters installed where the tracer did not see them, any of
	 * the runtime's calls may kill the program: none is made (sandbox.c) */
	const char *out = getenv(SF_ENV(OUTPUT_FILE));
	if (out && out[0] && sf_seccomp_start_unknown())
		return;
	sf_notes_init();
	if (!read_config())
		return;
	sf_stack_init(); /* the main thread's stack bounds: landings need them */
	sf_root_init();
	sf_exec_env_init();
	sf_budget_init();
	sf_clock_init();
	take_start_clocks();
	sf_switch_config();
	if (!sf_switch_enabled())
		sf_calib_measure(); /* before any sled is patched: it borrows this thread's buffer */
	if (sf_filter_init() < 0)
		return; /* the filter said why; never trace silently without it */
	sf_trigger_init();
	sf_args_init();
	sf_log_on_create(log_created);
	sf_config.enabled = 1;
	if (!libraries_ready)
		sf_keeper_early_allow(1); /* a log made before step 2: a keeper's (writer.c) */
	struct sf_suppress_state quiet;
	sf_suppress_begin(&quiet);
	sf_buffer_init();
	sf_hooks_init();
	sf_objects_scan(0);
	sf_loader_hook_install();
#ifdef SF_ARCH_SHADOW
	sf_unwind_init(); /* finds libgcc_s if loaded; without a shadow stack it loads it: step 2 */
#endif
	sf_bind_scan(1); /* the stand-ins, before any other constructor (got_bind.c) */
	sf_suppress_end(&quiet);
}

/* Step 2. What it does allocates, and none of that is the program's. */
static void after_libraries(void)
{
	sf_keeper_early_allow(0); /* no early keeper from here (writer.c) */
	if (!sf_config.enabled)
		return;
	struct sf_suppress_state quiet;
	sf_suppress_begin(&quiet);
	sf_services_start();
#ifndef SF_ARCH_SHADOW
	sf_unwind_init(); /* may load libgcc_s (unwind.c) */
#endif
	sf_suppress_end(&quiet);
}

/* Step 2 at __libc_start_main (below). */
static __attribute__((noinline)) void start_main_step(void)
{
	int saved_errno = errno;
	libraries_ready = 1;
	after_libraries();
	errno = saved_errno;
}

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
			     void (*rtld_fini)(void), void *stack_end);
static start_main_fn real_start_main;

__attribute__((constructor(101))) static void sf_init(int argc, char **argv, char **envp)
{
	sf_rt_libc_init();
	sf_messages_init();
	/* libc's constructor sets environ (glibc's _init_first), and ours runs
	 * before it: getenv reads the envp every constructor is given until
	 * then, and environ is put back as it was, for the executable's
	 * preinit array. A NULL environ also says the libraries' constructors
	 * are still to come; set, it says this constructor was not the first
	 * (another initfirst object, or libsftrace.so dlopen'd) and step 2 may
	 * follow at once, as it always did. */
	int saved_errno = errno; /* what start-up's failed calls set is not the program's */
	char **had = environ;
	if (!had)
		environ = envp;
	else
		libraries_ready = 1;
	real_start_main = (start_main_fn)sf_real("__libc_start_main");
	sf_exec_env_resolve();
	sf_hooks_resolve();
	sf_unwind_resolve();
	/* Inert in setuid/setgid programs: never act on their environment. */
	if (!getauxval(AT_SECURE))
		start_tracing();
	if (!had && sf_config.enabled) {
		sf_log_watch_exit(); /* loaded with the process: see there */
		sf_watch_quick_exit();
	}
	environ = had;
	if (libraries_ready)
		after_libraries();
	errno = saved_errno;
}

/* Step 2, for an executable started by glibc's _start: it calls
 * __libc_start_main once _dl_init has run every library's constructor,
 * and __libc_start_main runs the executable's own constructors, then main
 * (glibc's csu/libc-start.c, call_init). Interposed here (LD_PRELOAD comes
 * before libc in the lookup order) and left by a tail call, so the stack
 * main and the executable's constructors see is the one they see
 * untraced. */
__attribute__((visibility("default"))) int sf_libc_start_main(main_fn main, int argc, char **argv,
							      void (*init)(void), void (*fini)(void),
							      void (*rtld_fini)(void), void *stack_end)
{
	if (!libraries_ready)
		start_main_step(); /* its own frame: no local of this one escapes, so clang also makes a tail call */
	return real_start_main(main, argc, argv, init, fini, rtld_fini, stack_end);
}
/* Exported as __libc_start_main with glibc's versions (arch/<arch>/exports.map):
 * an executable's reference (@GLIBC_2.34 since glibc 2.34, the older one
 * before) and dlvsym by either version find this one first, as a plain
 * lookup does; dlvsym skips an unversioned definition. */
__asm__(".symver sf_libc_start_main, __libc_start_main@@GLIBC_2.34, remove");
__asm__(".symver sf_libc_start_main, __libc_start_main@" SF_GLIBC_BASE_VERSION);

static int services_tried;

int sf_services_started(void)
{
	return services_tried;
}

/* The writer thread and, with a ring, the ring signal's handler, in a
 * process with sleds: at step 2 above, or from the loader hook when the
 * first instrumented object is loaded later (node loading an instrumented
 * addon). Never from the event path: pthread_create allocates with the
 * program's malloc (writer.c). The loader hook runs before the new
 * object's constructors, where those constructors may create threads too.
 * A ring always has a writer: it writes the snapshots. */
void sf_services_start(void)
{
	/* record --paused: nothing is patched yet, but the sleds are there. */
	int sleds = sf_switch_enabled() ? sf_objects_any_instrumented() : sf_objects_patched_total() != 0;
	if (services_tried || !libraries_ready || !sf_config.enabled || !sleds)
		return;
	services_tried = 1;
	/* A paused process needs its writer thread: it is the one that
	 * patches at a resume (switch.c). */
	if (sf_services_thread_wanted()) {
		sf_log_ctor_brief_end(); /* a log made in a constructor: the writer's from here */
		if (!sf_seccomp_refuses_writer())
			sf_log_early_keeper_end(); /* a log made before now: the writer's from here */
		sf_writer_start(sf_config.ncpus ? &sf_config.cpus : NULL);
	}
	if (sf_config.ring_slots)
		sf_snapshot_init();
	sf_switch_start();
}

/* A thread of the runtime's holds the log (the writer; in a fork child,
 * its keeper: writer.c): a ring, a switch, --writer thread, or auto on
 * more than one CPU. */
int sf_services_thread_wanted(void)
{
	return sf_config.ring_slots || sf_switch_enabled() || sf_config.writer == SF_WRITER_THREAD ||
	       (sf_config.writer == SF_WRITER_AUTO && sf_config.ncpus > 1);
}

/* fork: the child keeps the parent's answer (a child that did not exec has
 * no writer thread, and takes no snapshots). */
void sf_services_after_fork_child(void)
{
	services_tried = 1;
	sf_switch_after_fork_child();
}

__attribute__((destructor(101))) static void sf_fini(void)
{
	/* Tracing stopped at a seccomp filter (sandbox.c): the filter may
	 * refuse any call of these (a calibration's memory, the writer's
	 * hand-off, the log's end); the log keeps what it had, and record
	 * says where tracing stopped. */
	if (sf_config.enabled && !__atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE)) {
		sf_calib_remeasure();
		sf_writer_drain();
		sf_notes_relay_listen(0); /* drained: a relative's loss line was noted */
		sf_buffer_process_exit(); /* counts what a slotless thread dropped, log or not */
		sf_log_finish();
	} else if (sf_config.enabled) {
		sf_buffer_process_exit_stopped();
		sf_seccomp_exit_settle();
		sf_log_finish_stopped();
	}
}
