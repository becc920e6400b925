/* SVG flame graph writer (see render_svg.h). Two passes over the tree: the first
 * finds the depth of the deepest visible frame (for the image height) and, in diff
 * mode, the largest change of share (to scale the colors); the second writes one
 * <g> per visible frame, children left to right in the tree's (alphabetical)
 * order, each at its parent's x plus the samples of its left siblings. The script
 * keeps each frame's original geometry and rescales on zoom; it reads the frame
 * name back from the tooltip (everything before the last " ("), so the name is
 * written once, escaped, and never into the script itself.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "query/render_json.h"
#include "query/render_svg.h"
#include "common/utf8.h"

#define FRAME_H	  16 /* px per frame row */
#define FONT_SIZE 12
#define FONT_W	  0.59 /* average glyph width as a fraction of FONT_SIZE */
#define XPAD	  10
#define YPAD1	  (FONT_SIZE * 3)      /* title and controls */
#define YPAD2	  (FONT_SIZE * 2 + 10) /* details line */
#define MIN_W	  0.1		       /* px: narrower frames are left out */

struct svg {
	FILE *out;
	const struct render_svg_options *o;
	unsigned side;	  /* the side whose totals give the widths */
	uint64_t root[2]; /* root totals per side */
	double wpt;	  /* px per sample */
	int maxdepth;	  /* deepest visible frame, root = 0 */
	double maxdelta;  /* largest |change of share| among visible frames (diff) */
	unsigned height;
};

/* Writes s escaped as XML character data or attribute value. Invalid UTF-8 and
 * code points XML 1.0 forbids or discourages (C0 controls, including newline, DEL
 * and C1, U+FFFE/U+FFFF) become U+FFFD. At most max_cp code points are written
 * (SIZE_MAX: all). */
/* The code point at *p (NUL-terminated string), advancing *p; an invalid byte is
 * one U+FFFD. */
static uint32_t next_cp(const unsigned char **p)
{
	uint32_t cp;
	size_t n = utf8_decode(*p, strnlen((const char *)*p, 4), &cp);

	*p += n ? n : 1;
	return n ? cp : UTF8_REPLACEMENT;
}

static void xml_text(FILE *out, const char *s, size_t max_cp)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t n = 0;

	while (*p && n < max_cp) {
		cp = next_cp(&p);
		n++;
		switch (cp) {
		case '&':
			fputs("&amp;", out);
			continue;
		case '<':
			fputs("&lt;", out);
			continue;
		case '>':
			fputs("&gt;", out);
			continue;
		case '"':
			fputs("&quot;", out);
			continue;
		case '\'':
			fputs("&apos;", out);
			continue;
		default:
			break;
		}
		if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0xfffe || cp == 0xffff)
			cp = 0xfffd;
		utf8_put(out, cp);
	}
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

