/* Snapshot requests of a process, accounted from its log's header.
 *
 * Every request is counted once, in exactly one of the parts, so they add
 * up to `all`: record's summary and info print the same figures. */
#ifndef SF_SNAP_REQUESTS_H
#define SF_SNAP_REQUESTS_H

#include <stdint.h>

struct lr_info;

struct snap_requests {
	uint64_t all;
	uint64_t written;
	uint64_t busy;	    /* came while a snapshot was being written */
	uint64_t merged;    /* sent by `sftrace snapshot`, merged by the kernel into a pending ring signal */
	uint64_t over_max;  /* after --max-snapshots */
	uint64_t unwritten; /* frozen, then the process ended (or a write failed) first */
};

/* Fills r from a process's log header; returns 0 when every request
 * (possibly none) was written, 1 when some were not. */
int snap_requests_of(const struct lr_info *in, struct snap_requests *r);

#endif
