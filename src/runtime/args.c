/* record -A/-R: the arguments and return values of chosen functions.
 *
 * SFTRACE_ARGS names a file in the filter-file format that record wrote:
 * `object BUILD-ID PATH` lines, then one `0xADDR SPEC NAME` line per
 * function (format/sf_args.h). Only those functions' sleds are patched
 * with the args trampolines (SF_VARIANT_ARGS, arch/x86_64/trampoline.S),
 * which hand the argument registers to sf_args_capture and then go on to
 * the ordinary trampoline of their kind. Every other function keeps its
 * trampoline and pays nothing.
 *
 * sf_args_capture runs on the traced thread, from the sled, with only
 * general registers in use (the runtime is built -mgeneral-regs-only, so
 * the vector registers it reads from the save area stay live). Strings are
 * read with process_vm_readv on our own pid: an unmapped or unreadable
 * pointer makes the call fail instead of faulting, and is recorded so.
 *
 * record resolves the specs in the executable before it starts. Every
 * other object with sleds (a DT_NEEDED library, one dlopen'd later, the
 * program of an exec'd child) is resolved when it loads, before it is
 * scanned: sf_args_prepare_object runs `sftrace filter --args SPECS -p
 * OBJECT -o FILE` (SFTRACE_ARGS_SPECS, the specs as given) and adds the
 * file's functions to the table. One file per build-id in record's
 * private directory, so the processes of a run resolve each object once. */
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "format/filter_file.h"
#include "format/sf_args.h"
#include "format/xray_map.h"
#include "runtime/runtime.h"

#define MAX_ARG_FUNCS 16384
#define MAX_ARG_OBJECTS 64
#define HASH_SIZE 32768 /* power of two, twice MAX_ARG_FUNCS */

struct arg_item {
	uint8_t slot, fmt;
};

/* the header and up to SF_ARG_MAX_ITEMS slot/fmt pairs, in records */
#define PLAN_TMPL ((8 + 2 * SF_ARG_MAX_ITEMS + 7) / 8)
/* A FIXED plan's payload fits one ARGS event: sf_args_layout refuses
 * one that would not (then it is coded, and cut where it must be). */
_Static_assert(SF_ARG_MAX_VALUES <= SF_ARGS_VALUES_MAX && PLAN_TMPL <= SF_ARGS_MAX_RECORDS,
	       "SF_ARG_MAX_VALUES values-only records fit one ARGS event");
#define SMALL_PUTS 4 /* fill_small's largest count of values */

/* One direction (entry or exit) of one function, worked out once so that
 * the hot path copies registers to fixed offsets (SF_ARGS_FIXED): nrec
 * nonzero when every item has a fixed size (no strings). */
struct arg_plan {
	uint8_t n;     /* items */
	uint8_t flags; /* SF_ARGS_RET for the exit's */
	uint8_t nrec; /* FIXED: payload records, the header included; 0: coded (strings) */
	uint8_t nput; /* FIXED: values (the items less the STRUCT ones, which have none) */
	uint8_t nval; /* FIXED: records of the values-only layout (format/sf_args.h) */
	/* FIXED with nval <= 2 and 1 <= nput <= SMALL_PUTS: nput | nval << 4,
	 * the shape plan_event_fn picks a copy of event_shape by
	 * (fill_values's loops and zeroing cost more than their one or two
	 * records); 0: fill_values. */
	uint8_t small;
	/* FIXED, nput == nval: one value per record, each at its record's
	 * start (a value after another in the same record would make fewer
	 * records than values): fill_values without its zeroing and ORing. */
	uint8_t direct;
	/* Some item is in a vector register (an fparg, a float return value,
	 * a struct member there; set generously): on x86-64 the args
	 * trampoline leaves xmm0-7 to spill_fp, which stores them only for
	 * such a plan. */
	uint8_t fp;
	/* The function is a --trigger (trigger.c): its events go to the slow
	 * path, which looks at the trigger once the event is stored; the
	 * ARGS event before them goes through sf_record_args. Set on both
	 * plans, at patch time, before the sleds are patched. */
	uint8_t trigger;
	/* Coded (strings): the most bytes its items may take (worst_bytes)
	 * fit the payload, so encode need not keep room to mark the rest. */
	uint8_t roomy;
	/* FIXED, one word per value: bits 0-7 where its bytes start in
	 * struct sf_args_regs (8 x its register's word + a member's byte
	 * offset there: the 8 bytes loaded from there hold the value in their
	 * low bytes), 8-15 the payload record it goes in, 16-21 and 24-29 the
	 * left and right shifts that keep its low bytes and move them to
	 * their offset in that record. put: the FIXED layout's (the header is
	 * record 0); vput: the values-only one's. */
	uint32_t put[SF_ARG_MAX_VALUES];
	uint32_t vput[SF_ARG_MAX_VALUES];
	/* A small plan's values (fill_small): vput's two shifts as a mask of
	 * the value's bytes and one left shift to its offset, the same bits
	 * with fewer instructions (no shift count to work out twice). */
	uint64_t vmask[SMALL_PUTS];
	uint8_t vshift[SMALL_PUTS];
	struct arg_item it[SF_ARG_MAX_ITEMS];
	uint64_t tmpl[PLAN_TMPL]; /* FIXED: header (function id 0) and pairs, zeros where values go */
	/* What sf_args_event hands a plan of direct_plan to (set by
	 * plan_event_fn once make_plan is done): a small plan's copy of
	 * event_shape for its shape, a direct one's event_direct, else
	 * event_general's; one indirect jump instead of the tests of the
	 * shape and the switch, and no shuffle of the values into another
	 * call's registers. */
	int (*event)(const struct sf_args_regs *r, uint32_t word, const struct arg_plan *pl);
};
static void plan_event_fn(struct arg_plan *pl);
static int plan_roomy(const struct arg_plan *pl);

struct arg_func {
	uint32_t obj;      /* index into A.objs */
	uint64_t vaddr;
	struct arg_plan plan[2]; /* entry, exit */
};

static struct {
	struct arg_func f[MAX_ARG_FUNCS];
	uint32_t n;
	struct {
		uint8_t build_id[64];
		int build_id_len;
		uint32_t first, end; /* its functions: A.f[first, end), by vaddr */
		char path[1024];
	} objs[MAX_ARG_OBJECTS];
	uint32_t ids;       /* hash entries in use */
	uint32_t gen;       /* odd while hash_drop moves entries: a lookup that misses meanwhile looks again */
	int ids_full;       /* said once */
	uint32_t nobjs;
	uint32_t left_out; /* functions past MAX_ARG_FUNCS */
	uint32_t left_obj; /* the object of the first one (A.objs) */
	int objs_full;     /* said once: objects past MAX_ARG_OBJECTS */
	char specs[4096];  /* SFTRACE_ARGS_SPECS: "" when objects are not resolved as they load */
	char dir[4096];    /* SFTRACE_NOTES_DIR: where their files go */
	/* func_id | (index + 1) << 32, by hash of func_id: one load finds a
	 * function. Written at patch time (under the log lock) before the
	 * sled that looks it up is patched. */
	uint64_t slot[HASH_SIZE];
} A;

/* The plans of ids below DIRECT_IDS, [id][0] the entry's, [id][1] the
 * exit's, NULL for none: what sf_args_event looks up, one load instead of
 * the hash probe and the address arithmetic of A.f[index].plan[dir]
 * (about 20 instructions an ARGS event). Written beside the hash (under
 * the log lock, before the sled is patched), cleared beside it; ids past
 * it (more functions than that loaded, or numbered anew by dlopen churn)
 * take the hash. Untouched pages of it cost nothing (2 MiB of bss). */
#define DIRECT_IDS (1u << 17)
static const struct arg_plan *direct_plan[DIRECT_IDS][2];

/* Function ids whose specs the log does not have yet (sf_args_log_specs):
 * the values-only ARGS events of their FIXED plans read by them. */
#define SPEC_PENDING_MAX 4096
static struct {
	uint32_t id[SPEC_PENDING_MAX];
	uint32_t pending;
	int over;            /* more than SPEC_PENDING_MAX: all of them again */
	uint32_t count;      /* entries in buf */
	size_t len;
	uint8_t buf[16384];  /* the next ARGSPEC chunk's payload */
} S;

static void spec_flush(void)
{
	if (!S.count)
		return;
	struct sf_chunk c = {0};
	c.type = SF_CHUNK_ARGSPEC;
	c.count = S.count;
	sf_log_write_chunk(&c, S.buf, S.len, 0);
	S.count = 0;
	S.len = 0;
}

