/* record --ring-signal / SFTRACE_RING_SIGNAL: the signals that can never
 * ask for a snapshot. Shared by the CLI (refuses them before the program
 * runs) and the runtime (refuses them when set through the environment).
 *
 * SEGV, BUS, ILL, FPE, TRAP and SYS are sent by the kernel for a fault in
 * the faulting thread: a handler that returns goes back to the faulting
 * instruction, so a crash would loop forever writing snapshots. KILL and
 * STOP cannot be caught. */
#ifndef SFTRACE_FORMAT_RING_SIGNAL_H
#define SFTRACE_FORMAT_RING_SIGNAL_H

#include <signal.h>

static inline int sf_ring_signal_refused(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
	       sig == SIGSYS || sig == SIGKILL || sig == SIGSTOP;
}

#endif
