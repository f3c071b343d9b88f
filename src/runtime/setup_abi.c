/* Compatibility with the reference tool's setup ABI: programs built with
 * its `sftrace-setup` crate link libsftrace.so and call
 *   sftrace_setup(entry_slot, exit_slot, tailcall_slot)
 * from main, and report allocations through
 *   sftrace_alloc_event(kind, size, align, ptr).
 * Our constructor has already patched every object's sleds straight to our
 * trampolines (whether the library was preloaded or linked), so the slots
 * are only pointed at the same trampolines for anything that jumps to
 * them. SFTRACE_SETUP_THREAD_ONLY (non-empty) limits recording to the thread
 * that called setup. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime.h"

uint32_t sf_setup_only_tid SF_HIDDEN;

__attribute__((visibility("default"))) void sftrace_setup(void (*entry_slot)(void), void (*exit_slot)(void),
							  void (*tailcall_slot)(void))
{
	if (!sf_config.enabled)
		return; /* no SFTRACE_OUTPUT_FILE: no tracing, as in the reference tool */
	const char *only = getenv(SF_ENV(SETUP_THREAD_ONLY));
	if (only && only[0])
		__atomic_store_n(&sf_setup_only_tid, sf_gettid(), __ATOMIC_RELEASE);
	int mono = sf_config.clock == SF_CLOCK_MONOTONIC;
	sf_arch_point_slot(entry_slot, mono ? sf_tramp_entry_mono : sf_tramp_entry);
	sf_arch_point_slot(exit_slot, mono ? sf_tramp_exit_mono : sf_tramp_exit);
	sf_arch_point_slot(tailcall_slot, mono ? sf_tramp_tail_mono : sf_tramp_tail);
	/* Objects loaded since start (none usually) are patched now too. */
	sf_objects_scan(0);
}

__attribute__((visibility("default"))) void sftrace_alloc_event(uint8_t kind, size_t size, size_t align, void *ptr)
{
	if (!sf_config.enabled || kind < 1 || kind > 4)
		return;
	if (sf_heap_setup_dup(SF_EV_ALLOC + kind - 1, ptr))
		return; /* --alloc recorded it already (alloc.c) */
	sf_record_ext(SF_EV_ALLOC + kind - 1, sf_size_align(size, align), (uint64_t)ptr);
}
