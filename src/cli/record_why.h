/* Why `sftrace record` got no log: the runtime's notes (SFTRACE_NOTES_DIR,
 * src/runtime/notes.c), the filter, and the command's file. */
#ifndef SFTRACE_CLI_RECORD_WHY_H
#define SFTRACE_CLI_RECORD_WHY_H

struct record_why {
	const char *notes_dir;
	const char *filter;       /* the filter file the runtime read, or NULL */
	const char *filter_shown; /* the filter as the user named it */
	const char *filter_regex; /* --filter-regex, or NULL */
	const char *cmd;          /* argv[0] of the command */
};

/* Prints "sftrace: no log written: <reason>" and what to do about it. */
void record_explain_no_log(const struct record_why *w);

/* Deletes the notes directory and its files. */
void record_notes_remove(const char *notes_dir);

#endif
