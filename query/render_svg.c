/* SVG flame graph writer (see render_svg.h). Two passes over the tree: the first
 * finds the depth of the deepest visible frame (for the image height, which also
 * chooses the orientation) and, in diff mode, the largest change of share (to
 * scale the colors); the second writes one <g> per visible frame, children left to
 * right in the tree's (alphabetical) order, each at its parent's x plus the samples
 * of its left siblings. The script keeps each frame's original geometry and
 * rescales on zoom; it reads the frame name back from the tooltip (the first line
 * up to its last " — ", which no figure contains), so the name is written once,
 * escaped, and never into the script itself.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "query/export_assets.h"
#include "query/markup.h"
#include "query/movers.h"
#include "query/render_svg.h"

#include "common/ptype.h"
#include "common/utf8.h"

#define FRAME_H	  16 /* px per frame row */
#define FONT_SIZE 12
#define FONT_W	  0.59 /* average glyph width as a fraction of FONT_SIZE */
#define XPAD	  10
#define YPAD1	  (FONT_SIZE * 3)      /* title and controls */
#define YPAD2	  (FONT_SIZE * 2 + 10) /* details line */
#define LINE_H	  (FONT_SIZE + 4)      /* a header line under the title */
#define MIN_W	  0.1		       /* px: narrower frames are left out */
#define TIP_LINES 5		       /* source lines listed in a tooltip, by total */
#define DASH	  " \xe2\x80\x94 "     /* " — " between a name and its figures */

struct svg {
	FILE *out;
	const struct render_svg_options *o;
	unsigned side;	  /* the side whose totals give the widths */
	uint64_t root[2]; /* root totals per side */
	double wpt;	  /* px per sample */
	int maxdepth;	  /* deepest visible frame, root = 0 */
	double maxdelta;  /* largest |change of share| among visible frames (diff) */
	unsigned top;	  /* y of the first frame row (icicle) below the header */
	unsigned height;
	bool icicle; /* the orientation chosen */
	char *label; /* scratch: a name with its " ×N" (repeat) */
	size_t labelcap;
};

/* The code point at *p (NUL-terminated string), advancing *p; an invalid byte is
 * one U+FFFD. */
static uint32_t next_cp(const unsigned char **p)
{
	uint32_t cp;
	size_t n = utf8_decode(*p, strnlen((const char *)*p, 4), &cp);

	*p += n ? n : 1;
	return n ? cp : UTF8_REPLACEMENT;
}

static size_t utf8_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p) {
		next_cp(&p);
		n++;
	}
	return n;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

/* Local, so the library needs no libm. */
static double absd(double x)
{
	return x < 0 ? -x : x;
}

static double delta_of(const struct svg *s, const struct flame_node *n)
{
	return share(n->total[1], s->root[1]) - share(n->total[0], s->root[0]);
}

/* FNV-1a of the name, folded into three values in [0, 1) for the shade. */
static void name_hash(const char *name, double v[3])
{
	uint64_t h = 1469598103934665603ull;
	int i;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	for (i = 0; i < 3; i++) {
		v[i] = (double)(h & 0xffff) / 65536.0;
		h >>= 16;
	}
}

static void color(const struct svg *s, const struct flame_node *n, int rgb[3])
{
	double v[3];

	if (s->o->diff) {
		double d = delta_of(s, n);
		double k = s->maxdelta > 0 ? absd(d) / s->maxdelta : 0;
		int c = (int)(250.5 - 210.0 * k); /* 250 unchanged, 40 the largest */

		if (d > 0) {
			rgb[0] = 255, rgb[1] = c, rgb[2] = c;
		} else if (d < 0) {
			rgb[0] = c, rgb[1] = c, rgb[2] = 255;
		} else {
			rgb[0] = rgb[1] = rgb[2] = 250;
		}
		return;
	}
	name_hash(n->name, v);
	switch (n->frame.kind) {
	case FRAME_PYTHON: /* flamegraph.pl "aqua" */
		rgb[0] = 50 + (int)(60 * v[0]);
		rgb[1] = 165 + (int)(55 * v[1]);
		rgb[2] = 165 + (int)(55 * v[1]);
		break;
	case FRAME_KERNEL: /* orange/brown */
		rgb[0] = 190 + (int)(50 * v[0]);
		rgb[1] = 100 + (int)(50 * v[1]);
		rgb[2] = 20 + (int)(30 * v[2]);
		break;
	case FRAME_JIT: /* flamegraph.pl's "java" green, its colour for JIT code */
		rgb[0] = 50 + (int)(60 * v[0]);
		rgb[1] = 180 + (int)(50 * v[1]);
		rgb[2] = 50 + (int)(40 * v[2]);
		break;
	case FRAME_NATIVE: /* flamegraph.pl "hot" */
		rgb[0] = 205 + (int)(50 * v[0]);
		rgb[1] = (int)(230 * v[1]);
		rgb[2] = (int)(55 * v[2]);
		break;
	default: /* root and processes: grey */
		rgb[0] = rgb[1] = rgb[2] = 160 + (int)(40 * v[0]);
		break;
	}
}

