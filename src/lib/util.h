/* Small helpers shared by the CLI: messages, checked allocation. */
#ifndef SFTRACE_LIB_UTIL_H
#define SFTRACE_LIB_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "sftrace: <message>" on stderr, one line. */
void sf_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sf_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Opens a file to read that must be regular: O_NONBLOCK for the open, so
 * a FIFO (or a device) is refused at once instead of hanging, then back to
 * blocking reads. -1 with errno set (EINVAL: not a regular file, EISDIR). */
int sf_open_regular(const char *path);
/* The program a command name runs, as execvp finds it: cmd itself if it
 * holds a '/', else the first executable PATH entry (PATH unset:
 * /bin:/usr/bin). 0 with the path in path, -1 if none. */
int sf_path_lookup(const char *cmd, char *path, size_t cap);
/* Whether stdout is a pipe or socket whose reader has gone (`| head` read
 * what it wanted): the commands ignore SIGPIPE (main.c) and then end with
 * status 0 and no message when their output fails for this reason, as
 * uftrace's replay does. */
int sf_stdout_reader_gone(void);
/* The same as a stdio stream ("r"). */
FILE *sf_fopen_regular(const char *path);
/* strerror(errno) after those: "not a regular file" for EINVAL. */
const char *sf_open_error(int err);

/* Allocation that exits with a message when memory runs out. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Length of the valid UTF-8 sequence at p (1..4 bytes; the bytes must be
 * readable up to a NUL), or 0 if it is not valid UTF-8. */
size_t sf_utf8_len(const unsigned char *p);
/* The same within n > 0 readable bytes (a sequence cut by the end is 0). */
size_t sf_utf8_seq(const unsigned char *p, size_t n);

/* How sf_format_duration writes a duration. */
enum sf_duration_style {
	SF_DURATION_SIG3,   /* 3 significant digits: "999 ns", "1.23 us", "45.6 ms", "123 s" (report, flame graphs) */
	SF_DURATION_FIXED,  /* decimals by unit: "250 ns", "1.5 us", "2.0 ms", "1.25 s" (plot axes) */
	SF_DURATION_OPTION, /* as the options take it: "10us", "1.5ms", "2s" (%g), "500ns" */
};

/* The one duration formatter: ns nanoseconds in ns, us, ms or s. */
void sf_format_duration(char *buf, size_t len, double ns, enum sf_duration_style style);

/* uftrace's print_time_unit (replay's and graph's durations): ns as
 * "%3u.%03u UNIT", *whole and *frac the two numbers, the unit
 * SF_UFTRACE_UNITS[returned index]: us (frac: ns) below 1 ms, ms (frac:
 * us) below 1 s, " s" (frac: ms) below 60 s, " m" (frac: seconds, 0-59:
 * 2.005 m is 2 min 5 s) below 24 minutes, then " h" as uftrace counts it
 * (its limits are 1000, 1000, 1000, 60, 24): whole = minutes / 24, frac =
 * minutes % 24. A whole over 999 is 999.999, uftrace's error case. */
#define SF_UFTRACE_UNITS {"us", "ms", " s", " m", " h"}
unsigned sf_uftrace_unit(uint64_t ns, uint64_t *whole, uint64_t *frac);

/* vsnprintf into buf (len > 0), returning the bytes it holds: what fits,
 * 0 on an error. */
size_t sf_vformat(char *buf, size_t len, const char *fmt, va_list ap);

#endif
