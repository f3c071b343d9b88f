/* Text taken from a log, made safe for a terminal.
 *
 * Object paths, function names, thread and process names and command lines
 * come from the log (or from objects it names), and a log may be hostile.
 * Printed raw, their control characters would be acted on by the terminal:
 * an escape sequence can move the cursor, rewrite what is on the screen,
 * retitle the window or, on some terminals, answer back as typed input.
 * So every text output of the CLI (dump, the tables of report, query and
 * memory, filter's listing, and every message on stderr) shows them as
 * "\xHH", one per byte:
 *   - C0 controls 0x00-0x1f (tab and newline included) and DEL 0x7f;
 *   - C1 controls U+0080-U+009F, which UTF-8 terminals act on too
 *     (U+009B is CSI): each of their two bytes;
 *   - bytes that are not UTF-8 (a lone 0x9b is CSI on an 8-bit terminal).
 * Everything else passes unchanged, backslashes included: the goal is a
 * safe terminal, not a reversible encoding. JSON outputs escape the same
 * characters in JSON's own way (json_out.h).
 */
#ifndef SFTRACE_LIB_TEXT_ESC_H
#define SFTRACE_LIB_TEXT_ESC_H

#include <stddef.h>
#include <stdio.h>

/* Bytes of the character at p that must be escaped (1 or 2), or 0 when the
 * character at p passes (then sf_utf8_len(p) bytes long). p points to a
 * NUL-terminated string, not at its end. */
size_t sf_esc_unsafe(const unsigned char *p);

/* s itself when nothing in it needs escaping (the usual case: no copy),
 * else an escaped copy held in one of SF_ESC_SLOTS buffers that are reused
 * in turn: valid until SF_ESC_SLOTS more calls. For printf arguments:
 *   printf("%-16s %s\n", sf_esc(thread_name), sf_esc(func_name));
 * NULL gives NULL. The buffers are shared: call it from the thread that
 * prints the output (sf_esc_put keeps no state, for any thread). */
#define SF_ESC_SLOTS 16
const char *sf_esc(const char *s);

/* Writes s escaped to f; characters listed in `as_space` (for example
 * "\t\n\r" in a TSV cell) are written as a space instead. */
void sf_esc_put(FILE *f, const char *s, const char *as_space);

#endif
