/* Reading LLVM XRay's instrumentation map (section xray_instr_map) from an
 * ELF file. libc only: used by the runtime inside traced processes (which
 * reads the section from memory once it knows where it is) and by the CLI.
 *
 * Each map entry is 32 bytes: int64 address, int64 function, uint8 kind,
 * uint8 always_instrument, uint8 version, 13 bytes padding. Version 2 (clang
 * 14+, rustc) stores both addresses relative to the entry's own address
 * (function relative to the entry + 8); older versions store them absolute.
 */
#ifndef SFTRACE_FORMAT_XRAY_MAP_H
#define SFTRACE_FORMAT_XRAY_MAP_H

#include <stddef.h>
#include <stdint.h>

#define XRAY_ENTRY_SIZE 32u

enum xray_sled_kind {
	XRAY_SLED_ENTRY = 0,
	XRAY_SLED_EXIT = 1,
	XRAY_SLED_TAIL = 2,
	XRAY_SLED_LOG_ARGS_ENTRY = 3,
	XRAY_SLED_CUSTOM_EVENT = 4,
	XRAY_SLED_TYPED_EVENT = 5,
};

struct xray_sled {
	uint64_t address;  /* of the sled */
	uint64_t function; /* start of the function that holds it */
	uint8_t kind;      /* enum xray_sled_kind */
	uint8_t always;
	uint8_t version;
};

/* Where the section is in the object's address space (ELF vaddr). */
struct xray_section {
	uint64_t vaddr;
	uint64_t size;
	uint64_t file_offset;
};

/* Finds xray_instr_map in the ELF file open on fd (reads the section headers
 * with pread). Returns 1 if found, 0 if the file has no such section, -1 if
 * the file is not a readable 64-bit little-endian ELF file. */
int xray_find_section(int fd, struct xray_section *out);

/* Whether the ELF file open on fd is the object loaded with these program
 * headers: the same loadable segments (address, sizes, flags) and, when the
 * loaded object has one (build_id_len > 0), the same GNU build-id note.
 * 1 yes, 0 no (another build replaced the file), -1 unreadable. */
int xray_file_matches(int fd, const void *phdr, int phnum, const uint8_t *build_id, size_t build_id_len);

/* Decodes entry `raw` that lives at address `entry_addr` (an ELF vaddr when
 * reading the file, a runtime address when reading memory). */
static inline void xray_decode(const void *raw, uint64_t entry_addr, struct xray_sled *out)
{
	const unsigned char *p = raw;
	int64_t address, function;
	__builtin_memcpy(&address, p, 8);
	__builtin_memcpy(&function, p + 8, 8);
	out->kind = p[16];
	out->always = p[17];
	out->version = p[18];
	if (out->version >= 2) {
		out->address = entry_addr + (uint64_t)address;
		out->function = entry_addr + 8 + (uint64_t)function;
	} else {
		out->address = (uint64_t)address;
		out->function = (uint64_t)function;
	}
}

/* True for the kinds sftrace records: entry (and log-args entry), exit and
 * tail call. Custom and typed event sleds sit mid-function and are left
 * alone. */
static inline int xray_kind_traced(uint8_t kind)
{
	return kind <= XRAY_SLED_LOG_ARGS_ENTRY;
}

#endif
