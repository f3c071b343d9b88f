/* Object discovery: every loaded ELF object (the executable, its shared
 * libraries, objects dlopen'd later) is looked at once. Those with an
 * xray_instr_map section get a range of global function ids, an entry in
 * the log's object table, and their sleds patched. */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format/xray_map.h"
#include "sf_arch.h"
#include "runtime/runtime.h"

#define MAX_OBJECTS 8192

static struct sf_object_rt *objects[MAX_OBJECTS];
static uint32_t nobjects;
static uint32_t next_func_id = 1; /* 0 marks events that have no function (allocations) */
static uint32_t next_index;
static uint32_t patched_forgotten; /* sleds patched in objects since unloaded */
uint64_t sf_patch_ns SF_HIDDEN;
static int self_marker;

static size_t page_round(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

/* Working memory for one object at a time (under the lock), kept mapped:
 * an munmap costs a TLB shootdown on every CPU the process runs on, which
 * made dlopen/dlclose churn several times slower. */
struct scratch_area {
	char *p;
	size_t cap;
};
static struct scratch_area scratch;        /* object discovery, under the lock */
static struct scratch_area switch_scratch; /* sf_objects_switch's sleds: the writer thread's */

static void *area_get(struct scratch_area *a, size_t len)
{
	if (len > a->cap) {
		size_t cap = a->cap ? a->cap : 65536;
		while (cap < len)
			cap *= 2;
		char *p = sf_map_anon(cap);
		if (!p)
			return NULL;
		if (a->p)
			munmap(a->p, a->cap);
		a->p = p;
		a->cap = cap;
	}
	return a->p;
}

static void *scratch_get(size_t len)
{
	return area_get(&scratch, len);
}

/* Records of unloaded objects, kept for the next object (same reason). */
static struct sf_object_rt *free_records;

/* Object records and their paths, carved from 64 KiB mappings and never
 * given back (records are reused, paths too when they fit): a process's
 * first objects share a page or two. Under the lock. */
static char *arena;
static size_t arena_left;

static void *arena_take(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > arena_left) {
		size_t cap = n > 65536 ? page_round(n) : 65536;
		char *p = sf_map_anon(cap);
		if (!p)
			return NULL;
		arena = p;
		arena_left = cap;
	}
	void *r = arena;
	arena += n;
	arena_left -= n;
	return r;
}

