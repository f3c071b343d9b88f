/* The heap-over-time plot of `sftrace memory --plot`: a self-contained SVG
 * (or the same SVG in an HTML page), no script, no network. One panel per
 * process: the heap size as a step line (the highest size in each time
 * bucket), dashed lines at stage starts, a marker at the peak. With fold,
 * each stage is drawn from its own start, overlaid, to compare stages. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/outfile.h"
#include "lib/util.h"
#include "output/flamegraph.h"
#include "output/heap_plot.h"

enum { W = 1000, PH = 320, ML = 90, MR = 30, MT = 50, MB = 50 };

static const char *const colours[] = {"#1a5fb4", "#c01c28", "#26a269", "#e66100", "#613583", "#865e3c",
				      "#1c71d8", "#a51d2d", "#2ec27e", "#f5c211"};

static int selected(const struct heap_plot_options *o, size_t s)
{
	return !o->select || (s < o->nselect && o->select[s]);
}

/* One stage's stretch of the curve [from, to) as a step path, shifted by -t0. */
static void series(FILE *f, const struct heap_result *r, uint64_t from, uint64_t to, uint64_t t0, double xs,
		   double ys, unsigned y0, const char *colour, const char *name)
{
	int open = 0;
	double lasty = y0;
	for (size_t i = 0; i < r->ncurve; i++) {
		if (r->curve_t[i] < from || r->curve_t[i] >= to)
			continue;
		double x = ML + (double)(r->curve_t[i] - t0) * xs;
		double yv = y0 - (double)r->curve_v[i] * ys, ye = y0 - (double)r->curve_end[i] * ys;
		if (!open) {
			fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" d=\"M%.1f %.1f", colour, x,
				lasty);
			open = 1;
		}
		fprintf(f, "H%.1fV%.1fV%.1f", x, yv, ye);
		lasty = ye;
	}
	if (open) {
		fputs("\"><title>", f);
		fg_xml_text(f, name, SIZE_MAX);
		fputs("</title></path>\n", f);
	}
}

static void panel(FILE *f, const struct heap_result *r, const struct heap_plot_options *o, unsigned top)
{
	unsigned iw = W - ML - MR, ih = PH - MT - MB, y0 = top + MT + ih;
	/* The x axis runs from the process's start (results are on the
	 * recording's time base). */
	uint64_t t0 = r->proc->start_ns;
	uint64_t span = r->end_time > t0 ? r->end_time - t0 : 1;
	if (o->fold) {
		span = 1;
		for (size_t s = 0; s < r->nstages; s++) {
			uint64_t end = s + 1 < r->nstages ? r->stages[s + 1].t_start : r->end_time;
			if (selected(o, s) && end - r->stages[s].t_start > span)
				span = end - r->stages[s].t_start;
		}
	}
	double ymax = r->tot.peak_bytes ? (double)r->tot.peak_bytes * 1.1 : 1;
	double xs = (double)iw / (double)span, ys = (double)ih / ymax;
	char lab[64];
	/* title and axes */
	fprintf(f, "<text x=\"%u\" y=\"%u\" class=\"t\">", ML, top + 30);
	fg_xml_text(f, r->proc->cmdline, SIZE_MAX);
	heap_format_bytes(lab, sizeof(lab), (double)r->tot.peak_bytes);
	fprintf(f, " \xe2\x80\x94 heap over time%s, peak %s</text>\n", o->fold ? " (stages folded)" : "", lab);
	fprintf(f, "<rect x=\"%u\" y=\"%u\" width=\"%u\" height=\"%u\" fill=\"#fff\" stroke=\"#999\"/>\n", ML,
		top + MT, iw, ih);
	for (int k = 0; k <= 4; k++) {
		double v = ymax * k / 4, y = y0 - v * ys;
		heap_format_bytes(lab, sizeof(lab), v);
		fprintf(f, "<line x1=\"%u\" x2=\"%u\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			   "<text x=\"%u\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			ML, ML + iw, y, y, ML - 6, y + 4, lab);
		double t = (double)span * k / 4, x = ML + t * xs;
		sf_format_duration(lab, sizeof(lab), t, SF_DURATION_FIXED);
		fprintf(f, "<text x=\"%.1f\" y=\"%u\" text-anchor=\"middle\">%s%s</text>\n", x, y0 + 18,
			o->fold && k ? "+" : "", lab);
	}
	if (o->fold) {
		unsigned legend = 0;
		for (size_t s = 0; s < r->nstages; s++) {
			if (!selected(o, s))
				continue;
			const char *c = colours[s % (sizeof(colours) / sizeof(colours[0]))];
			uint64_t from = r->stages[s].t_start, to = s + 1 < r->nstages ? r->stages[s + 1].t_start : UINT64_MAX;
			snprintf(lab, sizeof(lab), "stage %zu", s);
			series(f, r, from, to, from, xs, ys, y0, c, lab);
			fprintf(f, "<text x=\"%u\" y=\"%u\" style=\"fill:%s\" class=\"stage\">stage %zu</text>\n",
				ML + 10 + 80 * legend++, top + MT - 8, c, s);
		}
		return;
	}
	series(f, r, 0, UINT64_MAX, t0, xs, ys, y0, colours[0], "heap size");
	for (size_t s = 1; s < r->nstages; s++) {
		double x = ML + (double)(r->stages[s].t_start - t0) * xs;
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%u\" y2=\"%u\" stroke=\"#888\" stroke-dasharray=\"4 3\">"
			   "<title>stage %zu starts</title></line><text x=\"%.1f\" y=\"%u\" class=\"stage\">%zu</text>\n",
			x, x, top + MT, y0, s, x + 3, top + MT + 14, s);
	}
	uint64_t pt = r->tot.peak_bytes ? r->tot.peak_time - t0 : 0;
	double px = ML + (double)pt * xs, py = y0 - (double)r->tot.peak_bytes * ys;
	heap_format_bytes(lab, sizeof(lab), (double)r->tot.peak_bytes);
	fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#c01c28\" class=\"peak\"><title>peak %s</title>"
		   "</circle>\n",
		px, py, lab);
}

int heap_plot_write(const struct heap_result *r, size_t nres, const struct heap_plot_options *o)
{
	char *buf = NULL, err[1024];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		sf_error("%s: out of memory", o->out);
		return -1;
	}
	size_t olen = strlen(o->out);
	int html = olen > 5 && !strcmp(o->out + olen - 5, ".html");
	unsigned height = (unsigned)(PH * (nres ? nres : 1));
	if (html)
		fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>sftrace memory</title></head>"
		      "<body style=\"margin:0;background:#f6f6f0\">\n",
		      f);
	else
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f);
	fprintf(f,
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text{font-family:Verdana,sans-serif;font-size:11px;fill:#333}.t{font-size:14px}"
		".stage{font-size:11px}</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#f6f6f0\"/>\n",
		W, height, W, height);
	for (size_t i = 0; i < nres; i++)
		panel(f, &r[i], o, (unsigned)(PH * i));
	fputs("</svg>\n", f);
	if (html)
		fputs("</body></html>\n", f);
	if (fclose(f) != 0) {
		free(buf);
		sf_error("%s: out of memory", o->out);
		return -1;
	}
	struct sf_outfile *of = sf_outfile_open(o->out, 0, err, sizeof(err));
	if (!of) {
		free(buf);
		sf_error("%s", err);
		return -1;
	}
	int rc = sf_outfile_write(of, buf, len);
	free(buf);
	if (rc < 0)
		return sf_outfile_fail(of, o->out);
	return sf_outfile_commit(of);
}
