#include "lib/demangle.h"

#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LEGACY_HASH_DIGITS 16

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

/* A Rust legacy symbol is an Itanium nested name whose last component is
 * `h` + 16 hex digits ("17h...E"), optionally followed by a `.suffix`. */
static bool is_rust_legacy(const char *m)
{
	const char *e;

	if (strncmp(m, "_ZN", 3) != 0)
		return false;
	e = strchr(m, '.');
	if (!e)
		e = m + strlen(m);
	if (e - m < 3 + 3 + LEGACY_HASH_DIGITS + 1 || e[-1] != 'E')
		return false;
	e -= 1 + LEGACY_HASH_DIGITS;
	return memcmp(e - 3, "17h", 3) == 0 && all_hex(e, LEGACY_HASH_DIGITS);
}

/* libiberty's Rust demangler already omits the hash, but when it rejects a
 * legacy symbol (e.g. a hash with upper-case digits, which rustc-demangle
 * accepts) the C++ demangler answers instead and keeps "::h<hash>". */
static void strip_legacy_hash(char *d)
{
	size_t n = strlen(d), tail = 3 + LEGACY_HASH_DIGITS; /* "::h" + hex */

	if (n > tail && memcmp(d + n - tail, "::h", 3) == 0 &&
	    all_hex(d + n - LEGACY_HASH_DIGITS, LEGACY_HASH_DIGITS))
		d[n - tail] = '\0';
}

char *sf_demangle(const char *mangled)
{
	char *d;

	if (!mangled || !*mangled)
		return NULL;
	d = cplus_demangle(mangled, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (d && is_rust_legacy(mangled))
		strip_legacy_hash(d);
	return d;
}
