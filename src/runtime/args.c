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
 * pointer makes the call fail instead of faulting, and is recorded so. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "format/filter_file.h"
#include "format/sf_args.h"
#include "runtime/runtime.h"

#define MAX_ARG_FUNCS 16384
#define MAX_ARG_OBJECTS 16
#define HASH_SIZE 32768 /* power of two, twice MAX_ARG_FUNCS */

struct arg_item {
	uint8_t slot, fmt;
};

struct arg_func {
	uint32_t obj;      /* index into A.objs */
	uint32_t func_id;  /* 0 until the object is patched */
	uint64_t vaddr;
	uint8_t nin, nout;
	struct arg_item in[SF_ARG_MAX_ITEMS], out[SF_ARG_MAX_ITEMS];
};

static struct {
	struct arg_func f[MAX_ARG_FUNCS];
	uint32_t n;
	struct {
		uint8_t build_id[64];
		int build_id_len;
		char path[1024];
	} objs[MAX_ARG_OBJECTS];
	uint32_t nobjs;
	uint32_t left_out; /* functions past MAX_ARG_FUNCS */
	/* func_id -> index + 1 into f; written at patch time (under the log
	 * lock) before the sled that looks it up is patched. */
	uint32_t key[HASH_SIZE];
	uint32_t val[HASH_SIZE];
} A;