static int on_object(void *ctx, const char *bid, const char *path)
{
	(void)ctx;
	size_t n = strlen(path);
	if (A.nobjs == MAX_ARG_OBJECTS || n >= sizeof(A.objs[0].path)) {
		if (A.nobjs == MAX_ARG_OBJECTS && !A.objs_full++)
			sf_rt_message("argument specs: only the first 64 instrumented objects are resolved; not ", path,
				      "its functions are recorded without values");
		return 1;
	}
	A.objs[A.nobjs].build_id_len = ff_build_id_from_hex(bid, A.objs[A.nobjs].build_id, 64);
	memcpy(A.objs[A.nobjs].path, path, n + 1);
	A.objs[A.nobjs].first = A.objs[A.nobjs].end = A.n;
	A.nobjs++;
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int hex_byte(const char *p)
{
	int a = hex_digit(p[0]), b = a < 0 ? -1 : hex_digit(p[1]);
	return b < 0 ? -1 : a << 4 | b;
}

/* The word of struct sf_args_regs that holds integer argument register
 * i (0: the first), -1 if it is not saved (aarch64 saves x6 and x7 after
 * the return value, in saved[0] and saved[1]). */
static int gp_word(unsigned i)
{
	if (i < SF_ARGS_GP)
		return (int)(offsetof(struct sf_args_regs, gp) / 8 + i);
	if (i < SF_ARGS_NGP)
		return (int)(offsetof(struct sf_args_regs, saved) / 8 + i - SF_ARGS_GP);
	return -1;
}

/* The word of struct sf_args_regs an item's value is in (reg_of below
 * for the fixed-size ones); -1 if none (a stack argument: coded as 0). */
static int reg_index(uint8_t slot)
{
	unsigned i = slot & SF_ARG_SLOT_INDEX;
	size_t fp = offsetof(struct sf_args_regs, fp) / 8;
	if (slot & SF_ARG_SLOT_FP)
		return (int)(fp + (i && i <= 8 ? i - 1 : 0));
	if (!i)
		return (int)(offsetof(struct sf_args_regs, ret) / 8);
	return gp_word(i - 1);
}

/* The word of struct sf_args_regs a struct member's bytes are in (its
 * member slot, format/sf_args.h: registers counted from the first
 * argument's, or from the return value's); -1 if none. */
static int member_index(uint8_t slot, int ret)
{
	unsigned i = sf_arg_member_reg(slot);
	if (slot & SF_ARG_STACK) /* in memory: the coded layout reads it */
		return -1;
	size_t gp = offsetof(struct sf_args_regs, gp) / 8, fp = offsetof(struct sf_args_regs, fp) / 8;
	if (sf_arg_member_fp(slot))
		return (int)(fp + i);
	if (ret)
		return i == 0 ? (int)(offsetof(struct sf_args_regs, ret) / 8) : i == 1 ? (int)(gp + SF_ARGS_RET2) : -1;
	return gp_word(i);
}

/* Whether a plan's STRUCT items are followed by as many members as they
 * say, each a scalar that fits in its register, or for a struct in
 * memory, anywhere in its words (a file written by hand may say
 * otherwise). */
static int structs_ok(const struct arg_plan *pl)
{
	for (unsigned k = 0; k < pl->n; k++) {
		if (sf_arg_type(pl->it[k].fmt) != SF_AT_STRUCT)
			continue;
		unsigned m = sf_arg_struct_count(pl->it[k].fmt);
		uint8_t stack = pl->it[k].slot & SF_ARG_STACK;
		if (!m || k + m >= pl->n || (stack && (pl->flags & SF_ARGS_RET)))
			return 0; /* the stack arguments are where the entry found them */
		for (unsigned j = k + 1; j <= k + m; j++) {
			uint8_t fmt = pl->it[j].fmt;
			unsigned size = sf_arg_fixed_size(fmt);
			/* In memory a member may span two words (stack_member);
			 * in registers it is within its own. */
			if (!size || (!stack && sf_arg_member_byte(pl->it[j].slot) + size > 8) ||
			    (pl->it[j].slot & SF_ARG_STACK) != stack)
				return 0;
		}
		k += m;
	}
	return 1;
}

/* The shifts word of a value (struct arg_plan's put): from register
 * word src, its `size` bytes from byte `byte` on, to offset `off` of a
 * record array. The load starts at the value's first byte, so nothing
 * below it comes along: two shifts of the register word itself could not
 * drop both the bytes above a member and those below it, and the ones
 * below (the struct's earlier members) were ORed into the record's
 * bytes before it, another value's or the pairs (skeptic 29m: an aarch64
 * {short, float, short} then a double read as malformed). The left shift
 * drops the bytes above the value. */
static uint32_t put_word(int src, unsigned size, unsigned byte, unsigned off)
{
	unsigned bits = 64 - 8 * size;
	return (8u * (uint32_t)src + byte) | off / 8 << 8 | bits << 16 | (bits - 8 * (off % 8)) << 24;
}

/* The 8 bytes at byte `at` of the saved registers, unaligned (a struct
 * member's value starts there). Past a member in the last words they
 * reach at most 7 bytes beyond struct sf_args_regs, into the args
 * trampoline's own frame above it (x86-64: the saved rbp; aarch64: x30). */
static inline __attribute__((always_inline)) uint64_t regs_at(const struct sf_args_regs *r, uint32_t at)
{
	uint64_t x;
	memcpy(&x, (const uint8_t *)r + at, 8);
	return x;
}

/* Whether a plan may read a vector register: an item's slot that says
 * so, or a member's vector bit (bit 3) -- more than that is harmless,
 * fewer would record stale bytes. */
static int plan_reads_fp(const struct arg_plan *pl)
{
	for (unsigned k = 0; k < pl->n; k++)
		if (pl->it[k].slot & (SF_ARG_SLOT_FP | 8u))
			return 1;
	return 0;
}

/* The FIXED layout of a plan's items (format/sf_args.h), and its
 * values-only one, if they all have a fixed size and a register. */
static void make_plan(struct arg_plan *pl, uint8_t flags)
{
	uint8_t pairs[2 * SF_ARG_MAX_ITEMS], size[SF_ARG_MAX_ITEMS], foff[SF_ARG_MAX_ITEMS], voff[SF_ARG_MAX_ITEMS];
	unsigned members = 0, nval, end, vend;
	pl->nrec = 0;
	pl->nput = 0;
	pl->flags = flags;
	pl->fp = (uint8_t)plan_reads_fp(pl);
	memcpy(pairs, pl->it, 2u * pl->n);
	if (!pl->n || sf_args_layout(pairs, pl->n, size, foff, voff, &nval, &end, &vend) < 0)
		return;
	for (unsigned k = 0; k < pl->n; k++) {
		uint8_t slot = pl->it[k].slot, fmt = pl->it[k].fmt;
		if (sf_arg_type(fmt) == SF_AT_STRUCT) { /* no value of its own */
			members = sf_arg_struct_count(fmt);
			continue;
		}
		unsigned byte = members ? sf_arg_member_byte(slot) : 0, i = pl->nput;
		int src = members ? member_index(slot, flags & SF_ARGS_RET) : reg_index(slot);
		members -= members > 0;
		if (src < 0)
			return;
		pl->put[i] = put_word(src, size[i], byte, 8 + foff[i]); /* from the header's start */
		pl->vput[i] = put_word(src, size[i], byte, voff[i]);
		pl->nput++;
	}
	struct sf_args_head h = {0, (uint8_t)(flags | SF_ARGS_FIXED), pl->n, (uint16_t)end};
	memset(pl->tmpl, 0, sizeof(pl->tmpl));
	memcpy(pl->tmpl, &h, sizeof(h));
	memcpy(pl->tmpl + 1, pairs, 2u * pl->n);
	pl->nrec = (uint8_t)(1 + (end + 7) / 8);
	pl->nval = (uint8_t)((vend + 7) / 8);
	pl->direct = pl->nput == pl->nval;
	pl->small = pl->nval >= 1 && pl->nval <= 2 && pl->nput >= 1 && pl->nput <= SMALL_PUTS
			    ? (uint8_t)(pl->nput | pl->nval << 4)
			    : 0;
	for (unsigned k = 0; pl->small && k < pl->nput; k++) {
		/* x << bits >> (bits - 8 * (off % 8)) == (x & (~0 >> bits)) << 8 * (off % 8) */
		unsigned bits = pl->vput[k] >> 16 & 63, right = pl->vput[k] >> 24;
		pl->vmask[k] = ~0ull >> bits;
		pl->vshift[k] = (uint8_t)(bits - right);
	}
}

/* SPEC: items `eSSFF` / `xSSFF` separated by commas, up to a space. */
static int on_func(void *ctx, uint64_t vaddr, const char *rest)
{
	(void)ctx;
	if (!A.nobjs)
		return 1;
	if (A.n == MAX_ARG_FUNCS) { /* --auto-args on a huge program: the first ones */
		if (!A.left_out++)
			A.left_obj = A.nobjs - 1;
		return 0;
	}
	struct arg_func *f = &A.f[A.n];
	memset(f, 0, sizeof(*f));
	for (const char *p = rest;; p += 6) {
		int slot = hex_byte(p + 1), fmt = slot < 0 ? -1 : hex_byte(p + 3);
		if ((p[0] != 'e' && p[0] != 'x') || fmt < 0 || sf_arg_type((uint8_t)fmt) >= SF_AT_LIMIT)
			return 1;
		struct arg_plan *pl = &f->plan[p[0] == 'x'];
		if (pl->n == SF_ARG_MAX_ITEMS)
			return 1;
		pl->it[pl->n++] = (struct arg_item){(uint8_t)slot, (uint8_t)fmt};
		if (p[5] != ',')
			break;
	}
	f->plan[1].flags = SF_ARGS_RET; /* for structs_ok */
	if (!structs_ok(&f->plan[0]) || !structs_ok(&f->plan[1]))
		return 1;
	make_plan(&f->plan[0], 0);
	make_plan(&f->plan[1], SF_ARGS_RET);
	f->plan[0].roomy = (uint8_t)plan_roomy(&f->plan[0]);
	f->plan[1].roomy = (uint8_t)plan_roomy(&f->plan[1]);
	plan_event_fn(&f->plan[0]);
	plan_event_fn(&f->plan[1]);
	f->obj = A.nobjs - 1;
	f->vaddr = vaddr;
	A.n++; /* record writes one line per function (the first wins) */
	A.objs[f->obj].end = A.n;
	return 0;
}

/* Our pid, for process_vm_readv: cached, and set again in a fork child
 * (a vfork child records nothing: it never reads). */
static long cached_pid;

void sf_args_after_fork_child(void)
{
	cached_pid = sf_syscall3(SYS_getpid, 0, 0, 0);
}

static long self_pid(void)
{
	long pid = __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);
	return pid ? pid : sf_syscall3(SYS_getpid, 0, 0, 0);
}

