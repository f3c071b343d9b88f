/* Object discovery: every loaded ELF object (the executable, its shared
 * libraries, objects dlopen'd later) is looked at once. Those with an
 * xray_instr_map section get a range of global function ids, an entry in
 * the log's object table, and their sleds patched. */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/xray_map.h"
#include "runtime/runtime.h"

void sf_log_lock_sig(sigset_t *old) SF_HIDDEN;
void sf_log_unlock_sig(const sigset_t *old) SF_HIDDEN;
void sf_log_object_logged(void) SF_HIDDEN;

#define MAX_OBJECTS 8192

static struct sf_object_rt *objects[MAX_OBJECTS];
static uint32_t nobjects;
static uint32_t next_func_id = 1; /* 0 marks events that have no function (allocations) */
static uint32_t next_index;
uint64_t sf_patch_ns SF_HIDDEN;
static int self_marker;

static size_t page_round(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

static void build_id_from_memory(const struct dl_phdr_info *info, struct sf_object *o)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const unsigned char *name = p + sizeof(*n);
			const unsigned char *desc = name + ((n->n_namesz + 3) & ~3u);
			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    n->n_descsz <= sizeof(o->build_id)) {
				memcpy(o->build_id, desc, n->n_descsz);
				o->build_id_len = (uint8_t)n->n_descsz;
				return;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
}

static int object_path(const struct dl_phdr_info *info, char *out, size_t cap)
{
	const char *name = info->dlpi_name;
	if (!name || !name[0]) {
		ssize_t n = readlink("/proc/self/exe", out, cap - 1);
		if (n <= 0)
			return -1;
		out[n] = 0;
		return 0;
	}
	if (name[0] != '/' && realpath(name, out))
		return 0;
	size_t len = strlen(name);
	if (len >= cap)
		return -1;
	memcpy(out, name, len + 1);
	return 0;
}

/* Open-addressing map from function address to local function index, used
 * only while numbering one object's functions. */
struct func_map {
	uint64_t *keys;
	uint32_t *vals;
	uint32_t mask;
};

static uint32_t func_index(struct func_map *m, uint64_t key, uint64_t *addrs, uint32_t *n)
{
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & m->mask;
	while (m->keys[h]) {
		if (m->keys[h] == key)
			return m->vals[h];
		h = (h + 1) & m->mask;
	}
	m->keys[h] = key;
	m->vals[h] = *n;
	addrs[*n] = key;
	return (*n)++;
}

static void write_object_chunk(struct sf_object_rt *o)
{
	if (!sf_log_ready() || o->logged)
		return;
	size_t path_pad = (o->info.path_len + 7) & ~(size_t)7;
	size_t len = sizeof(struct sf_object) + path_pad + (size_t)o->nfuncs * 8;
	char *buf = sf_map_anon(page_round(len));
	if (!buf)
		return;
	memcpy(buf, &o->info, sizeof(o->info));
	memcpy(buf + sizeof(o->info), o->path, o->info.path_len);
	memcpy(buf + sizeof(o->info) + path_pad, o->func_addr, (size_t)o->nfuncs * 8);
	struct sf_chunk c = {0};
	c.type = SF_CHUNK_OBJECT;
	c.count = o->nfuncs;
	sf_log_write_chunk(&c, buf, len, 0);
	munmap(buf, page_round(len));
	o->logged = 1;
	sf_log_object_logged();
}

void sf_objects_log_all(void)
{
	for (uint32_t i = 0; i < nobjects; i++)
		if (objects[i]->info.sleds && !objects[i]->unloaded)
			write_object_chunk(objects[i]);
}

