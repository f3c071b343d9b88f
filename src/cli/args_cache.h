/* record --auto-args: the DWARF answers for an object (dwarf_args.h's
 * items of each function), kept in the user's cache directory so that the
 * next run on the same file does not read its DWARF again (about 93M of
 * the 121M instructions `sftrace filter --args` takes on SQLite's driver).
 * Nothing found there is trusted blindly: the directory and the file must
 * be the user's and writable by no one else, opened without following a
 * link; the file names the exact key it answers (this sftrace's build-id,
 * the object's build-id, device, inode, size, modification and change
 * times); anything else is a miss, and the DWARF is read as without it. */
#ifndef SFTRACE_CLI_ARGS_CACHE_H
#define SFTRACE_CLI_ARGS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "format/sf_args.h"
#include "lib/dwarf_args.h"

struct ac_func {
	uint64_t vaddr;
	unsigned n;
	struct da_item it[2 * SF_ARG_MAX_ITEMS];
};

struct ac_set {
	struct ac_func *v; /* by vaddr, as they were added */
	size_t n, cap;
};

#define AC_KEY_MAX 512

/* The key of the object at path whose build-id is bid (hex): 0, or -1
 * when no cache is used (SFTRACE_ARGS_CACHE=0, no build-id, no cache
 * directory's name). */
int ac_key(const char *path, const char *bid, char *key, size_t cap);
/* 1 and *s filled (the caller frees s->v) if the cache answers key. */
int ac_load(const char *key, struct ac_set *s);
/* Keeps s under key (written whole under a temporary name, then
 * renamed); errors are ignored: a cache is an optimisation. */
void ac_store(const char *key, const struct ac_set *s);
struct ac_func *ac_add(struct ac_set *s, uint64_t vaddr);

#endif
