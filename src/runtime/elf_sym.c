/* Symbols of loaded objects, read from their dynamic symbol tables in
 * memory: what dlsym would answer, without dlsym. A dlsym that misses
 * allocates its error message, and dlopen allocates, through the
 * program's malloc (an executable may define its own): the runtime's
 * start-up must not (unwind.c finds libgcc_s's unwinder this way, only
 * once the program has it loaded); and every dlsym, hit or miss, changes
 * what the program's dlerror() says next: the runtime's next definitions
 * all come from here (sf_real). Reads only mapped memory; no
 * allocation, no lock but dl_iterate_phdr's. */
#include <link.h>

#include "runtime/runtime.h"

static int same_name(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

/* A dynamic-section address: relocated in place by the loader for most
 * objects (absolute), but not for all (the vDSO's): below base means not. */
static uintptr_t dyn_addr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}

/* The name of version index idx in the version definitions at vd. */
static const char *verdef_name(const ElfW(Verdef) *vd, const char *str, uint16_t idx)
{
	for (; vd; vd = vd->vd_next ? (const ElfW(Verdef) *)((const char *)vd + vd->vd_next) : NULL)
		if (vd->vd_ndx == idx && vd->vd_cnt)
			return str + ((const ElfW(Verdaux) *)((const char *)vd + vd->vd_aux))->vda_name;
	return NULL;
}

/* ver NULL: the default definition (not a hidden version); else the
 * definition of version ver, hidden or not (dlvsym's), or any definition
 * of an object without version information (glibc accepts those for a
 * versioned lookup: a preload built without a version script). With
 * as_ref, also an unversioned definition of a versioned object, as a
 * program's versioned reference binds to it (glibc's check_match for a
 * lookup that is not dlvsym's). */
static int version_fits(const uint16_t *versym, const ElfW(Verdef) *vd, const char *str, uint32_t i,
			const char *ver, int as_ref)
{
	if (!ver)
		return !(versym && (versym[i] & 0x8000));
	if (!versym)
		return 1;
	if (as_ref && (versym[i] & 0x7fff) <= 1 && !(versym[i] & 0x8000))
		return 1;
	const char *n = verdef_name(vd, str, versym[i] & 0x7fff);
	return n && same_name(n, ver);
}

/* An object's dynamic tables, as its PT_DYNAMIC names them in memory. */
struct dyn_tables {
	const ElfW(Sym) *sym;
	const char *str;
	const uint32_t *gh; /* DT_GNU_HASH */
	const uint16_t *versym;
	const ElfW(Verdef) *verdef;
	const uint32_t *buckets, *chain; /* the GNU hash's, from gh */
};

/* 1 with t filled if the object has a symbol table, strings and a
 * non-empty GNU hash (every object glibc's toolchain links has one). */
static int dyn_tables(uintptr_t base, const ElfW(Phdr) *phdr, int phnum, struct dyn_tables *t)
{
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < phnum; i++)
		if (phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + phdr[i].p_vaddr);
	*t = (struct dyn_tables){0};
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = dyn_addr(base, dyn->d_un.d_ptr);
		if (dyn->d_tag == DT_SYMTAB)
			t->sym = (const ElfW(Sym) *)v;
		else if (dyn->d_tag == DT_STRTAB)
			t->str = (const char *)v;
		else if (dyn->d_tag == DT_GNU_HASH)
			t->gh = (const uint32_t *)v;
		else if (dyn->d_tag == DT_VERSYM)
			t->versym = (const uint16_t *)v;
		else if (dyn->d_tag == DT_VERDEF)
			t->verdef = (const ElfW(Verdef) *)v;
	}
	if (!t->sym || !t->str || !t->gh || !t->gh[0])
		return 0;
	t->buckets = (const uint32_t *)((const ElfW(Addr) *)(t->gh + 4) + t->gh[2]);
	t->chain = t->buckets + t->gh[0];
	return 1;
}

/* sf_sym_in, with the definition's st_size in *size when size is given,
 * of version ver when given. */
static void *sym_in_tables(uintptr_t base, const struct dyn_tables *tp, const char *name, const char *ver,
			   int as_ref, size_t *size)
{
	const struct dyn_tables t = *tp;
	const ElfW(Sym) *sym = t.sym;
	const char *str = t.str;
	const uint16_t *versym = t.versym;
	const ElfW(Verdef) *verdef = t.verdef;
	uint32_t nbuckets = t.gh[0], symoffset = t.gh[1];
	const uint32_t *buckets = t.buckets, *chain = t.chain;
	uint32_t h = gnu_hash(name);
	uint32_t i = buckets[h % nbuckets];
	if (i < symoffset)
		return NULL;
	for (;; i++) {
		uint32_t c = chain[i - symoffset];
		const ElfW(Sym) *s = &sym[i];
		int type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
		if ((c | 1) == (h | 1) && s->st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK) &&
		    (type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_OBJECT) &&
		    version_fits(versym, verdef, str, i, ver, as_ref) && same_name(str + s->st_name, name)) {
			void *at = (void *)(base + s->st_value);
			if (size)
				*size = s->st_size;
			return type == STT_GNU_IFUNC ? ((void *(*)(void))at)() : at;
		}
		if (c & 1)
			return NULL;
	}
}

