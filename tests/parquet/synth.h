/* A deterministic synthetic trace, shaped like sftrace's events table: a
 * few threads, each with its own call stack; time increases by small
 * steps; frame ids increase on entry and come back on exit; func ids are
 * skewed towards a few hot functions. Used by gen.c and bench.c. */
#ifndef SFTRACE_TESTS_PARQUET_SYNTH_H
#define SFTRACE_TESTS_PARQUET_SYNTH_H

#include <stdint.h>

#define SYNTH_THREADS 4
#define SYNTH_DEPTH 64

struct synth_row {
	uint64_t frame_id, parent, func_id, time;
	uint32_t tid, kind;
};

struct synth {
	uint64_t rng, time, next_frame;
	uint32_t nfuncs;
	int cur;                     /* current thread */
	int depth[SYNTH_THREADS];
	uint64_t frame[SYNTH_THREADS][SYNTH_DEPTH];
	uint64_t func[SYNTH_THREADS][SYNTH_DEPTH];
};

static inline uint32_t synth_rand(struct synth *s)
{
	s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(s->rng >> 33);
}

static inline void synth_init(struct synth *s, uint32_t nfuncs, uint64_t seed)
{
	*s = (struct synth){ .rng = seed, .time = 1000000, .next_frame = 1, .nfuncs = nfuncs };
}

/* func ids 1..nfuncs, low ids much more frequent (u^3 skew). */
static inline uint64_t synth_func(struct synth *s)
{
	double u = synth_rand(s) / 2147483648.0;
	return 1 + (uint64_t)(u * u * u * s->nfuncs);
}

static inline void synth_next(struct synth *s, struct synth_row *r)
{
	if (synth_rand(s) % 64 == 0)
		s->cur = (int)(synth_rand(s) % SYNTH_THREADS);
	int t = s->cur, d = s->depth[t];
	s->time += 5 + synth_rand(s) % 120;
	int enter = d == 0 || (d < SYNTH_DEPTH && (int)(synth_rand(s) % 100) < 62 - d);
	r->tid = 4000 + (uint32_t)t;
	r->time = s->time;
	if (enter) {
		r->frame_id = s->next_frame++;
		r->parent = d ? s->frame[t][d - 1] : 0;
		r->func_id = synth_func(s);
		r->kind = 1;
		s->frame[t][d] = r->frame_id;
		s->func[t][d] = r->func_id;
		s->depth[t] = d + 1;
	} else {
		d--;
		r->frame_id = s->frame[t][d];
		r->parent = d ? s->frame[t][d - 1] : 0;
		r->func_id = s->func[t][d];
		r->kind = 2;
		s->depth[t] = d;
	}
}

#endif
