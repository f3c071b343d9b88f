/* Why `sftrace record` got no log: the runtime's notes (SFTRACE_NOTES_DIR,
 * src/runtime/notes.c), the filter, and the command's file. */
#ifndef SFTRACE_CLI_RECORD_WHY_H
#define SFTRACE_CLI_RECORD_WHY_H

#include <stddef.h>

struct record_why {
	const char *notes_dir;
	const char *filter;       /* the filter file the runtime read, or NULL */
	const char *filter_shown; /* the filter as the user named it */
	const char *filter_regex; /* --filter-regex, or NULL */
	const char *cmd;          /* argv[0] of the command */
};

/* Prints "sftrace: pid N (PROG) wrote no log: WHAT: CALL: ERROR" for
 * every process whose note says its log could not be created (a program
 * run as another user that may not write the output directory), the
 * failed system call as the runtime noted it; how many. */
int record_report_lost(const char *notes_dir);
/* Prints each process's reports ("sftrace: pid N: ..."): what it ran
 * but did not record. */
void record_report_notes(const char *notes_dir);

/* Prints "sftrace: no log written: <reason>" and what to do about it. */
void record_explain_no_log(const struct record_why *w);


/* 1 if fd is a 64-bit ELF executable without a program interpreter
 * (statically linked: LD_PRELOAD never applies to it); 0 for the dynamic
 * loader itself (a DT_SONAME), which runs a program named after it. */
int record_is_static_elf(int fd);

#endif
