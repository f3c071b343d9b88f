/* record --ring-signal / SFTRACE_RING_SIGNAL: which signals may ask for a
 * snapshot. Shared by the CLI (refuses the others before the program runs)
 * and the runtime (refuses them when set through the environment).
 *
 * Only signals that mean nothing to a program unless it gives them a
 * meaning: USR1, USR2 and the real-time signals. Every other signal has a
 * default action the program relies on, which the ring's handler would
 * take away: SEGV, BUS, ILL, FPE, TRAP and SYS are sent for a fault and a
 * handler that returns goes back to the faulting instruction (a crash
 * would loop writing snapshots); PIPE, TERM, INT, HUP and the like must
 * still end the program; CHLD, WINCH and CONT are the program's to handle;
 * KILL and STOP cannot be caught. */
#ifndef SFTRACE_FORMAT_RING_SIGNAL_H
#define SFTRACE_FORMAT_RING_SIGNAL_H

#include <signal.h>

static inline int sf_ring_signal_refused(int sig)
{
	if (sig == SIGUSR1 || sig == SIGUSR2)
		return 0;
	return !(sig >= SIGRTMIN && sig <= SIGRTMAX);
}

#endif
