/* Per-log symbolization glue: see log_symbols.h. */
#include "lib/log_symbols.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/demangle.h"
#include "lib/elf_buildid.h"
#include "lib/hashmap.h"
#include "lib/log_reader.h"
#include "lib/util.h"

struct ls_object {
	struct sym_object *sym;         /* NULL: placeholder names */
	int borrowed;                   /* sym is an earlier load's of the same file (ls_close skips it) */
	char *file;                     /* the file opened, or NULL */
	const struct sym_info **cache;  /* per function index, allocated on first lookup */
};

/* F's tail-call targets (sym_tail_targets), memoized per function id. */
#define LS_MAX_TARGETS 8
struct ls_targets {
	size_t n;
	struct sym_target t[LS_MAX_TARGETS];
	size_t obj;                    /* F's object */
	int undecoded;                 /* F has tail jumps not in t (sym_tail_targets) */
	/* The one function a kind-3 tail call of F can have reached, when F's
	 * tail jumps that are not kind 15 all go through the PLT or GOT to one
	 * name; else NULL (ls_is_tail_callee). */
	const char *sole_elsewhere;
};

/* A name we made up; freed at close. */
struct ls_placeholder {
	struct ls_placeholder *next;
	struct sym_info info;
	char name[];
};

struct ls_override {
	const char *path;
	uint8_t build_id[SF_BUILD_ID_MAX];
	int build_id_len; /* -1: unreadable, matched by basename only */
	int used;
};

struct log_symbols {
	const struct lr_log *log;
	struct ls_object *objs;
	size_t nobjs;
	struct ls_override *overrides;
	size_t noverrides;
	struct ls_placeholder *placeholders;
	struct hashmap unknown; /* id -> its func#<id> sym_info, for ids no object owns */
	struct hashmap tail_memo; /* site -> tailer << 32 | caller << 3 | LS_SITE_* (ls_tail_site) */
	struct hashmap targets_ix; /* function id -> index in targets */
	struct ls_targets *targets;
	size_t ntargets;
	struct ls_renamed *renamed;
	char **warnings;
	size_t nwarnings;
	int no_symbols;
	struct ls_untraced_obj *untraced; /* opened on first use (ls_untraced_site) */
	size_t nuntraced;
	struct hashmap untraced_short; /* sym_info pointer -> its short name (malloc'd) */
};

struct ls_untraced_obj {
	const struct lr_object *o;
	struct sym_object *sym; /* NULL: could not be opened (or another build) */
};

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static void add_warning(struct log_symbols *ls, const char *msg)
{
	ls->warnings = xrealloc(ls->warnings, (ls->nwarnings + 1) * sizeof(char *));
	ls->warnings[ls->nwarnings++] = xstrdup(msg);
}

static const struct sym_info *placeholder(struct log_symbols *ls, const char *fmt_base, uint64_t v, int is_id)
{
	char buf[512];
	if (is_id)
		snprintf(buf, sizeof(buf), "func#%" PRIu64, v);
	else
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, fmt_base, v);
	size_t n = strlen(buf) + 1;
	struct ls_placeholder *p = xcalloc(1, sizeof(*p) + n);
	memcpy(p->name, buf, n);
	p->info.name = p->name;
	p->next = ls->placeholders;
	ls->placeholders = p;
	return &p->info;
}

static void load_overrides(struct log_symbols *ls, const struct ls_options *opt)
{
	ls->noverrides = opt ? opt->nsymbol_paths : 0;
	ls->overrides = xcalloc(ls->noverrides + 1, sizeof(*ls->overrides));
	for (size_t i = 0; i < ls->noverrides; i++) {
		struct ls_override *o = &ls->overrides[i];
		char err[256];
		o->path = opt->symbol_paths[i];
		int n = sf_elf_build_id_path(o->path, o->build_id, sizeof(o->build_id), err, sizeof(err));
		o->build_id_len = n < 0 ? -1 : (n > SF_BUILD_ID_MAX ? SF_BUILD_ID_MAX : n);
	}
}

/* The override for an object: same build-id first, then same basename. */
static struct ls_override *find_override(struct log_symbols *ls, const struct lr_object *obj)
{
	if (obj->build_id_len)
		for (size_t i = 0; i < ls->noverrides; i++) {
			struct ls_override *o = &ls->overrides[i];
			if (o->build_id_len == obj->build_id_len &&
			    !memcmp(o->build_id, obj->build_id, obj->build_id_len))
				return o;
		}
	for (size_t i = 0; i < ls->noverrides; i++)
		if (!strcmp(base_name(ls->overrides[i].path), base_name(obj->path)))
			return &ls->overrides[i];
	return NULL;
}

/* The name the kernel gives a file that has none left (deleted since it
 * was mapped, or a memfd). The runtime saves such an executable beside
 * the log and names the copy instead; a log that still has this name got
 * no copy (the runtime said why when it ran). */
static int lost_name(const char *path)
{
	size_t n = strlen(path), k = strlen(" (deleted)");
	return n >= k && !strcmp(path + n - k, " (deleted)");
}