static int on_object(void *ctx, const char *bid, const char *path)
{
	(void)ctx;
	size_t n = strlen(path);
	if (A.nobjs == MAX_ARG_OBJECTS || n >= sizeof(A.objs[0].path))
		return 1;
	A.objs[A.nobjs].build_id_len = ff_build_id_from_hex(bid, A.objs[A.nobjs].build_id, 64);
	memcpy(A.objs[A.nobjs].path, path, n + 1);
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

/* SPEC: items `eSSFF` / `xSSFF` separated by commas, up to a space. */
static int on_func(void *ctx, uint64_t vaddr, const char *rest)
{
	(void)ctx;
	if (!A.nobjs)
		return 1;
	if (A.n == MAX_ARG_FUNCS) { /* --auto-args on a huge program: the first ones */
		A.left_out++;
		return 0;
	}
	struct arg_func *f = &A.f[A.n];
	memset(f, 0, sizeof(*f));
	for (const char *p = rest;; p += 6) {
		int slot = hex_byte(p + 1), fmt = slot < 0 ? -1 : hex_byte(p + 3);
		if ((p[0] != 'e' && p[0] != 'x') || fmt < 0 || sf_arg_type((uint8_t)fmt) >= SF_AT_LIMIT)
			return 1;
		uint8_t *n = p[0] == 'e' ? &f->nin : &f->nout;
		struct arg_item *it = p[0] == 'e' ? f->in : f->out;
		if (*n == SF_ARG_MAX_ITEMS)
			return 1;
		it[(*n)++] = (struct arg_item){(uint8_t)slot, (uint8_t)fmt};
		if (p[5] != ',')
			break;
	}
	f->obj = A.nobjs - 1;
	f->vaddr = vaddr;
	A.n++; /* record writes one line per function (the first wins) */
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

void sf_args_init(void)
{
	const char *path = getenv(SF_ENV(ARGS));
	if (!path || !path[0])
		return;
	/* record writes it in its private directory: checked (trust.c), and
	 * read into private memory. */
	const char *why = NULL;
	size_t len = 0, map_len = 0;
	char *text = sf_trust_load(path, 1, 0, &len, &map_len, &why);
	if (!text) {
		sf_rt_message("cannot read argument specs ", path, why);
		return;
	}
	cached_pid = sf_syscall3(SYS_getpid, 0, 0, 0);
	struct ff_handler h = {NULL, on_object, on_func};
	char err[256];
	if (ff_parse(text, len, &h, NULL, err, sizeof(err)) < 0) {
		A.n = 0;
		sf_rt_message("bad argument specs ", path, err);
	} else if (A.left_out) {
		sf_rt_message("argument specs: only the first 16384 functions are recorded with values, in ", path,
			      "the others without");
	}
	munmap(text, map_len);
}

static int same_object(const struct sf_object_rt *o, uint32_t i)
{
	if (o->info.build_id_len && A.objs[i].build_id_len > 0)
		return o->info.build_id_len == A.objs[i].build_id_len &&
		       !memcmp(o->info.build_id, A.objs[i].build_id, (size_t)o->info.build_id_len);
	return !strcmp(o->path, A.objs[i].path);
}

static uint32_t hash_of(uint32_t id)
{
	return (id * 2654435761u) & (HASH_SIZE - 1);
}

static void hash_put(uint32_t id, uint32_t index)
{
	for (uint32_t h = hash_of(id);; h = (h + 1) & (HASH_SIZE - 1)) {
		uint32_t k = __atomic_load_n(&A.key[h], __ATOMIC_RELAXED);
		if (k == id)
			return;
		if (!k) {
			A.val[h] = index + 1;
			__atomic_store_n(&A.key[h], id, __ATOMIC_RELEASE);
			return;
		}
	}
}

static const struct arg_func *hash_get(uint32_t id)
{
	for (uint32_t h = hash_of(id);; h = (h + 1) & (HASH_SIZE - 1)) {
		uint32_t k = __atomic_load_n(&A.key[h], __ATOMIC_ACQUIRE);
		if (k == id)
			return &A.f[A.val[h] - 1];
		if (!k)
			return NULL;
	}
}

void sf_args_select(const struct sf_object_rt *o, uint64_t vaddr, uint32_t func_id, uint8_t *variant)
{
	/* Within-mode windows and triggers keep their own trampolines; id 0
	 * would read as an empty hash entry. */
	if (*variant != SF_VARIANT_PLAIN || !func_id)
		return;
	for (uint32_t i = 0; i < A.n; i++) {
		if (A.f[i].vaddr != vaddr || !same_object(o, A.f[i].obj))
			continue;
		*variant = SF_VARIANT_ARGS;
		if (!A.f[i].func_id) {
			A.f[i].func_id = func_id;
			hash_put(func_id, i);
		}
		return;
	}
}

/* Up to cap bytes of a NUL-terminated string at addr, never faulting:
 * the byte count (the NUL excluded), *whole = 0 if it went on. -1: not
 * readable. */
static int read_cstr(uint64_t addr, uint8_t *out, unsigned cap, int *whole)
{
	/* One page at a time: process_vm_readv stops at the first unreadable
	 * page, and the string may end before it. */
	unsigned got = 0;
	long pid = self_pid();
	while (got < cap) {
		uint64_t at = addr + got;
		unsigned want = cap - got, to_page = (unsigned)(SF_PAGE - (at & (SF_PAGE - 1)));
		if (want > to_page)
			want = to_page;
		struct iovec local = {out + got, want}, remote = {(void *)at, want};
		long r = sf_syscall6(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
		if (r <= 0)
			break;
		for (unsigned i = got; i < got + (unsigned)r; i++)
			if (!out[i]) {
				*whole = 1;
				return (int)i;
			}
		got += (unsigned)r;
	}
	if (!got)
		return -1;
	*whole = 0;
	return (int)got;
}

/* len bytes at addr (a &str), at most cap of them: the count, -1 if not readable. */
static int read_bytes(uint64_t addr, uint64_t len, uint8_t *out, unsigned cap)
{
	unsigned want = len < cap ? (unsigned)len : cap;
	if (!want)
		return 0;
	struct iovec local = {out, want}, remote = {(void *)addr, want};
	long pid = self_pid();
	long r = sf_syscall6(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
	return r <= 0 ? -1 : (int)r;
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
	i = i - 1 + (unsigned)second;
	return i < SF_ARGS_GP ? r->gp[i] : 0;
}

/* Items coded after the header (*done of them, those that fit); returns
 * the end. */
static uint8_t *encode(const struct arg_item *it, unsigned n, const struct sf_args_regs *r, uint8_t *p,
		       const uint8_t *end, unsigned *done)
{
	*done = 0;
	for (unsigned k = 0; k < n; k++, ++*done) {
		if (end - p < 2 + 10)
			break;
		uint8_t fmt = it[k].fmt;
		unsigned type = sf_arg_type(fmt);
		uint64_t v = reg_of(r, it[k].slot, 0);
		*p++ = it[k].slot;
		*p++ = fmt;
		switch (type) {
		case SF_AT_DOUBLE:
			memcpy(p, &v, 8);
			p += 8;
			break;
		case SF_AT_FLOAT:
			memcpy(p, &v, 4);
			p += 4;
			break;
		case SF_AT_STR:
			p = put_str(p, end, v, 0, 0, sf_arg_str_cap(fmt));
			break;
		case SF_AT_RSTR:
			p = put_str(p, end, v, reg_of(r, it[k].slot, 1), 1, sf_arg_str_cap(fmt));
			break;
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

void sf_args_capture(const struct sf_args_regs *r, uint32_t func_id, uint32_t kind)
{
	const struct arg_func *f = hash_get(func_id);
	if (!f || sf_suppressed)
		return;
	int ret = kind != SF_EV_ENTRY;
	unsigned n = ret ? f->nout : f->nin;
	if (!n || (ret && kind == SF_EV_TAIL)) /* a tail call's return value is its callee's */
		return;
	uint64_t rec[SF_ARGS_MAX_RECORDS];
	uint8_t *start = (uint8_t *)(rec + 1), *end = (uint8_t *)(rec + SF_ARGS_MAX_RECORDS);
	uint8_t *p = encode(ret ? f->out : f->in, n, r, start, end, &n);
	size_t nbytes = (size_t)(p - start);
	while ((p - start) & 7)
		*p++ = 0;
	struct sf_args_head h = {func_id, (uint8_t)(ret ? SF_ARGS_RET : 0), (uint8_t)n, (uint16_t)nbytes};
	memcpy(rec, &h, sizeof(h));
	sf_record_args(rec, (uint32_t)(1 + (p - start) / 8));
}

_Static_assert(__builtin_offsetof(struct sf_args_regs, ret) == 48 && __builtin_offsetof(struct sf_args_regs, fp) == 80 &&
		       sizeof(struct sf_args_regs) == 144,
	       "arch/<arch>/trampoline.S stores the registers at these offsets");
