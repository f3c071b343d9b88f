#include "lib/elf_buildid.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Elf *sf_elf_open(const char *path, int *fd, char *err, size_t errlen)
{
	Elf *elf;

	/* libelf refuses to work until a version is set; the call is cheap
	 * and idempotent. */
	elf_version(EV_CURRENT);
	/* Regular files only, checked before anything can block: a FIFO
	 * named as an object must not hang the tool. */
	*fd = sf_open_regular(path);
	if (*fd < 0) {
		snprintf(err, errlen, "%s: %s", path, errno == EISDIR ? "is a directory" : sf_open_error(errno));
		return NULL;
	}
	elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		if (elf)
			elf_end(elf);
		close(*fd);
		return NULL;
	}
	return elf;
}

void sf_elf_close(Elf *elf, int fd)
{
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

/* Scans one block of notes. Returns the id length or 0 when absent. */
static int scan_notes(Elf_Data *data, uint8_t *out, size_t outlen)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off, next;

	while (data && off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(name, "GNU", 4) == 0 && nh.n_descsz > 0) {
			size_t n = nh.n_descsz < outlen ? nh.n_descsz : outlen;
			memcpy(out, (const uint8_t *)data->d_buf + desc_off, n);
			return (int)nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

int sf_elf_build_id(Elf *elf, uint8_t *out, size_t outlen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t nphdr, i;
	int n;

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return -1;
	/* Sections first: a separate debug file keeps the note section, while
	 * its PT_NOTE segment may point at bytes that were not copied. */
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		if ((n = scan_notes(elf_getdata(scn, NULL), out, outlen)) > 0)
			return n;
	}
	if (elf_getphdrnum(elf, &nphdr) != 0)
		return 0;
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if ((n = scan_notes(d, out, outlen)) > 0)
			return n;
	}
	return 0;
}

int sf_elf_build_id_path(const char *path, uint8_t *out, size_t outlen,
			 char *err, size_t errlen)
{
	int fd, n;
	Elf *elf = sf_elf_open(path, &fd, err, errlen);

	if (!elf)
		return -1;
	n = sf_elf_build_id(elf, out, outlen);
	if (n < 0)
		snprintf(err, errlen, "%s: not an ELF file", path);
	sf_elf_close(elf, fd);
	return n;
}

char *sf_build_id_hex(const uint8_t *id, size_t len, char *buf, size_t buflen)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	if (buflen == 0)
		return buf;
	for (i = 0; i < len && 2 * i + 2 < buflen; i++) {
		buf[2 * i] = digits[id[i] >> 4];
		buf[2 * i + 1] = digits[id[i] & 15];
	}
	buf[2 * i] = '\0';
	return buf;
}