/* The ways out of an object that cannot symbolize, for the error's end:
 * --force reads a mismatched file anyway, and names a missing one's
 * functions by address. */
static const char *ways_out(const char *why)
{
	return strstr(why, "build-id mismatch")
		       ? "use --symbol PATH to name the recorded build, --force to read this file anyway "
			 "(names may be wrong), or --no-symbols"
		       : "use --symbol PATH to name a copy of the recorded build, --force for placeholder "
			 "names, or --no-symbols";
}

/* Opens object i. Returns -1 with err set when that is fatal. */
static int open_object(struct log_symbols *ls, size_t i, const struct ls_options *opt, char *err, size_t errlen)
{
	int force = opt && opt->force, optional = opt && opt->optional;
	const struct lr_object *obj = lr_object_at(ls->log, i);
	struct ls_object *lo = &ls->objs[i];
	struct ls_override *ov = find_override(ls, obj);
	const char *file = ov ? ov->path : obj->path;
	char why[512];
	if (ov)
		ov->used = 1;
	lo->sym = sym_open(obj->path, ov ? ov->path : NULL, obj->build_id, obj->build_id_len, force, why,
			   sizeof(why));
	if (!lo->sym && !ov && lost_name(obj->path))
		snprintf(why, sizeof(why), "%s: the file was deleted (or was a memfd) while the program ran and no copy "
			 "was saved beside the log; name the same build with --symbol PATH", obj->path);
	if (!lo->sym) {
		if (!force && !optional) {
			if (ov && strstr(why, "build-id mismatch"))
				snprintf(err, errlen, "cannot symbolize %s with --symbol %s: %s; %s", obj->path, ov->path,
					 why, ways_out(why));
			else if (ov) /* the file the user named cannot be read: the cause is the way out */
				snprintf(err, errlen, "cannot symbolize %s with --symbol %s: %s", obj->path, ov->path, why);
			else if (lost_name(obj->path))
				snprintf(err, errlen, "%s", why); /* says the way out */
			else
				snprintf(err, errlen, "%s; %s", why, ways_out(why));
			return -1;
		}
		/* why names the file it tried: the recorded one, or the override. */
		char msg[1024];
		if (ov)
			snprintf(msg, sizeof(msg), "%s: not symbolized with --symbol %s: %s; its functions are named %s+0x<address>",
				 obj->path, ov->path, why, base_name(obj->path));
		else
			snprintf(msg, sizeof(msg), "%s; its functions are named %s+0x<address>", why, base_name(obj->path));
		add_warning(ls, msg);
		return 0;
	}
	lo->file = xstrdup(file);
	const uint8_t *id;
	size_t n = sym_build_id(lo->sym, &id);
	if (obj->build_id_len && (n != obj->build_id_len || memcmp(id, obj->build_id, n))) {
		char want[2 * SF_BUILD_ID_MAX + 1], have[2 * SF_BUILD_ID_MAX + 1], msg[1024];
		sf_build_id_hex(obj->build_id, obj->build_id_len, want, sizeof(want));
		sf_build_id_hex(id, n, have, sizeof(have));
		snprintf(msg, sizeof(msg), "%s: build-id mismatch (recorded %s, file has %s); names may be wrong",
			 file, want, n ? have : "none");
		add_warning(ls, msg);
	}
	return 0;
}

/* A file loaded again and again (a plugin dlopen'd and dlclose'd in a
 * loop) is one object per load in the log: its loads share one opened
 * file, so the reader holds a descriptor per distinct file, not per load.
 * Loads are the same file when path, build-id and override agree. */
static uint64_t object_key(const struct lr_object *obj, const struct ls_override *ov)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const char *c = obj->path; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	for (size_t i = 0; i < obj->build_id_len; i++)
		h = (h ^ obj->build_id[i]) * 1099511628211ull;
	return h ^ (uintptr_t)ov;
}

static int same_file(struct log_symbols *ls, size_t i, size_t j)
{
	const struct lr_object *a = lr_object_at(ls->log, i), *b = lr_object_at(ls->log, j);
	return !strcmp(a->path, b->path) && a->build_id_len == b->build_id_len &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len) && find_override(ls, a) == find_override(ls, b);
}

/* Object i as an earlier load of the same file (its names, or its
 * placeholders and the one warning it got): 1, or 0 if none. */
static int share_object(struct log_symbols *ls, struct hashmap *seen, size_t i)
{
	const struct lr_object *obj = lr_object_at(ls->log, i);
	int added;
	uint64_t *slot = hm_put(seen, object_key(obj, find_override(ls, obj)), &added);
	size_t j = added ? 0 : (size_t)*slot - 1;
	if (added || !same_file(ls, i, j)) {
		*slot = i + 1;
		return 0;
	}
	ls->objs[i].sym = ls->objs[j].sym;
	ls->objs[i].borrowed = 1;
	ls->objs[i].file = ls->objs[j].file ? xstrdup(ls->objs[j].file) : NULL;
	return 1;
}

