/* GNU build-id of an ELF object: read it (libelf) and format it as hex.
 * The CLI compares the id recorded at trace time with the file it
 * symbolizes, so a rebuilt binary is not silently mis-symbolized. */
#ifndef SFTRACE_LIB_ELF_BUILDID_H
#define SFTRACE_LIB_ELF_BUILDID_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* Longest id we keep (matches sf_object.build_id). */
#define SF_BUILD_ID_MAX 64

/* Opens `path` read-only as an ELF file (ELF_C_READ_MMAP). On success
 * returns the handle and its descriptor in *fd (close both with
 * sf_elf_close). On failure returns NULL with a one-line message in err:
 * "<path>: No such file or directory", "<path>: is a directory",
 * "<path>: not an ELF file". */
Elf *sf_elf_open(const char *path, int *fd, char *err, size_t errlen);
void sf_elf_close(Elf *elf, int fd);

/* Copies the NT_GNU_BUILD_ID note of `elf` into out (at most outlen bytes;
 * a longer id is truncated). Returns the full id length, 0 when the object
 * has no build-id, -1 when the ELF data cannot be read. */
int sf_elf_build_id(Elf *elf, uint8_t *out, size_t outlen);

/* Same for the file at `path`. Returns -1 with a one-line message in err
 * ("<path>: not an ELF file", "<path>: <strerror>") when it cannot be read. */
int sf_elf_build_id_path(const char *path, uint8_t *out, size_t outlen,
			 char *err, size_t errlen);

/* Lower-case hex of id into buf (needs 2*len+1 bytes; output truncated to
 * whole bytes that fit). Returns buf. */
char *sf_build_id_hex(const uint8_t *id, size_t len, char *buf, size_t buflen);

#endif
