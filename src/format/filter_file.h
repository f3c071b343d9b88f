/* The filter file (written by `sftrace filter`, read by the runtime and by
 * `sftrace record -f`). A text format users can read, edit and diff; see
 * docs/FORMAT.md. Example:
 *
 *   sftrace-filter 1
 *   mode select              # select: record only the listed functions
 *                            # within: record everything while one is on the stack
 *   unlisted skip            # objects not listed: skip (leave unpatched) or trace
 *   object 5f1c...e9 /abs/path/to/binary
 *   0x1a2b0 my_crate::resolve
 *   0x1a410 my_crate::normalize
 *
 * '#' at the start of a line or after a space or tab starts a comment (a '#'
 * inside a word, as in Rust's `{closure#0}`, is kept); blank lines are ignored. Function lines are the
 * function's ELF virtual address (as `nm` shows it) and, for people, its
 * name. The build-id may be '-' for objects that have none.
 *
 * libc only and no allocation: the runtime parses it inside traced
 * processes. The parser NUL-terminates fields in place.
 */
#ifndef SFTRACE_FORMAT_FILTER_FILE_H
#define SFTRACE_FORMAT_FILTER_FILE_H

#include <stddef.h>
#include <stdint.h>

#define FF_MAGIC "sftrace-filter"
#define FF_VERSION 1

enum ff_mode { FF_MODE_SELECT = 0, FF_MODE_WITHIN = 1 };
enum ff_unlisted { FF_UNLISTED_SKIP = 0, FF_UNLISTED_TRACE = 1 };

struct ff_handler {
	int (*setting)(void *ctx, const char *key, const char *value);
	int (*object)(void *ctx, const char *build_id_hex, const char *path);
	int (*func)(void *ctx, uint64_t vaddr, const char *name);
};

/* Parses text[0..len) (modified in place). Returns 0, or -1 with a message
 * "line N: ..." in err. A handler returning non-zero stops the parse with
 * that line's number in err (the handler may fill err first). */
int ff_parse(char *text, size_t len, const struct ff_handler *h, void *ctx, char *err, size_t errlen);

/* Hex build-id to bytes; returns the byte count or -1. "-" gives 0. */
int ff_build_id_from_hex(const char *hex, uint8_t *out, size_t cap);

/* The file name of one object's filter in a recording's filter directory
 * (record --filter-regex; see docs/FORMAT.md): "<build-id hex>.filter", or
 * "path-<hash of the path>.filter" for an object without a build-id.
 * Returns 0, or -1 if it does not fit in cap. */
int ff_cache_name(const uint8_t *build_id, size_t len, const char *path, char *out, size_t cap);

#endif