struct log_symbols *ls_open(const struct lr_log *log, const struct ls_options *opt, char *err, size_t errlen)
{
	struct log_symbols *ls = xcalloc(1, sizeof(*ls));
	ls->log = log;
	ls->nobjs = lr_nobjects(log);
	ls->objs = xcalloc(ls->nobjs + 1, sizeof(*ls->objs));
	ls->no_symbols = opt && opt->no_symbols;
	if (opt && opt->no_symbols)
		return ls;
	load_overrides(ls, opt);
	struct hashmap seen = {0};
	for (size_t i = 0; i < ls->nobjs; i++) {
		if (!lr_object_at(log, i)->count || share_object(ls, &seen, i))
			continue; /* no function id can need it, or opened already */
		if (open_object(ls, i, opt, err, errlen) < 0) {
			hm_free(&seen);
			ls_close(ls);
			return NULL;
		}
	}
	hm_free(&seen);
	return ls;
}

static const struct sym_info *unknown_id(struct log_symbols *ls, uint32_t id)
{
	uint64_t v = hm_get(&ls->unknown, id, 0);
	if (!v) {
		v = (uintptr_t)placeholder(ls, NULL, id, 1);
		*hm_put(&ls->unknown, id, NULL) = v;
	}
	return (const struct sym_info *)(uintptr_t)v;
}

const struct sym_info *ls_lookup(struct log_symbols *ls, uint32_t func_id)
{
	const struct lr_object *obj;
	uint64_t vaddr;
	if (lr_func(ls->log, func_id, &obj, &vaddr) < 0)
		return unknown_id(ls, func_id);
	size_t oi = (size_t)(obj - lr_object_at(ls->log, 0));
	struct ls_object *lo = &ls->objs[oi];
	uint32_t k = func_id - obj->first_id;
	if (!lo->cache)
		lo->cache = xcalloc(obj->count, sizeof(*lo->cache));
	if (!lo->cache[k])
		lo->cache[k] = lo->sym ? sym_lookup(lo->sym, vaddr) : placeholder(ls, base_name(obj->path), vaddr, 0);
	return lo->cache[k];
}

/* An alias chosen over the symbol table's name (ls_prefer_name). */
struct ls_renamed {
	struct ls_renamed *next;
	uint32_t func_id;
	struct sym_info info;
	char *name, *mangled;
};

struct alias_find {
	const char *want;
	char *mangled; /* the alias's symbol, when found */
	int found;
};

static void find_alias(void *ctx, const char *mangled, const char *demangled)
{
	struct alias_find *a = ctx;
	if (!a->found && (!strcmp(demangled, a->want) || !strcmp(mangled, a->want))) {
		a->found = 1;
		a->mangled = xstrdup(mangled);
	}
}

size_t ls_aliases(struct log_symbols *ls, uint32_t func_id,
		  void (*cb)(void *ctx, const char *mangled, const char *demangled), void *ctx)
{
	const struct lr_object *obj;
	uint64_t vaddr;
	if (lr_func(ls->log, func_id, &obj, &vaddr) < 0)
		return 0;
	struct ls_object *lo = &ls->objs[obj - lr_object_at(ls->log, 0)];
	if (!lo->sym)
		return 0;
	size_t n = sym_aliases(lo->sym, vaddr, NULL, NULL);
	if (!cb || !n)
		return n; /* a count alone: no name is looked up (callers scan every function) */
	/* A function a filter renamed (ls_prefer_name) keeps the symbol
	 * table's own name among its others: callers skip the shown one. */
	const struct sym_info *own = sym_lookup(lo->sym, vaddr);
	if (ls_lookup(ls, func_id) != own)
		cb(ctx, own->mangled ? own->mangled : own->name, own->name);
	return sym_aliases(lo->sym, vaddr, cb, ctx);
}

int ls_prefer_name(struct log_symbols *ls, uint32_t func_id, const char *name)
{
	const struct sym_info *cur = ls_lookup(ls, func_id);
	if (!strcmp(cur->name, name) || (cur->mangled && !strcmp(cur->mangled, name)))
		return 1;
	struct alias_find a = {name, NULL, 0};
	ls_aliases(ls, func_id, find_alias, &a);
	if (!a.found)
		return 0;
	const struct lr_object *obj;
	lr_func(ls->log, func_id, &obj, NULL);
	struct ls_renamed *r = xcalloc(1, sizeof(*r));
	r->func_id = func_id;
	r->name = xstrdup(name);
	r->mangled = a.mangled;
	r->info = *cur;
	r->info.name = r->name;
	r->info.mangled = r->mangled;
	/* The chosen alias's own definition, not the one at the address. */
	struct ls_object *lo = &ls->objs[obj - lr_object_at(ls->log, 0)];
	const char *file;
	uint32_t line;
	if (sym_named_source(lo->sym, r->mangled, &file, &line)) {
		r->info.file = file;
		r->info.line = line;
	}
	r->next = ls->renamed;
	ls->renamed = r;
	lo->cache[func_id - obj->first_id] = &r->info;
	return 1;
}

void ls_each_renamed(const struct log_symbols *ls, void (*cb)(void *ctx, uint32_t func_id), void *ctx)
{
	for (const struct ls_renamed *r = ls->renamed; r; r = r->next)
		cb(ctx, r->func_id);
}

