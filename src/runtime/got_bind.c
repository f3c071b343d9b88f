/* Binding of our own: the runtime's stand-ins for library functions
 * (unwind.c: _Unwind_SetIP; with --alloc,
 * libsftrace-alloc.so's operator new forms) reach the program's calls
 * through the GOT slots of the references bound to the library's
 * definition, and the runtime exports none of these names. So a program
 * that looks for them (dlsym, dlvsym, a weak reference, the same after
 * dlopen of a C++ plugin) finds exactly what it finds untraced: nothing
 * in a C program, libgcc_s's or libstdc++'s definition once loaded. An
 * exported stand-in was found by all of those, and one with no library
 * behind it could only abort (docs/DESIGN.md, "Stand-ins are not exported").
 *
 * Two moments, one rule (a JUMP_SLOT or GLOB_DAT relocation naming the
 * symbol, bound or to be bound to the library's definition):
 *   - at start every object is relocated (the runtime's constructor runs
 *     first, after all relocation, -z initfirst): the slot is rewritten
 *     when it holds the library's definition, or is a lazy slot not yet
 *     resolved and the symbol's first definition is the library's;
 *     slots in RELRO are made writable for the store and read-only again;
 *   - at each loader event (loader_hook.c: RT_ADD and RT_CONSISTENT, the
 *     new objects mapped and not yet relocated) the relocation itself, in the new
 *     object's table, becomes an R_*_IRELATIVE whose resolver returns the
 *     stand-in: the loader's own relocation, lazy or not, then writes it,
 *     before RELRO is sealed and before any constructor of the object runs
 *     (the loader calls resolvers in both modes; IRELATIVE names no
 *     symbol, so nothing is looked up and nothing can fail).
 * A GOT slot (GLOB_DAT) is also where `&name` is read from: operator new
 * binds PLT slots only (calls), so the program's &_Znwm stays dlsym's
 * (test_symver_identity); a -fno-plt call to it then records the site
 * inside libstdc++, its count unchanged. The unwinder's GOT slots are
 * bound where the object's code calls through them (Rust calls
 * _Unwind_SetIP so, without a PLT; calls_through), else left as dlsym's.
 * A reference bound elsewhere (an executable's own operator new, LLVM's
 * libunwind) is left alone. No allocation; the loader lock is held at
 * events, start-up is single-threaded. */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "runtime/runtime.h"

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#define R_IRELATIVE R_X86_64_IRELATIVE
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#define R_IRELATIVE R_AARCH64_IRELATIVE
#endif

enum { MAX_BINDS = 16, MAX_SEEN = 2048 };

struct obj_view {
	uintptr_t base, lo, hi;          /* load bias, mapped span */
	uintptr_t relro_lo, relro_hi;    /* pages the loader made read-only */
	const ElfW(Phdr) *phdr;
	int phnum;
	const ElfW(Sym) *sym;
	const char *str;
	ElfW(Rela) *rel[2];
	size_t nrel[2];
};

static uintptr_t page_size(void)
{
	static uintptr_t pg;
	if (!pg)
		pg = getauxval(AT_PAGESZ) ? getauxval(AT_PAGESZ) : 4096;
	return pg;
}

/* The dynamic section's addresses: relocated in place by the loader for
 * most objects (elf_sym.c says the same), not before it ran. */
static uintptr_t dyn_addr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}

static int view_of(uintptr_t base, const ElfW(Phdr) *phdr, int phnum, struct obj_view *v)
{
	memset(v, 0, sizeof(*v));
	v->base = base;
	v->phdr = phdr;
	v->phnum = phnum;
	v->lo = UINTPTR_MAX;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t pg = page_size();
	for (int i = 0; i < phnum; i++) {
		const ElfW(Phdr) *p = &phdr[i];
		uintptr_t a = v->base + p->p_vaddr;
		if (p->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)a;
		else if (p->p_type == PT_LOAD) {
			v->lo = a < v->lo ? a : v->lo;
			v->hi = a + p->p_memsz > v->hi ? a + p->p_memsz : v->hi;
		} else if (p->p_type == PT_GNU_RELRO) { /* the loader rounds both ends down */
			v->relro_lo = a & ~(pg - 1);
			v->relro_hi = (a + p->p_memsz) & ~(pg - 1);
		}
	}
	if (!dyn)
		return 0;
	uintptr_t rela = 0, relasz = 0, jmprel = 0, pltsz = 0;
	long pltrel = DT_RELA;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: v->sym = (const ElfW(Sym) *)dyn_addr(v->base, dyn->d_un.d_ptr); break;
		case DT_STRTAB: v->str = (const char *)dyn_addr(v->base, dyn->d_un.d_ptr); break;
		case DT_RELA: rela = dyn_addr(v->base, dyn->d_un.d_ptr); break;
		case DT_RELASZ: relasz = dyn->d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn_addr(v->base, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltsz = dyn->d_un.d_val; break;
		case DT_PLTREL: pltrel = (long)dyn->d_un.d_val; break;
		}
	}
	if (!v->sym || !v->str)
		return 0;
	v->rel[0] = (ElfW(Rela) *)rela;
	v->nrel[0] = rela ? relasz / sizeof(ElfW(Rela)) : 0;
	if (pltrel == DT_RELA && jmprel) {
		v->rel[1] = (ElfW(Rela) *)jmprel;
		v->nrel[1] = pltsz / sizeof(ElfW(Rela));
	}
	return v->nrel[0] || v->nrel[1];
}

