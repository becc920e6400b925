/* Interactive HTML flame graph (see render_html.h): writes the page skeleton, the
 * flame tree as JSON (strings through render_json_string_n, which escapes '<' so
 * the data cannot close its <script> element), and the inline CSS and JS below,
 * which draw the tree with absolutely positioned divs and build the top-functions
 * table. The page references no external resource. */
#include "common/utf8.h"
#include "query/export_assets.h"
#include "query/markup.h"
#include "query/movers.h"
#include "query/render_html.h"
#include "query/render_json.h"

#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define TIP_LINES 5 /* source lines a tooltip lists, by total: the hot one and a few */

/* The page's own kind codes ("k" in its data, read by its script): 0 root,
 * 1 process, 2 native, 3 kernel, 4 Python, 5 JIT; functions are the codes >= 2. */
static unsigned page_kind(uint32_t kind)
{
	switch (kind) {
	case FLAME_ROOT:
		return 0;
	case FRAME_PROCESS:
		return 1;
	case FRAME_KERNEL:
		return 3;
	case FRAME_PYTHON:
		return 4;
	case FRAME_JIT:
		return 5;
	default:
		return 2;
	}
}

/* Depth is bounded by flame__add's 2048-frame limit, so recursion is safe. */
static void write_node(FILE *out, const struct flame_node *n, unsigned side)
{
	uint32_t idx[TIP_LINES], i, nk;

	fputs("{\"n\":", out);
	render_json_string_n(out, n->name ? n->name : "", n->name ? strlen(n->name) : 0);
	fprintf(out, ",\"k\":%u,\"s\":[%llu,%llu],\"t\":[%llu,%llu]", page_kind(n->frame.kind),
		(unsigned long long)n->self[0], (unsigned long long)n->self[1],
		(unsigned long long)n->total[0], (unsigned long long)n->total[1]);
	if (n->repeat > 1)
		fprintf(out, ",\"r\":%u", n->repeat);
	if (n->nlines) {
		nk = movers_hot_lines(n, side, idx, TIP_LINES);
		fputs(",\"l\":[", out);
		for (i = 0; i < nk; i++)
			fprintf(out, "%s[%u,%llu,%llu]", i ? "," : "", n->lines[idx[i]].line,
				(unsigned long long)n->lines[idx[i]].total[0],
				(unsigned long long)n->lines[idx[i]].total[1]);
		fputc(']', out);
		if (n->nlines > nk)
			fprintf(out, ",\"lm\":%u", n->nlines - nk);
	}
	fputs(",\"c\":[", out);
	for (i = 0; i < n->nchildren; i++) {
		if (i)
			fputc(',', out);
		write_node(out, n->children[i], side);
	}
	fputs("]}", out);
}

/* The diff's side panel: the legend and the movers table (movers.h). */
static int write_movers(FILE *out, const struct flame *f)
{
	struct mover *m;
	size_t n, i;
	int err = movers_find(f, MOVERS_DEFAULT, &m, &n);

	if (err)
		return err;
	fprintf(out,
		"<div id=\"side\">\n<div id=\"legend\"><span class=\"sw up\"></span>grew"
		"<span class=\"sw dn\"></span>shrank<span class=\"sw eq\"></span>unchanged<br>"
		"Width follows the after profile; shares are normalized to each side's total "
		"(before %llu samples, after %llu samples).</div>\n"
		"<h2>Top movers</h2>\n",
		(unsigned long long)flame__total(f, 0), (unsigned long long)flame__total(f, 1));
	if (!n)
		fputs("<p id=\"nomovers\">No function's share of samples changed.</p>\n", out);
	else
		fputs("<table id=\"movers\"><thead><tr><th>function</th><th>before</th>"
		      "<th>after</th><th>delta</th></tr></thead><tbody>\n",
		      out);
	for (i = 0; i < n; i++) {
		fputs("<tr><td class=\"fn\">", out);
		markup_escape(out, m[i].name, SIZE_MAX, MARKUP_HTML);
		fprintf(out,
			"</td><td class=\"num\">%.2f%%</td><td class=\"num\">%.2f%%</td>"
			"<td class=\"num %s\">%+.2f pp</td></tr>\n",
			100.0 * m[i].before, 100.0 * m[i].after, m[i].delta > 0 ? "up" : "dn",
			100.0 * m[i].delta);
	}
	if (n)
		fputs("</tbody></table>\n", out);
	fputs("</div>\n", out);
	free(m);
	return 0;
}

const char *render_html_inline_style(void)
{
	return export_flame_css;
}

const char *render_html_inline_script(void)
{
	return export_flame_js;
}

int render_html(const struct flame *f, const struct render_html_options *o, FILE *out)
{
	const char *title = o && o->title ? o->title : "smolder flame graph";
	const char *subtitle = o ? o->subtitle : NULL;
	bool diff = o && o->diff;
	int err = 0;

	if (!f || !out)
		return -EINVAL;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
	      out);
	markup_escape(out, title, SIZE_MAX, MARKUP_HTML);
	fputs("</title>\n<style>", out);
	fputs(export_flame_css, out);
	fputs("</style>\n</head>\n<body>\n<h1>", out);
	markup_escape(out, title, SIZE_MAX, MARKUP_HTML);
	fputs("</h1>\n", out);
	if (subtitle) {
		fputs("<p id=\"subtitle\">", out);
		markup_escape(out, subtitle, SIZE_MAX, MARKUP_HTML);
		fputs("</p>\n", out);
	}
	fputs("<div id=\"bar\"><input id=\"search\" type=\"search\" "
	      "placeholder=\"search (regex)\"> <button id=\"reset\">Reset zoom</button> "
	      "<button id=\"toggle\">Icicle</button> <span id=\"total\"></span>"
	      "<span id=\"match\"></span></div>\n<div id=\"main\">\n",
	      out);
	if (diff)
		err = write_movers(out, f);
	if (err)
		return err;
	fputs("<div id=\"graph\"><div id=\"chart\"></div></div>\n</div>\n<div id=\"tip\"></div>\n"
	      "<h2>Top functions</h2>\n<table id=\"top\"><thead><tr><th>function</th>",
	      out);
	if (diff)
		fputs("<th>self before</th><th>self after</th><th>self delta</th>"
		      "<th>total before</th><th>total after</th><th>total delta</th>",
		      out);
	else
		fputs("<th>self</th><th>self %</th><th>total</th><th>total %</th>", out);
	fputs("</tr></thead><tbody></tbody></table>\n"
	      "<script type=\"application/json\" id=\"data\">{\"title\":",
	      out);
	render_json_string_n(out, title, strlen(title));
	fputs(",\"subtitle\":", out);
	if (subtitle)
		render_json_string_n(out, subtitle, strlen(subtitle));
	else
		fputs("null", out);
	fprintf(out, ",\"diff\":%s,\"period\":%llu,\"unit\":", diff ? "true" : "false",
		(unsigned long long)(o ? o->period_ns : 0));
	if (o && o->unit)
		render_json_string_n(out, o->unit, strlen(o->unit));
	else
		fputs("null", out);
	fputs(",\"tree\":", out);
	write_node(out, flame__root(f), diff ? 1 : 0);
	fputs("}</script>\n<script>", out);
	fputs(export_flame_js, out);
	fputs("</script>\n</body>\n</html>\n", out);
	return ferror(out) ? -EIO : 0;
}
