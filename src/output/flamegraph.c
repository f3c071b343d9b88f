/* sftrace flamegraph: an SVG flame graph drawn from the call-path tree.
 *
 * Layout: the root frame "all" at the bottom spans the whole width; each
 * call path is a box above its caller, as wide as its weight (inclusive
 * time, or with weight_calls the frames in its subtree). Siblings are in
 * name order and functions sharing a name are one box (cp_walk_merged).
 * Boxes narrower than MIN_PX are left out with their subtree (the subtitle
 * says how many), which keeps the file small on huge traces.
 *
 * Every box is a <g> carrying its exact integer weight: data-x (offset from
 * the left edge in weight units), data-v (weight) and data-d (depth); the
 * inline script zooms with those, and tests check that children fit in
 * their parent. Colour: a warm hue per module (the crate / namespace prefix
 * of the name, else the object's file name), varied a little per function.
 */
#include "output/flamegraph.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/callpath.h"
#include "lib/outfile.h"
#include "lib/util.h"

#define PAD 10      /* left/right margin */
#define FH 16       /* box height, 1 px gap included */
#define TOP 56      /* title, controls, subtitle */
#define BOTTOM 28   /* details line */
#define CHAR_PX 7.0 /* average glyph width at 12 px Verdana */
#define MIN_PX 0.1

/* ---- output through stdio, into the atomic outfile ---- */

static ssize_t cookie_write(void *ctx, const char *buf, size_t len)
{
	return sf_outfile_write(ctx, buf, len) < 0 ? -1 : (ssize_t)len;
}

static FILE *open_stream(struct sf_outfile *of)
{
	cookie_io_functions_t io = {.write = cookie_write};
	return fopencookie(of, "w", io);
}

/* ---- text ---- */

void fg_xml_text(FILE *f, const char *s, size_t maxchars)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t k = 0; *p && k < maxchars; k++) {
		size_t n = sf_utf8_len(p);
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if (!n)
				fputs("\xef\xbf\xbd", f);
			else if (*p < 0x20 || *p == 0x7f)
				fputc('?', f);
			else
				fwrite(p, 1, n, f);
		}
		p += n ? n : 1;
	}
}

static size_t nchars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The label inside a box of `px` pixels: the name, cut with "..". */
static void label(FILE *f, const char *name, double px)
{
	long fit = (long)((px - 6) / CHAR_PX);
	if (fit < 3)
		return;
	if (nchars(name) <= (size_t)fit) {
		fg_xml_text(f, name, SIZE_MAX);
		return;
	}
	fg_xml_text(f, name, (size_t)fit - 2);
	fputs("..", f);
}

/* ---- colours ---- */

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* The crate or namespace a name starts with ("serde_json" for
 * "serde_json::de::from_str", "alloc" for "<alloc::vec::Vec<T> as ...>"),
 * or 0 when it has none. */
static size_t name_prefix(const char *name, const char **start)
{
	const char *p = name;
	while (*p == '<' || *p == '&' || *p == '*' || *p == '(' || *p == ' ')
		p++;
	if (!strncmp(p, "dyn ", 4) || !strncmp(p, "mut ", 4))
		p += 4;
	const char *q = p;
	while (isalnum((unsigned char)*q) || *q == '_')
		q++;
	if (q == p || q[0] != ':' || q[1] != ':')
		return 0;
	*start = p;
	return (size_t)(q - p);
}

static void colour(char *buf, size_t len, const char *name, const char *module, int synthetic)
{
	if (synthetic) {
		snprintf(buf, len, "rgb(200,200,200)");
		return;
	}
	const char *m = module;
	size_t n = name_prefix(name, &m);
	if (!n)
		n = strlen(module);
	uint32_t h = fnv1a(m, n), j = fnv1a(name, strlen(name));
	int r = 205 + (int)(h % 51);
	int g = 50 + (int)((h >> 8) % 150) + (int)(j % 41) - 20;
	int b = (int)((h >> 16) % 56);
	snprintf(buf, len, "rgb(%d,%d,%d)", r, g, b);
}

/* ---- layout ---- */

struct fg {
	FILE *f;
	const struct cp_tree *t;
	int calls;
	int bytes;        /* total_ns holds bytes (sftrace memory --flamegraph) */
	double scale;     /* px per weight unit */
	unsigned height;
	uint32_t max_depth;
	uint64_t omitted;
	uint64_t *xs;     /* next free offset per depth, weight units */
	size_t nxs;
	uint64_t total;
};

