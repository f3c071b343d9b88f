/* A thread's label function (thread_label.h).
 *
 * The thread's outermost calls, in order, skipping those whose full name is
 * plumbing: the allocator's (lib/plumbing.h: a libtest thread first frees
 * and allocates through __rust_dealloc and __rust_alloc, every thread
 * alike) and Rust's allocator shim check. The first other one is the
 * thread's own work. Where that is only a wrapper around a closure (a
 * closure's FnOnce::call_once shim, the closure itself, std's
 * __rust_begin_short_backtrace), its first callee names the thread better:
 * libtest's <test::{closure} as FnOnce>::call_once calls test::{closure},
 * which calls the test; std's spawn shim (<spawn_unchecked<…>::{closure}
 * as FnOnce<…>>::call_once::{shim:vtable}) calls
 * __rust_begin_short_backtrace twice, the first time calling nothing
 * traced: a wrapper that returns having called nothing gives way to its
 * next sibling. Plumbing a wrapper calls is skipped too; a wrapper that
 * calls only plumbing (a closure inlined into std's
 * __rust_begin_short_backtrace that only allocates) is the thread's work,
 * named by the closure in its type arguments (tl_closure_of). When every
 * outermost call is plumbing, the first of them, as before. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "lib/thread_label.h"

#include <pcre2.h>
#include <string.h>

#include "format/sflog.h"
#include "lib/log_reader.h"
#include "lib/plumbing.h"
#include "lib/trace_input.h"

#define LABEL_PLUMBING_RE SF_ALLOC_PLUMBING_RE "|^(__rustc::)?__rust_no_alloc_shim_is_unstable"
#define LABEL_WRAPPER_RE                                                                       \
	" as core::ops::function::Fn(Once|Mut)?<.*>>::call(_once|_mut)?(::\\{shim:vtable(#\\d+)?\\})?$|" \
	"^core::ops::function::Fn(Once|Mut)?::call(_once|_mut)?|\\{closure(#\\d+)?\\}$|"      \
	"::\\{\\{closure\\}\\}$|__rust_begin_short_backtrace"
/* A closure's call_once whose closure belongs to a function of the program
 * (not std's, core's, alloc's or libtest's machinery): that function names
 * the thread. libtest runs a test as <crate::tests::NAME::{closure} as
 * FnOnce<…>>::call_once, the test's body inlined into it. */
#define LABEL_OWNER_RE                                                                         \
	"^<(?!(?:std|core|alloc|test)::)(.*?)(::\\{closure(#\\d+)?\\})+ as core::ops::function::Fn(Once|Mut)?<"
/* A closure of a function of the program among a wrapper's type arguments
 * (std::sys::backtrace::__rust_begin_short_backtrace::<crate::f::{closure#0}, R>):
 * group 1 is that function. */
#define LABEL_CLOSURE_ARG_RE \
	"[<,] ?(?!(?:std|core|alloc|test)::)((?:\\w+::)*\\w+)(::\\{closure(#\\d+)?\\})+[,>]"

enum { LABEL_EVENTS = 4096 }; /* the first events of a thread suffice */

struct label_re {
	pcre2_code *plumbing, *wrapper, *owner;
	pcre2_match_data *md;
};

static int matches(const struct label_re *re, pcre2_code *code, const char *name)
{
	return code && name &&
	       pcre2_match(code, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, re->md, NULL) >= 0;
}

static pcre2_code *compile(const char *pattern)
{
	int ec;
	PCRE2_SIZE eo;
	return pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
}

/* Whether the thread's chosen call is only a wrapper to look through. */
static int is_wrapper(const struct trace_proc *p, const struct label_re *re, uint32_t func_id)
{
	const char *name = trace_symbol(p, func_id)->name;
	return matches(re, re->wrapper, name) && !matches(re, re->owner, name);
}

static int pick(const struct trace_proc *p, const struct lr_thread *t, const struct label_re *re, uint32_t *func_id)
{
	struct lr_iter it;
	struct lr_event ev;
	lr_iter_init_thread(&it, p->log, t);
	uint32_t depth = 0, first = 0, chosen_depth = 0;
	int have_first = 0, chosen = 0, returned = 0, called = 0;
	for (int i = 0; i < LABEL_EVENTS && lr_next(&it, &ev); i++) {
		if (ev.kind == SF_EV_EXIT || sf_kind_is_tail(ev.kind)) {
			depth -= depth > 0;
			if (chosen && (depth < chosen_depth || (depth == chosen_depth && (chosen_depth == 0 || called ||
			    !is_wrapper(p, re, *func_id)))))
				break; /* the chosen call, or its wrapper, returned; or a wrapper that called only plumbing */
			returned |= chosen && depth == chosen_depth;
			continue;
		}
		if (ev.kind != SF_EV_ENTRY)
			continue;
		const char *name = trace_symbol(p, ev.func_id)->name;
		if (!chosen && depth == 0) {
			if (!have_first)
				first = ev.func_id, have_first = 1;
			if (!matches(re, re->plumbing, name))
				*func_id = ev.func_id, chosen = 1, chosen_depth = 0;
		} else if (chosen && returned && depth == chosen_depth) {
			/* The wrapper it chose returned having called nothing
			 * (std calls __rust_begin_short_backtrace once empty):
			 * its next sibling does the work. */
			*func_id = ev.func_id;
			returned = 0;
		} else if (chosen && depth == chosen_depth + 1) {
			if (!is_wrapper(p, re, *func_id))
				break;
			if (matches(re, re->plumbing, name)) {
				called = 1; /* not its work: look further */
			} else {
				*func_id = ev.func_id; /* the wrapper's first callee */
				chosen_depth = depth;
				called = 0;
			}
		}
		depth++;
	}
	if (!chosen && have_first)
		*func_id = first;
	return chosen || have_first ? 0 : -1;
}

int tl_pick(const struct trace_proc *p, const struct lr_thread *t, uint32_t *func_id)
{
	struct label_re re = {compile(LABEL_PLUMBING_RE), compile(LABEL_WRAPPER_RE), compile(LABEL_OWNER_RE), NULL};
	re.md = pcre2_match_data_create(1, NULL); /* whether they match, not where */
	int rc = pick(p, t, &re, func_id);
	pcre2_match_data_free(re.md);
	pcre2_code_free(re.plumbing);
	pcre2_code_free(re.wrapper);
	pcre2_code_free(re.owner);
	return rc;
}

/* Where group 1 of pattern is in name: its length, *at its start; 0 if no match. */
static size_t group1(const char *pattern, const char *name, const char **at)
{
	pcre2_code *code = compile(pattern);
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
	size_t len = 0;
	if (code && md && pcre2_match(code, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >= 0) {
		const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		*at = name + ov[2];
		len = ov[3] - ov[2];
	}
	pcre2_match_data_free(md);
	pcre2_code_free(code);
	return len;
}

size_t tl_owner(const char *name)
{
	const char *at;
	return group1(LABEL_OWNER_RE, name, &at); /* group 1 starts after '<' */
}

size_t tl_closure_of(const char *name, const char **at)
{
	pcre2_code *wrapper = compile(LABEL_WRAPPER_RE);
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	int is = wrapper && md && pcre2_match(wrapper, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >= 0;
	pcre2_match_data_free(md);
	pcre2_code_free(wrapper);
	return is ? group1(LABEL_CLOSURE_ARG_RE, name, at) : 0;
}
