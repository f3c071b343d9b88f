/* Start/stop hooks of the fixtures. Empty unless the fixture is built for
 * LLVM XRay FDR mode (-DBENCH_XRAY_FDR, linked with xray_fdr.cc), which needs
 * the program to initialise, patch, finalise and flush the log itself. */
#ifndef BENCH_HOOKS_H
#define BENCH_HOOKS_H

#ifdef BENCH_XRAY_FDR
void bench_fdr_start(void);
void bench_fdr_stop(void);
#define bench_trace_start() bench_fdr_start()
#define bench_trace_stop() bench_fdr_stop()
#else
#define bench_trace_start() ((void)0)
#define bench_trace_stop() ((void)0)
#endif

#endif