const char *ls_object_without_dwarf(struct log_symbols *ls, uint32_t func_id)
{
	const struct lr_object *obj;
	if (lr_func(ls->log, func_id, &obj, NULL) < 0)
		return NULL;
	struct ls_object *lo = &ls->objs[obj - lr_object_at(ls->log, 0)];
	return lo->sym && !sym_has_dwarf(lo->sym) ? lo->file : NULL;
}

const struct sym_info *ls_lookup_addr(struct log_symbols *ls, uint64_t addr, uint64_t *vaddr)
{
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < ls->nobjs; i++) {
		uint64_t bias = lr_object_at(ls->log, i)->load_bias;
		if (bias <= addr && ls->objs[i].sym &&
		    (best == SIZE_MAX || bias > lr_object_at(ls->log, best)->load_bias))
			best = i;
	}
	if (best == SIZE_MAX)
		return NULL;
	*vaddr = addr - lr_object_at(ls->log, best)->load_bias;
	const struct sym_info *si = sym_lookup(ls->objs[best].sym, *vaddr);
	return si->mangled ? si : NULL;
}

/* The recorded object (with symbols) whose load bias is the highest at or
 * below addr, or SIZE_MAX. */
static size_t addr_object(const struct log_symbols *ls, uint64_t addr)
{
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < ls->nobjs; i++) {
		uint64_t bias = lr_object_at(ls->log, i)->load_bias;
		if (bias <= addr && ls->objs[i].sym &&
		    (best == SIZE_MAX || bias > lr_object_at(ls->log, best)->load_bias))
			best = i;
	}
	return best;
}

/* Whether F's direct tail jump to vaddr (in F's object o) may log kind 3.
 * Not when it goes to a function with sleds in an object whose every sled
 * the runtime patched (kind 15, whatever the filter), nor when it stays in
 * F's own body (no tail call: an entry sled followed by a jmp). */
static int direct_may_be_kind3(struct sym_object *so, const struct lr_object *o, uint64_t fvaddr, uint64_t vaddr)
{
	if (vaddr != fvaddr && sym_func_key(so, vaddr) == sym_func_key(so, fvaddr))
		return 0;
	if (o->patched != o->sleds)
		return 1;
	for (uint32_t i = 0; i < o->count; i++)
		if (o->funcs[i] == vaddr)
			return 0;
	return 1;
}

/* The one name a kind-3 tail call of F (at fvaddr in o) can have jumped
 * to, or NULL. Kind 3 does not say which of F's tail jumps fired, so
 * naming the frame that follows after it as F's callee is exact only when
 * F has one place to go that is not kind 15: every tail jump decoded, the
 * direct ones all kind 15, the rest through the PLT or GOT to one name.
 * A mark left out is the price; a wrong one (a(0) tail-calls strlen, then
 * the caller's own lib_f2, a's other PLT target, opens there) is not. */
static const char *sole_elsewhere(struct log_symbols *ls, const struct ls_targets *x, const struct lr_object *o,
				  uint64_t fvaddr)
{
	const char *name = NULL;
	if (x->undecoded)
		return NULL;
	for (size_t i = 0; i < x->n; i++) {
		if (!x->t[i].name) {
			if (direct_may_be_kind3(ls->objs[x->obj].sym, o, fvaddr, x->t[i].vaddr))
				return NULL;
		} else if (name && strcmp(name, x->t[i].name) != 0) {
			return NULL;
		} else {
			name = x->t[i].name;
		}
	}
	return name;
}

static const struct ls_targets *tail_targets(struct log_symbols *ls, uint32_t tailer)
{
	uint64_t *at = hm_find(&ls->targets_ix, tailer);
	if (at)
		return &ls->targets[*at];
	const struct lr_object *tobj;
	uint64_t tvaddr;
	ls->targets = xrealloc(ls->targets, (ls->ntargets + 1) * sizeof(*ls->targets));
	struct ls_targets *x = &ls->targets[ls->ntargets];
	memset(x, 0, sizeof(*x));
	x->obj = SIZE_MAX;
	if (lr_func(ls->log, tailer, &tobj, &tvaddr) == 0) {
		x->obj = (size_t)(tobj - lr_object_at(ls->log, 0));
		if (ls->objs[x->obj].sym) {
			x->n = sym_tail_targets(ls->objs[x->obj].sym, tvaddr, x->t, LS_MAX_TARGETS, &x->undecoded);
			x->sole_elsewhere = sole_elsewhere(ls, x, tobj, tvaddr);
		}
	}
	int added;
	*hm_put(&ls->targets_ix, tailer, &added) = ls->ntargets;
	return &ls->targets[ls->ntargets++];
}

/* A site outside the caller's code: in the function F jumps to (1), or
 * (F jumps through the PLT or GOT to another object's function) in code of
 * an object the log did not record (2: libc's strdup)? 0: neither. */