/* o's path: its own bytes again when they fit. -1 without memory. */
static int set_path(struct sf_object_rt *o, const char *path)
{
	size_t len = strlen(path);
	if (len + 1 > o->path_cap) {
		char *p = arena_take(len + 1);
		if (!p)
			return -1;
		o->path = p;
		o->path_cap = (uint32_t)((len + 16) & ~(size_t)15);
	}
	memcpy(o->path, path, len + 1);
	return 0;
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

/* The link to the main executable's file: /proc/self/exe, but for a
 * program started through its loader ("ld.so PROG", as relocatable
 * bundles start theirs) the kernel ran the loader: there is no AT_BASE
 * and /proc/self/exe is ld.so. The program is then the file mapped where
 * its program headers are (glibc points AT_PHDR and the main map there). */
/* The mapping of the file that holds the program headers, from the
 * headers alone (no maps read: a start through the loader reads none):
 * the PT_LOAD holding them, its file-backed bytes page-rounded, as the
 * loader mapped it. 0 without a PT_PHDR. */
static int phdr_mapping(const ElfW(Phdr) *phdr, int phnum, uint64_t *lo, uint64_t *hi)
{
	uint64_t at = (uint64_t)phdr, bias = 0;
	int have = 0;
	for (int i = 0; i < phnum; i++)
		if (phdr[i].p_type == PT_PHDR) {
			bias = at - phdr[i].p_vaddr;
			have = 1;
		}
	for (int i = 0; have && i < phnum; i++) {
		uint64_t a = bias + phdr[i].p_vaddr;
		if (phdr[i].p_type == PT_LOAD && at >= a && at < a + phdr[i].p_filesz) {
			*lo = a & ~(uint64_t)(SF_PAGE - 1);
			*hi = (a + phdr[i].p_filesz + SF_PAGE - 1) & ~(uint64_t)(SF_PAGE - 1);
			return 1;
		}
	}
	return 0;
}

static void main_link(const ElfW(Phdr) *phdr, int phnum, char *out, size_t cap)
{
	uint64_t lo, hi;
	int grows;
	char one;
	if (getauxval(AT_BASE) == 0 && phdr) {
		/* the mapping the headers give, if that is one the kernel lists
		 * (its map_files link exists; refused, as without CAP_SYS_ADMIN on
		 * old kernels, any would be); else maps says which */
		if (phdr_mapping(phdr, phnum, &lo, &hi)) {
			sf_map_files_path(out, cap, lo, hi);
			int err = errno;
			if (readlink(out, &one, 1) > 0 || errno != ENOENT) {
				errno = err;
				return;
			}
			errno = err;
		}
		if (sf_mapping_of((uint64_t)phdr, &lo, &hi, &grows)) {
			sf_map_files_path(out, cap, lo, hi);
			return;
		}
	}
	memcpy(out, "/proc/self/exe", sizeof("/proc/self/exe"));
}

static int name_path(const char *name, char *out, size_t cap);

/* The main executable's path as the kernel links it; where readlinkat is
 * refused (a seccomp filter around the program: EPERM, skeptic k6a's
 * jail), the path it was executed by (AT_EXECFN, against the working
 * directory if relative). Its text only names the file for the readers,
 * which check it by build ID; the runtime opens the link itself. Without
 * it the program ran untraced and record said "none of its instrumented
 * functions ran". */
static int main_path(const struct dl_phdr_info *info, char *out, size_t cap)
{
	char link[64];
	main_link(info->dlpi_phdr, info->dlpi_phnum, link, sizeof(link));
	ssize_t n = readlink(link, out, cap - 1);
	if (n > 0) {
		out[n] = 0;
		return 0;
	}
	const char *fn = (const char *)getauxval(AT_EXECFN);
	return fn && fn[0] ? name_path(fn, out, cap) : -1;
}

static int object_path(const struct dl_phdr_info *info, char *out, size_t cap)
{
	const char *name = info->dlpi_name;
	if (!name || !name[0])
		return main_path(info, out, cap);
	return name_path(name, out, cap);
}

/* A loader's name (or AT_EXECFN) as a path: absolute as it is, else
 * against the working directory. */
static int name_path(const char *name, char *out, size_t cap)
{
	size_t len = strlen(name), at = 0;
	if (name[0] != '/') {
		/* A relative search path: the loader opened it from the current
		 * directory, a moment ago (no realpath: see rt_libc.c). */
		if (!getcwd(out, cap))
			return -1;
		at = strlen(out);
		if (at + 1 < cap)
			out[at++] = '/';
	}
	if (at + len >= cap)
		return -1;
	memcpy(out + at, name, len + 1);
	return 0;
}

static int is_main(const struct dl_phdr_info *info)
{
	return !info->dlpi_name || !info->dlpi_name[0];
}

/* The main executable is opened through its link (main_link) itself,
 * not by the text it reads as: that text names nothing when the file was
 * deleted since exec (a program re-executing itself after an upgrade
 * removed its binary) or is a memfd (fexecve, as runc re-executes itself:
 * "/memfd:prog (deleted)"), but the link opens the very file mapped.
 * Without /proc (or, for map_files, without CAP_SYS_ADMIN): by the name. */
static int open_object_file(const struct dl_phdr_info *info, const char *path)
{
	if (is_main(info)) {
		char link[64];
		main_link(info->dlpi_phdr, info->dlpi_phnum, link, sizeof(link));
		int fd = sf_fd_brief(open(link, O_RDONLY | O_CLOEXEC));
		if (fd >= 0)
			return fd;
	}
	return sf_fd_brief(open(path, O_RDONLY | O_CLOEXEC));
}

/* A path that names a file only inside this process (/dev/fd/N,
 * /proc/...): a program fexecve'd from a memfd has AT_EXECFN /dev/fd/N,
 * which main_path takes where readlinkat is refused; a reader afterwards
 * found nothing there (skeptic 7: report stopped at "/dev/fd/4: No such
 * file or directory"). */
static int in_process_path(const char *path)
{
	return !strncmp(path, "/dev/fd/", 8) || !strncmp(path, "/proc/", 6);
}

/* Whether path no longer names the file open at fd (deleted, a memfd, or
 * replaced on disk): a reader of the log could not find its symbols
 * there. Not inlined: its two stat buffers must not stay in the scanning
 * frame, which may be on a small signal stack (test_unwind's 8 KiB
 * sigaltstack). */
__attribute__((noinline)) static int path_lost(const char *path, int fd)
{
	struct stat a, b;
	return in_process_path(path) || fstat(fd, &a) < 0 || stat(path, &b) < 0 || a.st_dev != b.st_dev ||
	       a.st_ino != b.st_ino;
}

static void put_hex_id(char *out, const struct sf_object *info)
{
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < info->build_id_len; i++) {
		*out++ = hex[info->build_id[i] >> 4];
		*out++ = hex[info->build_id[i] & 15];
	}
	*out = 0;
}

