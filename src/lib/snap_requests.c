#include "lib/snap_requests.h"

#include "lib/log_reader.h"

int snap_requests_of(const struct lr_info *in, struct snap_requests *r)
{
	/* Asked by sftrace snapshot, never taken by the runtime: the process
	 * ended first. (In logs made before issue 24's signal fix, also those
	 * the kernel merged into a ring signal still pending.) */
	r->merged = in->snap_sent > in->snap_arrived ? in->snap_sent - in->snap_arrived : 0;
	/* Asked for, frozen, never written: the process was killed or crashed
	 * first (exec, _exit and abort wait for it), or a write failed (the
	 * runtime said why). */
	r->unwritten = in->snap_taken > in->snap_written ? in->snap_taken - in->snap_written : 0;
	r->written = in->snap_written;
	r->busy = in->snap_missed;
	r->over_max = in->snap_over_max;
	r->all = in->snap_taken + in->snap_missed + r->merged + in->snap_over_max;
	return r->busy || r->merged || r->unwritten || r->over_max;
}
