/* `sftrace record -f FILE` checks the filter before it starts the command
 * (lib/filter_check.c). */
#ifndef SFTRACE_LIB_FILTER_CHECK_H
#define SFTRACE_LIB_FILTER_CHECK_H

/* The filter file exists and parses, and each object it names has the
 * build-id it had when the filter was made. -1 after a message. */
int sf_filter_check_file(const char *path);

#endif
