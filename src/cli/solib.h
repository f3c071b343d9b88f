/* Locating the runtime library (libsftrace.so) for `sftrace record`. */
#ifndef SFTRACE_CLI_SOLIB_H
#define SFTRACE_CLI_SOLIB_H

#include <stddef.h>

/* The per-user directory users may copy the runtime into:
 * $XDG_DATA_HOME/sftrace, or ~/.local/share/sftrace. */
int sf_solib_install_dir(char *out, size_t cap);

/* Finds the runtime: next to the sftrace binary (build tree), in
 * <prefix>/lib/sftrace/ and <prefix>/lib/ of an installed sftrace, then in
 * the per-user directory. On failure err lists where it looked. */
int sf_find_solib(char *out, size_t cap, char *err, size_t errlen);

#endif