static void write_frame(struct svg *s, const struct flame_node *n, int depth, double x)
{
	uint64_t t = n->total[s->side];
	double w = (double)t * s->wpt, y;
	int rgb[3];
	size_t chars, len;
	uint32_t i;

	if (w < MIN_W)
		return;
	if (s->o->icicle)
		y = YPAD1 + (double)depth * FRAME_H;
	else
		y = (double)s->height - YPAD2 - (double)(depth + 1) * FRAME_H;
	color(s, n, rgb);

	fputs("<g class=\"f\"><title>", s->out);
	xml_text(s->out, n->name, SIZE_MAX);
	if (s->o->diff)
		fprintf(s->out, " (%llu samples, %.2f%%; before %llu samples, %.2f%%; %+.2f pp)",
			(unsigned long long)n->total[1], 100.0 * share(n->total[1], s->root[1]),
			(unsigned long long)n->total[0], 100.0 * share(n->total[0], s->root[0]),
			100.0 * delta_of(s, n));
	else
		fprintf(s->out, " (%llu samples, %.2f%%)", (unsigned long long)t,
			100.0 * share(t, s->root[s->side]));
	fprintf(s->out,
		"</title><rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" height=\"%d\" "
		"fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		x, y, w, FRAME_H - 1, rgb[0], rgb[1], rgb[2], x + 3, y + 10.5);
	/* flamegraph.pl's rule: the label fits in (w - 3) px, or is cut to chars - 2
	 * code points plus "..", or is left out when fewer than 3 would show. */
	chars = w > 3 ? (size_t)((w - 3) / (FONT_SIZE * FONT_W)) : 0;
	if (chars >= 3) {
		len = utf8_len(n->name);
		if (len <= chars) {
			xml_text(s->out, n->name, SIZE_MAX);
		} else {
			xml_text(s->out, n->name, chars - 2);
			fputs("..", s->out);
		}
	}
	fputs("</text></g>\n", s->out);

	for (i = 0; i < n->nchildren; i++) {
		write_frame(s, n->children[i], depth + 1, x);
		x += (double)n->children[i]->total[s->side] * s->wpt;
	}
}

/* The script never holds frame text; it must not contain "]]>". */
static const char script[] =
	"var svg, details, unzoombtn, searchbtn, matchedtxt, frames = [], searching = false;\n"
	"function attr(e, a) { return parseFloat(e.getAttribute(a)); }\n"
	"function init(evt) {\n"
	"  svg = document.documentElement;\n"
	"  details = document.getElementById('details').firstChild;\n"
	"  unzoombtn = document.getElementById('unzoom');\n"
	"  searchbtn = document.getElementById('search');\n"
	"  matchedtxt = document.getElementById('matched');\n"
	"  var gs = document.getElementsByTagName('g');\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i];\n"
	"    if (g.getAttribute('class') !== 'f') continue;\n"
	"    var r = g.getElementsByTagName('rect')[0];\n"
	"    var t = g.getElementsByTagName('title')[0].textContent;\n"
	"    var k = t.lastIndexOf(' (');\n"
	"    g._rect = r; g._text = g.getElementsByTagName('text')[0];\n"
	"    g._ox = attr(r, 'x'); g._ow = attr(r, 'width'); g._oy = attr(r, 'y');\n"
	"    g._fill = r.getAttribute('fill'); g._tip = t;\n"
	"    g._name = k >= 0 ? t.substring(0, k) : t;\n"
	"    frames.push(g);\n"
	"  }\n"
	"  svg.addEventListener('click', function (e) {\n"
	"    var el = e.target;\n"
	"    if (el === unzoombtn || el.parentNode === unzoombtn) { unzoom(); return; }\n"
	"    if (el === searchbtn || el.parentNode === searchbtn) { search_prompt(); return; }\n"
	"    var g = frame_of(el); if (g) zoom(g);\n"
	"  });\n"
	"  svg.addEventListener('mouseover', function (e) {\n"
	"    var g = frame_of(e.target); details.nodeValue = g ? 'Function: ' + g._tip : ' ';\n"
	"  });\n"
	"  svg.addEventListener('mouseout', function (e) { details.nodeValue = ' '; });\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {\n"
	"      e.preventDefault(); search_prompt();\n"
	"    }\n"
	"  });\n"
	"}\n"
	"function frame_of(el) {\n"
	"  while (el && el !== svg) {\n"
	"    if (el.getAttribute && el.getAttribute('class') === 'f') return el;\n"
	"    el = el.parentNode;\n"
	"  }\n"
	"  return null;\n"
	"}\n"
	"function place(g, x, w) {\n"
	"  g._rect.setAttribute('x', x); g._rect.setAttribute('width', w);\n"
	"  g._text.setAttribute('x', x + 3);\n"
	"  var n = Math.floor((w - 3) / (FONT_SIZE * FONT_W)), s = g._name;\n"
	"  g._text.textContent = n < 3 ? '' : s.length <= n ? s : s.substring(0, n - 2) + '..';\n"
	"}\n"
	"function zoom(z) {\n"
	"  var x = z._ox, w = z._ow, y = z._oy, sc = FULL_W / w, eps = 0.01;\n"
	"  unzoombtn.setAttribute('class', '');\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var g = frames[i];\n"
	"    var up = ICICLE ? g._oy < y : g._oy > y, down = ICICLE ? g._oy >= y : g._oy <= y;\n"
	"    if (up && g._ox <= x + eps && g._ox + g._ow >= x + w - eps) {\n"
	"      g.style.display = ''; g.style.opacity = '0.6'; place(g, XPAD, FULL_W);\n"
	"    } else if (down && g._ox >= x - eps && g._ox + g._ow <= x + w + eps) {\n"
	"      g.style.display = ''; g.style.opacity = ''; place(g, XPAD + (g._ox - x) * sc, g._ow "
	"* "
	"sc);\n"
	"    } else {\n"
	"      g.style.display = 'none';\n"
	"    }\n"
	"  }\n"
	"}\n"
	"function unzoom() {\n"
	"  unzoombtn.setAttribute('class', 'hide');\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var g = frames[i];\n"
	"    g.style.display = ''; g.style.opacity = ''; place(g, g._ox, g._ow);\n"
	"  }\n"
	"}\n"
	"function reset_search() {\n"
	"  for (var i = 0; i < frames.length; i++) frames[i]._rect.setAttribute('fill', "
	"frames[i]._fill);\n"
	"  searching = false; searchbtn.firstChild.nodeValue = 'Search';\n"
	"  matchedtxt.firstChild.nodeValue = ' ';\n"
	"}\n"
	"function search_prompt() {\n"
	"  if (searching) { reset_search(); return; }\n"
	"  var term = prompt('Enter a search term (regexp allowed, eg: ^ext4_)', '');\n"
	"  if (term) search(term);\n"
	"}\n"
	"function search(term) {\n"
	"  var re, hits = [], sum = 0, end = -1;\n"
	"  try { re = new RegExp(term); } catch (err) { return; }\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    if (re.test(frames[i]._name)) {\n"
	"      frames[i]._rect.setAttribute('fill', 'rgb(230,0,230)'); hits.push(frames[i]);\n"
	"    }\n"
	"  }\n"
	"  if (!hits.length) return;\n"
	"  searching = true; searchbtn.firstChild.nodeValue = 'Reset Search';\n"
	"  /* Frames form nested x ranges: sorted by start, widest first, a match inside\n"
	"     the last counted range is a nested one and adds nothing. */\n"
	"  hits.sort(function (a, b) { return a._ox - b._ox || b._ow - a._ow; });\n"
	"  for (var j = 0; j < hits.length; j++) {\n"
	"    if (hits[j]._ox + hits[j]._ow <= end + 0.01) continue;\n"
	"    sum += hits[j]._ow; end = hits[j]._ox + hits[j]._ow;\n"
	"  }\n"
	"  matchedtxt.firstChild.nodeValue = 'Matched: ' + (100 * sum / FULL_W).toFixed(1) + '%';\n"
	"}\n";

int render_svg(const struct flame *f, const struct render_svg_options *o, FILE *out)
{
	struct render_svg_options def = { 0 };
	struct svg s = { 0 };
	const char *title;
	unsigned width;

	if (!f || !out)
		return -EINVAL;
	if (!o)
		o = &def;
	width = o->width ? o->width : RENDER_SVG_DEFAULT_WIDTH;
	if (width < RENDER_SVG_MIN_WIDTH || width > RENDER_SVG_MAX_WIDTH)
		return -EINVAL;
	title = o->title    ? o->title
		: o->diff   ? "Differential Flame Graph"
		: o->icicle ? "Icicle Graph"
			    : "Flame Graph";
	s.out = out;
	s.o = o;
	s.side = o->diff ? 1 : 0;
	s.root[0] = flame__total(f, 0);
	s.root[1] = flame__total(f, 1);
	s.wpt = s.root[s.side] ? (double)(width - 2 * XPAD) / (double)s.root[s.side] : 0;
	measure(&s, flame__root(f), 0);
	s.height = (unsigned)((s.maxdepth + 1) * FRAME_H + YPAD1 + YPAD2);

	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\" onload=\"init(evt)\">\n"
		"<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n"
		"#title { text-anchor: middle; font-size: %dpx; }\n"
		"#search, #matched { text-anchor: end; }\n"
		"#search, #unzoom { cursor: pointer; }\n"
		".hide { display: none; }\n"
		"g.f:hover { stroke: black; stroke-width: 0.5; cursor: pointer; }\n"
		"</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n"
		"var XPAD = %d, FULL_W = %u, FONT_SIZE = %d, FONT_W = %g, ICICLE = %s;\n",
		width, s.height, width, s.height, FONT_SIZE, FONT_SIZE + 5, XPAD, width - 2 * XPAD,
		FONT_SIZE, FONT_W, o->icicle ? "true" : "false");
	fputs(script, out);
	fprintf(out,
		"]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"rgb(248,248,240)\"/>\n"
		"<text id=\"title\" x=\"%u\" y=\"%d\">",
		width, s.height, width / 2, FONT_SIZE * 2);
	xml_text(out, title, SIZE_MAX);
	fprintf(out,
		"</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		"<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%u\" y=\"%d\">Search</text>\n"
		"<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n"
		"<g id=\"frames\">\n",
		XPAD, s.height - YPAD2 / 2, XPAD, FONT_SIZE * 2, width - XPAD, FONT_SIZE * 2,
		width - XPAD, s.height - YPAD2 / 2);
	if (s.root[s.side])
		write_frame(&s, flame__root(f), 0, XPAD);
	fputs("</g>\n</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}
