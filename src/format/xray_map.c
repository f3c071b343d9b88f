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

	static const char wanted[] = "xray_instr_map";
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		char name[sizeof(wanted)];
		if (read_full(fd, &sh, sizeof(sh), eh.e_shoff + (uint64_t)i * sizeof(Elf64_Shdr)) < 0)
			return -1;
		if (sh.sh_name + sizeof(wanted) > strtab.sh_size)
			continue;
		if (read_full(fd, name, sizeof(name), strtab.sh_offset + sh.sh_name) < 0)
			continue;
		if (memcmp(name, wanted, sizeof(wanted)) != 0)
			continue;
		out->vaddr = sh.sh_addr;
		out->size = sh.sh_size;
		out->file_offset = sh.sh_offset;
		return 1;
	}
	return 0;
}
