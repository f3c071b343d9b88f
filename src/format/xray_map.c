#include "format/xray_map.h"

#include <elf.h>
#include <string.h>
#include <unistd.h>

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Section headers and names are read in blocks on the stack, not one
 * pread each: the runtime scans every object of a process at start (libc
 * alone has about 70 sections), and each pread is a system call. */
#define SH_BLOCK 32        /* section headers per read (2 KiB) */
#define NAMES_BLOCK 2048   /* bytes of the section-name table per read */

static const char xray_wanted[] = "xray_instr_map";

/* Whether the section name at `off` in the name table is xray_instr_map:
 * from the table's first nlen bytes (names) when it lies there, else read
 * alone. */
static int name_is_xray(int fd, const Elf64_Shdr *strtab, uint32_t off, const char *names, size_t nlen)
{
	if (off + sizeof(xray_wanted) > strtab->sh_size)
		return 0;
	if (off + sizeof(xray_wanted) <= nlen)
		return !memcmp(names + off, xray_wanted, sizeof(xray_wanted));
	char name[sizeof(xray_wanted)];
	return read_full(fd, name, sizeof(name), strtab->sh_offset + off) == 0 &&
	       !memcmp(name, xray_wanted, sizeof(xray_wanted));
}

int xray_find_section(int fd, struct xray_section *out)
{
	Elf64_Ehdr eh;
	if (read_full(fd, &eh, sizeof(eh), 0) < 0)
		return -1;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr))
		return -1;
	if (eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum)
		return 0;

	Elf64_Shdr strtab;
	if (read_full(fd, &strtab, sizeof(strtab), eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr)) < 0)
		return -1;
	/* The table's start: where linkers put the names of the sections
	 * (all of them, in a small file). */
	char names[NAMES_BLOCK];
	size_t nlen = strtab.sh_size < sizeof(names) ? (size_t)strtab.sh_size : sizeof(names);
	if (read_full(fd, names, nlen, strtab.sh_offset) < 0)
		nlen = 0;

	Elf64_Shdr sh[SH_BLOCK];
	for (unsigned i = 0; i < eh.e_shnum; i += SH_BLOCK) {
		unsigned n = eh.e_shnum - i < SH_BLOCK ? eh.e_shnum - i : SH_BLOCK;
		if (read_full(fd, sh, n * sizeof(Elf64_Shdr), eh.e_shoff + (uint64_t)i * sizeof(Elf64_Shdr)) < 0)
			return -1;
		for (unsigned k = 0; k < n; k++) {
			if (!name_is_xray(fd, &strtab, sh[k].sh_name, names, nlen))
				continue;
			out->vaddr = sh[k].sh_addr;
			out->size = sh[k].sh_size;
			out->file_offset = sh[k].sh_offset;
			return 1;
		}
	}
	return 0;
}

/* The GNU build-id note in a PT_NOTE segment of the file: 1 if equal to
 * want, 0 if different or absent there. */
static int note_has_build_id(int fd, const Elf64_Phdr *ph, const uint8_t *want, size_t want_len)
{
	unsigned char buf[1024];
	uint64_t off = ph->p_offset, end = ph->p_offset + ph->p_filesz;
	while (off + sizeof(Elf64_Nhdr) <= end) {
		Elf64_Nhdr n;
		if (read_full(fd, &n, sizeof(n), off) < 0)
			return 0;
		uint64_t name = off + sizeof(n), desc = name + ((n.n_namesz + 3) & ~3u);
		if (desc + n.n_descsz > end)
			return 0;
		if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && n.n_descsz <= sizeof(buf) - 4 &&
		    read_full(fd, buf, 4, name) == 0 && !memcmp(buf, "GNU", 4))
			return n.n_descsz == want_len && read_full(fd, buf, want_len, desc) == 0 &&
			       !memcmp(buf, want, want_len);
		off = desc + ((n.n_descsz + 3) & ~3u);
	}
	return 0;
}

int xray_file_matches(int fd, const void *phdr, int phnum, const uint8_t *build_id, size_t build_id_len)
{
	const Elf64_Phdr *mem = phdr;
	Elf64_Ehdr eh;
	if (read_full(fd, &eh, sizeof(eh), 0) < 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr))
		return -1;
	if (eh.e_phnum != phnum)
		return 0;
	int build_id_seen = 0;
	Elf64_Phdr block[16]; /* read 16 at a time: one pread for most objects */
	for (int i = 0; i < phnum; i++) {
		if (i % 16 == 0) {
			int n = phnum - i < 16 ? phnum - i : 16;
			if (read_full(fd, block, (size_t)n * sizeof(Elf64_Phdr), eh.e_phoff + (uint64_t)i * sizeof(Elf64_Phdr)) < 0)
				return -1;
		}
		Elf64_Phdr ph = block[i % 16];
		if (ph.p_type != mem[i].p_type)
			return 0;
		if (ph.p_type == PT_LOAD && (ph.p_vaddr != mem[i].p_vaddr || ph.p_memsz != mem[i].p_memsz ||
					     ph.p_filesz != mem[i].p_filesz || ph.p_flags != mem[i].p_flags))
			return 0;
		if (ph.p_type == PT_NOTE && build_id_len && !build_id_seen)
			build_id_seen = note_has_build_id(fd, &ph, build_id, build_id_len);
	}
	return !build_id_len || build_id_seen;
}