static uint64_t weight(const struct fg *fg, const struct cp_group *g)
{
	return fg->calls ? g->sub_calls : g->total_ns;
}

static int measure(void *ctx, const struct cp_group *g)
{
	struct fg *fg = ctx;
	if ((double)weight(fg, g) * fg->scale < MIN_PX) {
		fg->omitted++;
		return 1;
	}
	if (g->depth > fg->max_depth)
		fg->max_depth = g->depth;
	return 0;
}

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* "NAME [module]" then the numbers; the script shows the first line as the
 * name. self is UINT64_MAX for the root, which has none. */
static void tooltip(struct fg *fg, const char *name, const char *module, uint64_t v, uint64_t calls,
		    uint64_t self)
{
	FILE *f = fg->f;
	double pct = fg->total ? 100.0 * (double)v / (double)fg->total : 0;
	fputs("<title>", f);
	fg_xml_text(f, name, SIZE_MAX);
	if (module && *module) {
		fputs(" [", f);
		fg_xml_text(f, module, SIZE_MAX);
		fputc(']', f);
	}
	if (fg->calls) {
		fprintf(f, "\n%llu call%s, %llu with callees (%.2f%%)</title>", (unsigned long long)calls, plural(calls),
			(unsigned long long)v, pct);
		return;
	}
	if (fg->bytes) {
		fprintf(f, "\n%llu bytes (%.2f%%)</title>", (unsigned long long)v, pct);
		return;
	}
	char tt[32], ts[32];
	sf_format_duration(tt, sizeof(tt), v, SF_DURATION_SIG3);
	fprintf(f, "\n%s (%.2f%%)", tt, pct);
	if (self != UINT64_MAX) {
		sf_format_duration(ts, sizeof(ts), self, SF_DURATION_SIG3);
		fprintf(f, ", self %s", ts);
	}
	fprintf(f, ", %llu call%s</title>", (unsigned long long)calls, plural(calls));
}

static void box(struct fg *fg, uint32_t depth, uint64_t x, uint64_t v, const char *name, const char *module,
		int synthetic, uint64_t calls, uint64_t self)
{
	FILE *f = fg->f;
	double px = PAD + (double)x * fg->scale, w = (double)v * fg->scale;
	unsigned y = fg->height - BOTTOM - (depth + 1) * FH;
	char fill[32];
	colour(fill, sizeof(fill), name, module, synthetic);
	fprintf(f, "<g data-x=\"%llu\" data-v=\"%llu\" data-d=\"%u\">", (unsigned long long)x, (unsigned long long)v,
		depth);
	tooltip(fg, name, module, v, calls, self);
	fprintf(f, "<rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" fill=\"%s\" rx=\"2\"/>", px, y, w, FH - 1,
		fill);
	fprintf(f, "<text x=\"%.2f\" y=\"%u\">", px + 3, y + FH - 4);
	label(f, name, w);
	fputs("</text></g>\n", f);
}

static int draw(void *ctx, const struct cp_group *g)
{
	struct fg *fg = ctx;
	uint64_t v = weight(fg, g);
	if (g->depth + 1 >= fg->nxs) {
		size_t n = (size_t)g->depth * 2 + 16;
		fg->xs = xrealloc(fg->xs, n * sizeof(*fg->xs));
		fg->nxs = n;
	}
	uint64_t x = fg->xs[g->depth];
	fg->xs[g->depth] += v;
	fg->xs[g->depth + 1] = x; /* the children start where this box does */
	if ((double)v * fg->scale < MIN_PX)
		return 1;
	const struct cp_node *n = cp_node(fg->t, g->node);
	const char *module;
	const char *name = cp_func_name(fg->t, n->func, &module);
	box(fg, g->depth, x, v, name, module, (n->key & CP_SYNTHETIC) != 0, g->calls, g->self_ns);
	return ferror(fg->f) ? -1 : 0;
}

/* ---- the document ---- */

static const char style[] =
	"<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
	"g[data-v]{cursor:pointer}g[data-v]:hover rect{stroke:#000;stroke-width:.7}"
	".ctl{fill:#1a5fb4;cursor:pointer}.sub{font-size:11px;fill:#555}</style>\n";