/* A.f[lo, hi) by vaddr, for find_func (record writes them sorted; a
 * file written by hand may not be). Insertion sort: nearly always
 * nothing to move, no recursion, no allocation. */
static void sort_funcs(uint32_t lo, uint32_t hi)
{
	for (uint32_t i = lo + 1; i < hi; i++) {
		if (A.f[i - 1].vaddr <= A.f[i].vaddr)
			continue;
		struct arg_func t = A.f[i];
		uint32_t j = i;
		for (; j > lo && A.f[j - 1].vaddr > t.vaddr; j--)
			A.f[j] = A.f[j - 1];
		A.f[j] = t;
	}
}

/* Adds the objects and functions of a file record or sftrace filter
 * --args wrote (private directory: checked, trust.c). */
static void load_file(const char *path)
{
	const char *why = NULL;
	size_t len = 0, map_len = 0;
	char *text = sf_trust_load(path, 1, 0, &len, &map_len, &why);
	if (!text) {
		sf_rt_message("cannot read argument specs ", path, why);
		return;
	}
	struct ff_handler h = {NULL, on_object, on_func};
	char err[256];
	uint32_t n0 = A.n, objs0 = A.nobjs;
	if (ff_parse(text, len, &h, NULL, err, sizeof(err)) < 0 && !A.objs_full) {
		A.n = n0;
		A.nobjs = objs0;
		sf_rt_message("bad argument specs ", path, err);
	} else if (A.left_out) {
		/* Named by the object the user's program loaded, not by the
		 * file record wrote for it. */
		sf_rt_message("argument specs: functions past the first 16384 are recorded without values, from ",
			      A.objs[A.left_obj].path, NULL);
		A.left_out = 0;
	}
	munmap(text, map_len);
	for (uint32_t i = objs0; i < A.nobjs; i++)
		sort_funcs(A.objs[i].first, A.objs[i].end);
}

static int copy_env(const char *name, char *out, size_t cap)
{
	const char *v = getenv(name);
	size_t n = v ? strlen(v) : 0;
	if (!n || n >= cap)
		return -1;
	memcpy(out, v, n + 1);
	return 0;
}

void sf_args_init(void)
{
	cached_pid = sf_syscall3(SYS_getpid, 0, 0, 0);
	const char *path = getenv(SF_ENV(ARGS));
	if (path && path[0])
		load_file(path);
	/* The other objects' files go next to the specs, in record's private
	 * directory, and are made by the CLI. */
	if (copy_env(SF_ENV(ARGS_SPECS), A.specs, sizeof(A.specs)) < 0 ||
	    copy_env(SF_ENV(NOTES_DIR), A.dir, sizeof(A.dir) - 256) < 0)
		A.specs[0] = 0;
	else if (sf_cli_enable() < 0) {
		sf_rt_message("argument specs: no usable " SF_ENV(CLI), "",
			      "the functions of objects other than the program are recorded without values");
		A.specs[0] = 0;
	}
}

int sf_args_any(void)
{
	return A.n || A.specs[0];
}

int sf_args_per_object(void)
{
	return A.specs[0] != 0;
}

/* The object a file line named: by build-id when both have one, else by
 * path. */
static int is_object(uint32_t i, const uint8_t *bid, int bid_len, const char *path)
{
	if (bid_len && A.objs[i].build_id_len > 0)
		return bid_len == A.objs[i].build_id_len && !memcmp(bid, A.objs[i].build_id, (size_t)bid_len);
	return !strcmp(path, A.objs[i].path);
}

static int known_object(const uint8_t *bid, int bid_len, const char *path)
{
	for (uint32_t i = 0; i < A.nobjs; i++)
		if (is_object(i, bid, bid_len, path))
			return 1;
	return 0;
}

void sf_args_prepare_object(const char *path, const uint8_t *bid, size_t bid_len)
{
	if (!A.specs[0] || A.objs_full || known_object(bid, (int)bid_len, path))
		return;
	char file[4096];
	size_t d = strlen(A.dir);
	memcpy(file, A.dir, d);
	memcpy(file + d, "/args-", 7);
	if (ff_cache_name(bid, bid_len, path, file + d + 6, sizeof(file) - d - 6) < 0)
		return;
	if (access(file, F_OK) != 0) {
		/* After a chroot SFTRACE_CLI names whatever sits at that path
		 * in the new root: nothing is run there. */
		if (sf_root_changed()) {
			sf_rt_message("not resolving argument specs in ", path,
				      "the program changed its root directory (chroot); recorded without values");
			return;
		}
		const char *args[] = {"filter", "-q", "--args", A.specs, "-p", path, "-o", file, NULL};
		if (sf_cli_run(args) < 0) {
			sf_rt_message("could not resolve argument specs in ", path,
				      "sftrace filter --args failed (its message is above); recorded without values");
			return;
		}
	}
	/* Under the log lock: sf_args_select reads the table while another
	 * thread's objects are scanned. */
	sigset_t old;
	sf_log_lock_sig(&old);
	if (!known_object(bid, (int)bid_len, path))
		load_file(file);
	sf_log_unlock_sig(&old);
}

static int same_object(const struct sf_object_rt *o, uint32_t i)
{
	return is_object(i, o->info.build_id, o->info.build_id_len, o->path);
}

static uint32_t hash_of(uint32_t id)
{
	return (id * 2654435761u) & (HASH_SIZE - 1);
}

/* 1 if added, 0 if there, or -1 when the table is as full as it may get
 * (half: probes stay short, and a lookup always meets an empty entry). */
static int hash_put(uint32_t id, uint32_t index)
{
	for (uint32_t h = hash_of(id);; h = (h + 1) & (HASH_SIZE - 1)) {
		uint64_t e = __atomic_load_n(&A.slot[h], __ATOMIC_RELAXED);
		if ((uint32_t)e == id)
			return 0;
		if (!e) {
			if (A.ids >= HASH_SIZE / 2)
				return -1;
			A.ids++;
			__atomic_store_n(&A.slot[h], (uint64_t)(index + 1) << 32 | id, __ATOMIC_RELEASE);
			return 1;
		}
	}
}

static inline __attribute__((always_inline)) const struct arg_func *hash_get(uint32_t id)
{
	for (;;) {
		uint32_t gen = __atomic_load_n(&A.gen, __ATOMIC_ACQUIRE);
		for (uint32_t h = hash_of(id);; h = (h + 1) & (HASH_SIZE - 1)) {
			uint64_t e = __atomic_load_n(&A.slot[h], __ATOMIC_ACQUIRE);
			if ((uint32_t)e == id)
				return &A.f[(e >> 32) - 1];
			if (!e)
				break;
		}
		/* A miss while hash_drop moved entries may have passed the
		 * one sought on its way: look again (signals are blocked
		 * where it runs, so not on this thread). */
		if (!(gen & 1) && __atomic_load_n(&A.gen, __ATOMIC_ACQUIRE) == gen)
			return NULL;
	}
}

/* Removes id's entry (under the log lock), moving the entries after it
 * back so that every probe still meets its entry before an empty one
 * (no tombstones: a table churned by dlopen/dlclose never fills up).
 * Each entry moves whole (id and index in one store): a lookup finds the
 * right index or misses, and a miss while A.gen is odd or changed looks
 * again. */
static void hash_drop(uint32_t id)
{
	uint32_t h = hash_of(id);
	for (;; h = (h + 1) & (HASH_SIZE - 1)) {
		uint64_t e = A.slot[h];
		if (!e)
			return;
		if ((uint32_t)e == id)
			break;
	}
	__atomic_store_n(&A.gen, A.gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE); /* odd before any entry moves */
	for (uint32_t hole = h, j = (h + 1) & (HASH_SIZE - 1);; j = (j + 1) & (HASH_SIZE - 1)) {
		uint64_t e = A.slot[j];
		if (!e) {
			__atomic_store_n(&A.slot[hole], 0, __ATOMIC_RELEASE);
			break;
		}
		/* e may fill the hole if its probe from its home passes the
		 * hole before reaching j. */
		uint32_t home = hash_of((uint32_t)e);
		if (((j - home) & (HASH_SIZE - 1)) >= ((j - hole) & (HASH_SIZE - 1))) {
			__atomic_store_n(&A.slot[hole], e, __ATOMIC_RELEASE);
			hole = j;
		}
	}
	A.ids--;
	__atomic_store_n(&A.gen, A.gen + 1, __ATOMIC_RELEASE);
}

void sf_args_forget_ids(uint32_t first, uint32_t count)
{
	if (!A.ids)
		return;
	for (uint32_t id = first; id - first < count; id++) {
		if (id < DIRECT_IDS) {
			__atomic_store_n(&direct_plan[id][0], NULL, __ATOMIC_RELAXED);
			__atomic_store_n(&direct_plan[id][1], NULL, __ATOMIC_RELAXED);
		}
		if (id)
			hash_drop(id);
	}
}

/* The index in A.f of the function at vaddr of o; -1 if none. */
static int64_t find_func(const struct sf_object_rt *o, uint64_t vaddr)
{
	for (uint32_t k = 0; k < A.nobjs; k++) {
		if (!same_object(o, k))
			continue;
		uint32_t lo = A.objs[k].first, hi = A.objs[k].end;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (A.f[mid].vaddr < vaddr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < A.objs[k].end && A.f[lo].vaddr == vaddr)
			return lo;
	}
	return -1;
}