static int in_callee(struct log_symbols *ls, size_t oi, const void *site_fn, uint32_t tailer)
{
	const struct ls_targets *x = tail_targets(ls, tailer);
	for (size_t i = 0; i < x->n; i++) {
		if (x->t[i].name) {
			if (!site_fn)
				return 2;
		} else if (site_fn && oi == x->obj && sym_func_key(ls->objs[oi].sym, x->t[i].vaddr) == site_fn) {
			return 1;
		}
	}
	return 0;
}

/* sym_source_line_folded's skip: every inlined frame folds, down to the
 * function's own code. */
static int fold_every_inline(void *ctx, const char *name)
{
	(void)ctx;
	(void)name;
	return 1;
}

int ls_tail_line(struct log_symbols *ls, uint32_t func, const char **file, uint32_t *line)
{
	const struct ls_targets *x = tail_targets(ls, func);
	const char *f0 = NULL, *f;
	uint32_t l0 = 0, l;
	for (size_t i = 0; i < x->n; i++) {
		/* a jmp in inlined code (`s += big` at -O2: basic_string's
		 * append inlined, its growth tail-called) is at the line of the
		 * function's own code that the inlining came from */
		if (!sym_source_line_folded(ls->objs[x->obj].sym, x->t[i].at, fold_every_inline, NULL, &f, &l))
			return 0;
		if (i && (l != l0 || strcmp(f, f0) != 0))
			return 0; /* tail calls on several lines: which one is unknown */
		f0 = f;
		l0 = l;
	}
	if (!f0)
		return 0;
	*file = f0;
	*line = l0;
	return 1;
}

/* The return address in function func that a tag's low bits name: 1 with
 * *so, *v (ELF) and *r (runtime) when it lies in func; else 0. */
static int tag_addr(struct log_symbols *ls, uint32_t func, uint32_t tag, struct sym_object **so, uint64_t *v,
		    uint64_t *r)
{
	const struct lr_object *obj;
	uint64_t fvaddr;
	if (!tag || lr_func(ls->log, func, &obj, &fvaddr) < 0)
		return 0;
	size_t oi = (size_t)(obj - lr_object_at(ls->log, 0));
	*so = ls->objs[oi].sym;
	if (!*so)
		return 0;
	/* the one address at or above the function's start with these low bits
	 * that can still lie in it (a function is far below 256 MiB) */
	const uint64_t span = 1ull << 28, start = fvaddr + obj->load_bias;
	*r = (start & ~(span - 1)) | tag;
	if (*r <= start)
		*r += span;
	*v = *r - obj->load_bias;
	const void *f = sym_func_key(*so, fvaddr);
	return f && sym_func_key(*so, *v - 1) == f;
}

int ls_tag_call(struct log_symbols *ls, uint32_t func, uint32_t tag, uint64_t *ret)
{
	struct sym_object *so;
	uint64_t v, r, target;
	const char *name;
	if (!tag_addr(ls, func, tag, &so, &v, &r) || !sym_call_target(so, v, &target, &name))
		return 0;
	*ret = r;
	return 1;
}

int ls_tag_indirect_call(struct log_symbols *ls, uint32_t func, uint32_t tag)
{
	struct sym_object *so;
	uint64_t v, r;
	return tag_addr(ls, func, tag, &so, &v, &r) && sym_indirect_call(so, v);
}

int ls_site_in_func(struct log_symbols *ls, uint64_t site, uint32_t func)
{
	const struct lr_object *obj;
	uint64_t fvaddr;
	if (!site || lr_func(ls->log, func, &obj, &fvaddr) < 0 || site <= obj->load_bias)
		return 0;
	struct sym_object *so = ls->objs[obj - lr_object_at(ls->log, 0)].sym;
	const void *f = so ? sym_func_key(so, fvaddr) : NULL;
	return f && sym_func_key(so, site - obj->load_bias - 1) == f;
}

int ls_is_tail_target(struct log_symbols *ls, uint32_t tailer, uint32_t func)
{
	return ls_is_tail_callee(ls, tailer, func, LS_TAIL_UNKNOWN);
}

int ls_is_tail_callee(struct log_symbols *ls, uint32_t tailer, uint32_t func, enum ls_tail_jump how)
{
	const struct lr_object *obj;
	uint64_t vaddr;
	const struct ls_targets *x = tail_targets(ls, tailer);
	if (!x->n || lr_func(ls->log, func, &obj, &vaddr) < 0)
		return 0;
	size_t oi = (size_t)(obj - lr_object_at(ls->log, 0));
	const char *mangled = ls->objs[oi].sym ? sym_lookup(ls->objs[oi].sym, vaddr)->mangled : NULL;
	if (how == LS_TAIL_ELSEWHERE)
		return mangled && x->sole_elsewhere && strcmp(mangled, x->sole_elsewhere) == 0;
	for (size_t i = 0; i < x->n; i++) {
		if (x->t[i].name ? how == LS_TAIL_UNKNOWN && mangled && strcmp(mangled, x->t[i].name) == 0
				 : oi == x->obj && x->t[i].vaddr == vaddr)
			return 1;
	}
	return 0;
}

