/* Interactive HTML flame graph (see render_html.h): writes the page skeleton, the
 * flame tree as JSON (strings through render_json_string_n, which escapes '<' so
 * the data cannot close its <script> element), and the inline CSS and JS below,
 * which draw the tree with absolutely positioned divs and build the top-functions
 * table. The page references no external resource. */
#include "common/utf8.h"
#include "query/markup.h"
#include "query/movers.h"
#include "query/render_html.h"
#include "query/render_json.h"

#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define TIP_LINES 5 /* source lines a tooltip lists, by total: the hot one and a few */

/* The text of the page's <style> element, newline first as it is written. */
static const char page_css[] =
	"\n"
	"body { font: 13px sans-serif; margin: 12px; }\n"
	"h1 { font-size: 18px; margin: 0 0 8px; }\n"
	"#bar { margin-bottom: 8px; }\n"
	"#bar input { width: 260px; }\n"
	"#match { margin-left: 12px; color: #a0a; }\n"
	"#chart { position: relative; width: 100%; overflow: hidden; min-height: 20px; }\n"
	".fr { position: absolute; height: 16px; line-height: 16px; font: 11px monospace; "
	"overflow: "
	"hidden; white-space: nowrap; text-overflow: ellipsis; cursor: pointer; border-radius: "
	"2px; "
	"padding-left: 2px; box-sizing: border-box; }\n"
	".fr:hover { outline: 1px solid #000; }\n"
	".fr.m { background: rgb(230,0,230); color: #fff; }\n"
	".fr.anc { opacity: 0.6; }\n"
	"#tip { position: absolute; display: none; background: #ffe; border: 1px solid #888; "
	"padding: "
	"4px 6px; white-space: pre; font: 12px monospace; pointer-events: none; z-index: 10; }\n"
	"#top { border-collapse: collapse; margin-top: 8px; }\n"
	"#top td, #top th { padding: 2px 8px; border-bottom: 1px solid #ddd; }\n"
	"#top td.num { text-align: right; font-family: monospace; }\n"
	"#top td.fn, #movers td.fn { font-family: monospace; max-width: 700px; overflow: hidden; "
	"text-overflow: ellipsis; white-space: nowrap; cursor: pointer; }\n"
	"#subtitle { margin: 0 0 8px; color: #444; }\n"
	"#main { display: flex; flex-direction: column; gap: 12px; }\n"
	"#graph { flex: 1 1 auto; min-width: 0; }\n"
	"#side { flex: 0 0 auto; }\n"
	"@media (min-width: 1100px) { #main { flex-direction: row; align-items: flex-start; }\n"
	"  #side { order: 2; width: 440px; } }\n"
	"#side h2 { font-size: 15px; margin: 8px 0 4px; }\n"
	"#movers { border-collapse: collapse; width: 100%; table-layout: fixed; }\n"
	"#movers td, #movers th { padding: 2px 6px; border-bottom: 1px solid #ddd; }\n"
	"#movers th { text-align: right; width: 70px; }\n"
	"#movers th:last-child { width: 84px; }\n"
	"#movers th:first-child { text-align: left; width: auto; }\n"
	"#movers td.num { text-align: right; font-family: monospace; white-space: nowrap; }\n"
	"#movers td.fn { max-width: none; }\n"
	"#movers td.up { color: #c00; }\n"
	"#movers td.dn { color: #00c; }\n"
	"#legend { line-height: 20px; }\n"
	".sw { display: inline-block; width: 14px; height: 14px; vertical-align: middle; "
	"border: 1px solid #999; margin: 0 4px 0 8px; }\n"
	".sw.up { background: rgb(255,60,60); }\n"
	".sw.dn { background: rgb(60,60,255); }\n"
	".sw.eq { background: rgb(255,255,255); }\n";