/* Hover details, click to zoom (ancestors stretch, others hide), reset
 * (button or Escape), search by regular expression (button or Ctrl-F). */
static const char script[] =
	"<script><![CDATA[\n"
	"(function(){\n"
	"var svg=document.documentElement,IW=+svg.getAttribute('data-iw'),PAD=+svg.getAttribute('data-pad');\n"
	"function $(i){return document.getElementById(i)}\n"
	"var det=$('details'),unz=$('unzoom'),mat=$('matched'),last='';\n"
	"var F=[].map.call(document.querySelectorAll('g[data-v]'),function(g){\n"
	" var f={g:g,x:+g.getAttribute('data-x'),v:+g.getAttribute('data-v'),d:+g.getAttribute('data-d'),\n"
	"  r:g.querySelector('rect'),t:g.querySelector('text'),tip:g.querySelector('title').textContent};\n"
	" f.name=f.tip.split('\\n')[0].replace(/ \\[[^\\]]*\\]$/,'');f.fill=f.r.getAttribute('fill');\n"
	" g.onclick=function(){zoom(f)};\n"
	" g.onmouseover=function(){det.textContent=f.tip.replace(/\\n/g,'  ')};\n"
	" g.onmouseout=function(){det.textContent=' '};\n"
	" return f});\n"
	"function place(f,x,w){f.r.setAttribute('x',x.toFixed(2));f.r.setAttribute('width',w.toFixed(2));\n"
	" f.t.setAttribute('x',(x+3).toFixed(2));var n=Math.floor((w-6)/7),s=f.name;\n"
	" f.t.textContent=n<3?'':s.length<=n?s:s.slice(0,n-2)+'..';f.g.style.display=''}\n"
	"function zoom(z){var k=IW/z.v;F.forEach(function(f){\n"
	" if(f.d>=z.d&&f.x>=z.x&&f.x+f.v<=z.x+z.v){place(f,PAD+(f.x-z.x)*k,f.v*k);f.g.style.opacity=''}\n"
	" else if(f.d<z.d&&f.x<=z.x&&f.x+f.v>=z.x+z.v){place(f,PAD,IW);f.g.style.opacity='0.6'}\n"
	" else f.g.style.display='none'});\n"
	" unz.style.display=z===F[0]?'none':''}\n"
	"function search(){var q=prompt('Search (regular expression)',last);if(q===null)return;\n"
	" last=q;var rx;try{rx=q?new RegExp(q):null}catch(e){alert(e.message);return}\n"
	" var iv=[];F.forEach(function(f){var m=rx&&rx.test(f.name);f.r.setAttribute('fill',m?'rgb(230,0,230)':f.fill);\n"
	"  if(m)iv.push([f.x,f.x+f.v])});\n"
	" iv.sort(function(a,b){return a[0]-b[0]});var tot=0,e=-1;\n"
	" iv.forEach(function(p){if(p[1]<=e)return;tot+=p[1]-Math.max(p[0],e);e=p[1]});\n"
	" mat.textContent=rx?'Matched: '+(100*tot/F[0].v).toFixed(1)+'%':''}\n"
	"unz.onclick=function(){zoom(F[0])};$('search').onclick=search;\n"
	"document.addEventListener('keydown',function(e){if(e.key==='Escape')zoom(F[0]);\n"
	" else if((e.ctrlKey||e.metaKey)&&e.key==='f'){e.preventDefault();search()}});\n"
	"})();\n"
	"]]></script>\n";