static int tail_site(struct log_symbols *ls, uint64_t site, uint32_t caller, uint32_t tailer)
{
	const struct lr_object *cobj = NULL, *tobj;
	uint64_t cvaddr = 0, tvaddr, target = 0;
	size_t oi = site ? addr_object(ls, site) : SIZE_MAX;
	if (oi == SIZE_MAX)
		return site ? LS_SITE_UNKNOWN : LS_SITE_CALLS_TAILER;
	struct sym_object *so = ls->objs[oi].sym;
	const struct lr_object *sobj = lr_object_at(ls->log, oi);
	uint64_t sv = site - sobj->load_bias;
	/* the call instruction's function (by symbol, else by its FDE: a
	 * stripped binary); NULL: no recorded object's */
	const void *in = sym_func_key(so, sv - 1);
	if (lr_func(ls->log, caller, &cobj, &cvaddr) < 0 || cobj != sobj || !in || in != sym_func_key(so, cvaddr))
		switch (in_callee(ls, oi, in, tailer)) {
		case 1: return LS_SITE_IN_CALLEE;
		case 2: return LS_SITE_IN_LIBRARY;
		default: return LS_SITE_ELSEWHERE;
		}
	const char *name = NULL;
	int k = sym_call_target(so, sv, &target, &name);
	if (!k || lr_func(ls->log, tailer, &tobj, &tvaddr) < 0)
		return LS_SITE_CALLS_TAILER; /* an indirect call: keep the tail call's claim */
	if (k == 1)
		return tobj == cobj && target == tvaddr ? LS_SITE_CALLS_TAILER : LS_SITE_CALLER_OWN;
	size_t ti = (size_t)(tobj - lr_object_at(ls->log, 0));
	const char *tname = ls->objs[ti].sym ? sym_lookup(ls->objs[ti].sym, tvaddr)->mangled : NULL;
	return tname && strcmp(tname, name) == 0 ? LS_SITE_CALLS_TAILER : LS_SITE_CALLER_OWN;
}

int ls_tail_site(struct log_symbols *ls, uint64_t site, uint32_t caller, uint32_t tailer)
{
	/* memo by site: loops allocate from one site after one tail call */
	uint64_t key = (uint64_t)tailer << 32 | (uint64_t)(caller & 0x1fffffff) << 3;
	uint64_t *m = hm_find(&ls->tail_memo, site);
	if (m && (*m & ~(uint64_t)7) == key)
		return (int)(*m & 7);
	int r = tail_site(ls, site, caller, tailer);
	int added;
	*hm_put(&ls->tail_memo, site, &added) = key | (uint64_t)r;
	return r;
}

int ls_site_line(struct log_symbols *ls, uint64_t addr, const char **file, uint32_t *line)
{
	return ls_site_line_folded(ls, addr, NULL, NULL, file, line);
}

int ls_site_line_folded(struct log_symbols *ls, uint64_t addr, int (*skip)(void *ctx, const char *name), void *ctx,
			const char **file, uint32_t *line)
{
	return ls_site_line_in(ls, addr, UINT32_MAX, skip, ctx, file, line);
}

int ls_site_line_in(struct log_symbols *ls, uint64_t addr, uint32_t func, int (*skip)(void *ctx, const char *name),
		    void *ctx, const char **file, uint32_t *line)
{
	return ls_site_line_inl(ls, addr, func, skip, ctx, file, line, NULL);
}

int ls_site_line_inl(struct log_symbols *ls, uint64_t addr, uint32_t func, int (*skip)(void *ctx, const char *name),
		     void *ctx, const char **file, uint32_t *line, const struct sym_inline **inl)
{
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < ls->nobjs; i++) {
		uint64_t bias = lr_object_at(ls->log, i)->load_bias;
		if (bias <= addr && ls->objs[i].sym &&
		    (best == SIZE_MAX || bias > lr_object_at(ls->log, best)->load_bias))
			best = i;
	}
	if (best == SIZE_MAX || !addr)
		return 0;
	/* objects at one base (one dlclose'd, the next loaded there): the
	 * allocating function's, which was mapped when it ran */
	const struct lr_object *fo;
	uint64_t fv;
	if (func != UINT32_MAX && lr_func(ls->log, func, &fo, &fv) == 0) {
		size_t fi = (size_t)(fo - lr_object_at(ls->log, 0));
		if (fi != best && ls->objs[fi].sym && fo->load_bias == lr_object_at(ls->log, best)->load_bias)
			best = fi;
	}
	/* a return address: the call is the instruction before it */
	return sym_source_line_inl(ls->objs[best].sym, addr - 1 - lr_object_at(ls->log, best)->load_bias, skip, ctx,
				   file, line, inl);
}

struct plumbing_calls {
	struct sym_object *sym;
	int (*skip)(void *ctx, const char *name);
	void *ctx;
	const char *file;
	uint32_t line;
	struct ls_inl inl;
	int n;               /* distinct lines seen, up to 2 */
};

/* One more call's line for plumbing_calls and callee_calls: n counts the
 * distinct lines, up to 2. */