/* This process's id in decimal, NUL-terminated (at most 11 bytes). */
static void put_pid(char *out)
{
	char num[16];
	int k = 0;
	for (unsigned pid = (unsigned)getpid(); pid || !k; pid /= 10)
		num[k++] = (char)('0' + pid % 10);
	while (k)
		*out++ = num[--k];
	*out = 0;
}

/* Copies fd's whole file to path through a temporary name: a reader
 * never finds half a copy, and processes of the same image (named by its
 * build-id) replace it with the same bytes. */
static int copy_file(int fd, const char *path)
{
	static char tmp[PATH_MAX]; /* under the lock: see save_image */
	struct stat st, have;
	struct rlimit rl;
	if (fstat(fd, &st) < 0)
		return errno;
	/* Another process of this image (same build-id, same size) saved it
	 * already: every copy is whole (renamed into place). */
	if (lstat(path, &have) == 0 && S_ISREG(have.st_mode) && have.st_uid == geteuid() &&
	    have.st_size == st.st_size)
		return 0;
	/* Never past RLIMIT_FSIZE: that write would raise SIGXFSZ in the
	 * program (as the log's writes never do). */
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)st.st_size > rl.rlim_cur)
		return EFBIG;
	size_t n = strlen(path);
	if (n + 24 > sizeof(tmp))
		return ENAMETOOLONG;
	memcpy(tmp, path, n);
	memcpy(tmp + n, ".tmp.", 5);
	put_pid(tmp + n + 5);
	int out = sf_fd_brief(open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (out < 0)
		return errno;
	sf_own_mode(out);
	int err = 0;
	for (off_t off = 0; !err && off < st.st_size;) {
		ssize_t r = sendfile(out, fd, &off, (size_t)(st.st_size - off));
		if (r < 0 && errno != EINTR)
			err = errno;
		else if (r == 0)
			err = EIO;
	}
	if (sf_close(out) < 0 && !err)
		err = EIO;
	if (!err && rename(tmp, path) < 0)
		err = errno;
	if (err)
		unlink(tmp);
	return err;
}

/* A main executable whose path was lost (path_lost): saved beside the
 * log as STEM.<build-id>.exe (STEM.<pid>.exe without one), and that copy
 * is the path the log names, so that the CLI finds its symbols. Called as
 * the OBJECT chunk is written: a process that writes no log copies
 * nothing. Not inlined, as path_lost: its stat buffers stay out of
 * write_object_chunk's frame, which a first event on a small signal stack
 * runs in. */