void sf_args_select(const struct sf_object_rt *o, uint64_t vaddr, uint32_t func_id, int kind, uint8_t *variant)
{
	/* The args trampolines of the sled's variant: within mode's gate or
	 * window count in front of them; a trigger's sleds take the plain
	 * args path, whose C sends its events to the slow path (`trigger`
	 * below), where the trigger is looked at. Before, those sleds kept
	 * their own trampolines, and a --trigger function or one opening a
	 * --within window recorded no values (skeptic29n). id 0 would read
	 * as an empty hash entry. */
	uint8_t to;
	switch (*variant) {
	case SF_VARIANT_PLAIN:
	case SF_VARIANT_SLOW:
		to = SF_VARIANT_ARGS;
		break;
	case SF_VARIANT_GATED:
	case SF_VARIANT_SLOW_GATED:
		to = SF_VARIANT_ARGS_GATED;
		break;
	case SF_VARIANT_WINDOW:
	case SF_VARIANT_SLOW_WINDOW:
		to = SF_VARIANT_ARGS_WINDOW;
		break;
	default:
		return;
	}
	if (!func_id)
		return;
	int trigger = *variant == SF_VARIANT_SLOW || *variant == SF_VARIANT_SLOW_GATED || *variant == SF_VARIANT_SLOW_WINDOW;
	int64_t i = find_func(o, vaddr);
	/* A sled with nothing to read keeps the plain trampoline: the exit
	 * of a function named by -A alone, or of a void one under -a, the
	 * entry of one named by -R alone (the args path would only find an
	 * empty plan, at five times a plain event's instructions). A
	 * tail-call sled reads nothing either; it takes the args path only
	 * to say that the asked-for return value is not known. */
	int ret = kind == XRAY_SLED_EXIT || kind == XRAY_SLED_TAIL;
	if (i < 0 || !A.f[i].plan[ret].n)
		return;
	/* Every load of an object numbers its functions anew (a library
	 * dlopen'd again after dlclose): each id finds the same entry. */
	int added = hash_put(func_id, (uint32_t)i);
	if (added < 0) {
		if (!A.ids_full++)
			sf_rt_message("argument specs: too many functions loaded; from ", o->path,
				      "on, functions are recorded without values");
		return;
	}
	if (added && (A.f[i].plan[0].n || A.f[i].plan[1].n)) { /* its spec goes in the log (below) */
		if (S.pending < SPEC_PENDING_MAX)
			S.id[S.pending++] = func_id;
		else
			S.over = 1;
	}
	if (trigger) /* not in direct_plan: sf_args_event finds it on its general path */
		A.f[i].plan[0].trigger = A.f[i].plan[1].trigger = 1;
	else if (func_id < DIRECT_IDS && sf_config.clock == SF_CLOCK_TSC) /* the clock is set at start */
		__atomic_store_n(&direct_plan[func_id][ret], &A.f[i].plan[ret], __ATOMIC_RELEASE);
	*variant = to;
}

/* The ARGSPEC entries of func_id's FIXED plans into S.buf, written as a
 * chunk when it fills. */
static void spec_put(uint32_t func_id)
{
	const struct arg_func *f = hash_get(func_id);
	for (int d = 0; f && d < 2; d++) {
		const struct arg_plan *pl = &f->plan[d];
		size_t len = SF_ARGSPEC_BYTES(pl->n);
		if (!pl->n)
			continue;
		if (!pl->nrec) {
			/* A coded plan (a string): an entry of no items, which
			 * only says that the function's events of this
			 * direction come with values, so that a reader marks
			 * those whose ARGS event a ring window cut off. Every
			 * reader takes it (8 bytes) and expands nothing by it. */
			struct sf_args_head h = {func_id, (uint8_t)(d ? SF_ARGS_RET : 0), 0, 0};
			if (S.len + 8 > sizeof(S.buf))
				spec_flush();
			memcpy(S.buf + S.len, &h, 8);
			S.len += 8;
			S.count++;
			continue;
		}
		/* Readers before h46args take 24 items and stop reading a
		 * chunk at an entry of more: such an entry goes in a chunk of
		 * its own (they skip it alone, the others read). */
		int alone = pl->n > SF_ARG_ITEMS_BEFORE_H46;
		if (S.len + len > sizeof(S.buf) || alone)
			spec_flush();
		uint64_t head = pl->tmpl[0] | func_id;
		memcpy(S.buf + S.len, &head, 8);
		memcpy(S.buf + S.len + 8, pl->tmpl + 1, len - 8);
		S.len += len;
		S.count++;
		if (alone)
			spec_flush();
	}
}

void sf_args_log_specs(int all)
{
	if (!sf_log_ready() || (!all && !S.pending && !S.over))
		return;
	if (all || S.over) {
		for (uint32_t h = 0; h < HASH_SIZE; h++)
			if (A.slot[h])
				spec_put((uint32_t)A.slot[h]);
	} else {
		for (uint32_t k = 0; k < S.pending; k++)
			spec_put(S.id[k]);
	}
	spec_flush();
	S.pending = 0;
	S.over = 0;
}

/* The end of the page that holds the return address the trampoline was
 * called with (x86-64, set by sf_args_event; 0 elsewhere): the pages from
 * the runtime's frames up to it are the ones this call has just written
 * (its pushes and frames, the call's return address), so they are mapped
 * and writable now. Above it, even on the thread's own stack, a page may
 * be PROT_NONE (a program's mprotect of its stack, a coroutine stack
 * carved from it with a guard page: skeptic29n). */
static __thread uint64_t args_hi __attribute__((tls_model("initial-exec")));

/* Of the n bytes at addr, those that lie on the stack this thread runs
 * on, at or above this frame and below args_hi, copied into out with
 * plain loads: the count (0 to n; 0 when addr is not there). A caller's
 * local buffer next to the call (SQLite under --auto-args,
 * docs/DESIGN.md). Main's stack starts at a random offset in its page
 * (ASLR), so a string budget often runs past args_hi's page end: its
 * part below it is still copied here, and only the rest needs the safe
 * read (read_mem, read_cstr: not even that when the NUL is in the part
 * copied). Loads through a volatile pointer (8 bytes, then bytes), so
 * that no libc memcpy (vector registers, which hold the program's
 * arguments here) is called. A signal or coroutine stack goes through
 * process_vm_readv whole. */
static inline __attribute__((always_inline)) unsigned stack_copy(uint64_t addr, uint8_t *out, unsigned n)
{
#ifdef SF_ARCH_SHADOW
	uint64_t cur = (uint64_t)__builtin_frame_address(0), lo = sf_self.stack.lo, hi = sf_self.stack.hi;
	uint64_t top = args_hi;
	if (cur < lo || cur >= hi || addr < cur || top > hi || addr >= top)
		return 0;
	if (top - addr < n)
		n = (unsigned)(top - addr);
	/* 8 bytes a load while 8 are left (a 16-byte --auto-args string:
	 * 2 loads, not 16), then bytes: none past addr + n */
	typedef uint64_t __attribute__((aligned(1), may_alias)) u64_any;
	unsigned i = 0;
	for (; i + 8 <= n; i += 8)
		*(u64_any *)(out + i) = *(const volatile u64_any *)(addr + i);
	const volatile uint8_t *src = (const volatile uint8_t *)addr;
	for (; i < n; i++)
		out[i] = src[i];
	return n;
#else
	(void)addr;
	(void)out;
	(void)n;
	return 0;
#endif
}

/* Up to n bytes at addr into out, never faulting, with one system call:
 * the count read (they stop at the first unreadable page), -1 if none.
 * Every read goes through process_vm_readv, even of the program's own
 * constants: no page is sure to stay readable (a program may mprotect
 * part of its own image, or unmap it; another thread may do so between
 * a check and a load), and a plain load there would kill it. One remote
 * piece per page: the call reads whole pieces, so a string that ends
 * before an unreadable page is still read. */
#define READ_PIECES 2 /* n is at most CALL_STR_BUDGET: one page boundary at most (past it, a short read) */
static int read_safe(uint64_t addr, uint8_t *out, unsigned n)
{
	if (__atomic_load_n(&sf_sandbox_no_vm_readv, __ATOMIC_RELAXED))
		return -1; /* a seccomp filter refuses the call (sandbox.c): it could kill */
	struct iovec local = {out, n}, remote[READ_PIECES];
	int k = 0;
	for (uint64_t at = addr, end = addr + n; at < end && k < READ_PIECES; k++) {
		uint64_t next = (at | (SF_PAGE - 1)) + 1;
		remote[k] = (struct iovec){(void *)at, (next < end ? next : end) - at};
		at = next;
	}
	long r = sf_syscall6(SYS_process_vm_readv, self_pid(), (long)&local, 1, (long)remote, k, 0);
	return r <= 0 ? -1 : (int)r;
}

/* Up to n bytes at addr into out: the part on this stack below args_hi
 * by loads (stack_copy), the rest by read_safe, from the first byte not
 * copied (from `from` when the caller copied up to there). The count
 * (stops at the first unreadable page), -1 if none. */
static int read_rest(uint64_t addr, uint8_t *out, unsigned n, unsigned from)
{
	if (from == n)
		return (int)n;
	int r = read_safe(addr + from, out + from, n - from);
	return r < 0 ? (from ? (int)from : -1) : (int)from + r;
}

static int read_mem(uint64_t addr, uint8_t *out, unsigned n)
{
	return read_rest(addr, out, n, stack_copy(addr, out, n));
}

/* The index of the first zero byte of out[from, to), -1 if none. 8 bytes
 * a test: the lowest bit of z is in the first zero byte (a borrow only
 * marks bytes above a zero one). */
static int find_nul(const uint8_t *out, unsigned from, unsigned to)
{
	unsigned i = from;
	for (; i + 8 <= to; i += 8) {
		uint64_t w;
		memcpy(&w, out + i, 8);
		uint64_t z = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
		if (z)
			return (int)(i + (__builtin_ctzll(z) >> 3));
	}
	for (; i < to; i++)
		if (!out[i])
			return (int)i;
	return -1;
}