static void *sym_in(uintptr_t base, const void *phdr_v, int phnum, const char *name, const char *ver, int as_ref,
		    size_t *size)
{
	struct dyn_tables t;
	if (!dyn_tables(base, phdr_v, phnum, &t))
		return NULL;
	return sym_in_tables(base, &t, name, ver, as_ref, size);
}

void *sf_sym_in(uintptr_t base, const void *phdr_v, int phnum, const char *name)
{
	return sym_in(base, phdr_v, phnum, name, NULL, 0, NULL);
}

struct next_find {
	const char *name;
	const char *ver;   /* version the definition must have; NULL: the default one */
	const char *lib;   /* basename prefix the object must have; NULL: any */
	uintptr_t self;    /* an address in the runtime: objects after it (RTLD_NEXT) */
	int past_self;
	int not_tracer;    /* skip the tracer's own objects (tracer_object) */
	int as_ref;        /* versions matched as a program's reference is (version_fits) */
	void *found;
	size_t size;
};

static int in_object(const struct dl_phdr_info *info, uintptr_t a)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type == PT_LOAD && a >= info->dlpi_addr + p->p_vaddr &&
		    a < info->dlpi_addr + p->p_vaddr + p->p_memsz)
			return 1;
	}
	return 0;
}

static int has_prefix(const char *path, const char *prefix)
{
	const char *b = path;
	for (const char *p = path; *p; p++)
		if (*p == '/')
			b = p + 1;
	while (*prefix && *b == *prefix)
		b++, prefix++;
	return !*prefix;
}

/* The tracer's objects: the one this code is in (libsftrace.so, or
 * libsftrace-alloc.so, which links this file too), and the other by its
 * file name. */
static int tracer_object(const struct dl_phdr_info *info)
{
	if (in_object(info, (uintptr_t)sf_real_v))
		return 1;
	const char *b = info->dlpi_name ? info->dlpi_name : "";
	for (const char *p = b; *p; p++)
		if (*p == '/')
			b = p + 1;
	return same_name(b, "libsftrace.so") || same_name(b, "libsftrace-alloc.so");
}

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct next_find *f = arg;
	if (f->self && !f->past_self) {
		f->past_self = in_object(info, f->self);
		return 0;
	}
	if (f->lib && !(info->dlpi_name && has_prefix(info->dlpi_name, f->lib)))
		return 0;
	if (f->not_tracer && tracer_object(info))
		return 0;
	f->found = sym_in(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, f->name, f->ver, f->as_ref, &f->size);
	return f->found != NULL;
}

void *sf_sym_next(const char *name, const void *self)
{
	struct next_find f = {.name = name, .self = (uintptr_t)self};
	dl_iterate_phdr(find_cb, &f);
	return f.found;
}

void *sf_sym_lib_sized(const char *lib, const char *name, size_t *size)
{
	struct next_find f = {.name = name, .lib = lib};
	dl_iterate_phdr(find_cb, &f);
	if (size)
		*size = f.found ? f.size : 0;
	return f.found;
}

void *sf_sym_lib(const char *lib, const char *name)
{
	return sf_sym_lib_sized(lib, name, NULL);
}

/* What dlsym(RTLD_NEXT, name) or dlvsym(RTLD_NEXT, name, ver) answers
 * from here (the first definition in an object loaded after the
 * runtime), without libdl: a dlsym that finds its symbol frees the
 * program's pending dlerror message (glibc's _dlerror_run), one that
 * misses sets it, so a wrapper's lookup between the program's failed
 * dlopen and its dlerror() changed what dlerror() said (skeptic25m). A
 * runtime dlopen'd itself comes after libc: libc's own definition then,
 * as RTLD_NEXT in the runtime's local scope finds. */
void *sf_real_v(const char *name, const char *ver)
{
	struct next_find f = {.name = name, .ver = ver, .self = (uintptr_t)sf_real_v};
	dl_iterate_phdr(find_cb, &f);
	if (f.found)
		return f.found;
	struct next_find l = {.name = name, .ver = ver, .lib = "libc.so"};
	dl_iterate_phdr(find_cb, &l);
	return l.found;
}

void *sf_real(const char *name)
{
	return sf_real_v(name, NULL);
}