__attribute__((noinline)) static void save_image(struct sf_object_rt *o)
{
	if (sf_seccomp_refuses_save()) {
		/* a seccomp filter refuses the copy's calls (sandbox.c) */
		o->image_gone = 0;
		o->image_saved = 1;
		sf_rt_message("cannot save a copy of the executable ", o->path, "a seccomp filter refuses it");
		return;
	}
	char tail[2 * sizeof(o->info.build_id) + 16] = ".";
	if (o->info.build_id_len) {
		put_hex_id(tail + 1, &o->info);
	} else {
		put_pid(tail + 1);
	}
	memcpy(tail + strlen(tail), ".exe", 5);
	/* Static: this runs under the log's lock, at a thread's first event,
	 * which may come on a small stack (logfile.c, make_path_absolute). */
	static char path[PATH_MAX];
	int err = ENAMETOOLONG;
	char link[64];
	main_link(o->phdr, o->phnum, link, sizeof(link));
	int fd = sf_fd_brief(open(link, O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		err = errno;
	else if (sf_log_sibling_path(path, sizeof(path), tail) == 0)
		err = copy_file(fd, path);
	if (fd >= 0)
		sf_close(fd);
	o->image_gone = 0;
	o->image_saved = 1;
	if (err) {
		sf_rt_message("cannot save a copy of the executable ", o->path, strerror(err));
		return;
	}
	if (set_path(o, path) == 0)
		o->info.path_len = (uint16_t)strlen(o->path);
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

static int func_known(const struct func_map *m, uint64_t key)
{
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & m->mask;
	for (; m->keys[h]; h = (h + 1) & m->mask)
		if (m->keys[h] == key)
			return 1;
	return 0;
}

/* Marks the selected tail sleds whose jump lands on the entry of a
 * function of the object that is selected too: their events say so (kind
 * 15), so readers tell a traced tail callee from a call the caller's
 * caller makes after a tail call elsewhere (docs/FORMAT.md). */
static void mark_tail_entries(const struct sf_object_rt *o, const struct func_map *fm, struct xray_sled_rt *sleds,
			      uint32_t ns, int allowed)
{
	uint64_t bias = o->info.load_bias;
	for (uint32_t k = 0; k < ns; k++) {
		if (sleds[k].kind != XRAY_SLED_TAIL || !sleds[k].selected)
			continue;
		uint64_t to = sf_arch_tail_target(sleds[k].address, o->lo, o->hi);
		uint8_t variant;
		sleds[k].tail_entry = to > bias && func_known(fm, to - bias) && allowed &&
				      sf_filter_selects(o, to - bias, &variant);
	}
}

/* The OBJECT chunk for o, as it stands now. */
static void put_object_chunk(struct sf_object_rt *o)
{
	size_t path_pad = (o->info.path_len + 7) & ~(size_t)7;
	size_t len = sizeof(struct sf_object) + path_pad + (size_t)o->nfuncs * 8;
	char *buf = scratch_get(len);
	if (!buf)
		return;
	memcpy(buf, &o->info, sizeof(o->info));
	memcpy(buf + sizeof(o->info), o->path, o->info.path_len);
	memcpy(buf + sizeof(o->info) + path_pad, o->func_addr, (size_t)o->nfuncs * 8);
	struct sf_chunk c = {0};
	c.type = SF_CHUNK_OBJECT;
	c.count = o->nfuncs;
	sf_log_write_chunk(&c, buf, len, 0);
}

static void write_object_chunk(struct sf_object_rt *o)
{
	if (!sf_log_ready() || o->logged || !o->numbered)
		return;
	if (o->image_gone)
		save_image(o);
	put_object_chunk(o);
	o->logged = 1;
	sf_log_object_logged();
}

/* The image ends (exit, exec, _exit; logfile.c, under the log lock). An
 * executable replaced on disk after start (a deploy renaming a new build
 * over it) still had its path when its OBJECT chunk was written: a reader
 * would find the new build there. Checked again now, it is saved as one
 * deleted at start is, and a second OBJECT chunk of the same index names
 * the copy (readers take the later path: docs/FORMAT.md). A process
 * killed by a signal runs no code of ours and is not checked. */
void sf_objects_image_ends(void)
{
	for (uint32_t i = 0; i < nobjects; i++) {
		struct sf_object_rt *o = objects[i];
		if (!o->main_image || !o->logged || o->image_saved)
			continue;
		char link[64];
		main_link(o->phdr, o->phnum, link, sizeof(link));
		int fd = sf_fd_brief(open(link, O_RDONLY | O_CLOEXEC));
		if (fd < 0)
			return;
		int lost = path_lost(o->path, fd);
		sf_close(fd);
		if (lost) {
			save_image(o);
			put_object_chunk(o);
		}
	}
}

/* An object without sleds: its path, bias and extent, for readers to
 * name the allocation sites in it (docs/FORMAT.md, SF_OBJ_UNTRACED). */
static void write_untraced_chunk(struct sf_object_rt *o)
{
	if (!sf_log_ready() || o->logged)
		return;
	put_object_chunk(o);
	o->logged = 1; /* not in the header's count of objects, which are the traced ones */
}

void sf_objects_log_all(void)
{
	for (uint32_t i = 0; i < nobjects; i++)
		if (objects[i]->info.sleds)
			write_object_chunk(objects[i]);
		else if (objects[i]->untraced)
			write_untraced_chunk(objects[i]);
}

static uint32_t next_untraced;

/* The object's sleds in sleds[] (the scratch area), with the filter's
 * and the triggers' choice; its functions numbered from o->info.first_id
 * in the order the map names them (into o->func_addr when `number`: the
 * same ids every time). Returns how many, or -1 without memory. */
static int64_t read_sleds(struct sf_object_rt *o, int number, struct scratch_area *area, struct xray_sled_rt **out)
{
	uint64_t bias = o->info.load_bias;
	uint32_t nsleds = (uint32_t)(o->xray_size / XRAY_ENTRY_SIZE);
	const unsigned char *map = (const unsigned char *)(bias + o->xray_vaddr);
	uint32_t cap = 16;
	while (cap < nsleds * 2)
		cap <<= 1;
	size_t keys_sz = (size_t)cap * 8, vals_sz = (size_t)cap * 4;
	size_t addr_sz = page_round((size_t)nsleds * 8);
	size_t sled_sz = (size_t)nsleds * sizeof(struct xray_sled_rt);
	/* Renumbering for a switch needs the addresses, but not o->func_addr:
	 * a second array after the sleds. */
	char *work = area_get(area, keys_sz + vals_sz + sled_sz + (number ? 0 : addr_sz));
	if (!work)
		return -1;
	memset(work, 0, keys_sz);
	struct func_map fm = {(uint64_t *)work, (uint32_t *)(work + keys_sz), cap - 1};
	struct xray_sled_rt *sleds = (struct xray_sled_rt *)(work + keys_sz + vals_sz);
	uint64_t *addrs = (uint64_t *)(work + keys_sz + vals_sz + sled_sz);
	if (number) {
		addrs = o->func_addr;
		if (o->func_cap < addr_sz) {
			if (addrs)
				munmap(addrs, o->func_cap);
			o->func_cap = 0;
			o->func_addr = addrs = sf_map_anon(addr_sz);
			if (!addrs)
				return -1;
			o->func_cap = addr_sz;
		}
	}
	uint32_t nf = 0, ns = 0;
	int allowed = sf_filter_check_object(o) == 0;
	for (uint32_t i = 0; i < nsleds; i++) {
		struct xray_sled s;
		uint64_t at = (uint64_t)(map + (size_t)i * XRAY_ENTRY_SIZE);
		xray_decode(map + (size_t)i * XRAY_ENTRY_SIZE, at, &s);
		if (!xray_kind_traced(s.kind) || s.address < o->lo || s.address + 11 > o->hi)
			continue;
		if (s.kind == XRAY_SLED_EXIT && sf_arch_exit_is_tail(s.address, o->lo, o->hi))
			s.kind = XRAY_SLED_TAIL; /* its event says tail call, and -R records no return value there */
		uint32_t local = func_index(&fm, s.function - bias, addrs, &nf);
		sleds[ns].address = s.address;
		sleds[ns].func_id = o->info.first_id + local;
		sleds[ns].kind = s.kind;
		sleds[ns].tail_entry = 0;
		sleds[ns].selected = (uint8_t)(allowed && sf_filter_selects(o, s.function - bias, &sleds[ns].variant));
		if (sleds[ns].selected) {
			sf_trigger_select(o, s.function - bias, sleds[ns].func_id, &sleds[ns].variant);
			sf_args_select(o, s.function - bias, sleds[ns].func_id, s.kind, &sleds[ns].variant);
		}
		ns++;
	}
	mark_tail_entries(o, &fm, sleds, ns, allowed);
	if (number) {
		o->nfuncs = nf;
		o->numbered = 1;
	}
	*out = sleds;
	return ns;
}

/* With a filter: the object's functions it selected (one entry sled
 * each), for the log header (sftrace info). In within mode those that
 * open a window (the others are recorded inside one only: gated). */
static void count_selected(const struct xray_sled_rt *sleds, uint32_t n)
{
	if (!sf_config.filter[0] && !sf_filter_per_object())
		return;
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		k += sleds[i].kind == XRAY_SLED_ENTRY && sleds[i].selected && sf_variant_role(sleds[i].variant) != SF_VARIANT_GATED;
	sf_filter_count_selected(k);
}

/* Reads the object's sled map, numbers its functions, logs it, patches it.
 * While tracing is off (record --paused, switch.c) all of that waits for
 * the next resume (sf_objects_switch): a paused process pays for finding
 * its objects only, not for reading their sled maps. */
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
	o->xray_vaddr = sec->vaddr;
	o->xray_size = sec->size;
	o->info.first_id = next_func_id;
	if (__atomic_load_n(&sf_tracing_off, __ATOMIC_ACQUIRE)) {
		/* A function has at least one sled: its ids are reserved
		 * (readers take gaps between objects' ids). */
		o->info.sleds = nsleds;
		next_func_id += nsleds;
		return;
	}
	struct xray_sled_rt *sleds;
	int64_t ns = read_sleds(o, 1, &scratch, &sleds);
	if (ns < 0)
		return;
	count_selected(sleds, (uint32_t)ns);
	sf_args_log_specs(0); /* before the sleds that record by them are patched */
	o->info.sleds = nsleds;
	next_func_id += o->nfuncs;

	struct sf_patch_result res = {0};
	if (!__atomic_load_n(&sf_tracing_off, __ATOMIC_ACQUIRE))
		sf_patch_object(o, sleds, (uint32_t)ns, 1, &res);
	o->info.patched = res.patched;
	/* Written after patching so it carries the patched count. Events of the
	 * object may already be stored by other threads, but the log cannot
	 * be created and no slot can be taken while we hold the lock, and the
	 * reader does not need objects to come first in the file. */
	write_object_chunk(o);
}

static int iterate_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

/* Whether o is still the loaded object numbered `index` (under the lock:
 * a record freed by an unload may hold another object since; object
 * numbers are never reused). */
static int still_listed(const struct sf_object_rt *o, uint32_t index)
{
	for (uint32_t i = 0; i < nobjects; i++)
		if (objects[i] == o)
			return o->info.index == index && o->info.sleds;
	return 0;
}

/* Sleds patched per pass (a few ms of CPU): each pass holds the loader's lock while
 * it writes, so a thread's dlopen, dlclose or exception lookup waits for
 * one pass at most, not the whole switch. */
#ifndef SWITCH_CHUNK
#define SWITCH_CHUNK 32768
#endif

/* One pass of a switch: a copy of the object as it was listed (its record
 * may be reused once it is unloaded), and the sleds to write. */
struct switch_pass {
	struct sf_object_rt *obj;
	const struct xray_sled_rt *sleds;
	uint32_t n;
	int on, found;
	struct sf_patch_result res;
};

/* Writes the pass's sleds from inside dl_iterate_phdr, which holds the
 * loader's lock: an object it lists cannot be unmapped meanwhile (dlclose
 * takes that lock to unlist it first). Not the log lock: threads that
 * take a slot as tracing comes on do not wait for the text. */
static int switch_in_place(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct switch_pass *p = arg;
	(void)size;
	if (info->dlpi_addr != p->obj->dl_addr || info->dlpi_phdr != p->obj->phdr)
		return 0;
	sf_patch_object(p->obj, p->sleds, p->n, p->on, &p->res);
	p->found = 1;
	return 1;
}

uint32_t sf_objects_switch(int on, uint64_t *read_ns)
{
	static struct sf_object_rt *list[MAX_OBJECTS]; /* the writer thread's */
	static uint32_t index[MAX_OBJECTS];
	static struct sf_object_rt copy;
	sigset_t old;
	uint64_t t0 = sf_mono_ns();
	uint32_t changed = 0, n = 0;
	*read_ns = 0;
	sf_log_lock_sig(&old);
	for (uint32_t i = 0; i < nobjects; i++)
		if (objects[i]->info.sleds) {
			list[n] = objects[i];
			index[n++] = objects[i]->info.index;
		}
	sf_log_unlock_sig(&old);
	for (uint32_t i = 0; i < n; i++) {
		struct sf_object_rt *o = list[i];
		struct xray_sled_rt *sleds;
		uint64_t r0 = sf_mono_ns();
		sf_log_lock_sig(&old);
		int64_t ns = -1;
		int numbering = 0;
		if (still_listed(o, index[i])) {
			/* Found while paused: numbered now (instrument). */
			numbering = !o->numbered;
			ns = read_sleds(o, numbering, &switch_scratch, &sleds);
			memcpy(&copy, o, sizeof(copy));
			sf_args_log_specs(0); /* before the sleds that record by them are patched */
		}
		sf_log_unlock_sig(&old);
		*read_ns += sf_mono_ns() - r0;
		/* An object unloaded meanwhile is skipped (not found); one loaded
		 * meanwhile was patched or not by its scan, as sf_tracing_off said. */
		uint32_t done = 0;
		for (int64_t k = 0; k < ns; k += SWITCH_CHUNK) {
			struct switch_pass p = {&copy, sleds + k, (uint32_t)(ns - k < SWITCH_CHUNK ? ns - k : SWITCH_CHUNK), on,
						0, {0, 0}};
			iterate_objects(switch_in_place, &p);
			if (!p.found)
				break;
			done += p.res.patched;
		}
		changed += done;
		sf_log_lock_sig(&old);
		if (still_listed(o, index[i])) {
			o->text_whole |= copy.text_whole;
			o->info.patched = on ? o->info.patched + done : (o->info.patched > done ? o->info.patched - done : 0);
			if (numbering)
				write_object_chunk(o); /* a log made before it (else at the log's creation) */
		}
		sf_log_unlock_sig(&old);
	}
	sf_log_lock_sig(&old);
	sf_patch_ns += sf_mono_ns() - t0;
	sf_log_update_patch_stats(sf_patch_ns, sf_objects_patched_total());
	sf_log_unlock_sig(&old);
	return changed;
}

int sf_objects_any_instrumented(void)
{
	for (uint32_t i = 0; i < nobjects; i++)
		if (objects[i]->info.sleds)
			return 1;
	return 0;
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
		if (o->dl_addr == info->dlpi_addr && o->lo == lo)
			return 0;
	}
	struct sf_object_rt *o = free_records;
	if (o) {
		free_records = o->next_free;
		uint64_t *keep = o->func_addr;
		size_t keep_cap = o->func_cap;
		char *keep_path = o->path;
		uint32_t keep_path_cap = o->path_cap;
		memset(o, 0, sizeof(*o));
		o->func_addr = keep;
		o->func_cap = keep_cap;
		o->path = keep_path;
		o->path_cap = keep_path_cap;
	} else if (!(o = arena_take(sizeof(*o)))) {
		return 1;
	}
	static char no_path[1];
	if (!o->path_cap)
		o->path = no_path;
	o->path[0] = 0;
	o->dl_addr = info->dlpi_addr;
	o->lo = lo;
	o->hi = hi;
	o->info.load_bias = info->dlpi_addr;
	o->phdr = info->dlpi_phdr; /* with dl_addr, how still_loaded knows it */
	o->phnum = info->dlpi_phnum;
	objects[nobjects++] = o;

	/* Ourselves and the vDSO have nothing to patch (the vDSO has no file:
	 * not even looked for). */
	uint64_t self = (uint64_t)&self_marker, vdso = getauxval(AT_SYSINFO_EHDR);
	if ((self >= lo && self < hi) || (vdso >= lo && vdso < hi))
		return 0;
	char path[PATH_MAX];
	if (object_path(info, path, sizeof(path)) < 0 || set_path(o, path) < 0)
		return 0;
	int fd = open_object_file(info, o->path);
	if (fd < 0) {
		/* Other objects may have no sleds at all: only the
		 * executable's loss is worth a word. */
		if (is_main(info))
			sf_rt_message("not patching ", o->path, strerror(errno));
		return 0;
	}
	struct xray_section sec;
	int found = xray_find_section(fd, &sec);
	build_id_from_memory(info, &o->info);
	o->main_image = found == 1 && is_main(info);
	o->image_gone = o->main_image && path_lost(o->path, fd);
	/* The section headers come from the file: a file replaced on disk
	 * since the object was loaded would point us at the wrong bytes. */
	int same = found == 1 ? xray_file_matches(fd, info->dlpi_phdr, info->dlpi_phnum, o->info.build_id,
						  o->info.build_id_len) : 0;
	sf_close(fd);
	if (found == 0) { /* no sleds (an error reading them: not named) */
		o->untraced = 1;
		o->info.index = SF_OBJ_UNTRACED_INDEX | next_untraced++;
		o->info.path_len = (uint16_t)strlen(o->path);
		o->info.flags = (uint8_t)(SF_OBJ_UNTRACED | (is_main(info) ? SF_OBJ_MAIN : flags));
		o->info.reserved = (uint32_t)((hi - o->info.load_bias + 4095) >> 12);
		write_untraced_chunk(o);
		return 0;
	}
	if (found != 1)
		return 0;
	if (same != 1) {
		sf_rt_message("not patching ", o->path, "the file on disk is not the object in memory (replaced since "
				   "it was loaded?); left untraced");
		return 0;
	}
	o->info.index = next_index++;
	o->info.path_len = (uint16_t)strlen(o->path);
	o->info.flags = (uint8_t)((!info->dlpi_name || !info->dlpi_name[0]) ? SF_OBJ_MAIN : flags);
	instrument(o, &sec);
	return 0;
}

/* dl_iterate_phdr reports the caller's namespace only (glibc picks it from
 * the return address), so objects dlmopen'd into other namespaces are
 * found through the debugger interface: _r_debug (version 2) links one
 * r_debug per namespace, each with its list of link maps. Their program
 * headers are read from the ELF header mapped at the start of the object
 * (the first PT_LOAD maps file offset 0 at vaddr 0 for every linker's
 * shared objects; anything else is skipped). */
static int other_namespaces(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	if (_r_debug.r_version < 2)
		return 0;
	/* glibc defines _r_debug as the first member of an r_debug_extended;
	 * hide the cast from the compiler's object-size tracking. */
	const struct r_debug_extended *first = (const struct r_debug_extended *)&_r_debug;
	__asm__("" : "+r"(first));
	for (const struct r_debug_extended *ns = first->r_next; ns; ns = ns->r_next) {
		for (const struct link_map *l = ns->base.r_map; l; l = l->l_next) {
			const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)l->l_addr;
			unsigned char resident;
			/* An object whose first segment is not at vaddr 0 has no
			 * mapping there: mincore says so rather than a fault. */
			if (!l->l_addr || (l->l_addr & 4095) ||
			    sf_syscall3(SYS_mincore, (long)l->l_addr, 4096, (long)&resident) < 0)
				continue;
			if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_type != ET_DYN ||
			    eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > 4096)
				continue;
			struct dl_phdr_info info = {0};
			info.dlpi_addr = l->l_addr;
			info.dlpi_name = l->l_name;
			info.dlpi_phdr = (const ElfW(Phdr) *)(l->l_addr + eh->e_phoff);
			info.dlpi_phnum = eh->e_phnum;
			int r = cb(&info, offsetof(struct dl_phdr_info, dlpi_adds), arg);
			if (r)
				return r;
		}
	}
	return 0;
}