static void header(struct fg *fg, const struct fg_options *opt, unsigned width, struct trace_input *in)
{
	FILE *f = fg->f;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\" data-iw=\"%u\" data-pad=\"%u\">\n",
		width, fg->height, width, fg->height, width - 2 * PAD, PAD);
	fputs(style, f);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f6f6f0\"/>\n");
	fprintf(f, "<text x=\"%u\" y=\"22\" text-anchor=\"middle\" style=\"font-size:17px\">", width / 2);
	fg_xml_text(f, opt->title ? opt->title : "Flame Graph", SIZE_MAX);
	fputs("</text>\n", f);
	/* The subtitle: what the widths mean, and what was left out. */
	char total[32];
	sf_format_duration(total, sizeof(total), fg->total, SF_DURATION_SIG3);
	fprintf(f, "<text x=\"%u\" y=\"40\" text-anchor=\"middle\" class=\"sub\">", width / 2);
	if (trace_nprocs(in) == 1)
		fg_xml_text(f, trace_proc_at(in, 0)->cmdline, 120);
	else
		fprintf(f, "%zu processes", trace_nprocs(in));
	if (fg->calls)
		fprintf(f, " \xe2\x80\x94 width: calls (%llu)", (unsigned long long)fg->total);
	else if (fg->bytes)
		fprintf(f, " \xe2\x80\x94 width: bytes (%llu)", (unsigned long long)fg->total);
	else
		fprintf(f, " \xe2\x80\x94 width: time (%s)", total);
	if (fg->omitted)
		fprintf(f, "; %llu frame%s narrower than %.1f px omitted", (unsigned long long)fg->omitted,
			plural(fg->omitted), MIN_PX);
	fputs("</text>\n", f);
	fprintf(f, "<text id=\"unzoom\" x=\"%u\" y=\"22\" class=\"ctl\" style=\"display:none\">Reset Zoom</text>\n",
		PAD);
	fprintf(f, "<text id=\"search\" x=\"%u\" y=\"22\" text-anchor=\"end\" class=\"ctl\">Search</text>\n",
		width - PAD);
	fprintf(f, "<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n", PAD, fg->height - 10);
	fprintf(f, "<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"></text>\n", width - PAD,
		fg->height - 10);
}

/* Writes the document for a collected tree. */
static int write_svg(struct fg *fg, const struct fg_options *opt, struct trace_input *in)
{
	unsigned width = opt->width ? opt->width : 1200;
	size_t nf = cp_nfuncs(fg->t);
	const char **names = xcalloc(nf + 1, sizeof(*names));
	for (size_t i = 0; i < nf; i++)
		names[i] = cp_func_name(fg->t, (uint32_t)i, NULL);
	uint32_t *rank = xcalloc(nf + 1, sizeof(*rank));
	cp_rank_by_name(fg->t, names, rank);
	const struct cp_node *root = cp_node(fg->t, CP_ROOT);
	fg->total = fg->calls ? root->sub_calls : root->total_ns;
	fg->scale = fg->total ? (double)(width - 2 * PAD) / (double)fg->total : 0;
	int r = 0;
	if (fg->total)
		r = cp_walk_merged(fg->t, rank, measure, fg);
	fg->height = TOP + (fg->max_depth + 1) * FH + BOTTOM;
	header(fg, opt, width, in);
	if (fg->total) {
		fg->nxs = 16;
		fg->xs = xcalloc(fg->nxs, sizeof(*fg->xs));
		box(fg, 0, 0, fg->total, "all", "", 1, root->sub_calls, UINT64_MAX);
		r = cp_walk_merged(fg->t, rank, draw, fg);
	} else {
		fprintf(fg->f, "<text x=\"%u\" y=\"%u\">no frames recorded</text>\n", PAD, TOP + FH);
	}
	fputs(script, fg->f);
	fputs("</svg>\n", fg->f);
	free(names);
	free(rank);
	return r;
}

int fg_write(struct trace_input *in, const struct fg_options *opt)
{
	struct cp_tree *t = cp_new();
	enum cp_levels levels = trace_nprocs(in) > 1 ? CP_BY_PROCESS : CP_FLAT;
	int r = cp_collect(t, in, levels) == 0 ? fg_write_tree(t, in, opt) : -1;
	cp_free(t);
	return r;
}

int fg_write_tree(struct cp_tree *t, struct trace_input *in, const struct fg_options *opt)
{
	char err[1024];
	if (opt->width && opt->width < 2 * PAD + 50) {
		sf_error("--width must be at least %d", 2 * PAD + 50);
		return -1;
	}
	struct sf_outfile *of = sf_outfile_open(opt->out, 0, err, sizeof(err));
	if (!of) {
		sf_error("%s", err);
		return -1;
	}
	struct fg fg = {.calls = opt->weight_calls, .bytes = opt->weight_bytes, .t = t};
	int r;
	fg.f = open_stream(of);
	if (!fg.f) {
		r = -1;
	} else {
		r = write_svg(&fg, opt, in);
		if (fclose(fg.f) != 0)
			r = -1;
	}
	free(fg.xs);
	if (r < 0)
		return sf_outfile_fail(of, opt->out);
	return sf_outfile_commit(of);
}