/* Up to cap bytes of a NUL-terminated string at addr: the byte count
 * (the NUL excluded), *whole = 0 if it went on. -1: not readable. The
 * NUL is looked for first in the part stack_copy copied: found there,
 * no system call. */
static int read_cstr(uint64_t addr, uint8_t *out, unsigned cap, int *whole)
{
	unsigned pre = stack_copy(addr, out, cap);
	int at = find_nul(out, 0, pre);
	if (at < 0 && pre < cap) {
		int got = read_rest(addr, out, cap, pre);
		if (got < 0)
			return -1;
		at = find_nul(out, pre, (unsigned)got);
		pre = (unsigned)got;
	}
	*whole = at >= 0;
	return at >= 0 ? at : (int)pre;
}

/* len bytes at addr (a &str), at most cap of them: the count, -1 if not readable. */
static int read_bytes(uint64_t addr, uint64_t len, uint8_t *out, unsigned cap)
{
	unsigned want = len < cap ? (unsigned)len : cap;
	return want ? read_mem(addr, out, want) : 0;
}

/* The length byte and the bytes of a string value. */
static uint8_t *put_str(uint8_t *p, const uint8_t *end, uint64_t addr, uint64_t len, int rust, unsigned budget)
{
	if (!addr) {
		*p++ = SF_ARG_STR_NULL;
		return p;
	}
	unsigned cap = (unsigned)(end - p) - 1;
	if (cap > budget)
		cap = budget;
	if (!cap) { /* the call's string budget is spent: cut, nothing read */
		*p++ = 0x80;
		return p;
	}
	int whole = 1;
	int n = rust ? read_bytes(addr, len, p + 1, cap) : read_cstr(addr, p + 1, cap, &whole);
	if (rust && n >= 0)
		whole = (uint64_t)n == len;
	if (n < 0 || (rust && len && !n)) {
		*p++ = SF_ARG_STR_UNREADABLE;
		return p;
	}
	*p = (uint8_t)(n | (whole ? 0 : 0x80));
	return p + 1 + n;
}

static uint64_t truncate_int(uint64_t v, uint8_t fmt)
{
	unsigned size = sf_arg_size(fmt);
	if (size == 8)
		return v;
	unsigned bits = size * 8;
	uint64_t m = (1ull << bits) - 1;
	v &= m;
	if (sf_arg_type_signed(sf_arg_type(fmt)) && (v >> (bits - 1) & 1))
		v |= ~m;
	return v;
}

/* The register an item names: argN (1-based, in integer registers),
 * fpargN (vector registers), the return value. */
static uint64_t reg_of(const struct sf_args_regs *r, uint8_t slot, int second)
{
	unsigned i = slot & SF_ARG_SLOT_INDEX;
	if (slot & SF_ARG_SLOT_FP)
		return i && i <= 8 ? r->fp[i - 1] : r->fp[0];
	if (!i)
		return second ? r->gp[SF_ARGS_RET2] : r->ret;
	int w = gp_word(i - 1 + (unsigned)second);
	return w < 0 ? 0 : ((const uint64_t *)r)[w];
}

#if defined(__x86_64__) && defined(SF_ARCH_SHADOW)
/* The bytes of the struct in memory at it[0] (its members the next
 * ones) up to its last member's end, in whole 8-byte words: each member
 * from its byte in its word on, a packed struct's `long` at byte 1
 * reaching into the next word. */
static unsigned stack_struct_bytes(const struct arg_item *it)
{
	unsigned m = sf_arg_struct_count(it[0].fmt), end = 0;
	for (unsigned j = 1; j <= m; j++) {
		unsigned e = 8 * sf_arg_member_reg(it[j].slot) + sf_arg_member_byte(it[j].slot) +
			     sf_arg_fixed_size(it[j].fmt);
		if (e > end)
			end = e;
	}
	return (end + 7) & ~7u;
}
#endif

/* The struct in memory at it[0]'s bytes (stack_struct_bytes), if they
 * lie on the stack this thread runs on, above this frame, so mapped:
 * they do when the function takes the struct as its DWARF says (the
 * caller wrote them just before the call); a prototype the optimiser
 * changed could put them past the stack's top. 0 if not. */
static unsigned stack_readable(const struct sf_args_regs *r, const struct arg_item *it)
{
#if defined(__x86_64__) && defined(SF_ARCH_SHADOW)
	unsigned bytes = stack_struct_bytes(it);
	uint64_t last = r->saved[SF_ARGS_STACK] + 8 * (it[0].slot & ~SF_ARG_STACK & 0xffu) + bytes - 1;
	return r->saved[SF_ARGS_STACK] && bytes && sf_on_this_stack(last) ? bytes : 0;
#else
	(void)r;
	(void)it;
	return 0; /* aarch64 passes no struct in memory: larger ones by reference */
#endif
}

/* A member of the struct in memory at stack word `word` (its first
 * `bytes` bytes stack_readable checked): the 8 bytes from its first byte,
 * unaligned, as regs_at reads registers (a packed struct's `long` at
 * byte 1 spans two words). A member in the struct's last 8 bytes is read
 * from those, shifted down: no load passes the struct's bytes. */
static uint64_t stack_member(const struct sf_args_regs *r, unsigned word, uint8_t slot, unsigned bytes)
{
	const uint8_t *base = (const uint8_t *)r->saved[SF_ARGS_STACK] + 8 * word;
	unsigned at = 8 * sf_arg_member_reg(slot) + sf_arg_member_byte(slot), from = at + 8 <= bytes ? at : bytes - 8;
	uint64_t x;
	memcpy(&x, base + from, 8);
	return x >> (8 * (at - from));
}

/* A struct member's value (struct_slot: its STRUCT item's; bytes: a
 * struct in memory's, stack_readable's): the bytes from its offset on,
 * of its register or the stack. */
static uint64_t member_value(const struct sf_args_regs *r, uint8_t struct_slot, uint8_t slot, int ret,
			     unsigned bytes)
{
	if (slot & SF_ARG_STACK)
		return stack_member(r, struct_slot & ~SF_ARG_STACK, slot, bytes);
	int idx = member_index(slot, ret);
	return idx < 0 ? 0 : ((const uint64_t *)r)[idx] >> 8 * sf_arg_member_byte(slot);
}

/* String bytes one entry's (or exit's) values take in all, whatever their
 * number: past it, strings are recorded cut, with no read at all. */
#define CALL_STR_BUDGET 64u

/* The most bytes item it codes to (its slot/format pair included; a
 * STRUCT's members with it), strings at most `left` bytes of their own. */
static unsigned worst_item(const struct arg_item *it, unsigned left)
{
	unsigned type = sf_arg_type(it->fmt), size = sf_arg_size(it->fmt);
	switch (type) {
	case SF_AT_STRUCT: {
		unsigned w = 2;
		for (unsigned j = 1; j <= sf_arg_struct_count(it->fmt); j++)
			w += worst_item(it + j, left);
		return w;
	}
	case SF_AT_NONE:
		return 2;
	case SF_AT_DOUBLE:
		return 2 + 8;
	case SF_AT_FLOAT:
		return 2 + 4;
	case SF_AT_STR:
	case SF_AT_RSTR:
		return 2 + 1 + (sf_arg_str_cap(it->fmt) < left ? sf_arg_str_cap(it->fmt) : left);
	default: /* LEB128 of 8 * size bits, zigzag-coded or not: 10, 5, 3, 2 bytes */
		return 2 + (8 * size + 1 + 6) / 7;
	}
}

/* Whether a coded plan's items always fit one payload (struct
 * arg_plan's roomy): the strings share CALL_STR_BUDGET. */
static int plan_roomy(const struct arg_plan *pl)
{
	unsigned total = 0, strs = 0;
	for (unsigned k = 0; k < pl->n; k++) {
		unsigned type = sf_arg_type(pl->it[k].fmt);
		if (type == SF_AT_STR || type == SF_AT_RSTR)
			strs += sf_arg_str_cap(pl->it[k].fmt);
		total += worst_item(&pl->it[k], 0);
		if (type == SF_AT_STRUCT) /* counted with it */
			k += sf_arg_struct_count(pl->it[k].fmt);
	}
	return total + (strs < CALL_STR_BUDGET ? strs : CALL_STR_BUDGET) <= 8 * (SF_ARGS_MAX_RECORDS - 1);
}

/* Items coded after the header (*done of them); returns the end. When a
 * plan's items may not all fit (not roomy: a --auto-args function of many
 * parameters, strings among them), each top-level item is coded only if
 * it fits with 2 bytes to spare, else a NONE item SF_ARG_SLOT_REST (shown
 * `<unrecorded>`) ends the payload: the values cut are marked. */