/* Before the scan, without the lock: per-object filters that are still to
 * be made (record --filter-regex) and argument specs still to be resolved
 * in a new object (record -A/-R/--auto-args) run `sftrace filter`, which
 * takes time. */
static int prepare_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uint64_t self = (uint64_t)&self_marker;
	for (uint32_t i = 0; i < __atomic_load_n(&nobjects, __ATOMIC_ACQUIRE); i++)
		if (objects[i]->dl_addr == info->dlpi_addr)
			return 0;
	char path[PATH_MAX];
	if (object_path(info, path, sizeof(path)) < 0)
		return 0;
	int fd = open_object_file(info, path);
	if (fd < 0)
		return 0;
	struct xray_section sec;
	int found = xray_find_section(fd, &sec);
	sf_close(fd);
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
		sf_args_prepare_object(path, bid.build_id, (size_t)bid.build_id_len);
	}
	return 0;
}

/* Every object of every namespace. */
static int iterate_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	int r = dl_iterate_phdr(cb, arg);
	return r ? r : other_namespaces(cb, arg);
}

void sf_objects_scan(int flags)
{
	if (sf_filter_per_object() || sf_args_per_object())
		iterate_objects(prepare_one, NULL);
	sigset_t old;
	sf_log_lock_sig(&old);
	uint64_t t0 = sf_mono_ns();
	iterate_objects(scan_one, &flags);
	sf_patch_ns += sf_mono_ns() - t0;
	sf_log_update_patch_stats(sf_patch_ns, sf_objects_patched_total());
	sf_log_unlock_sig(&old);
}

