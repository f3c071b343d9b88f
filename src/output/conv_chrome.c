/* convert --type chrome: the Trace Event JSON format (chrome://tracing,
 * Perfetto's legacy importer, speedscope).
 *
 *   {"traceEvents":[
 *   {"ph":"M","pid":P,"tid":0,"name":"process_name","args":{"name":"calls"}},
 *   {"ph":"M","pid":P,"tid":T,"name":"thread_name","args":{"name":"calls"}},
 *   {"ph":"X","pid":P,"tid":T,"ts":12.345,"dur":0.067,"name":"leaf","cat":"calls",
 *    "args":{"src":"calls.c:20"}},
 *   ...],"displayTimeUnit":"ns"}
 *
 * One complete ("X") event per frame, written when the frame ends (the
 * format does not require any order). ts and dur are microseconds with
 * three decimals (ns precision) and a fourth digit 2 (0.2 ns): readers take
 * them as doubles, and trace_processor truncates ts * 1000 to ns, so
 * 2.089 came back as 2088 ns, and a frame ending where its caller ends (a
 * tail call, an unwind) could end 1 ns after it and nest wrongly. With
 * the 0.2 ns both truncating and rounding readers get the exact ns while
 * a double holds ts to 0.12 ns (ts below 2^40 us, 12.7 days of uptime);
 * the Perfetto output is exact at any ts. X events carry no nesting:
 * trace_processor shows a 0 ns call at its caller's very end (a repair in
 * one clock tick) as the caller's sibling, and B/E pairs do not fix that
 * (it orders an E before a B of the same ts, more so mixed with X events);
 * see docs/OUTPUTS.md. ts is CLOCK_MONOTONIC, so the
 * processes of one recording line up. cat is the object's file name. name is in the
 * chosen style; args.function has the full name when it differs. Repaired
 * frames get args.end ("unwound", "thread end"), frames the --time window
 * clipped args.cut ("start", "end", "both"). Values record -A/-R/--auto-args
 * recorded are args too, as in the Perfetto output, as the text replay
 * shows them: "arg1":"3","arg2":"4","retval":"7"; "arg1":"\"world\"" (of
 * an item named twice, the last). Streamed: memory holds one escaped
 * name per function, never events. Strings are escaped for JSON and invalid
 * UTF-8 becomes U+FFFD, so the output always parses. Calls nested
 * PF_MAX_DEPTH levels deep or more are written like the others, and counted
 * in a warning: trace_processor (Perfetto's UI) drops them from JSON, where
 * the Perfetto output moves them to child tracks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arg_values.h"
#include "lib/json_out.h"
#include "lib/outfile.h"
#include "lib/util.h"
#include "output/converters.h"
#include "output/perfetto.h"

/* `"name":"...","cat":"...","args":{"src":"file:line"` for one function:
 * everything of an X event that depends only on the function. */
static char *fragment(const struct trace_proc *p, uint32_t func_id)
{
	const struct sym_info *si = trace_symbol(p, func_id);
	const struct lr_object *o;
	const char *cat = "";
	if (lr_func(p->log, func_id, &o, NULL) == 0) {
		const char *s = strrchr(o->path, '/');
		cat = s ? s + 1 : o->path;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m) {
		sf_error("out of memory");
		exit(1);
	}
	const char *name = trace_name(p, func_id);
	fputs("\"name\":", m);
	json_put_str(m, name);
	fputs(",\"cat\":", m);
	json_put_str(m, cat);
	fputs(",\"args\":{", m);
	if (si->file) {
		char src[4200];
		if (si->line)
			snprintf(src, sizeof(src), "%s:%u", si->file, si->line);
		else
			snprintf(src, sizeof(src), "%s", si->file);
		fputs("\"src\":", m);
		json_put_str(m, src);
	}
	if (strcmp(name, si->name)) {
		fputs(si->file ? ",\"function\":" : "\"function\":", m);
		json_put_str(m, si->name);
	}
	if (fclose(m) != 0 || !buf) {
		sf_error("out of memory");
		exit(1);
	}
	return buf;
}