static uint8_t *encode(const struct arg_plan *pl, const struct sf_args_regs *r, uint8_t *p, const uint8_t *end,
		       unsigned *done)
{
	const struct arg_item *it = pl->it;
	unsigned left = CALL_STR_BUDGET, members = 0, struct_bytes = 0;
	uint8_t struct_slot = 0;
	*done = 0;
	for (unsigned k = 0; k < pl->n; k++, ++*done) {
		unsigned next = k + 1 + (sf_arg_type(it[k].fmt) == SF_AT_STRUCT && !members ? sf_arg_struct_count(it[k].fmt) : 0);
		if (!pl->roomy && !members && (unsigned)(end - p) < worst_item(&it[k], left) + (next < pl->n ? 2 : 0)) {
			*p++ = SF_ARG_SLOT_REST;
			*p++ = sf_arg_fmt(SF_AT_NONE, 8);
			++*done;
			break;
		}
		if (end - p < 2) /* not met: roomy, or checked above */
			break;
		uint8_t fmt = it[k].fmt;
		unsigned type = sf_arg_type(fmt);
		if (type == SF_AT_STRUCT && (it[k].slot & SF_ARG_STACK) && !(struct_bytes = stack_readable(r, it + k))) {
			/* Not on this stack: not recorded, its members left out. */
			*p++ = it[k].slot;
			*p++ = sf_arg_fmt(SF_AT_NONE, 8);
			k += sf_arg_struct_count(fmt);
			continue;
		}
		uint64_t v;
		if (members) { /* a struct's member */
			v = member_value(r, struct_slot, it[k].slot, pl->flags & SF_ARGS_RET, struct_bytes);
			members--;
		} else {
			v = reg_of(r, it[k].slot, 0);
		}
		*p++ = it[k].slot;
		*p++ = fmt;
		switch (type) {
		case SF_AT_STRUCT: /* its members follow */
			members = sf_arg_struct_count(fmt);
			struct_slot = it[k].slot;
			break;
		case SF_AT_DOUBLE:
			memcpy(p, &v, 8);
			p += 8;
			break;
		case SF_AT_FLOAT:
			memcpy(p, &v, 4);
			p += 4;
			break;
		case SF_AT_NONE: /* the slot and format say it all */
			break;
		case SF_AT_STR:
		case SF_AT_RSTR: {
			unsigned cap = sf_arg_str_cap(fmt) < left ? sf_arg_str_cap(fmt) : left;
			uint64_t len = type == SF_AT_RSTR ? reg_of(r, it[k].slot, 1) : 0;
			uint8_t *at = p;
			p = put_str(p, end, v, len, type == SF_AT_RSTR, cap);
			if (*at < SF_ARG_STR_NULL)
				left -= *at & 0x7fu;
			break;
		}
		default:
			v = truncate_int(v, fmt);
			if (sf_arg_type_signed(type))
				v = v << 1 ^ (uint64_t)((int64_t)v >> 63);
			p = sf_arg_put_varint(p, v);
			break;
		}
	}
	return p;
}

/* The plan's puts (register, record, shift pair each) into v, then v's
 * nrec records into w; the count of records with a zero upper half (see
 * has_unfilled). fill_fixed's and fill_values's common end. */
static inline __attribute__((always_inline)) unsigned place_values(uint64_t *v, const struct sf_args_regs *r,
								    const uint32_t *puts, unsigned n, uint64_t *w,
								    unsigned nrec)
{
	for (unsigned k = 0; k < n; k++) {
		uint32_t put = puts[k];
		v[put >> 8 & 0xff] |= regs_at(r, put & 0xff) << (put >> 16 & 63) >> (put >> 24);
	}
	unsigned z = 0;
	for (unsigned i = 0; i < nrec; i++) {
		w[i] = v[i];
		z += (uint32_t)(v[i] >> 32) == 0;
	}
	return z;
}

/* A FIXED plan's payload into w (pl->nrec records): the template, then
 * each register's low bytes at its offset (a value never straddles a
 * record: its offset is a multiple of its size). Returns how many records
 * have a zero upper half (see has_unfilled in buffer.c). */
static inline __attribute__((always_inline)) unsigned fill_fixed(const struct arg_plan *pl,
								 const struct sf_args_regs *r, uint32_t func_id,
								 uint64_t *w)
{
	unsigned n = pl->nput, nrec = pl->nrec;
	uint64_t v[SF_ARGS_MAX_RECORDS + PLAN_TMPL]; /* built on the stack, stored once */
	v[0] = pl->tmpl[0] | func_id; /* the header's first field */
#pragma GCC unroll 8
	for (unsigned i = 1; i < PLAN_TMPL; i++)
		v[i] = pl->tmpl[i];
	/* Stores, not the `rep stos` the compiler makes of a zeroing loop:
	 * its start-up was 6% of --auto-args on SQLite (perf), where most
	 * plans have more than PLAN_TMPL records. The empty asm hides the
	 * loop's pattern. */
	for (unsigned i = PLAN_TMPL; i < nrec; i++) {
		__asm__("" : "+r"(i));
		v[i] = 0;
	}
	return place_values(v, r, pl->put, n, w, nrec);
}

/* A FIXED plan's values-only records into w (pl->nval of them), as
 * fill_fixed fills its payload. Returns how many have a zero upper half. */
static inline __attribute__((always_inline)) unsigned fill_values(const struct arg_plan *pl,
								  const struct sf_args_regs *r, uint64_t *w)
{
	unsigned n = pl->nput, nrec = pl->nval;
	uint64_t v[SF_ARG_MAX_ITEMS];
	for (unsigned i = 0; i < nrec; i++) {
		__asm__("" : "+r"(i)); /* stores, not `rep stos` (fill_fixed) */
		v[i] = 0;
	}
	return place_values(v, r, pl->vput, n, w, nrec);
}

/* fill_values for a direct plan: value k is record k, stored as it is
 * cut from its register (SQLite under --auto-args: 76k of its 86k ARGS
 * events of 3 to 6 records, mostly pointers). */
static inline __attribute__((always_inline)) unsigned fill_direct(const struct arg_plan *pl,
								  const struct sf_args_regs *r, uint64_t *w, unsigned n)
{
	unsigned z = 0;
	const uint32_t *vput = pl->vput;
#pragma GCC unroll 6
	for (unsigned k = 0; k < n; k++) {
		/* at its record's start, so the right shift is the left one
		 * (put_word: bits - 8 * 0): one shift count for both */
		uint32_t put = vput[k], bits = put >> 16 & 63;
		uint64_t x = regs_at(r, put & 0xff) << bits >> bits;
		w[k] = x;
		z += (uint32_t)(x >> 32) == 0;
	}
	return z;
}

/* fill_values for a plan with nput values in nval records (a small
 * plan: nval <= 2, nput <= SMALL_PUTS), both constants where it is
 * inlined: no loop, no array to zero, the values ORed in registers. */
static inline __attribute__((always_inline)) unsigned fill_small(const struct arg_plan *pl,
								 const struct sf_args_regs *r, uint64_t *w,
								 unsigned nput, unsigned nval)
{
	uint64_t v0 = 0, v1 = 0;
	/* unrolled: as loops, the shapes of 3 and 4 values made
	 * sf_args_event save two registers on every event */
#pragma GCC unroll 4
	for (unsigned k = 0; k < nput; k++) {
		uint32_t put = pl->vput[k];
		uint64_t x = (regs_at(r, put & 0xff) & pl->vmask[k]) << pl->vshift[k];
		if (nval == 1 || !(put & 0xff00)) /* record 0 */
			v0 |= x;
		else
			v1 |= x;
	}
	w[0] = v0;
	unsigned z = (uint32_t)(v0 >> 32) == 0;
	if (nval == 2) {
		w[1] = v1;
		z += (uint32_t)(v1 >> 32) == 0;
	}
	return z;
}

/* At a tail-call sled of a function whose return value is asked for: an
 * ARGS event saying the value is not known (the callee's register holds
 * it), one SF_AT_NONE item in the slot of its first exit item (the reader
 * shows it as the frame's return value: replay `= <tail call>`). On the
 * slow path (sf_record_args, signals blocked), right before the tail
 * event, which takes the slow path too (the trampolines turn the id's
 * SF_TAIL_ENTRY_ID_BITS into kind 15 there). */
static __attribute__((noinline)) void tail_mark(uint32_t func_id)
{
	const struct arg_func *f = hash_get(func_id & ~SF_TAIL_ENTRY_ID_BITS);
	if (!f || !f->plan[1].n)
		return;
	uint64_t rec[2] = {0, 0};
	struct sf_args_head h = {func_id & ~SF_TAIL_ENTRY_ID_BITS, SF_ARGS_RET, 1, 2};
	memcpy(rec, &h, sizeof(h));
	uint8_t item[2] = {f->plan[1].it[0].slot, sf_arg_fmt(SF_AT_NONE, 8)};
	memcpy(rec + 1, item, 2);
	sf_record_args(rec, 2);
}

/* The plan for this event of func_id; NULL if nothing is asked for. */
static inline __attribute__((always_inline)) const struct arg_plan *plan_of(uint32_t func_id, uint32_t kind)
{
	const struct arg_func *f = hash_get(func_id);
	int ret = kind != SF_EV_ENTRY;
	if (!f || (ret && sf_kind_is_tail(kind))) /* a tail call's return value is its callee's */
		return NULL;
	const struct arg_plan *pl = &f->plan[ret];
	return pl->n ? pl : NULL;
}

/* The ARGS payload of a plan into rec (SF_ARGS_MAX_RECORDS records): the
 * records. */
static uint32_t payload_of(const struct arg_plan *pl, const struct sf_args_regs *r, uint32_t func_id, uint64_t *rec)
{
	if (pl->nrec) {
		fill_fixed(pl, r, func_id, rec);
		return pl->nrec;
	}
	unsigned n;
	uint8_t *start = (uint8_t *)(rec + 1), *end = (uint8_t *)(rec + SF_ARGS_MAX_RECORDS);
	uint8_t *p = encode(pl, r, start, end, &n);
	size_t nbytes = (size_t)(p - start);
	while ((p - start) & 7)
		*p++ = 0;
	struct sf_args_head h = {func_id, pl->flags, (uint8_t)n, (uint16_t)nbytes};
	memcpy(rec, &h, sizeof(h));
	return (uint32_t)(1 + (p - start) / 8);
}