/* Reads the object's sled map, numbers its functions, logs it, patches it. */
static void instrument(struct sf_object_rt *o, const struct xray_section *sec)
{
	uint64_t bias = o->info.load_bias;
	uint32_t nsleds = (uint32_t)(sec->size / XRAY_ENTRY_SIZE);
	const unsigned char *map = (const unsigned char *)(bias + sec->vaddr);
	if (!nsleds || (uint64_t)map < o->lo || (uint64_t)map + sec->size > o->hi)
		return;
	/* Function ids must fit in an event's word (sflog.h); an object that
	 * would run past them (after some 268 million functions) stays
	 * unpatched. */
	if ((uint64_t)next_func_id + nsleds >= SF_FUNC_ID_LIMIT)
		return;

	uint32_t cap = 16;
	while (cap < nsleds * 2)
		cap <<= 1;
	size_t keys_sz = page_round((size_t)cap * 8), vals_sz = page_round((size_t)cap * 4);
	size_t addr_sz = page_round((size_t)nsleds * 8);
	size_t sled_sz = page_round((size_t)nsleds * sizeof(struct xray_sled_rt));
	struct func_map fm = {sf_map_anon(keys_sz), sf_map_anon(vals_sz), cap - 1};
	uint64_t *addrs = sf_map_anon(addr_sz);
	struct xray_sled_rt *sleds = sf_map_anon(sled_sz);
	if (!fm.keys || !fm.vals || !addrs || !sleds)
		goto out;

	uint32_t nf = 0, ns = 0;
	int allowed = sf_filter_check_object(o) == 0;
	for (uint32_t i = 0; i < nsleds; i++) {
		struct xray_sled s;
		uint64_t at = (uint64_t)(map + (size_t)i * XRAY_ENTRY_SIZE);
		xray_decode(map + (size_t)i * XRAY_ENTRY_SIZE, at, &s);
		if (!xray_kind_traced(s.kind) || s.address < o->lo || s.address + 11 > o->hi)
			continue;
		uint32_t local = func_index(&fm, s.function - bias, addrs, &nf);
		sleds[ns].address = s.address;
		sleds[ns].func_id = next_func_id + local;
		sleds[ns].kind = s.kind;
		sleds[ns].selected = (uint8_t)(allowed && sf_filter_selects(o, s.function - bias, &sleds[ns].variant));
		ns++;
	}
	o->func_addr = addrs;
	addrs = NULL;
	o->nfuncs = nf;
	o->info.first_id = next_func_id;
	o->info.sleds = nsleds;
	next_func_id += nf;

	struct sf_patch_result res = {0};
	sf_patch_object(o, sleds, ns, &res);
	o->info.patched = res.patched;
	/* Written after patching so it carries the patched count. Events of the
	 * object may already be stored by other threads, but the log cannot
	 * be created and no slot can be taken while we hold the lock, and the
	 * reader does not need objects to come first in the file. */
	write_object_chunk(o);
out:
	if (fm.keys)
		munmap(fm.keys, keys_sz);
	if (fm.vals)
		munmap(fm.vals, vals_sz);
	if (addrs)
		munmap(addrs, addr_sz);
	if (sleds)
		munmap(sleds, sled_sz);
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	int flags = *(int *)arg;
	(void)size;
	if (nobjects >= MAX_OBJECTS)
		return 1;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (hi == 0)
		return 0;
	for (uint32_t i = 0; i < nobjects; i++) {
		struct sf_object_rt *o = objects[i];
		if (!o->unloaded && o->dl_addr == info->dlpi_addr && o->lo == lo)
			return 0;
	}
	struct sf_object_rt *o = sf_map_anon(page_round(sizeof(*o)));
	if (!o)
		return 1;
	o->dl_addr = info->dlpi_addr;
	o->lo = lo;
	o->hi = hi;
	o->info.load_bias = info->dlpi_addr;
	objects[nobjects++] = o;

	/* Ourselves and the vDSO have nothing to patch. */
	uint64_t self = (uint64_t)&self_marker;
	if (self >= lo && self < hi)
		return 0;
	if (object_path(info, o->path, sizeof(o->path)) < 0)
		return 0;
	int fd = open(o->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct xray_section sec;
	int found = xray_find_section(fd, &sec);
	close(fd);
	if (found != 1)
		return 0;
	o->info.index = next_index++;
	o->info.path_len = (uint16_t)strlen(o->path);
	o->info.flags = (uint8_t)((!info->dlpi_name || !info->dlpi_name[0]) ? SF_OBJ_MAIN : flags);
	build_id_from_memory(info, &o->info);
	o->phdr = info->dlpi_phdr;
	o->phnum = info->dlpi_phnum;
	instrument(o, &sec);
	return 0;
}

/* Before the scan, without the lock: per-object filters that are still to
 * be made (record --filter-regex) run `sftrace filter`, which takes time. */
static int prepare_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uint64_t self = (uint64_t)&self_marker;
	for (uint32_t i = 0; i < __atomic_load_n(&nobjects, __ATOMIC_ACQUIRE); i++)
		if (!objects[i]->unloaded && objects[i]->dl_addr == info->dlpi_addr)
			return 0;
	char path[PATH_MAX];
	if (object_path(info, path, sizeof(path)) < 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct xray_section sec;
	int found = xray_find_section(fd, &sec);
	close(fd);
	struct sf_object bid = {0};
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && self >= info->dlpi_addr + ph->p_vaddr &&
		    self < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			return 0; /* ourselves */
	}
	if (found == 1) {
		build_id_from_memory(info, &bid);
		sf_filter_prepare_object(path, bid.build_id, bid.build_id_len);
	}
	return 0;
}

void sf_objects_scan(int flags)
{
	if (sf_filter_per_object())
		dl_iterate_phdr(prepare_one, NULL);
	sigset_t old;
	sf_log_lock_sig(&old);
	uint64_t t0 = sf_mono_ns();
	dl_iterate_phdr(scan_one, &flags);
	sf_patch_ns += sf_mono_ns() - t0;
	sf_log_update_patch_stats();
	sf_log_unlock_sig(&old);
}

static int still_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sf_object_rt *o = arg;
	(void)size;
	return info->dlpi_addr == o->dl_addr && info->dlpi_phdr == o->phdr;
}

void sf_objects_check_unloaded(void)
{
	sigset_t old;
	sf_log_lock_sig(&old);
	for (uint32_t i = 0; i < nobjects; i++) {
		struct sf_object_rt *o = objects[i];
		if (o->unloaded || dl_iterate_phdr(still_loaded, o))
			continue;
		o->unloaded = 1;
		if (o->info.sleds && o->logged) {
			struct sf_unload u = {o->info.index, 0};
			struct sf_chunk c = {0};
			c.type = SF_CHUNK_UNLOAD;
			sf_log_write_chunk(&c, &u, sizeof(u), 0);
		}
	}
	sf_log_unlock_sig(&old);
}

void sf_objects_after_fork_child(void)
{
	for (uint32_t i = 0; i < nobjects; i++)
		objects[i]->logged = 0;
}

uint32_t sf_objects_patched_total(void)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < nobjects; i++)
		n += objects[i]->info.patched;
	return n;
}

void sf_objects_foreach_instrumented(void (*cb)(const struct sf_object_rt *o))
{
	for (uint32_t i = 0; i < nobjects; i++)
		if (objects[i]->info.sleds)
			cb(objects[i]);
}