static int still_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sf_object_rt *o = arg;
	(void)size;
	return info->dlpi_addr == o->dl_addr && info->dlpi_phdr == o->phdr;
}

/* Frees an unloaded object's record. Its OBJECT and UNLOAD chunks are in
 * the log already; a child forked later does not need it. Its slot in the
 * table is reused, so any number of dlopen/dlclose cycles keeps working. */
static void forget(uint32_t i)
{
	struct sf_object_rt *o = objects[i];
	patched_forgotten += o->info.patched;
	sf_args_forget_ids(o->info.first_id, o->info.sleds);
	o->next_free = free_records;
	free_records = o;
	memmove(&objects[i], &objects[i + 1], (nobjects - i - 1) * sizeof(objects[0]));
	nobjects--;
}

void sf_objects_check_unloaded(void)
{
	sigset_t old;
	sf_log_lock_sig(&old);
	for (uint32_t i = 0; i < nobjects;) {
		struct sf_object_rt *o = objects[i];
		if (iterate_objects(still_loaded, o)) {
			i++;
			continue;
		}
		if (o->info.sleds && o->logged) {
			struct sf_unload u = {o->info.index, 0};
			struct sf_chunk c = {0};
			c.type = SF_CHUNK_UNLOAD;
			sf_log_write_chunk(&c, &u, sizeof(u), 0);
		}
		forget(i);
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
	uint32_t n = patched_forgotten;
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

/* Whether [lo, hi) lies inside one PT_LOAD of a known object, an
 * executable one when exec: memory a landing's stack scan (past_scan.c)
 * may read without faulting. Objects loaded but not yet scanned are not
 * known, so their code reads as not there. */
int sf_objects_holds(uint64_t lo, uint64_t hi, int exec)
{
	uint32_t n = __atomic_load_n(&nobjects, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++) {
		const struct sf_object_rt *o = objects[i];
		if (!o || !o->phdr || lo < o->lo || hi > o->hi)
			continue;
		const ElfW(Phdr) *ph = o->phdr;
		for (int k = 0; k < o->phnum; k++) {
			uint64_t s = o->dl_addr + ph[k].p_vaddr;
			if (ph[k].p_type == PT_LOAD && (ph[k].p_flags & (exec ? PF_X : PF_R)) && lo >= s &&
			    hi <= s + ph[k].p_memsz)
				return 1;
		}
	}
	return 0;
}