/* The protection of the PT_LOAD segment holding a. */
static int prot_at(const struct obj_view *v, uintptr_t a)
{
	for (int i = 0; i < v->phnum; i++) {
		const ElfW(Phdr) *p = &v->phdr[i];
		if (p->p_type == PT_LOAD && a >= v->base + p->p_vaddr && a < v->base + p->p_vaddr + p->p_memsz)
			return (p->p_flags & PF_R ? PROT_READ : 0) | (p->p_flags & PF_W ? PROT_WRITE : 0) |
			       (p->p_flags & PF_X ? PROT_EXEC : 0);
	}
	return -1;
}

/* Stores n bytes at a, whose pages have protection prot: made writable
 * for the store when they are not, then put back. */
static int store(void *a, const void *b, size_t n, int prot)
{
	uintptr_t pg = page_size(), lo = (uintptr_t)a & ~(pg - 1), hi = ((uintptr_t)a + n + pg - 1) & ~(pg - 1);
	if (prot < 0)
		return -1;
	if (!(prot & PROT_WRITE) && mprotect((void *)lo, hi - lo, prot | PROT_WRITE) < 0)
		return -1;
	if (n == sizeof(uintptr_t) && !((uintptr_t)a & (n - 1)))
		__atomic_store_n((uintptr_t *)a, *(const uintptr_t *)b, __ATOMIC_RELEASE);
	else
		memcpy(a, b, n);
	if (!(prot & PROT_WRITE))
		mprotect((void *)lo, hi - lo, prot);
	return 0;
}

/* A slot of a relocated object: the protection its page has now. */
static int slot_prot(const struct obj_view *v, uintptr_t slot)
{
	if (slot >= v->relro_lo && slot < v->relro_hi)
		return PROT_READ;
	return prot_at(v, slot);
}

/* Whether the object's code calls or jumps through the GOT slot
 * (x86-64 `call *slot(%rip)` or `jmp *slot(%rip)`, what code built
 * without a PLT does, Rust's by default), rather than only reading the
 * address (`&name`, which must stay dlsym's). Scans the executable
 * segments, once per such slot: only GOT-only references to the
 * unwinder's names get here (Rust programs). aarch64 code calls through
 * a GOT slot with a load and a `blr`: not told apart, left unbound. */
static int calls_through(const struct obj_view *v, uintptr_t slot)
{
#if defined(__x86_64__)
	for (int i = 0; i < v->phnum; i++) {
		const ElfW(Phdr) *p = &v->phdr[i];
		if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || p->p_filesz < 6)
			continue;
		const unsigned char *c = (const unsigned char *)(v->base + p->p_vaddr), *end = c + p->p_filesz - 5;
		while ((c = memchr(c, 0xff, (size_t)(end - c)))) {
			if (c[1] == 0x15 || c[1] == 0x25) {
				int32_t d;
				memcpy(&d, c + 2, 4);
				if ((uintptr_t)c + 6 + (uintptr_t)(intptr_t)d == slot)
					return 1;
			}
			c++;
		}
	}
#else
	(void)v, (void)slot;
#endif
	return 0;
}

struct bind_ctx {
	const struct sf_bind *b[MAX_BINDS];
	uintptr_t def[MAX_BINDS];   /* the library's definition, 0: not loaded */
	uintptr_t first[MAX_BINDS]; /* the symbol's first definition in the global scope */
	int n;
	uintptr_t self;             /* an address in libsftrace.so: not bound */
};