/* The text of the page's <script> element, newline first as it is written. */
static const char page_js[] =
	"\n"
	"(function () {\n"
	"'use strict';\n"
	"var data = JSON.parse(document.getElementById('data').textContent);\n"
	"var root = data.tree, diff = data.diff, side = diff ? 1 : 0, PERIOD = data.period;\n"
	"var T0 = root.t[0], T1 = root.t[1], TOT = root.t[side];\n"
	"var chart = document.getElementById('chart'), tip = document.getElementById('tip');\n"
	"var search = document.getElementById('search');\n"
	"var matchEl = document.getElementById('match');\n"
	"var toggle = document.getElementById('toggle');\n"
	"var zoom = root, icicle = false, re = null, ROW = 17, maxAbs = 0;\n"
	"function prep(n, p, d) {\n"
	"  n.p = p; n.d = d;\n"
	"  if (diff) {\n"
	"    n.delta = (T1 ? n.t[1] / T1 : 0) - (T0 ? n.t[0] / T0 : 0);\n"
	"    maxAbs = Math.max(maxAbs, Math.abs(n.delta));\n"
	"  }\n"
	"  for (var i = 0; i < n.c.length; i++) prep(n.c[i], n, d + 1);\n"
	"}\n"
	"prep(root, null, 0);\n"
	"function pct(v, t) { return t ? (100 * v / t).toFixed(2) + '%' : '0.00%'; }\n"
	"function count(v) { return String(v).replace(/\\B(?=(\\d{3})+(?!\\d))/g, ','); }\n"
	"/* CPU time of v samples: as render_svg.c's put_cpu */\n"
	"function cpu(v) {\n"
	"  var s = v * PERIOD / 1e9;\n"
	"  return s >= 100 ? s.toFixed(0) + ' s' : s >= 10 ? s.toFixed(1) + ' s' :\n"
	"    s >= 1 ? s.toFixed(2) + ' s' : (s * 1e3).toFixed(1) + ' ms';\n"
	"}\n"
	"function figures(v, t) {\n"
	"  return count(v) + ' samples, ' + (PERIOD ? cpu(v) + ' CPU, ' : '') + pct(v, t);\n"
	"}\n"
	"function pp(d) { return (d >= 0 ? '+' : '') + (100 * d).toFixed(2) + ' pp'; }\n"
	"function disp(n) { return n.r ? n.n + ' \\u00d7' + n.r : n.n; }\n"
	"function hash(s) {\n"
	"  var h = 0;\n"
	"  for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;\n"
	"  return h;\n"
	"}\n"
	"function color(n) {\n"
	"  if (diff) {\n"
	"    var r = maxAbs ? Math.min(1, Math.abs(n.delta) / maxAbs) : 0;\n"
	"    var c = Math.round(255 * (1 - r));\n"
	"    return n.delta > 0 ? 'rgb(255,' + c + ',' + c + ')' :\n"
	"      n.delta < 0 ? 'rgb(' + c + ',' + c + ',255)' : 'rgb(255,255,255)';\n"
	"  }\n"
	"  var h = hash(n.n) % 60;\n"
	"  switch (n.k) {\n"
	"  case 0: return 'rgb(200,200,200)';\n"
	"  case 1: return 'rgb(180,180,' + (190 + h % 40) + ')';\n"
	"  case 3: return 'rgb(230,' + (130 + h) + ',40)';\n"
	"  case 4: return 'rgb(' + (60 + h) + ',180,' + (120 + h) + ')';\n"
	"  case 5: return 'rgb(' + (50 + h) + ',' + (190 + (h >> 1)) + ',60)';\n"
	"  default: return 'rgb(240,' + (90 + 2 * h) + ',50)';\n"
	"  }\n"
	"}\n"
	"function matches(n) {\n"
	"  if (!re || n.k === 0) return false;\n"
	"  try { return re.test(n.n); } catch (e) { return false; }\n"
	"}\n"
	"/* The tooltip: name and figures, then the hottest lines (the page's JSON holds\n"
	"   them already sorted and cut, as [line, total0, total1]). */\n"
	"function label(n) {\n"
	"  var s = disp(n) + ' \\u2014 ' + figures(n.t[side], TOT);\n"
	"  if (diff) s += '; before ' + figures(n.t[0], T0) + '; ' + pp(n.delta);\n"
	"  (n.l || []).forEach(function (l) {\n"
	"    s += '\\n  line ' + l[0] + ': ' + count(l[1 + side]) + ' samples, ' +\n"
	"      pct(l[1 + side], n.t[side]);\n"
	"    if (diff) s += ' (before ' + count(l[1]) + ', ' + pct(l[1], n.t[0]) + ')';\n"
	"  });\n"
	"  if (n.lm) s += '\\n  ' + n.lm + ' more line' + (n.lm > 1 ? 's' : '');\n"
	"  return s;\n"
	"}\n"
	"/* The frames to draw at width W: [node, x, w, depth] */\n"
	"function layout(W) {\n"
	"  var zt = zoom.t[side], items = [], anc = [], a;\n"
	"  for (a = zoom.p; a; a = a.p) anc.unshift(a);\n"
	"  anc.forEach(function (n, i) { items.push([n, 0, W, i]); });\n"
	"  (function walk(n, x, w, d) {\n"
	"    if (w < 0.5) return;\n"
	"    items.push([n, x, w, d]);\n"
	"    for (var i = 0, cx = x; i < n.c.length; i++) {\n"
	"      var cw = zt ? W * n.c[i].t[side] / zt : 0;\n"
	"      walk(n.c[i], cx, cw, d + 1);\n"
	"      cx += cw;\n"
	"    }\n"
	"  })(zoom, 0, W, anc.length);\n"
	"  items.anc = anc.length;\n"
	"  return items;\n"
	"}\n"
	"function depthOf(items) {\n"
	"  var maxd = items.anc;\n"
	"  items.forEach(function (it) { if (it[3] > maxd) maxd = it[3]; });\n"
	"  return maxd;\n"
	"}\n"
	"function draw() {\n"
	"  chart.textContent = '';\n"
	"  var W = chart.clientWidth || 1000, items = layout(W), anc = items.anc;\n"
	"  chart.style.height = ((depthOf(items) + 1) * ROW) + 'px';\n"
	"  var frag = document.createDocumentFragment();\n"
	"  items.forEach(function (it) {\n"
	"    var n = it[0], e = document.createElement('div');\n"
	"    e.className = 'fr' + (matches(n) ? ' m' : '') + (it[3] < anc ? ' anc' : '');\n"
	"    e.style.left = it[1] + 'px';\n"
	"    e.style.width = Math.max(it[2] - 1, 0.5) + 'px';\n"
	"    e.style[icicle ? 'top' : 'bottom'] = (it[3] * ROW) + 'px';\n"
	"    if (!e.className.match(/ m/)) e.style.background = color(n);\n"
	"    if (it[2] > 35) e.textContent = disp(n);\n"
	"    e.addEventListener('mousemove', function (ev) {\n"
	"      tip.textContent = label(n);\n"
	"      tip.style.display = 'block';\n"
	"      tip.style.left = (ev.pageX + 12) + 'px';\n"
	"      tip.style.top = (ev.pageY + 12) + 'px';\n"
	"    });\n"
	"    e.addEventListener('mouseout', function () { tip.style.display = 'none'; });\n"
	"    e.addEventListener('click', function () { zoom = n; draw(); });\n"
	"    frag.appendChild(e);\n"
	"  });\n"
	"  chart.appendChild(frag);\n"
	"  report();\n"
	"}\n"
	"function report() {\n"
	"  if (!re) { matchEl.textContent = ''; return; }\n"
	"  var m = 0;\n"
	"  (function walk(n) {\n"
	"    if (matches(n)) { m += n.t[side]; return; }\n"
	"    for (var i = 0; i < n.c.length; i++) walk(n.c[i]);\n"
	"  })(root);\n"
	"  matchEl.textContent = 'matched ' + m + ' samples (' + pct(m, TOT) + ')';\n"
	"}\n"
	"function quote(s) { return s.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&'); }\n"
	"function find(name) { search.value = quote(name); search.dispatchEvent(new "
	"Event('input')); }\n"
	"search.addEventListener('input', function () {\n"
	"  var q = search.value;\n"
	"  if (!q) re = null;\n"
	"  else { try { re = new RegExp(q); } catch (e) { re = new RegExp(quote(q)); } }\n"
	"  draw();\n"
	"});\n"
	"document.getElementById('reset').addEventListener('click', function () {\n"
	"  zoom = root; draw();\n"
	"});\n"
	"function setOrientation(ice) {\n"
	"  icicle = ice;\n"
	"  toggle.textContent = icicle ? 'Flame' : 'Icicle';\n"
	"}\n"
	"toggle.addEventListener('click', function () { setOrientation(!icicle); draw(); });\n"
	"function cell(tr, text, cls) {\n"
	"  var td = document.createElement('td');\n"
	"  td.className = cls;\n"
	"  td.textContent = String(text);\n"
	"  tr.appendChild(td);\n"
	"}\n"
	"/* Functions with self and total per side, recursion counted once. */\n"
	"function topTable() {\n"
	"  var m = Object.create(null), onpath = Object.create(null), list = [];\n"
	"  (function walk(n) {\n"
	"    var fn = n.k >= 2;\n"
	"    if (fn) {\n"
	"      var e = m[n.n] || (m[n.n] = {n: n.n, s: [0, 0], t: [0, 0]});\n"
	"      e.s[0] += n.s[0]; e.s[1] += n.s[1];\n"
	"      if (!onpath[n.n]) { e.t[0] += n.t[0]; e.t[1] += n.t[1]; }\n"
	"      onpath[n.n] = (onpath[n.n] || 0) + 1;\n"
	"    }\n"
	"    for (var i = 0; i < n.c.length; i++) walk(n.c[i]);\n"
	"    if (fn) onpath[n.n]--;\n"
	"  })(root);\n"
	"  for (var k in m) if (m[k].s[side] || m[k].t[side] || (diff && m[k].t[0])) "
	"list.push(m[k]);\n"
	"  list.sort(function (a, b) {\n"
	"    return b.s[side] - a.s[side] || b.t[side] - a.t[side] || b.s[0] - a.s[0] ||\n"
	"      (a.n < b.n ? -1 : a.n > b.n ? 1 : 0);\n"
	"  });\n"
	"  var body = document.querySelector('#top tbody');\n"
	"  list.slice(0, 200).forEach(function (e) {\n"
	"    var tr = document.createElement('tr');\n"
	"    cell(tr, e.n, 'fn');\n"
	"    if (diff) {\n"
	"      cell(tr, pct(e.s[0], T0), 'num'); cell(tr, pct(e.s[1], T1), 'num');\n"
	"      cell(tr, pp((T1 ? e.s[1] / T1 : 0) - (T0 ? e.s[0] / T0 : 0)), 'num');\n"
	"      cell(tr, pct(e.t[0], T0), 'num'); cell(tr, pct(e.t[1], T1), 'num');\n"
	"      cell(tr, pp((T1 ? e.t[1] / T1 : 0) - (T0 ? e.t[0] / T0 : 0)), 'num');\n"
	"    } else {\n"
	"      cell(tr, count(e.s[0]), 'num'); cell(tr, pct(e.s[0], TOT), 'num');\n"
	"      cell(tr, count(e.t[0]), 'num'); cell(tr, pct(e.t[0], TOT), 'num');\n"
	"    }\n"
	"    tr.addEventListener('click', function () { find(e.n); });\n"
	"    body.appendChild(tr);\n"
	"  });\n"
	"}\n"
	"[].forEach.call(document.querySelectorAll('#movers td.fn'), function (td) {\n"
	"  td.addEventListener('click', function () { find(td.textContent); });\n"
	"});\n"
	"function side_total(t) { return count(t) + ' samples' + (PERIOD ? ', ' + cpu(t) + ' CPU' "
	": ''); }\n"
	"document.getElementById('total').textContent = diff ?\n"
	"  'before ' + side_total(T0) + '; after ' + side_total(T1) : side_total(TOT);\n"
	"topTable();\n"
	"/* Open on the answer: a graph taller than what is left of the window below the\n"
	"   chart's top is drawn as an icicle (root at the top, right under the controls);\n"
	"   one that fits as a flame graph. The toggle flips it either way. */\n"
	"(function () {\n"
	"  var top = chart.getBoundingClientRect().top + window.scrollY;\n"
	"  var rows = depthOf(layout(chart.clientWidth || 1000)) + 1;\n"
	"  setOrientation(top + rows * ROW > window.innerHeight);\n"
	"})();\n"
	"draw();\n"
	"window.addEventListener('resize', draw);\n"
	"})();\n";

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
	return page_css;
}

const char *render_html_inline_script(void)
{
	return page_js;
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
	fputs(page_css, out);
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
	fprintf(out, ",\"diff\":%s,\"period\":%llu,\"tree\":", diff ? "true" : "false",
		(unsigned long long)(o ? o->period_ns : 0));
	write_node(out, flame__root(f), diff ? 1 : 0);
	fputs("}</script>\n<script>", out);
	fputs(page_js, out);
	fputs("</script>\n</body>\n</html>\n", out);
	return ferror(out) ? -EIO : 0;
}