int sf_args_capture(const struct sf_args_regs *r, uint32_t func_id, uint32_t kind)
{
	args_hi = 0; /* no stack bound known here: process_vm_readv */
	if (sf_suppressed) /* the event is dropped too */
		return 0;
	const struct arg_func *f = hash_get(func_id & ~SF_TAIL_ENTRY_ID_BITS);
	if (!f)
		return 0;
	if (kind == SF_EV_TAIL) {
		tail_mark(func_id);
	} else {
		const struct arg_plan *pl = &f->plan[kind != SF_EV_ENTRY];
		uint64_t rec[SF_ARGS_MAX_RECORDS];
		if (pl->n)
			sf_record_args(rec, payload_of(pl, r, func_id, rec));
	}
	return f->plan[0].trigger;
}

/* time_lo and word in one store, after what the word validates. */
static inline void put_record(struct sf_event *e, uint64_t time, uint32_t word)
{
	__atomic_store_n((uint64_t *)e, (uint64_t)word << 32 | (uint32_t)time, __ATOMIC_RELEASE);
}

/* An ARGS event's word, stored first in its claim, before its payload:
 * a handler that siglongjmps out of the claim leaves a header whose count
 * covers the payload, whatever of it was stored, and a zero function
 * record after it. The pads for abandoned records (buffer.c, pad_presumed
 * and pad_abandoned) walk records by their words: they skip the payload
 * and pad the function record, and a filler after a values-only event
 * makes it a filler too (log_reader.c, pair_values). Stored last, as it
 * was, an abandoned claim left a zero header and the values: walked as
 * records, a value read as an event (skep7_sig jmp under -a: 95-196
 * records lost or corrupt a run, fillers timed by a value's low half).
 * The fence keeps the compiler from moving the payload's stores above. */
static inline void put_header(struct sf_event *e, uint64_t time, uint32_t word)
{
	put_record(e, time, word);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* n records at *time, claimed the way the trampolines claim one (one
 * xadd: a signal handler's records go before or after, never in between):
 * NULL if the time is outside the batch's span or the slot has no room
 * (nothing claimed, or a cut claim made a filler). Non-NULL: the caller
 * is inside the claim (sf_thread.args_claim) until claim_done. */
static inline __attribute__((always_inline)) struct sf_event *claim(uint32_t n, uint64_t *time, uint64_t zero)
{
	struct sf_thread *t = &sf_self;
	uint64_t now = sf_config.clock == SF_CLOCK_TSC ? sf_arch_counter() : sf_mono_ns();
	*time = now;
	sf_args_claim_enter(t);
	if (t->state != SF_THREAD_ACTIVE || now - t->base >= SF_TIME_SPAN) {
		sf_args_claim_leave(t);
		return NULL;
	}
	uint64_t bytes = (uint64_t)n * sizeof(struct sf_event), at = sf_claim_local(&t->cursor, bytes);
	if (__builtin_expect(at + bytes <= t->limit, 1))
		return (struct sf_event *)at;
	sf_args_cut_claim(at, now, zero);
	sf_args_claim_leave(t);
	return NULL;
}

static inline __attribute__((always_inline)) void claim_done(void)
{
	sf_args_claim_leave(&sf_self);
}

/* args_hi for the call whose registers r holds (x86-64, from
 * sf_args_event): 16 bytes below saved[SF_ARGS_STACK] (trampoline.S,
 * ARGS_PATH) is the sled's return address at an entry and the function's
 * at an exit: either way a word a call wrote, on a page mapped now. Set
 * by the two ways that code a payload (strings: stack_copy reads it),
 * not on every event (the fixed-size plans read no memory). */
static inline void set_args_hi(const struct sf_args_regs *r)
{
	args_hi = ((r->saved[SF_ARGS_STACK] - 16) | (SF_PAGE - 1)) + 1;
}

/* A coded payload (strings) and the function event. */
static __attribute__((noinline)) int event_coded(const struct arg_plan *pl, const struct sf_args_regs *r, uint32_t func_id, uint32_t kind)
{
	set_args_hi(r);
	uint64_t rec[SF_ARGS_MAX_RECORDS], time;
	uint32_t n = payload_of(pl, r, func_id, rec);
	uint64_t zero = __atomic_load_n(&sf_self.heap_zero, __ATOMIC_RELAXED); /* before the claim: its batch */
	struct sf_event *e = claim(n + 2, &time, zero);
	if (!e) {
		sf_record_args(rec, n);
		return 1;
	}
	uint64_t *w = (uint64_t *)(e + 1);
	unsigned z = 0;
	/* The header first (put_header), with a payload header of no items
	 * (a filler, which readers skip) until the function record is
	 * stored: readers keep a coded event's values for its function's
	 * next event, so an abandoned claim whose header had its items would
	 * give them to a later call. Stored after the function record, a
	 * concurrent reader may see a filler there, never wrong values. */
	put_header(e, time, sf_event_word(n, SF_EV_ARGS));
	w[0] = rec[0] & ~SF_ARGS_HEAD_NITEMS;
	z += (uint32_t)(rec[0] >> 32) == 0;
	for (uint32_t i = 1; i < n; i++) {
		w[i] = rec[i];
		z += (uint32_t)(rec[i] >> 32) == 0;
	}
	put_record(e + 1 + n, time, sf_event_word(func_id, kind));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w[0] = rec[0];
	if (z) /* see has_unfilled (buffer.c) and alloc.c */
		sf_arch_cas_local(&sf_self.heap_zero, zero, zero + z);
	claim_done();
	return 0;
}

/* The slow case of a FIXED plan: the ARGS event with signals blocked. */
static __attribute__((noinline)) void fixed_slow(const struct arg_plan *pl, const struct sf_args_regs *r,
						 uint32_t func_id)
{
	uint64_t rec[SF_ARGS_MAX_RECORDS];
	fill_fixed(pl, r, func_id, rec);
	sf_record_args(rec, pl->nrec);
}

/* sf_args_event's claim at `at` went past the slot's limit: the part
 * inside becomes a filler, the ARGS event goes the slow way; the
 * function event then takes sf_slow_common (returns 1). */
static __attribute__((noinline)) int claim_cut(const struct arg_plan *pl, const struct sf_args_regs *r,
					       uint32_t func_id, uint64_t at, uint64_t time, uint64_t zero)
{
	sf_args_cut_claim(at, time, zero);
	claim_done(); /* the slot is as the claim saw it up to here */
	fixed_slow(pl, r, func_id);
	return 1;
}

/* A --trigger function's values: the ARGS event (with its header: the
 * function event comes after it on the slow path, not in the same
 * claim); the function event then takes sf_slow_common (returns 1),
 * which looks at the trigger once it is stored. */
static __attribute__((noinline, cold)) int event_trigger(const struct arg_plan *pl, const struct sf_args_regs *r,
							 uint32_t func_id)
{
	set_args_hi(r);
	uint64_t rec[SF_ARGS_MAX_RECORDS];
	sf_record_args(rec, payload_of(pl, r, func_id, rec));
	return 1;
}

/* sf_args_event past its gates: every plan, every clock. */
static __attribute__((noinline)) int event_general(const struct sf_args_regs *r, uint32_t func_id, uint32_t kind,
						   const struct arg_plan *pl)
{
	uint64_t time;
	if (pl && pl->trigger)
		return event_trigger(pl, r, func_id);
	if (pl && !pl->nrec)
		return event_coded(pl, r, func_id, kind);
	uint32_t n = pl ? pl->nval : 0;
	uint64_t zero = __atomic_load_n(&sf_self.heap_zero, __ATOMIC_RELAXED); /* before the claim: its batch */
	struct sf_event *e = claim(n ? n + 2 : 1, &time, zero);
	if (__builtin_expect(!e, 0)) {
		if (n)
			fixed_slow(pl, r, func_id);
		return 1;
	}
	if (n) {
		/* Values only (the function event right after them says whose,
		 * the log's ARGSPEC chunk their types): straight into the
		 * claimed records, after their header (put_header), before the
		 * function record. */
		put_header(e, time, sf_event_word(SF_ARGS_VALUES | n, SF_EV_ARGS));
		unsigned z = pl->direct ? fill_direct(pl, r, (uint64_t *)(e + 1), pl->nval) : fill_values(pl, r, (uint64_t *)(e + 1));
		e += 1 + n;
		if (z) /* see has_unfilled (buffer.c) and alloc.c */
			sf_arch_cas_local(&sf_self.heap_zero, zero, zero + z);
	}
	put_record(e, time, sf_event_word(func_id, kind));
	claim_done();
	return 0;
}

/* event_shape's and direct_shape's slow ways, out of its way (the plan worked out again
 * from the function event's word): before a claim, event_general; a
 * claim past the slot's limit, claim_cut. */
static __attribute__((noinline, cold)) int small_general(const struct sf_args_regs *r, uint32_t word)
{
	uint32_t func_id = word >> SF_KIND_BITS, kind = word & ((1u << SF_KIND_BITS) - 1);
	return event_general(r, func_id, kind, plan_of(func_id, kind));
}

static __attribute__((noinline, cold)) int small_cut(const struct sf_args_regs *r, uint32_t word, uint64_t at,
						     uint64_t time, uint64_t zero)
{
	uint32_t func_id = word >> SF_KIND_BITS, kind = word & ((1u << SF_KIND_BITS) - 1);
	return claim_cut(plan_of(func_id, kind), r, func_id, at, time, zero);
}

/* sf_args_event's common case for a small plan of nput values in nval
 * records (constants in each copy below): the values cut from the
 * registers (fill_small), then the values-only ARGS event and the
 * function event (word) in one claim at one time. A jump to
 * event_general or claim_cut on a slow way: they work out the plan again
 * from word. */
static inline __attribute__((always_inline)) int event_shape(const struct sf_args_regs *r, uint32_t word,
							     const struct arg_plan *pl, unsigned nput, unsigned nval)
{
	uint64_t v[2] = {0, 0};
	unsigned z = fill_small(pl, r, v, nput, nval);
	struct sf_thread *t = &sf_self;
	uint64_t time = sf_arch_counter();
	sf_args_claim_enter(t); /* up to the last store (sf_thread.args_claim) */
	if (__builtin_expect(t->state != SF_THREAD_ACTIVE || time - t->base >= SF_TIME_SPAN, 0)) {
		sf_args_claim_leave(t);
		return small_general(r, word); /* nothing claimed: it looks again */
	}
	uint64_t bytes = (uint64_t)(nval + 2) * sizeof(struct sf_event);
	uint64_t zero = __atomic_load_n(&t->heap_zero, __ATOMIC_RELAXED); /* before the claim: its batch */
	uint64_t at = sf_claim_local(&t->cursor, bytes);
	if (__builtin_expect(at + bytes > t->limit, 0))
		return small_cut(r, word, at, time, zero);
	uint64_t *w = (uint64_t *)at;
	put_header((struct sf_event *)at, time, sf_event_word(SF_ARGS_VALUES | nval, SF_EV_ARGS));
	w[1] = v[0];
	if (nval == 2)
		w[2] = v[1];
	put_record((struct sf_event *)at + 1 + nval, time, word);
	if (z) /* see has_unfilled (buffer.c) and alloc.c */
		sf_arch_cas_local(&t->heap_zero, zero, zero + z);
	sf_args_claim_leave(t);
	return 0;
}

#define EVENT_SHAPE(p, v)                                                                                          \
	static __attribute__((noinline)) int event_s##p##_##v(const struct sf_args_regs *r, uint32_t word,        \
							       const struct arg_plan *pl)                          \
	{                                                                                                          \
		return event_shape(r, word, pl, p, v);                                                             \
	}
EVENT_SHAPE(1, 1)
EVENT_SHAPE(2, 1)
EVENT_SHAPE(3, 1)
EVENT_SHAPE(4, 1)
EVENT_SHAPE(1, 2)
EVENT_SHAPE(2, 2)
EVENT_SHAPE(3, 2)
EVENT_SHAPE(4, 2)

/* event_shape for a direct plan that is not small (SQLite's
 * pointer-heavy functions: 3 to 6 values, one a record): the same
 * records as event_general's, without its frame, its six saved
 * registers and its checks of the plan and the clock (sf_args_event
 * made them); the same slow ways as event_shape. */
static inline __attribute__((always_inline)) int direct_shape(const struct sf_args_regs *r, uint32_t word,
							      const struct arg_plan *pl, uint32_t n)
{
	struct sf_thread *t = &sf_self;
	uint64_t time = sf_arch_counter();
	sf_args_claim_enter(t); /* up to the last store (sf_thread.args_claim) */
	if (__builtin_expect(t->state != SF_THREAD_ACTIVE || time - t->base >= SF_TIME_SPAN, 0)) {
		sf_args_claim_leave(t);
		return small_general(r, word); /* nothing claimed: it looks again */
	}
	uint64_t bytes = (uint64_t)(n + 2) * sizeof(struct sf_event);
	uint64_t zero = __atomic_load_n(&t->heap_zero, __ATOMIC_RELAXED); /* before the claim: its batch */
	uint64_t at = sf_claim_local(&t->cursor, bytes);
	if (__builtin_expect(at + bytes > t->limit, 0))
		return small_cut(r, word, at, time, zero);
	put_header((struct sf_event *)at, time, sf_event_word(SF_ARGS_VALUES | n, SF_EV_ARGS));
	unsigned z = fill_direct(pl, r, (uint64_t *)at + 1, n);
	put_record((struct sf_event *)at + 1 + n, time, word);
	if (z) /* see has_unfilled (buffer.c) and alloc.c */
		sf_arch_cas_local(&t->heap_zero, zero, zero + z);
	sf_args_claim_leave(t);
	return 0;
}

/* Any count of values (the loop's); below, copies for 3 to 6, the
 * commonest (SQLite's), unrolled, with no register saved. */
static __attribute__((noinline)) int event_direct(const struct sf_args_regs *r, uint32_t word,
						  const struct arg_plan *pl)
{
	return direct_shape(r, word, pl, pl->nval);
}

#define EVENT_DIRECT(v)                                                                                            \
	static __attribute__((noinline)) int event_d##v(const struct sf_args_regs *r, uint32_t word,              \
							 const struct arg_plan *pl)                                \
	{                                                                                                          \
		return direct_shape(r, word, pl, v);                                                               \
	}