struct chrome {
	struct sf_outfile *of;
	uint64_t base;   /* the recording's time 0, CLOCK_MONOTONIC ns */
	uint32_t pid;
	char **frag;     /* by func_id, current process; built on first use */
	size_t *fraglen;
	size_t nfrag;
	int first;
	uint64_t too_deep; /* frames at depth PF_MAX_DEPTH or more */
};

static void free_frags(struct chrome *c)
{
	for (size_t i = 0; i < c->nfrag; i++)
		free(c->frag[i]);
	free(c->frag);
	free(c->fraglen);
	c->frag = NULL;
	c->fraglen = NULL;
	c->nfrag = 0;
}

static int put(struct chrome *c, const char *s, size_t n)
{
	return sf_outfile_write(c->of, s, n);
}

/* ",\n" before every event but the first. */
static int separator(struct chrome *c)
{
	if (c->first) {
		c->first = 0;
		return 0;
	}
	return put(c, ",\n", 2);
}

static int metadata(struct chrome *c, uint32_t tid, const char *what, const char *name)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return -1;
	fprintf(m, "{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"%s\",\"args\":{\"name\":", c->pid, tid, what);
	json_put_str(m, name);
	fputs("}}", m);
	int r = fclose(m) == 0 && separator(c) == 0 ? put(c, buf, len) : -1;
	free(buf);
	return r;
}

static int ch_process_begin(void *ctx, const struct trace_proc *p)
{
	struct chrome *c = ctx;
	free_frags(c);
	c->base = p->zero_mono_ns;
	c->pid = p->info->pid;
	return metadata(c, 0, "process_name", p->name);
}

static int ch_thread_begin(void *ctx, const struct trace_proc *p, const struct lr_thread *t)
{
	struct chrome *c = ctx;
	const char *label = trace_thread_label(p, t); /* a cut name with the thread's first function */
	return metadata(c, t->tid, "thread_name", label[0] ? label : "thread");
}

static const char *frag_for(struct chrome *c, const struct trace_proc *p, uint32_t func_id, size_t *len)
{
	if (func_id >= c->nfrag) {
		size_t n = (size_t)func_id + 64;
		c->frag = xrealloc(c->frag, n * sizeof(*c->frag));
		c->fraglen = xrealloc(c->fraglen, n * sizeof(*c->fraglen));
		memset(c->frag + c->nfrag, 0, (n - c->nfrag) * sizeof(*c->frag));
		c->nfrag = n;
	}
	if (!c->frag[func_id]) {
		c->frag[func_id] = fragment(p, func_id);
		c->fraglen[func_id] = strlen(c->frag[func_id]);
	}
	*len = c->fraglen[func_id];
	return c->frag[func_id];
}

/* The end of an X event: args.end for repaired frames, args.cut for frames
 * the --time window clipped, closing braces. */
static const char *event_tail(char *buf, size_t len, int args_empty, enum fr_end_kind kind, unsigned cut)
{
	static const char *const cuts[] = {"", "start", "end", "both"};
	const char *end = kind == FR_END_UNWOUND ? "unwound" : kind == FR_END_THREAD_END ? "thread end"
			  : kind == FR_END_SNAPSHOT ? "snapshot end"
			  : kind == FR_END_PAUSED ? "paused" : NULL;
	const char *sep = args_empty ? "" : ",";
	int n = 0;
	if (end) {
		n = snprintf(buf, len, "%s\"end\":\"%s\"", sep, end);
		sep = ",";
	}
	if (cut)
		n += snprintf(buf + n, len - (size_t)n, "%s\"cut\":\"%s\"", sep, cuts[cut & 3]);
	snprintf(buf + n, len - (size_t)n, "}}");
	return buf;
}

/* A payload's values as `,"arg1":"3"...` (sep before the first, then
 * ","); av_decode makes the names unique (`optimized`, `optimized#2`). */