/* dlvsym(RTLD_DEFAULT, name, ver): the first definition in any object. */
void *sf_sym_any_v(const char *name, const char *ver)
{
	struct next_find f = {.name = name, .ver = ver};
	dl_iterate_phdr(find_cb, &f);
	return f.found;
}

/* What a program's reference to name@ver binds to without the tracer's
 * objects: the first fitting definition, by load order, in any other. */
void *sf_sym_untraced_v(const char *name, const char *ver)
{
	struct next_find f = {.name = name, .ver = ver, .not_tracer = 1, .as_ref = 1};
	dl_iterate_phdr(find_cb, &f);
	return f.found;
}

/* The tracer's objects' tables, taken once (dlsym.c asks on every lookup
 * on a handle): both are loaded at start (preloads) and never unloaded. */
static struct tracer_tables {
	uintptr_t base;
	struct dyn_tables t;
} tracer_tabs[2];
static int tracer_tabs_n;
static int tracer_tabs_state; /* 0 not taken, 1 being taken, 2 ready */

static int tracer_tabs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (tracer_tabs_n < 2 && tracer_object(info) &&
	    dyn_tables(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, &tracer_tabs[tracer_tabs_n].t))
		tracer_tabs[tracer_tabs_n++].base = info->dlpi_addr;
	return 0;
}

/* A tracer object defines name (of version ver; NULL: the default one). */
struct tracer_find {
	const char *name, *ver;
	int found;
};

static int tracer_def_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct tracer_find *f = arg;
	if (tracer_object(info))
		f->found = sym_in(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, f->name, f->ver, 0, NULL) != NULL;
	return f->found;
}

int sf_tracer_defines(const char *name, const char *ver)
{
	int st = __atomic_load_n(&tracer_tabs_state, __ATOMIC_ACQUIRE), zero = 0;
	if (st == 0 && __atomic_compare_exchange_n(&tracer_tabs_state, &zero, 1, 0, __ATOMIC_ACQUIRE,
						   __ATOMIC_RELAXED)) {
		dl_iterate_phdr(tracer_tabs_cb, NULL);
		__atomic_store_n(&tracer_tabs_state, 2, __ATOMIC_RELEASE);
		st = 2;
	}
	if (st == 2) {
		for (int i = 0; i < tracer_tabs_n; i++)
			if (sym_in_tables(tracer_tabs[i].base, &tracer_tabs[i].t, name, ver, 0, NULL))
				return 1;
		return 0;
	}
	/* another thread is taking them: the walk */
	struct tracer_find f = {.name = name, .ver = ver};
	dl_iterate_phdr(tracer_def_cb, &f);
	return f.found;
}

struct at_find {
	uintptr_t addr;
	int tracer;  /* the object holding addr is the tracer's */
	int found;   /* addr is in a loaded object */
	const char *name, *ver;
};

/* The dynamic symbol whose value is exactly a - base in the object, and
 * its version name: walks every GNU hash chain (a few hundred symbols). */
static void symbol_at(uintptr_t base, const ElfW(Phdr) *phdr, int phnum, struct at_find *a)
{
	struct dyn_tables t;
	if (!dyn_tables(base, phdr, phnum, &t))
		return;
	const ElfW(Sym) *sym = t.sym;
	const char *str = t.str;
	uint32_t nbuckets = t.gh[0], symoffset = t.gh[1];
	const uint32_t *buckets = t.buckets, *chain = t.chain;
	for (uint32_t b = 0; b < nbuckets; b++) {
		for (uint32_t i = buckets[b]; i >= symoffset; i++) {
			const ElfW(Sym) *s = &sym[i];
			if (s->st_shndx != SHN_UNDEF && base + s->st_value == a->addr &&
			    ELF64_ST_TYPE(s->st_info) == STT_FUNC) {
				a->name = str + s->st_name;
				a->ver = t.versym ? verdef_name(t.verdef, str, t.versym[i] & 0x7fff) : NULL;
				return;
			}
			if (chain[i - symoffset] & 1)
				break;
		}
	}
}

static int at_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct at_find *a = arg;
	if (!in_object(info, a->addr))
		return 0;
	a->found = 1;
	a->tracer = tracer_object(info);
	if (a->tracer)
		symbol_at(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, a);
	return 1;
}

int sf_tracer_symbol_at(const void *addr, const char **name, const char **ver)
{
	struct at_find a = {.addr = (uintptr_t)addr};
	dl_iterate_phdr(at_cb, &a);
	if (!a.tracer || !a.name)
		return 0;
	*name = a.name;
	*ver = a.ver;
	return 1;
}

int sf_in_tracer_object(const void *addr)
{
	struct at_find a = {.addr = (uintptr_t)addr};
	dl_iterate_phdr(at_cb, &a);
	return a.tracer;
}