static void bind_one(const struct obj_view *v, ElfW(Rela) *r, const struct bind_ctx *c, int relocated)
{
	unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
	if (type != R_JUMP_SLOT && type != R_GLOB_DAT)
		return;
	const char *name = v->str + v->sym[ELF64_R_SYM(r->r_info)].st_name;
	int k = 0;
	while (k < c->n && strcmp(name, c->b[k]->name))
		k++;
	if (k == c->n || !c->def[k] || (type == R_GLOB_DAT && c->b[k]->calls_only))
		return;
	uintptr_t slot = v->base + r->r_offset, now = *(const uintptr_t *)slot;
	if (type == R_GLOB_DAT && !calls_through(v, slot))
		return;
	if (relocated) {
		/* Bound to the library's, or a lazy slot still pointing into its
		 * own object's PLT whose lookup will find the library's. */
		int lazy = type == R_JUMP_SLOT && now >= v->lo && now < v->hi;
		if (now != c->def[k] && !(lazy && c->first[k] == c->def[k]))
			return;
		uintptr_t to = c->b[k]->resolver();
		store((void *)slot, &to, sizeof(to), slot_prot(v, slot));
		return;
	}
	/* Not relocated yet: the slot holds its link-time value (a lazy
	 * slot's PLT offset, or 0), below the load bias. The loader will bind
	 * the library's unless the global scope has another definition first. */
	if (!v->base || now >= v->base || (c->first[k] && c->first[k] != c->def[k]))
		return;
	ElfW(Rela) w = *r;
	w.r_info = ELF64_R_INFO(0, R_IRELATIVE);
	w.r_addend = (ElfW(Sxword))((uintptr_t)c->b[k]->resolver - v->base);
	store(r, &w, sizeof(w), prot_at(v, (uintptr_t)r));
}

static void bind_object(uintptr_t base, const ElfW(Phdr) *phdr, int phnum, const struct bind_ctx *c, int relocated)
{
	struct obj_view v;
	if (!view_of(base, phdr, phnum, &v) || (c->self >= v.lo && c->self < v.hi))
		return;
	for (int t = 0; t < 2; t++)
		for (size_t i = 0; i < v.nrel[t]; i++)
			bind_one(&v, &v.rel[t][i], c, relocated);
}

/* The objects present at the last scan: one loaded since is new, mapped
 * and not relocated, at a loader event. Past MAX_SEEN objects a new one
 * cannot be told from an old one and is left unbound. */
static struct seen {
	uintptr_t base;
	const ElfW(Phdr) *phdr;
	int phnum;
	int fresh; /* in cur: not in seen */
} seen[MAX_SEEN], cur[MAX_SEEN];
static int nseen, ncur, seen_full, seen_pos;

/* The loader's lists only grow at their ends and lose objects anywhere,
 * so the objects seen before come in the same order: the search goes on
 * from the last one found, one walk of the list for the old objects, one
 * more for each new one. */
static int was_seen(const struct dl_phdr_info *info)
{
	for (int i = seen_pos; i < nseen; i++)
		if (seen[i].base == info->dlpi_addr && seen[i].phdr == info->dlpi_phdr) {
			seen_pos = i + 1;
			return 1;
		}
	return seen_full;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	int *at_start = arg;
	if (ncur < MAX_SEEN)
		cur[ncur++] = (struct seen){info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum,
					    *at_start || !was_seen(info)};
	else
		seen_full = 1;
	return 0;
}

typedef const struct sf_bind *(*binds_fn)(int *n);

static void add_binds(struct bind_ctx *c, const struct sf_bind *b, int n)
{
	for (int i = 0; i < n && c->n < MAX_BINDS; i++) {
		c->b[c->n] = &b[i];
		c->def[c->n] = (uintptr_t)sf_sym_lib(b[i].lib, b[i].name);
		c->first[c->n] = (uintptr_t)sf_sym_any_v(b[i].name, NULL);
		c->n++;
	}
}

/* The names and their definitions now: only when some object is new. */
static void ctx_fill(struct bind_ctx *c)
{
	int n;
	const struct sf_bind *b = sf_unwind_binds(&n);
	add_binds(c, b, n);
	/* libsftrace-alloc.so's operator new forms, with --alloc */
	binds_fn alloc = (binds_fn)sf_sym_lib("libsftrace-alloc.so", "sftrace_alloc_binds");
	if (alloc) {
		b = alloc(&n);
		add_binds(c, b, n);
	}
}

void sf_bind_scan(int at_start)
{
	ncur = 0;
	seen_pos = 0;
	seen_full = 0; /* set again past MAX_SEEN objects: those past it are left unbound */
	dl_iterate_phdr(scan_cb, &at_start);
	struct bind_ctx c = {.self = (uintptr_t)sf_bind_scan};
	for (int i = 0; i < ncur; i++)
		if (cur[i].fresh) {
			if (!c.n)
				ctx_fill(&c);
			bind_object(cur[i].base, cur[i].phdr, cur[i].phnum, &c, at_start);
		}
	/* At RT_ADD the first new object is mapped, its dependencies not yet
	 * (the library defining a name it references may come next): it is
	 * seen again, still unrelocated, at RT_CONSISTENT, when all are
	 * mapped; relocations bound at the first look are IRELATIVE by then
	 * and skipped. (_r_debug is the base namespace's: a dlmopen'd
	 * namespace's RT_ADD counts as settled.) */
	if (at_start || _r_debug.r_state == RT_CONSISTENT) {
		memcpy(seen, cur, sizeof(cur[0]) * (size_t)ncur);
		nseen = ncur;
	}
}
