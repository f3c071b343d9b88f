/* Which function names a thread whose name the kernel cut (trace_input's
 * thread labels): its first outermost call that is its own work, not the
 * plumbing every thread runs first. */
#ifndef SFTRACE_LIB_THREAD_LABEL_H
#define SFTRACE_LIB_THREAD_LABEL_H

#include <stdint.h>

struct trace_proc;
struct lr_thread;

/* The function that tells the thread apart, from its first events: 0 and
 * *func_id, or -1 if they hold no entry. */
int tl_pick(const struct trace_proc *p, const struct lr_thread *t, uint32_t *func_id);

#endif