static void another_line(const char *f, uint32_t l, const struct sym_inline *in, const char **file, uint32_t *line,
			 struct ls_inl *inl, int *n)
{
	if (*n && l == *line && strcmp(f, *file) == 0) {
		if (!sym_inline_same_calls(in, inl->inl))
			inl->varies = 1;
		return;
	}
	*file = f;
	*line = l;
	inl->inl = in;
	inl->varies = 0;
	(*n)++;
}

static void plumbing_call(void *ctx, uint64_t ret, const char *name)
{
	struct plumbing_calls *pc = ctx;
	char *d = sf_demangle(name);
	int folded = pc->skip(pc->ctx, d ? d : name);
	free(d);
	const char *f;
	uint32_t l;
	const struct sym_inline *in;
	if (!folded || pc->n > 1 || !sym_source_line_inl(pc->sym, ret - 1, pc->skip, pc->ctx, &f, &l, &in))
		return;
	another_line(f, l, in, &pc->file, &pc->line, &pc->inl, &pc->n);
}

int ls_plumbing_call_line(struct log_symbols *ls, uint32_t func, int (*skip)(void *ctx, const char *name), void *ctx,
			  const char **file, uint32_t *line, struct ls_inl *inl)
{
	const struct lr_object *obj;
	uint64_t vaddr;
	if (lr_func(ls->log, func, &obj, &vaddr) < 0)
		return -1;
	size_t oi = (size_t)(obj - lr_object_at(ls->log, 0));
	if (!ls->objs[oi].sym)
		return -1;
	struct plumbing_calls pc = {.sym = ls->objs[oi].sym, .skip = skip, .ctx = ctx};
	sym_plt_calls(pc.sym, vaddr, plumbing_call, &pc);
	if (pc.n == 1) {
		*file = pc.file;
		*line = pc.line;
		if (inl)
			*inl = pc.inl;
		return 1;
	}
	return pc.n ? 0 : -1;
}

struct callee_calls {
	struct sym_object *sym;
	int (*skip)(void *ctx, const char *name);
	void *ctx;
	uint64_t vaddr;      /* the callee in the caller's object, or 0 */
	const char *mangled; /* its symbol, for calls through the PLT or the GOT */
	const char *file;
	uint32_t line;
	struct ls_inl inl;
	int n;               /* distinct lines seen, up to 2 */
};

static void callee_call(void *ctx, uint64_t ret, int kind, uint64_t target, const char *name)
{
	struct callee_calls *cc = ctx;
	const char *f;
	uint32_t l;
	if (kind == 1 ? target != cc->vaddr : !cc->mangled || strcmp(name, cc->mangled) != 0)
		return;
	const struct sym_inline *in;
	if (cc->n > 1 || !sym_source_line_inl(cc->sym, ret - 1, cc->skip, cc->ctx, &f, &l, &in))
		return;
	another_line(f, l, in, &cc->file, &cc->line, &cc->inl, &cc->n);
}

/* Calls of func whose callee the code does not name (sym_opaque_calls):
 * any may have reached callee through untraced code, unless it calls a
 * traced function other than callee, whose frame would stand between. */
struct opaque_ctx {
	struct callee_calls *cc;
	const struct lr_log *log;
	const struct lr_object *obj;
	uint64_t callee_vaddr;
};

static int fold_all(void *ctx, const char *name)
{
	(void)ctx;
	(void)name;
	return 1;
}

static int traced_at(const struct lr_log *log, const struct lr_object *obj, uint64_t vaddr)
{
	for (uint32_t id = obj->first_id; id < obj->first_id + obj->count; id++) {
		const struct lr_object *o;
		uint64_t v;
		if (lr_func(log, id, &o, &v) == 0 && o == obj && v == vaddr)
			return 1;
	}
	return 0;
}

static void opaque_call(void *ctx, uint64_t ret, uint64_t target)
{
	struct opaque_ctx *oc = ctx;
	struct callee_calls *cc = oc->cc;
	const char *f;
	uint32_t l;
	if (target && target != oc->callee_vaddr && traced_at(oc->log, oc->obj, target))
		return;
	/* the line in func's own code: what reached the callee is unknown, so
	 * every inlined frame there (format!'s alloc::fmt::format, then
	 * core's Option::map_or_else) folds into the line that entered it */
	if (cc->n > 1 || !sym_source_line_folded(cc->sym, ret - 1, fold_all, NULL, &f, &l))
		return;
	if (cc->n && l == cc->line && strcmp(f, cc->file) == 0)
		return;
	cc->file = f;
	cc->line = l;
	cc->n++;
}