/* Depth is bounded by flame__add's 2048-frame limit, so recursion is safe. */
static void measure(struct svg *s, const struct flame_node *n, int depth)
{
	uint32_t i;

	if ((double)n->total[s->side] * s->wpt < MIN_W)
		return;
	if (depth > s->maxdepth)
		s->maxdepth = depth;
	if (s->o->diff && absd(delta_of(s, n)) > s->maxdelta)
		s->maxdelta = absd(delta_of(s, n));
	for (i = 0; i < n->nchildren; i++)
		measure(s, n->children[i], depth + 1);
}

/* n with thousands separators: "1,234,567". */
static void put_count(FILE *out, uint64_t n)
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n), i;

	for (i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			fputc(',', out);
		fputc(digits[i], out);
	}
}

/* The CPU time of n samples of period_ns each: "12.5 s", "850.0 ms" (three
 * significant figures or more); the HTML page's cpu() writes the same. */
static void put_cpu(FILE *out, uint64_t n, uint64_t period_ns)
{
	double sec = (double)n * (double)period_ns / 1e9;

	if (sec >= 100)
		fprintf(out, "%.0f s", sec);
	else if (sec >= 10)
		fprintf(out, "%.1f s", sec);
	else if (sec >= 1)
		fprintf(out, "%.2f s", sec);
	else
		fprintf(out, "%.1f ms", sec * 1e3);
}

/* n in the answer's unit: "1,234 samples", or for another type "200 MiB". */
static void put_value(const struct svg *s, uint64_t n)
{
	char buf[48];

	if (s->o->type) {
		fputs(ptype__format(s->o->type->unit, (double)n, PTYPE_TEXT, buf, sizeof(buf)),
		      s->out);
		return;
	}
	put_count(s->out, n);
	fputs(" samples", s->out);
}

/* "1,234 samples, 12.5 s CPU, 38.20%" ("200 MiB, 38.20%"): n of whole. */
static void put_figures(const struct svg *s, uint64_t n, uint64_t whole)
{
	put_value(s, n);
	fputs(", ", s->out);
	if (s->o->period_ns && !s->o->type) {
		put_cpu(s->out, n, s->o->period_ns);
		fputs(" CPU, ", s->out);
	}
	fprintf(s->out, "%.2f%%", 100.0 * share(n, whole));
}

/* The frame's name as drawn: its text, and " ×N" when it stands for a run of N
 * identical placeholder frames. Borrowed from s until the next call; NULL when
 * out of memory. */
static const char *label_of(struct svg *s, const struct flame_node *n)
{
	size_t need;
	char *p;

	if (n->repeat <= 1)
		return n->name;
	need = strlen(n->name) + 16; /* " \u00d7" and 10 digits */
	if (need > s->labelcap) {
		p = realloc(s->label, need);
		if (!p)
			return NULL;
		s->label = p;
		s->labelcap = need;
	}
	snprintf(s->label, need, "%s \xc3\x97%u", n->name, n->repeat);
	return s->label;
}

/* The tooltip's lines after the first: the TIP_LINES source lines of n with the
 * most samples on the shown side, each as a share of n. */
static void put_lines(const struct svg *s, const struct flame_node *n)
{
	uint32_t idx[TIP_LINES], k, nk = movers_hot_lines(n, s->side, idx, TIP_LINES);
	const struct flame_line *l;

	for (k = 0; k < nk; k++) {
		l = &n->lines[idx[k]];
		fprintf(s->out, "\n  line %u: ", l->line);
		put_value(s, l->total[s->side]);
		fprintf(s->out, ", %.2f%%", 100.0 * share(l->total[s->side], n->total[s->side]));
		if (s->o->diff) {
			fputs(" (before ", s->out);
			put_count(s->out, l->total[0]);
			fprintf(s->out, ", %.2f%%)", 100.0 * share(l->total[0], n->total[0]));
		}
	}
	if (n->nlines > nk)
		fprintf(s->out, "\n  %u more line%s", n->nlines - nk,
			n->nlines - nk > 1 ? "s" : "");
}

