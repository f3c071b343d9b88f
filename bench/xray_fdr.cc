// Drives LLVM XRay's FDR mode for the FDR variants of the fixtures. C++
// because LLVM 14's XRay headers are C++-only. Built without
// -fxray-instrument, so none of this is traced.
//
// Configuration: the env var BENCH_FDR_CONFIG is passed to
// __xray_log_init_mode verbatim (flags such as buffer_size, buffer_max,
// func_duration_threshold_us). The driver sizes the buffers to hold the whole
// run and sets the duration threshold to 0, so FDR records every event like
// the other tracers (its defaults keep only a flight-recorder window and drop
// functions shorter than 5 us).
#include <cstdio>
#include <cstdlib>

#include <xray/xray_interface.h>
#include <xray/xray_log_interface.h>

extern "C" void bench_fdr_start(void)
{
	const char *cfg = std::getenv("BENCH_FDR_CONFIG");
	XRayLogInitStatus st = __xray_log_init_mode("xray-fdr", cfg ? cfg : "");
	if (st != XRayLogInitStatus::XRAY_LOG_INITIALIZED) {
		std::fprintf(stderr, "bench: __xray_log_init_mode(xray-fdr) failed: %d\n", (int)st);
		std::exit(3);
	}
	if (__xray_patch() != XRayPatchingStatus::SUCCESS) {
		std::fprintf(stderr, "bench: __xray_patch failed\n");
		std::exit(3);
	}
}

extern "C" void bench_fdr_stop(void)
{
	if (__xray_log_finalize() != XRayLogInitStatus::XRAY_LOG_FINALIZED)
		std::fprintf(stderr, "bench: __xray_log_finalize failed\n");
	__xray_unpatch();
	if (__xray_log_flushLog() != XRayLogFlushStatus::XRAY_LOG_FLUSHED)
		std::fprintf(stderr, "bench: __xray_log_flushLog failed\n");
}