int ls_call_line(struct log_symbols *ls, uint32_t func, uint32_t callee, int (*skip)(void *ctx, const char *name),
		 void *ctx, const char **file, uint32_t *line, struct ls_inl *inl)
{
	const struct lr_object *obj, *cobj;
	uint64_t vaddr, cvaddr;
	if (lr_func(ls->log, func, &obj, &vaddr) < 0 || lr_func(ls->log, callee, &cobj, &cvaddr) < 0)
		return -1;
	size_t oi = (size_t)(obj - lr_object_at(ls->log, 0)), ci = (size_t)(cobj - lr_object_at(ls->log, 0));
	if (!ls->objs[oi].sym)
		return -1;
	struct callee_calls cc = {.sym = ls->objs[oi].sym, .skip = skip, .ctx = ctx, .vaddr = oi == ci ? cvaddr : 0,
				  .mangled = ls->objs[ci].sym ? sym_lookup(ls->objs[ci].sym, cvaddr)->mangled : NULL};
	sym_calls(cc.sym, vaddr, callee_call, &cc);
	if (!cc.n) { /* no call names callee: the calls that name nothing (`call *%rbx`, Rust's format_inner) */
		struct opaque_ctx oc = {.cc = &cc, .log = ls->log, .obj = obj, .callee_vaddr = oi == ci ? cvaddr : 0};
		sym_opaque_calls(cc.sym, vaddr, opaque_call, &oc);
	}
	if (cc.n == 1) {
		*file = cc.file;
		*line = cc.line;
		if (inl)
			*inl = cc.inl;
		return 1;
	}
	return cc.n ? 0 : -1;
}

const char *ls_object_file(const struct log_symbols *ls, size_t i)
{
	return i < ls->nobjs ? ls->objs[i].file : NULL;
}

int ls_override_used(const struct log_symbols *ls, size_t i)
{
	return i < ls->noverrides && ls->overrides[i].used;
}

size_t ls_nwarnings(const struct log_symbols *ls) { return ls->nwarnings; }

const char *ls_warning(const struct log_symbols *ls, size_t i)
{
	return i < ls->nwarnings ? ls->warnings[i] : NULL;
}

void ls_close(struct log_symbols *ls)
{
	if (!ls)
		return;
	for (size_t i = 0; i < ls->nobjs; i++) {
		if (ls->objs[i].sym && !ls->objs[i].borrowed)
			sym_close(ls->objs[i].sym);
		free(ls->objs[i].file);
		free(ls->objs[i].cache);
	}
	free(ls->objs);
	for (size_t i = 0; i < ls->nuntraced; i++)
		if (ls->untraced[i].sym)
			sym_close(ls->untraced[i].sym);
	free(ls->untraced);
	size_t pos = 0;
	uint64_t key, val;
	while (hm_next(&ls->untraced_short, &pos, &key, &val))
		free((char *)(uintptr_t)val);
	hm_free(&ls->untraced_short);
	free(ls->overrides);
	while (ls->placeholders) {
		struct ls_placeholder *p = ls->placeholders;
		ls->placeholders = p->next;
		free(p);
	}
	hm_free(&ls->unknown);
	hm_free(&ls->tail_memo);
	hm_free(&ls->targets_ix);
	free(ls->targets);
	while (ls->renamed) {
		struct ls_renamed *r = ls->renamed;
		ls->renamed = r->next;
		free(r->name);
		free(r->mangled);
		free(r);
	}
	for (size_t i = 0; i < ls->nwarnings; i++)
		free(ls->warnings[i]);
	free(ls->warnings);
	free(ls);
}

/* The symbols of untraced object o, opened once; NULL when its file is
 * gone or is another build (the build-id the runtime read must match:
 * without force, a wrong name is worse than none). */
static struct sym_object *untraced_sym(struct log_symbols *ls, const struct lr_object *o)
{
	for (size_t i = 0; i < ls->nuntraced; i++)
		if (ls->untraced[i].o == o)
			return ls->untraced[i].sym;
	char err[512];
	struct sym_object *sym = ls->no_symbols ? NULL : sym_open(o->path, NULL, o->build_id, o->build_id_len, 0,
								   err, sizeof(err));
	ls->untraced = xrealloc(ls->untraced, (ls->nuntraced + 1) * sizeof(*ls->untraced));
	ls->untraced[ls->nuntraced++] = (struct ls_untraced_obj){o, sym};
	return sym;
}

const char *ls_short_of(struct log_symbols *ls, const struct sym_info *si)
{
	int added;
	uint64_t *v = hm_put(&ls->untraced_short, (uint64_t)(uintptr_t)si, &added);
	if (added)
		*v = (uint64_t)(uintptr_t)sf_short_name(si->name, si->mangled);
	return (const char *)(uintptr_t)*v;
}

int ls_untraced_site(struct log_symbols *ls, uint64_t addr, struct ls_untraced_site *out)
{
	const struct lr_object *o = addr ? lr_untraced_at(ls->log, addr) : NULL;
	if (!o)
		return 0;
	*out = (struct ls_untraced_site){.path = o->path, .main = (o->flags & SF_OBJ_MAIN) != 0,
					 .vaddr = addr - o->load_bias};
	struct sym_object *sym = untraced_sym(ls, o);
	if (!sym)
		return 1;
	const struct sym_info *si = sym_lookup(sym, out->vaddr - 1); /* the call before the return address */
	if (si->mangled) {
		out->func = si->name;
		out->func_short = ls_short_of(ls, si);
	}
	if (!sym_source_line(sym, out->vaddr - 1, &out->file, &out->line))
		out->file = NULL;
	return 1;
}
