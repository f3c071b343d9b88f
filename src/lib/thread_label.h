/* Which function names a thread whose name the kernel cut (trace_input's
 * thread labels): its first outermost call that is its own work, not the
 * plumbing every thread runs first. */
#ifndef SFTRACE_LIB_THREAD_LABEL_H
#define SFTRACE_LIB_THREAD_LABEL_H

#include <stddef.h>
#include <stdint.h>

struct trace_proc;
struct lr_thread;

/* The function that tells the thread apart, from its first events: 0 and
 * *func_id, or -1 if they hold no entry. */
int tl_pick(const struct trace_proc *p, const struct lr_thread *t, uint32_t *func_id);

/* For a closure's call_once whose closure belongs to a function of the
 * program (libtest's <crate::tests::NAME::{closure} as FnOnce<…>>::call_once),
 * the length of that function's name, which starts at name + 1; else 0. */
size_t tl_owner(const char *name);

/* For a wrapper (std's __rust_begin_short_backtrace) whose full name has a
 * closure of a function of the program among its type arguments
 * (__rust_begin_short_backtrace::<crate::f::{closure#0}, R>): that
 * function's name, at *at, and its length; else 0. */
size_t tl_closure_of(const char *name, const char **at);

#endif
