/* Function selection at patch time (sftrace record -f / SFTRACE_FILTER).
 * Without a filter every function is selected. */
#include "runtime/runtime.h"

static int have_filter;

int sf_filter_load(const char *path)
{
	(void)path;
	sf_rt_message("SFTRACE_FILTER is not supported by this build: ", path, NULL);
	return -1;
}

int sf_filter_selects(const struct sf_object_rt *obj, uint64_t func_vaddr)
{
	(void)obj;
	(void)func_vaddr;
	return !have_filter;
}