static int write_frame(struct svg *s, const struct flame_node *n, int depth, double x)
{
	uint64_t t = n->total[s->side];
	double w = (double)t * s->wpt, y;
	const char *label;
	int rgb[3], err;
	size_t chars, len;
	uint32_t i;

	if (w < MIN_W)
		return 0;
	label = label_of(s, n);
	if (!label)
		return -ENOMEM;
	if (s->icicle)
		y = s->top + (double)depth * FRAME_H;
	else
		y = (double)s->height - YPAD2 - (double)(depth + 1) * FRAME_H;
	color(s, n, rgb);

	fputs("<g class=\"f\"><title>", s->out);
	markup_escape(s->out, label, SIZE_MAX, MARKUP_XML);
	fputs(DASH, s->out);
	put_figures(s, t, s->root[s->side]);
	if (s->o->diff) {
		fputs("; before ", s->out);
		put_figures(s, n->total[0], s->root[0]);
		fprintf(s->out, "; %+.2f pp", 100.0 * delta_of(s, n));
	}
	put_lines(s, n);
	fprintf(s->out,
		"</title><rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" height=\"%d\" "
		"fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		x, y, w, FRAME_H - 1, rgb[0], rgb[1], rgb[2], x + 3, y + 10.5);
	/* flamegraph.pl's rule: the label fits in (w - 3) px, or is cut to chars - 2
	 * code points plus "..", or is left out when fewer than 3 would show. */
	chars = w > 3 ? (size_t)((w - 3) / (FONT_SIZE * FONT_W)) : 0;
	if (chars >= 3) {
		len = utf8_len(label);
		if (len <= chars) {
			markup_escape(s->out, label, SIZE_MAX, MARKUP_XML);
		} else {
			markup_escape(s->out, label, chars - 2, MARKUP_XML);
			fputs("..", s->out);
		}
	}
	fputs("</text></g>\n", s->out);

	for (i = 0; i < n->nchildren; i++) {
		err = write_frame(s, n->children[i], depth + 1, x);
		if (err)
			return err;
		x += (double)n->children[i]->total[s->side] * s->wpt;
	}
	return 0;
}

/* The diff's legend and top movers, from y on: one line each. */
static void write_diff_header(struct svg *s, unsigned width, unsigned y, const struct mover *m,
			      size_t nm)
{
	/* room for a name after the figures' 28 monospace characters */
	double room =
		((double)width - 2 * XPAD - 16 - 28 * FONT_SIZE * FONT_W) / (FONT_SIZE * FONT_W);
	size_t i, chars = room > 3 ? (size_t)room : 3;

	fprintf(s->out,
		"<g id=\"legend\"><rect x=\"%d\" y=\"%u\" width=\"12\" height=\"12\" "
		"fill=\"rgb(255,40,40)\"/><text x=\"%d\" y=\"%u\">grew</text>"
		"<rect x=\"%d\" y=\"%u\" width=\"12\" height=\"12\" fill=\"rgb(40,40,255)\"/>"
		"<text x=\"%d\" y=\"%u\">shrank</text>"
		"<rect x=\"%d\" y=\"%u\" width=\"12\" height=\"12\" fill=\"rgb(250,250,250)\" "
		"stroke=\"rgb(160,160,160)\"/><text x=\"%d\" y=\"%u\">unchanged</text>"
		"<text x=\"%d\" y=\"%u\">share of samples, each side normalized to its own "
		"total; width follows after (",
		XPAD, y - 10, XPAD + 16, y, XPAD + 60, y - 10, XPAD + 76, y, XPAD + 130, y - 10,
		XPAD + 146, y, XPAD + 230, y);
	put_value(s, s->root[1]);
	fputs("), before ", s->out);
	put_value(s, s->root[0]);
	fputs("</text></g>\n", s->out);
	if (!nm)
		return;
	fprintf(s->out,
		"<g id=\"movers\"><text x=\"%d\" y=\"%u\">Top movers (share before "
		"\xe2\x86\x92 after, change):</text>\n",
		XPAD, y + LINE_H);
	for (i = 0; i < nm; i++) {
		fprintf(s->out,
			"<text class=\"mv\" x=\"%d\" y=\"%u\">%+.2f pp  %.2f%% \xe2\x86\x92 "
			"%.2f%%  ",
			XPAD + 16, y + (unsigned)(i + 2) * LINE_H, 100.0 * m[i].delta,
			100.0 * m[i].before, 100.0 * m[i].after);
		if (utf8_len(m[i].name) <= chars) {
			markup_escape(s->out, m[i].name, SIZE_MAX, MARKUP_XML);
		} else {
			markup_escape(s->out, m[i].name, chars - 2, MARKUP_XML);
			fputs("..", s->out);
		}
		fputs("</text>\n", s->out);
	}
	fputs("</g>\n", s->out);
}

int render_svg(const struct flame *f, const struct render_svg_options *o, FILE *out)
{
	struct render_svg_options def = { 0 };
	struct svg s = { 0 };
	struct mover *m = NULL;
	size_t nm = 0;
	const char *title;
	unsigned width, y;
	int err = 0;

	if (!f || !out)
		return -EINVAL;
	if (!o)
		o = &def;
	width = o->width ? o->width : RENDER_SVG_DEFAULT_WIDTH;
	if (width < RENDER_SVG_MIN_WIDTH || width > RENDER_SVG_MAX_WIDTH)
		return -EINVAL;
	if (o->orientation > RENDER_SVG_ICICLE)
		return -EINVAL;
	if (o->diff) {
		err = movers_find(f, RENDER_SVG_MOVERS, &m, &nm);
		if (err)
			return err;
	}
	s.out = out;
	s.o = o;
	s.side = o->diff ? 1 : 0;
	s.root[0] = flame__total(f, 0);
	s.root[1] = flame__total(f, 1);
	s.wpt = s.root[s.side] ? (double)(width - 2 * XPAD) / (double)s.root[s.side] : 0;
	measure(&s, flame__root(f), 0);
	/* the header: title and buttons; subtitle; legend; "Top movers:" and its rows */
	s.top = YPAD1 + (o->subtitle ? LINE_H : 0) +
		(o->diff ? LINE_H + 4 + (nm ? (unsigned)(nm + 1) * LINE_H : 0) : 0);
	s.height = (unsigned)((s.maxdepth + 1) * FRAME_H) + s.top + YPAD2;
	s.icicle = o->orientation == RENDER_SVG_ICICLE ||
		   (o->orientation == RENDER_SVG_AUTO && s.height > RENDER_SVG_AUTO_ICICLE_PX);
	title = o->title   ? o->title
		: o->diff  ? "Differential Flame Graph"
		: s.icicle ? "Icicle Graph"
			   : "Flame Graph";

	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\" onload=\"init(evt)\">\n"
		"<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n"
		"#title { text-anchor: middle; font-size: %dpx; }\n"
		"#subtitle { text-anchor: middle; fill: rgb(60,60,60); }\n"
		"text.mv { font-family: monospace; white-space: pre; }\n"
		"#search, #matched { text-anchor: end; }\n"
		"#search, #unzoom { cursor: pointer; }\n"
		".hide { display: none; }\n"
		"g.f:hover { stroke: black; stroke-width: 0.5; cursor: pointer; }\n"
		"</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n"
		"var XPAD = %d, FULL_W = %u, FONT_SIZE = %d, FONT_W = %g, ICICLE = %s;\n",
		width, s.height, width, s.height, FONT_SIZE, FONT_SIZE + 5, XPAD, width - 2 * XPAD,
		FONT_SIZE, FONT_W, s.icicle ? "true" : "false");
	fputs(export_svg_js, out);
	fprintf(out,
		"]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"rgb(248,248,240)\"/>\n"
		"<text id=\"title\" x=\"%u\" y=\"%d\">",
		width, s.height, width / 2, FONT_SIZE * 2);
	markup_escape(out, title, SIZE_MAX, MARKUP_XML);
	fputs("</text>\n", out);
	y = FONT_SIZE * 2;
	if (o->subtitle) {
		y += LINE_H;
		fprintf(out, "<text id=\"subtitle\" x=\"%u\" y=\"%u\">", width / 2, y);
		markup_escape(out, o->subtitle, SIZE_MAX, MARKUP_XML);
		fputs("</text>\n", out);
	}
	if (o->diff)
		write_diff_header(&s, width, y + LINE_H + 2, m, nm);
	fprintf(out,
		"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		"<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%u\" y=\"%d\">Search</text>\n"
		"<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n"
		"<g id=\"frames\">\n",
		XPAD, s.height - YPAD2 / 2, XPAD, FONT_SIZE * 2, width - XPAD, FONT_SIZE * 2,
		width - XPAD, s.height - YPAD2 / 2);
	if (s.root[s.side])
		err = write_frame(&s, flame__root(f), 0, XPAD);
	fputs("</g>\n</svg>\n", out);
	free(s.label);
	free(m);
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}