static void put_values(FILE *m, const unsigned char *payload, uint32_t len, const char **sep)
{
	struct av_item items[SF_ARG_MAX_ITEMS];
	int n = av_decode(payload, len, items, SF_ARG_MAX_ITEMS);
	for (int i = 0; i < n; i++) {
		fputs(*sep, m);
		json_put_str(m, items[i].name);
		fputc(':', m);
		json_put_str(m, items[i].value);
		*sep = ",";
	}
}

/* The frame's argument and return values, "" when it has none (a
 * malloc'd string, or NULL when out of memory). */
static char *values_of(const struct fr_frame *f, const char *frag, size_t flen, size_t *len)
{
	*len = 0;
	if (!f->args && !f->ret)
		return NULL;
	char *buf = NULL;
	FILE *m = open_memstream(&buf, len);
	if (!m)
		return NULL;
	const char *sep = frag[flen - 1] == '{' ? "" : ",";
	if (f->args)
		put_values(m, f->args, f->args_len, &sep);
	if (f->ret)
		put_values(m, f->ret, f->ret_len, &sep);
	if (fclose(m) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int ch_frame_end(void *ctx, const struct fr_frame *f)
{
	struct chrome *c = ctx;
	size_t flen;
	const char *frag = frag_for(c, f->proc, f->func_id, &flen);
	c->too_deep += f->depth >= PF_MAX_DEPTH;
	uint64_t ts = c->base + f->t_begin, dur = f->t_end - f->t_begin;
	char head[160];
	int n = snprintf(head, sizeof(head), "{\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":%llu.%03u2,\"dur\":%llu.%03u2,",
			 c->pid, f->thread->tid, (unsigned long long)(ts / 1000), (unsigned)(ts % 1000),
			 (unsigned long long)(dur / 1000), (unsigned)(dur % 1000));
	size_t vlen;
	char *values = values_of(f, frag, flen, &vlen);
	if ((f->args || f->ret) && !values)
		return -1;
	char tailbuf[64];
	const char *tail = event_tail(tailbuf, sizeof(tailbuf), !vlen && frag[flen - 1] == '{', f->end_kind, f->cut);
	int r = separator(c) < 0 || put(c, head, (size_t)n) < 0 || put(c, frag, flen) < 0 ||
			(vlen && put(c, values, vlen) < 0) || put(c, tail, strlen(tail)) < 0
		? -1
		: 0;
	free(values);
	return r;
}

int conv_chrome(struct trace_input *in, const struct conv_options *opt)
{
	char err[1024];
	struct sf_outfile *of = sf_outfile_open(opt->out, opt->gzip, err, sizeof(err));
	if (!of) {
		sf_error("%s", err);
		return -1;
	}
	struct chrome c = {.of = of, .first = 1};
	static const char head[] = "{\"traceEvents\":[\n";
	static const char foot[] = "\n],\"displayTimeUnit\":\"ns\"}\n";
	int r = put(&c, head, sizeof(head) - 1);
	if (r == 0) {
		struct trace_sink sink = {.ctx = &c, .process_begin = ch_process_begin, .thread_begin = ch_thread_begin,
					  .frame_end = ch_frame_end};
		r = trace_run(in, &sink);
	}
	if (r == 0)
		r = put(&c, foot, sizeof(foot) - 1);
	free_frags(&c);
	if (r < 0)
		return sf_outfile_fail(of, opt->out);
	/* The JSON stays as recorded (the format has no depth limit), but
	 * trace_processor, so Perfetto's UI, drops every slice past its nesting
	 * limit, with an import error only its stats show. */
	if (c.too_deep && !trace_quiet(in))
		sf_warn("%llu calls are nested %d or more levels deep: Perfetto's UI and trace_processor drop them "
			"from a JSON trace; --type perfetto keeps every call", (unsigned long long)c.too_deep, PF_MAX_DEPTH);
	return sf_outfile_commit(of);
}