EVENT_DIRECT(3)
EVENT_DIRECT(4)
EVENT_DIRECT(5)
EVENT_DIRECT(6)

/* event_general for a plan of direct_plan that is neither small nor
 * direct (pl->event). */
static __attribute__((noinline)) int event_other(const struct sf_args_regs *r, uint32_t word, const struct arg_plan *pl)
{
	return event_general(r, word >> SF_KIND_BITS, word & ((1u << SF_KIND_BITS) - 1), pl);
}

static void plan_event_fn(struct arg_plan *pl)
{
	switch (pl->small) {
	case 1 | 1 << 4: pl->event = event_s1_1; return;
	case 2 | 1 << 4: pl->event = event_s2_1; return;
	case 3 | 1 << 4: pl->event = event_s3_1; return;
	case 4 | 1 << 4: pl->event = event_s4_1; return;
	case 1 | 2 << 4: pl->event = event_s1_2; return;
	case 2 | 2 << 4: pl->event = event_s2_2; return;
	case 3 | 2 << 4: pl->event = event_s3_2; return;
	case 4 | 2 << 4: pl->event = event_s4_2; return;
	default: break;
	}
	if (!pl->nrec || !pl->direct) {
		pl->event = event_other;
		return;
	}
	switch (pl->nval) {
	case 3: pl->event = event_d3; return;
	case 4: pl->event = event_d4; return;
	case 5: pl->event = event_d5; return;
	case 6: pl->event = event_d6; return;
	default: pl->event = event_direct; return;
	}
}

/* x86-64: the low halves of xmm0-7 into r->fp, which the args
 * trampoline leaves unwritten (8 stores an event, for the plans that read
 * none). Called before anything reads r->fp; nothing on the way from the
 * trampoline changes a vector register (the runtime is built
 * -mgeneral-regs-only and calls no libc on the way). */
static inline __attribute__((always_inline)) void spill_fp(const struct sf_args_regs *r)
{
#if defined(__x86_64__)
	uint64_t *fp = ((struct sf_args_regs *)r)->fp;
	__asm__ volatile("movq %%xmm0, %0\n\tmovq %%xmm1, %1\n\tmovq %%xmm2, %2\n\tmovq %%xmm3, %3\n\t"
			 "movq %%xmm4, %4\n\tmovq %%xmm5, %5\n\tmovq %%xmm6, %6\n\tmovq %%xmm7, %7"
			 : "=m"(fp[0]), "=m"(fp[1]), "=m"(fp[2]), "=m"(fp[3]), "=m"(fp[4]), "=m"(fp[5]),
			   "=m"(fp[6]), "=m"(fp[7]));
#else
	(void)r; /* the aarch64 trampolines store d0-d7 themselves */
#endif
}

/* The common case: a small plan (fill_small) on the counter clock, room
 * in the slot. The same records as event_general's: the values-only ARGS
 * event, then the function event, at one time, in one claim. */
static inline __attribute__((always_inline)) int args_event(const struct sf_args_regs *r, uint32_t func_id,
							     uint32_t kind)
{
	if (sf_suppressed) /* the slow path drops the event too */
		return 1;
	if (kind == SF_EV_TAIL) {
		tail_mark(func_id);
		return 1;
	}
	/* plan_of's work, for the kinds the args trampolines pass (an entry
	 * or an exit: a tail call is above), by direct_plan: a plan there has
	 * items, and the clock is the counter (the table stays empty on the
	 * monotonic one). Past it, or not there (dropped meanwhile), the
	 * general path, which looks in the hash. */
	_Static_assert(SF_EV_EXIT == SF_EV_ENTRY + 1, "direct_plan's index");
	if (__builtin_expect(func_id >= DIRECT_IDS || kind - SF_EV_ENTRY > SF_EV_EXIT - SF_EV_ENTRY, 0)) {
		spill_fp(r);
		return small_general(r, sf_event_word(func_id, kind));
	}
	const struct arg_plan *pl = __atomic_load_n(&direct_plan[func_id][kind - SF_EV_ENTRY], __ATOMIC_ACQUIRE);
	if (__builtin_expect(!pl, 0)) {
		spill_fp(r);
		return small_general(r, sf_event_word(func_id, kind));
	}
	if (pl->fp)
		spill_fp(r);
	return pl->event(r, sf_event_word(func_id, kind), pl);
}

int sf_args_event(const struct sf_args_regs *r, uint32_t func_id, uint32_t kind)
{
	return args_event(r, func_id, kind);
}

/* The same for the entry and exit trampolines, the kind a constant: no
 * test of it (the tail call's, the table's index). */
int sf_args_event_entry(const struct sf_args_regs *r, uint32_t func_id)
{
	return args_event(r, func_id, SF_EV_ENTRY);
}

int sf_args_event_exit(const struct sf_args_regs *r, uint32_t func_id)
{
	return args_event(r, func_id, SF_EV_EXIT);
}

_Static_assert(__builtin_offsetof(struct sf_args_regs, ret) == 48 && __builtin_offsetof(struct sf_args_regs, fp) == 80 &&
		       sizeof(struct sf_args_regs) == 144,
	       "arch/<arch>/trampoline.S stores the registers at these offsets");
