/* Paging long terminal output, as git does: when stdout is a terminal, the
 * command's output goes through $SFTRACE_PAGER, else $PAGER, else less
 * (with LESS=FRX when LESS is unset: quit if it fits on one screen, keep
 * colours, leave the screen as it is). An empty pager or "cat" pages
 * nothing. The pager is a child the command waits for at pager_end. */
#ifndef SFTRACE_CLI_PAGER_H
#define SFTRACE_CLI_PAGER_H

/* Starts the pager if stdout is a terminal; 0 when paging, else -1 (output
 * stays on stdout). Call before the first byte of output. */
int pager_start(void);

/* Flushes stdout, closes the pipe and waits for the pager to quit. */
void pager_end(void);

#endif
